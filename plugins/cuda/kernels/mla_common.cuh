/* mla_common.cuh — what the MLA kernels (mla.cu: SIMT, mla_mma.cu and mla_sm90a.cu: tensor cores) derive
 * alike from a work item, and the tensor-core kernels' output stores. */
#pragma once

#include "../cuda_ops12.h"
#include "ck_common.cuh"

/* Item it's share [*k_lo, *k_hi) of its keys: positions 0 .. S - 1 (dense; causal: up to the last token's
 * position) or entries of the sparse index list (a.topk), cut for split it.split of it.num_splits into
 * whole tiles of `tile` keys. rq: the item's request; ntok (> 0): its tokens. */
__device__ __forceinline__ void ck_mla_item_keys(const ck_mla_args_t &a, const ck_mla_item_t &it, const ck_request_t &rq,
                                                 int64_t ntok, int64_t tile, int64_t *k_lo, int64_t *k_hi)
{
    int64_t nkeys = a.topk;
    if (!a.sparse) {
        nkeys = rq.S;
        const int64_t last_pq = rq.S - rq.L + it.q_first + ntok - 1;
        if (a.causal && last_pq + 1 < nkeys) nkeys = last_pq + 1;
        if (nkeys < 0) nkeys = 0;
    }
    *k_lo = 0, *k_hi = nkeys;
    if (it.num_splits > 1) {
        int64_t chunk = (nkeys + it.num_splits - 1) / it.num_splits;
        chunk = (chunk + tile - 1) / tile * tile;
        *k_lo = min((int64_t)it.split * chunk, nkeys);
        *k_hi = min(*k_lo + chunk, nkeys);
    }
}

/* The tensor-core kernels' store of columns col, col + 1 of an item's query row `row` (token t, head h),
 * already divided by the row's sum: into its split's partial rows (f32, merged later) when the item is a
 * split, else into the output in its dtype. */
__device__ __forceinline__ void ck_mla_store_pair(const ck_mla_args_t &a, const ck_mla_item_t &it, bool part, int row,
                                                  int64_t t, int64_t h, int col, float o0, float o1)
{
    if (part) {
        float *dst = a.part_o + ((int64_t)(it.part_index + it.split) * CK_MLA_MMA_ROWS + row) * a.dv + col;
        *(float2 *)dst = make_float2(o0, o1);
    } else {
        const int64_t at = t * a.out_st[0] + h * a.out_st[1] + col;
        ck_store(a.out, at, a.out_dtype, o0);
        ck_store(a.out, at + 1, a.out_dtype, o1);
    }
}
