/* health: localisation by path intersection on a 3-leaf x 3-spine fabric
 * (the lossy flows' shared direction is named, and only it; congestion's
 * loss, one path's hops and host links blame nothing), hysteresis (K of N,
 * hold-down, strikes), flaps, and drains through the state (an operator's
 * drain holds; a drained direction is not up). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "controller/config.h"
#include "controller/events.h"
#include "controller/health.h"
#include "controller/state.h"
#include "policy/topo.h"
#include "tests/unit/ctl_fixture.h"

static struct topo *T;
static struct health_cfg C;

static int setup(void **st)
{
    (void)st;
    char err[256];
    struct config c;
    config_defaults(&c);
    health_cfg_from(&C, &c);
    return topo_load("leafspine:leaves=3,spines=3,hosts=2,gbps=0.05", &T, err, sizeof(err));
}

static int teardown(void **st)
{
    (void)st;
    topo_free(T);
    return 0;
}

static uint32_t node(const char *n) { return topo_node_by_name(T, n); }

static uint32_t dir(const char *a, const char *b)
{
    uint32_t d;
    assert_int_equal(topo_dir_between(T, node(a), node(b), &d), 0);
    return d;
}

/* A 45 Mbit/s flow src -> dst through spine, losing lost packets per
 * interval (about 3,750 packets: 1% is 37). */
static struct health_flow flow(const char *src, const char *dst, const char *spine, uint64_t lost)
{
    struct health_flow f = {.bps = 45e6, .lost = lost};
    static uint64_t id;
    f.id = ++id;
    uint32_t sp = node(spine);
    for (uint64_t i = 0; i < 16; i++) {
        int n = topo_path_dirs(T, node(src), node(dst), i, f.dirs, TOPO_MAX_HOPS);
        if (n < 0)
            break;
        for (int j = 0; j < n; j++)
            if (topo_dir_to(T, f.dirs[j]) == sp) {
                f.ndirs = n;
                return f;
            }
    }
    fail_msg("no path %s -> %s via %s", src, dst, spine);
    return f;
}

static void dirs_in(struct health_dir_in *d)
{
    for (uint32_t x = 0; x < 2 * T->nlinks; x++)
        d[x] = (struct health_dir_in){.fabric = topo_dir_is_switch(T, x)};
}

static int nbad(const struct health_verdict *v)
{
    int n = 0;
    for (uint32_t x = 0; x < 2 * T->nlinks; x++)
        n += v[x].bad;
    return n;
}

/* Host names of the generator: H1..H6, two a leaf (L1: H1 H2, ...). */
static void gray_link_named(void **st)
{
    (void)st;
    struct health_flow f[] = {
        flow("H1", "H5", "S1", 40), flow("H3", "H6", "S1", 35),   /* through S1 -> L3: lossy */
        flow("H2", "H4", "S1", 0),  flow("H4", "H1", "S1", 0),    /* L1->S1, L2->S1 clean */
        flow("H5", "H2", "S2", 0),  flow("H6", "H3", "S3", 0),
    };
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    assert_int_equal(health_localise(&C, f, 6, d, 2 * T->nlinks, v), 0);
    uint32_t g = dir("S1", "L3");
    assert_true(v[g].bad);
    assert_string_equal(v[g].why, "loss");
    assert_int_equal(nbad(v), 1);
    assert_int_equal(v[g].nlossy, 2);
    assert_int_equal(v[g].nclean, 0);
    assert_int_equal(v[g].nev, 2);
    assert_true(v[g].ev_frac[0] > 0.005 && v[g].ev_frac[0] < 0.02);
    assert_true(v[g].conf > 0.99);
}

/* Bench 65's case: a flow of L2 through the gray S1 -> L3 and one of L2's
 * other flows, lossy now and then by a little (the lab's background
 * retransmits), make L2 -> S1 as many lossy flows as S1 -> L3 has. The
 * direction that explains the most loss is blamed: S1 -> L3, and the
 * background flow alone names nothing. */
static void loss_outweighs_count(void **st)
{
    (void)st;
    struct health_flow f[] = {
        flow("H1", "H5", "S1", 60), flow("H3", "H6", "S1", 45),   /* through S1 -> L3: 1.6%, 1.2% */
        flow("H4", "H2", "S1", 23),                              /* L2 -> S1 -> L1: 0.6% */
        flow("H2", "H4", "S1", 0),  flow("H5", "H2", "S2", 0),  flow("H6", "H3", "S3", 0),
    };
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    assert_int_equal(health_localise(&C, f, 6, d, 2 * T->nlinks, v), 0);
    assert_true(v[dir("S1", "L3")].bad);
    assert_false(v[dir("L2", "S1")].bad);
    assert_int_equal(nbad(v), 1);
}

/* The same loss on a direction whose own queue dropped is congestion. */
static void congestion_is_not_gray(void **st)
{
    (void)st;
    struct health_flow f[] = {flow("H1", "H5", "S1", 40), flow("H3", "H6", "S1", 35), flow("H2", "H4", "S1", 0)};
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    d[dir("S1", "L3")].congested = health_congested(&C, 1.0, true, 120, 2);
    assert_int_equal(health_localise(&C, f, 3, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    /* Unmeasured, full and shared: cannot tell, so not blamed either. */
    assert_true(health_congested(&C, 0.97, false, 0, 2));
    assert_false(health_congested(&C, 0.97, false, 0, 1));
    assert_false(health_congested(&C, 0.97, true, 0, 2));
}

/* Two lossy flows of one path: its hops explain them equally; a clean flow
 * through one of them breaks the tie. */
static void one_path_blames_nothing(void **st)
{
    (void)st;
    struct health_flow f[] = {flow("H1", "H5", "S1", 40), flow("H2", "H6", "S1", 30), flow("H1", "H3", "S1", 0)};
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    assert_int_equal(health_localise(&C, f, 2, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    assert_int_equal(health_localise(&C, f, 3, d, 2 * T->nlinks, v), 0);
    assert_true(v[dir("S1", "L3")].bad);
    assert_int_equal(nbad(v), 1);
}

/* Below thresholds.gray_loss, a lone lossy flow, a host link, a down
 * direction: nothing. */
static void no_blame_without_evidence(void **st)
{
    (void)st;
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    struct health_flow low[] = {flow("H1", "H5", "S1", 4), flow("H3", "H6", "S1", 4)};   /* 0.1% < 0.2% */
    assert_int_equal(health_localise(&C, low, 2, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    struct health_flow one[] = {flow("H1", "H5", "S1", 40), flow("H3", "H6", "S2", 0)};
    assert_int_equal(health_localise(&C, one, 2, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    /* H1's own link is all its two flows share: a host link is never blamed. */
    struct health_flow host[] = {flow("H1", "H5", "S1", 40), flow("H1", "H3", "S2", 40), flow("H2", "H4", "S1", 0),
                                 flow("H2", "H6", "S2", 0)};
    assert_int_equal(health_localise(&C, host, 4, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    struct health_flow f[] = {flow("H1", "H5", "S1", 40), flow("H3", "H6", "S1", 35), flow("H2", "H4", "S1", 0)};
    d[dir("S1", "L3")].down = true;   /* routing's: flows across it are no evidence */
    assert_int_equal(health_localise(&C, f, 3, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
}

/* f observed arriving by its first three directions (host -> leaf, leaf
 * -> spine, spine -> leaf) with holes h0, h1, h2 there. */
static struct health_flow hops(struct health_flow f, uint64_t h0, uint64_t h1, uint64_t h2)
{
    f.obs = 7;
    f.holes[0] = h0, f.holes[1] = h1, f.holes[2] = h2;
    return f;
}

/* Per hop, one flow is enough: holes that grow between S1 and L3 (and not
 * before) name S1 -> L3; holes that appear at S1 already name L1 -> S1;
 * holes the sender's own link brought (at L1 already) name nothing, and
 * neither does a hop whose own queue dropped. */
static void per_hop_blame(void **st)
{
    (void)st;
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    struct health_flow f[] = {hops(flow("H1", "H5", "S1", 45), 5, 6, 44)};
    assert_int_equal(health_localise(&C, f, 1, d, 2 * T->nlinks, v), 0);
    uint32_t g = dir("S1", "L3");
    assert_true(v[g].bad && v[g].hop);
    assert_int_equal(nbad(v), 1);
    assert_int_equal(v[g].hop_prev, dir("L1", "S1"));
    assert_true(v[g].hop_holes == 44 && v[g].hop_prev_holes == 6);
    assert_int_equal(v[g].hop_lossy, 1);
    assert_true(v[g].conf > 0.99);
    assert_int_equal(v[dir("L1", "S1")].hop_clean, 1);   /* the hop before: observed clean */
    f[0] = hops(flow("H1", "H5", "S1", 45), 5, 44, 44);
    assert_int_equal(health_localise(&C, f, 1, d, 2 * T->nlinks, v), 0);
    assert_true(v[dir("L1", "S1")].bad);
    assert_int_equal(nbad(v), 1);
    /* Lost before L1 saw it (the sender's queue, its host link): the flow
     * retransmits, every hop adds nothing, nothing is named; with two such
     * flows the cover would have named S1 -> L3 on their retransmissions. */
    struct health_flow bg[] = {hops(flow("H1", "H5", "S1", 40), 40, 40, 41), hops(flow("H3", "H6", "S1", 35), 35, 35, 35)};
    assert_int_equal(health_localise(&C, bg, 2, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    bg[0].obs = bg[1].obs = 0;
    assert_int_equal(health_localise(&C, bg, 2, d, 2 * T->nlinks, v), 0);
    assert_true(v[g].bad && !v[g].hop);
    /* Its own queue dropped: congestion, explained. */
    f[0] = hops(flow("H1", "H5", "S1", 45), 5, 44, 44);
    d[dir("L1", "S1")].congested = true;
    assert_int_equal(health_localise(&C, f, 1, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
}

/* Only one arrival observed (or none bracketing a hop): no per-hop verdict,
 * the cover as before: two lossy flows through S1 -> L3 name it, one alone
 * names nothing. */
static void per_hop_needs_a_bracket(void **st)
{
    (void)st;
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    struct health_flow f[] = {flow("H1", "H5", "S1", 40), flow("H3", "H6", "S1", 35)};
    f[0].obs = f[1].obs = 1u << 2;   /* seen arriving at L3 only */
    f[0].holes[2] = 40, f[1].holes[2] = 35;
    assert_int_equal(health_localise(&C, f, 1, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
    assert_int_equal(health_localise(&C, f, 2, d, 2 * T->nlinks, v), 0);
    uint32_t g = dir("S1", "L3");
    assert_true(v[g].bad && !v[g].hop);
    assert_int_equal(nbad(v), 1);
    /* At L1 and L3 but not at S1: two hops between, neither bracketed. */
    f[0] = hops(flow("H1", "H5", "S1", 40), 0, 0, 40);
    f[0].obs = 1 | 4;
    assert_int_equal(health_localise(&C, f, 1, d, 2 * T->nlinks, v), 0);
    assert_int_equal(nbad(v), 0);
}

static void errors_mark_directly(void **st)
{
    (void)st;
    struct health_dir_in d[64];
    struct health_verdict v[64];
    dirs_in(d);
    d[dir("L2", "S3")].errors = (uint64_t)C.errors;
    d[dir("H1", "L1")].errors = 1000;   /* a host link: not ours */
    assert_int_equal(health_localise(&C, NULL, 0, d, 2 * T->nlinks, v), 0);
    assert_true(v[dir("L2", "S3")].bad);
    assert_string_equal(v[dir("L2", "S3")].why, "errors");
    assert_int_equal(nbad(v), 1);
}

/* K of N, the hold-down, and strikes doubling it. */
static void hysteresis(void **st)
{
    (void)st;
    struct health_track tr = {0};
    struct health_verdict bad = {.bad = true, .conf = 0.8}, good = {0};
    double t = 100;
    assert_int_equal(health_step(&C, &tr, &bad, 0, t++, NULL), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, &good, 0, t++, NULL), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, &good, 0, t++, NULL), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, &good, 0, t++, NULL), HEALTH_SAME);   /* the first bad one left the window */
    assert_int_equal(health_step(&C, &tr, &bad, 0, t++, NULL), HEALTH_SAME);
    assert_false(tr.suspect);
    assert_true(health_value(&C, &tr, STATE_DRAIN_NONE) > 0 && health_value(&C, &tr, STATE_DRAIN_NONE) < 0.5);
    assert_int_equal(health_step(&C, &tr, &bad, 0, t, NULL), HEALTH_SUSPECT);
    double at = t;
    assert_true(health_value(&C, &tr, STATE_DRAIN_NONE) >= 0.5);
    assert_true(health_value(&C, &tr, STATE_DRAIN_AUTO) == 1);
    while (t < at + C.holddown - 1)
        assert_int_equal(health_step(&C, &tr, NULL, 0, ++t, NULL), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, NULL, 0, at + C.holddown, NULL), HEALTH_CLEAN);
    assert_int_equal(health_value(&C, &tr, STATE_DRAIN_NONE), 0);
    /* Suspect again soon: the hold-down doubles. */
    t = at + C.holddown + 1;
    health_step(&C, &tr, &bad, 0, t++, NULL);
    assert_int_equal(health_step(&C, &tr, &bad, 0, t, NULL), HEALTH_SUSPECT);
    assert_true(health_holddown(&C, &tr) == 2 * C.holddown);
    assert_int_equal(health_step(&C, &tr, NULL, 0, t + C.holddown, NULL), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, NULL, 0, t + 2 * C.holddown, NULL), HEALTH_CLEAN);
}

/* Carrier transitions: flap_count within flap_window mark it at once. */
static void flaps(void **st)
{
    (void)st;
    struct health_track tr = {0};
    bool flapping;
    double t = 100;
    assert_int_equal(health_step(&C, &tr, NULL, 2, t++, &flapping), HEALTH_SAME);
    assert_false(flapping);
    assert_int_equal(health_step(&C, &tr, NULL, 1, t++, &flapping), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, NULL, 1, t, &flapping), HEALTH_SUSPECT);
    assert_true(flapping);
    /* Held while it keeps flapping, clean a hold-down after the last one. */
    assert_int_equal(health_step(&C, &tr, NULL, 2, t + 5, &flapping), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, NULL, 0, t + 5 + C.holddown - 1, &flapping), HEALTH_SAME);
    assert_int_equal(health_step(&C, &tr, NULL, 0, t + 5 + C.holddown, &flapping), HEALTH_CLEAN);
    /* Spread out beyond the window: never. */
    struct health_track slow = {0};
    for (int i = 0; i < 10; i++)
        assert_int_equal(health_step(&C, &slow, NULL, 1, 1000 + 11.0 * i, NULL), HEALTH_SAME);
}

/* A drained direction is not up; an operator's drain holds until undrained. */
static void drain_in_state(void **st)
{
    (void)st;
    struct topo *t;
    char err[128];
    assert_int_equal(topo_load("leafspine:leaves=2,spines=2,hosts=1,gbps=100", &t, err, sizeof(err)), 0);
    struct state s;
    struct events ev;
    events_init(&ev);
    assert_int_equal(state_init(&s, t, 16, 3, 100), 0);
    uint32_t d;
    assert_int_equal(topo_dir_between(t, topo_node_by_name(t, "S1"), topo_node_by_name(t, "L2"), &d), 0);
    assert_true(s.dirs[d].up);
    assert_int_equal(health_drain(&s, &ev, "S1", "L2", true, "test", 101), 0);
    assert_false(s.dirs[d].up);
    assert_string_equal(state_dir_down_reason(&s, d, 101), "drained");
    assert_true(s.dirs[d ^ 1].up);   /* one direction */
    assert_int_equal(health_drain(&s, &ev, "S1", "L2", true, "test", 102), -EALREADY);
    assert_int_equal(health_drain(&s, &ev, "S1", "L9", true, "test", 102), -ENOENT);
    assert_int_equal(health_drain(&s, &ev, "H1", "S1", true, "test", 102), -ENOENT);   /* no such link */
    /* health's rounds release only their own drain. */
    struct config c;
    config_defaults(&c);
    c.drain = true;
    struct health h;
    health_init(&h, &c);
    for (double now = 103; now < 103 + 3 * c.gray_holddown; now++)
        health_tick(&h, &s, &ev, now);
    assert_false(s.dirs[d].up);
    assert_int_equal(health_drain(&s, &ev, "S1", "L2", false, "test", 200), 0);
    assert_true(s.dirs[d].up);
    assert_int_equal(health_drain(&s, &ev, "S1", "L2", false, "test", 201), -EALREADY);
    health_free(&h);
    state_free(&s);
    events_destroy(&ev);
}

/* L1's and L2's probes each report one fat flow to L3 through S1 at bps
 * resending retx packets a second, tail of them at the tail
 * (REPORTSPEC_TAIL_RETX): S1 -> L3 explains both. */
static void post_flows(struct state *s, double now, double bps, int retx, int tail)
{
    static const char *const rep[][2] = {{"L1", "10.0.1.1\", \"dst\": \"10.0.3.1"},
                                         {"L2", "10.0.2.1\", \"dst\": \"10.0.3.2"}};
    for (size_t i = 0; i < 2; i++) {
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"probe\": \"%s\", \"ts\": %.1f, \"interval_s\": 1, \"links\": [{\"if\": \"swp1\", \"tx_bps\": %g}],"
                 " \"flows\": [{\"src\": \"%s\", \"proto\": 6, \"sport\": 40000, \"dport\": 5201, \"if\": \"swp1\","
                 " \"bps\": %g, \"pkts\": %.0f, \"retx_pkts\": %d, \"tail_retx\": %d, \"fat\": true}]}",
                 rep[i][0], now, bps, rep[i][1], bps, bps / 8 / 1500, retx, tail);
        struct ingest_result res;
        assert_int_equal(fx_post(s, body, now, &res), 0);
    }
}

/* The fabric most rounds here run on: 3 leaves x 2 spines at 50 Mbit/s,
 * default thresholds, a health of its own. */
struct fab {
    struct state s;
    struct events ev;
    struct config c;
    struct health h;
};

static void fab_up(struct fab *x)
{
    config_defaults(&x->c);
    events_init(&x->ev);
    assert_int_equal(state_init(&x->s, fx_topo_spec("leafspine:leaves=3,spines=2,hosts=2,gbps=0.05"), 100, 3, 99), 0);
    assert_int_equal(health_init(&x->h, &x->c), 0);
}

static void fab_down(struct fab *x)
{
    health_free(&x->h);
    state_free(&x->s);
    events_destroy(&x->ev);
}

/* Rounds of post_flows at 15 Mbit/s resending 15 (tail of them at the tail) from *now while *now < until,
 * or (until 0) up to three until S1 -> L3 is named, which must happen;
 * *now moves on an interval a round. */
static void lossy_rounds(struct fab *x, double *now, double until, int tail)
{
    for (int k = 0; until > 0 ? *now < until : k < 3 && !fx_has_event(&x->ev, "link_suspect", "S1 -> L3");
         k++, *now += x->c.interval) {
        post_flows(&x->s, *now, 1.5e7, 15, tail);
        health_tick(&x->h, &x->s, &x->ev, *now);
    }
    if (until == 0)
        assert_true(fx_has_event(&x->ev, "link_suspect", "S1 -> L3"));
}

/* Tail resends are no loss evidence (docs/health.md): the same two flows,
 * whose 15 resends a second all resend the last segment sent (a tail loss
 * probe's, which in the lab were duplicates), name nothing however long;
 * with 12 of them at the tail the 3 left still make 0.24%, under
 * gray_loss; with none at the tail S1 -> L3 is named. */
static void tail_resends_are_no_evidence(void **st)
{
    (void)st;
    struct fab x;
    fab_up(&x);
    double now = 100;
    lossy_rounds(&x, &now, 105, 15);
    lossy_rounds(&x, &now, 110, 12);
    assert_false(fx_has_event(&x.ev, "link_suspect", ""));
    lossy_rounds(&x, &now, 0, 0);
    fab_down(&x);
}

/* While the usable fabric changes (here an operator drains L1 -> S2), no
 * round takes loss as evidence, for thresholds.link_holddown + 2
 * intervals: flows rerouted around a change resend what their old path
 * lost. The same loss names S1 -> L3 once the window has passed. */
static void no_loss_evidence_while_fabric_changes(void **st)
{
    (void)st;
    struct fab x;
    fab_up(&x);
    double now = 100, window = x.s.link_holddown + 2 * x.c.interval;
    assert_int_equal(health_drain(&x.s, &x.ev, "L1", "S2", true, "test", now), 0);
    lossy_rounds(&x, &now, now + window, 0);
    assert_false(fx_has_event(&x.ev, "link_suspect", "S1 -> L3"));
    lossy_rounds(&x, &now, 0, 0);
    assert_false(fx_has_event(&x.ev, "link_suspect", "L1 -> S1"));
    fab_down(&x);
}

/* Two fat flows fill S1 -> L3 (24 of its 50 Mbit/s each) and resend 1%:
 * what a full shared queue does. L3's probe reports its port from S1, whose
 * receive counters give that direction a rate but not S1's queue: the loss
 * may be the queue's, so nothing is named (a failure-suite run named a spine
 * downlink so, when the far end's counters made it count as measured). Nor
 * when S1 reports the port without queue counters (an ERSPAN-only view, a
 * port with no qdisc). S1's own counters of the port (--counters) with its
 * qdisc dropping explain it as well; with no qdisc drop there, the same
 * loss is a gray failure. */
static void far_end_counters_do_not_see_the_queue(void **st)
{
    (void)st;
    struct fab x;
    fab_up(&x);
    double now = 300;
    for (int phase = 0; phase < 4; phase++)
        for (int k = 0; k < 6 && !fx_has_event(&x.ev, "link_suspect", ""); k++, now += x.c.interval) {
            char body[256];
            struct ingest_result res;
            post_flows(&x.s, now, 2.4e7, 20, 0);
            snprintf(body, sizeof(body), "{\"probe\": \"L3\", \"ts\": %.1f, \"interval_s\": 1, \"links\": "
                     "[{\"if\": \"swp1\", \"tx_bps\": 0, \"rx_bps\": 4.8e7}], \"flows\": []}", now);
            assert_int_equal(fx_post(&x.s, body, now, &res), 0);
            if (phase > 0) {
                char q[32] = "";
                if (phase > 1)
                    snprintf(q, sizeof(q), ", \"qdisc_drops\": %d", phase == 2 ? 40 : 0);
                snprintf(body, sizeof(body), "{\"probe\": \"S1\", \"ts\": %.1f, \"interval_s\": 1, \"links\": "
                         "[{\"if\": \"swp3\", \"tx_bps\": 4.8e7%s}], \"flows\": []}", now, q);
                assert_int_equal(fx_post(&x.s, body, now, &res), 0);
            }
            health_tick(&x.h, &x.s, &x.ev, now);
            if (phase < 3)
                assert_false(fx_has_event(&x.ev, "link_suspect", ""));
        }
    assert_true(fx_has_event(&x.ev, "link_suspect", "S1 -> L3: loss"));
    fab_down(&x);
}

/* The whole way (fx_topo_spec's port names: swpN faces node N's number):
 * L1's, S1's and L3's probes each report the one fat flow
 * H1 -> H5 (through S1) with the holes of its arrival there; the holes grow
 * between S1 and L3: S1 -> L3 is named on that one flow, with the bracket
 * as evidence. Reports of another interval do not pair. */
static void per_hop_through_state(void **st)
{
    (void)st;
    struct fab x;
    fab_up(&x);
    static const char *const rep[][4] = {{"L1", "swp1", "H1", "2"}, {"S1", "swp3", "swp1", "2"},
                                                         {"L3", "H5", "swp1", "19"}};
    double now = 200;
    for (int k = 0; k < 4; k++, now += x.c.interval) {
        for (size_t i = 0; i < 3; i++) {
            char body[512];
            snprintf(body, sizeof(body),
                     "{\"probe\": \"%s\", \"ts\": %.1f, \"interval_s\": 1, \"flows\": [{\"src\": \"10.0.1.1\","
                     " \"dst\": \"10.0.3.1\", \"proto\": 6, \"sport\": 40000, \"dport\": 5201, \"if\": \"%s\","
                     " \"bps\": 1.5e7, \"pkts\": %d, \"retx_pkts\": 19, \"fat\": true, \"holes\": %s,"
                     " \"in_if\": \"%s\"}]}",
                     rep[i][0], now - (i == 2 && k == 0 ? 1 : 0), rep[i][1], 1250 * (k + 1), rep[i][3], rep[i][2]);
            struct ingest_result res;
            assert_int_equal(fx_post(&x.s, body, now, &res), 0);
        }
        health_tick(&x.h, &x.s, &x.ev, now);
        if (k == 0) /* L3's report of an interval before: nothing bracketed yet */
            assert_int_equal(x.h.tr[0].bits | x.h.tr[1].bits, 0);
    }
    assert_true(fx_has_event(&x.ev, "link_suspect", "S1 -> L3: loss (confidence 1.00): holes at L3 from S1: 19, 2 at S1 from L1"));
    assert_false(fx_has_event(&x.ev, "link_suspect", "L1 -> S1"));
    fab_down(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gray_link_named),
        cmocka_unit_test(loss_outweighs_count),
        cmocka_unit_test(congestion_is_not_gray),
        cmocka_unit_test(one_path_blames_nothing),
        cmocka_unit_test(no_blame_without_evidence),
        cmocka_unit_test(errors_mark_directly),
        cmocka_unit_test(hysteresis),
        cmocka_unit_test(flaps),
        cmocka_unit_test(drain_in_state),
        cmocka_unit_test(no_loss_evidence_while_fabric_changes),
        cmocka_unit_test(tail_resends_are_no_evidence),
        cmocka_unit_test(far_end_counters_do_not_see_the_queue),
        cmocka_unit_test(per_hop_blame),
        cmocka_unit_test(per_hop_needs_a_bracket),
        cmocka_unit_test(per_hop_through_state),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
