/*
 * erspan: decapsulates mirrored traffic that switches send to the probe.
 *
 * Formats: ERSPAN type I (GRE 0x88BE, no sequence bit, no ERSPAN header),
 * type II (GRE 0x88BE with sequence, 8-byte header: session ID, index),
 * type III (GRE 0x22EB, 12-byte header: session ID, timestamp, hardware ID,
 * direction, frame type, optional 8-byte platform sub-header), and plain GRE
 * transparent Ethernet bridging (0x6558). Carriers are IPv4 or IPv6; the
 * carrier is decoded by decode_frame() first and handed in here.
 *
 * Invariants: reads stay inside caplen; the inner frame's wire length is what
 * the switch mirrored (the carrier's IP payload end), or, when the mirror was
 * truncated by the switch (T bit), the inner IP header's total length plus its
 * L2 header when that header was captured, else the frame is flagged
 * truncated and counted by what is known.
 */
#ifndef TF_ERSPAN_H
#define TF_ERSPAN_H

#include <stdint.h>

#include "probes/decode.h"

#define ERSPAN_GRE_II   0x88BE
#define ERSPAN_GRE_III  0x22EB
#define ERSPAN_GRE_TEB  0x6558

enum erspan_type { ERSPAN_TEB = 0, ERSPAN_I = 1, ERSPAN_II = 2, ERSPAN_III = 3 };

struct erspan_info {
    uint8_t  type;            /* enum erspan_type */
    uint8_t  truncated;       /* the switch cut the mirrored frame (T bit) */
    uint8_t  dir;             /* type III D bit: 0 ingress, 1 egress */
    uint8_t  frame_type;      /* type III FT: 0 Ethernet */
    uint16_t session;         /* 10-bit session ID (0 for type I and TEB) */
    uint16_t vlan;            /* ERSPAN header VLAN field */
    uint16_t hw_id;           /* type III hardware ID */
    uint32_t index;           /* type II port index */
    uint32_t timestamp;       /* type III timestamp */
    uint32_t gre_seq;         /* GRE sequence number when present */
    uint8_t  has_seq;
    uint8_t  src_af;          /* mirror source (carrier IP source) */
    uint8_t  src[16];
    uint32_t inner_off;       /* offset of the inner Ethernet frame */
    uint32_t inner_caplen;    /* captured bytes of the inner frame */
    uint32_t inner_wire;      /* its original length, best known */
};

/* outer: the carrier as decoded by decode_frame() (proto 47, l4_off at the
 * GRE header). Returns 0 with *info filled, -ENOENT when this is GRE but not
 * a mirror format, -EMSGSIZE when headers are cut by caplen, -EBADMSG when a
 * header is invalid (bad version, routing bit, wrong frame type). */
int erspan_decap(const struct decode_pkt *outer, const uint8_t *frame, uint32_t caplen,
                 struct erspan_info *info);

#endif
