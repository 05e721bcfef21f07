/* Unit tests for probes/sflow: crafted datagrams of every decoded sample and
 * record type, truncation at every offset, lying lengths, sequence loss. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "probes/sflow.h"

struct buf {
    uint8_t b[2048];
    size_t n;
};

static size_t put32(struct buf *b, uint32_t v)
{
    size_t at = b->n;
    b->b[b->n++] = (uint8_t)(v >> 24);
    b->b[b->n++] = (uint8_t)(v >> 16);
    b->b[b->n++] = (uint8_t)(v >> 8);
    b->b[b->n++] = (uint8_t)v;
    return at;
}
static void put64(struct buf *b, uint64_t v) { put32(b, (uint32_t)(v >> 32)); put32(b, (uint32_t)v); }
static void patch32(struct buf *b, size_t at, uint32_t v)
{
    b->b[at] = (uint8_t)(v >> 24); b->b[at + 1] = (uint8_t)(v >> 16);
    b->b[at + 2] = (uint8_t)(v >> 8); b->b[at + 3] = (uint8_t)v;
}

static const uint8_t frame[] = { /* Ethernet + IPv4 + UDP to 4791, 50 bytes shown */
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00,
    0x45, 0x02, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 2, 1,
    0xc0, 0x00, 0x12, 0xb7, 0x05, 0xc8, 0, 0, 0x04, 0, 0, 0, 0, 0, 0, 0x45};

/* version 5 header, IPv4 agent 192.0.2.1, seq, nsamples placeholder. */
static size_t put_header(struct buf *b, uint32_t seq, uint32_t nsamples)
{
    b->n = 0;
    put32(b, 5);
    put32(b, 1);
    put32(b, 0xc0000201);
    put32(b, 0);
    put32(b, seq);
    put32(b, 12345);
    return put32(b, nsamples);
}

static void put_header_record(struct buf *b)
{
    put32(b, 1); /* raw packet header */
    size_t len_at = put32(b, 0);
    size_t start = b->n;
    put32(b, 1);          /* Ethernet */
    put32(b, 1518);       /* frame length */
    put32(b, 4);          /* stripped FCS */
    put32(b, sizeof(frame));
    memcpy(b->b + b->n, frame, sizeof(frame));
    b->n += sizeof(frame);
    while (b->n % 4)
        b->b[b->n++] = 0;
    patch32(b, len_at, (uint32_t)(b->n - start));
}

static void put_flow_sample(struct buf *b, int expanded, uint32_t seq)
{
    put32(b, expanded ? 3 : 1);
    size_t len_at = put32(b, 0);
    size_t start = b->n;
    put32(b, seq);
    if (expanded) {
        put32(b, 0);
        put32(b, 7);
    } else {
        put32(b, 7);
    }
    put32(b, 1000);  /* rate */
    put32(b, 50000); /* pool */
    put32(b, 3);     /* drops */
    if (expanded) {
        put32(b, 0); put32(b, 29001); put32(b, 0); put32(b, 17);
    } else {
        put32(b, 29001); put32(b, 17);
    }
    put32(b, 2); /* records */
    put_header_record(b);
    put32(b, 1001); /* extended switch: skipped by length */
    put32(b, 16);
    put32(b, 10); put32(b, 0); put32(b, 20); put32(b, 0);
    patch32(b, len_at, (uint32_t)(b->n - start));
}

static void put_counter_sample(struct buf *b, int expanded, uint32_t seq, uint32_t ifindex)
{
    put32(b, expanded ? 4 : 2);
    size_t len_at = put32(b, 0);
    size_t start = b->n;
    put32(b, seq);
    if (expanded) {
        put32(b, 0);
        put32(b, ifindex);
    } else {
        put32(b, ifindex);
    }
    put32(b, 1);
    put32(b, 1); /* generic interface counters */
    put32(b, 88);
    put32(b, ifindex); put32(b, 6); put64(b, 100000000000ull); put32(b, 1); put32(b, 3);
    put64(b, 1000000); put32(b, 10); put32(b, 2); put32(b, 1); put32(b, 5); put32(b, 6); put32(b, 0);
    put64(b, 2000000); put32(b, 20); put32(b, 0); put32(b, 0); put32(b, 7); put32(b, 8); put32(b, 0);
    patch32(b, len_at, (uint32_t)(b->n - start));
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

static struct buf full;
static void build_full(void)
{
    size_t ns = put_header(&full, 77, 0);
    put_flow_sample(&full, 0, 1);
    put_flow_sample(&full, 1, 2);
    put_counter_sample(&full, 0, 1, 5);
    put_counter_sample(&full, 1, 2, 6);
    put32(&full, (1u << 12) | 1); /* enterprise 1: skipped */
    put32(&full, 4);
    put32(&full, 0);
    patch32(&full, ns, 5);
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
    struct buf b;
    /* nsamples far beyond the bound */
    put_header(&b, 1, 100000);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* a sample whose length runs past the datagram */
    size_t ns = put_header(&b, 1, 1);
    put_flow_sample(&b, 0, 1);
    patch32(&b, ns + 8, 0x7ffffff0);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* a header record claiming more header bytes than the record holds */
    put_header(&b, 1, 1);
    size_t s = b.n;
    put_flow_sample(&b, 0, 1);
    patch32(&b, s + 8 + 4 * 8 + 4 + 4 + 12, 0xfffffff0);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* sampling rate 0 */
    put_header(&b, 1, 1);
    s = b.n;
    put_flow_sample(&b, 0, 1);
    patch32(&b, s + 8 + 8, 0);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* unknown agent address type */
    put_header(&b, 1, 0);
    patch32(&b, 4, 9);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    /* version 4 */
    put_header(&b, 1, 0);
    patch32(&b, 0, 4);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EPROTONOSUPPORT);
    assert_int_equal(st.other_versions, 1);
    /* a counters record too short for generic counters */
    put_header(&b, 1, 1);
    s = b.n;
    put_counter_sample(&b, 0, 1, 5);
    patch32(&b, s + 8 + 12 + 4, 40);
    assert_int_equal(sflow_parse(b.b, b.n, NULL, &st), -EBADMSG);
    assert_int_equal(st.datagrams, 0);
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
        cmocka_unit_test(test_sequence_loss),
    };
    return cmocka_run_group_tests_name("sflow", tests, NULL, NULL);
}
