/*
 * state: see state.h. The flow table is a dense array plus an open-addressing
 * index (linear probing, load <= 1/2) so that iteration for the views and the
 * rebalancer is a plain loop and lookups from ingest are O(1).
 */
#include "controller/state.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/classes.h"
#include "policy/job.h"

static size_t slots_for(size_t n)
{
    size_t s = 64;
    while (s < 2 * n + 2)
        s *= 2;
    return s;
}

int state_init(struct state *s, struct topo *t, size_t max_flows, double stale_after, double now)
{
    memset(s, 0, sizeof(*s));
    if (pthread_rwlock_init(&s->lock, NULL) != 0)
        return -ENOMEM;
    s->max_flows = max_flows;
    s->stale_after = stale_after;
    s->start = now;
    s->nslots = slots_for(0);
    s->fidx = calloc(s->nslots, sizeof(*s->fidx));
    if (!s->fidx)
        return -ENOMEM;
    struct topo *old = state_set_topo(s, t);
    (void)old;
    return s->dirs && s->probes ? 0 : -ENOMEM;
}

void state_free(struct state *s)
{
    for (size_t i = 0; i < s->njobs; i++) {
        job_free(s->jobs[i]);
        free(s->jobs[i]);
    }
    topo_free(s->topo);
    free(s->dirs);
    free(s->probes);
    free(s->flows);
    free(s->fidx);
    pthread_rwlock_destroy(&s->lock);
    memset(s, 0, sizeof(*s));
}

static void job_drop(struct state *s, size_t i)
{
    job_free(s->jobs[i]);
    free(s->jobs[i]);
    memmove(&s->jobs[i], &s->jobs[i + 1], (s->njobs - i - 1) * sizeof(s->jobs[0]));
    memmove(&s->job_tier[i], &s->job_tier[i + 1], (s->njobs - i - 1) * sizeof(s->job_tier[0]));
    s->njobs--;
}

/* Ranks are node indices: carry every job over to the new topology by node
 * name; a job with a rank on a node that is gone (or no longer a host) is
 * dropped. */
static void remap_jobs(struct state *s, const struct topo *old, const struct topo *t)
{
    for (size_t i = 0; old && i < s->njobs;) {
        struct job *j = s->jobs[i];
        uint32_t *nodes = malloc((size_t)j->nranks * sizeof(*nodes) + 1);
        bool ok = nodes != NULL;
        for (uint32_t r = 0; ok && r < j->nranks; r++) {
            nodes[r] = topo_node_by_name(t, old->nodes[j->rank_node[r]].name);
            ok = nodes[r] != TOPO_NONE && t->nodes[nodes[r]].tier == TOPO_HOST;
        }
        char err[128];
        if (ok)
            ok = job_set_ranks(j, j->nranks, nodes, err, sizeof(err)) == 0 &&
                 job_class_tiers(j, t, s->job_tier[i]) == 0;
        free(nodes);
        if (ok)
            i++;
        else
            job_drop(s, i);
    }
    s->cls_gen++;
}

/* The path of f's pin in the old topology, walked by node names in the new
 * one; false when a node or link of it is gone or it is no longer a
 * shortest path. */
static bool remap_pin(const struct topo *old, const struct topo *t, const struct state_flow *f, uint32_t *src,
                      uint32_t *dst, uint64_t *idx)
{
    uint32_t od[TOPO_MAX_HOPS], nd[TOPO_MAX_HOPS];
    if (f->src_node == TOPO_NONE || f->dst_node == TOPO_NONE)
        return false;
    int n = topo_path_dirs(old, f->src_node, f->dst_node, (uint64_t)f->pin, od, TOPO_MAX_HOPS);
    if (n <= 0)
        return false;
    *src = topo_node_by_name(t, old->nodes[f->src_node].name);
    *dst = topo_node_by_name(t, old->nodes[f->dst_node].name);
    uint32_t at = *src;
    for (int k = 0; k < n && at != TOPO_NONE; k++) {
        uint32_t next = topo_node_by_name(t, old->nodes[topo_dir_to(old, od[k])].name);
        if (next == TOPO_NONE || topo_dir_between(t, at, next, &nd[k]) < 0)
            return false;
        at = next;
    }
    return at != TOPO_NONE && at == *dst && topo_path_index_of(t, *src, *dst, nd, n, idx) == 0;
}

struct topo *state_set_topo(struct state *s, struct topo *t)
{
    struct topo *old = s->topo;
    struct state_dir *d = calloc(2 * (size_t)t->nlinks + 1, sizeof(*d));
    struct state_probe *p = calloc((size_t)t->nnodes + 1, sizeof(*p));
    if (!d || !p) {
        free(d);
        free(p);
        return t; /* caller frees the rejected one; state unchanged */
    }
    for (uint32_t i = 0; i < 2 * t->nlinks; i++) {
        d[i].up = d[i].probe_up = true;
        d[i].probe = TOPO_NONE;
    }
    free(s->dirs);
    free(s->probes);
    s->dirs = d;
    s->probes = p;
    remap_jobs(s, old, t);
    s->topo = t;
    /* Node indices may mean other nodes now: forget every placement but the
     * pins, which are carried over by node names. */
    s->pins_kept = s->pins_lost = 0;
    for (size_t i = 0; i < s->nflows; i++) {
        struct state_flow *f = &s->flows[i];
        uint64_t pin = 0;
        uint32_t src = TOPO_NONE, dst = TOPO_NONE;
        bool kept = f->pinned && f->pin >= 0 && old && remap_pin(old, t, f, &src, &dst, &pin);
        if (f->pinned)
            kept ? s->pins_kept++ : s->pins_lost++;
        f->probe = f->egress = TOPO_NONE;
        f->src_node = src;
        f->dst_node = dst;
        f->path = f->pin = -1;
        f->ndirs = -1;
        f->pinned = kept;
        if (kept) {
            f->pin = (int64_t)pin;
            state_flow_set_path(s, f, f->pin);
        }
    }
    s->gen++;
    return old;
}

uint64_t state_flow_id(const struct state_flow_key *k)
{
    /* FNV-1a over the fields (not the struct, which has padding). */
    uint64_t h = 1469598103934665603ull;
#define MIX(p, n) for (size_t i_ = 0; i_ < (n); i_++) { h ^= ((const uint8_t *)(p))[i_]; h *= 1099511628211ull; }
    MIX(&k->af, 1); MIX(&k->proto, 1); MIX(&k->sport, 2); MIX(&k->dport, 2);
    MIX(&k->vlan, 2); MIX(&k->qp, 4); MIX(k->src, 16); MIX(k->dst, 16);
#undef MIX
    return h ^ (h >> 29);
}

bool state_flow_key_eq(const struct state_flow_key *a, const struct state_flow_key *b)
{
    return a->af == b->af && a->proto == b->proto && a->sport == b->sport && a->dport == b->dport &&
           a->vlan == b->vlan && a->qp == b->qp && !memcmp(a->src, b->src, 16) && !memcmp(a->dst, b->dst, 16);
}

struct state_flow *state_flow_find(struct state *s, const struct state_flow_key *k)
{
    uint64_t id = state_flow_id(k);
    for (size_t i = id & (s->nslots - 1);; i = (i + 1) & (s->nslots - 1)) {
        uint32_t v = s->fidx[i];
        if (!v)
            return NULL;
        if (s->flows[v - 1].id == id && state_flow_key_eq(&s->flows[v - 1].k, k))
            return &s->flows[v - 1];
    }
}

static void index_insert(uint32_t *slots, size_t nslots, uint64_t id, uint32_t v)
{
    size_t i = id & (nslots - 1);
    while (slots[i])
        i = (i + 1) & (nslots - 1);
    slots[i] = v;
}

static int reindex(struct state *s, size_t want)
{
    size_t n = slots_for(want);
    uint32_t *slots = calloc(n, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < s->nflows; i++)
        index_insert(slots, n, s->flows[i].id, (uint32_t)i + 1);
    free(s->fidx);
    s->fidx = slots;
    s->nslots = n;
    return 0;
}

struct state_flow *state_flow_upsert(struct state *s, const struct state_flow_key *k, bool *inserted)
{
    *inserted = false;
    struct state_flow *f = state_flow_find(s, k);
    if (f)
        return f;
    if (s->nflows >= s->max_flows)
        return NULL;
    if (s->nflows == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        struct state_flow *nf = realloc(s->flows, nc * sizeof(*nf));
        if (!nf)
            return NULL;
        s->flows = nf;
        s->cap = nc;
    }
    if (2 * (s->nflows + 1) + 2 > s->nslots && reindex(s, s->nflows + 1) < 0)
        return NULL;
    f = &s->flows[s->nflows];
    memset(f, 0, sizeof(*f));
    f->k = *k;
    f->id = state_flow_id(k);
    f->probe = f->egress = f->src_node = f->dst_node = TOPO_NONE;
    f->path = f->pin = -1;
    f->ndirs = -1;
    f->cls = CLASS_DEFAULT;
    f->tier = -1;
    f->sampling = 1;
    index_insert(s->fidx, s->nslots, f->id, (uint32_t)s->nflows + 1);
    s->nflows++;
    *inserted = true;
    return f;
}

int state_flow_dirs(const struct state *s, const struct state_flow *f, uint32_t *dirs, int max)
{
    (void)s;
    if (f->path < 0 || f->ndirs <= 0 || f->ndirs > max)
        return -1;
    memcpy(dirs, f->dirs, (size_t)f->ndirs * sizeof(*dirs));
    return f->ndirs;
}

void state_flow_set_path(struct state *s, struct state_flow *f, int64_t path)
{
    f->path = path;
    f->ndirs = -1;
    if (path < 0 || f->src_node == TOPO_NONE || f->dst_node == TOPO_NONE)
        return;
    int n = topo_path_dirs(s->topo, f->src_node, f->dst_node, (uint64_t)path, f->dirs, TOPO_MAX_HOPS);
    if (n > 0)
        f->ndirs = (int8_t)n;
    else
        f->path = -1;
}

/* The walk from the flow's source up to the probe's node, then its egress:
 * the prefix of every path the flow may be on. Handles probes on the source
 * host, its leaf, or a switch adjacent to that leaf (the cases a
 * leaf/spine fabric has); anything else leaves the path unknown. */
static int locate_prefix(const struct topo *t, uint32_t src, uint32_t probe, uint32_t egress,
                         uint32_t *dirs)
{
    int n = 0;
    uint32_t at = src;
    if (at != probe) {
        uint32_t leaf = topo_leaf_of(t, src);
        if (leaf != src && leaf != TOPO_NONE) {
            if (topo_dir_between(t, src, leaf, &dirs[n]) < 0)
                return -1;
            n++;
            at = leaf;
        }
        if (at != probe) {
            if (topo_dir_between(t, at, probe, &dirs[n]) < 0)
                return -1;
            n++;
        }
    }
    dirs[n++] = egress;
    return n;
}

void state_loc_resolve(const struct topo *t, const struct state_flow_key *k, uint32_t probe, uint32_t egress,
                       struct state_loc *l)
{
    l->src_node = topo_node_by_addr(t, k->af, k->src);
    l->dst_node = topo_node_by_addr(t, k->af, k->dst);
    l->first = l->count = 0;
    l->ndirs = -1;
    if (l->src_node == TOPO_NONE || l->dst_node == TOPO_NONE || l->src_node == l->dst_node ||
        egress == TOPO_NONE || probe >= t->nnodes)
        return;
    uint32_t dirs[TOPO_MAX_HOPS + 2];
    int n = locate_prefix(t, l->src_node, probe, egress, dirs);
    if (n <= 0 || topo_path_prefix_range(t, l->src_node, l->dst_node, dirs, n, &l->first, &l->count) < 0) {
        l->count = 0;
        return;
    }
    if (l->count > 0)
        l->ndirs = topo_path_dirs(t, l->src_node, l->dst_node, l->first, l->dirs, TOPO_MAX_HOPS);
    if (l->ndirs <= 0)
        l->count = 0;
}

bool state_loc_cached(struct state *s, const struct state_flow_key *k, uint32_t probe, uint32_t egress,
                      struct state_loc *l)
{
    const struct state_flow *f = state_flow_find(s, k);
    if (!f || f->probe != probe || f->egress != egress || egress == TOPO_NONE || f->loc_count == 0)
        return false;
    l->src_node = f->src_node;
    l->dst_node = f->dst_node;
    l->first = f->loc_first;
    l->count = f->loc_count;
    if (f->path == (int64_t)l->first && f->ndirs > 0) {
        memcpy(l->dirs, f->dirs, sizeof(l->dirs));
        l->ndirs = f->ndirs;
    } else {
        l->ndirs = topo_path_dirs(s->topo, l->src_node, l->dst_node, l->first, l->dirs, TOPO_MAX_HOPS);
    }
    return l->ndirs > 0;
}

/* Paths of a probe's range looked at for a live one (state_flow_place). */
#define STATE_PLACE_LOOK 64

static bool dirs_down(const struct state *s, const uint32_t *dirs, int n)
{
    for (int i = 0; i < n; i++)
        if (!s->dirs[dirs[i]].up)
            return true;
    return false;
}

/* Whether path index p lies in l's range of paths. */
static bool loc_holds(const struct state_loc *l, int64_t p)
{
    return p >= 0 && (uint64_t)p >= l->first && (uint64_t)p < l->first + l->count;
}

void state_flow_place(struct state *s, struct state_flow *f, const struct state_loc *l)
{
    f->src_node = l->src_node;
    f->dst_node = l->dst_node;
    f->loc_first = l->first;
    f->loc_count = l->count;
    if (l->count == 0) {
        f->path = -1;
        f->ndirs = -1;
        return;
    }
    /* Ambiguous beyond what the probe sees: keep the pin if it fits. */
    if (loc_holds(l, f->pin) && (uint64_t)f->pin != l->first) {
        state_flow_set_path(s, f, f->pin);
        return;
    }
    /* A report whose interval straddles a failure still names a path
     * through the dead link (its egress, or a hop beyond what the probe
     * sees: an aggregation switch's report of a flow towards a core whose
     * only way on failed); a flow the controller has since pinned onto a
     * live path is there now (believing the report made every round move
     * it again, a forced move on loads of before the failure each time). */
    if (f->pin >= 0 && l->ndirs > 0 && dirs_down(s, l->dirs, l->ndirs)) {
        uint32_t pd[TOPO_MAX_HOPS];
        int n = topo_path_dirs(s->topo, l->src_node, l->dst_node, (uint64_t)f->pin, pd, TOPO_MAX_HOPS);
        if (n > 0 && !dirs_down(s, pd, n)) {
            state_flow_set_path(s, f, f->pin);
            return;
        }
    }
    /* Beyond what the probe sees the flow cannot be on a dead link (routing
     * has taken it away): the first path of the range that crosses no down
     * direction, when the first one does (bounded look). */
    if (l->count > 1 && dirs_down(s, l->dirs, l->ndirs)) {
        uint32_t pd[TOPO_MAX_HOPS];
        for (uint64_t k = 1; k < l->count && k < STATE_PLACE_LOOK; k++) {
            int n = topo_path_dirs(s->topo, l->src_node, l->dst_node, l->first + k, pd, TOPO_MAX_HOPS);
            if (n > 0 && !dirs_down(s, pd, n)) {
                state_flow_set_path(s, f, (int64_t)(l->first + k));
                return;
            }
        }
    }
    f->path = (int64_t)l->first;
    memcpy(f->dirs, l->dirs, sizeof(f->dirs));
    f->ndirs = (int8_t)l->ndirs;
}

bool state_flow_may_move(const struct state *s, const struct state_flow *f, double min_interval, double now)
{
    double ch = s->dirs_changed_at;
    bool interval = f->last_moved <= 0 || now - f->last_moved >= min_interval || (ch > 0 && f->last_moved < ch);
    bool backoff = now >= f->backoff_until || (ch > 0 && f->backoff_at < ch);
    return interval && backoff;
}

bool state_flow_observe(struct state *s, struct state_flow *f, bool inserted, uint32_t node, uint32_t egress,
                        const char *ifname, const struct state_loc *l, double bps, double since, double now)
{
    /* Outside a pinned flow's pin: where the flow was before the move. The
     * reports of the interval a move fell in saw it there for part of it,
     * at full rate, and the old path's smoothed rate could beat the new
     * path's, still ramping; taken, one put the flow back on the path it
     * left for a round, which saw a collision there (bench 50's fat tree,
     * docs/lab.md). The pin is where the flow is now. */
    bool outside_pin = f->pin >= 0 && l->count > 0 && !loc_holds(l, f->pin);
    if (f->pin >= 0 && !outside_pin)
        f->pin_seen = now;
    if (!inserted && outside_pin && f->last_moved > 0 && since < f->last_moved)
        return false;
    /* After it, the old path's probe still reports the flow, slowing down,
     * until its table ages it out; when that probe placed the flow last it
     * is the holder, and a holder's report used to be taken whatever it
     * measured (a moved flow then read 0 Mb/s on its old path, and its move
     * was judged futile). Outside the pin the remnant rule applies to the
     * holder too: a report as fast as the flow means the pin did not take. */
    bool held = !inserted && f->path >= 0 && !state_flow_stale(s, f, now) &&
                ((f->probe != node && f->probe != TOPO_NONE) || outside_pin);
    bool take = !held;
    if (held && l->count > 0) {
        bool fits = loc_holds(l, f->path);
        /* An unpinned flow placed on the first path of a range (its edge's
         * report: which core is beyond what the edge sees) is not known to
         * be on that path: a narrower report inside the range (the
         * aggregation switch's) says where it is, whatever rate it measured
         * over its own interval. Dropped as a remnant whenever it measured
         * less, it left flows on a guessed core, and the fat tree's first
         * round moved flows off phantom collisions and onto real ones
         * (docs/lab.md). */
        bool guessed = f->pin < 0 && f->loc_count > 1 && (uint64_t)f->path == f->loc_first;
        bool inside = l->first >= f->loc_first && l->first + l->count <= f->loc_first + f->loc_count;
        if (!fits && bps < f->bps && !(guessed && inside))
            return false;       /* a remnant on a path the flow has left */
        take = !fits || l->count < f->loc_count;
    }
    if (take) {
        f->probe = node;
        f->egress = egress;
        tf_strlcpy(f->ifname, ifname, sizeof(f->ifname));
        state_flow_place(s, f, l);
    }
    /* The other probes' reports of this interval only replace bps: the
     * rate before is the last interval's, whoever measured it. */
    if (now - f->bps_at >= STATE_RATE_SPREAD) {
        f->prev_bps = f->bps;
        f->bps_at = now;
    }
    return true;
}

void state_flow_locate(struct state *s, struct state_flow *f)
{
    struct state_loc l;
    state_loc_resolve(s->topo, &f->k, f->probe, f->egress, &l);
    state_flow_place(s, f, &l);
}

void state_flow_classify(struct state *s, struct state_flow *f)
{
    f->cls_gen = s->cls_gen;
    f->cls_src = f->src_node;
    f->cls_dst = f->dst_node;
    f->cls = CLASS_DEFAULT;
    f->tier = -1;
    if (!s->classes)
        return;
    struct class_flow cf = {.af = f->k.af, .proto = f->k.proto, .sport = f->k.sport, .dport = f->k.dport,
                            .has_qp = f->k.proto == 17 && f->k.dport == 4791, .qp = f->k.qp, .dscp = f->dscp,
                            .job = NULL, .job_dim = -1};
    memcpy(cf.src, f->k.src, 16);
    memcpy(cf.dst, f->k.dst, 16);
    size_t ji = 0;
    for (; f->src_node != TOPO_NONE && f->dst_node != TOPO_NONE && ji < s->njobs; ji++) {
        int d = job_node_pair_dim(s->jobs[ji], f->src_node, f->dst_node);
        if (d == -ENOENT)
            continue;
        cf.job = s->jobs[ji]->name;
        cf.job_dim = d;
        break;
    }
    f->cls = classes_match(s->classes, &cf);
    f->tier = s->classes->c[f->cls].max_tier;
    if (f->tier < 0 && cf.job && f->cls == cf.job_dim)
        f->tier = s->job_tier[ji][cf.job_dim];
}

void state_reclassify(struct state *s)
{
    s->cls_gen++;
    for (size_t i = 0; i < s->nflows; i++)
        state_flow_classify(s, &s->flows[i]);
    s->gen++;
}

int state_job_find(const struct state *s, const char *name)
{
    for (size_t i = 0; i < s->njobs; i++)
        if (strcmp(s->jobs[i]->name, name) == 0)
            return (int)i;
    return -1;
}

int state_job_put(struct state *s, struct job *j, bool *replaced)
{
    int tier[JOB_NDIMS];
    int r = job_class_tiers(j, s->topo, tier);
    if (r < 0)
        return r;
    int i = state_job_find(s, j->name);
    *replaced = i >= 0;
    if (i >= 0) {
        job_free(s->jobs[i]);
        free(s->jobs[i]);
    } else if (s->njobs == STATE_MAX_JOBS) {
        return -ENOSPC;
    } else {
        i = (int)s->njobs++;
    }
    s->jobs[i] = j;
    memcpy(s->job_tier[i], tier, sizeof(tier));
    state_reclassify(s);
    return 0;
}

int state_job_del(struct state *s, const char *name)
{
    int i = state_job_find(s, name);
    if (i < 0)
        return -ENOENT;
    job_drop(s, (size_t)i);
    state_reclassify(s);
    return 0;
}

bool state_probe_stale(const struct state *s, uint32_t node, double now)
{
    if (node >= s->topo->nnodes)
        return true;
    const struct state_probe *p = &s->probes[node];
    return p->last_seen <= 0 || now - p->last_seen > s->stale_after;
}

double state_look_time(struct state *s, double now)
{
    double newest = 0, oldest = INFINITY;
    pthread_rwlock_rdlock(&s->lock);
    for (uint32_t n = 0; n < s->topo->nnodes; n++) {
        const struct state_probe *p = &s->probes[n];
        if (state_probe_stale(s, n, now))
            continue;
        newest = p->last_ts > newest ? p->last_ts : newest;
        oldest = p->last_ts < oldest ? p->last_ts : oldest;
    }
    pthread_rwlock_unlock(&s->lock);
    return newest > 0 && newest - oldest <= STATE_LOOK_TOL ? newest : 0;
}

void state_view_heard(struct state *s, double span, double now)
{
    /* A probe silent for longer than the staleness window is stale between
     * its reports anyway; an interval_s beyond it (untrusted) bounds nothing. */
    if (span > s->stale_after)
        span = s->stale_after;
    if (s->view_heard <= 0 || now - s->view_heard > s->stale_after) {
        s->view_since = now;
        s->view_span = span > 0 ? span : 0;
    } else if (state_view_warming(s, now) && span > s->view_span) {
        s->view_span = span;
    }
    s->view_heard = now;
}

bool state_view_warming(const struct state *s, double now)
{
    if (s->view_heard <= 0 || now - s->view_heard > s->stale_after)
        return true;
    double wait = s->view_span > 2 * STATE_LOOK_TOL ? s->view_span - STATE_LOOK_TOL : STATE_LOOK_TOL;
    return now < s->view_since + wait;
}

bool state_flow_stale(const struct state *s, const struct state_flow *f, double now)
{
    return now - f->last_seen > s->stale_after;
}

bool state_dir_fresh(const struct state *s, uint32_t dir, double now)
{
    const struct state_dir *sd = &s->dirs[dir];
    return sd->measured && !state_probe_stale(s, sd->probe, now);
}

bool state_dir_measured(const struct state *s, uint32_t dir, double bps, double now)
{
    const struct state_dir *sd = &s->dirs[dir];
    return state_dir_fresh(s, dir, now) && sd->bps >= bps;
}

double state_dir_queue_delay(const struct state *s, uint32_t dir, bool standing, double now)
{
    const struct state_dir *sd = &s->dirs[dir];
    if (!sd->delay_known || !state_dir_fresh(s, dir, now))
        return -1;
    if (!standing)
        return sd->queue_delay;
    if (!sd->delay_prev_known)
        return -1;
    return sd->queue_delay < sd->queue_delay_prev ? sd->queue_delay : sd->queue_delay_prev;
}

void state_dir_loads(const struct state *s, double now, double *bps, double *ce, uint32_t *nfat)
{
    uint32_t nd = 2 * s->topo->nlinks;
    double *fbps = calloc(nd ? nd : 1, sizeof(double));
    double *fce = calloc(nd ? nd : 1, sizeof(double));
    if (nfat)
        memset(nfat, 0, nd * sizeof(*nfat));
    for (size_t i = 0; i < s->nflows; i++) {
        const struct state_flow *f = &s->flows[i];
        if (state_flow_stale(s, f, now))
            continue;
        uint32_t dirs[TOPO_MAX_HOPS];
        int n = state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS);
        if (n < 0 && f->egress != TOPO_NONE) {
            dirs[0] = f->egress;
            n = 1;
        }
        for (int j = 0; j < n; j++) {
            if (fbps && fce) {
                fbps[dirs[j]] += f->bps;
                fce[dirs[j]] += f->bps * f->ce_frac;
            }
            if (nfat && f->fat)
                nfat[dirs[j]]++;
        }
    }
    for (uint32_t d = 0; d < nd; d++) {
        const struct state_dir *sd = &s->dirs[d];
        double flow_bps = fbps ? fbps[d] : 0, flow_ce = fbps && fbps[d] > 0 ? fce[d] / fbps[d] : 0;
        bool fresh = state_dir_fresh(s, d, now);
        /* A probe's counter is the truth for its interface; the flows it did
         * not report (below the fat threshold) are in it too. */
        bps[d] = fresh && sd->bps > flow_bps ? sd->bps : flow_bps;
        ce[d] = fresh && sd->ce_frac > flow_ce ? sd->ce_frac : flow_ce;
    }
    free(fbps);
    free(fce);
}

bool state_dir_eval(struct state *s, uint32_t dir, double now)
{
    struct state_dir *d = &s->dirs[dir];
    bool held = d->back_at > 0 && now - d->back_at < s->link_holddown;
    if (d->back_at > 0 && !held)
        d->back_at = 0;   /* the hold-down is over: nothing left to time */
    bool up = d->probe_up && !d->route_down && !held && d->drain == STATE_DRAIN_NONE;
    bool changed = up != d->up;
    d->up = up;
    /* Rates from before a change describe another fabric. A return counts
     * once: the two directions of a link (and the links of a switch) come
     * back from their hold-downs a moment apart, and each moment freeing
     * the timers again (state_flow_may_move) let the flows the first one
     * moved move again (a CI run: 11 moves of 9 flows after a restore).
     * A failure is always news, however soon after a return (a CI run whose
     * second failure was taken for part of the return judged pins across
     * it and ended below ECMP). */
    if (changed && (!up || s->dirs_changed_at <= 0 || now - s->dirs_changed_at >= s->link_holddown))
        s->dirs_changed_at = now;
    return changed;
}

bool state_dir_set_route_down(struct state *s, uint32_t dir, bool down, double now)
{
    struct state_dir *d = &s->dirs[dir];
    if (d->route_down == down)
        return false;
    if (!down)
        d->back_at = now;
    d->route_down = down;
    state_dir_eval(s, dir, now);
    s->gen++;
    return true;
}

bool state_dir_set_route_unseen(struct state *s, uint32_t dir, bool unseen, double now)
{
    struct state_dir *d = &s->dirs[dir];
    if (d->route_unseen == unseen)
        return false;
    if (!unseen)
        d->seen_again_at = now;
    d->route_unseen = unseen;
    s->gen++;
    return true;
}

bool state_dir_closed(const struct state *s, uint32_t dir, double now)
{
    const struct state_dir *d = &s->dirs[dir];
    return d->route_unseen || (d->seen_again_at > 0 && now - d->seen_again_at < s->link_holddown);
}

const char *state_dir_down_reason(const struct state *s, uint32_t dir, double now)
{
    const struct state_dir *d = &s->dirs[dir];
    if (!d->probe_up)
        return "probe";
    if (d->route_down)
        return "routing";
    if (d->back_at > 0 && now - d->back_at < s->link_holddown)
        return "holddown";
    if (d->drain != STATE_DRAIN_NONE)
        return "drained";
    return NULL;
}

int state_tick(struct state *s, double now, state_probe_cb cb, void *arg)
{
    int changed = 0;
    pthread_rwlock_wrlock(&s->lock);
    bool dirs_changed = false;
    for (uint32_t d = 0; d < 2 * s->topo->nlinks; d++)
        if (s->dirs[d].back_at > 0)
            dirs_changed |= state_dir_eval(s, d, now);
    if (dirs_changed)
        s->gen++;
    for (uint32_t n = 0; n < s->topo->nnodes; n++) {
        struct state_probe *p = &s->probes[n];
        if (p->last_seen <= 0)
            continue;
        bool st = state_probe_stale(s, n, now);
        if (st != p->stale) {
            p->stale = st;
            changed++;
            if (cb)
                cb(arg, s->topo->nodes[n].name, st);
        }
    }
    /* Age out flows nobody reported for a long time; keep the array dense. */
    size_t w = 0;
    for (size_t i = 0; i < s->nflows; i++) {
        /* A pinned flow stays until the rebalance loop unpins it (after its
         * grace, with an event): its pin is state, not telemetry. */
        if (!s->flows[i].pinned && now - s->flows[i].last_seen > STATE_AGE_OUT * s->stale_after)
            continue;
        if (w != i)
            s->flows[w] = s->flows[i];
        w++;
    }
    if (w != s->nflows) {
        s->nflows = w;
        reindex(s, w);
        s->gen++;
    }
    if (changed)
        s->gen++;
    pthread_rwlock_unlock(&s->lock);
    return changed;
}
