/*
 * granularity: see granularity.h. A flow's route is its path's directions
 * beyond its leaf (after the first, host -> leaf, when it starts at a host);
 * flows are grouped by (leaf, destination) with a sort. A flow takes a
 * route as the first of its own paths with that route. The units
 * granularity_assign plans start at the leaf: their paths are routes, and
 * the members' first hops, which no choice changes, are background.
 */
#include "policy/granularity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/topo.h"

struct member {
    uint32_t leaf, dst, f;
};

/* A group is m[i .. group_end(i)): flows of one (leaf, destination) in
 * input order; off/dirs are assign_flow_dirs of the paths grouped. */
struct groups {
    struct member *m;
    uint32_t nm;
    uint32_t *off, *dirs;
};

static int member_cmp(const void *x, const void *y)
{
    const struct member *a = x, *b = y;
    if (a->leaf != b->leaf)
        return a->leaf < b->leaf ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    return a->f < b->f ? -1 : a->f > b->f;
}

/* How many of a path's first directions from src lie before its leaf. */
static uint32_t skip_of(const struct topo *t, uint32_t src)
{
    return t->nodes[src].tier == TOPO_HOST ? 1 : 0;
}

/* Whether path a (na dirs, from a node whose skip is sa) has route r[nr]. */
static bool has_route(const uint32_t *a, uint32_t na, uint32_t sa, const uint32_t *r, uint32_t nr)
{
    return na >= sa && na - sa == nr && (!nr || !memcmp(a + sa, r, nr * sizeof(*r)));
}

static void groups_free(struct groups *g)
{
    free(g->m);
    free(g->off);
    free(g->dirs);
    memset(g, 0, sizeof(*g));
}

/* Groups the flows that have a path in path. 0 or -ENOMEM. */
static int groups_make(const struct assign_input *in, const uint32_t *path, struct groups *g)
{
    uint32_t n = in->nflows;
    g->nm = 0;
    g->off = malloc(((size_t)n + 1) * sizeof(*g->off));
    g->dirs = malloc(((size_t)n * TOPO_MAX_HOPS + 1) * sizeof(*g->dirs));
    g->m = malloc(((size_t)n + 1) * sizeof(*g->m));
    int rc = g->off && g->dirs && g->m ? assign_flow_dirs(in, path, g->off, g->dirs) : -ENOMEM;
    for (uint32_t f = 0; f < n && !rc; f++)
        if (path[f] != ASSIGN_NO_PATH)
            g->m[g->nm++] = (struct member){topo_leaf_of(in->t, in->flows[f].src), in->flows[f].dst, f};
    if (!rc)
        qsort(g->m, g->nm, sizeof(*g->m), member_cmp);
    else
        groups_free(g);
    return rc;
}

static uint32_t group_end(const struct groups *g, uint32_t i)
{
    uint32_t j = i + 1;
    while (j < g->nm && g->m[j].leaf == g->m[i].leaf && g->m[j].dst == g->m[i].dst)
        j++;
    return j;
}

/* Flow f's route in g (its grouped path beyond the leaf). */
static const uint32_t *route_of(const struct assign_input *in, const struct groups *g, uint32_t f, uint32_t *n)
{
    uint32_t s = skip_of(in->t, in->flows[f].src), len = g->off[f + 1] - g->off[f];
    *n = len > s ? len - s : 0;
    return g->dirs + g->off[f] + (len > s ? s : len);
}

/* The flow of group [i, j) whose route most of the group share. */
static uint32_t group_majority(const struct assign_input *in, const struct groups *g, uint32_t i, uint32_t j)
{
    uint32_t best = g->m[i].f, bestn = 0;
    for (uint32_t a = i; a < j; a++) {
        uint32_t na, cnt = 0;
        const uint32_t *ra = route_of(in, g, g->m[a].f, &na);
        for (uint32_t b = i; b < j; b++) {
            uint32_t nb;
            const uint32_t *rb = route_of(in, g, g->m[b].f, &nb);
            cnt += has_route(rb, nb, 0, ra, na);
        }
        if (cnt > bestn)
            best = g->m[a].f, bestn = cnt;
    }
    return best;
}

/* The first path src -> dst whose route is r[nr], or ASSIGN_NO_PATH. */
static uint32_t path_with_route(const struct topo *t, uint32_t src, uint32_t dst, const uint32_t *r, uint32_t nr)
{
    uint32_t buf[TOPO_MAX_HOPS], s = skip_of(t, src);
    uint64_t np = topo_path_count(t, src, dst);
    for (uint64_t p = 0; p < np && p < ASSIGN_MAX_PATHS; p++) {
        int h = topo_path_dirs(t, src, dst, p, buf, TOPO_MAX_HOPS);
        if (h >= 0 && has_route(buf, (uint32_t)h, s, r, nr))
            return (uint32_t)p;
    }
    return ASSIGN_NO_PATH;
}

int granularity_destination(const struct assign_input *in, uint32_t *path, uint32_t *changed)
{
    struct groups g;
    *changed = 0;
    int rc = groups_make(in, path, &g);
    for (uint32_t i = 0, j; i < g.nm && !rc; i = j) {
        j = group_end(&g, i);
        uint32_t nb;
        const uint32_t *rb = route_of(in, &g, group_majority(in, &g, i, j), &nb);
        for (uint32_t a = i; a < j; a++) {
            uint32_t f = g.m[a].f, nf;
            const uint32_t *rf = route_of(in, &g, f, &nf);
            if (has_route(rf, nf, 0, rb, nb))
                continue;
            uint32_t p = path_with_route(in->t, in->flows[f].src, in->flows[f].dst, rb, nb);
            if (p != ASSIGN_NO_PATH) {
                path[f] = p;
                (*changed)++;
            }
        }
    }
    if (!rc)
        groups_free(&g);
    return rc;
}

/* The plan of granularity_assign: units[nu] and each flow's unit. */
struct units {
    struct assign_flow *u;
    uint32_t nu, *unit_of;
    double *bg;                   /* in's background plus the members' first hops */
};

/*
 * The groups of the flows' current paths made consistent
 * (granularity_destination), a flow without one grouped by its endpoints:
 * each group one unit from its leaf, its current path the group's route,
 * movable when all its flows are.
 */
static int units_make(const struct assign_input *in, struct units *us)
{
    uint32_t n = in->nflows, nd = 2 * in->t->nlinks, changed;
    uint32_t *cur = malloc(((size_t)n + 1) * sizeof(*cur)), *gp = malloc(((size_t)n + 1) * sizeof(*gp));
    us->u = malloc(((size_t)n + 1) * sizeof(*us->u));
    us->unit_of = malloc(((size_t)n + 1) * sizeof(*us->unit_of));
    us->bg = calloc((size_t)nd + 1, sizeof(*us->bg));
    us->nu = 0;
    struct groups g = {0};
    int rc = cur && gp && us->u && us->unit_of && us->bg ? 0 : -ENOMEM;
    for (uint32_t f = 0; f < n && !rc; f++)
        cur[f] = in->flows[f].path;
    if (!rc)
        rc = granularity_destination(in, cur, &changed);
    /* Path 0 for a flow without one only places it in the sort; its first
     * hop is its host's uplink all the same. */
    for (uint32_t f = 0; f < n && !rc; f++)
        gp[f] = cur[f] != ASSIGN_NO_PATH ? cur[f] : 0;
    if (!rc)
        rc = groups_make(in, gp, &g);
    for (uint32_t d = 0; d < nd && !rc; d++)
        us->bg[d] = in->bg_gbps ? in->bg_gbps[d] : 0;
    for (uint32_t i = 0, j; i < g.nm && !rc; i = j) {
        j = group_end(&g, i);
        struct assign_flow u = in->flows[g.m[i].f];
        u.src = g.m[i].leaf;
        u.path = ASSIGN_NO_PATH;
        u.gbps = 0;
        for (uint32_t a = i; a < j; a++) {
            uint32_t f = g.m[a].f, nr;
            const struct assign_flow *fl = &in->flows[f];
            const uint32_t *r = route_of(in, &g, f, &nr);
            if (u.path == ASSIGN_NO_PATH && cur[f] != ASSIGN_NO_PATH)
                u.path = path_with_route(in->t, u.src, u.dst, r, nr);
            if (skip_of(in->t, fl->src) && g.off[f + 1] > g.off[f])
                us->bg[g.dirs[g.off[f]]] += fl->gbps;
            u.gbps += fl->gbps;
            u.movable = u.movable && fl->movable;
            u.moved = u.moved || fl->moved;
            us->unit_of[f] = us->nu;
        }
        us->u[us->nu++] = u;
    }
    if (g.m)
        groups_free(&g);
    free(cur);
    free(gp);
    return rc;
}

int granularity_assign(int algo, const struct assign_input *in, const struct assign_params *p,
                       struct assign_result *res, char *err, size_t errlen)
{
    uint32_t n = in->nflows;
    struct units us = {0};
    uint32_t *upath = malloc(((size_t)n + 1) * sizeof(*upath));
    double *load = malloc(((size_t)in->t->nlinks * 2 + 1) * sizeof(*load));
    int rc = upath && load ? units_make(in, &us) : -ENOMEM;
    struct assign_input uin = *in;
    uin.flows = us.u;
    uin.nflows = us.nu;
    uin.bg_gbps = us.bg;
    struct assign_result ur = {.path = upath};
    if (!rc)
        rc = assign_run(algo, &uin, p, &ur, err, errlen);
    else
        snprintf(err, errlen, "assign: out of memory");
    if (!rc) {
        res->moved = res->unroutable = 0;
        res->unconfined = ur.unconfined;
        res->work = ur.work;
        res->compute_s = ur.compute_s;
        for (uint32_t f = 0; f < n; f++) {
            const struct assign_flow *u = &us.u[us.unit_of[f]];
            uint32_t r[TOPO_MAX_HOPS], up = upath[us.unit_of[f]];
            int h = up == ASSIGN_NO_PATH ? -1 : topo_path_dirs(in->t, u->src, u->dst, up, r, TOPO_MAX_HOPS);
            res->path[f] = h >= 0 ? path_with_route(in->t, in->flows[f].src, in->flows[f].dst, r, (uint32_t)h)
                                  : ASSIGN_NO_PATH;
            res->unroutable += res->path[f] == ASSIGN_NO_PATH;
            res->moved += res->path[f] != in->flows[f].path;
        }
        res->max_util = assign_loads(in, res->path, load);
    }
    free(us.u);
    free(us.unit_of);
    free(us.bg);
    free(upath);
    free(load);
    return rc;
}
