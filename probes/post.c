/*
 * post: see post.h. One sender thread, one curl easy handle reused across
 * reports (keeps the connection alive), a mutex + condition variable around
 * the queue and the stop flag.
 */
#include "probes/post.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/ratelog.h"
#include "common/util.h"

int post_queue_init(struct post_queue *q, size_t cap)
{
    memset(q, 0, sizeof(*q));
    if (cap == 0)
        return -EINVAL;
    q->item = calloc(cap, sizeof(*q->item));
    if (!q->item)
        return -ENOMEM;
    q->cap = cap;
    return 0;
}

void post_queue_free(struct post_queue *q)
{
    char *s;
    while ((s = post_queue_pop(q)))
        free(s);
    free(q->item);
    q->item = NULL;
}

void post_queue_push(struct post_queue *q, char *s)
{
    if (q->n == q->cap) {
        free(post_queue_pop(q));
        q->dropped++;
    }
    q->item[(q->head + q->n) % q->cap] = s;
    q->n++;
}

char *post_queue_pop(struct post_queue *q)
{
    if (!q->n)
        return NULL;
    char *s = q->item[q->head];
    q->item[q->head] = NULL;
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return s;
}

int post_url(const char *base, char *out, size_t len)
{
    /* libcurl's own parser: the URL is read as the transfer will read it
     * (host, port, IPv6 literals, percent-encoding), and one it would refuse
     * is refused here, at start, naming it. */
    CURLU *u = curl_url();
    char *scheme = NULL, *path = NULL, *full = NULL;
    int r = -EINVAL;
    if (!u)
        return -ENOMEM;
    if (!base || curl_url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
        curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        goto out;
    size_t n = strlen(path), pl = strlen(POST_PATH);
    if (n < pl || strcmp(path + n - pl, POST_PATH) != 0) {
        char joined[POST_URL_MAX];
        while (n && path[n - 1] == '/')
            n--;
        int w = snprintf(joined, sizeof(joined), "%.*s%s", (int)n, path, POST_PATH);
        if (w < 0 || (size_t)w >= sizeof(joined)) {
            r = -ENAMETOOLONG;
            goto out;
        }
        if (curl_url_set(u, CURLUPART_PATH, joined, 0) != CURLUE_OK)
            goto out;
    }
    if (curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
        goto out;
    r = tf_strlcpy(out, full, len) >= len ? -ENAMETOOLONG : 0;
out:
    curl_free(full);
    curl_free(path);
    curl_free(scheme);
    curl_url_cleanup(u);
    return r;
}

struct post {
    pthread_t thr;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct post_queue q;
    bool stopping;            /* under mu: drain, then exit */
    atomic_bool abort_now;    /* read by curl's progress callback */
    uint64_t errors, sent;    /* under mu */
    uint64_t rejected;        /* under mu: 4xx answers, dropped unretried */
    char body[POST_ANSWER_MAX + 1]; /* the answer to the current attempt, cut */
    size_t body_len;
    long retry_after_s;       /* the last answer's Retry-After, capped; 0 if none */
    struct ratelog log;       /* a failure's line again only after POST_LOG_EVERY_S */
    CURL *curl;
    struct curl_slist *hdrs;
    char url[POST_URL_MAX];
    unsigned retries;
    long backoff_ms;
};

static int post_progress(void *u, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&((struct post *)u)->abort_now) ? 1 : 0;
}

/* Keeps the first POST_ANSWER_MAX bytes of the answer (the error object the
 * controller sends is far shorter) and discards the rest. */
static size_t post_keep(char *ptr, size_t sz, size_t n, void *u)
{
    struct post *p = u;
    size_t len = sz * n, room = POST_ANSWER_MAX - p->body_len;
    size_t k = len < room ? len : room;
    memcpy(p->body + p->body_len, ptr, k);
    p->body_len += k;
    p->body[p->body_len] = '\0';
    return len;
}

/* The controller's reason from {"error": {"message": ...}}, else the answer
 * itself (cut), so the log says why a report was refused. */
static void post_reason(const struct post *p, char *out, size_t len)
{
    json_t *o = json_loadb(p->body, p->body_len, 0, NULL);
    const char *m = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
    snprintf(out, len, "%s", m ? m : p->body_len ? p->body : "(no message)");
    json_decref(o);
}

int post_status_class(long status)
{
    if (status >= 200 && status <= 299)
        return 0;
    /* 408 and 429 say "not now", not "never": the same report may pass. */
    if (status == 408 || status == 429)
        return -EAGAIN;
    return status >= 400 && status <= 499 ? -EBADMSG : -EAGAIN;
}

/* Logs a failed attempt unless the same line (URL, status, message) was
 * logged less than POST_LOG_EVERY_S ago; then it is only counted, and the
 * next line written says how many were held back. */
static void post_log(struct post *p, const char *msg)
{
    uint64_t held;
    if (!ratelog_pass(&p->log, msg, tf_now_mono(), &held))
        return;
    if (held)
        log_warn("%s (%llu more like it held back)", msg, (unsigned long long)held);
    else
        log_warn("%s", msg);
}

/* One attempt: 0 on a 2xx answer, -EBADMSG when the controller refused the
 * report (a 4xx but 408 and 429: the same report would be refused again),
 * -EAGAIN when another attempt may succeed (network error, 5xx, 408, 429,
 * anything else; retry_after_s set from the answer). */
static int post_once(struct post *p, const char *json)
{
    p->body_len = 0;
    p->body[0] = '\0';
    curl_easy_setopt(p->curl, CURLOPT_POSTFIELDS, json);
    curl_easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
    CURLcode rc = curl_easy_perform(p->curl);
    char msg[POST_URL_MAX + POST_ANSWER_MAX + 128];
    p->retry_after_s = 0;
    if (rc != CURLE_OK) {
        snprintf(msg, sizeof(msg), "post %s: %s", p->url, curl_easy_strerror(rc));
        post_log(p, msg);
        return -EAGAIN;
    }
    long status = 0;
    curl_easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
    int r = post_status_class(status);
    if (r) {
        char why[POST_ANSWER_MAX + 1];
        curl_off_t ra = 0;
        if (curl_easy_getinfo(p->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
            p->retry_after_s = ra > POST_RETRY_AFTER_MAX_S ? POST_RETRY_AFTER_MAX_S : (long)ra;
        post_reason(p, why, sizeof(why));
        snprintf(msg, sizeof(msg), "post %s: HTTP status %ld: %s%s", p->url, status, why,
                 r == -EBADMSG ? " (report dropped: the controller refuses it)" : "");
        post_log(p, msg);
    }
    return r;
}

/* Sleeps for ms unless asked to abort; false when aborted. */
static bool post_backoff(struct post *p, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&p->mu);
    while (!atomic_load(&p->abort_now) &&
           pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&p->mu);
    return !atomic_load(&p->abort_now);
}

static void *post_thread(void *arg)
{
    struct post *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->q.n && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        char *json = post_queue_pop(&p->q);
        pthread_mutex_unlock(&p->mu);
        if (!json)
            break; /* stopping and drained */
        int r = -EIO;
        long wait = p->backoff_ms;
        for (unsigned t = 0; t <= p->retries && !atomic_load(&p->abort_now); t++) {
            long ra_ms = p->retry_after_s * 1000;
            if (t && !post_backoff(p, ra_ms > wait ? ra_ms : wait))
                break;
            if (t)
                wait *= 2;
            if ((r = post_once(p, json)) != -EAGAIN)
                break;
        }
        free(json);
        pthread_mutex_lock(&p->mu);
        if (r == 0)
            p->sent++;
        else if (r == -EBADMSG)
            p->rejected++;
        else
            p->errors++;
        pthread_mutex_unlock(&p->mu);
        if (atomic_load(&p->abort_now))
            break;
    }
    return NULL;
}

static void post_free(struct post *p)
{
    if (p->curl)
        curl_easy_cleanup(p->curl);
    curl_slist_free_all(p->hdrs);
    post_queue_free(&p->q);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static int post_setup_curl(struct post *p, const struct post_opts *o)
{
    char auth[320];
    p->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (p->hdrs && o->token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", o->token);
        struct curl_slist *h = curl_slist_append(p->hdrs, auth);
        p->hdrs = h ? h : p->hdrs;
        if (!h)
            return -ENOMEM;
    }
    p->curl = curl_easy_init();
    if (!p->hdrs || !p->curl)
        return -ENOMEM;
    CURL *c = p->curl;
    curl_easy_setopt(c, CURLOPT_URL, p->url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, p->hdrs);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 2000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms > 0 ? o->timeout_ms : 5000L);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, post_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, p);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, post_keep);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, p);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    return 0;
}

static void post_global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int post_start(struct post **out, const struct post_opts *o)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, post_global_init);
    struct post *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->abort_now, false);
    p->log = (struct ratelog)RATELOG_INIT(POST_LOG_EVERY_S);
    p->retries = o->retries;
    p->backoff_ms = o->backoff_ms > 0 ? o->backoff_ms : 250;
    int r = post_url(o->url, p->url, sizeof(p->url));
    if (r < 0) {
        log_err("--controller '%s': %s", o->url ? o->url : "",
                r == -EINVAL ? "not an http:// or https:// URL with a host" : "URL too long");
    } else if ((r = post_queue_init(&p->q, o->queue_len ? o->queue_len : 16)) == 0 &&
               (r = post_setup_curl(p, o)) == 0) {
        /* The sender takes no signals: SIGHUP, SIGTERM and SIGINT must
         * interrupt the capture thread's poll, which acts on them. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        r = -pthread_create(&p->thr, NULL, post_thread, p);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (r < 0) {
        post_free(p);
        return r;
    }
    *out = p;
    return 0;
}

void post_submit(struct post *p, char *json)
{
    pthread_mutex_lock(&p->mu);
    post_queue_push(&p->q, json);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void post_counters(struct post *p, uint64_t *dropped, uint64_t *errors, uint64_t *rejected, uint64_t *sent)
{
    pthread_mutex_lock(&p->mu);
    *dropped = p->q.dropped;
    *errors = p->errors;
    if (rejected)
        *rejected = p->rejected;
    if (sent)
        *sent = p->sent;
    pthread_mutex_unlock(&p->mu);
}

void post_stop(struct post *p, double deadline_s)
{
    if (!p)
        return;
    double end = tf_now_mono() + deadline_s;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    /* Wait for the queue to drain and the sender to finish, or the deadline. */
    while (tf_now_mono() < end) {
        bool idle = p->q.n == 0;
        pthread_mutex_unlock(&p->mu);
        if (idle && pthread_tryjoin_np(p->thr, NULL) == 0)
            goto joined;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&p->mu);
    }
    atomic_store(&p->abort_now, true);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thr, NULL);
joined:
    if (p->q.n)
        log_warn("post %s: %zu report(s) not sent before exit", p->url, p->q.n);
    post_free(p);
}
