/* rebalance on the k=4 fat tree, fed the reports of bench 50's first round
 * (stride:4, --interval 1, docs/lab.md "the fat tree's first round"): pod
 * 3's edges L5 and L6 report their flows leaving by S6 (which core is
 * beyond what they see), then S6 reports both leaving for SS4 at a lower
 * rate than the edges measured. The round must see the collision where it
 * is (S6 -> SS4, two fat flows) and part them; it used to see
 * both flows on the first path of the edges' range (through SS3), move a
 * flow off that phantom collision and another one onto the real one. Links
 * are named after their far end, as in the lab; 1 Gb/s links, the lab's
 * 50 Mbit/s rates scaled by 20. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/config.h"
#include "controller/events.h"
#include "controller/metrics.h"
#include "controller/rebalance.h"
#include "policy/classes.h"
#include "tests/unit/ctl_fixture.h"

#define T0 1000.0

struct fx {
    struct state st;
    struct classes cls;
    struct events ev;
    struct metrics m;
    struct config cfg;
    struct rebalance rb;
    int qdrops;                  /* of the first link of every report */
};

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load("fattree:k=4,gbps=1", &t, err, sizeof(err)), 0);
    for (uint32_t k = 0; k < t->nlinks; k++) {
        struct topo_link *l = &t->links[k];
        tf_strlcpy(l->lo_if, t->nodes[l->hi].name, sizeof(l->lo_if));
        tf_strlcpy(l->hi_if, t->nodes[l->lo].name, sizeof(l->hi_if));
        snprintf(l->lo_ip, sizeof(l->lo_ip), "100.64.%u.0", k);
        snprintf(l->hi_ip, sizeof(l->hi_ip), "100.64.%u.1", k);
    }
    assert_int_equal(state_init(&x->st, t, 1000, 3, T0), 0);
    classes_init(&x->cls);
    x->st.classes = &x->cls;
    events_init(&x->ev);
    metrics_init(&x->m);
    config_defaults(&x->cfg);
    x->cfg.warmup = false;   /* each test's reports are the view it means (warm-up: its own tests) */
    rebalance_init(&x->rb, &x->st, &x->ev, &x->m, NULL, &x->cfg);
    *state = x;
    return 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    rebalance_destroy(&x->rb);
    events_destroy(&x->ev);
    classes_free(&x->cls);
    state_free(&x->st);
    free(x);
    return 0;
}

static const char *addr(struct fx *x, const char *host, char *buf)
{
    const struct topo *t = x->st.topo;
    return tf_addr_str(4, t->nodes[fx_node(t, host)].addr, buf, 64);
}

/* One probe's report: two uplinks with their counters (Mbit/s on the lab's
 * 50; the first one's qdisc dropped x->qdrops packets in the interval) and
 * up to three TCP flows "src dst sport egress Mbit/s". */
struct fl { const char *src, *dst; int sport; const char *egress; double mbit; };

static void report(struct fx *x, double now, const char *probe, const char *if1, double mb1, const char *if2,
                   double mb2, const struct fl *f, int n)
{
    char body[2048], a[64], b[64];
    int o = snprintf(body, sizeof(body),
                     "{\"probe\": \"%s\", \"links\": [{\"if\": \"%s\", \"tx_bps\": %g, \"qdisc_drops\": %d, \"oper\": \"up\"},"
                     " {\"if\": \"%s\", \"tx_bps\": %g, \"oper\": \"up\"}], \"flows\": [",
                     probe, if1, mb1 * 20e6, x->qdrops, if2, mb2 * 20e6);
    for (int i = 0; i < n; i++)
        o += snprintf(body + o, sizeof(body) - (size_t)o,
                      "%s{\"src\": \"%s\", \"dst\": \"%s\", \"proto\": 6, \"sport\": %d, \"dport\": %d, \"if\": \"%s\","
                      " \"bps\": %g, \"fat\": true}",
                      i ? ", " : "", addr(x, f[i].src, a), addr(x, f[i].dst, b), f[i].sport, 5400 + f[i].sport - 42000,
                      f[i].egress, f[i].mbit * 20e6);
    snprintf(body + o, sizeof(body) - (size_t)o, "]}");
    assert_int_equal(fx_post(&x->st, body, now, NULL), 0);
}

/* Whether path idx of src -> dst crosses from -> to. */
static bool crosses(struct fx *x, const char *src, const char *dst, json_int_t idx, const char *from, const char *to)
{
    const struct topo *t = x->st.topo;
    uint32_t d, dirs[TOPO_MAX_HOPS];
    assert_int_equal(topo_dir_between(t, fx_node(t, from), fx_node(t, to), &d), 0);
    int n = topo_path_dirs(t, fx_node(t, src), fx_node(t, dst), (uint64_t)idx, dirs, TOPO_MAX_HOPS);
    assert_true(n > 0);
    for (int i = 0; i < n; i++)
        if (dirs[i] == d)
            return true;
    return false;
}

static void first_round_sees_the_aggregation_tier(void **state)
{
    struct fx *x = *state;
    /* The interval's reports, the edges' first (trace of 06:26:51). */
    const struct fl l5[] = {{"H10", "H14", 42009, "S6", 21.9}, {"H9", "H13", 42008, "S5", 12.1}};
    const struct fl l6[] = {{"H12", "H16", 42011, "S6", 24.8}, {"H11", "H15", 42010, "S5", 25.8}};
    const struct fl s5[] = {{"H11", "H15", 42010, "SS1", 25.6}, {"H9", "H13", 42008, "SS1", 12.1}};
    const struct fl s6[] = {{"H12", "H16", 42011, "SS4", 23.35}, {"H10", "H14", 42009, "SS4", 20.06}};
    report(x, T0, "L5", "S5", 12.3, "S6", 22.0, l5, 2);
    report(x, T0, "L6", "S5", 25.2, "S6", 25.3, l6, 2);
    report(x, T0 + 0.002, "S5", "SS1", 37.2, "SS2", 0, s5, 2);
    report(x, T0 + 0.002, "S6", "SS3", 0, "SS4", 46.7, s6, 2);

    json_t *out = NULL;
    assert_int_equal(rebalance_run(&x->rb, T0 + 0.1, false, &out), 0);
    if (getenv("TF_DEBUG")) {
        char *d = json_dumps(out, JSON_COMPACT);
        fprintf(stderr, "%s\n", d);
        free(d);
    }
    /* The collision where S6 saw it; nothing on SS3. */
    bool ss4 = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(out, "congested"), i, c) {
        const char *from = json_string_value(json_object_get(c, "from")), *to = json_string_value(json_object_get(c, "to"));
        assert_false(!strcmp(from, "S6") && !strcmp(to, "SS3"));
        if (!strcmp(from, "S6") && !strcmp(to, "SS4")) {
            ss4 = true;
            assert_int_equal(json_integer_value(json_object_get(c, "fat_flows")), 2);
        }
    }
    assert_true(ss4);
    /* Its two flows no longer share it (the assignment may level the
     * others: 42008 may take the place they left). */
    int off = 0, on = 0;
    json_array_foreach(json_object_get(out, "moves"), i, c) {
        const char *src = json_string_value(json_object_get(c, "src")), *dst = json_string_value(json_object_get(c, "dst"));
        json_int_t from = json_integer_value(json_object_get(c, "from_index"));
        json_int_t to = json_integer_value(json_object_get(c, "to_index"));
        off += crosses(x, src, dst, from, "S6", "SS4");
        on += crosses(x, src, dst, to, "S6", "SS4");
    }
    assert_true(off >= 1);
    assert_true(2 - off + on <= 1);
    assert_true(json_real_value(json_object_get(out, "max_util_after")) < 1.1);
    json_decref(out);
}

/* Pod 2's first interval: three new fat flows on S3 -> SS1 at 13.2, 11.0
 * and 10.9 Mbit/s of 50 (70%, under thresholds.util), seen by their edges
 * and by S3, whose queue has said nothing yet. */
static void pod2_s3_report(struct fx *x, double now)
{
    const struct fl s3[] = {{"H5", "H13", 42004, "SS1", 13.2}, {"H6", "H14", 42005, "SS1", 11.0},
                            {"H7", "H15", 42006, "SS1", 10.9}};
    report(x, now, "S3", "SS1", 35.1, "SS2", 0, s3, 3);
}

static void pod2_first_interval(struct fx *x)
{
    const struct fl l3[] = {{"H5", "H13", 42004, "S3", 13.2}, {"H6", "H14", 42005, "S3", 11.0}};
    const struct fl l4[] = {{"H7", "H15", 42006, "S3", 10.9}};
    report(x, T0, "L3", "S3", 24.2, "S4", 0, l3, 2);
    report(x, T0, "L4", "S3", 10.9, "S4", 0, l4, 1);
    pod2_s3_report(x, T0 + 0.002);
}

/* S3 -> SS1 is a collision, and the round parts the flows. */
static void round_parts_s3_ss1(struct fx *x)
{
    char why[16];
    assert_non_null(fx_congested_reason(&x->rb, "S3", "SS1", T0 + 0.1, why, sizeof(why)));
    assert_string_equal(why, "collision");
    assert_true(rebalance_contended(&x->rb, T0 + 0.1));
    assert_int_equal(rebalance_auto(&x->rb, T0 + 0.1), 0);
    struct rebalance_summary sum = rebalance_last(&x->rb, NULL, NULL, 0);
    assert_true(sum.moved >= 2);
}

/* The old trace's first interval (docs/lab.md, "What the first round still
 * cannot see"): three new fat flows of pod 2 collide on S3 -> SS1 at 13.2,
 * 11.0 and 10.9 Mbit/s of 50 (70%, under thresholds.util). New, they may be
 * ramping, and at their natural demands (a NIC each) they would need three
 * times the link. Nothing in these reports says the network holds them
 * down (application-limited flows look the same): not contended. Once S3's
 * report says its SS1 queue dropped, the first round sees the collision
 * and parts them. It used to wait for the third report. */
static void first_interval_collision_below_util(void **state)
{
    struct fx *x = *state;
    pod2_first_interval(x);
    char why[16];
    assert_null(fx_congested_reason(&x->rb, "S3", "SS1", T0 + 0.1, why, sizeof(why)));
    assert_false(rebalance_contended(&x->rb, T0 + 0.1));
    x->qdrops = 2;
    pod2_s3_report(x, T0 + 0.003);
    round_parts_s3_ss1(x);
}

/* Two steady flows of pod 2 on S3 -> SS1 (66%), each seen by its edge and
 * by S3 in every interval, S3 measuring 27% more than the edge (two
 * probes' intervals over one flow: the trace had 21.9 against 20.06), with
 * a queue that drops. A flow's rate before is the last interval's, not the
 * other probe's of the same interval: they are not ramping, and nothing is
 * contended. Their first interval, when they are new, is. */
static void steady_flows_seen_twice_not_ramping(void **state)
{
    struct fx *x = *state;
    const struct fl l3[] = {{"H5", "H13", 42004, "S3", 13.0}};
    const struct fl l4[] = {{"H7", "H15", 42006, "S3", 13.0}};
    const struct fl s3[] = {{"H5", "H13", 42004, "SS1", 16.5}, {"H7", "H15", 42006, "SS1", 16.5}};
    char why[16];
    x->qdrops = 1;
    for (int t = 0; t < 3; t++) {
        report(x, T0 + t, "L3", "S3", 13.0, "S4", 0, l3, 1);
        report(x, T0 + t, "L4", "S3", 13.0, "S4", 0, l4, 1);
        report(x, T0 + t + 0.002, "S3", "SS1", 33.0, "SS2", 0, s3, 2);
        if (t == 0) {
            assert_non_null(fx_congested_reason(&x->rb, "S3", "SS1", T0 + 0.1, why, sizeof(why)));
            continue;
        }
        assert_null(fx_congested_reason(&x->rb, "S3", "SS1", T0 + t + 0.1, why, sizeof(why)));
        assert_false(rebalance_contended(&x->rb, T0 + t + 0.1));
    }
}

/* Bench 50 after the rule (docs/lab.md): three new flows collide on S7 ->
 * SS1 at 88% (congested: thresholds.util), and two of them, from L8's
 * hosts, also share L8 -> S7 at 74%. The queue of S7 -> SS1 holds those two
 * down, so they are ramping, and at their natural demands they would need
 * twice L8 -> S7: it is contended too (a "collision"), and the round that
 * parts the three does not put one of L8's back beside the other. With
 * thresholds.ramp_util 0 (first, on the same flows under other ports, the
 * first ones stale by then) only S7 -> SS1 is listed. */
static void queue_elsewhere_makes_a_collision(void **state)
{
    struct fx *x = *state;
    char why[16];
    for (int zero = 1; zero >= 0; zero--) {
        int p = zero ? 100 : 0;
        double now = T0 + 10 * !zero;
        const struct fl l8[] = {{"H15", "H3", 42014 + p, "S7", 18.5}, {"H16", "H4", 42015 + p, "S7", 18.5}};
        const struct fl l7[] = {{"H14", "H2", 42013 + p, "S7", 7.0}};
        const struct fl s7[] = {{"H14", "H2", 42013 + p, "SS1", 7.0}, {"H15", "H3", 42014 + p, "SS1", 18.5},
                                {"H16", "H4", 42015 + p, "SS1", 18.5}};
        x->cfg.ramp_util = zero ? 0 : 0.5;
        report(x, now, "L8", "S7", 37.0, "S8", 0, l8, 2);
        report(x, now, "L7", "S7", 7.0, "S8", 0, l7, 1);
        report(x, now + 0.002, "S7", "SS1", 44.0, "SS2", 0, s7, 3);
        assert_non_null(fx_congested_reason(&x->rb, "S7", "SS1", now + 0.1, why, sizeof(why)));
        assert_string_equal(why, "util");
        const char *l8s7 = fx_congested_reason(&x->rb, "L8", "S7", now + 0.1, why, sizeof(why));
        if (zero) {
            assert_null(l8s7);
        } else {
            assert_non_null(l8s7);
            assert_string_equal(why, "collision");
        }
    }
}

/* ---- the qdisc backlog as queue evidence (docs/lab.md, "The ramp rule and
 * the qdisc backlog"). first_interval_collision_below_util's reports, but
 * S3's SS1 queue holds a backlog rather than dropping: S3's own reports of
 * the link alone (bytes at the lab's 50 Mbit/s scaled by 20, as the rates).
 * A queue counts when it stands: at least thresholds.queue_delay (5 ms) in
 * the sender's last two reports. One report of 92 ms after one of 3 ms (a
 * burst, as the gray lab's application-limited flows leave at times) is
 * not contended; 92 ms twice (the bench's S1 -> SS1) is: a collision, and
 * the round parts the flows. With the threshold at 0 the backlog counts
 * for nothing. */
static void backlog_post(struct fx *x, double now, double ms)
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"probe\": \"S3\", \"links\": [{\"if\": \"SS1\", \"tx_bps\": %g, \"qdisc_drops\": 0,"
             " \"qdisc_backlog\": %.0f, \"oper\": \"up\"}]}",
             35.1 * 20e6, ms / 1e3 * 1e9 / 8);
    assert_int_equal(fx_post(&x->st, body, now, NULL), 0);
}

static void backlog_makes_a_collision(void **state)
{
    struct fx *x = *state;
    pod2_first_interval(x);
    char why[16];
    x->cfg.queue_delay = 0.005;
    backlog_post(x, T0 + 0.003, 3);
    backlog_post(x, T0 + 0.004, 92);
    assert_null(fx_congested_reason(&x->rb, "S3", "SS1", T0 + 0.1, why, sizeof(why)));
    assert_false(rebalance_contended(&x->rb, T0 + 0.1));
    backlog_post(x, T0 + 0.005, 92);
    x->cfg.queue_delay = 0;
    assert_null(fx_congested_reason(&x->rb, "S3", "SS1", T0 + 0.1, why, sizeof(why)));
    x->cfg.queue_delay = 0.005;
    round_parts_s3_ss1(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(first_round_sees_the_aggregation_tier, setup, teardown),
        cmocka_unit_test_setup_teardown(first_interval_collision_below_util, setup, teardown),
        cmocka_unit_test_setup_teardown(steady_flows_seen_twice_not_ramping, setup, teardown),
        cmocka_unit_test_setup_teardown(queue_elsewhere_makes_a_collision, setup, teardown),
        cmocka_unit_test_setup_teardown(backlog_makes_a_collision, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
