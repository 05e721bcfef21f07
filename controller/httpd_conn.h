/*
 * httpd_conn: httpd's connections from accept to close, for the limits a
 * single client could otherwise exhaust: at most
 * limits.max_connections_per_addr open connections per client address
 * (MHD's accept policy), and a total deadline for a request's header
 * (limits.header_timeout) and for its body (limits.body_timeout), enforced
 * by a watchdog thread that shuts late connections down (libmicrohttpd's
 * own timeout is an idle one, reset by every byte). Refusals and cuts are
 * logged as counts, at most every 10 s.
 *
 * Invariants: mu guards the list, the counters and the log state; a
 * connection is unlinked before MHD closes its socket, so the watchdog
 * never shuts down a descriptor number reused since. Addresses are keyed
 * as 16 bytes (IPv4 as ::ffff:a.b.c.d), the rate limiter's key too.
 */
#ifndef TF_HTTPD_CONN_H
#define TF_HTTPD_CONN_H

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct config;
struct httpd_conn;

struct httpd_conns {
    const struct config *cfg;
    pthread_mutex_t mu;
    struct httpd_conn *list;
    pthread_t watch;
    bool watching;
    int stopping;                /* atomic */
    unsigned long refused, cut_header, cut_body;
    char last_addr[INET6_ADDRSTRLEN];
    double last_log;
};

/* Starts the watchdog (cs zeroed before); 0, or -EAGAIN when its thread cannot start. */
int  httpd_conns_start(struct httpd_conns *cs, const struct config *cfg);
/* Stops the watchdog, once MHD has stopped (no connection is left). */
void httpd_conns_stop(struct httpd_conns *cs);
/* MHD_AcceptPolicyCallback and MHD_NotifyConnectionCallback; cls is cs. */
enum MHD_Result httpd_conns_accept(void *cls, const struct sockaddr *sa, socklen_t len);
void httpd_conns_notify(void *cls, struct MHD_Connection *c, void **sctx, enum MHD_ConnectionNotificationCode code);
/* Starts the connection's next deadline: secs from now (0: none); body
 * says whose deadline it is (the log tells header and body apart). */
void httpd_conns_deadline(struct httpd_conns *cs, struct MHD_Connection *c, double secs, bool body);
/* The client's address as the 16-byte key; false when it is not IPv4 or
 * IPv6 (a is then all zero). */
bool httpd_conns_addr(struct MHD_Connection *c, uint8_t a[16]);
/* The key as text ("10.0.0.1", "2001:db8::1"). */
const char *httpd_conns_addr_str(const uint8_t a[16], char *buf, size_t len);

#endif
