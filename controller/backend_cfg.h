/*
 * backend_cfg: what a route backend is opened with (struct backend_cfg),
 * its defaults (owner.h's numbers) and the bounds backend_open holds it to.
 * It sits below backend.h and below every kind (nl_backend, plan_backend,
 * bgp_backend), which take it from the dispatcher that opens them: so the
 * kinds need not include backend.h, and backend.c, which includes every
 * kind, makes no include circle with them.
 */
#ifndef TF_BACKEND_CFG_H
#define TF_BACKEND_CFG_H

/* What backend_routing says of a link direction (0: nothing against it).
 * DOWN: routing withdrew it (an interface down, a path lost): unusable.
 * UNSEEN: the backend lost its watch over it (bgp: the session with the
 * switch at one end is gone) while the switches' routing may well still
 * use it: nothing new is pinned through it, flows routing put there stay. */
#define BACKEND_DIR_DOWN 1
#define BACKEND_DIR_UNSEEN 2

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/owner.h"

struct topo;

/* The "bgp" kind's speaker (bgp_backend.h): its folder (created), its address
 * on the management network, the ExaBGP program, its AS and hold time. */
struct backend_bgp {
    const char *dir, *local_addr, *exabgp;
    uint32_t local_as;
    uint16_t hold_time;
};

struct backend_cfg {
    const struct topo *topo;   /* switch name -> netns. A switch is reachable
                                  when its node has a netns, or its name is
                                  local_name (the local kernel). NULL: only
                                  local_name is reachable */
    uint32_t prio_min, prio_max;
    uint8_t rt_proto;
    uint32_t table_base;
    const char *plan_dir;      /* "plan" kind: output folder (must exist) */
    struct backend_bgp bgp;    /* "bgp" kind (bgp_backend.h) */
    const char *local_name;    /* the switch whose kernel is this host's
                                  (no netns); NULL = gethostname() */
    uint32_t routing_table;    /* netlink: the table whose routes a pin must
                                  stay within (0 = main, where FRR installs) */
    unsigned unsupported;      /* netlink: rule selectors (plan_sel bits) taken
                                  as not kept by any switch's kernel, on top of
                                  what is probed and read back (an operator
                                  who knows, or a test standing in for an
                                  older kernel) */
    /* netlink: called from the backend's watcher thread (without any backend
     * lock held) when what the switches' routing says changed: fetch it with
     * backend_routing. Must not call into the backend itself. NULL: none. */
    void (*on_routing)(void *arg);
    void *on_routing_arg;
    /* netlink: asked by the watcher thread before it removes a pin routing
     * withdrew; false leaves the switches alone (an active/standby leader
     * that can no longer prove its lease, leader.h). NULL: always true. */
    bool (*may_act)(void *arg);
    void *may_act_arg;
};
/* The defaults of owner.h (as plan_opts_default); plan_dir NULL. */
void backend_cfg_default(struct backend_cfg *c);
/* Whether c's owned ranges (owner.h) can hold tierflow's layout: -EINVAL
 * with err naming the bound broken (priorities, table base, protocol). */
int backend_cfg_check(const struct backend_cfg *c, char *err, size_t errlen);

#endif
