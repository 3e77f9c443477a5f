/* Native streams and events: an engine's own device stream or event as an attnrt_stream_t / attnrt_event_t,
 * their native handles, and the waits that order libattnrt work with the engine's without blocking the host.
 * A wrapper is counted on its context like a created stream or event (attnrt_close refuses while it lives) and
 * destroyed by attnrt_stream_destroy / attnrt_event_destroy, whose plugin entries then free the wrapper only. */
#include <stdlib.h>

#include "context.h"

/* A plugin that leaves the entry NULL: cpu and npu_sim do, since their work is done when each call returns and
 * there is no device queue to wrap or export. */
static attnrt_status_t no_native(const attnrt_context_t *ctx, const char *fn, const char *things, const char *entry,
                                 const char *instead)
{
    return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: %s has no native %s (the %s plugin has no %s; a device whose work "
                       "completes within each call, as cpu and npu_sim, has none): %s", fn, ctx->ref->name, things,
                       ctx->ref->plugin->name, entry, instead);
}

/* Every event entry a wrapped event can reach (attnrt_event_record / _elapsed_ms / _destroy). */
static int has_events(const attnrt_plugin_api_t *api)
{
    return api->event_destroy && api->event_record && api->event_elapsed_ms;
}

attnrt_status_t attnrt_stream_wrap(attnrt_context_t *ctx, void *native, attnrt_stream_t **stream)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_stream_wrap");
    NEED(stream, "attnrt_stream_wrap");
    /* native may be NULL: on cuda that is the legacy default stream (torch's default stream reports 0), which a
     * wrapper turns into an asynchronous stream like any other; the plugin refuses a NULL it cannot use. */
    if (!ctx->api->stream_wrap)
        return no_native(ctx, "attnrt_stream_wrap", "streams", "stream_wrap",
                         "use the NULL stream or attnrt_stream_create");
    attnrt_stream_t *s = calloc(1, sizeof *s);
    if (!s) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "attnrt_stream_wrap: out of memory");
    attnrt_status_t status = ctx->api->stream_wrap(ctx->device, native, &s->handle);
    if (status != ATTNRT_OK) {
        free(s);
        return attnrt_context_fail(ctx, status, "attnrt_stream_wrap");
    }
    if (!s->handle) {
        free(s);
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "attnrt_stream_wrap(%s): the %s plugin returned success with a NULL "
                           "stream; the plugin is broken", ctx->ref->name, ctx->ref->plugin->name);
    }
    s->ctx = ctx;
    atomic_fetch_add(&ctx->live_streams, 1);
    *stream = s;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_stream_native(attnrt_context_t *ctx, attnrt_stream_t *stream, void **native)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_stream_native");
    NEED(native, "attnrt_stream_native");
    attnrt_status_t status = attnrt_check_stream_context("attnrt_stream_native", stream, ctx, "ctx");
    if (status != ATTNRT_OK) return status;
    if (!ctx->api->stream_native)
        return no_native(ctx, "attnrt_stream_native", "streams", "stream_native",
                         "its work is complete when each call returns");
    void *handle = NULL;
    status = ctx->api->stream_native(ctx->device, stream ? stream->handle : NULL, &handle);
    if (status != ATTNRT_OK) return attnrt_context_fail(ctx, status, "attnrt_stream_native");
    *native = handle;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_stream_wait_event(attnrt_stream_t *stream, attnrt_event_t *event)
{
    attnrt_clear_error();
    NEED(event, "attnrt_stream_wait_event");
    attnrt_context_t *ctx = event->ctx;
    attnrt_status_t status = attnrt_check_stream_context("attnrt_stream_wait_event", stream, ctx, "event");
    if (status != ATTNRT_OK) return status;
    if (!ctx->api->stream_wait_event)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "attnrt_stream_wait_event: %s cannot make a stream wait for an "
                           "event (the %s plugin has no stream_wait_event); wait on the host with "
                           "attnrt_stream_synchronize instead", ctx->ref->name, ctx->ref->plugin->name);
    status = ctx->api->stream_wait_event(ctx->device, stream ? stream->handle : NULL, event->handle);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, "attnrt_stream_wait_event");
}

attnrt_status_t attnrt_event_wrap(attnrt_context_t *ctx, void *native, attnrt_event_t **event)
{
    attnrt_clear_error();
    NEED(ctx, "attnrt_event_wrap");
    NEED(native, "attnrt_event_wrap");
    NEED(event, "attnrt_event_wrap");
    if (!ctx->api->event_wrap || !has_events(ctx->api))
        return no_native(ctx, "attnrt_event_wrap", "events", "event_wrap", "use attnrt_event_create");
    attnrt_event_t *e = calloc(1, sizeof *e);
    if (!e) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "attnrt_event_wrap: out of memory");
    attnrt_status_t status = ctx->api->event_wrap(ctx->device, native, &e->handle);
    if (status != ATTNRT_OK) {
        free(e);
        return attnrt_context_fail(ctx, status, "attnrt_event_wrap");
    }
    if (!e->handle) {
        free(e);
        return attnrt_fail(ATTNRT_ERR_PLUGIN, "attnrt_event_wrap(%s): the %s plugin returned success with a NULL "
                           "event; the plugin is broken", ctx->ref->name, ctx->ref->plugin->name);
    }
    e->ctx = ctx;
    atomic_fetch_add(&ctx->live_events, 1);
    *event = e;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_event_native(attnrt_event_t *event, void **native)
{
    attnrt_clear_error();
    NEED(event, "attnrt_event_native");
    NEED(native, "attnrt_event_native");
    attnrt_context_t *ctx = event->ctx;
    if (!ctx->api->event_native)
        return no_native(ctx, "attnrt_event_native", "events", "event_native",
                         "its work is complete when each call returns");
    void *handle = NULL;
    attnrt_status_t status = ctx->api->event_native(ctx->device, event->handle, &handle);
    if (status != ATTNRT_OK) return attnrt_context_fail(ctx, status, "attnrt_event_native");
    *native = handle;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_event_synchronize(attnrt_event_t *event)
{
    attnrt_clear_error();
    NEED(event, "attnrt_event_synchronize");
    attnrt_context_t *ctx = event->ctx;
    if (!ctx->api->event_synchronize)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "attnrt_event_synchronize: %s cannot wait for one event (the %s "
                           "plugin has no event_synchronize); use attnrt_stream_synchronize on the stream it was "
                           "recorded on", ctx->ref->name, ctx->ref->plugin->name);
    attnrt_status_t status = ctx->api->event_synchronize(ctx->device, event->handle);
    return status == ATTNRT_OK ? status : attnrt_context_fail(ctx, status, "attnrt_event_synchronize");
}
