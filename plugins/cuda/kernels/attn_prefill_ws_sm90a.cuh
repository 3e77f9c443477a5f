/* attn_prefill_ws_sm90a.cuh — the Hopper prefill kernel with warp specialization (sm_90a only; the second
 * fatbin). The same calls, rows, masks, softmax and epilogue as attn_prefill_sm90a.cuh's kernel, and the same
 * wgmma products (S = Q K^T from shared memory, O += P V with P from registers); what changes is who moves the
 * keys and when the warpgroups compute (FlashAttention-3's structure on a paged cache):
 *   - warpgroup 0 produces: warps 0-1 fill a K ring, warps 2-3 a V ring (CK_PFS_KST / CK_PFS_VST stages), each
 *     warp its half of a tile's 128-byte column blocks, one tensor-copy box a block segment (a.kv_tma_rows rows
 *     of one KV head; the decode kernel's tensor maps), completing on the stage's `full` mbarrier; a stage is
 *     refilled once every consumer thread arrived on its `empty` mbarrier (K once S has read it, V once P V has).
 *     It gives registers to the consumers (setmaxnreg); a block id is loaded a tile before its box is issued;
 *   - the block is persistent (one a SM: item b of the plan's list, then the list's next as it is ready for one):
 *     the rings' stages and phases run on from one item into the next, and warp 0 also publishes each item (its description and rows'
 *     key ranges in shared memory, its Q by a tensor copy into one of CK_PFS_QST slots), so that the next item's Q
 *     and first tiles arrive while this one is computed and its output written (short prompts lost a third of their
 *     time to a block's start and end);
 *   - warpgroups 1 and 2 consume 64 rows each with CK_PFS_CONSUMER_REGS registers (_FP8 over fp8 caches): iteration
 *     kt issues S of tile kt and P V of tile kt - 1 back to back, then forms tile kt's softmax while they run; the two take
 *     turns to issue (named barriers 2 and 3), so one's softmax runs under the other's products. No block
 *     barrier in the key loop (the other kernel's largest stall).
 * The copy engine swizzles 128-byte rows as wgmma's canonical layout expects (chunk c of row r at c ^ (r & 7)
 * from a 1024-byte-aligned base), so the descriptors are the other kernel's. A segment past the keys or with a
 * block id outside the cache reads block num_blocks (outside the map: zeros); keys past the request's end in a
 * present block land as stale cache bytes, so a tile holding such keys has them masked in S and their V rows
 * zeroed by the consumers before P V (0 x NaN would be NaN). Tiles start on the box grid (kbeg rounded down
 * to a.kv_tma_rows; the keys before the first row's range are masked by the rows' own ranges).
 * Pure decode batches of wide GQA groups come here too (cuda_kernel_table.c): an item is one token's heads of a KV
 * head in a key split; each split writes its partial state and the consumers of the row tile's last split to finish
 * merge them (split_merge.cuh, an arrival count a row tile), the merge's weights in the item's Q slot. An item of at most
 * 64 rows leaves warpgroup 1 without products: it keeps the protocol only.
 * One block a SM (384 threads, ~100-200 KB): the plan takes this kernel wherever it can run (cuda_kernel_table.c);
 * shapes in cuda_prefill_wg_cfg.h (CK_PFS_*); the host encodes the maps and falls back to the other kernel where it
 * cannot (cuda_attention.c). The output leaves through the Q slot (ck_pfw_store_staged).
 */
#ifndef ATTNRT_ATTN_PREFILL_WS_SM90A_CUH
#define ATTNRT_ATTN_PREFILL_WS_SM90A_CUH

#include "attn_decode_bulk.cuh" /* mbarriers, ck_tma_load_4d */
#include "attn_prefill_sm90a.cuh"
#include "split_merge.cuh"

/* Named barrier 1 over the two consumer warpgroups (the producer never joins it). */
__device__ __forceinline__ void ck_pfs_bar_consumers() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }

/* An item's tiles on the box grid (kbeg rounded down to R; the keys before a row's range are masked by the rows' own
 * ranges), and a decode item's key split: split s of ns takes tiles [s c, s c + c) of the row tile's, c = ceil(tiles /
 * ns), its keys and the every-row range clamped to them (a split past the keys has no tile: its partial is empty). */
template <int BN> __device__ __forceinline__ void ck_pfs_item_keys(ck_pf_block_t &b, int R, int split, int ns)
{
    if (b.n_tiles <= 0) return;
    b.kbeg -= b.kbeg % R;
    if (ns > 1) {
        const int64_t nt = (b.kend - b.kbeg + BN) / BN, c = (nt + ns - 1) / ns;
        const int64_t lo = b.kbeg + (int64_t)split * c * BN, hi = min(b.kend, lo + c * BN - 1);
        b.kbeg = lo;
        b.kend = hi;
        b.all_lo = max(b.all_lo, lo);
        b.all_hi = min(b.all_hi, hi);
    }
    b.n_tiles = b.kend >= b.kbeg ? (int)((b.kend - b.kbeg + BN) / BN) : 0;
}

/* A decode item's partial state (split `split` of its row tile, whose partials start at part_index: ck_split_merge_tile's
 * layout, a.part_rows rows a split) from this thread's rows row0, row0 + 8: o / l and the LSE of the raw scores' max m
 * (every lane of a quad calls it). */
template <int D>
__device__ __forceinline__ void ck_pfs_store_partial(const ck_attn_args_t &a, int nrows, int split, int part_index, int row0,
                                                     int t4, const float (&o)[D / 2], const float (&l)[2], const float (&m)[2])
{
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float lsum = l[r];
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
        lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
        const int row = row0 + 8 * r;
        if (row >= nrows) continue;
        const int64_t pr = (int64_t)part_index * CK_SPLIT_ROWS + (int64_t)split * a.part_rows + row; /* slot-row */
        const float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f;
        float *dst = a.part_o + pr * a.dv + 2 * t4;
#pragma unroll
        for (int n = 0; n < D / 8; n++) *(float2 *)(dst + 8 * n) = make_float2(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv);
        if (t4 == 0) a.part_lse[pr] = lsum > 0.0f ? m[r] * a.scale + logf(lsum) : -CK_INF;
    }
}

/* whether T is bf16 (two e4m3 terms hold its 8 significant bits: ck_pfs_q_to_e4m3) */
template <typename T> struct ck_is_bf16 { static constexpr bool value = false; };
template <> struct ck_is_bf16<__nv_bfloat16> { static constexpr bool value = true; };

/* The two 16-bit values of a word (the lower element in the low half) as floats. */
template <typename T> __device__ __forceinline__ void ck_unpack2(uint32_t w, float &lo, float &hi);
template <> __device__ __forceinline__ void ck_unpack2<__half>(uint32_t w, float &lo, float &hi)
{
    lo = ck_f16_bits_to_f32((uint16_t)(w & 0xffffu));
    hi = ck_f16_bits_to_f32((uint16_t)(w >> 16));
}
template <> __device__ __forceinline__ void ck_unpack2<__nv_bfloat16>(uint32_t w, float &lo, float &hi)
{
    lo = ck_bf16_bits_to_f32((uint16_t)(w & 0xffffu));
    hi = ck_bf16_bits_to_f32((uint16_t)(w >> 16));
}

/* The warpgroup's Q multiplier from each thread's largest biased exponent ex (of its live rows' finite elements):
 * ck_fp8_qmul of the warps' largest (f16's power of two) times unit (a power of two for another format), negative with
 * K's scale (so that the raw scores keep the true scores' order). The warps' exponents meet in qexp[4]: each warp's slot
 * written once an item, read behind this barrier, rewritten only behind the caller's second one. */
__device__ __forceinline__ float ck_pfs_wg_qmul(uint32_t ex, int wt, int *qexp, int bar_id, float k_scale, float unit)
{
    ex = __reduce_max_sync(0xffffffffu, ex);
    if ((wt & 31) == 0) qexp[wt >> 5] = (int)ex;
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
    float qmul = ck_fp8_qmul((uint32_t)max(max(qexp[0], qexp[1]), max(qexp[2], qexp[3]))) * unit;
    if (k_scale < 0.0f) qmul = -qmul;
    return qmul;
}

/* The fp8 form's Q (FP8 below): each warpgroup's 64 rows of the slot at q_wg (T, column blocks ROWS x 128 bytes apart)
 * rewritten in place as f16 times qmul (ck_pfs_wg_qmul of the live rows' largest finite |q|); returns qmul. wt: the
 * thread within the warpgroup; live: its live rows (the first ones; the rest are whatever the slot held: a Q box of hc
 * heads x 128 / hc tokens leaves 128 % hc rows unwritten); bar_id: the warpgroup's named barrier. */
template <typename T, int D, int ROWS>
__device__ __forceinline__ float ck_pfs_q_to_f16(uint32_t q_wg, int wt, int live, int *qexp, int bar_id, float k_scale)
{
    constexpr int CB = D / 64, CH = 64 * 128 / 16; /* column blocks; 16-byte chunks of 64 rows of one */
    uint32_t ex = 0; /* the largest biased f32 exponent of this thread's finite elements in live rows */
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
#pragma unroll
        for (int i = wt; i < CH; i += 128) {
            uint32_t w[4];
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(q_wg + (uint32_t)(cb * ROWS * 128 + i * 16)));
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float lo, hi;
                ck_unpack2<T>(w[k], lo, hi);
                if (i / 8 < live) ex = max(ex, max(ck_finite_exp(lo), ck_finite_exp(hi)));
            }
        }
    const float qmul = ck_pfs_wg_qmul(ex, wt, qexp, bar_id, k_scale, 1.0f);
#pragma unroll
    for (int cb = 0; cb < CB; cb++)
#pragma unroll
        for (int i = wt; i < CH; i += 128) {
            const uint32_t at = q_wg + (uint32_t)(cb * ROWS * 128 + i * 16);
            uint32_t w[4];
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(at));
#pragma unroll
            for (int k = 0; k < 4; k++) {
                float lo, hi;
                ck_unpack2<T>(w[k], lo, hi);
                w[k] = ck_pack2<__half>(lo * qmul, hi * qmul);
            }
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(at), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
        }
    ck_fence_proxy_async(); /* the generic writes, before the warpgroup's products read the rows */
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
    return qmul;
}

/* Four floats as four e4m3 bytes (the first in the low byte), rounded to nearest; every value this form converts is
 * finite and within e4m3's range (satfinite never saturates it; NaN stays NaN). */
__device__ __forceinline__ uint32_t ck_f32x4_to_e4m3x4(float a, float b, float c, float d)
{
    uint32_t r;
    asm("{ .reg .b16 l, h;\n cvt.rn.satfinite.e4m3x2.f32 l, %2, %1;\n cvt.rn.satfinite.e4m3x2.f32 h, %4, %3;\n mov.b32 %0, {l, h};\n}"
        : "=r"(r) : "f"(a), "f"(b), "f"(c), "f"(d));
    return r;
}

/* The fp8 form's Q for e4m3 products (KD below: a bf16 Q over a D 128 / 256 cache): each warpgroup's 64 rows of the slot
 * at q_wg (bf16, column blocks ROWS x 128 bytes apart) rewritten in place as two e4m3 terms of q times qmul, hi = e4m3(x)
 * and lo = e4m3(x - hi), whose sum is x exactly (bf16 has 8 significant bits, each term 4; qmul brings the live rows'
 * largest finite |x| to [2^7, 2^8), so neither term saturates; only a value under 2^-9 of that largest keeps fewer bits,
 * its error under 2^-17 of it: e4m3's subnormals end there). The terms' rows are K-major under the 128-byte swizzle, as
 * the keys' fp8 rows land: hi in the slot's column blocks 0 .. FCB - 1, lo in FCB .. 2 FCB - 1 (FCB = D / 128). An
 * infinite element becomes NaN (its scores' rows are NaN either way: the reference's inf - inf in the softmax). Returns
 * qmul (negative with K's scale, so that the raw scores keep the true scores' order); qexp, wt, live, bar_id as
 * ck_pfs_q_to_f16 (a dead row's stale bytes, once fp8 terms of an earlier item, can read as any bf16: only live rows set
 * qmul). */
template <int D, int ROWS>
__device__ __forceinline__ float ck_pfs_q_to_e4m3(uint32_t q_wg, int wt, int live, int *qexp, int bar_id, float k_scale)
{
    constexpr int FCB = D / 128, NC = 4 * FCB; /* fp8 column blocks a term; fp8 chunks a thread (64 rows x 8 FCB / 128) */
    /* fp8 chunk i: row i / (8 FCB), column block (i / 8) % FCB, chunk i % 8 (16 columns: two bf16 chunks of the slot) */
    auto at = [&](int i, int &r, int &x, int &c) {
        c = i & 7, x = (i >> 3) % FCB, r = i / (8 * FCB);
    };
    uint32_t w[NC][8];
    uint32_t ex = 0;
#pragma unroll
    for (int k = 0; k < NC; k++) {
        int r, x, c;
        at(wt + 128 * k, r, x, c);
        const uint32_t row = q_wg + (uint32_t)((2 * x + (c >> 2)) * ROWS * 128 + r * 128);
#pragma unroll
        for (int h = 0; h < 2; h++)
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(w[k][4 * h]), "=r"(w[k][4 * h + 1]), "=r"(w[k][4 * h + 2]), "=r"(w[k][4 * h + 3])
                         : "r"(row + (uint32_t)(((2 * (c & 3) + h) ^ (r & 7)) << 4)));
#pragma unroll
        for (int e = 0; e < 8; e++) {
            float lo, hi;
            ck_unpack2<__nv_bfloat16>(w[k][e], lo, hi);
            if (r < live) ex = max(ex, max(ck_finite_exp(lo), ck_finite_exp(hi)));
        }
    }
    /* f16's power of two for [2^13, 2^14) over 2^6 (a normal float for every exponent); its barrier also finds every
     * thread's reads of the slot done */
    const float qmul = ck_pfs_wg_qmul(ex, wt, qexp, bar_id, k_scale, 0x1p-6f);
#pragma unroll
    for (int k = 0; k < NC; k++) {
        int r, x, c;
        at(wt + 128 * k, r, x, c);
        uint32_t th[4], tl[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float v[4], hv[4];
            ck_unpack2<__nv_bfloat16>(w[k][2 * e], v[0], v[1]);
            ck_unpack2<__nv_bfloat16>(w[k][2 * e + 1], v[2], v[3]);
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = isinf(v[u]) ? __int_as_float(0x7fc00000) : v[u] * qmul;
            th[e] = ck_f32x4_to_e4m3x4(v[0], v[1], v[2], v[3]);
            uint32_t h01, h23;
            ck_fp8x4_to_h2x2<true>(th[e], h01, h23);
            hv[0] = __low2float(*(__half2 *)&h01), hv[1] = __high2float(*(__half2 *)&h01);
            hv[2] = __low2float(*(__half2 *)&h23), hv[3] = __high2float(*(__half2 *)&h23);
            tl[e] = ck_f32x4_to_e4m3x4(v[0] - hv[0], v[1] - hv[1], v[2] - hv[2], v[3] - hv[3]);
        }
        const uint32_t ofs = (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4));
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(q_wg + (uint32_t)(x * ROWS * 128) + ofs), "r"(th[0]),
                     "r"(th[1]), "r"(th[2]), "r"(th[3]) : "memory");
        asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(q_wg + (uint32_t)((FCB + x) * ROWS * 128) + ofs),
                     "r"(tl[0]), "r"(tl[1]), "r"(tl[2]), "r"(tl[3]) : "memory");
    }
    ck_fence_proxy_async(); /* the generic writes, before the warpgroup's products read the rows */
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
    return qmul;
}

/* S = Q K^T of one warpgroup's 64 rows over a tile of an fp8 cache's raw key rows (kd's base: FCB column blocks of BN
 * 128-byte rows, K-major, as they land), Q as ck_pfs_q_to_e4m3's two e4m3 terms at qd's base: per term and k-step kk of 32
 * dims, column block kk / 4, 32 bytes in (ck_pfw_issue_s's addressing with fp8 elements). Issued and committed. */
template <bool KE4M3, int D, int BN, int ROWS>
__device__ __forceinline__ void ck_pfs_issue_s_e4m3(float (&s)[BN / 2], uint64_t qd, uint64_t kd)
{
    constexpr int FCB = D / 128;
#pragma unroll
    for (int kk = 0; kk < D / 32; kk++) {
        const uint32_t cofs = (uint32_t)(kk >> 2), kofs = (uint32_t)(kk & 3) * 32u;
        const uint64_t db = ck_wg_desc_at(kd, cofs * BN * 128u + kofs);
#pragma unroll
        for (int t = 0; t < 2; t++)
            ck_wg_ss_e4m3<KE4M3, BN>(s, ck_wg_desc_at(qd, ((uint32_t)t * FCB + cofs) * ROWS * 128u + kofs), db, kk > 0 || t > 0);
    }
    ck_wg_commit();
}

/* DEC: the decode form (`_dec`: items in key splits, partial states and their merge, warpgroup 1 idle on items of at most
 * 64 rows); the prefill form leaves all of it out (it cost the prefill's consumers 50-300 bytes of spills at D 128 /
 * 256).
 * FP8: the cache's fp8 format (0: the cache holds T; CK_E4M3 / CK_E5M2, per-tensor scales, the prefill form): the
 * producer's tensor copies land a tile's fp8 rows (at D 128 / 256 in the upper half of its own ring stage, at D 64 in a
 * staging slot: CK_PFS_FP8_LAND) and the ring's two warps widen them into the stage as f16 (exact: every fp8 value is an
 * f16 value), the next tile's copies in flight meanwhile; the consumers rewrite each item's Q as f16 times a power of two
 * (ck_pfs_q_to_f16) and take the products in f16; K's scale joins the score scale, V's the output's factor.
 * KD (FP8, a bf16 Q, D 128 / 256): K's fp8 rows are read as they land by e4m3 products and each item's Q is rewritten as
 * two e4m3 terms (ck_pfs_q_to_e4m3); only V is widened. Its products and widening cost less a tile, its Q more an item:
 * the plan takes it for items of many keys (cuda_kernel_table.c).
 * BN: keys a tile (CK_PFS_BN, or D 64's long-item form's CK_PFS_BN_LONG). */
template <typename T, int D, bool DEC, int FP8 = 0, bool KD = false, int BN = CK_PFS_BN(D)>
__device__ __forceinline__ void attn_prefill_ws(const ck_attn_args_t &a)
{
    constexpr bool F8 = FP8 != 0;
    typedef typename ck_qk_type<T, F8>::type TM; /* the products' operands */
    constexpr int ROWS = CK_PF_ROWS, KST = CK_PFS_KST, VST = CK_PFS_VST, QST = CK_PFS_QST(D);
    constexpr int CPR = D / 8, NS = BN / 8, CB = D / 64; /* 16-byte chunks a row; n8 groups of S; column blocks */
    /* (F8) a landed fp8 row: FCB column blocks of LB bytes (the maps' boxes: at most 128 bytes a row). In place (D 128 /
     * 256): a tile's fp8 rows land in their stage's last FCB column blocks; else (D 64) in a staging slot (SG_BYTES) */
    constexpr int LB = D < 128 ? D : 128, FCB = D / LB;
    constexpr bool INPLACE = F8 && D >= 128;
    /* KD: Q in two e4m3 terms is exact for bf16's 8 significant bits, not for f16's 11 (ck_pfs_q_to_e4m3) */
    static_assert(!KD || (INPLACE && ck_is_bf16<T>::value), "K read by e4m3 products: a bf16 Q over a D 128 / 256 fp8 cache");
    constexpr int NL = F8 ? CK_PFS_FP8_LAND(D) : 1, NLB = F8 ? 2 * NL : 0; /* landing slots a ring; their mbarriers */
    constexpr uint32_t Q_BYTES = ROWS * D * 2, KV_BYTES = BN * D * 2, SG_BYTES = F8 && !INPLACE ? BN * D : 0;
    static_assert(ROWS == 128 && BN % 64 == 0 && D % 64 == 0, "two consumer warpgroups of 64 rows; whole column blocks");
    static_assert(BN <= 32 * 8, "a tile's block segments (boxes of 8 rows and more: ws_box_rows) fit a stage's 32 key counts");
    static_assert(!F8 || !DEC, "the fp8 form: the prefill form");
    static_assert(!INPLACE || (NL == KST && NL == VST), "each K / V stage its own landing slot");
    static_assert(sizeof(ck_pf_block_t) == 112, "ck_pfs_smem_bytes counts an item's description as 112 bytes");
    /* registers a thread after setmaxnreg: the producer's and the consumers' */
    constexpr int PREGS = F8 ? CK_PFS_PRODUCER_REGS_FP8(D) : CK_PFS_PRODUCER_REGS;
    constexpr int CREGS = F8 ? CK_PFS_CONSUMER_REGS_FP8(D) : CK_PFS_CONSUMER_REGS;
    static_assert(PREGS + 2 * CREGS <= 3 * CK_PFS_LAUNCH_REGS && PREGS % 8 == 0 && CREGS % 8 == 0 &&
                      CK_PFS_LAUNCH_REGS * CK_PFS_THREADS <= 65536, "registers moved within the launch's allocation");

    extern __shared__ __align__(1024) unsigned char pfs_smem[];
    const uint32_t smem_raw = ck_smem(pfs_smem), smem0 = (smem_raw + 1023u) & ~1023u;
    unsigned char *smem = pfs_smem + (smem0 - smem_raw);
    const uint32_t sQ0 = smem0, sK0 = sQ0 + QST * Q_BYTES, sV0 = sK0 + KST * KV_BYTES, sS0 = sV0 + VST * KV_BYTES;
    /* mbarriers, 8 bytes each: full K [KST], full V [VST], empty K [KST], empty V [VST], full Q [QST], empty Q [QST],
     * (F8) landed K [NL], V [NL], and item published [QST] */
    const uint32_t bar0 = sS0 + 2 * SG_BYTES;
    auto bar = [&](int kind, int st) -> uint32_t {
        return bar0 + 8u * (uint32_t)((kind >> 1) * (KST + VST) + ((kind & 1) ? KST : 0) + st);
    };
    auto barq = [&](int empty, int qs) -> uint32_t { return bar0 + 8u * (uint32_t)(2 * (KST + VST) + empty * QST + qs); };
    auto land = [&](int kv, int ls) -> uint32_t { return bar0 + 8u * (uint32_t)(2 * (KST + VST + QST) + kv * NL + ls); };
    auto pub = [&](int qs) -> uint32_t { return bar0 + 8u * (uint32_t)(2 * (KST + VST + QST) + NLB + qs); };
    unsigned char *tail = smem + (bar0 - smem0) + 16 * (KST + VST + QST) + 8 * NLB + 8 * QST;
    /* [QST] the item whose Q a slot holds (nrows < 0: no more items), from the producer */
    ck_pf_block_t *meta = (ck_pf_block_t *)tail;
    /* [KST + VST][32] (K ring, V ring): the present keys at the head of each block segment of the stage's tile (a
     * segment's keys are present up to the request's last key, or none: an absent block) */
    uint8_t *cnt = (uint8_t *)(tail + QST * sizeof(ck_pf_block_t));
    int *anyabs = (int *)(cnt + (KST + VST) * 32);            /* [KST + VST]: the tile has an absent key */
    int2 *rrange = (int2 *)(anyabs + ((KST + VST + 1) & ~1)); /* [QST][ROWS] each row's key range, relative to kbeg */
    /* [QST][4] a decode item's key split: split, splits, first partial (the decode form only; the consumers read it for
     * their epilogue) */
    int *dsplit = (int *)(rrange + QST * ROWS);
    int *qexp = dsplit + QST * 4; /* (F8) [2][4] each consumer warp's largest Q exponent (ck_pfs_q_to_f16) */

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, R = a.kv_tma_rows;
    __shared__ int pfs_last; /* a decode item's consumers finish its row tile's last split */
    if (tid == 0) {
        for (int st = 0; st < KST; st++) {
            ck_mbar_init(bar(0, st), 64);  /* every lane of the ring's two producer warps (their first: the boxes' bytes) */
            ck_mbar_init(bar(2, st), 256); /* every consumer thread, once its products read the stage */
        }
        for (int st = 0; st < VST; st++) {
            ck_mbar_init(bar(1, st), 64);
            ck_mbar_init(bar(3, st), 256);
        }
        for (int qs = 0; qs < QST; qs++) {
            ck_mbar_init(barq(0, qs), 32);  /* every lane of producer warp 0 (its first: Q's bytes) */
            /* every consumer thread, once the item's output has left the slot, and the first lane of producer warps 1-3,
             * once they have copied its description (an item without key tiles needs nothing from them: without their
             * arrivals warp 0 could publish the slot's next item before a lagging warp read this one) */
            ck_mbar_init(barq(1, qs), 256 + 3);
            ck_mbar_init(pub(qs), 1);       /* producer warp 0's first lane, once the slot's description is written */
        }
        for (int ls = 0; ls < NLB; ls++) ck_mbar_init(land(ls / NL, ls % NL), 1); /* the ring's first lane (the boxes' bytes) */
        ck_mbar_init_fence();
    }
    __syncthreads();

    if (warp < 4) { /* ---- producer: warps 0-1 fill the K ring, 2-3 the V ring, each warp its half of the column blocks ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PREGS) : "memory");
        const int kv = warp >> 1, half = warp & 1, ns = kv ? VST : KST, nseg = BN / R;
        const uint32_t wbytes = (uint32_t)((CB - half + 1) / 2) * BN * 128u; /* column blocks half, half + 2, .. */
        const uint32_t ring = kv ? sV0 : sK0;
        const void *map = kv ? (const void *)&a.tm_v : (const void *)&a.tm_k;
        const int64_t bs = a.block_size;
        ck_pf_block_t b = {};
        int split = 0, nsplit = 1, part_index = -1; /* the item's key split */
        int g0 = 0; /* the sequence number of the item's first tile: the rings' stages and phases run on over the items */
        /* lane's segment of tile kt: its key and the block table's entry (-1: none), loaded a tile before its use */
        auto seg_key = [&](int kt) { return b.kbeg + (int64_t)kt * BN + (int64_t)lane * R; };
        auto load_id = [&](int kt) -> int32_t {
            const int64_t key = seg_key(kt);
            if (kt >= b.n_tiles || lane >= nseg || key > b.kend) return -1;
            return a.block_table[b.seq * a.bt_st[0] + ck_div_bs(key, bs) * a.bt_st[1]];
        };
        /* whether lane's segment has a present block (its block table entry id) */
        auto present = [&](int32_t id) { return lane < nseg && id >= 0 && id < a.num_blocks; };
        /* lane's box of tile kt: its block (absent: a block outside the map, zeros) and the map's two middle coordinates
         * (by the maps' stride order); false where the segment has no present block */
        auto box = [&](int kt, int32_t id, int32_t &cb, int32_t &c1, int32_t &c2) {
            const int64_t key = seg_key(kt);
            const bool live = present(id);
            const int32_t cr = live ? (int32_t)(key - ck_div_bs(key, bs) * bs) : 0;
            cb = live ? id : (int32_t)a.num_blocks;
            c1 = a.kv_tma_hnd ? cr : b.kvh;
            c2 = a.kv_tma_hnd ? b.kvh : cr;
            return live;
        };
        /* stage st's flags for tile kt: each segment's present keys, whether any key is absent (warp half 0 writes them) */
        auto flags = [&](int kt, bool live, int st) {
            const int n = live ? (int)min((int64_t)R, b.kend - seg_key(kt) + 1) : 0;
            const uint32_t gone = __ballot_sync(0xffffffffu, lane < nseg && n < R);
            if (half == 0) {
                if (lane < nseg) cnt[(kv * KST + st) * 32 + lane] = (uint8_t)n;
                if (lane == 0) anyabs[kv * KST + st] = gone != 0u;
            }
        };
        auto arrive_full = [&](int st) { ck_mbar_arrive(bar(kv, st)); };
        auto produce = [&](int kt, int32_t id) {
            const int gt = g0 + kt, st = gt % ns;
            if (gt >= ns) ck_mbar_wait(bar(2 + kv, st), (uint32_t)(gt / ns - 1) & 1u);
            int32_t cb, c1, c2;
            const bool live = box(kt, id, cb, c1, c2);
            flags(kt, live, st);
            if constexpr (KD) { /* (the K ring) the fp8 rows at the stage's start, column block x by warp half x % 2 */
                if (lane == 0 && half < FCB) ck_mbar_arrive_expect_tx(bar(kv, st), (uint32_t)((FCB - half + 1) / 2 * BN * LB));
                else arrive_full(st);
                if (lane < nseg)
#pragma unroll
                    for (int x = half; x < FCB; x += 2)
                        ck_tma_load_4d(ring + st * KV_BYTES + (uint32_t)(x * BN * LB + lane * R * LB), map, x * LB, c1, c2, cb,
                                       bar(kv, st));
                return;
            }
            /* each lane's arrival publishes its flags; the first also expects its warp's bytes */
            if (lane == 0 && wbytes) ck_mbar_arrive_expect_tx(bar(kv, st), wbytes);
            else arrive_full(st);
            if (lane < nseg) {
                const uint32_t dst = ring + st * KV_BYTES + (uint32_t)(lane * R * 128);
#pragma unroll
                for (int x = half; x < CB; x += 2) ck_tma_load_4d(dst + x * BN * 128, map, x * 64, c1, c2, cb, bar(kv, st));
            }
        };
        /* (F8) where tile g of the ring's sequence lands (INPLACE: the last FCB column blocks of its ring stage) */
        auto land_at = [&](int g) -> uint32_t {
            return INPLACE ? ring + (uint32_t)(g % ns) * KV_BYTES + (uint32_t)((CB - FCB) * BN * 128) : sS0 + (uint32_t)kv * SG_BYTES;
        };
        /* (F8) tile kt's fp8 rows to their landing slot by warp half 0 (a box a segment and column block of LB bytes a row),
         * its lane 0 expecting the tile's bytes; INPLACE once the stage is free */
        auto stage = [&](int kt, int32_t id) {
            const int gt = g0 + kt;
            if (INPLACE && gt >= ns) ck_mbar_wait(bar(2 + kv, gt % ns), (uint32_t)(gt / ns - 1) & 1u);
            int32_t cb, c1, c2;
            box(kt, id, cb, c1, c2);
            if (half) return;
            if (lane == 0) ck_mbar_arrive_expect_tx(land(kv, gt % NL), (uint32_t)(BN * D));
            if (lane < nseg)
#pragma unroll
                for (int x = 0; x < FCB; x++)
                    ck_tma_load_4d(land_at(gt) + (uint32_t)(x * BN * LB + lane * R * LB), map, x * LB, c1, c2, cb, land(kv, gt % NL));
        };
        /* (F8) tile kt's fp8 rows, once landed, widened into ring stage st as f16 by both warps (16-byte chunk fc of row r
         * where the copy engine swizzled it: 128-byte rows at D 128, 64-byte ones at D 64; two f16 chunks where the
         * consumers' descriptors read them), then the landing slot free for the next box once both warps are done. In
         * place, a row's fp8 bytes are where its widened second column block goes: a row is 8 lanes of one warp, all of
         * whose reads precede its writes. */
        auto widen = [&](int kt, int st) {
            /* thread t of the ring's 64 takes chunk fc of each landed column block x of rows r0 + RS k: every row it takes
             * has r0's swizzles (they depend on a row's low 3 bits, RS a multiple of 8), so its addresses are bases plus
             * constants. In place, fp8 column block x of a row lies where the widened column block CB - FCB + x goes,
             * which the row's own widening of block x - FCB / 2 .. writes: a row is 8 lanes of one warp, all of whose
             * reads (every block) precede its writes. */
            constexpr int FC = LB / 16, RS = 64 / FC, U = FCB > 1 ? 2 : 4; /* chunks a block row; rows a pass; a group */
            static_assert(!F8 || (RS % 8 == 0 && (BN / RS) % U == 0), "a thread's rows share their swizzles, in groups of U");
            const int gt = g0 + kt, t = half * 32 + lane, r0 = t / FC, fc = t % FC;
            ck_mbar_wait(land(kv, gt % NL), (uint32_t)(gt / NL) & 1u);
            const uint32_t src = land_at(gt) + (uint32_t)(r0 * LB + ((fc ^ (LB == 128 ? (r0 & 7) : ((r0 >> 1) & 3))) << 4));
            uint32_t dst[FCB][2]; /* the f16 chunks of columns 128 x + 16 fc + 8 e of row r0 */
#pragma unroll
            for (int x = 0; x < FCB; x++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int c = 16 * x + 2 * fc + e;
                    dst[x][e] = ring + st * KV_BYTES + (uint32_t)((c >> 3) * BN * 128 + r0 * 128 + (((c & 7) ^ (r0 & 7)) << 4));
                }
#pragma unroll
            for (int k0 = 0; k0 < BN / RS; k0 += U) {
                /* U rows' loads in flight at once (the shared-memory latency behind the products' traffic, once a group),
                 * then the writes */
                uint32_t xv[U][FCB][4];
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int x = 0; x < FCB; x++)
                        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                                     : "=r"(xv[u][x][0]), "=r"(xv[u][x][1]), "=r"(xv[u][x][2]), "=r"(xv[u][x][3])
                                     : "r"(src + (uint32_t)(x * BN * LB + (k0 + u) * RS * LB)));
                if (INPLACE) __syncwarp();
#pragma unroll
                for (int u = 0; u < U; u++)
#pragma unroll
                    for (int x = 0; x < FCB; x++) {
                        uint32_t h[8];
#pragma unroll
                        for (int k = 0; k < 4; k++) ck_fp8x4_to_h2x2<FP8 == CK_E4M3>(xv[u][x][k], h[2 * k], h[2 * k + 1]);
#pragma unroll
                        for (int e = 0; e < 2; e++)
                            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst[x][e] + (uint32_t)((k0 + u) * RS * 128)),
                                         "r"(h[4 * e]), "r"(h[4 * e + 1]), "r"(h[4 * e + 2]), "r"(h[4 * e + 3]) : "memory");
                    }
            }
            ck_fence_proxy_async(); /* the generic writes, before the consumers' products read the stage */
            asm volatile("bar.sync %0, 64;\n" ::"r"(6 + kv) : "memory");
        };
        /* warp 0: item j's description, its rows' key ranges and its Q (one box a column block: its heads x its tokens)
         * into Q slot j % QST, once the consumers have written the output of item j - QST out of it; past the last
         * item (live false) the description says there is none */
        auto publish = [&](int j, bool live) {
            const int qs = j % QST;
            if (j >= QST) ck_mbar_wait(barq(1, qs), (uint32_t)(j / QST - 1) & 1u);
            if (lane == 0) {
                meta[qs] = b;
                if (!live) meta[qs].nrows = -1;
                if (DEC) dsplit[qs * 4] = split, dsplit[qs * 4 + 1] = nsplit, dsplit[qs * 4 + 2] = part_index;
                /* the description for the other producer warps (Q's full barrier would also wait for Q's bytes) */
                ck_mbar_arrive(pub(qs));
            }
            if (live) ck_pf_row_ranges<32>(a, b, lane, rrange + qs * ROWS);
            const uint32_t qbytes = live ? (uint32_t)(CB * b.hc * (ROWS / b.hc) * 128) : 0u;
            if (lane == 0 && qbytes) ck_mbar_arrive_expect_tx(barq(0, qs), qbytes);
            else ck_mbar_arrive(barq(0, qs));
            if (live && lane < CB)
                ck_tma_load_3d(sQ0 + qs * Q_BYTES + (uint32_t)lane * ROWS * 128u, &a.tm_q, lane * 64, b.hbase, (int32_t)b.tok0,
                               barq(0, qs));
        };
        /* The items: block b's first is item b; then, where the plan gave the counters (a.pf_next), warp 0 takes the list's
         * next item when the block is ready for one (the slowest block ends at most one item after the rest: a static
         * b, b + gridDim.x, ... left causal batches 5-25 % idle), else item b +
         * gridDim.x. Warp 0 publishes each; the other producer warps copy its description from the slot. */
        auto next_item = [&](int item) -> int {
            if (!a.pf_next) return item + (int)gridDim.x;
            int n = 0;
            if (lane == 0) n = (int)gridDim.x + (int)atomicAdd(a.pf_next, 1u);
            return __shfl_sync(0xffffffffu, n, 0);
        };
        int j = 0;
        for (int item = (int)blockIdx.x;;) {
            if (warp == 0) {
                while (item < a.pf_items && !ck_pf_block_at<BN>(a, item, b)) item = next_item(item);
                if (item >= a.pf_items) break;
                if (DEC) split = a.items[item].split, nsplit = a.items[item].num_splits, part_index = a.items[item].part_index;
                ck_pfs_item_keys<BN>(b, R, split, nsplit);
                publish(j, true);
                item = next_item(item);
            } else {
                const int qs = j % QST;
                ck_mbar_wait(pub(qs), (uint32_t)(j / QST) & 1u);
                b = meta[qs];
                if (b.nrows < 0) break;
                if (lane == 0) ck_mbar_arrive(barq(1, qs));
            }
            /* (F8) a tile's boxes one ahead of its widening, its stage full once widened (64 arrivals); KD: V only, K's
             * copies as the 16-bit form's */
            if (F8 && !(KD && kv == 0)) {
                int32_t idc = load_id(0);
                if (b.n_tiles > 0) stage(0, idc);
                for (int kt = 0; kt < b.n_tiles; kt++) {
                    const int32_t idn = load_id(kt + 1);
                    const int gt = g0 + kt, st = gt % ns;
                    if (!INPLACE && gt >= ns) ck_mbar_wait(bar(2 + kv, st), (uint32_t)(gt / ns - 1) & 1u);
                    widen(kt, st);
                    flags(kt, present(idc), st);
                    arrive_full(st);
                    if (kt + 1 < b.n_tiles) stage(kt + 1, idn);
                    idc = idn;
                }
            } else {
                /* two tiles an iteration, so that each id goes from its load to its use without a register copy (a copy
                 * would wait for the load where it stands) */
                int32_t id0 = load_id(0), id1;
                for (int kt = 0; kt < b.n_tiles; kt += 2) {
                    id1 = load_id(kt + 1);
                    produce(kt, id0);
                    if (kt + 1 >= b.n_tiles) break;
                    id0 = load_id(kt + 2);
                    produce(kt + 1, id1);
                }
            }
            g0 += b.n_tiles;
            j++;
        }
        if (warp == 0) {
            publish(j, false);
            /* the counters back to zero for the next run once every block has taken its last (past the end): the fences
             * order each block's takes before its count, and the last count before the reset */
            if (a.pf_next && lane == 0) {
                __threadfence();
                if (atomicAdd(a.pf_next + 1, 1u) == gridDim.x - 1u) {
                    __threadfence();
                    a.pf_next[0] = 0u;
                    a.pf_next[1] = 0u;
                }
            }
        }
        return;
    }

    /* ---- consumers: warpgroup wg of 64 rows, item after item as warp 0 publishes them ----
     * FA3's schedule: iteration kt issues S of tile kt and then P V of tile kt - 1 (P and the rescale known from the
     * last iteration) back to back, then forms tile kt's softmax while those run; the two warpgroups take turns to
     * issue (named barriers 2 + wg), so that one's softmax runs under the other's products. */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CREGS) : "memory");
    const int ctid = tid - 128, cw = warp - 4, wg = cw >> 2, g = lane >> 2, t4 = lane & 3, rsh = __ffs(R) - 1;
    auto swz = [](int rows, int r, int c) -> uint32_t {
        return (uint32_t)((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
    };
    const float scale2 = a.scale * CK_LOG2E;
    /* (F8) the per-tensor scales: K's joins the scores' scale, V's the output's factor */
    const float k_sc = F8 && a.k_scale ? a.k_scale[0] : 1.0f, v_sc = F8 && a.v_scale ? a.v_scale[0] : 1.0f;
    int g0 = 0; /* the item's first tile in the rings' sequence */
    for (int j = 0;; j++) {
        const int qs = j % QST;
        ck_mbar_wait(barq(0, qs), (uint32_t)(j / QST) & 1u);
        const ck_pf_block_t b = meta[qs];
        if (b.nrows < 0) break;
        const int2 *rr = rrange + qs * ROWS;
        const uint32_t q_slot = sQ0 + (uint32_t)qs * Q_BYTES, q_wg = q_slot + (uint32_t)wg * 64u * 128u;
        /* (F8) Q as f16 times qmul: a raw score is qmul / k_sc times the product of Q and the cache's values */
        const int live = min(max(b.nrows - wg * 64, 0), 64); /* the warpgroup's live rows */
        const float qmul = [&] {
            if constexpr (KD) return ck_pfs_q_to_e4m3<D, ROWS>(q_wg, ctid & 127, live, qexp + 4 * wg, 4 + wg, k_sc);
            else if constexpr (F8) return ck_pfs_q_to_f16<T, D, ROWS>(q_wg, ctid & 127, live, qexp + 4 * wg, 4 + wg, k_sc);
            else return 1.0f;
        }();
        const float sc2 = F8 ? scale2 * k_sc / qmul : scale2, sc_nat = F8 ? a.scale * k_sc / qmul : a.scale;

        float o[D / 2];
#pragma unroll
        for (int i = 0; i < D / 2; i++) o[i] = 0.0f;
        float m[2] = {-CK_INF, -CK_INF}, l[2] = {0.0f, 0.0f};
        uint32_t pa[BN / 16][4]; /* P of the last tile, the A fragments of its P V */
        float alpha[2] = {1.0f, 1.0f}; /* O's factor before the last tile's P V (1: its max did not move) */
        float s[BN / 2];

        /* The tile kt - 1 whose V waits in stage pst: its absent keys' V rows to zeros (a present block's rows past
         * the keys are stale cache bytes), by both warpgroups (chunk i by consumer thread i mod 256), before either
         * reads them. No product is in flight here. */
        auto wait_v = [&](int kt) {
            const int gt = g0 + kt - 1, pst = gt % VST;
            ck_mbar_wait(bar(1, pst), (uint32_t)(gt / VST) & 1u);
            if (anyabs[KST + pst]) {
                const uint32_t vb = sV0 + (uint32_t)pst * KV_BYTES;
                for (int i = ctid; i < BN * CPR; i += 256) {
                    const int row = i / CPR, c = i % CPR;
                    if ((row & (R - 1)) >= cnt[(KST + pst) * 32 + (row >> rsh)])
                        asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(vb + swz(BN, row, c)), "r"(0) : "memory");
                }
                ck_fence_proxy_async();
                ck_pfs_bar_consumers();
            }
        };
        auto wait_k = [&](int kt) { ck_mbar_wait(bar(0, (g0 + kt) % KST), (uint32_t)((g0 + kt) / KST) & 1u); };
        auto turn_wait = [&] {
            if (wg == 0) asm volatile("bar.sync 2, 256;\n" ::: "memory");
            else asm volatile("bar.sync 3, 256;\n" ::: "memory");
        };
        /* the other warpgroup's turn (warpgroup 1's last arrival of an item would find no turn left to open) */
        auto turn_pass = [&](bool last) {
            if (wg == 0) asm volatile("bar.arrive 3, 256;\n" ::: "memory");
            else if (!last) asm volatile("bar.arrive 2, 256;\n" ::: "memory");
        };
        /* the descriptors of tile kt's K and of tile kt - 1's V (formed before the turn wait in the source, the faster
         * order; ptxas places them), and their products */
        const uint64_t qd = ck_pfw_desc_k(q_wg);
        auto desc_s = [&](int kt) { return ck_pfw_desc_k(sK0 + (uint32_t)((g0 + kt) % KST) * KV_BYTES); };
        auto desc_pv = [&](int kt) { return ck_pfw_desc_v<BN>(sV0 + (uint32_t)((g0 + kt - 1) % VST) * KV_BYTES); };
        auto issue_s = [&](uint64_t kd) {
            if constexpr (KD) ck_pfs_issue_s_e4m3<FP8 == CK_E4M3, D, BN, ROWS>(s, qd, kd);
            else ck_pfw_issue_s<TM, D, BN, ROWS>(s, q_wg, kd);
        };
        auto issue_pv = [&](uint64_t vd) { ck_pfw_issue_pv<TM, D, BN>(o, pa, vd); };
        /* O times the last softmax's factors, before its P V is issued (every row, every tile: no branch near the
         * products in flight, which would serialize them) */
        auto scale_o = [&] { ck_pfw_scale_o<D>(o, alpha); };
        auto release_k = [&](int kt) { ck_mbar_arrive(bar(2, (g0 + kt) % KST)); }; /* tile kt's stage: the next K tile's */
        /* tile kt's softmax once S is in: masks, the running max (lazy rescale), P into pa's successor */
        auto softmax = [&](int kt, uint32_t (&pn)[BN / 16][4]) {
            const int st = (g0 + kt) % KST;
            const int64_t k0 = b.kbeg + (int64_t)kt * BN;
            const bool absent = anyabs[st] != 0;
            if (absent || k0 < b.all_lo || k0 + BN - 1 > b.all_hi) {
                /* keys outside a row's range and absent keys to -inf (rows cw x 16 + g and + 8; key j of the tile in
                 * n8 group j / 8, element j % 2 of lane j % 8 / 2) */
                int rlo[2], rhi[2];
#pragma unroll
                for (int r = 0; r < 2; r++) {
                    const int2 x = rr[cw * 16 + g + 8 * r];
                    rlo[r] = x.x - kt * BN;
                    rhi[r] = x.y - kt * BN;
                }
#pragma unroll
                for (int n = 0; n < NS; n++)
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        const int jj = n * 8 + 2 * t4 + e;
                        const bool gone = absent && (jj & (R - 1)) >= cnt[st * 32 + (jj >> rsh)];
#pragma unroll
                        for (int r = 0; r < 2; r++)
                            if (gone || jj < rlo[r] || jj > rhi[r]) s[4 * n + 2 * r + e] = -CK_INF;
                    }
            }
            release_k(kt); /* S has read K and the flags are read */
            ck_pfw_softmax<TM, BN>(s, m, l, sc2, alpha, pn);
        };
        /* P V of tile kt - 1 has read V: the stage may take the next V tile */
        auto release_v = [&](int kt) { ck_mbar_arrive(bar(3, (g0 + kt - 1) % VST)); };

        const int nt = b.n_tiles;
        /* (DEC) warpgroup 1 without a live row (an item of at most 64 rows: a decode item's heads) computes nothing: it
         * only keeps the rings' and turns' protocol (its waits, arrivals and the absent V rows' zeros), so the tensor
         * cores run warpgroup 0's products alone */
        if (DEC && nt > 0 && wg * 64 >= b.nrows) {
            asm volatile("bar.arrive 2, 256;\n" ::: "memory");
            for (int kt = 0; kt <= nt; kt++) {
                if (kt > 0) wait_v(kt);
                if (kt < nt) wait_k(kt);
                turn_wait();
                turn_pass(kt == nt);
                if (kt < nt) release_k(kt);
                if (kt > 0) release_v(kt);
            }
        } else if (nt > 0) {
            if (wg == 1) asm volatile("bar.arrive 2, 256;\n" ::: "memory"); /* warpgroup 0 issues first */
            /* tile 0: S and its softmax */
            wait_k(0);
            uint64_t kd = desc_s(0), vd;
            turn_wait();
            ck_wg_fence();
            issue_s(kd);
            turn_pass(false);
            ck_wg_wait<0>();
            ck_wg_pin(s);
            {
                uint32_t pn[BN / 16][4];
                softmax(0, pn);
#pragma unroll
                for (int k2 = 0; k2 < BN / 16; k2++)
#pragma unroll
                    for (int i = 0; i < 4; i++) pa[k2][i] = pn[k2][i];
            }
            /* tiles 1 .. nt - 1: S of tile kt and P V of tile kt - 1 issued together, tile kt's softmax under them */
            for (int kt = 1; kt < nt; kt++) {
                wait_v(kt);
                wait_k(kt);
                scale_o();
                kd = desc_s(kt);
                vd = desc_pv(kt);
                turn_wait();
                ck_wg_fence();
                issue_s(kd);
                issue_pv(vd);
                turn_pass(false);
                ck_wg_wait<1>();
                ck_wg_pin(s);
                uint32_t pn[BN / 16][4];
                softmax(kt, pn);
                ck_wg_wait<0>();
                ck_wg_pin(o);
                ck_wg_pin(pa);
                release_v(kt);
#pragma unroll
                for (int k2 = 0; k2 < BN / 16; k2++)
#pragma unroll
                    for (int i = 0; i < 4; i++) pa[k2][i] = pn[k2][i];
            }
            /* the last tile's P V */
            wait_v(nt);
            scale_o();
            vd = desc_pv(nt);
            turn_wait();
            ck_wg_fence();
            issue_pv(vd);
            turn_pass(true);
            ck_wg_wait<0>();
            ck_wg_pin(o);
            ck_wg_pin(pa);
            release_v(nt);
        }

        /* the output through this warpgroup's rows of the Q slot, then the slot back to warp 0 (its next Q is a tensor
         * copy: the reads of the slot ordered before it). A decode item's key split writes its partial state instead, and
         * the consumers that finish a row tile's last split merge its partials (the slot holds the merge's weights). */
        const int ns = DEC ? dsplit[qs * 4 + 1] : 1;
        if (DEC && ns > 1) {
            const int part_index = dsplit[qs * 4 + 2];
            ck_pfs_store_partial<D>(a, b.nrows, dsplit[qs * 4], part_index, cw * 16 + g, t4, o, l, m);
            __threadfence(); /* the partial, device-wide, before this split's arrival is counted */
            ck_pfs_bar_consumers();
            if (ctid == 0) pfs_last = atomicAdd(a.split_count + part_index, 1u) == (uint32_t)ns - 1u;
            ck_pfs_bar_consumers();
            if (pfs_last) {
                __threadfence(); /* the other splits' partials are read after their arrivals */
                ck_split_tile_t t;
                t.tok0 = b.tok0, t.hc = b.hc, t.hbase = b.hbase, t.nrows = b.nrows;
                t.ns = ns, t.part_index = part_index, t.rows = a.part_rows;
                ck_split_merge_tile(a, t, (float *)(smem + (q_slot - smem0)), ctid, 256, [] { ck_pfs_bar_consumers(); });
                if (ctid == 0) a.split_count[part_index] = 0u;
            }
        } else {
            ck_pfw_store_staged<T, D, ROWS>(a, b, ctid & 127, wg * 64, cw * 16 + g, t4, o, l, m, q_slot, 4 + wg, sc_nat, v_sc);
        }
        ck_fence_proxy_async();
        ck_mbar_arrive(barq(1, qs));
        g0 += nt;
    }
}

#endif /* ATTNRT_ATTN_PREFILL_WS_SM90A_CUH */
