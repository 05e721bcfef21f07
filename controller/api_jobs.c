/*
 * api_jobs: /api/v1/jobs and /api/v1/jobs/{id} (GET, PUT, DELETE), and the
 * standby's replica of the leader's jobs (api_jobs_replace). Jobs live in
 * the state (state_job_*), beside the flows they classify; a PUT body is
 * parsed and placed under the state's write lock, so that a topology
 * reload cannot slip in between. With HA (leader.h) a job is stored in
 * etcd before it counts: one only this instance knew would vanish at the
 * next takeover.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/api_internal.h"
#include "controller/events.h"
#include "controller/leader.h"
#include "controller/state.h"
#include "policy/job.h"

/* A job as GET returns it: the codec's form (policy/job.h) and, per
 * dimension, the tier that dimension's traffic crosses. Read lock. */
static json_t *job_json(const struct state *s, size_t i)
{
    const struct job *j = s->jobs[i];
    json_t *o = job_to_json(j, s->topo), *cls = json_array();
    for (int d = 0; d < j->ndims; d++) {
        int tier = s->job_tier[i][j->dim[d]];
        json_array_append_new(cls, json_pack("{ss so}", "class", job_dim_name(j->dim[d]), "tier",
                                             tier >= 0 ? json_string(topo_tier_name(tier)) : json_null()));
    }
    json_object_set_new(o, "classes", cls);
    return o;
}

/* A PUT body -> a job on the current topology (policy/job.h's codec). */
static struct job *job_parse(const struct state *s, const char *id, json_t *in, char *err, size_t errlen)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (job_from_json(j, id, in, s->topo, err, errlen) < 0) {
        free(j);
        return NULL;
    }
    return j;
}

/* A job registered here, into etcd (fenced), so that a new leader has it.
 * When etcd does not take it, it is not registered here either: a job only
 * this instance knew would vanish at the next takeover. */
static int job_store(struct api *a, const char *id, const char *body, size_t len, bool replaced, char *err,
                     size_t errlen)
{
    int rc = leader_job_store(a->ld, id, body, len, err, errlen);
    if (rc < 0 && !replaced) {
        pthread_rwlock_wrlock(&a->st->lock);
        state_job_del(a->st, id);
        pthread_rwlock_unlock(&a->st->lock);
    }
    return rc;
}

void api_jobs_replace(struct api *a, json_t *jobs)
{
    struct state *s = a->st;
    size_t put = 0, gone = 0;
    pthread_rwlock_wrlock(&s->lock);
    for (size_t i = s->njobs; i-- > 0;)
        if (!json_object_get(jobs, s->jobs[i]->name) && state_job_del(s, s->jobs[i]->name) == 0)
            gone++;
    const char *id;
    json_t *body;
    json_object_foreach(jobs, id, body) {
        char err[256];
        bool replaced;
        struct job *j = job_id_ok(id) ? job_parse(s, id, body, err, sizeof(err)) : NULL;
        if (!j)
            log_warn("ha: job '%s' from etcd: %s; skipped", id, job_id_ok(id) ? err : "not a job id");
        else if (state_job_put(s, j, &replaced) < 0) {
            job_free(j);
            free(j);
        } else {
            put++;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    events_add(a->ev, tf_now_real(), "job", "jobs replicated from etcd: %zu registered, %zu removed", put, gone);
}

void api_get_jobs(struct api *a, const struct api_req *q, const struct api_match *m, double now, struct api_reply *r)
{
    (void)q;
    (void)m;
    (void)now;
    struct state *s = a->st;
    json_t *arr = json_array();
    pthread_rwlock_rdlock(&s->lock);
    for (size_t i = 0; i < s->njobs; i++)
        json_array_append_new(arr, job_json(s, i));
    pthread_rwlock_unlock(&s->lock);
    api_reply_json(r, 200, json_pack("{so}", "jobs", arr));
}

/* PUT /api/v1/jobs/{id}: registered (201) or replaced (200). */
static void job_put(struct api *a, const struct api_req *q, const char *id, struct api_reply *r)
{
    struct state *s = a->st;
    json_error_t je;
    json_t *in = json_loadb(q->body ? q->body : "", q->body_len, JSON_REJECT_DUPLICATES, &je);
    if (!in) {
        api_reply_json(r, 400, json_pack("{s{ss ss si si si}}", "error", "code", "bad_json", "message", je.text,
                                         "line", je.line, "column", je.column, "position", je.position));
        return;
    }
    char err[256];
    /* Parsed and placed against the topology under the write lock, so
     * that a reload cannot slip in between. */
    pthread_rwlock_wrlock(&s->lock);
    struct job *j = job_parse(s, id, in, err, sizeof(err));
    bool replaced = false;
    int rc = j ? state_job_put(s, j, &replaced) : -EINVAL;
    json_t *out = rc == 0 ? job_json(s, (size_t)state_job_find(s, id)) : NULL;
    pthread_rwlock_unlock(&s->lock);
    json_decref(in);
    if (rc == 0 && a->ld && (rc = job_store(a, id, q->body ? q->body : "", q->body_len, replaced, err, sizeof(err))) < 0) {
        json_decref(out);
        return api_error(r, 503, "not_stored", "job '%s' %s: %s", id, replaced ? "replaced here but not in etcd "
                         "(a new leader would have the old one)" : "not registered", err);
    }
    if (rc == -ENOSPC) {
        job_free(j);
        free(j);
        return api_error(r, 413, "payload_too_large", "at most %d jobs", STATE_MAX_JOBS);
    }
    if (rc < 0) {
        if (j) {
            job_free(j);
            free(j);
            snprintf(err, sizeof(err), "job '%s': %s", id, strerror(-rc));
        }
        return api_error(r, 400, "bad_request", "%s", err);
    }
    events_add(a->ev, tf_now_real(), "job", "job %s %s", id, replaced ? "replaced" : "registered");
    api_reply_json(r, replaced ? 200 : 201, out);
}

/* DELETE /api/v1/jobs/{id}: here, then in etcd. */
static void job_delete(struct api *a, const char *id, struct api_reply *r)
{
    struct state *s = a->st;
    pthread_rwlock_wrlock(&s->lock);
    int rc = state_job_del(s, id);
    pthread_rwlock_unlock(&s->lock);
    if (rc < 0)
        return api_error(r, 404, "not_found", "no job '%s'", id);
    char err[256];
    if (a->ld && leader_job_store(a->ld, id, NULL, 0, err, sizeof(err)) < 0)
        return api_error(r, 503, "not_stored", "job '%s' deleted here, but not in etcd: %s (a new leader "
                         "would have it again)", id, err);
    events_add(a->ev, tf_now_real(), "job", "job %s deleted", id);
    api_reply_json(r, 200, json_pack("{ss}", "deleted", id));
}

static void job_get(struct api *a, const char *id, struct api_reply *r)
{
    struct state *s = a->st;
    pthread_rwlock_rdlock(&s->lock);
    int i = state_job_find(s, id);
    json_t *o = i >= 0 ? job_json(s, (size_t)i) : NULL;
    pthread_rwlock_unlock(&s->lock);
    if (!o)
        return api_error(r, 404, "not_found", "no job '%s'", id);
    api_reply_json(r, 200, o);
}

/* GET, PUT or DELETE /api/v1/jobs/{id}: m->rest is the id, anything the
 * path held after the slash (checked here: a bad one is 404 to a read, 400
 * to a PUT). */
void api_job(struct api *a, const struct api_req *q, const struct api_match *m, double now, struct api_reply *r)
{
    (void)now;
    const char *id = m->rest;
    bool put = strcmp(q->method, "PUT") == 0;
    if (!job_id_ok(id))
        return api_error(r, put ? 400 : 404, put ? "bad_request" : "not_found",
                         "job id: 1..%d characters of A-Za-z0-9_.-", JOB_NAME_MAX - 1);
    if (put)
        job_put(a, q, id, r);
    else if (strcmp(q->method, "DELETE") == 0)
        job_delete(a, id, r);
    else
        job_get(a, id, r);
}
