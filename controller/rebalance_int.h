/*
 * rebalance_int: what the files of the rebalance family share and nothing
 * else includes (in the manner of BIRD's nest/route.h fronting rt-table.c,
 * rt-attr.c...). rebalance.h is the module's face; a round is cut along its
 * seams:
 *   rebalance.c          the round's steps (gather, assign, plan, apply,
 *                        report) and the loop's entry points;
 *   rebalance_snapshot.c the round's inputs, under the state's read lock:
 *                        loads, congestion, the fat flows, pins kept
 *                        without telemetry, demand estimates;
 *   rebalance_judge.c    do no harm: verdicts on earlier moves, the groups
 *                        of moves judged over harm_intervals, settling, and
 *                        the gate on an automatic round's choice moves;
 *   rebalance_pins.c     the plan from the round's paths (class rules,
 *                        holds, per-destination grouping) and the pins
 *                        written back once the backend took it;
 *   rebalance_backend.c  the backend, owned here: swapped on reload and
 *                        role change, read for /routes and /status, its
 *                        routing watch and the adoption at start.
 * Invariants: everything here runs under rb->mu; what says "read lock" or
 * "write lock" also holds the state's lock so. struct round lives for one
 * round and owns every buffer it points to (rebalance_round_free).
 */
#ifndef TF_REBALANCE_INT_H
#define TF_REBALANCE_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/plan.h"
#include "controller/planbuild.h"
#include "controller/rebalance.h"
#include "controller/state.h"
#include "policy/assign.h"
#include "policy/classes.h"
#include "policy/topo.h"

/* Non-fat load on a direction, as a share of its capacity, from which a lone
 * fat flow there counts as contended. */
#define REBALANCE_HOT_BG_SHARE 0.2
/* A fat flow is still ramping when its rate this interval is this much above
 * its rate the interval before (or it had none): the ramp rule's evidence
 * that it has not reached its demand (rebalance_dir_congested). */
#define REBALANCE_RAMP_GAIN 0.2
/* The ramp rule's queue delay must hold over the sender's last two reports
 * (a standing queue, CoDel's minimum over an interval): one report's
 * backlog can be a burst, and in the gray lab one moved application-limited
 * flows (docs/lab.md, "The ramp rule and the qdisc backlog"). */
#define REBALANCE_QUEUE_STANDING true

/* A moved flow under this share of its natural demand at its move and over
 * the rounds its group is judged on was starved before and after: a harm
 * withdrawal keeps its pin (rebalance_judge_groups). */
#define REBALANCE_STARVED 0.5

/* rebalance_flow_starved's bounds: reported for this long (s), this share
 * of its path's capacity or more, in packets of this many bytes on average
 * or more (an elephant's ACK stream, 1-2% of its rate in 66-byte frames,
 * taken in made four directions of bench 50's fat tree look contended). */
#define REBALANCE_STARVED_AGE 0.5
#define REBALANCE_STARVED_FLOOR 0.01
#define REBALANCE_STARVED_PKT_BYTES 512

/* One fat flow of the snapshot. */
struct snap {
    struct state_flow_key k;
    uint64_t id;
    uint32_t src, dst;
    double gbps;
    int cls;
    int64_t path, pin;
    double meas;                 /* measured Gb/s (gbps may be the estimated demand) */
    double nat;                  /* Hedera's natural demand (its hosts' NIC share), 0 unknown */
    double move_bps;             /* its rate when last moved by choice, 0: no verdict due */
    double moved_at;
    bool seen_moved;             /* a report has placed it on its pin since moved_at */
    bool movable, on_hot;
    bool ramp;                   /* still ramping (rebalance_flow_ramping) */
    bool young;                  /* moved by choice within min_move_interval: its rate still climbs */
    bool climbing;               /* young and under the probes' fat threshold since the move (a
                                    burst of reordering, a timeout): in the round all the same,
                                    on its pin at its natural demand, so that no round takes its
                                    new path for room; judged once the probes call it fat again */
    bool held;                   /* unmovable for a while only (min_move_interval, settling), not backed off */
    bool hold;                   /* unpinned, to be pinned where it is (degraded fabric) */
    bool withdrawn;              /* its pin goes this round (harm): not held, not pinned */
    bool starved;                /* below the fat threshold, taken in as starved (rebalance_flow_starved) */
    int8_t verdict;              /* on its last choice move: 1 helped, -1 futile, 0 none */
    uint32_t dirs[TOPO_MAX_HOPS];
    int ndirs;
};

struct round {
    const struct topo *t;
    uint32_t nd;
    double *bps, *ce, *bg;
    /* The background the decision counts (the assignment, do no harm, the
     * max utilisation a round reports): rebalance_bg_counted of bg. */
    double *bgc;
    uint32_t *nfat;
    uint8_t *down, *hot;
    /* Per direction, the ramp rule's inputs: its fat flows still ramping,
     * and its fat flows' load with those at their natural demands (Gb/s;
     * set only where the rule may apply, rebalance_ramp_candidate). */
    uint32_t *nramp;
    double *proj;
    bool nat_done;               /* every f[].nat is set (rebalance_natural) */
    uint8_t *closed;             /* out of the backend's view: no new pin through it (state_dir_closed) */
    bool any_closed;             /* some closed[] set: else no path needs checking for it */
    uint8_t *unseen;             /* out of view now (state route_unseen), not merely in the hold-down after */
    bool any_unseen;
    uint32_t nhot;               /* contended directions: the assignment runs only if > 0 */
    bool degraded;               /* some direction is down (probe, routing or hold-down) */
    bool returning;              /* some direction is in its hold-down: routing or its probe gave it back */
    bool warming;                /* the view is warming up: a start, or telemetry back (state_view_warming) */
    bool automatic, dry_run;
    struct snap *f;
    size_t n;
    int32_t *snap_of;            /* state flow index -> index in f, -1 none */
    /* Pins kept without telemetry: pinned flows not in f (unobserved or no
     * longer fat, but for climbing ones) seen within thresholds.pin_grace,
     * on a live path. */
    struct snap *kept;
    size_t nkept;
    /* Pins to remove after the plan is applied, with why. */
    struct unpin {
        struct state_flow_key k;
        uint64_t id;
        enum { UNPIN_AGED, UNPIN_FAILED, UNPIN_HARM, UNPIN_UNSEEN } why;
        double age;
    } *unpin;
    size_t nunpin;
    json_t *congested;
    /* What run_round's steps (rebalance.c) make of it. */
    const char *cls_name[CLASSES_MAX];   /* class index -> name, for the result */
    struct assign_policy pol[CLASSES_MAX];
    uint8_t *pol_mem;
    uint32_t npol;
    struct rebalance_class_rules *cr;
    struct assign_flow *af;      /* per flow of f: the assignment's input */
    uint32_t *path;              /* per flow of f: the path the round gives it */
    double before, after;        /* max utilisation */
    uint32_t moved;
    int arc;                     /* the assignment's result: it stands (and is
                                    reported) even when no plan can express it */
    struct plan plan;
    bool accepted, applied;
    char err[256];
};

/* Class rules (DESIGN 2.5): a class whose path policy names spines (`via`)
 * and whose match is DSCP alone becomes, per DSCP value, a rule on every
 * leaf to a multipath route over the allowed spines. Other matches (ports,
 * QPs, prefixes, jobs) cannot be told apart by a FIB rule; the fat flows of
 * such classes are still kept on their spines by the assignment (node_ok)
 * and pinned. Indices follow the class order and DSCP values, so the same
 * policy always gives the same tables and priorities. */
struct rebalance_class_rules {
    struct planbuild_class c[PLANBUILD_MAX_CLASSES];
    int *allow;                  /* node indices, all classes back to back */
    size_t n;
};

/* A group of flows one round moved by choice: the moved flows and every fat
 * flow that crossed a direction the moves touched, with their measured rates
 * at the move. Judged from the end of the settle period for
 * thresholds.harm_intervals intervals (judge_groups). */
struct rebalance_member {
    struct state_flow_key k;
    double bps;
    int64_t pin;                 /* the path the round pinned it on, -1 not moved */
    double now_sum;              /* its rates (b/s) over the rounds judged, nseen of them */
    uint32_t nseen;
};
struct rebalance_group {
    double at, from, until;
    double ratio_sum;            /* sum over the judged rounds of now / before */
    uint32_t nsamples;
    size_t n;
    struct rebalance_member *m;
};

/* Groups judged at once; a round that would start one more drops the oldest
 * (unjudged: the per-flow verdicts still apply to its flows). */
#define REBALANCE_MAX_GROUPS 64

static inline const char *nm(const struct topo *t, uint32_t n) { return t->nodes[n].name; }

/* What the one contention rule reads of a direction: whether it is down,
 * its load (b/s) and CE fraction from state_dir_loads, its fat flows, its
 * non-fat load (Gb/s), and for the ramp rule its fat flows still ramping
 * and its fat flows' load with those at their natural demands (Gb/s). */
struct rebalance_dir_view {
    bool down;
    double bps, ce, bg;
    uint32_t nfat, nramp;
    double proj;
};

/* rebalance_snapshot.c */
int  rebalance_snapshot(struct rebalance *rb, double now, struct round *r);
void rebalance_round_free(struct round *r);
const char *rebalance_dir_congested(const struct state *s, const struct config *c, uint32_t d,
                                    const struct rebalance_dir_view *v, bool *hot);
/* bg (Gb/s of non-fat load on d) as the decisions count it: 0 under
 * REBALANCE_HOT_BG_SHARE of the direction (skew, not load). */
double rebalance_bg_counted(const struct state *s, uint32_t d, double bg);
/* Whether a direction at util u with nramp ramping fat flows may be
 * contended by the ramp rule once their natural demands are known (those
 * cost a demand estimate: callers compute them only then). */
bool rebalance_ramp_candidate(const struct config *c, double u, uint32_t nramp, bool down);
/* A live fat flow the loop can place (the snapshot's and
 * rebalance_contended's set). Read lock. */
bool rebalance_flow_placed(const struct state *s, const struct state_flow *f, double now);
/* A live flow below the fat threshold that a congested direction shared
 * with fat flows holds down: a round takes it in beside the fat flows, once
 * (rebalance_snapshot.c says when). r: the snapshot's bps, ce, down and
 * nfat (fat flows only). Read lock. */
bool rebalance_flow_starved(const struct state *s, const struct config *c, const struct state_flow *f,
                            const struct round *r, double now);
/* The ramp rule's flow: its rate rose by REBALANCE_RAMP_GAIN since the
 * interval before (or it is new) and a queue on its path says the network
 * holds it down (a direction congested by thresholds, or whose qdisc
 * dropped); bps and ce per direction (state_dir_loads). Read lock. */
bool rebalance_flow_ramping(const struct state *s, const struct config *c, const struct state_flow *f,
                            const double *bps, const double *ce, double now);
/* Hedera's natural demand (policy/demand.h) of the n flows f, each end's NIC
 * its first uplink's rate, into f[i].nat (Gb/s; left 0 on failure); with
 * proj (per direction, Gb/s), adds each flow's load there: its natural
 * demand while it ramps (when above its measured rate), else its measured
 * rate. 0 or -errno. */
int  rebalance_natural(const struct topo *t, struct snap *f, size_t n, double *proj);
/* The round's natural demands once (r->nat_done), with proj as above. */
void rebalance_round_natural(struct round *r, double *proj);
int  rebalance_dirs_ensure(struct rebalance *rb, uint32_t nd);
void rebalance_estimate(struct round *r);
void rebalance_trace(const struct round *r);

/* rebalance_judge.c */
void rebalance_group_drop(struct rebalance *rb, size_t i);
void rebalance_verdicts(const struct rebalance *rb, struct round *r, double now);
void rebalance_judge_groups(struct rebalance *rb, struct round *r, double now);
void rebalance_apply_verdicts(struct rebalance *rb, const struct round *r, double now);
bool rebalance_moved_by_choice(const struct round *r, const uint32_t *path, size_t i);
void rebalance_start_settle(struct rebalance *rb, const struct round *r, const uint32_t *path, double now);
/* Whether direction d still settles, for a flow fat since `since`, after a
 * choice move touched it (at rb->moved_at[d]): for settle_intervals, or
 * less, until a report whose interval began after the move has given its
 * rate (what the period waits for). A flow fat only since the move was not
 * in its round: the move did not count on it, and it is not held. */
bool rebalance_dir_settling(const struct rebalance *rb, uint32_t d, double since, double now);
double rebalance_gate_moves(const struct round *r, const struct assign_input *in, uint32_t *path, double margin,
                            double after);
double rebalance_wait_for_held(const struct round *r, const struct assign_input *in, const struct assign_params *ap,
                               bool per_dst, uint32_t *path, double after);

/* rebalance_backend.c: at init, the backend rebalance_init was given (the
 * kind named: its own). */
void rebalance_backend_init(struct rebalance *rb, struct backend *be);

/* rebalance_pins.c */
bool rebalance_forced(const struct round *r, size_t i);
/* Whether path idx from src to dst crosses a direction out of view
 * (r->closed): nothing may be pinned there. */
bool rebalance_closed(const struct round *r, const struct topo *t, uint32_t src, uint32_t dst, int64_t idx);
/* Whether some path from src to dst crosses a direction out of view now
 * (r->unseen): the flows between them are left to the switches' ECMP. */
bool rebalance_ecmp_only(const struct round *r, uint32_t src, uint32_t dst);
void rebalance_class_rules_build(const struct classes *cs, const struct topo *t, struct rebalance_class_rules *cr);
int  rebalance_group_pins(struct round *r, const struct assign_flow *af, uint32_t *path);
int  rebalance_build_plan(struct rebalance *rb, const struct round *r, const uint32_t *path,
                          const struct rebalance_class_rules *cr, struct plan *out, char *err, size_t errlen);
void rebalance_mark_holds(struct round *r, const uint32_t *path);
void rebalance_record_pins(struct rebalance *rb, const struct round *r, const uint32_t *path, double now);
void rebalance_unpin_apply(struct rebalance *rb, const struct round *r, double now);
/* "L1 S1 C2 S3 L4": path idx from src to dst, for the debug log. */
void rebalance_path_str(const struct topo *t, uint32_t src, uint32_t dst, uint64_t idx, char *buf, size_t len);

#endif
