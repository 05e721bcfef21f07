/* Unit tests for policy/topo*: file validation (one test per error, each
 * asserting the message names the offending item), round trips, generators,
 * address and interface lookups. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo.h"

#define TIERS3 "\"tiers\": [\"host\", \"leaf\", \"spine\"]"
#define NODES_OK \
    "{\"name\": \"H1\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"}," \
    "{\"name\": \"H2\", \"tier\": \"host\", \"addr\": \"10.0.2.1\"}," \
    "{\"name\": \"L1\", \"tier\": \"leaf\", \"prefix\": \"10.0.1.0/24\"}," \
    "{\"name\": \"L2\", \"tier\": \"leaf\", \"prefix\": \"10.0.2.0/24\"}," \
    "{\"name\": \"S1\", \"tier\": \"spine\"}"
#define LINKS_OK \
    "{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100}," \
    "{\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100}," \
    "{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 100}," \
    "{\"a\": \"S1\", \"b\": \"L2\", \"gbps\": 100}"
#define DOC(tiers, nodes, links) "{\"name\": \"t\", " tiers ", \"nodes\": [" nodes "], \"links\": [" links "]}"

static struct topo *load_ok(const char *json)
{
    struct topo *t = NULL;
    char err[256] = "";
    int r = topo_from_json(json, strlen(json), "test.json", &t, err, sizeof(err));
    if (r < 0)
        fail_msg("unexpected error: %s", err);
    return t;
}

/* Loads json, expects failure whose message holds every given fragment. */
static void expect_err(const char *json, const char *frag1, const char *frag2)
{
    struct topo *t = NULL;
    char err[256] = "";
    int r = topo_from_json(json, strlen(json), "test.json", &t, err, sizeof(err));
    if (r >= 0)
        fail_msg("expected an error naming \"%s\"", frag1);
    assert_null(t);
    if (!strstr(err, frag1) || (frag2 && !strstr(err, frag2)))
        fail_msg("message \"%s\" lacks \"%s\"/\"%s\"", err, frag1, frag2 ? frag2 : "");
    assert_non_null(strstr(err, "test.json"));
}

static void test_valid_file(void **state)
{
    (void)state;
    struct topo *t = load_ok(DOC(TIERS3, NODES_OK, LINKS_OK));
    assert_int_equal(t->nnodes, 5);
    assert_int_equal(t->nlinks, 4);
    assert_int_equal(t->nhosts, 2);
    assert_int_equal(t->ntiers, 3);
    /* "S1"-"L2" was written spine first: normalised so lo is the leaf. */
    assert_string_equal(t->nodes[t->links[3].lo].name, "L2");
    assert_int_equal(t->nodes[topo_node_by_name(t, "L1")].up_count, 1);
    assert_int_equal(t->nodes[topo_node_by_name(t, "S1")].down_count, 2);
    assert_int_equal(topo_node_by_name(t, "nope"), TOPO_NONE);
    topo_free(t);
}

static void test_err_unknown_node(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"S9\", \"gbps\": 1}"), "unknown node \"S9\"",
               "links[4]");
}

static void test_err_duplicate_name(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"L1\", \"tier\": \"leaf\"}", LINKS_OK), "node L1", "duplicate");
}

static void test_err_bad_tier(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"X1\", \"tier\": \"core\"}", LINKS_OK), "node X1",
               "\"core\" is not a tier");
}

static void test_err_tier_not_listed(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"SS1\", \"tier\": \"superspine\"}", LINKS_OK), "node SS1",
               "not one of the tiers");
}

static void test_err_tiers_order(void **state)
{
    (void)state;
    expect_err(DOC("\"tiers\": [\"host\", \"leaf\", \"superspine\", \"spine\"]", NODES_OK, LINKS_OK),
               "\"spine\" at position 3", "out of order");
    expect_err(DOC("\"tiers\": [\"leaf\", \"host\"]", NODES_OK, LINKS_OK), "tiers", "host");
    expect_err(DOC("\"tiers\": [\"host\", \"leaf\", \"spline\"]", NODES_OK, LINKS_OK), "tiers[2]", "spline");
}

static void test_err_skipping_link(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"H1\", \"b\": \"S1\", \"gbps\": 1}"), "(H1-S1)",
               "not adjacent tiers");
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"L2\", \"gbps\": 1}"), "(L1-L2)",
               "not adjacent tiers");
}

static void test_err_capacity(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 0}"), "(L1-S1)",
               "must be > 0");
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": -5}"), "(L1-S1)",
               "must be > 0");
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"S1\"}"), "L1-S1", "\"gbps\"");
}

static void test_err_unreachable_host(void **state)
{
    (void)state;
    /* H3 has no link at all. */
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"H3\", \"tier\": \"host\"}", LINKS_OK), "host H3", "no links");
    /* H3 hangs from L3, which reaches no spine: no common switch with H1. */
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"H3\", \"tier\": \"host\"},{\"name\": \"L3\", \"tier\": \"leaf\"}",
                   LINKS_OK ",{\"a\": \"H3\", \"b\": \"L3\", \"gbps\": 1}"),
               "H3", "no up/down path");
}

static void test_err_valley_only(void **state)
{
    (void)state;
    /* H1-L1-S1-L2-S2-L3-H3 is connected but every route needs a valley. */
    const char *j = DOC(TIERS3,
        "{\"name\": \"H1\", \"tier\": \"host\"},{\"name\": \"H3\", \"tier\": \"host\"},"
        "{\"name\": \"L1\", \"tier\": \"leaf\"},{\"name\": \"L2\", \"tier\": \"leaf\"},{\"name\": \"L3\", \"tier\": \"leaf\"},"
        "{\"name\": \"S1\", \"tier\": \"spine\"},{\"name\": \"S2\", \"tier\": \"spine\"}",
        "{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 1},{\"a\": \"H3\", \"b\": \"L3\", \"gbps\": 1},"
        "{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 1},{\"a\": \"L2\", \"b\": \"S1\", \"gbps\": 1},"
        "{\"a\": \"L2\", \"b\": \"S2\", \"gbps\": 1},{\"a\": \"L3\", \"b\": \"S2\", \"gbps\": 1}");
    expect_err(j, "no up/down path", "H1");
}

static void test_err_addresses(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"H9\", \"tier\": \"host\", \"addr\": \"10.0.1.300\"}", LINKS_OK),
               "node H9", "bad addr");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"L9\", \"tier\": \"leaf\", \"prefix\": \"10.0.9.0/33\"}", LINKS_OK),
               "node L9", "bad prefix");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"L9\", \"tier\": \"leaf\", \"prefix\": \"10.0.9.1/24\"}", LINKS_OK),
               "node L9", "host bits");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"S9\", \"tier\": \"spine\", \"addr\": \"10.0.9.1\"}", LINKS_OK),
               "node S9", "only allowed on a host");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"H9\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"}",
                   LINKS_OK ",{\"a\": \"H9\", \"b\": \"L1\", \"gbps\": 1}"),
               "node H9", "already used by node H1");
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 1, \"a_ip\": \"fe80::1::2\"}"),
               "(L1-S1)", "a_ip");
}

static void test_err_bounds(void **state)
{
    (void)state;
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456\", \"tier\": \"spine\"}",
                   LINKS_OK),
               "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456", "longer than 31 bytes");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"a b\", \"tier\": \"spine\"}", LINKS_OK), "\"a b\"",
               "name must be");
    expect_err(DOC(TIERS3, NODES_OK, LINKS_OK ",{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 1, \"b_if\": "
                                              "\"a-very-long-interface-name\"}"),
               "(L1-S1)", "b_if");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": \"S9\", \"tier\": \"spine\", \"netns\": "
                                    "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}",
                   LINKS_OK),
               "node S9", "netns");
    expect_err(DOC(TIERS3, NODES_OK ",{\"name\": 7, \"tier\": \"spine\"}", LINKS_OK), "nodes[5]", "string");
    /* A switch's BGP AS: an integer 1..2^32-1, and hosts have none. */
    const char *bad_asn[] = {DOC(TIERS3, NODES_OK ",{\"name\": \"S9\", \"tier\": \"spine\", \"asn\": 4294967296}", LINKS_OK),
                             DOC(TIERS3, NODES_OK ",{\"name\": \"S9\", \"tier\": \"spine\", \"asn\": \"65000\"}", LINKS_OK),
                             DOC(TIERS3, NODES_OK ",{\"name\": \"S9\", \"tier\": \"host\", \"addr\": \"10.0.1.9\", \"asn\": 1}",
                                 LINKS_OK ",{\"a\": \"S9\", \"b\": \"L1\", \"gbps\": 1}")};
    for (size_t i = 0; i < sizeof(bad_asn) / sizeof(bad_asn[0]); i++)
        expect_err(bad_asn[i], "node S9", "\"asn\" must be an integer 1..4294967295, on a switch");
}

static void test_err_syntax(void **state)
{
    (void)state;
    expect_err("{\"nodes\": [", "test.json:", NULL);
    expect_err("[]", "top level", NULL);
    expect_err("{\"nodes\": [], \"links\": {}}", "\"links\"", "array");
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *json = DOC(TIERS3,
        NODES_OK ",{\"name\": \"H3\", \"tier\": \"host\", \"addr\": \"fd00::3\", \"pod\": 2},"
                 "{\"name\": \"S2\", \"tier\": \"spine\", \"netns\": \"tf-S2\", \"mgmt\": \"10.9.9.2\", \"asn\": 4200000000}",
        LINKS_OK ",{\"a\": \"H3\", \"b\": \"L1\", \"gbps\": 2.5},"
                 "{\"a\": \"S2\", \"b\": \"L1\", \"gbps\": 0.1, \"a_if\": \"eth3\", \"b_if\": \"eth2\", "
                 "\"a_ip\": \"10.1.0.1\", \"b_ip\": \"10.1.0.2/31\"}");
    struct topo *t = load_ok(json);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(topo_write_json(t, f), 0);
    fclose(f);
    struct topo *u = load_ok(buf);
    assert_non_null(strstr(buf, "\"asn\": 4200000000"));
    assert_int_equal(u->nodes[topo_node_by_name(u, "S2")].asn, 4200000000u);
    assert_int_equal(u->nnodes, t->nnodes);
    assert_int_equal(u->nlinks, t->nlinks);
    assert_memory_equal(u->nodes, t->nodes, sizeof(*t->nodes) * t->nnodes);
    assert_memory_equal(u->links, t->links, sizeof(*t->links) * t->nlinks);
    /* The spine-first link's a_if/b_if followed its ends. */
    uint32_t l = t->nlinks - 1;
    assert_string_equal(t->links[l].lo_if, "eth2");
    assert_string_equal(t->links[l].hi_if, "eth3");
    assert_string_equal(t->links[l].lo_ip, "10.1.0.2/31");
    char *buf2 = NULL;
    size_t len2 = 0;
    f = open_memstream(&buf2, &len2);
    assert_int_equal(topo_write_json(u, f), 0);
    fclose(f);
    assert_string_equal(buf, buf2);
    free(buf);
    free(buf2);
    topo_free(t);
    topo_free(u);
}

static void test_round_trip_generated(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load("clos3:pods=2,racks=3,hosts=2,spines=2,superspines=4,oversub=3", &t, err, sizeof(err)), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(topo_write_json(t, f), 0);
    fclose(f);
    struct topo *u = load_ok(buf);
    assert_string_equal(u->name, t->name);
    assert_memory_equal(u->nodes, t->nodes, sizeof(*t->nodes) * t->nnodes);
    assert_memory_equal(u->links, t->links, sizeof(*t->links) * t->nlinks);
    free(buf);
    topo_free(t);
    topo_free(u);
}

static unsigned count_tier(const struct topo *t, int tier)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < t->nnodes; i++)
        n += t->nodes[i].tier == tier;
    return n;
}

static void test_gen_fattree(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_int_equal(topo_generate("fattree:k=4,gbps=1", &t, err, sizeof(err)), 0);
    assert_int_equal(t->nhosts, 16);
    assert_int_equal(t->nnodes - t->nhosts, 20);
    assert_int_equal(count_tier(t, TOPO_SUPERSPINE), 4);
    assert_int_equal(t->nlinks, 48);
    /* Hedera addressing: the first host is 10.0.0.2, under edge 10.0.0.0/24. */
    uint32_t h1 = topo_node_by_name(t, "H1");
    uint8_t a[16] = {10, 0, 0, 2};
    assert_int_equal(topo_node_by_addr(t, 4, a), h1);
    assert_int_equal(t->nodes[h1].pod, 1);
    topo_free(t);
}

static void test_gen_leafspine(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load("leafspine:leaves=2,spines=4,hosts=4,gbps=100", &t, err, sizeof(err)), 0);
    assert_int_equal(t->nhosts, 8);
    assert_int_equal(t->nlinks, 8 + 8);
    assert_true(topo_dir_gbps(t, topo_dir(0, 1)) == 100.0);
    uint32_t h5 = topo_node_by_name(t, "H5");
    uint8_t a[16] = {10, 0, 2, 1};
    assert_int_equal(topo_node_by_addr(t, 4, a), h5);
    topo_free(t);
}

static void test_gen_clos3_24k(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_int_equal(topo_generate("clos3:pods=8,racks=192,hosts=16,oversub=7", &t, err, sizeof(err)), 0);
    assert_int_equal(t->nhosts, 24576);
    assert_int_equal(count_tier(t, TOPO_LEAF), 8 * 192);
    assert_int_equal(count_tier(t, TOPO_SPINE), 8 * 16);
    /* oversub=7: a spine's uplinks carry 1/7 of its downlinks. */
    uint32_t s1 = topo_node_by_name(t, "S1");
    const struct topo_node *n = &t->nodes[s1];
    double up = 0, down = 0;
    for (uint32_t i = 0; i < n->up_count; i++)
        up += t->links[t->up_links[n->up_first + i]].gbps;
    for (uint32_t i = 0; i < n->down_count; i++)
        down += t->links[t->down_links[n->down_first + i]].gbps;
    assert_true(up * 7 > down * 0.999 && up * 7 < down * 1.001);
    topo_free(t);
}

static void test_gen_errors(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_true(topo_generate("clos3:podz=3", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "\"podz\""));
    assert_true(topo_generate("fattree:k=5", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "k=5"));
    assert_true(topo_generate("leafspine:hosts=0", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "hosts="));
    assert_true(topo_generate("leafspine:hosts", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "\"hosts\" needs a value"));
    assert_true(topo_generate("leafspine:hosts=2,hosts=3", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "given twice"));
    assert_true(topo_generate("clos3:spines=3,superspines=4", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "superspines=4"));
    assert_true(topo_generate("torus:n=3", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "torus"));
    assert_true(topo_load("/nonexistent/topo.json", &t, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "/nonexistent/topo.json"));
}

/* topo_load sends a spec to the generators exactly when its "KIND:" is a
 * generator kind (the same table topo_generate dispatches on); anything
 * else is a file name. */
static void test_is_generator(void **state)
{
    (void)state;
    assert_true(topo_is_generator("leafspine:hosts=2"));
    assert_true(topo_is_generator("fattree:k=4"));
    assert_true(topo_is_generator("clos3:"));
    assert_false(topo_is_generator("leafspine"));
    assert_false(topo_is_generator("leafspin:hosts=2"));
    assert_false(topo_is_generator("leafspine2:hosts=2"));
    assert_false(topo_is_generator("torus:n=3"));
    assert_false(topo_is_generator("/tmp/fattree:4.json"));
    assert_false(topo_is_generator(""));
    assert_false(topo_is_generator(NULL));
}

static void test_node_by_addr(void **state)
{
    (void)state;
    struct topo *t = load_ok(DOC(TIERS3,
        NODES_OK ",{\"name\": \"L3\", \"tier\": \"leaf\", \"prefix\": \"10.0.0.0/16\"}",
        LINKS_OK ",{\"a\": \"L3\", \"b\": \"S1\", \"gbps\": 1}"));
    uint8_t a[16] = {10, 0, 1, 1};
    assert_int_equal(topo_node_by_addr(t, 4, a), topo_node_by_name(t, "H1"));
    a[3] = 77;   /* no such host: the leaf with the longest matching prefix */
    assert_int_equal(topo_node_by_addr(t, 4, a), topo_node_by_name(t, "L1"));
    a[2] = 9;
    assert_int_equal(topo_node_by_addr(t, 4, a), topo_node_by_name(t, "L3"));
    a[0] = 11;
    assert_int_equal(topo_node_by_addr(t, 4, a), TOPO_NONE);
    assert_int_equal(topo_node_by_addr(t, 6, a), TOPO_NONE);
    topo_free(t);
}

static void test_dir_by_if(void **state)
{
    (void)state;
    struct topo *t = load_ok(DOC(TIERS3, NODES_OK,
        "{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100, \"a_if\": \"eth0\", \"b_if\": \"eth1\"},"
        "{\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100},"
        "{\"a\": \"S1\", \"b\": \"L1\", \"gbps\": 100, \"a_if\": \"swp1\", \"b_if\": \"eth9\"},"
        "{\"a\": \"S1\", \"b\": \"L2\", \"gbps\": 100}"));
    uint32_t l1 = topo_node_by_name(t, "L1"), s1 = topo_node_by_name(t, "S1"), h1 = topo_node_by_name(t, "H1");
    uint32_t dir;
    assert_int_equal(topo_dir_by_if(t, l1, "eth9", &dir), 0);   /* leaving L1 upwards */
    assert_false(topo_dir_is_down(dir));
    assert_int_equal(topo_dir_from(t, dir), l1);
    assert_int_equal(topo_dir_to(t, dir), s1);
    assert_int_equal(topo_dir_by_if(t, l1, "eth1", &dir), 0);   /* leaving L1 down to H1 */
    assert_true(topo_dir_is_down(dir));
    assert_int_equal(topo_dir_to(t, dir), h1);
    assert_int_equal(topo_dir_by_if(t, s1, "swp1", &dir), 0);
    assert_int_equal(topo_dir_to(t, dir), l1);
    assert_int_equal(topo_dir_by_if(t, l1, "swp1", &dir), -ENOENT);
    assert_int_equal(topo_dir_by_if(t, l1, "eth7", &dir), -ENOENT);
    uint32_t d2;
    assert_int_equal(topo_dir_between(t, l1, s1, &d2), 0);
    assert_int_equal(topo_dir_between(t, h1, s1, &d2), -ENOENT);
    assert_int_equal(topo_leaf_of(t, h1), l1);
    topo_free(t);
}

static void test_tiers_inferred(void **state)
{
    (void)state;
    struct topo *t = load_ok(DOC("\"x\": 1", NODES_OK, LINKS_OK));
    assert_int_equal(t->ntiers, 3);
    assert_int_equal(t->tiers[2], TOPO_SPINE);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file),
        cmocka_unit_test(test_err_unknown_node),
        cmocka_unit_test(test_err_duplicate_name),
        cmocka_unit_test(test_err_bad_tier),
        cmocka_unit_test(test_err_tier_not_listed),
        cmocka_unit_test(test_err_tiers_order),
        cmocka_unit_test(test_err_skipping_link),
        cmocka_unit_test(test_err_capacity),
        cmocka_unit_test(test_err_unreachable_host),
        cmocka_unit_test(test_err_valley_only),
        cmocka_unit_test(test_err_addresses),
        cmocka_unit_test(test_err_bounds),
        cmocka_unit_test(test_err_syntax),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_generated),
        cmocka_unit_test(test_gen_fattree),
        cmocka_unit_test(test_gen_leafspine),
        cmocka_unit_test(test_gen_clos3_24k),
        cmocka_unit_test(test_gen_errors),
        cmocka_unit_test(test_is_generator),
        cmocka_unit_test(test_node_by_addr),
        cmocka_unit_test(test_dir_by_if),
        cmocka_unit_test(test_tiers_inferred),
    };
    return cmocka_run_group_tests_name("topo", tests, NULL, NULL);
}
