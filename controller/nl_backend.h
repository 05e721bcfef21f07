/*
 * nl_backend: the "netlink" route backend. One nlroute socket per
 * reachable switch (see backend.h), each switch's installed state cached
 * as a plan and refreshed from the kernel when it is read, when a change
 * fails, and at open (which is the reconcile on restart).
 *
 * Change order per switch (make-before-break): routes added or replaced,
 * rules added, rules deleted, routes deleted. If any step fails, the
 * switch is read back and driven to its state before the call, then read
 * again, so the cache matches the kernel whatever happened.
 */
#ifndef TF_NL_BACKEND_H
#define TF_NL_BACKEND_H

#include "controller/backend.h"

struct nl_backend;

int nl_backend_open(const struct backend_cfg *cfg, struct nl_backend **out, char *err,
                    size_t errlen);
int nl_backend_apply(struct nl_backend *b, const struct plan *want, struct backend_result *res);
int nl_backend_read(struct nl_backend *b, struct plan *have, char *err, size_t errlen);
int nl_backend_withdraw(struct nl_backend *b, struct backend_result *res);
void nl_backend_close(struct nl_backend *b);

#endif
