/*
 * pcaploop: the floor for the probe benchmark and an oracle for the pcap
 * tests.
 *
 *   pcaploop FILE        bare libpcap read loop (pcap_next_ex, touching only
 *                        the pkthdr): what any libpcap reader must pay
 *   pcaploop --raw FILE  the same totals from the file's own record headers,
 *                        without libpcap (classic pcap only), so that tests
 *                        check the probe against an independent count
 *
 * Prints one line: "pkts N bytes B caplen C" (bytes = sum of wire lengths).
 * Exit 1 on an error, naming the file.
 */
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int loop_pcap(const char *path)
{
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *p = pcap_open_offline(path, err);
    if (!p) {
        fprintf(stderr, "pcaploop: %s: %s\n", path, err);
        return 1;
    }
    struct pcap_pkthdr *h;
    const u_char *d;
    uint64_t n = 0, bytes = 0, cap = 0;
    int r;
    while ((r = pcap_next_ex(p, &h, &d)) == 1) {
        n++;
        bytes += h->len;
        cap += h->caplen;
    }
    printf("pkts %llu bytes %llu caplen %llu\n", (unsigned long long)n,
           (unsigned long long)bytes, (unsigned long long)cap);
    if (r == -1)
        fprintf(stderr, "pcaploop: %s: %s\n", path, pcap_geterr(p));
    pcap_close(p);
    return r == -1;
}

static uint32_t rd32(const uint8_t *b, int swap)
{
    uint32_t v;
    memcpy(&v, b, 4);
    return swap ? __builtin_bswap32(v) : v;
}

static int loop_raw(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t gh[24], rh[16];
    if (!f || fread(gh, 1, sizeof(gh), f) != sizeof(gh)) {
        fprintf(stderr, "pcaploop: %s: cannot read a pcap header\n", path);
        if (f)
            fclose(f);
        return 1;
    }
    uint32_t magic = rd32(gh, 0);
    int swap;
    if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d)
        swap = 0;
    else if (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1)
        swap = 1;
    else {
        fprintf(stderr, "pcaploop: %s: not a classic pcap file (magic 0x%08x)\n", path, magic);
        fclose(f);
        return 1;
    }
    uint64_t n = 0, bytes = 0, cap = 0;
    while (fread(rh, 1, sizeof(rh), f) == sizeof(rh)) {
        uint32_t incl = rd32(rh + 8, swap), orig = rd32(rh + 12, swap);
        if (incl > (1u << 28) || fseek(f, (long)incl, SEEK_CUR) != 0)
            break;
        n++;
        bytes += orig;
        cap += incl;
    }
    fclose(f);
    printf("pkts %llu bytes %llu caplen %llu\n", (unsigned long long)n,
           (unsigned long long)bytes, (unsigned long long)cap);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--raw") == 0)
        return loop_raw(argv[2]);
    if (argc == 2)
        return loop_pcap(argv[1]);
    fprintf(stderr, "usage: pcaploop [--raw] FILE\n");
    return 2;
}
