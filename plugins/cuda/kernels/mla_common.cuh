/* mla_common.cuh — what both MLA kernels (mla.cu: SIMT, mla_mma.cu: tensor cores) derive alike from a
 * work item. */
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
