/* cuda_mla.c — MLA plan / run (kernels/mla.cu, kernels/mla_mma.cu), and the helpers the 1.2 ops
 * share: the plan head, plan_destroy, kernel lookup.
 *
 * Two kernels compute the same function: the tensor-core one (576 / 512, a 16-bit latent of the
 * query's dtype, 64 query rows an item) and the CUDA-core one (any shape and format, 16 rows an item).
 * The plan cuts the host batch into work items for each kernel it may use: (request, tile of tokens,
 * group of query heads) — a token's heads share its latent rows, so as many as an item holds — and
 * cuts the keys of each item into splits when the batch has too few items to fill the chip (sized for
 * one or two waves of resident blocks, or none, by an estimate of the time), so that a few long requests
 * still use every SM. The lists are uploaded once into device memory the plan owns (a run that copied
 * its list into the workspace waited ~9 us for it before its first kernel: docs/dev/cuda-decode.md,
 * session 19); run picks the kernel (the tensor-core one needs 16-byte aligned latent rows, known only
 * at run) and launches its items and, when there are splits, the merge, on its list. The workspace:
 * [part_lse] [part_o], sized for the larger config.
 * On compute capability 9.0 the tensor-core config takes the wgmma kernel (kernels/mla_sm90a.cu, the
 * sm_90a module) for a 16-bit or fp8 latent: the same items, so the same plan.
 */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cuda_ops12.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_query.h"
#include "plugin_struct.h"
#include "plugin_tensor.h"

#define WS_ALIGN 256
#define MLA_WAVES 2
#define MLA_MIN_SPLIT_CHUNKS 4 /* a split reads at least 4 chunks of CK_MLA_KC keys */

static size_t align_up(size_t n) { return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }

/* One kernel's work: its list (inside the plan's device buffer) and its workspace layout. */
typedef struct mla_cfg {
    int        ok;              /* 0: this kernel is not used for the plan's shapes */
    CUfunction f_main;
    uint32_t   smem;
    int        rows;            /* query rows per item */
    int        wgmma;           /* f_main is the sm_90a kernel (kernels/mla_sm90a.cu) */
    size_t     list_at;         /* element index of its list in the plan's buffer */
    uint32_t   n_items, n_groups;
    int64_t    num_parts;
    size_t     off_part_o, workspace_bytes; /* part_lse at the workspace's start */
} mla_cfg_t;

enum { MLA_SIMT = 0, MLA_MMA = 1 };

typedef struct cuda_mla_plan {
    cuda_plan12_head_t head;
    int64_t T, B, Hq, D, Dv, topk; /* shapes the plan was made for; run refuses others */
    int     sparse;
    CUfunction f_merge;
    mla_cfg_t  cfg[2];
    CUdeviceptr list_dev;          /* device memory: each config's items, then its merge groups */
    size_t   workspace_bytes;
} cuda_mla_plan_t;

static void mla_plan_free(cuda_dev_t *d, cuda_mla_plan_t *p)
{
    if (!p) return;
    if (p->list_dev && cuda_enter(d) == ATTNRT_OK) cuda_drv.MemFree(p->list_dev);
    p->head.magic = 0;
    free(p);
}

void cuda_plan12_destroy(cuda_dev_t *d, void *plan)
{
    cuda_plan12_head_t *h = plan;
    if (!h || h->magic != CUDA_PLAN12_MAGIC) return; /* NULL, or not a live plan of ours */
    if (h->kind == CUDA_PLAN_MLA) {
        mla_plan_free(d, plan);
    } else {
        h->magic = 0;
        free(plan);
    }
}

typedef struct mla_shape {
    int64_t T, B, Hq, D, Dv, NB, BS, topk;
    int     sparse;
} mla_shape_t;

static attnrt_status_t mla_shapes(const attnrt_mla_args_t *a, int64_t B, mla_shape_t *sh)
{
    if (!a->query || !a->kv_cache || !a->out || a->query->ndim != 3 || a->kv_cache->ndim != 4 || a->out->ndim != 3)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla: query [T, Hq, D], kv_cache [NB, BS, 1, D] and out "
                           "[T, Hq, Dv] are required");
    sh->T = a->query->shape[0];
    sh->Hq = a->query->shape[1];
    sh->D = a->query->shape[2];
    sh->Dv = a->out->shape[2];
    sh->NB = a->kv_cache->shape[0];
    sh->BS = a->kv_cache->shape[1];
    sh->B = B;
    sh->sparse = a->indices != NULL;
    sh->topk = a->indices ? a->indices->shape[1] : 0;
    attnrt_op_query_t q;
    plugin_mla_query(a, sh->D, sh->Dv, &q);
    char reason[256];
    if (cuda_op_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda mla: %s", reason);
    const int qk = cuda_ck_dtype(a->query->dtype), ok = cuda_ck_dtype(a->out->dtype);
    if (ok != qk && ok != CK_F32)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda mla: out must have the query's dtype or f32");
    if (sh->D < 1 || sh->Dv < 1 || sh->Dv > sh->D || sh->BS < 1 || sh->Hq < 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla: kv_dim %lld, v_dim %lld, block_size %lld, %lld heads",
                           (long long)sh->D, (long long)sh->Dv, (long long)sh->BS, (long long)sh->Hq);
    if (!(a->scale > 0.0f) || isinf(a->scale))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla: scale %g must be finite and > 0", (double)a->scale);
    return ATTNRT_OK;
}

typedef struct mla_tile {
    plugin_cost_key_t key; /* cost: its keys + 1, a split piece's share + 1 */
    ck_mla_item_t     w;
    int64_t           keys;
} mla_tile_t;

/* Splits of an item of `keys` keys cut into pieces of at most `per` chunks of CK_MLA_KC keys (0: whole),
 * 1 .. cap. */
static int64_t mla_splits(int64_t keys, int64_t per, int64_t cap)
{
    if (per <= 0) return 1;
    const int64_t ns = ((keys + CK_MLA_KC - 1) / CK_MLA_KC + per - 1) / per;
    return ns < 1 ? 1 : ns > cap ? cap : ns;
}

/* Pieces of the items cut by `per`. */
static int64_t mla_pieces(const mla_tile_t *tiles, size_t n, int64_t per, int64_t cap)
{
    int64_t pieces = 0;
    for (size_t i = 0; i < n; i++) pieces += mla_splits(tiles[i].keys, per, cap);
    return pieces;
}

/* Estimated time, in chunks, of the items cut by `per` on `resident` blocks: the longer of the costliest
 * piece and the whole work spread evenly. A piece also pays its item's fixed work (Q, epilogue) and, when
 * split, writing and merging its partial state. */
#define MLA_ITEM_CHUNKS 4
#define MLA_PART_CHUNKS 8
static int64_t mla_makespan(const mla_tile_t *tiles, size_t n, int64_t per, int64_t cap, int64_t resident)
{
    int64_t total = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t ns = mla_splits(tiles[i].keys, per, cap), chunks = (tiles[i].keys + CK_MLA_KC - 1) / CK_MLA_KC;
        const int64_t cost = (chunks + ns - 1) / ns + MLA_ITEM_CHUNKS + (ns > 1 ? MLA_PART_CHUNKS : 0);
        total += ns * cost;
        if (cost > worst) worst = cost;
    }
    const int64_t spread = (total + resident - 1) / resident;
    return spread > worst ? spread : worst;
}

/* The items of one kernel configuration (cf->rows query rows an item), costliest first, with the
 * key splits decided from the chip's resident blocks; fills cf's counts. */
static attnrt_status_t mla_build(cuda_dev_t *d, const attnrt_mla_args_t *a, const attnrt_batch_host_t *batch,
                                 const mla_shape_t *sh, mla_cfg_t *cf, mla_tile_t **tiles_out, size_t *n_out)
{
    const int64_t hpi = sh->Hq < cf->rows ? sh->Hq : cf->rows;
    const int64_t tile = sh->sparse ? 1 : cf->rows / hpi;
    const int64_t groups = (sh->Hq + hpi - 1) / hpi;
    size_t n_tiles = 0;
    for (int64_t b = 0; b < sh->B; b++) {
        const int64_t L = (int64_t)batch->query_start_loc[b + 1] - batch->query_start_loc[b];
        if (L > 0) n_tiles += (size_t)(((L + tile - 1) / tile) * groups);
    }
    mla_tile_t *tiles = n_tiles ? malloc(n_tiles * sizeof *tiles) : NULL;
    if (n_tiles && !tiles) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda mla plan: out of memory for %zu work items", n_tiles);
    size_t k = 0;
    int64_t work = 0;
    for (int64_t b = 0; b < sh->B; b++) {
        const int64_t L = (int64_t)batch->query_start_loc[b + 1] - batch->query_start_loc[b];
        const int64_t S = batch->seq_lens[b] > 0 ? batch->seq_lens[b] : 0;
        for (int64_t i0 = 0; i0 < L; i0 += tile) {
            const int64_t n = L - i0 < tile ? L - i0 : tile;
            int64_t keys = sh->sparse ? sh->topk : S;
            if (!sh->sparse && a->causal) keys = S - L + i0 + n < S ? S - L + i0 + n : S;
            if (keys < 0) keys = 0;
            for (int64_t hf = 0; hf < sh->Hq; hf += hpi) {
                mla_tile_t *t = &tiles[k];
                t->w = (ck_mla_item_t){(int32_t)b, (int32_t)i0, (int32_t)n, (int32_t)hf,
                                       (int32_t)(sh->Hq - hf < hpi ? sh->Hq - hf : hpi), 0, 1, -1};
                t->keys = keys;
                t->key = (plugin_cost_key_t){(double)(keys + 1), k++};
                work += (keys + CK_MLA_KC - 1) / CK_MLA_KC;
            }
        }
    }
    int occupancy = 1;
    if (cuda_drv.OccupancyMaxActiveBlocksPerMultiprocessor(&occupancy, cf->f_main, CK_MLA_THREADS, cf->smem) != CUDA_SUCCESS)
        occupancy = 1;
    const int64_t resident = (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * (occupancy > 0 ? occupancy : 1);
    const int64_t cap = d->max_splits < CK_MLA_MAX_SPLITS ? d->max_splits : CK_MLA_MAX_SPLITS;
    /* splits of at most chunk_per_split chunks: none, or sized for one or MLA_WAVES waves of resident
     * blocks, whichever mla_makespan rates fastest (ties: fewer splits; e.g. 128 whole items on 132 SMs
     * beat 384 thirds that add a merge and a partial wave) */
    int64_t chunk_per_split = 0, best = INT64_MAX, max_chunks = 1;
    for (size_t i = 0; i < n_tiles; i++)
        if ((tiles[i].keys + CK_MLA_KC - 1) / CK_MLA_KC > max_chunks) max_chunks = (tiles[i].keys + CK_MLA_KC - 1) / CK_MLA_KC;
    for (int64_t w = 0; w <= MLA_WAVES; w++) {
        int64_t per = 0;
        if (w > 0) {
            per = (work + w * resident - 1) / (w * resident);
            if (per < MLA_MIN_SPLIT_CHUNKS) per = MLA_MIN_SPLIT_CHUNKS;
            /* rounding each item up adds pieces: grow the size until they fill at most w waves (when
             * whole items do) */
            if ((int64_t)n_tiles <= w * resident)
                while (per < max_chunks && mla_pieces(tiles, n_tiles, per, cap) > w * resident) per++;
        }
        const int64_t est = mla_makespan(tiles, n_tiles, per, cap, resident);
        if (est < best) best = est, chunk_per_split = per;
    }
    size_t n_items = 0, n_groups = 0;
    cf->num_parts = 0;
    for (size_t i = 0; i < n_tiles; i++) {
        mla_tile_t *t = &tiles[i];
        const int64_t ns = mla_splits(t->keys, chunk_per_split, cap);
        t->w.num_splits = (int32_t)ns;
        if (ns > 1) {
            t->w.part_index = (int32_t)cf->num_parts;
            cf->num_parts += ns;
            n_groups++;
            t->key.cost = (double)((t->keys + 1) / ns + 1);
        }
        n_items += (size_t)ns;
    }
    if (n_tiles > 1) qsort(tiles, n_tiles, sizeof *tiles, plugin_by_cost_desc);
    const size_t merge_blocks = n_groups * (size_t)(cf->rows / CK_MLA_MERGE_ROWS) *
                                (size_t)((sh->Dv + CK_MLA_MERGE_MIN_COLS - 1) / CK_MLA_MERGE_MIN_COLS);
    if (n_items + n_groups > 0x7fffffff || merge_blocks > 0x7fffffff) {
        free(tiles);
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda mla plan: %zu work items are too many for one launch", n_items);
    }
    cf->n_items = (uint32_t)n_items;
    cf->n_groups = (uint32_t)n_groups;
    *tiles_out = tiles;
    *n_out = n_tiles;
    return ATTNRT_OK;
}

attnrt_status_t cuda_mla_plan(cuda_dev_t *d, const attnrt_mla_args_t *args_in, const attnrt_batch_host_t *batch_in,
                              void **plan_out, size_t *workspace_bytes)
{
    attnrt_mla_args_t a;
    attnrt_batch_host_t batch;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cuda", "mla", a, args_in, batch, batch_in, PLUGIN_BATCH_QSL_SEQ_LENS,
                                          plan_out, workspace_bytes);
    mla_shape_t sh;
    if (st == ATTNRT_OK) st = mla_shapes(&a, batch.num_seqs, &sh);
    if (st != ATTNRT_OK) return st;
    st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;

    cuda_mla_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda mla plan: out of memory");
    p->head.magic = CUDA_PLAN12_MAGIC;
    p->head.kind = CUDA_PLAN_MLA;
    p->head.dev = d;
    p->T = sh.T;
    p->B = sh.B;
    p->Hq = sh.Hq;
    p->D = sh.D;
    p->Dv = sh.Dv;
    p->topk = sh.topk;
    p->sparse = sh.sparse;
    st = cuda_function(d, CUDA_FAMILY_MLA, "ck_mla_split_merge", &p->f_merge);
    mla_cfg_t *simt = &p->cfg[MLA_SIMT], *mma = &p->cfg[MLA_MMA];
    simt->ok = 1;
    simt->rows = CK_MLA_ROWS;
    simt->smem = ck_mla_smem((int)(sh.D | 1));
    if (st == ATTNRT_OK) st = cuda_function(d, CUDA_FAMILY_MLA, "ck_mla_simt", &simt->f_main);
    if (st == ATTNRT_OK) {
        CUresult r = cuda_drv.FuncSetAttribute(simt->f_main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)simt->smem);
        if (r != CUDA_SUCCESS) st = cuda_fail(r, "cuda mla plan: kv_dim %lld needs %u bytes of shared memory", (long long)sh.D, simt->smem);
    }
    /* the tensor-core kernel: 576 / 512, query f16 / bf16 and a latent of the same dtype or fp8 whose
     * rows start 16-byte aligned (strides here; the base at run), sm_80+, its shared memory */
    const int qk = cuda_ck_dtype(a.query->dtype);
    int optin = 0;
    cuda_drv.DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->dev);
    const int kvk = cuda_ck_dtype(a.kv_cache->dtype), fp8 = kvk == CK_E4M3 || kvk == CK_E5M2;
    const int64_t kv_es = fp8 ? 1 : 2;
    mma->ok = !d->force_simt && d->cc_major >= 8 && (qk == CK_F16 || qk == CK_BF16) && (kvk == qk || fp8) &&
              sh.D == CK_MLA_MMA_D && sh.Dv == CK_MLA_MMA_DV && (a.kv_cache->strides[0] * kv_es) % 16 == 0 &&
              (a.kv_cache->strides[1] * kv_es) % 16 == 0 && a.kv_cache->strides[3] == 1 &&
              (int64_t)ck_mla_mma_smem(fp8) <= optin;
    if (st == ATTNRT_OK && mma->ok) {
        static const char *const names[2][2] = {{"ck_mla_mma_f16", "ck_mla_mma_bf16"},
                                                {"ck_mla_mma_f16_fp8", "ck_mla_mma_bf16_fp8"}};
        mma->rows = CK_MLA_MMA_ROWS;
        /* compute capability 9.0: the wgmma kernel of the sm_90a module (same items; an fp8 latent converted
         * to 16 bits in shared memory); ATTNRT_CUDA_MLA=mma keeps the mma.sync one */
        const char *env = secure_getenv("ATTNRT_CUDA_MLA");
        const int wg = d->modules[CUDA_FAMILY_SM90A] && !(env && strcmp(env, "mma") == 0) && (int64_t)ck_mla_wg_smem(fp8) <= optin;
        mma->smem = wg ? ck_mla_wg_smem(fp8) : ck_mla_mma_smem(fp8);
        mma->wgmma = wg;
        if (wg) {
            /* ATTNRT_CUDA_MLA_VARIANT=x takes ck_mla_wg_<type>[_fp8]_x (a variant's A/B in one build) where the
             * module has it, else the default kernel of the kind (the variants differ per latent kind) */
            const char *var = secure_getenv("ATTNRT_CUDA_MLA_VARIANT");
            char base[40], name[96];
            snprintf(base, sizeof base, "%s%s", qk == CK_BF16 ? "ck_mla_wg_bf16" : "ck_mla_wg_f16", fp8 ? "_fp8" : "");
            snprintf(name, sizeof name, "%s_%.40s", base, var ? var : "");
            if (!(var && *var && cuda_drv.ModuleGetFunction(&mma->f_main, d->modules[CUDA_FAMILY_SM90A], name) == CUDA_SUCCESS))
                st = cuda_function(d, CUDA_FAMILY_SM90A, base, &mma->f_main);
        } else {
            st = cuda_function(d, CUDA_FAMILY_MLA, names[fp8][qk == CK_BF16], &mma->f_main);
        }
        if (st == ATTNRT_OK) {
            CUresult r = cuda_drv.FuncSetAttribute(mma->f_main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)mma->smem);
            if (r != CUDA_SUCCESS) mma->ok = 0; /* the CUDA cores then */
        }
    }
    if (st != ATTNRT_OK) {
        mla_plan_free(d, p);
        return st;
    }

    mla_tile_t *tiles[2] = {NULL, NULL};
    size_t n_tiles[2] = {0, 0}, total = 0;
    for (int c = 0; c < 2 && st == ATTNRT_OK; c++)
        if (p->cfg[c].ok) {
            st = mla_build(d, &a, &batch, &sh, &p->cfg[c], &tiles[c], &n_tiles[c]);
            p->cfg[c].list_at = total;
            total += (size_t)p->cfg[c].n_items + p->cfg[c].n_groups;
        }
    ck_mla_item_t *list = NULL; /* built here, then uploaded into the plan's device copy */
    if (st == ATTNRT_OK && total && !(list = malloc(total * sizeof(ck_mla_item_t))))
        st = plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cuda mla plan: out of memory");
    for (int c = 0; c < 2; c++) {
        if (st == ATTNRT_OK && p->cfg[c].ok) {
            mla_cfg_t *cf = &p->cfg[c];
            ck_mla_item_t *it = list + cf->list_at, *grp = it + cf->n_items;
            for (size_t i = 0; i < n_tiles[c]; i++) {
                for (int32_t s = 0; s < tiles[c][i].w.num_splits; s++) {
                    *it = tiles[c][i].w;
                    it->split = s;
                    it++;
                }
                if (tiles[c][i].w.num_splits > 1) *grp++ = tiles[c][i].w;
            }
            cf->off_part_o = align_up((size_t)cf->num_parts * (size_t)cf->rows * sizeof(float));
            cf->workspace_bytes = cf->num_parts == 0 ? 0
                                  : cf->off_part_o + (size_t)cf->num_parts * (size_t)cf->rows * (size_t)sh.Dv * sizeof(float);
            if (cf->workspace_bytes > p->workspace_bytes) p->workspace_bytes = cf->workspace_bytes;
        }
        free(tiles[c]);
    }
    if (st == ATTNRT_OK && list) st = cuda_upload(&p->list_dev, list, total * sizeof(ck_mla_item_t), "cuda mla plan: the work lists");
    free(list);
    if (st != ATTNRT_OK) {
        mla_plan_free(d, p);
        return st;
    }
    *plan_out = p;
    *workspace_bytes = p->workspace_bytes;
    return ATTNRT_OK;
}

attnrt_status_t cuda_mla_run(cuda_dev_t *d, const void *plan, const attnrt_mla_args_t *in, void *workspace,
                             size_t workspace_bytes, void *stream)
{
    const cuda_mla_plan_t *p = plan;
    if (!p || p->head.magic != CUDA_PLAN12_MAGIC || p->head.kind != CUDA_PLAN_MLA || p->head.dev != d)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla run: the plan is NULL, not an mla plan, or made on another device");
    if (!in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla run: args are required");
    attnrt_mla_args_t a;
    PLUGIN_COPY_IN(a, in);
    mla_shape_t sh;
    attnrt_status_t st = mla_shapes(&a, p->B, &sh);
    if (st != ATTNRT_OK) return st;
    if (sh.T != p->T || sh.Hq != p->Hq || sh.D != p->D || sh.Dv != p->Dv || sh.sparse != p->sparse || sh.topk != p->topk)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla run: shapes differ from the plan's; plan this batch again");
    if (workspace_bytes < p->workspace_bytes || (p->workspace_bytes && !workspace))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla run: workspace of %zu bytes < %zu planned",
                           workspace_bytes, p->workspace_bytes);
    /* the tensor-core kernel when planned and the latent's rows start 16-byte aligned */
    const mla_cfg_t *cf = &p->cfg[p->cfg[MLA_MMA].ok && a.kv_cache->data && (uintptr_t)a.kv_cache->data % 16 == 0
                                      ? MLA_MMA : MLA_SIMT];
    if (cf->n_items == 0) return ATTNRT_OK;
    if (!a.block_table || !a.query_start_loc || !a.seq_lens || !a.query->data || !a.kv_cache->data || !a.out->data ||
        (a.indices && !a.indices->data))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cuda mla run: a required tensor or its data is missing");

    ck_mla_args_t k;
    memset(&k, 0, sizeof k);
    k.q = plugin_tensor_ref(a.query, k.q_st, 2);
    k.out = plugin_tensor_ref(a.out, k.out_st, 2);
    k.kv = plugin_tensor_ref(a.kv_cache, k.kv_st, 2);
    k.lse = plugin_tensor_ref(a.lse, k.lse_st, 2);
    k.sinks = plugin_tensor_ref(a.sinks, &k.sinks_st, 1);
    k.kv_dtype = cuda_ck_dtype(a.kv_cache->dtype);
    if ((k.kv_dtype == CK_E4M3 || k.kv_dtype == CK_E5M2) && a.kv_scale && a.kv_scale->data) {
        k.kv_scale = a.kv_scale->data;
        k.ks_st = a.kv_scale->ndim == 2 ? a.kv_scale->strides[0] : 0;
    }
    k.block_table = plugin_tensor_ref(a.block_table, k.bt_st, 2);
    if (a.block_table->ndim < 2) k.bt_st[1] = 1; /* no column: bt_cols 0, nothing read */
    k.bt_cols = a.block_table->ndim > 1 ? a.block_table->shape[1] : 0;
    k.qsl = plugin_tensor_ref(a.query_start_loc, &k.qsl_st, 1);
    k.seq_lens = plugin_tensor_ref(a.seq_lens, &k.sl_st, 1);
    k.indices = plugin_tensor_ref(a.indices, k.idx_st, 2);
    k.num_tokens = sh.T;
    k.num_blocks = sh.NB;
    k.block_size = sh.BS;
    k.topk = sh.topk;
    k.hq = (int32_t)sh.Hq;
    k.d = (int32_t)sh.D;
    k.dv = (int32_t)sh.Dv;
    k.ld = (int32_t)(sh.D | 1);
    k.q_dtype = cuda_ck_dtype(a.query->dtype);
    k.out_dtype = cuda_ck_dtype(a.out->dtype);
    k.causal = a.causal != 0;
    k.sparse = sh.sparse;
    k.scale = a.scale;

    st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    const ck_mla_item_t *items = (const ck_mla_item_t *)(uintptr_t)p->list_dev + cf->list_at;
    if (cf->num_parts) { /* the split partial states (else the plan asked for no workspace for them) */
        k.part_lse = (float *)workspace; /* the workspace: [part_lse] [part_o] */
        k.part_o = (float *)(void *)((char *)workspace + cf->off_part_o);
    }
    k.part_rows = cf->rows;
    k.items = items;
    st = cuda_launch(cf->f_main, cf->n_items, CK_MLA_THREADS, cf->smem, stream, &k,
                     cf->wgmma ? "cuda mla (wgmma)" : cf == &p->cfg[MLA_MMA] ? "cuda mla (tensor cores)" : "cuda mla (CUDA cores)");
    if (st == ATTNRT_OK && cf->n_groups) {
        k.items = items + cf->n_items;
        /* column slices so that groups x row slices x column slices fill one wave of merge blocks (a block's
         * latency chain, not the bytes, sets a merge's time: few groups get narrow slices, many get wide ones) */
        const int64_t slices = (int64_t)cf->n_groups * (cf->rows / CK_MLA_MERGE_ROWS), W = CK_MLA_MERGE_MIN_COLS;
        int64_t ncb = (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * CK_MLA_MERGE_BLOCKS_SM / slices;
        ncb = ncb < 1 ? 1 : ncb > (sh.Dv + W - 1) / W ? (sh.Dv + W - 1) / W : ncb;
        k.merge_cols = (int32_t)(((sh.Dv + ncb - 1) / ncb + W - 1) / W * W);
        ncb = (sh.Dv + k.merge_cols - 1) / k.merge_cols;
        st = cuda_launch(p->f_merge, (uint32_t)(slices * ncb), CK_MLA_THREADS, 0, stream, &k, "cuda mla (split merge)");
    }
    return st == ATTNRT_OK ? cuda_finish(stream, "cuda mla") : st;
}
