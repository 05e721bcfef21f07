/* history: the fabric summary (max utilisation and imbalance index over
 * switch-to-switch directions, directions down), ticks folded into 10 s
 * buckets (highest values, counter increases), the ring's bound and order
 * once it wraps, a clock stepped back, and the JSON: annotations picked
 * from the events ring by kind and window, and the last action. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "controller/events.h"
#include "controller/history.h"
#include "controller/metrics.h"
#include "controller/state.h"
#include "tests/unit/ctl_fixture.h"

#define T0 100000.0               /* a multiple of HISTORY_STEP */

/* L1 measures 97 Gb/s towards S1, where two fat flows go (on to L2), and a
 * third fat flow goes over S2: 6 fat flow crossings over 16 switch
 * directions, 2 on the busiest. */
static const char *REPORT =
    "{\"probe\": \"L1\", \"interval_s\": 1, \"links\": [{\"if\": \"swp1\", \"tx_bps\": 9.7e10}], \"flows\": ["
    "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 7, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 4e10, \"fat\": true},"
    "{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 8, \"dport\": 4791, \"if\": \"swp1\", \"bps\": 4e10, \"fat\": true},"
    "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 9, \"dport\": 4791, \"if\": \"swp2\", \"bps\": 2e10, \"fat\": true}]}";

struct fx {
    struct state st;
    struct metrics m;
    struct history h;
    struct events ev;
};

static int setup(void **p)
{
    struct fx *f = test_calloc(1, sizeof(*f));
    assert_int_equal(state_init(&f->st, fx_topo(), 1000, 3, T0), 0);
    metrics_init(&f->m);
    history_init(&f->h);
    events_init(&f->ev);
    *p = f;
    return 0;
}

static int teardown(void **p)
{
    struct fx *f = *p;
    state_free(&f->st);
    history_destroy(&f->h);
    events_destroy(&f->ev);
    test_free(f);
    return 0;
}

static void summary_of_known_reports(void **p)
{
    struct fx *f = *p;
    struct history_summary s;
    history_summary(&f->st, T0, &s);
    assert_true(s.max_util == 0 && s.imbalance == 0); /* no fat flow: 0, not NaN */
    assert_int_equal(s.down, 0);
    assert_int_equal(fx_post(&f->st, REPORT, T0, NULL), 0);
    history_summary(&f->st, T0, &s);
    assert_true(fabs(s.max_util - 0.97) < 1e-9);
    assert_string_equal(f->st.topo->nodes[topo_dir_from(f->st.topo, s.busiest)].name, "L1");
    assert_string_equal(f->st.topo->nodes[topo_dir_to(f->st.topo, s.busiest)].name, "S1");
    assert_true(fabs(s.imbalance - 2.0 / (6.0 / 16.0)) < 1e-9);
    /* A direction down is counted. */
    f->st.dirs[0].up = false;
    history_summary(&f->st, T0, &s);
    assert_int_equal(s.down, 1);
}

/* A tick with the metrics counters as they are, as tierflowd's loop does. */
static void tick(struct fx *f, double now)
{
    history_tick(&f->h, &f->st, atomic_load(&f->m.moves), atomic_load(&f->m.backend_errors), now);
}

static void ticks_fold_into_buckets(void **p)
{
    struct fx *f = *p;
    atomic_store(&f->m.moves, 5);         /* a round before the first tick counts too */
    tick(f, T0 + 1);
    assert_int_equal(fx_post(&f->st, REPORT, T0 + 2, NULL), 0);
    atomic_store(&f->m.moves, 8);
    atomic_store(&f->m.backend_errors, 1);
    tick(f, T0 + 2);
    tick(f, T0 + 9.9);
    assert_int_equal(f->h.n, 1);
    const struct history_bucket *b = &f->h.ring[f->h.head];
    assert_true(b->ts == T0 && fabs(b->max_util - 0.97) < 1e-9);
    assert_int_equal(b->moves, 8);
    assert_int_equal(b->backend_errors, 1);
    /* The next bucket starts from the counters where the last one ended. */
    atomic_store(&f->m.moves, 9);
    tick(f, T0 + 10);
    assert_int_equal(f->h.n, 2);
    assert_int_equal(f->h.ring[f->h.head].moves, 1);
    assert_true(f->h.ring[f->h.head].ts == T0 + 10);
    /* A clock stepped back folds into the newest bucket. */
    atomic_store(&f->m.moves, 11);
    tick(f, T0 - 50);
    assert_int_equal(f->h.n, 2);
    assert_int_equal(f->h.ring[f->h.head].moves, 3);
}

static void ring_is_bounded_and_ordered(void **p)
{
    struct fx *f = *p;
    for (int i = 0; i < HISTORY_LEN + 25; i++)
        tick(f, T0 + HISTORY_STEP * i);
    assert_int_equal(f->h.n, HISTORY_LEN);
    json_t *j = history_json(&f->h, &f->ev, T0 + HISTORY_STEP * (HISTORY_LEN + 25));
    json_t *bk = json_object_get(j, "buckets");
    assert_int_equal(json_array_size(bk), HISTORY_LEN);
    double first = json_real_value(json_object_get(json_array_get(bk, 0), "ts"));
    assert_true(first == T0 + HISTORY_STEP * 25);        /* the oldest 25 overwritten */
    for (size_t i = 1; i < json_array_size(bk); i++)
        assert_true(json_real_value(json_object_get(json_array_get(bk, i), "ts")) ==
                    first + HISTORY_STEP * (double)i);
    json_decref(j);
}

static void annotations_and_last_action(void **p)
{
    struct fx *f = *p;
    double now = T0 + 7200;
    events_add_rebalance(&f->ev, now - 4000, "rebalance", 2, 0.9, 0.5, "moved 2 flows (outside the window)");
    events_add(&f->ev, now - 100, "link_down", "L1 -> S1 down");
    events_add_rebalance(&f->ev, now - 90, "dry_run", 1, 0.9, 0.5, "would move 1 flow");
    events_add(&f->ev, now - 80, "job", "job a registered");
    events_add(&f->ev, now - 70, "unpinned", "flow 1 unpinned");
    events_add(&f->ev, now - 60, "probe_stale", "probe L2 stale");
    json_t *j = history_json(&f->h, &f->ev, now);
    json_t *notes = json_object_get(j, "annotations");
    assert_int_equal(json_array_size(notes), 3);   /* link_down, unpinned, probe_stale */
    assert_string_equal(json_string_value(json_object_get(json_array_get(notes, 0), "kind")), "link_down");
    assert_string_equal(json_string_value(json_object_get(json_array_get(notes, 2), "kind")), "probe_stale");
    /* The last action is the newest that changed what is installed, even
     * when an older one is outside the window. */
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "last_action"), "kind")), "unpinned");
    json_decref(j);
    events_add_rebalance(&f->ev, now - 50, "rebalance", 1, 0.97, 0.49, "moved 1 flow");
    j = history_json(&f->h, &f->ev, now);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "last_action"), "moved")), 1);
    json_decref(j);
}

static void no_action_is_null(void **p)
{
    struct fx *f = *p;
    events_add(&f->ev, T0, "start", "started");
    json_t *j = history_json(&f->h, &f->ev, T0);
    assert_true(json_is_null(json_object_get(j, "last_action")));
    assert_int_equal(json_array_size(json_object_get(j, "annotations")), 1);
    assert_int_equal(json_array_size(json_object_get(j, "buckets")), 0);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(summary_of_known_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(ticks_fold_into_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(ring_is_bounded_and_ordered, setup, teardown),
        cmocka_unit_test_setup_teardown(annotations_and_last_action, setup, teardown),
        cmocka_unit_test_setup_teardown(no_action_is_null, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
