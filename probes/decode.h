/*
 * decode: turns one captured frame into the few fields the probe keeps.
 *
 * Layers: Ethernet (802.1Q / 802.1ad / stacked tags, at most DECODE_MAX_TAGS),
 * Linux SLL and SLL2, raw IPv4/IPv6; IPv4 with options and fragments (only
 * the first fragment carries L4); IPv6 with a bounded extension-header chain
 * (jumbograms included); TCP, UDP; RoCEv2 (UDP destination port 4791) with
 * the InfiniBand BTH. Pure function of its input: no allocation, no state.
 *
 * Invariants: every read is bounds-checked against caplen; nothing beyond
 * caplen is ever touched. Byte accounting uses wire_len (pkthdr.len), never
 * caplen. An IP total length of 0 (BIG TCP / GSO) falls back to the wire
 * length. A frame whose L3 header is complete but whose L4 header is cut by
 * the snap length still decodes (l4 == 0, DECODE_F_TRUNC set) so that its
 * bytes can be counted against the address pair. "The L4 header" here is
 * the fixed part that holds the ports (TCP 20 bytes, UDP 8): when only TCP
 * options are cut, l4 is 1 and DECODE_F_TRUNC is set. A RoCEv2 frame whose
 * BTH is cut keeps l4 == 1, roce == 0 and sets DECODE_F_TRUNC.
 *
 * Lengths that lie but leave the packet decodable (IP total length beyond
 * the wire, IPv6 payload length beyond the wire, TCP data offset < 5, UDP
 * length < 8) set DECODE_F_BADLEN and decoding goes on; ip_len is then
 * clamped to what the wire carried. A length that makes the L4 header lie
 * outside the datagram (total length shorter than IP header + L4 header)
 * sets DECODE_F_BADLEN and leaves l4 == 0.
 */
#ifndef TF_DECODE_H
#define TF_DECODE_H

#include <stdint.h>

#define DECODE_MAX_TAGS 4
#define DECODE_ROCE_PORT 4791
#define DECODE_BTH_CNP 0x81

/* pkt->flags */
#define DECODE_F_TRUNC   0x01 /* caplen ended inside a header we wanted */
#define DECODE_F_FRAG    0x02 /* an IP fragment */
#define DECODE_F_NONFIRST 0x04 /* a non-first fragment: no L4 */
#define DECODE_F_BADLEN  0x08 /* a length field disagreed with the frame */
#define DECODE_F_JUMBO   0x10 /* IPv6 jumbogram (HBH Jumbo Payload option) */

/* At most this many IPv6 extension headers are walked; a longer chain is
 * malformed (-EBADMSG). Real stacks send at most 2-3. */
#define DECODE_MAX_EXT 8

struct decode_pkt {
    uint32_t wire_len;            /* bytes on the wire */
    uint32_t ip_len;              /* IP datagram length (header or wire fallback) */
    uint16_t vlan[DECODE_MAX_TAGS]; /* VLAN IDs, outermost first */
    uint8_t  nvlan;
    uint8_t  af;                  /* 4 or 6 once decode succeeded */
    uint8_t  src[16], dst[16];    /* IPv4 uses the first 4 bytes, rest zero */
    uint8_t  proto;               /* IP protocol / final IPv6 next header */
    uint8_t  dscp, ecn;           /* ecn: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE */
    uint8_t  l4;                  /* 1 when sport/dport are valid */
    uint8_t  flags;               /* DECODE_F_* */
    uint16_t sport, dport;
    uint8_t  roce;                /* 1 when a full BTH was decoded */
    uint8_t  bth_opcode;
    uint8_t  becn;                /* BTH BECN bit */
    uint32_t dqp;                 /* BTH destination QP (24 bits) */
    uint32_t psn;                 /* BTH PSN (24 bits) */
    uint32_t l3_off;              /* offset of the IP header in the frame */
    uint32_t l4_off;              /* offset of the L4 header (GRE for proto 47) */
    uint32_t payload_off;         /* offset just past the TCP/UDP header */
};

/* Return codes of decode_frame(). */
#define DECODE_OK 0
/* -EPROTONOSUPPORT: not IP (ARP, LLC, CDP, ...): counted as unparsed.
 * -EMSGSIZE: truncated before the IP header was complete.
 * -EBADMSG: malformed (bad version, header length, lying lengths that make
 *            the packet undecodable). */

/* The link types decode_frame() understands, in a fixed order (the fuzz
 * corpus's selector byte indexes this table, so only append to it). */
extern const int decode_linktypes[];
extern const unsigned decode_nlinktypes;

/* 0 when the pcap link type (DLT_*) is one decode_frame() understands,
 * -EPROTONOSUPPORT otherwise. */
int decode_linktype_supported(int dlt);
/* Human name for a DLT, for error messages ("EN10MB", "ERF", "197"). */
const char *decode_linktype_name(int dlt, char *buf, unsigned len);

int decode_frame(int dlt, const uint8_t *data, uint32_t caplen, uint32_t wire_len,
                 struct decode_pkt *pkt);

/* Decodes from an IP header onwards (used by decode_frame, and by the ERSPAN
 * and sFlow paths for inner frames that start at L3). The IP version is
 * taken from the header. Sets every L3/L4 field of pkt and keeps wire_len,
 * vlan[] and nvlan as the caller left them; pkt->wire_len must be set (it
 * is the frame's wire length, data[0] being its first byte) because an IP
 * length of 0 falls back to wire_len - off (caplen - off when wire_len is
 * smaller). Same return codes as decode_frame(). */
int decode_ip(const uint8_t *data, uint32_t caplen, uint32_t off, struct decode_pkt *pkt);

#endif
