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
 * of a tile's O with the next tile's softmax gained nothing here, behind the block barrier; the warp-specialized
 * kernel of attn_prefill_ws_sm90a.cuh, which has no such barrier, does overlap them).
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

/* The descriptor of the matrix `bytes` past d's (a multiple of 16): the start address field (bits 0-13, 16-byte units)
 * plus bytes / 16 by one 32-bit add; no carry leaves the field (shared addresses are below 2^18). ck_wg_desc costs five
 * dependent uniform instructions a product where its address changes from tile to tile (the warp-specialized kernel's
 * issue turns held them; MLA's S 72 a k-step pair). */
__device__ __forceinline__ uint64_t ck_wg_desc_at(uint64_t d, uint32_t bytes)
{
    return (d & 0xffffffff00000000ull) | (uint32_t)((uint32_t)d + (bytes >> 4));
}

/* ---- the tile steps both wgmma kernels take (this one and attn_prefill_ws_sm90a.cuh's) ------------------ */

/* The operands' descriptors at their bases (a product's is ck_wg_desc_at of one): a K tile (K-major, 128-byte rows; also
 * Q's rows), a V tile (N = D spans D / 64 column blocks, BN x 128 bytes apart). */
__device__ __forceinline__ uint64_t ck_pfw_desc_k(uint32_t at) { return ck_wg_desc(at, 16u, 1024u); }
template <int BN> __device__ __forceinline__ uint64_t ck_pfw_desc_v(uint32_t vb) { return ck_wg_desc(vb, (uint32_t)BN * 128u, 1024u); }

/* S = Q K^T of one warpgroup's 64 rows (Q rows from q_wg in a ROWS-row tile) and the BN keys of the tile at kd's base
 * (ck_pfw_desc_k), issued and committed (the caller fences): k-step kk reads 16 dims, column block kk / 4, 32 bytes in
 * (the hardware applies the swizzle to the address it forms). Q's descriptors are built whole: the same every tile of an
 * item, ptxas keeps them in registers (by ck_wg_desc_at, D 64 prefill ran 1-4 % slower). */
template <typename T, int D, int BN, int ROWS>
__device__ __forceinline__ void ck_pfw_issue_s(float (&s)[BN / 2], uint32_t q_wg, uint64_t kd)
{
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        const uint32_t cofs = (uint32_t)(kk >> 2), kofs = (uint32_t)(kk & 3) * 32u;
        ck_wg_ss<T, BN>(s, ck_wg_desc(q_wg + cofs * ROWS * 128u + kofs, 16u, 1024u), ck_wg_desc_at(kd, cofs * BN * 128u + kofs), kk > 0);
    }
    ck_wg_commit();
}

/* O += P V of the tile whose V is at vd's base (ck_pfw_desc_v), issued and committed (the caller fences): k-step k2
 * reads keys 16 k2 .. 16 k2 + 15 (two 8-row groups, 2048 bytes in). */
template <typename T, int D, int BN>
__device__ __forceinline__ void ck_pfw_issue_pv(float (&o)[D / 2], const uint32_t (&pa)[BN / 16][4], uint64_t vd)
{
#pragma unroll
    for (int k2 = 0; k2 < BN / 16; k2++) ck_wg_rs<T, D>(o, pa[k2], ck_wg_desc_at(vd, (uint32_t)k2 * 2048u));
    ck_wg_commit();
}

/* The online softmax of a tile's scores s (masked already; this thread's rows r = 0, 1, a quad holding a row's BN
 * scores): the running max m of the raw scores moves only by more than CK_PF_RESCALE_LOG2 (lazy rescaling), then
 * alpha (O's and l's factor: 1 where it did not move) and l are updated and P goes to pn in wgmma's A-fragment
 * layout. Returns whether any row of the warp moved. */
template <typename T, int BN>
__device__ __forceinline__ bool ck_pfw_softmax(const float (&s)[BN / 2], float (&m)[2], float (&l)[2], float scale2,
                                               float (&alpha)[2], uint32_t (&pn)[BN / 16][4])
{
    constexpr int NS = BN / 8;
    float mx[2];
    bool grow = false;
#pragma unroll
    for (int r = 0; r < 2; r++) {
        mx[r] = ck_pf_row_max<NS>([&](int n, int e) { return s[4 * n + 2 * r + e]; });
        grow |= mx[r] * scale2 > m[r] * scale2 + CK_PF_RESCALE_LOG2;
    }
    const bool rescale = __any_sync(0xffffffffu, grow);
    alpha[0] = alpha[1] = 1.0f;
    if (rescale) {
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const float mn = fmaxf(m[r], mx[r]);
            alpha[r] = mn == -CK_INF ? 0.0f : ck_exp2((m[r] - mn) * scale2);
            m[r] = mn;
            l[r] *= alpha[r];
        }
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const float msc = m[r] == -CK_INF ? 0.0f : m[r] * scale2;
        l[r] += ck_pf_row_exp<NS>([&](int n, int e) { return s[4 * n + 2 * r + e]; }, scale2, msc,
                                  [&](int n, float p0, float p1) { pn[n >> 1][(n & 1) * 2 + r] = ck_pack2<T>(p0, p1); });
    }
    return rescale;
}

/* O's rows times their factors. */
template <int D> __device__ __forceinline__ void ck_pfw_scale_o(float (&o)[D / 2], const float (&alpha)[2])
{
#pragma unroll
    for (int r = 0; r < 2; r++)
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
            o[4 * n + 2 * r] *= alpha[r];
            o[4 * n + 2 * r + 1] *= alpha[r];
        }
}

/* Epilogue of this thread's rows row0, row0 + 8: as attn_prefill (ck_pf_store_row, sc_nat and vmul as there) from the
 * accumulators. */
template <typename T, int D>
__device__ __forceinline__ void ck_pfw_store(const ck_attn_args_t &a, const ck_pf_block_t &b, int row0, int t4,
                                             const float (&o)[D / 2], const float (&l)[2], const float (&m)[2], float sc_nat,
                                             float vmul)
{
    const bool pair16 = ck_pf_out_pairs(a);
#pragma unroll
    for (int r = 0; r < 2; r++)
        ck_pf_store_row<T, D / 8>(a, b, pair16, row0 + 8 * r, t4, l[r], m[r], sc_nat, vmul,
                                  [&](int n, int e) { return o[4 * n + 2 * r + e]; });
}

/* The epilogue of one warpgroup (wtid 0 .. 127 of it; its 64 rows from rbase, this thread's rows row0, row0 + 8) through
 * shared memory: the normalized rows go, as T, into the warpgroup's own rows of the tile at tile (ROWS rows in the
 * canonical layout: its Q rows, which its products no longer read), then each thread writes whole 16-byte chunks, a
 * row's 2 D bytes by consecutive threads. The direct epilogue (ck_pfw_store) wrote 4 bytes a thread and row, 32 stores
 * a thread at D 128 whose code (both output forms unrolled) ran cold once a block: 30 % of the consumers' samples at
 * 512-token prompts. Outputs of another type or not 16-byte aligned keep
 * the direct form. bar_id: a named barrier of the warpgroup's 128 threads; sc_nat and vmul: ck_pf_row_finish's. */
template <typename T, int D, int ROWS>
__device__ __forceinline__ void ck_pfw_store_staged(const ck_attn_args_t &a, const ck_pf_block_t &b, int wtid, int rbase,
                                                    int row0, int t4, const float (&o)[D / 2], const float (&l)[2],
                                                    const float (&m)[2], uint32_t tile, int bar_id, float sc_nat, float vmul)
{
    constexpr int CPR = D / 8;
    /* a row's token and head without a division: row < 128 and hc <= 128, so (row x ceil(2^16 / hc)) >> 16 is row / hc */
    const uint32_t hc_inv = (65536u + (uint32_t)b.hc - 1u) / (uint32_t)b.hc;
    auto tok_of = [&](int row) { return (int)(((uint32_t)row * hc_inv) >> 16); };
    const bool fast = a.out_dtype == a.q_dtype &&
                      (((uintptr_t)a.out | (uintptr_t)(a.out_st[0] * 2) | (uintptr_t)(a.out_st[1] * 2)) & 15u) == 0;
    if (!fast) {
        ck_pfw_store<T, D>(a, b, row0, t4, o, l, m, sc_nat, vmul);
        return;
    }
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = row0 + 8 * r, t = tok_of(row);
        const float inv = ck_pf_row_finish(a, row < b.nrows, b.tok0 + t, b.hbase + row - t * b.hc, t4, l[r], m[r], sc_nat, vmul);
        /* chunk n of the row (its columns 8 n .. 8 n + 7), this thread's two of them 4 t4 bytes in */
#pragma unroll
        for (int n = 0; n < CPR; n++) {
            const uint32_t at = tile + (uint32_t)((n >> 3) * ROWS * 128 + row * 128 + (((n & 7) ^ (row & 7)) << 4) + 4 * t4);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(ck_pack2<T>(o[4 * n + 2 * r] * inv, o[4 * n + 2 * r + 1] * inv))
                         : "memory");
        }
    }
    asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
    /* chunk c of row rbase + i / CPR: the same c for every row a thread writes (128 a multiple of CPR) */
    const int c = wtid % CPR;
#pragma unroll 4
    for (int i = wtid; i < 64 * CPR; i += 128) {
        const int row = rbase + i / CPR;
        if (row >= b.nrows) break; /* rows grow with i */
        uint4 v;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(tile + (uint32_t)((c >> 3) * ROWS * 128 + row * 128 + (((c & 7) ^ (row & 7)) << 4))));
        const int t = tok_of(row);
        const int64_t tok = b.tok0 + t;
        const int h = b.hbase + row - t * b.hc;
        *(uint4 *)((T *)a.out + tok * a.out_st[0] + (int64_t)h * a.out_st[1] + c * 8) = v;
    }
}

template <typename T, int D>
__device__ __forceinline__ void attn_prefill_wg(const ck_attn_args_t &a)
{
    constexpr int NT = CK_PFW_WARPS * 32, ROWS = CK_PF_ROWS, BN = CK_PFW_BN(D);
    constexpr int CPR = D / 8;    /* 16-byte chunks a row */
    constexpr int RPP = NT / CPR; /* rows a copy pass covers */
    constexpr int NS = BN / 8;    /* n8 column groups of S */
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
    uint64_t *kaddr = (uint64_t *)(smem + Q_BYTES + 4 * KV_BYTES); /* [SLOTS][BN], then vaddr; 0: the key is absent */
    int2 *rrange = (int2 *)(kaddr + 2 * SLOTS * BN); /* [ROWS] each row's key range, relative to kbeg */

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    ck_pf_block_t b;
    if (!ck_pf_block<BN>(a, b)) return;

    /* Byte offset of 16-byte chunk c of row r in a tile of `rows` rows: column block c / 8, 128-byte
     * rows, chunk (c % 8) ^ (r % 8). */
    auto swz = [](int rows, int r, int c) -> uint32_t {
        return (uint32_t)((c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4));
    };

    ck_pf_load_q<T, NT, CPR>(a, b, tid, smem, [&](int r, int c) { return swz(ROWS, r, c); });

    /* Thread tid copies chunk tid % CPR of rows tid / CPR + i x RPP (RPP a multiple of 8: one swizzle). */
    ck_pf_addr_ring<BN, SLOTS> ring(a, b, tid, kaddr);
    const int cp_c = tid % CPR, cp_r0 = tid / CPR;
    const uint32_t cp_dst = swz(BN, cp_r0, cp_c);
    auto issue = [&](int slot, int st) {
        const uint32_t stage = (uint32_t)st * KV_BYTES + cp_dst;
        ck_pf_cp16_rows<BN / RPP, RPP, 128>(sK0 + stage, ring.kaddr + slot * BN + cp_r0, cp_c * 16);
        ck_pf_cp16_rows<BN / RPP, RPP, 128>(sV0 + stage, ring.vaddr + slot * BN + cp_r0, cp_c * 16);
    };

    ring.start(b.kbeg, b.n_tiles, [&] {
        issue(0, 0);
        ck_cp_async_commit();
    });
    ck_pf_row_ranges<NT>(a, b, tid, rrange);

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

    for (int kt = 0; kt < b.n_tiles; kt++) {
        const int st = kt & 1, slot = kt % SLOTS;
        ck_cp_async_wait<0>();
        ck_fence_proxy_async(); /* this thread's copies (generic proxy) visible to wgmma (async proxy) */
        /* After this barrier: tile kt (and Q) landed; every warpgroup's wgmma of tile kt-1 completed (each
         * waited before), so its stage takes tile kt+1; tile kt+1's addresses are visible. */
        const bool absent_cur = ring.barrier();
        if (kt + 1 < b.n_tiles) issue((kt + 1) % SLOTS, st ^ 1);
        ck_cp_async_commit();
        const int64_t k0 = b.kbeg + (int64_t)kt * BN;
        const bool interior = !absent_cur && k0 >= b.all_lo && k0 + BN - 1 <= b.all_hi;
        const uint32_t kb = sK0 + (uint32_t)st * KV_BYTES;

        float s[BN / 2];
        ck_wg_fence();
        ck_pfw_issue_s<T, D, BN, ROWS>(s, q_wg, ck_pfw_desc_k(kb));
        ck_wg_wait<0>();
        ck_wg_pin(s);

        if (!interior)
            ck_pf_mask_edge<1, NS>(rrange, warp * 16 + g, kt * BN, t4, absent_cur, ring.kaddr + slot * BN,
                                   [&](int, int n, int k) -> float & { return s[4 * n + k]; });

        /* Online softmax, as attn_prefill */
        uint32_t pn[BN / 16][4]; /* this tile's P */
        float alpha[2];
        if (ck_pfw_softmax<T, BN>(s, m, l, scale2, alpha, pn)) ck_pfw_scale_o<D>(o, alpha);
#pragma unroll
        for (int k2 = 0; k2 < BN / 16; k2++)
#pragma unroll
            for (int i = 0; i < 4; i++) pa[k2][i] = pn[k2][i];
        ck_wg_fence();
        ck_pfw_issue_pv<T, D, BN>(o, pa, ck_pfw_desc_v<BN>(sV0 + (uint32_t)st * KV_BYTES));

        if (kt + 2 < b.n_tiles) ring.ahead(k0, kt, b.n_tiles);
        ck_wg_wait<0>(); /* before the next barrier: the stage is then free for tile kt+2 */
        ck_wg_pin(o);
        ck_wg_pin(pa);
    }
    ck_cp_async_wait<0>();

    ck_pfw_store_staged<T, D, ROWS>(a, b, tid & 127, (warp >> 2) * 64, warp * 16 + g, t4, o, l, m, sQ0, 4 + (warp >> 2), a.scale,
                                    1.0f);
}

#endif /* ATTNRT_ATTN_PREFILL_SM90A_CUH */
