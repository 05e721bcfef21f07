/* common/reportspec: the report bounds the probe and tierflowd share, and
 * what an HTTP status means to the probe's sender (probes/post). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "common/reportspec.h"
#include "controller/state.h"
#include "probes/flowtab.h"
#include "probes/post.h"

static void names_within_bounds(void **state)
{
    (void)state;
    char s[64];
    memset(s, 'n', sizeof(s));
    s[REPORTSPEC_PROBE_MAX] = '\0';
    assert_true(reportspec_name_ok(s, REPORTSPEC_PROBE_MAX));
    s[REPORTSPEC_PROBE_MAX] = 'n';
    s[REPORTSPEC_PROBE_MAX + 1] = '\0';
    assert_false(reportspec_name_ok(s, REPORTSPEC_PROBE_MAX));   /* 32 bytes */
    assert_false(reportspec_name_ok("", REPORTSPEC_IF_MAX));
    assert_false(reportspec_name_ok("eth 1", REPORTSPEC_IF_MAX));
    assert_false(reportspec_name_ok("eth\x7f", REPORTSPEC_IF_MAX));
    assert_false(reportspec_name_ok("eth\xc3\xa9", REPORTSPEC_IF_MAX));
    assert_true(reportspec_name_ok("swp51", REPORTSPEC_IF_MAX));
    assert_true(reportspec_name_ok("p4aqm_ecn_org1.", REPORTSPEC_IF_MAX));
    assert_false(reportspec_name_ok("p4aqm_ecn_org1.pcap", REPORTSPEC_IF_MAX));
    /* The daemon's stores are sized from the same bounds. */
    assert_int_equal(STATE_IF_LEN, REPORTSPEC_IF_MAX + 1);
}

static void source_names_round_trip(void **state)
{
    (void)state;
    const char *want[] = {"pcap", "erspan", "sflow"};
    for (int i = 0; i < REPORTSPEC_SRC_N; i++) {
        assert_string_equal(reportspec_source_name(i), want[i]);
        assert_int_equal(reportspec_source_parse(want[i]), i);
    }
    assert_string_equal(reportspec_source_name(REPORTSPEC_SRC_N), "?");
    assert_string_equal(reportspec_source_name(-1), "?");
    assert_int_equal(reportspec_source_parse("netflow"), -EINVAL);
    /* Probe and daemon store the same values. */
    assert_int_equal(FLOW_SRC_SFLOW, STATE_SRC_SFLOW);
    assert_int_equal(FLOW_SRC_ERSPAN, STATE_SRC_ERSPAN);
}

/* The bounds an entry's link sets: twice its capacity; packets at the
 * smallest frame, over the interval. */
static void link_bounds(void **state)
{
    (void)state;
    assert_true(reportspec_rate_bound(100e9) == 200e9);
    /* 100 Gb/s of 84-byte frames is 148.8 Mpkt/s; twice that in 2 s. */
    assert_true(reportspec_pkts_bound(100e9, 2) > 5.95e8 && reportspec_pkts_bound(100e9, 2) < 5.96e8);
    assert_true(reportspec_pkts_bound(100e9, 0) == 0);
    /* The absolute bounds sit above every relative one a port could set. */
    assert_true(reportspec_rate_bound(4e12) < 1.0001 * REPORTSPEC_MAX_BPS);
    assert_true(REPORTSPEC_MAX_SAMPLING >= 1 << 24);
}

static void status_classes(void **state)
{
    (void)state;
    assert_int_equal(post_status_class(200), 0);
    assert_int_equal(post_status_class(204), 0);
    assert_int_equal(post_status_class(400), -EBADMSG);
    assert_int_equal(post_status_class(401), -EBADMSG);
    assert_int_equal(post_status_class(413), -EBADMSG);
    assert_int_equal(post_status_class(500), -EAGAIN);
    assert_int_equal(post_status_class(503), -EAGAIN);
    assert_int_equal(post_status_class(0), -EAGAIN);
    assert_int_equal(post_status_class(302), -EAGAIN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_within_bounds),
        cmocka_unit_test(source_names_round_trip),
        cmocka_unit_test(status_classes),
        cmocka_unit_test(link_bounds),
    };
    return cmocka_run_group_tests_name("reportspec", tests, NULL, NULL);
}
