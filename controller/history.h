/*
 * history: the last hour of the fabric at a glance, for the dashboard's
 * history panel (GET /api/v1/history): per HISTORY_STEP-second bucket the
 * highest link utilisation, the imbalance index, the flows moved, the link
 * directions down and the backend failures; plus the fabric summary that
 * /metrics shows as gauges (one computation for both).
 *
 * Invariants: at most HISTORY_LEN buckets, oldest overwritten, bucket
 * times strictly increasing (a bucket is opened only for a tick past the
 * newest one's end; a clock step back is folded into the newest bucket).
 * The ring has its own mutex, so the main loop writes while HTTP workers
 * read. history_tick takes the state's read lock itself; history_summary's
 * caller holds it. Moves and backend failures are the metrics counters'
 * increase since the previous tick (both start at 0 with the daemon), so
 * that they count exactly what /metrics counts.
 */
#ifndef TF_HISTORY_H
#define TF_HISTORY_H

#include <pthread.h>
#include <stdint.h>

#include <jansson.h>

struct state;
struct events;

#define HISTORY_STEP 10.0        /* seconds per bucket */
#define HISTORY_LEN 360          /* buckets kept: one hour */

/* The fabric right now, over switch-to-switch link directions (host links
 * are one flow's own link and cannot be balanced). imbalance: fat flows on
 * the busiest direction (highest utilisation) over the mean fat flows per
 * direction; 0 when no direction carries a fat flow. busiest: its
 * direction index, or UINT32_MAX when there are none. down: directions not
 * usable (state_dir.up false). */
struct history_summary {
    double max_util, imbalance;
    uint32_t busiest, down;
};

struct history_bucket {
    double ts;                   /* start of the bucket (a multiple of HISTORY_STEP) */
    double max_util, imbalance;  /* highest seen in the bucket */
    uint32_t moves;              /* flows moved by rounds in the bucket */
    uint32_t down;               /* most link directions down at once */
    uint32_t backend_errors;     /* backend failures in the bucket */
};

struct history {
    pthread_mutex_t mu;
    struct history_bucket ring[HISTORY_LEN];
    size_t head, n;              /* head: slot of the newest bucket */
    uint64_t moves_seen, errors_seen; /* the metrics counters at the previous tick */
};

void history_init(struct history *h);
void history_destroy(struct history *h);
/* Fills *out from the state. Caller holds the state's read lock. */
void history_summary(const struct state *s, double now, struct history_summary *out);
/* Folds the fabric now, and the increase of the metrics counters moves and
 * backend_errors (their values now: the caller reads them, so that history
 * needs nothing of metrics, which renders history_summary), into the
 * bucket of now. */
void history_tick(struct history *h, struct state *s, uint64_t moves, uint64_t backend_errors, double now);
/* {"step_s", "window_s", "buckets": [...] oldest first, "annotations": [the
 * events of the window that changed the fabric or failed, oldest first],
 * "last_action": the newest event that changed what is installed, or null}. */
json_t *history_json(struct history *h, struct events *ev, double now);

#endif
