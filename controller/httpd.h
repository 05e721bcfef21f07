/*
 * httpd: tierflowd's HTTP(S) server on libmicrohttpd: connections and
 * their deadlines, request bodies, per-client rate limiting, the response
 * cache, static files for the dashboard, and dispatch to api.
 *
 * Invariants: a worker pool of cfg->threads epoll threads serves requests;
 * no request waits for a rebalance round except POST /rebalance and GET
 * /routes. One client address holds at most limits.max_connections_per_addr
 * connections; a connection gets limits.header_timeout for its request
 * header and limits.body_timeout for its body, in total (a watchdog thread
 * shuts down the late ones: libmicrohttpd's own timeout is reset by every
 * byte). Request-body buffers grow with the bytes that arrive and are
 * bounded in all by limits.max_body_inflight (503 beyond), each by
 * limits.max_body (413). A request is judged at its header (reqguard: Host,
 * Origin, Content-Type; api_admit: endpoint, method, token); a refused one
 * has its body read and dropped, never held. A cacheable GET reply is kept
 * as an MHD response (reference counted, shared by connections) until the
 * state generation changes or it is a second old, keyed by the path and the
 * exact decoded arguments, so that a burst of dashboard or scraper requests
 * costs one rendering. Static files are httpd_static.h's (path checks, no
 * symbolic link followed); connection limits and deadlines httpd_conn.h's.
 */
#ifndef TF_HTTPD_H
#define TF_HTTPD_H

#include <stddef.h>

struct api;
struct config;
struct httpd;

/* web_dir may be NULL or "" (then "/" is 404). */
int  httpd_start(struct httpd **out, const struct config *cfg, struct api *api, const char *web_dir,
                 char *err, size_t errlen);
unsigned httpd_port(const struct httpd *h);
void httpd_stop(struct httpd *h);

#endif
