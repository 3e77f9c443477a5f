/* hostdev_plugin.c — an out-of-tree libattnrt plugin, as a vendor writes one: lifecycle, one device
 * ("hostdev:0") whose memory is host memory and whose streams are synchronous, and the vtable. Its ops
 * (kv_write and merge_states over f32) are in hostdev_ops.c. docs/plugin-guide.md walks through it.
 *
 * Built by its own meson.build against the headers pkg-config's `attnrt-plugin` names, never linked
 * with libattnrt: the runtime calls the plugin, never the other way round. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sysconf's physical-page counts */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostdev.h"

#define HOSTDEV_ALIGN 256 /* mem_alloc's promise (attnrt_plugin.h) */

/* ---- errors ----------------------------------------------------------------------------------- */

static _Thread_local char hostdev_message[512];

attnrt_status_t hostdev_fail(attnrt_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hostdev_message, sizeof hostdev_message, fmt, ap);
    va_end(ap);
    return status;
}

/* The runtime calls this right after a failed call, on the same thread. */
static size_t hostdev_last_error(char *buf, size_t cap)
{
    if (buf && cap) snprintf(buf, cap, "%s", hostdev_message);
    return strlen(hostdev_message);
}

/* ---- lifecycle -------------------------------------------------------------------------------- */

static int hostdev_handle; /* init's handle: this plugin keeps no global state */

/* Cheap and initialising nothing. A real plugin dlopen()s its driver here and asks it for a device;
 * on failure: ATTNRT_ERR_NO_DEVICE and one line saying what to install. */
static attnrt_status_t hostdev_probe(void) { return ATTNRT_OK; }

static attnrt_status_t hostdev_init(const attnrt_host_api_t *host, void **plugin)
{
    if (host && host->log) host->log(ATTNRT_LOG_DEBUG, HOSTDEV_NAME, "init: one host-memory device");
    *plugin = &hostdev_handle;
    return ATTNRT_OK;
}

static void hostdev_shutdown(void *plugin) { (void)plugin; }

/* ---- devices ---------------------------------------------------------------------------------- */

static attnrt_status_t hostdev_device_count(void *plugin, uint32_t *count)
{
    (void)plugin;
    *count = 1;
    return ATTNRT_OK;
}

static attnrt_status_t check_index(uint32_t index)
{
    return index == 0 ? ATTNRT_OK
                      : hostdev_fail(ATTNRT_ERR_INVALID_ARGUMENT, HOSTDEV_NAME " has one device; asked for %u", index);
}

static attnrt_status_t hostdev_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    /* The plugin names its devices; the runtime keeps the name (or forms "<plugin>:<index>" if it is empty). */
    snprintf(p.name, sizeof p.name, HOSTDEV_NAME ":%u", index);
    snprintf(p.vendor, sizeof p.vendor, "libattnrt example vendor");
    snprintf(p.model, sizeof p.model, "host-memory device (kv_write, merge_states; f32)");
    snprintf(p.arch, sizeof p.arch, "host");
    /* EXTDEV: an accelerator engines use only when asked for by name, never the default device. */
    p.device_type = ATTNRT_DEVICE_TYPE_EXTDEV;
    p.compute_units = 1;
    const long page = sysconf(_SC_PAGESIZE), total = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    p.memory_total = page > 0 && total > 0 ? (uint64_t)page * (uint64_t)total : 0;
    p.memory_free = page > 0 && avail > 0 ? (uint64_t)page * (uint64_t)avail : 0;
    /* Write only what the caller's struct_size covers: a caller built against an older header has less. */
    p.struct_size = props->struct_size;
    memcpy(props, &p, props->struct_size < sizeof p ? props->struct_size : sizeof p);
    return ATTNRT_OK;
}

static attnrt_status_t hostdev_device_open(void *plugin, uint32_t index, void **device)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    hostdev_device_t *d = calloc(1, sizeof *d);
    if (!d) return hostdev_fail(ATTNRT_ERR_OUT_OF_MEMORY, HOSTDEV_NAME ":%u: out of memory opening it", index);
    d->index = index;
    *device = d;
    return ATTNRT_OK;
}

static void hostdev_device_close(void *device) { free(device); }

/* ---- memory: host memory stands for device memory --------------------------------------------- */

static attnrt_status_t hostdev_mem_alloc(void *device, size_t bytes, void **ptr)
{
    (void)device;
    const size_t rounded = (bytes + HOSTDEV_ALIGN - 1) / HOSTDEV_ALIGN * HOSTDEV_ALIGN;
    void *p = rounded >= bytes ? aligned_alloc(HOSTDEV_ALIGN, rounded) : NULL;
    if (!p) return hostdev_fail(ATTNRT_ERR_OUT_OF_MEMORY, HOSTDEV_NAME ":0: cannot allocate %zu bytes", bytes);
    *ptr = p;
    return ATTNRT_OK;
}

static void hostdev_mem_free(void *device, void *ptr)
{
    (void)device;
    free(ptr);
}

static attnrt_status_t hostdev_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind,
                                        void *stream)
{
    (void)device;
    (void)stream; /* synchronous: the copy is done when the call returns */
    if (kind < ATTNRT_COPY_HOST_TO_DEVICE || kind > ATTNRT_COPY_DEVICE_TO_DEVICE)
        return hostdev_fail(ATTNRT_ERR_INVALID_ARGUMENT, HOSTDEV_NAME ":0: copy kind %u is not an attnrt_copy_kind",
                            kind);
    memmove(dst, src, bytes);
    return ATTNRT_OK;
}

/* ---- streams: a synchronous device ------------------------------------------------------------
 * Every call completes on the caller's thread before it returns, whatever the stream. stream_create
 * still returns a distinct non-NULL handle (the runtime tracks streams per context), synchronize has
 * nothing to wait for, and the native-stream, event and capacity entries stay NULL. */

typedef struct hostdev_stream {
    int unused;
} hostdev_stream_t;

static attnrt_status_t hostdev_stream_create(void *device, void **stream)
{
    (void)device;
    hostdev_stream_t *s = calloc(1, sizeof *s);
    if (!s) return hostdev_fail(ATTNRT_ERR_OUT_OF_MEMORY, HOSTDEV_NAME ":0: out of memory creating a stream");
    *stream = s;
    return ATTNRT_OK;
}

static void hostdev_stream_destroy(void *device, void *stream)
{
    (void)device;
    free(stream);
}

static attnrt_status_t hostdev_stream_synchronize(void *device, void *stream)
{
    (void)device;
    (void)stream;
    return ATTNRT_OK;
}

/* ---- the vtable and the one exported symbol --------------------------------------------------- */

static const attnrt_plugin_api_t hostdev_api = {
    .struct_size        = ATTNRT_PLUGIN_API_STRUCT_SIZE,
    .abi_major          = ATTNRT_ABI_MAJOR,
    .abi_minor          = ATTNRT_ABI_MINOR,
    .name               = HOSTDEV_NAME,
    .version            = HOSTDEV_VERSION,
    .probe              = hostdev_probe,
    .init               = hostdev_init,
    .shutdown           = hostdev_shutdown,
    .last_error         = hostdev_last_error,
    .device_count       = hostdev_device_count,
    .device_properties  = hostdev_device_properties,
    .device_open        = hostdev_device_open,
    .device_close       = hostdev_device_close,
    .mem_alloc          = hostdev_mem_alloc,
    .mem_free           = hostdev_mem_free,
    .mem_copy           = hostdev_mem_copy,
    .stream_create      = hostdev_stream_create,
    .stream_destroy     = hostdev_stream_destroy,
    .stream_synchronize = hostdev_stream_synchronize,
    .op_supported       = hostdev_op_supported,
    .kv_write           = hostdev_kv_write,
    .merge_states       = hostdev_merge_states,
    /* Every other entry NULL: no attributes, mem_set done by the runtime with copies, no events (tools
     * time on the host), no attention, MLA or linear ops, no native streams, no capacity plans. */
};

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor);

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* any minor of our major: each side reads only what both know */
    if (host_abi_major != ATTNRT_ABI_MAJOR) {
        hostdev_fail(ATTNRT_ERR_ABI_MISMATCH, HOSTDEV_NAME " speaks plugin ABI %d.x, the runtime %u.x",
                     ATTNRT_ABI_MAJOR, host_abi_major);
        return NULL;
    }
    return &hostdev_api;
}
