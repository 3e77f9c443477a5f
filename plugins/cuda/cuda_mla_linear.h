/* cuda_mla_linear.h — the MLA and linear-attention ops of the cuda plugin (MLA dense/sparse, lightning, gated delta): the
 * argument structs the host passes BY VALUE to their kernels (included by both sides: fixed-size C
 * types only), and, for the host, the plan objects and entry points. Strides are in elements.
 *
 *   MLA (kernels/mla_mma.cu on tensor cores for 576 / 512, kernels/mla.cu on CUDA cores for the rest):
 *   one block per work item = (request, tile of its tokens, group of its query heads, key split). The
 *   latent rows of a key tile are gathered once per block into shared memory and serve every row of
 *   the item, so a token's heads read each latent byte once per head group (64 rows on tensor cores,
 *   16 on CUDA cores); split items write f32 partial states to the workspace and a merge launch
 *   combines them.
 *   Lightning / GDN (kernels/linear.cu): one block (4 warps) per (request, state head, 32 value
 *   columns); its [Dk x 32] f32 state slice sits in shared memory (cp.async; each thread alone reads and
 *   writes its Dk / 16 rows x 4 columns: few registers, 8-12 blocks an SM), folds the request's tokens in one by one (the recurrence itself) and writes it
 *   back: a decode streams the state once in, once out. A GDN batch of one token per request takes the
 *   decode kernel (no token loop, fewer barriers and registers: 12 blocks an SM).
 */
#ifndef CK_CUDA_MLA_LINEAR_H
#define CK_CUDA_MLA_LINEAR_H

#include <stdint.h>

/* ---- MLA ------------------------------------------------------------------------------------- */
#define CK_MLA_ROWS 16       /* query rows (tokens x heads) of one work item                        */
#define CK_MLA_KC 16         /* latent rows per shared-memory chunk                                  */
#define CK_MLA_MAX_DIM 1024  /* kv_dim at most                                                       */
#define CK_MLA_MAX_DV 1024   /* v_dim at most (4 columns per thread of 256)                          */
#define CK_MLA_MAX_SPLITS 32
#define CK_MLA_MERGE_ROWS 8  /* rows of one ck_mla_split_merge block (divides both kernels' rows)   */
#define CK_MLA_MERGE_MIN_COLS 32 /* value columns of a ck_mla_split_merge block at least (one warp) */
#define CK_MLA_MERGE_BLOCKS_SM 8 /* merge blocks an SM holds (256 threads, 32 registers): one wave   */
#define CK_MLA_THREADS 256

typedef struct ck_mla_item {
    int32_t seq, q_first, q_count, head_first, head_count;
    int32_t split, num_splits, part_index; /* part_index: first partial state of the splits, -1: none */
} ck_mla_item_t;

typedef struct ck_mla_args {
    const void          *q;          /* [T, Hq, D] */
    void                *out;        /* [T, Hq, Dv] */
    float               *lse;        /* [T, Hq] or NULL */
    const void          *kv;         /* [NB, BS, 1, D] */
    const float         *kv_scale;   /* fp8: [1] or [NB, 1]; NULL: 1 */
    const int32_t       *block_table, *qsl, *seq_lens, *indices;
    const float         *sinks;
    const ck_mla_item_t *items;      /* this launch's list (in the workspace) */
    float               *part_o;     /* [parts, CK_MLA_ROWS, Dv] */
    float               *part_lse;   /* [parts, CK_MLA_ROWS] */
    int64_t q_st[2], out_st[2], lse_st[2], kv_st[2], bt_st[2], idx_st[2];
    int64_t ks_st, bt_cols, qsl_st, sl_st, sinks_st;
    int64_t num_tokens, num_blocks, block_size, topk;
    int32_t hq, d, dv, ld;           /* ld: shared-memory row length (odd: no bank conflicts) */
    int32_t q_dtype, out_dtype, kv_dtype, causal, sparse;
    int32_t part_rows;               /* rows of one partial state: the launch's rows per item */
    float   scale;
    int32_t merge_cols;              /* ck_mla_split_merge: value columns a block (CK_MLA_MERGE_MIN_COLS x n) */
} ck_mla_args_t;

/* Dynamic shared memory of ck_mla_simt for a row length `ld`: q rows, latent rows, scores, state. */
static inline uint32_t ck_mla_smem(int ld)
{
    /* sq, sc, sp, sm / sl / salpha (f32), then slim / spos (int64, 8-byte aligned: every size above is
     * a multiple of 8 bytes since CK_MLA_ROWS is even) */
    return (uint32_t)((CK_MLA_ROWS + CK_MLA_KC) * ld * 4 + CK_MLA_ROWS * CK_MLA_KC * 4 + 3 * CK_MLA_ROWS * 4 +
                      (CK_MLA_ROWS + CK_MLA_KC) * 8);
}

/* The tensor-core MLA kernel (ck_mla_mma_{f16,bf16}[_fp8]): DeepSeek's 576 / 512 with a latent of the
 * query's 16-bit dtype or fp8 (dequantised into a 16-bit tile); 64 query rows per item, 8 warps, 32 keys
 * a tile, three cp.async stages. Per tile: S = Q C^T by (32-row half, 144-dim quarter) into four f32
 * partial-score tiles, the online softmax by 8 rows a warp into a 16-bit P tile, O += P V by 64 value
 * columns a warp (all 64 rows). Rows of the 16-bit Q / latent tiles are CK_MLA_MMA_D + 8 elements long
 * and rows of P CK_MLA_MMA_BN + 8 (ldmatrix without bank conflicts). */
#define CK_MLA_MMA_ROWS 64
#define CK_MLA_MMA_BN 32
#define CK_MLA_MMA_D 576
#define CK_MLA_MMA_DV 512
#define CK_MLA_MMA_LD (CK_MLA_MMA_D + 8)
#define CK_MLA_MMA_DQ 4 /* dim quarters of S = Q C^T */
#define CK_MLA_MMA_PLD (CK_MLA_MMA_BN + 8)
#define CK_MLA_MMA_STAGES 3
static inline uint32_t ck_mla_mma_smem(int fp8)
{
    /* sQ, the 16-bit latent tiles (one a stage; fp8: one, converted from the raw stages), the partial
     * scores [DQ][ROWS][BN] (f32), P [ROWS][PLD] (16-bit), the rescale and final factors [ROWS] (f32),
     * then [STAGES][BN] row offsets (int64), key positions (int32) and fp8 scales (f32): 226,816 bytes
     * for a 16-bit latent, 207,360 for fp8 (the H100 / H200 opt-in limit is 232,448) */
    const uint32_t st = CK_MLA_MMA_STAGES, tiles16 = fp8 ? 1u : st;
    return (uint32_t)((CK_MLA_MMA_ROWS + tiles16 * CK_MLA_MMA_BN) * CK_MLA_MMA_LD * 2 +
                      (fp8 ? st * CK_MLA_MMA_BN * CK_MLA_MMA_D : 0u) +
                      CK_MLA_MMA_DQ * CK_MLA_MMA_ROWS * CK_MLA_MMA_BN * 4 + CK_MLA_MMA_ROWS * CK_MLA_MMA_PLD * 2 +
                      2 * CK_MLA_MMA_ROWS * 4 + st * CK_MLA_MMA_BN * (8 + 4 + 4));
}

/* The Hopper MLA kernel (kernels/mla_sm90a.cu, sm_90a only; ck_mla_wg_{f16,bf16}[_fp8]): the same items and
 * splits as the tensor-core kernel above (64 query rows, a latent of the query's 16-bit dtype or fp8), 256
 * threads in two warpgroups, 64 keys a tile in wgmma's 128-byte-swizzle layout, two cp.async stages (fp8:
 * the raw codes land in the upper half of the 16-bit stage and are converted in place). */
#define CK_MLA_WG_BN 64
#define CK_MLA_WG_SLOTS 3 /* key-address slots: the tile being computed, the one being copied, the next */
static inline uint32_t ck_mla_wg_smem(int fp8)
{
    /* 1024 bytes of alignment slack, Q, two latent stages (16-bit), then [SLOTS][BN] row addresses
     * (u64) and key positions (int32), a float2 per thread of the first warpgroup (its rows' factors),
     * and for fp8 [SLOTS][BN] row scales (f32): 225,536 bytes (fp8: 226,304) */
    return (uint32_t)(1024 + (CK_MLA_MMA_ROWS + 2 * CK_MLA_WG_BN) * CK_MLA_MMA_D * 2 +
                      CK_MLA_WG_SLOTS * CK_MLA_WG_BN * (8 + 4) + 128 * 8 + (fp8 ? CK_MLA_WG_SLOTS * CK_MLA_WG_BN * 4 : 0));
}

/* ---- lightning / gated delta ----------------------------------------------------------------- */
#define CK_LIN_THREADS 128
#define CK_LIN_WARPS (CK_LIN_THREADS / 32)
#define CK_LIN_COLS 32       /* value columns per block: 8 lanes x 4                                 */
#define CK_LIN_ROW_GROUPS 16 /* 4 warps x 4 row lanes                                                */
#define CK_LIN_MAX_DK 256    /* 16 rows per thread at most                                           */
#define CK_LIN_SROW (CK_LIN_ROW_GROUPS * CK_LIN_COLS) /* floats between a thread's state rows in smem  */

enum ck_lin_op { CK_LIN_LIGHTNING = 0, CK_LIN_GDN = 1 };

typedef struct ck_lin_args {
    const void    *q, *k, *v;        /* [T, H, Dk], [T, H, Dk], [T, HV, Dv] */
    void          *out;              /* [T, HV, Dv] */
    const void    *g, *beta;         /* GDN: [T, HV] */
    const float   *slopes;           /* lightning: [H] */
    float         *state;            /* [slots, HV, Dk, Dv] */
    const int32_t *qsl, *slot_idx, *spec_idx, *accepted;
    const void    *has_init;         /* [B] 8- or 32-bit flags; NULL: every request has a state */
    int64_t q_st[2], k_st[2], v_st[2], out_st[2], g_st[2], beta_st[2], state_st[3], spec_st[2];
    int64_t slopes_st, qsl_st, slot_st, acc_st, init_st;
    int64_t num_tokens, num_seqs, num_slots;
    int32_t heads, group, dk, dv, num_spec, spec, init_bits, l2norm, vec4;
    int32_t q_dtype, k_dtype, v_dtype, out_dtype, g_dtype, beta_dtype;
    float   scale;
} ck_lin_args_t;

#ifndef __CUDACC__
#include "cuda_internal.h"

/* Every MLA, lightning and gated-delta plan starts with this head, so that plan_destroy knows what it frees. */
#define CUDA_OP_PLAN_MAGIC 0x43753132u /* "Cu12": the bytes of a live plan */
enum cuda_op_plan_kind { CUDA_PLAN_MLA = 1, CUDA_PLAN_LIGHTNING = 2, CUDA_PLAN_GATED_DELTA = 3 };
typedef struct cuda_op_plan_head {
    uint32_t          magic, kind;
    const cuda_dev_t *dev;
} cuda_op_plan_head_t;

attnrt_status_t cuda_mla_plan(cuda_dev_t *d, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                              void **plan, size_t *workspace_bytes);
attnrt_status_t cuda_mla_run(cuda_dev_t *d, const void *plan, const attnrt_mla_args_t *args, void *workspace,
                             size_t workspace_bytes, void *stream);
attnrt_status_t cuda_lightning_plan(cuda_dev_t *d, const attnrt_lightning_args_t *args, const attnrt_batch_host_t *batch,
                                    const attnrt_state_host_t *states, void **plan, size_t *workspace_bytes);
attnrt_status_t cuda_lightning_run(cuda_dev_t *d, const void *plan, const attnrt_lightning_args_t *args,
                                   void *workspace, size_t workspace_bytes, void *stream);
attnrt_status_t cuda_gated_delta_plan(cuda_dev_t *d, const attnrt_gated_delta_args_t *args,
                                      const attnrt_batch_host_t *batch, const attnrt_state_host_t *states, void **plan,
                                      size_t *workspace_bytes);
attnrt_status_t cuda_gated_delta_run(cuda_dev_t *d, const void *plan, const attnrt_gated_delta_args_t *args,
                                     void *workspace, size_t workspace_bytes, void *stream);
/* Frees any plan of the three (NULL, or not one of ours: nothing). */
void cuda_op_plan_destroy(cuda_dev_t *d, void *plan);
#endif

#endif /* CK_CUDA_MLA_LINEAR_H */
