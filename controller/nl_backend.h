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
 *
 * Routing watch (docs/routing.md): per switch a netlink socket subscribed
 * to link and route changes, and the switch's routing view
 * (routing_view.h). A watcher thread wakes on any change (debounced), reads
 * the view again and at once removes every pin of ours that routing no
 * longer offers, then recomputes the link directions the views say are down
 * and calls cfg->on_routing when those or the notes changed. Every apply
 * narrows its target to the views first, so a round that has not yet heard
 * of a failure cannot put a pin back. One mutex guards the switches (their
 * sockets, caches and views): apply, read, withdraw and the watcher take it
 * in turn; on_routing is called without it.
 */
#ifndef TF_NL_BACKEND_H
#define TF_NL_BACKEND_H

#include "controller/backend_cfg.h"
#include "controller/backend_result.h"

struct nl_backend;

int nl_backend_open(const struct backend_cfg *cfg, struct nl_backend **out, char *err,
                    size_t errlen);
int nl_backend_apply(struct nl_backend *b, const struct plan *want, struct backend_result *res);
int nl_backend_read(struct nl_backend *b, struct plan *have, char *err, size_t errlen);
int nl_backend_withdraw(struct nl_backend *b, struct backend_result *res);
void nl_backend_close(struct nl_backend *b);
/* See backend_routing. */
int nl_backend_routing(struct nl_backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen);

#endif
