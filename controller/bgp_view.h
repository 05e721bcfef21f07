/*
 * bgp_view: the fabric as the bgp backend's speaker hears it. One peer per
 * switch of the topology with a management address and an AS; each peer's
 * session state and the leaf prefixes it announces to the controller
 * (ExaBGP's JSON messages, or the answers to `show adj-rib in` and
 * `show neighbor summary` when an adopted speaker is read back). From
 * them: whether a spine still reaches a destination leaf, and which link
 * directions are down for the policy.
 *
 * Invariants: a session's routes count only once its initial routes are
 * complete (End-of-RIB, or BGP_VIEW_SETTLE_S without an update after the
 * first): until then what it has not announced yet is not taken as lost.
 * A peer never heard from, or whose routes are not complete, reaches
 * everything (nothing to go by). A spine whose session, once up, went down
 * takes all its links out of view both ways (BACKEND_DIR_UNSEEN, not down:
 * its data plane may be fine). Not thread-safe: the backend's
 * mutex guards it.
 */
#ifndef TF_BGP_VIEW_H
#define TF_BGP_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct topo;

/* FRR sends a spine's routes one UPDATE per AS path within milliseconds,
 * and End-of-RIB cannot be counted on (RFC 4724 ties it to the
 * graceful-restart capability, which the speaker does not offer: its
 * routes must go with its session). */
#define BGP_VIEW_SETTLE_S 0.5

struct bgp_view_peer {
    uint32_t node;
    char addr[64];
    bool known, up;                /* known: a state or summary was read */
    bool rib;                      /* up: its initial routes are complete, so a
                                      leaf it does not announce it does not reach */
    double rib_at;                 /* up, not rib: the last update's time (monotonic), 0 none */
    bool was_up;                   /* it has been up since the speaker started */
    uint8_t *reach;                /* per topology node: 1 = announces that leaf's prefix */
};

struct bgp_view {
    const struct topo *t;
    struct bgp_view_peer *peers;
    size_t npeers;
    uint32_t *peer_of;             /* topology node -> peer index, UINT32_MAX none */
    uint8_t *down;                 /* per link direction (2 * nlinks): BACKEND_DIR_* or 0 */
    uint32_t ndirs;
};

/* One peer per switch of t with a mgmt address (IPv4) and an asn; err
 * names a bad address, or says that there is nothing to peer with. */
int  bgp_view_init(struct bgp_view *v, const struct topo *t, char *err, size_t errlen);
void bgp_view_free(struct bgp_view *v);
/* A new speaker: every session unheard of again. */
void bgp_view_reset(struct bgp_view *v);
struct bgp_view_peer *bgp_view_peer(struct bgp_view *v, const char *addr);
/* One of ExaBGP's JSON messages (a session's state, an update). */
void bgp_view_message(struct bgp_view *v, json_t *m);
/* A line of `show adj-rib in`: the peer announces that prefix. */
void bgp_view_rib_in(struct bgp_view *v, const char *addr, const char *prefix);
/* A line of `show neighbor summary` (an adopted speaker: its rib-in was
 * read just before, so the peer's routes count at once). */
void bgp_view_summary(struct bgp_view *v, const char *line);
/* Sessions whose initial routes are complete by now count; returns the
 * milliseconds until the next one may (-1: none pending). */
int  bgp_view_settle(struct bgp_view *v, double now);
/* Whether the spine at the far end of link still reaches dst's leaf. */
bool bgp_view_reaches(const struct bgp_view *v, uint32_t link, const uint8_t dst[4]);
/* Recomputes down[]; returns whether it changed. */
bool bgp_view_refresh(struct bgp_view *v);

#endif
