/* npu_mla_run.c — mla_run: real MLA results, computed on the CPU in the NPU's order, as paged attention
 * is (npu_attention.c): decode requests first, then each other request alone in prefill chunks that
 * never cross a partition; per unit the kernel walks the request's partitions (partition p = logical
 * block p; the naive kernel's one block is its only partition), skips empty ones, and merges each
 * partition's partial softmax state into the running one. A key is one latent row of kv_dim columns;
 * its value is the row's first v_dim columns, so one tile serves K and V.
 * Dense: the keys [0, seq_len), bottom-right causal when asked. Sparse: a token's keys are its indices
 * (a repeated index counts once per occurrence; negative ones and those >= seq_len do not exist),
 * gathered partition by partition. Metadata is clamped: garbage gives garbage, never a stray access. */
#include <stdint.h>
#include <string.h>

#include "dtype_convert.h"
#include "npu_mla.h"
#include "npu_ops.h"
#include "npu_plan.h"
#include "plugin_error.h"
#include "plugin_mla.h"
#include "plugin_softmax.h"
#include "plugin_struct.h"

typedef struct mla_job {
    plugin_mla_t m;  /* the run's tensors, decoded and checked */
    float        kv_scale;
    npu_online_t o;
} mla_job_t;

/* Dequantises the latent row at position pos of request seq into tile row i; 0 when its block is
 * not in the cache. */
static int load_row(const mla_job_t *j, int64_t seq, int64_t pos, int64_t i)
{
    const plugin_mla_t *m = &j->m;
    const int64_t block = plugin_view_i32_2(&m->block_table, seq, pos / m->block_size);
    if (block < 0 || block >= m->num_blocks) return 0;
    dc_row_to_f32(j->o.kt + i * m->D, plugin_view_at(&m->kv, block, pos % m->block_size), m->kv.kind, (size_t)m->D,
                  j->kv_scale);
    return 1;
}

static void load_queries(const mla_job_t *j, int64_t t0, int64_t nt, int64_t h0, int64_t nh)
{
    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++)
            dc_row_to_f32(j->o.q + (ti * nh + hh) * j->m.D, plugin_view_at(&j->m.q, t0 + ti, h0 + hh), j->m.q.kind,
                          (size_t)j->m.D, 1.0f);
    npu_online_begin(&j->o, nt * nh);
}

static void store_rows(const mla_job_t *j, int64_t t0, int64_t nt, int64_t h0, int64_t nh)
{
    const plugin_mla_t *m = &j->m;
    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const int64_t r = ti * nh + hh, t = t0 + ti, hq = h0 + hh;
            float *acc = j->o.acc + r * m->Dv;
            const float sink = m->sinks.data ? plugin_view_f32(&m->sinks, hq) : 0.0f;
            plugin_softmax_finish(acc, m->Dv, j->o.m[r], j->o.l[r], m->sinks.data ? &sink : NULL);
            dc_row_from_f32(plugin_view_at(&m->out, t, hq), acc, m->out.kind, (size_t)m->Dv, 1.0f);
        }
}

/* Dense rows: tokens [t0, t0 + nt) (positions pq0 ...) of request seq, heads h0 .. h0 + nh - 1. */
static void dense_rows(const mla_job_t *j, int64_t seq, int64_t t0, int64_t nt, int64_t pq0, int64_t S, int64_t h0,
                       int64_t nh)
{
    const plugin_mla_t *m = &j->m;
    const int64_t rows = nt * nh, bs = m->block_size;
    load_queries(j, t0, nt, h0, nh);
    int64_t lo, hi, unused;
    plugin_key_range(pq0, S, m->causal, -1, -1, &lo, &unused);
    plugin_key_range(pq0 + nt - 1, S, m->causal, -1, -1, &unused, &hi);
    for (int64_t part = 0; part < m->bt_cols && lo <= hi; part++) {
        const int64_t p_lo = part * bs, p_hi = (part + 1) * bs < S ? (part + 1) * bs - 1 : S - 1;
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
                plugin_key_range(pq0 + ti, S, m->causal, -1, -1, &rlo, &rhi);
                const int jb = (int)plugin_clamp64(rlo - k0, 0, n), je = (int)plugin_clamp64(rhi - k0 + 1, 0, n);
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
    const plugin_mla_t *m = &j->m;
    const int64_t bs = m->block_size;
    load_queries(j, t, 1, h0, nh);
    for (int64_t part = 0; part < m->bt_cols && part * bs < S; part++) {
        const int64_t p_lo = part * bs, p_end = (part + 1) * bs < S ? (part + 1) * bs : S;
        npu_online_partition(&j->o, nh);
        int64_t n = 0;
        for (int64_t k = 0; k < m->topk; k++) {
            const int64_t pos = plugin_view_i32_2(&m->indices, t, k);
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
    const int64_t Hq = j->m.Hq, heads = Hq < NPU_ROWS_MAX ? Hq : NPU_ROWS_MAX;
    const int64_t tile_t = j->m.sparse ? 1 : NPU_ROWS_MAX / heads;
    for (int64_t h0 = 0; h0 < Hq; h0 += heads) {
        const int64_t nh = Hq - h0 < heads ? Hq - h0 : heads;
        for (int64_t a = t0; a < t1; a += tile_t) {
            const int64_t nt = t1 - a < tile_t ? t1 - a : tile_t;
            if (j->m.sparse)
                sparse_rows(j, seq, q_begin + a, S, h0, nh);
            else
                dense_rows(j, seq, q_begin + a, nt, S - L + a, S, h0, nh);
        }
    }
}

attnrt_status_t npu_mla_run(void *device, const void *plan, const attnrt_mla_args_t *in, void *workspace,
                            size_t workspace_bytes, void *stream)
{
    (void)stream;
    npu_device_t *d = device;
    const npu_mla_plan_t *p = plan;
    if (!p || p->device != d)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla run: the plan is NULL or was made on another device",
                           d->host.name);
    if (!in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla run: args are required", d->host.name);
    attnrt_mla_args_t a;
    PLUGIN_COPY_IN(a, in);
    mla_job_t j;
    memset(&j, 0, sizeof j);
    const plugin_mla_t *m = &j.m;
    attnrt_status_t st = plugin_mla_decode(d->host.name, &npu_op_rules, &d->sel, &a, p->num_seqs, 1, &j.m);
    if (st != ATTNRT_OK) return st;
    if (m->T != p->num_tokens || m->Hq != p->num_q_heads || m->D != p->kv_dim || m->Dv != p->v_dim ||
        m->block_size != p->block_size || m->bt_cols != p->bt_cols || m->sparse != p->sparse || m->topk != p->topk)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla run: shapes differ from the plan's (T %lld, Hq %lld, "
                           "kv_dim %lld, v_dim %lld, B %lld, block %lld x %lld, topk %lld); plan this batch again",
                           d->host.name, (long long)p->num_tokens, (long long)p->num_q_heads, (long long)p->kv_dim,
                           (long long)p->v_dim, (long long)p->num_seqs, (long long)p->bt_cols,
                           (long long)p->block_size, (long long)p->topk);
    /* the scratch is the caller's workspace: runs of one plan may race, so a run writes nothing else */
    const size_t need = npu_mla_workspace_bytes(p);
    if (workspace_bytes < need || (need && !workspace))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla run: workspace of %zu bytes < %zu planned",
                           d->host.name, workspace_bytes, need);
    j.kv_scale = m->kv_scale ? m->kv_scale[0] : 1.0f;
    j.o.dqk = m->D;
    j.o.dv = m->Dv;
    j.o.scale = m->scale;
    if (need) {
        npu_online_carve(&j.o, (float *)(((uintptr_t)workspace + 63) & ~(uintptr_t)63), 1);
        const npu_walk_t w = {m->B, m->T, m->bt_cols * m->block_size, p->prefill_chunk, m->block_size, &m->qsl,
                              &m->seq_lens};
        npu_walk_units(&w, &j, run_unit);
    }
    npu_device_record(d, &p->stats);
    return ATTNRT_OK;
}
