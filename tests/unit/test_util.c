/* Unit tests for common/util: strict parsing, prefixes, token files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/util.h"

static void test_parse_u64(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(tf_parse_u64("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(tf_parse_u64("101", 0, 100, &v), -ERANGE);
    assert_int_equal(tf_parse_u64("-1", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64("4x", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64("", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64("99999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
    /* Decimal only (issue 12): no octal, no hex, no leading zero, no sign. */
    assert_int_equal(tf_parse_u64("0", 0, 100, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(tf_parse_u64("010", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64("08", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64("0x10", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64("+5", 0, 100, &v), -EINVAL);
    assert_int_equal(tf_parse_u64(" 5", 0, 100, &v), -EINVAL);
    int af, plen;
    uint8_t a[16];
    assert_int_equal(tf_prefix_parse("10.0.0.0/024", &af, a, &plen), -EINVAL);
    assert_int_equal(tf_prefix_parse("10.0.0.0/24", &af, a, &plen), 0);
    assert_int_equal(plen, 24);
}

static void test_parse_double(void **state)
{
    (void)state;
    double d;
    assert_int_equal(tf_parse_double("0.10", 0, 1, &d), 0);
    assert_true(d > 0.099 && d < 0.101);
    assert_int_equal(tf_parse_double("1.5", 0, 1, &d), -ERANGE);
    assert_int_equal(tf_parse_double("nan", 0, 1, &d), -EINVAL);
    assert_int_equal(tf_parse_double("0.1 ", 0, 1, &d), -EINVAL);
}

static void test_prefix(void **state)
{
    (void)state;
    int af, plen;
    uint8_t p[16], a[16];
    assert_int_equal(tf_prefix_parse("10.0.1.0/24", &af, p, &plen), 0);
    assert_int_equal(af, 4);
    assert_int_equal(plen, 24);
    assert_int_equal(tf_addr_parse("10.0.1.77", &af, a), 0);
    assert_true(tf_prefix_contains(4, p, plen, a));
    assert_int_equal(tf_addr_parse("10.0.2.1", &af, a), 0);
    assert_false(tf_prefix_contains(4, p, plen, a));
    assert_int_equal(tf_prefix_parse("10.0.1.0/33", &af, p, &plen), -EINVAL);
    assert_int_equal(tf_prefix_parse("fd00::/8", &af, p, &plen), 0);
    assert_int_equal(af, 6);
    assert_int_equal(tf_prefix_parse("bogus/8", &af, p, &plen), -EINVAL);
}

static void test_strlcpy(void **state)
{
    (void)state;
    char b[4];
    assert_int_equal(tf_strlcpy(b, "abcdef", sizeof(b)), 6);
    assert_string_equal(b, "abc");
}

static void test_token(void **state)
{
    (void)state;
    char path[] = "/tmp/tf-token-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "s3cret\n", 7), 7);
    close(fd);
    char tok[64];
    assert_int_equal(tf_read_token(path, tok, sizeof(tok)), 0);
    assert_string_equal(tok, "s3cret");
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, "a b\n", 4), 4);
    close(fd);
    assert_int_equal(tf_read_token(path, tok, sizeof(tok)), -EINVAL);
    unlink(path);
    assert_true(tf_read_token("/nonexistent/token", tok, sizeof(tok)) < 0);
}

/* Epoch-aligned interval ends: the next multiple of the interval, pushed
 * by whole intervals past the minimum; a bad interval gives the minimum. */
static void test_until_boundary(void **state)
{
    (void)state;
    assert_float_equal(tf_until_boundary(1000.25, 1.0, 0), 0.75, 1e-9);
    assert_float_equal(tf_until_boundary(1000.75, 1.0, 0.5), 1.25, 1e-9);
    assert_float_equal(tf_until_boundary(1000.0, 1.0, 0.5), 1.0, 1e-9);
    assert_float_equal(tf_until_boundary(1000.05, 0.2, 0.1), 0.15, 1e-6);
    assert_float_equal(tf_until_boundary(1000.15, 0.2, 0.1), 0.25, 1e-6);
    assert_float_equal(tf_until_boundary(1000.9, 1.0, 3.0), 3.1, 1e-6);
    assert_float_equal(tf_until_boundary(1000.9, 0, 0.5), 0.5, 0);
    assert_float_equal(tf_until_boundary(1000.9, -1, 0.5), 0.5, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_parse_double),
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_strlcpy),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_until_boundary),
    };
    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
