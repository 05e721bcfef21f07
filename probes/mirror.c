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
 * Admission is decided once per datagram (sFlow: the agent address in its
 * header) or per mirror (ERSPAN: the carrier's source): a binary search in
 * the mapping, then the allow-list, then the pool's few views. A refused
 * datagram costs that and a counter; its samples are not even delivered.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/dlt.h>

#include "common/log.h"
#include "common/ratelog.h"
#include "common/util.h"
#include "probes/erspan.h"
#include "probes/flowtab.h"
#include "probes/sflow.h"

#define COUNTER_FRESH_S 90.0 /* sFlow counter polling is often 20-30 s */

enum { KIND_ERSPAN = 0, KIND_SFLOW = 1 };
static const char *const kind_name[] = {"erspan", "sflow"};

struct mport {
    char ifname[16];
    uint32_t id;              /* pool views: the ifIndex or session it stands for */
    bool seen;                /* reported from the first telemetry on it */
    double link_bps;          /* what fat shares are measured against */
    bool rate_from_map;       /* link_bps came from the mapping: keep it */
    const char *source;       /* "sflow" or "erspan" */
    uint64_t ivl_bytes, ivl_pkts, ivl_ce;   /* estimated (scaled) this interval */
    /* From the switch's own interface counters (sFlow counter samples). */
    struct sflow_ctr_base base;
    bool have_rate;
    uint64_t last_drops, last_errs;
    double rate_t;            /* wall time of the last rate */
    double tx_bps, rx_bps;
    uint64_t ivl_drops, ivl_errs;
    /* ifOutDiscards of the interval: a switch's egress queue overflowing,
     * reported as the port's queue drops (qdisc_drops), as the kernel's
     * qdisc counts them for a Linux switch (docs/telemetry.md). */
    uint64_t ivl_out_drops, last_out_drops;
    bool have_out_drops;
    uint64_t ivl_carrier;       /* ifOperStatus changes between counter samples, this interval */
    const char *oper;
};

struct mview {
    char node[REPORT_NAME_LEN];
    bool mapped, active;      /* active: sent something, so reported */
    /* pool views: the source they were handed to (used once handed out) */
    bool used;
    uint8_t kind, af, addr[16];
    struct flowtab *ft;
    uint32_t nports, cap;
    struct mport *ports;      /* cap of each, allocated with the view */
    const char **ifnames;
    double *link_bps;
    struct report_link *links;
    struct report rep;
    struct report_snap snap;
    uint64_t pkts, bytes, unparsed, truncated;
    uint64_t roce_opcodes[256];
};

struct mirror {
    const struct mirrormap *map;
    struct mirror_opts o;
    struct mview **views;     /* nmapped mapped views, then npool pool views */
    uint32_t nmapped, npool, nviews;
    uint32_t *map_view, *map_port; /* per mapping port: its view and port */
    struct sflow_seq *seq;
    struct sflow_stats sst;
    struct report_telemetry tel;
    double now;               /* arrival time of the datagram being parsed */
    /* the datagram being parsed: its agent's mapped-ness and pool view */
    bool cur_mapped;
    struct mview *cur_pool;
    struct ratelog log;       /* one warning of a kind per MIRROR_LOG_EVERY_S */
};

/* A warning of one kind (key) at most every MIRROR_LOG_EVERY_S, saying how
 * many were held back: a flood must not become a flood of log lines. The
 * line names the latest source; the counters have them all. */
static void warn_limited(struct mirror *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_limited(struct mirror *m, const char *key, const char *fmt, ...)
{
    uint64_t held;
    if (!ratelog_pass(&m->log, key, m->now, &held))
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (held)
        log_warn("%s (and %llu more like it since the last such line)", msg, (unsigned long long)held);
    else
        log_warn("%s", msg);
}

/* ---- views: all made here, at start ------------------------------------ */

static void view_free(struct mview *v)
{
    if (!v)
        return;
    flowtab_free(v->ft);
    report_free_flows(&v->rep);
    report_snap_free(&v->snap);
    free(v->ports);
    free(v->ifnames);
    free(v->link_bps);
    free(v->links);
    free(v);
}

static struct mview *view_new(const char *node, bool mapped, uint32_t cap, uint32_t max_flows,
                              double idle)
{
    struct mview *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    v->cap = cap ? cap : 1;
    v->ports = calloc(v->cap, sizeof(*v->ports));
    v->ifnames = calloc(v->cap, sizeof(*v->ifnames));
    v->link_bps = calloc(v->cap, sizeof(*v->link_bps));
    v->links = calloc(v->cap, sizeof(*v->links));
    v->ft = flowtab_new(max_flows, idle);
    if (!v->ports || !v->ifnames || !v->link_bps || !v->links || !v->ft) {
        view_free(v);
        return NULL;
    }
    tf_strlcpy(v->node, node, sizeof(v->node));
    tf_strlcpy(v->rep.probe, node, sizeof(v->rep.probe));
    v->mapped = mapped;
    return v;
}

static uint32_t port_add(struct mirror *m, struct mview *v, const char *ifname, double gbps)
{
    struct mport *p = &v->ports[v->nports];
    tf_strlcpy(p->ifname, ifname, sizeof(p->ifname));
    p->rate_from_map = gbps > 0;
    p->link_bps = (gbps > 0 ? gbps : m->o.default_gbps) * 1e9;
    v->ifnames[v->nports] = p->ifname;
    return v->nports++;
}

/* One view per node the mapping names, with exactly its ports, in mapping
 * order. */
static int make_mapped_views(struct mirror *m)
{
    uint32_t np = mirrormap_nports(m->map);
    m->map_view = calloc(np ? np : 1, sizeof(*m->map_view));
    m->map_port = calloc(np ? np : 1, sizeof(*m->map_port));
    if (!m->map_view || !m->map_port)
        return -ENOMEM;
    const char *names[MIRROR_MAX_VIEWS];
    uint32_t count[MIRROR_MAX_VIEWS] = {0};
    for (uint32_t i = 0; i < np; i++) {
        const char *node = mirrormap_port(m->map, i)->node;
        uint32_t vi = 0;
        while (vi < m->nmapped && strcmp(names[vi], node) != 0)
            vi++;
        if (vi == m->nmapped) {
            if (m->nmapped == MIRROR_MAX_VIEWS)
                return -E2BIG;
            names[m->nmapped++] = node;
        }
        m->map_view[i] = vi;
        count[vi]++;
    }
    for (uint32_t vi = 0; vi < m->nmapped; vi++)
        if (!(m->views[vi] = view_new(names[vi], true, count[vi], m->o.max_flows, m->o.idle_timeout)))
            return -ENOMEM;
    for (uint32_t i = 0; i < np; i++) {
        const struct mirrormap_port *p = mirrormap_port(m->map, i);
        m->map_port[i] = port_add(m, m->views[m->map_view[i]], p->ifname, p->link_gbps);
    }
    return 0;
}

int mirror_new(const struct mirrormap *map, const struct mirror_opts *o, struct mirror **out)
{
    if (o->max_unmapped > MIRROR_MAX_VIEWS)
        return -E2BIG;
    struct mirror *m = calloc(1, sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->map = map;
    m->o = *o;
    m->views = calloc(MIRROR_MAX_VIEWS + o->max_unmapped, sizeof(*m->views));
    m->seq = sflow_seq_new();
    int r = !m->views || !m->seq ? -ENOMEM : make_mapped_views(m);
    uint32_t pool_flows = o->max_flows < MIRROR_UNMAPPED_FLOWS ? o->max_flows : MIRROR_UNMAPPED_FLOWS;
    m->nviews = m->nmapped;
    for (uint32_t i = 0; r == 0 && i < o->max_unmapped; i++) {
        struct mview *v = view_new("", false, MIRROR_MAX_PORTS, pool_flows, o->idle_timeout);
        if (!v)
            r = -ENOMEM;
        else
            m->views[m->nviews++] = v;
    }
    m->npool = m->nviews - m->nmapped;
    if (r < 0) {
        mirror_free(m);
        return r;
    }
    m->tel.has_telemetry = true;
    m->log = (struct ratelog)RATELOG_INIT(MIRROR_LOG_EVERY_S);
    *out = m;
    return 0;
}

void mirror_free(struct mirror *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; m->views && i < MIRROR_MAX_VIEWS + m->o.max_unmapped; i++)
        view_free(m->views[i]);
    free(m->views);
    sflow_seq_free(m->seq);
    free(m->map_view);
    free(m->map_port);
    free(m);
}

void mirror_carry(struct mirror *to, struct mirror *from)
{
    to->sst = from->sst;
    to->tel = from->tel;
    struct sflow_seq *s = to->seq;
    to->seq = from->seq;
    from->seq = s;
}

bool mirror_admits_any(const struct mirror *m)
{
    return !m->map && m->o.nallow == 0;
}

/* ---- admission ---------------------------------------------------------- */

static bool allowed(const struct mirror *m, int af, const uint8_t *addr)
{
    if (mirror_admits_any(m))
        return true;
    for (size_t i = 0; i < m->o.nallow; i++)
        if (m->o.allow[i].af == af && tf_prefix_contains(af, m->o.allow[i].addr, m->o.allow[i].plen, addr))
            return true;
    return false;
}

/* The pool view of a source (kind, af, addr): its own, or a free one handed
 * to it for good, or NULL when the source is not allowed one or the pool is
 * spent. */
static struct mview *pool_view(struct mirror *m, int kind, int af, const uint8_t *addr, bool mapped)
{
    if (!m->npool || !allowed(m, af, addr))
        return NULL;
    size_t alen = af == 6 ? 16 : 4;
    struct mview *free_v = NULL;
    for (uint32_t i = m->nmapped; i < m->nviews; i++) {
        struct mview *v = m->views[i];
        if (!v->used) {
            free_v = free_v ? free_v : v;
            continue;
        }
        if (v->kind == kind && v->af == af && memcmp(v->addr, addr, alen) == 0)
            return v;
    }
    char a[INET6_ADDRSTRLEN];
    tf_addr_str(af, addr, a, sizeof(a));
    if (!free_v) {
        /* A mapped source's own ports are still taken: only its unmapped
         * ones go without a view. */
        if (!mapped)
            warn_limited(m, "pool_full", "%s: source %s refused: all %u views for sources not in the "
                    "mirror map are taken (first come; raise the maximum or narrow the allowed prefixes)",
                    kind_name[kind], a, m->npool);
        return NULL;
    }
    free_v->used = true;
    free_v->kind = (uint8_t)kind;
    free_v->af = (uint8_t)af;
    memcpy(free_v->addr, addr, alen);
    /* "erspan:" + the longest IPv6 text (45) fits REPORT_NAME_LEN (64). */
    snprintf(free_v->node, sizeof(free_v->node), "%s:%s", kind_name[kind], a);
    tf_strlcpy(free_v->rep.probe, free_v->node, sizeof(free_v->rep.probe));
    log_msg(LOG_NOTICE, "%s: source %s (not in the mirror map) gets view %s, printed and never posted",
            kind_name[kind], a, free_v->node);
    return free_v;
}

/* Whether a source's telemetry is taken at all; sets cur_mapped and
 * cur_pool for its samples. Counts and logs a refusal. */
static bool admit(struct mirror *m, int kind, int af, const uint8_t *addr)
{
    m->cur_mapped = kind == KIND_SFLOW ? mirrormap_has_sflow_agent(m->map, af, addr)
                                       : mirrormap_has_erspan_src(m->map, af, addr);
    /* A mapped source gets its pool view only if it sends about a port the
     * map does not name (port_for). */
    m->cur_pool = m->cur_mapped ? NULL : pool_view(m, kind, af, addr, false);
    if (m->cur_mapped || m->cur_pool)
        return true;
    uint64_t *n = kind == KIND_SFLOW ? &m->tel.sflow_refused : &m->tel.erspan_refused;
    (*n)++;
    if (allowed(m, af, addr))
        return false; /* pool spent: pool_view said so */
    char a[INET6_ADDRSTRLEN];
    warn_limited(m, "refused", "%s: %s %s is not in the mirror map nor an allowed prefix: its telemetry "
            "is dropped (%s_refused: %llu)", kind_name[kind], kind == KIND_SFLOW ? "agent" : "mirror source",
            tf_addr_str(af, addr, a, sizeof(a)), kind_name[kind], (unsigned long long)*n);
    return false;
}

/* The view and port for an admitted source's data source (ifIndex or
 * session): the mapped port, else a port of its pool view. -ENOENT when it
 * has neither (counted by the caller as unattributed). */
static int port_for(struct mirror *m, int kind, int af, const uint8_t *addr, uint32_t id,
                    struct mview **vout, uint32_t *pout)
{
    if (m->cur_mapped) {
        uint32_t mp = kind == KIND_SFLOW ? mirrormap_sflow(m->map, af, addr, id)
                                         : mirrormap_erspan(m->map, af, addr, (uint16_t)id);
        if (mp != MIRRORMAP_NONE) {
            *vout = m->views[m->map_view[mp]];
            *pout = m->map_port[mp];
            return 0;
        }
    }
    if (!m->cur_pool)
        m->cur_pool = pool_view(m, kind, af, addr, true);
    struct mview *v = m->cur_pool;
    char a[INET6_ADDRSTRLEN];
    if (!v) {
        warn_limited(m, "unmapped_port", "%s: %s %s %s %u is not in the mirror map: its data is "
                "unattributed", kind_name[kind], kind == KIND_SFLOW ? "agent" : "mirror source",
                tf_addr_str(af, addr, a, sizeof(a)), kind == KIND_SFLOW ? "ifIndex" : "session", id);
        return -ENOENT;
    }
    for (uint32_t i = 0; i < v->nports; i++)
        if (v->ports[i].id == id) {
            *vout = v;
            *pout = i;
            return 0;
        }
    if (v->nports == v->cap)
        return -ENOSPC;
    char ifname[16];
    snprintf(ifname, sizeof(ifname), kind == KIND_SFLOW ? "%u" : "s%u", id);
    *pout = port_add(m, v, ifname, 0);
    v->ports[*pout].id = id;
    *vout = v;
    return 0;
}

static void port_seen(struct mview *v, uint32_t pi, int kind)
{
    struct mport *p = &v->ports[pi];
    if (!p->seen) {
        p->seen = true;
        p->source = kind_name[kind];
    }
    v->active = true;
}

/* Accounts one (possibly sampled) packet on a view's port. */
static void account(struct mview *v, uint32_t pi, const struct decode_pkt *pkt, int decoded,
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
    flowtab_update(v->ft, pkt, (uint16_t)pi, ts, scale, source);
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
    m->now = ts;
    if (!admit(m, KIND_ERSPAN, e.src_af, e.src))
        return 0;
    m->tel.erspan_frames++;
    m->tel.erspan_truncated += e.truncated;
    struct mview *v;
    uint32_t pi;
    if (port_for(m, KIND_ERSPAN, e.src_af, e.src, e.session, &v, &pi) < 0) {
        m->tel.erspan_unattributed++;
        return 0;
    }
    port_seen(v, pi, KIND_ERSPAN);
    struct decode_pkt in;
    int d = decode_frame(DLT_EN10MB, frame + e.inner_off, e.inner_caplen, e.inner_wire, &in);
    account(v, pi, &in, d, e.inner_wire, 1, FLOW_SRC_ERSPAN, ts);
    return 0;
}

/* ---- sFlow ------------------------------------------------------------- */

static int on_datagram(void *ctx, const struct sflow_datagram *d)
{
    struct mirror *m = ctx;
    if (!admit(m, KIND_SFLOW, d->agent_af, d->agent))
        return 1;
    sflow_seq_datagram(m->seq, d);
    return 0;
}

/* Counts a sample out of bounds, and says why (rate-limited). */
static bool rejected(struct mirror *m, const struct sflow_datagram *d, enum sflow_reject why,
                     uint64_t value)
{
    if (why == SFLOW_OK)
        return false;
    m->sst.rejected[why]++;
    char a[INET6_ADDRSTRLEN];
    warn_limited(m, "rejected", "sflow: agent %s: sample rejected: %s %llu out of bounds "
            "(docs/telemetry.md, sample bounds)", tf_addr_str(d->agent_af, d->agent, a, sizeof(a)),
            sflow_reject_name(why), (unsigned long long)value);
    return true;
}

static void on_flow(void *ctx, const struct sflow_datagram *d, const struct sflow_flow_sample *s)
{
    struct mirror *m = ctx;
    sflow_seq_sample(m->seq, d, 0, s->source_type, s->source_index, s->seq);
    enum sflow_reject why = sflow_flow_check(s);
    if (rejected(m, d, why, why == SFLOW_REJ_RATE ? s->rate : s->frame_len))
        return;
    struct mview *v;
    uint32_t pi;
    /* Only a single, known output port puts the packet on a path. */
    if (!s->has_header || s->output_fmt != 0 || s->output == 0 ||
        port_for(m, KIND_SFLOW, d->agent_af, d->agent, s->output, &v, &pi) < 0) {
        m->tel.sflow_unattributed++;
        return;
    }
    port_seen(v, pi, KIND_SFLOW);
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
    if (rejected(m, d, sflow_counters_check(c), c->speed))
        return;
    struct mview *v;
    uint32_t pi;
    if (port_for(m, KIND_SFLOW, d->agent_af, d->agent, c->ifindex, &v, &pi) < 0)
        return;
    port_seen(v, pi, KIND_SFLOW);
    struct mport *p = &v->ports[pi];
    if (!p->rate_from_map && c->speed > 0)
        p->link_bps = (double)c->speed;
    double t = (double)d->uptime_ms / 1000.0; /* the agent's clock: no network jitter */
    uint64_t drops = (uint64_t)c->in_discards + c->out_discards;
    uint64_t errs = (uint64_t)c->in_errors + c->out_errors;
    double tx, rx;
    int r = sflow_counter_rates(&p->base, t, c->in_octets, c->out_octets, p->link_bps, &tx, &rx);
    if (r == 0) {
        p->tx_bps = tx;
        p->rx_bps = rx;
        p->have_rate = true;
        p->rate_t = m->now;
        if (drops >= p->last_drops)
            p->ivl_drops += drops - p->last_drops;
        if (errs >= p->last_errs)
            p->ivl_errs += errs - p->last_errs;
        if (c->out_discards >= p->last_out_drops)
            p->ivl_out_drops += c->out_discards - p->last_out_drops;
        p->have_out_drops = true;
    } else if (r == SFLOW_REJ_COUNTERS) {
        rejected(m, d, SFLOW_REJ_COUNTERS, c->out_octets);
    }
    /* Whatever the verdict the sample is the new baseline: an agent restart
     * or one corrupt sample costs one rate, not every later one. */
    p->base = (struct sflow_ctr_base){true, t, c->in_octets, c->out_octets};
    p->last_drops = drops;
    p->last_errs = errs;
    p->last_out_drops = c->out_discards;
    /* A counter sample gives ifOperStatus, not a count of changes: a
     * status other than the last sample's is one transition (a flap that
     * comes and goes within one polling period is not seen). */
    const char *oper = (c->status & 2) ? "up" : "down";
    if (p->oper && strcmp(p->oper, oper))
        p->ivl_carrier++;
    p->oper = oper;
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
    memcpy(t->sflow_rejected, m->sst.rejected, sizeof(t->sflow_rejected));
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
    l->carrier_changes = p->ivl_carrier;
    l->has_queue_drops = p->have_out_drops;
    l->qdisc_drops = p->ivl_out_drops;
    if (p->have_rate && now - p->rate_t <= COUNTER_FRESH_S) {
        l->tx_bps = p->tx_bps;
        l->rx_bps = p->rx_bps;
    } else if (interval_s > 0) {
        /* No fresh counters: what was sampled or mirrored is the estimate. */
        l->tx_bps = 8.0 * (double)p->ivl_bytes / interval_s;
    }
    if (interval_s > 0)
        l->tx_pps = (double)p->ivl_pkts / interval_s;
    p->ivl_bytes = p->ivl_pkts = p->ivl_ce = p->ivl_drops = p->ivl_errs = p->ivl_carrier = p->ivl_out_drops = 0;
}

/* The rates a view's flows are judged fat against, as its ports have them
 * now (from the mapping, or the switch's counter samples). */
static void view_rates(struct mview *v)
{
    for (uint32_t j = 0; j < v->nports; j++)
        v->link_bps[j] = v->ports[j].link_bps;
}

uint32_t mirror_rising(struct mirror *m, double now, double ivl_s, double min_age)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->nmapped; i++) {
        struct mview *v = m->views[i];
        if (!v->active)
            continue;
        view_rates(v);
        n += flowtab_rising(v->ft, now, ivl_s, min_age, v->link_bps, v->nports, m->o.fat_share);
    }
    return n;
}

int mirror_close(struct mirror *m, double now, double interval_s, bool partial, mirror_emit_fn emit, void *ctx)
{
    struct report_telemetry tel;
    mirror_telemetry(m, &tel);
    for (uint32_t i = 0; i < m->nviews; i++) {
        struct mview *v = m->views[i];
        if (!v->active)
            continue;
        /* Only ports the switch sent something about are links of the
         * report: a silent mapped port is not a link known to be idle. */
        uint32_t nl = 0;
        view_rates(v);
        for (uint32_t j = 0; j < v->nports; j++)
            if (v->ports[j].seen)
                fill_link(&v->ports[j], &v->links[nl++], now, interval_s);
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
        v->rep.partial = partial;
        v->rep.links = v->links;
        v->rep.nlinks = nl;
        emit(ctx, &v->rep, v->mapped);
    }
    return 0;
}
