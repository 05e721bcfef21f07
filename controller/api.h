/*
 * api: the REST handlers of docs/api.md, independent of the HTTP library.
 *
 * httpd turns a request into a struct api_req and sends the struct
 * api_reply back; everything here is plain functions over the state, so the
 * handlers can be tested without a socket. Invariants: every reply body is a
 * JSON object (errors too: {"error": {"code", "message"}}); GET handlers
 * only take read locks; mutating handlers check the bearer token first, in
 * constant time; replies marked cacheable depend only on the path, the query
 * and the state generation (httpd may serve them again while gen is equal).
 * Every endpoint is one row of the route table in api.c (path pattern,
 * methods, handler, cacheable, needs-token): the Allow header, the
 * refusals and the dispatch all read that row. Jobs live in the state
 * (state_job_*), beside the flows they classify.
 */
#ifndef TF_API_H
#define TF_API_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct state;
struct events;
struct metrics;
struct history;
struct rebalance;
struct config;
struct leader;

struct api {
    struct state *st;
    struct events *ev;
    struct metrics *m;
    struct history *hist;
    struct rebalance *rb;
    const struct config *cfg;
    const char *backend_name;
    char token[256];             /* "" = no token configured */
    double start;
    char *openapi;               /* the document served at /api/v1/openapi.json */
    size_t openapi_len;
    struct leader *ld;           /* HA (leader.h), NULL without: a standby answers
                                    writes but reports with 503 and the leader's URL */
};

struct api_req {
    const char *method, *path;   /* path without the query */
    const char *body;
    size_t body_len;
    const char *auth;            /* Authorization header, or NULL */
    const char *peer;            /* the client's address ("10.0.0.1"), or NULL */
    const char *(*arg)(void *ctx, const char *key);
    void *argctx;
};

struct api_reply {
    unsigned status;
    char *body;                  /* malloc'd */
    size_t len;
    const char *ctype;
    const char *allow;           /* for 405 */
    const char *challenge;       /* WWW-Authenticate, for 401 */
    bool cacheable;
};

void api_init(struct api *a);
void api_destroy(struct api *a);
/* True when path is one of the API's (else httpd serves static files). */
bool api_owns(const char *path);
void api_handle(struct api *a, const struct api_req *q, struct api_reply *r);
/* The checks api_handle makes before it reads a body: the endpoint exists
 * (404), takes the method (405), and a write carries the token (401). True
 * when admitted; else *r is the refusal. httpd calls it at the header of a
 * write, so that a client without the token cannot make it hold a body. */
bool api_admit(const struct api *a, const struct api_req *q, struct api_reply *r);
/* Makes the jobs those of jobs ({"ID": body as PUT takes it}): a standby's
 * replica of what the leader stored in etcd (leader.h). A body this
 * topology refuses is logged and skipped. */
void api_jobs_replace(struct api *a, json_t *jobs);
/* Error reply helper, also used by httpd (413, 429). */
void api_error(struct api_reply *r, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Constant-time token check of an "Authorization: Bearer X" header (the
 * scheme case-insensitive, RFC 7235). */
bool api_token_ok(const char *token, const char *auth);

#endif
