/* Unit tests for probes/report (DESIGN 2.3 JSON, flow pick, table) and the
 * probes/post queue and URL rules. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probes/post.h"
#include "common/reportspec.h"
#include "probes/report.h"

static void mkpkt(struct decode_pkt *p, uint8_t last, uint16_t sport, uint8_t ecn,
                  uint32_t len)
{
    memset(p, 0, sizeof(*p));
    p->wire_len = p->ip_len = len;
    p->af = 4;
    p->src[0] = 10, p->src[3] = last;
    p->dst[0] = 10, p->dst[3] = 200;
    p->proto = 17;
    p->l4 = 1;
    p->sport = sport;
    p->dport = 4791;
    p->dscp = 26;
    p->ecn = ecn;
    p->roce = 1;
    p->bth_opcode = 0x0a;
    p->dqp = 0x100 + last;
}

/* 30 flows; flow i sends i+1 packets of 1000 bytes in a 1 s interval, and
 * flow 29 marks every other packet CE and sends PSN 9 again where 10 was
 * due (2 PSNs out of sequence: 9 after 9, then 11 after 9). */
static struct flowtab *fill(void)
{
    struct flowtab *ft = flowtab_new(64, 0);
    assert_non_null(ft);
    struct decode_pkt p;
    for (int i = 0; i < 30; i++)
        for (int k = 0; k <= i; k++) {
            mkpkt(&p, (uint8_t)(i + 1), (uint16_t)(50000 + i), i == 29 && k % 2 ? 3 : 2, 1000);
            p.psn = (uint32_t)(i == 29 && k == 10 ? 9 : k);
            assert_int_equal(flowtab_update(ft, &p, 0, 100.0 + k * 0.01, 1, FLOW_SRC_PCAP), 0);
        }
    return ft;
}

static struct report build(struct flowtab *ft, struct report_snap *snap, unsigned top,
                           double fat_share)
{
    static const char *const ifn[] = {"eth1"};
    static struct report_link link = {.name = "eth1", .tx_bps = 9.1e10, .ce_pkts = 15};
    double bps = 1e6; /* 1 Mb/s link: flow 29's 240 kb/s is a 24% share, flow 28's 23.2% */
    struct report r = {.probe = "L1", .ts = 1700000000.5, .interval_s = 1.0,
                       .links = &link, .nlinks = 1};
    assert_int_equal(report_snap_take(snap, ft), 0);
    flowtab_close_interval(ft, 101.0, 1.0, &bps, 1, fat_share);
    assert_int_equal(report_pick_flows(&r, ft, snap, top, ifn, 1), 0);
    r.stats.pkts = 465;
    r.stats.roce_opcodes[0x0a] = 465;
    return r;
}

static void test_json_contract(void **state)
{
    (void)state;
    struct flowtab *ft = fill();
    struct report_snap snap = {0};
    struct report r = build(ft, &snap, 5, 0.235);
    json_t *o = report_to_json(&r);
    assert_non_null(o);
    assert_true(json_is_object(o));
    assert_string_equal(json_string_value(json_object_get(o, "probe")), "L1");
    assert_true(json_is_real(json_object_get(o, "ts")));
    assert_true(json_is_real(json_object_get(o, "interval_s")));
    json_t *l = json_array_get(json_object_get(o, "links"), 0);
    assert_string_equal(json_string_value(json_object_get(l, "if")), "eth1");
    assert_true(json_is_number(json_object_get(l, "tx_bps")));
    assert_int_equal(json_integer_value(json_object_get(l, "ce_pkts")), 15);
    assert_true(json_is_integer(json_object_get(l, "drops")));

    json_t *flows = json_object_get(o, "flows"); /* the fat one + top 5 others */
    assert_int_equal(json_array_size(flows), 6);
    json_t *f = json_array_get(flows, 0); /* the fastest, and the only fat one */
    assert_string_equal(json_string_value(json_object_get(f, "src")), "10.0.0.30");
    assert_string_equal(json_string_value(json_object_get(f, "dst")), "10.0.0.200");
    assert_int_equal(json_integer_value(json_object_get(f, "proto")), 17);
    assert_int_equal(json_integer_value(json_object_get(f, "sport")), 50029);
    assert_int_equal(json_integer_value(json_object_get(f, "dport")), 4791);
    assert_int_equal(json_integer_value(json_object_get(f, "qp")), 0x100 + 30);
    assert_int_equal(json_integer_value(json_object_get(f, "vlan")), 0);
    assert_int_equal(json_integer_value(json_object_get(f, "dscp")), 26);
    assert_string_equal(json_string_value(json_object_get(f, "if")), "eth1");
    assert_int_equal(json_integer_value(json_object_get(f, "bytes")), 30000);
    assert_int_equal(json_integer_value(json_object_get(f, "pkts")), 30);
    assert_float_equal(json_real_value(json_object_get(f, "bps")), 240000.0, 1e-6);
    assert_float_equal(json_real_value(json_object_get(f, "ce_frac")), 0.5, 1e-9);
    assert_float_equal(json_real_value(json_object_get(f, "ect_frac")), 0.5, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(f, "cnp")), 0);
    assert_true(json_is_true(json_object_get(f, "fat")));
    assert_string_equal(json_string_value(json_object_get(f, "source")), "pcap");
    assert_int_equal(json_integer_value(json_object_get(f, "sampling")), 1);
    assert_true(json_is_false(json_object_get(json_array_get(flows, 1), "fat")));
    /* Loss signals: present when non-zero, absent (read as 0) otherwise. */
    assert_int_equal(json_integer_value(json_object_get(f, "psn_oos")), 2);
    assert_null(json_object_get(f, "retx_pkts"));
    assert_null(json_object_get(f, "naks"));
    assert_null(json_object_get(json_array_get(flows, 1), "psn_oos"));
    assert_null(json_object_get(l, "carrier_changes"));

    json_t *st = json_object_get(o, "stats");
    const char *keys[] = {"pkts", "bytes", "unparsed", "truncated", "evicted", "pcap_drops",
                          "post_dropped", "post_errors", "post_rejected"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_true(json_is_integer(json_object_get(st, keys[i])));
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(st, "roce_opcodes"), "0x0a")), 465);
    /* "partial" only on an interval cut short (a stop's or reload's flush) */
    assert_null(json_object_get(o, "partial"));
    json_decref(o);
    r.partial = true;
    o = report_to_json(&r);
    assert_true(json_is_true(json_object_get(o, "partial")));
    json_decref(o);
    report_free_flows(&r);
    report_snap_free(&snap);
    flowtab_free(ft);
}

static void test_pick_bounded_sorted(void **state)
{
    (void)state;
    struct flowtab *ft = fill();
    struct report_snap snap = {0};
    /* share 0.1 of 1 Mb/s: flows 12..29 (>= 13 pkts = 104 kb/s) are fat and
     * all of them are reported, plus top 3 of the rest. */
    struct report r = build(ft, &snap, 3, 0.1);
    size_t fat = 0;
    for (size_t i = 0; i < r.nflows; i++) {
        fat += r.flows[i].fat;
        if (i)
            assert_true(r.flows[i - 1].fat > r.flows[i].fat ||
                        (r.flows[i - 1].fat == r.flows[i].fat &&
                         r.flows[i - 1].bps >= r.flows[i].bps));
    }
    assert_int_equal(fat, 18);
    assert_int_equal(r.nflows, 21);
    assert_int_equal(r.flows[18].pkts, 12); /* top non-fat: flow 11 */
    assert_int_equal(r.flows[20].pkts, 10);
    report_free_flows(&r);
    report_snap_free(&snap);
    flowtab_free(ft);
}

/* A TCP flow's sequence counter is reported as retx_pkts (a RoCE flow's as
 * psn_oos, test_json_contract), the resends of its highest segment among
 * them as tail_retx; a link's carrier changes when non-zero. */
static void test_tcp_retx_and_carrier(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(8, 0);
    struct decode_pkt p;
    const uint32_t seq[] = {1000, 2000, 1000, 3000, 3000}; /* a resend below the highest end, then at it */
    for (size_t i = 0; i < 5; i++) {
        mkpkt(&p, 1, 40000, 0, 1052);
        p.proto = 6, p.roce = 0, p.bth_opcode = 0, p.dqp = 0, p.dport = 5201;
        p.tcp_seq = seq[i], p.seg_len = 1000;
        assert_int_equal(flowtab_update(ft, &p, 0, 100.0, 1, FLOW_SRC_PCAP), 0);
    }
    static const char *const ifn[] = {"eth1"};
    struct report_link link = {.name = "eth1", .carrier_changes = 3};
    struct report r = {.probe = "L1", .ts = 1700000000.5, .interval_s = 1.0, .links = &link, .nlinks = 1};
    struct report_snap snap = {0};
    double bps = 1e6;
    assert_int_equal(report_snap_take(&snap, ft), 0);
    flowtab_close_interval(ft, 101.0, 1.0, &bps, 1, 0.1);
    assert_int_equal(report_pick_flows(&r, ft, &snap, 5, ifn, 1), 0);
    json_t *o = report_to_json(&r);
    json_t *f = json_array_get(json_object_get(o, "flows"), 0);
    assert_int_equal(json_integer_value(json_object_get(f, "retx_pkts")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "tail_retx")), 1);
    assert_null(json_object_get(f, "psn_oos"));
    json_t *l = json_array_get(json_object_get(o, "links"), 0);
    assert_int_equal(json_integer_value(json_object_get(l, "carrier_changes")), 3);
    json_decref(o);
    report_free_flows(&r);
    report_snap_free(&snap);
    flowtab_free(ft);
}

/* With arrivals captured (--inbound), a flow is reported once, by the
 * interface it left by, with the interface it arrived by and the holes
 * seen there (0 included); its arrival view is no flow of its own. A flow
 * not seen arriving carries neither member. */
static void test_holes_and_in_if(void **state)
{
    (void)state;
    struct flowtab *ft = flowtab_new(8, 0);
    struct decode_pkt p;
    const uint32_t seq[] = {1000, 2000, 4000, 5000};
    for (size_t i = 0; i < 4; i++) {
        mkpkt(&p, 1, 40000, 0, 1052);
        p.proto = 6, p.roce = 0, p.bth_opcode = 0, p.dqp = 0, p.dport = 5201;
        p.tcp_seq = seq[i], p.seg_len = 1000;
        assert_int_equal(flowtab_update(ft, &p, 1 | FLOWTAB_IN, 100.0, 1, FLOW_SRC_PCAP), 0);
        assert_int_equal(flowtab_update(ft, &p, 0, 100.0, 1, FLOW_SRC_PCAP), 0);
        p.sport = 40001; /* a second flow, only seen leaving */
        assert_int_equal(flowtab_update(ft, &p, 0, 100.0, 1, FLOW_SRC_PCAP), 0);
    }
    static const char *const ifn[] = {"eth1", "eth2"};
    struct report r = {.probe = "S1", .ts = 1700000000.5, .interval_s = 1.0};
    struct report_snap snap = {0};
    double bps[2] = {1e6, 1e6};
    assert_int_equal(report_snap_take(&snap, ft), 0);
    flowtab_close_interval(ft, 101.0, 1.0, bps, 2, 0.1);
    assert_int_equal(report_pick_flows(&r, ft, &snap, 5, ifn, 2), 0);
    assert_int_equal(r.nflows, 2);
    json_t *o = report_to_json(&r);
    json_t *fl = json_object_get(o, "flows");
    size_t seen = 0;
    for (size_t i = 0; i < json_array_size(fl); i++) {
        json_t *f = json_array_get(fl, i);
        assert_string_equal(json_string_value(json_object_get(f, "if")), "eth1");
        assert_int_equal(json_integer_value(json_object_get(f, "pkts")), 4); /* not doubled */
        assert_null(json_object_get(f, "retx_pkts"));                        /* a gap is no resend */
        if (json_integer_value(json_object_get(f, "sport")) == 40000) {
            assert_string_equal(json_string_value(json_object_get(f, REPORTSPEC_IN_IF)), "eth2");
            assert_int_equal(json_integer_value(json_object_get(f, REPORTSPEC_HOLES)), 1);
            seen++;
        } else {
            assert_null(json_object_get(f, REPORTSPEC_IN_IF));
            assert_null(json_object_get(f, REPORTSPEC_HOLES));
        }
    }
    assert_int_equal(seen, 1);
    json_decref(o);
    /* The next interval, in order: holes 0, still reported with in_if. */
    mkpkt(&p, 1, 40000, 0, 1052);
    p.proto = 6, p.roce = 0, p.bth_opcode = 0, p.dqp = 0, p.dport = 5201;
    p.tcp_seq = 6000, p.seg_len = 1000;
    assert_int_equal(flowtab_update(ft, &p, 1 | FLOWTAB_IN, 101.5, 1, FLOW_SRC_PCAP), 0);
    assert_int_equal(flowtab_update(ft, &p, 0, 101.5, 1, FLOW_SRC_PCAP), 0);
    assert_int_equal(report_snap_take(&snap, ft), 0);
    flowtab_close_interval(ft, 102.0, 1.0, bps, 2, 0.1);
    assert_int_equal(report_pick_flows(&r, ft, &snap, 5, ifn, 2), 0);
    o = report_to_json(&r);
    fl = json_object_get(o, "flows");
    for (size_t i = 0; i < json_array_size(fl); i++) {
        json_t *f = json_array_get(fl, i);
        if (json_integer_value(json_object_get(f, "sport")) == 40000) {
            assert_non_null(json_object_get(f, REPORTSPEC_HOLES));
            assert_int_equal(json_integer_value(json_object_get(f, REPORTSPEC_HOLES)), 0);
        }
    }
    json_decref(o);
    report_free_flows(&r);
    report_snap_free(&snap);
    flowtab_free(ft);
}

static void test_table_and_line(void **state)
{
    (void)state;
    struct flowtab *ft = fill();
    struct report_snap snap = {0};
    struct report r = build(ft, &snap, 2, 0.235);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(report_print(&r, REPORT_TABLE, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "probe L1"));
    assert_non_null(strstr(buf, "10.0.0.30"));
    assert_non_null(strstr(buf, "4791/0x11e"));
    assert_non_null(strstr(buf, "yes"));
    assert_non_null(strstr(buf, " retx  nak fat"));
    assert_non_null(strstr(buf, "      2    0 yes")); /* flow 29's PSNs out of sequence */
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(report_print(&r, REPORT_JSON, f), 0);
    fclose(f);
    assert_int_equal(buf[len - 1], '\n');
    assert_ptr_equal(strchr(buf, '\n'), buf + len - 1); /* exactly one line */
    json_error_t e;
    json_t *o = json_loads(buf, 0, &e);
    assert_non_null(o);
    json_decref(o);
    free(buf);
    report_free_flows(&r);
    report_snap_free(&snap);
    flowtab_free(ft);
}

static void test_queue_drop_oldest(void **state)
{
    (void)state;
    struct post_queue q;
    assert_int_equal(post_queue_init(&q, 0), -EINVAL);
    assert_int_equal(post_queue_init(&q, 3), 0);
    char name[16];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "r%d", i);
        post_queue_push(&q, strdup(name));
    }
    assert_int_equal(q.dropped, 2);
    assert_int_equal(q.n, 3);
    const char *want[] = {"r2", "r3", "r4"};
    for (int i = 0; i < 3; i++) {
        char *s = post_queue_pop(&q);
        assert_string_equal(s, want[i]);
        free(s);
    }
    assert_null(post_queue_pop(&q));
    post_queue_push(&q, strdup("left")); /* freed by post_queue_free */
    post_queue_free(&q);
}

/* post_url against libcurl's parser (CURLU): the URL as the transfer reads
 * it, the reports path appended once; anything but http(s) with a host is
 * refused. */
static void test_post_url(void **state)
{
    (void)state;
    static const struct { const char *in; int rc; const char *out; } cases[] = {
        {"http://c:8080", 0, "http://c:8080/api/v1/reports"},
        {"http://c:8080/", 0, "http://c:8080/api/v1/reports"},
        {"https://c/api/v1/reports", 0, "https://c/api/v1/reports"},
        {"http://[::1]:8080/", 0, "http://[::1]:8080/api/v1/reports"},
        {"HTTP://C:8080", 0, "http://C:8080/api/v1/reports"},
        {"http://c:8080/tf//", 0, "http://c:8080/tf/api/v1/reports"},
        {"http://c/x?probe=1", 0, "http://c/x/api/v1/reports?probe=1"},
        {"ftp://c", -EINVAL, NULL},
        {"", -EINVAL, NULL},
        {NULL, -EINVAL, NULL},
        {"http://", -EINVAL, NULL},             /* no host */
        {"http://c:99999", -EINVAL, NULL},      /* no such port */
        {"http://c d", -EINVAL, NULL},
        {"c:8080", -EINVAL, NULL},              /* no scheme */
        {"file:///etc/passwd", -EINVAL, NULL},
    };
    char u[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(post_url(cases[i].in, u, sizeof(u)), cases[i].rc);
        if (cases[i].out)
            assert_string_equal(u, cases[i].out);
    }
    assert_int_equal(post_url("http://a-very-long-controller-name.example:8080", u, 32),
                     -ENAMETOOLONG);
}

/* A controller that is not there: reports are retried, counted as errors,
 * and post_stop returns. */
static void test_post_unreachable(void **state)
{
    (void)state;
    struct post *p;
    struct post_opts o = {.url = "http://127.0.0.1:9", .token = "t", .queue_len = 2,
                          .connect_timeout_ms = 200, .timeout_ms = 500, .retries = 1,
                          .backoff_ms = 10};
    assert_int_equal(post_start(&p, &o), 0);
    for (int i = 0; i < 5; i++)
        post_submit(p, strdup("{}"));
    uint64_t dropped = 0, errors = 0, sent = 0;
    for (int i = 0; i < 300 && errors + dropped < 5; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        post_counters(p, &dropped, &errors, NULL, &sent);
    }
    assert_int_equal(sent, 0);
    assert_int_equal(dropped + errors, 5);
    assert_true(dropped >= 2);
    post_stop(p, 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_contract),  cmocka_unit_test(test_pick_bounded_sorted),
        cmocka_unit_test(test_table_and_line), cmocka_unit_test(test_tcp_retx_and_carrier), cmocka_unit_test(test_holes_and_in_if), cmocka_unit_test(test_queue_drop_oldest),
        cmocka_unit_test(test_post_url),       cmocka_unit_test(test_post_unreachable),
    };
    return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
