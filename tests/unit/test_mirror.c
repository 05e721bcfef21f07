/* Unit tests for probes/mirror, the switch views (issue 12, item 3): which
 * sFlow agents get state (the mapping, an allow-list, or the first few when
 * neither is given), that datagrams from any other agent are counted and
 * cost no memory at all (the heap in use, as AddressSanitizer counts it,
 * does not move under 10,000 forged agents), that a mapped switch's samples
 * all count however many forged ones come between, and that an
 * out-of-range sample or a counter jump is rejected alone, by reason,
 * without touching the rest of its switch's report. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "probes/mirror.h"
#include "probes/mirrormap.h"
#include "tests/lib/sflow_build.h"

#ifdef __SANITIZE_ADDRESS__
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
#include <malloc.h>
static size_t heap_in_use(void) { return mallinfo2().uordblks; }
#endif

#define AGENT1 0xc0000201u /* 192.0.2.1: L1 (ifIndex 5 eth1, 6 eth2) */
#define AGENT2 0xc0000202u /* 192.0.2.2: L2 (ifIndex 5 eth1) */

static const char map_json[] =
    "{\"sflow\": [{\"agent\": \"192.0.2.1\", \"ifindex\": 5, \"node\": \"L1\", \"if\": \"eth1\", \"link_gbps\": 100},"
    "            {\"agent\": \"192.0.2.1\", \"ifindex\": 6, \"node\": \"L1\", \"if\": \"eth2\"},"
    "            {\"agent\": \"192.0.2.2\", \"ifindex\": 5, \"node\": \"L2\", \"if\": \"eth1\"}]}";

/* Ethernet + IPv4 10.0.1.1 -> 10.0.2.1 + UDP sport 0xc0SS to 4791; SS makes
 * distinct flows. */
static void frame_for(uint8_t f[42], uint8_t sport_lo)
{
    static const uint8_t base[42] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00,
        0x45, 0x02, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 2, 1,
        0xc0, 0x00, 0x12, 0xb7, 0x05, 0xc8, 0, 0};
    memcpy(f, base, sizeof(base));
    f[35] = sport_lo;
}

static void add_flow(struct sfb *b, uint32_t seq, uint32_t output, uint32_t rate, uint32_t frame_len,
                     uint8_t flow)
{
    static uint8_t f[42];
    frame_for(f, flow);
    struct sfb_flow s = {.seq = seq, .source_index = output, .rate = rate, .pool = seq * rate,
                         .input = 1, .output = output, .header_proto = 1, .frame_len = frame_len,
                         .stripped = 4, .header = f, .header_len = sizeof(f)};
    sfb_flow_sample(b, &s);
}

/* One datagram of one flow sample (1-in-100 of a 1518-byte frame of flow
 * 1, out ifIndex 5) from agent. */
static int send_one(struct mirror *m, uint32_t agent, uint32_t seq, double now)
{
    struct sfb b;
    size_t ns = sfb_header(&b, agent, seq, 1000 * seq, 1);
    add_flow(&b, seq, 5, 100, 1518, 1);
    sfb_patch32(&b, ns, 1);
    return mirror_sflow(m, b.b, b.n, now);
}

/* What mirror_close emitted. */
struct emitted {
    char node[64];
    bool mapped, partial;
    size_t nflows, nlinks;
    uint64_t pkts[8];
    bool fat[8];
    char link[4][64];
    double tx_bps[4];
    uint64_t carrier[4], errors[4], qdrops[4];
    bool qdrops_known[4], qdisc[4];
    struct report_telemetry tel;
};
struct got {
    int n;
    struct emitted r[32];
};

static void on_emit(void *ctx, const struct report *r, bool mapped)
{
    struct got *g = ctx;
    assert_true(g->n < 32);
    struct emitted *e = &g->r[g->n++];
    snprintf(e->node, sizeof(e->node), "%s", r->probe);
    e->mapped = mapped;
    e->partial = r->partial;
    e->nflows = r->nflows;
    e->nlinks = r->nlinks;
    for (size_t i = 0; i < r->nflows && i < 8; i++)
        e->pkts[i] = r->flows[i].pkts, e->fat[i] = r->flows[i].fat;
    for (size_t i = 0; i < r->nlinks && i < 4; i++) {
        snprintf(e->link[i], sizeof(e->link[i]), "%s", r->links[i].name);
        e->tx_bps[i] = r->links[i].tx_bps;
        e->carrier[i] = r->links[i].carrier_changes;
        e->errors[i] = r->links[i].errors;
        e->qdrops[i] = r->links[i].qdisc_drops;
        e->qdrops_known[i] = r->links[i].has_queue_drops;
        e->qdisc[i] = r->links[i].has_qdisc;
    }
    e->tel = r->stats.tel;
}

static struct mirrormap *load_map(void)
{
    struct mirrormap *map;
    char err[200];
    assert_int_equal(mirrormap_parse(map_json, strlen(map_json), &map, err, sizeof(err)), 0);
    return map;
}

static struct mirror_opts opts(void)
{
    return (struct mirror_opts){.max_flows = 1024, .idle_timeout = 30, .fat_share = 0.1,
                                .default_gbps = 100, .top = 20, .max_unmapped = MIRROR_DEFAULT_UNMAPPED};
}

static void test_unknown_agents_cost_nothing(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    struct mirror *m;
    assert_int_equal(mirror_new(map, &o, &m), 0);
    assert_false(mirror_admits_any(m));
    uint32_t seq = 1;
    for (int i = 0; i < 50; i++, seq++)
        assert_int_equal(send_one(m, AGENT1, seq, 100.0), 0);
    /* The first refusal is logged, and libc's first log line sets up its
     * time zone data once: take it before counting. */
    assert_int_equal(send_one(m, 0x09000001u, 1, 100.0), 0);
    size_t heap0 = heap_in_use();
    for (uint32_t a = 0; a < 10000; a++) {
        /* forged agents 10.0.0.0/18, each with the mapped switch's sample
         * and its own counters, interleaved with the real switch */
        struct sfb b;
        size_t ns = sfb_header(&b, 0x0a000000u + a, 1, 1000, 2);
        add_flow(&b, 1, 5, 1u << 20, 9000, (uint8_t)a);
        struct sfb_counters c = {.seq = 1, .ifindex = 5, .speed = 1, .out_octets = UINT64_MAX};
        sfb_counter_sample(&b, &c);
        sfb_patch32(&b, ns, 2);
        assert_int_equal(mirror_sflow(m, b.b, b.n, 100.5), 0);
        if (a % 200 == 0)
            assert_int_equal(send_one(m, AGENT1, seq++, 100.5), 0);
    }
    size_t heap1 = heap_in_use();
    assert_int_equal(heap1, heap0); /* not one byte for 10,000 forged agents */
    for (int i = 0; i < 50; i++, seq++)
        assert_int_equal(send_one(m, AGENT1, seq, 101.0), 0);
    struct got g = {0};
    assert_int_equal(mirror_close(m, 101.0, 1.0, false, on_emit, &g), 0);
    /* One report: L1. L2 is mapped but sent nothing: not reported. */
    assert_int_equal(g.n, 1);
    /* L2's first datagrams come after the flood: it has its table. */
    for (uint32_t i = 1; i <= 20; i++)
        assert_int_equal(send_one(m, AGENT2, i, 101.5), 0);
    /* A cut interval (the probe's stop): every view's report says partial,
     * as the probe's own does; a whole one, none. */
    struct got g2 = {0};
    assert_int_equal(mirror_close(m, 102.0, 1.0, true, on_emit, &g2), 0);
    assert_int_equal(g2.n, 2);
    assert_false(g.r[0].partial);
    assert_true(g2.r[0].partial && g2.r[1].partial);
    assert_string_equal(g2.r[1].node, "L2");
    assert_int_equal(g2.r[1].pkts[0], 2000);
    assert_string_equal(g.r[0].node, "L1");
    assert_true(g.r[0].mapped);
    assert_int_equal(g.r[0].nlinks, 1); /* eth2 sent nothing: not a link of the report */
    assert_string_equal(g.r[0].link[0], "eth1");
    assert_int_equal(g.r[0].nflows, 1);
    assert_int_equal(g.r[0].pkts[0], (seq - 1) * 100); /* every real sample, 1-in-100 */
    assert_int_equal(g.r[0].tel.sflow_refused, 10001);
    assert_int_equal(g.r[0].tel.sflow_flow_samples, seq - 1);
    assert_int_equal(g.r[0].tel.sflow_counter_samples, 0);
    assert_int_equal(g.r[0].tel.sflow_lost_datagrams, 0);
    assert_int_equal(g.r[0].tel.sflow_lost_samples, 0);
    mirror_free(m);
    mirrormap_free(map);
}

/* A sampled flow never brings the look at mid-interval forward (probe.c):
 * a few samples say too little. This one is fat by its samples (the close
 * says so) and has been seen long enough, and still does not count. */
static void test_sampled_flow_not_rising(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    o.fat_share = 1e-4;   /* 10 Mb/s of eth1's 100 Gb/s; the flow carries about 120 */
    struct mirror *m;
    assert_int_equal(mirror_new(map, &o, &m), 0);
    for (uint32_t seq = 1; seq <= 50; seq++)
        assert_int_equal(send_one(m, AGENT1, seq, 100.0 + 0.01 * seq), 0);
    assert_int_equal(mirror_rising(m, 100.6, 0.6, 0.125), 0);
    struct got g = {0};
    assert_int_equal(mirror_close(m, 101.0, 1.0, false, on_emit, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.r[0].nflows, 1);
    assert_true(g.r[0].fat[0]);
    mirror_free(m);
    mirrormap_free(map);
}

/* An allow-list admits agents the map does not name, first come, into a
 * fixed pool of views; the pool spent or the prefix missed, they are
 * refused. A mapped agent's unmapped port has no view unless its agent is
 * allowed: its samples are unattributed. */
static void test_allow_list(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    struct mirror_prefix allow = {.af = 4, .addr = {10, 1, 0, 0}, .plen = 16};
    o.allow = &allow;
    o.nallow = 1;
    o.max_unmapped = 2;
    struct mirror *m;
    assert_int_equal(mirror_new(map, &o, &m), 0);
    assert_false(mirror_admits_any(m));
    size_t heap0 = heap_in_use();
    for (uint32_t r = 0; r < 3; r++) {
        assert_int_equal(send_one(m, 0x0a010001u, 1 + r, 10.0), 0); /* 10.1.0.1 */
        assert_int_equal(send_one(m, 0x0a010002u, 1 + r, 10.0), 0); /* 10.1.0.2 */
        assert_int_equal(send_one(m, 0x0a010003u, 1 + r, 10.0), 0); /* 10.1.0.3: pool spent */
        assert_int_equal(send_one(m, 0x0a020001u, 1 + r, 10.0), 0); /* 10.2.0.1: not allowed */
    }
    assert_int_equal(heap_in_use(), heap0);
    struct sfb b;
    size_t ns = sfb_header(&b, AGENT1, 1, 1000, 1);
    add_flow(&b, 1, 9, 100, 1518, 1); /* L1's ifIndex 9 is not mapped */
    sfb_patch32(&b, ns, 1);
    assert_int_equal(mirror_sflow(m, b.b, b.n, 10.0), 0);
    struct got g = {0};
    assert_int_equal(mirror_close(m, 11.0, 1.0, false, on_emit, &g), 0);
    assert_int_equal(g.n, 2);
    assert_string_equal(g.r[0].node, "sflow:10.1.0.1");
    assert_string_equal(g.r[1].node, "sflow:10.1.0.2");
    assert_false(g.r[0].mapped || g.r[1].mapped);
    assert_string_equal(g.r[0].link[0], "5"); /* named by ifIndex */
    assert_int_equal(g.r[0].pkts[0], 300);
    assert_int_equal(g.r[0].tel.sflow_refused, 6);
    assert_int_equal(g.r[0].tel.sflow_unattributed, 1);
    mirror_free(m);
    mirrormap_free(map);
}

/* Neither a map nor an allow-list: the first max_unmapped agents to send
 * are shown, any others dropped; still nothing allocated after start. */
static void test_no_map_first_come(void **state)
{
    (void)state;
    struct mirror_opts o = opts();
    o.max_unmapped = 3;
    struct mirror *m;
    assert_int_equal(mirror_new(NULL, &o, &m), 0);
    assert_true(mirror_admits_any(m));
    size_t heap0 = heap_in_use();
    for (uint32_t a = 0; a < 1000; a++)
        assert_int_equal(send_one(m, 0xc6336400u + a, 1, 5.0), 0); /* 198.51.100.0.. */
    assert_int_equal(heap_in_use(), heap0);
    struct got g = {0};
    assert_int_equal(mirror_close(m, 6.0, 1.0, false, on_emit, &g), 0);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.r[2].node, "sflow:198.51.100.2");
    assert_int_equal(g.r[0].tel.sflow_refused, 997);
    mirror_free(m);
    /* and the pool is bounded */
    o.max_unmapped = MIRROR_MAX_VIEWS + 1;
    assert_int_equal(mirror_new(NULL, &o, &m), -E2BIG);
}

/* A datagram holding samples with a sampling rate of 2^32-1, of 0, a frame
 * of ~4 GB, and a counter sample of an absurd ifSpeed, beside a good
 * sample: the bad ones are rejected by reason, the good one counts, and the
 * report carries nothing beyond what a link could. */
static void test_bad_samples_rejected_alone(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    struct mirror *m;
    assert_int_equal(mirror_new(map, &o, &m), 0);
    struct sfb b;
    size_t ns = sfb_header(&b, AGENT1, 1, 1000, 5);
    add_flow(&b, 1, 5, 0xffffffffu, 1518, 1);
    add_flow(&b, 2, 5, 0, 1518, 2);
    add_flow(&b, 3, 5, 100, 0xffffff00u, 3);
    add_flow(&b, 4, 5, 100, 1518, 4);
    struct sfb_counters c = {.seq = 1, .ifindex = 5, .speed = UINT64_MAX, .out_octets = 1};
    sfb_counter_sample(&b, &c);
    sfb_patch32(&b, ns, 5);
    assert_int_equal(mirror_sflow(m, b.b, b.n, 10.0), 0);
    struct got g = {0};
    assert_int_equal(mirror_close(m, 11.0, 1.0, false, on_emit, &g), 0);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.r[0].nflows, 1);
    assert_int_equal(g.r[0].pkts[0], 100);
    assert_true(g.r[0].tx_bps[0] <= 100e9);
    assert_int_equal(g.r[0].tel.sflow_rejected[SFLOW_REJ_RATE], 2);
    assert_int_equal(g.r[0].tel.sflow_rejected[SFLOW_REJ_FRAME], 1);
    assert_int_equal(g.r[0].tel.sflow_rejected[SFLOW_REJ_SPEED], 1);
    assert_int_equal(g.r[0].tel.sflow_lost_samples, 0); /* rejected is not lost */
    mirror_free(m);
    mirrormap_free(map);
}

static void send_counters_d(struct mirror *m, uint32_t seq, uint32_t uptime_ms, uint64_t out, double now,
                            uint32_t status, uint32_t out_discards)
{
    struct sfb b;
    size_t ns = sfb_header(&b, AGENT1, seq, uptime_ms, 1);
    struct sfb_counters c = {.seq = seq, .ifindex = 5, .status = status, .speed = 100000000000ull,
                             .in_octets = out / 2, .out_octets = out, .out_discards = out_discards};
    sfb_counter_sample(&b, &c);
    sfb_patch32(&b, ns, 1);
    assert_int_equal(mirror_sflow(m, b.b, b.n, now), 0);
}

static void send_counters(struct mirror *m, uint32_t seq, uint32_t uptime_ms, uint64_t out, double now)
{
    send_counters_d(m, seq, uptime_ms, out, now, 3, 0);
}

/* A counter jump (octets far past line rate, then "backwards" to the real
 * counter) costs the link two rate updates, never its report: the rate
 * stays the last good one, then resumes. */
static void test_counter_jump(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    struct mirror *m;
    assert_int_equal(mirror_new(map, &o, &m), 0);
    const uint64_t step = 125000000000ull; /* 20 s at 50 Gb/s */
    struct got g = {0};
    send_counters(m, 1, 0, 0, 100);
    send_counters(m, 2, 20000, step, 120);
    assert_int_equal(mirror_close(m, 121, 1, false, on_emit, &g), 0);
    send_counters(m, 3, 40000, step + 1000000000000000ull, 140); /* +1e15 octets in 20 s */
    assert_int_equal(mirror_close(m, 141, 1, false, on_emit, &g), 0);
    send_counters(m, 4, 60000, 3 * step, 160); /* the real counter: below the jump */
    assert_int_equal(mirror_close(m, 161, 1, false, on_emit, &g), 0);
    send_counters(m, 5, 80000, 4 * step, 180);
    assert_int_equal(mirror_close(m, 181, 1, false, on_emit, &g), 0);
    assert_int_equal(g.n, 4);
    for (int i = 0; i < 4; i++)
        assert_true(fabs(g.r[i].tx_bps[0] - 50e9) < 1);
    assert_int_equal(g.r[3].tel.sflow_rejected[SFLOW_REJ_COUNTERS], 2);
    assert_int_equal(g.r[3].tel.sflow_counter_samples, 5);
    mirror_free(m);
    mirrormap_free(map);
}

/* ifOperStatus from counter samples: a status other than the last
 * sample's is a carrier change of the interval (the first sample sets the
 * baseline); errors are ifInErrors + ifOutErrors. ifOutDiscards of the
 * interval are the port's queue drops (qdisc_drops, with no backlog or
 * overlimits: sFlow has none), what tells congestion from a gray failure
 * there (docs/health.md); known from the second sample on. */
static void test_counter_oper_changes(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    struct mirror *m;
    assert_int_equal(mirror_new(map, &o, &m), 0);
    struct got g = {0};
    send_counters_d(m, 1, 0, 0, 100, 3, 100);
    assert_int_equal(mirror_close(m, 101, 1, false, on_emit, &g), 0);
    send_counters_d(m, 2, 20000, 1000, 120, 1, 105);   /* admin up, oper down */
    send_counters_d(m, 3, 40000, 2000, 120.5, 3, 112); /* up again */
    assert_int_equal(mirror_close(m, 121, 1, false, on_emit, &g), 0);
    send_counters_d(m, 4, 60000, 3000, 140, 3, 112);
    assert_int_equal(mirror_close(m, 141, 1, false, on_emit, &g), 0);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.r[0].carrier[0], 0);
    assert_int_equal(g.r[1].carrier[0], 2);
    assert_int_equal(g.r[2].carrier[0], 0);
    assert_false(g.r[0].qdrops_known[0]);
    assert_true(g.r[1].qdrops_known[0]);
    assert_false(g.r[1].qdisc[0]);
    assert_int_equal(g.r[1].qdrops[0], 12);
    assert_int_equal(g.r[2].qdrops[0], 0);
    mirror_free(m);
    mirrormap_free(map);
}

/* A reload's new mirror carries the counters and the sequence tracking on. */
static void test_carry(void **state)
{
    (void)state;
    struct mirrormap *map = load_map();
    struct mirror_opts o = opts();
    struct mirror *a, *b;
    assert_int_equal(mirror_new(map, &o, &a), 0);
    assert_int_equal(mirror_new(map, &o, &b), 0);
    assert_int_equal(send_one(a, AGENT1, 1, 1.0), 0);
    assert_int_equal(send_one(a, 0x0a000001u, 1, 1.0), 0);
    mirror_carry(b, a);
    mirror_free(a);
    assert_int_equal(send_one(b, AGENT1, 3, 2.0), 0); /* seq 2 lost */
    struct report_telemetry t;
    mirror_telemetry(b, &t);
    assert_int_equal(t.sflow_datagrams, 3);
    assert_int_equal(t.sflow_refused, 1);
    assert_int_equal(t.sflow_lost_datagrams, 1);
    mirror_free(b);
    mirrormap_free(map);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sampled_flow_not_rising),
        cmocka_unit_test(test_unknown_agents_cost_nothing),
        cmocka_unit_test(test_allow_list),
        cmocka_unit_test(test_no_map_first_come),
        cmocka_unit_test(test_bad_samples_rejected_alone),
        cmocka_unit_test(test_counter_jump),
        cmocka_unit_test(test_counter_oper_changes),
        cmocka_unit_test(test_carry),
    };
    return cmocka_run_group_tests_name("mirror", tests, NULL, NULL);
}
