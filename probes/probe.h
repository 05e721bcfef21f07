/*
 * probe: the probe itself, as tierflow-probe runs it (probe_main.c reads
 * the options, installs the signals and calls this). It captures on live
 * interfaces or reads a capture file, keeps the bounded flow table, and
 * every interval emits a DESIGN 2.3 report (JSON lines or a table) on
 * o->out and, with controllers, POSTs it to each. Interfaces given with
 * --counters are only read for their link counters (no capture handle):
 * the report's links are the captured ones, then those.
 *
 * The per-packet path is a decode (decode_fast_eth for plain Ethernet/IPv4
 * TCP/UDP, decode_frame for the rest) queued into the flow table's batch
 * (flowtab_batch_add*, applied with prefetch at each flush) plus a few
 * counters: no allocation, no system call, no lock. Everything else (link
 * counters, reports, POST) happens once per interval. Intervals follow the
 * wall clock live and packet time with a file: there the first packet opens
 * the first interval, a packet at or past its end closes it, and a gap of
 * several intervals yields one report, not one per empty interval.
 *
 * Stopping and reloading are asked for by flags (probe_ask_stop,
 * probe_ask_reload: async-signal-safe, process-wide) that the loops read:
 * a stop flushes a final report; a reload reads --mirror-map again and,
 * when it changed and is valid, closes the interval so far and carries on
 * with the new mapping (an invalid one is logged and the old one kept).
 *
 * Errors: probe_new returns a negative errno (logged, naming the option or
 * source at fault); probe_run returns -EIO when a source failed to read,
 * after the report of what was read first.
 */
#ifndef TF_PROBE_H
#define TF_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "probes/mirror.h"
#include "probes/report.h"

#define PROBE_MAX_IF 64
#define PROBE_DEFAULT_GBPS 100.0   /* link rate when neither sysfs nor --link-gbps says */
#define PROBE_POST_WAIT_S 2.0      /* how long exit waits for queued POSTs */
#define PROBE_MAX_ALLOW 64         /* --telemetry-allow prefixes */
#define PROBE_MAX_CTL 4            /* --controller URLs: an HA pair or trio (docs/ha.md) */

struct probe_opts {
    const char *ifs[PROBE_MAX_IF];
    size_t nifs;
    /* --counters: interfaces whose link counters are reported, packets not
     * captured (nifs + ncounters <= PROBE_MAX_IF, none in both lists). */
    const char *counter_ifs[PROBE_MAX_IF];
    size_t ncounters;
    const char *file, *token_file, *filter;
    const char *controller[PROBE_MAX_CTL];  /* each gets every report (docs/ha.md) */
    size_t nctl;
    const char *mirror_map, *sflow_listen;
    bool telemetry;           /* decode sFlow and ERSPAN: --telemetry, or implied */
    struct mirror_prefix allow[PROBE_MAX_ALLOW]; /* --telemetry-allow */
    size_t nallow;
    uint64_t max_unmapped;    /* --telemetry-max-unmapped */
    char node[REPORT_NAME_LEN];
    double interval, fat_share, link_gbps, idle_timeout;
    uint64_t max_flows, top, snaplen, buffer_mb;
    enum report_fmt fmt;
    int log_level;
    bool libpcap_reader;      /* --file-reader libpcap */
    bool inbound;             /* --inbound */
    bool journal;             /* --journal: <N> priorities on stderr */
    bool mid;                 /* --mid-report: a flow become fat is reported at mid-interval (probe.c) */
    FILE *out;                /* where reports are printed; NULL: stdout */
};

/* The probe's state (probe.c): its sources, the flow table, the interval's
 * counters, the report being built and the senders. */
struct probe;

/* The defaults of every option (tierflow-probe(1)); node, file and ifs are
 * the caller's to set. interval -1: 0 (one report, at the end) for a
 * file, 1 s live. */
void probe_opts_init(struct probe_opts *o);
/* A probe for the options o (copied; the strings they point to must outlive
 * the probe): the flow table, the sources opened, telemetry and the senders
 * started. 0 and *out, or a negative errno with everything released. */
int probe_new(const struct probe_opts *o, struct probe **out);
/* Reads the file to its end, or captures live until probe_ask_stop; the
 * last interval is always reported. 0, or -EIO when a source failed. */
int probe_run(struct probe *pr);
/* Waits up to PROBE_POST_WAIT_S for queued POSTs, then releases all. */
void probe_free(struct probe *pr);

/* For signal handlers: set a flag the loops read, nothing else. */
void probe_ask_stop(void);
void probe_ask_reload(void);

#endif
