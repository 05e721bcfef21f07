/*
 * rebalance_pins: from the round's paths to the plan and back to the state.
 * The plan holds every pinned live flow (moved, held where it is on a
 * degraded fabric, or pinned earlier) and the class rules, so the backend
 * converges to the whole desired state each round; the pins are written
 * to the state only after the backend accepted the plan, so that the state
 * never claims a path the fabric does not have.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/rebalance_int.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/metrics.h"
#include "policy/granularity.h"

/* Whether flow i of the round is on a path that crosses a down direction
 * (any move of it is forced). */
bool rebalance_forced(const struct round *r, size_t i)
{
    for (int j = 0; j < r->f[i].ndirs; j++)
        if (r->down[r->f[i].dirs[j]])
            return true;
    return false;
}

bool rebalance_closed(const struct round *r, const struct topo *t, uint32_t src, uint32_t dst, int64_t idx)
{
    if (!r->any_closed)   /* the usual round: no path to walk */
        return false;
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = idx < 0 ? 0 : topo_path_dirs(t, src, dst, (uint64_t)idx, dirs, TOPO_MAX_HOPS);
    for (int j = 0; j < n; j++)
        if (r->closed[dirs[j]])
            return true;
    return false;
}

/*
 * A spine out of the controller's view (its session down: the switches
 * still route through it, the controller can neither pin nor watch there)
 * leaves tierflow a part of the paths ECMP uses. Pins kept on the paths
 * still in view would then share them with the flows ECMP hashes there
 * (those whose pins went with the spine's view, new ones), and no round
 * can undo that: test_bgp_backend once measured 53.9 Mbit/s so, against
 * ECMP's 77.3. So the flows between two ends that such a direction
 * separates are left to ECMP altogether while it lasts: their pins go, no
 * round moves or pins them, their load is background. Walks every path
 * of the pair, only while something is out of view.
 */
bool rebalance_ecmp_only(const struct round *r, uint32_t src, uint32_t dst)
{
    if (!r->any_unseen)
        return false;
    uint32_t dirs[TOPO_MAX_HOPS];
    uint64_t n = topo_path_count(r->t, src, dst);
    for (uint64_t i = 0; i < n; i++) {
        int k = topo_path_dirs(r->t, src, dst, i, dirs, TOPO_MAX_HOPS);
        for (int j = 0; j < k; j++)
            if (r->unseen[dirs[j]])
                return true;
    }
    return false;
}

/* The class rules of the policy (rebalance_int.h). Read lock. */
void rebalance_class_rules_build(const struct classes *cs, const struct topo *t, struct rebalance_class_rules *cr)
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
int rebalance_group_pins(struct round *r, const struct assign_flow *af, uint32_t *path)
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

int rebalance_build_plan(struct rebalance *rb, const struct round *r, const uint32_t *path,
                      const struct rebalance_class_rules *cr, struct plan *out, char *err, size_t errlen)
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
void rebalance_unpin_apply(struct rebalance *rb, const struct round *r, double now)
{
    if (!r->nunpin)
        return;
    struct state *s = rb->st;
    size_t aged = 0, failed = 0, unseen = 0, said = 0;
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
        f->move_bps = 0;   /* the fabric, not a move, changed its path: no verdict due */
        u->why == UNPIN_FAILED ? failed++ : u->why == UNPIN_UNSEEN ? unseen++ : aged++;
        if (said++ >= REBALANCE_UNPIN_EVENTS)
            continue;
        char a[64], b[64];
        events_add(rb->ev, now, "unpinned", "flow %016llx %s:%u -> %s:%u (proto %u): %s%.0f s", (unsigned long long)u->id,
                   tf_addr_str(u->k.af, u->k.src, a, sizeof(a)), u->k.sport,
                   tf_addr_str(u->k.af, u->k.dst, b, sizeof(b)), u->k.dport, u->k.proto,
                   u->why == UNPIN_FAILED   ? "its path failed while unobserved; last seen "
                   : u->why == UNPIN_UNSEEN ? "a path it may take is out of the controller's view (left to "
                                              "the switches' ECMP); last seen "
                                            : "unobserved or not fat for ",
                   u->age);
    }
    s->gen++;
    pthread_rwlock_unlock(&s->lock);
    if (said > REBALANCE_UNPIN_EVENTS)
        events_add(rb->ev, now, "unpinned", "%zu more pins removed (%zu unobserved too long, %zu on failed paths, "
                   "%zu on paths out of view in all)", said - REBALANCE_UNPIN_EVENTS, aged, failed, unseen);
}

/* "L1 S2 L2", for logs. */
void rebalance_path_str(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, char *buf, size_t len)
{
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = topo_path_dirs(t, src, dst, idx, dirs, TOPO_MAX_HOPS);
    size_t u = (size_t)snprintf(buf, len, "%s", n > 0 ? nm(t, src) : "?");
    for (int i = 0; i < n && u < len; i++)
        u += (size_t)snprintf(buf + u, len - u, " %s", nm(t, topo_dir_to(t, dirs[i])));
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
void rebalance_mark_holds(struct round *r, const uint32_t *path)
{
    for (size_t i = 0; r->degraded && i < r->n; i++) {
        struct snap *f = &r->f[i];
        if (f->pin >= 0 || f->path < 0 || f->withdrawn || (path[i] != ASSIGN_NO_PATH && (int64_t)path[i] != f->path))
            continue;
        /* Not on a path out of view: no pin could hold there. */
        f->hold = !rebalance_forced(r, i) && !rebalance_closed(r, r->t, f->src, f->dst, f->path);
    }
}

void rebalance_record_pins(struct rebalance *rb, const struct round *r, const uint32_t *path, double now)
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
            rebalance_path_str(r->t, r->f[i].src, r->f[i].dst, (uint64_t)r->f[i].path, from, sizeof(from));
            rebalance_path_str(r->t, r->f[i].src, r->f[i].dst, path[i], to, sizeof(to));
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
        f->move_bps = rebalance_forced(r, i) ? 0 : r->f[i].meas * 1e9;   /* judged once the reports after it are in */
        if (!rebalance_forced(r, i))
            f->last_moved = now;
        f->moves++;
        f->starve_moved |= r->f[i].starved;
        if (r->f[i].starved && rb->m)
            atomic_fetch_add(&rb->m->starved_moves, 1);
    }
    s->gen++;
    pthread_rwlock_unlock(&s->lock);
}
