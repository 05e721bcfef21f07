/*
 * post: sends reports to the controller (POST URL/api/v1/reports, bearer
 * token) from its own thread so that capture never waits on the network.
 *
 * Reports pass through a bounded FIFO (post_queue). When it is full the
 * oldest report is dropped and counted: a fresh report is worth more to the
 * controller than a stale one. A report the controller refuses (a 4xx but
 * 408 and 429: bad report, token, size) would be refused again: it is sent
 * once, dropped and counted as rejected, and the log gives the status and
 * the controller's error message. On a network error, a 5xx, 408 (request
 * timeout) or 429 (too many requests) it is tried up to post_opts.retries + 1
 * times with exponential backoff, or after the answer's Retry-After when
 * that is longer (at most POST_RETRY_AFTER_MAX_S); a report that still fails
 * is counted as an error and dropped. A refusal or failure whose line
 * (status and message) was logged less than POST_LOG_EVERY_S ago is only
 * counted (common/ratelog), and the next such line gives the count held
 * back, so that a probe the controller refuses every second does not write
 * a line every second.
 *
 * Invariants: the capture thread only ever takes the queue mutex for a
 * push (O(1), no I/O under the lock); the sender owns the report it is
 * sending; post_stop() returns within its deadline plus the curl timeouts'
 * abort latency (the transfer is aborted through the progress callback).
 */
#ifndef TF_POST_H
#define TF_POST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define POST_PATH "/api/v1/reports"
#define POST_URL_MAX 1024
#define POST_ANSWER_MAX 512   /* bytes of an error answer kept for the log */
#define POST_RETRY_AFTER_MAX_S 10 /* longest Retry-After honoured: reports go stale */
#define POST_LOG_EVERY_S 60.0 /* a repeated refusal is logged this often */

/* The bounded FIFO of JSON strings, usable (and tested) on its own. */
struct post_queue {
    char **item;
    size_t cap, head, n;
    uint64_t dropped;
};

int post_queue_init(struct post_queue *q, size_t cap);
void post_queue_free(struct post_queue *q);
/* Takes ownership of s. When full, frees the oldest item and counts it. */
void post_queue_push(struct post_queue *q, char *s);
/* Returns the oldest item (caller frees) or NULL when empty. */
char *post_queue_pop(struct post_queue *q);

struct post_opts {
    const char *url;          /* controller base URL, or the full reports URL */
    const char *token;        /* bearer token, or NULL */
    size_t queue_len;         /* default 16 */
    long connect_timeout_ms;  /* default 2000 */
    long timeout_ms;          /* default 5000 */
    unsigned retries;         /* default 3 */
    long backoff_ms;          /* first backoff, doubled per retry; default 250 */
};

struct post;

/* Builds the reports URL from a base URL, parsed by libcurl (CURLU): an
 * http or https URL with a host; appends POST_PATH to its path unless the
 * path already ends with it (trailing '/' dropped). -EINVAL for anything
 * else, -ENAMETOOLONG when the result does not fit len. */
int post_url(const char *base, char *out, size_t len);

/* Starts the sender thread. -EINVAL names the bad URL in the log. */
int post_start(struct post **out, const struct post_opts *o);
/* Queues a report (takes ownership of json). Never blocks on I/O. */
void post_submit(struct post *p, char *json);
/* Counters for the report's stats: dropped from a full queue, failed after
 * every retry, refused by the controller (4xx); rejected and sent may be NULL. */
void post_counters(struct post *p, uint64_t *dropped, uint64_t *errors, uint64_t *rejected, uint64_t *sent);
/* What an HTTP status means for a report: 0 accepted (2xx), -EBADMSG
 * refused for good (4xx but 408 and 429: drop it), -EAGAIN worth another
 * attempt (5xx, 408, 429, anything else). */
int post_status_class(long status);
/* Sends what is queued until deadline_s (seconds from now), then aborts any
 * transfer, joins the thread and frees everything. */
void post_stop(struct post *p, double deadline_s);

#endif
