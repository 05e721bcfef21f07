/* Unit tests for sim/bound: validity by brute force (bound <= optimum
 * over every unsplittable assignment) on random small instances. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "policy/assign.h"
#include "sim/bound.h"
#include "policy/topo.h"

static uint64_t rng = 42;
static uint32_t rnd(uint32_t n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33) % n;
}

/* Tries every combination of path indices; returns the optimum max util. */
static double brute(const struct assign_input *in, uint32_t *path, const uint64_t *count, double *load)
{
    for (uint32_t f = 0; f < in->nflows; f++)
        path[f] = 0;
    double best = 1e300;
    for (;;) {
        double m = assign_loads(in, path, load);
        if (m < best)
            best = m;
        uint32_t f = 0;
        while (f < in->nflows && ++path[f] == count[f])
            path[f++] = 0;
        if (f == in->nflows)
            return best;
    }
}

static void check_topology(const char *spec, int rounds, uint32_t maxflows, bool with_bg)
{
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load(spec, &t, err, sizeof(err)), 0);
    struct assign_paths *ps;
    assert_int_equal(assign_paths_new(t, &ps), 0);
    struct assign_flow fl[8];
    uint32_t path[8], tf[8];
    uint64_t count[8];
    double *load = calloc(2 * t->nlinks, sizeof(double)), *bg = calloc(2 * t->nlinks, sizeof(double));
    for (int round = 0; round < rounds; round++) {
        uint32_t n = 1 + rnd(maxflows);
        uint64_t combos = 1;
        for (uint32_t f = 0; f < n; f++) {
            uint32_t a = rnd(t->nhosts), b = rnd(t->nhosts);
            fl[f] = (struct assign_flow){ t->hosts[a], t->hosts[b], 0.05 + rnd(100) / 50.0, 0, ASSIGN_NO_PATH, rnd(1000), true };
            count[f] = assign_paths_count(ps, fl[f].src, fl[f].dst);
            combos *= count[f];
        }
        if (combos > 20000)
            continue;
        for (uint32_t d = 0; d < 2 * t->nlinks; d++)
            bg[d] = with_bg && rnd(4) == 0 ? rnd(50) / 100.0 : 0;
        struct assign_input in = { .t = t, .paths = ps, .bg_gbps = bg, .flows = fl, .nflows = n };
        double opt = brute(&in, path, count, load);
        struct bound_result b;
        assert_int_equal(bound_max_util(&in, &b), 0);
        if (b.value > opt + 1e-9)
            fail_msg("%s round %d: bound %g (%s) above optimum %g", spec, round, b.value, b.why, opt);
        struct assign_result r = { .path = tf };
        assert_int_equal(assign_run(ASSIGN_TIERFLOW, &in, NULL, &r, err, sizeof(err)), 0);
        assert_true(r.max_util >= opt - 1e-9);
    }
    free(load);
    free(bg);
    assign_paths_free(ps);
    topo_free(t);
}

static void test_valid_leafspine(void **state)
{
    (void)state;
    check_topology("leafspine:leaves=3,spines=2,hosts=2,gbps=1", 300, 6, false);
    check_topology("leafspine:leaves=2,spines=3,hosts=2,gbps=1", 200, 5, true);
}

static void test_valid_fattree(void **state)
{
    (void)state;
    check_topology("fattree:k=4,gbps=1", 200, 4, false);
    check_topology("fattree:k=4,gbps=1", 100, 4, true);
}

static void test_valid_clos3(void **state)
{
    (void)state;
    check_topology("clos3:pods=2,racks=2,hosts=2,spines=2,superspines=4,oversub=2", 200, 4, false);
}

/* Tight cases: a leaf's uplinks carry all its hosts' cross traffic. */
static void test_cut_value(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load("leafspine:leaves=2,spines=2,hosts=4,gbps=10", &t, err, sizeof(err)), 0);
    struct assign_flow fl[4];
    for (int i = 0; i < 4; i++)
        fl[i] = (struct assign_flow){ t->hosts[i], t->hosts[4 + i], 8, 0, ASSIGN_NO_PATH, 0, true };
    struct assign_input in = { .t = t, .flows = fl, .nflows = 4 };
    struct bound_result b;
    assert_int_equal(bound_max_util(&in, &b), 0);
    /* 32 gbps leave L1 over its uplinks; each NIC sends 8 of 10. */
    double cap = 0;
    uint32_t l1 = topo_node_by_name(t, "L1");
    for (uint32_t k = 0; k < t->nodes[l1].up_count; k++)
        cap += t->links[t->up_links[t->nodes[l1].up_first + k]].gbps;
    double want = 32 / cap > 0.8 ? 32 / cap : 0.8;
    assert_true(b.value > want - 1e-9 && b.value < want + 1e-9);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_leafspine), cmocka_unit_test(test_valid_fattree),
        cmocka_unit_test(test_valid_clos3), cmocka_unit_test(test_cut_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
