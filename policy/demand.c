/*
 * demand: Hedera's iterative demand estimation, following Figure 6 of the
 * paper step for step (EST-SRC, EST-DST) so that its worked example can be
 * checked line by line; only the NIC capacity is generalised from 1.
 */
#include "policy/demand.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

struct est {
    uint32_t *ooff, *oflows, *ioff, *iflows;
    bool *conv, *rl;
};

static double capof(const double *cap, uint32_t h) { return cap ? cap[h] : 1.0; }

static bool set(double *d, double v)
{
    bool changed = fabs(*d - v) > 1e-12 * (fabs(v) + 1e-300);
    *d = v;
    return changed;
}

static bool est_src(const struct est *e, double c, uint32_t h, double *dem)
{
    double df = 0;
    uint32_t nu = 0;
    for (uint32_t k = e->ooff[h]; k < e->ooff[h + 1]; k++) {
        uint32_t f = e->oflows[k];
        if (e->conv[f])
            df += dem[f];
        else
            nu++;
    }
    if (!nu)
        return false;
    double es = (c - df) / nu;
    if (es < 0)
        es = 0;
    bool changed = false;
    for (uint32_t k = e->ooff[h]; k < e->ooff[h + 1]; k++)
        if (!e->conv[e->oflows[k]])
            changed |= set(&dem[e->oflows[k]], es);
    return changed;
}

static bool est_dst(const struct est *e, double c, uint32_t h, double *dem)
{
    double dt = 0, ds = 0;
    uint32_t nr = 0;
    for (uint32_t k = e->ioff[h]; k < e->ioff[h + 1]; k++) {
        uint32_t f = e->iflows[k];
        e->rl[f] = true;
        dt += dem[f];
        nr++;
    }
    if (dt <= c * (1 + 1e-12))
        return false;
    double es = c / nr;
    bool again;
    do {
        again = false;
        nr = 0;
        for (uint32_t k = e->ioff[h]; k < e->ioff[h + 1]; k++) {
            uint32_t f = e->iflows[k];
            if (!e->rl[f])
                continue;
            if (dem[f] < es) {
                ds += dem[f];
                e->rl[f] = false;
                again = true;
            } else {
                nr++;
            }
        }
        if (nr)
            es = (c - ds) / nr;
    } while (again && nr);
    bool changed = false;
    for (uint32_t k = e->ioff[h]; k < e->ioff[h + 1]; k++) {
        uint32_t f = e->iflows[k];
        if (e->rl[f]) {
            changed |= set(&dem[f], es);
            changed |= !e->conv[f];
            e->conv[f] = true;
        }
    }
    return changed;
}

static int csr(uint32_t nhosts, uint32_t nflows, const uint32_t *end, uint32_t **off, uint32_t **list)
{
    *off = calloc((size_t)nhosts + 2, sizeof(uint32_t));
    *list = malloc(((size_t)nflows + 1) * sizeof(uint32_t));
    if (!*off || !*list)
        return -ENOMEM;
    for (uint32_t f = 0; f < nflows; f++)
        (*off)[end[f] + 2]++;
    for (uint32_t h = 0; h < nhosts; h++)
        (*off)[h + 2] += (*off)[h + 1];
    for (uint32_t f = 0; f < nflows; f++)
        (*list)[(*off)[end[f] + 1]++] = f;
    return 0;
}

int demand_estimate(uint32_t nhosts, const double *cap, uint32_t nflows, const uint32_t *src,
                    const uint32_t *dst, double *demand)
{
    for (uint32_t h = 0; cap && h < nhosts; h++)
        if (!(cap[h] > 0) || !isfinite(cap[h]))
            return -EINVAL;
    for (uint32_t f = 0; f < nflows; f++)
        if (src[f] >= nhosts || dst[f] >= nhosts)
            return -EINVAL;
    struct est e = { 0 };
    int rc = -ENOMEM;
    e.conv = calloc((size_t)nflows + 1, sizeof(bool));
    e.rl = calloc((size_t)nflows + 1, sizeof(bool));
    if (!e.conv || !e.rl || csr(nhosts, nflows, src, &e.ooff, &e.oflows) < 0 ||
        csr(nhosts, nflows, dst, &e.ioff, &e.iflows) < 0)
        goto out;
    for (uint32_t f = 0; f < nflows; f++)
        demand[f] = 0;
    /* Each round converges at least one receiver's flows or stops; the bound
     * only guards against floating-point ping-pong. */
    for (uint32_t round = 0; round < 2 * nhosts + 16; round++) {
        bool changed = false;
        for (uint32_t h = 0; h < nhosts; h++)
            changed |= est_src(&e, capof(cap, h), h, demand);
        for (uint32_t h = 0; h < nhosts; h++)
            changed |= est_dst(&e, capof(cap, h), h, demand);
        if (!changed)
            break;
    }
    rc = 0;
out:
    free(e.conv); free(e.rl); free(e.ooff); free(e.oflows); free(e.ioff); free(e.iflows);
    return rc;
}
