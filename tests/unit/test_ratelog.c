/* common/ratelog: a repeated line passes once per period with the count of
 * those held back; keys are apart; the cap holds whatever the keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "common/ratelog.h"

static void once_per_period_with_the_count(void **st)
{
    (void)st;
    static struct ratelog r = RATELOG_INIT(60);
    uint64_t held = 99;
    assert_true(ratelog_pass(&r, "a|L1|stale", 1000, &held));
    assert_int_equal(held, 0);
    for (int i = 1; i < 60; i++)
        assert_false(ratelog_pass(&r, "a|L1|stale", 1000 + i, &held));
    /* Another key is news. */
    assert_true(ratelog_pass(&r, "b|L1|stale", 1001, &held));
    assert_int_equal(held, 0);
    assert_true(ratelog_pass(&r, "a|L1|stale", 1060, &held));
    assert_int_equal(held, 59);
    assert_false(ratelog_pass(&r, "a|L1|stale", 1061, &held));
}

static void many_keys_are_capped(void **st)
{
    (void)st;
    static struct ratelog r = RATELOG_INIT(10);
    uint64_t held = 0;
    unsigned passed = 0;
    char key[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "sender-%d", i);
        passed += ratelog_pass(&r, key, 5000, &held);
    }
    assert_int_equal(passed, RATELOG_BURST);
    /* The next period: the first line that passes counts those the cap held. */
    assert_true(ratelog_pass(&r, "sender-new", 5010, &held));
    assert_int_equal(held, 1000 - RATELOG_BURST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(once_per_period_with_the_count),
        cmocka_unit_test(many_keys_are_capped),
    };
    return cmocka_run_group_tests_name("ratelog", tests, NULL, NULL);
}
