/* npu_cost.h — the cost model (docs/backends/npu_sim.md, "Cost model"): per KV partition a
 * row visits, t = max(bytes / bw_eff, flops / peak) + partition overhead; per launch, a launch
 * overhead. Bytes are whole partitions of K and V (head dims padded to 64): naive reads its whole
 * compiled block whatever the position, flash only the partitions it touches. */
#ifndef ATTNRT_NPU_COST_H
#define ATTNRT_NPU_COST_H

#include <stdint.h>

#include "attnrt_plugin.h"
#include "npu_profile.h"

typedef enum npu_kernel {
    NPU_KERNEL_NAIVE = 0, /* one block of max_model_len tokens per request                     */
    NPU_KERNEL_FLASH,     /* partitions of block_size tokens, merged with online softmax       */
    NPU_KERNEL_SLIDING,   /* one block of window size per request                              */
    NPU_KERNEL_SPARSE,    /* sparse MLA: each row gathers its top-k latent rows, partition by partition */
} npu_kernel_t;

typedef struct npu_cost_shape {
    npu_kernel_t kernel;
    int64_t      num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    int64_t      q_bytes, out_bytes, kv_bytes; /* element sizes                                   */
    int64_t      partition;                    /* flash: P = block_size; naive: max_model_len    */
    int64_t      window;                       /* sliding: keys per row (window_left + 1)         */
    int          latent;                       /* MLA: K and V are one latent row of head_dim_qk  */
    int64_t      topk;                         /* sparse MLA: indices per query row               */
} npu_cost_shape_t;

/* Zeroes *s and marks it simulated, for op `op`. */
void npu_cost_begin(attnrt_op_stats_t *s, uint32_t op);

/* One decode launch group: `rows` real rows whose visible keys are [lo[i], hi[i]) (hi = seq_len),
 * padded up to its bucket (a power of two <= NPU_DECODE_BUCKET_MAX). Adds time and counters. */
void npu_cost_decode(const npu_profile_t *p, const npu_cost_shape_t *sh, const int64_t *lo, const int64_t *hi,
                     int64_t rows, attnrt_op_stats_t *s);
/* Decode rows are launched in groups of at most NPU_DECODE_BUCKET_MAX; the bucket of a group. */
int64_t npu_cost_bucket(int64_t rows);

/* One prefill chunk: `rows` real query rows padded to `chunk`, seeing keys [lo, hi). */
void npu_cost_prefill_chunk(const npu_profile_t *p, const npu_cost_shape_t *sh, int64_t rows, int64_t chunk,
                            int64_t lo, int64_t hi, attnrt_op_stats_t *s);

/* A KV write of `tokens` rows of Hkv heads (src element size -> cache element size). */
void npu_cost_kv_write(const npu_profile_t *p, int64_t tokens, int64_t num_kv_heads, int64_t head_dim_k,
                       int64_t head_dim_v, int64_t src_bytes, int64_t cache_bytes, attnrt_op_stats_t *s);
/* An n-way merge of [T, H, D] states. */
void npu_cost_merge(const npu_profile_t *p, int64_t n, int64_t tokens, int64_t heads, int64_t head_dim,
                    int64_t state_bytes, int64_t out_bytes, attnrt_op_stats_t *s);

#endif
