/* npu_mla_run.c — mla_run: real MLA results, computed on the CPU in the NPU's order, as paged attention
 * is (npu_attention.c): decode requests first, then each other request alone in prefill chunks that
 * never cross a partition; per unit the kernel walks the request's partitions (partition p = logical
 * block p; the naive kernel's one block is its only partition), skips empty ones, and merges each
 * partition's partial softmax state into the running one. A key is one latent row of kv_dim columns;
 * its value is the row's first v_dim columns, so one tile serves K and V.
 * Dense: the keys [0, seq_len), bottom-right causal when asked. Sparse: a token's keys are its indices
 * (a repeated index counts once per occurrence; negative ones and those >= seq_len do not exist),
 * gathered partition by partition. Metadata is clamped: garbage gives garbage, never a stray access. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype_convert.h"
#include "npu_mla.h"
#include "npu_plan.h"
#include "plugin_error.h"
#include "plugin_struct.h"

typedef struct mla_job {
    const npu_mla_plan_t *plan;
    int64_t T, Hq, D, Dv, bs, num_blocks, topk;
    const char *q;   int64_t q_st[2];   dc_kind_t q_kind;
    char       *out; int64_t out_st[2]; dc_kind_t out_kind;
    const char *kv;  int64_t kv_st[2];  dc_kind_t kv_kind;
    float       kv_scale;
    const int32_t *bt;  int64_t bt_st[2], bt_cols;
    const int32_t *qsl; int64_t qsl_st;
    const int32_t *sl;  int64_t sl_st;
    const int32_t *idx; int64_t idx_st[2];
    const float   *sinks; int64_t sinks_st;
    int          causal;
    npu_online_t o;
} mla_job_t;

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Dequantises the latent row at position pos of request seq into tile row i; 0 when its block is
 * not in the cache. */
static int load_row(const mla_job_t *j, int64_t seq, int64_t pos, int64_t i)
{
    const int64_t block = j->bt[seq * j->bt_st[0] + (pos / j->bs) * j->bt_st[1]];
    if (block < 0 || block >= j->num_blocks) return 0;
    const char *row = j->kv + (size_t)(block * j->kv_st[0] + (pos % j->bs) * j->kv_st[1]) * dc_kind_size(j->kv_kind);
    dc_row_to_f32(j->o.kt + i * j->D, row, j->kv_kind, (size_t)j->D, j->kv_scale);
    return 1;
}

static void load_queries(const mla_job_t *j, int64_t t0, int64_t nt, int64_t h0, int64_t nh)
{
    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const char *q = j->q + (size_t)((t0 + ti) * j->q_st[0] + (h0 + hh) * j->q_st[1]) * dc_kind_size(j->q_kind);
            dc_row_to_f32(j->o.q + (ti * nh + hh) * j->D, q, j->q_kind, (size_t)j->D, 1.0f);
        }
    npu_online_begin(&j->o, nt * nh);
}

static void store_rows(const mla_job_t *j, int64_t t0, int64_t nt, int64_t h0, int64_t nh)
{
    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const int64_t r = ti * nh + hh, t = t0 + ti, hq = h0 + hh;
            npu_online_finish(&j->o, r, j->sinks != NULL, j->sinks ? j->sinks[hq * j->sinks_st] : 0.0f);
            char *o = j->out + (size_t)(t * j->out_st[0] + hq * j->out_st[1]) * dc_kind_size(j->out_kind);
            dc_row_from_f32(o, j->o.acc + r * j->Dv, j->out_kind, (size_t)j->Dv, 1.0f);
        }
}

/* Dense rows: tokens [t0, t0 + nt) (positions pq0 ...) of request seq, heads h0 .. h0 + nh - 1. */
static void dense_rows(const mla_job_t *j, int64_t seq, int64_t t0, int64_t nt, int64_t pq0, int64_t S, int64_t h0,
                       int64_t nh)
{
    const int64_t rows = nt * nh;
    load_queries(j, t0, nt, h0, nh);
    int64_t lo, hi, unused;
    npu_key_range(pq0, S, j->causal, -1, -1, &lo, &unused);
    npu_key_range(pq0 + nt - 1, S, j->causal, -1, -1, &unused, &hi);
    for (int64_t part = 0; part < j->bt_cols && lo <= hi; part++) {
        const int64_t p_lo = part * j->bs, p_hi = (part + 1) * j->bs < S ? (part + 1) * j->bs - 1 : S - 1;
        if (p_hi < p_lo) break;               /* empty partition: this and every later one */
        if (p_hi < lo || p_lo > hi) continue; /* hidden by the mask: not visited */
        npu_online_partition(&j->o, rows);
        const int64_t k_end = p_hi < hi ? p_hi : hi;
        for (int64_t k0 = p_lo > lo ? p_lo : lo; k0 <= k_end; k0 += NPU_TILE) {
            const int64_t n = k_end - k0 + 1 < NPU_TILE ? k_end - k0 + 1 : NPU_TILE;
            if (!load_row(j, seq, k0, 0)) continue; /* a garbage table entry: those keys do not exist */
            for (int64_t i = 1; i < n; i++) load_row(j, seq, k0 + i, i);
            for (int64_t ti = 0; ti < nt; ti++) {
                int64_t rlo, rhi;
                npu_key_range(pq0 + ti, S, j->causal, -1, -1, &rlo, &rhi);
                const int jb = (int)clamp64(rlo - k0, 0, n), je = (int)clamp64(rhi - k0 + 1, 0, n);
                for (int64_t hh = 0; hh < nh && jb < je; hh++) npu_online_fold(&j->o, ti * nh + hh, jb, je);
            }
        }
        npu_online_merge(&j->o, rows);
    }
    store_rows(j, t0, nt, h0, nh);
}

/* Folds tile rows [0, n) into every head's partition state (a sparse tile is visible to all). */
static void fold_heads(const mla_job_t *j, int64_t nh, int64_t n)
{
    for (int64_t hh = 0; hh < nh; hh++) npu_online_fold(&j->o, hh, 0, (int)n);
}

/* Sparse rows: token t of request seq, heads h0 .. h0 + nh - 1; its indices gathered per partition. */
static void sparse_rows(const mla_job_t *j, int64_t seq, int64_t t, int64_t S, int64_t h0, int64_t nh)
{
    load_queries(j, t, 1, h0, nh);
    const int32_t *idx = j->idx + t * j->idx_st[0];
    for (int64_t part = 0; part < j->bt_cols && part * j->bs < S; part++) {
        const int64_t p_lo = part * j->bs, p_end = (part + 1) * j->bs < S ? (part + 1) * j->bs : S;
        npu_online_partition(&j->o, nh);
        int64_t n = 0;
        for (int64_t k = 0; k < j->topk; k++) {
            const int64_t pos = idx[k * j->idx_st[1]];
            if (pos < p_lo || pos >= p_end || !load_row(j, seq, pos, n)) continue;
            if (++n == NPU_TILE) {
                fold_heads(j, nh, n);
                n = 0;
            }
        }
        if (n) fold_heads(j, nh, n);
        npu_online_merge(&j->o, nh);
    }
    store_rows(j, t, 1, h0, nh);
}

/* One NPU unit: query tokens [t0, t1) (of L) of request seq, every head, in CPU-sized row groups. */
static void run_unit(const void *job, int64_t seq, int64_t q_begin, int64_t L, int64_t S, int64_t t0, int64_t t1)
{
    const mla_job_t *j = job;
    const int64_t heads = j->Hq < NPU_ROWS_MAX ? j->Hq : NPU_ROWS_MAX;
    const int64_t tile_t = j->idx ? 1 : NPU_ROWS_MAX / heads;
    for (int64_t h0 = 0; h0 < j->Hq; h0 += heads) {
        const int64_t nh = j->Hq - h0 < heads ? j->Hq - h0 : heads;
        for (int64_t a = t0; a < t1; a += tile_t) {
            const int64_t nt = t1 - a < tile_t ? t1 - a : tile_t;
            if (j->idx)
                sparse_rows(j, seq, q_begin + a, S, h0, nh);
            else
                dense_rows(j, seq, q_begin + a, nt, S - L + a, S, h0, nh);
        }
    }
}

static void job_init(mla_job_t *j, const npu_mla_plan_t *p, const attnrt_mla_args_t *a, float *scratch)
{
    memset(j, 0, sizeof *j);
    j->plan = p;
    j->T = p->num_tokens;
    j->Hq = p->num_q_heads;
    j->D = p->kv_dim;
    j->Dv = p->v_dim;
    j->topk = p->topk;
    j->q = a->query->data;
    j->q_st[0] = a->query->strides[0];
    j->q_st[1] = a->query->strides[1];
    j->q_kind = dc_kind_of(a->query->dtype);
    j->out = a->out->data;
    j->out_st[0] = a->out->strides[0];
    j->out_st[1] = a->out->strides[1];
    j->out_kind = dc_kind_of(a->out->dtype);
    j->kv = a->kv_cache->data;
    j->kv_st[0] = a->kv_cache->strides[0];
    j->kv_st[1] = a->kv_cache->strides[1];
    j->kv_kind = dc_kind_of(a->kv_cache->dtype);
    const int fp8 = j->kv_kind == DC_E4M3 || j->kv_kind == DC_E5M2;
    j->kv_scale = fp8 && a->kv_scale && a->kv_scale->data ? *(const float *)a->kv_scale->data : 1.0f;
    j->bs = a->kv_cache->shape[1];
    j->num_blocks = a->kv_cache->shape[0];
    j->bt = a->block_table->data;
    j->bt_st[0] = a->block_table->strides[0];
    j->bt_st[1] = a->block_table->strides[1];
    j->bt_cols = a->block_table->shape[1];
    j->qsl = a->query_start_loc->data;
    j->qsl_st = a->query_start_loc->strides[0];
    j->sl = a->seq_lens->data;
    j->sl_st = a->seq_lens->strides[0];
    if (a->indices) {
        j->idx = a->indices->data;
        j->idx_st[0] = a->indices->strides[0];
        j->idx_st[1] = a->indices->strides[1];
    }
    if (a->sinks) {
        j->sinks = a->sinks->data;
        j->sinks_st = a->sinks->strides[0];
    }
    j->causal = a->causal != 0;
    j->o.dqk = j->D;
    j->o.dv = j->Dv;
    j->o.scale = a->scale;
    if (scratch) npu_online_carve(&j->o, scratch, 1);
}

attnrt_status_t npu_mla_run(void *device, const void *plan, const attnrt_mla_args_t *in, void *workspace,
                            size_t workspace_bytes, void *stream)
{
    (void)stream;
    npu_device_t *d = device;
    const npu_mla_plan_t *p = plan;
    attnrt_mla_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (!p || p->device != d)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla run: the plan is NULL or was made on another "
                           "device", NPU_DEV_ARG(d));
    if (!a.query || !a.kv_cache || !a.block_table || !a.query_start_loc || !a.seq_lens || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla run: a required tensor is NULL", NPU_DEV_ARG(d));
    if (a.query->shape[0] != p->num_tokens || a.query->shape[1] != p->num_q_heads || a.query->shape[2] != p->kv_dim ||
        a.out->shape[2] != p->v_dim || a.kv_cache->shape[1] != p->block_size || a.seq_lens->shape[0] != p->num_seqs ||
        a.block_table->ndim != 2 || a.block_table->shape[1] != p->bt_cols || (a.indices != NULL) != p->sparse ||
        (a.indices && a.indices->shape[1] != p->topk))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla run: shapes differ from the plan's (T %lld, Hq "
                           "%lld, kv_dim %lld, v_dim %lld, B %lld, block %lld x %lld, topk %lld); plan this batch again",
                           NPU_DEV_ARG(d), (long long)p->num_tokens, (long long)p->num_q_heads, (long long)p->kv_dim,
                           (long long)p->v_dim, (long long)p->num_seqs, (long long)p->bt_cols,
                           (long long)p->block_size, (long long)p->topk);
    /* the scratch is the caller's workspace: runs of one plan may race, so a run writes nothing else */
    const size_t need = npu_mla_workspace_bytes(p);
    if (workspace_bytes < need || (need && !workspace))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla run: workspace of %zu bytes < %zu planned",
                           NPU_DEV_ARG(d), workspace_bytes, need);
    float *scratch = NULL;
    if (need) scratch = (float *)(((uintptr_t)workspace + 63) & ~(uintptr_t)63);
    mla_job_t j;
    job_init(&j, p, &a, scratch);
    if (j.bs > 0 && scratch) {
        const npu_walk_t w = {p->num_seqs, j.T, j.bt_cols * j.bs, p->prefill_chunk, j.bs, j.qsl, j.sl, j.qsl_st, j.sl_st};
        npu_walk_units(&w, &j, run_unit);
    }
    npu_device_record(d, &p->stats);
    return ATTNRT_OK;
}
