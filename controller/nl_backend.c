/*
 * nl_backend: see nl_backend.h.
 */
#include "controller/nl_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/nlroute.h"
#include "controller/nlsock.h"
#include "controller/owner.h"
#include "controller/routing_view.h"
#include "policy/topo.h"

/* A burst of routing changes (BGP withdrawing a leaf's prefix from every
 * switch, a link taking its routes with it) is read as one. */
#define NL_WATCH_DEBOUNCE_MS 20
/* Re-read every view this often even without a notification (a lost
 * overflow, a namespace that missed its group). */
#define NL_WATCH_RESCAN_MS 5000

struct nl_sw {
    char name[PLAN_SW_LEN];
    char netns[64];
    uint32_t node;        /* topology node, TOPO_NONE without a topology */
    struct nlroute *nl;
    struct plan have;     /* sorted; what the kernel holds of ours */
    struct routing_view view;
    int wfd;              /* change notifications, -1 none */
    unsigned unsupported; /* plan_sel bits this kernel does not keep (probed at
                             open, or seen dropped on a read-back) */
};

struct nl_backend {
    struct nlroute_own own;
    uint32_t routing_table;
    unsigned assumed;     /* backend_cfg.unsupported */
    const struct topo *topo;
    pthread_mutex_t mu;   /* guards sw[] (sockets, have, view), down, notes */
    struct nl_sw *sw;
    size_t nsw;
    uint8_t *down;        /* 2 * topo->nlinks, from every view */
    uint8_t *watched;     /* topo->nnodes: 1 for a switch this backend watches */
    uint32_t ndirs;
    char notes[1024];     /* pins withdrawn since the last nl_backend_routing */
    size_t nnotes_lost;
    void (*poke)(void *arg);
    void *poke_arg;
    bool (*may_act)(void *arg);   /* backend_cfg.may_act */
    void *may_act_arg;
    pthread_t thr;
    bool thr_started;
    int stop[2];          /* the watcher's wake-up pipe */
};

/* Read-back comparison: for every rule of sent that got (a kernel's rules,
 * sorted here) lacks, the rules of got that are it without some selectors
 * go into widened; returns the selectors they lost (0: none widened). */
static unsigned find_widened(const struct plan *sent, struct plan *got, struct plan *widened)
{
    unsigned lost = 0;
    plan_sort(got);
    for (size_t i = 0; i < sent->nrules; i++) {
        const struct plan_rule *r = &sent->rules[i];
        if (bsearch(r, got->rules, got->nrules, sizeof(*r), (int (*)(const void *, const void *))plan_rule_cmp))
            continue;
        for (size_t j = 0; j < got->nrules; j++) {
            unsigned d = plan_rule_dropped(r, &got->rules[j]);
            if (d && !(d & PLAN_SEL_OTHER) && plan_add_rule(widened, &got->rules[j]) == 0)
                lost |= d;
        }
    }
    return lost;
}

/* Whether s's kernel keeps a FRA_DSCP selector (kernels before 6.13 skip
 * the unknown attribute and install the rule without it). Probed with a
 * rule that can match nothing (from 255.255.255.255) at tierflow's last
 * priority and table, read back and removed at once. A kernel that refuses
 * the rule outright does not keep it either. */
static void probe_dscp(struct nl_backend *b, struct nl_sw *s)
{
    struct plan probe, got, widened;
    plan_init(&probe);
    plan_init(&got);
    plan_init(&widened);
    struct plan_rule r = {.prio = b->own.prio_max, .table = b->own.table_max, .af = 4, .src_len = 32,
                          .src = {255, 255, 255, 255}, .dscp = 63};
    tf_strlcpy(r.sw, s->name, sizeof(r.sw));
    char why[256] = "";
    size_t done = 0, rt = 0;
    int rc = plan_add_rule(&probe, &r);
    if (!rc)
        rc = nlroute_run(s->nl, NLROUTE_RULE_ADD, &probe, b->own.proto, &done, &rt, why, sizeof(why));
    if (!rc)
        rc = nlroute_read(s->nl, &b->own, s->name, &got, why, sizeof(why));
    if (!rc && find_widened(&probe, &got, &widened))
        s->unsupported |= PLAN_SEL_DSCP;
    else if (rc)
        s->unsupported |= PLAN_SEL_DSCP;
    /* Whatever form it took, it goes. */
    if (plan_append(&widened, &probe, NULL) == 0)
        nlroute_run(s->nl, NLROUTE_RULE_DEL, &widened, b->own.proto, &done, &rt, why, sizeof(why));
    if (s->unsupported & PLAN_SEL_DSCP)
        log_warn("netlink backend: switch %s: its kernel does not keep the DSCP rule selector (FRA_DSCP, "
                 "kernel 6.13+)%s%s: DSCP class rules are refused there", s->name, rc ? ": " : "", rc ? why : "");
    plan_free(&probe);
    plan_free(&got);
    plan_free(&widened);
}

static int add_switch(struct nl_backend *b, const char *name, const char *netns, uint32_t node,
                      char *err, size_t errlen)
{
    struct nl_sw *v = realloc(b->sw, (b->nsw + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    b->sw = v;
    struct nl_sw *s = &v[b->nsw];
    memset(s, 0, sizeof(*s));
    tf_strlcpy(s->name, name, sizeof(s->name));
    tf_strlcpy(s->netns, netns, sizeof(s->netns));
    s->node = node;
    s->wfd = -1;
    s->unsupported = b->assumed;
    plan_init(&s->have);
    routing_view_init(&s->view);
    char why[200] = "";
    int rc = nlroute_open(netns, &s->nl, why, sizeof(why));
    if (!rc)
        probe_dscp(b, s);
    if (!rc)
        rc = nlroute_read(s->nl, &b->own, name, &s->have, why, sizeof(why));
    /* Subscribe before the first read of the view, so that no change falls
     * between the two. */
    if (!rc)
        rc = nlsock_watch_open(netns, &s->wfd, why, sizeof(why));
    if (!rc)
        rc = nlroute_read_view(s->nl, b->routing_table, b->own.proto, &s->view, why, sizeof(why));
    if (rc) {
        snprintf(err, errlen, "switch %s%s%s: %s", name, netns[0] ? " in netns " : "", netns, why);
        nlroute_close(s->nl);
        plan_free(&s->have);
        routing_view_free(&s->view);
        if (s->wfd >= 0)
            close(s->wfd);
        return rc;
    }
    plan_sort(&s->have);
    b->nsw++;
    return 0;
}

static void *watch_main(void *arg);
static void check_sw(struct nl_backend *b, struct nl_sw *s);
static bool down_refresh(struct nl_backend *b);

int nl_backend_open(const struct backend_cfg *cfg, struct nl_backend **out, char *err,
                    size_t errlen)
{
    struct nl_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    pthread_mutex_init(&b->mu, NULL);
    b->stop[0] = b->stop[1] = -1;
    b->own = (struct nlroute_own){cfg->prio_min, cfg->prio_max, cfg->table_base,
                                  cfg->table_base + OWNER_TABLE_SPAN - 1, cfg->rt_proto};
    b->routing_table = cfg->routing_table ? cfg->routing_table : ROUTING_VIEW_MAIN;
    b->topo = cfg->topo;
    b->assumed = cfg->unsupported;
    b->poke = cfg->on_routing;
    b->poke_arg = cfg->on_routing_arg;
    b->may_act = cfg->may_act;
    b->may_act_arg = cfg->may_act_arg;
    char local[PLAN_SW_LEN] = "";
    if (cfg->local_name)
        tf_strlcpy(local, cfg->local_name, sizeof(local));
    else if (gethostname(local, sizeof(local) - 1) < 0)
        local[0] = '\0';
    int rc = 0;
    if (!cfg->topo) {
        rc = local[0] ? add_switch(b, local, "", TOPO_NONE, err, errlen) : 0;
    } else {
        const struct topo *t = cfg->topo;
        b->ndirs = 2 * t->nlinks;
        if (!(b->down = calloc(b->ndirs + 1, 1)) || !(b->watched = calloc(t->nnodes + 1, 1)))
            rc = -ENOMEM;
        for (uint32_t i = 0; i < t->nnodes && !rc; i++) {
            const struct topo_node *nd = &t->nodes[i];
            if (nd->tier == TOPO_HOST)
                continue;
            if (nd->netns[0])
                rc = add_switch(b, nd->name, nd->netns, i, err, errlen);
            else if (local[0] && !strcmp(nd->name, local))
                rc = add_switch(b, nd->name, "", i, err, errlen);
            else
                continue;
            b->watched[i] = !rc;
        }
    }
    if (!rc && pipe2(b->stop, O_CLOEXEC | O_NONBLOCK) < 0)
        rc = tf_fail(err, errlen, -errno, "pipe: %s", strerror(errno));
    if (rc) {
        nl_backend_close(b);
        return rc;
    }
    /* What is installed and no longer offered by routing goes now: the
     * adoption at start keeps only what routing still allows. */
    for (size_t i = 0; i < b->nsw; i++)
        check_sw(b, &b->sw[i]);
    down_refresh(b);
    if (b->nsw && (rc = pthread_create(&b->thr, NULL, watch_main, b)) != 0) {
        tf_fail(err, errlen, -rc, "watcher thread: %s", strerror(rc));
        nl_backend_close(b);
        return -rc;
    }
    b->thr_started = b->nsw > 0;
    log_info("netlink backend: %zu switch(es) reachable, watching routing table %u", b->nsw, b->routing_table);
    *out = b;
    return 0;
}

void nl_backend_close(struct nl_backend *b)
{
    if (!b)
        return;
    if (b->thr_started)
        tf_thread_stop(b->thr, b->stop[1]);
    for (size_t i = 0; i < b->nsw; i++) {
        nlroute_close(b->sw[i].nl);
        plan_free(&b->sw[i].have);
        routing_view_free(&b->sw[i].view);
        if (b->sw[i].wfd >= 0)
            close(b->sw[i].wfd);
    }
    for (int k = 0; k < 2; k++)
        if (b->stop[k] >= 0)
            close(b->stop[k]);
    pthread_mutex_destroy(&b->mu);
    free(b->down);
    free(b->watched);
    free(b->sw);
    free(b);
}

static struct nl_sw *find_sw(struct nl_backend *b, const char *name)
{
    for (size_t i = 0; i < b->nsw; i++)
        if (!strcmp(b->sw[i].name, name))
            return &b->sw[i];
    return NULL;
}

static int reread(struct nl_backend *b, struct nl_sw *s, char *err, size_t errlen)
{
    plan_clear(&s->have);
    int rc = nlroute_read(s->nl, &b->own, s->name, &s->have, err, errlen);
    plan_sort(&s->have);
    return rc;
}

/* The four make-before-break steps of one diff; stops at the first error. */
static int run_steps(struct nl_backend *b, struct nl_sw *s, const struct plan *add,
                     const struct plan *del, struct backend_result *res, char *err,
                     size_t errlen)
{
    size_t rt = 0, done;
    int rc;
    uint8_t p = b->own.proto;
    done = 0;
    rc = nlroute_run(s->nl, NLROUTE_ROUTE_REPLACE, add, p, &done, &rt, err, errlen);
    res->routes_added += done;
    if (!rc) {
        done = 0;
        rc = nlroute_run(s->nl, NLROUTE_RULE_ADD, add, p, &done, &rt, err, errlen);
        res->rules_added += done;
    }
    if (!rc) {
        done = 0;
        rc = nlroute_run(s->nl, NLROUTE_RULE_DEL, del, p, &done, &rt, err, errlen);
        res->rules_deleted += done;
    }
    if (!rc) {
        done = 0;
        rc = nlroute_run(s->nl, NLROUTE_ROUTE_DEL, del, p, &done, &rt, err, errlen);
        res->routes_deleted += done;
    }
    res->round_trips += rt;
    return rc;
}

/* Drives switch s to target (sorted, this switch only). */
static int sync_sw(struct nl_backend *b, struct nl_sw *s, struct plan *target,
                   struct backend_result *res, char *err, size_t errlen)
{
    struct plan add, del;
    int rc = plan_diff(target, &s->have, &add, &del);
    if (rc)
        return rc;
    if (add.nrules || add.nroutes || del.nrules || del.nroutes) {
        res->switches++;
        /* A replaced route is an add whose key was in have. */
        for (size_t i = 0, j = 0; i < add.nroutes; i++) {
            while (j < s->have.nroutes && plan_route_key_cmp(&s->have.routes[j], &add.routes[i]) < 0)
                j++;
            if (j < s->have.nroutes && !plan_route_key_cmp(&s->have.routes[j], &add.routes[i]))
                res->routes_replaced++;
        }
        rc = run_steps(b, s, &add, &del, res, err, errlen);
    }
    plan_free(&add);
    plan_free(&del);
    return rc;
}

static void note_unsupported(struct backend_result *res, const struct nl_sw *s, unsigned sels, size_t n,
                             const char *what)
{
    char why[200];
    snprintf(why, sizeof(why), "switch %s: its kernel does not keep the rule selector %s: %zu rule%s %s", s->name,
             plan_sel_name(sels), n, n == 1 ? "" : "s", what);
    backend_result_unsup(res, s->name, sels, n, why);
}

/* After an install: every rule sent is read back and compared selector by
 * selector; a rule the kernel installed broader than asked (it skipped an
 * attribute it does not know) is deleted at once and the selector marked
 * unsupported on this switch, so that no later round sends it again.
 * Returns whether s->have was read from the kernel. */
static bool verify_rules(struct nl_backend *b, struct nl_sw *s, const struct plan *target,
                         struct backend_result *res)
{
    struct plan got, widened;
    plan_init(&got);
    plan_init(&widened);
    char why[256] = "";
    unsigned lost = 0;
    if (nlroute_read(s->nl, &b->own, s->name, &got, why, sizeof(why)) == 0)
        lost = find_widened(target, &got, &widened);
    if (lost) {
        size_t done = 0, rt = 0;
        int rc = nlroute_run(s->nl, NLROUTE_RULE_DEL, &widened, b->own.proto, &done, &rt, why, sizeof(why));
        log_err("netlink backend: switch %s: the kernel dropped %s from %zu rule%s: %s", s->name,
                plan_sel_name(lost), widened.nrules, widened.nrules == 1 ? "" : "s",
                rc ? why : "deleted at once");
        s->unsupported |= lost;
        note_unsupported(res, s, lost, widened.nrules, rc ? "installed broader, deleting failed" : "installed "
                         "broader than asked were deleted; rules needing it are refused");
        reread(b, s, why, sizeof(why));
    }
    plan_free(&got);
    plan_free(&widened);
    return lost != 0;
}

/* Takes out of target the rules that need a selector s's kernel does not
 * keep: they are refused, not installed broader. */
static void refuse_unsupported(const struct nl_sw *s, struct plan *target, struct backend_result *res)
{
    size_t w = 0, n = 0;
    unsigned sels = 0;
    for (size_t i = 0; i < target->nrules; i++) {
        unsigned need = plan_rule_sels(&target->rules[i]) & s->unsupported;
        if (need) {
            n++;
            sels |= need;
        } else {
            target->rules[w++] = target->rules[i];
        }
    }
    target->nrules = w;
    if (n)
        note_unsupported(res, s, sels, n, "needing it refused (a DSCP class needs kernel 6.13+ there)");
}

static int apply_sw(struct nl_backend *b, struct nl_sw *s, struct plan *target,
                    struct backend_result *res)
{
    char err[256] = "";
    size_t added = res->rules_added;
    int rc = sync_sw(b, s, target, res, err, sizeof(err));
    if (!rc) {
        if (res->rules_added > added && verify_rules(b, s, target, res))
            return 0;
        plan_free(&s->have);
        return plan_copy(&s->have, target);
    }
    /* Put the switch back as it was: the old state is s->have until now. */
    log_warn("netlink backend: switch %s: %s; rolling back", s->name, err);
    snprintf(res->error, sizeof(res->error), "switch %s: %.200s", s->name, err);
    tf_strlcpy(res->failed_sw, s->name, sizeof(res->failed_sw));
    struct plan old;
    struct backend_result scratch = {0};
    char why[256] = "";
    if (plan_copy(&old, &s->have) == 0) {
        if (reread(b, s, why, sizeof(why)) == 0 &&
            sync_sw(b, s, &old, &scratch, why, sizeof(why)) == 0)
            res->rolled_back = true;
        else
            log_err("netlink backend: switch %s: rollback failed: %s", s->name, why);
        plan_free(&old);
    }
    reread(b, s, why, sizeof(why));
    return rc;
}

int nl_backend_apply(struct nl_backend *b, const struct plan *want, struct backend_result *res)
{
    char (*names)[PLAN_SW_LEN];
    size_t nnames;
    int rc = plan_switches(want, &names, &nnames);
    if (rc)
        return rc;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < nnames; i++)
        if (!find_sw(b, names[i]) && res->skipped++ == 0)
            tf_strlcpy(res->skipped_sw, names[i], sizeof(res->skipped_sw));
    free(names);
    int first = 0;
    for (size_t i = 0; i < b->nsw; i++) {
        struct plan target, narrow;
        plan_init(&target);
        plan_init(&narrow);
        struct routing_narrowed nn;
        rc = plan_append(&target, want, b->sw[i].name);
        /* Never install what routing does not offer (the round may not
         * know yet that a path failed). */
        if (!rc && !(rc = routing_view_narrow(&b->sw[i].view, &target, &narrow, &nn))) {
            res->narrowed += nn.nh_dropped + nn.rules_dropped;   /* a route that lost all its next hops is counted by them */
            if (nn.nh_dropped)
                log_info("netlink backend: switch %s: not installing %s (and %zu more): routing does not offer it",
                         b->sw[i].name, nn.first, nn.nh_dropped + nn.rules_dropped - 1);
            refuse_unsupported(&b->sw[i], &narrow, res);
            rc = apply_sw(b, &b->sw[i], &narrow, res);
        }
        plan_free(&target);
        plan_free(&narrow);
        if (rc && !first)
            first = rc;
    }
    pthread_mutex_unlock(&b->mu);
    return first;
}

int nl_backend_read(struct nl_backend *b, struct plan *have, char *err, size_t errlen)
{
    int rc = 0;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < b->nsw && !rc; i++) {
        rc = reread(b, &b->sw[i], err, errlen);
        if (!rc)
            rc = plan_append(have, &b->sw[i].have, NULL);
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}

int nl_backend_withdraw(struct nl_backend *b, struct backend_result *res)
{
    struct plan empty;
    plan_init(&empty);
    int first = 0;
    pthread_mutex_lock(&b->mu);
    for (size_t i = 0; i < b->nsw; i++) {
        struct nl_sw *s = &b->sw[i];
        char err[256] = "";
        int rc = reread(b, s, err, sizeof(err));
        if (!rc)
            rc = sync_sw(b, s, &empty, res, err, sizeof(err));
        if (rc && !first) {
            first = rc;
            snprintf(res->error, sizeof(res->error), "switch %s: %.200s", s->name, err);
            tf_strlcpy(res->failed_sw, s->name, sizeof(res->failed_sw));
        }
        reread(b, s, err, sizeof(err));
    }
    pthread_mutex_unlock(&b->mu);
    return first;
}

/* ---- routing watch ----------------------------------------------------------- */

static void note(struct nl_backend *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct nl_backend *b, const char *fmt, ...)
{
    char line[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    log_msg(LOG_NOTICE, "netlink backend: %s", line);
    size_t used = strlen(b->notes);
    if (used + strlen(line) + 2 > sizeof(b->notes)) {
        b->nnotes_lost++;
        return;
    }
    snprintf(b->notes + used, sizeof(b->notes) - used, "%s\n", line);
}

/* Reads s's view again and withdraws at once whatever of ours it no longer
 * offers. Caller holds mu. */
static void check_sw(struct nl_backend *b, struct nl_sw *s)
{
    char err[256] = "";
    if (nlroute_read_view(s->nl, b->routing_table, b->own.proto, &s->view, err, sizeof(err)) < 0) {
        /* An unreadable view says nothing about the paths: the installed
         * state and the last view stay (logged); the next change or rescan
         * reads it again. */
        log_warn("netlink backend: switch %s: %s", s->name, err);
        return;
    }
    if (s->view.nh_objects)
        log_debug("netlink backend: switch %s uses next-hop objects: only interface state narrows its pins",
                  s->name);
    struct plan narrow;
    struct routing_narrowed nn;
    if (routing_view_narrow(&s->view, &s->have, &narrow, &nn) < 0)
        return;
    if ((nn.routes_dropped || nn.nh_dropped || nn.rules_dropped) && b->may_act && !b->may_act(b->may_act_arg))
        log_info("netlink backend: switch %s: routing withdrew %s, but this tierflowd may not act now; left alone",
                 s->name, nn.first);
    else if (nn.routes_dropped || nn.nh_dropped || nn.rules_dropped) {
        struct backend_result res = {0};
        int rc = apply_sw(b, s, &narrow, &res);
        if (rc)
            note(b, "switch %s: routing withdrew %s, but removing tierflow's pins failed: %s", s->name, nn.first,
                 res.error);
        else
            note(b, "switch %s: routing withdrew %s: removed %zu rule%s and %zu route%s that used it "
                    "(the flows follow routing's ECMP until re-placed)",
                 s->name, nn.first, res.rules_deleted, res.rules_deleted == 1 ? "" : "s",
                 res.routes_deleted + res.routes_replaced, res.routes_deleted + res.routes_replaced == 1 ? "" : "s");
    }
    plan_free(&narrow);
}

static bool watched(const struct nl_backend *b, uint32_t node)
{
    return b->watched[node];
}

/* How many switches must infer y -> d before it counts: two when at least
 * two watched switches other than d hang below y (one switch's view may be
 * a session still filling), else the one there is. */
static unsigned quorum(const struct nl_backend *b, uint32_t y, uint32_t d)
{
    const struct topo *t = b->topo;
    const struct topo_node *yn = &t->nodes[y];
    unsigned n = 0;
    for (uint32_t j = 0; j < yn->down_count && n < 2; j++) {
        uint32_t x = t->links[t->down_links[yn->down_first + j]].lo;
        n += x != d && watched(b, x);
    }
    return n >= 2 ? 2 : 1;
}

/* Recomputes down[] from every view; true when it changed. Caller holds mu
 * (or is the only thread, at open). A switch watched here speaks for its own
 * links (its interfaces); inferences about it from others are not needed. */
static bool down_refresh(struct nl_backend *b)
{
    if (!b->topo || !b->down)
        return false;
    uint8_t *d = calloc(b->ndirs + 1, 1), *inf = calloc(b->ndirs + 1, 1);
    if (!d || !inf) {
        free(d);
        free(inf);
        return false;
    }
    for (size_t i = 0; i < b->nsw; i++)
        if (b->sw[i].node != TOPO_NONE)
            routing_view_down_dirs(b->topo, b->sw[i].node, &b->sw[i].view, d, inf);
    for (uint32_t k = 0; k < b->ndirs; k++) {
        if (!inf[k] || d[k])
            continue;
        uint32_t y = topo_dir_from(b->topo, k), to = topo_dir_to(b->topo, k);
        if (!watched(b, y) && inf[k] >= quorum(b, y, to))
            d[k] = 1;
    }
    bool changed = memcmp(d, b->down, b->ndirs) != 0;
    memcpy(b->down, d, b->ndirs);
    free(d);
    free(inf);
    return changed;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void *watch_main(void *arg)
{
    struct nl_backend *b = arg;
    struct pollfd *pf = calloc(b->nsw + 1, sizeof(*pf));
    bool *dirty = calloc(b->nsw + 1, sizeof(bool));
    if (!pf || !dirty) {
        log_err("netlink backend: watcher: out of memory; routing changes are seen only by rounds");
        free(pf);
        free(dirty);
        return NULL;
    }
    pf[0] = (struct pollfd){.fd = b->stop[0], .events = POLLIN};
    for (size_t i = 0; i < b->nsw; i++)
        pf[i + 1] = (struct pollfd){.fd = b->sw[i].wfd, .events = POLLIN};
    for (;;) {
        int n = poll(pf, b->nsw + 1, NL_WATCH_RESCAN_MS);
        if (n < 0 && errno != EINTR) {
            log_err("netlink backend: watcher: poll: %s", strerror(errno));
            break;
        }
        if (n > 0 && (pf[0].revents & POLLIN))
            break;
        bool any = false;
        for (size_t i = 0; i < b->nsw; i++) {
            dirty[i] = n == 0 || (n > 0 && (pf[i + 1].revents & (POLLIN | POLLERR)));
            any |= dirty[i];
        }
        if (!any)
            continue;
        if (n > 0)
            sleep_ms(NL_WATCH_DEBOUNCE_MS);
        for (size_t i = 0; i < b->nsw; i++)
            if (dirty[i] || n > 0)
                dirty[i] |= nlsock_watch_drain(b->sw[i].wfd) > 0;
        pthread_mutex_lock(&b->mu);
        for (size_t i = 0; i < b->nsw; i++)
            if (dirty[i])
                check_sw(b, &b->sw[i]);
        bool changed = down_refresh(b) || b->notes[0];
        pthread_mutex_unlock(&b->mu);
        if (changed && b->poke)
            b->poke(b->poke_arg);
    }
    free(pf);
    free(dirty);
    return NULL;
}

int nl_backend_routing(struct nl_backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen)
{
    pthread_mutex_lock(&b->mu);
    int rc = 0;
    if (!b->down || ndirs != b->ndirs)
        rc = -ESTALE;
    else
        memcpy(down, b->down, ndirs);
    if (notes && noteslen) {
        tf_strlcpy(notes, b->notes, noteslen);
        if (b->nnotes_lost) {
            size_t u = strlen(notes);
            snprintf(notes + u, noteslen - u, "%zu more notes lost\n", b->nnotes_lost);
        }
    }
    b->notes[0] = '\0';
    b->nnotes_lost = 0;
    pthread_mutex_unlock(&b->mu);
    return rc;
}
