/*
 * tierflowd: the controller daemon. Wires config, state, ingest, the
 * rebalance loop, the route backend and the HTTP server together, and owns
 * the process lifecycle: SIGHUP re-reads the configuration and applies
 * what a reload may change (config.h: topology, policy, thresholds.*; any
 * other key found changed is reported as needing a restart and kept), then
 * reloads topology and policy (validated first; on any error the old ones
 * stay and installed routes are kept), SIGTERM/SIGINT stop gracefully (routes are withdrawn only with
 * --withdraw-on-exit). The main thread runs the periodic rounds and handles
 * signals synchronously (sigtimedwait), so no work happens in a signal
 * handler. With ha.etcd_endpoints (docs/ha.md) it runs rounds and keeps the
 * configured backend open only while it leads (leader.h): a standby has the
 * "none" backend, so that nothing of it can touch a switch. The backend is
 * the rebalance module's (rebalance_backend_swap, _take): this file opens
 * one and hands it over, and never holds it or the module's lock. The
 * configuration's sources, the command line among them: cmdline.h.
 */
#include <errno.h>
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
#include "common/version.h"
#include "controller/api.h"
#include "controller/backend.h"
#include "controller/cmdline.h"
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
    struct classes *cls;
    struct leader *ld;           /* NULL without HA */
    bool be_acts;                /* the backend is the configured kind, not a standby's "none" */
    struct cmdline cl;           /* the configuration's sources, read again on SIGHUP */
    const struct config *next_cfg;   /* a reload's, for apply_config */
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

/* config_reload's report: each applied key is logged with an event
 * (reload), each that needs a restart too (reload_failed: kept). */
static void config_changed(void *arg, const char *key, const char *from, const char *to, bool applied)
{
    struct daemon *d = arg;
    double now = tf_now_real();
    if (applied) {
        log_info("SIGHUP: %s: %s -> %s", key, from, to);
        events_add(&d->ev, now, "reload", "%s: %s -> %s", key, from, to);
        return;
    }
    log_warn("SIGHUP: %s: %s -> %s needs a restart; %s kept", key, from, to, from);
    events_add(&d->ev, now, "reload_failed", "%s: %s -> %s needs a restart; %s kept", key, from, to, from);
}

/* Applies next's reloadable keys to the daemon's configuration, with the
 * copies the state keeps. Called with no round running (a round reads
 * thresholds, also one an API request runs) and under the state's write
 * lock (the request threads read thresholds under its read lock). */
static void apply_config(void *arg)
{
    struct daemon *d = arg;
    pthread_rwlock_wrlock(&d->st.lock);
    config_reload(&d->cfg, d->next_cfg, NULL, NULL);
    d->st.stale_after = d->cfg.stale_intervals * d->cfg.interval;
    d->st.link_holddown = d->cfg.link_holddown;
    d->st.gen++;
    pthread_rwlock_unlock(&d->st.lock);
}

/* SIGHUP's first step: the configuration read again as at start (defaults,
 * the file, the command line over it) and validated; on any error the old
 * one stays whole. What a reload may change is applied (apply_config), the
 * rest reported; the health rounds, on this thread, take their copy. */
static void reload_config(struct daemon *d, double now)
{
    static struct config next, cur;   /* large; only this thread reloads */
    char err[512];
    if (cmdline_reread(&d->cl, &next, err, sizeof(err)) < 0) {
        events_add(&d->ev, now, "reload_failed", "configuration: %s; keeping the old one", err);
        return;
    }
    cur = d->cfg;
    if (config_reload(&cur, &next, config_changed, d) == 0)   /* reports, changes nothing of d's */
        return;
    d->next_cfg = &next;
    rebalance_between_rounds(&d->rb, apply_config, d);
    d->next_cfg = NULL;
    health_cfg_from(&d->health.cfg, &d->cfg);
}

/* rebalance_backend_swap's open for a reload or a role change: opens kind
 * on topology t and, for a reload (cls set), makes t and cls the state's
 * under the same lock, so that no round sees the new topology with the old
 * backend or the reverse. */
struct reopen {
    struct daemon *d;
    const char *kind;
    struct topo *t;
    struct classes *cls;         /* NULL: the topology stays (role change) */
    struct topo *old;            /* a reload's replaced topology and classes */
    struct classes *old_cls;
    bool oom;
};

static int reopen(void *arg, struct backend **be, char *err, size_t errlen)
{
    struct reopen *o = arg;
    struct daemon *d = o->d;
    int r = open_backend(d, &d->cfg, o->kind, o->t, be, err, errlen);
    if (r < 0 || !o->cls)
        return r;
    pthread_rwlock_wrlock(&d->st.lock);
    o->old = state_set_topo(&d->st, o->t);
    if (o->old != o->t) {
        o->old_cls = d->cls;
        d->cls = o->cls;
        d->st.classes = o->cls;
        state_reclassify(&d->st);
    }
    pthread_rwlock_unlock(&d->st.lock);
    if (o->old == o->t) {   /* out of memory: the new one was rejected */
        backend_close(*be);
        *be = NULL;
        o->oom = true;
        return -ENOMEM;
    }
    return 0;
}

static void reload(struct daemon *d)
{
    char err[512];
    double now = tf_now_real();
    reload_config(d, now);
    struct reopen o = {.d = d, .kind = d->be_acts ? d->cfg.backend : "none"};
    if (load_policy(&d->cfg, &o.t, &o.cls, err, sizeof(err)) < 0) {
        events_add(&d->ev, now, "reload_failed", "%s; keeping the old topology and policy", err);
        return;
    }
    if (rebalance_backend_swap(&d->rb, d->cfg.backend, reopen, &o, err, sizeof(err)) < 0) {
        if (o.oom)
            events_add(&d->ev, now, "reload_failed", "out of memory; keeping the old topology");
        else
            events_add(&d->ev, now, "reload_failed", "backend: %s; keeping the old topology and policy", err);
        classes_free(o.cls);
        free(o.cls);
        topo_free(o.t);
        return;
    }
    topo_free(o.old);
    if (o.old_cls) {
        classes_free(o.old_cls);
        free(o.old_cls);
    }
    const struct topo *t = o.t;
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
    /* The topology changes only in reload(), on this thread: no state lock
     * (the backend's open reads every switch; ingest must not wait for it). */
    struct reopen o = {.d = d, .kind = act ? d->cfg.backend : "none", .t = d->st.topo};
    int r = rebalance_backend_swap(&d->rb, d->cfg.backend, reopen, &o, err, sizeof(err));
    if (r == 0)
        d->be_acts = act;
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

static void free_policy(struct daemon *d, struct topo *t)
{
    topo_free(t);
    classes_free(d->cls);
    free(d->cls);
}

/* The topology and policy, the token, and whether the backend can act on
 * the topology; with --check-config, the verdict. -1 to go on (*t loaded),
 * else the exit status. */
static int prepare(struct daemon *d, bool check, struct topo **t)
{
    char err[512];
    if (load_policy(&d->cfg, t, &d->cls, err, sizeof(err)) < 0) {
        log_err("%s", err);
        return 2;
    }
    if (d->cfg.token_file[0] && tf_read_token(d->cfg.token_file, d->api.token, sizeof(d->api.token)) < 0) {
        log_err("token_file %s: unreadable, or not 1..255 printable characters", d->cfg.token_file);
        return 2;
    }
    /* A backend that acts needs every uplink's interface and next hop; without
     * them each round fails (visibly: backend unhealthy, backend_error), so
     * the check refuses the configuration and a start warns. */
    if (backend_check_topo(d->cfg.backend, *t, err, sizeof(err)) < 0) {
        if (check) {
            log_early_err("tierflowd", "%s", err);
            free_policy(d, *t);
            return 2;
        }
        log_warn("%s: every round that pins a flow will fail", err);
    }
    if (check) {
        printf("tierflowd: configuration OK (topology '%s': %u nodes, %u links; %u classes)\n", (*t)->name,
               (*t)->nnodes, (*t)->nlinks, d->cls->n);
        free_policy(d, *t);
        return 0;
    }
    return -1;
}

/* The start's backend: the configured kind, or "none" for a standby. */
static int open_first(void *arg, struct backend **be, char *err, size_t errlen)
{
    struct daemon *d = arg;
    return open_backend(d, &d->cfg, d->be_acts ? d->cfg.backend : "none", d->st.topo, be, err, errlen);
}

/* The state, the rounds with their backend, the API's wiring and, with
 * ha.etcd_endpoints, the election. 0 or the exit status. */
static int start_core(struct daemon *d, struct topo *t, double now)
{
    char err[512], token[256];
    tf_strlcpy(token, d->api.token, sizeof(token));
    api_init(&d->api);
    tf_strlcpy(d->api.token, token, sizeof(d->api.token));
    events_init(&d->ev);
    metrics_init(&d->m);
    metrics_configure(&d->m, &d->cfg);
    history_init(&d->hist);
    health_init(&d->health, &d->cfg);
    if (state_init(&d->st, t, (size_t)d->cfg.max_flows, d->cfg.stale_intervals * d->cfg.interval, now) < 0) {
        log_err("out of memory");
        return 1;
    }
    d->st.classes = d->cls;
    d->st.link_holddown = d->cfg.link_holddown;
    d->main_thread = pthread_self();
    d->be_acts = !d->cfg.ha_endpoints[0];
    rebalance_init(&d->rb, &d->st, &d->ev, &d->m, NULL, &d->cfg);
    if (rebalance_backend_swap(&d->rb, d->cfg.backend, open_first, d, err, sizeof(err)) < 0) {
        log_err("backend %s: %s", d->cfg.backend, err);
        return 1;
    }
    d->api.st = &d->st;
    d->api.ev = &d->ev;
    d->api.m = &d->m;
    d->api.hist = &d->hist;
    d->api.rb = &d->rb;
    d->api.cfg = &d->cfg;
    d->api.backend_name = d->cfg.backend;
    d->api.start = now;
    if (d->cfg.ha_endpoints[0]) {
        struct leader_hooks lh = {.on_change = role_poke, .on_jobs = jobs_replica, .arg = d};
        if (leader_start(&d->ld, &d->cfg, &d->ev, &d->m, &lh, err, sizeof(err)) < 0) {
            log_err("%s", err);
            return 1;
        }
        d->api.ld = d->ld;
        d->rb.fence = leader_fence;
        d->rb.fence_arg = d->ld;
    }
    return 0;
}

/* openapi.json and the dashboard's files found, the HTTP server started. */
static int start_http(struct daemon *d, const struct topo *t, double now, struct httpd **h)
{
    char err[512], path[PATH_MAX], web[PATH_MAX] = "";
    if (find_shared("openapi.json", "controller/openapi.json", path, sizeof(path), false) == 0 &&
        tf_read_file(path, 4 << 20, &d->api.openapi, &d->api.openapi_len) < 0)
        d->api.openapi = NULL;
    if (!d->api.openapi)
        log_warn("openapi.json not found under %s or the source tree: /api/v1/openapi.json will be 404", TF_SHAREDIR);
    if (d->cfg.web_dir[0])
        tf_strlcpy(web, d->cfg.web_dir, sizeof(web));
    else if (find_shared("web", "web", web, sizeof(web), true) < 0)
        web[0] = '\0';
    if (httpd_start(h, &d->cfg, &d->api, web, err, sizeof(err)) < 0) {
        log_err("%s", err);
        return 1;
    }
    log_info("tierflowd %s: topology '%s' (%u nodes, %u links), backend %s, listening on %s (port %u)%s, web %s",
             tf_version, t->name, t->nnodes, t->nlinks, d->cfg.backend, d->cfg.listen, httpd_port(*h),
             d->cfg.tls_cert[0] ? " with TLS" : "", web[0] ? web : "(none)");
    events_add(&d->ev, now, "start", "tierflowd %s started, backend %s", tf_version, d->cfg.backend);
    return 0;
}

/* This thread runs the rebalance rounds, which cost CPU in proportion to
 * the fat flows (0.5 s for 100,000 on one core). On a busy host they must
 * not starve the HTTP workers (probe reports, API): lower this thread's
 * priority only (Linux nice values are per thread; the workers were
 * started before and keep theirs). */
static void lower_priority(void)
{
    id_t tid = (id_t)syscall(SYS_gettid);
    errno = 0;
    int prio = getpriority(PRIO_PROCESS, tid);
    if ((prio == -1 && errno) || setpriority(PRIO_PROCESS, tid, prio + REBALANCE_NICE) < 0)
        log_warn("setpriority: %s (rebalance rounds keep the workers' priority)", strerror(errno));
}

/* The periodic round comes this share of an interval (at most
 * TICK_LAG_MAX s) after a wall-clock multiple of the interval, or as soon
 * as every live probe has reported the interval that ended there
 * (state_look_time; 8-17 ms after it in a bench 50 leaf/spine trace):
 * the probes close their intervals on those multiples (tf_until_boundary),
 * so their reports are in. At a random phase the round waited up to an interval
 * more for what the reports said: test_gray_hop named a gray link after
 * 2.2-3.3 s (two bad rounds of three), 2.0-2.9 s aligned (docs/health.md). */
#define TICK_LAG_FRAC 0.15
#define TICK_LAG_MAX 0.3

static double tick_lag(const struct daemon *d)
{
    double iv = d->cfg.interval;
    return TICK_LAG_FRAC * iv < TICK_LAG_MAX ? TICK_LAG_FRAC * iv : TICK_LAG_MAX;
}

/* Monotonic time of the next periodic round: at least half an interval
 * away, just after the probes' reports of an interval are in. */
static double next_tick(const struct daemon *d)
{
    double lag = tick_lag(d);
    return tf_now_mono() + tf_until_boundary(tf_now_real() - lag, d->cfg.interval, d->cfg.interval / 2);
}

/* Whether every live probe has reported the look at monotonic time at
 * (state_look_time): then a round waits no longer for the reports. */
static bool look_in(struct daemon *d, double at)
{
    double now = tf_now_real(), look = state_look_time(&d->st, now);
    return look > 0 && look >= now + (at - tf_now_mono()) - STATE_LOOK_TOL;
}

/* A standby ingests, and runs no round (leader.h); nor does a leader whose
 * backend did not open (tried again every interval). A leader whose lease
 * went unproven stops here by its own clock. False to stop. */
static bool standby_step(struct daemon *d, int sig, double *next)
{
    if (d->be_acts)
        role_change(d);
    if (sig == SIGTERM || sig == SIGINT) {
        log_info("signal %d: shutting down", sig);
        return false;
    }
    if (sig == SIGHUP)
        reload(d);
    if (tf_now_mono() >= *next) {
        *next = next_tick(d);
        state_tick(&d->st, tf_now_real(), probe_cb, d);
        if (!d->be_acts && leader_acts(d->ld))
            role_change(d);
    }
    return true;
}

/* A report showed a new contended direction: one round once the reports
 * of the other probes of the same look are in (a round on one leaf's view
 * fixes only that leaf), that is as soon as every live probe has reported
 * that look (state_look_time), or react_window after, whichever is
 * first. At an interval's end all probes report within a few ms of each
 * other (8-17 ms in a bench 50 leaf/spine trace), and the window alone
 * put the round 110-124 ms after the first report; a look at mid-interval,
 * which only some probes report, waits out the window. */
static void react_step(struct daemon *d, double *react_at)
{
    if (*react_at == 0 && rebalance_contended(&d->rb, tf_now_real()))
        *react_at = tf_now_mono() + d->cfg.react_window;
    if (*react_at > 0 && (tf_now_mono() >= *react_at || state_look_time(&d->st, tf_now_real()) > 0)) {
        *react_at = 0;
        double now = tf_now_real();
        state_tick(&d->st, now, probe_cb, d);
        rebalance_auto(&d->rb, now);
        atomic_fetch_add(&d->m.react_rounds, 1);
    }
}

/* The periodic round: routing (in case a wake-up was lost), probes'
 * staleness, gray failures, the round, the history. */
static void tick(struct daemon *d)
{
    double now = tf_now_real();
    rebalance_routing(&d->rb, now);
    state_tick(&d->st, now, probe_cb, d);
    if (health_tick(&d->health, &d->st, &d->ev, now) < 0)
        log_warn("health round: out of memory");
    rebalance_auto(&d->rb, now);
    history_tick(&d->hist, &d->st, atomic_load(&d->m.moves), atomic_load(&d->m.backend_errors), now);
}

/* The main loop: signals, taken synchronously, and the rounds, until
 * SIGTERM or SIGINT. */
static void run(struct daemon *d, const sigset_t *set)
{
    double next = next_tick(d), last_poke_round = 0, react_at = 0;
    for (;;) {
        double mono = tf_now_mono(), lag = tick_lag(d), wait = next - mono;
        /* Wake at the interval's end (lag before the tick) and from there
         * every REACT_POLL s, to see whether its look is complete; between
         * ticks, every REACT_POLL s to look at what reports brought
         * (rebalance_contended is cheap when nothing changed); and when a
         * round a report triggered is due. */
        wait = wait > lag ? wait - lag : wait > REACT_POLL ? REACT_POLL : wait;
        if (d->cfg.react_window > 0 && wait > REACT_POLL)
            wait = REACT_POLL;
        if (react_at > 0 && react_at - mono < wait)
            wait = react_at - mono;
        if (wait < 0)
            wait = 0;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        int sig = sigtimedwait(set, NULL, &ts);
        if (sig == SIGUSR2) {
            role_change(d);
            continue;
        }
        if (!d->be_acts || !leader_acts(d->ld)) {
            if (!standby_step(d, sig, &next))
                return;
            continue;
        }
        if (sig == SIGHUP) {
            log_info("SIGHUP: reloading the configuration, topology and policy");
            reload(d);
            rebalance_routing(&d->rb, tf_now_real());
            continue;
        }
        if (sig == SIGUSR1) {
            /* Routing withdrew something: re-place the flows now rather
             * than at the next tick (at most one extra round per 100 ms,
             * however fast a link flaps). */
            double now = tf_now_real();
            if (rebalance_routing(&d->rb, now) > 0 && tf_now_mono() - last_poke_round >= 0.1) {
                last_poke_round = tf_now_mono();
                state_tick(&d->st, now, probe_cb, d);
                rebalance_auto(&d->rb, now);
            }
            continue;
        }
        if (sig == SIGTERM || sig == SIGINT) {
            log_info("signal %d: shutting down", sig);
            return;
        }
        if (d->cfg.react_window > 0 && tf_now_mono() < next)
            react_step(d, &react_at);
        /* The periodic round is due at next, or once every probe has
         * reported the interval that ended lag before it. */
        mono = tf_now_mono();
        if (mono < next && !(next - mono <= lag && look_in(d, next - lag)))
            continue;
        react_at = 0;
        next += d->cfg.interval;
        if (next < tf_now_mono())
            next = next_tick(d);
        tick(d);
    }
}

/* The HTTP server and the election stopped, the backend taken back from the
 * rounds (its routes withdrawn with withdraw_on_exit) and closed. */
static void stop(struct daemon *d, struct httpd *h)
{
    httpd_stop(h);
    leader_stop(d->ld);
    struct backend *be = rebalance_backend_take(&d->rb);
    if (d->cfg.withdraw_on_exit && d->be_acts && be) {
        struct backend_result br;
        if (backend_withdraw(be, &br) < 0)
            log_err("withdraw: %s", backend_error(be));
        else
            log_info("withdrew %zu rules and %zu routes", br.rules_deleted, br.routes_deleted);
    }
    backend_close(be);
    rebalance_destroy(&d->rb);
    api_destroy(&d->api);
    events_destroy(&d->ev);
    history_destroy(&d->hist);
    health_free(&d->health);
    state_free(&d->st);
    classes_free(d->cls);
    free(d->cls);
    cmdline_free(&d->cl);
}

int main(int argc, char **argv)
{
    static struct daemon d; /* large; static keeps it off the stack */
    struct topo *t;
    struct httpd *h;
    int rc = cmdline_parse(&d.cl, &d.cfg, argc, argv);
    if (rc >= 0)
        return rc;
    log_init("tierflowd", log_level_parse(d.cfg.log_level), d.cfg.syslog, d.cl.journal);
    if ((rc = prepare(&d, d.cl.check, &t)) >= 0)
        return rc;
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
    if ((rc = start_core(&d, t, now)) || (rc = start_http(&d, t, now, &h)))
        return rc;
    lower_priority();
    /* Adopt what is installed instead of flapping it, then take what
     * routing says (pins it no longer offers were already removed when the
     * backend opened). */
    rebalance_adopt(&d.rb, tf_now_real());
    rebalance_routing(&d.rb, tf_now_real());
    run(&d, &set);
    stop(&d, h);
    return 0;
}
