/* native_plugin.c — a test plugin ("native", one device "native:0") whose streams and events are native objects
 * (fake_native.h) it can wrap and export, as a GPU plugin does with CUstream / CUevent, so the runtime's native
 * stream entries are tested without a GPU: wrappers counted on the context, destroyed without touching the native
 * object, handles passed through, the plugin's failures reported. Memory is host memory; no ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt_plugin.h"
#include "fake_native.h"
#include "plugin_entry.h"
#include "plugin_error.h"

#define HANDLE_MAGIC 0x48444c45u

/* A stream or event handle: the native object it stands for, and whether the plugin made (owns) it. */
typedef struct np_handle {
    uint32_t       magic;
    fake_native_t *native;
    int            owned;
} np_handle_t;

typedef struct np_device {
    fake_native_t default_stream; /* the NULL stream's native object */
} np_device_t;

static int plugin_token;

static attnrt_status_t np_probe(void) { return ATTNRT_OK; }

static attnrt_status_t np_init(const attnrt_host_api_t *host, void **plugin)
{
    (void)host;
    *plugin = &plugin_token;
    return ATTNRT_OK;
}

static void np_shutdown(void *plugin) { (void)plugin; }

static attnrt_status_t np_device_count(void *plugin, uint32_t *count)
{
    (void)plugin;
    *count = 1;
    return ATTNRT_OK;
}

static attnrt_status_t np_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    (void)plugin;
    if (index != 0) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native has one device; asked for %u", index);
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "native:0");
    snprintf(p.vendor, sizeof p.vendor, "attnrt tests");
    snprintf(p.model, sizeof p.model, "native streams");
    snprintf(p.arch, sizeof p.arch, "none");
    p.device_type = ATTNRT_DEVICE_TYPE_EXTDEV;
    p.compute_units = 1;
    p.memory_total = p.memory_free = (uint64_t)1 << 30;
    size_t caller = props->struct_size, n = caller < sizeof p ? caller : sizeof p;
    memcpy(props, &p, n);
    props->struct_size = caller;
    return ATTNRT_OK;
}

static attnrt_status_t np_device_open(void *plugin, uint32_t index, void **device)
{
    (void)plugin;
    if (index != 0) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native has one device; asked for %u", index);
    np_device_t *d = calloc(1, sizeof *d);
    if (!d) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "native:0: out of memory");
    d->default_stream.magic = FAKE_NATIVE_MAGIC;
    d->default_stream.is_default = 1;
    *device = d;
    return ATTNRT_OK;
}

static void np_device_close(void *device) { free(device); }

static attnrt_status_t np_mem_alloc(void *device, size_t bytes, void **ptr)
{
    (void)device;
    *ptr = malloc(bytes);
    return *ptr ? ATTNRT_OK : plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "native:0: out of memory for %zu bytes", bytes);
}

static void np_mem_free(void *device, void *ptr)
{
    (void)device;
    free(ptr);
}

static attnrt_status_t np_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind, void *stream)
{
    (void)device, (void)kind, (void)stream;
    memmove(dst, src, bytes);
    return ATTNRT_OK;
}

static attnrt_status_t handle_new(fake_native_t *native, int owned, void **out)
{
    np_handle_t *h = calloc(1, sizeof *h);
    if (!h) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "native:0: out of memory for a handle");
    h->magic = HANDLE_MAGIC;
    h->native = native;
    h->owned = owned;
    *out = h;
    return ATTNRT_OK;
}

/* The plugin's own native object, for a created stream or event. */
static attnrt_status_t create(void **out)
{
    fake_native_t *n = calloc(1, sizeof *n);
    if (!n) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "native:0: out of memory");
    n->magic = FAKE_NATIVE_MAGIC;
    n->owned = 1;
    attnrt_status_t st = handle_new(n, 1, out);
    if (st != ATTNRT_OK) free(n);
    return st;
}

/* The handle's native object (the default stream's for NULL); NULL when the handle is not one of ours. */
static fake_native_t *native_of(void *device, void *handle)
{
    if (!handle) return &((np_device_t *)device)->default_stream;
    np_handle_t *h = handle;
    return h->magic == HANDLE_MAGIC && h->native && h->native->magic == FAKE_NATIVE_MAGIC ? h->native : NULL;
}

/* stream_destroy and event_destroy: a wrapper frees itself only; an owned one destroys its native object too. */
static void handle_destroy(void *device, void *handle)
{
    (void)device;
    np_handle_t *h = handle;
    if (!h || h->magic != HANDLE_MAGIC) return;
    if (h->owned) {
        h->native->magic = 0;
        free(h->native);
    } else {
        h->native->unwraps++;
    }
    h->magic = 0;
    free(h);
}

static attnrt_status_t wrap(void *native, void **out)
{
    fake_native_t *n = native;
    if (!n || n->magic != FAKE_NATIVE_MAGIC)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: %p is not a native object of this device", native);
    if (n->refuse) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: refuses to wrap %p (test knob)", native);
    if (n->null_handle) {
        *out = NULL;
        return ATTNRT_OK;
    }
    attnrt_status_t st = handle_new(n, 0, out);
    if (st == ATTNRT_OK) n->wraps++;
    return st;
}

static attnrt_status_t np_stream_create(void *device, void **stream)
{
    (void)device;
    return create(stream);
}

static attnrt_status_t np_stream_synchronize(void *device, void *stream)
{
    return native_of(device, stream) ? ATTNRT_OK : plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: bad stream");
}

static attnrt_status_t np_event_create(void *device, void **event)
{
    (void)device;
    return create(event);
}

static attnrt_status_t np_event_record(void *device, void *event, void *stream)
{
    fake_native_t *e = native_of(device, event);
    if (!event || !e || !native_of(device, stream))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: bad event or stream");
    e->records++;
    return ATTNRT_OK;
}

static attnrt_status_t np_event_elapsed_ms(void *device, void *start, void *end, float *ms)
{
    (void)device, (void)start, (void)end;
    *ms = 0.0f;
    return ATTNRT_OK;
}

static attnrt_status_t np_stream_wrap(void *device, void *native, void **stream)
{
    (void)device;
    return wrap(native, stream);
}

static attnrt_status_t np_stream_native(void *device, void *stream, void **native)
{
    fake_native_t *n = native_of(device, stream);
    if (!n) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: bad stream");
    *native = n;
    return ATTNRT_OK;
}

static attnrt_status_t np_stream_wait_event(void *device, void *stream, void *event)
{
    fake_native_t *s = native_of(device, stream), *e = native_of(device, event);
    if (!s || !event || !e) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: bad stream or event");
    s->waits++;
    s->waited_for = e;
    return ATTNRT_OK;
}

static attnrt_status_t np_event_wrap(void *device, void *native, void **event)
{
    (void)device;
    return wrap(native, event);
}

static attnrt_status_t np_event_native(void *device, void *event, void **native)
{
    fake_native_t *n = event ? native_of(device, event) : NULL;
    if (!n) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: bad event");
    *native = n;
    return ATTNRT_OK;
}

static attnrt_status_t np_event_synchronize(void *device, void *event)
{
    fake_native_t *n = event ? native_of(device, event) : NULL;
    if (!n) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "native:0: bad event");
    n->syncs++;
    return ATTNRT_OK;
}

static const attnrt_plugin_api_t np_api = {
    PLUGIN_API_HEAD("native", "1.0.0"),
    .probe = np_probe, .init = np_init, .shutdown = np_shutdown, .device_count = np_device_count,
    .device_properties = np_device_properties, .device_open = np_device_open, .device_close = np_device_close,
    .mem_alloc = np_mem_alloc, .mem_free = np_mem_free, .mem_copy = np_mem_copy,
    .stream_create = np_stream_create, .stream_destroy = handle_destroy, .stream_synchronize = np_stream_synchronize,
    .event_create = np_event_create, .event_destroy = handle_destroy, .event_record = np_event_record,
    .event_elapsed_ms = np_event_elapsed_ms,
    .stream_wrap = np_stream_wrap, .stream_native = np_stream_native, .stream_wait_event = np_stream_wait_event,
    .event_wrap = np_event_wrap, .event_native = np_event_native, .event_synchronize = np_event_synchronize,
};

PLUGIN_DEFINE_ENTRY(np_api)
