/*
 * cmdline: tierflowd's configuration from its sources, at start and again
 * on SIGHUP: the defaults, the --config file, then the command line over
 * it, whatever the order of the flags (as in redis, each flag is a config
 * key's other name: config.c's table gives them, their arguments and
 * --help; only --config, --set, --journal, --check-config, --help and
 * --version are the daemon's own, here). The keys the command line set are
 * kept, so that a reload reads the same sources again and a flag still
 * overrides the file after it. Errors name the file, the flag or the key;
 * usage errors exit TF_EXIT_USAGE (2), like every tierflow program.
 */
#ifndef TF_CMDLINE_H
#define TF_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "controller/config.h"

struct cmdline {
    const char *file;            /* --config, or NULL */
    struct cmdline_set {
        const char *key, *value; /* in argv, or in own */
        char *own;               /* --set's copy, split at '=' */
    } *set;                      /* the keys the command line set, in order */
    size_t nset;
    bool check, journal;         /* --check-config, --journal */
};

/* Reads argv into cfg (defaults, the file, the flags) and validates it.
 * Returns -1 to go on, else the exit status: 0 after --help or --version,
 * TF_EXIT_USAGE or 2 after a message on stderr, 1 out of memory. */
int  cmdline_parse(struct cmdline *cl, struct config *cfg, int argc, char **argv);
/* The same sources read again into c, validated: 0, or -errno with err
 * naming the file or the key. */
int  cmdline_reread(const struct cmdline *cl, struct config *c, char *err, size_t errlen);
/* --help. */
void cmdline_usage(FILE *f);
void cmdline_free(struct cmdline *cl);

#endif
