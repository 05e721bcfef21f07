/*
 * savefile: see savefile.h for the contract.
 *
 * The buffer holds buf[pos..end) of the file not yet handed out. A record is
 * handed out in place when it lies whole in the buffer; when it does not,
 * the rest of the buffer moves to its front and read() fills it up again
 * (once per block, not per record). The buffer holds the largest record
 * libpcap accepts, so it never grows.
 *
 * The checks, their order and the error texts are libpcap 1.10's
 * (sf-pcap.c, pcap_next_packet), so that the probe reports the same packets
 * and fails at the same record with the same message whichever reader it
 * uses.
 */
#include "probes/savefile.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC_HDR_LEN 16u

_Static_assert(SAVEFILE_BLOCK >= SAVEFILE_MAX_CAPLEN, "any record's data fits the buffer");

#define rd32 savefile_rd32_

static inline uint16_t rd16(const uint8_t *p, bool swap)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return swap ? __builtin_bswap16(v) : v;
}

/* Reads until n bytes are in buf or the file ends; returns the bytes read,
 * or -errno. */
static ssize_t read_full(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int savefile_open(struct savefile **out, int fd, int snapshot)
{
    uint8_t h[SAVEFILE_HDR_LEN];
    *out = NULL;
    ssize_t n = read_full(fd, h, sizeof(h));
    if (n != (ssize_t)sizeof(h) || snapshot <= 0) {
        close(fd);
        return n < 0 ? -EIO : -ENOTSUP;
    }
    uint32_t magic;
    memcpy(&magic, h, 4);
    bool swap, nsec;
    switch (magic) {
    case 0xa1b2c3d4: swap = false, nsec = false; break;
    case 0xa1b23c4d: swap = false, nsec = true; break;
    case 0xd4c3b2a1: swap = true, nsec = false; break;
    case 0x4d3cb2a1: swap = true, nsec = true; break;
    default: close(fd); return -ENOTSUP; /* pcapng, Kuznetzov, NavTel: libpcap's */
    }
    /* Before 2.4, libpcap may swap caplen and len: leave those to it. */
    if (rd16(h + 4, swap) != 2 || rd16(h + 6, swap) != 4) {
        close(fd);
        return -ENOTSUP;
    }
    struct savefile *sf = calloc(1, sizeof(*sf));
    if (sf)
        sf->buf = malloc(SAVEFILE_BLOCK);
    if (!sf || !sf->buf) {
        free(sf);
        close(fd);
        return -ENOMEM;
    }
    sf->fd = fd;
    sf->swap = swap;
    sf->nsec = nsec;
    sf->snapshot = (uint32_t)snapshot;
    sf->fast_max = sf->snapshot < SAVEFILE_MAX_CAPLEN ? sf->snapshot : SAVEFILE_MAX_CAPLEN;
    *out = sf;
    return 0;
}

/* Makes up to need bytes available at buf + pos (fewer only at the end of
 * the file); returns how many are, or -EIO. */
static ssize_t fill(struct savefile *sf, size_t need)
{
    size_t have = sf->end - sf->pos;
    if (have >= need || sf->eof)
        return (ssize_t)(have < need ? have : need);
    memmove(sf->buf, sf->buf + sf->pos, have);
    sf->pos = 0;
    sf->end = have;
    while (sf->end < need) {
        ssize_t r = read(sf->fd, sf->buf + sf->end, SAVEFILE_BLOCK - sf->end);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(sf->err, sizeof(sf->err), "error reading dump file: %s", strerror(errno));
            return -EIO;
        }
        if (r == 0) {
            sf->eof = true;
            break;
        }
        sf->end += (size_t)r;
    }
    have = sf->end;
    return (ssize_t)(have < need ? have : need);
}

/* Everything savefile_next() does not do inline: refills, ends, errors and
 * records over the snapshot length, in libpcap's order. */
int savefile_next_slow(struct savefile *sf, struct pcap_pkthdr *h, const uint8_t **data)
{
    ssize_t got = fill(sf, REC_HDR_LEN);
    if (got < 0)
        return -EIO;
    if (got == 0)
        return 0;
    if ((size_t)got < REC_HDR_LEN) {
        snprintf(sf->err, sizeof(sf->err),
                 "truncated dump file; tried to read %u header bytes, only got %zd", REC_HDR_LEN, got);
        return -EIO;
    }
    const uint8_t *p = sf->buf + sf->pos;
    uint32_t caplen = rd32(p + 8, sf->swap);
    if (caplen > SAVEFILE_MAX_CAPLEN) {
        if (caplen > sf->snapshot)
            snprintf(sf->err, sizeof(sf->err),
                     "invalid packet capture length %u, bigger than snaplen of %u", caplen, sf->snapshot);
        else
            snprintf(sf->err, sizeof(sf->err),
                     "invalid packet capture length %u, bigger than maximum of %u", caplen,
                     SAVEFILE_MAX_CAPLEN);
        return -EIO;
    }
    savefile_ts_inline_(sf, p, h);
    h->len = rd32(p + 12, sf->swap);
    sf->pos += REC_HDR_LEN;
    got = fill(sf, caplen);
    if (got < 0)
        return -EIO;
    if ((size_t)got < caplen) {
        /* libpcap first reads the snapshot length of an oversized record. */
        uint32_t tried = caplen > sf->snapshot && (size_t)got < sf->snapshot ? sf->snapshot : caplen;
        snprintf(sf->err, sizeof(sf->err),
                 "truncated dump file; tried to read %u captured bytes, only got %zd", tried, got);
        return -EIO;
    }
    *data = sf->buf + sf->pos;
    sf->pos += caplen;
    h->caplen = caplen > sf->snapshot ? sf->snapshot : caplen;
    return 1;
}

const char *savefile_error(const struct savefile *sf) { return sf->err; }

void savefile_close(struct savefile *sf)
{
    if (!sf)
        return;
    close(sf->fd);
    free(sf->buf);
    free(sf);
}
