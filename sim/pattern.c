/*
 * pattern: generators for pattern.h. Hosts are addressed by their index in
 * t->hosts; groups (same leaf, same pod) are CSR lists built once per call.
 */
#include "sim/pattern.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/classes.h"

struct gen {
    const struct topo *t;
    uint64_t rng;
    struct pattern_flow *f;
    uint32_t n, cap, fpp;
};

#define fail(err, errlen, ...) tf_fail((err), (errlen), -EINVAL, __VA_ARGS__)

static uint64_t rnd(struct gen *g)
{
    uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t below(struct gen *g, uint32_t n) { return (uint32_t)(rnd(g) % n); }
static double unit(struct gen *g) { return (double)(rnd(g) >> 11) / 9007199254740992.0; }

static int add(struct gen *g, uint32_t a, uint32_t b, int cls)
{
    if (a == b)
        return 0;
    if ((uint64_t)g->n + g->fpp > PATTERN_MAX_FLOWS)
        return -E2BIG;
    if (g->n + g->fpp > g->cap) {
        uint32_t nc = g->cap ? g->cap * 2 : 1024;
        while (nc < g->n + g->fpp)
            nc *= 2;
        struct pattern_flow *nf = realloc(g->f, (size_t)nc * sizeof(*nf));
        if (!nf)
            return -ENOMEM;
        g->f = nf;
        g->cap = nc;
    }
    for (uint32_t k = 0; k < g->fpp; k++)
        g->f[g->n++] = (struct pattern_flow){ g->t->hosts[a], g->t->hosts[b], 0, cls };
    return 0;
}

/* Host indices grouped by key (CSR): members of key k are list[off[k]..off[k+1]). */
struct groups { uint32_t *key, *off, *list, nkeys; };

static int group(const struct topo *t, bool by_pod, struct groups *gr)
{
    uint32_t nh = t->nhosts;
    gr->nkeys = by_pod ? 1 : t->nnodes;
    gr->key = malloc((size_t)nh * sizeof(uint32_t));
    if (!gr->key)
        return -ENOMEM;
    for (uint32_t i = 0; i < nh; i++) {
        uint32_t leaf = topo_leaf_of(t, t->hosts[i]);
        gr->key[i] = leaf == TOPO_NONE ? 0 : by_pod ? t->nodes[leaf].pod : leaf;
        if (gr->key[i] + 1 > gr->nkeys)
            gr->nkeys = gr->key[i] + 1;
    }
    gr->off = calloc((size_t)gr->nkeys + 2, sizeof(uint32_t));
    gr->list = malloc((size_t)nh * sizeof(uint32_t));
    if (!gr->off || !gr->list)
        return -ENOMEM;
    for (uint32_t i = 0; i < nh; i++)
        gr->off[gr->key[i] + 2]++;
    for (uint32_t k = 0; k < gr->nkeys; k++)
        gr->off[k + 2] += gr->off[k + 1];
    for (uint32_t i = 0; i < nh; i++)
        gr->list[gr->off[gr->key[i] + 1]++] = i;
    return 0;
}

static void groups_free(struct groups *gr) { free(gr->key); free(gr->off); free(gr->list); }

/* A random other member of i's group, or UINT32_MAX if i is alone. */
static uint32_t peer(struct gen *g, const struct groups *gr, uint32_t i)
{
    uint32_t k = gr->key[i], sz = gr->off[k + 1] - gr->off[k];
    if (sz < 2)
        return UINT32_MAX;
    uint32_t j = gr->list[gr->off[k] + below(g, sz - 1)];
    return j == i ? gr->list[gr->off[k + 1] - 1] : j;
}

static uint32_t other(struct gen *g, uint32_t i)
{
    uint32_t j = below(g, g->t->nhosts - 1);
    return j >= i ? j + 1 : j;
}

static int staggered(struct gen *g, double ep, double pp)
{
    struct groups leaf = { 0 }, pod = { 0 };
    int r = group(g->t, false, &leaf);
    if (r == 0)
        r = group(g->t, true, &pod);
    for (uint32_t i = 0; r == 0 && i < g->t->nhosts; i++) {
        double u = unit(g);
        uint32_t j = UINT32_MAX;
        if (u < ep)
            j = peer(g, &leaf, i);
        else if (u < ep + pp)
            for (int tries = 0; tries < 64 && (j == UINT32_MAX || leaf.key[j] == leaf.key[i]); tries++)
                j = peer(g, &pod, i);
        else
            for (int tries = 0; tries < 64 && (j == UINT32_MAX || pod.key[j] == pod.key[i]); tries++)
                j = other(g, i);
        r = add(g, i, j == UINT32_MAX ? other(g, i) : j, CLASS_DEFAULT);
    }
    groups_free(&leaf);
    groups_free(&pod);
    return r;
}

static int shuffled(struct gen *g, uint32_t **out)
{
    uint32_t n = g->t->nhosts, *p = malloc((size_t)n * sizeof(uint32_t));
    if (!p)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        p[i] = i;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t k = below(g, i), x = p[i - 1];
        p[i - 1] = p[k];
        p[k] = x;
    }
    *out = p;
    return 0;
}

static int randbij(struct gen *g)
{
    uint32_t *p, n = g->t->nhosts;
    int r = shuffled(g, &p);
    if (r < 0)
        return r;
    for (uint32_t i = 0; i < n; i++)
        if (p[i] == i) {   /* swap the fixed point with a neighbour */
            uint32_t k = (i + 1) % n, x = p[i];
            p[i] = p[k];
            p[k] = x;
        }
    for (uint32_t i = 0; r == 0 && i < n; i++)
        r = add(g, i, p[i], CLASS_DEFAULT);
    free(p);
    return r;
}

static int hotspot(struct gen *g, double frac)
{
    uint32_t *p, n = g->t->nhosts, hot = (uint32_t)(frac * n);
    int r = shuffled(g, &p);
    if (hot < 1)
        hot = 1;
    for (uint32_t i = 0; r == 0 && i < n; i++) {
        uint32_t j = unit(g) < 0.5 ? p[below(g, hot)] : other(g, i);
        r = add(g, i, j == i ? other(g, i) : j, CLASS_DEFAULT);
    }
    free(p);
    return r;
}

/* A flow between ranks a and b, on their hosts. */
static int rank_add(struct gen *g, const uint32_t *host, uint32_t a, uint32_t b, int cls)
{
    return add(g, host ? host[a] : a, host ? host[b] : b, cls);
}

/* Ranks on hosts in order, or (shuffle) on a seeded permutation of all
 * hosts: the fragmented placement a busy scheduler leaves, with the ranks of
 * one tensor-parallel group scattered over racks and pods. */
static int job(struct gen *g, const uint32_t size[4], bool shuffle)
{
    static const int cls[4] = { CLASS_TP, CLASS_CP, CLASS_PP, CLASS_DP };
    uint64_t n = (uint64_t)size[0] * size[1] * size[2] * size[3];
    if (n > g->t->nhosts)
        return -ERANGE;
    uint32_t *host = NULL;
    int r = 0;
    if (shuffle && (r = shuffled(g, &host)) < 0)
        return r;
    for (uint32_t rk = 0; r == 0 && rk < n; rk++) {
        uint32_t stride = 1;
        for (int i = 0; r == 0 && i < 4; i++) {
            uint32_t c = rk / stride % size[i];
            if (size[i] > 1) {
                if (cls[i] == CLASS_PP) {
                    if (c + 1 < size[i])
                        r = rank_add(g, host, rk, rk + stride, CLASS_PP);
                    if (r == 0 && c > 0)
                        r = rank_add(g, host, rk, rk - stride, CLASS_PP);
                } else {
                    uint32_t nc = (c + 1) % size[i];
                    r = rank_add(g, host, rk, rk - c * stride + nc * stride, cls[i]);
                }
            }
            stride *= size[i];
        }
    }
    free(host);
    return r;
}

/* "a,b,..." into vals (count exactly n). */
static int nums(const char *args, int n, double min, double max, double *vals)
{
    char buf[128];
    if (!args || tf_strlcpy(buf, args, sizeof(buf)) >= sizeof(buf))
        return -EINVAL;
    char *save = NULL, *tok = strtok_r(buf, ",", &save);
    int k = 0;
    for (; tok; tok = strtok_r(NULL, ",", &save), k++)
        if (k >= n || tf_parse_double(tok, min, max, &vals[k]) < 0)
            return -EINVAL;
    return k == n ? 0 : -EINVAL;
}

static int dispatch(struct gen *g, const char *name, const char *args, char *err, size_t errlen)
{
    const struct topo *t = g->t;
    uint32_t n = t->nhosts;
    double v[4];
    int r = 0;
    if (strcmp(name, "stride") == 0) {
        if (nums(args, 1, 1, n - 1, v) < 0 || v[0] != (uint32_t)v[0])
            return fail(err, errlen, "pattern stride:I needs an integer I in 1..%u", n - 1);
        for (uint32_t i = 0; r == 0 && i < n; i++)
            r = add(g, i, (i + (uint32_t)v[0]) % n, CLASS_DEFAULT);
    } else if (strcmp(name, "staggered") == 0) {
        if (nums(args, 2, 0, 1, v) < 0 || v[0] + v[1] > 1)
            return fail(err, errlen, "pattern staggered:EDGE_P,POD_P needs two probabilities summing to at most 1");
        r = staggered(g, v[0], v[1]);
    } else if (strcmp(name, "random") == 0 && !args) {
        for (uint32_t i = 0; r == 0 && i < n; i++)
            r = add(g, i, other(g, i), CLASS_DEFAULT);
    } else if (strcmp(name, "randbij") == 0 && !args) {
        r = randbij(g);
    } else if (strcmp(name, "hotspot") == 0) {
        v[0] = 1.0 / 16;
        if (args && nums(args, 1, 1e-9, 1, v) < 0)
            return fail(err, errlen, "pattern hotspot[:F] needs a fraction F in (0, 1]");
        r = hotspot(g, v[0]);
    } else if (strcmp(name, "ring-allreduce") == 0 && !args) {
        for (uint32_t i = 0; r == 0 && i < n; i++)
            r = add(g, i, (i + 1) % n, CLASS_DP);
    } else if (strcmp(name, "pp") == 0) {
        v[0] = 4;
        if ((args && nums(args, 1, 2, n, v) < 0) || v[0] != (uint32_t)v[0] || n / (uint32_t)v[0] < 1)
            return fail(err, errlen, "pattern pp[:STAGES] needs an integer 2..%u", n);
        uint32_t per = n / (uint32_t)v[0];
        for (uint32_t i = 0; r == 0 && i + per < per * (uint32_t)v[0]; i++) {
            r = add(g, i, i + per, CLASS_PP);
            if (r == 0)
                r = add(g, i + per, i, CLASS_PP);
        }
    } else if (strcmp(name, "alltoall") == 0) {
        v[0] = 8;
        if ((args && nums(args, 1, 2, n, v) < 0) || v[0] != (uint32_t)v[0])
            return fail(err, errlen, "pattern alltoall[:GROUP] needs an integer 2..%u", n);
        uint32_t gs = (uint32_t)v[0];
        for (uint32_t i = 0; r == 0 && i < n; i++)
            for (uint32_t j = i - i % gs; r == 0 && j < i - i % gs + gs && j < n; j++)
                r = add(g, i, j, CLASS_EP);
    } else if (strcmp(name, "job") == 0) {
        uint32_t sz[4];
        char sizes[128];
        bool shuffle = false;
        const char *place = args ? strstr(args, ",place=") : NULL;
        if (place && strcmp(place, ",place=shuffle") != 0 && strcmp(place, ",place=order") != 0)
            return fail(err, errlen, "pattern job: place=%s: want order or shuffle", place + 7);
        if (place) {
            shuffle = strcmp(place, ",place=shuffle") == 0;
            snprintf(sizes, sizeof(sizes), "%.*s", (int)(place - args), args);
            args = sizes;
        }
        if (nums(args, 4, 1, JOB_PATTERN_MAX, v) < 0)
            return fail(err, errlen, "pattern job:TP,CP,PP,DP[,place=order|shuffle] needs four sizes 1..%u",
                        JOB_PATTERN_MAX);
        for (int i = 0; i < 4; i++)
            sz[i] = (uint32_t)v[i];
        r = job(g, sz, shuffle);
        if (r == -ERANGE)
            return fail(err, errlen, "pattern job:%s needs %.0f hosts, topology '%s' has %u", args,
                        v[0] * v[1] * v[2] * v[3], t->name, n);
    } else {
        return fail(err, errlen, "unknown pattern '%s%s%s' (stride:I, staggered:E,P, random, randbij, hotspot[:F], "
                    "ring-allreduce, pp[:S], alltoall[:G], job:TP,CP,PP,DP)", name, args ? ":" : "", args ? args : "");
    }
    if (r == -E2BIG)
        return fail(err, errlen, "pattern %s: more than %u flows", name, PATTERN_MAX_FLOWS);
    return r;
}

int pattern_generate(const struct topo *t, const char *spec, uint64_t seed, uint32_t flows_per_pair,
                     struct pattern_flow **out, uint32_t *nout, char *err, size_t errlen)
{
    char name[64];
    *out = NULL;
    *nout = 0;
    if (t->nhosts < 2)
        return fail(err, errlen, "pattern: topology '%s' has fewer than 2 hosts", t->name);
    const char *colon = strchr(spec, ':');
    size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nl == 0 || nl >= sizeof(name))
        return fail(err, errlen, "pattern: bad spec '%.60s'", spec);
    memcpy(name, spec, nl);
    name[nl] = '\0';
    bool hedera = !strcmp(name, "stride") || !strcmp(name, "staggered") || !strcmp(name, "random") ||
                  !strcmp(name, "randbij") || !strcmp(name, "hotspot");
    struct gen g = { .t = t, .rng = seed, .fpp = flows_per_pair ? flows_per_pair : hedera ? 1 : 16 };
    int r = dispatch(&g, name, colon ? colon + 1 : NULL, err, errlen);
    if (r < 0) {
        if (r == -ENOMEM)
            fail(err, errlen, "pattern %s: out of memory", name);
        free(g.f);
        return r;
    }
    /* Demand: the sender's NIC (its uplinks) split over its flows. */
    uint32_t *cnt = calloc(t->nnodes, sizeof(uint32_t));
    if (!cnt) {
        free(g.f);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < g.n; i++)
        cnt[g.f[i].src]++;
    for (uint32_t i = 0; i < g.n; i++) {
        const struct topo_node *s = &t->nodes[g.f[i].src];
        double nic = 0;
        for (uint32_t k = 0; k < s->up_count; k++)
            nic += t->links[t->up_links[s->up_first + k]].gbps;
        g.f[i].gbps = nic / cnt[g.f[i].src];
    }
    free(cnt);
    *out = g.f;
    *nout = g.n;
    return 0;
}
