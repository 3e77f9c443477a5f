/* cuda_prefill.c — the prefill fast path's host side: loading its kernels and deciding which calls it
 * takes. Two kernels take the same calls: the wgmma kernel (kernels/attn_prefill_sm90a.cuh, the second
 * fatbin, compute capability 9.0 only) and the FA2 mma.sync kernel (kernels/attn_prefill.cuh) everywhere
 * else; on Hopper the warp-specialized wgmma kernel beside them, which also takes fp8 caches with per-tensor
 * scales (its fp8 form). What they leave to the general kernel (per-block fp8 scales, soft-cap,
 * ALiBi, other head dims) is rare in prefill; docs/dev/cuda-prefill.md has the measurements. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_prefill.h"
#include "cuda_prefill_wg_cfg.h"
#include "plugin_error.h"

static const int pf_dims[CUDA_MMA_DIMS] = {64, 128, 256};

static const char *const t_name[2] = {"f16", "bf16"};

/* D 64's long-item form, ck_attn_prefill_ws_<f16|bf16>_d64_n192 */
static attnrt_status_t load_long(cuda_dev_t *d, int optin)
{
    const uint32_t smem = ck_pfs_smem_bytes(64, 0, CK_PFS_BN_LONG);
    if ((int)smem > optin) return ATTNRT_OK;
    d->k.prefill_ws_long_smem = smem;
    for (int t = 0; t < 2; t++) {
        char name[48];
        snprintf(name, sizeof name, "ck_attn_prefill_ws_%s_d64_n192", t_name[t]);
        attnrt_status_t st = cuda_function_smem(d, CUDA_FAMILY_SM90A, name, smem, &d->k.prefill_ws_long[t]);
        if (st != ATTNRT_OK) return st;
    }
    return ATTNRT_OK;
}

attnrt_status_t cuda_prefill_load(cuda_dev_t *d)
{
    const char *env = secure_getenv("ATTNRT_CUDA_PREFILL"), *dec_env = secure_getenv("ATTNRT_CUDA_DEC_WS");
    /* pure decode batches of wide GQA groups on the warp-specialized kernel (cuda_attention_plan.c) */
    d->k.dec_ws_mode = !dec_env ? -1 : !strcmp(dec_env, "0") ? 0 : !strcmp(dec_env, "1") ? 1 : -1;
    if (!d->k.mma_ok || (env && strcmp(env, "mma") == 0)) return ATTNRT_OK;
    const int wgmma = d->modules[CUDA_FAMILY_SM90A] != NULL && !(env && strcmp(env, "fa2") == 0);
    const char *blocks = secure_getenv("ATTNRT_CUDA_PREFILL_BLOCKS");
    d->k.prefill_ws_blocks = blocks ? atoi(blocks) : 0;
    if (d->k.prefill_ws_blocks < 0) d->k.prefill_ws_blocks = 0;
    const char *sched = secure_getenv("ATTNRT_CUDA_PREFILL_SCHED");
    d->k.prefill_ws_static = sched && strcmp(sched, "static") == 0;
    const char *fp8k = secure_getenv("ATTNRT_CUDA_PREFILL_FP8K");
    d->k.prefill_fp8k_mode = !fp8k ? -1 : !strcmp(fp8k, "widen") ? 0 : !strcmp(fp8k, "direct") ? 1 : -1;
    const char *tile = secure_getenv("ATTNRT_CUDA_PREFILL_TILE");
    d->k.prefill_tile_mode = !tile ? -1 : !strcmp(tile, "128") ? 128 : !strcmp(tile, "192") ? 192 : -1;
    int optin = 0;
    cuda_drv.DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->dev);
    for (int di = 0; di < CUDA_MMA_DIMS; di++) {
        const int D = pf_dims[di];
        /* the wgmma kernel where the device holds it, else the FA2 kernel, else (NULL) the general one */
        const uint32_t smem_wg = ck_pfw_smem_bytes(D), smem_fa2 = ck_pf_smem_bytes(D);
        const int use_wg = wgmma && (int)smem_wg <= optin;
        const uint32_t smem = use_wg ? smem_wg : smem_fa2;
        if ((int)smem > optin) continue;
        d->k.prefill_smem[di] = smem;
        d->k.prefill_threads[di] = use_wg ? CK_PFW_WARPS * 32u : (uint32_t)CK_PF_WARPS(D) * 32u;
        for (int t = 0; t < 2; t++) {
            char name[48];
            snprintf(name, sizeof name, use_wg ? "ck_attn_prefill_wg_%s_d%d" : "ck_attn_prefill_%s_d%d", t_name[t], D);
            attnrt_status_t st = cuda_function_smem(d, use_wg ? CUDA_FAMILY_SM90A : CUDA_FAMILY_ATTENTION, name, smem, &d->k.prefill[t][di]);
            if (st != ATTNRT_OK) return st;
        }
        /* the warp-specialized kernel beside it (ATTNRT_CUDA_PREFILL=wg: the wgmma kernel alone) */
        const uint32_t smem_ws = ck_pfs_smem_bytes(D, 0, CK_PFS_BN(D));
        if (!use_wg || (env && strcmp(env, "wg") == 0) || (int)smem_ws > optin) continue;
        d->k.prefill_ws_smem[di] = smem_ws;
        for (int t = 0; t < 2; t++)
            for (int dec = 0; dec < 2; dec++) { /* the prefill form and the decode form (key splits) */
                char name[48];
                snprintf(name, sizeof name, "ck_attn_prefill_ws_%s%s_d%d", dec ? "dec_" : "", t_name[t], D);
                attnrt_status_t st = cuda_function_smem(d, CUDA_FAMILY_SM90A, name, smem_ws,
                                                        dec ? &d->k.prefill_ws_dec[t][di] : &d->k.prefill_ws[t][di]);
                if (st != ATTNRT_OK) return st;
            }
        if (D == 64) { /* its long-item form (192-key tiles) */
            attnrt_status_t st = load_long(d, optin);
            if (st != ATTNRT_OK) return st;
        }
        /* its fp8-cache form */
        const uint32_t smem_fp8 = ck_pfs_smem_bytes(D, 1, CK_PFS_BN(D));
        if ((int)smem_fp8 > optin) continue;
        d->k.prefill_ws_fp8_smem[di] = smem_fp8;
        for (int t = 0; t < 2; t++)
            for (int f = 0; f < 2; f++) {
                char name[48];
                snprintf(name, sizeof name, "ck_attn_prefill_ws_%s_%s_d%d", t_name[t], f ? "e5m2" : "e4m3", D);
                attnrt_status_t st = cuda_function_smem(d, CUDA_FAMILY_SM90A, name, smem_fp8, &d->k.prefill_ws_fp8[t][f][di]);
                if (st != ATTNRT_OK) return st;
            }
        for (int f = 0; f < 2 && D >= 128; f++) { /* a bf16 Q's form reading K by e4m3 products */
            char name[48];
            snprintf(name, sizeof name, "ck_attn_prefill_ws_bf16_%s_kd_d%d", f ? "e5m2" : "e4m3", D);
            attnrt_status_t st = cuda_function_smem(d, CUDA_FAMILY_SM90A, name, smem_fp8, &d->k.prefill_ws_fp8_kd[f][di]);
            if (st != ATTNRT_OK) return st;
        }
    }
    return ATTNRT_OK;
}

/* A per-tensor scale: absent, or one element. */
static int per_tensor(const attnrt_tensor_t *scale) { return !scale || !scale->data || scale->ndim < 2; }

/* The box rows of the warp-specialized kernel's tensor maps for this cache, or 0 where it cannot take it: the block
 * size's largest power-of-two factor of rows (no box crosses a block), at least 8 and at most 32; where the batch's
 * decode kernel takes tensor copies too, the run encodes its boxes (16 or 32 rows), which the kernel reads from its
 * arguments. */
static int ws_box_rows(const attnrt_attention_args_t *a)
{
    const int64_t bs = a->key_cache->shape[1], low = bs & -bs;
    if (low < 8 || a->value_cache->shape[1] != bs) return 0;
    return (int)(low < 32 ? low : 32);
}

CUfunction cuda_prefill_ws_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, int di, uint32_t *smem,
                                  uint32_t *threads, int *box_rows)
{
    uint32_t s0, t0;
    if (!cuda_prefill_kernel(d, a, t, di, &s0, &t0) || !d->k.prefill_ws[t][di] || !(*box_rows = ws_box_rows(a))) return NULL;
    *smem = d->k.prefill_ws_smem[di];
    *threads = CK_PFS_THREADS;
    return d->k.prefill_ws[t][di];
}

CUfunction cuda_prefill_ws_fp8_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, int di, uint32_t *smem,
                                      uint32_t *threads, int *box_rows)
{
    const int qk = cuda_ck_dtype(a->query->dtype), kv = cuda_ck_dtype(a->key_cache->dtype);
    const int64_t dqk = a->query->shape[2], dv = a->value_cache->shape[3];
    if (di < 0 || di >= CUDA_MMA_DIMS || dqk != dv || dqk != pf_dims[di] || (qk != CK_F16 && qk != CK_BF16) ||
        (kv != CK_E4M3 && kv != CK_E5M2))
        return NULL;
    CUfunction f = d->k.prefill_ws_fp8[t][kv == CK_E5M2][di];
    /* its Q boxes take every item's heads (the plan's rule for the 16-bit form, decided here before the items are cut:
     * the general kernel does not take its 128-row items) */
    const int64_t g = a->query->shape[1] / a->key_cache->shape[2];
    if (!f || a->softcap > 0.0f || a->alibi_slopes || !(a->scale >= 0.0f) || !per_tensor(a->key_scale) ||
        !per_tensor(a->value_scale) || (g > CK_PF_ROWS && g % CK_PF_ROWS) || !(*box_rows = ws_box_rows(a)))
        return NULL;
    *smem = d->k.prefill_ws_fp8_smem[di];
    *threads = CK_PFS_THREADS;
    return f;
}

CUfunction cuda_prefill_ws_fp8_kd_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int di)
{
    const int kv = cuda_ck_dtype(a->key_cache->dtype);
    if (cuda_ck_dtype(a->query->dtype) != CK_BF16 || di < 0 || di >= CUDA_MMA_DIMS || d->k.prefill_fp8k_mode == 0) return NULL;
    return d->k.prefill_ws_fp8_kd[kv == CK_E5M2][di];
}

CUfunction cuda_prefill_ws_long_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, uint32_t *smem)
{
    if (a->query->shape[2] != 64 || d->k.prefill_tile_mode == 128 || !d->k.prefill_ws_long[t]) return NULL;
    *smem = d->k.prefill_ws_long_smem;
    return d->k.prefill_ws_long[t];
}

CUfunction cuda_prefill_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, int di, uint32_t *smem,
                               uint32_t *threads)
{
    const int64_t dqk = a->query->shape[2], dv = a->value_cache->shape[3];
    if (di < 0 || di >= CUDA_MMA_DIMS || dqk != dv || dqk != pf_dims[di]) return NULL;
    const int qk = cuda_ck_dtype(a->query->dtype);
    if ((qk != CK_F16 && qk != CK_BF16) || cuda_ck_dtype(a->key_cache->dtype) != qk) return NULL;
    /* the kernels take the row max of the raw scores: the scale must not flip their order */
    if (a->softcap > 0.0f || a->alibi_slopes || !(a->scale >= 0.0f)) return NULL;
    CUfunction f = d->k.prefill[t][di];
    if (f) { /* the outputs stay the general kernel's otherwise */
        *smem = d->k.prefill_smem[di];
        *threads = d->k.prefill_threads[di];
    }
    return f;
}
