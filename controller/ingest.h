/*
 * ingest: probe reports (DESIGN 2.3) in, fabric state out.
 *
 * Two steps so that validation never holds the state lock and is testable
 * alone: ingest_parse() (ingest_parse.h) turns untrusted JSON into a
 * bounded, fully validated batch (struct ingest_batch, ingest_schema.h) or
 * an error naming the field, e.g. "flows[3].bps: negative -1"; ingest_apply()
 * (here) resolves names against the current topology and updates the state
 * under its write lock. This header includes both, so that a caller of the
 * whole way needs only it.
 *
 * Mapping: a report's `probe` is a topology node; each `if` names the link
 * direction leaving that node (ingest_dir_of_if). An interface that is not one
 * of the node's links is not an error: it is counted as unmapped (result and
 * probe status), and flows leaving by it keep no path. An unknown probe node
 * is an error (-ENOENT). A link with oper "down" takes both its directions
 * out of service until it is reported up again.
 *
 * What is refused, and how much (docs/telemetry.md, "What the controller
 * refuses"): an error in the body's structure (not JSON, a report's own
 * member wrong, `schema` not REPORTSPEC_SCHEMA, `probe` missing, a list not
 * an array, too many entries) refuses the whole request. An entry (one
 * flow, one link) with a member out of its bounds (common/reportspec.h),
 * or a rate or per-interval counter its link could not carry, is dropped
 * alone: the rest of its report applies, and the result names the entry
 * by its JSON path and says why. A whole report can be refused for when
 * it was made or who sent it (ingest_apply_from): older than the staleness
 * window, older than the last report applied under its name, ahead of the
 * controller's clock by more than ingest.clock_skew; or sent under a name
 * another sender holds (the first keeps it until it goes stale; one
 * probe_conflict event per challenger). The other reports of a batch still
 * apply. ingest_post() is all of POST /api/v1/reports but HTTP: it picks
 * the status from the table of refusals (enum ingest_err), writes the
 * reply, counts, and logs each refusal with the probe's name, the sender
 * and the reason, at most once a minute per (sender, probe, reason).
 */
#ifndef TF_INGEST_H
#define TF_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "controller/ingest_parse.h"
#include "controller/state.h"

struct config;
struct events;

#define INGEST_LOG_EVERY_S 60.0 /* a repeated refusal is logged this often */

/* The table of refusals (enum ingest_err, ingest_schema.h), catalogued once. */
const char *ingest_err_code(enum ingest_err k);   /* the API's error code */
const char *ingest_err_reason(enum ingest_err k); /* the metric label */
unsigned ingest_err_status(enum ingest_err k);

struct ingest_result {
    size_t accepted, links, flows, fat, unmapped_flows, dropped_full;
    size_t nunmapped;
    char unmapped[STATE_UNMAPPED_MAX][STATE_IF_LEN];
    char probes[INGEST_MAX_REPORTS][INGEST_NAME_LEN]; /* of the reports applied */
    size_t no_ts;                /* reports applied without a timestamp (taken as of now) */
    size_t refused_flows;        /* flows refused against the topology (also in refused) */
    struct ingest_refusals refused; /* entries: the batch's, then those refused against the topology */
    size_t nrefused;             /* whole reports refused (ingest_apply_from) */
    struct {
        size_t index;            /* in the batch */
        enum ingest_err kind;
        char probe[INGEST_NAME_LEN];
        char msg[INGEST_WHY_LEN];
    } refused_reports[INGEST_MAX_REPORTS];
};

/* What ingest_apply_from checks besides the reports themselves. */
struct ingest_opts {
    size_t max_flows;            /* limits.max_flows_per_report */
    bool check_ts;               /* ingest.timestamps "check" */
    double clock_skew;           /* ingest.clock_skew, s */
};
void ingest_opts_from_config(const struct config *c, struct ingest_opts *o);

/* The direction leaving node by ifname: the topology's interface name, or,
 * where a link end has none (generated topologies), the far end's node name. */
int  ingest_dir_of_if(const struct topo *t, uint32_t node, const char *ifname, uint32_t *dir);
/* Resolves and applies (write lock taken inside). ev may be NULL. Entries
 * a topology bound refuses are dropped (res->refused); no report is
 * refused for its time or sender. */
int  ingest_apply(struct state *s, const struct ingest_batch *b, double now, struct events *ev,
                  struct ingest_result *res, struct ingest_error *e);
/* The same, and each report is checked for its time (o->check_ts; o NULL:
 * not) and its sender (from: the client's address; NULL: not checked):
 * a report refused for either is left out (res->refused_reports) and the
 * others apply. 0 even when every report was refused. */
int  ingest_apply_from(struct state *s, const struct ingest_batch *b, const struct ingest_opts *o,
                       const char *from, double now, struct events *ev, struct ingest_result *res,
                       struct ingest_error *e);
/* POST /api/v1/reports but HTTP: parse, apply from `from` (the client's
 * address, NULL unknown), count and log refusals; the HTTP status, and in
 * *reply the body (an error object when nothing was applied). */
unsigned ingest_post(struct state *s, struct events *ev, const struct ingest_opts *o, const char *from,
                     const char *body, size_t len, double now, json_t **reply);
/* Prometheus lines of ingest's counters (docs/api.md); the caller holds
 * the state's read lock. */
void ingest_metrics(const struct state *s, FILE *f);

#endif
