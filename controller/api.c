/*
 * api: see api.h. One route table (routes[] below) carries each endpoint's
 * path pattern, methods, handler, whether a 200 may be cached and whether
 * its writes need the token; the Allow header, the 404/405/401/503 refusals
 * and the dispatch all read it. Views are built with jansson under the
 * state's read lock and serialised after it is released. The handlers live
 * here (status, routes, events, history, openapi.json, metrics, reports,
 * rebalance) and in api_links.c, api_flows.c and api_jobs.c
 * (api_internal.h).
 */
#include "controller/api.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "common/version.h"
#include "controller/api_internal.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/ingest.h"
#include "controller/jsonarena.h"
#include "controller/history.h"
#include "controller/leader.h"
#include "controller/metrics.h"
#include "controller/rebalance.h"
#include "controller/state.h"
#include "controller/summary.h"

#define API_ARENA_HINT (256u << 10) /* JSON bytes a large view (1000 flows) makes */

void api_init(struct api *a)
{
    memset(a, 0, sizeof(*a));
}

void api_destroy(struct api *a)
{
    free(a->openapi);
}

struct outbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static int out_append(const char *b, size_t n, void *arg)
{
    struct outbuf *o = arg;
    if (o->len + n + 1 > o->cap) {
        size_t nc = o->cap ? o->cap : 4096;
        while (nc < o->len + n + 1)
            nc *= 2;
        char *np = realloc(o->p, nc);
        if (!np) {
            o->oom = true;
            return -1;
        }
        o->p = np;
        o->cap = nc;
    }
    memcpy(o->p + o->len, b, n);
    o->len += n;
    o->p[o->len] = '\0';
    return 0;
}

/* The body is written straight into our own malloc'd buffer (not jansson's
 * allocator), so that views built inside a jsonarena scope can be replied. */
static void reply_json(struct api_reply *r, unsigned status, json_t *o)
{
    struct outbuf ob = {0};
    r->status = status;
    r->ctype = "application/json";
    if (!o || json_dump_callback(o, out_append, &ob, JSON_COMPACT | JSON_REAL_PRECISION(12)) < 0 || !ob.p) {
        free(ob.p);
        ob.p = NULL;
    }
    r->body = ob.p;
    r->len = ob.p ? ob.len : 0;
    json_decref(o);
    if (!r->body) {
        r->status = 500;
        r->body = strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
        r->len = r->body ? strlen(r->body) : 0;
    }
}

/* reply_json, for the other api_*.c files. */
void api_reply_json(struct api_reply *r, unsigned status, json_t *o)
{
    reply_json(r, status, o);
}

void api_error(struct api_reply *r, unsigned status, const char *code, const char *fmt, ...)
{
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reply_json(r, status, json_pack("{s{ssss}}", "error", "code", code, "message", msg));
    r->cacheable = false;
}

bool api_token_ok(const char *token, const char *auth)
{
    if (!token[0])
        return true;
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0)
        return false;
    const char *got = auth + 7;
    while (*got == ' ')
        got++;
    size_t tl = strlen(token), gl = strlen(got);
    /* Touch every byte of the expected token whatever the input. */
    unsigned char diff = (unsigned char)(tl != gl);
    for (size_t i = 0; i < tl; i++)
        diff |= (unsigned char)(token[i] ^ (i < gl ? got[i] : 0));
    return diff == 0;
}

/* ---- query arguments -------------------------------------------------- */

int api_arg_u64(const struct api_req *q, const char *name, uint64_t min, uint64_t max, uint64_t *v,
                struct api_reply *r)
{
    const char *s = q->arg(q->argctx, name);
    if (!s || tf_parse_u64(s, min, max, v) == 0)
        return 0;
    api_error(r, 400, "bad_request", "%s: '%.32s' is not an integer in %llu..%llu", name, s,
              (unsigned long long)min, (unsigned long long)max);
    return -EINVAL;
}

int api_arg_bool(const struct api_req *q, const char *name, bool digits, int *v, struct api_reply *r)
{
    const char *s = q->arg(q->argctx, name);
    if (!s)
        return 0;
    if (!strcmp(s, "true") || (digits && !strcmp(s, "1")))
        *v = 1;
    else if (!strcmp(s, "false") || (digits && !strcmp(s, "0")))
        *v = 0;
    else {
        api_error(r, 400, "bad_request", "%s: '%.32s' is not true or false", name, s);
        return -EINVAL;
    }
    return 0;
}

const char *api_arg_required(const struct api_req *q, const char *name, struct api_reply *r)
{
    const char *s = q->arg(q->argctx, name);
    if (!s)
        api_error(r, 400, "bad_request", "%s: required", name);
    return s;
}

/* ---- status ----------------------------------------------------------- */

/* [{"switch", "feature"}]: the rule selectors the backend refused, per
 * switch, in its last round (a kernel or iproute2 that lacks them). */
static json_t *unsupported_json(struct rebalance *rb)
{
    struct backend_unsup u[BACKEND_UNSUP_MAX];
    size_t n = rebalance_unsupported(rb, u, BACKEND_UNSUP_MAX);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        for (unsigned bit = 1; bit && bit <= u[i].sels; bit <<= 1)
            if (u[i].sels & bit)
                json_array_append_new(a, json_pack("{ss ss}", "switch", u[i].sw, "feature", plan_sel_name(bit)));
    return a;
}
/* Whether the backend may have state of its own to show. The rebalance
 * module, which owns the backend, knows (rebalance_backend_json: NULL, and
 * no wait for a round, when it has none). */
static bool backend_has_own(const struct api *a)
{
    return a->rb != NULL;
}

/* The backend's own state (the bgp kind's speaker, sessions and
 * announcements), added to /status's backend. */
static void backend_extra(struct api *a, json_t *into)
{
    json_t *x = rebalance_backend_json(a->rb);
    if (x)
        json_object_set_new(into, "bgp", x);
}

/* The backend's own series after the daemon's. */
static int backend_metrics_append(struct api *a, struct api_reply *r)
{
    if (!backend_has_own(a))
        return 0;
    char *x = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&x, &n);
    if (!f)
        return -ENOMEM;
    int rc = rebalance_backend_metrics(a->rb, f);
    if (fclose(f) && !rc)
        rc = -ENOMEM;
    char *body = rc ? NULL : realloc(r->body, r->len + n + 1);
    if (body) {
        memcpy(body + r->len, x, n + 1);
        r->body = body;
        r->len += n;
    }
    free(x);
    return rc ? rc : body ? 0 : -ENOMEM;
}

/* The probes that have reported, as /status lists them. Read lock. */
static json_t *probes_json(const struct state *s, double now)
{
    const struct topo *t = s->topo;
    json_t *plist = json_array();
    for (uint32_t n = 0; n < t->nnodes; n++) {
        const struct state_probe *p = &s->probes[n];
        if (p->last_seen <= 0)
            continue;
        json_t *un = json_array();
        for (unsigned i = 0; i < p->nunmapped; i++)
            json_array_append_new(un, json_string(p->unmapped[i]));
        json_array_append_new(plist, json_pack("{ss sf sf sb sI so}", "node", t->nodes[n].name, "last_seen",
                                               p->last_seen, "age_s", now - p->last_seen, "stale",
                                               state_probe_stale(s, n, now), "reports", (json_int_t)p->reports,
                                               "unmapped_ifs", un));
    }
    return plist;
}

/* The directions that are suspect or drained, with their health. Read lock. */
static json_t *unhealthy_json(const struct state *s)
{
    const struct topo *t = s->topo;
    json_t *unhealthy = json_array();
    for (uint32_t d = 0; d < 2 * t->nlinks; d++)
        if (s->dirs[d].suspect || s->dirs[d].drain != STATE_DRAIN_NONE) {
            json_t *h = api_health_json(&s->dirs[d]);
            json_object_set_new(h, "from", json_string(t->nodes[topo_dir_from(t, d)].name));
            json_object_set_new(h, "to", json_string(t->nodes[topo_dir_to(t, d)].name));
            json_array_append_new(unhealthy, h);
        }
    return unhealthy;
}

static json_t *view_status(struct api *a, double now)
{
    struct state *s = a->st;
    struct summary sum;
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    summary_get(s, a->cfg, now, &sum);
    json_t *plist = probes_json(s, now);
    json_t *topo = json_pack("{ss sI sI}", "name", t->name, "nodes", (json_int_t)t->nnodes, "links",
                             (json_int_t)t->nlinks);
    json_t *links = json_pack("{sI sI sI sf so}", "dirs", (json_int_t)sum.dirs, "congested",
                              (json_int_t)sum.congested, "down", (json_int_t)sum.down, "max_util", sum.max_util,
                              "unhealthy", unhealthy_json(s));
    bool warming = rebalance_warming(a->cfg, s, now);
    pthread_rwlock_unlock(&s->lock);

    bool healthy;
    char berr[256];
    struct rebalance_summary rs = rebalance_last(a->rb, &healthy, berr, sizeof(berr));
    json_t *last = rs.valid ? json_pack("{sf sI sf sf sb sb sf sI so}", "ts", rs.ts, "moved", (json_int_t)rs.moved,
                                        "max_util_before", rs.util_before, "max_util_after", rs.util_after,
                                        "dry_run", rs.dry_run, "applied", rs.applied, "duration_s",
                                        rs.duration_s, "congested", (json_int_t)rs.congested, "error",
                                        rs.error[0] ? json_string(rs.error) : json_null())
                            : json_null();
    json_t *o = json_pack("{ss sf sf sf so s{sI sI sI so} s{sI sI sI} so so s{sI sI sb} s{ss sb so so} so}",
                     "version", tf_version, "uptime_s", now - a->start, "now", tf_now_real(), "interval_s",
                     a->cfg->interval, "topology", topo,
                     "probes", "total", (json_int_t)sum.probes, "alive", (json_int_t)sum.alive, "stale",
                     (json_int_t)sum.stale,
                     "list", plist,
                     "flows", "total", (json_int_t)sum.flows, "fat", (json_int_t)sum.fat, "pinned", (json_int_t)sum.pinned,
                     "links", links, "last_rebalance", last,
                     "rebalance", "rounds", (json_int_t)atomic_load(&a->m->rounds), "moves",
                     (json_int_t)atomic_load(&a->m->moves), "warming_up", warming,
                     "backend", "name", a->backend_name, "healthy", healthy,
                     "error", berr[0] ? json_string(berr) : json_null(), "unsupported", unsupported_json(a->rb),
                     "ha", leader_status_json(a->ld));
    if (backend_has_own(a))
        backend_extra(a, json_object_get(o, "backend"));
    return o;
}

static void get_status(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                       struct api_reply *r)
{
    (void)q;
    (void)m;
    reply_json(r, 200, view_status(a, now));
}

/* ---- small reads ------------------------------------------------------ */

static void get_events(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                       struct api_reply *r)
{
    (void)m;
    (void)now;
    uint64_t since = 0, limit = EVENTS_MAX;
    if (api_arg_u64(q, "since", 0, UINT64_MAX, &since, r) < 0 || api_arg_u64(q, "limit", 1, EVENTS_MAX, &limit, r) < 0)
        return;
    reply_json(r, 200, events_json(a->ev, since, (unsigned)limit));
}

static void get_history(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                        struct api_reply *r)
{
    (void)q;
    (void)m;
    reply_json(r, 200, history_json(a->hist, a->ev, now));
}

static void get_openapi(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                        struct api_reply *r)
{
    (void)q;
    (void)m;
    (void)now;
    if (!a->openapi)
        return api_error(r, 404, "not_found", "openapi.json was not found at start");
    r->status = 200;
    r->ctype = "application/json";
    r->body = malloc(a->openapi_len + 1);
    if (r->body)
        memcpy(r->body, a->openapi, a->openapi_len + 1);
    r->len = r->body ? a->openapi_len : 0;
}

static void get_metrics(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                        struct api_reply *r)
{
    (void)q;
    (void)m;
    if (metrics_render(a->m, a->st, now, &r->body, &r->len) < 0 || backend_metrics_append(a, r) < 0)
        return api_error(r, 500, "internal", "out of memory");
    r->status = 200;
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- mutations -------------------------------------------------------- */

/* All of it is ingest_post's (parse, apply from the client's address, the
 * status and the reply, refusals counted and logged). */
static void post_reports(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                         struct api_reply *r)
{
    (void)m;
    struct ingest_opts o;
    ingest_opts_from_config(a->cfg, &o);
    json_t *out = NULL;
    unsigned status = ingest_post(a->st, a->ev, &o, q->peer, q->body, q->body_len, now, &out);
    reply_json(r, status, out);
}

static void post_rebalance(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                           struct api_reply *r)
{
    (void)m;
    int dry = 0;
    if (api_arg_bool(q, "dry_run", true, &dry, r) < 0)
        return;
    json_t *out = NULL;
    rebalance_run(a->rb, now, dry == 1, &out);
    if (!out)
        return api_error(r, 500, "internal", "rebalance produced no result");
    reply_json(r, 200, out);
}

static void do_routes(struct api *a, struct api_reply *r);

static void get_routes(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                       struct api_reply *r)
{
    (void)q;
    (void)m;
    (void)now;
    do_routes(a, r);
}

/* ---- the route table -------------------------------------------------- */

/* One row per endpoint. A pattern's {x} takes one path segment
 * (api_internal.h: API_SEG_MAX, the characters topology names use), a
 * trailing {x*} the rest of the path, whatever it is (the handler judges
 * it). Allow lists methods in this order. */
struct api_route {
    const char *pattern;
    const char *methods;         /* the Allow header */
    api_handler *handler;
    bool cacheable;              /* a 200 depends only on path, query and state generation (api.h) */
    bool token;                  /* its writes (methods other than GET, HEAD) need the bearer token */
    bool standby;                /* a standby takes its writes too (else 503 not_leader, docs/ha.md) */
};

static const struct api_route routes[] = {
    {"/api/v1/status", "GET, HEAD", get_status, true, false, false},
    {"/api/v1/topology", "GET, HEAD", api_get_topology, true, false, false},
    {"/api/v1/paths", "GET, HEAD", api_get_paths, true, false, false},
    {"/api/v1/flows", "GET, HEAD", api_get_flows, true, false, false},
    {"/api/v1/classes", "GET, HEAD", api_get_classes, true, false, false},
    {"/api/v1/jobs", "GET, HEAD", api_get_jobs, false, false, false},
    {"/api/v1/jobs/{id*}", "GET, HEAD, PUT, DELETE", api_job, false, true, false},
    {"/api/v1/links/{a}/{b}/drain", "POST", api_post_drain, false, true, false},
    {"/api/v1/links/{a}/{b}/undrain", "POST", api_post_undrain, false, true, false},
    {"/api/v1/routes", "GET, HEAD", get_routes, false, false, false},
    {"/api/v1/reports", "POST", post_reports, false, true, true},
    {"/api/v1/rebalance", "POST", post_rebalance, false, true, false},
    {"/api/v1/events", "GET, HEAD", get_events, false, false, false},
    {"/api/v1/history", "GET, HEAD", get_history, false, false, false},
    {"/api/v1/openapi.json", "GET, HEAD", get_openapi, true, false, false},
    {"/metrics", "GET, HEAD", get_metrics, false, false, false},
};

bool api_owns(const char *path)
{
    return strncmp(path, "/api/", 5) == 0 || strcmp(path, "/metrics") == 0;
}

/* One {x} segment of p into out; its length, or 0 when p does not start
 * with one (empty, too long, a character names do not use). */
static size_t seg_take(const char *p, char *out)
{
    size_t n = strcspn(p, "/");
    if (n == 0 || n >= API_SEG_MAX)
        return 0;
    for (size_t j = 0; j < n; j++)
        if (!isalnum((unsigned char)p[j]) && !strchr("-_.:", p[j]))
            return 0;
    memcpy(out, p, n);
    out[n] = '\0';
    return n;
}

/* Whether path p matches pattern pat; fills *m. */
static bool route_match(const char *pat, const char *p, struct api_match *m)
{
    int nseg = 0;
    memset(m, 0, sizeof(*m));
    while (*pat) {
        if (*pat != '{') {
            if (*pat++ != *p++)
                return false;
            continue;
        }
        const char *end = strchr(pat, '}');
        if (end[-1] == '*') { /* the rest, and the pattern ends here */
            m->rest = p;
            return true;
        }
        size_t n = nseg < 2 ? seg_take(p, m->seg[nseg++]) : 0;
        if (!n)
            return false;
        p += n;
        pat = end + 1;
    }
    return *p == '\0';
}

static const struct api_route *route_find(const char *p, struct api_match *m)
{
    for (size_t i = 0; i < TF_ARRAY_SIZE(routes); i++)
        if (route_match(routes[i].pattern, p, m))
            return &routes[i];
    return NULL;
}

static bool method_in(const char *m, const char *list)
{
    size_t n = strlen(m);
    for (const char *p = list; (p = strstr(p, m)); p += n)
        if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

static bool is_write(const char *method)
{
    return strcmp(method, "GET") && strcmp(method, "HEAD");
}

/* api_admit, and the route admitted with what its pattern captured. */
static const struct api_route *admit(const struct api *a, const struct api_req *q, struct api_reply *r,
                                     struct api_match *m)
{
    memset(r, 0, sizeof(*r));
    const struct api_route *rt = route_find(q->path, m);
    if (!rt) {
        api_error(r, 404, "not_found", "no such endpoint: %.100s", q->path);
        return NULL;
    }
    if (!method_in(q->method, rt->methods)) {
        api_error(r, 405, "method_not_allowed", "%s %.100s: allowed: %s", q->method, q->path, rt->methods);
        r->allow = rt->methods;
        return NULL;
    }
    bool write = is_write(q->method);
    if (write && rt->token && !api_token_ok(a->token, q->auth)) {
        api_error(r, 401, "unauthorized", "%s", q->auth ? "wrong bearer token" : "missing bearer token");
        r->challenge = q->auth ? "Bearer realm=\"tierflow\", error=\"invalid_token\"" : "Bearer realm=\"tierflow\"";
        return NULL;
    }
    /* Every instance ingests; only the leader takes the other writes
     * (docs/ha.md: answered, not forwarded, so that a client never
     * wonders which one acted). */
    if (write && !rt->standby && !leader_acts(a->ld)) {
        char url[256];
        leader_url(a->ld, url, sizeof(url));
        reply_json(r, 503, json_pack("{s{ss ss ss}}", "error", "code", "not_leader", "message",
                                     "this tierflowd is a standby: send writes to the leader", "leader", url));
        return NULL;
    }
    return rt;
}

bool api_admit(const struct api *a, const struct api_req *q, struct api_reply *r)
{
    struct api_match m;
    return admit(a, q, r, &m) != NULL;
}

void api_handle(struct api *a, const struct api_req *q, struct api_reply *r)
{
    struct api_match m;
    const struct api_route *rt = admit(a, q, r, &m);
    if (!rt)
        return;
    bool write = is_write(q->method);
    /* A read builds a document, writes it out and drops it: its values can
     * come from the thread's arena (mutations keep JSON, so they do not;
     * ingest_parse opens its own scope for a report body's tree). */
    if (!write)
        jsonarena_begin(API_ARENA_HINT);
    rt->handler(a, q, &m, tf_now_real(), r);
    if (!write)
        jsonarena_end();
    r->cacheable = rt->cacheable && r->status == 200;
}

/* ---- routes and jobs -------------------------------------------------- */

static void do_routes(struct api *a, struct api_reply *r)
{
    reply_json(r, 200, rebalance_routes_json(a->rb));
}
