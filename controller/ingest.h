/*
 * ingest: probe reports (DESIGN 2.3) in, fabric state out.
 *
 * Two steps so that validation never holds the state lock and is testable
 * alone: ingest_parse() turns untrusted JSON into a bounded, fully validated
 * batch (or an error naming the field, e.g. "flows[3].bps: negative -1");
 * ingest_apply() resolves names against the current topology and updates
 * the state under its write lock.
 *
 * Parsing has two parsers behind one schema (the member tables in
 * ingest.c). A probe's report is read by jsonscan in place, without a tree:
 * jansson spent about 200 instructions a byte of a report building one.
 * jsonscan takes a strict subset of JSON and hands anything else, and every
 * text it finds wrong in any way, to the other parser: jansson (duplicate
 * keys refused, nesting bounded by JSON_PARSER_MAX_DEPTH, the tree in this
 * thread's jsonarena), which decides and writes the error with its place.
 * So a text is accepted only as jansson's parse would accept it, with the
 * same batch, and every error is jansson's (tests hold both to that). The
 * body is bounded by INGEST_MAX_BODY before either runs.
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

#include "common/reportspec.h"
#include "controller/state.h"

struct config;
struct events;

#define INGEST_MAX_REPORTS 64
#define INGEST_MAX_LINKS 256
#define INGEST_NAME_LEN (REPORTSPEC_PROBE_MAX + 1)
#define INGEST_MAX_BPS REPORTSPEC_MAX_BPS
#define INGEST_MAX_COUNT REPORTSPEC_MAX_COUNT
#define INGEST_MAX_SAMPLING REPORTSPEC_MAX_SAMPLING
#define INGEST_MAX_BODY (256u << 20)  /* limits.max_body's own upper bound */
#define INGEST_INSTANCE_LEN (REPORTSPEC_INSTANCE_MAX + 1)
#define INGEST_REFUSED_KEEP 16  /* refused entries named in a reply; the rest are counted */
#define INGEST_PATH_LEN 64
#define INGEST_WHY_LEN 512
#define INGEST_LOG_EVERY_S 60.0 /* a repeated refusal is logged this often */

/* Entries keep their place in the body's list (idx): refused ones are
 * left out, and a message names an entry as the body does. */
struct ingest_link {
    uint32_t idx;
    char ifname[STATE_IF_LEN];
    double tx_bps, rx_bps;
    bool has_rx;
    uint64_t drops, ce_pkts;
    uint64_t errors, carrier_changes; /* in the interval; 0 when absent */
    uint64_t qdisc_drops;             /* the root qdisc's, in the interval (congestion) */
    bool down;
};

struct ingest_flow {
    uint32_t idx;
    struct state_flow_key k;
    char ifname[STATE_IF_LEN];
    uint8_t dscp;
    bool fat;
    uint8_t source;              /* enum state_source; pcap when absent */
    uint32_t sampling;           /* 1-in-N; 1 (not sampled) when absent */
    double bps, ce_frac;
    uint64_t bytes, pkts, cnp;
    uint64_t retx_pkts, psn_oos, naks; /* in the interval; 0 when absent (docs/telemetry.md) */
};

struct ingest_report {
    char probe[INGEST_NAME_LEN];
    char instance[INGEST_INSTANCE_LEN]; /* "" when the report names none */
    uint64_t schema;                    /* REPORTSPEC_SCHEMA when absent */
    double ts, interval_s;              /* ts 0: absent */
    size_t nlinks, nflows;
    struct ingest_link *links;
    struct ingest_flow *flows;
};

/* Entries refused: every one counted, the first INGEST_REFUSED_KEEP named
 * by the JSON path of the member at fault ("reports[1].flows[3].bps") and
 * the whole message ("reports[1].flows[3].bps: 1.8e+19 exceeds ..."). */
struct ingest_refusals {
    size_t n, kept;
    struct {
        char path[INGEST_PATH_LEN];
        char msg[INGEST_WHY_LEN];
    } e[INGEST_REFUSED_KEEP];
};

struct ingest_batch {
    size_t n;
    struct ingest_report r[INGEST_MAX_REPORTS];
    bool lone;                   /* the body was one report, not {"reports": [...]} */
    struct ingest_refusals refused; /* entries dropped while parsing */
};

/* Why a request or a report is refused: one row each in ingest.c's table
 * (the API's error code, the HTTP status, the metric's reason label). */
enum ingest_err {
    INGEST_OK = 0,
    INGEST_BAD_JSON,             /* 400 bad_json */
    INGEST_BAD_FIELD,            /* 400 bad_request: the body's structure, a report's own member */
    INGEST_TOO_MANY,             /* 413 payload_too_large */
    INGEST_UNKNOWN,              /* 400 bad_request: probe not a topology node */
    INGEST_STALE,                /* 422 stale_report: older than the staleness window */
    INGEST_FUTURE,               /* 422 future_report: ahead by more than ingest.clock_skew */
    INGEST_OUT_OF_ORDER,         /* 409 out_of_order: older than the last applied under its name */
    INGEST_CONFLICT,             /* 409 probe_conflict: the name is held by another sender */
    INGEST_ERR_N
};
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

struct ingest_error {
    enum ingest_err kind;
    int line, column, position; /* BAD_JSON */
    char probe[INGEST_NAME_LEN]; /* the report's probe when it was read before the error, else "" */
    char path[INGEST_PATH_LEN];  /* the JSON path of the member at fault, when a member is */
    char msg[256];
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
/* max_flows bounds the flows of one report (and of the whole batch). */
int  ingest_parse(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                  struct ingest_error *e);
/* The two parsers ingest_parse runs, for tests. The scanner returns 0 with b
 * filled, or -EAGAIN with b empty and e clear when jansson must decide. */
int  ingest_parse_scan(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                       struct ingest_error *e);
int  ingest_parse_jansson(const char *body, size_t len, size_t max_flows, struct ingest_batch *b,
                          struct ingest_error *e);
void ingest_batch_free(struct ingest_batch *b);
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
