/*
 * nlroute: see nlroute.h. FIB rules and routes built and parsed with
 * libnl; the socket, batching, acks and dumps are nlsock's.
 *
 * Requests are libnl objects (rtnl_rule; rtnl_route with rtnl_nexthop)
 * turned into messages by rtnl_*_build_*_request. What libnl 3.7 cannot
 * express is added to the built message: the full-DSCP selector
 * (FRA_DSCP, nla_put_u8) and the any-scope of a route delete (patched in
 * the rtmsg, see build_route). Dump entries are parsed with nlmsg_parse
 * and policies of our own, so that a message that breaks an attribute's
 * length is skipped whole.
 *
 * libnl's own error codes (NLE_*) are mapped to errno (nlsock_errno) where
 * a libnl call returns, so every function here returns 0 or -errno.
 */
#include "controller/nlroute.h"

#include <errno.h>
#include <linux/fib_rules.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include "common/util.h"
#include "controller/nlsock.h"
#include "controller/routing_view.h"

#ifndef FRA_DSCP
#define FRA_DSCP 25     /* kernel 6.13+; not in older uapi headers */
#endif

/* Highest rule attribute read; FRA_DSCP is past FRA_MAX of older headers. */
#define NLR_FRA_MAX (FRA_DSCP > FRA_MAX ? FRA_DSCP : FRA_MAX)

struct link_ent {
    int index;
    bool up;             /* IFF_UP and IFF_RUNNING (carrier) */
    char name[IF_NAMESIZE];
};

struct nlroute {
    struct nlsock *s;
    struct link_ent *links;   /* the kernel's interfaces, by refresh_links */
    size_t nlinks;
};

#define fail tf_fail

int nlroute_open(const char *netns, struct nlroute **out, char *err, size_t errlen)
{
    struct nlroute *n = calloc(1, sizeof(*n));
    if (!n)
        return fail(err, errlen, -ENOMEM, "out of memory");
    int rc = nlsock_open(netns, &n->s, err, errlen);
    if (rc) {
        free(n);
        return rc;
    }
    *out = n;
    return 0;
}

void nlroute_close(struct nlroute *n)
{
    if (!n)
        return;
    nlsock_close(n->s);
    free(n->links);
    free(n);
}

/* ---- message building ------------------------------------------------- */

static int family(uint8_t af) { return af == 6 ? AF_INET6 : AF_INET; }
static size_t alen(uint8_t af) { return af == 6 ? 16 : 4; }

/* libnl result codes from here to the end of build_*. */
static int addr_new(uint8_t af, const uint8_t *a, unsigned plen, struct nl_addr **out)
{
    struct nl_addr *x = nl_addr_build(family(af), a, alen(af));
    if (!x)
        return -NLE_NOMEM;
    nl_addr_set_prefixlen(x, (int)plen);
    *out = x;
    return 0;
}

static int build_rule(const struct plan_rule *r, bool add, uint8_t proto, struct nl_msg **out)
{
    struct rtnl_rule *rl = rtnl_rule_alloc();
    struct nl_addr *src = NULL, *dst = NULL;
    int rc = rl ? 0 : -NLE_NOMEM;
    if (!rc) {
        rtnl_rule_set_family(rl, family(r->af));
        rtnl_rule_set_prio(rl, r->prio);
        rtnl_rule_set_table(rl, r->table);
        rtnl_rule_set_action(rl, FR_ACT_TO_TBL);
        rc = rtnl_rule_set_protocol(rl, proto);
    }
    if (!rc && r->src_len && !(rc = addr_new(r->af, r->src, r->src_len, &src)))
        rc = rtnl_rule_set_src(rl, src);
    if (!rc && r->dst_len && !(rc = addr_new(r->af, r->dst, r->dst_len, &dst)))
        rc = rtnl_rule_set_dst(rl, dst);
    if (!rc && r->ipproto)
        rc = rtnl_rule_set_ipproto(rl, r->ipproto);
    if (!rc && r->sport)
        rc = rtnl_rule_set_sport(rl, r->sport);
    if (!rc && r->dport)
        rc = rtnl_rule_set_dport(rl, r->dport);
    if (!rc && r->fwmark) {
        rtnl_rule_set_mark(rl, r->fwmark);
        rtnl_rule_set_mask(rl, r->fwmask ? r->fwmask : 0xffffffffu);
    }
    if (!rc)
        rc = add ? rtnl_rule_build_add_request(rl, NLM_F_EXCL, out)
                 : rtnl_rule_build_delete_request(rl, 0, out);
    /* libnl 3.7 has no setter for the full-DSCP selector. */
    if (!rc && r->dscp >= 0 && (rc = nla_put_u8(*out, FRA_DSCP, (uint8_t)r->dscp)) < 0) {
        nlmsg_free(*out);
        *out = NULL;
    }
    nl_addr_put(src);
    nl_addr_put(dst);
    rtnl_rule_put(rl);
    return rc;
}

static int add_nexthop(struct rtnl_route *rt, const struct plan_nh *p, int ifindex)
{
    struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
    if (!nh)
        return -NLE_NOMEM;
    rtnl_route_nh_set_weight(nh, (uint8_t)(p->weight - 1));  /* kernel stores weight-1 */
    if (ifindex)
        rtnl_route_nh_set_ifindex(nh, ifindex);
    if (p->af) {
        struct nl_addr *gw;
        int rc = addr_new(p->af, p->via, (unsigned)alen(p->af) * 8, &gw);
        if (rc) {
            rtnl_route_nh_free(nh);
            return rc;
        }
        rtnl_route_nh_set_gateway(nh, gw);   /* takes its own reference */
        nl_addr_put(gw);
    }
    rtnl_route_add_nexthop(rt, nh);          /* the route owns it now */
    return 0;
}

static int build_route(const struct plan_route *r, bool add, uint8_t proto, const int *ifx,
                       struct nl_msg **out)
{
    struct rtnl_route *rt = rtnl_route_alloc();
    struct nl_addr *dst = NULL;
    int rc = rt ? 0 : -NLE_NOMEM;
    if (!rc)
        rc = rtnl_route_set_family(rt, (uint8_t)family(r->af));
    if (!rc && !(rc = addr_new(r->af, r->dst, r->dst_len, &dst)))
        rc = rtnl_route_set_dst(rt, dst);
    if (!rc) {
        rtnl_route_set_table(rt, r->table);
        rtnl_route_set_protocol(rt, proto);
        rc = rtnl_route_set_type(rt, RTN_UNICAST);
    }
    for (int i = 0; !rc && add && i < r->nnh; i++)
        rc = add_nexthop(rt, &r->nh[i], ifx[i]);
    if (!rc && add) {
        rtnl_route_set_scope(rt, RT_SCOPE_UNIVERSE);
        rc = rtnl_route_build_add_request(rt, NLM_F_REPLACE, out);
    } else if (!rc) {
        rc = rtnl_route_build_del_request(rt, 0, out);
        /* libnl turns RT_SCOPE_NOWHERE into a guess (link scope, for a
         * route without next hops), which would not match our gateway
         * routes; in a delete the kernel reads NOWHERE as any scope, and
         * the protocol keeps it to our routes. */
        if (!rc) {
            struct rtmsg *rtm = nlmsg_data(nlmsg_hdr(*out));
            rtm->rtm_scope = RT_SCOPE_NOWHERE;
        }
    }
    nl_addr_put(dst);
    rtnl_route_put(rt);
    return rc;
}

static int link_index(const struct nlroute *n, const char *name)
{
    for (size_t i = 0; i < n->nlinks; i++)
        if (!strcmp(n->links[i].name, name))
            return n->links[i].index;
    return 0;
}

static const char *link_name(const struct nlroute *n, int index)
{
    for (size_t i = 0; i < n->nlinks; i++)
        if (n->links[i].index == index)
            return n->links[i].name;
    return "";
}

/* Builds the request for item i of p; why says what went wrong. */
static int build_item(const struct nlroute *n, const struct plan *p, size_t i, bool rules,
                      bool add, uint8_t proto, struct nl_msg **out, char *why, size_t whylen)
{
    int rc;
    if (rules) {
        rc = build_rule(&p->rules[i], add, proto, out);
    } else {
        const struct plan_route *r = &p->routes[i];
        int ifx[PLAN_MAX_NH] = {0};
        for (int k = 0; add && k < r->nnh; k++)
            if (r->nh[k].dev[0] && !(ifx[k] = link_index(n, r->nh[k].dev)))
                return fail(why, whylen, -ENODEV, "interface %s not found", r->nh[k].dev);
        rc = build_route(r, add, proto, ifx, out);
    }
    if (rc < 0)
        return fail(why, whylen, nlsock_errno(rc), "building the request: %s", nl_geterror(rc));
    return 0;
}


static void rule_desc(const struct plan_rule *r, char *buf, size_t len)
{
    char s[320];
    snprintf(buf, len, "rule %s", plan_rule_str(r, s, sizeof(s)));
}

static void route_desc(const struct plan_route *r, char *buf, size_t len)
{
    char d[64];
    snprintf(buf, len, "route %s/%u table %u", tf_addr_str(r->af, r->dst, d, sizeof(d)),
             r->dst_len, r->table);
}

static void item_desc(const struct plan *p, bool rules, size_t k, char *buf, size_t len)
{
    if (rules)
        rule_desc(&p->rules[k], buf, len);
    else
        route_desc(&p->routes[k], buf, len);
}

struct build_ctx {
    const struct nlroute *n;
    const struct plan *p;
    bool rules, add;
    uint8_t proto;
};

static int build_cb(void *arg, size_t i, struct nl_msg **msg, char *why, size_t whylen)
{
    const struct build_ctx *c = arg;
    return build_item(c->n, c->p, i, c->rules, c->add, c->proto, msg, why, whylen);
}

static int refresh_links(struct nlroute *n, char *err, size_t errlen);

int nlroute_run(struct nlroute *n, enum nlroute_op op, const struct plan *p, uint8_t proto,
                size_t *done, size_t *round_trips, char *err, size_t errlen)
{
    bool rules = op == NLROUTE_RULE_ADD || op == NLROUTE_RULE_DEL;
    bool add = op == NLROUTE_RULE_ADD || op == NLROUTE_ROUTE_REPLACE;
    size_t total = rules ? p->nrules : p->nroutes;
    if (!total)
        return 0;
    if (!rules && add) {
        int rc = refresh_links(n, err, errlen);
        if (rc)
            return rc;
    }
    struct build_ctx c = {n, p, rules, add, proto};
    struct nlsock_fail f;
    int rc = nlsock_run(n->s, total, !add, build_cb, &c, done, round_trips, &f);
    if (!rc)
        return 0;
    if (f.item < 0)
        return fail(err, errlen, rc, "netlink batch: %s", strerror(-rc));
    char desc[200];
    item_desc(p, rules, (size_t)f.item, desc, sizeof(desc));
    if (f.kernel)
        return fail(err, errlen, rc, "%s %s: %s%s%s", add ? "adding" : "deleting", desc, strerror(-rc),
                    f.why[0] ? ": " : "", f.why);
    return fail(err, errlen, rc, "%s %s: %s", add ? "adding" : "deleting", desc, f.why);
}

/* ---- reading dump entries ------------------------------------------------- */

static bool get_addr(const struct nlattr *a, uint8_t af, uint8_t out[16])
{
    if (!a || (size_t)nla_len(a) != alen(af))
        return false;
    memcpy(out, nla_data(a), alen(af));
    return true;
}

static uint16_t get_port(const struct nlattr *a)
{
    struct fib_rule_port_range pr;
    if (!a)
        return 0;
    memcpy(&pr, nla_data(a), sizeof(pr));   /* length checked by the policy */
    return pr.start;   /* ours are single ports; a range reads as its start */
}

/* Lengths of the fixed-size attributes read back; a message that breaks
 * them is not one of ours and is skipped whole. */
static struct nla_policy rule_policy[NLR_FRA_MAX + 1] = {
    [FRA_PRIORITY] = {.type = NLA_U32},
    [FRA_TABLE] = {.type = NLA_U32},
    [FRA_PROTOCOL] = {.type = NLA_U8},
    [FRA_IP_PROTO] = {.type = NLA_U8},
    [FRA_FWMARK] = {.type = NLA_U32},
    [FRA_FWMASK] = {.type = NLA_U32},
    [FRA_DSCP] = {.type = NLA_U8},
    [FRA_SPORT_RANGE] = {.minlen = sizeof(struct fib_rule_port_range)},
    [FRA_DPORT_RANGE] = {.minlen = sizeof(struct fib_rule_port_range)},
};

static struct nla_policy route_policy[RTA_TABLE + 1] = {
    [RTA_OIF] = {.type = NLA_U32},
    [RTA_TABLE] = {.type = NLA_U32},
};

static struct nla_policy link_policy[IFLA_IFNAME + 1] = {
    [IFLA_IFNAME] = {.type = NLA_STRING, .maxlen = IF_NAMESIZE},
};

struct read_ctx {
    const struct nlroute *n;
    const struct nlroute_own *own;
    const char *sw;
    struct plan *out;
    size_t base_rules, base_routes;
};

static void read_reset(void *p)
{
    struct read_ctx *c = p;
    c->out->nrules = c->base_rules;
    c->out->nroutes = c->base_routes;
}

int nlroute_rule_parse(const struct nlmsghdr *h, struct plan_rule *r, uint8_t *proto)
{
    struct nlattr *tb[NLR_FRA_MAX + 1];
    if (h->nlmsg_type != RTM_NEWRULE ||
        nlmsg_parse((struct nlmsghdr *)h, sizeof(struct fib_rule_hdr), tb, NLR_FRA_MAX, rule_policy) < 0)
        return -EINVAL;
    const struct fib_rule_hdr *frh = nlmsg_data(h);
    if ((frh->family != AF_INET && frh->family != AF_INET6) || frh->action != FR_ACT_TO_TBL)
        return -EINVAL;
    *r = (struct plan_rule){.af = frh->family == AF_INET6 ? 6 : 4, .dscp = -1,
                            .src_len = frh->src_len, .dst_len = frh->dst_len, .table = frh->table};
    *proto = tb[FRA_PROTOCOL] ? nla_get_u8(tb[FRA_PROTOCOL]) : 0;
    if (tb[FRA_PRIORITY])
        r->prio = nla_get_u32(tb[FRA_PRIORITY]);
    if (tb[FRA_TABLE])
        r->table = nla_get_u32(tb[FRA_TABLE]);
    if ((r->src_len && !get_addr(tb[FRA_SRC], r->af, r->src)) ||
        (r->dst_len && !get_addr(tb[FRA_DST], r->af, r->dst)))
        return -EINVAL;
    if (tb[FRA_IP_PROTO])
        r->ipproto = nla_get_u8(tb[FRA_IP_PROTO]);
    r->sport = get_port(tb[FRA_SPORT_RANGE]);
    r->dport = get_port(tb[FRA_DPORT_RANGE]);
    if (tb[FRA_FWMARK])
        r->fwmark = nla_get_u32(tb[FRA_FWMARK]);
    if (tb[FRA_FWMASK])
        r->fwmask = nla_get_u32(tb[FRA_FWMASK]);
    if (r->fwmask == 0xffffffffu || !r->fwmark)
        r->fwmask = 0;   /* canonical: 0 = exact mark */
    if (tb[FRA_DSCP])
        r->dscp = nla_get_u8(tb[FRA_DSCP]);
    else if (frh->tos)
        r->dscp = frh->tos >> 2;
    return 0;
}

static int rule_cb(void *p, struct nlmsghdr *h)
{
    struct read_ctx *c = p;
    struct plan_rule r;
    uint8_t proto;
    if (nlroute_rule_parse(h, &r, &proto) < 0)
        return 0;
    /* Ownership: priority range AND protocol AND one of our tables. */
    if (r.prio < c->own->prio_min || r.prio > c->own->prio_max || proto != c->own->proto ||
        r.table < c->own->table_min || r.table > c->own->table_max)
        return 0;
    tf_strlcpy(r.sw, c->sw, sizeof(r.sw));
    return plan_add_rule(c->out, &r) == -ENOMEM ? -ENOMEM : 0;
}

static void route_nh(const struct nlroute *n, const struct plan_route *r, const struct nlattr *gw,
                     int ifindex, struct plan_nh *nh)
{
    memset(nh, 0, sizeof(*nh));
    if (get_addr(gw, r->af, nh->via))
        nh->af = r->af;
    tf_strlcpy(nh->dev, ifindex ? link_name(n, ifindex) : "", sizeof(nh->dev));
    nh->weight = 1;
}

static int route_cb(void *p, struct nlmsghdr *h)
{
    struct read_ctx *c = p;
    const struct nlroute *n = c->n;
    struct nlattr *tb[RTA_TABLE + 1];
    if (h->nlmsg_type != RTM_NEWROUTE ||
        nlmsg_parse(h, sizeof(struct rtmsg), tb, RTA_TABLE, route_policy) < 0)
        return 0;
    const struct rtmsg *rtm = nlmsg_data(h);
    if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) ||
        rtm->rtm_protocol != c->own->proto || rtm->rtm_type != RTN_UNICAST ||
        (rtm->rtm_flags & RTM_F_CLONED))
        return 0;
    struct plan_route r = {.af = rtm->rtm_family == AF_INET6 ? 6 : 4,
                           .dst_len = rtm->rtm_dst_len, .table = rtm->rtm_table};
    if (tb[RTA_TABLE])
        r.table = nla_get_u32(tb[RTA_TABLE]);
    if (r.table < c->own->table_min || r.table > c->own->table_max)
        return 0;
    if (r.dst_len && !get_addr(tb[RTA_DST], r.af, r.dst))
        return 0;
    const struct nlattr *mp = tb[RTA_MULTIPATH];
    if (mp) {
        /* libnl has no iterator for struct rtnexthop. RTNH_OK reads
         * rtnh_len before it checks what is left, so that goes first:
         * libnl's copy of the message ends where the attribute does. */
        const struct rtnexthop *nh = nla_data(mp);
        int left = nla_len(mp);
        while (left >= (int)sizeof(*nh) && RTNH_OK(nh, left) && r.nnh < PLAN_MAX_NH) {
            struct nlattr *ntb[RTA_GATEWAY + 1];
            if (nla_parse(ntb, RTA_GATEWAY, (struct nlattr *)RTNH_DATA(nh),
                          nh->rtnh_len - RTNH_LENGTH(0), NULL) < 0)
                return 0;
            route_nh(n, &r, ntb[RTA_GATEWAY], nh->rtnh_ifindex, &r.nh[r.nnh]);
            r.nh[r.nnh++].weight = (uint16_t)(nh->rtnh_hops + 1);
            left -= RTNH_ALIGN(nh->rtnh_len);
            nh = RTNH_NEXT(nh);
        }
    } else {
        int oif = tb[RTA_OIF] ? (int)nla_get_u32(tb[RTA_OIF]) : 0;
        route_nh(n, &r, tb[RTA_GATEWAY], oif, &r.nh[0]);
        r.nnh = 1;
    }
    tf_strlcpy(r.sw, c->sw, sizeof(r.sw));
    return plan_add_route(c->out, &r) == -ENOMEM ? -ENOMEM : 0;
}

static void links_reset(void *p)
{
    ((struct nlroute *)p)->nlinks = 0;
}

static int link_cb(void *p, struct nlmsghdr *h)
{
    struct nlroute *n = p;
    struct nlattr *tb[IFLA_IFNAME + 1];
    if (h->nlmsg_type != RTM_NEWLINK ||
        nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_IFNAME, link_policy) < 0 ||
        !tb[IFLA_IFNAME])
        return 0;
    const struct ifinfomsg *ifi = nlmsg_data(h);
    if (n->nlinks % 64 == 0) {
        struct link_ent *v = realloc(n->links, (n->nlinks + 64) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        n->links = v;
    }
    n->links[n->nlinks].index = ifi->ifi_index;
    n->links[n->nlinks].up = (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING);
    tf_strlcpy(n->links[n->nlinks].name, nla_get_string(tb[IFLA_IFNAME]), IF_NAMESIZE);
    n->nlinks++;
    return 0;
}

static int refresh_links(struct nlroute *n, char *err, size_t errlen)
{
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    int rc = nlsock_dump(n->s, RTM_GETLINK, &ifi, sizeof(ifi), link_cb, n, links_reset);
    if (rc == -EAGAIN || rc == 0)
        return 0;
    return fail(err, errlen, rc, "listing interfaces: %s", strerror(-rc));
}

int nlroute_read(struct nlroute *n, const struct nlroute_own *own, const char *sw,
                 struct plan *out, char *err, size_t errlen)
{
    int rc = refresh_links(n, err, errlen);
    if (rc)
        return rc;
    struct read_ctx c = {n, own, sw, out, out->nrules, out->nroutes};
    struct fib_rule_hdr frh = {.family = AF_UNSPEC};
    struct rtmsg rtm = {.rtm_family = AF_UNSPEC};
    rc = nlsock_dump(n->s, RTM_GETRULE, &frh, sizeof(frh), rule_cb, &c, read_reset);
    if (rc)
        return fail(err, errlen, rc, "reading rules of switch %s: %s", sw, strerror(-rc));
    c.base_rules = out->nrules;   /* the route dump's retries keep the rules */
    rc = nlsock_dump(n->s, RTM_GETROUTE, &rtm, sizeof(rtm), route_cb, &c, read_reset);
    if (rc)
        return fail(err, errlen, rc, "reading routes of switch %s: %s", sw, strerror(-rc));
    return 0;
}

/* ---- the routing view ----------------------------------------------------- */

/* Up to RTA_NH_ID (30), which older uapi headers may lack. */
#define NLR_RTA_NH_ID 30
#define NLR_RTA_MAX (NLR_RTA_NH_ID > RTA_MAX ? NLR_RTA_NH_ID : RTA_MAX)
static struct nla_policy view_policy[NLR_RTA_MAX + 1] = {
    [RTA_OIF] = {.type = NLA_U32},
    [RTA_TABLE] = {.type = NLA_U32},
    [NLR_RTA_NH_ID] = {.type = NLA_U32},
};

struct view_ctx {
    const struct nlroute *n;
    uint32_t table;
    uint8_t own_proto;
    struct routing_view *v;
};

static void view_reset(void *p)
{
    struct view_ctx *c = p;
    c->v->rt.nroutes = 0;
    c->v->nh_objects = false;
}

/* A next hop as routing uses it: gateway of the route's family, else (an
 * IPv6 gateway for IPv4, BGP unnumbered: RTA_VIA) only the interface. */
static void view_nh(const struct nlroute *n, const struct plan_route *r, struct nlattr **ntb, int ifindex,
                    struct plan_nh *nh)
{
    route_nh(n, r, ntb[RTA_GATEWAY], ifindex, nh);
    if (!ntb[RTA_GATEWAY] && ntb[RTA_VIA])
        nh->af = 0;   /* matched by interface alone (routing_view.c) */
}

static int view_route_cb(void *p, struct nlmsghdr *h)
{
    struct view_ctx *c = p;
    const struct nlroute *n = c->n;
    struct nlattr *tb[NLR_RTA_MAX + 1];
    if (h->nlmsg_type != RTM_NEWROUTE || nlmsg_parse(h, sizeof(struct rtmsg), tb, NLR_RTA_MAX, view_policy) < 0)
        return 0;
    const struct rtmsg *rtm = nlmsg_data(h);
    uint32_t table = tb[RTA_TABLE] ? nla_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
    if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) || table != c->table ||
        rtm->rtm_protocol == c->own_proto || (rtm->rtm_flags & RTM_F_CLONED))
        return 0;
    bool nothing = rtm->rtm_type == RTN_BLACKHOLE || rtm->rtm_type == RTN_UNREACHABLE ||
                   rtm->rtm_type == RTN_PROHIBIT;
    if (rtm->rtm_type != RTN_UNICAST && !nothing)
        return 0;
    struct plan_route r = {.af = rtm->rtm_family == AF_INET6 ? 6 : 4, .dst_len = rtm->rtm_dst_len,
                           .table = table};
    if (r.dst_len && !get_addr(tb[RTA_DST], r.af, r.dst))
        return 0;
    if (tb[NLR_RTA_NH_ID] && !nothing) {
        /* Next-hop objects: the gateways are not in the route. */
        c->v->nh_objects = true;
        return 0;
    }
    const struct nlattr *mp = tb[RTA_MULTIPATH];
    const unsigned dead = RTNH_F_DEAD | RTNH_F_LINKDOWN;
    if (nothing) {
        r.nnh = 0;
    } else if (mp) {
        const struct rtnexthop *nh = nla_data(mp);
        int left = nla_len(mp);
        while (left >= (int)sizeof(*nh) && RTNH_OK(nh, left) && r.nnh < PLAN_MAX_NH) {
            struct nlattr *ntb[RTA_MAX + 1];
            if (nla_parse(ntb, RTA_MAX, (struct nlattr *)RTNH_DATA(nh), nh->rtnh_len - RTNH_LENGTH(0), NULL) < 0)
                return 0;
            if (!(nh->rtnh_flags & dead))
                view_nh(n, &r, ntb, nh->rtnh_ifindex, &r.nh[r.nnh++]);
            left -= RTNH_ALIGN(nh->rtnh_len);
            nh = RTNH_NEXT(nh);
        }
    } else if (!(rtm->rtm_flags & dead)) {
        int oif = tb[RTA_OIF] ? (int)nla_get_u32(tb[RTA_OIF]) : 0;
        view_nh(n, &r, tb, oif, &r.nh[0]);
        r.nnh = 1;
    }
    return routing_view_add_route(c->v, &r) == -ENOMEM ? -ENOMEM : 0;
}

int nlroute_read_view(struct nlroute *n, uint32_t table, uint8_t own_proto, struct routing_view *v, char *err,
                      size_t errlen)
{
    routing_view_clear(v);
    int rc = refresh_links(n, err, errlen);
    for (size_t i = 0; !rc && i < n->nlinks; i++)
        rc = routing_view_add_link(v, n->links[i].name, n->links[i].up);
    if (rc)
        return rc;
    struct view_ctx c = {n, table, own_proto, v};
    struct rtmsg rtm = {.rtm_family = AF_UNSPEC};
    rc = nlsock_dump(n->s, RTM_GETROUTE, &rtm, sizeof(rtm), view_route_cb, &c, view_reset);
    if (rc)
        return fail(err, errlen, rc, "reading routing table %u: %s", table, strerror(-rc));
    return 0;
}
