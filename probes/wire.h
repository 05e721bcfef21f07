/*
 * wire: big-endian field readers for packet decoders.
 *
 * Callers check bounds before reading; these helpers only assemble bytes,
 * so they stay branch-free on the per-packet path.
 */
#ifndef TF_WIRE_H
#define TF_WIRE_H

#include <stdint.h>

static inline uint16_t wire_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t wire_be24(const uint8_t *p) { return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2]; }
static inline uint32_t wire_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t wire_be64(const uint8_t *p) { return ((uint64_t)wire_be32(p) << 32) | wire_be32(p + 4); }

#endif
