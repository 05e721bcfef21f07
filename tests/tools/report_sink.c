/*
 * report_sink: a minimal HTTP receiver for the probe's POST tests.
 *
 *   report_sink ADDR PORT OUTFILE [STATUS]
 *
 * Accepts any request on ADDR:PORT (libmicrohttpd, one thread), answers
 * STATUS (default 200) and appends one line per request to OUTFILE:
 *   METHOD <TAB> PATH <TAB> AUTHORIZATION-HEADER <TAB> BODY
 * (a body holding a tab or newline is written as "-": the probe's compact
 * JSON never does). Bodies are capped at 1 MiB. Runs until SIGINT/SIGTERM.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SINK_MAX_BODY (1u << 20)

static FILE *sink_out;
static unsigned sink_status = 200;
static volatile sig_atomic_t sink_stop;

struct req {
    char *buf;
    size_t len;
    int too_big;
};

static void on_sig(int s)
{
    (void)s;
    sink_stop = 1;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *size, void **con_cls)
{
    (void)cls, (void)version;
    struct req *r = *con_cls;
    if (!r) {
        *con_cls = calloc(1, sizeof(struct req));
        return *con_cls ? MHD_YES : MHD_NO;
    }
    if (*size) {
        if (r->too_big || r->len + *size > SINK_MAX_BODY) {
            r->too_big = 1;
        } else {
            char *n = realloc(r->buf, r->len + *size + 1);
            if (!n)
                return MHD_NO;
            memcpy(n + r->len, data, *size);
            r->buf = n;
            r->len += *size;
            r->buf[r->len] = '\0';
        }
        *size = 0;
        return MHD_YES;
    }
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *body = r->buf && !r->too_big && !strpbrk(r->buf, "\t\n") ? r->buf : "-";
    fprintf(sink_out, "%s\t%s\t%s\t%s\n", method, url, auth ? auth : "-", body);
    fflush(sink_out);
    static const char ok[] = "{}";
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(sizeof(ok) - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(c, sink_status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void done(void *cls, struct MHD_Connection *c, void **con_cls,
                 enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)c, (void)toe;
    struct req *r = *con_cls;
    if (r) {
        free(r->buf);
        free(r);
    }
    *con_cls = NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: report_sink ADDR PORT OUTFILE [STATUS]\n");
        return 2;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
        fprintf(stderr, "report_sink: bad address '%s'\n", argv[1]);
        return 2;
    }
    if (argc == 5)
        sink_status = (unsigned)atoi(argv[4]);
    sink_out = fopen(argv[3], "a");
    if (!sink_out) {
        perror(argv[3]);
        return 1;
    }
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &sa,
        MHD_OPTION_NOTIFY_COMPLETED, done, NULL, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "report_sink: cannot listen on %s:%s\n", argv[1], argv[2]);
        return 1;
    }
    signal(SIGINT, on_sig);
    signal(SIGTERM, on_sig);
    while (!sink_stop)
        sleep(1); /* a signal between the test and the call would block pause() */
    MHD_stop_daemon(d);
    fclose(sink_out);
    return 0;
}
