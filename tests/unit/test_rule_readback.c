/*
 * The netlink backend's read-back comparison (issue 14, item 2): a kernel
 * before 6.13 skips FRA_DSCP, an attribute above its FRA_MAX, and installs
 * the rule without it. Here the kernel's reply is crafted by hand, as such a
 * kernel would send it in a rule dump (RTM_NEWRULE with FRA_PRIORITY,
 * FRA_TABLE, FRA_PROTOCOL and no FRA_DSCP), parsed by nlroute_rule_parse
 * and compared with the rule that was sent (plan_rule_dropped): the DSCP
 * selector shows as dropped, so the backend deletes that rule and refuses
 * DSCP rules on that switch. The same reply with FRA_DSCP compares equal;
 * other selectors dropped, values changed or selectors added are told apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/fib_rules.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <string.h>
#include <sys/socket.h>

#include "controller/nlroute.h"
#include "controller/plan.h"

#ifndef FRA_DSCP
#define FRA_DSCP 25
#endif

/* A rule dump entry as the kernel writes it: dscp < 0 leaves FRA_DSCP out. */
static struct nl_msg *reply(uint32_t prio, uint32_t table, int dscp, uint16_t sport)
{
    struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWRULE, NLM_F_MULTI);
    struct fib_rule_hdr frh = {.family = AF_INET, .action = FR_ACT_TO_TBL, .table = RT_TABLE_UNSPEC};
    assert_non_null(m);
    assert_int_equal(nlmsg_append(m, &frh, sizeof(frh), NLMSG_ALIGNTO), 0);
    assert_int_equal(nla_put_u32(m, FRA_TABLE, table), 0);
    assert_int_equal(nla_put_u32(m, FRA_PRIORITY, prio), 0);
    assert_int_equal(nla_put_u8(m, FRA_PROTOCOL, 77), 0);
    if (sport) {
        struct fib_rule_port_range pr = {sport, sport};
        assert_int_equal(nla_put(m, FRA_SPORT_RANGE, sizeof(pr), &pr), 0);
        assert_int_equal(nla_put_u8(m, FRA_IP_PROTO, 17), 0);
    }
    if (dscp >= 0)
        assert_int_equal(nla_put_u8(m, FRA_DSCP, (uint8_t)dscp), 0);
    return m;
}

static struct plan_rule parsed(struct nl_msg *m)
{
    struct plan_rule r;
    uint8_t proto = 0;
    assert_int_equal(nlroute_rule_parse(nlmsg_hdr(m), &r, &proto), 0);
    assert_int_equal(proto, 77);
    memcpy(r.sw, "L1", 3);
    nlmsg_free(m);
    return r;
}

/* The class rule tierflow sends for DSCP 26. */
static const struct plan_rule sent = {.sw = "L1", .prio = 20256, .table = 7828, .af = 4, .dscp = 26};

static void dscp_dropped_is_seen(void **state)
{
    (void)state;
    struct plan_rule got = parsed(reply(20256, 7828, -1, 0));
    assert_int_equal(got.dscp, -1);           /* the reply has no DSCP selector */
    unsigned d = plan_rule_dropped(&sent, &got);
    assert_int_equal(d, PLAN_SEL_DSCP);
    assert_string_equal(plan_sel_name(d), "dscp (FRA_DSCP)");
    print_message("sent: pref 20256 dscp 26 table 7828; kernel's reply: pref 20256 table 7828 (no FRA_DSCP) "
                  "-> dropped: %s\n", plan_sel_name(d));
    /* What the kernel holds has no selector left: it would take every
     * packet to a remote leaf, which is why the backend deletes it at once. */
    assert_int_equal(plan_rule_sels(&got), 0);
}

static void dscp_kept_is_equal(void **state)
{
    (void)state;
    struct plan_rule got = parsed(reply(20256, 7828, 26, 0));
    assert_int_equal(got.dscp, 26);
    assert_int_equal(plan_rule_dropped(&sent, &got), 0);
    print_message("sent: pref 20256 dscp 26 table 7828; kernel's reply with FRA_DSCP 26 -> equal\n");
}

static void other_rules_are_told_apart(void **state)
{
    (void)state;
    /* Another DSCP value, another table or priority: another rule. */
    struct plan_rule got = parsed(reply(20256, 7828, 10, 0));
    assert_int_equal(plan_rule_dropped(&sent, &got), PLAN_SEL_OTHER);
    got = parsed(reply(20256, 7829, -1, 0));
    assert_int_equal(plan_rule_dropped(&sent, &got), PLAN_SEL_OTHER);
    got = parsed(reply(20257, 7828, -1, 0));
    assert_int_equal(plan_rule_dropped(&sent, &got), PLAN_SEL_OTHER);
    /* A selector the reply has and the sent rule lacks: not a widening. */
    got = parsed(reply(20256, 7828, 26, 4791));
    assert_int_equal(plan_rule_dropped(&sent, &got), PLAN_SEL_OTHER);
    /* A pin whose source port the kernel dropped. */
    struct plan_rule pin = {.sw = "L1", .prio = 20001, .table = 7701, .af = 4, .ipproto = 17, .sport = 4791,
                            .dport = 0, .dscp = -1};
    got = parsed(reply(20001, 7701, -1, 4791));
    assert_int_equal(plan_rule_dropped(&pin, &got), 0);
    pin.dport = 5000;
    assert_int_equal(plan_rule_dropped(&pin, &got), PLAN_SEL_DPORT);
    assert_string_equal(plan_sel_name(PLAN_SEL_DPORT), "destination port (FRA_DPORT_RANGE)");
}

static void not_a_rule_is_refused(void **state)
{
    (void)state;
    struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWROUTE, 0);
    struct plan_rule r;
    uint8_t proto;
    assert_int_equal(nlroute_rule_parse(nlmsg_hdr(m), &r, &proto), -EINVAL);
    nlmsg_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dscp_dropped_is_seen),
        cmocka_unit_test(dscp_kept_is_equal),
        cmocka_unit_test(other_rules_are_told_apart),
        cmocka_unit_test(not_a_rule_is_refused),
    };
    return cmocka_run_group_tests_name("rule_readback", tests, NULL, NULL);
}
