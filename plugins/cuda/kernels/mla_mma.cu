/* mla_mma.cu — MLA on tensor cores (mma.sync m16n8k16, f32 accumulators) for DeepSeek's latent
 * (kv_dim 576, v_dim 512) in the query's 16-bit format; other shapes and formats use ck_mla_simt.
 *
 * One block (8 warps) per work item of up to 64 query rows (a token's heads, or tokens x heads) over
 * one key split, so the latent of a request is read from memory once per 64 heads. Per tile of 32
 * keys (three cp.async stages, zero-filled where a key does not exist; the block-table lookups run two
 * tiles ahead, so no tile waits on them):
 *   S = Q C^T:  warp (m-tile mt = w % 4, key half kh = w / 4) forms 16 rows x 16 keys over 576 dims;
 *               the scores, scaled into the log2 domain and masked, go to shared memory;
 *   softmax:    warp (mt, value half vh = w / 4) reads its m-tile's 16 x 32 scores (both warps of an
 *               m-tile compute the same running max and sum);
 *   O += P V:   the same warp accumulates its 16 rows x 256 value columns (128 f32 registers).
 * Dense items walk key positions (causal per row); sparse items are one token each and walk its index
 * list (negative, >= seq_len or an absent block: no key; a repeated index counts each time). */
#include "ck_common.cuh"
#include "mla_common.cuh"
#include "../cuda_ops12.h"

#define CK_MLA_LOG2E 1.4426950408889634f
#define CK_MLA_LN2 0.6931471805599453f

template <typename T, bool FP8> __device__ __forceinline__ void ck_mla_mma_body(const ck_mla_args_t &a)
{
    constexpr int ROWS = CK_MLA_MMA_ROWS, BN = CK_MLA_MMA_BN, D = CK_MLA_MMA_D, LD = CK_MLA_MMA_LD;
    constexpr int SLD = CK_MLA_MMA_SLD, NT = 256, CPR = D / 8, NTO = CK_MLA_MMA_DV / 2 / 8;
    extern __shared__ __align__(16) unsigned char ck_mla_mma_dyn[];
    constexpr int ST = CK_MLA_MMA_STAGES, TILES16 = FP8 ? 1 : ST;
    T *sQ = (T *)ck_mla_mma_dyn;
    T *sK = sQ + ROWS * LD;                                /* [TILES16][BN][LD] */
    unsigned char *sRaw = (unsigned char *)(sK + TILES16 * BN * LD); /* fp8: [ST][BN][D] bytes */
    float *sS = (float *)(sRaw + (FP8 ? ST * BN * D : 0)); /* [ROWS][SLD] */
    int64_t *soff = (int64_t *)(sS + ROWS * SLD);          /* [ST][BN] element offset of the row, -1: none */
    int64_t *spos = soff + ST * BN;                        /* [ST][BN] key position */
    float *sscl = (float *)(spos + ST * BN);               /* [ST][BN] fp8 scale of the row */

    const ck_mla_item_t it = a.items[blockIdx.x];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int mt = warp & 3, half = warp >> 2, g = lane >> 2, t4 = lane & 3;
    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t q_begin = rq.q_begin, L = rq.L, S = rq.S;
    const int hc = it.head_count;
    const int64_t ntok = min((int64_t)it.q_count, L - it.q_first);
    if (ntok <= 0) return;
    const int nrows = (int)ntok * hc;
    const int64_t tok0 = q_begin + it.q_first;

    int64_t k_lo, k_hi; /* positions (dense) or list entries (sparse): this split's share */
    ck_mla_item_keys(a, it, rq, ntok, BN, &k_lo, &k_hi);
    const int64_t n_tiles = (k_hi - k_lo + BN - 1) / BN;
    const int32_t *idx_row = a.sparse ? a.indices + tok0 * a.idx_st[0] : nullptr;

    /* Key tid of tile t, for threads tid < BN, in three steps one loop iteration apart, so no step waits
     * on a load: its position (sparse: the index; -1 when it does not exist), its block id, then the
     * element offset (and fp8 scale) written to the tile's slot in shared memory. */
    auto load_pk = [&](int64_t t) -> int64_t {
        const int64_t e = k_lo + t * BN + tid;
        if (tid >= BN || t >= n_tiles || e >= k_hi) return -1;
        const int64_t pk = a.sparse ? (int64_t)idx_row[e * a.idx_st[1]] : e;
        return pk >= 0 && pk < S ? pk : -1;
    };
    auto load_blk = [&](int64_t pk) -> int64_t {
        return pk >= 0 ? (int64_t)a.block_table[seq * a.bt_st[0] + (pk / a.block_size) * a.bt_st[1]] : -1;
    };
    auto store = [&](int slot, int64_t pk, int64_t blk) {
        if (tid >= BN) return;
        int64_t off = -1;
        if (pk >= 0 && blk >= 0 && blk < a.num_blocks) {
            off = blk * a.kv_st[0] + (pk - (pk / a.block_size) * a.block_size) * a.kv_st[1];
            if (FP8) sscl[slot * BN + tid] = a.kv_scale ? a.kv_scale[blk * a.ks_st] : 1.0f;
        }
        soff[slot * BN + tid] = off;
        spos[slot * BN + tid] = off >= 0 ? pk : -1;
    };
    auto issue = [&](int st) {
        if (FP8) { /* raw rows, 16 codes a copy */
            const unsigned char *kv = (const unsigned char *)a.kv;
#pragma unroll 3
            for (int c = tid; c < BN * (D / 16); c += NT) {
                const int j = c / (D / 16), ch = c - j * (D / 16);
                const int64_t o = soff[st * BN + j];
                ck_cp_async16(ck_smem(sRaw + (st * BN + j) * D + ch * 16), kv + (o >= 0 ? o + ch * 16 : 0), o >= 0 ? 16 : 0);
            }
        } else {
            const T *kv = (const T *)a.kv;
#pragma unroll 3
            for (int c = tid; c < BN * CPR; c += NT) {
                const int j = c / CPR, ch = c - j * CPR;
                const int64_t o = soff[st * BN + j];
                ck_cp_async16(ck_smem(sK + (st * BN + j) * LD + ch * 8), kv + (o >= 0 ? o + ch * 8 : 0), o >= 0 ? 16 : 0);
            }
        }
    };
    /* fp8: stage st's raw rows -> the 16-bit tile, times the row's scale (absent rows: zeros) */
    auto convert = [&](int st) {
        const bool e4m3 = a.kv_dtype == CK_E4M3;
#pragma unroll 3
        for (int c = tid; c < BN * (D / 8); c += NT) {
            const int j = c / (D / 8), ch = c - j * (D / 8);
            const uint2 bytes = *(const uint2 *)(sRaw + (st * BN + j) * D + ch * 8);
            const float sc = soff[st * BN + j] >= 0 ? sscl[st * BN + j] : 0.0f;
            uint32_t packed[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const uint32_t word = e < 2 ? bytes.x : bytes.y;
                const float2 f = ck_fp8x2_to_f32x2((uint16_t)(word >> ((e & 1) * 16)), e4m3);
                packed[e] = ck_pack2<T>(f.x * sc, f.y * sc);
            }
            *(uint4 *)(sK + j * LD + ch * 8) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
        }
    };

    int64_t pkA, pkB, blkB; /* position of the key of tile kt + 3; position and block of tile kt + 2 */
    {
        int64_t pk[ST + 1], blk[ST];
#pragma unroll
        for (int t = 0; t <= ST; t++) pk[t] = load_pk(t);
#pragma unroll
        for (int t = 0; t < ST; t++) blk[t] = load_blk(pk[t]);
#pragma unroll
        for (int t = 0; t < ST - 1; t++) store(t, pk[t], blk[t]);
        pkB = pk[ST - 1];
        blkB = blk[ST - 1];
        pkA = pk[ST];
    }
    for (int idx = tid; idx < ROWS * (D / 2); idx += NT) { /* Q rows, zeros past nrows; two elements a step */
        const int r = idx / (D / 2), d = (idx - r * (D / 2)) * 2;
        float x0 = 0.0f, x1 = 0.0f;
        if (r < nrows) {
            const int64_t base = (tok0 + r / hc) * a.q_st[0] + (int64_t)(it.head_first + r % hc) * a.q_st[1] + d;
            x0 = ck_load(a.q, base, a.q_dtype);
            x1 = ck_load(a.q, base + 1, a.q_dtype);
        }
        *(uint32_t *)(sQ + r * LD + d) = ck_pack2<T>(x0, x1);
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < ST - 1; t++) {
        if (t < n_tiles) issue(t);
        ck_cp_async_commit();
    }

    /* this thread's two rows (g, g + 8 of m-tile mt): in range, and the last key position they see */
    bool row_ok[2];
    int64_t row_lim[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = mt * 16 + g + 8 * r;
        row_ok[r] = row < nrows;
        row_lim[r] = !a.sparse && a.causal ? S - L + it.q_first + row / hc : INT64_MAX;
    }
    const float scale2 = a.scale * CK_MLA_LOG2E;

    float o[NTO][4];
#pragma unroll
    for (int n = 0; n < NTO; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    float m_r[2] = {-CK_INF, -CK_INF}, l_r[2] = {0.0f, 0.0f};

    for (int64_t kt = 0; kt < n_tiles; kt++) {
        const int st = (int)(kt % ST), st_next = (int)((kt + ST - 1) % ST);
        if (kt + ST - 1 < n_tiles) store(st_next, pkB, blkB); /* the slot of tile kt - 1: done with */
        pkB = pkA;
        blkB = load_blk(pkA);
        pkA = load_pk(kt + ST + 1);
        __syncthreads(); /* every warp is done with tile kt - 1; the offsets of tile kt + ST - 1 are visible */
        if (kt + ST - 1 < n_tiles) issue(st_next);
        ck_cp_async_commit();
        ck_cp_async_wait<ST - 1>();
        __syncthreads(); /* tile kt has landed for every thread */
        if (FP8) {
            convert(st);
            __syncthreads();
        }
        const T *kb = FP8 ? sK : sK + st * BN * LD;

        /* S = Q C^T: rows mt * 16 .., keys half * 16 .. */
        /* two accumulator sets (even / odd k-steps): four independent mma chains per warp, not two */
        float s[2][4], s2[2][4];
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[n][e] = s2[n][e] = 0.0f;
        const uint32_t qaddr = ck_smem(sQ + (mt * 16 + (lane & 15)) * LD + (lane >> 4) * 8);
        const uint32_t kaddr = ck_smem(kb + (half * 16 + (lane & 7) + (lane >> 4) * 8) * LD + ((lane >> 3) & 1) * 8);
#pragma unroll 6
        for (int kk = 0; kk < D / 16; kk += 2) {
            uint32_t aq[4], bf[4], aq2[4], bf2[4];
            ck_ldmatrix_x4(aq, qaddr + kk * 32);
            ck_ldmatrix_x4(bf, kaddr + kk * 32);
            ck_ldmatrix_x4(aq2, qaddr + kk * 32 + 32);
            ck_ldmatrix_x4(bf2, kaddr + kk * 32 + 32);
            ck_mma16816<T>(s[0], aq, bf[0], bf[1]);
            ck_mma16816<T>(s[1], aq, bf[2], bf[3]);
            ck_mma16816<T>(s2[0], aq2, bf2[0], bf2[1]);
            ck_mma16816<T>(s2[1], aq2, bf2[2], bf2[3]);
        }
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) s[n][e] += s2[n][e];
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = e >> 1, j = half * 16 + n * 8 + 2 * t4 + (e & 1);
                const int64_t pk = spos[st * BN + j];
                const bool ok = row_ok[r] && pk >= 0 && pk <= row_lim[r];
                sS[(mt * 16 + g + 8 * r) * SLD + j] = ok ? s[n][e] * scale2 : -CK_INF;
            }
        __syncthreads(); /* the tile's scores are complete */

        /* online softmax of rows (g, g + 8) over the 32 keys, in the accumulator layout */
        float p[4][4], mx[2] = {-CK_INF, -CK_INF};
#pragma unroll
        for (int n = 0; n < 4; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                p[n][e] = sS[(mt * 16 + g + 8 * (e >> 1)) * SLD + n * 8 + 2 * t4 + (e & 1)];
                mx[e >> 1] = fmaxf(mx[e >> 1], p[n][e]);
            }
        float alpha[2], m_use[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float m_new = fmaxf(m_r[r], mx[r]);
            m_use[r] = m_new == -CK_INF ? 0.0f : m_new;
            alpha[r] = exp2f(m_r[r] - m_use[r]);
            m_r[r] = m_new;
        }
        float ls[2] = {0.0f, 0.0f};
#pragma unroll
        for (int n = 0; n < 4; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                p[n][e] = exp2f(p[n][e] - m_use[e >> 1]);
                ls[e >> 1] += p[n][e];
            }
#pragma unroll
        for (int r = 0; r < 2; r++) {
            ls[r] += __shfl_xor_sync(0xffffffffu, ls[r], 1);
            ls[r] += __shfl_xor_sync(0xffffffffu, ls[r], 2);
            l_r[r] = l_r[r] * alpha[r] + ls[r];
        }
#pragma unroll
        for (int n = 0; n < NTO; n++) {
            o[n][0] *= alpha[0];
            o[n][1] *= alpha[0];
            o[n][2] *= alpha[1];
            o[n][3] *= alpha[1];
        }

        /* O += P V over this warp's 256 value columns */
#pragma unroll
        for (int k2 = 0; k2 < 2; k2++) {
            uint32_t pa[4];
            pa[0] = ck_pack2<T>(p[2 * k2][0], p[2 * k2][1]);
            pa[1] = ck_pack2<T>(p[2 * k2][2], p[2 * k2][3]);
            pa[2] = ck_pack2<T>(p[2 * k2 + 1][0], p[2 * k2 + 1][1]);
            pa[3] = ck_pack2<T>(p[2 * k2 + 1][2], p[2 * k2 + 1][3]);
            const uint32_t vaddr = ck_smem(kb + (k2 * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + half * 256 +
                                           (lane >> 4) * 8);
#pragma unroll
            for (int np = 0; np < NTO / 2; np++) {
                uint32_t bf[4];
                ck_ldmatrix_x4_trans(bf, vaddr + np * 32);
                ck_mma16816<T>(o[2 * np], pa, bf[0], bf[1]);
                ck_mma16816<T>(o[2 * np + 1], pa, bf[2], bf[3]);
            }
        }
    }
    ck_cp_async_wait<0>();

    /* finish rows (g, g + 8): whole (one split: sinks here) or a partial state */
    const bool part = it.num_splits > 1;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        if (!row_ok[r]) continue;
        const int row = mt * 16 + g + 8 * r;
        const int64_t t = tok0 + row / hc, h = it.head_first + row % hc;
        const float l = l_r[r], m_nat = m_r[r] * CK_MLA_LN2;
        float mul = 0.0f;
        if (l > 0.0f) {
            float den = l;
            if (!part && a.sinks) den += __expf(a.sinks[h * a.sinks_st] - m_nat);
            mul = 1.0f / den;
        }
#pragma unroll
        for (int n = 0; n < NTO; n++) {
            const int col = half * 256 + n * 8 + 2 * t4;
            const float o0 = o[n][2 * r] * mul, o1 = o[n][2 * r + 1] * mul;
            if (part) {
                float *dst = a.part_o + ((int64_t)(it.part_index + it.split) * ROWS + row) * a.dv + col;
                *(float2 *)dst = make_float2(o0, o1);
            } else {
                const int64_t at = t * a.out_st[0] + h * a.out_st[1] + col;
                ck_store(a.out, at, a.out_dtype, o0);
                ck_store(a.out, at + 1, a.out_dtype, o1);
            }
        }
        if (half == 0 && t4 == 0) {
            const float lse = l > 0.0f ? m_nat + logf(l) : -CK_INF;
            if (part)
                a.part_lse[(int64_t)(it.part_index + it.split) * ROWS + row] = lse;
            else if (a.lse)
                a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_mma_f16(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_mma_body<__half, false>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_mma_bf16(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_mma_body<__nv_bfloat16, false>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_mma_f16_fp8(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_mma_body<__half, true>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_mma_bf16_fp8(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_mma_body<__nv_bfloat16, true>(a);
}
