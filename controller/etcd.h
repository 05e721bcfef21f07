/*
 * etcd: a client for etcd's v3 HTTP/JSON gateway (the grpc-gateway every
 * etcd 3.4+ member serves on its client URL: POST /v3/<service>/<method>
 * with the protobuf message as JSON, bytes as base64, 64-bit integers as
 * strings). libcurl for the transport, jansson for the messages.
 *
 * Invariants: one struct etcd per thread (a curl handle is not shared);
 * a call tries the endpoints in turn, starting with the last one that
 * answered, so that a dead member costs one connect timeout once; an answer
 * is at most ETCD_ANSWER_MAX bytes; with a user name the client
 * authenticates (/v3/auth/authenticate) and sends the token, authenticating
 * again once when etcd says the token is no longer valid. A call aborts
 * within about a second of *stop becoming true (libcurl's progress
 * callback, called about once a second on an idle transfer). Errors return
 * a negative errno and put the endpoint and etcd's own message into the
 * client's err.
 */
#ifndef TF_ETCD_H
#define TF_ETCD_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ETCD_MAX_ENDPOINTS 8
#define ETCD_URL_MAX 256
#define ETCD_ANSWER_MAX (4 << 20)

struct config;

struct etcd {
    void *curl;
    char ep[ETCD_MAX_ENDPOINTS][ETCD_URL_MAX];
    unsigned nep, cur;
    char ca[256], cert[256], key[256];
    char user[128], password[256];
    char token[512];                  /* auth token, "" none yet */
    const atomic_bool *stop;          /* may be NULL */
    char err[384];
};

/* Client for the config's ha.* keys. -EINVAL with err naming the key. */
int etcd_open(struct etcd *e, const struct config *c, const atomic_bool *stop, char *err, size_t errlen);
void etcd_close(struct etcd *e);
/* POST path (e.g. "/v3/kv/range") with req (not consumed); *resp gets the
 * decoded answer of a 200. timeout_ms bounds the whole call per endpoint
 * (0: no bound, for a campaign that waits to win). */
int etcd_call(struct etcd *e, const char *path, json_t *req, long timeout_ms, json_t **resp);
/* A streaming call (election observe, watch): POST path with req to one
 * member and hand every message of the answer to cb as it arrives, until
 * the stream ends, fails or *stop (then -ECANCELED). The next call asks the
 * next member when this one failed. 0 when the stream ended cleanly. */
int etcd_stream(struct etcd *e, const char *path, json_t *req, void (*cb)(void *arg, json_t *msg), void *arg);
/* base64 of len bytes as a jansson string (the gateway's bytes fields). */
json_t *etcd_b64(const void *data, size_t len);
/* Decodes a base64 field into out (NUL-terminated, for text); the decoded
 * length, or -EINVAL when it is no base64 or does not fit. */
int etcd_unb64(const char *in, char *out, size_t outlen);
/* A gateway int64 (a string, or a number) or dflt when absent. */
int64_t etcd_int(const json_t *o, const char *key, int64_t dflt);
/* The key range [prefix, prefix + 1) as a range request's fields. */
int etcd_prefix_end(const char *prefix, char *end, size_t len);

#endif
