/*
 * linkstats: the kernel's counters for the probe's interfaces, through
 * libnl (rtnetlink): bytes, packets, drops and errors of each link, its
 * operational state and carrier changes (IFLA_CARRIER_CHANGES: every
 * carrier up and down the kernel counted, a flapping cable's signature),
 * and the root qdisc's backlog, drops and overlimits.
 *
 * One refresh per interval refills the link and qdisc caches with two dumps;
 * reads then come from the caches. Rates and the per-interval counts in a
 * report are differences of two reads, so a counter that goes backwards (an
 * interface recreated) yields 0 for that interval rather than a huge value.
 *
 * Invariants: the caller keeps the previous reading per interface; this
 * module keeps no per-interface state besides the caches.
 */
#ifndef TF_LINKSTATS_H
#define TF_LINKSTATS_H

#include <stdbool.h>
#include <stdint.h>

#include "probes/report.h"

struct linkstats_counters {
    bool valid;               /* the interface was found */
    double t;                 /* monotonic time of the read */
    uint64_t tx_bytes, rx_bytes, tx_pkts, rx_pkts, drops, errors;
    uint64_t carrier_changes; /* since the interface was created */
    char oper[16];
    bool has_qdisc;
    uint64_t q_backlog;       /* bytes queued now */
    uint64_t q_drops, q_overlimits;
};

struct linkstats;

int linkstats_new(struct linkstats **out);
void linkstats_free(struct linkstats *ls);
/* Refills the caches (one link dump, one qdisc dump). */
int linkstats_refresh(struct linkstats *ls);
/* -ENODEV when the interface is not in the cache. */
int linkstats_read(struct linkstats *ls, const char *ifname, struct linkstats_counters *c);
/* Fills the kernel-counter fields of a report link from two readings.
 * out->oper points into cur (or at a constant when cur is not valid). */
void linkstats_rate(const struct linkstats_counters *prev, const struct linkstats_counters *cur,
                    struct report_link *out);
/* Link speed from /sys/class/net/IF/speed in bit/s, 0 when unknown. */
double linkstats_speed_bps(const char *ifname);

#endif
