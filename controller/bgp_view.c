/*
 * bgp_view: see bgp_view.h.
 */
#include "controller/bgp_view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/backend_cfg.h"
#include "policy/topo.h"

int bgp_view_init(struct bgp_view *v, const struct topo *t, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    v->t = t;
    v->ndirs = 2 * t->nlinks;
    if (!(v->peer_of = malloc((t->nnodes + 1) * sizeof(*v->peer_of))) || !(v->down = calloc(v->ndirs + 1, 1)) ||
        !(v->peers = calloc(t->nnodes + 1, sizeof(*v->peers))))
        return -ENOMEM;
    for (uint32_t i = 0; i < t->nnodes; i++)
        v->peer_of[i] = UINT32_MAX;
    for (uint32_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *nd = &t->nodes[i];
        int af;
        uint8_t a[16];
        if (nd->tier == TOPO_HOST || !nd->mgmt[0] || !nd->asn)
            continue;
        if (tf_addr_parse(nd->mgmt, &af, a) < 0 || af != 4)
            return tf_fail(err, errlen, -EINVAL, "node %s: \"mgmt\" '%s' is not an IPv4 address (the bgp backend "
                           "peers with it)", nd->name, nd->mgmt);
        struct bgp_view_peer *p = &v->peers[v->npeers];
        p->node = i;
        tf_strlcpy(p->addr, nd->mgmt, sizeof(p->addr));
        if (!(p->reach = calloc(t->nnodes + 1, 1)))
            return -ENOMEM;
        v->peer_of[i] = (uint32_t)v->npeers++;
    }
    if (!v->npeers)
        return tf_fail(err, errlen, -EINVAL, "bgp backend: no switch of the topology has both \"mgmt\" and \"asn\" "
                       "(nothing to peer with)");
    return 0;
}

void bgp_view_free(struct bgp_view *v)
{
    for (size_t i = 0; v->peers && i < v->npeers; i++)
        free(v->peers[i].reach);
    free(v->peers);
    free(v->peer_of);
    free(v->down);
    memset(v, 0, sizeof(*v));
}

void bgp_view_reset(struct bgp_view *v)
{
    for (size_t i = 0; i < v->npeers; i++)
        v->peers[i].known = v->peers[i].up = v->peers[i].was_up = v->peers[i].rib = false;
}

struct bgp_view_peer *bgp_view_peer(struct bgp_view *v, const char *addr)
{
    for (size_t i = 0; i < v->npeers; i++)
        if (!strcmp(v->peers[i].addr, addr))
            return &v->peers[i];
    return NULL;
}

/* A prefix a peer announced or withdrew: the leaf it is, if any. */
static void reach(struct bgp_view *v, struct bgp_view_peer *p, const char *pfx, uint8_t on)
{
    int af, plen;
    uint8_t a[16];
    if (tf_prefix_parse(pfx, &af, a, &plen) < 0)
        return;
    uint32_t n = topo_node_by_addr(v->t, af, a);
    if (n != TOPO_NONE && v->t->nodes[n].tier == TOPO_LEAF && v->t->nodes[n].plen == plen)
        p->reach[n] = on;
}

void bgp_view_rib_in(struct bgp_view *v, const char *addr, const char *prefix)
{
    struct bgp_view_peer *p = bgp_view_peer(v, addr);
    if (p)
        reach(v, p, prefix, 1);
}

static const char *jstr(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

void bgp_view_message(struct bgp_view *v, json_t *m)
{
    const char *type = jstr(m, "type");
    json_t *nb = json_object_get(m, "neighbor");
    struct bgp_view_peer *p = bgp_view_peer(v, jstr(json_object_get(nb, "address"), "peer"));
    if (!p)
        return;
    if (!strcmp(type, "state")) {
        const char *st = json_string_value(json_object_get(nb, "state"));
        if (st && (!strcmp(st, "up") || !strcmp(st, "down"))) {
            /* A session that comes up counts once its initial routes are
             * in (bgp_view_settle): until then it has said nothing, and a
             * spine whose first UPDATE lacks a leaf's prefix has not lost it. */
            p->up = !strcmp(st, "up");
            p->was_up |= p->up;
            p->known = true;
            p->rib = false;
            p->rib_at = 0;
            memset(p->reach, 0, v->t->nnodes);
            log_info("bgp backend: session with %s (%s) %s", v->t->nodes[p->node].name, p->addr, st);
        }
        return;
    }
    json_t *msg = json_object_get(nb, "message");
    if (!strcmp(type, "update") && p->up && !p->rib) {
        p->rib_at = tf_now_mono();
        p->rib = json_object_get(msg, "eor") != NULL;
    }
    json_t *u = json_object_get(msg, "update");
    json_t *ann = json_object_get(json_object_get(u, "announce"), "ipv4 unicast");
    const char *nh;
    json_t *list, *e;
    size_t i;
    json_object_foreach(ann, nh, list) json_array_foreach(list, i, e)
        reach(v, p, jstr(e, "nlri"), 1);
    json_array_foreach(json_object_get(json_object_get(u, "withdraw"), "ipv4 unicast"), i, e)
        reach(v, p, jstr(e, "nlri"), 0);
}

void bgp_view_summary(struct bgp_view *v, const char *line)
{
    char addr[64], as[32], updown[32], st[32];
    if (sscanf(line, "%63s %31s %31s %31s", addr, as, updown, st) != 4)
        return;
    struct bgp_view_peer *p = bgp_view_peer(v, addr);
    if (p) {
        p->known = p->rib = true;
        p->up = !strcmp(st, "established");
        p->was_up |= p->up;
    }
}

int bgp_view_settle(struct bgp_view *v, double now)
{
    int wait = -1;
    for (size_t i = 0; i < v->npeers; i++) {
        struct bgp_view_peer *p = &v->peers[i];
        if (!p->up || p->rib || p->rib_at <= 0)
            continue;
        double left = p->rib_at + BGP_VIEW_SETTLE_S - now;
        if (left <= 0) {
            p->rib = true;
            continue;
        }
        int ms = (int)(left * 1000) + 1;
        wait = wait < 0 || ms < wait ? ms : wait;
    }
    return wait;
}

bool bgp_view_reaches(const struct bgp_view *v, uint32_t link, const uint8_t dst[4])
{
    uint32_t spine = v->t->links[link].hi, pi = v->peer_of[spine];
    if (pi == UINT32_MAX || !v->peers[pi].known || (v->peers[pi].up && !v->peers[pi].rib))
        return true;
    uint32_t leaf = topo_node_by_addr(v->t, 4, dst);
    leaf = leaf == TOPO_NONE ? TOPO_NONE : topo_leaf_of(v->t, leaf);
    return v->peers[pi].up && (leaf == TOPO_NONE || v->peers[pi].reach[leaf]);
}

/* Whether node is a switch above the leaves whose session, once up, went
 * down: the controller has lost its view through it (and its routes through
 * it are withdrawn), so its links are taken as down both ways until it is
 * back. A session that never came up says nothing (as in reaches). */
static bool session_lost(const struct bgp_view *v, uint32_t node)
{
    uint32_t pi = v->peer_of[node];
    return v->t->nodes[node].tier > TOPO_LEAF && pi != UINT32_MAX && v->peers[pi].was_up && v->peers[pi].known &&
           !v->peers[pi].up;
}

bool bgp_view_refresh(struct bgp_view *v)
{
    bool changed = false;
    for (uint32_t l = 0; l < v->t->nlinks; l++) {
        const struct topo_link *k = &v->t->links[l];
        uint32_t pi = v->peer_of[k->hi];
        /* Lost from view is not down: the switches' routing still uses the
         * links (only the controller's session went), and taking them as
         * down would pile every fat flow onto the other spines. */
        uint8_t lost = session_lost(v, k->lo) || session_lost(v, k->hi) ? BACKEND_DIR_UNSEEN : 0, d = lost;
        if (!lost && pi != UINT32_MAX && v->t->nodes[k->lo].tier == TOPO_LEAF && v->peers[pi].rib &&
            v->peers[pi].up)
            d = v->peers[pi].reach[k->lo] ? 0 : BACKEND_DIR_DOWN;
        changed |= v->down[2 * l] != lost || v->down[2 * l + 1] != d;
        v->down[2 * l] = lost;
        v->down[2 * l + 1] = d;
    }
    return changed;
}
