/*
 * classes: traffic classes (DESIGN 2.2): how a flow is classified and which
 * paths its class may use.
 *
 * A class set always holds the six built-ins at fixed indices (CLASS_TP ..
 * CLASS_DEFAULT, the same order as enum job_dim) followed by the user classes
 * of the policy file in file order. A class has match rules (AND across
 * kinds, OR within a kind; a kind left out matches everything) and a path
 * policy (the highest tier its traffic may climb, and/or the spines and
 * superspines it may cross, by name).
 *
 * Precedence, first hit wins (classes_match):
 *   1. a flow between two ranks of a registered job (flow->job set):
 *      a. user classes whose `job` rule names that job, in file order;
 *      b. the built-in of the dimension the two ranks differ in
 *         (flow->job_dim), when it is a collective pair;
 *   2. user classes without a `job` rule, in file order;
 *   3. built-ins that the policy file gave match rules, tp cp pp dp ep;
 *   4. `default`.
 * A class with a `job` rule never matches a flow of another job, or a flow
 * outside any job. Everything is bounded: at most CLASSES_MAX classes and
 * CLASS_RULES_MAX values per match kind.
 */
#ifndef TF_CLASSES_H
#define TF_CLASSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define CLASSES_MAX      64
#define CLASS_NAME_MAX   32
#define CLASS_RULES_MAX  32
#define CLASS_VIA_MAX    256
#define CLASS_FILE_MAX   (4u << 20)

enum class_builtin { CLASS_TP = 0, CLASS_CP, CLASS_PP, CLASS_DP, CLASS_EP, CLASS_DEFAULT, CLASS_NBUILTIN };

struct class_range { uint32_t lo, hi; };          /* inclusive */
struct class_prefix { uint8_t af, plen, addr[16]; };

struct class_def {
    char name[CLASS_NAME_MAX];
    bool has_rules;                 /* any match kind given */
    bool has_dscp, has_proto;
    uint64_t dscp;                  /* bit v set: DSCP v matches */
    uint64_t proto[4];              /* bit v set: IP protocol v matches */
    uint8_t nsport, ndport, nqp, nsrc, ndst, njob;
    struct class_range sport[CLASS_RULES_MAX], dport[CLASS_RULES_MAX], qp[CLASS_RULES_MAX];
    struct class_prefix src[CLASS_RULES_MAX], dst[CLASS_RULES_MAX];
    char job[CLASS_RULES_MAX][CLASS_NAME_MAX];
    /* Path policy. */
    int max_tier;                   /* enum topo_tier, or -1: unconfined */
    uint16_t nvia;                  /* 0: any spine/superspine */
    char (*via)[CLASS_NAME_MAX];    /* node names, malloc'd */
};

struct classes {
    uint32_t n;
    struct class_def c[CLASSES_MAX];
};

/* What classification looks at. dscp < 0 / has_qp false: unknown. job is the
 * registered job both endpoints belong to (NULL if none), job_dim the built-in
 * class of their rank pair (job_pair_dim) or -1 when not a collective pair. */
struct class_flow {
    int af;                         /* 4 or 6 */
    uint8_t src[16], dst[16];
    uint8_t proto;
    uint16_t sport, dport;
    bool has_qp;
    uint32_t qp;                    /* RoCEv2 destination QP */
    int dscp;
    const char *job;
    int job_dim;
};

/* The built-ins only, unconfined. */
void classes_init(struct classes *cs);
void classes_free(struct classes *cs);
/* Loads a policy object {"classes": [...]} on top of the built-ins. A class
 * named like a built-in adds rules/policy to it. On error *cs is left with
 * only the built-ins and err names the class and key. */
int  classes_load_json(struct classes *cs, const json_t *root, char *err, size_t errlen);
int  classes_load_file(struct classes *cs, const char *path, char *err, size_t errlen);
/* Index of the class called name, or -ENOENT. */
int  classes_find(const struct classes *cs, const char *name);
/* The class index for a flow (always valid: falls back to CLASS_DEFAULT). */
int  classes_match(const struct classes *cs, const struct class_flow *f);
/* True when class cls's rules (not its precedence) accept the flow. */
bool classes_rules_match(const struct class_def *c, const struct class_flow *f);
struct topo;
struct assign_policy;
/* Resolves every class's path policy against t into pol[0 .. cs->n): via
 * names must be spines or superspines of t; within each tier that via names,
 * the unnamed nodes are excluded. *owned receives the one allocation behind
 * the node_ok arrays (free() it after the policies are no longer used). */
int  classes_resolve(const struct classes *cs, const struct topo *t, struct assign_policy *pol,
                     uint8_t **owned, char *err, size_t errlen);
/* {"name", "match": {...}, "path": {...}} for one class (new reference). */
json_t *classes_def_json(const struct class_def *c);

#endif
