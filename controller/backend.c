/*
 * backend: see backend.h. The dispatcher owns what every kind shares:
 * validation of the wanted plan against tierflow's ranges (so no kind can
 * be asked to touch state it does not own), the last applied plan (what
 * "plan" and "none" report as installed) and the error text.
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

enum kind { K_NONE, K_PLAN, K_NETLINK, K_BGP };

/* One row per kind: its name, whether it acts outside the daemon and
 * whether it steers per destination rather than per flow. */
static const struct kind_def {
    const char *name;
    bool acts, per_dst;
} kinds[] = {[K_NONE] = {"none", false}, [K_PLAN] = {"plan", true}, [K_NETLINK] = {"netlink", true},
               [K_BGP] = {"bgp", true, true}};

/* NULL means none (the default); -EINVAL names the unknown kind. */
static int kind_parse(const char *kind, enum kind *k, char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!kind ? i == K_NONE : !strcmp(kind, kinds[i].name)) {
            *k = (enum kind)i;
            return 0;
        }
    snprintf(err, errlen, "backend '%.32s': not one of netlink, plan, bgp, none", kind);
    return -EINVAL;
}

struct backend {
    enum kind kind;
    struct backend_cfg cfg;
    char plan_dir[4096];
    struct plan last;
    struct nl_backend *nl;
    struct bgp_backend *bgp;
    bool healthy;
    char err[256];
};

void backend_cfg_default(struct backend_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->prio_min = OWNER_PRIO_MIN_DEFAULT;
    c->prio_max = OWNER_PRIO_MAX_DEFAULT;
    c->table_base = OWNER_TABLE_BASE_DEFAULT;
    c->rt_proto = OWNER_PROTO_DEFAULT;
}

static int cfg_check(const struct backend_cfg *c, char *err, size_t errlen)
{
    if (c->prio_max < c->prio_min || c->prio_min == 0 ||
        c->prio_max - c->prio_min + 1 < OWNER_PRIO_SPAN)
        snprintf(err, errlen, "rule priorities %u-%u: need 1.. and at least %d of them",
                 c->prio_min, c->prio_max, OWNER_PRIO_SPAN);
    else if (c->table_base < OWNER_TABLE_BASE_MIN || c->table_base > UINT32_MAX - OWNER_TABLE_SPAN)
        snprintf(err, errlen, "table base %u: must be %u..%u", c->table_base, OWNER_TABLE_BASE_MIN,
                 UINT32_MAX - OWNER_TABLE_SPAN);
    else if (c->rt_proto <= OWNER_PROTO_KERNEL_MAX)
        snprintf(err, errlen, "route protocol %u is reserved by the kernel", c->rt_proto);
    else
        return 0;
    return -EINVAL;
}

int backend_open(const char *kind, const struct backend_cfg *cfg, struct backend **out,
                 char *err, size_t errlen)
{
    enum kind k;
    int rc = kind_parse(kind, &k, err, errlen);
    if (rc)
        return rc;
    rc = cfg_check(cfg, err, errlen);
    if (rc)
        return rc;
    struct backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->kind = k;
    b->cfg = *cfg;
    plan_init(&b->last);
    if (k == K_PLAN) {
        if (!cfg->plan_dir || tf_strlcpy(b->plan_dir, cfg->plan_dir, sizeof(b->plan_dir)) >=
                                  sizeof(b->plan_dir) || !cfg->plan_dir[0]) {
            snprintf(err, errlen, "plan backend: plan_dir missing or too long");
            free(b);
            return -EINVAL;
        }
    }
    b->cfg.plan_dir = b->plan_dir;
    /* The plan backend's transitions start from what it wrote before a
     * restart, not from nothing. */
    if (k == K_PLAN && (rc = plan_backend_read(b->plan_dir, &b->last, err, errlen))) {
        free(b);
        return rc;
    }
    b->cfg.local_name = NULL;   /* not kept: only used by nl_backend_open */
    if (k == K_NETLINK && (rc = nl_backend_open(cfg, &b->nl, err, errlen))) {
        free(b);
        return rc;
    }
    /* Its transitions start from the plan the adopted speaker announces. */
    if (k == K_BGP && ((rc = bgp_backend_open(cfg, &b->bgp, err, errlen)) ||
                       (rc = bgp_backend_wanted(b->bgp, &b->last)))) {
        bgp_backend_close(b->bgp);
        free(b);
        return rc;
    }
    b->healthy = true;
    *out = b;
    return 0;
}

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
    if (b->kind == K_NETLINK) {
        rc = nl_backend_apply(b->nl, want, res);
    } else if (b->kind == K_BGP) {
        rc = bgp_backend_apply(b->bgp, want, res);
    } else {
        if (b->kind == K_PLAN)
            plan_backend_fit(b->cfg.topo, &fit, res);
        rc = count_diff(&fit, &b->last, res);
        if (!rc && b->kind == K_PLAN) {
            struct planbatch_opts po = {.proto = b->cfg.rt_proto, .prio_min = b->cfg.prio_min,
                                        .table_base = b->cfg.table_base};
            rc = plan_backend_write(b->plan_dir, &fit, &b->last, &po, res->error, sizeof(res->error));
        }
    }
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
        log_info("backend %s: working again (it had failed: %s)", kinds[b->kind].name,
                 was_err[0] ? was_err : "reading its state");
    return rc;
}

int backend_read(struct backend *b, struct plan *have)
{
    plan_init(have);
    int rc = b->kind == K_NETLINK ? nl_backend_read(b->nl, have, b->err, sizeof(b->err))
                                  : plan_append(have, &b->last, NULL);
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
    if (b->kind != K_NETLINK && b->kind != K_BGP)
        return backend_apply(b, &empty, res);
    struct backend_result scratch;
    if (!res)
        res = &scratch;
    memset(res, 0, sizeof(*res));
    int rc = b->kind == K_BGP ? bgp_backend_withdraw(b->bgp, res) : nl_backend_withdraw(b->nl, res);
    plan_clear(&b->last);
    tf_strlcpy(b->err, res->error, sizeof(b->err));
    b->healthy = rc == 0;
    return rc;
}

int backend_routing(struct backend *b, uint8_t *down, uint32_t ndirs, char *notes, size_t noteslen)
{
    if (notes && noteslen)
        notes[0] = '\0';
    if (b->kind == K_BGP)
        return bgp_backend_routing(b->bgp, down, ndirs, notes, noteslen);
    if (b->kind != K_NETLINK) {
        memset(down, 0, ndirs);
        return -EOPNOTSUPP;
    }
    return nl_backend_routing(b->nl, down, ndirs, notes, noteslen);
}

void backend_result_unsup(struct backend_result *res, const char *sw, unsigned sels, size_t refused,
                          const char *why)
{
    res->refused += refused;
    if (!res->unsupported[0])
        tf_strlcpy(res->unsupported, why, sizeof(res->unsupported));
    for (size_t i = 0; i < res->nunsup; i++)
        if (!strcmp(res->unsup[i].sw, sw)) {
            res->unsup[i].sels |= sels;
            return;
        }
    if (res->nunsup < BACKEND_UNSUP_MAX) {
        tf_strlcpy(res->unsup[res->nunsup].sw, sw, sizeof(res->unsup[0].sw));
        res->unsup[res->nunsup++].sels = sels;
    }
}

bool backend_healthy(struct backend *b)
{
    /* The speaker and its sessions change between rounds. */
    if (b->kind == K_BGP && b->healthy && !bgp_backend_healthy(b->bgp, b->err, sizeof(b->err)))
        return false;
    return b->healthy;
}

json_t *backend_json(struct backend *b)
{
    return b->kind == K_BGP ? bgp_backend_json(b->bgp) : NULL;
}

int backend_metrics(struct backend *b, FILE *f)
{
    return b->kind == K_BGP ? bgp_backend_metrics(b->bgp, f) : 0;
}
bool backend_acts(const struct backend *b) { return kinds[b->kind].acts; }

bool backend_per_destination(const struct backend *b) { return kinds[b->kind].per_dst; }

int backend_check_topo(const char *kind, const struct topo *t, char *err, size_t errlen)
{
    enum kind k;
    int rc = kind_parse(kind, &k, err, errlen);
    if (rc || !kinds[k].acts)
        return rc;
    char why[200];
    if ((rc = planbuild_check_topo(t, why, sizeof(why))))
        snprintf(err, errlen, "backend %s cannot program this topology: %s", kinds[k].name, why);
    return rc;
}
const char *backend_error(const struct backend *b) { return b->err; }

const char *backend_kind(const struct backend *b) { return kinds[b->kind].name; }

void backend_close(struct backend *b)
{
    if (!b)
        return;
    nl_backend_close(b->nl);
    bgp_backend_close(b->bgp);
    plan_free(&b->last);
    free(b);
}
