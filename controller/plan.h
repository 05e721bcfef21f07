/*
 * plan: the desired (or installed) routing state of the fabric, per switch.
 *
 * A plan is two flat arrays: policy rules (a selector that looks up a
 * table) and routes (a prefix in a table with one or more next hops). It is
 * plain data: it names switches by their topology node name and interfaces
 * by name, so the same plan can be installed by netlink, written as a file,
 * or compared with what a backend read back from a kernel.
 *
 * Invariants: after plan_sort() both arrays are in one canonical order
 * (switch, then every identifying field) and hold no exact duplicates, so
 * two plans describing the same state compare equal field by field. The
 * identity of a rule is all its fields (priority included: a flow that
 * moves table gets a new priority, see docs/routing.md); the identity of a
 * route is (switch, table, family, prefix) and its next hops are its value.
 * Next hops inside a route are kept sorted by (via, dev).
 */
#ifndef TF_PLAN_H
#define TF_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define PLAN_MAX_NH 16
#define PLAN_SW_LEN 32
#define PLAN_IF_LEN 16

struct plan_nh {
    uint8_t af;                 /* 4 or 6; 0 = no gateway (dev route) */
    uint8_t via[16];
    char dev[PLAN_IF_LEN];      /* "" = let the kernel resolve via */
    uint16_t weight;            /* 1..256; as the user sees it, not weight-1 */
};

struct plan_route {
    char sw[PLAN_SW_LEN];
    uint32_t table;
    uint8_t af, dst_len;        /* af 4 or 6 */
    uint8_t dst[16];
    uint8_t nnh;                /* 1..PLAN_MAX_NH; >1 = multipath */
    struct plan_nh nh[PLAN_MAX_NH];
};

struct plan_rule {
    char sw[PLAN_SW_LEN];
    uint32_t prio, table;
    uint8_t af;                 /* 4 or 6 */
    uint8_t ipproto;            /* 0 = any */
    uint8_t src_len, dst_len;   /* 0 = any */
    uint16_t sport, dport;      /* 0 = any */
    uint8_t src[16], dst[16];
    uint32_t fwmark, fwmask;    /* fwmark 0 = any; fwmask 0 = exact (all ones) */
    int16_t dscp;               /* -1 = any; else 0..63 (FRA_DSCP) */
};

struct plan {
    struct plan_rule *rules;
    size_t nrules, rcap;
    struct plan_route *routes;
    size_t nroutes, tcap;
};

void plan_init(struct plan *p);
void plan_free(struct plan *p);
/* Empties the plan, keeping its memory. */
void plan_clear(struct plan *p);
/* Validate and append (copied). -EINVAL names nothing: callers validate
 * user input before; these only guard the invariants (af, lengths, nnh,
 * weights, NUL-terminated names). -ENOMEM on allocation failure. */
int plan_add_rule(struct plan *p, const struct plan_rule *r);
int plan_add_route(struct plan *p, const struct plan_route *r);
/* Deep copy; dst is re-initialised. */
int plan_copy(struct plan *dst, const struct plan *src);
/* Appends everything of src for switch sw (NULL = every switch). */
int plan_append(struct plan *dst, const struct plan *src, const char *sw);

/* Canonical order, next hops sorted, exact duplicates removed. */
void plan_sort(struct plan *p);
int plan_rule_cmp(const struct plan_rule *a, const struct plan_rule *b);
/* Compares route identities only (sw, table, af, prefix). */
int plan_route_key_cmp(const struct plan_route *a, const struct plan_route *b);
bool plan_route_equal(const struct plan_route *a, const struct plan_route *b);
bool plan_equal(const struct plan *a, const struct plan *b);

/* A rule in iproute2's words, the one text form of a rule (the ip -batch
 * files, error messages, events): "pref P [from S] [to D] [ipproto N]
 * [sport N] [dport N] [fwmark 0xM/0xK] [dscp N] table T"; a selector that
 * is absent is left out (so DSCP any never reads as dscp 0). Returns buf. */
const char *plan_rule_str(const struct plan_rule *r, char *buf, size_t len);

/* A rule's selectors as bits. */
enum plan_sel {
    PLAN_SEL_SRC = 1u << 0, PLAN_SEL_DST = 1u << 1, PLAN_SEL_IPPROTO = 1u << 2,
    PLAN_SEL_SPORT = 1u << 3, PLAN_SEL_DPORT = 1u << 4, PLAN_SEL_FWMARK = 1u << 5,
    PLAN_SEL_DSCP = 1u << 6,
    PLAN_SEL_OTHER = 1u << 31   /* not the same rule at all */
};
/* The selectors r has. */
unsigned plan_rule_sels(const struct plan_rule *r);
/*
 * What a kernel did to a rule it was sent: 0 when got is sent; the
 * selectors sent has and got lacks when got is sent without them and
 * otherwise equal (same switch, priority, table and family): a kernel that
 * skipped an attribute it does not know installed that broader rule;
 * PLAN_SEL_OTHER when got is another rule (any field differs, or got has a
 * selector sent lacks).
 */
unsigned plan_rule_dropped(const struct plan_rule *sent, const struct plan_rule *got);
/* "dscp (FRA_DSCP)" ... for the lowest bit of sels; "?" for none. */
const char *plan_sel_name(unsigned sels);

/*
 * What turns have into want: add gets the rules missing from have and the
 * routes that are missing or whose next hops differ (install with replace);
 * del gets the rules missing from want and the routes whose key is absent
 * from want. Both inputs are sorted first (hence non-const); add and del
 * are re-initialised and come out sorted.
 */
int plan_diff(struct plan *want, struct plan *have, struct plan *add, struct plan *del);

/* Distinct switch names of the plan, in sorted order; *out is malloc'd
 * (free it), each entry PLAN_SW_LEN bytes. */
int plan_switches(const struct plan *p, char (**out)[PLAN_SW_LEN], size_t *n);

/*
 * The plan as JSON, the one form the API (GET /api/v1/routes, a rebalance's
 * "plan"), the plan backend's plan.json and the dashboard read:
 * {"switches": [{"node", "rules": [rule...], "routes": [route...]}]}, a
 * rule {"prio", "table", "af", "ipproto", "sport", "dport", "src", "dst",
 * "fwmark", "fwmask", "dscp"} and a route {"table", "dst", "nexthops":
 * [{"via", "dev", "weight"}]}. "Any" is 0 for ipproto, ports and fwmark, ""
 * for a prefix and a via, and null for dscp (DSCP 0 is a value). docs/api.md
 * documents it. NULL only when out of memory.
 */
json_t *plan_json(const struct plan *p);
/* plan_json, indented, to f; -EIO on a write error. */
int plan_write_json(const struct plan *p, FILE *f);
/* plan_json's form read back (the plan backend's plan.json at start): out
 * is re-initialised and comes out sorted; -EINVAL with err naming the JSON
 * path (`switches[0].rules[2].dst: ...`), -ENOMEM. */
int plan_from_json(const json_t *o, struct plan *out, char *err, size_t errlen);

#endif
