/* The cuda plugin's vtable: devices through the Driver API (libcuda.so.1 by dlopen), each opened
 * device on its primary context, device memory, non-blocking streams, events, and the engine's own
 * CUstream / CUevent wrapped; the ops live in cuda_*.c. A NULL stream is the legacy default stream, and
 * a call on it waits for its work; a call on any other stream, created or wrapped, only queues it. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_mla_linear.h"
#include "plugin_entry.h"
#include "plugin_error.h"

static attnrt_status_t cuda_probe(void) { return cuda_driver_get(1) ? ATTNRT_OK : ATTNRT_ERR_NO_DEVICE; }

static attnrt_status_t cuda_init(const attnrt_host_api_t *host, void **plugin)
{
    if (!cuda_driver_get(1)) return ATTNRT_ERR_NO_DEVICE;
    cuda_plugin_t *p = calloc(1, sizeof *p);
    pthread_mutex_t *lock = malloc(sizeof *lock);
    const uint32_t n = (uint32_t)cuda_drv.device_count;
    if (p) {
        p->devs = calloc(n, sizeof *p->devs);
        p->ctx = calloc(n, sizeof *p->ctx);
    }
    if (!p || !lock || !p->devs || !p->ctx || pthread_mutex_init(lock, NULL) != 0) {
        if (p) {
            free(p->devs);
            free(p->ctx);
        }
        free(p);
        free(lock);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda plugin: out of memory at init");
    }
    p->host = host;
    p->lock = lock;
    p->count = n;
    for (uint32_t i = 0; i < n; i++) {
        CUresult r = cuda_drv.DeviceGet(&p->devs[i], (int)i);
        if (r != CUDA_SUCCESS) {
            attnrt_status_t st = cuda_fail(r, "cuda plugin: cuDeviceGet(%u)", i);
            pthread_mutex_destroy(lock);
            free(lock);
            free(p->devs);
            free(p->ctx);
            free(p);
            return st;
        }
    }
    *plugin = p;
    return ATTNRT_OK;
}

static void cuda_shutdown(void *plugin)
{
    cuda_plugin_t *p = plugin;
    if (!p) return;
    for (uint32_t i = 0; i < p->count; i++)
        if (p->ctx[i]) cuda_drv.DevicePrimaryCtxRelease(p->devs[i]);
    pthread_mutex_destroy(p->lock);
    free(p->lock);
    free(p->devs);
    free(p->ctx);
    free(p);
}

attnrt_status_t cuda_plugin_context(cuda_plugin_t *p, uint32_t index, CUcontext *ctx)
{
    attnrt_status_t st = ATTNRT_OK;
    pthread_mutex_lock(p->lock);
    if (!p->ctx[index]) {
        CUresult r = cuda_drv.DevicePrimaryCtxRetain(&p->ctx[index], p->devs[index]);
        if (r != CUDA_SUCCESS) {
            p->ctx[index] = NULL;
            st = cuda_fail(r, "cuda:%u: cuDevicePrimaryCtxRetain", index);
        }
    }
    *ctx = p->ctx[index];
    pthread_mutex_unlock(p->lock);
    return st;
}

static attnrt_status_t cuda_device_count(void *plugin, uint32_t *count)
{
    *count = ((cuda_plugin_t *)plugin)->count;
    return ATTNRT_OK;
}

static attnrt_status_t cuda_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    return cuda_fill_properties(plugin, index, props);
}

static attnrt_status_t cuda_device_attribute(void *plugin, uint32_t index, uint32_t i, attnrt_device_attribute_t *attr)
{
    return cuda_fill_attribute(plugin, index, i, attr);
}

static attnrt_status_t cuda_device_open(void *plugin, uint32_t index, void **device)
{
    cuda_plugin_t *p = plugin;
    if (index >= p->count)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda plugin has %u device(s); asked for cuda:%u", p->count, index);
    cuda_dev_t *d = calloc(1, sizeof *d);
    if (!d) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda:%u: out of memory opening the device", index);
    d->index = index;
    d->dev = p->devs[index];
    cuda_drv.DeviceGetAttribute(&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev);
    cuda_drv.DeviceGetAttribute(&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
    cuda_drv.DeviceGetAttribute(&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
    /* the cross-checks: simt, every attention and MLA on the CUDA cores; sm80, the kernel set of a compute capability
     * 8.0 device (no sm_90a or tensor-copy kernels, plain launches; a newer card runs its own SASS of those kernels) */
    const char *kernels = secure_getenv("ATTNRT_CUDA_KERNELS");
    d->force_simt = kernels && strcmp(kernels, "simt") == 0;
    if (kernels && strcmp(kernels, "sm80") == 0 && d->cc_major >= 8) d->cc_major = 8, d->cc_minor = 0;
    else if (kernels && kernels[0] && !d->force_simt && strcmp(kernels, "auto") != 0 && p->host && p->host->log)
        p->host->log(ATTNRT_LOG_WARN, "cuda", "ATTNRT_CUDA_KERNELS is not \"auto\", \"simt\" or \"sm80\"; using auto");
    d->pdl = d->cc_major >= 9 && cuda_drv.version >= 12030 && cuda_drv.LaunchKernelEx;
    attnrt_status_t st = cuda_plugin_context(p, index, &d->ctx);
    if (st == ATTNRT_OK) st = cuda_enter(d);
    if (st == ATTNRT_OK) st = cuda_module_load(d);
    if (st != ATTNRT_OK) {
        free(d);
        return st;
    }
    *device = d;
    return ATTNRT_OK;
}

static void cuda_device_close(void *device)
{
    cuda_dev_t *d = device;
    if (!d) return;
    if (cuda_enter(d) == ATTNRT_OK) cuda_module_unload(d);
    free(d); /* the primary context stays retained by the plugin until shutdown */
}

static attnrt_status_t cuda_mem_alloc(void *device, size_t bytes, void **ptr)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUdeviceptr p = 0;
    CUresult r = cuda_drv.MemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuda:%u: cuMemAlloc(%zu bytes)", d->index, bytes);
    *ptr = (void *)(uintptr_t)p;
    return ATTNRT_OK;
}

static void cuda_mem_free(void *device, void *ptr)
{
    if (!ptr || cuda_enter(device) != ATTNRT_OK) return;
    cuda_drv.MemFree((CUdeviceptr)(uintptr_t)ptr);
}

static attnrt_status_t cuda_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind, void *stream)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    const CUstream s = cuda_stream_of(stream);
    CUresult r;
    switch (kind) {
    case ATTNRT_COPY_HOST_TO_DEVICE: r = cuda_drv.MemcpyHtoDAsync((CUdeviceptr)(uintptr_t)dst, src, bytes, s); break;
    case ATTNRT_COPY_DEVICE_TO_HOST: r = cuda_drv.MemcpyDtoHAsync(dst, (CUdeviceptr)(uintptr_t)src, bytes, s); break;
    case ATTNRT_COPY_DEVICE_TO_DEVICE:
        r = cuda_drv.MemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes, s);
        break;
    default:
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda:%u: copy kind %u is not an attnrt_copy_kind", d->index, kind);
    }
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuda:%u: copy of %zu bytes (kind %u)", d->index, bytes, kind);
    return cuda_finish(stream, "mem_copy");
}

static attnrt_status_t cuda_mem_set(void *device, void *dst, int value, size_t bytes, void *stream)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUresult r = cuda_drv.MemsetD8Async((CUdeviceptr)(uintptr_t)dst, (unsigned char)value, bytes, cuda_stream_of(stream));
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuda:%u: cuMemsetD8Async(%zu bytes)", d->index, bytes);
    return cuda_finish(stream, "mem_set");
}

static attnrt_status_t cuda_stream_create(void *device, void **stream)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    cuda_stream_t *s = calloc(1, sizeof *s);
    if (!s) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda:%u: out of memory creating a stream", d->index);
    CUresult r = cuda_drv.StreamCreate(&s->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
        free(s);
        return cuda_fail(r, "cuda:%u: cuStreamCreate", d->index);
    }
    s->owned = 1;
    *stream = s;
    return ATTNRT_OK;
}

static void cuda_stream_destroy(void *device, void *stream)
{
    cuda_stream_t *s = stream;
    if (!s) return;
    if (s->owned && cuda_enter(device) == ATTNRT_OK) { /* a wrapped stream stays the engine's, unwaited for */
        cuda_drv.StreamSynchronize(s->stream);
        cuda_drv.StreamDestroy(s->stream);
    }
    free(s);
}

static attnrt_status_t cuda_stream_synchronize(void *device, void *stream)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUresult r = cuda_drv.StreamSynchronize(cuda_stream_of(stream));
    return r == CUDA_SUCCESS ? ATTNRT_OK : cuda_fail(r, "cuda:%u: cuStreamSynchronize", d->index);
}

static attnrt_status_t cuda_event_create(void *device, void **event)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    cuda_event_t *e = calloc(1, sizeof *e);
    if (!e) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda:%u: out of memory creating an event", d->index);
    CUresult r = cuda_drv.EventCreate(&e->event, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        free(e);
        return cuda_fail(r, "cuda:%u: cuEventCreate", d->index);
    }
    e->owned = 1;
    *event = e;
    return ATTNRT_OK;
}

static void cuda_event_destroy(void *device, void *event)
{
    cuda_event_t *e = event;
    if (!e) return;
    if (e->owned && cuda_enter(device) == ATTNRT_OK) cuda_drv.EventDestroy(e->event); /* a wrapped one: the engine's */
    free(e);
}

static attnrt_status_t cuda_event_record(void *device, void *event, void *stream)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUresult r = cuda_drv.EventRecord(((cuda_event_t *)event)->event, cuda_stream_of(stream));
    return r == CUDA_SUCCESS ? ATTNRT_OK : cuda_fail(r, "cuda:%u: cuEventRecord", d->index);
}

static attnrt_status_t cuda_event_elapsed_ms(void *device, void *start, void *end, float *ms)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUresult r = cuda_drv.EventSynchronize(((cuda_event_t *)end)->event);
    if (r == CUDA_SUCCESS) r = cuda_drv.EventElapsedTime(ms, ((cuda_event_t *)start)->event, ((cuda_event_t *)end)->event);
    return r == CUDA_SUCCESS ? ATTNRT_OK : cuda_fail(r, "cuda:%u: event elapsed time", d->index);
}

/* ---- native streams and events: the engine's CUstream / CUevent, borrowed ---- */

static attnrt_status_t cuda_stream_wrap(void *device, void *native, void **stream)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    /* The stream must be of this device's primary context (the one torch and the CUDA runtime use); a NULL native
     * is the legacy default stream of the current context, which cuda_enter just made the primary one. */
    CUcontext owner = NULL;
    CUresult r = cuda_drv.StreamGetCtx((CUstream)native, &owner);
    if (r != CUDA_SUCCESS) return cuda_fail(r, "cuda:%u: cuStreamGetCtx of native stream %p", d->index, native);
    if (owner != d->ctx)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda:%u: native stream %p belongs to CUDA context %p, not to "
                           "cuda:%u's primary context %p (the one the CUDA runtime and torch use on that device)",
                           d->index, native, (void *)owner, d->index, (void *)d->ctx);
    cuda_stream_t *s = calloc(1, sizeof *s);
    if (!s) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda:%u: out of memory wrapping a stream", d->index);
    s->stream = (CUstream)native;
    s->owned = 0;
    *stream = s;
    return ATTNRT_OK;
}

static attnrt_status_t cuda_stream_native(void *device, void *stream, void **native)
{
    (void)device;
    /* NULL stream: the legacy default stream, whose handle is (CUstream)0 (the ABI's NULL stream is that stream) */
    *native = (void *)cuda_stream_of(stream);
    return ATTNRT_OK;
}

static attnrt_status_t cuda_stream_wait_event(void *device, void *stream, void *event)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUresult r = cuda_drv.StreamWaitEvent(cuda_stream_of(stream), ((cuda_event_t *)event)->event, 0);
    return r == CUDA_SUCCESS ? ATTNRT_OK : cuda_fail(r, "cuda:%u: cuStreamWaitEvent", d->index);
}

static attnrt_status_t cuda_event_wrap(void *device, void *native, void **event)
{
    cuda_dev_t *d = device;
    cuda_event_t *e = calloc(1, sizeof *e);
    if (!e) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda:%u: out of memory wrapping an event", d->index);
    e->event = (CUevent)native;
    e->owned = 0;
    *event = e;
    return ATTNRT_OK;
}

static attnrt_status_t cuda_event_native(void *device, void *event, void **native)
{
    (void)device;
    *native = (void *)((cuda_event_t *)event)->event;
    return ATTNRT_OK;
}

static attnrt_status_t cuda_event_synchronize(void *device, void *event)
{
    cuda_dev_t *d = device;
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    CUresult r = cuda_drv.EventSynchronize(((cuda_event_t *)event)->event);
    return r == CUDA_SUCCESS ? ATTNRT_OK : cuda_fail(r, "cuda:%u: cuEventSynchronize", d->index);
}

static attnrt_status_t cuda_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    (void)device;
    return cuda_op_check(query, reason, cap);
}

static attnrt_status_t cuda_kv_write_op(void *device, const attnrt_kv_write_args_t *args, void *stream)
{
    return cuda_kv_write(device, args, stream);
}

static attnrt_status_t cuda_attention_plan_op(void *device, const attnrt_attention_args_t *args,
                                              const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes)
{
    return cuda_attention_plan(device, args, batch, plan, workspace_bytes);
}

static void cuda_attention_plan_destroy_op(void *device, void *plan) { cuda_attention_plan_destroy(device, plan); }

static attnrt_status_t cuda_attention_plan_capacity_op(void *device, const attnrt_attention_args_t *args,
                                                       const attnrt_capacity_t *capacity, void **plan,
                                                       size_t *workspace_bytes)
{
    return cuda_attention_plan_capacity(device, args, capacity, plan, workspace_bytes);
}

static attnrt_status_t cuda_attention_plan_update_op(void *device, void *plan, const attnrt_batch_host_t *batch,
                                                     void *stream)
{
    return cuda_attention_plan_update(device, plan, batch, stream);
}

static attnrt_status_t cuda_attention_run_op(void *device, const void *plan, const attnrt_attention_args_t *args,
                                             void *workspace, size_t workspace_bytes, void *stream)
{
    return cuda_attention_run(device, plan, args, workspace, workspace_bytes, stream);
}

static attnrt_status_t cuda_merge_states_op(void *device, const attnrt_merge_args_t *args, void *stream)
{
    return cuda_merge_states(device, args, stream);
}

static attnrt_status_t cuda_mla_plan_op(void *device, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                                        void **plan, size_t *workspace_bytes)
{
    return cuda_mla_plan(device, args, batch, plan, workspace_bytes);
}

static attnrt_status_t cuda_mla_run_op(void *device, const void *plan, const attnrt_mla_args_t *args, void *workspace,
                                       size_t workspace_bytes, void *stream)
{
    return cuda_mla_run(device, plan, args, workspace, workspace_bytes, stream);
}

static attnrt_status_t cuda_lightning_plan_op(void *device, const attnrt_lightning_args_t *args,
                                              const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                              void **plan, size_t *workspace_bytes)
{
    return cuda_lightning_plan(device, args, batch, states, plan, workspace_bytes);
}

static attnrt_status_t cuda_lightning_run_op(void *device, const void *plan, const attnrt_lightning_args_t *args,
                                             void *workspace, size_t workspace_bytes, void *stream)
{
    return cuda_lightning_run(device, plan, args, workspace, workspace_bytes, stream);
}

static attnrt_status_t cuda_gated_delta_plan_op(void *device, const attnrt_gated_delta_args_t *args,
                                                const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                                void **plan, size_t *workspace_bytes)
{
    return cuda_gated_delta_plan(device, args, batch, states, plan, workspace_bytes);
}

static attnrt_status_t cuda_gated_delta_run_op(void *device, const void *plan, const attnrt_gated_delta_args_t *args,
                                               void *workspace, size_t workspace_bytes, void *stream)
{
    return cuda_gated_delta_run(device, plan, args, workspace, workspace_bytes, stream);
}

static void cuda_plan_destroy_op(void *device, void *plan) { cuda_op_plan_destroy(device, plan); }

static const attnrt_plugin_api_t cuda_api = {
    PLUGIN_API_HEAD("cuda", "0.1.0"),
    .probe = cuda_probe, .init = cuda_init, .shutdown = cuda_shutdown,
    .device_count = cuda_device_count, .device_properties = cuda_device_properties,
    .device_attribute = cuda_device_attribute, .device_open = cuda_device_open, .device_close = cuda_device_close,
    .mem_alloc = cuda_mem_alloc, .mem_free = cuda_mem_free, .mem_copy = cuda_mem_copy, .mem_set = cuda_mem_set,
    .stream_create = cuda_stream_create, .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .event_create = cuda_event_create, .event_destroy = cuda_event_destroy, .event_record = cuda_event_record,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .stream_wrap = cuda_stream_wrap, .stream_native = cuda_stream_native, .stream_wait_event = cuda_stream_wait_event,
    .event_wrap = cuda_event_wrap, .event_native = cuda_event_native, .event_synchronize = cuda_event_synchronize,
    PLUGIN_API_OPS(cuda),
    /* select_attention and last_op_stats stay NULL: the runtime's defaults apply. */
    .attention_plan_capacity = cuda_attention_plan_capacity_op, .attention_plan_update = cuda_attention_plan_update_op,
};

PLUGIN_DEFINE_ENTRY(cuda_api)
