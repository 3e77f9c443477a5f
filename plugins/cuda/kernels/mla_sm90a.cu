/* mla_sm90a.cu — MLA on Hopper's warpgroup MMA (wgmma, sm_90a only; in the second fatbin, loaded on
 * compute capability 9.0): DeepSeek's latent (kv_dim 576, v_dim 512) in the query's 16-bit format. It
 * takes the tensor-core kernel's items and splits (mla_mma.cu: 64 query rows an item, a token's heads
 * sharing its latent rows) and computes the same function; fp8 latents stay on mla_mma.cu.
 *
 * 384 threads, three warpgroups, 64 keys a tile, Q and two cp.async latent stages in wgmma's
 * 128-byte-swizzle layout (the layout of the wgmma prefill kernel, attn_prefill_sm90a.cuh):
 *   warpgroup 0 (scores): S = Q C^T (36 wgmma m64n64k16, Q and the latent tile read by the tensor cores
 *                from shared memory), the online softmax in registers (lazy rescaling, as mla_mma.cu), P to
 *                the tile's rope columns (dims 512 .. 575 feed S only, so they are dead once S is done) in
 *                the A operand's layout and the rows' factors to shared memory;
 *   warpgroups 1, 2 (values): O[:, 0:256] and O[:, 256:512] += P V (4 wgmma m64n256k16 each, P and V from
 *                shared memory), the block-table look-ups and the copies of the next tiles.
 * So S and the softmax of tile j + 1 run beside P V of tile j (v2: two warpgroups, the first doing S, the
 * softmax and half of P V in turn). Per tile three named barriers: FULL (tile landed: values -> scores), P
 * (P and factors published: scores -> values), PV (both P V done, the stage takes tile j + 2: values only).
 * FULL and P alternate between two ids by the tile's parity, so arrivals of two tiles never meet at one
 * barrier. Registers: a value warpgroup needs ~154 (O is 128), the scores ~60, under the 168 of 384
 * threads. (Q in registers, to make room for a third stage, does not fit the register file:
 * docs/dev/cuda-mla.md, v3.)
 * Dense items walk key positions (causal per row); sparse items are one token each and walk its index
 * list (negative, >= seq_len or an absent block: no key). */
#include "attn_prefill_sm90a.cuh" /* the wgmma helpers (fence, commit, wait, pin, descriptors), ck_pf_cp16_row */
#include "mla_common.cuh"
#include "../cuda_ops12.h"

#define CK_MLAW_LOG2E 1.4426950408889634f
#define CK_MLAW_LN2 0.6931471805599453f
#define CK_MLAW_LAZY 8.0f /* log2 units the running max may lag the true max by (p <= 2^8) */
#define CK_MLAW_BAR_FULL 1 /* + tile parity */
#define CK_MLAW_BAR_P 3    /* + tile parity */
#define CK_MLAW_BAR_PV 5
#define CK_MLAW_BAR_Q 6 /* the scores warpgroup: Q landed */

__device__ __forceinline__ float ck_mlaw_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ void ck_mlaw_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void ck_mlaw_bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }

template <typename T> __device__ __forceinline__ void ck_mla_wg_body(const ck_mla_args_t &a)
{
    constexpr int ROWS = CK_MLA_MMA_ROWS, BN = CK_MLA_WG_BN, D = CK_MLA_MMA_D, SLOTS = CK_MLA_WG_SLOTS;
    constexpr int STAGES = CK_MLA_WG_STAGES, NT = CK_MLA_WG_THREADS, KS = D / 16;
    constexpr uint32_t CB = BN * 128;                /* a 64-column block of a tile */
    constexpr uint32_t TILE = (D / 64) * CB;         /* a latent tile: 9 column blocks */
    constexpr uint32_t ROPE = (CK_MLA_MMA_DV / 64) * CB; /* the rope block: P of the tile goes there */
    static_assert(ROWS == 64 && BN == 64 && D % 64 == 0 && CK_MLA_MMA_DV == 512 && NT == 384 && STAGES == 2 && SLOTS == 3,
                  "the shapes this kernel is written for");

    extern __shared__ __align__(1024) unsigned char ck_mla_wg_dyn[];
    /* the swizzle is a function of address bits 4-9: the tiles start 1024-byte aligned (the host adds
     * the slack) */
    const uint32_t raw = ck_smem(ck_mla_wg_dyn), base = (raw + 1023u) & ~1023u;
    unsigned char *smem = ck_mla_wg_dyn + (base - raw);
    const uint32_t sQ = base;                                  /* Q: [9 column blocks][ROWS][128 B] */
    const uint32_t sK = base + TILE;                           /* [STAGES][9 column blocks][BN rows][128 B] */
    uint64_t *saddr = (uint64_t *)(smem + TILE + STAGES * TILE); /* [SLOTS][BN] row address, 0: no key */
    float *sfac = (float *)(saddr + SLOTS * BN);               /* [2][ROWS] tile j's alpha in [j & 1]; at the end 1 / l */

    const ck_mla_item_t it = a.items[blockIdx.x];
    const int tid = threadIdx.x, wg = tid >> 7, wt = tid & 127, lane = tid & 31, wq = wt >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t L = rq.L, S = rq.S;
    const int hc = it.head_count;
    const int64_t ntok = min((int64_t)it.q_count, L - it.q_first);
    if (ntok <= 0) return;
    const int nrows = (int)ntok * hc;
    const int64_t tok0 = rq.q_begin + it.q_first;

    int64_t k_lo, k_hi;
    ck_mla_item_keys(a, it, rq, ntok, BN, &k_lo, &k_hi);
    const int n_tiles = (int)((k_hi - k_lo + BN - 1) / BN);
    const int32_t *idx_row = a.sparse ? a.indices + tok0 * a.idx_st[0] : nullptr;

    /* Key lt of tile t (lt = wt < BN of warpgroup 1), in two steps one tile apart: its position (sparse:
     * the index; -1 when none), then its block id, row address and position written to the tile's slot.
     * Positions are int32 (as mla_mma.cu's slots hold them); 32-bit state keeps the value warpgroups'
     * registers. A key is present when its row address is not 0; its position, for the causal mask, is
     * k_lo + its index (dense items only: sparse items have no causal mask). */
    const int lt = wt;
    const bool looker = wg == 1 && lt < BN;
    auto load_pk = [&](int t) -> int32_t {
        const int64_t e = k_lo + (int64_t)t * BN + lt;
        if (!looker || t >= n_tiles || e >= k_hi) return -1;
        const int64_t pk = a.sparse ? (int64_t)idx_row[e * a.idx_st[1]] : e;
        return pk >= 0 && pk < S ? (int32_t)pk : -1;
    };
    auto store = [&](int slot, int32_t pk) {
        if (!looker) return;
        const int64_t blk = pk >= 0 ? (int64_t)a.block_table[seq * a.bt_st[0] + (pk / a.block_size) * a.bt_st[1]] : -1;
        uint64_t row = 0;
        if (pk >= 0 && blk >= 0 && blk < a.num_blocks)
            row = (uint64_t)(uintptr_t)a.kv +
                  (uint64_t)(blk * a.kv_st[0] + (pk - (pk / a.block_size) * a.block_size) * a.kv_st[1]) * 2u;
        saddr[slot * BN + lt] = row;
        /* the row is copied two tiles from now (the first tiles: sooner); ask L2 for it now, so the copy
         * waits for L2 rather than DRAM: with one tile of copies in flight, the copies' latency bounds the
         * tile rate (docs/dev/cuda-mla.md, v3b) */
        if (row && a.l2_prefetch) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(row), "n"(D * 2) : "memory");
    };

    int32_t pkB = -1; /* the position of tile j + 3's key */
    {
        int32_t pk[4];
#pragma unroll
        for (int t = 0; t < 4; t++) pk[t] = load_pk(t);
#pragma unroll
        for (int t = 0; t < 3; t++) store(t, pk[t]);
        pkB = pk[3];
    }
    __syncthreads(); /* the first tiles' addresses are visible */

    /* This thread's rows (every warpgroup alike: the accumulator layout depends on the thread's index in
     * its warpgroup only): wq * 16 + g and + 8. */
    const int row0 = wq * 16 + g;
    if (wg == 0) {
        /* Q rows (zeros past nrows), swizzled as the tiles: 16-byte copies when the rows are 16-byte aligned
         * (Q has the kernel's 16-bit type), else element by element */
        {
            const bool q_vec = (((uintptr_t)a.q | (uintptr_t)(a.q_st[0] * 2) | (uintptr_t)(a.q_st[1] * 2)) & 15) == 0;
            for (int c = wt; c < ROWS * (D / 8); c += 128) {
                const int r = c / (D / 8), ch = c - r * (D / 8);
                const uint32_t dst = sQ + (uint32_t)(ch >> 3) * CB + (uint32_t)r * 128u + (uint32_t)(((ch & 7) ^ (r & 7)) << 4);
                const bool live = r < nrows;
                const int64_t at = live ? (tok0 + r / hc) * a.q_st[0] + (int64_t)(it.head_first + r % hc) * a.q_st[1] + ch * 8 : 0;
                if (q_vec) {
                    ck_cp_async16_zf(dst, (const T *)a.q + at, !live);
                } else {
                    uint32_t w[4];
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        w[e] = ck_pack2<T>(live ? ck_load(a.q, at + 2 * e, a.q_dtype) : 0.0f,
                                           live ? ck_load(a.q, at + 2 * e + 1, a.q_dtype) : 0.0f);
                    *(uint4 *)(smem + (dst - base)) = make_uint4(w[0], w[1], w[2], w[3]);
                }
            }
            ck_cp_async_commit();
            ck_cp_async_wait<0>();
            ck_fence_proxy_async(); /* Q (generic proxy) visible to wgmma (async proxy) */
            ck_mlaw_bar_sync(CK_MLAW_BAR_Q, 128);
        }
        /* running max (log2 domain, scaled) and this thread's share of the running sum; the last key
         * position each row sees, as unsigned (an absent key, -1, compares above every limit) */
        float m_run[2] = {-CK_INF, -CK_INF}, l_run[2] = {0.0f, 0.0f};
        uint32_t lim[2];
        bool row_any[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = row0 + 8 * r;
            const int64_t l64 = !a.sparse && a.causal ? S - L + it.q_first + row / hc : INT32_MAX;
            row_any[r] = row < nrows && l64 >= 0;
            lim[r] = row_any[r] ? (uint32_t)min(l64, (int64_t)INT32_MAX) : 0u;
        }
        const float scale2 = a.scale * CK_MLAW_LOG2E;

        for (int j = 0; j < n_tiles; j++) {
            const int slot = j % SLOTS;
            const uint32_t kb = sK + (uint32_t)(j % STAGES) * TILE;
            ck_mlaw_bar_sync(CK_MLAW_BAR_FULL + (j & 1), NT); /* tile j landed, its positions are visible */
            /* S = Q C^T: k-step kk reads 16 dims: column block kk / 4, 32 bytes in (the hardware applies the
             * swizzle to the address it forms) */
            float s[BN / 2];
            ck_wg_fence();
#pragma unroll
            for (int kk = 0; kk < KS; kk++) {
                const uint32_t ofs = (uint32_t)(kk >> 2) * CB + (uint32_t)(kk & 3) * 32u;
                ck_wg_ss<T, BN>(s, ck_wg_desc(sQ + ofs, 16u, 1024u), ck_wg_desc(kb + ofs, 16u, 1024u), kk > 0);
            }
            ck_wg_commit();
            ck_wg_wait<0>();
            ck_wg_pin(s);

            /* online softmax of rows (g, g + 8) over keys 8n + 2 t4 + e: scaled into the log2 domain,
             * masked; the quad holds a row's 64 keys; lazy rescaling */
            const uint32_t p_tile = (uint32_t)(k_lo + (int64_t)j * BN) + 2u * (uint32_t)t4;
            float mx[2] = {-CK_INF, -CK_INF};
#pragma unroll
            for (int n = 0; n < BN / 8; n++) {
                const ulonglong2 ad = *(const ulonglong2 *)(saddr + slot * BN + 8 * n + 2 * t4);
                const uint32_t pos[2] = {ad.x ? p_tile + 8u * n : 0xffffffffu, ad.y ? p_tile + 8u * n + 1u : 0xffffffffu};
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const uint32_t p = pos[e];
                        float &v = s[4 * n + 2 * r + e];
                        v = row_any[r] && p <= lim[r] ? v * scale2 : -CK_INF;
                        mx[r] = fmaxf(mx[r], v);
                    }
            }
            /* P goes to the rope block of the tile (its 64 keys are one 128-byte row: the A operand of
             * P V, K-major, chunk n of row R at n ^ (R & 7)); the factors to sfac[j & 1] */
            unsigned char *pblk = smem + (kb + ROPE - base);
#pragma unroll
            for (int r = 0; r < 2; r++) {
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                const float m_new = mx[r] > m_run[r] + CK_MLAW_LAZY ? mx[r] : m_run[r];
                const float m_use = m_new == -CK_INF ? 0.0f : m_new;
                /* a row with no key yet has O = 0 and l = 0: factor 1 */
                const float al = m_run[r] == -CK_INF ? 1.0f : ck_mlaw_exp2(m_run[r] - m_use);
                const int row = row0 + 8 * r;
                float ls = 0.0f;
#pragma unroll
                for (int n = 0; n < BN / 8; n++) {
                    const float p0 = ck_mlaw_exp2(s[4 * n + 2 * r] - m_use), p1 = ck_mlaw_exp2(s[4 * n + 2 * r + 1] - m_use);
                    ls += p0 + p1;
                    *(uint32_t *)(pblk + row * 128 + ((n ^ (row & 7)) << 4) + 4 * t4) = ck_pack2<T>(p0, p1);
                }
                l_run[r] = l_run[r] * al + ls; /* this thread's share; the quad's sum at the end */
                m_run[r] = m_new;
                if (t4 == 0) sfac[(j & 1) * ROWS + row] = al;
            }
            ck_fence_proxy_async(); /* P (generic proxy) visible to the values' wgmma (async proxy) */
            ck_mlaw_bar_arrive(CK_MLAW_BAR_P + (j & 1), NT);
        }

        /* each row's factor (one split: sinks here) and LSE; the factors go to sfac[0 ..] once the value
         * warpgroups have read the last tile's */
        const bool part = it.num_splits > 1;
        __syncthreads();
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float lsum = l_run[r];
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
            const int row = row0 + 8 * r;
            const int64_t t = tok0 + row / hc, h = it.head_first + row % hc;
            const float m_nat = m_run[r] * CK_MLAW_LN2;
            float mul = 0.0f;
            if (row < nrows && lsum > 0.0f) {
                float den = lsum;
                if (!part && a.sinks) den += __expf(a.sinks[h * a.sinks_st] - m_nat);
                mul = 1.0f / den;
            }
            if (t4 == 0) {
                sfac[row] = mul;
                if (row < nrows) {
                    const float lse = lsum > 0.0f ? m_nat + logf(lsum) : -CK_INF;
                    if (part)
                        a.part_lse[(int64_t)(it.part_index + it.split) * ROWS + row] = lse;
                    else if (a.lse)
                        a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
                }
            }
        }
        __syncthreads(); /* the factors are published */
    } else {
        const int vw = wg - 1; /* value half */
        /* Tile t into stage t % STAGES: copier ct takes chunk ct % 8 of each column block of rows ct / 8 and
         * ct / 8 + 32 (one swizzle for both); absent rows are zero-filled. One group a call, empty past
         * the last tile. */
        const int ct = tid - 128, cp_c8 = ct & 7, cp_r0 = ct >> 3;
        const uint32_t cp_dst = (uint32_t)cp_r0 * 128u + (uint32_t)((cp_c8 ^ (cp_r0 & 7)) << 4);
        auto issue = [&](int t) {
            if (t < n_tiles) {
                const uint32_t dst0 = sK + (uint32_t)(t % STAGES) * TILE + cp_dst;
#pragma unroll
                for (int i = 0; i < 2; i++) {
                    const uint64_t row = saddr[(t % SLOTS) * BN + cp_r0 + 32 * i];
#pragma unroll
                    for (int cb = 0; cb < D / 64; cb++)
                        ck_pf_cp16_row(dst0 + (uint32_t)cb * CB + (uint32_t)i * 32u * 128u, row, (uint32_t)(cb * 8 + cp_c8) * 16u);
                }
            }
            ck_cp_async_commit();
        };
        issue(0);
        issue(1);
        if (n_tiles > 0) {
            ck_cp_async_wait<1>();
            ck_fence_proxy_async(); /* this thread's copies (generic proxy) visible to wgmma (async proxy) */
            ck_mlaw_bar_arrive(CK_MLAW_BAR_FULL, NT);
        }

        /* O: this warpgroup's 256 value columns in wgmma's accumulator layout: column group n of rows
         * (row0, row0 + 8) holds o[4n + 2r + e] for row + 8r, column vw * 256 + 8n + 2 t4 + e. */
        float o[128];
#pragma unroll
        for (int i = 0; i < 128; i++) o[i] = 0.0f;
        for (int j = 0; j < n_tiles; j++) {
            const uint32_t kb = sK + (uint32_t)(j % STAGES) * TILE;
            ck_mlaw_bar_sync(CK_MLAW_BAR_P + (j & 1), NT); /* P of tile j and its factors are published */
            const float al0 = sfac[(j & 1) * ROWS + row0], al1 = sfac[(j & 1) * ROWS + row0 + 8];
            if (__any_sync(0xffffffffu, al0 != 1.0f || al1 != 1.0f)) {
#pragma unroll
                for (int n = 0; n < 32; n++) {
                    o[4 * n] *= al0;
                    o[4 * n + 1] *= al0;
                    o[4 * n + 2] *= al1;
                    o[4 * n + 3] *= al1;
                }
            }
            /* O += P V: k-step k2 reads keys 16 k2 ..: P 32 bytes into its rows, V MN-major 2048 bytes in
             * (the next 64 columns a block, CB bytes, apart) */
            const uint32_t vb = kb + (uint32_t)vw * 4u * CB;
            ck_wg_fence();
#pragma unroll
            for (int k2 = 0; k2 < BN / 16; k2++)
                ck_wg_ssv<T, 256>(o, ck_wg_desc(kb + ROPE + (uint32_t)k2 * 32u, 16u, 1024u),
                                  ck_wg_desc(vb + (uint32_t)k2 * 2048u, CB, 1024u));
            ck_wg_commit();
            /* while it runs: tile j + 3's addresses into slot j's (the softmax of tile j, its last reader,
             * is done) */
            store((j + 3) % SLOTS, pkB);
            pkB = load_pk(j + 4);
            if (j + 1 < n_tiles) { /* tile j + 1 (issued after P V of tile j - 1) landed */
                ck_cp_async_wait<0>();
                ck_fence_proxy_async(); /* this thread's copies (generic proxy) visible to wgmma (async proxy) */
                ck_mlaw_bar_arrive(CK_MLAW_BAR_FULL + ((j + 1) & 1), NT);
            }
            ck_wg_wait<0>();
            ck_wg_pin(o);
            /* both P V of tile j done: its stage takes tile j + 2, whose addresses are visible */
            ck_mlaw_bar_sync(CK_MLAW_BAR_PV, NT - 128);
            issue(j + 2);
        }
        ck_cp_async_wait<0>();

        const bool part = it.num_splits > 1;
        __syncthreads(); /* this warpgroup has read the last tile's factors */
        __syncthreads(); /* the scores warpgroup published the rows' final factors */
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = row0 + 8 * r;
            if (row >= nrows) continue;
            const int64_t t = tok0 + row / hc, h = it.head_first + row % hc;
            const float mul = sfac[row];
#pragma unroll
            for (int n = 0; n < 32; n++) {
                const int col = vw * 256 + n * 8 + 2 * t4;
                ck_mla_store_pair(a, it, part, row, t, h, col, o[4 * n + 2 * r] * mul, o[4 * n + 2 * r + 1] * mul);
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(CK_MLA_WG_THREADS, 1) ck_mla_wg_f16(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__half>(a);
}
extern "C" __global__ void __launch_bounds__(CK_MLA_WG_THREADS, 1) ck_mla_wg_bf16(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__nv_bfloat16>(a);
}
