/* ingest: syntax errors with their place (jansson's line, column, position;
 * duplicate keys, depth), report parsing (every field, batches, unknown keys,
 * bounds, 413 before entries are judged, source and sampling),
 * and mapping: a probe's `if` to the link direction leaving its node (by
 * interface name, or by the far end's name where the topology has none), and
 * a flow's path derived from the node that reported it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/api.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/ingest.h"
#include "controller/metrics.h"
#include "controller/rebalance.h"
#include <jansson.h>
#include "controller/state.h"
#include "policy/classes.h"
#include "policy/topo.h"
#include "tests/unit/ctl_fixture.h"

/* Syntax errors come from jansson with their place; the body is refused
 * whole (nothing half-parsed is kept). */
static void syntax_errors_have_a_place(void **st)
{
    (void)st;
    struct { const char *text; int line, column; const char *what; } bad[] = {
        {"{\"probe\":\n  x}", 2, 3, "invalid token"},
        {"{\"probe\": \"L1\",}", 1, 16, "string or '}' expected"},
        {"{\"probe\" \"L1\"}", 1, 13, "':' expected"},
        {"{\"probe\": \"L1\"} {}", 1, 17, "end of file expected"},
        {"{\"probe\": \"\\q\"}", 1, 13, "invalid escape"},
        {"{\"probe\": \"\xc3\x28\"}", 1, 11, "unable to decode byte 0xc3"},
        {"{\"probe\": \"L1\", \"ts\": 99999999999999999999}", 1, 42, "too big integer"},
        {"{\"probe\": \"a\\u0000b\"}", 1, 20, "\\u0000 is not allowed"},
        {"{\"probe\": \"L1\", \"ts\": 1e999}", 1, 27, "real number overflow"},
        {"", 1, 0, "'[' or '{' expected"},
        {"{\"probe\": \"L1\", \"links\": [", 1, 26, "']' expected near end of file"},
    };
    struct ingest_batch *b = test_malloc(sizeof(*b));
    struct ingest_error e;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = ingest_parse(bad[i].text, strlen(bad[i].text), 10, b, &e);
        if (rc != -22 || e.kind != INGEST_BAD_JSON || e.line != bad[i].line || e.column != bad[i].column ||
            !strstr(e.msg, bad[i].what))
            fail_msg("case %zu '%s': rc %d kind %d at %d:%d '%s'", i, bad[i].text, rc, e.kind, e.line, e.column, e.msg);
        assert_int_equal(b->n, 0);
    }
    /* A duplicate key is a syntax error at any depth, with its place. */
    const char *dup = "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.0.1\",\n \"src\": \"10.0.0.2\"}]}";
    assert_int_equal(ingest_parse(dup, strlen(dup), 10, b, &e), -22);
    assert_int_equal(e.kind, INGEST_BAD_JSON);
    assert_non_null(strstr(e.msg, "duplicate object key"));
    assert_int_equal(e.line, 2);
    assert_true(e.position > 40);
    /* Nesting is bounded (jansson's JSON_PARSER_MAX_DEPTH) in an unknown member too. */
    size_t deep = JSON_PARSER_MAX_DEPTH; /* arrays, inside the report object */
    char *text = test_malloc(2 * deep + 32);
    size_t n = (size_t)sprintf(text, "{\"probe\": \"L1\", \"x\": ");
    memset(text + n, '[', deep);
    memset(text + n + deep, ']', deep);
    text[n + 2 * deep] = '}';
    assert_int_equal(ingest_parse(text, n + 2 * deep + 1, 10, b, &e), -22);
    assert_int_equal(e.kind, INGEST_BAD_JSON);
    assert_non_null(strstr(e.msg, "depth"));
    /* One level less is fine: unknown members are not looked at. */
    text[n + deep - 1] = ' ';
    text[n + deep] = ' ';
    assert_int_equal(ingest_parse(text, n + 2 * deep + 1, 10, b, &e), 0);
    ingest_batch_free(b);
    test_free(text);
    test_free(b);
}

static void parse_every_field(void **st)
{
    (void)st;
    /* "reports" after another key; unknown keys at every level are skipped. */
#define REPORT_FMT \
        "{\"x\": {\"reports\": 1}, \"reports\": [{\"stats\": {\"pkts\": [1, 2]}, \"probe\": \"L1\", \"ts\": 17.5," \
        " \"interval_s\": 1, \"links\": [{\"if\": \"eth1\", \"tx_bps\": 9.1e10, \"rx_bps\": 1.2e9, \"drops\": 3," \
        " \"ce_pkts\": 12, \"oper\": \"down\", \"extra\": \"x\"}], \"flows\": [{\"src\": \"10.0.1.1\"," \
        " \"dst\": \"%s\", \"proto\": 17, \"sport\": 49152, \"dport\": 4791, \"qp\": 1234, \"vlan\": 7," \
        " \"dscp\": 26, \"if\": \"eth1\", \"bytes\": 123456789, \"pkts\": 100000, \"bps\": 4.0e10," \
        " \"ce_frac\": 0.02, \"cnp\": 3, \"fat\": true}]}, {\"probe\": \"L2\"}]}"
    struct ingest_batch *b = test_malloc(sizeof(*b));
    struct ingest_error e;
    char body[2048];
    /* A bad entry is dropped alone, named by its path. */
    snprintf(body, sizeof(body), REPORT_FMT, "fd00::5");
    assert_int_equal(ingest_parse(body, strlen(body), 10, b, &e), 0);
    assert_int_equal(b->r[0].nflows, 0);
    assert_int_equal(b->r[0].nlinks, 1);
    assert_int_equal(b->refused.n, 1);
    assert_string_equal(b->refused.e[0].msg, "reports[0].flows[0]: src and dst of different families");
    ingest_batch_free(b);
    snprintf(body, sizeof(body), REPORT_FMT, "10.0.2.5");
    assert_int_equal(ingest_parse(body, strlen(body), 10, b, &e), 0);
    assert_int_equal(b->n, 2);
    const struct ingest_report *r = &b->r[0];
    assert_string_equal(r->probe, "L1");
    assert_true(r->ts == 17.5 && r->interval_s == 1 && r->nlinks == 1 && r->nflows == 1);
    assert_string_equal(r->links[0].ifname, "eth1");
    assert_true(r->links[0].tx_bps == 9.1e10 && r->links[0].has_rx && r->links[0].rx_bps == 1.2e9);
    assert_true(r->links[0].drops == 3 && r->links[0].ce_pkts == 12 && r->links[0].down);
    const struct ingest_flow *f = &r->flows[0];
    assert_true(f->k.af == 4 && f->k.proto == 17 && f->k.sport == 49152 && f->k.dport == 4791);
    assert_true(f->k.qp == 1234 && f->k.vlan == 7 && f->dscp == 26 && f->fat);
    assert_true(f->k.src[0] == 10 && f->k.src[3] == 1 && f->k.dst[2] == 2 && f->k.dst[3] == 5);
    assert_true(f->bytes == 123456789 && f->pkts == 100000 && f->bps == 4e10 && f->ce_frac == 0.02 && f->cnp == 3);
    assert_string_equal(b->r[1].probe, "L2");
    assert_int_equal(b->r[1].nflows, 0);
    ingest_batch_free(b);

    struct { const char *body; enum ingest_err kind; const char *msg; } bad[] = {
        {"{\"probe\": \"L1\", \"probe\": \"L2\"}", INGEST_BAD_JSON, "duplicate object key near '\"probe\"'"},
        {"{\"reports\": []}", INGEST_BAD_FIELD, "reports: must be a non-empty array"},
        {"{\"reports\": [{\"probe\": \"L1\"}, 5]}", INGEST_BAD_FIELD, "reports[1]: report must be an object"},
        {"{\"probe\": \"L1\", \"links\": {}}", INGEST_BAD_FIELD, "links: must be an array"},
        {"{\"probe\": \"a b\"}", INGEST_BAD_FIELD, "report.probe: invalid character"},
        {"{\"ts\": 1}", INGEST_BAD_FIELD, "report.probe: required"},
        {"{\"probe\": \"L1\", \"schema\": 2}", INGEST_BAD_FIELD,
         "report.schema: 2 is not a schema this controller reads (1)"},
        {"{\"reports\": [{\"probe\": \"L1\"}, {\"probe\": \"L2\", \"schema\": 0}]}", INGEST_BAD_FIELD,
         "reports[1].schema: 0 is not a schema"},
        {"{\"probe\": \"L1\", \"instance\": \"a b\"}", INGEST_BAD_FIELD, "report.instance: invalid character"},
        {"{\"probe\": \"L1\", \"ts\": \"now\"}", INGEST_BAD_FIELD, "report.ts: must be a number"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (ingest_parse(bad[i].body, strlen(bad[i].body), 10, b, &e) >= 0 || e.kind != bad[i].kind ||
            !strstr(e.msg, bad[i].msg))
            fail_msg("case %zu: kind %d, '%s'", i, e.kind, e.msg);
    }
    /* A report's own member names its probe, for the log. */
    const char *named = "{\"probe\": \"L7\", \"interval_s\": -1}";
    assert_int_equal(ingest_parse(named, strlen(named), 10, b, &e), -22);
    assert_string_equal(e.probe, "L7");
    /* An entry's member: the entry goes, the others and the report stay. */
    struct { const char *flow, *msg; } entry[] = {
        {"\"sport\": 1.5", "flows[1].sport: must be an integer"},
        {"\"fat\": 1", "flows[1].fat: must be true or false"},
        {"\"proto\": 300", "flows[1].proto: 300 exceeds the maximum 255"},
    };
    for (size_t i = 0; i < sizeof(entry) / sizeof(entry[0]); i++) {
        snprintf(body, sizeof(body), "{\"probe\": \"L1\", \"schema\": 1, \"instance\": \"probe-4711\", \"flows\": ["
                 "{\"src\": \"10.0.0.1\", \"dst\": \"10.0.0.2\", \"proto\": 17, \"if\": \"e\", \"bps\": 1},"
                 "{\"src\": \"10.0.0.1\", \"dst\": \"10.0.0.3\", \"proto\": 17, \"if\": \"e\", \"bps\": 1, %s},"
                 "{\"src\": \"10.0.0.1\", \"dst\": \"10.0.0.4\", \"proto\": 17, \"if\": \"e\", \"bps\": 1}]}",
                 entry[i].flow);
        if (strstr(entry[i].flow, "proto"))
            memcpy(strstr(body, "\"proto\": 17, \"if\": \"e\", \"bps\": 1, "), "\"zzzzz\"", 7); /* one proto only */
        assert_int_equal(ingest_parse(body, strlen(body), 10, b, &e), 0);
        assert_int_equal(b->r[0].nflows, 2);
        assert_true(b->r[0].flows[0].k.dst[3] == 2 && b->r[0].flows[1].k.dst[3] == 4);
        assert_string_equal(b->r[0].instance, "probe-4711");
        assert_int_equal(b->refused.n, 1);
        assert_string_equal(b->refused.e[0].msg, entry[i].msg);
        ingest_batch_free(b);
    }
    test_free(b);
}

/* 2 leaves x 4 spines, 2 hosts per leaf. Leaf L1's uplinks carry interface
 * names (swp1..4); every other link end has none. */
static struct topo *mk_topo(void)
{
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load("leafspine:leaves=2,spines=4,hosts=2,gbps=100", &t, err, sizeof(err)), 0);
    for (uint32_t k = 0; k < t->nlinks; k++) {
        struct topo_link *l = &t->links[k];
        if (strcmp(t->nodes[l->lo].name, "L1") == 0)
            snprintf(l->lo_if, sizeof(l->lo_if), "swp%c", t->nodes[l->hi].name[1]);
    }
    return t;
}

#define N fx_node

static void if_maps_to_link_direction(void **st)
{
    (void)st;
    struct topo *t = mk_topo();
    uint32_t dir, want;
    /* Named interface on L1. */
    assert_int_equal(ingest_dir_of_if(t, N(t, "L1"), "swp3", &dir), 0);
    assert_int_equal(topo_dir_between(t, N(t, "L1"), N(t, "S3"), &want), 0);
    assert_int_equal(dir, want);
    /* That end has a name: the far end's name is not accepted for it. */
    assert_int_equal(ingest_dir_of_if(t, N(t, "L1"), "S3", &dir), -2);
    /* L2's ends have no names: the far end's name picks the direction. */
    assert_int_equal(ingest_dir_of_if(t, N(t, "L2"), "S4", &dir), 0);
    assert_int_equal(topo_dir_from(t, dir), N(t, "L2"));
    assert_int_equal(topo_dir_to(t, dir), N(t, "S4"));
    /* Downward, from a spine; and from a host to its leaf. */
    assert_int_equal(ingest_dir_of_if(t, N(t, "S2"), "L2", &dir), 0);
    assert_true(topo_dir_is_down(dir) && topo_dir_to(t, dir) == N(t, "L2"));
    assert_int_equal(ingest_dir_of_if(t, N(t, "H1"), "L1", &dir), 0);
    assert_int_equal(topo_dir_to(t, dir), N(t, "L1"));
    /* Not adjacent, unknown, or another node's interface. */
    assert_int_equal(ingest_dir_of_if(t, N(t, "L2"), "L1", &dir), -2);
    assert_int_equal(ingest_dir_of_if(t, N(t, "L2"), "eth9", &dir), -2);
    assert_int_equal(ingest_dir_of_if(t, N(t, "L2"), "swp1", &dir), -2);
    topo_free(t);
}

static double T0 = 1000;

static const struct state_flow *flow_of(struct state *s, const char *src, const char *dst, uint16_t sport)
{
    struct state_flow_key k = fx_key(src, dst, sport);
    return state_flow_find(s, &k);
}

/* The path names of a flow, "H1 L1 S3 L2 H3". */
static void path_str(struct state *s, const struct state_flow *f, char *out, size_t len)
{
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS);
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(out + o, len - o, "%s%s", i ? " " : "", s->topo->nodes[topo_dir_from(s->topo, dirs[i])].name);
    if (n > 0)
        snprintf(out + o, len - o, " %s", s->topo->nodes[topo_dir_to(s->topo, dirs[n - 1])].name);
}

static void flow_paths_from_the_reporting_node(void **st)
{
    (void)st;
    struct state s;
    assert_int_equal(state_init(&s, mk_topo(), 1000, 3, T0), 0);
    struct ingest_result res;
    char p[128];
    /* Leaf probe with named interfaces: H1 -> H3 leaves L1 by swp3, so S3. */
    assert_int_equal(fx_post(&s, "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp3\", \"tx_bps\": 5e10}], \"flows\": ["
                              "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791,"
                              " \"if\": \"swp3\", \"bps\": 5e10, \"fat\": true}]}", T0, &res), 0);
    assert_true(res.accepted == 1 && res.flows == 1 && res.links == 1 && res.unmapped_flows == 0);
    const struct state_flow *f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    assert_non_null(f);
    path_str(&s, f, p, sizeof(p));
    assert_string_equal(p, "H1 L1 S3 L2 H3");
    assert_true(f->src_node == N(s.topo, "H1") && f->dst_node == N(s.topo, "H3") && f->path >= 0);
    /* Leaf probe on a generated (unnamed) end: far-end names; H3 -> H1 by S2. */
    assert_int_equal(fx_post(&s, "{\"probe\": \"L2\", \"flows\": [{\"src\": \"10.0.2.1\", \"dst\": \"10.0.1.2\","
                              " \"proto\": 17, \"sport\": 2, \"dport\": 4791, \"if\": \"S2\", \"bps\": 1e9}]}", T0, &res), 0);
    path_str(&s, flow_of(&s, "10.0.2.1", "10.0.1.2", 2), p, sizeof(p));
    assert_string_equal(p, "H3 L2 S2 L1 H2");
    /* Host probe: H2 sees only its uplink; the path is the first of those
     * that start H2 -> L1 (the spine is unknown until a leaf reports). */
    assert_int_equal(fx_post(&s, "{\"probe\": \"H2\", \"flows\": [{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\","
                              " \"proto\": 6, \"sport\": 3, \"if\": \"L1\", \"bps\": 1e9}]}", T0, &res), 0);
    struct state_flow_key k = {.af = 4, .proto = 6, .sport = 3};
    int af;
    tf_addr_parse("10.0.1.2", &af, k.src);
    tf_addr_parse("10.0.2.2", &af, k.dst);
    const struct state_flow *h = state_flow_find(&s, &k);
    assert_non_null(h);
    path_str(&s, h, p, sizeof(p));
    assert_string_equal(p, "H2 L1 S1 L2 H4");
    /* An unknown interface: accepted, counted, the flow keeps no path. */
    assert_int_equal(fx_post(&s, "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.2\","
                              " \"proto\": 17, \"sport\": 4, \"dport\": 4791, \"if\": \"eth9\", \"bps\": 1e9}]}", T0, &res), 0);
    assert_int_equal(res.unmapped_flows, 1);
    assert_int_equal(res.nunmapped, 1);
    assert_string_equal(res.unmapped[0], "eth9");
    assert_int_equal(flow_of(&s, "10.0.1.1", "10.0.2.2", 4)->path, -1);
    /* A steady report (same probe, same egress) keeps the same path. */
    assert_int_equal(fx_post(&s, "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\","
                              " \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp3\", \"bps\": 6e10}]}", T0 + 1, &res), 0);
    f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    path_str(&s, f, p, sizeof(p));
    assert_string_equal(p, "H1 L1 S3 L2 H3");
    assert_true(f->bps == 6e10);
    /* The flow moved (ECMP rehash): the new egress wins over the cache. */
    assert_int_equal(fx_post(&s, "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\","
                              " \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp4\", \"bps\": 6e10}]}", T0 + 2, &res), 0);
    path_str(&s, flow_of(&s, "10.0.1.1", "10.0.2.1", 1), p, sizeof(p));
    assert_string_equal(p, "H1 L1 S4 L2 H3");
    /* An unknown probe fails the batch and changes nothing. */
    assert_int_equal(fx_post(&s, "{\"probe\": \"ZZ\"}", T0, &res), -2);
    state_free(&s);
}

#define FLOW_FMT "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17," \
                 " \"sport\": 7, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 4e10%s}]}"

/* source and sampling: optional, validated, kept in the state. */
static void source_and_sampling(void **st)
{
    (void)st;
    struct ingest_batch *b = test_malloc(sizeof(*b));
    struct ingest_error e;
    char body[512];
    snprintf(body, sizeof(body), FLOW_FMT, "");
    assert_int_equal(ingest_parse(body, strlen(body), 10, b, &e), 0);
    assert_true(b->r[0].flows[0].source == STATE_SRC_PCAP && b->r[0].flows[0].sampling == 1);
    ingest_batch_free(b);
    const char *ok[] = {", \"source\": \"sflow\", \"sampling\": 1000", ", \"source\": \"erspan\", \"sampling\": 1",
                        ", \"sampling\": 1073741824, \"source\": \"pcap\""};
    const int want_src[] = {STATE_SRC_SFLOW, STATE_SRC_ERSPAN, STATE_SRC_PCAP};
    const uint32_t want_n[] = {1000, 1, 1u << 30};
    for (size_t i = 0; i < 3; i++) {
        snprintf(body, sizeof(body), FLOW_FMT, ok[i]);
        assert_int_equal(ingest_parse(body, strlen(body), 10, b, &e), 0);
        assert_int_equal(b->r[0].flows[0].source, want_src[i]);
        assert_int_equal(b->r[0].flows[0].sampling, want_n[i]);
        ingest_batch_free(b);
    }
    struct { const char *extra, *msg; } bad[] = {
        {", \"source\": \"netflow\"", "flows[0].source: 'netflow' is not pcap, erspan or sflow"},
        {", \"source\": \"SFLOW\"", "flows[0].source: 'SFLOW' is not pcap, erspan or sflow"},
        {", \"source\": 3", "flows[0].source: must be a string"},
        {", \"source\": \"\"", "flows[0].source: length 0 not in 1..7"},
        {", \"sampling\": 0", "flows[0].sampling: below minimum 0"},
        {", \"sampling\": -5", "flows[0].sampling: negative -5"},
        {", \"sampling\": 1073741825", "flows[0].sampling: 1073741825 exceeds the maximum 1073741824"},
        {", \"sampling\": 1.5", "flows[0].sampling: must be an integer"},
        {", \"sampling\": 1000.0", "flows[0].sampling: must be an integer"},
        {", \"sampling\": \"1000\"", "flows[0].sampling: must be a number"},
        {", \"sampling\": null", "flows[0].sampling: must be a number"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body), FLOW_FMT, bad[i].extra);
        if (ingest_parse(body, strlen(body), 10, b, &e) != 0 || b->refused.n != 1 || b->r[0].nflows != 0 ||
            strcmp(b->refused.e[0].msg, bad[i].msg) != 0)
            fail_msg("case %zu: '%s'", i, b->refused.e[0].msg);
        ingest_batch_free(b);
    }
    /* In a batch the path says which report. */
    const char *batch = "{\"reports\": [{\"probe\": \"L1\"}, {\"probe\": \"L2\", \"flows\": [{\"src\": \"10.0.1.1\","
                        " \"dst\": \"10.0.2.1\", \"proto\": 17, \"if\": \"S1\", \"bps\": 1, \"sampling\": 0}]}]}";
    assert_int_equal(ingest_parse(batch, strlen(batch), 10, b, &e), 0);
    assert_string_equal(b->refused.e[0].msg, "reports[1].flows[0].sampling: below minimum 0");
    assert_string_equal(b->refused.e[0].path, "reports[1].flows[0].sampling");
    ingest_batch_free(b);
    test_free(b);

    /* Kept in the state, and replaced by the next report of the flow. */
    struct state s;
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, T0), 0);
    snprintf(body, sizeof(body), FLOW_FMT, ", \"source\": \"sflow\", \"sampling\": 4096");
    assert_int_equal(fx_post(&s, body, T0, NULL), 0);
    struct state_flow_key k = fx_key("10.0.1.1", "10.0.2.1", 7);
    const struct state_flow *f = state_flow_find(&s, &k);
    assert_non_null(f);
    assert_true(f->source == STATE_SRC_SFLOW && f->sampling == 4096);
    snprintf(body, sizeof(body), FLOW_FMT, "");
    assert_int_equal(fx_post(&s, body, T0 + 1, NULL), 0);
    assert_true(f->source == STATE_SRC_PCAP && f->sampling == 1);
    state_free(&s);
}

/* More flows than allowed is 413 before any entry is judged (entries that
 * are not even objects), and the bound holds across a batch. */
static void too_many_flows_before_entries(void **st)
{
    (void)st;
    struct ingest_batch *b = test_malloc(sizeof(*b));
    struct ingest_error e;
    const char *body = "{\"probe\": \"L1\", \"flows\": [1, 2, 3, 4]}";
    assert_int_equal(ingest_parse(body, strlen(body), 3, b, &e), -E2BIG);
    assert_int_equal(e.kind, INGEST_TOO_MANY);
    assert_non_null(strstr(e.msg, "flows: 4 entries"));
    assert_int_equal(ingest_parse(body, strlen(body), 4, b, &e), 0); /* each entry refused alone */
    assert_int_equal(b->refused.n, 4);
    assert_string_equal(b->refused.e[0].msg, "flows[0]: must be an object");
    assert_string_equal(b->refused.e[3].path, "flows[3]");
    ingest_batch_free(b);
    const char *batch = "{\"reports\": [{\"probe\": \"L1\", \"flows\": [{}, {}]}, {\"probe\": \"L2\", \"flows\": [{}, {}]}]}";
    assert_int_equal(ingest_parse(batch, strlen(batch), 3, b, &e), -E2BIG); /* the batch's bound */
    assert_int_equal(ingest_parse(batch, strlen(batch), 4, b, &e), 0); /* 4 <= 4: the entries are judged */
    assert_string_equal(b->refused.e[0].msg, "reports[0].flows[0].src: required");
    ingest_batch_free(b);
    test_free(b);
}

/* GET /api/v1/flows says how each rate was measured. */
static void flows_view_shows_estimates(void **st)
{
    (void)st;
    struct state s;
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, T0), 0);
    assert_int_equal(fx_post(&s, "{\"probe\": \"L1\", \"flows\": ["
                              "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"if\": \"swp1\","
                              " \"bps\": 4e10, \"fat\": true, \"source\": \"sflow\", \"sampling\": 1000},"
                              "{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 2, \"if\": \"swp2\","
                              " \"bps\": 3e10, \"fat\": true, \"source\": \"erspan\"},"
                              "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 3, \"if\": \"swp3\","
                              " \"bps\": 2e10}]}", tf_now_real(), NULL), 0);
    const char *args[] = {"limit", "10", NULL};
    json_t *o;
    assert_int_equal(fx_get(&s, "/api/v1/flows", args, &o, NULL), 200);
    json_t *fl = json_object_get(o, "flows");
    assert_int_equal(json_array_size(fl), 3);
    /* Sorted by rate: the sampled one first. */
    struct { const char *source; int sampling; bool estimated; } want[] = {
        {"sflow", 1000, true}, {"erspan", 1, false}, {"pcap", 1, false}};
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(fl, i);
        assert_string_equal(json_string_value(json_object_get(f, "source")), want[i].source);
        assert_int_equal(json_integer_value(json_object_get(f, "sampling")), want[i].sampling);
        assert_true(json_is_boolean(json_object_get(f, "estimated")));
        assert_int_equal(json_is_true(json_object_get(f, "estimated")), want[i].estimated);
    }
    json_decref(o);
    state_free(&s);
}

/* The rebalance moves only flows the probe called fat: a sampled estimate,
 * however high, moves nothing unless the probe (which applies the
 * minimum-samples rule) marked it fat. */
static void sampled_rate_alone_moves_nothing(void **st)
{
    (void)st;
    struct state s;
    struct classes cls;
    struct events ev;
    struct metrics m;
    struct config cfg;
    struct rebalance rb;
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, T0), 0);
    classes_init(&cls);
    s.classes = &cls;
    events_init(&ev);
    metrics_init(&m);
    config_defaults(&cfg);
    rebalance_init(&rb, &s, &ev, &m, NULL, &cfg);
    /* L1 -> S1 at 150%: a 60 Gb/s sFlow estimate the probe did not call fat
     * (too few samples) and a 90 Gb/s captured fat flow. */
#define SAMPLED_REP \
    "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp1\", \"tx_bps\": 1.5e11}], \"flows\": [" \
    "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791," \
    " \"if\": \"swp1\", \"bps\": 6e10, \"fat\": %s, \"source\": \"sflow\", \"sampling\": 100000}," \
    "{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 2, \"dport\": 4791," \
    " \"if\": \"swp1\", \"bps\": 9e10, \"fat\": true}]}"
    char body[1024];
    struct state_flow_key ks = fx_key("10.0.1.1", "10.0.2.1", 1), kc = fx_key("10.0.1.2", "10.0.2.2", 2);
    for (int marked = 0; marked < 2; marked++) {
        snprintf(body, sizeof(body), SAMPLED_REP, marked ? "true" : "false");
        double now = T0 + 100 * marked;
        assert_int_equal(fx_post(&s, body, now, NULL), 0);
        json_t *out = NULL;
        assert_int_equal(rebalance_run(&rb, now, true, &out), 0);
        json_t *moves = json_object_get(out, "moves");
        char sid[24];
        snprintf(sid, sizeof(sid), "%016llx", (unsigned long long)state_flow_find(&s, &ks)->id);
        bool sampled_moved = false;
        for (size_t i = 0; i < json_array_size(moves); i++)
            sampled_moved |= strcmp(json_string_value(json_object_get(json_array_get(moves, i), "flow")), sid) == 0;
        if (!marked) {
            /* Only the captured flow can relieve the link. */
            assert_int_equal(json_array_size(moves), 1);
            assert_false(sampled_moved);
            char cid[24];
            snprintf(cid, sizeof(cid), "%016llx", (unsigned long long)state_flow_find(&s, &kc)->id);
            assert_string_equal(json_string_value(json_object_get(json_array_get(moves, 0), "flow")), cid);
        } else {
            /* Marked fat, it is a candidate like any other. */
            assert_true(json_array_size(moves) >= 1);
        }
        json_decref(out);
    }
    rebalance_destroy(&rb);
    events_destroy(&ev);
    classes_free(&cls);
    state_free(&s);
}


/* ---- per-entry refusals, report times, senders (issue 12) ------------- */

#define NOW 1700000000.0

/* POST through ingest_post, as the daemon's handler does: the status, and
 * the reply in *out (the caller frees it). */
static unsigned post_from(struct state *s, struct events *ev, const struct ingest_opts *o, const char *from,
                          const char *body, double now, json_t **out)
{
    return ingest_post(s, ev, o, from, body, strlen(body), now, out);
}

static const char *jstr(json_t *o, const char *path1, const char *path2)
{
    json_t *v = json_object_get(o, path1);
    return json_string_value(path2 ? json_object_get(v, path2) : v);
}

static bool dir_measured(struct state *s, const char *from, const char *to)
{
    uint32_t dir;
    assert_int_equal(topo_dir_between(s->topo, N(s->topo, from), N(s->topo, to), &dir), 0);
    return s->dirs[dir].measured;
}

/* The reply's refused entries are exactly want (path, message), in order. */
static void assert_refused(json_t *r, const char *const want[][2], size_t n)
{
    json_t *ref = json_object_get(r, "refused");
    assert_int_equal(json_array_size(ref), n);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(ref, i);
        assert_string_equal(jstr(e, "path", NULL), want[i][0]);
        assert_string_equal(jstr(e, "message", NULL), want[i][1]);
    }
}

/* One value out of bounds (a sampling rate of 2^32-1, a flow rate no link
 * could carry, a drop counter that jumped) costs its entry, never the
 * report: the rest applies, and the reply names each entry by its path. */
static void bad_entry_not_whole_report(void **st)
{
    (void)st;
    struct state s;
    struct ingest_opts o = {.max_flows = 100, .check_ts = true, .clock_skew = 5};
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    const char *body =
        "{\"probe\": \"L1\", \"ts\": 1699999999.5, \"interval_s\": 1, \"links\": ["
        "{\"if\": \"swp1\", \"tx_bps\": 5e10, \"drops\": 0},"
        "{\"if\": \"swp2\", \"tx_bps\": 1e10, \"drops\": 2000000000},"
        "{\"if\": \"swp3\", \"tx_bps\": 3e11}],"
        " \"flows\": ["
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 5e10},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 2, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 1e9,"
        " \"source\": \"sflow\", \"sampling\": 4294967295},"
        "{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 3, \"dport\": 4791, \"if\": \"swp2\", \"bps\": 4e11}]}";
    json_t *r;
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", body, NOW, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "accepted")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "flows")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "links")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "refused_entries")), 4);
    /* Parse-time refusals first (in the body's order), then the topology's. */
    const char *want[][2] = {
        {"flows[1].sampling", "flows[1].sampling: 4294967295 exceeds the maximum 1073741824"},
        {"links[1].drops", "links[1].drops: 2e+09 beyond the bound 5.95238e+08 (2 times what L1 -> S2 carries at 100 "
                           "Gb/s, in packets of the interval, both ways)"},
        {"links[2].tx_bps", "links[2].tx_bps: 3e+11 beyond the bound 2e+11 (2 times what L1 -> S3 carries at 100 Gb/s)"},
        {"flows[2].bps", "flows[2].bps: 4e+11 beyond the bound 2e+11 (2 times what L1 -> S2 carries at 100 Gb/s)"},
    };
    assert_refused(r, want, TF_ARRAY_SIZE(want));
    json_decref(r);
    /* Applied: the good flow and link; the refused ones left no trace. */
    assert_non_null(flow_of(&s, "10.0.1.1", "10.0.2.1", 1));
    assert_null(flow_of(&s, "10.0.1.1", "10.0.2.1", 2));
    assert_null(flow_of(&s, "10.0.1.2", "10.0.2.2", 3));
    assert_true(dir_measured(&s, "L1", "S1"));
    assert_false(dir_measured(&s, "L1", "S2"));
    assert_false(dir_measured(&s, "L1", "S3"));
    assert_int_equal(s.probes[N(s.topo, "L1")].reports, 1);
    assert_int_equal(s.entries_refused, 4);
    /* The same bound at exactly twice the link: taken. */
    const char *edge = "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17,"
                       " \"sport\": 3, \"if\": \"swp2\", \"bps\": 2e11}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", edge, NOW + 1, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "refused_entries")), 0);
    json_decref(r);
    /* In a batch the path names the report; the structure still refuses all. */
    const char *batch = "{\"reports\": [{\"probe\": \"L2\"}, {\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.1\","
                        " \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 9, \"if\": \"swp4\", \"bps\": 1e12}]}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", batch, NOW + 2, &r), 200);
    assert_string_equal(jstr(json_array_get(json_object_get(r, "refused"), 0), "path", NULL),
                        "reports[1].flows[0].bps");
    json_decref(r);
    const char *structural[][3] = {
        {"{\"probe\": \"L1\", \"links\": {}}", "400", "links: must be an array"},
        {"{\"probe\": \"L1\", \"schema\": 2}", "400", "report.schema: 2 is not a schema this controller reads (1)"},
        {"{\"flows\": []}", "400", "report.probe: required"},
        {"{\"probe\": \"L1\", ", "400", "'}' expected"},
    };
    for (size_t i = 0; i < 4; i++) {
        unsigned status = post_from(&s, NULL, &o, "192.0.2.1", structural[i][0], NOW + 3, &r);
        if (status != (unsigned)atoi(structural[i][1]) || !strstr(jstr(r, "error", "message"), structural[i][2]))
            fail_msg("structural %zu: %u %s", i, status, jstr(r, "error", "message"));
        json_decref(r);
    }
    state_free(&s);
}

/* Gray-failure signals (issue 18): the flow's retx_pkts, psn_oos, naks and
 * the link's errors, carrier_changes are read and stored as the counts of
 * the last report (absent: 0); a count a flow or link cannot have (above
 * the flow's pkts, a carrier flapping faster than REPORTSPEC_MAX_CARRIER_HZ,
 * errors beyond what the link carries, a negative count) costs its entry. */
/* A report under 0.4 of its probe's last interval (the flush of a stopping
 * probe, 0.13-0.16 s in the lab) keeps the rates of the flows it knows: they
 * read far off their rate and a round on them moved settled flows again. A
 * flow it brings first is taken with its rate; the next whole interval
 * updates as before. Half an interval, a few ms short (tierflow-probe's look
 * at mid-interval), is a whole report. */
static void partial_interval_keeps_rates(void **st)
{
    (void)st;
    struct state s;
    struct ingest_result res;
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    const struct {
        double ivl;
        int sport;
        double bps;
        const char *fat;
        double want;
        const char *partial;
    } step[] = {{1, 1, 4e9, "true", 4e9, "false"},   {0.15, 1, 7e9, "false", 4e9, "false"},
                {0.15, 2, 2e9, "true", 2e9, "false"}, {1, 1, 3e9, "true", 3e9, "false"},
                {0.6, 1, 5e9, "true", 5e9, "false"},  {1, 1, 6e9, "true", 6e9, "false"},
                {0.498, 1, 5.5e9, "true", 5.5e9, "false"}, {1, 1, 6e9, "true", 6e9, "false"},
                /* said partial, at any length; and not the last interval the
                 * rule compares with (0.35 is under 0.4 of 1, not of 0.3) */
                {1, 1, 9e9, "true", 6e9, "true"},     {0.3, 1, 9e9, "true", 6e9, "true"},
                {0.35, 1, 9e9, "true", 6e9, "false"}};
    uint32_t dir;
    assert_int_equal(ingest_dir_of_if(s.topo, topo_node_by_name(s.topo, "L1"), "swp1", &dir), 0);
    for (size_t i = 0; i < TF_ARRAY_SIZE(step); i++) {
        /* The link's counters say twice the flow: a partial report's rate
         * is kept like the flow's, its errors are not. */
        char body[640];
        snprintf(body, sizeof(body),
                 "{\"probe\": \"L1\", \"interval_s\": %g, \"partial\": %s, \"links\": [{\"if\": \"swp1\", \"tx_bps\": %g,"
                 " \"errors\": %zu}], \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\","
                 " \"proto\": 17, \"sport\": %d, \"dport\": 4791, \"if\": \"swp1\", \"bps\": %g, \"fat\": %s}]}",
                 step[i].ivl, step[i].partial, 2 * step[i].bps, i, step[i].sport, step[i].bps, step[i].fat);
        assert_int_equal(fx_post(&s, body, NOW + (double)i, &res), 0);
        const struct state_flow *f = flow_of(&s, "10.0.1.1", "10.0.2.1", (uint16_t)step[i].sport);
        assert_non_null(f);
        assert_true(f->bps == step[i].want);
        assert_true(f->fat);
        assert_true(s.dirs[dir].bps == 2 * step[i].want);
        assert_int_equal(s.dirs[dir].errors, i);
    }
    state_free(&s);
}

/* A flow a takeover adopted from the backend (rebalance_adopt inserts it
 * before any report) is first seen at its first report, as a flow a report
 * inserts: seen_since starts there and stays (it once stayed 0, and such a
 * flow could never be taken for starved). */
static void adopted_flow_seen_at_first_report(void **st)
{
    (void)st;
    struct state s;
    struct ingest_result res;
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    bool inserted;
    struct state_flow_key k = fx_key("10.0.1.1", "10.0.2.1", 1);
    const struct state_flow *f = state_flow_upsert(&s, &k, &inserted);
    assert_non_null(f);
    assert_true(inserted);
    assert_true(f->seen_since <= 0);
    const char *body = "{\"probe\": \"L1\", \"interval_s\": 1, \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": "
                       "\"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 3e9}]}";
    assert_int_equal(fx_post(&s, body, NOW + 5, &res), 0);
    f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    assert_true(f->seen_since == NOW + 5);
    assert_int_equal(fx_post(&s, body, NOW + 6, &res), 0);
    assert_true(f->seen_since == NOW + 5);
    state_free(&s);
}

static void gray_signals_stored(void **st)
{
    (void)st;
    struct state s;
    struct ingest_opts o = {.max_flows = 100, .check_ts = true, .clock_skew = 5};
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    const char *body =
        "{\"probe\": \"L1\", \"ts\": 1699999999.5, \"interval_s\": 2, \"links\": ["
        "{\"if\": \"swp1\", \"tx_bps\": 5e10, \"errors\": 17, \"carrier_changes\": 4},"
        "{\"if\": \"swp2\", \"tx_bps\": 1e10},"
        "{\"if\": \"swp3\", \"tx_bps\": 1e10, \"carrier_changes\": 2001},"
        "{\"if\": \"swp4\", \"tx_bps\": 1e10, \"errors\": 2000000000}],"
        " \"flows\": ["
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 5e10, \"pkts\": 1000, \"retx_pkts\": 7, \"tail_retx\": 4, \"psn_oos\": 5, \"naks\": 3},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 2, \"dport\": 4791, \"if\": \"swp2\","
        " \"bps\": 1e9, \"pkts\": 10},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 3, \"dport\": 4791, \"if\": \"swp2\","
        " \"bps\": 1e9, \"pkts\": 10, \"retx_pkts\": 11},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 4, \"dport\": 4791, \"if\": \"swp2\","
        " \"bps\": 1e9, \"naks\": 1},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 5, \"dport\": 4791, \"if\": \"swp2\","
        " \"bps\": 1e9, \"pkts\": 10, \"psn_oos\": -1},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 6, \"sport\": 6, \"dport\": 5201, \"if\": \"swp2\","
        " \"bps\": 1e9, \"pkts\": 10, \"retx_pkts\": 2, \"tail_retx\": 3}]}";
    json_t *r;
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", body, NOW, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "flows")), 2);
    assert_int_equal(json_integer_value(json_object_get(r, "links")), 2);
    const char *want[][2] = {
        {"flows[2].retx_pkts", "flows[2].retx_pkts: 11 exceeds the flow's pkts 10"},
        {"flows[3].naks", "flows[3].naks: 1 exceeds the flow's pkts 0"},
        {"flows[4].psn_oos", "flows[4].psn_oos: negative -1"},
        {"flows[5].tail_retx", "flows[5].tail_retx: 3 exceeds the flow's retx_pkts 2"},
        {"links[2].carrier_changes",
         "links[2].carrier_changes: 2001 beyond the bound 2000 (1000 per second over the interval of 2 s)"},
        {"links[3].errors", "links[3].errors: 2e+09 beyond the bound 1.19048e+09 (2 times what L1 -> S4 carries at "
                            "100 Gb/s, in packets of the interval, both ways)"},
    };
    assert_refused(r, want, TF_ARRAY_SIZE(want));
    json_decref(r);
    const struct state_flow *f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    assert_non_null(f);
    assert_true(f->retx_pkts == 7 && f->tail_retx == 4 && f->psn_oos == 5 && f->naks == 3);
    f = flow_of(&s, "10.0.1.1", "10.0.2.1", 2);
    assert_true(f->retx_pkts == 0 && f->tail_retx == 0 && f->psn_oos == 0 && f->naks == 0);
    uint32_t d1, d2;
    assert_int_equal(topo_dir_between(s.topo, N(s.topo, "L1"), N(s.topo, "S1"), &d1), 0);
    assert_int_equal(topo_dir_between(s.topo, N(s.topo, "L1"), N(s.topo, "S2"), &d2), 0);
    assert_true(s.dirs[d1].errors == 17 && s.dirs[d1].carrier_changes == 4);
    assert_true(s.dirs[d2].errors == 0 && s.dirs[d2].carrier_changes == 0);
    assert_false(dir_measured(&s, "L1", "S3"));
    /* The counts are the last report's, not a sum: a clean interval clears them. */
    const char *clean = "{\"probe\": \"L1\", \"ts\": 1700000000.5, \"interval_s\": 1, \"links\": ["
                        "{\"if\": \"swp1\", \"tx_bps\": 5e10}], \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\","
                        " \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 5e10, \"pkts\": 2000}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", clean, NOW + 1, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "refused_entries")), 0);
    json_decref(r);
    f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    assert_true(f->retx_pkts == 0 && f->tail_retx == 0 && f->psn_oos == 0 && f->naks == 0);
    assert_true(s.dirs[d1].errors == 0 && s.dirs[d1].carrier_changes == 0);
    state_free(&s);
}

static double queue_delay_of(struct state *s, const char *from, const char *to, bool standing, double now)
{
    uint32_t d;
    assert_int_equal(topo_dir_between(s->topo, N(s->topo, from), N(s->topo, to), &d), 0);
    return state_dir_queue_delay(s, d, standing, now);
}

/* qdisc_backlog (docs/telemetry.md): stored as the time the link takes to
 * send it (bytes x 8 / capacity), from the sender's own report only (the
 * far end's rx_bps does not see the queue; a report without it says
 * nothing of the queue); standing, the smaller of the last two reports'.
 * A backlog of more than REPORTSPEC_MAX_QUEUE_S of the link is refused,
 * naming the entry. */
static void backlog_stored_as_delay(void **st)
{
    (void)st;
    struct state s;
    struct ingest_opts o = {.max_flows = 100, .check_ts = true, .clock_skew = 5};
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    /* 62.5 MB on 100 Gb/s: 5 ms; 2e11 B is 16 s of it. */
    const char *body = "{\"probe\": \"L1\", \"ts\": 1699999999.5, \"interval_s\": 1, \"links\": ["
                       "{\"if\": \"swp1\", \"tx_bps\": 5e10, \"rx_bps\": 1e10, \"qdisc_drops\": 0,"
                       " \"qdisc_backlog\": 62500000},"
                       "{\"if\": \"swp2\", \"tx_bps\": 1e10, \"qdisc_drops\": 0},"
                       "{\"if\": \"swp3\", \"tx_bps\": 1e10, \"qdisc_backlog\": 200000000000}]}";
    json_t *r;
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", body, NOW, &r), 200);
    const char *want[][2] = {
        {"links[2].qdisc_backlog",
         "links[2].qdisc_backlog: 200000000000 beyond the bound 1.25e+11 (10 s of what L1 -> S3 carries at 100 Gb/s)"},
    };
    assert_refused(r, want, TF_ARRAY_SIZE(want));
    json_decref(r);
    assert_true(fabs(queue_delay_of(&s, "L1", "S1", false, NOW) - 0.005) < 1e-12);
    assert_true(queue_delay_of(&s, "L1", "S1", true, NOW) == -1);    /* one report: not yet standing */
    assert_true(queue_delay_of(&s, "L1", "S2", false, NOW) == -1);   /* no backlog given */
    assert_true(queue_delay_of(&s, "L1", "S3", false, NOW) == -1);   /* refused */
    assert_true(queue_delay_of(&s, "S1", "L1", false, NOW) == -1);   /* the far end's rx: upstream of its queue */
    const char *next = "{\"probe\": \"L1\", \"ts\": 1700000000.5, \"interval_s\": 1, \"links\": ["
                       "{\"if\": \"swp1\", \"tx_bps\": 5e10, \"qdisc_backlog\": 25000000}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", next, NOW + 1, &r), 200);
    json_decref(r);
    assert_true(fabs(queue_delay_of(&s, "L1", "S1", false, NOW + 1) - 0.002) < 1e-12);
    assert_true(fabs(queue_delay_of(&s, "L1", "S1", true, NOW + 1) - 0.002) < 1e-12);
    /* The probe's view of S1's queue: S1 -> L1 from S1's own report, then
     * L1's rx no longer replaces it (nor its delay). */
    const char *s1 = "{\"probe\": \"S1\", \"ts\": 1700000000.6, \"interval_s\": 1, \"links\": ["
                     "{\"if\": \"swp1\", \"tx_bps\": 1e10, \"qdisc_backlog\": 125000000}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.2", s1, NOW + 1, &r), 200);
    json_decref(r);
    assert_true(fabs(queue_delay_of(&s, "S1", "L1", false, NOW + 1) - 0.01) < 1e-12);
    /* A report without the member: unknown, not an empty queue. */
    const char *bare = "{\"probe\": \"L1\", \"ts\": 1700000001.5, \"interval_s\": 1, \"links\": ["
                       "{\"if\": \"swp1\", \"tx_bps\": 5e10, \"rx_bps\": 1e10}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", bare, NOW + 2, &r), 200);
    json_decref(r);
    assert_true(queue_delay_of(&s, "L1", "S1", false, NOW + 2) == -1);
    assert_true(fabs(queue_delay_of(&s, "S1", "L1", false, NOW + 2) - 0.01) < 1e-12);
    /* Stale: unknown. */
    assert_true(queue_delay_of(&s, "S1", "L1", false, NOW + 60) == -1);
    state_free(&s);
}

/* Holes at an arrival (docs/telemetry.md): stored with the direction the
 * flow arrived by (the reverse of the one leaving by in_if) and the report's
 * time, one slot per arrival direction, the next report's replacing it;
 * holes and in_if come together, and holes are bounded by pkts. */
static void holes_stored(void **st)
{
    (void)st;
    struct state s;
    struct ingest_opts o = {.max_flows = 100, .check_ts = true, .clock_skew = 5};
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    const char *body =
        "{\"probe\": \"L1\", \"ts\": 1699999999.5, \"interval_s\": 1, \"flows\": ["
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 5e10, \"pkts\": 1000, \"holes\": 9, \"in_if\": \"swp2\"},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 2, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 1e9, \"pkts\": 10, \"holes\": 3},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 3, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 1e9, \"pkts\": 10, \"in_if\": \"swp2\"},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 4, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 1e9, \"pkts\": 10, \"holes\": 11, \"in_if\": \"swp2\"},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 5, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 1e9, \"pkts\": 10, \"holes\": 0, \"in_if\": \"swp3\"}]}";
    json_t *r;
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", body, NOW, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "flows")), 2);
    const char *want[][2] = {
        {"flows[1].holes", "flows[1].holes: given without in_if"},
        {"flows[2].in_if", "flows[2].in_if: given without holes"},
        {"flows[3].holes", "flows[3].holes: 11 exceeds the flow's pkts 10"},
    };
    assert_refused(r, want, TF_ARRAY_SIZE(want));
    json_decref(r);
    uint32_t s2l1, s3l1;
    assert_int_equal(topo_dir_between(s.topo, N(s.topo, "S2"), N(s.topo, "L1"), &s2l1), 0);
    assert_int_equal(topo_dir_between(s.topo, N(s.topo, "S3"), N(s.topo, "L1"), &s3l1), 0);
    const struct state_flow *f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    assert_non_null(f);
    assert_int_equal(f->arr[0].dir, s2l1);
    assert_int_equal(f->arr[0].holes, 9);
    assert_true(f->arr[0].ts == 1699999999.5);
    assert_true(f->arr[1].ts == 0);
    f = flow_of(&s, "10.0.1.1", "10.0.2.1", 5);
    assert_true(f->arr[0].dir == s3l1 && f->arr[0].holes == 0 && f->arr[0].ts > 0);
    /* The next interval's report of the same arrival replaces it. */
    const char *next =
        "{\"probe\": \"L1\", \"ts\": 1700000000.5, \"interval_s\": 1, \"flows\": ["
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"if\": \"swp1\","
        " \"bps\": 5e10, \"pkts\": 2000, \"holes\": 2, \"in_if\": \"swp2\"}]}";
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", next, NOW + 1, &r), 200);
    json_decref(r);
    f = flow_of(&s, "10.0.1.1", "10.0.2.1", 1);
    assert_true(f->arr[0].dir == s2l1 && f->arr[0].holes == 2 && f->arr[0].ts == 1700000000.5);
    assert_true(f->arr[1].ts == 0);
    state_free(&s);
}

/* A report's `ts` against the controller's clock: too old (the staleness
 * window plus the skew allowed), ahead by more than the skew, or older
 * than the last applied under its name is refused whole, saying why;
 * without ts a report is taken as of now, and counted. */
static void report_times(void **st)
{
    (void)st;
    struct state s;
    struct ingest_opts o = {.max_flows = 100, .check_ts = true, .clock_skew = 5};
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    const uint32_t l1 = N(s.topo, "L1");
    char body[256];
    json_t *r;
#define TS_REP(ts) (snprintf(body, sizeof(body), "{\"probe\": \"L1\", \"ts\": %.3f, \"links\": [{\"if\": \"swp1\"," \
                             " \"tx_bps\": 1e9}]}", (ts)), body)
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", TS_REP(NOW - 1), NOW, &r), 200);
    json_decref(r);
    struct { double ts; unsigned status; const char *code, *msg; } bad[] = {
        {NOW - 100, 422, "stale_report", "report.ts: 1699999900.000 is 100.0 s old, beyond the staleness window (3 s, "
                                         "plus ingest.clock_skew 5 s): not applied as current"},
        {NOW + 60, 422, "future_report", "report.ts: 1700000060.000 is 60.0 s ahead of the controller's clock "
                                         "(ingest.clock_skew allows 5 s)"},
        {NOW - 2, 409, "out_of_order", "report.ts: 1699999998.000 is older than the last report applied for 'L1' "
                                       "(1699999999.000, 1.000 s later): not applied over it"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        unsigned status = post_from(&s, NULL, &o, "192.0.2.1", TS_REP(bad[i].ts), NOW, &r);
        if (status != bad[i].status || strcmp(jstr(r, "error", "code"), bad[i].code) ||
            strcmp(jstr(r, "error", "message"), bad[i].msg))
            fail_msg("case %zu: %u %s: %s", i, status, jstr(r, "error", "code"), jstr(r, "error", "message"));
        json_decref(r);
    }
    assert_int_equal(s.probes[l1].reports, 1); /* none of them applied */
    assert_int_equal(s.ingest_refused[INGEST_STALE], 1);
    assert_int_equal(s.ingest_refused[INGEST_FUTURE], 1);
    assert_int_equal(s.ingest_refused[INGEST_OUT_OF_ORDER], 1);
    /* Within the skew: ahead by 4 s is taken, and then sets the order. */
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", TS_REP(NOW + 4), NOW, &r), 200);
    json_decref(r);
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", TS_REP(NOW + 3), NOW + 1, &r), 409);
    json_decref(r);
    /* Without ts: as of now, counted. */
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", "{\"probe\": \"L1\"}", NOW + 2, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "no_ts")), 1);
    json_decref(r);
    assert_int_equal(s.reports_no_ts, 1);
    /* A batch: the stale report is left out, the other applies (200). */
    snprintf(body, sizeof(body), "{\"reports\": [{\"probe\": \"L2\", \"ts\": %.3f}, {\"probe\": \"S1\", \"ts\": %.3f}]}",
             NOW - 50, NOW + 2);
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", body, NOW + 2, &r), 200);
    assert_int_equal(json_integer_value(json_object_get(r, "accepted")), 1);
    json_t *rr = json_array_get(json_object_get(r, "refused_reports"), 0);
    assert_int_equal(json_integer_value(json_object_get(rr, "index")), 0);
    assert_string_equal(jstr(rr, "probe", NULL), "L2");
    assert_string_equal(jstr(rr, "code", NULL), "stale_report");
    assert_non_null(strstr(jstr(rr, "message", NULL), "reports[0].ts: "));
    json_decref(r);
    assert_int_equal(s.probes[N(s.topo, "L2")].reports, 0);
    assert_int_equal(s.probes[N(s.topo, "S1")].reports, 1);
    /* ingest.timestamps ignore (replaying a capture): any age is taken. */
    o.check_ts = false;
    assert_int_equal(post_from(&s, NULL, &o, "192.0.2.1", TS_REP(NOW - 1e6), NOW + 3, &r), 200);
    json_decref(r);
    /* The configuration's keys give the options. */
    struct config cfg;
    config_defaults(&cfg);
    ingest_opts_from_config(&cfg, &o);
    assert_true(o.check_ts && o.clock_skew == 5 && o.max_flows == (size_t)cfg.max_flows_per_report);
    char err[128];
    assert_int_equal(config_set_str(&cfg, "ingest.timestamps", "ignore", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&cfg, "ingest.clock_skew", "0.5", err, sizeof(err)), 0);
    ingest_opts_from_config(&cfg, &o);
    assert_true(!o.check_ts && o.clock_skew == 0.5);
    assert_true(config_set_str(&cfg, "ingest.timestamps", "maybe", err, sizeof(err)) < 0);
    assert_true(config_set_str(&cfg, "ingest.clock_skew", "-1", err, sizeof(err)) < 0);
    state_free(&s);
}

static size_t nevents(struct events *ev, const char *kind)
{
    size_t n = 0;
    json_t *j = events_json(ev, 0, EVENTS_MAX), *a = json_object_get(j, "events");
    for (size_t i = 0; i < json_array_size(a); i++)
        n += strcmp(jstr(json_array_get(a, i), "kind", NULL), kind) == 0;
    json_decref(j);
    return n;
}

/* A state on the fixture's topology, its events, and checked ingest options. */
static struct ingest_opts checked_state(struct state *s, struct events *ev)
{
    events_init(ev);
    assert_int_equal(state_init(s, fx_topo(), 1000, 3, NOW), 0);
    return (struct ingest_opts){.max_flows = 100, .check_ts = true, .clock_skew = 5};
}

/* Two senders under one probe name: the first keeps it while it is fresh,
 * the second is refused (409) with the reason, one probe_conflict event
 * for it, and the link they disagree on no longer flips on each report.
 * Once the holder has been silent for the staleness window, the other
 * takes the name over. A report's `instance` tells two processes on one
 * address apart. */
static void two_senders_one_name(void **st)
{
    (void)st;
    struct state s;
    struct events ev;
    struct ingest_opts o = checked_state(&s, &ev);
    uint32_t dir;
    assert_int_equal(topo_dir_between(s.topo, N(s.topo, "L1"), N(s.topo, "S1"), &dir), 0);
    const char *up = "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp1\", \"tx_bps\": 1e9, \"oper\": \"up\"}]}";
    const char *down = "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp1\", \"tx_bps\": 1e9, \"oper\": \"down\"}]}";
    json_t *r;
    for (int i = 0; i < 6; i++) {
        double now = NOW + 0.5 * i;
        assert_int_equal(post_from(&s, &ev, &o, "192.0.2.1", up, now, &r), 200);
        json_decref(r);
        assert_true(s.dirs[dir].up);
        assert_int_equal(post_from(&s, &ev, &o, "192.0.2.2", down, now + 0.25, &r), 409);
        if (i == 0) {
            assert_string_equal(jstr(r, "error", "code"), "probe_conflict");
            assert_string_equal(jstr(r, "error", "message"),
                                "report.probe: 'L1' is reported by 192.0.2.1 (last 0.2 s ago); reports from 192.0.2.2 "
                                "under it are refused until that sender has been silent for 3 s");
        }
        json_decref(r);
        assert_true(s.dirs[dir].up); /* never flipped */
    }
    assert_int_equal(nevents(&ev, "probe_conflict"), 1);
    assert_int_equal(nevents(&ev, "link_down"), 0);
    assert_int_equal(s.probe_conflicts, 1);
    assert_int_equal(s.ingest_refused[INGEST_CONFLICT], 6);
    /* A third sender is another conflict. */
    assert_int_equal(post_from(&s, &ev, &o, "2001:db8::3", down, NOW + 3, &r), 409);
    json_decref(r);
    assert_int_equal(nevents(&ev, "probe_conflict"), 2);
    /* The holder goes silent: after the staleness window the other takes over. */
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.2", down, NOW + 2.5 + 3.1, &r), 200);
    json_decref(r);
    assert_false(s.dirs[dir].up);
    assert_string_equal(s.probes[N(s.topo, "L1")].sender, "192.0.2.2");
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.1", up, NOW + 6, &r), 409);
    json_decref(r);
    /* One address, two instances: two senders. */
    const char *a = "{\"probe\": \"L2\", \"instance\": \"boot-1 pid-10\"}", *b = "{\"probe\": \"L2\", \"instance\": \"b\"}";
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.9", a, NOW + 7, &r), 400); /* a space is not a name character */
    json_decref(r);
    a = "{\"probe\": \"L2\", \"instance\": \"boot-1.pid-10\"}";
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.9", a, NOW + 7, &r), 200);
    json_decref(r);
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.9", b, NOW + 7.5, &r), 409);
    assert_non_null(strstr(jstr(r, "error", "message"), "'L2' is reported by 192.0.2.9 boot-1.pid-10"));
    json_decref(r);
    /* Without a sender (ingest_apply, tests, tools) nothing is checked. */
    assert_int_equal(fx_post(&s, up, NOW + 8, NULL), 0);
    /* The counters, as /metrics shows them. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ingest_metrics(&s, f);
    fclose(f);
    assert_non_null(strstr(text, "tierflow_report_refusals_total{reason=\"probe_conflict\"} 9\n"));
    assert_non_null(strstr(text, "tierflow_report_refusals_total{reason=\"bad_field\"} 1\n"));
    assert_non_null(strstr(text, "tierflow_probe_conflicts_total 4\n"));
    assert_non_null(strstr(text, "# TYPE tierflow_report_entries_refused_total counter\n"));
    free(text);
    events_destroy(&ev);
    state_free(&s);
}

/* Every refusal is logged with the probe, the sender and the reason, and
 * a sender refused again and again gets one line a minute, which says how
 * many it held back. */
/* A link its probe reports back up is held off for link_holddown (both
 * directions), and the link_up event says so; a tick past it frees it. */
static void probe_return_held_down(void **st)
{
    (void)st;
    struct state s;
    struct events ev;
    struct ingest_opts o = checked_state(&s, &ev);
    s.link_holddown = 3;
    uint32_t dir;
    assert_int_equal(topo_dir_between(s.topo, N(s.topo, "L1"), N(s.topo, "S1"), &dir), 0);
    const char *up = "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp1\", \"tx_bps\": 1e9, \"oper\": \"up\"}]}";
    const char *down = "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp1\", \"tx_bps\": 0, \"oper\": \"down\"}]}";
    json_t *r;
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.1", up, NOW, &r), 200);
    json_decref(r);
    assert_true(s.dirs[dir].up);   /* up from the start: nothing to hold */
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.1", down, NOW + 1, &r), 200);
    json_decref(r);
    assert_false(s.dirs[dir].up || s.dirs[dir ^ 1].up);
    assert_string_equal(state_dir_down_reason(&s, dir, NOW + 1), "probe");
    assert_int_equal(post_from(&s, &ev, &o, "192.0.2.1", up, NOW + 2, &r), 200);
    json_decref(r);
    assert_true(fx_has_event(&ev, "link_up", "L1 -> S1 (L1 swp1) reported up; usable after 3.0 s hold-down"));
    assert_false(s.dirs[dir].up || s.dirs[dir ^ 1].up);
    assert_string_equal(state_dir_down_reason(&s, dir, NOW + 2), "holddown");
    assert_string_equal(state_dir_down_reason(&s, dir ^ 1, NOW + 2), "holddown");
    state_tick(&s, NOW + 4.9, NULL, NULL);
    assert_false(s.dirs[dir].up);
    state_tick(&s, NOW + 5.1, NULL, NULL);
    assert_true(s.dirs[dir].up && s.dirs[dir ^ 1].up);
    state_free(&s);
    events_destroy(&ev);
}

static void refusals_logged_once_a_minute(void **st)
{
    (void)st;
    struct state s;
    struct ingest_opts o = {.max_flows = 100, .check_ts = true, .clock_skew = 5};
    assert_int_equal(state_init(&s, fx_topo(), 1000, 3, NOW), 0);
    char path[] = "/tmp/test_ingest_log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    json_t *r;
    for (int i = 0; i < 30; i++) { /* 30 s of one refused report a second */
        assert_int_equal(post_from(&s, NULL, &o, "198.51.100.7", "{\"probe\": \"S9\"}", NOW + i, &r), 400);
        json_decref(r);
    }
    assert_int_equal(post_from(&s, NULL, &o, "198.51.100.7", "{\"probe\": \"S9\"}", NOW + 61, &r), 400);
    json_decref(r);
    assert_int_equal(post_from(&s, NULL, &o, "198.51.100.8", "{\"probe\": ", NOW + 62, &r), 400);
    json_decref(r);
    const char *entries = "{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17,"
                          " \"if\": \"swp1\", \"bps\": -1}]}";
    assert_int_equal(post_from(&s, NULL, &o, "198.51.100.9", entries, NOW + 63, &r), 200);
    json_decref(r);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    unlink(path);
    close(fd);
    size_t lines = 0;
    for (const char *p = text; (p = strstr(p, "report refused")); p++)
        lines++;
    if (lines != 3 ||
        !strstr(text, "report refused (400 bad_request): probe S9 from 198.51.100.7: probe: 'S9' is not a node of "
                      "topology") ||
        !strstr(text, "(29 more like it since the last line)") ||
        !strstr(text, "report refused (400 bad_json): probe ? from 198.51.100.8: ") ||
        !strstr(text, "report of probe L1 from 198.51.100.9: 1 entry refused, the rest applied: flows[0].bps: "
                      "negative -1"))
        fail_msg("%zu lines:\n%s", lines, text);
    free(text);
    state_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(syntax_errors_have_a_place),
        cmocka_unit_test(parse_every_field), cmocka_unit_test(if_maps_to_link_direction),
        cmocka_unit_test(flow_paths_from_the_reporting_node), cmocka_unit_test(source_and_sampling),
        cmocka_unit_test(too_many_flows_before_entries), cmocka_unit_test(flows_view_shows_estimates),
        cmocka_unit_test(sampled_rate_alone_moves_nothing), cmocka_unit_test(bad_entry_not_whole_report),
        cmocka_unit_test(partial_interval_keeps_rates), cmocka_unit_test(adopted_flow_seen_at_first_report),
        cmocka_unit_test(gray_signals_stored),
        cmocka_unit_test(holes_stored), cmocka_unit_test(backlog_stored_as_delay),
        cmocka_unit_test(report_times), cmocka_unit_test(two_senders_one_name),
        cmocka_unit_test(refusals_logged_once_a_minute), cmocka_unit_test(probe_return_held_down),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
