/*
 * topo_gen: synthetic fabrics from a one-line spec, "KIND:key=value,...".
 *
 *   leafspine  two tiers of switches, every leaf wired to every spine;
 *   fattree    Hedera's k-ary fat-tree (edge/agg/core as leaf/spine/superspine);
 *   clos3      a 3-tier Clos in pods with spine planes, e.g. Meta's 24K cluster.
 *
 * Every parameter is bounded, unknown or repeated keys are errors naming the
 * key, and the output is fully deterministic: nodes are numbered H1.., L1..,
 * S1.., SS1.. pod-major, links are added host-leaf, then leaf-spine, then
 * spine-superspine, each in ascending order (so path index order follows
 * switch numbering). Address schemes are in docs/topology.md.
 */
#include "policy/topo_gen.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo_build.h"

struct gen_param {
    const char *key;
    double min, max, def;
    int integer;
    double val;
    int set;
};

/* Parses "k=v,k=v" against params[]; errors name the kind and the key. */
static int parse_params(const char *kind, const char *args, struct gen_param *p, int np, char *err, size_t errlen)
{
    for (int i = 0; i < np; i++)
        p[i].val = p[i].def, p[i].set = 0;
    char buf[512];
    if (tf_strlcpy(buf, args, sizeof(buf)) >= sizeof(buf))
        return tf_fail(err, errlen, -E2BIG, "%s: arguments longer than %zu bytes", kind, sizeof(buf) - 1);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return tf_fail(err, errlen, -EINVAL, "%s: \"%s\" needs a value (key=value)", kind, kv);
        *eq = '\0';
        int i = 0;
        while (i < np && strcmp(p[i].key, kv) != 0)
            i++;
        if (i == np) {
            char keys[160] = "";
            size_t off = 0;
            for (int k = 0; k < np && off < sizeof(keys); k++)
                off += (size_t)snprintf(keys + off, sizeof(keys) - off, "%s%s", k ? ", " : "", p[k].key);
            return tf_fail(err, errlen, -EINVAL, "%s: unknown key \"%s\" (keys: %s)", kind, kv, keys);
        }
        if (p[i].set)
            return tf_fail(err, errlen, -EINVAL, "%s: key \"%s\" given twice", kind, kv);
        int r;
        if (p[i].integer) {
            uint64_t v;
            r = tf_parse_u64(eq + 1, (uint64_t)p[i].min, (uint64_t)p[i].max, &v);
            p[i].val = (double)v;
        } else {
            r = tf_parse_double(eq + 1, p[i].min, p[i].max, &p[i].val);
        }
        if (r < 0)
            return tf_fail(err, errlen, -EINVAL, "%s: %s=\"%s\" must be %s %g..%g", kind, kv, eq + 1,
                           p[i].integer ? "an integer" : "a number", p[i].min, p[i].max);
        p[i].set = 1;
    }
    return 0;
}

static int add_node(struct topo_build *b, const char *prefix, uint32_t num, int tier, uint32_t pod, uint32_t *idx)
{
    char name[TOPO_NAME_MAX];
    snprintf(name, sizeof(name), "%s%u", prefix, num);
    int r = topo_build_node(b, name, tier, idx);
    if (r == 0)
        b->t->nodes[*idx].pod = pod;
    return r;
}

static int add_addr4(struct topo_build *b, uint32_t node, uint8_t a, uint8_t c, uint8_t d, uint8_t e, int plen)
{
    const uint8_t addr[16] = {a, c, d, e};
    return topo_build_addr(b, node, 4, addr, plen);
}

/* Hosts H(first..) under leaf `leaf`, addressed 10.x.y.(host_base+h) where
 * x.y = the leaf's 16-bit number (net); the leaf gets 10.x.y.0/24. */
static int add_rack(struct topo_build *b, uint32_t leaf, uint32_t net, uint32_t nhosts, uint32_t first,
                    uint32_t host_base, uint32_t pod, double gbps)
{
    int r;
    uint8_t x = (uint8_t)(net >> 8), y = (uint8_t)net;
    if ((r = add_addr4(b, leaf, 10, x, y, 0, 24)) < 0)
        return r;
    for (uint32_t h = 0; h < nhosts; h++) {
        uint32_t n;
        if ((r = add_node(b, "H", first + h, TOPO_HOST, pod, &n)) < 0 ||
            (r = add_addr4(b, n, 10, x, y, (uint8_t)(host_base + h), 32)) < 0 ||
            (r = topo_build_link(b, n, leaf, gbps, NULL, NULL)) < 0)
            return r;
    }
    return 0;
}

/* Switch nodes PREFIX(first..first+count-1) at one tier. Node indices are
 * assigned in creation order, so each layer's indices form a range. */
static int add_switches(struct topo_build *b, const char *prefix, uint32_t first, uint32_t count, int tier,
                        uint32_t pod)
{
    for (uint32_t i = 0; i < count; i++) {
        uint32_t n;
        int r = add_node(b, prefix, first + i, tier, pod, &n);
        if (r < 0)
            return r;
    }
    return 0;
}

static int sized(struct topo_build *b, const char *kind, double nodes, double links)
{
    if (nodes > TOPO_MAX_NODES || links > TOPO_MAX_LINKS)
        return tf_fail(b->err, b->errlen, -E2BIG, "%s: %.0f nodes and %.0f links exceed the limits (%u, %u)",
                       kind, nodes, links, TOPO_MAX_NODES, TOPO_MAX_LINKS);
    return topo_build_reserve(b, (uint32_t)nodes, (uint32_t)links);
}

static uint32_t next_index(const struct topo_build *b) { return b->t->nnodes; }

/* The switches of a 3-tier fabric, pod-major: per pod `leaves` leaves L..,
 * then per pod `spines` spines S.., then nss superspines SS1.. (fattree and
 * clos3 alike, so that their names and indices follow one scheme). */
static int add_pod_switches(struct topo_build *b, uint32_t pods, uint32_t leaves, uint32_t spines, uint32_t nss,
                            uint32_t *leaf0, uint32_t *spine0, uint32_t *ss0)
{
    int r;
    *leaf0 = next_index(b);
    for (uint32_t pod = 0; pod < pods; pod++)
        if ((r = add_switches(b, "L", pod * leaves + 1, leaves, TOPO_LEAF, pod + 1)) < 0)
            return r;
    *spine0 = next_index(b);
    for (uint32_t pod = 0; pod < pods; pod++)
        if ((r = add_switches(b, "S", pod * spines + 1, spines, TOPO_SPINE, pod + 1)) < 0)
            return r;
    *ss0 = next_index(b);
    return add_switches(b, "SS", 1, nss, TOPO_SUPERSPINE, 0);
}

static int gen_leafspine(struct topo_build *b, const char *args)
{
    struct gen_param p[] = {
        {"leaves", 1, 65535, 2, 1}, {"spines", 1, 4096, 4, 1}, {"hosts", 1, 254, 4, 1}, {"gbps", 1e-3, 1e6, 100, 0},
    };
    int r = parse_params("leafspine", args, p, (int)TF_ARRAY_SIZE(p), b->err, b->errlen);
    if (r < 0)
        return r;
    uint32_t L = (uint32_t)p[0].val, S = (uint32_t)p[1].val, H = (uint32_t)p[2].val;
    double g = p[3].val;
    const uint8_t tiers[] = {TOPO_HOST, TOPO_LEAF, TOPO_SPINE};
    if ((r = topo_build_init(b, "", tiers, 3, b->err, b->errlen)) < 0)
        return r;
    snprintf(b->t->name, sizeof(b->t->name), "leafspine-%ux%ux%u", L, S, H);
    if ((r = sized(b, "leafspine", (double)L * H + L + S, (double)L * H + (double)L * S)) < 0)
        return r;
    uint32_t leaf0 = next_index(b), spine0 = leaf0 + L;
    if ((r = add_switches(b, "L", 1, L, TOPO_LEAF, 0)) < 0 || (r = add_switches(b, "S", 1, S, TOPO_SPINE, 0)) < 0)
        return r;
    for (uint32_t l = 0; l < L; l++)
        if ((r = add_rack(b, leaf0 + l, l + 1, H, l * H + 1, 1, 0, g)) < 0)
            return r;
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t s = 0; s < S; s++)
            if ((r = topo_build_link(b, leaf0 + l, spine0 + s, g, NULL, NULL)) < 0)
                return r;
    return 0;
}

static int gen_fattree(struct topo_build *b, const char *args)
{
    struct gen_param p[] = {{"k", 2, 128, 4, 1}, {"gbps", 1e-3, 1e6, 1, 0}};
    int r = parse_params("fattree", args, p, (int)TF_ARRAY_SIZE(p), b->err, b->errlen);
    if (r < 0)
        return r;
    uint32_t k = (uint32_t)p[0].val, h = k / 2;
    double g = p[1].val;
    if (k % 2)
        return tf_fail(b->err, b->errlen, -EINVAL, "fattree: k=%u must be even", k);
    const uint8_t tiers[] = {TOPO_HOST, TOPO_LEAF, TOPO_SPINE, TOPO_SUPERSPINE};
    if ((r = topo_build_init(b, "", tiers, 4, b->err, b->errlen)) < 0)
        return r;
    snprintf(b->t->name, sizeof(b->t->name), "fattree-k%u", k);
    double hosts = (double)k * k * k / 4, cores = (double)h * h;
    if ((r = sized(b, "fattree", hosts + k * k + cores, hosts * 3)) < 0)
        return r;
    /* Switches first (hosts link to an edge that must exist), per pod: edges then aggs. */
    uint32_t edge0, agg0, core0;
    if ((r = add_pod_switches(b, k, h, h, h * h, &edge0, &agg0, &core0)) < 0)
        return r;
    /* Hedera addressing: host 10.pod.edge.(2..k/2+1), edge prefix 10.pod.edge.0/24. */
    for (uint32_t pod = 0; pod < k; pod++)
        for (uint32_t e = 0; e < h; e++)
            if ((r = add_rack(b, edge0 + pod * h + e, pod << 8 | e, h, (pod * h + e) * h + 1, 2, pod + 1, g)) < 0)
                return r;
    for (uint32_t pod = 0; pod < k; pod++)
        for (uint32_t e = 0; e < h; e++)
            for (uint32_t a = 0; a < h; a++)
                if ((r = topo_build_link(b, edge0 + pod * h + e, agg0 + pod * h + a, g, NULL, NULL)) < 0)
                    return r;
    for (uint32_t pod = 0; pod < k; pod++)
        for (uint32_t a = 0; a < h; a++)
            for (uint32_t c = 0; c < h; c++)
                if ((r = topo_build_link(b, agg0 + pod * h + a, core0 + a * h + c, g, NULL, NULL)) < 0)
                    return r;
    return 0;
}

static int gen_clos3(struct topo_build *b, const char *args)
{
    struct gen_param p[] = {
        {"pods", 1, 4096, 8, 1},        {"racks", 1, 4096, 192, 1}, {"hosts", 1, 254, 16, 1},
        {"spines", 1, 1024, 0, 1},      {"superspines", 1, 65536, 0, 1},
        {"gbps", 1e-3, 1e6, 400, 0},    {"oversub", 1e-3, 1e6, 1, 0},
    };
    int r = parse_params("clos3", args, p, (int)TF_ARRAY_SIZE(p), b->err, b->errlen);
    if (r < 0)
        return r;
    uint32_t P = (uint32_t)p[0].val, R = (uint32_t)p[1].val, H = (uint32_t)p[2].val;
    uint32_t S = p[3].set ? (uint32_t)p[3].val : H;      /* non-blocking leaves by default */
    uint32_t SS = p[4].set ? (uint32_t)p[4].val : 4 * S;
    double g = p[5].val, oversub = p[6].val;
    if (SS % S)
        return tf_fail(b->err, b->errlen, -EINVAL,
                       "clos3: superspines=%u must be a multiple of spines=%u (one plane per spine)", SS, S);
    if ((uint64_t)P * R > 65535)
        return tf_fail(b->err, b->errlen, -E2BIG,
                       "clos3: pods*racks=%llu exceeds 65535 racks (the 10.x.y.0/24 rack addressing)",
                       (unsigned long long)P * R);
    uint32_t per_plane = SS / S;
    /* Leaves are non-blocking: H hosts at g share S uplinks. Above the pod
     * each spine's uplinks carry 1/oversub of its downlinks. */
    double leaf_g = g * H / S, ss_g = leaf_g * R / (oversub * per_plane);
    const uint8_t tiers[] = {TOPO_HOST, TOPO_LEAF, TOPO_SPINE, TOPO_SUPERSPINE};
    if ((r = topo_build_init(b, "", tiers, 4, b->err, b->errlen)) < 0)
        return r;
    snprintf(b->t->name, sizeof(b->t->name), "clos3-%ux%ux%u", P, R, H);
    double leaves = (double)P * R, hosts = leaves * H;
    if ((r = sized(b, "clos3", hosts + leaves + (double)P * S + SS, hosts + leaves * S + (double)P * S * per_plane)) < 0)
        return r;
    uint32_t leaf0, spine0, ss0;
    if ((r = add_pod_switches(b, P, R, S, SS, &leaf0, &spine0, &ss0)) < 0)
        return r;
    for (uint32_t l = 0; l < P * R; l++)
        if ((r = add_rack(b, leaf0 + l, l + 1, H, l * H + 1, 1, l / R + 1, g)) < 0)
            return r;
    for (uint32_t l = 0; l < P * R; l++)
        for (uint32_t s = 0; s < S; s++)
            if ((r = topo_build_link(b, leaf0 + l, spine0 + (l / R) * S + s, leaf_g, NULL, NULL)) < 0)
                return r;
    /* Plane s: spine s of every pod and superspines s*per_plane.. */
    for (uint32_t sp = 0; sp < P * S; sp++)
        for (uint32_t j = 0; j < per_plane; j++)
            if ((r = topo_build_link(b, spine0 + sp, ss0 + (sp % S) * per_plane + j, ss_g, NULL, NULL)) < 0)
                return r;
    return 0;
}

static const struct {
    const char *kind;
    int (*gen)(struct topo_build *b, const char *args);
} kinds[] = {{"leafspine", gen_leafspine}, {"fattree", gen_fattree}, {"clos3", gen_clos3}};

/* The kinds[] row that spec ("KIND:...") names, or -1. */
static int kind_of(const char *spec)
{
    const char *colon = spec ? strchr(spec, ':') : NULL;
    for (size_t i = 0; colon && i < TF_ARRAY_SIZE(kinds); i++)
        if (strlen(kinds[i].kind) == (size_t)(colon - spec) && !strncmp(spec, kinds[i].kind, (size_t)(colon - spec)))
            return (int)i;
    return -1;
}

int topo_is_generator(const char *spec) { return kind_of(spec) >= 0; }

int topo_generate(const char *spec, struct topo **out, char *err, size_t errlen)
{
    *out = NULL;
    int i = kind_of(spec);
    if (i < 0)
        return tf_fail(err, errlen, -EINVAL, "unknown generator \"%.40s\" (leafspine:, fattree:, clos3:)",
                       spec ? spec : "");
    struct topo_build b = {.err = err, .errlen = errlen};
    int r = kinds[i].gen(&b, strchr(spec, ':') + 1);
    if (r == 0)
        r = topo_build_finish(&b, out);
    if (r < 0)
        topo_build_abort(&b);
    return r;
}
