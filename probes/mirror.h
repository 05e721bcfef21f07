/*
 * mirror: the probe's switch-telemetry input. Traffic that a switch samples
 * (sFlow v5) or mirrors (ERSPAN) to the management host where the probe
 * runs is attributed to the switch port it was seen on, and accounted per
 * topology node, so that the probe emits one DESIGN 2.3 report per switch,
 * exactly as if a probe ran on that switch.
 *
 * Each node has a view: its own bounded flow table, its ports (interfaces)
 * and per-port counters. Ports come from the mapping (mirrormap); traffic of
 * an unmapped source still gets a view, named after the agent or mirror
 * source ("sflow:AGENT", "erspan:SRC"), so that it is visible on stdout, but
 * such views are never posted to the controller (it could not place them).
 *
 * Sampled estimates: a sampled packet counts as `rate` packets of its
 * length (flowtab_update's scale), and flows carry source "sflow" and their
 * sampling rate. Link rates come from the switch's own interface counters
 * (counter samples) when it sends them, else from the scaled samples.
 *
 * Invariants: at most MIRROR_MAX_VIEWS views of at most MIRROR_MAX_PORTS
 * ports; memory is bounded by views x max_flows flow entries; nothing here
 * blocks or allocates per packet once a port is known.
 */
#ifndef TF_MIRROR_H
#define TF_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/decode.h"
#include "probes/mirrormap.h"
#include "probes/report.h"

#define MIRROR_MAX_VIEWS 256
#define MIRROR_MAX_PORTS 64

struct mirror_opts {
    uint32_t max_flows;      /* per view */
    double idle_timeout;
    double fat_share;
    double default_gbps;     /* link rate when neither map nor counters say */
    unsigned top;            /* non-fat flows per report */
};

struct mirror;

int mirror_new(const struct mirrormap *map, const struct mirror_opts *o, struct mirror **out);
void mirror_free(struct mirror *m);

/* One ERSPAN carrier (decoded by decode_frame, IP protocol 47). Returns 0
 * when it was a mirror (accounted), -ENOENT when the GRE payload is not a
 * mirror format (the caller treats it as ordinary traffic), another
 * negative errno when the mirror was malformed (counted here). */
int mirror_erspan(struct mirror *m, const struct decode_pkt *outer, const uint8_t *frame,
                  uint32_t caplen, double ts);
/* One sFlow datagram (the UDP payload). 0, or the sflow_parse error
 * (counted here). */
int mirror_sflow(struct mirror *m, const uint8_t *dgram, size_t len, double ts);

/* Closes the interval ending at now: one report per view with traffic or
 * counters, handed to emit together with whether the view is mapped (only
 * mapped views belong to the controller). */
typedef void (*mirror_emit_fn)(void *ctx, const struct report *r, bool mapped);
int mirror_close(struct mirror *m, double now, double interval_s, mirror_emit_fn emit, void *ctx);

void mirror_telemetry(const struct mirror *m, struct report_telemetry *t);

#endif
