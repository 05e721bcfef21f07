/* Unit tests for probes/post against a small HTTP server in a thread of the
 * test (loopback, one request a connection, the answers scripted): a 400 is
 * sent once, counted as rejected and logged with the controller's reason; a
 * 408 or 429 is tried again, after Retry-After when it says so; a 5xx is
 * tried again and counted as an error when every attempt fails; the same
 * refusal repeated is logged once, not once a report (issue 12, item 6). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "probes/post.h"

#define SRV_MAX 32

struct srv {
    int fd, port;
    pthread_t thr;
    int status[SRV_MAX], nstatus; /* the answer to request i (the last repeats) */
    int retry_after;              /* seconds, sent with 408/429 when > 0 */
    atomic_int count;
    double t[SRV_MAX];            /* when each request arrived */
};

/* Reads one request (headers, then Content-Length bytes of body). */
static void read_request(int c)
{
    char buf[65536];
    size_t n = 0;
    char *end = NULL;
    while (n < sizeof(buf) - 1 && !end) {
        ssize_t r = recv(c, buf + n, sizeof(buf) - 1 - n, 0);
        if (r <= 0)
            return;
        n += (size_t)r;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end)
        return;
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0, have = n - (size_t)(end + 4 - buf);
    while (have < want) {
        ssize_t r = recv(c, buf, sizeof(buf), 0);
        if (r <= 0)
            return;
        have += (size_t)r;
    }
}

static void *srv_main(void *arg)
{
    struct srv *s = arg;
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            return NULL;
        read_request(c);
        int i = atomic_fetch_add(&s->count, 1);
        if (i < SRV_MAX)
            s->t[i] = tf_now_mono();
        int st = s->status[i < s->nstatus ? i : s->nstatus - 1];
        char body[128], hdr[128] = "", resp[512];
        int bl = snprintf(body, sizeof(body), "{\"error\": {\"code\": \"test\", \"message\": \"refused by the test (%d)\"}}", st);
        if (s->retry_after > 0 && (st == 408 || st == 429))
            snprintf(hdr, sizeof(hdr), "Retry-After: %d\r\n", s->retry_after);
        int rl = snprintf(resp, sizeof(resp), "HTTP/1.1 %d Test\r\nContent-Type: application/json\r\n"
                          "Content-Length: %d\r\nConnection: close\r\n%s\r\n%s", st, bl, hdr, body);
        ssize_t w = send(c, resp, (size_t)rl, MSG_NOSIGNAL);
        (void)w;
        close(c);
    }
}

static void srv_start(struct srv *s, const int *status, int n, int retry_after)
{
    memset(s, 0, sizeof(*s));
    memcpy(s->status, status, sizeof(int) * (size_t)n);
    s->nstatus = n;
    s->retry_after = retry_after;
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(s->fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    assert_int_equal(bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(s->fd, 16), 0);
    assert_int_equal(getsockname(s->fd, (struct sockaddr *)&sa, &sl), 0);
    s->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&s->thr, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv *s)
{
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->thr, NULL);
    close(s->fd);
}

/* The log (stderr) of what runs between log_begin and log_end, in buf. */
static int saved_err = -1;
static FILE *log_file;

static void log_begin(void)
{
    fflush(stderr);
    log_file = tmpfile();
    assert_non_null(log_file);
    saved_err = dup(2);
    dup2(fileno(log_file), 2);
}

static void log_end(char *buf, size_t len)
{
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    rewind(log_file);
    size_t n = fread(buf, 1, len - 1, log_file);
    buf[n] = '\0';
    fclose(log_file);
    fputs(buf, stderr); /* still shown with the test's output */
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* Sends n reports to a server answering status (scripted), waits for the
 * sender to finish, and returns its counters in c[4] (dropped, errors,
 * rejected, sent). */
static void run(struct srv *s, int n, uint64_t c[4], char *log, size_t loglen)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", s->port);
    struct post_opts o = {.url = url, .retries = 2, .backoff_ms = 50};
    struct post *p;
    log_begin();
    assert_int_equal(post_start(&p, &o), 0);
    for (int i = 0; i < n; i++)
        post_submit(p, strdup("{\"probe\": \"L1\"}"));
    /* post_stop drains the queue: wait for every answer first, so that
     * the counters read below are final. */
    int want = n, waited = 0;
    while (waited++ < 500) {
        uint64_t d, e, r, sent;
        post_counters(p, &d, &e, &r, &sent);
        if ((int)(e + r + sent + d) >= want)
            break;
        usleep(10000);
    }
    post_counters(p, &c[0], &c[1], &c[2], &c[3]);
    post_stop(p, 2.0);
    log_end(log, loglen);
}

static void test_status_classes(void **state)
{
    (void)state;
    assert_int_equal(post_status_class(200), 0);
    assert_int_equal(post_status_class(400), -EBADMSG);
    assert_int_equal(post_status_class(401), -EBADMSG);
    assert_int_equal(post_status_class(404), -EBADMSG);
    assert_int_equal(post_status_class(413), -EBADMSG);
    assert_int_equal(post_status_class(408), -EAGAIN); /* request timeout: not the report's fault */
    assert_int_equal(post_status_class(429), -EAGAIN); /* too many requests: later */
    assert_int_equal(post_status_class(500), -EAGAIN);
    assert_int_equal(post_status_class(503), -EAGAIN);
}

static void test_400_once_with_reason(void **state)
{
    (void)state;
    struct srv s;
    static const int st[] = {400};
    srv_start(&s, st, 1, 0);
    uint64_t c[4];
    char log[8192];
    run(&s, 1, c, log, sizeof(log));
    srv_stop(&s);
    assert_int_equal(atomic_load(&s.count), 1);   /* sent once, not retried */
    assert_int_equal(c[2], 1);                    /* rejected */
    assert_int_equal(c[1] + c[3], 0);
    assert_non_null(strstr(log, "HTTP status 400: refused by the test (400) (report dropped: the controller refuses it)"));
}

/* A 429 saying Retry-After: 1 is tried again a second later (the backoff
 * alone would be 50 ms), and then goes through. */
static void test_429_retried_after(void **state)
{
    (void)state;
    struct srv s;
    static const int st[] = {429, 200};
    srv_start(&s, st, 2, 1);
    uint64_t c[4];
    char log[8192];
    run(&s, 1, c, log, sizeof(log));
    srv_stop(&s);
    assert_int_equal(atomic_load(&s.count), 2);
    assert_int_equal(c[3], 1); /* sent */
    assert_int_equal(c[1] + c[2], 0);
    assert_true(s.t[1] - s.t[0] >= 0.9);
    assert_non_null(strstr(log, "HTTP status 429: refused by the test (429)"));
    assert_null(strstr(log, "report dropped"));
}

static void test_408_and_5xx_retried(void **state)
{
    (void)state;
    struct srv s;
    static const int st[] = {408, 200};
    srv_start(&s, st, 2, 0);
    uint64_t c[4];
    char log[8192];
    run(&s, 1, c, log, sizeof(log));
    srv_stop(&s);
    assert_int_equal(atomic_load(&s.count), 2);
    assert_int_equal(c[3], 1);
    static const int st5[] = {503};
    srv_start(&s, st5, 1, 0);
    run(&s, 1, c, log, sizeof(log));
    srv_stop(&s);
    assert_int_equal(atomic_load(&s.count), 3); /* retries 2: three attempts */
    assert_int_equal(c[1], 1);                  /* then an error */
    assert_int_equal(c[2] + c[3], 0);
}

/* Five reports refused alike: each sent once and counted, one log line. */
static void test_repeated_refusal_logged_once(void **state)
{
    (void)state;
    struct srv s;
    static const int st[] = {400};
    srv_start(&s, st, 1, 0);
    uint64_t c[4];
    char log[16384];
    run(&s, 5, c, log, sizeof(log));
    srv_stop(&s);
    assert_int_equal(atomic_load(&s.count), 5);
    assert_int_equal(c[2], 5);
    assert_int_equal(count_of(log, "HTTP status 400"), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_classes),
        cmocka_unit_test(test_400_once_with_reason),
        cmocka_unit_test(test_429_retried_after),
        cmocka_unit_test(test_408_and_5xx_retried),
        cmocka_unit_test(test_repeated_refusal_logged_once),
    };
    return cmocka_run_group_tests_name("post", tests, NULL, NULL);
}
