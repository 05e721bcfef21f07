/*
 * ingest_bench: the cost of POST /api/v1/reports without HTTP or the
 * rebalance loop: ingest_parse + ingest_apply, as the daemon's workers run
 * them, on report_gen's reports, with CPU time per report for each step.
 *
 *   report_gen --topology T --probes hosts --flows 100 > reports.jsonl
 *   ingest_bench --topology T --reports reports.jsonl [--batch 10] [--rounds 2]
 *
 * Reports (one JSON object a line) are sent B a body ({"reports": [...]},
 * as report_gen --post builds them); round 1 finds every flow new, later
 * rounds are steady state (the same flows again). The state's clock moves
 * one second a round, so nothing goes stale. Deterministic enough for
 * callgrind: each round runs in its own function (bench_round_new,
 * bench_round_steady) so that --toggle-collect can pick one.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "controller/ingest.h"
#include "controller/state.h"
#include "policy/classes.h"
#include "policy/topo.h"

struct bodies {
    char **s;
    size_t *len, *nrep;
    size_t n;
};

struct totals {
    double parse_s, apply_s;
    size_t reports, flows;
};

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int add_body(struct bodies *b, const char *text, size_t len, size_t nrep)
{
    char **s = realloc(b->s, (b->n + 1) * sizeof(*s));
    if (s)
        b->s = s;
    size_t *l = realloc(b->len, (b->n + 1) * sizeof(*l));
    if (l)
        b->len = l;
    size_t *r = realloc(b->nrep, (b->n + 1) * sizeof(*r));
    if (r)
        b->nrep = r;
    char *copy = malloc(len + 1);
    if (!s || !l || !r || !copy) {
        free(copy);
        return -ENOMEM;
    }
    memcpy(copy, text, len + 1);
    b->s[b->n] = copy;
    b->len[b->n] = len;
    b->nrep[b->n++] = nrep;
    return 0;
}

/* {"reports":[L1,L2,...]} from B lines at a time, as report_gen's compact dump. */
static int read_bodies(FILE *in, size_t batch, struct bodies *b)
{
    char *line = NULL, *body = NULL;
    size_t cap = 0, blen = 0, bcap = 0, nrep = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, in)) > 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0)
            continue;
        if (blen + (size_t)n + 32 > bcap) {
            bcap = 2 * (blen + (size_t)n + 32);
            char *nb = realloc(body, bcap);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            body = nb;
        }
        if (nrep == 0)
            blen = (size_t)snprintf(body, bcap, "{\"reports\":[");
        else
            body[blen++] = ',';
        memcpy(body + blen, line, (size_t)n);
        blen += (size_t)n;
        body[blen] = '\0';
        if (++nrep == batch) {
            memcpy(body + blen, "]}", 3);
            rc = add_body(b, body, blen + 2, nrep);
            nrep = 0;
        }
    }
    if (rc == 0 && nrep > 0) {
        memcpy(body + blen, "]}", 3);
        rc = add_body(b, body, blen + 2, nrep);
    }
    free(line);
    free(body);
    return rc;
}

static int post_all(struct state *s, const struct bodies *b, double now, size_t max_flows, struct totals *tot)
{
    struct ingest_batch *batch = malloc(sizeof(*batch));
    if (!batch)
        return -ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < b->n && rc == 0; i++) {
        struct ingest_error e;
        struct ingest_result res;
        double t0 = cpu_now();
        rc = ingest_parse(b->s[i], b->len[i], max_flows, batch, &e);
        double t1 = cpu_now();
        if (rc == 0)
            rc = ingest_apply(s, batch, now, NULL, &res, &e);
        double t2 = cpu_now();
        if (rc < 0)
            fprintf(stderr, "ingest_bench: body %zu: %s\n", i, e.msg);
        else
            tot->flows += res.flows;
        ingest_batch_free(batch);
        tot->parse_s += t1 - t0;
        tot->apply_s += t2 - t1;
        tot->reports += b->nrep[i];
    }
    free(batch);
    return rc;
}

static void print_round(const char *what, size_t bytes, const struct totals *tot)
{
    double n = tot->reports ? (double)tot->reports : 1;
    printf("%-9s reports %zu flows %zu bytes %zu: parse %.3f ms + apply %.3f ms = %.3f ms CPU/report\n", what,
           tot->reports, tot->flows, bytes, tot->parse_s * 1e3 / n, tot->apply_s * 1e3 / n,
           (tot->parse_s + tot->apply_s) * 1e3 / n);
}

/* Separate functions for callgrind's --toggle-collect (each prints its own
 * label, so that the compiler cannot fold them into one). */
__attribute__((noinline)) static int bench_round_new(struct state *s, const struct bodies *b, double now,
                                                     size_t max_flows, size_t bytes)
{
    struct totals tot = {0};
    int rc = post_all(s, b, now, max_flows, &tot);
    print_round("new", bytes, &tot);
    return rc;
}

__attribute__((noinline)) static int bench_round_steady(struct state *s, const struct bodies *b, double now,
                                                        size_t max_flows, size_t bytes)
{
    struct totals tot = {0};
    int rc = post_all(s, b, now, max_flows, &tot);
    print_round("steady", bytes, &tot);
    return rc;
}

int main(int argc, char **argv)
{
    const char *topo_spec = NULL, *reports = NULL;
    uint64_t batch = 10, rounds = 2, max_flows = 1000000, per_report = 100000;
    static const struct option opts[] = {{"topology", 1, 0, 't'}, {"reports", 1, 0, 'r'},
                                         {"batch", 1, 0, 'b'},    {"rounds", 1, 0, 'n'},
                                         {"max-flows", 1, 0, 'm'}, {"max-flows-per-report", 1, 0, 'p'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 'r': reports = optarg; break;
        case 'b': if (tf_parse_u64(optarg, 1, INGEST_MAX_REPORTS, &batch) < 0) goto usage; break;
        case 'n': if (tf_parse_u64(optarg, 1, 1000, &rounds) < 0) goto usage; break;
        case 'm': if (tf_parse_u64(optarg, 16, STATE_MAX_FLOWS, &max_flows) < 0) goto usage; break;
        case 'p': if (tf_parse_u64(optarg, 1, 1000000, &per_report) < 0) goto usage; break;
        default: goto usage;
        }
    }
    if (!topo_spec || !reports)
        goto usage;
    char err[256];
    struct topo *t;
    if (topo_load(topo_spec, &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "ingest_bench: %s\n", err);
        return 2;
    }
    FILE *in = strcmp(reports, "-") == 0 ? stdin : fopen(reports, "r");
    struct bodies b = {0};
    if (!in || read_bodies(in, (size_t)batch, &b) < 0 || b.n == 0) {
        fprintf(stderr, "ingest_bench: %s: no reports read\n", reports);
        return 2;
    }
    if (in != stdin)
        fclose(in);
    /* As tierflowd sets it up without --policy: the built-in classes. */
    struct classes cls;
    classes_init(&cls);
    struct state s;
    double now = 1000;
    if (state_init(&s, t, (size_t)max_flows, 30, now) < 0) {
        fprintf(stderr, "ingest_bench: out of memory\n");
        return 2;
    }
    s.classes = &cls;
    size_t bytes = 0;
    for (size_t i = 0; i < b.n; i++)
        bytes += b.len[i];
    int rc = 0;
    for (uint64_t r = 0; r < rounds && rc == 0; r++) {
        now += 1;
        rc = r == 0 ? bench_round_new(&s, &b, now, (size_t)per_report, bytes)
                    : bench_round_steady(&s, &b, now, (size_t)per_report, bytes);
    }
    for (size_t i = 0; i < b.n; i++)
        free(b.s[i]);
    free(b.s);
    free(b.len);
    free(b.nrep);
    state_free(&s);
    classes_free(&cls);
    return rc < 0;
usage:
    fprintf(stderr, "usage: ingest_bench --topology FILE|GEN --reports FILE|- [--batch B] [--rounds R]\n"
                    "       [--max-flows N] [--max-flows-per-report N]\n");
    return 2;
}
