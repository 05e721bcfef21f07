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

#include "controller/backend_cfg.h"
#include "controller/backend_result.h"
#include "controller/plan.h"

struct topo;
struct backend;

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
 * What the switches' own routing says (netlink and bgp; nl_backend.h and
 * bgp_view.h for the watches): down[ndirs] (ndirs = 2 * the topology's
 * links) gets BACKEND_DIR_DOWN for every link direction an interface state
 * or a routing withdrawal makes unusable, BACKEND_DIR_UNSEEN for one the
 * backend can no longer watch (bgp: the session with a switch at its end
 * is lost) though routing may well still use it, 0 otherwise; and notes
 * (may be NULL) the lines describing pins the backend withdrew since the
 * last call ("" when none). -EOPNOTSUPP for the other kinds (down all 0),
 * -ESTALE when ndirs is not this backend's topology's.
 */

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
