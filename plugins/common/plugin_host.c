/* plugin_host.c — see plugin_host.h. */
#include "plugin_host.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin_error.h"

typedef struct host_stream { int unused; } host_stream_t;           /* work runs on the calling thread */
typedef struct host_event { double ticks; int recorded; } host_event_t;

static const plugin_host_device_t *head_of(const void *device) { return device; }

double plugin_host_clock_ms(void *device)
{
    (void)device;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

attnrt_status_t plugin_one_device_count(void *plugin, uint32_t *count)
{
    (void)plugin;
    *count = 1;
    return ATTNRT_OK;
}

attnrt_status_t plugin_one_device_index(const char *plugin, const char *device, uint32_t index)
{
    if (index == 0) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s has one device (%s); asked for %u", plugin, device, index);
}

attnrt_status_t plugin_host_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind,
                                     void *stream)
{
    (void)stream;
    if (kind < ATTNRT_COPY_HOST_TO_DEVICE || kind > ATTNRT_COPY_DEVICE_TO_DEVICE)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: copy kind %u is not an attnrt_copy_kind",
                           head_of(device)->name, kind);
    if (bytes) memmove(dst, src, bytes);
    return ATTNRT_OK;
}

attnrt_status_t plugin_host_mem_set(void *device, void *dst, int value, size_t bytes, void *stream)
{
    (void)device;
    (void)stream;
    if (bytes) memset(dst, value, bytes);
    return ATTNRT_OK;
}

/* A zeroed handle of `bytes` for a stream or an event (`what`). */
static attnrt_status_t handle_new(void *device, size_t bytes, const char *what, void **handle)
{
    void *h = calloc(1, bytes);
    if (!h) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory creating %s", head_of(device)->name, what);
    *handle = h;
    return ATTNRT_OK;
}

attnrt_status_t plugin_host_stream_create(void *device, void **stream)
{
    return handle_new(device, sizeof(host_stream_t), "a stream", stream);
}

void plugin_host_handle_destroy(void *device, void *handle)
{
    (void)device;
    free(handle);
}

attnrt_status_t plugin_host_stream_synchronize(void *device, void *stream)
{
    (void)device;
    (void)stream;
    return ATTNRT_OK; /* every call already completed on the caller's thread */
}

attnrt_status_t plugin_host_event_create(void *device, void **event)
{
    return handle_new(device, sizeof(host_event_t), "an event", event);
}

attnrt_status_t plugin_host_event_record(void *device, void *event, void *stream)
{
    (void)stream;
    host_event_t *e = event;
    e->ticks = head_of(device)->clock(device);
    e->recorded = 1;
    return ATTNRT_OK;
}

attnrt_status_t plugin_host_stream_wait_event(void *device, void *stream, void *event)
{
    (void)device;
    (void)stream;
    (void)event;
    return ATTNRT_OK; /* the work recorded before the event completed within its own call */
}

attnrt_status_t plugin_host_event_synchronize(void *device, void *event)
{
    (void)device;
    (void)event;
    return ATTNRT_OK; /* likewise: nothing recorded before it can still be running */
}

attnrt_status_t plugin_host_event_elapsed_ms(void *device, void *start, void *end, float *ms)
{
    const host_event_t *a = start, *b = end;
    if (!a->recorded || !b->recorded)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: elapsed time asked of an event never recorded",
                           head_of(device)->name);
    *ms = (float)((b->ticks - a->ticks) * head_of(device)->ms_per_tick);
    return ATTNRT_OK;
}
