/*
 * topo_gen: synthetic fabrics from a one-line spec, "KIND:key=value,..."
 * (leafspine, fattree, clos3; parameters and address schemes in
 * docs/topology.md). The output is fully deterministic, every parameter is
 * bounded, and errors (-errno) name the offending key in err.
 */
#ifndef TF_TOPO_GEN_H
#define TF_TOPO_GEN_H

#include <stddef.h>

#include "policy/topo_model.h"

int  topo_generate(const char *spec, struct topo **out, char *err, size_t errlen);
/* True when spec names a generator ("leafspine:", "fattree:", "clos3:"), by
 * the same table topo_generate dispatches on. */
int  topo_is_generator(const char *spec);

#endif
