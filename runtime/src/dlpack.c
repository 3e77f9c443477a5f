/* attnrt_tensor_from_dlpack: a DLTensor (torch, numpy, cupy, jax) as an attnrt_tensor_t, checked against the
 * context's device. DLPack's dtype codes are ours (attnrt_types.h), so the dtype maps without a table; the device
 * must be the context's own (memory of another device would be read by the wrong plugin). */
#include <stdio.h>
#include <string.h>

#include "attnrt_dlpack.h"
#include "context.h"
#include "tensor.h"

#define FN "attnrt_tensor_from_dlpack"

static const char *device_type_name(int type, char *buf, size_t cap)
{
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case ATTNRT_DEVICE_TYPE_ONEAPI: return "kDLOneAPI"; /* DLPack 0.7 */
    default: snprintf(buf, cap, "device type %d", type); return buf;
    }
}

/* npu_sim simulates its device over host memory: its allocations are host addresses, as a kDLCPU tensor's are. */
static int memory_is_host(const attnrt_context_t *ctx)
{
    return ctx->ref->device_type == ATTNRT_DEVICE_TYPE_EXTDEV && strcmp(ctx->ref->plugin->name, "npu_sim") == 0;
}

/* Whether a DLPack device is the context's device. cuda:N takes kDLCUDA N and kDLCUDAManaged N (managed memory
 * is addressable by the device); npu_sim takes kDLExtDev N and kDLCPU 0. */
static int device_matches(const attnrt_context_t *ctx, DLDevice dev)
{
    const uint32_t type = ctx->ref->device_type;
    const int64_t ordinal = ctx->ref->index, id = dev.device_id;
    switch (type) {
    case ATTNRT_DEVICE_TYPE_CUDA:
        return (dev.device_type == kDLCUDA || dev.device_type == kDLCUDAManaged) && id == ordinal;
    case ATTNRT_DEVICE_TYPE_EXTDEV:
        if (dev.device_type == kDLCPU && id == 0 && memory_is_host(ctx)) return 1;
        return dev.device_type == kDLExtDev && id == ordinal;
    default: return (uint32_t)dev.device_type == type && id == ordinal;
    }
}

static attnrt_status_t device_mismatch(const attnrt_context_t *ctx, DLDevice dev)
{
    char a[32], b[32], expected[96];
    const uint32_t type = ctx->ref->device_type, ordinal = ctx->ref->index;
    const char *mine = device_type_name((int)type, b, sizeof b);
    if (type == ATTNRT_DEVICE_TYPE_CUDA)
        snprintf(expected, sizeof expected, "%s %u or kDLCUDAManaged %u", mine, ordinal, ordinal);
    else if (memory_is_host(ctx))
        snprintf(expected, sizeof expected, "%s %u, or kDLCPU 0: its memory is host memory", mine, ordinal);
    else
        snprintf(expected, sizeof expected, "%s %u", mine, ordinal);
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->device is %s %d, but ctx is %s (%s): pass a tensor on "
                       "the context's device, or open a context on the tensor's", FN,
                       device_type_name((int)dev.device_type, a, sizeof a), (int)dev.device_id, ctx->ref->name,
                       expected);
}

attnrt_status_t attnrt_tensor_from_dlpack(attnrt_context_t *ctx, const DLTensor *dl, attnrt_tensor_t *t)
{
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, FN ": ctx is NULL");
    if (!dl) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, FN ": dl is NULL");
    if (!t) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, FN ": t is NULL");
    if (!device_matches(ctx, dl->device)) return device_mismatch(ctx, dl->device);

    const attnrt_dtype_t dtype = {dl->dtype.code, dl->dtype.bits, dl->dtype.lanes};
    if (attnrt_dtype_size(dtype) == 0) {
        char text[128];
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->dtype is %s", FN,
                           attnrt_dtype_describe(dtype, text, sizeof text));
    }
    if (dl->ndim < 0 || dl->ndim > ATTNRT_MAX_DIMS)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->ndim = %d, expected 0..%d (0 reads as shape [1])", FN,
                           dl->ndim, ATTNRT_MAX_DIMS);
    if (dl->ndim > 0 && !dl->shape) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->shape is NULL", FN);
    if (!dl->data && dl->byte_offset)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->data is NULL with byte_offset %llu", FN,
                           (unsigned long long)dl->byte_offset);
    if (dl->data && (uintptr_t)dl->data > UINTPTR_MAX - dl->byte_offset)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->data %p + byte_offset %llu wraps the address space",
                           FN, dl->data, (unsigned long long)dl->byte_offset);

    attnrt_tensor_t made;
    memset(&made, 0, sizeof made);
    made.struct_size = sizeof made;
    made.data = dl->data ? (char *)dl->data + dl->byte_offset : NULL;
    made.dtype = dtype;
    if (dl->ndim == 0) { /* a scalar: one element */
        made.ndim = 1;
        made.shape[0] = 1;
        made.strides[0] = 1;
        *t = made;
        return ATTNRT_OK;
    }
    made.ndim = dl->ndim;
    for (int32_t d = 0; d < dl->ndim; d++) {
        if (dl->shape[d] < 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->shape[%d] = %lld < 0", FN, d,
                               (long long)dl->shape[d]);
        made.shape[d] = dl->shape[d];
    }
    if (dl->strides) {
        for (int32_t d = 0; d < dl->ndim; d++) {
            if (dl->strides[d] < 0)
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: dl->strides[%d] = %lld < 0: libattnrt takes "
                                   "strides >= 0 (make the view contiguous, e.g. flip(...).contiguous())", FN, d,
                                   (long long)dl->strides[d]);
            made.strides[d] = dl->strides[d];
        }
    } else { /* DLPack's NULL strides: compact row-major */
        int64_t stride = 1;
        for (int32_t d = dl->ndim - 1; d >= 0; d--) {
            made.strides[d] = stride;
            if (d > 0 && __builtin_mul_overflow(stride, made.shape[d] > 0 ? made.shape[d] : 1, &stride))
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: the row-major strides of dl->shape[%d..%d] "
                                   "overflow int64", FN, d, dl->ndim - 1);
        }
    }
    *t = made;
    return ATTNRT_OK;
}
