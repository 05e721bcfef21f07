/*
 * classes: policy-file loader and flow classifier. See classes.h for the
 * precedence order; the loader rejects (never clamps) anything out of bounds
 * and names the class and key it rejected.
 */
#include "policy/classes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/assign.h"
#include "policy/topo.h"

static const char *const builtin_names[CLASS_NBUILTIN] = { "tp", "cp", "pp", "dp", "ep", "default" };

static void def_reset(struct class_def *c, const char *name)
{
    free(c->via);
    memset(c, 0, sizeof(*c));
    tf_strlcpy(c->name, name, sizeof(c->name));
    c->max_tier = -1;
}

void classes_init(struct classes *cs)
{
    memset(cs, 0, sizeof(*cs));
    for (int i = 0; i < CLASS_NBUILTIN; i++)
        def_reset(&cs->c[i], builtin_names[i]);
    cs->n = CLASS_NBUILTIN;
}

void classes_free(struct classes *cs)
{
    for (uint32_t i = 0; i < cs->n && i < CLASSES_MAX; i++) {
        free(cs->c[i].via);
        cs->c[i].via = NULL;
    }
    cs->n = 0;
}

int classes_find(const struct classes *cs, const char *name)
{
    for (uint32_t i = 0; i < cs->n; i++)
        if (strcmp(cs->c[i].name, name) == 0)
            return (int)i;
    return -ENOENT;
}

/* ---- loading ------------------------------------------------------------ */

#define fail(err, errlen, ...) tf_fail((err), (errlen), -EINVAL, __VA_ARGS__)

static bool valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n >= CLASS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return false;
    }
    return true;
}

/* A range is a number or "LO-HI"; both ends within [0, max]. */
static int parse_range(const json_t *v, uint32_t max, struct class_range *r)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x > max)
            return -ERANGE;
        r->lo = r->hi = (uint32_t)x;
        return 0;
    }
    if (!json_is_string(v))
        return -EINVAL;
    char buf[32];
    if (tf_strlcpy(buf, json_string_value(v), sizeof(buf)) >= sizeof(buf))
        return -EINVAL;
    char *dash = strchr(buf, '-');
    uint64_t lo, hi;
    if (dash)
        *dash = '\0';
    if (tf_parse_u64(buf, 0, max, &lo) < 0 || tf_parse_u64(dash ? dash + 1 : buf, 0, max, &hi) < 0 || lo > hi)
        return -ERANGE;
    r->lo = (uint32_t)lo;
    r->hi = (uint32_t)hi;
    return 0;
}

/* Every match kind is an array of at most CLASS_RULES_MAX values. */
static int rule_array(const json_t *m, const char *key, const char *cls, const json_t **arr,
                      char *err, size_t errlen)
{
    *arr = json_object_get(m, key);
    if (!*arr)
        return 0;
    if (!json_is_array(*arr) || json_array_size(*arr) == 0)
        return fail(err, errlen, "class '%s': match.%s must be a non-empty array", cls, key);
    if (json_array_size(*arr) > CLASS_RULES_MAX)
        return fail(err, errlen, "class '%s': match.%s has %zu values, at most %d allowed", cls, key,
                    json_array_size(*arr), CLASS_RULES_MAX);
    return 1;
}

static int load_ranges(const json_t *m, const char *key, uint32_t max, struct class_def *c,
                       struct class_range *out, uint8_t *n, char *err, size_t errlen)
{
    const json_t *a, *v;
    size_t i;
    int r = rule_array(m, key, c->name, &a, err, errlen);
    if (r <= 0)
        return r;
    json_array_foreach(a, i, v) {
        if (parse_range(v, max, &out[i]) < 0)
            return fail(err, errlen, "class '%s': match.%s[%zu]: want a number or \"LO-HI\" within 0..%u",
                        c->name, key, i, max);
    }
    *n = (uint8_t)json_array_size(a);
    return 0;
}

static int load_bits(const json_t *m, const char *key, uint32_t max, struct class_def *c,
                     uint64_t *bits, bool *has, char *err, size_t errlen)
{
    struct class_range rs[CLASS_RULES_MAX];
    uint8_t n = 0;
    int r = load_ranges(m, key, max, c, rs, &n, err, errlen);
    if (r < 0 || n == 0)
        return r;
    for (uint8_t i = 0; i < n; i++)
        for (uint32_t v = rs[i].lo; v <= rs[i].hi; v++)
            bits[v / 64] |= 1ull << (v % 64);
    *has = true;
    return 0;
}

static int load_prefixes(const json_t *m, const char *key, struct class_def *c,
                         struct class_prefix *out, uint8_t *n, char *err, size_t errlen)
{
    const json_t *a, *v;
    size_t i;
    int r = rule_array(m, key, c->name, &a, err, errlen);
    if (r <= 0)
        return r;
    json_array_foreach(a, i, v) {
        int af, plen;
        if (!json_is_string(v) || tf_prefix_parse(json_string_value(v), &af, out[i].addr, &plen) < 0)
            return fail(err, errlen, "class '%s': match.%s[%zu]: want an address or ADDR/LEN", c->name, key, i);
        out[i].af = (uint8_t)af;
        out[i].plen = (uint8_t)plen;
    }
    *n = (uint8_t)json_array_size(a);
    return 0;
}

static int load_jobs(const json_t *m, struct class_def *c, char *err, size_t errlen)
{
    const json_t *a, *v;
    size_t i;
    int r = rule_array(m, "job", c->name, &a, err, errlen);
    if (r <= 0)
        return r;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v) || !valid_name(json_string_value(v)))
            return fail(err, errlen, "class '%s': match.job[%zu]: want a job name (1..%d of [A-Za-z0-9_.-])",
                        c->name, i, CLASS_NAME_MAX - 1);
        tf_strlcpy(c->job[i], json_string_value(v), CLASS_NAME_MAX);
    }
    c->njob = (uint8_t)json_array_size(a);
    return 0;
}

static int load_match(const json_t *m, struct class_def *c, char *err, size_t errlen)
{
    static const char *const keys[] = { "dscp", "proto", "sport", "dport", "qp", "src", "dst", "job" };
    const char *k;
    const json_t *v;
    if (!json_is_object(m))
        return fail(err, errlen, "class '%s': match must be an object", c->name);
    json_object_foreach((json_t *)m, k, v) {
        size_t i = 0;
        while (i < TF_ARRAY_SIZE(keys) && strcmp(k, keys[i]) != 0)
            i++;
        if (i == TF_ARRAY_SIZE(keys))
            return fail(err, errlen, "class '%s': unknown match key '%s' (dscp, proto, sport, dport, qp, src, dst, job)",
                        c->name, k);
    }
    int r;
    if ((r = load_bits(m, "dscp", 63, c, &c->dscp, &c->has_dscp, err, errlen)) < 0 ||
        (r = load_bits(m, "proto", 255, c, c->proto, &c->has_proto, err, errlen)) < 0 ||
        (r = load_ranges(m, "sport", 65535, c, c->sport, &c->nsport, err, errlen)) < 0 ||
        (r = load_ranges(m, "dport", 65535, c, c->dport, &c->ndport, err, errlen)) < 0 ||
        (r = load_ranges(m, "qp", 0xffffff, c, c->qp, &c->nqp, err, errlen)) < 0 ||
        (r = load_prefixes(m, "src", c, c->src, &c->nsrc, err, errlen)) < 0 ||
        (r = load_prefixes(m, "dst", c, c->dst, &c->ndst, err, errlen)) < 0 ||
        (r = load_jobs(m, c, err, errlen)) < 0)
        return r;
    c->has_rules = c->has_dscp || c->has_proto || c->nsport || c->ndport || c->nqp || c->nsrc || c->ndst || c->njob;
    if (!c->has_rules)
        return fail(err, errlen, "class '%s': match is empty", c->name);
    return 0;
}

static int load_path(const json_t *p, struct class_def *c, char *err, size_t errlen)
{
    const char *k;
    const json_t *v;
    if (!json_is_object(p))
        return fail(err, errlen, "class '%s': path must be an object", c->name);
    json_object_foreach((json_t *)p, k, v) {
        if (strcmp(k, "max_tier") && strcmp(k, "via"))
            return fail(err, errlen, "class '%s': unknown path key '%s' (max_tier, via)", c->name, k);
    }
    v = json_object_get(p, "max_tier");
    if (v) {
        int t = json_is_string(v) ? topo_tier_parse(json_string_value(v)) : -EINVAL;
        if (t < TOPO_LEAF)
            return fail(err, errlen, "class '%s': path.max_tier must be leaf, spine or superspine", c->name);
        c->max_tier = t;
    }
    v = json_object_get(p, "via");
    if (v) {
        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > CLASS_VIA_MAX)
            return fail(err, errlen, "class '%s': path.via must be an array of 1..%d node names", c->name, CLASS_VIA_MAX);
        c->via = calloc(json_array_size(v), sizeof(*c->via));
        if (!c->via)
            return -ENOMEM;
        const json_t *e;
        size_t i;
        json_array_foreach(v, i, e) {
            if (!json_is_string(e) || tf_strlcpy(c->via[i], json_string_value(e), CLASS_NAME_MAX) >= CLASS_NAME_MAX ||
                !c->via[i][0])
                return fail(err, errlen, "class '%s': path.via[%zu] must be a node name shorter than %d bytes",
                            c->name, i, CLASS_NAME_MAX);
        }
        c->nvia = (uint16_t)json_array_size(v);
    }
    return 0;
}

static int load_class(struct classes *cs, const json_t *o, size_t idx, char *err, size_t errlen)
{
    const char *k;
    const json_t *v;
    if (!json_is_object(o))
        return fail(err, errlen, "classes[%zu] must be an object", idx);
    const json_t *name = json_object_get(o, "name");
    if (!json_is_string(name) || !valid_name(json_string_value(name)))
        return fail(err, errlen, "classes[%zu]: name must be 1..%d of [A-Za-z0-9_.-]", idx, CLASS_NAME_MAX - 1);
    const char *nm = json_string_value(name);
    json_object_foreach((json_t *)o, k, v) {
        if (strcmp(k, "name") && strcmp(k, "match") && strcmp(k, "path") && strcmp(k, "comment"))
            return fail(err, errlen, "class '%s': unknown key '%s' (name, match, path, comment)", nm, k);
    }
    int at = classes_find(cs, nm);
    struct class_def *c;
    if (at >= CLASS_NBUILTIN)
        return fail(err, errlen, "class '%s': defined twice", nm);
    if (at >= 0) {
        c = &cs->c[at];
        if (c->has_rules || c->max_tier >= 0 || c->nvia)
            return fail(err, errlen, "class '%s': defined twice", nm);
        if (at == CLASS_DEFAULT && json_object_get(o, "match"))
            return fail(err, errlen, "class 'default': takes no match rules (it is what nothing else matches)");
    } else {
        if (cs->n >= CLASSES_MAX)
            return fail(err, errlen, "class '%s': too many classes (at most %d with the built-ins)", nm, CLASSES_MAX);
        c = &cs->c[cs->n++];
        def_reset(c, nm);
        if (!json_object_get(o, "match"))
            return fail(err, errlen, "class '%s': a user class needs match rules", nm);
    }
    int r = 0;
    if ((v = json_object_get(o, "match")) && (r = load_match(v, c, err, errlen)) < 0)
        return r;
    if ((v = json_object_get(o, "path")) && (r = load_path(v, c, err, errlen)) < 0)
        return r;
    return 0;
}

int classes_load_json(struct classes *cs, const json_t *root, char *err, size_t errlen)
{
    classes_free(cs);
    classes_init(cs);
    const char *k;
    const json_t *v;
    if (!json_is_object(root))
        return fail(err, errlen, "policy: top level must be an object");
    json_object_foreach((json_t *)root, k, v) {
        if (strcmp(k, "classes") && strcmp(k, "comment") && strcmp(k, "jobs"))
            return fail(err, errlen, "policy: unknown key '%s' (classes, jobs, comment)", k);
    }
    const json_t *arr = json_object_get(root, "classes");
    if (!arr)
        return 0;
    if (!json_is_array(arr))
        return fail(err, errlen, "policy: classes must be an array");
    if (json_array_size(arr) > CLASSES_MAX)
        return fail(err, errlen, "policy: %zu classes, at most %d", json_array_size(arr), CLASSES_MAX);
    size_t i;
    json_array_foreach(arr, i, v) {
        int r = load_class(cs, v, i, err, errlen);
        if (r < 0) {
            classes_free(cs);
            classes_init(cs);
            return r;
        }
    }
    return 0;
}

int classes_load_file(struct classes *cs, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int r = tf_read_file(path, CLASS_FILE_MAX, &text, &len);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
        return r;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return -EINVAL;
    }
    char inner[256];
    r = classes_load_json(cs, root, inner, sizeof(inner));
    json_decref(root);
    if (r < 0)
        snprintf(err, errlen, "%s: %s", path, inner);
    return r;
}

/* ---- matching ----------------------------------------------------------- */

static bool in_ranges(const struct class_range *r, uint8_t n, uint32_t v)
{
    for (uint8_t i = 0; i < n; i++)
        if (v >= r[i].lo && v <= r[i].hi)
            return true;
    return false;
}

static bool in_prefixes(const struct class_prefix *p, uint8_t n, int af, const uint8_t *a)
{
    for (uint8_t i = 0; i < n; i++)
        if (p[i].af == af && tf_prefix_contains(af, p[i].addr, p[i].plen, a))
            return true;
    return false;
}

bool classes_rules_match(const struct class_def *c, const struct class_flow *f)
{
    if (!c->has_rules)
        return false;
    if (c->has_dscp && (f->dscp < 0 || f->dscp > 63 || !(c->dscp >> f->dscp & 1)))
        return false;
    if (c->has_proto && !(c->proto[f->proto / 64] >> (f->proto % 64) & 1))
        return false;
    if (c->nsport && !in_ranges(c->sport, c->nsport, f->sport))
        return false;
    if (c->ndport && !in_ranges(c->dport, c->ndport, f->dport))
        return false;
    if (c->nqp && (!f->has_qp || !in_ranges(c->qp, c->nqp, f->qp)))
        return false;
    if (c->nsrc && !in_prefixes(c->src, c->nsrc, f->af, f->src))
        return false;
    if (c->ndst && !in_prefixes(c->dst, c->ndst, f->af, f->dst))
        return false;
    if (c->njob) {
        bool hit = false;
        for (uint8_t i = 0; i < c->njob && f->job && !hit; i++)
            hit = strcmp(c->job[i], f->job) == 0;
        if (!hit)
            return false;
    }
    return true;
}

int classes_match(const struct classes *cs, const struct class_flow *f)
{
    if (f->job) {
        for (uint32_t i = CLASS_NBUILTIN; i < cs->n; i++)
            if (cs->c[i].njob && classes_rules_match(&cs->c[i], f))
                return (int)i;
        if (f->job_dim >= 0 && f->job_dim < CLASS_DEFAULT)
            return f->job_dim;
    }
    for (uint32_t i = CLASS_NBUILTIN; i < cs->n; i++)
        if (!cs->c[i].njob && classes_rules_match(&cs->c[i], f))
            return (int)i;
    for (int i = 0; i < CLASS_DEFAULT; i++)
        if (classes_rules_match(&cs->c[i], f))
            return i;
    return CLASS_DEFAULT;
}

/* ---- resolution against a topology -------------------------------------- */

int classes_resolve(const struct classes *cs, const struct topo *t, struct assign_policy *pol,
                    uint8_t **owned, char *err, size_t errlen)
{
    uint32_t nvia = 0;
    for (uint32_t i = 0; i < cs->n; i++)
        nvia += cs->c[i].nvia > 0;
    *owned = NULL;
    uint8_t *block = nvia ? calloc((size_t)nvia * t->nnodes, 1) : NULL;
    if (nvia && !block)
        return -ENOMEM;
    uint8_t *next = block;
    for (uint32_t i = 0; i < cs->n; i++) {
        const struct class_def *c = &cs->c[i];
        pol[i].max_tier = c->max_tier;
        pol[i].node_ok = NULL;
        if (!c->nvia)
            continue;
        uint8_t *ok = next;
        next += t->nnodes;
        bool named_tier[TOPO_NTIERS_MAX] = { false };
        for (uint16_t k = 0; k < c->nvia; k++) {
            uint32_t n = topo_node_by_name(t, c->via[k]);
            if (n == TOPO_NONE || t->nodes[n].tier < TOPO_SPINE) {
                free(block);
                return fail(err, errlen, "class '%s': path.via '%s' is not a spine or superspine of topology '%s'",
                            c->name, c->via[k], t->name);
            }
            ok[n] = 1;
            named_tier[t->nodes[n].tier] = true;
        }
        for (uint32_t n = 0; n < t->nnodes; n++)
            if (!named_tier[t->nodes[n].tier])
                ok[n] = 1;
        pol[i].node_ok = ok;
    }
    *owned = block;
    return 0;
}

/* ---- output ------------------------------------------------------------- */

static json_t *ranges_json(const struct class_range *r, uint8_t n)
{
    json_t *a = json_array();
    char buf[32];
    for (uint8_t i = 0; i < n; i++) {
        if (r[i].lo == r[i].hi) {
            json_array_append_new(a, json_integer(r[i].lo));
        } else {
            snprintf(buf, sizeof(buf), "%u-%u", r[i].lo, r[i].hi);
            json_array_append_new(a, json_string(buf));
        }
    }
    return a;
}

static json_t *bits_json(const uint64_t *bits, unsigned max)
{
    json_t *a = json_array();
    for (unsigned v = 0; v <= max; v++)
        if (bits[v / 64] >> (v % 64) & 1)
            json_array_append_new(a, json_integer(v));
    return a;
}

static json_t *prefixes_json(const struct class_prefix *p, uint8_t n)
{
    json_t *a = json_array();
    char buf[64], out[80];
    for (uint8_t i = 0; i < n; i++) {
        snprintf(out, sizeof(out), "%s/%u", tf_addr_str(p[i].af, p[i].addr, buf, sizeof(buf)), p[i].plen);
        json_array_append_new(a, json_string(out));
    }
    return a;
}

json_t *classes_def_json(const struct class_def *c)
{
    json_t *o = json_object(), *m = json_object(), *p = json_object();
    json_object_set_new(o, "name", json_string(c->name));
    if (c->has_dscp)
        json_object_set_new(m, "dscp", bits_json(&c->dscp, 63));
    if (c->has_proto)
        json_object_set_new(m, "proto", bits_json(c->proto, 255));
    if (c->nsport)
        json_object_set_new(m, "sport", ranges_json(c->sport, c->nsport));
    if (c->ndport)
        json_object_set_new(m, "dport", ranges_json(c->dport, c->ndport));
    if (c->nqp)
        json_object_set_new(m, "qp", ranges_json(c->qp, c->nqp));
    if (c->nsrc)
        json_object_set_new(m, "src", prefixes_json(c->src, c->nsrc));
    if (c->ndst)
        json_object_set_new(m, "dst", prefixes_json(c->dst, c->ndst));
    if (c->njob) {
        json_t *a = json_array();
        for (uint8_t i = 0; i < c->njob; i++)
            json_array_append_new(a, json_string(c->job[i]));
        json_object_set_new(m, "job", a);
    }
    json_object_set_new(o, "match", m);
    if (c->max_tier >= 0)
        json_object_set_new(p, "max_tier", json_string(topo_tier_name(c->max_tier)));
    if (c->nvia) {
        json_t *a = json_array();
        for (uint16_t i = 0; i < c->nvia; i++)
            json_array_append_new(a, json_string(c->via[i]));
        json_object_set_new(p, "via", a);
    }
    json_object_set_new(o, "path", p);
    return o;
}
