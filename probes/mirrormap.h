/*
 * mirrormap: which switch port, and so which topology link direction, a
 * mirrored or sampled packet was seen on.
 *
 * A mapping file (JSON object) names, for each ERSPAN session (mirror source
 * address, session ID) and each sFlow data source (agent address, ifIndex),
 * the topology node and the interface by which that traffic LEAVES the node:
 * exactly what a probe running on that node would report as `if`. So an
 * egress (tx) mirror of L1:eth1 maps to {"node": "L1", "if": "eth1"}, and an
 * ingress (rx) mirror of L1:eth1 whose peer is S1:eth3 maps to
 * {"node": "S1", "if": "eth3"}.
 *
 *   {"erspan": [{"src": "192.0.2.9", "session": 341, "node": "L1", "if": "eth1"}],
 *    "sflow":  [{"agent": "192.0.2.1", "ifindex": 5, "node": "L1", "if": "eth1",
 *                "link_gbps": 100}]}
 *
 * Invariants: at most MIRRORMAP_MAX entries; names are bounded; duplicate
 * keys are refused; lookups are by exact key (binary search over the sorted
 * keys: O(log n) per datagram, whatever arrives) and return a stable port
 * index in [0, nports) so callers can keep per-port arrays.
 */
#ifndef TF_MIRRORMAP_H
#define TF_MIRRORMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reportspec.h"

#define MIRRORMAP_MAX 4096
#define MIRRORMAP_NONE UINT32_MAX

struct mirrormap_port {
    char node[REPORTSPEC_PROBE_MAX + 1];
    char ifname[REPORTSPEC_IF_MAX + 1];
    double link_gbps;         /* 0 when not given */
};

struct mirrormap;

/* Loads and validates; on error, err names the entry and what is wrong. */
int mirrormap_load(const char *path, struct mirrormap **out, char *err, size_t errlen);
int mirrormap_parse(const char *text, size_t len, struct mirrormap **out, char *err, size_t errlen);
void mirrormap_free(struct mirrormap *m);

/* Port index for an ERSPAN session or an sFlow data source; MIRRORMAP_NONE
 * when unmapped. */
uint32_t mirrormap_erspan(const struct mirrormap *m, int af, const uint8_t *src, uint16_t session);
uint32_t mirrormap_sflow(const struct mirrormap *m, int af, const uint8_t *agent, uint32_t ifindex);

/* Whether a mirror source or an sFlow agent address has any entry: the
 * sources whose telemetry the probe takes (see mirror.h). */
bool mirrormap_has_erspan_src(const struct mirrormap *m, int af, const uint8_t *src);
bool mirrormap_has_sflow_agent(const struct mirrormap *m, int af, const uint8_t *agent);

uint32_t mirrormap_nports(const struct mirrormap *m);
uint32_t mirrormap_nkeys(const struct mirrormap *m);
/* Whether two mappings say the same (a reload that changes nothing). */
bool mirrormap_equal(const struct mirrormap *a, const struct mirrormap *b);
const struct mirrormap_port *mirrormap_port(const struct mirrormap *m, uint32_t idx);

#endif
