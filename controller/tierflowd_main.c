/*
 * tierflowd: the controller daemon. Wires config, state, ingest, the
 * rebalance loop, the route backend and the HTTP server together, and owns
 * the process lifecycle: SIGHUP reloads topology and policy (validated
 * first; on any error the old ones stay and installed routes are kept),
 * SIGTERM/SIGINT stop gracefully (routes are withdrawn only with
 * --withdraw-on-exit). The main thread runs the periodic rounds and handles
 * signals synchronously (sigtimedwait), so no work happens in a signal
 * handler. With ha.etcd_endpoints (docs/ha.md) it runs rounds and keeps the
 * configured backend open only while it leads (leader.h): a standby has the
 * "none" backend, so that nothing of it can touch a switch.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/api.h"
#include "controller/backend.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/health.h"
#include "controller/httpd.h"
#include "controller/history.h"
#include "controller/leader.h"
#include "controller/metrics.h"
#include "controller/rebalance.h"
#include "controller/state.h"
#include "policy/classes.h"
#include "policy/topo.h"

#define REBALANCE_NICE 5 /* added to the daemon's nice value for the rebalance thread */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tierflowd --config FILE | --topology FILE|GENERATOR [options]\n"
            "  --policy FILE            traffic classes\n"
            "  --listen ADDR:PORT       default 127.0.0.1:8080\n"
            "  --backend netlink|plan|bgp|none\n"
            "  --token-file F           bearer token for mutating calls\n"
            "  --interval SEC           rebalance period (default 1)\n"
            "  --plan-dir DIR           output of the plan backend\n"
            "  --web-dir DIR            dashboard files\n"
            "  --log-level LEVEL        error|warning|notice|info|debug\n"
            "  --syslog                 log to syslog instead of stderr\n"
            "  --journal                <N> priority prefixes on stderr (automatic\n"
            "                           when stderr is the journal)\n"
            "  --withdraw-on-exit       remove installed routes on SIGTERM\n"
            "  --tls-cert F --tls-key F serve HTTPS\n"
            "  --set KEY=VALUE          any config key (see tierflowd(8))\n"
            "  --check-config           validate and exit\n"
            "  --version\n");
}

/* Finds a file installed under TF_SHAREDIR, or beside the source tree when
 * running from a build directory (build/bin, build/san/bin). */
static int find_shared(const char *rel_share, const char *rel_src, char *out, size_t len, bool dir)
{
    char exe[PATH_MAX], cand[PATH_MAX + 64];
    struct stat st;
    snprintf(cand, sizeof(cand), "%s/%s", TF_SHAREDIR, rel_share);
    if (stat(cand, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)))
        return tf_strlcpy(out, cand, len) < len ? 0 : -ENAMETOOLONG;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        const char *d = dirname(exe);
        static const char *const ups[] = {"..", "../..", "../../.."};
        for (size_t i = 0; i < TF_ARRAY_SIZE(ups); i++) {
            snprintf(cand, sizeof(cand), "%s/%s/%s", d, ups[i], rel_src);
            char real[PATH_MAX];
            if (stat(cand, &st) == 0 && (dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) && realpath(cand, real))
                return tf_strlcpy(out, real, len) < len ? 0 : -ENAMETOOLONG;
        }
    }
    snprintf(cand, sizeof(cand), "./%s", rel_src);
    if (stat(cand, &st) == 0)
        return tf_strlcpy(out, cand, len) < len ? 0 : -ENAMETOOLONG;
    return -ENOENT;
}

struct daemon {
    pthread_t main_thread;       /* takes the signals, runs the rounds */
    struct config cfg;
    struct state st;
    struct events ev;
    struct metrics m;
    struct history hist;
    struct health health;        /* gray failures: the rounds' thread's (health.h) */
    struct rebalance rb;
    struct api api;
    struct backend *be;
    struct classes *cls;
    struct leader *ld;           /* NULL without HA */
    bool be_acts;                /* be is the configured kind, not a standby's "none" */
};

static int load_policy(const struct config *c, struct topo **t, struct classes **cls, char *err, size_t errlen)
{
    int r = topo_load(c->topology, t, err, errlen);
    if (r < 0)
        return r;
    *cls = calloc(1, sizeof(**cls));
    if (!*cls) {
        topo_free(*t);
        return -ENOMEM;
    }
    classes_init(*cls);
    if (c->policy[0] && (r = classes_load_file(*cls, c->policy, err, errlen)) < 0) {
        classes_free(*cls);
        free(*cls);
        topo_free(*t);
        return r;
    }
    return 0;
}

/* Seconds between two looks at whether reports revealed a new contended
 * direction (thresholds.react_window > 0). */
#define REACT_POLL 0.02

/* The backend's watcher saw routing change: wake the main loop, which
 * takes it in and runs a round at once (SIGUSR1 is blocked everywhere and
 * taken by sigtimedwait, like every other signal here). */
static void routing_poke(void *arg)
{
    struct daemon *d = arg;
    pthread_kill(d->main_thread, SIGUSR1);
}

/* backend_cfg.may_act: the netlink watch acts only while this instance leads. */
static bool may_act(void *arg)
{
    return leader_acts(arg);
}

static int open_backend(struct daemon *d, const struct config *c, const char *kind, const struct topo *t,
                        struct backend **be, char *err, size_t errlen)
{
    struct backend_cfg bc;
    backend_cfg_default(&bc);
    bc.on_routing = routing_poke;
    bc.on_routing_arg = d;
    bc.topo = t;
    bc.prio_min = (uint32_t)c->rule_prio_min;
    bc.prio_max = (uint32_t)c->rule_prio_max;
    bc.rt_proto = (uint8_t)c->route_proto;
    bc.table_base = (uint32_t)c->table_base;
    bc.plan_dir = c->plan_dir;
    if (d->ld) {
        bc.may_act = may_act;
        bc.may_act_arg = d->ld;
    }
    bc.bgp = (struct backend_bgp){c->bgp_dir, c->bgp_local_address, c->exabgp, (uint32_t)c->bgp_local_as,
                                  (uint16_t)c->bgp_hold_time};
    return backend_open(kind, &bc, be, err, errlen);
}

static void reload(struct daemon *d)
{
    char err[512];
    struct topo *t;
    struct classes *cls;
    struct backend *be = NULL;
    double now = tf_now_real();
    if (load_policy(&d->cfg, &t, &cls, err, sizeof(err)) < 0) {
        events_add(&d->ev, now, "reload_failed", "%s; keeping the old topology and policy", err);
        return;
    }
    pthread_mutex_lock(&d->rb.mu);
    if (open_backend(d, &d->cfg, d->be_acts ? d->cfg.backend : "none", t, &be, err, sizeof(err)) < 0) {
        pthread_mutex_unlock(&d->rb.mu);
        events_add(&d->ev, now, "reload_failed", "backend: %s; keeping the old topology and policy", err);
        classes_free(cls);
        free(cls);
        topo_free(t);
        return;
    }
    pthread_rwlock_wrlock(&d->st.lock);
    struct topo *old = state_set_topo(&d->st, t);
    struct classes *old_cls = NULL;
    if (old != t) {
        old_cls = d->cls;
        d->cls = cls;
        d->st.classes = cls;
        state_reclassify(&d->st);
    }
    pthread_rwlock_unlock(&d->st.lock);
    if (old == t) { /* out of memory: the new one was rejected */
        pthread_mutex_unlock(&d->rb.mu);
        backend_close(be);
        classes_free(cls);
        free(cls);
        topo_free(t);
        events_add(&d->ev, now, "reload_failed", "out of memory; keeping the old topology");
        return;
    }
    backend_close(d->be);
    d->be = d->rb.be = be;
    pthread_mutex_unlock(&d->rb.mu);
    topo_free(old);
    if (old_cls) {
        classes_free(old_cls);
        free(old_cls);
    }
    events_add(&d->ev, now, "reload", "topology '%s' (%u nodes, %u links) and policy reloaded; %zu pin%s kept, %zu "
               "whose path is not in the new topology dropped", t->name, t->nnodes, t->nlinks, d->st.pins_kept,
               d->st.pins_kept == 1 ? "" : "s", d->st.pins_lost);
}

/* leader.h's on_change: the role may have changed; the main loop takes it
 * (SIGUSR2, like every signal here). */
static void role_poke(void *arg)
{
    struct daemon *d = arg;
    pthread_kill(d->main_thread, SIGUSR2);
}

static void jobs_replica(void *arg, json_t *jobs)
{
    struct daemon *d = arg;
    api_jobs_replace(&d->api, jobs);
}

/* Opens the backend the role calls for: the configured one on becoming the
 * leader, which then adopts what is installed (read back: pins kept as they
 * are, nothing withdrawn and re-added), "none" on becoming a standby (the
 * installed routes stay: fail-static). */
static void role_change(struct daemon *d)
{
    bool act = leader_acts(d->ld);
    double now = tf_now_real();
    if (act == d->be_acts)
        return;
    char err[512];
    struct backend *be;
    /* The topology changes only in reload(), on this thread: no state lock
     * (the backend's open reads every switch; ingest must not wait for it). */
    pthread_mutex_lock(&d->rb.mu);
    int r = open_backend(d, &d->cfg, act ? d->cfg.backend : "none", d->st.topo, &be, err, sizeof(err));
    if (r == 0) {
        backend_close(d->be);
        d->be = d->rb.be = be;
        d->be_acts = act;
    }
    pthread_mutex_unlock(&d->rb.mu);
    pthread_rwlock_wrlock(&d->st.lock);
    d->st.gen++;   /* /status shows the role */
    pthread_rwlock_unlock(&d->st.lock);
    static char last_err[sizeof(err)];   /* retried every interval: one event per distinct failure */
    if (r < 0) {
        if (strcmp(err, last_err))
            events_add(&d->ev, now, "backend_error", "backend %s: %s; not acting", act ? d->cfg.backend : "none", err);
        tf_strlcpy(last_err, err, sizeof(last_err));
        return;
    }
    last_err[0] = '\0';
    if (act) {
        rebalance_adopt(&d->rb, now);
        rebalance_routing(&d->rb, now);
    }
}

static void probe_cb(void *arg, const char *node, bool stale)
{
    struct daemon *d = arg;
    events_add(&d->ev, tf_now_real(), stale ? "probe_stale" : "probe_alive", "probe %s %s", node,
               stale ? "is silent: its data no longer counts" : "reports again");
}

int main(int argc, char **argv)
{
    static struct daemon d; /* large; static keeps it off the stack */
    char err[512];
    const char *cfg_file = NULL;
    bool check = false, journal = false;
    enum { O_CONFIG = 256, O_TOPO, O_POLICY, O_LISTEN, O_BACKEND, O_TOKEN, O_INTERVAL, O_PLANDIR, O_WEB, O_LOGLEVEL,
           O_SYSLOG, O_WITHDRAW, O_CERT, O_KEY, O_SET, O_CHECK, O_VERSION, O_HELP, O_JOURNAL };
    static const struct option opts[] = {
        {"config", 1, 0, O_CONFIG}, {"topology", 1, 0, O_TOPO}, {"policy", 1, 0, O_POLICY},
        {"listen", 1, 0, O_LISTEN}, {"backend", 1, 0, O_BACKEND}, {"token-file", 1, 0, O_TOKEN},
        {"interval", 1, 0, O_INTERVAL}, {"plan-dir", 1, 0, O_PLANDIR}, {"web-dir", 1, 0, O_WEB},
        {"log-level", 1, 0, O_LOGLEVEL}, {"syslog", 0, 0, O_SYSLOG}, {"withdraw-on-exit", 0, 0, O_WITHDRAW},
        {"tls-cert", 1, 0, O_CERT}, {"tls-key", 1, 0, O_KEY}, {"set", 1, 0, O_SET},
        {"check-config", 0, 0, O_CHECK}, {"version", 0, 0, O_VERSION}, {"help", 0, 0, O_HELP},
        {"journal", 0, 0, O_JOURNAL}, {0, 0, 0, 0}};
    static const char *const keys[] = {[O_TOPO - O_CONFIG] = "topology", [O_POLICY - O_CONFIG] = "policy",
        [O_LISTEN - O_CONFIG] = "listen", [O_BACKEND - O_CONFIG] = "backend", [O_TOKEN - O_CONFIG] = "token_file",
        [O_INTERVAL - O_CONFIG] = "interval", [O_PLANDIR - O_CONFIG] = "backend_options.plan_dir",
        [O_WEB - O_CONFIG] = "web_dir", [O_LOGLEVEL - O_CONFIG] = "log_level", [O_SYSLOG - O_CONFIG] = "syslog",
        [O_WITHDRAW - O_CONFIG] = "withdraw_on_exit", [O_CERT - O_CONFIG] = "tls_cert", [O_KEY - O_CONFIG] = "tls_key"};

    /* Pass 1: the config file, so that flags override it whatever the order. */
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
        if (c == O_CONFIG)
            cfg_file = optarg;
    config_defaults(&d.cfg);
    if (cfg_file && config_load_file(&d.cfg, cfg_file, err, sizeof(err)) < 0) {
        log_early_err("tierflowd", "%s", err);
        return 2;
    }
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int r = 0;
        if (c == '?') {
            usage(stderr);
            return TF_EXIT_USAGE;
        } else if (c == O_HELP) {
            usage(stdout);
            return 0;
        } else if (c == O_VERSION) {
            printf("tierflowd %s\n", TF_VERSION);
            return 0;
        } else if (c == O_CHECK) {
            check = true;
        } else if (c == O_JOURNAL) {
            journal = true;
        } else if (c == O_SET) {
            char kv[CONFIG_STR_MAX + 64];
            tf_strlcpy(kv, optarg, sizeof(kv));
            char *eq = strchr(kv, '=');
            if (!eq) {
                log_early_err("tierflowd", "--set %s: expected KEY=VALUE", optarg);
                return TF_EXIT_USAGE;
            }
            *eq = '\0';
            r = config_set_str(&d.cfg, kv, eq + 1, err, sizeof(err));
        } else if (c == O_SYSLOG || c == O_WITHDRAW) {
            r = config_set_str(&d.cfg, keys[c - O_CONFIG], "true", err, sizeof(err));
        } else if (c != O_CONFIG) {
            r = config_set_str(&d.cfg, keys[c - O_CONFIG], optarg, err, sizeof(err));
        }
        if (r < 0) {
            log_early_err("tierflowd", "%s", err);
            return 2;
        }
    }
    if (optind < argc) {
        log_early_err("tierflowd", "unexpected argument '%s'", argv[optind]);
        return TF_EXIT_USAGE;
    }
    if (config_validate(&d.cfg, err, sizeof(err)) < 0) {
        log_early_err("tierflowd", "%s", err);
        return 2;
    }
    log_init("tierflowd", log_level_parse(d.cfg.log_level), d.cfg.syslog, journal);

    struct topo *t;
    if (load_policy(&d.cfg, &t, &d.cls, err, sizeof(err)) < 0) {
        log_err("%s", err);
        return 2;
    }
    if (d.cfg.token_file[0] && tf_read_token(d.cfg.token_file, d.api.token, sizeof(d.api.token)) < 0) {
        log_err("token_file %s: unreadable, or not 1..255 printable characters", d.cfg.token_file);
        return 2;
    }
    /* A backend that acts needs every uplink's interface and next hop; without
     * them each round fails (visibly: backend unhealthy, backend_error), so
     * the check refuses the configuration and a start warns. */
    if (backend_check_topo(d.cfg.backend, t, err, sizeof(err)) < 0) {
        if (check) {
            log_early_err("tierflowd", "%s", err);
            topo_free(t);
            classes_free(d.cls);
            free(d.cls);
            return 2;
        }
        log_warn("%s: every round that pins a flow will fail", err);
    }
    if (check) {
        printf("tierflowd: configuration OK (topology '%s': %u nodes, %u links; %u classes)\n", t->name, t->nnodes,
               t->nlinks, d.cls->n);
        topo_free(t);
        classes_free(d.cls);
        free(d.cls);
        return 0;
    }

    /* Signals are taken synchronously by the main loop; every thread started
     * from here on inherits the mask. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    double now = tf_now_real();
    char token[256];
    tf_strlcpy(token, d.api.token, sizeof(token));
    api_init(&d.api);
    tf_strlcpy(d.api.token, token, sizeof(d.api.token));
    events_init(&d.ev);
    metrics_init(&d.m);
    metrics_configure(&d.m, &d.cfg);
    history_init(&d.hist);
    health_init(&d.health, &d.cfg);
    if (state_init(&d.st, t, (size_t)d.cfg.max_flows, d.cfg.stale_intervals * d.cfg.interval, now) < 0) {
        log_err("out of memory");
        return 1;
    }
    d.st.classes = d.cls;
    d.st.link_holddown = d.cfg.link_holddown;
    d.main_thread = pthread_self();
    d.be_acts = !d.cfg.ha_endpoints[0];
    if (open_backend(&d, &d.cfg, d.be_acts ? d.cfg.backend : "none", d.st.topo, &d.be, err, sizeof(err)) < 0) {
        log_err("backend %s: %s", d.cfg.backend, err);
        return 1;
    }
    rebalance_init(&d.rb, &d.st, &d.ev, &d.m, d.be, &d.cfg);
    d.api.st = &d.st;
    d.api.ev = &d.ev;
    d.api.m = &d.m;
    d.api.hist = &d.hist;
    d.api.rb = &d.rb;
    d.api.cfg = &d.cfg;
    d.api.backend_name = d.cfg.backend;
    d.api.start = now;
    if (d.cfg.ha_endpoints[0]) {
        struct leader_hooks lh = {.on_change = role_poke, .on_jobs = jobs_replica, .arg = &d};
        if (leader_start(&d.ld, &d.cfg, &d.ev, &d.m, &lh, err, sizeof(err)) < 0) {
            log_err("%s", err);
            return 1;
        }
        d.api.ld = d.ld;
        d.rb.fence = leader_fence;
        d.rb.fence_arg = d.ld;
    }
    char path[PATH_MAX];
    if (find_shared("openapi.json", "controller/openapi.json", path, sizeof(path), false) == 0 &&
        tf_read_file(path, 4 << 20, &d.api.openapi, &d.api.openapi_len) < 0)
        d.api.openapi = NULL;
    if (!d.api.openapi)
        log_warn("openapi.json not found under %s or the source tree: /api/v1/openapi.json will be 404", TF_SHAREDIR);
    char web[PATH_MAX] = "";
    if (d.cfg.web_dir[0])
        tf_strlcpy(web, d.cfg.web_dir, sizeof(web));
    else if (find_shared("web", "web", web, sizeof(web), true) < 0)
        web[0] = '\0';

    struct httpd *h;
    if (httpd_start(&h, &d.cfg, &d.api, web, err, sizeof(err)) < 0) {
        log_err("%s", err);
        return 1;
    }
    log_info("tierflowd %s: topology '%s' (%u nodes, %u links), backend %s, listening on %s (port %u)%s, web %s",
             TF_VERSION, t->name, t->nnodes, t->nlinks, d.cfg.backend, d.cfg.listen, httpd_port(h),
             d.cfg.tls_cert[0] ? " with TLS" : "", web[0] ? web : "(none)");
    events_add(&d.ev, now, "start", "tierflowd %s started, backend %s", TF_VERSION, d.cfg.backend);
    /* This thread runs the rebalance rounds, which cost CPU in proportion to
     * the fat flows (0.5 s for 100,000 on one core). On a busy host they must
     * not starve the HTTP workers (probe reports, API): lower this thread's
     * priority only (Linux nice values are per thread; the workers were
     * started above and keep theirs). */
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, tid);
    if ((prio == -1 && errno) || setpriority(PRIO_PROCESS, tid, prio + REBALANCE_NICE) < 0)
        log_warn("setpriority: %s (rebalance rounds keep the workers' priority)", strerror(errno));

    /* Adopt what is installed instead of flapping it, then take what
     * routing says (pins it no longer offers were already removed when the
     * backend opened). */
    rebalance_adopt(&d.rb, tf_now_real());
    rebalance_routing(&d.rb, tf_now_real());
    double next = tf_now_mono() + d.cfg.interval, last_poke_round = 0, react_at = 0;
    for (;;) {
        double wait = next - tf_now_mono();
        /* Between ticks, look at what reports brought every REACT_POLL s
         * (rebalance_contended is cheap when nothing changed). */
        if (react_at > 0 && react_at - tf_now_mono() < wait)
            wait = react_at - tf_now_mono();
        else if (d.cfg.react_window > 0 && wait > REACT_POLL)
            wait = REACT_POLL;
        if (wait < 0)
            wait = 0;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        int sig = sigtimedwait(&set, NULL, &ts);
        if (sig == SIGUSR2) {
            role_change(&d);
            continue;
        }
        /* A standby ingests, and runs no round (leader.h); nor does a
         * leader whose backend did not open (tried again every interval).
         * A leader whose lease went unproven stops here by its own clock. */
        if (!d.be_acts || !leader_acts(d.ld)) {
            if (d.be_acts)
                role_change(&d);
            if (sig == SIGTERM || sig == SIGINT) {
                log_info("signal %d: shutting down", sig);
                break;
            }
            if (sig == SIGHUP)
                reload(&d);
            if (tf_now_mono() >= next) {
                next = tf_now_mono() + d.cfg.interval;
                state_tick(&d.st, tf_now_real(), probe_cb, &d);
                if (!d.be_acts && leader_acts(d.ld))
                    role_change(&d);
            }
            continue;
        }
        if (sig == SIGHUP) {
            log_info("SIGHUP: reloading topology and policy");
            reload(&d);
            rebalance_routing(&d.rb, tf_now_real());
            continue;
        }
        if (sig == SIGUSR1) {
            /* Routing withdrew something: re-place the flows now rather
             * than at the next tick (at most one extra round per 100 ms,
             * however fast a link flaps). */
            now = tf_now_real();
            if (rebalance_routing(&d.rb, now) > 0 && tf_now_mono() - last_poke_round >= 0.1) {
                last_poke_round = tf_now_mono();
                state_tick(&d.st, now, probe_cb, &d);
                rebalance_auto(&d.rb, now);
            }
            continue;
        }
        if (sig == SIGTERM || sig == SIGINT) {
            log_info("signal %d: shutting down", sig);
            break;
        }
        /* A report showed a new contended direction: one round after
         * react_window, so that the reports of the other probes of the same
         * interval are in (a round on one leaf's view fixes only that leaf). */
        if (d.cfg.react_window > 0 && tf_now_mono() < next) {
            if (react_at == 0 && rebalance_contended(&d.rb, tf_now_real()))
                react_at = tf_now_mono() + d.cfg.react_window;
            if (react_at > 0 && tf_now_mono() >= react_at) {
                react_at = 0;
                now = tf_now_real();
                state_tick(&d.st, now, probe_cb, &d);
                rebalance_auto(&d.rb, now);
                atomic_fetch_add(&d.m.react_rounds, 1);
            }
        }
        if (tf_now_mono() < next)
            continue;
        react_at = 0;
        next += d.cfg.interval;
        if (next < tf_now_mono())
            next = tf_now_mono() + d.cfg.interval;
        now = tf_now_real();
        rebalance_routing(&d.rb, now);   /* in case a wake-up was lost */
        state_tick(&d.st, now, probe_cb, &d);
        if (health_tick(&d.health, &d.st, &d.ev, now) < 0)
            log_warn("health round: out of memory");
        rebalance_auto(&d.rb, now);
        history_tick(&d.hist, &d.st, &d.m, now);
    }
    httpd_stop(h);
    leader_stop(d.ld);
    if (d.cfg.withdraw_on_exit && d.be_acts) {
        struct backend_result br;
        if (backend_withdraw(d.be, &br) < 0)
            log_err("withdraw: %s", backend_error(d.be));
        else
            log_info("withdrew %zu rules and %zu routes", br.rules_deleted, br.routes_deleted);
    }
    backend_close(d.be);
    rebalance_destroy(&d.rb);
    api_destroy(&d.api);
    events_destroy(&d.ev);
    history_destroy(&d.hist);
    health_free(&d.health);
    state_free(&d.st);
    classes_free(d.cls);
    free(d.cls);
    return 0;
}
