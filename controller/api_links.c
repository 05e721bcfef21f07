/*
 * api_links: the fabric's views and its one write to a link: GET
 * /api/v1/topology (nodes, links, each direction's load, congestion and
 * health), GET /api/v1/paths (the ECMP paths between two nodes with their
 * hottest hop and fat flows) and POST /api/v1/links/{a}/{b}/drain|undrain
 * (health.h). A view is built under the state's read lock from one
 * state_dir_loads pass (struct loads), so that its directions agree.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/api_internal.h"
#include "controller/config.h"
#include "controller/health.h"
#include "controller/state.h"

#define API_MAX_PATHS 256 /* paths /paths lists; its count is the total */

/* Every direction's load, CE fraction and fat flows (state_dir_loads). */
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

/* A direction's health (health.h) as /topology and /status show it. */
static const char *const drain_name[] = {"none", "auto", "manual"};
json_t *api_health_json(const struct state_dir *sd)
{
    return json_pack("{sf sb sf ss ss}", "value", sd->health, "suspect", sd->suspect, "confidence", sd->health_conf,
                     "drain", drain_name[sd->drain < 3 ? sd->drain : 0], "evidence", sd->health_why);
}

static json_t *dir_json(struct state *s, const struct loads *l, uint32_t d, const struct config *cfg)
{
    const struct topo *t = s->topo;
    const struct state_dir *sd = &s->dirs[d];
    double u = state_dir_util(s, d, l->bps[d]);
    double now = tf_now_real();
    const char *why = state_dir_down_reason(s, d, now);
    json_t *o = json_pack("{sI ss ss sf sf sf sI sb so sb sb sI sb sf}", "dir", (json_int_t)d, "from",
                     t->nodes[topo_dir_from(t, d)].name, "to", t->nodes[topo_dir_to(t, d)].name, "util", u,
                     "bps", l->bps[d], "ce_frac", l->ce[d], "drops", (json_int_t)sd->drops, "up", sd->up,
                     "down_reason", why ? json_string(why) : json_null(), "closed", state_dir_closed(s, d, now),
                     "congested", config_congested(cfg, u, l->ce[d]), "fat_flows", (json_int_t)l->nfat[d],
                     "measured", state_dir_measured(s, d, l->bps[d], now), "last_update", sd->last_update);
    /* The queue at the sender's last report (the ramp rule reads the
     * smaller of the last two): null when no fresh report of the sender's
     * own gave it. */
    double q = state_dir_queue_delay(s, d, false, now);
    json_object_set_new(o, "queue_delay", q >= 0 ? json_real(q) : json_null());
    json_object_set_new(o, "health", api_health_json(sd));
    return o;
}

static json_t *topology_json(struct api *a, double now)
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

void api_get_topology(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                      struct api_reply *r)
{
    (void)q;
    (void)m;
    api_reply_json(r, 200, topology_json(a, now));
}

void api_get_paths(struct api *a, const struct api_req *q, const struct api_match *m, double now, struct api_reply *r)
{
    (void)m;
    const char *src = api_arg_required(q, "src", r), *dst = src ? api_arg_required(q, "dst", r) : NULL;
    if (!dst)
        return;
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
    api_reply_json(r, 200, json_pack("{ss ss sI so}", "src", src, "dst", dst, "count", (json_int_t)count, "paths", paths));
}

/* ---- link drain (health.h) -------------------------------------------- */

/* The direction m->seg[0] -> m->seg[1] (the route's {a} and {b}). */
static void drain(struct api *a, const struct api_req *q, const struct api_match *m, bool on, double now,
                  struct api_reply *r)
{
    const char *from = m->seg[0], *to = m->seg[1];
    int rc = health_drain(a->st, a->ev, from, to, on, q->peer, now);
    if (rc == -ENOENT)
        return api_error(r, 404, "not_found", "no link direction %s -> %s in the topology", from, to);
    if (rc == -EALREADY)
        return api_error(r, 409, "conflict", "%s -> %s is %s", from, to,
                         on ? "already drained by an operator" : "not drained");
    if (rc < 0)
        return api_error(r, 500, "internal", "%s", strerror(-rc));
    api_reply_json(r, 200, json_pack("{ss ss ss}", "from", from, "to", to, "drain", on ? "manual" : "none"));
}

void api_post_drain(struct api *a, const struct api_req *q, const struct api_match *m, double now, struct api_reply *r)
{
    drain(a, q, m, true, now, r);
}

void api_post_undrain(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                      struct api_reply *r)
{
    drain(a, q, m, false, now, r);
}
