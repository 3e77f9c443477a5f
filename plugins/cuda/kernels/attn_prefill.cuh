/* attn_prefill.cuh — the prefill fast path: paged attention for 16-bit Q and K/V with Dqk = Dv = D
 * (64, 128, 256), no soft-cap and no ALiBi (those, fp8 caches and other head dims stay on attn_mma.cuh).
 * FlashAttention-2's structure on mma.sync m16n8k16:
 *   - a block owns CK_PF_ROWS query rows, a warp MT m16 tiles of them (MT 2: every K/V fragment an
 *     ldmatrix brings serves two mma); the S and O accumulators live in registers;
 *   - K/V tiles of BN keys, gathered row by row through the block table with 16-byte cp.async into a
 *     2-stage ring, one barrier a tile; the row addresses are computed two tiles ahead (one thread a
 *     key, its block-table load issued a tile before its use) into a 3-slot ring;
 *   - every tile (Q, K, V) is stored without padding, its 16-byte chunks XOR-swizzled by row (chunk
 *     c of row r at c ^ (r & 7)): the 8 rows an ldmatrix reads fall in 8 different bank groups;
 *   - the online softmax works on the raw scores (max), with scale x log2 e folded into one FFMA before
 *     exp2; only tiles that cross a row's key range (the causal diagonal, windows, the sequence's end) or
 *     hold an absent key take the per-element mask; tiles outside the block's range are never loaded.
 * The plan gives the blocks in decreasing cost (the latest query tiles of causal prefill first).
 */
#ifndef ATTNRT_ATTN_PREFILL_CUH
#define ATTNRT_ATTN_PREFILL_CUH

#include "../cuda_prefill_cfg.h"
#include "attn_mma.cuh" /* ck_exp2, ck_cp_async16_zf, ck_div_bs, CK_LOG2E */

/* 16 bytes at row + off (global) -> shared dst; row 0 (an absent key) writes 16 zeros and reads nothing.
 * The null test is inside the asm: one 64-bit compare feeds the copy's ignore-src predicate. */
__device__ __forceinline__ void ck_pf_cp16_row(uint32_t dst, uint64_t row, uint32_t off)
{
    asm volatile("{\n"
                 "  .reg .pred z;\n"
                 "  setp.eq.u64 z, %1, 0;\n"
                 "  cp.async.cg.shared.global [%0], [%2], 16, z;\n"
                 "}\n" ::"r"(dst), "l"(row), "l"(row + off));
}

/* Lazy rescaling: a row's running max m only moves when a tile's max exceeds it by more than this (in
 * log2 units), so most tiles skip the alpha = 2^(m_old - m_new) pass over O (H200 run 2: +12% at D 128).
 * Then p = 2^(s - m) <= 2^8: no overflow in f32, and in P's 16-bit type only its magnitude changes (the
 * same relative rounding, far from f16's largest 2^16). o and l share the same m, so o / l is unchanged. */
#define CK_PF_RESCALE_LOG2 8.0f

template <typename T, int D>
__device__ __forceinline__ void attn_prefill(const ck_attn_args_t &a)
{
    constexpr int WARPS = CK_PF_WARPS(D), MT = CK_PF_MTILES(D), NT = WARPS * 32, ROWS = CK_PF_ROWS, BN = CK_PF_BN;
    constexpr int CPR = D / 8;      /* 16-byte chunks a row */
    constexpr int RPP = NT / CPR;   /* rows a copy pass covers: a thread copies the same chunk of each */
    constexpr int NS = BN / 8;      /* n8 tiles of S */
    constexpr int NO = D / 8;       /* n8 tiles of O */
    constexpr int SLOTS = CK_PF_ADDR_SLOTS;
    static_assert(WARPS * MT * 16 == ROWS && NT % CPR == 0 && BN % RPP == 0 && RPP % 8 == 0, "copy passes");
    static_assert(BN <= NT && BN % 16 == 0, "one thread looks up each key of a tile; whole k-steps");
    static_assert(CPR >= 8, "the swizzle permutes 8 chunks");

    extern __shared__ __align__(128) unsigned char pf_smem[]; /* the swizzle XORs address bits 4-6 */
    unsigned char *smem = pf_smem;
    T *sQ = (T *)smem;
    T *sK = sQ + ROWS * D;      /* [2][BN][D] */
    T *sV = sK + 2 * BN * D;    /* [2][BN][D] */
    uint64_t *kaddr = (uint64_t *)(sV + 2 * BN * D); /* [SLOTS][BN]; 0: the key is absent */
    uint64_t *vaddr = kaddr + SLOTS * BN;
    int2 *rrange = (int2 *)(vaddr + SLOTS * BN); /* [ROWS] each row's key range, relative to kbeg */

    const ck_work_item_t it = a.items[blockIdx.x];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;

    /* The request, read on the device and clamped to the tensors (a replayed graph sees grown lengths). */
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

    int64_t kbeg, kend, all_lo, all_hi, unused;
    ck_key_range(pq0, S, a.causal, wl, wr, &kbeg, &all_hi);            /* the first token's range */
    ck_key_range(pq0 + ntok - 1, S, a.causal, wl, wr, &all_lo, &kend); /* the last token's */
    (void)unused;
    const int n_tiles = kend >= kbeg ? (int)((kend - kbeg + BN) / BN) : 0;

    /* Swizzled element offset of chunk c of row r. */
    auto swz = [](int r, int c) -> int { return r * D + ((c ^ (r & 7)) << 3); };

    /* Q: rows past nrows are zeros. 16-byte cp.async when the rows allow it, else element by element. */
    {
        const bool q16 = (((uintptr_t)a.q | (uintptr_t)(a.q_st[0] * 2) | (uintptr_t)(a.q_st[1] * 2)) & 15u) == 0;
        for (int i = tid; i < ROWS * CPR; i += NT) {
            const int r = i / CPR, c = i % CPR;
            const bool live = r < nrows;
            const int64_t off = live ? (tok0 + r / hc) * a.q_st[0] + (int64_t)(hbase + r % hc) * a.q_st[1] + c * 8 : 0;
            const T *src = (const T *)a.q + off;
            if (q16) {
                ck_cp_async16_zf(ck_smem(sQ + swz(r, c)), src, !live);
            } else {
                uint16_t v[8];
#pragma unroll
                for (int e = 0; e < 8; e++) v[e] = live ? ((const uint16_t *)src)[e] : (uint16_t)0;
                *(uint4 *)(sQ + swz(r, c)) = make_uint4(v[0] | (uint32_t)v[1] << 16, v[2] | (uint32_t)v[3] << 16,
                                                        v[4] | (uint32_t)v[5] << 16, v[6] | (uint32_t)v[7] << 16);
            }
        }
        ck_cp_async_commit();
    }

    /* Block id of key k0 + tid (threads < BN; -1 past kend) and its row in the block (r_out). The calls
     * walk the tiles in order, so (logical block, row) advance by (BN / bs, BN % bs) from one division
     * at the start: no division a tile. */
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
    /* Row addresses of key k0 + tid (block id blk, row r) into ring slot `slot`; returns whether the key
     * lies in range but is absent (a block id outside the cache: zeros, masked). */
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
    /* Copies of the tile whose addresses are in `slot` into stage `st`: thread tid copies chunk
     * tid % CPR of rows tid / CPR + i * RPP (absent keys: zeros), so a warp's copies fill whole rows
     * (conflict-free stores; H200 run 3: four adjacent chunks a thread instead, fewer instructions, was
     * 8-10% slower). RPP is a multiple of 8: every row of a thread has the same swizzle. */
    const int cp_c = tid % CPR, cp_r0 = tid / CPR;
    const uint32_t cp_dst = (uint32_t)swz(cp_r0, cp_c) * 2u;
    const uint32_t sK0 = ck_smem(sK), sV0 = ck_smem(sV);
    auto issue = [&](int slot, int st) {
        const uint64_t *ka = kaddr + slot * BN + cp_r0, *va = vaddr + slot * BN + cp_r0;
        const uint32_t kd = sK0 + (uint32_t)(st * BN * D * 2) + cp_dst, vd = sV0 + (uint32_t)(st * BN * D * 2) + cp_dst;
#pragma unroll
        for (int i = 0; i < BN / RPP; i++) ck_pf_cp16_row(kd + i * RPP * D * 2, ka[i * RPP], cp_c * 16);
#pragma unroll
        for (int i = 0; i < BN / RPP; i++) ck_pf_cp16_row(vd + i * RPP * D * 2, va[i * RPP], cp_c * 16);
        ck_cp_async_commit();
    };

    /* Prologue: tile 0's addresses (published by a barrier that also tells whether it has an absent
     * key), its copies, tile 1's addresses (published by the loop's first barrier), tile 2's block ids. */
    bool pending = false, absent_saved = false;
    int64_t r_pf = 0;
    if (n_tiles > 0) {
        const int64_t blk = bt_fetch(kbeg, r_pf);
        pending = addr_write(kbeg, 0, blk, r_pf);
    }
    absent_saved = __syncthreads_or(pending);
    if (n_tiles > 0) issue(0, 0);
    if (n_tiles > 1) {
        const int64_t blk = bt_fetch(kbeg + BN, r_pf);
        pending = addr_write(kbeg + BN, 1, blk, r_pf);
    }
    int64_t blk_pf = n_tiles > 2 ? bt_fetch(kbeg + 2 * BN, r_pf) : -1;

    /* Each row's key range relative to kbeg (empty for rows past nrows), in shared memory: the edge
     * tiles read it, and the accumulators keep the registers. Published by the loop's first barrier. */
    for (int row = tid; row < ROWS; row += NT) {
        int64_t lo, hi;
        ck_key_range(pq0 + row / hc, S, a.causal, wl, wr, &lo, &hi);
        int2 rr = make_int2(0x7fffffff, -1);
        if (row < nrows && lo <= hi)
            rr = make_int2((int)ck_clamp(lo - kbeg, 0, 0x7fffffff), (int)ck_clamp(hi - kbeg, -1, 0x7fffffff));
        rrange[row] = rr;
    }

    float o[MT][NO][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int n = 0; n < NO; n++) o[i][n][0] = o[i][n][1] = o[i][n][2] = o[i][n][3] = 0.0f;
    float m[MT][2], l[MT][2]; /* running max of the raw scores, running sum (this thread's columns) */
#pragma unroll
    for (int i = 0; i < MT; i++) m[i][0] = m[i][1] = -CK_INF, l[i][0] = l[i][1] = 0.0f;
    const float scale2 = a.scale * CK_LOG2E; /* the host sends this path positive scales only */
    /* ldmatrix addresses: each lane's row starts a 128-byte line and its chunk is c = 2 x step + bit, so
     * the swizzled chunk is (2 x step) ^ (bit ^ (row & 7)): a per-lane base XOR a constant of the step
     * (bits 4-6 of the byte address) plus a constant (the step's chunks past 8). All rows here have
     * row & 7 = lane & 7. */
    auto lane_base = [&](uint32_t region, int row, int bit) -> uint32_t {
        return region + (uint32_t)(row * D * 2) + (uint32_t)((bit ^ (lane & 7)) << 4);
    };
    auto at_chunk = [](uint32_t base, int c2) -> uint32_t { /* c2: the even chunk 2 x step */
        return (base ^ (uint32_t)((c2 & 7) << 4)) + (uint32_t)((c2 & ~7) << 4);
    };
    /* Q (A operand): rows of the warp's m-tile, k halves by lane >> 4; K (B, keys x dims): keys 0-7 /
     * 8-15 by lane >> 4, k halves by bit 3; V (B by .trans, keys x dims): keys by bit 3, dims by lane >> 4.
     * K and V bases are relative to their stage. */
    const uint32_t qb = lane_base(ck_smem(sQ), warp * MT * 16 + (lane & 15), lane >> 4);
    const uint32_t kbl = lane_base(0u, (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
    const uint32_t vbl = lane_base(0u, (lane & 7) + ((lane >> 3) & 1) * 8, lane >> 4);

    for (int kt = 0; kt < n_tiles; kt++) {
        const int st = kt & 1, slot = kt % SLOTS;
        ck_cp_async_wait<0>();
        /* After this barrier: tile kt (and Q) landed for every thread; every warp is done with tile kt-1,
         * whose stage now takes tile kt+1; tile kt+1's addresses are visible. */
        const bool absent_next = __syncthreads_or(pending);
        const bool absent_cur = absent_saved;
        absent_saved = absent_next;
        if (kt + 1 < n_tiles) issue((kt + 1) % SLOTS, st ^ 1);
        pending = false;
        const int64_t k0 = kbeg + (int64_t)kt * BN;
        const bool interior = !absent_cur && k0 >= all_lo && k0 + BN - 1 <= all_hi;
        const uint32_t kb = sK0 + (uint32_t)(st * BN * D * 2) + kbl, vb = sV0 + (uint32_t)(st * BN * D * 2) + vbl;

        /* S = Q K^T: per k-step MT ldmatrix of Q, BN / 16 of K, MT x BN / 8 mma. */
        float s[MT][NS][4];
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int n = 0; n < NS; n++) s[i][n][0] = s[i][n][1] = s[i][n][2] = s[i][n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t aq[MT][4];
#pragma unroll
            for (int i = 0; i < MT; i++) ck_ldmatrix_x4(aq[i], at_chunk(qb, kk * 2) + i * 16 * D * 2);
#pragma unroll
            for (int np = 0; np < NS / 2; np++) {
                uint32_t bf[4];
                ck_ldmatrix_x4(bf, at_chunk(kb, kk * 2) + np * 16 * D * 2);
#pragma unroll
                for (int i = 0; i < MT; i++) {
                    ck_mma16816<T>(s[i][2 * np], aq[i], bf[0], bf[1]);
                    ck_mma16816<T>(s[i][2 * np + 1], aq[i], bf[2], bf[3]);
                }
            }
        }

        /* Masks (edge tiles only): keys outside a row's range, absent keys. */
        if (!interior) {
            const int j0 = kt * BN;
            int rlo[MT][2], rhi[MT][2];
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    const int2 rr = rrange[(warp * MT + i) * 16 + g + 8 * r];
                    rlo[i][r] = rr.x;
                    rhi[i][r] = rr.y;
                }
#pragma unroll
            for (int n = 0; n < NS; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int j = n * 8 + 2 * t4 + e;
                    const bool gone = absent_cur && kaddr[slot * BN + j] == 0;
#pragma unroll
                    for (int i = 0; i < MT; i++)
#pragma unroll
                        for (int r = 0; r < 2; r++)
                            if (gone || j0 + j < rlo[i][r] || j0 + j > rhi[i][r]) s[i][n][2 * r + e] = -CK_INF;
                }
        }

        /* Online softmax: the quad (4 lanes) holds a row's BN scores. The tile's max by a tree (short
         * dependency chains), then the lazy rescale (CK_PF_RESCALE_LOG2), decided for the whole warp. */
        float mx[MT][2];
        bool grow = false;
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                float t[NS];
#pragma unroll
                for (int n = 0; n < NS; n++) t[n] = fmaxf(s[i][n][2 * r], s[i][n][2 * r + 1]);
#pragma unroll
                for (int w = 1; w < NS; w *= 2)
#pragma unroll
                    for (int n = 0; n + w < NS; n += 2 * w) t[n] = fmaxf(t[n], t[n + w]);
                float v = fmaxf(t[0], __shfl_xor_sync(0xffffffffu, t[0], 1));
                v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
                mx[i][r] = v;
                grow |= v * scale2 > m[i][r] * scale2 + CK_PF_RESCALE_LOG2; /* m -inf: any key grows it */
            }
        if (__any_sync(0xffffffffu, grow)) {
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    const float mn = fmaxf(m[i][r], mx[i][r]);
                    /* no key yet (mn -inf): alpha 0 on an O of zeros, never NaN */
                    const float alpha = mn == -CK_INF ? 0.0f : ck_exp2((m[i][r] - mn) * scale2);
                    m[i][r] = mn;
                    l[i][r] *= alpha;
#pragma unroll
                    for (int n = 0; n < NO; n++) {
                        o[i][n][2 * r] *= alpha;
                        o[i][n][2 * r + 1] *= alpha;
                    }
                }
        }
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                const float msc = m[i][r] == -CK_INF ? 0.0f : m[i][r] * scale2; /* no key yet: every p is 0 */
                float t[NS];
#pragma unroll
                for (int n = 0; n < NS; n++) {
                    const float p0 = ck_exp2(fmaf(s[i][n][2 * r], scale2, -msc));
                    const float p1 = ck_exp2(fmaf(s[i][n][2 * r + 1], scale2, -msc));
                    s[i][n][2 * r] = p0;
                    s[i][n][2 * r + 1] = p1;
                    t[n] = p0 + p1;
                }
#pragma unroll
                for (int w = 1; w < NS; w *= 2) /* a tree: short dependency chains */
#pragma unroll
                    for (int n = 0; n + w < NS; n += 2 * w) t[n] += t[n + w];
                l[i][r] += t[0];
            }

        /* O += P V: P's accumulator layout is the A operand's (two n8 tiles of keys a k-step); V by
         * ldmatrix.trans, one x4 for two n8 tiles of dims, shared by the MT m-tiles. */
#pragma unroll
        for (int k2 = 0; k2 < BN / 16; k2++) {
            uint32_t pa[MT][4];
#pragma unroll
            for (int i = 0; i < MT; i++) {
                pa[i][0] = ck_pack2<T>(s[i][2 * k2][0], s[i][2 * k2][1]);
                pa[i][1] = ck_pack2<T>(s[i][2 * k2][2], s[i][2 * k2][3]);
                pa[i][2] = ck_pack2<T>(s[i][2 * k2 + 1][0], s[i][2 * k2 + 1][1]);
                pa[i][3] = ck_pack2<T>(s[i][2 * k2 + 1][2], s[i][2 * k2 + 1][3]);
            }
#pragma unroll
            for (int np = 0; np < D / 16; np++) {
                uint32_t bf[4];
                ck_ldmatrix_x4_trans(bf, at_chunk(vb, np * 2) + k2 * 16 * D * 2);
#pragma unroll
                for (int i = 0; i < MT; i++) {
                    ck_mma16816<T>(o[i][2 * np], pa[i], bf[0], bf[1]);
                    ck_mma16816<T>(o[i][2 * np + 1], pa[i], bf[2], bf[3]);
                }
            }
        }

        /* Tile kt+2's addresses into the slot tile kt-1 used (its last readers passed this tile's
         * barrier), published by the next barrier; tile kt+3's block ids. */
        if (kt + 2 < n_tiles) {
            pending = addr_write(k0 + 2 * BN, (kt + 2) % SLOTS, blk_pf, r_pf);
            blk_pf = kt + 3 < n_tiles ? bt_fetch(k0 + 3 * BN, r_pf) : -1;
        }
    }
    ck_cp_async_wait<0>(); /* nothing real is left in flight; Q's group when there was no tile */

    /* Epilogue: each quad's row sums, then o / (l + sink) straight from the accumulators. */
    const bool pair16 = a.out_dtype == a.q_dtype &&
                        (((uintptr_t)a.out | (uintptr_t)(a.out_st[0] * 2) | (uintptr_t)(a.out_st[1] * 2)) & 3u) == 0;
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float lsum = l[i][r];
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
            const int row = (warp * MT + i) * 16 + g + 8 * r;
            if (row >= nrows) continue;
            const int64_t tok = tok0 + row / hc;
            const int h = hbase + row % hc;
            const float m_nat = m[i][r] * a.scale; /* natural-log units for the LSE and the sinks */
            float inv = 0.0f;
            if (lsum > 0.0f) {
                float den = lsum;
                if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m_nat);
                inv = 1.0f / den; /* den inf (a sink far above every key): 0, not NaN */
            }
            const int64_t ob = tok * a.out_st[0] + (int64_t)h * a.out_st[1];
#pragma unroll
            for (int n = 0; n < NO; n++) {
                const int c = n * 8 + 2 * t4;
                const float v0 = o[i][n][2 * r] * inv, v1 = o[i][n][2 * r + 1] * inv;
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

#endif /* ATTNRT_ATTN_PREFILL_CUH */
