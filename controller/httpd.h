/*
 * httpd: tierflowd's HTTP(S) server on libmicrohttpd: request bodies,
 * per-client rate limiting, the response cache, static files for the
 * dashboard, and dispatch to api.
 *
 * Invariants: a worker pool of cfg->threads epoll threads serves requests;
 * no request waits for a rebalance round except POST /rebalance and GET
 * /routes. A cacheable GET reply is kept as an MHD response (reference
 * counted, shared by connections) until the state generation changes or it
 * is a second old, so that a burst of dashboard or scraper requests costs
 * one rendering. Bodies above limits.max_body are discarded and answered
 * 413; static paths are restricted to [A-Za-z0-9._-/] with no "..", no
 * hidden components, and known extensions.
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
/* True when path is safe to open under web_dir; sets the content type. */
int  httpd_static_path(const char *url, char *rel, size_t rellen, const char **ctype);

#endif
