/*
 * events: see events.h.
 */
#include "controller/events.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

void events_init(struct events *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->mu, NULL);
    e->next_id = 1;
}

void events_destroy(struct events *e)
{
    pthread_mutex_destroy(&e->mu);
}

static void push(struct events *e, const struct event *ev)
{
    pthread_mutex_lock(&e->mu);
    struct event *slot = &e->ring[(e->next_id - 1) % EVENTS_MAX];
    *slot = *ev;
    slot->id = e->next_id++;
    pthread_mutex_unlock(&e->mu);
}

void events_add(struct events *e, double ts, const char *kind, const char *fmt, ...)
{
    struct event ev = {.ts = ts};
    tf_strlcpy(ev.kind, kind, sizeof(ev.kind));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.message, sizeof(ev.message), fmt, ap);
    va_end(ap);
    log_info("event %s: %s", ev.kind, ev.message);
    push(e, &ev);
}

void events_add_rebalance(struct events *e, double ts, const char *kind, uint32_t moved,
                          double before, double after, const char *msg)
{
    struct event ev = {.ts = ts, .moved = moved, .util_before = before, .util_after = after};
    tf_strlcpy(ev.kind, kind, sizeof(ev.kind));
    tf_strlcpy(ev.message, msg, sizeof(ev.message));
    if (moved)
        log_info("event %s: %s", ev.kind, ev.message);
    push(e, &ev);
}

uint64_t events_last_id(struct events *e)
{
    pthread_mutex_lock(&e->mu);
    uint64_t id = e->next_id - 1;
    pthread_mutex_unlock(&e->mu);
    return id;
}

json_t *events_json(struct events *e, uint64_t since, unsigned limit)
{
    json_t *arr = json_array();
    pthread_mutex_lock(&e->mu);
    uint64_t last = e->next_id - 1;
    uint64_t first = last > EVENTS_MAX ? last - EVENTS_MAX + 1 : 1;
    if (first <= since)
        first = since + 1;
    if (limit && last >= first && last - first + 1 > limit)
        first = last - limit + 1;
    for (uint64_t id = first; id <= last; id++) {
        const struct event *ev = &e->ring[(id - 1) % EVENTS_MAX];
        json_array_append_new(arr, json_pack("{sI sf ss ss sI sf sf}", "id", (json_int_t)ev->id,
                                             "ts", ev->ts, "kind", ev->kind, "message", ev->message,
                                             "moved", (json_int_t)ev->moved, "max_util_before",
                                             ev->util_before, "max_util_after", ev->util_after));
    }
    pthread_mutex_unlock(&e->mu);
    return json_pack("{so}", "events", arr);
}
