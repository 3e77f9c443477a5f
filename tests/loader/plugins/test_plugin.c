/*
 * A purpose-built plugin for the loader tests. One source; Meson builds each variant with macros:
 *   TP_NAME="basic"    the plugin's name; its devices are "<name>:<i>" (the file is attnrt_<name>.so)
 *   TP_DEVICES=n       number of devices (default 1; 0 is legal)
 *   TP_ABI_MAJOR=n     declares another ABI major (the runtime must refuse it); TP_ABI_MINOR=n likewise
 *   TP_OLDER_MINOR     abi_minor 0 and struct_size exactly ABI 1.0's; the 1.1 entry merge_states lies
 *                      beyond that size and is poisoned (a call counts a violation)
 *   TP_NEWER_MINOR     abi_minor MINOR+1 and extra appended entries the runtime must ignore
 *   TP_TINY_VTABLE     struct_size too small to hold the ABI 1.0 entries
 *   TP_NULL_REQUIRED   device_open is NULL
 *   TP_NULL_OPTIONAL   device_attribute, mem_set, the event entries, op_supported and the ops are NULL
 *   TP_NO_NAME         name is NULL
 *   TP_PROBE_FAILS / TP_INIT_FAILS / TP_COUNT_FAILS   that step fails with a message
 *   TP_NO_ENTRY        exports no attnrt_plugin_get_api (only some other symbol)
 *   TP_RETURNS_NULL    attnrt_plugin_get_api returns NULL
 *   TP_PLANNER         supports every op; paged attention, MLA, lightning and gated delta plans ask for a
 *                      workspace (test_plugin_planner.c, linked into this variant only)
 * Plugins that return what the runtime must not accept:
 *   TP_CLAIMS_NAME="x" the plugin calls itself "x" (another plugin's name), whatever its file is called
 *   TP_DEVICE_NAME="x" every device calls itself "x" (another plugin's device, or its own twin)
 *   TP_UNTERMINATED_NAME  device names fill all ATTNRT_NAME_MAX bytes with no NUL
 *   TP_ODD_STATUS      mem_alloc returns 1 and stream_create -77: codes that are not attnrt_status_t values
 *   TP_NULL_ALLOC      mem_alloc returns ATTNRT_OK with a NULL pointer
 * Device memory is host memory from aligned_alloc. Every object is counted, and every contract break
 * the plugin can see (a foreign stream, a device closed with live objects) counts as a "violation";
 * the counts are the device attributes below, so the tests can see leaks. Environment knobs:
 *   TP_FAIL_ALLOC_AT=N  (read at init) the Nth mem_alloc fails with OUT_OF_MEMORY: fault injection
 *   TP_TRACE=<file>     probe / init / shutdown append "<name> <step>" lines to it, so the lifecycle
 *                       stays visible after the runtime has unloaded the plugin
 *   TP_SLOW_MS=N        device_properties and device_open append "<name> inside <entry>" to TP_TRACE and
 *                       then take N ms, so a test can act while a call is inside the plugin
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnrt_plugin.h"
#include "plugin_error.h"
#ifdef TP_PLANNER
#include "test_plugin_planner.h"
#endif

#ifndef TP_NAME
#error "TP_NAME must name the variant"
#endif
#ifndef TP_DEVICES
#define TP_DEVICES 1
#endif
#ifndef TP_ABI_MAJOR
#define TP_ABI_MAJOR ATTNRT_ABI_MAJOR
#endif
#if defined(TP_ABI_MINOR)
/* given by the build */
#elif defined(TP_NEWER_MINOR)
#define TP_ABI_MINOR (ATTNRT_ABI_MINOR + 1)
#elif defined(TP_OLDER_MINOR)
#define TP_ABI_MINOR 0
#else
#define TP_ABI_MINOR ATTNRT_ABI_MINOR
#endif

#define TP_ALIGN        256
#define TP_MEMORY_TOTAL ((uint64_t)1 << 30)
#define TP_EVENT_TICK_MS 0.25f /* each record advances the device's fake clock by this much */

enum { DEVICE_MAGIC = 0x7e57de00, BLOCK_MAGIC = 0x7e57b10c, STREAM_MAGIC = 0x7e5757e0, EVENT_MAGIC = 0x7e57e7e0 };

static const uint32_t tp_device_count = TP_DEVICES; /* a variable, so TP_DEVICES=0 compares cleanly */

/* Process-wide counts (a plugin is loaded once); read through the device attributes. */
static atomic_long live_inits, open_devices, live_allocs, live_streams, live_events, violations, alloc_calls;
static atomic_long op_calls __attribute__((unused)); /* unused where the op entries are NULL */
static atomic_ullong bytes_in_use;
static uint32_t seen_host_major, seen_host_minor; /* what attnrt_plugin_get_api was given */

typedef struct tp_plugin {
    const attnrt_host_api_t *host; /* borrowed until shutdown */
    long                     fail_alloc_at;
} tp_plugin_t;

static tp_plugin_t *the_plugin; /* what init returned; mem_alloc reads the fault knob from it */

typedef struct tp_device {
    uint32_t    magic, index;
    atomic_long allocs, streams, events;
    atomic_uint clock; /* fake event clock, in ticks */
} tp_device_t;

typedef struct tp_block { uint32_t magic; tp_device_t *dev; size_t bytes; } tp_block_t;
typedef struct tp_stream { uint32_t magic; tp_device_t *dev; } tp_stream_t;
typedef struct tp_event { uint32_t magic; tp_device_t *dev; unsigned stamp; int recorded; } tp_event_t;

static void violation(void) { atomic_fetch_add(&violations, 1); }

static void trace(const char *step)
{
    const char *path = getenv("TP_TRACE");
    FILE *f = path && path[0] ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s %s\n", TP_NAME, step);
    fclose(f);
}

/* TP_SLOW_MS: says that `entry` is running, then keeps it running for that long. */
static void slow_entry(const char *entry)
{
    const char *knob = getenv("TP_SLOW_MS");
    long ms = knob ? strtol(knob, NULL, 10) : 0;
    if (ms <= 0) return;
    char step[64];
    snprintf(step, sizeof step, "inside %s", entry);
    trace(step);
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {}
}

/* ---- lifecycle ---- */

static attnrt_status_t tp_probe(void)
{
    trace("probe");
#ifdef TP_PROBE_FAILS
    return plugin_fail(ATTNRT_ERR_NO_DEVICE, "tp-probe: no fake driver here (built with TP_PROBE_FAILS)");
#else
    return ATTNRT_OK;
#endif
}

static attnrt_status_t tp_init(const attnrt_host_api_t *host, void **plugin)
{
    trace("init");
#ifdef TP_INIT_FAILS
    (void)host;
    (void)plugin;
    return plugin_fail(ATTNRT_ERR_DEVICE, "tp-init: the fake driver refused to start (built with TP_INIT_FAILS)");
#else
    if (!host || host->struct_size < ATTNRT_HOST_API_STRUCT_SIZE || host->abi_major != ATTNRT_ABI_MAJOR || !host->log)
        violation();
    tp_plugin_t *p = calloc(1, sizeof *p); /* heap, so a missing shutdown shows as a leak */
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp-init: out of memory");
    p->host = host;
    const char *knob = getenv("TP_FAIL_ALLOC_AT");
    p->fail_alloc_at = knob ? strtol(knob, NULL, 10) : 0;
    atomic_store(&alloc_calls, 0);
    atomic_fetch_add(&live_inits, 1);
    if (host && host->log) host->log(ATTNRT_LOG_DEBUG, TP_NAME, "tp-init: ready");
    the_plugin = p;
    *plugin = p;
    return ATTNRT_OK;
#endif
}

static void tp_shutdown(void *plugin)
{
    tp_plugin_t *p = plugin;
    trace("shutdown");
    if (p != the_plugin) violation();
    if (atomic_load(&open_devices) || atomic_load(&live_allocs) || atomic_load(&live_streams) ||
        atomic_load(&live_events)) {
        violation();
        if (p && p->host && p->host->log)
            p->host->log(ATTNRT_LOG_ERROR, TP_NAME, "tp-shutdown: called while devices or objects are still live");
    }
    atomic_fetch_sub(&live_inits, 1);
    the_plugin = NULL;
    free(p);
}

/* ---- devices ---- */

static attnrt_status_t tp_device_count_fn(void *plugin, uint32_t *count)
{
    if (plugin != the_plugin) violation();
#ifdef TP_COUNT_FAILS
    (void)count;
    return plugin_fail(ATTNRT_ERR_DEVICE, "tp-count: the fake driver lost its devices (built with TP_COUNT_FAILS)");
#else
    *count = tp_device_count;
    return ATTNRT_OK;
#endif
}

static attnrt_status_t check_index(uint32_t index)
{
    if (index < tp_device_count) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "tp: plugin %s has %u device(s); asked for %u", TP_NAME,
                       tp_device_count, index);
}

enum { ATTR_LIVE_ALLOCS, ATTR_LIVE_STREAMS, ATTR_LIVE_EVENTS, ATTR_OPEN_DEVICES, ATTR_LIVE_INITS, ATTR_VIOLATIONS,
       ATTR_ALLOC_CALLS, ATTR_OP_CALLS, ATTR_HOST_ABI, ATTR_COUNT_ };

static attnrt_status_t tp_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    if (props->struct_size < ATTNRT_DEVICE_PROPERTIES_STRUCT_SIZE) violation(); /* the runtime passes a full one */
    slow_entry("device_properties");
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
#if defined(TP_UNTERMINATED_NAME)
    memset(p.name, 'x', sizeof p.name);
#elif defined(TP_DEVICE_NAME)
    snprintf(p.name, sizeof p.name, "%s", TP_DEVICE_NAME);
#else
    snprintf(p.name, sizeof p.name, "%s:%u", TP_NAME, index);
#endif
    snprintf(p.vendor, sizeof p.vendor, "attnrt tests");
    snprintf(p.model, sizeof p.model, "fake device %u", index);
    snprintf(p.arch, sizeof p.arch, "none");
    snprintf(p.driver, sizeof p.driver, "tp-driver 1.0");
    p.device_type = ATTNRT_DEVICE_TYPE_EXTDEV;
    p.compute_units = 4;
    p.memory_total = TP_MEMORY_TOTAL;
    p.memory_free = TP_MEMORY_TOTAL - atomic_load(&bytes_in_use);
#ifdef TP_NULL_OPTIONAL
    p.attribute_count = 0;
#else
    p.attribute_count = ATTR_COUNT_;
#endif
    size_t caller = props->struct_size, n = caller < sizeof p ? caller : sizeof p;
    memcpy(props, &p, n);
    props->struct_size = caller;
    return ATTNRT_OK;
}

#ifndef TP_NULL_OPTIONAL
static attnrt_status_t tp_device_attribute(void *plugin, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    static const char *const keys[ATTR_COUNT_] = {"live_allocations", "live_streams", "live_events", "open_devices",
                                                  "live_inits", "violations", "alloc_calls", "op_calls",
                                                  "host_abi"};
    if (i >= ATTR_COUNT_)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "tp: %s:%u has %d attributes; asked for attribute %u", TP_NAME,
                           index, ATTR_COUNT_, i);
    atomic_long *counts[] = {&live_allocs, &live_streams, &live_events, &open_devices, &live_inits, &violations,
                             &alloc_calls, &op_calls};
    snprintf(attr->key, sizeof attr->key, "%s", keys[i]);
    if (i == ATTR_HOST_ABI)
        snprintf(attr->value, sizeof attr->value, "%u.%u", seen_host_major, seen_host_minor);
    else
        snprintf(attr->value, sizeof attr->value, "%ld", atomic_load(counts[i]));
    return ATTNRT_OK;
}
#endif

#ifndef TP_NULL_REQUIRED
static attnrt_status_t tp_device_open(void *plugin, uint32_t index, void **device)
{
    if (plugin != the_plugin) violation();
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    slow_entry("device_open");
    tp_device_t *d = calloc(1, sizeof *d);
    if (!d) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: out of memory opening %s:%u", TP_NAME, index);
    d->magic = DEVICE_MAGIC;
    d->index = index;
    atomic_fetch_add(&open_devices, 1);
    *device = d;
    return ATTNRT_OK;
}
#endif

static tp_device_t *as_device(void *device)
{
    tp_device_t *d = device;
    if (!d || d->magic != DEVICE_MAGIC) violation();
    return d;
}

static void tp_device_close(void *device)
{
    tp_device_t *d = as_device(device);
    if (atomic_load(&d->allocs) || atomic_load(&d->streams) || atomic_load(&d->events)) violation();
    d->magic = 0;
    atomic_fetch_sub(&open_devices, 1);
    free(d);
}

/* A stream handed to device `d` must be NULL or one of d's streams. */
static attnrt_status_t check_stream(tp_device_t *d, void *stream, const char *what)
{
    const tp_stream_t *s = stream;
    if (!s || (s->magic == STREAM_MAGIC && s->dev == d)) return ATTNRT_OK;
    violation();
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "tp: %s on %s:%u was given a stream of another device", what,
                       TP_NAME, d->index);
}

/* ---- memory ---- */

static attnrt_status_t tp_mem_alloc(void *device, size_t bytes, void **ptr)
{
    tp_device_t *d = as_device(device);
    long call = atomic_fetch_add(&alloc_calls, 1) + 1;
    if (bytes == 0) violation(); /* the runtime rejects 0 before it reaches us */
    if (the_plugin && the_plugin->fail_alloc_at == call)
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: injected failure of allocation #%ld on %s:%u "
                           "(TP_FAIL_ALLOC_AT=%ld)", call, TP_NAME, d->index, call);
#if defined(TP_ODD_STATUS)
    plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: %s:%u answers mem_alloc with 1 (built with TP_ODD_STATUS)", TP_NAME,
                d->index);
    return (attnrt_status_t)1;
#elif defined(TP_NULL_ALLOC)
    *ptr = NULL;
    return ATTNRT_OK;
#endif
    if (bytes > TP_MEMORY_TOTAL - atomic_load(&bytes_in_use))
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: %s:%u has no room for %zu bytes of fake device memory",
                           TP_NAME, d->index, bytes);
    size_t rounded = (bytes + TP_ALIGN - 1) / TP_ALIGN * TP_ALIGN;
    unsigned char *raw = aligned_alloc(TP_ALIGN, TP_ALIGN + rounded); /* header block, then the memory */
    if (!raw) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: host out of memory for %zu bytes", bytes);
    tp_block_t *b = (tp_block_t *)raw;
    b->magic = BLOCK_MAGIC;
    b->dev = d;
    b->bytes = bytes;
    memset(raw + TP_ALIGN, 0xCD, rounded); /* fresh device memory is garbage, never zero by luck */
    atomic_fetch_add(&bytes_in_use, bytes);
    atomic_fetch_add(&d->allocs, 1);
    atomic_fetch_add(&live_allocs, 1);
    *ptr = raw + TP_ALIGN;
    return ATTNRT_OK;
}

static void tp_mem_free(void *device, void *ptr)
{
    tp_device_t *d = as_device(device);
    if (!ptr) return;
    tp_block_t *b = (tp_block_t *)((unsigned char *)ptr - TP_ALIGN);
    if (b->magic != BLOCK_MAGIC || b->dev != d) {
        violation(); /* not ours, or another device's: leave it alone */
        return;
    }
    b->magic = 0;
    atomic_fetch_sub(&bytes_in_use, b->bytes);
    atomic_fetch_sub(&d->allocs, 1);
    atomic_fetch_sub(&live_allocs, 1);
    free(b);
}

static attnrt_status_t tp_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind, void *stream)
{
    tp_device_t *d = as_device(device);
    if (kind < ATTNRT_COPY_HOST_TO_DEVICE || kind > ATTNRT_COPY_DEVICE_TO_DEVICE) {
        violation();
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "tp: copy kind %u is not an attnrt_copy_kind", kind);
    }
    attnrt_status_t st = check_stream(d, stream, "mem_copy");
    if (st != ATTNRT_OK) return st;
    memmove(dst, src, bytes);
    return ATTNRT_OK;
}

#ifndef TP_NULL_OPTIONAL
static attnrt_status_t tp_mem_set(void *device, void *dst, int value, size_t bytes, void *stream)
{
    tp_device_t *d = as_device(device);
    attnrt_status_t st = check_stream(d, stream, "mem_set");
    if (st != ATTNRT_OK) return st;
    memset(dst, value, bytes);
    return ATTNRT_OK;
}
#endif

/* ---- streams and events ---- */

static attnrt_status_t tp_stream_create(void *device, void **stream)
{
    tp_device_t *d = as_device(device);
#ifdef TP_ODD_STATUS
    plugin_fail(ATTNRT_ERR_DEVICE, "tp: %s:%u answers stream_create with -77 (built with TP_ODD_STATUS)", TP_NAME,
                d->index);
    return (attnrt_status_t)-77;
#endif
    tp_stream_t *s = calloc(1, sizeof *s);
    if (!s) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: out of memory creating a stream");
    s->magic = STREAM_MAGIC;
    s->dev = d;
    atomic_fetch_add(&d->streams, 1);
    atomic_fetch_add(&live_streams, 1);
    *stream = s;
    return ATTNRT_OK;
}

static void tp_stream_destroy(void *device, void *stream)
{
    tp_device_t *d = as_device(device);
    tp_stream_t *s = stream;
    if (!s || s->magic != STREAM_MAGIC || s->dev != d) {
        violation();
        return;
    }
    s->magic = 0;
    atomic_fetch_sub(&d->streams, 1);
    atomic_fetch_sub(&live_streams, 1);
    free(s);
}

static attnrt_status_t tp_stream_synchronize(void *device, void *stream)
{
    return check_stream(as_device(device), stream, "stream_synchronize");
}

#ifndef TP_NULL_OPTIONAL
static attnrt_status_t tp_event_create(void *device, void **event)
{
    tp_device_t *d = as_device(device);
    tp_event_t *e = calloc(1, sizeof *e);
    if (!e) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp: out of memory creating an event");
    e->magic = EVENT_MAGIC;
    e->dev = d;
    atomic_fetch_add(&d->events, 1);
    atomic_fetch_add(&live_events, 1);
    *event = e;
    return ATTNRT_OK;
}

static tp_event_t *as_event(tp_device_t *d, void *event)
{
    tp_event_t *e = event;
    if (!e || e->magic != EVENT_MAGIC || e->dev != d) violation();
    return e;
}

static void tp_event_destroy(void *device, void *event)
{
    tp_device_t *d = as_device(device);
    tp_event_t *e = as_event(d, event);
    e->magic = 0;
    atomic_fetch_sub(&d->events, 1);
    atomic_fetch_sub(&live_events, 1);
    free(e);
}

static attnrt_status_t tp_event_record(void *device, void *event, void *stream)
{
    tp_device_t *d = as_device(device);
    attnrt_status_t st = check_stream(d, stream, "event_record");
    if (st != ATTNRT_OK) return st;
    tp_event_t *e = as_event(d, event);
    e->stamp = atomic_fetch_add(&d->clock, 1) + 1;
    e->recorded = 1;
    return ATTNRT_OK;
}

static attnrt_status_t tp_event_elapsed_ms(void *device, void *start, void *end, float *ms)
{
    tp_device_t *d = as_device(device);
    const tp_event_t *a = as_event(d, start), *b = as_event(d, end);
    if (!a->recorded || !b->recorded)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "tp: %s:%u: elapsed time asked of an event never recorded",
                           TP_NAME, d->index);
    *ms = (float)((double)b->stamp - (double)a->stamp) * TP_EVENT_TICK_MS;
    return ATTNRT_OK;
}

/* Supports merge_states only, so both answers of the capability query can be tested. */
static attnrt_status_t tp_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    (void)as_device(device);
    if (query->struct_size < ATTNRT_OP_QUERY_STRUCT_SIZE) violation();
    if (query->op == ATTNRT_OP_MERGE_STATES) return ATTNRT_OK;
    if (reason && cap) snprintf(reason, cap, "test plugin %s implements only merge_states, not op %u", TP_NAME, query->op);
    return ATTNRT_ERR_UNSUPPORTED;
}

/* The 1.1 op entry: no math, it only counts that the runtime reached it with sane arguments. */
static attnrt_status_t tp_merge_states(void *device, const attnrt_merge_args_t *args, void *stream)
{
#ifdef TP_OLDER_MINOR
    violation(); /* this entry lies beyond the variant's struct_size: the runtime must never call it */
    return ATTNRT_ERR_INTERNAL;
#endif
    tp_device_t *d = as_device(device);
    attnrt_status_t st = check_stream(d, stream, "merge_states");
    if (st != ATTNRT_OK) return st;
    if (!args || args->struct_size < ATTNRT_MERGE_ARGS_STRUCT_SIZE || args->num_states < 1) violation();
    atomic_fetch_add(&op_calls, 1);
    return ATTNRT_OK;
}
#endif


/* ---- the vtable ---- */

#ifdef TP_NULL_OPTIONAL
#define TP_OPTIONAL(entry) NULL
#else
#define TP_OPTIONAL(entry) entry
#endif
#ifdef TP_NULL_REQUIRED
#define TP_DEVICE_OPEN NULL
#else
#define TP_DEVICE_OPEN tp_device_open
#endif
#if defined(TP_NO_NAME)
#define TP_API_NAME NULL
#elif defined(TP_CLAIMS_NAME)
#define TP_API_NAME TP_CLAIMS_NAME
#else
#define TP_API_NAME TP_NAME
#endif

#if defined(TP_NEWER_MINOR)
#define TP_STRUCT_SIZE sizeof(tp_api_next_t)
#elif defined(TP_TINY_VTABLE)
#define TP_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_api_t, version)
#elif defined(TP_OLDER_MINOR)
#define TP_STRUCT_SIZE ATTNRT_STRUCT_SIZE(attnrt_plugin_api_t, op_supported) /* exactly ABI 1.0 */
#else
#define TP_STRUCT_SIZE ATTNRT_PLUGIN_API_STRUCT_SIZE /* this header's minor */
#endif

/* ABI 1.0 followed by entries a later minor might append; a 1.0 runtime must never touch them. */
static attnrt_status_t tp_future_entry(void *device)
{
    (void)device;
    violation();
    return ATTNRT_ERR_INTERNAL;
}

typedef struct tp_api_next {
    attnrt_plugin_api_t base;
    attnrt_status_t (*future_entry)(void *device); /* a later minor's: unknown to this runtime */
    const char     *future_field;
} tp_api_next_t;

static const tp_api_next_t tp_api = {
    .base = {
        .struct_size        = TP_STRUCT_SIZE,
        .abi_major          = TP_ABI_MAJOR,
        .abi_minor          = TP_ABI_MINOR,
        .name               = TP_API_NAME,
        .version            = "9.8.7-test",
        .probe              = tp_probe,
        .init               = tp_init,
        .shutdown           = tp_shutdown,
        .last_error         = plugin_last_error,
        .device_count       = tp_device_count_fn,
        .device_properties  = tp_device_properties,
        .device_attribute   = TP_OPTIONAL(tp_device_attribute),
        .device_open        = TP_DEVICE_OPEN,
        .device_close       = tp_device_close,
        .mem_alloc          = tp_mem_alloc,
        .mem_free           = tp_mem_free,
        .mem_copy           = tp_mem_copy,
        .mem_set            = TP_OPTIONAL(tp_mem_set),
        .stream_create      = tp_stream_create,
        .stream_destroy     = tp_stream_destroy,
        .stream_synchronize = tp_stream_synchronize,
        .event_create       = TP_OPTIONAL(tp_event_create),
        .event_destroy      = TP_OPTIONAL(tp_event_destroy),
        .event_record       = TP_OPTIONAL(tp_event_record),
        .event_elapsed_ms   = TP_OPTIONAL(tp_event_elapsed_ms),
        .op_supported       = TP_OPTIONAL(tp_op_supported),
        .merge_states       = TP_OPTIONAL(tp_merge_states),
    },
    .future_entry = tp_future_entry,
    .future_field = "appended in ABI 1.1",
};

#ifdef TP_NO_ENTRY
/* A shared object with an export, but not the entry symbol. */
ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api_v0(void);
ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api_v0(void) { return &tp_api.base; }
#else
ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor);

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    seen_host_major = host_abi_major;
    seen_host_minor = host_abi_minor;
#ifdef TP_RETURNS_NULL
    (void)&tp_api; /* built, but never handed out */
    plugin_fail(ATTNRT_ERR_ABI_MISMATCH, "tp: declines every runtime (built with TP_RETURNS_NULL)");
    return NULL;
#elif defined(TP_PLANNER)
    return tp_planner_api(&tp_api.base);
#else
    /* Deliberately no check of host_abi_major: the runtime's own check is what is under test. */
    return &tp_api.base;
#endif
}
#endif
