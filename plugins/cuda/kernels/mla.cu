/* mla.cu — multi-head latent attention over a one-head latent cache [NB, BS, 1, D] (values: the first
 * Dv columns of each latent row), dense (bottom-right causal or not) and sparse (per-token index lists).
 *
 *   ck_mla_simt: one block (256 threads) per work item: up to CK_MLA_ROWS query rows = a tile of one
 *     request's tokens x a group of its heads, over one key split. Per chunk of CK_MLA_KC keys the
 *     latent rows are gathered once into shared memory (dequantised to f32, fp8 scale applied) and
 *     serve every row of the item: thread (row, key) forms one score, a half-warp per row folds the
 *     chunk into that row's online softmax, and each thread accumulates its value columns for every
 *     row (the latent value read once per chunk for all rows). Dense items walk keys in position order
 *     (each token masks keys past its causal limit); sparse items are one token each and walk its index
 *     list as given, so a repeated index counts once per occurrence, and a negative index or one
 *     >= seq_len is skipped, as is a block id outside the cache.
 *   ck_mla_split_merge: the key splits of one item combined (weights e^{lse_s - m}; sinks once, after).
 *
 * Query rows: r = token_in_tile * head_count + head_in_group. The key range of a split is derived on
 * the device from seq_lens (or topk), so a graph replayed with grown sequences stays correct. */
#include "ck_common.cuh"
#include "mla_common.cuh"
#include "../cuda_mla_linear.h"

__device__ __forceinline__ float ck_mla_scale_of(const ck_mla_args_t &a, int64_t block)
{
    return a.kv_scale ? a.kv_scale[block * a.ks_st] : 1.0f;
}

extern "C" __global__ void __launch_bounds__(CK_MLA_THREADS) ck_mla_simt(const __grid_constant__ ck_mla_args_t a)
{
    extern __shared__ __align__(16) float ck_mla_dyn[];
    const int ld = a.ld, D = a.d, Dv = a.dv;
    float *sq = ck_mla_dyn;                                  /* [ROWS][ld] */
    float *sc = sq + CK_MLA_ROWS * ld;                 /* [KC][ld]   */
    float *sp = sc + CK_MLA_KC * ld;                   /* [ROWS][KC] scores, then probabilities */
    float *sm = sp + CK_MLA_ROWS * CK_MLA_KC;          /* running max per row */
    float *sl = sm + CK_MLA_ROWS;                      /* running sum per row */
    float *salpha = sl + CK_MLA_ROWS;                  /* rescale of the accumulators this chunk */
    int64_t *slim = (int64_t *)(salpha + CK_MLA_ROWS); /* [ROWS] last key position a row sees */
    int64_t *spos = slim + CK_MLA_ROWS;                /* [KC] position, -1: no key */

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    ck_mla_work w; /* the block's item; k_lo .. k_hi: positions (dense) or list entries (sparse), this split's share */
    if (!ck_mla_work_begin(a, CK_MLA_KC, w)) return;
    const ck_mla_item_t &it = w.it;
    const int64_t seq = it.seq, L = w.L, S = w.S, tok0 = w.tok0, k_lo = w.k_lo, k_hi = w.k_hi;
    const int hc = w.hc, nrows = w.nrows;

    /* query rows, f32 */
    for (int r = warp; r < nrows; r += CK_MLA_THREADS / 32) {
        const int64_t t = tok0 + r / hc, h = it.head_first + r % hc;
        for (int d = lane; d < D; d += 32) sq[r * ld + d] = ck_load(a.q, t * a.q_st[0] + h * a.q_st[1] + d, a.q_dtype);
    }
    if (tid < CK_MLA_ROWS) {
        sm[tid] = -CK_INF;
        sl[tid] = 0.0f;
        /* the largest key position row tid may see (dense causal), else unlimited */
        const int64_t pq = S - L + it.q_first + tid / hc;
        slim[tid] = !a.sparse && a.causal ? pq : INT64_MAX;
    }

    constexpr int NCC = CK_MLA_MAX_DV / CK_MLA_THREADS;
    float acc[NCC][CK_MLA_ROWS];
#pragma unroll
    for (int cc = 0; cc < NCC; cc++)
#pragma unroll
        for (int r = 0; r < CK_MLA_ROWS; r++) acc[cc][r] = 0.0f;

    const int32_t *idx_row = a.sparse ? a.indices + tok0 * a.idx_st[0] : nullptr;
    for (int64_t k0 = k_lo; k0 < k_hi; k0 += CK_MLA_KC) {
        __syncthreads(); /* the previous chunk is done with sc / sp; the query rows are in */
        if (tid < CK_MLA_KC) {
            const int64_t e = k0 + tid;
            int64_t pk = -1;
            if (e < k_hi) {
                pk = a.sparse ? (int64_t)idx_row[e * a.idx_st[1]] : e;
                if (pk < 0 || pk >= S) pk = -1;
                if (pk >= 0) {
                    const int64_t blk = a.block_table[seq * a.bt_st[0] + (pk / a.block_size) * a.bt_st[1]];
                    if (blk < 0 || blk >= a.num_blocks) pk = -1;
                }
            }
            spos[tid] = pk;
        }
        __syncthreads();
        /* gather: warp w loads chunk rows w and w + 8 */
        for (int kk = warp; kk < CK_MLA_KC; kk += CK_MLA_THREADS / 32) {
            const int64_t pk = spos[kk];
            if (pk < 0) continue;
            const int64_t blk = a.block_table[seq * a.bt_st[0] + (pk / a.block_size) * a.bt_st[1]];
            const float s = ck_mla_scale_of(a, blk);
            const int64_t base = blk * a.kv_st[0] + (pk % a.block_size) * a.kv_st[1];
            if (a.kv_dtype == CK_BF16 || a.kv_dtype == CK_F16) {
                const uint16_t *p = (const uint16_t *)a.kv + base;
                for (int d = lane; d < D; d += 32)
                    sc[kk * ld + d] = a.kv_dtype == CK_BF16 ? ck_bf16_bits_to_f32(p[d]) : ck_f16_bits_to_f32(p[d]);
            } else {
                for (int d = lane; d < D; d += 32) sc[kk * ld + d] = ck_load(a.kv, base + d, a.kv_dtype) * s;
            }
        }
        __syncthreads();
        /* scores: thread (r, kk) */
        {
            const int r = tid >> 4, kk = tid & 15;
            float s = -CK_INF;
            const int64_t pk = spos[kk];
            if (r < nrows && pk >= 0 && pk <= slim[r]) {
                const float *qr = sq + r * ld, *cr = sc + kk * ld;
                float d0 = 0.0f, d1 = 0.0f;
                int d = 0;
                for (; d + 1 < D; d += 2) {
                    d0 += qr[d] * cr[d];
                    d1 += qr[d + 1] * cr[d + 1];
                }
                if (d < D) d0 += qr[d] * cr[d];
                s = (d0 + d1) * a.scale;
            }
            /* online softmax of row r over the chunk: its 16 scores live in one half-warp */
            float m = s;
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            const float m_old = r < CK_MLA_ROWS ? sm[r] : -CK_INF;
            const float m_new = fmaxf(m_old, m);
            const float p = m_new == -CK_INF || s == -CK_INF ? 0.0f : __expf(s - m_new);
            float psum = p;
#pragma unroll
            for (int o = 8; o > 0; o >>= 1) psum += __shfl_xor_sync(0xffffffffu, psum, o);
            sp[r * CK_MLA_KC + kk] = p;
            if (kk == 0) {
                const float alpha = m_new == -CK_INF ? 1.0f : __expf(m_old - m_new);
                sl[r] = sl[r] * alpha + psum;
                sm[r] = m_new;
                salpha[r] = alpha;
            }
        }
        __syncthreads();
        /* values: thread tid owns columns tid + 256 cc of every row */
#pragma unroll
        for (int cc = 0; cc < NCC; cc++) {
            const int j = tid + cc * CK_MLA_THREADS;
            if (j >= Dv) continue;
#pragma unroll
            for (int r = 0; r < CK_MLA_ROWS; r++) acc[cc][r] *= salpha[r];
#pragma unroll 4
            for (int kk = 0; kk < CK_MLA_KC; kk++) {
                const float c = spos[kk] >= 0 ? sc[kk * ld + j] : 0.0f;
#pragma unroll
                for (int r = 0; r < CK_MLA_ROWS; r++) acc[cc][r] += sp[r * CK_MLA_KC + kk] * c;
            }
        }
    }
    __syncthreads();

    /* finish: whole rows (one split) or partial states */
    const bool part = it.num_splits > 1;
#pragma unroll
    for (int r = 0; r < CK_MLA_ROWS; r++) {
        if (r >= nrows) break;
        const float l = sl[r], m = sm[r];
        const int64_t t = tok0 + r / hc, h = it.head_first + r % hc;
        float mul = 0.0f;
        if (l > 0.0f) {
            float den = l;
            if (!part && a.sinks) den += __expf(a.sinks[h * a.sinks_st] - m);
            mul = 1.0f / den;
        }
#pragma unroll
        for (int cc = 0; cc < NCC; cc++) {
            const int j = tid + cc * CK_MLA_THREADS;
            if (j >= Dv) continue;
            const float o = acc[cc][r] * mul;
            if (part)
                a.part_o[((int64_t)(it.part_index + it.split) * CK_MLA_ROWS + r) * Dv + j] = o;
            else
                ck_store(a.out, t * a.out_st[0] + h * a.out_st[1] + j, a.out_dtype, o);
        }
        if (tid == 0) {
            const float lse = l > 0.0f ? m + logf(l) : -CK_INF;
            if (part)
                a.part_lse[(int64_t)(it.part_index + it.split) * CK_MLA_ROWS + r] = lse;
            else if (a.lse)
                a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
        }
    }
}

extern "C" __global__ void __launch_bounds__(CK_MLA_THREADS) ck_mla_split_merge(const __grid_constant__ ck_mla_args_t a)
{
    /* block b: rows r0 .. r0 + MR - 1 and value columns c0 .. c0 + MC - 1 of one group, MC chosen by the host
     * so that the blocks fill one wave of the chip. A merge is latency, not bandwidth: B 4 x 32768 at Hq 128 is
     * 8 groups of 16 splits (16.8 MB of partials); one block a row slice and all 512 columns took 114 us under
     * ncu (64 blocks, each thread's loads one split at a time), 128-column slices with the splits' loads issued
     * together 30 us */
    constexpr int MR = CK_MLA_MERGE_ROWS;
    __shared__ float wts[MR][CK_MLA_MAX_SPLITS];
    const int MC = a.merge_cols, PR = a.part_rows, nrb = PR / MR, ncb = (a.dv + MC - 1) / MC;
    const ck_mla_item_t it = a.items[blockIdx.x / (nrb * ncb)];
    const int slice = (int)(blockIdx.x % (nrb * ncb)), r0 = slice / ncb * MR, c0 = slice % ncb * MC;
    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t q_begin = rq.q_begin;
    const int hc = it.head_count, ns = min(it.num_splits, CK_MLA_MAX_SPLITS);
    const int64_t ntok = min((int64_t)it.q_count, rq.L - it.q_first);
    if (ntok <= 0 || r0 >= (int)ntok * hc) return;
    const int rows = min(MR, (int)ntok * hc - r0), cols = min(MC, a.dv - c0);
    const int64_t tok0 = q_begin + it.q_first;
    const float *plse = a.part_lse + (int64_t)it.part_index * PR;
    const float *po = a.part_o + (int64_t)it.part_index * PR * a.dv;

    if (threadIdx.x < rows) {
        const int r = r0 + threadIdx.x;
        const int64_t t = tok0 + r / hc, h = it.head_first + r % hc;
        float m = -CK_INF;
        for (int s = 0; s < ns; s++) m = fmaxf(m, plse[s * PR + r]);
        float lse = -CK_INF, post = 0.0f;
        if (m != -CK_INF) {
            float sum = 0.0f;
            for (int s = 0; s < ns; s++) sum += expf(plse[s * PR + r] - m);
            lse = m + logf(sum);
            float den = sum;
            if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m);
            post = 1.0f / den;
        }
        for (int s = 0; s < ns; s++) wts[threadIdx.x][s] = m == -CK_INF ? 0.0f : expf(plse[s * PR + r] - m) * post;
        if (a.lse && c0 == 0) a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < rows * cols; idx += blockDim.x) {
        const int rr = idx / cols, c = c0 + idx - rr * cols, r = r0 + rr;
        const float *src = po + (int64_t)r * a.dv + c;
        float o = 0.0f;
        /* every split's load issued without waiting on the weight (several in flight a thread); a split
         * of weight 0 (no keys) may hold anything, so it is selected away, never multiplied in */
#pragma unroll 8
        for (int s = 0; s < ns; s++) {
            const float w = wts[rr][s], v = src[(int64_t)s * PR * a.dv];
            o += w != 0.0f ? w * v : 0.0f;
        }
        const int64_t t = tok0 + r / hc, h = it.head_first + r % hc;
        ck_store(a.out, t * a.out_st[0] + h * a.out_st[1] + c, a.out_dtype, o);
    }
}
