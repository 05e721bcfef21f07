/*
 * ingest: see ingest.h. Every field is checked for type and bounds before it
 * is stored; the first violation aborts the whole batch (nothing applied),
 * and its message names the field by its JSON path.
 */
#include "controller/ingest.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/events.h"
#include "controller/jscan.h"
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

/* ---- parsing: jscan, schema by hand ---------------------------------- */

/* A member's value checked against one field's type and bounds. `at` is the
 * JSON path of the enclosing object ("" for the top report), key the member;
 * messages read "flows[3].bps: negative -1". */
struct fld {
    const char *at, *key;
    struct ingest_error *e;
};

static int ffail(const struct fld *f, enum ingest_err kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ffail(const struct fld *f, enum ingest_err kind, const char *fmt, ...)
{
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return fail(f->e, kind, "%s%s%s: %s", f->at, f->at[0] ? "." : "", f->key, what);
}

static int want_num(const struct fld *f, const struct jscan_val *v, double min, double max, double *out)
{
    if (v->t != JSCAN_NUM)
        return ffail(f, INGEST_BAD_FIELD, "must be a number");
    double d = v->num;
    if (!isfinite(d))
        return ffail(f, INGEST_BAD_FIELD, "not finite");
    if (d < min)
        return ffail(f, INGEST_BAD_FIELD, "%s %g", d < 0 ? "negative" : "below minimum", d);
    if (d > max)
        return ffail(f, INGEST_BAD_FIELD, "%g exceeds the maximum %g", d, max);
    *out = d;
    return 0;
}

static int want_int(const struct fld *f, const struct jscan_val *v, double max, uint64_t *out)
{
    double d;
    if (v->t == JSCAN_NUM && !v->is_int)
        return ffail(f, INGEST_BAD_FIELD, "must be an integer");
    int r = want_num(f, v, 0, max, &d);
    if (r == 0 && !v->int_ok)
        return ffail(f, INGEST_BAD_FIELD, "integer out of range");
    if (r == 0)
        *out = (uint64_t)v->i;
    return r;
}

static int want_str(const struct fld *f, const struct jscan_val *v, char *buf, size_t len)
{
    if (v->t != JSCAN_STR)
        return ffail(f, INGEST_BAD_FIELD, "must be a string");
    if (v->slen == 0 || v->slen >= len)
        return ffail(f, INGEST_BAD_FIELD, "length %zu not in 1..%zu", v->slen, len - 1);
    for (size_t i = 0; i < v->slen; i++)
        if ((unsigned char)v->str[i] <= 0x20 || (unsigned char)v->str[i] >= 0x7f)
            return ffail(f, INGEST_BAD_FIELD, "invalid character");
    memcpy(buf, v->str, v->slen + 1);
    return 0;
}

static int want_bool(const struct fld *f, const struct jscan_val *v, bool *out)
{
    if (v->t != JSCAN_TRUE && v->t != JSCAN_FALSE)
        return ffail(f, INGEST_BAD_FIELD, "must be true or false");
    *out = v->t == JSCAN_TRUE;
    return 0;
}

/* Index of key in names (at most 32), or -1; a key seen twice is an error,
 * as JSON_REJECT_DUPLICATES made it before. */
static int member(const char *const *names, int n, const char *key, uint32_t *seen, const char *at,
                  struct ingest_error *e, int *rc)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], key) == 0) {
            if (*seen & (1u << i))
                *rc = fail(e, INGEST_BAD_JSON, "%s%s%s: duplicate object key", at, at[0] ? "." : "", key);
            *seen |= 1u << i;
            return i;
        }
    return -1;
}

static int require(const char *const *names, int n, uint32_t need, uint32_t seen, const char *at,
                   struct ingest_error *e)
{
    for (int i = 0; i < n; i++)
        if ((need & (1u << i)) && !(seen & (1u << i)))
            return fail(e, INGEST_BAD_FIELD, "%s%s%s: required", at, at[0] ? "." : "", names[i]);
    return 0;
}

/* Skips a member's value the schema does not know. */
static void skip_value(struct jscan *j)
{
    struct jscan_val v;
    if (jscan_value(j, &v) == 0)
        jscan_skip(j, &v);
}

static int parse_link(struct jscan *j, const char *at, struct ingest_link *out, struct ingest_error *e)
{
    static const char *const names[] = {"if", "tx_bps", "rx_bps", "drops", "ce_pkts", "oper"};
    struct jscan_val v;
    char key[32], oper[8] = "up";
    double rx = -1;
    uint32_t seen = 0;
    int rc = 0;
    if (jscan_value(j, &v) < 0 || v.t != JSCAN_OBJ) {
        jscan_skip(j, &v);
        return fail(e, INGEST_BAD_FIELD, "%s: must be an object", at);
    }
    while (rc == 0 && jscan_key(j, key, sizeof(key))) {
        int k = member(names, 6, key, &seen, at, e, &rc);
        if (k < 0 || rc) {
            skip_value(j);
            continue;
        }
        if (jscan_value(j, &v) < 0)
            return fail(e, INGEST_BAD_JSON, "%s: truncated", at);
        struct fld f = {at, key, e};
        switch (k) {
        case 0: rc = want_str(&f, &v, out->ifname, sizeof(out->ifname)); break;
        case 1: rc = want_num(&f, &v, 0, INGEST_MAX_BPS, &out->tx_bps); break;
        case 2: rc = want_num(&f, &v, 0, INGEST_MAX_BPS, &rx); break;
        case 3: rc = want_int(&f, &v, INGEST_MAX_COUNT, &out->drops); break;
        case 4: rc = want_int(&f, &v, INGEST_MAX_COUNT, &out->ce_pkts); break;
        default: rc = want_str(&f, &v, oper, sizeof(oper)); break;
        }
        jscan_skip(j, &v);
    }
    if (rc || (rc = require(names, 6, 1u << 0, seen, at, e)))
        return rc;
    if (strcmp(oper, "up") && strcmp(oper, "down"))
        return fail(e, INGEST_BAD_FIELD, "%s.oper: '%s' is not up or down", at, oper);
    out->has_rx = rx >= 0;
    out->rx_bps = rx >= 0 ? rx : 0;
    out->down = oper[0] == 'd';
    return 0;
}

static int parse_flow(struct jscan *j, const char *at, struct ingest_flow *out, struct ingest_error *e)
{
    static const char *const names[] = {"src", "dst", "proto", "sport", "dport", "qp", "vlan", "dscp",
                                        "if", "bytes", "pkts", "bps", "ce_frac", "cnp", "fat"};
    static const double imax[] = {0, 0, 255, 65535, 65535, 0xffffff, 4095, 63};
    struct jscan_val v;
    char key[32], src[48] = "", dst[48] = "";
    uint64_t ints[8] = {0};      /* indexed like names: proto .. dscp */
    uint32_t seen = 0;
    int rc = 0;
    if (jscan_value(j, &v) < 0 || v.t != JSCAN_OBJ) {
        jscan_skip(j, &v);
        return fail(e, INGEST_BAD_FIELD, "%s: must be an object", at);
    }
    while (rc == 0 && jscan_key(j, key, sizeof(key))) {
        int k = member(names, 15, key, &seen, at, e, &rc);
        if (k < 0 || rc) {
            skip_value(j);
            continue;
        }
        if (jscan_value(j, &v) < 0)
            return fail(e, INGEST_BAD_JSON, "%s: truncated", at);
        struct fld f = {at, key, e};
        if (k == 0 || k == 1)
            rc = want_str(&f, &v, k == 0 ? src : dst, sizeof(src));
        else if (k < 8)
            rc = want_int(&f, &v, imax[k], &ints[k]);
        else if (k == 8)
            rc = want_str(&f, &v, out->ifname, sizeof(out->ifname));
        else if (k == 9 || k == 10 || k == 13)
            rc = want_int(&f, &v, INGEST_MAX_COUNT, k == 9 ? &out->bytes : k == 10 ? &out->pkts : &out->cnp);
        else if (k == 11)
            rc = want_num(&f, &v, 0, INGEST_MAX_BPS, &out->bps);
        else if (k == 12)
            rc = want_num(&f, &v, 0, 1, &out->ce_frac);
        else
            rc = want_bool(&f, &v, &out->fat);
        jscan_skip(j, &v);
    }
    /* src, dst, proto, if, bps are required. */
    if (rc || (rc = require(names, 15, 1u << 0 | 1u << 1 | 1u << 2 | 1u << 8 | 1u << 11, seen, at, e)))
        return rc;
    int af, af2;
    uint8_t tmp[16];
    memset(&out->k, 0, sizeof(out->k));
    if (tf_addr_parse(src, &af, out->k.src) < 0)
        return fail(e, INGEST_BAD_FIELD, "%s.src: '%s' is not an IP address", at, src);
    if (tf_addr_parse(dst, &af2, tmp) < 0)
        return fail(e, INGEST_BAD_FIELD, "%s.dst: '%s' is not an IP address", at, dst);
    if (af != af2)
        return fail(e, INGEST_BAD_FIELD, "%s: src and dst of different families", at);
    memcpy(out->k.dst, tmp, 16);
    out->k.af = (uint8_t)af;
    out->k.proto = (uint8_t)ints[2];
    out->k.sport = (uint16_t)ints[3];
    out->k.dport = (uint16_t)ints[4];
    out->k.qp = (uint32_t)ints[5];
    out->k.vlan = (uint16_t)ints[6];
    out->dscp = (uint8_t)ints[7];
    return 0;
}

/* The "links" or "flows" member's value: an array of objects. */
static int parse_list(struct jscan *j, const char *at, bool flows, size_t *budget, struct ingest_report *r,
                      struct ingest_error *e)
{
    struct jscan_val v;
    const char *what = flows ? "flows" : "links";
    if (jscan_value(j, &v) < 0 || v.t != JSCAN_ARR) {
        jscan_skip(j, &v);
        return fail(e, INGEST_BAD_FIELD, "%s%s%s: must be an array", at, at[0] ? "." : "", what);
    }
    /* Count first (a skip is a plain byte scan), so that an oversized list
     * is 413 before any of its entries is judged, and is never allocated. */
    struct jscan c = *j;
    size_t count = 0;
    while (jscan_elem(&c)) {
        skip_value(&c);
        count++;
    }
    if (flows && count > *budget)
        return fail(e, INGEST_TOO_MANY, "%s%sflows: %zu entries, more than the limit (max_flows_per_report)",
                    at, at[0] ? "." : "", count);
    if (!flows && count > INGEST_MAX_LINKS)
        return fail(e, INGEST_TOO_MANY, "%s%slinks: %zu entries, at most %d", at, at[0] ? "." : "", count,
                    INGEST_MAX_LINKS);
    size_t *n = flows ? &r->nflows : &r->nlinks;
    if (count && !(flows ? (void *)(r->flows = calloc(count, sizeof(*r->flows)))
                         : (void *)(r->links = calloc(count, sizeof(*r->links)))))
        return fail(e, INGEST_BAD_FIELD, "out of memory for %zu %s", count, what);
    char p[96];
    while (jscan_elem(j)) {
        if (*n >= count) /* cannot happen: the same text was just counted */
            return fail(e, INGEST_BAD_JSON, "%s%s%s: changed while parsed", at, at[0] ? "." : "", what);
        snprintf(p, sizeof(p), "%s%s%s[%zu]", at, at[0] ? "." : "", what, *n);
        int rc;
        if (flows) {
            (*budget)--;
            rc = parse_flow(j, p, &r->flows[*n], e);
        } else {
            rc = parse_link(j, p, &r->links[*n], e);
        }
        if (rc)
            return rc;
        (*n)++;
    }
    return 0;
}

/* One report object; the opening '{' is already consumed. at: "" for a
 * lone report, "reports[2]" in a batch. */
static int parse_report(struct jscan *j, const char *at, size_t *budget, struct ingest_report *r,
                        struct ingest_error *e)
{
    static const char *const names[] = {"probe", "ts", "interval_s", "links", "flows"};
    const char *base = at[0] ? at : "report";
    struct jscan_val v;
    char key[32];
    uint32_t seen = 0;
    int rc = 0;
    while (rc == 0 && jscan_key(j, key, sizeof(key))) {
        int k = member(names, 5, key, &seen, at, e, &rc);
        if (k < 0 || rc) {
            skip_value(j);
            continue;
        }
        if (k >= 3) {
            rc = parse_list(j, at, k == 4, budget, r, e);
            continue;
        }
        if (jscan_value(j, &v) < 0)
            return fail(e, INGEST_BAD_JSON, "%s: truncated", base);
        struct fld f = {base, key, e};
        rc = k == 0 ? want_str(&f, &v, r->probe, sizeof(r->probe))
           : k == 1 ? want_num(&f, &v, 0, 1e11, &r->ts)
                    : want_num(&f, &v, 0, 86400, &r->interval_s);
        jscan_skip(j, &v);
    }
    return rc ? rc : require(names, 5, 1u << 0, seen, base, e);
}

void ingest_batch_free(struct ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->r[i].links);
        free(b->r[i].flows);
    }
    b->n = 0;
}

/* Whether the top-level object has a "reports" member (a batch), without
 * reading anything else: the members may come in any order. */
static bool is_batch(const char *body, size_t len)
{
    struct jscan j;
    struct jscan_val v;
    char key[16];
    jscan_init(&j, body, len);
    if (jscan_value(&j, &v) < 0 || v.t != JSCAN_OBJ)
        return false;
    while (jscan_key(&j, key, sizeof(key))) {
        if (strcmp(key, "reports") == 0)
            return true;
        skip_value(&j);
    }
    return false;
}

static int parse_batch(struct jscan *j, size_t *budget, struct ingest_batch *b, struct ingest_error *e)
{
    struct jscan_val v;
    char key[16];
    int rc = 0;
    bool seen = false;
    while (rc == 0 && jscan_key(j, key, sizeof(key))) {
        if (strcmp(key, "reports")) {
            skip_value(j);
            continue;
        }
        if (seen)
            return fail(e, INGEST_BAD_JSON, "reports: duplicate object key");
        seen = true;
        if (jscan_value(j, &v) < 0 || v.t != JSCAN_ARR)
            return fail(e, INGEST_BAD_FIELD, "reports: must be a non-empty array");
        while (rc == 0 && jscan_elem(j)) {
            if (b->n == INGEST_MAX_REPORTS)
                return fail(e, INGEST_TOO_MANY, "reports: more than %d entries", INGEST_MAX_REPORTS);
            char at[32];
            snprintf(at, sizeof(at), "reports[%zu]", b->n);
            struct ingest_report *r = &b->r[b->n++];
            if (jscan_value(j, &v) < 0 || v.t != JSCAN_OBJ)
                return fail(e, INGEST_BAD_FIELD, "%s: report must be an object", at);
            rc = parse_report(j, at, budget, r, e);
        }
        if (rc == 0 && b->n == 0)
            return fail(e, INGEST_BAD_FIELD, "reports: must be a non-empty array");
    }
    return rc;
}

int ingest_parse(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                 struct ingest_error *e)
{
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
    /* Syntax first, over the whole body, so that a malformed body is always
     * bad_json (with its place) whatever fields precede the fault. */
    struct jscan_err je;
    if (jscan_validate(body, len, &je) < 0) {
        e->line = je.line;
        e->column = je.column;
        e->position = je.position;
        return fail(e, INGEST_BAD_JSON, "%s (line %d, column %d)", je.text, je.line, je.column);
    }
    struct jscan j;
    struct jscan_val v;
    size_t budget = max_flows;
    int rc;
    bool batch = is_batch(body, len);
    jscan_init(&j, body, len);
    if (jscan_value(&j, &v) < 0 || v.t != JSCAN_OBJ)
        rc = fail(e, INGEST_BAD_FIELD, "body: must be a JSON object");
    else if (batch)
        rc = parse_batch(&j, &budget, b, e);
    else {
        b->n = 1;
        rc = parse_report(&j, "", &budget, &b->r[0], e);
    }
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
