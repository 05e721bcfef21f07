/*
 * plan_backend: the "plan" route backend's writer. Writes, into one folder,
 * plan.json (the whole plan) and <switch>.ipbatch (for `ip -force -batch`:
 * the switch's complete desired state, routes before rules) for every
 * switch of the plan and of the previous one (a switch that lost all its
 * entries gets an empty script). Every file is replaced atomically: temp
 * file in the same folder, fsync, rename, fsync of the folder.
 */
#ifndef TF_PLAN_BACKEND_H
#define TF_PLAN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "controller/plan.h"

int plan_backend_write(const char *dir, const struct plan *p, const struct plan *prev,
                       uint8_t proto, char *err, size_t errlen);

#endif
