/* libFuzzer target for the probe-report parser: arbitrary bodies go through
 * ingest_parse() (controller/jsonscan's reading, and jansson for whatever it
 * does not take) exactly as POST /api/v1/reports hands them over. The two
 * parsers are also run apart on each body, differentially: what the scanner
 * takes, jansson must take into the very same batch (tests/lib/
 * ingest_oracle.h), and ingest_parse must answer as jansson does, message
 * included. Whatever parses is applied to a
 * state over a small generated fabric (2 leaves x 4 spines, 4 hosts per
 * leaf), so that name and path resolution see fuzzed probes, interfaces and
 * addresses too. No daemon, no network. The state is kept across inputs
 * (bounded by max_flows) and aged out now and then, as the daemon would.
 * Seeds: tests/fuzz/seeds/ingest/ (copied into the corpus by run.sh). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ingest.h"
#include "tests/lib/ingest_oracle.h"
#include "controller/state.h"
#include "policy/topo.h"

static struct state st;
static struct ingest_batch *batch, *scan, *jans;

static void init(void)
{
    struct topo *t;
    char err[256];
    if (topo_load("leafspine:leaves=2,spines=4,hosts=4,gbps=100", &t, err, sizeof(err)) < 0 ||
        state_init(&st, t, 4096, 3, 1000) < 0 || !(batch = malloc(sizeof(*batch))) ||
        !(scan = malloc(sizeof(*scan))) || !(jans = malloc(sizeof(*jans)))) {
        fprintf(stderr, "fuzz_ingest: setup failed: %s\n", err);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned long runs;
    if (!batch)
        init();
    struct ingest_error e;
    struct ingest_result res;
    /* max_flows as the daemon's default bound is far above what fits in
     * max_len; a small one exercises the 413 path as well. */
    size_t max_flows = size > 0 && data[0] == ' ' ? 4 : 100000;
    /* The scanner against jansson: the scanner takes a body or passes it
     * on (-EAGAIN, nothing left behind); what it takes, jansson takes alike. */
    struct ingest_error es, ej;
    char why[128];
    int rs = ingest_parse_scan((const char *)data, size, max_flows, scan, &es);
    int rj = ingest_parse_jansson((const char *)data, size, max_flows, jans, &ej);
    if ((rs != 0 && rs != -EAGAIN) || (rs == -EAGAIN && scan->n != 0) || (rs == 0 && rj != 0) ||
        (rs == 0 && ingest_batches_differ(scan, jans, why, sizeof(why)))) {
        fprintf(stderr, "fuzz_ingest: the scanner (%d) and jansson (%d: %s) disagree\n", rs, rj, ej.msg);
        abort();
    }
    if (rs == 0)
        ingest_batch_free(scan);
    int rc = ingest_parse((const char *)data, size, max_flows, batch, &e);
    if (rc != rj || e.kind != ej.kind || strcmp(e.msg, ej.msg) != 0) {
        fprintf(stderr, "fuzz_ingest: ingest_parse (%d: %s) is not jansson's answer (%d: %s)\n", rc, e.msg, rj,
                ej.msg);
        abort();
    }
    if (rj == 0)
        ingest_batch_free(jans);
    if (rc == 0) {
        size_t n = batch->n, nflows = 0;
        for (size_t i = 0; i < n; i++)
            nflows += batch->r[i].nflows;
        if (n == 0 || n > INGEST_MAX_REPORTS || nflows > max_flows)
            abort(); /* the parser's own bounds */
        double now = 1000 + (double)(runs % 64);
        rc = ingest_apply(&st, batch, now, NULL, &res, &e);
        ingest_batch_free(batch);
        if (rc == 0 && (res.accepted != n || res.flows + res.dropped_full + res.refused_flows != nflows))
            abort(); /* an accepted batch accounts for every flow */
    } else if (e.msg[0] == '\0' || (e.kind == INGEST_BAD_JSON && e.line < 0)) {
        abort(); /* every refusal says why */
    }
    if (++runs % 64 == 0)
        state_tick(&st, 1000 + 64 * STATE_AGE_OUT * 3, NULL, NULL);
    return 0;
}
