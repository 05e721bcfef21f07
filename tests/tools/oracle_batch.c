/*
 * oracle_batch: the oracle run's rules (docs/lab.md "The oracle run"): the
 * simulator's assignment for a set of flows, as the `ip -batch` files that
 * install it as static rules, one per switch, before any traffic starts.
 *
 *   oracle_batch TOPO SIM_JSON ALGO FLOWS OUTDIR
 *
 * SIM_JSON is `tierflow-sim --emit-assignment` output for the same flows
 * (in the same order); ALGO names the algorithm whose paths are installed.
 * FLOWS has one line per flow, "SRC_IP DST_IP SPORT DPORT" (TCP). For every
 * switch of the topology the tool writes OUTDIR/SW.install (the switch's
 * whole state: planbatch_full of the plan) and OUTDIR/SW.clear (the same of
 * an empty plan: removes tierflow's rules and tables on that switch). The
 * rules are the ones tierflowd would install (plan_build, its priorities,
 * tables and route protocol), so the oracle differs from tierflow only in
 * how the paths were chosen and in having no probes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/util.h"
#include "controller/backend.h"
#include "controller/planbatch.h"
#include "controller/planbuild.h"
#include "policy/topo.h"

#define MAX_FLOWS 4096

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "oracle_batch: %s: %s\n", what, why);
    return 1;
}

/* The path's node names as link directions; -EINVAL names the hop. */
static int path_dirs(const struct topo *t, json_t *names, uint32_t *dirs, int max, char *err, size_t errlen)
{
    int n = (int)json_array_size(names) - 1;
    if (n < 1 || n > max) {
        snprintf(err, errlen, "a path of %d hops", n);
        return -EINVAL;
    }
    for (int i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(names, (size_t)i));
        const char *b = json_string_value(json_array_get(names, (size_t)i + 1));
        uint32_t na = a ? topo_node_by_name(t, a) : TOPO_NONE, nb = b ? topo_node_by_name(t, b) : TOPO_NONE;
        if (na == TOPO_NONE || nb == TOPO_NONE || topo_dir_between(t, na, nb, &dirs[i])) {
            snprintf(err, errlen, "no link %s -> %s", a ? a : "?", b ? b : "?");
            return -EINVAL;
        }
    }
    return n;
}

static int write_file(const char *dir, const char *sw, const char *ext, const struct plan *p,
                      const struct planbatch_opts *bo)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.%s", dir, sw, ext);
    FILE *f = fopen(path, "w");
    if (!f)
        return fail(path, strerror(errno));
    int r = planbatch_full(p, sw, bo, f);
    if (fclose(f) || r)
        return fail(path, r ? strerror(-r) : strerror(errno));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: oracle_batch TOPO SIM_JSON ALGO FLOWS OUTDIR\n");
        return 2;
    }
    char err[512];
    struct topo *t;
    if (topo_load(argv[1], &t, err, sizeof(err)))
        return fail(argv[1], err);
    json_error_t je;
    json_t *sim = json_load_file(argv[2], 0, &je);
    if (!sim)
        return fail(argv[2], je.text);
    json_t *paths = json_object_get(json_object_get(json_object_get(sim, "algorithms"), argv[3]), "paths");
    if (!json_is_array(paths))
        return fail(argv[2], "no algorithms.ALGO.paths (run the sim with --emit-assignment)");
    FILE *ff = fopen(argv[4], "r");
    if (!ff)
        return fail(argv[4], strerror(errno));

    static struct planbuild_flow pf[MAX_FLOWS];
    static uint32_t dirs[MAX_FLOWS][TOPO_MAX_HOPS];
    size_t n = 0;
    char src[64], dst[64];
    unsigned sport, dport;
    while (n < MAX_FLOWS && fscanf(ff, "%63s %63s %u %u", src, dst, &sport, &dport) == 4) {
        json_t *names = json_array_get(paths, n);
        pf[n] = (struct planbuild_flow){.af = 4, .proto = 6, .sport = (uint16_t)sport,
                                        .dport = (uint16_t)dport, .dirs = dirs[n]};
        if (!names || sport > 65535 || dport > 65535 || inet_pton(AF_INET, src, pf[n].src) != 1 ||
            inet_pton(AF_INET, dst, pf[n].dst) != 1) {
            snprintf(err, sizeof(err), "flow %zu: bad line or no path for it in the sim's output", n + 1);
            return fail(argv[4], err);
        }
        char why[256];
        int h = path_dirs(t, names, dirs[n], TOPO_MAX_HOPS, why, sizeof(why));
        if (h < 0) {
            snprintf(err, sizeof(err), "flow %zu: %s", n + 1, why);
            return fail(argv[2], err);
        }
        pf[n++].ndirs = h;
    }
    fclose(ff);
    if (n != json_array_size(paths))
        return fail(argv[4], "not one line per flow of the sim's output");

    struct plan_opts po;
    plan_opts_default(&po);
    struct plan p, empty;
    plan_init(&p);
    plan_init(&empty);
    if (plan_build(t, &po, pf, n, NULL, 0, &p, err, sizeof(err)))
        return fail("plan_build", err);
    struct planbatch_opts bo = {.proto = OWNER_PROTO_DEFAULT, .prio_min = po.prio_min,
                                .table_base = po.table_base};
    int rc = 0;
    for (uint32_t i = 0; i < t->nnodes && !rc; i++) {
        if (t->nodes[i].tier == TOPO_HOST)
            continue;
        rc = write_file(argv[5], t->nodes[i].name, "install", &p, &bo) ||
             write_file(argv[5], t->nodes[i].name, "clear", &empty, &bo);
    }
    printf("oracle_batch: %zu flows, %zu rules, %zu routes\n", n, p.nrules, p.nroutes);
    plan_free(&p);
    plan_free(&empty);
    json_decref(sim);
    topo_free(t);
    return rc;
}
