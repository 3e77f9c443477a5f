/* npu_attention.c — attention_run: real results, computed on the CPU in the NPU's order.
 *
 * The unit of NPU work is a (request, chunk): decode requests (query length 1) first, as the padded
 * decode batch, then each other request alone in prefill chunks that never cross a partition. Within
 * a unit the kernel walks the request's KV partitions (partition p = logical block p, P = block_size;
 * the naive kernel's single block is its only partition), skips the empty ones (p * P >= seq_len) and
 * those its mask hides, computes each partition's partial softmax state (m, l, acc), and merges it
 * into the running state with the online-softmax rule: m' = max(m, m_p),
 * acc' = e^{m - m'} acc + e^{m_p - m'} acc_p, l' likewise. Sinks join the denominator at the end.
 * On the CPU a unit is cut further into groups of <= NPU_ROWS_MAX rows and tiles of NPU_TILE keys.
 * Metadata is read from the run's tensors and clamped, so garbage gives garbage but no stray access. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype_convert.h"
#include "npu_ops.h"
#include "npu_plan.h"
#include "plugin_error.h"
#include "plugin_softmax.h"
#include "plugin_struct.h"
#include "plugin_tensor.h"

typedef struct job {
    const npu_attn_plan_t *plan;
    int64_t T, Hq, Hkv, group, dqk, dv, bs, num_blocks, bt_cols;
    plugin_view_t q, out, lse;  /* [T, Hq, Dqk], [T, Hq, Dv], optional [T, Hq]  */
    plugin_view_t kc, vc;       /* the caches                                  */
    plugin_view_t bt, qsl, sl;  /* block table, query_start_loc, seq_lens      */
    plugin_view_t sinks;        /* optional [Hq]                               */
    float   k_scale, v_scale;   /* fp8: the per-tensor scales; else 1          */
    int     causal;
    int64_t window_left;
    npu_online_t o; /* the rows' softmax state, in the run's scratch */
} job_t;

/* Dequantises the K/V rows of positions [k0, k0 + n) of one block (KV head h) into the tiles. */
static void load_tile(const job_t *j, int64_t block, int64_t row0, int64_t n, int64_t h)
{
    for (int64_t i = 0; i < n; i++) {
        const char *k = plugin_view_at3(&j->kc, block, row0 + i, h), *v = plugin_view_at3(&j->vc, block, row0 + i, h);
        dc_row_to_f32(j->o.kt + i * j->dqk, k, j->kc.kind, (size_t)j->dqk, j->k_scale);
        dc_row_to_f32(j->o.vt + i * j->dv, v, j->vc.kind, (size_t)j->dv, j->v_scale);
    }
}

/* Rows: query tokens [t0, t0 + nt) of request seq (positions pq0 ...), query heads h0 .. h0 + nh - 1 of KV
 * head h; row r = ti * nh + hh. */
static void run_rows(const job_t *j, int64_t seq, int64_t q_begin, int64_t t0, int64_t nt, int64_t pq0, int64_t S,
                     int64_t h, int64_t h0, int64_t nh)
{
    const int64_t rows = nt * nh;
    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const char *q = plugin_view_at(&j->q, q_begin + t0 + ti, h0 + hh);
            dc_row_to_f32(j->o.q + (ti * nh + hh) * j->dqk, q, j->q.kind, (size_t)j->dqk, 1.0f);
        }
    npu_online_begin(&j->o, rows);

    int64_t lo, hi, unused;
    plugin_key_range(pq0, S, j->causal, j->window_left, -1, &lo, &unused);
    plugin_key_range(pq0 + nt - 1, S, j->causal, j->window_left, -1, &unused, &hi);
    for (int64_t part = 0; part < j->bt_cols && lo <= hi; part++) {
        const int64_t p_lo = part * j->bs, p_hi = (part + 1) * j->bs < S ? (part + 1) * j->bs - 1 : S - 1;
        if (p_hi < p_lo) break;                 /* empty partition: this and every later one */
        if (p_hi < lo || p_lo > hi) continue;   /* hidden by the mask: not visited */
        const int64_t block = plugin_view_i32_2(&j->bt, seq, part);
        if (block < 0 || block >= j->num_blocks) continue; /* garbage table entry: those keys do not exist */
        npu_online_partition(&j->o, rows);
        const int64_t k_end = p_hi < hi ? p_hi : hi;
        for (int64_t k0 = p_lo > lo ? p_lo : lo; k0 <= k_end; k0 += NPU_TILE) {
            const int64_t n = k_end - k0 + 1 < NPU_TILE ? k_end - k0 + 1 : NPU_TILE;
            load_tile(j, block, k0 - p_lo, n, h);
            for (int64_t ti = 0; ti < nt; ti++) {
                int64_t rlo, rhi;
                plugin_key_range(pq0 + ti, S, j->causal, j->window_left, -1, &rlo, &rhi);
                const int jb = (int)plugin_clamp64(rlo - k0, 0, n), je = (int)plugin_clamp64(rhi - k0 + 1, 0, n);
                if (jb >= je) continue;
                for (int64_t hh = 0; hh < nh; hh++) npu_online_fold(&j->o, ti * nh + hh, jb, je);
            }
        }
        npu_online_merge(&j->o, rows);
    }

    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const int64_t r = ti * nh + hh, t = q_begin + t0 + ti, hq = h0 + hh;
            float *acc = j->o.acc + r * j->dv;
            const float sink = j->sinks.data ? plugin_view_f32(&j->sinks, hq) : 0.0f;
            const double lse = plugin_softmax_finish(acc, j->dv, j->o.m[r], j->o.l[r], j->sinks.data ? &sink : NULL);
            dc_row_from_f32(plugin_view_at(&j->out, t, hq), acc, j->out.kind, (size_t)j->dv, 1.0f);
            if (j->lse.data) *(float *)(void *)plugin_view_at(&j->lse, t, hq) = (float)lse;
        }
}

/* One NPU unit: query tokens [t0, t1) of request seq, every head, in CPU-sized row groups. */
static void run_unit(const void *job, int64_t seq, int64_t q_begin, int64_t L, int64_t S, int64_t t0, int64_t t1)
{
    const job_t *j = job;
    const int64_t heads = j->group < NPU_ROWS_MAX ? j->group : NPU_ROWS_MAX;
    const int64_t tile_t = NPU_ROWS_MAX / heads;
    for (int64_t h = 0; h < j->Hkv; h++)
        for (int64_t hf = 0; hf < j->group; hf += heads) {
            const int64_t nh = j->group - hf < heads ? j->group - hf : heads;
            for (int64_t a = t0; a < t1; a += tile_t) {
                const int64_t nt = t1 - a < tile_t ? t1 - a : tile_t;
                run_rows(j, seq, q_begin, a, nt, S - L + a, S, h, h * j->group + hf, nh);
            }
        }
}

static void job_init(job_t *j, const npu_attn_plan_t *p, const attnrt_attention_args_t *a, float *scratch)
{
    memset(j, 0, sizeof *j);
    j->plan = p;
    j->T = p->num_tokens;
    j->Hq = p->num_q_heads;
    j->Hkv = p->num_kv_heads;
    j->group = j->Hq / j->Hkv;
    j->dqk = p->head_dim_qk;
    j->dv = p->head_dim_v;
    j->q = plugin_view_of(a->query);
    j->out = plugin_view_of(a->out);
    j->lse = plugin_view_of(a->lse);
    j->kc = plugin_view_of(a->key_cache);
    j->vc = plugin_view_of(a->value_cache);
    j->vc.kind = j->kc.kind; /* the plan refused caches of two dtypes */
    const int fp8 = j->kc.kind == DC_E4M3 || j->kc.kind == DC_E5M2;
    j->k_scale = fp8 && a->key_scale && a->key_scale->data ? *(const float *)a->key_scale->data : 1.0f;
    j->v_scale = fp8 && a->value_scale && a->value_scale->data ? *(const float *)a->value_scale->data : 1.0f;
    j->bs = a->key_cache->shape[1] < a->value_cache->shape[1] ? a->key_cache->shape[1] : a->value_cache->shape[1];
    j->num_blocks = a->key_cache->shape[0] < a->value_cache->shape[0] ? a->key_cache->shape[0] : a->value_cache->shape[0];
    j->bt = plugin_view_of(a->block_table); /* 1-D: no column, no block read */
    j->bt_cols = a->block_table->ndim > 1 ? a->block_table->shape[1] : 0;
    j->qsl = plugin_view_of(a->query_start_loc);
    j->sl = plugin_view_of(a->seq_lens);
    j->sinks = plugin_view_of(a->sinks);
    j->o.dqk = j->dqk;
    j->o.dv = j->dv;
    j->o.scale = a->scale != 0.0f ? a->scale : (float)(1.0 / sqrt((double)j->dqk));
    j->causal = a->causal != 0;
    j->window_left = a->causal ? plugin_window_count(a->sliding_window_left) : -1;
    if (scratch) npu_online_carve(&j->o, scratch, 0);
}

enum { SCRATCH_ALIGN = 64 };

size_t npu_attn_workspace_bytes(const npu_attn_plan_t *p)
{
    if (p->head_dim_qk <= 0 || p->head_dim_v <= 0) return 0;
    return npu_online_floats(p->head_dim_qk, p->head_dim_v) * sizeof(float) + SCRATCH_ALIGN;
}

attnrt_status_t npu_attention_run(npu_device_t *d, const void *plan, const attnrt_attention_args_t *in,
                                  void *workspace, size_t workspace_bytes)
{
    const npu_attn_plan_t *p = plan;
    attnrt_attention_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (!p || p->device != d)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention run: the plan is NULL or was made "
                           "on another device", NPU_DEV_ARG(d));
    if (!a.query || !a.key_cache || !a.value_cache || !a.block_table || !a.query_start_loc || !a.seq_lens || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention run: a required tensor is NULL",
                           NPU_DEV_ARG(d));
    if (a.query->shape[0] != p->num_tokens || a.query->shape[1] != p->num_q_heads || a.query->shape[2] != p->head_dim_qk ||
        a.key_cache->shape[2] != p->num_kv_heads || a.value_cache->shape[3] != p->head_dim_v ||
        a.key_cache->shape[1] != p->block_size || a.seq_lens->shape[0] != p->num_seqs ||
        (a.block_table->ndim > 1 ? a.block_table->shape[1] : 0) != p->bt_cols)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention run: shapes differ from the plan's "
                           "(T %lld, Hq %lld, Hkv %lld, D %lld/%lld, B %lld, block %lld x %lld); plan this batch again",
                           NPU_DEV_ARG(d), (long long)p->num_tokens, (long long)p->num_q_heads,
                           (long long)p->num_kv_heads, (long long)p->head_dim_qk, (long long)p->head_dim_v,
                           (long long)p->num_seqs, (long long)p->bt_cols, (long long)p->block_size);
    /* The scratch is the caller's workspace (npu_sim's device memory is host memory): runs of one plan may
     * race on distinct streams, so nothing a run writes may live in the plan, and a run allocates nothing. */
    const size_t need = npu_attn_workspace_bytes(p);
    if (workspace_bytes < need || (need && !workspace))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention run: workspace of %zu bytes < "
                           "%zu planned", NPU_DEV_ARG(d), workspace_bytes, need);
    float *scratch = NULL;
    if (need) {
        uintptr_t at = ((uintptr_t)workspace + SCRATCH_ALIGN - 1) & ~(uintptr_t)(SCRATCH_ALIGN - 1);
        scratch = (float *)at;
    }
    job_t j;
    job_init(&j, p, &a, scratch);
    if (j.bs > 0 && scratch) {
        const npu_walk_t w = {p->num_seqs, j.T, j.bt_cols * j.bs, p->prefill_chunk, j.bs, &j.qsl, &j.sl};
        npu_walk_units(&w, &j, run_unit);
    }
    npu_device_record(d, &p->stats);
    return ATTNRT_OK;
}
