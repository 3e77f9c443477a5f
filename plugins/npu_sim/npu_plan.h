/* npu_plan.h — what attention_plan leaves for attention_run: the kernel the rules chose for the batch's
 * block table, the shapes the plan was made for and the op's simulated cost. Read-only once made: runs
 * of one plan may race on distinct streams. Internal to the plugin; plugin-owned, freed by
 * npu_attention_plan_destroy. */
#ifndef ATTNRT_NPU_PLAN_H
#define ATTNRT_NPU_PLAN_H

#include <stdint.h>

#include "npu_cost.h"
#include "npu_device.h"
#include "npu_online.h"

typedef struct npu_attn_plan {
    const npu_device_t *device;
    npu_kernel_t kernel;
    char         kernel_name[32];
    int64_t      max_model_len;  /* block table columns x block_size                               */
    int64_t      block_size;     /* = the flash partition; the naive block is all of max_model_len */
    int64_t      bt_cols;        /* partitions (blocks) per request                                */
    int64_t      prefill_chunk;
    int64_t      window;         /* sliding: window_left + 1 keys per row; 0: none                  */
    /* the shapes the plan was made for; a run with others is refused */
    int64_t num_tokens, num_seqs, num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    attnrt_op_stats_t stats;     /* the op's cost, recorded by every run                            */
} npu_attn_plan_t;

/* The workspace a run of plan p needs: its scratch, plus room to align it (0 when a run computes nothing). */
size_t npu_attn_workspace_bytes(const npu_attn_plan_t *p);

/* End (exclusive) of the prefill chunk that starts at position p of a request whose queries end at
 * `end`: at most `chunk` tokens, and never across a partition (block) boundary [S]. */
static inline int64_t npu_chunk_end(int64_t p, int64_t end, int64_t chunk, int64_t block)
{
    int64_t e = p + chunk < end ? p + chunk : end;
    if (p >= 0 && block > 0) {
        const int64_t boundary = (p / block + 1) * block;
        if (boundary < e) e = boundary;
    }
    return e;
}

/* Keys [*lo, *hi] (inclusive; empty when *lo > *hi) a query at position pq sees among [0, seq_len):
 * causal keeps p_k <= pq; window_left / window_right (>= 0) are inclusive counts. */
static inline void npu_key_range(int64_t pq, int64_t seq_len, int causal, int64_t window_left, int64_t window_right,
                                 int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = seq_len - 1;
    if (window_left >= 0 && pq - window_left > a) a = pq - window_left;
    if (causal && pq < b) b = pq;
    if (window_right >= 0 && pq + window_right < b) b = pq + window_right;
    *lo = a;
    *hi = b;
}

#endif
