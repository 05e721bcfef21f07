/*
 * health: finds the link direction that silently loses packets (a gray
 * failure, issue 18) and withholds it from placement while it does.
 *
 * Each round (health_tick, once per interval) takes a snapshot of the fat
 * flows (their path directions and their loss counts of the last interval:
 * retx_pkts + psn_oos + naks) and of every direction's counters, and hands
 * it to health_localise, a pure function: network tomography by path
 * intersection. A flow is lossy when its loss is at least
 * thresholds.gray_min_loss packets and thresholds.gray_loss of the packets
 * its rate carried, clean otherwise; a flow crossing a congested direction
 * (its own qdisc dropped, or, its queue unseen (no fresh report of its
 * sender's own counters: the far end's receive counters do not see it), it
 * is full and shared by fat flows) is neither: its loss is explained (the lab's htb queues overflow
 * under colliding flows, and so does a real switch's buffer). A direction
 * is blamed when it explains at least thresholds.gray_min_flows lossy flows
 * that no other direction explains as well, and the clean flows through it
 * are at most thresholds.gray_clean_share of its flows (greedy set cover,
 * the direction covering most lossy flows first). A tie (two directions
 * crossed by the same lossy flows, as the hops of one path are) blames
 * neither: a wrong link is worse than none.
 *
 * Per hop, first: where probes capture arrivals (--inbound), a flow's holes
 * at each arrival on its path are known; the holes a hop adds (those at its
 * far end minus those at the arrival before it, same interval) are the loss
 * of that hop alone (its sender's queue, the wire, the receiver). A hop so
 * bracketed that adds holes >= gray_min_loss and >= gray_loss of the
 * flow's packets is blamed on that one flow (the first such hop on its
 * path), unless its own queue dropped (congested: explained); one that adds
 * none with packets enough is clean for it. Such flows are explained and
 * leave the cover; so do flows whose every switch hop is bracketed and
 * clean (their loss is before the first arrival or on the host link after
 * the last). Host links are never blamed
 * (placement has no way around them); a direction routing reports down is
 * routing's business. Carrier flaps (thresholds.flap_count transitions of
 * either end within thresholds.flap_window s) and interface errors
 * (thresholds.gray_errors in an interval) mark a link directly.
 *
 * Hysteresis (health_step): a direction becomes suspect after
 * thresholds.gray_k bad rounds of the last thresholds.gray_n (or one flap
 * verdict), and clean once no round was bad for the hold-down
 * (thresholds.gray_holddown), doubled for each time it became suspect again
 * within 4 hold-downs (at most 8x), so that a noisy link does not flap.
 * With thresholds.drain a suspect direction is drained (state's drain =
 * STATE_DRAIN_AUTO: state_dir_eval counts it down) until clean. An
 * operator's drain (STATE_DRAIN_MANUAL, health_drain) holds until undrained;
 * telemetry going quiet never releases or removes anything but an automatic
 * drain's own hold-down.
 *
 * Threads: health_tick runs in the rounds' thread only (its tracks are
 * that thread's); it takes the state's read lock for the snapshot and the
 * write lock to publish. health_drain takes the write lock (API threads).
 * Errors: -ENOMEM, -ENOENT (no such link), -EALREADY (drain of a drained
 * direction / undrain of one not drained by an operator or health).
 */
#ifndef TF_HEALTH_H
#define TF_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/topo.h"

struct state;
struct events;
struct config;

#define HEALTH_EVIDENCE 4        /* flows named as evidence per direction */
#define HEALTH_FLAP_RING 32      /* rounds of carrier counts kept per direction */

struct health_cfg {
    double loss_frac;            /* lossy: lost / packets at least this */
    double min_loss;             /* ... and at least this many lost packets */
    double min_flows;            /* lossy flows a blamed direction must explain */
    double clean_share;          /* at most this share of its flows clean */
    double errors;               /* interface errors in an interval that mark it */
    double flap_count, flap_window;
    double k, n;                 /* bad rounds of the last n that make it suspect */
    double holddown;             /* s without a bad round to be clean */
    double util;                 /* full: a direction whose queue is unseen, at this utilisation */
    double interval;             /* s, the packets a flow's rate carried per round */
    bool drain;
};
void health_cfg_from(struct health_cfg *hc, const struct config *c);

/* One fat flow of a round. */
struct health_flow {
    uint64_t id;
    uint32_t dirs[TOPO_MAX_HOPS];
    int ndirs;
    double bps;
    uint64_t lost;               /* retx_pkts + psn_oos + naks of its last interval */
    /* Per hop: bit j of obs set when a probe saw it arrive by dirs[j] in
     * the round's interval, with holes[j] holes there (docs/health.md). */
    uint32_t obs;
    uint64_t holes[TOPO_MAX_HOPS];
};

/* One direction of a round. */
struct health_dir_in {
    bool fabric;                 /* switch to switch: placement can avoid it */
    bool down;                   /* routing or a probe says down: not ours */
    bool congested;              /* its loss is explained by its own queue */
    uint64_t errors, carrier;    /* of the last interval; carrier: the link's (max of both ends) */
    /* For the debug trace of a verdict only (health_tick): what the
     * congestion test saw. */
    double util;
    uint32_t nfat;
    bool queue_seen;             /* its sender's own report gave its queue's drops */
};

/* What one round says of a direction. */
struct health_verdict {
    bool bad;
    const char *why;             /* "loss", "errors", or NULL */
    double conf;                 /* 0..1: lossy share of its flows x share of the round's lossy flows it explains */
    uint32_t nlossy, nclean;
    uint8_t nev;
    uint64_t ev_id[HEALTH_EVIDENCE];
    double ev_frac[HEALTH_EVIDENCE]; /* those flows' loss fractions */
    /* Per hop: flows whose holes grew across this direction (lossy) or did
     * not (clean, with packets enough to have shown it); blamed by them,
     * the first such flow's bracket as evidence: holes at the far end
     * (hop_holes) and at the arrival before it (hop_prev_holes, by
     * hop_prev). */
    uint32_t hop_lossy, hop_clean;
    bool hop;
    uint32_t hop_prev;
    uint64_t hop_holes, hop_prev_holes;
};

/* Whether a direction's loss is its own queue's (see above). */
bool health_congested(const struct health_cfg *c, double util, bool queue_seen, uint64_t qdisc_drops, uint32_t nfat);
/* The round's verdicts, one per direction (out[nd], zeroed first). */
int health_localise(const struct health_cfg *c, const struct health_flow *f, size_t nf,
                    const struct health_dir_in *d, uint32_t nd, struct health_verdict *out);

/* A direction's history across rounds. */
struct health_track {
    uint32_t bits;               /* bad rounds, newest in bit 0 */
    double flap_ts[HEALTH_FLAP_RING];
    uint32_t flap_n[HEALTH_FLAP_RING];
    uint8_t flap_pos;
    bool suspect;
    double last_bad;             /* when a round or a flap last marked it */
    double suspect_at;           /* when it last became suspect */
    uint32_t strikes;            /* suspect again within 4 hold-downs */
    double conf;
};
enum health_change { HEALTH_SAME = 0, HEALTH_SUSPECT = 1, HEALTH_CLEAN = 2 };
/* One round of a direction's history: v (may be NULL: no evidence), the
 * link's carrier transitions in the round. */
enum health_change health_step(const struct health_cfg *c, struct health_track *tr, const struct health_verdict *v,
                               uint64_t carrier, double now, bool *flapping);
/* The hold-down now in force for tr (base doubled by strikes, at most 8x). */
double health_holddown(const struct health_cfg *c, const struct health_track *tr);
/* 0 healthy .. 1 drained, as /metrics shows it. */
double health_value(const struct health_cfg *c, const struct health_track *tr, uint8_t drain);

struct health {
    struct health_track *tr;
    uint32_t nd;
    const struct topo *topo;     /* the tracks' topology: a new one resets them */
    struct health_cfg cfg;
};
int  health_init(struct health *h, const struct config *c);
void health_free(struct health *h);
/* One round over the state (see above); events for every change. Returns
 * the number of directions whose suspicion or drain changed, or -ENOMEM. */
int  health_tick(struct health *h, struct state *s, struct events *ev, double now);
/* An operator's drain (on) or undrain (off) of the direction from -> to
 * (node names); who names the caller in the event. */
int  health_drain(struct state *s, struct events *ev, const char *from, const char *to, bool on, const char *who,
                  double now);

#endif
