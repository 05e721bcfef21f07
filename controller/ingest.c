/*
 * ingest: see ingest.h. A batch that ingest_parse validated is resolved
 * against the topology (names to nodes, interfaces to link directions,
 * flows to paths) under the read lock, judged against what its links can
 * carry and against its time and sender, and applied under the write lock.
 * Every refusal is counted atomically (the counters' readers hold no lock).
 */
#include "controller/ingest.h"

#include <errno.h>
#include <math.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/ratelog.h"
#include "common/reportspec.h"
#include "common/util.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/ingest_parse.h"
#include "controller/ingest_schema.h"

/* An interface name, or, at a link end the topology gives no interface name
 * (generated topologies), the name of the node at the far end. */
int ingest_dir_of_if(const struct topo *t, uint32_t node, const char *ifname, uint32_t *dir)
{
    if (topo_dir_by_if(t, node, ifname, dir) == 0)
        return 0;
    uint32_t peer = topo_node_by_name(t, ifname);
    if (peer == TOPO_NONE || topo_dir_between(t, node, peer, dir) < 0)
        return -ENOENT;
    const struct topo_link *l = &t->links[topo_dir_link(*dir)];
    const char *named = topo_dir_is_down(*dir) ? l->hi_if : l->lo_if;
    return named[0] ? -ENOENT : 0;
}

/* ifname added to a list of n unmapped interfaces unless it is there
 * (at most STATE_UNMAPPED_MAX); the list's new length. */
static size_t name_once(char (*names)[STATE_IF_LEN], size_t n, const char *ifname)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], ifname) == 0)
            return n;
    if (n < STATE_UNMAPPED_MAX)
        tf_strlcpy(names[n++], ifname, STATE_IF_LEN);
    return n;
}

/* In the probe's status and in the reply. */
static void note_unmapped(struct state_probe *p, struct ingest_result *res, const char *ifname)
{
    p->nunmapped = (uint8_t)name_once(p->unmapped, p->nunmapped, ifname);
    res->nunmapped = name_once(res->unmapped, res->nunmapped, ifname);
}

/* A report resolved against the topology, before the write lock: link and
 * flow directions, flow locations, CE per link (which depends on the
 * report alone), and which entries the link they are on refuses. */
struct resolved {
    uint32_t node;
    uint32_t *link_dir;          /* nlinks, TOPO_NONE unmapped */
    double *link_ce;
    bool *link_bad, *flow_bad;   /* beyond what their link carries (entry_bound) */
    uint32_t *egress;            /* nflows, TOPO_NONE unmapped */
    struct state_loc *loc;       /* nflows */
};

/* Interface -> direction for one report; probes use a handful of interfaces,
 * so remembering the last few saves the two hash lookups per flow. */
struct if_memo {
    unsigned n;
    char name[8][STATE_IF_LEN];
    uint32_t dir[8];
};

static uint32_t memo_dir(struct if_memo *m, const struct topo *t, uint32_t node, const char *ifname)
{
    for (unsigned i = 0; i < m->n; i++)
        if (strcmp(m->name[i], ifname) == 0)
            return m->dir[i];
    uint32_t dir;
    if (ingest_dir_of_if(t, node, ifname, &dir) < 0)
        dir = TOPO_NONE;
    unsigned k = m->n < 8 ? m->n++ : 7;
    tf_strlcpy(m->name[k], ifname, STATE_IF_LEN);
    m->dir[k] = dir;
    return dir;
}

static void resolve_report(struct state *s, const struct topo *t, uint32_t node, const struct ingest_report *r,
                           struct resolved *x)
{
    struct if_memo m = {0};
    x->node = node;
    for (size_t i = 0; i < r->nflows; i++) {
        x->egress[i] = memo_dir(&m, t, node, r->flows[i].ifname);
        x->flow_bad[i] = x->egress[i] != TOPO_NONE && ingest_flow_bound(t, x->egress[i], &r->flows[i], NULL, 0);
        if (!state_loc_cached(s, &r->flows[i].k, node, x->egress[i], &x->loc[i]))
            state_loc_resolve(t, &r->flows[i].k, node, x->egress[i], &x->loc[i]);
    }
    for (size_t j = 0; j < r->nlinks; j++) {
        x->link_dir[j] = memo_dir(&m, t, node, r->links[j].ifname);
        x->link_bad[j] = x->link_dir[j] != TOPO_NONE &&
                         ingest_link_bound(t, x->link_dir[j], &r->links[j], r->interval_s, NULL, 0);
        double bps = 0, ce = 0;
        for (size_t i = 0; i < r->nflows; i++)
            if (!x->flow_bad[i] && strcmp(r->flows[i].ifname, r->links[j].ifname) == 0) {
                bps += r->flows[i].bps;
                ce += r->flows[i].bps * r->flows[i].ce_frac;
            }
        x->link_ce[j] = bps > 0 ? ce / bps : 0;
    }
}

/* An entry the topology's bounds refuse, named by its path in the body. */
static void refuse_bound(struct ingest_refusals *r, const struct ingest_batch *b, size_t report, const char *list,
                         size_t idx, const char *key, const char *why)
{
    struct ingest_error e = {0};
    char at[32] = "";
    if (!b->lone)
        snprintf(at, sizeof(at), "reports[%zu].", report);
    snprintf(e.path, sizeof(e.path), "%s%s[%zu].%s", at, list, idx, key);
    snprintf(e.msg, sizeof(e.msg), "%s: %s", e.path, why);
    ingest_refusals_add(r, &e);
}

/* A probe saw f arrive at node by in_ifname with holes in the interval
 * ending at ts: kept by arrival direction (the reverse of the one leaving
 * node by that interface), in the slot that direction had or the oldest. */
static void note_arrival(const struct topo *t, struct state_flow *f, uint32_t node, const struct ingest_flow *in,
                         double ts)
{
    uint32_t out;
    if (!in->in_ifname[0] || ingest_dir_of_if(t, node, in->in_ifname, &out) < 0)
        return;
    uint32_t dir = out ^ 1;
    int k = 0;
    for (int i = 0; i < TOPO_MAX_HOPS; i++) {
        if (f->arr[i].ts > 0 && f->arr[i].dir == dir) {
            k = i;
            break;
        }
        if (f->arr[i].ts < f->arr[k].ts)
            k = i;
    }
    f->arr[k] = (struct state_arrival){dir, in->holes < UINT32_MAX ? (uint32_t)in->holes : UINT32_MAX, ts};
}

static void apply_flow(struct state *s, uint32_t node, const struct ingest_flow *in, uint32_t egress,
                       const struct state_loc *loc, double ts, double since, bool partial, double now,
                       struct ingest_result *res)
{
    bool inserted;
    struct state_flow *f = state_flow_upsert(s, &in->k, &inserted);
    if (!f) {
        res->dropped_full++;
        return;
    }
    if (egress == TOPO_NONE) {
        res->unmapped_flows++;
        note_unmapped(&s->probes[node], res, in->ifname);
    }
    /* Several probes see one flow: merged, not overwritten (a remnant on a
     * path the flow has left is dropped whole). */
    if (!state_flow_observe(s, f, inserted, node, egress, in->ifname, loc, in->bps, since, now)) {
        res->flows++;
        return;
    }
    /* A partial interval's rates (a fraction of a second at a probe's
     * stop) read flows far below or above their rate, and a round on them
     * moved settled flows again (docs/lab.md): a known flow keeps its own. */
    if (inserted || !partial) {
        /* Its first report, also for a flow a takeover adopted from the
         * backend before any report (rebalance_adopt): without one it
         * could never be taken for starved. */
        if (inserted || f->seen_since <= 0)
            f->seen_since = now;
        if (in->fat && (inserted || !f->fat))
            f->fat_since = now;
        if (in->fat)
            f->starve_moved = false;
        if (in->pkts > 0)
            f->pkt_bytes = (double)in->bytes / (double)in->pkts;
        f->fat = in->fat;
        f->bps = in->bps;
    }
    f->source = in->source;
    f->sampling = in->sampling;
    f->ce_frac = in->ce_frac;
    f->cnp = in->cnp;
    f->retx_pkts = in->retx_pkts;
    f->tail_retx = in->tail_retx;
    f->psn_oos = in->psn_oos;
    f->naks = in->naks;
    note_arrival(s->topo, f, node, in, ts);
    f->last_seen = now;
    /* Again only when an input changed: its ends (jobs are by node), the
     * DSCP it is matched on, or the jobs and classes themselves. */
    if (inserted || f->cls_gen != s->cls_gen || f->cls_src != f->src_node || f->cls_dst != f->dst_node ||
        f->dscp != in->dscp) {
        f->dscp = in->dscp;
        state_flow_classify(s, f);
    }
    res->flows++;
    res->fat += in->fat;
}

/* A partial interval's link rates are as skewed as its flows' (apply_flow),
 * and against the flows' kept rates they would read as background beside
 * lone fat flows, which a round takes for contention (bench 50's fat tree
 * moved 6 settled flows on such background at a stop, docs/lab.md). A
 * direction measured before keeps its rate; its byte count, counters,
 * queue and state still apply. */
static void link_rate(struct state_dir *d, double bps, bool partial, double since)
{
    if (!partial || !d->measured) {
        d->bps = bps;
        d->rate_since = since;
    }
}

static void apply_link(struct state *s, uint32_t node, const struct ingest_link *l, uint32_t dir, double ce,
                       double interval_s, double since, bool partial, double now, struct events *ev,
                       struct ingest_result *res)
{
    if (dir == TOPO_NONE) {
        note_unmapped(&s->probes[node], res, l->ifname);
        return;
    }
    struct state_dir *d = &s->dirs[dir], *rev = &s->dirs[dir ^ 1];
    link_rate(d, l->tx_bps, partial, since);
    d->tx_bytes += l->tx_bps * interval_s / 8;
    d->drops = l->drops;
    d->errors = l->errors;
    d->carrier_changes = l->carrier_changes;
    d->qdisc_drops = l->qdisc_drops;
    d->queue_known = l->has_queue;
    /* The delay, not the bytes: a backlog means as much on a 1-Gb/s port as
     * ten times it on a 10-Gb/s one. */
    double cap = topo_dir_gbps(s->topo, dir) * 1e9;
    d->queue_delay_prev = d->queue_delay;
    d->delay_prev_known = d->delay_known;
    d->delay_known = l->has_backlog && cap > 0;
    d->queue_delay = d->delay_known ? (double)l->qdisc_backlog * 8 / cap : 0;
    if (d->queue_delay > 0 && log_enabled(LOG_DEBUG))
        log_debug("ingest: %s -> %s: queue %.1f ms (%.1f ms the report before)",
                  s->topo->nodes[topo_dir_from(s->topo, dir)].name, s->topo->nodes[topo_dir_to(s->topo, dir)].name,
                  1e3 * d->queue_delay, 1e3 * d->queue_delay_prev);
    d->ce_frac = ce;
    d->measured = true;
    d->probe = node;
    d->last_update = now;
    /* The reverse direction belongs to the far end's probe when it has one. */
    if (l->has_rx && (!rev->measured || rev->probe == node || state_probe_stale(s, rev->probe, now))) {
        link_rate(rev, l->rx_bps, partial, since);
        rev->tx_bytes += l->rx_bps * interval_s / 8;
        rev->measured = true;
        rev->queue_known = false;   /* its queue is upstream of these counters */
        rev->delay_known = rev->delay_prev_known = false;
        rev->queue_delay = rev->queue_delay_prev = 0;
        rev->probe = node;
        rev->last_update = now;
    }
    bool up = !l->down;
    if (d->probe_up != up && ev) {
        const struct topo *t = s->topo;
        char said[64] = "down";
        if (up)
            snprintf(said, sizeof(said), "up; usable after %.1f s hold-down", s->link_holddown);
        events_add(ev, now, up ? "link_up" : "link_down", "%s -> %s (%s %s) reported %s",
                   t->nodes[topo_dir_from(t, dir)].name, t->nodes[topo_dir_to(t, dir)].name, t->nodes[node].name,
                   l->ifname, said);
    }
    /* A link its probe gives back is held off for link_holddown like one
     * routing gives back: a link that flaps faster than routing notices
     * (or on a backend that does not watch the local uplinks: bgp) would
     * otherwise take pins between flaps, and a restore would be planned
     * before the other end's routing is back (a lab run moved 8 of 9
     * flows then, and one more once routing returned). */
    if (up && !d->probe_up)
        d->back_at = rev->back_at = now;
    d->probe_up = rev->probe_up = up;
    state_dir_eval(s, dir, now);
    state_dir_eval(s, dir ^ 1, now);
    res->links++;
}

/* Probe names to nodes; an unknown one fails the whole batch. */
static int resolve_nodes(const struct topo *t, const struct ingest_batch *b, uint32_t *nodes, struct ingest_error *e)
{
    for (size_t i = 0; i < b->n; i++) {
        nodes[i] = topo_node_by_name(t, b->r[i].probe);
        if (nodes[i] != TOPO_NONE)
            continue;
        tf_strlcpy(e->probe, b->r[i].probe, sizeof(e->probe));
        if (b->n > 1)
            return ingest_error_set(e, INGEST_UNKNOWN, "reports[%zu].probe: '%s' is not a node of topology '%s'", i,
                        b->r[i].probe, t->name);
        return ingest_error_set(e, INGEST_UNKNOWN, "probe: '%s' is not a node of topology '%s'", b->r[i].probe, t->name);
    }
    return 0;
}

/* Caller holds the state lock (read or write); t is s->topo. */
static int resolve_batch(struct state *s, const struct ingest_batch *b, struct resolved *x, struct ingest_error *e)
{
    uint32_t nodes[INGEST_MAX_REPORTS];
    int rc = resolve_nodes(s->topo, b, nodes, e);
    for (size_t i = 0; i < b->n && rc == 0; i++)
        resolve_report(s, s->topo, nodes[i], &b->r[i], &x[i]);
    return rc;
}

/* ---- whether a report may be applied: its time, its sender ------------ */

/* Counters are read without the lock (/metrics, /status): every increment
 * is atomic, under the lock or not. */
static void count(uint64_t *c)
{
    __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* A request or a report refused: the one rule for reports_rejected and the
 * counter of its reason. */
static void count_refusal(struct state *s, enum ingest_err kind)
{
    count(&s->ingest_refused[kind]);
    count(&s->reports_rejected);
}

/* Who sent a report: the client's address, and the report's instance when
 * it names one (two processes on one host tell themselves apart by it). */
static void sender_id(const char *from, const struct ingest_report *r, char *id, size_t len)
{
    snprintf(id, len, "%s%s%s", from, r->instance[0] ? " " : "", r->instance);
}

/* Whether report r (path at: "report" or "reports[2]") may be applied
 * under its probe's name p, sent by id (NULL: not checked), at now; else
 * why not. The holder of a name keeps it while it is fresh (state's
 * staleness); a report's age is measured against the controller's clock,
 * so every bound on it allows the configured clock skew. Write lock. */
static enum ingest_err report_verdict(const struct state *s, const struct state_probe *p,
                                      const struct ingest_report *r, const char *at, const struct ingest_opts *o,
                                      const char *id, double now, char *why, size_t len)
{
    bool holder_fresh = p->sender[0] && p->last_seen > 0 && now - p->last_seen <= s->stale_after;
    if (id && holder_fresh && strcmp(p->sender, id)) {
        snprintf(why, len, "%s.probe: '%s' is reported by %s (last %.1f s ago); reports from %s under it are "
                 "refused until that sender has been silent for %g s", at, r->probe, p->sender, now - p->last_seen,
                 id, s->stale_after);
        return INGEST_CONFLICT;
    }
    if (!o || !o->check_ts || r->ts <= 0)
        return INGEST_OK;
    if (r->ts > now + o->clock_skew) {
        snprintf(why, len, "%s.ts: %.3f is %.1f s ahead of the controller's clock (ingest.clock_skew allows %g s)",
                 at, r->ts, r->ts - now, o->clock_skew);
        return INGEST_FUTURE;
    }
    if (now - r->ts > s->stale_after + o->clock_skew) {
        snprintf(why, len, "%s.ts: %.3f is %.1f s old, beyond the staleness window (%g s, plus ingest.clock_skew "
                 "%g s): not applied as current", at, r->ts, now - r->ts, s->stale_after, o->clock_skew);
        return INGEST_STALE;
    }
    bool same = !id || !p->sender[0] || !strcmp(p->sender, id); /* a new holder starts its own clock */
    if (same && p->last_ts > 0 && r->ts < p->last_ts) {
        snprintf(why, len, "%s.ts: %.3f is older than the last report applied for '%s' (%.3f, %.3f s later): not "
                 "applied over it", at, r->ts, r->probe, p->last_ts, p->last_ts - r->ts);
        return INGEST_OUT_OF_ORDER;
    }
    return INGEST_OK;
}

/* A report refused for its time or sender: counted, kept in res; a sender
 * refused for a name another holds is a probe_conflict event the first
 * time, and again only after it stopped trying for a staleness window. */
static void refuse_report(struct state *s, struct state_probe *p, const struct ingest_report *r, size_t index,
                          enum ingest_err kind, const char *id, const char *why, double now, struct events *ev,
                          struct ingest_result *res)
{
    count_refusal(s, kind);
    if (kind == INGEST_CONFLICT) {
        if (strcmp(p->rival, id) || now - p->rival_seen > s->stale_after) {
            count(&s->probe_conflicts);
            tf_strlcpy(p->rival, id, sizeof(p->rival));
            if (ev)
                events_add(ev, now, "probe_conflict", "probe %s: %s reports under the name %s holds; refused "
                           "(409) until %s is silent for %g s", r->probe, id, p->sender, p->sender, s->stale_after);
        }
        p->rival_seen = now;
    }
    res->refused_reports[res->nrefused].index = index;
    res->refused_reports[res->nrefused].kind = kind;
    tf_strlcpy(res->refused_reports[res->nrefused].probe, r->probe, INGEST_NAME_LEN);
    tf_strlcpy(res->refused_reports[res->nrefused].msg, why, INGEST_WHY_LEN);
    res->nrefused++;
}

/* The name is id's from now on (a first sender, or one taking over from a
 * holder gone stale: the newest time applied was the other's clock). */
static void take_name(struct state_probe *p, const struct ingest_report *r, const char *id, double now)
{
    if (!strcmp(p->sender, id))
        return;
    if (p->sender[0])
        log_info("probe %s: now reported by %s (%s silent for %.1f s)", r->probe, id, p->sender,
                   now - p->last_seen);
    tf_strlcpy(p->sender, id, sizeof(p->sender));
    p->last_ts = 0;
}

int ingest_apply(struct state *s, const struct ingest_batch *b, double now, struct events *ev,
                 struct ingest_result *res, struct ingest_error *e)
{
    return ingest_apply_from(s, b, NULL, NULL, now, ev, res, e);
}

/* Scratch for the resolution of a whole batch: one block per array, each
 * report's struct resolved pointing into them. */
struct scratch {
    struct resolved x[INGEST_MAX_REPORTS];
    uint32_t *link_dir, *egress;
    double *link_ce;
    bool *bad;
    struct state_loc *loc;
};

static void scratch_free(struct scratch *sc)
{
    free(sc->link_dir);
    free(sc->egress);
    free(sc->link_ce);
    free(sc->bad);
    free(sc->loc);
}

static int scratch_alloc(struct scratch *sc, const struct ingest_batch *b, struct ingest_error *e)
{
    size_t nl = 0, nf = 0;
    for (size_t i = 0; i < b->n; i++) {
        nl += b->r[i].nlinks;
        nf += b->r[i].nflows;
    }
    sc->link_dir = malloc((nl + 1) * sizeof(*sc->link_dir));
    sc->egress = malloc((nf + 1) * sizeof(*sc->egress));
    sc->link_ce = malloc((nl + 1) * sizeof(*sc->link_ce));
    sc->bad = malloc(nl + nf + 1);
    sc->loc = malloc((nf + 1) * sizeof(*sc->loc));
    if (!sc->link_dir || !sc->egress || !sc->link_ce || !sc->loc || !sc->bad) {
        scratch_free(sc);
        return ingest_error_set(e, INGEST_BAD_FIELD, "out of memory for %zu flows", nf);
    }
    for (size_t i = 0, ol = 0, of = 0; i < b->n; i++) {
        sc->x[i] = (struct resolved){.link_dir = sc->link_dir + ol, .link_ce = sc->link_ce + ol,
                                     .link_bad = sc->bad + ol, .flow_bad = sc->bad + nl + of,
                                     .egress = sc->egress + of, .loc = sc->loc + of};
        ol += b->r[i].nlinks;
        of += b->r[i].nflows;
    }
    return 0;
}

/* A report this much shorter than its probe's last is a cut interval.
 * Not a half: tierflow-probe's look at mid-interval closes a whole report of
 * half an interval (probe.c), a few ms either way, and that one's rates are
 * as good as any (docs/telemetry.md). */
#define INGEST_CUT_SHARE 0.4

/* Report i's entries into the state (write lock), each refused alone when
 * its link's bounds say so; then the probe is alive again. */
static void apply_report(struct state *s, const struct ingest_batch *b, size_t i, const struct resolved *x,
                         struct state_probe *p, double now, struct events *ev, struct ingest_result *res)
{
    const struct topo *t = s->topo;
    const struct ingest_report *r = &b->r[i];
    char why[INGEST_WHY_LEN];
    /* Cut short: said by the probe (its stop's or reload's flush, however
     * long), or under INGEST_CUT_SHARE of its last interval (a probe that
     * does not say). */
    bool partial = r->partial || (r->interval_s > 0 && r->interval_s < p->last_interval * INGEST_CUT_SHARE);
    if (!r->partial)
        p->last_interval = r->interval_s;
    /* The interval began about its length before it arrived (on our clock:
     * a probe's may be off). A link's rate without one says nothing of when
     * it began: no proof that a move's settle is over (rate_since). */
    double since = now - (r->interval_s > 0 ? r->interval_s : 0);
    p->nunmapped = 0;
    for (size_t j = 0; j < r->nlinks; j++) {
        const char *key = x->link_bad[j] ? ingest_link_bound(t, x->link_dir[j], &r->links[j], r->interval_s, why,
                                                      sizeof(why)) : NULL;
        if (key)
            refuse_bound(&res->refused, b, i, "links", r->links[j].idx, key, why);
        else
            apply_link(s, x->node, &r->links[j], x->link_dir[j], x->link_ce[j], r->interval_s,
                       r->interval_s > 0 ? since : -INFINITY, partial, now, ev, res);
    }
    for (size_t j = 0; j < r->nflows; j++) {
        const char *key = x->flow_bad[j] ? ingest_flow_bound(t, x->egress[j], &r->flows[j], why, sizeof(why)) : NULL;
        if (key) {
            refuse_bound(&res->refused, b, i, "flows", r->flows[j].idx, key, why);
            res->refused_flows++;
        } else {
            apply_flow(s, x->node, &r->flows[j], x->egress[j], &x->loc[j], r->ts > 0 ? r->ts : now, since,
                       partial, now, res);
        }
    }
    if (p->stale && ev)
        events_add(ev, now, "probe_alive", "probe %s reports again", r->probe);
    p->stale = false;
    p->last_seen = now;
    p->reports++;
    tf_strlcpy(res->probes[res->accepted], r->probe, INGEST_NAME_LEN);
    res->accepted++;
}

/* Report i judged for its time and sender, then applied or refused
 * (write lock). */
static void admit_report(struct state *s, const struct ingest_batch *b, size_t i, const struct resolved *x,
                         const struct ingest_opts *o, const char *from, double now, struct events *ev,
                         struct ingest_result *res)
{
    const struct ingest_report *r = &b->r[i];
    struct state_probe *p = &s->probes[x->node];
    char at[32], id[STATE_SENDER_LEN] = "", why[INGEST_WHY_LEN];
    snprintf(at, sizeof(at), b->lone ? "report" : "reports[%zu]", i);
    if (from)
        sender_id(from, r, id, sizeof(id));
    enum ingest_err v = report_verdict(s, p, r, at, o, from ? id : NULL, now, why, sizeof(why));
    if (v != INGEST_OK) {
        refuse_report(s, p, r, i, v, id, why, now, ev, res);
        return;
    }
    if (from)
        take_name(p, r, id, now);
    if (r->ts > p->last_ts)
        p->last_ts = r->ts;
    state_view_heard(s, r->interval_s, now);
    if (r->ts <= 0) {
        res->no_ts++;
        count(&s->reports_no_ts);
    }
    apply_report(s, b, i, x, p, now, ev, res);
}

int ingest_apply_from(struct state *s, const struct ingest_batch *b, const struct ingest_opts *o, const char *from,
                      double now, struct events *ev, struct ingest_result *res, struct ingest_error *e)
{
    memset(res, 0, sizeof(*res));
    memset(e, 0, sizeof(*e));
    res->refused = b->refused;
    struct scratch sc;
    int rc = scratch_alloc(&sc, b, e);
    if (rc)
        return rc;
    /* Path resolution is the costly part; the topology is immutable, so it
     * runs under the read lock, beside other readers and other ingests. */
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    rc = resolve_batch(s, b, sc.x, e);
    pthread_rwlock_unlock(&s->lock);

    pthread_rwlock_wrlock(&s->lock);
    if (rc == 0 && s->topo != t) /* reloaded in between: resolve again */
        rc = resolve_batch(s, b, sc.x, e);
    for (size_t i = 0; i < b->n && rc == 0; i++)
        admit_report(s, b, i, &sc.x[i], o, from, now, ev, res);
    if (rc == 0) {
        s->reports_total += res->accepted;
        s->gen++;
        __atomic_add_fetch(&s->entries_refused, res->refused.n, __ATOMIC_RELAXED);
    } else {
        count_refusal(s, e->kind);
    }
    pthread_rwlock_unlock(&s->lock);
    scratch_free(&sc);
    return rc;
}

/* ---- POST /api/v1/reports --------------------------------------------- */

/* The refusals, catalogued once: the API's error code, the HTTP status,
 * the metric's reason label (docs/api.md and docs/telemetry.md show them). */
static const struct {
    const char *code, *reason;
    unsigned status;
} err_table[INGEST_ERR_N] = {
    [INGEST_OK] = {"ok", "ok", 200},
    [INGEST_BAD_JSON] = {"bad_json", "bad_json", 400},
    [INGEST_BAD_FIELD] = {"bad_request", "bad_field", 400},
    [INGEST_TOO_MANY] = {"payload_too_large", "too_large", 413},
    [INGEST_UNKNOWN] = {"bad_request", "unknown_probe", 400},
    [INGEST_STALE] = {"stale_report", "stale", 422},
    [INGEST_FUTURE] = {"future_report", "future", 422},
    [INGEST_OUT_OF_ORDER] = {"out_of_order", "out_of_order", 409},
    [INGEST_CONFLICT] = {"probe_conflict", "probe_conflict", 409},
};
_Static_assert(INGEST_ERR_N <= STATE_INGEST_REASONS, "state keeps a counter per reason");

const char *ingest_err_code(enum ingest_err k)
{
    return k < INGEST_ERR_N ? err_table[k].code : "internal";
}

const char *ingest_err_reason(enum ingest_err k)
{
    return k < INGEST_ERR_N ? err_table[k].reason : "internal";
}

unsigned ingest_err_status(enum ingest_err k)
{
    return k < INGEST_ERR_N ? err_table[k].status : 500;
}

void ingest_opts_from_config(const struct config *c, struct ingest_opts *o)
{
    o->max_flows = (size_t)c->max_flows_per_report;
    o->check_ts = strcmp(c->ingest_timestamps, "ignore") != 0;
    o->clock_skew = c->clock_skew;
}

/* Every refusal is logged with the probe's name, the sender and the
 * reason, at most once per INGEST_LOG_EVERY_S for one (sender, probe,
 * reason): a probe refused every second writes one line a minute, saying
 * how many it held back. Process-wide, like the log it guards. */
static struct ratelog refusal_log = RATELOG_INIT(INGEST_LOG_EVERY_S);

static void log_refusal(const char *from, const char *probe, const char *reason, double now, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void log_refusal(const char *from, const char *probe, const char *reason, double now, const char *fmt, ...)
{
    char key[STATE_SENDER_LEN + INGEST_NAME_LEN + 32], msg[1024], more[80] = "";
    uint64_t held;
    snprintf(key, sizeof(key), "%s|%s|%s", from, probe, reason);
    if (!ratelog_pass(&refusal_log, key, now, &held))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (held)
        snprintf(more, sizeof(more), " (%llu more like it since the last line)", (unsigned long long)held);
    log_warn("%s%s", msg, more);
}

/* A request or a report refused, logged as such. */
static void log_report_refused(const char *who, enum ingest_err kind, const char *probe, const char *msg, double now)
{
    log_refusal(who, probe, ingest_err_reason(kind), now, "report refused (%u %s): probe %s from %s: %s",
                ingest_err_status(kind), ingest_err_code(kind), probe[0] ? probe : "?", who, msg);
}

static json_t *error_json(enum ingest_err kind, const char *msg)
{
    return json_pack("{s{ss ss}}", "error", "code", ingest_err_code(kind), "message", msg);
}

static json_t *refused_reports_json(const struct ingest_result *res)
{
    json_t *a = json_array();
    for (size_t i = 0; i < res->nrefused; i++)
        json_array_append_new(a, json_pack("{sI ss ss ss}", "index", (json_int_t)res->refused_reports[i].index,
                                           "probe", res->refused_reports[i].probe, "code",
                                           ingest_err_code(res->refused_reports[i].kind), "message",
                                           res->refused_reports[i].msg));
    return a;
}

static json_t *result_json(const struct ingest_result *res)
{
    json_t *probes = json_array(), *un = json_array(), *ref = json_array();
    for (size_t i = 0; i < res->accepted; i++)
        json_array_append_new(probes, json_string(res->probes[i]));
    for (size_t i = 0; i < res->nunmapped; i++)
        json_array_append_new(un, json_string(res->unmapped[i]));
    for (size_t i = 0; i < res->refused.kept; i++)
        json_array_append_new(ref, json_pack("{ss ss}", "path", res->refused.e[i].path, "message",
                                             res->refused.e[i].msg));
    return json_pack("{sI so sI sI sI so sI sI sI so so sI}", "accepted", (json_int_t)res->accepted, "probes", probes,
                     "links", (json_int_t)res->links, "flows", (json_int_t)res->flows, "fat", (json_int_t)res->fat,
                     "unmapped_ifs", un, "unmapped_flows", (json_int_t)res->unmapped_flows, "dropped_full",
                     (json_int_t)res->dropped_full, "refused_entries", (json_int_t)res->refused.n, "refused", ref,
                     "refused_reports", refused_reports_json(res), "no_ts", (json_int_t)res->no_ts);
}

/* The probe an entry refusal belongs to, by its path's report index. */
static const char *probe_of_path(const struct ingest_batch *b, const char *path)
{
    size_t i = 0;
    if (!b->lone && sscanf(path, "reports[%zu]", &i) != 1)
        return "?";
    return i < b->n ? b->r[i].probe : "?";
}

unsigned ingest_post(struct state *s, struct events *ev, const struct ingest_opts *o, const char *from,
                     const char *body, size_t len, double now, json_t **reply)
{
    const char *who = from && from[0] ? from : "an unknown sender";
    struct ingest_batch *b = malloc(sizeof(*b));
    struct ingest_result *res = malloc(sizeof(*res));
    struct ingest_error e;
    if (!b || !res) {
        free(b);
        free(res);
        *reply = json_pack("{s{ss ss}}", "error", "code", "internal", "message", "out of memory");
        return 500;
    }
    int rc = ingest_parse(body ? body : "", len, o->max_flows, b, &e);
    if (rc == 0) {
        rc = ingest_apply_from(s, b, o, from && from[0] ? from : NULL, now, ev, res, &e);
    } else {
        count_refusal(s, e.kind);
    }
    unsigned status = 200;
    if (rc < 0) {
        status = ingest_err_status(e.kind);
        log_report_refused(who, e.kind, e.probe, e.msg, now);
        *reply = e.kind == INGEST_BAD_JSON
                     ? json_pack("{s{ss ss si si si}}", "error", "code", "bad_json", "message", e.msg, "line", e.line,
                                 "column", e.column, "position", e.position)
                     : error_json(e.kind, e.msg);
    } else {
        for (size_t i = 0; i < res->nrefused; i++)
            log_report_refused(who, res->refused_reports[i].kind, res->refused_reports[i].probe,
                               res->refused_reports[i].msg, now);
        if (res->refused.n) {
            const char *probe = probe_of_path(b, res->refused.e[0].path);
            log_refusal(who, probe, "entries", now, "report of probe %s from %s: %zu entr%s refused, the rest "
                        "applied: %s%s%s", probe, who, res->refused.n, res->refused.n == 1 ? "y" : "ies",
                        res->refused.e[0].msg, res->refused.kept > 1 ? "; " : "",
                        res->refused.kept > 1 ? res->refused.e[1].msg : "");
        }
        if (res->accepted == 0) {
            /* Every report refused: the first one's status and reason. */
            status = ingest_err_status(res->refused_reports[0].kind);
            *reply = error_json(res->refused_reports[0].kind, res->refused_reports[0].msg);
            json_object_set_new(*reply, "refused_reports", refused_reports_json(res));
        } else {
            *reply = result_json(res);
        }
    }
    ingest_batch_free(b);
    free(b);
    free(res);
    return status;
}

void ingest_metrics(const struct state *s, FILE *f)
{
    fprintf(f, "# HELP tierflow_report_refusals_total Probe reports (or whole requests) refused, by reason.\n"
               "# TYPE tierflow_report_refusals_total counter\n");
    for (int k = INGEST_OK + 1; k < INGEST_ERR_N; k++)
        fprintf(f, "tierflow_report_refusals_total{reason=\"%s\"} %llu\n", err_table[k].reason,
                (unsigned long long)__atomic_load_n(&s->ingest_refused[k], __ATOMIC_RELAXED));
    fprintf(f, "# HELP tierflow_report_entries_refused_total Report entries (flows, links) refused out of bounds; "
               "the rest of their reports applied.\n# TYPE tierflow_report_entries_refused_total counter\n"
               "tierflow_report_entries_refused_total %llu\n",
            (unsigned long long)__atomic_load_n(&s->entries_refused, __ATOMIC_RELAXED));
    fprintf(f, "# HELP tierflow_reports_without_ts_total Reports applied without a timestamp (taken as of their "
               "arrival).\n# TYPE tierflow_reports_without_ts_total counter\ntierflow_reports_without_ts_total %llu\n",
            (unsigned long long)__atomic_load_n(&s->reports_no_ts, __ATOMIC_RELAXED));
    fprintf(f, "# HELP tierflow_probe_conflicts_total Times a second sender reported under a probe name another "
               "sender holds.\n# TYPE tierflow_probe_conflicts_total counter\ntierflow_probe_conflicts_total %llu\n",
            (unsigned long long)__atomic_load_n(&s->probe_conflicts, __ATOMIC_RELAXED));
}
