/*
 * reportspec: the bounds of a probe report (DESIGN 2.3) that the probe and
 * the controller must agree on, defined once: how long a probe (node) name
 * and an interface name may be, which characters a name may hold, and the
 * names of the ways a probe sees a flow (`source`). The probe checks what
 * it will send against these (a bad --node is refused at start, a -r
 * pseudo-interface is named within them); tierflowd's ingest refuses a
 * report outside them with 400, naming the field.
 *
 * Invariants: the enum's values are the wire order of reportspec_source_*
 * and the values the probe's flow table and the controller's state store.
 */
#ifndef TF_REPORTSPEC_H
#define TF_REPORTSPEC_H

#include <stdbool.h>
#include <stddef.h>

#define REPORTSPEC_PROBE_MAX 31  /* bytes of `probe` (a topology node name) */
#define REPORTSPEC_IF_MAX 15     /* bytes of `if` (Linux IFNAMSIZ - 1) */

/* How a probe saw a flow: every packet captured, mirrored (ERSPAN) or
 * sampled 1-in-N (sFlow). Absent on the wire means pcap. */
enum reportspec_source { REPORTSPEC_SRC_PCAP, REPORTSPEC_SRC_ERSPAN, REPORTSPEC_SRC_SFLOW, REPORTSPEC_SRC_N };

/* "pcap", "erspan", "sflow"; "?" for a value outside the enum. */
const char *reportspec_source_name(int source);
/* The enum value of name, or -EINVAL. */
int reportspec_source_parse(const char *name);
/* Whether s (NUL-terminated) is 1..max bytes of printable ASCII without
 * spaces: what a `probe` or `if` may be. */
bool reportspec_name_ok(const char *s, size_t max);

#endif
