/*
 * bgp_backend: the "bgp" route backend, for switches tierflow cannot log
 * into. tierflowd drives an ExaBGP speaker through its process API; the
 * speaker peers over the management network with every switch whose
 * topology node has a "mgmt" address and an "asn" (docs/routing.md, "The bgp
 * backend").
 *
 * Per-destination steering: a plan's pinned flows become, per leaf, host
 * routes (`D/32 next-hop SPINE community [no-advertise]`) announced to that
 * leaf: all flows from one leaf to one destination share its path (the
 * rebalance plans so: backend_per_destination), and when a plan still pins
 * them on different uplinks each uplink is an add-path route whose
 * link-bandwidth community is in proportion to its pins (weighted ECMP on
 * the leaf). Rules that are not a
 * destination host (class rules on marks or DSCP) cannot be expressed and
 * are refused (backend_result.unsupported, the backend then unhealthy).
 *
 * Invariants:
 *   - nothing is announced but /32s with the no-advertise community to the
 *     leaf whose rule asked for it, with a next hop that is that leaf's
 *     uplink address in the topology; the speaker's Adj-RIB-Out is read back
 *     after every change and anything else in it makes the backend unhealthy;
 *   - a route whose next hop (a spine) no longer announces the destination
 *     leaf's prefix to the controller, or whose spine session is down, is
 *     withdrawn at once (the watcher thread), and the spine->leaf direction
 *     reported down (backend_routing), so no round puts it back; a spine
 *     whose session drops after it was up has all its directions reported
 *     down, both ways, until it is back;
 *   - the speaker outlives tierflowd (its own session, pid file in the
 *     folder): a restart adopts it and what it announced without a flap
 *     when its configuration is unchanged; backend_withdraw withdraws
 *     everything and stops it; when it dies its sessions drop and the
 *     switches drop its routes within the hold time (ECMP takes over).
 * One mutex guards the state; on_routing is called without it.
 */
#ifndef TF_BGP_BACKEND_H
#define TF_BGP_BACKEND_H

#include <stdio.h>

#include <jansson.h>

#include "controller/backend_cfg.h"
#include "controller/backend_result.h"

struct bgp_backend;

int bgp_backend_open(const struct backend_cfg *cfg, struct bgp_backend **out, char *err, size_t errlen);
/* The plan tierflowd asked for last (dir/plan.json), what backend_read reports. */
int bgp_backend_wanted(struct bgp_backend *b, struct plan *out);
int bgp_backend_apply(struct bgp_backend *b, const struct plan *want, struct backend_result *res);
/* Withdraws every announcement and stops the speaker. */
int bgp_backend_withdraw(struct bgp_backend *b, struct backend_result *res);
/* See backend_routing. */
int bgp_backend_routing(struct bgp_backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen);
/* Whether the speaker runs, every leaf it announces to is Established and
 * the read-back matched; else why (named) in err. */
bool bgp_backend_healthy(struct bgp_backend *b, char *err, size_t errlen);
/* {"speaker": {"pid", "running"}, "sessions": [{"node", "peer", "asn",
 * "state"}], "announced": [{"node", "prefix", "next_hop", "via"}]}. */
json_t *bgp_backend_json(struct bgp_backend *b);
/* Its Prometheus series (tierflow_bgp_speaker_up, tierflow_bgp_announced_routes,
 * tierflow_bgp_session_up{node,peer}) to f. */
int bgp_backend_metrics(struct bgp_backend *b, FILE *f);
/* Stops watching; the speaker keeps running (adopted by the next open). */
void bgp_backend_close(struct bgp_backend *b);

#endif
