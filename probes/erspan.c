/*
 * erspan: see erspan.h. Layout references: draft-foschiano-erspan (types
 * I-III) and RFC 2784/2890 (GRE with key and sequence extensions).
 */
#include "probes/erspan.h"

#include <errno.h>
#include <string.h>

#include "probes/wire.h"

#define GRE_C 0x8000
#define GRE_R 0x4000
#define GRE_K 0x2000
#define GRE_S 0x1000

/* Original length of an inner Ethernet frame from its IP header, when the
 * frame was cut by the switch; 0 when not known. */
static uint32_t inner_len_from_ip(const uint8_t *p, uint32_t caplen)
{
    uint32_t off = 12;
    for (int tags = 0; tags < DECODE_MAX_TAGS; tags++) {
        if (off + 2 > caplen)
            return 0;
        uint16_t et = wire_be16(p + off);
        if (et != 0x8100 && et != 0x88a8 && et != 0x9100)
            break;
        off += 4;
    }
    if (off + 2 > caplen)
        return 0;
    uint16_t et = wire_be16(p + off);
    off += 2;
    if (et == 0x0800 && off + 4 <= caplen && (p[off] >> 4) == 4) {
        uint16_t tl = wire_be16(p + off + 2);
        return tl ? off + tl : 0;
    }
    if (et == 0x86DD && off + 6 <= caplen && (p[off] >> 4) == 6) {
        uint16_t pl = wire_be16(p + off + 4);
        return pl ? off + 40 + pl : 0;
    }
    return 0;
}

int erspan_decap(const struct decode_pkt *outer, const uint8_t *frame, uint32_t caplen,
                 struct erspan_info *info)
{
    memset(info, 0, sizeof(*info));
    if (outer->proto != 47 || (outer->flags & DECODE_F_NONFIRST))
        return -ENOENT;
    uint32_t off = outer->l4_off;
    if (off + 4 > caplen)
        return -EMSGSIZE;
    uint16_t flags = wire_be16(frame + off);
    uint16_t ptype = wire_be16(frame + off + 2);
    if (ptype != ERSPAN_GRE_II && ptype != ERSPAN_GRE_III && ptype != ERSPAN_GRE_TEB)
        return -ENOENT;
    if ((flags & 0x0007) != 0 || (flags & GRE_R))
        return -EBADMSG; /* GRE version 0 only; source routing is obsolete */
    off += 4;
    if (flags & GRE_C)
        off += 4;
    if (flags & GRE_K)
        off += 4;
    if (flags & GRE_S) {
        if (off + 4 > caplen)
            return -EMSGSIZE;
        info->gre_seq = wire_be32(frame + off);
        info->has_seq = 1;
        off += 4;
    }
    if (off > caplen)
        return -EMSGSIZE;

    if (ptype == ERSPAN_GRE_TEB) {
        info->type = ERSPAN_TEB;
    } else if (ptype == ERSPAN_GRE_II && !(flags & GRE_S)) {
        info->type = ERSPAN_I;
    } else if (ptype == ERSPAN_GRE_II) {
        if (off + 8 > caplen)
            return -EMSGSIZE;
        const uint8_t *h = frame + off;
        if ((h[0] >> 4) != 1)
            return -EBADMSG;
        info->type = ERSPAN_II;
        info->vlan = wire_be16(h) & 0x0fff;
        info->truncated = (h[2] >> 2) & 1;
        info->session = wire_be16(h + 2) & 0x03ff;
        info->index = wire_be32(h + 4) & 0x000fffff;
        off += 8;
    } else {
        if (off + 12 > caplen)
            return -EMSGSIZE;
        const uint8_t *h = frame + off;
        if ((h[0] >> 4) != 2)
            return -EBADMSG;
        info->type = ERSPAN_III;
        info->vlan = wire_be16(h) & 0x0fff;
        info->truncated = (h[2] >> 2) & 1;
        info->session = wire_be16(h + 2) & 0x03ff;
        info->timestamp = wire_be32(h + 4);
        uint16_t w = wire_be16(h + 10);
        info->frame_type = (w >> 10) & 0x1f;
        info->hw_id = (w >> 4) & 0x3f;
        info->dir = (w >> 3) & 1;
        int has_sub = w & 1;
        off += 12;
        if (has_sub) {
            if (off + 8 > caplen)
                return -EMSGSIZE;
            off += 8;
        }
        if (info->frame_type != 0)
            return -EBADMSG; /* only Ethernet frames are mirrored to us */
    }

    info->src_af = outer->af;
    memcpy(info->src, outer->src, sizeof(info->src));
    info->inner_off = off;
    info->inner_caplen = caplen - off;
    /* What the switch sent: the carrier datagram ends at l3_off + ip_len. */
    uint32_t carrier_end = outer->l3_off + outer->ip_len;
    info->inner_wire = carrier_end > off ? carrier_end - off : info->inner_caplen;
    if (info->truncated) {
        uint32_t orig = inner_len_from_ip(frame + off, info->inner_caplen);
        if (orig > info->inner_wire)
            info->inner_wire = orig;
    }
    if (info->inner_wire < info->inner_caplen)
        info->inner_wire = info->inner_caplen;
    return 0;
}
