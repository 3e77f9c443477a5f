/* cuda_attention_plan.h — what attention_plan leaves for attention_run. Internal to the cuda plugin.
 *
 * Tensor-core path: a pure decode batch (every request one row tile, one split count) needs no list:
 * the decode kernel derives its item from blockIdx. Otherwise the plan builds the work list on the
 * host (one ck_work_item_t per block of each launch: prefill items, then decode items) and uploads it
 * once into device memory it owns; runs only pass its address (no copy on the run's stream: a run
 * that copied it into the workspace waited ~8-10 us for it before its first kernel; a captured graph
 * refers to the plan's list, which no run writes). Everything a run writes is in the caller's workspace:
 * the split-KV partial states, one arrival counter per split row tile (the tile's last block merges the
 * partials) and the warp-specialized kernel's two item counters. The run zeroes the counters on its own
 * stream before its kernels (a memset node in a captured graph), so runs of one plan on distinct streams
 * with distinct workspaces are independent, and every graph replay starts from zeros.
 *
 *   workspace: [part_lse] [part_o] [split counts (num_parts)] [item counters (2, pf_next)]
 *
 * A capacity plan (cuda_attention_capacity.c) has the same fields, sized for every batch within its capacity: launches
 * of n_prefill and n_decode blocks whatever the batch, its list rewritten on the update's stream, the items a batch
 * does not fill empty (a q_first past any request: the kernels return at once).
 */
#ifndef CK_CUDA_ATTENTION_PLAN_H
#define CK_CUDA_ATTENTION_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_internal.h"

typedef struct cuda_attn_plan {
    const cuda_dev_t *dev;
    /* shapes the plan was made for; run refuses others */
    int64_t num_tokens, num_seqs, num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    int     mma;            /* 1: tensor-core kernels (else the SIMT kernel, no workspace) */
    int     fp8;            /* cache is fp8 (mma path) */
    CUfunction f_prefill, f_decode;
    uint32_t smem_prefill, smem_decode;
    uint32_t dec_threads, dec_threads_plain; /* threads a block of f_decode / f_decode_plain */
    uint32_t prefill_threads; /* 128, or the fast path's (cuda_prefill.c) */
    CUdeviceptr list_dev;   /* the work list in device memory (0: none), list_bytes long */
    size_t   list_bytes;
    uint32_t n_prefill, n_decode;
    int64_t  num_parts;     /* split partial states */
    int32_t  dec_splits;    /* > 0: no list; decode items derived from blockIdx with this split count */
    int      tma_rows;      /* > 0: f_decode is a tensor-copy kernel, boxes of this many rows; the run encodes
                               its maps, or launches f_decode_plain (same items) where the driver will not */
    CUfunction f_decode_plain;
    uint32_t smem_decode_plain;
    CUfunction f_prefill_ws; /* the warp-specialized prefill kernel (tensor copies) in place of f_prefill, which stays
                                the run's fallback; NULL: none */
    uint32_t smem_prefill_ws, prefill_ws_threads;
    int      pf_tma_rows;   /* its boxes' rows when the decode kernel takes no tensor copies (else tma_rows) */
    int      pf_hc;         /* its items' query heads (all the same: its Q boxes are encoded for them) */
    int      ws_decode;     /* 1: a pure decode batch planned as f_prefill_ws's items in key splits (no fallback to
                               f_prefill, which has no splits: the run takes the SIMT kernel where the maps fail) */
    int      ws_fp8;        /* 1: the prefill tiles are f_prefill_ws's fp8-cache form's (CK_PF_ROWS rows, which f_prefill does
                               not take: the SIMT kernel where the maps fail) */
    int      part_rows;     /* rows of one split's partial state (ck_attn_args_t.part_rows) */
    int      pf_next;       /* 1: the warp-specialized kernel takes its items by the two counters after the split counts */
    size_t   off_part_o;    /* part_lse at the workspace's start */
    size_t   off_count, count_bytes; /* the counters (uint32_t; count_bytes 0: none), zeroed by every run */
    size_t   workspace_bytes;
    /* what the plan decided, for notes and tests */
    int      max_splits;
    /* a capacity plan (cuda_attention_capacity.c): launches and workspace fixed for the capacity, the list rewritten
     * by each update into list_dev (n_prefill + n_decode items, unused ones empty) */
    struct {
        int             on;
        ck_work_item_t *host;           /* the list as the last update built it, before its upload */
        int64_t         max_seqs, max_tokens, max_blocks, max_seq_len;
        int64_t         prefill_rows, dec_rows, chunk;
        int64_t         max_parts;      /* partial-state slots the workspace holds */
        int32_t         causal, window_left, window_right; /* the public args' values, for the tiles */
    } cap;
} cuda_attn_plan_t;

#endif /* CK_CUDA_ATTENTION_PLAN_H */
