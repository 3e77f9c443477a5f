/* cuda_kernel_args.h — the argument structs the host code (C11) passes BY VALUE to the kernels (CUDA
 * C++), and the shared-memory layout of the tensor-core attention kernel. Included by both sides, so
 * only fixed-size C types: the host's struct layout is the kernel's (same ABI, same compiler rules).
 * Strides are in elements, as in attnrt_tensor_t. Pointers are device addresses, borrowed for the launch.
 */
#ifndef CK_CUDA_KERNEL_ARGS_H
#define CK_CUDA_KERNEL_ARGS_H

#include <stdint.h>

#ifdef __CUDACC__
#define CK_HD __host__ __device__
#else
#define CK_HD
#endif

/* Element formats the kernels decode and encode (a run-time switch, not a template). */
enum ck_dtype { CK_F32 = 0, CK_F16 = 1, CK_BF16 = 2, CK_E4M3 = 3, CK_E5M2 = 4 };

/* Largest head dim the kernels hold (per lane: 8 registers in the SIMT kernel; the padded tile of
 * the tensor-core kernel). */
#define CK_MAX_HEAD_DIM 256

/* ---- kv_write ------------------------------------------------------------------------------- */
typedef struct ck_kv_side {
    const void  *src;          /* [T, Hkv, D] */
    void        *cache;        /* [num_blocks, block_size, Hkv, D] */
    const float *scale;        /* fp8 only: [1] or [num_blocks, Hkv]; NULL: 1 */
    int64_t      src_st[2];    /* token, head */
    int64_t      cache_st[3];  /* block, row, head */
    int64_t      scale_st[2];  /* block, head; both 0 for a per-tensor scale */
    int32_t      dim;
    int32_t      src_dtype;    /* enum ck_dtype */
    int32_t      cache_dtype;
    int32_t      pad_;
} ck_kv_side_t;

typedef struct ck_kv_write_args {
    ck_kv_side_t   side[2];    /* key, value */
    const int64_t *slots;      /* [T] */
    int64_t        slot_st;
    int64_t        num_tokens, num_heads, num_blocks, block_size;
} ck_kv_write_args_t;

/* ---- paged attention ------------------------------------------------------------------------ */
#define CK_SPLIT_ROWS 16   /* rows of a decode-configuration tile: the partial states' row count */
#define CK_DEC_WIDE_ROWS 32 /* rows of a wide-group decode tile (one token's heads of a GQA group wider than 16) */
#define CK_MAX_SPLITS 64   /* key splits of one row tile at most */
/* One block's work in the tensor-core kernels: query tokens [q_first, q_first + ROWS / head_count)
 * of request `seq`, query heads kv_head * group + head_first + [0, head_count), keys of split `split`
 * of `num_splits` (the key range itself is computed on the device from seq_lens, so a graph replayed
 * with grown sequences stays correct). part_index: first partial state of this row tile's splits
 * (num_splits > 1), else -1, counted in CK_SPLIT_ROWS-row slots: a tile of R rows takes R / CK_SPLIT_ROWS
 * slots a split, split s's row r at slot-row part_index x CK_SPLIT_ROWS + s x R + r. The merge list reuses the struct
 * with split = 0. */
typedef struct ck_work_item {
    int32_t seq, kv_head;
    int32_t q_first, head_first, head_count;
    int32_t split, num_splits, part_index;
} ck_work_item_t;

/* A TMA tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned) carried inside a by-value argument
 * struct: the kernel hands the field's parameter-space address to cp.async.bulk.tensor. */
#ifdef __cplusplus
#define CK_ALIGN64 alignas(64)
#else
#define CK_ALIGN64 _Alignas(64)
#endif
typedef struct ck_tmap {
    CK_ALIGN64 uint64_t opaque[16];
} ck_tmap_t;

typedef struct ck_attn_args {
    /* the decode kernel's tensor-copy form: boxes of kv_tma_rows rows of one KV head of one block, the caches
     * seen as [num_blocks][block_size][Hkv][D] (NHD: kv_tma_hnd 0) or [num_blocks][Hkv][block_size][D] (HND:
     * 1), the order of their strides (host: cuda_attention.c, encode_kv_maps) */
    ck_tmap_t    tm_k, tm_v;
    int32_t      kv_tma_rows, kv_tma_hnd;
    /* the warp-specialized prefill kernel: Q as [num_tokens][hq][dqk], boxes of 64 columns x hc heads x CK_PF_ROWS / hc
     * tokens (hc: every item's head count; host: cuda_attention.c, encode_q_map); it is persistent: block b takes item
     * b, then the list's next as it is ready for one (pf_next below), of the pf_items in the list */
    ck_tmap_t    tm_q;
    int32_t      pf_items;
    const void  *q;            /* [T, Hq, Dqk] */
    void        *out;          /* [T, Hq, Dv] */
    float       *lse;          /* [T, Hq] or NULL */
    const void  *kc, *vc;      /* caches [num_blocks, block_size, Hkv, D] */
    const float *k_scale, *v_scale; /* fp8 only; NULL: 1 */
    const int32_t *block_table, *qsl, *seq_lens;
    const float *alibi, *sinks;     /* [Hq] or NULL */
    const ck_work_item_t *items;    /* tensor-core kernels: this launch's list (in the workspace) */
    float       *part_o;       /* [num_parts, part_rows, Dv] f32, in the workspace */
    float       *part_lse;     /* [num_parts, part_rows] */
    int64_t      q_st[2], out_st[2], lse_st[2];
    int64_t      kc_st[3], vc_st[3], ks_st[2], vs_st[2];
    int64_t      bt_st[2], bt_cols, qsl_st, sl_st, alibi_st, sinks_st;
    int64_t      num_tokens, num_seqs, num_blocks, block_size;
    int32_t      hq, hkv, group, dqk, dv;
    int32_t      q_dtype, out_dtype, kv_dtype;
    int32_t      causal, window_left, window_right;
    int32_t      part_rows;
    float        scale, softcap;
    /* decode kernel: items == NULL derives item blockIdx.x = ((seq * hkv + kv_head) * dec_splits + split)
     * (every request one decode row tile of all `group` heads); split_count [num_parts]: arrivals at
     * each row tile's first partial, in the workspace, zeroed by the run before its kernels (the last block merges) */
    uint32_t    *split_count;
    int32_t      dec_splits, pad_;
    /* the warp-specialized kernel's item counters (next item past the first round, blocks done), in the workspace,
     * zeroed by the run before its kernels; NULL: block b takes items b, b + gridDim.x, ... */
    uint32_t    *pf_next;
} ck_attn_args_t;

/* ---- merge_states --------------------------------------------------------------------------- */
#define CK_MERGE_MAX_STATES 32

typedef struct ck_merge_state {
    const void  *o;
    const float *lse;
    int64_t      o_st[2], lse_st[2]; /* token, head */
    int32_t      dtype, pad_;
} ck_merge_state_t;

typedef struct ck_merge_args {
    ck_merge_state_t st[CK_MERGE_MAX_STATES];
    void        *out;
    float       *out_lse;
    const float *sinks;
    int64_t      out_st[2], out_lse_st[2], sinks_st;
    int64_t      num_tokens, num_heads, dim;
    int32_t      num_states, out_dtype;
} ck_merge_args_t;

/* ---- the tensor-core kernel's shared memory ------------------------------------------------- */
/* K/V pipeline depth: stages of a ring of cp.async copies, STAGES - 1 tiles in flight while one is
 * computed. The ring of row addresses has STAGES slots (fp8: one more), the ring of absent-key bits
 * STAGES + 1. 2 stages: a prefill block at D 128 takes 88 KB (2 a SM); 3 stages at D 64 measured slower
 * (H200). A macro, so C11 and CUDA share it. */
#define CK_MMA_STAGES(d, rows, fp8) 2
#define CK_MMA_META_SLOTS(d, rows, fp8) (CK_MMA_STAGES(d, rows, fp8) + 1)
#define CK_MMA_OFF_SLOTS(d, rows, fp8) (CK_MMA_STAGES(d, rows, fp8) + ((fp8) ? 1 : 0))

/* Byte offsets inside its dynamic shared memory, for head dims padded to `d` (64, 128, 256), `rows`
 * query rows, `bn` keys per tile. Rows are d + 8 elements long (16 bytes of padding: ldmatrix reads
 * eight rows of one column without bank conflicts). fp8 caches land raw (CK_MMA_STAGES stages) and
 * are converted into one 16-bit buffer; 16-bit caches use the stages directly. */
typedef struct ck_mma_layout {
    uint32_t q, k, v, raw, kaddr, vaddr, ksc, vsc, amask, total;
} ck_mma_layout_t;

static inline CK_HD uint32_t ck_align16(uint32_t n) { return (n + 15u) & ~15u; }

static inline CK_HD ck_mma_layout_t ck_mma_layout(int d, int rows, int bn, int fp8)
{
    ck_mma_layout_t l;
    const uint32_t stages = (uint32_t)CK_MMA_STAGES(d, rows, fp8), slots = (uint32_t)CK_MMA_META_SLOTS(d, rows, fp8);
    const uint32_t kslots = (uint32_t)CK_MMA_OFF_SLOTS(d, rows, fp8);
    const uint32_t ld = (uint32_t)d + 8u, tile = (uint32_t)bn * ld * 2u;
    const uint32_t stages16 = fp8 ? 1u : stages; /* fp8: one 16-bit tile, converted from the raw stage */
    uint32_t at = 0;
    l.q = at;    at += ck_align16((uint32_t)rows * ld * 2u);
    l.k = at;    at += stages16 * tile;
    l.v = at;    at += stages16 * tile;
    l.raw = at;  at += fp8 ? stages * 2u * (uint32_t)bn * (uint32_t)d : 0u; /* [stage][K|V][bn][d] bytes */
    l.kaddr = at; at += kslots * (uint32_t)bn * 8u; /* K and V row addresses (0: the key is absent) */
    l.vaddr = at; at += kslots * (uint32_t)bn * 8u;
    /* fp8 scales only */
    l.ksc = at;  at += fp8 ? kslots * (uint32_t)bn * 4u : 0u;
    l.vsc = at;  at += fp8 ? kslots * (uint32_t)bn * 4u : 0u;
    l.amask = at; at += slots * (uint32_t)bn / 8u; /* one bit a key */
    l.total = ck_align16(at);
    return l;
}

/* ---- the decode kernel's shared memory (attn_decode.cuh) ------------------------------------ */
/* 4 warps (fp8 D 128 / 64 kernels also in blocks of 2: `_w2` in attn_decode.cu; 16-bit D 128 by tensor copies also
 * in blocks of 8, one an SM: `_t_w8`, for batches of few row tiles); each warp streams its own
 * tiles of CK_DEC_KPW keys through a private ring of CK_DEC_STAGES stages (no block barrier in the key loop).
 * Tiles of 8 KB at D 128 (fp8 32 keys, bf16 16), three stages: ~100 KB a block, 2 blocks an SM, each warp
 * with two tiles in flight while it computes one.
 * Two stages and 3 blocks an SM (12 warps, one tile in flight each) measured slower (96 against 128 KB in flight
 * an SM). */
#define CK_DEC_WARPS 4
#define CK_DEC_KPW(d, fp8) ((fp8) ? ((d) <= 128 ? 32 : 16) : ((d) <= 64 ? 32 : 16))
#define CK_DEC_STAGES(d, fp8) ((d) == 64 && (fp8) ? 4 : (d) == 256 && !(fp8) ? 2 : 3)

typedef struct ck_dec_layout {
    uint32_t pitch, ring, addr, scl, meta, bar, q, combine, total;
} ck_dec_layout_t;

/* bulk = 0: the cp.async form (sm_80): rows of d * element bytes, 16-byte chunks XOR-swizzled, the
 * tile's row addresses published in `addr`. bulk = 1: the bulk-copy form (sm_90+, attn_decode_bulk.cuh):
 * rows land unswizzled at a pitch of row bytes + 16 (consecutive rows 16 bytes apart in the banks:
 * ldmatrix stays conflict-free); the 16 pad bytes of each K row of a stage carry that key's {K, V}
 * row addresses to the issuing lane (no `addr`); one mbarrier a (warp, stage). tma = 1 (sm_90): the cp.async
 * form's swizzled rows (wider rows as 128-byte column blocks, [blocks][kpw][128]: the same bytes), written by
 * tensor copies (no `addr`), one mbarrier a (warp, stage); the kernel starts it on a 1024-byte boundary
 * (ck_dec_layout_tma adds the slack). */
/* rows: the row tile (CK_SPLIT_ROWS, or CK_DEC_WIDE_ROWS for the wide-group kernels, whose Q^T fragments are read from
 * shared memory: `q`, rows x d 16-bit elements, 16-byte chunks XOR-swizzled by row as the ring's). */
static inline CK_HD ck_dec_layout_t ck_dec_layout_geo(int d, int fp8, int bulk, int tma, int kpw_keys, int stages, int warps,
                                                      int rows)
{
    ck_dec_layout_t l;
    const uint32_t kpw = (uint32_t)kpw_keys, st = (uint32_t)stages, w = (uint32_t)warps, r = (uint32_t)rows;
    const uint32_t row = (uint32_t)d * (fp8 ? 1u : 2u);
    const int mb = bulk || tma;
    uint32_t at = 0;
    l.pitch = row + (bulk && !tma ? 16u : 0u);
    l.ring = at; at += w * st * 2u * kpw * l.pitch; /* [warp][stage][K|V][kpw][pitch] */
    l.addr = at; at += mb ? 0u : w * kpw * 16u;    /* [warp][kpw] {K row address, V row address} */
    l.scl = at;  at += fp8 ? w * st * kpw * 8u : 0u; /* [warp][stage][kpw] {k scale, v scale} */
    l.meta = at; at += w * st * 8u;              /* [warp][stage] {absent-key bits, largest |v scale|} */
    l.bar = at;  at += mb ? w * st * 8u : 0u;    /* [warp][stage] mbarrier */
    l.q = at;    at += r > CK_SPLIT_ROWS ? r * (uint32_t)d * 2u : 0u; /* [rows][d] Q, wide-group kernels only */
    /* after the loop: m, l per (warp, row), acc [warp][rows][d] f32, merge weights, from 0 */
    l.combine = 0;
    const uint32_t combine_end = 2u * w * r * 4u + w * r * (uint32_t)d * 4u;
    l.total = ck_align16(at > combine_end ? at : combine_end);
    return l;
}

/* The layout at the default geometry (CK_DEC_KPW keys a tile, CK_DEC_STAGES stages) */
static inline CK_HD ck_dec_layout_t ck_dec_layout_of(int d, int fp8, int bulk, int tma, int warps, int rows)
{
    return ck_dec_layout_geo(d, fp8, bulk, tma, CK_DEC_KPW(d, fp8), CK_DEC_STAGES(d, fp8), warps, rows);
}

/* Whether a cache of this kind takes the bulk form on sm_90+: 16-bit rows only. fp8 rows (128 bytes at
 * D 128) need twice the copies a tile, and its kernel became instruction-bound on them (0.185 against 0.162 ms at
 * B64), so fp8 keeps the cp.async form. */
#define CK_DEC_BULK_KV(fp8) (!(fp8))

/* What the host reserves: the larger of the two forms (the device picks its form by its code's
 * architecture). bf16 D 128: 104,640 bytes (bulk), still 2 blocks an SM on the H200. */
static inline CK_HD ck_dec_layout_t ck_dec_layout(int d, int fp8, int warps, int rows)
{
    ck_dec_layout_t l = ck_dec_layout_of(d, fp8, 0, 0, warps, rows);
    const uint32_t bulk_total = CK_DEC_BULK_KV(fp8) ? ck_dec_layout_of(d, fp8, 1, 0, warps, rows).total : 0u;
    if (bulk_total > l.total) l.total = bulk_total;
    return l;
}

/* fp8 D 128 by tensor copies: two tile geometries (keys a warp-tile, stages), the plan picking one by the keys
 * a block reads (cuda_kernel_table.c). The other tensor-copy kernels take CK_DEC_KPW / CK_DEC_STAGES. */
#define CK_DEC_T32_KPW 32
#define CK_DEC_T32_STAGES 3
#define CK_DEC_T16_KPW 16
#define CK_DEC_T16_STAGES 4

/* What the host reserves for a tensor-copy decode kernel of kpw keys a tile and `stages` stages (sm_90+ only):
 * its layout plus 1008 bytes to align the ring to 1024. */
static inline CK_HD uint32_t ck_dec_layout_tma(int d, int fp8, int kpw, int stages, int warps, int rows)
{
    return ck_dec_layout_geo(d, fp8, 0, 1, kpw, stages, warps, rows).total + 1008u;
}

#endif /* CK_CUDA_KERNEL_ARGS_H */
