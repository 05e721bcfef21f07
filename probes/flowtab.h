/*
 * flowtab: the probe's bounded flow table.
 *
 * Preallocated at creation (max_flows entries plus an open-addressing index),
 * never grows: memory is O(max_flows) whatever the traffic. When full, the
 * lightest flow of a sampled window is evicted and counted (below). Idle
 * flows expire.
 *
 * Key: VLAN tags, addresses, protocol, ports, and the RoCE destination QP for
 * RoCEv2 (so two QPs on one UDP 5-tuple are two flows). Per flow it keeps
 * bytes (wire length), packets, CE and ECT packets, CNPs, DSCP, the probe
 * interface it was seen on (its ECMP path), first/last seen, a smoothed rate
 * and the fat-flow state with hysteresis.
 *
 * A CNP (BTH opcode 0x81) is counted against the flow it throttles: the RoCE
 * flow in the opposite direction (CNP dst -> CNP src). See flowtab.c for how
 * the throttled QP is found.
 *
 * Eviction when full keeps the heavy hitters (in the spirit of Space-Saving,
 * Metwally et al. 2005): among FLOWTAB_EVICT_WINDOW consecutive slots under a
 * clock hand, the non-fat flow of least weight goes, the weight being its
 * bytes this interval plus what its smoothed rate carries over one interval
 * (so an idle flow's weight halves every interval), ties to the least
 * recently seen. A fat flow goes only when the whole window is fat (then
 * the lightest); a new flow is never refused. A newcomer takes the slot just
 * freed, behind the hand, so it has max_flows / FLOWTAB_EVICT_WINDOW
 * evictions to gather weight before it is weighed itself: a table full of
 * junk (one small packet a flow, however many keep arriving) neither keeps
 * a fat flow out nor pushes it out again before it is seen to be fat.
 *
 * Rates: at each interval close, ivl_bps = interval bytes * 8 / interval_s
 * and rate_bps = A * ivl_bps + (1 - A) * rate_bps with A =
 * FLOWTAB_EWMA_ALPHA; a flow's first closed interval sets rate_bps =
 * ivl_bps. A flow first seen during the interval it is first rated in is
 * rated over the time it was seen (at least FLOWTAB_MIN_SPAN of the
 * interval), not the whole interval: a fat flow that started 0.3 s before
 * the close is a fat flow now, not a 30% one (sampled flows excepted: a few
 * samples over a short span say too little). The fat decision uses rate_bps. ECT counts ECT(0) and ECT(1)
 * packets; CE packets are counted in ce_pkts only. The totals ce_pkts and
 * ect_pkts are summed from the interval counters at each close (off the
 * per-packet path: their room there went to the loss tracking).
 *
 * Loss signals (gray failures, docs/telemetry.md), per flow = per direction,
 * in 4 bytes of sequence state and two interval counters, for every packet
 * seen whole (pcap, ERSPAN; sFlow samples are 1-in-N: every one would look
 * like a gap, so sampled packets are not tracked):
 * - TCP: seq_next is the highest end sequence number seen (seq + payload);
 *   a segment with payload whose end is at or before it (RFC 1982 serial
 *   comparison, so the 32-bit wrap is handled) is a retransmission
 *   (ivl_retx); one that ends above it moves it on, also across a gap (new
 *   data out of order is not a retransmission). Zero-length segments
 *   neither count nor move it, and neither does a keep-alive: one byte
 *   ending exactly at seq_next (the last byte again, as Windows probes an
 *   idle connection; Wireshark excludes them too). A SYN forgets it: a
 *   new connection on the same 5-tuple (a client that reuses its port)
 *   starts a sequence of its own, which may lie behind the old one.
 *   A retransmission that ends exactly at seq_next resends the highest
 *   segment sent so far: what a tail loss probe sends (RFC 8985 section 7)
 *   when no ACK came for a while, lost or not. It also counts in ivl_tail,
 *   so that loss evidence can leave it out: in the lab such probes were
 *   duplicates (every one answered by a D-SACK), while a segment lost
 *   under a flow that keeps sending is resent below the highest end
 *   (docs/health.md, "Tail resends are no evidence").
 * - RoCEv2 RC/UC (BTH opcode classes 000 and 001) but Acknowledges and
 *   CNPs: seq_next is the expected next PSN (last + 1, modulo 2^24); a PSN
 *   other than it is out of sequence (ivl_retx: a gap or a go-back-N
 *   repeat). An RDMA Read Request takes one PSN per response packet, which
 *   the probe cannot know: the PSN after one is not judged.
 * - An RC Acknowledge whose AETH says NAK counts in ivl_naks of its own
 *   (ACK) flow.
 * - Holes (per hop localisation, docs/health.md): a packet captured as it
 *   arrives on an interface (ifidx | FLOWTAB_IN) goes to the flow's arrival
 *   view, a record of its own (the key's `in` set), so that a forwarded
 *   packet seen arriving and leaving is counted once in each view and never
 *   twice in one: the leaving view keeps bytes, rates, retransmissions; the
 *   arrival view counts holes in ivl_retx: TCP data segments that start
 *   beyond the highest end seen so far at this point (RFC 1982), i.e. the
 *   originals of some data were lost upstream; a retransmission filling a
 *   hole is not one, nor is the flow's first packet here (it sets the mark);
 *   a SYN resets it. RoCE RC/UC: a PSN ahead of the expected one (within
 *   half the 24-bit space) is a hole; a PSN behind it (a go-back-N resend)
 *   is not. Its interface is the one the flow arrived by (`in_if`).
 * The counters saturate at UINT32_MAX per interval.
 */
#ifndef TF_FLOWTAB_H
#define TF_FLOWTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reportspec.h"
#include "probes/decode.h"

struct flow_key {
    uint8_t  src[16], dst[16];
    uint16_t vlan[2];         /* outer and inner VLAN IDs (0 when absent) */
    uint16_t sport, dport;
    uint32_t qp;              /* RoCE destination QP, 0 otherwise */
    uint8_t  af, proto;
    uint8_t  in;              /* 1: the flow's arrival view (captured inbound, see the top) */
    uint8_t  pad[1];          /* zeroed: keys are hashed and compared bytewise */
};

/* Laid out for the per-packet path: the key and everything a packet updates
 * fill the first two cache lines (records are 64-byte aligned), what only
 * CNPs, interval closes and reports touch lies in the third. */
struct flow {
    _Alignas(64) struct flow_key key;
    uint64_t bytes, pkts;     /* totals since first seen (wire bytes) */
    uint64_t ivl_bytes, ivl_pkts; /* this interval */
    uint64_t ivl_ce, ivl_ect;
    uint32_t seq_next;        /* TCP: highest end seq seen; RoCE: expected PSN */
    uint32_t ivl_retx;        /* TCP retransmissions / RoCE PSNs out of sequence, this interval */
    uint32_t ivl_naks;        /* RoCE NAKs this flow carried, this interval */
    uint8_t  seq_ok;          /* seq_next holds a value */
    uint8_t  pad_;
    uint16_t ivl_tail;        /* of ivl_retx, TCP resends of the highest segment (a tail probe), saturating */
    double   last_ts;
    uint32_t sampling;        /* 1 for full capture, N for 1-in-N estimates */
    uint16_t ifidx;           /* probe-local interface index */
    uint8_t  dscp;
    uint8_t  source;          /* FLOW_SRC_* */
    /* cold */
    uint64_t cnps, ivl_cnps;
    double   first_ts;
    double   rate_bps;        /* smoothed (EWMA over intervals) */
    double   ivl_bps;         /* rate over the last closed interval */
    uint64_t ce_pkts, ect_pkts; /* totals over the closed intervals */
    bool     fat;
    uint32_t closed_retx;     /* ivl_retx of the last closed interval (an arrival view's holes) */
};

enum { FLOW_SRC_PCAP = REPORTSPEC_SRC_PCAP, FLOW_SRC_ERSPAN = REPORTSPEC_SRC_ERSPAN, FLOW_SRC_SFLOW = REPORTSPEC_SRC_SFLOW };

struct flowtab_stats {
    uint64_t inserted, evicted, expired;
};

struct flowtab;

/* max_flows in 1..FLOWTAB_MAX_FLOWS (else NULL with errno EINVAL); an
 * idle_timeout_s <= 0 disables expiry. NULL with errno ENOMEM when the
 * table cannot be allocated. */
struct flowtab *flowtab_new(uint32_t max_flows, double idle_timeout_s);
void flowtab_free(struct flowtab *ft);

/* Or'ed into an ifidx: the packet was captured arriving on that interface
 * (it goes to the flow's arrival view; interfaces are < FLOWTAB_IN). */
#define FLOWTAB_IN 0x8000u

/* Accounts one decoded packet seen on interface ifidx at time ts. scale
 * multiplies bytes and packets (1 for full capture, the sampling rate for
 * sampled sources). Returns 0, or -EINVAL for a packet that is not IPv4 or
 * IPv6. */
int flowtab_update(struct flowtab *ft, const struct decode_pkt *pkt, uint16_t ifidx,
                   double ts, uint32_t scale, uint8_t source);

/* Batched accounting for capture loops. flowtab_batch_add() only queues the
 * packet (key and counters); flowtab_batch_flush() hashes the whole queue,
 * prefetching each index cell, then applies it in order, prefetching each
 * flow record a few ops ahead; add flushes itself when the queue is full.
 * The cache misses of a batch thus overlap with each other instead of
 * stalling each packet. Applying a batch has exactly the effect of
 * flowtab_update() on each packet in turn (results are counted as
 * flowtab_update counts them). A batch belongs to one table and must be
 * flushed before the table is read or closed (lookup, next, count, stats,
 * close_interval). Start with a zeroed struct flowtab_batch. add returns
 * -EINVAL, and queues nothing, for a packet that is not IPv4/IPv6. */
#define FLOWTAB_BATCH 32
struct flowtab_op {
    struct flow_key key;
    double   ts;
    uint32_t hash, wire_len;  /* hash: set by the flush */
    uint32_t seq, seg_len;    /* TCP seq and payload bytes, or the PSN (FLOWTAB_TRK_*) */
    /* scale..source: laid out as struct flow's sampling..source, one copy */
    uint32_t scale;
    uint16_t ifidx;
    uint8_t  dscp, source;
    uint8_t  ecn, roce, bth_opcode;
    uint8_t  trk;             /* FLOWTAB_TRK_*: what the loss tracking does with it */
};

/* How a packet feeds the loss signals (see the top). */
enum { FLOWTAB_TRK_NONE, FLOWTAB_TRK_TCP, FLOWTAB_TRK_SYN, FLOWTAB_TRK_PSN, FLOWTAB_TRK_PSN_READ, FLOWTAB_TRK_NAK,
       FLOWTAB_TRK_TCP_IN, FLOWTAB_TRK_PSN_IN, FLOWTAB_TRK_PSN_READ_IN, FLOWTAB_TRK_N };
/* flowtab_trk_dir[in][trk]: what an arrival view does instead (holes). */
extern const uint8_t flowtab_trk_dir[2][FLOWTAB_TRK_N];

/* The FLOWTAB_TRK_* of a RoCEv2 packet by BTH opcode, NAKs aside (one load
 * instead of four compares per packet): RC (000) and UC (001) opcodes but
 * the Acknowledges (0x11, 0x12: they carry the PSN they acknowledge,
 * coalesced) are PSN, the RDMA Read Request PSN_READ; UD, CNPs and the
 * rest have no per-QP sequence here (NONE). */
extern const uint8_t flowtab_roce_trk[256];

/* The FLOWTAB_TRK_* of a packet from its decoded fields; one function for
 * both decoders' results. */
static inline uint8_t flowtab_trk(uint8_t proto, uint8_t roce, uint8_t opcode, uint8_t nak, uint32_t seg_len,
                                  uint8_t syn)
{
    if (roce)
        return nak ? FLOWTAB_TRK_NAK : flowtab_roce_trk[opcode];
    if (proto != 6)
        return FLOWTAB_TRK_NONE;
    return syn ? FLOWTAB_TRK_SYN : seg_len ? FLOWTAB_TRK_TCP : FLOWTAB_TRK_NONE;
}

struct flowtab_batch {
    uint32_t n;
    struct flowtab_op op[FLOWTAB_BATCH];
};
int flowtab_batch_add(struct flowtab *ft, struct flowtab_batch *b, const struct decode_pkt *pkt,
                      uint16_t ifidx, double ts, uint32_t scale, uint8_t source);
void flowtab_batch_flush(struct flowtab *ft, struct flowtab_batch *b);
/* The same for a frame decode_fast_eth() decoded (af 4, nvlan <= 1) and
 * that flowtab_batch_add() would have been given with scale 1 and source
 * FLOW_SRC_PCAP: the key is built straight from f, with exactly the value
 * flowtab_key() gives for decode_frame()'s result. Inline: a capture loop
 * pays no call per packet, only one flush per FLOWTAB_BATCH packets. */
static inline void flowtab_batch_add_fast(struct flowtab *ft, struct flowtab_batch *b,
                                          const struct decode_fast *f, uint32_t wire_len,
                                          uint16_t ifidx, double ts)
{
    struct flowtab_op *o = &b->op[b->n];
    struct flow_key *k = &o->key;
    __builtin_memset(k, 0, sizeof(*k));
    __builtin_memcpy(k->src, f->src, 4);
    __builtin_memcpy(k->dst, f->dst, 4);
    k->vlan[0] = f->vlan;
    k->sport = f->sport;
    k->dport = f->dport;
    k->qp = f->dqp;
    k->af = 4;
    k->proto = f->proto;
    k->in = (uint8_t)(ifidx >> 15);
    o->ts = ts;
    o->wire_len = wire_len;
    o->scale = 1;
    o->ifidx = ifidx & (FLOWTAB_IN - 1);
    o->dscp = f->dscp;
    o->ecn = f->ecn;
    o->roce = f->roce;
    o->bth_opcode = f->bth_opcode;
    o->source = FLOW_SRC_PCAP;
    o->seq = f->roce ? f->psn : f->tcp_seq;
    o->seg_len = f->seg_len;
    o->trk = flowtab_trk_dir[k->in][flowtab_trk(f->proto, f->roce, f->bth_opcode, f->nak, f->seg_len, f->tcp_syn)];
    if (++b->n == FLOWTAB_BATCH)
        flowtab_batch_flush(ft, b);
}

struct flow *flowtab_lookup(struct flowtab *ft, const struct flow_key *key);
/* Builds the key for a decoded packet (zeroing padding). vlan[0] is the
 * outermost tag and vlan[1] the innermost (so three stacked tags key on the
 * outer and the inner one); qp is the BTH destination QP when pkt->roce. */
void flowtab_key(const struct decode_pkt *pkt, struct flow_key *key);

/* Closes an interval of length interval_s ending at now: computes each
 * flow's interval rate, updates its EWMA, and its fat state against
 * fat_share * link_bps[ifidx] with hysteresis (a flow becomes fat at
 * >= share, stops being fat below share * FLOWTAB_HYST_LOW). link_bps has
 * nlinks entries indexed by ifidx. Then resets interval counters and expires
 * flows idle for longer than the idle timeout. */
#define FLOWTAB_HYST_LOW 0.8
/* A flow seen through 1-in-N sampling (sampling > 1) becomes fat only with
 * at least this many samples in the interval (relative error ~1/sqrt(n)). */
#define FLOWTAB_MIN_SAMPLES 4
#define FLOWTAB_EWMA_ALPHA 0.5
#define FLOWTAB_MIN_SPAN 0.25
#define FLOWTAB_EVICT_WINDOW 8
#define FLOWTAB_MAX_FLOWS (1u << 24)
void flowtab_close_interval(struct flowtab *ft, double now, double interval_s,
                            const double *link_bps, size_t nlinks, double fat_share);

/* How many flows that were not fat at the last close (new ones included)
 * are fat over the part of the current interval they were seen: captured
 * whole (a few samples say too little), seen for at least min_age by now
 * (packet time), their bytes since the close over min(ivl_s, their age)
 * at fat_share * link_bps[ifidx] or more. ivl_s: how long the interval has
 * run. What makes a probe report at mid-interval (probe.c, "The look at
 * mid-interval"). O(live flows). */
uint32_t flowtab_rising(const struct flowtab *ft, double now, double ivl_s, double min_age,
                        const double *link_bps, size_t nlinks, double fat_share);

/* Iteration over live flows (start with *cursor = 0). Returns NULL at the
 * end. The order is the table's, not arrival order, and removing flows
 * (flowtab_close_interval, eviction) during an iteration reorders it. Costs
 * O(live flows), not O(max_flows). */
struct flow *flowtab_next(struct flowtab *ft, uint32_t *cursor);
uint32_t flowtab_count(const struct flowtab *ft);
void flowtab_get_stats(const struct flowtab *ft, struct flowtab_stats *st);

#endif
