/*
 * nlroute: see nlroute.h. FIB rules and routes built and parsed with libnl,
 * the batch-with-acks transport over a libnl socket, and the dump reader.
 *
 * Requests are libnl objects (rtnl_rule; rtnl_route with rtnl_nexthop)
 * turned into messages by rtnl_*_build_*_request. What libnl 3.7 cannot
 * express is added to the built message: the full-DSCP selector
 * (FRA_DSCP, nla_put_u8) and the any-scope of a route delete (patched in
 * the rtmsg, see build_route). Each message is completed on the socket
 * (request flag, the socket's next sequence number), gets NLM_F_ACK, and is
 * copied into one batch buffer of at most NLROUTE_BATCH bytes plus one
 * message (NLROUTE_MSG_MAX), which goes out in one nl_sendto. Items of a
 * batch therefore have consecutive sequence numbers: item i has base+i.
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
 * a libnl call returns, so every function here returns 0 or -errno.
 */
#include "controller/nlroute.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/nexthop.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>
#include <netlink/socket.h>

#include "common/log.h"
#include "common/util.h"
#include "controller/routing_view.h"

#ifndef FRA_DSCP
#define FRA_DSCP 25     /* kernel 6.13+; not in older uapi headers */
#endif
#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

#define NLROUTE_MSG_MAX 2048
/* libnl's receive buffer. Peeking at each datagram's size first would
 * double the recvmsg calls of a batch (one datagram per ack), so it is off
 * except during dumps; an ack always fits. */
#define NLROUTE_RX (32 * 1024)
#define NLROUTE_SOCKBUF (8 << 20)
/* Highest rule attribute read; FRA_DSCP is past FRA_MAX of older headers. */
#define NLR_FRA_MAX (FRA_DSCP > FRA_MAX ? FRA_DSCP : FRA_MAX)

struct link_ent {
    int index;
    bool up;             /* IFF_UP and IFF_RUNNING (carrier) */
    char name[IF_NAMESIZE];
};

struct nlroute {
    struct nl_sock *sk;
    char *tx;
    size_t txlen;
    struct link_ent *links;
    size_t nlinks;
};

#define fail tf_fail

/* A libnl result (>= 0 or -NLE_*) as 0 or -errno. */
static int nl_errno(int e)
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
        return fail(err, errlen, nl_errno(rc), "netlink socket%s%s: %s", where[0] ? " in " : "",
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
            log_err("nlroute: cannot return from netns %s: %s", netns, strerror(errno));
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

int nlroute_open(const char *netns, struct nlroute **out, char *err, size_t errlen)
{
    struct nlroute *n = calloc(1, sizeof(*n));
    if (!n || !(n->tx = malloc(NLROUTE_BATCH + NLROUTE_MSG_MAX)) || !(n->sk = nl_socket_alloc())) {
        nlroute_close(n);
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    int rc = connect_in(n->sk, netns, err, errlen);
    if (rc) {
        nlroute_close(n);
        return rc;
    }
    /* Acks are asked for per message and collected by sequence number
     * here, not one at a time by libnl. */
    nl_socket_disable_auto_ack(n->sk);
    nl_socket_disable_msg_peek(n->sk);
    nl_socket_set_msg_buf_size(n->sk, NLROUTE_RX);
    /* Acks of a whole batch must fit the receive buffer. libnl sets the
     * plain sizes, which net.core.[rw]mem_max cap; the FORCE variants
     * (root) lift the caps. */
    int fd = nl_socket_get_fd(n->sk), one = 1, sz = NLROUTE_SOCKBUF;
    nl_socket_set_buffer_size(n->sk, sz, sz);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
    setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    *out = n;
    return 0;
}

void nlroute_close(struct nlroute *n)
{
    if (!n)
        return;
    if (n->sk)
        nl_socket_free(n->sk);
    free(n->tx);
    free(n->links);
    free(n);
}

/* ---- message building ------------------------------------------------- */

static int family(uint8_t af) { return af == 6 ? AF_INET6 : AF_INET; }
static size_t alen(uint8_t af) { return af == 6 ? 16 : 4; }

/* libnl result codes from here to the end of build_*. */
static int addr_new(uint8_t af, const uint8_t *a, unsigned plen, struct nl_addr **out)
{
    struct nl_addr *x = nl_addr_build(family(af), a, alen(af));
    if (!x)
        return -NLE_NOMEM;
    nl_addr_set_prefixlen(x, (int)plen);
    *out = x;
    return 0;
}

static int build_rule(const struct plan_rule *r, bool add, uint8_t proto, struct nl_msg **out)
{
    struct rtnl_rule *rl = rtnl_rule_alloc();
    struct nl_addr *src = NULL, *dst = NULL;
    int rc = rl ? 0 : -NLE_NOMEM;
    if (!rc) {
        rtnl_rule_set_family(rl, family(r->af));
        rtnl_rule_set_prio(rl, r->prio);
        rtnl_rule_set_table(rl, r->table);
        rtnl_rule_set_action(rl, FR_ACT_TO_TBL);
        rc = rtnl_rule_set_protocol(rl, proto);
    }
    if (!rc && r->src_len && !(rc = addr_new(r->af, r->src, r->src_len, &src)))
        rc = rtnl_rule_set_src(rl, src);
    if (!rc && r->dst_len && !(rc = addr_new(r->af, r->dst, r->dst_len, &dst)))
        rc = rtnl_rule_set_dst(rl, dst);
    if (!rc && r->ipproto)
        rc = rtnl_rule_set_ipproto(rl, r->ipproto);
    if (!rc && r->sport)
        rc = rtnl_rule_set_sport(rl, r->sport);
    if (!rc && r->dport)
        rc = rtnl_rule_set_dport(rl, r->dport);
    if (!rc && r->fwmark) {
        rtnl_rule_set_mark(rl, r->fwmark);
        rtnl_rule_set_mask(rl, r->fwmask ? r->fwmask : 0xffffffffu);
    }
    if (!rc)
        rc = add ? rtnl_rule_build_add_request(rl, NLM_F_EXCL, out)
                 : rtnl_rule_build_delete_request(rl, 0, out);
    /* libnl 3.7 has no setter for the full-DSCP selector. */
    if (!rc && r->dscp >= 0 && (rc = nla_put_u8(*out, FRA_DSCP, (uint8_t)r->dscp)) < 0) {
        nlmsg_free(*out);
        *out = NULL;
    }
    nl_addr_put(src);
    nl_addr_put(dst);
    rtnl_rule_put(rl);
    return rc;
}

static int add_nexthop(struct rtnl_route *rt, const struct plan_nh *p, int ifindex)
{
    struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
    if (!nh)
        return -NLE_NOMEM;
    rtnl_route_nh_set_weight(nh, (uint8_t)(p->weight - 1));  /* kernel stores weight-1 */
    if (ifindex)
        rtnl_route_nh_set_ifindex(nh, ifindex);
    if (p->af) {
        struct nl_addr *gw;
        int rc = addr_new(p->af, p->via, (unsigned)alen(p->af) * 8, &gw);
        if (rc) {
            rtnl_route_nh_free(nh);
            return rc;
        }
        rtnl_route_nh_set_gateway(nh, gw);   /* takes its own reference */
        nl_addr_put(gw);
    }
    rtnl_route_add_nexthop(rt, nh);          /* the route owns it now */
    return 0;
}

static int build_route(const struct plan_route *r, bool add, uint8_t proto, const int *ifx,
                       struct nl_msg **out)
{
    struct rtnl_route *rt = rtnl_route_alloc();
    struct nl_addr *dst = NULL;
    int rc = rt ? 0 : -NLE_NOMEM;
    if (!rc)
        rc = rtnl_route_set_family(rt, (uint8_t)family(r->af));
    if (!rc && !(rc = addr_new(r->af, r->dst, r->dst_len, &dst)))
        rc = rtnl_route_set_dst(rt, dst);
    if (!rc) {
        rtnl_route_set_table(rt, r->table);
        rtnl_route_set_protocol(rt, proto);
        rc = rtnl_route_set_type(rt, RTN_UNICAST);
    }
    for (int i = 0; !rc && add && i < r->nnh; i++)
        rc = add_nexthop(rt, &r->nh[i], ifx[i]);
    if (!rc && add) {
        rtnl_route_set_scope(rt, RT_SCOPE_UNIVERSE);
        rc = rtnl_route_build_add_request(rt, NLM_F_REPLACE, out);
    } else if (!rc) {
        rc = rtnl_route_build_del_request(rt, 0, out);
        /* libnl turns RT_SCOPE_NOWHERE into a guess (link scope, for a
         * route without next hops), which would not match our gateway
         * routes; in a delete the kernel reads NOWHERE as any scope, and
         * the protocol keeps it to our routes. */
        if (!rc) {
            struct rtmsg *rtm = nlmsg_data(nlmsg_hdr(*out));
            rtm->rtm_scope = RT_SCOPE_NOWHERE;
        }
    }
    nl_addr_put(dst);
    rtnl_route_put(rt);
    return rc;
}

static int link_index(const struct nlroute *n, const char *name)
{
    for (size_t i = 0; i < n->nlinks; i++)
        if (!strcmp(n->links[i].name, name))
            return n->links[i].index;
    return 0;
}

static const char *link_name(const struct nlroute *n, int index)
{
    for (size_t i = 0; i < n->nlinks; i++)
        if (n->links[i].index == index)
            return n->links[i].name;
    return "";
}

/* Builds the request for item i of p; why says what went wrong. */
static int build_item(const struct nlroute *n, const struct plan *p, size_t i, bool rules,
                      bool add, uint8_t proto, struct nl_msg **out, char *why, size_t whylen)
{
    int rc;
    if (rules) {
        rc = build_rule(&p->rules[i], add, proto, out);
    } else {
        const struct plan_route *r = &p->routes[i];
        int ifx[PLAN_MAX_NH] = {0};
        for (int k = 0; add && k < r->nnh; k++)
            if (r->nh[k].dev[0] && !(ifx[k] = link_index(n, r->nh[k].dev)))
                return fail(why, whylen, -ENODEV, "interface %s not found", r->nh[k].dev);
        rc = build_route(r, add, proto, ifx, out);
    }
    if (rc < 0)
        return fail(why, whylen, nl_errno(rc), "building the request: %s", nl_geterror(rc));
    return 0;
}

/* Completes msg on the socket (request flag, next sequence number), asks
 * for its ack and appends it to the batch buffer. */
static int batch_put(struct nlroute *n, struct nl_msg *msg, uint32_t *seq)
{
    struct nlmsghdr *h = nlmsg_hdr(msg);
    if (h->nlmsg_len > NLROUTE_MSG_MAX)   /* before a sequence number is used */
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

/* ---- transport ---------------------------------------------------------- */

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
 * wpa_supplicant also use it. Benign errors (see nlroute.h) count as
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

static int send_batch(struct nlroute *n)
{
    int w;
    do
        w = nl_sendto(n->sk, n->tx, n->txlen);
    while (w == -NLE_INTR);
    size_t len = n->txlen;
    n->txlen = 0;
    if (w < 0)
        return nl_errno(w);
    return (size_t)w == len ? 0 : -EIO;
}

/* Sends the batch buffer (c->count requests) and waits for every ack. */
static int exchange(struct nlroute *n, struct ack_ctx *c)
{
    struct nl_cb *cb = nl_cb_alloc(NL_CB_CUSTOM);
    if (!cb)
        return -ENOMEM;
    nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, ack_seq_cb, c);
    nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, ack_ok_cb, c);
    nl_cb_err(cb, NL_CB_CUSTOM, ack_err_cb, c);
    int rc = send_batch(n);
    while (!rc && c->got < c->count)
        rc = nl_errno(nl_recvmsgs(n->sk, cb));   /* acks lost: the caller re-reads */
    nl_cb_put(cb);
    return rc;
}

static void rule_desc(const struct plan_rule *r, char *buf, size_t len)
{
    char s[320];
    snprintf(buf, len, "rule %s", plan_rule_str(r, s, sizeof(s)));
}

static void route_desc(const struct plan_route *r, char *buf, size_t len)
{
    char d[64];
    snprintf(buf, len, "route %s/%u table %u", tf_addr_str(r->af, r->dst, d, sizeof(d)),
             r->dst_len, r->table);
}

static void item_desc(const struct plan *p, bool rules, size_t k, char *buf, size_t len)
{
    if (rules)
        rule_desc(&p->rules[k], buf, len);
    else
        route_desc(&p->routes[k], buf, len);
}

static int refresh_links(struct nlroute *n, char *err, size_t errlen);

int nlroute_run(struct nlroute *n, enum nlroute_op op, const struct plan *p, uint8_t proto,
                size_t *done, size_t *round_trips, char *err, size_t errlen)
{
    bool rules = op == NLROUTE_RULE_ADD || op == NLROUTE_RULE_DEL;
    bool add = op == NLROUTE_RULE_ADD || op == NLROUTE_ROUTE_REPLACE;
    size_t total = rules ? p->nrules : p->nroutes;
    if (!total)
        return 0;
    if (!rules && add) {
        int rc = refresh_links(n, err, errlen);
        if (rc)
            return rc;
    }
    size_t i = 0;
    while (i < total) {
        size_t first = i;
        struct ack_ctx c = {.del = !add, .bad = -1};
        int enc = 0;
        char encerr[160] = "", desc[200];
        n->txlen = 0;
        while (i < total && n->txlen < NLROUTE_BATCH) {
            struct nl_msg *msg = NULL;
            uint32_t seq = 0;
            enc = build_item(n, p, i, rules, add, proto, &msg, encerr, sizeof(encerr));
            if (!enc && (enc = batch_put(n, msg, &seq)))
                fail(encerr, sizeof(encerr), enc, "request of %u bytes: %s",
                     nlmsg_hdr(msg)->nlmsg_len, strerror(-enc));
            nlmsg_free(msg);
            if (enc)
                break;
            if (i == first)
                c.base = seq;
            i++;
        }
        c.count = i - first;
        int rc = c.count ? exchange(n, &c) : 0;
        *done += c.ok;
        if (c.count)
            (*round_trips)++;
        if (rc)
            return fail(err, errlen, rc, "netlink batch: %s", strerror(-rc));
        if (c.bad >= 0) {
            item_desc(p, rules, first + (size_t)c.bad, desc, sizeof(desc));
            return fail(err, errlen, -c.bad_errno, "%s %s: %s%s%s", add ? "adding" : "deleting",
                        desc, strerror(c.bad_errno), c.why[0] ? ": " : "", c.why);
        }
        if (enc) {
            item_desc(p, rules, i, desc, sizeof(desc));
            return fail(err, errlen, enc, "%s %s: %s", add ? "adding" : "deleting", desc, encerr);
        }
    }
    return 0;
}

/* ---- dumps ---------------------------------------------------------------- */

typedef int (*dump_fn)(struct nlroute *n, struct nlmsghdr *h, void *arg);

struct dump_ctx {
    struct nlroute *n;
    dump_fn fn;
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
        c->rc = c->fn(c->n, nlmsg_hdr(m), c->arg);
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
static int dump_once(struct nlroute *n, int type, void *hdr, size_t hlen, dump_fn fn, void *arg)
{
    struct dump_ctx c = {.n = n, .fn = fn, .arg = arg};
    struct nl_msg *msg = nlmsg_alloc_simple(type, NLM_F_DUMP);
    struct nl_cb *cb = nl_cb_alloc(NL_CB_CUSTOM);
    int rc = msg && cb ? 0 : -ENOMEM;
    if (!rc)
        rc = nl_errno(nlmsg_append(msg, hdr, hlen, NLMSG_ALIGNTO));
    if (!rc) {
        nl_complete_msg(n->sk, msg);   /* no ack: auto-ack is off */
        c.seq = nlmsg_hdr(msg)->nlmsg_seq;
        nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, dump_seq_cb, &c);
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, dump_valid_cb, &c);
        nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, dump_intr_cb, &c);
        nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, dump_done_cb, &c);
        nl_cb_err(cb, NL_CB_CUSTOM, dump_err_cb, &c);
        rc = nl_errno(nl_send(n->sk, msg));
    }
    /* nl_recvmsgs reads on until NLMSG_DONE, but returns early when a
     * datagram held only stale messages of another sequence number. With
     * peeking, libnl grows its buffer for a datagram of any size. */
    nl_socket_enable_msg_peek(n->sk);
    while (!rc && !c.done)
        rc = nl_errno(nl_recvmsgs(n->sk, cb));
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

static int dump(struct nlroute *n, int type, void *hdr, size_t hlen, dump_fn fn, void *arg,
                void (*reset)(void *arg))
{
    int rc = -EAGAIN;
    for (int tries = 0; tries < 5 && rc == -EAGAIN; tries++) {
        reset(arg);
        rc = dump_once(n, type, hdr, hlen, fn, arg);
    }
    return rc;
}

static bool get_addr(const struct nlattr *a, uint8_t af, uint8_t out[16])
{
    if (!a || (size_t)nla_len(a) != alen(af))
        return false;
    memcpy(out, nla_data(a), alen(af));
    return true;
}

static uint16_t get_port(const struct nlattr *a)
{
    struct fib_rule_port_range pr;
    if (!a)
        return 0;
    memcpy(&pr, nla_data(a), sizeof(pr));   /* length checked by the policy */
    return pr.start;   /* ours are single ports; a range reads as its start */
}

/* Lengths of the fixed-size attributes read back; a message that breaks
 * them is not one of ours and is skipped whole. */
static struct nla_policy rule_policy[NLR_FRA_MAX + 1] = {
    [FRA_PRIORITY] = {.type = NLA_U32},
    [FRA_TABLE] = {.type = NLA_U32},
    [FRA_PROTOCOL] = {.type = NLA_U8},
    [FRA_IP_PROTO] = {.type = NLA_U8},
    [FRA_FWMARK] = {.type = NLA_U32},
    [FRA_FWMASK] = {.type = NLA_U32},
    [FRA_DSCP] = {.type = NLA_U8},
    [FRA_SPORT_RANGE] = {.minlen = sizeof(struct fib_rule_port_range)},
    [FRA_DPORT_RANGE] = {.minlen = sizeof(struct fib_rule_port_range)},
};

static struct nla_policy route_policy[RTA_TABLE + 1] = {
    [RTA_OIF] = {.type = NLA_U32},
    [RTA_TABLE] = {.type = NLA_U32},
};

static struct nla_policy link_policy[IFLA_IFNAME + 1] = {
    [IFLA_IFNAME] = {.type = NLA_STRING, .maxlen = IF_NAMESIZE},
};

struct read_ctx {
    const struct nlroute_own *own;
    const char *sw;
    struct plan *out;
    size_t base_rules, base_routes;
};

static void read_reset(void *p)
{
    struct read_ctx *c = p;
    c->out->nrules = c->base_rules;
    c->out->nroutes = c->base_routes;
}

int nlroute_rule_parse(const struct nlmsghdr *h, struct plan_rule *r, uint8_t *proto)
{
    struct nlattr *tb[NLR_FRA_MAX + 1];
    if (h->nlmsg_type != RTM_NEWRULE ||
        nlmsg_parse((struct nlmsghdr *)h, sizeof(struct fib_rule_hdr), tb, NLR_FRA_MAX, rule_policy) < 0)
        return -EINVAL;
    const struct fib_rule_hdr *frh = nlmsg_data(h);
    if ((frh->family != AF_INET && frh->family != AF_INET6) || frh->action != FR_ACT_TO_TBL)
        return -EINVAL;
    *r = (struct plan_rule){.af = frh->family == AF_INET6 ? 6 : 4, .dscp = -1,
                            .src_len = frh->src_len, .dst_len = frh->dst_len, .table = frh->table};
    *proto = tb[FRA_PROTOCOL] ? nla_get_u8(tb[FRA_PROTOCOL]) : 0;
    if (tb[FRA_PRIORITY])
        r->prio = nla_get_u32(tb[FRA_PRIORITY]);
    if (tb[FRA_TABLE])
        r->table = nla_get_u32(tb[FRA_TABLE]);
    if ((r->src_len && !get_addr(tb[FRA_SRC], r->af, r->src)) ||
        (r->dst_len && !get_addr(tb[FRA_DST], r->af, r->dst)))
        return -EINVAL;
    if (tb[FRA_IP_PROTO])
        r->ipproto = nla_get_u8(tb[FRA_IP_PROTO]);
    r->sport = get_port(tb[FRA_SPORT_RANGE]);
    r->dport = get_port(tb[FRA_DPORT_RANGE]);
    if (tb[FRA_FWMARK])
        r->fwmark = nla_get_u32(tb[FRA_FWMARK]);
    if (tb[FRA_FWMASK])
        r->fwmask = nla_get_u32(tb[FRA_FWMASK]);
    if (r->fwmask == 0xffffffffu || !r->fwmark)
        r->fwmask = 0;   /* canonical: 0 = exact mark */
    if (tb[FRA_DSCP])
        r->dscp = nla_get_u8(tb[FRA_DSCP]);
    else if (frh->tos)
        r->dscp = frh->tos >> 2;
    return 0;
}

static int rule_cb(struct nlroute *n, struct nlmsghdr *h, void *p)
{
    (void)n;
    struct read_ctx *c = p;
    struct plan_rule r;
    uint8_t proto;
    if (nlroute_rule_parse(h, &r, &proto) < 0)
        return 0;
    /* Ownership: priority range AND protocol AND one of our tables. */
    if (r.prio < c->own->prio_min || r.prio > c->own->prio_max || proto != c->own->proto ||
        r.table < c->own->table_min || r.table > c->own->table_max)
        return 0;
    tf_strlcpy(r.sw, c->sw, sizeof(r.sw));
    return plan_add_rule(c->out, &r) == -ENOMEM ? -ENOMEM : 0;
}

static void route_nh(const struct nlroute *n, const struct plan_route *r, const struct nlattr *gw,
                     int ifindex, struct plan_nh *nh)
{
    memset(nh, 0, sizeof(*nh));
    if (get_addr(gw, r->af, nh->via))
        nh->af = r->af;
    tf_strlcpy(nh->dev, ifindex ? link_name(n, ifindex) : "", sizeof(nh->dev));
    nh->weight = 1;
}

static int route_cb(struct nlroute *n, struct nlmsghdr *h, void *p)
{
    struct read_ctx *c = p;
    struct nlattr *tb[RTA_TABLE + 1];
    if (h->nlmsg_type != RTM_NEWROUTE ||
        nlmsg_parse(h, sizeof(struct rtmsg), tb, RTA_TABLE, route_policy) < 0)
        return 0;
    const struct rtmsg *rtm = nlmsg_data(h);
    if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) ||
        rtm->rtm_protocol != c->own->proto || rtm->rtm_type != RTN_UNICAST ||
        (rtm->rtm_flags & RTM_F_CLONED))
        return 0;
    struct plan_route r = {.af = rtm->rtm_family == AF_INET6 ? 6 : 4,
                           .dst_len = rtm->rtm_dst_len, .table = rtm->rtm_table};
    if (tb[RTA_TABLE])
        r.table = nla_get_u32(tb[RTA_TABLE]);
    if (r.table < c->own->table_min || r.table > c->own->table_max)
        return 0;
    if (r.dst_len && !get_addr(tb[RTA_DST], r.af, r.dst))
        return 0;
    const struct nlattr *mp = tb[RTA_MULTIPATH];
    if (mp) {
        /* libnl has no iterator for struct rtnexthop. RTNH_OK reads
         * rtnh_len before it checks what is left, so that goes first:
         * libnl's copy of the message ends where the attribute does. */
        const struct rtnexthop *nh = nla_data(mp);
        int left = nla_len(mp);
        while (left >= (int)sizeof(*nh) && RTNH_OK(nh, left) && r.nnh < PLAN_MAX_NH) {
            struct nlattr *ntb[RTA_GATEWAY + 1];
            if (nla_parse(ntb, RTA_GATEWAY, (struct nlattr *)RTNH_DATA(nh),
                          nh->rtnh_len - RTNH_LENGTH(0), NULL) < 0)
                return 0;
            route_nh(n, &r, ntb[RTA_GATEWAY], nh->rtnh_ifindex, &r.nh[r.nnh]);
            r.nh[r.nnh++].weight = (uint16_t)(nh->rtnh_hops + 1);
            left -= RTNH_ALIGN(nh->rtnh_len);
            nh = RTNH_NEXT(nh);
        }
    } else {
        int oif = tb[RTA_OIF] ? (int)nla_get_u32(tb[RTA_OIF]) : 0;
        route_nh(n, &r, tb[RTA_GATEWAY], oif, &r.nh[0]);
        r.nnh = 1;
    }
    tf_strlcpy(r.sw, c->sw, sizeof(r.sw));
    return plan_add_route(c->out, &r) == -ENOMEM ? -ENOMEM : 0;
}

static void links_reset(void *p)
{
    ((struct nlroute *)p)->nlinks = 0;
}

static int link_cb(struct nlroute *n, struct nlmsghdr *h, void *p)
{
    (void)p;
    struct nlattr *tb[IFLA_IFNAME + 1];
    if (h->nlmsg_type != RTM_NEWLINK ||
        nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_IFNAME, link_policy) < 0 ||
        !tb[IFLA_IFNAME])
        return 0;
    const struct ifinfomsg *ifi = nlmsg_data(h);
    if (n->nlinks % 64 == 0) {
        struct link_ent *v = realloc(n->links, (n->nlinks + 64) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        n->links = v;
    }
    n->links[n->nlinks].index = ifi->ifi_index;
    n->links[n->nlinks].up = (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING);
    tf_strlcpy(n->links[n->nlinks].name, nla_get_string(tb[IFLA_IFNAME]), IF_NAMESIZE);
    n->nlinks++;
    return 0;
}

static int refresh_links(struct nlroute *n, char *err, size_t errlen)
{
    struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
    int rc = dump(n, RTM_GETLINK, &ifi, sizeof(ifi), link_cb, n, links_reset);
    if (rc == -EAGAIN || rc == 0)
        return 0;
    return fail(err, errlen, rc, "listing interfaces: %s", strerror(-rc));
}

int nlroute_read(struct nlroute *n, const struct nlroute_own *own, const char *sw,
                 struct plan *out, char *err, size_t errlen)
{
    int rc = refresh_links(n, err, errlen);
    if (rc)
        return rc;
    struct read_ctx c = {own, sw, out, out->nrules, out->nroutes};
    struct fib_rule_hdr frh = {.family = AF_UNSPEC};
    struct rtmsg rtm = {.rtm_family = AF_UNSPEC};
    rc = dump(n, RTM_GETRULE, &frh, sizeof(frh), rule_cb, &c, read_reset);
    if (rc)
        return fail(err, errlen, rc, "reading rules of switch %s: %s", sw, strerror(-rc));
    c.base_rules = out->nrules;   /* the route dump's retries keep the rules */
    rc = dump(n, RTM_GETROUTE, &rtm, sizeof(rtm), route_cb, &c, read_reset);
    if (rc)
        return fail(err, errlen, rc, "reading routes of switch %s: %s", sw, strerror(-rc));
    return 0;
}

/* ---- the routing view ----------------------------------------------------- */

/* Up to RTA_NH_ID (30), which older uapi headers may lack. */
#define NLR_RTA_NH_ID 30
#define NLR_RTA_MAX (NLR_RTA_NH_ID > RTA_MAX ? NLR_RTA_NH_ID : RTA_MAX)
static struct nla_policy view_policy[NLR_RTA_MAX + 1] = {
    [RTA_OIF] = {.type = NLA_U32},
    [RTA_TABLE] = {.type = NLA_U32},
    [NLR_RTA_NH_ID] = {.type = NLA_U32},
};

struct view_ctx {
    uint32_t table;
    uint8_t own_proto;
    struct routing_view *v;
};

static void view_reset(void *p)
{
    struct view_ctx *c = p;
    c->v->rt.nroutes = 0;
    c->v->nh_objects = false;
}

/* A next hop as routing uses it: gateway of the route's family, else (an
 * IPv6 gateway for IPv4, BGP unnumbered: RTA_VIA) only the interface. */
static void view_nh(const struct nlroute *n, const struct plan_route *r, struct nlattr **ntb, int ifindex,
                    struct plan_nh *nh)
{
    route_nh(n, r, ntb[RTA_GATEWAY], ifindex, nh);
    if (!ntb[RTA_GATEWAY] && ntb[RTA_VIA])
        nh->af = 0;   /* matched by interface alone (routing_view.c) */
}

static int view_route_cb(struct nlroute *n, struct nlmsghdr *h, void *p)
{
    struct view_ctx *c = p;
    struct nlattr *tb[NLR_RTA_MAX + 1];
    if (h->nlmsg_type != RTM_NEWROUTE || nlmsg_parse(h, sizeof(struct rtmsg), tb, NLR_RTA_MAX, view_policy) < 0)
        return 0;
    const struct rtmsg *rtm = nlmsg_data(h);
    uint32_t table = tb[RTA_TABLE] ? nla_get_u32(tb[RTA_TABLE]) : rtm->rtm_table;
    if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) || table != c->table ||
        rtm->rtm_protocol == c->own_proto || (rtm->rtm_flags & RTM_F_CLONED))
        return 0;
    bool nothing = rtm->rtm_type == RTN_BLACKHOLE || rtm->rtm_type == RTN_UNREACHABLE ||
                   rtm->rtm_type == RTN_PROHIBIT;
    if (rtm->rtm_type != RTN_UNICAST && !nothing)
        return 0;
    struct plan_route r = {.af = rtm->rtm_family == AF_INET6 ? 6 : 4, .dst_len = rtm->rtm_dst_len,
                           .table = table};
    if (r.dst_len && !get_addr(tb[RTA_DST], r.af, r.dst))
        return 0;
    if (tb[NLR_RTA_NH_ID] && !nothing) {
        /* Next-hop objects: the gateways are not in the route. */
        c->v->nh_objects = true;
        return 0;
    }
    const struct nlattr *mp = tb[RTA_MULTIPATH];
    const unsigned dead = RTNH_F_DEAD | RTNH_F_LINKDOWN;
    if (nothing) {
        r.nnh = 0;
    } else if (mp) {
        const struct rtnexthop *nh = nla_data(mp);
        int left = nla_len(mp);
        while (left >= (int)sizeof(*nh) && RTNH_OK(nh, left) && r.nnh < PLAN_MAX_NH) {
            struct nlattr *ntb[RTA_MAX + 1];
            if (nla_parse(ntb, RTA_MAX, (struct nlattr *)RTNH_DATA(nh), nh->rtnh_len - RTNH_LENGTH(0), NULL) < 0)
                return 0;
            if (!(nh->rtnh_flags & dead))
                view_nh(n, &r, ntb, nh->rtnh_ifindex, &r.nh[r.nnh++]);
            left -= RTNH_ALIGN(nh->rtnh_len);
            nh = RTNH_NEXT(nh);
        }
    } else if (!(rtm->rtm_flags & dead)) {
        int oif = tb[RTA_OIF] ? (int)nla_get_u32(tb[RTA_OIF]) : 0;
        view_nh(n, &r, tb, oif, &r.nh[0]);
        r.nnh = 1;
    }
    return routing_view_add_route(c->v, &r) == -ENOMEM ? -ENOMEM : 0;
}

int nlroute_read_view(struct nlroute *n, uint32_t table, uint8_t own_proto, struct routing_view *v, char *err,
                      size_t errlen)
{
    routing_view_clear(v);
    int rc = refresh_links(n, err, errlen);
    for (size_t i = 0; !rc && i < n->nlinks; i++)
        rc = routing_view_add_link(v, n->links[i].name, n->links[i].up);
    if (rc)
        return rc;
    struct view_ctx c = {table, own_proto, v};
    struct rtmsg rtm = {.rtm_family = AF_UNSPEC};
    rc = dump(n, RTM_GETROUTE, &rtm, sizeof(rtm), view_route_cb, &c, view_reset);
    if (rc)
        return fail(err, errlen, rc, "reading routing table %u: %s", table, strerror(-rc));
    return 0;
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

int nlroute_watch_open(const char *netns, int *fd, char *err, size_t errlen)
{
    *fd = -1;
    return in_netns(netns, watch_fn, fd, err, errlen);
}

int nlroute_watch_drain(int fd)
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
