/*
 * maxmin: progressive filling with a lazy min-heap of saturation levels.
 *
 * For direction d with rem[d] capacity left (after frozen flows) and n[d]
 * unfrozen flows, the filling level at which d fills is rem[d] / n[d]. The
 * next event is the smaller of the lowest such level and the smallest
 * unfrozen demand. Freezing a flow at a rate no larger than every level of
 * its directions can only raise those levels, so stale heap entries are
 * recognised by a per-direction version and skipped.
 */
#include "policy/maxmin.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

struct ev { double level; uint32_t dir, ver; };

struct heap { struct ev *a; size_t n, cap; };

static int heap_push(struct heap *h, struct ev e)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 1024;
        struct ev *na = realloc(h->a, nc * sizeof(*na));
        if (!na)
            return -ENOMEM;
        h->a = na;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0 && h->a[(i - 1) / 2].level > e.level) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = e;
    return 0;
}

static void heap_pop(struct heap *h)
{
    struct ev last = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1].level < h->a[c].level)
            c++;
        if (h->a[c].level >= last.level)
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
}

/* qsort_r (glibc) rather than a global: the controller may run this in
 * several threads. */
static int by_demand(const void *a, const void *b, void *ctx)
{
    const double *dem = ctx;
    double x = dem[*(const uint32_t *)a], y = dem[*(const uint32_t *)b];
    if (x != y)
        return x < y ? -1 : 1;
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

struct mm {
    double *rem;
    uint32_t *n, *ver, *loff, *lflows, *order;
    unsigned char *frozen;
    struct heap h;
};

static int freeze(struct mm *m, uint32_t f, double r, const uint32_t *off, const uint32_t *dirs, double *rate)
{
    m->frozen[f] = 1;
    rate[f] = r;
    for (uint32_t k = off[f]; k < off[f + 1]; k++) {
        uint32_t d = dirs[k];
        m->rem[d] -= r;
        if (m->rem[d] < 0)
            m->rem[d] = 0;
        if (--m->n[d] > 0 && heap_push(&m->h, (struct ev){ m->rem[d] / m->n[d], d, ++m->ver[d] }) < 0)
            return -ENOMEM;
    }
    return 0;
}

int maxmin_rates(uint32_t ndirs, const double *cap, uint32_t nflows, const uint32_t *off,
                 const uint32_t *dirs, const double *demand, double *rate)
{
    for (uint32_t f = 0; f < nflows; f++) {
        if (!(demand[f] > 0) || off[f + 1] < off[f])
            return -EINVAL;
        for (uint32_t k = off[f]; k < off[f + 1]; k++)
            if (dirs[k] >= ndirs)
                return -EINVAL;
    }
    struct mm m = { 0 };
    m.rem = malloc(((size_t)ndirs + 1) * sizeof(double));
    m.n = calloc((size_t)ndirs + 1, sizeof(uint32_t));
    m.ver = calloc((size_t)ndirs + 1, sizeof(uint32_t));
    m.loff = calloc((size_t)ndirs + 2, sizeof(uint32_t));
    m.lflows = malloc(((size_t)off[nflows] + 1) * sizeof(uint32_t));
    m.order = malloc(((size_t)nflows + 1) * sizeof(uint32_t));
    m.frozen = calloc((size_t)nflows + 1, 1);
    int rc = -ENOMEM;
    if (!m.rem || !m.n || !m.ver || !m.loff || !m.lflows || !m.order || !m.frozen)
        goto out;
    /* Direction -> flows (CSR), counting hops per direction. */
    for (uint32_t k = 0; k < off[nflows]; k++)
        m.loff[dirs[k] + 1]++;
    for (uint32_t d = 0; d < ndirs; d++) {
        m.n[d] = m.loff[d + 1];
        m.loff[d + 1] += m.loff[d];
        m.rem[d] = cap[d] > 0 ? cap[d] : 0;
    }
    for (uint32_t f = 0; f < nflows; f++)
        for (uint32_t k = off[f]; k < off[f + 1]; k++)
            m.lflows[m.loff[dirs[k]] + m.ver[dirs[k]]++] = f;
    for (uint32_t d = 0; d < ndirs; d++) {
        m.ver[d] = 0;
        if (m.n[d] && heap_push(&m.h, (struct ev){ m.rem[d] / m.n[d], d, 0 }) < 0)
            goto out;
    }
    for (uint32_t f = 0; f < nflows; f++)
        m.order[f] = f;
    qsort_r(m.order, nflows, sizeof(uint32_t), by_demand, (void *)demand);
    uint32_t next = 0, left = nflows;
    while (left > 0) {
        while (next < nflows && m.frozen[m.order[next]])
            next++;
        while (m.h.n && (m.h.a[0].ver != m.ver[m.h.a[0].dir] || m.n[m.h.a[0].dir] == 0))
            heap_pop(&m.h);
        double lvl = m.h.n ? m.h.a[0].level : INFINITY;
        uint32_t f = next < nflows ? m.order[next] : UINT32_MAX;
        if (f != UINT32_MAX && (demand[f] <= lvl || off[f] == off[f + 1])) {
            if (freeze(&m, f, demand[f], off, dirs, rate) < 0)
                goto out;
            left--;
            continue;
        }
        if (!m.h.n) /* only flows without directions and infinite demand remain */
            break;
        uint32_t d = m.h.a[0].dir;
        heap_pop(&m.h);
        for (uint32_t k = m.loff[d]; k < m.loff[d + 1]; k++) {
            uint32_t g = m.lflows[k];
            if (m.frozen[g])
                continue;
            if (freeze(&m, g, lvl, off, dirs, rate) < 0)
                goto out;
            left--;
        }
    }
    for (uint32_t f = 0; f < nflows; f++)
        if (!m.frozen[f])
            rate[f] = demand[f];
    rc = 0;
out:
    free(m.rem); free(m.n); free(m.ver); free(m.loff); free(m.lflows);
    free(m.order); free(m.frozen); free(m.h.a);
    return rc;
}
