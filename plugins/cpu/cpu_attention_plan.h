/* cpu_attention_plan.h — what attention_plan leaves for attention_run: the work items and the scratch
 * each pool participant uses. Internal to the cpu plugin; plugin-owned, freed by
 * cpu_attention_plan_destroy. */
#ifndef ATTNRT_CPU_ATTENTION_PLAN_H
#define ATTNRT_CPU_ATTENTION_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "cpu_threads.h"

/* Keys gathered, dequantised and scored together: the unit of one online-softmax update. */
#define CPU_ATTN_KEY_CHUNK 32
/* Query rows (tokens x heads of one KV head) one item carries: enough to amortise each dequantised K/V
 * row over many dot products, small enough that its accumulators stay in L2. */
#define CPU_ATTN_ROWS_PER_ITEM 64

/* One work item: query tokens [q_first, q_first + q_count) of request `seq` (indices within the
 * request), query heads kv_head * group + [head_first, head_first + head_count). */
typedef struct cpu_attn_item {
    int32_t seq;
    int32_t q_first;
    int32_t q_count;
    int32_t kv_head;
    int32_t head_first;
    int32_t head_count;
} cpu_attn_item_t;

typedef struct cpu_attn_plan {
    const cpu_pool_t *pool;       /* the pool whose participants own the scratch slices          */
    /* shapes the items and the scratch were made for; run refuses args of other shapes */
    int64_t num_tokens, num_seqs, num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    cpu_attn_item_t *items;       /* costliest first, so the long ones start early               */
    size_t           num_items;
    /* scratch: one slice of scratch_stride bytes per participant, 64-byte aligned sub-buffers */
    char  *scratch;
    size_t scratch_stride;
    unsigned scratch_slices;
} cpu_attn_plan_t;

/* Byte offsets of the sub-buffers inside one participant's slice. */
typedef struct cpu_attn_scratch_layout {
    size_t q, acc, pv, k, v, s, m, l, pos, total;
} cpu_attn_scratch_layout_t;

/* Computes the layout for the given head dims (shared by plan and run). */
cpu_attn_scratch_layout_t cpu_attn_scratch_layout(int64_t head_dim_qk, int64_t head_dim_v);

/* Keys a query at position pq may see among [0, seq_len): [*lo, *hi], empty when *lo > *hi. Causal keeps
 * p_k <= pq; window_left/right (>= 0) are inclusive counts. Both ends grow with pq, so a tile of
 * consecutive queries needs exactly [lo(first), hi(last)]. 64-bit: pq may be negative (cross-attention
 * with seq_len < query length) and pq +- window must not overflow. */
static inline void cpu_attn_key_range(int64_t pq, int64_t seq_len, int causal, int64_t window_left,
                                      int64_t window_right, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = seq_len - 1;
    if (window_left >= 0 && pq - window_left > a) a = pq - window_left;
    if (causal && pq < b) b = pq;
    if (window_right >= 0 && pq + window_right < b) b = pq + window_right;
    *lo = a;
    *hi = b;
}

#endif
