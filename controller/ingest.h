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
 */
#ifndef TF_INGEST_H
#define TF_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "controller/state.h"

struct events;

#define INGEST_MAX_REPORTS 64
#define INGEST_MAX_LINKS 256
#define INGEST_NAME_LEN (REPORTSPEC_PROBE_MAX + 1)
#define INGEST_MAX_BPS 1e13     /* 10 Tb/s: above any port made */
#define INGEST_MAX_COUNT 1000000000000000000LL /* 1e18 */
#define INGEST_MAX_SAMPLING (1 << 30) /* 1-in-N; switches go to 2^24 or so */
#define INGEST_MAX_BODY (256u << 20)  /* limits.max_body's own upper bound */

struct ingest_link {
    char ifname[STATE_IF_LEN];
    double tx_bps, rx_bps;
    bool has_rx;
    uint64_t drops, ce_pkts;
    bool down;
};

struct ingest_flow {
    struct state_flow_key k;
    char ifname[STATE_IF_LEN];
    uint8_t dscp;
    bool fat;
    uint8_t source;              /* enum state_source; pcap when absent */
    uint32_t sampling;           /* 1-in-N; 1 (not sampled) when absent */
    double bps, ce_frac;
    uint64_t bytes, pkts, cnp;
};

struct ingest_report {
    char probe[INGEST_NAME_LEN];
    double ts, interval_s;
    size_t nlinks, nflows;
    struct ingest_link *links;
    struct ingest_flow *flows;
};

struct ingest_batch {
    size_t n;
    struct ingest_report r[INGEST_MAX_REPORTS];
};

struct ingest_result {
    size_t accepted, links, flows, fat, unmapped_flows, dropped_full;
    size_t nunmapped;
    char unmapped[STATE_UNMAPPED_MAX][STATE_IF_LEN];
    char probes[INGEST_MAX_REPORTS][INGEST_NAME_LEN];
};

/* Error kinds so that the HTTP layer can pick the status. */
enum ingest_err { INGEST_OK = 0, INGEST_BAD_JSON, INGEST_BAD_FIELD, INGEST_TOO_MANY, INGEST_UNKNOWN };

struct ingest_error {
    enum ingest_err kind;
    int line, column, position; /* BAD_JSON */
    char msg[256];
};

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
/* Resolves and applies (write lock taken inside). ev may be NULL. */
int  ingest_apply(struct state *s, const struct ingest_batch *b, double now, struct events *ev,
                  struct ingest_result *res, struct ingest_error *e);

#endif
