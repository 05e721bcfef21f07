/*
 * report: the probe's interval report (DESIGN 2.3), built once per interval
 * and rendered as one JSON line (stdout and the controller) or as a table.
 *
 * A report holds the per-link counters, a bounded set of flows (every fat
 * flow, up to REPORT_MAX_FAT, plus the top_n other flows by interval rate,
 * sorted by rate) and the probe's cumulative stats. flowtab_close_interval()
 * resets the per-flow interval counters that the report wants (CE, ECT,
 * CNPs), so the caller takes a snapshot of them just before closing the
 * interval (report_snap_take) and picks flows just after (report_pick_flows).
 *
 * Invariants: a report owns its flow array and never points into the flow
 * table after report_pick_flows() returns; every JSON output is an object.
 */
#ifndef TF_REPORT_H
#define TF_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "probes/flowtab.h"
#include "probes/sflow.h"

#define REPORT_MAX_FAT 1024
#define REPORT_DEFAULT_TOP 20
#define REPORT_NAME_LEN 64

enum report_fmt { REPORT_JSON = 0, REPORT_TABLE = 1 };

struct report_link {
    char name[REPORT_NAME_LEN];
    double tx_bps, rx_bps, tx_pps, rx_pps;
    uint64_t drops, errors;     /* kernel tx+rx drops and errors in the interval */
    uint64_t carrier_changes;   /* carrier transitions in the interval (0 in the first) */
    uint64_t ce_pkts;           /* CE-marked packets captured in the interval */
    double speed_bps;           /* the rate fat shares are measured against */
    const char *oper;           /* operational state; NULL when not known */
    const char *source;         /* where the counters come from ("sflow", "erspan"); NULL: the kernel */
    bool has_qdisc;             /* the root qdisc reported counters */
    bool has_queue_drops;       /* qdisc_drops alone is known (sFlow: ifOutDiscards) */
    uint64_t qdisc_backlog, qdisc_drops, qdisc_overlimits;
};

/* Counters of the switch-telemetry inputs (sFlow, ERSPAN); rendered as
 * stats.telemetry only when has_telemetry is set. */
struct report_telemetry {
    bool has_telemetry;
    uint64_t sflow_datagrams, sflow_bad, sflow_other_versions;
    uint64_t sflow_flow_samples, sflow_counter_samples;
    uint64_t sflow_lost_datagrams, sflow_lost_samples, sflow_unattributed;
    uint64_t erspan_frames, erspan_bad, erspan_truncated, erspan_unattributed;
    /* Refused: from sources the configuration does not name (mirror.h). */
    uint64_t sflow_refused, erspan_refused;
    /* Samples out of bounds, by enum sflow_reject (sflow_rejected_<name>). */
    uint64_t sflow_rejected[SFLOW_REJ_N];
};

struct report_stats {
    uint64_t pkts, bytes, unparsed, truncated, evicted, pcap_drops;
    uint64_t post_dropped, post_errors, post_rejected;
    uint64_t roce_opcodes[256]; /* BTH opcode histogram of decoded RoCEv2 frames */
    struct report_telemetry tel;
};

struct report_flow {
    struct flow_key key;
    const char *ifname;
    uint64_t bytes, pkts, cnp;
    uint64_t retx_pkts, psn_oos, naks; /* this interval (flowtab's loss signals); emitted when non-zero */
    uint64_t tail_retx;                /* of retx_pkts, resends of the highest segment (flowtab.h) */
    uint64_t holes;                    /* at its arrival view, when in_ifname is set (emitted then, 0 too) */
    const char *in_ifname;             /* interface it arrived by (captured inbound), NULL when not seen */
    double bps, ce_frac, ect_frac;
    uint32_t sampling;
    uint8_t dscp, source;
    bool fat;
};

struct report {
    char probe[REPORT_NAME_LEN];
    double ts, interval_s;
    bool partial;                /* an interval cut short (a stop's flush, a reload's): "partial": true */
    const struct report_link *links;
    size_t nlinks;
    struct report_flow *flows;
    size_t nflows, flows_cap;
    struct report_stats stats;
};

/* Interval counters of every live flow, taken before the interval closes. */
struct report_snap_ent {
    const struct flow *f;
    uint64_t pkts, ce, ect, cnps;
    uint32_t retx, naks, tail;
};
struct report_snap {
    struct report_snap_ent *ent;
    size_t n, cap;
};

int report_snap_take(struct report_snap *s, struct flowtab *ft);
void report_snap_free(struct report_snap *s);

/* Fills r->flows from the (just closed) flow table: every fat flow and the
 * top_n others by interval rate. ifnames maps a flow's ifidx to a name. */
int report_pick_flows(struct report *r, struct flowtab *ft, const struct report_snap *s,
                      unsigned top_n, const char *const *ifnames, size_t nif);
void report_free_flows(struct report *r);

/* The DESIGN 2.3 object. Caller owns the reference. NULL on allocation failure. */
json_t *report_to_json(const struct report *r);
/* Renders to out: one compact JSON line, or a table for people. */
int report_print(const struct report *r, enum report_fmt fmt, FILE *out);
/* The JSON line as a malloc'd string (for POST). */
char *report_dumps(const struct report *r);

#endif
