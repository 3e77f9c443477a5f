/* attn_mma.cuh — paged attention on the tensor cores (mma.sync m16n8k16, f32 accumulators),
 * FlashAttention-2 style: a block holds a tile of query ROWS in shared memory and streams the keys of
 * its range through it in tiles of BN, with an online softmax in registers.
 *
 * Rows are (token, query head) pairs of ONE KV head, heads inner: a tile of 64 rows is 16 tokens x 4
 * heads at GQA 4, so every K/V byte a block loads serves all the query heads that read it (decode: the
 * whole group in one block). Two configurations share the body:
 *   prefill  WM = 4 row warps x WN = 1: 64 rows, each warp 16 rows over every key of the tile;
 *   decode   WM = 1 x WN = 4 key warps: 16 rows, each warp a quarter of the tile's keys, combined at
 *            the end through shared memory; with split-KV the key range is cut into num_splits
 *            chunks (the plan chose how many) whose partial (o, lse) a merge kernel combines.
 * K/V rows are gathered through the block table into shared memory with 16-byte cp.async, two
 * stages deep, so any block size (1..256) costs the same per key: each tile looks up its BN rows.
 * fp8 caches land raw and are dequantised (x scale, per tensor or per block and KV head) into the
 * 16-bit tile before the matrix products. Head dims are padded to D (64/128/256) with zeros.
 * Masks (causal, windows, keys that do not exist) are applied per element; tiles outside the item's
 * key range are never loaded, so causal tiles above the diagonal are skipped.
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
        const int64_t pi = (int64_t)it.part_index + it.split;
        a.part_o[(pi * ROWS + row) * a.dv + c] = lsum > 0.0f ? o_sum / lsum : 0.0f;
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
        a.part_lse[((int64_t)it.part_index + it.split) * ROWS + row] = lse;
    } else if (a.lse) {
        const int64_t tok = tok0 + row / it.head_count;
        const int h = hbase + row % it.head_count;
        a.lse[tok * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lse;
    }
}

template <typename T, bool FP8, int D, int WM, int WN, int BN>
__device__ __forceinline__ void attn_mma(const ck_attn_args_t &a)
{
    constexpr int NT = WM * WN * 32, ROWS = 16 * WM, LD = D + 8, KPW = BN / WN, NTS = KPW / 8, NTO = D / 8;
    static_assert(KPW % 16 == 0, "each warp takes whole k-steps of 16 keys");
    static_assert(BN <= NT, "one thread looks up each key of a tile");
    extern __shared__ __align__(16) unsigned char smem[];
    const ck_mma_layout_t lay = ck_mma_layout(D, ROWS, BN, WN, FP8);
    T *sQ = (T *)(smem + lay.q);
    T *sK = (T *)(smem + lay.k);
    T *sV = (T *)(smem + lay.v);
    unsigned char *sRaw = smem + lay.raw;
    int64_t *koff = (int64_t *)(smem + lay.koff); /* [2][BN] element offsets, -1: key absent */
    int64_t *voff = (int64_t *)(smem + lay.voff);
    float *ksc = (float *)(smem + lay.ksc); /* [2][BN] fp8 scales */
    float *vsc = (float *)(smem + lay.vsc);

    const ck_work_item_t it = a.items[blockIdx.x];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp % WM, wn = warp / WM, g = lane >> 2, t4 = lane & 3;

    /* The request, read on the device and clamped to the tensors. */
    const int64_t seq = it.seq;
    const int64_t q_begin = ck_clamp(a.qsl[seq * a.qsl_st], 0, a.num_tokens);
    const int64_t q_end = ck_clamp(a.qsl[(seq + 1) * a.qsl_st], q_begin, a.num_tokens);
    const int64_t L = q_end - q_begin;
    const int64_t S = ck_clamp(a.seq_lens[seq * a.sl_st], 0, a.bt_cols * a.block_size);
    const int hc = it.head_count;
    const int64_t ntok = min((int64_t)(ROWS / hc), L - it.q_first);
    if (ntok <= 0) return; /* the planned rows are not in this batch */
    const int nrows = (int)ntok * hc;
    const int kvh = it.kv_head, hbase = kvh * a.group + it.head_first;
    const int64_t tok0 = q_begin + it.q_first, pq0 = S - L + it.q_first;
    const int64_t wl = a.window_left, wr = a.window_right;

    int64_t lo, hi, unused;
    ck_key_range(pq0, S, a.causal, wl, wr, &lo, &unused);
    ck_key_range(pq0 + ntok - 1, S, a.causal, wl, wr, &unused, &hi);
    int64_t kbeg = lo, kend = hi;
    if (it.num_splits > 1) { /* split s of n: whole tiles, the last split takes the rest */
        const int64_t nkeys = hi >= lo ? hi - lo + 1 : 0;
        const int64_t chunk = ((nkeys + it.num_splits - 1) / it.num_splits + BN - 1) / BN * BN;
        kbeg = lo + (int64_t)it.split * chunk;
        kend = min(hi, kbeg + chunk - 1);
    }
    const int64_t n_tiles = kend >= kbeg ? (kend - kbeg + BN) / BN : 0;

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

    /* Q tile (zeros past dqk and past the rows), and zeros in the K/V pad columns, once. */
    for (int idx = tid; idx < ROWS * D; idx += NT) {
        const int r = idx / D, d = idx % D;
        float x = 0.0f;
        if (r < nrows && d < a.dqk)
            x = ck_load(a.q, (tok0 + r / hc) * a.q_st[0] + (int64_t)(hbase + r % hc) * a.q_st[1] + d, a.q_dtype);
        sQ[r * LD + d] = ck_from_f32<T>(x);
    }
    constexpr int KV16_STAGES = FP8 ? 1 : 2;
    if (a.dqk < D || a.dv < D) /* no pad columns when both dims fill D */
        for (int idx = tid; idx < KV16_STAGES * BN * D; idx += NT) {
            const int r = idx / D, d = idx % D;
            if (d >= a.dqk) sK[r * LD + d] = ck_from_f32<T>(0.0f);
            if (d >= a.dv) sV[r * LD + d] = ck_from_f32<T>(0.0f);
        }

    /* Block id of key k0 + tid (thread tid < BN), -1 past the range: loaded one tile ahead of meta, so
     * the block-table read is not a dependent round trip on the critical path between tiles. */
    auto bt_load = [&](int64_t k0) -> int64_t {
        const int64_t key = k0 + tid;
        if (tid >= BN || key > kend) return -1;
        return a.block_table[seq * a.bt_st[0] + key / a.block_size * a.bt_st[1]];
    };
    /* Row offsets and scales of the tile at key k0 into stage st (thread j: key k0 + j, block id blk
     * from bt_load(k0)). */
    auto meta = [&](int64_t k0, int st, int64_t blk) {
        if (tid < BN) {
            const int64_t key = k0 + tid;
            int64_t ko = -1, vo = -1;
            float ks = 1.0f, vs = 1.0f;
            if (key <= kend) {
                const int64_t lb = key / a.block_size;
                if (blk >= 0 && blk < a.num_blocks) { /* else a garbage entry: the key does not exist */
                    const int64_t r = key - lb * a.block_size;
                    ko = blk * a.kc_st[0] + r * a.kc_st[1] + kvh * a.kc_st[2];
                    vo = blk * a.vc_st[0] + r * a.vc_st[1] + kvh * a.vc_st[2];
                    if (FP8) {
                        if (a.k_scale) ks = a.k_scale[blk * a.ks_st[0] + kvh * a.ks_st[1]];
                        if (a.v_scale) vs = a.v_scale[blk * a.vs_st[0] + kvh * a.vs_st[1]];
                    }
                }
            }
            koff[st * BN + tid] = ko;
            voff[st * BN + tid] = vo;
            if (FP8) { /* the layout has no scale arrays for 16-bit caches */
                ksc[st * BN + tid] = ks;
                vsc[st * BN + tid] = vs;
            }
        }
    };

    /* 16-byte copies of the tile's rows into stage st; absent keys become zeros. */
    auto issue = [&](int st) {
        constexpr int EPC = FP8 ? 16 : 8, CPR = D / EPC; /* elements per 16-byte chunk, chunks per padded row */
        const int ck = a.dqk / EPC, cv = a.dv / EPC;
        const unsigned char *kc = (const unsigned char *)a.kc, *vc = (const unsigned char *)a.vc;
        constexpr int ES = FP8 ? 1 : 2;
        for (int c = tid; c < BN * CPR; c += NT) { /* (row, chunk) by shifts; chunks past the dim idle */
            const int j = c / CPR, ch = c % CPR;
            if (ch >= ck) continue;
            const int64_t o = koff[st * BN + j];
            const void *src = kc + (o >= 0 ? (o + ch * EPC) * ES : 0);
            const uint32_t dst = FP8 ? ck_smem(sRaw + (st * 2 * BN + j) * D + ch * 16)
                                     : ck_smem(sK + (st * BN + j) * LD + ch * 8);
            ck_cp_async16(dst, src, o >= 0 ? 16 : 0);
        }
        for (int c = tid; c < BN * CPR; c += NT) {
            const int j = c / CPR, ch = c % CPR;
            if (ch >= cv) continue;
            const int64_t o = voff[st * BN + j];
            const void *src = vc + (o >= 0 ? (o + ch * EPC) * ES : 0);
            const uint32_t dst = FP8 ? ck_smem(sRaw + ((st * 2 + 1) * BN + j) * D + ch * 16)
                                     : ck_smem(sV + (st * BN + j) * LD + ch * 8);
            ck_cp_async16(dst, src, o >= 0 ? 16 : 0);
        }
        ck_cp_async_commit();
    };

    /* fp8: stage st's raw rows -> the 16-bit tile, times each row's scale (8 elements a step). */
    auto convert = [&](int st) {
        const bool e4m3 = a.kv_dtype == CK_E4M3;
#pragma unroll
        for (int w = 0; w < 2; w++) {
            const int c8 = (w ? a.dv : a.dqk) >> 3;
            const unsigned char *raw = sRaw + (st * 2 + w) * BN * D;
            const float *scl = (w ? vsc : ksc) + st * BN;
            T *dst = w ? sV : sK;
            for (int c = tid; c < BN * (D / 8); c += NT) {
                const int j = c / (D / 8), ch = c % (D / 8);
                if (ch >= c8) continue;
                const uint2 bytes = *(const uint2 *)(raw + j * D + ch * 8);
                const float s = scl[j];
                uint32_t packed[4];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const uint32_t word = e < 2 ? bytes.x : bytes.y;
                    const float2 f = ck_fp8x2_to_f32x2((uint16_t)(word >> ((e & 1) * 16)), e4m3);
                    packed[e] = ck_pack2<T>(f.x * s, f.y * s);
                }
                *(uint4 *)(dst + j * LD + ch * 8) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
            }
        }
    };

    float o_acc[NTO][4];
#pragma unroll
    for (int n = 0; n < NTO; n++) o_acc[n][0] = o_acc[n][1] = o_acc[n][2] = o_acc[n][3] = 0.0f;
    float m_r[2] = {-CK_INF, -CK_INF}, l_r[2] = {0.0f, 0.0f};

    /* A tile needs no per-element mask when every key exists and lies in every row's range: ranges grow
     * with the position, so that is [lo of the last token, hi of the first]. Absent keys are counted
     * by the barrier that publishes a tile's offsets (__syncthreads_or). */
    int64_t all_lo, all_hi;
    ck_key_range(pq0 + ntok - 1, S, a.causal, wl, wr, &all_lo, &unused);
    ck_key_range(pq0, S, a.causal, wl, wr, &unused, &all_hi);
    int next_absent = 0;
    int64_t blk_next = -1; /* block id of this thread's key in the tile after the current one */
    if (n_tiles > 0) {
        meta(kbeg, 0, bt_load(kbeg));
        if (n_tiles > 1) blk_next = bt_load(kbeg + BN);
        next_absent = __syncthreads_or(tid < BN && koff[tid] < 0);
        issue(0);
    }
    for (int64_t kt = 0; kt < n_tiles; kt++) {
        const int st = (int)(kt & 1);
        const int64_t k0 = kbeg + kt * BN;
        const bool has_next = kt + 1 < n_tiles;
        const bool interior = !next_absent && k0 >= all_lo && k0 + BN - 1 <= all_hi;
        if (has_next) {
            meta(k0 + BN, st ^ 1, blk_next);
            if (kt + 2 < n_tiles) blk_next = bt_load(k0 + 2 * BN);
        }
        /* next tile's offsets visible; every warp is done with its stage */
        next_absent = __syncthreads_or(has_next && tid < BN && koff[(st ^ 1) * BN + tid] < 0);
        if (has_next) {
            issue(st ^ 1);
            ck_cp_async_wait<1>();
        } else {
            ck_cp_async_wait<0>();
        }
        __syncthreads(); /* this tile has landed for every thread */
        const T *kb = sK, *vb = sV;
        if (FP8) {
            convert(st);
            __syncthreads();
        } else {
            kb += st * BN * LD;
            vb += st * BN * LD;
        }

        /* S = Q K^T for this warp's 16 rows x KPW keys. */
        float s[NTS][4];
#pragma unroll
        for (int n = 0; n < NTS; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            if (kk * 16 < a.dqk) {
                uint32_t af[4];
                ck_ldmatrix_x4(af, ck_smem(sQ + (wm * 16 + (lane & 15)) * LD + kk * 16 + (lane >> 4) * 8));
#pragma unroll
                for (int np = 0; np < NTS / 2; np++) {
                    uint32_t bf[4];
                    const int key = wn * KPW + np * 16 + (lane & 7) + (lane >> 4) * 8;
                    ck_ldmatrix_x4(bf, ck_smem(kb + key * LD + kk * 16 + ((lane >> 3) & 1) * 8));
                    ck_mma16816<T>(s[2 * np], af, bf[0], bf[1]);
                    ck_mma16816<T>(s[2 * np + 1], af, bf[2], bf[3]);
                }
            }
        }

        /* Scores in the contract's order (scale, soft-cap, ALiBi), masks, then the online softmax. */
        float mx[2] = {-CK_INF, -CK_INF};
#pragma unroll
        for (int n = 0; n < NTS; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = e >> 1, j = wn * KPW + n * 8 + 2 * t4 + (e & 1);
                const int64_t key = k0 + j;
                float x = s[n][e] * a.scale;
                if (a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
                if (a.alibi) x -= slope[r] * (float)(rpq[r] > key ? rpq[r] - key : key - rpq[r]);
                if (!interior && !(koff[st * BN + j] >= 0 && key >= rlo[r] && key <= rhi[r])) x = -CK_INF;
                s[n][e] = x;
                mx[r] = fmaxf(mx[r], s[n][e]);
            }
        float alpha[2], m_use[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
            mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
            const float m_new = fmaxf(m_r[r], mx[r]);
            m_use[r] = m_new == -CK_INF ? 0.0f : m_new; /* no key yet: e^{-inf - 0} = 0, never NaN */
            alpha[r] = __expf(m_r[r] - m_use[r]);
            m_r[r] = m_new;
        }
        float ls[2] = {0.0f, 0.0f};
#pragma unroll
        for (int n = 0; n < NTS; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float p = __expf(s[n][e] - m_use[e >> 1]);
                s[n][e] = p;
                ls[e >> 1] += p;
            }
#pragma unroll
        for (int r = 0; r < 2; r++) l_r[r] = l_r[r] * alpha[r] + ls[r];
#pragma unroll
        for (int n = 0; n < NTO; n++) {
            o_acc[n][0] *= alpha[0];
            o_acc[n][1] *= alpha[0];
            o_acc[n][2] *= alpha[1];
            o_acc[n][3] *= alpha[1];
        }

        /* O += P V: P's accumulator layout is the A operand's, two key n-tiles per k-step. */
#pragma unroll
        for (int k2 = 0; k2 < KPW / 16; k2++) {
            uint32_t pa[4];
            pa[0] = ck_pack2<T>(s[2 * k2][0], s[2 * k2][1]);
            pa[1] = ck_pack2<T>(s[2 * k2][2], s[2 * k2][3]);
            pa[2] = ck_pack2<T>(s[2 * k2 + 1][0], s[2 * k2 + 1][1]);
            pa[3] = ck_pack2<T>(s[2 * k2 + 1][2], s[2 * k2 + 1][3]);
            const int vkey = wn * KPW + k2 * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
            for (int np = 0; np < D / 16; np++) {
                if (np * 16 < a.dv) {
                    uint32_t bf[4];
                    ck_ldmatrix_x4_trans(bf, ck_smem(vb + vkey * LD + np * 16 + (lane >> 4) * 8));
                    ck_mma16816<T>(o_acc[2 * np], pa, bf[0], bf[1]);
                    ck_mma16816<T>(o_acc[2 * np + 1], pa, bf[2], bf[3]);
                }
            }
        }
        __syncthreads(); /* the stage and its offsets may be refilled */
    }

    float lsum[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        lsum[r] = l_r[r] + __shfl_xor_sync(0xffffffffu, l_r[r], 1);
        lsum[r] += __shfl_xor_sync(0xffffffffu, lsum[r], 2);
    }

    if (WN == 1) { /* each warp owns its rows: write straight from the accumulators */
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int row = wm * 16 + g + 8 * r;
            if (row >= nrows) continue;
#pragma unroll
            for (int n = 0; n < NTO; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int c = n * 8 + 2 * t4 + e;
                    if (c < a.dv) mma_emit<ROWS>(a, it, tok0, hbase, row, c, o_acc[n][2 * r + e], m_r[r], lsum[r]);
                }
            if (t4 == 0) mma_emit_lse<ROWS>(a, it, tok0, hbase, row, m_r[r], lsum[r]);
        }
        return;
    }

    /* Key-split warps: (m, l, acc) of each warp through shared memory, then one combine per element. */
    __syncthreads();
    float *cm = (float *)(smem + lay.combine), *cl = cm + WN * ROWS, *co = cl + WN * ROWS;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = wm * 16 + g + 8 * r;
        if (t4 == 0) {
            cm[wn * ROWS + row] = m_r[r];
            cl[wn * ROWS + row] = lsum[r];
        }
#pragma unroll
        for (int n = 0; n < NTO; n++) {
            co[(wn * ROWS + row) * D + n * 8 + 2 * t4] = o_acc[n][2 * r];
            co[(wn * ROWS + row) * D + n * 8 + 2 * t4 + 1] = o_acc[n][2 * r + 1];
        }
    }
    __syncthreads();
    for (int idx = tid; idx < nrows * a.dv; idx += NT) {
        const int row = idx / a.dv, c = idx - row * a.dv;
        float mm = -CK_INF;
#pragma unroll
        for (int w = 0; w < WN; w++) mm = fmaxf(mm, cm[w * ROWS + row]);
        float l = 0.0f, o = 0.0f;
        if (mm != -CK_INF) {
#pragma unroll
            for (int w = 0; w < WN; w++) {
                const float mw = cm[w * ROWS + row];
                if (mw == -CK_INF) continue; /* that warp saw no key: its acc holds nothing */
                const float f = expf(mw - mm);
                l += cl[w * ROWS + row] * f;
                o += co[(w * ROWS + row) * D + c] * f;
            }
        }
        mma_emit<ROWS>(a, it, tok0, hbase, row, c, o, mm, l);
        if (c == 0) mma_emit_lse<ROWS>(a, it, tok0, hbase, row, mm, l);
    }
}

#endif /* ATTNRT_ATTN_MMA_CUH */
