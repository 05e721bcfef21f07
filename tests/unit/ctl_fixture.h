/*
 * ctl_fixture: shared by the controller's unit suites (test_ingest,
 * test_state, test_rebalance, test_api_flows, test_bgp_logic): a 2-leaf x 4-spine fabric
 * with 2 hosts per leaf (fx_topo_hosts: any number; fx_topo_spec: any
 * leaf/spine spec), leaf uplinks carrying interface names and /31
 * addresses like the emulated fabric writes them (so that plans can be
 * built), a helper that posts a report through the same parse + apply path
 * as the daemon, one that GETs a view through the same handler, and one
 * that looks for an event.
 * Header-only (static functions): the test build links each suite alone.
 */
#ifndef TF_CTL_FIXTURE_H
#define TF_CTL_FIXTURE_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/api.h"
#include "controller/events.h"
#include "controller/ingest.h"
#include "controller/rebalance.h"
#include "controller/state.h"
#include "policy/topo.h"

/* Uplink of leaf Lx to spine Sy is "swpy" at the leaf and "swpx" at the
 * spine; host links have no names (so hosts and leaves use far-end names). */
static inline struct topo *fx_topo_spec(const char *spec)
{
    struct topo *t;
    char err[256];
    assert_int_equal(topo_load(spec, &t, err, sizeof(err)), 0);
    for (uint32_t k = 0; k < t->nlinks; k++) {
        struct topo_link *l = &t->links[k];
        if (t->nodes[l->lo].tier != TOPO_LEAF)
            continue;
        snprintf(l->lo_if, sizeof(l->lo_if), "swp%s", t->nodes[l->hi].name + 1);
        snprintf(l->hi_if, sizeof(l->hi_if), "swp%s", t->nodes[l->lo].name + 1);
        snprintf(l->lo_ip, sizeof(l->lo_ip), "100.64.%u.0", k);
        snprintf(l->hi_ip, sizeof(l->hi_ip), "100.64.%u.1", k);
    }
    return t;
}

static inline struct topo *fx_topo_hosts(int hosts)
{
    char spec[96];
    snprintf(spec, sizeof(spec), "leafspine:leaves=2,spines=4,hosts=%d,gbps=100", hosts);
    return fx_topo_spec(spec);
}

static inline struct topo *fx_topo(void) { return fx_topo_hosts(2); }

static inline uint32_t fx_node(const struct topo *t, const char *name)
{
    uint32_t n = topo_node_by_name(t, name);
    assert_int_not_equal(n, TOPO_NONE);
    return n;
}

static inline int fx_post(struct state *s, const char *json, double now, struct ingest_result *res)
{
    struct ingest_batch *b = test_malloc(sizeof(*b));
    struct ingest_error e;
    struct ingest_result dummy;
    int rc = ingest_parse(json, strlen(json), 1000, b, &e);
    if (rc == 0)
        rc = ingest_apply(s, b, now, NULL, res ? res : &dummy, &e);
    ingest_batch_free(b);
    test_free(b);
    return rc;
}

/* A query as {key, value, key, value, ..., NULL} (api_req.arg). */
static inline const char *fx_arg(void *ctx, const char *key)
{
    const char *const *kv = ctx;
    for (; kv && kv[0]; kv += 2)
        if (strcmp(kv[0], key) == 0)
            return kv[1];
    return NULL;
}

/* GET path?args on state s through api_handle: the status, the body parsed
 * into *out (every reply is a JSON object, errors too) and, when cacheable
 * is not NULL, whether httpd may serve the reply again while the state is
 * unchanged. */
static inline unsigned fx_get(struct state *s, const char *path, const char **args, json_t **out, bool *cacheable)
{
    struct api a;
    api_init(&a);
    a.st = s;
    struct api_req q = {.method = "GET", .path = path, .arg = fx_arg, .argctx = args};
    struct api_reply r;
    api_handle(&a, &q, &r);
    json_error_t je;
    *out = json_loadb(r.body ? r.body : "", r.len, 0, &je);
    assert_non_null(*out);
    free(r.body);
    api_destroy(&a);
    if (cacheable)
        *cacheable = r.cacheable;
    return r.status;
}

/* RoCE flow key src -> dst, UDP sport, dport 4791. */
static inline struct state_flow_key fx_key(const char *src, const char *dst, uint16_t sport)
{
    struct state_flow_key k = {.af = 4, .proto = 17, .sport = sport, .dport = 4791};
    int af;
    assert_int_equal(tf_addr_parse(src, &af, k.src), 0);
    assert_int_equal(tf_addr_parse(dst, &af, k.dst), 0);
    return k;
}

/* The spine a flow's path crosses ("" when it has no path). */
static inline const char *fx_spine(struct state *s, const struct state_flow *f)
{
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS);
    for (int i = 0; i < n; i++)
        if (s->topo->nodes[topo_dir_to(s->topo, dirs[i])].tier == TOPO_SPINE)
            return s->topo->nodes[topo_dir_to(s->topo, dirs[i])].name;
    return "";
}

/* Whether ev holds an event of kind whose message contains text. */
static inline bool fx_has_event(struct events *ev, const char *kind, const char *text)
{
    json_t *all = events_json(ev, 0, 1024), *e;
    size_t i;
    bool found = false;
    json_array_foreach(json_object_get(all, "events"), i, e)
        found |= !strcmp(json_string_value(json_object_get(e, "kind")), kind) &&
                 strstr(json_string_value(json_object_get(e, "message")), text) != NULL;
    json_decref(all);
    return found;
}

/* The reason a dry round of rb lists direction FROM -> TO under, copied
 * into buf (NULL: not listed). */
static inline const char *fx_congested_reason(struct rebalance *rb, const char *from, const char *to, double now,
                                              char *buf, size_t len)
{
    json_t *out = NULL, *c;
    size_t i;
    assert_int_equal(rebalance_run(rb, now, true, &out), 0);
    const char *why = NULL;
    json_array_foreach(json_object_get(out, "congested"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "from")), from) &&
            !strcmp(json_string_value(json_object_get(c, "to")), to))
            why = tf_strlcpy(buf, json_string_value(json_object_get(c, "reason")), len) < len ? buf : NULL;
    json_decref(out);
    return why;
}

#endif
