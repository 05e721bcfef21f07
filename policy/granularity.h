/*
 * granularity: assignments for a switch steered per destination. The bgp
 * backend steers with one host route per (leaf, destination host)
 * (docs/bgp.md), so every flow from one leaf to one host leaves the leaf the
 * same way: its route beyond the leaf. Two entry points:
 *   granularity_destination  makes a finished assignment obey that: per
 *       (source leaf, destination host) every flow takes the route most of
 *       them have (ties: the first such flow's, in input order), which is
 *       what the backend would announce of a per-flow plan;
 *   granularity_assign       plans for it: each (source leaf, destination
 *       host) group is one unsplittable unit (its demands summed, its current
 *       route the majority's, movable only when all its flows are) for the
 *       assignment, and every flow of a group gets the unit's route.
 * Invariant of both: afterwards, flows of one group share the route beyond
 * their leaf. Pure computation, deterministic; tierflow-sim --granularity
 * destination prints what each costs.
 */
#ifndef TF_GRANULARITY_H
#define TF_GRANULARITY_H

#include <stddef.h>
#include <stdint.h>

#include "policy/assign.h"

/* Rewrites path (in->nflows entries) in place; *changed counts the flows
 * whose path changed. 0 or -ENOMEM. */
int granularity_destination(const struct assign_input *in, uint32_t *path, uint32_t *changed);

/* assign_run on the (leaf, destination) units of in, the result per flow in
 * res->path; moved, unroutable and max_util count flows, max_moves in p
 * limits units. Returns as assign_run. */
int granularity_assign(int algo, const struct assign_input *in, const struct assign_params *p,
                       struct assign_result *res, char *err, size_t errlen);

#endif
