/*
 * history: see history.h. The buckets are a plain ring under a mutex; the
 * annotations are not copied here but picked, at read time, from the events
 * ring (controller/events.c), which already keeps every decision and fault.
 */
#include "controller/history.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "controller/events.h"
#include "controller/state.h"

void history_init(struct history *h)
{
    memset(h, 0, sizeof(*h));
    pthread_mutex_init(&h->mu, NULL);
}

void history_destroy(struct history *h)
{
    pthread_mutex_destroy(&h->mu);
}

void history_summary(const struct state *s, double now, struct history_summary *out)
{
    const struct topo *t = s->topo;
    uint32_t nd = 2 * t->nlinks;
    *out = (struct history_summary){.busiest = UINT32_MAX};
    double *bps = calloc(nd + 1, sizeof(double)), *ce = calloc(nd + 1, sizeof(double));
    uint32_t *nfat = calloc(nd + 1, sizeof(uint32_t));
    if (bps && ce && nfat) {
        state_dir_loads(s, now, bps, ce, nfat);
        uint64_t fat = 0, ndirs = 0;
        for (uint32_t d = 0; d < nd; d++) {
            out->down += !s->dirs[d].up;
            if (!topo_dir_is_switch(t, d))
                continue;
            double u = state_dir_util(s, d, bps[d]);
            if (out->busiest == UINT32_MAX || u > out->max_util) {
                out->max_util = u;
                out->busiest = d;
            }
            fat += nfat[d];
            ndirs++;
        }
        if (fat > 0)
            out->imbalance = nfat[out->busiest] / ((double)fat / (double)ndirs);
    }
    free(bps);
    free(ce);
    free(nfat);
}

void history_tick(struct history *h, struct state *s, uint64_t moves, uint64_t errors, double now)
{
    struct history_summary sum;
    pthread_rwlock_rdlock(&s->lock);
    history_summary(s, now, &sum);
    pthread_rwlock_unlock(&s->lock);

    pthread_mutex_lock(&h->mu);
    /* A new bucket only past the newest one; a clock stepped back folds
     * into the newest. */
    double start = floor(now / HISTORY_STEP) * HISTORY_STEP;
    struct history_bucket *b = &h->ring[h->head];
    if (h->n == 0 || start > b->ts) {
        h->head = h->n == 0 ? 0 : (h->head + 1) % HISTORY_LEN;
        if (h->n < HISTORY_LEN)
            h->n++;
        b = &h->ring[h->head];
        *b = (struct history_bucket){.ts = start};
    }
    if (sum.max_util > b->max_util)
        b->max_util = sum.max_util;
    if (sum.imbalance > b->imbalance)
        b->imbalance = sum.imbalance;
    if (sum.down > b->down)
        b->down = sum.down;
    b->moves += (uint32_t)(moves - h->moves_seen);
    b->backend_errors += (uint32_t)(errors - h->errors_seen);
    h->moves_seen = moves;
    h->errors_seen = errors;
    pthread_mutex_unlock(&h->mu);
}

/* Events worth a mark on the history chart: what changed the fabric or
 * what was installed, and what failed. Others (jobs, dry runs, probe name
 * conflicts) are in /api/v1/events. */
static const char *const annotated[] = {"rebalance", "harm", "unpinned", "pins_withdrawn", "adopt",
                                        "backend_error", "link_down", "link_up", "routing_down", "routing_up",
                                        "probe_stale", "probe_alive", "reload", "reload_failed", "start"};
/* The first five are actions: they changed what is installed. */
#define HISTORY_ACTIONS 5

static int annotated_kind(const char *kind)
{
    for (size_t i = 0; i < sizeof(annotated) / sizeof(annotated[0]); i++)
        if (strcmp(kind, annotated[i]) == 0)
            return (int)i;
    return -1;
}

json_t *history_json(struct history *h, struct events *ev, double now)
{
    json_t *buckets = json_array();
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->n; i++) {
        const struct history_bucket *b = &h->ring[(h->head + HISTORY_LEN - h->n + 1 + i) % HISTORY_LEN];
        json_array_append_new(buckets, json_pack("{sf sf sf sI sI sI}", "ts", b->ts, "max_util", b->max_util,
                                                 "imbalance", b->imbalance, "moves", (json_int_t)b->moves,
                                                 "down", (json_int_t)b->down, "backend_errors",
                                                 (json_int_t)b->backend_errors));
    }
    pthread_mutex_unlock(&h->mu);

    double window = HISTORY_STEP * HISTORY_LEN;
    json_t *all = events_json(ev, 0, EVENTS_MAX), *notes = json_array(), *last = json_null();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(all, "events"), i, e) {
        int k = annotated_kind(json_string_value(json_object_get(e, "kind")));
        if (k < 0)
            continue;
        if (k < HISTORY_ACTIONS) {
            json_decref(last);
            last = json_incref(e);
        }
        if (json_real_value(json_object_get(e, "ts")) >= now - window)
            json_array_append(notes, e);
    }
    json_decref(all);
    return json_pack("{sf sf so so so}", "step_s", HISTORY_STEP, "window_s", window, "buckets", buckets,
                     "annotations", notes, "last_action", last);
}
