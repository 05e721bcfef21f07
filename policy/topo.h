/*
 * topo: the topology family's public header; include this one. The family
 * (one prefix, BIRD's nest/route.h style), bottom-up:
 *
 *   topo_model.h  topo_model.c  the structure, its invariants and lookups
 *   topo_paths.h  topo_paths.c  shortest up/down paths, counted and decoded
 *   topo_build.h  topo_build.c  private: the only way a topology is made
 *   topo_index.h  (topo_model.c) private: the name and address hashes
 *   topo_gen.h    topo_gen.c    generators ("leafspine:", "fattree:", "clos3:")
 *   topo_json.h   topo_json.c   the file format and topo_load
 *
 * Each file includes only what sits below it, so the family has no include
 * circle (tests/static/test_layers.sh checks that): the builder needs the
 * model and the path decoder, the generators and the file reader need the
 * builder, and this header, which fronts them all, is included by none of
 * them.
 */
#ifndef TF_TOPO_H
#define TF_TOPO_H

#include "policy/topo_model.h"
#include "policy/topo_paths.h"
#include "policy/topo_gen.h"
#include "policy/topo_json.h"

#endif
