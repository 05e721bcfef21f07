/*
 * reqguard: see reqguard.h.
 */
#include "controller/reqguard.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "controller/api.h"
#include "controller/config.h"

static bool is_loopback(int af, const uint8_t *a)
{
    static const uint8_t v6[16] = {[15] = 1};
    return af == 4 ? a[0] == 127 : memcmp(a, v6, 16) == 0;
}

int reqguard_init(struct reqguard *g, const struct config *cfg)
{
    static const uint8_t zero[16];
    char host[64];
    unsigned port;
    memset(g, 0, sizeof(*g));
    g->cfg = cfg;
    if (config_listen_addr(cfg, host, sizeof(host), &port) < 0 || tf_addr_parse(host, &g->listen_af, g->listen_addr) < 0)
        return -EINVAL;
    g->listen_any = memcmp(g->listen_addr, zero, 16) == 0;
    g->listen_loop = is_loopback(g->listen_af, g->listen_addr);
    return 0;
}

/* item is in the comma-separated list (case-insensitive, a final dot of a
 * listed name ignored as it is in the Host; "*" is anything). */
static bool list_has(const char *list, const char *item)
{
    char it[256];
    while (config_list_next(&list, it, sizeof(it)) > 0) {
        size_t n = strlen(it);
        if (n > 1 && it[n - 1] == '.')
            it[n - 1] = '\0';
        if (strcmp(it, "*") == 0 || strcasecmp(it, item) == 0)
            return true;
    }
    return false;
}

/* DNS rebinding is a name the attacker controls resolving to us: a page of
 * that name may then call the API as same-origin. The Host header carries
 * that name, so only names (and addresses) that are this server's pass:
 * the listen address; for a loopback listen also "localhost" and every
 * loopback address; for a wildcard listen (0.0.0.0, ::) any address literal
 * (a literal is no rebinding vector); and the names in http.allowed_hosts.
 * The port is not compared (proxies rewrite it; it is not what a rebinding
 * changes). No Host at all is HTTP/1.0, which no browser sends. */
bool reqguard_host_ok(const struct reqguard *g, const char *hv)
{
    if (!hv)
        return true;
    char name[256];
    const char *end;
    if (hv[0] == '[') {
        end = strchr(hv, ']');
        if (!end || (end[1] && end[1] != ':'))
            return false;
        hv++;
    } else {
        end = strchr(hv, ':');
        if (end && strchr(end + 1, ':'))
            return false;
        if (!end)
            end = hv + strlen(hv);
    }
    size_t n = (size_t)(end - hv);
    if (n == 0 || n >= sizeof(name))
        return false;
    memcpy(name, hv, n);
    name[n] = '\0';
    if (n > 1 && name[n - 1] == '.') /* "localhost." is "localhost" */
        name[--n] = '\0';
    int af;
    uint8_t a[16];
    if (tf_addr_parse(name, &af, a) == 0) {
        if (g->listen_any || (af == g->listen_af && memcmp(a, g->listen_addr, 16) == 0) ||
            (g->listen_loop && is_loopback(af, a)))
            return true;
    } else if (g->listen_loop && strcasecmp(name, "localhost") == 0) {
        return true;
    }
    return list_has(g->cfg->allowed_hosts, name);
}

/* A browser sends Origin with every cross-origin write (and with
 * same-origin ones); curl and the probes send none. A write whose Origin
 * is neither this server as addressed (scheme://Host) nor in
 * http.allowed_origins comes from another site's page. */
bool reqguard_origin_ok(const struct reqguard *g, const char *origin, const char *host)
{
    if (!origin)
        return true;
    const char *auth = strncmp(origin, "http://", 7) == 0    ? origin + 7
                       : strncmp(origin, "https://", 8) == 0 ? origin + 8
                                                              : NULL;
    if (auth && host && strcasecmp(auth, host) == 0)
        return true;
    return list_has(g->cfg->allowed_origins, origin);
}

bool reqguard_json(const char *ct)
{
    if (!ct)
        return false;
    while (*ct == ' ')
        ct++;
    if (strncasecmp(ct, "application/json", 16))
        return false;
    ct += 16;
    while (*ct == ' ')
        ct++;
    return *ct == '\0' || *ct == ';';
}

/* A cross-site page can send a write as a "simple" request (text/plain or a
 * form, no preflight), so a write with a body must say application/json,
 * which a page cannot send to another origin without a CORS preflight that
 * this server never grants. A write without a body carries no forged data;
 * a page's bodiless POST still carries an Origin, which is checked. */
bool reqguard_check(const struct reqguard *g, const struct reqguard_req *q, struct api_reply *rej)
{
    if (!reqguard_host_ok(g, q->host)) {
        api_error(rej, 421, "misdirected_request",
                  "Host '%.80s' is not a name of this server (listen %s); add it to http.allowed_hosts", q->host,
                  g->cfg->listen);
        return false;
    }
    if (!strcmp(q->method, "GET") || !strcmp(q->method, "HEAD") || !api_owns(q->url))
        return true;
    if (!reqguard_origin_ok(g, q->origin, q->host)) {
        api_error(rej, 403, "forbidden_origin",
                  "%s %.100s from a page at Origin '%.80s': a cross-origin write is refused (allowed: this "
                  "server's own origin and http.allowed_origins)", q->method, q->url, q->origin);
        return false;
    }
    if (q->has_body && !q->content_type) {
        api_error(rej, 415, "unsupported_media_type",
                  "no Content-Type: a request body must be sent as application/json");
        return false;
    }
    if (q->content_type && !reqguard_json(q->content_type)) {
        api_error(rej, 415, "unsupported_media_type",
                  "Content-Type '%.80s': a request body must be sent as application/json", q->content_type);
        return false;
    }
    return true;
}
