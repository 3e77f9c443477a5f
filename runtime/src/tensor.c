/* Tensor descriptors: dtype facts and the argument checks every op shares. */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "struct_in.h"
#include "tensor.h"

static const struct {
    uint8_t     code, bits;
    uint32_t    bit;
    const char *name;
} dtypes[] = {
    {ATTNRT_DTYPE_CODE_FLOAT, 32, DT_F32, "f32"},
    {ATTNRT_DTYPE_CODE_FLOAT, 16, DT_F16, "f16"},
    {ATTNRT_DTYPE_CODE_BFLOAT, 16, DT_BF16, "bf16"},
    {ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN, 8, DT_E4M3, "fp8_e4m3"},
    {ATTNRT_DTYPE_CODE_FLOAT8_E5M2, 8, DT_E5M2, "fp8_e5m2"},
    {ATTNRT_DTYPE_CODE_INT, 32, DT_I32, "i32"},
    {ATTNRT_DTYPE_CODE_INT, 64, DT_I64, "i64"},
    {ATTNRT_DTYPE_CODE_BOOL, 8, DT_BOOL, "bool"},
    {ATTNRT_DTYPE_CODE_UINT, 8, DT_U8, "u8"},
};

static int dtype_index(attnrt_dtype_t dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].code == dtype.code && dtypes[i].bits == dtype.bits && dtype.lanes == 1) return (int)i;
    return -1;
}

uint32_t attnrt_dtype_bit(attnrt_dtype_t dtype)
{
    int i = dtype_index(dtype);
    return i < 0 ? 0 : dtypes[i].bit;
}

const char *attnrt_dtype_name(attnrt_dtype_t dtype)
{
    int i = dtype_index(dtype);
    return i < 0 ? "unknown" : dtypes[i].name;
}

const char *attnrt_dtype_describe(attnrt_dtype_t dtype, char *buf, size_t cap)
{
    int i = dtype_index(dtype);
    attnrt_dtype_t scalar = dtype;
    scalar.lanes = 1;
    int s = dtype_index(scalar);
    if (i >= 0)
        snprintf(buf, cap, "%s", dtypes[i].name);
    else if (s >= 0)
        snprintf(buf, cap, "%sx%u (lanes = %u; libattnrt takes scalar dtypes, lanes = 1)", dtypes[s].name,
                 dtype.lanes, dtype.lanes);
    else
        snprintf(buf, cap, "{code %u, bits %u, lanes %u} (a dtype libattnrt does not know)", dtype.code, dtype.bits,
                 dtype.lanes);
    return buf;
}

size_t attnrt_dtype_size(attnrt_dtype_t dtype) { return dtype_index(dtype) >= 0 ? dtype.bits / 8u : 0; }

int attnrt_dtype_equal(attnrt_dtype_t a, attnrt_dtype_t b)
{
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

attnrt_status_t attnrt_tensor_init(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim,
                                   const int64_t *shape)
{
    attnrt_clear_error();
    if (!t) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_tensor_init: t is NULL");
    if (ndim < 1 || ndim > ATTNRT_MAX_DIMS)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_tensor_init: ndim = %d, expected 1..%d", ndim,
                           ATTNRT_MAX_DIMS);
    if (!shape) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_tensor_init: shape is NULL");
    if (dtype_index(dtype) < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_tensor_init: dtype {code %u, bits %u, lanes %u} is "
                           "not one libattnrt knows", dtype.code, dtype.bits, dtype.lanes);
    for (int32_t d = 0; d < ndim; d++)
        if (shape[d] < 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_tensor_init: shape[%d] = %lld < 0", d,
                               (long long)shape[d]);
    attnrt_tensor_t made;
    memset(&made, 0, sizeof made);
    made.struct_size = sizeof made;
    made.data = data;
    made.dtype = dtype;
    made.ndim = ndim;
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        made.shape[d] = shape[d];
        made.strides[d] = stride;
        if (d > 0 && __builtin_mul_overflow(stride, shape[d] > 0 ? shape[d] : 1, &stride))
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_tensor_init: the strides of shape[%d..%d] overflow "
                               "int64", d, ndim - 1);
    }
    *t = made;
    return ATTNRT_OK;
}

static void dtype_set_names(uint32_t set, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (set & dtypes[i].bit) {
            int n = snprintf(out + used, used < cap ? cap - used : 0, "%s%s", used ? ", " : "", dtypes[i].name);
            if (n > 0) used += (size_t)n;
        }
}

static void shape_text(const attnrt_tensor_t *t, char *out, size_t cap)
{
    size_t used = 0;
    for (int32_t d = 0; d <= t->ndim; d++) {
        int n = d == t->ndim ? snprintf(out + used, used < cap ? cap - used : 0, "]")
                             : snprintf(out + used, used < cap ? cap - used : 0, "%s%lld", d ? ", " : "[",
                                        (long long)t->shape[d]);
        if (n > 0) used += (size_t)n;
    }
}

/* Size and extent within ATTNRT_TENSOR_MAX_BYTES, each product checked before it is formed; then the
 * address range. A tensor with no elements spans nothing. */
static attnrt_status_t check_extent(const char *fn, const char *name, const attnrt_tensor_t *t)
{
    const int64_t elem = (int64_t)attnrt_dtype_size(t->dtype);
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0) return ATTNRT_OK;
    char shape[128];
    int64_t bytes = elem;
    int too_big = 0;
    for (int32_t d = 0; d < t->ndim && !too_big; d++)
        too_big = __builtin_mul_overflow(bytes, t->shape[d], &bytes) || bytes > ATTNRT_TENSOR_MAX_BYTES;
    if (too_big) {
        shape_text(t, shape, sizeof shape);
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.shape = %s holds more than 2^48 bytes of %lld-byte "
                           "elements; libattnrt takes tensors of at most 2^48 bytes", fn, name, shape,
                           (long long)elem);
    }
    int64_t extent = 0;
    for (int32_t d = 0; d < t->ndim; d++) {
        int64_t step;
        int overflow = __builtin_mul_overflow(t->shape[d] - 1, t->strides[d], &step) ||
                       __builtin_mul_overflow(step, elem, &step) || __builtin_add_overflow(extent, step, &extent);
        if (overflow || extent > ATTNRT_TENSOR_MAX_BYTES - elem)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] = %lld with shape[%d] = %lld: its "
                               "extent, the sum of (shape[i] - 1) * strides[i] * %lld bytes, %s; libattnrt takes "
                               "tensors of at most 2^48 bytes", fn, name, d, (long long)t->strides[d], d,
                               (long long)t->shape[d], (long long)elem,
                               overflow ? "overflows int64" : "exceeds 2^48 bytes");
    }
    if (t->data && (uintptr_t)t->data > UINTPTR_MAX - (uint64_t)(extent + elem))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.data = %p plus its extent of %lld bytes wraps the "
                           "address space", fn, name, t->data, (long long)(extent + elem));
    return ATTNRT_OK;
}

uint64_t attnrt_tensor_span(const attnrt_tensor_t *t)
{
    uint64_t extent = 0;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return 0;
        extent += (uint64_t)(t->shape[d] - 1) * (uint64_t)t->strides[d];
    }
    return (extent + 1) * attnrt_dtype_size(t->dtype);
}

attnrt_status_t attnrt_check_spans(attnrt_context_t *ctx, const char *fn, const attnrt_tensor_t *const *tensors,
                                   const char *const *names, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (tensors[i] && tensors[i]->data)
            TRY(attnrt_context_check_span(ctx, fn, names[i], tensors[i]->data, attnrt_tensor_span(tensors[i])));
    return ATTNRT_OK;
}

static void dims_text(const int *dims, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        int k = snprintf(out + used, used < cap ? cap - used : 0, "%s%d", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                         dims[i]);
        if (k > 0) used += (size_t)k;
    }
}

attnrt_status_t attnrt_check_no_overlap(const char *fn, const char *name, const attnrt_tensor_t *t)
{
    if (!t) return ATTNRT_OK;
    int dims[ATTNRT_MAX_DIMS], n = 0;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return ATTNRT_OK; /* no elements, nothing to share */
        if (t->shape[d] > 1) dims[n++] = d;
    }
    for (int i = 1; i < n; i++) /* insertion sort by stride; on ties the inner dim first, as in row-major */
        for (int j = i; j > 0 && (t->strides[dims[j]] < t->strides[dims[j - 1]] ||
                                  (t->strides[dims[j]] == t->strides[dims[j - 1]] && dims[j] > dims[j - 1])); j--) {
            int tmp = dims[j];
            dims[j] = dims[j - 1];
            dims[j - 1] = tmp;
        }
    int64_t span = 1; /* elements covered by the dims before dims[i]; < 2^48 after check_extent */
    for (int i = 0; i < n; i++) {
        const int d = dims[i];
        const int64_t stride = t->strides[d];
        if (stride == 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] = 0 with shape[%d] = %lld: its %lld "
                               "entries along dim %d are one memory, so writes to them race; an output must not "
                               "overlap itself (stride 0 broadcasts inputs only)", fn, name, d, d,
                               (long long)t->shape[d], (long long)t->shape[d], d);
        if (stride < span) {
            char before[48];
            dims_text(dims, i, before, sizeof before);
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s overlaps itself: dim %d (strides[%d] = %lld) "
                               "steps inside the %lld elements that dim%s %s span%s, so writes to them race; an "
                               "output's dims, sorted by stride, must each step past the ones before", fn, name, d, d,
                               (long long)stride, (long long)span, i > 1 ? "s" : "", before, i > 1 ? "" : "s");
        }
        span += (t->shape[d] - 1) * stride;
    }
    return ATTNRT_OK;
}

attnrt_status_t attnrt_check_tensor(const char *fn, const char *name, const attnrt_tensor_t *t, int optional,
                                    int32_t ndim, uint32_t dtype_set, int inner_contiguous, int need_data)
{
    if (!t)
        return optional ? ATTNRT_OK : attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, name);
    TRY(attnrt_tensor_struct_check(fn, name, t));
    if (t->ndim != ndim)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.ndim = %d, expected %d", fn, name, t->ndim, ndim);
    if (!(attnrt_dtype_bit(t->dtype) & dtype_set)) {
        char allowed[128], got[96];
        dtype_set_names(dtype_set, allowed, sizeof allowed);
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.dtype = %s, expected one of %s", fn, name,
                           attnrt_dtype_describe(t->dtype, got, sizeof got), allowed);
    }
    for (int32_t d = 0; d < ndim; d++) {
        if (t->shape[d] < 0 || t->shape[d] > INT32_MAX)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] = %lld is out of range [0, 2^31)", fn,
                               name, d, (long long)t->shape[d]);
        if (t->strides[d] < 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] = %lld < 0", fn, name, d,
                               (long long)t->strides[d]);
    }
    TRY(check_extent(fn, name, t));
    if (inner_contiguous && t->strides[ndim - 1] != 1 && t->shape[ndim - 1] > 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.strides[%d] = %lld; the innermost (head_dim) stride "
                           "must be 1", fn, name, ndim - 1, (long long)t->strides[ndim - 1]);
    if (need_data && !t->data) {
        int empty = 0; /* NULL data is fine only for a tensor with no elements */
        for (int32_t d = 0; d < ndim; d++) empty |= t->shape[d] == 0;
        if (!empty) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.data is NULL", fn, name);
    }
    return ATTNRT_OK;
}

attnrt_status_t attnrt_check_rows(const char *fn, const char *count_name, int64_t count, const char *heads_name,
                                  int64_t heads)
{
    if (count <= ATTNRT_MAX_ROWS / (heads > 0 ? heads : 1)) return ATTNRT_OK;
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %lld times %s = %lld is %lld rows; one call computes at "
                       "most 2^31 - 1 rows (split the batch)", fn, count_name, (long long)count, heads_name,
                       (long long)heads, (long long)(count * heads));
}

attnrt_status_t attnrt_check_dim(const char *fn, const char *name, const attnrt_tensor_t *t, int dim, int64_t expected,
                                 const char *what)
{
    if (t->shape[dim] == expected) return ATTNRT_OK;
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.shape[%d] = %lld, expected %s = %lld", fn, name, dim,
                       (long long)t->shape[dim], what, (long long)expected);
}

attnrt_status_t attnrt_check_same_dtype(const char *fn, const char *name, const attnrt_tensor_t *t,
                                        const char *ref_name, const attnrt_tensor_t *ref)
{
    if (attnrt_dtype_equal(t->dtype, ref->dtype)) return ATTNRT_OK;
    char a[96], b[96];
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.dtype = %s differs from %s.dtype = %s", fn, name,
                       attnrt_dtype_describe(t->dtype, a, sizeof a), ref_name,
                       attnrt_dtype_describe(ref->dtype, b, sizeof b));
}

static attnrt_status_t check_one_scale(const char *fn, const char *name, const attnrt_tensor_t *s,
                                       const attnrt_tensor_t *cache, int need_data, int *per_block)
{
    if (!s)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL but the cache is %s: fp8 caches need a scale "
                           "(f32 [1] per tensor or [num_blocks, num_kv_heads] per block and head)",
                           fn, name, attnrt_dtype_name(cache->dtype));
    /* A well-formed tensor of another rank is a granularity we do not support; a malformed one is invalid. */
    if (s->struct_size >= ATTNRT_TENSOR_STRUCT_SIZE && s->ndim > 2 && s->ndim <= ATTNRT_MAX_DIMS)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: %s has ndim = %d: fp8 scale granularity must be per tensor "
                           "(f32 [1]) or per block and KV head (f32 [num_blocks, num_kv_heads])", fn, name,
                           s->ndim);
    attnrt_status_t st = attnrt_check_tensor(fn, name, s, 0, s->ndim == 2 ? 2 : 1, DT_F32, 0, need_data);
    if (st != ATTNRT_OK) return st;
    if (s->ndim == 1) {
        *per_block = 0;
        return attnrt_check_dim(fn, name, s, 0, 1, "1 (per-tensor scale)");
    }
    *per_block = 1;
    st = attnrt_check_dim(fn, name, s, 0, cache->shape[0], "num_blocks");
    return st != ATTNRT_OK ? st : attnrt_check_dim(fn, name, s, 1, cache->shape[2], "num_kv_heads");
}

attnrt_status_t attnrt_check_kv_scales(const char *fn, const attnrt_tensor_t *cache, const attnrt_tensor_t *key_scale,
                                       const attnrt_tensor_t *value_scale, int need_data, int *per_block)
{
    *per_block = 0;
    if (!(attnrt_dtype_bit(cache->dtype) & DT_FP8)) {
        if (key_scale || value_scale)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s given but the cache is %s: scales apply to fp8 "
                               "caches only", fn, key_scale ? "key_scale" : "value_scale",
                               attnrt_dtype_name(cache->dtype));
        return ATTNRT_OK;
    }
    int k_block = 0, v_block = 0;
    attnrt_status_t st = check_one_scale(fn, "key_scale", key_scale, cache, need_data, &k_block);
    if (st == ATTNRT_OK) st = check_one_scale(fn, "value_scale", value_scale, cache, need_data, &v_block);
    if (st != ATTNRT_OK) return st;
    if (k_block != v_block)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: key_scale is per %s but value_scale per %s; use one "
                           "granularity", fn, k_block ? "block" : "tensor", v_block ? "block" : "tensor");
    *per_block = k_block;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_check_kv_scale(const char *fn, const char *name, const attnrt_tensor_t *cache,
                                      const attnrt_tensor_t *scale, int need_data, int *per_block)
{
    *per_block = 0;
    if (!(attnrt_dtype_bit(cache->dtype) & DT_FP8)) {
        if (scale)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s given but the cache is %s: scales apply to fp8 "
                               "caches only", fn, name, attnrt_dtype_name(cache->dtype));
        return ATTNRT_OK;
    }
    return check_one_scale(fn, name, scale, cache, need_data, per_block);
}

int attnrt_cache_is_hnd(const attnrt_tensor_t *cache) { return cache->strides[1] < cache->strides[2]; }

int attnrt_tensor_same_layout(const attnrt_tensor_t *a, const attnrt_tensor_t *b)
{
    if (!a || !b) return a == b;
    if (a->ndim != b->ndim || !attnrt_dtype_equal(a->dtype, b->dtype)) return 0;
    for (int32_t d = 0; d < a->ndim && d < ATTNRT_MAX_DIMS; d++)
        if (a->shape[d] != b->shape[d] || a->strides[d] != b->strides[d]) return 0;
    return 1;
}
