/* summary: the fabric's counts, once for /status and /metrics (issue 15).
 * After a report from L1 (one uplink at 97% of its rate, fat and thin
 * flows) and again once everything went stale: summary_get's counts, the
 * congestion test (config_congested) at its boundaries, and /metrics'
 * series, which must show the same numbers; the rejected-reports counter as
 * /metrics reads it (metrics_counter). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/config.h"
#include "controller/metrics.h"
#include "controller/state.h"
#include "controller/summary.h"
#include "policy/classes.h"
#include "tests/unit/ctl_fixture.h"

#define T0 1000.0

static const char report[] =
    "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp1\", \"tx_bps\": 9.7e10}, {\"if\": \"swp2\", \"tx_bps\": 1e10}],"
    " \"flows\": ["
    "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 1000, \"if\": \"swp1\", \"bps\": 5e10, \"fat\": true},"
    "{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 1001, \"if\": \"swp1\", \"bps\": 4.7e10, \"fat\": true},"
    "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.2\", \"proto\": 6, \"sport\": 1002, \"if\": \"swp2\", \"bps\": 1e10, \"fat\": false}]}";

static struct classes cls; /* the built-ins */

static int setup(void **st)
{
    struct state *s = test_malloc(sizeof(*s));
    classes_init(&cls);
    assert_int_equal(state_init(s, fx_topo(), 1000, 3, T0), 0);
    s->classes = &cls;
    assert_int_equal(fx_post(s, report, T0 + 0.5, NULL), 0);
    *st = s;
    return 0;
}

static int teardown(void **st)
{
    state_free(*st);
    test_free(*st);
    classes_free(&cls);
    return 0;
}

/* The value of the sample named exactly name (with its labels) in text. */
static double sample(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    fail_msg("no sample %s", name);
    return -1;
}

static char *scrape(struct state *s, double now)
{
    struct metrics m;
    metrics_init(&m);
    m.max_link_series = 1000;
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(metrics_render(&m, s, now, &text, &len), 0);
    return text;
}

static void counts_fresh(void **st)
{
    struct state *s = *st;
    struct config cfg;
    config_defaults(&cfg);
    struct summary sum;
    pthread_rwlock_rdlock(&s->lock);
    assert_int_equal(summary_get(s, &cfg, T0 + 1, &sum), 0);
    pthread_rwlock_unlock(&s->lock);
    assert_int_equal(sum.probes, 1);
    assert_int_equal(sum.alive, 1);
    assert_int_equal(sum.stale, 0);
    assert_int_equal(sum.flows, 3);
    assert_int_equal(sum.fat, 2);
    assert_int_equal(sum.pinned, 0);
    assert_int_equal(sum.dirs, 2 * s->topo->nlinks);
    /* L1 -> S1 measured at 0.97 (over 0.8); the flows' estimates put 0.97
     * on S1 -> L2 as well; nothing else is near. */
    assert_int_equal(sum.congested, 2);
    assert_int_equal(sum.down, 0);
    assert_float_equal(sum.max_util, 0.97, 1e-9);
    uint64_t fat = 0;
    for (int c = 0; c < CLASSES_MAX; c++)
        fat += sum.fat_by_class[c];
    assert_int_equal(fat, 2);

    /* A higher threshold: nothing congested; the CE threshold alone. */
    cfg.util = 0.97;
    pthread_rwlock_rdlock(&s->lock);
    summary_get(s, &cfg, T0 + 1, &sum);
    pthread_rwlock_unlock(&s->lock);
    assert_int_equal(sum.congested, 0);

    /* Without the thresholds the directions are not looked at. */
    pthread_rwlock_rdlock(&s->lock);
    summary_get(s, NULL, T0 + 1, &sum);
    pthread_rwlock_unlock(&s->lock);
    assert_int_equal(sum.flows, 3);
    assert_int_equal(sum.congested + sum.dirs, 0);

    char *text = scrape(s, T0 + 1);
    assert_int_equal(sample(text, "tierflow_flows"), 3);
    assert_int_equal(sample(text, "tierflow_probes"), 1);
    assert_int_equal(sample(text, "tierflow_probes_stale"), 0);
    char name[128];
    double fat_series = 0;
    for (uint32_t c = 0; c < s->classes->n; c++) {
        snprintf(name, sizeof(name), "tierflow_fat_flows{class=\"%s\"}", s->classes->c[c].name);
        assert_int_equal(sample(text, name), sum.fat_by_class[c]);
        fat_series += sample(text, name);
    }
    assert_int_equal(fat_series, 2);
    free(text);
}

static void counts_stale(void **st)
{
    struct state *s = *st;
    struct config cfg;
    config_defaults(&cfg);
    struct summary sum;
    pthread_rwlock_rdlock(&s->lock);
    summary_get(s, &cfg, T0 + 100, &sum);
    pthread_rwlock_unlock(&s->lock);
    assert_int_equal(sum.probes, 1);
    assert_int_equal(sum.alive, 0);
    assert_int_equal(sum.stale, 1);
    assert_int_equal(sum.flows + sum.fat, 0);
    char *text = scrape(s, T0 + 100);
    assert_int_equal(sample(text, "tierflow_flows"), 0);
    assert_int_equal(sample(text, "tierflow_probes_stale"), 1);
    free(text);
}

static void congested_boundaries(void **st)
{
    (void)st;
    struct config cfg;
    config_defaults(&cfg);
    cfg.util = 0.8;
    cfg.ce_frac = 0.05;
    assert_false(config_congested(&cfg, 0.8, 0.05)); /* at the thresholds: not yet */
    assert_true(config_congested(&cfg, 0.8001, 0));
    assert_true(config_congested(&cfg, 0, 0.0501));
    assert_false(config_congested(&cfg, 0, 0));
}

static void rejected_counter(void **st)
{
    struct state *s = *st;
    uint64_t before = metrics_counter(&s->reports_rejected);
    assert_true(fx_post(s, "{\"probe\": \"NOSUCH\", \"flows\": []}", T0 + 1, NULL) < 0);
    assert_int_equal(metrics_counter(&s->reports_rejected), before + 1);
    char *text = scrape(s, T0 + 1);
    assert_int_equal(sample(text, "tierflow_probe_reports_rejected_total"), before + 1);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(counts_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(counts_stale, setup, teardown),
        cmocka_unit_test(congested_boundaries),
        cmocka_unit_test_setup_teardown(rejected_counter, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
