/*
 * sflow: see sflow.h. The parser walks the datagram twice: a validating pass
 * that delivers nothing, then a delivering pass that may assume every length
 * it meets was already checked.
 */
#include "probes/sflow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probes/wire.h"

struct cur {
    const uint8_t *p;
    size_t left;
};

static int take(struct cur *c, size_t n, const uint8_t **out)
{
    if (n > c->left)
        return -EBADMSG;
    if (out)
        *out = c->p;
    c->p += n;
    c->left -= n;
    return 0;
}

static int u32(struct cur *c, uint32_t *v)
{
    const uint8_t *p;
    if (take(c, 4, &p) < 0)
        return -EBADMSG;
    *v = wire_be32(p);
    return 0;
}

static uint32_t pad4(uint32_t n) { return (n + 3u) & ~3u; }

static int parse_header_record(struct cur *r, struct sflow_flow_sample *s)
{
    uint32_t hlen;
    const uint8_t *h;
    if (u32(r, &s->header_proto) < 0 || u32(r, &s->frame_len) < 0 ||
        u32(r, &s->stripped) < 0 || u32(r, &hlen) < 0)
        return -EBADMSG;
    if (hlen > SFLOW_MAX_HEADER || hlen > 0xffffffffu - 3 || take(r, pad4(hlen), &h) < 0)
        return -EBADMSG;
    s->header = h;
    s->header_len = hlen;
    s->has_header = 1;
    return 0;
}

static int parse_if_counters(struct cur *r, struct sflow_if_counters *c)
{
    const uint8_t *p;
    if (take(r, 88, &p) < 0)
        return -EBADMSG;
    c->ifindex = wire_be32(p);
    c->iftype = wire_be32(p + 4);
    c->speed = wire_be64(p + 8);
    c->direction = wire_be32(p + 16);
    c->status = wire_be32(p + 20);
    c->in_octets = wire_be64(p + 24);
    c->in_ucast = wire_be32(p + 32);
    c->in_mcast = wire_be32(p + 36);
    c->in_bcast = wire_be32(p + 40);
    c->in_discards = wire_be32(p + 44);
    c->in_errors = wire_be32(p + 48);
    c->in_unknown = wire_be32(p + 52);
    c->out_octets = wire_be64(p + 56);
    c->out_ucast = wire_be32(p + 64);
    c->out_mcast = wire_be32(p + 68);
    c->out_bcast = wire_be32(p + 72);
    c->out_discards = wire_be32(p + 76);
    c->out_errors = wire_be32(p + 80);
    return 0;
}

/* Walks the records of one sample; deliver == 0 only validates. */
static int parse_records(struct cur *c, int counters, const struct sflow_datagram *d,
                         struct sflow_flow_sample *fs, struct sflow_if_counters *cs,
                         const struct sflow_handler *h, int deliver, struct sflow_stats *st)
{
    uint32_t nrec;
    if (u32(c, &nrec) < 0 || nrec > SFLOW_MAX_RECORDS)
        return -EBADMSG;
    for (uint32_t i = 0; i < nrec; i++) {
        uint32_t fmt, len;
        const uint8_t *body;
        if (u32(c, &fmt) < 0 || u32(c, &len) < 0 || len > c->left || take(c, len, &body) < 0)
            return -EBADMSG;
        struct cur r = {body, len};
        if (fmt == 1 && !counters) {
            if (parse_header_record(&r, fs) < 0)
                return -EBADMSG;
        } else if (fmt == 1 && counters) {
            if (parse_if_counters(&r, cs) < 0)
                return -EBADMSG;
            if (deliver && h->counters)
                h->counters(h->ctx, d, cs);
        } else if (deliver) {
            st->skipped_records++;
        }
    }
    if (!counters && deliver && h->flow)
        h->flow(h->ctx, d, fs);
    return 0;
}

static int parse_sample(struct cur *c, const struct sflow_datagram *d,
                        const struct sflow_handler *h, int deliver, struct sflow_stats *st)
{
    uint32_t tag, len;
    const uint8_t *body;
    if (u32(c, &tag) < 0 || u32(c, &len) < 0 || take(c, len, &body) < 0)
        return -EBADMSG;
    struct cur s = {body, len};
    uint32_t enterprise = tag >> 12, format = tag & 0xfff;
    if (enterprise != 0 || format < 1 || format > 4) {
        if (deliver)
            st->skipped_samples++;
        return 0;
    }
    struct sflow_flow_sample fs;
    struct sflow_if_counters cs;
    memset(&fs, 0, sizeof(fs));
    memset(&cs, 0, sizeof(cs));
    if (format == 1 || format == 3) {
        uint32_t src, in, out;
        if (u32(&s, &fs.seq) < 0)
            return -EBADMSG;
        if (format == 1) {
            if (u32(&s, &src) < 0)
                return -EBADMSG;
            fs.source_type = src >> 24;
            fs.source_index = src & 0x00ffffff;
        } else if (u32(&s, &fs.source_type) < 0 || u32(&s, &fs.source_index) < 0) {
            return -EBADMSG;
        }
        if (u32(&s, &fs.rate) < 0 || u32(&s, &fs.pool) < 0 || u32(&s, &fs.drops) < 0)
            return -EBADMSG;
        if (format == 1) {
            if (u32(&s, &in) < 0 || u32(&s, &out) < 0)
                return -EBADMSG;
            fs.input_fmt = (uint8_t)(in >> 30);
            fs.input = in & 0x3fffffff;
            fs.output_fmt = (uint8_t)(out >> 30);
            fs.output = out & 0x3fffffff;
        } else {
            uint32_t ifmt, ofmt;
            if (u32(&s, &ifmt) < 0 || u32(&s, &fs.input) < 0 || u32(&s, &ofmt) < 0 ||
                u32(&s, &fs.output) < 0)
                return -EBADMSG;
            fs.input_fmt = (uint8_t)(ifmt & 3);
            fs.output_fmt = (uint8_t)(ofmt & 3);
        }
        if (parse_records(&s, 0, d, &fs, &cs, h, deliver, st) < 0)
            return -EBADMSG;
        if (deliver)
            st->flow_samples++;
    } else {
        uint32_t src;
        if (u32(&s, &cs.seq) < 0)
            return -EBADMSG;
        if (format == 2) {
            if (u32(&s, &src) < 0)
                return -EBADMSG;
            cs.source_type = src >> 24;
            cs.source_index = src & 0x00ffffff;
        } else if (u32(&s, &cs.source_type) < 0 || u32(&s, &cs.source_index) < 0) {
            return -EBADMSG;
        }
        if (parse_records(&s, 1, d, &fs, &cs, h, deliver, st) < 0)
            return -EBADMSG;
        if (deliver)
            st->counter_samples++;
    }
    return 0;
}

static int parse_pass(const uint8_t *buf, size_t len, const struct sflow_handler *h,
                      int deliver, struct sflow_stats *st)
{
    struct cur c = {buf, len};
    struct sflow_datagram d;
    memset(&d, 0, sizeof(d));
    uint32_t version, atype;
    const uint8_t *a;
    if (u32(&c, &version) < 0)
        return -EBADMSG;
    if (version != 5)
        return -EPROTONOSUPPORT;
    if (u32(&c, &atype) < 0)
        return -EBADMSG;
    if (atype == 1) {
        if (take(&c, 4, &a) < 0)
            return -EBADMSG;
        d.agent_af = 4;
        memcpy(d.agent, a, 4);
    } else if (atype == 2) {
        if (take(&c, 16, &a) < 0)
            return -EBADMSG;
        d.agent_af = 6;
        memcpy(d.agent, a, 16);
    } else {
        return -EBADMSG;
    }
    if (u32(&c, &d.sub_agent) < 0 || u32(&c, &d.seq) < 0 || u32(&c, &d.uptime_ms) < 0 ||
        u32(&c, &d.nsamples) < 0 || d.nsamples > SFLOW_MAX_SAMPLES)
        return -EBADMSG;
    if (deliver && h->datagram && h->datagram(h->ctx, &d) != 0)
        return 0; /* refused by the caller: its samples are neither delivered nor counted */
    for (uint32_t i = 0; i < d.nsamples; i++)
        if (parse_sample(&c, &d, h, deliver, st) < 0)
            return -EBADMSG;
    return 0;
}

int sflow_parse(const uint8_t *buf, size_t len, const struct sflow_handler *h,
                struct sflow_stats *st)
{
    static const struct sflow_handler none;
    int r = parse_pass(buf, len, &none, 0, st);
    if (r == -EPROTONOSUPPORT) {
        st->other_versions++;
        return r;
    }
    if (r < 0) {
        st->bad_datagrams++;
        return r;
    }
    st->datagrams++;
    return parse_pass(buf, len, h ? h : &none, 1, st);
}

/* ---- bounds ------------------------------------------------------------ */

enum sflow_reject sflow_flow_check(const struct sflow_flow_sample *s)
{
    /* A rate of 0 would make every estimate infinite. */
    if (s->rate == 0 || s->rate > SFLOW_MAX_RATE)
        return SFLOW_REJ_RATE;
    if (s->frame_len > SFLOW_MAX_FRAME)
        return SFLOW_REJ_FRAME;
    return SFLOW_OK;
}

enum sflow_reject sflow_counters_check(const struct sflow_if_counters *c)
{
    return (double)c->speed > SFLOW_MAX_SPEED ? SFLOW_REJ_SPEED : SFLOW_OK;
}

const char *sflow_reject_name(int reason)
{
    static const char *const names[SFLOW_REJ_N] = {
        [SFLOW_REJ_RATE] = "rate", [SFLOW_REJ_FRAME] = "frame_len",
        [SFLOW_REJ_SPEED] = "speed", [SFLOW_REJ_COUNTERS] = "counters",
    };
    return reason > SFLOW_OK && reason < SFLOW_REJ_N ? names[reason] : "?";
}

int sflow_counter_rates(const struct sflow_ctr_base *base, double t, uint64_t in_octets,
                        uint64_t out_octets, double speed_bps, double *tx_bps, double *rx_bps)
{
    if (!base->valid || t <= base->t)
        return -EAGAIN;
    if (in_octets < base->in_octets || out_octets < base->out_octets)
        return SFLOW_REJ_COUNTERS;
    double dt = t - base->t;
    double max_bps = reportspec_rate_bound(speed_bps > 0 ? speed_bps : SFLOW_MAX_SPEED);
    double tx = 8.0 * (double)(out_octets - base->out_octets) / dt;
    double rx = 8.0 * (double)(in_octets - base->in_octets) / dt;
    if (tx > max_bps || rx > max_bps)
        return SFLOW_REJ_COUNTERS;
    *tx_bps = tx;
    *rx_bps = rx;
    return 0;
}

/* ---- sequence tracking ------------------------------------------------ */

struct seq_ent {
    uint8_t af, kind, used;
    uint8_t agent[16];
    uint32_t sub, stype, sindex;  /* kind 2 = datagram stream of (agent, sub) */
    uint32_t last;
};

struct sflow_seq {
    struct seq_ent ent[SFLOW_SEQ_MAX];
    uint32_t n;
    struct sflow_seq_stats st;
};

struct sflow_seq *sflow_seq_new(void) { return calloc(1, sizeof(struct sflow_seq)); }
void sflow_seq_free(struct sflow_seq *s) { free(s); }

static void seq_feed(struct sflow_seq *s, const struct sflow_datagram *d, uint8_t kind,
                     uint32_t stype, uint32_t sindex, uint32_t seq, uint64_t *lost)
{
    for (uint32_t i = 0; i < s->n; i++) {
        struct seq_ent *e = &s->ent[i];
        if (e->kind != kind || e->af != d->agent_af || e->sub != d->sub_agent ||
            e->stype != stype || e->sindex != sindex || memcmp(e->agent, d->agent, 16) != 0)
            continue;
        uint32_t gap = seq - e->last;
        /* Wrap-safe forward step; a step back (or a huge jump) means the
         * agent restarted: count a reset, not billions of losses. */
        if (gap >= 1 && gap < 0x80000000u)
            *lost += gap - 1;
        else if (gap != 0)
            s->st.resets++;
        e->last = seq;
        return;
    }
    if (s->n == SFLOW_SEQ_MAX) {
        s->st.untracked++;
        return;
    }
    struct seq_ent *e = &s->ent[s->n++];
    e->used = 1;
    e->kind = kind;
    e->af = d->agent_af;
    memcpy(e->agent, d->agent, 16);
    e->sub = d->sub_agent;
    e->stype = stype;
    e->sindex = sindex;
    e->last = seq;
}

void sflow_seq_datagram(struct sflow_seq *s, const struct sflow_datagram *d)
{
    seq_feed(s, d, 2, 0, 0, d->seq, &s->st.lost_datagrams);
}

void sflow_seq_sample(struct sflow_seq *s, const struct sflow_datagram *d, int kind,
                      uint32_t source_type, uint32_t source_index, uint32_t seq)
{
    seq_feed(s, d, (uint8_t)(kind ? 1 : 0), source_type, source_index, seq, &s->st.lost_samples);
}

void sflow_seq_get(const struct sflow_seq *s, struct sflow_seq_stats *st) { *st = s->st; }
