/*
 * plan: see plan.h. Growable arrays, a canonical order, a merge-style diff
 * over two sorted plans, and the JSON form (the `ip -batch` forms are
 * planbatch.c's). The JSON writer checks the stream's error state at the
 * end, so a full disk is reported, not a truncated file silently accepted.
 */
#include "controller/plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

void plan_init(struct plan *p)
{
    memset(p, 0, sizeof(*p));
}

void plan_free(struct plan *p)
{
    free(p->rules);
    free(p->routes);
    plan_init(p);
}

void plan_clear(struct plan *p)
{
    p->nrules = 0;
    p->nroutes = 0;
}

static bool name_ok(const char *s, size_t len)
{
    return s[0] != '\0' && memchr(s, '\0', len) != NULL;
}

static int addr_bits(uint8_t af)
{
    return af == 4 ? 32 : af == 6 ? 128 : -1;
}

int plan_add_rule(struct plan *p, const struct plan_rule *r)
{
    int bits = addr_bits(r->af);
    if (bits < 0 || !name_ok(r->sw, sizeof(r->sw)) || r->src_len > bits ||
        r->dst_len > bits || r->dscp < -1 || r->dscp > 63 || r->table == 0)
        return -EINVAL;
    if (tf_grow((void **)&p->rules, &p->rcap, p->nrules + 1, sizeof(*r)))
        return -ENOMEM;
    p->rules[p->nrules++] = *r;
    return 0;
}

int plan_add_route(struct plan *p, const struct plan_route *r)
{
    int bits = addr_bits(r->af);
    if (bits < 0 || !name_ok(r->sw, sizeof(r->sw)) || r->dst_len > bits ||
        r->nnh < 1 || r->nnh > PLAN_MAX_NH || r->table == 0)
        return -EINVAL;
    for (int i = 0; i < r->nnh; i++) {
        const struct plan_nh *h = &r->nh[i];
        if ((h->af != 0 && addr_bits(h->af) < 0) || !memchr(h->dev, '\0', sizeof(h->dev)) ||
            h->weight < 1 || h->weight > 256 || (h->af == 0 && h->dev[0] == '\0'))
            return -EINVAL;
    }
    if (tf_grow((void **)&p->routes, &p->tcap, p->nroutes + 1, sizeof(*r)))
        return -ENOMEM;
    p->routes[p->nroutes++] = *r;
    return 0;
}

int plan_append(struct plan *dst, const struct plan *src, const char *sw)
{
    for (size_t i = 0; i < src->nrules; i++)
        if (!sw || !strcmp(src->rules[i].sw, sw))
            if (plan_add_rule(dst, &src->rules[i]))
                return -ENOMEM;
    for (size_t i = 0; i < src->nroutes; i++)
        if (!sw || !strcmp(src->routes[i].sw, sw))
            if (plan_add_route(dst, &src->routes[i]))
                return -ENOMEM;
    return 0;
}

int plan_copy(struct plan *dst, const struct plan *src)
{
    plan_init(dst);
    int rc = plan_append(dst, src, NULL);
    if (rc)
        plan_free(dst);
    return rc;
}

#define CMP(a, b) do { if ((a) != (b)) return (a) < (b) ? -1 : 1; } while (0)

int plan_rule_cmp(const struct plan_rule *a, const struct plan_rule *b)
{
    int c = strncmp(a->sw, b->sw, sizeof(a->sw));
    if (c)
        return c < 0 ? -1 : 1;
    CMP(a->prio, b->prio);
    CMP(a->af, b->af);
    CMP(a->table, b->table);
    CMP(a->ipproto, b->ipproto);
    CMP(a->src_len, b->src_len);
    CMP(a->dst_len, b->dst_len);
    if ((c = memcmp(a->src, b->src, 16)) || (c = memcmp(a->dst, b->dst, 16)))
        return c < 0 ? -1 : 1;
    CMP(a->sport, b->sport);
    CMP(a->dport, b->dport);
    CMP(a->fwmark, b->fwmark);
    CMP(a->fwmask, b->fwmask);
    CMP(a->dscp, b->dscp);
    return 0;
}

const char *plan_rule_str(const struct plan_rule *r, char *buf, size_t len)
{
    char a[64];
    size_t u = (size_t)snprintf(buf, len, "pref %u", r->prio);
#define ADD(...) do { if (u < len) u += (size_t)snprintf(buf + u, len - u, __VA_ARGS__); } while (0)
    if (r->src_len)
        ADD(" from %s/%u", tf_addr_str(r->af, r->src, a, sizeof(a)), r->src_len);
    else if (r->af == 6)
        ADD(" from ::/0");    /* the family comes from the address */
    if (r->dst_len)
        ADD(" to %s/%u", tf_addr_str(r->af, r->dst, a, sizeof(a)), r->dst_len);
    if (r->ipproto)
        ADD(" ipproto %u", r->ipproto);
    if (r->sport)
        ADD(" sport %u", r->sport);
    if (r->dport)
        ADD(" dport %u", r->dport);
    if (r->fwmark)
        ADD(" fwmark 0x%x/0x%x", r->fwmark, r->fwmask ? r->fwmask : 0xffffffffu);
    if (r->dscp >= 0)
        ADD(" dscp %d", r->dscp);
    ADD(" table %u", r->table);
#undef ADD
    return buf;
}

unsigned plan_rule_sels(const struct plan_rule *r)
{
    return (r->src_len ? PLAN_SEL_SRC : 0) | (r->dst_len ? PLAN_SEL_DST : 0) |
           (r->ipproto ? PLAN_SEL_IPPROTO : 0) | (r->sport ? PLAN_SEL_SPORT : 0) |
           (r->dport ? PLAN_SEL_DPORT : 0) | (r->fwmark ? PLAN_SEL_FWMARK : 0) |
           (r->dscp >= 0 ? PLAN_SEL_DSCP : 0);
}

unsigned plan_rule_dropped(const struct plan_rule *sent, const struct plan_rule *got)
{
    if (strncmp(sent->sw, got->sw, sizeof(sent->sw)) || sent->prio != got->prio ||
        sent->table != got->table || sent->af != got->af)
        return PLAN_SEL_OTHER;
    unsigned s = plan_rule_sels(sent), g = plan_rule_sels(got);
    if (g & ~s)
        return PLAN_SEL_OTHER;
    /* Each selector got kept must be the one sent. */
    size_t n = sent->af == 4 ? 4 : 16;
    if (((g & PLAN_SEL_SRC) && (got->src_len != sent->src_len || memcmp(got->src, sent->src, n))) ||
        ((g & PLAN_SEL_DST) && (got->dst_len != sent->dst_len || memcmp(got->dst, sent->dst, n))) ||
        ((g & PLAN_SEL_IPPROTO) && got->ipproto != sent->ipproto) ||
        ((g & PLAN_SEL_SPORT) && got->sport != sent->sport) ||
        ((g & PLAN_SEL_DPORT) && got->dport != sent->dport) ||
        ((g & PLAN_SEL_FWMARK) && (got->fwmark != sent->fwmark ||
                                   (got->fwmask ? got->fwmask : 0xffffffffu) !=
                                       (sent->fwmask ? sent->fwmask : 0xffffffffu))) ||
        ((g & PLAN_SEL_DSCP) && got->dscp != sent->dscp))
        return PLAN_SEL_OTHER;
    return s & ~g;
}

const char *plan_sel_name(unsigned sels)
{
    static const char *const names[] = {"source prefix (FRA_SRC)", "destination prefix (FRA_DST)",
                                        "IP protocol (FRA_IP_PROTO)", "source port (FRA_SPORT_RANGE)",
                                        "destination port (FRA_DPORT_RANGE)", "firewall mark (FRA_FWMARK)",
                                        "dscp (FRA_DSCP)"};
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (sels & (1u << i))
            return names[i];
    return "?";
}

int plan_route_key_cmp(const struct plan_route *a, const struct plan_route *b)
{
    int c = strncmp(a->sw, b->sw, sizeof(a->sw));
    if (c)
        return c < 0 ? -1 : 1;
    CMP(a->table, b->table);
    CMP(a->af, b->af);
    CMP(a->dst_len, b->dst_len);
    if ((c = memcmp(a->dst, b->dst, 16)))
        return c < 0 ? -1 : 1;
    return 0;
}

static int nh_cmp(const void *pa, const void *pb)
{
    const struct plan_nh *a = pa, *b = pb;
    CMP(a->af, b->af);
    int c = memcmp(a->via, b->via, 16);
    if (c)
        return c < 0 ? -1 : 1;
    c = strncmp(a->dev, b->dev, sizeof(a->dev));
    if (c)
        return c < 0 ? -1 : 1;
    CMP(a->weight, b->weight);
    return 0;
}

bool plan_route_equal(const struct plan_route *a, const struct plan_route *b)
{
    if (plan_route_key_cmp(a, b) || a->nnh != b->nnh)
        return false;
    for (int i = 0; i < a->nnh; i++)
        if (nh_cmp(&a->nh[i], &b->nh[i]))
            return false;
    return true;
}

static int rule_qcmp(const void *a, const void *b) { return plan_rule_cmp(a, b); }

static int route_qcmp(const void *a, const void *b)
{
    int c = plan_route_key_cmp(a, b);
    if (c)
        return c;
    const struct plan_route *x = a, *y = b;
    CMP(x->nnh, y->nnh);
    for (int i = 0; i < x->nnh; i++)
        if ((c = nh_cmp(&x->nh[i], &y->nh[i])))
            return c;
    return 0;
}

/* Unused bytes are zeroed so that memcmp-based comparison and plan files
 * do not depend on what callers left in them. */
static void canon_rule(struct plan_rule *r)
{
    size_t n = r->af == 4 ? 4 : 16;
    memset(r->src + n, 0, 16 - n);
    memset(r->dst + n, 0, 16 - n);
    if (!r->src_len)
        memset(r->src, 0, 16);
    if (!r->dst_len)
        memset(r->dst, 0, 16);
    if (!r->fwmark || r->fwmask == 0xffffffffu)
        r->fwmask = 0;   /* 0 = exact mark, however it was spelt */
    size_t l = strnlen(r->sw, sizeof(r->sw));
    memset(r->sw + l, 0, sizeof(r->sw) - l);
}

static void canon_route(struct plan_route *r)
{
    size_t n = r->af == 4 ? 4 : 16;
    memset(r->dst + n, 0, 16 - n);
    size_t l = strnlen(r->sw, sizeof(r->sw));
    memset(r->sw + l, 0, sizeof(r->sw) - l);
    memset(r->nh + r->nnh, 0, (PLAN_MAX_NH - r->nnh) * sizeof(r->nh[0]));
    for (int i = 0; i < r->nnh; i++) {
        struct plan_nh *h = &r->nh[i];
        size_t k = h->af == 4 ? 4 : h->af == 6 ? 16 : 0;
        memset(h->via + k, 0, 16 - k);
        l = strnlen(h->dev, sizeof(h->dev));
        memset(h->dev + l, 0, sizeof(h->dev) - l);
    }
    if (r->nnh == 1)
        r->nh[0].weight = 1;   /* a single path has no weight in the kernel */
    if (r->nnh)
        qsort(r->nh, r->nnh, sizeof(r->nh[0]), nh_cmp);
}

void plan_sort(struct plan *p)
{
    for (size_t i = 0; i < p->nrules; i++)
        canon_rule(&p->rules[i]);
    for (size_t i = 0; i < p->nroutes; i++)
        canon_route(&p->routes[i]);
    if (p->nrules)   /* qsort(NULL, 0) is undefined */
        qsort(p->rules, p->nrules, sizeof(p->rules[0]), rule_qcmp);
    if (p->nroutes)
        qsort(p->routes, p->nroutes, sizeof(p->routes[0]), route_qcmp);
    size_t w = 0;
    for (size_t i = 0; i < p->nrules; i++)
        if (!w || plan_rule_cmp(&p->rules[w - 1], &p->rules[i]))
            p->rules[w++] = p->rules[i];
    p->nrules = w;
    w = 0;
    for (size_t i = 0; i < p->nroutes; i++)
        if (!w || route_qcmp(&p->routes[w - 1], &p->routes[i]))
            p->routes[w++] = p->routes[i];
    p->nroutes = w;
}

bool plan_equal(const struct plan *a, const struct plan *b)
{
    if (a->nrules != b->nrules || a->nroutes != b->nroutes)
        return false;
    for (size_t i = 0; i < a->nrules; i++)
        if (plan_rule_cmp(&a->rules[i], &b->rules[i]))
            return false;
    for (size_t i = 0; i < a->nroutes; i++)
        if (!plan_route_equal(&a->routes[i], &b->routes[i]))
            return false;
    return true;
}

int plan_diff(struct plan *want, struct plan *have, struct plan *add, struct plan *del)
{
    plan_init(add);
    plan_init(del);
    plan_sort(want);
    plan_sort(have);
    int rc = 0;
    size_t i = 0, j = 0;
    while (!rc && (i < want->nrules || j < have->nrules)) {
        int c = i == want->nrules ? 1 : j == have->nrules ? -1
              : plan_rule_cmp(&want->rules[i], &have->rules[j]);
        if (c < 0)
            rc = plan_add_rule(add, &want->rules[i++]);
        else if (c > 0)
            rc = plan_add_rule(del, &have->rules[j++]);
        else
            i++, j++;
    }
    i = j = 0;
    while (!rc && (i < want->nroutes || j < have->nroutes)) {
        int c = i == want->nroutes ? 1 : j == have->nroutes ? -1
              : plan_route_key_cmp(&want->routes[i], &have->routes[j]);
        if (c < 0) {
            rc = plan_add_route(add, &want->routes[i++]);
        } else if (c > 0) {
            rc = plan_add_route(del, &have->routes[j++]);
        } else {
            /* Two routes with one key in have (a kernel may hold both a
             * multipath and a stray): the extra ones go. */
            if (!plan_route_equal(&want->routes[i], &have->routes[j]))
                rc = plan_add_route(add, &want->routes[i]);
            i++, j++;
            while (!rc && j < have->nroutes && i > 0 &&
                   !plan_route_key_cmp(&want->routes[i - 1], &have->routes[j]))
                rc = plan_add_route(del, &have->routes[j++]);
        }
    }
    if (rc) {
        plan_free(add);
        plan_free(del);
    }
    return rc;
}

int plan_switches(const struct plan *p, char (**out)[PLAN_SW_LEN], size_t *n)
{
    size_t cap = p->nrules + p->nroutes, k = 0;
    char (*v)[PLAN_SW_LEN] = calloc(cap ? cap : 1, PLAN_SW_LEN);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < p->nrules; i++)
        tf_strlcpy(v[k++], p->rules[i].sw, PLAN_SW_LEN);
    for (size_t i = 0; i < p->nroutes; i++)
        tf_strlcpy(v[k++], p->routes[i].sw, PLAN_SW_LEN);
    if (k)
        qsort(v, k, PLAN_SW_LEN, (int (*)(const void *, const void *))strcmp);
    size_t w = 0;
    for (size_t i = 0; i < k; i++)
        if (!w || strcmp(v[w - 1], v[i]))
            memmove(v[w++], v[i], PLAN_SW_LEN);
    *out = v;
    *n = w;
    return 0;
}

/* ---- the JSON form ------------------------------------------------------ */

/* "ADDR/LEN", or "" for "any" (a zero-length prefix selects nothing). */
static json_t *pfx_json(uint8_t af, const uint8_t *a, uint8_t len)
{
    char buf[64], out[80];
    if (!len)
        return json_string("");
    snprintf(out, sizeof(out), "%s/%u", tf_addr_str(af, a, buf, sizeof(buf)), len);
    return json_string(out);
}

static json_t *rule_json(const struct plan_rule *r)
{
    json_t *o = json_pack("{sI sI sI sI sI sI sI sI}", "prio", (json_int_t)r->prio, "table", (json_int_t)r->table,
                          "af", (json_int_t)r->af, "ipproto", (json_int_t)r->ipproto, "sport",
                          (json_int_t)r->sport, "dport", (json_int_t)r->dport, "fwmark", (json_int_t)r->fwmark,
                          "fwmask", (json_int_t)(r->fwmark && !r->fwmask ? 0xffffffffu : r->fwmask));
    json_object_set_new(o, "src", pfx_json(r->af, r->src, r->src_len));
    json_object_set_new(o, "dst", pfx_json(r->af, r->dst, r->dst_len));
    /* null = no DSCP selector: DSCP 0 is a value a rule can match. */
    json_object_set_new(o, "dscp", r->dscp >= 0 ? json_integer(r->dscp) : json_null());
    return o;
}

static json_t *route_json(const struct plan_route *r)
{
    json_t *nhs = json_array();
    for (int k = 0; k < r->nnh; k++) {
        char buf[64];
        const struct plan_nh *h = &r->nh[k];
        json_array_append_new(nhs, json_pack("{ss ss sI}", "via", h->af ? tf_addr_str(h->af, h->via, buf, sizeof(buf)) : "",
                                             "dev", h->dev, "weight", (json_int_t)h->weight));
    }
    return json_pack("{sI so so}", "table", (json_int_t)r->table, "dst", pfx_json(r->af, r->dst, r->dst_len),
                     "nexthops", nhs);
}

json_t *plan_json(const struct plan *p)
{
    json_t *sws = json_array(), *by = json_object(), *cur = NULL;
    const char *cur_sw = NULL;
    /* Rules then routes, each sorted by switch: group with a lookup. */
    for (size_t i = 0; i < p->nrules + p->nroutes; i++) {
        bool rule = i < p->nrules;
        const char *sw = rule ? p->rules[i].sw : p->routes[i - p->nrules].sw;
        if (!cur_sw || strcmp(cur_sw, sw)) {
            if (!(cur = json_object_get(by, sw))) {
                cur = json_pack("{ss s[] s[]}", "node", sw, "rules", "routes");
                json_object_set_new(by, sw, cur);
                json_array_append(sws, cur);
            }
            cur_sw = sw;
        }
        json_array_append_new(json_object_get(cur, rule ? "rules" : "routes"),
                              rule ? rule_json(&p->rules[i]) : route_json(&p->routes[i - p->nrules]));
    }
    json_decref(by);
    return json_pack("{so}", "switches", sws);
}

int plan_write_json(const struct plan *p, FILE *f)
{
    json_t *o = plan_json(p);
    int rc = o && json_dumpf(o, f, JSON_INDENT(1)) == 0 && fputc('\n', f) != EOF ? 0 : -EIO;
    json_decref(o);
    return rc || ferror(f) ? -EIO : 0;
}

/* ---- reading the JSON form back ------------------------------------------ */

/* An integer member in lo..hi; absent is 0 when opt. */
static int get_int(const json_t *o, const char *key, bool opt, long long lo, long long hi, long long *out,
                   const char *path, char *err, size_t errlen)
{
    const json_t *v = json_object_get(o, key);
    *out = 0;
    if (!v && opt)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return tf_fail(err, errlen, -EINVAL, "%s.%s: want an integer %lld..%lld", path, key, lo, hi);
    *out = json_integer_value(v);
    return 0;
}

/* "ADDR/LEN" into af/addr/len; "" is any (len 0). */
static int get_pfx(const json_t *o, const char *key, uint8_t *af, uint8_t *a, uint8_t *len, const char *path,
                   char *err, size_t errlen)
{
    const char *s = json_string_value(json_object_get(o, key));
    int f = 0, l = 0;
    if (!s)
        return tf_fail(err, errlen, -EINVAL, "%s.%s: want a string", path, key);
    if (!s[0]) {
        *len = 0;
        return 0;
    }
    if (tf_prefix_parse(s, &f, a, &l) < 0 || (*af && *af != f))
        return tf_fail(err, errlen, -EINVAL, "%s.%s: '%.60s' is not a prefix of the rule's family", path, key, s);
    *af = (uint8_t)f;
    *len = (uint8_t)l;
    return 0;
}

static int rule_from_json(const json_t *o, const char *sw, struct plan_rule *r, const char *path, char *err,
                          size_t errlen)
{
    long long v[8];
    static const char *const keys[] = {"prio", "table", "af", "ipproto", "sport", "dport", "fwmark", "fwmask"};
    static const long long hi[] = {UINT32_MAX, UINT32_MAX, 6, 255, 65535, 65535, UINT32_MAX, UINT32_MAX};
    int rc = json_is_object(o) ? 0 : tf_fail(err, errlen, -EINVAL, "%s: want an object", path);
    for (int k = 0; k < 8 && !rc; k++)
        rc = get_int(o, keys[k], k >= 2, 0, hi[k], &v[k], path, err, errlen);
    if (rc)
        return rc;
    *r = (struct plan_rule){.prio = (uint32_t)v[0], .table = (uint32_t)v[1], .af = (uint8_t)(v[2] ? v[2] : 0),
                            .ipproto = (uint8_t)v[3], .sport = (uint16_t)v[4], .dport = (uint16_t)v[5],
                            .fwmark = (uint32_t)v[6], .fwmask = (uint32_t)v[7], .dscp = -1};
    tf_strlcpy(r->sw, sw, sizeof(r->sw));
    if ((rc = get_pfx(o, "src", &r->af, r->src, &r->src_len, path, err, errlen)) ||
        (rc = get_pfx(o, "dst", &r->af, r->dst, &r->dst_len, path, err, errlen)))
        return rc;
    if (!r->af)
        r->af = 4;
    const json_t *d = json_object_get(o, "dscp");
    if (d && !json_is_null(d)) {
        if (!json_is_integer(d) || json_integer_value(d) < 0 || json_integer_value(d) > 63)
            return tf_fail(err, errlen, -EINVAL, "%s.dscp: want null or an integer 0..63", path);
        r->dscp = (int16_t)json_integer_value(d);
    }
    return 0;
}

static int route_from_json(const json_t *o, const char *sw, struct plan_route *r, const char *path, char *err,
                           size_t errlen)
{
    long long table;
    int rc = json_is_object(o) ? get_int(o, "table", false, 1, UINT32_MAX, &table, path, err, errlen)
                               : tf_fail(err, errlen, -EINVAL, "%s: want an object", path);
    if (rc)
        return rc;
    *r = (struct plan_route){.table = (uint32_t)table};
    tf_strlcpy(r->sw, sw, sizeof(r->sw));
    if ((rc = get_pfx(o, "dst", &r->af, r->dst, &r->dst_len, path, err, errlen)))
        return rc;
    if (!r->af)
        r->af = 4;
    const json_t *nhs = json_object_get(o, "nexthops");
    if (!json_is_array(nhs) || json_array_size(nhs) < 1 || json_array_size(nhs) > PLAN_MAX_NH)
        return tf_fail(err, errlen, -EINVAL, "%s.nexthops: want 1..%d next hops", path, PLAN_MAX_NH);
    for (size_t k = 0; k < json_array_size(nhs); k++) {
        const json_t *h = json_array_get(nhs, k);
        struct plan_nh *nh = &r->nh[k];
        const char *via = json_string_value(json_object_get(h, "via")),
                   *dev = json_string_value(json_object_get(h, "dev"));
        long long w;
        char np[160];
        snprintf(np, sizeof(np), "%s.nexthops[%zu]", path, k);
        int f;
        if (!via || !dev || tf_strlcpy(nh->dev, dev, sizeof(nh->dev)) >= sizeof(nh->dev))
            return tf_fail(err, errlen, -EINVAL, "%s: want \"via\" and \"dev\" strings (dev at most %d bytes)", np,
                           PLAN_IF_LEN - 1);
        if (via[0] && tf_addr_parse(via, &f, nh->via) < 0)
            return tf_fail(err, errlen, -EINVAL, "%s.via: '%.60s' is not an address", np, via);
        nh->af = via[0] ? (uint8_t)f : 0;
        if ((rc = get_int(h, "weight", true, 1, 256, &w, np, err, errlen)))
            return rc;
        nh->weight = (uint16_t)(w ? w : 1);
    }
    r->nnh = (uint8_t)json_array_size(nhs);
    return 0;
}

int plan_from_json(const json_t *o, struct plan *out, char *err, size_t errlen)
{
    plan_init(out);
    const json_t *sws = json_object_get(o, "switches");
    if (!json_is_array(sws))
        return tf_fail(err, errlen, -EINVAL, "switches: want an array");
    int rc = 0;
    for (size_t i = 0; i < json_array_size(sws) && !rc; i++) {
        const json_t *s = json_array_get(sws, i);
        const char *sw = json_string_value(json_object_get(s, "node"));
        const json_t *rules = json_object_get(s, "rules"), *routes = json_object_get(s, "routes");
        char path[128];
        if (!sw || !sw[0] || strlen(sw) >= PLAN_SW_LEN || !json_is_array(rules) || !json_is_array(routes)) {
            rc = tf_fail(err, errlen, -EINVAL, "switches[%zu]: want \"node\" (1..%d bytes), \"rules\" and \"routes\"",
                         i, PLAN_SW_LEN - 1);
            break;
        }
        for (size_t k = 0; k < json_array_size(rules) && !rc; k++) {
            struct plan_rule r;
            snprintf(path, sizeof(path), "switches[%zu].rules[%zu]", i, k);
            if (!(rc = rule_from_json(json_array_get(rules, k), sw, &r, path, err, errlen)) &&
                (rc = plan_add_rule(out, &r)))
                tf_fail(err, errlen, rc, "%s: not a valid rule", path);
        }
        for (size_t k = 0; k < json_array_size(routes) && !rc; k++) {
            struct plan_route r;
            snprintf(path, sizeof(path), "switches[%zu].routes[%zu]", i, k);
            if (!(rc = route_from_json(json_array_get(routes, k), sw, &r, path, err, errlen)) &&
                (rc = plan_add_route(out, &r)))
                tf_fail(err, errlen, rc, "%s: not a valid route", path);
        }
    }
    if (rc)
        plan_free(out);
    else
        plan_sort(out);
    return rc;
}
