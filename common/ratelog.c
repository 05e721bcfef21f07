/*
 * ratelog: see ratelog.h. Keys are hashed (FNV-1a) to a slot; two keys in
 * one slot take turns, each counted as new, which errs towards logging.
 */
#include "common/ratelog.h"

static uint64_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1;
}

bool ratelog_pass(struct ratelog *r, const char *key, double now, uint64_t *held)
{
    uint64_t h = key_hash(key);
    pthread_mutex_lock(&r->mu);
    if (now >= r->window + r->period) {
        r->window = now;
        r->passed = 0;
    }
    unsigned i = (unsigned)(h % RATELOG_SLOTS);
    bool same = r->slot[i].key == h;
    bool pass = (!same || now >= r->slot[i].last + r->period) && r->passed < RATELOG_BURST;
    if (!pass) {
        if (same)
            r->slot[i].held++;
        else
            r->capped++;
    } else {
        *held = (same ? r->slot[i].held : 0) + r->capped;
        r->slot[i].key = h;
        r->slot[i].last = now;
        r->slot[i].held = 0;
        r->capped = 0;
        r->passed++;
    }
    pthread_mutex_unlock(&r->mu);
    return pass;
}
