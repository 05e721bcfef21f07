/*
 * metrics: the daemon's counters and their Prometheus text rendering.
 *
 * Counters are lock-free atomics bumped from any thread (HTTP workers, the
 * rebalance loop); gauges that describe the fabric are read from the state
 * at render time (under its read lock). Base units (seconds, ratios), `_total`
 * on counters, no per-flow labels so that cardinality stays bounded by the
 * topology.
 */
#ifndef TF_METRICS_H
#define TF_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct state;

#define METRICS_NBUCKETS 12

struct metrics {
    atomic_uint_fast64_t rounds, moves, backend_errors;
    atomic_uint_fast64_t react_rounds, futile_moves, harm_withdrawn;
    atomic_uint_fast64_t leader, elections;    /* leader.h: 1 while this instance acts; terms won */
    atomic_uint_fast64_t http[600];            /* by status code */
    atomic_uint_fast64_t dur_bucket[METRICS_NBUCKETS + 1]; /* last: +Inf */
    atomic_uint_fast64_t dur_count;
    _Atomic double dur_sum;
};

extern const double metrics_buckets[METRICS_NBUCKETS];

void metrics_init(struct metrics *m);
void metrics_http(struct metrics *m, unsigned code);
void metrics_round(struct metrics *m, double seconds, uint32_t moved);
/* Renders everything; *out is malloc'd. Takes the state's read lock. */
int metrics_render(struct metrics *m, struct state *s, double now, char **out, size_t *len);

#endif
