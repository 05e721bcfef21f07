/*
 * linkstats: see linkstats.h.
 */
#include "probes/linkstats.h"

#include <errno.h>
#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

struct linkstats {
    struct nl_sock *sk;
    struct nl_cache *links, *qdiscs;
};

void linkstats_free(struct linkstats *ls)
{
    if (!ls)
        return;
    if (ls->links)
        nl_cache_free(ls->links);
    if (ls->qdiscs)
        nl_cache_free(ls->qdiscs);
    if (ls->sk)
        nl_socket_free(ls->sk);
    free(ls);
}

int linkstats_new(struct linkstats **out)
{
    struct linkstats *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return -ENOMEM;
    int r = -ENOMEM;
    if ((ls->sk = nl_socket_alloc()) && (r = nl_connect(ls->sk, NETLINK_ROUTE)) == 0 &&
        (r = rtnl_link_alloc_cache(ls->sk, AF_UNSPEC, &ls->links)) == 0)
        r = rtnl_qdisc_alloc_cache(ls->sk, &ls->qdiscs);
    if (r) {
        log_err("rtnetlink: %s", nl_geterror(r));
        linkstats_free(ls);
        return -EIO;
    }
    *out = ls;
    return 0;
}

int linkstats_refresh(struct linkstats *ls)
{
    int r = nl_cache_refill(ls->sk, ls->links);
    if (!r)
        r = nl_cache_refill(ls->sk, ls->qdiscs);
    if (r) {
        log_warn("rtnetlink refresh: %s", nl_geterror(r));
        return -EIO;
    }
    return 0;
}

int linkstats_read(struct linkstats *ls, const char *ifname, struct linkstats_counters *c)
{
    memset(c, 0, sizeof(*c));
    c->t = tf_now_mono();
    struct rtnl_link *l = rtnl_link_get_by_name(ls->links, ifname);
    if (!l)
        return -ENODEV;
    c->valid = true;
    c->tx_bytes = rtnl_link_get_stat(l, RTNL_LINK_TX_BYTES);
    c->rx_bytes = rtnl_link_get_stat(l, RTNL_LINK_RX_BYTES);
    c->tx_pkts = rtnl_link_get_stat(l, RTNL_LINK_TX_PACKETS);
    c->rx_pkts = rtnl_link_get_stat(l, RTNL_LINK_RX_PACKETS);
    c->drops = rtnl_link_get_stat(l, RTNL_LINK_TX_DROPPED) +
               rtnl_link_get_stat(l, RTNL_LINK_RX_DROPPED);
    c->errors = rtnl_link_get_stat(l, RTNL_LINK_TX_ERRORS) +
                rtnl_link_get_stat(l, RTNL_LINK_RX_ERRORS);
    rtnl_link_operstate2str(rtnl_link_get_operstate(l), c->oper, sizeof(c->oper));
    /* Absent on kernels before 3.19: then no change is ever reported. */
    uint32_t cc;
    if (rtnl_link_get_carrier_changes(l, &cc) == 0)
        c->carrier_changes = cc;
    /* Only a real root qdisc has counters worth reporting (not noqueue). */
    struct rtnl_qdisc *q = rtnl_qdisc_get_by_parent(ls->qdiscs, rtnl_link_get_ifindex(l),
                                                    TC_H_ROOT);
    if (q) {
        const char *kind = rtnl_tc_get_kind(TC_CAST(q));
        if (kind && strcmp(kind, "noqueue") != 0) {
            c->has_qdisc = true;
            c->q_backlog = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_BACKLOG);
            c->q_drops = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_DROPS);
            c->q_overlimits = rtnl_tc_get_stat(TC_CAST(q), RTNL_TC_OVERLIMITS);
        }
        rtnl_qdisc_put(q);
    }
    rtnl_link_put(l);
    return 0;
}

static uint64_t delta(uint64_t a, uint64_t b)
{
    return b >= a ? b - a : 0;
}

void linkstats_rate(const struct linkstats_counters *prev, const struct linkstats_counters *cur,
                    struct report_link *out)
{
    out->oper = cur->valid ? cur->oper : "absent";
    if (!prev->valid || !cur->valid || cur->t <= prev->t)
        return;
    double dt = cur->t - prev->t;
    out->tx_bps = 8.0 * (double)delta(prev->tx_bytes, cur->tx_bytes) / dt;
    out->rx_bps = 8.0 * (double)delta(prev->rx_bytes, cur->rx_bytes) / dt;
    out->tx_pps = (double)delta(prev->tx_pkts, cur->tx_pkts) / dt;
    out->rx_pps = (double)delta(prev->rx_pkts, cur->rx_pkts) / dt;
    out->drops = delta(prev->drops, cur->drops);
    out->errors = delta(prev->errors, cur->errors);
    out->carrier_changes = delta(prev->carrier_changes, cur->carrier_changes);
    out->has_qdisc = cur->has_qdisc;
    out->qdisc_backlog = cur->q_backlog;
    out->qdisc_drops = prev->has_qdisc ? delta(prev->q_drops, cur->q_drops) : 0;
    out->qdisc_overlimits = prev->has_qdisc ? delta(prev->q_overlimits, cur->q_overlimits) : 0;
}

double linkstats_speed_bps(const char *ifname)
{
    char path[128], buf[32];
    if (snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname) >= (int)sizeof(path))
        return 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    /* Reading speed of a link that is down fails with EINVAL: unknown. */
    char *s = fgets(buf, sizeof(buf), f);
    fclose(f);
    if (!s)
        return 0;
    buf[strcspn(buf, "\n")] = '\0';
    uint64_t mbit;
    if (tf_parse_u64(buf, 1, 100000000, &mbit) < 0)
        return 0;
    return (double)mbit * 1e6;
}
