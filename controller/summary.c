/*
 * summary: see summary.h. One pass over the probes, one over the flows and,
 * when the thresholds are given, one over the link directions' loads.
 */
#include "controller/summary.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "controller/config.h"
#include "controller/state.h"

/* Directions' figures from their loads (state_dir_loads at the same now). */
static void links(const struct state *s, const struct config *cfg, const double *bps, const double *ce,
                  struct summary *out)
{
    for (uint32_t d = 0; d < out->dirs; d++) {
        double u = state_dir_util(s, d, bps[d]);
        out->max_util = u > out->max_util ? u : out->max_util;
        out->congested += config_congested(cfg, u, ce[d]);
        out->down += !s->dirs[d].up;
    }
}

int summary_get(const struct state *s, const struct config *cfg, double now, struct summary *out)
{
    memset(out, 0, sizeof(*out));
    const struct topo *t = s->topo;
    for (uint32_t n = 0; n < t->nnodes; n++)
        if (s->probes[n].last_seen > 0) {
            bool stale = state_probe_stale(s, n, now);
            out->probes++;
            stale ? out->stale++ : out->alive++;
        }
    for (size_t i = 0; i < s->nflows; i++) {
        const struct state_flow *f = &s->flows[i];
        if (state_flow_stale(s, f, now))
            continue;
        out->flows++;
        out->fat += f->fat;
        out->pinned += f->pinned;
        if (f->fat && f->cls >= 0 && f->cls < CLASSES_MAX)
            out->fat_by_class[f->cls]++;
    }
    if (!cfg)
        return 0;
    uint32_t nd = 2 * t->nlinks;
    out->dirs = nd;
    double *bps = calloc(nd + 1, sizeof(double)), *ce = calloc(nd + 1, sizeof(double));
    int rc = bps && ce ? 0 : -ENOMEM;
    if (rc == 0) {
        state_dir_loads(s, now, bps, ce, NULL);
        links(s, cfg, bps, ce, out);
    }
    free(bps);
    free(ce);
    return rc;
}
