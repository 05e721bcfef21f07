/*
 * ingest_schema: what a probe report (DESIGN 2.3) is once read, and what
 * each of its members may hold.
 *
 * The parsed-report types below (struct ingest_batch and what it holds) are
 * the contract between the untrusted side, ingest_parse (JSON text in), and
 * the side that applies, ingest (a batch into the fabric state): every value
 * in a batch has passed its member's check here and every entry the checks
 * across its members, so that ingest.c judges a batch only against the
 * topology and the sender.
 *
 * The checks are one table per object (a report's own members, a link, a
 * flow) with the bounds of common/reportspec.h, read by both of
 * ingest_parse's readers, so that a value is judged alike whichever reader
 * found it. The bounds that depend on the link an entry is on (its
 * capacity) are here too; ingest.c applies them once it has resolved the
 * link. Messages name the member by its JSON path ("flows[3].bps:
 * negative -1"); the path is put together only when there is an error
 * (struct ingest_ctx).
 *
 * Errors: ingest_error_set() and ingest_cfail() fill the error and return
 * -E2BIG for INGEST_TOO_MANY, -ENOENT for INGEST_UNKNOWN, else -EINVAL.
 * The families ingest_schema, ingest_parse and ingest share the prefix
 * ingest_ (one family, as BIRD's rt-*.c behind nest/route.h).
 */
#ifndef TF_INGEST_SCHEMA_H
#define TF_INGEST_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/reportspec.h"
#include "controller/jsonscan.h"
#include "controller/state.h"

#define INGEST_MAX_REPORTS 64
#define INGEST_MAX_LINKS 256
#define INGEST_NAME_LEN (REPORTSPEC_PROBE_MAX + 1)
#define INGEST_MAX_BPS REPORTSPEC_MAX_BPS
#define INGEST_MAX_COUNT REPORTSPEC_MAX_COUNT
#define INGEST_MAX_SAMPLING REPORTSPEC_MAX_SAMPLING
#define INGEST_INSTANCE_LEN (REPORTSPEC_INSTANCE_MAX + 1)
#define INGEST_REFUSED_KEEP 16  /* refused entries named in a reply; the rest are counted */
#define INGEST_PATH_LEN 64
#define INGEST_WHY_LEN 512

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
    bool has_queue;                   /* qdisc_drops was given: the port's queue is seen */
    uint64_t qdisc_backlog;           /* bytes in the root qdisc at the report (0 when absent) */
    bool has_backlog;                 /* qdisc_backlog was given */
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
    uint64_t tail_retx;                /* of retx_pkts, resends of the highest segment (REPORTSPEC_TAIL_RETX) */
    /* Its arrival at the reporting node (REPORTSPEC_HOLES, _IN_IF): both
     * or neither; in_ifname "" when absent. */
    uint64_t holes;
    char in_ifname[STATE_IF_LEN];
};

struct ingest_report {
    char probe[INGEST_NAME_LEN];
    char instance[INGEST_INSTANCE_LEN]; /* "" when the report names none */
    uint64_t schema;                    /* REPORTSPEC_SCHEMA when absent */
    double ts, interval_s;              /* ts 0: absent */
    bool partial;                       /* the probe cut the interval short (a stop, a reload) */
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

struct ingest_error {
    enum ingest_err kind;
    int line, column, position; /* BAD_JSON */
    char probe[INGEST_NAME_LEN]; /* the report's probe when it was read before the error, else "" */
    char path[INGEST_PATH_LEN];  /* the JSON path of the member at fault, when a member is */
    char msg[256];
};

/* Releases the entries of every report of b (b itself is the caller's). */
void ingest_batch_free(struct ingest_batch *b);

/* Sets e's kind and message; the errno-style code for kind. */
int ingest_error_set(struct ingest_error *e, enum ingest_err kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Keeps e's message as an entry refused (counted always, named while there
 * is room) and clears e, so that the caller goes on with the next entry. */
void ingest_refusals_add(struct ingest_refusals *r, struct ingest_error *e);

/* The bounds an entry's link sets (reportspec), once the topology says
 * which direction dir the entry is on: a rate above reportspec_rate_bound
 * of what the direction carries, a per-interval packet counter (tx+rx
 * drops and errors, captured CE packets: both directions) above
 * reportspec_pkts_bound of both directions over the report's interval; and
 * carrier changes above reportspec_carrier_bound of the interval (a
 * property of the interface, not of the link's speed). Each returns the
 * member at fault and writes the reason into why (may be NULL: only the
 * verdict), or NULL when every member is within. */
const char *ingest_link_bound(const struct topo *t, uint32_t dir, const struct ingest_link *l, double interval_s,
                              char *why, size_t len);
const char *ingest_flow_bound(const struct topo *t, uint32_t dir, const struct ingest_flow *f, char *why,
                              size_t len);

/* ---- for ingest_parse's two readers ------------------------------------ */

/* Where members are read: `at` is the JSON path of the enclosing object
 * ("" for the top report), so that messages read "flows[3].bps: negative -1". */
struct ingest_ctx {
    const char *at;              /* the enclosing object's path, "" at the top */
    const char *list;            /* and, for a list entry, "flows" or "links" ... */
    size_t idx;                  /* ... and its index: "flows[3]" */
    struct ingest_error *e;
};

/* Records "PATH.KEY: WHAT" (or "PATH: WHAT" when key is NULL) as a field
 * error (INGEST_BAD_FIELD) and returns its code. */
int ingest_cfail(const struct ingest_ctx *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A member: absent is an error only when `need` is set (else the entry
 * keeps its default); numbers take min..max, integers imin..imax; a string,
 * a name or address, 1..size-1 printable ASCII bytes without spaces. The
 * value is stored at `off` in the entry's raw form. */
struct ingest_field {
    const char *key;
    unsigned char klen;
    unsigned char kind;
    bool need;
    double min, max;
    long long imin, imax;
    size_t off, size;
};

/* Checks v against f and stores it in raw; 0, or the error recorded in c->e. */
int ingest_field_check(const struct ingest_ctx *c, const struct ingest_field *f, const struct jsonscan_value *v,
                       void *raw);

/* A report's own members, in the order their errors are reported (probe
 * first, so that an error in another member can name the report's probe),
 * stored straight into struct ingest_report; and the checks across them
 * once they are read. */
extern const struct ingest_field ingest_report_fields[];
extern const size_t ingest_report_nfields;
int ingest_report_check(const struct ingest_ctx *c, const struct ingest_report *r);

/* An entry's members as read, before the checks across them: room for the
 * raw form of any list's entry (ingest_schema.c asserts it). */
#define INGEST_RAW_MAX 320
union ingest_raw {
    max_align_t align;
    unsigned char b[INGEST_RAW_MAX];
};

/* A report's "links" or "flows": what an entry holds and how it is built. */
struct ingest_list_kind {
    const char *name;
    const struct ingest_field *fields;
    size_t nfields;
    const void *defaults;        /* the raw form before any member is read */
    size_t raw_size, entry_size;
    /* The checks across the members of raw, then the entry built from it. */
    int (*finish)(const struct ingest_ctx *c, const void *raw, void *entry);
};
extern const struct ingest_list_kind ingest_links_kind, ingest_flows_kind;

/* raw set to k's defaults, before an entry's members are read. */
void ingest_raw_init(const struct ingest_list_kind *k, union ingest_raw *raw);

/* A list being filled: entries are malloc'd (the batch outlives the parse)
 * and handed to the report (ingest_list_set) whatever happens, so that
 * ingest_batch_free releases them. */
struct ingest_list {
    void *a;
    size_t n, cap;
};
/* Room for one more entry of size bytes, zeroed; NULL when out of memory. */
void *ingest_list_add(struct ingest_list *l, size_t size);
/* r's links or flows (by k) become l's entries. */
void ingest_list_set(struct ingest_report *r, const struct ingest_list_kind *k, const struct ingest_list *l);

#endif
