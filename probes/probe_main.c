/*
 * tierflow-probe: the program around probes/probe.c (the probe itself):
 * reads the options (tierflow-probe(1), DESIGN 2.3) into struct
 * probe_opts, sets up logging and the signals, and runs the probe.
 *
 * Signals: SIGINT and SIGTERM flush a final report and exit; SIGHUP reads
 * --mirror-map again (probe.h says what a reload does). Handlers only set
 * the probe's flags; its loops act on them.
 *
 * Exit status: 0 on success (also after SIGINT/SIGTERM, which flush a final
 * report), 1 when a source fails (open or read; a read error still prints
 * the report of what was read first), 2 on a usage error.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/reportspec.h"
#include "common/util.h"
#include "common/version.h"
#include "probes/flowtab.h"
#include "probes/mirror.h"
#include "probes/post.h"
#include "probes/probe.h"
#include "probes/report.h"

/* ---- options ---------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: tierflow-probe -i IFACE [-i IFACE ...] | -r FILE\n"
        "         [--counters IFACE ...]\n"
        "         [--node NAME] [--controller URL ...] [--token-file F] [--interval SEC]\n"
        "         [--fat-share 0.10] [--link-gbps N] [--filter BPF] [--format json|table]\n"
        "         [--max-flows N] [--top N] [--snaplen N] [--buffer-size MB]\n"
        "         [--idle-timeout SEC] [--file-reader auto|libpcap] [--inbound] [--log-level LEVEL]\n"
        "         [--journal] [--mid-report on|off]\n"
        "         [--help] [--version]\n"
        "       switch telemetry (sFlow v5, ERSPAN), with -i, -r or on its own:\n"
        "         [--sflow-listen [ADDR:]PORT] [--mirror-map FILE] [--telemetry]\n"
        "         [--telemetry-allow PREFIX[,PREFIX...]] [--telemetry-max-unmapped N]\n"
        "See tierflow-probe(1).\n");
}

enum { O_NODE = 256, O_CTL, O_TOKEN, O_IVL, O_FAT, O_GBPS, O_FILTER, O_FMT, O_MAXF, O_TOP,
       O_SNAP, O_BUF, O_IDLE, O_LOG, O_HELP, O_VER, O_MAP, O_SFLOW, O_TEL, O_READER, O_ALLOW,
       O_MAXUN, O_INBOUND, O_JOURNAL, O_COUNTERS, O_MID };

static const struct option long_opts[] = {
    {"interface", required_argument, 0, 'i'}, {"read", required_argument, 0, 'r'},
    {"node", required_argument, 0, O_NODE}, {"controller", required_argument, 0, O_CTL},
    {"token-file", required_argument, 0, O_TOKEN}, {"interval", required_argument, 0, O_IVL},
    {"fat-share", required_argument, 0, O_FAT}, {"link-gbps", required_argument, 0, O_GBPS},
    {"filter", required_argument, 0, O_FILTER}, {"format", required_argument, 0, O_FMT},
    {"max-flows", required_argument, 0, O_MAXF}, {"top", required_argument, 0, O_TOP},
    {"snaplen", required_argument, 0, O_SNAP}, {"buffer-size", required_argument, 0, O_BUF},
    {"idle-timeout", required_argument, 0, O_IDLE}, {"log-level", required_argument, 0, O_LOG},
    {"help", no_argument, 0, O_HELP}, {"version", no_argument, 0, O_VER},
    {"mirror-map", required_argument, 0, O_MAP}, {"sflow-listen", required_argument, 0, O_SFLOW},
    {"telemetry", no_argument, 0, O_TEL}, {"file-reader", required_argument, 0, O_READER},
    {"inbound", no_argument, 0, O_INBOUND}, {"journal", no_argument, 0, O_JOURNAL},
    {"telemetry-allow", required_argument, 0, O_ALLOW},
    {"telemetry-max-unmapped", required_argument, 0, O_MAXUN},
    {"counters", required_argument, 0, O_COUNTERS}, {"mid-report", required_argument, 0, O_MID},
    {0, 0, 0, 0},
};

static int bad_opt(const char *name, const char *val, const char *why)
{
    return tf_bad_arg("tierflow-probe", name, val, why);
}

static int num_opt(const char *name, const char *val, double lo, double hi, double *out)
{
    char why[96];
    if (tf_parse_double(val, lo, hi, out) == 0)
        return 0;
    snprintf(why, sizeof(why), "must be a number in %g..%g", lo, hi);
    return bad_opt(name, val, why);
}

static int int_opt(const char *name, const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char why[96];
    if (tf_parse_u64(val, lo, hi, out) == 0)
        return 0;
    snprintf(why, sizeof(why), "must be an integer in %llu..%llu", (unsigned long long)lo,
             (unsigned long long)hi);
    return bad_opt(name, val, why);
}

/* An interface of -i (captured) or --counters (counters only) appended to
 * list: one name in one list once, 64 in both together (the report's links). */
static int if_opt(const char *opt, const char *a, const struct probe_opts *o, const char **list, size_t *n)
{
    if (o->nifs + o->ncounters == PROBE_MAX_IF)
        return bad_opt(opt, a, "too many interfaces (at most 64 with -i and --counters together)");
    if (!reportspec_name_ok(a, REPORTSPEC_IF_MAX) || strchr(a, '/'))
        return bad_opt(opt, a, "not an interface name (1..15 printable characters)");
    for (size_t i = 0; i < o->nifs + o->ncounters; i++)
        if (strcmp(i < o->nifs ? o->ifs[i] : o->counter_ifs[i - o->nifs], a) == 0)
            return bad_opt(opt, a, "already given (with -i or --counters): one interface, one link in the report");
    list[(*n)++] = a;
    return 0;
}

/* PREFIX[,PREFIX...] appended to o->allow. */
static int allow_opt(const char *val, struct probe_opts *o)
{
    char buf[4096];
    if (tf_strlcpy(buf, val, sizeof(buf)) >= sizeof(buf))
        return bad_opt("--telemetry-allow", "...", "longer than 4095 bytes");
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        struct mirror_prefix *p = &o->allow[o->nallow];
        if (o->nallow == PROBE_MAX_ALLOW)
            return bad_opt("--telemetry-allow", val, "more than 64 prefixes");
        if (tf_prefix_parse(t, &p->af, p->addr, &p->plen) < 0)
            return bad_opt("--telemetry-allow", t, "not an address prefix (ADDR/LEN or ADDR, IPv4 or IPv6)");
        o->nallow++;
    }
    if (!o->nallow)
        return bad_opt("--telemetry-allow", val, "needs at least one prefix");
    return 0;
}

/* One option c with its value a (n: the option as written); 0, a usage
 * error's status, or -1 after --help / --version. */
static int one_opt(int c, const char *a, const char *n, struct probe_opts *o, bool *node_given)
{
    int r = 0;
    switch (c) {
    case 'i':
        r = if_opt("-i", a, o, o->ifs, &o->nifs);
        break;
    case O_COUNTERS:
        r = if_opt("--counters", a, o, o->counter_ifs, &o->ncounters);
        break;
    case 'r':
        r = o->file ? bad_opt("-r", a, "only one file can be read") : 0;
        o->file = a;
        break;
    case O_NODE:
        if (!reportspec_name_ok(a, REPORTSPEC_PROBE_MAX))
            r = bad_opt("--node", a, "must be 1..31 printable ASCII characters without spaces "
                                     "(a topology node name, as the controller takes it)");
        else
            tf_strlcpy(o->node, a, sizeof(o->node));
        *node_given = true;
        break;
    case O_CTL: {
        char url[POST_URL_MAX];
        if (o->nctl == PROBE_MAX_CTL) {
            char why[48];
            snprintf(why, sizeof(why), "at most %d controllers", PROBE_MAX_CTL);
            return bad_opt("--controller", a, why);
        }
        if (post_url(a, url, sizeof(url)) < 0)
            return bad_opt("--controller", a, "not an http:// or https:// URL with a host");
        o->controller[o->nctl++] = a;
        break;
    }
    case O_TOKEN: o->token_file = a; break;
    case O_IVL: r = num_opt("--interval", a, 0.01, 3600, &o->interval); break;
    case O_FAT: r = num_opt("--fat-share", a, 0.001, 1.0, &o->fat_share); break;
    case O_GBPS: r = num_opt("--link-gbps", a, 0.000001, 100000, &o->link_gbps); break;
    case O_IDLE: r = num_opt("--idle-timeout", a, 0, 86400, &o->idle_timeout); break;
    case O_FILTER:
        r = strlen(a) > 4096 ? bad_opt("--filter", "...", "longer than 4096 bytes") : 0;
        o->filter = a;
        break;
    case O_FMT:
        if (strcmp(a, "json") == 0)
            o->fmt = REPORT_JSON;
        else if (strcmp(a, "table") == 0)
            o->fmt = REPORT_TABLE;
        else
            r = bad_opt("--format", a, "must be json or table");
        break;
    case O_MAXF: r = int_opt("--max-flows", a, 1, FLOWTAB_MAX_FLOWS, &o->max_flows); break;
    case O_TOP: r = int_opt("--top", a, 0, 10000, &o->top); break;
    case O_SNAP: r = int_opt("--snaplen", a, 64, 262144, &o->snaplen); break;
    case O_BUF: r = int_opt("--buffer-size", a, 1, 4096, &o->buffer_mb); break;
    case O_LOG:
        if ((o->log_level = log_level_parse(a)) < 0)
            r = bad_opt("--log-level", a, "must be error, warning, notice, info or debug");
        break;
    case O_MAP: o->mirror_map = a; o->telemetry = true; break;
    case O_SFLOW: o->sflow_listen = a; o->telemetry = true; break;
    case O_TEL: o->telemetry = true; break;
    case O_INBOUND: o->inbound = true; break;
    case O_JOURNAL: o->journal = true; break;
    case O_ALLOW: r = allow_opt(a, o); o->telemetry = true; break;
    case O_MAXUN:
        r = int_opt("--telemetry-max-unmapped", a, 0, MIRROR_MAX_VIEWS, &o->max_unmapped);
        break;
    case O_MID:
        if (strcmp(a, "on") && strcmp(a, "off"))
            r = bad_opt("--mid-report", a, "must be on or off");
        o->mid = strcmp(a, "on") == 0;
        break;
    case O_READER:
        if (strcmp(a, "auto") && strcmp(a, "libpcap"))
            r = bad_opt("--file-reader", a, "must be auto or libpcap");
        o->libpcap_reader = strcmp(a, "libpcap") == 0;
        break;
    case O_HELP: usage(stdout); return -1;
    case O_VER: printf("tierflow-probe %s\n", tf_version); return -1;
    case ':': r = bad_opt(n, "", "needs a value"); break;
    default: r = bad_opt(n, "", "unknown option"); break;
    }
    return r;
}

/* Returns 0 to run, 2 on a usage error, -1 after --help / --version. */
static int parse_opts(int argc, char **argv, struct probe_opts *o)
{
    probe_opts_init(o);
    if (gethostname(o->node, sizeof(o->node)) < 0 || !o->node[0])
        tf_strlcpy(o->node, "probe", sizeof(o->node));
    o->node[sizeof(o->node) - 1] = '\0';
    int c, r = 0;
    bool node_given = false;
    opterr = 0;
    while (r == 0 && (c = getopt_long(argc, argv, ":i:r:", long_opts, NULL)) != -1)
        r = one_opt(c, optarg, argv[optind - 1], o, &node_given);
    if (r)
        return r;
    if (optind < argc)
        return bad_opt("argument", argv[optind], "unexpected (options only)");
    if ((o->file && (o->nifs || o->sflow_listen || o->ncounters)) ||
        (!o->file && !o->nifs && !o->sflow_listen && !o->ncounters)) {
        log_early_err("tierflow-probe", "give -i IFACE, --counters IFACE (one or more each) and/or "
                                        "--sflow-listen, or -r FILE");
        usage(stderr);
        return TF_EXIT_USAGE;
    }
    /* The host name stands in for --node; one the controller would refuse
     * must not become a report that is sent and refused every interval. */
    if (!node_given && o->nctl && !reportspec_name_ok(o->node, REPORTSPEC_PROBE_MAX))
        return bad_opt("--node", o->node, "the host name is not a usable node name (1..31 printable "
                                          "ASCII characters without spaces): give --node");
    if (o->token_file && !o->nctl)
        return bad_opt("--token-file", o->token_file, "needs --controller");
    return 0;
}

static void on_signal(int sig)
{
    if (sig == SIGHUP)
        probe_ask_reload();
    else
        probe_ask_stop();
}

int main(int argc, char **argv)
{
    struct probe_opts o;
    int r = parse_opts(argc, argv, &o);
    if (r)
        return r < 0 ? 0 : r;
    log_init("tierflow-probe", o.log_level, false, o.journal);

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct probe *pr;
    if (probe_new(&o, &pr) < 0)
        return 1;
    r = probe_run(pr);
    probe_free(pr);
    return r < 0 ? 1 : 0;
}
