/* Unit tests for probes/mirrormap: parsing, every validation error, lookups
 * (by binary search over 4096 keys given in a scrambled order), source
 * membership, and equality for reloads. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/mirrormap.h"

static int parse(const char *s, struct mirrormap **m, char *err)
{
    return mirrormap_parse(s, strlen(s), m, err, 200);
}

static void test_lookup(void **state)
{
    (void)state;
    struct mirrormap *m;
    char err[200];
    const char *s = "{\"erspan\": [{\"src\": \"192.0.2.9\", \"session\": 341, \"node\": \"L1\", \"if\": \"eth1\"}],"
                    " \"sflow\": [{\"agent\": \"192.0.2.1\", \"ifindex\": 5, \"node\": \"L1\", \"if\": \"eth1\", \"link_gbps\": 100},"
                    "             {\"agent\": \"2001:db8::1\", \"ifindex\": 7, \"node\": \"L2\", \"if\": \"eth2\"}]}";
    assert_int_equal(parse(s, &m, err), 0);
    assert_int_equal(mirrormap_nports(m), 2);
    uint8_t a[16] = {192, 0, 2, 9};
    uint32_t p = mirrormap_erspan(m, 4, a, 341);
    assert_int_equal(p, 0);
    assert_int_equal(mirrormap_erspan(m, 4, a, 342), MIRRORMAP_NONE);
    uint8_t ag[16] = {192, 0, 2, 1};
    assert_int_equal(mirrormap_sflow(m, 4, ag, 5), p); /* same port, shared index */
    assert_int_equal(mirrormap_sflow(m, 4, ag, 6), MIRRORMAP_NONE);
    uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
    uint32_t q = mirrormap_sflow(m, 6, v6, 7);
    assert_int_equal(q, 1);
    assert_string_equal(mirrormap_port(m, q)->node, "L2");
    assert_true(mirrormap_port(m, p)->link_gbps == 100);
    assert_null(mirrormap_port(m, 9));
    mirrormap_free(m);
}

/* The largest mapping, its entries in a scrambled order: every key is
 * found with its own port, near misses are not, and an agent is known by
 * its address whatever ifIndex it sends. */
static void test_many_keys(void **state)
{
    (void)state;
    size_t cap = 4096 * 110 + 64, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    n += (size_t)snprintf(t + n, cap - n, "{\"sflow\": [");
    for (uint32_t i = 0; i < 4096; i++) {
        uint32_t k = (i * 2654435761u) % 4096; /* a permutation of 0..4095 */
        n += (size_t)snprintf(t + n, cap - n, "%s{\"agent\": \"10.0.%u.%u\", \"ifindex\": %u, \"node\": \"S%u\", "
                              "\"if\": \"e%u\"}", i ? "," : "", k / 64, k % 64 / 8, k % 8 + 1, k / 8, k % 8);
    }
    n += (size_t)snprintf(t + n, cap - n, "]}");
    assert_true(n < cap);
    struct mirrormap *m, *m2;
    char err[200];
    assert_int_equal(mirrormap_parse(t, n, &m, err, sizeof(err)), 0);
    assert_int_equal(mirrormap_nkeys(m), 4096);
    for (uint32_t k = 0; k < 4096; k++) {
        uint8_t a[16] = {10, 0, (uint8_t)(k / 64), (uint8_t)(k % 64 / 8)};
        uint32_t p = mirrormap_sflow(m, 4, a, k % 8 + 1);
        assert_int_not_equal(p, MIRRORMAP_NONE);
        char node[16], ifn[16];
        snprintf(node, sizeof(node), "S%u", k / 8);
        snprintf(ifn, sizeof(ifn), "e%u", k % 8);
        assert_string_equal(mirrormap_port(m, p)->node, node);
        assert_string_equal(mirrormap_port(m, p)->ifname, ifn);
        assert_int_equal(mirrormap_sflow(m, 4, a, 9), MIRRORMAP_NONE);
        assert_int_equal(mirrormap_sflow(m, 4, a, 0), MIRRORMAP_NONE);
        assert_true(mirrormap_has_sflow_agent(m, 4, a));
        assert_false(mirrormap_has_erspan_src(m, 4, a));
        assert_false(mirrormap_has_sflow_agent(m, 6, a));
    }
    uint8_t out[16] = {10, 0, 64, 0}, low[16] = {9, 255, 255, 255}, high[16] = {10, 0, 63, 8};
    assert_false(mirrormap_has_sflow_agent(m, 4, out));
    assert_false(mirrormap_has_sflow_agent(m, 4, low));
    assert_false(mirrormap_has_sflow_agent(m, 4, high));
    assert_int_equal(mirrormap_sflow(m, 4, low, 1), MIRRORMAP_NONE);
    /* equality: the same text, and one entry changed */
    assert_int_equal(mirrormap_parse(t, n, &m2, err, sizeof(err)), 0);
    assert_true(mirrormap_equal(m, m2));
    mirrormap_free(m2);
    char *e = strstr(t, "\"e3\"");
    assert_non_null(e);
    e[2] = '4';
    assert_int_equal(mirrormap_parse(t, n, &m2, err, sizeof(err)), 0);
    assert_false(mirrormap_equal(m, m2));
    assert_false(mirrormap_equal(m, NULL));
    assert_true(mirrormap_equal(NULL, NULL));
    mirrormap_free(m2);
    mirrormap_free(m);
    free(t);
}

static void test_errors(void **state)
{
    (void)state;
    struct {
        const char *text, *want;
    } cases[] = {
        {"[1]", "must be a JSON object"},
        {"{\"erspan\": 3}", "\"erspan\" must be an array"},
        {"{\"sflows\": []}", "unknown key \"sflows\""},
        {"{\"erspan\": [{\"src\": \"x\", \"session\": 1, \"node\": \"L1\", \"if\": \"e\"}]}", "erspan[0]: \"src\" is not an IP address"},
        {"{\"erspan\": [{\"src\": \"10.0.0.1\", \"session\": 1024, \"node\": \"L1\", \"if\": \"e\"}]}", "\"session\" 1024 out of range"},
        {"{\"sflow\": [{\"agent\": \"10.0.0.1\", \"ifindex\": 1, \"node\": \"L1\"}]}", "sflow[0]: needs"},
        {"{\"sflow\": [{\"agent\": \"10.0.0.1\", \"ifindex\": 1, \"node\": \"L1\", \"if\": \"averyveryverylongifname\"}]}", "\"if\" 1..15"},
        {"{\"sflow\": [{\"agent\": \"10.0.0.1\", \"ifindex\": 1, \"node\": \"L1\", \"if\": \"e\", \"link_gbps\": -1}]}", "link_gbps"},
        {"{\"sflow\": [{\"agent\": \"10.0.0.1\", \"ifindex\": 1, \"node\": \"L1\", \"if\": \"e\"},"
         "{\"agent\": \"10.0.0.1\", \"ifindex\": 1, \"node\": \"L2\", \"if\": \"e\"}]}", "sflow[1]: duplicate"},
        {"{\"sflow\": [", "line 1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct mirrormap *m = NULL;
        char err[200] = "";
        assert_true(parse(cases[i].text, &m, err) < 0);
        if (!strstr(err, cases[i].want))
            fail_msg("case %zu: error \"%s\" lacks \"%s\"", i, err, cases[i].want);
        assert_null(m);
    }
    char err[200];
    struct mirrormap *m;
    assert_true(mirrormap_load("/nonexistent/map.json", &m, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "/nonexistent/map.json"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("mirrormap", tests, NULL, NULL);
}
