/* mla_sm90a.cu — MLA on Hopper's warpgroup MMA (wgmma, sm_90a only; in the second fatbin, loaded on
 * compute capability 9.0): DeepSeek's latent (kv_dim 576, v_dim 512) in the query's 16-bit format. It
 * takes the tensor-core kernel's items and splits (mla_mma.cu: 64 query rows an item, a token's heads
 * sharing its latent rows) and computes the same function. An fp8 latent (F8, below) is copied raw and
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
 * warpgroup 0 forms the second). For a 16-bit latent (PIPE, below) the tile barrier splits in two named ones so
 * that S of a tile follows the last tile's P V on the tensor cores.
 * Dense items walk key positions (causal per row); sparse items are one token each and walk its index
 * list (negative, >= seq_len or an absent block: no key). */
#include "attn_prefill_sm90a.cuh" /* the wgmma helpers (fence, commit, wait, pin, descriptors), ck_pf_cp16_row */
#include "mla_common.cuh"
#include "../cuda_mla_linear.h"

#define CK_MLAW_LOG2E 1.4426950408889634f
#define CK_MLAW_LAZY 8.0f /* log2 units the running max may lag the true max by (p <= 2^8) */

__device__ __forceinline__ float ck_mlaw_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
/* named barrier 1 over both warpgroups: P of the tile and its factors are published. Both sides wait
 * (bar.sync): warpgroup 1 is idle there anyway, and compute-sanitizer's racecheck does not model a
 * bar.arrive producer (with one, it reported this hand-off as a hazard). */
__device__ __forceinline__ void ck_mlaw_bar_p() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }
/* named barrier 2: the second half of P is published */
__device__ __forceinline__ void ck_mlaw_bar_p2() { asm volatile("bar.sync 2, 256;\n" ::: "memory"); }

/* The kernel's form: the output written by one short loop a destination kind (a generic per-element store, a dtype switch
 * unrolled 64 times, was ~5,600 instructions run once: 18 % of the time in instruction fetch), through a free latent
 * stage in 16-byte pieces of whole rows where it is 16-bit, 16-byte aligned and not a partial state; a copy's row
 * addresses read before its first cp.async; the softmax's scale folded into the exponent's FMA; P published in two
 * halves (keys 0-31, then 32-63) so that the tensor cores run the first half's P V while warpgroup 0 forms the second's.
 * F8 (an fp8 latent): the raw codes of tile j + 1 (64 x 576 bytes) land by cp.async in the upper half of its 16-bit
 *   stage and are converted in place by both warpgroups after they issued their P V of tile j (warpgroup 0 issues its
 *   rows' copies behind its S wgmma): the conversion runs beside the tensor cores' P V, over all 8 warps.
 * PIPE (16-bit latents: !F8): warpgroup 0 issues the first 4 k-steps of S of tile j right behind its P V of tile j - 1,
 *   without waiting for it (a block barrier after both P V left the tensor cores idle), then waits for that P V only,
 *   then issues the other 32 k-steps. The block barrier splits in two named ones: bar 5 (tile j landed: the copying
 *   threads waited for their copies; S may read it) at the end of tile j - 1, and bar 4 (P V of tile j - 1 done: its
 *   stage takes tile j + 1's copies) between S's two groups (all 36 k-steps before bar 4 were 9 % slower: a wgmma issue
 *   waits for room in the tensor cores' queue, so bar 4, and warpgroup 1's copies behind it, came only once most of S
 *   had run). fp8 keeps its conversion's place in the tile. */
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

template <typename T, bool F8> __device__ __forceinline__ void ck_mla_wg_body(const ck_mla_args_t &a)
{
    constexpr int ROWS = CK_MLA_MMA_ROWS, BN = CK_MLA_WG_BN, D = CK_MLA_MMA_D, SLOTS = CK_MLA_WG_SLOTS;
    constexpr int CPR = D / 8;                       /* 16-byte chunks a row */
    constexpr uint32_t CB = BN * 128;                /* a 64-column block of a tile (and of Q: ROWS == BN) */
    constexpr uint32_t TILE = (D / 64) * CB;         /* a latent tile: 9 column blocks */
    constexpr uint32_t ROPE = (CK_MLA_MMA_DV / 64) * CB; /* the rope block: P of the tile goes there */
    static_assert(ROWS == 64 && BN == 64 && D % 64 == 0 && CK_MLA_MMA_DV == 512, "the shapes this kernel is written for");
    constexpr bool PIPE = !F8;
    constexpr int CT = F8 ? 256 : 128, RPT = BN / (CT / 4); /* fp8: converting threads; rows a thread */
    static_assert(!F8 || D == 576, "fp8: the raw layout is 576's");
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

    const int tid = threadIdx.x, wg = tid >> 7, wt = tid & 127, lane = tid & 31, wq = wt >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    ck_mla_work w;
    if (!ck_mla_work_begin(a, BN, w)) return;
    const ck_mla_item_t &it = w.it;
    const int64_t seq = it.seq, L = w.L, S = w.S, tok0 = w.tok0, k_lo = w.k_lo, k_hi = w.k_hi;
    const int hc = w.hc, nrows = w.nrows;
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
    const int ct = F8 ? tid : wt, f_c4 = ct & 3, f_r0 = ct >> 2;
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
            rows[i] = saddr[slot * BN + cp_r0 + 16 * i];
#pragma unroll
        for (int i = 0; i < BN / 16; i++) {
#pragma unroll
            for (int cb = 0; cb < D / 64; cb++)
                ck_pf_cp16_row(dst0 + (uint32_t)cb * CB + (uint32_t)i * 16u * 128u, rows[i], (uint32_t)(cb * 8 + cp_c8) * 16u);
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
    if ((wg == 1 || F8) && n_tiles > 0) issue(0, 0);
    ck_cp_async_commit();
    if (F8 && n_tiles > 0) { /* the first tile converted before the loop's first barrier */
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
        constexpr int NP = BN / 16; /* column groups of P formed before the first barrier (the first half) */
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
            if (F8 && j + 1 < n_tiles) issue8(st ^ 1, (j + 1) % SLOTS); /* its rows of tile j + 1, behind S */
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
                        v = row_any[r] && p <= lim[r] ? v : -CK_INF;
                        mx[r] = fmaxf(mx[r], v);
                    }
#pragma unroll
            for (int r = 0; r < 2; r++) {
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
                mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
                mx[r] *= scale2; /* scale2 > 0: the max of the scaled scores */
                const float m_new = mx[r] > m_run[r] + CK_MLAW_LAZY ? mx[r] : m_run[r];
                m_use[r] = m_new == -CK_INF ? 0.0f : m_new;
                /* a row with no key yet has O = 0 and l = 0: factor 1 */
                al[r] = m_run[r] == -CK_INF ? 1.0f : ck_mlaw_exp2(m_run[r] - m_use[r]);
                ls[r] = 0.0f;
#pragma unroll
                for (int n = 0; n < NP; n++) {
                    const float p0 = ck_mlaw_exp2(fmaf(s[4 * n + 2 * r], scale2, -m_use[r]));
                    const float p1 = ck_mlaw_exp2(fmaf(s[4 * n + 2 * r + 1], scale2, -m_use[r]));
                    ls[r] += p0 + p1;
                    const float2 ks = kscale(n); /* P V with V unscaled: sum p scale v (p <= 2^8: f16 holds it for scales < 255) */
                    pa[n >> 1][(n & 1) * 2 + r] = ck_pack2<T>(p0 * ks.x, p1 * ks.y);
                }
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
        {
            /* the second half of P: warpgroup 0 forms it while the tensor cores run the first half's P V */
            if (wg == 0) {
#pragma unroll
                for (int r = 0; r < 2; r++) {
#pragma unroll
                    for (int n = NP; n < BN / 8; n++) {
                        const float p0 = ck_mlaw_exp2(fmaf(s[4 * n + 2 * r], scale2, -m_use[r]));
                        const float p1 = ck_mlaw_exp2(fmaf(s[4 * n + 2 * r + 1], scale2, -m_use[r]));
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
        if (F8 && j + 1 < n_tiles) {
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
            mul[r] = ck_mla_row_finish(a, it, part, row, t, h, m_run[r], lsum, row < nrows, t4 == 0);
        }
        sfac[wt] = make_float2(mul[0], mul[1]);
    }
    __syncthreads();
    const float2 mf = sfac[wt];
    /* the stages are free (the copies landed, both P V done) and so are the address slots */
    const bool staged = !part && a.out_dtype != CK_F32 &&
                        (((uintptr_t)a.out | (uintptr_t)(a.out_st[0] * 2) | (uintptr_t)(a.out_st[1] * 2)) & 15) == 0;
    if (staged) {
        ck_mla_wg_write_staged<T>(a, it, o, mf, nrows, hc, tok0, wq * 16 + g, wg * 256 + 2 * t4, smem + (sK - base), saddr, tid);
    } else {
        ck_mla_wg_write<T>(a, it, part, o, mf, nrows, hc, tok0, wq * 16 + g, wg * 256 + 2 * t4);
    }
}

/* ck_mla_wg_<f16|bf16>[_fp8]: a latent of the query's 16-bit type, or fp8 (e4m3 / e5m2: a.kv_dtype) */
CK_MLA_ENTRIES(ck_mla_wg, ck_mla_wg_body)
