/* jsonscan: values of the subset, read as jansson reads them (integers at
 * long long's bounds, reals bit for bit as strtod rounds them, fast path and
 * not); what is left to jansson (escapes, non-ASCII, control bytes, leading
 * zeros, bare '.', depth beyond the bound, overflow); structure (commas,
 * colons, trailing garbage); repeated keys at any depth of a skipped value;
 * the key set (objects told apart, growth beyond its inline slots, its
 * bound); and that every text it accepts, jansson accepts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller/jsonscan.h"
#include "tests/lib/xorshift.h"

/* Reads one whole text, skipping every value: 0 or the scanner's code. */
static int scan_all(const char *text, size_t len)
{
    struct jsonscan *js = test_malloc(sizeof(*js));
    jsonscan_init(js, text, len);
    struct jsonscan_value v;
    int rc = jsonscan_value(js, &v);
    if (rc == 0)
        rc = jsonscan_skip(js, &v);
    if (rc == 0)
        rc = jsonscan_end(js);
    jsonscan_free(js);
    test_free(js);
    return rc;
}

static bool jansson_takes(const char *text, size_t len)
{
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
    json_decref(j);
    return j != NULL;
}

/* One scalar text as the scanner reads it. */
static int scan_one(const char *text, struct jsonscan_value *v)
{
    struct jsonscan *js = test_malloc(sizeof(*js));
    jsonscan_init(js, text, strlen(text));
    int rc = jsonscan_value(js, v);
    if (rc == 0)
        rc = jsonscan_end(js);
    jsonscan_free(js);
    test_free(js);
    return rc;
}

static void scalars(void **st)
{
    (void)st;
    struct jsonscan_value v;
    assert_int_equal(scan_one(" \"eth1\" ", &v), 0);
    assert_int_equal(v.type, JSONSCAN_STRING);
    assert_int_equal(v.len, 4);
    assert_memory_equal(v.s, "eth1", 4);
    assert_int_equal(scan_one("\"\"", &v), 0);
    assert_int_equal(v.len, 0);
    assert_int_equal(scan_one("true", &v), 0);
    assert_int_equal(v.type, JSONSCAN_TRUE);
    assert_int_equal(scan_one("false", &v), 0);
    assert_int_equal(v.type, JSONSCAN_FALSE);
    assert_int_equal(scan_one("null", &v), 0);
    assert_int_equal(v.type, JSONSCAN_NULL);
    /* Integers: long long's range, as jansson's strtoll. */
    assert_int_equal(scan_one("9223372036854775807", &v), 0);
    assert_true(v.type == JSONSCAN_INTEGER && v.i == LLONG_MAX);
    assert_int_equal(scan_one("-9223372036854775808", &v), 0);
    assert_true(v.type == JSONSCAN_INTEGER && v.i == LLONG_MIN);
    assert_int_equal(scan_one("-0", &v), 0);
    assert_true(v.type == JSONSCAN_INTEGER && v.i == 0);
    assert_int_equal(scan_one("9223372036854775808", &v), -ERANGE);
    assert_int_equal(scan_one("-9223372036854775809", &v), -ERANGE);
    assert_int_equal(scan_one("100000000000000000000", &v), -ERANGE);
    /* Reals: a '.' or an exponent makes one, even when integral. */
    assert_int_equal(scan_one("1.0", &v), 0);
    assert_true(v.type == JSONSCAN_REAL && v.d == 1.0);
    assert_int_equal(scan_one("4E10", &v), 0);
    assert_true(v.type == JSONSCAN_REAL && v.d == 4e10);
    assert_int_equal(scan_one("-0.0", &v), 0);
    assert_true(v.type == JSONSCAN_REAL && v.d == 0 && signbit(v.d));
    assert_int_equal(scan_one("0e999", &v), 0);
    assert_true(v.d == 0);
    assert_int_equal(scan_one("1e-400", &v), 0); /* underflow is kept, as jansson keeps it */
    assert_true(v.d == 0);
    assert_int_equal(scan_one("1e309", &v), -ERANGE);
    assert_int_equal(scan_one("-1.5e400", &v), -ERANGE);
}

/* Texts outside the subset or not JSON: refused, never guessed at. */
static void refusals(void **st)
{
    (void)st;
    const char *bad[] = {
        "\"a\\\"b\"", "\"\\u0041\"", "\"caf\xc3\xa9\"", "\"tab\there\"", "\"del\x7f\"", "\"open",
        "01", "-", "+1", ".5", "1.", "1.e5", "1e", "1e+", "--1", "0x10", "Infinity", "NaN", "tru", "nul",
        "truex", "1x", "[1,]", "[,1]", "[1 2]", "{\"a\" 1}", "{\"a\":1,}", "{,\"a\":1}", "{\"a\":1 \"b\":2}",
        "{1:2}", "{\"a\":}", "[", "{", "{\"a\":1", "]", "", "   ", "{} {}", "{}x",
        "[1]\v", "\xef\xbb\xbf{}",
        /* beyond JSONSCAN_MAX_NUMBER characters */
        "1.00000000000000000000000000000000000000000000000000000000000000000",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (scan_all(bad[i], strlen(bad[i])) >= 0)
            fail_msg("case %zu '%s' accepted", i, bad[i]);
    }
    /* "{}\0": the NUL is part of the text. */
    assert_true(scan_all("{}\0", 3) < 0);
    /* Nesting: JSONSCAN_MAX_DEPTH levels, not one more. */
    char deep[2 * JSONSCAN_MAX_DEPTH + 4];
    memset(deep, '[', JSONSCAN_MAX_DEPTH);
    memset(deep + JSONSCAN_MAX_DEPTH, ']', JSONSCAN_MAX_DEPTH);
    assert_int_equal(scan_all(deep, 2 * JSONSCAN_MAX_DEPTH), 0);
    char deeper[2 * JSONSCAN_MAX_DEPTH + 4];
    memset(deeper, '[', JSONSCAN_MAX_DEPTH + 1);
    memset(deeper + JSONSCAN_MAX_DEPTH + 1, ']', JSONSCAN_MAX_DEPTH + 1);
    assert_int_equal(scan_all(deeper, 2 * JSONSCAN_MAX_DEPTH + 2), -EINVAL);
}

/* What the scanner takes, jansson takes too; and the subset's own texts
 * are all taken. */
static void accepted_texts_are_json(void **st)
{
    (void)st;
    const char *good[] = {
        "{}", "[]", " { } ", "\t[\r\n]\n", "{\"a\":1}", "{\"a\" : [1, 2.5, -3e-2, true, false, null, \"x\"]}",
        "{\"\":0}", "[{\"a\":{\"a\":{\"a\":[]}}}]", "[0, -0, 0.5, 123456789012345678]",
        "{\"a\":{\"b\":1},\"b\":{\"a\":1}}", "{\"a\":[{\"k\":1},{\"k\":1}]}",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        if (scan_all(good[i], strlen(good[i])) != 0)
            fail_msg("case %zu '%s' refused", i, good[i]);
        assert_true(jansson_takes(good[i], strlen(good[i])));
    }
}

/* A repeated key is refused at any depth of a skipped value, and only in
 * the same object. */
static void repeated_keys(void **st)
{
    (void)st;
    assert_int_equal(scan_all("{\"a\":1,\"a\":2}", 13), -EEXIST);
    const char *t = "{\"x\":{\"y\":[{\"k\":1,\"j\":2,\"k\":3}]}}";
    assert_int_equal(scan_all(t, strlen(t)), -EEXIST);
    assert_false(jansson_takes(t, strlen(t)));
    t = "{\"x\":{\"k\":1},\"y\":{\"k\":1},\"k\":{\"k\":{\"k\":1}}}";
    assert_int_equal(scan_all(t, strlen(t)), 0);
}

/* The key set across growth and at its bound. */
static void key_set(void **st)
{
    (void)st;
    struct jsonscan *js = test_malloc(sizeof(*js));
    jsonscan_init(js, "", 0);
    size_t n = 4 * JSONSCAN_INLINE_KEYS;
    char *names = test_malloc(n * 8);
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(names + 8 * i, 8, "k%zu", i);
        assert_int_equal(jsonscan_key_unique(js, 1, names + 8 * i, (size_t)len), 0);
        assert_int_equal(jsonscan_key_unique(js, 2, names + 8 * i, (size_t)len), 0);
    }
    assert_true(js->nslots > JSONSCAN_INLINE_KEYS);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(jsonscan_key_unique(js, 1, names + 8 * i, strlen(names + 8 * i)), -EEXIST);
        assert_int_equal(jsonscan_key_unique(js, 2, names + 8 * i, strlen(names + 8 * i)), -EEXIST);
    }
    assert_int_equal(jsonscan_key_unique(js, 3, "k0", 2), 0);
    assert_int_equal(jsonscan_key_unique(js, 1, "", 0), 0);
    assert_int_equal(jsonscan_key_unique(js, 1, "", 0), -EEXIST);
    jsonscan_free(js);
    test_free(names);
    /* No more than JSONSCAN_MAX_KEYS: the text goes to jansson. */
    jsonscan_init(js, "", 0);
    static const char key[] = "k";
    int rc = 0;
    size_t added = 0;
    for (uint32_t obj = 1; rc == 0; obj++, added += rc == 0)
        rc = jsonscan_key_unique(js, obj, key, 1);
    assert_int_equal(rc, -E2BIG);
    assert_int_equal(added, JSONSCAN_MAX_KEYS);
    jsonscan_free(js);
    test_free(js);
}

/* Members and elements one at a time, as ingest reads a report. */
static void members_and_elements(void **st)
{
    (void)st;
    const char *t = " { \"reports\" : [ {\"a\": 1} , 2 ] , \"z\" : null } ";
    struct jsonscan *js = test_malloc(sizeof(*js));
    jsonscan_init(js, t, strlen(t));
    struct jsonscan_value v, w;
    bool more;
    const char *key;
    size_t klen;
    assert_int_equal(jsonscan_value(js, &v), 0);
    assert_int_equal(v.type, JSONSCAN_OBJECT);
    assert_true(jsonscan_first_key_is(js, "reports"));
    assert_false(jsonscan_first_key_is(js, "report"));
    assert_false(jsonscan_first_key_is(js, "reportsx"));
    assert_int_equal(jsonscan_member(js, 0, &more, &key, &klen), 0);
    assert_true(more && klen == 7 && memcmp(key, "reports", 7) == 0);
    assert_int_equal(jsonscan_value(js, &w), 0);
    assert_int_equal(w.type, JSONSCAN_ARRAY);
    assert_int_equal(jsonscan_element(js, 0, &more), 0);
    assert_true(more);
    struct jsonscan_value o;
    assert_int_equal(jsonscan_value(js, &o), 0);
    assert_int_equal(o.type, JSONSCAN_OBJECT);
    assert_int_not_equal(o.obj, v.obj);
    assert_int_equal(jsonscan_skip(js, &o), 0);
    assert_int_equal(jsonscan_element(js, 1, &more), 0);
    assert_int_equal(jsonscan_value(js, &w), 0);
    assert_true(w.type == JSONSCAN_INTEGER && w.i == 2);
    assert_int_equal(jsonscan_element(js, 2, &more), 0);
    assert_false(more);
    assert_int_equal(jsonscan_member(js, 1, &more, &key, &klen), 0);
    assert_true(more && klen == 1 && key[0] == 'z');
    assert_int_equal(jsonscan_value(js, &w), 0);
    assert_int_equal(w.type, JSONSCAN_NULL);
    assert_int_not_equal(jsonscan_end(js), 0); /* the object is still open */
    assert_int_equal(jsonscan_member(js, 2, &more, &key, &klen), 0);
    assert_false(more);
    assert_int_equal(jsonscan_end(js), 0);
    jsonscan_free(js);
    test_free(js);
    /* An empty object has no first key. */
    js = test_malloc(sizeof(*js));
    jsonscan_init(js, "{ }", 3);
    assert_int_equal(jsonscan_value(js, &v), 0);
    assert_false(jsonscan_first_key_is(js, "reports"));
    jsonscan_free(js);
    test_free(js);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { return xorshift64(&rng); }

/* Random numbers of every shape against jansson's values, bit for bit:
 * short ones (the scanner's own multiply/divide), long mantissas and far
 * exponents (strtod), and integers near the bounds. */
static void numbers_as_jansson_reads_them(void **st)
{
    (void)st;
    size_t fast = 0;
    for (int k = 0; k < 20000; k++) {
        char num[80];
        size_t n = 0;
        if (rnd() % 3 == 0)
            num[n++] = '-';
        int nint = 1 + (int)(rnd() % (k % 4 == 0 ? 20 : 8));
        for (int i = 0; i < nint; i++)
            num[n++] = (char)('0' + (i == 0 && nint > 1 ? 1 + rnd() % 9 : rnd() % 10));
        if (rnd() % 2) {
            num[n++] = '.';
            int nfrac = 1 + (int)(rnd() % 18);
            for (int i = 0; i < nfrac; i++)
                num[n++] = (char)('0' + rnd() % 10);
        }
        if (rnd() % 3 == 0)
            n += (size_t)snprintf(num + n, sizeof(num) - n, "%c%s%d", rnd() % 2 ? 'e' : 'E',
                                  rnd() % 2 ? "-" : rnd() % 2 ? "+" : "", (int)(rnd() % (k % 5 == 0 ? 400 : 30)));
        num[n] = '\0';
        struct jsonscan_value v;
        int rc = scan_one(num, &v);
        json_error_t je;
        json_t *j = json_loadb(num, n, JSON_DECODE_ANY, &je);
        if (rc < 0) {
            /* Refused: out of range for jansson too. */
            if (j)
                fail_msg("'%s' refused (%d), jansson reads it", num, rc);
            continue;
        }
        if (!j)
            fail_msg("'%s' read, jansson refuses it: %s", num, je.text);
        if (json_is_integer(j)) {
            assert_int_equal(v.type, JSONSCAN_INTEGER);
            if (v.i != json_integer_value(j))
                fail_msg("'%s': %lld, jansson %lld", num, v.i, json_integer_value(j));
        } else {
            assert_int_equal(v.type, JSONSCAN_REAL);
            double d = json_real_value(j);
            if (memcmp(&d, &v.d, sizeof(d)) != 0)
                fail_msg("'%s': %.17g, jansson %.17g", num, v.d, d);
            fast += n < 18;
        }
        json_decref(j);
    }
    assert_true(fast > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scalars),          cmocka_unit_test(refusals),
        cmocka_unit_test(accepted_texts_are_json), cmocka_unit_test(repeated_keys),
        cmocka_unit_test(key_set),          cmocka_unit_test(members_and_elements),
        cmocka_unit_test(numbers_as_jansson_reads_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
