/* api: the route table (issue 15). What api_admit answers for every
 * endpoint and method: admitted, 404 for a path no row matches (the
 * patterns' edges: a link name's length and characters, a missing or
 * extra segment), 405 with the row's Allow list, 401 for a write without
 * the token; and the query-argument helper's 400s, which name the argument
 * and what it takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/api.h"
#include "controller/events.h"

static struct api *api_new(void)
{
    struct api *a = calloc(1, sizeof(*a));
    api_init(a);
    snprintf(a->token, sizeof(a->token), "tok");
    return a;
}

static unsigned admit(const struct api *a, const char *method, const char *path, const char *auth,
                      struct api_reply *r)
{
    struct api_req q = {.method = method, .path = path, .auth = auth};
    bool ok = api_admit(a, &q, r);
    assert_int_equal(ok, r->status == 0);
    return r->status;
}

static void admitted(void **st)
{
    (void)st;
    struct api *a = api_new();
    static const char *const ok[][2] = {
        {"GET", "/api/v1/status"}, {"HEAD", "/api/v1/status"}, {"GET", "/api/v1/topology"},
        {"GET", "/api/v1/paths"}, {"GET", "/api/v1/flows"}, {"GET", "/api/v1/classes"},
        {"GET", "/api/v1/jobs"}, {"GET", "/api/v1/jobs/j1"}, {"PUT", "/api/v1/jobs/j1"},
        {"DELETE", "/api/v1/jobs/j1"}, {"HEAD", "/api/v1/jobs/j1"},
        {"GET", "/api/v1/jobs/"},    /* the handler judges the id (404) */
        {"PUT", "/api/v1/jobs/a/b"}, /* ... and this one (400) */
        {"POST", "/api/v1/links/L1/S1/drain"}, {"POST", "/api/v1/links/L1/S1/undrain"},
        {"POST", "/api/v1/links/leaf-1.pod_2:x/S1/drain"},
        {"GET", "/api/v1/routes"}, {"POST", "/api/v1/reports"}, {"POST", "/api/v1/rebalance"},
        {"GET", "/api/v1/events"}, {"GET", "/api/v1/history"}, {"GET", "/api/v1/openapi.json"},
        {"GET", "/metrics"}, {"HEAD", "/metrics"},
    };
    struct api_reply r;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (admit(a, ok[i][0], ok[i][1], "Bearer tok", &r) != 0)
            fail_msg("%s %s: %u %.*s", ok[i][0], ok[i][1], r.status, (int)r.len, r.body);
    /* A name of 63 characters is a name; of 64 it is no path. */
    char p[160], name[65];
    memset(name, 'n', 64);
    name[63] = '\0';
    snprintf(p, sizeof(p), "/api/v1/links/%s/S1/drain", name);
    assert_int_equal(admit(a, "POST", p, "Bearer tok", &r), 0);
    name[63] = 'n';
    name[64] = '\0';
    snprintf(p, sizeof(p), "/api/v1/links/%s/S1/drain", name);
    assert_int_equal(admit(a, "POST", p, "Bearer tok", &r), 404);
    free(r.body);
    api_destroy(a);
    free(a);
}

static void not_found(void **st)
{
    (void)st;
    struct api *a = api_new();
    static const char *const bad[] = {
        "/api/v1/nothing", "/api/v1/statusx", "/api/v1/status/", "/api/v1/jobsx", "/api/v2/status", "/api/",
        "/metricsx", "/metrics/", "/api/v1/links", "/api/v1/links/", "/api/v1/links/L1/S1",
        "/api/v1/links/L1/S1/", "/api/v1/links/L1/S1/drainx", "/api/v1/links//S1/drain",
        "/api/v1/links/L1//drain", "/api/v1/links/L1/S1/x/drain", "/api/v1/links/L 1/S1/drain",
        "/api/v1/links/L1/S%31/drain", "/api/v1/links/L1/S1/undrain/", "/api/v1/links/../S1/drainx",
    };
    struct api_reply r;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (admit(a, "POST", bad[i], "Bearer tok", &r) != 404)
            fail_msg("POST %s: %u, not 404", bad[i], r.status);
        assert_non_null(strstr(r.body, "no such endpoint"));
        free(r.body);
    }
    api_destroy(a);
    free(a);
}

static void allow(void **st)
{
    (void)st;
    struct api *a = api_new();
    static const char *const cases[][3] = {
        {"DELETE", "/api/v1/status", "GET, HEAD"},
        {"POST", "/metrics", "GET, HEAD"},
        {"GET", "/api/v1/reports", "POST"},
        {"PUT", "/api/v1/rebalance", "POST"},
        {"POST", "/api/v1/jobs", "GET, HEAD"},
        {"POST", "/api/v1/jobs/j1", "GET, HEAD, PUT, DELETE"},
        {"PATCH", "/api/v1/jobs/j1", "GET, HEAD, PUT, DELETE"},
        {"GET", "/api/v1/links/L1/S1/drain", "POST"},
        {"DELETE", "/api/v1/links/L1/S1/undrain", "POST"},
        {"GE", "/api/v1/status", "GET, HEAD"}, /* a method is a whole word of the list */
        {"EAD", "/api/v1/status", "GET, HEAD"},
    };
    struct api_reply r;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (admit(a, cases[i][0], cases[i][1], "Bearer tok", &r) != 405)
            fail_msg("%s %s: %u, not 405", cases[i][0], cases[i][1], r.status);
        assert_non_null(r.allow);
        assert_string_equal(r.allow, cases[i][2]);
        free(r.body);
    }
    api_destroy(a);
    free(a);
}

static void token(void **st)
{
    (void)st;
    struct api *a = api_new();
    static const char *const writes[][2] = {
        {"PUT", "/api/v1/jobs/j1"}, {"DELETE", "/api/v1/jobs/j1"}, {"POST", "/api/v1/links/L1/S1/drain"},
        {"POST", "/api/v1/links/L1/S1/undrain"}, {"POST", "/api/v1/reports"}, {"POST", "/api/v1/rebalance"},
    };
    struct api_reply r;
    for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++) {
        if (admit(a, writes[i][0], writes[i][1], NULL, &r) != 401)
            fail_msg("%s %s without a token: %u, not 401", writes[i][0], writes[i][1], r.status);
        assert_string_equal(r.challenge, "Bearer realm=\"tierflow\"");
        assert_non_null(strstr(r.body, "missing bearer token"));
        free(r.body);
        assert_int_equal(admit(a, writes[i][0], writes[i][1], "Bearer nope", &r), 401);
        assert_non_null(strstr(r.challenge, "invalid_token"));
        free(r.body);
        assert_int_equal(admit(a, writes[i][0], writes[i][1], "bearer   tok", &r), 0);
    }
    /* Reads never need it. */
    assert_int_equal(admit(a, "GET", "/api/v1/jobs/j1", NULL, &r), 0);
    assert_int_equal(admit(a, "GET", "/metrics", "Bearer nope", &r), 0);
    api_destroy(a);
    free(a);
}

/* One query argument {key, value} (api_req.arg). */
static const char *one_arg(void *ctx, const char *key)
{
    const char *const *kv = ctx;
    return strcmp(kv[0], key) == 0 ? kv[1] : NULL;
}

/* GET path?k=v through api_handle: the status and the error message. */
static unsigned get(struct api *a, const char *path, const char *k, const char *v, char *msg, size_t len)
{
    const char *kv[] = {k, v};
    struct api_req q = {.method = "GET", .path = path, .arg = one_arg, .argctx = kv};
    struct api_reply r;
    api_handle(a, &q, &r);
    msg[0] = '\0';
    const char *m = r.body ? strstr(r.body, "\"message\":\"") : NULL;
    if (m)
        snprintf(msg, len, "%.*s", (int)strcspn(m + 11, "\""), m + 11);
    free(r.body);
    return r.status;
}

static void query_args(void **st)
{
    (void)st;
    struct api *a = api_new();
    struct events *ev = calloc(1, sizeof(*ev));
    events_init(ev);
    a->ev = ev;
    char msg[320];
    assert_int_equal(get(a, "/api/v1/events", "since", "2", msg, sizeof(msg)), 200);
    assert_int_equal(get(a, "/api/v1/events", "limit", "1024", msg, sizeof(msg)), 200);
    assert_int_equal(get(a, "/api/v1/events", "since", "x", msg, sizeof(msg)), 400);
    assert_string_equal(msg, "since: 'x' is not an integer in 0..18446744073709551615");
    assert_int_equal(get(a, "/api/v1/events", "limit", "0", msg, sizeof(msg)), 400);
    assert_string_equal(msg, "limit: '0' is not an integer in 1..1024");
    assert_int_equal(get(a, "/api/v1/events", "limit", "1025", msg, sizeof(msg)), 400);
    assert_string_equal(msg, "limit: '1025' is not an integer in 1..1024");
    assert_int_equal(get(a, "/api/v1/events", "limit", "08", msg, sizeof(msg)), 400);
    assert_int_equal(get(a, "/api/v1/paths", "dst", "L1", msg, sizeof(msg)), 400);
    assert_string_equal(msg, "src: required");
    assert_int_equal(get(a, "/api/v1/paths", "src", "L1", msg, sizeof(msg)), 400);
    assert_string_equal(msg, "dst: required");
    assert_int_equal(get(a, "/api/v1/flows", "fat", "1", msg, sizeof(msg)), 400); /* fat takes words only */
    assert_string_equal(msg, "fat: '1' is not true or false");
    events_destroy(ev);
    free(ev);
    api_destroy(a);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admitted), cmocka_unit_test(not_found), cmocka_unit_test(allow),
        cmocka_unit_test(token), cmocka_unit_test(query_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
