/*
 * jsonscan: see jsonscan.h. The grammar checks follow RFC 8259 as jansson
 * applies it (white space is space, tab, CR, LF; no leading zeros; a '.' or
 * exponent needs digits); anything the subset leaves out is refused rather
 * than approximated, since the caller's fallback is jansson itself.
 */
#include "controller/jsonscan.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void jsonscan_init(struct jsonscan *js, const char *text, size_t len)
{
    js->p = text;
    js->end = text + len;
    js->depth = 0;
    js->nobj = 0;
    js->keys = js->inline_keys;
    js->nkeys = 0;
    js->nslots = JSONSCAN_INLINE_KEYS;
    memset(js->inline_keys, 0, sizeof(js->inline_keys));
}

void jsonscan_free(struct jsonscan *js)
{
    if (js->keys != js->inline_keys)
        free(js->keys);
    js->keys = js->inline_keys;
    js->nkeys = 0;
    js->nslots = JSONSCAN_INLINE_KEYS;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Every white space byte is at most ' ': one compare settles the usual
 * case of a compact text. */
static inline void skip_ws(struct jsonscan *js)
{
    while (js->p < js->end && (unsigned char)*js->p <= ' ' && is_ws(*js->p))
        js->p++;
}

/* The subset's strings: printable ASCII up to the closing quote. Control
 * bytes, the backslash of an escape, DEL and every non-ASCII byte (whose
 * UTF-8 jansson checks) are left to jansson. */
static int scan_string(struct jsonscan *js, const char **s, size_t *len)
{
    const char *p = js->p + 1, *end = js->end;
    for (; p < end && *p != '"'; p++)
        if ((unsigned char)(*p - 0x20) > 0x7e - 0x20 || *p == '\\')
            return -EINVAL;
    if (p >= end)
        return -EINVAL;
    *s = js->p + 1;
    *len = (size_t)(p - *s);
    js->p = p + 1;
    return 0;
}

/* Powers of ten a double holds exactly: 10^22 is the last (5^22 < 2^53). */
static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A real as strtod reads it (correctly rounded), which is what jansson
 * stores. With at most 2^53 as its digits and a power of ten up to 22 either
 * side, both operands are exact and one IEEE multiply or divide rounds the
 * result once, correctly (Clinger's fast path); other texts go to strtod. */
static int real_value(const char *tok, size_t toklen, bool neg, const char *ip, size_t nint, const char *fp,
                      size_t nfrac, long exp10, double *out)
{
    uint64_t m = 0;
    int nsig = 0;
    bool fast = true;
    for (size_t k = 0; k < nint + nfrac && fast; k++) {
        int d = (k < nint ? ip[k] : fp[k - nint]) - '0';
        if (m == 0 && d == 0)
            continue; /* a leading zero, not a significant digit */
        fast = ++nsig <= 19;
        m = m * 10 + (uint64_t)d;
    }
    long e = exp10 - (long)nfrac;
    if (fast && m == 0) {
        *out = neg ? -0.0 : 0.0; /* strtod's zero, whatever the exponent */
        return 0;
    }
    if (fast && m <= (1ull << 53) && e >= -22 && e <= 22) {
        double d = (double)m;
        d = e < 0 ? d / exact_pow10[-e] : d * exact_pow10[e];
        *out = neg ? -d : d;
        return 0;
    }
    char buf[JSONSCAN_MAX_NUMBER + 1];
    memcpy(buf, tok, toklen);
    buf[toklen] = '\0';
    char *endp;
    errno = 0;
    double d = strtod(buf, &endp);
    /* A locale with another decimal point would stop strtod early: not ours. */
    if (endp != buf + toklen)
        return -EINVAL;
    /* jansson's jsonp_strtod refuses overflow and keeps underflow. */
    if ((d == HUGE_VAL || d == -HUGE_VAL) && errno == ERANGE)
        return -ERANGE;
    *out = d;
    return 0;
}

static int scan_number(struct jsonscan *js, struct jsonscan_value *v)
{
    const char *p = js->p, *end = js->end, *tok = p;
    bool neg = p < end && *p == '-';
    p += neg;
    if (p >= end || !is_digit(*p))
        return -EINVAL;
    const char *ip = p;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p))
            p++;
    size_t nint = (size_t)(p - ip), nfrac = 0;
    const char *fp = p;
    bool real = false;
    if (p < end && *p == '.') {
        real = true;
        fp = ++p;
        while (p < end && is_digit(*p))
            p++;
        nfrac = (size_t)(p - fp);
        if (nfrac == 0)
            return -EINVAL;
    }
    long exp10 = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        bool eneg = p < end && *p == '-';
        if (p < end && (*p == '-' || *p == '+'))
            p++;
        const char *ep = p;
        for (; p < end && is_digit(*p); p++)
            if (exp10 < 100000) /* saturates: strtod decides such texts */
                exp10 = exp10 * 10 + (*p - '0');
        if (p == ep)
            return -EINVAL;
        exp10 = eneg ? -exp10 : exp10;
    }
    size_t toklen = (size_t)(p - tok);
    if (toklen > JSONSCAN_MAX_NUMBER)
        return -EINVAL;
    js->p = p;
    if (real) {
        v->type = JSONSCAN_REAL;
        return real_value(tok, toklen, neg, ip, nint, fp, nfrac, exp10, &v->d);
    }
    /* An integer as jansson's strtoll reads it: out of long long's range is
     * its "too big integer". 19 digits fit in a uint64_t. */
    if (nint > 19)
        return -ERANGE;
    uint64_t u = 0;
    for (size_t k = 0; k < nint; k++)
        u = u * 10 + (uint64_t)(ip[k] - '0');
    if (u > (uint64_t)LLONG_MAX + neg)
        return -ERANGE;
    v->type = JSONSCAN_INTEGER;
    v->i = neg ? (u == (uint64_t)LLONG_MAX + 1 ? LLONG_MIN : -(long long)u) : (long long)u;
    return 0;
}

static int literal(struct jsonscan *js, const char *word, size_t n, enum jsonscan_type type,
                   struct jsonscan_value *v)
{
    if ((size_t)(js->end - js->p) < n || memcmp(js->p, word, n) != 0)
        return -EINVAL;
    js->p += n;
    v->type = type;
    return 0;
}

int jsonscan_value(struct jsonscan *js, struct jsonscan_value *v)
{
    skip_ws(js);
    if (js->p >= js->end)
        return -EINVAL;
    switch (*js->p) {
    case '"':
        v->type = JSONSCAN_STRING;
        return scan_string(js, &v->s, &v->len);
    case '{':
    case '[':
        if (js->depth >= JSONSCAN_MAX_DEPTH)
            return -EINVAL;
        js->depth++;
        v->type = *js->p++ == '{' ? JSONSCAN_OBJECT : JSONSCAN_ARRAY;
        v->obj = v->type == JSONSCAN_OBJECT ? ++js->nobj : 0;
        return 0;
    case 't':
        return literal(js, "true", 4, JSONSCAN_TRUE, v);
    case 'f':
        return literal(js, "false", 5, JSONSCAN_FALSE, v);
    case 'n':
        return literal(js, "null", 4, JSONSCAN_NULL, v);
    default:
        return scan_number(js, v);
    }
}

/* Before the next member or element: the closing bracket (*more false), or,
 * after the first, the comma. */
static int next_in(struct jsonscan *js, char close, size_t i, bool *more)
{
    skip_ws(js);
    if (js->p >= js->end)
        return -EINVAL;
    if (*js->p == close) {
        js->p++;
        js->depth--;
        *more = false;
        return 0;
    }
    if (i > 0) {
        if (*js->p != ',')
            return -EINVAL;
        js->p++;
    }
    *more = true;
    return 0;
}

int jsonscan_member(struct jsonscan *js, size_t i, bool *more, const char **key, size_t *klen)
{
    int rc = next_in(js, '}', i, more);
    if (rc < 0 || !*more)
        return rc;
    skip_ws(js);
    if (js->p >= js->end || *js->p != '"' || (rc = scan_string(js, key, klen)) < 0)
        return -EINVAL;
    skip_ws(js);
    if (js->p >= js->end || *js->p != ':')
        return -EINVAL;
    js->p++;
    return 0;
}

int jsonscan_element(struct jsonscan *js, size_t i, bool *more)
{
    return next_in(js, ']', i, more);
}

bool jsonscan_first_key_is(const struct jsonscan *js, const char *key)
{
    const char *p = js->p;
    while (p < js->end && is_ws(*p))
        p++;
    size_t n = strlen(key);
    /* The key's bytes cannot hold a quote or backslash: an exact match up
     * to the closing quote is that key and no other. */
    return (size_t)(js->end - p) >= n + 2 && p[0] == '"' && memcmp(p + 1, key, n) == 0 && p[n + 1] == '"';
}

/* FNV-1a over the object number and the key. Not keyed: a text crafted to
 * collide only makes inserts reach JSONSCAN_MAX_PROBE, and the text is
 * refused (to jansson, whose hash is seeded). */
static uint32_t key_hash(uint32_t obj, const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (int k = 0; k < 4; k++) {
        h ^= (obj >> (8 * k)) & 0xff;
        h *= 16777619u;
    }
    for (size_t k = 0; k < n; k++) {
        h ^= (unsigned char)s[k];
        h *= 16777619u;
    }
    return h;
}

/* The slot for (obj, key): the free one to fill, or the one that holds it.
 * NULL when JSONSCAN_MAX_PROBE slots are taken by others. */
static struct jsonscan_key *key_slot(struct jsonscan_key *keys, size_t nslots, uint32_t obj, const char *s,
                                     uint32_t len, uint32_t h)
{
    size_t mask = nslots - 1;
    for (size_t n = 0, i = h & mask; n < JSONSCAN_MAX_PROBE; n++, i = (i + 1) & mask) {
        struct jsonscan_key *k = &keys[i];
        if (!k->s || (k->hash == h && k->obj == obj && k->len == len && memcmp(k->s, s, len) == 0))
            return k;
    }
    return NULL;
}

static int keys_grow(struct jsonscan *js)
{
    size_t n = 2 * js->nslots;
    if (n > 2 * JSONSCAN_MAX_KEYS)
        return -E2BIG;
    struct jsonscan_key *keys = calloc(n, sizeof(*keys));
    if (!keys)
        return -ENOMEM;
    for (size_t i = 0; i < js->nslots; i++) {
        const struct jsonscan_key *k = &js->keys[i];
        struct jsonscan_key *to = k->s ? key_slot(keys, n, k->obj, k->s, k->len, k->hash) : NULL;
        if (k->s && !to) {
            free(keys);
            return -E2BIG;
        }
        if (to)
            *to = *k;
    }
    if (js->keys != js->inline_keys)
        free(js->keys);
    js->keys = keys;
    js->nslots = n;
    return 0;
}

int jsonscan_key_unique(struct jsonscan *js, uint32_t obj, const char *key, size_t klen)
{
    if (klen > UINT32_MAX)
        return -E2BIG;
    /* Load at most 1/2, so that probes stay short. */
    int rc = 2 * (js->nkeys + 1) > js->nslots ? keys_grow(js) : 0;
    if (rc < 0)
        return rc;
    uint32_t h = key_hash(obj, key, klen);
    struct jsonscan_key *k = key_slot(js->keys, js->nslots, obj, key, (uint32_t)klen, h);
    if (!k)
        return -E2BIG;
    if (k->s)
        return -EEXIST;
    *k = (struct jsonscan_key){.s = key, .len = (uint32_t)klen, .obj = obj, .hash = h};
    js->nkeys++;
    return 0;
}

int jsonscan_skip(struct jsonscan *js, const struct jsonscan_value *v)
{
    if (v->type != JSONSCAN_OBJECT && v->type != JSONSCAN_ARRAY)
        return 0;
    bool obj = v->type == JSONSCAN_OBJECT, more = true;
    for (size_t i = 0;; i++) {
        const char *key;
        size_t klen;
        int rc = obj ? jsonscan_member(js, i, &more, &key, &klen) : jsonscan_element(js, i, &more);
        if (rc < 0 || !more)
            return rc;
        if (obj && (rc = jsonscan_key_unique(js, v->obj, key, klen)) < 0)
            return rc;
        struct jsonscan_value sub;
        /* Recursion is bounded by JSONSCAN_MAX_DEPTH (jsonscan_value). */
        if ((rc = jsonscan_value(js, &sub)) < 0 || (rc = jsonscan_skip(js, &sub)) < 0)
            return rc;
    }
}

int jsonscan_end(const struct jsonscan *js)
{
    const char *p = js->p;
    while (p < js->end && is_ws(*p))
        p++;
    return p == js->end && js->depth == 0 ? 0 : -EINVAL;
}
