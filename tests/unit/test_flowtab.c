/*
 * Unit tests for probes/flowtab: keys (VLANs, QPs), accounting, expiry,
 * eviction when full, the rate EWMA, fat-flow hysteresis and CNP
 * attribution, and the batch path against one-at-a-time updates. Packets
 * are built as decode_pkt structs directly: the decoder has its own suite.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "probes/flowtab.h"

static struct decode_pkt mk(uint8_t a, uint8_t b, uint16_t sport, uint16_t dport, uint32_t len)
{
    struct decode_pkt p;
    memset(&p, 0, sizeof(p));
    p.af = 4;
    p.src[0] = 10; p.src[3] = a;
    p.dst[0] = 10; p.dst[3] = b;
    p.proto = 6;
    p.sport = sport;
    p.dport = dport;
    p.l4 = 1;
    p.wire_len = p.ip_len = len;
    return p;
}

static struct decode_pkt mk_roce(uint8_t a, uint8_t b, uint8_t opcode, uint32_t dqp, uint32_t len)
{
    struct decode_pkt p = mk(a, b, 0xc000, DECODE_ROCE_PORT, len);
    p.proto = 17;
    p.roce = 1;
    p.bth_opcode = opcode;
    p.dqp = dqp;
    return p;
}

static struct flow *get(struct flowtab *ft, const struct decode_pkt *p)
{
    struct flow_key k;
    flowtab_key(p, &k);
    return flowtab_lookup(ft, &k);
}

static void test_insert_lookup(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(16, 0);
    assert_non_null(ft);
    struct decode_pkt p = mk(1, 2, 1000, 80, 1500);
    p.dscp = 26;
    p.ecn = 3;
    assert_int_equal(flowtab_update(ft, &p, 2, 10.0, 1, FLOW_SRC_PCAP), 0);
    p.ecn = 2;
    assert_int_equal(flowtab_update(ft, &p, 2, 11.0, 1, FLOW_SRC_PCAP), 0);
    p.ecn = 1;
    assert_int_equal(flowtab_update(ft, &p, 2, 10.5, 100, FLOW_SRC_SFLOW), 0);
    struct flow *f = get(ft, &p);
    assert_non_null(f);
    assert_int_equal(f->bytes, 1500 * 102);
    assert_int_equal(f->ivl_bytes, 1500 * 102);
    assert_int_equal(f->pkts, 102);
    assert_int_equal(f->ivl_ce, 1);
    assert_int_equal(f->ivl_ect, 101);
    assert_int_equal(f->dscp, 26);
    assert_int_equal(f->ifidx, 2);
    assert_int_equal(f->sampling, 100);
    assert_int_equal(f->source, FLOW_SRC_SFLOW);
    assert_true(f->first_ts == 10.0);
    assert_true(f->last_ts == 11.0); /* out-of-order packet does not move it back */
    assert_int_equal(flowtab_count(ft), 1);

    struct decode_pkt rev = mk(2, 1, 80, 1000, 60);
    assert_null(get(ft, &rev));
    struct decode_pkt bad = p;
    bad.af = 0;
    assert_int_equal(flowtab_update(ft, &bad, 0, 12, 1, 0), -EINVAL);
    assert_int_equal(flowtab_count(ft), 1);

    struct flowtab_stats st;
    flowtab_get_stats(ft, &st);
    assert_int_equal(st.inserted, 1);
    assert_int_equal(st.evicted, 0);
    /* The CE and ECT totals add up the closed intervals. */
    flowtab_close_interval(ft, 12.0, 1.0, NULL, 0, 0);
    assert_int_equal(f->ce_pkts, 1);
    assert_int_equal(f->ect_pkts, 101);
    assert_int_equal(f->ivl_ce, 0);
    flowtab_free(ft);

    assert_null(flowtab_new(0, 1));
    assert_int_equal(errno, EINVAL);
    assert_null(flowtab_new(FLOWTAB_MAX_FLOWS + 1, 1));
}

static void test_vlan_and_qp_separation(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(64, 0);
    struct decode_pkt p = mk(1, 2, 59856, 80, 100);
    assert_int_equal(flowtab_update(ft, &p, 0, 1, 1, 0), 0);
    p.nvlan = 1;
    p.vlan[0] = 42;
    assert_int_equal(flowtab_update(ft, &p, 0, 1, 1, 0), 0);
    p.nvlan = 2;
    p.vlan[0] = 10;
    p.vlan[1] = 20;
    assert_int_equal(flowtab_update(ft, &p, 0, 1, 1, 0), 0);
    assert_int_equal(flowtab_update(ft, &p, 0, 1, 1, 0), 0);
    assert_int_equal(flowtab_count(ft), 3);
    assert_int_equal(get(ft, &p)->pkts, 2);

    /* Three tags key on the outer and the innermost. */
    struct flow_key k;
    p.nvlan = 3;
    p.vlan[0] = 30; p.vlan[1] = 20; p.vlan[2] = 10;
    flowtab_key(&p, &k);
    assert_int_equal(k.vlan[0], 30);
    assert_int_equal(k.vlan[1], 10);

    struct decode_pkt r1 = mk_roce(1, 2, 0x0a, 0x45, 1082), r2 = mk_roce(1, 2, 0x0a, 0x48, 1082);
    assert_int_equal(flowtab_update(ft, &r1, 0, 1, 1, 0), 0);
    assert_int_equal(flowtab_update(ft, &r2, 0, 1, 1, 0), 0);
    assert_int_equal(flowtab_update(ft, &r2, 0, 1, 1, 0), 0);
    assert_int_equal(flowtab_count(ft), 5);
    assert_int_equal(get(ft, &r1)->pkts, 1);
    assert_int_equal(get(ft, &r2)->pkts, 2);
    assert_int_equal(get(ft, &r2)->key.qp, 0x48);
    /* A non-RoCE packet carries no QP even if the field is set. */
    struct decode_pkt u = r1;
    u.roce = 0;
    flowtab_key(&u, &k);
    assert_int_equal(k.qp, 0);

    uint32_t cur = 0, n = 0;
    while (flowtab_next(ft, &cur))
        n++;
    assert_int_equal(n, 5);
    flowtab_free(ft);
}

static void test_expiry(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(8, 10.0);
    struct decode_pkt a = mk(1, 2, 1, 1, 100), b = mk(1, 2, 2, 2, 100);
    flowtab_update(ft, &a, 0, 0.0, 1, 0);
    flowtab_update(ft, &b, 0, 15.0, 1, 0);
    double link = 1e9;
    flowtab_close_interval(ft, 20.0, 1.0, &link, 1, 0.1);
    assert_null(get(ft, &a));
    assert_non_null(get(ft, &b));
    assert_int_equal(flowtab_count(ft), 1);
    struct flowtab_stats st;
    flowtab_get_stats(ft, &st);
    assert_int_equal(st.expired, 1);
    /* The freed slot is reusable. */
    assert_int_equal(flowtab_update(ft, &a, 0, 21.0, 1, 0), 0);
    assert_int_equal(get(ft, &a)->pkts, 1);
    /* The last flow updated expires: its next packet must create a new
     * entry, not revive the stale one. */
    flowtab_close_interval(ft, 40.0, 1.0, &link, 1, 0.1);
    assert_int_equal(flowtab_count(ft), 0);
    assert_int_equal(flowtab_update(ft, &a, 0, 41.0, 1, 0), 0);
    assert_int_equal(flowtab_count(ft), 1);
    assert_int_equal(get(ft, &a)->pkts, 1);
    assert_true(get(ft, &a)->first_ts == 41.0);
    flowtab_free(ft);
}

static void test_eviction_when_full(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(4, 0);
    struct decode_pkt p[6];
    for (int i = 0; i < 6; i++)
        p[i] = mk(1, 2, (uint16_t)(100 + i), 80, 100);
    for (int i = 0; i < 4; i++)
        assert_int_equal(flowtab_update(ft, &p[i], 0, 1.0 + i, 1, 0), 0);
    assert_int_equal(flowtab_update(ft, &p[0], 0, 5.0, 1, 0), 0); /* p[1] is now oldest */
    assert_int_equal(flowtab_update(ft, &p[4], 0, 6.0, 1, 0), 0);
    assert_int_equal(flowtab_count(ft), 4);
    assert_null(get(ft, &p[1]));
    assert_non_null(get(ft, &p[0]));
    assert_non_null(get(ft, &p[4]));
    struct flowtab_stats st;
    flowtab_get_stats(ft, &st);
    assert_int_equal(st.evicted, 1);
    assert_int_equal(st.inserted, 5);

    /* A window of fat flows still takes a new flow: the lightest fat one
     * goes (p[0] carried 200 bytes in the interval, the others 100; of
     * those, p[2] was seen least recently). */
    double link = 8000.0; /* 100-byte packets over 1 s are 800 b/s = 10% */
    flowtab_close_interval(ft, 6.0, 1.0, &link, 1, 0.05);
    uint32_t cur = 0;
    struct flow *f;
    while ((f = flowtab_next(ft, &cur)))
        assert_true(f->fat);
    assert_int_equal(flowtab_update(ft, &p[5], 0, 7.0, 1, 0), 0);
    flowtab_get_stats(ft, &st);
    assert_int_equal(st.evicted, 2);
    assert_non_null(get(ft, &p[5]));
    assert_null(get(ft, &p[2]));
    assert_non_null(get(ft, &p[0]));
    assert_int_equal(flowtab_count(ft), 4);
    flowtab_free(ft);
}

/* Issue 12: a table full of junk must not keep a real fat flow out. Junk
 * that looks fat (forged sFlow samples, scaled by an absurd rate) made the
 * table refuse every new flow (-ENOSPC) until the junk aged out, 30 s
 * later; now the lightest of a window of fat flows makes room, and the real
 * flow is reported fat, with every byte, in the interval it starts. */
static void test_fat_junk_does_not_keep_fat_out(void **state)
{
    (void)state;
    const uint32_t max = 16;
    struct flowtab *ft = flowtab_new(max, 30.0);
    double link = 1e8, t = 0; /* 100 Mb/s, fat at 10 Mb/s */
    for (uint32_t i = 0; i < max; i++) {
        struct decode_pkt j = mk(9, 9, (uint16_t)(1000 + i), 80, 9000);
        for (int k = 0; k < FLOWTAB_MIN_SAMPLES; k++)
            assert_int_equal(flowtab_update(ft, &j, 0, t += 0.01, 1u << 24, FLOW_SRC_SFLOW), 0);
    }
    flowtab_close_interval(ft, 1.0, 1.0, &link, 1, 0.1);
    uint32_t cur = 0;
    struct flow *f;
    while ((f = flowtab_next(ft, &cur)))
        assert_true(f->fat);
    struct decode_pkt fat = mk(1, 2, 5000, 4791, 1500);
    for (int i = 0; i < 2000; i++)
        assert_int_equal(flowtab_update(ft, &fat, 0, 1.0 + i * 4e-4, 1, FLOW_SRC_PCAP), 0);
    f = get(ft, &fat);
    assert_non_null(f);
    assert_int_equal(f->pkts, 2000);
    flowtab_close_interval(ft, 2.0, 1.0, &link, 1, 0.1);
    assert_true(f->fat); /* 24 Mb/s */
    assert_true(f->ivl_bps == 2000 * 1500 * 8.0);
    assert_int_equal(flowtab_count(ft), max);
    flowtab_free(ft);
}

/* Nor push it out: junk keeps arriving (new flows of one 64-byte packet,
 * 200 of them between two packets of the fat flow, in a table of 64).
 * Sampled LRU evicted the fat flow whenever it was the oldest of its window,
 * so it lost its bytes again and again and was never found fat; by weight,
 * one 1500-byte packet already outweighs any junk flow. */
static void test_junk_churn_does_not_push_fat_out(void **state)
{
    (void)state;
    const uint32_t max = 64;
    struct flowtab *ft = flowtab_new(max, 30.0);
    uint32_t junk = 0;
    double t = 0, link = 1e7; /* 10 Mb/s, fat at 1 Mb/s */
    struct decode_pkt j;
    for (; junk < max; junk++) { /* full before the fat flow starts */
        j = mk(9, 9, (uint16_t)junk, 1, 64);
        assert_int_equal(flowtab_update(ft, &j, 0, t += 1e-4, 1, 0), 0);
    }
    flowtab_close_interval(ft, 1.0, 1.0, &link, 1, 0.1);
    struct decode_pkt fat = mk(1, 2, 5000, 4791, 1500);
    t = 1.0;
    for (int i = 0; i < 500; i++) {
        for (int k = 0; k < 200; k++, junk++) {
            j = mk(9, 9, (uint16_t)(junk & 0xffff), (uint16_t)(2 + (junk >> 16)), 64);
            assert_int_equal(flowtab_update(ft, &j, 0, t += 9e-6, 1, 0), 0);
        }
        assert_int_equal(flowtab_update(ft, &fat, 0, t += 1e-6, 1, 0), 0);
    }
    assert_true(t < 2.0);
    struct flow *f = get(ft, &fat);
    assert_non_null(f);
    assert_int_equal(f->pkts, 500);
    assert_int_equal(f->bytes, 500 * 1500);
    flowtab_close_interval(ft, 2.0, 1.0, &link, 1, 0.1);
    assert_true(f->fat); /* 6 Mb/s */
    struct flowtab_stats st;
    flowtab_get_stats(ft, &st);
    assert_int_equal(st.evicted, 100001); /* every newcomer got in, the fat one too */
    flowtab_free(ft);
}

/* Many inserts and removals through a small index: every survivor must
 * stay reachable (exercises backward-shift deletion). */
static void test_index_churn(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(1500, 5.0); /* never full: no eviction */
    double link = 1e9;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 1000; i++) {
            struct decode_pkt p = mk((uint8_t)i, (uint8_t)(i >> 8), (uint16_t)i, (uint16_t)round, 64);
            /* Odd flows are touched late so that they survive expiry. */
            assert_int_equal(flowtab_update(ft, &p, 0, round * 100.0 + (i & 1) * 50, 1, 0), 0);
        }
        flowtab_close_interval(ft, round * 100.0 + 52, 1.0, &link, 1, 0.1);
        assert_int_equal(flowtab_count(ft), 500);
        for (int i = 1; i < 1000; i += 2) {
            struct decode_pkt p = mk((uint8_t)i, (uint8_t)(i >> 8), (uint16_t)i, (uint16_t)round, 64);
            assert_non_null(get(ft, &p));
        }
    }
    struct flowtab_stats st;
    flowtab_get_stats(ft, &st);
    /* Round 0 expires its 500 even flows, later rounds also the previous
     * round's 500 survivors. */
    assert_int_equal(st.expired, 500 + 3 * 1000);
    assert_int_equal(st.evicted, 0);
    flowtab_free(ft);
}

static void close1(struct flowtab *ft, double now, double link, double share)
{
    flowtab_close_interval(ft, now, 1.0, &link, 1, share);
}

/* A flow that starts during its first interval is rated over the time it
 * was seen (at least FLOWTAB_MIN_SPAN of the interval); from its second
 * interval on, and when sampled, over the whole interval. */
static void test_first_interval_span(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(8, 0);
    double link = 1e8; /* fat at 5e6 */
    struct decode_pkt late = mk(1, 2, 1, 2, 125000), last = mk(1, 3, 1, 2, 125000),
                      smp = mk(1, 4, 1, 2, 125000);
    for (int i = 0; i < 3; i++)
        flowtab_update(ft, &late, 0, 10.7 + 0.1 * i, 1, FLOW_SRC_PCAP); /* 3e6 b over 0.3 s */
    flowtab_update(ft, &last, 0, 10.99, 1, FLOW_SRC_PCAP);              /* 1e6 b, floor 0.25 s */
    for (int i = 0; i < 3; i++)
        flowtab_update(ft, &smp, 0, 10.7 + 0.1 * i, 4, FLOW_SRC_SFLOW);
    flowtab_close_interval(ft, 11.0, 1.0, &link, 1, 0.05);
    assert_float_equal(get(ft, &late)->ivl_bps, 1e7, 1);
    assert_true(get(ft, &late)->fat); /* 3e6 b/s over the whole interval: not fat */
    assert_float_equal(get(ft, &last)->ivl_bps, 4e6, 1);
    assert_float_equal(get(ft, &smp)->ivl_bps, 4 * 3e6, 1);
    for (int i = 0; i < 3; i++)
        flowtab_update(ft, &late, 0, 11.7 + 0.1 * i, 1, FLOW_SRC_PCAP);
    flowtab_close_interval(ft, 12.0, 1.0, &link, 1, 0.1);
    assert_float_equal(get(ft, &late)->ivl_bps, 3e6, 1);
    flowtab_free(ft);
}

/* What makes a probe report at mid-interval (probe.c): flows not fat at the
 * last close, new ones and late starters alike, captured whole, seen for
 * min_age and fat over the part of the interval they were seen; not a flow
 * the last close called fat, not a sampled one, not one too young, not one
 * on a link of unknown rate. */
static void test_rising(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(8, 0);
    double link = 1e8; /* fat at 5e6 b/s with share 0.05 */
    struct decode_pkt old = mk(1, 2, 1, 2, 125000), fresh = mk(1, 3, 1, 2, 125000), young = mk(1, 4, 1, 2, 125000),
                      mouse = mk(1, 5, 1, 2, 1000), smp = mk(1, 6, 1, 2, 125000), late = mk(1, 7, 1, 2, 1000);
    for (int i = 0; i < 10; i++) {
        flowtab_update(ft, &old, 0, 9.0 + 0.1 * i, 1, FLOW_SRC_PCAP);
        flowtab_update(ft, &late, 0, 9.0 + 0.1 * i, 1, FLOW_SRC_PCAP);    /* 8e4 b/s: not fat */
    }
    flowtab_close_interval(ft, 10.0, 1.0, &link, 1, 0.05);
    assert_true(get(ft, &old)->fat);
    assert_false(get(ft, &late)->fat);
    assert_int_equal(flowtab_rising(ft, 10.0, 0.0, 0.125, &link, 1, 0.05), 0);   /* nothing run yet */
    late.ip_len = late.wire_len = 125000;
    for (int i = 0; i < 4; i++) {
        flowtab_update(ft, &old, 0, 10.1 + 0.1 * i, 1, FLOW_SRC_PCAP);
        flowtab_update(ft, &fresh, 0, 10.1 + 0.1 * i, 1, FLOW_SRC_PCAP);  /* 4e6 b over 0.4 s */
        flowtab_update(ft, &mouse, 0, 10.1 + 0.1 * i, 1, FLOW_SRC_PCAP);
        flowtab_update(ft, &smp, 0, 10.1 + 0.1 * i, 4, FLOW_SRC_SFLOW);
    }
    flowtab_update(ft, &late, 0, 10.3, 1, FLOW_SRC_PCAP);      /* 1e6 b over the 0.5 s run: 2e6 b/s */
    flowtab_update(ft, &young, 0, 10.45, 1, FLOW_SRC_PCAP);
    flowtab_update(ft, &young, 0, 10.5, 1, FLOW_SRC_PCAP);
    assert_int_equal(flowtab_rising(ft, 10.5, 0.5, 0.125, &link, 1, 0.05), 1);   /* fresh only */
    assert_int_equal(flowtab_rising(ft, 10.5, 0.5, 0.01, &link, 1, 0.05), 2);    /* and young (2e6 b over 0.05 s) */
    assert_int_equal(flowtab_rising(ft, 10.5, 0.5, 0.125, &link, 1, 0.01), 2);   /* and late: 2e6 b/s >= 1e6 */
    assert_int_equal(flowtab_rising(ft, 10.5, 0.5, 0.125, &link, 1, 0.5), 0);    /* 1e7 b/s < 5e7 */
    assert_int_equal(flowtab_rising(ft, 10.5, 0.5, 0.125, NULL, 0, 0.05), 0);    /* no link rate */
    double none = 0;
    assert_int_equal(flowtab_rising(ft, 10.5, 0.5, 0.125, &none, 1, 0.05), 0);   /* unknown rate: not fat */
    flowtab_close_interval(ft, 10.5, 0.5, &link, 1, 0.05);
    assert_int_equal(flowtab_rising(ft, 10.6, 0.1, 0.01, &link, 1, 0.05), 0);     /* fat now, or idle */
    flowtab_free(ft);
}

static void test_rate_ewma(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(4, 0);
    struct decode_pkt p = mk(1, 2, 1, 2, 1000000);
    for (int i = 0; i < 100; i++)
        flowtab_update(ft, &p, 0, 0.0, 1, 0); /* 1e8 bytes: 8e8 b/s */
    close1(ft, 1.0, 1e10, 0.1);
    struct flow *f = get(ft, &p);
    assert_float_equal(f->ivl_bps, 8e8, 1);
    assert_float_equal(f->rate_bps, 8e8, 1); /* first interval seeds the EWMA */
    assert_int_equal(f->ivl_bytes, 0);
    assert_int_equal(f->bytes, 100000000);
    close1(ft, 2.0, 1e10, 0.1);
    assert_float_equal(f->ivl_bps, 0, 1);
    assert_float_equal(f->rate_bps, 4e8, 1);
    p.wire_len = 25000000; /* 2e8 b/s */
    flowtab_update(ft, &p, 0, 2.5, 1, 0);
    close1(ft, 3.0, 1e10, 0.1);
    assert_float_equal(f->rate_bps, 0.5 * 2e8 + 0.5 * 4e8, 1);
    /* Half-second interval doubles the rate of the same bytes. */
    flowtab_update(ft, &p, 0, 3.2, 1, 0);
    double link = 1e10;
    flowtab_close_interval(ft, 3.5, 0.5, &link, 1, 0.1);
    assert_float_equal(f->ivl_bps, 4e8, 1);
    flowtab_free(ft);
}

static void test_fat_hysteresis(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(4, 0);
    const double link = 1e9, share = 0.1; /* fat at 1e8 b/s, lean below 8e7 */
    struct decode_pkt p = mk(1, 2, 1, 2, 0);
    struct flow *f;
    /* interval b/s -> EWMA -> fat? */
    const struct { double bps, rate; bool fat; } seq[] = {
        {0.95e8, 0.95e8, false},   /* below the threshold */
        {1.05e8, 1.0e8, true},     /* crosses up (>= share) */
        {0.70e8, 0.85e8, true},    /* in the band: stays fat */
        {0.70e8, 0.775e8, false},  /* below share * HYST_LOW: drops */
        {0.95e8, 0.8625e8, false}, /* back in the band: stays lean */
        {1.2e8, 1.03125e8, true},
    };
    for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        p.wire_len = (uint32_t)(seq[i].bps / 8);
        flowtab_update(ft, &p, 0, (double)i, 1, 0);
        close1(ft, i + 1.0, link, share);
        f = get(ft, &p);
        assert_float_equal(f->rate_bps, seq[i].rate, 10);
        assert_int_equal(f->fat, seq[i].fat);
    }
    /* No known link rate for the flow's interface: never fat. */
    flowtab_update(ft, &p, 3, 10.5, 1, 0);
    close1(ft, 11.0, link, share);
    assert_false(get(ft, &p)->fat);
    flowtab_free(ft);
}

/* A flow seen through 1-in-N sampling may become fat only with at least
 * FLOWTAB_MIN_SAMPLES samples in the interval; once fat, hysteresis alone
 * decides (a thin interval of an elephant does not drop it). */
static void test_sampled_min_samples(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(4, 0);
    const double link = 1e9, share = 0.1; /* fat at 1e8 b/s */
    const uint32_t n = 1000;               /* 1-in-1000 */
    struct decode_pkt p = mk(1, 2, 1, 2, 9000);
    /* Three samples of 9000 B at 1-in-1000: an estimate of 2.16e8 b/s, above
     * the threshold, but too few samples to trust. */
    for (int i = 0; i < FLOWTAB_MIN_SAMPLES - 1; i++)
        flowtab_update(ft, &p, 0, 0.5, n, FLOW_SRC_SFLOW);
    close1(ft, 1.0, link, share);
    struct flow *f = get(ft, &p);
    assert_int_equal(f->sampling, n);
    assert_float_equal(f->rate_bps, 2.16e8, 1);
    assert_false(f->fat);
    /* Enough samples: fat. */
    for (int i = 0; i < FLOWTAB_MIN_SAMPLES; i++)
        flowtab_update(ft, &p, 0, 1.5, n, FLOW_SRC_SFLOW);
    close1(ft, 2.0, link, share);
    assert_true(f->fat);
    /* One sample in the next interval: the EWMA keeps it above the band, and
     * a fat flow is not dropped for lack of samples. */
    flowtab_update(ft, &p, 0, 2.5, n, FLOW_SRC_SFLOW);
    close1(ft, 3.0, link, share);
    assert_true(f->fat);
    /* A fully captured flow (sampling 1) needs no minimum. */
    struct decode_pkt q = mk(3, 4, 1, 2, 60000);
    for (int i = 0; i < 3; i++)
        flowtab_update(ft, &q, 0, 3.5, 1, FLOW_SRC_PCAP);
    double slow = 1e6;
    flowtab_close_interval(ft, 4.0, 1.0, &slow, 1, share);
    assert_true(get(ft, &q)->fat);
    flowtab_free(ft);
}

static void test_cnp_attribution(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(64, 0);
    /* Host 1 receives B's data and sends CNPs to host 2, naming 2's QP 0x99. */
    struct decode_pkt cnp = mk_roce(1, 2, DECODE_BTH_CNP, 0x99, 74);
    cnp.sport = 0;

    /* No throttled flow yet: the count stays on the CNP's own entry. */
    assert_int_equal(flowtab_update(ft, &cnp, 0, 1, 1, 0), 0);
    assert_int_equal(get(ft, &cnp)->cnps, 1);
    assert_int_equal(get(ft, &cnp)->pkts, 1);

    /* A flow in the CNP's own direction is not what it throttles. */
    struct decode_pkt same = mk_roce(1, 2, 0x0a, 0x99, 1000);
    flowtab_update(ft, &same, 0, 1, 1, 0);
    struct decode_pkt x = mk_roce(2, 1, 0x0a, 0x45, 4000); /* 2 -> 1, QP 0x45 */
    flowtab_update(ft, &x, 0, 2, 1, 0);
    /* Same pair behind another VLAN: a different path, not charged. */
    struct decode_pkt xv = x;
    xv.nvlan = 1;
    xv.vlan[0] = 7;
    for (int i = 0; i < 5; i++)
        flowtab_update(ft, &xv, 0, 2, 1, 0);
    assert_int_equal(flowtab_update(ft, &cnp, 0, 3, 1, 0), 0);
    assert_int_equal(get(ft, &x)->cnps, 1);
    assert_int_equal(get(ft, &x)->ivl_cnps, 1);
    assert_int_equal(get(ft, &xv)->cnps, 0);
    assert_int_equal(get(ft, &same)->cnps, 0);
    assert_int_equal(get(ft, &cnp)->cnps, 1);
    assert_int_equal(get(ft, &cnp)->pkts, 2);

    /* Two QPs 2 -> 1: the busier one in this interval takes it. */
    struct decode_pkt z = mk_roce(2, 1, 0x0a, 0x48, 4000);
    flowtab_update(ft, &z, 0, 4, 1, 0);
    flowtab_update(ft, &z, 0, 4, 1, 0);
    flowtab_update(ft, &cnp, 0, 5, 1, 0);
    assert_int_equal(get(ft, &z)->cnps, 1);
    assert_int_equal(get(ft, &x)->cnps, 1);
    /* A new interval: x is now the busier one. */
    double link = 1e9;
    flowtab_close_interval(ft, 6, 1, &link, 1, 0.1);
    flowtab_update(ft, &x, 0, 6.5, 1, 0);
    flowtab_update(ft, &cnp, 0, 6.6, 2, 0); /* sampled 1:2 */
    assert_int_equal(get(ft, &x)->cnps, 3);
    assert_int_equal(get(ft, &z)->cnps, 1);
    flowtab_free(ft);

    /* Removal unlinks a flow from the pair chain: after expiry the CNP falls
     * back to its own entry instead of touching a freed slot. */
    ft = flowtab_new(4, 1.0);
    flowtab_update(ft, &x, 0, 0, 1, 0);
    flowtab_close_interval(ft, 5, 1, &link, 1, 0.1);
    assert_int_equal(flowtab_count(ft), 0);
    flowtab_update(ft, &cnp, 0, 6, 1, 0);
    assert_int_equal(get(ft, &cnp)->cnps, 1);
    flowtab_free(ft);
}

/* A mixed sequence (TCP/UDP mice over v4 and v6, VLANs, RoCE QPs with CE
 * and CNPs, out-of-order times, non-IP packets, sampled packets) through a
 * table small enough to evict, applied once with flowtab_update() and once
 * through a batch flushed at odd points: the tables must be identical, slot
 * by slot, and so must their counters. */
static void test_batch_equals_single(void **state)
{
    (void)state;
    struct flowtab *one = flowtab_new(48, 0.5), *bat = flowtab_new(48, 0.5);
    static struct flowtab_batch b; /* static: zeroed, and large for the stack */
    uint64_t x = 88172645463325252ULL;
    double link = 1e6;
    int rone = 0, rbat = 0;
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        struct decode_pkt p;
        uint32_t k = (uint32_t)(x % 100);
        if (k < 50) {
            p = mk_roce((uint8_t)(1 + x % 4), (uint8_t)(5 + x % 4), 0x0a, (uint32_t)(0x40 + (x >> 8) % 3),
                        4154);
            p.ecn = (x >> 12) % 50 == 0 ? 3 : 2;
        } else if (k < 55) {
            p = mk_roce((uint8_t)(5 + x % 4), (uint8_t)(1 + x % 4), DECODE_BTH_CNP, 0x99, 74);
        } else {
            p = mk((uint8_t)(x >> 16), (uint8_t)(x >> 24), (uint16_t)(x >> 32) % 300, 443,
                   (uint32_t)(64 + (x >> 40) % 1450));
            if ((x >> 20) % 10 == 0)
                p.af = 6;
            if ((x >> 21) % 10 == 0) {
                p.nvlan = 1;
                p.vlan[0] = (uint16_t)(100 + (x >> 30) % 4);
            }
            if ((x >> 23) % 5 == 0)
                p.proto = 17;
            p.ecn = (uint8_t)((x >> 50) & 3);
            p.dscp = (uint8_t)((x >> 52) & 63);
        }
        if (k == 99)
            p.af = 0; /* not IP: refused by both */
        double ts = i * 0.001 - ((x >> 60) & 1) * 0.0005;
        uint32_t scale = (x >> 58) % 4 == 0 ? 10 : 1;
        uint16_t ifidx = (uint16_t)(((x >> 56) & 1) | ((x >> 57) & 1 ? FLOWTAB_IN : 0));
        rone += flowtab_update(one, &p, ifidx, ts, scale, FLOW_SRC_PCAP) == -EINVAL;
        rbat += flowtab_batch_add(bat, &b, &p, ifidx, ts, scale, FLOW_SRC_PCAP) == -EINVAL;
        if ((x >> 44) % 37 == 0)
            flowtab_batch_flush(bat, &b); /* partial batches too */
        if (i % 1000 == 999) { /* intervals: fat flows, expiry */
            flowtab_batch_flush(bat, &b);
            flowtab_close_interval(one, ts, 1.0, &link, 1, 0.1);
            flowtab_close_interval(bat, ts, 1.0, &link, 1, 0.1);
        }
    }
    flowtab_batch_flush(bat, &b);
    assert_int_equal(b.n, 0);
    assert_int_equal(rone, rbat);
    assert_true(rone > 0);

    struct flowtab_stats s1, s2;
    flowtab_get_stats(one, &s1);
    flowtab_get_stats(bat, &s2);
    assert_memory_equal(&s1, &s2, sizeof(s1));
    assert_true(s1.evicted > 0);
    assert_int_equal(flowtab_count(one), flowtab_count(bat));
    uint32_t c1 = 0, c2 = 0, n = 0;
    struct flow *f1, *f2;
    uint64_t cnps = 0;
    while ((f1 = flowtab_next(one, &c1))) {
        f2 = flowtab_next(bat, &c2);
        assert_non_null(f2);
        assert_memory_equal(f1, f2, sizeof(*f1));
        assert_ptr_equal(flowtab_lookup(bat, &f1->key), f2);
        cnps += f1->cnps;
        n++;
    }
    assert_null(flowtab_next(bat, &c2));
    assert_true(n > 10);
    assert_true(cnps > 0); /* CNPs were attributed */
    flowtab_free(one);
    flowtab_free(bat);
}

/* One TCP segment of flow 10.0.0.1:1000 -> 10.0.0.2:80 with seq and len
 * payload bytes; returns the flow's retransmissions this interval. */
static uint32_t seg(struct flowtab *ft, uint32_t seq, uint32_t len, uint8_t source)
{
    struct decode_pkt p = mk(1, 2, 1000, 80, 52 + len);
    p.tcp_seq = seq;
    p.seg_len = len;
    assert_int_equal(flowtab_update(ft, &p, 0, 1.0, source == FLOW_SRC_SFLOW ? 10 : 1, source), 0);
    return get(ft, &p)->ivl_retx;
}

/* Retransmissions: data whose end is at or before the highest end seen,
 * across the 32-bit wrap; zero-length segments never count; new data
 * after a gap or overlapping the end is no retransmission; per interval. */
static void test_tcp_retx(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(16, 0);
    assert_int_equal(seg(ft, 0xffffff00u, 100, FLOW_SRC_PCAP), 0);  /* end 0xffffff64 */
    assert_int_equal(seg(ft, 0xffffff64u, 200, FLOW_SRC_PCAP), 0);  /* end 0x2c: wrapped */
    assert_int_equal(seg(ft, 0xffffff00u, 100, FLOW_SRC_PCAP), 1);  /* the first again */
    assert_int_equal(seg(ft, 0xffffff64u, 200, FLOW_SRC_PCAP), 2);  /* ends exactly at the highest */
    assert_int_equal(seg(ft, 0x2c, 0, FLOW_SRC_PCAP), 2);           /* a pure ACK */
    assert_int_equal(seg(ft, 0x10, 0, FLOW_SRC_PCAP), 2);           /* an old pure ACK */
    assert_int_equal(seg(ft, 0x1000, 100, FLOW_SRC_PCAP), 2);       /* new data after a gap */
    assert_int_equal(seg(ft, 0x1000 + 50, 100, FLOW_SRC_PCAP), 2);  /* overlaps the end: new data */
    assert_int_equal(seg(ft, 0x2c, 100, FLOW_SRC_PCAP), 3);         /* below the highest: the gap resent */
    assert_int_equal(seg(ft, 0x1096 - 1, 1, FLOW_SRC_PCAP), 3);     /* a keep-alive: the last byte again */
    assert_int_equal(seg(ft, 0x1096 - 2, 1, FLOW_SRC_PCAP), 4);     /* the byte before it: a retransmission */
    assert_int_equal(seg(ft, 0x1096, 1, FLOW_SRC_PCAP), 4);
    /* Sampled packets are not judged (a 1-in-N sample is no sequence). */
    assert_int_equal(seg(ft, 0x10, 100, FLOW_SRC_SFLOW), 4);
    /* An interval resets the count, not the sequence state. */
    flowtab_close_interval(ft, 2.0, 1.0, NULL, 0, 0);
    assert_int_equal(seg(ft, 0x1000, 100, FLOW_SRC_PCAP), 1);
    /* Just under half the sequence space ahead is still ahead (RFC 1982). */
    assert_int_equal(seg(ft, 0x1097 + 0x7ffffffeu, 1, FLOW_SRC_PCAP), 1);
    /* A new connection on the same 5-tuple, its sequence behind the old
     * one's: the SYN starts afresh, its data is no retransmission. */
    struct decode_pkt syn = mk(1, 2, 1000, 80, 52);
    syn.tcp_seq = 0x80000000u; /* 0x1096 behind the highest end, 0x80001096 */
    syn.tcp_syn = 1;
    assert_int_equal(flowtab_update(ft, &syn, 0, 1.0, 1, FLOW_SRC_PCAP), 0);
    assert_int_equal(seg(ft, 0x80000001u, 1000, FLOW_SRC_PCAP), 1);
    assert_int_equal(seg(ft, 0x80000001u + 1000, 1000, FLOW_SRC_PCAP), 1);
    assert_int_equal(seg(ft, 0x80000001u, 1000, FLOW_SRC_PCAP), 2);
    flowtab_free(ft);
}

/* Tail resends: a retransmission ending exactly at the highest end seen
 * resends the last segment sent (what a tail loss probe sends), and counts
 * in ivl_tail as well as ivl_retx; one below it is a retransmission only;
 * a keep-alive is neither; the interval resets it. */
static void test_tcp_tail_resends(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(16, 0);
    struct decode_pkt p = mk(1, 2, 1000, 80, 52);
    assert_int_equal(seg(ft, 0, 1448, FLOW_SRC_PCAP), 0);
    assert_int_equal(seg(ft, 1448, 2896, FLOW_SRC_PCAP), 0);        /* a super-packet, end 4344 */
    assert_int_equal(seg(ft, 2896, 1448, FLOW_SRC_PCAP), 1);        /* its last MSS again: a tail probe */
    assert_int_equal(get(ft, &p)->ivl_tail, 1);
    assert_int_equal(seg(ft, 0, 1448, FLOW_SRC_PCAP), 2);           /* below the highest: a resend */
    assert_int_equal(get(ft, &p)->ivl_tail, 1);
    assert_int_equal(seg(ft, 4343, 1, FLOW_SRC_PCAP), 2);           /* a keep-alive: neither */
    assert_int_equal(get(ft, &p)->ivl_tail, 1);
    assert_int_equal(seg(ft, 4344, 1448, FLOW_SRC_PCAP), 2);        /* new data: the tail moves on */
    assert_int_equal(seg(ft, 2896, 1448, FLOW_SRC_PCAP), 3);        /* the old tail is a resend now */
    assert_int_equal(get(ft, &p)->ivl_tail, 1);
    assert_int_equal(seg(ft, 4344, 1448, FLOW_SRC_PCAP), 4);
    assert_int_equal(get(ft, &p)->ivl_tail, 2);
    flowtab_close_interval(ft, 2.0, 1.0, NULL, 0, 0);
    assert_int_equal(get(ft, &p)->ivl_tail, 0);
    assert_int_equal(seg(ft, 4344, 1448, FLOW_SRC_PCAP), 1);
    assert_int_equal(get(ft, &p)->ivl_tail, 1);
    flowtab_free(ft);
}

/* The arrival view of flow 10.0.0.1:1000 -> 10.0.0.2:80 (captured inbound
 * on interface 1): one segment; returns its holes this interval. */
static uint32_t hole(struct flowtab *ft, uint32_t seq, uint32_t len, uint8_t syn)
{
    struct decode_pkt p = mk(1, 2, 1000, 80, 52 + len);
    p.tcp_seq = seq;
    p.seg_len = len;
    p.tcp_syn = syn;
    assert_int_equal(flowtab_update(ft, &p, 1 | FLOWTAB_IN, 1.0, 1, FLOW_SRC_PCAP), 0);
    struct flow_key k;
    flowtab_key(&p, &k);
    k.in = 1;
    struct flow *f = flowtab_lookup(ft, &k);
    assert_non_null(f);
    assert_int_equal(f->ifidx, 1);
    return f->ivl_retx;
}

/* Holes at an arrival: a segment starting beyond the highest end seen
 * (RFC 1982, across the wrap); the first packet only sets the mark; in
 * order, a retransmission filling a hole, and a pure ACK are none; a SYN
 * resets the mark; an interval resets the count. The arrival view is a
 * record of its own: the leaving view's bytes and retransmissions are
 * not touched, so a forwarded packet seen twice is counted once in each. */
static void test_tcp_holes(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(16, 0);
    assert_int_equal(hole(ft, 0x5000, 100, 0), 0);                  /* first: far from 0, no hole */
    assert_int_equal(hole(ft, 0x5064, 100, 0), 0);                  /* in order */
    assert_int_equal(hole(ft, 0x5064 + 200, 100, 0), 1);            /* 100 bytes missing: a hole */
    assert_int_equal(hole(ft, 0x5064 + 100, 100, 0), 1);            /* the retransmission fills it */
    assert_int_equal(hole(ft, 0x5064 + 300, 0, 0), 1);              /* a pure ACK */
    assert_int_equal(hole(ft, 0x5064 + 300, 100, 0), 1);            /* in order again */
    assert_int_equal(hole(ft, 0x5064 + 350, 100, 0), 1);            /* overlaps the end: no hole */
    /* Across the wrap. */
    assert_int_equal(hole(ft, 0xffffff00u, 100, 1), 1);             /* SYN: a new sequence */
    assert_int_equal(hole(ft, 0xffffff00u, 100, 0), 1);             /* its first data sets the mark */
    assert_int_equal(hole(ft, 0xffffff64u, 0x100, 0), 1);           /* ends at 0x64, wrapped */
    assert_int_equal(hole(ft, 0xc8, 100, 0), 2);                    /* 0x64 bytes missing past the wrap */
    assert_int_equal(hole(ft, 0x10, 10, 0), 2);                     /* behind: a resend, no hole */
    flowtab_close_interval(ft, 2.0, 1.0, NULL, 0, 0);
    assert_int_equal(hole(ft, 0x12c, 100, 0), 0);                   /* the count is per interval */
    assert_int_equal(hole(ft, 0x12c + 1000, 100, 0), 1);            /* the mark was kept */
    /* The leaving view of the same flow is apart: no holes, no doubling. */
    assert_int_equal(seg(ft, 0x12c, 100, FLOW_SRC_PCAP), 0);
    assert_int_equal(seg(ft, 0x12c + 1000, 100, FLOW_SRC_PCAP), 0);   /* a gap is no retransmission */
    struct decode_pkt p = mk(1, 2, 1000, 80, 152);
    struct flow *out = get(ft, &p);
    assert_int_equal(out->key.in, 0);
    assert_int_equal(out->pkts, 2);
    assert_int_equal(out->ifidx, 0);
    assert_int_equal(flowtab_count(ft), 2);
    /* The closed interval's holes stay readable for the report. */
    flowtab_close_interval(ft, 3.0, 1.0, NULL, 0, 0);
    struct flow_key k = out->key;
    k.in = 1;
    assert_int_equal(flowtab_lookup(ft, &k)->closed_retx, 1);
    flowtab_free(ft);
}

/* RoCE at an arrival: a PSN ahead of the expected one is a hole, a resend
 * behind it (go-back-N) is none and does not move the mark back. */
static void test_psn_holes(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(16, 0);
    const uint32_t psn[] = {0xfffffe, 0xffffff, 0, 2, 3, 2, 3, 4, 7, 8};
    const uint32_t want[] = {0, 0, 0, 1, 1, 1, 1, 1, 2, 2};
    struct flow_key k;
    for (size_t i = 0; i < sizeof(psn) / sizeof(psn[0]); i++) {
        struct decode_pkt p = mk_roce(1, 2, 0x0a, 0x40, 1100);
        p.psn = psn[i];
        assert_int_equal(flowtab_update(ft, &p, 0 | FLOWTAB_IN, 1.0, 1, FLOW_SRC_PCAP), 0);
        flowtab_key(&p, &k);
        k.in = 1;
        uint32_t got = flowtab_lookup(ft, &k)->ivl_retx;
        if (got != want[i])
            fail_msg("psn %zu (0x%x): %u holes, want %u", i, psn[i], got, want[i]);
    }
    flowtab_free(ft);
}

/* One RoCE packet of QP dqp from host a to b; returns its flow. */
static struct flow *roce(struct flowtab *ft, uint8_t a, uint8_t b, uint8_t opcode, uint32_t dqp, uint32_t psn,
                         uint8_t nak)
{
    struct decode_pkt p = mk_roce(a, b, opcode, dqp, 1100);
    p.psn = psn;
    p.nak = nak;
    assert_int_equal(flowtab_update(ft, &p, 0, 1.0, 1, FLOW_SRC_PCAP), 0);
    return get(ft, &p);
}

/* PSNs: the next is the last + 1 modulo 2^24; a gap or a repeat counts once
 * per packet off the sequence; Acknowledges and UD carry no sequence of
 * their flow, a Read Request's successor is not judged; NAKs count on the
 * flow that carries them. */
static void test_psn_and_naks(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(16, 0);
    const uint32_t seq[] = {0xfffffe, 0xffffff, 0, 1, 3, 4, 2, 3, 4, 5};
    const uint32_t want[] = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2};
    for (size_t i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
        uint32_t got = roce(ft, 1, 2, 0x0a, 0x40, seq[i], 0)->ivl_retx;
        if (got != want[i])
            fail_msg("psn %zu (0x%x): %u, want %u", i, seq[i], got, want[i]);
    }
    struct flow *f = roce(ft, 1, 2, 0x0a, 0x40, 6, 0);
    assert_int_equal(f->ivl_retx, 2);
    assert_int_equal(f->ivl_naks, 0);
    /* A Read Request at 7 for, say, 10 packets: the next request is at 17. */
    assert_int_equal(roce(ft, 1, 2, DECODE_BTH_READ_REQ, 0x40, 7, 0)->ivl_retx, 2);
    assert_int_equal(roce(ft, 1, 2, 0x0a, 0x40, 17, 0)->ivl_retx, 2);
    assert_int_equal(roce(ft, 1, 2, 0x0a, 0x40, 19, 0)->ivl_retx, 3);
    /* The responder's ACKs (coalesced PSNs) and a NAK, on the reverse flow. */
    roce(ft, 2, 1, DECODE_BTH_ACK, 0x50, 3, 0);
    roce(ft, 2, 1, DECODE_BTH_ACK, 0x50, 9, 0);
    f = roce(ft, 2, 1, DECODE_BTH_ACK, 0x50, 2, 1);
    assert_int_equal(f->ivl_retx, 0);
    assert_int_equal(f->ivl_naks, 1);
    /* UD (opcode class 011) has no per-flow sequence here. */
    roce(ft, 3, 2, 0x64, 0x60, 5, 0);
    f = roce(ft, 3, 2, 0x64, 0x60, 50, 0);
    assert_int_equal(f->ivl_retx, 0);
    flowtab_close_interval(ft, 2.0, 1.0, NULL, 0, 0);
    assert_int_equal(roce(ft, 2, 1, DECODE_BTH_ACK, 0x50, 9, 0)->ivl_naks, 0);
    assert_int_equal(roce(ft, 1, 2, 0x0a, 0x40, 20, 0)->ivl_retx, 0);
    flowtab_free(ft);
}

/* The loss counts of the open interval over the whole table. */
static void loss_sum(struct flowtab *ft, uint64_t *retx, uint64_t *naks)
{
    uint32_t c = 0;
    struct flow *f;
    while ((f = flowtab_next(ft, &c))) {
        *retx += f->ivl_retx;
        *naks += f->ivl_naks;
    }
}

/* flowtab_batch_add_fast() on decode_fast_eth()'s view of a packet has the
 * effect of flowtab_update() on decode_frame()'s (keys built the same way). */
static void test_batch_fast_equals_single(void **state)
{
    (void)state;
    struct flowtab *one = flowtab_new(48, 0.5), *bat = flowtab_new(48, 0.5);
    static struct flowtab_batch b;
    uint64_t x = 0x2545f4914f6cdd1dULL;
    double link = 1e6;
    uint64_t retx1 = 0, naks1 = 0, retx2 = 0, naks2 = 0;
    for (int i = 0; i < 5000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        struct decode_pkt p;
        uint32_t k = (uint32_t)(x % 100);
        if (k < 50)
            p = mk_roce((uint8_t)(1 + x % 4), (uint8_t)(5 + x % 4), 0x0a,
                        (uint32_t)(0x40 + (x >> 8) % 3), 4154);
        else if (k < 55)
            p = mk_roce((uint8_t)(5 + x % 4), (uint8_t)(1 + x % 4),
                        (x >> 46) % 2 ? DECODE_BTH_CNP : DECODE_BTH_ACK, 0x99,
                        (x >> 46) % 2 ? 74 : 4154); /* heavy enough to escape eviction */
        else
            p = mk((uint8_t)(x >> 16), (uint8_t)(x >> 24), (uint16_t)(x >> 32) % 300, 443,
                   (uint32_t)(64 + (x >> 40) % 1450));
        if (!p.roce && (x >> 23) % 5 == 0)
            p.proto = 17;
        if ((x >> 21) % 10 == 0) {
            p.nvlan = 1;
            p.vlan[0] = (uint16_t)((x >> 30) % 4); /* 0 too: a priority tag */
        }
        p.ecn = (uint8_t)((x >> 50) & 3);
        p.dscp = (uint8_t)((x >> 52) & 63);
        /* Sequences that mostly advance, sometimes repeat or jump. */
        if (p.roce) {
            p.psn = (uint32_t)(i + (x >> 45) % 3) & 0xffffff;
            p.nak = p.bth_opcode == DECODE_BTH_ACK && (x >> 47) % 2;
        } else if (p.proto == 6) {
            p.tcp_seq = (uint32_t)(i * 1000 - (x >> 45) % 3 * 1000);
            p.seg_len = (x >> 47) % 4 ? 1000 : 0;
            p.tcp_syn = (x >> 49) % 50 == 0;
        }
        struct decode_fast f = {.vlan = p.nvlan ? p.vlan[0] : 0, .sport = p.sport,
                                .dport = p.dport, .proto = p.proto, .dscp = p.dscp,
                                .ecn = p.ecn, .roce = p.roce, .bth_opcode = p.bth_opcode,
                                .dqp = p.roce ? p.dqp : 0, .psn = p.roce ? p.psn : 0,
                                .nak = p.nak, .tcp_seq = p.tcp_seq, .seg_len = p.seg_len,
                                .tcp_syn = p.tcp_syn};
        memcpy(f.src, p.src, 4);
        memcpy(f.dst, p.dst, 4);
        double ts = i * 0.001 - ((x >> 60) & 1) * 0.0005;
        uint16_t ifidx = (uint16_t)(((x >> 56) & 1) | ((x >> 57) & 1 ? FLOWTAB_IN : 0));
        flowtab_update(one, &p, ifidx, ts, 1, FLOW_SRC_PCAP);
        flowtab_batch_add_fast(bat, &b, &f, p.wire_len, ifidx, ts);
        if ((x >> 44) % 37 == 0)
            flowtab_batch_flush(bat, &b);
        if (i % 1000 == 500) {
            flowtab_batch_flush(bat, &b);
            loss_sum(one, &retx1, &naks1);
            loss_sum(bat, &retx2, &naks2);
            flowtab_close_interval(one, ts, 1.0, &link, 1, 0.1);
            flowtab_close_interval(bat, ts, 1.0, &link, 1, 0.1);
        }
    }
    flowtab_batch_flush(bat, &b);
    struct flowtab_stats s1, s2;
    flowtab_get_stats(one, &s1);
    flowtab_get_stats(bat, &s2);
    assert_memory_equal(&s1, &s2, sizeof(s1));
    assert_true(s1.evicted > 0);
    assert_int_equal(flowtab_count(one), flowtab_count(bat));
    uint32_t c1 = 0, c2 = 0, n = 0;
    struct flow *f1, *f2;
    while ((f1 = flowtab_next(one, &c1))) {
        f2 = flowtab_next(bat, &c2);
        assert_non_null(f2);
        assert_memory_equal(f1, f2, sizeof(*f1));
        n++;
    }
    assert_null(flowtab_next(bat, &c2));
    assert_true(n > 10);
    /* The loss tracking ran, alike on both sides. */
    assert_true(retx1 > 0 && naks1 > 0);
    assert_true(retx1 == retx2 && naks1 == naks2);
    flowtab_free(one);
    flowtab_free(bat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insert_lookup),
        cmocka_unit_test(test_tcp_retx),
        cmocka_unit_test(test_tcp_tail_resends),
        cmocka_unit_test(test_psn_and_naks),
        cmocka_unit_test(test_tcp_holes),
        cmocka_unit_test(test_psn_holes),
        cmocka_unit_test(test_vlan_and_qp_separation),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_eviction_when_full),
        cmocka_unit_test(test_fat_junk_does_not_keep_fat_out),
        cmocka_unit_test(test_junk_churn_does_not_push_fat_out),
        cmocka_unit_test(test_index_churn),
        cmocka_unit_test(test_rate_ewma),
        cmocka_unit_test(test_first_interval_span),
        cmocka_unit_test(test_rising),
        cmocka_unit_test(test_fat_hysteresis),
        cmocka_unit_test(test_sampled_min_samples),
        cmocka_unit_test(test_cnp_attribution),
        cmocka_unit_test(test_batch_equals_single),
        cmocka_unit_test(test_batch_fast_equals_single),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
