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
#include <stdint.h>

#define SAVEFILE_HDR_LEN 24
#define SAVEFILE_MAX_CAPLEN 262144u /* libpcap's limit for the link types decode reads */
#define SAVEFILE_BLOCK (256u * 1024)

struct savefile;

/* Reads the file header from fd (at offset 0) and sets up the reader. fd is
 * owned by the reader from then on, also on failure. snapshot: the file's
 * snapshot length as libpcap adjusted it (pcap_snapshot()). Returns 0,
 * -ENOTSUP when the file is not one this reader reads exactly as libpcap (the
 * caller uses libpcap), or -ENOMEM / -EIO. */
int savefile_open(struct savefile **out, int fd, int snapshot);

/* The next record: 1 with *h and *data set (data valid until the next
 * call), 0 at the end of the file, -EIO on an error (savefile_error()). */
int savefile_next(struct savefile *sf, struct pcap_pkthdr *h, const uint8_t **data);

const char *savefile_error(const struct savefile *sf);

void savefile_close(struct savefile *sf);

#endif
