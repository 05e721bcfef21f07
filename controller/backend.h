/*
 * backend: installs a plan on the switches. One interface, three kinds:
 *   "netlink" - programs each switch's kernel through rtnetlink (the local
 *               one, or the network namespace the topology node names);
 *   "plan"    - writes plan.json and one <switch>.ipbatch per switch into
 *               plan_dir, atomically, for switches tierflowd cannot reach;
 *   "none"    - computes and reports only.
 *
 * Ownership (the numbers: owner.h): a backend only ever reads, changes or deletes rules whose
 * priority lies in [prio_min, prio_max] and that carry rt_proto, and routes
 * in tables [table_base, table_base + OWNER_TABLE_SPAN) that carry
 * rt_proto. backend_open reads that state back (reconcile on restart);
 * backend_apply changes it make-before-break (routes added/replaced, then
 * rules added, then rules deleted, then routes deleted) and, when a batch
 * fails on a switch, puts that switch back as it was. The netlink kind
 * also watches each switch's routing and never keeps or installs a pin
 * whose next hop routing withdrew (nl_backend.h, docs/routing.md). Not
 * thread-safe: one caller at a time (the controller's rebalance loop).
 */
#ifndef TF_BACKEND_H
#define TF_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "controller/owner.h"
#include "controller/plan.h"

struct topo;
struct backend;

/* owner.h's former name, kept for test_config.c (issue 15's helper B)
 * until the merge renames it there. */
#define BACKEND_RT_PROTO_DEFAULT OWNER_PROTO_DEFAULT
#define BACKEND_UNSUP_MAX 16         /* switches listed with a refused selector */

/* A switch and the rule selectors (plan_sel bits) it cannot take. */
struct backend_unsup {
    char sw[PLAN_SW_LEN];
    unsigned sels;
};

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

struct backend_result {
    size_t rules_added, rules_deleted;
    size_t routes_added, routes_replaced, routes_deleted;
    size_t switches;           /* switches changed */
    size_t skipped;            /* switches in the plan this backend cannot
                                  reach (netlink: no netns and not the local
                                  host name); see skipped_sw for the first */
    char skipped_sw[PLAN_SW_LEN];
    size_t round_trips;        /* netlink batches sent */
    size_t narrowed;           /* rules, routes and next hops of the plan not
                                  installed because routing does not offer them */
    size_t refused;            /* rules of the plan not installed because a
                                  switch's kernel does not keep one of their
                                  selectors (netlink: FRA_DSCP before 6.13) */
    char unsupported[200];     /* the first such switch and selector, "" none:
                                  the backend is then not healthy */
    struct backend_unsup unsup[BACKEND_UNSUP_MAX];   /* every such switch (the first */
    size_t nunsup;                                  /* BACKEND_UNSUP_MAX) */
    bool rolled_back;          /* a switch failed and was restored */
    char failed_sw[PLAN_SW_LEN];
    char error[256];           /* "" on success */
};

/* kind "netlink" | "plan" | "bgp" | "none" (NULL: "none"). On failure err
 * says why (an unknown kind, named with the known ones; a switch namespace
 * missing, permission...). */
int backend_open(const char *kind, const struct backend_cfg *cfg,
                 struct backend **out, char *err, size_t errlen);
/* Makes the installed state equal want (whose rules/routes must lie in the
 * owned ranges: -EINVAL otherwise, nothing changed). res may be NULL. */
int backend_apply(struct backend *b, const struct plan *want, struct backend_result *res);
/* What is installed now (netlink: read from the kernels; others: the last
 * applied plan). have is re-initialised and comes out sorted. */
int backend_read(struct backend *b, struct plan *have);
/* Removes everything this backend owns, on every switch it can reach. */
int backend_withdraw(struct backend *b, struct backend_result *res);
/*
 * What the switches' own routing says (netlink only; backend.h of
 * nl_backend.h for the watch): down[ndirs] (ndirs = 2 * the topology's
 * links) gets 1 for every link direction an interface state or a routing
 * withdrawal makes unusable, and notes (may be NULL) the lines describing
 * pins the backend withdrew since the last call ("" when none).
 * -EOPNOTSUPP for the other kinds (down all 0), -ESTALE when ndirs is not
 * this backend's topology's.
 */
/* Records that switch sw refused rules needing sels, in res->unsup (merged
 * per switch) and, for the first, in res->unsupported as why says. */
void backend_result_unsup(struct backend_result *res, const char *sw, unsigned sels, size_t refused,
                          const char *why);

int backend_routing(struct backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen);
bool backend_healthy(struct backend *b);
/* The bgp kind's speaker, sessions and announcements (bgp_backend_json);
 * NULL for the other kinds. */
json_t *backend_json(struct backend *b);
/* The kind's own Prometheus series to f (bgp: bgp_backend_metrics; others
 * none). */
int backend_metrics(struct backend *b, FILE *f);
/* Whether this kind changes anything outside tierflowd (netlink: switches;
 * plan: files for the switches' automation). "none" does not: a round it
 * accepted is not "applied" (docs/api.md). */
bool backend_acts(const struct backend *b);
/* Whether this kind steers per destination host (bgp: one route per
 * (switch, destination), docs/bgp.md), so that the rebalance plans every
 * flow from one leaf to one host as one unit (granularity.h). */
bool backend_per_destination(const struct backend *b);
/* Whether kind (as backend_open takes it) can act on topology t: the kinds
 * that act need every uplink of a multi-uplink switch to name its
 * interface and next-hop address (planbuild_check_topo); -EINVAL with err
 * naming the kind and the first link lacking one, or an unknown kind. */
int backend_check_topo(const char *kind, const struct topo *t, char *err, size_t errlen);
/* Last error ("" when none); valid until the next call. */
const char *backend_error(const struct backend *b);
const char *backend_kind(const struct backend *b);
void backend_close(struct backend *b);

#endif
