/*
 * api_flows: GET /api/v1/flows (filtered, ordered by rate, paged) and GET
 * /api/v1/classes (each traffic class's load and the tier it is confined
 * to). Built under the state's read lock; flows that went stale are shown
 * as such in /flows and left out of /classes' sums.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/reportspec.h"
#include "common/util.h"
#include "controller/api_internal.h"
#include "controller/state.h"
#include "policy/classes.h"

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

void api_get_flows(struct api *a, const struct api_req *q, const struct api_match *mt, double now, struct api_reply *r)
{
    (void)mt;
    const char *cls = q->arg(q->argctx, "class");
    const char *via = q->arg(q->argctx, "via"), *probe = q->arg(q->argctx, "probe");
    uint64_t limit = API_FLOWS_PAGE, offset = 0;
    int fat = -1;
    if (api_arg_bool(q, "fat", false, &fat, r) < 0 || api_arg_u64(q, "limit", 0, API_FLOWS_LIMIT_MAX, &limit, r) < 0 ||
        api_arg_u64(q, "offset", 0, STATE_MAX_FLOWS, &offset, r) < 0)
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
        if ((fat >= 0 && f->fat != (fat == 1)) || (want_cls >= 0 && f->cls != want_cls) ||
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
    api_reply_json(r, 200, json_pack("{sI sI sI sI so so}", "total", (json_int_t)total, "matched", (json_int_t)m,
                                     "returned", (json_int_t)n, "offset", (json_int_t)offset, "next_offset", next,
                                     "flows", arr));
}

void api_get_classes(struct api *a, const struct api_req *q, const struct api_match *mt, double now,
                     struct api_reply *r)
{
    (void)q;
    (void)mt;
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
    api_reply_json(r, 200, json_pack("{so}", "classes", arr));
}
