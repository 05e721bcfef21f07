/* Unit tests for probes/erspan: every mirror format, GRE options, truncation
 * at every offset, bad versions, and the inner frame's original length. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "probes/erspan.h"

/* Inner frame: Ethernet + IPv4 (total length 1000) + UDP, 46 bytes captured. */
static const uint8_t inner[] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00,
    0x45, 0x00, 0x03, 0xe8, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 2, 1,
    0x30, 0x39, 0x12, 0xb7, 0x03, 0xd4, 0, 0, 1, 2, 3, 4};

/* Builds outer Ethernet(14) + IPv4(20) + GRE + hdr + inner; fills pkt as
 * decode_frame would. Returns the frame length. */
static uint32_t build(uint8_t *f, struct decode_pkt *pkt, uint16_t gre_flags, uint16_t ptype,
                      const uint8_t *hdr, uint32_t hlen, uint32_t inner_wire_claim)
{
    memset(f, 0, 14);
    f[12] = 0x08;
    uint32_t off = 14;
    uint8_t *ip = f + off;
    memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[9] = 47;
    ip[12] = 192; ip[13] = 0; ip[14] = 2; ip[15] = 9;
    off += 20;
    uint32_t gre = off;
    f[off++] = (uint8_t)(gre_flags >> 8);
    f[off++] = (uint8_t)gre_flags;
    f[off++] = (uint8_t)(ptype >> 8);
    f[off++] = (uint8_t)ptype;
    if (gre_flags & 0x2000) { memset(f + off, 0xaa, 4); off += 4; }
    if (gre_flags & 0x1000) { f[off] = 0; f[off + 1] = 0; f[off + 2] = 0; f[off + 3] = 171; off += 4; }
    if (hlen)
        memcpy(f + off, hdr, hlen);
    off += hlen;
    memcpy(f + off, inner, sizeof(inner));
    uint32_t inner_off = off;
    off += sizeof(inner);
    memset(pkt, 0, sizeof(*pkt));
    pkt->af = 4;
    pkt->proto = 47;
    pkt->src[0] = 192; pkt->src[2] = 2; pkt->src[3] = 9;
    pkt->l3_off = 14;
    pkt->l4_off = gre;
    /* The carrier's IP length covers what the switch sent of the inner frame. */
    pkt->ip_len = (inner_off - 14) + inner_wire_claim;
    pkt->wire_len = 14 + pkt->ip_len;
    return off;
}

static void test_type2(void **state)
{
    (void)state;
    uint8_t f[256];
    struct decode_pkt pkt;
    /* ver 1, vlan 5; cos 0 en 0 t 0 session 0x155; index 32760 */
    const uint8_t h[8] = {0x10, 0x05, 0x01, 0x55, 0x00, 0x00, 0x7f, 0xf8};
    uint32_t n = build(f, &pkt, 0x1000, ERSPAN_GRE_II, h, 8, sizeof(inner));
    struct erspan_info e;
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_int_equal(e.type, ERSPAN_II);
    assert_int_equal(e.session, 0x155);
    assert_int_equal(e.index, 32760);
    assert_int_equal(e.vlan, 5);
    assert_int_equal(e.gre_seq, 171);
    assert_int_equal(e.truncated, 0);
    assert_int_equal(e.inner_caplen, sizeof(inner));
    assert_int_equal(e.inner_wire, sizeof(inner));
    assert_memory_equal(f + e.inner_off, inner, sizeof(inner));
    assert_int_equal(e.src_af, 4);
    assert_int_equal(e.src[3], 9);
}

static void test_type1_and_teb(void **state)
{
    (void)state;
    uint8_t f[256];
    struct decode_pkt pkt;
    struct erspan_info e;
    uint32_t n = build(f, &pkt, 0x0000, ERSPAN_GRE_II, NULL, 0, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_int_equal(e.type, ERSPAN_I);
    assert_int_equal(e.session, 0);
    n = build(f, &pkt, 0x2000, ERSPAN_GRE_TEB, NULL, 0, sizeof(inner)); /* with a key */
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_int_equal(e.type, ERSPAN_TEB);
    assert_memory_equal(f + e.inner_off, inner, sizeof(inner));
}

static void test_type3(void **state)
{
    (void)state;
    uint8_t f[256];
    struct decode_pkt pkt;
    struct erspan_info e;
    /* ver 2, vlan 0; session 0x3ff; timestamp; sgt; P0 FT0 HW 0x2a D1 gra O */
    uint16_t w = (uint16_t)((0x2a << 4) | (1 << 3));
    uint8_t h[20] = {0x20, 0x00, 0x03, 0xff, 0xde, 0xad, 0xbe, 0xef, 0, 0,
                     (uint8_t)(w >> 8), (uint8_t)w};
    uint32_t n = build(f, &pkt, 0, ERSPAN_GRE_III, h, 12, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_int_equal(e.type, ERSPAN_III);
    assert_int_equal(e.session, 0x3ff);
    assert_int_equal(e.timestamp, 0xdeadbeef);
    assert_int_equal(e.hw_id, 0x2a);
    assert_int_equal(e.dir, 1);
    assert_int_equal(e.frame_type, 0);
    assert_memory_equal(f + e.inner_off, inner, sizeof(inner));
    /* with the optional platform sub-header */
    w |= 1;
    h[10] = (uint8_t)(w >> 8);
    h[11] = (uint8_t)w;
    n = build(f, &pkt, 0, ERSPAN_GRE_III, h, 20, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_memory_equal(f + e.inner_off, inner, sizeof(inner));
    /* a non-Ethernet frame type is refused */
    w = (uint16_t)(w | (3 << 10));
    h[10] = (uint8_t)(w >> 8);
    h[11] = (uint8_t)w;
    n = build(f, &pkt, 0, ERSPAN_GRE_III, h, 20, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), -EBADMSG);
}

static void test_truncated_mirror(void **state)
{
    (void)state;
    uint8_t f[256];
    struct decode_pkt pkt;
    struct erspan_info e;
    /* T bit set: the switch sent 46 bytes of a frame whose IP says 1000. */
    const uint8_t h[8] = {0x10, 0x00, 0x04 | 0x00, 0x01, 0, 0, 0, 1};
    uint32_t n = build(f, &pkt, 0x1000, ERSPAN_GRE_II, h, 8, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_int_equal(e.truncated, 1);
    assert_int_equal(e.inner_wire, 14 + 1000);
    /* Not truncated by the switch but cut by our snap length: the carrier's
     * IP length tells the original size. */
    const uint8_t h2[8] = {0x10, 0x00, 0x00, 0x01, 0, 0, 0, 1};
    n = build(f, &pkt, 0x1000, ERSPAN_GRE_II, h2, 8, 1014);
    assert_int_equal(erspan_decap(&pkt, f, n, &e), 0);
    assert_int_equal(e.inner_wire, 1014);
    assert_int_equal(e.inner_caplen, sizeof(inner));
}

static void test_bad_and_cut(void **state)
{
    (void)state;
    uint8_t f[256];
    struct decode_pkt pkt;
    struct erspan_info e;
    const uint8_t h[8] = {0x10, 0x05, 0x01, 0x55, 0x00, 0x00, 0x7f, 0xf8};
    uint32_t n = build(f, &pkt, 0x1000, ERSPAN_GRE_II, h, 8, sizeof(inner));
    /* every cut inside GRE + ERSPAN headers is reported, never over-read */
    for (uint32_t cut = pkt.l4_off; cut < pkt.l4_off + 16; cut++)
        assert_int_equal(erspan_decap(&pkt, f, cut, &e), -EMSGSIZE);
    for (uint32_t cut = pkt.l4_off + 16; cut <= n; cut++) {
        assert_int_equal(erspan_decap(&pkt, f, cut, &e), 0);
        assert_int_equal(e.inner_caplen, cut - e.inner_off);
    }
    /* wrong ERSPAN version in a type II header */
    const uint8_t bad[8] = {0x30, 0, 0, 1, 0, 0, 0, 1};
    n = build(f, &pkt, 0x1000, ERSPAN_GRE_II, bad, 8, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), -EBADMSG);
    /* GRE version 1 (PPTP) and other payload types are not mirrors */
    n = build(f, &pkt, 0x0001, ERSPAN_GRE_II, NULL, 0, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), -EBADMSG);
    n = build(f, &pkt, 0, 0x0800, NULL, 0, sizeof(inner));
    assert_int_equal(erspan_decap(&pkt, f, n, &e), -ENOENT);
    pkt.proto = 17;
    assert_int_equal(erspan_decap(&pkt, f, n, &e), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type2),
        cmocka_unit_test(test_type1_and_teb),
        cmocka_unit_test(test_type3),
        cmocka_unit_test(test_truncated_mirror),
        cmocka_unit_test(test_bad_and_cut),
    };
    return cmocka_run_group_tests_name("erspan", tests, NULL, NULL);
}
