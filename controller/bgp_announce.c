/*
 * bgp_announce: see bgp_announce.h. The projection counts votes: one per
 * pinned flow's rule for its (leaf, destination, next hop), then a
 * (leaf, destination) with several next hops gets each weighted by its
 * votes. The commands are ExaBGP's text API (one line each).
 */
#include "controller/bgp_announce.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/owner.h"
#include "policy/topo.h"

static const char *ip4(const uint8_t a[4], char *buf, size_t len) { return tf_addr_str(4, a, buf, len); }

int bgp_announce_cmp(const void *x, const void *y)
{
    const struct bgp_ann *a = x, *c = y;
    if (a->peer != c->peer)
        return a->peer < c->peer ? -1 : 1;
    return memcmp(a->dst, c->dst, 4);
}

int bgp_announce_path_cmp(const void *x, const void *y)
{
    const struct bgp_ann *a = x, *c = y;
    int r = bgp_announce_cmp(a, c);
    return r ? r : memcmp(a->via, c->via, 4);
}

/* The leaf's uplink whose far end's address is via, or UINT32_MAX. */
static uint32_t uplink_by_via(const struct topo *t, uint32_t node, const uint8_t via[4])
{
    const struct topo_node *nd = &t->nodes[node];
    for (uint32_t k = 0; k < nd->up_count; k++) {
        uint32_t l = t->up_links[nd->up_first + k];
        int af;
        uint8_t a[16];
        if (tf_addr_parse(t->links[l].hi_ip, &af, a) == 0 && af == 4 && !memcmp(a, via, 4))
            return l;
    }
    return UINT32_MAX;
}

struct vote { struct bgp_ann a; size_t n; };

static int vote_cmp(const void *x, const void *y)
{
    const struct vote *a = x, *c = y;
    int r = bgp_announce_cmp(&a->a, &c->a);
    if (r)
        return r;
    if (a->n != c->n)
        return a->n > c->n ? -1 : 1;   /* most votes first */
    return memcmp(a->a.via, c->a.via, 4);
}

int bgp_announce_project(const struct bgp_announce_ctx *cx, const struct plan *want, struct bgp_ann **out,
                         size_t *nout, size_t *narrowed, struct bgp_announce_refusal *rf)
{
    struct vote *v = calloc(want->nrules + 1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    size_t nv = 0;
    for (size_t i = 0; i < want->nrules; i++) {
        const struct plan_rule *r = &want->rules[i];
        uint32_t node = topo_node_by_name(cx->t, r->sw);
        uint32_t pi = node == TOPO_NONE ? UINT32_MAX : cx->peer_of[node];
        if (r->af != 4 || r->dst_len != 32 || r->table >= cx->table_base + OWNER_CLASS_TABLE_OFF ||
            pi == UINT32_MAX) {
            unsigned sels = plan_rule_sels(r) & (PLAN_SEL_FWMARK | PLAN_SEL_DSCP);
            if (!rf->n++) {
                char rs[200];
                tf_strlcpy(rf->sw, r->sw, sizeof(rf->sw));
                rf->sels = sels ? sels : PLAN_SEL_OTHER;
                snprintf(rf->why, sizeof(rf->why), "switch %s: rule '%s' has no BGP form (the bgp backend steers "
                         "IPv4 destination hosts on switches it peers with)", r->sw, plan_rule_str(r, rs, sizeof(rs)));
            }
            continue;
        }
        const struct plan_route *rt = NULL;
        for (size_t j = 0; j < want->nroutes && !rt; j++) {
            const struct plan_route *x = &want->routes[j];
            uint32_t mask = x->dst_len ? ~0u << (32 - x->dst_len) : 0, d, p;
            memcpy(&d, r->dst, 4);
            memcpy(&p, x->dst, 4);
            if (!strcmp(x->sw, r->sw) && x->table == r->table && x->af == 4 && x->nnh == 1 && x->nh[0].af == 4 &&
                ((ntohl(d) ^ ntohl(p)) & mask) == 0)
                rt = x;
        }
        uint32_t link = rt ? uplink_by_via(cx->t, node, rt->nh[0].via) : UINT32_MAX;
        if (link == UINT32_MAX || !cx->reaches(cx->arg, link, r->dst)) {
            (*narrowed)++;
            continue;
        }
        struct vote *x = &v[nv++];
        x->a.peer = pi;
        memcpy(x->a.dst, r->dst, 4);
        memcpy(x->a.via, rt->nh[0].via, 4);
        x->a.link = link;
        x->n = 1;
    }
    /* Count per (leaf, destination, next hop): a (leaf, destination) with
     * several gets each as an add-path route weighted by its pins. */
    qsort(v, nv, sizeof(*v), vote_cmp);
    size_t w = 0;
    for (size_t i = 0; i < nv; i++) {
        if (w && !bgp_announce_path_cmp(&v[w - 1].a, &v[i].a))
            v[w - 1].n++;
        else
            v[w++] = v[i];
    }
    struct bgp_ann *a = calloc(w + 1, sizeof(*a));
    if (!a) {
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0, j; i < w; i = j) {
        for (j = i + 1; j < w && !bgp_announce_cmp(&v[i].a, &v[j].a); j++)
            ;
        for (size_t k = i; k < j; k++) {
            a[k] = v[k].a;
            a[k].weight = j - i > 1 ? (uint32_t)v[k].n : 0;
        }
    }
    size_t na = w;
    qsort(a, na, sizeof(*a), bgp_announce_path_cmp);
    free(v);
    *out = a;
    *nout = na;
    return 0;
}

/* Link bandwidth a pin stands for in the extended community (bytes/s):
 * only the ratios matter, the switch weighs its paths by them. */
#define BGP_PIN_BANDWIDTH 125000.0

double bgp_announce_bandwidth(const struct bgp_ann *a)
{
    return a->weight * BGP_PIN_BANDWIDTH;
}

/* A path's id (add-path): its uplink's, so a next hop keeps its id. */
static void path_id(const struct bgp_ann *a, char *buf, size_t len)
{
    uint32_t id = a->link + 1;
    snprintf(buf, len, "%u.%u.%u.%u", id >> 24, id >> 16 & 0xff, id >> 8 & 0xff, id & 0xff);
}

static int put_ann(FILE *f, const struct bgp_announce_ctx *cx, const struct bgp_ann *a, bool withdraw)
{
    char d[48], nh[48], id[20], lb[64] = "";
    path_id(a, id, sizeof(id));
    if (withdraw)
        return fprintf(f, "neighbor %s withdraw route %s/32 path-information %s\n", cx->peer_addr(cx->arg, a->peer),
                       ip4(a->dst, d, sizeof(d)), id) < 0 ? -EIO : 0;
    /* The community's AS is 2 bytes: AS_TRANS stands for a 4-byte one. */
    if (a->weight)
        snprintf(lb, sizeof(lb), " extended-community [bandwidth:%u:%.0f]", cx->local_as <= 65535 ? cx->local_as : 23456,
                 bgp_announce_bandwidth(a));
    return fprintf(f, "neighbor %s announce route %s/32 path-information %s next-hop %s community [no-advertise]%s\n",
                   cx->peer_addr(cx->arg, a->peer), ip4(a->dst, d, sizeof(d)), id, ip4(a->via, nh, sizeof(nh)), lb) < 0 ? -EIO : 0;
}

/* Make-before-break: every announcement, then the withdrawals. */
void bgp_announce_diff(const struct bgp_announce_ctx *cx, const struct bgp_ann *cur, size_t ncur,
                       const struct bgp_ann *next, size_t nnext, FILE *f, size_t *ncmd, struct backend_result *res)
{
    *ncmd = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t i = 0, j = 0;
        while (i < ncur || j < nnext) {
            int c = i == ncur ? 1 : j == nnext ? -1 : bgp_announce_path_cmp(&cur[i], &next[j]);
            const struct bgp_ann *x = c < 0 ? &cur[i++] : &next[j++];
            if (c == 0)
                i++;
            bool out = pass == 0 ? c > 0 || (c == 0 && cur[i - 1].weight != x->weight) : c < 0;
            if (!out)
                continue;
            put_ann(f, cx, x, pass == 1);
            (*ncmd)++;
            if (pass == 1)
                res->routes_deleted++;
            else if (c > 0)
                res->routes_added++;
            else
                res->routes_replaced++;
        }
    }
}
