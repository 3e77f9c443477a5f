/* mla_common.cuh — what the MLA kernels (mla.cu: SIMT, mla_mma.cu and mla_sm90a.cu: tensor cores) derive
 * alike from a work item, and the tensor-core kernels' output stores. */
#pragma once

#include "../cuda_mla_linear.h"
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

/* A block's item as every MLA kernel opens it: its request, tokens, query rows (tokens x heads) and this split's
 * keys in whole tiles of `tile` */
struct ck_mla_work {
    ck_mla_item_t it;
    int64_t       L, S, ntok, tok0, k_lo, k_hi;
    int           hc, nrows;
};
/* Block blockIdx.x's item into w; false where its tokens are not in this batch (nothing to do) */
__device__ __forceinline__ bool ck_mla_work_begin(const ck_mla_args_t &a, int64_t tile, ck_mla_work &w)
{
    w.it = a.items[blockIdx.x];
    const ck_request_t rq = ck_request(a, w.it.seq);
    w.L = rq.L;
    w.S = rq.S;
    w.hc = w.it.head_count;
    w.ntok = min((int64_t)w.it.q_count, rq.L - w.it.q_first);
    if (w.ntok <= 0) return false;
    w.nrows = (int)w.ntok * w.hc;
    w.tok0 = rq.q_begin + w.it.q_first;
    ck_mla_item_keys(a, w.it, rq, w.ntok, tile, &w.k_lo, &w.k_hi);
    return true;
}

/* A tensor-core kernel's four entries: prefix_<f16|bf16>[_fp8] run body<T, fp8 latent> (8 warps a block) */
#define CK_MLA_ENTRY(name, body, T, FP8)                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 1) name(const __grid_constant__ ck_mla_args_t a) { body<T, FP8>(a); }
#define CK_MLA_ENTRIES(prefix, body)                                                                                  \
    CK_MLA_ENTRY(prefix##_f16, body, __half, false)                                                                   \
    CK_MLA_ENTRY(prefix##_bf16, body, __nv_bfloat16, false)                                                           \
    CK_MLA_ENTRY(prefix##_f16_fp8, body, __half, true)                                                                \
    CK_MLA_ENTRY(prefix##_bf16_fp8, body, __nv_bfloat16, true)

/* The tensor-core kernels' end of query row `row` (token t, head h; `real`: the row exists) from its running max m_log2
 * (log2 domain) and sum: its LSE written where write_lse (into the split's partial rows, or the output's LSE), and the
 * factor returned: 1 / the denominator (sinks added where the item is not a split), 0 for a row without keys */
__device__ __forceinline__ float ck_mla_row_finish(const ck_mla_args_t &a, const ck_mla_item_t &it, bool part, int row, int64_t t,
                                                   int64_t h, float m_log2, float lsum, bool real, bool write_lse)
{
    const float m_nat = m_log2 * 0.6931471805599453f;
    float mul = 0.0f;
    if (real && lsum > 0.0f) {
        float den = lsum;
        if (!part && a.sinks) den += __expf(a.sinks[h * a.sinks_st] - m_nat);
        mul = 1.0f / den;
    }
    if (real && write_lse) {
        const float lse = lsum > 0.0f ? m_nat + logf(lsum) : -CK_INF;
        if (part)
            a.part_lse[(int64_t)(it.part_index + it.split) * CK_MLA_MMA_ROWS + row] = lse;
        else if (a.lse)
            a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
    }
    return mul;
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
