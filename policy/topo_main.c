/*
 * tierflow-topo: load or generate a topology, validate it, write it out in
 * the normalised DESIGN 2.1 form, list the paths between two nodes, or
 * summarise its size. Output is JSON objects; errors go to stderr with a
 * non-zero exit.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "common/version.h"
#include "policy/topo.h"

static void usage(FILE *f)
{
    fputs("usage: tierflow-topo FILE|GENERATOR [--out FILE] [--check] [--paths SRC DST] [--summary]\n"
          "                     [--max-paths N]\n"
          "       tierflow-topo --help | --version\n"
          "  GENERATOR: leafspine:leaves=2,spines=4,hosts=4,gbps=100 | fattree:k=4,gbps=1 |\n"
          "             clos3:pods=8,racks=192,hosts=16,spines=16,superspines=64,gbps=400,oversub=7\n"
          "  without --check/--paths/--summary/--out, prints the normalised topology JSON\n", f);
}

static void print_path(const struct topo *t, uint32_t src, const uint32_t *dirs, int hops)
{
    printf("[\"%s\"", t->nodes[src].name);
    for (int h = 0; h < hops; h++)
        printf(", \"%s\"", t->nodes[topo_dir_to(t, dirs[h])].name);
    putchar(']');
}

static int cmd_paths(const struct topo *t, const char *a, const char *b, uint64_t max)
{
    uint32_t src = topo_node_by_name(t, a), dst = topo_node_by_name(t, b);
    if (src == TOPO_NONE || dst == TOPO_NONE) {
        fprintf(stderr, "tierflow-topo: --paths: unknown node \"%s\"\n", src == TOPO_NONE ? a : b);
        return 1;
    }
    int meet = topo_meet_tier(t, src, dst);
    if (meet < 0) {
        fprintf(stderr, "tierflow-topo: --paths: no up/down path from %s to %s\n", a, b);
        return 1;
    }
    uint64_t n = topo_path_count(t, src, dst);
    printf("{\"src\": \"%s\", \"dst\": \"%s\", \"meet\": \"%s\", \"count\": %llu, \"listed\": %llu, \"paths\": [",
           a, b, topo_tier_name(meet), (unsigned long long)n, (unsigned long long)(n < max ? n : max));
    for (uint64_t i = 0; i < n && i < max; i++) {
        uint32_t dirs[TOPO_MAX_HOPS];
        int hops = topo_path_dirs(t, src, dst, i, dirs, TOPO_MAX_HOPS);
        if (hops < 0) {
            fprintf(stderr, "tierflow-topo: path %llu: %s\n", (unsigned long long)i, strerror(-hops));
            return 1;
        }
        fputs(i ? ",\n  " : "\n  ", stdout);
        print_path(t, src, dirs, hops);
    }
    puts("]}");
    return 0;
}

static void sample(const struct topo *t, const char *what, uint32_t a, uint32_t b, int *first)
{
    if (a == TOPO_NONE || b == TOPO_NONE)
        return;
    int meet = topo_meet_tier(t, a, b);
    printf("%s\n  {\"pair\": \"%s\", \"src\": \"%s\", \"dst\": \"%s\", \"meet\": \"%s\", \"paths\": %llu}",
           *first ? "" : ",", what, t->nodes[a].name, t->nodes[b].name, meet >= 0 ? topo_tier_name(meet) : "none",
           (unsigned long long)topo_path_count(t, a, b));
    *first = 0;
}

static void cmd_summary(const struct topo *t, double load_s)
{
    uint32_t per_tier[TOPO_NTIERS_MAX] = {0};
    for (uint32_t i = 0; i < t->nnodes; i++)
        per_tier[t->nodes[i].tier]++;
    size_t bytes = sizeof(*t) + (size_t)t->nnodes * sizeof(struct topo_node) +
                   (size_t)t->nlinks * (sizeof(struct topo_link) + 2 * sizeof(uint32_t)) +
                   (size_t)t->nhosts * sizeof(uint32_t);
    printf("{\"name\": \"%s\", \"nodes\": %u, \"links\": %u, \"directions\": %llu, \"endpoints\": %u,\n \"tiers\": {",
           t->name, t->nnodes, t->nlinks, 2ULL * t->nlinks, t->nhosts);
    for (int i = 0; i < t->ntiers; i++)
        printf("%s\"%s\": %u", i ? ", " : "", topo_tier_name(t->tiers[i]), per_tier[t->tiers[i]]);
    printf("},\n \"model_bytes\": %zu, \"load_s\": %.3f,\n \"samples\": [", bytes, load_s);
    /* Representative pairs from the first host: same leaf, same pod, farthest. */
    uint32_t h0 = t->hosts[0], leaf0 = topo_leaf_of(t, h0), same_leaf = TOPO_NONE, same_pod = TOPO_NONE;
    for (uint32_t i = 1; i < t->nhosts && (same_leaf == TOPO_NONE || same_pod == TOPO_NONE); i++) {
        uint32_t h = t->hosts[i];
        if (topo_leaf_of(t, h) == leaf0) {
            if (same_leaf == TOPO_NONE)
                same_leaf = h;
        } else if (same_pod == TOPO_NONE && t->nodes[h].pod == t->nodes[h0].pod) {
            same_pod = h;
        }
    }
    int first = 1;
    sample(t, "same-leaf", h0, same_leaf, &first);
    sample(t, "same-pod", h0, same_pod, &first);
    sample(t, "last-host", h0, t->nhosts > 1 ? t->hosts[t->nhosts - 1] : TOPO_NONE, &first);
    puts("]}");
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},   {"check", no_argument, NULL, 'c'},
        {"paths", required_argument, NULL, 'p'}, {"summary", no_argument, NULL, 's'},
        {"max-paths", required_argument, NULL, 'm'}, {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
    };
    const char *out = NULL, *psrc = NULL, *pdst = NULL;
    int check = 0, summary = 0, c;
    uint64_t max_paths = 1000;
    while ((c = getopt_long(argc, argv, "o:cp:sm:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'c': check = 1; break;
        case 's': summary = 1; break;
        case 'p':
            psrc = optarg;
            if (optind >= argc)
                return tf_bad_arg("tierflow-topo", "--paths", optarg, "needs SRC and DST");
            pdst = argv[optind++];
            break;
        case 'm':
            if (tf_parse_u64(optarg, 0, UINT64_MAX, &max_paths) < 0)
                return tf_bad_arg("tierflow-topo", "--max-paths", optarg, "not a non-negative integer");
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("tierflow-topo %s\n", tf_version); return 0;
        default: usage(stderr); return TF_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return TF_EXIT_USAGE;
    }
    char err[512];
    struct topo *t;
    double t0 = tf_now_mono();
    if (topo_load(argv[optind], &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "tierflow-topo: %s\n", err);
        return 1;
    }
    double load_s = tf_now_mono() - t0;
    int rc = 0;
    if (out) {
        FILE *f = strcmp(out, "-") ? fopen(out, "w") : stdout;
        if (!f || topo_write_json(t, f) < 0 || (f != stdout && fclose(f) != 0)) {
            fprintf(stderr, "tierflow-topo: %s: %s\n", out, strerror(errno));
            rc = 1;
        }
    }
    if (check)
        fprintf(stderr, "%s: ok: %u nodes, %u links, %u endpoints\n", t->name, t->nnodes, t->nlinks, t->nhosts);
    if (!rc && summary)
        cmd_summary(t, load_s);
    if (!rc && psrc)
        rc = cmd_paths(t, psrc, pdst, max_paths);
    if (!out && !check && !summary && !psrc && topo_write_json(t, stdout) < 0)
        rc = 1;
    topo_free(t);
    return rc;
}
