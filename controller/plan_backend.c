/*
 * plan_backend: see plan_backend.h. Switch names become file names, so a
 * name that is not a plain file name is refused (named in the error)
 * rather than mangled. An error names the folder or the file it was
 * writing, never the temporary file's random name: the rebalance loop logs
 * a failure once per distinct message, so a message that changed every
 * round (a missing folder's mkstemp name) was a log line every round.
 */
#include "controller/plan_backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "controller/planbatch.h"
#include "policy/topo.h"

typedef int (*writer_fn)(FILE *f, const void *ctx);

static int write_atomic(const char *dir, const char *name, writer_fn fn, const void *ctx,
                        char *err, size_t errlen)
{
    char tmp[4096], dst[4096];
    if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= sizeof(dst) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >= sizeof(tmp)) {
        snprintf(err, errlen, "%s/%s: path too long", dir, name);
        return -ENAMETOOLONG;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "writing %s: %s", dst, strerror(e));
        return -e;
    }
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(tmp);
        snprintf(err, errlen, "writing %s: %s", dst, strerror(e));
        return -e;
    }
    fchmod(fd, 0644);
    int rc = fn(f, ctx);
    if (!rc && (fflush(f) || fsync(fd)))
        rc = -errno;
    if (fclose(f) && !rc)
        rc = -errno;
    if (!rc && rename(tmp, dst) < 0)
        rc = -errno;
    if (rc) {
        unlink(tmp);
        snprintf(err, errlen, "writing %s: %s", dst, strerror(-rc));
        return rc;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);   /* the rename itself must survive a crash */
        close(dfd);
    }
    return 0;
}

static int write_json(FILE *f, const void *ctx)
{
    return plan_write_json(ctx, f);
}

struct batch_ctx {
    const struct plan *p, *prev;
    const char *sw;
    const struct planbatch_opts *o;
};

static int write_transition(FILE *f, const void *ctx)
{
    const struct batch_ctx *c = ctx;
    fprintf(f, "# tierflow: switch %s from the previous plan to this one (ip -batch FILE; "
               "applying it again changes nothing)\n", c->sw);
    return planbatch_transition(c->p, c->prev, c->sw, c->o, f);
}

static int write_full(FILE *f, const void *ctx)
{
    const struct batch_ctx *c = ctx;
    fprintf(f, "# tierflow: switch %s to this plan from any state of tierflow's own rules and "
               "routes (ip -batch FILE)\n", c->sw);
    return planbatch_full(c->p, c->sw, c->o, f);
}

static bool file_name_ok(const char *s)
{
    size_t n = strlen(s);
    /* "X.full" would share X's full-state file name */
    if (!s[0] || s[0] == '.' || (n >= 5 && !strcmp(s + n - 5, ".full")))
        return false;
    for (const char *c = s; *c; c++)
        if (*c == '/' || (unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
            return false;
    return true;
}

int plan_backend_save(const char *dir, const struct plan *p, char *err, size_t errlen)
{
    return write_atomic(dir, "plan.json", write_json, p, err, errlen);
}

int plan_backend_read(const char *dir, struct plan *out, char *err, size_t errlen)
{
    char path[4096], why[200];
    plan_init(out);
    if ((size_t)snprintf(path, sizeof(path), "%s/plan.json", dir) >= sizeof(path))
        return tf_fail(err, errlen, -ENAMETOOLONG, "%s/plan.json: path too long", dir);
    char *text = NULL;
    size_t len = 0;
    int rc = tf_read_file(path, PLAN_BACKEND_JSON_MAX, &text, &len);
    if (rc == -ENOENT)
        return 0;
    if (rc)
        return tf_fail(err, errlen, rc, "%s: %s", path, strerror(-rc));
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!o)
        return tf_fail(err, errlen, -EINVAL, "%s: line %d: %s", path, je.line, je.text);
    rc = plan_from_json(o, out, why, sizeof(why));
    json_decref(o);
    if (rc)
        tf_fail(err, errlen, rc, "%s: %s (fix or remove it; the full-state files converge from any state)", path,
                why);
    return rc;
}

void plan_backend_fit(const struct topo *t, struct plan *p, struct backend_result *res)
{
    size_t w = 0;
    for (size_t i = 0; i < p->nrules; i++) {
        const struct plan_rule *r = &p->rules[i];
        uint32_t node = t ? topo_node_by_name(t, r->sw) : TOPO_NONE;
        unsigned v = node != TOPO_NONE && t->nodes[node].iproute2 ? t->nodes[node].iproute2
                                                                   : PLAN_BACKEND_IPROUTE2_DEFAULT;
        if (r->dscp < 0 || v >= PLAN_BACKEND_IPROUTE2_DSCP) {
            p->rules[w++] = *r;
            continue;
        }
        char why[200];
        snprintf(why, sizeof(why), "switch %s: its iproute2 %u.%u%s has no `ip rule ... dscp` (6.13+): DSCP "
                 "class rules refused (set the node's \"iproute2\" in the topology if it is newer)", r->sw,
                 v / 100, v % 100, v == PLAN_BACKEND_IPROUTE2_DEFAULT ? " (assumed)" : "");
        backend_result_unsup(res, r->sw, PLAN_SEL_DSCP, 1, why);
    }
    p->nrules = w;
}

int plan_backend_write(const char *dir, const struct plan *p, const struct plan *prev,
                       const struct planbatch_opts *o, char *err, size_t errlen)
{
    if (!dir || !dir[0]) {
        snprintf(err, errlen, "plan backend: no output folder (plan_dir)");
        return -EINVAL;
    }
    /* The folder first, in words an operator acts on; tierflowd does not
     * make it (its owner and mode are the deployment's choice). */
    struct stat st;
    if (stat(dir, &st) < 0) {
        int e = errno;
        return tf_fail(err, errlen, -e, "backend_options.plan_dir %s: %s (tierflowd does not create it; each "
                       "round tries again)", dir, strerror(e));
    }
    if (!S_ISDIR(st.st_mode))
        return tf_fail(err, errlen, -ENOTDIR, "backend_options.plan_dir %s: not a folder", dir);
    struct plan all, empty;
    plan_init(&all);
    plan_init(&empty);
    char (*names)[PLAN_SW_LEN] = NULL;
    size_t n = 0;
    int rc = plan_append(&all, p, NULL);
    if (!rc && prev)
        rc = plan_append(&all, prev, NULL);
    if (!rc)
        rc = plan_switches(&all, &names, &n);
    plan_free(&all);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!file_name_ok(names[i])) {
            snprintf(err, errlen, "switch '%s': not usable as a file name", names[i]);
            rc = -EINVAL;
            break;
        }
        char fname[PLAN_SW_LEN + 16];
        struct batch_ctx c = {p, prev ? prev : &empty, names[i], o};
        snprintf(fname, sizeof(fname), "%s.full.ipbatch", names[i]);
        rc = write_atomic(dir, fname, write_full, &c, err, errlen);
        snprintf(fname, sizeof(fname), "%s.ipbatch", names[i]);
        if (!rc)
            rc = write_atomic(dir, fname, write_transition, &c, err, errlen);
    }
    free(names);
    /* plan.json last: a reader that sees it also sees every script. */
    if (!rc)
        rc = write_atomic(dir, "plan.json", write_json, p, err, errlen);
    return rc;
}
