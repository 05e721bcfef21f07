/*
 * topo_index: private to the topology family. The name and address hashes
 * behind topo_node_by_name and topo_node_by_addr (topo_model.c), built by
 * the builder (topo_build.c) and nobody else: names as nodes are added
 * (links refer to them, duplicates are caught at once), addresses once every
 * node is known. After topo_build_finish they never change, so lookups need
 * no lock.
 */
#ifndef TF_TOPO_INDEX_H
#define TF_TOPO_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct topo;
struct topo_index;

/* Allocates t->idx with an empty name table; -ENOMEM. */
int  topo_index_new(struct topo *t);
/* Indexes node's name; -EEXIST with *other set when the name is already
 * taken, -ENOMEM. */
int  topo_index_add_name(struct topo *t, uint32_t node, uint32_t *other);
/* Indexes host addresses and leaf prefixes; -EEXIST (naming both nodes in
 * err) when two share one, -ENOMEM. */
int  topo_index_build_addrs(struct topo *t, char *err, size_t errlen);
void topo_index_free(struct topo_index *idx);

#endif
