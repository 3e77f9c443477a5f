/* npu_mla_plan.c — MLA on the simulated NPU: the capability answer, and mla_plan, which derives the
 * model configuration the batch implies (max_model_len = block-table columns x block_size, an MLA
 * layer, dense or sparse by the indices), asks the selection rules for its kernel, and costs the batch
 * as the NPU runs it: decode rows together, padded to a bucket; every other request alone in prefill
 * chunks that never cross a partition; one latent row per token read for K and V alike. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "npu_mla.h"
#include "npu_ops.h"
#include "npu_plan.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_mla.h"
#include "plugin_query.h"

attnrt_status_t npu_mla_check(const void *ctx_, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    const npu_select_ctx_t *ctx = ctx_;
    char msg[NPU_MSG_MAX];
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_cache_dtype(q->kv_dtype, reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q->block_size) {
        const int ok = ctx->front_end == ATTNRT_FRONT_END_COMPILED
                           ? npu_rule_compiled_block(ctx->profile, q->block_size, msg, sizeof msg)
                           : npu_rule_vllm_block(ctx->profile, q->block_size, msg, sizeof msg);
        if (!ok) return plugin_refuse(reason, cap, "%s", msg);
    }
    const dc_kind_t kv = dc_kind_of(q->kv_dtype);
    if ((kv == DC_E4M3 || kv == DC_E5M2) && !(q->features & ATTNRT_FEATURE_SPARSE))
        return plugin_refuse(reason, cap, "FP8 KV cache is supported only in Sparse MLA; Dense MLA does not support it. "
                             "[%s, %s path; accepted: Sparse MLA (indices); or a non-FP8 cache]", ctx->profile->name,
                             ctx->front_end == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vLLM");
    if ((st = plugin_rule_mla_latent(q, reason, cap)) != ATTNRT_OK) return st;
    if (q->features & ATTNRT_FEATURE_KV_SCALE_BLOCK)
        return plugin_refuse(reason, cap, "per-block fp8 KV scales: npu_sim's FP8 caches carry one scale per tensor "
                             "[P: as vLLM's k_scale / v_scale]; use a [1] scale");
    if (q->features & ATTNRT_FEATURE_LSE)
        return plugin_refuse(reason, cap, "LSE output: the RBLN attention kernels return only the attention output, no "
                             "log-sum-exp");
    const uint32_t known = ATTNRT_FEATURE_SPARSE | ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SINKS;
    if (q->features & ~known)
        return plugin_refuse(reason, cap, "MLA takes causal (dense), sinks and indices (sparse) only; features 0x%x",
                             q->features & ~known);
    return ATTNRT_OK;
}

size_t npu_mla_workspace_bytes(const npu_mla_plan_t *p)
{
    if (p->kv_dim <= 0 || p->v_dim <= 0) return 0;
    const size_t floats = npu_online_floats(p->kv_dim, p->v_dim);
    return floats ? floats * sizeof(float) + 64 : 0;
}

/* The shared decoder's MLA rule at plan time: none, so that the full query below (block size, sinks,
 * LSE, per-block scales) is asked first and refuses in the selection's order. */
static attnrt_status_t shapes_only(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx, (void)q, (void)reason, (void)cap;
    return ATTNRT_OK;
}

static const plugin_op_rules_t shape_rules = {.who = "npu_sim", .rule = {[ATTNRT_OP_MLA] = shapes_only}};

/* The query op_supported was asked, rebuilt from the args: plan refuses what op_supported does. */
static attnrt_status_t check_supported(const npu_device_t *d, const attnrt_mla_args_t *a, const plugin_mla_t *m)
{
    attnrt_op_query_t q;
    plugin_mla_query(a, m->D, m->Dv, &q);
    q.block_size = plugin_query_dim(m->block_size);
    q.num_q_heads = plugin_query_dim(m->Hq);
    q.features = (m->sparse ? ATTNRT_FEATURE_SPARSE : 0u) | (!m->sparse && m->causal ? ATTNRT_FEATURE_CAUSAL : 0u) |
                 (a->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (a->lse ? ATTNRT_FEATURE_LSE : 0u) |
                 (a->kv_scale && a->kv_scale->ndim == 2 ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u);
    char reason[NPU_MSG_MAX];
    if (npu_mla_check(&d->sel, &q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s mla: %s", d->host.name, reason);
    return ATTNRT_OK;
}

/* The kernel the selection rules give this batch's latent cache and block table. */
static attnrt_status_t select_kernel(const npu_device_t *d, const attnrt_mla_args_t *a, npu_mla_plan_t *p)
{
    attnrt_attention_config_t c = {
        .layer_kind = p->sparse ? ATTNRT_LAYER_MLA_SPARSE : ATTNRT_LAYER_MLA_DENSE,
        .max_model_len = p->max_model_len,
        .block_size = p->block_size,
        .head_dim = (uint32_t)p->kv_dim,
        .has_sinks = a->sinks != NULL,
        .kv_dtype = a->kv_cache->dtype,
    };
    return npu_plan_select(d, "mla", &c, p->bt_cols, p->kernel_name, sizeof p->kernel_name);
}

static void cost_batch(const npu_device_t *d, const attnrt_mla_args_t *a, const attnrt_batch_host_t *batch,
                       npu_mla_plan_t *p, int64_t *lo, int64_t *hi)
{
    npu_cost_shape_t sh;
    memset(&sh, 0, sizeof sh);
    const int naive = strstr(p->kernel_name, "naive") != NULL;
    sh.kernel = p->sparse ? NPU_KERNEL_SPARSE : naive ? NPU_KERNEL_NAIVE : NPU_KERNEL_FLASH;
    sh.num_q_heads = p->num_q_heads;
    sh.num_kv_heads = 1;
    sh.head_dim_qk = p->kv_dim;
    sh.head_dim_v = p->v_dim;
    sh.q_bytes = (int64_t)dc_kind_size(dc_kind_of(a->query->dtype));
    sh.out_bytes = (int64_t)dc_kind_size(dc_kind_of(a->out->dtype));
    sh.kv_bytes = (int64_t)dc_kind_size(dc_kind_of(a->kv_cache->dtype));
    sh.partition = naive ? p->max_model_len : p->block_size;
    sh.latent = 1;
    sh.topk = p->topk;
    const int causal = a->causal && !p->sparse;

    npu_cost_begin(&p->stats, ATTNRT_OP_MLA);
    int64_t decode = 0;
    for (int64_t b = 0; b < p->num_seqs; b++) { /* decode rows first: one bucketed launch group */
        if (plugin_batch_query_len(batch, b, p->num_tokens) != 1) continue;
        lo[decode] = 0;
        hi[decode++] = plugin_clamp64(batch->seq_lens[b], 0, p->max_model_len);
    }
    if (decode) npu_cost_decode(d->sel.profile, &sh, lo, hi, decode, &p->stats);
    for (int64_t b = 0; b < p->num_seqs; b++) { /* then each prefill alone, chunk by chunk */
        const int64_t L = plugin_batch_query_len(batch, b, p->num_tokens);
        const int64_t S = plugin_clamp64(batch->seq_lens[b], 0, p->max_model_len);
        if (L < 2) continue;
        for (int64_t pos = S - L; pos < S;) {
            const int64_t end = npu_chunk_end(pos, S, p->prefill_chunk, p->block_size);
            npu_cost_prefill_chunk(d->sel.profile, &sh, end - pos, p->prefill_chunk, 0, causal ? (end > 0 ? end : 0) : S,
                                   &p->stats);
            pos = end > pos ? end : S;
        }
    }
}

attnrt_status_t npu_mla_plan(void *device, const attnrt_mla_args_t *args_in, const attnrt_batch_host_t *batch_in,
                             void **plan_out, size_t *workspace_bytes)
{
    npu_device_t *d = device;
    attnrt_mla_args_t a;
    attnrt_batch_host_t batch;
    plugin_mla_t m;
    attnrt_status_t st = PLUGIN_PLAN_OPEN(d->host.name, "mla", a, args_in, batch, batch_in, PLUGIN_BATCH_QSL_SEQ_LENS,
                                          plan_out, workspace_bytes);
    if (st == ATTNRT_OK && !a.block_table) /* its columns are the model's max_model_len */
        st = plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla plan: block_table is required", d->host.name);
    if (st == ATTNRT_OK) st = plugin_mla_decode(d->host.name, &shape_rules, NULL, &a, batch.num_seqs, 0, &m);
    if (st == ATTNRT_OK) st = check_supported(d, &a, &m);
    if (st != ATTNRT_OK) return st;

    npu_mla_plan_t *p = calloc(1, sizeof *p);
    const int64_t B = m.B;
    int64_t *bounds = malloc(sizeof(int64_t) * (size_t)(2 * B + 1));
    if (!p || !bounds) {
        free(p);
        free(bounds);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s mla plan: out of host memory", d->host.name);
    }
    *p = (npu_mla_plan_t){.device = d, .sparse = m.sparse, .block_size = m.block_size, .bt_cols = m.bt_cols,
                          .max_model_len = m.bt_cols * m.block_size, .prefill_chunk = d->sel.prefill_chunk,
                          .num_tokens = m.T, .num_seqs = B, .num_q_heads = m.Hq, .kv_dim = m.D, .v_dim = m.Dv,
                          .topk = m.topk};
    if (p->max_model_len > 0)
        st = select_kernel(d, &a, p);
    else
        snprintf(p->kernel_name, sizeof p->kernel_name, "none"); /* no column: every row is empty */
    if (st == ATTNRT_OK) cost_batch(d, &a, &batch, p, bounds, bounds + B);
    free(bounds);
    if (st == ATTNRT_OK && !npu_online_floats(p->kv_dim, p->v_dim))
        st = plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s mla plan: kv_dim %lld / v_dim %lld: the run's scratch would "
                         "not fit in memory", d->host.name, (long long)p->kv_dim, (long long)p->v_dim);
    if (st != ATTNRT_OK) {
        free(p);
        return st;
    }
    *plan_out = p;
    *workspace_bytes = npu_mla_workspace_bytes(p);
    return ATTNRT_OK;
}

void npu_mla_plan_destroy(void *device, void *plan)
{
    (void)device;
    free(plan);
}
