/*
 * summary: the fabric at a glance, counted once for GET /api/v1/status and
 * for /metrics, so that the two cannot disagree on what a live flow, a
 * stale probe or a congested direction is.
 *
 * Counts: probes that have reported (fresh or stale, state_probe_stale),
 * flows that are not stale (fat, pinned, fat per traffic class), and link
 * directions (congested by config_congested, down, the highest
 * utilisation over every direction, host links included). Invariants: the
 * caller holds the state's read lock; every figure is taken at the same
 * `now`. Returns 0, or -ENOMEM when the directions' loads could not be
 * allocated (congested, down and max_util are then zero, the rest is
 * filled).
 */
#ifndef TF_SUMMARY_H
#define TF_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

#include "policy/classes.h"

struct config;
struct state;

struct summary {
    size_t probes, alive, stale;         /* probes that have reported; of them fresh, stale */
    size_t flows, fat, pinned;           /* flows that are not stale */
    uint64_t fat_by_class[CLASSES_MAX];  /* fat flows by class index (classes->c[]) */
    uint32_t dirs, congested, down;      /* link directions */
    double max_util;                     /* highest utilisation of any direction */
};

/* Fills *out from s at now. cfg NULL: the link directions are not looked
 * at (they need the thresholds and a pass over every flow's path), their
 * figures stay zero. */
int summary_get(const struct state *s, const struct config *cfg, double now, struct summary *out);

#endif
