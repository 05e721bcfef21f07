/*
 * config: tierflowd's settings, one table of keys with defaults and bounds
 * (in the manner of redis' config.c).
 *
 * The JSON config file nests sections ({"thresholds": {"util": 0.9}}); every
 * leaf is addressed by its dotted name ("thresholds.util"), which is also how
 * command-line flags set keys. Invariants: after config_defaults() every
 * field holds its default; config_set_json()/config_set_str() change a field
 * only when the new value has the right type and lies within the key's
 * bounds, and otherwise leave it alone and name the key and the problem.
 * Unknown keys are errors, never ignored.
 *
 * The table also gives tierflowd its command-line flags (config_flag,
 * config_usage: a flag is a key's other name, as in redis) and says which
 * keys a SIGHUP reload may change (config_reload): topology, policy and
 * thresholds.*. The daemon applies those with no round running
 * (rebalance_between_rounds) and under the state's write lock: rounds, and
 * request threads under the state's read lock, read them safely. Any other
 * changed key is reported as needing a restart and keeps its value.
 */
#ifndef TF_CONFIG_H
#define TF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONFIG_STR_MAX 256

struct config {
    char listen[CONFIG_STR_MAX];       /* "ADDR:PORT" or "[v6]:PORT" */
    char token_file[CONFIG_STR_MAX];
    char topology[CONFIG_STR_MAX];     /* file or generator spec */
    char policy[CONFIG_STR_MAX];
    char backend[16];                  /* netlink | plan | bgp | none */
    char plan_dir[CONFIG_STR_MAX];
    char bgp_dir[CONFIG_STR_MAX];      /* bgp backend: the speaker's folder */
    long bgp_local_as, bgp_hold_time;
    char bgp_local_address[64];
    char exabgp[CONFIG_STR_MAX];
    long rule_prio_min, rule_prio_max; /* ip rule priority range tierflow owns */
    long route_proto;                  /* rtm_protocol stamped on its routes */
    long table_base;                   /* first routing table id it uses */
    char web_dir[CONFIG_STR_MAX];      /* "" = built-in search */
    char log_level[16];
    bool syslog;
    bool withdraw_on_exit;
    char tls_cert[CONFIG_STR_MAX], tls_key[CONFIG_STR_MAX];
    double interval;                   /* seconds between rebalance rounds */
    /* thresholds */
    double util;                       /* congestion when a direction's util exceeds this */
    double ce_frac;                    /* ... or its CE fraction exceeds this */
    double ramp_util;                  /* contended from this util when a collision still ramps; 0 off */
    double queue_delay;                /* s of standing qdisc queue that count as a queue for the ramp rule; 0 off */
    double hysteresis;                 /* a move must lower max util by at least this */
    double min_move_interval;          /* seconds between two moves of one flow */
    long max_moves;                    /* per round */
    double stale_intervals;            /* probe silent this many intervals = stale */
    double link_holddown;              /* s a direction routing gave back stays unusable */
    double pin_grace;                  /* s a pinned flow keeps its pin unobserved */
    double settle_intervals;           /* after a move: its directions' flows stay put this many intervals */
    double react_window;               /* s from a report showing a new contended direction to a round; 0 off */
    bool warmup;                       /* no choice move while the view warms up (state_view_warming) */
    double move_gain;                  /* a moved flow's rate must rise by this fraction, else back-off */
    double backoff_max;                /* s, cap of a flow's back-off after futile moves */
    double harm_intervals;             /* intervals a group of moves is judged over after its settle */
    double harm_margin;                /* pins withdrawn when the group is this much worse than before */
    /* gray failures (controller/health.h, docs/health.md) */
    bool drain;                        /* a suspect direction is withheld from placement */
    double gray_loss;                  /* a flow is lossy at this share of its packets lost */
    long gray_min_loss;                /* ... and at least this many in an interval */
    long gray_min_flows;               /* lossy flows a blamed direction must explain */
    double gray_clean_share;           /* share of its flows that may be clean */
    long gray_errors;                  /* interface errors per interval that mark a direction */
    long gray_k, gray_n;               /* suspect after k bad rounds of the last n */
    double gray_holddown;              /* s clean before a suspect is cleared */
    long flap_count;                   /* carrier transitions within flap_window that mark a link */
    double flap_window;
    /* ingest (controller/ingest.c) */
    char ingest_timestamps[8];         /* check | ignore: a report's ts against staleness and order */
    double clock_skew;                 /* s a probe's clock may be ahead of (or behind) ours */
    /* limits */
    long max_connections;
    long connection_timeout;           /* seconds */
    long max_body;                     /* bytes */
    long max_flows_per_report;
    long max_flows;                    /* flows kept in state */
    long rate_limit;                   /* requests per second per client address, 0 = off */
    long threads;                      /* HTTP worker threads */
    long max_connections_per_addr;     /* open connections from one client address */
    double header_timeout;             /* s from connect (or the previous reply) to a complete header */
    double body_timeout;               /* s from the header to the complete body */
    long max_body_inflight;            /* bytes of request bodies held at once, all connections */
    /* http: who may address the API (Host) and write to it from a page (Origin) */
    char allowed_hosts[1024];          /* comma-separated Host names beyond the listen address */
    char allowed_origins[1024];        /* comma-separated origins (scheme://host[:port]) */
    /* ha: active/standby on etcd (controller/leader.h, docs/ha.md); off while endpoints is "" */
    char ha_endpoints[1024];           /* comma-separated etcd client URLs */
    char ha_election[128];             /* election name: the key prefix the candidates share */
    long ha_lease_ttl;                 /* s a leader lasts without proving its lease */
    char ha_advertise_url[CONFIG_STR_MAX]; /* this controller's URL, as standbys name the leader */
    char ha_tls_ca[CONFIG_STR_MAX], ha_tls_cert[CONFIG_STR_MAX], ha_tls_key[CONFIG_STR_MAX];
    char ha_username[128], ha_password_file[CONFIG_STR_MAX];
    /* metrics (controller/metrics.h): host-link series, per-direction bound */
    char metrics_host_links[12];       /* off | aggregate | all */
    long metrics_max_link_series;      /* switch-to-switch directions exported one by one */
};

/* A key's command-line flag: --flag sets key (arg NULL: a switch, which
 * sets "true"; else the argument's name in --help). */
struct config_flag {
    const char *flag, *key, *arg;
};
/* The i-th flag of the table (0, 1, ...); false past the last. */
bool config_flag(size_t i, struct config_flag *out);
/* --help's lines for every flag of the table (help, default). */
void config_usage(FILE *f);
/* --help's lines saying which keys a SIGHUP reload applies. */
void config_usage_reload(FILE *f);
/* One --help line in config_usage's layout (for the daemon's own options). */
void config_usage_line(FILE *f, const char *flag, const char *arg, const char *help);
/* Whether a reload may change key. */
bool config_reloadable(const char *key);
/* Called by config_reload per changed key, with the old and new values as
 * text and whether it was applied (false: it needs a restart). */
typedef void (*config_change_fn)(void *arg, const char *key, const char *from, const char *to, bool applied);
/* Takes next (a configuration read again and validated) into cur: a changed
 * key a reload may change is copied, any other changed key keeps cur's
 * value; cb (may be NULL) hears of each. Returns how many were applied. */
int config_reload(struct config *cur, const struct config *next, config_change_fn cb, void *arg);

void config_defaults(struct config *c);
/* Loads a JSON config file over the current values. */
int config_load_file(struct config *c, const char *path, char *err, size_t errlen);
/* Same, from text (origin names it in messages). */
int config_load_text(struct config *c, const char *text, size_t len, const char *origin,
                     char *err, size_t errlen);
/* Sets one key (dotted name) from a command-line string. */
int config_set_str(struct config *c, const char *key, const char *value, char *err, size_t errlen);
/* Cross-key checks (required keys, ranges that depend on each other), and
 * the token file's permissions: one that group or others may read or write
 * is refused, naming the file and its mode (as sshd refuses such a key). */
int config_validate(const struct config *c, char *err, size_t errlen);
/* Iterates a comma-separated list value (http.allowed_hosts, ...): copies
 * the next item, spaces trimmed, into item and advances *p; 0 at the end,
 * 1 for an item, -EINVAL when an item is empty or longer than len - 1. */
int config_list_next(const char **p, char *item, size_t len);
/* Splits c->listen into host and port. */
int config_listen_addr(const struct config *c, char *host, size_t hostlen, unsigned *port);
/* Writes the effective configuration as JSON (for --check-config -v). */
char *config_dump_json(const struct config *c);
/* The one congestion test (thresholds.util, thresholds.ce_frac): a link
 * direction is congested when its utilisation or its CE fraction exceeds
 * its threshold. Every view and the rebalance loop ask this, so that
 * /status, /topology, /paths and a round agree on what is congested. */
bool config_congested(const struct config *c, double util, double ce_frac);
/* The same test, saying why: "util", "ce", or NULL (not congested). */
const char *config_congestion(const struct config *c, double util, double ce_frac);

#endif
