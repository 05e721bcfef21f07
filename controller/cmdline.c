/*
 * cmdline: see cmdline.h.
 */
#include "controller/cmdline.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "common/version.h"

/* The daemon's own options; every other flag is a config key's (config.h). */
enum { O_CONFIG = 256, O_SET, O_CHECK, O_VERSION, O_HELP, O_JOURNAL, O_KEY = 512 };
static const struct own_opt {
    const char *name;
    int val;
    const char *arg, *help;      /* arg NULL: no argument */
} own_opts[] = {
    {"config", O_CONFIG, "FILE", "the configuration (JSON); flags override it"},
    {"journal", O_JOURNAL, NULL, "<N> priority prefixes on stderr (automatic when stderr is the journal)"},
    {"set", O_SET, "KEY=VALUE", "any config key (see tierflowd(8))"},
    {"check-config", O_CHECK, NULL, "validate and exit"},
    {"version", O_VERSION, NULL, "print the version and exit"},
    {"help", O_HELP, NULL, "print this and exit"},
};

void cmdline_usage(FILE *f)
{
    fprintf(f, "usage: tierflowd --config FILE | --topology FILE|GENERATOR [options]\n");
    config_usage_line(f, own_opts[0].name, own_opts[0].arg, own_opts[0].help);   /* --config */
    config_usage(f);
    for (size_t i = 1; i < TF_ARRAY_SIZE(own_opts); i++)
        config_usage_line(f, own_opts[i].name, own_opts[i].arg, own_opts[i].help);
    config_usage_reload(f);
}

/* getopt_long's table: the daemon's options, then one per config flag
 * (val O_KEY + its index). */
#define MAX_OPTS 128
static void long_opts(struct option *o)
{
    size_t n = 0;
    for (size_t i = 0; i < TF_ARRAY_SIZE(own_opts); i++)
        o[n++] = (struct option){own_opts[i].name, own_opts[i].arg ? 1 : 0, NULL, own_opts[i].val};
    struct config_flag cf;
    for (size_t i = 0; n < MAX_OPTS - 1 && config_flag(i, &cf); i++)
        o[n++] = (struct option){cf.flag, cf.arg ? 1 : 0, NULL, O_KEY + (int)i};
    o[n] = (struct option){0};
}

/* Records key=value from the command line and sets it in c. */
static int set_key(struct cmdline *cl, struct config *c, const char *key, const char *value, char *own, char *err,
                   size_t errlen)
{
    cl->set[cl->nset++] = (struct cmdline_set){key, value, own};
    return config_set_str(c, key, value, err, errlen);
}

int cmdline_parse(struct cmdline *cl, struct config *cfg, int argc, char **argv)
{
    struct option opts[MAX_OPTS];
    char err[512];
    long_opts(opts);
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
        if (c == O_CONFIG)
            cl->file = optarg;
    config_defaults(cfg);
    if (cl->file && config_load_file(cfg, cl->file, err, sizeof(err)) < 0) {
        log_early_err("tierflowd", "%s", err);
        return 2;
    }
    cl->set = calloc((size_t)argc + 1, sizeof(*cl->set));
    if (!cl->set)
        return 1;
    optind = 1;
    opterr = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int r = 0;
        struct config_flag cf;
        if (c == '?') {
            cmdline_usage(stderr);
            return TF_EXIT_USAGE;
        } else if (c == O_HELP) {
            cmdline_usage(stdout);
            return 0;
        } else if (c == O_VERSION) {
            printf("tierflowd %s\n", tf_version);
            return 0;
        } else if (c == O_CHECK) {
            cl->check = true;
        } else if (c == O_JOURNAL) {
            cl->journal = true;
        } else if (c == O_SET) {
            char *kv = strdup(optarg), *eq = kv ? strchr(kv, '=') : NULL;
            if (!eq) {
                free(kv);
                log_early_err("tierflowd", "--set %s: expected KEY=VALUE", optarg);
                return TF_EXIT_USAGE;
            }
            *eq = '\0';
            r = set_key(cl, cfg, kv, eq + 1, kv, err, sizeof(err));
        } else if (c >= O_KEY && config_flag((size_t)(c - O_KEY), &cf)) {
            r = set_key(cl, cfg, cf.key, cf.arg ? optarg : "true", NULL, err, sizeof(err));
        }
        if (r < 0) {
            log_early_err("tierflowd", "%s", err);
            return 2;
        }
    }
    if (optind < argc) {
        log_early_err("tierflowd", "unexpected argument '%s'", argv[optind]);
        return TF_EXIT_USAGE;
    }
    if (config_validate(cfg, err, sizeof(err)) < 0) {
        log_early_err("tierflowd", "%s", err);
        return 2;
    }
    return -1;
}

int cmdline_reread(const struct cmdline *cl, struct config *c, char *err, size_t errlen)
{
    config_defaults(c);
    if (cl->file) {
        int r = config_load_file(c, cl->file, err, errlen);
        if (r < 0)
            return r;
    }
    for (size_t i = 0; i < cl->nset; i++) {
        int r = config_set_str(c, cl->set[i].key, cl->set[i].value, err, errlen);
        if (r < 0)
            return r;
    }
    return config_validate(c, err, errlen);
}

void cmdline_free(struct cmdline *cl)
{
    for (size_t i = 0; i < cl->nset; i++)
        free(cl->set[i].own);
    free(cl->set);
    cl->set = NULL;
    cl->nset = 0;
}
