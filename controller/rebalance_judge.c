/*
 * rebalance_judge: do no harm (docs/policy.md). A round's choice moves are
 * judged twice: each moved flow on its own once its settle period is over
 * (a verdict: helped, or futile and backed off), and the group of flows a
 * round moved together over thresholds.harm_intervals (worse than before by
 * harm_margin: their pins are withdrawn, except a flow starved before and
 * after its move). Before any of that, an automatic round's choice moves
 * must be predicted to gain (rebalance_gate_moves) and must not make a new
 * collision that waiting for held flows avoids (rebalance_wait_for_held).
 * Invariants: under rb->mu; a dry run judges nothing (the caller skips
 * it); a move across a link failure or return is not judged (the failure,
 * not the move, changed what the paths carry).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "controller/rebalance_int.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/metrics.h"
#include "policy/granularity.h"
#include "policy/maxmin.h"

void rebalance_group_drop(struct rebalance *rb, size_t i)
{
    free(rb->groups[i].m);
    memmove(&rb->groups[i], &rb->groups[i + 1], (rb->ngroups - i - 1) * sizeof(*rb->groups));
    rb->ngroups--;
}

/* The settle period after a move: its reports cover at least one interval
 * that began before it. */
static double settle_s(const struct config *c)
{
    double w = c->settle_intervals * c->interval;
    return w > c->interval ? w : c->interval;
}

/* A direction's counters are stale until the probes report an interval
 * that began after the move; the settle period bounds the wait (a probe
 * that went quiet). Waiting the whole period instead held a collision a
 * move had made with a flow not yet fat at its round for 2 s on the lab's
 * fat tree, where the reports after the move (0.5-1.4 s) already showed it
 * (docs/lab.md, "The look at mid-interval"). */
bool rebalance_dir_settling(const struct rebalance *rb, uint32_t d, double since, double now)
{
    double at = rb->moved_at[d];
    return at > 0 && since <= at && now < at + settle_s(rb->cfg) && rb->st->dirs[d].rate_since < at;
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
 * (the settle period is over). Only a move that took can have helped: a
 * report must have placed the flow on its new path since the move
 * (seen_moved). Judged on its rate alone, a pin that did not take (a rule
 * ahead of tierflow's keeps the flow on its old path) passed when the rate
 * held there or, the flow still ramping at the move, rose by move_gain,
 * and the flow was moved again once min_move_interval was over
 * (test_do_no_harm step 4). Once placed on its new path, it helped if its
 * rate rose by move_gain, or held without that path being contended, or
 * reached its natural demand
 * (within move_gain): no path gives it more. The last is for a rate at the
 * move that a short interval read high: at --interval 0.2 the fat tree's
 * flows read 21-65 Mbit/s over 0.2 s while steady at 45 on a 50 Mbit/s
 * path, and flows read at 62-65 before their moves and at 47-51 after were
 * judged futile (docs/lab.md, "Late starters below the fat threshold").
 * A futile move backs the flow off (apply_verdicts): the assignment would
 * only try the same thing again, and every move costs the flow packets.
 */
void rebalance_verdicts(const struct rebalance *rb, struct round *r, double now)
{
    const struct config *c = rb->cfg;
    for (size_t i = 0; i < r->n; i++) {
        struct snap *f = &r->f[i];
        if (f->move_bps <= 0 || f->climbing || now - f->moved_at < settle_s(c) || across_change(rb, f->moved_at))
            continue;
        bool hot = false;
        for (int j = 0; j < f->ndirs; j++)
            hot |= r->hot[f->dirs[j]];
        rebalance_round_natural(r, NULL);
        bool helped = f->seen_moved && (f->meas >= f->move_bps * (1 + c->move_gain) ||
                                        (!hot && f->meas >= f->move_bps * (1 - c->move_gain)) ||
                                        (f->nat > 0 && f->meas >= f->nat * (1 - c->move_gain)));
        f->verdict = helped ? 1 : -1;
        if (!helped)
            f->movable = false;
    }
}

/* A moved member starved at its move and since (REBALANCE_STARVED of its
 * natural demand): the collision it left starved it, so ECMP would put it
 * back where it gets nothing, and at that rate it is not what costs its
 * group. Bench 50 (fat tree stride:4) withdrew such a pin (about 0-19 of
 * 50 Mbit/s before and after); ECMP put the flow back on its collision,
 * and later rounds moved its neighbours a second time. */
static bool starved_both(struct round *r, struct snap *f, const struct rebalance_member *m)
{
    rebalance_round_natural(r, NULL);
    double lim = REBALANCE_STARVED * f->nat * 1e9;
    return f->nat > 0 && m->nseen && m->bps < lim && m->now_sum / m->nseen < lim;
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
void rebalance_judge_groups(struct rebalance *rb, struct round *r, double now)
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
            gr->m[i].now_sum += f->bps;
            gr->m[i].nseen++;
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
            rebalance_group_drop(rb, g);
            continue;
        }
        double ratio = gr->nsamples ? gr->ratio_sum / gr->nsamples : 1;
        if (ratio < 1 - c->harm_margin) {
            size_t n = 0, kept = 0;
            for (size_t i = 0; i < gr->n; i++) {
                const struct state_flow *f = state_flow_find(s, &gr->m[i].k);
                if (!f || gr->m[i].pin < 0 || !f->pinned || f->pin != gr->m[i].pin)
                    continue;
                int32_t si = r->snap_of[f - s->flows];
                if (si < 0)      /* unobserved: its grace decides (keep_or_unpin) */
                    continue;
                if (starved_both(r, &r->f[si], &gr->m[i])) {
                    kept++;
                    continue;
                }
                r->f[si].withdrawn = true;
                r->f[si].movable = false;
                r->f[si].pin = -1;
                r->f[si].verdict = -1;
                r->unpin[r->nunpin++] = (struct unpin){.k = f->k, .id = f->id, .why = UNPIN_HARM, .age = ratio};
                n++;
            }
            if (kept)
                log_debug("rebalance: the group moved at %.1f does %.0f%% of its rate before the move; %zu pin%s of "
                          "flows starved before and after it kept", gr->at, 100 * ratio, kept, kept == 1 ? "" : "s");
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
        rebalance_group_drop(rb, g);
    }
}

/* The verdicts of the snapshot, written back (write lock, only when there
 * are some): a futile move doubles the flow's back-off, a helpful one
 * clears it. */
void rebalance_apply_verdicts(struct rebalance *rb, const struct round *r, double now)
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
            log_debug("rebalance: flow %016llx: its move helped (%.3f -> %.3f Gb/s)", (unsigned long long)f->id,
                      sf->move_bps, sf->meas);
            continue;
        }
        futile++;
        if (f->futile < 16)
            f->futile++;
        double base = c->min_move_interval > c->interval ? c->min_move_interval : c->interval;
        double wait = base * (double)(1u << f->futile);   /* 2x, 4x, ... the usual wait */
        f->backoff_until = now + (wait < c->backoff_max ? wait : c->backoff_max);
        f->backoff_at = now;
        /* A pin withdrawn with its group (harm) is judged by the group's
         * aggregate, not by its own rate since the move: say which. */
        if (sf->withdrawn)
            log_debug("rebalance: flow %016llx: its pin was withdrawn with its group (%.3f Gb/s now): backed off "
                      "%.0f s", (unsigned long long)f->id, sf->meas, f->backoff_until - now);
        else
            log_debug("rebalance: flow %016llx: its move did not help (%.3f -> %.3f Gb/s%s): backed off %.0f s",
                      (unsigned long long)f->id, sf->move_bps, sf->meas,
                      sf->seen_moved ? "" : ", not seen on its new path", f->backoff_until - now);
    }
    pthread_rwlock_unlock(&s->lock);
    if (rb->m && futile)
        atomic_fetch_add(&rb->m->futile_moves, futile);
}

bool rebalance_moved_by_choice(const struct round *r, const uint32_t *path, size_t i)
{
    return path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != r->f[i].path && !rebalance_forced(r, i);
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
void rebalance_start_settle(struct rebalance *rb, const struct round *r, const uint32_t *path, double now)
{
    double until = now + settle_s(rb->cfg);   /* the group is judged from then */
    uint8_t *touched = calloc(r->nd + 1, 1);
    size_t nm = 0;
    if (!touched)
        return;
    for (size_t i = 0; i < r->n; i++) {
        if (!rebalance_moved_by_choice(r, path, i))
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
            rb->moved_at[d] = now;
    for (size_t i = 0; i < r->n; i++) {
        bool in = rebalance_moved_by_choice(r, path, i);
        for (int j = 0; !in && j < r->f[i].ndirs; j++)
            in = touched[r->f[i].dirs[j]];
        nm += in;
    }
    if (rb->ngroups == REBALANCE_MAX_GROUPS)
        rebalance_group_drop(rb, 0);
    if (!rb->groups)
        rb->groups = calloc(REBALANCE_MAX_GROUPS, sizeof(*rb->groups));
    struct rebalance_group *g = rb->groups ? &rb->groups[rb->ngroups] : NULL;
    struct rebalance_member *m = g ? calloc(nm + 1, sizeof(*m)) : NULL;
    if (m) {
        *g = (struct rebalance_group){.at = now, .from = until,
                                      .until = until + rb->cfg->harm_intervals * rb->cfg->interval, .m = m};
        for (size_t i = 0; i < r->n; i++) {
            bool mv = rebalance_moved_by_choice(r, path, i), in = mv;
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

/* Overload summed over every direction: sum of max(0, util - 1), on loads
 * that count the round's background as the decision does (r->bgc). */
static double excess(const struct round *r, const double *load)
{
    double e = 0;
    for (uint32_t d = 0; d < r->nd; d++) {
        double g = topo_dir_gbps(r->t, d);
        if (g > 0 && load[d] > g)
            e += load[d] / g - 1;
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
        cap[d] = r->down[d] ? 0 : topo_dir_gbps(r->t, d) - r->bgc[d];
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
double rebalance_gate_moves(const struct round *r, const struct assign_input *in, uint32_t *path, double margin,
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
        if (rebalance_forced(r, i) && path[i] != ASSIGN_NO_PATH) {
            cur[i] = path[i];   /* the baseline already has the forced moves */
        } else if (path[i] != ASSIGN_NO_PATH && path[i] != in->flows[i].path) {
            discretionary = true;
            moved += in->flows[i].gbps;
        }
    }
    /* A link in its hold-down is about to be usable: choice moves now would
     * be made again when it is (two moves a flow within seconds, what a
     * restore must not cause). A view still warming up (a start, or
     * telemetry back) may lack some probes' reports: choice moves on it
     * land on directions no report has shown yet. Forced moves go on. */
    if (discretionary && (r->returning || r->warming)) {
        for (size_t i = 0; i < r->n; i++)
            path[i] = cur[i];
        after = assign_loads(in, path, load);
        log_debug("rebalance: discretionary moves wait for %s",
                  r->returning ? "the end of a hold-down" : "the end of the warm-up");
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

/* Whether direction d is on path a (n directions). */
static bool on_path(const uint32_t *a, int n, uint32_t d)
{
    for (int j = 0; j < n; j++)
        if (a[j] == d)
            return true;
    return false;
}

/* A held flow that the round did not back off or withdraw: free once its
 * hold ends. */
static bool held_only(const struct snap *f)
{
    return f->held && f->verdict >= 0 && !f->withdrawn;
}

/*
 * Churn: a round whose other fat flows are held (moved within
 * min_move_interval, or on a settling direction) may find only a place that
 * is itself a collision for a contended flow: a direction that, with the
 * move, carries two fat flows or more over its capacity (plus the margin).
 * Bench 50 (fat tree randbij) saw such a move lower the predicted maximum
 * from 2.01 to 1.88; the new collision lasted until the holds ended, and
 * then three flows moved a second time. When the same assignment with the
 * held flows free does better by the margin, waiting for them fixes it
 * properly with fewer moves: every choice move of the round is dropped
 * (forced ones stand) and a later round, once the holds end, makes them.
 * A new collision that even free flows cannot avoid (a fabric short of
 * capacity) stays. Under mu, no state lock; returns the max utilisation of
 * what is kept.
 */
double rebalance_wait_for_held(const struct round *r, const struct assign_input *in, const struct assign_params *ap,
                               bool per_dst, uint32_t *path, double after)
{
    bool held = false;
    for (size_t i = 0; i < r->n && !held; i++)
        held = held_only(&r->f[i]);
    if (!held)
        return after;
    double *load = calloc(r->nd + 1, sizeof(double));
    uint32_t *nfat = calloc(r->nd + 1, sizeof(uint32_t)), *alt = calloc(r->n + 1, sizeof(uint32_t));
    struct assign_flow *af = calloc(r->n + 1, sizeof(*af));
    uint32_t dirs[TOPO_MAX_HOPS];
    if (!load || !nfat || !alt || !af)
        goto out;
    assign_loads(in, path, load);
    for (size_t i = 0; i < r->n; i++) {
        int n = path[i] == ASSIGN_NO_PATH ? 0
                : topo_path_dirs(r->t, in->flows[i].src, in->flows[i].dst, path[i], dirs, TOPO_MAX_HOPS);
        for (int j = 0; j < n; j++)
            nfat[dirs[j]]++;
    }
    size_t mover = r->n;
    uint32_t hit = 0;
    for (size_t i = 0; i < r->n && mover == r->n; i++) {
        if (!rebalance_moved_by_choice(r, path, i))
            continue;
        int n = topo_path_dirs(r->t, in->flows[i].src, in->flows[i].dst, path[i], dirs, TOPO_MAX_HOPS);
        for (int j = 0; j < n && mover == r->n; j++) {
            uint32_t d = dirs[j];
            double g = topo_dir_gbps(r->t, d), l = load[d];
            if (!on_path(r->f[i].dirs, r->f[i].ndirs, d) && nfat[d] >= 2 && g > 0 && l > g * (1 + ap->margin)) {
                mover = i;
                hit = d;
            }
        }
    }
    if (mover == r->n)
        goto out;
    /* The same assignment with the held flows free. */
    memcpy(af, in->flows, r->n * sizeof(*af));
    for (size_t i = 0; i < r->n; i++)
        af[i].movable |= held_only(&r->f[i]);
    struct assign_input free_in = *in;
    free_in.flows = af;
    struct assign_result res = {.path = alt};
    char err[128];
    int rc = per_dst ? granularity_assign(ASSIGN_TIERFLOW, &free_in, ap, &res, err, sizeof(err))
                     : assign_run(ASSIGN_TIERFLOW, &free_in, ap, &res, err, sizeof(err));
    if (rc < 0 || !(res.max_util < after * (1 - ap->margin)))
        goto out;
    log_debug("rebalance: choice moves wait for held flows: flow %016llx would land on %s->%s beside %u fat "
              "flows (util %.2f); with the held flows free the plan reaches %.2f, not %.2f",
              (unsigned long long)r->f[mover].id, nm(r->t, topo_dir_from(r->t, hit)), nm(r->t, topo_dir_to(r->t, hit)),
              nfat[hit] - 1, load[hit] / topo_dir_gbps(r->t, hit), res.max_util, after);
    for (size_t i = 0; i < r->n; i++)
        if (!(rebalance_forced(r, i) && path[i] != ASSIGN_NO_PATH))
            path[i] = in->flows[i].path;
    after = assign_loads(in, path, load);
out:
    free(load);
    free(nfat);
    free(alt);
    free(af);
    return after;
}
