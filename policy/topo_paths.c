/*
 * topo_paths: shortest up/down (valley-free) paths between two nodes, counted and
 * decoded without ever being listed.
 *
 * For a query (src, dst) we build the two "up cones": level j holds every
 * node j tiers above the endpoint that it reaches by going up only, with the
 * number of such up-walks (cnt). Since every link joins adjacent tiers, the
 * walks to level j all have j hops. The meet level is the lowest tier where
 * the cones intersect; a node x there carries cnt_src(x) * cnt_dst(x) paths
 * (down-walks x->dst are reversed up-walks dst->x).
 *
 * Path order: index = mixed-radix choice, at each hop, among the current
 * node's links in CSR order, each weighted by how many paths continue through
 * it (f in the src cone on the way up, cnt in the dst cone on the way down).
 * Links that cannot reach dst weigh 0 and are skipped, so irregular fabrics
 * are exact. A query costs O(cone sizes): ~100 entries for a host of the 24K
 * or 100K Clos, with no per-path memory. Counts saturate at UINT64_MAX.
 *
 * That is 10-20 us a query, too slow for the assignment loop and for
 * 24K-rank jobs. On regular Clos fabrics (single-homed hosts; every uplink
 * of a leaf or spine leads to the destination; one way down from each
 * switch) the same indices and walks have a closed form: up choices in link
 * order, the first hop most significant, then the unique way down. The
 * topology loader turns it on (topo_path_set_fast) only if it agrees with
 * the general algorithm on 96 sampled host pairs; queries between nodes
 * that are not single-homed hosts always take the general algorithm.
 */
#include "policy/topo_paths.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct cone_ent {
    uint32_t node;
    uint64_t cnt;   /* up-walks from the cone's origin */
    uint64_t f;     /* src cone only: paths to dst continuing from this node */
};

struct cone {
    struct cone_ent *e;
    size_t n, cap;
    size_t off[TOPO_NTIERS_MAX + 1];  /* level j = e[off[j] .. off[j+1]) */
    int nlev;
};

struct pathq {
    const struct topo *t;
    uint32_t src, dst;
    struct cone s, d;
    int up, down;   /* hops up to the meet level and down from it; -1 if none */
    uint64_t count;
};

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static int cmp_ent(const void *a, const void *b)
{
    uint32_t x = ((const struct cone_ent *)a)->node, y = ((const struct cone_ent *)b)->node;
    return x < y ? -1 : x > y;
}

static int cone_push(struct cone *c, uint32_t node, uint64_t cnt)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        struct cone_ent *e = realloc(c->e, cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        c->e = e;
        c->cap = cap;
    }
    c->e[c->n++] = (struct cone_ent){node, cnt, 0};
    return 0;
}

/* Levels 0..top of the up cone of `origin`; each level sorted by node, merged. */
static int cone_build(const struct topo *t, uint32_t origin, int top, struct cone *c)
{
    memset(c, 0, sizeof(*c));
    if (cone_push(c, origin, 1) < 0)
        return -ENOMEM;
    c->off[1] = 1;
    for (int j = 0; j < top; j++) {
        size_t start = c->n;
        for (size_t i = c->off[j]; i < c->off[j + 1]; i++) {
            const struct topo_node *n = &t->nodes[c->e[i].node];
            for (uint32_t k = 0; k < n->up_count; k++)
                if (cone_push(c, t->links[t->up_links[n->up_first + k]].hi, c->e[i].cnt) < 0)
                    return -ENOMEM;
        }
        qsort(c->e + start, c->n - start, sizeof(*c->e), cmp_ent);
        size_t w = start;
        for (size_t i = start; i < c->n; i++) {
            if (w > start && c->e[w - 1].node == c->e[i].node)
                c->e[w - 1].cnt = sat_add(c->e[w - 1].cnt, c->e[i].cnt);
            else
                c->e[w++] = c->e[i];
        }
        c->n = w;
        c->off[j + 2] = w;
    }
    c->nlev = top + 1;
    return 0;
}

static struct cone_ent *cone_find(const struct cone *c, int level, uint32_t node)
{
    if (level < 0 || level >= c->nlev)
        return NULL;
    struct cone_ent key = {.node = node};
    return bsearch(&key, c->e + c->off[level], c->off[level + 1] - c->off[level], sizeof(key), cmp_ent);
}

static void pathq_free(struct pathq *q)
{
    free(q->s.e);
    free(q->d.e);
}

/* 0 with q->up/down/count set (up = -1 when no path), or -errno. need_f:
 * also weigh the src cone's lower levels, which decoding needs. */
static int pathq_init(struct pathq *q, const struct topo *t, uint32_t src, uint32_t dst, int need_f)
{
    memset(q, 0, sizeof(*q));
    q->up = q->down = -1;
    if (!t || src >= t->nnodes || dst >= t->nnodes)
        return -EINVAL;
    q->t = t;
    q->src = src;
    q->dst = dst;
    int ps = topo_tier_pos(t, t->nodes[src].tier), pd = topo_tier_pos(t, t->nodes[dst].tier), top = t->ntiers - 1;
    if (ps < 0 || pd < 0)
        return -EINVAL;
    if (cone_build(t, src, top - ps, &q->s) < 0 || cone_build(t, dst, top - pd, &q->d) < 0)
        return -ENOMEM;
    for (int m = ps > pd ? ps : pd; m <= top && q->up < 0; m++) {
        int ls = m - ps, ld = m - pd;
        uint64_t sum = 0;
        for (size_t i = q->s.off[ls]; i < q->s.off[ls + 1]; i++) {
            struct cone_ent *x = &q->s.e[i], *y = cone_find(&q->d, ld, x->node);
            x->f = y ? y->cnt : 0;
            sum = sat_add(sum, sat_mul(x->cnt, x->f));
        }
        if (!sum)
            continue;
        q->up = ls;
        q->down = ld;
        q->count = sum;
    }
    if (q->up < 0 || !need_f)
        return 0;
    /* f below the meet level: paths through each uplink that stays in the cone. */
    for (int j = q->up - 1; j >= 0; j--)
        for (size_t i = q->s.off[j]; i < q->s.off[j + 1]; i++) {
            struct cone_ent *v = &q->s.e[i];
            const struct topo_node *n = &t->nodes[v->node];
            v->f = 0;
            for (uint32_t k = 0; k < n->up_count; k++) {
                const struct cone_ent *w = cone_find(&q->s, j + 1, t->links[t->up_links[n->up_first + k]].hi);
                v->f = sat_add(v->f, w ? w->f : 0);
            }
        }
    return 0;
}

/* The weight of taking link direction `dir` at hop h from node v (0 if it
 * is not a step of any path), and the node it leads to. */
static uint64_t step_weight(const struct pathq *q, int h, uint32_t v, uint32_t dir, uint32_t *next)
{
    const struct topo *t = q->t;
    if (dir / 2 >= t->nlinks || topo_dir_from(t, dir) != v)
        return 0;
    *next = topo_dir_to(t, dir);
    if (h < q->up) {
        if (topo_dir_is_down(dir))
            return 0;
        const struct cone_ent *w = cone_find(&q->s, h + 1, *next);
        return w ? w->f : 0;
    }
    if (!topo_dir_is_down(dir))
        return 0;
    const struct cone_ent *y = cone_find(&q->d, q->up + q->down - h - 1, *next);
    return y ? y->cnt : 0;
}

#define STEP_BUF 256

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The candidate links at hop h from v, in path order (ascending link id,
 * which is CSR order): uplinks while climbing, downlinks after the meet
 * level. A spine may have hundreds of downlinks of which only those towards
 * dst's few ancestors matter, so when those ancestors' uplinks are fewer we
 * list the links into v from them instead (same set of nonzero weights, same
 * order). buf holds STEP_BUF entries. */
static void step_links(const struct pathq *q, int h, uint32_t v, uint32_t *buf, const uint32_t **links,
                       uint32_t *n, int *down)
{
    const struct topo *t = q->t;
    const struct topo_node *nd = &t->nodes[v];
    *down = h >= q->up;
    if (!*down) {
        *links = t->up_links + nd->up_first;
        *n = nd->up_count;
        return;
    }
    *links = t->down_links + nd->down_first;
    *n = nd->down_count;
    int lev = q->up + q->down - h - 1;
    uint64_t total = 0;
    for (size_t i = q->d.off[lev]; i < q->d.off[lev + 1]; i++)
        total += t->nodes[q->d.e[i].node].up_count;
    if (total >= nd->down_count || total > STEP_BUF)
        return;
    uint32_t k = 0;
    for (size_t i = q->d.off[lev]; i < q->d.off[lev + 1]; i++) {
        const struct topo_node *y = &t->nodes[q->d.e[i].node];
        for (uint32_t j = 0; j < y->up_count; j++) {
            uint32_t l = t->up_links[y->up_first + j];
            if (t->links[l].hi == v)
                buf[k++] = l;
        }
    }
    qsort(buf, k, sizeof(*buf), cmp_u32);
    *links = buf;
    *n = k;
}

static int general_meet(const struct topo *t, uint32_t a, uint32_t b)
{
    struct pathq q;
    int r = pathq_init(&q, t, a, b, 0);
    if (r == 0)
        r = q.up < 0 ? -ENOENT : t->tiers[topo_tier_pos(t, t->nodes[a].tier) + q.up];
    pathq_free(&q);
    return r;
}

static uint64_t general_count(const struct topo *t, uint32_t src, uint32_t dst)
{
    struct pathq q;
    uint64_t n = pathq_init(&q, t, src, dst, 0) == 0 ? q.count : 0;
    pathq_free(&q);
    return n;
}

/* Decodes path idx of an initialised query into dirs (room for its hops). */
static int decode(const struct pathq *q, uint64_t idx, uint32_t *dirs, int max)
{
    if (q->up < 0 || !q->count)
        return -ENOENT;
    if (idx >= q->count)
        return -ERANGE;
    int hops = q->up + q->down;
    if (hops > max || (hops && !dirs))
        return -ENOSPC;
    uint32_t v = q->src;
    for (int h = 0; h < hops; h++) {
        const uint32_t *links;
        uint32_t n, next = TOPO_NONE, buf[STEP_BUF];
        int down, found = 0;
        step_links(q, h, v, buf, &links, &n, &down);
        for (uint32_t k = 0; k < n && !found; k++) {
            uint32_t dir = topo_dir(links[k], down), to;
            uint64_t w = step_weight(q, h, v, dir, &to);
            if (idx < w)
                dirs[h] = dir, next = to, found = 1;
            else
                idx -= w;
        }
        if (!found)   /* weights are sums of their children: cannot happen */
            return -EIO;
        v = next;
    }
    return hops;
}

static int general_dirs(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, uint32_t *dirs, int max)
{
    struct pathq q;
    int r = pathq_init(&q, t, src, dst, 1);
    if (r == 0)
        r = decode(&q, idx, dirs, max);
    pathq_free(&q);
    return r;
}

static int64_t general_all(const struct topo *t, uint32_t src, uint32_t dst, uint32_t *dirs, uint64_t max_paths,
                           int *hops)
{
    struct pathq q;
    int64_t r = pathq_init(&q, t, src, dst, 1);
    *hops = 0;
    if (r == 0 && q.up < 0)
        r = -ENOENT;
    uint64_t n = q.count < max_paths ? q.count : max_paths;
    if (n > INT64_MAX)
        n = INT64_MAX;
    for (uint64_t i = 0; r == 0 && i < n; i++) {
        int h = decode(&q, i, dirs + i * TOPO_MAX_HOPS, TOPO_MAX_HOPS);
        if (h < 0)
            r = h;
        else
            *hops = h;
    }
    pathq_free(&q);
    return r < 0 ? r : (int64_t)n;
}

/* Walks dirs[0..n) through q; the paths sharing that prefix are
 * [*first, *first + *count). */
static int prefix_range(const struct pathq *q, const uint32_t *dirs, int n, uint64_t *first, uint64_t *count)
{
    if (q->up < 0)
        return -ENOENT;
    if (n < 0 || n > q->up + q->down || (n && !dirs))
        return -EINVAL;
    uint64_t off = 0, span = q->count;
    uint32_t v = q->src;
    for (int h = 0; h < n; h++) {
        const uint32_t *links;
        uint32_t nl, to, next = TOPO_NONE, buf[STEP_BUF];
        int down;
        step_links(q, h, v, buf, &links, &nl, &down);
        span = 0;
        for (uint32_t k = 0; k < nl && !span; k++) {
            uint32_t dir = topo_dir(links[k], down);
            uint64_t w = step_weight(q, h, v, dir, &to);
            if (dir == dirs[h])
                span = w, next = to;
            else
                off = sat_add(off, w);
        }
        if (!span)
            return -EINVAL;
        v = next;
    }
    *first = off;
    *count = span;
    return 0;
}

int topo_path_prefix_range(const struct topo *t, uint32_t src, uint32_t dst, const uint32_t *dirs, int n,
                           uint64_t *first, uint64_t *count)
{
    struct pathq q;
    *first = *count = 0;
    int r = pathq_init(&q, t, src, dst, 1);
    if (r == 0)
        r = prefix_range(&q, dirs, n, first, count);
    pathq_free(&q);
    return r;
}

int topo_path_index_of(const struct topo *t, uint32_t src, uint32_t dst, const uint32_t *dirs, int n,
                       uint64_t *idx)
{
    struct pathq q;
    uint64_t first, count;
    int r = pathq_init(&q, t, src, dst, 1);
    if (r == 0)
        r = prefix_range(&q, dirs, n, &first, &count);
    if (r == 0 && n != q.up + q.down)
        r = -EINVAL;
    if (r == 0)
        *idx = first;
    pathq_free(&q);
    return r;
}

/* ---- closed form for regular Clos fabrics -------------------------------- */


static uint32_t up_nb(const struct topo *t, uint32_t n, uint32_t k)
{
    return t->links[t->up_links[t->nodes[n].up_first + k]].hi;
}

static bool single_host(const struct topo *t, uint32_t n)
{
    return n < t->nnodes && t->nodes[n].tier == TOPO_HOST && t->nodes[n].up_count == 1;
}

/* Up hops to the meet level: 1 under one leaf, 2 when the leaves share a
 * spine (checked on the source leaf's first spine: regular fabrics share all
 * or none), 3 over the superspines; -1 if none. */
static int fast_level(const struct topo *t, uint32_t src, uint32_t dst, uint32_t *ls, uint32_t *ld)
{
    *ls = up_nb(t, src, 0);
    *ld = up_nb(t, dst, 0);
    if (*ls == *ld)
        return 1;
    if (!t->nodes[*ls].up_count)
        return -1;
    uint32_t s = up_nb(t, *ls, 0);
    for (uint32_t q = 0; q < t->nodes[*ld].up_count; q++)
        if (up_nb(t, *ld, q) == s)
            return 2;
    return t->nodes[s].up_count ? 3 : -1;
}

static uint64_t fast_count(const struct topo *t, uint32_t src, uint32_t dst)
{
    uint32_t ls, ld;
    if (src == dst)
        return 1;
    int m = fast_level(t, src, dst, &ls, &ld);
    if (m < 0)
        return 0;
    uint64_t c = 1;
    if (m >= 2)
        c *= t->nodes[ls].up_count;
    if (m >= 3)
        c *= t->nodes[up_nb(t, ls, 0)].up_count;
    return c;
}

/* The down direction from hi-tier node x to its lower neighbour y. */
static int down_to(const struct topo *t, uint32_t y, uint32_t x, uint32_t *dir)
{
    for (uint32_t k = 0; k < t->nodes[y].up_count; k++) {
        uint32_t l = t->up_links[t->nodes[y].up_first + k];
        if (t->links[l].hi == x) {
            *dir = topo_dir(l, 1);
            return 0;
        }
    }
    return -ENOENT;
}

static int fast_dirs(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, uint32_t *dirs, int max)
{
    if (src == dst)
        return idx == 0 ? 0 : -ERANGE;
    uint32_t ls, ld;
    int m = fast_level(t, src, dst, &ls, &ld), n = 0;
    if (m < 0)
        return -ENOENT;
    if (max < 2 * m)
        return -ENOSPC;
    uint64_t below = m >= 3 ? t->nodes[up_nb(t, ls, 0)].up_count : 1;
    if (idx >= fast_count(t, src, dst))
        return -ERANGE;
    dirs[n++] = topo_dir(t->up_links[t->nodes[src].up_first], 0);
    uint32_t x = ls;
    for (int j = 1; j < m; j++) {
        uint64_t c = idx / below;
        idx %= below;
        uint32_t l = t->up_links[t->nodes[x].up_first + (uint32_t)c];
        dirs[n++] = topo_dir(l, 0);
        x = t->links[l].hi;
        below = 1;
    }
    if (m == 3) { /* superspine x: down to the spine above ld that it serves */
        uint32_t d1 = 0, d2 = 0;
        bool ok = false;
        for (uint32_t k = 0; k < t->nodes[ld].up_count && !ok; k++) {
            uint32_t s = up_nb(t, ld, k);
            ok = down_to(t, s, x, &d1) == 0 && down_to(t, ld, s, &d2) == 0;
        }
        if (!ok)
            return -ENOENT;
        dirs[n++] = d1;
        dirs[n++] = d2;
    } else if (m == 2) {
        uint32_t d;
        if (down_to(t, ld, x, &d) < 0)
            return -ENOENT;
        dirs[n++] = d;
    }
    dirs[n++] = topo_dir(t->up_links[t->nodes[dst].up_first], 1);
    return n;
}

static bool use_fast(const struct topo *t, uint32_t a, uint32_t b)
{
    return t->path_fast && single_host(t, a) && single_host(t, b);
}

int topo_meet_tier(const struct topo *t, uint32_t a, uint32_t b)
{
    uint32_t ls, ld;
    if (a != b && t && use_fast(t, a, b)) {
        int m = fast_level(t, a, b, &ls, &ld);
        return m < 0 ? -ENOENT : t->tiers[m];
    }
    return general_meet(t, a, b);
}

uint64_t topo_path_count(const struct topo *t, uint32_t src, uint32_t dst)
{
    return t && use_fast(t, src, dst) ? fast_count(t, src, dst) : general_count(t, src, dst);
}

int topo_path_dirs(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, uint32_t *dirs, int max)
{
    if (t && use_fast(t, src, dst))
        return !dirs && src != dst ? -ENOSPC : fast_dirs(t, src, dst, idx, dirs, max);
    return general_dirs(t, src, dst, idx, dirs, max);
}

int64_t topo_path_all(const struct topo *t, uint32_t src, uint32_t dst, uint32_t *dirs, uint64_t max_paths,
                      int *hops)
{
    if (!t || !use_fast(t, src, dst))
        return general_all(t, src, dst, dirs, max_paths, hops);
    uint64_t n = fast_count(t, src, dst);
    *hops = 0;
    if (!n)
        return -ENOENT;
    if (n > max_paths)
        n = max_paths;
    for (uint64_t i = 0; i < n; i++) {
        int h = fast_dirs(t, src, dst, i, dirs + i * TOPO_MAX_HOPS, TOPO_MAX_HOPS);
        if (h < 0)
            return h;
        *hops = h;
    }
    return (int64_t)n;
}

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static bool same_path(const struct topo *t, uint32_t a, uint32_t b, uint64_t idx)
{
    uint32_t x[TOPO_MAX_HOPS], y[TOPO_MAX_HOPS];
    int n1 = general_dirs(t, a, b, idx, x, TOPO_MAX_HOPS), n2 = fast_dirs(t, a, b, idx, y, TOPO_MAX_HOPS);
    return n1 == n2 && n1 >= 0 && memcmp(x, y, (size_t)n1 * sizeof(uint32_t)) == 0;
}

int topo_path_set_fast(struct topo *t, int on)
{
    t->path_fast = 0;
    bool ok = on && t->nhosts >= 2;
    for (uint32_t i = 0; i < t->nhosts && ok; i++)
        ok = single_host(t, t->hosts[i]);
    /* Neighbours (same leaf), the far half, and seeded random pairs: count,
     * meet tier and the first, last and one random path of each. */
    for (uint32_t k = 0; k < 96 && ok; k++) {
        uint32_t i = (uint32_t)(mix64(k) % t->nhosts), j;
        j = k % 3 == 0 ? (i + 1) % t->nhosts : k % 3 == 1 ? (i + t->nhosts / 2) % t->nhosts
                                                          : (uint32_t)(mix64(k + 1000) % t->nhosts);
        uint32_t a = t->hosts[i], b = t->hosts[j], ls, ld;
        uint64_t c = general_count(t, a, b);
        int m = a == b ? 0 : fast_level(t, a, b, &ls, &ld);
        ok = c != 0 && c == fast_count(t, a, b) && m >= 0 && m < t->ntiers &&
             (a == b || general_meet(t, a, b) == t->tiers[m]) && same_path(t, a, b, 0) &&
             same_path(t, a, b, c - 1) && same_path(t, a, b, mix64(k + 7) % c);
    }
    t->path_fast = ok;
    return ok;
}
