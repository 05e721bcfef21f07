/* Unit tests for policy/granularity's granularity_assign on a 2x2
 * leaf/spine (2 hosts a leaf, 100 Gb/s): flows from one leaf to one host
 * are one unit (they end on one route), units are placed by their summed
 * demand, a unit with an unmovable flow stays where that flow is, and the
 * result counts flows. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

#include "policy/assign.h"
#include "policy/granularity.h"
#include "policy/topo.h"

static struct topo *t;

static int setup(void **st)
{
    (void)st;
    char err[256];
    return topo_load("leafspine:leaves=2,spines=2,hosts=2,gbps=100", &t, err, sizeof(err));
}

static int teardown(void **st)
{
    (void)st;
    topo_free(t);
    return 0;
}

/* The spine flow f's path p crosses (its second hop's far end). */
static const char *spine(const struct assign_flow *f, uint32_t p)
{
    uint32_t dirs[TOPO_MAX_HOPS];
    assert_true(topo_path_dirs(t, f->src, f->dst, p, dirs, TOPO_MAX_HOPS) >= 2);
    return t->nodes[topo_dir_to(t, dirs[1])].name;
}

/* H1 and H2 (both on L1) each to H3 and to H4, 40 Gb/s, on spines `on`
 * (path index = spine - 1). */
static void flows4(struct assign_flow fl[4], const char *on)
{
    const char *src[] = {"H1", "H2", "H1", "H2"}, *dst[] = {"H3", "H3", "H4", "H4"};
    for (int i = 0; i < 4; i++)
        fl[i] = (struct assign_flow){topo_node_by_name(t, src[i]), topo_node_by_name(t, dst[i]), 40, 0,
                                     (uint32_t)(on[i] - '1'), (uint32_t)i, true};
    for (int i = 0; i < 4; i++)
        assert_int_equal(spine(&fl[i], fl[i].path)[1], on[i]);
}

static void run(struct assign_flow fl[4], uint32_t path[4], struct assign_result *res)
{
    struct assign_input in = {.t = t, .flows = fl, .nflows = 4};
    char err[256];
    *res = (struct assign_result){.path = path};
    assert_int_equal(granularity_assign(ASSIGN_TIERFLOW, &in, NULL, res, err, sizeof(err)), 0);
}

/* Three flows on S1 (120 Gb/s on 100): per flow one of them would move;
 * per destination one host's pair moves, the other's stays together. */
static void groups_share_a_route(void **st)
{
    (void)st;
    struct assign_flow fl[4];
    uint32_t path[4];
    struct assign_result res;
    flows4(fl, "1112");
    run(fl, path, &res);
    assert_string_equal(spine(&fl[0], path[0]), spine(&fl[1], path[1]));
    assert_string_equal(spine(&fl[2], path[2]), spine(&fl[3], path[3]));
    assert_string_not_equal(spine(&fl[0], path[0]), spine(&fl[2], path[2]));
    assert_true(res.max_util > 0.79 && res.max_util < 0.81);   /* 80 Gb/s on each uplink */
    assert_int_equal(res.unroutable, 0);
    uint32_t moved = 0;
    for (int i = 0; i < 4; i++)
        moved += path[i] != fl[i].path;
    assert_int_equal(res.moved, moved);
}

/* H1's flow to H3 cannot move: its unit stays on S1 with it, the flows
 * to H4 go to S2 together. */
static void unmovable_holds_its_unit(void **st)
{
    (void)st;
    struct assign_flow fl[4];
    uint32_t path[4];
    struct assign_result res;
    flows4(fl, "1211");
    fl[0].movable = false;
    run(fl, path, &res);
    assert_string_equal(spine(&fl[0], path[0]), "S1");
    assert_string_equal(spine(&fl[1], path[1]), "S1");
    assert_string_equal(spine(&fl[2], path[2]), "S2");
    assert_string_equal(spine(&fl[3], path[3]), "S2");
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(groups_share_a_route), cmocka_unit_test(unmovable_holds_its_unit)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
