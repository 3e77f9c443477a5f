/* attn_mma.cuh — paged attention on the tensor cores (mma.sync m16n8k16, f32 accumulators),
 * FlashAttention-2 style: a block holds a tile of query ROWS in shared memory and streams the keys of
 * its range through it in tiles of BN, with an online softmax in registers.
 *
 * Rows are (token, query head) pairs of ONE KV head, heads inner: a tile of 64 rows is 16 tokens x 4
 * heads at GQA 4, so every K/V byte a block loads serves all the query heads that read it. WM row
 * warps of 16 rows each take every key of the tile (the general prefill kernel: WM = 4, 64 rows); the
 * decode tiles have their own kernel (attn_decode.cuh). With split-KV the key range is cut into
 * num_splits chunks (the plan chose how many) whose partial (o, lse) a merge kernel combines.
 * K/V rows are gathered through the block table into shared memory with 16-byte cp.async, in a ring
 * of CK_MMA_STAGES stages with one barrier a tile, so any block size (1..256) costs the same per key:
 * each tile looks up its BN rows (block ids a tile ahead, offsets a stage ahead). fp8 caches land raw;
 * Q is then held in f16 times a power of two and K's scale multiplies the scores; a pass widens K
 * exactly to f16 and dequantises V (x scale, per tensor or per block and KV head, rounded once to the
 * query's type) into 16-bit tiles. Head dims are padded to D (64/128/256) with zeros; the matrix loops run over all of D.
 * Scores live in the log2 domain (scale x log2 e, exp2). Masks (causal, windows, keys that do not
 * exist) are applied per element on the tiles that need them; tiles outside the item's key range are
 * never loaded, so causal tiles above the diagonal are skipped.
 */
#ifndef ATTNRT_ATTN_MMA_CUH
#define ATTNRT_ATTN_MMA_CUH

#include "ck_common.cuh"

/* Where a row's results go: the user's out / lse, or the item's partial state when split. */
template <int ROWS>
__device__ __forceinline__ void mma_emit(const ck_attn_args_t &a, const ck_work_item_t &it, int64_t tok0, int hbase,
                                         int row, int c, float o_sum, float m, float lsum)
{
    if (it.num_splits > 1) {
        const int64_t pr = (int64_t)it.part_index * CK_SPLIT_ROWS + (int64_t)it.split * ROWS + row; /* slot-row */
        a.part_o[pr * a.dv + c] = lsum > 0.0f ? o_sum / lsum : 0.0f;
        return;
    }
    const int64_t tok = tok0 + row / it.head_count;
    const int h = hbase + row % it.head_count;
    float val = 0.0f;
    if (lsum > 0.0f) {
        float den = lsum;
        if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m);
        val = o_sum / den; /* den inf (a sink far above every key): 0, not NaN */
    }
    ck_store(a.out, tok * a.out_st[0] + (int64_t)h * a.out_st[1] + c, a.out_dtype, val);
}

template <int ROWS>
__device__ __forceinline__ void mma_emit_lse(const ck_attn_args_t &a, const ck_work_item_t &it, int64_t tok0,
                                             int hbase, int row, float m, float lsum)
{
    const float lse = lsum > 0.0f ? m + logf(lsum) : -CK_INF;
    if (it.num_splits > 1) {
        a.part_lse[(int64_t)it.part_index * CK_SPLIT_ROWS + (int64_t)it.split * ROWS + row] = lse;
    } else if (a.lse) {
        const int64_t tok = tok0 + row / it.head_count;
        const int h = hbase + row % it.head_count;
        a.lse[tok * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lse;
    }
}

/* 2^x in one MUFU.EX2 (flush-to-zero: results under 2^-126 become 0, as __expf's do; -inf gives 0). */
__device__ __forceinline__ float ck_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The type of the QK^T product's operands: the query's type, except for fp8 caches, whose K rows are
 * widened EXACTLY to f16 (every e4m3 / e5m2 value is an f16 value; one cvt per pair) and multiplied by
 * their scale in the scores, not in the tile; Q is then stored in f16 too, times a power of two that
 * keeps it in f16's range (divided back out of the scores). V keeps the query's type. */
template <typename T, bool FP8> struct ck_qk_type { typedef T type; };
template <typename T> struct ck_qk_type<T, true> { typedef __half type; };

/* fp8 caches hold Q in f16 times qmul (every kernel that takes them): x's biased f32 exponent, 0 for inf and NaN (which
 * stay what they are), and the power of two that brings a largest finite |q| of biased exponent e (max |q| in
 * [2^(e-127), 2^(e-126))) to [2^13, 2^14): nothing overflows f16 and little sinks under its normal range; at most 2^60
 * up, so that scale / qmul stays a normal float; 1 where e is 0 (no finite nonzero element). */
__device__ __forceinline__ uint32_t ck_finite_exp(float x)
{
    const uint32_t ex = (__float_as_uint(x) >> 23) & 0xffu;
    return ex < 255u ? ex : 0u;
}
__device__ __forceinline__ float ck_fp8_qmul(uint32_t e)
{
    return e > 0 ? __uint_as_float((uint32_t)min(max(127 - ((int)e - 140), 1), 187) << 23) : 1.0f;
}

/* 16 bytes global -> shared (bypassing L1), or 16 zero bytes when `zero` (the source is not read). */
/* L2_256: the fetch asks the L2 for 256 bytes around the chunk (attn_decode.cuh's L2W: an NHD cache's short
 * fp8 rows come from DRAM with their neighbour heads') */
template <bool L2_256 = false> __device__ __forceinline__ void ck_cp_async16_zf(uint32_t dst, const void *src, bool zero)
{
    if (L2_256)
        asm volatile("{\n"
                     "  .reg .pred z;\n"
                     "  setp.ne.b32 z, %2, 0;\n"
                     "  cp.async.cg.shared.global.L2::256B [%0], [%1], 16, z;\n"
                     "}\n" ::"r"(dst), "l"(src), "r"((int)zero));
    else
        asm volatile("{\n"
                     "  .reg .pred z;\n"
                     "  setp.ne.b32 z, %2, 0;\n"
                     "  cp.async.cg.shared.global [%0], [%1], 16, z;\n"
                     "}\n" ::"r"(dst), "l"(src), "r"((int)zero));
}

#define CK_LOG2E 1.4426950408889634f
#define CK_LN2 0.6931471805599453f

template <typename T, bool FP8, int D, int WM, int BN>
__device__ __forceinline__ void attn_mma(const ck_attn_args_t &a)
{
    constexpr int NT = WM * 32, ROWS = 16 * WM, LD = D + 8, NTS = BN / 8, NTO = D / 8;
    constexpr int STAGES = CK_MMA_STAGES(D, ROWS, FP8), SLOTS = CK_MMA_META_SLOTS(D, ROWS, FP8);
    constexpr int KSLOTS = CK_MMA_OFF_SLOTS(D, ROWS, FP8); /* the row-address ring (the mask ring has SLOTS) */
    /* Q fragments in registers at D <= 128 (D 256: 64 more registers, no) */
    constexpr bool QREG = D <= 128 && WM > 1;

    static_assert(BN % 16 == 0, "whole k-steps of 16 keys");
    static_assert(BN <= NT, "one thread looks up each key of a tile");
    static_assert(STAGES >= 2 && SLOTS == STAGES + 1 && SLOTS <= 32 && KSLOTS >= STAGES && BN % 32 == 0, "ring sizes");
    extern __shared__ __align__(16) unsigned char smem[];
    const ck_mma_layout_t lay = ck_mma_layout(D, ROWS, BN, FP8);
    typedef typename ck_qk_type<T, FP8>::type TK;
    TK *sQ = (TK *)(smem + lay.q);
    TK *sK = (TK *)(smem + lay.k);
    T *sV = (T *)(smem + lay.v);
    unsigned char *sRaw = smem + lay.raw;
    uint64_t *kaddr = (uint64_t *)(smem + lay.kaddr); /* [KSLOTS][BN] row addresses, 0: key absent */
    uint64_t *vaddr = (uint64_t *)(smem + lay.vaddr);
    uint32_t *amask = (uint32_t *)(smem + lay.amask); /* [SLOTS][BN / 32] bit j: key j of the tile is absent */
    float *ksc = (float *)(smem + lay.ksc); /* [KSLOTS][BN] fp8 scales */
    float *vsc = (float *)(smem + lay.vsc);

    const ck_work_item_t it = a.items[blockIdx.x];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp, g = lane >> 2, t4 = lane & 3;

    /* The request, read on the device and clamped to the tensors. */
    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t q_begin = rq.q_begin, L = rq.L, S = rq.S;
    const int hc = it.head_count;
    const int64_t ntok = min((int64_t)(ROWS / hc), L - it.q_first);
    if (ntok <= 0) return; /* the planned rows are not in this batch */
    const int nrows = (int)ntok * hc;
    const int kvh = it.kv_head, hbase = kvh * a.group + it.head_first;
    const int64_t tok0 = q_begin + it.q_first, pq0 = S - L + it.q_first;
    const int64_t wl = a.window_left, wr = a.window_right;

    int64_t kbeg, kend; /* splits cut at whole tiles */
    ck_item_keys(pq0, ntok, S, a.causal, wl, wr, it.num_splits, it.split, BN, &kbeg, &kend);
    const int64_t n_tiles = kend >= kbeg ? (kend - kbeg + BN) / BN : 0;

    /* Block id of key k0 + tid (thread tid < BN), -1 past the range: loaded a tile before its offsets
     * are computed, so the block-table read is never a dependent round trip between tiles; r_out: the
     * row for meta. */
    ck_bt_walker<BN> walk(kbeg + tid, a.block_size);
    auto bt_load = [&](int64_t k0, int64_t &r_out) -> int64_t {
        return walk.next(a, seq, tid < BN && k0 + tid <= kend, &r_out);
    };
    /* Row addresses and scales of the tile at key k0 into slot ks, its absent-key bits into mask slot
     * ms (thread j: key k0 + j, block id blk and row r from bt_load(k0)); returns whether this thread's
     * key is absent. Warp-uniform: BN is a multiple of 32. */
    constexpr int ES = FP8 ? 1 : 2; /* bytes per cache element */
    const ck_kv_addr_t heads = ck_kv_heads<ES>(a, kvh);
    auto meta = [&](int64_t k0, int ks, int ms, int64_t blk, int64_t r) -> bool {
        if (tid >= BN) return false;
        const int64_t key = k0 + tid;
        ck_kv_addr_t row;
        float ksv = 1.0f, vsv = 1.0f;
        if (ck_kv_row<ES>(a, heads, key <= kend, blk, r, &row) && FP8) {
            if (a.k_scale) ksv = a.k_scale[blk * a.ks_st[0] + kvh * a.ks_st[1]];
            if (a.v_scale) vsv = a.v_scale[blk * a.vs_st[0] + kvh * a.vs_st[1]];
        }
        const int64_t ko = row.k ? 0 : -1; /* the absent test below */
        kaddr[ks * BN + tid] = row.k;
        vaddr[ks * BN + tid] = row.v;
        if (FP8) { /* the layout has no scale arrays for 16-bit caches */
            ksc[ks * BN + tid] = ksv;
            vsc[ks * BN + tid] = vsv;
        }
        const uint32_t bits = __ballot_sync(0xffffffffu, ko < 0);
        if (lane == 0) amask[ms * (BN / 32) + warp] = bits;
        return ko < 0;
    };

    /* 16-byte copies of the rows of the tile whose addresses are in slot ks into stage st; absent keys
     * become zeros. Always commits one group (empty past the last tile), so the waits count tiles. */
    constexpr int EPC = FP8 ? 16 : 8, CPR = D / EPC; /* elements per 16-byte chunk, chunks per padded row */
    static_assert(NT % CPR == 0 && (BN * CPR) % NT == 0, "a thread copies the same chunk of every row it takes");
    /* This thread copies chunk ch of rows j0, j0 + NT / CPR, ...: the chunk is fixed, so is whether it
     * lies inside the head dim (past it: the pad columns, zero, never copied). */
    const int cp_ch = tid % CPR, cp_j0 = tid / CPR;
    const bool cp_k = cp_ch < a.dqk / EPC, cp_v = cp_ch < a.dv / EPC;
    auto issue = [&](int ks, int st, bool real) {
        if (real) {
            constexpr int RPI = NT / CPR; /* rows per pass */
            const uint64_t *ka = kaddr + ks * BN, *va = vaddr + ks * BN;
            const uint32_t kdst = FP8 ? ck_smem(sRaw + (st * 2 * BN + cp_j0) * D + cp_ch * 16)
                                      : ck_smem(sK + (st * BN + cp_j0) * LD + cp_ch * 8);
            const uint32_t vdst = FP8 ? ck_smem(sRaw + ((st * 2 + 1) * BN + cp_j0) * D + cp_ch * 16)
                                      : ck_smem(sV + (st * BN + cp_j0) * LD + cp_ch * 8);
            constexpr uint32_t RSTEP = FP8 ? RPI * D : RPI * LD * 2; /* bytes between this thread's rows */
#pragma unroll
            for (int i = 0; i < BN / RPI; i++) {
                const uint64_t p = ka[cp_j0 + i * RPI];
                if (cp_k)
                    ck_cp_async16_zf(kdst + i * RSTEP, (const void *)(uintptr_t)(p + cp_ch * 16), p == 0);
            }
#pragma unroll
            for (int i = 0; i < BN / RPI; i++) {
                const uint64_t p = va[cp_j0 + i * RPI];
                if (cp_v)
                    ck_cp_async16_zf(vdst + i * RSTEP, (const void *)(uintptr_t)(p + cp_ch * 16), p == 0);
            }
        }
        ck_cp_async_commit();
    };

    /* fp8: stage st's raw rows -> the 16-bit tiles, 8 elements a step: K widened to f16 as it is (its
     * scale multiplies the scores), V times each row's scale (slot ks) in f32, rounded once to T. */
    auto convert = [&](int st, int ks) {
        constexpr int C8 = D / 8, RPI = NT / C8; /* 8-element chunks per row, rows per pass */
        static_assert(NT % C8 == 0 && BN % RPI == 0, "a thread converts the same chunk of every row it takes");
        const bool e4m3 = a.kv_dtype == CK_E4M3;
        const int ch = tid % C8, j0 = tid / C8;
#pragma unroll
        for (int w = 0; w < 2; w++) {
            if (ch >= ((w ? a.dv : a.dqk) >> 3)) continue; /* pad columns stay zero */
            const unsigned char *raw = sRaw + (st * 2 + w) * BN * D + j0 * D + ch * 8;
            const float *scl = (w ? vsc : ksc) + ks * BN + j0;
            unsigned char *dst = w ? (unsigned char *)(sV + j0 * LD + ch * 8) : (unsigned char *)(sK + j0 * LD + ch * 8);
#pragma unroll
            for (int i = 0; i < BN / RPI; i++) {
                const uint2 bytes = *(const uint2 *)(raw + i * RPI * D);
                uint32_t packed[4];
                if (w == 0) {
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        packed[e] = ck_fp8x2_to_h2bits((uint16_t)((e < 2 ? bytes.x : bytes.y) >> ((e & 1) * 16)), e4m3);
                } else {
                    const float s = scl[i * RPI];
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const uint32_t word = e < 2 ? bytes.x : bytes.y;
                        const float2 f = ck_fp8x2_to_f32x2((uint16_t)(word >> ((e & 1) * 16)), e4m3);
                        packed[e] = ck_pack2<T>(f.x * s, f.y * s);
                    }
                }
                *(uint4 *)(dst + i * RPI * LD * 2) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
            }
        }
    };

    /* Pipeline prologue: offsets of tiles 0 .. STAGES-2 (their block ids loaded together), their
     * copies issued; the offsets of tile STAGES-1 written (published by the loop's first barrier). */
    uint32_t absent_bits = 0;    /* bit ms: the tile whose mask is in slot ms has an absent key */
    int64_t blk_next = -1, r_next = 0; /* block id and row of this thread's key in the tile after the last written one */
    bool pending_absent = false; /* this thread's key in the last written, not yet published, slot is absent */
    {
        int64_t blk0[STAGES], r0[STAGES];
#pragma unroll
        for (int j = 0; j < STAGES; j++) blk0[j] = bt_load(kbeg + (int64_t)j * BN, r0[j]); /* -1 past kend */
        bool ab[STAGES - 1];
#pragma unroll
        for (int j = 0; j < STAGES - 1; j++) ab[j] = j < n_tiles && meta(kbeg + (int64_t)j * BN, j, j, blk0[j], r0[j]);
#pragma unroll
        for (int j = 0; j < STAGES - 1; j++)
            if (__syncthreads_or(ab[j])) absent_bits |= 1u << j;
#pragma unroll
        for (int j = 0; j < STAGES - 1; j++) issue(j, j, j < n_tiles);
        if (STAGES - 1 < n_tiles) { /* published by the loop's first barrier */
            pending_absent = meta(kbeg + (int64_t)(STAGES - 1) * BN, STAGES - 1, STAGES - 1, blk0[STAGES - 1], r0[STAGES - 1]);
            if (STAGES < n_tiles) blk_next = bt_load(kbeg + (int64_t)STAGES * BN, r_next);
        }
    }

    /* This thread's two rows (g and g + 8 of its warp's 16): position, key range, ALiBi slope. */
    int64_t rlo[2], rhi[2], rpq[2];
    float slope[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = wm * 16 + g + 8 * r;
        rpq[r] = pq0 + row / hc;
        ck_key_range(rpq[r], S, a.causal, wl, wr, &rlo[r], &rhi[r]);
        if (row >= nrows) {
            rlo[r] = 1;
            rhi[r] = 0;
        }
        slope[r] = a.alibi ? a.alibi[(int64_t)(hbase + row % hc) * a.alibi_st] : 0.0f;
    }

    /* Q tile (zeros past dqk and past the rows) and zeros in the K/V pad columns, once, while the
     * first tiles are in flight; then Q's A fragments into registers (D <= 128). */
    auto q_at = [&](int idx) -> float {
        const int r = idx / D, d = idx % D;
        if (r < nrows && d < a.dqk)
            return ck_load(a.q, (tok0 + r / hc) * a.q_st[0] + (int64_t)(hbase + r % hc) * a.q_st[1] + d, a.q_dtype);
        return 0.0f;
    };
    /* fp8 (Q in f16): Q times qmul (ck_fp8_qmul) for the largest finite |q| of the tile (its exponent by
     * bisection over __syncthreads_or, 8 barriers once a block). */
    float qmul = 1.0f;
    if (FP8) {
        uint32_t my_exp = 0; /* largest biased f32 exponent of this thread's finite elements */
        for (int idx = tid; idx < ROWS * D; idx += NT) my_exp = max(my_exp, ck_finite_exp(q_at(idx)));
        uint32_t e = 0;
        for (int bit = 7; bit >= 0; bit--)
            if (__syncthreads_or(my_exp >= (e | (1u << bit)))) e |= 1u << bit;
        qmul = ck_fp8_qmul(e);
    }
    for (int idx = tid; idx < ROWS * D; idx += NT) sQ[(idx / D) * LD + idx % D] = ck_from_f32<TK>(q_at(idx) * qmul);
    constexpr int KV16_STAGES = FP8 ? 1 : STAGES;
    if (a.dqk < D || a.dv < D) /* no pad columns when both dims fill D (cp.async never writes them) */
        for (int idx = tid; idx < KV16_STAGES * BN * D; idx += NT) {
            const int r = idx / D, d = idx % D;
            if (d >= a.dqk) sK[r * LD + d] = ck_from_f32<TK>(0.0f);
            if (d >= a.dv) sV[r * LD + d] = ck_from_f32<T>(0.0f);
        }
    __syncthreads();
    uint32_t qf[QREG ? D / 16 : 1][4];
    if (QREG) {
#pragma unroll
        for (int kk = 0; kk < (QREG ? D / 16 : 1); kk++)
            ck_ldmatrix_x4(qf[kk], ck_smem(sQ + (wm * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));
    }

    float o_acc[NTO][4];
#pragma unroll
    for (int n = 0; n < NTO; n++) o_acc[n][0] = o_acc[n][1] = o_acc[n][2] = o_acc[n][3] = 0.0f;
    /* running max in the log2 domain (scores times log2 e), running sum */
    float m_r[2] = {-CK_INF, -CK_INF}, l_r[2] = {0.0f, 0.0f};
    const bool plain = !(a.softcap > 0.0f) && !a.alibi;
    const float scale2 = a.scale * CK_LOG2E / qmul, scale_q = a.scale / qmul; /* qmul: a power of two */

    /* A tile needs no per-element mask when every key exists and lies in every row's range: ranges grow
     * with the position, so that is [lo of the last token, hi of the first]. */
    int64_t all_lo, all_hi, unused;
    ck_key_range(pq0 + ntok - 1, S, a.causal, wl, wr, &all_lo, &unused);
    ck_key_range(pq0, S, a.causal, wl, wr, &unused, &all_hi);

    /* Tile kt: stage kt % STAGES, addresses in slot kt % KSLOTS, absent-key bits in slot kt % SLOTS. One
     * barrier a tile (two for fp8): after it, tile kt has landed for every thread, every warp is done
     * with tile kt-1 (its stage may be refilled) and the addresses of tile kt+STAGES-1 are visible. The
     * addresses of tile kt+STAGES are written during tile kt into the slot of tile kt+STAGES-KSLOTS, which
     * nothing reads any more: with KSLOTS = STAGES that is tile kt's own, whose copies were issued a tile
     * ago and which the score masks no longer read (they read the mask ring); fp8's convert pass reads
     * tile kt's scales, so fp8 keeps one slot more. */
    int st_c = 0, st_i = STAGES - 1, ms_c = 0, ms_i = STAGES - 1, ms_w = STAGES % SLOTS;
    int ks_c = 0, ks_i = STAGES - 1, ks_w = STAGES % KSLOTS; /* the address ring's slots of the same tiles */
    for (int64_t kt = 0; kt < n_tiles; kt++) {
        const int64_t k0 = kbeg + kt * BN;
        ck_cp_async_wait<STAGES - 2>();
        const bool any_absent = __syncthreads_or(pending_absent);
        if (kt + STAGES - 1 < n_tiles) absent_bits = any_absent ? absent_bits | 1u << ms_i : absent_bits & ~(1u << ms_i);
        issue(ks_i, st_i, kt + STAGES - 1 < n_tiles);
        pending_absent = false;
        if (kt + STAGES < n_tiles) {
            pending_absent = meta(k0 + (int64_t)STAGES * BN, ks_w, ms_w, blk_next, r_next);
            if (kt + STAGES + 1 < n_tiles) blk_next = bt_load(k0 + (int64_t)(STAGES + 1) * BN, r_next);
        }
        const bool interior = !((absent_bits >> ms_c) & 1u) && k0 >= all_lo && k0 + BN - 1 <= all_hi;
        const TK *kb = sK;
        const T *vb = sV;
        if (FP8) {
            convert(st_c, ks_c);
            __syncthreads();
        } else {
            kb += st_c * BN * LD;
            vb += st_c * BN * LD;
        }

        /* S = Q K^T for this warp's 16 rows x BN keys. */
        float s[NTS][4];
#pragma unroll
        for (int n = 0; n < NTS; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
        /* Every k-step, also past dqk (zeros in Q and K there): straight-line code the compiler can
         * schedule (ldmatrix ahead of the mma that needs it). */
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            {
                uint32_t aq[4];
                if (QREG) {
                    aq[0] = qf[QREG ? kk : 0][0];
                    aq[1] = qf[QREG ? kk : 0][1];
                    aq[2] = qf[QREG ? kk : 0][2];
                    aq[3] = qf[QREG ? kk : 0][3];
                } else {
                    ck_ldmatrix_x4(aq, ck_smem(sQ + (wm * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));
                }
#pragma unroll
                for (int np = 0; np < NTS / 2; np++) {
                    uint32_t bf[4];
                    const int key = np * 16 + (lane & 7) + (lane >> 4) * 8;
                    ck_ldmatrix_x4(bf, ck_smem(kb + key * LD + kk * 16 + ((lane >> 3) & 1) * 8));
                    ck_mma16816<TK>(s[2 * np], aq, bf[0], bf[1]);
                    ck_mma16816<TK>(s[2 * np + 1], aq, bf[2], bf[3]);
                }
            }
        }

        /* Scores in the contract's order (scale, soft-cap, ALiBi), masks, in the log2 domain (times
         * log2 e, folded into the scale when there is no soft-cap or ALiBi), then the online softmax.
         * The common tile (no soft-cap, no ALiBi, no mask) has its own short loop, so the hot path is
         * a few straight instructions a score and the general one stays out of the instruction cache. */
        float mx[2] = {-CK_INF, -CK_INF};
        if (plain && interior) {
#pragma unroll
            for (int n = 0; n < NTS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s[n][e] *= FP8 ? scale2 * ksc[ks_c * BN + n * 8 + 2 * t4 + (e & 1)] : scale2;
                    mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
                }
        } else {
#pragma unroll
            for (int n = 0; n < NTS; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int r = e >> 1, j = n * 8 + 2 * t4 + (e & 1);
                    const int64_t key = k0 + j;
                    float x = s[n][e] * (FP8 ? scale_q * ksc[ks_c * BN + j] : a.scale);
                    if (a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
                    if (a.alibi) x -= slope[r] * (float)(rpq[r] > key ? rpq[r] - key : key - rpq[r]);
                    x *= CK_LOG2E;
                    if (!interior && (((amask[ms_c * (BN / 32) + j / 32] >> (j % 32)) & 1u) || key < rlo[r] || key > rhi[r]))
                        x = -CK_INF;
                    s[n][e] = x;
                    mx[r] = fmaxf(mx[r], x);
                }
        }
        float alpha[2], m_use[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float m_new = fmaxf(m_r[r], mx[r]);
            m_use[r] = m_new == -CK_INF ? 0.0f : m_new; /* no key yet: 2^{-inf - 0} = 0, never NaN */
            alpha[r] = ck_exp2(m_r[r] - m_use[r]);
            m_r[r] = m_new;
        }
        float ls[2] = {0.0f, 0.0f};
#pragma unroll
        for (int n = 0; n < NTS; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float p = ck_exp2(s[n][e] - m_use[e >> 1]);
                s[n][e] = p;
                ls[e >> 1] += p;
            }
#pragma unroll
        for (int r = 0; r < 2; r++) l_r[r] = l_r[r] * alpha[r] + ls[r];
        if (__any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) /* the max moved for some row */
#pragma unroll
            for (int n = 0; n < NTO; n++) {
                o_acc[n][0] *= alpha[0];
                o_acc[n][1] *= alpha[0];
                o_acc[n][2] *= alpha[1];
                o_acc[n][3] *= alpha[1];
            }

        /* O += P V: P's accumulator layout is the A operand's, two key n-tiles per k-step. */
#pragma unroll
        for (int k2 = 0; k2 < BN / 16; k2++) {
            uint32_t pa[4];
            pa[0] = ck_pack2<T>(s[2 * k2][0], s[2 * k2][1]);
            pa[1] = ck_pack2<T>(s[2 * k2][2], s[2 * k2][3]);
            pa[2] = ck_pack2<T>(s[2 * k2 + 1][0], s[2 * k2 + 1][1]);
            pa[3] = ck_pack2<T>(s[2 * k2 + 1][2], s[2 * k2 + 1][3]);
            const int vkey = k2 * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
            for (int np = 0; np < D / 16; np++) { /* also past dv: zeros there, never written out */
                uint32_t bf[4];
                ck_ldmatrix_x4_trans(bf, ck_smem(vb + vkey * LD + np * 16 + (lane >> 4) * 8));
                ck_mma16816<T>(o_acc[2 * np], pa, bf[0], bf[1]);
                ck_mma16816<T>(o_acc[2 * np + 1], pa, bf[2], bf[3]);
            }
        }
        st_c = st_c + 1 == STAGES ? 0 : st_c + 1;
        st_i = st_i + 1 == STAGES ? 0 : st_i + 1;
        ms_c = ms_c + 1 == SLOTS ? 0 : ms_c + 1;
        ms_i = ms_i + 1 == SLOTS ? 0 : ms_i + 1;
        ms_w = ms_w + 1 == SLOTS ? 0 : ms_w + 1;
        ks_c = ks_c + 1 == KSLOTS ? 0 : ks_c + 1;
        ks_i = ks_i + 1 == KSLOTS ? 0 : ks_i + 1;
        ks_w = ks_w + 1 == KSLOTS ? 0 : ks_w + 1;
    }
    ck_cp_async_wait<0>(); /* only empty groups can be left; the K area is reused below */

    float lsum[2], m_nat[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        lsum[r] = l_r[r] + __shfl_xor_sync(0xffffffffu, l_r[r], 1);
        lsum[r] += __shfl_xor_sync(0xffffffffu, lsum[r], 2);
        m_nat[r] = m_r[r] * CK_LN2; /* back to natural-log units for the LSE and the sinks */
    }

    /* each warp owns its rows: write straight from the accumulators */
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = wm * 16 + g + 8 * r;
        if (row >= nrows) continue;
#pragma unroll
        for (int n = 0; n < NTO; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int c = n * 8 + 2 * t4 + e;
                if (c < a.dv) mma_emit<ROWS>(a, it, tok0, hbase, row, c, o_acc[n][2 * r + e], m_nat[r], lsum[r]);
            }
        if (t4 == 0) mma_emit_lse<ROWS>(a, it, tok0, hbase, row, m_nat[r], lsum[r]);
    }
}

#endif /* ATTNRT_ATTN_MMA_CUH */
