/* Unit tests for policy/demand: Hedera's demand estimation (NSDI 2010, 4.1). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>

#include "policy/demand.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* Hedera (NSDI 2010) Figure 4, hosts A=0, B=1, C=2, D=3, NIC capacity 1.
 * Flows: A->B, A->C, A->D, B->A (two), B->C, C->A, C->D, D->B (two). A and B
 * are receive-limited to 1/3 per flow; C->D takes the 2/3 that C's NIC has
 * left after C->A converged at A; A->C and A->D split what A has left after
 * A->B converged at B. */
static void test_hedera_figure4(void **state)
{
    (void)state;
    enum { A, B, C, D };
    uint32_t src[10] = { A, A, A, B, B, B, C, C, D, D };
    uint32_t dst[10] = { B, C, D, A, A, C, A, D, B, B };
    const double want[10] = { 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3,
                              1.0 / 3, 1.0 / 3, 2.0 / 3, 1.0 / 3, 1.0 / 3 };
    double d[10];
    assert_int_equal(demand_estimate(4, NULL, 10, src, dst, d), 0);
    for (int f = 0; f < 10; f++)
        NEAR(d[f], want[f]);
}

/* Hosts A=0, B=1, C=2, X=3, Y=4. A sends to X and Y, B and C to Y: Y is the
 * bottleneck receiver and splits 1/3 each; A's flow to X takes the 2/3 its
 * NIC has left. */
static void test_receiver_bottleneck(void **state)
{
    (void)state;
    uint32_t src[4] = { 0, 0, 1, 2 }, dst[4] = { 3, 4, 4, 4 };
    double d[4];
    assert_int_equal(demand_estimate(5, NULL, 4, src, dst, d), 0);
    NEAR(d[0], 2.0 / 3);
    NEAR(d[1], 1.0 / 3);
    NEAR(d[2], 1.0 / 3);
    NEAR(d[3], 1.0 / 3);
}

/* Receiver with one small flow: it keeps its share, the others split the rest. */
static void test_small_flow_kept(void **state)
{
    (void)state;
    /* A(0) sends to X(4), Y(5), Z(6), W(7): 1/4 each. B(1), C(2) to X too. */
    uint32_t src[6] = { 0, 0, 0, 0, 1, 2 }, dst[6] = { 4, 5, 6, 7, 4, 4 };
    double d[6];
    assert_int_equal(demand_estimate(8, NULL, 6, src, dst, d), 0);
    NEAR(d[0], 0.25);
    NEAR(d[4], 0.375);
    NEAR(d[5], 0.375);
    NEAR(d[1], 0.25);
}

static void test_capacity_and_errors(void **state)
{
    (void)state;
    uint32_t src[2] = { 0, 0 }, dst[2] = { 1, 2 };
    double cap[3] = { 100, 100, 30 }, d[2];
    assert_int_equal(demand_estimate(3, cap, 2, src, dst, d), 0);
    NEAR(d[1], 30);
    NEAR(d[0], 70);
    uint32_t bad[2] = { 0, 9 };
    assert_int_equal(demand_estimate(3, cap, 2, src, bad, d), -EINVAL);
    cap[1] = 0;
    assert_int_equal(demand_estimate(3, cap, 2, src, dst, d), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hedera_figure4), cmocka_unit_test(test_receiver_bottleneck),
        cmocka_unit_test(test_small_flow_kept),
        cmocka_unit_test(test_capacity_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
