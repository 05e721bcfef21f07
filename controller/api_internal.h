/*
 * api_internal: what the API's files share, for them alone (callers use
 * api.h). api.c holds the route table and admission, /status and the small
 * endpoints; api_links.c the topology, paths and link drains; api_flows.c
 * the flows and classes; api_jobs.c the jobs.
 *
 * A handler is called by api_handle once api_admit has found its route
 * (path, method, token, leadership): it fills *r, every body a JSON
 * object. Reads run inside the thread's jsonarena scope (jsonarena.h), so
 * a read handler builds its document, replies it and drops it; whether a
 * 200 may be served again from httpd's cache is the route's, not the
 * handler's. Query arguments are read through api_arg_*, which answer a
 * bad one with the 400 naming it.
 */
#ifndef TF_API_INTERNAL_H
#define TF_API_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "controller/api.h"

struct state_dir;

/* A path segment a pattern's {x} takes: 1..API_SEG_MAX-1 characters of
 * A-Za-z0-9 and "-_.:", those topology names use. */
#define API_SEG_MAX 64

/* What the route's pattern captured: its {x} segments in order, and what
 * a trailing {x*} matched (the rest of the path, possibly empty). */
struct api_match {
    char seg[2][API_SEG_MAX];
    const char *rest;
};

typedef void api_handler(struct api *a, const struct api_req *q, const struct api_match *m, double now,
                         struct api_reply *r);

/* Replies o (consumed; NULL or out of memory: a 500). */
void api_reply_json(struct api_reply *r, unsigned status, json_t *o);

/* Query argument name as an integer in min..max into *v, left alone when
 * absent. 0, or -EINVAL with *r the 400 naming the argument and its range. */
int api_arg_u64(const struct api_req *q, const char *name, uint64_t min, uint64_t max, uint64_t *v,
                struct api_reply *r);
/* Query argument name as a boolean into *v: "true" 1, "false" 0 (and "1",
 * "0" when digits), left alone when absent. 0, or -EINVAL with the 400. */
int api_arg_bool(const struct api_req *q, const char *name, bool digits, int *v, struct api_reply *r);
/* Query argument name, which the endpoint requires: NULL with the 400 when
 * absent. */
const char *api_arg_required(const struct api_req *q, const char *name, struct api_reply *r);

/* api_links.c */
json_t *api_health_json(const struct state_dir *sd);
api_handler api_get_topology, api_get_paths, api_post_drain, api_post_undrain;
/* api_flows.c */
api_handler api_get_flows, api_get_classes;
/* api_jobs.c */
api_handler api_get_jobs, api_job;

#endif
