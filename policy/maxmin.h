/*
 * maxmin: max-min fair rates of flows on fixed paths (progressive filling).
 *
 * Every flow's rate rises at the same pace until it reaches its demand or one
 * of its directions is full; then it is frozen and the others continue. The
 * result is the unique max-min fair allocation with demand caps, computed
 * event by event (a heap of per-direction saturation levels) in
 * O(hops log hops) rather than by repeated sweeps, so that 200,000 flows on a
 * large fabric take well under a second.
 *
 * Paths are abstract: flow f crosses dirs[off[f] .. off[f+1]) of a set of
 * ndirs capacitated resources. A flow with no directions gets its demand.
 */
#ifndef TF_MAXMIN_H
#define TF_MAXMIN_H

#include <stdint.h>

/* cap: per direction (gbps left for these flows; negative counts as 0).
 * demand: per flow, > 0, INFINITY for an elastic flow. rate: out, per flow.
 * Returns 0, -EINVAL (a direction out of range, a bad demand) or -ENOMEM. */
int maxmin_rates(uint32_t ndirs, const double *cap, uint32_t nflows, const uint32_t *off,
                 const uint32_t *dirs, const double *demand, double *rate);

#endif
