/* Unit tests for policy/classes: each match kind, precedence, loader errors,
 * and resolution of path policies against a topology. */
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
#include "policy/assign.h"
#include "policy/classes.h"
#include "policy/topo.h"

static int load(struct classes *cs, const char *text, char *err, size_t errlen)
{
    json_error_t je;
    json_t *j = json_loads(text, 0, &je);
    assert_non_null(j);
    classes_init(cs);
    int r = classes_load_json(cs, j, err, errlen);
    json_decref(j);
    return r;
}

static struct class_flow flow(const char *src, const char *dst, int proto, int sport, int dport, int dscp)
{
    struct class_flow f = { 0 };
    assert_int_equal(tf_addr_parse(src, &f.af, f.src), 0);
    assert_int_equal(tf_addr_parse(dst, &f.af, f.dst), 0);
    f.proto = (uint8_t)proto;
    f.sport = (uint16_t)sport;
    f.dport = (uint16_t)dport;
    f.dscp = dscp;
    f.job_dim = -1;
    return f;
}

static const char *policy =
    "{\"classes\": ["
    " {\"name\": \"storage\", \"match\": {\"dport\": [\"3260\", \"9000-9100\"], \"proto\": [6]}},"
    " {\"name\": \"roce-hi\", \"match\": {\"dscp\": [26], \"qp\": [\"100-199\"]}, \"path\": {\"via\": [\"S1\", \"S2\"]}},"
    " {\"name\": \"rack\", \"match\": {\"src\": [\"10.0.1.0/24\"], \"dst\": [\"10.0.1.0/24\"]}, \"path\": {\"max_tier\": \"leaf\"}},"
    " {\"name\": \"ssh\", \"match\": {\"sport\": [22]}},"
    " {\"name\": \"llama-ctl\", \"match\": {\"job\": [\"llama\"], \"dport\": [29500]}},"
    " {\"name\": \"dp\", \"match\": {\"dscp\": [10]}, \"path\": {\"max_tier\": \"spine\"}},"
    " {\"name\": \"v6\", \"match\": {\"dst\": [\"fd00::/8\"]}}"
    "]}";

static void test_each_kind(void **state)
{
    (void)state;
    struct classes cs;
    char err[256];
    assert_int_equal(load(&cs, policy, err, sizeof(err)), 0);
    assert_int_equal(cs.n, CLASS_NBUILTIN + 6);
    struct class_flow f = flow("10.0.2.1", "10.0.3.1", 6, 40000, 9050, 0);
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "storage"));    /* dport range + proto */
    f.proto = 17;
    assert_int_equal(classes_match(&cs, &f), CLASS_DEFAULT);                   /* proto must match too */
    f = flow("10.0.2.1", "10.0.3.1", 17, 1, 4791, 26);
    f.has_qp = true;
    f.qp = 150;
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "roce-hi"));   /* dscp + qp */
    f.qp = 200;
    assert_int_equal(classes_match(&cs, &f), CLASS_DEFAULT);
    f = flow("10.0.1.5", "10.0.1.9", 17, 1, 4791, -1);
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "rack"));      /* prefixes */
    f = flow("10.0.2.1", "10.0.3.1", 6, 22, 50000, -1);
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "ssh"));       /* sport */
    f = flow("fd00::1", "fd00::2", 17, 1, 2, -1);
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "v6"));        /* IPv6 prefix */
    f = flow("10.0.2.1", "10.0.3.1", 17, 1, 2, 10);
    assert_int_equal(classes_match(&cs, &f), CLASS_DP);                       /* rules on a built-in */
    classes_free(&cs);
}

static void test_precedence(void **state)
{
    (void)state;
    struct classes cs;
    char err[256];
    assert_int_equal(load(&cs, policy, err, sizeof(err)), 0);
    /* A job flow: a job-scoped user class first, then the job dimension,
     * even when a user class (storage) would also match. */
    struct class_flow f = flow("10.0.2.1", "10.0.3.1", 6, 40000, 29500, -1);
    f.job = "llama";
    f.job_dim = CLASS_PP;
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "llama-ctl"));
    f.dport = 9050;
    assert_int_equal(classes_match(&cs, &f), CLASS_PP);
    f.job_dim = -1;   /* not a collective pair: falls through to user classes */
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "storage"));
    f.job = "other";
    f.dport = 29500;  /* a job rule never matches another job */
    assert_int_equal(classes_match(&cs, &f), CLASS_DEFAULT);
    /* User classes in file order: storage (index 6) before ssh. */
    f = flow("10.0.2.1", "10.0.3.1", 6, 22, 3260, -1);
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "storage"));
    /* User classes before rules on built-ins: storage beats dp's dscp 10. */
    f.dscp = 10;
    assert_int_equal(classes_match(&cs, &f), classes_find(&cs, "storage"));
    classes_free(&cs);
}

static void expect_error(const char *text, const char *needle)
{
    struct classes cs;
    char err[256] = "";
    assert_int_equal(load(&cs, text, err, sizeof(err)), -EINVAL);
    if (!strstr(err, needle))
        fail_msg("error '%s' does not mention '%s'", err, needle);
    assert_int_equal(cs.n, CLASS_NBUILTIN);
    classes_free(&cs);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("{\"classes\": [{\"name\": \"x\", \"match\": {\"dscp\": [64]}}]}", "class 'x': match.dscp[0]");
    expect_error("{\"classes\": [{\"name\": \"x\", \"match\": {\"color\": [1]}}]}", "unknown match key 'color'");
    expect_error("{\"classes\": [{\"name\": \"x\", \"match\": {\"dport\": [\"9-2\"]}}]}", "class 'x': match.dport[0]");
    expect_error("{\"classes\": [{\"name\": \"x\", \"match\": {\"src\": [\"10.0.0.0/33\"]}}]}", "match.src[0]");
    expect_error("{\"classes\": [{\"name\": \"x\"}]}", "class 'x': a user class needs match rules");
    expect_error("{\"classes\": [{\"name\": \"x\", \"match\": {\"sport\": [1]}}, {\"name\": \"x\", \"match\": {\"sport\": [1]}}]}",
                 "defined twice");
    expect_error("{\"classes\": [{\"name\": \"x\", \"match\": {\"sport\": [1]}, \"path\": {\"max_tier\": \"host\"}}]}",
                 "path.max_tier");
    expect_error("{\"classes\": [{\"name\": \"bad name\", \"match\": {\"sport\": [1]}}]}", "classes[0]: name");
    expect_error("{\"klasses\": []}", "unknown key 'klasses'");
    /* Bounded: more than CLASS_RULES_MAX values. */
    char big[4096] = "{\"classes\": [{\"name\": \"x\", \"match\": {\"sport\": [";
    for (int i = 0; i <= CLASS_RULES_MAX; i++) {
        char num[16];
        snprintf(num, sizeof(num), "%s%d", i ? "," : "", i);
        strncat(big, num, sizeof(big) - strlen(big) - 1);
    }
    strncat(big, "]}}]}", sizeof(big) - strlen(big) - 1);
    expect_error(big, "at most 32");
}

static void test_resolve(void **state)
{
    (void)state;
    struct classes cs;
    char err[256];
    assert_int_equal(load(&cs, policy, err, sizeof(err)), 0);
    struct topo *t;
    assert_int_equal(topo_load("leafspine:leaves=2,spines=4,hosts=2,gbps=100", &t, err, sizeof(err)), 0);
    struct assign_policy pol[CLASSES_MAX];
    uint8_t *owned;
    assert_int_equal(classes_resolve(&cs, t, pol, &owned, err, sizeof(err)), 0);
    int hi = classes_find(&cs, "roce-hi"), rack = classes_find(&cs, "rack");
    assert_non_null(pol[hi].node_ok);
    assert_true(pol[hi].node_ok[topo_node_by_name(t, "S1")]);
    assert_false(pol[hi].node_ok[topo_node_by_name(t, "S3")]);
    assert_true(pol[hi].node_ok[topo_node_by_name(t, "L1")]);
    assert_int_equal(pol[rack].max_tier, TOPO_LEAF);
    assert_null(pol[CLASS_TP].node_ok);
    free(owned);
    classes_free(&cs);
    /* A via name that is not a spine is reported with its class. */
    assert_int_equal(load(&cs, "{\"classes\": [{\"name\": \"x\", \"match\": {\"sport\": [1]}, \"path\": {\"via\": [\"L1\"]}}]}",
                          err, sizeof(err)), 0);
    assert_int_equal(classes_resolve(&cs, t, pol, &owned, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "class 'x': path.via 'L1'"));
    classes_free(&cs);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_kind), cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_errors), cmocka_unit_test(test_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
