/*
 * ratelog: says when a repeated log line may be written again, so that an
 * input refused every second (a probe's report, a request) is logged once
 * and then once per period with the count of the lines held back, never
 * every second. Lines are told apart by a key the caller builds from what
 * the line is about (sender, name, reason).
 *
 * Invariants: memory is fixed (RATELOG_SLOTS keys, hashed; a key whose slot
 * another key took is news again, so many distinct keys cost at most one
 * line each); at most RATELOG_BURST lines pass per period in all, whatever
 * the keys, and those held back by that cap are counted into the next line
 * that passes. Thread-safe (one mutex); zero-initialised with
 * RATELOG_INIT(period).
 */
#ifndef TF_RATELOG_H
#define TF_RATELOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define RATELOG_SLOTS 64
#define RATELOG_BURST 64         /* lines per period, all keys together */

struct ratelog {
    pthread_mutex_t mu;
    double period;               /* seconds between two lines of one key */
    struct {
        uint64_t key;            /* hash of the key, 0 empty */
        double last;             /* when its last line passed */
        uint64_t held;           /* lines held back since */
    } slot[RATELOG_SLOTS];
    double window;               /* start of the current period of the burst cap */
    unsigned passed;             /* lines passed in it */
    uint64_t capped;             /* lines the cap held back, for the next line that passes */
};

#define RATELOG_INIT(period_s) {.mu = PTHREAD_MUTEX_INITIALIZER, .period = (period_s)}

/* Whether the line for key may be written at now (seconds, any clock that
 * does not go back); when it may, *held is how many lines were held back
 * since the last one written (of this key, and any the cap held back). */
bool ratelog_pass(struct ratelog *r, const char *key, double now, uint64_t *held);

#endif
