/* ingest: the JSON scanner (syntax errors with their place, escapes, UTF-8,
 * depth), report parsing (every field, batches, unknown and duplicate keys),
 * and mapping: a probe's `if` to the link direction leaving its node (by
 * interface name, or by the far end's name where the topology has none), and
 * a flow's path derived from the node that reported it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/ingest.h"
#include "controller/jscan.h"
#include "controller/state.h"
#include "policy/topo.h"
#include "tests/unit/ctl_fixture.h"

static void jscan_errors_have_a_place(void **st)
{
    (void)st;
    struct { const char *text; int line, column; const char *what; } bad[] = {
        {"{\"probe\":\n  x}", 2, 3, "invalid token"},
        {"{\"a\":1,}", 1, 8, "string or '}' expected"},
        {"[1 2]", 1, 4, "',' or ']' expected"},
        {"{\"a\" 1}", 1, 6, "':' expected"},
        {"\"\\q\"", 1, 2, "invalid escape"},
        {"\"a\x01\"", 1, 3, "control character"},
        {"\"\xc3\x28\"", 1, 2, "invalid UTF-8"},
        {"\"\\ud800\"", 1, 8, "surrogate"},
        {"01", 1, 2, "end of input expected"},
        {"-", 1, 2, "invalid number"},
        {"1.", 1, 3, "invalid number"},
        {"{} {}", 1, 4, "end of input expected"},
        {"", 1, 1, "unexpected end"},
        {"{\"a\":[", 1, 7, "unexpected end"},
        {"\"abc", 1, 5, "unterminated"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct jscan_err e;
        assert_int_equal(jscan_validate(bad[i].text, strlen(bad[i].text), &e), -22);
        if (e.line != bad[i].line || e.column != bad[i].column || !strstr(e.text, bad[i].what))
            fail_msg("case %zu '%s': got %d:%d '%s'", i, bad[i].text, e.line, e.column, e.text);
    }
    char deep[2 * JSCAN_MAX_DEPTH + 8];
    memset(deep, '[', JSCAN_MAX_DEPTH + 1);
    memset(deep + JSCAN_MAX_DEPTH + 1, ']', JSCAN_MAX_DEPTH + 1);
    struct jscan_err e;
    assert_int_equal(jscan_validate(deep, 2 * JSCAN_MAX_DEPTH + 2, &e), -22);
    assert_non_null(strstr(e.text, "deep"));
    assert_int_equal(jscan_validate(deep + 1, 2 * JSCAN_MAX_DEPTH, &e), 0);
}

static void jscan_pulls_values(void **st)
{
    (void)st;
    const char *t = " {\"s\": \"a\\u00e9\\ud83d\\ude00\\n\\\"\", \"n\": -1.5e3, \"i\": 42, \"big\": 99999999999999999999,"
                    " \"x\": [1, {\"y\": \"]}\"}], \"t\": true, \"z\": null} ";
    struct jscan_err e;
    assert_int_equal(jscan_validate(t, strlen(t), &e), 0);
    struct jscan j;
    struct jscan_val v;
    char key[16];
    jscan_init(&j, t, strlen(t));
    assert_int_equal(jscan_value(&j, &v), 0);
    assert_int_equal(v.t, JSCAN_OBJ);
    assert_true(jscan_key(&j, key, sizeof(key)));
    assert_string_equal(key, "s");
    assert_int_equal(jscan_value(&j, &v), 0);
    assert_string_equal(v.str, "a\xc3\xa9\xf0\x9f\x98\x80\n\"");
    assert_true(jscan_key(&j, key, sizeof(key)) && jscan_value(&j, &v) == 0);
    assert_true(v.t == JSCAN_NUM && !v.is_int && v.num == -1500);
    assert_true(jscan_key(&j, key, sizeof(key)) && jscan_value(&j, &v) == 0);
    assert_true(v.is_int && v.int_ok && v.i == 42);
    assert_true(jscan_key(&j, key, sizeof(key)) && jscan_value(&j, &v) == 0);
    assert_true(v.is_int && !v.int_ok);               /* does not fit: not silently wrapped */
    assert_true(jscan_key(&j, key, sizeof(key)) && jscan_value(&j, &v) == 0);
    assert_int_equal(v.t, JSCAN_ARR);
    jscan_skip(&j, &v);                               /* brackets inside strings do not count */
    assert_true(jscan_key(&j, key, sizeof(key)));
    assert_string_equal(key, "t");
    assert_true(jscan_value(&j, &v) == 0 && v.t == JSCAN_TRUE);
    assert_true(jscan_key(&j, key, sizeof(key)) && jscan_value(&j, &v) == 0 && v.t == JSCAN_NULL);
    assert_false(jscan_key(&j, key, sizeof(key)));
    assert_int_equal(jscan_value(&j, &v), -1);       /* nothing after the object */
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
    snprintf(body, sizeof(body), REPORT_FMT, "fd00::5");
    assert_int_equal(ingest_parse(body, strlen(body), 10, b, &e), -22);
    assert_non_null(strstr(e.msg, "reports[0].flows[0]: src and dst of different families"));
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
        {"{\"probe\": \"L1\", \"probe\": \"L2\"}", INGEST_BAD_JSON, "probe: duplicate"},
        {"{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.0.1\", \"dst\": \"10.0.0.2\", \"proto\": 17, \"if\": \"e\","
         " \"bps\": 1, \"sport\": 1.5}]}", INGEST_BAD_FIELD, "flows[0].sport: must be an integer"},
        {"{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.0.1\", \"dst\": \"10.0.0.2\", \"if\": \"e\", \"bps\": 1}]}",
         INGEST_BAD_FIELD, "flows[0].proto: required"},
        {"{\"reports\": []}", INGEST_BAD_FIELD, "reports: must be a non-empty array"},
        {"{\"reports\": [{\"probe\": \"L1\"}, 5]}", INGEST_BAD_FIELD, "reports[1]: report must be an object"},
        {"{\"probe\": \"L1\", \"links\": {}}", INGEST_BAD_FIELD, "links: must be an array"},
        {"{\"probe\": \"a b\"}", INGEST_BAD_FIELD, "report.probe: invalid character"},
        {"{\"ts\": 1}", INGEST_BAD_FIELD, "report.probe: required"},
        {"{\"probe\": \"L1\", \"flows\": [{\"src\": \"10.0.0.1\", \"dst\": \"10.0.0.2\", \"proto\": 17, \"if\": \"e\","
         " \"bps\": 1, \"fat\": 1}]}", INGEST_BAD_FIELD, "flows[0].fat: must be true or false"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (ingest_parse(bad[i].body, strlen(bad[i].body), 10, b, &e) >= 0 || e.kind != bad[i].kind ||
            !strstr(e.msg, bad[i].msg))
            fail_msg("case %zu: kind %d, '%s'", i, e.kind, e.msg);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jscan_errors_have_a_place), cmocka_unit_test(jscan_pulls_values),
        cmocka_unit_test(parse_every_field), cmocka_unit_test(if_maps_to_link_direction),
        cmocka_unit_test(flow_paths_from_the_reporting_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
