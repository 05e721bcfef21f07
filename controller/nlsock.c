/*
 * nlsock: see nlsock.h. The batch-with-acks transport and the dump reader
 * over a libnl socket.
 *
 * Each message the caller built is completed on the socket (request flag,
 * the socket's next sequence number), gets NLM_F_ACK, and is copied into
 * one batch buffer of at most NLSOCK_BATCH bytes plus one message
 * (NLSOCK_MSG_MAX), which goes out in one nl_sendto. Items of a batch
 * therefore have consecutive sequence numbers: item i has base+i.
 *
 * Acks come back through nl_recvmsgs with a callback set of our own: the
 * sequence check drops anything outside the batch (a stale ack of an
 * aborted batch), NL_CB_ACK counts successes, the error callback records
 * the first real failure with the kernel's text. Error acks are capped
 * (NETLINK_CAP_ACK) and carry that text as an extended ack
 * (NETLINK_EXT_ACK, NLMSGERR_ATTR_MSG); libnl 3.7 knows neither socket
 * option nor the attributes, so those two parts are by hand.
 *
 * libnl reports its own error codes (NLE_*); they are mapped to errno where
 * a libnl call returns (nlsock_errno), so every function here returns 0 or
 * -errno.
 */
#include "controller/nlsock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "common/log.h"
#include "common/util.h"

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

#define NLSOCK_MSG_MAX 2048
/* libnl's receive buffer. Peeking at each datagram's size first would
 * double the recvmsg calls of a batch (one datagram per ack), so it is off
 * except during dumps; an ack always fits. */
#define NLSOCK_RX (32 * 1024)
#define NLSOCK_SOCKBUF (8 << 20)

struct nlsock {
    struct nl_sock *sk;
    char *tx;
    size_t txlen;
};

#define fail tf_fail

int nlsock_errno(int e)
{
    if (e >= 0)
        return 0;
    switch (-e) {
    case NLE_INTR: return -EINTR;
    case NLE_BAD_SOCK: return -EBADF;
    case NLE_AGAIN: case NLE_DUMP_INTR: return -EAGAIN;
    case NLE_NOMEM: return -ENOMEM;      /* also the socket's ENOBUFS */
    case NLE_EXIST: return -EEXIST;
    case NLE_INVAL: case NLE_AF_MISMATCH: case NLE_MISSING_ATTR: return -EINVAL;
    case NLE_RANGE: return -ERANGE;
    case NLE_MSGSIZE: case NLE_MSG_TRUNC: case NLE_MSG_TOOSHORT: case NLE_ATTRSIZE:
        return -EMSGSIZE;
    case NLE_OPNOTSUPP: return -EOPNOTSUPP;
    case NLE_AF_NOSUPPORT: return -EAFNOSUPPORT;
    case NLE_OBJ_NOTFOUND: return -ENOENT;
    case NLE_MSG_OVERFLOW: return -ENOBUFS;
    case NLE_BUSY: return -EBUSY;
    case NLE_PROTO_MISMATCH: return -EPROTONOSUPPORT;
    case NLE_NOACCESS: return -EACCES;
    case NLE_PERM: return -EPERM;
    case NLE_NODEV: return -ENODEV;
    default: return -EIO;
    }
}

/* ---- socket ------------------------------------------------------------ */

static int netns_name_ok(const char *s)
{
    size_t n = strnlen(s, 64);
    return n > 0 && n < 64 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int connect_here(struct nl_sock *sk, const char *where, char *err, size_t errlen)
{
    int rc = nl_connect(sk, NETLINK_ROUTE);
    if (rc < 0)
        return fail(err, errlen, nlsock_errno(rc), "netlink socket%s%s: %s", where[0] ? " in " : "",
                    where, nl_geterror(rc));
    return 0;
}

/* Runs fn(arg) with the calling thread inside netns and returns it to its
 * own namespace; failing to return would leave every later socket in the
 * wrong kernel, so that one case aborts. Sockets made by fn stay in netns
 * for their whole life. */
static int in_netns(const char *netns, int (*fn)(void *arg, char *err, size_t errlen), void *arg,
                    char *err, size_t errlen)
{
    if (!netns || !netns[0])
        return fn(arg, err, errlen);
    if (!netns_name_ok(netns))
        return fail(err, errlen, -EINVAL, "netns '%.64s': not a plain name", netns);
    char path[96];
    snprintf(path, sizeof(path), "/run/netns/%s", netns);
    int target = open(path, O_RDONLY | O_CLOEXEC);
    if (target < 0)
        return fail(err, errlen, -errno, "netns %s: %s", path, strerror(errno));
    int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (self < 0) {
        int e = errno;
        close(target);
        return fail(err, errlen, -e, "/proc/self/ns/net: %s", strerror(e));
    }
    int rc;
    if (setns(target, CLONE_NEWNET) < 0) {
        rc = fail(err, errlen, -errno, "setns into %s: %s", path, strerror(errno));
    } else {
        rc = fn(arg, err, errlen);
        if (setns(self, CLONE_NEWNET) < 0) {
            log_err("nlsock: cannot return from netns %s: %s", netns, strerror(errno));
            abort();
        }
    }
    close(target);
    close(self);
    return rc;
}

struct connect_arg {
    struct nl_sock *sk;
    const char *where;
};

static int connect_fn(void *p, char *err, size_t errlen)
{
    const struct connect_arg *a = p;
    return connect_here(a->sk, a->where, err, errlen);
}

static int connect_in(struct nl_sock *sk, const char *netns, char *err, size_t errlen)
{
    char where[96] = "";
    if (netns && netns[0])
        snprintf(where, sizeof(where), "/run/netns/%.64s", netns);
    struct connect_arg a = {sk, where};
    return in_netns(netns, connect_fn, &a, err, errlen);
}

int nlsock_open(const char *netns, struct nlsock **out, char *err, size_t errlen)
{
    struct nlsock *n = calloc(1, sizeof(*n));
    if (!n || !(n->tx = malloc(NLSOCK_BATCH + NLSOCK_MSG_MAX)) || !(n->sk = nl_socket_alloc())) {
        nlsock_close(n);
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    int rc = connect_in(n->sk, netns, err, errlen);
    if (rc) {
        nlsock_close(n);
        return rc;
    }
    /* Acks are asked for per message and collected by sequence number
     * here, not one at a time by libnl. */
    nl_socket_disable_auto_ack(n->sk);
    nl_socket_disable_msg_peek(n->sk);
    nl_socket_set_msg_buf_size(n->sk, NLSOCK_RX);
    /* Acks of a whole batch must fit the receive buffer. libnl sets the
     * plain sizes, which net.core.[rw]mem_max cap; the FORCE variants
     * (root) lift the caps. */
    int fd = nl_socket_get_fd(n->sk), one = 1, sz = NLSOCK_SOCKBUF;
    nl_socket_set_buffer_size(n->sk, sz, sz);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
    setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    *out = n;
    return 0;
}

void nlsock_close(struct nlsock *n)
{
    if (!n)
        return;
    if (n->sk)
        nl_socket_free(n->sk);
    free(n->tx);
    free(n);
}

/* ---- batches ------------------------------------------------------------ */

/* Completes msg on the socket (request flag, next sequence number), asks
 * for its ack and appends it to the batch buffer. */
static int batch_put(struct nlsock *n, struct nl_msg *msg, uint32_t *seq)
{
    struct nlmsghdr *h = nlmsg_hdr(msg);
    if (h->nlmsg_len > NLSOCK_MSG_MAX)   /* before a sequence number is used */
        return -EMSGSIZE;
    nl_complete_msg(n->sk, msg);
    h->nlmsg_flags |= NLM_F_ACK;
    size_t len = h->nlmsg_len, padded = NLMSG_ALIGN(len);
    memcpy(n->tx + n->txlen, h, len);
    memset(n->tx + n->txlen + len, 0, padded - len);
    n->txlen += padded;
    *seq = h->nlmsg_seq;
    return 0;
}

struct ack_ctx {
    uint32_t base;       /* sequence number of item 0 */
    size_t count, got, ok;
    bool del;
    long bad;            /* first failed item, or -1 */
    int bad_errno;
    char why[160];       /* the kernel's text for it */
};

static int ack_seq_cb(struct nl_msg *m, void *arg)
{
    const struct ack_ctx *c = arg;
    return nlmsg_hdr(m)->nlmsg_seq - c->base < c->count ? NL_OK : NL_SKIP;
}

static int ack_ok_cb(struct nl_msg *m, void *arg)
{
    (void)m;
    struct ack_ctx *c = arg;
    c->got++;
    c->ok++;
    return NL_OK;
}

/* The kernel's explanation from an extended ack, or "". */
static void ext_msg(struct nlmsghdr *h, char *out, size_t outlen)
{
    out[0] = '\0';
    if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
        return;
    const struct nlmsgerr *e = nlmsg_data(h);
    size_t off = NLMSG_LENGTH(sizeof(*e));   /* capped: no request echoed */
    if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
        if (e->msg.nlmsg_len < NLMSG_HDRLEN)
            return;
        off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
    }
    if (off >= h->nlmsg_len)
        return;
    struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
    if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)h + off),
                  (int)(h->nlmsg_len - off), NULL) < 0)
        return;
    const struct nlattr *a = tb[NLMSGERR_ATTR_MSG];
    if (a && nla_len(a) > 0 && memchr(nla_data(a), '\0', (size_t)nla_len(a)))
        tf_strlcpy(out, nla_data(a), outlen);
}

/* libnl 3.7 hands the error callback only the struct nlmsgerr; it is the
 * payload of the message in libnl's receive buffer, so the header (and
 * behind it the extended ack) sits right before it, as iw and
 * wpa_supplicant also use it. Benign errors (see nlsock.h) count as
 * success. */
static int ack_err_cb(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
    (void)who;
    struct ack_ctx *c = arg;
    struct nlmsghdr *h = (struct nlmsghdr *)e - 1;
    int er = -e->error;
    c->got++;
    if ((!c->del && er == EEXIST) || (c->del && (er == ENOENT || er == ESRCH))) {
        c->ok++;
    } else if (c->bad < 0) {
        c->bad = (long)(h->nlmsg_seq - c->base);
        c->bad_errno = er;
        ext_msg(h, c->why, sizeof(c->why));
    }
    return NL_SKIP;
}

static int send_batch(struct nlsock *n)
{
    int w;
    do
        w = nl_sendto(n->sk, n->tx, n->txlen);
    while (w == -NLE_INTR);
    size_t len = n->txlen;
    n->txlen = 0;
    if (w < 0)
        return nlsock_errno(w);
    return (size_t)w == len ? 0 : -EIO;
}

/* Sends the batch buffer (c->count requests) and waits for every ack. */
static int exchange(struct nlsock *n, struct ack_ctx *c)
{
    struct nl_cb *cb = nl_cb_alloc(NL_CB_CUSTOM);
    if (!cb)
        return -ENOMEM;
    nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, ack_seq_cb, c);
    nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_ok_cb, c);
    nl_cb_err(cb, NL_CB_CUSTOM, ack_err_cb, c);
    int rc = send_batch(n);
    while (!rc && c->got < c->count)
        rc = nlsock_errno(nl_recvmsgs(n->sk, cb));   /* acks lost: the caller re-reads */
    nl_cb_put(cb);
    return rc;
}

/* Fills the batch buffer from item *i on; the batch's first sequence
 * number goes to c->base. An item that cannot be built or is too large
 * stops the batch (those before it still go out) and is named in f. */
static int fill_batch(struct nlsock *n, size_t *i, size_t total, nlsock_build_fn build, void *arg,
                      struct ack_ctx *c, struct nlsock_fail *f)
{
    size_t first = *i;
    n->txlen = 0;
    while (*i < total && n->txlen < NLSOCK_BATCH) {
        struct nl_msg *msg = NULL;
        uint32_t seq = 0;
        int enc = build(arg, *i, &msg, f->why, sizeof(f->why));
        if (!enc && (enc = batch_put(n, msg, &seq)))
            fail(f->why, sizeof(f->why), enc, "request of %u bytes: %s", nlmsg_hdr(msg)->nlmsg_len,
                 strerror(-enc));
        nlmsg_free(msg);
        if (enc) {
            f->item = (long)*i;
            return enc;
        }
        if (*i == first)
            c->base = seq;
        (*i)++;
    }
    return 0;
}

int nlsock_run(struct nlsock *n, size_t total, bool del, nlsock_build_fn build, void *arg, size_t *done,
               size_t *round_trips, struct nlsock_fail *f)
{
    *f = (struct nlsock_fail){.item = -1};
    size_t i = 0;
    while (i < total) {
        size_t first = i;
        struct ack_ctx c = {.del = del, .bad = -1};
        int enc = fill_batch(n, &i, total, build, arg, &c, f);
        c.count = i - first;
        int rc = c.count ? exchange(n, &c) : 0;
        *done += c.ok;
        if (c.count)
            (*round_trips)++;
        if (rc) {   /* the batch's fate is unknown: no item to name */
            f->item = -1;
            return rc;
        }
        if (c.bad >= 0) {
            f->item = (long)(first + (size_t)c.bad);
            f->kernel = true;
            tf_strlcpy(f->why, c.why, sizeof(f->why));
            return -c.bad_errno;
        }
        if (enc)
            return enc;
    }
    return 0;
}

/* ---- dumps -------------------------------------------------------------- */

struct dump_ctx {
    nlsock_dump_fn fn;
    void *arg;
    uint32_t seq;
    bool done, intr;
    int kerr;            /* the kernel's error for the dump, -errno */
    int rc;              /* the first error of fn */
};

static int dump_seq_cb(struct nl_msg *m, void *arg)
{
    const struct dump_ctx *c = arg;
    return nlmsg_hdr(m)->nlmsg_seq == c->seq ? NL_OK : NL_SKIP;
}

/* Parsing goes on after an error of fn, so that the rest of the dump is
 * read off the socket. */
static int dump_valid_cb(struct nl_msg *m, void *arg)
{
    struct dump_ctx *c = arg;
    if (!c->rc && !c->done)
        c->rc = c->fn(c->arg, nlmsg_hdr(m));
    return NL_OK;
}

static int dump_intr_cb(struct nl_msg *m, void *arg)
{
    (void)m;
    ((struct dump_ctx *)arg)->intr = true;
    return NL_OK;
}

/* A dump that fails part way ends with NLMSG_DONE carrying the error. */
static int dump_done_cb(struct nl_msg *m, void *arg)
{
    struct dump_ctx *c = arg;
    struct nlmsghdr *h = nlmsg_hdr(m);
    int e;
    c->done = true;
    if (nlmsg_datalen(h) >= (int)sizeof(e)) {
        memcpy(&e, nlmsg_data(h), sizeof(e));
        if (e < 0 && !c->kerr)
            c->kerr = e;
    }
    return NL_OK;
}

static int dump_err_cb(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
    (void)who;
    struct dump_ctx *c = arg;
    c->done = true;
    if (!c->kerr)
        c->kerr = e->error < 0 ? e->error : -EIO;
    return NL_SKIP;
}

/* One dump; -EAGAIN when the kernel says it was interrupted by a change
 * (NLM_F_DUMP_INTR), so that the caller repeats it. */
static int dump_once(struct nlsock *n, int type, void *hdr, size_t hlen, nlsock_dump_fn fn, void *arg)
{
    struct dump_ctx c = {.fn = fn, .arg = arg};
    struct nl_msg *msg = nlmsg_alloc_simple(type, NLM_F_DUMP);
    struct nl_cb *cb = nl_cb_alloc(NL_CB_CUSTOM);
    int rc = msg && cb ? 0 : -ENOMEM;
    if (!rc)
        rc = nlsock_errno(nlmsg_append(msg, hdr, hlen, NLMSG_ALIGNTO));
    if (!rc) {
        nl_complete_msg(n->sk, msg);   /* no ack: auto-ack is off */
        c.seq = nlmsg_hdr(msg)->nlmsg_seq;
        nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, dump_seq_cb, &c);
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, dump_valid_cb, &c);
        nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, dump_intr_cb, &c);
        nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, dump_done_cb, &c);
        nl_cb_err(cb, NL_CB_CUSTOM, dump_err_cb, &c);
        rc = nlsock_errno(nl_send(n->sk, msg));
    }
    /* nl_recvmsgs reads on until NLMSG_DONE, but returns early when a
     * datagram held only stale messages of another sequence number. With
     * peeking, libnl grows its buffer for a datagram of any size. */
    nl_socket_enable_msg_peek(n->sk);
    while (!rc && !c.done)
        rc = nlsock_errno(nl_recvmsgs(n->sk, cb));
    nl_socket_disable_msg_peek(n->sk);
    nlmsg_free(msg);
    if (cb)
        nl_cb_put(cb);
    if (rc)
        return rc;
    if (c.kerr)
        return c.kerr;
    return c.intr ? -EAGAIN : c.rc;
}

int nlsock_dump(struct nlsock *n, int type, void *hdr, size_t hlen, nlsock_dump_fn fn, void *arg,
                void (*reset)(void *arg))
{
    int rc = -EAGAIN;
    for (int tries = 0; tries < 5 && rc == -EAGAIN; tries++) {
        reset(arg);
        rc = dump_once(n, type, hdr, hlen, fn, arg);
    }
    return rc;
}

/* ---- change notifications ------------------------------------------------- */

static int watch_fn(void *p, char *err, size_t errlen)
{
    int *out = p;
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (fd < 0)
        return fail(err, errlen, -errno, "netlink socket: %s", strerror(errno));
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
                             .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE};
    int sz = 1 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        close(fd);
        return fail(err, errlen, -e, "netlink bind to route and link groups: %s", strerror(e));
    }
    *out = fd;
    return 0;
}

int nlsock_watch_open(const char *netns, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    return in_netns(netns, watch_fn, fd, err, errlen);
}

int nlsock_watch_drain(int fd)
{
    char buf[16384];
    int n = 0;
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r > 0) {
            n++;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == ENOBUFS) {   /* overflow: something changed, we lost what */
            n++;
            continue;
        }
        if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
        return n;
    }
}
