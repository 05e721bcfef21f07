/* Unit tests for policy/maxmin: textbook max-min fair allocations. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>

#include "policy/maxmin.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void test_shared_link(void **state)
{
    (void)state;
    double cap[1] = { 1 }, dem[2] = { INFINITY, INFINITY }, rate[2];
    uint32_t off[3] = { 0, 1, 2 }, dirs[2] = { 0, 0 };
    assert_int_equal(maxmin_rates(1, cap, 2, off, dirs, dem, rate), 0);
    NEAR(rate[0], 0.5);
    NEAR(rate[1], 0.5);
    dem[0] = 0.2;   /* a small demand leaves the rest to the other */
    assert_int_equal(maxmin_rates(1, cap, 2, off, dirs, dem, rate), 0);
    NEAR(rate[0], 0.2);
    NEAR(rate[1], 0.8);
}

/* f0 crosses both links, f1 only link 0 (cap 1), f2 only link 1 (cap 2). */
static void test_two_links(void **state)
{
    (void)state;
    double cap[2] = { 1, 2 }, dem[3] = { INFINITY, INFINITY, INFINITY }, rate[3];
    uint32_t off[4] = { 0, 2, 3, 4 }, dirs[4] = { 0, 1, 0, 1 };
    assert_int_equal(maxmin_rates(2, cap, 3, off, dirs, dem, rate), 0);
    NEAR(rate[0], 0.5);
    NEAR(rate[1], 0.5);
    NEAR(rate[2], 1.5);
}

/* A parking lot: one long flow over 3 links, one short flow on each. */
static void test_parking_lot(void **state)
{
    (void)state;
    double cap[3] = { 1, 1, 1 }, dem[4] = { INFINITY, INFINITY, INFINITY, INFINITY }, rate[4];
    uint32_t off[5] = { 0, 3, 4, 5, 6 }, dirs[6] = { 0, 1, 2, 0, 1, 2 };
    assert_int_equal(maxmin_rates(3, cap, 4, off, dirs, dem, rate), 0);
    for (int i = 0; i < 4; i++)
        NEAR(rate[i], 0.5);
    dem[1] = 0.1;   /* link 0 frees up, but links 1 and 2 still split */
    assert_int_equal(maxmin_rates(3, cap, 4, off, dirs, dem, rate), 0);
    NEAR(rate[0], 0.5);
    NEAR(rate[1], 0.1);
    NEAR(rate[2], 0.5);
}

static void test_bad(void **state)
{
    (void)state;
    double cap[1] = { 1 }, dem[1] = { 0 }, rate[1];
    uint32_t off[2] = { 0, 1 }, dirs[1] = { 0 }, bad[1] = { 5 };
    assert_int_equal(maxmin_rates(1, cap, 1, off, dirs, dem, rate), -EINVAL);
    dem[0] = 1;
    assert_int_equal(maxmin_rates(1, cap, 1, off, bad, dem, rate), -EINVAL);
    uint32_t none[2] = { 0, 0 };   /* no directions: gets its demand */
    assert_int_equal(maxmin_rates(1, cap, 1, none, dirs, dem, rate), 0);
    NEAR(rate[0], 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_link), cmocka_unit_test(test_two_links),
        cmocka_unit_test(test_parking_lot), cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
