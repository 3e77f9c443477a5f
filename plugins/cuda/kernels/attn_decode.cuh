/* attn_decode.cuh — paged decode attention on the tensor cores, keys in the M dimension.
 *
 * A block is one (request, KV head, key split) row tile: up to 16 rows = (token, query head) pairs of
 * one KV head (decode: the GQA group of one token). With so few rows the products are computed
 * transposed, S^T = K Q^T and O^T = V^T P^T (mma m16n8k16: 16 keys or 16 dims x 8 rows x 16), so a
 * key costs half the mma, exp and softmax work of the 16-row prefill form (half of an n-tile of 8
 * rows is padding at GQA 4, against three quarters of an m-tile of 16). Q^T's fragments stay in
 * registers for the whole block. The wide-group kernels (attn_decode_wide_entry) take 32 rows of one
 * token's heads, their Q^T read from shared memory at each k-step.
 *
 * Each of the 4 warps streams its own tiles of KPW keys (warp w takes tiles w, w + 4, ...) through a
 * private ring of stages: a lane looks up one key's block (block ids a tile ahead). sm_90+ with a
 * 16-bit cache: one lane copies whole K and V rows with the bulk copy engine (attn_decode_bulk.cuh),
 * each stage completing on its mbarrier, rows padded by 16 bytes so ldmatrix reads them without bank
 * conflicts. sm_80, and fp8 caches everywhere (CK_DEC_BULK_KV): the warp publishes the tile's row addresses through shared memory and copies the rows in 16-byte
 * cp.async chunks, XOR-swizzled for the same reason. sm_90 at D 64, 16-bit D 128 / 256 and fp8 D 128 (TMAQ
 * below): one lane a block segment asks the tensor copy engine for the segment's rows as one box a 128-byte column block,
 * swizzled the same way. No block barrier in the key loop; the warps'
 * (m, l, acc) are combined through shared memory at the end.
 *
 * fp8 caches land raw and are widened in registers: K by ldmatrix of the bytes + one cvt per pair
 * (the QK^T product is f16 x f16, exact widening; Q in f16 times a power of two, qmul, keeping it in
 * range; Q's columns permuted within each 16 to match the bytes a lane holds), V by ldmatrix.trans +
 * one prmt per register to pair two keys of a dim. Scales: per tensor folded into the score scale
 * and the final output; per (block, KV head) K's scale multiplies the scores and V's the
 * probabilities, divided by the warp's running largest |V scale| so P stays <= 2^8 in f16.
 *
 * Softmax: scores in the log2 domain; a row's reference maximum only moves when some lane sees a
 * score more than CK_DEC_MAX_SLACK above it (a warp vote), so most tiles pay no shuffles and no rescale;
 * the row sums stay per lane until the end.
 *
 * Split-KV: each split writes its partial (o, lse); the last block of a row tile to finish (an
 * atomic count per row tile, reset by that block) merges them, so there is no second launch.
 */
#ifndef ATTNRT_ATTN_DECODE_CUH
#define ATTNRT_ATTN_DECODE_CUH

#include "attn_decode_bulk.cuh"
#include "attn_decode_timeline.cuh"
#include "attn_mma.cuh"
#include "split_merge.cuh"

/* How far (log2 units) a score may pass its row's reference maximum before the warp moves the maximum and rescales its
 * accumulators: P = 2^(s - m) < 2^8 (f16 / bf16 hold it at the same relative precision as below 1; the row sums and
 * accumulators are f32; the result is normalized by the row sum). Moving it on every new maximum rescaled on two thirds
 * of the tiles of a 16-row warp (MQA B64 x 4096: 64 multiplies, 16 shuffles and 4 exp2 a lane each time). */
#define CK_DEC_MAX_SLACK 8.0f

/* x over the 8 lanes of one lane % 4 (the transposed products' query column: one row's keys): its max, its sum */
__device__ __forceinline__ float ck_dec_col_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 8));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
}
__device__ __forceinline__ float ck_dec_col_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 4);
    x += __shfl_xor_sync(0xffffffffu, x, 8);
    return x + __shfl_xor_sync(0xffffffffu, x, 16);
}

__device__ __forceinline__ uint32_t ck_movmatrix_trans(uint32_t x)
{
    uint32_t y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
    return y;
}

/* The item of this block: from the plan's list, or derived from blockIdx.x (see ck_attn_args_t). */
__device__ __forceinline__ ck_work_item_t dec_item(const ck_attn_args_t &a)
{
    if (a.items) return a.items[blockIdx.x];
    ck_work_item_t it;
    const int ns = a.dec_splits, tile = (int)blockIdx.x / ns;
    it.split = (int)blockIdx.x - tile * ns;
    it.seq = tile / a.hkv;
    it.kv_head = tile - it.seq * a.hkv;
    it.q_first = 0;
    it.head_first = 0;
    it.head_count = a.group;
    it.num_splits = ns;
    it.part_index = ns > 1 ? tile * ns : -1;
    return it;
}

/* GEN: the general score path (soft-cap, ALiBi) is compiled in; without it the key loop holds only the
 * plain scale and the masks (a smaller loop body: fewer instruction-cache misses, fewer live values).
 * CPS, where the refill copies of tile j + STAGES - 1 (cp.async form) are issued in the key loop: 0 all
 * before the wait for tile j; 1 the addresses and half of the copy rounds there, the other half after
 * tile j's QK^T (their shared-memory address loads overlap the QK^T products instead of standing before
 * the wait); 4 as 1, each half's row addresses loaded from shared memory before its copies (one load
 * latency a half, not one a round): on the fp8 D 128 rows CPS 4 is 2-3.5 % faster than CPS 0, CPS 1 between them.
 * Built: CPS 0 everywhere, CPS 4 for fp8 D 128 (attn_decode.cu). */
/* L2W: each copy asks the L2 for a 256-byte fetch, so that an NHD cache's short fp8 rows (64 bytes at D 64)
 * come from DRAM with their neighbour heads' (read by those heads' blocks at about the same time). */
/* TMAQ: on sm_90, the tensor-copy form (attn_decode_bulk.cuh's ck_tma_load_4d): a tile's rows of each block
 * arrive as one box a block segment (a.kv_tma_rows rows: one instruction for 16 rows at block 16, not one a
 * row), swizzled by the copy engine as the cp.async form swizzles them, completing on the stage's mbarrier.
 * Rows of 64 bytes or of 128-byte column blocks (one box each), a.dqk = a.dv = D; built for D 64 (fp8 and
 * 16-bit: 4-25 % faster than the other forms), 16-bit D 128 / 256 (4-14 % faster than the bulk form) and fp8 D 128
 * at its own tile geometries TKPW x TSTAGES. Only loaded on sm_90+ (attn_decode.cu traps elsewhere). */
/* NWT: warps a block (0: CK_DEC_WARPS); attn_decode.cu builds 2-warp twins of the fp8 kernels (`_w2`), which the plan
 * picks where they halve the rounds of lockstep block starts. */
template <typename T, bool FP8, int D, int NR, bool E4M3, bool GEN, int CPS = 0, bool L2W = false, bool TMAQ = false,
          int TKPW = 0, int TSTAGES = 0, int NWT = 0>
__device__ __forceinline__ void attn_decode(const ck_attn_args_t &a, const ck_work_item_t &it)
{
    constexpr bool TMA = TMAQ && CK_DEC_BULK;                        /* boxes by the tensor copy engine */
    /* TKPW / TSTAGES: the tensor-copy form's own geometry (0: the default), the host's ck_dec_layout_tma */
    constexpr int NW = NWT ? NWT : CK_DEC_WARPS, KPW = TMA && TKPW ? TKPW : CK_DEC_KPW(D, FP8);
    constexpr int STAGES = TMA && TSTAGES ? TSTAGES : CK_DEC_STAGES(D, FP8);
    constexpr int ES = FP8 ? 1 : 2, ROWB = D * ES, CPR = ROWB / 16; /* bytes, 16-byte chunks a row */
    constexpr int MT = KPW / 16, MO = D / 16;                        /* key m-tiles a tile, dim m-tiles */
    constexpr bool BULK = CK_DEC_BULK && CK_DEC_BULK_KV(FP8) && !TMA; /* rows by the bulk copy engine (16-bit KV) */
    constexpr bool MB = BULK || TMA;                                 /* stages complete on mbarriers */
    /* WIDE (NR 4): the wide-group kernels' 32-row tile, one token's heads (the plan sends only one-token requests'
     * rows): one key range for every row, and Q^T's fragments read from shared memory at each k-step (in registers
     * they would be 64 more a thread beside the 128 of the accumulators) */
    constexpr int ROWS = NR * 8 > CK_SPLIT_ROWS ? NR * 8 : CK_SPLIT_ROWS;
    constexpr bool WIDE = ROWS > CK_SPLIT_ROWS;
    static_assert(NR == 1 || NR == 2 || (NR == 4 && ROWS == CK_DEC_WIDE_ROWS && !FP8), "row tiles: 8, 16 or 32 rows (16-bit)");
    static_assert(!TMA || ((ROWB == 64 || ROWB % 128 == 0) && CPS == 0 && !L2W), "tensor copies: 64-byte or 128-byte-block rows");
    constexpr int PITCH = BULK ? ROWB + 16 : ROWB;                   /* bytes between rows in a stage */
    constexpr int TILEB = 2 * KPW * PITCH;                           /* one stage: K rows then V rows */
    static_assert(KPW % 16 == 0 && KPW <= 32 && 32 % CPR == 0 && KPW % (32 / CPR) == 0, "tile shape");
    typedef typename ck_qk_type<T, FP8>::type TK; /* QK^T operands */
    typedef typename ck_qk_type<T, FP8>::type TP; /* PV operands: f16 for fp8 (V widened to f16), else T */

    extern __shared__ __align__(16) unsigned char dec_smem[];
    /* TMA: the swizzle is a function of address bits 4-9, so the ring starts on 1024 bytes (the host adds the slack) */
    unsigned char *smem = TMA ? dec_smem + ((1024u - (ck_smem(dec_smem) & 1023u)) & 1023u) : dec_smem;
    const ck_dec_layout_t lay = ck_dec_layout_geo(D, FP8, BULK, TMA, KPW, STAGES, NW, ROWS);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    unsigned char *ring = smem + lay.ring + warp * STAGES * TILEB;
    ulonglong2 *addr = (ulonglong2 *)(smem + lay.addr) + warp * KPW;
    float2 *scl = (float2 *)(smem + lay.scl) + warp * STAGES * KPW;
    uint2 *meta = (uint2 *)(smem + lay.meta) + warp * STAGES; /* {absent bits, largest |v scale| bits} */
    const uint32_t bars = ck_smem(smem + lay.bar) + warp * STAGES * 8; /* BULK: stage st's mbarrier at + 8 st */

    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t q_begin = rq.q_begin, L = rq.L, S = rq.S;
    const int hc = it.head_count;
    const int64_t ntok = min((int64_t)(ROWS / hc), L - it.q_first);
    const int nrows = (int)ntok * hc;
    const int kvh = it.kv_head, hbase = kvh * a.group + it.head_first;
    const int64_t tok0 = q_begin + it.q_first, pq0 = S - L + it.q_first;
    const int64_t wl = a.window_left, wr = a.window_right;

    int64_t kbeg, kend; /* splits cut at whole block tiles (NW x KPW keys) */
    ck_item_keys(pq0, ntok, S, a.causal, wl, wr, it.num_splits, it.split, NW * KPW, &kbeg, &kend, TMA ? a.kv_tma_rows : 1);
    /* this warp's tiles: keys kbeg + (warp + NW j) KPW .. + KPW - 1, j < n_j */
    const int64_t n_all = kend >= kbeg ? (kend - kbeg + KPW) / KPW : 0;
    const int n_j = n_all > warp ? (int)((n_all - warp + NW - 1) / NW) : 0;

    /* Block id of this lane's key (lane < KPW) of the warp's next tile to look up; (logical block, row)
     * advance by (STEP / bs, STEP % bs) a tile from one division at the start. */
    constexpr int64_t STEP = (int64_t)NW * KPW;
    const int64_t bsz = a.block_size, step_lb = STEP / bsz, step_r = STEP - step_lb * bsz;
    const int64_t key_first = kbeg + (int64_t)warp * KPW + lane;
    int64_t cur_lb = ck_div_bs(key_first, bsz), cur_r = key_first - cur_lb * bsz, cur_key = key_first;
    /* ck_ldg_now_s32: issued where it stands (two tiles before its use), not sunk by the compiler past the
     * cp.async wait to just before the copies that need it */
    auto bt_load = [&](int32_t &r_out) -> int32_t {
        const int64_t lb = cur_lb, key = cur_key;
        r_out = (int32_t)cur_r;
        cur_key += STEP;
        cur_lb += step_lb;
        cur_r += step_r;
        if (cur_r >= bsz) {
            cur_r -= bsz;
            cur_lb++;
        }
        int32_t b = -1;
        if (lane < KPW && key <= kend) /* the column: one 32 x 32 -> 64-bit product (offsets_fit32) */
            b = ck_ldg_now_s32(a.block_table + seq * a.bt_st[0] + (uint64_t)(uint32_t)lb * (uint32_t)a.bt_st[1]);
        return b;
    };
    const bool kpk = FP8 && a.k_scale && (a.ks_st[0] | a.ks_st[1]); /* per-key K / V scales */
    const bool vpk = FP8 && a.v_scale && (a.vs_st[0] | a.vs_st[1]);
    /* per-tensor fp8 scales, loaded now (issued where they stand): as plain loads at their uses they went out
     * behind the first tiles' copies and the key loop's start waited for them */
    const float k_scale0 = FP8 && a.k_scale && !kpk ? ck_ldg_now_f32(a.k_scale) : 1.0f;
    const float v_scale0 = FP8 && a.v_scale && !vpk ? ck_ldg_now_f32(a.v_scale) : 1.0f;
    /* A key's row: the cache's base + block x block bytes (one 32 x 32 -> 64-bit product) + row x row bytes
     * + head x head bytes (32-bit), the strides read from the argument's constant bank (no registers held
     * across the loop); the host sends this kernel only caches whose offsets fit these widths
     * (offsets_fit32 in cuda_attention.c); 64-bit products cost ~30 instructions a tile here, and the scale
     * addresses' products were issued (predicated off) even without per-key scales. */
    auto row_addr = [&](const void *base, const int64_t *cst, int32_t blk, int32_t r) -> uint64_t {
        return (uint64_t)(uintptr_t)base + (uint64_t)(uint32_t)blk * (uint32_t)(cst[0] * ES) +
               ((uint32_t)r * (uint32_t)(cst[1] * ES) + (uint32_t)kvh * (uint32_t)(cst[2] * ES));
    };
    auto scale_at = [&](const float *base, const int64_t *sst, int32_t blk) -> float {
        return base[(uint64_t)(uint32_t)blk * (uint32_t)sst[0] + (uint32_t)kvh * (uint32_t)sst[1]];
    };
    /* Row addresses of a tile into addr (0: absent), its scales into stage st, its absent bits and
     * largest |v scale| into meta[st]; then the copies into stage st. Warp-collective. part (cp.async
     * form): 0 everything and the commit; 1 the addresses and the first half of the copy rounds; 2 the
     * second half and the commit (the same st and real as the part 1 before it). */
    const int cp_ch = lane % CPR, cp_r0 = lane / CPR;
    const bool cp_k = cp_ch < a.dqk * ES / 16, cp_v = cp_ch < a.dv * ES / 16;
    auto sw = [](int row) -> int { return BULK ? 0 : CPR >= 8 ? row & 7 : (row >> 1) & 3; };
    /* TMA rows wider than 128 bytes land as column blocks of 128 bytes (a box is at most the 128-byte swizzle
     * span): a stage half is [CB][KPW rows][128 bytes]. Shared address of 16-byte chunk c of a row. */
    constexpr int CB = TMA && ROWB > 128 ? ROWB / 128 : 1, CBW = ROWB / CB;
    auto chunk_at = [&](uint32_t base, int row, int c) -> uint32_t {
        if (CB > 1) return base + (c >> 3) * (KPW * 128) + row * 128 + (((c & 7) ^ (row & 7)) * 16);
        return base + row * PITCH + ((c ^ sw(row)) * 16);
    };
    const uint32_t kbytes = a.dqk * ES, vbytes = a.dv * ES; /* BULK: bytes copied a K / V row */
    constexpr int ROUNDS = KPW / (32 / CPR); /* cp.async form: copy rounds of a tile */
    constexpr bool SPLIT = CPS != 0;         /* the refill in two parts (part 1, then part 2 after QK^T) */
    constexpr bool BATCH = CPS == 4;         /* a half's addresses loaded before its copies */
    uint32_t f_absent = 0;                   /* part 1 -> part 2: the tile's absent bits */
    /* copy rounds i0 .. i0 + n - 1 of a tile into kdst / vdst (absent rows and pad chunks zero-filled).
     * BATCH: the rows' addresses are loaded first (volatile shared loads, kept in this order: otherwise each
     * round's copies wait for their own address load), so the copies wait for one shared-load latency. */
    auto copy_rounds = [&](uint32_t kdst, uint32_t vdst, int i0, int n, uint32_t absent) {
        constexpr int NB = BATCH ? ROUNDS / 2 : 1;
        if (BATCH && n == NB) {
            uint64_t pk[NB], pv[NB];
#pragma unroll
            for (int i = 0; i < NB; i++)
                asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];\n"
                             : "=l"(pk[i]), "=l"(pv[i]) : "r"(ck_smem(addr + cp_r0 + (i0 + i) * (32 / CPR))) : "memory");
#pragma unroll
            for (int i = 0; i < NB; i++) {
                const int row = cp_r0 + (i0 + i) * (32 / CPR);
                const uint32_t off = row * ROWB + ((cp_ch ^ sw(row)) * 16);
                const bool gone = (absent >> row) & 1u;
                ck_cp_async16_zf<L2W>(kdst + off, (const void *)(uintptr_t)(pk[i] + cp_ch * 16), gone || !cp_k);
                ck_cp_async16_zf<L2W>(vdst + off, (const void *)(uintptr_t)(pv[i] + cp_ch * 16), gone || !cp_v);
            }
            return;
        }
#pragma unroll
        for (int i = i0; i < i0 + n; i++) {
            const int row = cp_r0 + i * (32 / CPR);
            const ulonglong2 p = addr[row];
            const uint32_t off = row * ROWB + ((cp_ch ^ sw(row)) * 16);
            const bool gone = (absent >> row) & 1u;
            ck_cp_async16_zf<L2W>(kdst + off, (const void *)(uintptr_t)(p.x + cp_ch * 16), gone || !cp_k);
            ck_cp_async16_zf<L2W>(vdst + off, (const void *)(uintptr_t)(p.y + cp_ch * 16), gone || !cp_v);
        }
    };
    auto fetch = [&](int st, int jt, int32_t blk, int32_t r, bool real, int part) {
        if (part == 2) {
            if (real) {
                const uint32_t kdst = ck_smem(ring + st * TILEB), vdst = kdst + KPW * PITCH;
                copy_rounds(kdst, vdst, ROUNDS / 2, ROUNDS / 2, f_absent);
            }
            ck_cp_async_commit();
            __syncwarp(); /* addr is rewritten by the next call */
            return;
        }
        __syncwarp(); /* every lane is done with stage st (and its scales) from the last tile */
        if (real) {
            uint64_t kp = 0, vp = 0;
            float ksv = 1.0f, vsv = 0.0f;
            const int64_t key = kbeg + (int64_t)(warp + NW * jt) * KPW + lane;
            if (lane < KPW && key <= kend && blk >= 0 && blk < a.num_blocks) {
                kp = TMA ? 1u : row_addr(a.kc, a.kc_st, blk, r); /* TMA: only present / absent */
                vp = TMA ? 1u : row_addr(a.vc, a.vc_st, blk, r);
                if (kpk) ksv = scale_at(a.k_scale, a.ks_st, blk);
                if (vpk) vsv = scale_at(a.v_scale, a.vs_st, blk);
            }
            const uint32_t absent = __ballot_sync(0xffffffffu, kp == 0) & (KPW == 32 ? ~0u : (1u << KPW) - 1u);
            if (lane < KPW && FP8) scl[st * KPW + lane] = make_float2(ksv, vsv);
            uint32_t vmax = 0;
            if (vpk) vmax = __reduce_max_sync(0xffffffffu, __float_as_uint(fabsf(vsv)));
            if (lane == 0) meta[st] = make_uint2(absent, vmax);
            const uint32_t kdst = ck_smem(ring + st * TILEB), vdst = kdst + KPW * PITCH;
            if (TMA) {
                /* one K and one V box a block segment, issued by the segment's first lane; an absent segment (past
                 * the keys, or a block id outside the cache) reads a block outside the tensor: zeros, still counted */
                const uint32_t bar = bars + st * 8;
                if (ck_elect_one()) ck_mbar_arrive_expect_tx(bar, 2u * KPW * ROWB);
                __syncwarp();
                if (lane < KPW && (lane & (a.kv_tma_rows - 1)) == 0) {
                    const int32_t cb = kp ? blk : (int32_t)a.num_blocks, cr = kp ? r : 0; /* block, row */
                    const int32_t c1 = a.kv_tma_hnd ? cr : kvh, c2 = a.kv_tma_hnd ? kvh : cr;  /* maps by stride order */
#pragma unroll
                    for (int x = 0; x < CB; x++) { /* column block x: elements x CBW / ES .. */
                        const uint32_t off = x * KPW * CBW + lane * CBW;
                        ck_tma_load_4d(kdst + off, &a.tm_k, x * CBW / ES, c1, c2, cb, bar);
                        ck_tma_load_4d(vdst + off, &a.tm_v, x * CBW / ES, c1, c2, cb, bar);
                    }
                }
            } else if (BULK) {
                /* each key's lane puts its {K, V} row addresses in its K row's pad bytes; an absent key's
                 * V row is zeroed (its probability is 0, but 0 times stale bits could be NaN); then one
                 * lane expects the stage's bytes and issues a K and a V row copy a present key */
                if (lane < KPW) {
                    asm volatile("st.shared.v2.u64 [%0], {%1, %2};\n" ::"r"(kdst + lane * PITCH + ROWB), "l"(kp), "l"(vp)
                                 : "memory");
                    if (kp == 0)
#pragma unroll
                        for (int c = 0; c < CPR; c++)
                            asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(vdst + lane * PITCH + c * 16), "r"(0)
                                         : "memory");
                    if (kp == 0) ck_fence_proxy_async_smem(); /* before a later copy into this row */
                }
                __syncwarp();
                if (ck_elect_one()) {
                    const uint32_t bar = bars + st * 8;
                    ck_mbar_arrive_expect_tx(bar, (uint32_t)__popc(~absent & (KPW == 32 ? ~0u : (1u << KPW) - 1u)) * (kbytes + vbytes));
                    if (absent == 0 && kbytes == ROWB && vbytes == ROWB) { /* every key present, whole rows */
                        const unsigned char *stage = ring + st * TILEB;
#pragma unroll
                        for (int r0 = 0; r0 < KPW; r0 += 8) { /* 8 rows' addresses loaded, then their copies */
                            ulonglong2 p[8];
#pragma unroll
                            for (int i = 0; i < 8; i++) p[i] = *(const ulonglong2 *)(stage + (r0 + i) * PITCH + ROWB);
#pragma unroll
                            for (int i = 0; i < 8; i++)
                                ck_bulk_g2s_kv_row<ROWB>(kdst + (r0 + i) * PITCH, vdst + (r0 + i) * PITCH, p[i].x, p[i].y, bar);
                        }
                    } else
#pragma unroll 4
                    for (int row = 0; row < KPW; row++) {
                        uint64_t pk, pv;
                        asm volatile("ld.shared.v2.u64 {%0, %1}, [%2];\n" : "=l"(pk), "=l"(pv) : "r"(kdst + row * PITCH + ROWB) : "memory");
                        const uint32_t here = ((absent >> row) & 1u) ^ 1u;
                        ck_bulk_g2s(kdst + row * PITCH, pk, kbytes, bar, here);
                        ck_bulk_g2s(vdst + row * PITCH, pv, vbytes, bar, here);
                    }
                }
            } else {
                if (lane < KPW) addr[lane] = make_ulonglong2(kp, vp);
                __syncwarp();
                f_absent = absent;
                copy_rounds(kdst, vdst, 0, ROUNDS / 2, absent);
                if (part == 0) copy_rounds(kdst, vdst, ROUNDS / 2, ROUNDS / 2, absent);
            }
        }
        if (part == 1) return; /* part 2 issues the rest and commits */
        if (!MB) ck_cp_async_commit();
        __syncwarp(); /* addr / the pad bytes are rewritten by the next call */
    };
    static_assert(CPS == 0 || ((CPS == 1 || CPS == 4) && !MB), "refill split: the cp.async form only");
    static_assert(!L2W || !BULK, "the L2 fetch size: the cp.async form only");
    static_assert(BULK || ROUNDS % 2 == 0, "the cp.async form issues its copy rounds in two halves");

    /* Pipeline prologue, before Q is read (a block's start is a chain of round trips: request -> block ids
     * -> first tiles; Q's loads go out between them): the block ids of tiles 0 .. STAGES (each loaded
     * two tiles before its copies are issued), then Q's raw elements, then tiles 0 .. STAGES-2 in flight. */
    int32_t b0[STAGES - 1], r0[STAGES - 1];
#pragma unroll
    for (int j = 0; j < STAGES - 1; j++) b0[j] = bt_load(r0[j]);
    if (MB) {
        /* the warp's stage barriers (one arrival each: the issuing lane's); K columns past dqk are never
         * copied but ldmatrix reads them (times Q's zeros): zero them once */
        if (lane == 0) {
#pragma unroll
            for (int i = 0; i < STAGES; i++) ck_mbar_init(bars + i * 8, 1);
            ck_mbar_init_fence();
        }
        if (BULK && (int)kbytes < ROWB)
            for (int i = lane; i < STAGES * KPW * CPR; i += 32) {
                const int row = i / CPR, c = i - row * CPR, sti = row / KPW;
                if (c * 16 >= (int)kbytes)
                    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(ck_smem(ring + sti * TILEB + (row - sti * KPW) * PITCH + c * 16)), "r"(0)
                                 : "memory");
            }
        __syncwarp();
    }
    int32_t r_n, r_nn;
    int32_t blk_n = bt_load(r_n), blk_nn = bt_load(r_nn);

    /* Q^T fragments (B operand, k = dims, n = rows): row nr * 8 + g, dims of k-step kk: fp8 4t4 .. 4t4+3
     * (K's byte order), else 2t4, 2t4+1 and 2t4+8, 2t4+9. Zeros past the rows and dqk. The plan sends
     * only f16 / bf16 queries here (mma_eligible), so the raw 16-bit elements are all loaded first (no
     * per-element dtype switch between a load and its use) and widened after the prologue's copies. */
    uint16_t qraw[NR][MO][4];
    const uint16_t *q16 = (const uint16_t *)a.q;
#pragma unroll
    for (int nr = 0; nr < (WIDE ? 0 : NR); nr++) {
        const int row = nr * 8 + g;
        const int64_t qbase = (tok0 + row / hc) * a.q_st[0] + (int64_t)(hbase + row % hc) * a.q_st[1];
#pragma unroll
        for (int kk = 0; kk < MO; kk++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int d = kk * 16 + (FP8 ? 4 * t4 + e : 2 * t4 + (e & 1) + (e >> 1) * 8);
                qraw[nr][kk][e] = row < nrows && d < a.dqk ? q16[qbase + d] : (uint16_t)0;
            }
    }
    CK_TL_MARK_AFTER(CK_TL_TABLE, b0[0]);
#pragma unroll
    for (int j = 0; j < STAGES - 1; j++) fetch(j, j, b0[j], r0[j], j < n_j, 0);
    if (!WIDE) CK_TL_MARK_AFTER(CK_TL_Q, qraw[0][0][0]);

    /* WIDE: Q's rows into shared memory while the first tiles are on their way, 16-byte chunks swizzled by row (chunk
     * c of row r at c ^ (r & 7), as the ring's), so that the k-steps' ldmatrix reads are conflict-free; zeros past the
     * rows and dqk. Every warp reads every row: one block barrier. */
    const uint32_t qs = ck_smem(smem + lay.q);
    if (WIDE) {
        const bool vec = (((uintptr_t)a.q | (uintptr_t)((a.q_st[0] | a.q_st[1]) * 2)) & 15u) == 0 && a.dqk % 8 == 0;
        for (int i = tid; i < ROWS * CPR; i += NW * 32) {
            const int row = i / CPR, c = i - row * CPR;
            uint32_t v[4] = {0u, 0u, 0u, 0u};
            if (row < nrows && c * 8 < a.dqk) {
                const uint16_t *src = q16 + (tok0 + row / hc) * a.q_st[0] + (int64_t)(hbase + row % hc) * a.q_st[1] + c * 8;
                if (vec) {
                    const uint4 x = __ldg((const uint4 *)src);
                    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
                } else {
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        if (c * 8 + e < a.dqk) v[e >> 1] |= (uint32_t)src[e] << (16 * (e & 1));
                }
            }
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(qs + row * ROWB + ((c ^ (row & 7)) * 16)), "r"(v[0]),
                         "r"(v[1]), "r"(v[2]), "r"(v[3])
                         : "memory");
        }
        __syncthreads();
    }

    const bool q_bf16 = a.q_dtype == CK_BF16;
    float qv[NR][MO][4];
#pragma unroll
    for (int nr = 0; nr < (WIDE ? 0 : NR); nr++)
#pragma unroll
        for (int kk = 0; kk < MO; kk++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                qv[nr][kk][e] = q_bf16 ? ck_bf16_bits_to_f32(qraw[nr][kk][e]) : ck_f16_bits_to_f32(qraw[nr][kk][e]);
    /* fp8: Q times qmul, a power of two bringing the largest finite |q| to [2^13, 2^14) (the warp holds
     * all of Q, so one reduction); scores are divided by it again through the scale. */
    float qmul = 1.0f;
    if (FP8) {
        uint32_t my_exp = 0;
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int kk = 0; kk < MO; kk++)
#pragma unroll
                for (int e = 0; e < 4; e++) my_exp = max(my_exp, ck_finite_exp(qv[nr][kk][e]));
        qmul = ck_fp8_qmul(__reduce_max_sync(0xffffffffu, my_exp));
    }
    uint32_t qf[NR][MO][2];
#pragma unroll
    for (int nr = 0; nr < (WIDE ? 0 : NR); nr++)
#pragma unroll
        for (int kk = 0; kk < MO; kk++) {
            qf[nr][kk][0] = ck_pack2<TK>(qv[nr][kk][0] * qmul, qv[nr][kk][1] * qmul);
            qf[nr][kk][1] = ck_pack2<TK>(qv[nr][kk][2] * qmul, qv[nr][kk][3] * qmul);
        }

    /* This lane's rows nr * 8 + 2t4 + c: position and key range (WIDE: one token, one range; rows past nrows are
     * zero queries whose results are never written), ALiBi slope. */
    constexpr int RN = WIDE ? 1 : NR, RC = WIDE ? 1 : 2;
    int64_t rlo[RN][RC], rhi[RN][RC], rpq[RN][RC];
#pragma unroll
    for (int nr = 0; nr < RN; nr++)
#pragma unroll
        for (int c = 0; c < RC; c++) {
            const int row = nr * 8 + 2 * t4 + c;
            rpq[nr][c] = pq0 + row / hc;
            ck_key_range(rpq[nr][c], S, a.causal, wl, wr, &rlo[nr][c], &rhi[nr][c]);
            if (!WIDE && row >= nrows) {
                rlo[nr][c] = 1;
                rhi[nr][c] = 0;
            }
        }
    float slope[NR][2];
#pragma unroll
    for (int nr = 0; nr < NR; nr++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
            const int row = nr * 8 + 2 * t4 + c;
            slope[nr][c] = GEN && a.alibi && row < nrows ? a.alibi[(int64_t)(hbase + row % hc) * a.alibi_st] : 0.0f;
        }
    int64_t all_lo, all_hi, unused; /* a tile inside [all_lo, all_hi] with every key present needs no mask */
    ck_key_range(pq0 + ntok - 1, S, a.causal, wl, wr, &all_lo, &unused);
    ck_key_range(pq0, S, a.causal, wl, wr, &unused, &all_hi);
    const bool plain = !GEN || (!(a.softcap > 0.0f) && !a.alibi);
    float sc_mul = a.scale / qmul; /* per tensor K scale folded in */
    sc_mul *= k_scale0;
    const float scale2 = sc_mul * CK_LOG2E;
    constexpr bool e4m3 = E4M3; /* a template flag: one cvt form in the hot loop, not a select of two */

    float o[MO][NR][4];
#pragma unroll
    for (int m = 0; m < MO; m++)
#pragma unroll
        for (int nr = 0; nr < NR; nr++) o[m][nr][0] = o[m][nr][1] = o[m][nr][2] = o[m][nr][3] = 0.0f;
    float m_r[NR][2], l_r[NR][2];
#pragma unroll
    for (int nr = 0; nr < NR; nr++) m_r[nr][0] = m_r[nr][1] = -CK_INF, l_r[nr][0] = l_r[nr][1] = 0.0f;
    float vu = 0.0f; /* per-key V scales: the warp's running largest |v scale| (o = vu * acc) */

    int st = 0, st_f = STAGES - 1;
    uint32_t phase = 0; /* BULK: bit s = the parity of stage s's next phase to wait for */
    CK_TL_MARK(CK_TL_LOOP_START);
    for (int j = 0; j < n_j; j++) {
        /* refill the stage consumed last iteration with tile j + STAGES - 1 (CPS 1: half of it here);
         * look up tile j + STAGES + 1 */
        const int32_t blk_f = blk_n, r_f = r_n;
        const bool real_f = j + STAGES - 1 < n_j;
        fetch(st_f, j + STAGES - 1, blk_f, r_f, real_f, SPLIT ? 1 : 0);
        blk_n = blk_nn;
        r_n = r_nn;
        blk_nn = bt_load(r_nn);
        if (MB) {
            ck_mbar_wait(bars + st * 8, (phase >> st) & 1u);
            phase ^= 1u << st;
        } else if (CPS == 0) {
            ck_cp_async_wait<STAGES - 1>();
        } else {
            ck_cp_async_wait<STAGES - 2>(); /* the refill's group is not committed yet */
        }
        __syncwarp();
        CK_TL_MARK_TILE(j, n_j);

        const int64_t k0 = kbeg + (int64_t)(warp + NW * j) * KPW;
        const uint2 mt_info = meta[st];
        const bool interior = mt_info.x == 0u && k0 >= all_lo && k0 + KPW - 1 <= all_hi;
        const uint32_t rbase = ck_smem(ring + st * TILEB), vbase = rbase + KPW * PITCH;
        if (TMA && mt_info.x != 0u) {
            /* absent keys' V rows: a box from a present block brought its rows past the keys too (stale
             * cache bytes, possibly NaN, times a probability of 0); zero them, before the next box into
             * them (proxy fence) */
            for (int i = lane; i < KPW * CPR; i += 32)
                if ((mt_info.x >> (i / CPR)) & 1u)
                    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(chunk_at(vbase, i / CPR, i % CPR)), "r"(0)
                                 : "memory");
            ck_fence_proxy_async_smem();
            __syncwarp();
        }

        /* S^T = K Q^T: per m-tile of 16 keys, ldmatrix.x4 of 16 key rows x 32 bytes (fp8: two k-steps,
         * bytes of 4t4..4t4+3 per lane widened by two cvt each; 16-bit: one k-step). */
        float s[MT][NR][4];
        if constexpr (WIDE) {
            /* Q^T's B fragments of k-step cp for all 32 rows by two ldmatrix.x4 (matrices: rows 16 pr + 0-7 / 8-15 x
             * dims 16 cp + 0-7 / 8-15), then every key m-tile's products with them */
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nr = 0; nr < NR; nr++) s[mt][nr][0] = s[mt][nr][1] = s[mt][nr][2] = s[mt][nr][3] = 0.0f;
            const int qrow = (lane >> 4) * 8 + (lane & 7), qsel = (lane >> 3) & 1;
#pragma unroll
            for (int cp = 0; cp < CPR / 2; cp++) {
                uint32_t qb[NR][2];
#pragma unroll
                for (int pr = 0; pr < NR / 2; pr++) {
                    uint32_t r4[4];
                    ck_ldmatrix_x4(r4, qs + (pr * 16 + qrow) * ROWB + (((cp * 2 + qsel) ^ (qrow & 7)) * 16));
                    qb[2 * pr][0] = r4[0], qb[2 * pr][1] = r4[1], qb[2 * pr + 1][0] = r4[2], qb[2 * pr + 1][1] = r4[3];
                }
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    const int krow = mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
                    uint32_t kr[4];
                    ck_ldmatrix_x4(kr, chunk_at(rbase, krow, cp * 2 + (lane >> 4)));
#pragma unroll
                    for (int nr = 0; nr < NR; nr++) ck_mma16816<T>(s[mt][nr], kr, qb[nr][0], qb[nr][1]);
                }
            }
        } else {
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                for (int nr = 0; nr < NR; nr++) s[mt][nr][0] = s[mt][nr][1] = s[mt][nr][2] = s[mt][nr][3] = 0.0f;
                const int krow = mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
                for (int cp = 0; cp < CPR / 2; cp++) {
                    uint32_t kr[4];
                    ck_ldmatrix_x4(kr, chunk_at(rbase, krow, cp * 2 + (lane >> 4)));
                    if (FP8) {
#pragma unroll
                        for (int h = 0; h < 2; h++) { /* k-step 2cp + h: kr[2h] keys 0-7, kr[2h+1] keys 8-15 */
                            uint32_t af[4]; /* a0 / a2: keys 0-7 lo / hi pair, a1 / a3: keys 8-15 */
                            ck_fp8x4_to_h2x2<e4m3>(kr[2 * h], af[0], af[2]);
                            ck_fp8x4_to_h2x2<e4m3>(kr[2 * h + 1], af[1], af[3]);
#pragma unroll
                            for (int nr = 0; nr < NR; nr++)
                                ck_mma16816<__half>(s[mt][nr], af, qf[nr][cp * 2 + h][0], qf[nr][cp * 2 + h][1]);
                        }
                    } else {
#pragma unroll
                        for (int nr = 0; nr < NR; nr++) ck_mma16816<T>(s[mt][nr], kr, qf[nr][cp][0], qf[nr][cp][1]);
                    }
                }
            }
        }
        if (SPLIT) fetch(st_f, j + STAGES - 1, blk_f, r_f, real_f, 2);

        /* Scores (log2 domain) and the row maxima. s[mt][nr][e]: key mt*16 + g + 8(e>>1), row nr*8 + 2t4 + (e&1). */
        float kscl[MT][2];
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) kscl[mt][h] = kpk ? scl[st * KPW + mt * 16 + g + 8 * h].x : 1.0f;
        if (plain && interior) {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nr = 0; nr < NR; nr++)
#pragma unroll
                    for (int e = 0; e < 4; e++) s[mt][nr][e] *= scale2 * kscl[mt][e >> 1];
        } else {
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
#pragma unroll
                for (int nr = 0; nr < NR; nr++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int jk = mt * 16 + g + 8 * (e >> 1), c = e & 1, rn = WIDE ? 0 : nr, rc = WIDE ? 0 : c;
                        const int64_t key = k0 + jk, pq = rpq[rn][rc];
                        float x = s[mt][nr][e] * (sc_mul * kscl[mt][e >> 1]);
                        if (GEN && a.softcap > 0.0f) x = a.softcap * tanhf(x / a.softcap);
                        if (GEN && a.alibi) x -= slope[nr][c] * (float)(pq > key ? pq - key : key - pq);
                        x *= CK_LOG2E;
                        if (!interior && (((mt_info.x >> jk) & 1u) || key < rlo[rn][rc] || key > rhi[rn][rc])) x = -CK_INF;
                        s[mt][nr][e] = x;
                    }
        }
        float lm[NR][2];
        bool up = false;
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int c = 0; c < 2; c++) {
                float x = -CK_INF;
#pragma unroll
                for (int mt = 0; mt < MT; mt++) x = fmaxf(x, fmaxf(s[mt][nr][c], s[mt][nr][c + 2]));
                lm[nr][c] = x;
                up |= x > m_r[nr][c] + CK_DEC_MAX_SLACK;
            }
        /* per-key V scales: a tile whose largest |v scale| passes the warp's running one rescales acc */
        float ofac = 1.0f;
        if (vpk) {
            const float tv = __uint_as_float(mt_info.y);
            if (tv > vu) { /* warp-uniform */
                ofac = vu / tv;
                vu = tv;
            }
        }
        if (__any_sync(0xffffffffu, up) || ofac != 1.0f) {
            float alpha[NR][2];
#pragma unroll
            for (int nr = 0; nr < NR; nr++)
#pragma unroll
                for (int c = 0; c < 2; c++) {
                    const float m_new = fmaxf(m_r[nr][c], ck_dec_col_max(lm[nr][c]));
                    const float u_old = m_r[nr][c] == -CK_INF ? 0.0f : m_r[nr][c];
                    const float u_new = m_new == -CK_INF ? 0.0f : m_new;
                    alpha[nr][c] = m_r[nr][c] == -CK_INF ? 0.0f : ck_exp2(u_old - u_new);
                    m_r[nr][c] = m_new;
                    l_r[nr][c] *= alpha[nr][c];
                }
#pragma unroll
            for (int m = 0; m < MO; m++)
#pragma unroll
                for (int nr = 0; nr < NR; nr++) {
                    o[m][nr][0] *= alpha[nr][0] * ofac;
                    o[m][nr][1] *= alpha[nr][1] * ofac;
                    o[m][nr][2] *= alpha[nr][0] * ofac;
                    o[m][nr][3] *= alpha[nr][1] * ofac;
                }
        }
        float mu[NR][2];
#pragma unroll
        for (int nr = 0; nr < NR; nr++)
#pragma unroll
            for (int c = 0; c < 2; c++) mu[nr][c] = m_r[nr][c] == -CK_INF ? 0.0f : m_r[nr][c];
        float vw[MT][2];
        const float vinv = vu > 0.0f ? 1.0f / vu : 0.0f; /* vu 0: every v scale so far is 0 */
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++) vw[mt][h] = vpk ? scl[st * KPW + mt * 16 + g + 8 * h].y * vinv : 1.0f;

        /* P, then O^T += V^T P^T per m-tile of 16 keys: P^T's B fragments by movmatrix of P's packed
         * accumulators (key-major -> row-major). */
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            uint32_t pb[NR][2];
#pragma unroll
            for (int nr = 0; nr < NR; nr++) {
                float p[4];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    p[e] = ck_exp2(s[mt][nr][e] - mu[nr][e & 1]);
                    l_r[nr][e & 1] += p[e];
                }
                if (vpk) {
                    p[0] *= vw[mt][0];
                    p[1] *= vw[mt][0];
                    p[2] *= vw[mt][1];
                    p[3] *= vw[mt][1];
                }
                pb[nr][0] = ck_movmatrix_trans(ck_pack2<TP>(p[0], p[1]));
                pb[nr][1] = ck_movmatrix_trans(ck_pack2<TP>(p[2], p[3]));
            }
            if (FP8) {
                /* ldmatrix.trans of raw V: lane (g, t4) gets bytes 2g, 2g+1 of keys 2t4, 2t4+1; prmt pairs
                 * the keys per dim: A rows g / g+8 of m-tile c are dims c*16 + 2g / 2g+1. */
                const int vrow = mt * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
                for (int cp = 0; cp < CPR / 2; cp++) {
                    uint32_t vr[4];
                    ck_ldmatrix_x4_trans(vr, chunk_at(vbase, vrow, cp * 2 + (lane >> 4)));
#pragma unroll
                    for (int h = 0; h < 2; h++) { /* dim chunk 2cp + h: vr[2h] keys 0-7, vr[2h+1] keys 8-15 */
                        uint32_t p0, p1;
                        asm("prmt.b32 %0, %1, 0, 0x3120;" : "=r"(p0) : "r"(vr[2 * h]));
                        asm("prmt.b32 %0, %1, 0, 0x3120;" : "=r"(p1) : "r"(vr[2 * h + 1]));
                        uint32_t af[4]; /* a0 / a1: keys 0-7 dims 2g / 2g+1, a2 / a3: keys 8-15 */
                        ck_fp8x4_to_h2x2<e4m3>(p0, af[0], af[1]);
                        ck_fp8x4_to_h2x2<e4m3>(p1, af[2], af[3]);
#pragma unroll
                        for (int nr = 0; nr < NR; nr++) ck_mma16816<__half>(o[cp * 2 + h][nr], af, pb[nr][0], pb[nr][1]);
                    }
                }
            } else {
                /* ldmatrix.trans of 16-bit V: matrices (keys 0-7, dims 0-7 / 8-15), (keys 8-15, ...) */
                const int vrow = mt * 16 + (lane & 7) + (lane >> 4) * 8;
#pragma unroll
                for (int m = 0; m < MO; m++) {
                    uint32_t vr[4];
                    ck_ldmatrix_x4_trans(vr, chunk_at(vbase, vrow, m * 2 + ((lane >> 3) & 1)));
#pragma unroll
                    for (int nr = 0; nr < NR; nr++) ck_mma16816<T>(o[m][nr], vr, pb[nr][0], pb[nr][1]);
                }
            }
        }
        st = st + 1 == STAGES ? 0 : st + 1;
        st_f = st_f + 1 == STAGES ? 0 : st_f + 1;
    }
    CK_TL_MARK_LOOP_END;
    if (MB) { /* every issued copy was waited for: the barriers' memory may be reused */
        __syncwarp();
        if (lane == 0)
#pragma unroll
            for (int i = 0; i < STAGES; i++) ck_mbar_inval(bars + i * 8);
    } else {
        ck_cp_async_wait<0>(); /* only empty groups can be left; the ring is reused below */
    }

    /* Combine the warps: m (log2 domain), l, acc through shared memory, then one thread an element. */
    float lsum[NR][2];
#pragma unroll
    for (int nr = 0; nr < NR; nr++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
            lsum[nr][c] = ck_dec_col_sum(l_r[nr][c]);
        }
    float ofin = 1.0f; /* the V scale still owed to the accumulators */
    if (FP8) ofin = vpk ? vu : v_scale0;
    __syncthreads();
    float *cm = (float *)(smem + lay.combine), *cl = cm + NW * ROWS, *co = cl + NW * ROWS;
#pragma unroll
    for (int nr = 0; nr < NR; nr++)
#pragma unroll
        for (int c = 0; c < 2; c++) {
            const int row = nr * 8 + 2 * t4 + c;
            if (g == 0) {
                cm[warp * ROWS + row] = m_r[nr][c];
                cl[warp * ROWS + row] = lsum[nr][c];
            }
#pragma unroll
            for (int m = 0; m < MO; m++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int d = FP8 ? m * 16 + 2 * g + h : m * 16 + g + 8 * h;
                    co[(warp * ROWS + row) * D + d] = o[m][nr][2 * h + c] * ofin;
                }
        }
    __syncthreads();
    for (int idx = tid; idx < nrows * a.dv; idx += NW * 32) {
        const int row = idx / a.dv, c = idx - row * a.dv;
        float mm = -CK_INF;
#pragma unroll
        for (int w = 0; w < NW; w++) mm = fmaxf(mm, cm[w * ROWS + row]);
        float l = 0.0f, acc = 0.0f;
        if (mm != -CK_INF) {
#pragma unroll
            for (int w = 0; w < NW; w++) {
                const float mw = cm[w * ROWS + row];
                if (mw == -CK_INF) continue; /* that warp saw no key: its acc holds nothing */
                const float f = exp2f(mw - mm);
                l += cl[w * ROWS + row] * f;
                acc += co[(w * ROWS + row) * D + c] * f;
            }
        }
        mma_emit<ROWS>(a, it, tok0, hbase, row, c, acc, mm * CK_LN2, l);
        if (c == 0) mma_emit_lse<ROWS>(a, it, tok0, hbase, row, mm * CK_LN2, l);
    }

    /* Split-KV: the last block of the row tile to get here merges the partials and resets the count. */
    if (it.num_splits > 1 && a.split_count) {
        __shared__ int last;
        __threadfence(); /* this block's partials, device-wide, before its arrival is counted */
        __syncthreads();
        if (tid == 0) last = atomicAdd(a.split_count + it.part_index, 1u) == (uint32_t)it.num_splits - 1u;
        __syncthreads();
        if (!last) return;
        __threadfence(); /* the other splits' partials are read after their arrivals */
        ck_split_merge_rows<ROWS>(a, it, (float *)smem);
        if (tid == 0) a.split_count[it.part_index] = 0u;
    }
}

/* NR = 1 (rows <= 8: one n-tile, every GQA group up to 8 at one token) or 2, and the fp8 format; picked
 * per block. CPS (the refill schedule) applies to the one-n-tile form only (every decode row tile of a
 * GQA group up to 8 at one token); the 16-row form keeps CPS 0. */
template <typename T, bool FP8, int D, bool GEN, int CPS, bool L2W, bool TMA, int TKPW, int TSTAGES, int NWT>
__device__ __forceinline__ void attn_decode_rows(const ck_attn_args_t &a, const ck_work_item_t &it, bool one_tile, bool e5)
{
    if (one_tile) {
        if (e5)
            attn_decode<T, FP8, D, 1, false, GEN, CPS, L2W, TMA, TKPW, TSTAGES, NWT>(a, it);
        else
            attn_decode<T, FP8, D, 1, FP8, GEN, CPS, L2W, TMA, TKPW, TSTAGES, NWT>(a, it);
    } else {
        if (e5)
            attn_decode<T, FP8, D, 2, false, GEN, 0, L2W, TMA, TKPW, TSTAGES, NWT>(a, it);
        else
            attn_decode<T, FP8, D, 2, FP8, GEN, 0, L2W, TMA, TKPW, TSTAGES, NWT>(a, it);
    }
}

/* The score path (general or plain) per launch, then the rows and format per block. */
template <typename T, bool FP8, int D, int CPS = 0, bool L2W = false, bool TMA = false, int TKPW = 0, int TSTAGES = 0,
          int NWT = 0>
__device__ __forceinline__ void attn_decode_entry(const ck_attn_args_t &a)
{
    CK_TL_BLOCK_BEGIN;
    const ck_work_item_t it = dec_item(a);
    CK_TL_MARK_AFTER(CK_TL_ITEM, it.seq);
    const ck_request_t rq = ck_request(a, it.seq);
    CK_TL_MARK(CK_TL_REQUEST);
    CK_TL_MARK_AFTER(CK_TL_REQUEST_IN, rq.L);
    const int64_t ntok = min((int64_t)(CK_SPLIT_ROWS / it.head_count), rq.L - it.q_first);
    if (ntok <= 0) { /* the planned rows are not in this batch (every split of the tile agrees) */
        CK_TL_BLOCK_END;
        return;
    }
    const bool e5 = FP8 && a.kv_dtype == CK_E5M2;
    if (a.softcap > 0.0f || a.alibi)
        attn_decode_rows<T, FP8, D, true, CPS, L2W, TMA, TKPW, TSTAGES, NWT>(a, it, ntok * it.head_count <= 8, e5);
    else
        attn_decode_rows<T, FP8, D, false, CPS, L2W, TMA, TKPW, TSTAGES, NWT>(a, it, ntok * it.head_count <= 8, e5);
    CK_TL_BLOCK_END;
}

/* The wide-group kernels (`_r32`): every item is a 32-row tile of one token's heads (GQA groups wider than 16: MQA and
 * its sharded forms), so each key is read once for all of them where 16-row tiles read it once a head group.
 * 16-bit caches; TMA as attn_decode's TMAQ. */
template <typename T, int D, bool TMA>
__device__ __forceinline__ void attn_decode_wide_entry(const ck_attn_args_t &a)
{
    const ck_work_item_t it = dec_item(a);
    const ck_request_t rq = ck_request(a, it.seq);
    if (rq.L - it.q_first <= 0) return; /* the planned rows are not in this batch (every split of the tile agrees) */
    if (a.softcap > 0.0f || a.alibi)
        attn_decode<T, false, D, 4, false, true, 0, false, TMA>(a, it);
    else
        attn_decode<T, false, D, 4, false, false, 0, false, TMA>(a, it);
}

#endif /* ATTNRT_ATTN_DECODE_CUH */
