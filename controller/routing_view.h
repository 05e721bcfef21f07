/*
 * routing_view: what a switch's own routing (BGP through FRR, or static
 * routes) offers, and the rule that tierflow only ever narrows it.
 *
 * A view is the switch's routing table (main by default) with only the next
 * hops the kernel would use (dead and link-down next hops are left out when
 * the view is read), plus the oper state of its interfaces. Pure data and
 * pure functions: the netlink backend reads views (nlroute_read_view) and
 * calls these; unit tests build views by hand.
 *
 * The narrowing rule (docs/routing.md): one of tierflow's routes (prefix P
 * in one of its tables, next hop N out of interface I) may stand only while
 * I is up and the routing table's longest match for P still lists N. A
 * multipath route keeps the next hops that pass; a route with none left goes,
 * and so does every rule that would look up a table which no longer holds a
 * route for the rule's destination (such a rule would fall through anyway;
 * removing it keeps the installed state equal to what is meant).
 *
 * Invariants: functions never allocate except routing_view_narrow's output;
 * the view is read-only to them and may be shared by readers.
 */
#ifndef TF_ROUTING_VIEW_H
#define TF_ROUTING_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/plan.h"

struct topo;

#define ROUTING_VIEW_MAIN 254   /* the kernel's main table, where FRR installs */

struct routing_link {
    char name[PLAN_IF_LEN];
    bool up;                    /* administratively up and carrier (IFF_RUNNING) */
};

struct routing_view {
    struct plan rt;             /* routes only (rules unused); a route with nnh 0
                                   is a blackhole/unreachable: it offers nothing */
    struct routing_link *links;
    size_t nlinks, lcap;
    bool nh_objects;            /* some routes use kernel next-hop objects, whose
                                   gateways a route dump does not show: then the
                                   view cannot tell, and offers every next hop
                                   whose interface is up (logged by the backend) */
};

void routing_view_init(struct routing_view *v);
void routing_view_free(struct routing_view *v);
void routing_view_clear(struct routing_view *v);
int  routing_view_add_link(struct routing_view *v, const char *name, bool up);
/* Appends a route (nnh 0: a blackhole or unreachable, offering nothing). */
int  routing_view_add_route(struct routing_view *v, const struct plan_route *r);
/* Interface state; an interface the view does not know counts as down. */
bool routing_view_link_up(const struct routing_view *v, const char *name);

/* Longest-prefix match in the view for the prefix dst/plen (routes no
 * longer than plen that contain it); NULL when routing has no route. */
const struct plan_route *routing_view_lookup(const struct routing_view *v, uint8_t af, const uint8_t *dst,
                                             uint8_t plen);
/* True when routing offers next hop nh for dst/plen: nh's interface is up
 * and the longest match lists nh's gateway (and interface, when both name
 * one). */
bool routing_view_offers(const struct routing_view *v, uint8_t af, const uint8_t *dst, uint8_t plen,
                         const struct plan_nh *nh);

struct routing_narrowed {
    size_t routes_dropped, nh_dropped, rules_dropped;
    char first[160];            /* the first dropped route or next hop, for logs */
};
/* out = in (one switch's plan) narrowed to what v offers; out is
 * re-initialised and comes out sorted. n (may be NULL) counts what went. */
int routing_view_narrow(const struct routing_view *v, const struct plan *in, struct plan *out,
                        struct routing_narrowed *n);

/*
 * What a switch's view says about the fabric, in topology directions
 * (2*link up, 2*link+1 down), arrays of 2*nlinks:
 *   - down |= 1: a link of node whose interface at node is not up (both
 *     directions); an uplink to Y whose interface is up but that routing
 *     uses for no route at all (the BGP session to Y is down, or not up yet
 *     after the link came back): node -> Y, and nothing is inferred beyond;
 *   - inferred += 1 (saturating): for an uplink to Y that routing uses and
 *     a remote leaf D that Y is linked to directly, when routing no longer
 *     offers Y for D's prefix, the direction Y -> D (what BGP propagated: Y
 *     lost D). The caller decides how many switches must agree (a session
 *     coming back fills its routes prefix by prefix: one switch's view of a
 *     moment is not proof), and ignores it for a Y it watches itself.
 * node must be a switch of t; links without interface names are skipped.
 */
void routing_view_down_dirs(const struct topo *t, uint32_t node, const struct routing_view *v, uint8_t *down,
                            uint8_t *inferred);

#endif
