/* Unit tests for policy/job: coordinates, rank-pair classification, the
 * class-to-tier table and placement advice. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/job.h"
#include "policy/topo.h"

static void layout(struct job *j, int nd, const int *dims, const uint32_t *sizes)
{
    char err[256];
    assert_int_equal(job_init(j, "llama", nd, dims, sizes, err, sizeof(err)), 0);
}

static void test_coords_and_pairs(void **state)
{
    (void)state;
    struct job j;
    int dims[4] = { JOB_TP, JOB_CP, JOB_PP, JOB_DP };
    uint32_t sizes[4] = { 4, 1, 2, 3 };
    layout(&j, 4, dims, sizes);
    assert_int_equal(j.nranks, 24);
    uint32_t c[JOB_NDIMS];
    job_coords(&j, 13, c);   /* 13 = 1 + 4*(0 + 1*(1 + 2*1)) */
    assert_int_equal(c[0], 1);
    assert_int_equal(c[1], 0);
    assert_int_equal(c[2], 1);
    assert_int_equal(c[3], 1);
    assert_int_equal(job_rank_at(&j, c), 13);
    assert_int_equal(job_pair_dim(&j, 0, 3), JOB_TP);     /* differ in tp only */
    assert_int_equal(job_pair_dim(&j, 0, 4), JOB_PP);
    assert_int_equal(job_pair_dim(&j, 0, 16), JOB_DP);
    assert_int_equal(job_pair_dim(&j, 0, 5), -1);         /* tp and pp: not a collective pair */
    assert_int_equal(job_pair_dim(&j, 7, 7), -1);
    assert_int_equal(job_pair_dim(&j, 0, 99), -1);
    job_free(&j);
}

static void test_init_errors(void **state)
{
    (void)state;
    struct job j;
    char err[256];
    int dup[2] = { JOB_TP, JOB_TP };
    uint32_t sz[2] = { 2, 2 };
    assert_int_equal(job_init(&j, "x", 2, dup, sz, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "'tp' appears twice"));
    int dims[2] = { JOB_TP, JOB_DP };
    sz[1] = 0;
    assert_int_equal(job_init(&j, "x", 2, dims, sz, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "size of 'dp'"));
}

static struct topo *load(const char *spec)
{
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load(spec, &t, err, sizeof(err)), 0);
    return t;
}

/* TP8 x PP2 x DP2 on 4 leaves of 8 hosts: tp stays in the leaf, pp and dp
 * cross the spines. Ranks come from JSON with node names. */
static void test_class_tiers_leafspine(void **state)
{
    (void)state;
    struct topo *t = load("leafspine:leaves=4,spines=2,hosts=8,gbps=100");
    json_t *ranks = json_array();
    char name[16];
    for (int i = 1; i <= 32; i++) {
        snprintf(name, sizeof(name), "H%d", i);
        json_array_append_new(ranks, json_string(name));
    }
    /* The API's schema (docs/api.md, PUT /api/v1/jobs/ID): policy/job.c is its one codec. */
    json_t *o = json_pack("{s:o, s:[{s:s, s:i}, {s:s, s:i}, {s:s, s:i}]}", "ranks", ranks, "parallelism", "dim", "tp",
                          "size", 8, "dim", "pp", "size", 2, "dim", "dp", "size", 2);
    struct job j;
    char err[256];
    assert_int_equal(job_from_json(&j, "llama", o, t, err, sizeof(err)), 0);
    int tier[JOB_NDIMS];
    assert_int_equal(job_class_tiers(&j, t, tier), 0);
    assert_int_equal(tier[JOB_TP], TOPO_LEAF);
    assert_int_equal(tier[JOB_PP], TOPO_SPINE);
    assert_int_equal(tier[JOB_DP], TOPO_SPINE);
    assert_int_equal(tier[JOB_CP], -1);
    assert_int_equal(tier[JOB_EP], -1);
    /* Node pair -> dimension, as the controller classifies flows. */
    assert_int_equal(job_node_pair_dim(&j, topo_node_by_name(t, "H1"), topo_node_by_name(t, "H2")), JOB_TP);
    assert_int_equal(job_node_pair_dim(&j, topo_node_by_name(t, "H1"), topo_node_by_name(t, "H9")), JOB_PP);
    assert_int_equal(job_node_pair_dim(&j, topo_node_by_name(t, "H1"), topo_node_by_name(t, "H17")), JOB_DP);
    assert_int_equal(job_node_pair_dim(&j, topo_node_by_name(t, "H1"), topo_node_by_name(t, "H10")), -1);
    /* What it writes is what it reads, with the id. */
    json_t *back = job_to_json(&j, t);
    assert_string_equal(json_string_value(json_object_get(back, "id")), "llama");
    assert_true(json_equal(json_object_get(back, "ranks"), json_object_get(o, "ranks")));
    assert_true(json_equal(json_object_get(back, "parallelism"), json_object_get(o, "parallelism")));
    struct job j2;
    assert_int_equal(job_from_json(&j2, "llama", back, t, err, sizeof(err)), 0);
    assert_int_equal(j2.nranks, j.nranks);
    job_free(&j2);
    json_decref(back);
    job_free(&j);
    /* Errors name the offending field. */
    json_array_set_new(json_object_get(o, "ranks"), 5, json_string("NOPE"));
    assert_int_equal(job_from_json(&j, "llama", o, t, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "ranks[5]: 'NOPE' is not a host of the topology");
    json_array_set_new(json_object_get(o, "ranks"), 5, json_string("L1"));
    assert_int_equal(job_from_json(&j, "llama", o, t, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "ranks[5]: 'L1' is not a host of the topology");
    json_array_set_new(json_object_get(o, "ranks"), 5, json_string("H6"));
    json_object_set_new(json_array_get(json_object_get(o, "parallelism"), 1), "size", json_integer(3));
    assert_int_equal(job_from_json(&j, "llama", o, t, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "parallelism: sizes multiply to 48, but there are 32 ranks");
    assert_int_equal(job_from_json(&j, "bad id", o, t, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "job id"));
    json_decref(o);
    topo_free(t);
}

/* Advice: given the order [dp, pp, tp] on shuffled endpoints, it proposes
 * tp fastest on leaf-sorted endpoints; less crosses the spines than under
 * the reversed order or a shuffled placement. */
static void test_advice(void **state)
{
    (void)state;
    struct topo *t = load("leafspine:leaves=4,spines=2,hosts=8,gbps=100");
    int dims[3] = { JOB_DP, JOB_PP, JOB_TP };
    uint32_t sizes[3] = { 2, 2, 8 }, eps[32], out[32];
    for (uint32_t i = 0; i < 32; i++)
        eps[i] = t->hosts[(i * 7) % 32];
    struct job_advice adv;
    char err[256];
    assert_int_equal(job_advise(t, 3, dims, sizes, eps, 32, 1, out, &adv, err, sizeof(err)), 0);
    assert_int_equal(adv.dim[0], JOB_TP);
    assert_int_equal(adv.size[0], 8);
    assert_int_equal(adv.dim[1], JOB_PP);
    assert_int_equal(adv.tier[JOB_TP], TOPO_LEAF);
    assert_true(adv.advised[TOPO_SPINE] < adv.reversed[TOPO_SPINE]);
    assert_true(adv.advised[TOPO_SPINE] < adv.shuffled[TOPO_SPINE]);
    assert_true(adv.advised[TOPO_LEAF] > 0);
    for (uint32_t r = 1; r < 8; r++)   /* a tp group shares a leaf */
        assert_int_equal(topo_leaf_of(t, out[r]), topo_leaf_of(t, out[0]));
    assert_int_equal(job_advise(t, 3, dims, sizes, eps, 31, 1, out, &adv, err, sizeof(err)), -EINVAL);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coords_and_pairs), cmocka_unit_test(test_init_errors),
        cmocka_unit_test(test_class_tiers_leafspine), cmocka_unit_test(test_advice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
