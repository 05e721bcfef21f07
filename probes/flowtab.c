/*
 * flowtab: see flowtab.h for the contract.
 *
 * Storage: an array of max_flows struct flow (64-byte aligned, so that the
 * key and the per-packet counters share two cache lines), a stack of free
 * slots, a dense
 * list of the live slots (what flowtab_next() and flowtab_close_interval()
 * walk, so that their cost follows the live flows, not max_flows; removal
 * moves the last entry into the hole), and an open-addressing index
 * (linear probing, power-of-two size >= 2 * max_flows, so the load stays at
 * or below one half and every probe sequence ends at an empty cell). Each
 * index cell holds the flow's slot + 1 and its 32-bit hash, so that a probe
 * compares keys only when the hashes agree. Removal uses backward-shift
 * deletion: no tombstones, probe lengths never degrade over time.
 *
 * The hash folds the six 64-bit words of the key pairwise with a full
 * 64x64->128-bit multiply (wyhash's "mum": xor of the product's halves), each
 * word xored with its own per-table random seed word (so that crafted
 * traffic cannot aim at one probe chain), and folds the three results with
 * one more multiply: four independent multiplies, about 25 instructions.
 * (A one-entry cache of the last flow was tried and dropped: on interleaved
 * fabric traffic it missed 95% of the time and cost more than the hash it
 * saved.)
 *
 * The per-packet work is split into an op (key, hash and the few packet
 * fields the update needs, built by op_make) and op_apply(), so that
 * flowtab_update() and the batch path run the very same code; the batch only
 * defers the hash to the flush and adds prefetches, which have no effect on
 * the result.
 *
 * CNP attribution: a CNP from A to B names B's QP (the sender's), while the
 * flow it throttles, B -> A, is keyed by A's QP, which the CNP does not
 * carry. RoCE data flows (any BTH opcode but CNP) are therefore also linked
 * into chains hashed by their (src, dst, VLANs) pair. A CNP walks the chain
 * of the pair (CNP dst, CNP src) and charges the matching flow; when several
 * QPs of that pair exist it charges the one with the most bytes in the
 * current interval (the one most likely to have filled the queue that
 * marked CE; ties go to the most recently created). When none exists yet the
 * CNP is counted on the CNP's own flow entry. The chains are only touched
 * when a RoCE flow is created or removed and when a CNP arrives, so the
 * per-packet path is one hash and one probe.
 */
#include "probes/flowtab.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#define NONE UINT32_MAX

_Static_assert(sizeof(struct flow_key) == 48, "flow_key is hashed as six 64-bit words");
_Static_assert(offsetof(struct flow, cnps) == 128, "per-packet fields fill two cache lines");
_Static_assert(offsetof(struct flow, pkts) == offsetof(struct flow, bytes) + 8 &&
               offsetof(struct flow, ivl_pkts) == offsetof(struct flow, ivl_bytes) + 8 &&
               offsetof(struct flow, ivl_ect) == offsetof(struct flow, ivl_ce) + 8,
               "counters are updated in pairs");
_Static_assert(offsetof(struct flow, seq_ok) < 128, "the loss tracking is per-packet state");
_Static_assert(sizeof(struct flow) == 192, "three cache lines per flow");
_Static_assert(offsetof(struct flow_key, in) == 46, "in lies in the key's former padding");
_Static_assert(offsetof(struct flow, ifidx) == offsetof(struct flow, sampling) + 4 &&
               offsetof(struct flow, dscp) == offsetof(struct flow, sampling) + 6 &&
               offsetof(struct flow, source) == offsetof(struct flow, sampling) + 7 &&
               offsetof(struct flowtab_op, ifidx) == offsetof(struct flowtab_op, scale) + 4 &&
               offsetof(struct flowtab_op, dscp) == offsetof(struct flowtab_op, scale) + 6 &&
               offsetof(struct flowtab_op, source) == offsetof(struct flowtab_op, scale) + 7,
               "an op's scale, ifidx, dscp, source are copied to the flow as one word");

#define P_ FLOWTAB_TRK_PSN
#define P8_ P_, P_, P_, P_, P_, P_, P_, P_
const uint8_t flowtab_roce_trk[256] = {
    P8_,                                                          /* RC 0x00-0x07 */
    P_, P_, P_, P_, FLOWTAB_TRK_PSN_READ, P_, P_, P_,             /* RC 0x08-0x0f: 0x0c Read Request */
    P_, FLOWTAB_TRK_NONE, FLOWTAB_TRK_NONE, P_, P_, P_, P_, P_,   /* RC 0x10-0x17: 0x11, 0x12 ACKs */
    P8_,                                                          /* RC 0x18-0x1f */
    P8_, P8_, P8_, P8_,                                           /* UC 0x20-0x3f */
};
#undef P8_
#undef P_

/* An arrival view judges the same packets for holes instead (flowtab.h). */
const uint8_t flowtab_trk_dir[2][FLOWTAB_TRK_N] = {
    {FLOWTAB_TRK_NONE, FLOWTAB_TRK_TCP, FLOWTAB_TRK_SYN, FLOWTAB_TRK_PSN, FLOWTAB_TRK_PSN_READ, FLOWTAB_TRK_NAK,
     FLOWTAB_TRK_TCP_IN, FLOWTAB_TRK_PSN_IN, FLOWTAB_TRK_PSN_READ_IN},
    {FLOWTAB_TRK_NONE, FLOWTAB_TRK_TCP_IN, FLOWTAB_TRK_SYN, FLOWTAB_TRK_PSN_IN, FLOWTAB_TRK_PSN_READ_IN,
     FLOWTAB_TRK_NAK, FLOWTAB_TRK_TCP_IN, FLOWTAB_TRK_PSN_IN, FLOWTAB_TRK_PSN_READ_IN},
};

/* How many ops ahead of the one it applies a flush prefetches the flow
 * record: by then the index cell that names it has arrived. */
#define FT_PREFETCH_LAG 8

struct ft_cell {
    uint32_t id1; /* slot + 1; 0 = empty */
    uint32_t hash;
};

struct ft_meta {
    uint32_t hash, pair_hash;
    uint32_t pair_next; /* slot + 1 of the next flow in the pair chain */
    uint32_t pos;       /* index in the live list */
    uint8_t roce_data, rated;
};

struct flowtab {
    uint32_t max, mask, count, nfree, hand;
    double idle;
    double ivl_s;       /* length of the last closed interval: weights rates */
    uint64_t seed, kseed[8];
    struct flow *flows;
    struct ft_meta *meta;
    uint32_t *freelist;
    uint32_t *live; /* count slots, dense */
    struct ft_cell *index;
    uint32_t *pair_head; /* mask + 1 chain heads, slot + 1 */
    struct flowtab_stats st;
};

static inline uint64_t fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t mixw(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static inline uint64_t mum(uint64_t a, uint64_t b)
{
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t ld64(const void *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static inline uint32_t key_hash(const struct flowtab *ft, const struct flow_key *k)
{
    const char *w = (const char *)k; /* six words, loaded in place */
    const uint64_t *s = ft->kseed;
    uint64_t a = mum(ld64(w) ^ s[0], ld64(w + 8) ^ s[1]);
    uint64_t b = mum(ld64(w + 16) ^ s[2], ld64(w + 24) ^ s[3]);
    uint64_t c = mum(ld64(w + 32) ^ s[4], ld64(w + 40) ^ s[5]);
    return (uint32_t)mum(a ^ s[6], b ^ c ^ s[7]);
}

/* Vector extensions (GCC, clang): three 16-byte xors instead of six
 * 64-bit ones, on any target. */
typedef uint64_t ft_v2 __attribute__((vector_size(16)));

static inline ft_v2 v2_load(const void *p)
{
    ft_v2 v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Three loads a side, no copy through the stack (arrays of vectors were
 * copied there first: twice the instructions). */
static inline bool key_eq(const struct flow_key *x, const struct flow_key *y)
{
    const char *a = (const char *)x, *b = (const char *)y;
    ft_v2 d = (v2_load(a) ^ v2_load(b)) | (v2_load(a + 16) ^ v2_load(b + 16)) |
              (v2_load(a + 32) ^ v2_load(b + 32));
    return (d[0] | d[1]) == 0;
}

static uint32_t pair_hash(const struct flowtab *ft, const uint8_t *a, const uint8_t *b,
                          const uint16_t vlan[2], uint8_t af)
{
    uint64_t w[4], h = ft->seed ^ 0x5bd1e995ULL;
    memcpy(w, a, 16);
    memcpy(w + 2, b, 16);
    for (int i = 0; i < 4; i++)
        h = mixw(h, w[i]);
    h = mixw(h, (uint64_t)vlan[0] << 32 | (uint64_t)vlan[1] << 16 | af);
    return (uint32_t)fmix64(h);
}

static inline __attribute__((always_inline)) void key_build(const struct decode_pkt *pkt,
                                                             struct flow_key *k)
{
    memset(k, 0, sizeof(*k));
    memcpy(k->src, pkt->src, 16);
    memcpy(k->dst, pkt->dst, 16);
    if (pkt->nvlan) {
        k->vlan[0] = pkt->vlan[0];
        if (pkt->nvlan > 1)
            k->vlan[1] = pkt->vlan[pkt->nvlan - 1];
    }
    k->sport = pkt->sport;
    k->dport = pkt->dport;
    k->qp = pkt->roce ? pkt->dqp : 0;
    k->af = pkt->af;
    k->proto = pkt->proto;
}

void flowtab_key(const struct decode_pkt *pkt, struct flow_key *k) { key_build(pkt, k); }

/* The flow records and the index: random accesses over megabytes, one TLB
 * miss each with 4 KiB pages. Arrays of 1 MiB or more (the index of the
 * default table is one) are therefore rounded up to 2 MiB and marked for
 * transparent huge pages (a hint: the kernel may decline; for smaller
 * arrays the rounding would cost more RSS than the TLB saves). */
static void *ft_alloc(size_t size)
{
    const size_t huge = (size_t)2 << 20;
    if (size < huge / 2)
        return aligned_alloc(64, (size + 63) & ~(size_t)63);
    size = (size + huge - 1) & ~(huge - 1);
    void *p = aligned_alloc(huge, size);
    if (p)
        madvise(p, size, MADV_HUGEPAGE);
    return p;
}

struct flowtab *flowtab_new(uint32_t max_flows, double idle_timeout_s)
{
    if (max_flows == 0 || max_flows > FLOWTAB_MAX_FLOWS) {
        errno = EINVAL;
        return NULL;
    }
    struct flowtab *ft = calloc(1, sizeof(*ft));
    if (!ft)
        return NULL;
    uint32_t n = 16;
    while (n < 2 * max_flows)
        n <<= 1;
    ft->max = max_flows;
    ft->mask = n - 1;
    ft->idle = idle_timeout_s;
    /* Not zeroed: a slot is written when handed out, and only slots that
     * were handed out are ever read. Untouched pages stay unmapped (in huge
     * page steps, see ft_alloc). */
    ft->flows = ft_alloc((size_t)max_flows * sizeof(*ft->flows));
    ft->meta = calloc(max_flows, sizeof(*ft->meta));
    ft->freelist = calloc(max_flows, sizeof(*ft->freelist));
    ft->live = calloc(max_flows, sizeof(*ft->live));
    ft->index = ft_alloc((size_t)n * sizeof(*ft->index));
    if (ft->index)
        memset(ft->index, 0, (size_t)n * sizeof(*ft->index));
    ft->pair_head = calloc(n, sizeof(*ft->pair_head));
    if (!ft->flows || !ft->meta || !ft->freelist || !ft->live || !ft->index || !ft->pair_head) {
        flowtab_free(ft);
        errno = ENOMEM;
        return NULL;
    }
    /* Hand out low slots first: slot order then follows arrival order. */
    for (uint32_t i = 0; i < max_flows; i++)
        ft->freelist[i] = max_flows - 1 - i;
    ft->nfree = max_flows;
    if (getrandom(&ft->seed, sizeof(ft->seed), GRND_NONBLOCK) != sizeof(ft->seed))
        ft->seed = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)ft;
    /* One seed word per key word (splitmix64), so that equal words in
     * different positions (A -> B and B -> A) do not cancel out. */
    uint64_t x = ft->seed;
    for (int i = 0; i < 8; i++) {
        x += 0x9e3779b97f4a7c15ULL;
        ft->kseed[i] = fmix64(x);
    }
    return ft;
}

void flowtab_free(struct flowtab *ft)
{
    if (!ft)
        return;
    free(ft->flows);
    free(ft->meta);
    free(ft->freelist);
    free(ft->live);
    free(ft->index);
    free(ft->pair_head);
    free(ft);
}

/* Slot of key (hash h), or NONE with *empty set to the cell it would take. */
static inline uint32_t find(const struct flowtab *ft, const struct flow_key *k, uint32_t h,
                            uint32_t *empty)
{
    uint32_t i = h & ft->mask;
    for (;;) {
        const struct ft_cell *c = &ft->index[i];
        if (!c->id1)
            break;
        if (c->hash == h && key_eq(&ft->flows[c->id1 - 1].key, k))
            return c->id1 - 1;
        i = (i + 1) & ft->mask;
    }
    *empty = i;
    return NONE;
}

static void index_del(struct flowtab *ft, uint32_t id)
{
    uint32_t i = ft->meta[id].hash & ft->mask;
    while (ft->index[i].id1 != id + 1)
        i = (i + 1) & ft->mask;
    /* Backward shift: pull later cells of the run into the hole unless their
     * home lies cyclically in (hole, cell]. */
    for (uint32_t j = i;;) {
        j = (j + 1) & ft->mask;
        if (!ft->index[j].id1)
            break;
        uint32_t home = ft->index[j].hash & ft->mask;
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        ft->index[i] = ft->index[j];
        i = j;
    }
    ft->index[i].id1 = 0;
}

static void pair_link(struct flowtab *ft, uint32_t id)
{
    const struct flow_key *k = &ft->flows[id].key;
    struct ft_meta *m = &ft->meta[id];
    m->pair_hash = pair_hash(ft, k->src, k->dst, k->vlan, k->af);
    uint32_t *head = &ft->pair_head[m->pair_hash & ft->mask];
    m->pair_next = *head;
    *head = id + 1;
    m->roce_data = 1;
}

static void pair_unlink(struct flowtab *ft, uint32_t id)
{
    uint32_t *p = &ft->pair_head[ft->meta[id].pair_hash & ft->mask];
    while (*p && *p != id + 1)
        p = &ft->meta[*p - 1].pair_next;
    if (*p)
        *p = ft->meta[id].pair_next;
    ft->meta[id].roce_data = 0;
}

static void flow_remove(struct flowtab *ft, uint32_t id)
{
    index_del(ft, id);
    if (ft->meta[id].roce_data)
        pair_unlink(ft, id);
    uint32_t pos = ft->meta[id].pos, tail = ft->live[--ft->count];
    ft->live[pos] = tail;
    ft->meta[tail].pos = pos;
    ft->freelist[ft->nfree++] = id;
}

/* What a flow is worth keeping for (see flowtab.h): its bytes so far this
 * interval and what its smoothed rate carries in one interval. */
static inline double flow_weight(const struct flowtab *ft, const struct flow *f)
{
    return (double)f->ivl_bytes + f->rate_bps * ft->ivl_s / 8.0;
}

/* Frees one slot (the table is full, so every slot holds a flow): the
 * lightest non-fat flow of the window under the hand, else the lightest fat
 * one. The slot goes on top of the free list: the caller's newcomer takes
 * it. */
static void evict(struct flowtab *ft)
{
    uint32_t best = NONE, n = ft->max < FLOWTAB_EVICT_WINDOW ? ft->max : FLOWTAB_EVICT_WINDOW;
    double best_w = 0;
    for (uint32_t i = 0, id = ft->hand; i < n; i++, id = id + 1 == ft->max ? 0 : id + 1) {
        const struct flow *f = &ft->flows[id];
        double w = flow_weight(ft, f);
        if (best != NONE) {
            const struct flow *b = &ft->flows[best];
            if (f->fat != b->fat ? f->fat : w > best_w || (w == best_w && f->last_ts >= b->last_ts))
                continue;
        }
        best = id;
        best_w = w;
    }
    ft->hand = (uint32_t)(((uint64_t)ft->hand + n) % ft->max);
    flow_remove(ft, best);
    ft->st.evicted++;
}

static uint32_t insert(struct flowtab *ft, const struct flow_key *k, uint32_t h, uint32_t cell,
                       double ts)
{
    if (!ft->nfree) {
        evict(ft);
        /* Removal shifted the index: find the empty cell again. */
        cell = h & ft->mask;
        while (ft->index[cell].id1)
            cell = (cell + 1) & ft->mask;
    }
    uint32_t id = ft->freelist[--ft->nfree];
    struct flow *f = &ft->flows[id];
    memset(f, 0, sizeof(*f));
    f->key = *k;
    f->first_ts = f->last_ts = ts;
    memset(&ft->meta[id], 0, sizeof(ft->meta[id]));
    ft->meta[id].hash = h;
    ft->meta[id].pos = ft->count;
    ft->live[ft->count++] = id;
    ft->index[cell].id1 = id + 1;
    ft->index[cell].hash = h;
    ft->st.inserted++;
    return id;
}

/* Charges a CNP seen on flow own (the CNP's own entry). See the top. */
static void cnp_account(struct flowtab *ft, uint32_t own, uint32_t scale)
{
    const struct flow_key *k = &ft->flows[own].key;
    uint32_t h = pair_hash(ft, k->dst, k->src, k->vlan, k->af), best = NONE;
    for (uint32_t id1 = ft->pair_head[h & ft->mask]; id1; id1 = ft->meta[id1 - 1].pair_next) {
        const struct flow *f = &ft->flows[id1 - 1];
        if (ft->meta[id1 - 1].pair_hash != h || f->key.af != k->af ||
            memcmp(f->key.src, k->dst, 16) || memcmp(f->key.dst, k->src, 16) ||
            f->key.vlan[0] != k->vlan[0] || f->key.vlan[1] != k->vlan[1])
            continue;
        if (best == NONE || f->ivl_bytes > ft->flows[best].ivl_bytes)
            best = id1 - 1;
    }
    struct flow *t = &ft->flows[best == NONE ? own : best];
    t->cnps += scale;
    t->ivl_cnps += scale;
}

/* Everything op_apply() needs from a packet but the hash. */
static inline void op_fill(struct flowtab_op *o, const struct decode_pkt *pkt, uint16_t ifidx,
                           double ts, uint32_t scale, uint8_t source)
{
    key_build(pkt, &o->key);
    o->key.in = (uint8_t)(ifidx >> 15);
    o->ts = ts;
    o->wire_len = pkt->wire_len;
    o->scale = scale;
    o->ifidx = ifidx & (FLOWTAB_IN - 1);
    o->dscp = pkt->dscp;
    o->ecn = pkt->ecn;
    o->roce = pkt->roce;
    o->bth_opcode = pkt->bth_opcode;
    o->source = source;
    o->seq = pkt->roce ? pkt->psn : pkt->tcp_seq;
    o->seg_len = pkt->seg_len;
    /* A 1-in-N sample is no sequence: sampled packets are not judged. */
    o->trk = source == FLOW_SRC_SFLOW ? FLOWTAB_TRK_NONE
                                      : flowtab_trk_dir[o->key.in][flowtab_trk(pkt->proto, pkt->roce, pkt->bth_opcode,
                                                                               pkt->nak, pkt->seg_len, pkt->tcp_syn)];
}

/* The loss signals of one packet (flowtab.h, top). Saturating: a counter
 * that wrapped within an interval would report a clean flow. */
static inline void sat_inc(uint32_t *c)
{
    *c += *c != UINT32_MAX;
}

static inline void sat_inc16(uint16_t *c)
{
    *c = (uint16_t)(*c + (*c != UINT16_MAX));
}

static inline __attribute__((always_inline)) void track(struct flow *f, const struct flowtab_op *o)
{
    switch (o->trk) {
    case FLOWTAB_TRK_TCP: {
        uint32_t end = o->seq + o->seg_len;
        if (f->seq_ok && (int32_t)(end - f->seq_next) <= 0) {
            /* A keep-alive (one byte already sent, at the highest end:
             * Windows sends those on idle connections) is no loss. */
            if (o->seg_len != 1 || end != f->seq_next) {
                sat_inc(&f->ivl_retx);
                if (end == f->seq_next)
                    sat_inc16(&f->ivl_tail);
            }
        } else {
            f->seq_next = end;
            f->seq_ok = 1;
        }
        break;
    }
    case FLOWTAB_TRK_SYN:
        f->seq_ok = 0;
        break;
    case FLOWTAB_TRK_PSN:
    case FLOWTAB_TRK_PSN_READ:
        if (f->seq_ok && o->seq != f->seq_next)
            sat_inc(&f->ivl_retx);
        f->seq_next = (o->seq + 1) & 0xffffff;
        f->seq_ok = o->trk == FLOWTAB_TRK_PSN;
        break;
    case FLOWTAB_TRK_NAK:
        sat_inc(&f->ivl_naks);
        break;
    case FLOWTAB_TRK_TCP_IN: {
        /* Arrival view: data starting beyond the highest end seen lost its
         * predecessor upstream (a hole); the first packet sets the mark. */
        uint32_t end = o->seq + o->seg_len;
        if (!f->seq_ok) {
            f->seq_next = end;
            f->seq_ok = 1;
            break;
        }
        if ((int32_t)(o->seq - f->seq_next) > 0)
            sat_inc(&f->ivl_retx);
        if ((int32_t)(end - f->seq_next) > 0)
            f->seq_next = end;
        break;
    }
    case FLOWTAB_TRK_PSN_IN:
    case FLOWTAB_TRK_PSN_READ_IN: {
        /* Ahead of the expected PSN (within half the space): a hole; behind
         * it: a resend, which neither counts nor moves the mark back. */
        uint32_t ahead = (o->seq - f->seq_next) & 0xffffff;
        if (f->seq_ok && ahead >= 0x800000)
            break;
        if (f->seq_ok && ahead)
            sat_inc(&f->ivl_retx);
        f->seq_next = (o->seq + 1) & 0xffffff;
        f->seq_ok = o->trk == FLOWTAB_TRK_PSN_IN;
        break;
    }
    default:
        break;
    }
}

static inline __attribute__((always_inline)) int op_apply(struct flowtab *ft,
                                                           const struct flowtab_op *o)
{
    uint32_t id, cell = 0;
    id = find(ft, &o->key, o->hash, &cell);
    if (id == NONE)
        id = insert(ft, &o->key, o->hash, cell, o->ts);
    struct flow *f = &ft->flows[id];
    uint32_t scale = o->scale;
    /* Pairs of adjacent counters as one vector add each, branch-free. */
    ft_v2 bp = {(uint64_t)o->wire_len * scale, scale};
    /* (CE, ECT) by ECN codepoint: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE */
    static const ft_v2 ce_mask[4] = {{0, 0}, {0, ~0ULL}, {0, ~0ULL}, {~0ULL, 0}};
    ft_v2 sc = {scale, scale}, ce = ce_mask[o->ecn & 3] & sc;
    ft_v2 v;
    memcpy(&v, &f->bytes, 16), v += bp, memcpy(&f->bytes, &v, 16);
    memcpy(&v, &f->ivl_bytes, 16), v += bp, memcpy(&f->ivl_bytes, &v, 16);
    memcpy(&v, &f->ivl_ce, 16), v += ce, memcpy(&f->ivl_ce, &v, 16);
    if (o->ts > f->last_ts)
        f->last_ts = o->ts;
    /* sampling = scale, ifidx, dscp, source (see the asserts at the top) */
    memcpy(&f->sampling, &o->scale, 8);
    if (o->trk)
        track(f, o);
    if (o->roce) {
        if (o->bth_opcode == DECODE_BTH_CNP)
            cnp_account(ft, id, scale);
        else if (!ft->meta[id].roce_data)
            pair_link(ft, id);
    }
    return 0;
}

int flowtab_update(struct flowtab *ft, const struct decode_pkt *pkt, uint16_t ifidx,
                   double ts, uint32_t scale, uint8_t source)
{
    struct flowtab_op o;
    if (pkt->af != 4 && pkt->af != 6)
        return -EINVAL;
    op_fill(&o, pkt, ifidx, ts, scale, source);
    o.hash = key_hash(ft, &o.key);
    return op_apply(ft, &o);
}

/* The record the op's home index cell names, if its tag matches: a guess
 * (the flow may sit further along the run, or be evicted before the op is
 * applied), good for a prefetch only. */
static inline void prefetch_flow(const struct flowtab *ft, const struct flowtab_op *o)
{
    const struct ft_cell *c = &ft->index[o->hash & ft->mask];
    if (c->id1 && c->hash == o->hash) {
        const char *f = (const char *)&ft->flows[c->id1 - 1];
        __builtin_prefetch(f);
        __builtin_prefetch(f + 64);
    }
}

void flowtab_batch_flush(struct flowtab *ft, struct flowtab_batch *b)
{
    uint32_t n = b->n;
    /* Group prefetching: hash every op and ask for its index cell, then
     * apply in order while asking for the records FT_PREFETCH_LAG ops
     * ahead (by then their index cells have arrived). */
    for (uint32_t i = 0; i < n; i++) {
        struct flowtab_op *o = &b->op[i];
        o->hash = key_hash(ft, &o->key);
        __builtin_prefetch(&ft->index[o->hash & ft->mask]);
    }
    for (uint32_t i = 0; i < n && i < FT_PREFETCH_LAG; i++)
        prefetch_flow(ft, &b->op[i]);
    for (uint32_t i = 0; i < n; i++) {
        if (i + FT_PREFETCH_LAG < n)
            prefetch_flow(ft, &b->op[i + FT_PREFETCH_LAG]);
        op_apply(ft, &b->op[i]);
    }
    b->n = 0;
}

int flowtab_batch_add(struct flowtab *ft, struct flowtab_batch *b, const struct decode_pkt *pkt,
                      uint16_t ifidx, double ts, uint32_t scale, uint8_t source)
{
    if (pkt->af != 4 && pkt->af != 6)
        return -EINVAL;
    op_fill(&b->op[b->n], pkt, ifidx, ts, scale, source); /* hashed by the flush */
    if (++b->n == FLOWTAB_BATCH)
        flowtab_batch_flush(ft, b);
    return 0;
}

struct flow *flowtab_lookup(struct flowtab *ft, const struct flow_key *key)
{
    uint32_t cell, id = find(ft, key, key_hash(ft, key), &cell);
    return id == NONE ? NULL : &ft->flows[id];
}

void flowtab_close_interval(struct flowtab *ft, double now, double interval_s,
                            const double *link_bps, size_t nlinks, double fat_share)
{
    ft->ivl_s = interval_s > 0 ? interval_s : 0;
    /* Downwards, so that a removal (which moves the last entry into the
     * hole) only moves an entry already done. */
    for (uint32_t i = ft->count; i-- > 0;) {
        uint32_t id = ft->live[i];
        struct ft_meta *m = &ft->meta[id];
        struct flow *f = &ft->flows[id];
        double span = interval_s;
        if (!m->rated && f->sampling <= 1 && now - f->first_ts < span) {
            span = now - f->first_ts;
            if (span < FLOWTAB_MIN_SPAN * interval_s)
                span = FLOWTAB_MIN_SPAN * interval_s;
        }
        f->ivl_bps = span > 0 ? (double)f->ivl_bytes * 8.0 / span : 0.0;
        if (m->rated) {
            f->rate_bps = FLOWTAB_EWMA_ALPHA * f->ivl_bps + (1.0 - FLOWTAB_EWMA_ALPHA) * f->rate_bps;
        } else {
            f->rate_bps = f->ivl_bps;
            m->rated = 1;
        }
        double link = f->ifidx < nlinks ? link_bps[f->ifidx] : 0.0;
        if (link > 0 && fat_share > 0) {
            double thr = fat_share * link;
            /* A sampled flow needs enough samples in the interval before it
             * may become fat: one or two samples of a mouse, scaled by the
             * sampling rate, would otherwise look like an elephant (see
             * docs/telemetry.md). ivl_pkts is scaled: samples = pkts / N. */
            bool enough = f->sampling <= 1 || f->fat ||
                          f->ivl_pkts >= (uint64_t)FLOWTAB_MIN_SAMPLES * f->sampling;
            f->fat = enough && f->rate_bps >= (f->fat ? thr * FLOWTAB_HYST_LOW : thr);
        } else {
            f->fat = false;
        }
        f->ce_pkts += f->ivl_ce;
        f->ect_pkts += f->ivl_ect;
        f->ivl_bytes = f->ivl_pkts = f->ivl_ce = f->ivl_ect = f->ivl_cnps = 0;
        f->closed_retx = f->ivl_retx;
        f->ivl_retx = f->ivl_naks = 0;
        f->ivl_tail = 0;
        if (ft->idle > 0 && now - f->last_ts > ft->idle) {
            flow_remove(ft, id);
            ft->st.expired++;
        }
    }
}

uint32_t flowtab_rising(const struct flowtab *ft, double now, double ivl_s, double min_age,
                        const double *link_bps, size_t nlinks, double fat_share)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ft->count && fat_share > 0 && ivl_s > 0; i++) {
        const struct flow *f = &ft->flows[ft->live[i]];
        double age = now - f->first_ts, span = age < ivl_s ? age : ivl_s;
        if (f->fat || f->sampling > 1 || f->ifidx >= nlinks || !(link_bps[f->ifidx] > 0) || age < min_age ||
            !(span > 0))
            continue;
        n += (double)f->ivl_bytes * 8.0 / span >= fat_share * link_bps[f->ifidx];
    }
    return n;
}

struct flow *flowtab_next(struct flowtab *ft, uint32_t *cursor)
{
    if (*cursor >= ft->count)
        return NULL;
    return &ft->flows[ft->live[(*cursor)++]];
}

uint32_t flowtab_count(const struct flowtab *ft) { return ft->count; }

void flowtab_get_stats(const struct flowtab *ft, struct flowtab_stats *st) { *st = ft->st; }
