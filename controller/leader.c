/*
 * leader: the election on etcd, the lease keeper, the fence and the jobs
 * replica (leader.h). Keys: the election's candidates are etcd's
 * "<ha.election>/<lease>" (v3election); the jobs set through the API are
 * "<ha.election>.jobs/<id>", outside the election's prefix so that they
 * never take part in it.
 *
 * Three threads, each with its own etcd client: the campaigner (grant a
 * lease, campaign until it wins, prove the key, wait until it loses), the
 * keeper (keepalive every ttl/3, the jobs replica on a standby) and the
 * observer (etcd's observe stream: who leads, as soon as it changes).
 */
#include "controller/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/config.h"
#include "controller/etcd.h"
#include "controller/events.h"
#include "controller/metrics.h"

#define LEADER_RETRY_S 0.5     /* between two attempts when etcd is unreachable */
#define LEADER_KEY_MAX 512
#define LEADER_CAMPAIGN_TTLS 3 /* a campaign silent this many lease TTLs is asked again */

enum role { ROLE_STANDBY, ROLE_LEADER };

struct leader {
    const struct config *cfg;
    struct events *ev;
    struct metrics *m;
    struct leader_hooks h;
    double ttl;
    char jobs_prefix[192], jobs_end[192];
    atomic_bool stop, cancel;          /* cancel: abort the campaign in flight */
    pthread_t campaigner, keeper, observer;
    struct etcd ec, ek, eo;            /* one client per thread */
    pthread_mutex_t fmu;               /* guards ef: the fence and job writes */
    struct etcd ef;
    pthread_mutex_t mu;                /* guards everything below */
    pthread_cond_t cv;
    enum role role;
    int64_t lease, rev;                /* our lease; our election key's creation revision */
    char key[LEADER_KEY_MAX];          /* our election key, base64 as etcd gave it */
    double proven;                     /* monotonic time a keepalive that succeeded was sent */
    char url[CONFIG_STR_MAX];          /* who leads, as last seen */
    int64_t term;
    uint64_t elections;
    int64_t jobs_sig[2];               /* (count, highest mod_revision) of the jobs last replicated */
    char err[384];                     /* why the last election step failed ("" after one that worked) */
};

/* An election step failed (err) or worked (NULL): /status shows the last
 * failure, and the log gets each distinct one once, not every retry. */
static void note(struct leader *ld, const char *what, const char *err)
{
    char line[sizeof(ld->err)];
    if (err)
        snprintf(line, sizeof(line), "%s: %s", what, err);
    pthread_mutex_lock(&ld->mu);
    bool news = err ? strcmp(ld->err, line) != 0 : ld->err[0] != '\0';
    if (news)
        tf_strlcpy(ld->err, err ? line : "", sizeof(ld->err));
    pthread_mutex_unlock(&ld->mu);
    if (news && err)
        log_warn("ha: %s (retrying every %.1f s)", line, LEADER_RETRY_S);
    else if (news)
        log_info("ha: etcd answers again");
}

static void nap(struct leader *ld, double s)
{
    pthread_mutex_lock(&ld->mu);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double t = (double)ts.tv_nsec / 1e9 + s;
    ts.tv_sec += (time_t)t;
    ts.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
    if (!atomic_load(&ld->stop))
        pthread_cond_timedwait(&ld->cv, &ld->mu, &ts);
    pthread_mutex_unlock(&ld->mu);
}

/* Leadership is gone (why): a standby from now on; routes stay. */
static void lose(struct leader *ld, const char *why)
{
    pthread_mutex_lock(&ld->mu);
    bool was = ld->role == ROLE_LEADER;
    ld->role = ROLE_STANDBY;
    ld->key[0] = '\0';
    ld->rev = 0;
    pthread_cond_broadcast(&ld->cv);
    pthread_mutex_unlock(&ld->mu);
    if (!was)
        return;
    atomic_store(&ld->m->leader, 0);
    log_warn("ha: lost leadership: %s; installed routes stay", why);
    events_add(ld->ev, tf_now_real(), "leader_lost", "lost leadership: %s; installed routes stay, this tierflowd "
               "is a standby", why);
    if (ld->h.on_change)
        ld->h.on_change(ld->h.arg);
}

/* The jobs in etcd -> on_jobs, when they changed since the last call. */
static int sync_jobs(struct leader *ld, struct etcd *e, bool force)
{
    json_t *req = json_pack("{so so}", "key", etcd_b64(ld->jobs_prefix, strlen(ld->jobs_prefix)), "range_end",
                            etcd_b64(ld->jobs_end, strlen(ld->jobs_end))), *resp = NULL;
    int r = req ? etcd_call(e, "/v3/kv/range", req, (long)(ld->ttl * 1000 / 2), &resp) : -ENOMEM;
    json_decref(req);
    if (r < 0)
        return r;
    json_t *kvs = json_object_get(resp, "kvs"), *jobs = json_object(), *kv;
    int64_t sig[2] = {(int64_t)json_array_size(kvs), 0};
    size_t i;
    json_array_foreach(kvs, i, kv) {
        char key[LEADER_KEY_MAX];
        int64_t mr = etcd_int(kv, "mod_revision", 0);
        sig[1] = mr > sig[1] ? mr : sig[1];
        const char *kb = json_string_value(json_object_get(kv, "key")), *vb = json_string_value(json_object_get(kv, "value"));
        /* A job is as large as the PUT that made it (limits.max_body). */
        size_t cap = vb ? strlen(vb) / 4 * 3 + 4 : 0;
        char *val = vb ? malloc(cap) : NULL;
        int n = val ? etcd_unb64(vb, val, cap) : -EINVAL;
        json_t *body = NULL;
        if (kb && n >= 0 && etcd_unb64(kb, key, sizeof(key)) >= 0 && (body = json_loadb(val, (size_t)n, 0, NULL)))
            json_object_set_new(jobs, key + strlen(ld->jobs_prefix), body);
        else
            log_warn("ha: a job in etcd under %s is not readable JSON: ignored", ld->jobs_prefix);
        free(val);
    }
    if (force || sig[0] != ld->jobs_sig[0] || sig[1] != ld->jobs_sig[1]) {
        ld->jobs_sig[0] = sig[0];
        ld->jobs_sig[1] = sig[1];
        if (ld->h.on_jobs)
            ld->h.on_jobs(ld->h.arg, jobs);
    }
    json_decref(jobs);
    json_decref(resp);
    return 0;
}

/* Proves (txn) that key still has creation revision rev; 1 yes, 0 no, -errno. */
static int holds(struct etcd *e, const char *key, int64_t rev, json_t *success, long timeout_ms)
{
    json_t *cmp = json_pack("{ss ss ss sI}", "key", key, "result", "EQUAL", "target", "CREATE", "create_revision",
                            (json_int_t)rev);
    json_t *req = json_pack("{s[o] so}", "compare", cmp, "success", success ? success : json_array()), *resp = NULL;
    int r = req ? etcd_call(e, "/v3/kv/txn", req, timeout_ms, &resp) : -ENOMEM;
    json_decref(req);
    if (r < 0)
        return r;
    r = json_is_true(json_object_get(resp, "succeeded"));
    json_decref(resp);
    return r;
}

/* A lease of ha.lease_ttl, taken as proven from now; 0 when etcd refused. */
static int64_t grant(struct leader *ld, struct etcd *e)
{
    json_t *req = json_pack("{sI}", "TTL", (json_int_t)ld->cfg->ha_lease_ttl), *resp = NULL;
    double sent = tf_now_mono();
    int r = etcd_call(e, "/v3/lease/grant", req, 2000, &resp);
    json_decref(req);
    int64_t lease = r == 0 ? etcd_int(resp, "ID", 0) : 0;
    json_decref(resp);
    note(ld, "lease grant", lease ? NULL : r < 0 ? e->err : "no ID in the answer");
    if (lease) {
        pthread_mutex_lock(&ld->mu);
        ld->lease = lease;
        ld->proven = sent;
        pthread_mutex_unlock(&ld->mu);
    }
    return lease;
}

static void *campaigner(void *arg)
{
    struct leader *ld = arg;
    struct etcd *e = &ld->ec;
    char name[sizeof(ld->cfg->ha_election)];
    tf_strlcpy(name, ld->cfg->ha_election, sizeof(name));
    int64_t lease = 0;
    while (!atomic_load(&ld->stop)) {
        if (!lease) {
            atomic_store(&ld->cancel, false);
            if (!(lease = grant(ld, e))) {
                nap(ld, LEADER_RETRY_S);
                continue;
            }
        }
        /* Waits as long as another instance leads; the keeper cancels it
         * when the lease is lost. A member that has said nothing for
         * LEADER_CAMPAIGN_TTLS leases may be hung (a campaign on it would
         * never return): ask again, on the next member, with the same lease. */
        json_t *req = json_pack("{so sI so}", "name", etcd_b64(name, strlen(name)), "lease", (json_int_t)lease,
                                "value", etcd_b64(ld->cfg->ha_advertise_url, strlen(ld->cfg->ha_advertise_url))),
               *resp = NULL;
        int r = etcd_call(e, "/v3/election/campaign", req, (long)(LEADER_CAMPAIGN_TTLS * ld->ttl * 1000), &resp);
        json_decref(req);
        json_t *lk = json_object_get(resp, "leader");
        const char *key = json_string_value(json_object_get(lk, "key"));
        int64_t rev = etcd_int(lk, "rev", 0);
        /* etcd's campaign does not recheck the key once the keys before it
         * are gone: prove it is still there, and take the jobs, before acting. */
        if (r == 0 && key && rev > 0 && strlen(key) < LEADER_KEY_MAX && holds(e, key, rev, NULL, 2000) == 1 &&
            sync_jobs(ld, e, true) == 0) {
            note(ld, "campaign", NULL);
            pthread_mutex_lock(&ld->mu);
            ld->role = ROLE_LEADER;
            tf_strlcpy(ld->key, key, sizeof(ld->key));
            ld->rev = ld->term = rev;
            tf_strlcpy(ld->url, ld->cfg->ha_advertise_url, sizeof(ld->url));
            ld->elections++;
            pthread_mutex_unlock(&ld->mu);
            atomic_store(&ld->m->leader, 1);
            atomic_fetch_add(&ld->m->elections, 1);
            log_info("ha: leading election '%s', term %lld", name, (long long)rev);
            events_add(ld->ev, tf_now_real(), "leader", "gained leadership of election '%s', term %lld", name,
                       (long long)rev);
            if (ld->h.on_change)
                ld->h.on_change(ld->h.arg);
            pthread_mutex_lock(&ld->mu);
            while (ld->role == ROLE_LEADER && !atomic_load(&ld->stop))
                pthread_cond_wait(&ld->cv, &ld->mu);
            pthread_mutex_unlock(&ld->mu);
            lease = 0;
        } else if (r == -ETIMEDOUT && !atomic_load(&ld->cancel)) {
            json_decref(resp);
            continue;
        } else if (!atomic_load(&ld->stop)) {
            note(ld, "campaign", r < 0 ? e->err : "the key was lost before it could act");
            nap(ld, LEADER_RETRY_S);
            lease = 0;
        }
        json_decref(resp);
        /* A new lease for the next campaign; the old one expires by itself
         * (it cannot be revoked while etcd is unreachable anyway). */
        if (!lease) {
            pthread_mutex_lock(&ld->mu);
            ld->lease = 0;
            pthread_mutex_unlock(&ld->mu);
        }
    }
    return NULL;
}

static void *keeper(void *arg)
{
    struct leader *ld = arg;
    struct etcd *e = &ld->ek;
    double period = ld->ttl / 3;
    while (!atomic_load(&ld->stop)) {
        pthread_mutex_lock(&ld->mu);
        int64_t lease = ld->lease;
        pthread_mutex_unlock(&ld->mu);
        if (lease) {
            json_t *req = json_pack("{sI}", "ID", (json_int_t)lease), *resp = NULL;
            double sent = tf_now_mono();
            int r = etcd_call(e, "/v3/lease/keepalive", req, (long)(period * 1000), &resp);
            json_decref(req);
            int64_t ttl = r == 0 ? etcd_int(json_object_get(resp, "result"), "TTL", 0) : -1;
            json_decref(resp);
            if (ttl > 0) {
                pthread_mutex_lock(&ld->mu);
                if (ld->lease == lease)
                    ld->proven = sent;
                pthread_mutex_unlock(&ld->mu);
            } else if (r == 0) {   /* etcd answered: the lease is gone */
                pthread_mutex_lock(&ld->mu);
                bool same = ld->lease == lease;
                if (same)
                    atomic_store(&ld->cancel, true);   /* a campaign on it would never win */
                pthread_mutex_unlock(&ld->mu);
                if (same)
                    lose(ld, "etcd says the lease expired");
            }
        }
        /* leader_acts steps down a leader whose lease went unproven. */
        if (!leader_acts(ld))
            sync_jobs(ld, e, false);
        nap(ld, period);
    }
    return NULL;
}

/* One observe message: the leader's key, its value (the URL) and term. */
static void observed(void *arg, json_t *msg)
{
    struct leader *ld = arg;
    json_t *kv = json_object_get(json_object_get(msg, "result"), "kv");
    const char *v = json_string_value(json_object_get(kv, "value"));
    char url[CONFIG_STR_MAX];
    if (!v || etcd_unb64(v, url, sizeof(url)) < 0)
        return;
    pthread_mutex_lock(&ld->mu);
    tf_strlcpy(ld->url, url, sizeof(ld->url));
    ld->term = etcd_int(kv, "create_revision", 0);
    pthread_mutex_unlock(&ld->mu);
}

static void close_clients(struct leader *ld)
{
    etcd_close(&ld->ec);
    etcd_close(&ld->ek);
    etcd_close(&ld->eo);
    etcd_close(&ld->ef);
}

static void *observer(void *arg)
{
    struct leader *ld = arg;
    char name[sizeof(ld->cfg->ha_election)];
    tf_strlcpy(name, ld->cfg->ha_election, sizeof(name));
    while (!atomic_load(&ld->stop)) {
        json_t *req = json_pack("{so}", "name", etcd_b64(name, strlen(name)));
        /* Sends the current leader first, then each new one; ends when the
         * member goes away (then another member is asked). */
        if (req && etcd_stream(&ld->eo, "/v3/election/observe", req, observed, ld) < 0 && !atomic_load(&ld->stop))
            log_debug("ha: observe: %s", ld->eo.err);
        json_decref(req);
        nap(ld, LEADER_RETRY_S);
    }
    return NULL;
}

int leader_start(struct leader **out, const struct config *c, struct events *ev, struct metrics *m,
                 const struct leader_hooks *h, char *err, size_t errlen)
{
    struct leader *ld = calloc(1, sizeof(*ld));
    if (!ld)
        return -ENOMEM;
    ld->cfg = c;
    ld->ev = ev;
    ld->m = m;
    ld->h = *h;
    ld->ttl = (double)c->ha_lease_ttl;
    ld->jobs_sig[0] = ld->jobs_sig[1] = -1;
    snprintf(ld->jobs_prefix, sizeof(ld->jobs_prefix), "%s.jobs/", c->ha_election);
    int r = etcd_prefix_end(ld->jobs_prefix, ld->jobs_end, sizeof(ld->jobs_end));
    if (r == 0 && (r = etcd_open(&ld->ec, c, &ld->cancel, err, errlen)) == 0 &&
        (r = etcd_open(&ld->ek, c, &ld->stop, err, errlen)) == 0 && (r = etcd_open(&ld->eo, c, &ld->stop, err, errlen)) == 0)
        r = etcd_open(&ld->ef, c, &ld->stop, err, errlen);
    if (r < 0) {
        close_clients(ld);
        free(ld);
        return r;
    }
    pthread_mutex_init(&ld->mu, NULL);
    pthread_mutex_init(&ld->fmu, NULL);
    pthread_cond_init(&ld->cv, NULL);
    atomic_store(&m->leader, 0);
    void *(*const fn[])(void *) = {campaigner, keeper, observer};
    pthread_t *th[] = {&ld->campaigner, &ld->keeper, &ld->observer};
    size_t started = 0;
    while (started < TF_ARRAY_SIZE(fn) && (r = -pthread_create(th[started], NULL, fn[started], ld)) == 0)
        started++;
    if (r < 0) {
        atomic_store(&ld->stop, true);
        atomic_store(&ld->cancel, true);
        while (started)
            pthread_join(*th[--started], NULL);
        close_clients(ld);
        free(ld);
        return tf_fail(err, errlen, r, "ha: cannot start the election threads: %s", strerror(-r));
    }
    *out = ld;
    return 0;
}

void leader_stop(struct leader *ld)
{
    if (!ld)
        return;
    pthread_mutex_lock(&ld->mu);
    int64_t lease = ld->lease, rev = ld->rev;
    bool lead = ld->role == ROLE_LEADER;
    char key[LEADER_KEY_MAX];
    tf_strlcpy(key, ld->key, sizeof(key));
    atomic_store(&ld->stop, true);
    atomic_store(&ld->cancel, true);
    pthread_cond_broadcast(&ld->cv);
    pthread_mutex_unlock(&ld->mu);
    /* Step down at once rather than after the lease's TTL, before waiting
     * for the threads (an idle observe stream notices the stop flag only
     * within a second): the stop flag keeps them from campaigning again
     * and aborts their clients' calls, so a fresh client does it. */
    struct etcd e;
    char err[256];
    if (lease && etcd_open(&e, ld->cfg, NULL, err, sizeof(err)) == 0) {
        json_t *req, *resp = NULL;
        const char *name = ld->cfg->ha_election;
        if (lead) {
            req = json_pack("{s{so ss sI sI}}", "leader", "name", etcd_b64(name, strlen(name)), "key", key, "rev",
                            (json_int_t)rev, "lease", (json_int_t)lease);
            if (req && etcd_call(&e, "/v3/election/resign", req, 1000, &resp) == 0)
                events_add(ld->ev, tf_now_real(), "leader_lost", "resigned term %lld: shutting down", (long long)rev);
            json_decref(req);
            json_decref(resp);
            resp = NULL;
        }
        /* The lease goes too: nothing of this instance outlives it. */
        req = json_pack("{sI}", "ID", (json_int_t)lease);
        if (req && etcd_call(&e, "/v3/lease/revoke", req, 1000, &resp) < 0)
            log_info("ha: revoking the lease: %s (gone already, or it expires within %ld s)", e.err,
                     ld->cfg->ha_lease_ttl);
        json_decref(req);
        json_decref(resp);
        etcd_close(&e);
    }
    pthread_join(ld->campaigner, NULL);
    pthread_join(ld->keeper, NULL);
    pthread_join(ld->observer, NULL);
    close_clients(ld);
    pthread_mutex_destroy(&ld->mu);
    pthread_mutex_destroy(&ld->fmu);
    pthread_cond_destroy(&ld->cv);
    free(ld);
}

bool leader_acts(struct leader *ld)
{
    if (!ld)
        return true;
    pthread_mutex_lock(&ld->mu);
    bool lead = ld->role == ROLE_LEADER;
    double age = tf_now_mono() - ld->proven;
    pthread_mutex_unlock(&ld->mu);
    /* Whoever asks first after the lease went unproven (the main loop asks
     * every few ms) makes this instance a standby: the gauge, the event and
     * the backend follow at once, not when a keepalive times out. */
    if (lead && age > ld->ttl) {
        char why[96];
        snprintf(why, sizeof(why), "lease not proven for %.1f s (etcd unreachable?)", age);
        lose(ld, why);
        return false;
    }
    return lead;
}

/* The fenced transaction: success (may be NULL) runs only if this instance
 * still holds its term's key. */
static int fenced(struct leader *ld, json_t *success, char *why, size_t whylen)
{
    if (!leader_acts(ld)) {
        json_decref(success);
        return tf_fail(why, whylen, -EPERM, "not the leader (or its lease is not proven)");
    }
    pthread_mutex_lock(&ld->mu);
    char key[LEADER_KEY_MAX];
    tf_strlcpy(key, ld->key, sizeof(key));
    int64_t rev = ld->rev;
    pthread_mutex_unlock(&ld->mu);
    pthread_mutex_lock(&ld->fmu);
    int r = holds(&ld->ef, key, rev, success, 1000);
    char eerr[sizeof(ld->ef.err)];
    tf_strlcpy(eerr, ld->ef.err, sizeof(eerr));
    pthread_mutex_unlock(&ld->fmu);
    if (r == 1)
        return 0;
    if (r == 0) {
        char w[96];
        snprintf(w, sizeof(w), "fenced: the election key of term %lld is gone", (long long)rev);
        lose(ld, w);
        return tf_fail(why, whylen, -EPERM, "%s", w);
    }
    return tf_fail(why, whylen, r, "cannot prove leadership: %s", eerr);
}

int leader_fence(void *arg, char *why, size_t whylen)
{
    why[0] = '\0';
    return fenced(arg, NULL, why, whylen);
}

int leader_job_store(struct leader *ld, const char *id, const char *body, size_t len, char *why, size_t whylen)
{
    char key[sizeof(ld->jobs_prefix) + 64];
    snprintf(key, sizeof(key), "%s%s", ld->jobs_prefix, id);
    json_t *op = body ? json_pack("{s{so so}}", "request_put", "key", etcd_b64(key, strlen(key)), "value",
                                  etcd_b64(body, len))
                      : json_pack("{s{so}}", "request_delete_range", "key", etcd_b64(key, strlen(key)));
    return op ? fenced(ld, json_pack("[o]", op), why, whylen) : -ENOMEM;
}

void leader_url(struct leader *ld, char *url, size_t len)
{
    pthread_mutex_lock(&ld->mu);
    tf_strlcpy(url, ld->url, len);
    pthread_mutex_unlock(&ld->mu);
}

json_t *leader_status_json(struct leader *ld)
{
    if (!ld)
        return json_pack("{sb ss}", "enabled", false, "role", "leader");
    bool acts = leader_acts(ld);
    pthread_mutex_lock(&ld->mu);
    double age = ld->lease ? tf_now_mono() - ld->proven : -1;
    json_t *o = json_pack("{sb ss ss ss sI sI sI so so}", "enabled", true, "role", acts ? "leader" : "standby",
                          "election", ld->cfg->ha_election, "leader", ld->url, "term", (json_int_t)ld->term,
                          "elections", (json_int_t)ld->elections, "lease_ttl_s", (json_int_t)ld->cfg->ha_lease_ttl,
                          "lease_proven_age_s", age >= 0 ? json_real(age) : json_null(), "error",
                          ld->err[0] ? json_string(ld->err) : json_null());
    pthread_mutex_unlock(&ld->mu);
    return o;
}
