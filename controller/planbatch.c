/*
 * planbatch: see planbatch.h. One writer per object (rule_line, route_line,
 * route_throw) shared by every form, so the selectors a rule is added with
 * are the ones it is flushed with.
 */
#include "controller/planbatch.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "controller/owner.h"

static const char *addr(uint8_t af, const uint8_t *a, char *buf)
{
    return tf_addr_str(af, a, buf, 64);
}

/* Interface and switch names reach a shell-like parser: refuse anything
 * that is not a plain token rather than quote it. */
static bool token_ok(const char *s, size_t max)
{
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' || c == '\\' || c == '#')
            return false;
    }
    return true;
}

/* verb "add", "del" or "flush": the same selectors (plan_rule_str), so that
 * a flush removes exactly the rule an add makes (iproute2's flush filter
 * takes them all). `dscp N` needs iproute2 6.13+: the plan backend leaves
 * such rules out for older switches (plan_backend_fit). */
static int rule_line(FILE *f, const struct plan_rule *r, const char *verb, uint8_t proto)
{
    char b[320];
    fprintf(f, "rule %s %s protocol %u\n", verb, plan_rule_str(r, b, sizeof(b)), proto);
    return 0;
}

static int route_line(FILE *f, const struct plan_route *r, bool del, uint8_t proto)
{
    char b[64];
    fprintf(f, "route %s table %u proto %u %s/%u", del ? "del" : "replace", r->table,
            proto, addr(r->af, r->dst, b), r->dst_len);
    if (del) {
        fputc('\n', f);
        return 0;
    }
    for (int k = 0; k < r->nnh; k++) {
        const struct plan_nh *h = &r->nh[k];
        if (!token_ok(h->dev, sizeof(h->dev)))
            return -EINVAL;
        if (r->nnh > 1)
            fputs(" nexthop", f);
        if (h->af)
            fprintf(f, " via %s", addr(h->af, h->via, b));
        if (h->dev[0])
            fprintf(f, " dev %s", h->dev);
        if (r->nnh > 1)
            fprintf(f, " weight %u", h->weight);
    }
    fputc('\n', f);
    return 0;
}

/* A `throw` route sends a lookup on to the next rule, as an absent route
 * does, and needs no interface: replacing a route with one and deleting
 * that removes the route whether it was there or not. */
static void route_throw(FILE *f, const char *verb, uint32_t table, uint8_t af, const uint8_t *dst,
                        uint8_t len, uint8_t proto)
{
    char b[64];
    fprintf(f, "route %s table %u proto %u throw %s/%u\n", verb, table, proto, addr(af, dst, b), len);
}

int planbatch_write(const struct plan *p, const char *sw, FILE *f, bool del, uint8_t proto)
{
    int rc = 0;
    /* add: tables filled before rules point at them; del: the reverse. */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        bool rules = (pass == 0) == del;
        size_t n = rules ? p->nrules : p->nroutes;
        for (size_t i = 0; i < n && !rc; i++) {
            const char *rsw = rules ? p->rules[i].sw : p->routes[i].sw;
            if (sw && strcmp(rsw, sw))
                continue;
            rc = rules ? rule_line(f, &p->rules[i], del ? "del" : "add", proto)
                       : route_line(f, &p->routes[i], del, proto);
        }
    }
    if (!rc && ferror(f))
        rc = -EIO;
    return rc;
}

/* A rule added so that adding it again is a no-op: flush exactly it first
 * (nothing, unless the file is applied again). */
static void rule_add_idem(FILE *f, const struct plan_rule *r, uint8_t proto)
{
    rule_line(f, r, "flush", proto);
    rule_line(f, r, "add", proto);
}

int planbatch_transition(const struct plan *want, const struct plan *prev, const char *sw,
                         const struct planbatch_opts *o, FILE *f)
{
    struct plan w, h, add, del;
    plan_init(&w);
    plan_init(&h);
    int rc = plan_append(&w, want, sw);
    if (!rc)
        rc = plan_append(&h, prev, sw);
    if (!rc)
        rc = plan_diff(&w, &h, &add, &del);
    plan_free(&w);
    plan_free(&h);
    if (rc)
        return rc;
    for (size_t i = 0; i < add.nroutes && !rc; i++)
        rc = route_line(f, &add.routes[i], false, o->proto);
    for (size_t i = 0; i < add.nrules && !rc; i++)
        rule_add_idem(f, &add.rules[i], o->proto);
    for (size_t i = 0; i < del.nrules && !rc; i++)
        rule_line(f, &del.rules[i], "flush", o->proto);
    for (size_t i = 0; i < del.nroutes && !rc; i++) {
        const struct plan_route *r = &del.routes[i];
        route_throw(f, "replace", r->table, r->af, r->dst, r->dst_len, o->proto);
        route_throw(f, "del", r->table, r->af, r->dst, r->dst_len, o->proto);
    }
    plan_free(&add);
    plan_free(&del);
    if (!rc && ferror(f))
        rc = -EIO;
    return rc;
}

int planbatch_full(const struct plan *want, const char *sw, const struct planbatch_opts *o, FILE *f)
{
    if (!sw)
        return -EINVAL;   /* one switch: the walk below is by table and priority */
    struct plan w;
    plan_init(&w);
    int rc = plan_append(&w, want, sw);
    if (rc)
        return rc;
    plan_sort(&w);   /* routes by table, rules by priority */
    static const uint8_t zero[16];
    size_t ri = 0;
    for (uint32_t t = o->table_base; t < o->table_base + OWNER_TABLE_SPAN && !rc; t++) {
        /* A throw route for 0.0.0.0/32 creates the table if the kernel lacks
         * it (a flush of a missing table fails); the flush removes it again. */
        route_throw(f, "replace", t, 4, zero, 32, o->proto);
        fprintf(f, "route flush table %u proto %u\n", t, o->proto);
        while (ri < w.nroutes && w.routes[ri].table < t)
            ri++;
        for (; ri < w.nroutes && w.routes[ri].table == t && !rc; ri++)
            rc = route_line(f, &w.routes[ri], false, o->proto);
    }
    size_t ru = 0;
    for (uint32_t p = o->prio_min; p < o->prio_min + OWNER_PRIO_SPAN && !rc; p++) {
        fprintf(f, "rule flush pref %u protocol %u\n", p, o->proto);
        while (ru < w.nrules && w.rules[ru].prio < p)
            ru++;
        for (; ru < w.nrules && w.rules[ru].prio == p; ru++)
            rule_add_idem(f, &w.rules[ru], o->proto);
    }
    plan_free(&w);
    if (!rc && ferror(f))
        rc = -EIO;
    return rc;
}
