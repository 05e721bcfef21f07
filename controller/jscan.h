/*
 * jscan: a bounded, allocation-free pull scanner over a JSON text (RFC 8259),
 * for documents whose schema the caller knows (probe reports), where building
 * a tree of values (jansson) cost ten times the rest of ingest.
 *
 * Use: jscan_validate() checks the whole text once (syntax, UTF-8, escapes,
 * nesting at most JSCAN_MAX_DEPTH, nothing after the value) and reports the
 * first error with its line, column and byte position; then jscan_init()
 * and the pull calls walk it: jscan_value() reads one value (a container's
 * opening bracket only), jscan_key()/jscan_elem() step through an object's
 * members or an array's elements, jscan_skip() skips a value the caller does
 * not want. The pull calls assume a validated text but never read outside
 * it, whatever it holds. Strings are decoded into a fixed buffer of the value
 * (longer ones keep their length and are flagged), numbers are parsed with
 * strtod/strtoll from a bounded copy.
 */
#ifndef TF_JSCAN_H
#define TF_JSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define JSCAN_MAX_DEPTH 64
#define JSCAN_STR_MAX 128      /* decoded string bytes kept, NUL included */
#define JSCAN_NUM_MAX 128      /* longest number token accepted */

enum jscan_type { JSCAN_OBJ, JSCAN_ARR, JSCAN_STR, JSCAN_NUM, JSCAN_TRUE, JSCAN_FALSE, JSCAN_NULL };

struct jscan_err {
    char text[96];
    int line, column, position;  /* 1-based; position: bytes up to and including the offending one */
};

struct jscan {
    const char *s, *p, *end;
};

struct jscan_val {
    enum jscan_type t;
    double num;                  /* JSCAN_NUM */
    bool is_int;                 /* no fraction or exponent */
    bool int_ok;                 /* is_int and fits a long long */
    long long i;
    char str[JSCAN_STR_MAX];     /* JSCAN_STR, decoded, NUL-terminated */
    size_t slen;                 /* decoded length (may exceed what str holds) */
    bool str_long;               /* slen >= JSCAN_STR_MAX: str is truncated */
};

int  jscan_validate(const char *s, size_t len, struct jscan_err *e);
void jscan_init(struct jscan *j, const char *s, size_t len);
/* Reads the next value; for an object or array consumes its bracket only.
 * Returns -1 at the end of the text or on malformed input. */
int  jscan_value(struct jscan *j, struct jscan_val *v);
/* Inside an object: the next member's key (decoded, truncated to cap) and
 * its ':'; false (the '}' consumed) when there is none left. */
bool jscan_key(struct jscan *j, char *key, size_t cap);
/* Inside an array: true before each element, false (the ']' consumed) at its end. */
bool jscan_elem(struct jscan *j);
/* Skips the rest of the value v just read (a container's members). */
void jscan_skip(struct jscan *j, const struct jscan_val *v);

#endif
