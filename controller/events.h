/*
 * events: a bounded ring of recent decisions and faults (rebalances, links
 * going down, probes going stale, reloads, backend errors), newest last.
 *
 * Invariants: at most EVENTS_MAX entries, ids strictly increasing from 1;
 * the oldest entry is overwritten when full. Every call takes the ring's own
 * mutex, so any thread may add or read.
 */
#ifndef TF_EVENTS_H
#define TF_EVENTS_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

#define EVENTS_MAX 1024
#define EVENTS_MSG_LEN 192

struct event {
    uint64_t id;
    double ts;
    char kind[16];
    char message[EVENTS_MSG_LEN];
    uint32_t moved;
    double util_before, util_after;
};

struct events {
    pthread_mutex_t mu;
    struct event ring[EVENTS_MAX];
    uint64_t next_id;            /* id of the next event; count = next_id - 1 */
};

void events_init(struct events *e);
void events_destroy(struct events *e);
void events_add(struct events *e, double ts, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void events_add_rebalance(struct events *e, double ts, const char *kind, uint32_t moved,
                          double before, double after, const char *msg);
/* {"events": [...]}: events with id > since, at most limit (newest). */
json_t *events_json(struct events *e, uint64_t since, unsigned limit);
uint64_t events_last_id(struct events *e);

#endif
