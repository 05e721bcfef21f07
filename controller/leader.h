/*
 * leader: active/standby tierflowd on etcd (docs/ha.md). Every tierflowd
 * ingests reports; only the one that holds the election acts (rebalances,
 * touches switches, takes API writes).
 *
 * The election is etcd's own (v3election campaign, observe and resign over the
 * gateway, etcd.h) on a lease of ha.lease_ttl seconds that this module keeps
 * alive; etcd's observe stream says who leads. The threads are leader.c's.
 *
 * Invariants: leader_acts() is true only while this instance won the
 * election and proved its lease less than ttl seconds ago (a paused or
 * partitioned leader stops acting by its own clock, whatever it has not yet
 * heard); leader_fence() proves, in one etcd transaction, that the election
 * key this instance created still exists with its creation revision (the
 * term) before a plan is applied or a job written; a failed proof changes
 * nothing. Losing leadership never withdraws a route (fail-static).
 * on_change is called from the module's threads, without its lock held,
 * whenever leader_acts() may have changed.
 */
#ifndef TF_LEADER_H
#define TF_LEADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct config;
struct events;
struct metrics;
struct leader;

struct leader_hooks {
    void (*on_change)(void *arg);
    /* A standby's replica of the jobs: {"ID": job body, ...}, called when
     * what etcd holds changed (and once before this instance first acts). */
    void (*on_jobs)(void *arg, json_t *jobs);
    void *arg;
};

int  leader_start(struct leader **out, const struct config *c, struct events *ev, struct metrics *m,
                  const struct leader_hooks *h, char *err, size_t errlen);
/* Stops both threads; a leader resigns and revokes its lease, so that a
 * standby takes over at once. */
void leader_stop(struct leader *ld);
/* True when ld is NULL (no HA) or this instance leads and its lease is proven. */
bool leader_acts(struct leader *ld);
/* 0 when this instance still holds the election key of its term (why "" ),
 * else -EPERM (it lost: it becomes a standby) or -EHOSTUNREACH/-ETIMEDOUT
 * (etcd unreachable: nothing may be applied). Shaped for rebalance's fence. */
int  leader_fence(void *ld, char *why, size_t whylen);
/* The leader's URL as last seen ("" when unknown) into url. */
void leader_url(struct leader *ld, char *url, size_t len);
/* Writes (body non-NULL: len bytes, the job as PUT took it) or deletes a job
 * in etcd, fenced. 0 or -errno with why. */
int  leader_job_store(struct leader *ld, const char *id, const char *body, size_t len, char *why, size_t whylen);
/* {"enabled", "role", "leader", "term", "elections", ...} for /status. */
json_t *leader_status_json(struct leader *ld);

#endif
