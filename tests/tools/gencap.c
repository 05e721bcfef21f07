/*
 * gencap: writes a synthetic fabric capture for the probe benchmark.
 *
 *   gencap OUT.pcap [NPKTS] [--swapped] [--nsec] [--snaplen N]
 *                               (default 5,000,000 packets)
 *
 * --swapped writes the file in the other byte order, --nsec with nanosecond
 * timestamps, --snaplen N puts N in the file header without cutting the
 * records (a record longer than N is one libpcap cuts to N): variants that
 * the capture tests read with both of the probe's readers.
 *
 * The mix, deterministic (fixed-seed xorshift):
 *   60%  RoCEv2 fat flows: 8 QPs over 4 host pairs, 4154-byte frames (4 KiB
 *        MTU) captured to 74 bytes, DSCP 26, ECT(0) with 2% CE
 *   0.5% CNPs (BTH opcode 0x81, DSCP 48) back towards the senders
 *   rest: mice over 20,000 TCP and 5,000 UDP 5-tuples, 64..1514-byte frames,
 *        10% of them 802.1Q-tagged and 10% IPv6
 * Records are written as a snaplen-128 capture would hold them (caplen =
 * headers, len = wire length), timestamps 1 us apart. Checksums are zero.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/xorshift.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { return (uint32_t)(xorshift64(&rng) >> 11); }

static void put16(uint8_t *b, uint16_t v) { b[0] = v >> 8; b[1] = v & 0xff; }
static void put32(uint8_t *b, uint32_t v) { put16(b, v >> 16); put16(b + 2, v & 0xffff); }

/* Ethernet (+ optional tag); returns the offset of the L3 header. */
static int eth(uint8_t *b, uint16_t type, int vlan)
{
    memcpy(b, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02", 12);
    int o = 12;
    if (vlan) {
        put16(b + o, 0x8100);
        put16(b + o + 2, (uint16_t)vlan);
        o += 4;
    }
    put16(b + o, type);
    return o + 2;
}

static int ip4(uint8_t *b, uint32_t src, uint32_t dst, uint8_t proto, uint8_t tos, uint32_t len)
{
    b[0] = 0x45;
    b[1] = tos;
    put16(b + 2, (uint16_t)len);
    b[8] = 64;
    b[9] = proto;
    put32(b + 12, src);
    put32(b + 16, dst);
    return 20;
}

static int ip6(uint8_t *b, uint32_t s, uint32_t d, uint8_t proto, uint32_t plen)
{
    b[0] = 0x60;
    put16(b + 4, (uint16_t)plen);
    b[6] = proto;
    b[7] = 64;
    b[8] = 0xfd;
    put32(b + 20, s);
    b[24] = 0xfd;
    put32(b + 36, d);
    return 40;
}

struct rec {
    uint32_t caplen, len;
    uint8_t d[128];
};

static void roce(struct rec *r, int qp, int cnp)
{
    uint32_t a = 0x0a000101 + (uint32_t)(qp % 4), z = 0x0a000201 + (uint32_t)(qp % 4);
    int ce = !cnp && rnd() % 100 < 2;
    uint32_t wire = cnp ? 74 : 4154;
    int o = eth(r->d, 0x0800, 0);
    uint8_t tos = cnp ? (48 << 2) | 2 : (26 << 2) | (ce ? 3 : 2);
    o += ip4(r->d + o, cnp ? z : a, cnp ? a : z, 17, tos, wire - 14);
    put16(r->d + o, (uint16_t)(49152 + qp));
    put16(r->d + o + 2, 4791);
    put16(r->d + o + 4, (uint16_t)(wire - o));
    o += 8;
    r->d[o] = cnp ? 0x81 : 0x0a; /* CNP or RDMA WRITE Only */
    put16(r->d + o + 2, 0xffff); /* default P_Key; byte 4 holds BECN */
    put32(r->d + o + 4, (cnp ? 0x40000000u : 0) | (uint32_t)(cnp ? 0x100 + qp : 0x200 + qp));
    put32(r->d + o + 8, rnd() & 0xffffff);
    o += 12;
    r->caplen = (uint32_t)o + (cnp ? 16 : 20);
    r->len = wire;
}

static void mouse(struct rec *r)
{
    uint32_t f = rnd();
    int tcp = f % 5 != 0, v6 = (f >> 8) % 10 == 0, vlan = (f >> 12) % 10 == 0 ? 100 + f % 8 : 0;
    uint32_t id = tcp ? f % 20000 : f % 5000;
    uint32_t wire = 64 + rnd() % 1451;
    int o = eth(r->d, v6 ? 0x86dd : 0x0800, vlan);
    uint32_t s = 0x0b000000 + id, d = 0x0c000000 + id % 97;
    uint32_t l3len = wire - (uint32_t)o;
    o += v6 ? ip6(r->d + o, s, d, tcp ? 6 : 17, l3len - 40)
            : ip4(r->d + o, s, d, tcp ? 6 : 17, 0, l3len);
    put16(r->d + o, (uint16_t)(1024 + id % 60000));
    put16(r->d + o + 2, tcp ? 443 : 53);
    if (tcp) {
        r->d[o + 12] = 0x50;
        r->d[o + 13] = 0x10;
        o += 20;
    } else {
        put16(r->d + o + 4, (uint16_t)(l3len - (v6 ? 40 : 20)));
        o += 8;
    }
    r->caplen = (uint32_t)o < wire ? (uint32_t)o : wire;
    r->len = wire;
}

static uint32_t out32(uint32_t v, int swapped) { return swapped ? __builtin_bswap32(v) : v; }

int main(int argc, char **argv)
{
    uint64_t n = 5000000, snaplen = 128;
    int swapped = 0, nsec = 0, bad = argc < 2;
    for (int i = 2; i < argc && !bad; i++) {
        if (strcmp(argv[i], "--swapped") == 0)
            swapped = 1;
        else if (strcmp(argv[i], "--nsec") == 0)
            nsec = 1;
        else if (strcmp(argv[i], "--snaplen") == 0 && i + 1 < argc)
            bad = (snaplen = strtoull(argv[++i], NULL, 10)) == 0 || snaplen > 262144;
        else
            bad = i != 2 || (n = strtoull(argv[i], NULL, 10)) == 0;
    }
    if (bad) {
        fprintf(stderr, "usage: gencap OUT.pcap [NPKTS] [--swapped] [--nsec] [--snaplen N]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    static char buf[1 << 20];
    setvbuf(f, buf, _IOFBF, sizeof(buf));
    uint16_t ver[2] = {2, 4};
    if (swapped)
        ver[0] = __builtin_bswap16(ver[0]), ver[1] = __builtin_bswap16(ver[1]);
    uint32_t gh[6] = {out32(nsec ? 0xa1b23c4d : 0xa1b2c3d4, swapped), 0, 0, 0,
                      out32((uint32_t)snaplen, swapped), out32(1, swapped)};
    memcpy(&gh[1], ver, 4);
    fwrite(gh, sizeof(gh), 1, f);
    for (uint64_t i = 0; i < n; i++) {
        struct rec r;
        memset(r.d, 0, sizeof(r.d));
        uint32_t k = rnd() % 1000;
        if (k < 600)
            roce(&r, (int)(rnd() % 8), 0);
        else if (k < 605)
            roce(&r, (int)(rnd() % 8), 1);
        else
            mouse(&r);
        /* 1 us apart; nanosecond files add 0..999 ns, which libpcap drops */
        uint32_t frac = (uint32_t)(i % 1000000) * (nsec ? 1000 : 1) + (nsec ? (uint32_t)(i % 1000) : 0);
        uint32_t h[4] = {out32(1700000000u + (uint32_t)(i / 1000000), swapped), out32(frac, swapped),
                         out32(r.caplen, swapped), out32(r.len, swapped)};
        fwrite(h, sizeof(h), 1, f);
        fwrite(r.d, r.caplen, 1, f);
    }
    if (fclose(f) != 0) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
