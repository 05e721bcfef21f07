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
 * Loss signals (flowtab counts them): a TCP segment's sequence number and
 * its payload length (from the IP length, so a snap length that cuts the
 * payload does not change it), and for a RoCEv2 RC Acknowledge whether its
 * AETH (the 4 bytes after the BTH) says NAK; an AETH cut by the snap length
 * or outside the datagram reads as no NAK, without a flag.
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
#define DECODE_BTH_ACK 0x11      /* RC Acknowledge: BTH + AETH; a NAK is one of these */
#define DECODE_BTH_READ_REQ 0x0c /* RC RDMA Read Request: takes one PSN per response packet */
#define DECODE_AETH_NAK 3        /* AETH syndrome bits 7:5 of a NAK (IBA 9.7.5.2.3) */

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
    uint8_t  nak;                 /* 1: an RC Acknowledge whose AETH syndrome is a NAK */
    uint32_t tcp_seq;             /* TCP sequence number (l4 == 1, proto 6) */
    uint32_t seg_len;             /* TCP payload bytes per the IP length; 0 when none */
    uint8_t  tcp_syn;             /* 1: the TCP SYN flag is set */
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

/* ---- fast path --------------------------------------------------------
 *
 * decode_fast_eth() decodes the overwhelmingly common frame of a fabric
 * capture, Ethernet with at most one tag (802.1Q, 802.1ad or 0x9100) / IPv4
 * without options or fragmentation / TCP or UDP (RoCEv2 with its BTH
 * included), straight into the few fields the flow table keys and counts on,
 * without the full struct decode_pkt. It returns 1 only for a frame that
 * decode_frame(DLT_EN10MB, ...) decodes with DECODE_OK, flags == 0, af 4,
 * l4 == 1, and then every field below equals decode_frame()'s (vlan is its
 * vlan[0], 0 when untagged; roce, bth_opcode and dqp as decode_frame sets
 * them, and psn, nak, tcp_seq, seg_len and tcp_syn too, 0 where it leaves
 * them 0). Anything else, including every frame decode_frame would flag
 * (truncated, lying lengths), returns 0 and the caller uses decode_frame().
 * Every read is bounds-checked against caplen, as in decode_frame().
 * static inline: it is meant to be inlined into the capture loop. */
struct decode_fast {
    uint8_t  src[4], dst[4];
    uint16_t vlan;                /* the tag's VLAN ID, 0 when untagged */
    uint16_t sport, dport;
    uint8_t  proto;               /* 6 or 17 */
    uint8_t  dscp, ecn;
    uint8_t  roce, bth_opcode;
    uint8_t  nak;                 /* as struct decode_pkt's */
    uint32_t dqp;                 /* 0 unless roce */
    uint32_t psn;                 /* 0 unless roce */
    uint32_t tcp_seq, seg_len;    /* 0 unless TCP */
    uint8_t  tcp_syn;             /* 0 unless TCP */
};

/* One 16-bit load and a byte swap (the byte-wise form costs 4 instructions). */
static inline uint16_t decode_rd16_(const uint8_t *p)
{
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap16(v);
#endif
    return v;
}

static inline int decode_fast_eth(const uint8_t *d, uint32_t caplen, uint32_t wire_len,
                                  struct decode_fast *f)
{
    uint32_t off = 14;
    if (caplen < 14 + 20)
        return 0;
    uint16_t type = decode_rd16_(d + 12);
    f->vlan = 0;
    if (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
        if (caplen < 18 + 20)
            return 0;
        f->vlan = decode_rd16_(d + 14) & 0x0fff;
        type = decode_rd16_(d + 16);
        off = 18;
    }
    if (type != 0x0800)
        return 0;
    const uint8_t *h = d + off; /* off + 20 <= caplen */
    if (h[0] != 0x45)          /* IPv4, no options */
        return 0;
    uint32_t tl = decode_rd16_(h + 2), wavail = (wire_len > caplen ? wire_len : caplen) - off;
    /* tl 0 (GSO), tl < 20 and tl beyond the wire go the full way, as do
     * fragments (MF or an offset). */
    if (tl < 20 || tl > wavail || (decode_rd16_(h + 6) & 0x3fff))
        return 0;
    uint32_t l4 = off + 20, end = off + tl;
    const uint8_t *b = d + l4;
    f->proto = h[9];
    if (f->proto == 6) {
        if (l4 + 20 > end || l4 + 20 > caplen)
            return 0;
        uint32_t doff = (uint32_t)(b[12] >> 4) * 4;
        if (doff < 20 || l4 + doff > end || l4 + doff > caplen)
            return 0;
        f->roce = 0;
        f->bth_opcode = 0;
        f->nak = 0;
        f->dqp = 0;
        f->psn = 0;
        uint32_t seq;
        __builtin_memcpy(&seq, b + 4, 4);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        seq = __builtin_bswap32(seq);
#endif
        f->tcp_seq = seq;
        f->seg_len = end - (l4 + doff);
        f->tcp_syn = (b[13] >> 1) & 1;
    } else if (f->proto == 17) {
        if (l4 + 8 > end || l4 + 8 > caplen)
            return 0;
        uint16_t ulen = decode_rd16_(b + 4);
        if (ulen && ulen < 8)
            return 0;
        f->roce = 0;
        f->bth_opcode = 0;
        f->nak = 0;
        f->dqp = 0;
        f->psn = 0;
        f->tcp_seq = 0;
        f->seg_len = 0;
        f->tcp_syn = 0;
        if (decode_rd16_(b + 2) == DECODE_ROCE_PORT) {
            uint32_t bth = l4 + 8;
            if (bth + 12 > end || bth + 12 > caplen)
                return 0;
            const uint8_t *t = d + bth;
            f->roce = 1;
            f->bth_opcode = t[0];
            uint32_t q;
            __builtin_memcpy(&q, t + 4, 4); /* t[4] (BECN and reserved bits) dropped */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            q = __builtin_bswap32(q);
#endif
            f->dqp = q & 0xffffff;
            __builtin_memcpy(&q, t + 8, 4); /* t[8]: the AckReq bit and reserved bits, dropped */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            q = __builtin_bswap32(q);
#endif
            f->psn = q & 0xffffff;
            if (f->bth_opcode == DECODE_BTH_ACK && bth + 13 <= end && bth + 13 <= caplen)
                f->nak = (t[12] >> 5) == DECODE_AETH_NAK;
        }
    } else {
        return 0;
    }
    f->sport = decode_rd16_(b);
    f->dport = decode_rd16_(b + 2);
    f->dscp = h[1] >> 2;
    f->ecn = h[1] & 3;
    __builtin_memcpy(f->src, h + 12, 4);
    __builtin_memcpy(f->dst, h + 16, 4);
    return 1;
}

#endif
