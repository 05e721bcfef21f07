/*
 * httpd_conn: see httpd_conn.h.
 */
#include "controller/httpd_conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/config.h"

#define WATCH_PERIOD_NS 100000000L /* the deadline watchdog's period: 0.1 s */
#define LOG_EVERY 10.0          /* s between two log lines on refused or cut connections */

/* One TCP connection, from accept to close: MHD's socket context. The
 * watchdog shuts it down once its deadline passes (header or body); the
 * list gives the per-address connection counts. */
struct httpd_conn {
    struct httpd_conn *prev, *next;
    int fd;
    uint8_t addr[16];
    double deadline;             /* monotonic s; 0 while a reply is made or sent */
    bool body;                   /* the deadline is the body's (else the header's) */
    bool cut;                    /* shut down by the watchdog */
};

/* A client address as 16 bytes (IPv4 as ::ffff:a.b.c.d), the key of the
 * rate limiter and of the per-address connection count. */
static void addr_key(const struct sockaddr *sa, uint8_t a[16])
{
    memset(a, 0, 16);
    if (sa && sa->sa_family == AF_INET) {
        a[10] = a[11] = 0xff;
        memcpy(a + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6) {
        memcpy(a, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    }
}

const char *httpd_conns_addr_str(const uint8_t a[16], char *buf, size_t len)
{
    static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a, v4, 12) == 0 ? tf_addr_str(4, a + 12, buf, len) : tf_addr_str(6, a, buf, len);
}

bool httpd_conns_addr(struct MHD_Connection *c, uint8_t a[16])
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    addr_key(sa, a);
    return sa && (sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
}

/* ---- connections: per-address limit and deadlines ----------------------- */

/* MHD's accept policy: at most limits.max_connections_per_addr open
 * connections from one address, so that one client (a slowloris) cannot
 * hold every slot. Counted from the tracked list; connections accepted at
 * the same instant by different workers may pass the limit by at most
 * limits.threads - 1. */
enum MHD_Result httpd_conns_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
    (void)len;
    struct httpd_conns *cs = cls;
    uint8_t a[16];
    addr_key(sa, a);
    long n = 0;
    pthread_mutex_lock(&cs->mu);
    for (const struct httpd_conn *t = cs->list; t; t = t->next)
        n += memcmp(t->addr, a, 16) == 0;
    bool ok = n < cs->cfg->max_connections_per_addr;
    if (!ok) {
        cs->refused++;
        httpd_conns_addr_str(a, cs->last_addr, sizeof(cs->last_addr));
    }
    pthread_mutex_unlock(&cs->mu);
    return ok ? MHD_YES : MHD_NO;
}

void httpd_conns_notify(void *cls, struct MHD_Connection *c, void **sctx, enum MHD_ConnectionNotificationCode code)
{
    struct httpd_conns *cs = cls;
    struct httpd_conn *t = *sctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fi || !(t = calloc(1, sizeof(*t))))
            return; /* untracked: no deadline, not counted (out of memory only) */
        t->fd = fi->connect_fd;
        httpd_conns_addr(c, t->addr);
        t->deadline = tf_now_mono() + cs->cfg->header_timeout;
        pthread_mutex_lock(&cs->mu);
        t->next = cs->list;
        if (cs->list)
            cs->list->prev = t;
        cs->list = t;
        pthread_mutex_unlock(&cs->mu);
        *sctx = t;
        return;
    }
    if (!t)
        return;
    /* MHD closes the socket after this returns: once t is unlinked, the
     * watchdog can no longer shut down a descriptor number reused since. */
    pthread_mutex_lock(&cs->mu);
    if (t->prev)
        t->prev->next = t->next;
    else
        cs->list = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&cs->mu);
    free(t);
    *sctx = NULL;
}

void httpd_conns_deadline(struct httpd_conns *cs, struct MHD_Connection *c, double secs, bool body)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct httpd_conn *t = ci ? ci->socket_context : NULL;
    if (!t)
        return;
    double d = secs > 0 ? tf_now_mono() + secs : 0;
    pthread_mutex_lock(&cs->mu);
    t->deadline = d;
    t->body = body;
    pthread_mutex_unlock(&cs->mu);
}

/* The watchdog: libmicrohttpd's connection_timeout is an idle timeout,
 * reset by every byte, so a client trickling a header or a body would hold
 * its connection forever. A connection past its total deadline is shut
 * down (MHD then sees the end of the stream and closes it). Refusals and
 * cuts are logged at most every LOG_EVERY seconds, as counts. */
static void *watchdog(void *arg)
{
    struct httpd_conns *cs = arg;
    const struct timespec period = {0, WATCH_PERIOD_NS};
    while (!__atomic_load_n(&cs->stopping, __ATOMIC_ACQUIRE)) {
        nanosleep(&period, NULL);
        double now = tf_now_mono();
        unsigned long refused = 0, cut_h = 0, cut_b = 0;
        char addr[INET6_ADDRSTRLEN] = "";
        pthread_mutex_lock(&cs->mu);
        for (struct httpd_conn *t = cs->list; t; t = t->next)
            if (t->deadline > 0 && now > t->deadline && !t->cut) {
                shutdown(t->fd, SHUT_RDWR);
                t->cut = true;
                t->body ? cs->cut_body++ : cs->cut_header++;
                httpd_conns_addr_str(t->addr, cs->last_addr, sizeof(cs->last_addr));
            }
        if ((cs->refused || cs->cut_header || cs->cut_body) && now - cs->last_log >= LOG_EVERY) {
            refused = cs->refused;
            cut_h = cs->cut_header;
            cut_b = cs->cut_body;
            tf_strlcpy(addr, cs->last_addr, sizeof(addr));
            cs->refused = cs->cut_header = cs->cut_body = 0;
            cs->last_log = now;
        }
        pthread_mutex_unlock(&cs->mu);
        if (refused)
            log_warn("httpd: refused %lu connection%s from an address that had limits.max_connections_per_addr "
                     "(%ld) open (last: %s)", refused, refused == 1 ? "" : "s", cs->cfg->max_connections_per_addr,
                     addr);
        if (cut_h || cut_b)
            log_warn("httpd: closed %lu connection%s without a complete request header within "
                     "limits.header_timeout (%g s) and %lu without a complete body within limits.body_timeout "
                     "(%g s) (last: %s)", cut_h, cut_h == 1 ? "" : "s", cs->cfg->header_timeout, cut_b,
                     cs->cfg->body_timeout, addr);
    }
    return NULL;
}

int httpd_conns_start(struct httpd_conns *cs, const struct config *cfg)
{
    cs->cfg = cfg;
    cs->last_log = -LOG_EVERY;
    pthread_mutex_init(&cs->mu, NULL);
    if (pthread_create(&cs->watch, NULL, watchdog, cs) != 0) {
        pthread_mutex_destroy(&cs->mu);
        return -EAGAIN;
    }
    cs->watching = true;
    return 0;
}

void httpd_conns_stop(struct httpd_conns *cs)
{
    if (!cs->watching)
        return;
    __atomic_store_n(&cs->stopping, 1, __ATOMIC_RELEASE);
    pthread_join(cs->watch, NULL);
    cs->watching = false;
    pthread_mutex_destroy(&cs->mu);
}
