/*
 * state: the controller's picture of the fabric: per link direction load,
 * CE fraction and oper state; per probe when it last reported; per flow its
 * rate, class and the path it takes.
 *
 * Invariants:
 *   - every field is guarded by `lock` (a rwlock): ingest and the rebalance
 *     loop write, the HTTP views read. `gen` is bumped on every write so that
 *     cached renderings know when to rebuild.
 *   - dirs[] and probes[] are sized by the topology (2*nlinks, nnodes) and
 *     are replaced together with it (state_set_topo).
 *   - flows[] is dense (0..nflows); fidx is an open-addressing hash of
 *     (5-tuple, qp, vlan) -> flow index, rebuilt whenever flows are removed.
 *   - a flow's path directions are cached beside its path index (dirs,
 *     ndirs), so that loads, snapshots and views never decode paths while
 *     they hold the lock; only state_flow_set_path changes path.
 *   - `gen` moves when something a view shows changed, not merely with time
 *     (views that show ages are cached for at most a second anyway).
 *   - time is passed in (`now`, seconds, the caller's clock) so that staleness
 *     is testable; a probe is stale when now - last_seen > stale_after, and a
 *     stale probe's measurements and flows stop counting (they are kept, and
 *     shown as stale, until they age out at AGE_OUT times that; a pinned
 *     flow ages out only once the rebalance loop has unpinned it, after
 *     thresholds.pin_grace, see rebalance.c).
 */
#ifndef TF_STATE_H
#define TF_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reportspec.h"
#include "policy/job.h"
#include "policy/topo.h"

struct classes;

#define STATE_IF_LEN (REPORTSPEC_IF_MAX + 1)
#define STATE_UNMAPPED_MAX 8
#define STATE_AGE_OUT 10.0       /* drop flows silent for this many stale periods */
#define STATE_MAX_JOBS 64
#define STATE_INGEST_REASONS 16  /* room for ingest's refusal reasons */
#define STATE_SENDER_LEN 112     /* an IPv6 address, a space, a report's instance */
#define STATE_MAX_FLOWS 16000000 /* ceiling of limits.max_flows; also bounds a flow page's offset */
/* Reports of one interval from the probes a flow crosses arrive within a
 * few ms (intervals end on wall-clock multiples); successive intervals are
 * at least 0.05 s apart (the interval's lower bound). A flow's report this
 * long after its interval's first is of the next interval. */
#define STATE_RATE_SPREAD 0.03

struct state_dir {
    double bps;                  /* measured tx rate leaving `from` */
    double tx_bytes;             /* bytes its probes measured on it: the sum of bps x interval_s / 8
                                  * over the reports (the /metrics counter; reset with the topology) */
    double ce_frac;              /* rate-weighted CE fraction of the flows seen on it */
    uint64_t drops;
    /* Gray-failure signals of the last report on this direction's
     * interface (the probe of `from`): kernel rx+tx errors and carrier
     * (oper) transitions in its interval. Carrier is a property of the
     * interface: the far end's probe reports it on dir ^ 1. */
    uint64_t errors, carrier_changes;
    /* The root qdisc's drops in that interval: the link's own queue
     * overflowed, i.e. congestion (health.c tells it from a gray failure).
     * queue_known: the last report was its sender's own, with its queue's
     * drops (a far end's receive counters, an ERSPAN-only view or a port
     * with no qdisc do not see the queue). */
    uint64_t qdisc_drops;
    bool queue_known;
    /* The root qdisc's backlog at the last report, as the time the link
     * takes to send it (bytes x 8 / its capacity, seconds): the delay a
     * packet joining the queue then waits. Same rule as queue_known: only
     * the sender's own report gives it (delay_known false otherwise, and
     * queue_delay 0). queue_delay_prev: the report before's (delay_prev_known), so
     * that a queue standing over two reports can be told from a burst
     * (state_dir_queue_delay). */
    double queue_delay, queue_delay_prev;
    bool delay_known, delay_prev_known;
    /* Health (controller/health.c, docs/health.md): 0 healthy .. 1
     * drained; suspect as of the last health round, with its confidence and
     * evidence; drain: why it is withheld from placement (enum state_drain;
     * state_dir_eval counts a drained direction as not up). */
    double health, health_conf;
    bool suspect;
    uint8_t drain;
    char health_why[96];
    /* up: usable for placement: a probe says it is up, routing does not
     * say it is down, and routing has said it is up for link_holddown
     * seconds (state_dir_eval). Either source saying down is enough. */
    bool up;
    bool probe_up;               /* false once a probe reported oper down */
    bool route_down;             /* the route backend's watch says unusable */
    double back_at;              /* when routing or its probe last gave it back:
                                    the hold-down runs from here (0: none) */
    /* The route backend lost its watch over it (BACKEND_DIR_UNSEEN): still
     * up (routing may use it, flows there stay), but closed to new pins
     * while unseen and for link_holddown after it is seen again
     * (state_dir_closed). */
    bool route_unseen;
    double seen_again_at;
    bool measured;               /* a probe reported this direction */
    uint32_t probe;              /* node index of the probe that measured it */
    /* Where the interval its rate covers began, on tierflowd's clock (the
     * report's arrival less its interval_s): a move's settle ends once a
     * rate from after the move is in (rebalance_dir_settling). */
    double rate_since;
    double last_update;
};

/* Why a direction is drained: not at all, by health.c (thresholds.drain,
 * released once clean for the hold-down), by an operator (POST .../drain,
 * held until .../undrain). */
enum state_drain { STATE_DRAIN_NONE = 0, STATE_DRAIN_AUTO = 1, STATE_DRAIN_MANUAL = 2 };

struct state_probe {
    double last_seen;            /* 0 = never */
    uint64_t reports;
    bool stale;                  /* as of the last state_tick */
    uint8_t nunmapped;
    char unmapped[STATE_UNMAPPED_MAX][STATE_IF_LEN];
    /* ingest's (ingest.c): who reports under this name, "ADDR" or
     * "ADDR instance" ("" none yet), and the newest report time applied
     * from it (0 none); the last sender refused for it and when (one
     * probe_conflict event per such sender while it keeps trying). */
    char sender[STATE_SENDER_LEN];
    double last_ts;
    char rival[STATE_SENDER_LEN];
    double rival_seen;
    /* The interval_s of its last report (0 none): a report well under it
     * (ingest.c, INGEST_CUT_SHARE) is a partial interval (a probe's final
     * flush on stop, a reload), whose flow rates are noise (ingest.c keeps
     * the flows' rates). */
    double last_interval;
};

struct state_flow_key {
    uint8_t af, proto;
    uint16_t sport, dport, vlan;
    uint32_t qp;
    uint8_t src[16], dst[16];
};

/* How a probe saw a flow (DESIGN 2.3 `source`): captured in full, mirrored,
 * or sampled 1-in-N (docs/telemetry.md); names in common/reportspec.h. */
enum state_source { STATE_SRC_PCAP = REPORTSPEC_SRC_PCAP, STATE_SRC_ERSPAN = REPORTSPEC_SRC_ERSPAN,
                    STATE_SRC_SFLOW = REPORTSPEC_SRC_SFLOW, STATE_SRC_N = REPORTSPEC_SRC_N };

struct state_flow {
    struct state_flow_key k;
    uint64_t id;
    uint8_t dscp;
    /* bps of a flow with sampling > 1 is an estimate from samples (about
     * +-1.96/sqrt(n) at 95% for n samples): the views say so, and only the
     * probe, which knows n, may call it fat. */
    uint8_t source;              /* enum state_source */
    uint32_t sampling;           /* 1-in-N, 1 when every packet was seen */
    bool fat, pinned;
    double bps, ce_frac;
    uint64_t cnp;
    /* Loss signals in the last report's interval (docs/telemetry.md):
     * TCP segments whose data had been seen already, RoCE packets off the
     * expected PSN, RoCE NAKs carried by this flow; tail_retx: of
     * retx_pkts, resends of the highest segment sent (a tail loss probe's:
     * no evidence of loss, docs/health.md). */
    uint64_t retx_pkts, psn_oos, naks, tail_retx;
    /* Per-hop loss (docs/health.md): where probes capturing arrivals saw
     * it arrive, one slot per arrival direction (the oldest slot is
     * reused): the holes of that report's interval and the report's time
     * (ts 0: an empty slot). Several probes' reports of one interval carry
     * the same ts, which is how health pairs the hops of one interval. */
    struct state_arrival {       /* 16 bytes: 96 a flow */
        uint32_t dir;            /* the direction it arrived by (P -> N for probe N) */
        uint32_t holes;          /* saturated at UINT32_MAX (an interval's, of one flow) */
        double ts;
    } arr[TOPO_MAX_HOPS];
    uint32_t probe;              /* reporting node */
    char ifname[STATE_IF_LEN];
    uint32_t egress;             /* link direction it left the probe by, TOPO_NONE unmapped */
    uint32_t src_node, dst_node; /* TOPO_NONE when the address is outside the topology */
    int64_t path;                /* path index, -1 unknown */
    uint32_t dirs[TOPO_MAX_HOPS];/* path's directions, cached (state_flow_set_path) */
    int8_t ndirs;                /* -1 when path is unknown */
    uint64_t loc_first, loc_count; /* paths the last (probe, egress) allows (state_loc) */
    int64_t pin;                 /* path index the controller holds it on, -1 none */
    int cls;                     /* class index (classes.h), CLASS_DEFAULT if unknown */
    int tier;                    /* tier its class is confined to, -1 none */
    uint32_t cls_gen;            /* state cls_gen it was classified at */
    uint32_t cls_src, cls_dst;   /* end nodes it was classified with */
    double last_seen, last_moved;
    /* When it last became fat (a report's arrival): a flow fat only since
     * a move was not in that move's round, and the move's settle does not
     * hold it (rebalance_dir_settling). */
    double fat_since;
    uint32_t moves;
    /* The loop's verdict on its own moves (rebalance.c): the measured rate
     * when a round last moved it by choice (0: no verdict pending), and the
     * back-off that futile moves earn it (futile in a row; no choice move
     * before backoff_until, set at backoff_at). */
    double move_bps, backoff_until, backoff_at;
    uint8_t futile;
    /* When a report last placed it where its pin holds it (a location
     * that allows the pin, or none), 0 never: a move whose flow no report
     * has seen on its new path since did not take, whatever its rate did
     * (rebalance_verdicts). */
    double pin_seen;
    /* Its rate in the interval before bps's (0: it had none, it is new)
     * and when bps's interval was first reported (state_flow_observe):
     * how the loop tells a collision still ramping from steady flows
     * (docs/policy.md, "A collision while it ramps"). */
    double prev_bps, bps_at;
    /* When it was first reported, and whether a round moved it while it
     * was below the probes' fat threshold, starved on a congested direction
     * (rebalance_flow_starved): set at that move, cleared when a probe
     * reports it fat. A flow that stayed small on its new path was a slow
     * flow, not a starved elephant, and is not taken for one again. */
    double seen_since;
    bool starve_moved;
    /* Its mean packet size over its life as its probe counts it (bytes /
     * pkts of the last report; 0 unknown): a stream of pure TCP ACKs (66
     * bytes) is no elephant, whatever its rate. */
    double pkt_bytes;
};

struct state {
    pthread_rwlock_t lock;
    uint64_t gen;
    struct topo *topo;
    const struct classes *classes; /* not owned; swapped with the write lock held */
    struct state_dir *dirs;      /* 2 * topo->nlinks */
    struct state_probe *probes;  /* topo->nnodes */
    struct state_flow *flows;
    size_t nflows, cap, max_flows;
    uint32_t *fidx;              /* hash slots: flow index + 1, 0 empty */
    size_t nslots;
    /* Registered jobs (policy/job.h), in registration order; their ranks are
     * node indices of topo (state_set_topo maps them by name or drops the
     * job). job_tier[i][d]: the tier dimension d of job i crosses, -1 none.
     * cls_gen moves whenever classification inputs change (jobs, classes),
     * so that flows are classified again on their next report. */
    struct job *jobs[STATE_MAX_JOBS];
    int job_tier[STATE_MAX_JOBS][JOB_NDIMS];
    size_t njobs;
    uint32_t cls_gen;
    double stale_after;          /* seconds */
    double link_holddown;        /* seconds a direction routing gave back stays down */
    double dirs_changed_at;      /* when a direction's `up` last changed (0 never); returns
                                  * within link_holddown of it count as the same event */
    double start;
    /* The view since the telemetry began (state_view_heard), on
     * tierflowd's clock: when the first report after every probe had been
     * silent for stale_after was applied (tierflowd's start, or telemetry
     * lost and back), the longest interval_s reported while warming up,
     * and when a report was last applied (0: none yet). */
    double view_since, view_span, view_heard;
    uint64_t reports_total, reports_rejected;
    /* ingest's counters (ingest.c, ingest_metrics): reports refused by
     * reason (enum ingest_err), entries refused, reports taken without a
     * timestamp, probe name conflicts. Bumped atomically. */
    uint64_t ingest_refused[STATE_INGEST_REASONS];
    uint64_t entries_refused, reports_no_ts, probe_conflicts;
    size_t pins_kept, pins_lost; /* by the last state_set_topo */
};

int  state_init(struct state *s, struct topo *t, size_t max_flows, double stale_after, double now);
void state_free(struct state *s);
/* Takes ownership of t; keeps flows (their paths are recomputed on the next
 * report) and their pins, mapped to t by node names (a pin whose nodes or
 * links are gone, or that is no longer a shortest path, is dropped:
 * pins_kept and pins_lost count them), and drops per-direction data. Caller holds the write lock. The old
 * topology is returned for the caller to free once no reader can see it. */
struct topo *state_set_topo(struct state *s, struct topo *t);

uint64_t state_flow_id(const struct state_flow_key *k);
bool state_flow_key_eq(const struct state_flow_key *a, const struct state_flow_key *b);
/* Looks a flow up; NULL if absent. Caller holds a lock. */
struct state_flow *state_flow_find(struct state *s, const struct state_flow_key *k);
/* Finds or inserts (zeroed except key, id, path -1, pin -1). NULL with
 * *full set when max_flows is reached. Caller holds the write lock. */
struct state_flow *state_flow_upsert(struct state *s, const struct state_flow_key *k, bool *inserted);
/* The path of a flow as directions (from the cache), or -1 if unknown. */
int  state_flow_dirs(const struct state *s, const struct state_flow *f, uint32_t *dirs, int max);
/* Sets the path index (-1: unknown) and refreshes the cached directions. */
void state_flow_set_path(struct state *s, struct state_flow *f, int64_t path);

/* Where a probe's observation puts a flow: its end nodes and the range of
 * paths whose prefix the probe saw (count 0: unplaceable), with the first
 * one's directions. A pure function of the topology, so ingest computes it
 * before it takes the write lock. */
struct state_loc {
    uint32_t src_node, dst_node;
    uint64_t first, count;
    uint32_t dirs[TOPO_MAX_HOPS];
    int ndirs;
};
void state_loc_resolve(const struct topo *t, const struct state_flow_key *k, uint32_t probe, uint32_t egress,
                       struct state_loc *l);
/* The location of a known flow last placed from the same probe and egress
 * (a steady report), without walking the topology; false if there is none.
 * Read lock. */
bool state_loc_cached(struct state *s, const struct state_flow_key *k, uint32_t probe, uint32_t egress,
                      struct state_loc *l);
/* Applies a resolved location (probe and egress already set on f): the pin
 * when it lies in the range, else the range's first path. */
void state_flow_place(struct state *s, struct state_flow *f, const struct state_loc *l);
/* Both steps at once (tests, single flows). */
void state_flow_locate(struct state *s, struct state_flow *f);
/* Whether the loop's own timers let f move by choice now: min_interval
 * since its last move and its back-off over. Both keep a flow still in the
 * fabric they were earned in; a direction that went down or came back since
 * (dirs_changed_at) frees it. */
bool state_flow_may_move(const struct state *s, const struct state_flow *f, double min_interval, double now);

/*
 * One probe's observation of a flow (ingest, write lock): where it left
 * (egress, ifname, its resolved location l) and its rate. A flow crosses
 * several probes (its leaf's and a spine's uplinks on a fat tree); each sees
 * where it leaves, which names a range of paths. Observations are merged, not
 * overwritten by the last to arrive. The placement of the probe that holds
 * the flow (the last one that placed it) stands, unless it is this probe, it
 * is stale, or its path is outside this observation's range and this one
 * measures the flow at least as fast; an observation whose range holds that
 * path replaces it only when narrower (a spine sees more of the path than a
 * leaf); a probe that cannot place the flow (count 0) only brings its rate.
 * Returns false for an observation to drop whole (rate and flags): a
 * slower one outside the holder's path is a remnant on a path the flow has
 * left, which its probe reports, slowing down, until its table ages it out;
 * believing it put the flow back on its old path and made it look small.
 * So is one outside a pinned flow's pin whose interval began (since, on the
 * controller's clock) before the move, whatever it measured and whichever
 * probe sent it: it saw the path the move left for part of its interval.
 * Outside the pin the holder's own reports are judged like any other's (a
 * slower one is a remnant: the old path's probe that placed the flow last).
 * An observation taken that opens a new interval (STATE_RATE_SPREAD after
 * the current one's first) keeps bps as prev_bps, for the caller to set bps.
 */
bool state_flow_observe(struct state *s, struct state_flow *f, bool inserted, uint32_t node, uint32_t egress,
                        const char *ifname, const struct state_loc *l, double bps, double since, double now);

/* Classification (DESIGN 2.2, precedence in policy/classes.h): a flow
 * between two ranks' nodes of a registered job (the first registered that
 * holds both) is that job's, of the dimension the ranks differ in; its tier
 * is its class's confinement, else, for a job dimension, the tier that
 * dimension of the job crosses. Caller holds the write lock. */
void state_flow_classify(struct state *s, struct state_flow *f);
/* Registers j (ownership taken; an existing job of that name is replaced,
 * *replaced says so) and reclassifies every flow. -ENOSPC when
 * STATE_MAX_JOBS are registered. Write lock. */
int  state_job_put(struct state *s, struct job *j, bool *replaced);
/* -ENOENT if there is no such job. Write lock. */
int  state_job_del(struct state *s, const char *name);
/* Index of the job called name, or -1. Read lock. */
int  state_job_find(const struct state *s, const char *name);
/* Reclassifies every flow (after a policy change). Write lock. */
void state_reclassify(struct state *s);

bool state_probe_stale(const struct state *s, uint32_t node, double now);
/* The look every live probe has reported: when each one's newest report
 * time (the end of its interval, on the probe's clock) is within
 * STATE_LOOK_TOL of the newest of all, that newest time; 0 when some live
 * probe has not reported it yet, or none is live. Probes close on the same
 * instants of the wall clock, so at an interval's end this becomes the
 * interval's end as the last report is in; after a look at mid-interval,
 * which only probes that saw a flow become fat report, it stays 0. Takes
 * the read lock. */
#define STATE_LOOK_TOL 0.05
double state_look_time(struct state *s, double now);
bool state_flow_stale(const struct state *s, const struct state_flow *f, double now);
/* A report over interval_s span (0 unknown) applied at now (ingest, write
 * lock): the first after silence opens a new view. */
void state_view_heard(struct state *s, double span, double now);
/* Whether the view is still warming up (docs/policy.md, "Warm-up"): true
 * while no report has come for stale_after, and for an interval (the
 * longest interval_s reported meanwhile, at most stale_after, less
 * STATE_LOOK_TOL; without one, STATE_LOOK_TOL) after the first report was
 * heard. Reports of one look
 * arrive over tens of ms, and at a start some came before tierflowd
 * listened while others arrive late, from the probes' retry queues
 * (backing off up to a second), older looks first: a round on what came
 * first saw 2 of 16 fat flows in a bench 50 trace and moved one onto a
 * collision it could not see. An interval on, every running probe has
 * reported, so state_look_time waits for all of them. On tierflowd's
 * clock alone: a report's ts may be skewed, or a replay's. Read lock. */
bool state_view_warming(const struct state *s, double now);

/* Per-direction load as the rebalancer and the views see it: a fresh probe
 * measurement when there is one, else the sum of the live flows crossing it.
 * bps/ce/nfat are arrays of 2*nlinks (nfat may be NULL). Read lock. */
void state_dir_loads(const struct state *s, double now, double *bps, double *ce, uint32_t *nfat);
/* True when bps, a direction's load from state_dir_loads, is its fresh probe
 * counter; false when it is an estimate (the sum of the flows' rates, as
 * when no fresh probe measures it or the flows claim more than the counter).
 * Views and /metrics mark estimates as such. Read lock. */
/* A probe measured the direction and is not stale. */
bool state_dir_fresh(const struct state *s, uint32_t dir, double now);
bool state_dir_measured(const struct state *s, uint32_t dir, double bps, double now);
/* A direction's standing queueing delay (seconds): the smaller of its
 * sender's last two reports' when `standing`, else the last one's; -1 when
 * not known (no fresh report of its own queue, or, standing, not two).
 * Read lock. */
double state_dir_queue_delay(const struct state *s, uint32_t dir, bool standing, double now);
static inline double state_dir_util(const struct state *s, uint32_t dir, double bps)
{ double g = topo_dir_gbps(s->topo, dir); return g > 0 ? bps / (g * 1e9) : 0; }

/* Recomputes dirs[dir].up from its sources (see struct state_dir); true
 * when it changed. Write lock. */
bool state_dir_eval(struct state *s, uint32_t dir, double now);
/* Sets what routing says of a direction and re-evaluates it; true when
 * route_down changed. Write lock. */
bool state_dir_set_route_down(struct state *s, uint32_t dir, bool down, double now);
/* Sets route_unseen; true when it changed. Write lock. */
bool state_dir_set_route_unseen(struct state *s, uint32_t dir, bool unseen, double now);
/* Whether nothing new may be pinned through dir (unseen, or seen again
 * less than link_holddown ago). Read lock. */
bool state_dir_closed(const struct state *s, uint32_t dir, double now);
/* Why a direction is not up: "probe", "routing", "holddown", "drained", or NULL when
 * it is up. Read lock. */
const char *state_dir_down_reason(const struct state *s, uint32_t dir, double now);

/* Periodic housekeeping (write lock taken inside): marks probes stale or
 * alive (calls back for each transition), ages flows out. Returns how many
 * probes changed state. */
typedef void (*state_probe_cb)(void *arg, const char *node, bool stale);
int  state_tick(struct state *s, double now, state_probe_cb cb, void *arg);

#endif
