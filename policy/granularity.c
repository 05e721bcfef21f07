/*
 * granularity: see granularity.h. A flow's route beyond its leaf is its
 * path's directions after the first (host -> leaf); flows are grouped by
 * (leaf, destination) with a sort, and a flow that differs from its group's
 * majority gets the first of its own paths with the majority's route.
 */
#include "policy/granularity.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/topo.h"

struct member {
    uint32_t leaf, dst, f;
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

/* Whether the route beyond the leaf (dirs after the first) is the same. */
static int same_tail(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb)
{
    return na == nb && (na <= 1 || !memcmp(a + 1, b + 1, (na - 1) * sizeof(*a)));
}

int granularity_destination(const struct assign_input *in, uint32_t *path, uint32_t *changed)
{
    const struct topo *t = in->t;
    uint32_t n = in->nflows;
    *changed = 0;
    uint32_t *off = malloc(((size_t)n + 1) * sizeof(*off));
    uint32_t *dirs = malloc(((size_t)n * TOPO_MAX_HOPS + 1) * sizeof(*dirs));
    struct member *m = malloc(((size_t)n + 1) * sizeof(*m));
    int rc = off && dirs && m ? assign_flow_dirs(in, path, off, dirs) : -ENOMEM;
    uint32_t nm = 0;
    for (uint32_t f = 0; f < n && !rc; f++)
        if (path[f] != ASSIGN_NO_PATH)
            m[nm++] = (struct member){topo_leaf_of(t, in->flows[f].src), in->flows[f].dst, f};
    if (!rc)
        qsort(m, nm, sizeof(*m), member_cmp);
    uint32_t buf[TOPO_MAX_HOPS];
    for (uint32_t i = 0, j; i < nm && !rc; i = j) {
        for (j = i + 1; j < nm && m[j].leaf == m[i].leaf && m[j].dst == m[i].dst; j++)
            ;
        /* The majority's route: the first flow whose route most share. */
        uint32_t best = m[i].f, bestn = 0;
        for (uint32_t a = i; a < j; a++) {
            uint32_t fa = m[a].f, cnt = 0;
            for (uint32_t b = i; b < j; b++)
                cnt += same_tail(dirs + off[fa], off[fa + 1] - off[fa], dirs + off[m[b].f],
                                 off[m[b].f + 1] - off[m[b].f]);
            if (cnt > bestn)
                best = fa, bestn = cnt;
        }
        const uint32_t *bt = dirs + off[best];
        uint32_t bn = off[best + 1] - off[best];
        for (uint32_t a = i; a < j; a++) {
            uint32_t f = m[a].f;
            if (same_tail(dirs + off[f], off[f + 1] - off[f], bt, bn))
                continue;
            uint64_t np = topo_path_count(t, in->flows[f].src, in->flows[f].dst);
            for (uint64_t p = 0; p < np; p++) {
                int h = topo_path_dirs(t, in->flows[f].src, in->flows[f].dst, p, buf, TOPO_MAX_HOPS);
                if (h > 0 && same_tail(buf, (uint32_t)h, bt, bn)) {
                    path[f] = (uint32_t)p;
                    (*changed)++;
                    break;
                }
            }
        }
    }
    free(off);
    free(dirs);
    free(m);
    return rc;
}
