/*
 * topo_build: incremental construction and validation of a struct topo.
 *
 * Nodes and links go into growing arrays; names are indexed as they come so
 * that duplicates are caught at once and links can refer to names. finish()
 * then lays out the CSR adjacency (links in insertion order, so everything
 * downstream is deterministic), indexes addresses and proves that every pair
 * of hosts has an up/down path.
 *
 * That proof: a pair has a common ancestor iff it has a common *root* (a
 * switch without uplinks), because ancestor sets are closed upwards. So each
 * switch gets a bitset of the roots above it, each host the union over its
 * leaves, and only the distinct host sets (one or a handful in a Clos) are
 * compared pairwise. Both steps are bounded; beyond the bounds (documented in
 * docs/topology.md) only plain connectivity of the hosts is checked.
 */
#include "policy/topo_build.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo_index.h"
#include "policy/topo_paths.h"

#define MAX_BITSET_WORDS (64u << 20)   /* 512 MB would be absurd; this is the cap */
#define MAX_DISTINCT_SETS 4096u

static void tiers_str(const struct topo *t, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->ntiers && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", topo_tier_name(t->tiers[i]));
}

int topo_build_init(struct topo_build *b, const char *name, const uint8_t *tiers, int ntiers,
                    char *err, size_t errlen)
{
    memset(b, 0, sizeof(*b));
    b->err = err;
    b->errlen = errlen;
    if (ntiers < 2 || ntiers > TOPO_NTIERS_MAX)
        return tf_fail(err, errlen, -EINVAL, "tiers: need 2 to %d tiers, got %d", TOPO_NTIERS_MAX, ntiers);
    if (tiers[0] != TOPO_HOST || tiers[1] != TOPO_LEAF)
        return tf_fail(err, errlen, -EINVAL, "tiers: must start with \"host\", \"leaf\" (bottom-up)");
    for (int i = 2; i < ntiers; i++)
        if (tiers[i] <= tiers[i - 1] || tiers[i] >= TOPO_NTIERS_MAX)
            return tf_fail(err, errlen, -EINVAL,
                           "tiers: \"%s\" at position %d is out of order (bottom-up: host, leaf, spine, superspine)",
                           topo_tier_name(tiers[i]) ? topo_tier_name(tiers[i]) : "?", i);
    if (!(b->t = calloc(1, sizeof(*b->t))) || topo_index_new(b->t) < 0)
        return tf_fail(err, errlen, -ENOMEM, "out of memory");
    if (name && tf_strlcpy(b->t->name, name, sizeof(b->t->name)) >= sizeof(b->t->name))
        return tf_fail(err, errlen, -ENAMETOOLONG, "name: \"%.20s...\" is longer than %zu bytes", name,
                       sizeof(b->t->name) - 1);
    b->t->ntiers = (uint8_t)ntiers;
    memcpy(b->t->tiers, tiers, (size_t)ntiers);
    return 0;
}

static int grow(void **p, uint32_t *cap, uint32_t want, size_t elem)
{
    if (want <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 64;
    while (n < want)
        n = n > UINT32_MAX / 2 ? want : n * 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

int topo_build_reserve(struct topo_build *b, uint32_t nodes, uint32_t links)
{
    if (nodes > TOPO_MAX_NODES || links > TOPO_MAX_LINKS)
        return tf_fail(b->err, b->errlen, -E2BIG, "topology too large: %u nodes, %u links (max %u, %u)",
                       nodes, links, TOPO_MAX_NODES, TOPO_MAX_LINKS);
    if (grow((void **)&b->t->nodes, &b->node_cap, nodes, sizeof(struct topo_node)) < 0 ||
        grow((void **)&b->t->links, &b->link_cap, links, sizeof(struct topo_link)) < 0)
        return tf_fail(b->err, b->errlen, -ENOMEM, "out of memory for %u nodes, %u links", nodes, links);
    return 0;
}

static int name_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("._:@+-", *s)))
            return 0;
    return 1;
}

int topo_build_node(struct topo_build *b, const char *name, int tier, uint32_t *idx)
{
    struct topo *t = b->t;
    if (strlen(name) >= TOPO_NAME_MAX)
        return tf_fail(b->err, b->errlen, -ENAMETOOLONG, "node \"%.40s\": name longer than %d bytes",
                       name, TOPO_NAME_MAX - 1);
    if (!name_ok(name))
        return tf_fail(b->err, b->errlen, -EINVAL,
                       "node \"%s\": name must be 1-%d characters of A-Z a-z 0-9 . _ : @ + -", name,
                       TOPO_NAME_MAX - 1);
    if (topo_tier_pos(t, tier) < 0) {
        char tl[64];
        tiers_str(t, tl, sizeof(tl));
        return tf_fail(b->err, b->errlen, -EINVAL, "node %s: tier \"%s\" is not one of the tiers (%s)", name,
                       topo_tier_name(tier) ? topo_tier_name(tier) : "?", tl);
    }
    if (t->nnodes >= TOPO_MAX_NODES)
        return tf_fail(b->err, b->errlen, -E2BIG, "node %s: more than %u nodes", name, TOPO_MAX_NODES);
    if (grow((void **)&t->nodes, &b->node_cap, t->nnodes + 1, sizeof(struct topo_node)) < 0)
        return tf_fail(b->err, b->errlen, -ENOMEM, "out of memory");
    uint32_t i = t->nnodes;
    struct topo_node *n = &t->nodes[i];
    memset(n, 0, sizeof(*n));
    tf_strlcpy(n->name, name, sizeof(n->name));
    n->tier = (uint8_t)tier;
    uint32_t other;
    int r = topo_index_add_name(t, i, &other);
    if (r == -EEXIST)
        return tf_fail(b->err, b->errlen, r, "node %s: duplicate name (nodes[%u] and nodes[%u])", name,
                       other, i);
    if (r < 0)
        return tf_fail(b->err, b->errlen, r, "out of memory");
    t->nnodes++;
    t->nhosts += tier == TOPO_HOST;
    *idx = i;
    return 0;
}

int topo_build_addr(struct topo_build *b, uint32_t node, int af, const uint8_t *addr, int plen)
{
    struct topo_node *n = &b->t->nodes[node];
    int full = af == 6 ? 128 : 32;
    char buf[64];
    if ((af != 4 && af != 6) || plen < 0 || plen > full)
        return tf_fail(b->err, b->errlen, -EINVAL, "node %s: bad address family or prefix length", n->name);
    if (n->tier == TOPO_HOST && plen != full)
        return tf_fail(b->err, b->errlen, -EINVAL, "node %s: a host address is one address, not a /%d", n->name,
                       plen);
    if (n->tier != TOPO_HOST && n->tier != TOPO_LEAF)
        return tf_fail(b->err, b->errlen, -EINVAL, "node %s: only hosts (addr) and leaves (prefix) have addresses",
                       n->name);
    for (int i = plen; i < full; i++)
        if (addr[i / 8] & (0x80 >> (i % 8)))
            return tf_fail(b->err, b->errlen, -EINVAL, "node %s: prefix %s/%d has host bits set", n->name,
                           tf_addr_str(af, addr, buf, sizeof(buf)), plen);
    n->af = (uint8_t)af;
    n->plen = (uint8_t)plen;
    memset(n->addr, 0, sizeof(n->addr));
    memcpy(n->addr, addr, af == 6 ? 16 : 4);
    return 0;
}

/* Fails naming the link being added ("links[N] (A-B)"): formatted only on
 * error, since links are added once per link of a 100K fabric. */
static int link_fail(struct topo_build *b, uint32_t a, uint32_t bn, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int link_fail(struct topo_build *b, uint32_t a, uint32_t bn, int code, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const struct topo *t = b->t;
    return tf_fail(b->err, b->errlen, code, "link links[%u] (%s-%s): %s", t->nlinks, t->nodes[a].name,
                   t->nodes[bn].name, msg);
}

static int copy_end(struct topo_build *b, uint32_t la, uint32_t lb, const char *what, char *dst, size_t len,
                    const char *src, int is_ip)
{
    if (!src)
        return 0;
    if (tf_strlcpy(dst, src, len) >= len)
        return link_fail(b, la, lb, -ENAMETOOLONG, "%s \"%.60s\" is longer than %zu bytes", what, src, len - 1);
    int af, plen;
    uint8_t a[16];
    if (is_ip && *src && tf_prefix_parse(src, &af, a, &plen) < 0)
        return link_fail(b, la, lb, -EINVAL, "%s \"%.60s\" is not an address", what, src);
    for (const char *p = src; *p; p++)
        if (*p <= ' ' || *p == '"' || *p == '\\' || *p == 0x7f)
            return link_fail(b, la, lb, -EINVAL, "%s \"%.60s\" has a bad character", what, src);
    return 0;
}

int topo_build_link(struct topo_build *b, uint32_t a, uint32_t bn, double gbps,
                    const struct topo_build_ends *ends, uint32_t *link)
{
    struct topo *t = b->t;
    const struct topo_node *na = &t->nodes[a], *nb = &t->nodes[bn];
    int pa = topo_tier_pos(t, na->tier), pb = topo_tier_pos(t, nb->tier);
    if (pa - pb != 1 && pb - pa != 1) {
        char tl[64];
        tiers_str(t, tl, sizeof(tl));
        return link_fail(b, a, bn, -EINVAL, "joins %s and %s, which are not adjacent tiers (tiers: %s)",
                         topo_tier_name(na->tier), topo_tier_name(nb->tier), tl);
    }
    if (!(gbps > 0) || !isfinite(gbps) || gbps > 1e7)
        return link_fail(b, a, bn, -EINVAL, "gbps %g must be > 0 and at most 1e7", gbps);
    if (t->nlinks >= TOPO_MAX_LINKS)
        return link_fail(b, a, bn, -E2BIG, "more than %u links", TOPO_MAX_LINKS);
    if (grow((void **)&t->links, &b->link_cap, t->nlinks + 1, sizeof(struct topo_link)) < 0)
        return tf_fail(b->err, b->errlen, -ENOMEM, "out of memory");
    struct topo_link *l = &t->links[t->nlinks];
    memset(l, 0, sizeof(*l));
    int swap = pa > pb;
    l->lo = swap ? bn : a;
    l->hi = swap ? a : bn;
    l->gbps = gbps;
    if (ends) {
        int r;
        if ((r = copy_end(b, a, bn, "a_if", swap ? l->hi_if : l->lo_if, sizeof(l->lo_if), ends->a_if, 0)) < 0 ||
            (r = copy_end(b, a, bn, "b_if", swap ? l->lo_if : l->hi_if, sizeof(l->lo_if), ends->b_if, 0)) < 0 ||
            (r = copy_end(b, a, bn, "a_ip", swap ? l->hi_ip : l->lo_ip, sizeof(l->lo_ip), ends->a_ip, 1)) < 0 ||
            (r = copy_end(b, a, bn, "b_ip", swap ? l->lo_ip : l->hi_ip, sizeof(l->lo_ip), ends->b_ip, 1)) < 0)
            return r;
    }
    if (link)
        *link = t->nlinks;
    t->nlinks++;
    return 0;
}

static int build_csr(struct topo *t)
{
    size_t nl = t->nlinks ? t->nlinks : 1;
    t->up_links = malloc(nl * sizeof(uint32_t));
    t->down_links = malloc(nl * sizeof(uint32_t));
    t->hosts = malloc((t->nhosts ? t->nhosts : 1) * sizeof(uint32_t));
    if (!t->up_links || !t->down_links || !t->hosts)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->nnodes; i++)
        t->nodes[i].up_count = t->nodes[i].down_count = 0;
    for (uint32_t l = 0; l < t->nlinks; l++) {
        t->nodes[t->links[l].lo].up_count++;
        t->nodes[t->links[l].hi].down_count++;
    }
    uint32_t up = 0, down = 0, h = 0;
    for (uint32_t i = 0; i < t->nnodes; i++) {
        struct topo_node *n = &t->nodes[i];
        n->up_first = up;
        n->down_first = down;
        up += n->up_count;
        down += n->down_count;
        n->up_count = n->down_count = 0;
        if (n->tier == TOPO_HOST)
            t->hosts[h++] = i;
    }
    for (uint32_t l = 0; l < t->nlinks; l++) {
        struct topo_node *lo = &t->nodes[t->links[l].lo], *hi = &t->nodes[t->links[l].hi];
        t->up_links[lo->up_first + lo->up_count++] = l;
        t->down_links[hi->down_first + hi->down_count++] = l;
    }
    return 0;
}

/* Union-find fallback: every host in one connected component. */
static uint32_t uf_find(uint32_t *p, uint32_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

static int check_connected(struct topo_build *b)
{
    struct topo *t = b->t;
    uint32_t *p = malloc((size_t)t->nnodes * sizeof(*p));
    if (!p)
        return tf_fail(b->err, b->errlen, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < t->nnodes; i++)
        p[i] = i;
    for (uint32_t l = 0; l < t->nlinks; l++)
        p[uf_find(p, t->links[l].lo)] = uf_find(p, t->links[l].hi);
    uint32_t h0 = t->hosts[0], r0 = uf_find(p, h0);
    for (uint32_t i = 1; i < t->nhosts; i++)
        if (uf_find(p, t->hosts[i]) != r0) {
            uint32_t h = t->hosts[i];
            free(p);
            return tf_fail(b->err, b->errlen, -EINVAL, "host %s has no path to host %s", t->nodes[h].name,
                           t->nodes[h0].name);
        }
    free(p);
    return 0;
}

struct rootsets {
    uint64_t *bits;      /* per node, W words */
    uint32_t W;
    uint64_t *sets;      /* distinct host sets, W words each */
    uint32_t *rep;       /* a host having each distinct set */
    uint32_t nsets;
};

static int host_set(const struct topo *t, struct rootsets *rs, uint32_t h, uint64_t *out)
{
    const struct topo_node *n = &t->nodes[h];
    memset(out, 0, rs->W * sizeof(uint64_t));
    for (uint32_t i = 0; i < n->up_count; i++) {
        const uint64_t *s = rs->bits + (size_t)t->links[t->up_links[n->up_first + i]].hi * rs->W;
        for (uint32_t w = 0; w < rs->W; w++)
            out[w] |= s[w];
    }
    for (uint32_t i = 0; i < rs->nsets; i++)
        if (memcmp(rs->sets + (size_t)i * rs->W, out, rs->W * sizeof(uint64_t)) == 0)
            return 0;
    if (rs->nsets >= MAX_DISTINCT_SETS)
        return -E2BIG;
    memcpy(rs->sets + (size_t)rs->nsets * rs->W, out, rs->W * sizeof(uint64_t));
    rs->rep[rs->nsets++] = h;
    return 0;
}

static int sets_meet(const uint64_t *a, const uint64_t *b, uint32_t W)
{
    for (uint32_t w = 0; w < W; w++)
        if (a[w] & b[w])
            return 1;
    return 0;
}

/* 1 when proven (or disproven, with err set and -EINVAL), 0 when too big to try. */
static int check_updown(struct topo_build *b)
{
    struct topo *t = b->t;
    uint32_t R = 0;
    for (uint32_t i = 0; i < t->nnodes; i++)
        R += t->nodes[i].tier != TOPO_HOST && t->nodes[i].up_count == 0;
    struct rootsets rs = {.W = (R + 63) / 64};
    if (!R || (uint64_t)t->nnodes * rs.W > MAX_BITSET_WORDS ||
        (uint64_t)MAX_DISTINCT_SETS * rs.W > MAX_BITSET_WORDS)
        return 0;
    rs.bits = calloc((size_t)t->nnodes * rs.W, sizeof(uint64_t));
    rs.sets = malloc((size_t)(MAX_DISTINCT_SETS + 1) * rs.W * sizeof(uint64_t));
    rs.rep = malloc(MAX_DISTINCT_SETS * sizeof(uint32_t));
    int ret = 1;
    if (!rs.bits || !rs.sets || !rs.rep) {
        ret = tf_fail(b->err, b->errlen, -ENOMEM, "out of memory");
        goto out;
    }
    /* Top-down over the tier list: a switch's roots are its own bit or the
     * union over its uplinks, which sit one tier higher and are done. */
    uint32_t r = 0;
    for (int pos = t->ntiers - 1; pos >= 1; pos--)
        for (uint32_t i = 0; i < t->nnodes; i++) {
            const struct topo_node *n = &t->nodes[i];
            if (n->tier != t->tiers[pos])
                continue;
            uint64_t *bi = rs.bits + (size_t)i * rs.W;
            if (!n->up_count) {
                bi[r / 64] |= 1ULL << (r % 64);
                r++;
            }
            for (uint32_t k = 0; k < n->up_count; k++) {
                const uint64_t *s = rs.bits + (size_t)t->links[t->up_links[n->up_first + k]].hi * rs.W;
                for (uint32_t w = 0; w < rs.W; w++)
                    bi[w] |= s[w];
            }
        }
    uint64_t *tmp = rs.sets + (size_t)MAX_DISTINCT_SETS * rs.W;
    for (uint32_t i = 0; i < t->nhosts; i++)
        if (host_set(t, &rs, t->hosts[i], tmp) < 0) {
            ret = 0;
            goto out;
        }
    for (uint32_t i = 0; i < rs.nsets; i++)
        for (uint32_t j = 0; j < i; j++)
            if (!sets_meet(rs.sets + (size_t)i * rs.W, rs.sets + (size_t)j * rs.W, rs.W)) {
                ret = tf_fail(b->err, b->errlen, -EINVAL,
                              "host %s has no up/down path to host %s (no common switch above them)",
                              t->nodes[rs.rep[i]].name, t->nodes[rs.rep[j]].name);
                goto out;
            }
out:
    free(rs.bits);
    free(rs.sets);
    free(rs.rep);
    return ret;
}

int topo_build_finish(struct topo_build *b, struct topo **out)
{
    struct topo *t = b->t;
    int r;
    if (!t->nhosts)
        return tf_fail(b->err, b->errlen, -EINVAL, "topology %s has no hosts", t->name);
    if (build_csr(t) < 0)
        return tf_fail(b->err, b->errlen, -ENOMEM, "out of memory");
    for (uint32_t i = 0; i < t->nhosts; i++) {
        const struct topo_node *h = &t->nodes[t->hosts[i]];
        if (!h->up_count)
            return tf_fail(b->err, b->errlen, -EINVAL, "host %s has no links, so no path to the other hosts",
                           h->name);
    }
    if ((r = topo_index_build_addrs(t, b->err, b->errlen)) < 0)
        return r;
    if ((r = check_updown(b)) < 0)
        return r;
    if (r == 0 && (r = check_connected(b)) < 0)
        return r;
    topo_path_set_fast(t, 1);
    *out = t;
    b->t = NULL;
    return 0;
}

void topo_build_abort(struct topo_build *b)
{
    topo_free(b->t);
    b->t = NULL;
}
