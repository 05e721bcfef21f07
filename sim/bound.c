/*
 * bound: cut and single-flow lower bounds (see bound.h). Each cut sums, per
 * direction of travel, the demand of flows whose endpoints sit on opposite
 * sides, and compares it with the capacity of the links across the cut that
 * are in service. O(flows + links) plus a path scan for the largest flows.
 */
#include "sim/bound.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/topo.h"

#define TOP_FLOWS 32

static void consider(struct bound_result *b, double v, const char *what, const char *name, const char *way)
{
    if (v > b->value) {
        b->value = v;
        snprintf(b->why, sizeof(b->why), "%s %s%s%s", what, name, way ? " " : "", way ? way : "");
    }
}

static bool single(const struct topo *t, uint32_t n)
{
    return t->nodes[n].tier == TOPO_HOST && t->nodes[n].up_count == 1;
}

/* A pod cut is sound when every leaf of the pod goes up only to spines of
 * the pod and those spines have uplinks. pod_ok[p]. */
static void pods_sound(const struct topo *t, uint8_t *pod_ok, uint32_t npods)
{
    for (uint32_t p = 0; p < npods; p++)
        pod_ok[p] = p != 0 && t->ntiers >= 4;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        const struct topo_node *x = &t->nodes[n];
        if (x->tier != TOPO_LEAF || x->pod >= npods)
            continue;
        for (uint32_t k = 0; k < x->up_count; k++) {
            uint32_t s = t->links[t->up_links[x->up_first + k]].hi;
            if (t->nodes[s].pod != x->pod || t->nodes[s].up_count == 0)
                pod_ok[x->pod] = 0;
        }
    }
}

/* Capacity and background of the uplinks of node n, each way. */
static void up_cut(const struct assign_input *in, uint32_t n, double cap[2], double bg[2])
{
    const struct topo *t = in->t;
    for (uint32_t k = 0; k < t->nodes[n].up_count; k++) {
        uint32_t l = t->up_links[t->nodes[n].up_first + k];
        for (int w = 0; w < 2; w++) {
            uint32_t d = topo_dir(l, w);
            if (in->down && in->down[d])
                continue;
            cap[w] += t->links[l].gbps;
            bg[w] += in->bg_gbps ? in->bg_gbps[d] : 0;
        }
    }
}

static void flows_bound(const struct assign_input *in, const struct assign_paths *ps, struct bound_result *b)
{
    const struct topo *t = in->t;
    uint32_t top[TOP_FLOWS], nt = 0;   /* largest demands, descending */
    for (uint32_t f = 0; f < in->nflows; f++) {
        uint32_t k;
        if (nt < TOP_FLOWS)
            k = nt++;
        else if (in->flows[f].gbps > in->flows[top[TOP_FLOWS - 1]].gbps)
            k = TOP_FLOWS - 1;
        else
            continue;
        top[k] = f;
        for (; k > 0 && in->flows[top[k]].gbps > in->flows[top[k - 1]].gbps; k--) {
            uint32_t x = top[k];
            top[k] = top[k - 1];
            top[k - 1] = x;
        }
    }
    uint32_t dirs[TOPO_MAX_HOPS];
    for (uint32_t i = 0; i < nt; i++) {
        const struct assign_flow *f = &in->flows[top[i]];
        uint64_t cnt = assign_paths_count(ps, f->src, f->dst);
        if (cnt == 0 || cnt > 4096 || f->src == f->dst)
            continue;
        double best = INFINITY;
        for (uint64_t p = 0; p < cnt; p++) {
            int n = assign_paths_dirs(ps, f->src, f->dst, p, dirs, TOPO_MAX_HOPS);
            double m = 0;
            for (int h = 0; h < n; h++) {
                if (in->down && in->down[dirs[h]]) {
                    m = INFINITY;
                    break;
                }
                double u = ((in->bg_gbps ? in->bg_gbps[dirs[h]] : 0) + f->gbps) / topo_dir_gbps(t, dirs[h]);
                if (u > m)
                    m = u;
            }
            if (n > 0 && m < best)
                best = m;
        }
        if (isfinite(best))
            consider(b, best, "flow", t->nodes[f->src].name, "alone on its best path");
    }
}

int bound_max_util(const struct assign_input *in, struct bound_result *b)
{
    const struct topo *t = in->t;
    memset(b, 0, sizeof(*b));
    snprintf(b->why, sizeof(b->why), "no load");
    for (uint32_t d = 0; in->bg_gbps && d < 2 * t->nlinks; d++)
        consider(b, in->bg_gbps[d] / topo_dir_gbps(t, d), "background on",
                 t->nodes[topo_dir_from(t, d)].name, NULL);
    uint32_t npods = 1;
    for (uint32_t n = 0; n < t->nnodes; n++)
        if (t->nodes[n].pod + 1 > npods)
            npods = t->nodes[n].pod + 1;
    /* out[node][w]: traffic leaving (w=0) / entering (w=1) the set under node;
     * podt likewise per pod. */
    double *out = calloc(2 * (size_t)t->nnodes, sizeof(double));
    double *podt = calloc(2 * (size_t)npods, sizeof(double));
    uint8_t *pod_ok = calloc(npods, 1);
    struct assign_paths *ps = NULL;
    int rc = -ENOMEM;
    if (!out || !podt || !pod_ok || assign_paths_new(t, &ps) < 0)
        goto done;
    pods_sound(t, pod_ok, npods);
    for (uint32_t i = 0; i < in->nflows; i++) {
        const struct assign_flow *f = &in->flows[i];
        if (f->src == f->dst || !single(t, f->src) || !single(t, f->dst))
            continue;
        double g = f->gbps;
        out[2 * f->src] += g;
        out[2 * f->dst + 1] += g;
        uint32_t ls = topo_leaf_of(t, f->src), ld = topo_leaf_of(t, f->dst);
        if (ls == ld)
            continue;
        out[2 * ls] += g;
        out[2 * ld + 1] += g;
        uint32_t ps_ = t->nodes[ls].pod, pd = t->nodes[ld].pod;
        if (ps_ != pd && pod_ok[ps_] && pod_ok[pd]) {
            podt[2 * ps_] += g;
            podt[2 * pd + 1] += g;
        }
    }
    static const char *const way[2] = { "(up)", "(down)" };
    for (uint32_t n = 0; n < t->nnodes; n++) {
        int tier = t->nodes[n].tier;
        if (!(tier == TOPO_LEAF || single(t, n)) || (out[2 * n] == 0 && out[2 * n + 1] == 0))
            continue;
        double cap[2] = { 0, 0 }, bg[2] = { 0, 0 };
        up_cut(in, n, cap, bg);
        for (int w = 0; w < 2; w++)
            if (cap[w] > 0)
                consider(b, (out[2 * n + w] + bg[w]) / cap[w], tier == TOPO_LEAF ? "leaf uplinks of" : "NIC of",
                         t->nodes[n].name, way[w]);
    }
    /* Pods: the uplinks of the pod's spines. */
    double *pc = calloc(4 * (size_t)npods, sizeof(double));
    if (!pc)
        goto done;
    for (uint32_t n = 0; n < t->nnodes; n++)
        if (t->nodes[n].tier == TOPO_SPINE && t->nodes[n].pod < npods && pod_ok[t->nodes[n].pod])
            up_cut(in, n, &pc[4 * t->nodes[n].pod], &pc[4 * t->nodes[n].pod + 2]);
    for (uint32_t p = 0; p < npods; p++) {
        char name[24];
        snprintf(name, sizeof(name), "%u", p);
        for (int w = 0; w < 2; w++)
            if (pod_ok[p] && pc[4 * p + w] > 0)
                consider(b, (podt[2 * p + w] + pc[4 * p + 2 + w]) / pc[4 * p + w], "spine uplinks of pod", name, way[w]);
    }
    free(pc);
    flows_bound(in, ps, b);
    rc = 0;
done:
    free(out);
    free(podt);
    free(pod_ok);
    assign_paths_free(ps);
    return rc;
}
