/*
 * The netlink backend against a real kernel: a throwaway network namespace
 * "tfnl<pid>-L1" standing in for leaf L1 of a 2x2 leaf/spine topology, with
 * dummy uplinks eth1 (to S1) and eth2 (to S2). Needs root; without it every
 * test skips and says so. The namespace is removed by the group teardown
 * and, should an assertion abort the run, by an atexit handler.
 *
 * State planted by the test (other priorities, other protocols, also in
 * tierflow's own table and priority ranges) must survive every operation.
 * The main table stands for the switch's routing (FRR would put it there):
 * 10.0.2.0/24 over both spines, proto bgp; the backend installs only what
 * it offers, and the last tests take paths away from it.
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
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/nlroute.h"
#include "controller/planbuild.h"
#include "policy/topo.h"

static char ns[64];
static bool ns_made, is_root;
static struct topo *topo;

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Output of a command, for comparing with what iproute2 shows. */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *capture(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t r;
    while ((r = fread(buf + len, 1, cap - 1 - len, p)) > 0)
        len += r;
    buf[len] = '\0';
    pclose(p);
    return buf;
}

static bool shows(const char *what, const char *needle)
{
    char *out = capture("ip -n %s %s", ns, what);
    bool ok = strstr(out, needle) != NULL;
    if (!ok)
        fprintf(stderr, "# 'ip %s' lacks '%s':\n%s", what, needle, out);
    free(out);
    return ok;
}

static void ns_remove(void)
{
    if (ns_made)
        sh("ip netns del %s 2>/dev/null", ns);
    ns_made = false;
}

#define TOPO_FMT \
    "{\"name\": \"nltest\", \"tiers\": [\"host\", \"leaf\", \"spine\"], \"nodes\": [" \
    "{\"name\": \"H1\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"}," \
    "{\"name\": \"H3\", \"tier\": \"host\", \"addr\": \"10.0.1.3\"}," \
    "{\"name\": \"H2\", \"tier\": \"host\", \"addr\": \"10.0.2.1\"}," \
    "{\"name\": \"L1\", \"tier\": \"leaf\", \"prefix\": \"10.0.1.0/24\", \"netns\": \"%s\"}," \
    "{\"name\": \"L2\", \"tier\": \"leaf\", \"prefix\": \"10.0.2.0/24\"}," \
    "{\"name\": \"S1\", \"tier\": \"spine\"}, {\"name\": \"S2\", \"tier\": \"spine\"}]," \
    "\"links\": [{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100}," \
    "{\"a\": \"H3\", \"b\": \"L1\", \"gbps\": 100}," \
    "{\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100}," \
    "{\"a\": \"L1\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"eth1\", \"a_ip\": \"10.1.1.1\", \"b_ip\": \"10.1.1.0\", \"b_if\": \"l1\"}," \
    "{\"a\": \"L1\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"eth2\", \"a_ip\": \"10.1.2.1\", \"b_ip\": \"10.1.2.0\", \"b_if\": \"l1\"}," \
    "{\"a\": \"L2\", \"b\": \"S1\", \"gbps\": 100, \"a_if\": \"eth1\", \"a_ip\": \"10.2.1.1\", \"b_ip\": \"10.2.1.0\", \"b_if\": \"l2\"}," \
    "{\"a\": \"L2\", \"b\": \"S2\", \"gbps\": 100, \"a_if\": \"eth2\", \"a_ip\": \"10.2.2.1\", \"b_ip\": \"10.2.2.0\", \"b_if\": \"l2\"}]}"

static int routing_full(void);

static int group_setup(void **state)
{
    (void)state;
    is_root = geteuid() == 0;
    if (!is_root)
        return 0;
    atexit(ns_remove);
    if (sh("ip netns add %s", ns))
        return -1;
    ns_made = true;
    if (sh("ip -n %s link set lo up && "
           "ip -n %s link add eth1 type veth peer name p1 && ip -n %s link add eth2 type veth peer name p2 && "
           "ip -n %s addr add 10.1.1.1/31 dev eth1 && ip -n %s addr add 10.1.2.1/31 dev eth2 && "
           "ip -n %s link set eth1 up && ip -n %s link set eth2 up && ip -n %s link set p1 up && ip -n %s link set p2 up",
           ns, ns, ns, ns, ns, ns, ns, ns, ns))
        return -1;
    /* Foreign state: another priority; our range but another protocol; our
     * protocol but another priority; another protocol in our table and in
     * main. None of it may be read, changed or deleted. */
    if (sh("ip -n %s rule add pref 100 from 10.9.9.1 table 7701 && "
           "ip -n %s rule add pref 20001 from 10.9.9.2 table 7701 protocol static && "
           "ip -n %s rule add pref 19999 from 10.9.9.3 table 7700 protocol 77 && "
           "ip -n %s route add 10.99.0.0/16 via 10.1.1.0 table 7700 proto static && "
           "ip -n %s route add 10.98.0.0/16 via 10.1.2.0 proto static", ns, ns, ns, ns, ns))
        return -1;
    if (routing_full())
        return -1;
    char json[4096];
    snprintf(json, sizeof(json), TOPO_FMT, ns);
    char err[256];
    if (topo_from_json(json, strlen(json), "test", &topo, err, sizeof(err))) {
        fprintf(stderr, "# topology: %s\n", err);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ns_remove();
    topo_free(topo);
    return 0;
}

static bool foreign_intact(void)
{
    return shows("rule show", "100:\tfrom 10.9.9.1 lookup 7701") &&
           shows("rule show", "20001:\tfrom 10.9.9.2 lookup 7701 proto static") &&
           shows("rule show", "19999:\tfrom 10.9.9.3 lookup 7700 proto 77") &&
           shows("route show table 7700", "10.99.0.0/16 via 10.1.1.0 dev eth1 proto static") &&
           shows("route show", "10.98.0.0/16 via 10.1.2.0 dev eth2 proto static");
}

/* What routing offers: L2's prefix over both spines; 10.0.9.0/24 over a
 * gateway the kernel takes only with onlink (the rollback test's bad
 * route needs routing to offer it, so that the kernel is what refuses). */
static int routing_full(void)
{
    return sh("ip -n %s route replace 10.0.2.0/24 proto bgp nexthop via 10.1.1.0 dev eth1 nexthop via 10.1.2.0 dev eth2 && "
              "ip -n %s route replace 10.0.9.0/24 proto bgp via 203.0.113.9 dev eth1 onlink", ns, ns);
}

#define NEED_ROOT() do { if (!is_root) { fprintf(stderr, "# SKIP: needs root for network namespaces\n"); skip(); } } while (0)

/* A netlink backend on the test topology; unsupported and on_routing as
 * the test needs them. */
static struct backend *open_with(unsigned unsupported, void (*on_routing)(void *))
{
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    cfg.topo = topo;
    cfg.unsupported = unsupported;
    cfg.on_routing = on_routing;
    struct backend *b;
    char err[256] = "";
    int rc = backend_open("netlink", &cfg, &b, err, sizeof(err));
    if (rc)
        fprintf(stderr, "# backend_open: %s\n", err);
    assert_int_equal(rc, 0);
    return b;
}

static struct backend *open_nl_as(unsigned unsupported)
{
    return open_with(unsupported, NULL);
}

static struct backend *open_nl(void) { return open_nl_as(0); }

/* Flow i from H1 (or H3) to H2 pinned over spine S1 (path 0) or S2 (path 1). */
static void build(struct plan *p, const int *spine, int n, bool with_class)
{
    struct planbuild_flow f[8];
    uint32_t dirs[8][TOPO_MAX_HOPS];
    uint32_t h2 = topo_node_by_name(topo, "H2");
    for (int i = 0; i < n; i++) {
        uint32_t src = topo_node_by_name(topo, i % 2 ? "H3" : "H1");
        memset(&f[i], 0, sizeof(f[i]));
        f[i].af = 4;
        f[i].proto = i == 2 ? 17 : 6;
        memcpy(f[i].src, topo->nodes[src].addr, 16);
        memcpy(f[i].dst, topo->nodes[h2].addr, 16);
        f[i].sport = (uint16_t)(1000 + i);
        f[i].dport = i == 2 ? 4791 : 5001;
        f[i].ndirs = topo_path_dirs(topo, src, h2, (uint64_t)spine[i], dirs[i], TOPO_MAX_HOPS);
        assert_true(f[i].ndirs == 4);
        f[i].dirs = dirs[i];
    }
    struct planbuild_class c[2] = {{.fwmark = 0x10, .dscp = -1},
                                   {.dscp = 26}};
    int allow[1] = {(int)topo_node_by_name(topo, "S2")};
    uint16_t w[1] = {3};
    c[0].allow = allow;
    c[0].weight = w;
    c[0].nallow = 1;
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan all;
    plan_init(&all);
    char err[256] = "";
    int rc = plan_build(topo, &o, f, (size_t)n, c, with_class ? 2 : 0, &all, err, sizeof(err));
    if (rc)
        fprintf(stderr, "# plan_build: %s\n", err);
    assert_int_equal(rc, 0);
    /* Only L1 is reachable (the others have no netns). */
    plan_init(p);
    assert_int_equal(plan_append(p, &all, "L1"), 0);
    plan_free(&all);
}

static void assert_installed(struct backend *b, struct plan *want)
{
    struct plan have;
    assert_int_equal(backend_read(b, &have), 0);
    plan_sort(want);
    if (!plan_equal(&have, want)) {
        fprintf(stderr, "# want:\n");
        plan_write_json(want, stderr);
        fprintf(stderr, "# have:\n");
        plan_write_json(&have, stderr);
    }
    assert_true(plan_equal(&have, want));
    plan_free(&have);
}

static void test_install_and_read(void **state)
{
    (void)state;
    NEED_ROOT();
    struct backend *b = open_nl();
    struct plan want;
    int sp[3] = {0, 1, 1};
    build(&want, sp, 3, true);
    struct backend_result res;
    int rc = backend_apply(b, &want, &res);
    if (rc)
        fprintf(stderr, "# apply: %s\n", res.error);
    assert_int_equal(rc, 0);
    assert_int_equal(res.rules_added, want.nrules);
    assert_int_equal(res.routes_added, want.nroutes);
    assert_true(res.round_trips >= 2);
    assert_int_equal(res.skipped, 0);
    /* This kernel keeps FRA_DSCP (the probe at open said so, and the
     * read-back after the install found every selector): nothing refused. */
    assert_int_equal(res.refused, 0);
    assert_string_equal(res.unsupported, "");
    assert_true(backend_healthy(b));
    assert_installed(b, &want);
    /* What iproute2 sees. */
    assert_true(shows("rule show", "20000:\tfrom 10.0.1.1 to 10.0.2.1 ipproto tcp sport 1000 dport 5001 lookup 7700 proto 77"));
    assert_true(shows("rule show", "20001:\tfrom 10.0.1.3 to 10.0.2.1 ipproto tcp sport 1001 dport 5001 lookup 7701 proto 77"));
    assert_true(shows("rule show", "20001:\tfrom 10.0.1.1 to 10.0.2.1 ipproto udp sport 1002 dport 4791 lookup 7701 proto 77"));
    assert_true(shows("rule show", "20256:\tfrom all fwmark 0x10 lookup 7828 proto 77"));
    assert_true(shows("rule show", "20257:\tfrom all"));   /* DSCP: iproute2 6.1 cannot print it */
    assert_true(shows("route show table 7700", "10.0.2.0/24 via 10.1.1.0 dev eth1 proto 77"));
    assert_true(shows("route show table 7701", "10.0.2.0/24 via 10.1.2.0 dev eth2 proto 77"));
    assert_true(shows("route show table 7828", "10.0.2.0/24 via 10.1.2.0 dev eth2 proto 77"));
    assert_true(shows("route show table 7829", "nexthop via 10.1.1.0 dev eth1 weight 1"));
    assert_true(foreign_intact());
    plan_free(&want);
    backend_close(b);
}

static void test_reconcile_after_restart(void **state)
{
    (void)state;
    NEED_ROOT();
    struct backend *b = open_nl();   /* a new instance: reads the state back */
    struct plan want;
    int sp[3] = {0, 1, 1};
    build(&want, sp, 3, true);
    assert_installed(b, &want);
    struct backend_result res;
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.rules_added + res.rules_deleted + res.routes_added + res.routes_deleted, 0);
    assert_int_equal(res.round_trips, 0);
    plan_free(&want);
    /* Flow 0 moves to S2: its rule at 20000 -> 7700 gives way to one at
     * 20001 -> 7701; table 7700 empties. Nothing else changes. */
    int sp2[3] = {1, 1, 1};
    build(&want, sp2, 3, true);
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.rules_added, 1);
    assert_int_equal(res.rules_deleted, 1);
    assert_int_equal(res.routes_added, 0);
    assert_int_equal(res.routes_deleted, 1);
    assert_installed(b, &want);
    assert_true(shows("rule show", "20001:\tfrom 10.0.1.1 to 10.0.2.1 ipproto tcp sport 1000 dport 5001 lookup 7701 proto 77"));
    assert_true(foreign_intact());
    plan_free(&want);
    backend_close(b);
}

static void test_rollback(void **state)
{
    (void)state;
    NEED_ROOT();
    struct backend *b = open_nl();
    struct plan before, want;
    int sp[3] = {1, 1, 1};
    build(&before, sp, 3, true);
    assert_installed(b, &before);
    /* A new flow over S1 (adds a route to 7700 and a rule), a changed
     * class route, and then a route the kernel refuses (gateway not on
     * link): everything must be as before afterwards. */
    int sp2[4] = {1, 1, 1, 0};
    build(&want, sp2, 4, true);
    for (size_t i = 0; i < want.nroutes; i++)
        if (want.routes[i].table == 7829)
            want.routes[i].nh[0].weight = 7;
    struct plan_route bad = {.sw = "L1", .table = 7702, .af = 4, .dst_len = 24,
                             .dst = {10, 0, 9, 0}, .nnh = 1,
                             .nh = {{.af = 4, .via = {203, 0, 113, 9}, .weight = 1}}};
    assert_int_equal(plan_add_route(&want, &bad), 0);
    struct backend_result res;
    int rc = backend_apply(b, &want, &res);
    assert_true(rc < 0);
    assert_true(res.rolled_back);
    assert_string_equal(res.failed_sw, "L1");
    fprintf(stderr, "# expected failure: %s\n", res.error);
    assert_non_null(strstr(res.error, "10.0.9.0/24 table 7702"));
    assert_false(backend_healthy(b));
    assert_installed(b, &before);
    /* A next hop on a missing device is no next hop routing offers: it is
     * left out (counted), the rest goes in. */
    plan_free(&want);
    build(&want, sp, 3, true);
    struct plan_route nodev = bad;
    nodev.nh[0] = (struct plan_nh){.af = 4, .via = {10, 1, 1, 0}, .weight = 1};
    tf_strlcpy(nodev.nh[0].dev, "nosuch0", sizeof(nodev.nh[0].dev));
    assert_int_equal(plan_add_route(&want, &nodev), 0);
    memset(&res, 0, sizeof(res));
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.narrowed, 1);
    assert_installed(b, &before);
    assert_true(foreign_intact());
    plan_free(&want);
    plan_free(&before);
    backend_close(b);
}

/* A switch whose kernel does not keep FRA_DSCP (stood in for by
 * backend_cfg.unsupported: this kernel keeps it): the DSCP class rule is
 * refused, never installed without its selector; everything else is
 * installed; the backend is not healthy and says which switch and feature. */
static void test_dscp_refused(void **state)
{
    (void)state;
    NEED_ROOT();
    struct backend *b = open_nl_as(PLAN_SEL_DSCP);
    struct plan want;
    int sp[3] = {0, 1, 1};
    build(&want, sp, 3, true);
    struct backend_result res;
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.refused, 1);
    assert_int_equal(res.nunsup, 1);
    assert_string_equal(res.unsup[0].sw, "L1");
    assert_int_equal(res.unsup[0].sels, PLAN_SEL_DSCP);
    assert_non_null(strstr(res.unsupported, "switch L1: its kernel does not keep the rule selector dscp (FRA_DSCP)"));
    assert_false(backend_healthy(b));
    assert_non_null(strstr(backend_error(b), "dscp (FRA_DSCP)"));
    /* Installed: everything but the DSCP rule (none at 20257, not even a
     * broader one); the class's table routes are harmless without it. */
    struct plan have;
    assert_int_equal(backend_read(b, &have), 0);
    assert_int_equal(have.nrules, want.nrules - 1);
    assert_int_equal(have.nroutes, want.nroutes);
    for (size_t i = 0; i < have.nrules; i++)
        assert_true(have.rules[i].dscp < 0);
    assert_false(shows("rule show", "20257:"));
    assert_true(shows("rule show", "20256:\tfrom all fwmark 0x10 lookup 7828 proto 77"));
    plan_free(&have);
    /* The next round refuses it again, without sending anything. */
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.refused, 1);
    assert_int_equal(res.round_trips, 0);
    plan_free(&want);
    backend_close(b);
}

static void test_withdraw(void **state)
{
    (void)state;
    NEED_ROOT();
    struct backend *b = open_nl();
    struct backend_result res;
    assert_int_equal(backend_withdraw(b, &res), 0);
    assert_true(res.rules_deleted > 0);
    struct plan have;
    assert_int_equal(backend_read(b, &have), 0);
    assert_int_equal(have.nrules + have.nroutes, 0);
    plan_free(&have);
    char *rules = capture("ip -n %s rule show | grep -c 'proto 77'", ns);
    assert_string_equal(rules, "1\n");   /* only the planted one at 19999 */
    free(rules);
    char *routes = capture("ip -n %s route show table all | grep -c 'proto 77'", ns);
    assert_string_equal(routes, "0\n");
    free(routes);
    assert_true(foreign_intact());
    backend_close(b);
}

static void test_unreachable_switch_skipped(void **state)
{
    (void)state;
    NEED_ROOT();
    struct backend *b = open_nl();
    struct plan want;
    plan_init(&want);
    struct plan_rule r = {.sw = "L2", .prio = 20000, .table = 7700, .af = 4, .dscp = -1,
                          .fwmark = 1};
    assert_int_equal(plan_add_rule(&want, &r), 0);
    struct backend_result res;
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.skipped, 1);
    assert_string_equal(res.skipped_sw, "L2");
    /* Out of tierflow's ranges: refused before anything is touched. */
    r.prio = 100;
    tf_strlcpy(r.sw, "L1", sizeof(r.sw));
    assert_int_equal(plan_add_rule(&want, &r), 0);
    assert_int_equal(backend_apply(b, &want, &res), -EINVAL);
    assert_non_null(strstr(res.error, "priority 100"));
    plan_free(&want);
    backend_close(b);
}

static int pokes;
static void on_routing(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&pokes, 1, __ATOMIC_SEQ_CST);
}

static struct backend *open_watched(void)
{
    return open_with(0, on_routing);
}

/* Rules of ours in the kernel that look up table (counted by iproute2). */
static int rules_to(int table)
{
    char *out = capture("ip -n %s rule show | grep -c 'to 10.0.2.1 .*lookup %d proto 77'", ns, table);
    int n = atoi(out);
    free(out);
    return n;
}

/* Waits up to 3 s for the watcher to bring table's rules to want. */
static bool wait_rules(int table, int want)
{
    for (int i = 0; i < 300; i++) {
        if (rules_to(table) == want)
            return true;
        usleep(10000);
    }
    return false;
}

static uint32_t dir_of(const char *from, const char *to)
{
    uint32_t d = 0;
    assert_int_equal(topo_dir_between(topo, topo_node_by_name(topo, from), topo_node_by_name(topo, to), &d), 0);
    return d;
}

/* A round that does not know a path is gone cannot install a pin on it. */
static void test_narrow_on_apply(void **state)
{
    (void)state;
    NEED_ROOT();
    assert_int_equal(sh("ip -n %s route replace 10.0.2.0/24 proto bgp via 10.1.1.0 dev eth1", ns), 0);
    struct backend *b = open_nl();
    struct backend_result res = {0};
    assert_int_equal(backend_withdraw(b, &res), 0);
    struct plan want;
    int sp[2] = {0, 1};   /* flow 0 over S1, flow 1 over S2 (not offered) */
    build(&want, sp, 2, false);
    memset(&res, 0, sizeof(res));
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.narrowed, 2);   /* S2's route and the rule that needed it */
    assert_int_equal(rules_to(7700), 1);
    assert_int_equal(rules_to(7701), 0);
    assert_true(shows("route show table 7700", "10.0.2.0/24 via 10.1.1.0 dev eth1 proto 77"));
    assert_int_equal(routing_full(), 0);
    /* Offered again: the same plan goes in whole. */
    usleep(100000);
    memset(&res, 0, sizeof(res));
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(res.narrowed, 0);
    assert_int_equal(rules_to(7701), 1);
    plan_free(&want);
    backend_close(b);
}

/* Routing withdraws a next hop (BGP lost L2 over S2), then a link goes
 * down: the watcher removes the pins that used them without any apply,
 * pokes the caller, and says which directions are down. */
static void test_watch_withdraws(void **state)
{
    (void)state;
    NEED_ROOT();
    assert_int_equal(routing_full(), 0);
    struct backend *b = open_watched();
    struct plan want;
    int sp[3] = {0, 1, 1};
    build(&want, sp, 3, false);
    struct backend_result res = {0};
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(rules_to(7700), 1);
    assert_int_equal(rules_to(7701), 2);
    uint32_t nd = 2 * topo->nlinks;
    uint8_t down[64];
    char notes[1024];
    assert_int_equal(backend_routing(b, down, nd, notes, sizeof(notes)), 0);
    for (uint32_t d = 0; d < nd; d++)
        assert_int_equal(down[d], 0);
    assert_int_equal(backend_routing(b, down, nd + 2, NULL, 0), -ESTALE);

    int before = __atomic_load_n(&pokes, __ATOMIC_SEQ_CST);
    assert_int_equal(sh("ip -n %s route replace 10.0.2.0/24 proto bgp via 10.1.1.0 dev eth1", ns), 0);
    assert_true(wait_rules(7701, 0));
    assert_int_equal(rules_to(7700), 1);
    assert_false(shows("route show table 7701", "10.0.2.0/24"));
    for (int i = 0; i < 100 && __atomic_load_n(&pokes, __ATOMIC_SEQ_CST) == before; i++)
        usleep(10000);
    assert_true(__atomic_load_n(&pokes, __ATOMIC_SEQ_CST) > before);
    assert_int_equal(backend_routing(b, down, nd, notes, sizeof(notes)), 0);
    fprintf(stderr, "# notes: %s", notes);
    assert_non_null(strstr(notes, "switch L1: routing withdrew 10.0.2.0/24 table 7701 via 10.1.2.0 dev eth2"));
    assert_int_equal(down[dir_of("S2", "L2")], 1);   /* propagated: S2 lost L2 */
    assert_int_equal(down[dir_of("S1", "L2")], 0);
    assert_int_equal(down[dir_of("L1", "S2")], 0);   /* L1's own link to S2 is fine */
    /* The backend's own read agrees with the kernel. */
    struct plan have;
    assert_int_equal(backend_read(b, &have), 0);
    for (size_t i = 0; i < have.nrules; i++)
        assert_int_not_equal(have.rules[i].table, 7701);
    plan_free(&have);
    /* A round that still wants the withdrawn pins gets only the rest. */
    memset(&res, 0, sizeof(res));
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(rules_to(7701), 0);
    assert_true(res.narrowed > 0);

    /* Local link down: S1's pin goes too, both directions of L1-S1 down. */
    assert_int_equal(routing_full(), 0);
    usleep(100000);
    assert_int_equal(backend_apply(b, &want, &res), 0);
    assert_int_equal(rules_to(7701), 2);
    assert_int_equal(sh("ip -n %s link set eth1 down", ns), 0);
    assert_true(wait_rules(7700, 0));
    assert_int_equal(rules_to(7701), 2);
    usleep(50000);
    assert_int_equal(backend_routing(b, down, nd, notes, sizeof(notes)), 0);
    assert_int_equal(down[dir_of("L1", "S1")], 1);
    assert_int_equal(down[dir_of("S1", "L1")], 1);
    assert_int_equal(down[dir_of("L1", "S2")], 0);
    /* Up again: nothing of ours comes back by itself (the next round
     * decides), and the directions are up. */
    assert_int_equal(sh("ip -n %s link set eth1 up && ip -n %s link set p1 up", ns, ns), 0);
    assert_int_equal(routing_full(), 0);
    for (int i = 0; i < 100; i++) {
        usleep(20000);
        assert_int_equal(backend_routing(b, down, nd, NULL, 0), 0);
        if (!down[dir_of("L1", "S1")])
            break;
    }
    assert_int_equal(down[dir_of("L1", "S1")], 0);
    assert_int_equal(rules_to(7700), 0);
    /* The kernel flushed the foreign route through eth1 with the link; plant
     * it again for the tests after this one. */
    sh("ip -n %s route replace 10.99.0.0/16 via 10.1.1.0 table 7700 proto static", ns);
    assert_true(foreign_intact());
    plan_free(&want);
    backend_close(b);
}

/* nlroute over nlsock, below the backend: a run long enough for several
 * batches names the item the kernel refuses in a later batch (its index
 * carried across batches) and counts every other item of the batches sent;
 * an item that cannot be built (no such interface) stops the run there,
 * every item before it done. */
static void test_batches_name_the_item(void **state)
{
    (void)state;
    NEED_ROOT();
    struct nlroute *n = NULL;
    char err[256] = "";
    assert_int_equal(nlroute_open(ns, &n, err, sizeof(err)), 0);
    enum { TOTAL = 2000, BAD = 1500, NODEV = 1700 };
    struct plan p;
    plan_init(&p);
    for (int i = 0; i < TOTAL; i++) {
        struct plan_route r = {.sw = "L1", .table = 7702, .af = 4, .dst_len = 32,
                               .dst = {10, 77, (uint8_t)(i >> 8), (uint8_t)i}, .nnh = 1,
                               .nh = {{.af = 4, .via = {10, 1, 1, 0}, .weight = 1, .dev = "eth1"}}};
        if (i == BAD)   /* not on any link: the kernel refuses it */
            memcpy(r.nh[0].via, (uint8_t[4]){203, 0, 113, 9}, 4);
        assert_int_equal(plan_add_route(&p, &r), 0);
    }
    size_t done = 0, trips = 0;
    int rc = nlroute_run(n, NLROUTE_ROUTE_REPLACE, &p, 77, &done, &trips, err, sizeof(err));
    fprintf(stderr, "# expected failure after %zu batches, %zu done: %s\n", trips, done, err);
    assert_true(rc < 0);
    assert_non_null(strstr(err, "adding route 10.77.5.220/32 table 7702: "));   /* item 1500 */
    assert_true(trips >= 2);
    assert_true(done >= BAD && done < TOTAL);
    /* The refused one fixed, one without its interface further on. */
    memcpy(p.routes[BAD].nh[0].via, (uint8_t[4]){10, 1, 1, 0}, 4);
    tf_strlcpy(p.routes[NODEV].nh[0].dev, "nosuch0", sizeof(p.routes[NODEV].nh[0].dev));
    done = trips = 0;
    assert_int_equal(nlroute_run(n, NLROUTE_ROUTE_REPLACE, &p, 77, &done, &trips, err, sizeof(err)), -ENODEV);
    assert_string_equal(err, "adding route 10.77.6.164/32 table 7702: interface nosuch0 not found");
    assert_int_equal(done, NODEV);
    /* Every route goes; deleting them again (ESRCH) counts as done. */
    for (int again = 0; again < 2; again++) {
        done = trips = 0;
        assert_int_equal(nlroute_run(n, NLROUTE_ROUTE_DEL, &p, 77, &done, &trips, err, sizeof(err)), 0);
        assert_int_equal(done, TOTAL);
    }
    char *left = capture("ip -n %s route show table 7702 | grep -c '^10\\.77\\.' || true", ns);
    assert_string_equal(left, "0\n");
    free(left);
    assert_true(foreign_intact());
    plan_free(&p);
    nlroute_close(n);
}

/* The tests run in a child so that the namespace goes even when a
 * sanitizer ends the child without running atexit handlers. */
int main(void)
{
    snprintf(ns, sizeof(ns), "tfnl%d-L1", (int)getpid());
    pid_t pid = fork();
    if (pid > 0) {
        int st = 0;
        waitpid(pid, &st, 0);
        if (geteuid() == 0)
            sh("ip netns del %s 2>/dev/null", ns);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_name_the_item),
        cmocka_unit_test(test_install_and_read),
        cmocka_unit_test(test_reconcile_after_restart),
        cmocka_unit_test(test_rollback),
        cmocka_unit_test(test_dscp_refused),
        cmocka_unit_test(test_withdraw),
        cmocka_unit_test(test_unreachable_switch_skipped),
        cmocka_unit_test(test_narrow_on_apply),
        cmocka_unit_test(test_watch_withdraws),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
