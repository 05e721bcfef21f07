/* libFuzzer target for the probe-report parser: arbitrary bodies go through
 * ingest_parse() (jansson in the thread's arena, then the schema) exactly as
 * POST /api/v1/reports hands them over, and whatever parses is applied to a
 * state over a small generated fabric (2 leaves x 4 spines, 4 hosts per
 * leaf), so that name and path resolution see fuzzed probes, interfaces and
 * addresses too. No daemon, no network. The state is kept across inputs
 * (bounded by max_flows) and aged out now and then, as the daemon would.
 * Seeds: tests/fuzz/seeds/ingest/ (copied into the corpus by run.sh). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/ingest.h"
#include "controller/state.h"
#include "policy/topo.h"

static struct state st;
static struct ingest_batch *batch;

static void init(void)
{
    struct topo *t;
    char err[256];
    if (topo_load("leafspine:leaves=2,spines=4,hosts=4,gbps=100", &t, err, sizeof(err)) < 0 ||
        state_init(&st, t, 4096, 3, 1000) < 0 || !(batch = malloc(sizeof(*batch)))) {
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
    int rc = ingest_parse((const char *)data, size, max_flows, batch, &e);
    if (rc == 0) {
        size_t n = batch->n, nflows = 0;
        for (size_t i = 0; i < n; i++)
            nflows += batch->r[i].nflows;
        if (n == 0 || n > INGEST_MAX_REPORTS || nflows > max_flows)
            abort(); /* the parser's own bounds */
        double now = 1000 + (double)(runs % 64);
        rc = ingest_apply(&st, batch, now, NULL, &res, &e);
        ingest_batch_free(batch);
        if (rc == 0 && (res.accepted != n || res.flows + res.dropped_full != nflows))
            abort(); /* an accepted batch accounts for every flow */
    } else if (e.msg[0] == '\0' || (e.kind == INGEST_BAD_JSON && e.line < 0)) {
        abort(); /* every refusal says why */
    }
    if (++runs % 64 == 0)
        state_tick(&st, 1000 + 64 * STATE_AGE_OUT * 3, NULL, NULL);
    return 0;
}
