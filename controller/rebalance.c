/*
 * rebalance: see rebalance.h. A round works on a snapshot of the fat flows
 * taken under the state's read lock; the assignment and the plan are
 * computed without any state lock, and the pins are written back under the
 * write lock only after the backend accepted the plan, so that the state
 * never claims a path the fabric does not have. This file holds the
 * round's steps in order (run_round) and the loop's entry points; the
 * steps' parts live in the family's other files (rebalance_int.h).
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
#include "controller/rebalance_int.h"
#include "controller/state.h"
#include "policy/assign.h"
#include "policy/classes.h"
#include "policy/granularity.h"

int rebalance_init(struct rebalance *rb, struct state *st, struct events *ev, struct metrics *m,
                   struct backend *be, const struct config *cfg)
{
    memset(rb, 0, sizeof(*rb));
    pthread_mutex_init(&rb->mu, NULL);
    pthread_mutex_init(&rb->sum_mu, NULL);
    rb->st = st;
    rb->ev = ev;
    rb->m = m;
    rb->cfg = cfg;
    rb->be_healthy = true;
    plan_init(&rb->last);
    rebalance_backend_init(rb, be);
    return 0;
}

void rebalance_destroy(struct rebalance *rb)
{
    while (rb->ngroups)
        rebalance_group_drop(rb, rb->ngroups - 1);
    free(rb->groups);
    free(rb->moved_at);
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

void rebalance_between_rounds(struct rebalance *rb, void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&rb->mu);
    fn(arg);
    pthread_mutex_unlock(&rb->mu);
}

size_t rebalance_unsupported(struct rebalance *rb, struct backend_unsup *out, size_t max)
{
    pthread_mutex_lock(&rb->sum_mu);
    size_t n = rb->nunsup < max ? rb->nunsup : max;
    memcpy(out, rb->unsup, n * sizeof(*out));
    pthread_mutex_unlock(&rb->sum_mu);
    return n;
}

/* How many flows the round's paths move. */
static uint32_t round_moved(const struct round *r)
{
    uint32_t moved = 0;
    for (size_t i = 0; i < r->n; i++)
        moved += r->path[i] != ASSIGN_NO_PATH && (int64_t)r->path[i] != r->f[i].path;
    return moved;
}

/* Step 1, under the state's read lock: the snapshot, the classes' names
 * and policies (class -> highest tier and allowed spines, node_ok; a policy
 * naming nodes the topology lacks keeps only its tiers) and the class
 * rules; then the verdicts on earlier moves are written back. */
static int round_gather(struct rebalance *rb, double now, struct round *r)
{
    struct state *s = rb->st;
    pthread_rwlock_rdlock(&s->lock);
    int rc = rebalance_snapshot(rb, now, r);
    for (uint32_t k = 0; s->classes && k < s->classes->n && k < CLASSES_MAX; k++)
        r->cls_name[k] = s->classes->c[k].name;
    r->npol = s->classes ? s->classes->n : 0;
    char perr[256];
    if (r->npol && classes_resolve(s->classes, r->t, r->pol, &r->pol_mem, perr, sizeof(perr)) < 0) {
        log_warn("rebalance: class policy: %s (spine subsets ignored)", perr);
        for (uint32_t k = 0; k < r->npol; k++)
            r->pol[k] = (struct assign_policy){.max_tier = s->classes->c[k].max_tier, .node_ok = NULL};
    }
    r->cr = calloc(1, sizeof(*r->cr));
    if (r->cr)
        rebalance_class_rules_build(s->classes, r->t, r->cr);
    pthread_rwlock_unlock(&s->lock);
    if (rc == 0 && !r->dry_run)
        rebalance_apply_verdicts(rb, r, now);
    return rc;
}

/* Step 2, no state lock: the demands, the loads before, and (when some
 * direction is contended) the assignment, gated by do no harm in an
 * automatic round. On failure every flow keeps its path. */
static int round_assign(struct rebalance *rb, struct round *r, bool per_dst)
{
    const struct config *c = rb->cfg;
    r->path = calloc(r->n + 1, sizeof(uint32_t));
    r->af = calloc(r->n + 1, sizeof(*r->af));
    if (!r->path || !r->af)
        return -ENOMEM;
    rebalance_estimate(r);
    for (size_t i = 0; i < r->n; i++) {
        r->af[i] = (struct assign_flow){.src = r->f[i].src, .dst = r->f[i].dst, .gbps = r->f[i].gbps,
                                        .cls = r->f[i].cls < (int)r->npol ? r->f[i].cls : 0,
                                        .path = (uint32_t)r->f[i].path, .hash = (uint32_t)r->f[i].id,
                                        .movable = r->f[i].movable, .moved = r->f[i].moved_at > 0};
        r->path[i] = r->af[i].path;
    }
    struct assign_input in = {.t = r->t, .bg_gbps = r->bgc, .down = r->down, .closed = r->closed, .flows = r->af,
                              .nflows = (uint32_t)r->n, .pol = r->npol ? r->pol : NULL, .npol = r->npol};
    double *load = calloc(r->nd + 1, sizeof(double));
    r->before = r->after = load ? assign_loads(&in, r->path, load) : 0;
    free(load);
    rebalance_trace(r);
    if (r->nhot == 0 || r->n == 0)
        return 0;
    struct assign_params ap;
    assign_params_default(&ap);
    ap.max_moves = c->max_moves;
    ap.margin = c->hysteresis;
    struct assign_result res = {.path = r->path};
    int rc = per_dst ? granularity_assign(ASSIGN_TIERFLOW, &in, &ap, &res, r->err, sizeof(r->err))
                     : assign_run(ASSIGN_TIERFLOW, &in, &ap, &res, r->err, sizeof(r->err));
    if (rc < 0) {
        for (size_t i = 0; i < r->n; i++)
            r->path[i] = r->af[i].path;
        return rc;
    }
    r->after = res.max_util;
    log_debug("rebalance: assignment: max util %.2f -> %.2f moving %u flows (before do no harm)", r->before, r->after,
              round_moved(r));
    if (r->automatic) {
        r->after = rebalance_wait_for_held(r, &in, &ap, per_dst, r->path, r->after);
        r->after = rebalance_gate_moves(r, &in, r->path, c->hysteresis, r->after);
    }
    r->moved = round_moved(r);
    return 0;
}

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

/* Step 3: holds on a degraded fabric, one route per destination for the
 * backends that steer so, and the plan (every pinned live flow and the
 * class rules). A plan that cannot be built is a failure to act. */
static int round_plan(struct rebalance *rb, double now, struct round *r, bool per_dst, bool acts)
{
    int rc = 0;
    if (!r->dry_run)
        rebalance_mark_holds(r, r->path);
    if (per_dst && (rc = rebalance_group_pins(r, r->af, r->path)) == 0)
        r->moved = round_moved(r);
    if (rc == 0 && !r->cr)
        rc = -ENOMEM;
    if (rc == 0 && (rc = rebalance_build_plan(rb, r, r->path, r->cr, &r->plan, r->err, sizeof(r->err))) < 0) {
        char why[sizeof(r->err)];
        snprintf(why, sizeof(why), "plan: %.240s", r->err);
        tf_strlcpy(r->err, why, sizeof(r->err));
        if (acts && !r->dry_run)
            round_failed(rb, now, r->err);
        else
            log_warn("rebalance: %s", r->err);
    }
    return rc;
}

/* Step 4 (not in a dry run): the fence (only the proven leader acts), the
 * backend, and once it accepted the plan the pins, the unpins and the
 * settling of the directions a choice move touched. */
static int round_apply(struct rebalance *rb, double now, struct round *r, bool acts)
{
    int rc;
    if (rb->fence && (rc = rb->fence(rb->fence_arg, r->err, sizeof(r->err))) < 0) {
        r->moved = 0;
        return rc;
    }
    struct backend_result br = {0};
    if (rb->be && (rc = backend_apply(rb->be, &r->plan, &br)) < 0) {
        snprintf(r->err, sizeof(r->err), "backend: %.200s", br.error[0] ? br.error : backend_error(rb->be));
        round_failed(rb, now, r->err);
        return rc;
    }
    /* Installed, except what a switch cannot express (a selector its kernel
     * or iproute2 lacks): a failure to act as well, shown the same way for
     * as long as the policy asks for it. */
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
    r->accepted = true;
    r->applied = acts;
    rebalance_record_pins(rb, r, r->path, now);
    rebalance_unpin_apply(rb, r, now);
    /* Settle after choice moves only: a round that only took flows off
     * failed paths must let the next one improve on it. */
    bool chosen = false;
    for (size_t i = 0; i < r->n; i++)
        chosen |= rebalance_moved_by_choice(r, r->path, i);
    if (chosen)
        rebalance_start_settle(rb, r, r->path, now);
    plan_free(&rb->last);
    plan_init(&rb->last);
    plan_copy(&rb->last, &r->plan);
    return 0;
}

/* Step 5: the metrics, the event and the summary /status shows. */
static void round_report(struct rebalance *rb, double now, const struct round *r, int rc, double dur)
{
    if (!r->dry_run)
        metrics_round(rb->m, dur, r->accepted ? r->moved : 0);
    if (r->moved && (rc == 0 || r->dry_run)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "%s%u flow%s, max util %.2f -> %.2f", r->dry_run ? "would move " : "moved ",
                 r->moved, r->moved == 1 ? "" : "s", r->before, r->after);
        events_add_rebalance(rb->ev, now, r->dry_run ? "dry_run" : "rebalance", r->moved, r->before, r->after, msg);
    }
    pthread_mutex_lock(&rb->sum_mu);
    rb->sum = (struct rebalance_summary){.valid = true, .dry_run = r->dry_run, .applied = r->applied, .ts = now,
                                         .duration_s = dur, .util_before = r->before, .util_after = r->after,
                                         .moved = r->dry_run || rc == 0 ? r->moved : 0,
                                         .congested = (uint32_t)json_array_size(r->congested)};
    if (rc < 0 && !r->dry_run)
        tf_strlcpy(rb->sum.error, r->err[0] ? r->err : strerror(-rc), sizeof(rb->sum.error));
    pthread_mutex_unlock(&rb->sum_mu);
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

/* The round's result as docs/api.md documents it. */
static json_t *round_json(const struct round *r, double now, int rc, double dur)
{
    json_t *moves = json_array();
    for (size_t i = 0; r->arc == 0 && i < r->n; i++) {
        const struct snap *f = &r->f[i];
        if (r->path[i] == ASSIGN_NO_PATH || (int64_t)r->path[i] == f->path)
            continue;
        char id[24];
        snprintf(id, sizeof(id), "%016llx", (unsigned long long)f->id);
        const char *cls = f->cls >= 0 && f->cls < CLASSES_MAX && r->cls_name[f->cls] ? r->cls_name[f->cls] : "default";
        json_array_append_new(moves, json_pack("{ss ss ss ss sf sb sI sI so so}", "flow", id, "src", nm(r->t, f->src),
                                               "dst", nm(r->t, f->dst), "class", cls, "bps", f->gbps * 1e9,
                                               "starved", f->starved,
                                               "from_index", (json_int_t)f->path, "to_index", (json_int_t)r->path[i],
                                               "from", path_names(r->t, f->src, f->dst, (uint64_t)f->path),
                                               "to", path_names(r->t, f->src, f->dst, r->path[i])));
    }
    return json_pack("{sf sb sb sI sf sf sf sO so so so}", "ts", now, "dry_run", r->dry_run, "applied", r->applied,
                     "moved", (json_int_t)r->moved, "max_util_before", r->before, "max_util_after", r->after,
                     "duration_s", dur, "congested", r->congested, "moves", moves, "plan", plan_json(&r->plan),
                     "error", rc < 0 ? json_string(r->err[0] ? r->err : strerror(-rc)) : json_null());
}

/* One round, one at a time (mu): gather, assign, plan, apply, report. The
 * assignment stands even when no plan can express it (a topology without
 * interface addresses): it is reported, but nothing is pinned. */
static int run_round(struct rebalance *rb, double now, bool dry_run, bool automatic, json_t **out)
{
    pthread_mutex_lock(&rb->mu);
    double t0 = tf_now_mono();
    struct round r = {.automatic = automatic, .dry_run = dry_run};
    plan_init(&r.plan);
    bool per_dst = rb->be && backend_per_destination(rb->be);
    bool acts = rb->be && backend_acts(rb->be);
    int rc = round_gather(rb, now, &r);
    if (rc == 0)
        rc = round_assign(rb, &r, per_dst);
    r.arc = rc;
    if (rc == 0)
        rc = round_plan(rb, now, &r, per_dst, acts);
    if (r.arc < 0)
        r.moved = 0;
    if (rc == 0 && !dry_run)
        rc = round_apply(rb, now, &r, acts);
    double dur = tf_now_mono() - t0;
    round_report(rb, now, &r, rc, dur);
    if (out)
        *out = round_json(&r, now, rc, dur);
    rebalance_round_free(&r);
    pthread_mutex_unlock(&rb->mu);
    return rc;
}

int rebalance_run(struct rebalance *rb, double now, bool dry_run, json_t **out)
{
    return run_round(rb, now, dry_run, false, out);
}

int rebalance_auto(struct rebalance *rb, double now)
{
    return run_round(rb, now, false, true, NULL);
}

/* The ramp rule's projected fat load per direction for rebalance_contended:
 * the live fat flows as a round would take them (rebalance_flow_placed),
 * with their natural demands; ramp[i]: flow i ramping, as the caller found.
 * Read lock. */
static void contended_proj(const struct state *s, const uint8_t *ramp, double now, double *proj)
{
    struct snap *f = calloc(s->nflows + 1, sizeof(*f));
    size_t n = 0;
    for (size_t i = 0; f && i < s->nflows; i++) {
        const struct state_flow *sf = &s->flows[i];
        if (!rebalance_flow_placed(s, sf, now) || (f[n].ndirs = state_flow_dirs(s, sf, f[n].dirs, TOPO_MAX_HOPS)) <= 0)
            continue;
        f[n].src = sf->src_node;
        f[n].dst = sf->dst_node;
        f[n].meas = sf->bps / 1e9;
        f[n].ramp = ramp[i];
        n++;
    }
    if (f)
        rebalance_natural(s->topo, f, n, proj);
    free(f);
}

bool rebalance_contended(struct rebalance *rb, double now)
{
    struct state *s = rb->st;
    const struct config *c = rb->cfg;
    bool found = false;
    pthread_mutex_lock(&rb->mu);
    pthread_rwlock_rdlock(&s->lock);
    uint32_t nd = 2 * s->topo->nlinks;
    if (s->gen == rb->seen_gen || rebalance_dirs_ensure(rb, nd) < 0) {   /* nothing new since the last look */
        pthread_rwlock_unlock(&s->lock);
        pthread_mutex_unlock(&rb->mu);
        return false;
    }
    rb->seen_gen = s->gen;
    double *bps = calloc(nd + 1, sizeof(double)), *ce = calloc(nd + 1, sizeof(double));
    double *fat = calloc(nd + 1, sizeof(double)), *proj = calloc(nd + 1, sizeof(double));
    double *newest = calloc(nd + 1, sizeof(double));   /* the latest fat_since of its fat flows */
    uint32_t *nfat = calloc(nd + 1, sizeof(uint32_t)), *nramp = calloc(nd + 1, sizeof(uint32_t));
    uint8_t *ramps = calloc(s->nflows + 1, 1);
    if (bps && ce && fat && proj && newest && nfat && nramp && ramps) {
        state_dir_loads(s, now, bps, ce, nfat);
        for (size_t i = 0; i < s->nflows; i++) {
            const struct state_flow *f = &s->flows[i];
            uint32_t dirs[TOPO_MAX_HOPS];
            int n = f->fat && !state_flow_stale(s, f, now) ? state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS) : 0;
            ramps[i] = n > 0 && rebalance_flow_placed(s, f, now) && rebalance_flow_ramping(s, c, f, bps, ce, now);
            for (int j = 0; j < n; j++) {
                fat[dirs[j]] += f->bps / 1e9;
                nramp[dirs[j]] += ramps[i];
                if (f->fat_since > newest[dirs[j]])
                    newest[dirs[j]] = f->fat_since;
            }
        }
        /* Natural demands cost an estimate: only when a direction the
         * round did not see could be contended by the ramp rule. */
        bool ramp = false;
        for (uint32_t d = 0; d < nd && !ramp; d++)
            ramp = !rb->hot_seen[d] && !rebalance_dir_settling(rb, d, newest[d], now) &&
                   rebalance_ramp_candidate(c, state_dir_util(s, d, bps[d]), nramp[d], !s->dirs[d].up);
        if (ramp)
            contended_proj(s, ramps, now, proj);
        for (uint32_t d = 0; d < nd && !found; d++) {
            bool hot, down = !s->dirs[d].up;
            double bg = bps[d] / 1e9 - fat[d];
            struct rebalance_dir_view v = {.down = down, .bps = bps[d], .ce = ce[d], .bg = bg > 0 ? bg : 0,
                                           .nfat = nfat[d], .nramp = nramp[d], .proj = proj[d]};
            rebalance_dir_congested(s, c, d, &v, &hot);
            /* Failures have their own wake-up (the routing watch). */
            found = hot && !down && !rb->hot_seen[d] && !rebalance_dir_settling(rb, d, newest[d], now);
        }
    }
    pthread_rwlock_unlock(&s->lock);
    pthread_mutex_unlock(&rb->mu);
    free(bps);
    free(ce);
    free(fat);
    free(proj);
    free(newest);
    free(nfat);
    free(nramp);
    free(ramps);
    return found;
}
