/*
 * report: see report.h. Flow selection keeps memory bounded: the report
 * holds at most REPORT_MAX_FAT + top_n flows whatever the table size, and the
 * snapshot holds one small entry per live flow (bounded by --max-flows).
 */
#include "probes/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/reportspec.h"
#include "common/util.h"

int report_snap_take(struct report_snap *s, struct flowtab *ft)
{
    size_t need = flowtab_count(ft);
    if (need > s->cap) {
        struct report_snap_ent *e = realloc(s->ent, need * sizeof(*e));
        if (!e)
            return -ENOMEM;
        s->ent = e;
        s->cap = need;
    }
    s->n = 0;
    uint32_t cur = 0;
    const struct flow *f;
    while ((f = flowtab_next(ft, &cur)) && s->n < s->cap)
        s->ent[s->n++] = (struct report_snap_ent){f, f->ivl_pkts, f->ivl_ce, f->ivl_ect,
                                                  f->ivl_cnps, f->ivl_retx, f->ivl_naks, f->ivl_tail};
    return 0;
}

void report_snap_free(struct report_snap *s)
{
    free(s->ent);
    memset(s, 0, sizeof(*s));
}

/* Closing an interval only removes flows (expiry) and never moves them, so
 * the flows after the close are a subsequence, in the same slot order, of
 * those in the snapshot: a forward merge finds each one's entry. */
static const struct report_snap_ent *snap_find(const struct report_snap *s, size_t *pos,
                                               const struct flow *f)
{
    while (*pos < s->n && s->ent[*pos].f != f)
        (*pos)++;
    return *pos < s->n ? &s->ent[*pos] : NULL;
}

static void flow_fill(struct report_flow *o, struct flowtab *ft, const struct flow *f,
                      const struct report_snap_ent *e, const char *const *ifnames, size_t nif)
{
    memset(o, 0, sizeof(*o));
    o->key = f->key;
    o->ifname = f->ifidx < nif ? ifnames[f->ifidx] : "?";
    o->bytes = f->bytes;
    o->pkts = f->pkts;
    o->bps = f->ivl_bps;
    o->sampling = f->sampling ? f->sampling : 1;
    o->dscp = f->dscp;
    o->source = f->source;
    o->fat = f->fat;
    if (e && e->pkts) {
        o->ce_frac = (double)e->ce / (double)e->pkts;
        o->ect_frac = (double)e->ect / (double)e->pkts;
    }
    o->cnp = e ? e->cnps : 0;
    /* One sequence counter per flow: a TCP flow's are retransmissions,
     * a RoCE flow's PSNs out of sequence (flowtab.h). */
    if (e && f->key.proto == 6) {
        o->retx_pkts = e->retx;
        o->tail_retx = e->tail;
    } else if (e)
        o->psn_oos = e->retx;
    o->naks = e ? e->naks : 0;
    /* Its arrival view, when the probe captured it arriving (flowtab.h):
     * the holes of the interval just closed and the interface. */
    struct flow_key k = f->key;
    k.in = 1;
    const struct flow *a = flowtab_lookup(ft, &k);
    if (a && a->ifidx < nif) {
        o->in_ifname = ifnames[a->ifidx];
        o->holes = a->closed_retx;
    }
}

/* Min-heap on bps over the non-fat candidates, so that top_n survive. */
static void heap_down(struct report_flow *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && h[l].bps < h[m].bps)
            m = l;
        if (l + 1 < n && h[l + 1].bps < h[m].bps)
            m = l + 1;
        if (m == i)
            return;
        struct report_flow t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void heap_up(struct report_flow *h, size_t i)
{
    while (i && h[(i - 1) / 2].bps > h[i].bps) {
        struct report_flow t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static int by_rate_desc(const void *a, const void *b)
{
    const struct report_flow *x = a, *y = b;
    if (x->fat != y->fat)
        return x->fat ? -1 : 1;
    return (x->bps < y->bps) - (x->bps > y->bps);
}

int report_pick_flows(struct report *r, struct flowtab *ft, const struct report_snap *s,
                      unsigned top_n, const char *const *ifnames, size_t nif)
{
    size_t cap = (size_t)top_n + REPORT_MAX_FAT;
    if (r->flows_cap < cap) {
        struct report_flow *n = realloc(r->flows, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        r->flows = n;
        r->flows_cap = cap;
    }
    /* Fat flows fill the array from the end, the heap grows from the start. */
    struct report_flow *heap = r->flows, *fat = r->flows + top_n;
    size_t nheap = 0, nfat = 0, pos = 0;
    uint32_t cur = 0;
    const struct flow *f;
    while ((f = flowtab_next(ft, &cur))) {
        struct report_flow o;
        if (f->key.in)
            continue;   /* an arrival view: reported with its flow */
        flow_fill(&o, ft, f, snap_find(s, &pos, f), ifnames, nif);
        if (o.fat && nfat < REPORT_MAX_FAT) {
            fat[nfat++] = o;
        } else if (nheap < top_n) {
            heap[nheap] = o;
            heap_up(heap, nheap++);
        } else if (top_n && o.bps > heap[0].bps) {
            heap[0] = o;
            heap_down(heap, nheap, 0);
        }
    }
    memmove(r->flows + nheap, fat, nfat * sizeof(*fat));
    r->nflows = nheap + nfat;
    qsort(r->flows, r->nflows, sizeof(*r->flows), by_rate_desc);
    return 0;
}

void report_free_flows(struct report *r)
{
    free(r->flows);
    r->flows = NULL;
    r->nflows = r->flows_cap = 0;
}

static int jset(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *link_json(const struct report_link *l)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = jset(o, "if", json_string(l->name)) | jset(o, "tx_bps", json_real(l->tx_bps)) |
              jset(o, "rx_bps", json_real(l->rx_bps)) |
              jset(o, "drops", json_integer((json_int_t)l->drops)) |
              jset(o, "ce_pkts", json_integer((json_int_t)l->ce_pkts)) |
              jset(o, "tx_pps", json_real(l->tx_pps)) | jset(o, "rx_pps", json_real(l->rx_pps)) |
              jset(o, "errors", json_integer((json_int_t)l->errors)) |
              jset(o, "speed_bps", json_real(l->speed_bps));
    if (l->carrier_changes) /* the controller reads absent as 0: reports stay small */
        bad |= jset(o, "carrier_changes", json_integer((json_int_t)l->carrier_changes));
    if (l->oper)
        bad |= jset(o, "oper", json_string(l->oper));
    if (l->source)
        bad |= jset(o, "source", json_string(l->source));
    if (l->has_qdisc)
        bad |= jset(o, "qdisc_backlog", json_integer((json_int_t)l->qdisc_backlog)) |
               jset(o, "qdisc_overlimits", json_integer((json_int_t)l->qdisc_overlimits));
    if (l->has_qdisc || l->has_queue_drops)
        bad |= jset(o, "qdisc_drops", json_integer((json_int_t)l->qdisc_drops));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *flow_json(const struct report_flow *f)
{
    char src[64], dst[64];
    json_t *o = json_object();
    if (!o)
        return NULL;
    int bad = jset(o, "src", json_string(tf_addr_str(f->key.af, f->key.src, src, sizeof(src)))) |
              jset(o, "dst", json_string(tf_addr_str(f->key.af, f->key.dst, dst, sizeof(dst)))) |
              jset(o, "proto", json_integer(f->key.proto)) |
              jset(o, "sport", json_integer(f->key.sport)) |
              jset(o, "dport", json_integer(f->key.dport)) |
              jset(o, "qp", json_integer(f->key.qp)) |
              jset(o, "vlan", json_integer(f->key.vlan[0])) |
              jset(o, "dscp", json_integer(f->dscp)) | jset(o, "if", json_string(f->ifname)) |
              jset(o, "bytes", json_integer((json_int_t)f->bytes)) |
              jset(o, "pkts", json_integer((json_int_t)f->pkts)) |
              jset(o, "bps", json_real(f->bps)) | jset(o, "ce_frac", json_real(f->ce_frac)) |
              jset(o, "cnp", json_integer((json_int_t)f->cnp)) |
              jset(o, "fat", json_boolean(f->fat)) |
              jset(o, "ect_frac", json_real(f->ect_frac)) |
              jset(o, "source", json_string(reportspec_source_name(f->source))) |
              jset(o, "sampling", json_integer(f->sampling));
    if (f->key.vlan[1])
        bad |= jset(o, "vlan_inner", json_integer(f->key.vlan[1]));
    /* Loss signals only when non-zero: the controller reads absent as 0. */
    const struct {
        const char *k;
        uint64_t v;
    } loss[] = {{"retx_pkts", f->retx_pkts}, {REPORTSPEC_TAIL_RETX, f->tail_retx}, {"psn_oos", f->psn_oos},
                {"naks", f->naks}};
    for (size_t i = 0; i < TF_ARRAY_SIZE(loss); i++)
        if (loss[i].v)
            bad |= jset(o, loss[i].k, json_integer((json_int_t)loss[i].v));
    /* Holes go with the arrival they were seen at, 0 included: a clean
     * arrival is evidence too (docs/health.md). */
    if (f->in_ifname)
        bad |= jset(o, REPORTSPEC_IN_IF, json_string(f->in_ifname)) |
               jset(o, REPORTSPEC_HOLES, json_integer((json_int_t)f->holes));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *telemetry_json(const struct report_telemetry *t)
{
    json_t *o = json_object();
    int bad = !o;
    const struct {
        const char *k;
        uint64_t v;
    } f[] = {
        {"sflow_datagrams", t->sflow_datagrams}, {"sflow_bad", t->sflow_bad},
        {"sflow_other_versions", t->sflow_other_versions},
        {"sflow_flow_samples", t->sflow_flow_samples},
        {"sflow_counter_samples", t->sflow_counter_samples},
        {"sflow_lost_datagrams", t->sflow_lost_datagrams},
        {"sflow_lost_samples", t->sflow_lost_samples},
        {"sflow_unattributed", t->sflow_unattributed}, {"erspan_frames", t->erspan_frames},
        {"erspan_bad", t->erspan_bad}, {"erspan_truncated", t->erspan_truncated},
        {"erspan_unattributed", t->erspan_unattributed},
        {"sflow_refused", t->sflow_refused}, {"erspan_refused", t->erspan_refused},
    };
    for (size_t i = 0; !bad && i < TF_ARRAY_SIZE(f); i++)
        bad = jset(o, f[i].k, json_integer((json_int_t)f[i].v));
    for (int i = SFLOW_OK + 1; !bad && i < SFLOW_REJ_N; i++) {
        char k[48];
        snprintf(k, sizeof(k), "sflow_rejected_%s", sflow_reject_name(i));
        bad = jset(o, k, json_integer((json_int_t)t->sflow_rejected[i]));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *stats_json(const struct report_stats *s)
{
    json_t *o = json_object(), *ops = json_object();
    if (!o || !ops) {
        json_decref(o);
        json_decref(ops);
        return NULL;
    }
    int bad = jset(o, "roce_opcodes", ops);
    for (int i = 0; i < 256; i++) {
        char k[8];
        if (s->roce_opcodes[i]) {
            snprintf(k, sizeof(k), "0x%02x", i);
            bad |= jset(ops, k, json_integer((json_int_t)s->roce_opcodes[i]));
        }
    }
    bad |= jset(o, "pkts", json_integer((json_int_t)s->pkts)) |
           jset(o, "bytes", json_integer((json_int_t)s->bytes)) |
           jset(o, "unparsed", json_integer((json_int_t)s->unparsed)) |
           jset(o, "truncated", json_integer((json_int_t)s->truncated)) |
           jset(o, "evicted", json_integer((json_int_t)s->evicted)) |
           jset(o, "pcap_drops", json_integer((json_int_t)s->pcap_drops)) |
           jset(o, "post_dropped", json_integer((json_int_t)s->post_dropped)) |
           jset(o, "post_errors", json_integer((json_int_t)s->post_errors)) |
           jset(o, "post_rejected", json_integer((json_int_t)s->post_rejected));
    if (s->tel.has_telemetry)
        bad |= jset(o, "telemetry", telemetry_json(&s->tel));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *report_to_json(const struct report *r)
{
    json_t *o = json_object(), *links = json_array(), *flows = json_array();
    int bad = !o || !links || !flows;
    for (size_t i = 0; !bad && i < r->nlinks; i++)
        bad = json_array_append_new(links, link_json(&r->links[i])) != 0;
    for (size_t i = 0; !bad && i < r->nflows; i++)
        bad = json_array_append_new(flows, flow_json(&r->flows[i])) != 0;
    if (!bad)
        bad = jset(o, "probe", json_string(r->probe)) | jset(o, "ts", json_real(r->ts)) |
              jset(o, "interval_s", json_real(r->interval_s)) |
              (r->partial ? jset(o, "partial", json_true()) : 0) | jset(o, "links", links) |
              jset(o, "flows", flows) | jset(o, "stats", stats_json(&r->stats));
    else {
        json_decref(links);
        json_decref(flows);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* 15 significant digits: keeps epoch timestamps to the microsecond and
 * prints 0.1 as 0.1. */
#define REPORT_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

char *report_dumps(const struct report *r)
{
    json_t *o = report_to_json(r);
    char *s = o ? json_dumps(o, REPORT_JSON_FLAGS) : NULL;
    json_decref(o);
    return s;
}

static const char *si(double v, char *buf, size_t len)
{
    static const char pfx[] = " kMGT";
    int i = 0;
    while (v >= 1000.0 && i < 4) {
        v /= 1000.0;
        i++;
    }
    snprintf(buf, len, i ? "%.2f%c" : "%.0f", v, pfx[i]);
    return buf;
}

static void print_table(const struct report *r, FILE *out)
{
    char a[16], b[16], c[16], src[64], dst[64];
    const struct report_stats *s = &r->stats;
    fprintf(out, "probe %s  ts %.3f  interval %.3f s  flows %zu\n", r->probe, r->ts,
            r->interval_s, r->nflows);
    fprintf(out, "  %-16s %10s %10s %10s %8s %8s %8s %7s %10s\n", "link", "tx_bps", "rx_bps",
            "speed", "drops", "errors", "ce_pkts", "carrier", "oper");
    for (size_t i = 0; i < r->nlinks; i++) {
        const struct report_link *l = &r->links[i];
        fprintf(out, "  %-16s %10s %10s %10s %8llu %8llu %8llu %7llu %10s\n", l->name,
                si(l->tx_bps, a, sizeof(a)), si(l->rx_bps, b, sizeof(b)),
                si(l->speed_bps, c, sizeof(c)), (unsigned long long)l->drops,
                (unsigned long long)l->errors, (unsigned long long)l->ce_pkts,
                (unsigned long long)l->carrier_changes, l->oper ? l->oper : "-");
    }
    fprintf(out, "  %-40s %-40s %5s %5s %8s %5s %4s %-10s %10s %8s %6s %4s %6s %4s %3s\n", "src",
            "dst", "proto", "sport", "dport/qp", "vlan", "dscp", "if", "bps", "pkts", "ce",
            "cnp", "retx", "nak", "fat");
    for (size_t i = 0; i < r->nflows; i++) {
        const struct report_flow *f = &r->flows[i];
        char port[24];
        if (f->key.qp)
            snprintf(port, sizeof(port), "%u/0x%x", f->key.dport, f->key.qp);
        else
            snprintf(port, sizeof(port), "%u", f->key.dport);
        /* retx: TCP retransmissions or RoCE PSNs out of sequence (one per flow) */
        fprintf(out, "  %-40s %-40s %5u %5u %8s %5u %4u %-10s %10s %8llu %6.3f %4llu %6llu %4llu %3s\n",
                tf_addr_str(f->key.af, f->key.src, src, sizeof(src)),
                tf_addr_str(f->key.af, f->key.dst, dst, sizeof(dst)), f->key.proto,
                f->key.sport, port, f->key.vlan[0], f->dscp, f->ifname,
                si(f->bps, a, sizeof(a)), (unsigned long long)f->pkts, f->ce_frac,
                (unsigned long long)f->cnp, (unsigned long long)(f->retx_pkts + f->psn_oos),
                (unsigned long long)f->naks, f->fat ? "yes" : "");
    }
    fprintf(out, "  stats: pkts %llu bytes %llu unparsed %llu truncated %llu evicted %llu "
                 "pcap_drops %llu post_dropped %llu post_errors %llu post_rejected %llu\n",
            (unsigned long long)s->pkts, (unsigned long long)s->bytes,
            (unsigned long long)s->unparsed, (unsigned long long)s->truncated,
            (unsigned long long)s->evicted, (unsigned long long)s->pcap_drops,
            (unsigned long long)s->post_dropped, (unsigned long long)s->post_errors,
            (unsigned long long)s->post_rejected);
}

int report_print(const struct report *r, enum report_fmt fmt, FILE *out)
{
    if (fmt == REPORT_TABLE) {
        print_table(r, out);
    } else {
        char *s = report_dumps(r);
        if (!s)
            return -ENOMEM;
        fputs(s, out);
        fputc('\n', out);
        free(s);
    }
    return fflush(out) == 0 ? 0 : -errno;
}
