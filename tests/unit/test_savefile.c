/*
 * Unit tests for probes/savefile: the block reader against libpcap itself.
 * Each crafted file is read by both, libpcap (pcap_open_offline +
 * pcap_next_ex) as the oracle, and they must hand out the same records
 * (time stamp, lengths, bytes) and end the same way (end of file, or an
 * error with the same text after the same record). The files: records
 * across block boundaries and up to the largest capture length, both byte
 * orders, nanosecond time stamps (and time stamps with the top bit set),
 * records longer than the file's snapshot length, every cut of a small file, lying capture lengths and random
 * corruption. Files the reader must leave to libpcap are declined.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/savefile.h"
#include "tests/lib/savefile_oracle.h"
#include "tests/lib/xorshift.h"

/* ---- file builder ------------------------------------------------------- */

struct fileb {
    uint8_t *b;
    size_t n, cap;
    int swap;
};

static void fput(struct fileb *f, const void *p, size_t n)
{
    if (f->n + n > f->cap) {
        f->cap = (f->n + n) * 2;
        f->b = realloc(f->b, f->cap);
        assert_non_null(f->b);
    }
    memcpy(f->b + f->n, p, n);
    f->n += n;
}

static void fput32(struct fileb *f, uint32_t v)
{
    if (f->swap)
        v = __builtin_bswap32(v);
    fput(f, &v, 4);
}

static void fput16(struct fileb *f, uint16_t v)
{
    if (f->swap)
        v = __builtin_bswap16(v);
    fput(f, &v, 2);
}

static void header(struct fileb *f, uint32_t magic, uint16_t major, uint16_t minor, uint32_t snaplen)
{
    fput32(f, magic);
    fput16(f, major);
    fput16(f, minor);
    fput32(f, 0);
    fput32(f, 0);
    fput32(f, snaplen);
    fput32(f, 1); /* Ethernet */
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) { return (uint32_t)(xorshift64(&rng) >> 16); }

static void record(struct fileb *f, uint32_t sec, uint32_t frac, uint32_t caplen, uint32_t len)
{
    fput32(f, sec);
    fput32(f, frac);
    fput32(f, caplen);
    fput32(f, len);
    uint8_t chunk[256];
    for (uint32_t done = 0; done < caplen;) {
        uint32_t k = caplen - done < sizeof(chunk) ? caplen - done : (uint32_t)sizeof(chunk);
        for (uint32_t i = 0; i < k; i++)
            chunk[i] = (uint8_t)rnd();
        fput(f, chunk, k);
        done += k;
    }
}

static char *write_tmp(const uint8_t *b, size_t n)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/tf-savefile-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, b, n), (ssize_t)n);
    close(fd);
    return path;
}

/* ---- the comparison ---------------------------------------------------- */

/* Reads the file with both; returns the records both handed out (failing
 * the test unless they agree), or -1 when the reader declined the file. */
static long agree(const uint8_t *b, size_t n)
{
    char *path = write_tmp(b, n);
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline(path, err);
    if (!p) { /* libpcap refuses the header: nothing for the reader to do */
        unlink(path);
        return -1;
    }
    struct savefile *sf = NULL;
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    int r = savefile_open(&sf, fd, pcap_snapshot(p));
    if (r == -ENOTSUP) {
        pcap_close(p);
        unlink(path);
        return -1;
    }
    assert_int_equal(r, 0);
    long recs = savefile_oracle(p, sf);
    if (recs < 0) /* name the record and both views of it */
        fail_msg("record %ld: the readers disagree (libpcap: '%s', block reader: '%s')", -1 - recs,
                 pcap_geterr(p), savefile_error(sf));
    savefile_close(sf);
    pcap_close(p);
    unlink(path);
    return recs;
}

/* A valid file of nrec records with capture lengths from caplen_of. */
static void build(struct fileb *f, int swap, int nsec, uint32_t snaplen, int nrec,
                  uint32_t (*caplen_of)(int i))
{
    f->n = 0;
    f->swap = swap;
    header(f, nsec ? 0xa1b23c4d : 0xa1b2c3d4, 2, 4, snaplen);
    for (int i = 0; i < nrec; i++) {
        uint32_t c = caplen_of(i);
        record(f, 1700000000u + (uint32_t)i, nsec ? rnd() % 1000000000u : rnd() % 1000000u, c,
               c + rnd() % 3000);
    }
}

static uint32_t small_caplen(int i) { return (uint32_t)(i * 37 % 1600); }
static uint32_t mixed_caplen(int i)
{
    /* mostly small, now and then up to the largest libpcap accepts */
    return i % 50 == 7 ? SAVEFILE_MAX_CAPLEN - rnd() % 1000 : i % 97 == 3 ? SAVEFILE_MAX_CAPLEN : rnd() % 2000;
}

/* ---- tests ------------------------------------------------------------- */

static void test_blocks_orders_precision(void **state)
{
    (void)state;
    struct fileb f = {0};
    for (int swap = 0; swap < 2; swap++)
        for (int nsec = 0; nsec < 2; nsec++) {
            build(&f, swap, nsec, 262144, 3000, mixed_caplen);
            assert_true(f.n > 4 * SAVEFILE_BLOCK); /* many refills, records across them */
            assert_int_equal(agree(f.b, f.n), 3000);
        }
    /* A record larger than what is left of every block. */
    build(&f, 0, 0, 262144, 40, mixed_caplen);
    assert_int_equal(agree(f.b, f.n), 40);
    free(f.b);
}

static void test_snapshot_cuts(void **state)
{
    (void)state;
    struct fileb f = {0};
    /* Records longer than the header's snapshot length: cut to it. */
    for (uint32_t snap = 64; snap <= 1024; snap *= 4) {
        build(&f, 0, 0, snap, 500, small_caplen);
        assert_int_equal(agree(f.b, f.n), 500);
    }
    /* A snapshot length of 0, or above the maximum: libpcap adjusts it. */
    build(&f, 1, 0, 0, 200, small_caplen);
    assert_int_equal(agree(f.b, f.n), 200);
    build(&f, 0, 0, 0x7fffffff, 200, small_caplen);
    assert_int_equal(agree(f.b, f.n), 200);
    free(f.b);
}

static void test_every_cut(void **state)
{
    (void)state;
    struct fileb f = {0};
    build(&f, 0, 0, 96, 6, small_caplen); /* record 3 (111 bytes) is over the snapshot */
    long full = agree(f.b, f.n);
    assert_int_equal(full, 6);
    for (size_t cut = SAVEFILE_HDR_LEN; cut < f.n; cut++) {
        long got = agree(f.b, cut);
        assert_true(got >= 0 && got < full);
    }
    free(f.b);
}

static void test_lying_lengths(void **state)
{
    (void)state;
    struct fileb f = {0};
    const uint32_t lies[] = {SAVEFILE_MAX_CAPLEN + 1, 300000, 0x7fffffff, 0xffffffff, 100000, 4096};
    for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++)
        for (uint32_t snap = 128; snap <= 262144; snap *= 2048) {
            build(&f, (int)(i & 1), 0, snap, 200, small_caplen);
            uint32_t v = f.swap ? __builtin_bswap32(lies[i]) : lies[i];
            memcpy(f.b + SAVEFILE_HDR_LEN + 8, &v, 4); /* the first record's caplen */
            assert_true(agree(f.b, f.n) >= 0);
        }
    free(f.b);
}

/* Time stamps with the top bit set, in either field, either byte order,
 * either precision: libpcap reads them signed or unsigned by byte order. */
static void test_odd_timestamps(void **state)
{
    (void)state;
    struct fileb f = {0};
    const uint32_t odd[] = {0x80000000u, 0xffffffffu, 0xc0e4f141u, 999999999u, 1000000u, 0};
    for (int swap = 0; swap < 2; swap++)
        for (int nsec = 0; nsec < 2; nsec++) {
            f.n = 0;
            f.swap = swap;
            header(&f, nsec ? 0xa1b23c4d : 0xa1b2c3d4, 2, 4, 128);
            for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
                for (size_t j = 0; j < sizeof(odd) / sizeof(odd[0]); j++)
                    record(&f, odd[i], odd[j], 60, 60);
            assert_int_equal(agree(f.b, f.n), 36);
        }
    free(f.b);
}

static void test_random_corruption(void **state)
{
    (void)state;
    struct fileb f = {0};
    for (int round = 0; round < 300; round++) {
        build(&f, round & 1, round & 2, round & 4 ? 128 : 65535, 60, small_caplen);
        int flips = 1 + (int)(rnd() % 8);
        for (int k = 0; k < flips; k++) /* header fields and record headers alike, never the file header */
            f.b[SAVEFILE_HDR_LEN + rnd() % (f.n - SAVEFILE_HDR_LEN)] = (uint8_t)rnd();
        assert_true(agree(f.b, f.n) >= 0);
    }
    free(f.b);
}

static void test_declines(void **state)
{
    (void)state;
    struct fileb f = {0};
    /* Versions before 2.4 (libpcap may swap caplen and len there). */
    for (uint16_t minor = 0; minor < 4; minor++) {
        f.n = 0;
        header(&f, 0xa1b2c3d4, 2, minor, 128);
        record(&f, 1, 2, 60, 60);
        assert_int_equal(agree(f.b, f.n), -1);
    }
    /* pcapng: a section header block, then nothing this reader knows. */
    f.n = 0;
    fput32(&f, 0x0a0d0d0a);
    fput32(&f, 28);
    fput32(&f, 0x1a2b3c4d);
    fput16(&f, 1);
    fput16(&f, 0);
    fput32(&f, 0xffffffff);
    fput32(&f, 0xffffffff);
    fput32(&f, 28);
    assert_int_equal(agree(f.b, f.n), -1);
    /* A file shorter than its header. */
    struct savefile *sf = (void *)1;
    char *path = write_tmp((const uint8_t *)"\xd4\xc3\xb2\xa1\x02\x00", 6);
    assert_int_equal(savefile_open(&sf, open(path, O_RDONLY), 128), -ENOTSUP);
    assert_null(sf);
    unlink(path);
    free(f.b);
}

/* The messages, spelled out once (the oracle checks they are libpcap's). */
static void test_messages(void **state)
{
    (void)state;
    struct fileb f = {0};
    build(&f, 0, 0, 128, 2, small_caplen);
    char *path = write_tmp(f.b, f.n - 3);
    struct savefile *sf;
    assert_int_equal(savefile_open(&sf, open(path, O_RDONLY), 128), 0);
    struct pcap_pkthdr h;
    const uint8_t *d;
    assert_int_equal(savefile_next(sf, &h, &d), 1);
    assert_int_equal(savefile_next(sf, &h, &d), -EIO);
    assert_string_equal(savefile_error(sf), "truncated dump file; tried to read 37 captured bytes, only got 34");
    savefile_close(sf);
    unlink(path);
    free(f.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_orders_precision),
        cmocka_unit_test(test_snapshot_cuts),
        cmocka_unit_test(test_every_cut),
        cmocka_unit_test(test_lying_lengths),
        cmocka_unit_test(test_odd_timestamps),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_declines),
        cmocka_unit_test(test_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
