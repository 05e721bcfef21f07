/*
 * bgp_announce: what the bgp backend announces, as pure computation (no
 * I/O but the text it writes to a stream, no lock: bgp_backend.c calls it
 * under its mutex). Two steps:
 *   - bgp_announce_project: a plan's pinned flows -> the paths to announce,
 *     per leaf and destination host one /32 per next hop (spine) its pins
 *     use; when there are several each is an add-path route weighted by its
 *     pins (link bandwidth). Rules with no BGP form are refused, pins whose
 *     next hop routing does not offer are narrowed away;
 *   - bgp_announce_diff: the ExaBGP commands that move the speaker from one
 *     set of paths to another, make-before-break (every announcement, then
 *     the withdrawals), counted into a backend_result.
 *
 * Invariants: a set of paths is sorted by bgp_announce_path_cmp and holds
 * each (leaf, destination, next hop) once; a path's add-path id is its
 * uplink's (link + 1), so a next hop keeps its id across plans; only /32s
 * with the no-advertise community are ever written.
 */
#ifndef TF_BGP_ANNOUNCE_H
#define TF_BGP_ANNOUNCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "controller/backend_result.h"

struct topo;

struct bgp_ann {                   /* one announced route (path) */
    uint32_t peer;                 /* the leaf's peer index (bgp_backend's) */
    uint8_t dst[4], via[4];
    uint32_t link;                 /* the leaf's uplink to the spine of via: its
                                      path id is link + 1 */
    uint32_t weight;               /* the pins through it when the plan splits
                                      this (leaf, destination) over several
                                      spines (its link bandwidth), else 0 */
};

/* What the projection and the commands need of the backend. */
struct bgp_announce_ctx {
    const struct topo *t;
    const uint32_t *peer_of;       /* topology node -> peer index, UINT32_MAX none */
    uint32_t table_base;           /* tierflow's tables (owner.h) */
    uint32_t local_as;             /* the speaker's, for the bandwidth community */
    /* Whether the spine at the far end of link still reaches dst's leaf. */
    bool (*reaches)(const void *arg, uint32_t link, const uint8_t dst[4]);
    /* The session address of peer. */
    const char *(*peer_addr)(const void *arg, uint32_t peer);
    const void *arg;
};

/* What a refused rule is refused for: its mark or DSCP selector, or the
 * rule as a whole (IPv6, not a host destination, a switch not peered). */
struct bgp_announce_refusal {
    size_t n;
    char sw[PLAN_SW_LEN];
    unsigned sels;
    char why[256];
};

/* The link bandwidth (bytes/s) a weighted path is announced with, 0 for
 * none: the one rule for the command and for the read-back. */
double bgp_announce_bandwidth(const struct bgp_ann *a);

/* By (leaf, destination): the routes of one destination at one leaf. */
int bgp_announce_cmp(const void *x, const void *y);
/* By (leaf, destination, next hop): one path, the order sets keep. */
int bgp_announce_path_cmp(const void *x, const void *y);

/* want -> the paths to announce (*out, sorted, free()d by the caller);
 * *narrowed adds the pins given up, rf the rules no BGP route expresses
 * (the first named). -ENOMEM. */
int bgp_announce_project(const struct bgp_announce_ctx *c, const struct plan *want, struct bgp_ann **out,
                         size_t *nout, size_t *narrowed, struct bgp_announce_refusal *rf);

/* Writes to f the commands that move the speaker from cur to next (both
 * sorted), announcements first; *ncmd gets their number, res adds
 * routes_added, routes_replaced (weight changed) and routes_deleted. A
 * write error shows in f (ferror, fclose). */
void bgp_announce_diff(const struct bgp_announce_ctx *c, const struct bgp_ann *cur, size_t ncur,
                      const struct bgp_ann *next, size_t nnext, FILE *f, size_t *ncmd, struct backend_result *res);

#endif
