/*
 * api: see api.h. Views are built with jansson under the state's read lock
 * and serialised after it is released.
 */
#include "controller/api.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/reportspec.h"
#include "common/util.h"
#include "controller/config.h"
#include "controller/events.h"
#include "controller/health.h"
#include "controller/ingest.h"
#include "controller/jsonarena.h"
#include "controller/history.h"
#include "controller/leader.h"
#include "controller/metrics.h"
#include "controller/rebalance.h"
#include "controller/state.h"
#include "policy/classes.h"
#include "policy/job.h"

#define API_MAX_PATHS 256
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

static const char *node_name(const struct topo *t, uint32_t n)
{
    return n < t->nnodes ? t->nodes[n].name : NULL;
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *addr_json(int af, const uint8_t *a)
{
    char buf[64];
    return json_string(tf_addr_str(af, a, buf, sizeof(buf)));
}

/* ---- views ------------------------------------------------------------ */

struct loads {
    double *bps, *ce;
    uint32_t *nfat;
};

static int loads_get(struct state *s, double now, struct loads *l)
{
    uint32_t nd = 2 * s->topo->nlinks + 1;
    l->bps = calloc(nd, sizeof(double));
    l->ce = calloc(nd, sizeof(double));
    l->nfat = calloc(nd, sizeof(uint32_t));
    if (!l->bps || !l->ce || !l->nfat)
        return -ENOMEM;
    state_dir_loads(s, now, l->bps, l->ce, l->nfat);
    return 0;
}

static void loads_free(struct loads *l)
{
    free(l->bps);
    free(l->ce);
    free(l->nfat);
}


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
/* Whether the backend has state of its own to show (the bgp kind): only
 * then do /status and /metrics wait for rb->mu, which a round holds. */
static bool backend_has_own(const struct api *a)
{
    return a->rb->be && strcmp(a->backend_name, "bgp") == 0;
}

/* The backend's own state (the bgp kind's speaker, sessions and
 * announcements), added to /status's backend and to /routes; caller holds
 * rb->mu. */
static void backend_extra(struct api *a, json_t *into)
{
    json_t *x = a->rb->be ? backend_json(a->rb->be) : NULL;
    if (x)
        json_object_set_new(into, "bgp", x);
}

/* The backend's own series after the daemon's (rb->mu taken here). */
static int backend_metrics_append(struct api *a, struct api_reply *r)
{
    if (!backend_has_own(a))
        return 0;
    char *x = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&x, &n);
    if (!f)
        return -ENOMEM;
    pthread_mutex_lock(&a->rb->mu);
    int rc = backend_metrics(a->rb->be, f);
    pthread_mutex_unlock(&a->rb->mu);
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

/* A direction's health (health.h) as /topology and /status show it. */
static const char *const drain_name[] = {"none", "auto", "manual"};
static json_t *health_json(const struct state_dir *sd)
{
    return json_pack("{sf sb sf ss ss}", "value", sd->health, "suspect", sd->suspect, "confidence", sd->health_conf,
                     "drain", drain_name[sd->drain < 3 ? sd->drain : 0], "evidence", sd->health_why);
}

static json_t *view_status(struct api *a, double now)
{
    struct state *s = a->st;
    struct loads l = {0};
    json_t *plist = json_array();
    size_t alive = 0, stale = 0, total = 0, fat = 0, pinned = 0, live = 0, congested = 0, down = 0;
    double maxu = 0;
    json_t *unhealthy = json_array();   /* suspect or drained directions */
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    for (uint32_t n = 0; n < t->nnodes; n++) {
        const struct state_probe *p = &s->probes[n];
        if (p->last_seen <= 0)
            continue;
        bool st = state_probe_stale(s, n, now);
        total++;
        st ? stale++ : alive++;
        json_t *un = json_array();
        for (unsigned i = 0; i < p->nunmapped; i++)
            json_array_append_new(un, json_string(p->unmapped[i]));
        json_array_append_new(plist, json_pack("{ss sf sf sb sI so}", "node", t->nodes[n].name, "last_seen",
                                               p->last_seen, "age_s", now - p->last_seen, "stale", st,
                                               "reports", (json_int_t)p->reports, "unmapped_ifs", un));
    }
    for (size_t i = 0; i < s->nflows; i++) {
        const struct state_flow *f = &s->flows[i];
        if (state_flow_stale(s, f, now))
            continue;
        live++;
        fat += f->fat;
        pinned += f->pinned;
    }
    if (loads_get(s, now, &l) == 0)
        for (uint32_t d = 0; d < 2 * t->nlinks; d++) {
            double u = state_dir_util(s, d, l.bps[d]);
            maxu = u > maxu ? u : maxu;
            congested += config_congested(a->cfg, u, l.ce[d]);
            down += !s->dirs[d].up;
            if (s->dirs[d].suspect || s->dirs[d].drain != STATE_DRAIN_NONE) {
                json_t *h = health_json(&s->dirs[d]);
                json_object_set_new(h, "from", json_string(t->nodes[topo_dir_from(t, d)].name));
                json_object_set_new(h, "to", json_string(t->nodes[topo_dir_to(t, d)].name));
                json_array_append_new(unhealthy, h);
            }
        }
    json_t *topo = json_pack("{ss sI sI}", "name", t->name, "nodes", (json_int_t)t->nnodes, "links",
                             (json_int_t)t->nlinks);
    json_t *links = json_pack("{sI sI sI sf so}", "dirs", (json_int_t)(2 * t->nlinks), "congested",
                              (json_int_t)congested, "down", (json_int_t)down, "max_util", maxu, "unhealthy",
                              unhealthy);
    pthread_rwlock_unlock(&s->lock);
    loads_free(&l);

    bool healthy;
    char berr[256];
    struct rebalance_summary rs = rebalance_last(a->rb, &healthy, berr, sizeof(berr));
    json_t *last = rs.valid ? json_pack("{sf sI sf sf sb sb sf sI so}", "ts", rs.ts, "moved", (json_int_t)rs.moved,
                                        "max_util_before", rs.util_before, "max_util_after", rs.util_after,
                                        "dry_run", rs.dry_run, "applied", rs.applied, "duration_s",
                                        rs.duration_s, "congested", (json_int_t)rs.congested, "error",
                                        rs.error[0] ? json_string(rs.error) : json_null())
                            : json_null();
    json_t *o = json_pack("{ss sf sf sf so s{sI sI sI so} s{sI sI sI} so so s{sI sI} s{ss sb so so} so}",
                     "version", TF_VERSION, "uptime_s", now - a->start, "now", tf_now_real(), "interval_s",
                     a->cfg->interval, "topology", topo,
                     "probes", "total", (json_int_t)total, "alive", (json_int_t)alive, "stale", (json_int_t)stale,
                     "list", plist,
                     "flows", "total", (json_int_t)live, "fat", (json_int_t)fat, "pinned", (json_int_t)pinned,
                     "links", links, "last_rebalance", last,
                     "rebalance", "rounds", (json_int_t)atomic_load(&a->m->rounds), "moves",
                     (json_int_t)atomic_load(&a->m->moves),
                     "backend", "name", a->backend_name, "healthy", healthy,
                     "error", berr[0] ? json_string(berr) : json_null(), "unsupported", unsupported_json(a->rb),
                     "ha", leader_status_json(a->ld));
    if (backend_has_own(a)) {
        pthread_mutex_lock(&a->rb->mu);
        backend_extra(a, json_object_get(o, "backend"));
        pthread_mutex_unlock(&a->rb->mu);
    }
    return o;
}

static json_t *dir_json(struct state *s, const struct loads *l, uint32_t d, const struct config *cfg)
{
    const struct topo *t = s->topo;
    const struct state_dir *sd = &s->dirs[d];
    double u = state_dir_util(s, d, l->bps[d]);
    double now = tf_now_real();
    const char *why = state_dir_down_reason(s, d, now);
    json_t *o = json_pack("{sI ss ss sf sf sf sI sb so sb sI sb sf}", "dir", (json_int_t)d, "from",
                     t->nodes[topo_dir_from(t, d)].name, "to", t->nodes[topo_dir_to(t, d)].name, "util", u,
                     "bps", l->bps[d], "ce_frac", l->ce[d], "drops", (json_int_t)sd->drops, "up", sd->up,
                     "down_reason", why ? json_string(why) : json_null(),
                     "congested", config_congested(cfg, u, l->ce[d]), "fat_flows", (json_int_t)l->nfat[d],
                     "measured", state_dir_measured(s, d, l->bps[d], now), "last_update", sd->last_update);
    json_object_set_new(o, "health", health_json(sd));
    return o;
}

static json_t *view_topology(struct api *a, double now)
{
    struct state *s = a->st;
    struct loads l = {0};
    json_t *nodes = json_array(), *links = json_array(), *tiers = json_array();
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    int rc = loads_get(s, now, &l);
    for (int i = 0; i < t->ntiers; i++)
        json_array_append_new(tiers, json_string(topo_tier_name(t->tiers[i])));
    for (uint32_t n = 0; n < t->nnodes && rc == 0; n++) {
        const struct topo_node *tn = &t->nodes[n];
        json_t *o = json_pack("{ss ss ss}", "name", tn->name, "tier", topo_tier_name(tn->tier), "probe",
                              s->probes[n].last_seen <= 0 ? "none"
                              : state_probe_stale(s, n, now) ? "stale" : "alive");
        if (tn->af) {
            char buf[64], pfx[80];
            tf_addr_str(tn->af, tn->addr, buf, sizeof(buf));
            if (tn->tier == TOPO_HOST) {
                json_object_set_new(o, "addr", json_string(buf));
            } else {
                snprintf(pfx, sizeof(pfx), "%s/%u", buf, tn->plen);
                json_object_set_new(o, "prefix", json_string(pfx));
            }
        }
        json_array_append_new(nodes, o);
    }
    for (uint32_t k = 0; k < t->nlinks && rc == 0; k++) {
        const struct topo_link *tl = &t->links[k];
        json_array_append_new(links, json_pack("{sI ss ss sf s[oo]}", "id", (json_int_t)k, "a",
                                               t->nodes[tl->lo].name, "b", t->nodes[tl->hi].name, "gbps",
                                               tl->gbps, "dirs", dir_json(s, &l, 2 * k, a->cfg),
                                               dir_json(s, &l, 2 * k + 1, a->cfg)));
    }
    json_t *o = json_pack("{ss so so so}", "name", t->name, "tiers", tiers, "nodes", nodes, "links", links);
    pthread_rwlock_unlock(&s->lock);
    loads_free(&l);
    return o;
}

static json_t *flow_json(struct state *s, const struct state_flow *f, double now)
{
    const struct topo *t = s->topo;
    json_t *path = json_array();
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS);
    if (n > 0) {
        json_array_append_new(path, json_string(t->nodes[f->src_node].name));
        for (int i = 0; i < n; i++)
            json_array_append_new(path, json_string(t->nodes[topo_dir_to(t, dirs[i])].name));
    }
    char id[24];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)f->id);
    const char *cls = s->classes && f->cls >= 0 && (uint32_t)f->cls < s->classes->n ? s->classes->c[f->cls].name
                                                                                     : "default";
    json_t *o = json_pack("{ss so so so so sI sI sI sI sI sI ss so so sI sf sf sI sb sb ss ss sf sI sb ss sI sb}",
                          "id", id, "src", addr_json(f->k.af, f->k.src), "dst", addr_json(f->k.af, f->k.dst),
                          "src_node", str_or_null(node_name(t, f->src_node)),
                          "dst_node", str_or_null(node_name(t, f->dst_node)),
                          "proto", (json_int_t)f->k.proto, "sport", (json_int_t)f->k.sport,
                          "dport", (json_int_t)f->k.dport, "qp", (json_int_t)f->k.qp,
                          "vlan", (json_int_t)f->k.vlan, "dscp", (json_int_t)f->dscp, "class", cls,
                          "tier", f->tier >= 0 ? json_string(topo_tier_name(f->tier)) : json_null(),
                          "path", path, "path_index", (json_int_t)(n > 0 ? f->path : -1),
                          "bps", f->bps, "ce_frac", f->ce_frac, "cnp", (json_int_t)f->cnp,
                          "pinned", f->pinned, "fat", f->fat,
                          "probe", node_name(t, f->probe) ? node_name(t, f->probe) : "",
                          "if", f->ifname, "last_seen", f->last_seen, "moves", (json_int_t)f->moves,
                          "stale", state_flow_stale(s, f, now), "source", reportspec_source_name(f->source),
                          "sampling", (json_int_t)f->sampling, "estimated", f->sampling > 1);
    return o;
}

/* Highest rate first; ties by position, so the order is total and stable. */
static int by_bps_desc(const void *x, const void *y, void *base)
{
    const struct state_flow *fl = base;
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    double a = fl[i].bps, b = fl[j].bps;
    return a < b ? 1 : a > b ? -1 : (i > j) - (i < j);
}

static bool flow_crosses(struct state *s, const struct state_flow *f, uint32_t node)
{
    uint32_t dirs[TOPO_MAX_HOPS];
    int n = state_flow_dirs(s, f, dirs, TOPO_MAX_HOPS);
    for (int i = 0; i < n; i++)
        if (topo_dir_to(s->topo, dirs[i]) == node || topo_dir_from(s->topo, dirs[i]) == node)
            return true;
    return false;
}

/* A flow page is API_FLOWS_PAGE flows unless the client asks for another
 * size: a default small enough to serve fast (100 flows are about 43 kB; the
 * former 1000 were 434 kB, bounded by copying bytes over the socket: about
 * 5k req/s, tests/bench/30-controller.sh), with offset/next_offset to walk
 * the rest. */
#define API_FLOWS_PAGE 100
#define API_FLOWS_LIMIT_MAX 100000

/* Query parameter `name` as an integer in 0..max into *v (left alone when
 * absent). On bad input, *r is the 400 naming the parameter and -EINVAL. */
static int query_u64(const struct api_req *q, const char *name, uint64_t max, uint64_t *v, struct api_reply *r)
{
    const char *s = q->arg(q->argctx, name);
    if (!s || tf_parse_u64(s, 0, max, v) == 0)
        return 0;
    api_error(r, 400, "bad_request", "%s: '%.32s' is not an integer in 0..%llu", name, s, (unsigned long long)max);
    return -EINVAL;
}

static void view_flows(struct api *a, const struct api_req *q, double now, struct api_reply *r)
{
    const char *fat = q->arg(q->argctx, "fat"), *cls = q->arg(q->argctx, "class");
    const char *via = q->arg(q->argctx, "via"), *probe = q->arg(q->argctx, "probe");
    uint64_t limit = API_FLOWS_PAGE, offset = 0;
    if (fat && strcmp(fat, "true") && strcmp(fat, "false"))
        return api_error(r, 400, "bad_request", "fat: '%.32s' is not true or false", fat);
    if (query_u64(q, "limit", API_FLOWS_LIMIT_MAX, &limit, r) < 0 ||
        query_u64(q, "offset", STATE_MAX_FLOWS, &offset, r) < 0)
        return;
    struct state *s = a->st;
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    int want_cls = -1;
    uint32_t via_n = TOPO_NONE, probe_n = TOPO_NONE;
    const char *bad = NULL;
    if (cls && (!s->classes || (want_cls = classes_find(s->classes, cls)) < 0))
        bad = "class";
    if (via && (via_n = topo_node_by_name(t, via)) == TOPO_NONE)
        bad = "via";
    if (probe && (probe_n = topo_node_by_name(t, probe)) == TOPO_NONE)
        bad = "probe";
    if (bad) {
        pthread_rwlock_unlock(&s->lock);
        return api_error(r, 400, "bad_request", "%s: no such %s", bad, strcmp(bad, "class") ? "node" : "class");
    }
    uint32_t *idx = malloc((s->nflows + 1) * sizeof(*idx));
    if (!idx) { /* an empty page would claim that nothing matched (and be cached) */
        pthread_rwlock_unlock(&s->lock);
        return api_error(r, 500, "internal", "out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < s->nflows; i++) {
        const struct state_flow *f = &s->flows[i];
        if ((fat && f->fat != (fat[0] == 't')) || (want_cls >= 0 && f->cls != want_cls) ||
            (probe && f->probe != probe_n) || (via && !flow_crosses(s, f, via_n)))
            continue;
        idx[m++] = (uint32_t)i;
    }
    /* The order is total (by_bps_desc): while the state is unchanged, pages
     * at successive offsets follow each other without gaps or repeats. */
    qsort_r(idx, m, sizeof(*idx), by_bps_desc, s->flows);
    size_t from = offset < m ? (size_t)offset : m;
    size_t n = m - from < limit ? m - from : (size_t)limit;
    json_t *arr = json_array();
    for (size_t i = from; i < from + n; i++)
        json_array_append_new(arr, flow_json(s, &s->flows[idx[i]], now));
    size_t total = s->nflows;
    pthread_rwlock_unlock(&s->lock);
    free(idx);
    /* null at the end, and for limit=0 (counts only), so that a client
     * looping while next_offset is not null always stops. */
    json_t *next = n > 0 && from + n < m ? json_integer((json_int_t)(from + n)) : json_null();
    reply_json(r, 200, json_pack("{sI sI sI sI so so}", "total", (json_int_t)total, "matched", (json_int_t)m,
                                 "returned", (json_int_t)n, "offset", (json_int_t)offset, "next_offset", next,
                                 "flows", arr));
    r->cacheable = true;
}

static void view_paths(struct api *a, const struct api_req *q, double now, struct api_reply *r)
{
    const char *src = q->arg(q->argctx, "src"), *dst = q->arg(q->argctx, "dst");
    if (!src || !dst)
        return api_error(r, 400, "bad_request", "%s: required", src ? "dst" : "src");
    struct state *s = a->st;
    struct loads l = {0};
    pthread_rwlock_rdlock(&s->lock);
    const struct topo *t = s->topo;
    uint32_t sn = topo_node_by_name(t, src), dn = topo_node_by_name(t, dst);
    if (sn == TOPO_NONE || dn == TOPO_NONE) {
        pthread_rwlock_unlock(&s->lock);
        return api_error(r, 404, "not_found", "%s: no node '%.32s'", sn == TOPO_NONE ? "src" : "dst",
                         sn == TOPO_NONE ? src : dst);
    }
    uint64_t count = topo_path_count(t, sn, dn);
    json_t *paths = json_array();
    if (loads_get(s, now, &l) == 0) {
        for (uint64_t p = 0; p < count && p < API_MAX_PATHS; p++) {
            uint32_t dirs[TOPO_MAX_HOPS];
            int n = topo_path_dirs(t, sn, dn, p, dirs, TOPO_MAX_HOPS);
            if (n < 0)
                break;
            json_t *hops = json_array(), *jd = json_array(), *ff = json_array();
            json_array_append_new(hops, json_string(t->nodes[sn].name));
            double u = 0, b = 0, ce = 0;
            bool up = true, measured = true; /* of the hottest hop */
            for (int i = 0; i < n; i++) {
                json_array_append_new(hops, json_string(t->nodes[topo_dir_to(t, dirs[i])].name));
                json_array_append_new(jd, json_integer(dirs[i]));
                double du = state_dir_util(s, dirs[i], l.bps[dirs[i]]);
                if (i == 0 || du > u)
                    measured = state_dir_measured(s, dirs[i], l.bps[dirs[i]], now);
                u = du > u ? du : u;
                b = l.bps[dirs[i]] > b ? l.bps[dirs[i]] : b;
                ce = l.ce[dirs[i]] > ce ? l.ce[dirs[i]] : ce;
                up &= s->dirs[dirs[i]].up;
            }
            for (size_t i = 0; i < s->nflows; i++) {
                const struct state_flow *f = &s->flows[i];
                if (f->fat && f->src_node == sn && f->dst_node == dn && f->path == (int64_t)p &&
                    !state_flow_stale(s, f, now)) {
                    char id[24];
                    snprintf(id, sizeof(id), "%016llx", (unsigned long long)f->id);
                    json_array_append_new(ff, json_string(id));
                }
            }
            json_array_append_new(paths, json_pack("{sI so so sf sb sf sf sb sb so}", "index", (json_int_t)p,
                                                   "hops", hops, "dirs", jd, "util", u, "measured", measured, "bps",
                                                   b, "ce_frac", ce, "up", up, "congested",
                                                   config_congested(a->cfg, u, ce), "fat_flows", ff));
        }
    }
    pthread_rwlock_unlock(&s->lock);
    loads_free(&l);
    reply_json(r, 200, json_pack("{ss ss sI so}", "src", src, "dst", dst, "count", (json_int_t)count, "paths", paths));
    r->cacheable = true;
}

static json_t *view_classes(struct api *a, double now)
{
    struct state *s = a->st;
    json_t *arr = json_array();
    pthread_rwlock_rdlock(&s->lock);
    uint32_t nc = s->classes ? s->classes->n : 0;
    for (uint32_t c = 0; c < nc; c++) {
        double bps = 0;
        size_t n = 0, nfat = 0;
        for (size_t i = 0; i < s->nflows; i++) {
            const struct state_flow *f = &s->flows[i];
            if (f->cls != (int)c || state_flow_stale(s, f, now))
                continue;
            bps += f->bps;
            n++;
            nfat += f->fat;
        }
        /* A policy's confinement, else for a parallelism dimension the
         * highest tier it crosses in any registered job. */
        int tier = s->classes->c[c].max_tier, jt = -1;
        json_t *jobs = json_array();
        for (size_t i = 0; c < CLASS_DEFAULT && i < s->njobs; i++) {
            int t = s->job_tier[i][c];
            if (t < 0)
                continue;
            jt = t > jt ? t : jt;
            json_array_append_new(jobs, json_pack("{ss ss}", "id", s->jobs[i]->name, "tier", topo_tier_name(t)));
        }
        if (tier < 0)
            tier = jt;
        json_array_append_new(arr, json_pack("{ss so sb sf sI sI so}", "name", s->classes->c[c].name, "tier",
                                             tier >= 0 ? json_string(topo_tier_name(tier)) : json_null(),
                                             "confined", s->classes->c[c].max_tier >= 0, "bps", bps,
                                             "flows", (json_int_t)n, "fat_flows", (json_int_t)nfat, "jobs", jobs));
    }
    pthread_rwlock_unlock(&s->lock);
    return json_pack("{so}", "classes", arr);
}

/* ---- mutations -------------------------------------------------------- */

/* All of it is ingest_post's (parse, apply from the client's address, the
 * status and the reply, refusals counted and logged). */
static void do_reports(struct api *a, const struct api_req *q, double now, struct api_reply *r)
{
    struct ingest_opts o;
    ingest_opts_from_config(a->cfg, &o);
    json_t *out = NULL;
    unsigned status = ingest_post(a->st, a->ev, &o, q->peer, q->body, q->body_len, now, &out);
    reply_json(r, status, out);
}

static void do_rebalance(struct api *a, const struct api_req *q, double now, struct api_reply *r)
{
    const char *dr = q->arg(q->argctx, "dry_run");
    if (dr && strcmp(dr, "true") && strcmp(dr, "false") && strcmp(dr, "1") && strcmp(dr, "0"))
        return api_error(r, 400, "bad_request", "dry_run: '%.32s' is not true or false", dr);
    bool dry = dr && (dr[0] == 't' || dr[0] == '1');
    json_t *out = NULL;
    rebalance_run(a->rb, now, dry, &out);
    if (!out)
        return api_error(r, 500, "internal", "rebalance produced no result");
    reply_json(r, 200, out);
}

static void do_routes(struct api *a, struct api_reply *r);
static void do_drain(struct api *a, const struct api_req *q, const char *p, double now, struct api_reply *r);
static void dispatch(struct api *a, const struct api_req *q, const char *p, double now, struct api_reply *r);
static void do_jobs(struct api *a, const struct api_req *q, const char *id, struct api_reply *r);

/* ---- dispatch --------------------------------------------------------- */

struct route {
    const char *path;
    const char *methods;         /* for Allow */
};
static const struct route routes[] = {
    {"/api/v1/status", "GET, HEAD"},  {"/api/v1/topology", "GET, HEAD"}, {"/api/v1/paths", "GET, HEAD"},
    {"/api/v1/flows", "GET, HEAD"},   {"/api/v1/classes", "GET, HEAD"},  {"/api/v1/jobs", "GET, HEAD"},
    {"/api/v1/routes", "GET, HEAD"},  {"/api/v1/reports", "POST"},       {"/api/v1/rebalance", "POST"},
    {"/api/v1/events", "GET, HEAD"},  {"/api/v1/history", "GET, HEAD"},
    {"/api/v1/openapi.json", "GET, HEAD"}, {"/metrics", "GET, HEAD"},
};

bool api_owns(const char *path)
{
    return strncmp(path, "/api/", 5) == 0 || strcmp(path, "/metrics") == 0;
}

static bool method_in(const char *m, const char *list)
{
    size_t n = strlen(m);
    for (const char *p = list; (p = strstr(p, m)); p += n)
        if ((p == list || p[-1] == ',' || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

/* POST /api/v1/links/{a}/{b}/drain|undrain: the direction a -> b and
 * whether to drain it; false when p is no such path (a name is 1..63 of
 * the characters topology names use). */
#define API_LINK_NAME 64
static bool link_action(const char *p, char *a, char *b, bool *on)
{
    static const char pre[] = "/api/v1/links/";
    if (strncmp(p, pre, sizeof(pre) - 1))
        return false;
    p += sizeof(pre) - 1;
    char *out[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        size_t n = strcspn(p, "/");
        if (n == 0 || n >= API_LINK_NAME || p[n] != '/')
            return false;
        memcpy(out[i], p, n);
        out[i][n] = '\0';
        for (size_t j = 0; j < n; j++)
            if (!isalnum((unsigned char)p[j]) && !strchr("-_.:", p[j]))
                return false;
        p += n + 1;
    }
    if (!strcmp(p, "drain") || !strcmp(p, "undrain")) {
        *on = p[0] == 'd';
        return true;
    }
    return false;
}

/* The methods path takes ("GET, HEAD", ...), NULL when it is no endpoint. */
static const char *route_allow(const char *p)
{
    char a[API_LINK_NAME], b[API_LINK_NAME];
    bool on;
    if (link_action(p, a, b, &on))
        return "POST";
    if (strncmp(p, "/api/v1/jobs/", 13) == 0)
        return "GET, HEAD, PUT, DELETE";
    for (size_t i = 0; i < TF_ARRAY_SIZE(routes); i++)
        if (strcmp(p, routes[i].path) == 0)
            return routes[i].methods;
    return NULL;
}

bool api_admit(const struct api *a, const struct api_req *q, struct api_reply *r)
{
    memset(r, 0, sizeof(*r));
    const char *allow = route_allow(q->path);
    if (!allow) {
        api_error(r, 404, "not_found", "no such endpoint: %.100s", q->path);
        return false;
    }
    if (!method_in(q->method, allow)) {
        api_error(r, 405, "method_not_allowed", "%s %.100s: allowed: %s", q->method, q->path, allow);
        r->allow = allow;
        return false;
    }
    bool mutating = strcmp(q->method, "GET") && strcmp(q->method, "HEAD");
    if (mutating && !api_token_ok(a->token, q->auth)) {
        api_error(r, 401, "unauthorized", "%s", q->auth ? "wrong bearer token" : "missing bearer token");
        r->challenge = q->auth ? "Bearer realm=\"tierflow\", error=\"invalid_token\"" : "Bearer realm=\"tierflow\"";
        return false;
    }
    /* Every instance ingests; only the leader takes the other writes
     * (docs/ha.md: answered, not forwarded, so that a client never
     * wonders which one acted). */
    if (mutating && strcmp(q->path, "/api/v1/reports") && !leader_acts(a->ld)) {
        char url[256];
        leader_url(a->ld, url, sizeof(url));
        reply_json(r, 503, json_pack("{s{ss ss ss}}", "error", "code", "not_leader", "message",
                                     "this tierflowd is a standby: send writes to the leader", "leader", url));
        return false;
    }
    return true;
}

void api_handle(struct api *a, const struct api_req *q, struct api_reply *r)
{
    if (!api_admit(a, q, r))
        return;
    double now = tf_now_real();
    const char *p = q->path;
    const char *job_id = strncmp(p, "/api/v1/jobs/", 13) == 0 ? p + 13 : NULL;
    bool mutating = strcmp(q->method, "GET") && strcmp(q->method, "HEAD");

    if (job_id || strcmp(p, "/api/v1/jobs") == 0)
        return do_jobs(a, q, job_id, r);
    if (strncmp(p, "/api/v1/links/", 14) == 0)
        return do_drain(a, q, p, now, r);
    /* A read builds a document, writes it out and drops it: its values can
     * come from the thread's arena (mutations keep JSON, so they do not;
     * ingest_parse opens its own scope for a report body's tree). */
    if (!mutating)
        jsonarena_begin(API_ARENA_HINT);
    dispatch(a, q, p, now, r);
    if (!mutating)
        jsonarena_end();
}

static void dispatch(struct api *a, const struct api_req *q, const char *p, double now, struct api_reply *r)
{
    if (strcmp(p, "/api/v1/status") == 0) {
        reply_json(r, 200, view_status(a, now));
        r->cacheable = true;
    } else if (strcmp(p, "/api/v1/topology") == 0) {
        reply_json(r, 200, view_topology(a, now));
        r->cacheable = true;
    } else if (strcmp(p, "/api/v1/paths") == 0) {
        view_paths(a, q, now, r);
    } else if (strcmp(p, "/api/v1/flows") == 0) {
        view_flows(a, q, now, r);
    } else if (strcmp(p, "/api/v1/classes") == 0) {
        reply_json(r, 200, view_classes(a, now));
        r->cacheable = true;
    } else if (strcmp(p, "/api/v1/routes") == 0) {
        do_routes(a, r);
    } else if (strcmp(p, "/api/v1/reports") == 0) {
        do_reports(a, q, now, r);
    } else if (strcmp(p, "/api/v1/rebalance") == 0) {
        do_rebalance(a, q, now, r);
    } else if (strcmp(p, "/api/v1/events") == 0) {
        const char *since = q->arg(q->argctx, "since"), *lim = q->arg(q->argctx, "limit");
        uint64_t sv = 0, lv = EVENTS_MAX;
        if ((since && tf_parse_u64(since, 0, UINT64_MAX, &sv) < 0) ||
            (lim && tf_parse_u64(lim, 1, EVENTS_MAX, &lv) < 0))
            return api_error(r, 400, "bad_request", "%s: not an integer in range", since && tf_parse_u64(since, 0, UINT64_MAX, &sv) < 0 ? "since" : "limit");
        reply_json(r, 200, events_json(a->ev, sv, (unsigned)lv));
    } else if (strcmp(p, "/api/v1/history") == 0) {
        reply_json(r, 200, history_json(a->hist, a->ev, now));
    } else if (strcmp(p, "/api/v1/openapi.json") == 0) {
        if (!a->openapi)
            return api_error(r, 404, "not_found", "openapi.json was not found at start");
        r->status = 200;
        r->ctype = "application/json";
        r->body = malloc(a->openapi_len + 1);
        if (r->body)
            memcpy(r->body, a->openapi, a->openapi_len + 1);
        r->len = r->body ? a->openapi_len : 0;
        r->cacheable = true;
    } else if (strcmp(p, "/metrics") == 0) {
        if (metrics_render(a->m, a->st, now, &r->body, &r->len) < 0 || backend_metrics_append(a, r) < 0)
            return api_error(r, 500, "internal", "out of memory");
        r->status = 200;
        r->ctype = "text/plain; version=0.0.4; charset=utf-8";
    }
}

/* ---- routes and jobs -------------------------------------------------- */

#include "controller/backend.h"

static void do_routes(struct api *a, struct api_reply *r)
{
    struct plan have;
    plan_init(&have);
    struct rebalance *rb = a->rb;
    int rc = 0;
    bool desired = !rb->be || strcmp(a->backend_name, "none") == 0;
    pthread_mutex_lock(&rb->mu);
    if (desired)
        rc = plan_copy(&have, &rb->last);
    else
        rc = backend_read(rb->be, &have);
    const char *err = rc < 0 && rb->be ? backend_error(rb->be) : NULL;
    json_t *sw = plan_json(&have);
    json_t *o = json_pack("{ss ss so}", "backend", a->backend_name, "source", desired ? "desired" : "installed",
                          "error", err && err[0] ? json_string(err) : json_null());
    backend_extra(a, o);
    pthread_mutex_unlock(&rb->mu);
    json_object_update(o, sw);
    json_decref(sw);
    plan_free(&have);
    reply_json(r, 200, o);
}

/* A job as GET returns it: the codec's form (policy/job.h) and, per
 * dimension, the tier that dimension's traffic crosses. Read lock. */
static json_t *job_json(const struct state *s, size_t i)
{
    const struct job *j = s->jobs[i];
    json_t *o = job_to_json(j, s->topo), *cls = json_array();
    for (int d = 0; d < j->ndims; d++) {
        int tier = s->job_tier[i][j->dim[d]];
        json_array_append_new(cls, json_pack("{ss so}", "class", job_dim_name(j->dim[d]), "tier",
                                             tier >= 0 ? json_string(topo_tier_name(tier)) : json_null()));
    }
    json_object_set_new(o, "classes", cls);
    return o;
}

/* A PUT body -> a job on the current topology (policy/job.h's codec). */
static struct job *job_parse(const struct state *s, const char *id, json_t *in, char *err, size_t errlen)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (job_from_json(j, id, in, s->topo, err, errlen) < 0) {
        free(j);
        return NULL;
    }
    return j;
}

/* A job registered here, into etcd (fenced), so that a new leader has it.
 * When etcd does not take it, it is not registered here either: a job only
 * this instance knew would vanish at the next takeover. */
static int job_store(struct api *a, const char *id, const char *body, size_t len, bool replaced, char *err,
                     size_t errlen)
{
    int rc = leader_job_store(a->ld, id, body, len, err, errlen);
    if (rc < 0 && !replaced) {
        pthread_rwlock_wrlock(&a->st->lock);
        state_job_del(a->st, id);
        pthread_rwlock_unlock(&a->st->lock);
    }
    return rc;
}

void api_jobs_replace(struct api *a, json_t *jobs)
{
    struct state *s = a->st;
    size_t put = 0, gone = 0;
    pthread_rwlock_wrlock(&s->lock);
    for (size_t i = s->njobs; i-- > 0;)
        if (!json_object_get(jobs, s->jobs[i]->name) && state_job_del(s, s->jobs[i]->name) == 0)
            gone++;
    const char *id;
    json_t *body;
    json_object_foreach(jobs, id, body) {
        char err[256];
        bool replaced;
        struct job *j = job_id_ok(id) ? job_parse(s, id, body, err, sizeof(err)) : NULL;
        if (!j)
            log_warn("ha: job '%s' from etcd: %s; skipped", id, job_id_ok(id) ? err : "not a job id");
        else if (state_job_put(s, j, &replaced) < 0) {
            job_free(j);
            free(j);
        } else {
            put++;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    events_add(a->ev, tf_now_real(), "job", "jobs replicated from etcd: %zu registered, %zu removed", put, gone);
}

static void do_jobs(struct api *a, const struct api_req *q, const char *id, struct api_reply *r)
{
    struct state *s = a->st;
    if (!id) {
        json_t *arr = json_array();
        pthread_rwlock_rdlock(&s->lock);
        for (size_t i = 0; i < s->njobs; i++)
            json_array_append_new(arr, job_json(s, i));
        pthread_rwlock_unlock(&s->lock);
        return reply_json(r, 200, json_pack("{so}", "jobs", arr));
    }
    bool put = strcmp(q->method, "PUT") == 0;
    if (!job_id_ok(id))
        return api_error(r, put ? 400 : 404, put ? "bad_request" : "not_found",
                         "job id: 1..%d characters of A-Za-z0-9_.-", JOB_NAME_MAX - 1);
    if (put) {
        json_error_t je;
        json_t *in = json_loadb(q->body ? q->body : "", q->body_len, JSON_REJECT_DUPLICATES, &je);
        if (!in) {
            reply_json(r, 400, json_pack("{s{ss ss si si si}}", "error", "code", "bad_json", "message", je.text,
                                         "line", je.line, "column", je.column, "position", je.position));
            return;
        }
        char err[256];
        /* Parsed and placed against the topology under the write lock, so
         * that a reload cannot slip in between. */
        pthread_rwlock_wrlock(&s->lock);
        struct job *j = job_parse(s, id, in, err, sizeof(err));
        bool replaced = false;
        int rc = j ? state_job_put(s, j, &replaced) : -EINVAL;
        json_t *out = rc == 0 ? job_json(s, (size_t)state_job_find(s, id)) : NULL;
        pthread_rwlock_unlock(&s->lock);
        json_decref(in);
        if (rc == 0 && a->ld && (rc = job_store(a, id, q->body ? q->body : "", q->body_len, replaced, err, sizeof(err))) < 0) {
            json_decref(out);
            return api_error(r, 503, "not_stored", "job '%s' %s: %s", id, replaced ? "replaced here but not in etcd "
                             "(a new leader would have the old one)" : "not registered", err);
        }
        if (rc == -ENOSPC) {
            job_free(j);
            free(j);
            return api_error(r, 413, "payload_too_large", "at most %d jobs", STATE_MAX_JOBS);
        }
        if (rc < 0) {
            if (j) {
                job_free(j);
                free(j);
                snprintf(err, sizeof(err), "job '%s': %s", id, strerror(-rc));
            }
            return api_error(r, 400, "bad_request", "%s", err);
        }
        events_add(a->ev, tf_now_real(), "job", "job %s %s", id, replaced ? "replaced" : "registered");
        return reply_json(r, replaced ? 200 : 201, out);
    }
    if (strcmp(q->method, "DELETE") == 0) {
        pthread_rwlock_wrlock(&s->lock);
        int rc = state_job_del(s, id);
        pthread_rwlock_unlock(&s->lock);
        if (rc < 0)
            return api_error(r, 404, "not_found", "no job '%s'", id);
        char err[256];
        if (a->ld && leader_job_store(a->ld, id, NULL, 0, err, sizeof(err)) < 0)
            return api_error(r, 503, "not_stored", "job '%s' deleted here, but not in etcd: %s (a new leader "
                             "would have it again)", id, err);
        events_add(a->ev, tf_now_real(), "job", "job %s deleted", id);
        return reply_json(r, 200, json_pack("{ss}", "deleted", id));
    }
    pthread_rwlock_rdlock(&s->lock);
    int i = state_job_find(s, id);
    json_t *o = i >= 0 ? job_json(s, (size_t)i) : NULL;
    pthread_rwlock_unlock(&s->lock);
    if (!o)
        return api_error(r, 404, "not_found", "no job '%s'", id);
    reply_json(r, 200, o);
}

/* ---- link drain (health.h) -------------------------------------------- */

static void do_drain(struct api *a, const struct api_req *q, const char *p, double now, struct api_reply *r)
{
    char from[API_LINK_NAME], to[API_LINK_NAME];
    bool on;
    if (!link_action(p, from, to, &on))   /* api_admit let only these through */
        return api_error(r, 404, "not_found", "no such endpoint: %.100s", p);
    int rc = health_drain(a->st, a->ev, from, to, on, q->peer, now);
    if (rc == -ENOENT)
        return api_error(r, 404, "not_found", "no link direction %s -> %s in the topology", from, to);
    if (rc == -EALREADY)
        return api_error(r, 409, "conflict", "%s -> %s is %s", from, to,
                         on ? "already drained by an operator" : "not drained");
    if (rc < 0)
        return api_error(r, 500, "internal", "%s", strerror(-rc));
    reply_json(r, 200, json_pack("{ss ss ss}", "from", from, "to", to, "drain", on ? "manual" : "none"));
}
