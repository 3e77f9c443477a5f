/* plugin_tensor.h — tensor views: how a plugin reads an attnrt_tensor_t once it has been checked.
 *
 * A view is the tensor as compute reads it: base address, element strides, storage kind and element
 * size, decoded once per call instead of once per row. Two forms:
 *  - plugin_view_t, for host code that walks the tensor itself (cpu, npu_sim, a reference);
 *  - plugin_tensor_ref(), for a device plugin filling its kernel's argument struct (pointer + strides).
 *
 * Ownership: a view borrows the caller's tensor data for the one call it was made in (the ABI lends
 * tensors for a call); it owns nothing, is never freed, and must not outlive the call. Nothing here
 * checks a shape: plugin_check.h does that first.
 */
#ifndef ATTNRT_PLUGIN_TENSOR_H
#define ATTNRT_PLUGIN_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "dtype_convert.h"

typedef struct plugin_view {
    char     *data;                /* borrowed for the call; NULL: the tensor is absent (or a plan without data) */
    int64_t   st[ATTNRT_MAX_DIMS]; /* strides in elements; 0 past the tensor's ndim                              */
    dc_kind_t kind;                /* storage kind of a float tensor; DC_INVALID for integer and bool tensors    */
    size_t    es;                  /* bytes per element                                                         */
} plugin_view_t;

/* The view of t; a NULL t gives the empty view (data NULL, strides 0). */
static inline plugin_view_t plugin_view_of(const attnrt_tensor_t *t)
{
    plugin_view_t v = {NULL, {0}, DC_INVALID, 0};
    if (!t) return v;
    v.data = t->data;
    for (int i = 0; i < t->ndim && i < ATTNRT_MAX_DIMS; i++) v.st[i] = t->strides[i];
    v.kind = dc_kind_of(t->dtype);
    v.es = (size_t)t->dtype.bits / 8;
    return v;
}

/* Address of element (i, j, 0, ...): the start of row (i, j) of a [.., .., D] tensor. */
static inline char *plugin_view_at(const plugin_view_t *v, int64_t i, int64_t j)
{
    return v->data + (size_t)(i * v->st[0] + j * v->st[1]) * v->es;
}

/* Address of element (i, j, k, 0, ...): a row of a 4-D cache or state pool. */
static inline char *plugin_view_at3(const plugin_view_t *v, int64_t i, int64_t j, int64_t k)
{
    return v->data + (size_t)(i * v->st[0] + j * v->st[1] + k * v->st[2]) * v->es;
}

/* Element i of a 1-D int32 tensor. */
static inline int32_t plugin_view_i32(const plugin_view_t *v, int64_t i)
{
    return ((const int32_t *)(const void *)v->data)[i * v->st[0]];
}

/* Element (i, j) of a 2-D int32 tensor. */
static inline int32_t plugin_view_i32_2(const plugin_view_t *v, int64_t i, int64_t j)
{
    return ((const int32_t *)(const void *)v->data)[i * v->st[0] + j * v->st[1]];
}

/* Element i of a 1-D f32 tensor. */
static inline float plugin_view_f32(const plugin_view_t *v, int64_t i)
{
    return ((const float *)(const void *)v->data)[i * v->st[0]];
}

/* Element i of a 0/1 flag tensor (bool, uint8, int8 or int32); an absent tensor reads 1 ("has one"). */
static inline int plugin_view_flag(const plugin_view_t *v, int64_t i)
{
    if (!v->data) return 1;
    if (v->es == 4) return ((const int32_t *)(const void *)v->data)[i * v->st[0]] != 0;
    return ((const uint8_t *)v->data)[i * v->st[0]] != 0;
}

/* Element (i, j) of an f32 / f16 / bf16 tensor, as f32. */
static inline float plugin_view_scalar(const plugin_view_t *v, int64_t i, int64_t j)
{
    const int64_t at = i * v->st[0] + j * v->st[1];
    switch (v->kind) {
    case DC_F16: return dc_f16_to_f32(((const uint16_t *)(const void *)v->data)[at]);
    case DC_BF16: return dc_bf16_to_f32(((const uint16_t *)(const void *)v->data)[at]);
    default: return ((const float *)(const void *)v->data)[at];
    }
}

/* For a kernel's argument struct: writes t's first n strides into st (0 past its ndim) and returns its
 * data; an absent tensor gives NULL and zero strides. The pointer is the caller's, borrowed for the call. */
static inline void *plugin_tensor_ref(const attnrt_tensor_t *t, int64_t *st, int n)
{
    for (int i = 0; i < n; i++) st[i] = t && i < t->ndim ? t->strides[i] : 0;
    return t ? t->data : NULL;
}

/* x clamped to [lo, hi]: how every plugin trusts lengths it reads from device metadata. */
static inline int64_t plugin_clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* a * b and a + b, or SIZE_MAX when the result does not fit (an allocation of that size then fails). */
static inline size_t plugin_size_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t plugin_size_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Request b's query length in a host batch, its bounds clamped to the T query rows as a run clamps them:
 * metadata that claims more tokens than the query has plans no more work than a run can do. */
static inline int64_t plugin_batch_query_len(const attnrt_batch_host_t *batch, int64_t b, int64_t T)
{
    const int64_t lo = plugin_clamp64(batch->query_start_loc[b], 0, T);
    return plugin_clamp64(batch->query_start_loc[b + 1], lo, T) - lo;
}

#endif /* ATTNRT_PLUGIN_TENSOR_H */
