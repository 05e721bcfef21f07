/*
 * savefile_oracle: reads one capture with libpcap and with probes/savefile
 * side by side and says whether they agree: the same records (time stamp,
 * lengths, bytes), the same end (end of file, or an error after the same
 * record with the same text). Shared by tests/unit/test_savefile.c and
 * tests/fuzz/fuzz_savefile.c; header-only, so that each links it as is.
 */
#ifndef TF_SAVEFILE_ORACLE_H
#define TF_SAVEFILE_ORACLE_H

#include <errno.h>
#include <pcap/pcap.h>
#include <string.h>

#include "probes/savefile.h"

/* Returns the records both handed out, or -1 - (the record where they first
 * disagree). Reads both to their end. */
static inline long savefile_oracle(pcap_t *p, struct savefile *sf)
{
    for (long recs = 0;; recs++) {
        struct pcap_pkthdr *lh, sh;
        const u_char *ld;
        const uint8_t *sd;
        int lr = pcap_next_ex(p, &lh, &ld), sr = savefile_next(sf, &sh, &sd);
        if (lr == 1) {
            if (sr != 1 || sh.ts.tv_sec != lh->ts.tv_sec || sh.ts.tv_usec != lh->ts.tv_usec ||
                sh.caplen != lh->caplen || sh.len != lh->len || memcmp(sd, ld, sh.caplen) != 0)
                return -1 - recs;
            continue;
        }
        if (lr == PCAP_ERROR_BREAK) /* end of file */
            return sr == 0 ? recs : -1 - recs;
        if (lr != PCAP_ERROR || sr != -EIO || strcmp(savefile_error(sf), pcap_geterr(p)) != 0)
            return -1 - recs;
        return recs;
    }
}

#endif
