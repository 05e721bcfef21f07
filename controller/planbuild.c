/*
 * planbuild: see planbuild.h for the model. Every rule and route is derived
 * only from the topology and the inputs, and the result is sorted, so equal
 * inputs give equal plans and the backend's diff is empty when nothing
 * moved. Duplicate routes (many flows pinned into one table towards one
 * leaf) collapse in plan_sort.
 */
#include "controller/planbuild.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo.h"

void plan_opts_default(struct plan_opts *o)
{
    o->prio_min = OWNER_PRIO_MIN_DEFAULT;
    o->prio_max = OWNER_PRIO_MAX_DEFAULT;
    o->table_base = OWNER_TABLE_BASE_DEFAULT;
}

#define fail(err, errlen, ...) tf_fail((err), (errlen), -EINVAL, __VA_ARGS__)

/* Index of link among node's uplinks, or -1. */
static int uplink_index(const struct topo *t, uint32_t node, uint32_t link)
{
    const struct topo_node *n = &t->nodes[node];
    for (uint32_t k = 0; k < n->up_count; k++)
        if (t->up_links[n->up_first + k] == link)
            return (int)k;
    return -1;
}

/* The next hop for leaving node `from` upward by link: the far end's
 * address, out of the near end's interface. want_af 0 takes either family
 * (the topology check, which has no flow to match). */
static int uplink_nh(const struct topo *t, uint32_t link, uint8_t want_af, struct plan_nh *nh,
                     char *err, size_t errlen)
{
    const struct topo_link *l = &t->links[link];
    const char *a = t->nodes[l->lo].name, *b = t->nodes[l->hi].name;
    int af, plen;
    if (!l->hi_ip[0] || !l->lo_if[0])
        return fail(err, errlen, "link %s-%s: no %s for the next hop", a, b,
                    l->hi_ip[0] ? "interface at the lower end (a_if/b_if)"
                                : "address at the upper end (a_ip/b_ip)");
    memset(nh, 0, sizeof(*nh));
    if (tf_prefix_parse(l->hi_ip, &af, nh->via, &plen) < 0)
        return fail(err, errlen, "link %s-%s: bad address '%s'", a, b, l->hi_ip);
    if (want_af && af != want_af)
        return fail(err, errlen, "link %s-%s: next hop %s is not IPv%u", a, b, l->hi_ip, want_af);
    if (tf_strlcpy(nh->dev, l->lo_if, sizeof(nh->dev)) >= sizeof(nh->dev))
        return fail(err, errlen, "link %s-%s: interface name '%s' too long", a, b, l->lo_if);
    nh->af = (uint8_t)af;
    nh->weight = 1;
    return 0;
}

/* The narrowest stable destination for a flow's table route: its leaf's
 * prefix when the topology knows it, else the address itself. */
static void dest_prefix(const struct topo *t, uint8_t af, const uint8_t *dst,
                        uint8_t out[16], uint8_t *plen)
{
    uint32_t n = topo_node_by_addr(t, af, dst);
    uint32_t leaf = n == TOPO_NONE ? TOPO_NONE : topo_leaf_of(t, n);
    if (leaf != TOPO_NONE) {
        const struct topo_node *l = &t->nodes[leaf];
        if (l->af == af && l->plen && tf_prefix_contains(af, l->addr, l->plen, dst)) {
            memcpy(out, l->addr, 16);
            *plen = l->plen;
            return;
        }
    }
    memcpy(out, dst, 16);
    *plen = af == 4 ? 32 : 128;
}

static int build_flow(const struct topo *t, const struct plan_opts *o,
                      const struct planbuild_flow *f, size_t fi, struct plan *out,
                      char *err, size_t errlen)
{
    char s[64], d[64];
    tf_addr_str(f->af == 6 ? 6 : 4, f->src, s, sizeof(s));
    tf_addr_str(f->af == 6 ? 6 : 4, f->dst, d, sizeof(d));
#define FLOWFAIL(fmt, ...) fail(err, errlen, "flow %zu (%s:%u->%s:%u proto %u): " fmt, fi, s, \
                                f->sport, d, f->dport, f->proto, __VA_ARGS__)
    if (f->af != 4 && f->af != 6)
        return FLOWFAIL("address family %u is not 4 or 6", f->af);
    if (f->ndirs < 0 || f->ndirs > TOPO_MAX_HOPS || (f->ndirs && !f->dirs))
        return FLOWFAIL("%d hops (at most %d)", f->ndirs, TOPO_MAX_HOPS);
    for (int k = 0; k < f->ndirs; k++) {
        uint32_t dir = f->dirs[k];
        if (dir / 2 >= t->nlinks)
            return FLOWFAIL("hop %d: direction %u outside the topology", k, dir);
        if (k && topo_dir_to(t, f->dirs[k - 1]) != topo_dir_from(t, dir))
            return FLOWFAIL("hop %d: path is not contiguous", k);
    }
    uint8_t bits = f->af == 4 ? 32 : 128;
    for (int k = 0; k < f->ndirs; k++) {
        uint32_t dir = f->dirs[k], link = dir / 2, from = topo_dir_from(t, dir);
        const struct topo_node *n = &t->nodes[from];
        if (topo_dir_is_down(dir) || n->tier == TOPO_HOST || n->up_count < 2)
            continue;
        int ui = uplink_index(t, from, link);
        if (ui < 0 || ui >= PLANBUILD_MAX_UPLINKS)
            return FLOWFAIL("switch %s: uplink index %d beyond %d", n->name, ui,
                            PLANBUILD_MAX_UPLINKS);
        struct plan_route rt = {.table = o->table_base + (uint32_t)ui, .af = f->af, .nnh = 1};
        int rc = uplink_nh(t, link, f->af, &rt.nh[0], err, errlen);
        if (rc)
            return rc;
        tf_strlcpy(rt.sw, n->name, sizeof(rt.sw));
        dest_prefix(t, f->af, f->dst, rt.dst, &rt.dst_len);
        struct plan_rule r = {.prio = o->prio_min + (uint32_t)ui, .table = rt.table,
                              .af = f->af, .ipproto = f->proto, .src_len = bits,
                              .dst_len = bits, .sport = f->sport, .dport = f->dport,
                              .dscp = -1};
        tf_strlcpy(r.sw, n->name, sizeof(r.sw));
        memcpy(r.src, f->src, 16);
        memcpy(r.dst, f->dst, 16);
        if (plan_add_rule(out, &r) || plan_add_route(out, &rt))
            return -ENOMEM;
    }
    return 0;
#undef FLOWFAIL
}

static int class_weight(const struct planbuild_class *c, uint32_t far)
{
    if (c->nallow == 0)
        return 1;
    for (int i = 0; i < c->nallow; i++)
        if (c->allow[i] >= 0 && (uint32_t)c->allow[i] == far)
            return c->weight && c->weight[i] ? c->weight[i] : 1;
    return 0;
}

static int build_class(const struct topo *t, const struct plan_opts *o,
                       const struct planbuild_class *c, size_t ci, struct plan *out,
                       char *err, size_t errlen)
{
    if (c->nallow < 0 || (c->nallow && !c->allow))
        return fail(err, errlen, "class %zu: bad allowed next-hop list", ci);
    for (int i = 0; i < c->nallow; i++)
        if (c->allow[i] < 0 || (uint32_t)c->allow[i] >= t->nnodes ||
            (c->weight && c->weight[i] > 256))
            return fail(err, errlen, "class %zu: allowed node %d (weight %u) out of range", ci,
                        c->allow[i], c->weight ? c->weight[i] : 1);
    if (c->dscp < -1 || c->dscp > 63 || (!c->fwmark && c->dscp < 0))
        return fail(err, errlen, "class %zu: needs a firewall mark or a DSCP 0..63", ci);
    uint32_t table = o->table_base + OWNER_CLASS_TABLE_OFF + (uint32_t)ci;
    for (uint32_t li = 0; li < t->nnodes; li++) {
        const struct topo_node *leaf = &t->nodes[li];
        if (leaf->tier != TOPO_LEAF || leaf->up_count < 2 || !leaf->af)
            continue;
        struct plan_route rt = {.table = table, .af = leaf->af};
        tf_strlcpy(rt.sw, leaf->name, sizeof(rt.sw));
        for (uint32_t k = 0; k < leaf->up_count; k++) {
            uint32_t link = t->up_links[leaf->up_first + k];
            int w = class_weight(c, t->links[link].hi);
            if (!w)
                continue;
            if (rt.nnh == PLAN_MAX_NH)
                return fail(err, errlen, "class %zu: switch %s: more than %d next hops", ci,
                            leaf->name, PLAN_MAX_NH);
            int rc = uplink_nh(t, link, leaf->af, &rt.nh[rt.nnh], err, errlen);
            if (rc)
                return rc;
            rt.nh[rt.nnh++].weight = (uint16_t)w;
        }
        if (!rt.nnh)
            continue;   /* none of the class's spines is above this leaf */
        for (uint32_t ri = 0; ri < t->nnodes; ri++) {
            const struct topo_node *rl = &t->nodes[ri];
            if (ri == li || rl->tier != TOPO_LEAF || rl->af != leaf->af || !rl->plen)
                continue;
            memcpy(rt.dst, rl->addr, 16);
            rt.dst_len = rl->plen;
            if (plan_add_route(out, &rt))
                return -ENOMEM;
        }
        struct plan_rule r = {.prio = o->prio_min + OWNER_CLASS_PRIO_OFF + (uint32_t)ci,
                              .table = table, .af = leaf->af, .fwmark = c->fwmark,
                              .fwmask = c->fwmask, .dscp = c->fwmark ? -1 : c->dscp};
        tf_strlcpy(r.sw, leaf->name, sizeof(r.sw));
        if (plan_add_rule(out, &r))
            return -ENOMEM;
    }
    return 0;
}

int planbuild_check_topo(const struct topo *t, char *err, size_t errlen)
{
    struct plan_nh nh;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        const struct topo_node *sw = &t->nodes[n];
        if (sw->tier == TOPO_HOST || sw->up_count < 2)
            continue;   /* no choice to pin there: build_flow skips it too */
        for (uint32_t k = 0; k < sw->up_count; k++) {
            int rc = uplink_nh(t, t->up_links[sw->up_first + k], 0, &nh, err, errlen);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int plan_build(const struct topo *t, const struct plan_opts *o,
               const struct planbuild_flow *flows, size_t nflows,
               const struct planbuild_class *classes, size_t nclasses,
               struct plan *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (o->prio_max < o->prio_min || o->prio_max - o->prio_min + 1 < OWNER_PRIO_SPAN ||
        o->table_base < OWNER_TABLE_BASE_MIN || o->table_base > UINT32_MAX - OWNER_TABLE_SPAN)
        return fail(err, errlen, "priorities %u-%u (need %d) or table base %u (256 and up: clear of main/local) out of range",
                    o->prio_min, o->prio_max, OWNER_PRIO_SPAN, o->table_base);
    if (nclasses > PLANBUILD_MAX_CLASSES)
        return fail(err, errlen, "%zu classes (at most %d)", nclasses, PLANBUILD_MAX_CLASSES);
    int rc = 0;
    for (size_t i = 0; i < nflows && !rc; i++)
        rc = build_flow(t, o, &flows[i], i, out, err, errlen);
    for (size_t i = 0; i < nclasses && !rc; i++)
        rc = build_class(t, o, &classes[i], i, out, err, errlen);
    plan_sort(out);
    return rc;
}

/* Two rules belong to one flow when everything but switch, priority and
 * table is equal. */
static bool same_flow(const struct plan_rule *a, const struct plan_rule *b)
{
    return a->af == b->af && a->ipproto == b->ipproto && a->sport == b->sport && a->dport == b->dport &&
           a->src_len == b->src_len && a->dst_len == b->dst_len && !memcmp(a->src, b->src, 16) &&
           !memcmp(a->dst, b->dst, 16);
}

/* The uplink rule r chose at its switch, as a direction; false if r is not
 * a flow rule of ours on a switch of t. */
static bool rule_dir(const struct topo *t, const struct plan_opts *o, const struct plan_rule *r, uint32_t *node,
                     uint32_t *dir)
{
    uint8_t bits = r->af == 4 ? 32 : 128;
    if (!r->ipproto || !r->sport || !r->dport || r->src_len != bits || r->dst_len != bits || r->fwmark ||
        r->dscp >= 0 || r->table < o->table_base || r->table >= o->table_base + PLANBUILD_MAX_UPLINKS)
        return false;
    uint32_t n = topo_node_by_name(t, r->sw);
    uint32_t k = r->table - o->table_base;
    if (n == TOPO_NONE || k >= t->nodes[n].up_count)
        return false;
    *node = n;
    *dir = topo_dir(t->up_links[t->nodes[n].up_first + k], 0);
    return true;
}

int planbuild_pins(const struct topo *t, const struct plan_opts *o, const struct plan *p, planbuild_pin_fn fn,
                   void *arg, size_t *skipped)
{
    size_t nr = p->nrules;
    bool *done = calloc(nr + 1, sizeof(bool));
    if (!done)
        return -ENOMEM;
    *skipped = 0;
    for (size_t i = 0; i < nr; i++) {
        const struct plan_rule *r = &p->rules[i];
        uint32_t rn, rd;
        if (done[i] || !rule_dir(t, o, r, &rn, &rd))
            continue;
        /* Every switch's choice for this flow. */
        uint32_t at[TOPO_MAX_HOPS], choice[TOPO_MAX_HOPS];
        int nc = 0;
        bool bad = false;
        for (size_t j = i; j < nr; j++) {
            if (done[j] || !same_flow(r, &p->rules[j]))
                continue;
            done[j] = true;
            uint32_t n, d;
            if (!rule_dir(t, o, &p->rules[j], &n, &d) || nc == TOPO_MAX_HOPS) {
                bad = true;
                continue;
            }
            for (int k = 0; k < nc; k++)
                bad |= at[k] == n;   /* two choices at one switch */
            at[nc] = n;
            choice[nc++] = d;
        }
        uint32_t src = topo_node_by_addr(t, r->af, r->src), dst = topo_node_by_addr(t, r->af, r->dst);
        if (bad || src == TOPO_NONE || dst == TOPO_NONE || t->nodes[src].tier != TOPO_HOST ||
            t->nodes[dst].tier != TOPO_HOST || src == dst) {
            (*skipped)++;
            continue;
        }
        /* Walk up from src: a switch with a rule leaves by it, one without
         * by its only uplink; then the range of paths with that prefix must
         * be a single path. */
        int meet = topo_meet_tier(t, src, dst);
        uint32_t walk[TOPO_MAX_HOPS];
        int nw = 0;
        uint32_t x = src;
        while (meet >= 0 && t->nodes[x].tier < (uint32_t)meet && nw < TOPO_MAX_HOPS) {
            uint32_t d = TOPO_NONE;
            for (int k = 0; k < nc; k++)
                if (at[k] == x)
                    d = choice[k];
            if (d == TOPO_NONE && t->nodes[x].up_count == 1)
                d = topo_dir(t->up_links[t->nodes[x].up_first], 0);
            if (d == TOPO_NONE)
                break;
            walk[nw++] = d;
            x = topo_dir_to(t, d);
        }
        uint64_t first = 0, count = 0;
        if (meet < 0 || t->nodes[x].tier != (uint32_t)meet ||
            topo_path_prefix_range(t, src, dst, walk, nw, &first, &count) < 0 || count != 1) {
            (*skipped)++;
            continue;
        }
        struct planbuild_flow f = {.af = r->af, .proto = r->ipproto, .sport = r->sport, .dport = r->dport};
        memcpy(f.src, r->src, 16);
        memcpy(f.dst, r->dst, 16);
        fn(arg, &f, src, dst, first);
    }
    free(done);
    return 0;
}
