/* The context object, shared by the files that dispatch to a context's plugin. */
#ifndef ATTNRT_CONTEXT_H
#define ATTNRT_CONTEXT_H

#include "alloc_table.h"
#include "internal.h"

struct attnrt_context {
    const attnrt_device_ref_t *ref;    /* registry-owned; lives until attnrt_shutdown */
    const attnrt_plugin_api_t *api;    /* &ref->plugin->api */
    void                      *device; /* plugin-owned, until device_close */
    alloc_table_t              allocs; /* what attnrt_mem_alloc returned and attnrt_mem_free has not taken back */
    atomic_long                live_streams, live_events, live_plans, live_pools;
};

struct attnrt_stream {
    attnrt_context_t *ctx;
    void             *handle; /* plugin-owned */
};

struct attnrt_event {
    attnrt_context_t *ctx;
    void             *handle; /* plugin-owned */
};

/* Returns `status` with attnrt_last_error() = "<what>: <the plugin's message>". */
ATTNRT_HIDDEN attnrt_status_t attnrt_context_fail(const attnrt_context_t *ctx, attnrt_status_t status, const char *what);

/* attnrt_mem_set's body; messages name `fn`. `stream` must already be checked to be the context's. */
ATTNRT_HIDDEN attnrt_status_t attnrt_context_mem_set(attnrt_context_t *ctx, void *dst, int value, size_t bytes,
                                                     attnrt_stream_t *stream, const char *fn);

/* A stream (NULL or) of `ctx`, else "<fn>: stream belongs to another context (cpu:0 at 0x..) than <owner>
 * (cpu:0 at 0x..)": two contexts on one device share its name, so their addresses tell them apart. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_stream_context(const char *fn, const attnrt_stream_t *stream,
                                                          const attnrt_context_t *ctx, const char *owner);

/* Where `data` lies inside an attnrt_mem_alloc allocation of ctx, checks that all `bytes` from it do too
 * ("<fn>: <name> ... runs past the end of its allocation"); memory from elsewhere is not checked. */
ATTNRT_HIDDEN attnrt_status_t attnrt_context_check_span(attnrt_context_t *ctx, const char *fn, const char *name,
                                                        const void *data, uint64_t bytes);

/* Returns ATTNRT_ERR_INVALID_ARGUMENT "<fn>: <p> is NULL" from the calling entry when the argument p is NULL. */
#define NEED(p, fn)                                                                                    \
    do {                                                                                               \
        if (!(p)) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", (fn), #p);        \
    } while (0)

#endif /* ATTNRT_CONTEXT_H */
