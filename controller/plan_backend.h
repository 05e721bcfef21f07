/*
 * plan_backend: the "plan" route backend's writer (and, at open, reader of
 * its own plan.json, so that transitions survive a restart). Writes, into one folder,
 * for every switch of the plan and of the previous one (prev: what tierflow
 * wrote before; NULL = nothing), two `ip -batch` scripts (planbatch.h):
 * <switch>.ipbatch takes the switch from prev to p, make-before-break, and
 * <switch>.full.ipbatch to p from any state of tierflow's own objects; both
 * can be applied again and exit 0. Then plan.json (the whole plan), last,
 * so that a reader that sees it also sees every script. Every file is
 * replaced atomically: temp file in the same folder, fsync, rename, fsync of
 * the folder. A switch name that is not a plain file name, or ends in
 * ".full", is refused (-EINVAL, named). The folder must exist: a missing
 * one fails the write with the same message every time (naming
 * backend_options.plan_dir), so that the loop's failure is logged once and
 * the next write, once the folder is there, succeeds.
 */
#ifndef TF_PLAN_BACKEND_H
#define TF_PLAN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "controller/backend_result.h"
#include "controller/plan.h"
#include "controller/planbatch.h"

int plan_backend_write(const char *dir, const struct plan *p, const struct plan *prev,
                       const struct planbatch_opts *o, char *err, size_t errlen);

/* What the backend wrote last, from dir/plan.json (what tierflow installed
 * before, as far as the switches' automation applied it): an empty plan
 * when there is none yet; -EINVAL with err naming the file and the JSON
 * path when it cannot be read back. */
int plan_backend_read(const char *dir, struct plan *out, char *err, size_t errlen);

/* Only dir/plan.json, atomically (what plan_backend_read reads back): the
 * bgp backend keeps the plan it was asked for there. */
int plan_backend_save(const char *dir, const struct plan *p, char *err, size_t errlen);

#define PLAN_BACKEND_JSON_MAX (256u << 20)   /* bytes of plan.json read back */

struct topo;
/* The iproute2 a switch has when its topology node does not say
 * ("iproute2"): Debian 12's, as on most switch OSes today. */
#define PLAN_BACKEND_IPROUTE2_DEFAULT 601
/* iproute2 takes `ip rule ... dscp N` from this version on. */
#define PLAN_BACKEND_IPROUTE2_DSCP 613
/*
 * Takes out of p the rules a switch's iproute2 cannot take (a DSCP
 * selector before 6.13, per the node's "iproute2"; t NULL: every switch has
 * the default), so that the files hold only what applies cleanly and
 * plan.json only what the files install. Each switch concerned goes into
 * res (backend_result_unsup): refused counts the rules, unsupported names
 * the first switch, its version and the selector.
 */
void plan_backend_fit(const struct topo *t, struct plan *p, struct backend_result *res);

#endif
