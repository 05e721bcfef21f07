/*
 * nlsock: the rtnetlink transport under nlroute, as FRR's kernel_netlink.c
 * is under rt_netlink.c: one libnl socket into one kernel (the local one
 * or a named network namespace), requests sent in batches with their acks
 * collected by sequence number, dumps read to their end, and the change
 * notification socket. It knows nothing of rules or routes: the caller
 * (nlroute.c, the codec) builds each request and parses each dump entry.
 *
 * Batching goes zebra style: the built messages are copied into one buffer
 * of up to NLSOCK_BATCH bytes per send, each with NLM_F_ACK, then every
 * ack is collected by sequence number before the next batch, so an error
 * names its item.
 *
 * Invariant: the socket lives in the target namespace for its whole life
 * (it is created after setns(2) into it and the thread returns at once).
 * Every function returns 0 or -errno (libnl's NLE_* codes mapped by
 * nlsock_errno). Not thread-safe: one caller per socket.
 */
#ifndef TF_NLSOCK_H
#define TF_NLSOCK_H

#include <stdbool.h>
#include <stddef.h>

#define NLSOCK_BATCH (64 * 1024)

struct nlsock;
struct nl_msg;
struct nlmsghdr;

/* netns NULL or "" = the caller's namespace; else /run/netns/<netns>. */
int nlsock_open(const char *netns, struct nlsock **out, char *err, size_t errlen);
void nlsock_close(struct nlsock *s);

/* A libnl result (>= 0 or -NLE_*) as 0 or -errno. */
int nlsock_errno(int nle);

/* Builds request i into *msg (freed by nlsock); on failure -errno and why
 * says what went wrong. */
typedef int (*nlsock_build_fn)(void *arg, size_t i, struct nl_msg **msg, char *why, size_t whylen);

/* The item a run stopped at. */
struct nlsock_fail {
    long item;           /* -1: the transport failed, no item to blame */
    bool kernel;         /* the kernel refused it (else building it failed) */
    char why[160];       /* the kernel's extended-ack text, or the build error */
};

/*
 * Sends requests 0..total-1, built by build(arg, i), in batches, each
 * batch's acks collected before the next. An add that finds the identical
 * object (EEXIST; del false) and a delete that finds nothing
 * (ENOENT/ESRCH; del true) count as done: the kernel is already as asked.
 * Stops after the first batch with an error and returns it, with f naming
 * the item; the items before it in its batch were sent. *done adds the
 * successful items, *round_trips the batches sent.
 */
int nlsock_run(struct nlsock *s, size_t total, bool del, nlsock_build_fn build, void *arg, size_t *done,
               size_t *round_trips, struct nlsock_fail *f);

/* Called for each message of a dump; an error stops parsing (the rest is
 * still read off the socket) and is returned by nlsock_dump. */
typedef int (*nlsock_dump_fn)(void *arg, struct nlmsghdr *h);
/*
 * Dumps type (RTM_GET*) with the request header hdr, calling fn for every
 * message. A dump the kernel marks interrupted by a change
 * (NLM_F_DUMP_INTR) is repeated, up to 5 times, after reset(arg) (which
 * undoes what fn kept); -EAGAIN when it stayed interrupted.
 */
int nlsock_dump(struct nlsock *s, int type, void *hdr, size_t hlen, nlsock_dump_fn fn, void *arg,
                void (*reset)(void *arg));

/* A non-blocking netlink socket in netns subscribed to link and route
 * changes (IPv4 and IPv6); *fd for poll(2), close(2) it when done. */
int nlsock_watch_open(const char *netns, int *fd, char *err, size_t errlen);
/* Reads every pending notification; returns how many there were (a lost
 * overflow counts as one), or -errno. The content is not kept: a
 * notification only says that the view must be read again. */
int nlsock_watch_drain(int fd);

#endif
