/*
 * job: rank coordinates, pair classification, class-to-tier mapping and
 * placement advice. Coordinates are computed on demand (never stored); the
 * node -> rank index is a sorted array so lookups are O(log n).
 */
#include "policy/job.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* Llama-3-like exposed bytes per step, relative: tp all-reduces activations
 * every layer, cp/ep exchange per layer too, pp sends one activation per
 * micro-batch boundary, dp's gradient all-reduce overlaps the backward pass. */
const double job_dim_weight[JOB_NDIMS] = { 64, 16, 4, 1, 16 };

static const char *const dim_names[JOB_NDIMS] = { "tp", "cp", "pp", "dp", "ep" };

#define fail(err, errlen, ...) tf_fail((err), (errlen), -EINVAL, __VA_ARGS__)

const char *job_dim_name(int dim) { return dim >= 0 && dim < JOB_NDIMS ? dim_names[dim] : NULL; }

int job_dim_parse(const char *name)
{
    for (int i = 0; name && i < JOB_NDIMS; i++)
        if (strcmp(name, dim_names[i]) == 0)
            return i;
    return -EINVAL;
}

int job_init(struct job *j, const char *name, int ndims, const int *dims, const uint32_t *sizes,
             char *err, size_t errlen)
{
    memset(j, 0, sizeof(*j));
    if (!name || !*name || tf_strlcpy(j->name, name, sizeof(j->name)) >= sizeof(j->name))
        return fail(err, errlen, "job: name must be 1..%d bytes", JOB_NAME_MAX - 1);
    if (ndims < 1 || ndims > JOB_NDIMS)
        return fail(err, errlen, "job '%s': %d dimensions, want 1..%d", name, ndims, JOB_NDIMS);
    uint64_t prod = 1;
    unsigned seen = 0;
    for (int i = 0; i < ndims; i++) {
        if (dims[i] < 0 || dims[i] >= JOB_NDIMS)
            return fail(err, errlen, "job '%s': order[%d] is not tp, cp, pp, dp or ep", name, i);
        if (seen & (1u << dims[i]))
            return fail(err, errlen, "job '%s': dimension '%s' appears twice", name, dim_names[dims[i]]);
        seen |= 1u << dims[i];
        if (sizes[i] == 0 || sizes[i] > JOB_MAX_RANKS)
            return fail(err, errlen, "job '%s': size of '%s' must be 1..%u", name, dim_names[dims[i]], JOB_MAX_RANKS);
        prod *= sizes[i];
        if (prod > JOB_MAX_RANKS)
            return fail(err, errlen, "job '%s': more than %u ranks", name, JOB_MAX_RANKS);
        j->dim[i] = (uint8_t)dims[i];
        j->size[i] = sizes[i];
    }
    j->ndims = (uint8_t)ndims;
    j->nranks = (uint32_t)prod;
    return 0;
}

static int ix_cmp(const void *a, const void *b)
{
    const struct job_rank_ix *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

int job_set_ranks(struct job *j, uint32_t n, const uint32_t *nodes, char *err, size_t errlen)
{
    if (n != j->nranks)
        return fail(err, errlen, "job '%s': %u ranks given, the sizes multiply to %u", j->name, n, j->nranks);
    uint32_t *rn = malloc((size_t)n * sizeof(*rn));
    struct job_rank_ix *ix = malloc((size_t)n * sizeof(*ix));
    if (!rn || !ix) {
        free(rn);
        free(ix);
        return -ENOMEM;
    }
    for (uint32_t r = 0; r < n; r++) {
        rn[r] = nodes[r];
        ix[r] = (struct job_rank_ix){ nodes[r], r };
    }
    qsort(ix, n, sizeof(*ix), ix_cmp);
    free(j->rank_node);
    free(j->by_node);
    j->rank_node = rn;
    j->by_node = ix;
    return 0;
}

void job_free(struct job *j)
{
    free(j->rank_node);
    free(j->by_node);
    j->rank_node = NULL;
    j->by_node = NULL;
}

bool job_id_ok(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > JOB_NAME_MAX - 1)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", id[i]))
            return false;
    return true;
}

/* The layout: parallelism[] -> dims and sizes, checked against nranks. */
static int layout_from_json(const json_t *par, size_t nr, int *dim, uint32_t *size, size_t *nd, char *err,
                            size_t errlen)
{
    *nd = json_array_size(par);
    if (*nd == 0 || *nd > JOB_NDIMS)
        return fail(err, errlen, "parallelism: 1..%d dimensions", JOB_NDIMS);
    uint64_t prod = 1;
    for (size_t i = 0; i < *nd; i++) {
        const json_t *e = json_array_get(par, i), *d = json_object_get(e, "dim"), *sz = json_object_get(e, "size");
        dim[i] = json_is_string(d) ? job_dim_parse(json_string_value(d)) : -EINVAL;
        if (dim[i] < 0 || !json_is_integer(sz) || json_integer_value(sz) < 1 || json_integer_value(sz) > JOB_MAX_RANKS)
            return fail(err, errlen, "parallelism[%zu]: needs dim (tp|cp|pp|dp|ep) and size 1..%u", i, JOB_MAX_RANKS);
        size[i] = (uint32_t)json_integer_value(sz);
        prod *= size[i];
    }
    if (prod != nr)
        return fail(err, errlen, "parallelism: sizes multiply to %llu, but there are %zu ranks",
                    (unsigned long long)prod, nr);
    return 0;
}

int job_from_json(struct job *j, const char *id, const json_t *body, const struct topo *t, char *err, size_t errlen)
{
    memset(j, 0, sizeof(*j));
    if (!job_id_ok(id))
        return fail(err, errlen, "job id: 1..%d characters of A-Za-z0-9_.-", JOB_NAME_MAX - 1);
    const json_t *ranks = json_object_get(body, "ranks"), *par = json_object_get(body, "parallelism");
    if (!json_is_object(body) || !json_is_array(ranks) || !json_is_array(par))
        return fail(err, errlen, "body: needs \"ranks\" (array of host names) and \"parallelism\" (array)");
    size_t nr = json_array_size(ranks), nd;
    if (nr == 0 || nr > JOB_MAX_RANKS)
        return fail(err, errlen, "ranks: 1..%u host names", JOB_MAX_RANKS);
    int dim[JOB_NDIMS];
    uint32_t size[JOB_NDIMS];
    char why[200];
    int rc = layout_from_json(par, nr, dim, size, &nd, err, errlen);
    if (rc)
        return rc;
    if ((rc = job_init(j, id, (int)nd, dim, size, why, sizeof(why))) < 0)
        return fail(err, errlen, "parallelism: %s", why);
    uint32_t *node = malloc(nr * sizeof(*node));
    if (!node)
        rc = -ENOMEM;
    for (size_t i = 0; i < nr && !rc; i++) {
        const char *nn = json_string_value(json_array_get(ranks, i));
        node[i] = nn ? topo_node_by_name(t, nn) : TOPO_NONE;
        if (node[i] == TOPO_NONE || t->nodes[node[i]].tier != TOPO_HOST)
            rc = fail(err, errlen, "ranks[%zu]: %s%.40s%s is not a host of the topology", i, nn ? "'" : "",
                      nn ? nn : "not a string", nn ? "'" : "");
    }
    if (!rc && (rc = job_set_ranks(j, (uint32_t)nr, node, why, sizeof(why))) < 0)
        fail(err, errlen, "ranks: %s", why);
    free(node);
    if (rc)
        job_free(j);
    return rc;
}

json_t *job_to_json(const struct job *j, const struct topo *t)
{
    json_t *ranks = json_array(), *par = json_array();
    for (uint32_t r = 0; j->rank_node && r < j->nranks; r++)
        json_array_append_new(ranks, json_string(t->nodes[j->rank_node[r]].name));
    for (int d = 0; d < j->ndims; d++)
        json_array_append_new(par, json_pack("{ss sI}", "dim", dim_names[j->dim[d]], "size", (json_int_t)j->size[d]));
    return json_pack("{ss so so}", "id", j->name, "ranks", ranks, "parallelism", par);
}

void job_coords(const struct job *j, uint32_t rank, uint32_t coords[JOB_NDIMS])
{
    for (int i = 0; i < j->ndims; i++) {
        coords[i] = rank % j->size[i];
        rank /= j->size[i];
    }
}

uint32_t job_rank_at(const struct job *j, const uint32_t coords[JOB_NDIMS])
{
    uint32_t r = 0;
    for (int i = j->ndims - 1; i >= 0; i--)
        r = r * j->size[i] + coords[i];
    return r;
}

int job_pair_dim(const struct job *j, uint32_t a, uint32_t b)
{
    if (a >= j->nranks || b >= j->nranks || a == b)
        return -1;
    uint32_t ca[JOB_NDIMS], cb[JOB_NDIMS];
    job_coords(j, a, ca);
    job_coords(j, b, cb);
    int which = -1;
    for (int i = 0; i < j->ndims; i++) {
        if (ca[i] == cb[i])
            continue;
        if (which >= 0)
            return -1;
        which = j->dim[i];
    }
    return which;
}

int64_t job_rank_of_node(const struct job *j, uint32_t node)
{
    size_t lo = 0, hi = j->by_node ? j->nranks : 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (j->by_node[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < (j->by_node ? j->nranks : 0) && j->by_node[lo].node == node)
        return j->by_node[lo].rank;
    return -ENOENT;
}

int job_node_pair_dim(const struct job *j, uint32_t a, uint32_t b)
{
    int64_t ra = job_rank_of_node(j, a), rb = job_rank_of_node(j, b);
    if (ra < 0 || rb < 0)
        return -ENOENT;
    return job_pair_dim(j, (uint32_t)ra, (uint32_t)rb);
}

/* The meet tier of two nodes; a rank pair on one node stays at the host.
 * topo_meet_tier is closed-form on regular Clos fabrics (topo_paths.c), which
 * 24K-rank jobs need. */
static int meet(const struct topo *t, uint32_t a, uint32_t b)
{
    return a == b ? TOPO_HOST : topo_meet_tier(t, a, b);
}

/* In a tree-like Clos the meet tier is an ultrametric (meet(b, c) <=
 * max(meet(a, b), meet(a, c))), so the highest meet tier within a group is
 * reached from its first member: O(nranks) per dimension, not O(n * size). */
int job_class_tiers(const struct job *j, const struct topo *t, int tier[JOB_NDIMS])
{
    for (int d = 0; d < JOB_NDIMS; d++)
        tier[d] = -1;
    if (!j->rank_node)
        return -EINVAL;
    uint32_t c[JOB_NDIMS];
    for (int i = 0; i < j->ndims; i++) {
        if (j->size[i] < 2)
            continue;
        int best = -1;
        for (uint32_t rk = 0; rk < j->nranks; rk++) {
            job_coords(j, rk, c);
            if (c[i] == 0)
                continue;
            c[i] = 0;
            int m = meet(t, j->rank_node[job_rank_at(j, c)], j->rank_node[rk]);
            if (m > best)
                best = m;
        }
        tier[j->dim[i]] = best;
    }
    return 0;
}

int job_tier_bytes(const struct job *j, const struct topo *t, double bytes[TOPO_NTIERS_MAX])
{
    for (int k = 0; k < TOPO_NTIERS_MAX; k++)
        bytes[k] = 0;
    if (!j->rank_node)
        return -EINVAL;
    uint32_t c[JOB_NDIMS];
    for (uint32_t rk = 0; rk < j->nranks; rk++) {
        for (int i = 0; i < j->ndims; i++) {
            if (j->size[i] < 2)
                continue;
            job_coords(j, rk, c);
            c[i] = (c[i] + 1) % j->size[i];
            int m = meet(t, j->rank_node[rk], j->rank_node[job_rank_at(j, c)]);
            if (m >= 0 && m < TOPO_NTIERS_MAX)
                bytes[m] += job_dim_weight[j->dim[i]];
        }
    }
    return 0;
}

/* Locality key for an endpoint: pod, then leaf, then its own index. */
static int by_place(const void *a, const void *b, void *ctx)
{
    const struct topo *t = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint32_t px = t->nodes[x].pod, py = t->nodes[y].pod;
    if (px != py)
        return px < py ? -1 : 1;
    uint32_t lx = topo_leaf_of(t, x), ly = topo_leaf_of(t, y);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int bytes_for(const struct topo *t, int nd, const int *dims, const uint32_t *sizes,
                     const uint32_t *nodes, uint32_t n, double out[TOPO_NTIERS_MAX])
{
    struct job j;
    int r = job_init(&j, "advice", nd, dims, sizes, NULL, 0);
    if (r == 0)
        r = job_set_ranks(&j, n, nodes, NULL, 0);
    if (r == 0)
        r = job_tier_bytes(&j, t, out);
    job_free(&j);
    return r;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int job_advise(const struct topo *t, int ndims, const int *dims, const uint32_t *sizes,
               const uint32_t *endpoints, uint32_t n, uint64_t seed, uint32_t *rank_node_out,
               struct job_advice *adv, char *err, size_t errlen)
{
    struct job chk;
    int r = job_init(&chk, "advice", ndims, dims, sizes, err, errlen);
    if (r < 0)
        return r;
    if (n != chk.nranks)
        return fail(err, errlen, "advice: %u endpoints for %u ranks", n, chk.nranks);
    for (uint32_t i = 0; i < n; i++)
        if (endpoints[i] >= t->nnodes)
            return fail(err, errlen, "advice: endpoint %u is not a node", i);
    memset(adv, 0, sizeof(*adv));
    /* Order: heavier dimensions fastest (stable for equal weights). */
    int ord[JOB_NDIMS], rev[JOB_NDIMS];
    uint32_t osz[JOB_NDIMS], rsz[JOB_NDIMS];
    for (int i = 0; i < ndims; i++) {
        ord[i] = dims[i];
        osz[i] = sizes[i];
    }
    for (int i = 1; i < ndims; i++)
        for (int k = i; k > 0 && job_dim_weight[ord[k]] > job_dim_weight[ord[k - 1]]; k--) {
            int td = ord[k]; ord[k] = ord[k - 1]; ord[k - 1] = td;
            uint32_t ts = osz[k]; osz[k] = osz[k - 1]; osz[k - 1] = ts;
        }
    for (int i = 0; i < ndims; i++) {
        rev[i] = ord[ndims - 1 - i];
        rsz[i] = osz[ndims - 1 - i];
        adv->dim[i] = (uint8_t)ord[i];
        adv->size[i] = osz[i];
    }
    adv->ndims = (uint8_t)ndims;
    memcpy(rank_node_out, endpoints, (size_t)n * sizeof(uint32_t));
    qsort_r(rank_node_out, n, sizeof(uint32_t), by_place, (void *)t);
    uint32_t *shuf = malloc(((size_t)n + 1) * sizeof(uint32_t));
    if (!shuf)
        return -ENOMEM;
    memcpy(shuf, rank_node_out, (size_t)n * sizeof(uint32_t));
    uint64_t s = seed;
    for (uint32_t i = n; i > 1; i--) {
        uint32_t k = (uint32_t)(splitmix(&s) % i), tmp = shuf[i - 1];
        shuf[i - 1] = shuf[k];
        shuf[k] = tmp;
    }
    if ((r = bytes_for(t, ndims, ord, osz, rank_node_out, n, adv->advised)) == 0 &&
        (r = bytes_for(t, ndims, rev, rsz, rank_node_out, n, adv->reversed)) == 0)
        r = bytes_for(t, ndims, ord, osz, shuf, n, adv->shuffled);
    free(shuf);
    if (r < 0)
        return r;
    struct job j;
    if ((r = job_init(&j, "advice", ndims, ord, osz, err, errlen)) < 0)
        return r;
    if ((r = job_set_ranks(&j, n, rank_node_out, err, errlen)) == 0)
        r = job_class_tiers(&j, t, adv->tier);
    job_free(&j);
    return r;
}
