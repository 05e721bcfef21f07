/*
 * libFuzzer target for probes/savefile, differential: the input is a whole
 * capture file, read by libpcap (pcap_fopen_offline on an fmemopen stream)
 * and by the block reader (on a memfd), which must agree record by record
 * and end the same way (tests/lib/savefile_oracle.h). Files the block
 * reader declines, and link types the probe refuses before reading (their
 * length limits and pseudo-headers differ), are libpcap's alone and skipped. tests/fuzz/run.sh seeds
 * the corpus with the shared classic captures that fit -max_len.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probes/decode.h"
#include "probes/savefile.h"
#include "tests/lib/savefile_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f)
        return 0;
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_fopen_offline(f, err);
    if (!p) { /* libpcap refuses the header: nothing for the reader */
        fclose(f);
        return 0;
    }
    if (decode_linktype_supported(pcap_datalink(p)) != 0) { /* the probe refuses it */
        pcap_close(p);
        return 0;
    }
    int fd = memfd_create("fuzz_savefile", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0)
        __builtin_trap();
    struct savefile *sf;
    int r = savefile_open(&sf, fd, pcap_snapshot(p));
    if (r == 0) {
        long o = savefile_oracle(p, sf);
        if (o < 0) {
            fprintf(stderr, "fuzz_savefile: the readers disagree at record %ld (libpcap '%s', "
                            "block reader '%s')\n", -1 - o, pcap_geterr(p), savefile_error(sf));
            __builtin_trap();
        }
        savefile_close(sf);
    } else if (r != -ENOTSUP) {
        __builtin_trap();
    }
    pcap_close(p);
    return 0;
}
