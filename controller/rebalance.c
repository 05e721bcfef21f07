/*
 * rebalance: see rebalance.h. A round works on a snapshot of the fat flows
 * taken under the state's read lock; the assignment and the plan are
 * computed without any state lock, and the pins are written back under the
 * write lock only after the backend accepted the plan, so that the state
 * never claims a path the fabric does not have.
 */
#include "controller/rebalance.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/backend.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/metrics.h"
#include "controller/planbuild.h"
#include "controller/state.h"
#include "policy/assign.h"
#include "policy/classes.h"
#include "policy/demand.h"
#include "policy/granularity.h"
#include "policy/maxmin.h"

int rebalance_init(struct rebalance *rb, struct state *st, struct events *ev, struct metrics *m,
                   struct backend *be, const struct config *cfg)
{
    memset(rb, 0, sizeof(*rb));
    pthread_mutex_init(&rb->mu, NULL);
    pthread_mutex_init(&rb->sum_mu, NULL);
    rb->st = st;
    rb->ev = ev;
    rb->m = m;
    rb->be = be;
    rb->cfg = cfg;
    rb->be_healthy = true;
    plan_init(&rb->last);
    return 0;
}

/* A group of flows one round moved by choice: the moved flows and every fat
 * flow that crossed a direction the moves touched, with their measured rates
 * at the move. Judged from the end of the settle period for
 * thresholds.harm_intervals intervals (judge_groups). */
struct rebalance_member {
    struct state_flow_key k;
    double bps;
    int64_t pin;                 /* the path the round pinned it on, -1 not moved */
};
struct rebalance_group {
    double at, from, until;
    double ratio_sum;            /* sum over the judged rounds of now / before */
    uint32_t nsamples;
    size_t n;
    struct rebalance_member *m;
};

/* Groups judged at once; a round that would start one more drops the oldest
 * (unjudged: the per-flow verdicts still apply to its flows). */
#define REBALANCE_MAX_GROUPS 64

static void group_drop(struct rebalance *rb, size_t i)
{
    free(rb->groups[i].m);
    memmove(&rb->groups[i], &rb->groups[i + 1], (rb->ngroups - i - 1) * sizeof(*rb->groups));
    rb->ngroups--;
}

void rebalance_destroy(struct rebalance *rb)
{
    while (rb->ngroups)
        group_drop(rb, rb->ngroups - 1);
    free(rb->groups);
    free(rb->settle);
    free(rb->hot_seen);
    plan_free(&rb->last);
    pthread_mutex_destroy(&rb->mu);
    pthread_mutex_destroy(&rb->sum_mu);
}

struct rebalance_summary rebalance_last(struct rebalance *rb, bool *healthy, char *err, size_t errlen)
{
    pthread_mutex_lock(&rb->sum_mu);
    struct rebalance_summary s = rb->sum;
    if (healthy)
        *healthy = rb->be_healthy;
    if (err)
        tf_strlcpy(err, rb->be_error, errlen);
    pthread_mutex_unlock(&rb->sum_mu);
    return s;
}

size_t rebalance_unsupported(struct rebalance *rb, struct backend_unsup *out, size_t max)
{
    pthread_mutex_lock(&rb->sum_mu);
    size_t n = rb->nunsup < max ? rb->nunsup : max;
    memcpy(out, rb->unsup, n * sizeof(*out));
    pthread_mutex_unlock(&rb->sum_mu);
    return n;
}

/* Non-fat load on a direction, as a share of its capacity, from which a lone
 * fat flow there counts as contended. */
#define REBALANCE_HOT_BG_SHARE 0.2

/* One fat flow of the snapshot. */
struct snap {
    struct state_flow_key k;
    uint64_t id;
    uint32_t src, dst;
    double gbps;
    int cls;
    int64_t path, pin;
    double meas;                 /* measured Gb/s (gbps may be the estimated demand) */
    double nat;                  /* Hedera's natural demand (its hosts' NIC share), 0 unknown */
    double move_bps;             /* its rate when last moved by choice, 0: no verdict due */
    double moved_at;
    bool movable, on_hot;
    bool hold;                   /* unpinned, to be pinned where it is (degraded fabric) */
    bool withdrawn;              /* its pin goes this round (harm): not held, not pinned */
    int8_t verdict;              /* on its last choice move: 1 helped, -1 futile, 0 none */
    uint32_t dirs[TOPO_MAX_HOPS];
    int ndirs;
};

struct round {
    const struct topo *t;
    uint32_t nd;
    double *bps, *ce, *bg;
    uint32_t *nfat;
    uint8_t *down, *hot;
    uint32_t nhot;               /* contended directions: the assignment runs only if > 0 */
    bool degraded;               /* some direction is down (probe, routing or hold-down) */
    bool returning;              /* some direction is in its hold-down: routing gave it back */
    bool automatic, dry_run;
    struct snap *f;
    size_t n;
    int32_t *snap_of;            /* state flow index -> index in f, -1 none */
    /* Pins kept without telemetry: pinned flows not in f (unobserved or no
     * longer fat) seen within thresholds.pin_grace, on a live path. */
    struct snap *kept;
    size_t nkept;
    /* Pins to remove after the plan is applied, with why. */
    struct unpin {
        struct state_flow_key k;
        uint64_t id;
        enum { UNPIN_AGED, UNPIN_FAILED, UNPIN_HARM } why;
        double age;
    } *unpin;
    size_t nunpin;
    json_t *congested;
};

static void round_free(struct round *r)
{
    free(r->bps);
    free(r->ce);
    free(r->bg);
    free(r->nfat);
    free(r->down);
    free(r->hot);
    free(r->f);
    free(r->snap_of);
    free(r->kept);
    free(r->unpin);
}

static const char *nm(const struct topo *t, uint32_t n) { return t->nodes[n].name; }

/*
 * Pins are state, not a by-product of fresh telemetry: a pinned flow that
 * is unobserved (its probe silent, the management network down) or no
 * longer fat keeps its pin for thresholds.pin_grace seconds after it was
 * last seen, as long as its path is live. Past that, or when its path
 * failed, the pin goes, with an event saying why. Needs r->down. Read lock.
 */
static void keep_or_unpin(struct round *r, struct state *s, const struct state_flow *f, double now, double grace)
{
    double age = now - f->last_seen;
    struct snap *k = &r->kept[r->nkept];
    bool placed = f->pin >= 0 && f->src_node != TOPO_NONE && f->dst_node != TOPO_NONE &&
                  (k->ndirs = topo_path_dirs(s->topo, f->src_node, f->dst_node, (uint64_t)f->pin, k->dirs,
                                             TOPO_MAX_HOPS)) > 0;
    bool failed = false;
    for (int j = 0; placed && j < k->ndirs; j++)
        failed |= r->down[k->dirs[j]];
    if (placed && !failed && age <= grace) {
        k->k = f->k;
        k->id = f->id;
        k->src = f->src_node;
        k->dst = f->dst_node;
        k->pin = k->path = f->pin;
        r->nkept++;
        return;
    }
    r->unpin[r->nunpin++] = (struct unpin){.k = f->k, .id = f->id, .why = placed && failed ? UNPIN_FAILED : UNPIN_AGED,
                                           .age = age};
}

/* Why direction d counts as congested (NULL: it does not), and whether it is
 * contended, i.e. worth an assignment. Hedera's demand inflation (estimate())
 * is for flows held down by contention: several fat flows on one direction, a
 * failed link, or heavy non-fat background (bg, Gb/s). A lone fat flow
 * filling its link is saturated, not contended: it would fill any path, and
 * inflating it made the loop move flows to escape a few percent of ACKs. Such
 * a direction is still listed as congested. The one rule for rounds and for
 * rebalance_contended. */
static const char *dir_congested(const struct state *s, const struct config *c, uint32_t d, bool down, double bps,
                                 double ce, uint32_t nfat, double bg, bool *hot)
{
    double u = state_dir_util(s, d, bps);
    const char *why = down && nfat ? "down" : u > c->util ? "util" : ce > c->ce_frac ? "ce" : NULL;
    *hot = why && (down || nfat >= 2 || (nfat == 1 && bg >= REBALANCE_HOT_BG_SHARE * topo_dir_gbps(s->topo, d)));
    return why;
}

/* rb's per-direction arrays for nd directions (the topology may change size
 * on reload: everything starts afresh then). Under mu. */
static int dirs_ensure(struct rebalance *rb, uint32_t nd)
{
    if (rb->nd == nd && rb->settle)
        return 0;
    free(rb->settle);
    free(rb->hot_seen);
    rb->settle = calloc(nd + 1, sizeof(double));
    rb->hot_seen = calloc(nd + 1, 1);
    rb->nd = rb->settle && rb->hot_seen ? nd : 0;
    while (rb->ngroups)
        group_drop(rb, rb->ngroups - 1);
    return rb->nd == nd ? 0 : -ENOMEM;
}

static bool crosses_settling(const struct rebalance *rb, const uint32_t *dirs, int n, double now)
{
    for (int j = 0; j < n; j++)
        if (rb->settle[dirs[j]] > now)
            return true;
    return false;
}

/* The settle period after a move: its reports cover at least one interval
 * that began before it. */
static double settle_s(const struct config *c)
{
    double w = c->settle_intervals * c->interval;
    return w > c->interval ? w : c->interval;
}

/* Whether a link failed or came back since the rates before a move at `at`
 * were measured (one interval before it): that changed what every path can
 * carry, and judging the move (its flow's verdict, its group's harm) would
 * blame it for the failure. */
static bool across_change(const struct rebalance *rb, double at)
{
    return rb->st->dirs_changed_at > at - rb->cfg->interval;
}

/*
 * The verdict on a flow's last choice move, once the reports after it are in
 * (the settle period is over): it helped if its rate rose by move_gain, or
 * held without its new path being contended. A futile move backs the flow off
 * (apply_verdicts): the assignment would only try the same thing again, and
 * every move costs the flow packets.
 */
static void verdicts(const struct rebalance *rb, struct round *r, double now)
{
    const struct config *c = rb->cfg;
    for (size_t i = 0; i < r->n; i++) {
        struct snap *f = &r->f[i];
        if (f->move_bps <= 0 || now - f->moved_at < settle_s(c) || across_change(rb, f->moved_at))
            continue;
        bool hot = false;
        for (int j = 0; j < f->ndirs; j++)
            hot |= r->hot[f->dirs[j]];
        bool helped = f->meas >= f->move_bps * (1 + c->move_gain) ||
                      (!hot && f->meas >= f->move_bps * (1 - c->move_gain));
        f->verdict = helped ? 1 : -1;
        if (!helped)
            f->movable = false;
    }
}

/*
 * Judges the groups of earlier rounds (read lock): from the end of a group's
 * settle period, each round adds a sample of its members' aggregate rate
 * against the one they had before the move (members still seen, on both
 * sides); after harm_intervals intervals, a mean below 1 - harm_margin means
 * the pins made things worse than the paths they replaced, and the pins of
 * the group's moved flows are withdrawn (they go back to ECMP) and backed
 * off. Flows a later round moved again belong to that round's group.
 */
static void judge_groups(struct rebalance *rb, struct round *r, double now)
{
    const struct config *c = rb->cfg;
    struct state *s = rb->st;
    for (size_t g = 0; g < rb->ngroups;) {
        struct rebalance_group *gr = &rb->groups[g];
        if (now < gr->from) {
            g++;
            continue;
        }
        double before = 0, after = 0;
        for (size_t i = 0; i < gr->n; i++) {
            const struct state_flow *f = state_flow_find(s, &gr->m[i].k);
            if (!f || state_flow_stale(s, f, now))
                continue;
            before += gr->m[i].bps;
            after += f->bps;
        }
        if (before > 0) {
            gr->ratio_sum += after / before;
            gr->nsamples++;
        }
        if (now < gr->until) {
            g++;
            continue;
        }
        if (across_change(rb, gr->at)) {
            log_debug("rebalance: the group moved at %.1f is not judged: the fabric changed at %.1f", gr->at,
                      s->dirs_changed_at);
            group_drop(rb, g);
            continue;
        }
        double ratio = gr->nsamples ? gr->ratio_sum / gr->nsamples : 1;
        if (ratio < 1 - c->harm_margin) {
            size_t n = 0;
            for (size_t i = 0; i < gr->n; i++) {
                const struct state_flow *f = state_flow_find(s, &gr->m[i].k);
                if (!f || gr->m[i].pin < 0 || !f->pinned || f->pin != gr->m[i].pin)
                    continue;
                int32_t si = r->snap_of[f - s->flows];
                if (si < 0)      /* unobserved: its grace decides (keep_or_unpin) */
                    continue;
                r->f[si].withdrawn = true;
                r->f[si].movable = false;
                r->f[si].pin = -1;
                r->f[si].verdict = -1;
                r->unpin[r->nunpin++] = (struct unpin){.k = f->k, .id = f->id, .why = UNPIN_HARM, .age = ratio};
                n++;
            }
            if (n) {
                events_add(rb->ev, now, "harm", "%zu pin%s withdrawn (back to ECMP): the %zu flows a round moved at "
                           "%.1f did %.0f%% of their rate before the move over %u rounds", n, n == 1 ? "" : "s", gr->n,
                           gr->at, 100 * ratio, gr->nsamples);
                log_info("rebalance: pins of %zu flows withdrawn: their group does %.0f%% of its rate before the "
                           "move", n, 100 * ratio);
                if (rb->m)
                    atomic_fetch_add(&rb->m->harm_withdrawn, n);
            }
        }
        group_drop(rb, g);
    }
}

/* Under the read lock: loads, congestion, every live fat flow we can place,
 * and the verdicts on earlier moves. */
static int snapshot(struct rebalance *rb, double now, struct round *r)
{
    struct state *s = rb->st;
    const struct config *c = rb->cfg;
    const struct topo *t = s->topo;
    r->t = t;
    r->nd = 2 * t->nlinks;
    size_t nd = r->nd + 1;
    r->bps = calloc(nd, sizeof(double));
    r->ce = calloc(nd, sizeof(double));
    r->bg = calloc(nd, sizeof(double));
    r->nfat = calloc(nd, sizeof(uint32_t));
    r->down = calloc(nd, 1);
    r->hot = calloc(nd, 1);
    r->f = calloc(s->nflows + 1, sizeof(*r->f));
    r->snap_of = malloc((s->nflows + 1) * sizeof(*r->snap_of));
    r->kept = calloc(s->nflows + 1, sizeof(*r->kept));
    r->unpin = calloc(s->nflows + 1, sizeof(*r->unpin));
    r->congested = json_array();
    if (!r->bps || !r->ce || !r->bg || !r->nfat || !r->down || !r->hot || !r->f || !r->snap_of || !r->kept ||
        !r->unpin || dirs_ensure(rb, r->nd) < 0)
        return -ENOMEM;
    state_dir_loads(s, now, r->bps, r->ce, r->nfat);
    for (uint32_t d = 0; d < r->nd; d++) {
        r->down[d] = !s->dirs[d].up;
        r->degraded |= r->down[d];
        if (r->down[d]) {
            const char *why = state_dir_down_reason(s, d, now);
            r->returning |= why && !strcmp(why, "holddown");
        }
        r->bg[d] = r->bps[d] / 1e9;
    }
    for (size_t i = 0; i < s->nflows; i++) {
        const struct state_flow *f = &s->flows[i];
        r->snap_of[i] = -1;
        if (f->pinned && (!f->fat || state_flow_stale(s, f, now))) {
            keep_or_unpin(r, s, f, now, c->pin_grace);
            continue;
        }
        if (!f->fat || state_flow_stale(s, f, now) || f->src_node == TOPO_NONE || f->dst_node == TOPO_NONE ||
            f->src_node == f->dst_node || f->path < 0 || f->path > (int64_t)ASSIGN_MAX_PATHS)
            continue;
        struct snap *sf = &r->f[r->n];
        sf->ndirs = state_flow_dirs(s, f, sf->dirs, TOPO_MAX_HOPS);
        if (sf->ndirs <= 0)
            continue;
        sf->k = f->k;
        sf->id = f->id;
        sf->src = f->src_node;
        sf->dst = f->dst_node;
        sf->gbps = sf->meas = f->bps / 1e9;
        sf->move_bps = f->move_bps / 1e9;
        sf->moved_at = f->last_moved;
        sf->cls = f->cls;
        sf->path = f->path;
        sf->pin = f->pinned ? f->pin : -1;
        sf->movable = state_flow_may_move(s, f, c->min_move_interval, now) &&
                      !(r->automatic && crosses_settling(rb, sf->dirs, sf->ndirs, now));
        for (int j = 0; j < sf->ndirs; j++)
            r->bg[sf->dirs[j]] -= sf->gbps;
        r->snap_of[i] = (int32_t)r->n++;
    }
    for (uint32_t d = 0; d < r->nd; d++) {
        if (r->bg[d] < 0)
            r->bg[d] = 0;
        bool hot;
        const char *why = dir_congested(s, c, d, r->down[d], r->bps[d], r->ce[d], r->nfat[d], r->bg[d], &hot);
        if (!why)
            continue;
        r->hot[d] = hot;
        r->nhot += hot;
        json_array_append_new(r->congested, json_pack("{sI ss ss sf sf sI ss}", "dir", (json_int_t)d, "from",
                                                      nm(t, topo_dir_from(t, d)), "to", nm(t, topo_dir_to(t, d)),
                                                      "util", state_dir_util(s, d, r->bps[d]), "ce_frac", r->ce[d],
                                                      "fat_flows", (json_int_t)r->nfat[d], "reason", why));
    }
    if (!r->dry_run) {   /* a dry run judges nothing and changes nothing */
        verdicts(rb, r, now);
        judge_groups(rb, r, now);
        memcpy(rb->hot_seen, r->hot, r->nd);
    }
    return 0;
}

/* The verdicts of the snapshot, written back (write lock, only when there
 * are some): a futile move doubles the flow's back-off, a helpful one
 * clears it. */
static void apply_verdicts(struct rebalance *rb, const struct round *r, double now)
{
    const struct config *c = rb->cfg;
    struct state *s = rb->st;
    size_t n = 0, futile = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->f[i].verdict != 0;
    if (!n)
        return;
    pthread_rwlock_wrlock(&s->lock);
    for (size_t i = 0; i < r->n; i++) {
        const struct snap *sf = &r->f[i];
        struct state_flow *f = sf->verdict ? state_flow_find(s, &sf->k) : NULL;
        if (!f)
            continue;
        f->move_bps = 0;
        if (sf->verdict > 0) {
            f->futile = 0;
            continue;
        }
        futile++;
        if (f->futile < 16)
            f->futile++;
        double base = c->min_move_interval > c->interval ? c->min_move_interval : c->interval;
        double wait = base * (double)(1u << f->futile);   /* 2x, 4x, ... the usual wait */
        f->backoff_until = now + (wait < c->backoff_max ? wait : c->backoff_max);
        f->backoff_at = now;
        log_debug("rebalance: flow %016llx: its move did not help (%.3f -> %.3f Gb/s): backed off %.0f s",
                  (unsigned long long)f->id, sf->move_bps, sf->meas, f->backoff_until - now);
    }
    pthread_rwlock_unlock(&s->lock);
    if (rb->m && futile)
        atomic_fetch_add(&rb->m->futile_moves, futile);
}

/* Hedera's natural demand for flows crossing a congested direction: their
 * measured rate is what the collision left them. Other flows keep theirs. */
static void estimate(struct round *r)
{
    const struct topo *t = r->t;
    uint32_t *src = calloc(r->n + 1, sizeof(uint32_t)), *dst = calloc(r->n + 1, sizeof(uint32_t));
    uint32_t *map = malloc((size_t)t->nnodes * sizeof(uint32_t));
    double *cap = calloc(2 * r->n + 1, sizeof(double)), *dem = calloc(r->n + 1, sizeof(double));
    if (!src || !dst || !map || !cap || !dem)
        goto out;
    memset(map, 0xff, (size_t)t->nnodes * sizeof(uint32_t));
    uint32_t ne = 0;
    for (size_t i = 0; i < r->n; i++) {
        uint32_t ends[2] = {r->f[i].src, r->f[i].dst};
        for (int k = 0; k < 2; k++) {
            uint32_t n = ends[k];
            if (map[n] == UINT32_MAX) {
                const struct topo_node *tn = &t->nodes[n];
                cap[ne] = tn->up_count ? t->links[t->up_links[tn->up_first]].gbps : 1e6;
                map[n] = ne++;
            }
        }
        src[i] = map[r->f[i].src];
        dst[i] = map[r->f[i].dst];
    }
    if (demand_estimate(ne, cap, (uint32_t)r->n, src, dst, dem) == 0)
        for (size_t i = 0; i < r->n; i++) {
            r->f[i].nat = dem[i];
            for (int j = 0; j < r->f[i].ndirs; j++)
                r->f[i].on_hot |= r->hot[r->f[i].dirs[j]];
            if (r->f[i].on_hot && dem[i] > r->f[i].gbps)
                r->f[i].gbps = dem[i];
        }
out:
    free(src);
    free(dst);
    free(map);
    free(cap);
    free(dem);
}

/* Class rules (DESIGN 2.5): a class whose path policy names spines (`via`)
 * and whose match is DSCP alone becomes, per DSCP value, a rule on every
 * leaf to a multipath route over the allowed spines. Other matches (ports,
 * QPs, prefixes, jobs) cannot be told apart by a FIB rule; the fat flows of
 * such classes are still kept on their spines by the assignment (node_ok)
 * and pinned. Indices follow the class order and DSCP values, so the same
 * policy always gives the same tables and priorities. Read lock. */
struct class_rules {
    struct planbuild_class c[PLANBUILD_MAX_CLASSES];
    int *allow;                  /* node indices, all classes back to back */
    size_t n;
};

static void class_rules_build(const struct classes *cs, const struct topo *t, struct class_rules *cr)
{
    size_t total = 0;
    cr->n = 0;
    for (uint32_t i = 0; cs && i < cs->n; i++)
        total += cs->c[i].nvia;
    cr->allow = calloc(total + 1, sizeof(int));
    if (!cr->allow)
        return;
    int *next = cr->allow;
    for (uint32_t i = 0; cs && i < cs->n; i++) {
        const struct class_def *c = &cs->c[i];
        bool dscp_only = c->has_dscp && !c->has_proto && !c->nsport && !c->ndport && !c->nqp && !c->nsrc &&
                         !c->ndst && !c->njob;
        if (!c->nvia || !dscp_only)
            continue;
        int na = 0;
        for (uint16_t k = 0; k < c->nvia; k++) {
            uint32_t n = topo_node_by_name(t, c->via[k]);
            if (n != TOPO_NONE)
                next[na++] = (int)n;
        }
        for (int d = 0; d < 64 && na > 0 && cr->n < PLANBUILD_MAX_CLASSES; d++)
            if (c->dscp >> d & 1)
                cr->c[cr->n++] = (struct planbuild_class){.dscp = (int16_t)d, .allow = next, .nallow = na};
        next += na;
    }
}

/* The path flow i of the round is pinned to in the plan, -1 none: where the
 * round moves it, else where it is held, else its pin. */
static int64_t pin_of(const struct round *r, const uint32_t *path, size_t i)
{
    const struct snap *f = &r->f[i];
    return path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != f->path ? (int64_t)path[i] : f->hold ? f->path : f->pin;
}

/*
 * A backend that steers per destination (backend_per_destination) carries
 * one route per (leaf, destination host): the round's pins of one such
 * group must agree, or the pins recorded would differ from what is
 * announced. The assignment plans for that (granularity_assign); what it
 * does not decide -- holds, pins from earlier rounds kept where they are --
 * is made to agree here, the route most of the group's pins have winning
 * (granularity_destination): a pin that changes route is a move of it (or a
 * hold where it already runs). Pins kept without telemetry (r->kept) are not
 * regrouped: the backend's own majority rule covers them.
 */
static int group_pins(struct round *r, const struct assign_flow *af, uint32_t *path)
{
    struct assign_input in = {.t = r->t, .flows = af, .nflows = (uint32_t)r->n};
    uint32_t *eff = calloc(r->n + 1, sizeof(*eff)), changed;
    if (!eff)
        return -ENOMEM;
    for (size_t i = 0; i < r->n; i++) {
        int64_t p = pin_of(r, path, i);
        eff[i] = p < 0 ? ASSIGN_NO_PATH : (uint32_t)p;
    }
    int rc = granularity_destination(&in, eff, &changed);
    for (size_t i = 0; !rc && changed && i < r->n; i++) {
        int64_t p = pin_of(r, path, i);
        if (eff[i] == ASSIGN_NO_PATH || (int64_t)eff[i] == p)
            continue;
        r->f[i].hold = (int64_t)eff[i] == r->f[i].path;
        path[i] = r->f[i].hold ? (uint32_t)r->f[i].path : eff[i];
    }
    free(eff);
    return rc;
}

static int build_plan(struct rebalance *rb, const struct round *r, const uint32_t *path,
                      const struct class_rules *cr, struct plan *out, char *err, size_t errlen)
{
    struct planbuild_flow *pf = calloc(r->n + r->nkept + 1, sizeof(*pf));
    uint32_t (*dirs)[TOPO_MAX_HOPS] = calloc(r->n + r->nkept + 1, sizeof(*dirs));
    size_t n = 0;
    int rc = -ENOMEM;
    if (!pf || !dirs)
        goto out;
    for (size_t i = 0; i < r->n + r->nkept; i++) {
        const struct snap *f = i < r->n ? &r->f[i] : &r->kept[i - r->n];
        int64_t p = i >= r->n ? f->pin : pin_of(r, path, i);
        if (p < 0)
            continue;
        int nd = topo_path_dirs(r->t, f->src, f->dst, (uint64_t)p, dirs[n], TOPO_MAX_HOPS);
        if (nd <= 0)
            continue;
        pf[n] = (struct planbuild_flow){.af = f->k.af, .proto = f->k.proto, .sport = f->k.sport,
                                        .dport = f->k.dport, .dirs = dirs[n], .ndirs = nd};
        memcpy(pf[n].src, f->k.src, 16);
        memcpy(pf[n].dst, f->k.dst, 16);
        n++;
    }
    struct plan_opts o = {.prio_min = (uint32_t)rb->cfg->rule_prio_min, .prio_max = (uint32_t)rb->cfg->rule_prio_max,
                          .table_base = (uint32_t)rb->cfg->table_base};
    rc = plan_build(r->t, &o, pf, n, cr->c, cr->n, out, err, errlen);
out:
    free(pf);
    free(dirs);
    return rc;
}

/* At most this many unpin events a round; one line says the rest. */
#define REBALANCE_UNPIN_EVENTS 8

/* The pins keep_or_unpin gave up, once the plan without them is applied. */
static void unpin_apply(struct rebalance *rb, const struct round *r, double now)
{
    if (!r->nunpin)
        return;
    struct state *s = rb->st;
    size_t aged = 0, failed = 0, said = 0;
    pthread_rwlock_wrlock(&s->lock);
    for (size_t i = 0; i < r->nunpin; i++) {
        const struct unpin *u = &r->unpin[i];
        struct state_flow *f = state_flow_find(s, &u->k);
        if (!f || !f->pinned)
            continue;
        f->pinned = false;
        f->pin = -1;
        if (u->why == UNPIN_HARM)     /* the "harm" event said it for the group */
            continue;
        u->why == UNPIN_FAILED ? failed++ : aged++;
        if (said++ >= REBALANCE_UNPIN_EVENTS)
            continue;
        char a[64], b[64];
        events_add(rb->ev, now, "unpinned", "flow %016llx %s:%u -> %s:%u (proto %u): %s%.0f s", (unsigned long long)u->id,
                   tf_addr_str(u->k.af, u->k.src, a, sizeof(a)), u->k.sport,
                   tf_addr_str(u->k.af, u->k.dst, b, sizeof(b)), u->k.dport, u->k.proto,
                   u->why == UNPIN_FAILED ? "its path failed while unobserved; last seen " : "unobserved or not fat for ",
                   u->age);
    }
    s->gen++;
    pthread_rwlock_unlock(&s->lock);
    if (said > REBALANCE_UNPIN_EVENTS)
        events_add(rb->ev, now, "unpinned", "%zu more pins removed (%zu unobserved too long, %zu on failed paths in all)",
                   said - REBALANCE_UNPIN_EVENTS, aged, failed);
}

/* "L1 S2 L2", for logs. */
static void path_str(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, char *buf, size_t len)
{
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = topo_path_dirs(t, src, dst, idx, dirs, TOPO_MAX_HOPS);
    size_t u = (size_t)snprintf(buf, len, "%s", n > 0 ? nm(t, src) : "?");
    for (int i = 0; i < n && u < len; i++)
        u += (size_t)snprintf(buf + u, len - u, " %s", nm(t, topo_dir_to(t, dirs[i])));
}

/* Whether flow i of the round is on a path that crosses a down direction
 * (any move of it is forced). */
static bool forced(const struct round *r, size_t i)
{
    for (int j = 0; j < r->f[i].ndirs; j++)
        if (r->down[r->f[i].dirs[j]])
            return true;
    return false;
}

/*
 * While the fabric is degraded (a link down, or back but in its hold-down:
 * a flapping link), every fat flow the round leaves where it is gets pinned
 * there. Routing changes its ECMP groups with every withdrawal and return,
 * and a kernel multipath group re-hashes existing flows when a next hop
 * comes back: unpinned flows would be thrown onto the flapping link each
 * time it returns and lose packets when it goes again. Pinned, they stay on
 * live paths whatever routing does (the backend still drops any pin routing
 * withdraws). A hold is not a move: no move counter, no min_move_interval.
 */
static void mark_holds(struct round *r, const uint32_t *path)
{
    for (size_t i = 0; r->degraded && i < r->n; i++) {
        struct snap *f = &r->f[i];
        if (f->pin >= 0 || f->path < 0 || f->withdrawn || (path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != f->path))
            continue;
        f->hold = !forced(r, i);
    }
}

static bool moved_by_choice(const struct round *r, const uint32_t *path, size_t i)
{
    return path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != r->f[i].path && !forced(r, i);
}

/* Marks the directions of a that b lacks. */
static void mark_not_in(uint8_t *mark, const uint32_t *a, int na, const uint32_t *b, int nb)
{
    for (int i = 0; i < na; i++) {
        bool in = false;
        for (int j = 0; j < nb && !in; j++)
            in = a[i] == b[j];
        if (!in)
            mark[a[i]] = 1;
    }
}

/*
 * After a round that moved flows by choice: the directions of their old and
 * new paths settle (their counters are stale until the probes report an
 * interval after the change), and the flows that crossed them form a group
 * judged later (judge_groups). Under mu.
 */
static void start_settle(struct rebalance *rb, const struct round *r, const uint32_t *path, double now)
{
    double until = now + settle_s(rb->cfg);
    uint8_t *touched = calloc(r->nd + 1, 1);
    size_t nm = 0;
    if (!touched)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (!moved_by_choice(r, path, i))
            continue;
        /* The directions whose load the move changed: on the old path or
         * the new one, not both (the host links stay as they were). */
        uint32_t nd[TOPO_MAX_HOPS];
        int n = topo_path_dirs(r->t, r->f[i].src, r->f[i].dst, path[i], nd, TOPO_MAX_HOPS);
        mark_not_in(touched, nd, n, r->f[i].dirs, r->f[i].ndirs);
        mark_not_in(touched, r->f[i].dirs, r->f[i].ndirs, nd, n);
    }
    for (uint32_t d = 0; d < r->nd; d++)
        if (touched[d])
            rb->settle[d] = until;
    for (size_t i = 0; i < r->n; i++) {
        bool in = moved_by_choice(r, path, i);
        for (int j = 0; !in && j < r->f[i].ndirs; j++)
            in = touched[r->f[i].dirs[j]];
        nm += in;
    }
    if (rb->ngroups == REBALANCE_MAX_GROUPS)
        group_drop(rb, 0);
    if (!rb->groups)
        rb->groups = calloc(REBALANCE_MAX_GROUPS, sizeof(*rb->groups));
    struct rebalance_group *g = rb->groups ? &rb->groups[rb->ngroups] : NULL;
    struct rebalance_member *m = g ? calloc(nm + 1, sizeof(*m)) : NULL;
    if (m) {
        *g = (struct rebalance_group){.at = now, .from = until,
                                      .until = until + rb->cfg->harm_intervals * rb->cfg->interval, .m = m};
        for (size_t i = 0; i < r->n; i++) {
            bool mv = moved_by_choice(r, path, i), in = mv;
            for (int j = 0; !in && j < r->f[i].ndirs; j++)
                in = touched[r->f[i].dirs[j]];
            if (in)
                m[g->n++] = (struct rebalance_member){.k = r->f[i].k, .bps = r->f[i].meas * 1e9,
                                                      .pin = mv ? (int64_t)path[i] : -1};
        }
        rb->ngroups++;
    }
    free(touched);
}

static void record_pins(struct rebalance *rb, const struct round *r, const uint32_t *path, double now)
{
    struct state *s = rb->st;
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += (path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != r->f[i].path) || r->f[i].hold;
    if (n == 0) /* nothing to write: do not block ingest, do not invalidate views */
        return;
    pthread_rwlock_wrlock(&s->lock);
    for (size_t i = 0; i < r->n; i++) {
        if (r->f[i].hold) {
            struct state_flow *f = state_flow_find(s, &r->f[i].k);
            if (f && f->path == r->f[i].path) {
                f->pin = f->path;
                f->pinned = true;
            }
            continue;
        }
        if (path[i] == ASSIGN_NO_PATH || (int64_t)path[i] == r->f[i].path)
            continue;
        struct state_flow *f = state_flow_find(s, &r->f[i].k);
        if (!f) /* aged out since the snapshot (reloads wait for mu) */
            continue;
        if (log_enabled(LOG_DEBUG)) {
            char from[160], to[160];
            path_str(r->t, r->f[i].src, r->f[i].dst, (uint64_t)r->f[i].path, from, sizeof(from));
            path_str(r->t, r->f[i].src, r->f[i].dst, path[i], to, sizeof(to));
            log_debug("rebalance: flow %016llx %u->%u %.3f Gb/s%s: %s => %s", (unsigned long long)r->f[i].id,
                      r->f[i].k.sport, r->f[i].k.dport, r->f[i].gbps, r->f[i].on_hot ? " (contended)" : "", from, to);
        }
        f->pin = path[i];
        state_flow_set_path(s, f, path[i]);
        f->pinned = true;
        /* A move off a failed path was made on the loads of before the
         * failure: it must not hold the flow for min_move_interval where a
         * better place shows once the probes report the new state. */
        /* A forced move changes the flow's situation: no verdict on the
         * choice move before it. */
        f->move_bps = forced(r, i) ? 0 : r->f[i].meas * 1e9;   /* judged once the reports after it are in */
        if (!forced(r, i))
            f->last_moved = now;
        f->moves++;
    }
    s->gen++;
    pthread_rwlock_unlock(&s->lock);
}

static json_t *path_names(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx)
{
    json_t *a = json_array();
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = topo_path_dirs(t, src, dst, idx, dirs, TOPO_MAX_HOPS);
    if (n > 0)
        json_array_append_new(a, json_string(nm(t, src)));
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(nm(t, topo_dir_to(t, dirs[i]))));
    return a;
}

/* Overload summed over every direction: sum of max(0, util - 1). */
/* The background (non-fat load) a prediction counts on a direction: under
 * REBALANCE_HOT_BG_SHARE of it, the same share under which a lone fat flow
 * is not contended, it is the skew between a link's counter and its flows'
 * rates over one interval (TCP still ramping, windows that differ), and
 * counting it made two NIC-bound flows on one uplink look like a collision
 * one move would gain from (test_do_no_harm, 10% phantom background). */
static double bg_counted(const struct round *r, uint32_t d)
{
    return r->bg[d] >= REBALANCE_HOT_BG_SHARE * topo_dir_gbps(r->t, d) ? r->bg[d] : 0;
}

static double excess(const struct round *r, const double *load)
{
    double e = 0;
    for (uint32_t d = 0; d < r->nd; d++) {
        double g = topo_dir_gbps(r->t, d), l = load[d] - (r->bg[d] - bg_counted(r, d));
        if (g > 0 && l > g)
            e += l / g - 1;
    }
    return e;
}

/* The max-min fair aggregate (Gb/s) the flows would get on these paths, each
 * capped at its demand (the estimate), on what the background leaves of each
 * direction: what a set of paths is predicted to carry. -1 on failure. */
static double predicted(const struct round *r, const struct assign_input *in, const uint32_t *path)
{
    uint32_t *off = calloc(r->n + 1, sizeof(uint32_t)), *dirs = calloc(r->n * TOPO_MAX_HOPS + 1, sizeof(uint32_t));
    double *cap = calloc(r->nd + 1, sizeof(double)), *dem = calloc(r->n + 1, sizeof(double));
    double *rate = calloc(r->n + 1, sizeof(double)), sum = -1;
    if (!off || !dirs || !cap || !dem || !rate)
        goto out;
    for (uint32_t d = 0; d < r->nd; d++)
        cap[d] = r->down[d] ? 0 : topo_dir_gbps(r->t, d) - bg_counted(r, d);
    uint32_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        off[i] = k;
        /* No flow gets more than its hosts' NICs leave it, whatever one
         * interval's measurement said (a burst can read above its share). */
        double d = in->flows[i].gbps, nat = r->f[i].nat;
        dem[i] = nat > 0 && nat < d ? nat : d > 0 ? d : 1e-9;
        int n = path[i] == ASSIGN_NO_PATH ? 0
                : topo_path_dirs(r->t, in->flows[i].src, in->flows[i].dst, path[i], dirs + k, TOPO_MAX_HOPS);
        k += n > 0 ? (uint32_t)n : 0;
    }
    off[r->n] = k;
    if (maxmin_rates(r->nd, cap, (uint32_t)r->n, off, dirs, dem, rate) == 0) {
        sum = 0;
        for (size_t i = 0; i < r->n; i++)
            sum += rate[i];
    }
out:
    free(off);
    free(dirs);
    free(cap);
    free(dem);
    free(rate);
    return sum;
}

/*
 * Do no harm: an automatic round's discretionary moves (flows whose path
 * is still usable) stand only if, together, they take at least `margin` of
 * a link's worth of overload off the fabric. Moving a flow from one
 * overloaded direction to another that ends up just as overloaded (what a
 * fabric short of capacity after a failure invites, and what stale loads
 * right after a move suggest) costs the flows their goodput and gains
 * nothing. And they must be predicted to carry more: the max-min fair
 * aggregate of the flows at their estimated demands must rise by `margin` of
 * the moved flows' demands. Flows bound by their hosts' NICs fill an uplink
 * whatever path they take; spreading them lowers its utilisation but gives
 * no flow a bit more, and is no reason to move. Forced moves (off a path
 * that crosses a down direction) always stand. Returns the max utilisation
 * of what is kept.
 */
static double gate_moves(const struct round *r, const struct assign_input *in, uint32_t *path, double margin,
                         double after)
{
    double *load = calloc(r->nd + 1, sizeof(double));
    uint32_t *cur = calloc(r->n + 1, sizeof(uint32_t));
    if (!load || !cur) {
        free(load);
        free(cur);
        return after;
    }
    bool discretionary = false;
    double moved = 0;
    for (size_t i = 0; i < r->n; i++) {
        cur[i] = in->flows[i].path;
        if (forced(r, i) && path[i] != ASSIGN_NO_PATH) {
            cur[i] = path[i];   /* the baseline already has the forced moves */
        } else if (path[i] != ASSIGN_NO_PATH && path[i] != in->flows[i].path) {
            discretionary = true;
            moved += in->flows[i].gbps;
        }
    }
    /* A link in its hold-down is about to be usable: choice moves now would
     * be made again when it is (two moves a flow within seconds, what a
     * restore must not cause); forced moves go on. */
    if (discretionary && r->returning) {
        for (size_t i = 0; i < r->n; i++)
            path[i] = cur[i];
        after = assign_loads(in, path, load);
        log_debug("rebalance: discretionary moves wait for the end of a hold-down");
        discretionary = false;
    }
    if (discretionary) {
        assign_loads(in, cur, load);
        double base = excess(r, load);
        double max = assign_loads(in, path, load);
        double p0 = predicted(r, in, cur), p1 = predicted(r, in, path);
        bool gains = p0 < 0 || p1 < 0 || p1 - p0 >= margin * moved;
        if (!gains)
            log_debug("rebalance: discretionary moves dropped: predicted %.4f -> %.4f Gb/s, gain under %.2f of the "
                      "%.4f Gb/s moved", p0, p1, margin, moved);
        if (!gains || excess(r, load) > base - margin) {
            for (size_t i = 0; i < r->n; i++)
                path[i] = cur[i];
            after = assign_loads(in, path, load);
            log_debug("rebalance: discretionary moves dropped: overload %.3f -> %.3f, gain under %.2f", base,
                      excess(r, load), margin);
        } else {
            after = max;
            log_debug("rebalance: discretionary moves kept: predicted %.4f -> %.4f Gb/s for %.4f Gb/s moved, "
                      "overload %.3f -> %.3f", p0, p1, moved, base, excess(r, load));
        }
    }
    free(load);
    free(cur);
    return after;
}

static int run_round(struct rebalance *rb, double now, bool dry_run, bool automatic, json_t **out);

/* A round that could not build or apply its plan: the backend is unhealthy
 * with the reason and the error counter moves every time, but the event
 * (and the log line) is written once per distinct cause, so that a
 * topology that can never be programmed does not fill the ring every
 * interval. Called under mu (fail_cause is the round's). */
static void round_failed(struct rebalance *rb, double now, const char *why)
{
    pthread_mutex_lock(&rb->sum_mu);
    rb->be_healthy = false;
    tf_strlcpy(rb->be_error, why, sizeof(rb->be_error));
    pthread_mutex_unlock(&rb->sum_mu);
    if (rb->m)
        atomic_fetch_add(&rb->m->backend_errors, 1);
    if (!strcmp(rb->fail_cause, why))
        return;
    tf_strlcpy(rb->fail_cause, why, sizeof(rb->fail_cause));
    log_warn("rebalance: %s (installed routes kept)", why);
    events_add(rb->ev, now, "backend_error", "%s; installed routes kept", why);
}

int rebalance_run(struct rebalance *rb, double now, bool dry_run, json_t **out)
{
    return run_round(rb, now, dry_run, false, out);
}

int rebalance_auto(struct rebalance *rb, double now)
{
    return run_round(rb, now, false, true, NULL);
}

static int run_round(struct rebalance *rb, double now, bool dry_run, bool automatic, json_t **out)
{
    pthread_mutex_lock(&rb->mu);
    double t0 = tf_now_mono();
    struct round r = {0};
    struct plan plan;
    plan_init(&plan);
    char err[256] = "";
    int rc;
    struct state *s = rb->st;
    const struct config *c = rb->cfg;
    const char *cls_name[CLASSES_MAX] = {0};

    r.automatic = automatic;
    r.dry_run = dry_run;
    pthread_rwlock_rdlock(&s->lock);
    rc = snapshot(rb, now, &r);
    for (uint32_t k = 0; s->classes && k < s->classes->n && k < CLASSES_MAX; k++)
        cls_name[k] = s->classes->c[k].name;
    /* Policies: class -> highest tier and allowed spines (node_ok). A
     * policy naming nodes the topology lacks keeps only its tiers. */
    struct assign_policy pol[CLASSES_MAX];
    uint8_t *pol_mem = NULL;
    uint32_t npol = s->classes ? s->classes->n : 0;
    char perr[256];
    if (npol && classes_resolve(s->classes, r.t, pol, &pol_mem, perr, sizeof(perr)) < 0) {
        log_warn("rebalance: class policy: %s (spine subsets ignored)", perr);
        for (uint32_t k = 0; k < npol; k++)
            pol[k] = (struct assign_policy){.max_tier = s->classes->c[k].max_tier, .node_ok = NULL};
    }
    struct class_rules *cr = calloc(1, sizeof(*cr));
    if (cr)
        class_rules_build(s->classes, r.t, cr);
    pthread_rwlock_unlock(&s->lock);
    if (rc == 0 && !dry_run)
        apply_verdicts(rb, &r, now);

    bool per_dst = rb->be && backend_per_destination(rb->be);
    uint32_t *path = calloc(r.n + 1, sizeof(uint32_t));
    struct assign_flow *af = calloc(r.n + 1, sizeof(*af));
    double before = 0, after = 0;
    uint32_t moved = 0;
    if (rc == 0 && (!path || !af))
        rc = -ENOMEM;
    if (rc == 0) {
        estimate(&r);
        for (size_t i = 0; i < r.n; i++) {
            af[i] = (struct assign_flow){.src = r.f[i].src, .dst = r.f[i].dst, .gbps = r.f[i].gbps,
                                         .cls = r.f[i].cls < (int)npol ? r.f[i].cls : 0, .path = (uint32_t)r.f[i].path,
                                         .hash = (uint32_t)r.f[i].id, .movable = r.f[i].movable};
            path[i] = af[i].path;
        }
        struct assign_input in = {.t = r.t, .bg_gbps = r.bg, .down = r.down, .flows = af, .nflows = (uint32_t)r.n,
                                  .pol = npol ? pol : NULL, .npol = npol};
        double *load = calloc(r.nd + 1, sizeof(double));
        before = load ? assign_loads(&in, path, load) : 0;
        after = before;
        free(load);
        if (r.nhot > 0 && r.n > 0) {
            struct assign_params ap;
            assign_params_default(&ap);
            ap.max_moves = c->max_moves;
            ap.margin = c->hysteresis;
            struct assign_result res = {.path = path};
            rc = per_dst ? granularity_assign(ASSIGN_TIERFLOW, &in, &ap, &res, err, sizeof(err))
                         : assign_run(ASSIGN_TIERFLOW, &in, &ap, &res, err, sizeof(err));
            if (rc == 0) {
                after = res.max_util;
                if (automatic)
                    after = gate_moves(&r, &in, path, c->hysteresis, after);
                for (size_t i = 0; i < r.n; i++)
                    moved += path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != r.f[i].path;
            } else {
                for (size_t i = 0; i < r.n; i++)
                    path[i] = af[i].path;
            }
        }
    }
    /* The assignment stands even when no plan can express it (a topology
     * without interface addresses): report it, but pin nothing. */
    int arc = rc;
    if (rc == 0 && !dry_run)
        mark_holds(&r, path);
    if (rc == 0 && per_dst && (rc = group_pins(&r, af, path)) == 0) {
        moved = 0;
        for (size_t i = 0; i < r.n; i++)
            moved += path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != r.f[i].path;
    }
    if (rc == 0 && !cr)
        rc = -ENOMEM;
    bool acts = rb->be && backend_acts(rb->be);
    if (rc == 0 && (rc = build_plan(rb, &r, path, cr, &plan, err, sizeof(err))) < 0) {
        char why[sizeof(err)];
        snprintf(why, sizeof(why), "plan: %.240s", err);
        tf_strlcpy(err, why, sizeof(err));
        if (acts && !dry_run)
            round_failed(rb, now, err);
        else
            log_warn("rebalance: %s", err);
    }
    if (arc < 0)
        moved = 0;
    bool accepted = false, applied = false;
    if (rc == 0 && !dry_run && rb->fence && (rc = rb->fence(rb->fence_arg, err, sizeof(err))) < 0)
        moved = 0;
    if (rc == 0 && !dry_run) {
        struct backend_result br = {0};
        int ar = rb->be ? backend_apply(rb->be, &plan, &br) : 0;
        if (ar < 0) {
            rc = ar;
            snprintf(err, sizeof(err), "backend: %.200s", br.error[0] ? br.error : backend_error(rb->be));
            round_failed(rb, now, err);
        } else {
            /* Installed, except what a switch cannot express (a selector
             * its kernel or iproute2 lacks): a failure to act as well, shown
             * the same way for as long as the policy asks for it. */
            if (br.unsupported[0]) {
                round_failed(rb, now, br.unsupported);
            } else {
                pthread_mutex_lock(&rb->sum_mu);
                rb->be_healthy = !rb->be || backend_healthy(rb->be);
                rb->be_error[0] = '\0';
                pthread_mutex_unlock(&rb->sum_mu);
                rb->fail_cause[0] = '\0';   /* the next failure is news again */
            }
            pthread_mutex_lock(&rb->sum_mu);
            memcpy(rb->unsup, br.unsup, sizeof(rb->unsup));
            rb->nunsup = br.nunsup;
            pthread_mutex_unlock(&rb->sum_mu);
            accepted = true;
            applied = acts;
            record_pins(rb, &r, path, now);
            unpin_apply(rb, &r, now);
            /* Settle after choice moves only: a round that only took flows
             * off failed paths must let the next one improve on it. */
            bool chosen = false;
            for (size_t i = 0; i < r.n; i++)
                chosen |= moved_by_choice(&r, path, i);
            if (chosen)
                start_settle(rb, &r, path, now);
            plan_free(&rb->last);
            plan_init(&rb->last);
            plan_copy(&rb->last, &plan);
        }
    }
    double dur = tf_now_mono() - t0;
    if (!dry_run)
        metrics_round(rb->m, dur, accepted ? moved : 0);
    if (moved && (rc == 0 || dry_run)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s%u flow%s, max util %.2f -> %.2f", dry_run ? "would move " : "moved ", moved,
                 moved == 1 ? "" : "s", before, after);
        events_add_rebalance(rb->ev, now, dry_run ? "dry_run" : "rebalance", moved, before, after, msg);
    }
    pthread_mutex_lock(&rb->sum_mu);
    rb->sum = (struct rebalance_summary){.valid = true, .dry_run = dry_run, .applied = applied, .ts = now,
                                         .duration_s = dur, .util_before = before,
                                         .util_after = after, .moved = dry_run || rc == 0 ? moved : 0,
                                         .congested = (uint32_t)json_array_size(r.congested)};
    if (rc < 0 && !dry_run)
        tf_strlcpy(rb->sum.error, err[0] ? err : strerror(-rc), sizeof(rb->sum.error));
    pthread_mutex_unlock(&rb->sum_mu);

    if (out) {
        json_t *moves = json_array();
        for (size_t i = 0; arc == 0 && i < r.n; i++) {
            const struct snap *f = &r.f[i];
            if (path[i] == ASSIGN_NO_PATH || (int64_t)path[i] == f->path)
                continue;
            char id[24];
            snprintf(id, sizeof(id), "%016llx", (unsigned long long)f->id);
            json_array_append_new(moves, json_pack("{ss ss ss ss sf sI sI so so}", "flow", id, "src", nm(r.t, f->src),
                                                   "dst", nm(r.t, f->dst), "class",
                                                   f->cls >= 0 && f->cls < CLASSES_MAX && cls_name[f->cls] ? cls_name[f->cls] : "default",
                                                   "bps", f->gbps * 1e9, "from_index", (json_int_t)f->path,
                                                   "to_index", (json_int_t)path[i],
                                                   "from", path_names(r.t, f->src, f->dst, (uint64_t)f->path),
                                                   "to", path_names(r.t, f->src, f->dst, path[i])));
        }
        *out = json_pack("{sf sb sb sI sf sf sf sO so so so}", "ts", now, "dry_run", dry_run, "applied", applied,
                         "moved", (json_int_t)moved, "max_util_before", before, "max_util_after",
                         after, "duration_s", dur, "congested", r.congested, "moves", moves,
                         "plan", plan_json(&plan), "error", rc < 0 ? json_string(err[0] ? err : strerror(-rc)) : json_null());
    }
    json_decref(r.congested);
    free(pol_mem);
    if (cr)
        free(cr->allow);
    free(cr);
    free(path);
    free(af);
    plan_free(&plan);
    round_free(&r);
    pthread_mutex_unlock(&rb->mu);
    return rc;
}

bool rebalance_contended(struct rebalance *rb, double now)
{
    struct state *s = rb->st;
    const struct config *c = rb->cfg;
    bool found = false;
    pthread_mutex_lock(&rb->mu);
    pthread_rwlock_rdlock(&s->lock);
    uint32_t nd = 2 * s->topo->nlinks;
    if (s->gen == rb->seen_gen || dirs_ensure(rb, nd) < 0) {   /* nothing new since the last look */
        pthread_rwlock_unlock(&s->lock);
        pthread_mutex_unlock(&rb->mu);
        return false;
    }
    rb->seen_gen = s->gen;
    double *bps = calloc(nd + 1, sizeof(double)), *ce = calloc(nd + 1, sizeof(double));
    double *fat = calloc(nd + 1, sizeof(double));
    uint32_t *nfat = calloc(nd + 1, sizeof(uint32_t));
    if (bps && ce && fat && nfat) {
        state_dir_loads(s, now, bps, ce, nfat);
        for (size_t i = 0; i < s->nflows; i++) {
            const struct state_flow *f = &s->flows[i];
            uint32_t dirs[TOPO_MAX_HOPS];
            int n = f->fat && !state_flow_stale(s, f, now) ? state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS) : 0;
            for (int j = 0; j < n; j++)
                fat[dirs[j]] += f->bps / 1e9;
        }
        for (uint32_t d = 0; d < nd && !found; d++) {
            bool hot, down = !s->dirs[d].up;
            double bg = bps[d] / 1e9 - fat[d];
            dir_congested(s, c, d, down, bps[d], ce[d], nfat[d], bg > 0 ? bg : 0, &hot);
            /* Failures have their own wake-up (the routing watch). */
            found = hot && !down && !rb->hot_seen[d] && rb->settle[d] <= now;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    pthread_mutex_unlock(&rb->mu);
    free(bps);
    free(ce);
    free(fat);
    free(nfat);
    return found;
}

/* At most this many routing events per sync; a spine going down turns many
 * directions at once and one line says the rest. */
#define REBALANCE_ROUTING_EVENTS 16

int rebalance_routing(struct rebalance *rb, double now)
{
    pthread_mutex_lock(&rb->mu);   /* the backend is ours to call only under mu */
    struct state *s = rb->st;
    uint32_t nd = rb->be ? 2 * s->topo->nlinks : 0;
    uint8_t *down = nd ? calloc(nd + 1, 1) : NULL;
    char notes[2048];
    int rc = down ? backend_routing(rb->be, down, nd, notes, sizeof(notes)) : -EOPNOTSUPP;
    if (rc < 0) {
        pthread_mutex_unlock(&rb->mu);
        free(down);
        return rc == -EOPNOTSUPP ? 0 : rc;
    }
    int went_down = 0, evs = 0, more = 0;
    pthread_rwlock_wrlock(&s->lock);
    const struct topo *t = s->topo;
    for (uint32_t d = 0; d < nd; d++) {
        if (!state_dir_set_route_down(s, d, down[d], now))
            continue;
        went_down += down[d];
        if (evs++ >= REBALANCE_ROUTING_EVENTS) {
            more++;
            continue;
        }
        if (down[d])
            events_add(rb->ev, now, "routing_down", "%s -> %s: the switches' routing withdrew it (interface down "
                       "or path lost); pins on it are removed and it is not used", nm(t, topo_dir_from(t, d)),
                       nm(t, topo_dir_to(t, d)));
        else
            events_add(rb->ev, now, "routing_up", "%s -> %s: routing offers it again; usable after %.1f s hold-down",
                       nm(t, topo_dir_from(t, d)), nm(t, topo_dir_to(t, d)), s->link_holddown);
    }
    pthread_rwlock_unlock(&s->lock);
    if (more)
        events_add(rb->ev, now, "routing_down", "%d more direction changes from routing not listed", more);
    for (char *line = notes, *nl; *line; line = nl + 1) {
        if (!(nl = strchr(line, '\n')))
            break;
        *nl = '\0';
        events_add(rb->ev, now, "pins_withdrawn", "%s", line);
        went_down++;
    }
    pthread_mutex_unlock(&rb->mu);
    free(down);
    return went_down;
}

struct adopt_ctx {
    struct state *s;
    double now;
    size_t n, full;
};

static void adopt_one(void *arg, const struct planbuild_flow *pf, uint32_t src, uint32_t dst, uint64_t path)
{
    struct adopt_ctx *a = arg;
    struct state_flow_key k = {.af = pf->af, .proto = pf->proto, .sport = pf->sport, .dport = pf->dport};
    memcpy(k.src, pf->src, 16);
    memcpy(k.dst, pf->dst, 16);
    bool inserted = false;
    struct state_flow *f = state_flow_upsert(a->s, &k, &inserted);
    if (!f) {
        a->full++;
        return;
    }
    if (inserted) {
        f->probe = f->egress = TOPO_NONE;
        f->src_node = src;
        f->dst_node = dst;
        f->last_seen = a->now;   /* its grace starts now */
        state_flow_classify(a->s, f);
    }
    f->pin = (int64_t)path;
    f->pinned = true;
    state_flow_set_path(a->s, f, f->pin);
    a->n++;
}

int rebalance_adopt(struct rebalance *rb, double now)
{
    pthread_mutex_lock(&rb->mu);
    if (!rb->be) {
        pthread_mutex_unlock(&rb->mu);
        return 0;
    }
    struct plan have;
    plan_init(&have);
    int rc = backend_read(rb->be, &have);
    if (rc < 0) {
        events_add(rb->ev, now, "backend_error", "reading what is installed at start: %s; nothing adopted",
                   backend_error(rb->be));
        plan_free(&have);
        pthread_mutex_unlock(&rb->mu);
        return rc;
    }
    struct plan_opts o = {.prio_min = (uint32_t)rb->cfg->rule_prio_min, .prio_max = (uint32_t)rb->cfg->rule_prio_max,
                          .table_base = (uint32_t)rb->cfg->table_base};
    struct adopt_ctx a = {.s = rb->st, .now = now};
    size_t skipped = 0;
    pthread_rwlock_wrlock(&rb->st->lock);
    rc = planbuild_pins(rb->st->topo, &o, &have, adopt_one, &a, &skipped);
    rb->st->gen++;
    pthread_rwlock_unlock(&rb->st->lock);
    size_t odd = skipped + a.full;
    if (rc == 0 && (a.n || odd)) {
        char more[96] = "";
        if (odd)
            snprintf(more, sizeof(more), "; %zu rule set%s not understood will be removed by the first round", odd,
                     odd == 1 ? "" : "s");
        events_add(rb->ev, now, "adopt",
                   "adopted %zu pinned flow%s found installed (kept until the probes confirm them or "
                   "thresholds.pin_grace ends)%s", a.n, a.n == 1 ? "" : "s", more);
    }
    if (rc == 0) {
        plan_free(&rb->last);
        rb->last = have;
    } else {
        plan_free(&have);
    }
    pthread_mutex_unlock(&rb->mu);
    return rc;
}
