/* Unit tests for controller/planbuild on a 2-leaf x 4-spine fabric with
 * interface and address fields, as the emulated fabric writes them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/planbuild.h"
#include "policy/topo.h"
#include "tests/lib/topo_2x4.h"

static struct topo *topo;

static int setup(void **state)
{
    (void)state;
    char json[8192];
    topo_2x4_json(json, sizeof(json));
    char err[256];
    int rc = topo_from_json(json, strlen(json), "test", &topo, err, sizeof(err));
    if (rc)
        fprintf(stderr, "# %s\n", err);
    return rc;
}

static int teardown(void **state)
{
    (void)state;
    topo_free(topo);
    return 0;
}

static void flow(struct planbuild_flow *f, uint32_t *dirs, uint16_t sport, uint64_t path)
{
    uint32_t h1 = topo_node_by_name(topo, "H1"), h2 = topo_node_by_name(topo, "H2");
    memset(f, 0, sizeof(*f));
    f->af = 4;
    f->proto = 17;
    memcpy(f->src, topo->nodes[h1].addr, 16);
    memcpy(f->dst, topo->nodes[h2].addr, 16);
    f->sport = sport;
    f->dport = 4791;
    f->ndirs = topo_path_dirs(topo, h1, h2, path, dirs, TOPO_MAX_HOPS);
    assert_int_equal(f->ndirs, 4);
    f->dirs = dirs;
}

static void test_pinned_flows(void **state)
{
    (void)state;
    struct plan_opts o;
    plan_opts_default(&o);
    struct planbuild_flow f[3];
    uint32_t d[3][TOPO_MAX_HOPS];
    flow(&f[0], d[0], 1000, 2);   /* via S3 */
    flow(&f[1], d[1], 1001, 2);   /* via S3 too: one table, one route */
    flow(&f[2], d[2], 1002, 0);   /* via S1 */
    struct plan p;
    plan_init(&p);
    char err[256] = "";
    assert_int_equal(plan_build(topo, &o, f, 3, NULL, 0, &p, err, sizeof(err)), 0);
    /* Only L1 has an upward choice on these paths (L2 is reached going down). */
    assert_int_equal(p.nrules, 3);
    assert_int_equal(p.nroutes, 2);
    const struct plan_rule *r = &p.rules[0];   /* sorted: prio 20000 (S1) first */
    assert_string_equal(r->sw, "L1");
    assert_int_equal(r->prio, 20000);
    assert_int_equal(r->table, 7700);
    assert_int_equal(r->sport, 1002);
    assert_int_equal(r->src_len, 32);
    assert_int_equal(r->ipproto, 17);
    assert_int_equal(p.rules[1].prio, 20002);
    assert_int_equal(p.rules[1].table, 7702);
    const struct plan_route *t = &p.routes[1];
    assert_int_equal(t->table, 7702);
    assert_int_equal(t->dst_len, 24);             /* the destination leaf's prefix */
    assert_memory_equal(t->dst, ((uint8_t[]){10, 0, 2, 0}), 4);
    assert_int_equal(t->nnh, 1);
    assert_string_equal(t->nh[0].dev, "eth3");    /* near end's interface */
    assert_memory_equal(t->nh[0].via, ((uint8_t[]){10, 1, 3, 0}), 4);  /* far end's address */
    /* Deterministic: the same input gives the same plan. */
    struct plan q;
    plan_init(&q);
    assert_int_equal(plan_build(topo, &o, f, 3, NULL, 0, &q, err, sizeof(err)), 0);
    assert_true(plan_equal(&p, &q));
    plan_free(&p);
    plan_free(&q);
}

static void test_classes(void **state)
{
    (void)state;
    struct plan_opts o;
    plan_opts_default(&o);
    int allow[2] = {(int)topo_node_by_name(topo, "S2"), (int)topo_node_by_name(topo, "S4")};
    uint16_t w[2] = {1, 3};
    struct planbuild_class c[2] = {{.fwmark = 0x10, .dscp = -1, .allow = allow, .weight = w, .nallow = 2},
                                   {.dscp = 26}};
    struct plan p;
    plan_init(&p);
    char err[256] = "";
    assert_int_equal(plan_build(topo, &o, NULL, 0, c, 2, &p, err, sizeof(err)), 0);
    assert_int_equal(p.nrules, 4);     /* 2 classes x 2 leaves */
    assert_int_equal(p.nroutes, 4);    /* each leaf: one remote prefix per class */
    const struct plan_rule *r = &p.rules[0];
    assert_string_equal(r->sw, "L1");
    assert_int_equal(r->prio, 20256);
    assert_int_equal(r->table, 7828);
    assert_int_equal(r->fwmark, 0x10);
    assert_int_equal(p.rules[1].dscp, 26);
    assert_int_equal(p.rules[1].table, 7829);
    const struct plan_route *t = &p.routes[0];
    assert_string_equal(t->sw, "L1");
    assert_int_equal(t->table, 7828);
    assert_memory_equal(t->dst, ((uint8_t[]){10, 0, 2, 0}), 4);
    assert_int_equal(t->nnh, 2);
    assert_string_equal(t->nh[0].dev, "eth2");
    assert_int_equal(t->nh[0].weight, 1);
    assert_string_equal(t->nh[1].dev, "eth4");
    assert_int_equal(t->nh[1].weight, 3);
    assert_int_equal(p.routes[1].nnh, 4);  /* no allow list: every uplink */
    plan_free(&p);
}

static void test_errors_name_the_input(void **state)
{
    (void)state;
    struct plan_opts o;
    plan_opts_default(&o);
    struct planbuild_flow f;
    uint32_t d[TOPO_MAX_HOPS];
    flow(&f, d, 1000, 1);
    struct plan p;
    plan_init(&p);
    char err[256] = "";
    d[1] = 2 * topo->nlinks + 7;
    assert_int_equal(plan_build(topo, &o, &f, 1, NULL, 0, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "flow 0 (10.0.1.1:1000->10.0.2.1:4791"));
    assert_non_null(strstr(err, "outside the topology"));
    flow(&f, d, 1000, 1);
    uint32_t tmp = d[1];
    d[1] = d[2];
    d[2] = tmp;
    assert_int_equal(plan_build(topo, &o, &f, 1, NULL, 0, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not contiguous"));
    o.prio_max = o.prio_min + 10;
    flow(&f, d, 1000, 1);
    assert_int_equal(plan_build(topo, &o, &f, 1, NULL, 0, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "priorities"));
    plan_opts_default(&o);
    /* A link without the next hop's address is named. */
    struct topo_link *l = &topo->links[topo_dir_link(d[1])];
    char saved[48];
    memcpy(saved, l->hi_ip, sizeof(saved));
    l->hi_ip[0] = '\0';
    assert_int_equal(plan_build(topo, &o, &f, 1, NULL, 0, &p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "link L1-S2"));
    memcpy(l->hi_ip, saved, sizeof(saved));
    plan_free(&p);
}

/* The topology check a backend that acts runs at start names the first
 * uplink it cannot express, as a round would, and passes a full topology. */
static void test_check_topo(void **state)
{
    (void)state;
    char err[256] = "";
    assert_int_equal(planbuild_check_topo(topo, err, sizeof(err)), 0);
    struct topo_link *l = NULL;
    for (uint32_t i = 0; i < topo->nlinks && !l; i++)
        if (!strcmp(topo->nodes[topo->links[i].lo].name, "L2") && !strcmp(topo->nodes[topo->links[i].hi].name, "S3"))
            l = &topo->links[i];
    assert_non_null(l);
    char saved[16];
    memcpy(saved, l->lo_if, sizeof(saved));
    l->lo_if[0] = '\0';
    assert_int_equal(planbuild_check_topo(topo, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "link L2-S3: no interface at the lower end (a_if/b_if) for the next hop");
    memcpy(l->lo_if, saved, sizeof(saved));
    assert_int_equal(planbuild_check_topo(topo, err, sizeof(err)), 0);
}

/* planbuild_pins gives back, from a plan, exactly the flows and paths
 * plan_build made it from: on the 2x4 and on a k=4 fat tree (rules on
 * leaves and spines), every host pair, every path. */
struct seen {
    const struct topo *t;
    uint64_t want[64];
    uint16_t sport[64];
    size_t n, got, wrong;
};

static void pin_cb(void *arg, const struct planbuild_flow *f, uint32_t src, uint32_t dst, uint64_t path)
{
    struct seen *s = arg;
    (void)src;
    (void)dst;
    s->got++;
    for (size_t i = 0; i < s->n; i++)
        if (s->sport[i] == f->sport)
            s->wrong += s->want[i] != path;
}

static void round_trip(const struct topo *t, uint32_t a, uint32_t b)
{
    struct plan_opts o;
    plan_opts_default(&o);
    uint64_t count = topo_path_count(t, a, b);
    assert_true(count > 1 && count <= 64);
    struct planbuild_flow f[64];
    uint32_t d[64][TOPO_MAX_HOPS];
    struct seen s = {.t = t, .n = count};
    for (uint64_t p = 0; p < count; p++) {
        memset(&f[p], 0, sizeof(f[p]));
        f[p].af = 4;
        f[p].proto = 6;
        memcpy(f[p].src, t->nodes[a].addr, 16);
        memcpy(f[p].dst, t->nodes[b].addr, 16);
        f[p].sport = (uint16_t)(2000 + p);
        f[p].dport = 5201;
        f[p].ndirs = topo_path_dirs(t, a, b, p, d[p], TOPO_MAX_HOPS);
        f[p].dirs = d[p];
        s.want[p] = p;
        s.sport[p] = f[p].sport;
    }
    struct plan out;
    plan_init(&out);
    char err[256] = "";
    int rc = plan_build(t, &o, f, count, NULL, 0, &out, err, sizeof(err));
    if (rc)
        fprintf(stderr, "# %s\n", err);
    assert_int_equal(rc, 0);
    size_t skipped = 99;
    assert_int_equal(planbuild_pins(t, &o, &out, pin_cb, &s, &skipped), 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(s.got, count);
    assert_int_equal(s.wrong, 0);
    /* A flow whose rule at one switch is missing (a partial state) is
     * skipped, not guessed. */
    if (out.nrules > count) {
        out.nrules--;
        s.got = 0;
        assert_int_equal(planbuild_pins(t, &o, &out, pin_cb, &s, &skipped), 0);
        assert_int_equal(skipped + s.got, count);
        assert_int_equal(s.wrong, 0);
    }
    plan_free(&out);
}

static void test_pins_round_trip(void **state)
{
    (void)state;
    round_trip(topo, topo_node_by_name(topo, "H1"), topo_node_by_name(topo, "H2"));
    struct topo *ft;
    char err[256];
    assert_int_equal(topo_generate("fattree:k=4,gbps=1", &ft, err, sizeof(err)), 0);
    /* The generator names no interfaces or addresses: give every link some. */
    for (uint32_t l = 0; l < ft->nlinks; l++) {
        snprintf(ft->links[l].lo_if, sizeof(ft->links[l].lo_if), "u%u", l);
        snprintf(ft->links[l].hi_ip, sizeof(ft->links[l].hi_ip), "10.254.%u.%u", l / 128, 2 * (l % 128) + 1);
    }
    uint32_t h1 = ft->hosts[0], hlast = ft->hosts[ft->nhosts - 1];
    round_trip(ft, h1, hlast);                 /* across pods: rules on leaf and spine */
    round_trip(ft, ft->hosts[0], ft->hosts[2]); /* within a pod */
    topo_free(ft);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_flows),
        cmocka_unit_test(test_classes),
        cmocka_unit_test(test_errors_name_the_input),
        cmocka_unit_test(test_check_topo),
        cmocka_unit_test(test_pins_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
