/*
 * nlroute: see nlroute.h. Encoding and decoding of FIB rules and routes,
 * the batch-with-acks transport and the dump reader.
 *
 * The request buffer holds at most NLROUTE_BATCH bytes plus one message
 * (NLROUTE_MSG_MAX), so message pointers never move while being built.
 * Acks are matched by sequence number: batch item i has seq base+i. Each
 * error ack is capped (NETLINK_CAP_ACK) and carries the kernel's text
 * (NETLINK_EXT_ACK), which goes into the error message with the item.
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

#include "common/log.h"
#include "common/util.h"

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
#define NLROUTE_RX (256 * 1024)
#define NLROUTE_SOCKBUF (8 << 20)

struct link_ent {
    int index;
    char name[IF_NAMESIZE];
};

struct nlroute {
    int fd;
    uint32_t seq;
    char *tx, *rx;
    size_t txlen;
    struct link_ent *links;
    size_t nlinks;
};

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ---- socket ------------------------------------------------------------ */

static int netns_name_ok(const char *s)
{
    size_t n = strnlen(s, 64);
    return n > 0 && n < 64 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* Creates the socket inside netns and returns the thread to its own
 * namespace; failing to return would leave every later socket in the wrong
 * kernel, so that one case aborts. */
static int socket_in(const char *netns, char *err, size_t errlen)
{
    if (!netns || !netns[0])
        return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
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
    int fd;
    if (setns(target, CLONE_NEWNET) < 0) {
        fd = fail(err, errlen, -errno, "setns into %s: %s", path, strerror(errno));
    } else {
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
            fd = fail(err, errlen, -errno, "netlink socket in %s: %s", path, strerror(errno));
        if (setns(self, CLONE_NEWNET) < 0) {
            log_err("nlroute: cannot return from netns %s: %s", netns, strerror(errno));
            abort();
        }
    }
    close(target);
    close(self);
    return fd;
}

int nlroute_open(const char *netns, struct nlroute **out, char *err, size_t errlen)
{
    struct nlroute *n = calloc(1, sizeof(*n));
    if (!n || !(n->tx = malloc(NLROUTE_BATCH + NLROUTE_MSG_MAX)) || !(n->rx = malloc(NLROUTE_RX))) {
        if (n) {
            free(n->tx);
            free(n);
        }
        return fail(err, errlen, -ENOMEM, "out of memory");
    }
    n->fd = socket_in(netns, err, errlen);
    if (n->fd < 0) {
        int rc = n->fd;
        if (err && errlen && !err[0])
            fail(err, errlen, rc, "netlink socket: %s", strerror(-rc));
        n->fd = -1;
        nlroute_close(n);
        return rc;
    }
    int one = 1, sz = NLROUTE_SOCKBUF;
    /* The FORCE variants (root) lift the sysctl caps; the plain ones are
     * the fallback. Acks of a whole batch must fit the receive buffer. */
    if (setsockopt(n->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)) < 0)
        setsockopt(n->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    if (setsockopt(n->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
        setsockopt(n->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    setsockopt(n->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
    setsockopt(n->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (bind(n->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int rc = fail(err, errlen, -errno, "netlink bind: %s", strerror(errno));
        nlroute_close(n);
        return rc;
    }
    n->seq = (uint32_t)getpid() << 12;
    *out = n;
    return 0;
}

void nlroute_close(struct nlroute *n)
{
    if (!n)
        return;
    if (n->fd >= 0)
        close(n->fd);
    free(n->tx);
    free(n->rx);
    free(n->links);
    free(n);
}

/* ---- message building ------------------------------------------------- */

static struct nlmsghdr *msg_start(struct nlroute *n, uint16_t type, uint16_t flags,
                                  const void *hdr, size_t hlen)
{
    struct nlmsghdr *h = (struct nlmsghdr *)(n->tx + n->txlen);
    memset(h, 0, NLMSG_LENGTH(hlen));
    h->nlmsg_len = NLMSG_LENGTH(hlen);
    h->nlmsg_type = type;
    h->nlmsg_flags = NLM_F_REQUEST | flags;
    h->nlmsg_seq = n->seq++;
    memcpy(NLMSG_DATA(h), hdr, hlen);
    return h;
}

static void msg_end(struct nlroute *n, struct nlmsghdr *h)
{
    n->txlen += NLMSG_ALIGN(h->nlmsg_len);
}

static struct rtattr *attr_put(struct nlmsghdr *h, uint16_t type, const void *data, size_t len)
{
    struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
    a->rta_type = type;
    a->rta_len = (unsigned short)RTA_LENGTH(len);
    if (len)
        memcpy(RTA_DATA(a), data, len);
    h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
    return a;
}

static void attr_u32(struct nlmsghdr *h, uint16_t type, uint32_t v) { attr_put(h, type, &v, 4); }
static void attr_u8(struct nlmsghdr *h, uint16_t type, uint8_t v) { attr_put(h, type, &v, 1); }

static int family(uint8_t af) { return af == 6 ? AF_INET6 : AF_INET; }
static size_t alen(uint8_t af) { return af == 6 ? 16 : 4; }

static void encode_rule(struct nlroute *n, const struct plan_rule *r, bool add, uint8_t proto)
{
    struct fib_rule_hdr frh = {.family = (uint8_t)family(r->af), .dst_len = r->dst_len,
                               .src_len = r->src_len, .action = FR_ACT_TO_TBL,
                               .table = r->table < 256 ? (uint8_t)r->table : RT_TABLE_UNSPEC};
    struct nlmsghdr *h = msg_start(n, add ? RTM_NEWRULE : RTM_DELRULE,
                                   NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_EXCL : 0),
                                   &frh, sizeof(frh));
    attr_u32(h, FRA_PRIORITY, r->prio);
    attr_u32(h, FRA_TABLE, r->table);
    attr_u8(h, FRA_PROTOCOL, proto);
    if (r->src_len)
        attr_put(h, FRA_SRC, r->src, alen(r->af));
    if (r->dst_len)
        attr_put(h, FRA_DST, r->dst, alen(r->af));
    if (r->ipproto)
        attr_u8(h, FRA_IP_PROTO, r->ipproto);
    if (r->sport) {
        struct fib_rule_port_range pr = {r->sport, r->sport};
        attr_put(h, FRA_SPORT_RANGE, &pr, sizeof(pr));
    }
    if (r->dport) {
        struct fib_rule_port_range pr = {r->dport, r->dport};
        attr_put(h, FRA_DPORT_RANGE, &pr, sizeof(pr));
    }
    if (r->fwmark) {
        attr_u32(h, FRA_FWMARK, r->fwmark);
        attr_u32(h, FRA_FWMASK, r->fwmask ? r->fwmask : 0xffffffffu);
    }
    if (r->dscp >= 0)
        attr_u8(h, FRA_DSCP, (uint8_t)r->dscp);
    msg_end(n, h);
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

static int encode_route(struct nlroute *n, const struct plan_route *r, bool add, uint8_t proto,
                        char *err, size_t errlen)
{
    int ifx[PLAN_MAX_NH] = {0};
    for (int i = 0; add && i < r->nnh; i++)
        if (r->nh[i].dev[0] && !(ifx[i] = link_index(n, r->nh[i].dev)))
            return fail(err, errlen, -ENODEV, "interface %s not found", r->nh[i].dev);
    struct rtmsg rtm = {.rtm_family = (uint8_t)family(r->af), .rtm_dst_len = r->dst_len,
                        .rtm_table = r->table < 256 ? (uint8_t)r->table : RT_TABLE_UNSPEC,
                        .rtm_protocol = proto, .rtm_type = RTN_UNICAST,
                        .rtm_scope = add ? RT_SCOPE_UNIVERSE : RT_SCOPE_NOWHERE};
    struct nlmsghdr *h = msg_start(n, add ? RTM_NEWROUTE : RTM_DELROUTE,
                                   NLM_F_ACK | (add ? NLM_F_CREATE | NLM_F_REPLACE : 0),
                                   &rtm, sizeof(rtm));
    attr_u32(h, RTA_TABLE, r->table);
    attr_put(h, RTA_DST, r->dst, alen(r->af));
    if (add && r->nnh == 1) {
        if (r->nh[0].af)
            attr_put(h, RTA_GATEWAY, r->nh[0].via, alen(r->nh[0].af));
        if (ifx[0])
            attr_u32(h, RTA_OIF, (uint32_t)ifx[0]);
    } else if (add) {
        struct rtattr *mp = attr_put(h, RTA_MULTIPATH, NULL, 0);
        for (int i = 0; i < r->nnh; i++) {
            struct rtnexthop *nh = (struct rtnexthop *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));
            memset(nh, 0, sizeof(*nh));
            nh->rtnh_hops = (unsigned char)(r->nh[i].weight - 1);  /* kernel stores weight-1 */
            nh->rtnh_ifindex = ifx[i];
            h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTNH_ALIGN(sizeof(*nh));
            if (r->nh[i].af)
                attr_put(h, RTA_GATEWAY, r->nh[i].via, alen(r->nh[i].af));
            nh->rtnh_len = (unsigned short)((char *)h + h->nlmsg_len - (char *)nh);
        }
        mp->rta_len = (unsigned short)((char *)h + h->nlmsg_len - (char *)mp);
    }
    msg_end(n, h);
    return 0;
}

/* ---- transport ---------------------------------------------------------- */

static int send_all(struct nlroute *n)
{
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    size_t off = 0;
    while (off < n->txlen) {
        ssize_t w = sendto(n->fd, n->tx + off, n->txlen - off, 0, (struct sockaddr *)&sa,
                           sizeof(sa));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        off += (size_t)w;
    }
    n->txlen = 0;
    return 0;
}

static ssize_t recv_some(struct nlroute *n)
{
    for (;;) {
        ssize_t r = recv(n->fd, n->rx, NLROUTE_RX, MSG_TRUNC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if ((size_t)r > NLROUTE_RX)
            return -EMSGSIZE;
        return r;
    }
}

/* The kernel's explanation from an extended ack, or "". */
static const char *ext_msg(const struct nlmsghdr *h)
{
    const struct nlmsgerr *e = NLMSG_DATA(h);
    if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
        return "";
    size_t off = NLMSG_LENGTH(sizeof(*e));   /* capped: no request echoed */
    if (!(h->nlmsg_flags & NLM_F_CAPPED))
        off += e->msg.nlmsg_len - NLMSG_HDRLEN;
    while (off + sizeof(struct nlattr) <= h->nlmsg_len) {
        const struct nlattr *a = (const struct nlattr *)((const char *)h + off);
        if (a->nla_len < sizeof(*a) || off + a->nla_len > h->nlmsg_len)
            break;
        if (a->nla_type == NLMSGERR_ATTR_MSG && a->nla_len > sizeof(*a)) {
            const char *s = (const char *)(a + 1);
            if (memchr(s, '\0', a->nla_len - sizeof(*a)))
                return s;
        }
        off += NLA_ALIGN(a->nla_len);
    }
    return "";
}

/*
 * Sends the buffer (count requests, seqs base..base+count-1) and waits for
 * every ack. Returns the index of the first failed item in *bad (or -1)
 * and its errno; benign errors (see nlroute.h) count as success.
 */
static int exchange(struct nlroute *n, uint32_t base, size_t count, bool del, size_t *ok,
                    long *bad, int *bad_errno, char *why, size_t whylen)
{
    *bad = -1;
    int rc = send_all(n);
    if (rc)
        return rc;
    size_t got = 0;
    while (got < count) {
        ssize_t len = recv_some(n);
        if (len < 0)
            return (int)len;   /* -ENOBUFS: acks lost; the caller re-reads */
        for (struct nlmsghdr *h = (struct nlmsghdr *)n->rx; NLMSG_OK(h, (size_t)len);
             h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type != NLMSG_ERROR || h->nlmsg_seq - base >= count)
                continue;
            const struct nlmsgerr *e = NLMSG_DATA(h);
            got++;
            int er = -e->error;
            bool benign = er == 0 || (!del && er == EEXIST) || (del && (er == ENOENT || er == ESRCH));
            if (benign) {
                (*ok)++;
            } else if (*bad < 0) {
                *bad = (long)(h->nlmsg_seq - base);
                *bad_errno = er;
                tf_strlcpy(why, ext_msg(h), whylen);
            }
        }
    }
    return 0;
}

static void rule_desc(const struct plan_rule *r, char *buf, size_t len)
{
    char s[64], d[64];
    snprintf(buf, len, "rule pref %u from %s/%u to %s/%u ipproto %u sport %u dport %u table %u",
             r->prio, tf_addr_str(r->af, r->src, s, sizeof(s)), r->src_len,
             tf_addr_str(r->af, r->dst, d, sizeof(d)), r->dst_len, r->ipproto, r->sport,
             r->dport, r->table);
}

static void route_desc(const struct plan_route *r, char *buf, size_t len)
{
    char d[64];
    snprintf(buf, len, "route %s/%u table %u", tf_addr_str(r->af, r->dst, d, sizeof(d)),
             r->dst_len, r->table);
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
        uint32_t base = n->seq;
        int enc = 0;
        char encerr[160] = "";
        n->txlen = 0;
        while (i < total && n->txlen < NLROUTE_BATCH) {
            if (rules)
                encode_rule(n, &p->rules[i], add, proto);
            else if ((enc = encode_route(n, &p->routes[i], add, proto, encerr, sizeof(encerr))))
                break;
            i++;
        }
        long bad = -1;
        int bad_errno = 0;
        char why[160] = "", desc[200];
        int rc = i > first ? exchange(n, base, i - first, !add, done, &bad, &bad_errno, why,
                                      sizeof(why)) : 0;
        if (i > first)
            (*round_trips)++;
        if (rc)
            return fail(err, errlen, rc, "netlink batch: %s", strerror(-rc));
        if (bad >= 0) {
            size_t k = first + (size_t)bad;
            if (rules)
                rule_desc(&p->rules[k], desc, sizeof(desc));
            else
                route_desc(&p->routes[k], desc, sizeof(desc));
            return fail(err, errlen, -bad_errno, "%s %s: %s%s%s", add ? "adding" : "deleting",
                        desc, strerror(bad_errno), why[0] ? ": " : "", why);
        }
        if (enc) {
            route_desc(&p->routes[i], desc, sizeof(desc));
            return fail(err, errlen, enc, "adding %s: %s", desc, encerr);
        }
    }
    return 0;
}

/* ---- dumps ---------------------------------------------------------------- */

typedef int (*dump_cb)(struct nlroute *n, const struct nlmsghdr *h, void *ctx);

/* One dump; -EAGAIN when the kernel says it was interrupted by a change
 * (NLM_F_DUMP_INTR), so that the caller repeats it. */
static int dump_once(struct nlroute *n, uint16_t type, const void *hdr, size_t hlen,
                     dump_cb cb, void *ctx)
{
    n->txlen = 0;
    struct nlmsghdr *req = msg_start(n, type, NLM_F_DUMP, hdr, hlen);
    uint32_t seq = req->nlmsg_seq;
    msg_end(n, req);
    int rc = send_all(n);
    bool intr = false;
    while (!rc) {
        ssize_t len = recv_some(n);
        if (len < 0)
            return (int)len;
        for (struct nlmsghdr *h = (struct nlmsghdr *)n->rx; NLMSG_OK(h, (size_t)len);
             h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_seq != seq)
                continue;
            if (h->nlmsg_flags & NLM_F_DUMP_INTR)
                intr = true;
            if (h->nlmsg_type == NLMSG_DONE)
                return intr ? -EAGAIN : rc;
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                return e->error ? e->error : -EIO;
            }
            if (!rc)
                rc = cb(n, h, ctx);
        }
    }
    return rc;
}

static int dump(struct nlroute *n, uint16_t type, const void *hdr, size_t hlen, dump_cb cb,
                void *ctx, void (*reset)(void *ctx))
{
    int rc = -EAGAIN;
    for (int tries = 0; tries < 5 && rc == -EAGAIN; tries++) {
        reset(ctx);
        rc = dump_once(n, type, hdr, hlen, cb, ctx);
    }
    return rc;
}

/* Attribute table of one message: tb[type] points at the attribute or is
 * NULL; payload lengths are checked by the getters. */
#define NLR_ATTR_MAX 32
static void parse_attrs(const struct rtattr *a, size_t len, const struct rtattr **tb)
{
    memset(tb, 0, NLR_ATTR_MAX * sizeof(*tb));
    int l = (int)len;
    for (; RTA_OK(a, l); a = RTA_NEXT(a, l))
        if (a->rta_type < NLR_ATTR_MAX)
            tb[a->rta_type] = a;
}

static bool get_u32(const struct rtattr *a, uint32_t *v)
{
    if (!a || RTA_PAYLOAD(a) < 4)
        return false;
    memcpy(v, RTA_DATA(a), 4);
    return true;
}

static bool get_u8(const struct rtattr *a, uint8_t *v)
{
    if (!a || RTA_PAYLOAD(a) < 1)
        return false;
    *v = *(const uint8_t *)RTA_DATA(a);
    return true;
}

static bool get_addr(const struct rtattr *a, uint8_t af, uint8_t out[16])
{
    if (!a || RTA_PAYLOAD(a) != alen(af))
        return false;
    memcpy(out, RTA_DATA(a), alen(af));
    return true;
}

static uint16_t get_port(const struct rtattr *a)
{
    struct fib_rule_port_range pr;
    if (!a || RTA_PAYLOAD(a) < sizeof(pr))
        return 0;
    memcpy(&pr, RTA_DATA(a), sizeof(pr));
    return pr.start;   /* ours are single ports; a range reads as its start */
}

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

static int rule_cb(struct nlroute *n, const struct nlmsghdr *h, void *p)
{
    (void)n;
    struct read_ctx *c = p;
    const struct fib_rule_hdr *frh = NLMSG_DATA(h);
    if (h->nlmsg_type != RTM_NEWRULE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*frh)))
        return 0;
    if ((frh->family != AF_INET && frh->family != AF_INET6) || frh->action != FR_ACT_TO_TBL)
        return 0;
    const struct rtattr *tb[NLR_ATTR_MAX];
    parse_attrs((const struct rtattr *)((const char *)frh + NLMSG_ALIGN(sizeof(*frh))),
                h->nlmsg_len - NLMSG_LENGTH(sizeof(*frh)), tb);
    struct plan_rule r = {.af = frh->family == AF_INET6 ? 6 : 4, .dscp = -1,
                          .src_len = frh->src_len, .dst_len = frh->dst_len,
                          .table = frh->table};
    uint8_t proto = 0;
    get_u32(tb[FRA_PRIORITY], &r.prio);
    get_u32(tb[FRA_TABLE], &r.table);
    get_u8(tb[FRA_PROTOCOL], &proto);
    /* Ownership: priority range AND protocol AND one of our tables. */
    if (r.prio < c->own->prio_min || r.prio > c->own->prio_max || proto != c->own->proto ||
        r.table < c->own->table_min || r.table > c->own->table_max)
        return 0;
    if ((r.src_len && !get_addr(tb[FRA_SRC], r.af, r.src)) ||
        (r.dst_len && !get_addr(tb[FRA_DST], r.af, r.dst)))
        return 0;
    get_u8(tb[FRA_IP_PROTO], &r.ipproto);
    r.sport = get_port(tb[FRA_SPORT_RANGE]);
    r.dport = get_port(tb[FRA_DPORT_RANGE]);
    get_u32(tb[FRA_FWMARK], &r.fwmark);
    get_u32(tb[FRA_FWMASK], &r.fwmask);
    if (r.fwmask == 0xffffffffu || !r.fwmark)
        r.fwmask = 0;   /* canonical: 0 = exact mark */
    uint8_t dscp;
    if (get_u8(tb[FRA_DSCP], &dscp))
        r.dscp = dscp;
    else if (frh->tos)
        r.dscp = frh->tos >> 2;
    tf_strlcpy(r.sw, c->sw, sizeof(r.sw));
    return plan_add_rule(c->out, &r) == -ENOMEM ? -ENOMEM : 0;
}

static void route_nh(const struct nlroute *n, const struct plan_route *r, const struct rtattr *gw,
                     int ifindex, struct plan_nh *nh)
{
    memset(nh, 0, sizeof(*nh));
    if (get_addr(gw, r->af, nh->via))
        nh->af = r->af;
    tf_strlcpy(nh->dev, ifindex ? link_name(n, ifindex) : "", sizeof(nh->dev));
    nh->weight = 1;
}

static int route_cb(struct nlroute *n, const struct nlmsghdr *h, void *p)
{
    struct read_ctx *c = p;
    const struct rtmsg *rtm = NLMSG_DATA(h);
    if (h->nlmsg_type != RTM_NEWROUTE || h->nlmsg_len < NLMSG_LENGTH(sizeof(*rtm)))
        return 0;
    if ((rtm->rtm_family != AF_INET && rtm->rtm_family != AF_INET6) ||
        rtm->rtm_protocol != c->own->proto || rtm->rtm_type != RTN_UNICAST ||
        (rtm->rtm_flags & RTM_F_CLONED))
        return 0;
    const struct rtattr *tb[NLR_ATTR_MAX];
    parse_attrs(RTM_RTA(rtm), RTM_PAYLOAD(h), tb);
    struct plan_route r = {.af = rtm->rtm_family == AF_INET6 ? 6 : 4,
                           .dst_len = rtm->rtm_dst_len, .table = rtm->rtm_table};
    get_u32(tb[RTA_TABLE], &r.table);
    if (r.table < c->own->table_min || r.table > c->own->table_max)
        return 0;
    if (r.dst_len && !get_addr(tb[RTA_DST], r.af, r.dst))
        return 0;
    uint32_t oif = 0;
    get_u32(tb[RTA_OIF], &oif);
    const struct rtattr *mp = tb[RTA_MULTIPATH];
    if (mp) {
        const struct rtnexthop *nh = RTA_DATA(mp);
        int left = (int)RTA_PAYLOAD(mp);
        while (RTNH_OK(nh, left) && r.nnh < PLAN_MAX_NH) {
            const struct rtattr *ntb[NLR_ATTR_MAX];
            parse_attrs(RTNH_DATA(nh), nh->rtnh_len - RTNH_LENGTH(0), ntb);
            route_nh(n, &r, ntb[RTA_GATEWAY], nh->rtnh_ifindex, &r.nh[r.nnh]);
            r.nh[r.nnh++].weight = (uint16_t)(nh->rtnh_hops + 1);
            left -= RTNH_ALIGN(nh->rtnh_len);
            nh = RTNH_NEXT(nh);
        }
    } else {
        route_nh(n, &r, tb[RTA_GATEWAY], (int)oif, &r.nh[0]);
        r.nnh = 1;
    }
    tf_strlcpy(r.sw, c->sw, sizeof(r.sw));
    return plan_add_route(c->out, &r) == -ENOMEM ? -ENOMEM : 0;
}

static void links_reset(void *p)
{
    ((struct nlroute *)p)->nlinks = 0;
}

static int link_cb(struct nlroute *n, const struct nlmsghdr *h, void *p)
{
    (void)p;
    const struct ifinfomsg *ifi = NLMSG_DATA(h);
    if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
        return 0;
    const struct rtattr *tb[NLR_ATTR_MAX];
    parse_attrs(IFLA_RTA(ifi), IFLA_PAYLOAD(h), tb);
    const struct rtattr *name = tb[IFLA_IFNAME];
    if (!name || !memchr(RTA_DATA(name), '\0', RTA_PAYLOAD(name)))
        return 0;
    if (n->nlinks % 64 == 0) {
        struct link_ent *v = realloc(n->links, (n->nlinks + 64) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        n->links = v;
    }
    n->links[n->nlinks].index = ifi->ifi_index;
    tf_strlcpy(n->links[n->nlinks].name, RTA_DATA(name), IF_NAMESIZE);
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
