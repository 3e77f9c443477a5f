/* The cpu plugin's vtable: one device (cpu:0), host memory, synchronous streams, host-clock events.
 * Each device_open gets its own thread pool; the ops live in cpu_*.c and take that pool. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "attnrt_plugin.h"
#include "cpu_device.h"
#include "cpu_ops.h"
#include "cpu_threads.h"
#include "plugin_error.h"

#define CPU_ALIGN 256
#define CPU_HUGE_PAGE ((size_t)2 << 20) /* allocations from here on are asked to sit on huge pages */

typedef struct cpu_stream { int unused; } cpu_stream_t; /* work runs on the calling thread */
typedef struct cpu_event { double ms; int recorded; } cpu_event_t;
typedef struct cpu_dev { cpu_pool_t *pool; } cpu_dev_t; /* one per device_open */

static int cpu_plugin_handle; /* init hands out its address: the plugin has no state of its own yet */

static attnrt_status_t cpu_probe(void) { return ATTNRT_OK; }

static attnrt_status_t cpu_init(const attnrt_host_api_t *host, void **plugin)
{
    (void)host;
    *plugin = &cpu_plugin_handle;
    return ATTNRT_OK;
}

static void cpu_shutdown(void *plugin) { (void)plugin; }

static attnrt_status_t cpu_device_count(void *plugin, uint32_t *count)
{
    (void)plugin;
    *count = 1;
    return ATTNRT_OK;
}

static attnrt_status_t check_index(uint32_t index)
{
    return index == 0 ? ATTNRT_OK
                      : plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu plugin has one device (cpu:0); asked for %u", index);
}

static attnrt_status_t cpu_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    if (st == ATTNRT_OK) cpu_fill_properties(props);
    return st;
}

static attnrt_status_t cpu_device_attribute(void *plugin, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    return st == ATTNRT_OK ? cpu_fill_attribute(i, attr) : st;
}

static attnrt_status_t cpu_device_open(void *plugin, uint32_t index, void **device)
{
    (void)plugin;
    attnrt_status_t st = check_index(index);
    if (st != ATTNRT_OK) return st;
    cpu_dev_t *d = calloc(1, sizeof *d);
    if (!d) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu:0: out of memory opening the device");
    st = cpu_pool_create(cpu_pool_default_size(), &d->pool);
    if (st != ATTNRT_OK) {
        free(d);
        return st;
    }
    *device = d;
    return ATTNRT_OK;
}

static void cpu_device_close(void *device)
{
    cpu_dev_t *d = device;
    if (!d) return;
    cpu_pool_destroy(d->pool);
    free(d);
}

static attnrt_status_t cpu_mem_alloc(void *device, size_t bytes, void **ptr)
{
    (void)device;
    /* Large buffers (KV caches) on transparent huge pages where the kernel allows it (`madvise` mode):
     * paged KV is read block by block in a scattered order, and with 4 KiB pages every few blocks cost
     * a page walk. A refusal (no THP) only leaves the small pages. */
    const size_t align = bytes >= CPU_HUGE_PAGE ? CPU_HUGE_PAGE : CPU_ALIGN;
    size_t rounded = (bytes + align - 1) / align * align;
    if (rounded < bytes) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu:0: %zu bytes is too large", bytes);
    void *p = aligned_alloc(align, rounded);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu:0: cannot allocate %zu bytes of host memory", bytes);
#ifdef MADV_HUGEPAGE
    if (align == CPU_HUGE_PAGE) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    *ptr = p;
    return ATTNRT_OK;
}

static void cpu_mem_free(void *device, void *ptr)
{
    (void)device;
    free(ptr);
}

static attnrt_status_t cpu_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind, void *stream)
{
    (void)device;
    (void)stream;
    if (kind < ATTNRT_COPY_HOST_TO_DEVICE || kind > ATTNRT_COPY_DEVICE_TO_DEVICE)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu:0: copy kind %u is not an attnrt_copy_kind", kind);
    memmove(dst, src, bytes);
    return ATTNRT_OK;
}

static attnrt_status_t cpu_mem_set(void *device, void *dst, int value, size_t bytes, void *stream)
{
    (void)device;
    (void)stream;
    memset(dst, value, bytes);
    return ATTNRT_OK;
}

static attnrt_status_t cpu_stream_create(void *device, void **stream)
{
    (void)device;
    cpu_stream_t *s = calloc(1, sizeof *s);
    if (!s) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu:0: out of memory creating a stream");
    *stream = s;
    return ATTNRT_OK;
}

static void cpu_stream_destroy(void *device, void *stream)
{
    (void)device;
    free(stream);
}

static attnrt_status_t cpu_stream_synchronize(void *device, void *stream)
{
    (void)device;
    (void)stream;
    return ATTNRT_OK; /* every call already completed on the caller's thread */
}

static attnrt_status_t cpu_event_create(void *device, void **event)
{
    (void)device;
    cpu_event_t *e = calloc(1, sizeof *e);
    if (!e) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu:0: out of memory creating an event");
    *event = e;
    return ATTNRT_OK;
}

static void cpu_event_destroy(void *device, void *event)
{
    (void)device;
    free(event);
}

static attnrt_status_t cpu_event_record(void *device, void *event, void *stream)
{
    (void)device;
    (void)stream;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    cpu_event_t *e = event;
    e->ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
    e->recorded = 1;
    return ATTNRT_OK;
}

static attnrt_status_t cpu_event_elapsed_ms(void *device, void *start, void *end, float *ms)
{
    (void)device;
    const cpu_event_t *a = start, *b = end;
    if (!a->recorded || !b->recorded)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu:0: elapsed time asked of an event never recorded");
    *ms = (float)(b->ms - a->ms);
    return ATTNRT_OK;
}

static attnrt_status_t cpu_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    (void)device;
    return cpu_op_check(query, reason, cap);
}

static cpu_pool_t *pool_of(void *device) { return ((cpu_dev_t *)device)->pool; }

static attnrt_status_t cpu_kv_write_op(void *device, const attnrt_kv_write_args_t *args, void *stream)
{
    (void)stream; /* streams are synchronous: the op completes before it returns */
    return cpu_kv_write(pool_of(device), args);
}

static attnrt_status_t cpu_attention_plan_op(void *device, const attnrt_attention_args_t *args,
                                             const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes)
{
    return cpu_attention_plan(pool_of(device), args, batch, plan, workspace_bytes);
}

static void cpu_attention_plan_destroy_op(void *device, void *plan)
{
    (void)device;
    cpu_attention_plan_destroy(plan);
}

static attnrt_status_t cpu_attention_run_op(void *device, const void *plan, const attnrt_attention_args_t *args,
                                            void *workspace, size_t workspace_bytes, void *stream)
{
    (void)stream; /* the split-KV partial states go to the caller's workspace: runs of one plan may race */
    return cpu_attention_run(pool_of(device), plan, args, workspace, workspace_bytes);
}

static attnrt_status_t cpu_merge_states_op(void *device, const attnrt_merge_args_t *args, void *stream)
{
    (void)stream;
    return cpu_merge_states(pool_of(device), args);
}

static attnrt_status_t cpu_mla_plan_op(void *device, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                                       void **plan, size_t *workspace_bytes)
{
    return cpu_mla_plan(pool_of(device), args, batch, plan, workspace_bytes);
}

static attnrt_status_t cpu_mla_run_op(void *device, const void *plan, const attnrt_mla_args_t *args, void *workspace,
                                      size_t workspace_bytes, void *stream)
{
    (void)workspace; /* plans ask for none */
    (void)workspace_bytes;
    (void)stream;
    return cpu_mla_run(pool_of(device), plan, args);
}

static attnrt_status_t cpu_lightning_plan_op(void *device, const attnrt_lightning_args_t *args,
                                             const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                             void **plan, size_t *workspace_bytes)
{
    return cpu_lightning_plan(pool_of(device), args, batch, states, plan, workspace_bytes);
}

static attnrt_status_t cpu_lightning_run_op(void *device, const void *plan, const attnrt_lightning_args_t *args,
                                            void *workspace, size_t workspace_bytes, void *stream)
{
    (void)workspace;
    (void)workspace_bytes;
    (void)stream;
    return cpu_lightning_run(pool_of(device), plan, args);
}

static attnrt_status_t cpu_gated_delta_plan_op(void *device, const attnrt_gated_delta_args_t *args,
                                               const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                               void **plan, size_t *workspace_bytes)
{
    return cpu_gated_delta_plan(pool_of(device), args, batch, states, plan, workspace_bytes);
}

static attnrt_status_t cpu_gated_delta_run_op(void *device, const void *plan, const attnrt_gated_delta_args_t *args,
                                              void *workspace, size_t workspace_bytes, void *stream)
{
    (void)workspace;
    (void)workspace_bytes;
    (void)stream;
    return cpu_gated_delta_run(pool_of(device), plan, args);
}

/* Frees any 1.2 plan: each starts with a cpu_plan_head_t naming its kind. */
static void cpu_plan_destroy_op(void *device, void *plan)
{
    (void)device;
    const cpu_plan_head_t *head = plan;
    if (!head || head->magic != CPU_PLAN_MAGIC) return; /* NULL, or not a live plan of ours: nothing we may free */
    switch (head->kind) {
    case CPU_PLAN_MLA: cpu_mla_plan_destroy(plan); break;
    case CPU_PLAN_LIGHTNING: cpu_lightning_plan_destroy(plan); break;
    case CPU_PLAN_GATED_DELTA: cpu_gated_delta_plan_destroy(plan); break;
    default: break;
    }
}

static const attnrt_plugin_api_t cpu_api = {
    .struct_size            = ATTNRT_PLUGIN_API_STRUCT_SIZE,
    .abi_major              = ATTNRT_ABI_MAJOR,
    .abi_minor              = ATTNRT_ABI_MINOR,
    .name                   = "cpu",
    .version                = "0.1.0",
    .probe                  = cpu_probe,
    .init                   = cpu_init,
    .shutdown               = cpu_shutdown,
    .last_error             = plugin_last_error,
    .device_count           = cpu_device_count,
    .device_properties      = cpu_device_properties,
    .device_attribute       = cpu_device_attribute,
    .device_open            = cpu_device_open,
    .device_close           = cpu_device_close,
    .mem_alloc              = cpu_mem_alloc,
    .mem_free               = cpu_mem_free,
    .mem_copy               = cpu_mem_copy,
    .mem_set                = cpu_mem_set,
    .stream_create          = cpu_stream_create,
    .stream_destroy         = cpu_stream_destroy,
    .stream_synchronize     = cpu_stream_synchronize,
    .event_create           = cpu_event_create,
    .event_destroy          = cpu_event_destroy,
    .event_record           = cpu_event_record,
    .event_elapsed_ms       = cpu_event_elapsed_ms,
    .op_supported           = cpu_op_supported,
    .kv_write               = cpu_kv_write_op,
    .attention_plan         = cpu_attention_plan_op,
    .attention_plan_destroy = cpu_attention_plan_destroy_op,
    .attention_run          = cpu_attention_run_op,
    .merge_states           = cpu_merge_states_op,
    .mla_plan               = cpu_mla_plan_op,
    .mla_run                = cpu_mla_run_op,
    .lightning_plan         = cpu_lightning_plan_op,
    .lightning_run          = cpu_lightning_run_op,
    .gated_delta_plan       = cpu_gated_delta_plan_op,
    .gated_delta_run        = cpu_gated_delta_run_op,
    .plan_destroy           = cpu_plan_destroy_op,
};

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor);

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* any minor of our major: the runtime reads only what both know */
    if (host_abi_major != ATTNRT_ABI_MAJOR) {
        plugin_fail(ATTNRT_ERR_ABI_MISMATCH, "cpu plugin speaks ABI %d.x, the runtime %u.x", ATTNRT_ABI_MAJOR,
                    host_abi_major);
        return NULL;
    }
    return &cpu_api;
}
