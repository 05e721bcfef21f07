/*
 * jsonarena: a per-thread bump allocator for jansson, for parsing large
 * untrusted bodies (probe reports) without a malloc/free pair per JSON value.
 *
 * jansson allocates every value, key and hashtable separately; parsing a
 * 200 kB batch of reports spent about a third of its time in malloc, free and
 * malloc_consolidate. Between jsonarena_begin() and jsonarena_end() on one
 * thread, jansson's allocations come from that thread's arena and frees of
 * arena memory are no-ops; jsonarena_end() releases everything at once.
 *
 * Invariants: every json_t created inside a scope is released inside it (the
 * caller copies what it keeps into its own structures); outside a scope, and
 * when the arena is full, allocation falls through to malloc, and free()
 * is used for anything not in the calling thread's arena, so the hooks are
 * compatible with jansson's defaults and may be installed at any time. The
 * arena (grown to the largest body seen, at most JSONARENA_MAX) is kept per
 * thread for reuse and freed when the thread exits.
 */
#ifndef TF_JSONARENA_H
#define TF_JSONARENA_H

#include <stddef.h>

#define JSONARENA_MAX (256u << 20)

/* Installs the jansson hooks (once per process; idempotent, thread-safe). */
void jsonarena_install(void);
/* Opens a scope sized for parsing about `hint` bytes of JSON. Scopes do not
 * nest: a second begin on the same thread is ignored (counted). */
void jsonarena_begin(size_t hint);
void jsonarena_end(void);

#endif
