/*
 * plan_steps: the plan backend's files for a scripted run, one folder per
 * step, for tests/live/test_plan_apply.sh to apply into namespaces.
 *
 *   plan_steps OUTDIR      -> OUTDIR/topo.json, OUTDIR/step1 .. OUTDIR/stepN
 *
 * A 2-leaf x 4-spine fabric (uplink k of leaf l: interface eth<k>,
 * 10.<l>.<k>.1/31, next hop 10.<l>.<k>.0). Each step's plan comes from
 * plan_build and is written by the plan backend itself (backend_apply), so
 * each step's <switch>.ipbatch is the transition from the step before and
 * the folder is copied out after each apply. The script: flows pinned on
 * both leaves and a firewall-mark class; flows that move; flows that end;
 * L2 losing everything; then L1 losing everything. Prints one line per
 * step saying what it changes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/planbuild.h"
#include "policy/topo.h"
#include "tests/lib/topo_2x4.h"

struct fl {
    const char *src, *dst;  /* host names */
    uint16_t sport;
    int spine;              /* path index; -1 = flow ended */
};

#define NSTEPS 5
#define NFLOWS 5

/* Per step, per flow, the path index (-1 ended); and whether the class is on. */
static const int script[NSTEPS][NFLOWS] = {
    {0, 1, 1, 2, -1},     /* f1 S1, f2 S2, f3 S2 (L1); f4 S3 (L2) */
    {2, 1, -1, 2, 3},     /* f1 moves S1 -> S3, f3 ends, f5 comes on S4 */
    {2, 0, -1, -1, 3},    /* f2 moves S2 -> S1, f4 ends: L2 has only the class */
    {-1, -1, -1, -1, 3},  /* only f5; class gone: L2 loses everything */
    {-1, -1, -1, -1, -1}, /* L1 loses everything */
};
static const int class_on[NSTEPS] = {1, 1, 1, 0, 0};
static const char *const what[NSTEPS] = {
    "f1 S1, f2 S2, f3 S2 on L1; f4 S3 on L2; class fwmark 0x10/0xff over S1,S2 on both leaves",
    "f1 moves S1->S3, f3 ends, f5 new on S4",
    "f2 moves S2->S1, f4 ends (L2 keeps the class only)",
    "f1 and f2 end, the class goes: L2 loses everything, L1 keeps f5",
    "f5 ends: L1 loses everything",
};
static const struct { const char *src, *dst; uint16_t sport; } flows[NFLOWS] = {
    {"H1", "H2", 1001}, {"H1", "H2", 1002}, {"H1", "H2", 1003}, {"H2", "H1", 2001}, {"H1", "H2", 1005}};

static struct topo *make_topo(const char *out)
{
    char json[8192];
    topo_2x4_json(json, sizeof(json));
    char path[4096], err[256];
    snprintf(path, sizeof(path), "%s/topo.json", out);
    FILE *f = fopen(path, "w");
    if (!f || fputs(json, f) < 0 || fclose(f)) {
        fprintf(stderr, "plan_steps: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    struct topo *t;
    if (topo_from_json(json, strlen(json), "plan_steps", &t, err, sizeof(err))) {
        fprintf(stderr, "plan_steps: %s\n", err);
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: plan_steps OUTDIR\n");
        return 2;
    }
    const char *out = argv[1];
    struct topo *t = make_topo(out);
    char cur[4096], err[256];
    snprintf(cur, sizeof(cur), "%s/cur", out);
    if (mkdir(cur, 0755) && errno != EEXIST) {
        fprintf(stderr, "plan_steps: %s: %s\n", cur, strerror(errno));
        return 1;
    }
    struct backend_cfg cfg;
    backend_cfg_default(&cfg);
    cfg.plan_dir = cur;
    cfg.topo = t;
    struct backend *b;
    if (backend_open("plan", &cfg, &b, err, sizeof(err))) {
        fprintf(stderr, "plan_steps: %s\n", err);
        return 1;
    }
    struct plan_opts o;
    plan_opts_default(&o);
    int allow[2] = {(int)topo_node_by_name(t, "S1"), (int)topo_node_by_name(t, "S2")};
    uint16_t weight[2] = {1, 3};
    struct planbuild_class cls = {.fwmark = 0x10, .fwmask = 0xff, .dscp = -1, .allow = allow,
                                  .weight = weight, .nallow = 2};
    for (int s = 0; s < NSTEPS; s++) {
        struct planbuild_flow pf[NFLOWS];
        uint32_t dirs[NFLOWS][TOPO_MAX_HOPS];
        size_t n = 0;
        for (int i = 0; i < NFLOWS; i++) {
            if (script[s][i] < 0)
                continue;
            uint32_t a = topo_node_by_name(t, flows[i].src), z = topo_node_by_name(t, flows[i].dst);
            pf[n] = (struct planbuild_flow){.af = 4, .proto = 17, .sport = flows[i].sport, .dport = 4791,
                                            .dirs = dirs[n]};
            memcpy(pf[n].src, t->nodes[a].addr, 16);
            memcpy(pf[n].dst, t->nodes[z].addr, 16);
            pf[n].ndirs = topo_path_dirs(t, a, z, (uint64_t)script[s][i], dirs[n], TOPO_MAX_HOPS);
            n++;
        }
        struct plan p;
        plan_init(&p);
        struct backend_result res;
        if (plan_build(t, &o, pf, n, &cls, class_on[s] ? 1 : 0, &p, err, sizeof(err)) ||
            backend_apply(b, &p, &res)) {
            fprintf(stderr, "plan_steps: step %d: %s\n", s + 1, err[0] ? err : res.error);
            return 1;
        }
        plan_free(&p);
        char cmd[8400];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/step%d' && cp -r '%s' '%s/step%d'", out, s + 1, cur, out, s + 1);
        if (system(cmd)) {
            fprintf(stderr, "plan_steps: %s failed\n", cmd);
            return 1;
        }
        printf("step %d: %s (+%zu -%zu rules, +%zu -%zu routes)\n", s + 1, what[s], res.rules_added,
               res.rules_deleted, res.routes_added, res.routes_deleted);
    }
    backend_close(b);
    topo_free(t);
    return 0;
}
