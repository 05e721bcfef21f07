/*
 * xorshift: the one deterministic generator of the tests and the test
 * tools (Marsaglia's xorshift64, 13/7/17): fixed seeds give the same files
 * and inputs on every machine. Header-only.
 */
#ifndef TF_XORSHIFT_H
#define TF_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#endif
