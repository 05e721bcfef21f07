/*
 * etcd: the v3 gateway client (etcd.h). Endpoint failover, TLS (a CA, a
 * client certificate) and user/password authentication live here, so that
 * the election (leader.c) speaks only in etcd's messages.
 */
#include "controller/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/config.h"

struct buf {
    char *p;
    size_t n, cap;
};

static size_t keep(char *ptr, size_t sz, size_t n, void *u)
{
    struct buf *b = u;
    size_t add = sz * n;
    if (b->n + add + 1 > ETCD_ANSWER_MAX)
        return 0;  /* aborts the transfer: an answer this large is not etcd's */
    if (tf_grow((void **)&b->p, &b->cap, b->n + add + 1, 1) < 0)
        return 0;
    memcpy(b->p + b->n, ptr, add);
    b->n += add;
    b->p[b->n] = '\0';
    return add;
}

static int progress(void *u, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    const atomic_bool *stop = u;
    return stop && atomic_load(stop) ? 1 : 0;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int etcd_open(struct etcd *e, const struct config *c, const atomic_bool *stop, char *err, size_t errlen)
{
    memset(e, 0, sizeof(*e));
    e->stop = stop;
    const char *p = c->ha_endpoints;
    char item[ETCD_URL_MAX];
    int r;
    while ((r = config_list_next(&p, item, sizeof(item))) > 0) {
        if (e->nep == ETCD_MAX_ENDPOINTS)
            return tf_fail(err, errlen, -EINVAL, "ha.etcd_endpoints: more than %d endpoints", ETCD_MAX_ENDPOINTS);
        if (strncmp(item, "http://", 7) && strncmp(item, "https://", 8))
            return tf_fail(err, errlen, -EINVAL, "ha.etcd_endpoints: '%s': expected http://HOST:PORT or https://HOST:PORT",
                           item);
        size_t l = strlen(item);
        while (l && item[l - 1] == '/')
            item[--l] = '\0';
        tf_strlcpy(e->ep[e->nep++], item, ETCD_URL_MAX);
    }
    if (r < 0 || e->nep == 0)
        return tf_fail(err, errlen, -EINVAL, "ha.etcd_endpoints: '%s': expected a comma-separated list of URLs",
                       c->ha_endpoints);
    tf_strlcpy(e->ca, c->ha_tls_ca, sizeof(e->ca));
    tf_strlcpy(e->cert, c->ha_tls_cert, sizeof(e->cert));
    tf_strlcpy(e->key, c->ha_tls_key, sizeof(e->key));
    tf_strlcpy(e->user, c->ha_username, sizeof(e->user));
    /* Its mode was checked with the configuration (config_validate). */
    if (c->ha_password_file[0]) {
        if (tf_read_token(c->ha_password_file, e->password, sizeof(e->password)) < 0)
            return tf_fail(err, errlen, -EINVAL, "ha.password_file %s: unreadable, or not 1..255 printable characters",
                           c->ha_password_file);
    }
    pthread_once(&once, global_init);
    if (!(e->curl = curl_easy_init()))
        return tf_fail(err, errlen, -ENOMEM, "curl_easy_init failed");
    return 0;
}

void etcd_close(struct etcd *e)
{
    if (e->curl)
        curl_easy_cleanup(e->curl);
    e->curl = NULL;
    memset(e->password, 0, sizeof(e->password));
    memset(e->token, 0, sizeof(e->token));
}

/* A stream's answer: one JSON message a line (grpc-gateway), each handed
 * to cb as it completes; the buffer holds only the incomplete one. */
struct stream {
    struct buf b;
    void (*cb)(void *arg, json_t *msg);
    void *arg;
};

static size_t stream_keep(char *ptr, size_t sz, size_t n, void *u)
{
    struct stream *st = u;
    size_t got = keep(ptr, sz, n, &st->b);
    if (got != sz * n)
        return got;
    char *nl;
    while (st->b.p && (nl = memchr(st->b.p, '\n', st->b.n))) {
        *nl = '\0';
        json_t *m = json_loads(st->b.p, 0, NULL);
        if (m)
            st->cb(st->arg, m);
        json_decref(m);
        size_t used = (size_t)(nl + 1 - st->b.p);
        memmove(st->b.p, nl + 1, st->b.n - used + 1);
        st->b.n -= used;
    }
    return got;
}

/* One POST to one endpoint: the HTTP status, or -errno on a transport error.
 * The answer goes to write(sink). */
static long post_one(struct etcd *e, const char *ep, const char *path, const char *body, long timeout_ms,
                     size_t (*write)(char *, size_t, size_t, void *), void *sink)
{
    CURL *c = e->curl;
    char url[ETCD_URL_MAX + 64], auth[sizeof(e->token) + 32];
    snprintf(url, sizeof(url), "%s%s", ep, path);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    if (e->token[0]) {
        snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
        h = curl_slist_append(h, auth);
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)e->stop);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (e->ca[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, e->ca);
    if (e->cert[0]) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
        curl_easy_setopt(c, CURLOPT_SSLKEY, e->key);
    }
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (rc != CURLE_OK) {
        snprintf(e->err, sizeof(e->err), "etcd %s%s: %s", ep, path, curl_easy_strerror(rc));
        return rc == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED : rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

/* etcd's message in an error answer ({"error": "...", "message": "..."}). */
static void answer_error(struct etcd *e, const char *ep, const char *path, long status, const struct buf *b)
{
    json_t *o = b->p ? json_loads(b->p, 0, NULL) : NULL;
    const char *m = o ? json_string_value(json_object_get(o, "message")) : NULL;
    if (!m && o)
        m = json_string_value(json_object_get(o, "error"));
    snprintf(e->err, sizeof(e->err), "etcd %s%s: HTTP %ld: %.200s", ep, path, status, m ? m : b->p ? b->p : "");
    json_decref(o);
}

static int call(struct etcd *e, const char *path, json_t *req, long timeout_ms, json_t **resp, bool auth);

static int authenticate(struct etcd *e)
{
    json_t *req = json_pack("{ss ss}", "name", e->user, "password", e->password), *resp = NULL;
    e->token[0] = '\0';
    int r = req ? call(e, "/v3/auth/authenticate", req, 3000, &resp, false) : -ENOMEM;
    json_decref(req);
    if (r < 0)
        return r;
    const char *t = json_string_value(json_object_get(resp, "token"));
    if (!t || tf_strlcpy(e->token, t, sizeof(e->token)) >= sizeof(e->token)) {
        e->token[0] = '\0';
        snprintf(e->err, sizeof(e->err), "etcd /v3/auth/authenticate: no token in the answer");
        r = -EPROTO;
    }
    json_decref(resp);
    return r;
}

/* The request's text, once authenticated when the client must be (auth):
 * NULL with *rc set when either fails. */
static char *request(struct etcd *e, json_t *req, bool auth, int *rc)
{
    if (auth && e->user[0] && !e->token[0] && (*rc = authenticate(e)) < 0)
        return NULL;
    char *body = json_dumps(req, JSON_COMPACT);
    if (!body)
        *rc = -ENOMEM;
    return body;
}

static int call(struct etcd *e, const char *path, json_t *req, long timeout_ms, json_t **resp, bool auth)
{
    int rc = -EHOSTUNREACH;
    char *body = request(e, req, auth, &rc);
    if (!body)
        return rc;
    for (unsigned i = 0; i < e->nep; i++) {
        unsigned k = (e->cur + i) % e->nep;
        struct buf b = {0};
        long st = post_one(e, e->ep[k], path, body, timeout_ms, keep, &b);
        if (st == -ECANCELED) {
            free(b.p);
            rc = (int)st;
            break;
        }
        if (st < 0) {   /* this member is unreachable: the next one */
            free(b.p);
            rc = (int)st;
            continue;
        }
        e->cur = k;
        if (st == 200) {
            json_error_t je;
            *resp = b.p ? json_loads(b.p, 0, &je) : NULL;
            if (!*resp) {
                snprintf(e->err, sizeof(e->err), "etcd %s%s: answer is not JSON", e->ep[k], path);
                rc = -EPROTO;
            } else {
                rc = 0;
            }
        } else {
            answer_error(e, e->ep[k], path, st, &b);
            bool stale_token = auth && e->user[0] && (st == 401 || strstr(e->err, "token"));
            /* A member without a quorum or a leader answers 503: try another. */
            rc = stale_token ? -EACCES : st == 503 ? -EAGAIN : -EPROTO;
            if (st == 503) {
                free(b.p);
                continue;
            }
        }
        free(b.p);
        break;
    }
    free(body);
    if (rc == -EACCES && auth) {
        e->token[0] = '\0';
        if ((rc = authenticate(e)) == 0)
            return call(e, path, req, timeout_ms, resp, false);
    }
    return rc;
}

int etcd_call(struct etcd *e, const char *path, json_t *req, long timeout_ms, json_t **resp)
{
    *resp = NULL;
    return call(e, path, req, timeout_ms, resp, true);
}

int etcd_stream(struct etcd *e, const char *path, json_t *req, void (*cb)(void *arg, json_t *msg), void *arg)
{
    int r = 0;
    char *body = request(e, req, true, &r);
    if (!body)
        return r;
    struct stream st = {.cb = cb, .arg = arg};
    unsigned k = e->cur;
    long rc = post_one(e, e->ep[k], path, body, 0, stream_keep, &st);
    if (rc >= 0 && rc != 200)
        answer_error(e, e->ep[k], path, rc, &st.b);
    if (rc < 0 || rc != 200) {
        e->cur = (k + 1) % e->nep;   /* the next attempt asks another member */
        if (rc == 401)
            e->token[0] = '\0';
    }
    free(st.b.p);
    free(body);
    return rc < 0 ? (int)rc : rc == 200 ? 0 : -EPROTO;
}

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

json_t *etcd_b64(const void *data, size_t len)
{
    const unsigned char *s = data;
    char *o = malloc(4 * ((len + 2) / 3) + 1);
    if (!o)
        return NULL;
    size_t w = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0) | (i + 2 < len ? s[i + 2] : 0);
        o[w++] = b64c[v >> 18 & 63];
        o[w++] = b64c[v >> 12 & 63];
        o[w++] = i + 1 < len ? b64c[v >> 6 & 63] : '=';
        o[w++] = i + 2 < len ? b64c[v & 63] : '=';
    }
    o[w] = '\0';
    json_t *j = json_string(o);
    free(o);
    return j;
}

int etcd_unb64(const char *in, char *out, size_t outlen)
{
    size_t w = 0;
    unsigned v = 0, bits = 0;
    for (const char *p = in; *p && *p != '='; p++) {
        const char *c = strchr(b64c, *p);
        if (!c)
            return -EINVAL;
        v = v << 6 | (unsigned)(c - b64c);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (w + 1 >= outlen)
                return -EINVAL;
            out[w++] = (char)(v >> bits & 0xff);
        }
    }
    if (!outlen)
        return -EINVAL;
    out[w] = '\0';
    return (int)w;
}

int64_t etcd_int(const json_t *o, const char *key, int64_t dflt)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return dflt;
}

int etcd_prefix_end(const char *prefix, char *end, size_t len)
{
    size_t n = tf_strlcpy(end, prefix, len);
    if (n == 0 || n >= len)
        return -EINVAL;
    end[n - 1]++;   /* prefixes here end in '/', never 0xff */
    return 0;
}
