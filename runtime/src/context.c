/* Contexts on a device, and the memory / stream / event / capability calls that route to its plugin.
 * The dispatch path is a direct vtable call: no lookups, locks or allocations per call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

/* "<fn>: stream belongs to another context (cpu:0 at 0x..) than ctx (cpu:0 at 0x..)": two contexts on one
 * device share its name, so their addresses tell them apart. */
static attnrt_status_t other_context(const char *fn, const char *what, const attnrt_context_t *its, const char *mine,
                                     const attnrt_context_t *ctx)
{
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s belongs to another context (%s at %p) than %s (%s at %p)",
                       fn, what, its->ref->name, (const void *)its, mine, ctx->ref->name, (const void *)ctx);
}

attnrt_status_t attnrt_check_stream_context(const char *fn, const attnrt_stream_t *stream, const attnrt_context_t *ctx,
                                            const char *owner)
{
    return !stream || stream->ctx == ctx ? ATTNRT_OK : other_context(fn, "stream", stream->ctx, owner, ctx);
}

static attnrt_status_t open_device(const char *fn, const attnrt_device_ref_t *ref,
                                   const attnrt_device_attribute_t *options, uint32_t num_options,
                                   attnrt_context_t **ctx);

/* Default-device choice, the device_open call with or without options, and the context object: the one
 * code path of attnrt_open and attnrt_open_with_options. */
static attnrt_status_t open_context(const char *fn, const char *device, const attnrt_device_attribute_t *options,
                                    uint32_t num_options, attnrt_context_t **ctx)
{
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (num_options > 0 && !options)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: options is NULL but num_options = %u", fn, num_options);
    for (uint32_t i = 0; i < num_options; i++) {
        const attnrt_device_attribute_t *o = &options[i];
        if (o->struct_size < ATTNRT_DEVICE_ATTRIBUTE_STRUCT_SIZE)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: options[%u].struct_size = %zu; set it to "
                               "sizeof(attnrt_device_attribute_t)", fn, i, o->struct_size);
        int key_ok = memchr(o->key, '\0', sizeof o->key) != NULL;
        if (!key_ok || !memchr(o->value, '\0', sizeof o->value))
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: options[%u].%s is not NUL-terminated within its %zu "
                               "bytes", fn, i, key_ok ? "value" : "key", key_ok ? sizeof o->value : sizeof o->key);
        if (!o->key[0]) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: options[%u].key is empty", fn, i);
    }
    /* The registry stays held until the context counts as open: attnrt_shutdown cannot unload the plugin
     * in between. */
    const attnrt_device_ref_t *ref = NULL;
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = attnrt_registry_pick(fn, device, &ref);
    if (status == ATTNRT_OK) status = open_device(fn, ref, options, num_options, ctx);
    attnrt_registry_leave();
    return status;
}

static attnrt_status_t open_device(const char *fn, const attnrt_device_ref_t *ref,
                                   const attnrt_device_attribute_t *options, uint32_t num_options,
                                   attnrt_context_t **ctx)
{
    attnrt_status_t status;
    const attnrt_plugin_t *plugin = ref->plugin;
    if (num_options > 0 && !plugin->api.device_open_with_options)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s(%s): the %s plugin takes no device options (its ABI is %u.%u); "
                           "options[0].key = \"%s\"", fn, ref->name, plugin->name, plugin->abi_major,
                           plugin->abi_minor, options[0].key);

    attnrt_context_t *c = calloc(1, sizeof *c);
    /* The plugin gets full-size copies the runtime owns, whatever struct_size the caller compiled with. */
    attnrt_device_attribute_t *copies = num_options ? calloc(num_options, sizeof *copies) : NULL;
    if (!c || (num_options && !copies)) {
        free(c);
        free(copies);
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    for (uint32_t i = 0; i < num_options; i++) {
        copies[i].struct_size = sizeof copies[i];
        memcpy(copies[i].key, options[i].key, sizeof copies[i].key);
        memcpy(copies[i].value, options[i].value, sizeof copies[i].value);
    }
    if (attnrt_alloc_table_init(&c->allocs) != ATTNRT_OK) {
        free(c);
        free(copies);
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    c->ref = ref;
    c->api = &plugin->api;
    status = num_options ? c->api->device_open_with_options(plugin->handle, ref->index, copies, num_options, &c->device)
                         : c->api->device_open(plugin->handle, ref->index, &c->device);
    free(copies);
    if (status != ATTNRT_OK) {
        attnrt_alloc_table_destroy(&c->allocs);
        free(c);
        char what[128];
        snprintf(what, sizeof what, "%s(%s)", fn, ref->name);
        return attnrt_plugin_fail(plugin, status, what);
    }
    attnrt_registry_retain();
    *ctx = c;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_open(const char *device, attnrt_context_t **ctx)
{
    attnrt_clear_error();
    return open_context("attnrt_open", device, NULL, 0, ctx);
}

attnrt_status_t attnrt_context_open(const char *fn, const char *device, attnrt_context_t **ctx)
{
    return open_context(fn, device, NULL, 0, ctx);
}

attnrt_status_t attnrt_open_with_options(const char *device, const attnrt_device_attribute_t *options,
                                         uint32_t num_options, attnrt_context_t **ctx)
{
    attnrt_clear_error();
    return open_context("attnrt_open_with_options", device, options, num_options, ctx);
}

attnrt_status_t attnrt_close(attnrt_context_t *ctx)
{
    attnrt_clear_error();
    if (!ctx) return ATTNRT_OK;
    long allocs = (long)attnrt_alloc_table_count(&ctx->allocs), streams = atomic_load(&ctx->live_streams);
    long events = atomic_load(&ctx->live_events), plans = atomic_load(&ctx->live_plans);
    long pools = atomic_load(&ctx->live_pools);
    if (allocs || streams || events || plans || pools)
        return attnrt_fail(ATTNRT_ERR_BUSY, "attnrt_close(%s): %ld allocation(s), %ld stream(s), %ld event(s), "
                           "%ld plan(s) and %ld state pool(s) are still live; free and destroy them first",
                           ctx->ref->name, allocs, streams, events, plans, pools);
    ctx->api->device_close(ctx->device);
    attnrt_alloc_table_destroy(&ctx->allocs);
    free(ctx);
    attnrt_registry_release();
    return ATTNRT_OK;
}

const char *attnrt_context_device_name(const attnrt_context_t *ctx) { return ctx ? ctx->ref->name : ""; }

/* ---- memory ---- */

attnrt_status_t attnrt_mem_alloc(attnrt_context_t *ctx, size_t bytes, void **ptr)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_mem_alloc");
    NEED(ptr, "attnrt_mem_alloc");
    if (bytes == 0) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_mem_alloc: bytes = 0; ask for at least 1");
    void *p = NULL;
    attnrt_status_t status = ctx->api->mem_alloc(ctx->device, bytes, &p);
    if (status != ATTNRT_OK) {
        char what[160];
        snprintf(what, sizeof what, "attnrt_mem_alloc(%s, %zu bytes)", ctx->ref->name, bytes);
        return attnrt_context_fail(ctx, status, what);
    }
    if (!p)
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "attnrt_mem_alloc(%s, %zu bytes): the %s plugin returned success with a "
                           "NULL pointer; the plugin is broken", ctx->ref->name, bytes, ctx->ref->plugin->name);
    if ((uintptr_t)p > UINTPTR_MAX - bytes) { /* an allocation must not wrap the address space */
        ctx->api->mem_free(ctx->device, p);
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "attnrt_mem_alloc(%s, %zu bytes): the %s plugin returned %p, whose end "
                           "wraps the address space; the plugin is broken", ctx->ref->name, bytes,
                           ctx->ref->plugin->name, p);
    }
    if (attnrt_alloc_table_insert(&ctx->allocs, p, bytes) != ATTNRT_OK) {
        ctx->api->mem_free(ctx->device, p);
        return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "attnrt_mem_alloc(%s, %zu bytes): out of host memory recording "
                           "the allocation", ctx->ref->name, bytes);
    }
    *ptr = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_mem_free(attnrt_context_t *ctx, void *ptr)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_mem_free");
    if (!ptr) return ATTNRT_OK;
    uintptr_t inside_base;
    size_t inside_bytes;
    if (!attnrt_alloc_table_remove(&ctx->allocs, ptr, &inside_base, &inside_bytes)) {
        if (inside_bytes)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_mem_free(%s): ptr %p points %zu bytes into the "
                               "%zu-byte allocation at %p; free the pointer attnrt_mem_alloc returned", ctx->ref->name,
                               ptr, (size_t)((uintptr_t)ptr - inside_base), inside_bytes, (void *)inside_base);
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_mem_free(%s): ptr %p is not a live allocation of this "
                           "context (freed already, or not from attnrt_mem_alloc on this context)", ctx->ref->name,
                           ptr);
    }
    ctx->api->mem_free(ctx->device, ptr);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_context_check_span(attnrt_context_t *ctx, const char *fn, const char *name, const void *data,
                                          uint64_t bytes)
{
    uintptr_t base;
    size_t size;
    if (!data || !attnrt_alloc_table_find(&ctx->allocs, data, &base, &size)) return ATTNRT_OK;
    uint64_t offset = (uint64_t)((uintptr_t)data - base);
    if (bytes <= size - offset) return ATTNRT_OK;
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s spans %llu bytes from offset %llu of its %zu-byte "
                       "allocation (attnrt_mem_alloc at %p): it runs %llu bytes past the end; check its shape and "
                       "strides", fn, name, (unsigned long long)bytes, (unsigned long long)offset, size, (void *)base,
                       (unsigned long long)(bytes - (size - offset)));
}

static attnrt_status_t copy(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes, uint32_t kind,
                            attnrt_stream_t *stream, const char *fn)
{
    attnrt_clear_error();
    NEED(ctx, fn);
    if (bytes == 0) return ATTNRT_OK;
    NEED(dst, fn);
    NEED(src, fn);
    if (stream && stream->ctx != ctx) return other_context(fn, "stream", stream->ctx, "ctx", ctx);
    attnrt_status_t status = ctx->api->mem_copy(ctx->device, dst, src, bytes, kind, stream ? stream->handle : NULL);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, fn);
}

attnrt_status_t attnrt_mem_copy_to_device(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes,
                                          attnrt_stream_t *stream)
{
    return copy(ctx, dst, src, bytes, ATTNRT_COPY_HOST_TO_DEVICE, stream, "attnrt_mem_copy_to_device");
}

attnrt_status_t attnrt_mem_copy_to_host(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes,
                                        attnrt_stream_t *stream)
{
    return copy(ctx, dst, src, bytes, ATTNRT_COPY_DEVICE_TO_HOST, stream, "attnrt_mem_copy_to_host");
}

attnrt_status_t attnrt_mem_copy_on_device(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes,
                                          attnrt_stream_t *stream)
{
    return copy(ctx, dst, src, bytes, ATTNRT_COPY_DEVICE_TO_DEVICE, stream, "attnrt_mem_copy_on_device");
}

attnrt_status_t attnrt_mem_set(attnrt_context_t *ctx, void *dst, int value, size_t bytes, attnrt_stream_t *stream)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_mem_set");
    if (bytes == 0) return ATTNRT_OK;
    NEED(dst, "attnrt_mem_set");
    if (stream && stream->ctx != ctx) /* as copy() does: another device's stream must not reach this plugin */
        return other_context("attnrt_mem_set", "stream", stream->ctx, "ctx", ctx);
    return attnrt_context_mem_set(ctx, dst, value, bytes, stream, "attnrt_mem_set");
}

attnrt_status_t attnrt_context_mem_set(attnrt_context_t *ctx, void *dst, int value, size_t bytes,
                                       attnrt_stream_t *stream, const char *fn)
{
    void *sh = stream ? stream->handle : NULL;
    if (ctx->api->mem_set) {
        attnrt_status_t status = ctx->api->mem_set(ctx->device, dst, value, bytes, sh);
        return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, fn);
    }
    /* Fallback for plugins without mem_set: copy a filled host buffer, chunk by chunk, in stream order;
     * the buffer must outlive the copies, hence the synchronize before it is freed. */
    enum { CHUNK = 1 << 16 };
    unsigned char *fill = malloc(CHUNK);
    if (!fill) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    memset(fill, value, CHUNK);
    attnrt_status_t status = ATTNRT_OK;
    for (size_t done = 0; done < bytes && status == ATTNRT_OK; done += CHUNK) {
        size_t n = bytes - done < CHUNK ? bytes - done : CHUNK;
        status = ctx->api->mem_copy(ctx->device, (char *)dst + done, fill, n, ATTNRT_COPY_HOST_TO_DEVICE, sh);
    }
    attnrt_status_t synced = ctx->api->stream_synchronize(ctx->device, sh);
    if (status == ATTNRT_OK) status = synced;
    free(fill);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, fn);
}

/* ---- streams ---- */

attnrt_status_t attnrt_stream_create(attnrt_context_t *ctx, attnrt_stream_t **stream)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_stream_create");
    NEED(stream, "attnrt_stream_create");
    attnrt_stream_t *s = calloc(1, sizeof *s);
    if (!s) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "attnrt_stream_create: out of memory");
    attnrt_status_t status = ctx->api->stream_create(ctx->device, &s->handle);
    if (status != ATTNRT_OK) {
        free(s);
        return attnrt_context_fail(ctx, status, "attnrt_stream_create");
    }
    s->ctx = ctx;
    atomic_fetch_add(&ctx->live_streams, 1);
    *stream = s;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_stream_destroy(attnrt_stream_t *stream)
{
    attnrt_clear_error();
    if (!stream) return ATTNRT_OK;
    attnrt_context_t *ctx = stream->ctx;
    ctx->api->stream_destroy(ctx->device, stream->handle);
    atomic_fetch_sub(&ctx->live_streams, 1);
    free(stream);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_stream_synchronize(attnrt_context_t *ctx, attnrt_stream_t *stream)
{
    attnrt_clear_error();
    if (!ctx && stream) ctx = stream->ctx;
    NEED(ctx, "attnrt_stream_synchronize");
    if (stream && stream->ctx != ctx)
        return other_context("attnrt_stream_synchronize", "stream", stream->ctx, "ctx", ctx);
    attnrt_status_t status = ctx->api->stream_synchronize(ctx->device, stream ? stream->handle : NULL);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, "attnrt_stream_synchronize");
}

/* ---- events ---- */

attnrt_status_t attnrt_event_create(attnrt_context_t *ctx, attnrt_event_t **event)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_event_create");
    NEED(event, "attnrt_event_create");
    if (!ctx->api->event_create || !ctx->api->event_destroy || !ctx->api->event_record || !ctx->api->event_elapsed_ms)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "attnrt_event_create: the %s plugin has no events (time on the "
                           "host after attnrt_stream_synchronize instead)", ctx->ref->plugin->name);
    attnrt_event_t *e = calloc(1, sizeof *e);
    if (!e) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "attnrt_event_create: out of memory");
    attnrt_status_t status = ctx->api->event_create(ctx->device, &e->handle);
    if (status != ATTNRT_OK) {
        free(e);
        return attnrt_context_fail(ctx, status, "attnrt_event_create");
    }
    e->ctx = ctx;
    atomic_fetch_add(&ctx->live_events, 1);
    *event = e;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_event_destroy(attnrt_event_t *event)
{
    attnrt_clear_error();
    if (!event) return ATTNRT_OK;
    event->ctx->api->event_destroy(event->ctx->device, event->handle);
    atomic_fetch_sub(&event->ctx->live_events, 1);
    free(event);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_event_record(attnrt_event_t *event, attnrt_stream_t *stream)
{
    attnrt_clear_error();
    NEED(event, "attnrt_event_record");
    attnrt_context_t *ctx = event->ctx;
    if (stream && stream->ctx != ctx) return other_context("attnrt_event_record", "stream", stream->ctx, "event", ctx);
    attnrt_status_t status = ctx->api->event_record(ctx->device, event->handle, stream ? stream->handle : NULL);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, "attnrt_event_record");
}

attnrt_status_t attnrt_event_elapsed_ms(attnrt_event_t *start, attnrt_event_t *end, float *ms)
{
    attnrt_clear_error();
    NEED(start, "attnrt_event_elapsed_ms");
    NEED(end, "attnrt_event_elapsed_ms");
    NEED(ms, "attnrt_event_elapsed_ms");
    if (start->ctx != end->ctx) return other_context("attnrt_event_elapsed_ms", "end", end->ctx, "start", start->ctx);
    attnrt_context_t *ctx = start->ctx;
    attnrt_status_t status = ctx->api->event_elapsed_ms(ctx->device, start->handle, end->handle, ms);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, "attnrt_event_elapsed_ms");
}

attnrt_status_t attnrt_context_fail(const attnrt_context_t *ctx, attnrt_status_t status, const char *what)
{
    return attnrt_plugin_fail(ctx->ref->plugin, status, what);
}
