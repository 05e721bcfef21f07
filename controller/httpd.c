/*
 * httpd: see httpd.h.
 */
#include "controller/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/api.h"
#include "controller/config.h"
#include "controller/metrics.h"
#include "controller/state.h"

#define CACHE_SLOTS 64
#define CACHE_KEY 256
#define CACHE_MAX_AGE 1.0
#define RL_SLOTS 4096

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
};

struct conn {
    char *body;
    size_t len, cap;
    bool too_big;
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
    if (r->status == 429)
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
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    uint8_t a[16] = {0};
    if (ci && ci->client_addr) {
        if (ci->client_addr->sa_family == AF_INET)
            memcpy(a, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, 4);
        else if (ci->client_addr->sa_family == AF_INET6)
            memcpy(a, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, 16);
    }
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

struct argbuf {
    char *p;
    size_t left;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    struct argbuf *ab = cls;
    int n = snprintf(ab->p, ab->left, "%s=%s&", key, value ? value : "");
    if (n < 0 || (size_t)n >= ab->left) {
        ab->left = 0;
        return MHD_NO;
    }
    ab->p += n;
    ab->left -= (size_t)n;
    return MHD_YES;
}

static const char *get_arg(void *ctx, const char *key)
{
    return MHD_lookup_connection_value(ctx, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result serve_api(struct httpd *h, struct MHD_Connection *c, const char *url, const char *method,
                                 struct conn *cn)
{
    char key[CACHE_KEY];
    bool is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool keyed = false;
    uint64_t gen = __atomic_load_n(&h->api->st->gen, __ATOMIC_ACQUIRE);
    if (is_get && strlen(url) < 128) {
        struct argbuf ab = {key, sizeof(key)};
        int n = snprintf(key, sizeof(key), "%s?", url);
        ab.p += n;
        ab.left -= (size_t)n;
        MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &ab);
        keyed = ab.left > 0;
    }
    unsigned slot = 0;
    bool renderer = false;
    if (keyed) {
        uint32_t hsh = 2166136261u;
        for (const char *p = key; *p; p++)
            hsh = (hsh ^ (uint8_t)*p) * 16777619u;
        slot = hsh % CACHE_SLOTS;
        double now = tf_now_mono();
        pthread_mutex_lock(&h->cache_mu);
        struct cache_entry *e = &h->cache[slot];
        bool same = e->resp && strcmp(e->key, key) == 0 && now - e->made < CACHE_MAX_AGE;
        /* Fresh; or being re-rendered by another worker, in which case the
         * previous rendering (under a second old) is served instead of
         * having every connection render the same view at once. */
        if (same && (e->gen == gen || e->rendering)) {
            enum MHD_Result r = send_reply(h, c, e->status, e->resp);
            pthread_mutex_unlock(&h->cache_mu);
            return r;
        }
        if (!e->rendering) {
            e->rendering = renderer = true;
            if (strcmp(e->key, key)) { /* the slot changes hands */
                if (e->resp)
                    MHD_destroy_response(e->resp);
                e->resp = NULL;
                tf_strlcpy(e->key, key, sizeof(e->key));
            }
        }
        pthread_mutex_unlock(&h->cache_mu);
    }
    struct api_req q = {.method = method, .path = url, .body = cn->body, .body_len = cn->len,
                        .auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                        .arg = get_arg, .argctx = c};
    struct api_reply r;
    api_handle(h->api, &q, &r);
    bool cache = renderer && r.cacheable && r.status == 200;
    unsigned status = r.status;
    struct MHD_Response *resp = make_resp(&r);
    enum MHD_Result ret = resp ? send_reply(h, c, status, resp) : MHD_NO;
    if (renderer) {
        pthread_mutex_lock(&h->cache_mu);
        struct cache_entry *e = &h->cache[slot];
        e->rendering = false;
        if (cache && resp && strcmp(e->key, key) == 0) {
            if (e->resp)
                MHD_destroy_response(e->resp);
            e->gen = gen;
            e->made = tf_now_mono();
            e->status = status;
            e->resp = resp; /* the cache keeps our reference */
            resp = NULL;
        }
        pthread_mutex_unlock(&h->cache_mu);
    }
    if (resp)
        MHD_destroy_response(resp);
    return ret;
}

int httpd_static_path(const char *url, char *rel, size_t rellen, const char **ctype)
{
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"}, {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"}, {".png", "image/png"}, {".ico", "image/x-icon"},
        {".json", "application/json"}, {".map", "application/json"}, {".txt", "text/plain; charset=utf-8"},
    };
    if (strcmp(url, "/") == 0)
        url = "/index.html";
    if (url[0] != '/' || strlen(url) >= rellen || strstr(url, "//") || strstr(url, "/."))
        return -ENOENT;
    for (const char *p = url; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/", *p))
            return -ENOENT;
    const char *dot = strrchr(url, '.'), *slash = strrchr(url, '/');
    if (!dot || dot < slash)
        return -ENOENT;
    for (size_t i = 0; i < TF_ARRAY_SIZE(types); i++)
        if (strcmp(dot, types[i].ext) == 0) {
            *ctype = types[i].type;
            tf_strlcpy(rel, url + 1, rellen);
            return 0;
        }
    return -ENOENT;
}

static enum MHD_Result serve_static(struct httpd *h, struct MHD_Connection *c, const char *url, const char *method)
{
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return error(h, c, 405, "method_not_allowed", "static files: GET only");
    char rel[256], full[800];
    const char *ctype;
    if (!h->web_dir[0] || httpd_static_path(url, rel, sizeof(rel), &ctype) < 0)
        return error(h, c, 404, "not_found", "no such file");
    snprintf(full, sizeof(full), "%s/%s", h->web_dir, rel);
    int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return error(h, c, 404, "not_found", "no such file");
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
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

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    struct httpd *h = cls;
    struct conn *cn = *con_cls;
    if (!cn) {
        cn = calloc(1, sizeof(*cn));
        if (!cn)
            return MHD_NO;
        *con_cls = cn;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        uint64_t n;
        if (cl && tf_parse_u64(cl, 0, UINT64_MAX, &n) == 0 && n > (uint64_t)h->cfg->max_body)
            cn->too_big = true;
        else if (cl && n > 0 && (cn->body = malloc(n + 1)))
            cn->cap = n + 1; /* one buffer for the whole body: no regrowth copies */
        return MHD_YES;
    }
    if (*upload_size) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cn->too_big || cn->len + n > (size_t)h->cfg->max_body) {
            cn->too_big = true;
            return MHD_YES;
        }
        if (cn->len + n + 1 > cn->cap) {
            size_t nc = cn->cap ? cn->cap : 4096;
            while (nc < cn->len + n + 1)
                nc *= 2;
            char *nb = realloc(cn->body, nc);
            if (!nb)
                return MHD_NO;
            cn->body = nb;
            cn->cap = nc;
        }
        memcpy(cn->body + cn->len, upload, n);
        cn->len += n;
        cn->body[cn->len] = '\0';
        return MHD_YES;
    }
    if (!rate_ok(h, c))
        return error(h, c, 429, "too_many_requests", "request rate limit exceeded");
    if (cn->too_big) {
        char msg[96];
        snprintf(msg, sizeof(msg), "body larger than limits.max_body (%ld bytes)", h->cfg->max_body);
        return error(h, c, 413, "payload_too_large", msg);
    }
    if (api_owns(url))
        return serve_api(h, c, url, method, cn);
    return serve_static(h, c, url, method);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    struct conn *cn = *con_cls;
    if (cn) {
        free(cn->body);
        free(cn);
        *con_cls = NULL;
    }
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
    if (config_listen_addr(cfg, host, sizeof(host), &port) < 0) {
        snprintf(err, errlen, "listen: bad address '%s'", cfg->listen);
        free(h);
        return -EINVAL;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (strchr(host, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        inet_pton(AF_INET6, host, &s6->sin6_addr);
        flags |= MHD_USE_IPv6;
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        inet_pton(AF_INET, host, &s4->sin_addr);
    }
    if (cfg->tls_cert[0]) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            snprintf(err, errlen, "tls_cert: this libmicrohttpd was built without TLS support");
            free(h);
            return -ENOTSUP;
        }
        size_t n;
        int r1 = tf_read_file(cfg->tls_cert, 1 << 20, &h->tls_cert, &n);
        int r2 = r1 < 0 ? r1 : tf_read_file(cfg->tls_key, 1 << 20, &h->tls_key, &n);
        if (r1 < 0 || r2 < 0) {
            snprintf(err, errlen, "%s: %s", r1 < 0 ? cfg->tls_cert : cfg->tls_key, strerror(-(r1 < 0 ? r1 : r2)));
            free(h->tls_cert);
            free(h);
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
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
        {h->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->tls_cert},
        {h->tls_key ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!h->d) {
        snprintf(err, errlen, "listen %s: cannot start the HTTP server (address in use, or bad TLS key/cert?)",
                 cfg->listen);
        free(h->tls_cert);
        free(h->tls_key);
        free(h);
        return -EADDRINUSE;
    }
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
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (h->cache[i].resp)
            MHD_destroy_response(h->cache[i].resp);
    pthread_mutex_destroy(&h->cache_mu);
    pthread_mutex_destroy(&h->rl_mu);
    free(h->tls_cert);
    free(h->tls_key);
    free(h);
}
