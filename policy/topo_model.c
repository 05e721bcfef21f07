/*
 * topo_model: lookups on a built topology and its private indexes.
 *
 * Three open-addressing tables of node indices (power-of-two sized, at most
 * half full, linear probing, TOPO_NONE = empty): node names; host addresses;
 * leaf prefixes keyed by (family, length, masked address). Address lookup
 * tries the host table, then each distinct leaf prefix length, longest first,
 * so it is O(distinct lengths), not O(leaves). Tables are built once and
 * never change afterwards, so lookups need no locking.
 */
#include "policy/topo_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo_index.h"

struct topo_index {
    uint32_t *names, names_mask, names_used;
    uint32_t *hosts, hosts_mask;
    uint32_t *leaves, leaves_mask;
    uint16_t lens[2 * 129];     /* distinct (af << 8 | plen) of leaf prefixes, longest first */
    int nlens;
};

static const char *const tier_names[TOPO_NTIERS_MAX] = {"host", "leaf", "spine", "superspine"};

const char *topo_tier_name(int tier)
{
    return tier >= 0 && tier < TOPO_NTIERS_MAX ? tier_names[tier] : NULL;
}

int topo_tier_parse(const char *name)
{
    for (int i = 0; name && i < TOPO_NTIERS_MAX; i++)
        if (strcmp(name, tier_names[i]) == 0)
            return i;
    return -EINVAL;
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h ^ (h >> 29);
}
#define HASH_SEED 0xcbf29ce484222325ULL

static uint32_t *table_new(uint32_t n, uint32_t *mask)
{
    uint32_t size = 16;
    while (size < 2 * (uint64_t)n + 2)
        size *= 2;
    uint32_t *tab = malloc((size_t)size * sizeof(*tab));
    if (!tab)
        return NULL;
    memset(tab, 0xff, (size_t)size * sizeof(*tab));
    *mask = size - 1;
    return tab;
}

int topo_index_new(struct topo *t)
{
    t->idx = calloc(1, sizeof(*t->idx));
    if (!t->idx || !(t->idx->names = table_new(64, &t->idx->names_mask)))
        return -ENOMEM;
    return 0;
}

void topo_index_free(struct topo_index *idx)
{
    if (!idx)
        return;
    free(idx->names);
    free(idx->hosts);
    free(idx->leaves);
    free(idx);
}

static uint64_t name_hash(const char *name) { return hash_bytes(name, strlen(name), HASH_SEED); }

static int names_grow(struct topo *t)
{
    struct topo_index *x = t->idx;
    uint32_t mask, *tab = table_new(2 * x->names_used + 2, &mask);
    if (!tab)
        return -ENOMEM;
    for (uint32_t i = 0; i <= x->names_mask; i++) {
        uint32_t n = x->names[i];
        if (n == TOPO_NONE)
            continue;
        uint64_t h = name_hash(t->nodes[n].name);
        while (tab[h & mask] != TOPO_NONE)
            h++;
        tab[h & mask] = n;
    }
    free(x->names);
    x->names = tab;
    x->names_mask = mask;
    return 0;
}

int topo_index_add_name(struct topo *t, uint32_t node, uint32_t *other)
{
    struct topo_index *x = t->idx;
    if (2 * (uint64_t)(x->names_used + 1) > x->names_mask) {
        int r = names_grow(t);
        if (r < 0)
            return r;
    }
    const char *name = t->nodes[node].name;
    for (uint64_t h = name_hash(name);; h++) {
        uint32_t *slot = &x->names[h & x->names_mask];
        if (*slot == TOPO_NONE) {
            *slot = node;
            x->names_used++;
            return 0;
        }
        if (strcmp(t->nodes[*slot].name, name) == 0) {
            *other = *slot;
            return -EEXIST;
        }
    }
}

uint32_t topo_node_by_name(const struct topo *t, const char *name)
{
    if (!t || !name || !t->idx)
        return TOPO_NONE;
    const struct topo_index *x = t->idx;
    for (uint64_t h = name_hash(name);; h++) {
        uint32_t n = x->names[h & x->names_mask];
        if (n == TOPO_NONE || strcmp(t->nodes[n].name, name) == 0)
            return n;
    }
}

static int alen(int af) { return af == 6 ? 16 : 4; }

static void mask_addr(int af, const uint8_t *addr, int plen, uint8_t out[16])
{
    memset(out, 0, 16);
    for (int i = 0; i < alen(af); i++) {
        int bits = plen - 8 * i;
        out[i] = bits >= 8 ? addr[i] : bits <= 0 ? 0 : (uint8_t)(addr[i] & (0xff00 >> bits));
    }
}

static uint64_t key_hash(int af, int plen, const uint8_t *addr)
{
    uint8_t k[18] = {(uint8_t)af, (uint8_t)plen};
    memcpy(k + 2, addr, 16);
    return hash_bytes(k, sizeof(k), HASH_SEED);
}

static int node_key_eq(const struct topo_node *n, int af, int plen, const uint8_t *addr)
{
    return n->af == af && n->plen == plen && memcmp(n->addr, addr, (size_t)alen(af)) == 0;
}

/* Inserts node n keyed by its own af/plen/addr; -EEXIST with *other on a clash. */
static int addr_insert(const struct topo *t, uint32_t *tab, uint32_t mask, uint32_t n, uint32_t *other)
{
    const struct topo_node *nd = &t->nodes[n];
    for (uint64_t h = key_hash(nd->af, nd->plen, nd->addr);; h++) {
        uint32_t *slot = &tab[h & mask];
        if (*slot == TOPO_NONE) {
            *slot = n;
            return 0;
        }
        if (node_key_eq(&t->nodes[*slot], nd->af, nd->plen, nd->addr)) {
            *other = *slot;
            return -EEXIST;
        }
    }
}

static uint32_t addr_find(const struct topo *t, const uint32_t *tab, uint32_t mask, int af, int plen,
                          const uint8_t *addr)
{
    for (uint64_t h = key_hash(af, plen, addr);; h++) {
        uint32_t n = tab[h & mask];
        if (n == TOPO_NONE || node_key_eq(&t->nodes[n], af, plen, addr))
            return n;
    }
}

static int cmp_len_desc(const void *a, const void *b)
{
    int x = *(const uint16_t *)a & 0xff, y = *(const uint16_t *)b & 0xff;
    return y - x;
}

int topo_index_build_addrs(struct topo *t, char *err, size_t errlen)
{
    struct topo_index *x = t->idx;
    uint32_t nleaves = 0;
    for (uint32_t i = 0; i < t->nnodes; i++)
        nleaves += t->nodes[i].tier == TOPO_LEAF;
    x->hosts = table_new(t->nhosts, &x->hosts_mask);
    x->leaves = table_new(nleaves, &x->leaves_mask);
    if (!x->hosts || !x->leaves)
        return tf_fail(err, errlen, -ENOMEM, "out of memory indexing addresses");
    uint8_t seen[2][129] = {{0}};
    char buf[64];
    for (uint32_t i = 0; i < t->nnodes; i++) {
        const struct topo_node *n = &t->nodes[i];
        if (!n->af)
            continue;
        uint32_t other;
        int host = n->tier == TOPO_HOST;
        if (addr_insert(t, host ? x->hosts : x->leaves, host ? x->hosts_mask : x->leaves_mask, i, &other) < 0)
            return tf_fail(err, errlen, -EEXIST, "node %s: %s %s/%u is already used by node %s",
                           n->name, host ? "address" : "prefix", tf_addr_str(n->af, n->addr, buf, sizeof(buf)),
                           n->plen, t->nodes[other].name);
        if (!host && !seen[n->af == 6][n->plen]) {
            seen[n->af == 6][n->plen] = 1;
            x->lens[x->nlens++] = (uint16_t)(n->af << 8 | n->plen);
        }
    }
    qsort(x->lens, (size_t)x->nlens, sizeof(x->lens[0]), cmp_len_desc);
    return 0;
}

uint32_t topo_node_by_addr(const struct topo *t, int af, const uint8_t *addr)
{
    if (!t || !addr || !t->idx || (af != 4 && af != 6))
        return TOPO_NONE;
    const struct topo_index *x = t->idx;
    uint8_t key[16] = {0};
    memcpy(key, addr, (size_t)alen(af));
    uint32_t n = addr_find(t, x->hosts, x->hosts_mask, af, af == 6 ? 128 : 32, key);
    if (n != TOPO_NONE)
        return n;
    for (int i = 0; i < x->nlens; i++) {
        if ((x->lens[i] >> 8) != af)
            continue;
        int plen = x->lens[i] & 0xff;
        mask_addr(af, addr, plen, key);
        if ((n = addr_find(t, x->leaves, x->leaves_mask, af, plen, key)) != TOPO_NONE)
            return n;
    }
    return TOPO_NONE;
}

int topo_dir_by_if(const struct topo *t, uint32_t node, const char *ifname, uint32_t *dir)
{
    if (!t || node >= t->nnodes || !ifname || !*ifname)
        return -EINVAL;
    const struct topo_node *n = &t->nodes[node];
    for (uint32_t i = 0; i < n->up_count; i++) {
        uint32_t l = t->up_links[n->up_first + i];
        if (strcmp(t->links[l].lo_if, ifname) == 0)
            return *dir = topo_dir(l, 0), 0;
    }
    for (uint32_t i = 0; i < n->down_count; i++) {
        uint32_t l = t->down_links[n->down_first + i];
        if (strcmp(t->links[l].hi_if, ifname) == 0)
            return *dir = topo_dir(l, 1), 0;
    }
    return -ENOENT;
}

int topo_dir_between(const struct topo *t, uint32_t from, uint32_t to, uint32_t *dir)
{
    if (!t || from >= t->nnodes || to >= t->nnodes)
        return -EINVAL;
    const struct topo_node *n = &t->nodes[from];
    for (uint32_t i = 0; i < n->up_count; i++) {
        uint32_t l = t->up_links[n->up_first + i];
        if (t->links[l].hi == to)
            return *dir = topo_dir(l, 0), 0;
    }
    for (uint32_t i = 0; i < n->down_count; i++) {
        uint32_t l = t->down_links[n->down_first + i];
        if (t->links[l].lo == to)
            return *dir = topo_dir(l, 1), 0;
    }
    return -ENOENT;
}

double topo_dir_gbps(const struct topo *t, uint32_t dir)
{
    return t && dir / 2 < t->nlinks ? t->links[dir / 2].gbps : 0.0;
}

uint32_t topo_leaf_of(const struct topo *t, uint32_t node)
{
    if (!t || node >= t->nnodes)
        return TOPO_NONE;
    const struct topo_node *n = &t->nodes[node];
    if (n->tier == TOPO_LEAF)
        return node;
    if (n->tier != TOPO_HOST || !n->up_count)
        return TOPO_NONE;
    return t->links[t->up_links[n->up_first]].hi;
}

void topo_free(struct topo *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->links);
    free(t->up_links);
    free(t->down_links);
    free(t->hosts);
    topo_index_free(t->idx);
    free(t);
}
