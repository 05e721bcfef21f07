/*
 * savefile: reads the records of a classic pcap file (the format of
 * pcap-savefile(5), version 2.4, micro- or nanosecond, either byte order) in
 * large blocks and hands each one out in place, without a copy.
 *
 * Why: libpcap's savefile reader does two fread() calls and a copy per
 * record, about 460 instructions a packet, which is more than the probe's
 * whole per-packet accounting. This reader does one read() per block and
 * about 30 instructions a record. capture.c still opens every file with
 * libpcap first (which validates the header and gives the link type) and
 * uses this reader only for what it reads exactly as libpcap does; pcapng and
 * the rare variants stay with libpcap.
 *
 * Only for the link types decode reads (capture.c opens the reader after
 * that check): libpcap's length limit and pseudo-header swapping differ for
 * some others (USBPcap, D-Bus, NFLOG, ...).
 *
 * Invariants (each checked by the capture tests against libpcap on the same
 * files): the same records, the same pcap_pkthdr values (nanoseconds scaled
 * down to microseconds; caplen above the file's snapshot length cut to it),
 * the same end of file, and the same errors with libpcap's own wording, at
 * the same record: a header or data cut short, a capture length above
 * SAVEFILE_MAX_CAPLEN, a failed read. Reads stop at the first error.
 * Memory is bounded: one block buffer, which holds the largest record.
 */
#ifndef TF_SAVEFILE_H
#define TF_SAVEFILE_H

#include <pcap/pcap.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SAVEFILE_HDR_LEN 24
#define SAVEFILE_MAX_CAPLEN 262144u /* libpcap's limit for the link types decode reads */
#define SAVEFILE_BLOCK (256u * 1024)

/* Private to savefile.c; in the header only for savefile_next()'s inline
 * fast path. buf[pos..end) is the part of the file read and not yet handed
 * out. */
struct savefile {
    int fd;
    bool swap, nsec, eof;
    uint32_t snapshot, fast_max; /* fast_max: min(snapshot, SAVEFILE_MAX_CAPLEN) */
    uint8_t *buf;
    size_t pos, end;
    char err[PCAP_ERRBUF_SIZE];
};

/* Reads the file header from fd (at offset 0) and sets up the reader. fd is
 * owned by the reader from then on, also on failure. snapshot: the file's
 * snapshot length as libpcap adjusted it (pcap_snapshot()). Returns 0,
 * -ENOTSUP when the file is not one this reader reads exactly as libpcap (the
 * caller uses libpcap), or -ENOMEM / -EIO. */
int savefile_open(struct savefile **out, int fd, int snapshot);

/* The next record: 1 with *h and *data set (data valid until the next
 * call), 0 at the end of the file, -EIO on an error (savefile_error()).
 * Inline: a record that lies whole in the buffer and within the snapshot
 * length (all but one per block, in practice) costs a few loads; the rest,
 * refills and every check that can fail, is savefile_next_slow()'s. */
int savefile_next_slow(struct savefile *sf, struct pcap_pkthdr *h, const uint8_t **data);

static inline uint32_t savefile_rd32_(const uint8_t *p, bool swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? __builtin_bswap32(v) : v;
}

static inline void savefile_ts_inline_(const struct savefile *sf, const uint8_t *rec,
                                       struct pcap_pkthdr *h)
{
    /* libpcap reads a native file's time stamp fields as signed 32-bit
     * values and a byte-swapped file's as unsigned ones (its SWAPLONG): the
     * same here, so that even absurd time stamps agree. */
    uint32_t sec = savefile_rd32_(rec, sf->swap), frac = savefile_rd32_(rec + 4, sf->swap);
    h->ts.tv_sec = sf->swap ? (time_t)sec : (time_t)(int32_t)sec;
    h->ts.tv_usec = sf->swap ? (suseconds_t)frac : (suseconds_t)(int32_t)frac;
    if (sf->nsec)
        h->ts.tv_usec /= 1000;
}

static inline int savefile_next(struct savefile *sf, struct pcap_pkthdr *h, const uint8_t **data)
{
    size_t have = sf->end - sf->pos;
    const uint8_t *p = sf->buf + sf->pos;
    if (__builtin_expect(have >= 16, 1)) {
        uint32_t caplen = savefile_rd32_(p + 8, sf->swap);
        if (__builtin_expect(caplen <= have - 16 && caplen <= sf->fast_max, 1)) {
            savefile_ts_inline_(sf, p, h);
            h->caplen = caplen;
            h->len = savefile_rd32_(p + 12, sf->swap);
            *data = p + 16;
            sf->pos += 16 + (size_t)caplen;
            return 1;
        }
    }
    return savefile_next_slow(sf, h, data);
}

const char *savefile_error(const struct savefile *sf);

void savefile_close(struct savefile *sf);

#endif
