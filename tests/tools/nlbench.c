/*
 * nlbench: installs then removes N pinned-flow rules through the netlink
 * backend in the current network namespace (run it under `ip netns exec`),
 * and prints the rates; or, with --write-batch, writes the same rules as
 * `ip -batch` add and delete scripts so that iproute2 can be timed on
 * exactly the same work.
 *
 *   nlbench N                          -> "install S s R/s" and "remove S s R/s"
 *   nlbench --write-batch PREFIX N     -> PREFIX.add and PREFIX.del
 *
 * The namespace must have a device "up1" with 10.255.0.1/31 (next hop
 * 10.255.0.0) so the two tables' routes can be installed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/planbatch.h"

static void make_plan(struct plan *p, size_t n)
{
    plan_init(p);
    for (int k = 0; k < 2; k++) {
        struct plan_route rt = {.sw = "bench", .table = 7700 + (uint32_t)k, .af = 4,
                                .dst_len = 8, .dst = {10, 0, 0, 0}, .nnh = 1,
                                .nh = {{.af = 4, .via = {10, 255, 0, 0}, .dev = "up1", .weight = 1}}};
        if (plan_add_route(p, &rt))
            exit(1);
    }
    for (size_t i = 0; i < n; i++) {
        struct plan_rule r = {.sw = "bench", .prio = 20000 + (uint32_t)(i % 2),
                              .table = 7700 + (uint32_t)(i % 2), .af = 4, .ipproto = 17,
                              .src_len = 32, .dst_len = 32, .sport = (uint16_t)(10000 + i % 50000),
                              .dport = 4791, .dscp = -1,
                              .src = {10, 1, (uint8_t)(i >> 8), (uint8_t)i},
                              .dst = {10, 2, (uint8_t)(i >> 16), (uint8_t)(i >> 4)}};
        if (plan_add_rule(p, &r))
            exit(1);
    }
}

int main(int argc, char **argv)
{
    uint64_t n;
    const char *nstr = argc == 2 ? argv[1] : argc == 4 ? argv[3] : NULL;
    if (!nstr || tf_parse_u64(nstr, 1, 1000000, &n) ||
        (argc == 4 && strcmp(argv[1], "--write-batch"))) {
        fprintf(stderr, "usage: nlbench N | nlbench --write-batch PREFIX N\n");
        return 2;
    }
    struct plan p;
    make_plan(&p, n);
    if (argc == 4) {
        for (int del = 0; del < 2; del++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s.%s", argv[2], del ? "del" : "add");
            FILE *f = fopen(path, "w");
            if (!f || planbatch_write(&p, NULL, f, del, OWNER_PROTO_DEFAULT) || fclose(f)) {
                fprintf(stderr, "nlbench: %s: %s\n", path, strerror(errno));
                return 1;
            }
        }
        return 0;
    }
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    cfg.local_name = "bench";
    struct backend *b;
    char err[256];
    if (backend_open("netlink", &cfg, &b, err, sizeof(err))) {
        fprintf(stderr, "nlbench: %s\n", err);
        return 1;
    }
    struct plan empty;
    plan_init(&empty);
    struct backend_result res;
    double t0 = tf_now_mono();
    int rc = backend_apply(b, &p, &res);
    double t1 = tf_now_mono();
    size_t added = res.rules_added, rt1 = res.round_trips;
    if (!rc)
        rc = backend_apply(b, &empty, &res);
    double t2 = tf_now_mono();
    if (rc) {
        fprintf(stderr, "nlbench: %s\n", res.error);
        return 1;
    }
    printf("install %zu rules: %.3f s, %.0f rules/s, %zu round trips\n", added, t1 - t0,
           (double)added / (t1 - t0), rt1);
    printf("remove %zu rules: %.3f s, %.0f rules/s, %zu round trips\n", res.rules_deleted,
           t2 - t1, (double)res.rules_deleted / (t2 - t1), res.round_trips);
    backend_close(b);
    plan_free(&p);
    return 0;
}
