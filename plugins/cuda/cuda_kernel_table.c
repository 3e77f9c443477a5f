/* cuda_kernel_table.c — the kernel table: every kernel the cuda plugin loads (its name, fatbin, arch, query and cache
 * types, head dims, tile, what it needs beside it) and, for the paged-attention rows, the rule under which it serves;
 * the loader that finds a device's kernels by the table, and the one selection function the plan asks. */
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_prefill_wg_cfg.h"
#include "plugin_error.h"

#define DECODE_BN 64                  /* keys of a decode split's unit (the plan's key tiles) */
#define PF_ROWS_MAX CK_PF_ROWS        /* a persistent item's query heads at most (its Q boxes take every head) */
#define WS_DEC_MIN_TILES 8            /* row tiles of a pure decode batch of wide groups for the persistent kernel */
#define W8_MAX_KEYS 2048              /* 4-warp decode blocks of at most this many keys give way to 8-warp ones */
#define FP8K_MIN_MEAN_KEYS 1024       /* fp8 prefill items of at least this many keys on average read K by e4m3 */
#define LONG_MIN_MEAN_KEYS 2048       /* D 64 prefill items of at least this many keys on average take 192-key tiles */
#define L2W_MAX_KEYS 4096             /* fp8 D 64 blocks of at most this many keys fetch 256 bytes from the L2 */

static const char *const q_names[2] = {"f16", "bf16"};
static const char *const kv_names[2][2] = {{"kv16", "fp8"}, {"e4m3", "e5m2"}};

/* ---- shared memory of each kernel (the layouts the kernels and the host share) ------------------------------------ */
static uint32_t smem_prefill(int d, int fp8) { return ck_mma_layout(d, 64, d == 256 ? 32 : 64, fp8).total; }
static uint32_t smem_fa2(int d, int fp8) { return (void)fp8, ck_pf_smem_bytes(d); }
static uint32_t smem_wg(int d, int fp8) { return (void)fp8, ck_pfw_smem_bytes(d); }
static uint32_t smem_ws(int d, int fp8) { return ck_pfs_smem_bytes(d, fp8, CK_PFS_BN(d)); }
static uint32_t smem_ws_n192(int d, int fp8) { return ck_pfs_smem_bytes(d, fp8, CK_PFS_BN_LONG); }
static uint32_t smem_decode(int d, int fp8) { return ck_dec_layout(d, fp8, CK_DEC_WARPS, CK_SPLIT_ROWS).total; }
static uint32_t smem_decode_w2(int d, int fp8) { return ck_dec_layout(d, fp8, 2, CK_SPLIT_ROWS).total; }
static uint32_t smem_wide(int d, int fp8) { return ck_dec_layout(d, fp8, CK_DEC_WARPS, CK_DEC_WIDE_ROWS).total; }
static uint32_t smem_tma(int d, int fp8)
{
    return ck_dec_layout_tma(d, fp8, CK_DEC_KPW(d, fp8), CK_DEC_STAGES(d, fp8), CK_DEC_WARPS, CK_SPLIT_ROWS);
}
static uint32_t smem_tma_w2(int d, int fp8) { return ck_dec_layout_tma(d, fp8, CK_DEC_KPW(d, fp8), CK_DEC_STAGES(d, fp8), 2, CK_SPLIT_ROWS); }
static uint32_t smem_tma_w8(int d, int fp8) { return ck_dec_layout_tma(d, fp8, CK_DEC_KPW(d, fp8), CK_DEC_STAGES(d, fp8), 8, CK_SPLIT_ROWS); }
static uint32_t smem_wide_tma(int d, int fp8)
{
    return ck_dec_layout_tma(d, fp8, CK_DEC_KPW(d, fp8), CK_DEC_STAGES(d, fp8), CK_DEC_WARPS, CK_DEC_WIDE_ROWS);
}
static uint32_t smem_t32(int d, int fp8) { return ck_dec_layout_tma(d, fp8, CK_DEC_T32_KPW, CK_DEC_T32_STAGES, CK_DEC_WARPS, CK_SPLIT_ROWS); }
static uint32_t smem_t32_w2(int d, int fp8) { return ck_dec_layout_tma(d, fp8, CK_DEC_T32_KPW, CK_DEC_T32_STAGES, 2, CK_SPLIT_ROWS); }
static uint32_t smem_t16(int d, int fp8) { return ck_dec_layout_tma(d, fp8, CK_DEC_T16_KPW, CK_DEC_T16_STAGES, CK_DEC_WARPS, CK_SPLIT_ROWS); }

/* ---- the rules ---------------------------------------------------------------------------------------------------- */
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int dim_of(int di) { return 64 << di; }

/* A per-tensor fp8 scale: absent, or one element */
static int per_tensor(const attnrt_tensor_t *scale) { return !scale || !scale->data || scale->ndim < 2; }

/* The call runs on the tensor-core kernels at all: a 16-bit query, a cache of its type or fp8, head dims up to 256 in
 * multiples of 16-byte copies, and both general kernels of its head dim loaded (else the SIMT kernel takes it) */
static int tensor_cores(const cuda_dev_t *d, const cuda_select_t *s)
{
    const int qk = cuda_ck_dtype(s->a->query->dtype), kvk = cuda_ck_dtype(s->a->key_cache->dtype);
    const int64_t gran = s->fp8 ? 16 : 8; /* elements a 16-byte copy */
    if (!d->k.mma_ok || d->force_simt || (qk != CK_F16 && qk != CK_BF16) || (kvk != qk && !s->fp8) || s->di < 0 ||
        s->dqk % gran || s->dv % gran)
        return 0;
    return cuda_kernel_fn(d, CK_K_PREFILL, s) && cuda_kernel_fn(d, CK_K_DECODE, s);
}

/* The fast prefill kernels' calls: a cache of the query's type, Dqk = Dv in {64, 128, 256}, no soft-cap or ALiBi, a
 * non-negative scale (they take each row's max of the raw scores: the scale must not flip their order) */
static int fast_prefill(const cuda_select_t *s)
{
    const attnrt_attention_args_t *a = s->a;
    return !s->fp8 && s->di >= 0 && s->dqk == s->dv && s->dqk == dim_of(s->di) &&
           cuda_ck_dtype(a->key_cache->dtype) == cuda_ck_dtype(a->query->dtype) && !(a->softcap > 0.0f) && !a->alibi_slopes &&
           a->scale >= 0.0f;
}

/* The persistent kernel's items take every query head of a group in their Q boxes: at most CK_PF_ROWS, or whole
 * multiples of it */
static int ws_group_ok(const cuda_select_t *s) { return s->group <= PF_ROWS_MAX || s->group % PF_ROWS_MAX == 0; }

static int rule_prefill_fast(const cuda_dev_t *d, cuda_select_t *s) { return tensor_cores(d, s) && fast_prefill(s); }
static int rule_prefill(const cuda_dev_t *d, cuda_select_t *s) { return tensor_cores(d, s); }
static int rule_always(const cuda_dev_t *d, cuda_select_t *s) { return (void)d, (void)s, 1; }

static int rule_ws(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    if (s->split) return s->prefill_ws == CK_K_PREFILL_WS;
    return (s->prefill == CK_K_PREFILL_WG || s->prefill == CK_K_PREFILL_FA2) && s->box_rows && ws_group_ok(s);
}

static int rule_ws_fp8(const cuda_dev_t *d, cuda_select_t *s)
{
    const attnrt_attention_args_t *a = s->a;
    if (s->split) return s->prefill_ws == CK_K_PREFILL_WS_FP8;
    return s->prefill == CK_K_PREFILL && s->fp8 && tensor_cores(d, s) && s->dqk == s->dv && s->dqk == dim_of(s->di) &&
           !(a->softcap > 0.0f) && !a->alibi_slopes && a->scale >= 0.0f && per_tensor(a->key_scale) &&
           per_tensor(a->value_scale) && ws_group_ok(s) && s->box_rows;
}

/* its tiles cost less, its Q split more an item (~1 us): items of many keys */
static int rule_ws_fp8_kd(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    return s->split && s->prefill_ws == CK_K_PREFILL_WS_FP8 && s->n_prefill > 0 &&
           s->prefill_keys >= FP8K_MIN_MEAN_KEYS * s->n_prefill;
}

/* a tile's fixed work over more keys; short items lose more to their masked last tile */
static int rule_ws_n192(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    return s->split && s->prefill_ws == CK_K_PREFILL_WS && s->decode != CK_K_DECODE_WS && s->n_prefill > 0 &&
           s->dqk == 64 && s->prefill_keys >= LONG_MIN_MEAN_KEYS * s->n_prefill;
}

static int rule_decode_ws(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    if (s->split) return s->decode == CK_K_DECODE_WS;
    const int64_t tiles = s->one_token * s->num_kv_heads * ceil_div(s->group, PF_ROWS_MAX);
    return s->prefill_ws == CK_K_PREFILL_WS && min64(s->group, PF_ROWS_MAX) <= s->dqk && s->group > CK_SPLIT_ROWS &&
           s->all_decode && tiles > 0 && tiles >= WS_DEC_MIN_TILES;
}

/* The 16-row decode kernel the call takes without the wide-group ones: by tensor copies, or the general one */
static int rule_tma(const cuda_dev_t *d, cuda_select_t *s);
static int decode16(const cuda_dev_t *d, cuda_select_t *s)
{
    return cuda_kernel_fn(d, CK_K_DECODE_TMA, s) && rule_tma(d, s) ? CK_K_DECODE_TMA : CK_K_DECODE;
}

/* groups wider than a 16-row tile whose one-token requests' 16-row tiles are more than the device holds at once */
static int rule_wide(const cuda_dev_t *d, cuda_select_t *s)
{
    if (s->split) return s->decode == CK_K_DECODE_WIDE;
    if (s->group <= CK_SPLIT_ROWS || s->fp8) return 0;
    const int64_t tiles16 = s->one_token * s->num_kv_heads * ceil_div(s->group, CK_SPLIT_ROWS);
    const int64_t res16 = cuda_kernel_resident(d, decode16(d, s), s);
    return res16 > 0 && tiles16 > res16;
}

static int rule_wide_tma(const cuda_dev_t *d, cuda_select_t *s)
{
    if (s->split) return s->decode == CK_K_DECODE_WIDE_TMA;
    return s->box_rows && cuda_kernel_fn(d, CK_K_DECODE_WIDE, s) && rule_wide(d, s);
}

static int rule_tma(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    if (s->split) return s->decode == CK_K_DECODE_TMA;
    return s->box_rows != 0;
}

static int rule_decode(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    return !s->split || s->decode == CK_K_DECODE;
}

/* the keys a decode block reads */
static int64_t block_keys(const cuda_select_t *s) { return min64(s->chunk, s->longest) * DECODE_BN; }

/* where the 4-warp blocks fit in one round: no more of them than SMs (twice the warps on the same blocks), or short
 * ones (one round of 8-warp blocks in longer splits, half the partials to merge) */
static int rule_tma_w8(const cuda_dev_t *d, cuda_select_t *s)
{
    if (!s->split || s->decode != CK_K_DECODE_TMA || s->longest <= 0) return 0;
    if (s->blocks <= d->sm_count) return 1;
    if (s->blocks > s->resident || block_keys(s) > W8_MAX_KEYS) return 0;
    int64_t res8 = cuda_kernel_resident(d, CK_K_DECODE_TMA_W8, s), blocks8 = 0;
    if (res8 <= 0) res8 = d->sm_count > 0 ? d->sm_count : 1;
    const int64_t chunk8 = s->split_for(s, res8, &blocks8);
    if (blocks8 > res8) return 0;
    s->chunk = chunk8;
    return 1;
}

/* fp8 D 128: the tile of its tensor-copy kernel for the keys a block reads (32 / 16 keys; 0: the cp.async kernel). 32-key
 * tiles up to 2048 keys a block (4096 where a cache block holds whole 32-row boxes), 16-key ones from 8192; an unsplit
 * batch of more row tiles than one round takes 32-key tiles where its blocks read 8192 keys or more, or where it is more
 * than one round of their 2-warp twin */
static int fp8_tile(const cuda_dev_t *d, cuda_select_t *s)
{
    if (!s->split || s->decode != CK_K_DECODE || !s->fp8 || s->dqk != 128 || s->dv != 128 || s->longest <= 0) return 0;
    const int64_t keys = block_keys(s);
    int rounds32 = 0;
    if (s->chunk >= s->longest && s->dec_tiles > s->resident && cuda_kernel_fn(d, CK_K_DECODE_T32_W2, s)) {
        const int64_t res2 = cuda_kernel_resident(d, CK_K_DECODE_T32_W2, s);
        rounds32 = keys >= 8192 || (res2 > 0 && s->dec_tiles > res2);
    }
    return keys <= (s->block_size % 32 == 0 ? 4096 : 2048) || rounds32 ? 32 : keys >= 8192 ? 16 : 0;
}

/* 2-warp blocks (twice as many resident): an unsplit batch of groups up to 16 heads whose rounds of them take no longer
 * than the 4-warp blocks' (the same keys, half the lockstep block starts and ends) */
static int w2_fits(const cuda_dev_t *d, cuda_select_t *s, int twin)
{
    if (s->group > CK_SPLIT_ROWS || s->longest <= 0 || s->chunk < s->longest || s->dec_tiles <= s->resident) return 0;
    const int64_t res2 = cuda_kernel_resident(d, twin, s);
    return res2 > 0 && ceil_div(s->dec_tiles, res2) * 2 <= ceil_div(s->dec_tiles, s->resident);
}

static int rule_t32_w2(const cuda_dev_t *d, cuda_select_t *s) { return s->box_rows && fp8_tile(d, s) == 32 && w2_fits(d, s, CK_K_DECODE_T32_W2); }
static int rule_t32(const cuda_dev_t *d, cuda_select_t *s) { return s->box_rows && fp8_tile(d, s) == 32; }
static int rule_t16(const cuda_dev_t *d, cuda_select_t *s) { return s->box_rows && fp8_tile(d, s) == 16; }
static int rule_tma_w2(const cuda_dev_t *d, cuda_select_t *s)
{
    return s->split && s->decode == CK_K_DECODE_TMA && s->fp8 && w2_fits(d, s, CK_K_DECODE_TMA_W2);
}
static int rule_w2(const cuda_dev_t *d, cuda_select_t *s)
{
    return s->split && s->decode == CK_K_DECODE && s->fp8 && w2_fits(d, s, CK_K_DECODE_W2);
}

/* an NHD cache's 64-byte rows: a 256-byte fetch brings the neighbour heads' rows, which their blocks read at about the
 * same time, unless the blocks are long (they drift apart and fetch twice) */
static int rule_l2w(const cuda_dev_t *d, cuda_select_t *s)
{
    (void)d;
    return s->split && s->decode == CK_K_DECODE && s->fp8 && s->nhd && block_keys(s) <= L2W_MAX_KEYS;
}

/* ---- the table ---------------------------------------------------------------------------------------------------- */
#define Q_BOTH 3u
#define D64 1u
#define D128 2u
#define D256 4u
#define D_ALL 7u

const cuda_kernel_t cuda_kernel_table[CK_KERNELS] = {
    [CK_K_PREFILL_WG] = {CK_K_PREFILL_WG, "ck_attn_prefill_wg_{q}_d{d}", CUDA_FAMILY_SM90A, CK_ROLE_PREFILL, CK_ARCH_SM90A,
        Q_BOTH, CK_KV_16_FP8, {D_ALL, 0}, 1, CK_PF_ROWS, "64 keys a tile (128 at D 64); 2 warpgroups; 2 blocks an SM (1 at D 256)",
        CK_PFW_WARPS, 1, -1, -1, -1, smem_wg, -1, rule_prefill_fast,
        "prefill tiles of a cache of the query's type, Dqk = Dv, no soft-cap / ALiBi, scale >= 0"},
    [CK_K_PREFILL_FA2] = {CK_K_PREFILL_FA2, "ck_attn_prefill_{q}_d{d}", CUDA_FAMILY_ATTENTION, CK_ROLE_PREFILL, CK_ARCH_SM80,
        Q_BOTH, CK_KV_16_FP8, {D_ALL, 0}, 1, CK_PF_ROWS, "64 keys a tile; 4 warps (8 at D 256); 3 / 2 / 1 blocks an SM at D 64 / 128 / 256",
        0, 1, -1, CK_K_PREFILL_WG, -1, smem_fa2, -1, rule_prefill_fast,
        "as the wgmma kernel, where it is not loaded (compute capability 8.x and newer than 9.0)"},
    [CK_K_PREFILL] = {CK_K_PREFILL, "ck_attn_mma_prefill_{q}_{kv}_d{d}", CUDA_FAMILY_ATTENTION, CK_ROLE_PREFILL, CK_ARCH_SM80,
        Q_BOTH, CK_KV_16_FP8, {D_ALL, D_ALL}, 0, 64, "64 keys a tile (32 at D 256); 4 warps; 2 blocks an SM",
        4, 1, -1, -1, -1, smem_prefill, -1, rule_prefill,
        "every other tensor-core prefill tile: fp8 caches, per-block scales, soft-cap, ALiBi, Dqk != Dv"},
    [CK_K_PREFILL_WS_FP8_KD] = {CK_K_PREFILL_WS_FP8_KD, "ck_attn_prefill_ws_{q}_{kv}_d{d}_kd", CUDA_FAMILY_SM90A,
        CK_ROLE_PREFILL_WS, CK_ARCH_SM90A, 2u, CK_KV_E4M3_E5M2, {D128 | D256, D128 | D256}, 1, CK_PF_ROWS,
        "128 keys a tile (64 at D 256); producer + 2 consumer warpgroups; 1 persistent block an SM",
        12, 1, CK_K_PREFILL_WS_FP8, -1, -1, smem_ws, 32, rule_ws_fp8_kd,
        "the fp8 form's items with a bf16 Q that read >= 1024 keys on average"},
    [CK_K_PREFILL_WS_FP8] = {CK_K_PREFILL_WS_FP8, "ck_attn_prefill_ws_{q}_{kv}_d{d}", CUDA_FAMILY_SM90A, CK_ROLE_PREFILL_WS,
        CK_ARCH_SM90A, Q_BOTH, CK_KV_E4M3_E5M2, {D_ALL, D_ALL}, 1, CK_PF_ROWS,
        "128 keys a tile (64 at D 256); producer + 2 consumer warpgroups; 1 persistent block an SM",
        12, 1, CK_K_PREFILL_WS, -1, -1, smem_ws, 32, rule_ws_fp8,
        "prefill items over an fp8 cache with per-tensor scales, Dqk = Dv, no soft-cap / ALiBi, cache blocks of a multiple of "
        "8 rows, a group of <= 128 heads or a multiple of 128"},
    [CK_K_PREFILL_WS_N192] = {CK_K_PREFILL_WS_N192, "ck_attn_prefill_ws_{q}_d{d}_n192", CUDA_FAMILY_SM90A, CK_ROLE_PREFILL_WS,
        CK_ARCH_SM90A, Q_BOTH, CK_KV_16_FP8, {D64, 0}, 1, CK_PF_ROWS,
        "192 keys a tile; producer + 2 consumer warpgroups; 1 persistent block an SM",
        12, 1, CK_K_PREFILL_WS, -1, -1, smem_ws_n192, 32, rule_ws_n192,
        "D 64 items of the 16-bit form that read >= 2048 keys on average"},
    [CK_K_PREFILL_WS] = {CK_K_PREFILL_WS, "ck_attn_prefill_ws_{q}_d{d}", CUDA_FAMILY_SM90A, CK_ROLE_PREFILL_WS, CK_ARCH_SM90A,
        Q_BOTH, CK_KV_16_FP8, {D_ALL, 0}, 1, CK_PF_ROWS,
        "128 keys a tile (64 at D 256); producer + 2 consumer warpgroups; 1 persistent block an SM",
        12, 1, CK_K_PREFILL_WG, -1, -1, smem_ws, 32, rule_ws,
        "the wgmma kernel's items where the cache blocks are a multiple of 8 rows and the group <= 128 heads or a multiple"},
    [CK_K_DECODE_WS] = {CK_K_DECODE_WS, "ck_attn_prefill_ws_dec_{q}_d{d}", CUDA_FAMILY_SM90A, CK_ROLE_DECODE, CK_ARCH_SM90A,
        Q_BOTH, CK_KV_16_FP8, {D_ALL, 0}, 1, CK_PF_ROWS,
        "one token's heads of a KV head, 128 keys a tile (64 at D 256), in key splits; 1 persistent block an SM",
        12, 1, CK_K_PREFILL_WG, -1, -1, smem_ws, 32, rule_decode_ws,
        "pure decode batches (every request <= 1 token) of groups of 17-128 heads (or multiples of 128, <= D) with >= 8 "
        "row tiles, where the persistent prefill kernel runs"},
    [CK_K_DECODE_WIDE_TMA] = {CK_K_DECODE_WIDE_TMA, "ck_attn_mma_decode_{q}_{kv}_d{d}_t_r32", CUDA_FAMILY_DECODE,
        CK_ROLE_DECODE, CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {D64 | D128, 0}, 1, CK_DEC_WIDE_ROWS,
        "32 keys a warp's tile (16 at D 128); 4 warps; 2 blocks an SM",
        4, 1, -1, -1, CK_K_DECODE_WIDE, smem_wide_tma, 0, rule_wide_tma,
        "as the 32-row kernel, Dqk = Dv, cache blocks of a multiple of 8 rows"},
    [CK_K_DECODE_WIDE] = {CK_K_DECODE_WIDE, "ck_attn_mma_decode_{q}_{kv}_d{d}_r32", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_SM80, Q_BOTH, CK_KV_16_FP8, {D64 | D128, 0}, 0, CK_DEC_WIDE_ROWS,
        "32 keys a warp's tile (16 at D 128); 4 warps; 2 blocks an SM",
        4, 1, -1, -1, -1, smem_wide, -1, rule_wide,
        "16-bit groups of > 16 heads whose one-token requests' 16-row tiles are more than the device holds at once"},
    [CK_K_DECODE_TMA_W8] = {CK_K_DECODE_TMA_W8, "ck_attn_mma_decode_{q}_{kv}_d{d}_t_w8", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {D128, 0}, 1, CK_SPLIT_ROWS, "16 keys a warp's tile; 8 warps; 1 block an SM",
        8, 1, CK_K_DECODE_TMA, -1, CK_K_DECODE, smem_tma_w8, 0, rule_tma_w8,
        "the tensor-copy kernel's batches whose 4-warp blocks fit one round: no more than the SMs, or <= 2048 keys each "
        "(then in longer splits, one round)"},
    [CK_K_DECODE_T32_W2] = {CK_K_DECODE_T32_W2, "ck_attn_mma_decode_{q}_{kv}_d{d}_t32_w2", CUDA_FAMILY_DECODE,
        CK_ROLE_DECODE, CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {0, D128}, 1, CK_SPLIT_ROWS,
        "32 keys a warp's tile, 3 stages; 2 warps; 4 blocks an SM",
        2, 1, CK_K_DECODE_T32, -1, CK_K_DECODE, smem_t32_w2, CK_DEC_T32_KPW, rule_t32_w2,
        "the 32-key kernel's unsplit batches of groups <= 16 whose 2-warp rounds take no longer"},
    [CK_K_DECODE_T32] = {CK_K_DECODE_T32, "ck_attn_mma_decode_{q}_{kv}_d{d}_t32", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {0, D128}, 1, CK_SPLIT_ROWS, "32 keys a warp's tile, 3 stages; 4 warps; 2 blocks an SM",
        4, 1, -1, -1, CK_K_DECODE, smem_t32, CK_DEC_T32_KPW, rule_t32,
        "blocks of <= 2048 keys (<= 4096 where cache blocks are a multiple of 32 rows); unsplit batches of more row tiles "
        "than one round whose blocks read >= 8192 keys or that are more than one round of the 2-warp twin"},
    [CK_K_DECODE_T16] = {CK_K_DECODE_T16, "ck_attn_mma_decode_{q}_{kv}_d{d}_t16", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {0, D128}, 1, CK_SPLIT_ROWS, "16 keys a warp's tile, 4 stages; 4 warps; 2 blocks an SM",
        4, 1, -1, -1, CK_K_DECODE, smem_t16, CK_DEC_T16_KPW, rule_t16, "blocks of >= 8192 keys"},
    [CK_K_DECODE_TMA_W2] = {CK_K_DECODE_TMA_W2, "ck_attn_mma_decode_{q}_{kv}_d{d}_t_w2", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {0, D64}, 1, CK_SPLIT_ROWS, "32 keys a warp's tile; 2 warps; 4 blocks an SM",
        2, 1, CK_K_DECODE_TMA, -1, CK_K_DECODE, smem_tma_w2, 0, rule_tma_w2,
        "the tensor-copy kernel's unsplit batches of groups <= 16 whose 2-warp rounds take no longer"},
    [CK_K_DECODE_W2] = {CK_K_DECODE_W2, "ck_attn_mma_decode_{q}_{kv}_d{d}_w2", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_SM80, Q_BOTH, CK_KV_16_FP8, {0, D128}, 0, CK_SPLIT_ROWS, "32 keys a warp's tile; 2 warps; 4 blocks an SM",
        2, 1, CK_K_DECODE, -1, -1, smem_decode_w2, -1, rule_w2,
        "the cp.async kernel's unsplit batches of groups <= 16 whose 2-warp rounds take no longer"},
    [CK_K_DECODE_L2W] = {CK_K_DECODE_L2W, "ck_attn_mma_decode_{q}_{kv}_d{d}_w", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_SM80, Q_BOTH, CK_KV_16_FP8, {0, D64}, 0, CK_SPLIT_ROWS, "32 keys a warp's tile; 4 warps; 2 blocks an SM",
        4, 1, CK_K_DECODE, -1, -1, smem_decode, -1, rule_l2w, "the cp.async kernel's NHD caches, blocks of <= 4096 keys"},
    [CK_K_DECODE_TMA] = {CK_K_DECODE_TMA, "ck_attn_mma_decode_{q}_{kv}_d{d}_t", CUDA_FAMILY_DECODE, CK_ROLE_DECODE,
        CK_ARCH_TMA, Q_BOTH, CK_KV_16_FP8, {D_ALL, D64}, 1, CK_SPLIT_ROWS,
        "32 keys a warp's tile (16 at 16-bit D 128 / 256); 4 warps; 2 blocks an SM (1 at D 256)",
        4, 1, -1, -1, CK_K_DECODE, smem_tma, 0, rule_tma, "Dqk = Dv, cache blocks of a multiple of 8 rows"},
    [CK_K_DECODE] = {CK_K_DECODE, "ck_attn_mma_decode_{q}_{kv}_d{d}", CUDA_FAMILY_DECODE, CK_ROLE_DECODE, CK_ARCH_SM80, Q_BOTH,
        CK_KV_16_FP8, {D_ALL, D_ALL}, 0, CK_SPLIT_ROWS,
        "32 / 16 keys a warp's tile (fp8 / 16-bit at D 128); 4 warps; 2 blocks an SM (1 at D 256)",
        4, 1, -1, -1, -1, smem_decode, -1, rule_decode, "every other tensor-core decode tile"},
    [CK_K_SIMT] = {CK_K_SIMT, "ck_attn_simt", CUDA_FAMILY_ATTENTION, CK_ROLE_PREFILL, CK_ARCH_ANY, 0, CK_KV_16_FP8, {0, 0}, 0,
        1, "one warp a query row; 4 rows a block", 4, 1, -1, -1, -1, NULL, -1, rule_always,
        "every attention the tensor-core kernels do not take: f32 queries, other cache types, unaligned caches (at run), "
        "ATTNRT_CUDA_KERNELS=simt"},
    [CK_K_KV_WRITE] = {CK_K_KV_WRITE, "ck_kv_write", CUDA_FAMILY_ATTENTION, CK_ROLE_OP, CK_ARCH_ANY, 0, CK_KV_16_FP8, {0, 0}, 0,
        0, "-", 4, 1, -1, -1, -1, NULL, -1, NULL, "kv_write: every cache dtype and layout"},
    [CK_K_MERGE] = {CK_K_MERGE, "ck_merge_states", CUDA_FAMILY_ATTENTION, CK_ROLE_OP, CK_ARCH_ANY, 0, CK_KV_16_FP8, {0, 0}, 0, 0,
        "-", 4, 1, -1, -1, -1, NULL, -1, NULL, "merge_states"},
    [CK_K_MLA_WG] = {CK_K_MLA_WG, "ck_mla_wg_{q}[_fp8]", CUDA_FAMILY_SM90A, CK_ROLE_OP, CK_ARCH_SM90A, Q_BOTH, CK_KV_16_FP8,
        {0, 0}, 0, 64, "64 keys a tile, 2 cp.async stages; 2 warpgroups; 1 block an SM", 8, 0, -1, -1, -1, NULL, -1, NULL,
        "MLA 576 / 512 with a latent of the query's 16-bit type or fp8, 16-byte aligned rows"},
    [CK_K_MLA_MMA] = {CK_K_MLA_MMA, "ck_mla_mma_{q}[_fp8]", CUDA_FAMILY_MLA, CK_ROLE_OP, CK_ARCH_SM80, Q_BOTH, CK_KV_16_FP8,
        {0, 0}, 0, 64, "32 keys a tile, 3 stages; 8 warps; 1 block an SM", 8, 0, -1, -1, -1, NULL, -1, NULL,
        "as the wgmma MLA kernel, where the sm_90a fatbin is not loaded"},
    [CK_K_MLA_SIMT] = {CK_K_MLA_SIMT, "ck_mla_simt", CUDA_FAMILY_MLA, CK_ROLE_OP, CK_ARCH_ANY, 0, CK_KV_16_FP8, {0, 0}, 0, 16,
        "16 latent rows a chunk; 8 warps", 8, 0, -1, -1, -1, NULL, -1, NULL, "every other MLA call"},
    [CK_K_MLA_MERGE] = {CK_K_MLA_MERGE, "ck_mla_split_merge", CUDA_FAMILY_MLA, CK_ROLE_OP, CK_ARCH_ANY, 0, CK_KV_16_FP8, {0, 0},
        0, 8, "8 rows x a column slice a block", 8, 0, -1, -1, -1, NULL, -1, NULL, "MLA batches cut into key splits"},
    [CK_K_LIN_DECODE] = {CK_K_LIN_DECODE, "ck_lin_<lightning|gdn>_decode_r<4|8>", CUDA_FAMILY_LINEAR, CK_ROLE_OP, CK_ARCH_ANY,
        0, CK_KV_16_FP8, {0, 0}, 0, 0, "32 value columns a block; 4 warps; 12 blocks an SM", 4, 0, -1, -1, -1, NULL, -1, NULL,
        "lightning / gated delta: one token a request, no speculative slots, 32 < Dk <= 128"},
    [CK_K_LIN] = {CK_K_LIN, "ck_lin_<lightning|gdn>_r<1|2|4|8|16>_<v4|s>", CUDA_FAMILY_LINEAR, CK_ROLE_OP, CK_ARCH_ANY, 0,
        CK_KV_16_FP8, {0, 0}, 0, 0, "32 value columns a block; 4 warps; 8-10 blocks an SM", 4, 0, -1, -1, -1, NULL, -1, NULL,
        "every other lightning / gated delta call (float4 state access where the pool allows: `_v4`)"},
};

/* ---- names, kernels, loading ----------------------------------------------------------------------------------- */
void cuda_kernel_name(const cuda_kernel_t *r, int t, int c, int di, char *buf, size_t cap)
{
    size_t n = 0;
    for (const char *p = r->name; *p && n + 1 < cap; p++) {
        const char *put = NULL;
        char num[8];
        if (!strncmp(p, "{q}", 3)) put = q_names[t];
        else if (!strncmp(p, "{kv}", 4)) put = kv_names[r->kv][c];
        else if (!strncmp(p, "{d}", 3)) snprintf(num, sizeof num, "%d", dim_of(di)), put = num;
        if (!put) {
            buf[n++] = *p;
            continue;
        }
        n += (size_t)snprintf(buf + n, cap - n, "%s", put);
        if (n >= cap) n = cap - 1;
        p = strchr(p, '}');
    }
    buf[n] = 0;
}

/* Indices of a row's kernel for the call of s: query type, cache form, head dim (0 where the name has none) */
static int kernel_at(const cuda_kernel_t *r, const cuda_select_t *s, int *t, int *c, int *di)
{
    const int named = r->dims[0] | r->dims[1]; /* 0: one kernel, no {kv} / {d} */
    *t = r->q ? s->t : 0;
    *c = !named ? 0 : r->kv == CK_KV_E4M3_E5M2 ? s->e5m2 : s->form;
    *di = named ? s->di : 0;
    if (*di < 0 || (r->q && !((r->q >> *t) & 1u)) || (r->kv == CK_KV_E4M3_E5M2 && !s->fp8)) return 0;
    if (named && !((r->dims[*c] >> *di) & 1u)) return 0;
    return !r->exact_d || (s->dqk == s->dv && s->dqk == dim_of(*di));
}

CUfunction cuda_kernel_fn(const cuda_dev_t *d, int r, const cuda_select_t *s)
{
    int t, c, di;
    return kernel_at(&cuda_kernel_table[r], s, &t, &c, &di) ? d->k.row[r].f[t][c][di] : NULL;
}

uint32_t cuda_kernel_smem(const cuda_dev_t *d, int r, const cuda_select_t *s)
{
    int t, c, di;
    return kernel_at(&cuda_kernel_table[r], s, &t, &c, &di) ? d->k.row[r].smem[c][di] : 0u;
}

uint32_t cuda_kernel_threads(int r, const cuda_select_t *s)
{
    const int w = cuda_kernel_table[r].warps;
    return 32u * (uint32_t)(w ? w : CK_PF_WARPS(dim_of(s->di < 0 ? 0 : s->di)));
}

int cuda_kernel_box_rows(int r, const cuda_select_t *s)
{
    const cuda_kernel_t *k = &cuda_kernel_table[r];
    if (k->box_keys < 0 || !s->box_rows) return 0;
    const int most = k->box_keys ? k->box_keys : CK_DEC_KPW(s->dqk, s->fp8);
    return s->box_rows < most ? s->box_rows : most;
}

int64_t cuda_kernel_resident(const cuda_dev_t *d, int r, const cuda_select_t *s)
{
    CUfunction f = cuda_kernel_fn(d, r, s);
    int occ = 0;
    if (!f || cuda_drv.OccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, (int)cuda_kernel_threads(r, s),
                                                                 cuda_kernel_smem(d, r, s)) != CUDA_SUCCESS || occ < 0)
        occ = 0;
    return (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * occ;
}

static int arch_has(const cuda_dev_t *d, int arch)
{
    switch (arch) {
    case CK_ARCH_SM80: return d->k.mma_ok;
    case CK_ARCH_TMA: return d->cc_major >= 9 && cuda_drv.TensorMapEncodeTiled != NULL;
    case CK_ARCH_SM90A: return d->modules[CUDA_FAMILY_SM90A] != NULL;
    default: return 1;
    }
}

/* Row r's kernel of query type t, cache form c and head dim di, where the table lets this device load it */
static attnrt_status_t load_one(cuda_dev_t *d, const cuda_kernel_t *r, int t, int c, int di, int optin)
{
    if (r->needs >= 0) {
        const cuda_kernel_t *n = &cuda_kernel_table[r->needs];
        const int nc = (n->dims[c] >> di) & 1u ? c : 0;
        if (!d->k.row[r->needs].f[n->q ? t : 0][nc][di]) return ATTNRT_OK;
    }
    if (r->unless >= 0 && d->k.row[r->unless].f[t][0][di]) return ATTNRT_OK;
    const int fp8 = r->kv == CK_KV_E4M3_E5M2 || c == 1;
    const uint32_t smem = r->smem ? r->smem(dim_of(di), fp8) : 0u;
    if ((int)smem > optin) return ATTNRT_OK; /* left NULL: the plan takes another row */
    char name[96];
    cuda_kernel_name(r, t, c, di, name, sizeof name);
    CUfunction *f = &d->k.row[r->id].f[t][c][di];
    d->k.row[r->id].smem[c][di] = smem;
    return r->smem ? cuda_function_smem(d, r->family, name, smem, f) : cuda_function(d, r->family, name, f);
}

/* Every kernel of row r the device may load */
static attnrt_status_t load_row(cuda_dev_t *d, const cuda_kernel_t *r, int optin)
{
    const int named = r->dims[0] | r->dims[1];
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 2; c++)
            for (int di = 0; di < CUDA_MMA_DIMS; di++) {
                if ((r->q ? !((r->q >> t) & 1u) : t) || (named ? !((r->dims[c] >> di) & 1u) : c || di)) continue;
                const attnrt_status_t st = load_one(d, r, t, c, di, optin);
                if (st != ATTNRT_OK) return st;
            }
    return ATTNRT_OK;
}

attnrt_status_t cuda_kernel_table_load(cuda_dev_t *d)
{
    int optin = 0;
    cuda_drv.DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->dev);
    /* each row once the rows it needs or gives way to are done (a few passes over the table) */
    int done[CK_KERNELS] = {0}, progress = 1;
    while (progress) {
        progress = 0;
        for (int i = 0; i < CK_KERNELS; i++) {
            const cuda_kernel_t *r = &cuda_kernel_table[i];
            if (done[i] || (r->needs >= 0 && !done[r->needs]) || (r->unless >= 0 && !done[r->unless])) continue;
            done[i] = progress = 1;
            if (!r->at_open || !arch_has(d, r->arch)) continue;
            const attnrt_status_t st = load_row(d, r, optin);
            if (st != ATTNRT_OK) return st;
        }
    }
    d->k.kv_write = d->k.row[CK_K_KV_WRITE].f[0][0][0];
    d->k.attn_simt = d->k.row[CK_K_SIMT].f[0][0][0];
    d->k.merge_states = d->k.row[CK_K_MERGE].f[0][0][0];
    return ATTNRT_OK;
}

/* ---- selection ---------------------------------------------------------------------------------------------------- */
void cuda_select_init(const cuda_dev_t *d, const attnrt_attention_args_t *a, const attnrt_batch_host_t *batch,
                      cuda_select_t *s)
{
    (void)d;
    memset(s, 0, sizeof *s);
    s->a = a;
    const int kvk = cuda_ck_dtype(a->key_cache->dtype);
    s->t = cuda_ck_dtype(a->query->dtype) == CK_BF16;
    s->fp8 = kvk == CK_E4M3 || kvk == CK_E5M2;
    s->e5m2 = kvk == CK_E5M2;
    s->form = s->fp8;
    s->dqk = a->query->shape[2];
    s->dv = a->value_cache->shape[3];
    s->di = cuda_mma_dim_index(s->dqk, s->dv);
    s->num_kv_heads = a->key_cache->shape[2];
    s->group = s->num_kv_heads > 0 ? a->query->shape[1] / s->num_kv_heads : 0;
    s->block_size = a->key_cache->shape[1];
    const int64_t low = s->block_size & -s->block_size; /* no box crosses a cache block */
    s->box_rows = low >= 8 && a->value_cache->shape[1] == s->block_size ? (int)(low < 256 ? low : 256) : 0; /* boxes: <= 32 */
    s->nhd = a->key_cache->strides[2] < a->key_cache->strides[1];
    s->num_seqs = batch->num_seqs;
    s->all_decode = batch->num_seqs > 0;
    for (int64_t b = 0; b < batch->num_seqs; b++) {
        const int64_t L = (int64_t)batch->query_start_loc[b + 1] - batch->query_start_loc[b];
        s->one_token += L == 1;
        s->all_decode &= L <= 1;
    }
    s->prefill = s->prefill_ws = s->decode = -1;
}

int cuda_kernel_select(const cuda_dev_t *d, int role, cuda_select_t *s)
{
    for (int i = 0; i < CK_KERNELS; i++) {
        const cuda_kernel_t *r = &cuda_kernel_table[i];
        if (r->role == role && r->rule && cuda_kernel_fn(d, i, s) && r->rule(d, s)) return i;
    }
    return -1;
}
