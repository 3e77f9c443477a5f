/* Tensor descriptors: dtype facts and the argument checks every op shares. Each check names the
 * function, the argument and the bad value in its message. */
#ifndef ATTNRT_TENSOR_H
#define ATTNRT_TENSOR_H

#include "internal.h"

/* Returns from the calling check at the first failing step. */
#define TRY(expr)                                  \
    do {                                           \
        attnrt_status_t try_st_ = (expr);          \
        if (try_st_ != ATTNRT_OK) return try_st_;  \
    } while (0)

/* dtype sets for checks */
enum {
    DT_F32  = 1u << 0,
    DT_F16  = 1u << 1,
    DT_BF16 = 1u << 2,
    DT_E4M3 = 1u << 3,
    DT_E5M2 = 1u << 4,
    DT_I32  = 1u << 5,
    DT_I64  = 1u << 6,
    DT_BOOL = 1u << 7,
    DT_U8   = 1u << 8,
    DT_ACT  = DT_F32 | DT_F16 | DT_BF16,  /* activations: q, k, v, out */
    DT_FP8  = DT_E4M3 | DT_E5M2,
    DT_KV   = DT_ACT | DT_FP8,            /* cache dtypes */
    DT_FLAG = DT_BOOL | DT_U8,            /* 0/1 flags such as has_initial_state */
};

/* The DT_* bit of a dtype, 0 when unknown. */
ATTNRT_HIDDEN uint32_t attnrt_dtype_bit(attnrt_dtype_t dtype);
ATTNRT_HIDDEN int attnrt_dtype_equal(attnrt_dtype_t a, attnrt_dtype_t b);

/* Checks a tensor argument: present (unless optional and NULL), struct_size, ndim, dtype in `dtypes`,
 * shapes >= 0, strides >= 0, innermost stride 1 (when inner_contiguous) and data non-NULL (when
 * need_data). Returns ATTNRT_OK for an absent optional tensor. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_tensor(const char *fn, const char *name, const attnrt_tensor_t *t,
                                                  int optional, int32_t ndim, uint32_t dtypes, int inner_contiguous,
                                                  int need_data);
/* Checks t->shape[dim] == expected; `what` names where the expectation comes from ("Hq = query.shape[1]"). */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_dim(const char *fn, const char *name, const attnrt_tensor_t *t, int dim,
                                               int64_t expected, const char *what);
/* Checks b has a's dtype. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_same_dtype(const char *fn, const char *name, const attnrt_tensor_t *t,
                                                      const char *ref_name, const attnrt_tensor_t *ref);
/* fp8 scales: required (f32 [1] or [num_blocks, Hkv], both alike) for fp8 caches, refused otherwise.
 * *per_block is set to 1 for the per-(block, head) granularity. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_kv_scales(const char *fn, const attnrt_tensor_t *cache,
                                                     const attnrt_tensor_t *key_scale,
                                                     const attnrt_tensor_t *value_scale, int need_data,
                                                     int *per_block);
/* One fp8 scale `name` of `cache` (required for fp8 caches, refused otherwise): f32 [1] or
 * [num_blocks, cache.shape[2]]. *per_block is set to 1 for the per-block granularity. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_kv_scale(const char *fn, const char *name, const attnrt_tensor_t *cache,
                                                    const attnrt_tensor_t *scale, int need_data, int *per_block);
/* 1 when a cache tensor [blocks, block_size, heads, D] is laid out HND (head-major inside a block). */
ATTNRT_HIDDEN int attnrt_cache_is_hnd(const attnrt_tensor_t *cache);
/* Same shape, dtype and strides (data pointers ignored); NULL equals NULL only. */
ATTNRT_HIDDEN int attnrt_tensor_same_layout(const attnrt_tensor_t *a, const attnrt_tensor_t *b);

#endif /* ATTNRT_TENSOR_H */
