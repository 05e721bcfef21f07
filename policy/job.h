/*
 * job: a registered training job: its ranks (in order, each on an endpoint
 * node) and its parallelism layout, e.g. order [tp, cp, pp, dp] with sizes
 * [8, 1, 4, 16].
 *
 * Rank r has mixed-radix coordinates, the first dimension of the order
 * fastest: r = c0 + s0*(c1 + s1*(c2 + ...)). Following Llama 3's layout,
 * ranks talk only within one dimension: a rank pair that differs in exactly
 * one coordinate is a collective pair of that dimension (tp, cp, pp, dp or
 * ep); pairs that differ in several dimensions, or are the same rank, are not
 * (they classify as `default`).
 *
 * On a topology, each dimension's traffic crosses the highest meet tier among
 * its pairs (job_class_tiers). job_advise proposes the placement that keeps
 * the heaviest dimensions lowest (the Llama 3 rule: tp innermost in a leaf,
 * then cp/ep, pp, dp outward) and reports the bytes each tier carries under
 * the advice against naive placements. Invariants: sizes multiply to nranks;
 * every rank sits on an existing node; dimensions are distinct.
 */
#ifndef TF_JOB_H
#define TF_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "policy/topo.h"

enum job_dim { JOB_TP = 0, JOB_CP, JOB_PP, JOB_DP, JOB_EP, JOB_NDIMS };   /* == CLASS_TP.. */
#define JOB_NAME_MAX  32
#define JOB_MAX_RANKS (1u << 22)

/* Relative bytes a rank sends its ring neighbour per step in each dimension
 * (tp, cp, pp, dp, ep); see docs/policy.md for where they come from. */
extern const double job_dim_weight[JOB_NDIMS];

struct job_rank_ix { uint32_t node, rank; };

struct job {
    char name[JOB_NAME_MAX];
    uint8_t ndims;
    uint8_t dim[JOB_NDIMS];        /* the order, fastest first */
    uint32_t size[JOB_NDIMS];      /* size of dim[i] */
    uint32_t nranks;
    uint32_t *rank_node;           /* per rank, topology node index */
    struct job_rank_ix *by_node;   /* sorted by (node, rank) */
};

const char *job_dim_name(int dim);
int  job_dim_parse(const char *name);             /* enum job_dim or -EINVAL */

/* Layout only (no ranks yet). Returns -EINVAL (err says why) for a repeated
 * dimension, a size of 0, or a product above JOB_MAX_RANKS. */
int  job_init(struct job *j, const char *name, int ndims, const int *dims, const uint32_t *sizes,
              char *err, size_t errlen);
/* Places rank r on node nodes[r]; n must equal the product of the sizes. */
int  job_set_ranks(struct job *j, uint32_t n, const uint32_t *nodes, char *err, size_t errlen);
/*
 * The one job codec, for the schema docs/api.md documents (PUT
 * /api/v1/jobs/ID): the body {"ranks": ["H1", ...], "parallelism":
 * [{"dim": "tp", "size": 2}, ...]} (innermost first; the sizes multiply to
 * the number of ranks; every rank a host of t) is job id. -EINVAL with err
 * naming the field (`ranks[5]: 'NOPE' is not a host of the topology`,
 * `parallelism[1]: ...`, a bad id), -ENOMEM; j is left empty on error.
 */
int  job_from_json(struct job *j, const char *id, const json_t *body, const struct topo *t, char *err,
                   size_t errlen);
/* {"id", "ranks", "parallelism"}: what job_from_json takes, with the id. */
json_t *job_to_json(const struct job *j, const struct topo *t);
/* A job id: 1..JOB_NAME_MAX-1 characters of A-Za-z0-9_.- */
bool job_id_ok(const char *id);
void job_free(struct job *j);

/* coords[i] is the coordinate in dim[i]. */
void job_coords(const struct job *j, uint32_t rank, uint32_t coords[JOB_NDIMS]);
uint32_t job_rank_at(const struct job *j, const uint32_t coords[JOB_NDIMS]);
/* The dimension (enum job_dim) ranks a and b differ in, or -1. */
int  job_pair_dim(const struct job *j, uint32_t a, uint32_t b);
/* The lowest rank on node, or -ENOENT. */
int64_t job_rank_of_node(const struct job *j, uint32_t node);
/* Classifies a flow between two nodes: the dimension of their (lowest) ranks,
 * -1 if not a collective pair, -ENOENT if either node holds no rank. */
int  job_node_pair_dim(const struct job *j, uint32_t a, uint32_t b);

/* Per dimension (indexed by enum job_dim): the highest meet tier among its
 * collective pairs, -1 when the job has no such pairs (absent, or size 1). */
int  job_class_tiers(const struct job *j, const struct topo *t, int tier[JOB_NDIMS]);
/* Bytes per tier (weights above) when every rank sends its ring successor in
 * every dimension; bytes[k] is what meets at tier k. */
int  job_tier_bytes(const struct job *j, const struct topo *t, double bytes[TOPO_NTIERS_MAX]);

struct job_advice {
    uint8_t ndims;
    uint8_t dim[JOB_NDIMS];        /* advised order, fastest (lowest tier) first */
    uint32_t size[JOB_NDIMS];
    double advised[TOPO_NTIERS_MAX], reversed[TOPO_NTIERS_MAX], shuffled[TOPO_NTIERS_MAX];
    int tier[JOB_NDIMS];           /* per enum job_dim under the advice */
};
/* Proposes an order (dimensions by decreasing weight) and a placement
 * (rank_node_out[r]) over the given endpoints, sorted by pod, leaf and
 * index so that consecutive ranks share a leaf; compares with the reversed
 * order and a seeded shuffle of the endpoints. n must equal the product of
 * the sizes. */
int  job_advise(const struct topo *t, int ndims, const int *dims, const uint32_t *sizes,
                const uint32_t *endpoints, uint32_t n, uint64_t seed, uint32_t *rank_node_out,
                struct job_advice *adv, char *err, size_t errlen);

#endif
