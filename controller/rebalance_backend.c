/*
 * rebalance_backend: the backend belongs to the rebalance module. Every call
 * into it is made under rb->mu (backend.h: one caller at a time), which is
 * also what keeps a round, a reload and a request from ever seeing two
 * backends, or one half open. Request handlers ask here (the routes, the
 * backend's own state and series) instead of taking the lock themselves;
 * the daemon swaps the backend here on reload and on a role change.
 * Readers of /status and /metrics wait for a round only when the backend
 * has state of its own to show (be_own, under sum_mu).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/rebalance_int.h"
#include "controller/backend.h"
#include "controller/config.h"
#include "controller/events.h"

/* Under mu: the kind the API names, and whether readers wait for a round. */
static void set_backend(struct rebalance *rb, struct backend *be, const char *kind)
{
    rb->be = be;
    pthread_mutex_lock(&rb->sum_mu);
    tf_strlcpy(rb->be_kind, kind ? kind : be ? backend_kind(be) : "none", sizeof(rb->be_kind));
    rb->be_own = be && strcmp(rb->be_kind, "bgp") == 0;
    pthread_mutex_unlock(&rb->sum_mu);
}

void rebalance_backend_init(struct rebalance *rb, struct backend *be)
{
    set_backend(rb, be, NULL);
}

int rebalance_backend_swap(struct rebalance *rb, const char *kind, rebalance_open_fn open, void *arg, char *err,
                           size_t errlen)
{
    struct backend *be = NULL;
    pthread_mutex_lock(&rb->mu);
    int rc = open(arg, &be, err, errlen);
    if (rc == 0) {
        struct backend *old = rb->be;
        set_backend(rb, be, kind);
        backend_close(old);   /* after the new one opened: make before break */
    }
    pthread_mutex_unlock(&rb->mu);
    return rc;
}

struct backend *rebalance_backend_take(struct rebalance *rb)
{
    pthread_mutex_lock(&rb->mu);
    struct backend *be = rb->be;
    set_backend(rb, NULL, "none");
    pthread_mutex_unlock(&rb->mu);
    return be;
}

static bool backend_own(struct rebalance *rb)
{
    pthread_mutex_lock(&rb->sum_mu);
    bool own = rb->be_own;
    pthread_mutex_unlock(&rb->sum_mu);
    return own;
}

json_t *rebalance_backend_json(struct rebalance *rb)
{
    if (!backend_own(rb))
        return NULL;
    pthread_mutex_lock(&rb->mu);
    json_t *x = rb->be ? backend_json(rb->be) : NULL;
    pthread_mutex_unlock(&rb->mu);
    return x;
}

int rebalance_backend_metrics(struct rebalance *rb, FILE *f)
{
    if (!backend_own(rb))
        return 0;
    pthread_mutex_lock(&rb->mu);
    int rc = rb->be ? backend_metrics(rb->be, f) : 0;
    pthread_mutex_unlock(&rb->mu);
    return rc;
}

json_t *rebalance_routes_json(struct rebalance *rb)
{
    struct plan have;
    plan_init(&have);
    pthread_mutex_lock(&rb->mu);
    /* "none" installs nothing: what it shows is the plan the last round
     * wanted. The others are read back from where they install. */
    bool desired = !rb->be || strcmp(rb->be_kind, "none") == 0;
    int rc = desired ? plan_copy(&have, &rb->last) : backend_read(rb->be, &have);
    const char *err = rc < 0 && rb->be ? backend_error(rb->be) : NULL;
    json_t *sw = plan_json(&have);
    json_t *o = json_pack("{ss ss so}", "backend", rb->be_kind, "source", desired ? "desired" : "installed",
                          "error", err && err[0] ? json_string(err) : json_null());
    json_t *x = rb->be ? backend_json(rb->be) : NULL;
    if (x)
        json_object_set_new(o, "bgp", x);
    pthread_mutex_unlock(&rb->mu);
    json_object_update(o, sw);
    json_decref(sw);
    plan_free(&have);
    return o;
}

/* At most this many routing events per sync; a spine going down turns many
 * directions at once and one line says the rest. */
#define REBALANCE_ROUTING_EVENTS 16

int rebalance_routing(struct rebalance *rb, double now)
{
    pthread_mutex_lock(&rb->mu);   /* the backend is ours to call only under mu */
    struct state *s = rb->st;
    uint32_t nd = rb->be ? 2 * s->topo->nlinks : 0;
    uint8_t *down = nd ? calloc(nd + 1, 1) : NULL;
    char notes[2048];
    int rc = down ? backend_routing(rb->be, down, nd, notes, sizeof(notes)) : -EOPNOTSUPP;
    if (rc < 0) {
        pthread_mutex_unlock(&rb->mu);
        free(down);
        return rc == -EOPNOTSUPP ? 0 : rc;
    }
    int went_down = 0, evs = 0, more = 0;
    pthread_rwlock_wrlock(&s->lock);
    const struct topo *t = s->topo;
    for (uint32_t d = 0; d < nd; d++) {
        bool unseen_changed = state_dir_set_route_unseen(s, d, down[d] == BACKEND_DIR_UNSEEN, now);
        if (!state_dir_set_route_down(s, d, down[d] == BACKEND_DIR_DOWN, now) && !unseen_changed)
            continue;
        went_down += down[d] != 0;
        if (evs++ >= REBALANCE_ROUTING_EVENTS) {
            more++;
            continue;
        }
        const char *a = nm(t, topo_dir_from(t, d)), *b = nm(t, topo_dir_to(t, d));
        if (down[d] == BACKEND_DIR_DOWN)
            events_add(rb->ev, now, "routing_down", "%s -> %s: the switches' routing withdrew it (interface down "
                       "or path lost); pins on it are removed and it is not used", a, b);
        else if (down[d] == BACKEND_DIR_UNSEEN)
            events_add(rb->ev, now, "routing_down", "%s -> %s: out of the controller's view (its session with a "
                       "switch at either end is down); the flows a path through it may carry are left to the "
                       "switches' ECMP (their pins removed) until it is back", a, b);
        else
            events_add(rb->ev, now, "routing_up", "%s -> %s: routing offers it again; usable after %.1f s hold-down",
                       a, b, s->link_holddown);
    }
    pthread_rwlock_unlock(&s->lock);
    if (more)
        events_add(rb->ev, now, "routing_down", "%d more direction changes from routing not listed", more);
    for (char *line = notes, *nl; *line; line = nl + 1) {
        if (!(nl = strchr(line, '\n')))
            break;
        *nl = '\0';
        events_add(rb->ev, now, "pins_withdrawn", "%s", line);
        went_down++;
    }
    pthread_mutex_unlock(&rb->mu);
    free(down);
    return went_down;
}

struct adopt_ctx {
    struct state *s;
    double now;
    size_t n, full;
};

static void adopt_one(void *arg, const struct planbuild_flow *pf, uint32_t src, uint32_t dst, uint64_t path)
{
    struct adopt_ctx *a = arg;
    struct state_flow_key k = {.af = pf->af, .proto = pf->proto, .sport = pf->sport, .dport = pf->dport};
    memcpy(k.src, pf->src, 16);
    memcpy(k.dst, pf->dst, 16);
    bool inserted = false;
    struct state_flow *f = state_flow_upsert(a->s, &k, &inserted);
    if (!f) {
        a->full++;
        return;
    }
    if (inserted) {
        f->probe = f->egress = TOPO_NONE;
        f->src_node = src;
        f->dst_node = dst;
        f->last_seen = a->now;   /* its grace starts now */
        state_flow_classify(a->s, f);
    }
    f->pin = (int64_t)path;
    f->pinned = true;
    state_flow_set_path(a->s, f, f->pin);
    /* Held as if moved now: whoever pinned it (a predecessor, this
     * tierflowd before a restart) held it for min_move_interval after its
     * move, and when is not known. A standby's own state has no move of it,
     * and a takeover's first rounds moved an adopted pin that its leader
     * held, on a view the leader had ignored (test_ha). A failed path still
     * frees it (state_flow_may_move). */
    f->last_moved = a->now;
    a->n++;
}

int rebalance_adopt(struct rebalance *rb, double now)
{
    pthread_mutex_lock(&rb->mu);
    if (!rb->be) {
        pthread_mutex_unlock(&rb->mu);
        return 0;
    }
    struct plan have;
    plan_init(&have);
    int rc = backend_read(rb->be, &have);
    if (rc < 0) {
        events_add(rb->ev, now, "backend_error", "reading what is installed at start: %s; nothing adopted",
                   backend_error(rb->be));
        plan_free(&have);
        pthread_mutex_unlock(&rb->mu);
        return rc;
    }
    struct plan_opts o = {.prio_min = (uint32_t)rb->cfg->rule_prio_min, .prio_max = (uint32_t)rb->cfg->rule_prio_max,
                          .table_base = (uint32_t)rb->cfg->table_base};
    struct adopt_ctx a = {.s = rb->st, .now = now};
    size_t skipped = 0;
    pthread_rwlock_wrlock(&rb->st->lock);
    rc = planbuild_pins(rb->st->topo, &o, &have, adopt_one, &a, &skipped);
    rb->st->gen++;
    pthread_rwlock_unlock(&rb->st->lock);
    size_t odd = skipped + a.full;
    if (rc == 0 && (a.n || odd)) {
        char more[96] = "";
        if (odd)
            snprintf(more, sizeof(more), "; %zu rule set%s not understood will be removed by the first round", odd,
                     odd == 1 ? "" : "s");
        events_add(rb->ev, now, "adopt",
                   "adopted %zu pinned flow%s found installed (kept until the probes confirm them or "
                   "thresholds.pin_grace ends)%s", a.n, a.n == 1 ? "" : "s", more);
    }
    if (rc == 0) {
        plan_free(&rb->last);
        rb->last = have;
    } else {
        plan_free(&have);
    }
    pthread_mutex_unlock(&rb->mu);
    return rc;
}
