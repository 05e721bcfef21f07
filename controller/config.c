/*
 * config: see config.h. One table (config_keys) holds every key's type,
 * place, default and bounds, its command-line flag with the flag's help, and
 * whether a SIGHUP reload may change it; defaults are applied through the
 * same setter as file and command-line values so that a default can never
 * violate a bound, and the flags, --help and the reload rule all read the
 * same rows (redis' config.c: one table, MODIFIABLE_CONFIG or not).
 */
#include "controller/config.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/owner.h"
#include "controller/state.h"

enum ck_type { CK_STR, CK_LONG, CK_DOUBLE, CK_BOOL, CK_ENUM };

struct config_key {
    const char *name;
    enum ck_type type;
    size_t off, size;      /* field offset; buffer size for strings */
    const char *def;
    double min, max;       /* numbers: inclusive bounds; strings: max length */
    const char *choices;   /* CK_ENUM: "a|b|c" */
    unsigned fl;           /* CK_RELOAD: a SIGHUP reload may change it */
    /* Its command-line flag (NULL: none, --set only), the flag's argument as
     * --help names it (NULL: a switch, which sets "true") and its help. */
    const char *opt, *arg, *help;
};

/* The value a reload applies: it is read where it is used, on the main
 * thread or under the state's lock (config.h). */
#define CK_RELOAD 1u

#define F(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)
static const struct config_key config_keys[] = {
    {"listen", CK_STR, F(listen), "127.0.0.1:8080", 0, 0, NULL, 0,
     "listen", "ADDR:PORT", "the API, /metrics and the dashboard"},
    {"token_file", CK_STR, F(token_file), "", 0, 0, NULL, 0, "token-file", "F", "bearer token for mutating calls"},
    {"topology", CK_STR, F(topology), "", 0, 0, NULL, CK_RELOAD,
     "topology", "FILE|GENERATOR", "the fabric (required)"},
    {"policy", CK_STR, F(policy), "", 0, 0, NULL, CK_RELOAD, "policy", "FILE", "traffic classes"},
    {"backend", CK_ENUM, F(backend), "none", 0, 0, "netlink|plan|bgp|none", 0,
     "backend", "netlink|plan|bgp|none", "how plans reach the switches"},
    {"backend_options.plan_dir", CK_STR, F(plan_dir), "/var/lib/tierflow/plan", 0, 0, NULL, 0,
     "plan-dir", "DIR", "output of the plan backend"},
    /* bgp (bgp_backend.h): the speaker's folder, its AS and address on the
     * management network (the switches peer with it), its hold time (how
     * long the switches keep its routes after it dies) and its program. */
    {"backend_options.bgp_dir", CK_STR, F(bgp_dir), "/var/lib/tierflow/bgp", 0, 0, NULL},
    {"backend_options.bgp_local_as", CK_LONG, F(bgp_local_as), "64999", 1, 4294967295.0, NULL},
    {"backend_options.bgp_local_address", CK_STR, F(bgp_local_address), "", 0, 0, NULL},
    {"backend_options.bgp_hold_time", CK_LONG, F(bgp_hold_time), "9", 3, 65535, NULL},
    {"backend_options.exabgp", CK_STR, F(exabgp), "exabgp", 0, 0, NULL},
    /* Defaults NULL: taken from backend_cfg_default() (backend_defaults), so
     * that the daemon and the backend cannot disagree; bounds are the
     * backend's (cfg_check in backend.c): priorities below the main table's
     * 32766, protocols above the kernel's reserved 0..4, tables clear of the
     * kernel's 0..255 and with room for OWNER_TABLE_SPAN of them. */
    {"backend_options.rule_prio_min", CK_LONG, F(rule_prio_min), NULL, 1, 32765, NULL},
    {"backend_options.rule_prio_max", CK_LONG, F(rule_prio_max), NULL, 1, 32765, NULL},
    {"backend_options.route_proto", CK_LONG, F(route_proto), NULL, 5, 255, NULL},
    {"backend_options.table_base", CK_LONG, F(table_base), NULL, 256,
     (double)(UINT32_MAX - OWNER_TABLE_SPAN), NULL},
    {"web_dir", CK_STR, F(web_dir), "", 0, 0, NULL, 0, "web-dir", "DIR", "dashboard files"},
    {"log_level", CK_ENUM, F(log_level), "info", 0, 0, "error|warning|notice|info|debug", 0,
     "log-level", "LEVEL", "error|warning|notice|info|debug"},
    {"syslog", CK_BOOL, F(syslog), "false", 0, 0, NULL, 0, "syslog", NULL, "log to syslog instead of stderr"},
    {"withdraw_on_exit", CK_BOOL, F(withdraw_on_exit), "false", 0, 0, NULL, 0,
     "withdraw-on-exit", NULL, "remove installed routes on SIGTERM"},
    {"tls_cert", CK_STR, F(tls_cert), "", 0, 0, NULL, 0, "tls-cert", "F", "serve HTTPS with this certificate"},
    {"tls_key", CK_STR, F(tls_key), "", 0, 0, NULL, 0, "tls-key", "F", "its key (with --tls-cert)"},
    {"interval", CK_DOUBLE, F(interval), "1", 0.05, 3600, NULL, 0, "interval", "SEC", "rebalance period"},
    {"thresholds.util", CK_DOUBLE, F(util), "0.8", 0.01, 10, NULL, CK_RELOAD},
    {"thresholds.ce_frac", CK_DOUBLE, F(ce_frac), "0.05", 0, 1, NULL, CK_RELOAD},
    {"thresholds.ramp_util", CK_DOUBLE, F(ramp_util), "0.5", 0, 10, NULL, CK_RELOAD},
    {"thresholds.queue_delay", CK_DOUBLE, F(queue_delay), "0", 0, 10, NULL, CK_RELOAD},
    {"thresholds.hysteresis", CK_DOUBLE, F(hysteresis), "0.05", 0, 0.99, NULL, CK_RELOAD}, /* assign: margin < 1 */
    {"thresholds.min_move_interval", CK_DOUBLE, F(min_move_interval), "10", 0, 86400, NULL, CK_RELOAD},
    {"thresholds.max_moves", CK_LONG, F(max_moves), "16", 0, 100000, NULL, CK_RELOAD},
    {"thresholds.stale_intervals", CK_DOUBLE, F(stale_intervals), "3", 1, 1000, NULL, CK_RELOAD},
    {"thresholds.settle_intervals", CK_DOUBLE, F(settle_intervals), "2", 0, 1000, NULL, CK_RELOAD},
    {"thresholds.link_holddown", CK_DOUBLE, F(link_holddown), "3", 0, 3600, NULL, CK_RELOAD},
    {"thresholds.pin_grace", CK_DOUBLE, F(pin_grace), "120", 0, 86400, NULL, CK_RELOAD},
    {"thresholds.react_window", CK_DOUBLE, F(react_window), "0.1", 0, 10, NULL, CK_RELOAD},
    {"thresholds.warmup", CK_BOOL, F(warmup), "true", 0, 0, NULL, CK_RELOAD},
    {"thresholds.move_gain", CK_DOUBLE, F(move_gain), "0.1", 0, 10, NULL, CK_RELOAD},
    {"thresholds.backoff_max", CK_DOUBLE, F(backoff_max), "300", 0, 86400, NULL, CK_RELOAD},
    {"thresholds.harm_intervals", CK_DOUBLE, F(harm_intervals), "3", 1, 1000, NULL, CK_RELOAD},
    {"thresholds.harm_margin", CK_DOUBLE, F(harm_margin), "0.05", 0, 1, NULL, CK_RELOAD},
    {"thresholds.drain", CK_BOOL, F(drain), "false", 0, 0, NULL, CK_RELOAD},
    {"thresholds.gray_loss", CK_DOUBLE, F(gray_loss), "0.005", 0.00001, 1, NULL, CK_RELOAD},
    {"thresholds.gray_min_loss", CK_LONG, F(gray_min_loss), "3", 1, 1000000, NULL, CK_RELOAD},
    {"thresholds.gray_min_flows", CK_LONG, F(gray_min_flows), "2", 1, 1000, NULL, CK_RELOAD},
    {"thresholds.gray_clean_share", CK_DOUBLE, F(gray_clean_share), "0.34", 0, 1, NULL, CK_RELOAD},
    {"thresholds.gray_errors", CK_LONG, F(gray_errors), "10", 0, 1000000000, NULL, CK_RELOAD},
    {"thresholds.gray_k", CK_LONG, F(gray_k), "2", 1, 32, NULL, CK_RELOAD},
    {"thresholds.gray_n", CK_LONG, F(gray_n), "3", 1, 32, NULL, CK_RELOAD},
    {"thresholds.gray_holddown", CK_DOUBLE, F(gray_holddown), "30", 0, 86400, NULL, CK_RELOAD},
    {"thresholds.flap_count", CK_LONG, F(flap_count), "4", 0, 1000, NULL, CK_RELOAD},
    {"thresholds.flap_window", CK_DOUBLE, F(flap_window), "10", 0.1, 3600, NULL, CK_RELOAD},
    {"ingest.timestamps", CK_ENUM, F(ingest_timestamps), "check", 0, 0, "check|ignore"},
    {"ingest.clock_skew", CK_DOUBLE, F(clock_skew), "5", 0, 3600, NULL},
    {"limits.max_connections", CK_LONG, F(max_connections), "1024", 1, 65536, NULL},
    {"limits.connection_timeout", CK_LONG, F(connection_timeout), "10", 1, 3600, NULL},
    {"limits.max_body", CK_LONG, F(max_body), "8388608", 1024, 268435456, NULL},
    {"limits.max_flows_per_report", CK_LONG, F(max_flows_per_report), "100000", 1, 1000000, NULL},
    {"limits.max_flows", CK_LONG, F(max_flows), "1000000", 16, STATE_MAX_FLOWS, NULL},
    {"limits.rate_limit", CK_LONG, F(rate_limit), "0", 0, 10000000, NULL},
    {"limits.threads", CK_LONG, F(threads), "4", 1, 64, NULL},
    {"limits.max_connections_per_addr", CK_LONG, F(max_connections_per_addr), "32", 1, 65536, NULL},
    {"limits.header_timeout", CK_DOUBLE, F(header_timeout), "10", 0.1, 3600, NULL},
    {"limits.body_timeout", CK_DOUBLE, F(body_timeout), "30", 0.1, 3600, NULL},
    {"limits.max_body_inflight", CK_LONG, F(max_body_inflight), "67108864", 1024, 17179869184.0, NULL},
    {"http.allowed_hosts", CK_STR, F(allowed_hosts), "", 0, 0, NULL},
    {"http.allowed_origins", CK_STR, F(allowed_origins), "", 0, 0, NULL},
    {"ha.etcd_endpoints", CK_STR, F(ha_endpoints), "", 0, 0, NULL},
    {"ha.election", CK_STR, F(ha_election), "tierflow", 0, 0, NULL},
    {"ha.lease_ttl", CK_LONG, F(ha_lease_ttl), "5", 1, 300, NULL},
    {"ha.advertise_url", CK_STR, F(ha_advertise_url), "", 0, 0, NULL},
    {"ha.tls_ca", CK_STR, F(ha_tls_ca), "", 0, 0, NULL},
    {"ha.tls_cert", CK_STR, F(ha_tls_cert), "", 0, 0, NULL},
    {"ha.tls_key", CK_STR, F(ha_tls_key), "", 0, 0, NULL},
    {"ha.username", CK_STR, F(ha_username), "", 0, 0, NULL},
    {"ha.password_file", CK_STR, F(ha_password_file), "", 0, 0, NULL},
    {"metrics.host_links", CK_ENUM, F(metrics_host_links), "off", 0, 0, "off|aggregate|all"},
    {"metrics.max_link_series", CK_LONG, F(metrics_max_link_series), "4096", 0, 1000000, NULL},
};
#undef F

static const struct config_key *config_find(const char *name)
{
    for (size_t i = 0; i < TF_ARRAY_SIZE(config_keys); i++)
        if (strcmp(config_keys[i].name, name) == 0)
            return &config_keys[i];
    return NULL;
}

/* The key, or NULL with the error every setter gives for an unknown one. */
static const struct config_key *config_key_or_err(const char *name, char *err, size_t errlen)
{
    const struct config_key *k = config_find(name);
    if (!k)
        snprintf(err, errlen, "unknown config key '%.64s'", name);
    return k;
}

static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return 1;
        p += len + (bar ? 1 : 0);
    }
    return 0;
}

/* All setters funnel through here: value already typed. */
static int set_string(struct config *c, const struct config_key *k, const char *v,
                      char *err, size_t errlen)
{
    if (k->type == CK_ENUM && !choice_ok(k->choices, v)) {
        snprintf(err, errlen, "%s: '%.64s' is not one of %s", k->name, v, k->choices);
        return -EINVAL;
    }
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20) {
            snprintf(err, errlen, "%s: control character in value", k->name);
            return -EINVAL;
        }
    if (strlen(v) >= k->size) {
        snprintf(err, errlen, "%s: value longer than %zu bytes", k->name, k->size - 1);
        return -ERANGE;
    }
    tf_strlcpy((char *)c + k->off, v, k->size);
    return 0;
}

static int set_number(struct config *c, const struct config_key *k, double v,
                      char *err, size_t errlen)
{
    if (!isfinite(v) || v < k->min || v > k->max) {
        snprintf(err, errlen, "%s: %g is out of range [%g, %g]", k->name, v, k->min, k->max);
        return -ERANGE;
    }
    if (k->type == CK_LONG) {
        if (v != floor(v)) {
            snprintf(err, errlen, "%s: %g is not an integer", k->name, v);
            return -EINVAL;
        }
        *(long *)((char *)c + k->off) = (long)v;
    } else {
        *(double *)((char *)c + k->off) = v;
    }
    return 0;
}

int config_set_str(struct config *c, const char *key, const char *value, char *err, size_t errlen)
{
    const struct config_key *k = config_key_or_err(key, err, errlen);
    if (!k)
        return -ENOENT;
    switch (k->type) {
    case CK_STR:
    case CK_ENUM:
        return set_string(c, k, value, err, errlen);
    case CK_BOOL:
        if (strcmp(value, "true") && strcmp(value, "false")) {
            snprintf(err, errlen, "%s: '%.64s' is not true or false", k->name, value);
            return -EINVAL;
        }
        *(bool *)((char *)c + k->off) = value[0] == 't';
        return 0;
    default: {
        double v;
        int r = tf_parse_double(value, -INFINITY, INFINITY, &v);
        if (r < 0) {
            snprintf(err, errlen, "%s: '%.64s' is not a number", k->name, value);
            return -EINVAL;
        }
        return set_number(c, k, v, err, errlen);
    }
    }
}

bool config_flag(size_t i, struct config_flag *out)
{
    for (size_t k = 0, n = 0; k < TF_ARRAY_SIZE(config_keys); k++)
        if (config_keys[k].opt && n++ == i) {
            *out = (struct config_flag){config_keys[k].opt, config_keys[k].name, config_keys[k].arg};
            return true;
        }
    return false;
}

void config_usage_line(FILE *f, const char *flag, const char *arg, const char *help)
{
    char left[96];
    snprintf(left, sizeof(left), "--%s%s%s", flag, arg ? " " : "", arg ? arg : "");
    if (!help || !*help)
        fprintf(f, "  %s\n", left);
    else if (strlen(left) < 25)
        fprintf(f, "  %-25s%s\n", left, help);
    else
        fprintf(f, "  %s\n  %-25s%s\n", left, "", help);
}

/* Whether every key of name's section ("thresholds" of "thresholds.util")
 * may be reloaded: --help then names the section once. */
static bool section_reloads(const char *name, size_t len)
{
    for (size_t k = 0; k < TF_ARRAY_SIZE(config_keys); k++)
        if (!strncmp(config_keys[k].name, name, len) && config_keys[k].name[len] == '.' &&
            !(config_keys[k].fl & CK_RELOAD))
            return false;
    return true;
}

void config_usage(FILE *f)
{
    for (size_t k = 0; k < TF_ARRAY_SIZE(config_keys); k++) {
        const struct config_key *c = &config_keys[k];
        if (!c->opt)
            continue;
        char help[192];
        bool def = c->def && c->def[0] && c->type != CK_BOOL;
        snprintf(help, sizeof(help), "%s%s%s%s", c->help, def ? " (default " : "", def ? c->def : "", def ? ")" : "");
        config_usage_line(f, c->opt, c->arg, help);
    }
}

void config_usage_reload(FILE *f)
{
    fprintf(f, "SIGHUP re-reads the configuration and applies");
    const char *sep = " ", *last = "";
    size_t lastlen = 0;
    for (size_t k = 0; k < TF_ARRAY_SIZE(config_keys); k++) {
        const char *name = config_keys[k].name, *dot = strchr(name, '.');
        if (!(config_keys[k].fl & CK_RELOAD))
            continue;
        size_t len = dot ? (size_t)(dot - name) : 0;
        if (dot && section_reloads(name, len)) {
            if (len == lastlen && !strncmp(name, last, len))
                continue;   /* the section is named already */
            fprintf(f, "%s%.*s.*", sep, (int)len, name);
            last = name;
            lastlen = len;
        } else {
            fprintf(f, "%s%s", sep, name);
        }
        sep = ", ";
    }
    fprintf(f, ";\nany other key it finds changed needs a restart\n");
}

bool config_reloadable(const char *key)
{
    const struct config_key *k = config_find(key);
    return k && (k->fl & CK_RELOAD);
}

/* A key's value as the reload's messages show it. */
static void value_str(const struct config_key *k, const void *p, char *buf, size_t len)
{
    switch (k->type) {
    case CK_STR:
    case CK_ENUM: snprintf(buf, len, "'%s'", (const char *)p); break;
    case CK_BOOL: snprintf(buf, len, "%s", *(const bool *)p ? "true" : "false"); break;
    case CK_LONG: snprintf(buf, len, "%ld", *(const long *)p); break;
    default: snprintf(buf, len, "%g", *(const double *)p); break;
    }
}

int config_reload(struct config *cur, const struct config *next, config_change_fn cb, void *arg)
{
    int n = 0;
    for (size_t i = 0; i < TF_ARRAY_SIZE(config_keys); i++) {
        const struct config_key *k = &config_keys[i];
        char *a = (char *)cur + k->off;
        const char *b = (const char *)next + k->off;
        if (k->type == CK_STR || k->type == CK_ENUM ? !strcmp(a, b) : !memcmp(a, b, k->size))
            continue;
        char from[CONFIG_STR_MAX + 8], to[CONFIG_STR_MAX + 8];
        value_str(k, a, from, sizeof(from));
        value_str(k, b, to, sizeof(to));
        bool apply = k->fl & CK_RELOAD;
        if (apply) {
            memcpy(a, b, k->size);
            n++;
        }
        if (cb)
            cb(arg, k->name, from, to, apply);
    }
    return n;
}

/* The default of a key whose table entry has none: the backend's. */
static void backend_default(const char *name, char *buf, size_t len)
{
    struct backend_cfg bc;
    backend_cfg_default(&bc);
    unsigned v = strcmp(name, "backend_options.rule_prio_min") == 0   ? bc.prio_min
                 : strcmp(name, "backend_options.rule_prio_max") == 0 ? bc.prio_max
                 : strcmp(name, "backend_options.route_proto") == 0   ? bc.rt_proto
                 : strcmp(name, "backend_options.table_base") == 0    ? bc.table_base
                                                                      : 0;
    snprintf(buf, len, "%u", v);
}

void config_defaults(struct config *c)
{
    char err[256], buf[32];
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < TF_ARRAY_SIZE(config_keys); i++) {
        const char *def = config_keys[i].def;
        if (!def) {
            backend_default(config_keys[i].name, buf, sizeof(buf));
            def = buf;
        }
        if (config_set_str(c, config_keys[i].name, def, err, sizeof(err)) < 0)
            abort(); /* a default outside its own bounds is a programming error */
    }
}

static int set_json(struct config *c, const char *name, json_t *v, char *err, size_t errlen)
{
    const struct config_key *k = config_key_or_err(name, err, errlen);
    if (!k)
        return -ENOENT;
    switch (k->type) {
    case CK_STR:
    case CK_ENUM:
        if (!json_is_string(v))
            break;
        return set_string(c, k, json_string_value(v), err, errlen);
    case CK_BOOL:
        if (!json_is_boolean(v))
            break;
        *(bool *)((char *)c + k->off) = json_is_true(v);
        return 0;
    case CK_LONG:
        if (!json_is_integer(v))
            break;
        return set_number(c, k, (double)json_integer_value(v), err, errlen);
    case CK_DOUBLE:
        if (!json_is_number(v))
            break;
        return set_number(c, k, json_number_value(v), err, errlen);
    }
    static const char *const tn[] = {"a string", "an integer", "a number", "true or false", "a string"};
    snprintf(err, errlen, "%s: must be %s", k->name, tn[k->type]);
    return -EINVAL;
}

static int load_object(struct config *c, json_t *obj, const char *prefix, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        char name[128];
        if ((size_t)snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", key) >= sizeof(name)) {
            snprintf(err, errlen, "config key '%.64s...' too long", name);
            return -EINVAL;
        }
        int r;
        /* A section is an object whose name prefixes some key. */
        if (json_is_object(v) && !*prefix)
            r = load_object(c, v, name, err, errlen);
        else
            r = set_json(c, name, v, err, errlen);
        if (r < 0)
            return r;
    }
    return 0;
}

int config_load_text(struct config *c, const char *text, size_t len, const char *origin,
                     char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "%s:%d:%d: %s", origin, je.line, je.column, je.text);
        return -EINVAL;
    }
    int r = 0;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "%s: top level must be an object", origin);
        r = -EINVAL;
    } else {
        char sub[224];
        struct config tmp = *c; /* all or nothing */
        r = load_object(&tmp, root, "", sub, sizeof(sub));
        if (r < 0)
            snprintf(err, errlen, "%s: %s", origin, sub);
        else
            *c = tmp;
    }
    json_decref(root);
    return r;
}

int config_load_file(struct config *c, const char *path, char *err, size_t errlen)
{
    char *text;
    size_t len;
    int r = tf_read_file(path, 1 << 20, &text, &len);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(-r));
        return r;
    }
    r = config_load_text(c, text, len, path, err, errlen);
    free(text);
    return r;
}

int config_listen_addr(const struct config *c, char *host, size_t hostlen, unsigned *port)
{
    const char *s = c->listen, *colon;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        s++;
        hl = (size_t)(close - s);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -EINVAL;
        hl = (size_t)(colon - s);
    }
    if (hl == 0 || hl >= hostlen)
        return -EINVAL;
    memcpy(host, s, hl);
    host[hl] = '\0';
    uint64_t p;
    if (tf_parse_u64(colon + 1, 0, 65535, &p) < 0)
        return -EINVAL;
    int af;
    uint8_t a[16];
    if (tf_addr_parse(host, &af, a) < 0)
        return -EINVAL;
    *port = (unsigned)p;
    return 0;
}

int config_list_next(const char **p, char *item, size_t len)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (!*s)
        return 0;
    const char *comma = strchr(s, ',');
    const char *end = comma ? comma : s + strlen(s);
    *p = comma ? comma + 1 : end;
    while (end > s && end[-1] == ' ')
        end--;
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= len)
        return -EINVAL;
    memcpy(item, s, n);
    item[n] = '\0';
    return 1;
}

/* Every item of a list key well formed: a Host name (or "*"), or an origin
 * scheme://host[:port] with nothing after. */
static int check_list(const char *name, const char *v, bool origins, char *err, size_t errlen)
{
    char item[256];
    int r;
    while ((r = config_list_next(&v, item, sizeof(item))) > 0) {
        const char *h = item;
        if (origins) {
            h = strncmp(item, "http://", 7) == 0 ? item + 7 : strncmp(item, "https://", 8) == 0 ? item + 8 : NULL;
            if (!h || !*h || strchr(h, '/'))
                return tf_fail(err, errlen, -EINVAL, "%s: '%s' is not an origin (http[s]://host[:port])", name,
                               item);
        }
        for (const char *q = h; *q; q++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:[]*", *q))
                return tf_fail(err, errlen, -EINVAL, "%s: '%s': character '%c' not allowed in a host", name,
                               item, *q);
    }
    if (r < 0)
        return tf_fail(err, errlen, -EINVAL, "%s: an empty item, or one longer than %zu characters", name,
                       sizeof(item) - 1);
    return 0;
}

/* The token is a secret: tf_secret_file_check's rule. */
/* The ha.* keys that only make sense together (docs/ha.md). */
static int check_ha(const struct config *c, char *err, size_t errlen)
{
    if (!c->ha_endpoints[0])
        return 0;
    if (strncmp(c->ha_advertise_url, "http://", 7) && strncmp(c->ha_advertise_url, "https://", 8))
        return tf_fail(err, errlen, -EINVAL, "ha.advertise_url: '%s': required with ha.etcd_endpoints, an http:// or "
                       "https:// URL under which probes and clients reach this controller", c->ha_advertise_url);
    if (!c->ha_election[0] || strpbrk(c->ha_election, "/ \t"))
        return tf_fail(err, errlen, -EINVAL, "ha.election: '%s': expected a non-empty name without '/' or spaces",
                       c->ha_election);
    if (!c->ha_tls_cert[0] != !c->ha_tls_key[0])
        return tf_fail(err, errlen, -EINVAL, "ha.tls_cert and ha.tls_key must be given together");
    if (!c->ha_username[0] != !c->ha_password_file[0])
        return tf_fail(err, errlen, -EINVAL, "ha.username and ha.password_file must be given together");
    if (c->ha_password_file[0])
        return tf_secret_file_check("ha.password_file", c->ha_password_file, err, errlen);
    return 0;
}

static int check_token_file(const char *path, char *err, size_t errlen)
{
    return tf_secret_file_check("token_file", path, err, errlen);
}

int config_validate(const struct config *c, char *err, size_t errlen)
{
    char host[64];
    unsigned port;
    if (!c->topology[0]) {
        snprintf(err, errlen, "topology: required (config key or --topology)");
        return -EINVAL;
    }
    if (config_listen_addr(c, host, sizeof(host), &port) < 0) {
        snprintf(err, errlen, "listen: '%s' is not ADDR:PORT with a numeric address", c->listen);
        return -EINVAL;
    }
    if (c->rule_prio_min > c->rule_prio_max) {
        snprintf(err, errlen, "backend_options.rule_prio_min (%ld) > rule_prio_max (%ld)",
                 c->rule_prio_min, c->rule_prio_max);
        return -EINVAL;
    }
    if (c->rule_prio_max - c->rule_prio_min + 1 < OWNER_PRIO_SPAN) {
        snprintf(err, errlen, "backend_options.rule_prio_min..rule_prio_max (%ld..%ld): the backend needs at "
                 "least %d priorities", c->rule_prio_min, c->rule_prio_max, OWNER_PRIO_SPAN);
        return -EINVAL;
    }
    if (!c->tls_cert[0] != !c->tls_key[0]) {
        snprintf(err, errlen, "tls_cert and tls_key must be given together");
        return -EINVAL;
    }
    if (c->gray_k > c->gray_n) {
        snprintf(err, errlen, "thresholds.gray_k (%ld) > thresholds.gray_n (%ld): never suspect", c->gray_k,
                 c->gray_n);
        return -EINVAL;
    }
    if (strcmp(c->backend, "plan") == 0 && !c->plan_dir[0]) {
        snprintf(err, errlen, "backend_options.plan_dir: required by backend plan");
        return -EINVAL;
    }
    if (strcmp(c->backend, "bgp") == 0 && (!c->bgp_dir[0] || !c->bgp_local_address[0]))
        return tf_fail(err, errlen, -EINVAL, "backend_options.%s: required by backend bgp",
                       c->bgp_dir[0] ? "bgp_local_address (the speaker's address the switches peer with)" : "bgp_dir");
    if (c->max_body_inflight < c->max_body)
        return tf_fail(err, errlen, -EINVAL, "limits.max_body_inflight (%ld) < limits.max_body (%ld): no body "
                       "of the largest size could ever be taken", c->max_body_inflight, c->max_body);
    if (check_list("http.allowed_hosts", c->allowed_hosts, false, err, errlen) < 0 ||
        check_list("http.allowed_origins", c->allowed_origins, true, err, errlen) < 0)
        return -EINVAL;
    if (check_ha(c, err, errlen) < 0)
        return -EINVAL;
    if (c->token_file[0])
        return check_token_file(c->token_file, err, errlen);
    return 0;
}

char *config_dump_json(const struct config *c)
{
    json_t *o = json_object();
    for (size_t i = 0; i < TF_ARRAY_SIZE(config_keys); i++) {
        const struct config_key *k = &config_keys[i];
        const char *p = (const char *)c + k->off;
        json_t *v;
        switch (k->type) {
        case CK_STR:
        case CK_ENUM: v = json_string(p); break;
        case CK_BOOL: v = json_boolean(*(const bool *)p); break;
        case CK_LONG: v = json_integer(*(const long *)p); break;
        default: v = json_real(*(const double *)p); break;
        }
        json_object_set_new(o, k->name, v);
    }
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

const char *config_congestion(const struct config *c, double util, double ce_frac)
{
    return util > c->util ? "util" : ce_frac > c->ce_frac ? "ce" : NULL;
}

bool config_congested(const struct config *c, double util, double ce_frac)
{
    return config_congestion(c, util, ce_frac) != NULL;
}
