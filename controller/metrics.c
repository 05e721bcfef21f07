/*
 * metrics: see metrics.h. Rendering appends into a growing buffer with
 * bounded snprintf calls (open_memstream), one line per sample. Link
 * directions are exported one by one up to a bound and otherwise folded
 * into per-switch aggregates, so that a scrape of a 24K-GPU fabric stays
 * small (docs/api.md, /metrics).
 */
#include "controller/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/version.h"
#include "controller/config.h"
#include "controller/history.h"
#include "controller/ingest.h"
#include "controller/state.h"
#include "controller/summary.h"
#include "policy/classes.h"

const double metrics_buckets[METRICS_NBUCKETS] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                  0.01, 0.025, 0.05, 0.1, 0.5, 1};

void metrics_init(struct metrics *m)
{
    memset(m, 0, sizeof(*m));
    atomic_store(&m->leader, 1);   /* without HA the one tierflowd acts; leader_start says otherwise */
}

void metrics_configure(struct metrics *m, const struct config *c)
{
    /* In the order of enum metrics_host_links; config.c allows only these. */
    static const char *const modes[] = {"off", "aggregate", "all"};
    m->host_links = METRICS_HOST_OFF;
    for (int i = 0; i < 3; i++)
        if (strcmp(c->metrics_host_links, modes[i]) == 0)
            m->host_links = (enum metrics_host_links)i;
    m->max_link_series = c->metrics_max_link_series;
}

void metrics_http(struct metrics *m, unsigned code)
{
    if (code < 600)
        atomic_fetch_add_explicit(&m->http[code], 1, memory_order_relaxed);
}

void metrics_round(struct metrics *m, double seconds, uint32_t moved)
{
    atomic_fetch_add(&m->rounds, 1);
    atomic_fetch_add(&m->moves, moved);
    int b = 0;
    while (b < METRICS_NBUCKETS && seconds > metrics_buckets[b])
        b++;
    atomic_fetch_add(&m->dur_bucket[b], 1);
    atomic_fetch_add(&m->dur_count, 1);
    double old = atomic_load(&m->dur_sum);
    while (!atomic_compare_exchange_weak(&m->dur_sum, &old, old + seconds))
        ;
}

uint64_t metrics_counter(const uint64_t *c)
{
    return __atomic_load_n(c, __ATOMIC_RELAXED);
}

#define U(x) ((unsigned long long)atomic_load(&(x)))

static const char *const source_name[2] = {"estimated", "measured"};

/* One aggregate series key: a switch, the tier of its link's far end, the
 * way the directions go (tx: leaving the switch) and where their load comes
 * from. */
struct agg {
    double max_util, bytes;
    bool seen;
};
#define AGG_KEY(node, peer, rx, src) ((((size_t)(node) * TOPO_NTIERS_MAX + (peer)) * 2 + (rx)) * 2 + (src))

static void help(FILE *f, const char *name, const char *type, const char *text)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* A series of one sample, its name written once: a count, or a ratio. */
static void one(FILE *f, const char *name, const char *type, const char *text, unsigned long long v)
{
    help(f, name, type, text);
    fprintf(f, "%s %llu\n", name, v);
}

static void one_ratio(FILE *f, const char *name, const char *text, double v)
{
    help(f, name, "gauge", text);
    fprintf(f, "%s %.6g\n", name, v);
}

/* Which directions are exported one by one (each[d]; the bound and
 * metrics.host_links decide), where each one's load comes from (src[d]:
 * measured), and the per-switch aggregates the others fold into. */
static void fold(const struct state *s, const struct metrics *m, double now, const double *bps, bool *each, bool *src,
                 struct agg *agg)
{
    const struct topo *t = s->topo;
    uint32_t nd = 2 * t->nlinks, nswitch = 0;
    for (uint32_t d = 0; d < nd; d++)
        nswitch += topo_dir_is_switch(t, d);
    bool switch_each = (long)nswitch <= m->max_link_series;
    for (uint32_t d = 0; d < nd; d++) {
        bool host = !topo_dir_is_switch(t, d);
        src[d] = state_dir_measured(s, d, bps[d], now);
        each[d] = host ? m->host_links == METRICS_HOST_ALL : switch_each;
        if (each[d] || (host && m->host_links == METRICS_HOST_OFF))
            continue;
        double u = state_dir_util(s, d, bps[d]);
        for (int rx = 0; rx < 2; rx++) {
            uint32_t node = rx ? topo_dir_to(t, d) : topo_dir_from(t, d);
            uint32_t peer = rx ? topo_dir_from(t, d) : topo_dir_to(t, d);
            if (t->nodes[node].tier == TOPO_HOST)
                continue;
            struct agg *g = &agg[AGG_KEY(node, t->nodes[peer].tier, rx, src[d])];
            if (!g->seen || u > g->max_util)
                g->max_util = u;
            g->bytes += s->dirs[d].tx_bytes;
            g->seen = true;
        }
    }
}

/* The per-switch aggregates fold() made, keyed by AGG_KEY. */
static void aggregates(FILE *f, const struct topo *t, const struct agg *agg)
{
    help(f, "tierflow_switch_links_max_utilization_ratio", "gauge",
         "Highest utilisation among a switch's link directions to the peer tier that are not exported one by "
         "one (dir=tx: leaving the switch, rx: arriving).");
    for (size_t k = 0; k < AGG_KEY(t->nnodes, 0, 0, 0); k++)
        if (agg[k].seen)
            fprintf(f, "tierflow_switch_links_max_utilization_ratio{switch=\"%s\",peer=\"%s\",dir=\"%s\",source=\"%s\"} %.6g\n",
                    t->nodes[k / (TOPO_NTIERS_MAX * 4)].name, topo_tier_name((int)(k / 4 % TOPO_NTIERS_MAX)),
                    k / 2 % 2 ? "rx" : "tx", source_name[k % 2], agg[k].max_util);
    help(f, "tierflow_switch_links_transmit_bytes_total", "counter",
         "Bytes probes measured on a switch's link directions to the peer tier that are not exported one by one.");
    for (size_t k = 0; k < AGG_KEY(t->nnodes, 0, 0, 0); k++)
        if (agg[k].seen)
            fprintf(f, "tierflow_switch_links_transmit_bytes_total{switch=\"%s\",peer=\"%s\",dir=\"%s\",source=\"%s\"} %.17g\n",
                    t->nodes[k / (TOPO_NTIERS_MAX * 4)].name, topo_tier_name((int)(k / 4 % TOPO_NTIERS_MAX)),
                    k / 2 % 2 ? "rx" : "tx", source_name[k % 2], floor(agg[k].bytes));
}

/* Per link direction: utilisation (labelled with its source), CE fraction,
 * bytes and oper state, for the directions `each` selects; the others
 * fold into per-switch aggregates (see docs/api.md, /metrics). */
static void links(FILE *f, struct state *s, const struct metrics *m, double now)
{
    const struct topo *t = s->topo;
    uint32_t nd = 2 * t->nlinks;
    double *bps = calloc(nd + 1, sizeof(double)), *ce = calloc(nd + 1, sizeof(double));
    bool *each = calloc(nd + 1, sizeof(bool)), *src = calloc(nd + 1, sizeof(bool));
    struct agg *agg = calloc(AGG_KEY(t->nnodes, 0, 0, 0) + 1, sizeof(*agg));
    if (!bps || !ce || !each || !src || !agg)
        goto out;
    state_dir_loads(s, now, bps, ce, NULL);
    fold(s, m, now, bps, each, src, agg);

    help(f, "tierflow_link_utilization_ratio", "gauge",
         "Load of a link direction over its rate; source=measured: a probe's counter, estimated: the sum of "
         "the flows' rates.");
    for (uint32_t d = 0; d < nd; d++)
        if (each[d])
            fprintf(f, "tierflow_link_utilization_ratio{from=\"%s\",to=\"%s\",source=\"%s\"} %.6g\n",
                    t->nodes[topo_dir_from(t, d)].name, t->nodes[topo_dir_to(t, d)].name, source_name[src[d]],
                    state_dir_util(s, d, bps[d]));
    static const char *const names[] = {"tierflow_link_transmit_bytes_total", "tierflow_link_ce_ratio",
                                        "tierflow_link_up"};
    static const char *const types[] = {"counter", "gauge", "gauge"};
    static const char *const text[] = {
        "Bytes probes measured leaving the sender of a link direction.",
        "Rate-weighted ECN-CE fraction of the flows on a link direction.",
        "1 unless a probe or the switches' routing says the link direction is down (or it is in its hold-down)."};
    for (int k = 0; k < 3; k++) {
        help(f, names[k], types[k], text[k]);
        for (uint32_t d = 0; d < nd; d++)
            if (each[d])
                fprintf(f, k == 0 ? "%s{from=\"%s\",to=\"%s\"} %.17g\n" : "%s{from=\"%s\",to=\"%s\"} %.6g\n",
                        names[k], t->nodes[topo_dir_from(t, d)].name, t->nodes[topo_dir_to(t, d)].name,
                        k == 0 ? floor(s->dirs[d].tx_bytes) : k == 1 ? ce[d] : (double)s->dirs[d].up);
    }
    /* Only where the sender's own report gave it: an absent series is "not
     * seen", not an empty queue. */
    help(f, "tierflow_link_queue_delay_seconds", "gauge",
         "Root qdisc backlog at the sender's last report over the link direction's capacity (docs/telemetry.md).");
    for (uint32_t d = 0; d < nd; d++) {
        double q = each[d] ? state_dir_queue_delay(s, d, false, now) : -1;
        if (q >= 0)
            fprintf(f, "tierflow_link_queue_delay_seconds{from=\"%s\",to=\"%s\"} %.6g\n",
                    t->nodes[topo_dir_from(t, d)].name, t->nodes[topo_dir_to(t, d)].name, q);
    }
    /* Health: every direction exported one by one, and any other switch
     * direction that is not healthy (few: what an operator must see). */
    help(f, "tierflow_link_health", "gauge",
         "Gray-failure health of a link direction (docs/health.md): 0 healthy, below 0.5 bad rounds not yet "
         "enough, 0.5-0.9 suspect (by confidence), 1 drained.");
    for (uint32_t d = 0; d < nd; d++)
        if (each[d] || (topo_dir_is_switch(t, d) && s->dirs[d].health > 0))
            fprintf(f, "tierflow_link_health{from=\"%s\",to=\"%s\"} %.3g\n", t->nodes[topo_dir_from(t, d)].name,
                    t->nodes[topo_dir_to(t, d)].name, s->dirs[d].health);
    aggregates(f, t, agg);
out:
    free(bps);
    free(ce);
    free(each);
    free(src);
    free(agg);
}

static void fabric(FILE *f, struct state *s, const struct metrics *m, double now)
{
    const struct topo *t = s->topo;
    links(f, s, m, now);
    struct history_summary hs;       /* switch-to-switch figures, as the history chart has them */
    history_summary(s, now, &hs);
    one_ratio(f, "tierflow_max_link_utilization_ratio", "Highest utilisation of a switch-to-switch link direction.",
              hs.max_util);
    one_ratio(f, "tierflow_imbalance_ratio", "Fat flows on the busiest switch-to-switch link direction over the "
              "mean per direction (1: even; 0: no fat flows).", hs.imbalance);
    one(f, "tierflow_link_directions_down", "gauge", "Link directions not usable for placement.", hs.down);

    struct summary sum;
    summary_get(s, NULL, now, &sum);
    one(f, "tierflow_flows", "gauge", "Flows in state that are not stale.", sum.flows);
    help(f, "tierflow_fat_flows", "gauge", "Fat flows per traffic class.");
    for (int c = 0; s->classes && c < (int)s->classes->n; c++)
        fprintf(f, "tierflow_fat_flows{class=\"%s\"} %llu\n", s->classes->c[c].name,
                (unsigned long long)sum.fat_by_class[c]);

    one(f, "tierflow_probes", "gauge", "Probes that have reported.", sum.probes);
    help(f, "tierflow_probe_last_report_timestamp_seconds", "gauge",
         "When a probe's last report was applied (Unix time), for the probes that have reported.");
    for (uint32_t n = 0; n < t->nnodes; n++)
        if (s->probes[n].last_seen > 0)
            fprintf(f, "tierflow_probe_last_report_timestamp_seconds{probe=\"%s\"} %.3f\n", t->nodes[n].name,
                    s->probes[n].last_seen);
    one(f, "tierflow_probes_stale", "gauge", "Probes silent for longer than the stale limit.", sum.stale);
    one(f, "tierflow_probe_reports_total", "counter", "Probe reports accepted.", s->reports_total);
    one(f, "tierflow_probe_reports_rejected_total", "counter", "Probe reports rejected.",
        metrics_counter(&s->reports_rejected));
    ingest_metrics(s, f);
}

int metrics_render(struct metrics *m, struct state *s, double now, char **out, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return -ENOMEM;
    help(f, "tierflow_build_info", "gauge", "The running tierflowd's version.");
    fprintf(f, "tierflow_build_info{version=\"%s\"} 1\n", tf_version);
    pthread_rwlock_rdlock(&s->lock);
    fabric(f, s, m, now);
    pthread_rwlock_unlock(&s->lock);
    one(f, "tierflow_rebalance_rounds_total", "counter", "Rebalance rounds run.", U(m->rounds));
    one(f, "tierflow_rebalance_moves_total", "counter", "Flows moved to another path.", U(m->moves));
    one(f, "tierflow_rebalance_report_rounds_total", "counter", "Rounds run early because a report showed a new "
        "contended link direction.", U(m->react_rounds));
    one(f, "tierflow_rebalance_futile_moves_total", "counter", "Moves judged futile afterwards (the flow gained "
        "nothing, its new path still contended); the flow is backed off.", U(m->futile_moves));
    one(f, "tierflow_rebalance_starved_moves_total", "counter", "Moves of flows below the fat threshold taken in "
        "because a congested direction shared with fat flows starved them (counted in moves_total too).",
        U(m->starved_moves));
    one(f, "tierflow_rebalance_harm_withdrawn_total", "counter", "Pins withdrawn because the flows a round moved "
        "did measurably worse than before the move.", U(m->harm_withdrawn));
    help(f, "tierflow_rebalance_duration_seconds", "histogram", "Time one rebalance round took.");
    unsigned long long cum = 0;
    for (int b = 0; b < METRICS_NBUCKETS; b++) {
        cum += U(m->dur_bucket[b]);
        fprintf(f, "tierflow_rebalance_duration_seconds_bucket{le=\"%g\"} %llu\n", metrics_buckets[b], cum);
    }
    cum += U(m->dur_bucket[METRICS_NBUCKETS]);
    fprintf(f, "tierflow_rebalance_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    fprintf(f, "tierflow_rebalance_duration_seconds_sum %.9g\ntierflow_rebalance_duration_seconds_count %llu\n",
            atomic_load(&m->dur_sum), U(m->dur_count));
    one(f, "tierflow_backend_errors_total", "counter", "Route backend failures.", U(m->backend_errors));
    one(f, "tierflow_leader", "gauge", "1 while this tierflowd acts (leads its election, or runs without HA), "
        "else 0.", U(m->leader));
    one(f, "tierflow_elections_total", "counter", "Elections this tierflowd won (terms it led).", U(m->elections));
    help(f, "tierflow_http_requests_total", "counter", "HTTP requests by status code.");
    for (unsigned c = 100; c < 600; c++)
        if (U(m->http[c]))
            fprintf(f, "tierflow_http_requests_total{code=\"%u\"} %llu\n", c, U(m->http[c]));
    if (fclose(f) != 0) {
        free(buf);
        return -ENOMEM;
    }
    *out = buf;
    *len = n;
    return 0;
}
