/*
 * leader and etcd against a real etcd (one member on loopback, started
 * here in a scratch folder; the suite skips, saying so, when etcd is not
 * installed): two candidates elect one leader, the standby names it, the
 * fence passes for the leader only and fails, demoting it, once its
 * election key is gone (what a paused leader finds on waking), jobs reach
 * the standby's replica, a leader that stops hands over at once, and one
 * that cannot reach etcd stops acting within its lease TTL; with etcd
 * authentication on, the right password leads (and authenticates again
 * once its token expired), a wrong one never does and says why.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/util.h"
#include "controller/config.h"
#include "controller/etcd.h"
#include "controller/events.h"
#include "controller/leader.h"
#include "controller/metrics.h"

#define PORT_CLIENT 18120   /* the ha helper's range, 18100-18199 */
#define PORT_PEER 18121
#define ENDPOINT "http://127.0.0.1:18120"
#define TLS_ENDPOINT "https://127.0.0.1:18122"

static pid_t etcd_pid;
static char dir[64];
static bool have_etcd;

struct cand {
    struct config cfg;
    struct events ev;
    struct metrics m;
    struct leader *ld;
    int jobs_calls;
    json_t *jobs;
};

static void on_jobs(void *arg, json_t *jobs)
{
    struct cand *c = arg;
    c->jobs_calls++;
    json_decref(c->jobs);
    c->jobs = json_deep_copy(jobs);
}

/* The rest of a candidate's config (its memset and defaults done, any
 * credentials set), then its election threads. */
static void cand_begin(struct cand *c, const char *url, const char *endpoint)
{
    char err[256];
    assert_int_equal(config_set_str(&c->cfg, "ha.etcd_endpoints", endpoint, err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c->cfg, "ha.advertise_url", url, err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c->cfg, "ha.election", "tftest", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c->cfg, "ha.lease_ttl", "2", err, sizeof(err)), 0);
    events_init(&c->ev);
    metrics_init(&c->m);
    struct leader_hooks h = {.on_jobs = on_jobs, .arg = c};
    assert_int_equal(leader_start(&c->ld, &c->cfg, &c->ev, &c->m, &h, err, sizeof(err)), 0);
}

/* user and pwfile (may be NULL): etcd authentication. */
static void cand_start_as(struct cand *c, const char *url, const char *user, const char *pwfile)
{
    char err[256];
    memset(c, 0, sizeof(*c));
    config_defaults(&c->cfg);
    if (user) {
        assert_int_equal(config_set_str(&c->cfg, "ha.username", user, err, sizeof(err)), 0);
        assert_int_equal(config_set_str(&c->cfg, "ha.password_file", pwfile, err, sizeof(err)), 0);
    }
    cand_begin(c, url, ENDPOINT);
}

/* ha.tls_*: cert and key may be NULL (the CA only). */
static void cand_start_tls(struct cand *c, const char *url, const char *ca, const char *cert, const char *key)
{
    char err[256];
    memset(c, 0, sizeof(*c));
    config_defaults(&c->cfg);
    assert_int_equal(config_set_str(&c->cfg, "ha.tls_ca", ca, err, sizeof(err)), 0);
    if (cert) {
        assert_int_equal(config_set_str(&c->cfg, "ha.tls_cert", cert, err, sizeof(err)), 0);
        assert_int_equal(config_set_str(&c->cfg, "ha.tls_key", key, err, sizeof(err)), 0);
    }
    cand_begin(c, url, TLS_ENDPOINT);
}

static void cand_start(struct cand *c, const char *url)
{
    cand_start_as(c, url, NULL, NULL);
}

static void cand_stop(struct cand *c)
{
    leader_stop(c->ld);
    c->ld = NULL;
    events_destroy(&c->ev);
    json_decref(c->jobs);
    c->jobs = NULL;
}

/* Waits up to s seconds for pred over the two candidates. */
static bool wait_for(double s, bool (*pred)(struct cand *, struct cand *), struct cand *a, struct cand *b)
{
    for (double t = tf_now_mono() + s; tf_now_mono() < t; usleep(20000))
        if (pred(a, b))
            return true;
    return pred(a, b);
}

static bool one_leads(struct cand *a, struct cand *b)
{
    return leader_acts(a->ld) != leader_acts(b->ld);
}

static bool has_event(struct events *ev, const char *kind)
{
    json_t *o = events_json(ev, 0, EVENTS_MAX), *e;
    size_t i;
    bool found = false;
    json_array_foreach(json_object_get(o, "events"), i, e)
        found |= strcmp(json_string_value(json_object_get(e, "kind")), kind) == 0;
    json_decref(o);
    return found;
}

#define NEED_ETCD() do { if (!have_etcd) { fprintf(stderr, "# SKIP: etcd is not installed (scripts/deps.sh test)\n"); skip(); } } while (0)

static void test_b64(void **st)
{
    (void)st;
    static const char *const in[] = {"", "a", "ab", "abc", "tierflow/694d9a1b2c3d4e5f"};
    for (size_t i = 0; i < TF_ARRAY_SIZE(in); i++) {
        json_t *j = etcd_b64(in[i], strlen(in[i]));
        char out[64];
        assert_int_equal(etcd_unb64(json_string_value(j), out, sizeof(out)), (int)strlen(in[i]));
        assert_string_equal(out, in[i]);
        json_decref(j);
    }
    json_t *j = etcd_b64("abc", 3);
    assert_string_equal(json_string_value(j), "YWJj");
    json_decref(j);
    char small[3];
    assert_int_equal(etcd_unb64("YWJj", small, sizeof(small)), -EINVAL);
    assert_int_equal(etcd_unb64("Y*Jj", small, sizeof(small)), -EINVAL);
    char end[16];
    assert_int_equal(etcd_prefix_end("a.jobs/", end, sizeof(end)), 0);
    assert_string_equal(end, "a.jobs0");
}

static void test_config(void **st)
{
    (void)st;
    struct config c;
    char err[256];
    config_defaults(&c);
    assert_int_equal(config_set_str(&c, "topology", "leafspine:leaves=2,spines=2,hosts=2", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c, "ha.etcd_endpoints", ENDPOINT, err, sizeof(err)), 0);
    assert_int_equal(config_validate(&c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "ha.advertise_url"));
    assert_int_equal(config_set_str(&c, "ha.advertise_url", "http://10.0.0.1:8080", err, sizeof(err)), 0);
    assert_int_equal(config_validate(&c, err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c, "ha.election", "a/b", err, sizeof(err)), 0);
    assert_int_equal(config_validate(&c, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "ha.election"));
    /* A password file others may read is refused, as a token file is. */
    char pw[] = "/tmp/tf-leader-pw-XXXXXX";
    int fd = mkstemp(pw);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "pw\n", 3), 3);
    close(fd);
    assert_int_equal(chmod(pw, 0644), 0);
    assert_int_equal(config_set_str(&c, "ha.election", "tierflow", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c, "ha.username", "tf", err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&c, "ha.password_file", pw, err, sizeof(err)), 0);
    assert_true(config_validate(&c, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "ha.password_file"));
    assert_non_null(strstr(err, "chmod 600"));
    assert_int_equal(chmod(pw, 0600), 0);
    assert_int_equal(config_validate(&c, err, sizeof(err)), 0);
    unlink(pw);
    assert_true(config_set_str(&c, "ha.lease_ttl", "0", err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "ha.lease_ttl"));
    struct etcd e;
    assert_int_equal(config_set_str(&c, "ha.etcd_endpoints", "127.0.0.1:2379", err, sizeof(err)), 0);
    assert_int_equal(etcd_open(&e, &c, NULL, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "127.0.0.1:2379"));
}

static void test_election_fence_handover(void **st)
{
    (void)st;
    NEED_ETCD();
    static struct cand a, b;
    cand_start(&a, "http://127.0.0.1:18130");
    for (double t = tf_now_mono() + 5; !leader_acts(a.ld) && tf_now_mono() < t;)
        usleep(20000);
    assert_true(leader_acts(a.ld));            /* alone: it leads */
    cand_start(&b, "http://127.0.0.1:18131");
    usleep(1500000);                           /* the keeper's first look at who leads */
    assert_true(one_leads(&a, &b));
    assert_true(leader_acts(a.ld));
    char why[256], url[256];
    leader_url(b.ld, url, sizeof(url));
    assert_string_equal(url, "http://127.0.0.1:18130");
    assert_int_equal(leader_fence(a.ld, why, sizeof(why)), 0);
    assert_int_equal(leader_fence(b.ld, why, sizeof(why)), -EPERM);
    assert_int_equal(atomic_load(&a.m.leader), 1);
    assert_int_equal(atomic_load(&b.m.leader), 0);
    json_t *s = leader_status_json(b.ld);
    assert_string_equal(json_string_value(json_object_get(s, "role")), "standby");
    json_decref(s);

    /* Jobs: stored by the leader (fenced), replicated to the standby; a
     * standby cannot store. */
    static const char job[] = "{\"ranks\":[\"H1\"]}";
    assert_int_equal(leader_job_store(a.ld, "j1", job, strlen(job), why, sizeof(why)), 0);
    assert_int_equal(leader_job_store(b.ld, "j2", "{}", 2, why, sizeof(why)), -EPERM);
    for (double t = tf_now_mono() + 3; !json_object_get(b.jobs, "j1") && tf_now_mono() < t;)
        usleep(20000);
    assert_non_null(json_object_get(json_object_get(b.jobs, "j1"), "ranks"));
    assert_int_equal(leader_job_store(a.ld, "j1", NULL, 0, why, sizeof(why)), 0);
    for (double t = tf_now_mono() + 3; json_object_size(b.jobs) && tf_now_mono() < t;)
        usleep(20000);
    assert_int_equal(json_object_size(b.jobs), 0);

    /* The leader's key deleted behind its back (a paused leader finds it
     * so): the fence fails, says why, and it is a standby. */
    struct etcd e;
    assert_int_equal(etcd_open(&e, &a.cfg, NULL, why, sizeof(why)), 0);
    char end[64];
    assert_int_equal(etcd_prefix_end("tftest/", end, sizeof(end)), 0);
    json_t *req = json_pack("{so so}", "key", etcd_b64("tftest/", 7), "range_end", etcd_b64(end, strlen(end))), *resp;
    /* b's key goes too: a fresh campaign decides, as after a takeover. */
    assert_int_equal(etcd_call(&e, "/v3/kv/deleterange", req, 2000, &resp), 0);
    json_decref(req);
    json_decref(resp);
    etcd_close(&e);
    int r = leader_fence(a.ld, why, sizeof(why));
    if (r == 0)   /* the campaigner already re-won on a fresh key: that is a new term */
        assert_true(leader_acts(a.ld) || leader_acts(b.ld));
    else {
        assert_int_equal(r, -EPERM);
        assert_non_null(strstr(why, "fenced"));
        assert_true(has_event(&a.ev, "leader_lost"));
    }

    /* Whoever leads now stops: the other takes over at once (resign by
     * revoking the lease), well within the TTL. */
    assert_true(wait_for(5, one_leads, &a, &b));
    struct cand *ldr = leader_acts(a.ld) ? &a : &b, *sby = ldr == &a ? &b : &a;
    cand_stop(ldr);
    double t0 = tf_now_mono();
    for (double t = t0 + 5; !leader_acts(sby->ld) && tf_now_mono() < t;)
        usleep(20000);
    assert_true(leader_acts(sby->ld));
    assert_true(tf_now_mono() - t0 < 2.0 + 1.0);
    /* The event follows the flag from the campaign's thread: under load a
     * fresh-clone make test looked between the two. */
    for (double t = tf_now_mono() + 2; !has_event(&sby->ev, "leader") && tf_now_mono() < t;)
        usleep(20000);
    assert_true(has_event(&sby->ev, "leader"));
    /* The observe stream names the new leader (its own URL now). */
    for (double t = tf_now_mono() + 2; tf_now_mono() < t; usleep(20000)) {
        leader_url(sby->ld, url, sizeof(url));
        if (strcmp(url, sby->cfg.ha_advertise_url) == 0)
            break;
    }
    assert_string_equal(url, sby->cfg.ha_advertise_url);
    assert_true(atomic_load(&sby->m.elections) >= 1);

    /* etcd frozen: the leader cannot prove its lease; it stops acting
     * within the TTL (+ one keepalive period) and the fence fails. */
    kill(etcd_pid, SIGSTOP);
    t0 = tf_now_mono();
    for (double t = t0 + 6; leader_acts(sby->ld) && tf_now_mono() < t;)
        usleep(20000);
    double took = tf_now_mono() - t0;
    bool acts = leader_acts(sby->ld);
    r = leader_fence(sby->ld, why, sizeof(why));
    kill(etcd_pid, SIGCONT);
    assert_false(acts);
    assert_true(took <= 2.0 + 1.0);   /* TTL + 1 s, the bound of issue 19: generous on a busy machine */
    assert_int_not_equal(r, 0);
    cand_stop(sby);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, 0600), 0);
}

/* Last: it turns authentication on in the suite's etcd. Its simple tokens
 * live 1 s (--auth-token-ttl), so a client idle longer (the fence client
 * here) must authenticate again when etcd refuses its token. */
static void test_auth(void **st)
{
    (void)st;
    NEED_ETCD();
    if (system("command -v etcdctl >/dev/null 2>&1") != 0) {
        fprintf(stderr, "# SKIP: etcdctl is not installed (scripts/deps.sh test)\n");
        skip();
    }
    assert_int_equal(system("(E='etcdctl --endpoints " ENDPOINT "'; export ETCDCTL_API=3; "
                            "$E user add root --new-user-password=rootpw && $E user add tf --new-user-password=tfpw && "
                            "$E role add tfrole && $E role grant-permission tfrole readwrite tftest --prefix=true && "
                            "$E user grant-role tf tfrole && $E auth enable) >/dev/null 2>&1"), 0);
    char good[128], bad[128], why[256];
    snprintf(good, sizeof(good), "%s.good", dir);
    snprintf(bad, sizeof(bad), "%s.bad", dir);
    write_file(good, "tfpw\n");
    write_file(bad, "nope\n");
    static struct cand a, b;
    cand_start_as(&a, "http://127.0.0.1:18132", "tf", good);
    cand_start_as(&b, "http://127.0.0.1:18133", "tf", bad);
    for (double t = tf_now_mono() + 5; !leader_acts(a.ld) && tf_now_mono() < t;)
        usleep(20000);
    assert_true(leader_acts(a.ld));
    usleep(2500000);   /* the fence client's token expires meanwhile */
    static const char job[] = "{\"ranks\":[\"H1\"]}";
    assert_int_equal(leader_job_store(a.ld, "j9", job, strlen(job), why, sizeof(why)), 0);
    assert_int_equal(leader_fence(a.ld, why, sizeof(why)), 0);
    assert_false(leader_acts(b.ld));
    json_t *s = leader_status_json(b.ld);
    const char *e = json_string_value(json_object_get(s, "error"));
    assert_non_null(e);
    assert_non_null(strstr(e, "authentication failed"));
    json_decref(s);
    cand_stop(&b);
    cand_stop(&a);
    unlink(good);
    unlink(bad);
}

/* Starts etcd member NAME (client URL, peer port, extra flags) in dir; its
 * PID, or -1. */
static pid_t spawn_etcd(const char *name, const char *client, int peer, const char *const *extra)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    char data[96], log[96], purl[64], cluster[96];
    snprintf(data, sizeof(data), "%s/%s", dir, name);
    snprintf(log, sizeof(log), "%s/%s.log", dir, name);
    snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", peer);
    snprintf(cluster, sizeof(cluster), "%s=%s", name, purl);
    if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
        _exit(127);
    const char *argv[32] = {"etcd", "--name", name, "--data-dir", data, "--listen-client-urls", client,
                            "--advertise-client-urls", client, "--listen-peer-urls", purl,
                            "--initial-advertise-peer-urls", purl, "--initial-cluster", cluster};
    size_t n = 15;
    for (size_t i = 0; extra && extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    execvp("etcd", (char *const *)argv);
    _exit(127);
}

/* Waits until the etcd of c's endpoints answers (pid still running); 0 or -1. */
static int etcd_ready(const struct config *c, pid_t pid)
{
    char err[256];
    struct etcd e;
    if (etcd_open(&e, c, NULL, err, sizeof(err)) < 0)
        return -1;
    int r = -1;
    for (int i = 0; i < 100 && r < 0; i++) {
        json_t *req = json_pack("{so}", "key", etcd_b64("x", 1)), *resp = NULL;
        r = etcd_call(&e, "/v3/kv/range", req, 500, &resp);
        json_decref(req);
        json_decref(resp);
        int st;
        if (r < 0 && waitpid(pid, &st, WNOHANG) == pid)
            break;
        if (r < 0)
            usleep(100000);
    }
    etcd_close(&e);
    return r < 0 ? -1 : 0;
}

static void stop_etcd(pid_t pid)
{
    kill(pid, SIGCONT);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* TLS to etcd: a CA, a server certificate for 127.0.0.1 and a client
 * certificate made here with openssl; etcd asks for client certificates.
 * A candidate with ha.tls_ca, ha.tls_cert and ha.tls_key leads; one with
 * the CA only is refused by etcd and says so in /status. */
static void test_tls(void **st)
{
    (void)st;
    NEED_ETCD();
    char cmd[1024], f[6][128];
    static const char *const nm[] = {"ca.pem", "srv.pem", "srv.key", "cli.pem", "cli.key", "tls"};
    for (int i = 0; i < 6; i++)
        snprintf(f[i], sizeof(f[i]), "%s/%s", dir, nm[i]);
    snprintf(cmd, sizeof(cmd),
             "(cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 -subj /CN=tf-ca && "
             "openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 && "
             "printf 'subjectAltName=IP:127.0.0.1\\n' > ext && "
             "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 1 -extfile ext && "
             "openssl req -newkey rsa:2048 -nodes -keyout cli.key -out cli.csr -subj /CN=tf && "
             "openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cli.pem -days 1) >/dev/null 2>&1",
             dir);
    if (system("command -v openssl >/dev/null 2>&1") != 0 || system(cmd) != 0) {
        fprintf(stderr, "# SKIP: openssl could not make the test certificates\n");
        skip();
    }
    const char *const extra[] = {"--cert-file", f[1], "--key-file", f[2], "--trusted-ca-file", f[0],
                                 "--client-cert-auth", NULL};
    pid_t pid = spawn_etcd("tls", TLS_ENDPOINT, 18123, extra);
    static struct cand a, b;
    char err[256];
    config_defaults(&a.cfg);
    assert_int_equal(config_set_str(&a.cfg, "ha.etcd_endpoints", TLS_ENDPOINT, err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&a.cfg, "ha.tls_ca", f[0], err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&a.cfg, "ha.tls_cert", f[3], err, sizeof(err)), 0);
    assert_int_equal(config_set_str(&a.cfg, "ha.tls_key", f[4], err, sizeof(err)), 0);
    if (etcd_ready(&a.cfg, pid) < 0) {
        stop_etcd(pid);
        fail_msg("etcd with TLS did not come up on %s (see %s/tls.log)", TLS_ENDPOINT, dir);
    }
    cand_start_tls(&a, "http://127.0.0.1:18134", f[0], f[3], f[4]);
    cand_start_tls(&b, "http://127.0.0.1:18135", f[0], NULL, NULL);
    for (double t = tf_now_mono() + 5; !leader_acts(a.ld) && tf_now_mono() < t;)
        usleep(20000);
    bool led = leader_acts(a.ld);
    usleep(500000);
    json_t *s = leader_status_json(b.ld);
    char berr[384];
    tf_strlcpy(berr, json_string_value(json_object_get(s, "error")) ? json_string_value(json_object_get(s, "error")) : "",
               sizeof(berr));
    json_decref(s);
    bool b_led = leader_acts(b.ld);
    cand_stop(&b);
    cand_stop(&a);
    stop_etcd(pid);
    assert_true(led);
    assert_false(b_led);
    assert_non_null(strstr(berr, TLS_ENDPOINT));
}

static int start_etcd(void)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-leader-test-%d", (int)getpid());
    if (mkdir(dir, 0700) < 0)
        return -1;
    static const char *const extra[] = {"--auth-token-ttl", "1", NULL};
    etcd_pid = spawn_etcd("t", ENDPOINT, 18121, extra);
    struct config c;
    char err[256];
    config_defaults(&c);
    config_set_str(&c, "ha.etcd_endpoints", ENDPOINT, err, sizeof(err));
    return etcd_ready(&c, etcd_pid);
}

int main(void)
{
    have_etcd = system("command -v etcd >/dev/null 2>&1") == 0;
    if (have_etcd && start_etcd() < 0) {
        fprintf(stderr, "etcd did not come up on %s (see %s/t.log)\n", ENDPOINT, dir);
        if (etcd_pid > 0)
            kill(etcd_pid, SIGKILL);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_election_fence_handover),
        cmocka_unit_test(test_tls),
        cmocka_unit_test(test_auth),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (etcd_pid > 0) {
        stop_etcd(etcd_pid);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    return rc;
}
