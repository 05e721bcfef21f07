/*
 * health: see health.h. The localisation is pure (health_localise,
 * health_step); health_tick only copies the state into a round and
 * publishes the verdicts back, so that the tests drive the first two with
 * made-up fabrics and the lab drives the whole.
 */
#include "controller/health.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/state.h"

/* Bytes a lost packet stands for when a flow's rate is turned into packets:
 * a full Ethernet frame. Captured GSO super-packets are fewer, but what is
 * lost and sent again is one segment at a time. */
#define HEALTH_PKT_BYTES 1500.0
/* Strikes double the hold-down up to 2^3 = 8x. */
#define HEALTH_MAX_STRIKES 3

void health_cfg_from(struct health_cfg *hc, const struct config *c)
{
    hc->loss_frac = c->gray_loss;
    hc->min_loss = (double)c->gray_min_loss;
    hc->min_flows = (double)c->gray_min_flows;
    hc->clean_share = c->gray_clean_share;
    hc->errors = (double)c->gray_errors;
    hc->flap_count = (double)c->flap_count;
    hc->flap_window = c->flap_window;
    hc->k = (double)c->gray_k;
    hc->n = (double)c->gray_n;
    hc->holddown = c->gray_holddown;
    hc->util = c->util;
    hc->interval = c->interval;
    hc->drain = c->drain;
}

bool health_congested(const struct health_cfg *c, double util, bool queue_seen, uint64_t qdisc_drops, uint32_t nfat)
{
    if (qdisc_drops > 0)
        return true;
    /* A direction whose queue nobody sees: when it is full and shared, its
     * loss may be its queue's, and we cannot tell. */
    return !queue_seen && util >= c->util && nfat >= 2;
}

/* The packets f's rate carried in an interval. */
static double flow_pkts(const struct health_cfg *c, const struct health_flow *f)
{
    return f->bps * c->interval / 8 / HEALTH_PKT_BYTES;
}

static double flow_frac(const struct health_cfg *c, const struct health_flow *f)
{
    double pkts = flow_pkts(c, f);
    return pkts >= 1 ? (double)f->lost / pkts : (f->lost ? 1 : 0);
}

static bool crosses(const struct health_flow *f, uint32_t d)
{
    for (int j = 0; j < f->ndirs; j++)
        if (f->dirs[j] == d)
            return true;
    return false;
}

/* Per hop (health.h): walks one flow's bracketed hops. Returns true when
 * the flow is explained by them (a hop blamed or congested, or every switch
 * hop bracketed): it then stays out of the cover. */
static bool hop_walk(const struct health_cfg *c, const struct health_flow *f, const struct health_dir_in *d,
                     struct health_verdict *out)
{
    double pkts = flow_pkts(c, f);
    bool all = true;
    for (int j = 0; j < f->ndirs; j++) {
        uint32_t x = f->dirs[j];
        bool br = j > 0 && (f->obs >> j & 1) && (f->obs >> (j - 1) & 1);
        if (!d[x].fabric)
            continue;
        if (!br) {
            all = false;
            continue;
        }
        /* Fewer holes downstream than upstream: a retransmission filled one
         * between the two captures, no loss of this hop. */
        uint64_t inc = f->holes[j] > f->holes[j - 1] ? f->holes[j] - f->holes[j - 1] : 0;
        bool lossy = (double)inc >= c->min_loss && (double)inc >= c->loss_frac * (pkts >= 1 ? pkts : 1);
        if (!lossy) {
            /* None added, with packets enough to have shown gray_loss. */
            if (pkts * c->loss_frac >= c->min_loss)
                out[x].hop_clean++;
            continue;
        }
        if (d[x].congested)
            return true;        /* its own queue dropped: explained */
        struct health_verdict *v = &out[x];
        if (!v->hop_lossy++) {
            v->hop_prev = f->dirs[j - 1];
            v->hop_holes = f->holes[j];
            v->hop_prev_holes = f->holes[j - 1];
        }
        if (v->nev < HEALTH_EVIDENCE) {
            v->ev_id[v->nev] = f->id;
            v->ev_frac[v->nev++] = pkts >= 1 ? (double)inc / pkts : 1;
        }
        return true;
    }
    return all;
}

int health_localise(const struct health_cfg *c, const struct health_flow *f, size_t nf,
                    const struct health_dir_in *d, uint32_t nd, struct health_verdict *out)
{
    memset(out, 0, nd * sizeof(*out));
    uint8_t *lossy = calloc(nf + 1, 1), *left = calloc(nf + 1, 1);
    uint32_t *cover = calloc(nd + 1, sizeof(uint32_t));
    double *share = calloc(nd + 1, sizeof(double));
    if (!lossy || !left || !cover || !share) {
        free(lossy);
        free(left);
        free(cover);
        free(share);
        return -ENOMEM;
    }
    size_t nlossy = 0;
    /* Per hop first: flows bracketed hop by hop are explained by their own
     * evidence, one flow enough (health.h). */
    for (size_t i = 0; i < nf; i++) {
        bool skip = f[i].ndirs <= 0;
        for (int j = 0; j < f[i].ndirs && !skip; j++)
            skip = f[i].dirs[j] >= nd || d[f[i].dirs[j]].down;
        if (!skip && f[i].obs && hop_walk(c, &f[i], d, out))
            left[i] = 3;        /* explained per hop: out of the cover */
    }
    for (uint32_t x = 0; x < nd; x++) {
        struct health_verdict *v = &out[x];
        if (!v->hop_lossy || !d[x].fabric ||
            (double)v->hop_clean > c->clean_share * (double)(v->hop_lossy + v->hop_clean)) {
            v->nev = 0;         /* evidence of a hop not blamed */
            continue;
        }
        v->bad = v->hop = true;
        v->why = "loss";
        v->conf = (double)v->hop_lossy / (double)(v->hop_lossy + v->hop_clean);
    }
    for (size_t i = 0; i < nf; i++) {
        bool skip = f[i].ndirs <= 0 || left[i] == 3;
        for (int j = 0; j < f[i].ndirs && !skip; j++)
            skip = f[i].dirs[j] >= nd || d[f[i].dirs[j]].down || d[f[i].dirs[j]].congested || out[f[i].dirs[j]].hop;
        left[i] = 0;
        if (skip)
            continue;   /* loss explained (or path unknown): no evidence either way */
        lossy[i] = (double)f[i].lost >= c->min_loss && flow_frac(c, &f[i]) >= c->loss_frac ? 1 : 2;
        left[i] = lossy[i] == 1;
        nlossy += lossy[i] == 1;
        for (int j = 0; j < f[i].ndirs; j++) {
            struct health_verdict *v = &out[f[i].dirs[j]];
            if (lossy[i] == 1)
                v->nlossy++;
            else
                v->nclean++;
        }
    }
    /* Greedy set cover over the lossy flows not yet explained, the
     * direction that explains the most loss first: a gray link takes its
     * share of every flow through it, while the lab's (and a fabric's)
     * background retransmits make a flow elsewhere lossy now and then by a
     * little. Counting flows alone, a direction crossed by one flow of the
     * gray link and one such flow tied with the gray link itself and could
     * win on its index (bench 65 named L2 -> S1 so, 2 runs in 5). */
    for (;;) {
        memset(cover, 0, nd * sizeof(uint32_t));
        memset(share, 0, nd * sizeof(double));
        for (size_t i = 0; i < nf; i++)
            if (left[i])
                for (int j = 0; j < f[i].ndirs; j++) {
                    cover[f[i].dirs[j]]++;
                    share[f[i].dirs[j]] += flow_frac(c, &f[i]);
                }
        uint32_t best = TOPO_NONE;
        for (uint32_t x = 0; x < nd; x++) {
            const struct health_verdict *v = &out[x];
            if (!d[x].fabric || d[x].down || out[x].hop || (double)cover[x] < c->min_flows ||
                (double)v->nclean > c->clean_share * (double)(v->nlossy + v->nclean))
                continue;
            if (best == TOPO_NONE || share[x] > share[best] ||
                (share[x] == share[best] && (cover[x] > cover[best] ||
                                             (cover[x] == cover[best] && v->nclean < out[best].nclean))))
                best = x;
        }
        /* Another direction crossed by exactly the same unexplained lossy
         * flows, with as few clean ones, explains them as well. */
        bool tie = false;
        for (uint32_t x = 0; best != TOPO_NONE && x < nd && !tie; x++) {
            if (x == best || !d[x].fabric || d[x].down || out[x].hop || cover[x] != cover[best] ||
                out[x].nclean != out[best].nclean)
                continue;
            tie = true;
            for (size_t i = 0; i < nf && tie; i++)
                if (left[i] && crosses(&f[i], best) != crosses(&f[i], x))
                    tie = false;
        }
        if (best == TOPO_NONE || tie)
            break;   /* nothing, or two directions explain the same: blame neither */
        struct health_verdict *v = &out[best];
        v->bad = true;
        v->why = "loss";
        v->conf = (double)v->nlossy / (double)(v->nlossy + v->nclean) * (double)cover[best] / (double)nlossy;
        for (size_t i = 0; i < nf; i++) {
            if (!left[i] || !crosses(&f[i], best))
                continue;
            if (v->nev < HEALTH_EVIDENCE) {
                v->ev_id[v->nev] = f[i].id;
                v->ev_frac[v->nev++] = flow_frac(c, &f[i]);
            }
            left[i] = 0;
        }
    }
    for (uint32_t x = 0; x < nd; x++)
        if (!out[x].bad && d[x].fabric && !d[x].down && c->errors > 0 && (double)d[x].errors >= c->errors) {
            out[x].bad = true;
            out[x].why = "errors";
            out[x].conf = 1;
        }
    free(lossy);
    free(left);
    free(cover);
    free(share);
    return 0;
}

double health_holddown(const struct health_cfg *c, const struct health_track *tr)
{
    uint32_t s = tr->strikes < HEALTH_MAX_STRIKES ? tr->strikes : HEALTH_MAX_STRIKES;
    return c->holddown * (double)(1u << s);
}

static uint32_t popcount_n(uint32_t bits, int n)
{
    uint32_t m = n >= 32 ? 0xffffffffu : (1u << n) - 1, k = 0;
    for (bits &= m; bits; bits &= bits - 1)
        k++;
    return k;
}

enum health_change health_step(const struct health_cfg *c, struct health_track *tr, const struct health_verdict *v,
                               uint64_t carrier, double now, bool *flapping)
{
    bool bad = v && v->bad;
    tr->bits = (tr->bits << 1) | (bad ? 1u : 0u);
    tr->flap_ts[tr->flap_pos] = now;
    tr->flap_n[tr->flap_pos] = (uint32_t)(carrier < UINT32_MAX ? carrier : UINT32_MAX);
    tr->flap_pos = (uint8_t)((tr->flap_pos + 1) % HEALTH_FLAP_RING);
    double flaps = 0;
    for (int i = 0; i < HEALTH_FLAP_RING; i++)
        if (tr->flap_n[i] && now - tr->flap_ts[i] < c->flap_window)
            flaps += tr->flap_n[i];
    bool flap = c->flap_count > 0 && flaps >= c->flap_count;
    if (flapping)
        *flapping = flap;
    if (bad || carrier > 0)   /* a transition is never clean, even below the flap count */
        tr->last_bad = now;
    if (bad)
        tr->conf = v->conf;
    else if (flap)
        tr->conf = 1;
    bool k_of_n = (double)popcount_n(tr->bits, (int)c->n) >= c->k;
    if (!tr->suspect && (k_of_n || flap)) {
        if (tr->suspect_at > 0 && now - tr->suspect_at < 4 * health_holddown(c, tr))
            tr->strikes++;
        else
            tr->strikes = 0;
        tr->suspect = true;
        tr->suspect_at = now;
        return HEALTH_SUSPECT;
    }
    if (tr->suspect && now - tr->last_bad >= health_holddown(c, tr)) {
        tr->suspect = false;
        tr->bits = 0;
        return HEALTH_CLEAN;
    }
    return HEALTH_SAME;
}

/* The value of a suspect direction: 0.5..0.9 by confidence (1 is drained). */
static double suspect_value(double conf) { return 0.5 + 0.4 * conf; }

double health_value(const struct health_cfg *c, const struct health_track *tr, uint8_t drain)
{
    if (drain != STATE_DRAIN_NONE)
        return 1;
    if (tr->suspect)
        return suspect_value(tr->conf);
    /* Bad rounds not yet enough to suspect it: under 0.5. */
    double n = c->n > 0 ? c->n : 1;
    double v = 0.5 * (double)popcount_n(tr->bits, (int)c->n) / n;
    return v < 0.49 ? v : 0.49;
}

int health_init(struct health *h, const struct config *c)
{
    memset(h, 0, sizeof(*h));
    health_cfg_from(&h->cfg, c);
    return 0;
}

void health_free(struct health *h)
{
    free(h->tr);
    h->tr = NULL;
    h->nd = 0;
}

static const char *nm(const struct topo *t, uint32_t n) { return t->nodes[n].name; }

/* The arrivals of one interval on f's path (health_flow obs, holes): the
 * newest report time among its arrivals on the path, and those within half
 * an interval of it (probes close their intervals on the same wall-clock
 * boundaries; a probe whose report of that interval has not arrived yet
 * brackets nothing this round, rather than a hop being judged across two
 * intervals). */
static void arrivals(const struct state_flow *sf, double interval, struct health_flow *f)
{
    double ref = 0;
    int at[TOPO_MAX_HOPS];
    for (int k = 0; k < TOPO_MAX_HOPS; k++) {
        at[k] = -1;
        for (int j = 0; sf->arr[k].ts > 0 && j < f->ndirs; j++)
            if (sf->arr[k].dir == f->dirs[j]) {
                at[k] = j;
                if (sf->arr[k].ts > ref)
                    ref = sf->arr[k].ts;
            }
    }
    f->obs = 0;
    for (int k = 0; k < TOPO_MAX_HOPS; k++)
        if (at[k] >= 0 && ref - sf->arr[k].ts < interval / 2) {
            f->obs |= 1u << at[k];
            f->holes[at[k]] = sf->arr[k].holes;
        }
}

/* The round's input, copied under the read lock. */
static int snapshot(struct health *h, struct state *s, double now, struct health_flow **fo, size_t *nfo,
                    struct health_dir_in *din, uint64_t *carrier)
{
    const struct topo *t = s->topo;
    uint32_t nd = 2 * t->nlinks;
    double *bps = calloc(nd + 1, sizeof(double)), *ce = calloc(nd + 1, sizeof(double));
    uint32_t *nfat = calloc(nd + 1, sizeof(uint32_t));
    struct health_flow *f = calloc(s->nflows + 1, sizeof(*f));
    if (!bps || !ce || !nfat || !f) {
        free(bps);
        free(ce);
        free(nfat);
        free(f);
        return -ENOMEM;
    }
    state_dir_loads(s, now, bps, ce, nfat);
    for (uint32_t d = 0; d < nd; d++) {
        const struct state_dir *sd = &s->dirs[d], *rv = &s->dirs[d ^ 1];
        bool measured = state_dir_fresh(s, d, now);
        /* Only the sender's own counters see its queue: the far end's
         * receive counters give the direction a rate, and a queue
         * overflowing upstream of them shows there as no drop at all (a
         * failure-suite run named a spine downlink so); a port with no
         * queue counters (an ERSPAN-only view, no qdisc) sees none either. */
        bool queue = measured && sd->queue_known;
        bool own = measured && sd->probe == topo_dir_from(t, d);
        din[d].fabric = topo_dir_is_switch(t, d);
        din[d].down = !sd->probe_up || sd->route_down;
        din[d].util = state_dir_util(s, d, bps[d]);
        din[d].nfat = nfat[d];
        din[d].queue_seen = queue;
        din[d].congested = health_congested(&h->cfg, din[d].util, queue, queue ? sd->qdisc_drops : 0, nfat[d]);
        din[d].errors = own ? sd->errors : 0;
        /* Carrier is the interface's: either end's probe may report it. */
        uint64_t c0 = measured ? sd->carrier_changes : 0;
        uint64_t c1 = state_dir_fresh(s, d ^ 1, now) ? rv->carrier_changes : 0;
        carrier[d] = c0 > c1 ? c0 : c1;
    }
    size_t n = 0;
    /* While the usable fabric changes (a direction down, back, drained, or
     * in its hold-down, and two intervals after), the flows' loss is the
     * change's: flows rerouted by routing or moved off a link resend what
     * the old path lost, onto paths whose other hops never saw it (a
     * failure-suite run named a spine downlink so). Such rounds bring no
     * loss evidence; flaps and errors still count. */
    bool changing = s->dirs_changed_at > 0 && now - s->dirs_changed_at < s->link_holddown + 2 * h->cfg.interval;
    for (size_t i = 0; !changing && i < s->nflows; i++) {
        const struct state_flow *sf = &s->flows[i];
        /* A flow moved within the last two intervals reports loss from the
         * path it left. */
        if (!sf->fat || state_flow_stale(s, sf, now) || sf->ndirs <= 0 ||
            (sf->last_moved > 0 && now - sf->last_moved < 2 * h->cfg.interval))
            continue;
        f[n].id = sf->id;
        f[n].ndirs = state_flow_dirs(s, sf, f[n].dirs, TOPO_MAX_HOPS);
        f[n].bps = sf->bps;
        /* A tail probe resends the last segment when no ACK came for a
         * while, whether it was lost or not: no evidence (docs/health.md). */
        f[n].lost = sf->retx_pkts - sf->tail_retx + sf->psn_oos + sf->naks;
        arrivals(sf, h->cfg.interval, &f[n]);
        n += f[n].ndirs > 0;
    }
    free(bps);
    free(ce);
    free(nfat);
    *fo = f;
    *nfo = n;
    return 0;
}

static void evidence_str(const struct topo *t, const struct health_verdict *v, uint32_t d, char *buf, size_t len)
{
    size_t o;
    if (v->hop)
        o = (size_t)snprintf(buf, len, "holes at %s from %s: %llu, %llu at %s from %s; %u flow%s lossy at this hop, %u clean",
                             nm(t, topo_dir_to(t, d)), nm(t, topo_dir_from(t, d)), (unsigned long long)v->hop_holes,
                             (unsigned long long)v->hop_prev_holes, nm(t, topo_dir_to(t, v->hop_prev)),
                             nm(t, topo_dir_from(t, v->hop_prev)), v->hop_lossy, v->hop_lossy == 1 ? "" : "s",
                             v->hop_clean);
    else
        o = (size_t)snprintf(buf, len, "%u lossy, %u clean flows", v->nlossy, v->nclean);
    for (uint8_t i = 0; i < v->nev && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%016llx %.2f%%", i ? ", " : "; ", (unsigned long long)v->ev_id[i],
                              100 * v->ev_frac[i]);
}

int health_tick(struct health *h, struct state *s, struct events *ev, double now)
{
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    uint32_t nd = 2 * t->nlinks;
    if (h->topo != t || h->nd != nd) {   /* a new topology: new tracks */
        free(h->tr);
        h->tr = calloc(nd + 1, sizeof(*h->tr));
        h->nd = h->tr ? nd : 0;
        h->topo = t;
    }
    struct health_dir_in *din = calloc(nd + 1, sizeof(*din));
    uint64_t *carrier = calloc(nd + 1, sizeof(uint64_t));
    struct health_verdict *v = calloc(nd + 1, sizeof(*v));
    struct health_flow *f = NULL;
    size_t nf = 0;
    int rc = h->tr && din && carrier && v ? snapshot(h, s, now, &f, &nf, din, carrier) : -ENOMEM;
    pthread_rwlock_unlock(&s->lock);
    if (rc == 0)
        rc = health_localise(&h->cfg, f, nf, din, nd, v);
    free(f);
    if (rc < 0) {
        free(din);
        free(carrier);
        free(v);
        return rc;
    }
    int changed = 0;
    pthread_rwlock_wrlock(&s->lock);
    if (s->topo == t) {   /* a reload in between: its state has no tracks yet */
        for (uint32_t d = 0; d < nd; d++) {
            struct health_track *tr = &h->tr[d];
            struct state_dir *sd = &s->dirs[d];
            bool flapping = false;
            if (!din[d].fabric)
                continue;   /* a host link has no alternative: nothing to judge or drain */
            enum health_change ch = health_step(&h->cfg, tr, &v[d], carrier[d], now, &flapping);
            const char *from = nm(t, topo_dir_from(t, d)), *to = nm(t, topo_dir_to(t, d));
            if (v[d].bad) {
                evidence_str(t, &v[d], d, sd->health_why, sizeof(sd->health_why));
                /* Why its loss was not taken for congestion, after the fact. */
                log_debug("health: %s -> %s bad (%s): util %.2f (%s), %u fat; %s", from, to, v[d].why, din[d].util,
                          din[d].queue_seen ? "its queue measured, no qdisc drop" : "its queue unseen", din[d].nfat,
                          sd->health_why);
            } else if (flapping) {
                snprintf(sd->health_why, sizeof(sd->health_why), "carrier flapping (>= %.0f transitions in %.0f s)",
                         h->cfg.flap_count, h->cfg.flap_window);
            }
            if (ch == HEALTH_SUSPECT) {
                changed++;
                events_add(ev, now, "link_suspect", "%s -> %s: %s (confidence %.2f): %s", from, to,
                           v[d].bad ? v[d].why : "flaps", tr->conf, sd->health_why);
                if (h->cfg.drain && sd->drain == STATE_DRAIN_NONE) {
                    sd->drain = STATE_DRAIN_AUTO;
                    state_dir_eval(s, d, now);
                    events_add(ev, now, "link_drained", "%s -> %s: drained (thresholds.drain) until clean for %.0f s",
                               from, to, health_holddown(&h->cfg, tr));
                }
            } else if (ch == HEALTH_CLEAN) {
                changed++;
                events_add(ev, now, "link_clean", "%s -> %s: no loss, errors or flaps for %.0f s", from, to,
                           health_holddown(&h->cfg, tr));
                if (sd->drain == STATE_DRAIN_AUTO) {
                    sd->drain = STATE_DRAIN_NONE;
                    state_dir_eval(s, d, now);
                    events_add(ev, now, "link_undrained", "%s -> %s: usable again (clean)", from, to);
                }
            }
            double hv = health_value(&h->cfg, tr, sd->drain);
            if (hv != sd->health || tr->suspect != sd->suspect)
                s->gen++;
            sd->health = hv;
            sd->suspect = tr->suspect;
            sd->health_conf = tr->suspect ? tr->conf : 0;
            if (!tr->suspect && !v[d].bad && !flapping && sd->drain == STATE_DRAIN_NONE)
                sd->health_why[0] = '\0';
        }
    }
    pthread_rwlock_unlock(&s->lock);
    free(din);
    free(carrier);
    free(v);
    return changed;
}

int health_drain(struct state *s, struct events *ev, const char *from, const char *to, bool on, const char *who,
                 double now)
{
    pthread_rwlock_wrlock(&s->lock);
    uint32_t d;
    uint32_t a = topo_node_by_name(s->topo, from), b = topo_node_by_name(s->topo, to);
    int rc = a == TOPO_NONE || b == TOPO_NONE ? -ENOENT : topo_dir_between(s->topo, a, b, &d);
    if (rc == 0) {
        struct state_dir *sd = &s->dirs[d];
        if (on ? sd->drain == STATE_DRAIN_MANUAL : sd->drain == STATE_DRAIN_NONE) {
            rc = -EALREADY;
        } else {
            /* An operator's undrain also lifts health's drain: the track
             * stays suspect, and drains again only once it was clean. */
            sd->drain = on ? STATE_DRAIN_MANUAL : STATE_DRAIN_NONE;
            sd->health = on ? 1 : sd->suspect ? suspect_value(sd->health_conf) : 0;
            state_dir_eval(s, d, now);
            s->gen++;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    if (rc == 0) {
        events_add(ev, now, on ? "link_drained" : "link_undrained", "%s -> %s: %s by the operator (%s)", from, to,
                   on ? "drained" : "undrained", who && who[0] ? who : "API");
        log_msg(LOG_NOTICE, "link %s -> %s %s by the operator (%s)", from, to, on ? "drained" : "undrained",
                   who && who[0] ? who : "API");
    }
    return rc;
}
