/*
 * assign: the three path-assignment algorithms (see assign.h).
 *
 * Shared machinery: per-direction loads (gbps) and inverse capacities; a
 * direct-mapped cache of decoded candidate paths per (src, dst, class), so
 * that the 16 flows of a GPU pair decode their paths once; "usable" means no
 * out-of-service direction and inside the class policy (or the policy is
 * ignored for a pair that no path satisfies). tierflow adds per-direction
 * flow lists and a max segment tree over utilisations for its local search.
 */
#include "policy/assign.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo.h"

#define KMAX 256
/* Direct-mapped pair cache: 256 slots of k candidates (512 KB at k = 64).
 * Measured: 4096 slots do not speed up the fragmented 24K job (its 86,000
 * pairs miss either way); the per-pair decoding template keeps a miss cheap. */
#define CACHE_SLOTS 256
#define H TOPO_MAX_HOPS
#define NIL_DIR UINT32_MAX

struct cand { uint32_t idx; uint8_t nh; uint32_t d[H]; };

struct pairc {
    uint32_t src, dst;
    int cls;
    bool valid, ignored;          /* ignored: no path satisfies the policy */
    uint32_t n;
    uint64_t count;
    struct cand *c;               /* k entries in ctx.pool */
};

/* Decoding template of one (src, dst) on a closed-form Clos (topo->path_fast,
 * both endpoints single-homed hosts), built once per pair so that a fill
 * decodes its k candidates in O(1) each instead of re-deriving the meet
 * level and searching the way down per path (topo_paths.c, fast_dirs: up to
 * spines x superspine uplinks per decode). Same indices and walks as
 * fast_dirs: up choices in link order, first hop most significant, then the
 * first way down in link order. Checked against topo_path_dirs on path 0 and
 * the last path of every pair; a mismatch falls back to topo_path_dirs. */
struct tmpl {
    bool on;
    int m;                        /* up hops to the meet level (1..3) */
    uint32_t src, dst, ls, below, stamp;
    uint32_t *mark, *dn1, *dn2, *via;  /* per node, valid where mark == stamp */
};

struct ctx {
    const struct assign_input *in;
    const struct topo *t;
    uint64_t seed;
    uint32_t ndirs, k;
    double *load, *icap;
    struct pairc *cache;
    struct cand *pool;            /* the cache's candidates, k per slot */
    struct tmpl tp;               /* closed-form decoding of the pair being filled */
    uint64_t eject_work;          /* flows and alternatives the ejections may still examine */
    /* Flows moved before (assign_flow.moved) that the search has moved
     * again, and how many it may (< 0: any; may_move). */
    int64_t again, again_cap;
    uint64_t steps;               /* local-search steps taken */
};

void assign_params_default(struct assign_params *p)
{
    memset(p, 0, sizeof(*p));
    p->seed = 1;
    p->max_moves = -1;
    p->margin = 0.05;
    p->candidates = 64;
}

static const char *const algo_names[ASSIGN_NALGOS] = { "ecmp", "gff", "tierflow" };

int assign_algo_parse(const char *name)
{
    for (int i = 0; name && i < ASSIGN_NALGOS; i++)
        if (strcmp(name, algo_names[i]) == 0)
            return i;
    return -EINVAL;
}

const char *assign_algo_name(int algo) { return algo >= 0 && algo < ASSIGN_NALGOS ? algo_names[algo] : NULL; }

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t assign_ecmp_path(uint32_t hash, uint64_t seed, uint64_t count)
{
    if (count > ASSIGN_MAX_PATHS)
        count = ASSIGN_MAX_PATHS;
    return count ? (uint32_t)(mix64(hash ^ mix64(seed)) % count) : ASSIGN_NO_PATH;
}

/* ---- path decoding ------------------------------------------------------ */

/* topo_path_* are fast on regular Clos fabrics (topo_paths.c); this handle stays
 * for source compatibility and only remembers the topology. */
struct assign_paths { const struct topo *t; };

int assign_paths_new(const struct topo *t, struct assign_paths **out)
{
    struct assign_paths *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->t = t;
    *out = p;
    return 0;
}

void assign_paths_free(struct assign_paths *p) { free(p); }
bool assign_paths_fast(const struct assign_paths *p) { return p->t->path_fast; }

uint64_t assign_paths_count(const struct assign_paths *p, uint32_t src, uint32_t dst)
{
    return topo_path_count(p->t, src, dst);
}

int assign_paths_dirs(const struct assign_paths *p, uint32_t src, uint32_t dst, uint64_t idx, uint32_t *dirs, int max)
{
    return topo_path_dirs(p->t, src, dst, idx, dirs, max);
}

int assign_paths_meet(const struct assign_paths *p, uint32_t a, uint32_t b)
{
    return a == b ? 0 : topo_meet_tier(p->t, a, b);
}

/* ---- paths -------------------------------------------------------------- */

static const struct assign_policy *policy_of(const struct ctx *c, int cls)
{
    const struct assign_input *in = c->in;
    return in->pol && cls >= 0 && (uint32_t)cls < in->npol ? &in->pol[cls] : NULL;
}

/* stay: p is the flow's current path, which a closed direction does not bar. */
static bool usable(const struct ctx *c, const struct cand *p, const struct assign_policy *pol, bool stay)
{
    for (int h = 0; h < p->nh; h++) {
        uint32_t d = p->d[h];
        if (c->in->down && c->in->down[d])
            return false;
        if (!stay && c->in->closed && c->in->closed[d])
            return false;
        if (!pol)
            continue;
        uint32_t node = topo_dir_to(c->t, d);
        if (pol->max_tier >= 0 && c->t->nodes[node].tier > pol->max_tier)
            return false;
        if (pol->node_ok && !pol->node_ok[node])
            return false;
    }
    return true;
}

/* Path idx of the pair the template was built for (idx < count). */
static int tmpl_dirs(const struct ctx *c, uint32_t idx, uint32_t *d)
{
    const struct topo *t = c->t;
    const struct tmpl *tp = &c->tp;
    int n = 0;
    d[n++] = topo_dir(t->up_links[t->nodes[tp->src].up_first], 0);
    if (tp->m >= 2) {
        uint32_t l = t->up_links[t->nodes[tp->ls].up_first + idx / tp->below];
        d[n++] = topo_dir(l, 0);
        uint32_t x = t->links[l].hi;
        if (tp->m == 3) {
            l = t->up_links[t->nodes[x].up_first + idx % tp->below];
            d[n++] = topo_dir(l, 0);
            x = t->links[l].hi;
            if (tp->mark[x] != tp->stamp)
                return -ENOENT;
            d[n++] = tp->dn2[x];
            x = tp->via[x];
        }
        if (tp->mark[x] != tp->stamp || tp->dn1[x] == NIL_DIR)
            return -ENOENT;
        d[n++] = tp->dn1[x];
    }
    d[n++] = topo_dir(t->up_links[t->nodes[tp->dst].up_first], 1);
    return n;
}

/* Builds the template for (src, dst) when the closed form applies; count is
 * the pair's path count. */
static void tmpl_build(struct ctx *c, uint32_t src, uint32_t dst, uint64_t count)
{
    const struct topo *t = c->t;
    struct tmpl *tp = &c->tp;
    tp->on = false;
    if (!tp->mark || !t->path_fast || src == dst || count == 0 || src >= t->nnodes || dst >= t->nnodes)
        return;
    const struct topo_node *a = &t->nodes[src], *b = &t->nodes[dst];
    if (a->tier != TOPO_HOST || b->tier != TOPO_HOST || a->up_count != 1 || b->up_count != 1)
        return;
    uint32_t first[H], last[H];
    int nf = topo_path_dirs(t, src, dst, 0, first, H);
    int nl = topo_path_dirs(t, src, dst, count - 1, last, H);
    if (nf < 2 || nf % 2 || nf > 6 || nl != nf)
        return;
    if (++tp->stamp == 0) {   /* wrapped: clear the marks once */
        memset(tp->mark, 0, (size_t)t->nnodes * sizeof(uint32_t));
        tp->stamp = 1;
    }
    tp->src = src;
    tp->dst = dst;
    tp->m = nf / 2;
    tp->ls = t->links[t->up_links[a->up_first]].hi;
    uint32_t ld = t->links[t->up_links[b->up_first]].hi;
    tp->below = 1;
    if (tp->m == 3) {
        if (!t->nodes[tp->ls].up_count)
            return;
        tp->below = t->nodes[t->links[t->up_links[t->nodes[tp->ls].up_first]].hi].up_count;
    }
    /* The ways down: dn1[s] from spine s to ld (first link of ld to s);
     * dn2[x] from superspine x to the first spine above ld (in ld's link
     * order) that x serves, via[x] that spine (first link of it to x). */
    const struct topo_node *L = &t->nodes[ld];
    for (uint32_t k = 0; tp->m >= 2 && k < L->up_count; k++) {
        uint32_t l = t->up_links[L->up_first + k], sp = t->links[l].hi;
        if (tp->mark[sp] != tp->stamp) {
            tp->mark[sp] = tp->stamp;
            tp->dn1[sp] = topo_dir(l, 1);
        }
    }
    for (uint32_t k = 0; tp->m == 3 && k < L->up_count; k++) {
        uint32_t sp = t->links[t->up_links[L->up_first + k]].hi;
        const struct topo_node *S = &t->nodes[sp];
        for (uint32_t q = 0; q < S->up_count; q++) {
            uint32_t l = t->up_links[S->up_first + q], x = t->links[l].hi;
            if (tp->mark[x] != tp->stamp) {
                tp->mark[x] = tp->stamp;
                tp->dn1[x] = NIL_DIR;   /* a superspine is not a spine above ld */
                tp->dn2[x] = topo_dir(l, 1);
                tp->via[x] = sp;
            }
        }
    }
    uint32_t chk[H];
    tp->on = true;
    tp->on = tmpl_dirs(c, 0, chk) == nf && memcmp(chk, first, (size_t)nf * sizeof(uint32_t)) == 0 &&
             tmpl_dirs(c, (uint32_t)(count - 1), chk) == nl && memcmp(chk, last, (size_t)nl * sizeof(uint32_t)) == 0;
}

static bool decode(const struct ctx *c, uint32_t src, uint32_t dst, uint32_t idx, struct cand *p)
{
    int n = c->tp.on && c->tp.src == src && c->tp.dst == dst ? tmpl_dirs(c, idx, p->d)
                                                          : topo_path_dirs(c->t, src, dst, idx, p->d, H);
    if (n < 0)
        return false;
    p->idx = idx;
    p->nh = (uint8_t)n;
    return true;
}

static void fill(const struct ctx *c, struct pairc *pc, const struct assign_policy *pol)
{
    uint64_t cnt = pc->count;
    pc->n = 0;
    if (cnt <= c->k) {
        for (uint32_t i = 0; i < cnt; i++)
            if (decode(c, pc->src, pc->dst, i, &pc->c[pc->n]) && usable(c, &pc->c[pc->n], pol, false))
                pc->n++;
        return;
    }
    /* Evenly spread sample with a per-pair offset, then a full scan if the
     * sample found nothing usable (a heavily restricted pair). */
    uint64_t off = mix64(((uint64_t)pc->src << 32 | pc->dst) ^ c->seed) % cnt;
    for (uint32_t i = 0; i < c->k; i++) {
        uint32_t idx = (uint32_t)((off + (uint64_t)i * cnt / c->k) % cnt);
        if (decode(c, pc->src, pc->dst, idx, &pc->c[pc->n]) && usable(c, &pc->c[pc->n], pol, false))
            pc->n++;
    }
    for (uint64_t i = 0; pc->n == 0 && i < cnt && pc->n < c->k; i++)
        if (decode(c, pc->src, pc->dst, (uint32_t)i, &pc->c[pc->n]) && usable(c, &pc->c[pc->n], pol, false))
            pc->n++;
}

/* The candidates of a flow (cached). NULL when the pair has no path at all. */
static struct pairc *cands(struct ctx *c, uint32_t src, uint32_t dst, int cls)
{
    uint64_t key = mix64(((uint64_t)src << 32 | dst) ^ ((uint64_t)(uint32_t)cls << 20));
    struct pairc *pc = &c->cache[key % CACHE_SLOTS];
    if (pc->valid && pc->src == src && pc->dst == dst && pc->cls == cls)
        return pc;
    pc->src = src;
    pc->dst = dst;
    pc->cls = cls;
    pc->valid = true;
    pc->ignored = false;
    pc->count = topo_path_count(c->t, src, dst);
    if (pc->count > ASSIGN_MAX_PATHS)
        pc->count = ASSIGN_MAX_PATHS;
    const struct assign_policy *pol = policy_of(c, cls);
    tmpl_build(c, src, dst, pc->count);
    fill(c, pc, pol);
    if (pc->n == 0 && pol) {
        pc->ignored = true;
        fill(c, pc, NULL);
    }
    c->tp.on = false;
    return pc;
}

/* Decodes path idx of the flow into p if it is usable under the pair's rules. */
static bool path_usable(struct ctx *c, const struct assign_flow *f, uint32_t idx, struct cand *p)
{
    /* Without the pair's candidates when the answer does not need them: a
     * decodable path that is usable under the class policy (or with no
     * policy) proves the pair has a usable path and that the policy is not
     * ignored. Only a policy-violating path needs to know whether the policy
     * is ignored for the pair. */
    if (idx == ASSIGN_NO_PATH)
        return false;
    const struct assign_policy *pol = policy_of(c, f->cls);
    bool stay = idx == f->path;
    if (decode(c, f->src, f->dst, idx, p) && usable(c, p, pol, stay))
        return true;
    if (!pol)
        return false;
    struct pairc *pc = cands(c, f->src, f->dst, f->cls);
    if (idx == ASSIGN_NO_PATH || idx >= pc->count || pc->n == 0)
        return false;
    if (!decode(c, f->src, f->dst, idx, p))
        return false;
    return usable(c, p, pc->ignored ? NULL : policy_of(c, f->cls), stay);
}

static void add_load(struct ctx *c, const struct cand *p, double g)
{
    for (int h = 0; h < p->nh; h++)
        c->load[p->d[h]] += g;
}

/* Max utilisation along p with g more on it; *sum gets the sum (tie-break). */
static double cost(const struct ctx *c, const struct cand *p, double g, double *sum)
{
    double m = 0, s = 0;
    for (int h = 0; h < p->nh; h++) {
        double u = (c->load[p->d[h]] + g) * c->icap[p->d[h]];
        s += u;
        if (u > m)
            m = u;
    }
    *sum = s;
    return m;
}

static const struct cand *best_of(const struct ctx *c, const struct pairc *pc, double g, double *bc)
{
    const struct cand *best = NULL;
    double bm = INFINITY, bs = INFINITY;
    for (uint32_t i = 0; i < pc->n; i++) {
        double s, m = cost(c, &pc->c[i], g, &s);
        if (m < bm - 1e-12 || (m <= bm + 1e-12 && s < bs - 1e-12)) {
            bm = m;
            bs = s;
            best = &pc->c[i];
        }
    }
    *bc = bm;
    return best;
}

int assign_flow_dirs(const struct assign_input *in, const uint32_t *path, uint32_t *off, uint32_t *dirs)
{
    off[0] = 0;
    for (uint32_t f = 0; f < in->nflows; f++) {
        int n = path[f] == ASSIGN_NO_PATH ? 0
                : topo_path_dirs(in->t, in->flows[f].src, in->flows[f].dst, path[f], dirs + off[f], H);
        off[f + 1] = off[f] + (uint32_t)(n > 0 ? n : 0);
    }
    return 0;
}

double assign_loads(const struct assign_input *in, const uint32_t *path, double *load)
{
    const struct topo *t = in->t;
    uint32_t nd = 2 * t->nlinks;
    for (uint32_t d = 0; d < nd; d++)
        load[d] = in->bg_gbps ? in->bg_gbps[d] : 0;
    uint32_t dirs[H];
    for (uint32_t f = 0; f < in->nflows; f++) {
        if (path[f] == ASSIGN_NO_PATH)
            continue;
        int n = topo_path_dirs(t, in->flows[f].src, in->flows[f].dst, path[f], dirs, H);
        for (int h = 0; h < n; h++)
            load[dirs[h]] += in->flows[f].gbps;
    }
    double m = 0;
    for (uint32_t d = 0; d < nd; d++) {
        double u = load[d] / topo_dir_gbps(t, d);
        if (u > m)
            m = u;
    }
    return m;
}

/* ---- ECMP and GFF ------------------------------------------------------- */

/* The fabric rehashes around failed or excluded next hops: modelled as the
 * first usable candidate at or after the hashed path. */
static uint32_t ecmp_choice(struct ctx *c, const struct assign_flow *f)
{
    struct pairc *pc = cands(c, f->src, f->dst, f->cls);
    if (pc->n == 0)
        return ASSIGN_NO_PATH;
    uint32_t want = assign_ecmp_path(f->hash, c->seed, pc->count);
    const struct cand *best = &pc->c[0];
    for (uint32_t i = 0; i < pc->n; i++)
        if (pc->c[i].idx >= want) {
            best = &pc->c[i];
            break;
        }
    return best->idx;
}

static bool fits(const struct ctx *c, const struct cand *p, double g)
{
    for (int h = 0; h < p->nh; h++)
        if ((c->load[p->d[h]] + g) * c->icap[p->d[h]] > 1 + 1e-9)
            return false;
    return true;
}

/* Non-movable flows on a usable path stay there under every algorithm. */
static bool pinned(struct ctx *c, const struct assign_flow *f, struct cand *p)
{
    return !f->movable && path_usable(c, f, f->path, p);
}

static int run_simple(struct ctx *c, int algo, uint32_t *out)
{
    const struct assign_input *in = c->in;
    struct cand p;
    for (uint32_t i = 0; i < in->nflows; i++) {
        out[i] = ASSIGN_NO_PATH;
        if (pinned(c, &in->flows[i], &p)) {
            out[i] = in->flows[i].path;
            add_load(c, &p, in->flows[i].gbps);
        }
    }
    for (uint32_t i = 0; i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        if (out[i] != ASSIGN_NO_PATH)
            continue;
        uint32_t choice = ecmp_choice(c, f);
        if (algo == ASSIGN_GFF && choice != ASSIGN_NO_PATH) {
            struct pairc *pc = cands(c, f->src, f->dst, f->cls);
            for (uint32_t k = 0; k < pc->n; k++)
                if (fits(c, &pc->c[k], f->gbps)) {
                    choice = pc->c[k].idx;
                    break;
                }
        }
        out[i] = choice;
        if (choice != ASSIGN_NO_PATH && path_usable(c, f, choice, &p))
            add_load(c, &p, f->gbps);
    }
    return 0;
}

/* ---- tierflow ----------------------------------------------------------- */

struct search {
    uint32_t *fd;                 /* flow f's directions: fd[f * H + h] */
    uint8_t *nh;
    uint32_t *head, *nxt, *prv;   /* per direction, a list of slots f * H + h */
    uint32_t *seg, segn;          /* max segment tree of direction indices */
    uint8_t *frozen;              /* per direction: set aside by the local search */
};

#define NIL UINT32_MAX

static double util(const struct ctx *c, uint32_t d) { return d == NIL ? -1 : c->load[d] * c->icap[d]; }

/* The hottest direction not set aside by the local search. */
static double live(const struct ctx *c, const struct search *s, uint32_t d)
{
    return d == NIL || s->frozen[d] ? -1 : util(c, d);
}

static uint32_t seg_pick(const struct ctx *c, const struct search *s, uint32_t a, uint32_t b)
{
    return live(c, s, b) > live(c, s, a) ? b : a;
}

static void seg_update(const struct ctx *c, struct search *s, uint32_t d)
{
    for (uint32_t i = (s->segn + d) / 2; i >= 1; i /= 2)
        s->seg[i] = seg_pick(c, s, s->seg[2 * i], s->seg[2 * i + 1]);
}

static int seg_build(const struct ctx *c, struct search *s)
{
    s->segn = 1;
    while (s->segn < c->ndirs)
        s->segn *= 2;
    s->seg = malloc(2 * (size_t)s->segn * sizeof(uint32_t));
    if (!s->seg)
        return -ENOMEM;
    for (uint32_t i = 0; i < s->segn; i++)
        s->seg[s->segn + i] = i < c->ndirs ? i : NIL;
    for (uint32_t i = s->segn - 1; i >= 1; i--)
        s->seg[i] = seg_pick(c, s, s->seg[2 * i], s->seg[2 * i + 1]);
    return 0;
}

static void link_flow(struct ctx *c, struct search *s, uint32_t f, const struct cand *p, double g, bool upd)
{
    s->nh[f] = p->nh;
    for (int h = 0; h < p->nh; h++) {
        uint32_t d = p->d[h], slot = f * H + (uint32_t)h;
        s->fd[slot] = d;
        s->prv[slot] = NIL;
        s->nxt[slot] = s->head[d];
        if (s->head[d] != NIL)
            s->prv[s->head[d]] = slot;
        s->head[d] = slot;
        c->load[d] += g;
        if (upd)
            seg_update(c, s, d);
    }
}

static void unlink_flow(struct ctx *c, struct search *s, uint32_t f, double g)
{
    for (uint32_t h = 0; h < s->nh[f]; h++) {
        uint32_t slot = f * H + h, d = s->fd[slot];
        if (s->prv[slot] != NIL)
            s->nxt[s->prv[slot]] = s->nxt[slot];
        else
            s->head[d] = s->nxt[slot];
        if (s->nxt[slot] != NIL)
            s->prv[s->nxt[slot]] = s->prv[slot];
        c->load[d] -= g;
        seg_update(c, s, d);
    }
    s->nh[f] = 0;
}

static int by_demand(const void *a, const void *b, void *ctx)
{
    const struct assign_flow *fl = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const struct assign_flow *x = &fl[i], *y = &fl[j];
    if (x->gbps != y->gbps)
        return x->gbps > y->gbps ? -1 : 1;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Greedy: flows in decreasing demand each take their least-max-utilisation
 * path (a usable current path wins ties). With a move budget only flows
 * that must move are placed here; the others keep their current path. */
static void greedy(struct ctx *c, struct search *s, const struct assign_params *p, const uint32_t *order,
                   const uint8_t *cur_ok, uint32_t *out)
{
    const struct assign_input *in = c->in;
    struct cand cur;
    for (uint32_t k = 0; k < in->nflows; k++) {
        uint32_t i = order[k];
        const struct assign_flow *f = &in->flows[i];
        if (out[i] != ASSIGN_NO_PATH)
            continue;
        bool have_cur = cur_ok[i] && path_usable(c, f, f->path, &cur);
        if (have_cur && p->max_moves >= 0) {
            out[i] = f->path;
            link_flow(c, s, i, &cur, f->gbps, false);
            continue;
        }
        struct pairc *pc = cands(c, f->src, f->dst, f->cls);
        double bc, cc, sum;
        const struct cand *best = best_of(c, pc, f->gbps, &bc);
        if (!best)
            continue;
        if (have_cur && (cc = cost(c, &cur, f->gbps, &sum)) <= bc * (1 + 1e-12))
            best = &cur;
        out[i] = best->idx;
        link_flow(c, s, i, best, f->gbps, false);
    }
}

/* Takes flow i's load off (sign -1) or puts it back on (+1) the loads only:
 * for evaluating moves without touching the lists or the tree. */
static void shift(struct ctx *c, const struct search *s, uint32_t i, double sign)
{
    double g = sign * c->in->flows[i].gbps;
    for (uint32_t h = 0; h < s->nh[i]; h++)
        c->load[s->fd[i * H + h]] += g;
}

/* Moves flow i to path p (lists, loads, tree, move count). */
static void move_to(struct ctx *c, struct search *s, const uint8_t *cur_ok, uint32_t *out, int64_t *used,
                    uint32_t i, const struct cand *p)
{
    const struct assign_flow *f = &c->in->flows[i];
    bool was = cur_ok[i] && out[i] != f->path;
    unlink_flow(c, s, i, f->gbps);
    link_flow(c, s, i, p, f->gbps, true);
    out[i] = p->idx;
    bool is = cur_ok[i] && out[i] != f->path;
    *used += (int64_t)is - (int64_t)was;
    c->again += f->moved ? (int64_t)is - (int64_t)was : 0;
}

/* Whether flow i may move now: movable (or off a usable path), and a move
 * off its current path still fits the budget, and for a flow moved before,
 * the cap on second moves. */
static bool may_move(const struct ctx *c, const struct assign_params *p, const uint8_t *cur_ok, const uint32_t *out,
                     int64_t used, uint32_t i)
{
    const struct assign_flow *f = &c->in->flows[i];
    if (!f->movable && cur_ok[i])
        return false;
    bool counts = cur_ok[i] && out[i] == f->path;
    if (counts && f->moved && c->again_cap >= 0 && c->again >= c->again_cap)
        return false;
    return !(counts && p->max_moves >= 0 && used >= p->max_moves);
}

/* Distinct (pair, class, demand) among the flows of a direction: flows that
 * agree on all four have the same alternatives, so one stands for all. */
struct seen { uint32_t src, dst; int cls; double g; };

static bool seen_before(struct seen *seen, uint32_t *nseen, uint32_t cap, const struct assign_flow *f)
{
    for (uint32_t k = 0; k < *nseen; k++)
        if (seen[k].src == f->src && seen[k].dst == f->dst && seen[k].cls == f->cls && seen[k].g == f->gbps)
            return true;
    if (*nseen < cap)
        seen[(*nseen)++] = (struct seen){ f->src, f->dst, f->cls, f->gbps };
    return false;
}

/* A single-homed host's own link: every path of its flows crosses it. */
static bool pinned_dir(const struct ctx *c, uint32_t d)
{
    const struct topo_node *a = &c->t->nodes[topo_dir_from(c->t, d)], *b = &c->t->nodes[topo_dir_to(c->t, d)];
    return (a->tier == TOPO_HOST && a->up_count == 1) || (b->tier == TOPO_HOST && b->up_count == 1);
}

struct ejlog;
static bool in_log(const struct ejlog *lg, uint32_t i);

/* Takes one unit of the ejection budget; false when it is spent. Never
 * decrements past zero: a nested relieve may spend the last unit while its
 * caller's loop still runs, and a wrapped counter would lift the cap. */
static bool spend(struct ctx *c)
{
    if (c->eject_work == 0)
        return false;
    c->eject_work--;
    return true;
}

/* The best single move off ds of a flow not in skip (NULL: none): the flow
 * whose best alternative leaves the lowest level max(ds after, new path), if
 * below lim. */
static uint32_t best_single(struct ctx *c, struct search *s, const struct assign_params *p, const uint8_t *cur_ok,
                            const uint32_t *out, int64_t used, uint32_t ds, double lim, const struct ejlog *skip,
                            struct cand *bp)
{
    const struct assign_flow *fl = c->in->flows;
    struct seen seen[64];
    uint32_t bf = NIL, nseen = 0;
    for (uint32_t slot = s->head[ds]; slot != NIL; slot = s->nxt[slot]) {
        uint32_t i = slot / H;
        if (skip && !spend(c))
            break;
        if ((skip && in_log(skip, i)) || !may_move(c, p, cur_ok, out, used, i) ||
            seen_before(seen, &nseen, TF_ARRAY_SIZE(seen), &fl[i]))
            continue;
        shift(c, s, i, -1);
        double bc, after = util(c, ds);
        const struct cand *b = best_of(c, cands(c, fl[i].src, fl[i].dst, fl[i].cls), fl[i].gbps, &bc);
        shift(c, s, i, +1);
        double nl = bc > after ? bc : after;
        if (b && b->idx != out[i] && nl < lim) {
            lim = nl;
            bf = i;
            *bp = *b;
        }
    }
    return bf;
}

/* Bounds on the ejection search: distinct flows tried per direction,
 * directions that may block an alternative, nesting depth, moves in one
 * chain (the undo log), and flows plus alternatives examined by all
 * ejections of one run (a fixed base and a share per flow, so the search
 * stays deterministic and its cost bounded at any scale). */
#define EJECT_FLOWS 8
#define EJECT_BLOCKERS 3
#define EJECT_DEPTH 6
#define EJECT_LOG 16
#define EJECT_WORK_BASE 100000
#define EJECT_WORK_PER_FLOW 1
/* Tries of a local-search step with a cap on second moves (0, 1, ... more
 * than before the step) before it may move any flow moved before. */
#define AGAIN_TRIES 4

/* Moves made by one ejection, to undo them if it fails. */
struct ejlog {
    uint32_t n, flow[EJECT_LOG];
    struct cand back[EJECT_LOG];
};

/* Flow i's current placement as a candidate (to undo a move). */
static struct cand placed(const struct search *s, const uint32_t *out, uint32_t i)
{
    struct cand p = { .idx = out[i], .nh = s->nh[i] };
    memcpy(p.d, s->fd + (size_t)i * H, sizeof(p.d));
    return p;
}

static bool in_log(const struct ejlog *lg, uint32_t i)
{
    for (uint32_t k = 0; k < lg->n; k++)
        if (lg->flow[k] == i)
            return true;
    return false;
}

static void log_move(struct ctx *c, struct search *s, const uint8_t *cur_ok, uint32_t *out, int64_t *used,
                     struct ejlog *lg, uint32_t i, const struct cand *to)
{
    lg->back[lg->n] = placed(s, out, i);
    lg->flow[lg->n++] = i;
    move_to(c, s, cur_ok, out, used, i, to);
}

static void undo_to(struct ctx *c, struct search *s, const uint8_t *cur_ok, uint32_t *out, int64_t *used,
                    struct ejlog *lg, uint32_t mark)
{
    while (lg->n > mark) {
        lg->n--;
        move_to(c, s, cur_ok, out, used, lg->flow[lg->n], &lg->back[lg->n]);
    }
}

/* Brings direction d below lim by moves that keep every direction they touch
 * below lim: the best single move of a flow not yet moved in this chain, or
 * else (depth > 0) an ejection: a flow on d takes an alternative that at
 * most EJECT_BLOCKERS other directions block at lim, and each blocker is
 * relieved the same way one level deeper. This is what frees two flows that
 * share a link when every free path of each is held by a flow that could
 * step aside (a Kempe chain in edge-colouring terms). Moves are made for
 * real and undone on failure. */
static bool relieve(struct ctx *c, struct search *s, const struct assign_params *p, const uint8_t *cur_ok,
                    uint32_t *out, int64_t *used, struct ejlog *lg, uint32_t d, double lim, int depth)
{
    const struct assign_flow *fl = c->in->flows;
    struct cand q;
    uint32_t j = best_single(c, s, p, cur_ok, out, *used, d, lim, lg, &q);
    if (j != NIL) {
        if (lg->n == EJECT_LOG)
            return false;
        log_move(c, s, cur_ok, out, used, lg, j, &q);
        return true;
    }
    struct seen seen[EJECT_FLOWS];
    uint32_t nseen = 0;
    for (uint32_t slot = s->head[d]; depth > 0 && slot != NIL && nseen < EJECT_FLOWS; slot = s->nxt[slot]) {
        uint32_t i = slot / H;
        if (in_log(lg, i) || !may_move(c, p, cur_ok, out, *used, i) ||
            seen_before(seen, &nseen, EJECT_FLOWS, &fl[i]))
            continue;
        struct cand home = placed(s, out, i);
        shift(c, s, i, -1);
        double after = util(c, d);
        shift(c, s, i, +1);
        if (after >= lim)
            continue;
        uint32_t n = cands(c, fl[i].src, fl[i].dst, fl[i].cls)->n;
        for (uint32_t k = 0; k < n && lg->n < EJECT_LOG && spend(c); k++) {
            /* Re-fetched: other flows' lookups may evict i's pair. */
            struct cand a = cands(c, fl[i].src, fl[i].dst, fl[i].cls)->c[k];
            uint32_t block[EJECT_BLOCKERS], nb = 0;
            bool ok = a.idx != out[i];
            for (int h = 0; h < a.nh && ok; h++) {
                uint32_t x = a.d[h];
                bool mine = false;
                for (int r = 0; r < home.nh; r++)
                    mine |= home.d[r] == x;
                if ((c->load[x] + (mine ? 0 : fl[i].gbps)) * c->icap[x] < lim)
                    continue;
                ok = nb < EJECT_BLOCKERS && x != d && !pinned_dir(c, x);
                if (ok)
                    block[nb++] = x;
            }
            if (!ok || nb == 0)
                continue;
            uint32_t mark = lg->n;
            log_move(c, s, cur_ok, out, used, lg, i, &a);
            for (uint32_t b = 0; b < nb && ok; b++)
                ok = util(c, block[b]) < lim || relieve(c, s, p, cur_ok, out, used, lg, block[b], lim, depth - 1);
            if (ok)
                return true;
            undo_to(c, s, cur_ok, out, used, lg, mark);
        }
    }
    return false;
}

/* Local search: move the flow that best relieves the hottest direction (or,
 * when no single move does, eject flows in the way), while that strictly lowers it
 * and the budget allows. Each step looks for a way that moves no flow moved
 * before (assign_flow.moved) a second time, then one more, up to
 * AGAIN_TRIES - 1 more, then any: a flow moves once in a steady fabric
 * wherever the search finds how, and as few move twice as it can (bench
 * 50's late starters, docs/lab.md, "Second moves last"). */
static void local_search(struct ctx *c, struct search *s, const struct assign_params *p, const uint8_t *cur_ok,
                         uint32_t *out)
{
    const struct assign_input *in = c->in;
    int64_t used = 0, movers = 0;
    c->again = 0;
    for (uint32_t i = 0; i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        used += cur_ok[i] && f->movable && out[i] != f->path;
        c->again += f->moved && cur_ok[i] && out[i] != f->path;
        movers += f->moved && f->movable && cur_ok[i];
    }
    c->eject_work = EJECT_WORK_BASE + EJECT_WORK_PER_FLOW * (uint64_t)in->nflows;
    bool levelling = false;   /* past the global maximum: only congested directions */
    for (uint64_t it = 0; it < 4 * (uint64_t)in->nflows + 1000; it++) {
        c->steps = it + 1;
        uint32_t ds = s->seg[1];
        double u = live(c, s, ds);
        if (u <= 0 || ds == NIL || (levelling && u <= 1))
            break;
        struct cand bp;
        uint32_t bf = NIL;
        bool relieved = false;
        const double lim = u * (1 - 1e-9);
        /* Caps on second moves: none, then one more each try, then any
         * (the last alone when no flow moved before may move). */
        for (int pass = movers ? 0 : AGAIN_TRIES; pass <= AGAIN_TRIES && bf == NIL && !relieved && !pinned_dir(c, ds);
             pass++) {
            c->again_cap = pass == AGAIN_TRIES ? -1 : c->again + pass;
            bf = best_single(c, s, p, cur_ok, out, used, ds, lim, NULL, &bp);
            struct ejlog lg = { .n = 0 };
            if (bf == NIL && relieve(c, s, p, cur_ok, out, &used, &lg, ds, lim, EJECT_DEPTH)) {
                relieved = p->max_moves < 0 || used <= p->max_moves;
                if (!relieved)
                    undo_to(c, s, cur_ok, out, &used, &lg, 0);
            }
        }
        c->again_cap = -1;
        if (relieved)
            continue;
        if (bf == NIL) {
            /* Nothing relieves ds (a NIC, or every alternative is as hot):
             * set it aside and level the next hottest, which cannot raise
             * ds since new paths must stay below the level being relieved. */
            s->frozen[ds] = 1;
            seg_update(c, s, ds);
            levelling = true;
            continue;
        }
        move_to(c, s, cur_ok, out, &used, bf, &bp);
    }
}

/* Few moves: a moved flow returns to its current path when that keeps every
 * direction of it below the plan's maximum utilisation and uncongested. */
static double top_util(const struct ctx *c)
{
    double top = 0;
    for (uint32_t d = 0; d < c->ndirs; d++)
        if (util(c, d) > top)
            top = util(c, d);
    return top;
}

static void move_back(struct ctx *c, struct search *s, const uint8_t *cur_ok, const uint32_t *order, uint32_t *out)
{
    const struct assign_input *in = c->in;
    double top = top_util(c);
    /* Strictly below the maximum (never add a direction at it), and when the
     * fabric is congested, not onto a congested direction either. */
    double lim = top > 1 ? 1 : top * (1 - 1e-9);
    struct cand cur;
    for (uint32_t k = in->nflows; k-- > 0;) {   /* smallest flows first */
        uint32_t i = order[k];
        const struct assign_flow *f = &in->flows[i];
        if (!cur_ok[i] || out[i] == f->path || !path_usable(c, f, f->path, &cur))
            continue;
        unlink_flow(c, s, i, f->gbps);
        double sum, cc = cost(c, &cur, f->gbps, &sum);
        struct cand now;
        if (cc <= lim) {
            link_flow(c, s, i, &cur, f->gbps, true);
            out[i] = f->path;
        } else if (path_usable(c, f, out[i], &now)) {
            link_flow(c, s, i, &now, f->gbps, true);
        }
    }
}

static bool cand_shares(const struct cand *x, const struct cand *y)
{
    for (int h = 0; h < x->nh; h++)
        for (int k = 0; k < y->nh; k++)
            if (x->d[h] == y->d[k])
                return true;
    return false;
}

/* Fewer moves, the chains move_back cannot see: a to b's place, b to c's,
 * c to a free one, where one move (a to the free place) does the same. A
 * moved flow j whose own path is held by a flow i that moved onto it goes
 * home when i then finds a place (its best) that keeps every direction at
 * most at the plan's maximum and, in a congested fabric, uncongested: one
 * move fewer each time, never a higher maximum. Bounded by work. */
static void unwind(struct ctx *c, struct search *s, const uint8_t *cur_ok, const uint32_t *order, uint32_t *out)
{
    const struct assign_input *in = c->in;
    double top = top_util(c);
    double lim = top > 1 ? 1 : top * (1 + 1e-9);
    uint64_t work = 10000 + 64 * (uint64_t)in->nflows;
    bool again = true;
    while (again && work > 0) {
        again = false;
        for (uint32_t k = in->nflows; k-- > 0 && !again && work > 0;) {   /* smallest flows first */
            uint32_t j = order[k];
            const struct assign_flow *fj = &in->flows[j];
            struct cand home, jnow;
            if (!cur_ok[j] || out[j] == fj->path || !path_usable(c, fj, fj->path, &home) ||
                !path_usable(c, fj, out[j], &jnow))
                continue;
            for (uint32_t i = 0; i < in->nflows && !again && work > 0; i++, work--) {
                const struct assign_flow *fi = &in->flows[i];
                struct cand inow;
                if (i == j || !cur_ok[i] || out[i] == fi->path || !path_usable(c, fi, out[i], &inow) ||
                    !cand_shares(&inow, &home))
                    continue;
                unlink_flow(c, s, i, fi->gbps);
                unlink_flow(c, s, j, fj->gbps);
                double sum, bc;
                if (cost(c, &home, fj->gbps, &sum) <= lim) {
                    link_flow(c, s, j, &home, fj->gbps, true);
                    const struct cand *b = best_of(c, cands(c, fi->src, fi->dst, fi->cls), fi->gbps, &bc);
                    if (b && bc <= lim) {
                        struct cand to = *b;
                        link_flow(c, s, i, &to, fi->gbps, true);
                        out[j] = fj->path;
                        out[i] = to.idx;
                        again = true;
                        break;
                    }
                    unlink_flow(c, s, j, fj->gbps);
                }
                link_flow(c, s, j, &jnow, fj->gbps, true);
                link_flow(c, s, i, &inow, fi->gbps, true);
            }
        }
    }
}

/* Marks the directions of x that y does not cross. */
static void mark_diff(const struct cand *x, const struct cand *y, uint8_t *aff)
{
    for (int h = 0; h < x->nh; h++) {
        bool shared = false;
        for (int k = 0; k < y->nh && !shared; k++)
            shared = x->d[h] == y->d[k];
        if (!shared)
            aff[x->d[h]] = 1;
    }
}

/* Plan-level hysteresis: the directions the moves touch (on a flow's old or
 * new path but not both) must get at least margin cooler at their hottest,
 * or every discretionary move is undone. */
static void maybe_revert(struct ctx *c, const struct assign_params *p, const uint8_t *cur_ok, uint32_t *out)
{
    const struct assign_input *in = c->in;
    uint8_t *aff = calloc(c->ndirs, 1);
    if (!aff)
        return;
    struct cand a, b;
    bool any = false;
    for (uint32_t i = 0; i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        if (!cur_ok[i] || out[i] == f->path || !path_usable(c, f, out[i], &a) || !path_usable(c, f, f->path, &b))
            continue;
        any = true;
        mark_diff(&a, &b, aff);
        mark_diff(&b, &a, aff);
    }
    double before = 0, keep = 0;
    for (uint32_t d = 0; d < c->ndirs; d++)
        if (aff[d] && util(c, d) > before)
            before = util(c, d);
    for (uint32_t i = 0; any && i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        if (cur_ok[i] && out[i] != f->path && path_usable(c, f, out[i], &a) && path_usable(c, f, f->path, &b)) {
            add_load(c, &a, -f->gbps);
            add_load(c, &b, f->gbps);
        }
    }
    for (uint32_t d = 0; any && d < c->ndirs; d++)
        if (aff[d] && util(c, d) > keep)
            keep = util(c, d);
    free(aff);
    if (!any || before < keep * (1 - p->margin))
        return;
    for (uint32_t i = 0; i < in->nflows; i++)
        if (cur_ok[i])
            out[i] = in->flows[i].path;
}

static int run_tierflow(struct ctx *c, const struct assign_params *p, uint32_t *out)
{
    const struct assign_input *in = c->in;
    uint32_t n = in->nflows;
    struct search s = { 0 };
    uint32_t *order = malloc(((size_t)n + 1) * sizeof(uint32_t));
    uint8_t *cur_ok = calloc((size_t)n + 1, 1);
    s.fd = malloc(((size_t)n * H + 1) * sizeof(uint32_t));
    s.nxt = malloc(((size_t)n * H + 1) * sizeof(uint32_t));
    s.prv = malloc(((size_t)n * H + 1) * sizeof(uint32_t));
    s.nh = calloc((size_t)n + 1, 1);
    s.head = malloc(((size_t)c->ndirs + 1) * sizeof(uint32_t));
    s.frozen = calloc((size_t)c->ndirs + 1, 1);
    int r = -ENOMEM;
    if (!order || !cur_ok || !s.fd || !s.nxt || !s.prv || !s.nh || !s.head || !s.frozen)
        goto out;
    for (uint32_t d = 0; d < c->ndirs; d++)
        s.head[d] = NIL;
    struct cand cur;
    for (uint32_t i = 0; i < n; i++) {
        order[i] = i;
        out[i] = ASSIGN_NO_PATH;
        cur_ok[i] = path_usable(c, &in->flows[i], in->flows[i].path, &cur);
        if (cur_ok[i] && !in->flows[i].movable) {
            out[i] = in->flows[i].path;
            link_flow(c, &s, i, &cur, in->flows[i].gbps, false);
        }
    }
    qsort_r(order, n, sizeof(uint32_t), by_demand, (void *)in->flows);
    greedy(c, &s, p, order, cur_ok, out);
    if ((r = seg_build(c, &s)) < 0)
        goto out;
    local_search(c, &s, p, cur_ok, out);
    move_back(c, &s, cur_ok, order, out);
    unwind(c, &s, cur_ok, order, out);
    maybe_revert(c, p, cur_ok, out);
    r = 0;
out:
    free(order); free(cur_ok); free(s.fd); free(s.nxt); free(s.prv); free(s.nh); free(s.head); free(s.seg); free(s.frozen);
    return r;
}

/* ---- driver ------------------------------------------------------------- */

#define fail(err, errlen, ...) tf_fail((err), (errlen), -EINVAL, __VA_ARGS__)

static int check(const struct assign_input *in, const struct assign_params *p, char *err, size_t errlen)
{
    const struct topo *t = in->t;
    if (!t)
        return fail(err, errlen, "assign: no topology");
    if (!(p->margin >= 0 && p->margin < 1))
        return fail(err, errlen, "assign: margin %g outside [0, 1)", p->margin);
    for (uint32_t d = 0; in->bg_gbps && d < 2 * t->nlinks; d++)
        if (!(in->bg_gbps[d] >= 0) || !isfinite(in->bg_gbps[d]))
            return fail(err, errlen, "assign: background load of direction %u is %g", d, in->bg_gbps[d]);
    for (uint32_t i = 0; i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        if (f->src >= t->nnodes || f->dst >= t->nnodes)
            return fail(err, errlen, "assign: flow %u: endpoint is not a node", i);
        if (!(f->gbps > 0) || !isfinite(f->gbps))
            return fail(err, errlen, "assign: flow %u: demand %g gbps is not positive", i, f->gbps);
    }
    return 0;
}

int assign_run(int algo, const struct assign_input *in, const struct assign_params *p,
               struct assign_result *res, char *err, size_t errlen)
{
    struct assign_params defp;
    if (!p) {
        assign_params_default(&defp);
        p = &defp;
    }
    if (algo < 0 || algo >= ASSIGN_NALGOS)
        return fail(err, errlen, "assign: unknown algorithm %d", algo);
    int r = check(in, p, err, errlen);
    if (r < 0)
        return r;
    double t0 = tf_now_mono();
    struct ctx c = { .in = in, .t = in->t, .seed = p->seed, .again_cap = -1 };
    c.k = p->candidates ? (p->candidates > KMAX ? KMAX : p->candidates) : 64;
    c.ndirs = 2 * in->t->nlinks;
    c.load = malloc(((size_t)c.ndirs + 1) * sizeof(double));
    c.icap = malloc(((size_t)c.ndirs + 1) * sizeof(double));
    c.cache = calloc(CACHE_SLOTS, sizeof(struct pairc));
    c.pool = malloc((size_t)CACHE_SLOTS * c.k * sizeof(struct cand));
    for (uint32_t i = 0; c.cache && c.pool && i < CACHE_SLOTS; i++)
        c.cache[i].c = c.pool + (size_t)i * c.k;
    size_t nn = (size_t)in->t->nnodes + 1;
    c.tp.mark = calloc(nn, sizeof(uint32_t));
    c.tp.dn1 = malloc(nn * sizeof(uint32_t));
    c.tp.dn2 = malloc(nn * sizeof(uint32_t));
    c.tp.via = malloc(nn * sizeof(uint32_t));
    r = -ENOMEM;
    if (!c.load || !c.icap || !c.cache || !c.pool || !c.tp.mark || !c.tp.dn1 || !c.tp.dn2 || !c.tp.via)
        goto out;
    for (uint32_t d = 0; d < c.ndirs; d++) {
        c.load[d] = in->bg_gbps ? in->bg_gbps[d] : 0;
        c.icap[d] = 1.0 / topo_dir_gbps(in->t, d);
    }
    r = algo == ASSIGN_TIERFLOW ? run_tierflow(&c, p, res->path) : run_simple(&c, algo, res->path);
    if (r < 0)
        goto out;
    res->moved = res->unroutable = 0;
    for (uint32_t i = 0; i < in->nflows; i++) {
        if (res->path[i] == ASSIGN_NO_PATH)
            res->unroutable++;
        else if (in->flows[i].path != ASSIGN_NO_PATH && res->path[i] != in->flows[i].path)
            res->moved++;
    }
    res->unconfined = 0;
    struct cand pp;
    for (uint32_t i = 0; i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        const struct assign_policy *pol = policy_of(&c, f->cls);
        /* A path inside the policy proves it is not ignored for the pair. */
        if (res->path[i] == ASSIGN_NO_PATH || !pol ||
            (decode(&c, f->src, f->dst, res->path[i], &pp) && usable(&c, &pp, pol, true)))
            continue;
        res->unconfined += cands(&c, f->src, f->dst, f->cls)->ignored;
    }
    res->work = algo != ASSIGN_TIERFLOW ? 0
                : c.steps + EJECT_WORK_BASE + EJECT_WORK_PER_FLOW * (uint64_t)in->nflows - c.eject_work;
    res->max_util = assign_loads(in, res->path, c.load);
    res->compute_s = tf_now_mono() - t0;
out:
    free(c.load);
    free(c.icap);
    free(c.cache);
    free(c.pool);
    free(c.tp.mark);
    free(c.tp.dn1);
    free(c.tp.dn2);
    free(c.tp.via);
    return r;
}
