/* skeleton_plugin.c — the smallest complete libattnrt plugin: one device, "skeleton:0", whose memory is
 * host memory and whose streams are synchronous, and one op, merge_states over f32 states. Start a new
 * plugin from this file; docs/plugin-guide.md explains every entry. It includes only the ABI header and
 * never links libattnrt. Out of the tree (the header installed under $PREFIX):
 *
 *   cc -std=c11 -O2 -shared -fPIC -fvisibility=hidden $(pkg-config --cflags attnrt-plugin) \
 *      skeleton_plugin.c -o attnrt_skeleton.so -lm
 *   attnrt-conform --plugin $PWD/attnrt_skeleton.so --min-passed merge=5
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sysconf's physical-page counts */
#endif
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnrt_plugin.h"

#define SK_NAME "skeleton"
#define SK_ALIGN 256 /* mem_alloc's promise (attnrt_plugin.h) */
#define SK_CHUNK 64  /* output columns merged at a time, on the stack: an op allocates nothing */

/* ---- errors: one message per thread, copied out by last_error right after a failing call ---------- */

static _Thread_local char sk_message[512];

static attnrt_status_t sk_fail(attnrt_status_t status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static attnrt_status_t sk_fail(attnrt_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sk_message, sizeof sk_message, fmt, ap);
    va_end(ap);
    return status;
}

static size_t sk_last_error(char *buf, size_t cap)
{
    const size_t n = strlen(sk_message);
    if (buf && cap) snprintf(buf, cap, "%s", sk_message);
    return n;
}

/* A capability refusal: the reason goes to the caller's buffer, which attnrt-info and attnrt-conform print. */
static attnrt_status_t sk_refuse(char *reason, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static attnrt_status_t sk_refuse(char *reason, size_t cap, const char *fmt, ...)
{
    if (reason && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, cap, fmt, ap);
        va_end(ap);
    }
    return ATTNRT_ERR_UNSUPPORTED;
}

/* ---- lifecycle and devices ------------------------------------------------------------------------ */

typedef struct sk_device { uint32_t index; } sk_device_t;
typedef struct sk_stream { int unused; } sk_stream_t; /* work runs on the calling thread */

static int sk_plugin_handle; /* init's handle: this plugin keeps no global state */

/* A real plugin checks here, cheaply, that its driver can be dlopen'ed and sees a device. */
static attnrt_status_t sk_probe(void) { return ATTNRT_OK; }

static attnrt_status_t sk_init(const attnrt_host_api_t *host, void **plugin)
{
    (void)host; /* host->log would print through ATTNRT_LOG */
    *plugin = &sk_plugin_handle;
    return ATTNRT_OK;
}

static void sk_shutdown(void *plugin) { (void)plugin; }

static attnrt_status_t sk_device_count(void *plugin, uint32_t *count)
{
    (void)plugin;
    *count = 1;
    return ATTNRT_OK;
}

static attnrt_status_t sk_check_index(uint32_t index)
{
    return index == 0 ? ATTNRT_OK
                      : sk_fail(ATTNRT_ERR_INVALID_ARGUMENT, SK_NAME " plugin has one device; asked for %u", index);
}

static attnrt_status_t sk_device_properties(void *plugin, uint32_t index, attnrt_device_properties_t *props)
{
    (void)plugin;
    attnrt_status_t st = sk_check_index(index);
    if (st != ATTNRT_OK) return st;
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, SK_NAME ":%u", index);
    snprintf(p.vendor, sizeof p.vendor, "libattnrt example");
    snprintf(p.model, sizeof p.model, "skeleton plugin (host memory)");
    snprintf(p.arch, sizeof p.arch, "host");
    p.device_type = ATTNRT_DEVICE_TYPE_CPU;
    p.compute_units = 1;
    const long page = sysconf(_SC_PAGESIZE), total = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    p.memory_total = page > 0 && total > 0 ? (uint64_t)page * (uint64_t)total : 0;
    p.memory_free = page > 0 && avail > 0 ? (uint64_t)page * (uint64_t)avail : 0;
    /* Write only what the caller's struct_size covers: a caller built against an older header has less. */
    p.struct_size = props->struct_size;
    memcpy(props, &p, props->struct_size < sizeof p ? props->struct_size : sizeof p);
    return ATTNRT_OK;
}

static attnrt_status_t sk_device_open(void *plugin, uint32_t index, void **device)
{
    (void)plugin;
    attnrt_status_t st = sk_check_index(index);
    if (st != ATTNRT_OK) return st;
    sk_device_t *d = calloc(1, sizeof *d);
    if (!d) return sk_fail(ATTNRT_ERR_OUT_OF_MEMORY, SK_NAME ":%u: out of memory opening the device", index);
    d->index = index;
    *device = d;
    return ATTNRT_OK;
}

static void sk_device_close(void *device) { free(device); }

/* ---- memory: host memory stands for device memory --------------------------------------------------- */

static attnrt_status_t sk_mem_alloc(void *device, size_t bytes, void **ptr)
{
    (void)device;
    const size_t rounded = (bytes + SK_ALIGN - 1) / SK_ALIGN * SK_ALIGN;
    void *p = rounded >= bytes ? aligned_alloc(SK_ALIGN, rounded) : NULL;
    if (!p) return sk_fail(ATTNRT_ERR_OUT_OF_MEMORY, SK_NAME ":0: cannot allocate %zu bytes", bytes);
    *ptr = p;
    return ATTNRT_OK;
}

static void sk_mem_free(void *device, void *ptr)
{
    (void)device;
    free(ptr);
}

static attnrt_status_t sk_mem_copy(void *device, void *dst, const void *src, size_t bytes, uint32_t kind, void *stream)
{
    (void)device;
    (void)stream; /* synchronous: the copy is done when the call returns */
    if (kind < ATTNRT_COPY_HOST_TO_DEVICE || kind > ATTNRT_COPY_DEVICE_TO_DEVICE)
        return sk_fail(ATTNRT_ERR_INVALID_ARGUMENT, SK_NAME ":0: copy kind %u is not an attnrt_copy_kind", kind);
    memmove(dst, src, bytes);
    return ATTNRT_OK;
}

/* ---- streams: a synchronous device still hands out distinct handles, and has nothing to wait for ---- */

static attnrt_status_t sk_stream_create(void *device, void **stream)
{
    (void)device;
    sk_stream_t *s = calloc(1, sizeof *s);
    if (!s) return sk_fail(ATTNRT_ERR_OUT_OF_MEMORY, SK_NAME ":0: out of memory creating a stream");
    *stream = s;
    return ATTNRT_OK;
}

static void sk_stream_destroy(void *device, void *stream)
{
    (void)device;
    free(stream);
}

static attnrt_status_t sk_stream_synchronize(void *device, void *stream)
{
    (void)device;
    (void)stream;
    return ATTNRT_OK; /* every call already completed on the caller's thread */
}

/* ---- capabilities: the same rules the op enforces, so an answer and a call never disagree ----------- */

static int sk_is_f32_or_any(attnrt_dtype_t dt)
{
    return (dt.code == 0 && dt.bits == 0) || (dt.code == ATTNRT_DTYPE_CODE_FLOAT && dt.bits == 32);
}

/* merge_states reads q_dtype (out), kv_dtype (the states), head_dim_v, num_q_heads and the SINKS and LSE
 * features; a zero field means "any". */
static attnrt_status_t sk_merge_check(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    if (!sk_is_f32_or_any(q->kv_dtype) || !sk_is_f32_or_any(q->q_dtype))
        return sk_refuse(reason, cap, "the skeleton merges f32 states into f32 outputs only (states code %u/%u bits, "
                         "out code %u/%u bits)", q->kv_dtype.code, q->kv_dtype.bits, q->q_dtype.code, q->q_dtype.bits);
    const uint32_t allowed = ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE;
    if (q->features & ~allowed) return sk_refuse(reason, cap, "merge_states takes only the sinks and lse features");
    return ATTNRT_OK;
}

static attnrt_status_t sk_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    (void)device;
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    memcpy(&q, query, query->struct_size < sizeof q ? query->struct_size : sizeof q);
    if (reason && cap) reason[0] = '\0';
    if (q.op == ATTNRT_OP_MERGE_STATES) return sk_merge_check(&q, reason, cap);
    return sk_refuse(reason, cap, "the skeleton plugin implements merge_states only, not %s", attnrt_op_string(q.op));
}

/* ---- merge_states ---------------------------------------------------------------------------------- */

/* Element [i][j][k] of a tensor of up to three dims, strides in elements (the innermost is 1). */
static float *sk_at(const attnrt_tensor_t *t, int64_t i, int64_t j, int64_t k)
{
    int64_t off = i * t->strides[0];
    if (t->ndim > 1) off += j * t->strides[1];
    if (t->ndim > 2) off += k * t->strides[2];
    return (float *)t->data + off;
}

/* o = sum_i w_i o_i / sum_i w_i with w_i = e^(lse_i - m), m = max lse_i; lse = m + ln sum_i w_i; all states
 * empty (m = -inf) gives (0, -inf). A state of weight 0 is never read (an empty partial may hold NaN).
 * Each chunk of a row reads every state before writing out, so out may be one of the states. */
static void sk_merge_row(const attnrt_merge_args_t *a, int64_t t, int64_t h, int64_t D)
{
    float m = -INFINITY;
    for (uint32_t i = 0; i < a->num_states; i++) m = fmaxf(m, *sk_at(a->lses[i], t, h, 0));
    double sum = 0.0;
    for (uint32_t i = 0; m != -INFINITY && i < a->num_states; i++) sum += exp((double)*sk_at(a->lses[i], t, h, 0) - m);
    const double lse = m == -INFINITY ? -INFINITY : (double)m + log(sum);
    double keep = m == -INFINITY ? 0.0 : 1.0 / sum; /* sinks join the denominator once, after the merge */
    if (a->sinks && m != -INFINITY) keep /= 1.0 + exp((double)*sk_at(a->sinks, h, 0, 0) - lse);
    for (int64_t d0 = 0; d0 < D; d0 += SK_CHUNK) {
        const int64_t n = D - d0 < SK_CHUNK ? D - d0 : SK_CHUNK;
        double acc[SK_CHUNK] = {0};
        for (uint32_t i = 0; m != -INFINITY && i < a->num_states; i++) {
            const double w = exp((double)*sk_at(a->lses[i], t, h, 0) - m);
            if (w == 0.0) continue;
            const float *o = sk_at(a->states[i], t, h, d0);
            for (int64_t d = 0; d < n; d++) acc[d] += w * o[d];
        }
        float *out = sk_at(a->out, t, h, d0);
        for (int64_t d = 0; d < n; d++) out[d] = (float)(acc[d] * keep);
    }
    if (a->out_lse) *sk_at(a->out_lse, t, h, 0) = (float)lse;
}

static attnrt_status_t sk_merge_states(void *device, const attnrt_merge_args_t *args, void *stream)
{
    (void)device;
    (void)stream; /* synchronous: done when the call returns, on any stream */
    attnrt_merge_args_t a; /* the fields an older caller lacks read as zero */
    memset(&a, 0, sizeof a);
    memcpy(&a, args, args->struct_size < sizeof a ? args->struct_size : sizeof a);
    /* The runtime checked shapes, strides and dtypes against the op and asked op_supported; a plugin
     * called directly (a test harness) gets the same refusal rather than a wrong answer. */
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_MERGE_STATES, .q_dtype = a.out->dtype,
                           .kv_dtype = a.states[0]->dtype, .features = a.sinks ? ATTNRT_FEATURE_SINKS : 0u};
    char reason[256];
    if (sk_merge_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return sk_fail(ATTNRT_ERR_UNSUPPORTED, SK_NAME ":0: merge_states: %s", reason);
    const int64_t T = a.out->shape[0], H = a.out->shape[1], D = a.out->shape[2];
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) sk_merge_row(&a, t, h, D);
    return ATTNRT_OK;
}

/* ---- the vtable and the one exported symbol -------------------------------------------------------- */

static const attnrt_plugin_api_t sk_api = {
    .struct_size        = ATTNRT_PLUGIN_API_STRUCT_SIZE,
    .abi_major          = ATTNRT_ABI_MAJOR,
    .abi_minor          = ATTNRT_ABI_MINOR,
    .name               = SK_NAME, /* must match the file name attnrt_<name>.so */
    .version            = "0.1.0",
    .probe              = sk_probe,
    .init               = sk_init,
    .shutdown           = sk_shutdown,
    .last_error         = sk_last_error,
    .device_count       = sk_device_count,
    .device_properties  = sk_device_properties,
    .device_open        = sk_device_open,
    .device_close       = sk_device_close,
    .mem_alloc          = sk_mem_alloc,
    .mem_free           = sk_mem_free,
    .mem_copy           = sk_mem_copy,
    .stream_create      = sk_stream_create,
    .stream_destroy     = sk_stream_destroy,
    .stream_synchronize = sk_stream_synchronize,
    .op_supported       = sk_op_supported,
    .merge_states       = sk_merge_states,
    /* every other entry NULL: no attributes, mem_set by copies, no events, no other op */
};

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor);

ATTNRT_PLUGIN_EXPORT const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor)
{
    (void)host_abi_minor; /* any minor of our major: the runtime reads only what both sides know */
    if (host_abi_major != ATTNRT_ABI_MAJOR) {
        sk_fail(ATTNRT_ERR_ABI_MISMATCH, SK_NAME " plugin speaks ABI %d.x, the runtime %u.x", ATTNRT_ABI_MAJOR,
                host_abi_major);
        return NULL;
    }
    return &sk_api;
}
