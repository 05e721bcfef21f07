/*
 * topo_json: the DESIGN 2.1 topology file: reading (with jansson, duplicate
 * keys rejected, every field type- and bound-checked before it reaches the
 * builder) and writing (streamed, one node or link per line, so a 100K-host
 * file costs no memory beyond the topology itself).
 *
 * Unknown keys are ignored so that other tools may annotate the file; every
 * key tierflow knows is validated. Writing then reading gives an identical
 * topology (links are written lower end first, as "a").
 */
#include "policy/topo_json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo_build.h"
#include "policy/topo_gen.h"


/* Reads an optional string member; -EINVAL (message in err) if not a string. */
static int opt_str(json_t *o, const char *key, const char *what, const char **out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tf_fail(err, errlen, -EINVAL, "%s: \"%s\" must be a string", what, key);
    *out = json_string_value(v);
    return 0;
}

static int parse_tiers(json_t *root, json_t *nodes, uint8_t *tiers, int *ntiers, char *err, size_t errlen)
{
    json_t *jt = json_object_get(root, "tiers");
    if (!jt) {
        /* Infer: host, leaf and every higher tier a node uses. */
        int used[TOPO_NTIERS_MAX] = {1, 1};
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) {
            int tr = topo_tier_parse(json_string_value(json_object_get(n, "tier")));
            if (tr >= 0)
                used[tr] = 1;
        }
        *ntiers = 0;
        for (int k = 0; k < TOPO_NTIERS_MAX; k++)
            if (used[k])
                tiers[(*ntiers)++] = (uint8_t)k;
        return 0;
    }
    if (!json_is_array(jt) || json_array_size(jt) < 2 || json_array_size(jt) > TOPO_NTIERS_MAX)
        return tf_fail(err, errlen, -EINVAL, "tiers: must be an array of 2 to %d tier names", TOPO_NTIERS_MAX);
    size_t i;
    json_t *v;
    json_array_foreach(jt, i, v) {
        int tr = topo_tier_parse(json_string_value(v));
        if (tr < 0)
            return tf_fail(err, errlen, -EINVAL,
                           "tiers[%zu]: \"%.32s\" is not a tier (allowed: host, leaf, spine, superspine)", i,
                           json_is_string(v) ? json_string_value(v) : "?");
        tiers[i] = (uint8_t)tr;
    }
    *ntiers = (int)json_array_size(jt);
    return 0;
}

static int parse_node(struct topo_build *b, json_t *n, size_t i)
{
    char what[48];
    snprintf(what, sizeof(what), "nodes[%zu]", i);
    if (!json_is_object(n))
        return tf_fail(b->err, b->errlen, -EINVAL, "%s: must be an object", what);
    const char *name, *tier, *addr, *prefix, *netns, *mgmt, *ipr;
    int r;
    if ((r = opt_str(n, "name", what, &name, b->err, b->errlen)) < 0 ||
        (r = opt_str(n, "tier", what, &tier, b->err, b->errlen)) < 0)
        return r;
    if (!name)
        return tf_fail(b->err, b->errlen, -EINVAL, "%s: missing \"name\"", what);
    if (strlen(name) < TOPO_NAME_MAX)
        snprintf(what, sizeof(what), "node %s", name);
    if (!tier)
        return tf_fail(b->err, b->errlen, -EINVAL, "%s: missing \"tier\"", what);
    int tr = topo_tier_parse(tier);
    if (tr < 0)
        return tf_fail(b->err, b->errlen, -EINVAL,
                       "%s: tier \"%.32s\" is not a tier (allowed: host, leaf, spine, superspine)", what, tier);
    if ((r = opt_str(n, "addr", what, &addr, b->err, b->errlen)) < 0 ||
        (r = opt_str(n, "prefix", what, &prefix, b->err, b->errlen)) < 0 ||
        (r = opt_str(n, "netns", what, &netns, b->err, b->errlen)) < 0 ||
        (r = opt_str(n, "mgmt", what, &mgmt, b->err, b->errlen)) < 0 ||
        (r = opt_str(n, "iproute2", what, &ipr, b->err, b->errlen)) < 0)
        return r;
    uint32_t idx;
    if ((r = topo_build_node(b, name, tr, &idx)) < 0)
        return r;
    struct topo_node *nd = &b->t->nodes[idx];
    if ((addr && tr != TOPO_HOST) || (prefix && tr != TOPO_LEAF))
        return tf_fail(b->err, b->errlen, -EINVAL, "%s: \"%s\" is only allowed on a %s", what,
                       addr ? "addr" : "prefix", addr ? "host" : "leaf");
    if (addr || prefix) {
        int af, plen;
        uint8_t a[16];
        r = addr ? tf_addr_parse(addr, &af, a) : tf_prefix_parse(prefix, &af, a, &plen);
        if (addr && r == 0)
            plen = af == 6 ? 128 : 32;
        if (r < 0)
            return tf_fail(b->err, b->errlen, -EINVAL, "%s: bad %s \"%.50s\"", what, addr ? "addr" : "prefix",
                           addr ? addr : prefix);
        if ((r = topo_build_addr(b, idx, af, a, plen)) < 0)
            return r;
    }
    if ((netns && tf_strlcpy(nd->netns, netns, sizeof(nd->netns)) >= sizeof(nd->netns)) ||
        (mgmt && tf_strlcpy(nd->mgmt, mgmt, sizeof(nd->mgmt)) >= sizeof(nd->mgmt)))
        return tf_fail(b->err, b->errlen, -ENAMETOOLONG, "%s: \"%s\" is longer than %zu bytes", what,
                       netns && strlen(netns) >= sizeof(nd->netns) ? "netns" : "mgmt", sizeof(nd->netns) - 1);
    if (ipr) {
        unsigned maj, min;
        int used = 0;
        if (sscanf(ipr, "%3u.%2u%n", &maj, &min, &used) != 2 || (ipr[used] && ipr[used] != '.') || maj < 1 ||
            maj > 99 || min > 99)
            return tf_fail(b->err, b->errlen, -EINVAL,
                           "%s: \"iproute2\" \"%.32s\" is not a version MAJOR.MINOR[.PATCH] (e.g. \"6.1.0\")",
                           what, ipr);
        nd->iproute2 = (uint16_t)(maj * 100 + min);
    }
    json_t *pod = json_object_get(n, "pod");
    if (pod) {
        if (!json_is_integer(pod) || json_integer_value(pod) < 0 || json_integer_value(pod) > UINT32_MAX - 1)
            return tf_fail(b->err, b->errlen, -EINVAL, "%s: \"pod\" must be an integer 0..%u", what,
                           UINT32_MAX - 1);
        nd->pod = (uint32_t)json_integer_value(pod);
    }
    /* A switch's BGP AS number: the bgp backend's peer-as for it. */
    json_t *asn = json_object_get(n, "asn");
    if (asn) {
        if (!json_is_integer(asn) || json_integer_value(asn) < 1 || json_integer_value(asn) > UINT32_MAX ||
            tr == TOPO_HOST)
            return tf_fail(b->err, b->errlen, -EINVAL, "%s: \"asn\" must be an integer 1..%u, on a switch",
                           what, UINT32_MAX);
        nd->asn = (uint32_t)json_integer_value(asn);
    }
    return 0;
}

static int parse_link(struct topo_build *b, json_t *l, size_t i)
{
    char what[32];
    snprintf(what, sizeof(what), "links[%zu]", i);
    if (!json_is_object(l))
        return tf_fail(b->err, b->errlen, -EINVAL, "%s: must be an object", what);
    const char *a, *bn;
    struct topo_build_ends e;
    int r;
    if ((r = opt_str(l, "a", what, &a, b->err, b->errlen)) < 0 || (r = opt_str(l, "b", what, &bn, b->err, b->errlen)) < 0 ||
        (r = opt_str(l, "a_if", what, &e.a_if, b->err, b->errlen)) < 0 ||
        (r = opt_str(l, "b_if", what, &e.b_if, b->err, b->errlen)) < 0 ||
        (r = opt_str(l, "a_ip", what, &e.a_ip, b->err, b->errlen)) < 0 ||
        (r = opt_str(l, "b_ip", what, &e.b_ip, b->err, b->errlen)) < 0)
        return r;
    if (!a || !bn)
        return tf_fail(b->err, b->errlen, -EINVAL, "%s: missing \"%s\"", what, a ? "b" : "a");
    uint32_t na = topo_node_by_name(b->t, a), nb = topo_node_by_name(b->t, bn);
    if (na == TOPO_NONE || nb == TOPO_NONE)
        return tf_fail(b->err, b->errlen, -ENOENT, "%s (%.40s-%.40s): unknown node \"%.40s\"", what, a, bn,
                       na == TOPO_NONE ? a : bn);
    json_t *g = json_object_get(l, "gbps");
    if (!json_is_number(g))
        return tf_fail(b->err, b->errlen, -EINVAL, "%s (%s-%s): \"gbps\" must be a number", what, a, bn);
    return topo_build_link(b, na, nb, json_number_value(g), &e, NULL);
}

static int from_json(json_t *root, struct topo **out, char *err, size_t errlen)
{
    if (!json_is_object(root))
        return tf_fail(err, errlen, -EINVAL, "top level must be an object");
    json_t *nodes = json_object_get(root, "nodes"), *links = json_object_get(root, "links");
    json_t *jname = json_object_get(root, "name");
    if (!json_is_array(nodes) || !json_is_array(links))
        return tf_fail(err, errlen, -EINVAL, "\"%s\" must be an array", json_is_array(nodes) ? "links" : "nodes");
    if (jname && !json_is_string(jname))
        return tf_fail(err, errlen, -EINVAL, "\"name\" must be a string");
    uint8_t tiers[TOPO_NTIERS_MAX];
    int ntiers = 0, r;
    if ((r = parse_tiers(root, nodes, tiers, &ntiers, err, errlen)) < 0)
        return r;
    struct topo_build b;
    if ((r = topo_build_init(&b, jname ? json_string_value(jname) : "", tiers, ntiers, err, errlen)) < 0 ||
        (r = topo_build_reserve(&b, (uint32_t)json_array_size(nodes) > TOPO_MAX_NODES ? TOPO_MAX_NODES + 1
                                                                                      : (uint32_t)json_array_size(nodes),
                               json_array_size(links) > TOPO_MAX_LINKS ? TOPO_MAX_LINKS + 1
                                                                       : (uint32_t)json_array_size(links))) < 0)
        goto fail;
    size_t i;
    json_t *v;
    json_array_foreach(nodes, i, v)
        if ((r = parse_node(&b, v, i)) < 0)
            goto fail;
    json_array_foreach(links, i, v)
        if ((r = parse_link(&b, v, i)) < 0)
            goto fail;
    if ((r = topo_build_finish(&b, out)) < 0)
        goto fail;
    return 0;
fail:
    topo_build_abort(&b);
    return r;
}

int topo_from_json(const char *text, size_t len, const char *origin, struct topo **out, char *err, size_t errlen)
{
    char msg[256] = "";
    int r;
    json_error_t je;
    if (!origin)
        origin = "topology";
    *out = NULL;
    if (len > TOPO_FILE_MAX)
        return tf_fail(err, errlen, -EFBIG, "%s: larger than %u bytes", origin, TOPO_FILE_MAX);
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return tf_fail(err, errlen, -EINVAL, "%s:%d:%d: %s", origin, je.line, je.column, je.text);
    r = from_json(root, out, msg, sizeof(msg));
    json_decref(root);
    if (r < 0)
        tf_fail(err, errlen, r, "%s: %s", origin, msg);
    return r;
}

int topo_load(const char *spec, struct topo **out, char *err, size_t errlen)
{
    if (!spec || !*spec)
        return tf_fail(err, errlen, -EINVAL, "no topology given (a file or leafspine:/fattree:/clos3:)");
    if (topo_is_generator(spec))
        return topo_generate(spec, out, err, errlen);
    char *text;
    size_t len;
    int r = tf_read_file(spec, TOPO_FILE_MAX, &text, &len);
    if (r < 0)
        return tf_fail(err, errlen, r, "%s: %s", spec, r == -EFBIG ? "file too large" : strerror(-r));
    r = topo_from_json(text, len, spec, out, err, errlen);
    free(text);
    return r;
}

/* Strings in a built topology are validated (names, interface and IP text),
 * but the topology name and netns/mgmt are free text: escape everything. */
static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void put_num(FILE *f, double v)
{
    char buf[40];
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof(buf), "%.17g", v);
    fputs(buf, f);
}

static void put_opt(FILE *f, const char *key, const char *v)
{
    if (*v) {
        fprintf(f, ", \"%s\": ", key);
        put_str(f, v);
    }
}

int topo_write_json(const struct topo *t, FILE *f)
{
    if (!t || !f)
        return -EINVAL;
    char buf[64];
    fputs("{\"name\": ", f);
    put_str(f, t->name);
    fputs(",\n \"tiers\": [", f);
    for (int i = 0; i < t->ntiers; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", topo_tier_name(t->tiers[i]));
    fputs("],\n \"nodes\": [\n", f);
    for (uint32_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        fprintf(f, "  {\"name\": \"%s\", \"tier\": \"%s\"", n->name, topo_tier_name(n->tier));
        if (n->af && n->tier == TOPO_HOST)
            fprintf(f, ", \"addr\": \"%s\"", tf_addr_str(n->af, n->addr, buf, sizeof(buf)));
        else if (n->af)
            fprintf(f, ", \"prefix\": \"%s/%u\"", tf_addr_str(n->af, n->addr, buf, sizeof(buf)), n->plen);
        if (n->pod)
            fprintf(f, ", \"pod\": %u", n->pod);
        put_opt(f, "netns", n->netns);
        put_opt(f, "mgmt", n->mgmt);
        if (n->asn)
            fprintf(f, ", \"asn\": %u", n->asn);
        if (n->iproute2)
            fprintf(f, ", \"iproute2\": \"%u.%u\"", n->iproute2 / 100, n->iproute2 % 100);
        fprintf(f, "}%s\n", i + 1 < t->nnodes ? "," : "");
    }
    fputs(" ],\n \"links\": [\n", f);
    for (uint32_t i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        fprintf(f, "  {\"a\": \"%s\", \"b\": \"%s\", \"gbps\": ", t->nodes[l->lo].name, t->nodes[l->hi].name);
        put_num(f, l->gbps);
        put_opt(f, "a_if", l->lo_if);
        put_opt(f, "b_if", l->hi_if);
        put_opt(f, "a_ip", l->lo_ip);
        put_opt(f, "b_ip", l->hi_ip);
        fprintf(f, "}%s\n", i + 1 < t->nlinks ? "," : "");
    }
    fputs(" ]\n}\n", f);
    return ferror(f) ? -EIO : 0;
}
