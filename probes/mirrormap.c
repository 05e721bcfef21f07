/*
 * mirrormap: see mirrormap.h. Ports are deduplicated by (node, if), so an
 * ERSPAN session and an sFlow source that describe the same switch port share
 * one index and their data lands in one place. Lookups are linear over at
 * most MIRRORMAP_MAX keys; they run once per datagram or mirrored frame, and
 * Keys are sorted once parsed, and looked up by binary search: a flood of
 * datagrams from addresses the map does not name costs log2(keys) compares
 * each, never a scan.
 */
#include "probes/mirrormap.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { KEY_ERSPAN = 0, KEY_SFLOW = 1 };

struct mm_key {
    uint8_t kind, af;
    uint8_t addr[16];
    uint32_t id;              /* session or ifIndex */
    uint32_t port;
};

struct mirrormap {
    struct mm_key keys[MIRRORMAP_MAX];
    uint32_t nkeys;
    struct mirrormap_port ports[MIRRORMAP_MAX];
    uint32_t nports;
};

/* Order: kind, family, address, id; so that all keys of one source are
 * adjacent and the first of them is where (kind, af, addr, 0) would go. */
static int key_cmp3(uint8_t kind, uint8_t af, const uint8_t *addr, uint32_t id, const struct mm_key *k)
{
    if (kind != k->kind)
        return kind < k->kind ? -1 : 1;
    if (af != k->af)
        return af < k->af ? -1 : 1;
    int c = memcmp(addr, k->addr, 16);
    if (c)
        return c;
    return id == k->id ? 0 : id < k->id ? -1 : 1;
}

static int key_cmp(const void *a, const void *b)
{
    const struct mm_key *x = a;
    return key_cmp3(x->kind, x->af, x->addr, x->id, b);
}

/* Index of the first key not below (kind, af, addr, id). */
static uint32_t lower_bound(const struct mirrormap *m, uint8_t kind, int af, const uint8_t *addr,
                            uint32_t id)
{
    uint8_t a[16] = {0};
    memcpy(a, addr, af == 6 ? 16 : 4);
    uint32_t lo = 0, hi = m->nkeys;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (key_cmp3(kind, (uint8_t)af, a, id, &m->keys[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static uint32_t port_index(struct mirrormap *m, const char *node, const char *ifname, double gbps)
{
    for (uint32_t i = 0; i < m->nports; i++)
        if (strcmp(m->ports[i].node, node) == 0 && strcmp(m->ports[i].ifname, ifname) == 0) {
            if (gbps > 0)
                m->ports[i].link_gbps = gbps;
            return i;
        }
    struct mirrormap_port *p = &m->ports[m->nports];
    tf_strlcpy(p->node, node, sizeof(p->node));
    tf_strlcpy(p->ifname, ifname, sizeof(p->ifname));
    p->link_gbps = gbps;
    return m->nports++;
}

static int parse_entries(struct mirrormap *m, json_t *arr, int kind, char *err, size_t errlen)
{
    const char *sect = kind == KEY_ERSPAN ? "erspan" : "sflow";
    const char *addr_key = kind == KEY_ERSPAN ? "src" : "agent";
    const char *id_key = kind == KEY_ERSPAN ? "session" : "ifindex";
    uint64_t id_max = kind == KEY_ERSPAN ? 1023 : UINT32_MAX; /* expanded samples carry 32 bits */
    if (!arr)
        return 0;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "\"%s\" must be an array", sect);
        return -EINVAL;
    }
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        json_t *a = json_object_get(e, addr_key), *id = json_object_get(e, id_key);
        json_t *node = json_object_get(e, "node"), *ifn = json_object_get(e, "if");
        json_t *g = json_object_get(e, "link_gbps");
        if (!json_is_object(e) || !json_is_string(a) || !json_is_integer(id) ||
            !json_is_string(node) || !json_is_string(ifn)) {
            snprintf(err, errlen, "%s[%zu]: needs string \"%s\", integer \"%s\", strings \"node\" and \"if\"",
                     sect, i, addr_key, id_key);
            return -EINVAL;
        }
        if (m->nkeys == MIRRORMAP_MAX) {
            snprintf(err, errlen, "%s[%zu]: more than %d entries", sect, i, MIRRORMAP_MAX);
            return -E2BIG;
        }
        struct mm_key k = {.kind = (uint8_t)kind};
        int af;
        if (tf_addr_parse(json_string_value(a), &af, k.addr) < 0) {
            snprintf(err, errlen, "%s[%zu]: \"%s\" is not an IP address: \"%s\"", sect, i, addr_key,
                     json_string_value(a));
            return -EINVAL;
        }
        k.af = (uint8_t)af;
        json_int_t v = json_integer_value(id);
        if (v < 0 || (uint64_t)v > id_max) {
            snprintf(err, errlen, "%s[%zu]: \"%s\" %lld out of range 0..%llu", sect, i, id_key,
                     (long long)v, (unsigned long long)id_max);
            return -ERANGE;
        }
        k.id = (uint32_t)v;
        const char *ns = json_string_value(node), *is = json_string_value(ifn);
        if (!reportspec_name_ok(ns, REPORTSPEC_PROBE_MAX) || !reportspec_name_ok(is, REPORTSPEC_IF_MAX)) {
            snprintf(err, errlen, "%s[%zu]: \"node\" must be 1..%d and \"if\" 1..%d printable characters "
                     "without spaces", sect, i, REPORTSPEC_PROBE_MAX, REPORTSPEC_IF_MAX);
            return -EINVAL;
        }
        double gbps = 0;
        if (g && (!json_is_number(g) || (gbps = json_number_value(g)) <= 0 || gbps > 1e5)) {
            snprintf(err, errlen, "%s[%zu]: \"link_gbps\" must be a number in (0, 100000]", sect, i);
            return -ERANGE;
        }
        for (uint32_t j = 0; j < m->nkeys; j++)
            if (m->keys[j].kind == k.kind && m->keys[j].af == k.af && m->keys[j].id == k.id &&
                memcmp(m->keys[j].addr, k.addr, 16) == 0) {
                snprintf(err, errlen, "%s[%zu]: duplicate %s %s %s %u", sect, i, sect, addr_key,
                         json_string_value(a), k.id);
                return -EEXIST;
            }
        k.port = port_index(m, ns, is, gbps);
        m->keys[m->nkeys++] = k;
    }
    return 0;
}

int mirrormap_parse(const char *text, size_t len, struct mirrormap **out, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "line %d column %d: %s", je.line, je.column, je.text);
        return -EINVAL;
    }
    int r = -EINVAL;
    struct mirrormap *m = NULL;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the mapping must be a JSON object");
        goto out;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "erspan") != 0 && strcmp(key, "sflow") != 0) {
            snprintf(err, errlen, "unknown key \"%s\" (expected \"erspan\", \"sflow\")", key);
            goto out;
        }
    }
    m = calloc(1, sizeof(*m));
    if (!m) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = parse_entries(m, json_object_get(root, "erspan"), KEY_ERSPAN, err, errlen)) < 0 ||
        (r = parse_entries(m, json_object_get(root, "sflow"), KEY_SFLOW, err, errlen)) < 0)
        goto out;
    qsort(m->keys, m->nkeys, sizeof(m->keys[0]), key_cmp);
    *out = m;
    m = NULL;
    r = 0;
out:
    free(m);
    json_decref(root);
    return r;
}

int mirrormap_load(const char *path, struct mirrormap **out, char *err, size_t errlen)
{
    char *text;
    size_t len;
    int r = tf_read_file(path, 4 << 20, &text, &len);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
        return r;
    }
    char inner[200];
    r = mirrormap_parse(text, len, out, inner, sizeof(inner));
    if (r < 0)
        snprintf(err, errlen, "%s: %s", path, inner);
    free(text);
    return r;
}

void mirrormap_free(struct mirrormap *m) { free(m); }

static uint32_t lookup(const struct mirrormap *m, uint8_t kind, int af, const uint8_t *addr, uint32_t id)
{
    if (!m)
        return MIRRORMAP_NONE;
    uint32_t i = lower_bound(m, kind, af, addr, id);
    const struct mm_key *k = &m->keys[i];
    if (i < m->nkeys && k->kind == kind && k->af == af && k->id == id &&
        memcmp(k->addr, addr, af == 6 ? 16 : 4) == 0)
        return k->port;
    return MIRRORMAP_NONE;
}

static bool has_source(const struct mirrormap *m, uint8_t kind, int af, const uint8_t *addr)
{
    if (!m)
        return false;
    uint32_t i = lower_bound(m, kind, af, addr, 0);
    const struct mm_key *k = &m->keys[i];
    return i < m->nkeys && k->kind == kind && k->af == af && memcmp(k->addr, addr, af == 6 ? 16 : 4) == 0;
}

bool mirrormap_has_erspan_src(const struct mirrormap *m, int af, const uint8_t *src)
{
    return has_source(m, KEY_ERSPAN, af, src);
}

bool mirrormap_has_sflow_agent(const struct mirrormap *m, int af, const uint8_t *agent)
{
    return has_source(m, KEY_SFLOW, af, agent);
}

uint32_t mirrormap_erspan(const struct mirrormap *m, int af, const uint8_t *src, uint16_t session)
{
    return lookup(m, KEY_ERSPAN, af, src, session);
}

uint32_t mirrormap_sflow(const struct mirrormap *m, int af, const uint8_t *agent, uint32_t ifindex)
{
    return lookup(m, KEY_SFLOW, af, agent, ifindex);
}

uint32_t mirrormap_nports(const struct mirrormap *m) { return m ? m->nports : 0; }
uint32_t mirrormap_nkeys(const struct mirrormap *m) { return m ? m->nkeys : 0; }

/* Keys and ports are built in zeroed memory, names copied with their
 * padding zero: equal contents compare equal byte for byte. */
bool mirrormap_equal(const struct mirrormap *a, const struct mirrormap *b)
{
    if (!a || !b)
        return a == b;
    return a->nkeys == b->nkeys && a->nports == b->nports &&
           memcmp(a->keys, b->keys, a->nkeys * sizeof(a->keys[0])) == 0 &&
           memcmp(a->ports, b->ports, a->nports * sizeof(a->ports[0])) == 0;
}

const struct mirrormap_port *mirrormap_port(const struct mirrormap *m, uint32_t idx)
{
    return m && idx < m->nports ? &m->ports[idx] : NULL;
}
