/*
 * reportspec: the bounds of a probe report (DESIGN 2.3) that the probe and
 * the controller must agree on, defined once: how long a probe (node) name
 * and an interface name may be, which characters a name may hold, and the
 * names of the ways a probe sees a flow (`source`). The probe checks what
 * it will send against these (a bad --node is refused at start, a -r
 * pseudo-interface is named within them); tierflowd's ingest refuses a
 * report outside them with 400, naming the field.
 *
 * It also holds what a value in a report may be (the bounds below, with
 * the reason for each in docs/telemetry.md, "What the controller refuses"):
 * tierflowd refuses an entry (one flow, one link) outside them and applies
 * the rest of its report, so the same number must not mean "drop this
 * entry" to one side and "fine" to the other.
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
#define REPORTSPEC_INSTANCE_MAX 63 /* bytes of the optional `instance` (which process sends) */

/* The report format's version, `schema` (absent: this one). A report of
 * another is refused whole: its fields may mean other things. */
#define REPORTSPEC_SCHEMA 1

/* Absolute bounds of one value, whatever the topology: 10 Tb/s is above
 * any port made; 1e18 is above any counter a 64-bit agent wraps at in a
 * century at that rate; sampling 1-in-2^30 is far past the 2^24 switches
 * use (and past the probe's own sFlow bound). */
#define REPORTSPEC_MAX_BPS 1e13
#define REPORTSPEC_MAX_COUNT 1000000000000000000LL
#define REPORTSPEC_MAX_SAMPLING (1 << 30)

/* Bounds relative to the link an entry is on (its `if` mapped to a
 * topology link): a rate, or a per-interval packet counter (drops,
 * ce_pkts), above REPORTSPEC_LINK_SLACK times what the link can carry is
 * no measurement (a sampled estimate gone wild, a huge frame length, a
 * counter that wrapped or jumped). The slack is the probe's own for sFlow
 * counters: agents stamp datagrams, not polls, and an interval's edges
 * are not exact. A packet is at least REPORTSPEC_MIN_FRAME_BITS on the
 * wire (64-byte frame, preamble and gap). */
#define REPORTSPEC_LINK_SLACK 2.0
#define REPORTSPEC_MIN_FRAME_BITS 672.0

/* Carrier (oper) transitions an interface may count per second: a PHY
 * needs milliseconds to lose and regain a link, so more is a counter that
 * jumped, not a flapping cable (a flap a second is already a dead link). */
#define REPORTSPEC_MAX_CARRIER_HZ 1000.0

/* A link's qdisc_backlog (bytes queued at the report) may hold at most
 * this many seconds of what the link carries: a port whose queue takes
 * longer to drain has TCP senders timing out on it (RFC 6298's 1-s initial
 * RTO, many times over); switch buffers hold milliseconds a port. More is
 * a counter gone wild, not a queue. */
#define REPORTSPEC_MAX_QUEUE_S 10.0

/* A flow's per-hop loss members (docs/telemetry.md, "Loss signals"): the
 * holes its arrival at the reporting node showed in the interval (data
 * that started beyond the highest end seen there: lost upstream), and the
 * interface it arrived by. Emitted only by a probe that captures arrivals
 * (--inbound) and only when it saw the flow arrive; the controller reads an
 * absent `holes` as "not observed", not as 0. Bounded like the other loss
 * counts (at most the flow's `pkts`). */
#define REPORTSPEC_HOLES "holes"
/* Of a TCP flow's `retx_pkts`, those that resent the highest segment sent so
 * far (a tail loss probe's resend, RFC 8985: often a duplicate, no loss);
 * emitted when non-zero, at most `retx_pkts` (docs/telemetry.md). */
#define REPORTSPEC_TAIL_RETX "tail_retx"
#define REPORTSPEC_IN_IF "in_if"

/* The largest rate an entry on a link of link_bps may report. */
double reportspec_rate_bound(double link_bps);
/* The largest packet count an entry may report for one interval of
 * interval_s on a link of link_bps. */
double reportspec_pkts_bound(double link_bps, double interval_s);
/* The largest qdisc_backlog (bytes) a link entry on a link of link_bps
 * may report. */
double reportspec_backlog_bound(double link_bps);
/* The largest carrier_changes a link entry may report for one interval of
 * interval_s (0 when the report gives no interval: then unchecked). */
double reportspec_carrier_bound(double interval_s);

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
