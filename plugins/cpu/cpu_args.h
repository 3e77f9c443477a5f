/* cpu_args.h — shape checks and bounds-safe metadata reads shared by the cpu plugin's 1.2 ops (MLA,
 * lightning, gated delta), and the overflow-checked sizes of every plan. Plan and run call the same
 * checks, so a run indexes only by shapes it has verified; device metadata (lengths, slots, block ids)
 * is clamped or skipped where it is read. Shapes are bounded to [0, 2^31) as the runtime bounds them,
 * again here for callers that reach the plugin without the runtime (out-of-tree tools). */
#ifndef ATTNRT_CPU_ARGS_H
#define ATTNRT_CPU_ARGS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnrt_plugin.h"
#include "dtype_convert.h"
#include "plugin_error.h"

#define CPU_ANY_DIM (-1)
#define CPU_MAX_SHAPE INT32_MAX /* the largest size of any dimension */

/* a * b and a + b, or SIZE_MAX when the result does not fit (an allocation of that size then fails). */
static inline size_t cpu_size_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}
static inline size_t cpu_size_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Copies a caller's struct of `given` bytes into `dst` (sizeof `size`): fields beyond the caller's
 * struct_size read as zero, as the ABI's versioning rule says. */
static inline void cpu_args_copy(void *dst, size_t size, const void *src, size_t given)
{
    memset(dst, 0, size);
    memcpy(dst, src, given < size ? given : size);
}

static inline int64_t cpu_clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Writes "[a, b, c]" of n dims (CPU_ANY_DIM as "*") into buf. */
static inline void cpu_dims_string(char *buf, size_t cap, int n, const int64_t *dims)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && at < cap; i++) {
        if (dims[i] == CPU_ANY_DIM)
            at += (size_t)snprintf(buf + at, cap - at, "%s*", i ? ", " : "");
        else
            at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)dims[i]);
    }
    if (at < cap) snprintf(buf + at, cap - at, "]");
}

/* ATTNRT_OK when every size of t is in [0, 2^31); else INVALID_ARGUMENT naming op and tensor. */
static inline attnrt_status_t cpu_check_sizes(const attnrt_tensor_t *t, const char *op, const char *name)
{
    for (int i = 0; t && i < t->ndim && i < ATTNRT_MAX_DIMS; i++)
        if (t->shape[i] < 0 || t->shape[i] > CPU_MAX_SHAPE)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s.shape[%d] = %lld is out of range [0, 2^31)", op,
                               name, i, (long long)t->shape[i]);
    return ATTNRT_OK;
}

/* ATTNRT_OK when t has `ndim` dims equal to shape (CPU_ANY_DIM: any size), sizes in [0, 2^31), strides >= 0 and,
 * when `rows` (data rows: q, k, v, out, caches, states), a unit innermost stride (or an innermost size of
 * 1); else INVALID_ARGUMENT naming op and tensor. */
static inline attnrt_status_t cpu_check_shape(const attnrt_tensor_t *t, const char *op, const char *name, int ndim,
                                              const int64_t *shape, int rows)
{
    char got[160], want[160];
    if (!t) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s is required", op, name);
    if (t->ndim != ndim || ndim > ATTNRT_MAX_DIMS) {
        cpu_dims_string(want, sizeof want, ndim, shape);
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s has %d dims, expected %d %s", op, name, t->ndim,
                           ndim, want);
    }
    attnrt_status_t st = cpu_check_sizes(t, op, name);
    if (st != ATTNRT_OK) return st;
    int ok = 1;
    for (int i = 0; i < ndim; i++) {
        if (t->shape[i] < 0 || t->strides[i] < 0) ok = 0;
        if (shape[i] != CPU_ANY_DIM && t->shape[i] != shape[i]) ok = 0;
    }
    if (!ok) {
        cpu_dims_string(got, sizeof got, ndim, t->shape);
        cpu_dims_string(want, sizeof want, ndim, shape);
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s has shape %s (or a negative stride), expected %s",
                           op, name, got, want);
    }
    if (rows && ndim > 0 && t->strides[ndim - 1] != 1 && t->shape[ndim - 1] > 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s has innermost stride %lld; it must be 1", op, name,
                           (long long)t->strides[ndim - 1]);
    return ATTNRT_OK;
}

/* The activation formats: f32, f16, bf16. */
static inline int cpu_kind_is_act(dc_kind_t k) { return k == DC_F32 || k == DC_F16 || k == DC_BF16; }

static inline attnrt_status_t cpu_check_act(const attnrt_tensor_t *t, const char *op, const char *name)
{
    dc_kind_t k = dc_kind_of(t->dtype);
    if (cpu_kind_is_act(k)) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu %s: %s dtype (code %u, %u bits) is not f32, f16 or bf16", op, name,
                       t->dtype.code, t->dtype.bits);
}

static inline attnrt_status_t cpu_check_dtype(const attnrt_tensor_t *t, const char *op, const char *name, uint8_t code,
                                              uint8_t bits, const char *want)
{
    if (t->dtype.code == code && t->dtype.bits == bits && t->dtype.lanes <= 1) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s dtype (code %u, %u bits) must be %s", op, name,
                       t->dtype.code, t->dtype.bits, want);
}

/* A 0/1 flag tensor: bool / uint8 / int8, or int32. */
static inline attnrt_status_t cpu_check_flag(const attnrt_tensor_t *t, const char *op, const char *name)
{
    const int bits_ok = t->dtype.bits == 8 || (t->dtype.bits == 32 && t->dtype.code != ATTNRT_DTYPE_CODE_BOOL);
    const int code_ok = t->dtype.code == ATTNRT_DTYPE_CODE_BOOL || t->dtype.code == ATTNRT_DTYPE_CODE_UINT ||
                        t->dtype.code == ATTNRT_DTYPE_CODE_INT;
    if (bits_ok && code_ok && t->dtype.lanes <= 1) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %s dtype (code %u, %u bits) must be bool, uint8 or int32",
                       op, name, t->dtype.code, t->dtype.bits);
}

/* The output rule of every attnrt op: the query's dtype, or f32. */
static inline attnrt_status_t cpu_check_out_kind(dc_kind_t q, dc_kind_t out, const char *op)
{
    if (out == q || out == DC_F32) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu %s: out dtype %s is neither the query's (%s) nor f32", op,
                       dc_kind_name(out), dc_kind_name(q));
}

/* Element i of a flag tensor checked by cpu_check_flag; a NULL tensor or data reads as 1 ("has one"). */
static inline int cpu_flag_at(const attnrt_tensor_t *t, int64_t i)
{
    if (!t || !t->data) return 1;
    const int64_t st = t->ndim > 0 ? t->strides[0] : 0;
    if (t->dtype.bits == 32) return ((const int32_t *)t->data)[i * st] != 0;
    return ((const uint8_t *)t->data)[i * st] != 0;
}

/* Element i of a 1-D int32 tensor. */
static inline int32_t cpu_i32_at(const attnrt_tensor_t *t, int64_t i)
{
    return ((const int32_t *)t->data)[i * (t->ndim > 0 ? t->strides[0] : 0)];
}

/* One scalar of an activation format at element offset `at`. */
static inline float cpu_scalar_at(const void *base, dc_kind_t kind, int64_t at)
{
    switch (kind) {
    case DC_F16: return dc_f16_to_f32(((const uint16_t *)base)[at]);
    case DC_BF16: return dc_bf16_to_f32(((const uint16_t *)base)[at]);
    default: return ((const float *)base)[at];
    }
}

#endif
