/*
 * planbatch: a plan as `ip -batch` scripts for a switch tierflow cannot
 * reach itself (the plan backend's files, docs/routing.md "The plan and
 * none backends").
 *
 * Three forms, all for one switch (or every switch, sw NULL):
 *   - planbatch_write: the plan's adds (routes, then rules) or deletes
 *     (rules, then routes), nothing else: for benchmarks and tests;
 *   - planbatch_transition: from the plan tierflow wrote before (prev) to
 *     want, make-before-break: routes added or changed (`route replace`),
 *     rules added, then tierflow's stale rules and routes removed;
 *   - planbatch_full: the switch's whole desired state from any state of
 *     tierflow's own objects (its priorities, tables and protocol), e.g.
 *     after a restart or a file that was never applied.
 * Invariant: every line of the last two is idempotent under `ip -batch`
 * (without -force), so applying a file again exits 0 and changes nothing:
 * a rule is added only after `rule flush` of exactly its selectors (a no-op
 * unless it is there), a route is removed by replacing it with a `throw`
 * route and deleting that, a table is emptied by `route flush ... proto`
 * after a `throw` route in it (0.0.0.0/32) has made sure it exists. Names that are not plain
 * tokens are refused (-EINVAL), never quoted.
 */
#ifndef TF_PLANBATCH_H
#define TF_PLANBATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/plan.h"

struct planbatch_opts {
    uint8_t proto;        /* route and rule protocol of every object */
    uint32_t prio_min;    /* tierflow's priorities: [prio_min, prio_min + OWNER_PRIO_SPAN) */
    uint32_t table_base;  /* tierflow's tables: [table_base, table_base + OWNER_TABLE_SPAN) */
};

int planbatch_write(const struct plan *p, const char *sw, FILE *f, bool del, uint8_t proto);
/* want and prev are only read (copied and sorted inside). */
int planbatch_transition(const struct plan *want, const struct plan *prev, const char *sw,
                         const struct planbatch_opts *o, FILE *f);
/* sw must be given (-EINVAL otherwise). */
int planbatch_full(const struct plan *want, const char *sw, const struct planbatch_opts *o, FILE *f);

#endif
