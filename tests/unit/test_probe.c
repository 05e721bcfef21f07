/*
 * Unit tests for probes/probe.c, driven in-process (probe_new, probe_run)
 * on a real capture of the shared set (../shared/pcaps, INDEX.md): a file
 * read with --interval reports on packet time, held to an oracle computed
 * from libpcap's records (pcap_next_ex) in integer microseconds, not to the
 * probe's own arithmetic. The grid starts at the first packet; each interval
 * that holds packets gives one report, closed at its end (the last one at
 * the last packet), carrying the wire bytes and packets libpcap counts in
 * it; an empty interval gives none. A probe that cannot open its file
 * releases all it took (this suite runs under ASan's leak check).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "probes/probe.h"

/* zeek_smb_smb2.pcap: 1178 packets over 0.433 s, in 9 of the 22 intervals
 * of 20 ms (INDEX.md, tier 4: one elephant flow with pauses). */
#define CAPTURE "zeek_smb_smb2.pcap"
#define IVL_US 20000
#define MAX_CELLS 64

struct cell {
    long long k;                 /* the interval's index on the grid */
    double bytes, pkts;
};

struct oracle {
    struct cell c[MAX_CELLS];
    size_t n;
    long long t0_us, last_us;
    uint64_t pkts, bytes;
};

/* The capture and its oracle, read once for the group. */
static char path[512];
static struct oracle want;

static void capture_path(const char *name, char *buf, size_t len)
{
    const char *s = getenv("TF_SHARED");
    snprintf(buf, len, "%s/pcaps/%s", s ? s : "../shared", name);
}

/* libpcap's records bucketed on the grid of IVL_US from the first one. */
static void oracle_read(const char *file, struct oracle *o)
{
    char eb[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline(file, eb);
    if (!p)
        fail_msg("%s: %s", file, eb);
    memset(o, 0, sizeof(*o));
    struct pcap_pkthdr *h;
    const u_char *d;
    while (pcap_next_ex(p, &h, &d) == 1) {
        long long us = (long long)h->ts.tv_sec * 1000000 + h->ts.tv_usec;
        if (o->pkts == 0)
            o->t0_us = us;
        assert_true(us >= o->last_us); /* the grid below assumes time order */
        long long rel = us - o->t0_us, k = rel / IVL_US, off = rel % IVL_US;
        /* The probe keeps time in double seconds (about 0.2 us apart at
         * this epoch): a packet this near a boundary could go either way,
         * and the capture would not do for this test. */
        if (o->pkts && (off < 5 || IVL_US - off < 5))
            fail_msg("%s: a packet %lld us from an interval boundary", file, off < 5 ? off : IVL_US - off);
        if (o->n == 0 || o->c[o->n - 1].k != k) {
            assert_true(o->n < MAX_CELLS);
            o->c[o->n++] = (struct cell){k, 0, 0};
        }
        o->c[o->n - 1].bytes += h->len;
        o->c[o->n - 1].pkts++;
        o->pkts++;
        o->bytes += h->len;
        o->last_us = us;
    }
    pcap_close(p);
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("report member %s: not a number", key);
    return json_number_value(v);
}

static void assert_near(double got, double expect, double tol, const char *what, size_t i)
{
    if (fabs(got - expect) > tol)
        fail_msg("report %zu: %s %.9f, want %.9f", i, what, got, expect);
}

/* The probe on the capture: every report it printed, parsed, in order. */
static size_t run_probe(double interval, json_t **reps, size_t max)
{
    FILE *out = tmpfile();
    assert_non_null(out);
    struct probe_opts o;
    probe_opts_init(&o);
    tf_strlcpy(o.node, "leaf1", sizeof(o.node));
    o.file = path;
    o.interval = interval;
    o.out = out;
    struct probe *pr;
    assert_int_equal(probe_new(&o, &pr), 0);
    assert_int_equal(probe_run(pr), 0);
    probe_free(pr);
    rewind(out);
    char *line = NULL;
    size_t cap = 0, n = 0;
    while (getline(&line, &cap, out) > 0) {
        json_error_t je;
        assert_true(n < max);
        reps[n] = json_loads(line, 0, &je);
        if (!reps[n])
            fail_msg("report %zu is not JSON: %s", n, je.text);
        n++;
    }
    free(line);
    fclose(out);
    return n;
}

static int read_capture(void **state)
{
    (void)state;
    capture_path(CAPTURE, path, sizeof(path));
    oracle_read(path, &want);
    return 0;
}

/* The cumulative stats of a file's last report: all libpcap read. */
static void assert_totals(const json_t *rep)
{
    const json_t *st = json_object_get(rep, "stats");
    assert_int_equal((uint64_t)num(st, "pkts"), want.pkts);
    assert_int_equal((uint64_t)num(st, "bytes"), want.bytes);
}

static void test_file_intervals_on_packet_time(void **state)
{
    (void)state;
    /* What makes the capture worth it: intervals with no packet between
     * ones with packets. */
    assert_true(want.n > 2 && want.c[want.n - 1].k + 1 > (long long)want.n);

    json_t *reps[MAX_CELLS + 8];
    size_t n = run_probe(IVL_US / 1e6, reps, MAX_CELLS + 8);
    assert_int_equal(n, want.n);
    double t0 = (double)want.t0_us / 1e6;
    for (size_t i = 0; i < n; i++) {
        const struct cell *c = &want.c[i];
        bool last = i == n - 1;
        double start = t0 + (double)(c->k * IVL_US) / 1e6;
        double end = last ? (double)want.last_us / 1e6 : t0 + (double)((c->k + 1) * IVL_US) / 1e6;
        /* ts is printed with 15 digits: 10 us at this epoch. */
        assert_near(num(reps[i], "ts"), end, 2e-5, "ts", i);
        double ivl = num(reps[i], "interval_s");
        assert_near(ivl, end - start, 2e-5, "interval_s", i);
        const json_t *links = json_object_get(reps[i], "links");
        assert_int_equal(json_array_size(links), 1);
        const json_t *l = json_array_get(links, 0);
        /* A file's link rates are what was captured in the interval. */
        assert_near(num(l, "tx_bps") * ivl / 8, c->bytes, 1e-6 * c->bytes, "bytes", i);
        assert_near(num(l, "tx_pps") * ivl, c->pkts, 1e-6 * c->pkts, "packets", i);
        if (last)
            assert_totals(reps[i]);
        json_decref(reps[i]);
    }
}

/* Without --interval a file is one report, of all of it. */
static void test_file_one_report(void **state)
{
    (void)state;
    json_t *reps[4];
    size_t n = run_probe(-1, reps, 4); /* the default interval, -1: a file's 0 */
    assert_int_equal(n, 1);
    assert_near(num(reps[0], "interval_s"), (double)(want.last_us - want.t0_us) / 1e6, 2e-5, "interval_s", 0);
    assert_totals(reps[0]);
    json_decref(reps[0]);
}

static void test_missing_file_releases_all(void **state)
{
    (void)state;
    struct probe_opts o;
    probe_opts_init(&o);
    tf_strlcpy(o.node, "leaf1", sizeof(o.node));
    o.file = "/nonexistent/tierflow-test.pcap";
    struct probe *pr = (struct probe *)&o; /* must be cleared on failure */
    assert_true(probe_new(&o, &pr) < 0);
    assert_null(pr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_intervals_on_packet_time),
        cmocka_unit_test(test_file_one_report),
        cmocka_unit_test(test_missing_file_releases_all),
    };
    return cmocka_run_group_tests(tests, read_capture, NULL);
}
