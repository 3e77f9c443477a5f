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
#include "../cuda_mla_linear.h"

#define CK_MLA_LOG2E 1.4426950408889634f
#define CK_MLA_LAZY 8.0f /* log2 units the running max may lag the true max by */

/* 2^x by the SFU (x <= 8 here; -inf gives 0) */
__device__ __forceinline__ float ck_mla_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <typename T, bool FP8> __device__ __forceinline__ void ck_mla_mma_body(const ck_mla_args_t &a)
{
    constexpr int ROWS = CK_MLA_MMA_ROWS, BN = CK_MLA_MMA_BN, D = CK_MLA_MMA_D, LD = CK_MLA_MMA_LD;
    constexpr int NT = 256, CPR = D / 8, DQ = CK_MLA_MMA_DQ, KSQ = D / 16 / DQ, PLD = CK_MLA_MMA_PLD;
    extern __shared__ __align__(16) unsigned char ck_mla_mma_dyn[];
    constexpr int ST = CK_MLA_MMA_STAGES, TILES16 = FP8 ? 1 : ST;
    T *sQ = (T *)ck_mla_mma_dyn;
    T *sK = sQ + ROWS * LD;                                /* [TILES16][BN][LD] */
    unsigned char *sRaw = (unsigned char *)(sK + TILES16 * BN * LD); /* fp8: [ST][BN][D] bytes */
    float *sSp = (float *)(sRaw + (FP8 ? ST * BN * D : 0)); /* [DQ][ROWS][BN] partial scores, swizzled */
    T *sP = (T *)(sSp + DQ * ROWS * BN);                   /* [ROWS][PLD] probabilities */
    float *sAlpha = (float *)(sP + ROWS * PLD);            /* [ROWS] this tile's rescale factor */
    float *sMul = sAlpha + ROWS;                           /* [ROWS] final 1 / denominator */
    int64_t *soff = (int64_t *)(sMul + ROWS);              /* [ST][BN] element offset of the row, -1: none */
    int32_t *spos = (int32_t *)(soff + ST * BN);           /* [ST][BN] key position (< seq_len), -1: none */
    float *sscl = (float *)(spos + ST * BN);               /* [ST][BN] fp8 scale of the row */

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    ck_mla_work w; /* the block's item; k_lo .. k_hi: positions (dense) or list entries (sparse), this split's share */
    if (!ck_mla_work_begin(a, BN, w)) return;
    const ck_mla_item_t &it = w.it;
    const int64_t seq = it.seq, L = w.L, S = w.S, tok0 = w.tok0, k_lo = w.k_lo, k_hi = w.k_hi;
    const int hc = w.hc, nrows = w.nrows;
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
        float sc = 0.0f; /* an absent row's scale: 0, never stale (its p is 0, and 0 x NaN is not) */
        if (pk >= 0 && blk >= 0 && blk < a.num_blocks) {
            off = blk * a.kv_st[0] + (pk - (pk / a.block_size) * a.block_size) * a.kv_st[1];
            sc = FP8 && a.kv_scale ? a.kv_scale[blk * a.ks_st] : 1.0f;
        }
        if (FP8) sscl[slot * BN + tid] = sc;
        soff[slot * BN + tid] = off;
        spos[slot * BN + tid] = off >= 0 ? (int32_t)pk : -1;
    };
    /* warp w copies rows w * 4 .. + 3, a row's 16-byte chunks by consecutive lanes (one offset and base a
     * row, not a chunk) */
    auto issue = [&](int st) {
#pragma unroll
        for (int r = 0; r < BN / 8; r++) {
            const int j = warp * (BN / 8) + r;
            const int64_t o = soff[st * BN + j];
            const int n = o >= 0 ? 16 : 0;
            if (FP8) { /* raw rows, 16 codes a copy */
                const unsigned char *src = (const unsigned char *)a.kv + (o >= 0 ? o : 0);
                const uint32_t dst = ck_smem(sRaw + (st * BN + j) * D);
#pragma unroll
                for (int k = 0; k < (D / 16 + 31) / 32; k++)
                    if (lane + 32 * k < D / 16) ck_cp_async16(dst + (lane + 32 * k) * 16, src + (lane + 32 * k) * 16, n);
            } else {
                const T *src = (const T *)a.kv + (o >= 0 ? o : 0);
                const uint32_t dst = ck_smem(sK + (st * BN + j) * LD);
#pragma unroll
                for (int k = 0; k < (CPR + 31) / 32; k++)
                    if (lane + 32 * k < CPR) ck_cp_async16(dst + (lane + 32 * k) * 16, src + (lane + 32 * k) * 8, n);
            }
        }
    };
    /* fp8: stage st's raw rows -> the 16-bit tile, exactly (e4m3 / e5m2 values are 16-bit values); the
     * row's scale multiplies its score and its probability instead (absent rows: zeros, masked) */
    auto convert = [&](int st) {
        const bool e4m3 = a.kv_dtype == CK_E4M3;
#pragma unroll 3
        for (int c = tid; c < BN * (D / 8); c += NT) {
            const int j = c / (D / 8), ch = c - j * (D / 8);
            const uint2 bytes = *(const uint2 *)(sRaw + (st * BN + j) * D + ch * 8);
            uint32_t packed[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const uint32_t word = e < 2 ? bytes.x : bytes.y;
                const float2 f = ck_fp8x2_to_f32x2((uint16_t)(word >> ((e & 1) * 16)), e4m3);
                packed[e] = ck_pack2<T>(f.x, f.y);
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
    /* Q rows (zeros past nrows): 16-byte copies in the first tile's group when the rows are 16-byte
     * aligned (the kernel's Q has the tile's 16-bit type), else element by element */
    const bool q_vec = (((uintptr_t)a.q | (uintptr_t)(a.q_st[0] * 2) | (uintptr_t)(a.q_st[1] * 2)) & 15) == 0;
    if (q_vec) {
        for (int c = tid; c < ROWS * CPR; c += NT) {
            const int r = c / CPR, ch = c - r * CPR;
            const T *src = (const T *)a.q;
            if (r < nrows) src += (tok0 + r / hc) * a.q_st[0] + (int64_t)(it.head_first + r % hc) * a.q_st[1] + ch * 8;
            ck_cp_async16(ck_smem(sQ + r * LD + ch * 8), src, r < nrows ? 16 : 0);
        }
    } else {
        for (int idx = tid; idx < ROWS * (D / 2); idx += NT) { /* two elements a step */
            const int r = idx / (D / 2), d = (idx - r * (D / 2)) * 2;
            float x0 = 0.0f, x1 = 0.0f;
            if (r < nrows) {
                const int64_t base = (tok0 + r / hc) * a.q_st[0] + (int64_t)(it.head_first + r % hc) * a.q_st[1] + d;
                x0 = ck_load(a.q, base, a.q_dtype);
                x1 = ck_load(a.q, base + 1, a.q_dtype);
            }
            *(uint32_t *)(sQ + r * LD + d) = ck_pack2<T>(x0, x1);
        }
    }
    __syncthreads(); /* the offsets of the first tiles are visible */
#pragma unroll
    for (int t = 0; t < ST - 1; t++) {
        if (t < n_tiles) issue(t);
        ck_cp_async_commit();
    }

    /* softmax role: row srow (8 a warp), keys sq * 8 .. + 7 of each tile; the running max and sum of the
     * row live in its four lanes (sq = 0..3) alike */
    const int srow = warp * 8 + (lane & 7), sq = lane >> 3;
    const bool srow_ok = srow < nrows;
    /* the last key position row srow sees, as unsigned: an absent key (-1) compares above every limit */
    const int64_t srow_lim64 = !a.sparse && a.causal ? S - L + it.q_first + srow / hc : INT32_MAX;
    const uint32_t srow_lim = srow_ok && srow_lim64 >= 0 ? (uint32_t)min(srow_lim64, (int64_t)INT32_MAX) : 0u;
    const bool srow_any = srow_ok && srow_lim64 >= 0;
    const int sw = srow & 3, shi = (srow >> 2) & 1; /* the swizzle of its partial-score row */
    const float scale2 = a.scale * CK_MLA_LOG2E;
    float m_run = -CK_INF, l_run = 0.0f;

    /* S = Q C^T role: row half rh (32 rows), dim quarter dq (KSQ k-steps); O += P V role: columns
     * warp * 64 .. + 63 of all 64 rows */
    const int rh = warp & 1, dq = warp >> 1;
    float o[4][8][4];
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int n = 0; n < 8; n++) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;

    for (int64_t kt = 0; kt < n_tiles; kt++) {
        const int st = (int)(kt % ST), st_next = (int)((kt + ST - 1) % ST);
        if (kt + ST - 1 < n_tiles) store(st_next, pkB, blkB); /* the slot of tile kt - 1: done with */
        pkB = pkA;
        blkB = load_blk(pkA);
        pkA = load_pk(kt + ST + 1);
        ck_cp_async_wait<ST - 2>();
        __syncthreads(); /* tile kt has landed; every warp is done with tile kt - 1; new offsets visible */
        if (kt + ST - 1 < n_tiles) issue(st_next);
        ck_cp_async_commit();
        if (FP8) {
            convert(st);
            __syncthreads();
        }
        const T *kb = FP8 ? sK : sK + st * BN * LD;

        /* partial S: rows rh * 32 .. + 31, all 32 keys, dims dq * 144 .. + 143 (8 independent mma chains) */
        {
            float s[2][4][4];
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int n = 0; n < 4; n++) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
            const uint32_t qaddr = ck_smem(sQ + (rh * 32 + (lane & 15)) * LD + dq * (KSQ * 16) + (lane >> 4) * 8);
            const uint32_t kaddr =
                ck_smem(kb + ((lane & 7) + (lane >> 4) * 8) * LD + dq * (KSQ * 16) + ((lane >> 3) & 1) * 8);
#pragma unroll
            for (int kk = 0; kk < KSQ; kk++) {
                uint32_t aq[2][4], bk[2][4];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    ck_ldmatrix_x4(aq[h], qaddr + h * 16 * LD * 2 + kk * 32);
                    ck_ldmatrix_x4(bk[h], kaddr + h * 16 * LD * 2 + kk * 32);
                }
#pragma unroll
                for (int mt = 0; mt < 2; mt++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        ck_mma16816<T>(s[mt][2 * h], aq[mt], bk[h][0], bk[h][1]);
                        ck_mma16816<T>(s[mt][2 * h + 1], aq[mt], bk[h][2], bk[h][3]);
                    }
            }
            /* float2 of keys (2 t4, + 1) of n8 tile n at 8-byte unit (n ^ (row & 3)) * 4 + t4 of the row:
             * the 16 lanes of a half warp hit 16 different units */
#pragma unroll
            for (int mt = 0; mt < 2; mt++)
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    const int row = rh * 32 + mt * 16 + g + 8 * r;
                    float *dst = sSp + (dq * ROWS + row) * BN + 2 * t4;
#pragma unroll
                    for (int n = 0; n < 4; n++)
                        *(float2 *)(dst + ((n ^ (g & 3)) * 8)) = make_float2(s[mt][n][2 * r], s[mt][n][2 * r + 1]);
                }
        }
        __syncthreads(); /* the partial scores are complete */

        /* online softmax of row srow over keys sq * 8 .. + 7: the four partials summed, scaled into the
         * log2 domain, masked; lazy rescaling: the running max moves only when the tile's max exceeds it
         * by more than 8 (p <= 2^8), so most tiles leave O alone */
        {
            float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f), y = x; /* keys (shi ? 4 : 0) .., the other four */
#pragma unroll
            for (int p = 0; p < DQ; p++) {
                const float *src = sSp + (p * ROWS + srow) * BN + (sq ^ sw) * 8;
                const float4 u = *(const float4 *)(src + shi * 4), v = *(const float4 *)(src + 4 - shi * 4);
                x.x += u.x, x.y += u.y, x.z += u.z, x.w += u.w;
                y.x += v.x, y.y += v.y, y.z += v.z, y.w += v.w;
            }
            float v8[8] = {shi ? y.x : x.x, shi ? y.y : x.y, shi ? y.z : x.z, shi ? y.w : x.w,
                           shi ? x.x : y.x, shi ? x.y : y.y, shi ? x.z : y.z, shi ? x.w : y.w};
            const int4 pa = *(const int4 *)(spos + st * BN + sq * 8), pb = *(const int4 *)(spos + st * BN + sq * 8 + 4);
            const int32_t pos[8] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
            float sc8[8];
            if (FP8) {
                const float4 ca = *(const float4 *)(sscl + st * BN + sq * 8), cb = *(const float4 *)(sscl + st * BN + sq * 8 + 4);
                sc8[0] = ca.x, sc8[1] = ca.y, sc8[2] = ca.z, sc8[3] = ca.w;
                sc8[4] = cb.x, sc8[5] = cb.y, sc8[6] = cb.z, sc8[7] = cb.w;
            }
            float mx = -CK_INF;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                const bool ok = srow_any && (uint32_t)pos[i] <= srow_lim;
                v8[i] = ok ? v8[i] * (FP8 ? scale2 * sc8[i] : scale2) : -CK_INF;
                mx = fmaxf(mx, v8[i]);
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
            const float m_new = mx > m_run + CK_MLA_LAZY ? mx : m_run;
            const float m_use = m_new == -CK_INF ? 0.0f : m_new;
            /* a row with no key yet has O = 0 and l = 0: factor 1, so absent rows never force a rescale */
            const float alpha = m_run == -CK_INF ? 1.0f : ck_mla_exp2(m_run - m_use);
            float ls = 0.0f;
            uint32_t pk2[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float p0 = ck_mla_exp2(v8[2 * i] - m_use), p1 = ck_mla_exp2(v8[2 * i + 1] - m_use);
                ls += p0 + p1;
                /* fp8: P V with V unscaled = sum p scale v (p <= 2^8: f16 holds p scale for scales < 255) */
                pk2[i] = FP8 ? ck_pack2<T>(p0 * sc8[2 * i], p1 * sc8[2 * i + 1]) : ck_pack2<T>(p0, p1);
            }
            ls += __shfl_xor_sync(0xffffffffu, ls, 8);
            ls += __shfl_xor_sync(0xffffffffu, ls, 16);
            l_run = l_run * alpha + ls;
            m_run = m_new;
            *(uint4 *)(sP + srow * PLD + sq * 8) = make_uint4(pk2[0], pk2[1], pk2[2], pk2[3]);
            if (sq == 0) sAlpha[srow] = alpha;
        }
        __syncthreads(); /* P and the rescale factors are complete */

        /* O = alpha O + P V over this warp's 64 value columns */
        {
            float al[4][2];
            bool keep = true;
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    al[mt][r] = sAlpha[mt * 16 + g + 8 * r];
                    keep = keep && al[mt][r] == 1.0f;
                }
            if (!__all_sync(0xffffffffu, keep)) {
#pragma unroll
                for (int mt = 0; mt < 4; mt++)
#pragma unroll
                    for (int n = 0; n < 8; n++) {
                        o[mt][n][0] *= al[mt][0];
                        o[mt][n][1] *= al[mt][0];
                        o[mt][n][2] *= al[mt][1];
                        o[mt][n][3] *= al[mt][1];
                    }
            }
#pragma unroll
            for (int k2 = 0; k2 < BN / 16; k2++) {
                uint32_t pa[4][4];
#pragma unroll
                for (int mt = 0; mt < 4; mt++)
                    ck_ldmatrix_x4(pa[mt], ck_smem(sP + (mt * 16 + (lane & 15)) * PLD + k2 * 16 + (lane >> 4) * 8));
                const uint32_t vaddr =
                    ck_smem(kb + (k2 * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + warp * 64 + (lane >> 4) * 8);
#pragma unroll
                for (int np = 0; np < 4; np++) {
                    uint32_t bf[4];
                    ck_ldmatrix_x4_trans(bf, vaddr + np * 32);
#pragma unroll
                    for (int mt = 0; mt < 4; mt++) {
                        ck_mma16816<T>(o[mt][2 * np], pa[mt], bf[0], bf[1]);
                        ck_mma16816<T>(o[mt][2 * np + 1], pa[mt], bf[2], bf[3]);
                    }
                }
            }
        }
    }
    ck_cp_async_wait<0>();

    /* finish: row srow's lanes form its factor (one split: sinks here) and LSE; then every warp writes its
     * 64 columns of the rows that exist, whole or as a partial state */
    const bool part = it.num_splits > 1;
    if (sq == 0) {
        const int64_t t = tok0 + srow / hc, h = it.head_first + srow % hc;
        sMul[srow] = ck_mla_row_finish(a, it, part, srow, t, h, m_run, l_run, srow_ok, true);
    }
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = mt * 16 + g + 8 * r;
            if (row >= nrows) continue;
            const int64_t t = tok0 + row / hc, h = it.head_first + row % hc;
            const float mul = sMul[row];
#pragma unroll
            for (int n = 0; n < 8; n++) {
                const int col = warp * 64 + n * 8 + 2 * t4;
                const float o0 = o[mt][n][2 * r] * mul, o1 = o[mt][n][2 * r + 1] * mul;
                ck_mla_store_pair(a, it, part, row, t, h, col, o0, o1);
            }
        }
}

/* ck_mla_mma_<f16|bf16>[_fp8]: a latent of the query's 16-bit type, or fp8 (e4m3 / e5m2: a.kv_dtype) */
CK_MLA_ENTRIES(ck_mla_mma, ck_mla_mma_body)
