/*
 * mirror: the probe's switch-telemetry input. Traffic that a switch samples
 * (sFlow v5) or mirrors (ERSPAN) to the management host where the probe
 * runs is attributed to the switch port it was seen on, and accounted per
 * topology node, so that the probe emits one DESIGN 2.3 report per switch,
 * exactly as if a probe ran on that switch.
 *
 * Each node has a view: its own bounded flow table, its ports (interfaces)
 * and per-port counters.
 *
 * Admission: telemetry gets state because the configuration names its
 * source, never because it arrived. A source (sFlow agent address, ERSPAN
 * mirror source address) with an entry in the mapping is taken, and its
 * mapped ports are accounted on their node's view. A source without one is
 * taken only when mirror_opts.allow holds a prefix containing it, or when
 * there is neither a mapping nor an allow-list (then any source is: the
 * probe shows what arrives); it gets a view of its own, named after it
 * ("sflow:AGENT", interfaces by ifIndex; "erspan:SRC", interfaces
 * "sSESSION"), printed but never posted (the controller could not place
 * it), from a pool of max_unmapped views handed out first come and kept. A
 * mapped source in an allowed prefix also gets a pool view, for the ports
 * the mapping does not name; without one those samples are unattributed.
 * Everything else is counted (sflow_refused, erspan_refused) and dropped,
 * with a warning naming the source at most every MIRROR_LOG_EVERY_S.
 *
 * Sample bounds: a flow or counter sample outside sflow.h's bounds
 * (SFLOW_MAX_*), or octet counters that jump backwards or past line rate, is
 * rejected alone and counted by reason (stats.telemetry.sflow_rejected_*);
 * the rest of its datagram and its switch's report stand.
 *
 * Sampled estimates: a sampled packet counts as `rate` packets of its
 * length (flowtab_update's scale), and flows carry source "sflow" and their
 * sampling rate. Link rates come from the switch's own interface counters
 * (counter samples) when it sends them, else from the scaled samples.
 *
 * Invariants: memory is fixed by mirror_new: one view per mapped node with
 * exactly its mapped ports and a flow table of max_flows, plus max_unmapped
 * pool views of at most MIRROR_MAX_PORTS ports and min(max_flows,
 * MIRROR_UNMAPPED_FLOWS) flows each; nothing is allocated per datagram, per
 * packet or per source afterwards. A view is reported from the first
 * interval in which its switch sent it something, and then every interval.
 * Nothing here blocks.
 */
#ifndef TF_MIRROR_H
#define TF_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/decode.h"
#include "probes/mirrormap.h"
#include "probes/report.h"

#define MIRROR_MAX_VIEWS 256        /* mapped nodes, and pool views */
#define MIRROR_MAX_PORTS 64         /* ports of a pool view (a mapped view has its mapped ones) */
#define MIRROR_UNMAPPED_FLOWS 4096  /* flow table of a pool view: it is only printed */
#define MIRROR_DEFAULT_UNMAPPED 16
#define MIRROR_LOG_EVERY_S 10.0     /* at most one warning of a kind this often */

struct mirror_prefix {
    int af;
    uint8_t addr[16];
    int plen;
};

struct mirror_opts {
    uint32_t max_flows;      /* per mapped view */
    double idle_timeout;
    double fat_share;
    double default_gbps;     /* link rate when neither map nor counters say */
    unsigned top;            /* non-fat flows per report */
    const struct mirror_prefix *allow; /* sources that may get a pool view */
    size_t nallow;
    uint32_t max_unmapped;   /* pool views, 0..MIRROR_MAX_VIEWS */
};

struct mirror;

/* Allocates every view (see the invariants). -E2BIG when the mapping names
 * more than MIRROR_MAX_VIEWS nodes or max_unmapped is above it; -ENOMEM. */
int mirror_new(const struct mirrormap *map, const struct mirror_opts *o, struct mirror **out);
void mirror_free(struct mirror *m);
/* Moves the cumulative counters and the sequence tracker of from into to
 * (a freshly made mirror that replaces it after a reload), so that totals
 * and loss accounting carry on across the swap. */
void mirror_carry(struct mirror *to, struct mirror *from);
/* Whether any source at all may get a pool view (no mapping, no allow-list). */
bool mirror_admits_any(const struct mirror *m);

/* One ERSPAN carrier (decoded by decode_frame, IP protocol 47). Returns 0
 * when it was a mirror (accounted), -ENOENT when the GRE payload is not a
 * mirror format (the caller treats it as ordinary traffic), another
 * negative errno when the mirror was malformed (counted here). */
int mirror_erspan(struct mirror *m, const struct decode_pkt *outer, const uint8_t *frame,
                  uint32_t caplen, double ts);
/* One sFlow datagram (the UDP payload). 0, or the sflow_parse error
 * (counted here). */
int mirror_sflow(struct mirror *m, const uint8_t *dgram, size_t len, double ts);

/* flowtab_rising over the mapped views (what the controller gets): the
 * flows not fat at the last close that are fat since, by their ports'
 * rates now. What makes the probe's look at mid-interval close it
 * (probe.c); a sampled (sFlow) flow never counts. */
uint32_t mirror_rising(struct mirror *m, double now, double ivl_s, double min_age);

/* Closes the interval ending at now: one report per view with traffic or
 * counters, handed to emit together with whether the view is mapped (only
 * mapped views belong to the controller). partial: the interval was cut
 * short (the probe's stop or reload), and every view's report says so, as
 * the probe's own does (docs/telemetry.md). */
typedef void (*mirror_emit_fn)(void *ctx, const struct report *r, bool mapped);
int mirror_close(struct mirror *m, double now, double interval_s, bool partial, mirror_emit_fn emit, void *ctx);

void mirror_telemetry(const struct mirror *m, struct report_telemetry *t);

#endif
