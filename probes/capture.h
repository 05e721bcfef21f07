/*
 * capture: the probe's libpcap sources, live interfaces or a capture file.
 *
 * Live handles are made with pcap_create/pcap_activate (snap length, kernel
 * buffer size, immediate mode off so that Linux keeps TPACKET_V3 and hands
 * packets over a block at a time), put in nonblocking mode and waited on
 * together with poll(). With TPACKET_V3 a block is only handed over when it
 * fills or its timeout expires, and poll() may not wake for the timeout, so
 * capture_poll() never sleeps longer than libpcap's required select timeout.
 * Files (pcap and pcapng) are opened with pcap_open_offline, which checks
 * the file and gives its link type; the records of a classic pcap file
 * (version 2.4) are then read by savefile.c in large blocks, everything else
 * by libpcap (or everything, with libpcap_reader).
 *
 * Invariants: a source is only opened when decode understands its link type
 * (others are refused with an error naming the type); every failure is
 * logged once, naming the interface or file, with libpcap's own message.
 */
#ifndef TF_CAPTURE_H
#define TF_CAPTURE_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probes/savefile.h"

#define CAPTURE_NAME_LEN 64

/* Live captures: packets leaving the interface (the default: what a report's
 * `if` describes), arriving at it (--inbound's second handle: holes), or
 * both (ERSPAN carriers arrive on the capture interface). */
enum capture_dir { CAPTURE_OUT, CAPTURE_IN, CAPTURE_BOTH };

struct capture_opts {
    int snaplen;          /* bytes per packet kept, default 128 */
    int buffer_mb;        /* kernel buffer, 0 = libpcap's default */
    int timeout_ms;       /* TPACKET_V3 block timeout, default 100 */
    const char *filter;   /* BPF expression or NULL */
    enum capture_dir dir; /* live: which packets of the interface (files: all) */
    bool libpcap_reader;  /* files: libpcap reads every record (see savefile.h) */
};



struct capture {
    pcap_t *p;
    char name[CAPTURE_NAME_LEN]; /* interface, or the file's pseudo-interface (capture_open_file) */
    const char *src;      /* what the user gave (-i or -r argument) */
    int dlt;
    int fd;               /* selectable fd, -1 for files */
    int poll_ms;          /* longest safe poll() sleep, -1 when unbounded */
    bool offline;
    struct savefile *sf;  /* files read by savefile.c, else NULL */
    struct bpf_program prog; /* the filter, applied to sf's records */
    bool has_prog;
};

/* Return 0, or -ENODEV (no such interface), -EPERM (no permission),
 * -EPROTONOSUPPORT (link type), -EINVAL (bad filter or option), -ENOENT /
 * -EIO (file). */
int capture_open_live(struct capture *c, const char *ifname, const struct capture_opts *o);
int capture_open_file(struct capture *c, const char *path, const struct capture_opts *o);

/* Live sources: hands up to max packets to cb. Returns how many, 0 when none
 * is ready, -EIO on a read error, -EINTR when pcap_breakloop() was called.
 * Files are read with capture_next(). A read error is not logged here: the
 * probe first prints the report of what was read, then the error
 * (capture_error()). */
int capture_dispatch(struct capture *c, int max, pcap_handler cb, u_char *user);
/* Files: the next record that passes the filter, as pcap_next_ex() would
 * give it: 1 with *h and *data set (data valid until the next call), 0 at
 * the end of the file, -EIO on a read error (capture_error()). Inline for the
 * block reader, so that a read loop and its per-packet code compile into
 * one. */
int capture_next_libpcap_(struct capture *c, struct pcap_pkthdr *h, const u_char **data);
static inline int capture_next(struct capture *c, struct pcap_pkthdr *h, const u_char **data)
{
    if (!c->sf)
        return capture_next_libpcap_(c, h, data);
    for (;;) {
        int r = savefile_next(c->sf, h, data);
        if (r <= 0)
            return r;
        if (!c->has_prog || pcap_offline_filter(&c->prog, h, *data))
            return 1;
    }
}

/* libpcap's message for the last error on c. */
const char *capture_error(struct capture *c);

/* Waits until one of the live sources (or extra_fd, when >= 0: the sFlow
 * socket) may have data, at most timeout_ms. Returns 0 (also on timeout or
 * EINTR) or a negative errno. */
int capture_poll(const struct capture *cs, size_t n, int extra_fd, int timeout_ms);

/* Packets the kernel dropped since the handle was opened. */
int capture_drops(struct capture *c, uint64_t *drops);

void capture_close(struct capture *c);

#endif
