/*
 * demand: Hedera's estimate of the "natural" demand of flows (Al-Fares et
 * al., NSDI 2010, section 4.1 and Figure 6).
 *
 * A fat flow measured on a congested path shows the rate the collision left
 * it, not the rate it would take; placing flows by measured rates repeats the
 * collision. The estimate is the max-min fair rate each flow would get if the
 * only bottlenecks were the sender and receiver NICs: senders split their
 * capacity equally among their unconverged flows, receivers whose incoming
 * estimates exceed their capacity cut the largest flows down to an equal
 * share (flows below that share keep theirs), and the two steps repeat until
 * nothing changes. Demands come out in the NICs' unit (gbps, or fractions of
 * one NIC when every capacity is 1).
 */
#ifndef TF_DEMAND_H
#define TF_DEMAND_H

#include <stdint.h>

/* nhosts endpoints 0..nhosts-1 with NIC capacity cap[h] (NULL: all 1.0);
 * flow f goes from src[f] to dst[f]. Writes demand[f]. Returns 0, -EINVAL for
 * an endpoint out of range or a capacity <= 0, -ENOMEM. */
int demand_estimate(uint32_t nhosts, const double *cap, uint32_t nflows, const uint32_t *src,
                    const uint32_t *dst, double *demand);

#endif
