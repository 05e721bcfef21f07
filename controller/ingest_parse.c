/*
 * ingest_parse: see ingest_parse.h. The two readers walk the same member
 * tables (ingest_schema): jansson's over its tree, the scanner's over the
 * text in place. A violation in the body's structure or in a report's own
 * members aborts the whole batch; one inside a list entry drops that entry
 * (ingest_refusals_add) and reading goes on with the next.
 */
#include "controller/ingest_parse.h"

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/ingest_schema.h"
#include "controller/jsonarena.h"
#include "controller/jsonscan.h"

/* jansson's integers are what the scanner reads as long long. */
_Static_assert(JSON_INTEGER_IS_LONG_LONG, "json_int_t is long long");

/* jansson refuses nesting deeper than this while it parses (its recursion is
 * the only unbounded thing in it); a report needs 5 levels. */
_Static_assert(JSON_PARSER_MAX_DEPTH <= 4096, "jansson's depth bound is what bounds the parser's stack");

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
static int read_fields_json(const struct ingest_ctx *c, const json_t *o, const struct ingest_field *fl, size_t n,
                            void *raw)
{
    for (size_t i = 0; i < n; i++) {
        const json_t *j = json_object_get(o, fl[i].key);
        if (!j) {
            if (fl[i].need)
                return ingest_cfail(c, fl[i].key, "required");
            continue;
        }
        struct jsonscan_value v;
        value_of_json(j, &v);
        int rc = ingest_field_check(c, &fl[i], &v, raw);
        if (rc)
            return rc;
    }
    return 0;
}

/* A report's "links" or "flows": an array of objects, counted against its
 * bound before any entry is judged (413, not a field error, for a probe that
 * sends too many). *budget is how many flows the batch may still hold. */
static int parse_list(const json_t *r, const char *at, const struct ingest_list_kind *k, size_t *budget,
                      struct ingest_report *out, struct ingest_refusals *refused, struct ingest_error *e)
{
    bool flows = k == &ingest_flows_kind;
    const json_t *a = json_object_get(r, k->name);
    if (!a)
        return 0;
    char path[48]; /* "reports[63].flows" */
    snprintf(path, sizeof(path), "%s%s%s", at, at[0] ? "." : "", k->name);
    if (!json_is_array(a))
        return ingest_error_set(e, INGEST_BAD_FIELD, "%s: must be an array", path);
    size_t count = json_array_size(a);
    if (flows && count > *budget)
        return ingest_error_set(e, INGEST_TOO_MANY, "%s: %zu entries, more than the limit (max_flows_per_report)",
                                path, count);
    if (!flows && count > INGEST_MAX_LINKS)
        return ingest_error_set(e, INGEST_TOO_MANY, "%s: %zu entries, at most %d", path, count, INGEST_MAX_LINKS);
    if (count == 0)
        return 0;
    struct ingest_list l = {calloc(count, k->entry_size), 0, count};
    if (!l.a)
        return ingest_error_set(e, INGEST_BAD_FIELD, "out of memory for %zu %s", count, k->name);
    if (flows)
        *budget -= count;
    struct ingest_ctx c = {at, k->name, 0, e};
    for (size_t i = 0; i < count; i++) {
        c.idx = i;
        const json_t *o = json_array_get(a, i);
        union ingest_raw raw;
        ingest_raw_init(k, &raw);
        int rc = json_is_object(o) ? 0 : ingest_cfail(&c, NULL, "must be an object");
        if (rc == 0)
            rc = read_fields_json(&c, o, k->fields, k->nfields, &raw);
        if (rc == 0)
            rc = k->finish(&c, &raw, ingest_list_add(&l, k->entry_size));
        if (rc == 0)
            l.n++;
        else
            ingest_refusals_add(refused, e); /* this entry only: the next is judged on its own */
    }
    ingest_list_set(out, k, &l);
    return 0;
}

/* One report object. at: "" for a lone report (whose own members are then
 * named "report.probe"), "reports[2]" in a batch. */
static int parse_report(const json_t *r, const char *at, size_t *budget, struct ingest_report *out,
                        struct ingest_refusals *refused, struct ingest_error *e)
{
    const struct ingest_ctx c = {at[0] ? at : "report", NULL, 0, e};
    out->schema = REPORTSPEC_SCHEMA;
    int rc = read_fields_json(&c, r, ingest_report_fields, ingest_report_nfields, out);
    if (rc == 0)
        rc = ingest_report_check(&c, out);
    if (rc == 0)
        rc = parse_list(r, at, &ingest_links_kind, budget, out, refused, e);
    if (rc == 0)
        rc = parse_list(r, at, &ingest_flows_kind, budget, out, refused, e);
    if (rc)
        tf_strlcpy(e->probe, out->probe, sizeof(e->probe));
    return rc;
}

static int parse_root(const json_t *root, size_t *budget, struct ingest_batch *b, struct ingest_error *e)
{
    if (!json_is_object(root))
        return ingest_error_set(e, INGEST_BAD_FIELD, "body: must be a JSON object");
    const json_t *reports = json_object_get(root, "reports");
    if (!reports) {
        b->n = 1;
        b->lone = true;
        return parse_report(root, "", budget, &b->r[0], &b->refused, e);
    }
    if (!json_is_array(reports) || json_array_size(reports) == 0)
        return ingest_error_set(e, INGEST_BAD_FIELD, "reports: must be a non-empty array");
    if (json_array_size(reports) > INGEST_MAX_REPORTS)
        return ingest_error_set(e, INGEST_TOO_MANY, "reports: more than %d entries", INGEST_MAX_REPORTS);
    for (size_t i = 0; i < json_array_size(reports); i++) {
        char at[32];
        snprintf(at, sizeof(at), "reports[%zu]", i);
        const json_t *r = json_array_get(reports, i);
        b->n++; /* counted before it is filled, so that a failure frees it */
        if (!json_is_object(r))
            return ingest_error_set(e, INGEST_BAD_FIELD, "%s: report must be an object", at);
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
        rc = ingest_error_set(e, INGEST_BAD_JSON, "%s (line %d, column %d)", je.text, je.line, je.column);
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
static int field_find(const struct ingest_field *fl, size_t n, size_t *hint, const char *key, size_t klen)
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
static int scan_member(struct scan *sc, const struct ingest_ctx *c, uint32_t obj, const struct ingest_field *fl,
                       size_t n, size_t *hint, uint32_t *seen, const char *key, size_t klen, void *raw)
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
    return ingest_field_check(c, &fl[i], &v, raw);
}

/* Member i of the object being read: 1 with its key, 0 past the last one,
 * or the scanner's error. */
static int member_next(struct scan *sc, size_t i, const char **key, size_t *klen)
{
    bool more = true;
    int rc = jsonscan_member(&sc->js, i, &more, key, klen);
    return rc < 0 ? rc : more;
}

static bool have_required(const struct ingest_field *fl, size_t n, uint32_t seen)
{
    for (size_t i = 0; i < n; i++)
        if (fl[i].need && !(seen & (1u << i)))
            return false;
    return true;
}

/* One entry of a list: an object of k's fields. */
static int scan_entry(struct scan *sc, const struct ingest_ctx *c, const struct ingest_list_kind *k, void *entry)
{
    struct jsonscan_value o;
    int rc = jsonscan_value(&sc->js, &o);
    if (rc < 0 || o.type != JSONSCAN_OBJECT)
        return rc < 0 ? rc : -EINVAL;
    union ingest_raw raw;
    ingest_raw_init(k, &raw);
    uint32_t seen = 0;
    size_t hint = 0, klen;
    const char *key;
    for (size_t i = 0; rc == 0 && (rc = member_next(sc, i, &key, &klen)) > 0; i++)
        rc = scan_member(sc, c, o.obj, k->fields, k->nfields, &hint, &seen, key, klen, &raw);
    if (rc == 0 && !have_required(k->fields, k->nfields, seen))
        rc = -EINVAL;
    return rc ? rc : k->finish(c, &raw, entry);
}

/* A report's "links" or "flows" array; beyond its bound, jansson gives the 413. */
static int scan_list(struct scan *sc, const char *at, const struct ingest_list_kind *k, struct ingest_report *out)
{
    bool flows = k == &ingest_flows_kind, more = true;
    size_t max = flows ? sc->budget : INGEST_MAX_LINKS;
    struct jsonscan_value a;
    int rc = jsonscan_value(&sc->js, &a);
    if (rc < 0 || a.type != JSONSCAN_ARRAY)
        return rc < 0 ? rc : -EINVAL;
    struct ingest_list l = {0};
    struct ingest_ctx c = {at, k->name, 0, sc->e};
    for (size_t i = 0; rc == 0; i++) {
        rc = jsonscan_element(&sc->js, i, &more);
        if (rc < 0 || !more)
            break;
        void *entry = i < max ? ingest_list_add(&l, k->entry_size) : NULL;
        c.idx = i;
        rc = entry ? scan_entry(sc, &c, k, entry) : -E2BIG;
        l.n += rc == 0;
    }
    ingest_list_set(out, k, &l);
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
    const struct ingest_ctx c = {at[0] ? at : "report", NULL, 0, sc->e};
    const size_t n = ingest_report_nfields;
    const uint32_t links_bit = 1u << n, flows_bit = 1u << (n + 1);
    uint32_t seen = 0;
    size_t hint = 0, klen;
    const char *key;
    int rc = 0;
    out->schema = REPORTSPEC_SCHEMA;
    for (size_t i = 0; rc == 0 && (rc = member_next(sc, i, &key, &klen)) > 0; i++) {
        bool links = key_is(key, klen, "links"), flows = !links && key_is(key, klen, "flows");
        uint32_t bit = links ? links_bit : flows ? flows_bit : 0;
        if (seen & bit)
            rc = -EEXIST;
        else if (bit)
            rc = scan_list(sc, at, links ? &ingest_links_kind : &ingest_flows_kind, out);
        else if (lone && key_is(key, klen, "reports"))
            rc = -EINVAL; /* a batch after all, its reports not first: jansson's */
        else
            rc = scan_member(sc, &c, obj, ingest_report_fields, n, &hint, &seen, key, klen, out);
        seen |= bit;
    }
    if (rc == 0 && (!have_required(ingest_report_fields, n, seen) || ingest_report_check(&c, out)))
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
    for (size_t i = 1; rc == 0 && (rc = member_next(sc, i, &key, &klen)) > 0; i++) {
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
        return ingest_error_set(e, INGEST_TOO_MANY, "body: %zu bytes, more than %u", len, INGEST_MAX_BODY);
    }
    int rc = ingest_parse_scan(body, len, max_flows, b, e);
    return rc == -EAGAIN ? ingest_parse_jansson(body, len, max_flows, b, e) : rc;
}

