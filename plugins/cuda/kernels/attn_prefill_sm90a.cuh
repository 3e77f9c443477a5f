/* attn_prefill_sm90a.cuh — the prefill fast path on Hopper's warpgroup MMA (wgmma, sm_90a only; built into
 * the second fatbin and loaded on compute capability 9.0 devices only). It takes exactly the calls the
 * FA2 kernel (attn_prefill.cuh) takes and keeps its structure: CK_PF_ROWS query rows a block, K/V tiles
 * gathered row by row through the block table with 16-byte cp.async into a 2-stage ring (addresses two
 * tiles ahead), per-element masks on edge tiles only, the online softmax with lazy rescaling on raw
 * scores, the same epilogue. What changes is the matrix work:
 *   - two warpgroups of 64 rows each (warp w: rows 16 w .. 16 w + 15, the accumulators' layout);
 *   - S = Q K^T: D / 16 wgmma m64nBNk16 with Q and K read by the tensor cores from shared memory
 *     (descriptors; no ldmatrix, no K fragments in registers);
 *   - O += P V: BN / 16 wgmma m64nDk16 with P from registers (the accumulator layout of S is the A
 *     fragment layout) and V from shared memory, MN-major (imm-trans-b);
 *   - every tile in wgmma's canonical 128-byte-swizzle layout: 64-element column blocks of 128-byte rows,
 *     16-byte chunk c of row r at c ^ (r & 7), each block 1024-byte aligned. K and V share the layout:
 *     K is read K-major (leading byte offset unused, stride 1024 bytes between 8-row groups), V MN-major
 *     (leading byte offset: the next 64 dims, BN x 128 bytes; stride: the next 8 keys, 1024 bytes).
 *     tests/cuda/model_wgmma_layout.py checks these descriptors against the PTX canonical layouts.
 * cp.async writes through the generic proxy and wgmma reads through the async proxy: each thread fences
 * (fence.proxy.async.shared::cta) after its copies landed, before the barrier that publishes them.
 * BN and the blocks a SM: cuda_prefill_wg_cfg.h. Each tile's S, softmax and O run in order (FA3's overlap
 * of a tile's O with the next tile's softmax gained nothing here: docs/dev/cuda-prefill.md, run 8).
 */
#ifndef ATTNRT_ATTN_PREFILL_SM90A_CUH
#define ATTNRT_ATTN_PREFILL_SM90A_CUH

#include "../cuda_prefill_wg_cfg.h"
#include "attn_prefill.cuh" /* ck_pf_cp16_row, CK_PF_RESCALE_LOG2, the common helpers */
#include "wgmma_sm90a.cuh"

__device__ __forceinline__ void ck_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void ck_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void ck_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
__device__ __forceinline__ void ck_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* Ties registers that an in-flight wgmma reads or writes to this point of the program (after its
 * wait_group): reads of the accumulators cannot move above it, and the A fragments stay live (their
 * registers are not reused for other values) until it. The compiler sees x rewritten here. */
template <int N> __device__ __forceinline__ void ck_wg_pin(float (&x)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+f"(x[i])::"memory");
}
template <int N> __device__ __forceinline__ void ck_wg_pin(uint32_t (&x)[N][4])
{
#pragma unroll
    for (int i = 0; i < N; i++) asm volatile("" : "+r"(x[i][0]), "+r"(x[i][1]), "+r"(x[i][2]), "+r"(x[i][3])::"memory");
}

/* Shared-memory matrix descriptor, 128-byte swizzle: start address, leading and stride byte offsets (all
 * in 16-byte units, 14 bits each), swizzle mode 1 in bits 62-63; base offset 0 (1024-aligned blocks). */
__device__ __forceinline__ uint64_t ck_wg_desc(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
    return (uint64_t)((addr & 0x3ffffu) >> 4) | (uint64_t)((lbo >> 4) & 0x3fffu) << 16 |
           (uint64_t)((sbo >> 4) & 0x3fffu) << 32 | 1ull << 62;
}

template <typename T, int D>
__device__ __forceinline__ void attn_prefill_wg(const ck_attn_args_t &a)
{
    constexpr int NT = CK_PFW_WARPS * 32, ROWS = CK_PF_ROWS, BN = CK_PFW_BN(D);
    constexpr int CPR = D / 8;    /* 16-byte chunks a row */
    constexpr int RPP = NT / CPR; /* rows a copy pass covers */
    constexpr int NS = BN / 8;    /* n8 column groups of S */
    constexpr int NO = D / 8;     /* n8 column groups of O */
    constexpr int SLOTS = CK_PF_ADDR_SLOTS;
    static_assert(ROWS == 2 * 64 && CK_PFW_WARPS == 8, "two warpgroups of 64 rows");
    static_assert(NT % CPR == 0 && BN % RPP == 0 && RPP % 8 == 0, "copy passes keep each thread's swizzle");
    static_assert(BN <= NT && BN % 16 == 0 && D % 64 == 0, "one thread looks up each key; whole column blocks");

    extern __shared__ __align__(1024) unsigned char pfw_smem[];
    /* The swizzle is a function of address bits 4-9: align the tiles to 1024 bytes (the host adds the
     * slack to the size). */
    const uint32_t smem_raw = ck_smem(pfw_smem), smem0 = (smem_raw + 1023u) & ~1023u;
    unsigned char *smem = pfw_smem + (smem0 - smem_raw);
    constexpr uint32_t Q_BYTES = ROWS * D * 2, KV_BYTES = BN * D * 2; /* a tile: D / 64 column blocks */
    const uint32_t sQ0 = smem0, sK0 = sQ0 + Q_BYTES, sV0 = sK0 + 2 * KV_BYTES; /* K, V: [2 stages] */
    uint64_t *kaddr = (uint64_t *)(smem + Q_BYTES + 4 * KV_BYTES); /* [SLOTS][BN]; 0: the key is absent */
    uint64_t *vaddr = kaddr + SLOTS * BN;
    int2 *rrange = (int2 *)(vaddr + SLOTS * BN); /* [ROWS] each row's key range, relative to kbeg */

    const ck_work_item_t it = a.items[blockIdx.x];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;

    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t q_begin = rq.q_begin, L = rq.L, S = rq.S;
    const int hc = it.head_count;
    const int64_t ntok = min((int64_t)(ROWS / hc), L - it.q_first);
    if (ntok <= 0) return;
    const int nrows = (int)ntok * hc;
    const int kvh = it.kv_head, hbase = kvh * a.group + it.head_first;
    const int64_t tok0 = q_begin + it.q_first, pq0 = S - L + it.q_first;
    const int64_t wl = a.window_left, wr = a.window_right;

    int64_t kbeg, kend, all_lo, all_hi;
    ck_key_range(pq0, S, a.causal, wl, wr, &kbeg, &all_hi);            /* the first token's range */
    ck_key_range(pq0 + ntok - 1, S, a.causal, wl, wr, &all_lo, &kend); /* the last token's */
    const int n_tiles = kend >= kbeg ? (int)((kend - kbeg + BN) / BN) : 0;

    /* Byte offset of 16-byte chunk c of row r in a tile of `rows` rows: column block c / 8, 128-byte
     * rows, chunk (c % 8) ^ (r % 8). */
    auto swz = [](int rows, int r, int c) -> uint32_t {
        return (uint32_t)((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
    };

    /* Q: rows past nrows are zeros. 16-byte cp.async when the rows allow it, else element by element. */
    {
        const bool q16 = (((uintptr_t)a.q | (uintptr_t)(a.q_st[0] * 2) | (uintptr_t)(a.q_st[1] * 2)) & 15u) == 0;
        for (int i = tid; i < ROWS * CPR; i += NT) {
            const int r = i / CPR, c = i % CPR;
            const bool live = r < nrows;
            const int64_t off = live ? (tok0 + r / hc) * a.q_st[0] + (int64_t)(hbase + r % hc) * a.q_st[1] + c * 8 : 0;
            const T *src = (const T *)a.q + off;
            const uint32_t dst = sQ0 + swz(ROWS, r, c);
            if (q16) {
                ck_cp_async16_zf(dst, src, !live);
            } else {
                uint16_t v[8];
#pragma unroll
                for (int e = 0; e < 8; e++) v[e] = live ? ((const uint16_t *)src)[e] : (uint16_t)0;
                *(uint4 *)(smem + (dst - smem0)) = make_uint4(v[0] | (uint32_t)v[1] << 16, v[2] | (uint32_t)v[3] << 16,
                                                               v[4] | (uint32_t)v[5] << 16, v[6] | (uint32_t)v[7] << 16);
            }
        }
        ck_cp_async_commit();
    }

    /* Block ids and row addresses: as attn_prefill (one thread a key, no division a tile). */
    const int64_t bsz = a.block_size, step_lb = BN / bsz, step_r = BN - step_lb * bsz;
    int64_t f_lb = ck_div_bs(kbeg + tid, bsz), f_r = kbeg + tid - f_lb * bsz;
    auto bt_fetch = [&](int64_t k0, int64_t &r_out) -> int64_t {
        const int64_t lb = f_lb;
        r_out = f_r;
        f_lb += step_lb;
        f_r += step_r;
        if (f_r >= bsz) {
            f_r -= bsz;
            f_lb++;
        }
        if (tid >= BN || k0 + tid > kend) return -1;
        return a.block_table[seq * a.bt_st[0] + lb * a.bt_st[1]];
    };
    const uintptr_t kc_head = (uintptr_t)a.kc + (uintptr_t)(kvh * a.kc_st[2] * 2);
    const uintptr_t vc_head = (uintptr_t)a.vc + (uintptr_t)(kvh * a.vc_st[2] * 2);
    auto addr_write = [&](int64_t k0, int slot, int64_t blk, int64_t r) -> bool {
        if (tid >= BN) return false;
        const int64_t key = k0 + tid;
        uint64_t kp = 0, vp = 0;
        if (key <= kend && blk >= 0 && blk < a.num_blocks) {
            kp = kc_head + (uint64_t)((blk * a.kc_st[0] + r * a.kc_st[1]) * 2);
            vp = vc_head + (uint64_t)((blk * a.vc_st[0] + r * a.vc_st[1]) * 2);
        }
        kaddr[slot * BN + tid] = kp;
        vaddr[slot * BN + tid] = vp;
        return key <= kend && kp == 0;
    };
    /* Thread tid copies chunk tid % CPR of rows tid / CPR + i x RPP (RPP a multiple of 8: one swizzle). */
    const int cp_c = tid % CPR, cp_r0 = tid / CPR;
    const uint32_t cp_dst = swz(BN, cp_r0, cp_c);
    auto issue_k = [&](int slot, int st) {
        const uint64_t *ka = kaddr + slot * BN + cp_r0;
        const uint32_t kd = sK0 + (uint32_t)st * KV_BYTES + cp_dst;
#pragma unroll
        for (int i = 0; i < BN / RPP; i++) ck_pf_cp16_row(kd + i * RPP * 128, ka[i * RPP], cp_c * 16);
    };
    auto issue_v = [&](int slot, int st) {
        const uint64_t *va = vaddr + slot * BN + cp_r0;
        const uint32_t vd = sV0 + (uint32_t)st * KV_BYTES + cp_dst;
#pragma unroll
        for (int i = 0; i < BN / RPP; i++) ck_pf_cp16_row(vd + i * RPP * 128, va[i * RPP], cp_c * 16);
    };

    bool pending = false, absent_saved = false;
    int64_t r_pf = 0;
    if (n_tiles > 0) {
        const int64_t blk = bt_fetch(kbeg, r_pf);
        pending = addr_write(kbeg, 0, blk, r_pf);
    }
    absent_saved = __syncthreads_or(pending);
    if (n_tiles > 0) {
        issue_k(0, 0);
        issue_v(0, 0);
        ck_cp_async_commit();
    }
    if (n_tiles > 1) {
        const int64_t blk = bt_fetch(kbeg + BN, r_pf);
        pending = addr_write(kbeg + BN, 1, blk, r_pf);
    }
    int64_t blk_pf = n_tiles > 2 ? bt_fetch(kbeg + 2 * BN, r_pf) : -1;

    for (int row = tid; row < ROWS; row += NT) {
        int64_t lo, hi;
        ck_key_range(pq0 + row / hc, S, a.causal, wl, wr, &lo, &hi);
        int2 rr = make_int2(0x7fffffff, -1);
        if (row < nrows && lo <= hi)
            rr = make_int2((int)ck_clamp(lo - kbeg, 0, 0x7fffffff), (int)ck_clamp(hi - kbeg, -1, 0x7fffffff));
        rrange[row] = rr;
    }

    /* Accumulators in wgmma's layout: column group n of this thread's rows (warp x 16 + g, + 8) holds
     * x[4n + 2r + e] for row + 8r, column 8n + 2 t4 + e. */
    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; i++) o[i] = 0.0f;
    float m[2] = {-CK_INF, -CK_INF}, l[2] = {0.0f, 0.0f}; /* running max of the raw scores, running sum */
    const float scale2 = a.scale * CK_LOG2E;
    /* This warpgroup's 64 Q rows: row block (warp / 4) x 64 of each column block. */
    const uint32_t q_wg = sQ0 + (uint32_t)(warp >> 2) * 64u * 128u;
    uint32_t pa[BN / 16][4]; /* P as wgmma's A fragments: k-step k2 = column groups 2 k2, 2 k2 + 1 */
    /* O += P V of the tile whose V is in stage vst: k-step k2 reads keys 16 k2 .. 16 k2 + 15 (two 8-row
     * groups, 2048 bytes in); N = D spans D / 64 column blocks, BN x 128 bytes apart. */
    auto issue_pv = [&](int vst) {
        const uint32_t vb = sV0 + (uint32_t)vst * KV_BYTES;
        ck_wg_fence();
#pragma unroll
        for (int k2 = 0; k2 < BN / 16; k2++)
            ck_wg_rs<T, D>(o, pa[k2], ck_wg_desc(vb + (uint32_t)k2 * 2048u, (uint32_t)BN * 128u, 1024u));
        ck_wg_commit();
    };

    for (int kt = 0; kt < n_tiles; kt++) {
        const int st = kt & 1, slot = kt % SLOTS;
        ck_cp_async_wait<0>();
        ck_fence_proxy_async(); /* this thread's copies (generic proxy) visible to wgmma (async proxy) */
        /* After this barrier: tile kt (and Q) landed; every warpgroup's wgmma of tile kt-1 completed (each
         * waited before), so its stage takes tile kt+1; tile kt+1's addresses are visible. */
        const bool absent_next = __syncthreads_or(pending);
        const bool absent_cur = absent_saved;
        absent_saved = absent_next;
        if (kt + 1 < n_tiles) {
            issue_k((kt + 1) % SLOTS, st ^ 1);
            issue_v((kt + 1) % SLOTS, st ^ 1);
        }
        ck_cp_async_commit();
        pending = false;
        const int64_t k0 = kbeg + (int64_t)kt * BN;
        const bool interior = !absent_cur && k0 >= all_lo && k0 + BN - 1 <= all_hi;
        const uint32_t kb = sK0 + (uint32_t)st * KV_BYTES;

        /* S = Q K^T: k-step kk reads 16 dims: column block kk / 4, 32 bytes in (the hardware applies the
         * swizzle to the address it forms). */
        float s[BN / 2];
        ck_wg_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            const uint32_t cofs = (uint32_t)(kk >> 2), kofs = (uint32_t)(kk & 3) * 32u;
            const uint64_t da = ck_wg_desc(q_wg + cofs * ROWS * 128u + kofs, 16u, 1024u);
            const uint64_t db = ck_wg_desc(kb + cofs * BN * 128u + kofs, 16u, 1024u);
            ck_wg_ss<T, BN>(s, da, db, kk > 0);
        }
        ck_wg_commit();
        ck_wg_wait<0>();
        ck_wg_pin(s);

        if (!interior) {
            const int j0 = kt * BN;
            int rlo[2], rhi[2];
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const int2 rr = rrange[warp * 16 + g + 8 * r];
                rlo[r] = rr.x;
                rhi[r] = rr.y;
            }
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int j = n * 8 + 2 * t4 + e;
                    const bool gone = absent_cur && kaddr[slot * BN + j] == 0;
#pragma unroll
                    for (int r = 0; r < 2; r++)
                        if (gone || j0 + j < rlo[r] || j0 + j > rhi[r]) s[4 * n + 2 * r + e] = -CK_INF;
                }
        }

        /* Online softmax, as attn_prefill: the quad holds a row's BN scores. */
        float mx[2];
        bool grow = false;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float t[NS];
#pragma unroll
            for (int n = 0; n < NS; n++) t[n] = fmaxf(s[4 * n + 2 * r], s[4 * n + 2 * r + 1]);
#pragma unroll
            for (int w = 1; w < NS; w *= 2)
#pragma unroll
                for (int n = 0; n + w < NS; n += 2 * w) t[n] = fmaxf(t[n], t[n + w]);
            float v = fmaxf(t[0], __shfl_xor_sync(0xffffffffu, t[0], 1));
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
            mx[r] = v;
            grow |= v * scale2 > m[r] * scale2 + CK_PF_RESCALE_LOG2;
        }
        const bool rescale = __any_sync(0xffffffffu, grow);
        float alpha[2] = {1.0f, 1.0f};
        if (rescale) {
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const float mn = fmaxf(m[r], mx[r]);
                alpha[r] = mn == -CK_INF ? 0.0f : ck_exp2((m[r] - mn) * scale2);
                m[r] = mn;
                l[r] *= alpha[r];
            }
        }
        uint32_t pn[BN / 16][4]; /* this tile's P */
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const float msc = m[r] == -CK_INF ? 0.0f : m[r] * scale2;
            float t[NS];
#pragma unroll
            for (int n = 0; n < NS; n++) {
                const float p0 = ck_exp2(fmaf(s[4 * n + 2 * r], scale2, -msc));
                const float p1 = ck_exp2(fmaf(s[4 * n + 2 * r + 1], scale2, -msc));
                pn[n >> 1][(n & 1) * 2 + r] = ck_pack2<T>(p0, p1);
                t[n] = p0 + p1;
            }
#pragma unroll
            for (int w = 1; w < NS; w *= 2)
#pragma unroll
                for (int n = 0; n + w < NS; n += 2 * w) t[n] += t[n + w];
            l[r] += t[0];
        }

        if (rescale) {
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int n = 0; n < NO; n++) {
                    o[4 * n + 2 * r] *= alpha[r];
                    o[4 * n + 2 * r + 1] *= alpha[r];
                }
        }
#pragma unroll
        for (int k2 = 0; k2 < BN / 16; k2++)
#pragma unroll
            for (int i = 0; i < 4; i++) pa[k2][i] = pn[k2][i];
        issue_pv(st);

        if (kt + 2 < n_tiles) {
            pending = addr_write(k0 + 2 * BN, (kt + 2) % SLOTS, blk_pf, r_pf);
            blk_pf = kt + 3 < n_tiles ? bt_fetch(k0 + 3 * BN, r_pf) : -1;
        }
        ck_wg_wait<0>(); /* before the next barrier: the stage is then free for tile kt+2 */
        ck_wg_pin(o);
        ck_wg_pin(pa);
    }
    ck_cp_async_wait<0>();

    /* Epilogue: as attn_prefill. */
    const bool pair16 = a.out_dtype == a.q_dtype &&
                        (((uintptr_t)a.out | (uintptr_t)(a.out_st[0] * 2) | (uintptr_t)(a.out_st[1] * 2)) & 3u) == 0;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float lsum = l[r];
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
        const int row = warp * 16 + g + 8 * r;
        if (row >= nrows) continue;
        const int64_t tok = tok0 + row / hc;
        const int h = hbase + row % hc;
        const float m_nat = m[r] * a.scale;
        float inv = 0.0f;
        if (lsum > 0.0f) {
            float den = lsum;
            if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m_nat);
            inv = 1.0f / den;
        }
        const int64_t ob = tok * a.out_st[0] + (int64_t)h * a.out_st[1];
#pragma unroll
        for (int n = 0; n < NO; n++) {
            const int c = n * 8 + 2 * t4;
            const float v0 = o[4 * n + 2 * r] * inv, v1 = o[4 * n + 2 * r + 1] * inv;
            if (pair16) {
                *(uint32_t *)((T *)a.out + ob + c) = ck_pack2<T>(v0, v1);
            } else {
                ck_store(a.out, ob + c, a.out_dtype, v0);
                ck_store(a.out, ob + c + 1, a.out_dtype, v1);
            }
        }
        if (t4 == 0 && a.lse)
            a.lse[tok * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lsum > 0.0f ? m_nat + logf(lsum) : -CK_INF;
    }
}

#endif /* ATTNRT_ATTN_PREFILL_SM90A_CUH */
