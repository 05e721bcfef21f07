/* Unit tests for policy/paths: counts and meet tiers on the reference
 * fabrics, every decoded path a valid distinct up/down walk whose index maps
 * back, and exact counts on an irregular fabric checked against a brute-force
 * walk enumeration. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/topo.h"

static struct topo *gen(const char *spec)
{
    struct topo *t = NULL;
    char err[256] = "";
    if (topo_load(spec, &t, err, sizeof(err)) < 0)
        fail_msg("%s: %s", spec, err);
    return t;
}

static uint32_t N(const struct topo *t, const char *name)
{
    uint32_t n = topo_node_by_name(t, name);
    if (n == TOPO_NONE)
        fail_msg("no node %s", name);
    return n;
}

/* Brute force: up/down walks of exactly `left` more hops from v to dst. */
static uint64_t walks(const struct topo *t, uint32_t v, uint32_t dst, int left, int down)
{
    if (!left)
        return v == dst;
    const struct topo_node *n = &t->nodes[v];
    uint64_t c = 0;
    if (!down)
        for (uint32_t i = 0; i < n->up_count; i++)
            c += walks(t, t->links[t->up_links[n->up_first + i]].hi, dst, left - 1, 0);
    for (uint32_t i = 0; i < n->down_count; i++)
        c += walks(t, t->links[t->down_links[n->down_first + i]].lo, dst, left - 1, 1);
    return c;
}

static uint64_t brute_count(const struct topo *t, uint32_t src, uint32_t dst)
{
    for (int len = 0; len <= TOPO_MAX_HOPS; len++) {
        uint64_t c = walks(t, src, dst, len, 0);
        if (c)
            return c;
    }
    return 0;
}

/* Every index decodes to a valid up-then-down walk src->dst, all distinct,
 * mapping back through topo_path_index_of and the prefix ranges. */
static void check_all_paths(const struct topo *t, uint32_t src, uint32_t dst)
{
    uint64_t n = topo_path_count(t, src, dst);
    assert_true(n > 0 && n < 100000);
    uint32_t *all = calloc(n * TOPO_MAX_HOPS, sizeof(uint32_t));
    int hops0 = -1;
    for (uint64_t i = 0; i < n; i++) {
        uint32_t *d = all + i * TOPO_MAX_HOPS;
        int hops = topo_path_dirs(t, src, dst, i, d, TOPO_MAX_HOPS);
        assert_true(hops >= 0);
        if (hops0 < 0)
            hops0 = hops;
        assert_int_equal(hops, hops0);   /* all shortest: one length */
        uint32_t v = src;
        int down = 0;
        for (int h = 0; h < hops; h++) {
            assert_int_equal(topo_dir_from(t, d[h]), v);
            if (topo_dir_is_down(d[h]))
                down = 1;
            else
                assert_false(down);      /* no valley */
            v = topo_dir_to(t, d[h]);
        }
        assert_int_equal(v, dst);
        for (uint64_t j = 0; j < i; j++)
            assert_true(memcmp(all + j * TOPO_MAX_HOPS, d, TOPO_MAX_HOPS * sizeof(uint32_t)) != 0);
        uint64_t back;
        assert_int_equal(topo_path_index_of(t, src, dst, d, hops, &back), 0);
        assert_int_equal(back, i);
        for (int p = 0; p <= hops; p++) {
            uint64_t first, count;
            assert_int_equal(topo_path_prefix_range(t, src, dst, d, p, &first, &count), 0);
            assert_true(first <= i && i < first + count);
        }
    }
    uint32_t d[TOPO_MAX_HOPS];
    assert_int_equal(topo_path_dirs(t, src, dst, n, d, TOPO_MAX_HOPS), -ERANGE);
    /* The bulk form gives the same paths in the same order. */
    uint32_t *bulk = calloc(n * TOPO_MAX_HOPS, sizeof(uint32_t));
    int bh = -1;
    assert_int_equal(topo_path_all(t, src, dst, bulk, n, &bh), (int64_t)n);
    assert_int_equal(bh, hops0);
    assert_memory_equal(bulk, all, n * TOPO_MAX_HOPS * sizeof(uint32_t));
    free(bulk);
    free(all);
}

static void test_fattree_counts(void **state)
{
    (void)state;
    struct topo *t = gen("fattree:k=4");
    uint32_t h1 = N(t, "H1");
    assert_int_equal(topo_path_count(t, h1, N(t, "H16")), 4);   /* other pod */
    assert_int_equal(topo_path_count(t, h1, N(t, "H3")), 2);    /* same pod, other edge */
    assert_int_equal(topo_path_count(t, h1, N(t, "H2")), 1);    /* same edge */
    assert_int_equal(topo_path_count(t, h1, h1), 1);
    assert_int_equal(topo_meet_tier(t, h1, N(t, "H16")), TOPO_SUPERSPINE);
    assert_int_equal(topo_meet_tier(t, h1, N(t, "H3")), TOPO_SPINE);
    assert_int_equal(topo_meet_tier(t, h1, N(t, "H2")), TOPO_LEAF);
    assert_int_equal(topo_meet_tier(t, h1, h1), TOPO_HOST);
    assert_int_equal(topo_meet_tier(t, N(t, "L1"), N(t, "H1")), TOPO_LEAF);
    uint32_t d[TOPO_MAX_HOPS];
    assert_int_equal(topo_path_dirs(t, h1, h1, 0, d, TOPO_MAX_HOPS), 0);
    assert_int_equal(topo_path_dirs(t, h1, N(t, "H16"), 0, d, 3), -ENOSPC);
    topo_free(t);
}

static void test_fattree_all_pairs(void **state)
{
    (void)state;
    struct topo *t = gen("fattree:k=4");
    for (uint32_t i = 0; i < t->nhosts; i++)
        for (uint32_t j = 0; j < t->nhosts; j++) {
            assert_int_equal(topo_path_count(t, t->hosts[i], t->hosts[j]),
                             brute_count(t, t->hosts[i], t->hosts[j]));
            check_all_paths(t, t->hosts[i], t->hosts[j]);
        }
    topo_free(t);
}

static void test_leafspine(void **state)
{
    (void)state;
    struct topo *t = gen("leafspine:leaves=2,spines=4,hosts=4,gbps=100");
    assert_int_equal(topo_path_count(t, N(t, "L1"), N(t, "L2")), 4);
    assert_int_equal(topo_path_count(t, N(t, "H1"), N(t, "H5")), 4);
    assert_int_equal(topo_meet_tier(t, N(t, "L1"), N(t, "L2")), TOPO_SPINE);
    check_all_paths(t, N(t, "L1"), N(t, "L2"));
    check_all_paths(t, N(t, "H1"), N(t, "H5"));
    check_all_paths(t, N(t, "L1"), N(t, "H5"));   /* leaf to a remote host */
    /* Path idx follows spine order: path 2 of L1->L2 crosses S3. */
    uint32_t d[TOPO_MAX_HOPS];
    assert_int_equal(topo_path_dirs(t, N(t, "L1"), N(t, "L2"), 2, d, TOPO_MAX_HOPS), 2);
    assert_int_equal(topo_dir_to(t, d[0]), N(t, "S3"));
    topo_free(t);
}

/* The controller's question: flow H1->H16 leaves L1 by its uplink to S2. */
static void test_prefix_range(void **state)
{
    (void)state;
    struct topo *t = gen("fattree:k=4");
    uint32_t h1 = N(t, "H1"), h16 = N(t, "H16"), pre[2];
    assert_int_equal(topo_dir_between(t, h1, N(t, "L1"), &pre[0]), 0);
    assert_int_equal(topo_dir_between(t, N(t, "L1"), N(t, "S2"), &pre[1]), 0);
    uint64_t first, count;
    assert_int_equal(topo_path_prefix_range(t, h1, h16, pre, 2, &first, &count), 0);
    assert_int_equal(first, 2);
    assert_int_equal(count, 2);
    /* A step that leads away from H16 is not a prefix. */
    assert_int_equal(topo_dir_between(t, N(t, "L1"), N(t, "H2"), &pre[1]), 0);
    assert_int_equal(topo_path_prefix_range(t, h1, h16, pre, 2, &first, &count), -EINVAL);
    assert_int_equal(count, 0);
    topo_free(t);
}

/* Irregular: L2 reaches only S2; S1 reaches only SS1, S2 only SS2 and S3
 * both; a parallel L1-S1 link; H3 dual-homed to L2 and L3. */
#define NODE(n, tr) "{\"name\": \"" n "\", \"tier\": \"" tr "\"}"
#define LINK(a, b) "{\"a\": \"" a "\", \"b\": \"" b "\", \"gbps\": 10}"
static const char irregular[] =
    "{\"tiers\": [\"host\", \"leaf\", \"spine\", \"superspine\"], \"nodes\": ["
    NODE("H1", "host") "," NODE("H2", "host") "," NODE("H3", "host") "," NODE("H4", "host") ","
    NODE("L1", "leaf") "," NODE("L2", "leaf") "," NODE("L3", "leaf") "," NODE("L4", "leaf") ","
    NODE("S1", "spine") "," NODE("S2", "spine") "," NODE("S3", "spine") "," NODE("S4", "spine") ","
    NODE("SS1", "superspine") "," NODE("SS2", "superspine")
    "], \"links\": ["
    LINK("H1", "L1") "," LINK("H2", "L2") "," LINK("H3", "L2") "," LINK("H3", "L3") "," LINK("H4", "L4") ","
    LINK("L1", "S1") "," LINK("L1", "S1") "," LINK("L1", "S3") "," LINK("L2", "S2") "," LINK("L3", "S3") ","
    LINK("L4", "S4") "," LINK("S1", "SS1") "," LINK("S2", "SS2") "," LINK("S3", "SS1") "," LINK("S3", "SS2") ","
    LINK("S4", "SS1") "," LINK("S4", "SS2")
    "]}";

static void test_irregular_exact(void **state)
{
    (void)state;
    struct topo *t = NULL;
    char err[256] = "";
    if (topo_from_json(irregular, strlen(irregular), "irregular", &t, err, sizeof(err)) < 0)
        fail_msg("%s", err);
    for (uint32_t a = 0; a < t->nnodes; a++)
        for (uint32_t b = 0; b < t->nnodes; b++) {
            uint64_t c = topo_path_count(t, a, b);
            assert_int_equal(c, brute_count(t, a, b));
            if (c)
                check_all_paths(t, a, b);
            else
                assert_int_equal(topo_meet_tier(t, a, b), -ENOENT);
        }
    /* H1 -> H2: L1's uplinks via S1 (x2) reach only SS1, which cannot reach
     * L2; only L1-S3-SS2-S2-L2 works. */
    assert_int_equal(topo_path_count(t, N(t, "H1"), N(t, "H2")), 1);
    /* H1 -> H3 meets at S3 via L3 (spine tier), not higher. */
    assert_int_equal(topo_meet_tier(t, N(t, "H1"), N(t, "H3")), TOPO_SPINE);
    assert_int_equal(topo_path_count(t, N(t, "H1"), N(t, "H3")), 1);
    /* H1 -> H4: 2 (parallel S1 links) via SS1 + S3 via SS1 + S3 via SS2 = 4. */
    assert_int_equal(topo_path_count(t, N(t, "H1"), N(t, "H4")), 4);
    topo_free(t);
}

static void test_clos3_scale(void **state)
{
    (void)state;
    struct topo *t = gen("clos3:pods=8,racks=192,hosts=16,oversub=7");
    uint32_t h1 = t->hosts[0], far = t->hosts[t->nhosts - 1];
    assert_int_equal(topo_path_count(t, h1, far), 64);   /* 16 spine planes x 4 superspines */
    assert_int_equal(topo_path_count(t, h1, N(t, "H17")), 16);
    assert_int_equal(topo_meet_tier(t, h1, far), TOPO_SUPERSPINE);
    check_all_paths(t, h1, far);
    check_all_paths(t, N(t, "L1"), N(t, "L1536"));
    topo_free(t);
}

/* The closed-form decoder (on for regular Clos fabrics) gives the general
 * algorithm's count, meet tier and walk for every path of every node pair of
 * small fabrics; a second copy of each fabric has it turned off. */
static void test_fast_equals_general(void **state)
{
    (void)state;
    static const char *const specs[] = { "clos3:pods=2,racks=2,hosts=2,spines=2,superspines=4", "fattree:k=4",
                                         "leafspine:leaves=3,spines=4,hosts=2", "clos3:pods=3,racks=2,hosts=1,spines=3,superspines=6" };
    for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++) {
        struct topo *f = gen(specs[s]), *g = gen(specs[s]);
        assert_true(f->path_fast);
        assert_int_equal(topo_path_set_fast(g, 0), 0);
        for (uint32_t a = 0; a < f->nnodes; a++)
            for (uint32_t b = 0; b < f->nnodes; b++) {
                uint64_t c = topo_path_count(g, a, b);
                assert_int_equal(topo_path_count(f, a, b), c);
                assert_int_equal(topo_meet_tier(f, a, b), topo_meet_tier(g, a, b));
                for (uint64_t k = 0; k <= c; k++) {   /* k == c: both -ERANGE */
                    uint32_t x[TOPO_MAX_HOPS], y[TOPO_MAX_HOPS];
                    int n1 = topo_path_dirs(f, a, b, k, x, TOPO_MAX_HOPS), n2 = topo_path_dirs(g, a, b, k, y, TOPO_MAX_HOPS);
                    assert_int_equal(n1, n2);
                    assert_memory_equal(x, y, (size_t)(n1 > 0 ? n1 : 0) * sizeof(uint32_t));
                }
            }
        assert_int_equal(topo_path_set_fast(g, 1), 1);
        topo_free(f);
        topo_free(g);
    }
    /* Irregular files keep the general algorithm. */
    struct topo *t = NULL;
    char err[256] = "";
    if (topo_from_json(irregular, strlen(irregular), "irregular", &t, err, sizeof(err)) < 0)
        fail_msg("%s", err);
    assert_false(t->path_fast);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fattree_counts),
        cmocka_unit_test(test_fattree_all_pairs),
        cmocka_unit_test(test_leafspine),
        cmocka_unit_test(test_prefix_range),
        cmocka_unit_test(test_irregular_exact),
        cmocka_unit_test(test_clos3_scale),
        cmocka_unit_test(test_fast_equals_general),
    };
    return cmocka_run_group_tests_name("paths", tests, NULL, NULL);
}
