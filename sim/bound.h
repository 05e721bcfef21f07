/*
 * bound: a lower bound on the maximum link utilisation that holds for EVERY
 * unsplittable assignment of the flows (so also for the optimum), used to
 * say how far an algorithm is from the best possible.
 *
 * It is the largest of:
 *   - background: bg / capacity of any direction;
 *   - cuts: for every host (its uplinks, each way), every leaf (its uplinks,
 *     each way) and every pod (its spines' uplinks, each way), the traffic
 *     that must cross the cut plus the background on it, over the cut's
 *     in-service capacity: some direction of the cut is at least that full;
 *   - the largest flows: each alone on its best path (min over usable paths
 *     of its bottleneck), for the flows of the largest demands.
 * Cuts are only used where they are sound: single-homed hosts, leaves whose
 * uplinks all go to spines of their own pod for the pod cut.
 */
#ifndef TF_BOUND_H
#define TF_BOUND_H

#include "policy/assign.h"

struct bound_result {
    double value;
    char why[96];          /* e.g. "leaf L3 uplinks (up)" */
};

/* Returns 0 or -ENOMEM. */
int bound_max_util(const struct assign_input *in, struct bound_result *out);

#endif
