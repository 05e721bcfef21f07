/*
 * topo_json: a topology to and from the DESIGN 2.1 file format, and
 * topo_load, the one entry point that takes either a file or a generator
 * spec. Errors return -errno and write a message naming the offending item
 * (file, node, link, key) into err. Writing then reading gives an identical
 * topology.
 */
#ifndef TF_TOPO_JSON_H
#define TF_TOPO_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "policy/topo_model.h"

int  topo_load(const char *file_or_generator, struct topo **out, char *err, size_t errlen); /* "leafspine:...", "fattree:...", "clos3:..." or a file path */
int  topo_from_json(const char *text, size_t len, const char *origin, struct topo **out, char *err, size_t errlen);
int  topo_write_json(const struct topo *t, FILE *f);     /* DESIGN 2.1 format, round-trips */

#endif
