/*
 * mirror: see mirror.h.
 *
 * Attribution. An sFlow flow sample is accounted on the port its packet LEFT
 * the switch by (the output ifIndex): that port's link direction is the path
 * the packet took, which is what a probe on the switch would report. Samples
 * with no single output port (unknown, discarded, or multiple) cannot be put
 * on a path and are counted as unattributed. An ERSPAN mirror is accounted on
 * the port its (source, session) is mapped to; the mapping names the egress
 * side (see mirrormap.h).
 *
 * Estimation. A 1-in-N sample counts as N packets of its length, so a flow's
 * byte estimate is N times the sampled bytes. With n samples in an interval
 * the relative standard error of the estimate is about 1/sqrt(n) (samples are
 * close to a Poisson process when N is large), 1.96/sqrt(n) at 95%. The flow
 * table only declares a sampled flow fat once it has enough samples for that
 * error to be tolerable (FLOWTAB_MIN_SAMPLES); see docs/telemetry.md.
 */
#include "probes/mirror.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/dlt.h>

#include "common/util.h"
#include "probes/erspan.h"
#include "probes/flowtab.h"
#include "probes/sflow.h"

#define PORT_NONE 0xffff
#define MIRROR_MAX_UNMAPPED 1024
#define COUNTER_FRESH_S 90.0 /* sFlow counter polling is often 20-30 s */

enum { KIND_ERSPAN = 0, KIND_SFLOW = 1 };

struct mport {
    char ifname[16];
    double link_bps;          /* what fat shares are measured against */
    bool rate_from_map;       /* link_bps came from the mapping: keep it */
    const char *source;       /* "sflow" or "erspan" */
    uint64_t ivl_bytes, ivl_pkts, ivl_ce;   /* estimated (scaled) this interval */
    /* From the switch's own interface counters (sFlow counter samples). */
    bool have_ctr, have_rate;
    uint64_t last_in, last_out, last_drops, last_errs;
    double last_t, rate_t;    /* agent uptime of the last sample; wall time of the last rate */
    double tx_bps, rx_bps;
    uint64_t ivl_drops, ivl_errs;
    const char *oper;
};

struct mview {
    char node[REPORT_NAME_LEN];
    bool mapped;
    struct flowtab *ft;
    uint32_t nports;
    struct mport ports[MIRROR_MAX_PORTS];
    const char *ifnames[MIRROR_MAX_PORTS];
    double link_bps[MIRROR_MAX_PORTS];
    struct report_link links[MIRROR_MAX_PORTS];
    struct report rep;
    struct report_snap snap;
    uint64_t pkts, bytes, unparsed, truncated;
    uint64_t roce_opcodes[256];
};

struct unmapped {
    uint8_t kind, af;
    uint8_t addr[16];
    uint32_t id;
    uint16_t view, port;
};

struct mirror {
    const struct mirrormap *map;
    struct mirror_opts o;
    struct mview *views[MIRROR_MAX_VIEWS];
    uint32_t nviews;
    uint16_t *map_view, *map_port; /* per mapping port: its view and port, or PORT_NONE */
    struct unmapped un[MIRROR_MAX_UNMAPPED];
    uint32_t nun;
    struct sflow_seq *seq;
    struct sflow_stats sst;
    struct report_telemetry tel;
    double now;               /* arrival time of the datagram being parsed */
};

int mirror_new(const struct mirrormap *map, const struct mirror_opts *o, struct mirror **out)
{
    struct mirror *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->map = map;
    m->o = *o;
    uint32_t np = mirrormap_nports(map);
    m->map_view = malloc(sizeof(uint16_t) * (np ? np : 1));
    m->map_port = malloc(sizeof(uint16_t) * (np ? np : 1));
    m->seq = sflow_seq_new();
    if (!m->map_view || !m->map_port || !m->seq) {
        mirror_free(m);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < np; i++)
        m->map_view[i] = m->map_port[i] = PORT_NONE;
    m->tel.has_telemetry = true;
    *out = m;
    return 0;
}

void mirror_free(struct mirror *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->nviews; i++) {
        flowtab_free(m->views[i]->ft);
        report_free_flows(&m->views[i]->rep);
        report_snap_free(&m->views[i]->snap);
        free(m->views[i]);
    }
    sflow_seq_free(m->seq);
    free(m->map_view);
    free(m->map_port);
    free(m);
}

/* ---- views and ports --------------------------------------------------- */

static int view_get(struct mirror *m, const char *node, bool mapped, uint16_t *vi)
{
    for (uint32_t i = 0; i < m->nviews; i++)
        if (strcmp(m->views[i]->node, node) == 0) {
            *vi = (uint16_t)i;
            return 0;
        }
    if (m->nviews == MIRROR_MAX_VIEWS)
        return -ENOSPC;
    struct mview *v = calloc(1, sizeof(*v));
    if (!v)
        return -ENOMEM;
    v->ft = flowtab_new(m->o.max_flows, m->o.idle_timeout);
    if (!v->ft) {
        free(v);
        return -ENOMEM;
    }
    tf_strlcpy(v->node, node, sizeof(v->node));
    tf_strlcpy(v->rep.probe, node, sizeof(v->rep.probe));
    v->mapped = mapped;
    *vi = (uint16_t)m->nviews;
    m->views[m->nviews++] = v;
    return 0;
}

static int port_get(struct mirror *m, struct mview *v, const char *ifname, double gbps,
                    const char *source, uint16_t *pi)
{
    for (uint32_t i = 0; i < v->nports; i++)
        if (strcmp(v->ports[i].ifname, ifname) == 0) {
            *pi = (uint16_t)i;
            return 0;
        }
    if (v->nports == MIRROR_MAX_PORTS)
        return -ENOSPC;
    struct mport *p = &v->ports[v->nports];
    tf_strlcpy(p->ifname, ifname, sizeof(p->ifname));
    p->rate_from_map = gbps > 0;
    p->link_bps = (gbps > 0 ? gbps : m->o.default_gbps) * 1e9;
    p->source = source;
    v->ifnames[v->nports] = p->ifname;
    *pi = (uint16_t)v->nports++;
    return 0;
}

/* The view and port for a mirror session or an sFlow data source. */
static int port_for(struct mirror *m, int kind, int af, const uint8_t *addr, uint32_t id,
                    struct mview **vout, uint16_t *pout)
{
    const char *source = kind == KIND_SFLOW ? "sflow" : "erspan";
    uint32_t mp = kind == KIND_SFLOW ? mirrormap_sflow(m->map, af, addr, id)
                                     : mirrormap_erspan(m->map, af, addr, (uint16_t)id);
    uint16_t vi, pi;
    int r;
    if (mp != MIRRORMAP_NONE) {
        if (m->map_view[mp] == PORT_NONE) {
            const struct mirrormap_port *p = mirrormap_port(m->map, mp);
            if ((r = view_get(m, p->node, true, &vi)) < 0 ||
                (r = port_get(m, m->views[vi], p->ifname, p->link_gbps, source, &pi)) < 0)
                return r;
            m->map_view[mp] = vi;
            m->map_port[mp] = pi;
        }
        *vout = m->views[m->map_view[mp]];
        *pout = m->map_port[mp];
        return 0;
    }
    size_t alen = af == 6 ? 16 : 4;
    for (uint32_t i = 0; i < m->nun; i++) {
        struct unmapped *u = &m->un[i];
        if (u->kind == kind && u->af == af && u->id == id && memcmp(u->addr, addr, alen) == 0) {
            *vout = m->views[u->view];
            *pout = u->port;
            return 0;
        }
    }
    if (m->nun == MIRROR_MAX_UNMAPPED)
        return -ENOSPC;
    char a[INET6_ADDRSTRLEN], node[REPORT_NAME_LEN], ifname[16];
    tf_addr_str(af == 6 ? 6 : 4, addr, a, sizeof(a));
    /* "erspan:" + the longest IPv6 text (45) fits REPORT_NAME_LEN (64). */
    if (snprintf(node, sizeof(node), "%s:%s", source, a) >= (int)sizeof(node) ||
        snprintf(ifname, sizeof(ifname), kind == KIND_SFLOW ? "%u" : "s%u", id) >= (int)sizeof(ifname))
        return -ENAMETOOLONG;
    if ((r = view_get(m, node, false, &vi)) < 0 ||
        (r = port_get(m, m->views[vi], ifname, 0, source, &pi)) < 0)
        return r;
    struct unmapped *u = &m->un[m->nun++];
    memset(u, 0, sizeof(*u));
    u->kind = (uint8_t)kind;
    u->af = (uint8_t)af;
    memcpy(u->addr, addr, alen);
    u->id = id;
    u->view = vi;
    u->port = pi;
    *vout = m->views[vi];
    *pout = pi;
    return 0;
}

/* Accounts one (possibly sampled) packet on a view's port. */
static void account(struct mview *v, uint16_t pi, const struct decode_pkt *pkt, int decoded,
                    uint32_t wire, uint32_t scale, uint8_t source, double ts)
{
    struct mport *p = &v->ports[pi];
    p->ivl_pkts += scale;
    p->ivl_bytes += (uint64_t)wire * scale;
    v->pkts += scale;
    v->bytes += (uint64_t)wire * scale;
    if (decoded < 0) {
        v->unparsed++;
        v->truncated += decoded == -EMSGSIZE;
        return;
    }
    v->truncated += (pkt->flags & DECODE_F_TRUNC) != 0;
    p->ivl_ce += pkt->ecn == 3 ? scale : 0;
    if (pkt->roce)
        v->roce_opcodes[pkt->bth_opcode] += scale;
    flowtab_update(v->ft, pkt, pi, ts, scale, source);
}

/* ---- ERSPAN ------------------------------------------------------------ */

int mirror_erspan(struct mirror *m, const struct decode_pkt *outer, const uint8_t *frame,
                  uint32_t caplen, double ts)
{
    struct erspan_info e;
    int r = erspan_decap(outer, frame, caplen, &e);
    if (r == -ENOENT)
        return r;
    if (r < 0) {
        m->tel.erspan_bad++;
        return r;
    }
    m->tel.erspan_frames++;
    m->tel.erspan_truncated += e.truncated;
    struct mview *v;
    uint16_t pi;
    if (port_for(m, KIND_ERSPAN, e.src_af, e.src, e.session, &v, &pi) < 0) {
        m->tel.erspan_unattributed++;
        return 0;
    }
    struct decode_pkt in;
    int d = decode_frame(DLT_EN10MB, frame + e.inner_off, e.inner_caplen, e.inner_wire, &in);
    account(v, pi, &in, d, e.inner_wire, 1, FLOW_SRC_ERSPAN, ts);
    return 0;
}

/* ---- sFlow ------------------------------------------------------------- */

static void on_datagram(void *ctx, const struct sflow_datagram *d)
{
    struct mirror *m = ctx;
    sflow_seq_datagram(m->seq, d);
}

static void on_flow(void *ctx, const struct sflow_datagram *d, const struct sflow_flow_sample *s)
{
    struct mirror *m = ctx;
    sflow_seq_sample(m->seq, d, 0, s->source_type, s->source_index, s->seq);
    struct mview *v;
    uint16_t pi;
    /* Only a single, known output port puts the packet on a path. */
    if (!s->has_header || s->output_fmt != 0 || s->output == 0 ||
        port_for(m, KIND_SFLOW, d->agent_af, d->agent, s->output, &v, &pi) < 0) {
        m->tel.sflow_unattributed++;
        return;
    }
    /* frame_len is the original length, including what was stripped before
     * the header was taken (typically the 4-byte FCS, which libpcap's wire
     * length does not count either). */
    uint32_t wire = s->stripped < s->frame_len ? s->frame_len - s->stripped : s->frame_len;
    if (wire < s->header_len)
        wire = s->header_len;
    struct decode_pkt pkt;
    int r;
    if (s->header_proto == 1) {
        r = decode_frame(DLT_EN10MB, s->header, s->header_len, wire, &pkt);
    } else if (s->header_proto == 11 || s->header_proto == 12) {
        memset(&pkt, 0, sizeof(pkt));
        pkt.wire_len = wire;
        r = decode_ip(s->header, s->header_len, 0, &pkt);
    } else {
        r = -EPROTONOSUPPORT;
    }
    account(v, pi, &pkt, r, wire, s->rate, FLOW_SRC_SFLOW, m->now);
}

static void on_counters(void *ctx, const struct sflow_datagram *d, const struct sflow_if_counters *c)
{
    struct mirror *m = ctx;
    sflow_seq_sample(m->seq, d, 1, c->source_type, c->source_index, c->seq);
    struct mview *v;
    uint16_t pi;
    if (port_for(m, KIND_SFLOW, d->agent_af, d->agent, c->ifindex, &v, &pi) < 0)
        return;
    struct mport *p = &v->ports[pi];
    double t = (double)d->uptime_ms / 1000.0; /* the agent's clock: no network jitter */
    uint64_t drops = (uint64_t)c->in_discards + c->out_discards;
    uint64_t errs = (uint64_t)c->in_errors + c->out_errors;
    if (p->have_ctr && t > p->last_t && c->out_octets >= p->last_out && c->in_octets >= p->last_in) {
        double dt = t - p->last_t;
        p->tx_bps = 8.0 * (double)(c->out_octets - p->last_out) / dt;
        p->rx_bps = 8.0 * (double)(c->in_octets - p->last_in) / dt;
        p->have_rate = true;
        p->rate_t = m->now;
        if (drops >= p->last_drops)
            p->ivl_drops += drops - p->last_drops;
        if (errs >= p->last_errs)
            p->ivl_errs += errs - p->last_errs;
    }
    /* A counter that went backwards (agent restart, 32-bit wrap) just
     * restarts the baseline. */
    p->have_ctr = true;
    p->last_t = t;
    p->last_in = c->in_octets;
    p->last_out = c->out_octets;
    p->last_drops = drops;
    p->last_errs = errs;
    p->oper = (c->status & 2) ? "up" : "down";
    if (!p->rate_from_map && c->speed > 0)
        p->link_bps = (double)c->speed;
}

int mirror_sflow(struct mirror *m, const uint8_t *dgram, size_t len, double ts)
{
    struct sflow_handler h = {on_datagram, on_flow, on_counters, m};
    m->now = ts;
    return sflow_parse(dgram, len, &h, &m->sst);
}

/* ---- intervals --------------------------------------------------------- */

void mirror_telemetry(const struct mirror *m, struct report_telemetry *t)
{
    *t = m->tel;
    t->has_telemetry = true;
    t->sflow_datagrams = m->sst.datagrams;
    t->sflow_bad = m->sst.bad_datagrams;
    t->sflow_other_versions = m->sst.other_versions;
    t->sflow_flow_samples = m->sst.flow_samples;
    t->sflow_counter_samples = m->sst.counter_samples;
    struct sflow_seq_stats q;
    sflow_seq_get(m->seq, &q);
    t->sflow_lost_datagrams = q.lost_datagrams;
    t->sflow_lost_samples = q.lost_samples;
}

static void fill_link(struct mport *p, struct report_link *l, double now, double interval_s)
{
    memset(l, 0, sizeof(*l));
    tf_strlcpy(l->name, p->ifname, sizeof(l->name));
    l->ce_pkts = p->ivl_ce;
    l->speed_bps = p->link_bps;
    l->oper = p->oper;
    l->source = p->source;
    l->drops = p->ivl_drops;
    l->errors = p->ivl_errs;
    if (p->have_rate && now - p->rate_t <= COUNTER_FRESH_S) {
        l->tx_bps = p->tx_bps;
        l->rx_bps = p->rx_bps;
    } else if (interval_s > 0) {
        /* No fresh counters: what was sampled or mirrored is the estimate. */
        l->tx_bps = 8.0 * (double)p->ivl_bytes / interval_s;
    }
    if (interval_s > 0)
        l->tx_pps = (double)p->ivl_pkts / interval_s;
    p->ivl_bytes = p->ivl_pkts = p->ivl_ce = p->ivl_drops = p->ivl_errs = 0;
}

int mirror_close(struct mirror *m, double now, double interval_s, mirror_emit_fn emit, void *ctx)
{
    struct report_telemetry tel;
    mirror_telemetry(m, &tel);
    for (uint32_t i = 0; i < m->nviews; i++) {
        struct mview *v = m->views[i];
        for (uint32_t j = 0; j < v->nports; j++) {
            fill_link(&v->ports[j], &v->links[j], now, interval_s);
            v->link_bps[j] = v->ports[j].link_bps;
        }
        if (report_snap_take(&v->snap, v->ft) < 0)
            return -ENOMEM;
        flowtab_close_interval(v->ft, now, interval_s, v->link_bps, v->nports, m->o.fat_share);
        if (report_pick_flows(&v->rep, v->ft, &v->snap, m->o.top, v->ifnames, v->nports) < 0)
            return -ENOMEM;
        struct flowtab_stats fs;
        flowtab_get_stats(v->ft, &fs);
        struct report_stats *st = &v->rep.stats;
        memset(st, 0, sizeof(*st));
        st->pkts = v->pkts;
        st->bytes = v->bytes;
        st->unparsed = v->unparsed;
        st->truncated = v->truncated;
        st->evicted = fs.evicted;
        memcpy(st->roce_opcodes, v->roce_opcodes, sizeof(st->roce_opcodes));
        st->tel = tel;
        v->rep.ts = now;
        v->rep.interval_s = interval_s;
        v->rep.links = v->links;
        v->rep.nlinks = v->nports;
        emit(ctx, &v->rep, v->mapped);
    }
    return 0;
}
