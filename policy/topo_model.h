/*
 * topo_model: the fabric topology model shared by the controller, the
 * simulator and the emulated fabric: its structures, its lookups (by name,
 * address, interface, neighbour) and its teardown. Include "policy/topo.h",
 * the family's public header, rather than this one.
 *
 * A topology is a set of tiered nodes (host, leaf, spine, superspine) and
 * full-duplex links that each join two adjacent tiers of the file's `tiers`
 * list. Each link has two directions, each a separate resource: dir = 2*link
 * is lo->hi ("up"), 2*link+1 is hi->lo ("down").
 *
 * Invariants after a successful load or generation (only the builder,
 * topo_build.c, makes one):
 *   - names are unique, 1..TOPO_NAME_MAX-1 bytes;
 *   - every link joins adjacent tiers; lo is the lower-tier end; gbps > 0;
 *   - up_links/down_links hold, per node, its link ids in file order (CSR);
 *   - hosts[] lists host nodes in file order; every host reaches every other
 *     host by an up/down path;
 *   - the structure is immutable: lookups and path queries never modify it
 *     and may run concurrently.
 *
 * This header sits below the builder and the path queries, which need the
 * structure; it declares nothing that needs them (no circle).
 */
#ifndef TF_TOPO_MODEL_H
#define TF_TOPO_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum topo_tier { TOPO_HOST = 0, TOPO_LEAF = 1, TOPO_SPINE = 2, TOPO_SUPERSPINE = 3 };
#define TOPO_NTIERS_MAX 4
#define TOPO_NONE UINT32_MAX
#define TOPO_NAME_MAX 32
/* Longest shortest path: up through every tier and back down. */
#define TOPO_MAX_HOPS (2 * (TOPO_NTIERS_MAX - 1))
/* Bounds on what a file or generator may ask for. */
#define TOPO_MAX_NODES 4000000u
#define TOPO_MAX_LINKS 16000000u
#define TOPO_FILE_MAX  (512u << 20)   /* bytes of JSON accepted by topo_load */

struct topo_node {
    char name[TOPO_NAME_MAX];
    uint8_t tier;                 /* enum topo_tier */
    uint8_t af, plen;             /* family (4/6, 0 none) and prefix length of addr */
    uint8_t addr[16];             /* host: its address (plen 32/128); leaf: its prefix */
    char netns[64], mgmt[64];     /* optional: how the netlink backend reaches a switch */
    uint32_t pod;                 /* grouping for generators (0 if none) */
    uint32_t asn;                 /* optional: the switch's BGP AS (bgp backend; 0 = not given) */
    uint16_t iproute2;            /* optional: the switch's iproute2 as MAJOR*100+MINOR
                                     (6.13 -> 613; 0 = not given), for the plan backend */
    uint32_t up_first, up_count;     /* uplinks: topo->up_links[up_first..+up_count) (link ids) */
    uint32_t down_first, down_count; /* downlinks: topo->down_links[...] */
};

struct topo_link {
    uint32_t lo, hi;              /* node indices; lo is the lower-tier end (file's a/b normalised) */
    double gbps;
    char lo_if[16], hi_if[16];    /* interface names at each end (from a_if/b_if), "" if none */
    char lo_ip[48], hi_ip[48];    /* addresses at each end (from a_ip/b_ip), nexthops, "" if none */
};

/* Each full-duplex link has two directions: dir = 2*link (lo->hi, "up") and 2*link+1 (hi->lo, "down"). */
static inline uint32_t topo_dir(uint32_t link, int down) { return 2 * link + (down ? 1 : 0); }
static inline uint32_t topo_dir_link(uint32_t dir) { return dir / 2; }
static inline int topo_dir_is_down(uint32_t dir) { return (int)(dir & 1); }

struct topo_index;                /* private (topo_index.h): name and address hashes */

struct topo {
    char name[64];
    uint8_t ntiers;               /* 2 (host,leaf) .. 4 */
    uint8_t tiers[TOPO_NTIERS_MAX]; /* the file's tier list, bottom-up (enum topo_tier) */
    uint32_t nnodes, nlinks, nhosts;
    struct topo_node *nodes;
    struct topo_link *links;
    uint32_t *up_links, *down_links; /* CSR adjacency */
    uint32_t *hosts;              /* indices of host nodes */
    struct topo_index *idx;       /* private (topo_index.h) */
    uint8_t path_fast;            /* topo_paths.c: closed-form decoding verified (topo_path_set_fast) */
};

void topo_free(struct topo *t);

/* Where a tier sits in t->tiers (0 = host, bottom-up), or -1 if the
 * topology has no such tier; links join tiers whose positions differ by 1. */
static inline int topo_tier_pos(const struct topo *t, int tier)
{
    for (int i = 0; i < t->ntiers; i++)
        if (t->tiers[i] == tier)
            return i;
    return -1;
}
/* "host", "leaf", "spine", "superspine"; NULL for anything else. */
const char *topo_tier_name(int tier);
/* The tier for a name, or -EINVAL. */
int  topo_tier_parse(const char *name);

/* Lookups. */
uint32_t topo_node_by_name(const struct topo *t, const char *name);       /* TOPO_NONE if unknown; O(1) hash */
uint32_t topo_node_by_addr(const struct topo *t, int af, const uint8_t *addr); /* host with that address, else the leaf whose prefix holds it (longest), else TOPO_NONE */
int  topo_dir_by_if(const struct topo *t, uint32_t node, const char *ifname, uint32_t *dir); /* the link direction LEAVING node by interface ifname; -ENOENT */
/* The direction from node `from` to adjacent node `to` (first such link);
 * -ENOENT if they are not adjacent. */
int  topo_dir_between(const struct topo *t, uint32_t from, uint32_t to, uint32_t *dir);
static inline uint32_t topo_dir_from(const struct topo *t, uint32_t dir)
{ return topo_dir_is_down(dir) ? t->links[dir / 2].hi : t->links[dir / 2].lo; }
static inline uint32_t topo_dir_to(const struct topo *t, uint32_t dir)
{ return topo_dir_is_down(dir) ? t->links[dir / 2].lo : t->links[dir / 2].hi; }
/* True when neither end of the direction's link is a host: a link between
 * switches, the ones placement can balance (a host link is its flows' own). */
static inline bool topo_dir_is_switch(const struct topo *t, uint32_t dir)
{ const struct topo_link *l = &t->links[dir / 2]; return t->nodes[l->lo].tier != TOPO_HOST && t->nodes[l->hi].tier != TOPO_HOST; }
double topo_dir_gbps(const struct topo *t, uint32_t dir);
/* The leaf a host hangs from (its first uplink's upper end); the node itself
 * for a leaf; TOPO_NONE otherwise. */
uint32_t topo_leaf_of(const struct topo *t, uint32_t node);

#endif
