/*
 * nlroute: policy rules and routes in plan form over one rtnetlink socket
 * into one kernel (the local one or a named network namespace): the codec,
 * as FRR's rt_netlink.c, over nlsock (the transport: socket, batches,
 * acks, dumps; nlsock.h), as FRR's kernel_netlink.c.
 *
 * Built on libnl (libnl-route-3): requests are rtnl_rule / rtnl_route
 * objects turned into messages by libnl (plus FRA_DSCP, which libnl 3.7
 * lacks, put into the built message); dump entries are parsed attribute by
 * attribute. It keeps the kernel's interface list (names to indexes for
 * next hops), refreshed before routes are written or read.
 *
 * Invariant: only what struct nlroute_own says is tierflow's is ever read
 * into a plan; changes go only where the caller's plan says.
 */
#ifndef TF_NLROUTE_H
#define TF_NLROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "controller/plan.h"

struct nlroute;

/* What tierflow owns in a kernel: rules with priority in [prio_min,
 * prio_max] AND protocol proto; routes with protocol proto in tables
 * [table_min, table_max]. Nothing else is ever read into a plan, changed
 * or deleted. */
struct nlroute_own {
    uint32_t prio_min, prio_max, table_min, table_max;
    uint8_t proto;
};

enum nlroute_op { NLROUTE_ROUTE_REPLACE, NLROUTE_RULE_ADD, NLROUTE_RULE_DEL, NLROUTE_ROUTE_DEL };

/* netns NULL or "" = the caller's namespace; else /run/netns/<netns>. */
int nlroute_open(const char *netns, struct nlroute **out, char *err, size_t errlen);
void nlroute_close(struct nlroute *n);

/* Appends the owned rules and routes, labelled with switch name sw. */
int nlroute_read(struct nlroute *n, const struct nlroute_own *own, const char *sw,
                 struct plan *out, char *err, size_t errlen);

/*
 * Applies op to every rule (RULE_*) or route (ROUTE_*) of p, batched
 * (nlsock_run). An add that finds the identical rule (EEXIST) and a delete
 * that finds nothing (ENOENT/ESRCH) count as done: the kernel is already
 * as asked.
 * Stops after the first batch with an error and returns it (err names the
 * item and the kernel's reason). *done counts successful items,
 * *round_trips adds the batches sent.
 */
int nlroute_run(struct nlroute *n, enum nlroute_op op, const struct plan *p, uint8_t proto,
                size_t *done, size_t *round_trips, char *err, size_t errlen);

struct nlmsghdr;
/* One RTM_NEWRULE message (a dump entry) in plan form, sw left empty, and
 * its FRA_PROTOCOL: -EINVAL for anything that is not a to-table IPv4/IPv6
 * rule with well-formed attributes. Every selector the kernel returned is
 * read (FRA_DSCP included), so comparing it with what was sent
 * (plan_rule_dropped) shows a selector the kernel skipped. */
int nlroute_rule_parse(const struct nlmsghdr *h, struct plan_rule *r, uint8_t *proto);

struct routing_view;
/* The routing view of this kernel (routing_view.h): routing table `table`
 * (ROUTING_VIEW_MAIN for FRR's), without routes of protocol own_proto, with
 * only live next hops, and every interface's oper state. v is cleared
 * first. */
int nlroute_read_view(struct nlroute *n, uint32_t table, uint8_t own_proto, struct routing_view *v,
                      char *err, size_t errlen);

#endif
