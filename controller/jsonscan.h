/*
 * jsonscan: a strict pull scanner over a JSON text in memory, for the fast
 * path of report ingest (controller/ingest.c). It builds no tree and
 * allocates nothing for values: a value is read in place, a member of an
 * object or element of an array at a time, and an unwanted value is skipped.
 *
 * It takes a subset of JSON and refuses, with a negative code, everything
 * else, so that its caller can hand such a text to jansson, which then
 * decides (and names the error's place). Invariants:
 *   - whatever it accepts, jansson (json_loadb with JSON_REJECT_DUPLICATES)
 *     accepts too, with the same values: integers are those jansson reads
 *     as json_int_t, reals are correctly rounded as strtod rounds them;
 *   - the subset: strings of printable ASCII (0x20..0x7e) without escapes,
 *     nesting up to JSONSCAN_MAX_DEPTH, numbers up to JSONSCAN_MAX_NUMBER
 *     characters; an integer or real jansson would call too big is refused;
 *   - a repeated key in one object is refused at any depth: keys the caller
 *     registers (jsonscan_key_unique) and every key of a skipped value go
 *     through one set for the whole text, told apart by object number;
 *   - work is linear in the text: a key set insert looks at no more than
 *     JSONSCAN_MAX_PROBE slots (beyond that the text is refused), the set
 *     grows by doubling up to JSONSCAN_MAX_KEYS keys (ditto).
 */
#ifndef TF_JSONSCAN_H
#define TF_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONSCAN_MAX_DEPTH 32
#define JSONSCAN_MAX_NUMBER 63
#define JSONSCAN_MAX_PROBE 32
#define JSONSCAN_INLINE_KEYS 64 /* slots of the key set before it needs the heap */
#define JSONSCAN_MAX_KEYS (1u << 16) /* keys in the set; a text with more goes to jansson */

enum jsonscan_type {
    JSONSCAN_STRING,
    JSONSCAN_INTEGER,
    JSONSCAN_REAL,
    JSONSCAN_TRUE,
    JSONSCAN_FALSE,
    JSONSCAN_NULL,
    JSONSCAN_OBJECT,             /* only its '{' is read: members follow */
    JSONSCAN_ARRAY,              /* only its '[' is read: elements follow */
};

struct jsonscan_value {
    enum jsonscan_type type;
    const char *s;               /* STRING: its bytes in the text (no escapes in the subset) */
    size_t len;
    long long i;                 /* INTEGER */
    double d;                    /* REAL */
    uint32_t obj;                /* OBJECT: its number, for jsonscan_key_unique */
};

struct jsonscan_key {
    const char *s;               /* NULL: free slot */
    uint32_t len, obj, hash;
};

/* Not to be copied: keys may point at its own inline_keys. */
struct jsonscan {
    const char *p, *end;
    unsigned depth;
    uint32_t nobj;               /* objects opened so far */
    struct jsonscan_key *keys;   /* the key set: inline_keys, or the heap once grown */
    size_t nkeys, nslots;
    struct jsonscan_key inline_keys[JSONSCAN_INLINE_KEYS];
};

void jsonscan_init(struct jsonscan *js, const char *text, size_t len);
/* Releases the key set's heap memory, if it grew. */
void jsonscan_free(struct jsonscan *js);
/* Reads the next value. 0, or -EINVAL (not JSON, or outside the subset),
 * -ERANGE (a number jansson would refuse too), -ENOMEM. */
int  jsonscan_value(struct jsonscan *js, struct jsonscan_value *v);
/* The next member of the object being read: i counts the members already
 * read (0 right after '{'). Sets *more false at the closing '}', else reads
 * the key and its ':' (the value is next). 0 or -EINVAL. */
int  jsonscan_member(struct jsonscan *js, size_t i, bool *more, const char **key, size_t *klen);
/* The same for the elements of an array (the element is next). */
int  jsonscan_element(struct jsonscan *js, size_t i, bool *more);
/* Whether the object just opened (no member read yet) starts with key;
 * reads nothing. */
bool jsonscan_first_key_is(const struct jsonscan *js, const char *key);
/* Registers a key of object obj: -EEXIST when that object already has it,
 * -ENOMEM, or -E2BIG when the set is too crowded to say cheaply. */
int  jsonscan_key_unique(struct jsonscan *js, uint32_t obj, const char *key, size_t klen);
/* Reads the rest of a value whose start jsonscan_value returned (nothing for
 * a scalar), checking it as jsonscan_value would. */
int  jsonscan_skip(struct jsonscan *js, const struct jsonscan_value *v);
/* Only white space is left. 0 or -EINVAL. */
int  jsonscan_end(const struct jsonscan *js);

#endif
