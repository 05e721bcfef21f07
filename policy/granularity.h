/*
 * granularity: an assignment as a switch steered per destination carries it.
 * The bgp backend steers with one host route per (leaf, destination host)
 * (docs/bgp.md), so every flow from one leaf to one host leaves the leaf the
 * same way. granularity_destination makes an assignment obey that: per
 * (source leaf, destination host), every flow takes the route beyond the
 * leaf that most of them have (ties: the first such flow's, in input order),
 * which is what the backend announces. Pure computation, deterministic;
 * tierflow-sim --granularity destination prints what it costs.
 */
#ifndef TF_GRANULARITY_H
#define TF_GRANULARITY_H

#include <stdint.h>

#include "policy/assign.h"

/* Rewrites path (in->nflows entries) in place; *changed counts the flows
 * whose path changed. 0 or -ENOMEM. */
int granularity_destination(const struct assign_input *in, uint32_t *path, uint32_t *changed);

#endif
