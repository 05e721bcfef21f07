/* state: job classification (rank pairs -> dimension and tier, precedence
 * of policy/classes.h), staleness with injected time (a probe silent for 3 intervals is
 * stale, its measurements and flows stop counting, they age out after
 * STATE_AGE_OUT stale periods, a probe reporting again is alive), tick
 * transitions, gen moving only when something changed, and when every
 * live probe has reported the same look. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdlib.h>

#include "controller/state.h"
#include "policy/classes.h"
#include "policy/job.h"
#include "tests/unit/ctl_fixture.h"

#define T0 1000.0
#define INTERVAL 1.0
#define STALE (3 * INTERVAL)

struct transitions {
    int n;
    char node[8][16];
    bool stale[8];
};

static void on_probe(void *arg, const char *node, bool stale)
{
    struct transitions *tr = arg;
    if (tr->n < 8) {
        tf_strlcpy(tr->node[tr->n], node, sizeof(tr->node[0]));
        tr->stale[tr->n++] = stale;
    }
}

static const char *REPORT =
    "{\"probe\": \"L1\", \"links\": [{\"if\": \"swp2\", \"tx_bps\": 6e10}], \"flows\": [{\"src\": \"10.0.1.1\","
    " \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 7, \"dport\": 4791, \"if\": \"swp2\", \"bps\": 4e10, \"fat\": true}]}";

static double load_of(struct state *s, double now, const char *from, const char *to)
{
    uint32_t dir, nd = 2 * s->topo->nlinks;
    assert_int_equal(topo_dir_between(s->topo, fx_node(s->topo, from), fx_node(s->topo, to), &dir), 0);
    double bps[64], ce[64];
    assert_true(nd <= 64);
    state_dir_loads(s, now, bps, ce, NULL);
    return bps[dir];
}

static uint32_t dir_of(const struct topo *t, const char *a, const char *b)
{
    uint32_t d;
    assert_int_equal(topo_dir_between(t, fx_node(t, a), fx_node(t, b), &d), 0);
    return d;
}

/* Takes an observation as ingest does: placement by state_flow_observe,
 * then (when it is taken) the rate and the time. */
static bool observe(struct state *s, struct state_flow *f, bool ins, const char *probe, const char *to, double bps,
                    double now)
{
    const struct topo *t = s->topo;
    uint32_t dir = dir_of(t, probe, to);
    struct state_loc l;
    state_loc_resolve(t, &f->k, fx_node(t, probe), dir, &l);
    if (!state_flow_observe(s, f, ins, fx_node(t, probe), dir, to, &l, bps, now - 1.0, now))
        return false;
    f->bps = bps;
    f->last_seen = now;
    return true;
}

/* A flow across the k=4 fat tree is seen by its edge switch (leaving by S1:
 * two paths) and by the aggregation switch above (leaving by SS2: one). The
 * narrower placement stands whichever report comes last; when the flow moves
 * to S2 the edge's faster report moves it; the slower remnant S1 still sees
 * of it is dropped whole. (Each report used to overwrite the last: the flow
 * flipped between its real path and the first path via S1, through SS1, and
 * took the remnant's rate.) */
/* A state on the k=4 fat tree with one TCP flow H1 -> H5 (pod 1 to pod
 * 2), first seen by S1 leaving for SS2 at 40 Mb/s. */
static struct state_flow *ft_flow(struct state *s, struct topo **tp)
{
    char err[256];
    assert_int_equal(topo_load("fattree:k=4,gbps=1", tp, err, sizeof(err)), 0);
    struct topo *t = *tp;
    assert_int_equal(state_init(s, t, 1000, STALE, T0), 0);
    struct state_flow_key k = {.af = 4, .proto = 6, .sport = 42000, .dport = 5400};
    memcpy(k.src, t->nodes[fx_node(t, "H1")].addr, 16);
    memcpy(k.dst, t->nodes[fx_node(t, "H5")].addr, 16);
    bool ins;
    struct state_flow *f = state_flow_upsert(s, &k, &ins);
    assert_non_null(f);
    f->probe = TOPO_NONE;
    assert_true(observe(s, f, ins, "S1", "SS2", 40e6, T0));
    return f;
}

static void observations_merge(void **st)
{
    (void)st;
    struct topo *t;
    struct state s;
    struct state_flow *f = ft_flow(&s, &t);
    int64_t via_ss2 = f->path;
    assert_int_equal(f->loc_count, 1);
    assert_true(observe(&s, f, false, "L1", "S1", 41e6, T0 + 0.3));   /* wider, consistent */
    assert_int_equal(f->path, via_ss2);
    assert_true(f->bps == 41e6);
    assert_int_equal(f->probe, fx_node(t, "S1"));
    assert_true(observe(&s, f, false, "S1", "SS2", 42e6, T0 + 1));
    assert_int_equal(f->path, via_ss2);
    /* Moved: the edge sees it leave by S2 at full rate. */
    assert_true(observe(&s, f, false, "L1", "S2", 45e6, T0 + 1.5));
    uint32_t d[TOPO_MAX_HOPS];
    assert_true(state_flow_dirs(&s, f, d, TOPO_MAX_HOPS) > 1);
    assert_int_equal(d[1], dir_of(t, "L1", "S2"));
    int64_t moved = f->path;
    /* S1's table still holds it, slowing down: dropped, rate and path kept. */
    assert_false(observe(&s, f, false, "S1", "SS2", 10e6, T0 + 1.7));
    assert_int_equal(f->path, moved);
    assert_true(f->bps == 45e6);
    /* S2 sees where it goes above: narrower, taken. */
    assert_true(observe(&s, f, false, "S2", "SS4", 45e6, T0 + 2));
    assert_int_equal(f->loc_count, 1);
    assert_int_equal(f->probe, fx_node(t, "S2"));
    /* Once the holder's observation is stale, anything places it again. */
    assert_true(observe(&s, f, false, "S1", "SS2", 5e6, T0 + 2 + STALE + 1));
    assert_int_equal(f->path, via_ss2);
    state_free(&s);
}

/* The edge's report first (the order of one interval's reports is
 * arbitrary): H1 -> H5 leaves L1 by S1, placed on the first of its two
 * paths (through SS1) for want of more. S1's report then says SS2 at a
 * lower rate (another probe's interval, a flow still ramping): it narrows
 * the edge's range, so it is taken, not dropped as a remnant (it was, and
 * the fat tree's first round saw flows on cores they were not on). A
 * pinned flow's path is not a guess: the remnant rule stands for it. */
/* A move's own interval: H1 -> H5 on S1 -> SS1, moved (pinned) to S2 ->
 * SS3 0.5 s into an interval. The reports of that interval: S1 (the
 * holder) still saw it for half of it, at full rate, its smoothed rate
 * beating S2's of the ramping flow on the new path; neither S1's nor any
 * probe's report outside the pin from that interval is taken (S1's was,
 * and a round saw a collision on the path the flow had left). Later ones
 * outside the pin are remnants when slower, whoever sends them, and
 * evidence when as fast (a pin that did not take). */
static void moved_interval_remnant(void **st)
{
    (void)st;
    struct topo *t;
    struct state s;
    struct state_flow *f = ft_flow(&s, &t);
    bool ins;
    struct state_flow_key k = f->k, k2 = f->k;
    k2.sport = 42009;
    struct state_flow *g = state_flow_upsert(&s, &k2, &ins);
    assert_non_null(g);
    g->probe = TOPO_NONE;
    assert_true(observe(&s, g, ins, "S2", "SS3", 1e6, T0));
    int64_t pin = g->path;
    f = state_flow_find(&s, &k);   /* g's insert may have moved it */
    assert_non_null(f);
    assert_true(observe(&s, f, false, "S1", "SS1", 25e6, T0 + 1));
    int64_t old = f->path;
    assert_true(old != pin);
    f->pin = pin;
    f->pinned = true;
    f->last_moved = T0 + 1.5;
    state_flow_set_path(&s, f, pin);
    assert_true(observe(&s, f, false, "S2", "SS3", 8e6, T0 + 2));
    assert_int_equal(f->path, pin);
    assert_false(observe(&s, f, false, "S1", "SS1", 12e6, T0 + 2.002));   /* the holder's, faster */
    assert_int_equal(f->path, pin);
    assert_true(f->bps == 8e6);
    assert_true(observe(&s, f, false, "L1", "S2", 20e6, T0 + 2.004));    /* inside the pin: taken */
    assert_int_equal(f->path, pin);
    assert_true(f->bps == 20e6);
    /* The interval after: S1, the holder still (it placed the flow last),
     * reports it idle in its table: a remnant (it used to be taken, the
     * flow on its old path at 0 b/s). */
    assert_int_equal(f->probe, fx_node(t, "S1"));
    assert_false(observe(&s, f, false, "S1", "SS1", 0, T0 + 3));
    assert_int_equal(f->path, pin);
    assert_true(f->bps == 20e6);
    /* And the interval after that at full rate: the pin did not take. */
    assert_true(observe(&s, f, false, "S1", "SS1", 40e6, T0 + 4));
    assert_int_equal(f->path, old);
    state_free(&s);
}

static void edge_guess_narrowed(void **st)
{
    (void)st;
    char err[256];
    struct topo *t;
    struct state s;
    assert_int_equal(topo_load("fattree:k=4,gbps=1", &t, err, sizeof(err)), 0);
    assert_int_equal(state_init(&s, t, 1000, STALE, T0), 0);
    struct state_flow_key k = {.af = 4, .proto = 6, .sport = 42000, .dport = 5400};
    memcpy(k.src, t->nodes[fx_node(t, "H1")].addr, 16);
    memcpy(k.dst, t->nodes[fx_node(t, "H5")].addr, 16);
    bool ins;
    struct state_flow *f = state_flow_upsert(&s, &k, &ins);
    assert_non_null(f);
    f->probe = TOPO_NONE;
    assert_true(observe(&s, f, ins, "L1", "S1", 24.8e6, T0));
    assert_int_equal(f->loc_count, 2);
    uint32_t d[TOPO_MAX_HOPS];
    assert_true(state_flow_dirs(&s, f, d, TOPO_MAX_HOPS) > 2);
    assert_int_equal(d[2], dir_of(t, "S1", "SS1"));   /* the guess */
    assert_true(observe(&s, f, false, "S1", "SS2", 23.4e6, T0 + 0.002));
    assert_int_equal(f->loc_count, 1);
    assert_int_equal(f->probe, fx_node(t, "S1"));
    assert_true(state_flow_dirs(&s, f, d, TOPO_MAX_HOPS) > 2);
    assert_int_equal(d[2], dir_of(t, "S1", "SS2"));
    /* The edge's next report is consistent and wider: the path stays. */
    assert_true(observe(&s, f, false, "L1", "S1", 30e6, T0 + 1));
    assert_true(state_flow_dirs(&s, f, d, TOPO_MAX_HOPS) > 2);
    assert_int_equal(d[2], dir_of(t, "S1", "SS2"));
    /* A flow pinned through SS2 that the edge reports first is placed on
     * its pin: S1's slower report of SS1 is the remnant of the path it left. */
    int64_t pin = f->path;
    k.sport = 42001;
    f = state_flow_upsert(&s, &k, &ins);
    assert_non_null(f);
    f->probe = TOPO_NONE;
    f->pin = pin;
    f->pinned = true;
    assert_true(observe(&s, f, ins, "L1", "S1", 45e6, T0 + 1.5));
    assert_int_equal(f->path, pin);
    assert_false(observe(&s, f, false, "S1", "SS1", 10e6, T0 + 1.7));
    assert_int_equal(f->path, pin);
    state_free(&s);
}

/* A pinned flow, then a failure beyond what a probe sees (core SS4's link
 * down to pod 2's S4): a report from S2 that still shows the flow leaving
 * for SS4 (its interval straddles the failure and the pin) leaves it on its
 * live pin; believing it made every round move the flow again. */
static void stale_report_beyond_a_failure(void **st)
{
    (void)st;
    struct topo *t;
    struct state s;
    struct state_flow *f = ft_flow(&s, &t);
    int64_t pin = f->path;
    f->pin = pin;
    f->pinned = true;
    assert_true(state_dir_set_route_down(&s, dir_of(t, "SS4", "S4"), true, T0 + 0.5));
    assert_true(observe(&s, f, false, "S2", "SS4", 45e6, T0 + 1));
    assert_int_equal(f->path, pin);
    /* Unpinned, the same report places it where it says (a round then
     * takes it off the dead path). */
    f->pin = -1;
    f->pinned = false;
    assert_true(observe(&s, f, false, "S2", "SS4", 45e6, T0 + 1.2));
    uint32_t d[TOPO_MAX_HOPS];
    int n = state_flow_dirs(&s, f, d, TOPO_MAX_HOPS);
    bool dead = false;
    for (int i = 0; i < n; i++)
        dead |= d[i] == dir_of(t, "SS4", "S4");
    assert_true(dead);
    state_free(&s);
}

/* The move interval and the back-off hold a flow in the fabric they were
 * earned in; a link that fails or comes back (hold-down over) frees it. */
static void fabric_change_frees_flows(void **st)
{
    (void)st;
    struct state s;
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    struct state_flow f = {.last_moved = T0, .backoff_until = T0 + 40, .backoff_at = T0 + 2};
    assert_false(state_flow_may_move(&s, &f, 10, T0 + 5));
    f.backoff_until = 0;
    assert_false(state_flow_may_move(&s, &f, 10, T0 + 5));     /* the interval */
    assert_true(state_flow_may_move(&s, &f, 10, T0 + 10));
    f.backoff_until = T0 + 40;
    assert_false(state_flow_may_move(&s, &f, 10, T0 + 10));    /* the back-off */
    uint32_t d = dir_of(s.topo, "L1", "S1"), r = dir_of(s.topo, "S1", "L1");
    assert_true(state_dir_set_route_down(&s, d, true, T0 + 6));
    assert_true(state_dir_set_route_down(&s, r, true, T0 + 6));
    assert_true(s.dirs_changed_at == T0 + 6);
    assert_true(state_flow_may_move(&s, &f, 10, T0 + 7));
    /* Earned after the change: they hold again. */
    f.last_moved = T0 + 8;
    assert_false(state_flow_may_move(&s, &f, 10, T0 + 9));
    f.last_moved = T0;
    f.backoff_at = T0 + 8;
    assert_false(state_flow_may_move(&s, &f, 10, T0 + 9));
    /* Routing gives the link back, one direction half a second after the
     * other: usable (and a change) once each hold-down ends. */
    s.link_holddown = 3;
    assert_true(state_dir_set_route_down(&s, d, false, T0 + 20));
    assert_true(state_dir_set_route_down(&s, r, false, T0 + 20.5));
    assert_false(s.dirs[d].up);
    state_tick(&s, T0 + 23.1, NULL, NULL);
    assert_true(s.dirs[d].up && !s.dirs[r].up);
    assert_true(s.dirs_changed_at == T0 + 23.1);
    assert_true(state_flow_may_move(&s, &f, 10, T0 + 23.2));
    /* The round that woke moves the flow; the other direction's return a
     * moment later is the same event and does not free it again. */
    f.last_moved = T0 + 23.2;
    f.backoff_until = 0;
    state_tick(&s, T0 + 23.6, NULL, NULL);
    assert_true(s.dirs[r].up);
    assert_true(s.dirs_changed_at == T0 + 23.1);
    assert_false(state_flow_may_move(&s, &f, 10, T0 + 24));
    /* A failure is news however soon after a return. */
    assert_true(state_dir_set_route_down(&s, d, true, T0 + 24.5));
    assert_true(s.dirs_changed_at == T0 + 24.5);
    assert_true(state_flow_may_move(&s, &f, 10, T0 + 25));
    state_free(&s);
}

static void probe_goes_stale_and_data_ages_out(void **st)
{
    (void)st;
    struct state s;
    struct transitions tr = {0};
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    assert_true(state_probe_stale(&s, fx_node(s.topo, "L1"), T0)); /* never reported */
    assert_int_equal(fx_post(&s, REPORT, T0, NULL), 0);
    uint32_t l1 = fx_node(s.topo, "L1");
    struct state_flow_key k = fx_key("10.0.1.1", "10.0.2.1", 7);

    /* Within 3 intervals: alive; the probe's counter (60G) is the load. */
    assert_false(state_probe_stale(&s, l1, T0 + 2.9));
    assert_true(load_of(&s, T0 + 2.9, "L1", "S2") == 6e10);
    assert_int_equal(state_tick(&s, T0 + 2.9, on_probe, &tr), 0);
    assert_int_equal(tr.n, 0);

    /* Silent for more than 3 intervals: stale, nothing of it counts. */
    assert_true(state_probe_stale(&s, l1, T0 + 3.1));
    assert_true(state_flow_stale(&s, state_flow_find(&s, &k), T0 + 3.1));
    assert_true(load_of(&s, T0 + 3.1, "L1", "S2") == 0);
    uint64_t g = s.gen;
    assert_int_equal(state_tick(&s, T0 + 3.1, on_probe, &tr), 1);
    assert_true(tr.n == 1 && tr.stale[0]);
    assert_string_equal(tr.node[0], "L1");
    assert_true(s.probes[l1].stale);
    assert_true(s.gen != g);                       /* a view shows the change */
    g = s.gen;
    assert_int_equal(state_tick(&s, T0 + 4, on_probe, &tr), 0);
    assert_int_equal(s.gen, g);                    /* nothing changed: caches stay valid */
    assert_non_null(state_flow_find(&s, &k));     /* kept, shown as stale, until it ages out */

    /* Aged out after STATE_AGE_OUT stale periods. */
    assert_int_equal(state_tick(&s, T0 + STATE_AGE_OUT * STALE - 0.1, NULL, NULL), 0);
    assert_non_null(state_flow_find(&s, &k));
    state_tick(&s, T0 + STATE_AGE_OUT * STALE + 0.1, NULL, NULL);
    assert_null(state_flow_find(&s, &k));
    assert_int_equal(s.nflows, 0);

    /* Reporting again makes it alive; the next tick says so. */
    double t1 = T0 + 100;
    assert_int_equal(fx_post(&s, REPORT, t1, NULL), 0);
    assert_false(state_probe_stale(&s, l1, t1 + 1));
    assert_true(load_of(&s, t1 + 1, "L1", "S2") == 6e10);
    assert_int_equal(state_tick(&s, t1 + 1, on_probe, &tr), 0); /* ingest already marked it alive */
    assert_false(s.probes[l1].stale);
    state_free(&s);
}

/* A look is complete when every live probe's newest report is of the same
 * instant as the newest of all (STATE_LOOK_TOL), and is that instant: a
 * look at mid-interval that one probe reported is not; a stale probe does
 * not hold it up. */
static void look_complete_when_every_live_probe_reported(void **st)
{
    (void)st;
    struct state s;
    char r[160];
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    assert_true(state_look_time(&s, T0) == 0);   /* nobody reported */
#define LOOK(probe, ts, now)                                                                    \
    do {                                                                                        \
        snprintf(r, sizeof(r), "{\"probe\": \"%s\", \"ts\": %.3f, \"links\": [], \"flows\": []}", probe, ts); \
        assert_int_equal(fx_post(&s, r, now, NULL), 0);                                         \
    } while (0)
    LOOK("L1", T0, T0);
    assert_true(state_look_time(&s, T0) == T0);
    LOOK("L2", T0 + 0.01, T0 + 0.01);
    assert_true(state_look_time(&s, T0 + 0.01) == T0 + 0.01);
    LOOK("L1", T0 + 0.5, T0 + 0.5);   /* L1 looked at mid-interval, L2 did not */
    assert_true(state_look_time(&s, T0 + 0.5) == 0);
    LOOK("L2", T0 + 0.5 + STATE_LOOK_TOL / 2, T0 + 0.52);
    assert_true(state_look_time(&s, T0 + 0.52) == T0 + 0.5 + STATE_LOOK_TOL / 2);
    LOOK("L1", T0 + 4, T0 + 4);       /* L2 silent since T0 + 0.52: stale */
    assert_true(state_probe_stale(&s, fx_node(s.topo, "L2"), T0 + 4));
    assert_true(state_look_time(&s, T0 + 4) == T0 + 4);
#undef LOOK
    state_free(&s);
}

/* Warm-up (docs/policy.md): the view warms up for an interval (less
 * STATE_LOOK_TOL) after the first report was heard, on tierflowd's clock.
 * A probe's queued older looks (its retries from before tierflowd
 * listened) are newer than the first heard yet no sign of a complete
 * look, and a report's ts (skewed, replayed) does not end it; silence past
 * the staleness window starts a new warm-up. */
static void view_warms_up_an_interval_after_the_first_report(void **st)
{
    (void)st;
    struct state s;
    char r[200];
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    assert_true(state_view_warming(&s, T0));   /* nothing heard */
#define LOOK(probe, ts, now)                                                                              \
    do {                                                                                                  \
        snprintf(r, sizeof(r), "{\"probe\": \"%s\", \"ts\": %.3f, \"interval_s\": 1, \"links\": [], \"flows\": []}", \
                 probe, ts);                                                                              \
        assert_int_equal(fx_post(&s, r, now, NULL), 0);                                                   \
    } while (0)
    LOOK("L1", T0 - 2, T0 + 0.3);   /* L1's queue: two looks from before the start */
    LOOK("L1", T0 - 1, T0 + 0.31);
    LOOK("L2", T0, T0 + 0.32);
    assert_true(state_view_warming(&s, T0 + 0.32));
    LOOK("L1", T0, T0 + 0.33);
    LOOK("L1", T0 + 0.5, T0 + 0.5);  /* a look at mid-interval */
    assert_true(state_view_warming(&s, T0 + 0.5));
    LOOK("L2", T0 + 1, T0 + 1.01);   /* closed 0.7 s after the first report came */
    assert_true(state_view_warming(&s, T0 + 1.01));
    assert_true(state_view_warming(&s, T0 + 1.24));
    assert_false(state_view_warming(&s, T0 + 1.26));   /* an interval on, less STATE_LOOK_TOL */
    LOOK("L1", T0 + 2, T0 + 2.01);
    assert_false(state_view_warming(&s, T0 + 2.01));
    assert_true(state_view_warming(&s, T0 + 2.01 + STALE + 0.1));   /* every probe silent */
    LOOK("L2", T0 + 100, T0 + 10.01);   /* its clock 90 s ahead: the warm-up keeps tierflowd's */
    assert_true(state_view_warming(&s, T0 + 10.01));
    LOOK("L2", T0 + 101, T0 + 11.01);
    assert_false(state_view_warming(&s, T0 + 11.01));
    /* An interval_s of an hour holds the warm-up no longer than the
     * staleness window. */
    snprintf(r, sizeof(r), "{\"probe\": \"L1\", \"interval_s\": 3600, \"links\": [], \"flows\": []}");
    assert_int_equal(fx_post(&s, r, T0 + 20, NULL), 0);
    assert_true(state_view_warming(&s, T0 + 20 + STALE - 0.1));
    assert_false(state_view_warming(&s, T0 + 20 + STALE - 0.04));
#undef LOOK
    state_free(&s);
}

/* Without a fresh probe counter the load of a direction is the sum of the
 * live flows crossing it; a flow whose reporter went silent drops out. */
static void loads_from_flows_when_unmeasured(void **st)
{
    (void)st;
    struct state s;
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    assert_int_equal(fx_post(&s, REPORT, T0, NULL), 0);
    /* S2 -> L2 is not measured by anyone: the flow's 40G is its load. */
    assert_true(load_of(&s, T0 + 1, "S2", "L2") == 4e10);
    assert_true(load_of(&s, T0 + 1, "S1", "L2") == 0);
    assert_true(load_of(&s, T0 + 3.5, "S2", "L2") == 0);
    state_free(&s);
}

/* A reload keeps every pin whose path still exists, mapped by node names
 * (the same file loaded again: the same pin); a pin over a link the new
 * topology lacks is dropped, and both are counted. */
static void reload_keeps_pins_by_name(void **st)
{
    (void)st;
    struct state s;
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    assert_int_equal(fx_post(&s, REPORT, T0, NULL), 0);
    assert_int_equal(s.nflows, 1);
    struct state_flow *f = &s.flows[0];
    /* Pinned over S3 (the report saw it on S2). */
    uint64_t n = topo_path_count(s.topo, f->src_node, f->dst_node);
    int64_t over_s3 = -1;
    for (uint64_t p = 0; p < n; p++) {
        uint32_t d[TOPO_MAX_HOPS];
        topo_path_dirs(s.topo, f->src_node, f->dst_node, p, d, TOPO_MAX_HOPS);
        if (!strcmp(s.topo->nodes[topo_dir_to(s.topo, d[1])].name, "S3"))
            over_s3 = (int64_t)p;
    }
    assert_true(over_s3 >= 0);
    f->pin = over_s3;
    f->pinned = true;
    state_flow_set_path(&s, f, over_s3);
    /* The same topology again. */
    topo_free(state_set_topo(&s, fx_topo()));
    assert_int_equal(s.pins_kept, 1);
    assert_int_equal(s.pins_lost, 0);
    assert_true(f->pinned);
    assert_int_equal(f->pin, over_s3);
    assert_string_equal(fx_spine(&s, f), "S3");
    /* A topology without L2-S3: that pin cannot stay. */
    struct topo *t = fx_topo();
    char json[16384];
    FILE *m = fmemopen(json, sizeof(json), "w");
    assert_non_null(m);
    assert_int_equal(topo_write_json(t, m), 0);
    fclose(m);
    topo_free(t);
    json_error_t je;
    json_t *o = json_loads(json, 0, &je);
    assert_non_null(o);
    json_t *links = json_object_get(o, "links"), *l;
    size_t i;
    json_array_foreach(links, i, l)
        if (!strcmp(json_string_value(json_object_get(l, "a")), "L2") &&
            !strcmp(json_string_value(json_object_get(l, "b")), "S3")) {
            json_array_remove(links, i);
            break;
        }
    char *text = json_dumps(o, 0);
    json_decref(o);
    char err[256];
    assert_int_equal(topo_from_json(text, strlen(text), "test", &t, err, sizeof(err)), 0);
    free(text);
    topo_free(state_set_topo(&s, t));
    assert_int_equal(s.pins_kept, 0);
    assert_int_equal(s.pins_lost, 1);
    assert_false(f->pinned);
    assert_int_equal(f->pin, -1);
    state_free(&s);
}

/* A flow's class and tier from job membership, with policy precedence. */
static const char *class_of(struct state *s, const char *src, const char *dst, uint16_t sport, int *tier)
{
    struct state_flow_key k = fx_key(src, dst, sport);
    const struct state_flow *f = NULL;
    for (size_t i = 0; i < s->nflows; i++) /* any dport */
        if (s->flows[i].k.sport == sport && !memcmp(s->flows[i].k.src, k.src, 16) && !memcmp(s->flows[i].k.dst, k.dst, 16))
            f = &s->flows[i];
    assert_non_null(f);
    *tier = f->tier;
    return s->classes->c[f->cls].name;
}

static void flows_classified_by_job(void **st)
{
    (void)st;
    struct state s;
    struct classes cls;
    char err[256];
    classes_init(&cls);
    /* A job-scoped user class (1a) and a DSCP class without a job rule (2). */
    json_t *pol = json_loads("{\"classes\": [{\"name\": \"llama-ctl\", \"match\": {\"job\": [\"llama\"],"
                             " \"dport\": [29500]}}, {\"name\": \"roce\", \"match\": {\"dscp\": [26]}}]}", 0, NULL);
    assert_int_equal(classes_load_json(&cls, pol, err, sizeof(err)), 0);
    json_decref(pol);
    assert_int_equal(state_init(&s, fx_topo(), 1000, STALE, T0), 0);
    s.classes = &cls;
    /* H1..H4: H1, H2 under L1, H3, H4 under L2. */
    const char *flows =
        "{\"probe\": \"L1\", \"flows\": ["
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.1.2\", \"proto\": 17, \"sport\": 1, \"dport\": 4791, \"dscp\": 26, \"if\": \"H2\", \"bps\": 1e9},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.1\", \"proto\": 17, \"sport\": 2, \"dport\": 4791, \"dscp\": 26, \"if\": \"swp1\", \"bps\": 1e9},"
        "{\"src\": \"10.0.1.1\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 3, \"dport\": 4791, \"dscp\": 26, \"if\": \"swp1\", \"bps\": 1e9},"
        "{\"src\": \"10.0.1.2\", \"dst\": \"10.0.2.2\", \"proto\": 17, \"sport\": 4, \"dport\": 29500, \"if\": \"swp1\", \"bps\": 1e9}]}";
    assert_int_equal(fx_post(&s, flows, T0, NULL), 0);
    int tier;
    /* No job yet: the DSCP class. */
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.2.1", 2, &tier), "roce");
    assert_int_equal(tier, -1);

    /* Ranks H1 H2 H3 H4, tp innermost: tp pairs share a leaf, dp pairs do not. */
    struct job *j = calloc(1, sizeof(*j));
    const int dims[] = {JOB_TP, JOB_DP};
    const uint32_t sizes[] = {2, 2};
    uint32_t nodes[4] = {fx_node(s.topo, "H1"), fx_node(s.topo, "H2"), fx_node(s.topo, "H3"), fx_node(s.topo, "H4")};
    assert_int_equal(job_init(j, "llama", 2, dims, sizes, err, sizeof(err)), 0);
    assert_int_equal(job_set_ranks(j, 4, nodes, err, sizeof(err)), 0);
    bool replaced;
    uint64_t gen = s.gen;
    assert_int_equal(state_job_put(&s, j, &replaced), 0);
    assert_false(replaced);
    assert_true(s.gen != gen);
    assert_int_equal(s.job_tier[0][JOB_TP], TOPO_LEAF);
    assert_int_equal(s.job_tier[0][JOB_DP], TOPO_SPINE);
    /* Reclassified at once; the job's dimension wins over the DSCP class
     * (precedence 1b before 2), the tier is what that dimension crosses. */
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.1.2", 1, &tier), "tp");
    assert_int_equal(tier, TOPO_LEAF);
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.2.1", 2, &tier), "dp");
    assert_int_equal(tier, TOPO_SPINE);
    /* Ranks 0 and 3 differ in both dimensions: not a collective pair, so
     * the job's built-ins do not apply and the DSCP class does. */
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.2.2", 3, &tier), "roce");
    /* A job-scoped user class comes first (1a). */
    assert_string_equal(class_of(&s, "10.0.1.2", "10.0.2.2", 4, &tier), "llama-ctl");
    /* Steady reports keep the classification. */
    assert_int_equal(fx_post(&s, flows, T0 + 1, NULL), 0);
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.2.1", 2, &tier), "dp");
    /* Deleting the job puts them back. */
    assert_int_equal(state_job_del(&s, "llama"), 0);
    assert_int_equal(state_job_del(&s, "llama"), -2);
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.2.1", 2, &tier), "roce");
    assert_string_equal(class_of(&s, "10.0.1.1", "10.0.1.2", 1, &tier), "roce");
    state_free(&s);
    classes_free(&cls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(reload_keeps_pins_by_name),
                                       cmocka_unit_test(observations_merge), cmocka_unit_test(edge_guess_narrowed),
                                       cmocka_unit_test(moved_interval_remnant),
                                       cmocka_unit_test(stale_report_beyond_a_failure),
                                       cmocka_unit_test(fabric_change_frees_flows),
                                       cmocka_unit_test(probe_goes_stale_and_data_ages_out),
                                       cmocka_unit_test(loads_from_flows_when_unmeasured),
                                       cmocka_unit_test(look_complete_when_every_live_probe_reported),
                                       cmocka_unit_test(view_warms_up_an_interval_after_the_first_report),
                                       cmocka_unit_test(flows_classified_by_job)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
