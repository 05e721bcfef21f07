/*
 * plan_backend: the "plan" route backend's writer. Writes, into one folder,
 * for every switch of the plan and of the previous one (prev: what tierflow
 * wrote before; NULL = nothing), two `ip -batch` scripts (planbatch.h):
 * <switch>.ipbatch takes the switch from prev to p, make-before-break, and
 * <switch>.full.ipbatch to p from any state of tierflow's own objects; both
 * can be applied again and exit 0. Then plan.json (the whole plan), last,
 * so that a reader that sees it also sees every script. Every file is
 * replaced atomically: temp file in the same folder, fsync, rename, fsync of
 * the folder. A switch name that is not a plain file name, or ends in
 * ".full", is refused (-EINVAL, named).
 */
#ifndef TF_PLAN_BACKEND_H
#define TF_PLAN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "controller/plan.h"
#include "controller/planbatch.h"

int plan_backend_write(const char *dir, const struct plan *p, const struct plan *prev,
                       const struct planbatch_opts *o, char *err, size_t errlen);

#endif
