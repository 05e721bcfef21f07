/*
 * topobuild: the only way a struct topo comes into being. The JSON loader and
 * the generators add nodes and links through it; topobuild_finish() builds
 * the CSR adjacency and the indexes and checks everything the topo.h
 * invariants promise (names, tiers, adjacency, addresses, reachability).
 *
 * Every error is written to the builder's err buffer, naming the offending
 * node or link, and returned as -errno. After an error the caller calls
 * topobuild_abort(); after topobuild_finish() the builder is empty.
 */
#ifndef TF_TOPOBUILD_H
#define TF_TOPOBUILD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "policy/topo.h"

struct topobuild {
    struct topo *t;
    uint32_t node_cap, link_cap;
    char *err;
    size_t errlen;
};

/* Optional per-link strings as the file names them (a/b ends); NULL = none. */
struct topobuild_ends {
    const char *a_if, *b_if, *a_ip, *b_ip;
};

int  topobuild_init(struct topobuild *b, const char *name, const uint8_t *tiers, int ntiers,
                    char *err, size_t errlen);
/* Preallocates room (generators know their sizes). */
int  topobuild_reserve(struct topobuild *b, uint32_t nodes, uint32_t links);
/* Adds a node; checks the name (1..31 bytes of [A-Za-z0-9._:@+-]), its
 * uniqueness and that its tier is one of the topology's tiers. */
int  topobuild_node(struct topobuild *b, const char *name, int tier, uint32_t *idx);
/* Sets a host's address (plen = full) or a leaf's prefix. */
int  topobuild_addr(struct topobuild *b, uint32_t node, int af, const uint8_t *addr, int plen);
/* Adds a link between two existing nodes; normalises a/b into lo/hi. */
int  topobuild_link(struct topobuild *b, uint32_t a, uint32_t bn, double gbps,
                    const struct topobuild_ends *ends, uint32_t *link);
int  topobuild_finish(struct topobuild *b, struct topo **out);
void topobuild_abort(struct topobuild *b);

/* Formats into err (if any) and returns code. */
#define topobuild_fail tf_fail

/* Index construction and teardown (topo.c). Names are indexed as nodes are
 * added (links refer to them); addresses once all nodes are known. */
int  topo_index_new(struct topo *t);
/* -EEXIST with *other set when the name is already taken. */
int  topo_index_add_name(struct topo *t, uint32_t node, uint32_t *other);
int  topo_index_build_addrs(struct topo *t, char *err, size_t errlen);
void topo_index_free(struct topo_index *idx);

#endif
