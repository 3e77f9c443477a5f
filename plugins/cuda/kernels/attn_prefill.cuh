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
#include "attn_mma.cuh" /* ck_exp2, ck_cp_async16_zf, CK_LOG2E */

/* M(tname, T, D) for every query type and head dim of the prefill kernels: their instances */
#define CK_PF_EACH(M)                                                                                         \
    M(f16, __half, 64) M(f16, __half, 128) M(f16, __half, 256)                                                \
    M(bf16, __nv_bfloat16, 64) M(bf16, __nv_bfloat16, 128) M(bf16, __nv_bfloat16, 256)

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
 * log2 units), so most tiles skip the alpha = 2^(m_old - m_new) pass over O (+12 % at D 128 on the H200).
 * Then p = 2^(s - m) <= 2^8: no overflow in f32, and in P's 16-bit type only its magnitude changes (the
 * same relative rounding, far from f16's largest 2^16). o and l share the same m, so o / l is unchanged. */
#define CK_PF_RESCALE_LOG2 8.0f

/* ---- what the FA2 kernel below and the wgmma kernel (attn_prefill_sm90a.cuh) share -------------------- */

/* A block's work: ntok tokens x hc query heads of KV head kvh (rows: (token, head) pairs, heads inner; the
 * first nrows of CK_PF_ROWS are live), the keys [kbeg, kend] any of them sees in n_tiles tiles of BN, and
 * [all_lo, all_hi], the keys every row sees (ranges grow with the position). ck_pf_block_at fills it from the
 * list's item `item` (ck_pf_block: this block's); false: none of the item's planned rows is in this batch (nothing
 * to do). */
struct ck_pf_block_t {
    int64_t seq, S, tok0, pq0, ntok, wl, wr, kbeg, kend, all_lo, all_hi; /* wl, wr: the window */
    int     hc, nrows, kvh, hbase, n_tiles;
};
template <int BN> __device__ __forceinline__ bool ck_pf_block_at(const ck_attn_args_t &a, int item, ck_pf_block_t &b)
{
    const ck_work_item_t it = a.items[item];
    /* The request, read on the device and clamped to the tensors (a replayed graph sees grown lengths). */
    b.seq = it.seq;
    const ck_request_t rq = ck_request(a, b.seq);
    b.S = rq.S;
    b.hc = it.head_count;
    b.ntok = min((int64_t)(CK_PF_ROWS / b.hc), rq.L - it.q_first);
    if (b.ntok <= 0) return false;
    b.nrows = (int)b.ntok * b.hc;
    b.kvh = it.kv_head, b.hbase = b.kvh * a.group + it.head_first;
    b.tok0 = rq.q_begin + it.q_first, b.pq0 = b.S - rq.L + it.q_first;
    b.wl = a.window_left, b.wr = a.window_right;
    ck_key_range(b.pq0, b.S, a.causal, b.wl, b.wr, &b.kbeg, &b.all_hi);            /* the first token's range */
    ck_key_range(b.pq0 + b.ntok - 1, b.S, a.causal, b.wl, b.wr, &b.all_lo, &b.kend); /* the last token's */
    b.n_tiles = b.kend >= b.kbeg ? (int)((b.kend - b.kbeg + BN) / BN) : 0;
    return true;
}
template <int BN> __device__ __forceinline__ bool ck_pf_block(const ck_attn_args_t &a, ck_pf_block_t &b)
{
    return ck_pf_block_at<BN>(a, (int)blockIdx.x, b);
}

/* Q into shared memory, chunk c of row r at byte swz(r, c) of sq (the caller's swizzle); rows past nrows are
 * zeros. 16-byte cp.async (one group, committed) when the rows allow it, else element by element. */
template <typename T, int NT, int CPR, class Swz>
__device__ __forceinline__ void ck_pf_load_q(const ck_attn_args_t &a, const ck_pf_block_t &b, int tid, unsigned char *sq,
                                             Swz swz)
{
    const bool q16 = (((uintptr_t)a.q | (uintptr_t)(a.q_st[0] * 2) | (uintptr_t)(a.q_st[1] * 2)) & 15u) == 0;
    for (int i = tid; i < CK_PF_ROWS * CPR; i += NT) {
        const int r = i / CPR, c = i % CPR;
        const bool live = r < b.nrows;
        const int64_t off = live ? (b.tok0 + r / b.hc) * a.q_st[0] + (int64_t)(b.hbase + r % b.hc) * a.q_st[1] + c * 8 : 0;
        const T *src = (const T *)a.q + off;
        if (q16) {
            ck_cp_async16_zf(ck_smem(sq) + swz(r, c), src, !live);
        } else {
            uint16_t v[8];
#pragma unroll
            for (int e = 0; e < 8; e++) v[e] = live ? ((const uint16_t *)src)[e] : (uint16_t)0;
            *(uint4 *)(sq + swz(r, c)) = make_uint4(v[0] | (uint32_t)v[1] << 16, v[2] | (uint32_t)v[3] << 16,
                                                    v[4] | (uint32_t)v[5] << 16, v[6] | (uint32_t)v[7] << 16);
        }
    }
    ck_cp_async_commit();
}

/* The paged address ring: thread tid < BN owns key k0 + tid of each tile. A tile's block ids are looked up
 * (fetch) a tile before its K / V row addresses are written (write) into slot [SLOTS][BN] of kaddr / vaddr
 * (0: the key is absent), two tiles before its copies; tiles in order, no division a tile (ck_bt_walker). */
template <int BN, int SLOTS> struct ck_pf_addr_ring {
    const ck_attn_args_t &a;
    const int64_t seq, kend;
    const int tid;
    uint64_t *const kaddr, *const vaddr;
    const ck_kv_addr_t heads;
    ck_bt_walker<BN> walk;
    int64_t blk, r;    /* the fetched tile's block id and row of this thread's key */
    bool pending;      /* this thread's key of the tile whose addresses the next barrier publishes is absent */
    bool absent_next;  /* the next tile to compute has an absent key (published by the last barrier) */

    __device__ __forceinline__ ck_pf_addr_ring(const ck_attn_args_t &a_, const ck_pf_block_t &b, int tid_, uint64_t *kaddr_)
        : a(a_), seq(b.seq), kend(b.kend), tid(tid_), kaddr(kaddr_), vaddr(kaddr_ + SLOTS * BN),
          heads(ck_kv_heads<2>(a_, b.kvh)), walk(b.kbeg + tid_, a_.block_size), blk(-1), r(0),
          pending(false), absent_next(false)
    {
    }
    /* Block ids of the tile at key k0. */
    __device__ __forceinline__ void fetch(int64_t k0) { blk = walk.next(a, seq, tid < BN && k0 + tid <= kend, &r); }
    /* Row addresses of the fetched tile (at key k0) into `slot`; returns whether this thread's key lies in
     * range but is absent (a block id outside the cache: zeros, masked). */
    __device__ __forceinline__ bool write(int64_t k0, int slot)
    {
        if (tid >= BN) return false;
        const int64_t key = k0 + tid;
        ck_kv_addr_t row;
        ck_kv_row<2>(a, heads, key <= kend, blk, r, &row);
        kaddr[slot * BN + tid] = row.k;
        vaddr[slot * BN + tid] = row.v;
        return key <= kend && row.k == 0;
    }
    /* Prologue: tile 0's addresses (published by the barrier here), its copies (issue0), tile 1's
     * addresses (published by the loop's first barrier), tile 2's block ids. */
    template <class Issue> __device__ __forceinline__ void start(int64_t kbeg, int n_tiles, Issue issue0)
    {
        if (n_tiles > 0) {
            fetch(kbeg);
            pending = write(kbeg, 0);
        }
        absent_next = __syncthreads_or(pending);
        if (n_tiles > 0) issue0();
        pending = false;
        if (n_tiles > 1) {
            fetch(kbeg + BN);
            pending = write(kbeg + BN, 1);
        }
        if (n_tiles > 2) fetch(kbeg + 2 * BN);
    }
    /* The one barrier at the top of each tile; returns whether that tile has an absent key. */
    __device__ __forceinline__ bool barrier()
    {
        const bool absent = absent_next;
        absent_next = __syncthreads_or(pending);
        pending = false;
        return absent;
    }
    /* At the end of tile kt (at key k0; kt + 2 < n_tiles): tile kt+2's addresses into the slot tile kt-1 used
     * (its last readers passed tile kt's barrier), published by the next barrier; tile kt+3's block ids. */
    __device__ __forceinline__ void ahead(int64_t k0, int kt, int n_tiles)
    {
        pending = write(k0 + 2 * BN, (kt + 2) % SLOTS);
        if (kt + 3 < n_tiles) fetch(k0 + 3 * BN);
    }
};

/* One 16-byte chunk (byte off) of N rows, row i from rows[i x RPP] into dst + i x RPP x ROW_BYTES. */
template <int N, int RPP, int ROW_BYTES>
__device__ __forceinline__ void ck_pf_cp16_rows(uint32_t dst, const uint64_t *rows, uint32_t off)
{
#pragma unroll
    for (int i = 0; i < N; i++) ck_pf_cp16_row(dst + i * RPP * ROW_BYTES, rows[i * RPP], off);
}

/* Each row's key range relative to kbeg (empty for rows past nrows), in shared memory: the edge tiles read
 * it, and the accumulators keep the registers. */
template <int NT>
__device__ __forceinline__ void ck_pf_row_ranges(const ck_attn_args_t &a, const ck_pf_block_t &b, int tid, int2 *rrange)
{
    for (int row = tid; row < CK_PF_ROWS; row += NT) {
        int64_t lo, hi;
        ck_key_range(b.pq0 + row / b.hc, b.S, a.causal, b.wl, b.wr, &lo, &hi);
        hi = min(hi, b.kend); /* a key split's end (else the last row's end already) */
        int2 rr = make_int2(0x7fffffff, -1);
        if (row < b.nrows && lo <= hi)
            rr = make_int2((int)ck_clamp(lo - b.kbeg, 0, 0x7fffffff), (int)ck_clamp(hi - b.kbeg, -1, 0x7fffffff));
        rrange[row] = rr;
    }
}

/* Masks of an edge tile (keys j0 .. j0 + 8 NS - 1 relative to kbeg): keys outside a row's range and absent
 * keys (absent: the tile has one; slot_addr: its K row addresses, 0 for an absent key) become -inf. The
 * thread's rows: row0 + 16 i + 8 r for m-tile i < MT, r < 2; score(i, n, k): element k of n8 group n. */
template <int MT, int NS, class Score>
__device__ __forceinline__ void ck_pf_mask_edge(const int2 *rrange, int row0, int j0, int t4, bool absent,
                                                const uint64_t *slot_addr, Score score)
{
    int rlo[MT][2], rhi[MT][2];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int2 rr = rrange[row0 + i * 16 + 8 * r];
            rlo[i][r] = rr.x;
            rhi[i][r] = rr.y;
        }
#pragma unroll
    for (int n = 0; n < NS; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int j = n * 8 + 2 * t4 + e;
            const bool gone = absent && slot_addr[j] == 0;
#pragma unroll
            for (int i = 0; i < MT; i++)
#pragma unroll
                for (int r = 0; r < 2; r++)
                    if (gone || j0 + j < rlo[i][r] || j0 + j > rhi[i][r]) score(i, n, 2 * r + e) = -CK_INF;
        }
}

/* The max of one row's scores in a tile: the quad (4 lanes) holds them, x(n, e) is this lane's element e of
 * n8 group n. A tree (short dependency chains), then the quad. */
template <int NS, class X> __device__ __forceinline__ float ck_pf_row_max(X x)
{
    float t[NS];
#pragma unroll
    for (int n = 0; n < NS; n++) t[n] = fmaxf(x(n, 0), x(n, 1));
#pragma unroll
    for (int w = 1; w < NS; w *= 2)
#pragma unroll
        for (int n = 0; n + w < NS; n += 2 * w) t[n] = fmaxf(t[n], t[n + w]);
    const float v = fmaxf(t[0], __shfl_xor_sync(0xffffffffu, t[0], 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

/* p = 2^(x scale2 - msc) of one row's scores (x(n, e) as ck_pf_row_max), handed to put(n, p0, p1); returns
 * this lane's sum of them (a tree). */
template <int NS, class X, class Put> __device__ __forceinline__ float ck_pf_row_exp(X x, float scale2, float msc, Put put)
{
    float t[NS];
#pragma unroll
    for (int n = 0; n < NS; n++) {
        const float p0 = ck_exp2(fmaf(x(n, 0), scale2, -msc));
        const float p1 = ck_exp2(fmaf(x(n, 1), scale2, -msc));
        put(n, p0, p1);
        t[n] = p0 + p1;
    }
#pragma unroll
    for (int w = 1; w < NS; w *= 2)
#pragma unroll
        for (int n = 0; n + w < NS; n += 2 * w) t[n] += t[n + w];
    return t[0];
}

/* Whether the output takes two 16-bit values a 32-bit store (Q's type, 4-byte aligned rows). */
__device__ __forceinline__ bool ck_pf_out_pairs(const ck_attn_args_t &a)
{
    return a.out_dtype == a.q_dtype &&
           (((uintptr_t)a.out | (uintptr_t)(a.out_st[0] * 2) | (uintptr_t)(a.out_st[1] * 2)) & 3u) == 0;
}

/* A row's finish, shared by every prefill epilogue: the quad's sum of l (every lane of the quad calls it, real row or
 * not), then for a real row (token tok, head h) the normalizer with the sink after the keys and, from lane t4 0, the LSE
 * (m: the row's running max of the raw scores, sc_nat: a raw score's natural-log units, a.scale where the products are the
 * scores). Returns what the row's o is multiplied by (0 for an empty row), times vmul (a product of V's scale). */
__device__ __forceinline__ float ck_pf_row_finish(const ck_attn_args_t &a, bool real, int64_t tok, int h, int t4, float l, float m,
                                                  float sc_nat, float vmul)
{
    float lsum = l;
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 1);
    lsum += __shfl_xor_sync(0xffffffffu, lsum, 2);
    if (!real) return 0.0f;
    const float m_nat = m * sc_nat; /* natural-log units for the LSE and the sinks */
    float inv = 0.0f;
    if (lsum > 0.0f) {
        float den = lsum;
        if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m_nat);
        inv = vmul / den; /* den inf (a sink far above every key): 0, not NaN */
    }
    if (t4 == 0 && a.lse) a.lse[tok * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lsum > 0.0f ? m_nat + logf(lsum) : -CK_INF;
    return inv;
}

/* Epilogue of one row: o / (l + sink) straight from the accumulators (o(n, e): this lane's element e of n8 group n of
 * the row) and the LSE (ck_pf_row_finish, sc_nat and vmul as there). */
template <typename T, int NO, class O>
__device__ __forceinline__ void ck_pf_store_row(const ck_attn_args_t &a, const ck_pf_block_t &b, bool pair16, int row,
                                                int t4, float l, float m, float sc_nat, float vmul, O o)
{
    const int64_t tok = b.tok0 + row / b.hc;
    const int h = b.hbase + row % b.hc;
    const float inv = ck_pf_row_finish(a, row < b.nrows, tok, h, t4, l, m, sc_nat, vmul);
    if (row >= b.nrows) return;
    const int64_t ob = tok * a.out_st[0] + (int64_t)h * a.out_st[1];
#pragma unroll
    for (int n = 0; n < NO; n++) {
        const int c = n * 8 + 2 * t4;
        const float v0 = o(n, 0) * inv, v1 = o(n, 1) * inv;
        if (pair16) {
            *(uint32_t *)((T *)a.out + ob + c) = ck_pack2<T>(v0, v1);
        } else {
            ck_store(a.out, ob + c, a.out_dtype, v0);
            ck_store(a.out, ob + c + 1, a.out_dtype, v1);
        }
    }
}

/* acc[i][n], acc[i][n + 1] += a[i] B for the MT m-tiles; B: the two n8 tiles one ldmatrix.x4 brings (bf). */
template <typename T, int MT, int N>
__device__ __forceinline__ void ck_pf_mma_x2(float (&acc)[MT][N][4], int n, const uint32_t (&af)[MT][4],
                                             const uint32_t (&bf)[4])
{
#pragma unroll
    for (int i = 0; i < MT; i++) {
        ck_mma16816<T>(acc[i][n], af[i], bf[0], bf[1]);
        ck_mma16816<T>(acc[i][n + 1], af[i], bf[2], bf[3]);
    }
}

/* ---- the FA2 kernel ------------------------------------------------------------------------------------ */
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
    uint64_t *kaddr = (uint64_t *)(sV + 2 * BN * D); /* [SLOTS][BN], then vaddr; 0: the key is absent */
    int2 *rrange = (int2 *)(kaddr + 2 * SLOTS * BN); /* [ROWS] each row's key range, relative to kbeg */

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t4 = lane & 3;
    ck_pf_block_t b;
    if (!ck_pf_block<BN>(a, b)) return;

    /* Swizzled element offset of chunk c of row r. */
    auto swz = [](int r, int c) -> int { return r * D + ((c ^ (r & 7)) << 3); };
    ck_pf_load_q<T, NT, CPR>(a, b, tid, smem, [&](int r, int c) { return (uint32_t)swz(r, c) * 2u; });

    ck_pf_addr_ring<BN, SLOTS> ring(a, b, tid, kaddr);
    /* Copies of the tile whose addresses are in `slot` into stage `st`: thread tid copies chunk
     * tid % CPR of rows tid / CPR + i * RPP (absent keys: zeros), so a warp's copies fill whole rows
     * (conflict-free stores; four adjacent chunks a thread instead, fewer instructions, was
     * 8-10% slower). RPP is a multiple of 8: every row of a thread has the same swizzle. */
    const int cp_c = tid % CPR, cp_r0 = tid / CPR;
    const uint32_t cp_dst = (uint32_t)swz(cp_r0, cp_c) * 2u;
    const uint32_t sK0 = ck_smem(sK), sV0 = ck_smem(sV);
    auto issue = [&](int slot, int st) {
        const uint32_t stage = (uint32_t)(st * BN * D * 2) + cp_dst;
        ck_pf_cp16_rows<BN / RPP, RPP, D * 2>(sK0 + stage, ring.kaddr + slot * BN + cp_r0, cp_c * 16);
        ck_pf_cp16_rows<BN / RPP, RPP, D * 2>(sV0 + stage, ring.vaddr + slot * BN + cp_r0, cp_c * 16);
        ck_cp_async_commit();
    };
    ring.start(b.kbeg, b.n_tiles, [&] { issue(0, 0); });
    ck_pf_row_ranges<NT>(a, b, tid, rrange); /* published by the loop's first barrier */

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

    for (int kt = 0; kt < b.n_tiles; kt++) {
        const int st = kt & 1, slot = kt % SLOTS;
        ck_cp_async_wait<0>();
        /* After this barrier: tile kt (and Q) landed for every thread; every warp is done with tile kt-1,
         * whose stage now takes tile kt+1; tile kt+1's addresses are visible. */
        const bool absent_cur = ring.barrier();
        if (kt + 1 < b.n_tiles) issue((kt + 1) % SLOTS, st ^ 1);
        const int64_t k0 = b.kbeg + (int64_t)kt * BN;
        const bool interior = !absent_cur && k0 >= b.all_lo && k0 + BN - 1 <= b.all_hi;
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
                ck_pf_mma_x2<T>(s, 2 * np, aq, bf);
            }
        }

        if (!interior)
            ck_pf_mask_edge<MT, NS>(rrange, warp * MT * 16 + g, kt * BN, t4, absent_cur, ring.kaddr + slot * BN,
                                    [&](int i, int n, int k) -> float & { return s[i][n][k]; });

        /* Online softmax: the quad (4 lanes) holds a row's BN scores. The tile's max, then the lazy
         * rescale (CK_PF_RESCALE_LOG2), decided for the whole warp. */
        float mx[MT][2];
        bool grow = false;
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int r = 0; r < 2; r++) {
                mx[i][r] = ck_pf_row_max<NS>([&](int n, int e) { return s[i][n][2 * r + e]; });
                grow |= mx[i][r] * scale2 > m[i][r] * scale2 + CK_PF_RESCALE_LOG2; /* m -inf: any key grows it */
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
                l[i][r] += ck_pf_row_exp<NS>([&](int n, int e) { return s[i][n][2 * r + e]; }, scale2, msc,
                                             [&](int n, float p0, float p1) {
                                                 s[i][n][2 * r] = p0;
                                                 s[i][n][2 * r + 1] = p1;
                                             });
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
                ck_pf_mma_x2<T>(o, 2 * np, pa, bf);
            }
        }

        if (kt + 2 < b.n_tiles) ring.ahead(k0, kt, b.n_tiles);
    }
    ck_cp_async_wait<0>(); /* nothing real is left in flight; Q's group when there was no tile */

    /* Epilogue: each quad's row sums, then o / (l + sink) straight from the accumulators. */
    const bool pair16 = ck_pf_out_pairs(a);
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int r = 0; r < 2; r++)
            ck_pf_store_row<T, NO>(a, b, pair16, (warp * MT + i) * 16 + g + 8 * r, t4, l[i][r], m[i][r], a.scale, 1.0f,
                                   [&](int n, int e) { return o[i][n][2 * r + e]; });
}

#endif /* ATTNRT_ATTN_PREFILL_CUH */
