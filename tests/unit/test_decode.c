/*
 * Unit tests for probes/decode: every layer on crafted frames, each valid
 * frame cut at every byte offset (in an exactly-sized heap buffer, so ASan
 * reports any over-read), and lying length fields.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pcap/pcap.h>
#include <stdlib.h>
#include <string.h>

#include "probes/decode.h"

/* ---- frame builder ------------------------------------------------------ */

struct fb {
    uint8_t b[2048];
    uint32_t n;
};

static void put(struct fb *f, const void *p, size_t n)
{
    assert_true(f->n + n <= sizeof(f->b));
    memcpy(f->b + f->n, p, n);
    f->n += (uint32_t)n;
}
static void put8(struct fb *f, uint8_t v) { put(f, &v, 1); }
static void put16(struct fb *f, uint16_t v) { put8(f, v >> 8); put8(f, v & 0xff); }
static void put24(struct fb *f, uint32_t v) { put8(f, v >> 16); put16(f, v & 0xffff); }
static void put32(struct fb *f, uint32_t v) { put16(f, v >> 16); put16(f, v & 0xffff); }
static void zeros(struct fb *f, size_t n) { while (n--) put8(f, 0); }
static void set16(struct fb *f, uint32_t off, uint16_t v) { f->b[off] = v >> 8; f->b[off + 1] = v & 0xff; }

static const uint8_t MAC[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
static const uint8_t A4[4] = {10, 0, 1, 1}, B4[4] = {10, 0, 2, 5};
static const uint8_t A6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
static const uint8_t B6[16] = {0x20, 0x01, 0x0d, 0xb8, [14] = 0xab, [15] = 2};

/* Ethernet with tags: tpids[i]/vids[i] for each tag, then the EtherType. */
static void eth(struct fb *f, int ntags, const uint16_t *tpids, const uint16_t *vids, uint16_t type)
{
    put(f, MAC, 12);
    for (int i = 0; i < ntags; i++) {
        put16(f, tpids[i]);
        put16(f, (uint16_t)(0xa000 | vids[i])); /* PCP 5 must not leak into the VID */
    }
    put16(f, type);
}

/* IPv4 header with optlen bytes of options (NOPs); total length patched by
 * ip4_fix(). Returns the header's offset. */
static uint32_t ip4(struct fb *f, uint8_t tos, uint16_t frag, uint8_t proto, unsigned optlen)
{
    uint32_t off = f->n;
    put8(f, (uint8_t)(0x40 | (5 + optlen / 4)));
    put8(f, tos);
    put16(f, 0);
    put16(f, 0x1234);
    put16(f, frag);
    put8(f, 64);
    put8(f, proto);
    put16(f, 0);
    put(f, A4, 4);
    put(f, B4, 4);
    for (unsigned i = 0; i < optlen; i++)
        put8(f, 1);
    return off;
}
static void ip4_fix(struct fb *f, uint32_t off) { set16(f, off + 2, (uint16_t)(f->n - off)); }

static uint32_t ip6(struct fb *f, uint8_t tc, uint8_t nh)
{
    uint32_t off = f->n;
    put32(f, 0x60000000u | (uint32_t)tc << 20 | 0x12345);
    put16(f, 0);
    put8(f, nh);
    put8(f, 64);
    put(f, A6, 16);
    put(f, B6, 16);
    return off;
}
static void ip6_fix(struct fb *f, uint32_t off) { set16(f, off + 4, (uint16_t)(f->n - off - 40)); }

/* An 8*(len8+1)-byte extension header (HBH, routing, dstopts) of padding. */
static void ext(struct fb *f, uint8_t nh, uint8_t len8)
{
    put8(f, nh);
    put8(f, len8);
    put8(f, 1); /* PadN over the rest */
    put8(f, (uint8_t)(8 * (len8 + 1) - 4));
    zeros(f, 8 * (len8 + 1) - 4);
}

static void tcp(struct fb *f, uint16_t sport, uint16_t dport, unsigned optlen)
{
    put16(f, sport);
    put16(f, dport);
    put32(f, 1);
    put32(f, 0);
    put8(f, (uint8_t)((5 + optlen / 4) << 4));
    put8(f, 0x10);
    put16(f, 65535);
    put32(f, 0);
    for (unsigned i = 0; i < optlen; i++)
        put8(f, 1);
}

static void udp(struct fb *f, uint16_t sport, uint16_t dport, uint16_t len)
{
    put16(f, sport);
    put16(f, dport);
    put16(f, len);
    put16(f, 0);
}

static void bth(struct fb *f, uint8_t opcode, int becn, uint32_t dqp, uint32_t psn)
{
    put8(f, opcode);
    put8(f, 0);
    put16(f, 0xffff);
    put8(f, becn ? 0x40 : 0);
    put24(f, dqp);
    put8(f, 0);
    put24(f, psn);
}

/* The fast path against the full decoder on the same bytes: it may decline
 * any frame, but what it accepts the full decoder must decode without a
 * flag, to the same fields. Returns whether it accepted. */
static int fast_calls, fast_hits;
static int check_fast(const uint8_t *b, uint32_t caplen, uint32_t wire, int r,
                      const struct decode_pkt *p)
{
    struct decode_fast f;
    memset(&f, 0xa5, sizeof(f)); /* no field may be left unset */
    fast_calls++;
    if (!decode_fast_eth(b, caplen, wire, &f))
        return 0;
    fast_hits++;
    assert_int_equal(r, DECODE_OK);
    assert_int_equal(p->flags, 0);
    assert_int_equal(p->af, 4);
    assert_int_equal(p->l4, 1);
    assert_true(p->nvlan <= 1);
    assert_int_equal(f.vlan, p->nvlan ? p->vlan[0] : 0);
    assert_memory_equal(f.src, p->src, 4);
    assert_memory_equal(f.dst, p->dst, 4);
    assert_int_equal(f.proto, p->proto);
    assert_int_equal(f.sport, p->sport);
    assert_int_equal(f.dport, p->dport);
    assert_int_equal(f.dscp, p->dscp);
    assert_int_equal(f.ecn, p->ecn);
    assert_int_equal(f.roce, p->roce);
    assert_int_equal(f.bth_opcode, p->bth_opcode);
    assert_int_equal(f.dqp, p->roce ? p->dqp : 0);
    assert_int_equal(f.psn, p->roce ? p->psn : 0);
    assert_int_equal(f.nak, p->nak);
    assert_int_equal(f.tcp_seq, p->tcp_seq);
    assert_int_equal(f.seg_len, p->seg_len);
    assert_int_equal(f.tcp_syn, p->tcp_syn);
    return 1;
}

/* Decodes the first caplen bytes of f from an exactly-sized heap copy (and,
 * for Ethernet, checks the fast path on the same copy: so every frame and
 * every cut of this corpus compares the two). */
static int dec(int dlt, const struct fb *f, uint32_t caplen, uint32_t wire, struct decode_pkt *p)
{
    uint8_t *b = malloc(caplen ? caplen : 1);
    assert_non_null(b);
    memcpy(b, f->b, caplen);
    int r = decode_frame(dlt, b, caplen, wire, p);
    if (dlt == DLT_EN10MB)
        check_fast(b, caplen, wire, r, p);
    free(b);
    return r;
}

/* Cuts the frame at every byte and checks the status against the header
 * boundaries the test states: l3_end (IP header incl. options), l4_end
 * (fixed TCP/UDP header, after any IPv6 extension headers) and hdr_end (TCP
 * options or BTH included). */
static void check_cuts(int dlt, const struct fb *f, uint32_t l3_end, uint32_t l4_end, uint32_t hdr_end)
{
    struct decode_pkt full, p;
    assert_int_equal(dec(dlt, f, f->n, f->n, &full), 0);
    for (uint32_t c = 0; c < f->n; c++) {
        int r = dec(dlt, f, c, f->n, &p);
        if (c < l3_end) {
            assert_int_equal(r, -EMSGSIZE);
            continue;
        }
        assert_int_equal(r, 0);
        assert_int_equal(p.af, full.af);
        assert_memory_equal(p.src, full.src, 16);
        assert_int_equal(p.wire_len, f->n);
        assert_int_equal(p.ip_len, full.ip_len);
        if (c < l4_end) {
            assert_true(p.flags & DECODE_F_TRUNC);
            assert_int_equal(p.l4, 0);
        } else if (c < hdr_end) {
            assert_true(p.flags & DECODE_F_TRUNC);
            assert_int_equal(p.l4, 1);
            assert_int_equal(p.roce, 0);
            assert_int_equal(p.dport, full.dport);
        } else {
            assert_int_equal(p.flags, full.flags);
            assert_int_equal(p.l4, full.l4);
            assert_int_equal(p.roce, full.roce);
            assert_int_equal(p.dqp, full.dqp);
        }
    }
}

/* ---- Ethernet, tags ----------------------------------------------------- */

/* An IPv4/TCP segment without payload, padded to Ethernet's 60 bytes:
 * the padding is neither datagram nor payload. */
static void padded_tcp4(struct fb *f, uint16_t frag, uint16_t sport, uint16_t dport)
{
    eth(f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(f, 0, frag, 6, 0);
    tcp(f, sport, dport, 0);
    ip4_fix(f, o);
    zeros(f, 6);
}

static void test_eth_ipv4_tcp(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0xb9, 0x4000, 6, 0);
    tcp(&f, 49152, 5001, 12);
    zeros(&f, 100);
    ip4_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.af, 4);
    assert_memory_equal(p.src, A4, 4);
    assert_memory_equal(p.dst, B4, 4);
    assert_int_equal(p.src[4], 0);
    assert_int_equal(p.proto, 6);
    assert_int_equal(p.dscp, 46);
    assert_int_equal(p.ecn, 1);
    assert_int_equal(p.sport, 49152);
    assert_int_equal(p.dport, 5001);
    assert_int_equal(p.l4, 1);
    assert_int_equal(p.flags, 0);
    assert_int_equal(p.nvlan, 0);
    assert_int_equal(p.ip_len, f.n - 14);
    assert_int_equal(p.l3_off, 14);
    assert_int_equal(p.l4_off, 34);
    assert_int_equal(p.payload_off, 66);
    assert_int_equal(p.roce, 0);
    check_cuts(DLT_EN10MB, &f, 34, 54, 66);
    /* Ethernet padding after a short datagram is not part of it. */
    struct fb g = {0};
    padded_tcp4(&g, 0, 1, 2);
    assert_int_equal(dec(DLT_EN10MB, &g, g.n, g.n, &p), 0);
    assert_int_equal(p.ip_len, 40);
    assert_int_equal(p.flags, 0);
}

static void tagged(int ntags, const uint16_t *tpids, const uint16_t *vids, int expect)
{
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, ntags, tpids, vids, 0x0800);
    uint32_t o = ip4(&f, 0, 0, 17, 0);
    udp(&f, 1000, 2000, 8 + 10);
    zeros(&f, 10);
    ip4_fix(&f, o);
    int r = dec(DLT_EN10MB, &f, f.n, f.n, &p);
    assert_int_equal(r, expect);
    if (expect < 0)
        return;
    assert_int_equal(p.nvlan, ntags);
    for (int i = 0; i < ntags; i++)
        assert_int_equal(p.vlan[i], vids[i]);
    assert_int_equal(p.l3_off, 14 + 4 * ntags);
    assert_int_equal(p.dport, 2000);
    check_cuts(DLT_EN10MB, &f, o + 20, o + 28, o + 28);
}

static void test_vlan_tags(void **state)
{
    (void)state;
    uint16_t q[5] = {0x8100, 0x8100, 0x8100, 0x8100, 0x8100};
    uint16_t ad[2] = {0x88a8, 0x8100};
    uint16_t old[3] = {0x9100, 0x8100, 0x8100};
    uint16_t v[5] = {10, 20, 30, 40, 50};
    uint16_t v_ad[2] = {30, 100};
    tagged(1, q, (uint16_t[]){42}, 0);
    tagged(1, q, (uint16_t[]){0}, 0); /* priority tag */
    tagged(2, q, v, 0);
    tagged(2, ad, v_ad, 0);
    tagged(3, old, (uint16_t[]){30, 20, 10}, 0);
    tagged(DECODE_MAX_TAGS, q, v, 0);
    tagged(DECODE_MAX_TAGS + 1, q, v, -EBADMSG);
}

static void test_not_ip(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0806);
    zeros(&f, 28);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), -EPROTONOSUPPORT);
    struct fb g = {0};
    eth(&g, 1, (uint16_t[]){0x8100}, (uint16_t[]){5}, 0x0026); /* LLC length */
    zeros(&g, 38);
    assert_int_equal(dec(DLT_EN10MB, &g, g.n, g.n, &p), -EPROTONOSUPPORT);
    assert_int_equal(dec(197 /* ERF */, &g, g.n, g.n, &p), -EPROTONOSUPPORT);
    assert_int_equal(dec(DLT_EN10MB, &g, 0, 0, &p), -EMSGSIZE);
}

/* ---- IPv4 --------------------------------------------------------------- */

static void test_ipv4_options(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0, 0, 6, 12);
    tcp(&f, 80, 40000, 0);
    ip4_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.l4_off, 14 + 32);
    assert_int_equal(p.sport, 80);
    check_cuts(DLT_EN10MB, &f, 46, 66, 66);
}

static void test_ipv4_fragments(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0, 0x2000 /* MF, offset 0 */, 17, 0);
    udp(&f, 53, 5353, 1000);
    zeros(&f, 40);
    ip4_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, DECODE_F_FRAG);
    assert_int_equal(p.l4, 1);
    assert_int_equal(p.dport, 5353);
    check_cuts(DLT_EN10MB, &f, 34, 42, 42);

    /* Offset 24 bytes, no MF: the last fragment, whose first bytes are
     * payload that must not be read as ports. */
    set16(&f, o + 6, 3);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, DECODE_F_FRAG | DECODE_F_NONFIRST);
    assert_int_equal(p.l4, 0);
    assert_int_equal(p.sport, 0);
    assert_int_equal(p.proto, 17);
    check_cuts(DLT_EN10MB, &f, 34, 0, 0);

    set16(&f, o + 6, 0x4000); /* DF alone is not a fragment */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, 0);
}

static void test_ipv4_bad_lengths(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0, 0, 6, 0);
    tcp(&f, 1, 2, 0);
    ip4_fix(&f, o);

    f.b[o] = 0x44; /* IHL 4 */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), -EBADMSG);
    assert_int_equal(p.af, 0);
    f.b[o] = 0x65; /* version 6 behind EtherType IPv4 */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), -EBADMSG);
    f.b[o] = 0x4f; /* IHL 15: 60 bytes, more than captured */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), -EMSGSIZE);
    f.b[o] = 0x45;

    set16(&f, o + 2, 1500); /* total length beyond the wire */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_true(p.flags & DECODE_F_BADLEN);
    assert_int_equal(p.ip_len, f.n - 14);
    assert_int_equal(p.l4, 1);

    set16(&f, o + 2, 19); /* shorter than its own header */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), -EBADMSG);

    set16(&f, o + 2, 30); /* too short for the TCP header */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, DECODE_F_BADLEN);
    assert_int_equal(p.l4, 0);

    set16(&f, o + 2, 40);
    f.b[o + 20 + 12] = 0x40; /* TCP data offset 4 */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, DECODE_F_BADLEN);
    assert_int_equal(p.l4, 1);
    assert_int_equal(p.payload_off, o + 40);
    f.b[o + 20 + 12] = 0xf0; /* data offset 60 bytes, datagram 40 */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_true(p.flags & DECODE_F_BADLEN);
}

static void test_bigtcp_ipv4(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0, 0x4000, 6, 0);
    tcp(&f, 5201, 40000, 12);
    set16(&f, o + 2, 0); /* GSO super-packet: the kernel leaves 0 */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, 80066, &p), 0);
    assert_int_equal(p.ip_len, 80066 - 14);
    assert_int_equal(p.flags, 0);
    assert_int_equal(p.wire_len, 80066);
    assert_int_equal(p.l4, 1);
}

/* ---- IPv6 --------------------------------------------------------------- */

static void test_ipv6_ext_chain(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x86dd);
    uint32_t o = ip6(&f, 0x6b, 0);
    ext(&f, 43, 0);            /* HBH -> routing */
    ext(&f, 60, 2);            /* routing (24 bytes) -> dstopts */
    ext(&f, 44, 0);            /* dstopts -> fragment */
    put8(&f, 51); put8(&f, 0); put16(&f, 0x0001); put32(&f, 7); /* frag: offset 0, M */
    put8(&f, 6); put8(&f, 1); zeros(&f, 10); /* AH: (1+2)*4 = 12 bytes -> TCP */
    uint32_t l4 = f.n;
    tcp(&f, 443, 50000, 0);
    zeros(&f, 20);
    ip6_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.af, 6);
    assert_memory_equal(p.src, A6, 16);
    assert_memory_equal(p.dst, B6, 16);
    assert_int_equal(p.dscp, 26);
    assert_int_equal(p.ecn, 3);
    assert_int_equal(p.proto, 6);
    assert_int_equal(p.flags, DECODE_F_FRAG);
    assert_int_equal(p.l4_off, l4);
    assert_int_equal(p.sport, 443);
    assert_int_equal(p.ip_len, f.n - 14);
    check_cuts(DLT_EN10MB, &f, 54, l4 + 20, l4 + 20);

    /* A non-first fragment stops at the fragment header. */
    f.b[l4 - 12 - 8 + 3] = 0x08 | 1; /* offset 8 (in 8-byte units: 1) */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, DECODE_F_FRAG | DECODE_F_NONFIRST);
    assert_int_equal(p.l4, 0);
    assert_int_equal(p.proto, 51);
}

static void test_ipv6_bad(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x86dd);
    uint32_t o = ip6(&f, 0, 60);
    for (int i = 0; i < DECODE_MAX_EXT; i++)
        ext(&f, i == DECODE_MAX_EXT - 1 ? 17 : 60, 0);
    udp(&f, 1, 2, 8);
    ip6_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0); /* exactly the bound */
    assert_int_equal(p.dport, 2);

    struct fb g = {0};
    eth(&g, 0, NULL, NULL, 0x86dd);
    o = ip6(&g, 0, 60);
    for (int i = 0; i <= DECODE_MAX_EXT; i++)
        ext(&g, i == DECODE_MAX_EXT ? 17 : 60, 0);
    udp(&g, 1, 2, 8);
    ip6_fix(&g, o);
    assert_int_equal(dec(DLT_EN10MB, &g, g.n, g.n, &p), -EBADMSG);
    assert_int_equal(p.af, 0);

    /* Payload length beyond the wire: clamped and flagged. */
    set16(&f, o + 4, 9000);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_true(p.flags & DECODE_F_BADLEN);
    assert_int_equal(p.ip_len, f.n - 14);
    /* Payload length ending inside the extension chain. */
    set16(&f, o + 4, 16);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.flags, DECODE_F_BADLEN);
    assert_int_equal(p.l4, 0);
    /* Version 4 behind EtherType IPv6. */
    f.b[o] = 0x45;
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), -EBADMSG);
}

static void test_ipv6_jumbo_and_bigtcp(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x86dd);
    ip6(&f, 0, 0); /* payload length 0 */
    put8(&f, 6); put8(&f, 1);                     /* 16-byte HBH */
    put8(&f, 1); put8(&f, 4); put32(&f, 0);       /* PadN first */
    put8(&f, 0xc2); put8(&f, 4); put32(&f, 70000); /* Jumbo Payload */
    put8(&f, 1); put8(&f, 0);                     /* PadN, empty */
    tcp(&f, 1, 2, 0);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, 14 + 40 + 70000, &p), 0);
    assert_int_equal(p.flags, DECODE_F_JUMBO);
    assert_int_equal(p.ip_len, 40 + 70000);
    assert_int_equal(p.proto, 6);
    assert_int_equal(p.dport, 2);
    /* A wire shorter than the jumbo length claims. */
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, 14 + 40 + 60000, &p), 0);
    assert_int_equal(p.flags, DECODE_F_JUMBO | DECODE_F_BADLEN);
    assert_int_equal(p.ip_len, 40 + 60000);
    check_cuts(DLT_EN10MB, &f, 54, 70 + 20, 70 + 20);

    /* BIG TCP over IPv6: payload length 0, no HBH, next header TCP. */
    struct fb g = {0};
    eth(&g, 0, NULL, NULL, 0x86dd);
    ip6(&g, 0, 6);
    tcp(&g, 1, 2, 12);
    assert_int_equal(dec(DLT_EN10MB, &g, g.n, 80054, &p), 0);
    assert_int_equal(p.flags, 0);
    assert_int_equal(p.ip_len, 80054 - 14);
}

/* ---- RoCEv2 ------------------------------------------------------------- */

static void test_roce_bth(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0x6a, 0x4000, 17, 0);
    udp(&f, 69, DECODE_ROCE_PORT, 8 + 12 + 1024 + 4);
    bth(&f, 0x0a, 0, 0x123456, 0xabcdef);
    zeros(&f, 1024 + 4);
    ip4_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.roce, 1);
    assert_int_equal(p.sport, 69);
    assert_int_equal(p.bth_opcode, 0x0a);
    assert_int_equal(p.becn, 0);
    assert_int_equal(p.dqp, 0x123456);
    assert_int_equal(p.psn, 0xabcdef);
    assert_int_equal(p.dscp, 26);
    assert_int_equal(p.ecn, 2);
    assert_int_equal(p.payload_off, 42);
    check_cuts(DLT_EN10MB, &f, 34, 42, 54);

    /* Source port 4791 alone is not RoCE. */
    set16(&f, o + 20, DECODE_ROCE_PORT);
    set16(&f, o + 22, 69);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.roce, 0);

    /* A datagram to 4791 too short for a BTH. */
    struct fb g = {0};
    eth(&g, 0, NULL, NULL, 0x0800);
    o = ip4(&g, 0, 0, 17, 0);
    udp(&g, 1, DECODE_ROCE_PORT, 12);
    put32(&g, 0);
    ip4_fix(&g, o);
    zeros(&g, 20);
    assert_int_equal(dec(DLT_EN10MB, &g, g.n, g.n, &p), 0);
    assert_int_equal(p.roce, 0);
    assert_int_equal(p.flags, DECODE_F_BADLEN);
}

/* The CNP layout ConnectX NICs send (Mellanox "RoCEv2 CNP packet format"). */
static void test_roce_cnp(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0xc2, 0x4000, 17, 0);
    udp(&f, 0, DECODE_ROCE_PORT, 40);
    put8(&f, 0x81); put8(&f, 0); put16(&f, 0xffff);
    put8(&f, 0x40); put24(&f, 0x0000d2);
    put32(&f, 0);
    zeros(&f, 16);
    put32(&f, 0xdeadbeef); /* ICRC */
    ip4_fix(&f, o);
    assert_int_equal(f.n, 74);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.roce, 1);
    assert_int_equal(p.bth_opcode, DECODE_BTH_CNP);
    assert_int_equal(p.becn, 1);
    assert_int_equal(p.dqp, 0xd2);
    assert_int_equal(p.psn, 0);
    assert_int_equal(p.sport, 0);
    assert_int_equal(p.dscp, 48);
    assert_int_equal(p.ecn, 2);
    assert_int_equal(p.flags, 0);
    check_cuts(DLT_EN10MB, &f, 34, 42, 54);
}

/* ---- other link types --------------------------------------------------- */

static void test_sll_sll2(void **state)
{
    (void)state;
    struct decode_pkt p;
    struct fb f = {0};
    put16(&f, 0); put16(&f, 1); put16(&f, 6); put(&f, MAC, 8); put16(&f, 0x0800);
    uint32_t o = ip4(&f, 0, 0, 6, 0);
    tcp(&f, 22, 50000, 0);
    ip4_fix(&f, o);
    assert_int_equal(dec(DLT_LINUX_SLL, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.l3_off, 16);
    assert_int_equal(p.sport, 22);
    check_cuts(DLT_LINUX_SLL, &f, 36, 56, 56);

    struct fb t = {0}; /* SLL with a re-inserted 802.1Q tag */
    put16(&t, 0); put16(&t, 1); put16(&t, 6); put(&t, MAC, 8); put16(&t, 0x8100);
    put16(&t, 77); put16(&t, 0x86dd);
    o = ip6(&t, 0, 17);
    udp(&t, 1, 2, 8);
    ip6_fix(&t, o);
    assert_int_equal(dec(DLT_LINUX_SLL, &t, t.n, t.n, &p), 0);
    assert_int_equal(p.nvlan, 1);
    assert_int_equal(p.vlan[0], 77);
    assert_int_equal(p.af, 6);

    struct fb g = {0};
    put16(&g, 0x0800); put16(&g, 0); put32(&g, 3); put16(&g, 1); put8(&g, 0); put8(&g, 6);
    put(&g, MAC, 8);
    o = ip4(&g, 0, 0, 6, 0);
    tcp(&g, 22, 50000, 0);
    ip4_fix(&g, o);
    assert_int_equal(dec(DLT_LINUX_SLL2, &g, g.n, g.n, &p), 0);
    assert_int_equal(p.l3_off, 20);
    assert_int_equal(p.dport, 50000);
    check_cuts(DLT_LINUX_SLL2, &g, 40, 60, 60);
}

static void test_raw(void **state)
{
    (void)state;
    struct decode_pkt p;
    struct fb f = {0};
    uint32_t o = ip4(&f, 0, 0, 17, 0);
    udp(&f, 1, DECODE_ROCE_PORT, 8 + 12);
    bth(&f, 0x11, 1, 7, 9);
    ip4_fix(&f, o);
    int raws[] = {12, 14, 101, DLT_RAW, DLT_IPV4};
    for (unsigned i = 0; i < sizeof(raws) / sizeof(raws[0]); i++) {
        assert_int_equal(decode_linktype_supported(raws[i]), 0);
        assert_int_equal(dec(raws[i], &f, f.n, f.n, &p), 0);
        assert_int_equal(p.l3_off, 0);
        assert_int_equal(p.roce, 1);
        assert_int_equal(p.becn, 1);
    }
    check_cuts(DLT_RAW, &f, 20, 28, 40);
    assert_int_equal(dec(DLT_IPV6, &f, f.n, f.n, &p), -EBADMSG);

    struct fb g = {0};
    o = ip6(&g, 0, 6);
    tcp(&g, 1, 2, 0);
    ip6_fix(&g, o);
    assert_int_equal(dec(DLT_IPV6, &g, g.n, g.n, &p), 0);
    assert_int_equal(dec(DLT_RAW, &g, g.n, g.n, &p), 0);
    assert_int_equal(p.af, 6);
    assert_int_equal(dec(DLT_IPV4, &g, g.n, g.n, &p), -EBADMSG);
    check_cuts(DLT_IPV6, &g, 40, 60, 60);
}

static void test_decode_ip_keeps_link_fields(void **state)
{
    (void)state;
    struct fb f = {0};
    struct decode_pkt p;
    zeros(&f, 30); /* an outer encapsulation the caller has parsed */
    uint32_t o = ip4(&f, 0, 0, 6, 0);
    tcp(&f, 7, 8, 0);
    ip4_fix(&f, o);
    memset(&p, 0xee, sizeof(p));
    p.wire_len = f.n;
    p.nvlan = 1;
    p.vlan[0] = 99;
    assert_int_equal(decode_ip(f.b, f.n, 30, &p), 0);
    assert_int_equal(p.nvlan, 1);
    assert_int_equal(p.vlan[0], 99);
    assert_int_equal(p.wire_len, f.n);
    assert_int_equal(p.l3_off, 30);
    assert_int_equal(p.dport, 8);
    assert_int_equal(p.roce, 0);
    assert_int_equal(p.src[5], 0);
    assert_int_equal(decode_ip(f.b, f.n, f.n, &p), -EMSGSIZE);
}

/* The fast path takes the common frames whole, declines them at every cut
 * short of the end of their last header, and agrees with decode_frame on
 * the rest (check_fast, through dec()). */
static void fast_cuts(const struct fb *f, uint32_t hdr_end)
{
    struct decode_pkt p;
    uint8_t *b = malloc(f->n);
    assert_non_null(b);
    memcpy(b, f->b, f->n);
    int r = decode_frame(DLT_EN10MB, b, f->n, f->n, &p);
    assert_int_equal(check_fast(b, f->n, f->n, r, &p), 1);
    free(b);
    for (uint32_t c = 0; c < f->n; c++) {
        b = malloc(c ? c : 1);
        assert_non_null(b);
        memcpy(b, f->b, c);
        r = decode_frame(DLT_EN10MB, b, c, f->n, &p);
        assert_int_equal(check_fast(b, c, f->n, r, &p), c >= hdr_end);
        free(b);
    }
}

/* What flowtab counts loss by: the TCP sequence number and payload length
 * (by the IP length: a snap length that cuts the payload changes nothing;
 * options are not payload), the PSN, and whether an RC Acknowledge's AETH
 * says NAK (syndrome 011xxxxx; 000 is an ACK, 001 RNR NAK is not a loss). */
static void test_loss_fields(void **state)
{
    (void)state;
    struct decode_pkt p;
    struct fb f = {0};
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0, 0x4000, 6, 0);
    tcp(&f, 49152, 5001, 12);
    f.b[14 + 20 + 4] = 0xff, f.b[14 + 20 + 5] = 0xff, f.b[14 + 20 + 6] = 0xff, f.b[14 + 20 + 7] = 0xf0;
    zeros(&f, 1000);
    ip4_fix(&f, o);
    assert_int_equal(dec(DLT_EN10MB, &f, f.n, f.n, &p), 0);
    assert_int_equal(p.tcp_seq, 0xfffffff0u);
    assert_int_equal(p.seg_len, 1000);
    assert_int_equal(dec(DLT_EN10MB, &f, 14 + 20 + 32 + 10, f.n, &p), 0); /* snap length 76 */
    assert_int_equal(p.seg_len, 1000);
    assert_int_equal(dec(DLT_EN10MB, &f, 14 + 20 + 24, f.n, &p), 0); /* options cut */
    assert_int_equal(p.tcp_seq, 0xfffffff0u);
    assert_int_equal(p.seg_len, 1000);
    /* Ethernet padding is not payload: a pure ACK padded to 60 bytes. */
    struct fb a = {0};
    padded_tcp4(&a, 0x4000, 49152, 5001);
    assert_int_equal(dec(DLT_EN10MB, &a, a.n, a.n, &p), 0);
    assert_int_equal(p.seg_len, 0);
    assert_int_equal(p.tcp_seq, 1);
    assert_int_equal(p.tcp_syn, 0);
    a.b[14 + 20 + 13] = 0x12; /* SYN-ACK */
    assert_int_equal(dec(DLT_EN10MB, &a, a.n, a.n, &p), 0);
    assert_int_equal(p.tcp_syn, 1);

    const struct { uint8_t opcode, aeth; uint32_t cut; int nak; } r[] = {
        {DECODE_BTH_ACK, 0x60, 0, 1},      /* NAK: PSN sequence error */
        {DECODE_BTH_ACK, 0x7f, 0, 1},
        {DECODE_BTH_ACK, 0x1f, 0, 0},      /* ACK with credits */
        {DECODE_BTH_ACK, 0x20, 0, 0},      /* RNR NAK: the receiver is slow, nothing lost */
        {DECODE_BTH_ACK, 0x60, 14 + 40, 0},/* AETH cut */
        {0x0a, 0x60, 0, 0},                /* not an Acknowledge */
    };
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
        struct fb k = {0};
        eth(&k, 0, NULL, NULL, 0x0800);
        o = ip4(&k, 0, 0, 17, 0);
        udp(&k, 0xc000, DECODE_ROCE_PORT, 8 + 12 + 4 + 4);
        bth(&k, r[i].opcode, 0, 0x77, 0xfffffe);
        put8(&k, r[i].aeth);
        zeros(&k, 3 + 4);
        ip4_fix(&k, o);
        assert_int_equal(dec(DLT_EN10MB, &k, r[i].cut ? r[i].cut : k.n, k.n, &p), 0);
        if (p.nak != r[i].nak || p.psn != 0xfffffe || p.roce != 1 || p.seg_len || p.tcp_seq)
            fail_msg("case %zu: nak %u psn %x", i, p.nak, p.psn);
    }
}

static void test_fast_path(void **state)
{
    (void)state;
    static const uint16_t q[1] = {0x8100}, ad[1] = {0x88a8}, vid[1] = {0x123};
    struct fb f = {0};
    eth(&f, 0, NULL, NULL, 0x0800);
    uint32_t o = ip4(&f, 0xb9, 0x4000, 6, 0);
    tcp(&f, 49152, 5001, 12);
    zeros(&f, 10);
    ip4_fix(&f, o);
    fast_cuts(&f, 66);

    struct fb g = {0};
    eth(&g, 1, q, vid, 0x0800);
    o = ip4(&g, 0x6a, 0, 17, 0);
    udp(&g, 4791, 53, 8 + 4);
    zeros(&g, 4);
    ip4_fix(&g, o);
    fast_cuts(&g, 18 + 28);

    struct fb h = {0};
    eth(&h, 1, ad, vid, 0x0800);
    o = ip4(&h, 0x6b, 0x4000, 17, 0);
    udp(&h, 69, DECODE_ROCE_PORT, 8 + 12 + 16 + 4);
    bth(&h, 0x0a, 1, 0x123456, 0xabcdef);
    zeros(&h, 16 + 4);
    ip4_fix(&h, o);
    fast_cuts(&h, 18 + 40);

    struct fb c = {0};
    eth(&c, 0, NULL, NULL, 0x0800);
    o = ip4(&c, 0xc1, 0, 17, 0);
    udp(&c, 0xc000, DECODE_ROCE_PORT, 8 + 12 + 16 + 4);
    bth(&c, DECODE_BTH_CNP, 0, 0x99, 0);
    zeros(&c, 16 + 4);
    ip4_fix(&c, o);
    fast_cuts(&c, 14 + 40);

    /* An RC Acknowledge with its AETH: a NAK whatever its cut, as long
     * as the AETH's first byte is there (fast and full alike). */
    struct fb k = {0};
    eth(&k, 0, NULL, NULL, 0x0800);
    o = ip4(&k, 0, 0, 17, 0);
    udp(&k, 0xc000, DECODE_ROCE_PORT, 8 + 12 + 4 + 4);
    bth(&k, DECODE_BTH_ACK, 0, 0x77, 0x123);
    put8(&k, 0x60 | 5); /* NAK, PSN sequence error */
    zeros(&k, 3 + 4);
    ip4_fix(&k, o);
    fast_cuts(&k, 14 + 40);

    /* Lying lengths, fragments, options, a 0 total length: declined. */
    struct fb x = f;
    set16(&x, 14 + 2, 0);
    struct decode_pkt p;
    fast_calls = fast_hits = 0;
    assert_int_equal(dec(DLT_EN10MB, &x, x.n, x.n, &p), 0);
    x = f, set16(&x, 14 + 2, 30);
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    x = f, set16(&x, 14 + 2, (uint16_t)(x.n - 14 + 1));
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    x = f, set16(&x, 14 + 6, 0x2000);
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    x = f, set16(&x, 14 + 6, 0x0001);
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    x = f, x.b[14] = 0x46;
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    x = f, x.b[14 + 20 + 12] = 0x40; /* TCP data offset 4 */
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    x = g, set16(&x, 18 + 20 + 4, 7); /* UDP length 7 */
    dec(DLT_EN10MB, &x, x.n, x.n, &p);
    assert_int_equal(fast_calls, 8);
    assert_int_equal(fast_hits, 0);
}

static void test_linktype_names(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(decode_linktype_name(DLT_EN10MB, b, sizeof(b)), "EN10MB");
    assert_string_equal(decode_linktype_name(DLT_LINUX_SLL2, b, sizeof(b)), "LINUX_SLL2");
    assert_string_equal(decode_linktype_name(101, b, sizeof(b)), "RAW");
    assert_string_equal(decode_linktype_name(197, b, sizeof(b)), "ERF");
    assert_string_equal(decode_linktype_name(60000, b, sizeof(b)), "60000");
    assert_string_equal(decode_linktype_name(60000, b, 3), "60");
    assert_int_equal(decode_linktype_supported(197), -EPROTONOSUPPORT);
    for (unsigned i = 0; i < decode_nlinktypes; i++)
        assert_int_equal(decode_linktype_supported(decode_linktypes[i]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eth_ipv4_tcp),
        cmocka_unit_test(test_vlan_tags),
        cmocka_unit_test(test_not_ip),
        cmocka_unit_test(test_ipv4_options),
        cmocka_unit_test(test_ipv4_fragments),
        cmocka_unit_test(test_ipv4_bad_lengths),
        cmocka_unit_test(test_bigtcp_ipv4),
        cmocka_unit_test(test_ipv6_ext_chain),
        cmocka_unit_test(test_ipv6_bad),
        cmocka_unit_test(test_ipv6_jumbo_and_bigtcp),
        cmocka_unit_test(test_roce_bth),
        cmocka_unit_test(test_roce_cnp),
        cmocka_unit_test(test_sll_sll2),
        cmocka_unit_test(test_raw),
        cmocka_unit_test(test_decode_ip_keeps_link_fields),
        cmocka_unit_test(test_fast_path),
        cmocka_unit_test(test_loss_fields),
        cmocka_unit_test(test_linktype_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
