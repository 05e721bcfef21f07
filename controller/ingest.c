/*
 * ingest: see ingest.h. Every field is checked for type and bounds before it
 * is stored, and every message names the field by its JSON path. A
 * violation in the body's structure or in a report's own members aborts the
 * whole batch (nothing applied); one inside a list entry drops that entry
 * (struct ingest_refusals) and parsing goes on with the next.
 */
#include "controller/ingest.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/ratelog.h"
#include "common/reportspec.h"
#include "common/util.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/jsonarena.h"
#include "controller/jsonscan.h"
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

/* ---- the report schema: one table per object, read by both parsers ---- */

/* Two parsers fill a batch (see ingest.h): the scanner (jsonscan) for the
 * texts it takes, jansson for every other. Both read members through the
 * same tables and check them with the same check_field(), and entries go
 * through the same finish_*(), so that a value is judged alike whichever
 * parser read it; jansson alone writes the messages a client sees, since
 * the scanner hands every text it finds wrong to jansson. */

/* Where members are read: `at` is the JSON path of the enclosing object
 * ("" for the top report), so that messages read "flows[3].bps: negative -1". */
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

/* Records "PATH.KEY: WHAT" (or "PATH: WHAT" when key is NULL) and returns
 * the error code. */
static int cfail(const struct ctx *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cfail(const struct ctx *c, const char *key, const char *fmt, ...)
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
    return fail(c->e, INGEST_BAD_FIELD, "%s: %s", c->e->path, what);
}

/* Keeps e's message as an entry refused (counted always, named while there
 * is room) and clears e, so that parsing goes on. */
static void refuse_entry(struct ingest_refusals *r, struct ingest_error *e)
{
    if (r->kept < INGEST_REFUSED_KEEP) {
        tf_strlcpy(r->e[r->kept].path, e->path, sizeof(r->e[r->kept].path));
        tf_strlcpy(r->e[r->kept].msg, e->msg, sizeof(r->e[r->kept].msg));
        r->kept++;
    }
    r->n++;
    memset(e, 0, sizeof(*e));
}

enum fkind { F_STR, F_INT, F_NUM, F_BOOL };

/* A member: absent is an error only when `need` is set (else the entry
 * keeps its default); F_NUM takes min..max, F_INT imin..imax; F_STR, a
 * name or address, 1..size-1 printable ASCII bytes without spaces. The
 * value is stored at `off` in the entry's raw form. */
struct field {
    const char *key;
    unsigned char klen;
    unsigned char kind;
    bool need;
    double min, max;
    long long imin, imax;
    size_t off, size;
};

#define F_AT(T, m) offsetof(T, m), sizeof(((T *)0)->m)
#define FSTR(T, k, need, m) {k, sizeof(k) - 1, F_STR, need, 0, 0, 0, 0, F_AT(T, m)}
#define FINT(T, k, need, lo, hi, m) {k, sizeof(k) - 1, F_INT, need, 0, 0, lo, hi, F_AT(T, m)}
#define FNUM(T, k, need, lo, hi, m) {k, sizeof(k) - 1, F_NUM, need, lo, hi, 0, 0, F_AT(T, m)}
#define FBOOL(T, k, m) {k, sizeof(k) - 1, F_BOOL, false, 0, 0, 0, 0, F_AT(T, m)}

/* jansson's integers are what the scanner reads as long long. */
_Static_assert(JSON_INTEGER_IS_LONG_LONG, "json_int_t is long long");

/* jansson refuses nesting deeper than this while it parses (its recursion is
 * the only unbounded thing in it); a report needs 5 levels. */
_Static_assert(JSON_PARSER_MAX_DEPTH <= 4096, "jansson's depth bound is what bounds the parser's stack");

/* A link or flow entry as its members give it, before the checks across
 * members (finish_link, finish_flow). */
struct raw_link {
    char ifname[STATE_IF_LEN];
    double tx_bps, rx_bps;       /* rx_bps -1: absent */
    uint64_t drops, ce_pkts, errors, carrier_changes, qdisc_drops;
    char oper[8];
};

struct raw_flow {
    char src[48], dst[48], ifname[STATE_IF_LEN], source[8];
    uint64_t proto, sport, dport, qp, vlan, dscp, bytes, pkts, cnp, sampling;
    uint64_t retx_pkts, psn_oos, naks;
    double bps, ce_frac;
    bool fat;
};

/* In the order their errors are reported: probe first, so that an error
 * in another member can name the report's probe. */
static const struct field report_fields[] = {
    FSTR(struct ingest_report, "probe", true, probe),
    FINT(struct ingest_report, "schema", false, 0, INT32_MAX, schema),
    FSTR(struct ingest_report, "instance", false, instance),
    FNUM(struct ingest_report, "ts", false, 0, 1e11, ts),
    FNUM(struct ingest_report, "interval_s", false, 0, 86400, interval_s),
};

/* The checks across a report's own members, after they are read. */
static int finish_report(const struct ctx *c, const struct ingest_report *r)
{
    if (r->schema != REPORTSPEC_SCHEMA)
        return cfail(c, "schema", "%llu is not a schema this controller reads (%d)", (unsigned long long)r->schema,
                     REPORTSPEC_SCHEMA);
    return 0;
}

static const struct field link_fields[] = {
    FSTR(struct raw_link, "if", true, ifname),
    FNUM(struct raw_link, "tx_bps", false, 0, INGEST_MAX_BPS, tx_bps),
    FNUM(struct raw_link, "rx_bps", false, 0, INGEST_MAX_BPS, rx_bps),
    FINT(struct raw_link, "drops", false, 0, INGEST_MAX_COUNT, drops),
    FINT(struct raw_link, "ce_pkts", false, 0, INGEST_MAX_COUNT, ce_pkts),
    FINT(struct raw_link, "errors", false, 0, INGEST_MAX_COUNT, errors),
    FINT(struct raw_link, "carrier_changes", false, 0, INGEST_MAX_COUNT, carrier_changes),
    FINT(struct raw_link, "qdisc_drops", false, 0, INGEST_MAX_COUNT, qdisc_drops),
    FSTR(struct raw_link, "oper", false, oper),
};

/* src, dst, proto, if, bps are required. */
static const struct field flow_fields[] = {
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
    FINT(struct raw_flow, "psn_oos", false, 0, INGEST_MAX_COUNT, psn_oos),
    FINT(struct raw_flow, "naks", false, 0, INGEST_MAX_COUNT, naks),
};

/* The scanner marks the members it has seen in a 32-bit mask. */
_Static_assert(TF_ARRAY_SIZE(flow_fields) <= 32 && TF_ARRAY_SIZE(report_fields) <= 30, "seen masks");

/* Checks v against f and stores it in raw; 0, or the error recorded. */
static int check_field(const struct ctx *c, const struct field *f, const struct jsonscan_value *v, void *raw)
{
    char *out = (char *)raw + f->off;
    switch (f->kind) {
    case F_NUM: {
        if (v->type != JSONSCAN_INTEGER && v->type != JSONSCAN_REAL)
            return cfail(c, f->key, "must be a number");
        double d = v->type == JSONSCAN_INTEGER ? (double)v->i : v->d;
        if (!isfinite(d)) /* both parsers refuse overflowing reals; kept in case that changes */
            return cfail(c, f->key, "not finite");
        if (d < f->min)
            return cfail(c, f->key, "%s %g", d < 0 ? "negative" : "below minimum", d);
        if (d > f->max)
            return cfail(c, f->key, "%g exceeds the maximum %g", d, f->max);
        memcpy(out, &d, sizeof(d));
        return 0;
    }
    case F_INT: {
        /* 1.0 and 1e3 are reals in JSON's grammar and are refused: counters
         * and ports are never written that way. Integers beyond long long
         * are a syntax error ("too big integer"). */
        if (v->type == JSONSCAN_REAL)
            return cfail(c, f->key, "must be an integer");
        if (v->type != JSONSCAN_INTEGER)
            return cfail(c, f->key, "must be a number");
        if (v->i < f->imin)
            return cfail(c, f->key, "%s %lld", v->i < 0 ? "negative" : "below minimum", v->i);
        if (v->i > f->imax)
            return cfail(c, f->key, "%lld exceeds the maximum %lld", v->i, f->imax);
        uint64_t u = (uint64_t)v->i;
        memcpy(out, &u, sizeof(u));
        return 0;
    }
    case F_STR:
        if (v->type != JSONSCAN_STRING)
            return cfail(c, f->key, "must be a string");
        if (v->len == 0 || v->len >= f->size)
            return cfail(c, f->key, "length %zu not in 1..%zu", v->len, f->size - 1);
        memcpy(out, v->s, v->len);
        out[v->len] = '\0';
        if (memchr(v->s, '\0', v->len) || !reportspec_name_ok(out, f->size - 1))
            return cfail(c, f->key, "invalid character");
        return 0;
    default: {
        if (v->type != JSONSCAN_TRUE && v->type != JSONSCAN_FALSE)
            return cfail(c, f->key, "must be true or false");
        bool b = v->type == JSONSCAN_TRUE;
        memcpy(out, &b, sizeof(b));
        return 0;
    }
    }
}

static int finish_link(const struct ctx *c, const void *raw, void *entry)
{
    const struct raw_link *r = raw;
    struct ingest_link *out = entry;
    if (strcmp(r->oper, "up") && strcmp(r->oper, "down"))
        return cfail(c, "oper", "'%s' is not up or down", r->oper);
    out->idx = (uint32_t)c->idx;
    memcpy(out->ifname, r->ifname, sizeof(out->ifname));
    out->tx_bps = r->tx_bps;
    out->has_rx = r->rx_bps >= 0;
    out->rx_bps = r->rx_bps >= 0 ? r->rx_bps : 0;
    out->drops = r->drops;
    out->ce_pkts = r->ce_pkts;
    out->errors = r->errors;
    out->carrier_changes = r->carrier_changes;
    out->qdisc_drops = r->qdisc_drops;
    out->down = r->oper[0] == 'd';
    return 0;
}

static int finish_flow(const struct ctx *c, const void *raw, void *entry)
{
    const struct raw_flow *r = raw;
    struct ingest_flow *out = entry;
    int kind = reportspec_source_parse(r->source);
    if (kind < 0)
        return cfail(c, "source", "'%s' is not pcap, erspan or sflow", r->source);
    /* Loss signals count packets of the flow in the interval; `pkts` is its
     * total since the probe first saw it, so a count above it is no
     * measurement (absent pkts is 0: such a flow can report none). */
    const struct {
        const char *key;
        uint64_t v;
    } loss[] = {{"retx_pkts", r->retx_pkts}, {"psn_oos", r->psn_oos}, {"naks", r->naks}};
    for (size_t i = 0; i < TF_ARRAY_SIZE(loss); i++)
        if (loss[i].v > r->pkts)
            return cfail(c, loss[i].key, "%llu exceeds the flow's pkts %llu", (unsigned long long)loss[i].v,
                         (unsigned long long)r->pkts);
    int af, af2;
    uint8_t tmp[16];
    memset(&out->k, 0, sizeof(out->k));
    if (tf_addr_parse(r->src, &af, out->k.src) < 0)
        return cfail(c, "src", "'%s' is not an IP address", r->src);
    if (tf_addr_parse(r->dst, &af2, tmp) < 0)
        return cfail(c, "dst", "'%s' is not an IP address", r->dst);
    if (af != af2)
        return cfail(c, NULL, "src and dst of different families");
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
    out->psn_oos = r->psn_oos;
    out->naks = r->naks;
    return 0;
}

/* A report's "links" or "flows": what an entry holds and how it is built. */
struct list_kind {
    const char *name;
    const struct field *fields;
    size_t nfields;
    const void *defaults;        /* the raw form before any member is read */
    size_t raw_size, entry_size;
    int (*finish)(const struct ctx *c, const void *raw, void *entry);
};

static const struct raw_link link_defaults = {.rx_bps = -1, .oper = "up"};
static const struct raw_flow flow_defaults = {.source = "pcap", .sampling = 1};

static const struct list_kind links_kind = {"links", link_fields, TF_ARRAY_SIZE(link_fields), &link_defaults,
                                            sizeof(struct raw_link), sizeof(struct ingest_link), finish_link};
static const struct list_kind flows_kind = {"flows", flow_fields, TF_ARRAY_SIZE(flow_fields), &flow_defaults,
                                            sizeof(struct raw_flow), sizeof(struct ingest_flow), finish_flow};

union raw_entry {
    struct raw_link link;
    struct raw_flow flow;
};

/* A list being filled: entries are malloc'd (the batch outlives the parse)
 * and handed to the report (set_list) whatever happens, so that
 * ingest_batch_free releases them. */
struct list_out {
    void *a;
    size_t n, cap;
};

static void set_list(struct ingest_report *r, bool flows, const struct list_out *l)
{
    if (flows) {
        r->flows = l->a;
        r->nflows = l->n;
    } else {
        r->links = l->a;
        r->nlinks = l->n;
    }
}

/* Room for one more entry, zeroed (as calloc would leave it). */
static void *list_add(struct list_out *l, size_t size)
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

/* ---- parser 1: jansson (arena-allocated), any valid JSON -------------- */

static void value_of_json(const json_t *j, struct jsonscan_value *v)
{
    memset(v, 0, sizeof(*v));
    switch (json_typeof(j)) {
    case JSON_OBJECT: v->type = JSONSCAN_OBJECT; break;
    case JSON_ARRAY: v->type = JSONSCAN_ARRAY; break;
    case JSON_STRING:
        v->type = JSONSCAN_STRING;
        v->s = json_string_value(j);
        v->len = json_string_length(j);
        break;
    case JSON_INTEGER:
        v->type = JSONSCAN_INTEGER;
        v->i = json_integer_value(j);
        break;
    case JSON_REAL:
        v->type = JSONSCAN_REAL;
        v->d = json_real_value(j);
        break;
    case JSON_TRUE: v->type = JSONSCAN_TRUE; break;
    case JSON_FALSE: v->type = JSONSCAN_FALSE; break;
    default: v->type = JSONSCAN_NULL; break;
    }
}

/* Every field of the table, looked up in table order so that the first
 * error in that order is the one reported. */
static int read_fields_json(const struct ctx *c, const json_t *o, const struct field *fl, size_t n, void *raw)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *j = json_object_get(o, fl[i].key);
        if (!j) {
            if (fl[i].need)
                return cfail(c, fl[i].key, "required");
            continue;
        }
        struct jsonscan_value v;
        value_of_json(j, &v);
        int rc = check_field(c, &fl[i], &v, raw);
        if (rc)
            return rc;
    }
    return 0;
}

/* A report's "links" or "flows": an array of objects, counted against its
 * bound before any entry is judged (413, not a field error, for a probe that
 * sends too many). *budget is how many flows the batch may still hold. */
static int parse_list(const json_t *r, const char *at, const struct list_kind *k, size_t *budget,
                      struct ingest_report *out, struct ingest_refusals *refused, struct ingest_error *e)
{
    bool flows = k == &flows_kind;
    const json_t *a = json_object_get(r, k->name);
    if (!a)
        return 0;
    if (!json_is_array(a))
        return fail(e, INGEST_BAD_FIELD, "%s%s%s: must be an array", at, at[0] ? "." : "", k->name);
    size_t count = json_array_size(a);
    if (flows && count > *budget)
        return fail(e, INGEST_TOO_MANY, "%s%sflows: %zu entries, more than the limit (max_flows_per_report)",
                    at, at[0] ? "." : "", count);
    if (!flows && count > INGEST_MAX_LINKS)
        return fail(e, INGEST_TOO_MANY, "%s%slinks: %zu entries, at most %d", at, at[0] ? "." : "", count,
                    INGEST_MAX_LINKS);
    if (count == 0)
        return 0;
    struct list_out l = {calloc(count, k->entry_size), 0, count};
    if (!l.a)
        return fail(e, INGEST_BAD_FIELD, "out of memory for %zu %s", count, k->name);
    if (flows)
        *budget -= count;
    struct ctx c = {at, k->name, 0, e};
    for (size_t i = 0; i < count; i++) {
        c.idx = i;
        const json_t *o = json_array_get(a, i);
        union raw_entry raw;
        memcpy(&raw, k->defaults, k->raw_size);
        int rc = json_is_object(o) ? 0 : cfail(&c, NULL, "must be an object");
        if (rc == 0)
            rc = read_fields_json(&c, o, k->fields, k->nfields, &raw);
        if (rc == 0)
            rc = k->finish(&c, &raw, list_add(&l, k->entry_size));
        if (rc == 0)
            l.n++;
        else
            refuse_entry(refused, e); /* this entry only: the next is judged on its own */
    }
    set_list(out, flows, &l);
    return 0;
}

/* One report object. at: "" for a lone report (whose own members are then
 * named "report.probe"), "reports[2]" in a batch. */
static int parse_report(const json_t *r, const char *at, size_t *budget, struct ingest_report *out,
                        struct ingest_refusals *refused, struct ingest_error *e)
{
    const struct ctx c = {at[0] ? at : "report", NULL, 0, e};
    out->schema = REPORTSPEC_SCHEMA;
    int rc = read_fields_json(&c, r, report_fields, TF_ARRAY_SIZE(report_fields), out);
    if (rc == 0)
        rc = finish_report(&c, out);
    if (rc == 0)
        rc = parse_list(r, at, &links_kind, budget, out, refused, e);
    if (rc == 0)
        rc = parse_list(r, at, &flows_kind, budget, out, refused, e);
    if (rc)
        tf_strlcpy(e->probe, out->probe, sizeof(e->probe));
    return rc;
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
        b->lone = true;
        return parse_report(root, "", budget, &b->r[0], &b->refused, e);
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
        int rc = parse_report(r, at, budget, &b->r[i], &b->refused, e);
        if (rc)
            return rc;
    }
    return 0;
}

int ingest_parse_jansson(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                         struct ingest_error *e)
{
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
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

/* ---- parser 2: the scanner, no tree, the subset jsonscan takes -------- */

struct scan {
    struct jsonscan js;
    struct ingest_error *e;      /* check_field's scratch: any error means "jansson decides" */
    size_t budget;               /* flows the batch may still hold */
};

/* The field called key, looked for from the one after the last found:
 * probes write members in one order, so the first compare usually hits. */
static int field_find(const struct field *fl, size_t n, size_t *hint, const char *key, size_t klen)
{
    for (size_t k = 0, i = *hint; k < n; k++, i = i + 1 == n ? 0 : i + 1)
        if (fl[i].klen == klen && memcmp(fl[i].key, key, klen) == 0) {
            *hint = i + 1 == n ? 0 : i + 1;
            return (int)i;
        }
    return -1;
}

/* One member of object obj: a field of fl checked into raw (each at most
 * once: *seen), or an unknown one skipped. */
static int scan_member(struct scan *sc, const struct ctx *c, uint32_t obj, const struct field *fl, size_t n,
                       size_t *hint, uint32_t *seen, const char *key, size_t klen, void *raw)
{
    struct jsonscan_value v;
    int i = field_find(fl, n, hint, key, klen), rc = jsonscan_value(&sc->js, &v);
    if (rc < 0)
        return rc;
    if (i < 0) {
        rc = jsonscan_key_unique(&sc->js, obj, key, klen);
        return rc < 0 ? rc : jsonscan_skip(&sc->js, &v);
    }
    if (*seen & (1u << i))
        return -EEXIST; /* a repeated key: jansson names it */
    *seen |= 1u << i;
    return check_field(c, &fl[i], &v, raw);
}

static bool have_required(const struct field *fl, size_t n, uint32_t seen)
{
    for (size_t i = 0; i < n; i++)
        if (fl[i].need && !(seen & (1u << i)))
            return false;
    return true;
}

/* One entry of a list: an object of k's fields. */
static int scan_entry(struct scan *sc, const struct ctx *c, const struct list_kind *k, void *entry)
{
    struct jsonscan_value o;
    int rc = jsonscan_value(&sc->js, &o);
    if (rc < 0 || o.type != JSONSCAN_OBJECT)
        return rc < 0 ? rc : -EINVAL;
    union raw_entry raw;
    memcpy(&raw, k->defaults, k->raw_size);
    uint32_t seen = 0;
    size_t hint = 0;
    bool more = true;
    for (size_t i = 0; rc == 0; i++) {
        const char *key;
        size_t klen;
        rc = jsonscan_member(&sc->js, i, &more, &key, &klen);
        if (rc < 0 || !more)
            break;
        rc = scan_member(sc, c, o.obj, k->fields, k->nfields, &hint, &seen, key, klen, &raw);
    }
    if (rc == 0 && !have_required(k->fields, k->nfields, seen))
        rc = -EINVAL;
    return rc ? rc : k->finish(c, &raw, entry);
}

/* A report's "links" or "flows" array; beyond its bound, jansson gives the 413. */
static int scan_list(struct scan *sc, const char *at, const struct list_kind *k, struct ingest_report *out)
{
    bool flows = k == &flows_kind, more = true;
    size_t max = flows ? sc->budget : INGEST_MAX_LINKS;
    struct jsonscan_value a;
    int rc = jsonscan_value(&sc->js, &a);
    if (rc < 0 || a.type != JSONSCAN_ARRAY)
        return rc < 0 ? rc : -EINVAL;
    struct list_out l = {0};
    struct ctx c = {at, k->name, 0, sc->e};
    for (size_t i = 0; rc == 0; i++) {
        rc = jsonscan_element(&sc->js, i, &more);
        if (rc < 0 || !more)
            break;
        void *entry = i < max ? list_add(&l, k->entry_size) : NULL;
        c.idx = i;
        rc = entry ? scan_entry(sc, &c, k, entry) : -E2BIG;
        l.n += rc == 0;
    }
    set_list(out, flows, &l);
    if (flows)
        sc->budget -= l.n;
    return rc;
}

static bool key_is(const char *key, size_t klen, const char *name)
{
    return klen == strlen(name) && memcmp(key, name, klen) == 0;
}

/* The members of report object obj, opened by the caller. lone: the body
 * is this report, where a "reports" member would make it a batch. */
static int scan_report(struct scan *sc, uint32_t obj, bool lone, const char *at, struct ingest_report *out)
{
    const struct ctx c = {at[0] ? at : "report", NULL, 0, sc->e};
    const size_t n = TF_ARRAY_SIZE(report_fields);
    const uint32_t links_bit = 1u << n, flows_bit = 1u << (n + 1);
    uint32_t seen = 0;
    size_t hint = 0;
    bool more = true;
    int rc = 0;
    out->schema = REPORTSPEC_SCHEMA;
    for (size_t i = 0; rc == 0; i++) {
        const char *key;
        size_t klen;
        rc = jsonscan_member(&sc->js, i, &more, &key, &klen);
        if (rc < 0 || !more)
            break;
        bool links = key_is(key, klen, "links"), flows = !links && key_is(key, klen, "flows");
        uint32_t bit = links ? links_bit : flows ? flows_bit : 0;
        if (seen & bit)
            rc = -EEXIST;
        else if (bit)
            rc = scan_list(sc, at, links ? &links_kind : &flows_kind, out);
        else if (lone && key_is(key, klen, "reports"))
            rc = -EINVAL; /* a batch after all, its reports not first: jansson's */
        else
            rc = scan_member(sc, &c, obj, report_fields, n, &hint, &seen, key, klen, out);
        seen |= bit;
    }
    if (rc == 0 && (!have_required(report_fields, n, seen) || finish_report(&c, out)))
        rc = -EINVAL; /* jansson words it */
    return rc;
}

/* {"reports": [...], ...}: the batch's members after "reports" are skipped. */
static int scan_batch(struct scan *sc, uint32_t root, struct ingest_batch *b)
{
    const char *key;
    size_t klen;
    bool more = true;
    struct jsonscan_value a;
    int rc = jsonscan_member(&sc->js, 0, &more, &key, &klen);
    if (rc == 0)
        rc = jsonscan_key_unique(&sc->js, root, key, klen); /* "reports", should it come again */
    if (rc == 0)
        rc = jsonscan_value(&sc->js, &a);
    if (rc == 0 && a.type != JSONSCAN_ARRAY)
        rc = -EINVAL;
    for (size_t i = 0; rc == 0; i++) {
        rc = jsonscan_element(&sc->js, i, &more);
        if (rc < 0 || !more)
            break;
        struct jsonscan_value r;
        if (i >= INGEST_MAX_REPORTS || (rc = jsonscan_value(&sc->js, &r)) < 0 || r.type != JSONSCAN_OBJECT)
            return rc < 0 ? rc : -EINVAL;
        char at[32];
        snprintf(at, sizeof(at), "reports[%zu]", i);
        b->n++; /* counted before it is filled, so that a failure frees it */
        rc = scan_report(sc, r.obj, false, at, &b->r[i]);
    }
    if (rc == 0 && b->n == 0)
        rc = -EINVAL;
    for (size_t i = 1; rc == 0; i++) {
        rc = jsonscan_member(&sc->js, i, &more, &key, &klen);
        if (rc < 0 || !more)
            break;
        if ((rc = jsonscan_key_unique(&sc->js, root, key, klen)) == 0 && (rc = jsonscan_value(&sc->js, &a)) == 0)
            rc = jsonscan_skip(&sc->js, &a);
    }
    return rc;
}

int ingest_parse_scan(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                      struct ingest_error *e)
{
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
    struct scan sc = {.e = e, .budget = max_flows};
    jsonscan_init(&sc.js, body, len);
    struct jsonscan_value root;
    int rc = jsonscan_value(&sc.js, &root);
    if (rc == 0 && root.type != JSONSCAN_OBJECT)
        rc = -EINVAL;
    if (rc == 0 && jsonscan_first_key_is(&sc.js, "reports")) {
        rc = scan_batch(&sc, root.obj, b);
    } else if (rc == 0) {
        b->n = 1;
        b->lone = true;
        rc = scan_report(&sc, root.obj, true, "", &b->r[0]);
    }
    if (rc == 0)
        rc = jsonscan_end(&sc.js);
    jsonscan_free(&sc.js);
    if (rc == 0)
        return 0;
    ingest_batch_free(b);
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
    return -EAGAIN;
}

int ingest_parse(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                 struct ingest_error *e)
{
    if (len > INGEST_MAX_BODY) {
        memset(b, 0, sizeof(*b));
        memset(e, 0, sizeof(*e));
        return fail(e, INGEST_TOO_MANY, "body: %zu bytes, more than %u", len, INGEST_MAX_BODY);
    }
    int rc = ingest_parse_scan(body, len, max_flows, b, e);
    return rc == -EAGAIN ? ingest_parse_jansson(body, len, max_flows, b, e) : rc;
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
 * flow directions, flow locations, CE per link (which depends on the
 * report alone), and which entries the link they are on refuses. */
struct resolved {
    uint32_t node;
    uint32_t *link_dir;          /* nlinks, TOPO_NONE unmapped */
    double *link_ce;
    bool *link_bad, *flow_bad;   /* beyond what their link carries (entry_bound) */
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

/* The bounds an entry's link sets (reportspec): a rate above
 * reportspec_rate_bound of what its direction carries, a per-interval
 * packet counter (tx+rx drops and errors, captured CE packets: both
 * directions) above reportspec_pkts_bound of both directions over the
 * report's interval; and carrier changes above reportspec_carrier_bound of
 * the interval (a property of the interface, not of the link's speed).
 * Returns the member at fault and writes the reason into why (may be
 * NULL: only the verdict), or NULL when every member is within. */
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

static const char *link_bound(const struct topo *t, uint32_t dir, const struct ingest_link *l, double interval_s,
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

static const char *flow_bound(const struct topo *t, uint32_t dir, const struct ingest_flow *f, char *why, size_t len)
{
    const struct bound_check c[] = {{"bps", f->bps, reportspec_rate_bound(topo_dir_gbps(t, dir) * 1e9)}};
    return entry_bound(t, dir, c, TF_ARRAY_SIZE(c), why, len);
}

static void resolve_report(struct state *s, const struct topo *t, uint32_t node, const struct ingest_report *r,
                           struct resolved *x)
{
    struct if_memo m = {0};
    x->node = node;
    for (size_t i = 0; i < r->nflows; i++) {
        x->egress[i] = memo_dir(&m, t, node, r->flows[i].ifname);
        x->flow_bad[i] = x->egress[i] != TOPO_NONE && flow_bound(t, x->egress[i], &r->flows[i], NULL, 0);
        if (!state_loc_cached(s, &r->flows[i].k, node, x->egress[i], &x->loc[i]))
            state_loc_resolve(t, &r->flows[i].k, node, x->egress[i], &x->loc[i]);
    }
    for (size_t j = 0; j < r->nlinks; j++) {
        x->link_dir[j] = memo_dir(&m, t, node, r->links[j].ifname);
        x->link_bad[j] = x->link_dir[j] != TOPO_NONE &&
                         link_bound(t, x->link_dir[j], &r->links[j], r->interval_s, NULL, 0);
        double bps = 0, ce = 0;
        for (size_t i = 0; i < r->nflows; i++)
            if (!x->flow_bad[i] && strcmp(r->flows[i].ifname, r->links[j].ifname) == 0) {
                bps += r->flows[i].bps;
                ce += r->flows[i].bps * r->flows[i].ce_frac;
            }
        x->link_ce[j] = bps > 0 ? ce / bps : 0;
    }
}

/* An entry the topology's bounds refuse, named by its path in the body. */
static void refuse_bound(struct ingest_refusals *r, const struct ingest_batch *b, size_t report, const char *list,
                         size_t idx, const char *key, const char *why)
{
    struct ingest_error e = {0};
    char at[32] = "";
    if (!b->lone)
        snprintf(at, sizeof(at), "reports[%zu].", report);
    snprintf(e.path, sizeof(e.path), "%s%s[%zu].%s", at, list, idx, key);
    snprintf(e.msg, sizeof(e.msg), "%s: %s", e.path, why);
    refuse_entry(r, &e);
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
    /* Several probes see one flow: merged, not overwritten (a remnant on a
     * path the flow has left is dropped whole). */
    if (!state_flow_observe(s, f, inserted, node, egress, in->ifname, loc, in->bps, now)) {
        res->flows++;
        return;
    }
    f->fat = in->fat;
    f->source = in->source;
    f->sampling = in->sampling;
    f->bps = in->bps;
    f->ce_frac = in->ce_frac;
    f->cnp = in->cnp;
    f->retx_pkts = in->retx_pkts;
    f->psn_oos = in->psn_oos;
    f->naks = in->naks;
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
                       double interval_s, double now, struct events *ev, struct ingest_result *res)
{
    if (dir == TOPO_NONE) {
        note_unmapped(&s->probes[node], res, l->ifname);
        return;
    }
    struct state_dir *d = &s->dirs[dir], *rev = &s->dirs[dir ^ 1];
    d->bps = l->tx_bps;
    d->tx_bytes += l->tx_bps * interval_s / 8;
    d->drops = l->drops;
    d->errors = l->errors;
    d->carrier_changes = l->carrier_changes;
    d->qdisc_drops = l->qdisc_drops;
    d->ce_frac = ce;
    d->measured = true;
    d->probe = node;
    d->last_update = now;
    /* The reverse direction belongs to the far end's probe when it has one. */
    if (l->has_rx && (!rev->measured || rev->probe == node || state_probe_stale(s, rev->probe, now))) {
        rev->bps = l->rx_bps;
        rev->tx_bytes += l->rx_bps * interval_s / 8;
        rev->measured = true;
        rev->probe = node;
        rev->last_update = now;
    }
    bool up = !l->down;
    if (d->probe_up != up && ev) {
        const struct topo *t = s->topo;
        events_add(ev, now, up ? "link_up" : "link_down", "%s -> %s (%s %s) reported %s",
                   t->nodes[topo_dir_from(t, dir)].name, t->nodes[topo_dir_to(t, dir)].name,
                   t->nodes[node].name, l->ifname, up ? "up" : "down");
    }
    d->probe_up = rev->probe_up = up;
    state_dir_eval(s, dir, now);
    state_dir_eval(s, dir ^ 1, now);
    res->links++;
}

/* Probe names to nodes; an unknown one fails the whole batch. */
static int resolve_nodes(const struct topo *t, const struct ingest_batch *b, uint32_t *nodes, struct ingest_error *e)
{
    for (size_t i = 0; i < b->n; i++) {
        nodes[i] = topo_node_by_name(t, b->r[i].probe);
        if (nodes[i] != TOPO_NONE)
            continue;
        tf_strlcpy(e->probe, b->r[i].probe, sizeof(e->probe));
        if (b->n > 1)
            return fail(e, INGEST_UNKNOWN, "reports[%zu].probe: '%s' is not a node of topology '%s'", i,
                        b->r[i].probe, t->name);
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

/* ---- whether a report may be applied: its time, its sender ------------ */

static void count(uint64_t *c)
{
    __atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* Who sent a report: the client's address, and the report's instance when
 * it names one (two processes on one host tell themselves apart by it). */
static void sender_id(const char *from, const struct ingest_report *r, char *id, size_t len)
{
    snprintf(id, len, "%s%s%s", from, r->instance[0] ? " " : "", r->instance);
}

/* Whether report r (path at: "report" or "reports[2]") may be applied
 * under its probe's name p, sent by id (NULL: not checked), at now; else
 * why not. The holder of a name keeps it while it is fresh (state's
 * staleness); a report's age is measured against the controller's clock,
 * so every bound on it allows the configured clock skew. Write lock. */
static enum ingest_err report_verdict(const struct state *s, const struct state_probe *p,
                                      const struct ingest_report *r, const char *at, const struct ingest_opts *o,
                                      const char *id, double now, char *why, size_t len)
{
    bool holder_fresh = p->sender[0] && p->last_seen > 0 && now - p->last_seen <= s->stale_after;
    if (id && holder_fresh && strcmp(p->sender, id)) {
        snprintf(why, len, "%s.probe: '%s' is reported by %s (last %.1f s ago); reports from %s under it are "
                 "refused until that sender has been silent for %g s", at, r->probe, p->sender, now - p->last_seen,
                 id, s->stale_after);
        return INGEST_CONFLICT;
    }
    if (!o || !o->check_ts || r->ts <= 0)
        return INGEST_OK;
    if (r->ts > now + o->clock_skew) {
        snprintf(why, len, "%s.ts: %.3f is %.1f s ahead of the controller's clock (ingest.clock_skew allows %g s)",
                 at, r->ts, r->ts - now, o->clock_skew);
        return INGEST_FUTURE;
    }
    if (now - r->ts > s->stale_after + o->clock_skew) {
        snprintf(why, len, "%s.ts: %.3f is %.1f s old, beyond the staleness window (%g s, plus ingest.clock_skew "
                 "%g s): not applied as current", at, r->ts, now - r->ts, s->stale_after, o->clock_skew);
        return INGEST_STALE;
    }
    bool same = !id || !p->sender[0] || !strcmp(p->sender, id); /* a new holder starts its own clock */
    if (same && p->last_ts > 0 && r->ts < p->last_ts) {
        snprintf(why, len, "%s.ts: %.3f is older than the last report applied for '%s' (%.3f, %.3f s later): not "
                 "applied over it", at, r->ts, r->probe, p->last_ts, p->last_ts - r->ts);
        return INGEST_OUT_OF_ORDER;
    }
    return INGEST_OK;
}

/* A report refused for its time or sender: counted, kept in res; a sender
 * refused for a name another holds is a probe_conflict event the first
 * time, and again only after it stopped trying for a staleness window. */
static void refuse_report(struct state *s, struct state_probe *p, const struct ingest_report *r, size_t index,
                          enum ingest_err kind, const char *id, const char *why, double now, struct events *ev,
                          struct ingest_result *res)
{
    count(&s->ingest_refused[kind]);
    count(&s->reports_rejected);
    if (kind == INGEST_CONFLICT) {
        if (strcmp(p->rival, id) || now - p->rival_seen > s->stale_after) {
            count(&s->probe_conflicts);
            tf_strlcpy(p->rival, id, sizeof(p->rival));
            if (ev)
                events_add(ev, now, "probe_conflict", "probe %s: %s reports under the name %s holds; refused "
                           "(409) until %s is silent for %g s", r->probe, id, p->sender, p->sender, s->stale_after);
        }
        p->rival_seen = now;
    }
    res->refused_reports[res->nrefused].index = index;
    res->refused_reports[res->nrefused].kind = kind;
    tf_strlcpy(res->refused_reports[res->nrefused].probe, r->probe, INGEST_NAME_LEN);
    tf_strlcpy(res->refused_reports[res->nrefused].msg, why, INGEST_WHY_LEN);
    res->nrefused++;
}

/* The name is id's from now on (a first sender, or one taking over from a
 * holder gone stale: the newest time applied was the other's clock). */
static void take_name(struct state_probe *p, const struct ingest_report *r, const char *id, double now)
{
    if (!strcmp(p->sender, id))
        return;
    if (p->sender[0])
        log_info("probe %s: now reported by %s (%s silent for %.1f s)", r->probe, id, p->sender,
                   now - p->last_seen);
    tf_strlcpy(p->sender, id, sizeof(p->sender));
    p->last_ts = 0;
}

int ingest_apply(struct state *s, const struct ingest_batch *b, double now, struct events *ev,
                 struct ingest_result *res, struct ingest_error *e)
{
    return ingest_apply_from(s, b, NULL, NULL, now, ev, res, e);
}

int ingest_apply_from(struct state *s, const struct ingest_batch *b, const struct ingest_opts *o, const char *from,
                      double now, struct events *ev, struct ingest_result *res, struct ingest_error *e)
{
    memset(res, 0, sizeof(*res));
    memset(e, 0, sizeof(*e));
    res->refused = b->refused;
    /* Scratch for the resolution, one block for the whole batch. */
    size_t nl = 0, nf = 0;
    for (size_t i = 0; i < b->n; i++) {
        nl += b->r[i].nlinks;
        nf += b->r[i].nflows;
    }
    struct resolved x[INGEST_MAX_REPORTS];
    uint32_t *ld = malloc((nl + 1) * sizeof(*ld)), *eg = malloc((nf + 1) * sizeof(*eg));
    double *lce = malloc((nl + 1) * sizeof(*lce));
    bool *bad = malloc(nl + nf + 1);
    struct state_loc *loc = malloc((nf + 1) * sizeof(*loc));
    if (!ld || !eg || !lce || !loc || !bad) {
        free(ld);
        free(eg);
        free(lce);
        free(bad);
        free(loc);
        return fail(e, INGEST_BAD_FIELD, "out of memory for %zu flows", nf);
    }
    for (size_t i = 0, ol = 0, of = 0; i < b->n; i++) {
        x[i] = (struct resolved){.link_dir = ld + ol, .link_ce = lce + ol, .link_bad = bad + ol,
                                 .flow_bad = bad + nl + of, .egress = eg + of, .loc = loc + of};
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
    t = s->topo;
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        const struct ingest_report *r = &b->r[i];
        uint32_t node = x[i].node;
        struct state_probe *p = &s->probes[node];
        char at[32], id[STATE_SENDER_LEN] = "", why[INGEST_WHY_LEN];
        snprintf(at, sizeof(at), b->lone ? "report" : "reports[%zu]", i);
        if (from)
            sender_id(from, r, id, sizeof(id));
        enum ingest_err v = report_verdict(s, p, r, at, o, from ? id : NULL, now, why, sizeof(why));
        if (v != INGEST_OK) {
            refuse_report(s, p, r, i, v, id, why, now, ev, res);
            continue;
        }
        if (from)
            take_name(p, r, id, now);
        if (r->ts > p->last_ts)
            p->last_ts = r->ts;
        if (r->ts <= 0) {
            res->no_ts++;
            count(&s->reports_no_ts);
        }
        p->nunmapped = 0;
        for (size_t j = 0; j < r->nlinks; j++) {
            const char *key = x[i].link_bad[j] ? link_bound(t, x[i].link_dir[j], &r->links[j], r->interval_s, why,
                                                            sizeof(why)) : NULL;
            if (key)
                refuse_bound(&res->refused, b, i, "links", r->links[j].idx, key, why);
            else
                apply_link(s, node, &r->links[j], x[i].link_dir[j], x[i].link_ce[j], r->interval_s, now, ev, res);
        }
        for (size_t j = 0; j < r->nflows; j++) {
            const char *key = x[i].flow_bad[j] ? flow_bound(t, x[i].egress[j], &r->flows[j], why, sizeof(why)) : NULL;
            if (key) {
                refuse_bound(&res->refused, b, i, "flows", r->flows[j].idx, key, why);
                res->refused_flows++;
            } else {
                apply_flow(s, node, &r->flows[j], x[i].egress[j], &x[i].loc[j], now, res);
            }
        }
        if (p->stale && ev)
            events_add(ev, now, "probe_alive", "probe %s reports again", r->probe);
        p->stale = false;
        p->last_seen = now;
        p->reports++;
        tf_strlcpy(res->probes[res->accepted], r->probe, INGEST_NAME_LEN);
        res->accepted++;
    }
    if (rc == 0) {
        s->reports_total += res->accepted;
        s->gen++;
        __atomic_add_fetch(&s->entries_refused, res->refused.n, __ATOMIC_RELAXED);
    } else {
        count(&s->reports_rejected);
        count(&s->ingest_refused[e->kind]);
    }
    pthread_rwlock_unlock(&s->lock);
    free(ld);
    free(eg);
    free(lce);
    free(bad);
    free(loc);
    return rc;
}

/* ---- POST /api/v1/reports --------------------------------------------- */

/* The refusals, catalogued once: the API's error code, the HTTP status,
 * the metric's reason label (docs/api.md and docs/telemetry.md show them). */
static const struct {
    const char *code, *reason;
    unsigned status;
} err_table[INGEST_ERR_N] = {
    [INGEST_OK] = {"ok", "ok", 200},
    [INGEST_BAD_JSON] = {"bad_json", "bad_json", 400},
    [INGEST_BAD_FIELD] = {"bad_request", "bad_field", 400},
    [INGEST_TOO_MANY] = {"payload_too_large", "too_large", 413},
    [INGEST_UNKNOWN] = {"bad_request", "unknown_probe", 400},
    [INGEST_STALE] = {"stale_report", "stale", 422},
    [INGEST_FUTURE] = {"future_report", "future", 422},
    [INGEST_OUT_OF_ORDER] = {"out_of_order", "out_of_order", 409},
    [INGEST_CONFLICT] = {"probe_conflict", "probe_conflict", 409},
};
_Static_assert(INGEST_ERR_N <= STATE_INGEST_REASONS, "state keeps a counter per reason");

const char *ingest_err_code(enum ingest_err k)
{
    return k < INGEST_ERR_N ? err_table[k].code : "internal";
}

const char *ingest_err_reason(enum ingest_err k)
{
    return k < INGEST_ERR_N ? err_table[k].reason : "internal";
}

unsigned ingest_err_status(enum ingest_err k)
{
    return k < INGEST_ERR_N ? err_table[k].status : 500;
}

void ingest_opts_from_config(const struct config *c, struct ingest_opts *o)
{
    o->max_flows = (size_t)c->max_flows_per_report;
    o->check_ts = strcmp(c->ingest_timestamps, "ignore") != 0;
    o->clock_skew = c->clock_skew;
}

/* Every refusal is logged with the probe's name, the sender and the
 * reason, at most once per INGEST_LOG_EVERY_S for one (sender, probe,
 * reason): a probe refused every second writes one line a minute, saying
 * how many it held back. Process-wide, like the log it guards. */
static struct ratelog refusal_log = RATELOG_INIT(INGEST_LOG_EVERY_S);

static void log_refusal(const char *from, const char *probe, const char *reason, double now, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void log_refusal(const char *from, const char *probe, const char *reason, double now, const char *fmt, ...)
{
    char key[STATE_SENDER_LEN + INGEST_NAME_LEN + 32], msg[1024], more[80] = "";
    uint64_t held;
    snprintf(key, sizeof(key), "%s|%s|%s", from, probe, reason);
    if (!ratelog_pass(&refusal_log, key, now, &held))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (held)
        snprintf(more, sizeof(more), " (%llu more like it since the last line)", (unsigned long long)held);
    log_warn("%s%s", msg, more);
}

static json_t *error_json(enum ingest_err kind, const char *msg)
{
    return json_pack("{s{ss ss}}", "error", "code", ingest_err_code(kind), "message", msg);
}

static json_t *refused_reports_json(const struct ingest_result *res)
{
    json_t *a = json_array();
    for (size_t i = 0; i < res->nrefused; i++)
        json_array_append_new(a, json_pack("{sI ss ss ss}", "index", (json_int_t)res->refused_reports[i].index,
                                           "probe", res->refused_reports[i].probe, "code",
                                           ingest_err_code(res->refused_reports[i].kind), "message",
                                           res->refused_reports[i].msg));
    return a;
}

static json_t *result_json(const struct ingest_result *res)
{
    json_t *probes = json_array(), *un = json_array(), *ref = json_array();
    for (size_t i = 0; i < res->accepted; i++)
        json_array_append_new(probes, json_string(res->probes[i]));
    for (size_t i = 0; i < res->nunmapped; i++)
        json_array_append_new(un, json_string(res->unmapped[i]));
    for (size_t i = 0; i < res->refused.kept; i++)
        json_array_append_new(ref, json_pack("{ss ss}", "path", res->refused.e[i].path, "message",
                                             res->refused.e[i].msg));
    return json_pack("{sI so sI sI sI so sI sI sI so so sI}", "accepted", (json_int_t)res->accepted, "probes", probes,
                     "links", (json_int_t)res->links, "flows", (json_int_t)res->flows, "fat", (json_int_t)res->fat,
                     "unmapped_ifs", un, "unmapped_flows", (json_int_t)res->unmapped_flows, "dropped_full",
                     (json_int_t)res->dropped_full, "refused_entries", (json_int_t)res->refused.n, "refused", ref,
                     "refused_reports", refused_reports_json(res), "no_ts", (json_int_t)res->no_ts);
}

/* The probe an entry refusal belongs to, by its path's report index. */
static const char *probe_of_path(const struct ingest_batch *b, const char *path)
{
    size_t i = 0;
    if (!b->lone && sscanf(path, "reports[%zu]", &i) != 1)
        return "?";
    return i < b->n ? b->r[i].probe : "?";
}

unsigned ingest_post(struct state *s, struct events *ev, const struct ingest_opts *o, const char *from,
                     const char *body, size_t len, double now, json_t **reply)
{
    const char *who = from && from[0] ? from : "an unknown sender";
    struct ingest_batch *b = malloc(sizeof(*b));
    struct ingest_result *res = malloc(sizeof(*res));
    struct ingest_error e;
    if (!b || !res) {
        free(b);
        free(res);
        *reply = json_pack("{s{ss ss}}", "error", "code", "internal", "message", "out of memory");
        return 500;
    }
    int rc = ingest_parse(body ? body : "", len, o->max_flows, b, &e);
    if (rc == 0) {
        rc = ingest_apply_from(s, b, o, from && from[0] ? from : NULL, now, ev, res, &e);
    } else {
        count(&s->reports_rejected);
        count(&s->ingest_refused[e.kind]);
    }
    unsigned status = 200;
    if (rc < 0) {
        status = ingest_err_status(e.kind);
        log_refusal(who, e.probe, ingest_err_reason(e.kind), now, "report refused (%u %s): probe %s from %s: %s",
                    status, ingest_err_code(e.kind), e.probe[0] ? e.probe : "?", who, e.msg);
        *reply = e.kind == INGEST_BAD_JSON
                     ? json_pack("{s{ss ss si si si}}", "error", "code", "bad_json", "message", e.msg, "line", e.line,
                                 "column", e.column, "position", e.position)
                     : error_json(e.kind, e.msg);
    } else {
        for (size_t i = 0; i < res->nrefused; i++)
            log_refusal(who, res->refused_reports[i].probe, ingest_err_reason(res->refused_reports[i].kind), now,
                        "report refused (%u %s): probe %s from %s: %s",
                        ingest_err_status(res->refused_reports[i].kind),
                        ingest_err_code(res->refused_reports[i].kind), res->refused_reports[i].probe, who,
                        res->refused_reports[i].msg);
        if (res->refused.n) {
            const char *probe = probe_of_path(b, res->refused.e[0].path);
            log_refusal(who, probe, "entries", now, "report of probe %s from %s: %zu entr%s refused, the rest "
                        "applied: %s%s%s", probe, who, res->refused.n, res->refused.n == 1 ? "y" : "ies",
                        res->refused.e[0].msg, res->refused.kept > 1 ? "; " : "",
                        res->refused.kept > 1 ? res->refused.e[1].msg : "");
        }
        if (res->accepted == 0) {
            /* Every report refused: the first one's status and reason. */
            status = ingest_err_status(res->refused_reports[0].kind);
            *reply = error_json(res->refused_reports[0].kind, res->refused_reports[0].msg);
            json_object_set_new(*reply, "refused_reports", refused_reports_json(res));
        } else {
            *reply = result_json(res);
        }
    }
    ingest_batch_free(b);
    free(b);
    free(res);
    return status;
}

void ingest_metrics(const struct state *s, FILE *f)
{
    fprintf(f, "# HELP tierflow_report_refusals_total Probe reports (or whole requests) refused, by reason.\n"
               "# TYPE tierflow_report_refusals_total counter\n");
    for (int k = INGEST_OK + 1; k < INGEST_ERR_N; k++)
        fprintf(f, "tierflow_report_refusals_total{reason=\"%s\"} %llu\n", err_table[k].reason,
                (unsigned long long)__atomic_load_n(&s->ingest_refused[k], __ATOMIC_RELAXED));
    fprintf(f, "# HELP tierflow_report_entries_refused_total Report entries (flows, links) refused out of bounds; "
               "the rest of their reports applied.\n# TYPE tierflow_report_entries_refused_total counter\n"
               "tierflow_report_entries_refused_total %llu\n",
            (unsigned long long)__atomic_load_n(&s->entries_refused, __ATOMIC_RELAXED));
    fprintf(f, "# HELP tierflow_reports_without_ts_total Reports applied without a timestamp (taken as of their "
               "arrival).\n# TYPE tierflow_reports_without_ts_total counter\ntierflow_reports_without_ts_total %llu\n",
            (unsigned long long)__atomic_load_n(&s->reports_no_ts, __ATOMIC_RELAXED));
    fprintf(f, "# HELP tierflow_probe_conflicts_total Times a second sender reported under a probe name another "
               "sender holds.\n# TYPE tierflow_probe_conflicts_total counter\ntierflow_probe_conflicts_total %llu\n",
            (unsigned long long)__atomic_load_n(&s->probe_conflicts, __ATOMIC_RELAXED));
}
