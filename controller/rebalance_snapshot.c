/*
 * rebalance_snapshot: a round's inputs (rebalance_int.h). Under the state's
 * read lock it copies the directions' loads, decides which are congested
 * and which contended (the one rule, shared with rebalance_contended), and
 * takes every live fat flow it can place (and the flows a move sent below
 * the fat threshold, at their demand), with whether it may move; pinned
 * flows it does not see keep or lose their pins here (keep_or_unpin).
 * Nothing here writes the state.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/rebalance_int.h"
#include "common/log.h"
#include "controller/config.h"
#include "policy/demand.h"

/* Frees what the round's steps allocated (plan_init'ed by run_round). */
void rebalance_round_free(struct round *r)
{
    free(r->bps);
    free(r->ce);
    free(r->bg);
    free(r->bgc);
    free(r->nfat);
    free(r->down);
    free(r->closed);
    free(r->unseen);
    free(r->hot);
    free(r->nramp);
    free(r->proj);
    free(r->f);
    free(r->snap_of);
    free(r->kept);
    free(r->unpin);
    json_decref(r->congested);
    free(r->pol_mem);
    if (r->cr)
        free(r->cr->allow);
    free(r->cr);
    free(r->af);
    free(r->path);
    plan_free(&r->plan);
}

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
    bool failed = false, unseen = false;
    for (int j = 0; placed && j < k->ndirs; j++) {
        failed |= r->down[k->dirs[j]];
        unseen |= r->closed[k->dirs[j]];
    }
    unseen |= placed && rebalance_ecmp_only(r, f->src_node, f->dst_node);
    if (placed && !failed && !unseen && age <= grace) {
        k->k = f->k;
        k->id = f->id;
        k->src = f->src_node;
        k->dst = f->dst_node;
        k->pin = k->path = f->pin;
        r->nkept++;
        return;
    }
    r->unpin[r->nunpin++] = (struct unpin){.k = f->k, .id = f->id, .age = age,
                                           .why = placed && failed   ? UNPIN_FAILED
                                                  : placed && unseen ? UNPIN_UNSEEN
                                                                     : UNPIN_AGED};
}

/* Non-fat load on direction d as the decisions count it: under
 * REBALANCE_HOT_BG_SHARE of the direction, the same share under which a
 * lone fat flow is not contended, it is the skew between a link's counter
 * and its flows' rates over one interval (TCP still ramping, windows that
 * differ), not load. Counted, it made two NIC-bound flows on one uplink look
 * like a collision one move would gain from (test_do_no_harm, 10% phantom
 * background), and moved both of two flows colliding on an uplink, where
 * the one left would have shared it with the skew
 * (skew_background_moves_one in test_rebalance). */
double rebalance_bg_counted(const struct state *s, uint32_t d, double bg)
{
    return bg >= REBALANCE_HOT_BG_SHARE * topo_dir_gbps(s->topo, d) ? bg : 0;
}

/* Why direction d counts as congested (NULL: it does not), and whether it is
 * contended, i.e. worth an assignment. Hedera's demand inflation (rebalance_estimate())
 * is for flows held down by contention: several fat flows on one direction, a
 * failed link, or heavy non-fat background (bg, Gb/s). A lone fat flow
 * filling its link is saturated, not contended: it would fill any path, and
 * inflating it made the loop move flows to escape a few percent of ACKs. Such
 * a direction is still listed as congested.
 * A collision of TCP flows through deep queues ramps for seconds under
 * thresholds.util (the fat tree's first reports saw 0.60-0.74): from
 * thresholds.ramp_util a direction is contended ("collision") when at least
 * two of its fat flows are still ramping and its fat flows, those at their
 * natural demands, would exceed its capacity by more than
 * thresholds.hysteresis (less is measurement noise no plan could act on).
 * Steady flows are not ramping: two application-limited flows at 30% stay
 * where they are; flows bound by a shared NIC have natural demands that
 * fit; non-fat load is left out, as it is skew between a counter and the
 * flows' rates as often as load (REBALANCE_HOT_BG_SHARE). The one rule for
 * rounds and for rebalance_contended. */
const char *rebalance_dir_congested(const struct state *s, const struct config *c, uint32_t d,
                                    const struct rebalance_dir_view *v, bool *hot)
{
    double u = state_dir_util(s, d, v->bps);
    const char *why = v->down && v->nfat ? "down" : config_congestion(c, u, v->ce);
    *hot = why && (v->down || v->nfat >= 2 ||
                   (v->nfat == 1 && rebalance_bg_counted(s, d, v->bg) > 0));
    if (!why && rebalance_ramp_candidate(c, u, v->nramp, v->down) &&
        v->proj > (1 + c->hysteresis) * topo_dir_gbps(s->topo, d)) {
        why = "collision";
        *hot = true;
    }
    return why;
}

bool rebalance_ramp_candidate(const struct config *c, double u, uint32_t nramp, bool down)
{
    return c->ramp_util > 0 && !down && nramp >= 2 && u >= c->ramp_util;
}

/* Live, between two nodes of the topology, on a known path. */
static bool on_known_path(const struct state *s, const struct state_flow *f, double now)
{
    return !state_flow_stale(s, f, now) && f->src_node != TOPO_NONE && f->dst_node != TOPO_NONE &&
           f->src_node != f->dst_node && f->path >= 0 && f->path <= (int64_t)ASSIGN_MAX_PATHS;
}

bool rebalance_flow_placed(const struct state *s, const struct state_flow *f, double now)
{
    return f->fat && on_known_path(s, f, now);
}

/* A flow that the collision it joined keeps below the probes' fat
 * threshold is an elephant no round saw: bench 50's fat tree had a late
 * starter at 0.6-3.9 Mbit/s for 7 s behind a flow moved onto its path 0.3 s
 * before it (held by min_move_interval), while the rounds logged "max util
 * 1.33-1.52, moving 0 flows" (docs/lab.md, "Late starters below the fat
 * threshold"). Its rate alone cannot tell it from a slow flow on the same
 * queue; a move can. So it is taken in once (starve_moved) if it has lasted
 * (REBALANCE_STARVED_AGE, two intervals: not a mouse), carries data
 * (REBALANCE_STARVED_FLOOR, in packets of REBALANCE_STARVED_PKT_BYTES: not
 * an ACK stream; a report without counts says nothing), and is under
 * REBALANCE_STARVED of its fair share of a congested direction of its path
 * that fat flows share (nfat, those the probes call fat). Sampled flows are
 * not: only the probe, which knows the samples, may call such a rate large. */
bool rebalance_flow_starved(const struct state *s, const struct config *c, const struct state_flow *f,
                            const struct round *r, double now)
{
    if (f->fat || f->starve_moved || f->sampling > 1 || !(f->prev_bps > 0) || f->seen_since <= 0 ||
        now - f->seen_since < REBALANCE_STARVED_AGE || f->pkt_bytes < REBALANCE_STARVED_PKT_BYTES ||
        !on_known_path(s, f, now))
        return false;
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS);
    double most = 0;   /* its share of its path's narrowest direction */
    bool held = false;
    for (int j = 0; j < n; j++) {
        uint32_t d = dirs[j];
        double u = state_dir_util(s, d, f->bps);
        most = u > most ? u : most;
        held |= r->nfat[d] >= 1 && !r->down[d] && config_congested(c, state_dir_util(s, d, r->bps[d]), r->ce[d]) &&
                u < REBALANCE_STARVED / (r->nfat[d] + 1);
    }
    return held && most >= REBALANCE_STARVED_FLOOR;
}

/* A rate that rose (or a flow that is new) says nothing of what holds it:
 * six application-limited flows starting together at 30% of a link were all
 * new, rose 28-41% from their first, partial interval to their second, and
 * the rule took their NICs for their demands (the gray lab, docs/lab.md).
 * What says the network holds a flow down is a queue on its path: a
 * direction congested by thresholds.util or thresholds.ce_frac, whose
 * qdisc dropped in its sender's last interval (queue_known: a far end's
 * counters do not see the queue, and leave the old drops), or whose qdisc
 * held at least thresholds.queue_delay of the link at its sender's last two
 * reports (deep queues delay rather than drop: colliding TCP flows fill
 * them and keep them full; application-limited ones leave them empty but
 * for a burst, which one report alone cannot tell from a standing queue).
 * Not the flow's own resends:
 * a gray failure's loss has no queue (docs/health.md), and flows moved off
 * the lossy link would leave it nothing for health to name. */
bool rebalance_flow_ramping(const struct state *s, const struct config *c, const struct state_flow *f,
                            const double *bps, const double *ce, double now)
{
    if (!(f->bps > f->prev_bps * (1 + REBALANCE_RAMP_GAIN)))
        return false;
    for (int j = 0; j < f->ndirs; j++) {
        uint32_t d = f->dirs[j];
        if (config_congested(c, state_dir_util(s, d, bps[d]), ce[d]) ||
            (s->dirs[d].queue_known && s->dirs[d].qdisc_drops > 0 && state_dir_fresh(s, d, now)) ||
            (c->queue_delay > 0 && state_dir_queue_delay(s, d, REBALANCE_QUEUE_STANDING, now) >= c->queue_delay))
            return true;
    }
    return false;
}

/* rb's per-direction arrays for nd directions (the topology may change size
 * on reload: everything starts afresh then). Under mu. */
int rebalance_dirs_ensure(struct rebalance *rb, uint32_t nd)
{
    if (rb->nd == nd && rb->moved_at)
        return 0;
    free(rb->moved_at);
    free(rb->hot_seen);
    rb->moved_at = calloc(nd + 1, sizeof(double));
    rb->hot_seen = calloc(nd + 1, 1);
    rb->nd = rb->moved_at && rb->hot_seen ? nd : 0;
    while (rb->ngroups)
        rebalance_group_drop(rb, rb->ngroups - 1);
    return rb->nd == nd ? 0 : -ENOMEM;
}

/* Moved by choice within min_move_interval: TCP still climbs on its new
 * path (rebalance_estimate counts it at its natural demand). */
static bool moved_young(const struct config *c, const struct state_flow *f, double now)
{
    return f->last_moved > 0 && now - f->last_moved < c->min_move_interval;
}

/* Since when a move counted on a starved flow: the first moving round
 * whose group has it (rebalance_start_settle: moved, or on a direction the
 * move touched), now if none. Its seen_since is not that: a late starter
 * seen below the fat threshold before a move that never had it in its
 * round was held by that move's settle (bench 50's fat tree, docs/lab.md,
 * "Late starters the move did not count on"). Under mu; groups are oldest
 * first. */
static double counted_since(const struct rebalance *rb, const struct state_flow *f, double now)
{
    for (size_t g = 0; g < rb->ngroups; g++)
        for (size_t i = 0; i < rb->groups[g].n; i++)
            if (state_flow_key_eq(&rb->groups[g].m[i].k, &f->k))
                return rb->groups[g].at;
    return now;
}

static bool crosses_settling(const struct rebalance *rb, const struct snap *f, double since, double now)
{
    for (int j = 0; j < f->ndirs; j++)
        if (rebalance_dir_settling(rb, f->dirs[j], since, now))
            return true;
    return false;
}

bool rebalance_warming(const struct config *c, const struct state *s, double now)
{
    return c->warmup && state_view_warming(s, now);
}

/* Under the read lock: loads, congestion, every live fat flow we can place,
 * and the verdicts on earlier moves. */
int rebalance_snapshot(struct rebalance *rb, double now, struct round *r)
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
    r->bgc = calloc(nd, sizeof(double));
    r->nfat = calloc(nd, sizeof(uint32_t));
    r->down = calloc(nd, 1);
    r->closed = calloc(nd, 1);
    r->unseen = calloc(nd, 1);
    r->hot = calloc(nd, 1);
    r->nramp = calloc(nd, sizeof(uint32_t));
    r->proj = calloc(nd, sizeof(double));
    r->f = calloc(s->nflows + 1, sizeof(*r->f));
    r->snap_of = malloc((s->nflows + 1) * sizeof(*r->snap_of));
    r->kept = calloc(s->nflows + 1, sizeof(*r->kept));
    /* Two a flow at most: one here (aged, failed or unseen), one judged harmful. */
    r->unpin = calloc(2 * (s->nflows + 1), sizeof(*r->unpin));
    r->congested = json_array();
    if (!r->bps || !r->ce || !r->bg || !r->bgc || !r->nfat || !r->down || !r->closed || !r->unseen || !r->hot ||
        !r->nramp || !r->proj || !r->f || !r->snap_of || !r->kept || !r->unpin || rebalance_dirs_ensure(rb, r->nd) < 0)
        return -ENOMEM;
    state_dir_loads(s, now, r->bps, r->ce, r->nfat);
    r->warming = rebalance_warming(c, s, now);
    for (uint32_t d = 0; d < r->nd; d++) {
        r->down[d] = !s->dirs[d].up;
        r->closed[d] = state_dir_closed(s, d, now);
        r->any_closed |= r->closed[d];
        r->unseen[d] = s->dirs[d].route_unseen;
        r->any_unseen |= r->unseen[d];
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
        bool young = moved_young(c, f, now), climbing = young && f->pinned && !f->fat && on_known_path(s, f, now);
        if (f->pinned && (!f->fat || state_flow_stale(s, f, now)) && !climbing) {
            keep_or_unpin(r, s, f, now, c->pin_grace);
            continue;
        }
        bool starved = rebalance_flow_starved(s, c, f, r, now);
        if (!starved && !climbing && !rebalance_flow_placed(s, f, now))
            continue;
        if (rebalance_ecmp_only(r, f->src_node, f->dst_node)) {   /* background, its pin gone */
            if (f->pinned)
                r->unpin[r->nunpin++] = (struct unpin){.k = f->k, .id = f->id, .why = UNPIN_UNSEEN,
                                                       .age = now - f->last_seen};
            continue;
        }
        struct snap *sf = &r->f[r->n];
        sf->ndirs = state_flow_dirs(s, f, sf->dirs, TOPO_MAX_HOPS);
        if (sf->ndirs <= 0)
            continue;
        sf->k = f->k;
        sf->id = f->id;
        sf->starved = starved;
        sf->src = f->src_node;
        sf->dst = f->dst_node;
        sf->gbps = sf->meas = f->bps / 1e9;
        sf->move_bps = f->move_bps / 1e9;
        sf->moved_at = f->last_moved;
        sf->seen_moved = f->pin_seen >= f->last_moved;
        sf->young = young;
        sf->climbing = climbing;
        sf->cls = f->cls;
        sf->path = f->path;
        sf->pin = f->pinned ? f->pin : -1;
        /* A pin through a direction out of view is gone from the switches
         * (the backend withdrew it): the flow stays where routing puts it. */
        if (sf->pin >= 0 && rebalance_closed(r, s->topo, sf->src, sf->dst, sf->pin)) {
            r->unpin[r->nunpin++] = (struct unpin){.k = f->k, .id = f->id, .why = UNPIN_UNSEEN, .age = now - f->last_seen};
            sf->pin = -1;
        }
        sf->ramp = rebalance_flow_ramping(s, c, f, r->bps, r->ce, now);
        double counted = starved ? counted_since(rb, f, now) : f->fat_since;
        sf->movable = state_flow_may_move(s, f, c->min_move_interval, now) &&
                      !(r->automatic && crosses_settling(rb, sf, counted, now));
        sf->held = !sf->movable && now >= f->backoff_until;
        for (int j = 0; j < sf->ndirs; j++)
            r->bg[sf->dirs[j]] -= sf->gbps;
        r->snap_of[i] = (int32_t)r->n++;
    }
    /* A starved flow counts among its directions' fat flows from here on
     * (contention, the trace, the result), not in the test that took it. */
    for (size_t i = 0; i < r->n; i++)
        for (int j = 0; r->f[i].starved && j < r->f[i].ndirs; j++)
            r->nfat[r->f[i].dirs[j]]++;
    /* The ramp rule's inputs; the natural demands only where they can
     * matter (the estimate otherwise runs after the lock, in round_assign). */
    bool ramp = false;
    for (size_t i = 0; i < r->n; i++)
        for (int j = 0; r->f[i].ramp && j < r->f[i].ndirs; j++)
            r->nramp[r->f[i].dirs[j]]++;
    for (uint32_t d = 0; d < r->nd && !ramp; d++)
        ramp = rebalance_ramp_candidate(c, state_dir_util(s, d, r->bps[d]), r->nramp[d], r->down[d]);
    if (ramp)
        rebalance_round_natural(r, r->proj);
    for (uint32_t d = 0; d < r->nd; d++) {
        if (r->bg[d] < 0)
            r->bg[d] = 0;
        r->bgc[d] = rebalance_bg_counted(s, d, r->bg[d]);
        bool hot;
        struct rebalance_dir_view v = {.down = r->down[d], .bps = r->bps[d], .ce = r->ce[d], .bg = r->bg[d],
                                       .nfat = r->nfat[d], .nramp = r->nramp[d], .proj = r->proj[d]};
        const char *why = rebalance_dir_congested(s, c, d, &v, &hot);
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
        rebalance_verdicts(rb, r, now);
        rebalance_judge_groups(rb, r, now);
        memcpy(rb->hot_seen, r->hot, r->nd);
    }
    return 0;
}

int rebalance_natural(const struct topo *t, struct snap *f, size_t n, double *proj)
{
    uint32_t *src = calloc(n + 1, sizeof(uint32_t)), *dst = calloc(n + 1, sizeof(uint32_t));
    uint32_t *map = malloc((size_t)t->nnodes * sizeof(uint32_t));
    double *cap = calloc(2 * n + 1, sizeof(double)), *dem = calloc(n + 1, sizeof(double));
    int rc = -ENOMEM;
    if (!src || !dst || !map || !cap || !dem)
        goto out;
    memset(map, 0xff, (size_t)t->nnodes * sizeof(uint32_t));
    uint32_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t ends[2] = {f[i].src, f[i].dst};
        for (int k = 0; k < 2; k++) {
            uint32_t e = ends[k];
            if (map[e] == UINT32_MAX) {
                const struct topo_node *tn = &t->nodes[e];
                cap[ne] = tn->up_count ? t->links[t->up_links[tn->up_first]].gbps : 1e6;
                map[e] = ne++;
            }
        }
        src[i] = map[f[i].src];
        dst[i] = map[f[i].dst];
    }
    if ((rc = demand_estimate(ne, cap, (uint32_t)n, src, dst, dem)) < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        f[i].nat = dem[i];
        double load = f[i].ramp && dem[i] > f[i].meas ? dem[i] : f[i].meas;
        for (int j = 0; proj && j < f[i].ndirs; j++)
            proj[f[i].dirs[j]] += load;
    }
out:
    free(src);
    free(dst);
    free(map);
    free(cap);
    free(dem);
    return rc;
}

/* See rebalance_int.h: the estimate runs once a round, whichever needs it first. */
void rebalance_round_natural(struct round *r, double *proj)
{
    if (!r->nat_done)
        rebalance_natural(r->t, r->f, r->n, proj);
    r->nat_done = true;
}

/* Hedera's natural demand for flows crossing a contended direction: their
 * measured rate is what the collision left them. So for a flow moved by
 * choice within min_move_interval: TCP takes seconds to climb on its new
 * path (bench 50's fat tree: 14, 14, 33 Mbit/s 0, 2 and 4 s after a move,
 * 50 later), and taken at its measured rate it looked like room, so a later
 * round put a second flow beside it, a collision that lasted until
 * min_move_interval freed it to move again (docs/lab.md, "Churn on the fat
 * tree"). Other flows keep their measured rate. */
void rebalance_estimate(struct round *r)
{
    rebalance_round_natural(r, NULL);
    for (size_t i = 0; i < r->n; i++) {
        for (int j = 0; j < r->f[i].ndirs; j++)
            r->f[i].on_hot |= r->hot[r->f[i].dirs[j]];
        if ((r->f[i].on_hot || r->f[i].young) && r->f[i].nat > r->f[i].gbps)
            r->f[i].gbps = r->f[i].nat;
    }
}

/* At debug level, what a round decides on: its contended directions and
 * every fat flow with its measured rate, natural demand, the demand the
 * assignment uses, its path and whether it may move. This is what explains
 * a round's result after the fact (docs/lab.md, the fat tree's first round). */
void rebalance_trace(const struct round *r)
{
    if (!log_enabled(LOG_DEBUG))
        return;
    const struct topo *t = r->t;
    log_debug("rebalance: round on %zu fat flows, %u contended directions", r->n, r->nhot);
    for (uint32_t d = 0; d < r->nd; d++)
        if (r->hot[d])
            log_debug("rebalance:   contended %s->%s: %.4f Gb/s of %.4f, %u fat (%u ramping, %.4f at natural demand),"
                      " background %.4f", nm(t, topo_dir_from(t, d)), nm(t, topo_dir_to(t, d)), r->bps[d] / 1e9,
                      topo_dir_gbps(t, d), r->nfat[d], r->nramp[d], r->proj[d], r->bg[d]);
    for (size_t i = 0; i < r->n; i++) {
        const struct snap *f = &r->f[i];
        char p[160];
        rebalance_path_str(t, f->src, f->dst, (uint64_t)f->path, p, sizeof(p));
        log_debug("rebalance:   flow %016llx %u->%u measured %.4f natural %.4f demand %.4f%s%s%s%s%s%s path %lld: %s",
                  (unsigned long long)f->id, f->k.sport, f->k.dport, f->meas, f->nat, f->gbps,
                  f->starved ? " starved" : "", f->ramp ? " ramping" : "",
                  f->young ? " moved" : "", f->climbing ? " (not fat)" : "", f->on_hot ? " contended" : "",
                  f->movable ? "" : " unmovable", (long long)f->path, p);
    }
}
