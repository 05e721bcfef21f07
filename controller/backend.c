/*
 * backend: see backend.h. The dispatcher owns what every kind shares:
 * validation of the wanted plan against tierflow's ranges (so no kind can
 * be asked to touch state it does not own), the last applied plan (what
 * "plan" and "none" report as installed) and the error text. What differs
 * between kinds is one row of kinds[] (as FRR registers its dataplane
 * providers in a table, zebra_dplane.c): its name, what it is, and its
 * functions, where NULL means the shared default.
 */
#include "controller/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/bgp_backend.h"
#include "controller/nl_backend.h"
#include "controller/owner.h"
#include "controller/plan_backend.h"
#include "controller/planbuild.h"

struct kind_def;

struct backend {
    const struct kind_def *kind;
    struct backend_cfg cfg;
    char plan_dir[4096];
    struct plan last;
    struct nl_backend *nl;
    struct bgp_backend *bgp;
    bool healthy;
    char err[256];
};

/* One kind of backend. */
struct kind_def {
    const char *name;
    bool acts;           /* changes something outside tierflowd (backend_acts) */
    bool per_dst;        /* steers per destination host (backend_per_destination) */
    bool needs_topo;     /* needs every hop of the topology expressible (backend_check_topo) */
    /* After the shared part of backend_open (b->cfg is cfg with plan_dir
     * b->plan_dir and local_name NULL); on failure close is called. */
    int (*open)(struct backend *b, const struct backend_cfg *cfg, char *err, size_t errlen);
    /* Installs want; fit is want less what the kind cannot express, and
     * becomes the last applied plan. */
    int (*apply)(struct backend *b, const struct plan *want, struct plan *fit, struct backend_result *res);
    int (*read)(struct backend *b, struct plan *have);               /* NULL: the last applied plan */
    int (*withdraw)(struct backend *b, struct backend_result *res);  /* NULL: apply an empty plan */
    /* NULL: -EOPNOTSUPP, nothing down. */
    int (*routing)(struct backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen);
    bool (*healthy)(struct backend *b);                              /* NULL: the last apply's word */
    json_t *(*json)(struct backend *b);                              /* NULL: none */
    int (*metrics)(struct backend *b, FILE *f);                      /* NULL: none */
    void (*close)(struct backend *b);                                /* NULL: nothing of its own */
};

static int check_owned(struct backend *b, const struct plan *p)
{
    uint32_t tmin = b->cfg.table_base, tmax = tmin + OWNER_TABLE_SPAN - 1;
    for (size_t i = 0; i < p->nrules; i++) {
        const struct plan_rule *r = &p->rules[i];
        if (r->prio < b->cfg.prio_min || r->prio > b->cfg.prio_max || r->table < tmin ||
            r->table > tmax) {
            snprintf(b->err, sizeof(b->err),
                     "rule %zu on switch %s: priority %u or table %u outside tierflow's "
                     "(%u-%u, %u-%u)", i, r->sw, r->prio, r->table, b->cfg.prio_min,
                     b->cfg.prio_max, tmin, tmax);
            return -EINVAL;
        }
    }
    for (size_t i = 0; i < p->nroutes; i++) {
        const struct plan_route *r = &p->routes[i];
        if (r->table < tmin || r->table > tmax) {
            snprintf(b->err, sizeof(b->err),
                     "route %zu on switch %s: table %u outside tierflow's %u-%u", i, r->sw,
                     r->table, tmin, tmax);
            return -EINVAL;
        }
    }
    return 0;
}

/* Counts for the kinds that install nothing: what would change. */
static int count_diff(const struct plan *want, const struct plan *last, struct backend_result *res)
{
    struct plan w, h, add, del;
    int rc = plan_copy(&w, want);
    if (rc)
        return rc;
    if ((rc = plan_copy(&h, last))) {
        plan_free(&w);
        return rc;
    }
    if (!(rc = plan_diff(&w, &h, &add, &del))) {
        res->rules_added = add.nrules;
        res->rules_deleted = del.nrules;
        res->routes_added = add.nroutes;
        res->routes_deleted = del.nroutes;
        plan_free(&add);
        plan_free(&del);
    }
    plan_free(&w);
    plan_free(&h);
    return rc;
}

/* ---- the kinds ---------------------------------------------------------- */

static int none_apply(struct backend *b, const struct plan *want, struct plan *fit, struct backend_result *res)
{
    (void)want;
    return count_diff(fit, &b->last, res);
}

static int plan_open(struct backend *b, const struct backend_cfg *cfg, char *err, size_t errlen)
{
    if (!cfg->plan_dir || tf_strlcpy(b->plan_dir, cfg->plan_dir, sizeof(b->plan_dir)) >= sizeof(b->plan_dir) ||
        !cfg->plan_dir[0]) {
        snprintf(err, errlen, "plan backend: plan_dir missing or too long");
        return -EINVAL;
    }
    /* Its transitions start from what it wrote before a restart, not from
     * nothing. */
    return plan_backend_read(b->plan_dir, &b->last, err, errlen);
}

static int plan_apply(struct backend *b, const struct plan *want, struct plan *fit, struct backend_result *res)
{
    (void)want;
    plan_backend_fit(b->cfg.topo, fit, res);
    int rc = count_diff(fit, &b->last, res);
    if (!rc) {
        struct planbatch_opts po = {.proto = b->cfg.rt_proto, .prio_min = b->cfg.prio_min,
                                    .table_base = b->cfg.table_base};
        rc = plan_backend_write(b->plan_dir, fit, &b->last, &po, res->error, sizeof(res->error));
    }
    return rc;
}

static int nl_open(struct backend *b, const struct backend_cfg *cfg, char *err, size_t errlen)
{
    return nl_backend_open(cfg, &b->nl, err, errlen);   /* cfg: with local_name */
}

static int nl_apply(struct backend *b, const struct plan *want, struct plan *fit, struct backend_result *res)
{
    (void)fit;
    return nl_backend_apply(b->nl, want, res);
}

static int nl_read(struct backend *b, struct plan *have) { return nl_backend_read(b->nl, have, b->err, sizeof(b->err)); }

static int nl_withdraw(struct backend *b, struct backend_result *res) { return nl_backend_withdraw(b->nl, res); }

static int nl_routing(struct backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen)
{
    return nl_backend_routing(b->nl, down, ndirs, notes, noteslen);
}

static void nl_close(struct backend *b) { nl_backend_close(b->nl); }

static int bgp_open(struct backend *b, const struct backend_cfg *cfg, char *err, size_t errlen)
{
    /* Its transitions start from the plan the adopted speaker announces. */
    int rc = bgp_backend_open(cfg, &b->bgp, err, errlen);
    return rc ? rc : bgp_backend_wanted(b->bgp, &b->last);
}

static int bgp_apply(struct backend *b, const struct plan *want, struct plan *fit, struct backend_result *res)
{
    (void)fit;
    return bgp_backend_apply(b->bgp, want, res);
}

static int bgp_withdraw(struct backend *b, struct backend_result *res) { return bgp_backend_withdraw(b->bgp, res); }

static int bgp_routing(struct backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen)
{
    return bgp_backend_routing(b->bgp, down, ndirs, notes, noteslen);
}

/* The speaker and its sessions change between rounds. */
static bool bgp_healthy(struct backend *b)
{
    return b->healthy && bgp_backend_healthy(b->bgp, b->err, sizeof(b->err));
}

static json_t *bgp_json(struct backend *b) { return bgp_backend_json(b->bgp); }

static int bgp_metrics(struct backend *b, FILE *f) { return bgp_backend_metrics(b->bgp, f); }

static void bgp_close(struct backend *b) { bgp_backend_close(b->bgp); }

/* One row per kind, in the order an unknown kind's error lists them; the
 * last row (none) is the default. */
static const struct kind_def kinds[] = {
    {.name = "netlink", .acts = true, .needs_topo = true, .open = nl_open, .apply = nl_apply, .read = nl_read,
     .withdraw = nl_withdraw, .routing = nl_routing, .close = nl_close},
    {.name = "plan", .acts = true, .needs_topo = true, .open = plan_open, .apply = plan_apply},
    {.name = "bgp", .acts = true, .per_dst = true, .needs_topo = true, .open = bgp_open, .apply = bgp_apply,
     .withdraw = bgp_withdraw, .routing = bgp_routing, .healthy = bgp_healthy, .json = bgp_json,
     .metrics = bgp_metrics, .close = bgp_close},
    {.name = "none", .apply = none_apply},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* NULL means the default (none); -EINVAL (NULL) names the unknown kind
 * and lists the known ones. */
static const struct kind_def *kind_find(const char *name, char *err, size_t errlen)
{
    if (!name)
        return &kinds[NKINDS - 1];
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcmp(name, kinds[i].name))
            return &kinds[i];
    char list[128] = "";
    for (size_t i = 0, u = 0; i < NKINDS; i++, u = strlen(list))
        snprintf(list + u, sizeof(list) - u, "%s%s", i ? ", " : "", kinds[i].name);
    snprintf(err, errlen, "backend '%.32s': not one of %s", name, list);
    return NULL;
}

/* ---- the interface ------------------------------------------------------ */

int backend_open(const char *kind, const struct backend_cfg *cfg, struct backend **out,
                 char *err, size_t errlen)
{
    const struct kind_def *k = kind_find(kind, err, errlen);
    if (!k)
        return -EINVAL;
    int rc = backend_cfg_check(cfg, err, errlen);
    if (rc)
        return rc;
    struct backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->kind = k;
    b->cfg = *cfg;
    plan_init(&b->last);
    b->cfg.plan_dir = b->plan_dir;
    b->cfg.local_name = NULL;   /* not kept: only used by nl_backend_open */
    if (k->open && (rc = k->open(b, cfg, err, errlen))) {
        backend_close(b);
        return rc;
    }
    b->healthy = true;
    *out = b;
    return 0;
}

int backend_apply(struct backend *b, const struct plan *want, struct backend_result *res)
{
    struct backend_result scratch;
    if (!res)
        res = &scratch;
    memset(res, 0, sizeof(*res));
    /* The loop logs a failure once per cause (rebalance.c); the end of one
     * is said here, once, so that the log shows when it was fixed. */
    bool was_healthy = b->healthy;
    char was_err[sizeof(b->err)];
    tf_strlcpy(was_err, b->err, sizeof(was_err));
    b->err[0] = '\0';
    int rc = check_owned(b, want);
    if (rc) {
        tf_strlcpy(res->error, b->err, sizeof(res->error));
        return rc;
    }
    struct plan fit;   /* what this kind can express of want */
    if ((rc = plan_copy(&fit, want)))
        return rc;
    rc = b->kind->apply(b, want, &fit, res);
    if (!rc) {
        struct plan copy;
        if (!(rc = plan_copy(&copy, &fit))) {
            plan_sort(&copy);
            plan_free(&b->last);
            b->last = copy;
        }
    }
    plan_free(&fit);
    if (rc && !res->error[0])
        snprintf(res->error, sizeof(res->error), "%s", strerror(-rc));
    /* The rest of the plan is installed, but what a switch cannot express
     * is not: that is not healthy, and says which switch and selector. */
    tf_strlcpy(b->err, rc ? res->error : res->unsupported, sizeof(b->err));
    b->healthy = rc == 0 && !res->unsupported[0];
    if (b->healthy && !was_healthy)
        log_info("backend %s: working again (it had failed: %s)", b->kind->name,
                 was_err[0] ? was_err : "reading its state");
    return rc;
}

int backend_read(struct backend *b, struct plan *have)
{
    plan_init(have);
    int rc = b->kind->read ? b->kind->read(b, have) : plan_append(have, &b->last, NULL);
    if (rc) {
        b->healthy = false;
        plan_free(have);
        return rc;
    }
    plan_sort(have);
    return 0;
}

int backend_withdraw(struct backend *b, struct backend_result *res)
{
    struct plan empty;
    plan_init(&empty);
    if (!b->kind->withdraw)
        return backend_apply(b, &empty, res);
    struct backend_result scratch;
    if (!res)
        res = &scratch;
    memset(res, 0, sizeof(*res));
    int rc = b->kind->withdraw(b, res);
    plan_clear(&b->last);
    tf_strlcpy(b->err, res->error, sizeof(b->err));
    b->healthy = rc == 0;
    return rc;
}

int backend_routing(struct backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen)
{
    if (notes && noteslen)
        notes[0] = '\0';
    if (b->kind->routing)
        return b->kind->routing(b, down, ndirs, notes, noteslen);
    memset(down, 0, ndirs);
    return -EOPNOTSUPP;
}

bool backend_healthy(struct backend *b) { return b->kind->healthy ? b->kind->healthy(b) : b->healthy; }

json_t *backend_json(struct backend *b) { return b->kind->json ? b->kind->json(b) : NULL; }

int backend_metrics(struct backend *b, FILE *f) { return b->kind->metrics ? b->kind->metrics(b, f) : 0; }

bool backend_acts(const struct backend *b) { return b->kind->acts; }

bool backend_per_destination(const struct backend *b) { return b->kind->per_dst; }

int backend_check_topo(const char *kind, const struct topo *t, char *err, size_t errlen)
{
    const struct kind_def *k = kind_find(kind, err, errlen);
    if (!k)
        return -EINVAL;
    if (!k->needs_topo)
        return 0;
    char why[200];
    int rc = planbuild_check_topo(t, why, sizeof(why));
    if (rc)
        snprintf(err, errlen, "backend %s cannot program this topology: %s", k->name, why);
    return rc;
}

const char *backend_error(const struct backend *b) { return b->err; }

const char *backend_kind(const struct backend *b) { return b->kind->name; }

void backend_close(struct backend *b)
{
    if (!b)
        return;
    if (b->kind->close)
        b->kind->close(b);
    plan_free(&b->last);
    free(b);
}
