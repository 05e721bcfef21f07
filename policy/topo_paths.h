/*
 * topo_paths: shortest up/down (valley-free) paths between two nodes of a
 * topology, counted and decoded without ever being listed.
 *
 * Paths are the shortest valley-free walks: up from src to the lowest tier
 * where src and dst have a common ancestor (the meet tier), then down. They
 * are never materialised: a path is an index 0..count-1 whose decoding is a
 * mixed-radix choice among the uplinks (and then downlinks) that lead to
 * dst, in link order. Irregular topologies are handled: only links from
 * which dst stays reachable are counted. Queries only read the topology and
 * may run concurrently (topo_path_set_fast excepted).
 */
#ifndef TF_TOPO_PATHS_H
#define TF_TOPO_PATHS_H

#include <stdint.h>

#include "policy/topo_model.h"

int  topo_meet_tier(const struct topo *t, uint32_t a, uint32_t b);       /* lowest tier where up/down paths between a and b turn; -ENOENT if none */
uint64_t topo_path_count(const struct topo *t, uint32_t src, uint32_t dst); /* number of shortest up/down paths, without materialising them; 0 if none or bad args; 1 (empty path) if src == dst */
int  topo_path_dirs(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, uint32_t *dirs, int max); /* fills the link directions of path idx (0..count-1, deterministic order), returns the hop count or -errno (-ERANGE idx, -ENOSPC max too small, -ENOENT no path) */
/* Every path src->dst from one query (cheaper than one topo_path_dirs call
 * per index): path i < min(count, max_paths) goes to dirs[i*TOPO_MAX_HOPS ..
 * +*hops) (all shortest paths have the same hop count). dirs must hold
 * max_paths * TOPO_MAX_HOPS entries. Returns the number of paths written or
 * -errno (-ENOENT when there is no path). */
int64_t topo_path_all(const struct topo *t, uint32_t src, uint32_t dst, uint32_t *dirs, uint64_t max_paths,
                      int *hops);
/* Turns the closed-form decoder for regular Clos fabrics on (after checking
 * it against the general algorithm on sampled host pairs; the loaders do
 * this) or off (tests compare the two). Returns whether it is on. Not
 * thread-safe: call before sharing the topology. */
int  topo_path_set_fast(struct topo *t, int on);
/* Paths whose first n directions are dirs[0..n) form one contiguous index
 * range; sets *first and *count (count 0 if none). With n = the full hop
 * count this maps a walk back to its index. The controller uses it to turn
 * "flow from H leaves leaf L by interface X" into the paths it may be on:
 * prefix = {H->L, dir of X}. Returns 0, or -EINVAL for a walk that is not a
 * prefix of a shortest path (the count is then 0). */
int  topo_path_prefix_range(const struct topo *t, uint32_t src, uint32_t dst,
                            const uint32_t *dirs, int n, uint64_t *first, uint64_t *count);
/* The index of the full walk dirs[0..n), or -EINVAL if it is not a shortest path. */
int  topo_path_index_of(const struct topo *t, uint32_t src, uint32_t dst,
                        const uint32_t *dirs, int n, uint64_t *idx);

#endif
