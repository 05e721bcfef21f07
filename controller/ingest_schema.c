/*
 * ingest_schema: see ingest_schema.h. Every member is checked for type and
 * bounds before it is stored, and every message names it by its JSON path.
 * A violation in an entry's members is the entry's (the readers drop it and
 * go on); in a report's own members, the whole batch's.
 */
#include "controller/ingest_schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reportspec.h"
#include "common/util.h"
#include "policy/topo.h"

int ingest_error_set(struct ingest_error *e, enum ingest_err kind, const char *fmt, ...)
{
    e->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return kind == INGEST_UNKNOWN ? -ENOENT : kind == INGEST_TOO_MANY ? -E2BIG : -EINVAL;
}

/* ---- the report schema: one table per object, read by both parsers ---- */

/* The path is put together only when there is an error to report: a
 * snprintf per flow was a tenth of the parse. */
static const char *path_of(const struct ingest_ctx *c, char *buf, size_t len)
{
    if (!c->list)
        return c->at;
    snprintf(buf, len, "%s%s%s[%zu]", c->at, c->at[0] ? "." : "", c->list, c->idx);
    return buf;
}

int ingest_cfail(const struct ingest_ctx *c, const char *key, const char *fmt, ...)
{
    char what[200], pb[96];
    const char *at = path_of(c, pb, sizeof(pb));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    /* Paths are short ("reports[63].flows[99999].sampling"); a longer one
     * would only be cut. */
    if (snprintf(c->e->path, sizeof(c->e->path), "%s%s%s", at, at[0] && key ? "." : "", key ? key : "") < 0)
        c->e->path[0] = '\0';
    return ingest_error_set(c->e, INGEST_BAD_FIELD, "%s: %s", c->e->path, what);
}

void ingest_refusals_add(struct ingest_refusals *r, struct ingest_error *e)
{
    if (r->kept < INGEST_REFUSED_KEEP) {
        tf_strlcpy(r->e[r->kept].path, e->path, sizeof(r->e[r->kept].path));
        tf_strlcpy(r->e[r->kept].msg, e->msg, sizeof(r->e[r->kept].msg));
        r->kept++;
    }
    r->n++;
    memset(e, 0, sizeof(*e));
}

/* The kinds of struct ingest_field: F_NUM takes min..max, F_INT imin..imax. */
enum fkind { F_STR, F_INT, F_NUM, F_BOOL };

#define F_AT(T, m) offsetof(T, m), sizeof(((T *)0)->m)
#define FSTR(T, k, need, m) {k, sizeof(k) - 1, F_STR, need, 0, 0, 0, 0, F_AT(T, m)}
#define FINT(T, k, need, lo, hi, m) {k, sizeof(k) - 1, F_INT, need, 0, 0, lo, hi, F_AT(T, m)}
#define FNUM(T, k, need, lo, hi, m) {k, sizeof(k) - 1, F_NUM, need, lo, hi, 0, 0, F_AT(T, m)}
#define FBOOL(T, k, m) {k, sizeof(k) - 1, F_BOOL, false, 0, 0, 0, 0, F_AT(T, m)}

/* A link or flow entry as its members give it, before the checks across
 * members (finish_link, finish_flow). */
struct raw_link {
    char ifname[STATE_IF_LEN];
    double tx_bps, rx_bps;       /* rx_bps -1: absent */
    uint64_t drops, ce_pkts, errors, carrier_changes, qdisc_drops; /* qdisc_drops UINT64_MAX: absent */
    uint64_t qdisc_backlog;      /* UINT64_MAX: absent */
    char oper[8];
};

struct raw_flow {
    char src[48], dst[48], ifname[STATE_IF_LEN], source[8], in_ifname[STATE_IF_LEN];
    uint64_t proto, sport, dport, qp, vlan, dscp, bytes, pkts, cnp, sampling;
    uint64_t retx_pkts, tail_retx, psn_oos, naks, holes; /* holes UINT64_MAX: absent */
    double bps, ce_frac;
    bool fat;
};

/* In the order their errors are reported (ingest_schema.h). */
const struct ingest_field ingest_report_fields[] = {
    FSTR(struct ingest_report, "probe", true, probe),
    FINT(struct ingest_report, "schema", false, 0, INT32_MAX, schema),
    FSTR(struct ingest_report, "instance", false, instance),
    FNUM(struct ingest_report, "ts", false, 0, 1e11, ts),
    FNUM(struct ingest_report, "interval_s", false, 0, 86400, interval_s),
    FBOOL(struct ingest_report, "partial", partial),
};
const size_t ingest_report_nfields = TF_ARRAY_SIZE(ingest_report_fields);

/* The checks across a report's own members, after they are read. */
int ingest_report_check(const struct ingest_ctx *c, const struct ingest_report *r)
{
    if (r->schema != REPORTSPEC_SCHEMA)
        return ingest_cfail(c, "schema", "%llu is not a schema this controller reads (%d)",
                            (unsigned long long)r->schema, REPORTSPEC_SCHEMA);
    return 0;
}

static const struct ingest_field link_fields[] = {
    FSTR(struct raw_link, "if", true, ifname),
    FNUM(struct raw_link, "tx_bps", false, 0, INGEST_MAX_BPS, tx_bps),
    FNUM(struct raw_link, "rx_bps", false, 0, INGEST_MAX_BPS, rx_bps),
    FINT(struct raw_link, "drops", false, 0, INGEST_MAX_COUNT, drops),
    FINT(struct raw_link, "ce_pkts", false, 0, INGEST_MAX_COUNT, ce_pkts),
    FINT(struct raw_link, "errors", false, 0, INGEST_MAX_COUNT, errors),
    FINT(struct raw_link, "carrier_changes", false, 0, INGEST_MAX_COUNT, carrier_changes),
    FINT(struct raw_link, "qdisc_drops", false, 0, INGEST_MAX_COUNT, qdisc_drops),
    FINT(struct raw_link, "qdisc_backlog", false, 0, INGEST_MAX_COUNT, qdisc_backlog),
    FSTR(struct raw_link, "oper", false, oper),
};

/* src, dst, proto, if, bps are required. */
static const struct ingest_field flow_fields[] = {
    FSTR(struct raw_flow, "src", true, src),
    FSTR(struct raw_flow, "dst", true, dst),
    FINT(struct raw_flow, "proto", true, 0, 255, proto),
    FINT(struct raw_flow, "sport", false, 0, 65535, sport),
    FINT(struct raw_flow, "dport", false, 0, 65535, dport),
    FINT(struct raw_flow, "qp", false, 0, 0xffffff, qp),
    FINT(struct raw_flow, "vlan", false, 0, 4095, vlan),
    FINT(struct raw_flow, "dscp", false, 0, 63, dscp),
    FSTR(struct raw_flow, "if", true, ifname),
    FINT(struct raw_flow, "bytes", false, 0, INGEST_MAX_COUNT, bytes),
    FINT(struct raw_flow, "pkts", false, 0, INGEST_MAX_COUNT, pkts),
    FNUM(struct raw_flow, "bps", true, 0, INGEST_MAX_BPS, bps),
    FNUM(struct raw_flow, "ce_frac", false, 0, 1, ce_frac),
    FINT(struct raw_flow, "cnp", false, 0, INGEST_MAX_COUNT, cnp),
    FBOOL(struct raw_flow, "fat", fat),
    FSTR(struct raw_flow, "source", false, source),
    FINT(struct raw_flow, "sampling", false, 1, INGEST_MAX_SAMPLING, sampling),
    FINT(struct raw_flow, "retx_pkts", false, 0, INGEST_MAX_COUNT, retx_pkts),
    FINT(struct raw_flow, REPORTSPEC_TAIL_RETX, false, 0, INGEST_MAX_COUNT, tail_retx),
    FINT(struct raw_flow, "psn_oos", false, 0, INGEST_MAX_COUNT, psn_oos),
    FINT(struct raw_flow, "naks", false, 0, INGEST_MAX_COUNT, naks),
    FINT(struct raw_flow, REPORTSPEC_HOLES, false, 0, INGEST_MAX_COUNT, holes),
    FSTR(struct raw_flow, REPORTSPEC_IN_IF, false, in_ifname),
};

/* The scanner marks the members it has seen in a 32-bit mask. */
_Static_assert(TF_ARRAY_SIZE(flow_fields) <= 32 && TF_ARRAY_SIZE(ingest_report_fields) <= 30, "seen masks");

int ingest_field_check(const struct ingest_ctx *c, const struct ingest_field *f, const struct jsonscan_value *v,
                       void *raw)
{
    char *out = (char *)raw + f->off;
    switch (f->kind) {
    case F_NUM: {
        if (v->type != JSONSCAN_INTEGER && v->type != JSONSCAN_REAL)
            return ingest_cfail(c, f->key, "must be a number");
        double d = v->type == JSONSCAN_INTEGER ? (double)v->i : v->d;
        if (!isfinite(d)) /* both parsers refuse overflowing reals; kept in case that changes */
            return ingest_cfail(c, f->key, "not finite");
        if (d < f->min)
            return ingest_cfail(c, f->key, "%s %g", d < 0 ? "negative" : "below minimum", d);
        if (d > f->max)
            return ingest_cfail(c, f->key, "%g exceeds the maximum %g", d, f->max);
        memcpy(out, &d, sizeof(d));
        return 0;
    }
    case F_INT: {
        /* 1.0 and 1e3 are reals in JSON's grammar and are refused: counters
         * and ports are never written that way. Integers beyond long long
         * are a syntax error ("too big integer"). */
        if (v->type == JSONSCAN_REAL)
            return ingest_cfail(c, f->key, "must be an integer");
        if (v->type != JSONSCAN_INTEGER)
            return ingest_cfail(c, f->key, "must be a number");
        if (v->i < f->imin)
            return ingest_cfail(c, f->key, "%s %lld", v->i < 0 ? "negative" : "below minimum", v->i);
        if (v->i > f->imax)
            return ingest_cfail(c, f->key, "%lld exceeds the maximum %lld", v->i, f->imax);
        uint64_t u = (uint64_t)v->i;
        memcpy(out, &u, sizeof(u));
        return 0;
    }
    case F_STR:
        if (v->type != JSONSCAN_STRING)
            return ingest_cfail(c, f->key, "must be a string");
        if (v->len == 0 || v->len >= f->size)
            return ingest_cfail(c, f->key, "length %zu not in 1..%zu", v->len, f->size - 1);
        memcpy(out, v->s, v->len);
        out[v->len] = '\0';
        if (memchr(v->s, '\0', v->len) || !reportspec_name_ok(out, f->size - 1))
            return ingest_cfail(c, f->key, "invalid character");
        return 0;
    default: {
        if (v->type != JSONSCAN_TRUE && v->type != JSONSCAN_FALSE)
            return ingest_cfail(c, f->key, "must be true or false");
        bool b = v->type == JSONSCAN_TRUE;
        memcpy(out, &b, sizeof(b));
        return 0;
    }
    }
}

static int finish_link(const struct ingest_ctx *c, const void *raw, void *entry)
{
    const struct raw_link *r = raw;
    struct ingest_link *out = entry;
    if (strcmp(r->oper, "up") && strcmp(r->oper, "down"))
        return ingest_cfail(c, "oper", "'%s' is not up or down", r->oper);
    out->idx = (uint32_t)c->idx;
    memcpy(out->ifname, r->ifname, sizeof(out->ifname));
    out->tx_bps = r->tx_bps;
    out->has_rx = r->rx_bps >= 0;
    out->rx_bps = r->rx_bps >= 0 ? r->rx_bps : 0;
    out->drops = r->drops;
    out->ce_pkts = r->ce_pkts;
    out->errors = r->errors;
    out->carrier_changes = r->carrier_changes;
    out->has_queue = r->qdisc_drops != UINT64_MAX;
    out->qdisc_drops = out->has_queue ? r->qdisc_drops : 0;
    out->has_backlog = r->qdisc_backlog != UINT64_MAX;
    out->qdisc_backlog = out->has_backlog ? r->qdisc_backlog : 0;
    out->down = r->oper[0] == 'd';
    return 0;
}

static int finish_flow(const struct ingest_ctx *c, const void *raw, void *entry)
{
    const struct raw_flow *r = raw;
    struct ingest_flow *out = entry;
    int kind = reportspec_source_parse(r->source);
    if (kind < 0)
        return ingest_cfail(c, "source", "'%s' is not pcap, erspan or sflow", r->source);
    /* Loss signals count packets of the flow in the interval; `pkts` is its
     * total since the probe first saw it, so a count above it is no
     * measurement (absent pkts is 0: such a flow can report none). */
    const struct {
        const char *key;
        uint64_t v;
    } loss[] = {{"retx_pkts", r->retx_pkts}, {"psn_oos", r->psn_oos}, {"naks", r->naks},
                {REPORTSPEC_HOLES, r->holes == UINT64_MAX ? 0 : r->holes}};
    /* Holes belong to an arrival: without the interface it came by they
     * place nothing, and an interface without its count says nothing. */
    if ((r->holes == UINT64_MAX) != !r->in_ifname[0])
        return ingest_cfail(c, r->in_ifname[0] ? REPORTSPEC_IN_IF : REPORTSPEC_HOLES, "given without %s",
                            r->in_ifname[0] ? REPORTSPEC_HOLES : REPORTSPEC_IN_IF);
    for (size_t i = 0; i < TF_ARRAY_SIZE(loss); i++)
        if (loss[i].v > r->pkts)
            return ingest_cfail(c, loss[i].key, "%llu exceeds the flow's pkts %llu", (unsigned long long)loss[i].v,
                         (unsigned long long)r->pkts);
    /* Tail resends are some of the retransmissions, never more. */
    if (r->tail_retx > r->retx_pkts)
        return ingest_cfail(c, REPORTSPEC_TAIL_RETX, "%llu exceeds the flow's retx_pkts %llu",
                            (unsigned long long)r->tail_retx, (unsigned long long)r->retx_pkts);
    int af, af2;
    uint8_t tmp[16];
    memset(&out->k, 0, sizeof(out->k));
    if (tf_addr_parse(r->src, &af, out->k.src) < 0)
        return ingest_cfail(c, "src", "'%s' is not an IP address", r->src);
    if (tf_addr_parse(r->dst, &af2, tmp) < 0)
        return ingest_cfail(c, "dst", "'%s' is not an IP address", r->dst);
    if (af != af2)
        return ingest_cfail(c, NULL, "src and dst of different families");
    memcpy(out->k.dst, tmp, 16);
    out->idx = (uint32_t)c->idx;
    out->k.af = (uint8_t)af;
    out->k.proto = (uint8_t)r->proto;
    out->k.sport = (uint16_t)r->sport;
    out->k.dport = (uint16_t)r->dport;
    out->k.qp = (uint32_t)r->qp;
    out->k.vlan = (uint16_t)r->vlan;
    memcpy(out->ifname, r->ifname, sizeof(out->ifname));
    out->dscp = (uint8_t)r->dscp;
    out->fat = r->fat;
    out->source = (uint8_t)kind;
    out->sampling = (uint32_t)r->sampling;
    out->bps = r->bps;
    out->ce_frac = r->ce_frac;
    out->bytes = r->bytes;
    out->pkts = r->pkts;
    out->cnp = r->cnp;
    out->retx_pkts = r->retx_pkts;
    out->tail_retx = r->tail_retx;
    out->psn_oos = r->psn_oos;
    out->naks = r->naks;
    out->holes = r->holes == UINT64_MAX ? 0 : r->holes;
    memcpy(out->in_ifname, r->in_ifname, sizeof(out->in_ifname));
    return 0;
}

static const struct raw_link link_defaults = {.rx_bps = -1, .oper = "up", .qdisc_drops = UINT64_MAX,
                                             .qdisc_backlog = UINT64_MAX};
static const struct raw_flow flow_defaults = {.source = "pcap", .sampling = 1, .holes = UINT64_MAX};

const struct ingest_list_kind ingest_links_kind = {"links", link_fields, TF_ARRAY_SIZE(link_fields),
                                                   &link_defaults, sizeof(struct raw_link),
                                                   sizeof(struct ingest_link), finish_link};
const struct ingest_list_kind ingest_flows_kind = {"flows", flow_fields, TF_ARRAY_SIZE(flow_fields),
                                                   &flow_defaults, sizeof(struct raw_flow),
                                                   sizeof(struct ingest_flow), finish_flow};

_Static_assert(sizeof(struct raw_link) <= INGEST_RAW_MAX && sizeof(struct raw_flow) <= INGEST_RAW_MAX,
               "union ingest_raw holds any entry's raw form");

void ingest_raw_init(const struct ingest_list_kind *k, union ingest_raw *raw)
{
    memcpy(raw, k->defaults, k->raw_size);
}

void ingest_list_set(struct ingest_report *r, const struct ingest_list_kind *k, const struct ingest_list *l)
{
    if (k == &ingest_flows_kind) {
        r->flows = l->a;
        r->nflows = l->n;
    } else {
        r->links = l->a;
        r->nlinks = l->n;
    }
}

/* Zeroed, as calloc would leave it. */
void *ingest_list_add(struct ingest_list *l, size_t size)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        void *na = realloc(l->a, nc * size);
        if (!na)
            return NULL;
        l->a = na;
        l->cap = nc;
    }
    void *entry = (char *)l->a + l->n * size;
    memset(entry, 0, size);
    return entry;
}

/* ---- the bounds an entry's link sets (ingest_schema.h) ------------------ */

struct bound_check {
    const char *key;
    double v, bound;
};

static const char *entry_bound(const struct topo *t, uint32_t dir, const struct bound_check *c, size_t n,
                               char *why, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (c[i].bound <= 0 || c[i].v <= c[i].bound)
            continue;
        if (why)
            snprintf(why, len, "%g beyond the bound %g (%g times what %s -> %s carries at %g Gb/s%s)", c[i].v,
                     c[i].bound, REPORTSPEC_LINK_SLACK, t->nodes[topo_dir_from(t, dir)].name,
                     t->nodes[topo_dir_to(t, dir)].name, topo_dir_gbps(t, dir),
                     strstr(c[i].key, "bps") ? "" : ", in packets of the interval, both ways");
        return c[i].key;
    }
    return NULL;
}

const char *ingest_link_bound(const struct topo *t, uint32_t dir, const struct ingest_link *l, double interval_s,
                              char *why, size_t len)
{
    double cap = topo_dir_gbps(t, dir) * 1e9, pk = reportspec_pkts_bound(2 * cap, interval_s);
    double flaps = reportspec_carrier_bound(interval_s);
    if (flaps > 0 && (double)l->carrier_changes > flaps) {
        if (why)
            snprintf(why, len, "%llu beyond the bound %g (%g per second over the interval of %g s)",
                     (unsigned long long)l->carrier_changes, flaps, REPORTSPEC_MAX_CARRIER_HZ, interval_s);
        return "carrier_changes";
    }
    double queue = reportspec_backlog_bound(cap);
    if ((double)l->qdisc_backlog > queue) {
        if (why)
            snprintf(why, len, "%llu beyond the bound %g (%g s of what %s -> %s carries at %g Gb/s)",
                     (unsigned long long)l->qdisc_backlog, queue, REPORTSPEC_MAX_QUEUE_S,
                     t->nodes[topo_dir_from(t, dir)].name, t->nodes[topo_dir_to(t, dir)].name, topo_dir_gbps(t, dir));
        return "qdisc_backlog";
    }
    const struct bound_check c[] = {
        {"tx_bps", l->tx_bps, reportspec_rate_bound(cap)},
        {"rx_bps", l->rx_bps, reportspec_rate_bound(cap)},
        {"drops", (double)l->drops, pk},
        {"errors", (double)l->errors, pk},
        {"qdisc_drops", (double)l->qdisc_drops, pk},
        {"ce_pkts", (double)l->ce_pkts, pk},
    };
    return entry_bound(t, dir, c, TF_ARRAY_SIZE(c), why, len);
}

const char *ingest_flow_bound(const struct topo *t, uint32_t dir, const struct ingest_flow *f, char *why, size_t len)
{
    const struct bound_check c[] = {{"bps", f->bps, reportspec_rate_bound(topo_dir_gbps(t, dir) * 1e9)}};
    return entry_bound(t, dir, c, TF_ARRAY_SIZE(c), why, len);
}

void ingest_batch_free(struct ingest_batch *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->r[i].links);
        free(b->r[i].flows);
    }
    b->n = 0;
}
