/* Unit tests for controller/routing_view: longest match, the narrowing rule
 * (next hops, routes, rules), what views say about link directions. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "common/util.h"
#include "controller/routing_view.h"
#include "policy/topo.h"

static struct plan_nh nh4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, const char *dev)
{
    struct plan_nh n = {.af = 4, .via = {a, b, c, d}, .weight = 1};
    tf_strlcpy(n.dev, dev, sizeof(n.dev));
    return n;
}

/* Appends a routing route (nnh may be 0: a blackhole). */
static void rt(struct routing_view *v, uint8_t third, uint8_t plen, int nnh, const struct plan_nh *nh)
{
    struct plan_route r = {.sw = "L1", .table = ROUTING_VIEW_MAIN, .af = 4, .dst_len = plen,
                           .dst = {10, 0, third, 0}, .nnh = (uint8_t)nnh};
    if (plen == 0)
        memset(r.dst, 0, sizeof(r.dst));
    for (int i = 0; i < nnh; i++)
        r.nh[i] = nh[i];
    assert_int_equal(routing_view_add_route(v, &r), 0);
}

static void base_view(struct routing_view *v)
{
    routing_view_init(v);
    assert_int_equal(routing_view_add_link(v, "eth1", true), 0);
    assert_int_equal(routing_view_add_link(v, "eth2", true), 0);
    struct plan_nh both[2] = {nh4(10, 1, 1, 0, "eth1"), nh4(10, 1, 2, 0, "eth2")};
    rt(v, 2, 24, 2, both);                 /* L2's prefix over both spines */
    struct plan_nh one[1] = {nh4(10, 1, 1, 0, "eth1")};
    rt(v, 0, 16, 1, one);                  /* a covering /16 over S1 only */
}

static void test_lookup_and_offers(void **state)
{
    (void)state;
    struct routing_view v;
    base_view(&v);
    uint8_t p2[16] = {10, 0, 2, 0}, p3[16] = {10, 0, 3, 0}, other[16] = {192, 0, 2, 0};
    const struct plan_route *r = routing_view_lookup(&v, 4, p2, 24);
    assert_non_null(r);
    assert_int_equal(r->dst_len, 24);
    assert_int_equal(routing_view_lookup(&v, 4, p3, 24)->dst_len, 16);   /* falls to the /16 */
    assert_null(routing_view_lookup(&v, 4, other, 24));
    struct plan_nh s1 = nh4(10, 1, 1, 0, "eth1"), s2 = nh4(10, 1, 2, 0, "eth2");
    assert_true(routing_view_offers(&v, 4, p2, 24, &s1));
    assert_true(routing_view_offers(&v, 4, p2, 24, &s2));
    assert_true(routing_view_offers(&v, 4, p3, 24, &s1));
    assert_false(routing_view_offers(&v, 4, p3, 24, &s2));     /* the /16 lacks S2 */
    assert_false(routing_view_offers(&v, 4, other, 24, &s1));  /* no route at all */
    struct plan_nh wrongdev = nh4(10, 1, 1, 0, "eth2");
    assert_false(routing_view_offers(&v, 4, p2, 24, &wrongdev));
    /* Interface down: not offered, whatever the table says. */
    v.links[0].up = false;
    assert_false(routing_view_offers(&v, 4, p2, 24, &s1));
    assert_false(routing_view_link_up(&v, "nosuch0"));
    /* A blackhole more specific than the /16 offers nothing. */
    rt(&v, 3, 24, 0, NULL);
    assert_false(routing_view_offers(&v, 4, p3, 24, &s1));
    routing_view_free(&v);
}

static void test_unnumbered_and_nh_objects(void **state)
{
    (void)state;
    struct routing_view v;
    routing_view_init(&v);
    assert_int_equal(routing_view_add_link(&v, "eth1", true), 0);
    assert_int_equal(routing_view_add_link(&v, "eth2", true), 0);
    /* BGP unnumbered: the gateway is IPv6 link-local (af 0 here), matched
     * by interface alone. */
    struct plan_nh ll = {.af = 0, .weight = 1};
    tf_strlcpy(ll.dev, "eth2", sizeof(ll.dev));
    rt(&v, 2, 24, 1, &ll);
    uint8_t p2[16] = {10, 0, 2, 0};
    struct plan_nh s1 = nh4(10, 1, 1, 0, "eth1"), s2 = nh4(10, 1, 2, 0, "eth2");
    assert_true(routing_view_offers(&v, 4, p2, 24, &s2));
    assert_false(routing_view_offers(&v, 4, p2, 24, &s1));
    /* Next-hop objects hide gateways: only interface state counts. */
    v.nh_objects = true;
    assert_true(routing_view_offers(&v, 4, p2, 24, &s1));
    v.links[0].up = false;
    assert_false(routing_view_offers(&v, 4, p2, 24, &s1));
    routing_view_clear(&v);
    assert_false(v.nh_objects);
    assert_int_equal(v.rt.nroutes, 0);
    routing_view_free(&v);
}

static struct plan_rule rule(uint32_t prio, uint32_t table, uint8_t host)
{
    return (struct plan_rule){.sw = "L1", .prio = prio, .table = table, .af = 4, .ipproto = 6, .src_len = 32,
                              .dst_len = 32, .sport = (uint16_t)(1000 + host), .dport = 5001, .dscp = -1,
                              .src = {10, 0, 1, 1}, .dst = {10, 0, 2, host}};
}

static void test_narrow(void **state)
{
    (void)state;
    struct routing_view v;
    base_view(&v);
    struct plan in, out;
    plan_init(&in);
    /* Pins: table 7700 over S1, 7701 over S2; a class table over both. */
    struct plan_route r0 = {.sw = "L1", .table = 7700, .af = 4, .dst_len = 24, .dst = {10, 0, 2, 0}, .nnh = 1,
                            .nh = {nh4(10, 1, 1, 0, "eth1")}};
    struct plan_route r1 = r0, rc = r0;
    r1.table = 7701;
    r1.nh[0] = nh4(10, 1, 2, 0, "eth2");
    rc.table = 7828;
    rc.nnh = 2;
    rc.nh[1] = nh4(10, 1, 2, 0, "eth2");
    assert_int_equal(plan_add_route(&in, &r0), 0);
    assert_int_equal(plan_add_route(&in, &r1), 0);
    assert_int_equal(plan_add_route(&in, &rc), 0);
    struct plan_rule c = {.sw = "L1", .prio = 20256, .table = 7828, .af = 4, .fwmark = 0x10, .dscp = -1};
    struct plan_rule p0 = rule(20000, 7700, 1), p1 = rule(20001, 7701, 2), p2 = rule(20001, 7701, 3);
    assert_int_equal(plan_add_rule(&in, &p0), 0);
    assert_int_equal(plan_add_rule(&in, &p1), 0);
    assert_int_equal(plan_add_rule(&in, &p2), 0);
    assert_int_equal(plan_add_rule(&in, &c), 0);
    plan_sort(&in);

    /* Everything offered: unchanged. */
    struct routing_narrowed n;
    assert_int_equal(routing_view_narrow(&v, &in, &out, &n), 0);
    assert_true(plan_equal(&in, &out));
    assert_int_equal(n.nh_dropped + n.routes_dropped + n.rules_dropped, 0);
    plan_free(&out);

    /* BGP withdraws S2 for 10.0.2.0/24: 7701 goes with its two rules; the
     * class route keeps S1 only; the class rule stays. */
    for (size_t i = 0; i < v.rt.nroutes; i++)
        if (v.rt.routes[i].dst_len == 24) {
            v.rt.routes[i].nnh = 1;
            v.rt.routes[i].nh[0] = nh4(10, 1, 1, 0, "eth1");
        }
    assert_int_equal(routing_view_narrow(&v, &in, &out, &n), 0);
    assert_int_equal(n.nh_dropped, 2);
    assert_int_equal(n.routes_dropped, 1);
    assert_int_equal(n.rules_dropped, 2);
    assert_string_equal(n.first, "10.0.2.0/24 table 7701 via 10.1.2.0 dev eth2");
    assert_int_equal(out.nroutes, 2);
    assert_int_equal(out.nrules, 2);
    for (size_t i = 0; i < out.nroutes; i++) {
        assert_int_equal(out.routes[i].nnh, 1);
        assert_string_equal(out.routes[i].nh[0].dev, "eth1");
    }
    for (size_t i = 0; i < out.nrules; i++)
        assert_int_not_equal(out.rules[i].table, 7701);
    plan_free(&out);

    /* S1's link down too: nothing of ours is left. */
    v.links[0].up = false;
    assert_int_equal(routing_view_narrow(&v, &in, &out, NULL), 0);
    assert_int_equal(out.nroutes + out.nrules, 0);
    plan_free(&out);
    plan_free(&in);
    routing_view_free(&v);
}

#define TOPO                                                                                                  \
    "{\"name\": \"rv\", \"tiers\": [\"host\", \"leaf\", \"spine\"], \"nodes\": ["                          \
    "{\"name\": \"H1\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"},"                                         \
    "{\"name\": \"H2\", \"tier\": \"host\", \"addr\": \"10.0.2.1\"},"                                         \
    "{\"name\": \"L1\", \"tier\": \"leaf\", \"prefix\": \"10.0.1.0/24\"},"                                    \
    "{\"name\": \"L2\", \"tier\": \"leaf\", \"prefix\": \"10.0.2.0/24\"},"                                    \
    "{\"name\": \"S1\", \"tier\": \"spine\"}, {\"name\": \"S2\", \"tier\": \"spine\"}],"                      \
    "\"links\": [{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100}, {\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100}," \
    "{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"eth1\", \"b_ip\": \"10.1.1.0\", \"b_if\": \"l1\"}," \
    "{\"a\": \"L1\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"eth2\", \"b_ip\": \"10.1.2.0\", \"b_if\": \"l1\"}," \
    "{\"a\": \"L2\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"eth1\", \"b_ip\": \"10.2.1.0\", \"b_if\": \"l2\"}," \
    "{\"a\": \"L2\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"eth2\", \"b_ip\": \"10.2.2.0\", \"b_if\": \"l2\"}]}"

static uint32_t dir(const struct topo *t, const char *a, const char *b)
{
    uint32_t d = 0;
    assert_int_equal(topo_dir_between(t, topo_node_by_name(t, a), topo_node_by_name(t, b), &d), 0);
    return d;
}

static void test_down_dirs(void **state)
{
    (void)state;
    struct topo *t;
    char err[256];
    assert_int_equal(topo_from_json(TOPO, strlen(TOPO), "test", &t, err, sizeof(err)), 0);
    uint32_t l1 = topo_node_by_name(t, "L1"), nd = 2 * t->nlinks;
    uint8_t down[32], inf[32];
    struct routing_view v;
    base_view(&v);
    memset(down, 0, sizeof(down));
    memset(inf, 0, sizeof(inf));
    routing_view_down_dirs(t, l1, &v, down, inf);
    for (uint32_t d = 0; d < nd; d++)
        assert_int_equal(down[d] + inf[d], 0);
    /* S2 withdrawn for L2's prefix, and routing uses S2 for nothing else:
     * the session to S2 is what is down (L1 -> S2), nothing beyond. */
    for (size_t i = 0; i < v.rt.nroutes; i++)
        if (v.rt.routes[i].dst_len == 24)
            v.rt.routes[i].nnh = 1;   /* keeps eth1 (sorted first) */
    routing_view_down_dirs(t, l1, &v, down, inf);
    assert_int_equal(down[dir(t, "L1", "S2")], 1);
    assert_int_equal(down[dir(t, "S2", "L2")] + inf[dir(t, "S2", "L2")], 0);
    assert_int_equal(down[dir(t, "S2", "L1")], 0);
    /* S2 still carries another prefix: then it is S2 that lost L2. */
    struct plan_nh s2[1] = {nh4(10, 1, 2, 0, "eth2")};
    rt(&v, 9, 24, 1, s2);
    memset(down, 0, sizeof(down));
    routing_view_down_dirs(t, l1, &v, down, inf);
    assert_int_equal(inf[dir(t, "S2", "L2")], 1);   /* inferred, not local */
    assert_int_equal(down[dir(t, "S2", "L2")], 0);
    assert_int_equal(inf[dir(t, "S1", "L2")], 0);
    assert_int_equal(down[dir(t, "L1", "S2")], 0);
    assert_int_equal(down[dir(t, "L2", "S2")], 0);
    /* L1's eth1 down: both directions of L1-S1; nothing inferred through
     * a link that is itself down. */
    memset(down, 0, sizeof(down));
    memset(inf, 0, sizeof(inf));
    v.links[0].up = false;
    routing_view_down_dirs(t, l1, &v, down, inf);
    assert_int_equal(down[dir(t, "L1", "S1")], 1);
    assert_int_equal(down[dir(t, "S1", "L1")], 1);
    assert_int_equal(down[dir(t, "S1", "L2")] + inf[dir(t, "S1", "L2")], 0);
    routing_view_free(&v);
    topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_and_offers),
        cmocka_unit_test(test_unnumbered_and_nh_objects),
        cmocka_unit_test(test_narrow),
        cmocka_unit_test(test_down_dirs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
