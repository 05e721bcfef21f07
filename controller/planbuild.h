/*
 * planbuild: turns path decisions into a plan (policy rules and tables).
 *
 * Pure computation over the topology: no I/O, deterministic (same inputs,
 * same plan, byte for byte after plan_sort). Model (docs/routing.md):
 *   - table per (switch, uplink): table_base + k, k = index of the uplink
 *     among the switch's upward links in topology link order; it holds one
 *     route per destination prefix that flows pinned into it need (the
 *     prefix of the leaf that owns the destination, else a host route), via
 *     the far end's address on that link, out of the near end's interface;
 *   - a pinned flow: on every switch its path leaves upward with more than
 *     one upward choice, a rule (ipproto, sport, dport, src/32, dst/32) ->
 *     that uplink's table, at priority prio_min + k, so a flow that moves
 *     uplink always gets a new priority (make-before-break);
 *   - a class: on every leaf with more than one uplink, a rule (fwmark or
 *     DSCP) at priority prio_min + OWNER_CLASS_PRIO_OFF + class index ->
 *     table table_base + OWNER_CLASS_TABLE_OFF + class index, holding one
 *     weighted multipath route per remote leaf prefix over the class's
 *     allowed uplinks.
 */
#ifndef TF_PLANBUILD_H
#define TF_PLANBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "controller/owner.h"
#include "controller/plan.h"

struct topo;

/* The owned spans (owner.h) split between uplinks and classes. */
#define PLANBUILD_MAX_UPLINKS      OWNER_CLASS_TABLE_OFF  /* per switch: tables base+0.. */
#define PLANBUILD_MAX_CLASSES      (OWNER_TABLE_SPAN - OWNER_CLASS_TABLE_OFF)
_Static_assert(PLANBUILD_MAX_CLASSES <= OWNER_PRIO_SPAN - OWNER_CLASS_PRIO_OFF,
               "every class needs a priority of its own");

struct plan_opts {
    uint32_t prio_min, prio_max;  /* tierflow's rule priorities (inclusive) */
    uint32_t table_base;          /* tierflow's tables: [base, base+TABLE_SPAN) */
};
/* The defaults of owner.h. */
void plan_opts_default(struct plan_opts *o);

struct planbuild_flow {
    uint8_t af, proto;            /* af 4 or 6; proto 6 TCP, 17 UDP (RoCEv2) */
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    const uint32_t *dirs;         /* the path: link directions, 2*link (+1 down) */
    int ndirs;
};

struct planbuild_class {
    uint32_t fwmark, fwmask;      /* match the mark ... */
    int16_t dscp;                 /* ... or (mark 0) this DSCP, -1 = none */
    /* Allowed next-hop nodes (topology node indices, e.g. spines) and their
     * weights (1..256; 0 = 1). n = 0: every uplink, equal weight. */
    const int *allow;
    const uint16_t *weight;
    int nallow;
};

/*
 * Appends the rules and routes for the flows and classes to out (then
 * sorts it). Flows whose path has no multi-choice upward hop add nothing.
 * Errors (-EINVAL, with err naming the flow/class and the field): a
 * direction outside the topology, a path that is not contiguous, a link
 * with no interface or address for the hop, too many uplinks or classes,
 * priority range smaller than OWNER_PRIO_SPAN.
 */
int plan_build(const struct topo *t, const struct plan_opts *o,
               const struct planbuild_flow *flows, size_t nflows,
               const struct planbuild_class *classes, size_t nclasses,
               struct plan *out, char *err, size_t errlen);

/*
 * Whether every hop a plan can need is expressible: each upward link of a
 * switch with more than one uplink has an interface at its lower end and an
 * address at its upper end (the next hop of that link's table). -EINVAL with
 * err naming the first link that lacks one (the same message a round gets
 * from plan_build); backends that program switches need this at start.
 */
int planbuild_check_topo(const struct topo *t, char *err, size_t errlen);

/*
 * The inverse of plan_build for flows: the pinned flows a plan (read back
 * from the switches at start) expresses, each with its path index. A flow
 * is its 5-tuple rules (ipproto, sport, dport, host src and dst) in the
 * per-uplink tables; its path is the walk that leaves every switch with a
 * rule by that rule's uplink (and any other switch by its only way toward
 * the destination). Flows whose rules do not make one shortest path (a
 * partial state, an edited topology) are counted in *skipped, not given.
 * fn is called once per flow (af, proto, src, dst, sport, dport: as in the
 * rules; src_node, dst_node: the hosts). Returns 0 or -ENOMEM.
 */
typedef void (*planbuild_pin_fn)(void *arg, const struct planbuild_flow *f, uint32_t src_node, uint32_t dst_node,
                                 uint64_t path);
int planbuild_pins(const struct topo *t, const struct plan_opts *o, const struct plan *p, planbuild_pin_fn fn,
                   void *arg, size_t *skipped);

#endif
