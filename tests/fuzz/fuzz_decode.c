/*
 * libFuzzer target for probes/decode and probes/flowtab.
 *
 * Input: one selector byte, then the frame. The selector picks the link
 * type (decode_linktypes[sel % n]) and, through sel / n, how much longer
 * than the capture the wire length claims to be, so that BIG TCP and
 * lying-length paths are reached. Every decoded frame goes into a small
 * flow table (so eviction, CNP chains and expiry run), and every 64 inputs
 * an interval is closed. tests/tools/pcap2corpus writes seeds in this form.
 */
#include <stddef.h>
#include <stdint.h>

#include "probes/decode.h"
#include "probes/flowtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct flowtab *ft;
    static uint64_t n;
    static const double links[2] = {1e5, 1e9};
    struct decode_pkt pkt;

    if (size < 1 || size > UINT32_MAX / 2)
        return 0;
    if (!ft && !(ft = flowtab_new(16, 2.0)))
        __builtin_trap();
    unsigned sel = data[0];
    int dlt = decode_linktypes[sel % decode_nlinktypes];
    uint32_t caplen = (uint32_t)(size - 1);
    uint32_t wire = caplen + (sel / decode_nlinktypes) * 997u;

    n++;
    if (decode_frame(dlt, data + 1, caplen, wire, &pkt) == 0) {
        if (pkt.l3_off > caplen || pkt.l4_off > caplen || pkt.ip_len > wire)
            __builtin_trap(); /* offsets must stay inside the frame */
        flowtab_update(ft, &pkt, (uint16_t)(n & 3), (double)n * 0.01, 1 + (sel & 1), 0);
    }
    if (n % 64 == 0)
        flowtab_close_interval(ft, (double)n * 0.01, 0.64, links, 2, 0.1);
    return 0;
}
