/*
 * jscan: see jscan.h. The validator is a recursive descent bounded by
 * JSCAN_MAX_DEPTH; the pull side shares its token readers (string, number,
 * literal), so that what validates is exactly what the pull calls read.
 */
#include "controller/jscan.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vstate {
    const char *s, *p, *end;
    const char *bad;             /* offending byte */
    const char *why;
};

static void ws_skip(const char **p, const char *end)
{
    while (*p < end && (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r'))
        (*p)++;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static bool hex4(const char *p, const char *end, unsigned *out)
{
    if (end - p < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p[i]);
        if (h < 0)
            return false;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return true;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid. */
static int utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (n == 0 || end - p < n)
        return 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

/* Past a string already validated: only the closing quote matters. */
static void skip_string(const char **pp, const char *end)
{
    const char *p = *pp + 1;
    while (p < end && *p != '"')
        p += *p == '\\' ? 2 : 1;
    *pp = p < end ? p + 1 : end;
}

static void put_utf8(char *out, size_t cap, size_t *n, unsigned cp)
{
    char b[4];
    int k;
    if (cp < 0x80) {
        b[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3f));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        b[0] = (char)(0xf0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        k = 4;
    }
    for (int i = 0; i < k; i++, (*n)++)
        if (out && *n + 1 < cap)
            out[*n] = b[i];
}

/* A string token at *pp (the opening quote). Decodes into out (cap bytes,
 * NUL-terminated, may be NULL) and sets *len to the full decoded length.
 * On error returns false with *pp at the offending byte and *why set. */
static bool read_string(const char **pp, const char *end, char *out, size_t cap, size_t *len, const char **why)
{
    const char *p = *pp + 1;
    size_t n = 0;
    while (p < end && *p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x80 && c != '\\') { /* the common case: plain ASCII */
            if (out && n + 1 < cap)
                out[n] = (char)c;
            n++;
            p++;
            continue;
        }
        if (c < 0x20) {
            *pp = p;
            *why = "control character in a string";
            return false;
        }
        if (c == '\\') {
            if (end - p < 2) {
                *pp = p;
                *why = "unterminated escape";
                return false;
            }
            char e = p[1];
            unsigned cp;
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e && simple) {
                static const char map[] = "\"\\/\b\f\n\r\t";
                put_utf8(out, cap, &n, (unsigned char)map[simple - "\"\\/bfnrt"]);
                p += 2;
                continue;
            }
            if (e != 'u' || !hex4(p + 2, end, &cp)) {
                *pp = p;
                *why = "invalid escape";
                return false;
            }
            p += 6;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, end, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff) {
                    *pp = p;
                    *why = "invalid UTF-16 surrogate pair";
                    return false;
                }
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                p += 6;
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                *pp = p - 6;
                *why = "invalid UTF-16 surrogate";
                return false;
            }
            if (cp == 0) {
                *pp = p - 6;
                *why = "\\u0000 is not allowed";
                return false;
            }
            put_utf8(out, cap, &n, cp);
            continue;
        }
        int k = c < 0x80 ? 1 : utf8_len((const unsigned char *)p, (const unsigned char *)end);
        if (k == 0) {
            *pp = p;
            *why = "invalid UTF-8";
            return false;
        }
        for (int i = 0; i < k; i++, n++)
            if (out && n + 1 < cap)
                out[n] = p[i];
        p += k;
    }
    if (p >= end) {
        *pp = p;
        *why = "unterminated string";
        return false;
    }
    if (out && cap)
        out[n < cap ? n : cap - 1] = '\0';
    *len = n;
    *pp = p + 1;
    return true;
}

/* A number token (RFC 8259 grammar); *is_int when it has neither fraction nor exponent. */
static bool read_number(const char **pp, const char *end, bool *is_int, const char **why)
{
    const char *p = *pp;
    *is_int = true;
    if (p < end && *p == '-')
        p++;
    if (p < end && *p == '0') {
        p++;
    } else if (p < end && *p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    } else {
        *pp = p;
        *why = "invalid number";
        return false;
    }
    if (p < end && *p == '.') {
        *is_int = false;
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            *pp = p;
            *why = "invalid number";
            return false;
        }
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = false;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9') {
            *pp = p;
            *why = "invalid number";
            return false;
        }
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p - *pp >= JSCAN_NUM_MAX) {
        *why = "number too long";
        return false;
    }
    *pp = p;
    return true;
}

static bool read_literal(const char **pp, const char *end, enum jscan_type *t)
{
    static const struct { const char *w; enum jscan_type t; } lits[] = {
        {"true", JSCAN_TRUE}, {"false", JSCAN_FALSE}, {"null", JSCAN_NULL}};
    for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
        size_t n = strlen(lits[i].w);
        if ((size_t)(end - *pp) >= n && memcmp(*pp, lits[i].w, n) == 0) {
            *pp += n;
            *t = lits[i].t;
            return true;
        }
    }
    return false;
}

static bool v_value(struct vstate *v, int depth);

static bool v_fail(struct vstate *v, const char *at, const char *why)
{
    v->bad = at;
    v->why = why;
    return false;
}

static bool v_container(struct vstate *v, int depth, bool obj)
{
    if (depth >= JSCAN_MAX_DEPTH)
        return v_fail(v, v->p, "nesting too deep");
    char close = obj ? '}' : ']';
    v->p++;
    ws_skip(&v->p, v->end);
    if (v->p < v->end && *v->p == close) {
        v->p++;
        return true;
    }
    for (;;) {
        if (obj) {
            if (v->p >= v->end || *v->p != '"')
                return v_fail(v, v->p, "string or '}' expected");
            size_t n;
            const char *q = v->p;
            if (!read_string(&q, v->end, NULL, 0, &n, &v->why))
                return v_fail(v, q, v->why);
            v->p = q;
            ws_skip(&v->p, v->end);
            if (v->p >= v->end || *v->p != ':')
                return v_fail(v, v->p, "':' expected");
            v->p++;
            ws_skip(&v->p, v->end);
        }
        if (!v_value(v, depth + 1))
            return false;
        ws_skip(&v->p, v->end);
        if (v->p < v->end && *v->p == ',') {
            v->p++;
            ws_skip(&v->p, v->end);
            continue;
        }
        if (v->p < v->end && *v->p == close) {
            v->p++;
            return true;
        }
        return v_fail(v, v->p, obj ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static bool v_value(struct vstate *v, int depth)
{
    if (v->p >= v->end)
        return v_fail(v, v->p, "unexpected end of input");
    char c = *v->p;
    if (c == '{' || c == '[')
        return v_container(v, depth, c == '{');
    const char *q = v->p;
    if (c == '"') {
        size_t n;
        if (!read_string(&q, v->end, NULL, 0, &n, &v->why))
            return v_fail(v, q, v->why);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        bool is_int;
        if (!read_number(&q, v->end, &is_int, &v->why))
            return v_fail(v, q, v->why);
    } else {
        enum jscan_type t;
        if (!read_literal(&q, v->end, &t))
            return v_fail(v, v->p, "invalid token");
    }
    v->p = q;
    return true;
}

int jscan_validate(const char *s, size_t len, struct jscan_err *e)
{
    struct vstate v = {.s = s, .p = s, .end = s + len};
    ws_skip(&v.p, v.end);
    bool ok = v_value(&v, 0);
    if (ok) {
        ws_skip(&v.p, v.end);
        if (v.p < v.end)
            ok = v_fail(&v, v.p, "end of input expected after the value");
    }
    if (ok)
        return 0;
    int line = 1, col = 0;
    for (const char *p = s; p < v.bad; p++) {
        col++;
        if (*p == '\n') {
            line++;
            col = 0;
        }
    }
    e->line = line;
    e->column = col + 1;
    e->position = (int)(v.bad - s) + (v.bad < v.end);
    if (v.bad < v.end) {
        unsigned char c = (unsigned char)*v.bad;
        if (c >= 0x21 && c < 0x7f)
            snprintf(e->text, sizeof(e->text), "%s near '%c'", v.why, c);
        else
            snprintf(e->text, sizeof(e->text), "%s near byte 0x%02x", v.why, c);
    } else {
        snprintf(e->text, sizeof(e->text), "%s at the end of input", v.why);
    }
    return -EINVAL;
}

void jscan_init(struct jscan *j, const char *s, size_t len)
{
    j->s = j->p = s;
    j->end = s + len;
}

int jscan_value(struct jscan *j, struct jscan_val *v)
{
    const char *why;
    ws_skip(&j->p, j->end);
    if (j->p >= j->end)
        return -1;
    char c = *j->p;
    v->is_int = v->int_ok = v->str_long = false;
    v->slen = 0;
    v->str[0] = '\0';
    if (c == '{' || c == '[') {
        v->t = c == '{' ? JSCAN_OBJ : JSCAN_ARR;
        j->p++;
        return 0;
    }
    const char *q = j->p;
    if (c == '"') {
        v->t = JSCAN_STR;
        if (!read_string(&q, j->end, v->str, sizeof(v->str), &v->slen, &why))
            return -1;
        v->str_long = v->slen >= sizeof(v->str);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        v->t = JSCAN_NUM;
        if (!read_number(&q, j->end, &v->is_int, &why))
            return -1;
        char buf[JSCAN_NUM_MAX + 1];
        size_t n = (size_t)(q - j->p);
        memcpy(buf, j->p, n);
        buf[n] = '\0';
        v->num = strtod(buf, NULL);
        if (v->is_int) {
            errno = 0;
            v->i = strtoll(buf, NULL, 10);
            v->int_ok = errno == 0;
        }
    } else if (!read_literal(&q, j->end, &v->t)) {
        return -1;
    }
    j->p = q;
    return 0;
}

bool jscan_key(struct jscan *j, char *key, size_t cap)
{
    const char *why;
    ws_skip(&j->p, j->end);
    if (j->p < j->end && *j->p == ',') {
        j->p++;
        ws_skip(&j->p, j->end);
    }
    if (j->p >= j->end || *j->p != '"') {
        if (j->p < j->end)
            j->p++; /* the '}' */
        return false;
    }
    size_t n;
    if (!read_string(&j->p, j->end, key, cap, &n, &why)) {
        j->p = j->end;
        return false;
    }
    ws_skip(&j->p, j->end);
    if (j->p < j->end && *j->p == ':')
        j->p++;
    return true;
}

bool jscan_elem(struct jscan *j)
{
    ws_skip(&j->p, j->end);
    if (j->p < j->end && *j->p == ',') {
        j->p++;
        return true;
    }
    if (j->p >= j->end || *j->p == ']') {
        if (j->p < j->end)
            j->p++;
        return false;
    }
    return true;
}

void jscan_skip(struct jscan *j, const struct jscan_val *v)
{
    if (v->t != JSCAN_OBJ && v->t != JSCAN_ARR)
        return;
    /* Balanced brackets, strings skipped whole (they may hold brackets). */
    int depth = 1;
    while (j->p < j->end && depth > 0) {
        char c = *j->p;
        if (c == '"') {
            skip_string(&j->p, j->end);
            continue;
        }
        depth += (c == '{' || c == '[') - (c == '}' || c == ']');
        j->p++;
    }
}
