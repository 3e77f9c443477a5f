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

/* The largest tensor libattnrt takes: its elements (product of the shape) times the element size, and
 * its extent (sum of (shape_i - 1) * stride_i elements, plus one, in bytes), at most 2^48 bytes each.
 * Every product a plan forms from shapes then stays far inside int64. */
#define ATTNRT_TENSOR_MAX_BYTES ((int64_t)1 << 48)

/* The most rows one op computes: num_tokens x num_heads and num_seqs x num_heads stay below 2^31, which
 * bounds the work items a plan makes (per token or request, per head) and keeps row indices in int32. */
#define ATTNRT_MAX_ROWS INT32_MAX

/* The DT_* bit of a dtype, 0 when unknown. */
ATTNRT_HIDDEN uint32_t attnrt_dtype_bit(attnrt_dtype_t dtype);
ATTNRT_HIDDEN int attnrt_dtype_equal(attnrt_dtype_t a, attnrt_dtype_t b);

/* Writes how messages name a dtype: "f32"; "f32x2 (lanes = 2; libattnrt takes scalar dtypes, lanes = 1)";
 * "{code 2, bits 64, lanes 1} (a dtype libattnrt does not know)". Returns buf. */
ATTNRT_HIDDEN const char *attnrt_dtype_describe(attnrt_dtype_t dtype, char *buf, size_t cap);

/* Checks a tensor argument: present (unless optional and NULL), struct_size, ndim, dtype in `dtypes`,
 * shapes in [0, 2^31), strides >= 0, size and extent within ATTNRT_TENSOR_MAX_BYTES (computed without
 * overflow), data + extent not wrapping the address space, innermost stride 1 (when inner_contiguous)
 * and data non-NULL (when need_data). Returns ATTNRT_OK for an absent optional tensor. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_tensor(const char *fn, const char *name, const attnrt_tensor_t *t,
                                                  int optional, int32_t ndim, uint32_t dtypes, int inner_contiguous,
                                                  int need_data);
/* Bytes from t->data to the end of its last element (extent + one element); 0 for an empty tensor.
 * Only for a tensor attnrt_check_tensor accepted. */
ATTNRT_HIDDEN uint64_t attnrt_tensor_span(const attnrt_tensor_t *t);
/* Checks that no two elements of an output share memory (NULL: OK): over the dims of shape > 1 sorted
 * by stride, each stride must be >= the span of the dims before it, so stride 0, overlapping rows and
 * interleavings the test cannot prove disjoint are refused, naming the dims. After attnrt_check_tensor. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_no_overlap(const char *fn, const char *name, const attnrt_tensor_t *t);
/* For each of n tensors with data (NULL tensors and NULL data skipped), that its span stays inside the
 * attnrt_mem_alloc allocation of ctx it starts in (attnrt_context_check_span). Allocates nothing. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_spans(attnrt_context_t *ctx, const char *fn,
                                                 const attnrt_tensor_t *const *tensors, const char *const *names,
                                                 uint32_t n);
/* Checks count x heads <= ATTNRT_MAX_ROWS; the names say where each comes from ("num_tokens = query.shape[0]"). */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_rows(const char *fn, const char *count_name, int64_t count,
                                                const char *heads_name, int64_t heads);
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
