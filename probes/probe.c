/*
 * probe: see probe.h. In this file: the interval's close (reports), the
 * per-packet path, the sFlow listener, the two loops (file, live), then
 * setup and teardown.
 */
#include "probes/probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "probes/capture.h"
#include "probes/decode.h"
#include "probes/flowtab.h"
#include "probes/linkstats.h"
#include "probes/mirror.h"
#include "probes/mirrormap.h"
#include "probes/post.h"
#include "probes/report.h"
#include "probes/sflow.h"

/* One capture source as on_packet sees it (pcap's user pointer). */
struct probe_src {
    struct probe *pr;
    uint16_t ifidx;
    uint16_t ftidx;   /* ifidx, | FLOWTAB_IN for an arrivals handle (--inbound) */
    int dlt;
};

struct probe {
    struct probe_opts o;         /* as given, interval and out resolved */
    /* cap[0..ncap): what leaves each interface (or both directions);
     * with --inbound, cap[ncap..2 ncap): what arrives on cap[i - ncap]'s. */
    struct capture cap[2 * PROBE_MAX_IF];
    struct probe_src src[2 * PROBE_MAX_IF];
    /* The report's links: ifname[0..ncap) captured, then [ncap..nlinks)
     * the --counters ones, whose packets nobody captures. */
    const char *ifname[PROBE_MAX_IF];
    size_t ncap, nhandles, nlinks;
    bool offline;
    struct flowtab *ft;
    struct flowtab_batch batch; /* captured packets not yet in ft: flushed by probe_close */
    struct report_stats st;
    uint64_t ivl_pkts[PROBE_MAX_IF], ivl_bytes[PROBE_MAX_IF], ivl_ce[PROBE_MAX_IF];
    double link_bps[PROBE_MAX_IF];
    struct linkstats *ls;
    struct linkstats_counters prev[PROBE_MAX_IF];
    struct report_link links[PROBE_MAX_IF];
    struct report rep;
    struct report_snap snap;
    struct post *post[PROBE_MAX_CTL];   /* one sender per controller: a slow one delays no other */
    /* switch telemetry (sFlow, ERSPAN): reports per switch node */
    struct mirrormap *map;
    struct mirror *mirror;
    struct mirror_opts mo;
    int sflow_fd;
    /* -r: packet time */
    bool have_ts;
    double ivl_start, last_ts, next_close;
    /* live: wall clock */
    double ivl_start_mono;
};

/* Set from signal handlers (probe_ask_*), read by the loops. */
static volatile sig_atomic_t probe_stop, probe_reload;

void probe_ask_stop(void)
{
    probe_stop = 1;
}

void probe_ask_reload(void)
{
    probe_reload = 1;
}

/* ---- intervals and reports ------------------------------------------- */

static void fill_links(struct probe *pr, double interval_s)
{
    if (pr->ls && linkstats_refresh(pr->ls) < 0)
        log_warn("link counters not refreshed this interval");
    for (size_t i = 0; i < pr->nlinks; i++) {
        struct report_link *l = &pr->links[i];
        memset(l, 0, sizeof(*l));
        tf_strlcpy(l->name, pr->ifname[i], sizeof(l->name));
        l->ce_pkts = pr->ivl_ce[i];
        l->speed_bps = pr->link_bps[i];
        if (pr->ls) {
            struct linkstats_counters cur;
            linkstats_read(pr->ls, pr->ifname[i], &cur);
            linkstats_rate(&pr->prev[i], &cur, l);
            pr->prev[i] = cur;
            if (cur.valid) /* l->oper pointed into cur, which goes out of scope */
                l->oper = pr->prev[i].oper;
        } else if (interval_s > 0) {
            /* A file: what was captured is all we know of the link. */
            l->tx_bps = 8.0 * (double)pr->ivl_bytes[i] / interval_s;
            l->tx_pps = (double)pr->ivl_pkts[i] / interval_s;
        }
        /* The totals follow from the intervals: one counter pair per
         * packet, not two. */
        pr->st.pkts += pr->ivl_pkts[i];
        pr->st.bytes += pr->ivl_bytes[i];
        pr->ivl_pkts[i] = pr->ivl_bytes[i] = pr->ivl_ce[i] = 0;
    }
}

static void fill_stats(struct probe *pr)
{
    struct flowtab_stats fs;
    flowtab_get_stats(pr->ft, &fs);
    pr->st.evicted = fs.evicted;
    uint64_t drops = 0;
    for (size_t i = 0; i < pr->nhandles; i++) {
        uint64_t d;
        if (capture_drops(&pr->cap[i], &d) == 0)
            drops += d;
    }
    pr->st.pcap_drops = drops;
    pr->st.post_dropped = pr->st.post_errors = pr->st.post_rejected = 0;
    for (size_t i = 0; i < pr->o.nctl && pr->post[i]; i++) {
        uint64_t d, e, r;
        post_counters(pr->post[i], &d, &e, &r, NULL);
        pr->st.post_dropped += d;
        pr->st.post_errors += e;
        pr->st.post_rejected += r;
    }
}

/* One print path for every report: the output (stdout), and every
 * controller set. */
static int emit_report(struct probe *pr, const struct report *rep, bool post)
{
    int r = report_print(rep, pr->o.fmt, pr->o.out);
    if (r < 0)
        log_err("writing the report to %s: %s", pr->o.out == stdout ? "stdout" : "the output", strerror(-r));
    for (size_t i = 0; post && i < pr->o.nctl && pr->post[i]; i++) {
        char *s = report_dumps(rep);
        if (s)
            post_submit(pr->post[i], s);
    }
    return r;
}

/* Switch views: only those the mapping names belong to the controller. */
static void on_mirror_report(void *ctx, const struct report *rep, bool mapped)
{
    emit_report(ctx, rep, mapped);
}

/* Closes the interval [now - interval_s, now] and emits its reports: the
 * probe's own (when it captures) and one per switch seen through telemetry.
 * partial: the interval was cut short (a stop, a reload), and the report
 * says so: its rates cover a fraction of an interval (docs/telemetry.md). */
static int probe_close(struct probe *pr, double now, double interval_s, bool partial)
{
    flowtab_batch_flush(pr->ft, &pr->batch); /* every packet before now is in the table */
    if (pr->mirror && mirror_close(pr->mirror, now, interval_s, partial, on_mirror_report, pr) < 0)
        return -ENOMEM;
    if (pr->nlinks == 0)
        return 0;
    fill_links(pr, interval_s);
    fill_stats(pr);
    if (report_snap_take(&pr->snap, pr->ft) < 0)
        return -ENOMEM;
    flowtab_close_interval(pr->ft, now, interval_s, pr->link_bps, pr->ncap, pr->o.fat_share);
    if (report_pick_flows(&pr->rep, pr->ft, &pr->snap, (unsigned)pr->o.top, pr->ifname,
                          pr->ncap) < 0)
        return -ENOMEM;
    pr->rep.ts = now;
    pr->rep.interval_s = interval_s;
    pr->rep.partial = partial;
    pr->rep.links = pr->links;
    pr->rep.nlinks = pr->nlinks;
    pr->rep.stats = pr->st;
    if (pr->mirror)
        mirror_telemetry(pr->mirror, &pr->rep.stats.tel);
    return emit_report(pr, &pr->rep, true);
}

/* ---- per packet ------------------------------------------------------- */

/* -r: intervals on packet time. The first packet opens the first interval;
 * with --interval, a packet at or past its end closes it, and a gap of
 * several intervals yields one report, not one per empty interval.
 * next_close (-infinity before the first packet, +infinity without
 * --interval) makes that one compare a packet. */
static __attribute__((noinline)) void offline_edge(struct probe *pr, double ts)
{
    if (!pr->have_ts) {
        pr->have_ts = true;
        pr->ivl_start = pr->last_ts = ts;
    } else {
        double end = pr->next_close;
        probe_close(pr, end, pr->o.interval, false);
        pr->ivl_start = end + pr->o.interval * (double)(long long)((ts - end) / pr->o.interval);
    }
    pr->next_close = pr->o.interval > 0 ? pr->ivl_start + pr->o.interval : INFINITY;
}

static inline void offline_tick(struct probe *pr, double ts)
{
    if (__builtin_expect(ts >= pr->next_close, 0))
        offline_edge(pr, ts);
    if (ts > pr->last_ts)
        pr->last_ts = ts;
}

/* Telemetry carried by a captured packet: an ERSPAN mirror (IP protocol 47)
 * or an sFlow datagram (UDP to the sFlow port). True when the packet was
 * consumed: its contents are accounted on the switch it describes, and the
 * carrier itself is not a flow of this probe's. */
static bool telemetry_consume(struct probe *pr, const struct decode_pkt *pkt, const u_char *data,
                              uint32_t caplen, double ts)
{
    if (pkt->proto == 47)
        return mirror_erspan(pr->mirror, pkt, data, caplen, ts) != -ENOENT;
    if (pkt->proto != 17 || !pkt->l4 || pkt->dport != SFLOW_PORT)
        return false;
    /* With a listening socket the same datagrams arrive there: the captured
     * copies are only carriers, never counted twice. */
    if (pr->sflow_fd >= 0)
        return true;
    uint32_t end = pkt->l3_off + pkt->ip_len;
    if (end > caplen)
        end = caplen;
    if (end > pkt->payload_off)
        mirror_sflow(pr->mirror, data + pkt->payload_off, end - pkt->payload_off, ts);
    return true;
}

/* The full way for what the fast path declines; out of line, so that the
 * fast path's frame stays small. */
static __attribute__((noinline)) void on_packet_full(struct probe *pr, const struct probe_src *s,
                                                     const struct pcap_pkthdr *h,
                                                     const u_char *data, double ts)
{
    struct decode_pkt pkt;
    int r = decode_frame(s->dlt, data, h->caplen, h->len, &pkt);
    if (r < 0) {
        pr->st.unparsed++;
        pr->st.truncated += r == -EMSGSIZE;
        return;
    }
    pr->st.truncated += (pkt.flags & DECODE_F_TRUNC) != 0;
    pr->ivl_ce[s->ifidx] += pkt.ecn == 3 && s->ftidx == s->ifidx;
    if (pkt.roce)
        pr->st.roce_opcodes[pkt.bth_opcode]++;
    if (__builtin_expect(pr->mirror != NULL, 0) &&
        telemetry_consume(pr, &pkt, data, h->caplen, ts))
        return;
    /* Batched: the table's cache misses overlap with reading the next
     * packets (see flowtab.h). */
    flowtab_batch_add(pr->ft, &pr->batch, &pkt, s->ftidx, ts, 1, FLOW_SRC_PCAP);
}

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *data)
{
    struct probe_src *s = (struct probe_src *)(void *)user;
    struct probe *pr = s->pr;
    double ts = (double)h->ts.tv_sec + (double)h->ts.tv_usec * 1e-6;
    if (pr->offline)
        offline_tick(pr, ts);
    pr->ivl_pkts[s->ifidx]++;
    pr->ivl_bytes[s->ifidx] += h->len;

    /* Fast path: the common Ethernet/IPv4/TCP|UDP frame, decoded straight
     * into the batch (decode.h says which frames: none carries a flag).
     * With telemetry on, every frame takes the full way (sFlow carriers). */
    struct decode_fast fp;
    if (s->dlt == DLT_EN10MB && !pr->mirror && decode_fast_eth(data, h->caplen, h->len, &fp)) {
        pr->ivl_ce[s->ifidx] += fp.ecn == 3 && s->ftidx == s->ifidx; /* a link's CE: what leaves by it */
        if (fp.roce)
            pr->st.roce_opcodes[fp.bth_opcode]++;
        flowtab_batch_add_fast(pr->ft, &pr->batch, &fp, h->len, s->ftidx, ts);
        return;
    }
    on_packet_full(pr, s, h, data, ts);
}

/* ---- sFlow listener -------------------------------------------------- */

#define SFLOW_DRAIN_MAX 1024 /* datagrams per wake-up, so capture is never starved */

/* "[ADDR:]PORT", "[ADDR6]:PORT" or "PORT"; an IPv6 wildcard socket also takes
 * IPv4 agents. */
static int open_sflow(const char *spec)
{
    char host[INET6_ADDRSTRLEN + 2] = "";
    const char *port = spec, *colon = strrchr(spec, ':');
    if (colon) {
        size_t hl = (size_t)(colon - spec);
        if (hl >= sizeof(host))
            return -EINVAL;
        memcpy(host, spec, hl);
        host[hl] = '\0';
        port = colon + 1;
        if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
            memmove(host, host + 1, hl - 2);
            host[hl - 2] = '\0';
        }
    }
    uint64_t pn;
    if (tf_parse_u64(port, 1, 65535, &pn) < 0)
        return -EINVAL;
    struct sockaddr_in6 sa6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)pn),
                               .sin6_addr = IN6ADDR_ANY_INIT};
    struct sockaddr_in sa4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)pn)};
    bool v4 = host[0] && inet_pton(AF_INET, host, &sa4.sin_addr) == 1;
    if (host[0] && !v4 && inet_pton(AF_INET6, host, &sa6.sin6_addr) != 1)
        return -EINVAL;
    int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int zero = 0, rcvbuf = 4 << 20;
    if (!v4)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    /* Agents send in bursts; a large buffer rides them out between polls. */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    int r = v4 ? bind(fd, (struct sockaddr *)&sa4, sizeof(sa4))
               : bind(fd, (struct sockaddr *)&sa6, sizeof(sa6));
    if (r < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

static void drain_sflow(struct probe *pr)
{
    static uint8_t buf[65536];
    for (int i = 0; i < SFLOW_DRAIN_MAX; i++) {
        ssize_t n = recv(pr->sflow_fd, buf, sizeof(buf), 0);
        if (n < 0)
            return; /* EAGAIN: drained; anything else: try again next wake-up */
        mirror_sflow(pr->mirror, buf, (size_t)n, tf_now_real());
    }
}

/* ---- main loops ------------------------------------------------------- */

static int run_file(struct probe *pr)
{
    struct capture *c = &pr->cap[0];
    struct pcap_pkthdr h;
    const u_char *d;
    int r = 0;
    /* Record by record: with the block reader, reading and on_packet()
     * compile into this one loop. */
    while (!probe_stop && (r = capture_next(c, &h, &d)) > 0)
        on_packet((u_char *)&pr->src[0], &h, d);
    if (probe_stop)
        r = 0;
    if (probe_reload)
        log_msg(LOG_NOTICE, "SIGHUP while reading -r %s: nothing reloaded (the mapping is read once for a file)",
                c->src);
    double span = pr->last_ts - pr->ivl_start;
    /* A capture of one instant still gets a rate: over one second. */
    probe_close(pr, pr->have_ts ? pr->last_ts : 0, span > 0 ? span : 1.0, false);
    if (r < 0) {
        log_err("-r %s: read failed after %llu packets: %s", c->src,
                (unsigned long long)pr->st.pkts, capture_error(c));
        return -EIO;
    }
    return 0;
}

static void reload_map(struct probe *pr);

/* The look at mid-interval. A fat flow that starts just after a close is
 * otherwise first reported a whole interval later, and so is a flow that
 * ramps late (a TCP flow whose first packets a collision dropped waits out
 * a retransmission timeout): on the lab's fat tree at --interval 1 the
 * collisions of such flows waited for the second report, and the reaction
 * took 1.8-2.4 s (docs/lab.md). So at the middle of each interval, on the
 * wall-clock grid of the closes (every probe looks at the same instant, and
 * the round sees every switch's view of the same flows), a probe whose
 * table, or a mapped switch's seen through ERSPAN, holds a flow that was
 * not fat at the last close, captured whole, seen for PROBE_MID_MIN_AGE of
 * an interval and fat over that time, closes its interval there: a whole
 * report of half an interval (not partial: its rates are as good as those
 * of --interval / 2), and the rest of the interval closes on the grid as
 * usual. In a steady fabric no flow becomes fat and nothing changes. Only
 * from PROBE_MID_MIN_S intervals up: below, the close is as near. An
 * earlier version looked at every quarter and reported as partial: the
 * probes' reports came at different quarters, and tierflowd kept the known
 * flows' rates of a partial report; whole reports at every quarter were
 * slower still (rounds on a quarter second of a ramp; docs/lab.md, "The
 * look at mid-interval"). --mid-report off: none. */
#define PROBE_MID_MIN_S 0.5
#define PROBE_MID_MIN_AGE 0.125

static bool probe_mid(struct probe *pr, double now)
{
    double real = tf_now_real(), ivl_s = now - pr->ivl_start_mono, age = PROBE_MID_MIN_AGE * pr->o.interval;
    uint32_t n = 0;
    if (pr->nlinks) {
        flowtab_batch_flush(pr->ft, &pr->batch);
        n += flowtab_rising(pr->ft, real, ivl_s, age, pr->link_bps, pr->ncap, pr->o.fat_share);
    }
    if (pr->mirror)
        n += mirror_rising(pr->mirror, real, ivl_s, age);
    if (n)
        log_debug("mid-interval report: %u flow%s became fat", n, n == 1 ? "" : "s");
    return n > 0;
}

static int run_live(struct probe *pr)
{
    /* Intervals close on multiples of the interval of the wall clock, so
     * that every probe of the fabric reports the same interval at about the
     * same moment (a round then sees all of it, not one switch's view); the
     * first one is at least half an interval long. mid: when this interval
     * looks at its middle (INFINITY: not this one). */
    pr->ivl_start_mono = tf_now_mono();
    double next = pr->ivl_start_mono + tf_until_boundary(tf_now_real(), pr->o.interval, pr->o.interval / 2);
    bool mid_on = pr->o.mid && pr->o.interval >= PROBE_MID_MIN_S;
    double mid = INFINITY;
    int rc = 0;
    while (!probe_stop) {
        double now = tf_now_mono(), wake = mid < next ? mid : next;
        int wait = now >= wake ? 0 : (int)((wake - now) * 1000.0) + 1;
        capture_poll(pr->cap, pr->nhandles, pr->sflow_fd, wait);
        if (pr->sflow_fd >= 0)
            drain_sflow(pr);
        for (size_t i = 0; i < pr->nhandles && rc == 0; i++) {
            if (capture_dispatch(&pr->cap[i], -1, on_packet, (u_char *)&pr->src[i]) < 0) {
                log_err("-i %s: read failed: %s", pr->cap[i].src, capture_error(&pr->cap[i]));
                rc = -EIO;
            }
        }
        if (rc)
            break;
        if (probe_reload)
            reload_map(pr);
        now = tf_now_mono();
        bool close = now >= next;
        if (!close && now >= mid) {
            mid = INFINITY;
            close = probe_mid(pr, now);
        }
        if (close) {
            probe_close(pr, tf_now_real(), now - pr->ivl_start_mono, false);
            pr->ivl_start_mono = now;
            if (now >= next) {
                next += pr->o.interval;
                if (next <= now) /* fell behind: no burst of reports; back on the boundaries */
                    next = now + tf_until_boundary(tf_now_real(), pr->o.interval, pr->o.interval / 2);
                if (mid_on)
                    mid = next - pr->o.interval / 2;
            }
        }
    }
    double now = tf_now_mono();
    probe_close(pr, tf_now_real(), now - pr->ivl_start_mono, true);
    return rc;
}

/* ---- setup ------------------------------------------------------------ */

/* The rate a link's flows are judged against: --link-gbps, else what the
 * kernel says (not for a file: name NULL), else PROBE_DEFAULT_GBPS. */
static double link_rate(const struct probe *pr, const char *name)
{
    double sys = name ? linkstats_speed_bps(name) : 0;
    return pr->o.link_gbps > 0 ? pr->o.link_gbps * 1e9 : sys > 0 ? sys : PROBE_DEFAULT_GBPS * 1e9;
}

static int open_sources(struct probe *pr)
{
    /* Mirrored traffic (ERSPAN) arrives on the capture interface. With
     * --inbound, what arrives has a handle of its own, so that each packet
     * is known to be arriving (the flow's arrival view: holes, flowtab.h)
     * or leaving. */
    bool in = pr->o.inbound && !pr->offline;
    /* -r with --inbound: the file's records are arrivals (a capture made
     * with tcpdump -Q in, an ingress mirror's): holes only, no flow leaves. */
    uint16_t file_in = pr->offline && pr->o.inbound ? FLOWTAB_IN : 0;
    struct capture_opts co = {.snaplen = (int)pr->o.snaplen, .buffer_mb = (int)pr->o.buffer_mb,
                              .filter = pr->o.filter, .libpcap_reader = pr->o.libpcap_reader,
                              .dir = pr->o.telemetry && !in ? CAPTURE_BOTH : CAPTURE_OUT};
    size_t n = pr->offline ? 1 : pr->o.nifs;
    for (size_t i = 0; i < n; i++) {
        int r = pr->offline ? capture_open_file(&pr->cap[i], pr->o.file, &co)
                            : capture_open_live(&pr->cap[i], pr->o.ifs[i], &co);
        if (r < 0)
            return r;
        pr->ncap++;
        pr->nhandles++;
        pr->src[i] = (struct probe_src){pr, (uint16_t)i, (uint16_t)(i | file_in), pr->cap[i].dlt};
        pr->ifname[i] = pr->cap[i].name;
        pr->link_bps[i] = link_rate(pr, pr->offline ? NULL : pr->cap[i].name);
    }
    pr->nlinks = pr->ncap;
    for (size_t j = 0; j < pr->o.ncounters; j++) {
        const char *name = pr->o.counter_ifs[j];
        /* Checked here, not at the first interval: a name that is wrong
         * would otherwise report an empty link forever. */
        if (!if_nametoindex(name)) {
            log_err("--counters %s: no such interface: %s", name, strerror(errno));
            return -ENODEV;
        }
        pr->ifname[pr->nlinks] = name;
        pr->link_bps[pr->nlinks++] = link_rate(pr, name);
    }
    co.dir = CAPTURE_IN;
    for (size_t i = 0; in && i < n; i++) {
        struct capture *c = &pr->cap[n + i];
        int r = capture_open_live(c, pr->o.ifs[i], &co);
        if (r < 0)
            return r;
        pr->nhandles++;
        pr->src[n + i] = (struct probe_src){pr, (uint16_t)i, (uint16_t)(i | FLOWTAB_IN), c->dlt};
    }
    return 0;
}

static int start_post(struct probe *pr)
{
    char token[256];
    if (!pr->o.nctl)
        return 0;
    if (pr->o.token_file) {
        char why[512];
        int r = tf_secret_file_check("--token-file", pr->o.token_file, why, sizeof(why));
        if (r < 0) {
            log_err("%s", why);
            return r;
        }
        r = tf_read_token(pr->o.token_file, token, sizeof(token));
        if (r < 0) {
            log_err("--token-file %s: %s", pr->o.token_file,
                    r == -EINVAL ? "must hold 1..255 printable characters" : strerror(-r));
            return r;
        }
    }
    int r = 0;
    for (size_t i = 0; i < pr->o.nctl && r == 0; i++) {
        struct post_opts po = {.url = pr->o.controller[i], .token = pr->o.token_file ? token : NULL, .retries = 3};
        r = post_start(&pr->post[i], &po);
    }
    memset(token, 0, sizeof(token));
    return r;
}

/* A mirror for map (NULL: none) with the probe's options; errors logged
 * under what (the option or the reload). */
static int open_mirror(struct probe *pr, const struct mirrormap *map, const char *what, struct mirror **out)
{
    int r = mirror_new(map, &pr->mo, out);
    if (r == -E2BIG)
        log_err("%s: the mapping names more than %d switch nodes (one probe takes at most that many)", what,
                MIRROR_MAX_VIEWS);
    else if (r < 0)
        log_err("%s: cannot allocate the switch views: %s", what, strerror(-r));
    return r;
}

static int start_telemetry(struct probe *pr)
{
    char err[256];
    if (!pr->o.telemetry)
        return 0;
    if (pr->o.mirror_map && mirrormap_load(pr->o.mirror_map, &pr->map, err, sizeof(err)) < 0) {
        log_err("--mirror-map %s", err);
        return -EINVAL;
    }
    pr->mo = (struct mirror_opts){.max_flows = (uint32_t)pr->o.max_flows,
                                  .idle_timeout = pr->o.idle_timeout, .fat_share = pr->o.fat_share,
                                  .default_gbps = pr->o.link_gbps > 0 ? pr->o.link_gbps : PROBE_DEFAULT_GBPS,
                                  .top = (unsigned)pr->o.top, .allow = pr->o.allow, .nallow = pr->o.nallow,
                                  .max_unmapped = (uint32_t)pr->o.max_unmapped};
    int r = open_mirror(pr, pr->map, "--mirror-map", &pr->mirror);
    if (r < 0)
        return r;
    /* With nothing to say which switches are ours, what arrives is shown:
     * the first few sources, never more (see mirror.h). */
    if (mirror_admits_any(pr->mirror))
        log_msg(pr->offline ? LOG_NOTICE : LOG_WARNING,
                "telemetry: no --mirror-map and no --telemetry-allow: the first %llu sFlow agents or ERSPAN "
                "sources to send get a report (printed, never posted), any others are dropped; name your "
                "switches with --mirror-map or --telemetry-allow", (unsigned long long)pr->o.max_unmapped);
    if (pr->o.sflow_listen) {
        pr->sflow_fd = open_sflow(pr->o.sflow_listen);
        if (pr->sflow_fd < 0) {
            log_err("--sflow-listen %s: %s", pr->o.sflow_listen,
                    pr->sflow_fd == -EINVAL ? "expected [ADDR:]PORT with PORT in 1..65535"
                                            : strerror(-pr->sflow_fd));
            return pr->sflow_fd;
        }
    }
    return 0;
}

/* SIGHUP: --mirror-map read again. An unreadable or invalid file, or one
 * that cannot be set up, is logged and the mapping in use kept; an
 * unchanged one changes nothing; a changed one closes the interval so far
 * (its reports follow the old mapping) and replaces the views, carrying the
 * telemetry counters and sequence tracking over (flows' smoothed rates
 * start over: a fat flow is found again within an interval or two). */
static void reload_map(struct probe *pr)
{
    char err[256];
    struct mirrormap *map;
    struct mirror *m;
    probe_reload = 0;
    if (!pr->o.mirror_map) {
        log_msg(LOG_NOTICE, "SIGHUP: no --mirror-map to reload; carrying on");
        return;
    }
    if (mirrormap_load(pr->o.mirror_map, &map, err, sizeof(err)) < 0) {
        log_err("SIGHUP: --mirror-map %s; keeping the mapping in use", err);
        return;
    }
    if (mirrormap_equal(map, pr->map)) {
        log_msg(LOG_NOTICE, "SIGHUP: --mirror-map %s unchanged (%u entr%s); nothing to do", pr->o.mirror_map,
                mirrormap_nkeys(map), mirrormap_nkeys(map) == 1 ? "y" : "ies");
        mirrormap_free(map);
        return;
    }
    if (open_mirror(pr, map, "SIGHUP: --mirror-map", &m) < 0) {
        log_err("SIGHUP: keeping the mapping in use");
        mirrormap_free(map);
        return;
    }
    double now = tf_now_mono();
    probe_close(pr, tf_now_real(), now - pr->ivl_start_mono, true);
    pr->ivl_start_mono = now;
    log_msg(LOG_NOTICE, "SIGHUP: --mirror-map %s reloaded: %u entries for %u switch ports (were %u for %u); "
            "the interval so far was reported, flow state starts over", pr->o.mirror_map, mirrormap_nkeys(map),
            mirrormap_nports(map), mirrormap_nkeys(pr->map), mirrormap_nports(pr->map));
    mirror_carry(m, pr->mirror);
    mirror_free(pr->mirror);
    mirrormap_free(pr->map);
    pr->mirror = m;
    pr->map = map;
}

void probe_free(struct probe *pr)
{
    if (!pr)
        return;
    for (size_t i = 0; i < pr->o.nctl; i++)
        post_stop(pr->post[i], PROBE_POST_WAIT_S);
    if (pr->sflow_fd >= 0)
        close(pr->sflow_fd);
    mirror_free(pr->mirror);
    mirrormap_free(pr->map);
    for (size_t i = 0; i < pr->nhandles; i++)
        capture_close(&pr->cap[i]);
    linkstats_free(pr->ls);
    flowtab_free(pr->ft);
    report_free_flows(&pr->rep);
    report_snap_free(&pr->snap);
    free(pr);
}

/* Live: the kernel's link counters, read once now so that the first
 * interval has rates. */
static int start_linkstats(struct probe *pr)
{
    int r = linkstats_new(&pr->ls);
    if (r)
        return r;
    linkstats_refresh(pr->ls);
    for (size_t i = 0; i < pr->nlinks; i++)
        linkstats_read(pr->ls, pr->ifname[i], &pr->prev[i]);
    return 0;
}

void probe_opts_init(struct probe_opts *o)
{
    *o = (struct probe_opts){.interval = -1, .fat_share = 0.10, .idle_timeout = 30, .mid = true,
                             .max_flows = 65536, .top = REPORT_DEFAULT_TOP, .snaplen = 128,
                             .log_level = LOG_NOTICE, .max_unmapped = MIRROR_DEFAULT_UNMAPPED};
}

int probe_new(const struct probe_opts *o, struct probe **out)
{
    *out = NULL;
    struct probe *pr = calloc(1, sizeof(*pr));
    if (!pr)
        return -ENOMEM;
    pr->o = *o;
    if (!pr->o.out)
        pr->o.out = stdout;
    pr->offline = o->file != NULL;
    if (pr->o.interval < 0)
        pr->o.interval = pr->offline ? 0 : 1.0;
    pr->next_close = -INFINITY;
    pr->sflow_fd = -1;
    tf_strlcpy(pr->rep.probe, o->node, sizeof(pr->rep.probe));
    int r = -ENOMEM;
    pr->ft = flowtab_new((uint32_t)o->max_flows, o->idle_timeout);
    if (!pr->ft)
        log_err("--max-flows %llu: cannot allocate the flow table: %s", (unsigned long long)o->max_flows,
                strerror(errno));
    else if ((r = open_sources(pr)) == 0 && (r = start_telemetry(pr)) == 0 && (r = start_post(pr)) == 0 &&
             !pr->offline)
        r = start_linkstats(pr);
    if (r) {
        probe_free(pr);
        return r < 0 ? r : -EIO;
    }
    *out = pr;
    return 0;
}

int probe_run(struct probe *pr)
{
    return pr->offline ? run_file(pr) : run_live(pr);
}
