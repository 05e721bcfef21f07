/*
 * capture: see capture.h.
 */
#include "probes/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/reportspec.h"
#include "common/util.h"
#include "probes/decode.h"
#include "probes/savefile.h"

static int capture_check_dlt(struct capture *c)
{
    char buf[32];
    c->dlt = pcap_datalink(c->p);
    if (decode_linktype_supported(c->dlt) == 0)
        return 0;
    log_err("%s: link type %s (DLT %d) is not supported (Ethernet, Linux SLL/SLL2 and raw "
            "IP are)", c->src, decode_linktype_name(c->dlt, buf, sizeof(buf)), c->dlt);
    return -EPROTONOSUPPORT;
}

/* Compiles and sets the filter; the program stays in c->prog for the
 * records savefile.c reads (libpcap only filters what it reads itself). */
static int capture_set_filter(struct capture *c, const char *filter)
{
    if (!filter)
        return 0;
    if (pcap_compile(c->p, &c->prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0) {
        log_err("--filter '%s' on %s: %s", filter, c->src, pcap_geterr(c->p));
        return -EINVAL;
    }
    c->has_prog = true;
    int r = pcap_setfilter(c->p, &c->prog);
    if (r < 0) {
        log_err("--filter '%s' on %s: %s", filter, c->src, pcap_geterr(c->p));
        return -EINVAL;
    }
    return 0;
}

static void capture_init(struct capture *c, const char *src, const char *name)
{
    memset(c, 0, sizeof(*c));
    c->src = src;
    c->fd = -1;
    c->poll_ms = -1;
    tf_strlcpy(c->name, name, sizeof(c->name));
}

static int activate_errno(int r)
{
    switch (r) {
    case PCAP_ERROR_NO_SUCH_DEVICE: return -ENODEV;
    case PCAP_ERROR_PERM_DENIED:
    case PCAP_ERROR_PROMISC_PERM_DENIED: return -EPERM;
    case PCAP_ERROR_IFACE_NOT_UP: return -ENETDOWN;
    default: return -EIO;
    }
}

static int capture_activate(struct capture *c, const struct capture_opts *o)
{
    int snaplen = o->snaplen > 0 ? o->snaplen : 128;
    if (pcap_set_snaplen(c->p, snaplen) || pcap_set_promisc(c->p, 0) ||
        pcap_set_timeout(c->p, o->timeout_ms > 0 ? o->timeout_ms : 100) ||
        pcap_set_immediate_mode(c->p, 0) ||
        (o->buffer_mb > 0 && pcap_set_buffer_size(c->p, o->buffer_mb * 1024 * 1024))) {
        log_err("-i %s: cannot set capture options: %s", c->src, pcap_geterr(c->p));
        return -EINVAL;
    }
    int r = pcap_activate(c->p);
    if (r < 0) {
        /* libpcap's message is empty for some codes; pcap_statustostr never is. */
        const char *msg = pcap_geterr(c->p), *st = pcap_statustostr(r);
        bool same = !*msg || strcmp(msg, st) == 0;
        log_err("-i %s: %s%s%s", c->src, st, same ? "" : ": ", same ? "" : msg);
        return activate_errno(r);
    }
    if (r > 0)
        log_warn("-i %s: %s: %s", c->src, pcap_statustostr(r), pcap_geterr(c->p));
    return 0;
}

int capture_open_live(struct capture *c, const char *ifname, const struct capture_opts *o)
{
    char err[PCAP_ERRBUF_SIZE] = "";
    capture_init(c, ifname, ifname);
    if (strlen(ifname) >= CAPTURE_NAME_LEN) {
        log_err("-i %s: interface name too long", ifname);
        return -EINVAL;
    }
    c->p = pcap_create(ifname, err);
    if (!c->p) {
        log_err("-i %s: %s", ifname, err);
        return -ENODEV;
    }
    int r = capture_activate(c, o);
    if (!r)
        r = capture_check_dlt(c);
    /* A probe reports what leaves by its interfaces (a report's `if` is
     * where traffic leaves: docs/telemetry.md). A packet arriving on one is
     * the upstream switch's to report, and copying it as well doubled the
     * capture's cost, which on a busy host is goodput lost. The kernel drops
     * it (BPF `outbound`, the packet type) before any copy. */
    char both[4200];
    const char *f = o->filter;
    if (o->dir != CAPTURE_BOTH) {
        snprintf(both, sizeof(both), "%s%s%s%s", o->dir == CAPTURE_IN ? "inbound" : "outbound", f ? " and (" : "",
                 f ? f : "", f ? ")" : "");
        f = both;
    }
    if (!r)
        r = capture_set_filter(c, f);
    if (!r && pcap_setnonblock(c->p, 1, err) < 0) {
        log_err("-i %s: %s", ifname, err);
        r = -EIO;
    }
    if (!r && (c->fd = pcap_get_selectable_fd(c->p)) < 0) {
        log_err("-i %s: no selectable file descriptor", ifname);
        r = -EIO;
    }
    if (r) {
        capture_close(c);
        return r;
    }
    const struct timeval *tv = pcap_get_required_select_timeout(c->p);
    if (tv)
        c->poll_ms = (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000);
    return 0;
}

/* A file's pseudo-interface is the report's `if`, so it must be a name the
 * controller takes (common/reportspec.h): the base name without its last
 * extension, bytes outside the name alphabet as '_', cut to the bound. */
static void file_if_name(const char *path, char out[REPORTSPEC_IF_MAX + 1])
{
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    if (n > REPORTSPEC_IF_MAX)
        n = REPORTSPEC_IF_MAX;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)base[i] <= 0x20 || (unsigned char)base[i] >= 0x7f ? '_' : base[i];
    out[n] = '\0';
    if (!n)
        tf_strlcpy(out, "file", REPORTSPEC_IF_MAX + 1);
}

int capture_open_file(struct capture *c, const char *path, const struct capture_opts *o)
{
    char err[PCAP_ERRBUF_SIZE] = "", name[REPORTSPEC_IF_MAX + 1];
    file_if_name(path, name);
    capture_init(c, path, name);
    c->offline = true;
    c->p = pcap_open_offline(path, err);
    if (!c->p) {
        log_err("-r %s: %s", path, err);
        return strstr(err, "No such file") ? -ENOENT : -EIO;
    }
    int r = capture_check_dlt(c);
    if (!r)
        r = capture_set_filter(c, o->filter);
    if (r) {
        capture_close(c);
        return r;
    }
    /* The records of a classic pcap file: read in blocks (savefile.h says
     * why). Anything savefile.c declines stays with libpcap, which has
     * already checked the file. So do pipes and other streams: libpcap has
     * already read ahead of the header there, a second reader cannot start
     * over. */
    int fd = o->libpcap_reader || strcmp(path, "-") == 0 ? -1 : open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    if (fd >= 0 && (r = savefile_open(&c->sf, fd, pcap_snapshot(c->p))) < 0 && r != -ENOTSUP)
        log_warn("-r %s: reading with libpcap: %s", path, strerror(-r));
    log_info("-r %s: records read by %s", path, c->sf ? "the block reader" : "libpcap");
    return 0;
}

int capture_next_libpcap_(struct capture *c, struct pcap_pkthdr *h, const u_char **data)
{
    struct pcap_pkthdr *ph;
    int r = pcap_next_ex(c->p, &ph, data);
    if (r == 1)
        *h = *ph;
    return r == 1 ? 1 : r == PCAP_ERROR_BREAK ? 0 : -EIO;
}

int capture_dispatch(struct capture *c, int max, pcap_handler cb, u_char *user)
{
    int n = pcap_dispatch(c->p, max, cb, user);
    if (n == PCAP_ERROR_BREAK)
        return -EINTR;
    if (n < 0)
        return -EIO;
    return n;
}

const char *capture_error(struct capture *c)
{
    return c->sf && savefile_error(c->sf)[0] ? savefile_error(c->sf) : pcap_geterr(c->p);
}

int capture_poll(const struct capture *cs, size_t n, int extra_fd, int timeout_ms)
{
    struct pollfd pfd[129]; /* the probe's 64 interfaces, both directions, and one more */
    size_t np = 0;
    if (extra_fd >= 0)
        pfd[np++] = (struct pollfd){.fd = extra_fd, .events = POLLIN};
    for (size_t i = 0; i < n && np < TF_ARRAY_SIZE(pfd); i++) {
        if (cs[i].fd < 0)
            continue;
        pfd[np++] = (struct pollfd){.fd = cs[i].fd, .events = POLLIN};
        if (cs[i].poll_ms >= 0 && cs[i].poll_ms < timeout_ms)
            timeout_ms = cs[i].poll_ms;
    }
    if (poll(pfd, np, timeout_ms) < 0 && errno != EINTR)
        return -errno;
    return 0;
}

int capture_drops(struct capture *c, uint64_t *drops)
{
    struct pcap_stat st;
    *drops = 0;
    if (c->offline)
        return 0;
    if (pcap_stats(c->p, &st) < 0) {
        log_warn("-i %s: pcap_stats: %s", c->src, pcap_geterr(c->p));
        return -EIO;
    }
    *drops = st.ps_drop; /* interface drops are in the link counters */
    return 0;
}

void capture_close(struct capture *c)
{
    savefile_close(c->sf);
    c->sf = NULL;
    if (c->has_prog)
        pcap_freecode(&c->prog);
    c->has_prog = false;
    if (c->p)
        pcap_close(c->p);
    c->p = NULL;
    c->fd = -1;
}
