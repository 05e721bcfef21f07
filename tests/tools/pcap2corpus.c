/*
 * pcap2corpus: turns capture files into a libFuzzer seed corpus for
 * tests/fuzz/fuzz_decode.c.
 *
 *   pcap2corpus OUTDIR FILE...
 *
 * Each packet becomes OUTDIR/<file>-<n>: one selector byte (the index of the
 * file's link type in decode_linktypes[], so the fuzzer decodes it with the
 * same link type) followed by the captured bytes. Files whose link type the
 * decoder does not support, or that libpcap cannot read, are skipped with a
 * message; the exit status is non-zero only when nothing was written.
 */
#include <errno.h>
#include <libgen.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

#include "probes/decode.h"

#define MAX_PER_FILE 2000 /* keeps the corpus small: the big captures repeat */

static int sel_of(int dlt)
{
    for (unsigned i = 0; i < decode_nlinktypes; i++)
        if (decode_linktypes[i] == dlt)
            return (int)i;
    return -1;
}

static long one_file(const char *outdir, const char *path)
{
    char err[PCAP_ERRBUF_SIZE], name[4096], base[1024], lt[32];
    pcap_t *p = pcap_open_offline(path, err);
    if (!p) {
        fprintf(stderr, "pcap2corpus: %s: %s (skipped)\n", path, err);
        return 0;
    }
    int sel = sel_of(pcap_datalink(p));
    if (sel < 0) {
        fprintf(stderr, "pcap2corpus: %s: link type %s not decoded (skipped)\n", path,
                decode_linktype_name(pcap_datalink(p), lt, sizeof(lt)));
        pcap_close(p);
        return 0;
    }
    snprintf(base, sizeof(base), "%s", path);
    struct pcap_pkthdr *h;
    const u_char *d;
    long n = 0;
    while (n < MAX_PER_FILE && pcap_next_ex(p, &h, &d) == 1) {
        int w = snprintf(name, sizeof(name), "%s/%s-%ld", outdir, basename(base), n);
        if (w < 0 || (size_t)w >= sizeof(name)) {
            fprintf(stderr, "pcap2corpus: %s: output path too long\n", outdir);
            break;
        }
        FILE *f = fopen(name, "wb");
        if (!f) {
            fprintf(stderr, "pcap2corpus: %s: %s\n", name, strerror(errno));
            break;
        }
        unsigned char s = (unsigned char)sel;
        int ok = fwrite(&s, 1, 1, f) == 1 && fwrite(d, 1, h->caplen, f) == h->caplen;
        if (fclose(f) != 0 || !ok) {
            fprintf(stderr, "pcap2corpus: %s: write failed\n", name);
            break;
        }
        n++;
    }
    pcap_close(p);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pcap2corpus OUTDIR FILE...\n");
        return 2;
    }
    long total = 0;
    for (int i = 2; i < argc; i++)
        total += one_file(argv[1], argv[i]);
    fprintf(stderr, "pcap2corpus: %ld seeds in %s\n", total, argv[1]);
    return total > 0 ? 0 : 1;
}
