/* plugin_check.c — see plugin_check.h. */
#include "plugin_check.h"

#include <stdio.h>

#include "plugin_error.h"

/* Writes "[a, b, c]" of n dims (PLUGIN_ANY_DIM as "*") into buf. */
static void dims_string(char *buf, size_t cap, int n, const int64_t *dims)
{
    size_t at = 0;
    at += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < n && at < cap; i++) {
        if (dims[i] == PLUGIN_ANY_DIM)
            at += (size_t)snprintf(buf + at, cap - at, "%s*", i ? ", " : "");
        else
            at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)dims[i]);
    }
    if (at < cap) snprintf(buf + at, cap - at, "]");
}

attnrt_status_t plugin_check_sizes(const attnrt_tensor_t *t, const char *who, const char *op, const char *name)
{
    for (int i = 0; t && i < t->ndim && i < ATTNRT_MAX_DIMS; i++)
        if (t->shape[i] < 0 || t->shape[i] > PLUGIN_MAX_SHAPE)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s.shape[%d] = %lld is out of range [0, 2^31)", who,
                               op, name, i, (long long)t->shape[i]);
    return ATTNRT_OK;
}

attnrt_status_t plugin_check_shape(const attnrt_tensor_t *t, const char *who, const char *op, const char *name,
                                   int ndim, const int64_t *shape, int rows)
{
    char got[160], want[160];
    if (!t) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s is required", who, op, name);
    if (t->ndim != ndim || ndim > ATTNRT_MAX_DIMS) {
        dims_string(want, sizeof want, ndim, shape);
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s has %d dims, expected %d %s", who, op, name,
                           t->ndim, ndim, want);
    }
    attnrt_status_t st = plugin_check_sizes(t, who, op, name);
    if (st != ATTNRT_OK) return st;
    int ok = 1;
    for (int i = 0; i < ndim; i++) {
        if (t->shape[i] < 0 || t->strides[i] < 0) ok = 0;
        if (shape[i] != PLUGIN_ANY_DIM && t->shape[i] != shape[i]) ok = 0;
    }
    if (!ok) {
        dims_string(got, sizeof got, ndim, t->shape);
        dims_string(want, sizeof want, ndim, shape);
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s has shape %s (or a negative stride), expected %s",
                           who, op, name, got, want);
    }
    if (rows && ndim > 0 && t->strides[ndim - 1] != 1 && t->shape[ndim - 1] > 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s has innermost stride %lld; it must be 1", who, op,
                           name, (long long)t->strides[ndim - 1]);
    return ATTNRT_OK;
}

attnrt_status_t plugin_check_act(const attnrt_tensor_t *t, const char *who, const char *op, const char *name)
{
    if (plugin_kind_is_act(dc_kind_of(t->dtype))) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s %s: %s dtype (code %u, %u bits) is not f32, f16 or bf16", who, op,
                       name, t->dtype.code, t->dtype.bits);
}

attnrt_status_t plugin_check_dtype(const attnrt_tensor_t *t, const char *who, const char *op, const char *name,
                                   uint8_t code, uint8_t bits, const char *want)
{
    if (t->dtype.code == code && t->dtype.bits == bits && t->dtype.lanes <= 1) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s dtype (code %u, %u bits) must be %s", who, op, name,
                       t->dtype.code, t->dtype.bits, want);
}

attnrt_status_t plugin_check_flag(const attnrt_tensor_t *t, const char *who, const char *op, const char *name)
{
    const int bits_ok = t->dtype.bits == 8 || (t->dtype.bits == 32 && t->dtype.code != ATTNRT_DTYPE_CODE_BOOL);
    const int code_ok = t->dtype.code == ATTNRT_DTYPE_CODE_BOOL || t->dtype.code == ATTNRT_DTYPE_CODE_UINT ||
                        t->dtype.code == ATTNRT_DTYPE_CODE_INT;
    if (bits_ok && code_ok && t->dtype.lanes <= 1) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s: %s dtype (code %u, %u bits) must be bool, uint8 or int32",
                       who, op, name, t->dtype.code, t->dtype.bits);
}

attnrt_status_t plugin_check_out_kind(dc_kind_t q, dc_kind_t out, const char *who, const char *op)
{
    if (out == q || out == DC_F32) return ATTNRT_OK;
    return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s %s: out dtype %s is neither the query's (%s) nor f32", who, op,
                       dc_kind_name(out), dc_kind_name(q));
}
