/*
 * topo_build: private to the topology family; the only way a struct topo
 * comes into being. The JSON loader and the generators add nodes and links
 * through it; topo_build_finish() builds the CSR adjacency and the indexes
 * and checks everything the topo_model.h invariants promise (names, tiers,
 * adjacency, addresses, reachability).
 *
 * Every error is written to the builder's err buffer (with tf_fail), naming
 * the offending node or link, and returned as -errno. After an error the
 * caller calls topo_build_abort(); after topo_build_finish() the builder is
 * empty.
 */
#ifndef TF_TOPO_BUILD_H
#define TF_TOPO_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "policy/topo_model.h"

struct topo_build {
    struct topo *t;
    uint32_t node_cap, link_cap;
    char *err;
    size_t errlen;
};

/* Optional per-link strings as the file names them (a/b ends); NULL = none. */
struct topo_build_ends {
    const char *a_if, *b_if, *a_ip, *b_ip;
};

int  topo_build_init(struct topo_build *b, const char *name, const uint8_t *tiers, int ntiers,
                     char *err, size_t errlen);
/* Preallocates room (generators know their sizes). */
int  topo_build_reserve(struct topo_build *b, uint32_t nodes, uint32_t links);
/* Adds a node; checks the name (1..31 bytes of [A-Za-z0-9._:@+-]), its
 * uniqueness and that its tier is one of the topology's tiers. */
int  topo_build_node(struct topo_build *b, const char *name, int tier, uint32_t *idx);
/* Sets a host's address (plen = full) or a leaf's prefix. */
int  topo_build_addr(struct topo_build *b, uint32_t node, int af, const uint8_t *addr, int plen);
/* Adds a link between two existing nodes; normalises a/b into lo/hi. */
int  topo_build_link(struct topo_build *b, uint32_t a, uint32_t bn, double gbps,
                     const struct topo_build_ends *ends, uint32_t *link);
int  topo_build_finish(struct topo_build *b, struct topo **out);
void topo_build_abort(struct topo_build *b);

#endif
