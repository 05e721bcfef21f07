/* api: GET /api/v1/flows pages. The default page is 100 flows; offset and
 * next_offset walk every matched flow exactly once, in the view's order (rate
 * descending, ties by position); an offset at or past the end is an empty
 * page, not an error; limit=0 still answers the counts alone; a bad offset
 * is a 400 naming `offset`; pages stay cacheable (httpd keys its cache by
 * path and query, so each offset has its own entry). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/api.h"
#include "controller/state.h"
#include "policy/topo.h"
#include "tests/unit/ctl_fixture.h"

#define NFLOWS 250 /* more than two default pages, not a multiple of any page size used here */

/* NFLOWS flows reported by L1, rates in 25 steps so that most share their
 * rate with others (the order among them is by position), every third fat. */
static int setup(void **st)
{
    struct state *s = test_malloc(sizeof(*s));
    assert_int_equal(state_init(s, fx_topo(), 1000, 3, 1000), 0);
    size_t cap = NFLOWS * 160 + 64, len = 0;
    char *body = test_malloc(cap);
    len += (size_t)snprintf(body + len, cap - len, "{\"probe\": \"L1\", \"flows\": [");
    for (int i = 0; i < NFLOWS; i++)
        len += (size_t)snprintf(body + len, cap - len,
                                "%s{\"src\": \"10.0.1.%d\", \"dst\": \"10.0.2.%d\", \"proto\": 17, \"sport\": %d,"
                                " \"if\": \"swp%d\", \"bps\": %de8, \"fat\": %s}",
                                i ? "," : "", 1 + i % 2, 1 + i / 2 % 2, 1000 + i, 1 + i % 4, 1 + i % 25,
                                i % 3 == 0 ? "true" : "false");
    snprintf(body + len, cap - len, "]}");
    assert_true(len + 2 < cap);
    assert_int_equal(fx_post(s, body, tf_now_real(), NULL), 0);
    assert_int_equal(s->nflows, NFLOWS);
    test_free(body);
    *st = s;
    return 0;
}

static int teardown(void **st)
{
    state_free(*st);
    test_free(*st);
    return 0;
}

static const char *str(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static json_int_t num(json_t *o, const char *k)
{
    assert_true(json_is_integer(json_object_get(o, k)));
    return json_integer_value(json_object_get(o, k));
}

/* Without limit: 100 flows, the first page of the whole list. */
static void default_page_is_100(void **st)
{
    json_t *o, *all;
    bool cacheable = false;
    assert_int_equal(fx_get(*st, "/api/v1/flows", NULL, &o, &cacheable), 200);
    assert_true(cacheable); /* httpd keys its cache by path and query, offset included */
    const char *big[] = {"limit", "100000", NULL};
    assert_int_equal(fx_get(*st, "/api/v1/flows", big, &all, NULL), 200);
    assert_int_equal(num(o, "total"), NFLOWS);
    assert_int_equal(num(o, "matched"), NFLOWS);
    assert_int_equal(num(o, "returned"), 100);
    assert_int_equal(json_array_size(json_object_get(o, "flows")), 100);
    assert_int_equal(num(o, "offset"), 0);
    assert_int_equal(num(o, "next_offset"), 100);
    for (size_t i = 0; i < 100; i++)
        assert_string_equal(str(json_array_get(json_object_get(o, "flows"), i), "id"),
                            str(json_array_get(json_object_get(all, "flows"), i), "id"));
    /* One page holds everything: nothing follows. */
    assert_int_equal(num(all, "returned"), NFLOWS);
    assert_true(json_is_null(json_object_get(all, "next_offset")));
    json_decref(o);
    json_decref(all);
}

/* Following next_offset from 0 with page size `limit` (and filter fat=fat
 * when not NULL) yields the one-page list, each flow once, in order. */
static void walk(struct state *s, const char *limit, const char *fat)
{
    const char *one[] = {"limit", "100000", fat ? "fat" : NULL, fat, NULL};
    json_t *all;
    assert_int_equal(fx_get(s, "/api/v1/flows", one, &all, NULL), 200);
    json_t *want = json_object_get(all, "flows");
    size_t n = json_array_size(want), got = 0, pages = 0;
    assert_true(n > 0);
    char off[24] = "0";
    for (;;) {
        const char *args[] = {"limit", limit, "offset", off, fat ? "fat" : NULL, fat, NULL};
        json_t *o;
        bool cacheable = false;
        assert_int_equal(fx_get(s, "/api/v1/flows", args, &o, &cacheable), 200);
        assert_true(cacheable);
        assert_int_equal(num(o, "offset"), (json_int_t)got);
        assert_int_equal(num(o, "matched"), (json_int_t)n);
        json_t *fl = json_object_get(o, "flows");
        assert_int_equal(num(o, "returned"), (json_int_t)json_array_size(fl));
        assert_true(json_array_size(fl) > 0);
        for (size_t i = 0; i < json_array_size(fl); i++, got++) {
            assert_true(got < n);
            json_t *f = json_array_get(fl, i);
            assert_string_equal(str(f, "id"), str(json_array_get(want, got), "id"));
            if (fat)
                assert_int_equal(json_is_true(json_object_get(f, "fat")), fat[0] == 't');
        }
        pages++;
        json_t *next = json_object_get(o, "next_offset");
        assert_non_null(next); /* present on every page, null on the last */
        if (json_is_null(next)) {
            json_decref(o);
            break;
        }
        assert_int_equal(json_integer_value(next), (json_int_t)got);
        snprintf(off, sizeof(off), "%lld", (long long)json_integer_value(next));
        json_decref(o);
    }
    assert_int_equal(got, n);
    unsigned long lim = strtoul(limit, NULL, 10);
    assert_int_equal(pages, (n + lim - 1) / lim);
    /* Each flow once: the one-page list has no repeated id and is sorted. */
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(want, i);
        if (i > 0)
            assert_true(json_number_value(json_object_get(f, "bps")) <=
                        json_number_value(json_object_get(json_array_get(want, i - 1), "bps")));
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(str(f, "id"), str(json_array_get(want, j), "id"));
    }
    json_decref(all);
}

static void next_offset_walks_every_flow_once(void **st)
{
    walk(*st, "7", NULL);
    walk(*st, "100", NULL);
    walk(*st, "250", NULL); /* one full page: next_offset null at once */
    /* offset counts matched flows (after the filter), not positions. */
    walk(*st, "9", "true");
    walk(*st, "9", "false");
}

/* At or past the end: 200 with no flows; and limit=0 keeps meaning "the
 * counts only" (nothing to follow, so no next_offset either). */
static void past_the_end_and_limit_zero(void **st)
{
    const char *offs[] = {"250", "251", "16000000"};
    for (size_t i = 0; i < TF_ARRAY_SIZE(offs); i++) {
        const char *args[] = {"offset", offs[i], NULL};
        json_t *o;
        assert_int_equal(fx_get(*st, "/api/v1/flows", args, &o, NULL), 200);
        assert_int_equal(num(o, "matched"), NFLOWS);
        assert_int_equal(num(o, "returned"), 0);
        assert_int_equal(json_array_size(json_object_get(o, "flows")), 0);
        assert_int_equal(num(o, "offset"), strtoll(offs[i], NULL, 10));
        assert_true(json_is_null(json_object_get(o, "next_offset")));
        json_decref(o);
    }
    const char *zero[] = {"limit", "0", "offset", "10", NULL};
    json_t *o;
    assert_int_equal(fx_get(*st, "/api/v1/flows", zero, &o, NULL), 200);
    assert_int_equal(num(o, "total"), NFLOWS);
    assert_int_equal(num(o, "matched"), NFLOWS);
    assert_int_equal(num(o, "returned"), 0);
    assert_true(json_is_null(json_object_get(o, "next_offset")));
    json_decref(o);
}

/* Bad offsets (and limits) are 400 naming the parameter and its range. */
static void bad_offset_is_400(void **st)
{
    struct { const char *key, *val, *msg; } bad[] = {
        {"offset", "x", "offset: 'x' is not an integer in 0..16000000"},
        {"offset", "-1", "offset: '-1' is not an integer in 0..16000000"},
        {"offset", "", "offset: '' is not an integer in 0..16000000"},
        {"offset", "16000001", "offset: '16000001' is not an integer in 0..16000000"},
        {"offset", "99999999999999999999", "offset: '99999999999999999999' is not an integer in 0..16000000"},
        {"offset", "1.5", "offset: '1.5' is not an integer in 0..16000000"},
        {"limit", "100001", "limit: '100001' is not an integer in 0..100000"},
        {"limit", "x", "limit: 'x' is not an integer in 0..100000"},
    };
    for (size_t i = 0; i < TF_ARRAY_SIZE(bad); i++) {
        const char *args[] = {bad[i].key, bad[i].val, NULL};
        json_t *o;
        assert_int_equal(fx_get(*st, "/api/v1/flows", args, &o, NULL), 400);
        json_t *e = json_object_get(o, "error");
        assert_string_equal(str(e, "code"), "bad_request");
        assert_string_equal(str(e, "message"), bad[i].msg);
        json_decref(o);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(default_page_is_100, setup, teardown),
        cmocka_unit_test_setup_teardown(next_offset_walks_every_flow_once, setup, teardown),
        cmocka_unit_test_setup_teardown(past_the_end_and_limit_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_offset_is_400, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
