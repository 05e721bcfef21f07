/*
 * nl_backend: see nl_backend.h.
 */
#include "controller/nl_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/nlroute.h"
#include "controller/planbuild.h"
#include "policy/topo.h"

struct nl_sw {
    char name[PLAN_SW_LEN];
    char netns[64];
    struct nlroute *nl;
    struct plan have;     /* sorted; what the kernel holds of ours */
};

struct nl_backend {
    struct nlroute_own own;
    struct nl_sw *sw;
    size_t nsw;
};

static int add_switch(struct nl_backend *b, const char *name, const char *netns, char *err,
                      size_t errlen)
{
    struct nl_sw *v = realloc(b->sw, (b->nsw + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    b->sw = v;
    struct nl_sw *s = &v[b->nsw];
    memset(s, 0, sizeof(*s));
    tf_strlcpy(s->name, name, sizeof(s->name));
    tf_strlcpy(s->netns, netns, sizeof(s->netns));
    plan_init(&s->have);
    char why[200] = "";
    int rc = nlroute_open(netns, &s->nl, why, sizeof(why));
    if (!rc)
        rc = nlroute_read(s->nl, &b->own, name, &s->have, why, sizeof(why));
    if (rc) {
        snprintf(err, errlen, "switch %s%s%s: %s", name, netns[0] ? " in netns " : "", netns, why);
        nlroute_close(s->nl);
        plan_free(&s->have);
        return rc;
    }
    plan_sort(&s->have);
    b->nsw++;
    return 0;
}

int nl_backend_open(const struct backend_cfg *cfg, struct nl_backend **out, char *err,
                    size_t errlen)
{
    struct nl_backend *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    b->own = (struct nlroute_own){cfg->prio_min, cfg->prio_max, cfg->table_base,
                                  cfg->table_base + PLANBUILD_TABLE_SPAN - 1, cfg->rt_proto};
    char local[PLAN_SW_LEN] = "";
    if (cfg->local_name)
        tf_strlcpy(local, cfg->local_name, sizeof(local));
    else if (gethostname(local, sizeof(local) - 1) < 0)
        local[0] = '\0';
    int rc = 0;
    if (!cfg->topo) {
        rc = local[0] ? add_switch(b, local, "", err, errlen) : 0;
    } else {
        const struct topo *t = cfg->topo;
        for (uint32_t i = 0; i < t->nnodes && !rc; i++) {
            const struct topo_node *nd = &t->nodes[i];
            if (nd->tier == TOPO_HOST)
                continue;
            if (nd->netns[0])
                rc = add_switch(b, nd->name, nd->netns, err, errlen);
            else if (local[0] && !strcmp(nd->name, local))
                rc = add_switch(b, nd->name, "", err, errlen);
        }
    }
    if (rc) {
        nl_backend_close(b);
        return rc;
    }
    log_info("netlink backend: %zu switch(es) reachable", b->nsw);
    *out = b;
    return 0;
}

void nl_backend_close(struct nl_backend *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->nsw; i++) {
        nlroute_close(b->sw[i].nl);
        plan_free(&b->sw[i].have);
    }
    free(b->sw);
    free(b);
}

static struct nl_sw *find_sw(struct nl_backend *b, const char *name)
{
    for (size_t i = 0; i < b->nsw; i++)
        if (!strcmp(b->sw[i].name, name))
            return &b->sw[i];
    return NULL;
}

static int reread(struct nl_backend *b, struct nl_sw *s, char *err, size_t errlen)
{
    plan_clear(&s->have);
    int rc = nlroute_read(s->nl, &b->own, s->name, &s->have, err, errlen);
    plan_sort(&s->have);
    return rc;
}

/* The four make-before-break steps of one diff; stops at the first error. */
static int run_steps(struct nl_backend *b, struct nl_sw *s, const struct plan *add,
                     const struct plan *del, struct backend_result *res, char *err,
                     size_t errlen)
{
    size_t rt = 0, done;
    int rc;
    uint8_t p = b->own.proto;
    done = 0;
    rc = nlroute_run(s->nl, NLROUTE_ROUTE_REPLACE, add, p, &done, &rt, err, errlen);
    res->routes_added += done;
    if (!rc) {
        done = 0;
        rc = nlroute_run(s->nl, NLROUTE_RULE_ADD, add, p, &done, &rt, err, errlen);
        res->rules_added += done;
    }
    if (!rc) {
        done = 0;
        rc = nlroute_run(s->nl, NLROUTE_RULE_DEL, del, p, &done, &rt, err, errlen);
        res->rules_deleted += done;
    }
    if (!rc) {
        done = 0;
        rc = nlroute_run(s->nl, NLROUTE_ROUTE_DEL, del, p, &done, &rt, err, errlen);
        res->routes_deleted += done;
    }
    res->round_trips += rt;
    return rc;
}

/* Drives switch s to target (sorted, this switch only). */
static int sync_sw(struct nl_backend *b, struct nl_sw *s, struct plan *target,
                   struct backend_result *res, char *err, size_t errlen)
{
    struct plan add, del;
    int rc = plan_diff(target, &s->have, &add, &del);
    if (rc)
        return rc;
    if (add.nrules || add.nroutes || del.nrules || del.nroutes) {
        res->switches++;
        /* A replaced route is an add whose key was in have. */
        for (size_t i = 0, j = 0; i < add.nroutes; i++) {
            while (j < s->have.nroutes && plan_route_key_cmp(&s->have.routes[j], &add.routes[i]) < 0)
                j++;
            if (j < s->have.nroutes && !plan_route_key_cmp(&s->have.routes[j], &add.routes[i]))
                res->routes_replaced++;
        }
        rc = run_steps(b, s, &add, &del, res, err, errlen);
    }
    plan_free(&add);
    plan_free(&del);
    return rc;
}

static int apply_sw(struct nl_backend *b, struct nl_sw *s, struct plan *target,
                    struct backend_result *res)
{
    char err[256] = "";
    int rc = sync_sw(b, s, target, res, err, sizeof(err));
    if (!rc) {
        plan_free(&s->have);
        return plan_copy(&s->have, target);
    }
    /* Put the switch back as it was: the old state is s->have until now. */
    log_warn("netlink backend: switch %s: %s; rolling back", s->name, err);
    snprintf(res->error, sizeof(res->error), "switch %s: %.200s", s->name, err);
    tf_strlcpy(res->failed_sw, s->name, sizeof(res->failed_sw));
    struct plan old;
    struct backend_result scratch = {0};
    char why[256] = "";
    if (plan_copy(&old, &s->have) == 0) {
        if (reread(b, s, why, sizeof(why)) == 0 &&
            sync_sw(b, s, &old, &scratch, why, sizeof(why)) == 0)
            res->rolled_back = true;
        else
            log_err("netlink backend: switch %s: rollback failed: %s", s->name, why);
        plan_free(&old);
    }
    reread(b, s, why, sizeof(why));
    return rc;
}

int nl_backend_apply(struct nl_backend *b, const struct plan *want, struct backend_result *res)
{
    char (*names)[PLAN_SW_LEN];
    size_t nnames;
    int rc = plan_switches(want, &names, &nnames);
    if (rc)
        return rc;
    for (size_t i = 0; i < nnames; i++)
        if (!find_sw(b, names[i]) && res->skipped++ == 0)
            tf_strlcpy(res->skipped_sw, names[i], sizeof(res->skipped_sw));
    free(names);
    int first = 0;
    for (size_t i = 0; i < b->nsw; i++) {
        struct plan target;
        plan_init(&target);
        rc = plan_append(&target, want, b->sw[i].name);
        if (!rc)
            rc = apply_sw(b, &b->sw[i], &target, res);
        plan_free(&target);
        if (rc && !first)
            first = rc;
    }
    return first;
}

int nl_backend_read(struct nl_backend *b, struct plan *have, char *err, size_t errlen)
{
    for (size_t i = 0; i < b->nsw; i++) {
        int rc = reread(b, &b->sw[i], err, errlen);
        if (!rc)
            rc = plan_append(have, &b->sw[i].have, NULL);
        if (rc)
            return rc;
    }
    return 0;
}

int nl_backend_withdraw(struct nl_backend *b, struct backend_result *res)
{
    struct plan empty;
    plan_init(&empty);
    int first = 0;
    for (size_t i = 0; i < b->nsw; i++) {
        struct nl_sw *s = &b->sw[i];
        char err[256] = "";
        int rc = reread(b, s, err, sizeof(err));
        if (!rc)
            rc = sync_sw(b, s, &empty, res, err, sizeof(err));
        if (rc && !first) {
            first = rc;
            snprintf(res->error, sizeof(res->error), "switch %s: %.200s", s->name, err);
            tf_strlcpy(res->failed_sw, s->name, sizeof(res->failed_sw));
        }
        reread(b, s, err, sizeof(err));
    }
    return first;
}
