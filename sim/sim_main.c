/*
 * tierflow-sim (DESIGN 2.6): runs the assignment algorithms on a topology
 * and a traffic pattern or flows file and prints one JSON object: per
 * algorithm the maximum utilisation, its ratio to the lower bound, the
 * max-min fair throughput as a fraction of the offered load, the flows moved
 * (relative to the ECMP placement the fabric starts from) and the compute
 * time; with --emit-assignment every flow's path as node names. With
 * --granularity destination the steered algorithms' assignments are taken
 * as per-destination routes carry them (granularity.h) and the figures at
 * flow granularity are printed beside, with those of the assignment planned
 * per destination (granularity_assign) under "planned".
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/util.h"
#include "common/version.h"
#include "policy/assign.h"
#include "sim/bound.h"
#include "policy/classes.h"
#include "policy/granularity.h"
#include "policy/maxmin.h"
#include "sim/pattern.h"
#include "policy/topo.h"

#define FLOWS_FILE_MAX (256u << 20)

static void usage(FILE *f)
{
    fputs("usage: tierflow-sim --topology FILE|GENERATOR (--flows FILE | --pattern NAME[:ARGS])\n"
          "                    [--algo ecmp,gff,tierflow] [--seed N] [--emit-assignment]\n"
          "                    [--flows-per-pair N] [--max-moves N] [--margin X]\n"
          "                    [--granularity flow|destination]\n"
          "       tierflow-sim --help | --version\n", f);
}

__attribute__((format(printf, 1, 2)))
static int die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tierflow-sim: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* {"flows": [{"src": "H1", "dst": "H5", "gbps": 40, "class": "dp"}]}; a
 * missing gbps takes the sender's NIC split over its flows. */
static int load_flows(const char *path, const struct topo *t, struct pattern_flow **out, uint32_t *n,
                      char *err, size_t errlen)
{
    char *text;
    size_t len;
    int r = tf_read_file(path, FLOWS_FILE_MAX, &text, &len);
    if (r < 0) {
        snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "larger than 256 MiB" : strerror(-r));
        return r;
    }
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        return -EINVAL;
    }
    json_t *arr = json_object_get(root, "flows");
    r = -EINVAL;
    if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > PATTERN_MAX_FLOWS) {
        snprintf(err, errlen, "%s: want {\"flows\": [...]} with 1..%u flows", path, PATTERN_MAX_FLOWS);
        goto out;
    }
    struct pattern_flow *f = calloc(json_array_size(arr), sizeof(*f));
    uint32_t *cnt = calloc(t->nnodes, sizeof(uint32_t));
    if (!f || !cnt) {
        free(f);
        free(cnt);
        r = -ENOMEM;
        goto out;
    }
    struct classes cs;
    classes_init(&cs);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *s = json_string_value(json_object_get(v, "src")), *d = json_string_value(json_object_get(v, "dst"));
        const char *cl = json_string_value(json_object_get(v, "class"));
        json_t *g = json_object_get(v, "gbps");
        f[i].src = s ? topo_node_by_name(t, s) : TOPO_NONE;
        f[i].dst = d ? topo_node_by_name(t, d) : TOPO_NONE;
        f[i].cls = cl ? classes_find(&cs, cl) : CLASS_DEFAULT;
        f[i].gbps = g ? json_number_value(g) : 0;
        if (f[i].src == TOPO_NONE || f[i].dst == TOPO_NONE) {
            snprintf(err, errlen, "%s: flows[%zu]: src/dst must name nodes of topology '%s'", path, i, t->name);
            break;
        }
        if (f[i].cls < 0) {
            snprintf(err, errlen, "%s: flows[%zu]: unknown class '%s' (tp, cp, pp, dp, ep, default)", path, i, cl);
            break;
        }
        if (g && (!json_is_number(g) || !(f[i].gbps > 0) || !isfinite(f[i].gbps))) {
            snprintf(err, errlen, "%s: flows[%zu]: gbps must be a positive number", path, i);
            break;
        }
        cnt[f[i].src]++;
    }
    classes_free(&cs);
    if (i == json_array_size(arr)) {
        json_array_foreach(arr, i, v) {
            if (f[i].gbps > 0)
                continue;
            const struct topo_node *s = &t->nodes[f[i].src];
            for (uint32_t k = 0; k < s->up_count; k++)
                f[i].gbps += t->links[t->up_links[s->up_first + k]].gbps;
            f[i].gbps /= cnt[f[i].src];
        }
        *out = f;
        *n = (uint32_t)json_array_size(arr);
        f = NULL;
        r = 0;
    }
    free(f);
    free(cnt);
out:
    json_decref(root);
    return r;
}

/* Max-min throughput of an assignment as a fraction of the offered load. */
static double throughput(const struct assign_input *in, const uint32_t *path)
{
    const struct topo *t = in->t;
    uint32_t n = in->nflows, nd = 2 * t->nlinks;
    uint32_t *off = malloc(((size_t)n + 1) * sizeof(uint32_t));
    uint32_t *dirs = malloc(((size_t)n * TOPO_MAX_HOPS + 1) * sizeof(uint32_t));
    double *cap = malloc((size_t)nd * sizeof(double)), *dem = malloc(((size_t)n + 1) * sizeof(double));
    double *rate = malloc(((size_t)n + 1) * sizeof(double));
    double res = NAN;
    if (off && dirs && cap && dem && rate && assign_flow_dirs(in, path, off, dirs) == 0) {
        for (uint32_t d = 0; d < nd; d++)
            cap[d] = topo_dir_gbps(t, d);
        for (uint32_t f = 0; f < n; f++)
            dem[f] = in->flows[f].gbps;
        if (maxmin_rates(nd, cap, n, off, dirs, dem, rate) == 0) {
            double got = 0, want = 0;
            for (uint32_t f = 0; f < n; f++) {
                want += dem[f];
                got += path[f] == ASSIGN_NO_PATH ? 0 : rate[f];
            }
            res = want > 0 ? got / want : 1;
        }
    }
    free(off); free(dirs); free(cap); free(dem); free(rate);
    return res;
}

static json_t *paths_json(const struct assign_input *in, const uint32_t *path)
{
    const struct topo *t = in->t;
    json_t *a = json_array();
    uint32_t *off = malloc(((size_t)in->nflows + 1) * sizeof(uint32_t));
    uint32_t *dirs = malloc(((size_t)in->nflows * TOPO_MAX_HOPS + 1) * sizeof(uint32_t));
    if (off && dirs && assign_flow_dirs(in, path, off, dirs) == 0) {
        for (uint32_t f = 0; f < in->nflows; f++) {
            json_t *p = json_array();
            if (path[f] != ASSIGN_NO_PATH) {
                json_array_append_new(p, json_string(t->nodes[in->flows[f].src].name));
                for (uint32_t k = off[f]; k < off[f + 1]; k++)
                    json_array_append_new(p, json_string(t->nodes[topo_dir_to(t, dirs[k])].name));
            }
            json_array_append_new(a, p);
        }
    }
    free(off);
    free(dirs);
    return a;
}

static json_t *flows_json(const struct assign_input *in)
{
    static const char *const names[] = { "tp", "cp", "pp", "dp", "ep", "default" };
    json_t *a = json_array();
    for (uint32_t f = 0; f < in->nflows; f++) {
        const struct assign_flow *x = &in->flows[f];
        json_array_append_new(a, json_pack("{s:s, s:s, s:f, s:s}", "src", in->t->nodes[x->src].name, "dst",
                                           in->t->nodes[x->dst].name, "gbps", x->gbps, "class", names[x->cls]));
    }
    return a;
}

int main(int argc, char **argv)
{
    const char *topo_spec = NULL, *flows_file = NULL, *pattern = NULL, *algos = "ecmp,gff,tierflow";
    uint64_t seed = 1, fpp = 0;
    bool emit = false, per_dst = false;
    struct assign_params prm;
    assign_params_default(&prm);
    static const struct option opts[] = {
        {"topology", required_argument, NULL, 't'}, {"flows", required_argument, NULL, 'f'},
        {"pattern", required_argument, NULL, 'p'},  {"algo", required_argument, NULL, 'a'},
        {"seed", required_argument, NULL, 's'},     {"emit-assignment", no_argument, NULL, 'e'},
        {"flows-per-pair", required_argument, NULL, 'n'}, {"max-moves", required_argument, NULL, 'm'},
        {"margin", required_argument, NULL, 'g'},   {"help", no_argument, NULL, 'h'},
        {"granularity", required_argument, NULL, 'G'}, {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int c;
    uint64_t u;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 'f': flows_file = optarg; break;
        case 'p': pattern = optarg; break;
        case 'a': algos = optarg; break;
        case 'e': emit = true; break;
        case 's':
            if (tf_parse_u64(optarg, 0, UINT64_MAX, &seed) < 0)
                return tf_bad_arg("tierflow-sim", "--seed", optarg, "want a non-negative integer");
            break;
        case 'n':
            if (tf_parse_u64(optarg, 1, 1024, &fpp) < 0)
                return tf_bad_arg("tierflow-sim", "--flows-per-pair", optarg, "want 1..1024");
            break;
        case 'm':
            if (tf_parse_u64(optarg, 0, UINT32_MAX, &u) < 0)
                return tf_bad_arg("tierflow-sim", "--max-moves", optarg, "want 0..4294967295");
            prm.max_moves = (int64_t)u;
            break;
        case 'g':
            if (tf_parse_double(optarg, 0, 0.99, &prm.margin) < 0)
                return tf_bad_arg("tierflow-sim", "--margin", optarg, "want 0..0.99");
            break;
        case 'G':
            if (strcmp(optarg, "flow") && strcmp(optarg, "destination"))
                return tf_bad_arg("tierflow-sim", "--granularity", optarg, "want flow or destination");
            per_dst = !strcmp(optarg, "destination");
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("tierflow-sim %s\n", tf_version); return 0;
        default: usage(stderr); return TF_EXIT_USAGE;
        }
    }
    if (optind != argc || !topo_spec || !!flows_file == !!pattern) {
        usage(stderr);
        return TF_EXIT_USAGE;
    }
    int want[ASSIGN_NALGOS] = { 0 }, order[ASSIGN_NALGOS], nalg = 0;
    char abuf[128];
    if (tf_strlcpy(abuf, algos, sizeof(abuf)) >= sizeof(abuf))
        return tf_bad_arg("tierflow-sim", "--algo", algos, "longer than 127 bytes");
    char *save = NULL;
    for (char *tok = strtok_r(abuf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int a = assign_algo_parse(tok);
        if (a < 0)
            return tf_bad_arg("tierflow-sim", "--algo", tok, "unknown algorithm (ecmp, gff, tierflow)");
        if (!want[a]++)
            order[nalg++] = a;
    }
    if (!nalg)
        return tf_bad_arg("tierflow-sim", "--algo", algos, "empty list");
    prm.seed = seed;

    char err[512];
    struct topo *t;
    if (topo_load(topo_spec, &t, err, sizeof(err)) < 0)
        return die("%s", err);
    struct pattern_flow *pf = NULL;
    uint32_t n = 0;
    int r = pattern ? pattern_generate(t, pattern, seed, (uint32_t)fpp, &pf, &n, err, sizeof(err))
                    : load_flows(flows_file, t, &pf, &n, err, sizeof(err));
    if (r < 0) {
        topo_free(t);
        return die("%s", err);
    }
    struct assign_flow *fl = calloc((size_t)n + 1, sizeof(*fl));
    uint32_t *path = malloc(((size_t)n + 1) * sizeof(uint32_t));
    struct assign_paths *ps = NULL;
    if (!fl || !path || assign_paths_new(t, &ps) < 0)
        return die("out of memory");
    double offered = 0;
    for (uint32_t i = 0; i < n; i++) {
        /* Today's placement: ECMP on a random source port. */
        uint32_t h = (uint32_t)mix(seed * 0x100000001b3ull + i);
        fl[i] = (struct assign_flow){ pf[i].src, pf[i].dst, pf[i].gbps, pf[i].cls, ASSIGN_NO_PATH, h, true };
        fl[i].path = assign_ecmp_path(h, seed, assign_paths_count(ps, pf[i].src, pf[i].dst));
        offered += pf[i].gbps;
    }
    free(pf);
    struct assign_input in = { .t = t, .paths = ps, .flows = fl, .nflows = n };
    struct bound_result b;
    if (bound_max_util(&in, &b) < 0)
        return die("out of memory");

    json_t *o = json_object(), *res = json_object();
    json_object_set_new(o, "topology", json_string(t->name));
    json_object_set_new(o, "hosts", json_integer(t->nhosts));
    json_object_set_new(o, "traffic", json_string(pattern ? pattern : flows_file));
    json_object_set_new(o, "seed", json_integer((json_int_t)seed));
    json_object_set_new(o, "flows", json_integer(n));
    json_object_set_new(o, "offered_gbps", json_real(offered));
    json_object_set_new(o, "lower_bound", json_real(b.value));
    json_object_set_new(o, "lower_bound_from", json_string(b.why));
    json_object_set_new(o, "fast_paths", json_boolean(assign_paths_fast(ps)));
    json_object_set_new(o, "granularity", json_string(per_dst ? "destination" : "flow"));
    int rc = 0;
    for (int k = 0; k < nalg; k++) {
        struct assign_result ar = { .path = path };
        if (assign_run(order[k], &in, &prm, &ar, err, sizeof(err)) < 0) {
            rc = die("%s", err);
            break;
        }
        json_t *a = json_object();
        /* ECMP is the fabric's own hashing, per flow whatever steers. */
        if (per_dst && order[k] != assign_algo_parse("ecmp")) {
            uint32_t changed;
            double *load = malloc(2 * (size_t)t->nlinks * sizeof(double) + 1);
            json_object_set_new(a, "flow_granularity", json_pack("{s:f, s:f}", "max_util", ar.max_util,
                                                                 "throughput", throughput(&in, path)));
            if (!load || granularity_destination(&in, path, &changed) < 0) {
                free(load);
                json_decref(a);
                rc = die("out of memory");
                break;
            }
            ar.max_util = assign_loads(&in, path, load);
            free(load);
            json_object_set_new(a, "regrouped", json_integer(changed));
            /* Beside the rule applied afterwards: the assignment planned
             * per destination. path gets it only for its figures. */
            uint32_t *keep = malloc(((size_t)n + 1) * sizeof(*keep));
            struct assign_result pr = { .path = keep };
            if (!keep || granularity_assign(order[k], &in, &prm, &pr, err, sizeof(err)) < 0) {
                free(keep);
                json_decref(a);
                rc = die("%s", keep ? err : "out of memory");
                break;
            }
            json_object_set_new(a, "planned", json_pack("{s:f, s:f, s:i}", "max_util", pr.max_util, "throughput",
                                                        throughput(&in, keep), "moved", (json_int_t)pr.moved));
            free(keep);
        }
        json_object_set_new(a, "max_util", json_real(ar.max_util));
        json_object_set_new(a, "ratio_to_bound", b.value > 0 ? json_real(ar.max_util / b.value) : json_null());
        json_object_set_new(a, "throughput", json_real(throughput(&in, path)));
        json_object_set_new(a, "moved", json_integer(ar.moved));
        json_object_set_new(a, "unroutable", json_integer(ar.unroutable));
        json_object_set_new(a, "unconfined", json_integer(ar.unconfined));
        json_object_set_new(a, "compute_s", json_real(ar.compute_s));
        if (emit)
            json_object_set_new(a, "paths", paths_json(&in, path));
        json_object_set_new(res, assign_algo_name(order[k]), a);
    }
    json_object_set_new(o, "algorithms", res);
    if (emit)
        json_object_set_new(o, "flow_list", flows_json(&in));
    if (rc == 0) {
        json_dumpf(o, stdout, (emit ? JSON_COMPACT : JSON_INDENT(2)) | JSON_REAL_PRECISION(6));
        fputc('\n', stdout);
    }
    json_decref(o);
    assign_paths_free(ps);
    free(fl);
    free(path);
    topo_free(t);
    return rc;
}
