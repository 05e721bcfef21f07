/*
 * bgpbench: times the bgp backend against a real leaf (tests/bench/45-bgp.sh
 * sets up the lab): how long from backend_apply to the steered /32 in the
 * leaf's kernel, and how many routes a second when N are announced at once
 * and withdrawn. The leaf's kernel is read with `ip -n NETNS`.
 *
 *   bgpbench TOPOLOGY DIR LOCAL_ADDR LEAF SPINE NETNS N|split
 *
 * split: two pins to one host by LEAF's uplink to SPINE and one by its
 * other uplink; prints the leaf's kernel route once it has both next hops
 * (the weights FRR made of the link-bandwidth communities) and whether the
 * backend's read-back of the speaker matches ("read-back: matches"), then
 * exits.
 *
 * TOPOLOGY has the switches' mgmt and asn (lab_bgp_topology); the flows go
 * from LEAF by its uplink to SPINE to hosts 10.200.0.0/16 (not a leaf of the
 * topology: no spine's view can withdraw them).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/planbuild.h"
#include "policy/topo.h"

static void dst_of(size_t i, uint8_t d[4])
{
    d[0] = 10;
    d[1] = 200;
    d[2] = (uint8_t)(i >> 8);
    d[3] = (uint8_t)(i & 0xff);
}

/* The table of leaf's uplink k (next hop via, out of dev) in p. */
static int add_uplink(struct plan *p, const char *leaf, uint32_t k, const char *via, const char *dev)
{
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan_route rt = {.table = o.table_base + k, .af = 4, .dst_len = 16, .dst = {10, 200}, .nnh = 1,
                            .nh = {{.af = 4, .weight = 1}}};
    int af;
    tf_strlcpy(rt.sw, leaf, sizeof(rt.sw));
    tf_strlcpy(rt.nh[0].dev, dev, sizeof(rt.nh[0].dev));
    return tf_addr_parse(via, &af, rt.nh[0].via) < 0 || plan_add_route(p, &rt) ? -EINVAL : 0;
}

/* A pin of a flow from leaf (source port sport) to host i by uplink k. */
static int add_pin(struct plan *p, const char *leaf, uint32_t k, size_t i, uint16_t sport)
{
    struct plan_opts o;
    plan_opts_default(&o);
    struct plan_rule r = {.prio = o.prio_min + k, .table = o.table_base + k, .af = 4, .ipproto = 6, .src_len = 32,
                          .dst_len = 32, .sport = sport, .dport = 5201, .dscp = -1, .src = {10, 0, 1, 1}};
    tf_strlcpy(r.sw, leaf, sizeof(r.sw));
    dst_of(i, r.dst);
    return plan_add_rule(p, &r) ? -ENOMEM : 0;
}

/* n flows from leaf by uplink k (next hop via, out of dev) to n hosts. */
static int make_plan(struct plan *p, const char *leaf, uint32_t k, const char *via, const char *dev, size_t first,
                     size_t n)
{
    plan_init(p);
    int rc = add_uplink(p, leaf, k, via, dev);
    for (size_t i = first; i < first + n && !rc; i++)
        rc = add_pin(p, leaf, k, i, (uint16_t)(10000 + i % 50000));
    return rc;
}

/* Routes to 10.200/16 hosts in the leaf's kernel. */
static long kernel_count(const char *netns)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "ip -n '%s' -4 route show proto bgp root 10.200.0.0/16 | grep -c . || true", netns);
    FILE *f = popen(cmd, "r");
    long n = -1;
    if (f && fscanf(f, "%ld", &n) != 1)
        n = -1;
    if (f)
        pclose(f);
    return n;
}

/* The split: 2 pins by uplink k, 1 by uplink k2, to host 0; prints the
 * leaf's route to it once it has two next hops (30 s at most). */
static int split(struct backend *b, const struct topo *t, const char *leaf, const char *netns, uint32_t k, uint32_t l,
                 uint32_t k2, uint32_t l2)
{
    struct plan p;
    struct backend_result res;
    plan_init(&p);
    int rc = add_uplink(&p, leaf, k, t->links[l].hi_ip, t->links[l].lo_if);
    rc = rc ? rc : add_uplink(&p, leaf, k2, t->links[l2].hi_ip, t->links[l2].lo_if);
    rc = rc ? rc : add_pin(&p, leaf, k, 0, 10000);
    rc = rc ? rc : add_pin(&p, leaf, k, 0, 10001);
    rc = rc ? rc : add_pin(&p, leaf, k2, 0, 10002);
    plan_sort(&p);
    rc = rc ? rc : backend_apply(b, &p, &res);
    plan_free(&p);
    char cmd[256], line[1024] = "";
    uint8_t d[4];
    dst_of(0, d);
    snprintf(cmd, sizeof(cmd), "ip -n '%s' -o -4 route show proto bgp %u.%u.%u.%u/32", netns, d[0], d[1], d[2], d[3]);
    double t0 = tf_now_mono();
    while (!rc && tf_now_mono() - t0 < 30) {
        FILE *f = popen(cmd, "r");
        if (f && !fgets(line, sizeof(line), f))
            line[0] = '\0';
        if (f)
            pclose(f);
        char *n1 = strstr(line, "nexthop");
        if (n1 && strstr(n1 + 1, "nexthop"))
            break;
        line[0] = '\0';
        nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
    }
    if (!rc && line[0])
        printf("split route after %.3f s: %s", tf_now_mono() - t0, line);
    /* The read-back after the change compares the speaker's Adj-RIB-Out,
     * link bandwidths and no-advertise included (6 s: it runs at least
     * every 5 s). */
    bool ok = false;
    for (double t1 = tf_now_mono(); !rc && line[0] && !(ok = backend_healthy(b)) && tf_now_mono() - t1 < 6;)
        nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
    if (!rc && line[0])
        printf("read-back: %s\n", ok ? "matches" : backend_error(b));
    return rc || !line[0] ? 1 : 0;
}

/* Seconds until the leaf holds want routes (polled), -1 after 30 s. */
static double wait_count(const char *netns, long want, double t0)
{
    while (tf_now_mono() - t0 < 30) {
        if (kernel_count(netns) == want)
            return tf_now_mono() - t0;
        nanosleep(&(struct timespec){0, 2 * 1000000L}, NULL);
    }
    return -1;
}

int main(int argc, char **argv)
{
    uint64_t n = 0;
    bool splitting = argc == 8 && !strcmp(argv[7], "split");
    if (argc != 8 || (!splitting && tf_parse_u64(argv[7], 1, 60000, &n))) {
        fprintf(stderr, "usage: bgpbench TOPOLOGY DIR LOCAL_ADDR LEAF SPINE NETNS N|split\n");
        return 2;
    }
    const char *leaf = argv[4], *spine = argv[5], *netns = argv[6];
    char err[512];
    struct topo *t;
    if (topo_load(argv[1], &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "bgpbench: %s\n", err);
        return 1;
    }
    uint32_t ln = topo_node_by_name(t, leaf), sn = topo_node_by_name(t, spine), k = UINT32_MAX, link = 0;
    uint32_t k2 = UINT32_MAX, link2 = 0;
    for (uint32_t i = 0; ln != TOPO_NONE && i < t->nodes[ln].up_count; i++) {
        uint32_t l = t->up_links[t->nodes[ln].up_first + i];
        if (t->links[l].hi == sn)
            k = i, link = l;
        else if (k2 == UINT32_MAX)
            k2 = i, link2 = l;
    }
    if (k == UINT32_MAX || (splitting && k2 == UINT32_MAX)) {
        fprintf(stderr, "bgpbench: %s has no uplink to %s%s\n", leaf, spine, k == UINT32_MAX ? "" : " and another");
        return 1;
    }
    struct backend_cfg bc;
    backend_cfg_default(&bc);
    bc.topo = t;
    bc.bgp = (struct backend_bgp){argv[2], argv[3], "exabgp", 64999, 9};
    struct backend *b;
    if (backend_open("bgp", &bc, &b, err, sizeof(err)) < 0) {
        fprintf(stderr, "bgpbench: %s\n", err);
        return 1;
    }
    /* Sessions up: a first route goes through. */
    struct plan p, empty;
    plan_init(&empty);
    struct backend_result res;
    int rc = make_plan(&p, leaf, k, t->links[link].hi_ip, t->links[link].lo_if, 60000, 1);
    double t0 = tf_now_mono();
    if (!rc)
        rc = backend_apply(b, &p, &res);
    plan_free(&p);
    if (rc || wait_count(netns, 1, t0) < 0 || backend_apply(b, &empty, &res) || wait_count(netns, 0, t0) < 0) {
        fprintf(stderr, "bgpbench: no route reached %s: %s\n", leaf, rc ? res.error : "timeout");
        backend_withdraw(b, &res);
        backend_close(b);
        return 1;
    }
    if (splitting) {
        rc = split(b, t, leaf, netns, k, link, k2, link2);
        backend_withdraw(b, &res);
        backend_close(b);
        topo_free(t);
        return rc;
    }
    /* One route at a time, five times: apply -> kernel. */
    double lat[5];
    for (int i = 0; i < 5 && !rc; i++) {
        rc = make_plan(&p, leaf, k, t->links[link].hi_ip, t->links[link].lo_if, (size_t)i, 1);
        t0 = tf_now_mono();
        if (!rc)
            rc = backend_apply(b, &p, &res);
        plan_free(&p);
        lat[i] = rc ? -1 : wait_count(netns, 1, t0);
        if (!rc)
            rc = backend_apply(b, &empty, &res) || wait_count(netns, 0, tf_now_mono()) < 0;
    }
    if (!rc) {
        printf("announce -> kernel route (1 route, 5 runs):");
        for (int i = 0; i < 5; i++)
            printf(" %.3f", lat[i]);
        printf(" s\n");
        rc = make_plan(&p, leaf, k, t->links[link].hi_ip, t->links[link].lo_if, 0, n);
        t0 = tf_now_mono();
        double applied = 0;
        if (!rc && !(rc = backend_apply(b, &p, &res)))
            applied = tf_now_mono() - t0;
        plan_free(&p);
        double in = rc ? -1 : wait_count(netns, (long)n, t0);
        t0 = tf_now_mono();
        double out = rc || in < 0 || backend_apply(b, &empty, &res) ? -1 : wait_count(netns, 0, t0);
        if (in > 0 && out > 0)
            printf("%llu routes: backend_apply %.3f s; all in the kernel %.3f s (%.0f routes/s); withdrawn %.3f s "
                   "(%.0f routes/s)\n", (unsigned long long)n, applied, in, n / in, out, n / out);
        else
            rc = 1;
    }
    backend_withdraw(b, &res);
    backend_close(b);
    topo_free(t);
    return rc ? 1 : 0;
}
