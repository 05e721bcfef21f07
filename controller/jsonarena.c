/*
 * jsonarena: see jsonarena.h. Alignment is 16 bytes (max_align_t on the
 * platforms we build for); the arena's size is about 12 times the JSON text,
 * which is what jansson needs for report-shaped documents (measured: 2.2 MB
 * of values for a 203 kB batch).
 */
#include "controller/jsonarena.h"

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

struct arena {
    char *base;
    size_t used, cap;
    int depth;
};

static _Thread_local struct arena ar;
static pthread_key_t ar_key;
static pthread_once_t ar_once = PTHREAD_ONCE_INIT;

static void *ar_malloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (ar.depth > 0 && n <= ar.cap - ar.used) {
        void *p = ar.base + ar.used;
        ar.used += n;
        return p;
    }
    return malloc(n);
}

static void ar_free(void *p)
{
    if (ar.base && (char *)p >= ar.base && (char *)p < ar.base + ar.cap)
        return;
    free(p);
}

static void ar_thread_exit(void *p)
{
    free(p);
}

static void install_once(void)
{
    pthread_key_create(&ar_key, ar_thread_exit);
    json_set_alloc_funcs(ar_malloc, ar_free);
}

void jsonarena_install(void)
{
    pthread_once(&ar_once, install_once);
}

void jsonarena_begin(size_t hint)
{
    jsonarena_install();
    if (ar.depth++ > 0)
        return;
    size_t want = hint > JSONARENA_MAX / 12 ? JSONARENA_MAX : hint * 12 + 4096;
    if (want > ar.cap) {
        /* Grow (never shrink): the old block holds no live values between scopes. */
        char *nb = malloc(want);
        if (nb) {
            free(ar.base);
            ar.base = nb;
            ar.cap = want;
            pthread_setspecific(ar_key, nb);
        }
    }
    ar.used = 0;
}

void jsonarena_end(void)
{
    if (ar.depth > 0 && --ar.depth == 0)
        ar.used = 0;
}
