/*
 * routing_view: see routing_view.h. Lookups are linear scans: a switch's
 * routing table in a fabric holds one prefix per leaf (hundreds), and a
 * view is consulted once per owned route when something changed, not per
 * packet.
 */
#include "controller/routing_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo.h"

void routing_view_init(struct routing_view *v)
{
    memset(v, 0, sizeof(*v));
    plan_init(&v->rt);
}

void routing_view_free(struct routing_view *v)
{
    plan_free(&v->rt);
    free(v->links);
    memset(v, 0, sizeof(*v));
    plan_init(&v->rt);
}

void routing_view_clear(struct routing_view *v)
{
    plan_clear(&v->rt);
    v->nlinks = 0;
    v->nh_objects = false;
}

int routing_view_add_link(struct routing_view *v, const char *name, bool up)
{
    if (tf_grow((void **)&v->links, &v->lcap, v->nlinks + 1, sizeof(*v->links)))
        return -ENOMEM;
    struct routing_link *l = &v->links[v->nlinks++];
    tf_strlcpy(l->name, name, sizeof(l->name));
    l->up = up;
    return 0;
}

int routing_view_add_route(struct routing_view *v, const struct plan_route *r)
{
    /* Not plan_add_route: it refuses nnh 0 (a plan route always has a next
     * hop), which a view keeps as "offers nothing", and routing's routes
     * need not meet what tierflow's own must (a next hop without gateway or
     * interface, say); the view is only ever read. */
    struct plan *p = &v->rt;
    if (tf_grow((void **)&p->routes, &p->tcap, p->nroutes + 1, sizeof(*p->routes)))
        return -ENOMEM;
    p->routes[p->nroutes++] = *r;
    return 0;
}

bool routing_view_link_up(const struct routing_view *v, const char *name)
{
    for (size_t i = 0; i < v->nlinks; i++)
        if (!strcmp(v->links[i].name, name))
            return v->links[i].up;
    return false;
}

const struct plan_route *routing_view_lookup(const struct routing_view *v, uint8_t af, const uint8_t *dst,
                                             uint8_t plen)
{
    const struct plan_route *best = NULL;
    for (size_t i = 0; i < v->rt.nroutes; i++) {
        const struct plan_route *r = &v->rt.routes[i];
        if (r->af != af || r->dst_len > plen || (best && r->dst_len <= best->dst_len))
            continue;
        if (r->dst_len == 0 || tf_prefix_contains(af == 6 ? 6 : 4, r->dst, r->dst_len, dst))
            best = r;
    }
    return best;
}

/* a is routing's next hop, b ours. Routing's without a comparable gateway
 * (BGP unnumbered: an IPv6 link-local gateway for IPv4) matches by
 * interface. */
static bool nh_match(const struct plan_nh *a, const struct plan_nh *b)
{
    if (!a->af && a->dev[0])
        return !strcmp(a->dev, b->dev);
    if (a->af != b->af || (a->af && memcmp(a->via, b->via, a->af == 6 ? 16 : 4)))
        return false;
    return !a->dev[0] || !b->dev[0] || !strcmp(a->dev, b->dev);
}

bool routing_view_offers(const struct routing_view *v, uint8_t af, const uint8_t *dst, uint8_t plen,
                         const struct plan_nh *nh)
{
    if (nh->dev[0] && !routing_view_link_up(v, nh->dev))
        return false;
    if (v->nh_objects)
        return true;
    const struct plan_route *r = routing_view_lookup(v, af, dst, plen);
    for (int k = 0; r && k < r->nnh; k++)
        if (nh_match(&r->nh[k], nh))
            return true;
    return false;
}

static void desc_nh(const struct plan_route *r, const struct plan_nh *nh, char *buf, size_t len)
{
    char d[64], g[64];
    snprintf(buf, len, "%s/%u table %u via %s dev %s", tf_addr_str(r->af, r->dst, d, sizeof(d)), r->dst_len,
             r->table, nh->af ? tf_addr_str(nh->af, nh->via, g, sizeof(g)) : "-", nh->dev[0] ? nh->dev : "-");
}

/* A kept route of table `table` that holds rule r's destination. */
static bool table_holds(const struct plan *p, const struct plan_rule *r)
{
    for (size_t i = 0; i < p->nroutes; i++) {
        const struct plan_route *rt = &p->routes[i];
        if (rt->table != r->table || rt->af != r->af || strcmp(rt->sw, r->sw) != 0)
            continue;
        if (rt->dst_len == 0 || (r->dst_len >= rt->dst_len &&
                                 tf_prefix_contains(r->af == 6 ? 6 : 4, rt->dst, rt->dst_len, r->dst)))
            return true;
        if (r->dst_len == 0)   /* a class rule: any route in its table serves it */
            return true;
    }
    return false;
}

int routing_view_narrow(const struct routing_view *v, const struct plan *in, struct plan *out,
                        struct routing_narrowed *n)
{
    struct routing_narrowed scratch;
    if (!n)
        n = &scratch;
    memset(n, 0, sizeof(*n));
    plan_init(out);
    int rc = 0;
    for (size_t i = 0; i < in->nroutes && !rc; i++) {
        struct plan_route r = in->routes[i];
        uint8_t keep = 0;
        for (int k = 0; k < in->routes[i].nnh; k++) {
            const struct plan_nh *nh = &in->routes[i].nh[k];
            if (routing_view_offers(v, r.af, r.dst, r.dst_len, nh)) {
                r.nh[keep++] = *nh;
                continue;
            }
            n->nh_dropped++;
            if (!n->first[0])
                desc_nh(&r, nh, n->first, sizeof(n->first));
        }
        r.nnh = keep;
        if (keep)
            rc = plan_add_route(out, &r);
        else
            n->routes_dropped++;
    }
    for (size_t i = 0; i < in->nrules && !rc; i++) {
        if (table_holds(out, &in->rules[i]))
            rc = plan_add_rule(out, &in->rules[i]);
        else
            n->rules_dropped++;
    }
    if (rc) {
        plan_free(out);
        plan_init(out);
        return rc;
    }
    plan_sort(out);
    return 0;
}

/* Whether any route of the view lists nh. */
static bool uses_nh(const struct routing_view *v, const struct plan_nh *nh)
{
    if (v->nh_objects)
        return true;
    for (size_t i = 0; i < v->rt.nroutes; i++)
        for (int k = 0; k < v->rt.routes[i].nnh; k++)
            if (nh_match(&v->rt.routes[i].nh[k], nh))
                return true;
    return false;
}

/* The interface of link l at node (its end there), "" when unnamed. */
static const char *if_at(const struct topo *t, uint32_t l, uint32_t node)
{
    return t->links[l].lo == node ? t->links[l].lo_if : t->links[l].hi_if;
}

void routing_view_down_dirs(const struct topo *t, uint32_t node, const struct routing_view *v, uint8_t *down,
                            uint8_t *inferred)
{
    const struct topo_node *sw = &t->nodes[node];
    /* Local: every link of node whose interface here is not up. */
    for (int pass = 0; pass < 2; pass++) {
        uint32_t first = pass ? sw->down_first : sw->up_first, cnt = pass ? sw->down_count : sw->up_count;
        const uint32_t *ids = pass ? t->down_links : t->up_links;
        for (uint32_t k = 0; k < cnt; k++) {
            uint32_t l = ids[first + k];
            const char *ifn = if_at(t, l, node);
            if (ifn[0] && !routing_view_link_up(v, ifn))
                down[2 * l] = down[2 * l + 1] = 1;
        }
    }
    /* Propagated: an uplink's far end that routing no longer offers for a
     * leaf it is linked to. */
    for (uint32_t k = 0; k < sw->up_count; k++) {
        uint32_t l = t->up_links[sw->up_first + k];
        const struct topo_link *ul = &t->links[l];
        struct plan_nh nh = {0};
        int af, plen;
        if (!ul->lo_if[0] || !ul->hi_ip[0] || !routing_view_link_up(v, ul->lo_if) ||
            tf_prefix_parse(ul->hi_ip, &af, nh.via, &plen) < 0)
            continue;
        nh.af = (uint8_t)af;
        tf_strlcpy(nh.dev, ul->lo_if, sizeof(nh.dev));
        /* Routing uses Y for nothing at all: the session to Y is down (or
         * not up yet after the link returned), which says nothing about
         * what lies beyond Y; routing does not use this uplink. */
        if (!uses_nh(v, &nh)) {
            down[2 * l] = 1;
            continue;
        }
        const struct topo_node *y = &t->nodes[ul->hi];
        for (uint32_t j = 0; j < y->down_count; j++) {
            uint32_t dl = t->down_links[y->down_first + j];
            uint32_t d = t->links[dl].lo;
            const struct topo_node *dn = &t->nodes[d];
            if (d == node || dn->tier != TOPO_LEAF || !dn->plen || dn->af != af)
                continue;
            if (!routing_view_offers(v, dn->af, dn->addr, dn->plen, &nh) && inferred[2 * dl + 1] < UINT8_MAX)
                inferred[2 * dl + 1]++;   /* y -> d: the down direction of link dl */
        }
    }
}
