/*
 * sflow: decodes sFlow version 5 datagrams (sflow.org, sflow_version_5.txt).
 *
 * Decoded: flow samples (standard 0:1 and expanded 0:3) with sampling rate,
 * sample pool, drops, input/output ifIndex and the raw packet header record
 * (0:1), which the caller runs through the same frame decoder as a captured
 * packet; counter samples (0:2 and expanded 0:4) with the generic interface
 * counters record (0:1). Other records are skipped by their length.
 *
 * Invariants: the datagram is untrusted. Every length is checked against the
 * bytes that remain, sample and record counts are bounded, XDR padding is
 * honoured, and a malformed datagram is rejected whole before any callback
 * runs (a first pass validates, a second pass delivers), so a lying length
 * can never make the caller account half a datagram. Field values are
 * delivered as sent; what a sample may say is bounded below (SFLOW_MAX_*),
 * checked per sample by the caller with sflow_flow_check() and
 * sflow_counters_check().
 */
#ifndef TF_SFLOW_H
#define TF_SFLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reportspec.h"

#define SFLOW_PORT 6343
#define SFLOW_MAX_SAMPLES 1024
#define SFLOW_MAX_RECORDS 64
#define SFLOW_MAX_HEADER 1024 /* longest sampled header we accept */

/*
 * Bounds on what one sample may say, defined here once (docs/telemetry.md
 * lists them). A sample outside them is rejected alone, counted by reason
 * (sflow_stats.rejected), and the rest of its datagram is kept: one garbled
 * or forged sample must not cost a switch its report, nor be scaled into
 * an estimate that no link could carry.
 *
 *   SFLOW_MAX_RATE    1-in-N sampling rate, 1..2^24: N ~ link Gb/s x 1000
 *                     is the usual choice, and 2^24 covers 1-in-16M, a 1.6 Tb/s
 *                     port sampled ten times more sparsely than that;
 *   SFLOW_MAX_FRAME   original frame length: the largest IP packet (65,535)
 *                     plus link headers, which covers host agents that
 *                     sample GSO/GRO super-packets;
 *   SFLOW_MAX_SPEED   ifSpeed of a counter sample: 5 Tb/s, the fastest port
 *                     whose rate bound (below) stays within a report's
 *                     absolute bound (REPORTSPEC_MAX_BPS, 10 Tb/s);
 *   counters          an interface's octets may advance by at most its rate
 *                     bound, reportspec_rate_bound(speed) (REPORTSPEC_LINK_SLACK
 *                     times the speed: agents stamp a datagram when sent, not
 *                     when polled, so some slack is due), over the agent-clock
 *                     time between two counter samples; a step past it, or
 *                     backwards, is a counter jump. The controller refuses a
 *                     link entry past the same bound.
 */
#define SFLOW_MAX_RATE (1u << 24)
#define SFLOW_MAX_FRAME (65535u + 64u)
#define SFLOW_MAX_SPEED (REPORTSPEC_MAX_BPS / REPORTSPEC_LINK_SLACK)

enum sflow_reject {
    SFLOW_OK = 0,
    SFLOW_REJ_RATE,           /* sampling rate 0 or above SFLOW_MAX_RATE */
    SFLOW_REJ_FRAME,          /* frame length above SFLOW_MAX_FRAME */
    SFLOW_REJ_SPEED,          /* ifSpeed above SFLOW_MAX_SPEED */
    SFLOW_REJ_COUNTERS,       /* octet counters backwards or past line rate */
    SFLOW_REJ_N
};

struct sflow_datagram {
    uint8_t  agent_af;        /* 4 or 6 */
    uint8_t  agent[16];
    uint32_t sub_agent;
    uint32_t seq;
    uint32_t uptime_ms;
    uint32_t nsamples;
};

struct sflow_flow_sample {
    uint32_t seq;
    uint32_t source_type, source_index;
    uint32_t rate;            /* 1-in-N */
    uint32_t pool;            /* packets that could have been sampled */
    uint32_t drops;
    uint32_t input, output;   /* ifIndex values (format bits stripped) */
    uint8_t  input_fmt, output_fmt; /* 0 ifIndex, 1 discarded, 2 multiple */
    /* Raw packet header record (0:1), when present. */
    uint8_t  has_header;
    uint32_t header_proto;    /* 1 = Ethernet, 11 = IPv4, 12 = IPv6 */
    uint32_t frame_len;       /* original frame length */
    uint32_t stripped;        /* bytes removed before sampling (e.g. FCS) */
    const uint8_t *header;
    uint32_t header_len;
};

struct sflow_if_counters {
    uint32_t seq;             /* counter sample sequence number */
    uint32_t source_type, source_index;
    uint32_t ifindex, iftype;
    uint64_t speed;           /* bits per second */
    uint32_t direction, status; /* status bit 0 admin up, bit 1 oper up */
    uint64_t in_octets, out_octets;
    uint32_t in_ucast, in_mcast, in_bcast, in_discards, in_errors, in_unknown;
    uint32_t out_ucast, out_mcast, out_bcast, out_discards, out_errors;
};

struct sflow_handler {
    /* Called once per valid datagram, before its samples (may be NULL).
     * A non-zero return skips the datagram's samples: none is delivered or
     * counted (the caller refuses the agent). */
    int (*datagram)(void *ctx, const struct sflow_datagram *d);
    void (*flow)(void *ctx, const struct sflow_datagram *d, const struct sflow_flow_sample *s);
    void (*counters)(void *ctx, const struct sflow_datagram *d, const struct sflow_if_counters *c);
    void *ctx;
};

struct sflow_stats {
    uint64_t datagrams, bad_datagrams;
    uint64_t other_versions;  /* not sFlow v5 (e.g. NetFlow sent to the port) */
    uint64_t flow_samples, counter_samples, skipped_samples, skipped_records;
    uint64_t rejected[SFLOW_REJ_N]; /* samples out of bounds, by reason (filled by the caller) */
};

/* Whether a delivered sample is within the bounds above: SFLOW_OK or the
 * reason to reject it. The parser delivers what is on the wire; the caller
 * checks, so that a rejected sample still counts for sequence tracking. */
enum sflow_reject sflow_flow_check(const struct sflow_flow_sample *s);
enum sflow_reject sflow_counters_check(const struct sflow_if_counters *c);
/* "rate", "frame_len", "speed", "counters"; "?" outside the enum. */
const char *sflow_reject_name(int reason);

/* Rates from two successive counter samples of one interface. base is the
 * previous sample (valid false before the first), t the agent uptime (s) of
 * the new one, speed_bps the interface's rate. Returns 0 with *tx_bps and
 * *rx_bps set; -EAGAIN when there is no rate to take (first sample, or the
 * agent's clock did not advance: it restarted); SFLOW_REJ_COUNTERS when the
 * counters went backwards or advanced past reportspec_rate_bound(speed). In
 * every case the caller makes the new sample its base, so a reset or a
 * corrupt sample costs one rate, never every later one. */
struct sflow_ctr_base {
    bool valid;
    double t;
    uint64_t in_octets, out_octets;
};
int sflow_counter_rates(const struct sflow_ctr_base *base, double t, uint64_t in_octets,
                        uint64_t out_octets, double speed_bps, double *tx_bps, double *rx_bps);

/* Parses one datagram. 0 on success (callbacks ran), -EBADMSG when malformed
 * (counted in bad_datagrams) or -EPROTONOSUPPORT when not version 5 (counted
 * in other_versions); nothing is delivered in either case. */
int sflow_parse(const uint8_t *buf, size_t len, const struct sflow_handler *h,
                struct sflow_stats *st);

/* Loss accounting from sequence numbers, per agent (datagrams) and per data
 * source (samples). Bounded: at most SFLOW_SEQ_MAX entries; beyond that new
 * sources are not tracked (counted in untracked). */
#define SFLOW_SEQ_MAX 4096
struct sflow_seq;
struct sflow_seq_stats {
    uint64_t lost_datagrams, lost_samples, resets, untracked;
};
struct sflow_seq *sflow_seq_new(void);
void sflow_seq_free(struct sflow_seq *s);
/* Feed the datagram header, then each sample's (source_type, index, seq);
 * kind 0 for flow samples, 1 for counter samples. */
void sflow_seq_datagram(struct sflow_seq *s, const struct sflow_datagram *d);
void sflow_seq_sample(struct sflow_seq *s, const struct sflow_datagram *d, int kind,
                      uint32_t source_type, uint32_t source_index, uint32_t seq);
void sflow_seq_get(const struct sflow_seq *s, struct sflow_seq_stats *st);

#endif
