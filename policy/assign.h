/*
 * assign: puts fat flows on paths.
 *
 * Input: a topology, optional background load per link direction, optional
 * out-of-service directions, the fat flows (endpoints, demand, class, current
 * path) and per-class path policies. Output: a path index (topo_path_dirs
 * order) per flow. Three algorithms:
 *   ecmp      what hash-based ECMP does: path = mix(flow hash, seed) % count;
 *   gff       Hedera's Global First Fit: in input order, the first path whose
 *             every direction still has room for the flow; else its ECMP path;
 *   tierflow  minimises the maximum utilisation with few moves: a greedy
 *             least-max-utilisation placement in decreasing demand (current
 *             path on ties), a local search that moves flows off the hottest
 *             direction, with ejection chains (flows in the way step aside)
 *             when no single move does, then levels the other congested
 *             ones (each step first without moving a flow moved before
 *             again, then with more such moves), a move-back
 *             pass to current paths that stay below the maximum, and a plan
 *             hysteresis: unless the directions the moves touch get at least
 *             `margin` cooler at their hottest, no discretionary move is made.
 *
 * Invariants: every algorithm is deterministic for a given seed; no flow is
 * put on a path through an out-of-service direction or outside its class's
 * policy while an allowed path exists (a policy that no path satisfies is
 * ignored for that flow and counted in unconfined; a flow with no usable path
 * gets ASSIGN_NO_PATH and is counted in unroutable); tierflow moves at most
 * max_moves movable flows off a usable current path (flows whose current path
 * is unusable must move and are not limited, but are counted in moved);
 * non-movable flows keep their current path whenever it is usable.
 * Loads are kept incrementally per direction; paths are decoded only when a
 * candidate is tested, never materialised for the whole fabric.
 */
#ifndef TF_ASSIGN_H
#define TF_ASSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct topo;

#define ASSIGN_NO_PATH UINT32_MAX
/* Path indices are 32-bit; a pair with more paths uses the first this many. */
#define ASSIGN_MAX_PATHS (UINT32_MAX - 1)

enum assign_algo { ASSIGN_ECMP = 0, ASSIGN_GFF, ASSIGN_TIERFLOW, ASSIGN_NALGOS };

struct assign_flow {
    uint32_t src, dst;          /* topology node indices (endpoints) */
    double gbps;                /* demand */
    int cls;                    /* index into the policies (any value when npol = 0) */
    uint32_t path;              /* current path, or ASSIGN_NO_PATH */
    uint32_t hash;              /* the flow's ECMP hash input (e.g. 5-tuple hash) */
    bool movable;
    /* Moved before (the controller's choice, or a pin it adopted):
     * tierflow's search moves it a second time only where it finds no way
     * that moves fewer such flows again. */
    bool moved;
};

/* A class's path policy resolved against a topology (classes_resolve). */
struct assign_policy {
    int max_tier;               /* highest tier a path may reach, -1: any */
    const uint8_t *node_ok;     /* per node: nonzero allowed; NULL: all */
};

/* Kept for source compatibility: topo_path_* are themselves closed-form on
 * regular Clos fabrics (topo_paths.c, topo_path_set_fast), so this handle only
 * forwards to them; assign_paths_fast reports whether the topology uses the
 * closed form. */
struct assign_paths;
int  assign_paths_new(const struct topo *t, struct assign_paths **out);
void assign_paths_free(struct assign_paths *p);
bool assign_paths_fast(const struct assign_paths *p);
uint64_t assign_paths_count(const struct assign_paths *p, uint32_t src, uint32_t dst);
int  assign_paths_dirs(const struct assign_paths *p, uint32_t src, uint32_t dst, uint64_t idx, uint32_t *dirs, int max);
/* Meet tier (topo_meet_tier semantics; 0 when a == b). */
int  assign_paths_meet(const struct assign_paths *p, uint32_t a, uint32_t b);

struct assign_input {
    const struct topo *t;
    const struct assign_paths *paths;  /* unused (topo_path_* are fast); may be NULL */
    const double *bg_gbps;      /* per direction (2 * nlinks), NULL: none */
    const uint8_t *down;        /* per direction, nonzero: out of service, NULL: none */
    /* per direction, nonzero: closed to new flows (the controller cannot
     * watch it): a flow already on it may stay, none is moved onto it.
     * NULL: none. */
    const uint8_t *closed;
    const struct assign_flow *flows;
    uint32_t nflows;
    const struct assign_policy *pol;   /* indexed by flow cls, NULL: unconstrained */
    uint32_t npol;
};

struct assign_params {
    uint64_t seed;
    int64_t max_moves;          /* < 0: unlimited */
    double margin;              /* min relative gain for a move (default 0.05) */
    uint32_t candidates;        /* paths tested per flow and step, 0: default (64); all when fewer */
};

struct assign_result {
    uint32_t *path;             /* caller's array of nflows */
    uint32_t moved;             /* flows whose path differs from their current one */
    uint32_t unroutable, unconfined;
    double max_util;            /* over every direction, background included */
    double compute_s;
    /* tierflow's search work: local-search steps plus flows and alternatives
     * examined by ejections. Bounded whatever the instance:
     * <= ASSIGN_WORK_CAP(nflows), so the controller's interval is too. */
    uint64_t work;
};

#define ASSIGN_WORK_CAP(nflows) (5 * (uint64_t)(nflows) + 101000)

void assign_params_default(struct assign_params *p);
int  assign_algo_parse(const char *name);          /* enum or -EINVAL */
const char *assign_algo_name(int algo);

/* Runs one algorithm. Returns 0, -EINVAL for a bad input (err names it) or
 * -ENOMEM. */
int assign_run(int algo, const struct assign_input *in, const struct assign_params *p,
               struct assign_result *res, char *err, size_t errlen);

/* ECMP's choice for one flow (count > 0). */
uint32_t assign_ecmp_path(uint32_t hash, uint64_t seed, uint64_t count);

/* Per-direction load (gbps, background included) of a full assignment; load
 * is 2*nlinks long. Returns the maximum utilisation. Flows with
 * ASSIGN_NO_PATH add nothing. */
double assign_loads(const struct assign_input *in, const uint32_t *path, double *load);
/* All flows' directions as CSR: flow f's are dirs[off[f] .. off[f+1]);
 * dirs holds nflows * TOPO_MAX_HOPS. */
int assign_flow_dirs(const struct assign_input *in, const uint32_t *path, uint32_t *off, uint32_t *dirs);

#endif
