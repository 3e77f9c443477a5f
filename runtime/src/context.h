/* The context object, shared by the files that dispatch to a context's plugin. */
#ifndef ATTNRT_CONTEXT_H
#define ATTNRT_CONTEXT_H

#include "internal.h"

struct attnrt_context {
    const attnrt_device_ref_t *ref;    /* registry-owned; lives until attnrt_shutdown */
    const attnrt_plugin_api_t *api;    /* &ref->plugin->api */
    void                      *device; /* plugin-owned, until device_close */
    atomic_long                live_allocs, live_streams, live_events, live_plans, live_pools;
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

#endif /* ATTNRT_CONTEXT_H */
