/*
 * Unit tests for controller/bgp_announce.c, the bgp backend's pure part
 * (test_bgp_logic.c drives the whole backend against a fake speaker):
 *   - projection: pins from one leaf to one host over two spines are two
 *     paths weighted by their pins, over one spine one path without a
 *     weight; a pin whose spine no longer reaches the destination is
 *     narrowed away; a class rule has no BGP form and is refused, naming the
 *     switch and the selector;
 *   - the commands: exactly ExaBGP's lines, every announcement (new or
 *     re-weighted) before any withdrawal, counted as added, replaced and
 *     deleted; nothing for equal sets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/bgp_announce.h"
#include "controller/owner.h"
#include "controller/plan.h"
#include "policy/topo.h"

/* Links 0, 1: hosts; 2: L1-S1 (path id 3), 3: L1-S2 (path id 4). */
static const char *topo_json =
    "{\"name\": \"t\", \"tiers\": [\"host\", \"leaf\", \"spine\"], \"nodes\": ["
    "{\"name\": \"H1\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"},"
    "{\"name\": \"H2\", \"tier\": \"host\", \"addr\": \"10.0.2.1\"},"
    "{\"name\": \"L1\", \"tier\": \"leaf\", \"prefix\": \"10.0.1.0/24\"},"
    "{\"name\": \"L2\", \"tier\": \"leaf\", \"prefix\": \"10.0.2.0/24\"},"
    "{\"name\": \"S1\", \"tier\": \"spine\"}, {\"name\": \"S2\", \"tier\": \"spine\"}], \"links\": ["
    "{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100}, {\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100},"
    "{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"S1\", \"a_ip\": \"10.254.0.0\", \"b_ip\": \"10.254.0.1\"},"
    "{\"a\": \"L1\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"S2\", \"a_ip\": \"10.254.0.2\", \"b_ip\": \"10.254.0.3\"},"
    "{\"a\": \"L2\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"S1\", \"a_ip\": \"10.254.0.4\", \"b_ip\": \"10.254.0.5\"},"
    "{\"a\": \"L2\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"S2\", \"a_ip\": \"10.254.0.6\", \"b_ip\": \"10.254.0.7\"}]}";

static struct topo *topo;
static uint32_t *peer_of;
static uint32_t unreachable_link = UINT32_MAX;

static bool reaches(const void *arg, uint32_t link, const uint8_t dst[4])
{
    (void)arg;
    (void)dst;
    return link != unreachable_link;
}

static const char *peer_addr(const void *arg, uint32_t peer)
{
    (void)arg;
    return peer == 0 ? "127.0.0.2" : "127.0.0.3";
}

static struct bgp_announce_ctx ctx(void)
{
    return (struct bgp_announce_ctx){.t = topo, .peer_of = peer_of, .table_base = OWNER_TABLE_BASE_DEFAULT,
                                     .local_as = 64999, .reaches = reaches, .peer_addr = peer_addr};
}

static int setup(void **state)
{
    (void)state;
    char err[256];
    if (topo_from_json(topo_json, strlen(topo_json), "t.json", &topo, err, sizeof(err)))
        return -1;
    peer_of = malloc(topo->nnodes * sizeof(*peer_of));
    for (uint32_t i = 0; i < topo->nnodes; i++)
        peer_of[i] = !strcmp(topo->nodes[i].name, "L1") ? 0 : !strcmp(topo->nodes[i].name, "L2") ? 1 : UINT32_MAX;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(peer_of);
    topo_free(topo);
    return 0;
}

/* A pin on L1 toward H2 through L1's uplink table k (0: S1, 1: S2). */
static void pin(struct plan *p, uint32_t k, uint16_t sport)
{
    struct plan_rule r = {.sw = "L1", .prio = 20000 + k, .table = 7700 + k, .af = 4, .ipproto = 6, .src_len = 32,
                          .dst_len = 32, .sport = sport, .dport = 5001, .dscp = -1, .src = {10, 0, 1, 1},
                          .dst = {10, 0, 2, 1}};
    assert_int_equal(plan_add_rule(p, &r), 0);
    struct plan_route rt = {.sw = "L1", .table = 7700 + k, .af = 4, .dst_len = 24, .dst = {10, 0, 2, 0}, .nnh = 1,
                            .nh = {{.af = 4, .via = {10, 254, 0, (uint8_t)(1 + 2 * k)}, .weight = 1}}};
    snprintf(rt.nh[0].dev, sizeof(rt.nh[0].dev), "S%u", k + 1);
    assert_int_equal(plan_add_route(p, &rt), 0);
}

/* Two pins from L1 to H2 over S1, one over S2. */
static void three_pins(struct plan *p)
{
    plan_init(p);
    pin(p, 0, 1001);
    pin(p, 0, 1002);
    pin(p, 1, 1003);
}

static void project(const struct plan *p, struct bgp_ann **a, size_t *n, size_t *narrowed,
                    struct bgp_announce_refusal *rf)
{
    struct bgp_announce_ctx c = ctx();
    *narrowed = 0;
    memset(rf, 0, sizeof(*rf));
    assert_int_equal(bgp_announce_project(&c, p, a, n, narrowed, rf), 0);
}

static char *diff(const struct bgp_ann *cur, size_t ncur, const struct bgp_ann *next, size_t nnext, size_t *ncmd,
                  struct backend_result *res)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    struct bgp_announce_ctx c = ctx();
    memset(res, 0, sizeof(*res));
    bgp_announce_diff(&c, cur, ncur, next, nnext, f, ncmd, res);
    assert_int_equal(fclose(f), 0);
    return text;
}

static void projection(void **state)
{
    (void)state;
    struct plan p;
    three_pins(&p);
    struct plan_rule cls = {.sw = "L1", .prio = 20000 + OWNER_CLASS_PRIO_OFF,
                            .table = 7700 + OWNER_CLASS_TABLE_OFF, .af = 4, .fwmark = 7, .dscp = -1};
    assert_int_equal(plan_add_rule(&p, &cls), 0);
    struct bgp_ann *a;
    size_t n, narrowed;
    struct bgp_announce_refusal rf;
    project(&p, &a, &n, &narrowed, &rf);
    assert_int_equal(n, 2);
    assert_int_equal(narrowed, 0);
    assert_memory_equal(a[0].via, ((uint8_t[4]){10, 254, 0, 1}), 4);   /* sorted by next hop */
    assert_int_equal(a[0].weight, 2);
    assert_int_equal(a[0].link, 2);
    assert_memory_equal(a[1].via, ((uint8_t[4]){10, 254, 0, 3}), 4);
    assert_int_equal(a[1].weight, 1);
    assert_int_equal(a[0].peer, 0);
    assert_memory_equal(a[0].dst, ((uint8_t[4]){10, 0, 2, 1}), 4);
    assert_int_equal(rf.n, 1);
    assert_string_equal(rf.sw, "L1");
    assert_int_equal(rf.sels, PLAN_SEL_FWMARK);
    assert_non_null(strstr(rf.why, "switch L1: rule '"));
    assert_non_null(strstr(rf.why, "has no BGP form"));
    free(a);
    /* S2 no longer reaches H2's leaf: its pin is given up, S1's path
     * stands alone, without a weight. */
    unreachable_link = 3;
    project(&p, &a, &n, &narrowed, &rf);
    unreachable_link = UINT32_MAX;
    assert_int_equal(n, 1);
    assert_int_equal(narrowed, 1);
    assert_int_equal(a[0].weight, 0);
    free(a);
    plan_free(&p);
}

static void commands(void **state)
{
    (void)state;
    struct plan p;
    three_pins(&p);
    struct bgp_ann *both, *one;
    size_t nboth, none, narrowed, ncmd;
    struct bgp_announce_refusal rf;
    project(&p, &both, &nboth, &narrowed, &rf);
    unreachable_link = 3;
    project(&p, &one, &none, &narrowed, &rf);
    unreachable_link = UINT32_MAX;
    struct backend_result res;
    /* From nothing: two announcements with their bandwidths. */
    char *t = diff(NULL, 0, both, nboth, &ncmd, &res);
    assert_string_equal(t, "neighbor 127.0.0.2 announce route 10.0.2.1/32 path-information 0.0.0.3 next-hop 10.254.0.1 "
                           "community [no-advertise] extended-community [bandwidth:64999:250000]\n"
                           "neighbor 127.0.0.2 announce route 10.0.2.1/32 path-information 0.0.0.4 next-hop 10.254.0.3 "
                           "community [no-advertise] extended-community [bandwidth:64999:125000]\n");
    assert_int_equal(ncmd, 2);
    assert_int_equal(res.routes_added, 2);
    free(t);
    /* Both -> S1 alone: S1 re-announced without a weight first, then S2
     * withdrawn (make-before-break). */
    t = diff(both, nboth, one, none, &ncmd, &res);
    assert_string_equal(t, "neighbor 127.0.0.2 announce route 10.0.2.1/32 path-information 0.0.0.3 next-hop 10.254.0.1 "
                           "community [no-advertise]\n"
                           "neighbor 127.0.0.2 withdraw route 10.0.2.1/32 path-information 0.0.0.4\n");
    assert_int_equal(ncmd, 2);
    assert_int_equal(res.routes_replaced, 1);
    assert_int_equal(res.routes_deleted, 1);
    assert_int_equal(res.routes_added, 0);
    free(t);
    /* Equal sets: nothing to say. */
    t = diff(both, nboth, both, nboth, &ncmd, &res);
    assert_string_equal(t, "");
    assert_int_equal(ncmd, 0);
    free(t);
    /* To nothing: withdrawals only. */
    t = diff(one, none, NULL, 0, &ncmd, &res);
    assert_string_equal(t, "neighbor 127.0.0.2 withdraw route 10.0.2.1/32 path-information 0.0.0.3\n");
    assert_int_equal(res.routes_deleted, 1);
    free(t);
    free(both);
    free(one);
    plan_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(projection), cmocka_unit_test(commands)};
    return cmocka_run_group_tests(tests, setup, teardown);
}
