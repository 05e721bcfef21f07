/*
 * decode: see decode.h for the layers and the contract.
 *
 * Shape: one straight pass, link layer -> tags -> IP -> extension headers ->
 * L4 -> BTH, every step first checking that the bytes it reads lie below
 * caplen. Offsets are uint32_t and every bound is tested as "off + n >
 * limit" with off <= limit already established, so nothing can wrap: caplen
 * and wire_len come from a 32-bit pcap header, and no length read from the
 * packet is added to an offset before it is compared against caplen.
 *
 * Errors (negative returns) mean "no IP packet here"; anything after a
 * complete IP header is reported through pkt->flags instead, so that the
 * caller can still count the bytes against the address pair.
 */
#include "probes/decode.h"

#include <errno.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

#define ETH_P_IPV4 0x0800
#define ETH_P_IPV6 0x86dd
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88a8
#define ETH_P_QINQ_OLD 0x9100

/* DLT_RAW is 12 on most platforms and 14 on OpenBSD; 101 is the LINKTYPE_RAW
 * stored in files, which some callers pass through unmapped. */
#define LT_RAW_A 12
#define LT_RAW_B 14
#define LT_RAW_FILE 101

const int decode_linktypes[] = {
    DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, LT_RAW_A, LT_RAW_B, LT_RAW_FILE,
    DLT_IPV4, DLT_IPV6,
};
const unsigned decode_nlinktypes = TF_ARRAY_SIZE(decode_linktypes);

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t rd24(const uint8_t *p)
{
    return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}
static inline uint32_t rd32(const uint8_t *p) { return rd24(p) << 8 | p[3]; }

int decode_linktype_supported(int dlt)
{
    for (unsigned i = 0; i < decode_nlinktypes; i++)
        if (decode_linktypes[i] == dlt)
            return 0;
    return -EPROTONOSUPPORT;
}

const char *decode_linktype_name(int dlt, char *buf, unsigned len)
{
    const char *n = (dlt == LT_RAW_FILE || dlt == LT_RAW_A || dlt == LT_RAW_B)
                        ? "RAW" : pcap_datalink_val_to_name(dlt);
    if (!len)
        return "";
    if (n)
        tf_strlcpy(buf, n, len);
    else
        snprintf(buf, len, "%d", dlt);
    return buf;
}

/* Decodes TCP/UDP/BTH at l4 (frame offset); end is where the IP datagram
 * ends according to its header (clamped to the wire), which may lie beyond
 * caplen. Never fails: problems become flags. */
/* always_inline: the per-packet path is one function, no call overhead. */
#define HOT static inline __attribute__((always_inline))

HOT int dec_l4(const uint8_t *d, uint32_t caplen, uint32_t l4, uint32_t end,
                  struct decode_pkt *pkt)
{
    uint32_t need;

    pkt->l4_off = l4;
    if (pkt->proto == IPPROTO_TCP)
        need = 20;
    else if (pkt->proto == IPPROTO_UDP)
        need = 8;
    else
        return 0;
    if (l4 + need > end) {
        pkt->flags |= DECODE_F_BADLEN;
        return 0;
    }
    if (l4 + need > caplen) {
        pkt->flags |= DECODE_F_TRUNC;
        return 0;
    }
    const uint8_t *b = d + l4;
    pkt->sport = rd16(b);
    pkt->dport = rd16(b + 2);
    pkt->l4 = 1;

    if (pkt->proto == IPPROTO_TCP) {
        uint32_t doff = (uint32_t)(b[12] >> 4) * 4;
        if (doff < 20) {
            pkt->flags |= DECODE_F_BADLEN;
            doff = 20;
        }
        pkt->tcp_seq = rd32(b + 4);
        pkt->tcp_syn = (b[13] >> 1) & 1;
        pkt->payload_off = l4 + doff;
        if (pkt->payload_off > end)
            pkt->flags |= DECODE_F_BADLEN;
        else
            pkt->seg_len = end - pkt->payload_off;
        if (pkt->payload_off <= end && pkt->payload_off > caplen)
            pkt->flags |= DECODE_F_TRUNC;
        return 0;
    }

    uint16_t ulen = rd16(b + 4);
    /* 0 is legal: RFC 2675 jumbograms carry their length in IPv6 only. */
    if (ulen && ulen < 8)
        pkt->flags |= DECODE_F_BADLEN;
    pkt->payload_off = l4 + 8;
    /* Only the destination port marks RoCEv2: responders reply from any
     * source port (oferby_proxy_roce.pcap replies from port 69). */
    if (pkt->dport != DECODE_ROCE_PORT)
        return 0;
    uint32_t bth = pkt->payload_off;
    if (bth + 12 > end) {
        pkt->flags |= DECODE_F_BADLEN;
        return 0;
    }
    if (bth + 12 > caplen) {
        pkt->flags |= DECODE_F_TRUNC;
        return 0;
    }
    b = d + bth;
    pkt->roce = 1;
    pkt->bth_opcode = b[0];
    pkt->becn = (b[4] >> 6) & 1;
    pkt->dqp = rd24(b + 5);
    pkt->psn = rd24(b + 9);
    if (pkt->bth_opcode == DECODE_BTH_ACK && bth + 13 <= end && bth + 13 <= caplen)
        pkt->nak = (b[12] >> 5) == DECODE_AETH_NAK;
    return 0;
}

/* Bytes of the IP datagram the wire carried, from its first byte at off. */
static inline uint32_t wire_avail(uint32_t caplen, uint32_t off, const struct decode_pkt *pkt)
{
    uint32_t w = pkt->wire_len > caplen ? pkt->wire_len : caplen;
    return w - off;
}

HOT int dec_ip4(const uint8_t *d, uint32_t caplen, uint32_t off, struct decode_pkt *pkt)
{
    const uint8_t *h = d + off;
    if (caplen - off < 20)
        return -EMSGSIZE;
    uint32_t ihl = (uint32_t)(h[0] & 0x0f) * 4;
    if (ihl < 20)
        return -EBADMSG;
    if (caplen - off < ihl)
        return -EMSGSIZE;
    uint32_t tl = rd16(h + 2), wavail = wire_avail(caplen, off, pkt);
    if (tl == 0) {
        tl = wavail; /* BIG TCP / GSO / TSO: the kernel leaves 0 */
    } else if (tl < ihl) {
        return -EBADMSG;
    } else if (tl > wavail) {
        pkt->flags |= DECODE_F_BADLEN;
        tl = wavail;
    }
    pkt->af = 4;
    pkt->ip_len = tl;
    pkt->l3_off = off;
    pkt->dscp = h[1] >> 2;
    pkt->ecn = h[1] & 3;
    pkt->proto = h[9];
    memcpy(pkt->src, h + 12, 4);
    memcpy(pkt->dst, h + 16, 4);

    uint16_t frag = rd16(h + 6);
    if (frag & 0x3fff) { /* MF or an offset */
        pkt->flags |= DECODE_F_FRAG;
        if (frag & 0x1fff) {
            pkt->flags |= DECODE_F_NONFIRST;
            return 0;
        }
    }
    return dec_l4(d, caplen, off + ihl, off + tl, pkt);
}

/* The Jumbo Payload option (type 0xC2, length 4) in a hop-by-hop header of
 * hl bytes at b; 0 when absent. */
static uint32_t hbh_jumbo(const uint8_t *b, uint32_t hl)
{
    uint32_t i = 2;
    while (i < hl) {
        if (b[i] == 0) { /* Pad1 has no length byte */
            i++;
            continue;
        }
        if (i + 2 > hl)
            break;
        uint32_t ol = b[i + 1];
        if (b[i] == 0xc2 && ol == 4 && i + 6 <= hl)
            return rd32(b + i + 2);
        i += 2 + ol;
    }
    return 0;
}

static int dec_ip6(const uint8_t *d, uint32_t caplen, uint32_t off, struct decode_pkt *pkt)
{
    const uint8_t *h = d + off;
    if (caplen - off < 40)
        return -EMSGSIZE;
    uint8_t tc = (uint8_t)(rd16(h) >> 4);
    pkt->af = 6;
    pkt->l3_off = off;
    pkt->dscp = tc >> 2;
    pkt->ecn = tc & 3;
    memcpy(pkt->src, h + 8, 16);
    memcpy(pkt->dst, h + 24, 16);

    uint32_t plen = rd16(h + 4), jumbo = 0, p = off + 40;
    uint8_t nh = h[6];
    int stop = 0;
    for (unsigned n = 0;; n++) {
        uint32_t hl;
        if (nh != 0 && nh != 43 && nh != 44 && nh != 51 && nh != 60)
            break;
        if (n == DECODE_MAX_EXT)
            return -EBADMSG;
        /* Every extension header is at least 8 bytes long. */
        if (p + 8 > caplen) {
            pkt->flags |= DECODE_F_TRUNC;
            stop = 1;
            break;
        }
        const uint8_t *b = d + p;
        if (nh == 44) {
            uint16_t fo = rd16(b + 2);
            pkt->flags |= DECODE_F_FRAG;
            if (fo & 0xfff8) {
                pkt->flags |= DECODE_F_NONFIRST;
                nh = b[0];
                stop = 1;
                break;
            }
            hl = 8;
        } else if (nh == 51) {
            hl = ((uint32_t)b[1] + 2) * 4;
        } else {
            hl = ((uint32_t)b[1] + 1) * 8;
        }
        if (p + hl > caplen) {
            pkt->flags |= DECODE_F_TRUNC;
            stop = 1;
            break;
        }
        if (nh == 0 && n == 0 && plen == 0)
            jumbo = hbh_jumbo(b, hl);
        nh = b[0];
        p += hl;
    }
    pkt->proto = nh;

    uint32_t wavail = wire_avail(caplen, off, pkt);
    uint64_t len;
    if (plen) {
        len = 40 + (uint64_t)plen;
    } else if (jumbo) {
        len = 40 + (uint64_t)jumbo;
        pkt->flags |= DECODE_F_JUMBO;
    } else {
        len = wavail; /* BIG TCP over IPv6 without a jumbo option */
    }
    if (len > wavail) {
        pkt->flags |= DECODE_F_BADLEN;
        len = wavail;
    }
    pkt->ip_len = (uint32_t)len;
    if (stop)
        return 0;
    if (p > off + pkt->ip_len) { /* the chain runs past the datagram */
        pkt->flags |= DECODE_F_BADLEN;
        return 0;
    }
    return dec_l4(d, caplen, p, off + pkt->ip_len, pkt);
}

/* want: 4 or 6 when the link layer named the version, 0 to take it from
 * the header. */
HOT int dec_ip(const uint8_t *d, uint32_t caplen, uint32_t off, int want,
                  struct decode_pkt *pkt)
{
    int r;
    if (off >= caplen)
        return -EMSGSIZE;
    int v = d[off] >> 4;
    if (want && v != want)
        return -EBADMSG;
    if (v == 4)
        r = dec_ip4(d, caplen, off, pkt);
    else if (v == 6)
        r = dec_ip6(d, caplen, off, pkt);
    else
        r = -EBADMSG;
    if (r < 0)
        pkt->af = 0;
    return r;
}

int decode_ip(const uint8_t *data, uint32_t caplen, uint32_t off, struct decode_pkt *pkt)
{
    uint32_t wire = pkt->wire_len;
    uint16_t vlan[DECODE_MAX_TAGS];
    uint8_t nvlan = pkt->nvlan;
    memcpy(vlan, pkt->vlan, sizeof(vlan));
    memset(pkt, 0, sizeof(*pkt));
    pkt->wire_len = wire;
    pkt->nvlan = nvlan;
    memcpy(pkt->vlan, vlan, sizeof(vlan));
    return dec_ip(data, caplen, off, 0, pkt);
}

int decode_frame(int dlt, const uint8_t *d, uint32_t caplen, uint32_t wire_len,
                 struct decode_pkt *pkt)
{
    uint32_t off;
    uint16_t type;

    memset(pkt, 0, sizeof(*pkt));
    pkt->wire_len = wire_len;
    switch (dlt) {
    case DLT_EN10MB:
        if (caplen < 14)
            return -EMSGSIZE;
        type = rd16(d + 12);
        off = 14;
        break;
    case DLT_LINUX_SLL: /* pkttype, hatype, halen, addr[8], protocol */
        if (caplen < 16)
            return -EMSGSIZE;
        type = rd16(d + 14);
        off = 16;
        break;
    case DLT_LINUX_SLL2: /* protocol first, then 18 bytes we do not need */
        if (caplen < 20)
            return -EMSGSIZE;
        type = rd16(d);
        off = 20;
        break;
    case LT_RAW_A:
    case LT_RAW_B:
    case LT_RAW_FILE:
        return dec_ip(d, caplen, 0, 0, pkt);
    case DLT_IPV4:
        return dec_ip(d, caplen, 0, 4, pkt);
    case DLT_IPV6:
        return dec_ip(d, caplen, 0, 6, pkt);
    default:
        return -EPROTONOSUPPORT;
    }

    /* libpcap re-inserts stripped tags for SLL too, so tags follow every
     * link header that carries an EtherType. */
    while (type == ETH_P_8021Q || type == ETH_P_8021AD || type == ETH_P_QINQ_OLD) {
        if (pkt->nvlan == DECODE_MAX_TAGS)
            return -EBADMSG;
        if (caplen - off < 4)
            return -EMSGSIZE;
        pkt->vlan[pkt->nvlan++] = rd16(d + off) & 0x0fff;
        type = rd16(d + off + 2);
        off += 4;
    }
    if (type == ETH_P_IPV4)
        return dec_ip(d, caplen, off, 4, pkt);
    if (type == ETH_P_IPV6)
        return dec_ip(d, caplen, off, 6, pkt);
    return -EPROTONOSUPPORT;
}
