/* cuda_attention.c — paged attention run: the args decoded into ck_attn_args_t, then either
 *   tensor cores: the prefill launch, the decode launch (which merges its own key splits), both on the
 *                 plan's work list in device memory (none for a pure decode batch); or
 *   SIMT:         one launch, one warp per query row.
 * Nothing is allocated, nothing waits (except on the NULL stream, whose calls complete before they
 * return), and no device memory is read on the host: the run can be captured in a CUDA graph. What the
 * kernels write besides the outputs (partials, counters) is in the caller's workspace, the counters zeroed
 * here on the run's stream, so runs of one plan may overlap on distinct streams. The
 * kernels read query_start_loc / seq_lens / block_table on the device, clamped to the tensors. */
#include <math.h>
#include <string.h>

#include "cuda_attention_plan.h"
#include "cuda_prefill_cfg.h"
#include "plugin_error.h"
#include "plugin_softmax.h"
#include "plugin_struct.h"

static void fill_args(const attnrt_attention_args_t *a, const cuda_attn_plan_t *p, ck_attn_args_t *k)
{
    memset(k, 0, sizeof *k);
    k->q = a->query->data;
    k->q_st[0] = a->query->strides[0];
    k->q_st[1] = a->query->strides[1];
    k->out = a->out->data;
    k->out_st[0] = a->out->strides[0];
    k->out_st[1] = a->out->strides[1];
    if (a->lse) {
        k->lse = a->lse->data;
        k->lse_st[0] = a->lse->strides[0];
        k->lse_st[1] = a->lse->strides[1];
    }
    k->kc = a->key_cache->data;
    k->vc = a->value_cache->data;
    for (int i = 0; i < 3; i++) {
        k->kc_st[i] = a->key_cache->strides[i];
        k->vc_st[i] = a->value_cache->strides[i];
    }
    k->kv_dtype = cuda_ck_dtype(a->key_cache->dtype);
    if (k->kv_dtype == CK_E4M3 || k->kv_dtype == CK_E5M2) { /* per tensor [1]: strides stay 0 */
        if (a->key_scale && a->key_scale->data) {
            k->k_scale = a->key_scale->data;
            if (a->key_scale->ndim == 2) {
                k->ks_st[0] = a->key_scale->strides[0];
                k->ks_st[1] = a->key_scale->strides[1];
            }
        }
        if (a->value_scale && a->value_scale->data) {
            k->v_scale = a->value_scale->data;
            if (a->value_scale->ndim == 2) {
                k->vs_st[0] = a->value_scale->strides[0];
                k->vs_st[1] = a->value_scale->strides[1];
            }
        }
    }
    k->block_table = a->block_table->data;
    k->bt_st[0] = a->block_table->strides[0];
    k->bt_st[1] = a->block_table->ndim > 1 ? a->block_table->strides[1] : 1;
    k->bt_cols = a->block_table->ndim > 1 ? a->block_table->shape[1] : 0;
    k->qsl = a->query_start_loc->data;
    k->qsl_st = a->query_start_loc->strides[0];
    k->seq_lens = a->seq_lens->data;
    k->sl_st = a->seq_lens->strides[0];
    if (a->alibi_slopes) {
        k->alibi = a->alibi_slopes->data;
        k->alibi_st = a->alibi_slopes->strides[0];
    }
    if (a->sinks) {
        k->sinks = a->sinks->data;
        k->sinks_st = a->sinks->strides[0];
    }
    k->num_tokens = p->num_tokens;
    k->num_seqs = p->num_seqs;
    k->num_blocks = a->key_cache->shape[0] < a->value_cache->shape[0] ? a->key_cache->shape[0] : a->value_cache->shape[0];
    k->block_size = a->key_cache->shape[1] < a->value_cache->shape[1] ? a->key_cache->shape[1] : a->value_cache->shape[1];
    k->hq = (int32_t)p->num_q_heads;
    k->hkv = (int32_t)p->num_kv_heads;
    k->group = (int32_t)(p->num_q_heads / p->num_kv_heads);
    k->dqk = (int32_t)p->head_dim_qk;
    k->dv = (int32_t)p->head_dim_v;
    k->q_dtype = cuda_ck_dtype(a->query->dtype);
    k->out_dtype = cuda_ck_dtype(a->out->dtype);
    k->causal = a->causal != 0;
    k->window_left = (int32_t)plugin_window_count(a->sliding_window_left);
    k->window_right = (int32_t)plugin_window_count(a->sliding_window_right);
    k->scale = a->scale != 0.0f ? a->scale : (float)(1.0 / sqrt((double)p->head_dim_qk));
    k->softcap = a->softcap;
}

/* The tensor-core kernels copy K/V rows 16 bytes at a time: base and strides must allow it. */
static int cache_aligned(const ck_attn_args_t *k)
{
    const int64_t es = cuda_ck_size(k->kv_dtype);
    if (((uintptr_t)k->kc | (uintptr_t)k->vc) % 16) return 0;
    for (int i = 0; i < 3; i++)
        if ((k->kc_st[i] * es) % 16 || (k->vc_st[i] * es) % 16) return 0;
    return 1;
}

/* The decode kernel forms a row's address from 32-bit products (attn_decode.cuh): block x block bytes
 * as 32 x 32 -> 64 bits, row x row bytes + head x head bytes in 32 bits, the block-table column and the
 * per-block scales the same way. None negative; every real cache fits; others take the SIMT kernel. */
static int offsets_fit32(const ck_attn_args_t *k)
{
    const int64_t es = cuda_ck_size(k->kv_dtype), lim = (int64_t)1 << 32, h = k->hkv > 0 ? k->hkv : 1;
    const int64_t b = k->block_size > 0 ? k->block_size : 1;
    const int64_t *const st[2] = {k->kc_st, k->vc_st};
    for (int i = 0; i < 2; i++) {
        if (st[i][0] < 0 || st[i][1] < 0 || st[i][2] < 0 || st[i][0] * es >= lim) return 0;
        if (st[i][1] * es >= lim / b || st[i][2] * es >= lim / h || ((b - 1) * st[i][1] + (h - 1) * st[i][2]) * es >= lim)
            return 0;
    }
    if (k->bt_st[1] < 0 || k->bt_st[1] >= lim || k->bt_cols >= lim) return 0;
    const int64_t *const sc[2] = {k->ks_st, k->vs_st};
    for (int i = 0; i < 2; i++)
        if (sc[i][0] < 0 || sc[i][0] >= lim || sc[i][1] < 0 || sc[i][1] >= lim / h) return 0;
    return 1;
}

/* One cache's tensor map for the decode kernel's tensor copies: [num_blocks][block_size][Hkv][D] by its
 * strides (dims 1 and 2 in stride order: NHD heads first, HND rows first), boxes of one head's `rows` rows,
 * swizzled as the kernel's ldmatrix addresses expect. 0 where the driver refuses it. */
static int encode_kv_map(ck_tmap_t *map, const void *base, const int64_t st[3], const attnrt_tensor_t *cache, int rows, int hnd,
                         int fp8)
{
    _Static_assert(sizeof(ck_tmap_t) == sizeof(CUtensorMap), "a tensor map's bytes");
    const int64_t es = fp8 ? 1 : 2, D = cache->shape[3];
    const cuuint64_t dims[4] = {(cuuint64_t)D, (cuuint64_t)(hnd ? cache->shape[1] : cache->shape[2]),
                                (cuuint64_t)(hnd ? cache->shape[2] : cache->shape[1]), (cuuint64_t)cache->shape[0]};
    const cuuint64_t strides[3] = {(cuuint64_t)((hnd ? st[1] : st[2]) * es), (cuuint64_t)((hnd ? st[2] : st[1]) * es),
                                   (cuuint64_t)(st[0] * es)};
    const int64_t inner = D * es > 128 ? 128 / es : D; /* a box's row: at most the 128-byte swizzle span */
    const cuuint32_t box[4] = {(cuuint32_t)inner, hnd ? (cuuint32_t)rows : 1u, hnd ? 1u : (cuuint32_t)rows, 1u}, unit[4] = {1, 1, 1, 1};
    const CUresult r = cuda_drv.TensorMapEncodeTiled(
        (CUtensorMap *)(void *)map, fp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16, 4, (void *)(uintptr_t)base,
        dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, inner * es == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS;
}

/* The warp-specialized prefill kernel's Q map: [num_tokens][Hq][D] by Q's strides, boxes of 64 columns (128 bytes,
 * swizzled as wgmma's canonical layout) x hc heads x CK_PF_ROWS / hc tokens, an item's rows in its order (heads
 * inner). 0 where the driver refuses it (Q not 16-byte aligned, strides not multiples of 16 bytes). */
static int encode_q_map(ck_tmap_t *map, const ck_attn_args_t *k, int hc)
{
    if (hc < 1 || hc > CK_PF_ROWS || k->q_st[0] < 0 || k->q_st[1] < 0 || !cuda_drv.TensorMapEncodeTiled) return 0;
    const cuuint64_t dims[3] = {(cuuint64_t)k->dqk, (cuuint64_t)k->hq, (cuuint64_t)k->num_tokens};
    const cuuint64_t strides[2] = {(cuuint64_t)(k->q_st[1] * 2), (cuuint64_t)(k->q_st[0] * 2)};
    const cuuint32_t box[3] = {64u, (cuuint32_t)hc, (cuuint32_t)(CK_PF_ROWS / hc)}, unit[3] = {1, 1, 1};
    const CUresult r = cuda_drv.TensorMapEncodeTiled((CUtensorMap *)(void *)map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3,
                                                     (void *)(uintptr_t)k->q, dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS;
}

/* Both caches' maps into k, boxes of `rows` rows (the decode kernel's, else the warp-specialized prefill
 * kernel's); 0 (launch the plain kernels) where the layouts differ in stride order, this run's block size is
 * not a multiple of the box rows, or the driver refuses a map. */
static int encode_kv_maps(const attnrt_attention_args_t *a, const cuda_attn_plan_t *p, int rows, ck_attn_args_t *k)
{
    const int hnd = k->kc_st[2] > k->kc_st[1];
    if ((k->vc_st[2] > k->vc_st[1]) != hnd || !cuda_drv.TensorMapEncodeTiled || a->key_cache->shape[1] % rows ||
        a->value_cache->shape[1] != a->key_cache->shape[1])
        return 0;
    k->kv_tma_rows = rows;
    k->kv_tma_hnd = hnd;
    return encode_kv_map(&k->tm_k, k->kc, k->kc_st, a->key_cache, rows, hnd, p->fp8) &&
           encode_kv_map(&k->tm_v, k->vc, k->vc_st, a->value_cache, rows, hnd, p->fp8);
}

/* The SIMT kernel: one warp a query row, no plan, no workspace (layouts the tensor-core kernels do not take). */
static attnrt_status_t run_simt(cuda_dev_t *d, const cuda_attn_plan_t *p, ck_attn_args_t *k, void *stream)
{
    const int64_t rows = p->num_tokens * p->num_q_heads, blocks = (rows + 3) / 4;
    if (blocks > 0x7fffffff)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda paged attention run: %lld query rows are too many for one launch",
                           (long long)rows);
    const attnrt_status_t st = cuda_launch(d->k.attn_simt, (uint32_t)blocks, 128, 0, stream, k, "cuda paged attention (SIMT)");
    return st == ATTNRT_OK ? cuda_finish(stream, "cuda paged attention") : st;
}

attnrt_status_t cuda_attention_run(cuda_dev_t *d, const void *plan, const attnrt_attention_args_t *in,
                                   void *workspace, size_t workspace_bytes, void *stream)
{
    const cuda_attn_plan_t *p = plan;
    attnrt_attention_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (!p || p->dev != d)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention run: the plan is NULL or was made on another device");
    if (!a.query || !a.key_cache || !a.value_cache || !a.block_table || !a.query_start_loc || !a.seq_lens || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention run: a required tensor is NULL");
    if (a.query->shape[0] != p->num_tokens || a.query->shape[1] != p->num_q_heads ||
        a.key_cache->shape[2] != p->num_kv_heads || a.query->shape[2] != p->head_dim_qk ||
        a.value_cache->shape[3] != p->head_dim_v || a.seq_lens->shape[0] != p->num_seqs ||
        a.query_start_loc->shape[0] != p->num_seqs + 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention run: shapes differ from the plan's; plan "
                           "this batch again");
    if (workspace_bytes < p->workspace_bytes || (p->workspace_bytes && !workspace))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda paged attention run: workspace of %zu bytes < %zu planned",
                           workspace_bytes, p->workspace_bytes);
    if (p->num_tokens <= 0 || p->num_seqs <= 0) return ATTNRT_OK;

    ck_attn_args_t k;
    fill_args(&a, p, &k);
    attnrt_status_t st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;

    if (!p->mma || !cache_aligned(&k) || !offsets_fit32(&k)) return run_simt(d, p, &k, stream);

    /* one pair of tensor maps for the kernels that take tensor copies (the decode kernel's boxes where it has them);
     * where the driver will not encode them, both launch their plain forms, except a decode batch planned on the
     * warp-specialized kernel, whose items (key splits) no other tensor-core kernel takes, and prefill tiles planned on
     * its fp8-cache form (128 rows, which the general kernel does not take): the SIMT kernel then */
    const int pf_ws = p->n_prefill && p->f_prefill_ws, dec_tma = p->n_decode && p->tma_rows;
    const int maps = (pf_ws || dec_tma) && encode_kv_maps(&a, p, p->tma_rows ? p->tma_rows : p->pf_tma_rows, &k);
    const int q_map = pf_ws && maps && encode_q_map(&k.tm_q, &k, p->pf_hc);
    if ((p->ws_decode || (p->ws_fp8 && p->n_prefill)) && !q_map) return run_simt(d, p, &k, stream);

    ck_work_item_t *items = (ck_work_item_t *)(uintptr_t)p->list_dev; /* the plan's (NULL: none) */
    if (p->num_parts) { /* the split partial states (else the plan asked for no workspace) */
        k.part_lse = (float *)workspace; /* the workspace: [part_lse] [part_o] */
        k.part_o = (float *)(void *)((char *)workspace + p->off_part_o);
    }
    k.part_rows = p->part_rows;
    if (p->count_bytes) { /* this run's counters, zero before its kernels: another run's are in its own workspace */
        uint32_t *count = (uint32_t *)(void *)((char *)workspace + p->off_count);
        const CUresult r = cuda_drv.MemsetD8Async((CUdeviceptr)(uintptr_t)count, 0, p->count_bytes, cuda_stream_of(stream));
        if (r != CUDA_SUCCESS)
            return cuda_fail(r, "cuda paged attention run: cuMemsetD8Async (%zu bytes of counters)", p->count_bytes);
        if (p->num_parts) k.split_count = count; /* split row tiles merged by their last block */
        if (p->pf_next) k.pf_next = count + p->num_parts;
    }
    if (p->n_prefill) {
        k.items = items;
        if (q_map) { /* persistent: one block a SM walks the items */
            k.pf_items = (int32_t)p->n_prefill;
            const uint32_t grid = d->sm_count > 0 && (uint32_t)d->sm_count < p->n_prefill ? (uint32_t)d->sm_count : p->n_prefill;
            st = cuda_launch(p->f_prefill_ws, grid, p->prefill_ws_threads, p->smem_prefill_ws, stream, &k,
                             "cuda paged attention (prefill tiles, warp-specialized)");
        } else
            st = cuda_launch(p->f_prefill, p->n_prefill, p->prefill_threads, p->smem_prefill, stream, &k, "cuda paged attention (prefill tiles)");
    }
    if (st == ATTNRT_OK && p->n_decode) {
        k.items = p->dec_splits ? NULL : items + p->n_prefill;
        k.dec_splits = p->dec_splits;
        CUfunction f = p->f_decode;
        uint32_t smem = p->smem_decode, threads = p->dec_threads;
        if (p->tma_rows && !maps) {
            f = p->f_decode_plain;
            smem = p->smem_decode_plain;
            threads = p->dec_threads_plain;
        }
        /* after a prefill launch, its decode blocks may take the SMs the prefill's tail leaves idle */
        const char *what = "cuda paged attention (decode tiles)";
        st = p->n_prefill ? cuda_launch_overlapped(d, f, p->n_decode, threads, smem, stream, &k, what)
                          : cuda_launch(f, p->n_decode, threads, smem, stream, &k, what);
    }
    return st == ATTNRT_OK ? cuda_finish(stream, "cuda paged attention") : st;
}
