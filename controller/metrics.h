/*
 * metrics: the daemon's counters and their Prometheus text rendering.
 *
 * Counters are lock-free atomics bumped from any thread (HTTP workers, the
 * rebalance loop); gauges that describe the fabric are read from the state
 * at render time (under its read lock). Base units (seconds, ratios, bytes),
 * `_total` on counters, no per-flow labels; per-link series are bounded by
 * max_link_series and host_links, so that cardinality stays bounded by the
 * configuration, not by the size of the fabric.
 */
#ifndef TF_METRICS_H
#define TF_METRICS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct config;
struct state;

#define METRICS_NBUCKETS 12

/* Config metrics.host_links: links with a host end exported not at all,
 * folded into their leaf's aggregates, or one series per direction. */
enum metrics_host_links { METRICS_HOST_OFF, METRICS_HOST_AGGREGATE, METRICS_HOST_ALL };

struct metrics {
    atomic_uint_fast64_t rounds, moves, backend_errors;
    atomic_uint_fast64_t react_rounds, futile_moves, harm_withdrawn, starved_moves;
    atomic_uint_fast64_t leader, elections;    /* leader.h: 1 while this instance acts; terms won */
    atomic_uint_fast64_t http[600];            /* by status code */
    atomic_uint_fast64_t dur_bucket[METRICS_NBUCKETS + 1]; /* last: +Inf */
    atomic_uint_fast64_t dur_count;
    _Atomic double dur_sum;
    /* From the config (metrics_configure) before the first render:
     * metrics.host_links, and metrics.max_link_series (switch-to-switch
     * directions exported one by one up to this many; past it, per-switch
     * aggregates). */
    enum metrics_host_links host_links;
    long max_link_series;
};

extern const double metrics_buckets[METRICS_NBUCKETS];

void metrics_init(struct metrics *m);
/* Takes the metrics.* keys of the config (checked by config.c). */
void metrics_configure(struct metrics *m, const struct config *c);
void metrics_http(struct metrics *m, unsigned code);
void metrics_round(struct metrics *m, double seconds, uint32_t moved);
/* Reads a counter of the state that ingest bumps atomically without the
 * state's write lock (reports_rejected, ingest_refused[], ...): a plain
 * read beside those increments is a data race even under the read lock,
 * so every reader loads them through this. */
uint64_t metrics_counter(const uint64_t *c);
/* Renders everything; *out is malloc'd. Takes the state's read lock. */
int metrics_render(struct metrics *m, struct state *s, double now, char **out, size_t *len);

#endif
