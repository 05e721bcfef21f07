/* config: defaults, bounds, types, unknown keys, CLI override, the flags and
 * --help from the table, what a reload applies; ingest parse errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "controller/backend.h"
#include "controller/config.h"
#include "controller/ingest.h"

static void defaults(void **st)
{
    (void)st;
    struct config c;
    config_defaults(&c);
    assert_string_equal(c.listen, "127.0.0.1:8080");
    assert_true(c.util > 0.79 && c.util < 0.81);
    assert_int_equal(c.max_moves, 16);
}

/* One source of truth: the daemon's backend defaults are the backend's, and
 * values the backend would refuse are refused when the config is read. */
static void backend_defaults_agree(void **st)
{
    (void)st;
    struct config c;
    struct backend_cfg bc;
    char err[256];
    config_defaults(&c);
    backend_cfg_default(&bc);
    assert_int_equal(c.route_proto, bc.rt_proto);
    assert_int_equal(c.route_proto, OWNER_PROTO_DEFAULT);
    assert_int_equal(c.table_base, bc.table_base);
    assert_int_equal(c.rule_prio_min, bc.prio_min);
    assert_int_equal(c.rule_prio_max, bc.prio_max);
    assert_true(config_set_str(&c, "backend_options.table_base", "255", err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "table_base"));
    assert_int_equal(config_set_str(&c, "backend_options.table_base", "256", err, sizeof(err)), 0);
    assert_true(config_set_str(&c, "backend_options.route_proto", "4", err, sizeof(err)) < 0);
    assert_int_equal(config_set_str(&c, "backend_options.route_proto", "200", err, sizeof(err)), 0);
    config_set_str(&c, "topology", "leafspine:leaves=2", err, sizeof(err));
    assert_int_equal(config_validate(&c, err, sizeof(err)), 0);
    /* Fewer priorities than the plan layout needs. */
    config_set_str(&c, "backend_options.rule_prio_max", "20100", err, sizeof(err));
    assert_true(config_validate(&c, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "rule_prio"));
}

/* Backend bgp needs the speaker's address on the management network. */
static void bgp_keys(void **st)
{
    (void)st;
    struct config c;
    char err[256];
    config_defaults(&c);
    config_set_str(&c, "topology", "leafspine:leaves=2", err, sizeof(err));
    assert_int_equal(config_set_str(&c, "backend", "bgp", err, sizeof(err)), 0);
    assert_true(config_validate(&c, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "bgp_local_address"));
    assert_int_equal(config_set_str(&c, "backend_options.bgp_local_address", "169.254.1.1", err, sizeof(err)), 0);
    assert_int_equal(config_validate(&c, err, sizeof(err)), 0);
    assert_string_equal(c.bgp_dir, "/var/lib/tierflow/bgp");
    assert_int_equal(c.bgp_local_as, 64999);
    assert_true(config_set_str(&c, "backend_options.bgp_hold_time", "2", err, sizeof(err)) < 0);
    assert_true(config_set_str(&c, "backend_options.bgp_local_as", "4294967296", err, sizeof(err)) < 0);
    assert_int_equal(config_set_str(&c, "backend_options.bgp_local_as", "4294967295", err, sizeof(err)), 0);
}

static void file_keys(void **st)
{
    (void)st;
    struct config c;
    char err[256];
    config_defaults(&c);
    const char *ok = "{\"topology\":\"t.json\",\"thresholds\":{\"util\":0.9,\"max_moves\":3}}";
    assert_int_equal(config_load_text(&c, ok, strlen(ok), "f", err, sizeof(err)), 0);
    assert_int_equal(c.max_moves, 3);
    const char *bad[] = {"{\"nope\":1}", "{\"thresholds\":{\"util\":11}}", "{\"thresholds\":{\"util\":\"x\"}}",
                         "{\"limits\":{\"threads\":1.5}}", "{\"backend\":\"ospf\"}", "[1]", "{\"interval\":0.01}",
                         "{\"syslog\":1}", "{"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_true(config_load_text(&c, bad[i], strlen(bad[i]), "f", err, sizeof(err)) < 0);
        assert_int_equal(c.max_moves, 3); /* all or nothing */
    }
    assert_true(config_load_text(&c, "{\"nope\":1}", 10, "f", err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "nope"));
}

static void cli_override(void **st)
{
    (void)st;
    struct config c;
    char err[256];
    config_defaults(&c);
    assert_int_equal(config_set_str(&c, "limits.rate_limit", "100", err, sizeof(err)), 0);
    assert_int_equal(c.rate_limit, 100);
    assert_true(config_set_str(&c, "limits.rate_limit", "-1", err, sizeof(err)) < 0);
    assert_true(config_set_str(&c, "limits.rate_limit", "abc", err, sizeof(err)) < 0);
    assert_int_equal(c.rate_limit, 100);
    assert_true(config_validate(&c, err, sizeof(err)) < 0); /* no topology */
    config_set_str(&c, "topology", "leafspine:leaves=2", err, sizeof(err));
    assert_int_equal(config_validate(&c, err, sizeof(err)), 0);
    config_set_str(&c, "listen", "localhost:80", err, sizeof(err));
    assert_true(config_validate(&c, err, sizeof(err)) < 0);
}

static void ingest_errors(void **st)
{
    (void)st;
    struct ingest_batch *b = test_malloc(sizeof(*b));
    struct ingest_error e;
    /* The body's structure, or a report's own member: the whole body. */
    struct { const char *body; enum ingest_err kind; const char *field; } cases[] = {
        {"{\"probe\":", INGEST_BAD_JSON, NULL},
        {"[]", INGEST_BAD_FIELD, "body"},
        {"{\"probe\":5}", INGEST_BAD_FIELD, "probe"},
        {"{\"probe\":\"L1\",\"flows\":[{},{},{}]}", INGEST_TOO_MANY, "flows"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_true(ingest_parse(cases[i].body, strlen(cases[i].body), 2, b, &e) < 0);
        assert_int_equal(e.kind, cases[i].kind);
        if (cases[i].field)
            assert_non_null(strstr(e.msg, cases[i].field));
    }
    /* One entry out of bounds: that entry, named by its path. */
    const char *entries[][2] = {
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":-1}]}", "flows[0].bps"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1e300}]}", "flows[0].bps"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1,\"sport\":70000}]}", "flows[0].sport"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"x\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1}]}", "flows[0].src"},
        {"{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1,\"ce_frac\":2}]}", "flows[0].ce_frac"},
        {"{\"probe\":\"L1\",\"links\":[{\"if\":\"e\",\"oper\":\"sideways\"}]}", "links[0].oper"},
    };
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        assert_int_equal(ingest_parse(entries[i][0], strlen(entries[i][0]), 2, b, &e), 0);
        assert_int_equal(b->refused.n, 1);
        assert_string_equal(b->refused.e[0].path, entries[i][1]);
        ingest_batch_free(b);
    }
    const char *ok = "{\"reports\":[{\"probe\":\"L1\",\"flows\":[{\"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":17,\"if\":\"e\",\"bps\":1}]}]}";
    assert_int_equal(ingest_parse(ok, strlen(ok), 2, b, &e), 0);
    assert_int_equal(b->n, 1);
    assert_int_equal(b->r[0].nflows, 1);
    ingest_batch_free(b);
    test_free(b);
}

/* The flags are the table's: each sets a key that exists, the daemon's
 * historical flags are all there, and --help names each with its argument
 * and what a reload applies. */
static void flags_from_table(void **st)
{
    (void)st;
    struct config c;
    struct config_flag f;
    char err[256];
    const char *want[] = {"topology", "policy", "listen", "backend", "token-file", "interval", "plan-dir",
                          "web-dir", "log-level", "syslog", "withdraw-on-exit", "tls-cert", "tls-key"};
    bool seen[sizeof(want) / sizeof(want[0])] = {false};
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    assert_non_null(m);
    config_usage(m);
    config_usage_reload(m);
    fclose(m);
    config_defaults(&c);
    size_t i;
    for (i = 0; config_flag(i, &f); i++) {
        char line[128];
        snprintf(line, sizeof(line), "--%s%s%s", f.flag, f.arg ? " " : "", f.arg ? f.arg : "");
        assert_non_null(strstr(text, line));
        /* its key exists; a switch sets "true" */
        if (!f.arg)
            assert_int_equal(config_set_str(&c, f.key, "true", err, sizeof(err)), 0);
        else
            assert_int_not_equal(config_set_str(&c, f.key, "", err, sizeof(err)), -ENOENT);
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
            seen[k] |= !strcmp(want[k], f.flag);
    }
    assert_int_equal(i, sizeof(want) / sizeof(want[0]));
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
        assert_true(seen[k]);
    assert_non_null(strstr(text, "(default 127.0.0.1:8080)"));
    assert_non_null(strstr(text, "topology, policy, thresholds.*"));
    free(text);
}

struct heard {
    int n, restart;
    char last[160];
};

static void heard(void *arg, const char *key, const char *from, const char *to, bool applied)
{
    struct heard *h = arg;
    h->n++;
    h->restart += !applied;
    snprintf(h->last, sizeof(h->last), "%s %s %s %d", key, from, to, applied);
}

/* A reload applies topology, policy and thresholds.*, reports any other
 * changed key as needing a restart and keeps it, and says nothing of the
 * keys that did not change. */
static void reload_rule(void **st)
{
    (void)st;
    struct config cur, next;
    char err[256];
    struct heard h = {0};
    config_defaults(&cur);
    next = cur;
    assert_int_equal(config_reload(&cur, &next, heard, &h), 0);
    assert_int_equal(h.n, 0);
    assert_true(config_reloadable("thresholds.util") && config_reloadable("thresholds.drain") &&
                config_reloadable("topology") && config_reloadable("policy"));
    assert_false(config_reloadable("interval") || config_reloadable("listen") || config_reloadable("backend") ||
                 config_reloadable("limits.max_body") || config_reloadable("no.such.key"));
    assert_int_equal(config_set_str(&next, "thresholds.util", "0.5", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&next, "thresholds.max_moves", "3", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&next, "topology", "leafspine:leaves=3", err, sizeof(err)), 0);
    assert_int_equal(config_reload(&cur, &next, heard, &h), 3);
    assert_int_equal(h.n, 3);
    assert_int_equal(h.restart, 0);
    assert_true(cur.util > 0.49 && cur.util < 0.51);
    assert_int_equal(cur.max_moves, 3);
    assert_string_equal(cur.topology, "leafspine:leaves=3");
    h = (struct heard){0};
    assert_int_equal(config_set_str(&next, "interval", "2", err, sizeof(err)), 0);
    assert_int_equal(config_reload(&cur, &next, heard, &h), 0);
    assert_int_equal(h.n, 1);
    assert_int_equal(h.restart, 1);
    assert_string_equal(h.last, "interval 1 2 0");
    assert_true(cur.interval > 0.99 && cur.interval < 1.01);
    assert_int_equal(config_set_str(&next, "listen", "127.0.0.1:9", err, sizeof(err)), 0);
    assert_int_equal(config_reload(&cur, &next, NULL, NULL), 0);
    assert_string_equal(cur.listen, "127.0.0.1:8080");
}

/* A threshold of the ramp rule (docs/policy.md): its default, 0 turns it
 * off, a negative value is refused naming the key, and a reload applies it
 * like the other thresholds. off: offsetof(struct config, the field). */
static void ramp_threshold_key(const char *key, double def, size_t off)
{
    struct config cur, next;
    char err[256];
    config_defaults(&cur);
    double *v = (double *)((char *)&cur + off), *nv = (double *)((char *)&next + off);
    assert_true(*v > def * 0.99 && *v < def * 1.01);
    next = cur;
    assert_int_equal(config_set_str(&next, key, "0", err, sizeof(err)), 0);
    assert_true(*nv == 0);
    assert_int_not_equal(config_set_str(&next, key, "-0.1", err, sizeof(err)), 0);
    assert_non_null(strstr(err, key));
    assert_true(config_reloadable(key));
    assert_int_equal(config_reload(&cur, &next, NULL, NULL), 1);
    assert_true(*v == 0);
}

/* thresholds.ramp_util: 0.5. */
static void ramp_util_key(void **st)
{
    (void)st;
    ramp_threshold_key("thresholds.ramp_util", 0.5, offsetof(struct config, ramp_util));
}

/* thresholds.queue_delay: the standing queue (seconds of the link) that
 * counts as a queue for the ramp rule; off by default (docs/lab.md, "The
 * ramp rule and the qdisc backlog"), CoDel's 5 ms when on. */
static void queue_delay_key(void **st)
{
    (void)st;
    struct config c;
    char err[256];
    config_defaults(&c);
    assert_true(c.queue_delay == 0);
    assert_int_equal(config_set_str(&c, "thresholds.queue_delay", "0.005", err, sizeof(err)), 0);
    assert_true(c.queue_delay > 0.00499 && c.queue_delay < 0.00501);
    assert_int_not_equal(config_set_str(&c, "thresholds.queue_delay", "-0.1", err, sizeof(err)), 0);
    assert_non_null(strstr(err, "thresholds.queue_delay"));
    assert_true(config_reloadable("thresholds.queue_delay"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(defaults), cmocka_unit_test(backend_defaults_agree),
                                       cmocka_unit_test(bgp_keys), cmocka_unit_test(file_keys),
                                       cmocka_unit_test(cli_override), cmocka_unit_test(ingest_errors),
                                       cmocka_unit_test(flags_from_table), cmocka_unit_test(reload_rule),
                                       cmocka_unit_test(ramp_util_key), cmocka_unit_test(queue_delay_key)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
