/*
 * ingest: see ingest.h. Every field is checked for type and bounds before it
 * is stored; the first violation aborts the whole batch (nothing applied),
 * and its message names the field by its JSON path.
 */
#include "controller/ingest.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/events.h"
#include "controller/jsonarena.h"
#include "policy/classes.h"

static int fail(struct ingest_error *e, enum ingest_err kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct ingest_error *e, enum ingest_err kind, const char *fmt, ...)
{
    e->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return kind == INGEST_UNKNOWN ? -ENOENT : kind == INGEST_TOO_MANY ? -E2BIG : -EINVAL;
}

/* ---- parsing: jansson (arena-allocated), schema by hand ---------------- */

/* jansson refuses nesting deeper than this while it parses (its recursion is
 * the only unbounded thing in it); a report needs 5 levels. */
_Static_assert(JSON_PARSER_MAX_DEPTH <= 4096, "jansson's depth bound is what bounds the parser's stack");

/* Where members are read: `at` is the JSON path of the enclosing object
 * ("" for the top report), so that messages read "flows[3].bps: negative -1".
 * Each want_*() looks its member up itself: absent is an error only when
 * `need` is set (else the output keeps its default); a violation is recorded
 * in e and returns true, so that a field list reads as one || chain that
 * stops at the first error, in field order. */
struct ctx {
    const char *at;              /* the enclosing object's path, "" at the top */
    const char *list;            /* and, for a list entry, "flows" or "links" ... */
    size_t idx;                  /* ... and its index: "flows[3]" */
    struct ingest_error *e;
};

/* The path is put together only when there is an error to report: a
 * snprintf per flow was a tenth of the parse. */
static const char *path_of(const struct ctx *c, char *buf, size_t len)
{
    if (!c->list)
        return c->at;
    snprintf(buf, len, "%s%s%s[%zu]", c->at, c->at[0] ? "." : "", c->list, c->idx);
    return buf;
}

static int rc_of(const struct ingest_error *e)
{
    return e->kind == INGEST_UNKNOWN ? -ENOENT : e->kind == INGEST_TOO_MANY ? -E2BIG : -EINVAL;
}

/* Records "PATH.KEY: WHAT" (or "PATH: WHAT" when key is NULL). */
static void vffail(const struct ctx *c, const char *key, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static void vffail(const struct ctx *c, const char *key, const char *fmt, va_list ap)
{
    char what[200], pb[96];
    const char *at = path_of(c, pb, sizeof(pb));
    vsnprintf(what, sizeof(what), fmt, ap);
    fail(c->e, INGEST_BAD_FIELD, "%s%s%s: %s", at, at[0] && key ? "." : "", key ? key : "", what);
}

/* For || chains of checks: records the error, returns true. */
static bool ffail(const struct ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool ffail(const struct ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vffail(c, key, fmt, ap);
    va_end(ap);
    return true;
}

/* The same, returning the error code. */
static int cfail(const struct ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cfail(const struct ctx *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vffail(c, key, fmt, ap);
    va_end(ap);
    return rc_of(c->e);
}

/* The member, or NULL; *bad is set when it is absent and required. */
static const json_t *member(const struct ctx *c, const json_t *o, const char *key, bool need, bool *bad)
{
    const json_t *v = json_object_get(o, key);
    *bad = !v && need && ffail(c, key, "required");
    return v;
}

static bool want_num(const struct ctx *c, const json_t *o, const char *key, bool need, double min, double max,
                     double *out)
{
    bool bad;
    const json_t *v = member(c, o, key, need, &bad);
    if (!v)
        return bad;
    if (!json_is_number(v))
        return ffail(c, key, "must be a number");
    double d = json_number_value(v);
    if (!isfinite(d)) /* jansson refuses overflowing reals; kept in case it changes */
        return ffail(c, key, "not finite");
    if (d < min)
        return ffail(c, key, "%s %g", d < 0 ? "negative" : "below minimum", d);
    if (d > max)
        return ffail(c, key, "%g exceeds the maximum %g", d, max);
    *out = d;
    return false;
}

/* An integer in min..max. 1.0 and 1e3 are reals in JSON's grammar and are
 * refused: counters and ports are never written that way. Integers that do
 * not fit json_int_t are a syntax error in jansson ("too big integer"). */
static bool want_int(const struct ctx *c, const json_t *o, const char *key, bool need, json_int_t min,
                     json_int_t max, uint64_t *out)
{
    bool bad;
    const json_t *v = member(c, o, key, need, &bad);
    if (!v)
        return bad;
    if (json_is_real(v))
        return ffail(c, key, "must be an integer");
    if (!json_is_integer(v))
        return ffail(c, key, "must be a number");
    json_int_t i = json_integer_value(v);
    if (i < min)
        return ffail(c, key, "%s %lld", i < 0 ? "negative" : "below minimum", (long long)i);
    if (i > max)
        return ffail(c, key, "%lld exceeds the maximum %lld", (long long)i, (long long)max);
    *out = (uint64_t)i;
    return false;
}

/* A name or address: 1..len-1 printable ASCII bytes without spaces. */
static bool want_str(const struct ctx *c, const json_t *o, const char *key, bool need, char *buf, size_t len)
{
    bool bad;
    const json_t *v = member(c, o, key, need, &bad);
    if (!v)
        return bad;
    if (!json_is_string(v))
        return ffail(c, key, "must be a string");
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n >= len)
        return ffail(c, key, "length %zu not in 1..%zu", n, len - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return ffail(c, key, "invalid character");
    memcpy(buf, s, n + 1);
    return false;
}

static bool want_bool(const struct ctx *c, const json_t *o, const char *key, bool *out)
{
    bool bad;
    const json_t *v = member(c, o, key, false, &bad);
    if (!v)
        return false;
    if (!json_is_boolean(v))
        return ffail(c, key, "must be true or false");
    *out = json_is_true(v);
    return false;
}

static int parse_link(const json_t *o, const struct ctx *cp, struct ingest_link *out)
{
    const struct ctx c = *cp;
    struct ingest_error *e = c.e;
    char oper[8] = "up";
    double rx = -1;
    if (!json_is_object(o))
        return cfail(&c, NULL, "must be an object");
    if (want_str(&c, o, "if", true, out->ifname, sizeof(out->ifname)) ||
        want_num(&c, o, "tx_bps", false, 0, INGEST_MAX_BPS, &out->tx_bps) ||
        want_num(&c, o, "rx_bps", false, 0, INGEST_MAX_BPS, &rx) ||
        want_int(&c, o, "drops", false, 0, INGEST_MAX_COUNT, &out->drops) ||
        want_int(&c, o, "ce_pkts", false, 0, INGEST_MAX_COUNT, &out->ce_pkts) ||
        want_str(&c, o, "oper", false, oper, sizeof(oper)))
        return rc_of(e);
    if (strcmp(oper, "up") && strcmp(oper, "down"))
        return cfail(&c, "oper", "'%s' is not up or down", oper);
    out->has_rx = rx >= 0;
    out->rx_bps = rx >= 0 ? rx : 0;
    out->down = oper[0] == 'd';
    return 0;
}

static int parse_flow(const json_t *o, const struct ctx *cp, struct ingest_flow *out)
{
    const struct ctx c = *cp;
    struct ingest_error *e = c.e;
    char src[48] = "", dst[48] = "", source[8] = "pcap";
    uint64_t proto = 0, sport = 0, dport = 0, qp = 0, vlan = 0, dscp = 0, sampling = 1;
    if (!json_is_object(o))
        return cfail(&c, NULL, "must be an object");
    /* src, dst, proto, if, bps are required. */
    if (want_str(&c, o, "src", true, src, sizeof(src)) || want_str(&c, o, "dst", true, dst, sizeof(dst)) ||
        want_int(&c, o, "proto", true, 0, 255, &proto) || want_int(&c, o, "sport", false, 0, 65535, &sport) ||
        want_int(&c, o, "dport", false, 0, 65535, &dport) || want_int(&c, o, "qp", false, 0, 0xffffff, &qp) ||
        want_int(&c, o, "vlan", false, 0, 4095, &vlan) || want_int(&c, o, "dscp", false, 0, 63, &dscp) ||
        want_str(&c, o, "if", true, out->ifname, sizeof(out->ifname)) ||
        want_int(&c, o, "bytes", false, 0, INGEST_MAX_COUNT, &out->bytes) ||
        want_int(&c, o, "pkts", false, 0, INGEST_MAX_COUNT, &out->pkts) ||
        want_num(&c, o, "bps", true, 0, INGEST_MAX_BPS, &out->bps) ||
        want_num(&c, o, "ce_frac", false, 0, 1, &out->ce_frac) ||
        want_int(&c, o, "cnp", false, 0, INGEST_MAX_COUNT, &out->cnp) || want_bool(&c, o, "fat", &out->fat) ||
        want_str(&c, o, "source", false, source, sizeof(source)) ||
        want_int(&c, o, "sampling", false, 1, INGEST_MAX_SAMPLING, &sampling))
        return rc_of(e);
    int kind = state_source_parse(source);
    if (kind < 0)
        return cfail(&c, "source", "'%s' is not pcap, erspan or sflow", source);
    int af, af2;
    uint8_t tmp[16];
    memset(&out->k, 0, sizeof(out->k));
    if (tf_addr_parse(src, &af, out->k.src) < 0)
        return cfail(&c, "src", "'%s' is not an IP address", src);
    if (tf_addr_parse(dst, &af2, tmp) < 0)
        return cfail(&c, "dst", "'%s' is not an IP address", dst);
    if (af != af2)
        return cfail(&c, NULL, "src and dst of different families");
    memcpy(out->k.dst, tmp, 16);
    out->k.af = (uint8_t)af;
    out->k.proto = (uint8_t)proto;
    out->k.sport = (uint16_t)sport;
    out->k.dport = (uint16_t)dport;
    out->k.qp = (uint32_t)qp;
    out->k.vlan = (uint16_t)vlan;
    out->dscp = (uint8_t)dscp;
    out->source = (uint8_t)kind;
    out->sampling = (uint32_t)sampling;
    return 0;
}

/* A report's "links" or "flows": an array of objects, counted against its
 * bound before any entry is judged (413, not a field error, for a probe that
 * sends too many). *budget is how many flows the batch may still hold. */
static int parse_list(const json_t *r, const char *at, bool flows, size_t *budget, struct ingest_report *out,
                      struct ingest_error *e)
{
    const char *what = flows ? "flows" : "links";
    const json_t *a = json_object_get(r, what);
    if (!a)
        return 0;
    if (!json_is_array(a))
        return fail(e, INGEST_BAD_FIELD, "%s%s%s: must be an array", at, at[0] ? "." : "", what);
    size_t count = json_array_size(a);
    if (flows && count > *budget)
        return fail(e, INGEST_TOO_MANY, "%s%sflows: %zu entries, more than the limit (max_flows_per_report)",
                    at, at[0] ? "." : "", count);
    if (!flows && count > INGEST_MAX_LINKS)
        return fail(e, INGEST_TOO_MANY, "%s%slinks: %zu entries, at most %d", at, at[0] ? "." : "", count,
                    INGEST_MAX_LINKS);
    if (count == 0)
        return 0;
    /* malloc, not the arena: the batch outlives the parse. */
    if (!(flows ? (void *)(out->flows = calloc(count, sizeof(*out->flows)))
                : (void *)(out->links = calloc(count, sizeof(*out->links)))))
        return fail(e, INGEST_BAD_FIELD, "out of memory for %zu %s", count, what);
    if (flows)
        *budget -= count;
    struct ctx c = {at, what, 0, e};
    for (size_t i = 0; i < count; i++) {
        c.idx = i;
        const json_t *v = json_array_get(a, i);
        int rc = flows ? parse_flow(v, &c, &out->flows[i]) : parse_link(v, &c, &out->links[i]);
        if (rc)
            return rc;
        (*(flows ? &out->nflows : &out->nlinks))++;
    }
    return 0;
}

/* One report object. at: "" for a lone report (whose own members are then
 * named "report.probe"), "reports[2]" in a batch. */
static int parse_report(const json_t *r, const char *at, size_t *budget, struct ingest_report *out,
                        struct ingest_error *e)
{
    const struct ctx c = {at[0] ? at : "report", NULL, 0, e};
    if (want_str(&c, r, "probe", true, out->probe, sizeof(out->probe)) ||
        want_num(&c, r, "ts", false, 0, 1e11, &out->ts) ||
        want_num(&c, r, "interval_s", false, 0, 86400, &out->interval_s))
        return rc_of(e);
    int rc = parse_list(r, at, false, budget, out, e);
    return rc ? rc : parse_list(r, at, true, budget, out, e);
}

void ingest_batch_free(struct ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->r[i].links);
        free(b->r[i].flows);
    }
    b->n = 0;
}

static int parse_root(const json_t *root, size_t *budget, struct ingest_batch *b, struct ingest_error *e)
{
    if (!json_is_object(root))
        return fail(e, INGEST_BAD_FIELD, "body: must be a JSON object");
    const json_t *reports = json_object_get(root, "reports");
    if (!reports) {
        b->n = 1;
        return parse_report(root, "", budget, &b->r[0], e);
    }
    if (!json_is_array(reports) || json_array_size(reports) == 0)
        return fail(e, INGEST_BAD_FIELD, "reports: must be a non-empty array");
    if (json_array_size(reports) > INGEST_MAX_REPORTS)
        return fail(e, INGEST_TOO_MANY, "reports: more than %d entries", INGEST_MAX_REPORTS);
    for (size_t i = 0; i < json_array_size(reports); i++) {
        char at[32];
        snprintf(at, sizeof(at), "reports[%zu]", i);
        const json_t *r = json_array_get(reports, i);
        b->n++; /* counted before it is filled, so that a failure frees it */
        if (!json_is_object(r))
            return fail(e, INGEST_BAD_FIELD, "%s: report must be an object", at);
        int rc = parse_report(r, at, budget, &b->r[i], e);
        if (rc)
            return rc;
    }
    return 0;
}

int ingest_parse(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                 struct ingest_error *e)
{
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
    if (len > INGEST_MAX_BODY)
        return fail(e, INGEST_TOO_MANY, "body: %zu bytes, more than %u", len, INGEST_MAX_BODY);
    /* The tree lives in this thread's arena for the length of the parse: one
     * bump per value instead of a malloc/free pair; everything kept is
     * copied into b (malloc'd) before the scope ends. */
    jsonarena_begin(len);
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    size_t budget = max_flows;
    int rc;
    if (!root) {
        e->line = je.line;
        e->column = je.column;
        e->position = je.position;
        rc = fail(e, INGEST_BAD_JSON, "%s (line %d, column %d)", je.text, je.line, je.column);
    } else {
        rc = parse_root(root, &budget, b, e);
        json_decref(root);
    }
    jsonarena_end();
    if (rc)
        ingest_batch_free(b);
    return rc;
}

/* An interface name, or, at a link end the topology gives no interface name
 * (generated topologies), the name of the node at the far end. */
int ingest_dir_of_if(const struct topo *t, uint32_t node, const char *ifname, uint32_t *dir)
{
    if (topo_dir_by_if(t, node, ifname, dir) == 0)
        return 0;
    uint32_t peer = topo_node_by_name(t, ifname);
    if (peer == TOPO_NONE || topo_dir_between(t, node, peer, dir) < 0)
        return -ENOENT;
    const struct topo_link *l = &t->links[topo_dir_link(*dir)];
    const char *named = topo_dir_is_down(*dir) ? l->hi_if : l->lo_if;
    return named[0] ? -ENOENT : 0;
}

static void note_unmapped(struct state_probe *p, struct ingest_result *res, const char *ifname)
{
    bool seen = false;
    for (unsigned i = 0; i < p->nunmapped; i++)
        seen |= strcmp(p->unmapped[i], ifname) == 0;
    if (!seen && p->nunmapped < STATE_UNMAPPED_MAX)
        tf_strlcpy(p->unmapped[p->nunmapped++], ifname, STATE_IF_LEN);
    for (size_t i = 0; i < res->nunmapped; i++)
        if (strcmp(res->unmapped[i], ifname) == 0)
            return;
    if (res->nunmapped < STATE_UNMAPPED_MAX)
        tf_strlcpy(res->unmapped[res->nunmapped++], ifname, STATE_IF_LEN);
}


/* A report resolved against the topology, before the write lock: link and
 * flow directions, flow locations, and CE per link (which depends on the
 * report alone). */
struct resolved {
    uint32_t node;
    uint32_t *link_dir;          /* nlinks, TOPO_NONE unmapped */
    double *link_ce;
    uint32_t *egress;            /* nflows, TOPO_NONE unmapped */
    struct state_loc *loc;       /* nflows */
};

/* Interface -> direction for one report; probes use a handful of interfaces,
 * so remembering the last few saves the two hash lookups per flow. */
struct if_memo {
    unsigned n;
    char name[8][STATE_IF_LEN];
    uint32_t dir[8];
};

static uint32_t memo_dir(struct if_memo *m, const struct topo *t, uint32_t node, const char *ifname)
{
    for (unsigned i = 0; i < m->n; i++)
        if (strcmp(m->name[i], ifname) == 0)
            return m->dir[i];
    uint32_t dir;
    if (ingest_dir_of_if(t, node, ifname, &dir) < 0)
        dir = TOPO_NONE;
    unsigned k = m->n < 8 ? m->n++ : 7;
    tf_strlcpy(m->name[k], ifname, STATE_IF_LEN);
    m->dir[k] = dir;
    return dir;
}

static void resolve_report(struct state *s, const struct topo *t, uint32_t node, const struct ingest_report *r,
                           struct resolved *x)
{
    struct if_memo m = {0};
    x->node = node;
    for (size_t j = 0; j < r->nlinks; j++) {
        x->link_dir[j] = memo_dir(&m, t, node, r->links[j].ifname);
        double bps = 0, ce = 0;
        for (size_t i = 0; i < r->nflows; i++)
            if (strcmp(r->flows[i].ifname, r->links[j].ifname) == 0) {
                bps += r->flows[i].bps;
                ce += r->flows[i].bps * r->flows[i].ce_frac;
            }
        x->link_ce[j] = bps > 0 ? ce / bps : 0;
    }
    for (size_t i = 0; i < r->nflows; i++) {
        x->egress[i] = memo_dir(&m, t, node, r->flows[i].ifname);
        if (!state_loc_cached(s, &r->flows[i].k, node, x->egress[i], &x->loc[i]))
            state_loc_resolve(t, &r->flows[i].k, node, x->egress[i], &x->loc[i]);
    }
}

static void apply_flow(struct state *s, uint32_t node, const struct ingest_flow *in, uint32_t egress,
                       const struct state_loc *loc, double now, struct ingest_result *res)
{
    bool inserted;
    struct state_flow *f = state_flow_upsert(s, &in->k, &inserted);
    if (!f) {
        res->dropped_full++;
        return;
    }
    if (egress == TOPO_NONE) {
        res->unmapped_flows++;
        note_unmapped(&s->probes[node], res, in->ifname);
    }
    /* Another live probe placed this flow (e.g. its source leaf, while this
     * is the destination leaf) and this one cannot: keep that placement,
     * take the newer rates. */
    bool had_path = !inserted && f->path >= 0 && f->probe != node && !state_flow_stale(s, f, now);
    if (loc->count > 0 || !had_path) {
        f->probe = node;
        f->egress = egress;
        tf_strlcpy(f->ifname, in->ifname, sizeof(f->ifname));
        state_flow_place(s, f, loc);
    }
    f->fat = in->fat;
    f->source = in->source;
    f->sampling = in->sampling;
    f->bps = in->bps;
    f->ce_frac = in->ce_frac;
    f->cnp = in->cnp;
    f->last_seen = now;
    /* Again only when an input changed: its ends (jobs are by node), the
     * DSCP it is matched on, or the jobs and classes themselves. */
    if (inserted || f->cls_gen != s->cls_gen || f->cls_src != f->src_node || f->cls_dst != f->dst_node ||
        f->dscp != in->dscp) {
        f->dscp = in->dscp;
        state_flow_classify(s, f);
    }
    res->flows++;
    res->fat += in->fat;
}

static void apply_link(struct state *s, uint32_t node, const struct ingest_link *l, uint32_t dir, double ce,
                       double now, struct events *ev, struct ingest_result *res)
{
    if (dir == TOPO_NONE) {
        note_unmapped(&s->probes[node], res, l->ifname);
        return;
    }
    struct state_dir *d = &s->dirs[dir], *rev = &s->dirs[dir ^ 1];
    d->bps = l->tx_bps;
    d->drops = l->drops;
    d->ce_frac = ce;
    d->measured = true;
    d->probe = node;
    d->last_update = now;
    /* The reverse direction belongs to the far end's probe when it has one. */
    if (l->has_rx && (!rev->measured || rev->probe == node || state_probe_stale(s, rev->probe, now))) {
        rev->bps = l->rx_bps;
        rev->measured = true;
        rev->probe = node;
        rev->last_update = now;
    }
    bool up = !l->down;
    if (d->up != up && ev) {
        const struct topo *t = s->topo;
        events_add(ev, now, up ? "link_up" : "link_down", "%s -> %s (%s %s) reported %s",
                   t->nodes[topo_dir_from(t, dir)].name, t->nodes[topo_dir_to(t, dir)].name,
                   t->nodes[node].name, l->ifname, up ? "up" : "down");
    }
    d->up = rev->up = up;
    res->links++;
}

/* Probe names to nodes; an unknown one fails the whole batch. */
static int resolve_nodes(const struct topo *t, const struct ingest_batch *b, uint32_t *nodes, struct ingest_error *e)
{
    for (size_t i = 0; i < b->n; i++) {
        nodes[i] = topo_node_by_name(t, b->r[i].probe);
        if (nodes[i] == TOPO_NONE && b->n > 1)
            return fail(e, INGEST_UNKNOWN, "reports[%zu].probe: '%s' is not a node of topology '%s'", i,
                        b->r[i].probe, t->name);
        if (nodes[i] == TOPO_NONE)
            return fail(e, INGEST_UNKNOWN, "probe: '%s' is not a node of topology '%s'", b->r[i].probe, t->name);
    }
    return 0;
}

/* Caller holds the state lock (read or write); t is s->topo. */
static int resolve_batch(struct state *s, const struct ingest_batch *b, struct resolved *x, struct ingest_error *e)
{
    uint32_t nodes[INGEST_MAX_REPORTS];
    int rc = resolve_nodes(s->topo, b, nodes, e);
    for (size_t i = 0; i < b->n && rc == 0; i++)
        resolve_report(s, s->topo, nodes[i], &b->r[i], &x[i]);
    return rc;
}

int ingest_apply(struct state *s, const struct ingest_batch *b, double now, struct events *ev,
                 struct ingest_result *res, struct ingest_error *e)
{
    memset(res, 0, sizeof(*res));
    memset(e, 0, sizeof(*e));
    /* Scratch for the resolution, one block for the whole batch. */
    size_t nl = 0, nf = 0;
    for (size_t i = 0; i < b->n; i++) {
        nl += b->r[i].nlinks;
        nf += b->r[i].nflows;
    }
    struct resolved x[INGEST_MAX_REPORTS];
    uint32_t *ld = malloc((nl + 1) * sizeof(*ld)), *eg = malloc((nf + 1) * sizeof(*eg));
    double *lce = malloc((nl + 1) * sizeof(*lce));
    struct state_loc *loc = malloc((nf + 1) * sizeof(*loc));
    if (!ld || !eg || !lce || !loc) {
        free(ld);
        free(eg);
        free(lce);
        free(loc);
        return fail(e, INGEST_BAD_FIELD, "out of memory for %zu flows", nf);
    }
    for (size_t i = 0, ol = 0, of = 0; i < b->n; i++) {
        x[i] = (struct resolved){.link_dir = ld + ol, .link_ce = lce + ol, .egress = eg + of, .loc = loc + of};
        ol += b->r[i].nlinks;
        of += b->r[i].nflows;
    }
    /* Path resolution is the costly part; the topology is immutable, so it
     * runs under the read lock, beside other readers and other ingests. */
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    int rc = resolve_batch(s, b, x, e);
    pthread_rwlock_unlock(&s->lock);

    pthread_rwlock_wrlock(&s->lock);
    if (rc == 0 && s->topo != t) /* reloaded in between: resolve again */
        rc = resolve_batch(s, b, x, e);
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        const struct ingest_report *r = &b->r[i];
        uint32_t node = x[i].node;
        struct state_probe *p = &s->probes[node];
        p->nunmapped = 0;
        for (size_t j = 0; j < r->nlinks; j++)
            apply_link(s, node, &r->links[j], x[i].link_dir[j], x[i].link_ce[j], now, ev, res);
        for (size_t j = 0; j < r->nflows; j++)
            apply_flow(s, node, &r->flows[j], x[i].egress[j], &x[i].loc[j], now, res);
        if (p->stale && ev)
            events_add(ev, now, "probe_alive", "probe %s reports again", r->probe);
        p->stale = false;
        p->last_seen = now;
        p->reports++;
        tf_strlcpy(res->probes[i], r->probe, INGEST_NAME_LEN);
        res->accepted++;
    }
    if (rc == 0) {
        s->reports_total += b->n;
        s->gen++;
    } else {
        s->reports_rejected++;
    }
    pthread_rwlock_unlock(&s->lock);
    free(ld);
    free(eg);
    free(lce);
    free(loc);
    return rc;
}
