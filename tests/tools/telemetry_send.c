/*
 * telemetry_send: plays a switch that exports telemetry about one known fat
 * flow, for the probe's live sFlow/ERSPAN test and its benchmark.
 *
 *   telemetry_send --sflow ADDR:PORT --ifindex N --rate N --flow-gbps G
 *                  [--pkt-bytes B] [--mouse-gbps G] [--seconds S] [--seed N]
 *                  [--skip-every K] [--forge-agents N [--forge-from ADDR]]
 *   telemetry_send --erspan ADDR --session ID --pps N [--inner-bytes B] [--seconds S]
 *   telemetry_send --write-pcaps DIR [--count N] [--rate N]
 *
 * sFlow: what a switch agent sends when it samples 1-in-rate packets leaving
 * port ifindex: per 10 ms tick the number of samples of each flow is drawn
 * from a Poisson distribution with the mean the flow's packet rate implies,
 * and each becomes an sFlow v5 flow sample (raw Ethernet/IPv4/UDP/BTH header,
 * RoCEv2 to QP 0x1234 for the fat flow, a TCP mouse beside it); a counter
 * sample with the port's octet counters goes out every second. --skip-every
 * K skips one datagram sequence number every K datagrams (simulated loss).
 * --forge-agents N plays an attacker beside the switch: N more datagrams,
 * spread over the run, each a copy of a real one under its own agent
 * address (--forge-from, default 10.200.0.0, plus 0..N-1), sent from the
 * same socket (the agent address is in the datagram, not the UDP source).
 * ERSPAN: type II frames (GRE 0x88BE with sequence numbers, session ID)
 * mirroring a RoCEv2 frame of --inner-bytes, at --pps, through a raw GRE
 * socket, so the kernel builds the carrier IPv4 header.
 *
 * --write-pcaps writes, for the benchmark, the same N inner frames three ways:
 * direct.pcap (as captured on the link), erspan.pcap (each mirrored in ERSPAN
 * type II over IPv4/GRE) and sflow.pcap (each as a 1-in-rate flow sample,
 * eight samples per sFlow datagram over IPv4/UDP 6343).
 *
 * Prints one JSON line with what it sent, for the test to compare against.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "tests/lib/xorshift.h"

struct buf {
    uint8_t b[1500];
    size_t n;
};

static void put32(struct buf *b, uint32_t v)
{
    b->b[b->n++] = (uint8_t)(v >> 24);
    b->b[b->n++] = (uint8_t)(v >> 16);
    b->b[b->n++] = (uint8_t)(v >> 8);
    b->b[b->n++] = (uint8_t)v;
}
static void put64(struct buf *b, uint64_t v) { put32(b, (uint32_t)(v >> 32)); put32(b, (uint32_t)v); }
static void patch32(struct buf *b, size_t at, uint32_t v)
{
    b->b[at] = (uint8_t)(v >> 24); b->b[at + 1] = (uint8_t)(v >> 16);
    b->b[at + 2] = (uint8_t)(v >> 8); b->b[at + 3] = (uint8_t)v;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    return (double)(xorshift64(&rng) >> 11) / 9007199254740992.0;
}
static unsigned poisson(double lambda)
{
    double l = exp(-lambda), p = 1.0;
    unsigned k = 0;
    do {
        k++;
        p *= urand();
    } while (p > l);
    return k - 1;
}

/* A 64-byte header: Ethernet, IPv4 (total length from the frame), UDP to
 * 4791 and a BTH (RC SEND Only to QP 0x1234) for the fat flow, or TCP for the
 * mouse. */
static size_t frame_header(uint8_t *h, int fat, uint32_t frame_len, uint32_t flow)
{
    memset(h, 0, 64);
    h[5] = 1; h[11] = 2; h[12] = 0x08;
    uint8_t *ip = h + 14;
    ip[0] = 0x45;
    ip[1] = fat ? 0x6a : 0x00; /* DSCP 26, ECT(0) for RoCE */
    uint16_t tl = (uint16_t)(frame_len > 14 + 65535 ? 65535 : frame_len - 14);
    ip[2] = (uint8_t)(tl >> 8); ip[3] = (uint8_t)tl;
    ip[8] = 64;
    ip[9] = fat ? 17 : 6;
    ip[12] = 10; ip[13] = 0; ip[14] = (uint8_t)(1 + (flow >> 8)); ip[15] = (uint8_t)((fat ? 1 : 2) + flow);
    ip[16] = 10; ip[17] = 0; ip[18] = 2; ip[19] = fat ? 1 : 2;
    uint8_t *l4 = ip + 20;
    if (fat) {
        l4[0] = 0xc0; l4[1] = 0x00;           /* sport 49152 */
        l4[2] = 0x12; l4[3] = 0xb7;           /* dport 4791 */
        l4[4] = (uint8_t)((tl - 20) >> 8); l4[5] = (uint8_t)(tl - 20);
        uint8_t *bth = l4 + 8;
        bth[0] = 0x04;                         /* RC SEND Only */
        bth[2] = 0xff; bth[3] = 0xff;
        bth[5] = 0x00; bth[6] = 0x12; bth[7] = 0x34;
    } else {
        l4[0] = 0x9c; l4[1] = 0x40;           /* 40000 -> 5201 */
        l4[2] = 0x14; l4[3] = 0x51;
        l4[12] = 0x50;
    }
    return 64;
}

static int parse_hostport(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *c = strrchr(s, ':');
    uint64_t port;
    if (!c || (size_t)(c - s) >= sizeof(host) || tf_parse_u64(c + 1, 1, 65535, &port) < 0)
        return -EINVAL;
    memcpy(host, s, (size_t)(c - s));
    host[c - s] = '\0';
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

static void sleep_until(double t)
{
    double now = tf_now_mono();
    if (t > now) {
        struct timespec ts = {(time_t)(t - now), (long)(((t - now) - (double)(time_t)(t - now)) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

struct sflow_state {
    int fd;
    struct sockaddr_in dst;
    struct buf d;
    size_t nsamples_at;
    uint32_t nsamples, seq, sample_seq, pool, skip_every, ndgrams;
    uint64_t sent_dgrams, sent_samples[2], skipped;
    double t0;
    uint32_t forge_from, forge_n, forge_per; /* forged copies per real datagram */
    uint64_t forged;
};

static void dgram_begin(struct sflow_state *s)
{
    s->d.n = 0;
    put32(&s->d, 5);
    put32(&s->d, 1);
    /* agent address: the sender's own, as the probe's mapping names it */
    put32(&s->d, 0); /* patched by the caller's --agent */
    put32(&s->d, 0);
    if (s->skip_every && s->ndgrams && s->ndgrams % s->skip_every == 0) {
        s->seq++; /* one datagram "lost" */
        s->skipped++;
    }
    put32(&s->d, ++s->seq);
    put32(&s->d, (uint32_t)((tf_now_mono() - s->t0) * 1000.0) + 1000);
    s->nsamples_at = s->d.n;
    put32(&s->d, 0);
    s->nsamples = 0;
}

static uint32_t agent_addr;

static void dgram_flush(struct sflow_state *s)
{
    if (!s->nsamples)
        return;
    patch32(&s->d, 8, agent_addr);
    patch32(&s->d, s->nsamples_at, s->nsamples);
    if (sendto(s->fd, s->d.b, s->d.n, 0, (struct sockaddr *)&s->dst, sizeof(s->dst)) < 0)
        perror("telemetry_send: sendto");
    for (uint32_t k = 0; k < s->forge_per && s->forged < s->forge_n; k++, s->forged++) {
        patch32(&s->d, 8, s->forge_from + (uint32_t)s->forged);
        if (sendto(s->fd, s->d.b, s->d.n, 0, (struct sockaddr *)&s->dst, sizeof(s->dst)) < 0)
            perror("telemetry_send: sendto");
    }
    s->sent_dgrams++;
    s->ndgrams++;
    dgram_begin(s);
}

static void add_flow_sample(struct sflow_state *s, int fat, uint32_t rate, uint32_t ifindex,
                            uint32_t frame_len, uint32_t flow)
{
    if (s->d.n + 160 > sizeof(s->d.b))
        dgram_flush(s);
    put32(&s->d, 1);
    size_t len_at = s->d.n;
    put32(&s->d, 0);
    size_t start = s->d.n;
    put32(&s->d, ++s->sample_seq);
    put32(&s->d, ifindex);
    put32(&s->d, rate);
    s->pool += rate;
    put32(&s->d, s->pool);
    put32(&s->d, 0);
    put32(&s->d, 1);        /* input */
    put32(&s->d, ifindex);  /* output: the port the packet left by */
    put32(&s->d, 1);
    put32(&s->d, 1);        /* raw packet header */
    put32(&s->d, 16 + 64);
    put32(&s->d, 1);
    put32(&s->d, frame_len + 4); /* with FCS */
    put32(&s->d, 4);
    put32(&s->d, 64);
    frame_header(s->d.b + s->d.n, fat, frame_len, flow);
    s->d.n += 64;
    patch32(&s->d, len_at, (uint32_t)(s->d.n - start));
    s->nsamples++;
    s->sent_samples[fat ? 0 : 1]++;
}

static void add_counter_sample(struct sflow_state *s, uint32_t ifindex, uint64_t speed,
                               uint64_t out_octets, uint64_t in_octets, uint32_t cseq)
{
    if (s->d.n + 120 > sizeof(s->d.b))
        dgram_flush(s);
    put32(&s->d, 2);
    put32(&s->d, 12 + 8 + 88);
    put32(&s->d, cseq);
    put32(&s->d, ifindex);
    put32(&s->d, 1);
    put32(&s->d, 1);
    put32(&s->d, 88);
    put32(&s->d, ifindex); put32(&s->d, 6); put64(&s->d, speed); put32(&s->d, 1); put32(&s->d, 3);
    put64(&s->d, in_octets); for (int i = 0; i < 6; i++) put32(&s->d, 0);
    put64(&s->d, out_octets); for (int i = 0; i < 5; i++) put32(&s->d, 0);
    put32(&s->d, 0);
    s->nsamples++;
}

static int run_sflow(const char *dst, uint32_t ifindex, uint32_t rate, double flow_gbps,
                     double mouse_gbps, uint32_t pkt_bytes, double seconds, double link_gbps,
                     uint32_t skip_every, uint32_t forge_n, uint32_t forge_from)
{
    /* One real datagram a 10 ms tick: the forged ones ride along, spread
     * over the first half of the run so the switch's own go on after. */
    uint32_t forge_ticks = (uint32_t)(seconds / 0.01 / 2) + 1;
    struct sflow_state s = {.skip_every = skip_every, .forge_n = forge_n, .forge_from = forge_from,
                            .forge_per = (forge_n + forge_ticks - 1) / forge_ticks};
    if (parse_hostport(dst, &s.dst) < 0) {
        fprintf(stderr, "telemetry_send: --sflow %s: expected ADDR:PORT\n", dst);
        return 2;
    }
    s.fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (s.fd < 0)
        return 1;
    s.t0 = tf_now_mono();
    dgram_begin(&s);
    double fat_pps = flow_gbps * 1e9 / 8.0 / pkt_bytes, mouse_pps = mouse_gbps * 1e9 / 8.0 / 1500;
    double tick = 0.01, next_ctr = s.t0;
    uint64_t out_octets = 0, ticks = 0;
    uint32_t cseq = 0;
    for (double t = s.t0; t < s.t0 + seconds; t += tick, ticks++) {
        sleep_until(t);
        unsigned nf = poisson(fat_pps * tick / rate), nm = poisson(mouse_pps * tick / rate);
        for (unsigned i = 0; i < nf; i++)
            add_flow_sample(&s, 1, rate, ifindex, pkt_bytes, 0);
        for (unsigned i = 0; i < nm; i++)
            add_flow_sample(&s, 0, rate, ifindex, 1500, 0);
        out_octets += (uint64_t)((fat_pps * pkt_bytes + mouse_pps * 1500) * tick);
        if (t >= next_ctr) {
            add_counter_sample(&s, ifindex, (uint64_t)(link_gbps * 1e9), out_octets, out_octets / 50, ++cseq);
            next_ctr += 1.0;
        }
        dgram_flush(&s);
    }
    close(s.fd);
    printf("{\"datagrams\": %llu, \"fat_samples\": %llu, \"mouse_samples\": %llu, \"skipped_seq\": %llu, "
           "\"fat_bps\": %.0f, \"link_tx_bps\": %.0f, \"forged_datagrams\": %llu}\n",
           (unsigned long long)s.sent_dgrams, (unsigned long long)s.sent_samples[0],
           (unsigned long long)s.sent_samples[1], (unsigned long long)s.skipped,
           flow_gbps * 1e9, (fat_pps * pkt_bytes + mouse_pps * 1500) * 8.0, (unsigned long long)s.forged);
    return 0;
}

static int run_erspan(const char *dst, uint32_t session, double pps, uint32_t inner_bytes, double seconds)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (inet_pton(AF_INET, dst, &sa.sin_addr) != 1) {
        fprintf(stderr, "telemetry_send: --erspan %s: expected an IPv4 address\n", dst);
        return 2;
    }
    int fd = socket(AF_INET, SOCK_RAW, IPPROTO_GRE);
    if (fd < 0) {
        perror("telemetry_send: raw GRE socket (needs root)");
        return 1;
    }
    static uint8_t pkt[9200];
    if (inner_bytes < 64 || inner_bytes + 16 > sizeof(pkt)) {
        fprintf(stderr, "telemetry_send: --inner-bytes %u: must be 64..9000\n", inner_bytes);
        close(fd);
        return 2;
    }
    uint64_t sent = 0;
    double t0 = tf_now_mono(), gap = 1.0 / pps;
    for (double t = t0; t < t0 + seconds; t += gap) {
        sleep_until(t);
        memset(pkt, 0, 16 + inner_bytes);
        pkt[0] = 0x10; pkt[2] = 0x88; pkt[3] = 0xbe;    /* GRE, S bit, ERSPAN */
        uint32_t seq = (uint32_t)sent;
        pkt[4] = (uint8_t)(seq >> 24); pkt[5] = (uint8_t)(seq >> 16); pkt[6] = (uint8_t)(seq >> 8); pkt[7] = (uint8_t)seq;
        pkt[8] = 0x10;                                   /* ERSPAN II, vlan 0 */
        pkt[10] = (uint8_t)((session >> 8) & 3); pkt[11] = (uint8_t)session;
        pkt[15] = 7;                                     /* port index */
        frame_header(pkt + 16, 1, inner_bytes, 0);
        if (sendto(fd, pkt, 16 + inner_bytes, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
            perror("telemetry_send: sendto");
            break;
        }
        sent++;
    }
    close(fd);
    double span = tf_now_mono() - t0;
    printf("{\"frames\": %llu, \"seconds\": %.3f, \"inner_bytes\": %u, \"inner_bps\": %.0f}\n",
           (unsigned long long)sent, span, inner_bytes, 8.0 * inner_bytes * pps);
    return 0;
}

/* ---- --write-pcaps ------------------------------------------------------ */

/* Ethernet + IPv4 carrier to 192.0.2.2 from 192.0.2.1 around payload. */
static size_t carrier(uint8_t *f, uint8_t proto, const uint8_t *payload, size_t plen, int udp)
{
    memset(f, 0, 42);
    f[12] = 0x08;
    uint8_t *ip = f + 14;
    size_t l4 = udp ? 8 : 0, tl = 20 + l4 + plen;
    ip[0] = 0x45; ip[2] = (uint8_t)(tl >> 8); ip[3] = (uint8_t)tl; ip[8] = 64; ip[9] = proto;
    ip[12] = 192; ip[14] = 2; ip[15] = 1; ip[16] = 192; ip[18] = 2; ip[19] = 2;
    if (udp) {
        uint8_t *u = ip + 20;
        u[0] = 0x9c; u[1] = 0x41; u[2] = 0x18; u[3] = 0xc7; /* -> 6343 */
        u[4] = (uint8_t)((8 + plen) >> 8); u[5] = (uint8_t)(8 + plen);
    }
    memcpy(f + 14 + 20 + l4, payload, plen);
    return 14 + tl;
}

static int write_pcaps(const char *dir, uint64_t count, uint32_t rate)
{
    char path[3][512];
    const char *names[3] = {"direct.pcap", "erspan.pcap", "sflow.pcap"};
    pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
    pcap_dumper_t *d[3] = {0};
    for (int i = 0; i < 3; i++) {
        snprintf(path[i], sizeof(path[i]), "%s/%s", dir, names[i]);
        if (!(d[i] = pcap_dump_open(dead, path[i]))) {
            fprintf(stderr, "telemetry_send: %s: %s\n", path[i], pcap_geterr(dead));
            return 1;
        }
    }
    static uint8_t inner[1600], f[1700];
    struct sflow_state s = {.t0 = 0};
    dgram_begin(&s);
    uint64_t dgrams = 0;
    for (uint64_t n = 0; n < count; n++) {
        /* 64 RoCE fat flows and 192 TCP mice, 1000-byte frames, captured whole
         * up to 128 bytes as the probe's default snap length would. */
        uint32_t flow = (uint32_t)(n % 256);
        int fat = flow < 64;
        uint32_t len = 1000;
        memset(inner, 0, len);
        frame_header(inner, fat, len, flow);
        struct pcap_pkthdr h = {.ts = {(time_t)(1700000000 + n / 1000000), (suseconds_t)(n % 1000000)},
                                .caplen = 128, .len = len};
        pcap_dump((u_char *)d[0], &h, inner);
        /* ERSPAN II: GRE with sequence + 8-byte header, then the frame. */
        uint8_t gre[16 + 128] = {0x10, 0, 0x88, 0xbe, (uint8_t)(n >> 24), (uint8_t)(n >> 16),
                                 (uint8_t)(n >> 8), (uint8_t)n, 0x10, 0, 0, 42, 0, 0, 0, 7};
        memcpy(gre + 16, inner, 128);
        size_t fl = carrier(f, 47, gre, sizeof(gre), 0);
        struct pcap_pkthdr he = {.ts = h.ts, .caplen = (bpf_u_int32)fl, .len = (bpf_u_int32)(fl - 128 + len)};
        /* the carrier's IP length covers the whole mirrored frame */
        uint16_t tl = (uint16_t)(20 + 16 + len);
        f[16] = (uint8_t)(tl >> 8); f[17] = (uint8_t)tl;
        pcap_dump((u_char *)d[1], &he, f);
        /* sFlow: eight samples per datagram */
        add_flow_sample(&s, fat, rate, 7, len, flow);
        if (s.nsamples == 8 || n + 1 == count) {
            patch32(&s.d, 8, 0xc0000201);
            patch32(&s.d, s.nsamples_at, s.nsamples);
            size_t sl = carrier(f, 17, s.d.b, s.d.n, 1);
            struct pcap_pkthdr hs = {.ts = h.ts, .caplen = (bpf_u_int32)sl, .len = (bpf_u_int32)sl};
            pcap_dump((u_char *)d[2], &hs, f);
            dgrams++;
            dgram_begin(&s);
        }
    }
    for (int i = 0; i < 3; i++)
        pcap_dump_close(d[i]);
    pcap_close(dead);
    printf("{\"frames\": %llu, \"sflow_datagrams\": %llu, \"samples_per_datagram\": 8}\n",
           (unsigned long long)count, (unsigned long long)dgrams);
    return 0;
}

int main(int argc, char **argv)
{
    const char *sflow = NULL, *erspan = NULL, *agent = "0.0.0.0", *pcaps = NULL, *forge_from = "10.200.0.0";
    uint64_t count = 1000000, forge = 0;
    uint64_t ifindex = 7, rate = 1000, pkt = 4096, session = 42, inner = 1000, seed = 1, skip = 0;
    double flow_gbps = 40, mouse_gbps = 0.5, seconds = 5, pps = 1000, link_gbps = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        int r = 0;
        if (!strcmp(k, "--sflow")) sflow = v;
        else if (!strcmp(k, "--erspan")) erspan = v;
        else if (!strcmp(k, "--agent")) agent = v;
        else if (!strcmp(k, "--write-pcaps")) pcaps = v;
        else if (!strcmp(k, "--count")) r = tf_parse_u64(v, 1, 100000000, &count);
        else if (!strcmp(k, "--ifindex")) r = tf_parse_u64(v, 1, 0x3fffffff, &ifindex);
        else if (!strcmp(k, "--rate")) r = tf_parse_u64(v, 1, 1u << 30, &rate);
        else if (!strcmp(k, "--pkt-bytes")) r = tf_parse_u64(v, 64, 9000, &pkt);
        else if (!strcmp(k, "--session")) r = tf_parse_u64(v, 0, 1023, &session);
        else if (!strcmp(k, "--inner-bytes")) r = tf_parse_u64(v, 64, 9000, &inner);
        else if (!strcmp(k, "--seed")) r = tf_parse_u64(v, 1, UINT64_MAX, &seed);
        else if (!strcmp(k, "--skip-every")) r = tf_parse_u64(v, 0, 1u << 30, &skip);
        else if (!strcmp(k, "--forge-agents")) r = tf_parse_u64(v, 0, 1u << 24, &forge);
        else if (!strcmp(k, "--forge-from")) forge_from = v;
        else if (!strcmp(k, "--flow-gbps")) r = tf_parse_double(v, 0, 1e5, &flow_gbps);
        else if (!strcmp(k, "--mouse-gbps")) r = tf_parse_double(v, 0, 1e5, &mouse_gbps);
        else if (!strcmp(k, "--link-gbps")) r = tf_parse_double(v, 0.001, 1e5, &link_gbps);
        else if (!strcmp(k, "--seconds")) r = tf_parse_double(v, 0.01, 3600, &seconds);
        else if (!strcmp(k, "--pps")) r = tf_parse_double(v, 1, 1e6, &pps);
        else r = -EINVAL;
        if (r < 0) {
            fprintf(stderr, "telemetry_send: %s '%s': bad option or value\n", k, v);
            return 2;
        }
    }
    rng ^= seed * 0x2545f4914f6cdd1dull;
    struct in_addr a;
    if (inet_pton(AF_INET, agent, &a) != 1) {
        fprintf(stderr, "telemetry_send: --agent %s: expected an IPv4 address\n", agent);
        return 2;
    }
    agent_addr = ntohl(a.s_addr);
    struct in_addr ff;
    if (inet_pton(AF_INET, forge_from, &ff) != 1) {
        fprintf(stderr, "telemetry_send: --forge-from %s: expected an IPv4 address\n", forge_from);
        return 2;
    }
    if (pcaps)
        return write_pcaps(pcaps, count, (uint32_t)rate);
    if (sflow)
        return run_sflow(sflow, (uint32_t)ifindex, (uint32_t)rate, flow_gbps, mouse_gbps,
                         (uint32_t)pkt, seconds, link_gbps, (uint32_t)skip, (uint32_t)forge,
                         ntohl(ff.s_addr));
    if (erspan)
        return run_erspan(erspan, (uint32_t)session, pps, (uint32_t)inner, seconds);
    fprintf(stderr, "usage: telemetry_send --sflow ADDR:PORT ... | --erspan ADDR ... (see the source)\n");
    return 2;
}
