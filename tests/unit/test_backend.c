/*
 * Unit tests for controller/backend.c, the dispatcher in front of the
 * kinds (test_plan.c covers the plan kind's files, test_nl_backend.c and
 * test_bgp_logic.c the netlink and bgp kinds against a kernel and a fake
 * speaker):
 *   - the kinds table: an unknown kind is refused by backend_open and
 *     backend_check_topo, naming it and listing the known ones; NULL is
 *     "none"; what each kind is (acts, per destination, its name);
 *   - each kind's topology check: the kinds that act refuse a topology
 *     with an uplink they cannot express, naming the kind and the link;
 *     "none" takes it; all take a complete one;
 *   - the configuration bounds checked at open (priority span, table base,
 *     reserved route protocols), each with its own message;
 *   - open and close of the none and plan kinds, and what the dispatcher
 *     gives them by default: no routing view (-EOPNOTSUPP, nothing down),
 *     no JSON, no metrics; a withdraw of the plan kind empties it;
 *   - a plan outside tierflow's ranges is refused and nothing changes; the
 *     next good apply makes the backend healthy again;
 *   - backend_result_unsup merges refusals per switch and keeps the first
 *     reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/backend.h"
#include "controller/owner.h"
#include "controller/plan.h"
#include "policy/topo.h"

/* A 2-leaf, 2-spine fabric; each leaf has two uplinks, so every uplink
 * must name its interface and next hop for a kind that acts. %s: the
 * first uplink's interface (a_if), "" to leave it out. */
#define TOPO_FMT \
    "{\"name\": \"t\", \"tiers\": [\"host\", \"leaf\", \"spine\"], \"nodes\": [" \
    "{\"name\": \"H1\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"}," \
    "{\"name\": \"H2\", \"tier\": \"host\", \"addr\": \"10.0.2.1\"}," \
    "{\"name\": \"L1\", \"tier\": \"leaf\", \"prefix\": \"10.0.1.0/24\"}," \
    "{\"name\": \"L2\", \"tier\": \"leaf\", \"prefix\": \"10.0.2.0/24\"}," \
    "{\"name\": \"S1\", \"tier\": \"spine\"}, {\"name\": \"S2\", \"tier\": \"spine\"}], \"links\": [" \
    "{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100}, {\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100}," \
    "{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 100, %s\"a_ip\": \"10.254.0.0\", \"b_ip\": \"10.254.0.1\"}," \
    "{\"a\": \"L1\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"S2\", \"a_ip\": \"10.254.0.2\", \"b_ip\": \"10.254.0.3\"}," \
    "{\"a\": \"L2\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"S1\", \"a_ip\": \"10.254.0.4\", \"b_ip\": \"10.254.0.5\"}," \
    "{\"a\": \"L2\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"S2\", \"a_ip\": \"10.254.0.6\", \"b_ip\": \"10.254.0.7\"}]}"

static struct topo *load_topo(const char *first_if)
{
    char json[2048], err[256] = "";
    snprintf(json, sizeof(json), TOPO_FMT, first_if);
    struct topo *t = NULL;
    assert_int_equal(topo_from_json(json, strlen(json), "t.json", &t, err, sizeof(err)), 0);
    return t;
}

static struct plan_rule rule(const char *sw, uint32_t prio, uint32_t table, uint16_t sport)
{
    struct plan_rule r = {.prio = prio, .table = table, .af = 4, .ipproto = 6, .src_len = 32, .dst_len = 32,
                          .sport = sport, .dport = 5001, .dscp = -1, .src = {10, 0, 1, 1}, .dst = {10, 0, 2, 1}};
    snprintf(r.sw, sizeof(r.sw), "%s", sw);
    return r;
}

static const char *const known = "not one of netlink, plan, bgp, none";

static void unknown_kind_refused(void **state)
{
    (void)state;
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    struct backend *b = NULL;
    char err[256] = "";
    assert_int_equal(backend_open("frr", &cfg, &b, err, sizeof(err)), -EINVAL);
    assert_null(b);
    assert_string_equal(err, "backend 'frr': not one of netlink, plan, bgp, none");
    /* Names are exact: no prefix or case folding. */
    const char *near[] = {"net", "netlinks", "Plan", "", "none "};
    for (size_t i = 0; i < sizeof(near) / sizeof(near[0]); i++) {
        err[0] = '\0';
        assert_int_equal(backend_open(near[i], &cfg, &b, err, sizeof(err)), -EINVAL);
        char want[96];
        snprintf(want, sizeof(want), "backend '%s': %s", near[i], known);
        assert_string_equal(err, want);
    }
    struct topo *t = load_topo("\"a_if\": \"S1\", ");
    err[0] = '\0';
    assert_int_equal(backend_check_topo("frr", t, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "backend 'frr': not one of netlink, plan, bgp, none");
    /* A long name is cut in the message, not the buffer overrun. */
    char longname[300];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(backend_open(longname, &cfg, &b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, known));
    assert_true(strlen(err) < 100);
    topo_free(t);
}

/* What each row says, seen through an open backend of that kind. */
static void kinds_table(void **state)
{
    (void)state;
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    struct backend *b = NULL;
    char err[256] = "", dir[] = "/tmp/tfbeXXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(backend_open(NULL, &cfg, &b, err, sizeof(err)), 0);
    assert_string_equal(backend_kind(b), "none");
    assert_false(backend_acts(b));
    assert_false(backend_per_destination(b));
    assert_true(backend_healthy(b));
    backend_close(b);
    assert_int_equal(backend_open("none", &cfg, &b, err, sizeof(err)), 0);
    assert_string_equal(backend_kind(b), "none");
    assert_false(backend_acts(b));
    backend_close(b);
    cfg.plan_dir = dir;
    assert_int_equal(backend_open("plan", &cfg, &b, err, sizeof(err)), 0);
    assert_string_equal(backend_kind(b), "plan");
    assert_true(backend_acts(b));
    assert_false(backend_per_destination(b));
    assert_true(backend_healthy(b));
    backend_close(b);
    /* bgp without a topology: refused by its own open, after the table
     * found it (its message, not the unknown-kind one). */
    assert_int_equal(backend_open("bgp", &cfg, &b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bgp backend: needs a topology"));
    backend_close(NULL);   /* as every caller's cleanup does */
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void topology_check_per_kind(void **state)
{
    (void)state;
    struct topo *full = load_topo("\"a_if\": \"S1\", "), *lacking = load_topo("");
    const char *acting[] = {"netlink", "plan", "bgp"};
    char err[256], want[256];
    for (size_t i = 0; i < 3; i++) {
        err[0] = '\0';
        assert_int_equal(backend_check_topo(acting[i], full, err, sizeof(err)), 0);
        assert_int_equal(backend_check_topo(acting[i], lacking, err, sizeof(err)), -EINVAL);
        snprintf(want, sizeof(want), "backend %s cannot program this topology: link L1-S1: no interface at the "
                 "lower end (a_if/b_if) for the next hop", acting[i]);
        assert_string_equal(err, want);
    }
    /* none programs nothing: any topology will do. */
    err[0] = '\0';
    assert_int_equal(backend_check_topo("none", lacking, err, sizeof(err)), 0);
    assert_int_equal(backend_check_topo(NULL, lacking, err, sizeof(err)), 0);
    assert_string_equal(err, "");
    topo_free(full);
    topo_free(lacking);
}

static void config_bounds(void **state)
{
    (void)state;
    struct backend_cfg cfg;
    struct backend *b = NULL;
    char err[256];
    struct {
        uint32_t prio_min, prio_max, table_base;
        uint8_t proto;
        const char *msg;
    } bad[] = {
        {20000, 20000 + OWNER_PRIO_SPAN - 2, 7700, 77, "rule priorities 20000-20510: need 1.. and at least 512 of them"},
        {0, 29999, 7700, 77, "rule priorities 0-29999: need 1.. and at least 512 of them"},
        {29999, 20000, 7700, 77, "rule priorities 29999-20000: need 1.. and at least 512 of them"},
        {20000, 29999, 255, 77, "table base 255: must be 256..4294967039"},
        {20000, 29999, UINT32_MAX - OWNER_TABLE_SPAN + 1, 77, "table base 4294967040: must be 256..4294967039"},
        {20000, 29999, 7700, 4, "route protocol 4 is reserved by the kernel"},
        {20000, 29999, 7700, 0, "route protocol 0 is reserved by the kernel"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        backend_cfg_default(&cfg);
        cfg.prio_min = bad[i].prio_min;
        cfg.prio_max = bad[i].prio_max;
        cfg.table_base = bad[i].table_base;
        cfg.rt_proto = bad[i].proto;
        err[0] = '\0';
        assert_int_equal(backend_open("none", &cfg, &b, err, sizeof(err)), -EINVAL);
        assert_string_equal(err, bad[i].msg);
    }
    /* The smallest accepted: exactly the span, table 256, protocol 5. */
    backend_cfg_default(&cfg);
    cfg.prio_min = 1;
    cfg.prio_max = OWNER_PRIO_SPAN;
    cfg.table_base = 256;
    cfg.rt_proto = 5;
    assert_int_equal(backend_open("none", &cfg, &b, err, sizeof(err)), 0);
    backend_close(b);
    /* The defaults are owner.h's. */
    backend_cfg_default(&cfg);
    assert_int_equal(cfg.prio_min, OWNER_PRIO_MIN_DEFAULT);
    assert_int_equal(cfg.prio_max, OWNER_PRIO_MAX_DEFAULT);
    assert_int_equal(cfg.table_base, OWNER_TABLE_BASE_DEFAULT);
    assert_int_equal(cfg.rt_proto, OWNER_PROTO_DEFAULT);
    assert_null(cfg.plan_dir);
}

/* The dispatcher's defaults for a kind without routing, JSON or metrics. */
static void defaults_of_the_plain_kinds(void **state)
{
    (void)state;
    char dir[] = "/tmp/tfbeXXXXXX", err[256] = "";
    assert_non_null(mkdtemp(dir));
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    cfg.plan_dir = dir;
    const char *kinds[] = {"none", "plan"};
    for (size_t k = 0; k < 2; k++) {
        struct backend *b = NULL;
        assert_int_equal(backend_open(kinds[k], &cfg, &b, err, sizeof(err)), 0);
        uint8_t down[4] = {9, 9, 9, 9};
        char notes[32] = "stale";
        assert_int_equal(backend_routing(b, down, 4, notes, sizeof(notes)), -EOPNOTSUPP);
        for (int i = 0; i < 4; i++)
            assert_int_equal(down[i], 0);
        assert_string_equal(notes, "");
        assert_null(backend_json(b));
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_non_null(f);
        assert_int_equal(backend_metrics(b, f), 0);
        fclose(f);
        assert_int_equal(len, 0);
        free(text);
        /* Apply, read back, withdraw: the last applied plan is what it has. */
        struct plan p, have;
        plan_init(&p);
        struct plan_rule r1 = rule("L1", 20001, 7701, 2), r2 = rule("L1", 20000, 7700, 1);
        plan_add_rule(&p, &r1);
        plan_add_rule(&p, &r2);
        struct backend_result res;
        assert_int_equal(backend_apply(b, &p, &res), 0);
        assert_int_equal(res.rules_added, 2);
        assert_int_equal(backend_read(b, &have), 0);
        assert_int_equal(have.nrules, 2);
        assert_int_equal(have.rules[0].prio, 20000);   /* sorted */
        plan_free(&have);
        assert_int_equal(backend_withdraw(b, &res), 0);
        assert_int_equal(res.rules_deleted, 2);
        assert_int_equal(backend_read(b, &have), 0);
        assert_int_equal(have.nrules, 0);
        plan_free(&have);
        assert_true(backend_healthy(b));
        assert_string_equal(backend_error(b), "");
        plan_free(&p);
        backend_close(b);
    }
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A plan reaching outside tierflow's ranges is refused whole, the state
 * stays, and the backend is not healthy until a good plan goes in. */
static void outside_ranges_refused(void **state)
{
    (void)state;
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    struct backend *b = NULL;
    char err[256] = "";
    assert_int_equal(backend_open("none", &cfg, &b, err, sizeof(err)), 0);
    struct plan good, bad, have;
    plan_init(&good);
    plan_init(&bad);
    struct plan_rule r = rule("L1", 20000, 7700, 1);
    plan_add_rule(&good, &r);
    struct backend_result res;
    assert_int_equal(backend_apply(b, &good, &res), 0);
    struct {
        uint32_t prio, table;
        const char *msg;
    } cases[] = {
        {19999, 7700, "rule 0 on switch L1: priority 19999 or table 7700 outside tierflow's (20000-29999, 7700-7955)"},
        {30000, 7700, "rule 0 on switch L1: priority 30000 or table 7700 outside tierflow's (20000-29999, 7700-7955)"},
        {20000, 7956, "rule 0 on switch L1: priority 20000 or table 7956 outside tierflow's (20000-29999, 7700-7955)"},
        {20000, 254, "rule 0 on switch L1: priority 20000 or table 254 outside tierflow's (20000-29999, 7700-7955)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        plan_clear(&bad);
        struct plan_rule x = rule("L1", cases[i].prio, cases[i].table, 9);
        plan_add_rule(&bad, &x);
        assert_int_equal(backend_apply(b, &bad, &res), -EINVAL);
        assert_string_equal(res.error, cases[i].msg);
        assert_string_equal(backend_error(b), cases[i].msg);
        assert_int_equal(backend_read(b, &have), 0);
        assert_true(plan_equal(&have, &good));
        plan_free(&have);
    }
    /* A route outside the tables. */
    plan_clear(&bad);
    struct plan_route rt = {.sw = "L2", .table = 7956, .af = 4, .dst_len = 24, .dst = {10, 0, 1, 0}, .nnh = 1,
                            .nh = {{.af = 4, .via = {10, 254, 0, 5}, .weight = 1}}};
    assert_int_equal(plan_add_route(&bad, &rt), 0);
    assert_int_equal(backend_apply(b, &bad, &res), -EINVAL);
    assert_string_equal(res.error, "route 0 on switch L2: table 7956 outside tierflow's 7700-7955");
    assert_int_equal(backend_apply(b, &good, &res), 0);
    assert_true(backend_healthy(b));
    assert_string_equal(backend_error(b), "");
    plan_free(&good);
    plan_free(&bad);
    backend_close(b);
}

static void unsup_merged(void **state)
{
    (void)state;
    struct backend_result res;
    memset(&res, 0, sizeof(res));
    backend_result_unsup(&res, "L1", PLAN_SEL_DSCP, 2, "switch L1: no DSCP");
    backend_result_unsup(&res, "L2", PLAN_SEL_FWMARK, 1, "switch L2: no mark");
    backend_result_unsup(&res, "L1", PLAN_SEL_FWMARK, 3, "switch L1: no mark");
    assert_int_equal(res.refused, 6);
    assert_string_equal(res.unsupported, "switch L1: no DSCP");   /* the first */
    assert_int_equal(res.nunsup, 2);
    assert_string_equal(res.unsup[0].sw, "L1");
    assert_int_equal(res.unsup[0].sels, PLAN_SEL_DSCP | PLAN_SEL_FWMARK);
    assert_string_equal(res.unsup[1].sw, "L2");
    assert_int_equal(res.unsup[1].sels, PLAN_SEL_FWMARK);
    /* Bounded: switches beyond BACKEND_UNSUP_MAX are counted, not listed. */
    for (int i = 0; i < BACKEND_UNSUP_MAX + 4; i++) {
        char sw[16];
        snprintf(sw, sizeof(sw), "X%d", i);
        backend_result_unsup(&res, sw, PLAN_SEL_DSCP, 1, "x");
    }
    assert_int_equal(res.nunsup, BACKEND_UNSUP_MAX);
    assert_int_equal(res.refused, 6 + BACKEND_UNSUP_MAX + 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_kind_refused), cmocka_unit_test(kinds_table),
        cmocka_unit_test(topology_check_per_kind), cmocka_unit_test(config_bounds),
        cmocka_unit_test(defaults_of_the_plain_kinds), cmocka_unit_test(outside_ranges_refused),
        cmocka_unit_test(unsup_merged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
