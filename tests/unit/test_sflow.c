/* Unit tests for probes/sflow: crafted datagrams of every decoded sample and
 * record type, truncation at every offset, lying lengths, sequence loss, the
 * per-sample bounds and counter-jump rule, a refused agent's datagram. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "probes/sflow.h"
#include "tests/lib/sflow_build.h"

static const uint8_t frame[] = { /* Ethernet + IPv4 + UDP to 4791, 50 bytes shown */
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00,
    0x45, 0x02, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 2, 1,
    0xc0, 0x00, 0x12, 0xb7, 0x05, 0xc8, 0, 0, 0x04, 0, 0, 0, 0, 0, 0, 0x45};

/* Agent 192.0.2.1; returns the offset of nsamples. */
static size_t put_header(struct sfb *b, uint32_t seq, uint32_t nsamples)
{
    return sfb_header(b, 0xc0000201, seq, 12345, nsamples);
}

/* Source 7, 1-in-1000, pool 50000, 3 drops, in 29001, out 17, the frame
 * above (1518 bytes with a 4-byte FCS stripped), an extended switch record. */
static void put_flow_sample(struct sfb *b, int expanded, uint32_t seq)
{
    struct sfb_flow f = {.expanded = expanded, .seq = seq, .source_index = 7, .rate = 1000,
                         .pool = 50000, .drops = 3, .input = 29001, .output = 17, .header_proto = 1,
                         .frame_len = 1518, .stripped = 4, .header = frame,
                         .header_len = sizeof(frame), .extended_switch = 1};
    sfb_flow_sample(b, &f);
}

static void put_counter_sample(struct sfb *b, int expanded, uint32_t seq, uint32_t ifindex)
{
    struct sfb_counters c = {.expanded = expanded, .seq = seq, .ifindex = ifindex, .status = 3,
                             .speed = 100000000000ull, .in_octets = 1000000, .out_octets = 2000000};
    sfb_counter_sample(b, &c);
}

struct seen {
    int flows, counters;
    struct sflow_flow_sample f;
    struct sflow_if_counters c;
};

static void on_flow(void *ctx, const struct sflow_datagram *d, const struct sflow_flow_sample *s)
{
    struct seen *x = ctx;
    (void)d;
    x->flows++;
    x->f = *s;
}
static void on_counters(void *ctx, const struct sflow_datagram *d, const struct sflow_if_counters *c)
{
    struct seen *x = ctx;
    (void)d;
    x->counters++;
    x->c = *c;
}

static struct sfb full;
static void build_full(void)
{
    size_t ns = put_header(&full, 77, 0);
    put_flow_sample(&full, 0, 1);
    put_flow_sample(&full, 1, 2);
    put_counter_sample(&full, 0, 1, 5);
    put_counter_sample(&full, 1, 2, 6);
    sfb_put32(&full, (1u << 12) | 1); /* enterprise 1: skipped */
    sfb_put32(&full, 4);
    sfb_put32(&full, 0);
    sfb_patch32(&full, ns, 5);
}

static void test_all_types(void **state)
{
    (void)state;
    build_full();
    struct seen x = {0};
    struct sflow_handler h = {NULL, on_flow, on_counters, &x};
    struct sflow_stats st = {0};
    assert_int_equal(sflow_parse(full.b, full.n, &h, &st), 0);
    assert_int_equal(x.flows, 2);
    assert_int_equal(x.counters, 2);
    assert_int_equal(st.flow_samples, 2);
    assert_int_equal(st.counter_samples, 2);
    assert_int_equal(st.skipped_samples, 1);
    assert_int_equal(st.skipped_records, 2);
    assert_int_equal(x.f.rate, 1000);
    assert_int_equal(x.f.pool, 50000);
    assert_int_equal(x.f.input, 29001);
    assert_int_equal(x.f.output, 17);
    assert_int_equal(x.f.frame_len, 1518);
    assert_int_equal(x.f.stripped, 4);
    assert_int_equal(x.f.header_len, sizeof(frame));
    assert_memory_equal(x.f.header, frame, sizeof(frame));
    assert_int_equal(x.c.ifindex, 6);
    assert_int_equal(x.c.speed, 100000000000ull);
    assert_int_equal(x.c.status, 3);
    assert_int_equal(x.c.in_octets, 1000000);
    assert_int_equal(x.c.out_octets, 2000000);
    assert_int_equal(x.c.in_discards, 5);
    assert_int_equal(x.c.out_errors, 8);
}

/* Every proper prefix of a valid datagram is malformed, and nothing is
 * delivered for it. */
static void test_truncated_every_offset(void **state)
{
    (void)state;
    build_full();
    for (size_t cut = 0; cut < full.n; cut++) {
        struct seen x = {0};
        struct sflow_handler h = {NULL, on_flow, on_counters, &x};
        struct sflow_stats st = {0};
        uint8_t copy[2048];
        memcpy(copy, full.b, cut);
        int r = sflow_parse(copy, cut, &h, &st);
        assert_int_equal(r, -EBADMSG);
        assert_int_equal(x.flows + x.counters, 0);
        assert_int_equal(st.bad_datagrams, 1);
    }
}

static void test_lying_lengths(void **state)
{
    (void)state;
    struct sflow_stats st = {0};
    struct sfb b;
    /* nsamples far beyond the bound */
    put_header(&b, 1, 100000);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* a sample whose length runs past the datagram */
    size_t ns = put_header(&b, 1, 1);
    put_flow_sample(&b, 0, 1);
    sfb_patch32(&b, ns + 8, 0x7ffffff0);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* a header record claiming more header bytes than the record holds */
    put_header(&b, 1, 1);
    size_t s = b.n;
    put_flow_sample(&b, 0, 1);
    sfb_patch32(&b, s + 8 + 4 * 8 + 4 + 4 + 12, 0xfffffff0);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* unknown agent address type */
    put_header(&b, 1, 0);
    sfb_patch32(&b, 4, 9);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* version 4 */
    put_header(&b, 1, 0);
    sfb_patch32(&b, 0, 4);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EPROTONOSUPPORT);
    assert_int_equal(st.other_versions, 1);
    /* a counters record too short for generic counters */
    put_header(&b, 1, 1);
    s = b.n;
    put_counter_sample(&b, 0, 1, 5);
    sfb_patch32(&b, s + 8 + 12 + 4, 40);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    assert_int_equal(st.datagrams, 0);
}

/* Out-of-range fields are the sample's fault, not the datagram's: the
 * parser delivers every sample, the bounds (one place: sflow.h) say which
 * to reject, and the other samples of the datagram stand. */
static void test_sample_bounds(void **state)
{
    (void)state;
    struct sfb b;
    size_t ns = put_header(&b, 1, 0);
    size_t s0 = b.n;
    put_flow_sample(&b, 0, 1);
    size_t s1 = b.n;
    put_flow_sample(&b, 0, 2);
    size_t s2 = b.n;
    put_flow_sample(&b, 0, 3);
    put_counter_sample(&b, 0, 1, 5);
    sfb_patch32(&b, ns, 4);
    sfb_patch32(&b, s0 + 8 + 8, 0xffffffffu);          /* sampling rate 2^32-1 */
    sfb_patch32(&b, s1 + 8 + 8, 0);                    /* sampling rate 0 */
    sfb_patch32(&b, s2 + 8 + 4 * 8 + 4 + 4 + 4, 0xffffff00u); /* frame length ~4 GB */
    struct seen x = {0};
    struct sflow_handler h = {NULL, on_flow, on_counters, &x};
    struct sflow_stats st = {0};
    assert_int_equal(sflow_parse(b.b, b.n, &h, &st), 0);
    assert_int_equal(st.flow_samples, 3);
    assert_int_equal(st.counter_samples, 1);
    assert_int_equal(x.counters, 1);
    /* each sample alone */
    struct sflow_flow_sample f = {.rate = 1000, .frame_len = 1518};
    assert_int_equal(sflow_flow_check(&f), SFLOW_OK);
    f.rate = 0xffffffffu;
    assert_int_equal(sflow_flow_check(&f), SFLOW_REJ_RATE);
    f.rate = 0;
    assert_int_equal(sflow_flow_check(&f), SFLOW_REJ_RATE);
    f.rate = SFLOW_MAX_RATE;
    assert_int_equal(sflow_flow_check(&f), SFLOW_OK);
    f.rate = SFLOW_MAX_RATE + 1;
    assert_int_equal(sflow_flow_check(&f), SFLOW_REJ_RATE);
    f.rate = 1;
    f.frame_len = SFLOW_MAX_FRAME;
    assert_int_equal(sflow_flow_check(&f), SFLOW_OK);
    f.frame_len = SFLOW_MAX_FRAME + 1;
    assert_int_equal(sflow_flow_check(&f), SFLOW_REJ_FRAME);
    assert_int_equal(x.f.frame_len, 0xffffff00u); /* the last delivered: as sent */
    assert_int_equal(sflow_flow_check(&x.f), SFLOW_REJ_FRAME);
    struct sflow_if_counters c = {.speed = 400000000000ull};
    assert_int_equal(sflow_counters_check(&c), SFLOW_OK);
    c.speed = 18446744073709551615ull;
    assert_int_equal(sflow_counters_check(&c), SFLOW_REJ_SPEED);
    assert_string_equal(sflow_reject_name(SFLOW_REJ_RATE), "rate");
    assert_string_equal(sflow_reject_name(SFLOW_REJ_FRAME), "frame_len");
    assert_string_equal(sflow_reject_name(SFLOW_REJ_COUNTERS), "counters");
    assert_string_equal(sflow_reject_name(SFLOW_OK), "?");
    assert_string_equal(sflow_reject_name(SFLOW_REJ_N), "?");
}

/* Counter samples: a rate from two samples; a reset (agent clock back or
 * still) gives none; counters backwards or past twice the line rate are a
 * jump, rejected. */
static void test_counter_rates(void **state)
{
    (void)state;
    struct sflow_ctr_base b = {0};
    double tx = -1, rx = -1;
    assert_int_equal(sflow_counter_rates(&b, 10, 0, 0, 1e9, &tx, &rx), -EAGAIN); /* no base */
    b = (struct sflow_ctr_base){true, 10.0, 1000, 2000};
    /* 20 s at 1 Gb/s: 2.5e9 octets out, 1.25e9 in */
    assert_int_equal(sflow_counter_rates(&b, 30, 1000 + 1250000000ull, 2000 + 2500000000ull, 1e9, &tx, &rx), 0);
    assert_true(tx == 1e9 && rx == 5e8);
    assert_int_equal(sflow_counter_rates(&b, 10, 5000, 5000, 1e9, &tx, &rx), -EAGAIN); /* clock still */
    assert_int_equal(sflow_counter_rates(&b, 5, 5000, 5000, 1e9, &tx, &rx), -EAGAIN);  /* restarted */
    assert_int_equal(sflow_counter_rates(&b, 30, 999, 5000, 1e9, &tx, &rx), SFLOW_REJ_COUNTERS);
    assert_int_equal(sflow_counter_rates(&b, 30, 5000, 1999, 1e9, &tx, &rx), SFLOW_REJ_COUNTERS);
    /* 2x line rate is the bound: just under passes, just over is a jump */
    assert_int_equal(sflow_counter_rates(&b, 30, 1000, 2000 + 4999999999ull, 1e9, &tx, &rx), 0);
    assert_int_equal(sflow_counter_rates(&b, 30, 1000, 2000 + 5000000001ull, 1e9, &tx, &rx),
                     SFLOW_REJ_COUNTERS);
    assert_int_equal(sflow_counter_rates(&b, 30, 1000, UINT64_MAX, 1e9, &tx, &rx), SFLOW_REJ_COUNTERS);
}

static int refuse(void *ctx, const struct sflow_datagram *d)
{
    (void)d;
    ++*(int *)ctx;
    return 1;
}

/* A datagram the caller refuses (its agent is unknown) delivers and counts
 * no sample. */
static void test_refused_datagram(void **state)
{
    (void)state;
    build_full();
    int calls = 0;
    struct sflow_handler h = {refuse, NULL, NULL, &calls};
    struct sflow_stats st = {0};
    assert_int_equal(sflow_parse(full.b, full.n, &h, &st), 0);
    assert_int_equal(calls, 1);
    assert_int_equal(st.datagrams, 1);
    assert_int_equal(st.flow_samples + st.counter_samples + st.skipped_samples, 0);
}

static void test_sequence_loss(void **state)
{
    (void)state;
    struct sflow_seq *q = sflow_seq_new();
    assert_non_null(q);
    struct sflow_datagram d = {.agent_af = 4, .agent = {192, 0, 2, 1}};
    uint32_t seqs[] = {10, 11, 14, 15, 2}; /* 2 lost (12, 13), then a restart */
    for (size_t i = 0; i < 5; i++) {
        d.seq = seqs[i];
        sflow_seq_datagram(q, &d);
    }
    sflow_seq_sample(q, &d, 0, 0, 7, 100);
    sflow_seq_sample(q, &d, 0, 0, 7, 105); /* 4 samples lost */
    sflow_seq_sample(q, &d, 0, 0, 8, 1);   /* another source: no loss */
    sflow_seq_sample(q, &d, 1, 0, 7, 50);  /* counters of the same source: separate */
    struct sflow_seq_stats st;
    sflow_seq_get(q, &st);
    assert_int_equal(st.lost_datagrams, 2);
    assert_int_equal(st.resets, 1);
    assert_int_equal(st.lost_samples, 4);
    /* wrap-around is a step of one, not a loss */
    d.seq = 0xffffffffu;
    struct sflow_datagram d2 = d;
    d2.agent[3] = 2;
    sflow_seq_datagram(q, &d2);
    d2.seq = 0;
    sflow_seq_datagram(q, &d2);
    sflow_seq_get(q, &st);
    assert_int_equal(st.lost_datagrams, 2);
    sflow_seq_free(q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_types),
        cmocka_unit_test(test_truncated_every_offset),
        cmocka_unit_test(test_lying_lengths),
        cmocka_unit_test(test_sample_bounds),
        cmocka_unit_test(test_counter_rates),
        cmocka_unit_test(test_refused_datagram),
        cmocka_unit_test(test_sequence_loss),
    };
    return cmocka_run_group_tests_name("sflow", tests, NULL, NULL);
}
