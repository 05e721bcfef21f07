/*
 * reqguard: who may ask tierflowd what, decided from a request's header
 * alone, token or not: the Host must be a name of this server (against DNS
 * rebinding), and a write to the API must not come from another site's page
 * (its Origin) nor be a "simple" request a page can send anywhere without a
 * CORS preflight (a body that is not application/json).
 *
 * Invariants: pure functions over the listen address and the config's
 * http.allowed_hosts / http.allowed_origins (read, never copied, so the
 * config must outlive the guard); a refusal is an api_reply naming the
 * header, its value and the key that would admit it.
 */
#ifndef TF_REQGUARD_H
#define TF_REQGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct api_reply;
struct config;

struct reqguard {
    const struct config *cfg;
    int listen_af;               /* 4 or 6 */
    uint8_t listen_addr[16];
    bool listen_any;             /* 0.0.0.0 or :: */
    bool listen_loop;            /* 127/8 or ::1 */
};

/* What reqguard_check looks at; NULL for an absent header. */
struct reqguard_req {
    const char *method, *url;
    const char *host, *origin, *content_type;
    bool has_body;               /* Content-Length > 0 or Transfer-Encoding */
};

/* -EINVAL when cfg->listen is not ADDR:PORT with a numeric address. */
int  reqguard_init(struct reqguard *g, const struct config *cfg);
/* True when admitted; else *rej is the refusal (421, 403 or 415). */
bool reqguard_check(const struct reqguard *g, const struct reqguard_req *q, struct api_reply *rej);
bool reqguard_host_ok(const struct reqguard *g, const char *host);
bool reqguard_origin_ok(const struct reqguard *g, const char *origin, const char *host);
/* application/json, parameters (charset) allowed, any case. */
bool reqguard_json(const char *content_type);

#endif
