/*
 * sflow_build: the tests' one encoder of sFlow v5 datagrams (sflow.org,
 * sflow_version_5.txt), for the parser's suite (test_sflow) and the switch
 * views' suite (test_mirror). Header-only; every length is patched in after
 * the body, so a test can patch any field at a known offset afterwards:
 *
 *   header        version, agent type 1 (IPv4), agent, sub-agent 0, seq,
 *                 uptime, nsamples (returned offset: patch it at the end)
 *   flow sample   tag 1 (or 3 expanded), length, seq, source, rate (at +16
 *                 from the tag), pool, drops, input, output, 1 or 2 records:
 *                 the raw header record, then optionally an extended switch
 *                 record (1001) that parsers skip by length
 *   counter sample tag 2 (or 4), length, seq, source, 1 record: generic
 *                 interface counters (0:1, 88 bytes)
 */
#ifndef TF_SFLOW_BUILD_H
#define TF_SFLOW_BUILD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct sfb {
    uint8_t b[8192];
    size_t n;
};

static inline size_t sfb_put32(struct sfb *b, uint32_t v)
{
    size_t at = b->n;
    b->b[b->n++] = (uint8_t)(v >> 24);
    b->b[b->n++] = (uint8_t)(v >> 16);
    b->b[b->n++] = (uint8_t)(v >> 8);
    b->b[b->n++] = (uint8_t)v;
    return at;
}

static inline void sfb_put64(struct sfb *b, uint64_t v)
{
    sfb_put32(b, (uint32_t)(v >> 32));
    sfb_put32(b, (uint32_t)v);
}

static inline void sfb_patch32(struct sfb *b, size_t at, uint32_t v)
{
    b->b[at] = (uint8_t)(v >> 24);
    b->b[at + 1] = (uint8_t)(v >> 16);
    b->b[at + 2] = (uint8_t)(v >> 8);
    b->b[at + 3] = (uint8_t)v;
}

/* Starts a datagram; returns the offset of nsamples. */
static inline size_t sfb_header(struct sfb *b, uint32_t agent_v4, uint32_t seq, uint32_t uptime_ms,
                                uint32_t nsamples)
{
    b->n = 0;
    sfb_put32(b, 5);
    sfb_put32(b, 1);
    sfb_put32(b, agent_v4);
    sfb_put32(b, 0);
    sfb_put32(b, seq);
    sfb_put32(b, uptime_ms);
    return sfb_put32(b, nsamples);
}

struct sfb_flow {
    int expanded;
    uint32_t seq, source_index, rate, pool, drops, input, output;
    uint32_t header_proto, frame_len, stripped;
    const uint8_t *header;
    uint32_t header_len;
    int extended_switch;      /* add a 1001 record after the header */
};

static inline void sfb_flow_sample(struct sfb *b, const struct sfb_flow *f)
{
    sfb_put32(b, f->expanded ? 3 : 1);
    size_t len_at = sfb_put32(b, 0), start = b->n;
    sfb_put32(b, f->seq);
    if (f->expanded) {
        sfb_put32(b, 0);
        sfb_put32(b, f->source_index);
    } else {
        sfb_put32(b, f->source_index);
    }
    sfb_put32(b, f->rate);
    sfb_put32(b, f->pool);
    sfb_put32(b, f->drops);
    if (f->expanded) {
        sfb_put32(b, 0);
        sfb_put32(b, f->input);
        sfb_put32(b, 0);
        sfb_put32(b, f->output);
    } else {
        sfb_put32(b, f->input);
        sfb_put32(b, f->output);
    }
    sfb_put32(b, f->extended_switch ? 2 : 1);
    sfb_put32(b, 1); /* raw packet header */
    size_t rlen_at = sfb_put32(b, 0), rstart = b->n;
    sfb_put32(b, f->header_proto);
    sfb_put32(b, f->frame_len);
    sfb_put32(b, f->stripped);
    sfb_put32(b, f->header_len);
    memcpy(b->b + b->n, f->header, f->header_len);
    b->n += f->header_len;
    while (b->n % 4)
        b->b[b->n++] = 0;
    sfb_patch32(b, rlen_at, (uint32_t)(b->n - rstart));
    if (f->extended_switch) {
        sfb_put32(b, 1001);
        sfb_put32(b, 16);
        sfb_put32(b, 10);
        sfb_put32(b, 0);
        sfb_put32(b, 20);
        sfb_put32(b, 0);
    }
    sfb_patch32(b, len_at, (uint32_t)(b->n - start));
}

struct sfb_counters {
    int expanded;
    uint32_t seq, ifindex, status;
    uint64_t speed, in_octets, out_octets;
    uint32_t out_discards;      /* added to the fixed 7 */
};

/* Generic interface counters with fixed packet counts (in: 10 ucast, 2
 * mcast, 1 bcast, 5 discards, 6 errors; out: 20 ucast, 7 + out_discards
 * discards, 8 errors). */
static inline void sfb_counter_sample(struct sfb *b, const struct sfb_counters *c)
{
    sfb_put32(b, c->expanded ? 4 : 2);
    size_t len_at = sfb_put32(b, 0), start = b->n;
    sfb_put32(b, c->seq);
    if (c->expanded) {
        sfb_put32(b, 0);
        sfb_put32(b, c->ifindex);
    } else {
        sfb_put32(b, c->ifindex);
    }
    sfb_put32(b, 1);
    sfb_put32(b, 1); /* generic interface counters */
    sfb_put32(b, 88);
    sfb_put32(b, c->ifindex); sfb_put32(b, 6); sfb_put64(b, c->speed); sfb_put32(b, 1);
    sfb_put32(b, c->status);
    sfb_put64(b, c->in_octets); sfb_put32(b, 10); sfb_put32(b, 2); sfb_put32(b, 1); sfb_put32(b, 5);
    sfb_put32(b, 6); sfb_put32(b, 0);
    sfb_put64(b, c->out_octets); sfb_put32(b, 20); sfb_put32(b, 0); sfb_put32(b, 0); sfb_put32(b, 7 + c->out_discards);
    sfb_put32(b, 8); sfb_put32(b, 0);
    sfb_patch32(b, len_at, (uint32_t)(b->n - start));
}

#endif
