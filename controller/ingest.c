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

/* A number field: absent is fine unless required; must be finite and in range. */
static int get_num(json_t *o, const char *key, const char *at, bool required, double min, double max,
                   double *out, struct ingest_error *e)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return fail(e, INGEST_BAD_FIELD, "%s.%s: required", at, key);
        return 0;
    }
    if (!json_is_number(v))
        return fail(e, INGEST_BAD_FIELD, "%s.%s: must be a number", at, key);
    double d = json_number_value(v);
    if (!isfinite(d))
        return fail(e, INGEST_BAD_FIELD, "%s.%s: not finite", at, key);
    if (d < min)
        return fail(e, INGEST_BAD_FIELD, "%s.%s: %s %g", at, key, d < 0 ? "negative" : "below minimum", d);
    if (d > max)
        return fail(e, INGEST_BAD_FIELD, "%s.%s: %g exceeds the maximum %g", at, key, d, max);
    *out = d;
    return 0;
}

static int get_int(json_t *o, const char *key, const char *at, bool required, double max,
                   uint64_t *out, struct ingest_error *e)
{
    double d = 0;
    json_t *v = json_object_get(o, key);
    if (v && !json_is_integer(v))
        return fail(e, INGEST_BAD_FIELD, "%s.%s: must be an integer", at, key);
    int r = get_num(o, key, at, required, 0, max, &d, e);
    if (r == 0 && v)
        *out = (uint64_t)json_integer_value(v);
    return r;
}

static int get_str(json_t *o, const char *key, const char *at, bool required, char *buf, size_t len,
                   struct ingest_error *e)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        if (required)
            return fail(e, INGEST_BAD_FIELD, "%s.%s: required", at, key);
        return 0;
    }
    if (!json_is_string(v))
        return fail(e, INGEST_BAD_FIELD, "%s.%s: must be a string", at, key);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n >= len)
        return fail(e, INGEST_BAD_FIELD, "%s.%s: length %zu not in 1..%zu", at, key, n, len - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return fail(e, INGEST_BAD_FIELD, "%s.%s: invalid character", at, key);
    memcpy(buf, s, n + 1);
    return 0;
}

static int get_bool(json_t *o, const char *key, const char *at, bool *out, struct ingest_error *e)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return fail(e, INGEST_BAD_FIELD, "%s.%s: must be true or false", at, key);
    *out = json_is_true(v);
    return 0;
}

static int parse_link(json_t *l, const char *at, struct ingest_link *out, struct ingest_error *e)
{
    if (!json_is_object(l))
        return fail(e, INGEST_BAD_FIELD, "%s: must be an object", at);
    double rx = -1;
    uint64_t drops = 0, ce = 0;
    char oper[8] = "up";
    int r;
    if ((r = get_str(l, "if", at, true, out->ifname, sizeof(out->ifname), e)) ||
        (r = get_num(l, "tx_bps", at, false, 0, INGEST_MAX_BPS, &out->tx_bps, e)) ||
        (r = get_num(l, "rx_bps", at, false, 0, INGEST_MAX_BPS, &rx, e)) ||
        (r = get_int(l, "drops", at, false, INGEST_MAX_COUNT, &drops, e)) ||
        (r = get_int(l, "ce_pkts", at, false, INGEST_MAX_COUNT, &ce, e)) ||
        (r = get_str(l, "oper", at, false, oper, sizeof(oper), e)))
        return r;
    if (strcmp(oper, "up") && strcmp(oper, "down"))
        return fail(e, INGEST_BAD_FIELD, "%s.oper: '%s' is not up or down", at, oper);
    out->has_rx = rx >= 0;
    out->rx_bps = rx >= 0 ? rx : 0;
    out->drops = drops;
    out->ce_pkts = ce;
    out->down = oper[0] == 'd';
    return 0;
}

static int parse_flow(json_t *f, const char *at, struct ingest_flow *out, struct ingest_error *e)
{
    if (!json_is_object(f))
        return fail(e, INGEST_BAD_FIELD, "%s: must be an object", at);
    char src[48] = "", dst[48] = "";
    uint64_t proto = 0, sport = 0, dport = 0, qp = 0, vlan = 0, dscp = 0;
    int r;
    if ((r = get_str(f, "src", at, true, src, sizeof(src), e)) ||
        (r = get_str(f, "dst", at, true, dst, sizeof(dst), e)) ||
        (r = get_int(f, "proto", at, true, 255, &proto, e)) ||
        (r = get_int(f, "sport", at, false, 65535, &sport, e)) ||
        (r = get_int(f, "dport", at, false, 65535, &dport, e)) ||
        (r = get_int(f, "qp", at, false, 0xffffff, &qp, e)) ||
        (r = get_int(f, "vlan", at, false, 4095, &vlan, e)) ||
        (r = get_int(f, "dscp", at, false, 63, &dscp, e)) ||
        (r = get_str(f, "if", at, true, out->ifname, sizeof(out->ifname), e)) ||
        (r = get_int(f, "bytes", at, false, INGEST_MAX_COUNT, &out->bytes, e)) ||
        (r = get_int(f, "pkts", at, false, INGEST_MAX_COUNT, &out->pkts, e)) ||
        (r = get_num(f, "bps", at, true, 0, INGEST_MAX_BPS, &out->bps, e)) ||
        (r = get_num(f, "ce_frac", at, false, 0, 1, &out->ce_frac, e)) ||
        (r = get_int(f, "cnp", at, false, INGEST_MAX_COUNT, &out->cnp, e)) ||
        (r = get_bool(f, "fat", at, &out->fat, e)))
        return r;
    int af2;
    uint8_t tmp[16];
    int af;
    memset(&out->k, 0, sizeof(out->k));
    if (tf_addr_parse(src, &af, out->k.src) < 0)
        return fail(e, INGEST_BAD_FIELD, "%s.src: '%s' is not an IP address", at, src);
    if (tf_addr_parse(dst, &af2, tmp) < 0)
        return fail(e, INGEST_BAD_FIELD, "%s.dst: '%s' is not an IP address", at, dst);
    if (af != af2)
        return fail(e, INGEST_BAD_FIELD, "%s: src and dst of different families", at);
    memcpy(out->k.dst, tmp, 16);
    out->k.af = (uint8_t)af;
    out->k.proto = (uint8_t)proto;
    out->k.sport = (uint16_t)sport;
    out->k.dport = (uint16_t)dport;
    out->k.qp = (uint32_t)qp;
    out->k.vlan = (uint16_t)vlan;
    out->dscp = (uint8_t)dscp;
    return 0;
}

static int parse_report(json_t *o, const char *at, size_t *budget, struct ingest_report *r,
                        struct ingest_error *e)
{
    if (!json_is_object(o))
        return fail(e, INGEST_BAD_FIELD, "%s: report must be an object", at[0] ? at : "body");
    const char *base = at[0] ? at : "report";
    int rc;
    if ((rc = get_str(o, "probe", base, true, r->probe, sizeof(r->probe), e)) ||
        (rc = get_num(o, "ts", base, false, 0, 1e11, &r->ts, e)) ||
        (rc = get_num(o, "interval_s", base, false, 0, 86400, &r->interval_s, e)))
        return rc;
    json_t *links = json_object_get(o, "links"), *flows = json_object_get(o, "flows");
    if (links && !json_is_array(links))
        return fail(e, INGEST_BAD_FIELD, "%slinks: must be an array", at[0] ? at : "");
    if (flows && !json_is_array(flows))
        return fail(e, INGEST_BAD_FIELD, "%sflows: must be an array", at[0] ? at : "");
    size_t nl = json_array_size(links), nf = json_array_size(flows);
    if (nl > INGEST_MAX_LINKS)
        return fail(e, INGEST_TOO_MANY, "%slinks: %zu entries, at most %d", at, nl, INGEST_MAX_LINKS);
    if (nf > *budget)
        return fail(e, INGEST_TOO_MANY, "%sflows: %zu entries, more than the limit (max_flows_per_report)",
                    at, nf);
    *budget -= nf;
    r->links = calloc(nl ? nl : 1, sizeof(*r->links));
    r->flows = calloc(nf ? nf : 1, sizeof(*r->flows));
    if (!r->links || !r->flows)
        return fail(e, INGEST_BAD_FIELD, "out of memory");
    char p[96];
    for (size_t i = 0; i < nl; i++) {
        snprintf(p, sizeof(p), "%slinks[%zu]", at, i);
        if ((rc = parse_link(json_array_get(links, i), p, &r->links[i], e)))
            return rc;
        r->nlinks++;
    }
    for (size_t i = 0; i < nf; i++) {
        snprintf(p, sizeof(p), "%sflows[%zu]", at, i);
        if ((rc = parse_flow(json_array_get(flows, i), p, &r->flows[i], e)))
            return rc;
        r->nflows++;
    }
    return 0;
}

void ingest_batch_free(struct ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->r[i].links);
        free(b->r[i].flows);
    }
    b->n = 0;
}

int ingest_parse(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                 struct ingest_error *e)
{
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
    json_error_t je;
    /* The document lives only inside this call: everything kept is copied
     * into the batch, so its values can come from the arena. */
    jsonarena_begin(len);
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        jsonarena_end();
        e->line = je.line;
        e->column = je.column;
        e->position = je.position;
        return fail(e, INGEST_BAD_JSON, "%s (line %d, column %d)", je.text, je.line, je.column);
    }
    int rc = 0;
    size_t budget = max_flows;
    json_t *reports = json_is_object(root) ? json_object_get(root, "reports") : NULL;
    if (!json_is_object(root)) {
        rc = fail(e, INGEST_BAD_FIELD, "body: must be a JSON object");
    } else if (reports) {
        if (!json_is_array(reports) || json_array_size(reports) == 0)
            rc = fail(e, INGEST_BAD_FIELD, "reports: must be a non-empty array");
        else if (json_array_size(reports) > INGEST_MAX_REPORTS)
            rc = fail(e, INGEST_TOO_MANY, "reports: %zu entries, at most %d", json_array_size(reports),
                      INGEST_MAX_REPORTS);
        for (size_t i = 0; rc == 0 && i < json_array_size(reports); i++) {
            char at[32];
            snprintf(at, sizeof(at), "reports[%zu].", i);
            b->n++;
            rc = parse_report(json_array_get(reports, i), at, &budget, &b->r[i], e);
        }
    } else {
        b->n = 1;
        rc = parse_report(root, "", &budget, &b->r[0], e);
    }
    json_decref(root);
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

static void classify(struct state *s, struct state_flow *f)
{
    if (!s->classes)
        return;
    struct class_flow cf = {.af = f->k.af, .proto = f->k.proto, .sport = f->k.sport,
                            .dport = f->k.dport, .has_qp = f->k.proto == 17 && f->k.dport == 4791,
                            .qp = f->k.qp, .dscp = f->dscp, .job = NULL, .job_dim = -1};
    memcpy(cf.src, f->k.src, 16);
    memcpy(cf.dst, f->k.dst, 16);
    f->cls = classes_match(s->classes, &cf);
    f->tier = s->classes->c[f->cls].max_tier;
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

static void resolve_report(const struct topo *t, uint32_t node, const struct ingest_report *r, struct resolved *x)
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
    f->dscp = in->dscp;
    f->fat = in->fat;
    f->bps = in->bps;
    f->ce_frac = in->ce_frac;
    f->cnp = in->cnp;
    f->last_seen = now;
    if (inserted || f->cls == CLASS_DEFAULT)
        classify(s, f);
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

static int resolve_batch(const struct topo *t, const struct ingest_batch *b, struct resolved *x,
                         struct ingest_error *e)
{
    uint32_t nodes[INGEST_MAX_REPORTS];
    int rc = resolve_nodes(t, b, nodes, e);
    for (size_t i = 0; i < b->n && rc == 0; i++)
        resolve_report(t, nodes[i], &b->r[i], &x[i]);
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
    int rc = resolve_batch(t, b, x, e);
    pthread_rwlock_unlock(&s->lock);

    pthread_rwlock_wrlock(&s->lock);
    if (rc == 0 && s->topo != t) /* reloaded in between: resolve again */
        rc = resolve_batch(s->topo, b, x, e);
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
