/*
 * report_gen: fixture generator of probe reports (DESIGN 2.3) for a
 * topology, for tierflowd's tests, its benchmark and the dashboard's.
 *
 *   report_gen --topology FILE|GENERATOR [--probes leaves|hosts] [--flows N]
 *              [--congest A-B] [--gbps G] [--seed N] [--rounds R] [--batch B]
 *              [--ce F] [--post URL] [--parallel P] [--token-file F] [--emit-topology OUT]
 *
 * Every probe node (each leaf, or each host) reports N fat flows from its
 * hosts to hosts under other leaves, leaving by an uplink chosen by a hash of
 * the flow (as ECMP would), or, with --congest A-B, all by A's link to B when
 * the probe is A (a collision to resolve). Interfaces are named as the
 * topology names them, else by the far end's node name (which tierflowd
 * accepts for topologies without interface names). Without --post the
 * reports are printed, one JSON object per line; with --post they are sent
 * (B per request, as {"reports": [...]}) over P keep-alive connections
 * (--parallel, default 1), and the rate of the sending phase is printed
 * (the bodies are built before the clock starts). --emit-topology writes the topology with interface
 * names and /31 link addresses filled in (so that plans can be built) and
 * exits.
 */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "policy/topo.h"

static const char *if_name(const struct topo *t, uint32_t node, uint32_t dir)
{
    const struct topo_link *l = &t->links[topo_dir_link(dir)];
    const char *n = topo_dir_is_down(dir) ? l->hi_if : l->lo_if;
    (void)node;
    return n[0] ? n : t->nodes[topo_dir_to(t, dir)].name;
}

static int emit_topology(struct topo *t, const char *out)
{
    for (uint32_t k = 0; k < t->nlinks; k++) {
        struct topo_link *l = &t->links[k];
        tf_strlcpy(l->lo_if, t->nodes[l->hi].name, sizeof(l->lo_if));
        tf_strlcpy(l->hi_if, t->nodes[l->lo].name, sizeof(l->hi_if));
        uint32_t a = (100u << 24) | (64u << 16) | (2 * k);
        snprintf(l->lo_ip, sizeof(l->lo_ip), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
        a++;
        snprintf(l->hi_ip, sizeof(l->hi_ip), "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
    }
    FILE *f = fopen(out, "w");
    if (!f)
        return -errno;
    int r = topo_write_json(t, f);
    return fclose(f) == 0 ? r : -errno;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* One report for probe node p. */
static json_t *make_report(const struct topo *t, uint32_t p, int nflows, double gbps, double ce,
                           uint32_t cong_from, uint32_t cong_to, int round)
{
    const struct topo_node *pn = &t->nodes[p];
    uint32_t leaf = topo_leaf_of(t, p);
    json_t *flows = json_array(), *links = json_array();
    double *tx = calloc(pn->up_count + 1, sizeof(double));
    for (int i = 0; i < nflows; i++) {
        /* Source: the probe host, or a host under the probe leaf. */
        uint32_t src = p;
        if (pn->tier != TOPO_HOST) {
            if (!pn->down_count)
                break;
            src = t->links[t->down_links[pn->down_first + (uint32_t)i % pn->down_count]].lo;
        }
        uint32_t dst = src;
        for (int tries = 0; tries < 64 && (dst == src || topo_leaf_of(t, dst) == leaf); tries++)
            dst = t->hosts[rnd() % t->nhosts];
        if (dst == src || topo_leaf_of(t, dst) == leaf || !pn->up_count)
            continue;
        uint16_t sport = (uint16_t)(49152 + (i % 16384));
        uint32_t up = (uint32_t)((sport * 2654435761u) >> 7) % pn->up_count;
        uint32_t dir = topo_dir(t->up_links[pn->up_first + up], 0);
        if (p == cong_from) {
            topo_dir_between(t, p, cong_to, &dir);
            up = 0;
            for (uint32_t k = 0; k < pn->up_count; k++)
                if (topo_dir(t->up_links[pn->up_first + k], 0) == dir)
                    up = k;
        }
        tx[up] += gbps * 1e9;
        char s[64], d[64];
        tf_addr_str(t->nodes[src].af, t->nodes[src].addr, s, sizeof(s));
        tf_addr_str(t->nodes[dst].af, t->nodes[dst].addr, d, sizeof(d));
        json_array_append_new(flows, json_pack("{ss ss si si si si si si ss sI sI sf sf si sb}", "src", s, "dst", d,
                                               "proto", 17, "sport", sport, "dport", 4791, "qp", 1000 + i, "vlan", 0,
                                               "dscp", 26, "if", if_name(t, p, dir), "bytes",
                                               (json_int_t)(gbps * 1e9 / 8 * (round + 1)), "pkts",
                                               (json_int_t)(gbps * 1e9 / 8 / 4096), "bps", gbps * 1e9, "ce_frac", ce,
                                               "cnp", 0, "fat", 1));
    }
    for (uint32_t k = 0; k < pn->up_count; k++) {
        uint32_t dir = topo_dir(t->up_links[pn->up_first + k], 0);
        json_array_append_new(links, json_pack("{ss sf sf si si ss}", "if", if_name(t, p, dir), "tx_bps", tx[k],
                                               "rx_bps", 0.0, "drops", 0, "ce_pkts", 0, "oper", "up"));
    }
    free(tx);
    return json_pack("{ss sf sf so so s{si si}}", "probe", pn->name, "ts", tf_now_real(), "interval_s", 1.0, "links",
                     links, "flows", flows, "stats", "pkts", 0, "bytes", 0);
}

static size_t sink(void *p, size_t sz, size_t n, void *u)
{
    (void)p;
    (void)u;
    return sz * n;
}

/* Bodies to POST, built before the clock starts so that the rate measures
 * the controller, not this generator. */
struct bodies {
    char **s;
    size_t *nrep;
    size_t n, cap;
};

static void add_body(struct bodies *b, json_t **pending)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->s = realloc(b->s, b->cap * sizeof(*b->s));
        b->nrep = realloc(b->nrep, b->cap * sizeof(*b->nrep));
        if (!b->s || !b->nrep)
            abort();
    }
    json_t *body = json_pack("{so}", "reports", *pending);
    b->nrep[b->n] = json_array_size(*pending);
    b->s[b->n++] = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    *pending = json_array();
}

/* Sends every body over `par` keep-alive connections (curl multi), each
 * connection one request at a time, as that many probes would. */
static void post_all(const struct bodies *b, const char *url, struct curl_slist *hdr, int par, size_t *sent,
                     size_t *failed)
{
    CURLM *m = curl_multi_init();
    CURL **h = calloc((size_t)par, sizeof(*h));
    size_t *cur = calloc((size_t)par, sizeof(*cur));
    int *ids = calloc((size_t)par, sizeof(*ids)); /* CURLOPT_PRIVATE: which handle */
    size_t next = 0;
    int running = 0;
    for (int i = 0; i < par; i++) {
        h[i] = curl_easy_init();
        curl_easy_setopt(h[i], CURLOPT_URL, url);
        curl_easy_setopt(h[i], CURLOPT_HTTPHEADER, hdr);
        curl_easy_setopt(h[i], CURLOPT_WRITEFUNCTION, sink);
        ids[i] = i;
        curl_easy_setopt(h[i], CURLOPT_PRIVATE, (void *)&ids[i]);
        if (next < b->n) {
            cur[i] = next;
            curl_easy_setopt(h[i], CURLOPT_POSTFIELDS, b->s[next++]);
            curl_multi_add_handle(m, h[i]);
            running++;
        }
    }
    while (running > 0) {
        int still;
        curl_multi_perform(m, &still);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            char *pv;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &pv);
            int i = *(const int *)(const void *)pv;
            long code = 0;
            curl_easy_getinfo(h[i], CURLINFO_RESPONSE_CODE, &code);
            if (msg->data.result != CURLE_OK || code != 200) {
                if (*failed == 0)
                    fprintf(stderr, "report_gen: POST failed (HTTP %ld, %s)\n", code,
                            curl_easy_strerror(msg->data.result));
                *failed += b->nrep[cur[i]];
            } else {
                *sent += b->nrep[cur[i]];
            }
            curl_multi_remove_handle(m, h[i]);
            running--;
            if (next < b->n) {
                cur[i] = next;
                curl_easy_setopt(h[i], CURLOPT_POSTFIELDS, b->s[next++]);
                curl_multi_add_handle(m, h[i]);
                running++;
            }
        }
        if (running > 0)
            curl_multi_poll(m, NULL, 0, 100, NULL);
    }
    for (int i = 0; i < par; i++)
        curl_easy_cleanup(h[i]);
    free(h);
    free(cur);
    free(ids);
    curl_multi_cleanup(m);
}

int main(int argc, char **argv)
{
    const char *topo_spec = NULL, *probes = "leaves", *congest = NULL, *post = NULL, *token_file = NULL, *emit = NULL;
    int nflows = 4, rounds = 1, batch = 1, par = 1;
    double gbps = 40, ce = 0;
    static const struct option opts[] = {
        {"topology", 1, 0, 't'}, {"probes", 1, 0, 'p'}, {"flows", 1, 0, 'n'}, {"congest", 1, 0, 'c'},
        {"gbps", 1, 0, 'g'}, {"seed", 1, 0, 's'}, {"rounds", 1, 0, 'r'}, {"batch", 1, 0, 'b'},
        {"ce", 1, 0, 'e'}, {"post", 1, 0, 'P'}, {"parallel", 1, 0, 'j'}, {"token-file", 1, 0, 'T'}, {"emit-topology", 1, 0, 'E'},
        {0, 0, 0, 0}};
    int c;
    uint64_t v;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't': topo_spec = optarg; break;
        case 'p': probes = optarg; break;
        case 'n': if (tf_parse_u64(optarg, 0, 1000000, &v) < 0) goto usage; nflows = (int)v; break;
        case 'c': congest = optarg; break;
        case 'g': if (tf_parse_double(optarg, 0, 1e4, &gbps) < 0) goto usage; break;
        case 's': if (tf_parse_u64(optarg, 1, UINT64_MAX, &rng_state) < 0) goto usage; break;
        case 'r': if (tf_parse_u64(optarg, 1, 1000000, &v) < 0) goto usage; rounds = (int)v; break;
        case 'b': if (tf_parse_u64(optarg, 1, 64, &v) < 0) goto usage; batch = (int)v; break;
        case 'e': if (tf_parse_double(optarg, 0, 1, &ce) < 0) goto usage; break;
        case 'P': post = optarg; break;
        case 'j': if (tf_parse_u64(optarg, 1, 256, &v) < 0) goto usage; par = (int)v; break;
        case 'T': token_file = optarg; break;
        case 'E': emit = optarg; break;
        default: goto usage;
        }
    }
    if (!topo_spec)
        goto usage;
    char err[256];
    struct topo *t;
    if (topo_load(topo_spec, &t, err, sizeof(err)) < 0) {
        fprintf(stderr, "report_gen: %s\n", err);
        return 2;
    }
    if (emit) {
        int r = emit_topology(t, emit);
        topo_free(t);
        if (r < 0)
            fprintf(stderr, "report_gen: %s: %s\n", emit, strerror(-r));
        return r < 0;
    }
    uint32_t cf = TOPO_NONE, ct = TOPO_NONE;
    if (congest) {
        char a[64];
        tf_strlcpy(a, congest, sizeof(a));
        char *dash = strchr(a, '-');
        if (dash) {
            *dash = '\0';
            cf = topo_node_by_name(t, a);
            ct = topo_node_by_name(t, dash + 1);
        }
        if (cf == TOPO_NONE || ct == TOPO_NONE) {
            fprintf(stderr, "report_gen: --congest %s: expected NODE-NODE of the topology\n", congest);
            return 2;
        }
    }
    int want_tier = strcmp(probes, "hosts") == 0 ? TOPO_HOST : TOPO_LEAF;
    char auth[300] = "";
    if (token_file) {
        char tok[256];
        if (tf_read_token(token_file, tok, sizeof(tok)) < 0) {
            fprintf(stderr, "report_gen: %s: unreadable token\n", token_file);
            return 2;
        }
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
    }
    struct curl_slist *hdr = NULL;
    struct bodies bodies = {0};
    size_t sent = 0, failed = 0, flows = 0;
    json_t *pending = json_array();
    for (int r = 0; r < rounds; r++) {
        for (uint32_t n = 0; n < t->nnodes; n++) {
            if (t->nodes[n].tier != want_tier)
                continue;
            json_t *rep = make_report(t, n, nflows, gbps, ce, cf, ct, r);
            flows += json_array_size(json_object_get(rep, "flows"));
            if (!post) {
                char *s = json_dumps(rep, JSON_COMPACT);
                puts(s);
                free(s);
                json_decref(rep);
                sent++;
                continue;
            }
            json_array_append_new(pending, rep);
            if ((int)json_array_size(pending) >= batch)
                add_body(&bodies, &pending);
        }
    }
    if (post && json_array_size(pending) > 0)
        add_body(&bodies, &pending);
    json_decref(pending);
    if (post) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        hdr = curl_slist_append(hdr, "Content-Type: application/json");
        hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
        if (auth[0])
            hdr = curl_slist_append(hdr, auth);
        double t0 = tf_now_mono();
        post_all(&bodies, post, hdr, par, &sent, &failed);
        double dt = tf_now_mono() - t0;
        size_t bytes = 0;
        for (size_t i = 0; i < bodies.n; i++) {
            bytes += strlen(bodies.s[i]);
            free(bodies.s[i]);
        }
        printf("reports %zu failed %zu flows %zu requests %zu bytes %zu connections %d seconds %.3f "
               "reports_per_s %.0f\n", sent, failed, flows, bodies.n, bytes, par, dt, dt > 0 ? (double)sent / dt : 0);
        free(bodies.s);
        free(bodies.nrep);
        curl_slist_free_all(hdr);
        curl_global_cleanup();
    }
    topo_free(t);
    return failed ? 1 : 0;
usage:
    fprintf(stderr, "usage: report_gen --topology FILE|GEN [--probes leaves|hosts] [--flows N] [--congest A-B]\n"
                    "       [--gbps G] [--ce F] [--seed N] [--rounds R] [--batch B] [--post URL] [--parallel P]\n"
                    "       [--token-file F]\n"
                    "       [--emit-topology OUT]\n");
    return 2;
}
