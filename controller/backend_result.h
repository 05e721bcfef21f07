/*
 * backend_result: what a route backend reports of one change (struct
 * backend_result): counts, the switches skipped or failed, the rules a
 * switch refused. Below backend.h and every kind, as backend_cfg.h.
 */
#ifndef TF_BACKEND_RESULT_H
#define TF_BACKEND_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "controller/plan.h"

#define BACKEND_UNSUP_MAX 16         /* switches listed with a refused selector */

/* A switch and the rule selectors (plan_sel bits) it cannot take. */
struct backend_unsup {
    char sw[PLAN_SW_LEN];
    unsigned sels;
};

struct backend_result {
    size_t rules_added, rules_deleted;
    size_t routes_added, routes_replaced, routes_deleted;
    size_t switches;           /* switches changed */
    size_t skipped;            /* switches in the plan this backend cannot
                                  reach (netlink: no netns and not the local
                                  host name); see skipped_sw for the first */
    char skipped_sw[PLAN_SW_LEN];
    size_t round_trips;        /* netlink batches sent */
    size_t narrowed;           /* rules, routes and next hops of the plan not
                                  installed because routing does not offer them */
    size_t refused;            /* rules of the plan not installed because a
                                  switch's kernel does not keep one of their
                                  selectors (netlink: FRA_DSCP before 6.13) */
    char unsupported[200];     /* the first such switch and selector, "" none:
                                  the backend is then not healthy */
    struct backend_unsup unsup[BACKEND_UNSUP_MAX];   /* every such switch (the first */
    size_t nunsup;                                  /* BACKEND_UNSUP_MAX) */
    bool rolled_back;          /* a switch failed and was restored */
    char failed_sw[PLAN_SW_LEN];
    char error[256];           /* "" on success */
};

/* Records that switch sw refused rules needing sels, in res->unsup (merged
 * per switch) and, for the first, in res->unsupported as why says. */
void backend_result_unsup(struct backend_result *res, const char *sw, unsigned sels, size_t refused,
                          const char *why);

#endif
