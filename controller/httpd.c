/*
 * httpd: see httpd.h.
 */
#include "controller/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/api.h"
#include "controller/config.h"
#include "controller/httpd_conn.h"
#include "controller/httpd_static.h"
#include "controller/metrics.h"
#include "controller/reqguard.h"
#include "controller/state.h"

#define CACHE_SLOTS 64
#define CACHE_KEY 512
#define CACHE_MAX_AGE 1.0
#define RL_SLOTS 4096
#define BODY_FIRST (64u << 10)  /* first body buffer: a usual report fits it whole */

struct cache_entry {
    char key[CACHE_KEY];
    uint64_t gen;
    double made;
    unsigned status;
    struct MHD_Response *resp;
    bool rendering;              /* a worker is rendering this key right now */
};

struct bucket {
    uint8_t addr[16];
    double tokens, last;
};

struct httpd {
    struct MHD_Daemon *d;
    struct api *api;
    const struct config *cfg;
    char web_dir[512];
    char *tls_cert, *tls_key;
    pthread_mutex_t cache_mu, rl_mu;
    struct cache_entry cache[CACHE_SLOTS];
    struct bucket rl[RL_SLOTS];
    struct reqguard guard;       /* Host, Origin, Content-Type */
    struct httpd_conns conns;    /* per-address counts and deadlines (httpd_conn.h) */
    size_t inflight;             /* atomic: bytes of request-body buffers held */
};

/* A request: its body, or why it is refused (answered once the body, if
 * any, has been read and dropped, so that the client reads the answer). */
struct conn {
    char *body;
    size_t len, cap;
    uint64_t declared;           /* Content-Length, 0 when absent */
    struct api_reply rej;        /* the refusal; rej.status 0 = none */
};

static enum MHD_Result send_reply(struct httpd *h, struct MHD_Connection *c, unsigned status,
                                  struct MHD_Response *resp)
{
    metrics_http(h->api->m, status);
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    return r;
}

static struct MHD_Response *make_resp(struct api_reply *r)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(r->body);
        return NULL;
    }
    r->body = NULL;
    MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (r->allow)
        MHD_add_response_header(resp, "Allow", r->allow);
    if (r->challenge)
        MHD_add_response_header(resp, "WWW-Authenticate", r->challenge);
    if (r->status == 429 || r->status == 503)
        MHD_add_response_header(resp, "Retry-After", "1");
    return resp;
}

static enum MHD_Result reply(struct httpd *h, struct MHD_Connection *c, struct api_reply *r)
{
    struct MHD_Response *resp = make_resp(r);
    if (!resp)
        return MHD_NO;
    enum MHD_Result ret = send_reply(h, c, r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result error(struct httpd *h, struct MHD_Connection *c, unsigned status, const char *code,
                             const char *msg)
{
    struct api_reply r = {0};
    api_error(&r, status, code, "%s", msg);
    return reply(h, c, &r);
}

/* Token bucket per client address (hashed; colliding clients share one). */
static bool rate_ok(struct httpd *h, struct MHD_Connection *c)
{
    if (h->cfg->rate_limit <= 0)
        return true;
    uint8_t a[16];
    httpd_conns_addr(c, a);
    uint32_t hsh = 2166136261u;
    for (int i = 0; i < 16; i++)
        hsh = (hsh ^ a[i]) * 16777619u;
    double now = tf_now_mono(), rate = (double)h->cfg->rate_limit;
    pthread_mutex_lock(&h->rl_mu);
    struct bucket *b = &h->rl[hsh % RL_SLOTS];
    if (memcmp(b->addr, a, 16) || b->last == 0) {
        memcpy(b->addr, a, 16);
        b->tokens = rate;
        b->last = now;
    }
    b->tokens += (now - b->last) * rate;
    if (b->tokens > rate)
        b->tokens = rate;
    b->last = now;
    bool ok = b->tokens >= 1;
    if (ok)
        b->tokens -= 1;
    pthread_mutex_unlock(&h->rl_mu);
    return ok;
}

/* ---- request bodies: bounded each and in total ------------------------- */

static void body_release(struct httpd *h, struct conn *cn)
{
    if (cn->cap)
        __atomic_sub_fetch(&h->inflight, cn->cap, __ATOMIC_RELAXED);
    free(cn->body);
    cn->body = NULL;
    cn->len = cn->cap = 0;
}

/* Room for n more bytes: the buffer grows with what arrives (not with what
 * a header promises, which costs the sender nothing), doubling from
 * BODY_FIRST and ending at exactly the declared length; every byte of
 * capacity counts against limits.max_body_inflight. -ENOBUFS over it. */
static int body_grow(struct httpd *h, struct conn *cn, size_t n)
{
    size_t need = cn->len + n + 1;
    if (need <= cn->cap)
        return 0;
    size_t nc = cn->cap ? cn->cap * 2 : BODY_FIRST;
    if (nc < need)
        nc = need;
    if (cn->declared && need <= cn->declared + 1 && nc > cn->declared + 1)
        nc = (size_t)cn->declared + 1;
    size_t add = nc - cn->cap;
    size_t was = __atomic_fetch_add(&h->inflight, add, __ATOMIC_RELAXED);
    if (was + add > (size_t)h->cfg->max_body_inflight) {
        __atomic_sub_fetch(&h->inflight, add, __ATOMIC_RELAXED);
        return -ENOBUFS;
    }
    char *nb = realloc(cn->body, nc);
    if (!nb) {
        __atomic_sub_fetch(&h->inflight, add, __ATOMIC_RELAXED);
        return -ENOMEM;
    }
    cn->body = nb;
    cn->cap = nc;
    return 0;
}

__attribute__((format(printf, 4, 5)))
static void refuse(struct conn *cn, unsigned status, const char *code, const char *fmt, ...)
{
    if (cn->rej.status)
        return; /* the first reason stands */
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    api_error(&cn->rej, status, code, "%s", msg);
}

/* Decides at the header whether the request is refused (cn->rej): who
 * may ask (reqguard), then the endpoint, method and token (api_admit, so
 * that a client without the token holds no body), then the size. */
static void check_request(struct httpd *h, struct MHD_Connection *c, const char *url, const char *method,
                          struct conn *cn)
{
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl) {
        /* libmicrohttpd has already refused a Content-Length that is not
         * decimal digits; leading zeros are legal HTTP ("086" is 86). */
        while (cl[0] == '0' && cl[1])
            cl++;
        if (tf_parse_u64(cl, 0, UINT64_MAX, &cn->declared) < 0)
            cn->declared = 0; /* unknown: the buffer grows as bytes come */
    }
    struct reqguard_req g = {
        .method = method, .url = url,
        .host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"),
        .origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
        .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"),
        .has_body = cn->declared > 0 || MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding")};
    if (!reqguard_check(&h->guard, &g, &cn->rej))
        return;
    if (strcmp(method, "GET") && strcmp(method, "HEAD") && api_owns(url)) {
        struct api_req q = {.method = method, .path = url,
                            .auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")};
        if (!api_admit(h->api, &q, &cn->rej))
            return;
    }
    if (cn->declared > (uint64_t)h->cfg->max_body)
        refuse(cn, 413, "payload_too_large", "body larger than limits.max_body (%ld bytes)", h->cfg->max_body);
}

/* ---- API replies and their cache --------------------------------------- */

struct argbuf {
    char *p;
    size_t left;
};

/* Appends s, with '%', '&', '=' and bytes outside printable ASCII
 * %-escaped unless raw (the separators), so that the key is one-to-one with
 * the decoded arguments: unescaped, the pair ("limit=1&fat", "true") made
 * the same key as limit=1&fat=true, and a crafted query's rendering was
 * served for the real one. */
static bool key_append(struct argbuf *ab, const char *s, bool raw)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool esc = !raw && (ch == '%' || ch == '&' || ch == '=' || ch < 0x21 || ch > 0x7e);
        size_t need = esc ? 3 : 1;
        if (ab->left <= need)
            return false;
        if (esc)
            snprintf(ab->p, 4, "%%%02X", ch);
        else
            *ab->p = (char)ch;
        ab->p += need;
        ab->left -= need;
    }
    *ab->p = '\0';
    return true;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct argbuf *ab = cls;
    /* A key without '=' (?fat, value NULL) is not the same request as ?fat= . */
    if (!key_append(ab, key, false) || (value && (!key_append(ab, "=", true) || !key_append(ab, value, false))) ||
        !key_append(ab, "&", true)) {
        ab->left = 0;
        return MHD_NO;
    }
    return MHD_YES;
}

static const char *get_arg(void *ctx, const char *key)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

/* The cache key of a GET: its path and exact decoded arguments; false
 * when they do not fit (the request is then rendered, not cached). */
static bool cache_key(struct MHD_Connection *c, const char *url, char key[CACHE_KEY])
{
    if (strlen(url) >= 128)
        return false;
    struct argbuf ab = {key, CACHE_KEY};
    int n = snprintf(key, CACHE_KEY, "%s?", url);
    ab.p += n;
    ab.left -= (size_t)n;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &ab);
    return ab.left > 0;
}

/* Serves key's rendering from the cache when it is fresh for generation
 * gen (true, *ret the send's result). Otherwise claims its slot for this
 * worker to render (*renderer) unless another worker already is. */
static bool cache_serve(struct httpd *h, struct MHD_Connection *c, const char *key, uint64_t gen, unsigned *slot,
                        bool *renderer, enum MHD_Result *ret)
{
    uint32_t hsh = 2166136261u;
    for (const char *p = key; *p; p++)
        hsh = (hsh ^ (uint8_t)*p) * 16777619u;
    *slot = hsh % CACHE_SLOTS;
    double now = tf_now_mono();
    pthread_mutex_lock(&h->cache_mu);
    struct cache_entry *e = &h->cache[*slot];
    bool same = e->resp && strcmp(e->key, key) == 0 && now - e->made < CACHE_MAX_AGE;
    /* Fresh; or being re-rendered by another worker, in which case the
     * previous rendering (under a second old) is served instead of
     * having every connection render the same view at once. */
    if (same && (e->gen == gen || e->rendering)) {
        *ret = send_reply(h, c, e->status, e->resp);
        pthread_mutex_unlock(&h->cache_mu);
        return true;
    }
    if (!e->rendering) {
        e->rendering = *renderer = true;
        if (strcmp(e->key, key)) { /* the slot changes hands */
            if (e->resp)
                MHD_destroy_response(e->resp);
            e->resp = NULL;
            tf_strlcpy(e->key, key, sizeof(e->key));
        }
    }
    pthread_mutex_unlock(&h->cache_mu);
    return false;
}

/* Ends this worker's claim on slot; keeps resp there when keep (a
 * cacheable 200 of key, rendered at gen). Returns the reference the caller
 * still holds: NULL when the cache took it. */
static struct MHD_Response *cache_keep(struct httpd *h, unsigned slot, const char *key, uint64_t gen, bool keep,
                                       unsigned status, struct MHD_Response *resp)
{
    pthread_mutex_lock(&h->cache_mu);
    struct cache_entry *e = &h->cache[slot];
    e->rendering = false;
    if (keep && resp && strcmp(e->key, key) == 0) {
        if (e->resp)
            MHD_destroy_response(e->resp);
        e->gen = gen;
        e->made = tf_now_mono();
        e->status = status;
        e->resp = resp;
        resp = NULL;
    }
    pthread_mutex_unlock(&h->cache_mu);
    return resp;
}

static enum MHD_Result serve_api(struct httpd *h, struct MHD_Connection *c, const char *url, const char *method,
                                 struct conn *cn)
{
    char key[CACHE_KEY];
    bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    uint64_t gen = __atomic_load_n(&h->api->st->gen, __ATOMIC_ACQUIRE);
    unsigned slot = 0;
    bool renderer = false;
    enum MHD_Result ret;
    if (is_get && cache_key(c, url, key) && cache_serve(h, c, key, gen, &slot, &renderer, &ret))
        return ret;
    uint8_t a[16];
    char peer[INET6_ADDRSTRLEN];
    struct api_req q = {.method = method, .path = url, .body = cn->body, .body_len = cn->len,
                        .auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                        .peer = httpd_conns_addr(c, a) ? httpd_conns_addr_str(a, peer, sizeof(peer)) : NULL,
                        .arg = get_arg, .argctx = c};
    struct api_reply r;
    api_handle(h->api, &q, &r);
    bool keep = r.cacheable && r.status == 200;
    unsigned status = r.status;
    struct MHD_Response *resp = make_resp(&r);
    ret = resp ? send_reply(h, c, status, resp) : MHD_NO;
    if (renderer)
        resp = cache_keep(h, slot, key, gen, keep, status, resp);
    if (resp)
        MHD_destroy_response(resp);
    return ret;
}

/* ---- static files (httpd_static.h) ------------------------------------ */

static enum MHD_Result serve_static(struct httpd *h, struct MHD_Connection *c, const char *url, const char *method)
{
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        struct api_reply r = {0};
        api_error(&r, 405, "method_not_allowed", "%s %.100s: static files: allowed: GET, HEAD", method, url);
        r.allow = "GET, HEAD";
        return reply(h, c, &r);
    }
    const char *ctype;
    uint64_t size;
    int fd = h->web_dir[0] ? httpd_static_open(h->web_dir, url, &ctype, &size) : -ENOENT;
    if (fd < 0)
        return error(h, c, 404, "not_found", "no such file");
    struct MHD_Response *resp = MHD_create_response_from_fd(size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", ctype);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    enum MHD_Result r = send_reply(h, c, 200, resp);
    MHD_destroy_response(resp);
    return r;
}

/* ---- the request cycle ------------------------------------------------- */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    struct httpd *h = cls;
    struct conn *cn = *con_cls;
    if (!cn) { /* the header is complete: the body's deadline starts */
        cn = calloc(1, sizeof(*cn));
        if (!cn)
            return MHD_NO;
        *con_cls = cn;
        httpd_conns_deadline(&h->conns, c, h->cfg->body_timeout, true);
        check_request(h, c, url, method, cn);
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cn->rej.status) /* refused: the body is read and dropped */
            return MHD_YES;
        if (cn->len + n > (size_t)h->cfg->max_body) {
            body_release(h, cn);
            refuse(cn, 413, "payload_too_large", "body larger than limits.max_body (%ld bytes)", h->cfg->max_body);
            return MHD_YES;
        }
        int rc = body_grow(h, cn, n);
        if (rc < 0) {
            body_release(h, cn);
            if (rc == -ENOBUFS)
                refuse(cn, 503, "unavailable",
                       "request bodies in flight would exceed limits.max_body_inflight (%ld bytes); retry later",
                       h->cfg->max_body_inflight);
            else
                refuse(cn, 503, "unavailable", "out of memory for the request body; retry later");
            return MHD_YES;
        }
        memcpy(cn->body + cn->len, upload, n);
        cn->len += n;
        cn->body[cn->len] = '\0';
        return MHD_YES;
    }
    httpd_conns_deadline(&h->conns, c, 0, false); /* the request is in: replying has no deadline of ours */
    if (!rate_ok(h, c))
        return error(h, c, 429, "too_many_requests", "request rate limit exceeded");
    if (cn->rej.status) {
        struct api_reply r = cn->rej;
        cn->rej.body = NULL; /* reply() takes it */
        return reply(h, c, &r);
    }
    if (api_owns(url))
        return serve_api(h, c, url, method, cn);
    return serve_static(h, c, url, method);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    struct httpd *h = cls;
    struct conn *cn = *con_cls;
    if (cn) {
        body_release(h, cn);
        free(cn->rej.body);
        free(cn);
        *con_cls = NULL;
    }
    /* A kept-alive connection has header_timeout for its next request. */
    httpd_conns_deadline(&h->conns, c, h->cfg->header_timeout, false);
}

/* libmicrohttpd's error logger: its format strings are its own. */
__attribute__((format(printf, 2, 0)))
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char buf[512];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '\n')
        buf[--n] = '\0';
    log_warn("httpd: %s", buf);
}

static void httpd_free(struct httpd *h)
{
    pthread_mutex_destroy(&h->cache_mu);
    pthread_mutex_destroy(&h->rl_mu);
    free(h->tls_cert);
    free(h->tls_key);
    free(h);
}

int httpd_start(struct httpd **out, const struct config *cfg, struct api *api, const char *web_dir, char *err,
                size_t errlen)
{
    struct httpd *h = calloc(1, sizeof(*h));
    if (!h)
        return -ENOMEM;
    h->cfg = cfg;
    h->api = api;
    tf_strlcpy(h->web_dir, web_dir ? web_dir : "", sizeof(h->web_dir));
    pthread_mutex_init(&h->cache_mu, NULL);
    pthread_mutex_init(&h->rl_mu, NULL);

    char host[64];
    unsigned port;
    struct sockaddr_storage ss = {0};
    if (config_listen_addr(cfg, host, sizeof(host), &port) < 0 || reqguard_init(&h->guard, cfg) < 0) {
        snprintf(err, errlen, "listen: bad address '%s'", cfg->listen);
        httpd_free(h);
        return -EINVAL;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (h->guard.listen_af == 6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        memcpy(&s6->sin6_addr, h->guard.listen_addr, 16);
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        memcpy(&s4->sin_addr, h->guard.listen_addr, 4);
    }
    if (cfg->tls_cert[0]) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, errlen, "tls_cert: this libmicrohttpd was built without TLS support");
            httpd_free(h);
            return -ENOTSUP;
        }
        size_t n;
        int r1 = tf_read_file(cfg->tls_cert, 1 << 20, &h->tls_cert, &n);
        int r2 = r1 < 0 ? r1 : tf_read_file(cfg->tls_key, 1 << 20, &h->tls_key, &n);
        if (r1 < 0 || r2 < 0) {
            snprintf(err, errlen, "%s: %s", r1 < 0 ? cfg->tls_cert : cfg->tls_key, strerror(-(r1 < 0 ? r1 : r2)));
            httpd_free(h);
            return r1 < 0 ? r1 : r2;
        }
        flags |= MHD_USE_TLS;
    }
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL},
        {MHD_OPTION_SOCK_ADDR, 0, &ss},
        {MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, h},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)httpd_conns_notify, &h->conns},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
        {h->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->tls_cert},
        {h->tls_key ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    if (httpd_conns_start(&h->conns, cfg) < 0) {
        snprintf(err, errlen, "httpd: cannot start the deadline watchdog thread");
        httpd_free(h);
        return -EAGAIN;
    }
    h->d = MHD_start_daemon(flags, (uint16_t)port, httpd_conns_accept, &h->conns, handler, h, MHD_OPTION_ARRAY,
                            opts, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "listen %s: cannot start the HTTP server (address in use, or bad TLS key/cert?)",
                 cfg->listen);
        httpd_conns_stop(&h->conns);
        httpd_free(h);
        return -EADDRINUSE;
    }
    if (!api->token[0] && !h->guard.listen_loop)
        log_warn("httpd: no token_file, and listen %s is not a loopback address: anyone who can reach it can post "
                 "reports and run rebalances; set token_file (tierflowd(8))", cfg->listen);
    *out = h;
    return 0;
}

unsigned httpd_port(const struct httpd *h)
{
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? i->port : 0;
}

void httpd_stop(struct httpd *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    httpd_conns_stop(&h->conns);
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (h->cache[i].resp)
            MHD_destroy_response(h->cache[i].resp);
    httpd_free(h);
}
