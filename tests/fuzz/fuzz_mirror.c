/* libFuzzer target for the switch-telemetry decoders. The input follows the
 * seeder's convention (tests/tools/pcap2corpus.c): the first byte picks the
 * link type (decode_linktypes[sel % n]), the rest is a captured frame, so
 * the shared sFlow and ERSPAN captures are real seeds. Each input goes the
 * way the probe sends it:
 *   UDP to or from 6343 -> sflow_parse() on the datagram, every sampled
 *                          header through decode_frame();
 *   IP protocol 47      -> erspan_decap() and the inner frame through
 *                          decode_frame();
 * and, so that the parser sees arbitrary datagrams too, the bytes after the
 * selector go to sflow_parse() as they are. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <pcap/dlt.h>

#include "probes/decode.h"
#include "probes/erspan.h"
#include "probes/sflow.h"

static void on_flow(void *ctx, const struct sflow_datagram *d, const struct sflow_flow_sample *s)
{
    (void)ctx;
    (void)d;
    struct decode_pkt p;
    if (s->has_header && s->header_proto == 1)
        decode_frame(DLT_EN10MB, s->header, s->header_len, s->frame_len, &p);
}

static void on_counters(void *ctx, const struct sflow_datagram *d, const struct sflow_if_counters *c)
{
    (void)d;
    *(uint64_t *)ctx += c->in_octets + c->out_octets;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 1 << 20)
        return 0;
    int dlt = decode_linktypes[data[0] % decode_nlinktypes];
    data++;
    size--;
    uint64_t sink = 0;
    struct sflow_handler h = {NULL, on_flow, on_counters, &sink};
    struct sflow_stats st;
    memset(&st, 0, sizeof(st));
    sflow_parse(data, size, &h, &st);

    struct decode_pkt outer, inner;
    uint32_t caplen = (uint32_t)size;
    if (decode_frame(dlt, data, caplen, caplen, &outer) != 0)
        return 0;
    if (outer.proto == 17 && outer.l4 && (outer.dport == SFLOW_PORT || outer.sport == SFLOW_PORT)) {
        uint32_t end = outer.l3_off + outer.ip_len;
        if (end > caplen)
            end = caplen;
        if (end > outer.payload_off)
            sflow_parse(data + outer.payload_off, end - outer.payload_off, &h, &st);
        return 0;
    }
    struct erspan_info e;
    if (erspan_decap(&outer, data, caplen, &e) == 0)
        decode_frame(DLT_EN10MB, data + e.inner_off, e.inner_caplen, e.inner_wire, &inner);
    return 0;
}
