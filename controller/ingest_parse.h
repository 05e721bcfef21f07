/*
 * ingest_parse: the untrusted side of POST /api/v1/reports. A body of JSON
 * text in, a bounded, fully validated batch out (ingest_schema.h), or an
 * error naming the field ("flows[3].bps: negative -1"). No lock, no state:
 * ingest.c applies what comes out.
 *
 * Two readers behind one schema (ingest_schema's member tables). A probe's
 * report is read by jsonscan in place, without a tree: jansson spent about
 * 200 instructions a byte of a report building one. jsonscan takes a strict
 * subset of JSON and hands anything else, and every text it finds wrong in
 * any way, to the other reader: jansson (duplicate keys refused, nesting
 * bounded by JSON_PARSER_MAX_DEPTH, the tree in this thread's jsonarena),
 * which decides and writes the error with its place. So a text is accepted
 * only as jansson's parse would accept it, with the same batch, and every
 * error is jansson's (tests hold both to that). The body is bounded by
 * INGEST_MAX_BODY before either runs, a report's flows by max_flows, its
 * links by INGEST_MAX_LINKS and a batch by INGEST_MAX_REPORTS (413).
 *
 * Errors: -EINVAL (e->kind BAD_JSON or BAD_FIELD), -E2BIG (TOO_MANY); on
 * an error b holds nothing to free.
 */
#ifndef TF_INGEST_PARSE_H
#define TF_INGEST_PARSE_H

#include <stddef.h>

#include "controller/ingest_schema.h"

#define INGEST_MAX_BODY (256u << 20)  /* limits.max_body's own upper bound */

/* max_flows bounds the flows of one report (and of the whole batch). */
int ingest_parse(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                 struct ingest_error *e);
/* The two readers ingest_parse runs, for tests. The scanner returns 0 with b
 * filled, or -EAGAIN with b empty and e clear when jansson must decide. */
int ingest_parse_scan(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                      struct ingest_error *e);
int ingest_parse_jansson(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                         struct ingest_error *e);

#endif
