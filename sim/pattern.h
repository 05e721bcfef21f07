/*
 * pattern: synthetic traffic for the simulator and the benchmarks.
 *
 * Hedera's set over the topology's hosts (in file order, index i):
 *   stride:I           host i sends to host (i + I) mod n;
 *   staggered:E,P      to a host under the same leaf with probability E, in
 *                      the same pod with probability P, elsewhere otherwise;
 *   random             to a uniformly random other host;
 *   randbij            a random permutation without fixed points;
 *   hotspot[:F]        like random, but with probability 1/2 to one of the
 *                      first max(1, F*n) hosts of a seeded shuffle (F 1/16).
 * Training collectives over all hosts in order:
 *   ring-allreduce     host i to host i+1 (mod n), class dp;
 *   pp[:S]             S pipeline stages of n/S hosts (S 4): stage s host k
 *                      to stage s+1 host k and back, class pp;
 *   alltoall[:G]       all pairs within consecutive groups of G (8), class ep;
 *   job:TP,CP,PP,DP    ranks on the first TP*CP*PP*DP hosts, mixed radix with
 *                      tp fastest; each rank to its ring successor in every
 *                      dimension (pp: next and previous stage, no wrap);
 *                      ",place=shuffle" puts rank r on host perm[r] of a
 *                      seeded permutation (fragmented placement: groups
 *                      scattered over racks and pods), ",place=order" is the
 *                      default.
 * Each pair carries flows_per_pair flows (0: 1 for the Hedera set, 16 for
 * collectives, Meta's 16 per GPU pair). A flow's demand is its sender's NIC
 * capacity divided by the sender's flow count. Deterministic for a seed.
 */
#ifndef TF_PATTERN_H
#define TF_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "policy/topo.h"

#define PATTERN_MAX_FLOWS (1u << 25)
#define JOB_PATTERN_MAX   (1u << 20)

struct pattern_flow {
    uint32_t src, dst;     /* node indices */
    double gbps;
    int cls;               /* enum class_builtin */
};

int pattern_generate(const struct topo *t, const char *spec, uint64_t seed, uint32_t flows_per_pair,
                     struct pattern_flow **out, uint32_t *n, char *err, size_t errlen);

#endif
