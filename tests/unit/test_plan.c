/* Unit tests for controller/plan: canonical order, diff, JSON, ip -batch. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/plan.h"
#include "controller/planbatch.h"

static struct plan_rule rule(const char *sw, uint32_t prio, uint32_t table, uint16_t sport)
{
    struct plan_rule r = {.prio = prio, .table = table, .af = 4, .ipproto = 6, .src_len = 32,
                          .dst_len = 32, .sport = sport, .dport = 5001, .dscp = -1,
                          .src = {10, 0, 1, 1}, .dst = {10, 0, 2, 1}};
    snprintf(r.sw, sizeof(r.sw), "%s", sw);
    return r;
}

static struct plan_route route(const char *sw, uint32_t table, uint8_t third, int nnh)
{
    struct plan_route r = {.table = table, .af = 4, .dst_len = 24, .dst = {10, 0, third, 0},
                           .nnh = (uint8_t)nnh};
    snprintf(r.sw, sizeof(r.sw), "%s", sw);
    for (int i = 0; i < nnh; i++) {
        r.nh[i] = (struct plan_nh){.af = 4, .via = {10, 1, (uint8_t)(nnh - i), 0}, .weight = 1};
        snprintf(r.nh[i].dev, sizeof(r.nh[i].dev), "eth%d", nnh - i);
    }
    return r;
}

static char *render(const struct plan *p, int mode, const char *sw)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    if (mode == 0)
        assert_int_equal(plan_write_json(p, f), 0);
    else
        assert_int_equal(planbatch_write(p, sw, f, mode == 2, 77), 0);
    fclose(f);
    return buf;
}

static void test_add_validates(void **state)
{
    (void)state;
    struct plan p;
    plan_init(&p);
    struct plan_rule r = rule("L1", 20000, 7700, 1);
    r.af = 5;
    assert_int_equal(plan_add_rule(&p, &r), -EINVAL);
    r = rule("", 20000, 7700, 1);
    assert_int_equal(plan_add_rule(&p, &r), -EINVAL);
    r = rule("L1", 20000, 7700, 1);
    r.src_len = 33;
    assert_int_equal(plan_add_rule(&p, &r), -EINVAL);
    struct plan_route rt = route("L1", 7700, 2, 0);
    assert_int_equal(plan_add_route(&p, &rt), -EINVAL);
    rt = route("L1", 7700, 2, 2);
    rt.nh[1].weight = 0;
    assert_int_equal(plan_add_route(&p, &rt), -EINVAL);
    assert_int_equal(p.nrules + p.nroutes, 0);
    plan_free(&p);
}

static void test_sort_canonical(void **state)
{
    (void)state;
    struct plan a, b;
    plan_init(&a);
    plan_init(&b);
    struct plan_rule r1 = rule("L2", 20000, 7700, 1), r2 = rule("L1", 20001, 7701, 2);
    struct plan_route t1 = route("L1", 7700, 2, 3), t2 = route("L1", 7700, 3, 1);
    plan_add_rule(&a, &r1);
    plan_add_rule(&a, &r2);
    plan_add_rule(&a, &r1);   /* duplicate */
    plan_add_route(&a, &t1);
    plan_add_route(&a, &t2);
    plan_add_rule(&b, &r2);
    plan_add_rule(&b, &r1);
    plan_add_route(&b, &t2);
    /* Same route, next hops in another order and junk past the family. */
    struct plan_route t1b = t1;
    struct plan_nh tmp = t1b.nh[0];
    t1b.nh[0] = t1b.nh[2];
    t1b.nh[2] = tmp;
    t1b.dst[10] = 0xee;
    plan_add_route(&b, &t1b);
    plan_sort(&a);
    plan_sort(&b);
    assert_int_equal(a.nrules, 2);
    assert_string_equal(a.rules[0].sw, "L1");
    assert_true(plan_equal(&a, &b));
    assert_string_equal(a.routes[0].nh[0].dev, "eth1");   /* sorted by via */
    plan_free(&a);
    plan_free(&b);
}

static void test_diff(void **state)
{
    (void)state;
    struct plan want, have, add, del;
    plan_init(&want);
    plan_init(&have);
    struct plan_rule keep = rule("L1", 20000, 7700, 1);
    struct plan_rule moved_old = rule("L1", 20000, 7700, 2), moved_new = rule("L1", 20001, 7701, 2);
    struct plan_rule gone = rule("L1", 20000, 7700, 3);
    struct plan_route same = route("L1", 7700, 2, 1), changed = route("L1", 7828, 2, 2);
    struct plan_route changed_old = route("L1", 7828, 2, 3), stale = route("L1", 7701, 9, 1);
    plan_add_rule(&want, &keep);
    plan_add_rule(&want, &moved_new);
    plan_add_route(&want, &same);
    plan_add_route(&want, &changed);
    plan_add_rule(&have, &gone);
    plan_add_rule(&have, &moved_old);
    plan_add_rule(&have, &keep);
    plan_add_route(&have, &changed_old);
    plan_add_route(&have, &same);
    plan_add_route(&have, &stale);
    assert_int_equal(plan_diff(&want, &have, &add, &del), 0);
    assert_int_equal(add.nrules, 1);
    assert_int_equal(add.rules[0].prio, 20001);
    assert_int_equal(del.nrules, 2);
    assert_int_equal(add.nroutes, 1);   /* the changed one, as a replace */
    assert_int_equal(add.routes[0].table, 7828);
    assert_int_equal(add.routes[0].nnh, 2);
    assert_int_equal(del.nroutes, 1);   /* only the stale key; not the replaced one */
    assert_int_equal(del.routes[0].table, 7701);
    plan_free(&add);
    plan_free(&del);
    /* Equal plans: empty diff. */
    assert_int_equal(plan_diff(&want, &want, &add, &del), 0);
    assert_int_equal(add.nrules + add.nroutes + del.nrules + del.nroutes, 0);
    plan_free(&add);
    plan_free(&del);
    plan_free(&want);
    plan_free(&have);
}

static void test_json(void **state)
{
    (void)state;
    struct plan p;
    plan_init(&p);
    struct plan_rule r = rule("L\"1", 20000, 7700, 1000);
    plan_add_rule(&p, &r);
    struct plan_route t = route("L1", 7700, 2, 2);
    plan_add_route(&p, &t);
    /* A class rule on DSCP 0 and one on a mark: DSCP 0 is a value, "any"
     * is null, so the two cannot be mistaken for each other. */
    struct plan_rule d0 = {.sw = "L1", .prio = 20256, .table = 7828, .af = 4, .dscp = 0};
    struct plan_rule mk = {.sw = "L1", .prio = 20257, .table = 7829, .af = 4, .fwmark = 0x10, .fwmask = 0xff, .dscp = -1};
    plan_add_rule(&p, &d0);
    plan_add_rule(&p, &mk);
    /* The one text form says the same. */
    char txt[200];
    assert_string_equal(plan_rule_str(&d0, txt, sizeof(txt)), "pref 20256 dscp 0 table 7828");
    assert_string_equal(plan_rule_str(&mk, txt, sizeof(txt)), "pref 20257 fwmark 0x10/0xff table 7829");
    plan_sort(&p);
    char *s = render(&p, 0, NULL);
    json_error_t je;
    json_t *o = json_loads(s, 0, &je);
    assert_non_null(o);
    free(s);
    json_t *sws = json_object_get(o, "switches");
    assert_int_equal(json_array_size(sws), 2);   /* "L\"1" and "L1" */
    json_t *a = json_array_get(sws, 0), *b = json_array_get(sws, 1);
    assert_string_equal(json_string_value(json_object_get(a, "node")), "L\"1");
    json_t *r0 = json_array_get(json_object_get(a, "rules"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "src")), "10.0.1.1/32");
    assert_int_equal(json_integer_value(json_object_get(r0, "sport")), 1000);
    assert_true(json_is_null(json_object_get(r0, "dscp")));
    json_t *rd = json_array_get(json_object_get(b, "rules"), 0), *rm = json_array_get(json_object_get(b, "rules"), 1);
    assert_true(json_is_integer(json_object_get(rd, "dscp")) && json_integer_value(json_object_get(rd, "dscp")) == 0);
    assert_string_equal(json_string_value(json_object_get(rd, "src")), "");
    assert_true(json_is_null(json_object_get(rm, "dscp")));
    assert_int_equal(json_integer_value(json_object_get(rm, "fwmask")), 0xff);
    json_t *rt = json_array_get(json_object_get(b, "routes"), 0);
    assert_string_equal(json_string_value(json_object_get(rt, "dst")), "10.0.2.0/24");
    json_t *nh = json_array_get(json_object_get(rt, "nexthops"), 0);
    assert_string_equal(json_string_value(json_object_get(nh, "via")), "10.1.1.0");
    assert_string_equal(json_string_value(json_object_get(nh, "dev")), "eth1");
    /* Read back, it is the same plan (the plan backend's restart). */
    struct plan back;
    char err[200] = "";
    assert_int_equal(plan_from_json(o, &back, err, sizeof(err)), 0);
    assert_true(plan_equal(&back, &p));
    plan_free(&back);
    /* A bad member is named by its path. */
    json_object_set_new(rt, "dst", json_string("10.0.2.0/33"));
    assert_int_equal(plan_from_json(o, &back, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "switches[1].routes[0].dst: '10.0.2.0/33' is not a prefix of the rule's family");
    json_object_set_new(rd, "dscp", json_integer(64));
    assert_int_equal(plan_from_json(o, &back, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "switches[1].rules[0].dscp: want null or an integer 0..63");
    json_decref(o);
    plan_free(&p);
}

static void test_ipbatch(void **state)
{
    (void)state;
    struct plan p;
    plan_init(&p);
    struct plan_rule r = rule("L1", 20000, 7700, 1000), other = rule("L2", 20001, 7701, 7);
    struct plan_rule cls = {.sw = "L1", .prio = 20256, .table = 7828, .af = 4, .fwmark = 0x10,
                            .dscp = -1};
    plan_add_rule(&p, &r);
    plan_add_rule(&p, &other);
    plan_add_rule(&p, &cls);
    struct plan_route t = route("L1", 7700, 2, 1), m = route("L1", 7828, 2, 2);
    m.nh[0].weight = 3;
    plan_add_route(&p, &t);
    plan_add_route(&p, &m);
    char *s = render(&p, 1, "L1");
    const char *want =
        "route replace table 7700 proto 77 10.0.2.0/24 via 10.1.1.0 dev eth1\n"
        "route replace table 7828 proto 77 10.0.2.0/24 nexthop via 10.1.2.0 dev eth2 weight 3 nexthop via 10.1.1.0 dev eth1 weight 1\n"
        "rule add pref 20000 from 10.0.1.1/32 to 10.0.2.1/32 ipproto 6 sport 1000 dport 5001 table 7700 protocol 77\n"
        "rule add pref 20256 fwmark 0x10/0xffffffff table 7828 protocol 77\n";
    assert_string_equal(s, want);
    free(s);
    s = render(&p, 2, "L1");
    const char *want_del =
        "rule del pref 20000 from 10.0.1.1/32 to 10.0.2.1/32 ipproto 6 sport 1000 dport 5001 table 7700 protocol 77\n"
        "rule del pref 20256 fwmark 0x10/0xffffffff table 7828 protocol 77\n"
        "route del table 7700 proto 77 10.0.2.0/24\n"
        "route del table 7828 proto 77 10.0.2.0/24\n";
    assert_string_equal(s, want_del);
    free(s);
    /* A device name that is not a plain token is refused, not quoted. */
    m.nh[1].dev[0] = ' ';
    struct plan q;
    plan_init(&q);
    plan_add_route(&q, &m);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(planbatch_write(&q, NULL, f, false, 77), -EINVAL);
    fclose(f);
    free(buf);
    plan_free(&q);
    plan_free(&p);
}

static void test_switches(void **state)
{
    (void)state;
    struct plan p;
    plan_init(&p);
    struct plan_rule a = rule("L2", 20000, 7700, 1), b = rule("L1", 20000, 7700, 1);
    struct plan_route t = route("L2", 7700, 2, 1);
    plan_add_rule(&p, &a);
    plan_add_rule(&p, &b);
    plan_add_route(&p, &t);
    char (*names)[PLAN_SW_LEN];
    size_t n;
    assert_int_equal(plan_switches(&p, &names, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "L1");
    assert_string_equal(names[1], "L2");
    free(names);
    plan_free(&p);
}

static void test_plan_and_none_backends(void **state)
{
    (void)state;
    char dir[] = "/tmp/tfplanXXXXXX", err[256] = "";
    assert_non_null(mkdtemp(dir));
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    struct backend *b;
    assert_int_equal(backend_open("bogus", &cfg, &b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "bogus"));
    assert_int_equal(backend_open("plan", &cfg, &b, err, sizeof(err)), -EINVAL);  /* no dir */
    cfg.plan_dir = dir;
    assert_int_equal(backend_open("plan", &cfg, &b, err, sizeof(err)), 0);
    assert_string_equal(backend_kind(b), "plan");
    struct plan p;
    plan_init(&p);
    struct plan_rule r1 = rule("L1", 20000, 7700, 1), r2 = rule("L2", 20001, 7701, 2);
    struct plan_route t = route("L1", 7700, 2, 1);
    plan_add_rule(&p, &r1);
    plan_add_rule(&p, &r2);
    plan_add_route(&p, &t);
    struct backend_result res;
    assert_int_equal(backend_apply(b, &p, &res), 0);
    assert_int_equal(res.rules_added, 2);
    char path[64], *text;
    size_t len;
    snprintf(path, sizeof(path), "%s/L1.ipbatch", dir);
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    assert_non_null(strstr(text, "route replace table 7700 proto 77 10.0.2.0/24"));
    assert_non_null(strstr(text, "rule add pref 20000 "));
    assert_null(strstr(text, "pref 20001"));   /* L2's rule is in L2's file */
    free(text);
    snprintf(path, sizeof(path), "%s/plan.json", dir);
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    assert_non_null(strstr(text, "\"node\": \"L2\""));
    assert_non_null(strstr(text, "\"prio\": 20001"));
    free(text);
    /* A rule is added only after a flush of exactly it, so the file can be
     * applied again. */
    snprintf(path, sizeof(path), "%s/L1.ipbatch", dir);
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    const char *flush = strstr(text, "rule flush pref 20000 from 10.0.1.1/32 to 10.0.2.1/32 ipproto 6 sport 1 ");
    assert_non_null(flush);
    assert_true(flush < strstr(text, "rule add pref 20000 from 10.0.1.1/32 to 10.0.2.1/32 ipproto 6 sport 1 "));
    free(text);
    /* L2 loses everything: its transition removes its rule (by an exact
     * flush: a no-op when applied again), its full-state file flushes every
     * priority and adds nothing. */
    p.nrules = 1;
    assert_int_equal(backend_apply(b, &p, &res), 0);
    assert_int_equal(res.rules_deleted, 1);
    snprintf(path, sizeof(path), "%s/L2.ipbatch", dir);
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    assert_null(strstr(text, "rule add"));
    assert_non_null(strstr(text, "rule flush pref 20001 from 10.0.1.1/32 to 10.0.2.1/32 ipproto 6 sport 2 "
                                 "dport 5001 table 7701 protocol 77\n"));
    free(text);
    snprintf(path, sizeof(path), "%s/L2.full.ipbatch", dir);
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    assert_null(strstr(text, "rule add"));
    assert_non_null(strstr(text, "rule flush pref 20511 protocol 77\n"));
    assert_non_null(strstr(text, "route replace table 7955 proto 77 throw 0.0.0.0/32\nroute flush table 7955 proto 77\n"));
    free(text);
    struct plan have;
    assert_int_equal(backend_read(b, &have), 0);
    assert_true(plan_equal(&have, &p));
    plan_free(&have);
    /* A new backend (a restart) starts from the plan.json it wrote: L1's
     * rule moving is a transition that removes the old one. */
    backend_close(b);
    assert_int_equal(backend_open("plan", &cfg, &b, err, sizeof(err)), 0);
    assert_int_equal(backend_read(b, &have), 0);
    assert_true(plan_equal(&have, &p));
    plan_free(&have);
    struct plan moved;
    plan_init(&moved);
    struct plan_rule r1b = rule("L1", 20001, 7701, 1);
    plan_add_rule(&moved, &r1b);
    plan_add_route(&moved, &t);
    assert_int_equal(backend_apply(b, &moved, &res), 0);
    assert_int_equal(res.rules_deleted, 1);
    snprintf(path, sizeof(path), "%s/L1.ipbatch", dir);
    assert_int_equal(tf_read_file(path, 1 << 20, &text, &len), 0);
    assert_non_null(strstr(text, "rule flush pref 20000 from 10.0.1.1/32"));
    free(text);
    assert_int_equal(backend_apply(b, &p, &res), 0);
    plan_free(&moved);
    /* Outside tierflow's priorities: refused, files untouched. */
    struct plan_rule bad = rule("L1", 100, 7700, 1);
    plan_add_rule(&p, &bad);
    assert_int_equal(backend_apply(b, &p, &res), -EINVAL);
    assert_non_null(strstr(backend_error(b), "priority 100"));
    backend_close(b);
    /* none: reports, installs nothing, reads back the last plan. */
    p.nrules = 1;
    assert_int_equal(backend_open("none", &cfg, &b, err, sizeof(err)), 0);
    assert_int_equal(backend_apply(b, &p, &res), 0);
    assert_int_equal(res.rules_added, 1);
    assert_int_equal(backend_read(b, &have), 0);
    assert_true(plan_equal(&have, &p));
    plan_free(&have);
    assert_int_equal(backend_withdraw(b, &res), 0);
    assert_int_equal(backend_read(b, &have), 0);
    assert_int_equal(have.nrules, 0);
    plan_free(&have);
    backend_close(b);
    plan_free(&p);
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_validates), cmocka_unit_test(test_sort_canonical),
        cmocka_unit_test(test_diff),          cmocka_unit_test(test_json),
        cmocka_unit_test(test_ipbatch),       cmocka_unit_test(test_switches),
        cmocka_unit_test(test_plan_and_none_backends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
