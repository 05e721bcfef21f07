/*
 * rebalance: one round of the control loop: find congested link directions,
 * estimate the fat flows' demands, re-assign them with the tierflow algorithm
 * (bounded moves, hysteresis, minimum time between two moves of a flow), turn
 * the pinned flows into a plan and have the backend install it.
 *
 * Invariants: one round at a time (mu); the state's write lock is held only
 * to snapshot inputs and to record pins, never while the backend works; a
 * dry run changes nothing (no pins, no backend call). Flows whose path
 * crosses a direction that is down are not movable-limited: they always move
 * (assign's rule for unusable paths). The plan always holds every pinned,
 * live flow, so the backend converges to the full desired state each round,
 * and the class rules of DESIGN 2.5 (a DSCP class confined to a subset of
 * spines -> a rule to a weighted multipath route over them; see
 * rebalance_class_rules_build); class `via` subsets also bound the
 * assignment.
 *
 * The backend is the module's own: only a round, and the functions below
 * under "The backend", call into it, always under mu. Request handlers and
 * the daemon's reload ask through them and never take mu themselves. The
 * module's files and how a round is cut: rebalance_int.h.
 */
#ifndef TF_REBALANCE_H
#define TF_REBALANCE_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/backend.h"
#include "controller/plan.h"

struct state;
struct events;
struct metrics;
struct backend;
struct config;
struct rebalance_group;

struct rebalance_summary {
    bool valid, dry_run, applied;
    double ts, duration_s, util_before, util_after;
    uint32_t moved, congested;
    char error[256];             /* why a round that was to act did not ("" = it did) */
};

struct rebalance {
    pthread_mutex_t mu;
    struct state *st;
    struct events *ev;
    struct metrics *m;
    struct backend *be;          /* may be NULL (tests): plan only; under mu */
    char be_kind[16];            /* the kind the API names (rebalance_backend_swap); sum_mu to
                                    write, mu or sum_mu to read */
    bool be_own;                 /* the backend has state of its own to show (bgp); sum_mu */
    const struct config *cfg;
    struct plan last;            /* last plan handed to the backend */
    pthread_mutex_t sum_mu;      /* guards sum, be_*: readers never wait for a round */
    struct rebalance_summary sum;
    bool be_healthy;
    char be_error[256];
    struct backend_unsup unsup[BACKEND_UNSUP_MAX];  /* from the last apply; sum_mu */
    size_t nunsup;
    char fail_cause[256];        /* the last failure an event was written for
                                    ("" after a round that acted); under mu */
    /* Per link direction (2 * nlinks; sized by the round, under mu). */
    uint32_t nd;
    double *moved_at;            /* a choice move last touched it then (0 never): the flows fat at
                                    that move stay put while it settles (rebalance_dir_settling) */
    uint8_t *hot_seen;           /* contended at the last round */
    uint64_t seen_gen;           /* state gen rebalance_contended last looked at */
    /* Groups of flows a round moved by choice, judged against what they had
     * before (see judge_groups in rebalance.c); under mu. */
    struct rebalance_group *groups;
    size_t ngroups;
    /* Called right before a plan is handed to the backend (NULL: none):
     * anything but 0 and the round applies nothing, its error is why
     * (leader.h's fence: only the proven leader touches a switch). */
    int (*fence)(void *arg, char *why, size_t whylen);
    void *fence_arg;
};

int  rebalance_init(struct rebalance *rb, struct state *st, struct events *ev, struct metrics *m,
                    struct backend *be, const struct config *cfg);
void rebalance_destroy(struct rebalance *rb);
/* Runs a round. out (may be NULL) receives the JSON result documented in
 * docs/api.md (new reference). Returns 0 or -errno (backend failure: the
 * result says so, installed routes are kept). */
int  rebalance_run(struct rebalance *rb, double now, bool dry_run, json_t **out);
/* The loop's round. After a round that moved flows, the probes' next reports
 * still describe the old paths (they cover an interval that began before the
 * change), so for thresholds.settle_intervals intervals the directions a
 * choice move touched (the moved flows' old and new paths) settle: an
 * automatic round moves no flow that crosses one, except off a failed link;
 * moving them on stale loads is what made the fabric oscillate. A collision
 * elsewhere is fixed at once. The round also judges its own earlier moves
 * (docs/policy.md "Do no harm"): a moved flow whose rate did not gain
 * thresholds.move_gain, with its new path still contended, is backed off
 * (min_move_interval doubling per futile move, up to thresholds.backoff_max);
 * a group of flows a round moved that is thresholds.harm_margin worse than
 * before, over thresholds.harm_intervals, has its pins withdrawn (back to
 * ECMP), with a "harm" event. */
int  rebalance_auto(struct rebalance *rb, double now);
/* Whether a round now would find a contended direction that was not
 * contended at the last round and that no recent move touched: what a probe
 * report just revealed. Cheap when the state has not changed since the last
 * call. The main loop runs a round thresholds.react_window after it says so. */
bool rebalance_contended(struct rebalance *rb, double now);
/* Whether automatic rounds hold their choice moves for the warm-up
 * (thresholds.warmup and state_view_warming): what a round applies and
 * what /status says. Caller holds the state's lock. */
bool rebalance_warming(const struct config *c, const struct state *s, double now);
/* Takes what the switches' routing says from the backend (backend_routing)
 * into the state's link directions (state_dir_set_route_down), with an
 * event per change and per pin the backend withdrew. Returns how many
 * directions went down plus pins withdrawn (> 0: a round now would help),
 * 0 for backends without a routing watch, or -errno. */
int  rebalance_routing(struct rebalance *rb, double now);
/* The switches and rule selectors the backend refused in the last round it
 * applied (out holds max); how many. */
size_t rebalance_unsupported(struct rebalance *rb, struct backend_unsup *out, size_t max);
/* At start: reads back what the backend has installed (its own rules and
 * routes) and turns every pinned flow it expresses into a pin in the state
 * (planbuild_pins), kept until the probes confirm the flow or its grace
 * ends, so that the first round installs the same state instead of
 * flapping it. An "adopt" event says how many. 0 or -errno. */
int  rebalance_adopt(struct rebalance *rb, double now);
/* Copy of the last summary and backend health. */
struct rebalance_summary rebalance_last(struct rebalance *rb, bool *healthy, char *err, size_t errlen);
/* Runs fn(arg) while no round runs (under mu): what a round reads of the
 * configuration (thresholds.*) changes only so, on a reload. */
void rebalance_between_rounds(struct rebalance *rb, void (*fn)(void *arg), void *arg);

/* ---- The backend (rebalance_backend.c) ---- */

/* Opens the new backend into *be (0), or says why in err (-errno, nothing
 * to close). Runs under mu: see rebalance_backend_swap. */
typedef int (*rebalance_open_fn)(void *arg, struct backend **be, char *err, size_t errlen);
/* Replaces the backend in one step under mu: open(arg, ...) is called with
 * mu held, so that no round applies between its reading what the switches
 * have and the swap, and whatever else must change with the backend (the
 * daemon's reload: the topology) can change inside open, atomically for the
 * rounds. On open's failure the old backend stays; on success the old one
 * is closed after the new one opened. kind is the name /routes and the API
 * give it (NULL: the backend's own kind; the daemon passes the configured
 * kind, also while a standby holds "none"). 0 or open's -errno. */
int rebalance_backend_swap(struct rebalance *rb, const char *kind, rebalance_open_fn open, void *arg, char *err,
                           size_t errlen);
/* Hands the backend back to the caller (to withdraw and close it at exit);
 * the rounds go on without one. */
struct backend *rebalance_backend_take(struct rebalance *rb);
/* The /api/v1/routes object (docs/api.md): the backend's kind, source
 * "desired" (the "none" kind: the last round's plan) or "installed" (read
 * back), error, the backend's own "bgp" object, and the switches. */
json_t *rebalance_routes_json(struct rebalance *rb);
/* The backend's own state (the bgp kind's speaker, sessions and
 * announcements) or NULL. Waits for a running round only when the backend
 * has such state. */
json_t *rebalance_backend_json(struct rebalance *rb);
/* The backend's own Prometheus series to f (none for most kinds: 0 at
 * once). 0 or -errno. */
int rebalance_backend_metrics(struct rebalance *rb, FILE *f);

#endif
