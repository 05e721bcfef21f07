/* reqguard: which Host names, Origins and Content-Types a request may carry
 * (issue 12, item 5), for loopback, wildcard and specific listen addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "controller/api.h"
#include "controller/config.h"
#include "controller/reqguard.h"

static void guard(struct config *c, struct reqguard *g, const char *listen, const char *hosts, const char *origins)
{
    char err[256];
    config_defaults(c);
    assert_int_equal(config_set_str(c, "listen", listen, err, sizeof(err)), 0);
    assert_int_equal(config_set_str(c, "http.allowed_hosts", hosts, err, sizeof(err)), 0);
    assert_int_equal(config_set_str(c, "http.allowed_origins", origins, err, sizeof(err)), 0);
    assert_int_equal(reqguard_init(g, c), 0);
}

static void host_loopback(void **st)
{
    (void)st;
    struct config c;
    struct reqguard g;
    guard(&c, &g, "127.0.0.1:8080", "ctl.example, Other.Example.", "");
    static const char *const ok[] = {
        NULL, "127.0.0.1", "127.0.0.1:8080", "127.0.0.1:1", "127.0.0.2", "localhost", "LocalHost:8080",
        "localhost.", "[::1]", "[::1]:8080", "ctl.example", "CTL.example:99", "other.example", "other.example.",
    };
    static const char *const bad[] = {
        "evil.example", "evil.example:8080", "10.0.0.1", "localhost.evil.example", "evil.localhost", "",
        ":8080", "[::1", "[::1]x", "a:b:c", "ctl.example.evil", "[::2]",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_true(reqguard_host_ok(&g, ok[i]));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(reqguard_host_ok(&g, bad[i]));
}

static void host_specific_and_wildcard(void **st)
{
    (void)st;
    struct config c;
    struct reqguard g;
    guard(&c, &g, "10.1.2.3:8080", "", "");
    assert_true(reqguard_host_ok(&g, "10.1.2.3:8080"));
    assert_false(reqguard_host_ok(&g, "localhost")); /* not a loopback listen */
    assert_false(reqguard_host_ok(&g, "127.0.0.1"));
    assert_false(reqguard_host_ok(&g, "10.1.2.4"));
    guard(&c, &g, "0.0.0.0:8080", "", "");
    assert_true(reqguard_host_ok(&g, "192.0.2.7"));
    assert_true(reqguard_host_ok(&g, "[2001:db8::1]:8080"));
    assert_false(reqguard_host_ok(&g, "evil.example"));
    guard(&c, &g, "[::]:8080", "*", "");
    assert_true(reqguard_host_ok(&g, "anything.example"));
}

static void origin(void **st)
{
    (void)st;
    struct config c;
    struct reqguard g;
    guard(&c, &g, "127.0.0.1:8080", "", "https://dash.example:8443");
    assert_true(reqguard_origin_ok(&g, NULL, "127.0.0.1:8080"));
    assert_true(reqguard_origin_ok(&g, "http://127.0.0.1:8080", "127.0.0.1:8080"));
    assert_true(reqguard_origin_ok(&g, "http://LOCALHOST:8080", "localhost:8080"));
    assert_true(reqguard_origin_ok(&g, "https://dash.example:8443", "127.0.0.1:8080"));
    assert_false(reqguard_origin_ok(&g, "http://127.0.0.1:1", "127.0.0.1:8080"));
    assert_false(reqguard_origin_ok(&g, "http://evil.example", "127.0.0.1:8080"));
    assert_false(reqguard_origin_ok(&g, "null", "127.0.0.1:8080"));
    assert_false(reqguard_origin_ok(&g, "http://127.0.0.1:8080", NULL));
    assert_false(reqguard_origin_ok(&g, "https://dash.example", "127.0.0.1:8080"));
}

static void content_type(void **st)
{
    (void)st;
    assert_true(reqguard_json("application/json"));
    assert_true(reqguard_json("Application/JSON; charset=utf-8"));
    assert_true(reqguard_json(" application/json ;charset=utf-8"));
    assert_false(reqguard_json(NULL));
    assert_false(reqguard_json("text/plain"));
    assert_false(reqguard_json("application/jsonx"));
    assert_false(reqguard_json("application/x-www-form-urlencoded"));
    assert_false(reqguard_json("multipart/form-data; boundary=x"));
}

/* The decision and its reply: status, code, and a message naming what. */
static void check(void **st)
{
    (void)st;
    struct config c;
    struct reqguard g;
    struct api_reply r;
    guard(&c, &g, "127.0.0.1:8080", "", "");
    struct reqguard_req q = {.method = "POST", .url = "/api/v1/reports", .host = "127.0.0.1:8080",
                             .content_type = "text/plain", .has_body = true};
    memset(&r, 0, sizeof(r));
    assert_false(reqguard_check(&g, &q, &r));
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "text/plain"));
    free(r.body);
    q.content_type = NULL;
    memset(&r, 0, sizeof(r));
    assert_false(reqguard_check(&g, &q, &r));
    assert_int_equal(r.status, 415);
    assert_non_null(strstr(r.body, "no Content-Type"));
    free(r.body);
    q.has_body = false; /* a bodiless write (POST /rebalance) needs none */
    assert_true(reqguard_check(&g, &q, &r));
    q.content_type = "application/json";
    q.has_body = true;
    assert_true(reqguard_check(&g, &q, &r));
    q.origin = "http://evil.example";
    memset(&r, 0, sizeof(r));
    assert_false(reqguard_check(&g, &q, &r));
    assert_int_equal(r.status, 403);
    assert_non_null(strstr(r.body, "forbidden_origin"));
    free(r.body);
    q.host = "evil.example";
    memset(&r, 0, sizeof(r));
    assert_false(reqguard_check(&g, &q, &r));
    assert_int_equal(r.status, 421);
    assert_non_null(strstr(r.body, "http.allowed_hosts"));
    free(r.body);
    /* Reads and static files: only the Host counts. */
    struct reqguard_req get = {.method = "GET", .url = "/api/v1/status", .host = "localhost",
                               .origin = "http://evil.example", .content_type = "text/plain", .has_body = true};
    assert_true(reqguard_check(&g, &get, &r));
    struct reqguard_req stat = {.method = "POST", .url = "/index.html", .host = "localhost",
                                .content_type = "text/plain", .has_body = true};
    assert_true(reqguard_check(&g, &stat, &r)); /* then a 405 from the static server */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_loopback), cmocka_unit_test(host_specific_and_wildcard), cmocka_unit_test(origin),
        cmocka_unit_test(content_type), cmocka_unit_test(check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
