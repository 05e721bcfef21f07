/* ingest's two parsers (ingest_parse.h): the scanner reads probe-shaped reports
 * itself (lone and batched, unknown members at every level, a stats object
 * of many keys, pretty-printed, IPv6, every source) into the very batch
 * jansson's parse gives; every text it finds wrong or outside its subset
 * (repeated keys at any depth, bounds, types, escapes, non-ASCII, "reports"
 * not first, deep nesting, overflow) goes to jansson, so that ingest_parse
 * answers as jansson does, message and place included; and random
 * mutations of a batch never make the two disagree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ingest.h"
#include "tests/lib/ingest_oracle.h"
#include "tests/lib/xorshift.h"

static void assert_batches_equal(const struct ingest_batch *a, const struct ingest_batch *b, const char *what)
{
    char why[128];
    if (ingest_batches_differ(a, b, why, sizeof(why)))
        fail_msg("%s: %s (scanner, then jansson)", what, why);
}

struct both {
    struct ingest_batch scan, jansson, any;
    struct ingest_error es, ej, ea;
    int rs, rj, ra;
};

/* The scanner, jansson, and ingest_parse on one text; ingest_parse must
 * answer as jansson does. */
static void run_both(struct both *w, const char *text, size_t len, size_t max_flows, const char *what)
{
    w->rs = ingest_parse_scan(text, len, max_flows, &w->scan, &w->es);
    w->rj = ingest_parse_jansson(text, len, max_flows, &w->jansson, &w->ej);
    w->ra = ingest_parse(text, len, max_flows, &w->any, &w->ea);
    if (w->rs != 0 && w->rs != -EAGAIN)
        fail_msg("%s: scanner returned %d", what, w->rs);
    if (w->rs == -EAGAIN && (w->scan.n != 0 || w->es.kind != INGEST_OK || w->es.msg[0]))
        fail_msg("%s: scanner left a batch or an error behind", what);
    if (w->rs == 0 && w->rj != 0)
        fail_msg("%s: scanner took what jansson refuses: %s", what, w->ej.msg);
    if (w->ra != w->rj || w->ea.kind != w->ej.kind || strcmp(w->ea.msg, w->ej.msg) || w->ea.line != w->ej.line ||
        w->ea.column != w->ej.column || w->ea.position != w->ej.position)
        fail_msg("%s: ingest_parse '%s' (%d), jansson '%s' (%d)", what, w->ea.msg, w->ra, w->ej.msg, w->rj);
    if (w->rs == 0)
        assert_batches_equal(&w->scan, &w->jansson, what);
    if (w->ra == 0)
        assert_batches_equal(&w->any, &w->jansson, what);
}

static void free_both(struct both *w)
{
    ingest_batch_free(&w->scan);
    ingest_batch_free(&w->jansson);
    ingest_batch_free(&w->any);
}

#define FLOW4 "{\"src\":\"10.0.1.1\",\"dst\":\"10.0.2.5\",\"proto\":17,\"sport\":49152,\"dport\":4791,\"qp\":1234," \
              "\"vlan\":0,\"dscp\":26,\"if\":\"eth1\",\"bytes\":123456789,\"pkts\":100000,\"bps\":40000000000.0," \
              "\"ce_frac\":0.02,\"cnp\":3,\"fat\":true,\"retx_pkts\":7,\"psn_oos\":2,\"naks\":1}"
#define LINK "{\"if\":\"eth1\",\"tx_bps\":9.1e10,\"rx_bps\":1.2e9,\"drops\":0,\"ce_pkts\":12,\"errors\":3," \
             "\"carrier_changes\":2}"
#define STATS "\"stats\":{\"pkts\":0,\"bytes\":0,\"unparsed\":0,\"truncated\":0,\"evicted\":0,\"pcap_drops\":0}"

/* A probe's report as probes/report.c writes it: unknown members in links,
 * flows and stats, a RoCE opcode table of n keys. */
static char *probe_report(const char *probe, int nops, int indent)
{
    json_t *ops = json_object();
    for (int i = 0; i < nops; i++) {
        char k[8];
        snprintf(k, sizeof(k), "0x%02x", i);
        json_object_set_new(ops, k, json_integer(i * 7));
    }
    json_t *r = json_pack(
        "{ss sf sf s[{ss sf sf sI sI sf sf sI sf ss ss sI sI sI}]"
        " s[{ss ss si si si si si si ss sI sI sf sf sI sb sf ss sI si}, {ss ss si ss sf ss sI}]"
        " s{so sI sI s{sI sI}}}",
        "probe", probe, "ts", 1700000000.123456, "interval_s", 1.0,
        "links", "if", "eth1", "tx_bps", 9.1e10, "rx_bps", 1.2e9, "drops", (json_int_t)0, "ce_pkts", (json_int_t)12,
        "tx_pps", 1e6, "rx_pps", 2.5e5, "errors", (json_int_t)0, "speed_bps", 1e11, "oper", "up", "source", "netlink",
        "qdisc_backlog", (json_int_t)0, "qdisc_drops", (json_int_t)0, "qdisc_overlimits", (json_int_t)3,
        "flows", "src", "fd00::1:1", "dst", "fd00::2:5", "proto", 17, "sport", 49152, "dport", 4791, "qp", 77,
        "vlan", 100, "dscp", 26, "if", "eth1", "bytes", (json_int_t)5000000000, "pkts", (json_int_t)1220703,
        "bps", 3.2e10, "ce_frac", 0.125, "cnp", (json_int_t)9, "fat", 1, "ect_frac", 1.0, "source", "sflow",
        "sampling", (json_int_t)4096, "vlan_inner", 7,
        "src", "10.0.1.1", "dst", "10.0.2.6", "proto", 6, "if", "eth1", "bps", 1.0, "source", "erspan",
        "sampling", (json_int_t)1,
        "stats", "roce_opcodes", ops, "pkts", (json_int_t)1, "bytes", (json_int_t)2, "telemetry", "sflow_datagrams",
        (json_int_t)3, "erspan_frames", (json_int_t)4);
    assert_non_null(r);
    size_t flags = (indent ? JSON_INDENT(indent) : JSON_COMPACT) | JSON_REAL_PRECISION(15);
    char *s = json_dumps(r, flags);
    json_decref(r);
    return s;
}

/* Texts of the subset: the scanner reads them, into jansson's batch. */
static void scanner_reads_reports_as_jansson(void **st)
{
    (void)st;
    struct both *w = test_calloc(1, sizeof(*w));
    const char *texts[] = {
        "{\"probe\":\"L1\",\"ts\":1700000000.5,\"interval_s\":1.0,\"links\":[" LINK "],\"flows\":[" FLOW4 "]," STATS "}",
        "{\"reports\":[{\"probe\":\"L1\",\"links\":[" LINK "],\"flows\":[" FLOW4 "," FLOW4 "]," STATS "},"
        "{\"probe\":\"L2\",\"flows\":[]},{\"links\":[],\"probe\":\"H1\",\"interval_s\":2}],\"sent_by\":{\"x\":[1,{}]}}",
        /* members in any order, optional ones absent, rates as integers */
        "{\"flows\":[{\"bps\":5,\"if\":\"swp1\",\"proto\":6,\"dst\":\"10.0.2.1\",\"src\":\"10.0.1.1\"}],\"probe\":\"L1\"}",
        " {\n  \"probe\" : \"L1\" ,\n  \"links\" : [ { \"if\" : \"eth2\" , \"oper\" : \"down\" } ]\n}\n",
        "{\"probe\":\"L1\",\"ts\":0,\"flows\":[{\"src\":\"10.0.1.1\",\"dst\":\"10.0.2.1\",\"proto\":0,\"if\":\"e\","
        "\"bps\":1e13,\"ce_frac\":1,\"sport\":65535,\"qp\":16777215,\"vlan\":4095,\"dscp\":63,"
        "\"bytes\":1000000000000000000,\"sampling\":1073741824,\"fat\":false,\"source\":\"pcap\"}]}",
    };
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        char what[32];
        snprintf(what, sizeof(what), "text %zu", i);
        run_both(w, texts[i], strlen(texts[i]), 100, what);
        if (w->rs != 0)
            fail_msg("%s: left to jansson ('%s')", what, w->ej.msg);
        free_both(w);
    }
    /* probes/report.c's shape, compact and indented, with a RoCE opcode
     * table too large for the scanner's inline key slots. */
    for (int indent = 0; indent <= 2; indent += 2) {
        char *s = probe_report("H1", 200, indent);
        run_both(w, s, strlen(s), 100, indent ? "indented probe report" : "probe report");
        assert_int_equal(w->rs, 0);
        assert_int_equal(w->scan.r[0].nflows, 2);
        assert_int_equal(w->scan.r[0].flows[0].k.af, 6);
        assert_int_equal(w->scan.r[0].flows[0].sampling, 4096);
        free_both(w);
        free(s);
    }
    test_free(w);
}

/* Everything else is jansson's to decide: valid texts outside the subset
 * are accepted as jansson reads them, errors come with its words. */
static void the_rest_is_jansson_s(void **st)
{
    (void)st;
    struct both *w = test_calloc(1, sizeof(*w));
    struct { const char *text; size_t max_flows; int rc; const char *msg; } cases[] = {
        /* valid, outside the subset */
        {"{\"probe\":\"L\\u0031\",\"flows\":[" FLOW4 "]}", 10, 0, NULL},
        {"{\"probe\":\"L1\",\"note\":\"caf\xc3\xa9\"}", 10, 0, NULL},
        {"{\"x\":{\"reports\":1},\"reports\":[{\"probe\":\"L1\"}]}", 10, 0, NULL},
        {"{\"probe\":\"L1\",\"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}", 10, 0, NULL},
        {"{\"probe\":\"L1\",\"ts\":1.000000000000000000000000000000000000000000000000000000000000000000001}", 10, 0, NULL},
        /* repeated keys, at every level */
        {"{\"probe\":\"L1\",\"probe\":\"L2\"}", 10, -EINVAL, "duplicate object key"},
        {"{\"probe\":\"L1\",\"links\":[],\"links\":[]}", 10, -EINVAL, "duplicate object key"},
        {"{\"reports\":[{\"probe\":\"L1\"}],\"reports\":[]}", 10, -EINVAL, "duplicate object key"},
        {"{\"reports\":[{\"probe\":\"L1\"}],\"a\":1,\"a\":2}", 10, -EINVAL, "duplicate object key"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"src\":\"10.0.0.2\"}]}", 10, -EINVAL, "duplicate object key"},
        {"{\"probe\":\"L1\",\"flows\":[{\"zz\":1,\"zz\":2}]}", 10, -EINVAL, "duplicate object key"},
        {"{\"probe\":\"L1\",\"stats\":{\"a\":{\"b\":[{\"c\":1,\"c\":1}]}}}", 10, -EINVAL, "duplicate object key"},
        /* bounds, before entries are judged */
        {"{\"probe\":\"L1\",\"flows\":[" FLOW4 "," FLOW4 "," FLOW4 "]}", 2, -E2BIG, "flows: 3 entries"},
        {"{\"reports\":[{\"probe\":\"L1\",\"flows\":[" FLOW4 "]},{\"probe\":\"L2\",\"flows\":[" FLOW4 "," FLOW4 "]}]}",
         2, -E2BIG, "reports[1].flows: 2 entries"},
        {"{\"reports\":[]}", 10, -EINVAL, "reports: must be a non-empty array"},
        /* the schema: a report's own members refuse the body; an entry's, only that entry */
        {"{\"ts\":1}", 10, -EINVAL, "report.probe: required"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"if\":\"e\",\"bps\":1}]}", 10, 0,
         "flows[0].proto: required"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":-1}]}",
         10, 0, "flows[0].bps: negative -1"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":2e13}]}",
         10, 0, "flows[0].bps: 2e+13 exceeds the maximum 1e+13"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1,"
         "\"sport\":1.0}]}", 10, 0, "flows[0].sport: must be an integer"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"fd00::1\",\"proto\":17,\"if\":\"e\",\"bps\":1}]}", 10,
         0, "flows[0]: src and dst of different families"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.999\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1}]}",
         10, 0, "flows[0].src: '10.0.0.999' is not an IP address"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1,"
         "\"source\":\"pcapng\"}]}", 10, 0, "flows[0].source: 'pcapng' is not pcap, erspan or sflow"},
        {"{\"probe\":\"L1\",\"links\":[{\"if\":\"e\",\"oper\":\"left\"}]}", 10, 0,
         "links[0].oper: 'left' is not up or down"},
        {"{\"probe\":\"a b\"}", 10, -EINVAL, "report.probe: invalid character"},
        {"{\"probe\":\"L1\",\"links\":{}}", 10, -EINVAL, "links: must be an array"},
        {"{\"reports\":[{\"probe\":\"L1\"},5]}", 10, -EINVAL, "reports[1]: report must be an object"},
        {"[]", 10, -EINVAL, "body: must be a JSON object"},
        /* syntax */
        {"{\"probe\":\"L1\",\"ts\":1e999}", 10, -EINVAL, "real number overflow"},
        {"{\"probe\":\"L1\",\"ts\":99999999999999999999}", 10, -EINVAL, "too big integer"},
        {"{\"probe\":\"L1\"} x", 10, -EINVAL, "end of file expected"},
        {"{\"probe\":\"L1\",}", 10, -EINVAL, "string or '}' expected"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char what[32];
        snprintf(what, sizeof(what), "case %zu", i);
        run_both(w, cases[i].text, strlen(cases[i].text), cases[i].max_flows, what);
        if (w->rs != -EAGAIN)
            fail_msg("%s: the scanner took it", what);
        const char *msg = w->ra == 0 && w->any.refused.kept ? w->any.refused.e[0].msg : w->ea.msg;
        if (w->ra != cases[i].rc || (cases[i].msg && !strstr(msg, cases[i].msg)))
            fail_msg("%s: %d '%s'", what, w->ra, msg);
        free_both(w);
    }
    /* More than INGEST_MAX_REPORTS reports, or INGEST_MAX_LINKS links. */
    size_t cap = 64 * (INGEST_MAX_LINKS + INGEST_MAX_REPORTS + 2);
    char *text = test_malloc(cap);
    size_t n = (size_t)snprintf(text, cap, "{\"reports\":[");
    for (int i = 0; i <= INGEST_MAX_REPORTS; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s{\"probe\":\"L1\"}", i ? "," : "");
    n += (size_t)snprintf(text + n, cap - n, "]}");
    run_both(w, text, n, 10, "too many reports");
    assert_int_equal(w->rs, -EAGAIN);
    assert_int_equal(w->ra, -E2BIG);
    free_both(w);
    n = (size_t)snprintf(text, cap, "{\"probe\":\"L1\",\"links\":[");
    for (int i = 0; i <= INGEST_MAX_LINKS; i++)
        n += (size_t)snprintf(text + n, cap - n, "%s{\"if\":\"e%d\"}", i ? "," : "", i);
    n += (size_t)snprintf(text + n, cap - n, "]}");
    run_both(w, text, n, 10, "too many links");
    assert_int_equal(w->rs, -EAGAIN);
    assert_int_equal(w->ra, -E2BIG);
    free_both(w);
    test_free(text);
    test_free(w);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) { return xorshift64(&rng); }

/* Random edits of a batch (bytes deleted, replaced, inserted; spans
 * copied, which repeats members; the text cut short): whatever the scanner
 * takes, jansson takes alike, and ingest_parse always answers as jansson. */
static void mutations_never_disagree(void **st)
{
    (void)st;
    const char *seed = "{\"reports\":[{\"probe\":\"L1\",\"ts\":17.5,\"interval_s\":1,\"links\":[" LINK
                       ",{\"if\":\"swp2\",\"oper\":\"down\"}],\"flows\":[" FLOW4 ",{\"src\":\"10.0.1.2\","
                       "\"dst\":\"10.0.2.6\",\"proto\":6,\"if\":\"swp2\",\"bps\":1.5e9,\"source\":\"sflow\","
                       "\"sampling\":100}]," STATS "},{\"probe\":\"L2\",\"flows\":[" FLOW4 "]}]}";
    static const char alphabet[] = "{}[]\",:0123456789.eE-+ \t\nntfalsrue\\u\x80\xc3\x01x";
    size_t slen = strlen(seed), cap = 4 * slen;
    char *text = test_malloc(cap);
    struct both *w = test_calloc(1, sizeof(*w));
    size_t taken = 0, accepted = 0;
    for (int k = 0; k < 10000; k++) {
        memcpy(text, seed, slen);
        size_t n = slen;
        for (int edits = 1 + (int)(rnd() % 3); edits > 0; edits--) {
            size_t at = rnd() % n;
            switch (rnd() % 5) {
            case 0: /* delete */
                memmove(text + at, text + at + 1, n - at - 1);
                n--;
                break;
            case 1: /* replace */
                text[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                break;
            case 2: /* insert */
                memmove(text + at + 1, text + at, n - at);
                text[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
                n++;
                break;
            case 3: { /* copy a span elsewhere */
                size_t from = rnd() % n, len = 1 + rnd() % 60;
                len = len > n - from ? n - from : len;
                if (n + len > cap)
                    break;
                char span[64];
                memcpy(span, text + from, len);
                memmove(text + at + len, text + at, n - at);
                memcpy(text + at, span, len);
                n += len;
                break;
            }
            default: /* cut */
                n = at + 1;
                break;
            }
            if (n == 0)
                break;
        }
        char what[32];
        snprintf(what, sizeof(what), "mutation %d", k);
        run_both(w, text, n, 3, what);
        taken += w->rs == 0;
        accepted += w->rj == 0;
        free_both(w);
    }
    print_message("# %zu of 10000 mutations read by the scanner, %zu valid\n", taken, accepted);
    /* Both outcomes occur, or the test would prove little. */
    assert_true(taken > 100);
    assert_true(accepted > taken);
    test_free(w);
    test_free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scanner_reads_reports_as_jansson),
        cmocka_unit_test(the_rest_is_jansson_s),
        cmocka_unit_test(mutations_never_disagree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
