/* The cpu plugin's vtable: one device (cpu:0), host memory, synchronous streams, host-clock events
 * (plugin_host.h). Each device_open gets its own thread pool; the ops live in cpu_*.c and take that pool. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "attnrt_plugin.h"
#include "cpu_device.h"
#include "cpu_linear.h"
#include "cpu_ops.h"
#include "cpu_threads.h"
#include "plugin_entry.h"
#include "plugin_error.h"
#include "plugin_host.h"

#define CPU_ALIGN 256
#define CPU_HUGE_PAGE ((size_t)2 << 20) /* allocations from here on are asked to sit on huge pages */

typedef struct cpu_dev {
    plugin_host_device_t host; /* first: the shared stream, event and copy entries read it */
    cpu_pool_t          *pool;
} cpu_dev_t; /* one per device_open */

static int cpu_plugin_handle; /* init hands out its address: the plugin has no state of its own yet */

static attnrt_status_t cpu_probe(void) { return ATTNRT_OK; }

static attnrt_status_t cpu_init(const attnrt_host_api_t *host, void **plugin)
{
    (void)host;
    *plugin = &cpu_plugin_handle;
    return ATTNRT_OK;
}

static void cpu_shutdown(void *plugin) { (void)plugin; }

static attnrt_status_t check_index(uint32_t index) { return plugin_one_device_index("cpu plugin", "cpu:0", index); }

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
    snprintf(d->host.name, sizeof d->host.name, "cpu:0");
    d->host.clock = plugin_host_clock_ms;
    d->host.ms_per_tick = 1.0;
    st = cpu_pool_create(cpu_pool_default_size(), &d->pool);
    if (st == ATTNRT_OK)
        *device = d;
    else
        free(d);
    return st;
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

static attnrt_status_t cpu_attention_plan_capacity_op(void *device, const attnrt_attention_args_t *args,
                                                      const attnrt_capacity_t *capacity, void **plan,
                                                      size_t *workspace_bytes)
{
    return cpu_attention_plan_capacity(pool_of(device), args, capacity, plan, workspace_bytes);
}

static attnrt_status_t cpu_attention_plan_update_op(void *device, void *plan, const attnrt_batch_host_t *batch,
                                                    void *stream)
{
    (void)stream; /* streams are synchronous: every run queued before the update has completed */
    return cpu_attention_plan_update(pool_of(device), plan, batch);
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
    case CPU_PLAN_LIGHTNING:
    case CPU_PLAN_GATED_DELTA: cpu_linear_plan_free(plan); break;
    default: break;
    }
}

static const attnrt_plugin_api_t cpu_api = {
    PLUGIN_API_HEAD("cpu", "0.1.0"),
    .probe = cpu_probe, .init = cpu_init, .shutdown = cpu_shutdown,
    .device_count = plugin_one_device_count, .device_properties = cpu_device_properties,
    .device_attribute = cpu_device_attribute, .device_open = cpu_device_open, .device_close = cpu_device_close,
    .mem_alloc = cpu_mem_alloc, .mem_free = cpu_mem_free, PLUGIN_HOST_DEVICE_ENTRIES,
    PLUGIN_API_OPS(cpu),
    .attention_plan_capacity = cpu_attention_plan_capacity_op, .attention_plan_update = cpu_attention_plan_update_op,
};

PLUGIN_DEFINE_ENTRY(cpu_api)
