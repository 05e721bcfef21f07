/*
 * ingest_oracle: compares two ingest batches field by field (bytes of the
 * fixed-size records, so that a value parsed differently, even in its last
 * bit, shows). Shared by tests/unit/test_ingest_parsers.c and
 * tests/fuzz/fuzz_ingest.c, which check that controller/jsonscan's reading
 * of a report gives jansson's batch; header-only, so that each links it as is.
 */
#ifndef TF_INGEST_ORACLE_H
#define TF_INGEST_ORACLE_H

#include <stdio.h>
#include <string.h>

#include "controller/ingest.h"

/* NULL when a and b hold the same reports, else what differs (in why). */
static inline const char *ingest_batches_differ(const struct ingest_batch *a, const struct ingest_batch *b,
                                                char *why, size_t len)
{
    if (a->n != b->n) {
        snprintf(why, len, "%zu reports, the other %zu", a->n, b->n);
        return why;
    }
    if (a->lone != b->lone || a->refused.n != b->refused.n || a->refused.kept != b->refused.kept) {
        snprintf(why, len, "lone %d, %zu entries refused; the other lone %d, %zu", a->lone, a->refused.n, b->lone,
                 b->refused.n);
        return why;
    }
    for (size_t i = 0; i < a->refused.kept; i++)
        if (strcmp(a->refused.e[i].path, b->refused.e[i].path) || strcmp(a->refused.e[i].msg, b->refused.e[i].msg)) {
            snprintf(why, len, "refused entry %zu differs", i);
            return why;
        }
    for (size_t i = 0; i < a->n; i++) {
        const struct ingest_report *x = &a->r[i], *y = &b->r[i];
        const char *d = NULL;
        if (memcmp(x->probe, y->probe, sizeof(x->probe)) || memcmp(x->instance, y->instance, sizeof(x->instance)) ||
            x->schema != y->schema || memcmp(&x->ts, &y->ts, sizeof(x->ts)) ||
            memcmp(&x->interval_s, &y->interval_s, sizeof(x->interval_s)) || x->nlinks != y->nlinks ||
            x->nflows != y->nflows)
            d = "differs";
        else if (x->nlinks && memcmp(x->links, y->links, x->nlinks * sizeof(*x->links)))
            d = "links differ";
        else if (x->nflows && memcmp(x->flows, y->flows, x->nflows * sizeof(*x->flows)))
            d = "flows differ";
        if (d) {
            snprintf(why, len, "report %zu: %s", i, d);
            return why;
        }
    }
    return NULL;
}

#endif
