/* mla_sm90a.cu — MLA on Hopper's warpgroup MMA (wgmma, sm_90a only; in the second fatbin, loaded on
 * compute capability 9.0): DeepSeek's latent (kv_dim 576, v_dim 512) in the query's 16-bit format. It
 * takes the tensor-core kernel's items and splits (mla_mma.cu: 64 query rows an item, a token's heads
 * sharing its latent rows) and computes the same function. An fp8 latent (F8, session 7) is copied raw and
 * converted exactly to the 16-bit tile (e4m3 / e5m2 values are f16 / bf16 values), its row scale applied to
 * the scores and probabilities instead, as mla_mma.cu does.
 *
 * 256 threads, two warpgroups; per tile of 64 keys (two cp.async stages in wgmma's 128-byte-swizzle
 * layout, the layout of the wgmma prefill kernel, attn_prefill_sm90a.cuh):
 *   warpgroup 0: S = Q C^T (36 wgmma m64n64k16, Q and the latent tile read by the tensor cores from
 *                shared memory), the online softmax in registers (lazy rescaling, as mla_mma.cu), P to
 *                the tile's rope columns (dims 512 .. 575: read by S only, so dead once S is done) in
 *                the A-fragment layout, then O[:, 0:256] += P V (4 wgmma m64n256k16, P from registers);
 *   warpgroup 1: the block-table look-ups and the copies of the next tile (while warpgroup 0 forms S),
 *                then O[:, 256:512] += P V with P read back from shared memory.
 * Each thread of warpgroup 1 holds the same rows as its twin in warpgroup 0 (the accumulator layout
 * depends on the thread's index in its warpgroup only), so P and the row factors pass as one 16-byte
 * slot a thread and k-step. Three barriers a tile: the tile barrier (tile landed, both P V of the last
 * tile done, its stage free) and two named ones (each half of P ready: P V of the first half runs while
 * warpgroup 0 forms the second; session 7's SPLIT, below). The default (session 8's PIPE, below) splits the
 * tile barrier in two named ones so that S of a tile follows the last tile's P V on the tensor cores.
 * Dense items walk key positions (causal per row); sparse items are one token each and walk its index
 * list (negative, >= seq_len or an absent block: no key). */
#include "attn_prefill_sm90a.cuh" /* the wgmma helpers (fence, commit, wait, pin, descriptors), ck_pf_cp16_row */
#include "mla_common.cuh"
#include "../cuda_ops12.h"

#define CK_MLAW_LOG2E 1.4426950408889634f
#define CK_MLAW_LN2 0.6931471805599453f
#define CK_MLAW_LAZY 8.0f /* log2 units the running max may lag the true max by (p <= 2^8) */

__device__ __forceinline__ float ck_mlaw_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
/* named barrier 1 over both warpgroups: P of the tile and its factors are published. Both sides wait
 * (bar.sync): warpgroup 1 is idle there anyway, and compute-sanitizer's racecheck does not model a
 * bar.arrive producer (with one, it reported this hand-off as a hazard: docs/dev/cuda-mla.md, run 5). */
__device__ __forceinline__ void ck_mlaw_bar_p() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }
/* named barrier 2: the second half of P is published (SPLIT) */
__device__ __forceinline__ void ck_mlaw_bar_p2() { asm volatile("bar.sync 2, 256;\n" ::: "memory"); }

/* What session 7 changed (docs/dev/cuda-mla.md), as flags of one template so that v2 stays buildable for an
 * A/B in the same build (ATTNRT_CUDA_MLA_VARIANT=v2; the kernels' default is all of them):
 *   EPI   the output written by one short loop a destination kind: the generic per-element store (a dtype
 *         switch, unrolled 64 times) was ~5,600 instructions run once, 18% of v2's time in instruction fetch;
 *   HOIST a copy's four row addresses read before its first cp.async (one shared-memory wait, not four);
 *   FOLD  the softmax's scale folded into the exponent's FMA;
 *   SPLIT P published in two halves (keys 0-31, then 32-63, a second named barrier): the tensor cores run
 *         the first half's P V while warpgroup 0 forms the second half's exponentials;
 *   STAGE a 16-bit output (rows 16-byte aligned, no partial state) through a free latent stage, then copied
 *         out in 16-byte pieces of whole rows (direct pair stores are 4 bytes, 8 rows a warp instruction). */
enum { CK_MLAW_EPI = 1, CK_MLAW_HOIST = 2, CK_MLAW_FOLD = 4, CK_MLAW_SPLIT = 8, CK_MLAW_STAGE = 16 };
/* An fp8 latent (docs/dev/cuda-mla.md, "fp8 latent on wgmma"):
 *   F8    the raw codes of tile j + 1 (64 x 576 bytes) land by cp.async in the upper half of its 16-bit stage
 *         and are converted in place after the converting threads issued their P V of tile j (the copies then
 *         have S and the softmax to land; the conversion runs beside the tensor cores' P V), by warpgroup 1;
 *   F8ALL by both warpgroups (warpgroup 0 issues its rows' copies behind its S wgmma and converts them behind
 *         its P V: the conversion's instructions, the tile's longest addition, spread over twice the warps). */
enum { CK_MLAW_F8 = 32, CK_MLAW_F8ALL = 64 };
/* Session 8 (docs/dev/cuda-mla.md, "Session 8"):
 *   PIPE  warpgroup 0 issues the first 4 k-steps of S of tile j right behind its P V of tile j - 1, without
 *         waiting for that P V (v5's loop top, a block barrier after both P V completed, left the tensor cores
 *         idle), then waits for that P V only, then issues the other 32 k-steps. The block barrier splits in
 *         two named ones: bar 5 (tile j landed: the copying threads waited for their copies; S may read it)
 *         at the end of tile j - 1, and bar 4 (P V of tile j - 1 done: its stage takes tile j + 1's copies)
 *         between S's two groups. Issuing all 36 k-steps before bar 4 was 9 % slower than v5: a wgmma issue
 *         waits for room in the tensor cores' queue, so bar 4, and warpgroup 1's copies behind it, came only
 *         once most of S had run. 16-bit latents only (fp8 keeps its conversion's place in the tile). */
enum { CK_MLAW_PIPE = 128 };
template <int N> struct ck_mlaw_int {
    static constexpr int value = N;
};
/* named barriers of PIPE: the last tile's P V done (4); the next tile landed (5) */
__device__ __forceinline__ void ck_mlaw_bar_free() { asm volatile("bar.sync 4, 256;\n" ::: "memory"); }
__device__ __forceinline__ void ck_mlaw_bar_landed() { asm volatile("bar.sync 5, 256;\n" ::: "memory"); }

/* 16 fp8 codes (dims 16c .. 16c + 15 of a row) as 16 values of T, exactly: two 16-byte chunks */
template <typename T> __device__ __forceinline__ uint32_t ck_mlaw_fp8x2(uint32_t pair, bool e4m3);
template <> __device__ __forceinline__ uint32_t ck_mlaw_fp8x2<__half>(uint32_t pair, bool e4m3)
{
    return ck_fp8x2_to_h2bits((uint16_t)pair, e4m3); /* exact: the f16 pair is the value */
}
template <> __device__ __forceinline__ uint32_t ck_mlaw_fp8x2<__nv_bfloat16>(uint32_t pair, bool e4m3)
{
    const float2 f = ck_fp8x2_to_f32x2((uint16_t)pair, e4m3);
    return ck_pack2<__nv_bfloat16>(f.x, f.y); /* exact: 3 (e4m3) or 2 (e5m2) mantissa bits, exponents in range */
}
template <typename T> __device__ __forceinline__ void ck_mlaw_fp8x16(uint4 raw, bool e4m3, uint4 &lo, uint4 &hi)
{
    lo = make_uint4(ck_mlaw_fp8x2<T>(raw.x & 0xffffu, e4m3), ck_mlaw_fp8x2<T>(raw.x >> 16, e4m3),
                    ck_mlaw_fp8x2<T>(raw.y & 0xffffu, e4m3), ck_mlaw_fp8x2<T>(raw.y >> 16, e4m3));
    hi = make_uint4(ck_mlaw_fp8x2<T>(raw.z & 0xffffu, e4m3), ck_mlaw_fp8x2<T>(raw.z >> 16, e4m3),
                    ck_mlaw_fp8x2<T>(raw.w & 0xffffu, e4m3), ck_mlaw_fp8x2<T>(raw.w >> 16, e4m3));
}
/* named barrier 3 over the N converting threads: every raw code of the tile has been read (F8's in-place
 * conversion) */
template <int N> __device__ __forceinline__ void ck_mlaw_bar_raw() { asm volatile("bar.sync 3, %0;\n" ::"n"(N) : "memory"); }

/* The finish of an item: this thread's two rows (row0, row0 + 8) x its 64 value columns (col0 + 8n, + 1) of
 * O, times the rows' factors, as a partial state (f32) or to out (the query's 16-bit type or f32; a row's
 * columns are contiguous). One branch on the destination, then one unrolled loop of a pair store each. */
template <typename T>
__device__ __forceinline__ void ck_mla_wg_write(const ck_mla_args_t &a, const ck_mla_item_t &it, bool part, const float (&o)[128],
                                                float2 mf, int nrows, int hc, int64_t tok0, int row0, int col0)
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = row0 + 8 * r;
        if (row >= nrows) continue;
        const float mul = r ? mf.y : mf.x;
        if (part) {
            float *dst = a.part_o + ((int64_t)(it.part_index + it.split) * CK_MLA_MMA_ROWS + row) * a.dv + col0;
#pragma unroll
            for (int n = 0; n < 32; n++) *(float2 *)(dst + 8 * n) = make_float2(o[4 * n + 2 * r] * mul, o[4 * n + 2 * r + 1] * mul);
            continue;
        }
        const int64_t at = (tok0 + row / hc) * a.out_st[0] + (int64_t)(it.head_first + row % hc) * a.out_st[1] + col0;
        if (a.out_dtype == CK_F32) {
            float *dst = (float *)a.out + at;
            if (((uintptr_t)dst & 7) == 0) {
#pragma unroll
                for (int n = 0; n < 32; n++) *(float2 *)(dst + 8 * n) = make_float2(o[4 * n + 2 * r] * mul, o[4 * n + 2 * r + 1] * mul);
            } else {
#pragma unroll
                for (int n = 0; n < 32; n++) {
                    dst[8 * n] = o[4 * n + 2 * r] * mul;
                    dst[8 * n + 1] = o[4 * n + 2 * r + 1] * mul;
                }
            }
        } else { /* the query's 16-bit type */
            uint16_t *dst = (uint16_t *)a.out + at;
            if (((uintptr_t)dst & 3) == 0) {
#pragma unroll
                for (int n = 0; n < 32; n++) *(uint32_t *)(dst + 8 * n) = ck_pack2<T>(o[4 * n + 2 * r] * mul, o[4 * n + 2 * r + 1] * mul);
            } else {
#pragma unroll
                for (int n = 0; n < 32; n++) {
                    const uint32_t w = ck_pack2<T>(o[4 * n + 2 * r] * mul, o[4 * n + 2 * r + 1] * mul);
                    dst[8 * n] = (uint16_t)w;
                    dst[8 * n + 1] = (uint16_t)(w >> 16);
                }
            }
        }
    }
}

/* The finish of an item written through shared memory (STAGE): a 16-bit output whose rows start 16-byte
 * aligned, no partial state. Each thread puts its pairs into a [64][PITCH] 16-bit tile (PITCH: the 8 rows of a
 * warp's store fall in 8 different bank groups), one thread a row publishes the row's address (0: no row),
 * then the block copies whole rows out in 16-byte pieces. Every thread of the block calls it. */
template <typename T>
__device__ __forceinline__ void ck_mla_wg_write_staged(const ck_mla_args_t &a, const ck_mla_item_t &it, const float (&o)[128], float2 mf,
                                                       int nrows, int hc, int64_t tok0, int row0, int col0, unsigned char *stg,
                                                       uint64_t *rowptr, int tid)
{
    constexpr int PITCH = CK_MLA_MMA_DV * 2 + 16;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = row0 + 8 * r;
        const float mul = r ? mf.y : mf.x;
        unsigned char *d = stg + row * PITCH + col0 * 2;
#pragma unroll
        for (int n = 0; n < 32; n++) *(uint32_t *)(d + 16 * n) = ck_pack2<T>(o[4 * n + 2 * r] * mul, o[4 * n + 2 * r + 1] * mul);
        if (col0 == 0)
            rowptr[row] = row < nrows ? (uint64_t)(uintptr_t)((uint16_t *)a.out + (tok0 + row / hc) * a.out_st[0] +
                                                             (int64_t)(it.head_first + row % hc) * a.out_st[1])
                                      : 0;
    }
    __syncthreads();
#pragma unroll 4
    for (int c = tid; c < CK_MLA_MMA_ROWS * (CK_MLA_MMA_DV / 8); c += 256) {
        const int row = c / (CK_MLA_MMA_DV / 8), c16 = c % (CK_MLA_MMA_DV / 8);
        const uint64_t p = rowptr[row];
        if (p) *(uint4 *)(uintptr_t)(p + (uint64_t)c16 * 16u) = *(const uint4 *)(stg + row * PITCH + c16 * 16);
    }
}

template <typename T, int VAR> __device__ __forceinline__ void ck_mla_wg_body(const ck_mla_args_t &a)
{
    constexpr int ROWS = CK_MLA_MMA_ROWS, BN = CK_MLA_WG_BN, D = CK_MLA_MMA_D, SLOTS = CK_MLA_WG_SLOTS;
    constexpr int CPR = D / 8;                       /* 16-byte chunks a row */
    constexpr uint32_t CB = BN * 128;                /* a 64-column block of a tile (and of Q: ROWS == BN) */
    constexpr uint32_t TILE = (D / 64) * CB;         /* a latent tile: 9 column blocks */
    constexpr uint32_t ROPE = (CK_MLA_MMA_DV / 64) * CB; /* the rope block: P of the tile goes there */
    static_assert(ROWS == 64 && BN == 64 && D % 64 == 0 && CK_MLA_MMA_DV == 512, "the shapes this kernel is written for");
    constexpr bool F8 = (VAR & CK_MLAW_F8) != 0, F8ALL = F8 && (VAR & CK_MLAW_F8ALL) != 0;
    constexpr bool PIPE = (VAR & CK_MLAW_PIPE) != 0;
    static_assert(!PIPE || (!F8 && (VAR & CK_MLAW_SPLIT)), "PIPE: 16-bit latents, with SPLIT's two P V groups");
    constexpr int CT = F8ALL ? 256 : 128, RPT = BN / (CT / 4); /* fp8: converting threads; rows a thread */
    static_assert(!F8 || ((VAR & CK_MLAW_FOLD) && D == 576), "fp8: the scale is applied with FOLD's exponent; the raw layout is 576's");
    /* fp8: tile j + 1's raw rows [BN][D] bytes land in the upper half of its stage: 36,864 bytes = column
     * blocks 4 (rows 32 ..) to 8, which the conversion of those blocks overwrites last */
    constexpr uint32_t RAW = TILE / 2;

    extern __shared__ __align__(1024) unsigned char ck_mla_wg_dyn[];
    /* the swizzle is a function of address bits 4-9: the tiles start 1024-byte aligned (the host adds
     * the slack) */
    const uint32_t raw = ck_smem(ck_mla_wg_dyn), base = (raw + 1023u) & ~1023u;
    unsigned char *smem = ck_mla_wg_dyn + (base - raw);
    const uint32_t sQ = base, sK = base + ROWS * D * 2; /* sK: [2 stages][9 column blocks][BN rows][128 B] */
    const uint64_t qd = ck_wg_desc(sQ, 16u, 1024u);    /* Q's base descriptor: each k-step's is ck_wg_desc_at of it */
    uint64_t *saddr = (uint64_t *)(smem + ROWS * D * 2 + 2 * TILE); /* [SLOTS][BN] row address, 0: no key */
    int32_t *spos = (int32_t *)(saddr + SLOTS * BN);               /* [SLOTS][BN] key position, -1: no key */
    float2 *sfac = (float2 *)(spos + SLOTS * BN);                  /* [128] the rows' factor: alpha, then 1 / l */
    float *sscl = (float *)(sfac + 128);                           /* fp8: [SLOTS][BN] the row's scale, 0: no key */

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

    /* Key lt of tile t (lt = wt < BN of warpgroup 1), in three steps one tile apart so no step waits on
     * a load: its position (sparse: the index; -1 when none), its block id, then its row address and
     * position written to the tile's slot. */
    const int lt = wt;
    const bool looker = wg == 1 && lt < BN;
    auto load_pk = [&](int64_t t) -> int64_t {
        const int64_t e = k_lo + t * BN + lt;
        if (!looker || t >= n_tiles || e >= k_hi) return -1;
        const int64_t pk = a.sparse ? (int64_t)idx_row[e * a.idx_st[1]] : e;
        return pk >= 0 && pk < S ? pk : -1;
    };
    auto load_blk = [&](int64_t pk) -> int64_t {
        return pk >= 0 ? (int64_t)a.block_table[seq * a.bt_st[0] + (pk / a.block_size) * a.bt_st[1]] : -1;
    };
    auto store = [&](int slot, int64_t pk, int64_t blk) {
        if (!looker) return;
        uint64_t row = 0;
        float sc = 0.0f; /* an absent row's scale: 0, never stale (its p is 0, and 0 x NaN is not) */
        if (pk >= 0 && blk >= 0 && blk < a.num_blocks) {
            row = (uint64_t)(uintptr_t)a.kv +
                  (uint64_t)(blk * a.kv_st[0] + (pk - (pk / a.block_size) * a.block_size) * a.kv_st[1]) * (F8 ? 1u : 2u);
            if (F8) sc = a.kv_scale ? a.kv_scale[blk * a.ks_st] : 1.0f;
        }
        saddr[slot * BN + lt] = row;
        spos[slot * BN + lt] = row ? (int32_t)pk : -1;
        if (F8) sscl[slot * BN + lt] = sc;
    };
    /* Warpgroup 1 copies a tile: thread wt takes chunk wt % 8 of each column block of rows wt / 8 + 16 i
     * (one swizzle for all its rows); absent rows are zero-filled. */
    const int cp_c8 = wt & 7, cp_r0 = wt >> 3;
    const uint32_t cp_dst = (uint32_t)cp_r0 * 128u + (uint32_t)((cp_c8 ^ (cp_r0 & 7)) << 4);
    /* fp8: converting thread ct copies (and converts) 16-byte chunk c4 + 4m (m = 0 .. 8: dims 64m + 16 c4 ..)
     * of rows f_r0 + (CT / 4) i, raw rows 576 bytes apart (a quarter warp's 8 chunks hit 8 bank groups) */
    const int ct = F8ALL ? tid : wt, f_c4 = ct & 3, f_r0 = ct >> 2;
    const bool e4m3 = a.kv_dtype == CK_E4M3;
    auto issue8 = [&](int stage, int slot) {
        const uint32_t raw0 = sK + (uint32_t)stage * TILE + RAW + (uint32_t)f_r0 * (uint32_t)D + (uint32_t)f_c4 * 16u;
        uint64_t rows[RPT];
#pragma unroll
        for (int i = 0; i < RPT; i++) rows[i] = saddr[slot * BN + f_r0 + (CT / 4) * i];
#pragma unroll
        for (int i = 0; i < RPT; i++)
#pragma unroll
            for (int m = 0; m < D / 64; m++)
                ck_pf_cp16_row(raw0 + (uint32_t)(i * (CT / 4) * D + m * 64), rows[i], (uint32_t)(m * 64 + f_c4 * 16));
    };
    /* the raw codes of the tile in stage `stage` (this thread's own copies: landed once it waited) to the
     * 16-bit swizzled layout in place: blocks 0-3 and rows 0-31 of block 4 lie below the raw area and are
     * written at once; the rest overlaps it, so its codes are read first and written after every converting
     * thread has read its codes */
    auto convert8 = [&](int stage) {
        const uint32_t st0 = sK + (uint32_t)stage * TILE - base;
        const unsigned char *raw0 = smem + st0 + RAW + f_r0 * D + f_c4 * 16;
        auto out = [&](int r, int m, uint4 v) {
            uint4 lo, hi;
            ck_mlaw_fp8x16<T>(v, e4m3, lo, hi);
            unsigned char *row = smem + st0 + (uint32_t)m * CB + (uint32_t)r * 128u;
            *(uint4 *)(row + (((2 * f_c4) ^ (r & 7)) << 4)) = lo;
            *(uint4 *)(row + (((2 * f_c4 + 1) ^ (r & 7)) << 4)) = hi;
        };
        /* output (row r, block m) overlaps the raw area iff m >= 5, or m == 4 and r >= 32 */
        uint4 late[RPT][5];
#pragma unroll
        for (int i = 0; i < RPT; i++)
#pragma unroll
            for (int m = 4; m < D / 64; m++)
                if (m >= 5 || f_r0 + (CT / 4) * i >= 32) late[i][m - 4] = *(const uint4 *)(raw0 + i * (CT / 4) * D + m * 64);
#pragma unroll
        for (int i = 0; i < RPT; i++)
#pragma unroll
            for (int m = 0; m < 5; m++) {
                const int r = f_r0 + (CT / 4) * i;
                if (m < 4 || r < 32) out(r, m, *(const uint4 *)(raw0 + i * (CT / 4) * D + m * 64));
            }
        ck_mlaw_bar_raw<CT>();
#pragma unroll
        for (int i = 0; i < RPT; i++)
#pragma unroll
            for (int m = 4; m < D / 64; m++) {
                const int r = f_r0 + (CT / 4) * i;
                if (m >= 5 || r >= 32) out(r, m, late[i][m - 4]);
            }
    };
    auto issue = [&](int stage, int slot) {
        if constexpr (F8) {
            issue8(stage, slot);
            return;
        }
        const uint32_t dst0 = sK + (uint32_t)stage * TILE + cp_dst;
        uint64_t rows[BN / 16];
#pragma unroll
        for (int i = 0; i < BN / 16; i++)
            if (VAR & CK_MLAW_HOIST) rows[i] = saddr[slot * BN + cp_r0 + 16 * i];
#pragma unroll
        for (int i = 0; i < BN / 16; i++) {
            const uint64_t row = (VAR & CK_MLAW_HOIST) ? rows[i] : saddr[slot * BN + cp_r0 + 16 * i];
#pragma unroll
            for (int cb = 0; cb < D / 64; cb++)
                ck_pf_cp16_row(dst0 + (uint32_t)cb * CB + (uint32_t)i * 16u * 128u, row, (uint32_t)(cb * 8 + cp_c8) * 16u);
        }
    };

    int64_t pkA = -1, pkB = -1, blkB = -1; /* the position of tile j + 4's key; position and block of tile j + 2's */
    {
        int64_t pk[4], blk[3];
#pragma unroll
        for (int t = 0; t < 4; t++) pk[t] = load_pk(t);
#pragma unroll
        for (int t = 0; t < 3; t++) blk[t] = load_blk(pk[t]);
        store(0, pk[0], blk[0]);
        store(1, pk[1], blk[1]);
        pkB = pk[2];
        blkB = blk[2];
        pkA = pk[3];
    }
    /* Q rows (zeros past nrows), swizzled as the tiles: 16-byte copies when the rows are 16-byte aligned
     * (Q then has the kernel's 16-bit type), else element by element */
    {
        const bool q_vec = (((uintptr_t)a.q | (uintptr_t)(a.q_st[0] * 2) | (uintptr_t)(a.q_st[1] * 2)) & 15) == 0;
        for (int c = tid; c < ROWS * CPR; c += 256) {
            const int r = c / CPR, ch = c - r * CPR;
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
    }
    __syncthreads(); /* the first tiles' addresses are visible */
    if ((wg == 1 || F8ALL) && n_tiles > 0) issue(0, 0);
    ck_cp_async_commit();
    if (F8 && (wg == 1 || F8ALL) && n_tiles > 0) { /* the first tile converted before the loop's first barrier */
        ck_cp_async_wait<0>();
        convert8(0);
    }
    if (PIPE) { /* tile 0 and Q landed, visible to the tensor cores, before the first S */
        ck_cp_async_wait<0>();
        ck_fence_proxy_async();
        __syncthreads();
    }

    /* This thread's rows (both warpgroups alike): wq * 16 + g and + 8. Warpgroup 0 keeps their running
     * max (log2 domain, scaled) and its own share of the running sum; the last key position each sees
     * as unsigned (an absent key, -1, compares above every limit). */
    float m_run[2] = {-CK_INF, -CK_INF}, l_run[2] = {0.0f, 0.0f};
    uint32_t lim[2];
    bool row_any[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = wq * 16 + g + 8 * r;
        const int64_t l64 = !a.sparse && a.causal ? S - L + it.q_first + row / hc : INT32_MAX;
        row_any[r] = row < nrows && l64 >= 0;
        lim[r] = row_any[r] ? (uint32_t)min(l64, (int64_t)INT32_MAX) : 0u;
    }
    const float scale2 = a.scale * CK_MLAW_LOG2E;

    /* O: this warpgroup's 256 value columns in wgmma's accumulator layout: column group n of rows
     * (g, g + 8) holds o[4n + 2r + e] for row + 8r, column 8n + 2 t4 + e. */
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.0f;
    uint32_t pa[BN / 16][4]; /* P as A fragments: k-step k2 = keys 16 k2 .. + 15 */

    for (int j = 0; j < n_tiles; j++) {
        const int st = j & 1, slot = j % SLOTS;
        const uint32_t kb = sK + (uint32_t)st * TILE;
        /* S = Q C^T: k-step kk reads 16 dims: column block kk / 4, 32 bytes in (the hardware applies the
         * swizzle to the address it forms) */
        float s[BN / 2];
        const uint64_t kd = ck_wg_desc(kb, 16u, 1024u);
        auto issue_s = [&](auto k0, auto k1) { /* k-steps k0 .. k1 - 1 (ck_mlaw_int: unrolled) as one group */
            ck_wg_fence();
#pragma unroll
            for (int kk = decltype(k0)::value; kk < decltype(k1)::value; kk++) {
                const uint32_t ofs = (uint32_t)(kk >> 2) * CB + (uint32_t)(kk & 3) * 32u;
                ck_wg_ss<T, BN>(s, ck_wg_desc_at(qd, ofs), ck_wg_desc_at(kd, ofs), kk > 0);
            }
            ck_wg_commit();
        };
        constexpr int SA = 4; /* PIPE: the k-steps of S's first group */
        int2 pos[BN / 8]; /* the key positions of this thread's score columns */
        if constexpr (PIPE) {
            /* tile j landed (bar 5 at the end of tile j - 1, or the barrier before the loop): warpgroup 0 issues
             * S's first SA k-steps behind its P V of tile j - 1, then waits for that P V only; bar 4: warpgroup
             * 0's P V of tile j - 1 done, so stage st ^ 1 takes tile j + 1 (warpgroup 1 waits for its own below) */
            if (wg == 0) {
                issue_s(ck_mlaw_int<0>{}, ck_mlaw_int<SA>{});
#pragma unroll
                for (int n = 0; n < BN / 8; n++) pos[n] = *(const int2 *)(spos + slot * BN + 8 * n + 2 * t4);
                ck_wg_wait<1>();
            } else {
                /* its first P V group done; the second is waited for below, before this warpgroup's copies
                 * overwrite the stage. (wait_group 0 here, or an empty group and wait_group 1, made ptxas
                 * serialize every wgmma of the kernel, C7514 / C7520: its analysis joins the two branches) */
                ck_wg_wait<1>();
            }
            ck_wg_pin(o);
            ck_wg_pin(pa);
            ck_mlaw_bar_free();
        } else {
            ck_cp_async_wait<0>();
            ck_fence_proxy_async(); /* this thread's copies (generic proxy) visible to wgmma (async proxy) */
            /* tile j (and Q) landed; both P V of tile j - 1 completed (each warpgroup waited), so stage st ^ 1
             * takes tile j + 1; tile j + 1's addresses are visible */
            __syncthreads();
        }
        float al[2];
        constexpr bool SPLIT = (VAR & CK_MLAW_SPLIT) != 0;
        constexpr int NP = SPLIT ? BN / 16 : BN / 8; /* column groups of P formed before the first barrier */
        float m_use[2], ls[2];
        /* fp8: key columns (8n + 2 t4, + 1)'s row scales multiply the scores (exact to f32) and, in P only, the
         * probabilities */
        auto kscale = [&](int n) { return F8 ? *(const float2 *)(sscl + slot * BN + 8 * n + 2 * t4) : make_float2(1.0f, 1.0f); };
        if (wg == 1) {
            if (PIPE) ck_wg_wait<0>(); /* its P V of tile j - 1 done: its copies may overwrite that stage */
            if (j + 1 < n_tiles) issue(st ^ 1, (j + 1) % SLOTS);
            ck_cp_async_commit();
            store((j + 2) % SLOTS, pkB, blkB); /* the slot of tile j - 1: done with */
            pkB = pkA;
            blkB = load_blk(pkA);
            pkA = load_pk(j + 4);
            ck_mlaw_bar_p(); /* P of tile j and its factors are published */
            const uint4 *src = (const uint4 *)(smem + (kb + ROPE - base));
#pragma unroll
            for (int k2 = 0; k2 < NP / 2; k2++) {
                const uint4 v = src[k2 * 128 + wt];
                pa[k2][0] = v.x, pa[k2][1] = v.y, pa[k2][2] = v.z, pa[k2][3] = v.w;
            }
            const float2 f = sfac[wt];
            al[0] = f.x, al[1] = f.y;
        } else {
            if constexpr (!PIPE)
                issue_s(ck_mlaw_int<0>{}, ck_mlaw_int<D / 16>{});
            else if constexpr (SA < D / 16)
                issue_s(ck_mlaw_int<SA>{}, ck_mlaw_int<D / 16>{}); /* the rest of S behind bar 4 */
            if (F8ALL && j + 1 < n_tiles) issue8(st ^ 1, (j + 1) % SLOTS); /* its rows of tile j + 1, behind S */
            ck_cp_async_commit();
            ck_wg_wait<0>();
            ck_wg_pin(s);
            if (!PIPE) {
#pragma unroll
                for (int n = 0; n < BN / 8; n++) pos[n] = *(const int2 *)(spos + slot * BN + 8 * n + 2 * t4);
            }

            /* online softmax of rows (g, g + 8) over keys 8n + 2 t4 + e: scaled into the log2 domain,
             * masked; the quad holds a row's 64 keys; lazy rescaling */
            float mx[2] = {-CK_INF, -CK_INF};
#pragma unroll
            for (int n = 0; n < BN / 8; n++)
#pragma unroll
                for (int r = 0; r < 2; r++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const uint32_t p = (uint32_t)(e ? pos[n].y : pos[n].x);
                        float &v = s[4 * n + 2 * r + e];
                        if (F8) v *= e ? kscale(n).y : kscale(n).x;
                        v = row_any[r] && p <= lim[r] ? ((VAR & CK_MLAW_FOLD) ? v : v * scale2) : -CK_INF;
                        mx[r] = fmaxf(mx[r], v);
                    }
#pragma unroll
            for (int r = 0; r < 2; r++) {
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                if (VAR & CK_MLAW_FOLD) mx[r] *= scale2; /* scale2 > 0: the max of the scaled scores */
                const float m_new = mx[r] > m_run[r] + CK_MLAW_LAZY ? mx[r] : m_run[r];
                m_use[r] = m_new == -CK_INF ? 0.0f : m_new;
                /* a row with no key yet has O = 0 and l = 0: factor 1 */
                al[r] = m_run[r] == -CK_INF ? 1.0f : ck_mlaw_exp2(m_run[r] - m_use[r]);
                ls[r] = 0.0f;
#pragma unroll
                for (int n = 0; n < NP; n++) {
                    const float p0 = ck_mlaw_exp2((VAR & CK_MLAW_FOLD) ? fmaf(s[4 * n + 2 * r], scale2, -m_use[r]) : s[4 * n + 2 * r] - m_use[r]);
                    const float p1 = ck_mlaw_exp2((VAR & CK_MLAW_FOLD) ? fmaf(s[4 * n + 2 * r + 1], scale2, -m_use[r])
                                                                        : s[4 * n + 2 * r + 1] - m_use[r]);
                    ls[r] += p0 + p1;
                    const float2 ks = kscale(n); /* P V with V unscaled: sum p scale v (p <= 2^8: f16 holds it for scales < 255) */
                    pa[n >> 1][(n & 1) * 2 + r] = ck_pack2<T>(p0 * ks.x, p1 * ks.y);
                }
                if (!SPLIT) l_run[r] = l_run[r] * al[r] + ls[r]; /* this thread's share; the quad's sum at the end */
                m_run[r] = m_new;
            }
            uint4 *dst = (uint4 *)(smem + (kb + ROPE - base));
#pragma unroll
            for (int k2 = 0; k2 < NP / 2; k2++) dst[k2 * 128 + wt] = make_uint4(pa[k2][0], pa[k2][1], pa[k2][2], pa[k2][3]);
            sfac[wt] = make_float2(al[0], al[1]);
            ck_mlaw_bar_p();
        }

        /* O = alpha O + P V over this warpgroup's 256 value columns: V is the tile's dims wg * 256 ..,
         * read MN-major (k-step k2: keys 16 k2 .., 2048 bytes in; the next 64 columns a block, CB bytes,
         * apart) */
        if (__any_sync(0xffffffffu, al[0] != 1.0f || al[1] != 1.0f)) {
#pragma unroll
            for (int n = 0; n < 32; n++) {
                o[4 * n] *= al[0];
                o[4 * n + 1] *= al[0];
                o[4 * n + 2] *= al[1];
                o[4 * n + 3] *= al[1];
            }
        }
        const uint64_t vd = ck_wg_desc(kb + (uint32_t)wg * 4u * CB, CB, 1024u);
        ck_wg_fence();
#pragma unroll
        for (int k2 = 0; k2 < NP / 2; k2++) ck_wg_rs<T, 256>(o, pa[k2], ck_wg_desc_at(vd, (uint32_t)k2 * 2048u));
        ck_wg_commit();
        if constexpr (SPLIT) {
            /* the second half of P: warpgroup 0 forms it while the tensor cores run the first half's P V */
            if (wg == 0) {
#pragma unroll
                for (int r = 0; r < 2; r++) {
#pragma unroll
                    for (int n = NP; n < BN / 8; n++) {
                        const float p0 = ck_mlaw_exp2((VAR & CK_MLAW_FOLD) ? fmaf(s[4 * n + 2 * r], scale2, -m_use[r]) : s[4 * n + 2 * r] - m_use[r]);
                        const float p1 = ck_mlaw_exp2((VAR & CK_MLAW_FOLD) ? fmaf(s[4 * n + 2 * r + 1], scale2, -m_use[r])
                                                                            : s[4 * n + 2 * r + 1] - m_use[r]);
                        ls[r] += p0 + p1;
                        const float2 ks = kscale(n);
                        pa[n >> 1][(n & 1) * 2 + r] = ck_pack2<T>(p0 * ks.x, p1 * ks.y);
                    }
                    l_run[r] = l_run[r] * al[r] + ls[r];
                }
                uint4 *dst = (uint4 *)(smem + (kb + ROPE - base));
#pragma unroll
                for (int k2 = NP / 2; k2 < BN / 16; k2++) dst[k2 * 128 + wt] = make_uint4(pa[k2][0], pa[k2][1], pa[k2][2], pa[k2][3]);
                ck_mlaw_bar_p2();
            } else {
                ck_mlaw_bar_p2();
                const uint4 *src = (const uint4 *)(smem + (kb + ROPE - base));
#pragma unroll
                for (int k2 = NP / 2; k2 < BN / 16; k2++) {
                    const uint4 v = src[k2 * 128 + wt];
                    pa[k2][0] = v.x, pa[k2][1] = v.y, pa[k2][2] = v.z, pa[k2][3] = v.w;
                }
            }
            ck_wg_fence();
#pragma unroll
            for (int k2 = NP / 2; k2 < BN / 16; k2++) ck_wg_rs<T, 256>(o, pa[k2], ck_wg_desc_at(vd, (uint32_t)k2 * 2048u));
            ck_wg_commit();
        }
        if (F8 && (wg == 1 || F8ALL) && j + 1 < n_tiles) {
            /* tile j + 1 to 16 bits while the tensor cores run this tile's P V (stage st ^ 1 is not read) */
            ck_cp_async_wait<0>();
            convert8(st ^ 1);
        }
        if constexpr (PIPE) {
            /* tile j + 1 landed and visible to the tensor cores; this tile's P V may still run */
            if (j + 1 < n_tiles) {
                if (wg == 1) {
                    ck_cp_async_wait<0>();
                    ck_fence_proxy_async();
                }
                ck_mlaw_bar_landed();
            }
        } else {
            ck_wg_wait<0>(); /* before the next tile barrier: the stage is then free */
            ck_wg_pin(o);
            ck_wg_pin(pa);
        }
    }
    if (PIPE) {
        ck_wg_wait<0>();
        ck_wg_pin(o);
    }
    ck_cp_async_wait<0>();

    /* finish: warpgroup 0 forms each row's factor (one split: sinks here) and LSE and publishes the
     * factor; then both write their 256 columns of the rows that exist, whole or as a partial state */
    const bool part = it.num_splits > 1;
    __syncthreads(); /* warpgroup 1 has read the last tile's factors */
    if (wg == 0) {
        float mul[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            float lsum = l_run[r];
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
            lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
            const int row = wq * 16 + g + 8 * r;
            const int64_t t = tok0 + row / hc, h = it.head_first + row % hc;
            const float m_nat = m_run[r] * CK_MLAW_LN2;
            mul[r] = 0.0f;
            if (row < nrows && lsum > 0.0f) {
                float den = lsum;
                if (!part && a.sinks) den += __expf(a.sinks[h * a.sinks_st] - m_nat);
                mul[r] = 1.0f / den;
            }
            if (row < nrows && t4 == 0) {
                const float lse = lsum > 0.0f ? m_nat + logf(lsum) : -CK_INF;
                if (part)
                    a.part_lse[(int64_t)(it.part_index + it.split) * ROWS + row] = lse;
                else if (a.lse)
                    a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
            }
        }
        sfac[wt] = make_float2(mul[0], mul[1]);
    }
    __syncthreads();
    const float2 mf = sfac[wt];
    /* STAGE: the stages are free (the copies landed, both P V done) and so are the address slots */
    const bool staged = (VAR & CK_MLAW_STAGE) && !part && a.out_dtype != CK_F32 &&
                        (((uintptr_t)a.out | (uintptr_t)(a.out_st[0] * 2) | (uintptr_t)(a.out_st[1] * 2)) & 15) == 0;
    if (staged) {
        ck_mla_wg_write_staged<T>(a, it, o, mf, nrows, hc, tok0, wq * 16 + g, wg * 256 + 2 * t4, smem + (sK - base), saddr, tid);
    } else if (VAR & CK_MLAW_EPI) {
        ck_mla_wg_write<T>(a, it, part, o, mf, nrows, hc, tok0, wq * 16 + g, wg * 256 + 2 * t4);
    } else {
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = wq * 16 + g + 8 * r;
            if (row >= nrows) continue;
            const int64_t t = tok0 + row / hc, h = it.head_first + row % hc;
            const float mul = r ? mf.y : mf.x;
#pragma unroll
            for (int n = 0; n < 32; n++) {
                const int col = wg * 256 + n * 8 + 2 * t4;
                const float o0 = o[4 * n + 2 * r] * mul, o1 = o[4 * n + 2 * r + 1] * mul;
                ck_mla_store_pair(a, it, part, row, t, h, col, o0, o1);
            }
        }
    }
}

#define CK_MLAW_V5 (CK_MLAW_EPI | CK_MLAW_HOIST | CK_MLAW_FOLD | CK_MLAW_SPLIT | CK_MLAW_STAGE)
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_f16(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__half, CK_MLAW_V5 | CK_MLAW_PIPE>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_bf16(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__nv_bfloat16, CK_MLAW_V5 | CK_MLAW_PIPE>(a);
}
/* the session-7 A/B (docs/dev/cuda-mla.md; ATTNRT_CUDA_MLA_VARIANT=<name>): v2 as it was, and other flag sets */
#define CK_MLA_WG_VAR(name, var)                                                                                       \
    extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_f16_##name(const __grid_constant__ ck_mla_args_t a)  \
    {                                                                                                                  \
        ck_mla_wg_body<__half, var>(a);                                                                                \
    }                                                                                                                  \
    extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_bf16_##name(const __grid_constant__ ck_mla_args_t a) \
    {                                                                                                                  \
        ck_mla_wg_body<__nv_bfloat16, var>(a);                                                                         \
    }
CK_MLA_WG_VAR(v2, 0)
CK_MLA_WG_VAR(split, CK_MLAW_EPI | CK_MLAW_HOIST | CK_MLAW_FOLD | CK_MLAW_SPLIT)
CK_MLA_WG_VAR(v5, CK_MLAW_V5)

/* an fp8 latent (e4m3 or e5m2, a.kv_dtype) with a query of type T; `wg1`: converted by warpgroup 1 alone (the
 * first design, for the A/B) */
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_f16_fp8(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__half, CK_MLAW_V5 | CK_MLAW_F8 | CK_MLAW_F8ALL>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_bf16_fp8(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__nv_bfloat16, CK_MLAW_V5 | CK_MLAW_F8 | CK_MLAW_F8ALL>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_f16_fp8_wg1(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__half, CK_MLAW_V5 | CK_MLAW_F8>(a);
}
extern "C" __global__ void __launch_bounds__(256, 1) ck_mla_wg_bf16_fp8_wg1(const __grid_constant__ ck_mla_args_t a)
{
    ck_mla_wg_body<__nv_bfloat16, CK_MLAW_V5 | CK_MLAW_F8>(a);
}
