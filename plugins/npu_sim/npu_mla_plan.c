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
#include "npu_plan.h"
#include "plugin_error.h"
#include "plugin_struct.h"

static int act_ok(attnrt_dtype_t dt)
{
    const dc_kind_t k = dc_kind_of(dt);
    return plugin_dtype_is_any(dt) || k == DC_F32 || k == DC_F16 || k == DC_BF16;
}

attnrt_status_t npu_mla_check(const npu_select_ctx_t *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    char msg[NPU_MSG_MAX];
    if (!act_ok(q->q_dtype))
        return plugin_refuse(reason, cap, "query dtype (code %u, %u bits) is not f32, f16 or bf16", q->q_dtype.code,
                             q->q_dtype.bits);
    const dc_kind_t kv = dc_kind_of(q->kv_dtype);
    if (!plugin_dtype_is_any(q->kv_dtype) && kv == DC_INVALID)
        return plugin_refuse(reason, cap, "latent cache dtype (code %u, %u bits) is not f32, f16, bf16, fp8_e4m3 or "
                             "fp8_e5m2", q->kv_dtype.code, q->kv_dtype.bits);
    if (q->block_size) {
        const int ok = ctx->front_end == ATTNRT_FRONT_END_COMPILED
                           ? npu_rule_compiled_block(ctx->profile, q->block_size, msg, sizeof msg)
                           : npu_rule_vllm_block(ctx->profile, q->block_size, msg, sizeof msg);
        if (!ok) return plugin_refuse(reason, cap, "%s", msg);
    }
    if ((kv == DC_E4M3 || kv == DC_E5M2) && !(q->features & ATTNRT_FEATURE_SPARSE))
        return plugin_refuse(reason, cap, "FP8 KV cache is supported only in Sparse MLA; Dense MLA does not support it. "
                             "[%s, %s path; accepted: Sparse MLA (indices); or a non-FP8 cache]", ctx->profile->name,
                             ctx->front_end == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vLLM");
    if (q->num_kv_heads > 1) return plugin_refuse(reason, cap, "MLA has one latent KV head, not %u", q->num_kv_heads);
    if (q->head_dim_qk && q->head_dim_v > q->head_dim_qk)
        return plugin_refuse(reason, cap, "MLA v_dim %u exceeds kv_dim %u", q->head_dim_v, q->head_dim_qk);
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

/* Shapes and presence, for callers that reach the plugin without the runtime; sizes in [0, 2^31). */
static attnrt_status_t check_args(const npu_device_t *d, const attnrt_mla_args_t *a, const attnrt_batch_host_t *b)
{
    if (!a->query || !a->kv_cache || !a->out || !a->block_table || !a->seq_lens || !a->query_start_loc)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: query, kv_cache, out, block_table, "
                           "query_start_loc and seq_lens are required", NPU_DEV_ARG(d));
    const struct { const attnrt_tensor_t *t; const char *name; int ndim; } ts[] = {
        {a->query, "query", 3}, {a->kv_cache, "kv_cache", 4}, {a->out, "out", 3}, {a->block_table, "block_table", 2},
        {a->indices, "indices", 2},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        const attnrt_tensor_t *t = ts[i].t;
        if (!t) continue;
        if (t->ndim != ts[i].ndim)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: %s has %d dims, not %d",
                               NPU_DEV_ARG(d), ts[i].name, t->ndim, ts[i].ndim);
        for (int k = 0; k < t->ndim; k++)
            if (t->shape[k] < 0 || t->shape[k] > INT32_MAX)
                return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: %s.shape[%d] = %lld is out of "
                                   "range [0, 2^31)", NPU_DEV_ARG(d), ts[i].name, k, (long long)t->shape[k]);
    }
    const int64_t T = a->query->shape[0], Hq = a->query->shape[1], D = a->query->shape[2];
    if (a->kv_cache->shape[2] != 1 || a->kv_cache->shape[3] != D || a->out->shape[0] != T || a->out->shape[1] != Hq ||
        a->out->shape[2] < 1 || a->out->shape[2] > D || (a->indices && a->indices->shape[0] != T))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: kv_cache must be [blocks, block_size, 1, "
                           "kv_dim = %lld], out [T = %lld, Hq = %lld, v_dim <= kv_dim], indices [T, topk]",
                           NPU_DEV_ARG(d), (long long)D, (long long)T, (long long)Hq);
    if (b->num_seqs > 0 && (!b->query_start_loc || !b->seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: the host batch has no query_start_loc "
                           "or seq_lens", NPU_DEV_ARG(d));
    if (dc_kind_of(a->out->dtype) != dc_kind_of(a->query->dtype) && dc_kind_of(a->out->dtype) != DC_F32)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " mla: out dtype %s is neither the query's (%s) nor f32",
                           NPU_DEV_ARG(d), dc_kind_name(dc_kind_of(a->out->dtype)),
                           dc_kind_name(dc_kind_of(a->query->dtype)));
    return ATTNRT_OK;
}

/* The query op_supported was asked, rebuilt from the args: plan refuses what op_supported does. */
static attnrt_status_t check_supported(const npu_device_t *d, const attnrt_mla_args_t *a)
{
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_MLA;
    q.q_dtype = a->query->dtype;
    q.kv_dtype = a->kv_cache->dtype;
    q.head_dim_qk = (uint32_t)a->query->shape[2];
    q.head_dim_v = (uint32_t)a->out->shape[2];
    q.block_size = (uint32_t)a->kv_cache->shape[1];
    q.num_q_heads = (uint32_t)a->query->shape[1];
    q.num_kv_heads = 1;
    q.features = (a->indices ? ATTNRT_FEATURE_SPARSE : 0u) | (!a->indices && a->causal ? ATTNRT_FEATURE_CAUSAL : 0u) |
                 (a->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (a->lse ? ATTNRT_FEATURE_LSE : 0u) |
                 (a->kv_scale && a->kv_scale->ndim == 2 ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u);
    char reason[NPU_MSG_MAX];
    if (npu_mla_check(&d->sel, &q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " mla: %s", NPU_DEV_ARG(d), reason);
    return ATTNRT_OK;
}

/* The kernel the selection rules give this batch's latent cache and block table. */
static attnrt_status_t select_kernel(const npu_device_t *d, const attnrt_mla_args_t *a, npu_mla_plan_t *p)
{
    attnrt_attention_config_t c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.front_end = d->sel.front_end;
    c.layer_kind = p->sparse ? ATTNRT_LAYER_MLA_SPARSE : ATTNRT_LAYER_MLA_DENSE;
    c.model_kind = d->sel.model_kind;
    c.max_model_len = p->max_model_len;
    c.block_size = p->block_size;
    c.head_dim = (uint32_t)p->kv_dim;
    c.has_sinks = a->sinks != NULL;
    c.kv_dtype = a->kv_cache->dtype;
    attnrt_attention_selection_t sel;
    char msg[NPU_MSG_MAX];
    if (npu_select(&d->sel, &c, &sel, msg, sizeof msg) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " mla (%s model path, max_model_len %lld = %lld "
                           "block-table columns x block_size %lld): %s", NPU_DEV_ARG(d),
                           c.front_end == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vLLM", (long long)p->max_model_len,
                           (long long)p->bt_cols, (long long)p->block_size, msg);
    snprintf(p->kernel_name, sizeof p->kernel_name, "%s", sel.kernel);
    return ATTNRT_OK;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

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
        const int64_t q0 = clamp64(batch->query_start_loc[b], 0, p->num_tokens);
        const int64_t L = clamp64(batch->query_start_loc[b + 1], q0, p->num_tokens) - q0;
        if (L != 1) continue;
        lo[decode] = 0;
        hi[decode++] = clamp64(batch->seq_lens[b], 0, p->max_model_len);
    }
    if (decode) npu_cost_decode(d->sel.profile, &sh, lo, hi, decode, &p->stats);
    for (int64_t b = 0; b < p->num_seqs; b++) { /* then each prefill alone, chunk by chunk */
        const int64_t q0 = clamp64(batch->query_start_loc[b], 0, p->num_tokens);
        const int64_t L = clamp64(batch->query_start_loc[b + 1], q0, p->num_tokens) - q0;
        const int64_t S = clamp64(batch->seq_lens[b], 0, p->max_model_len);
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
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: args, batch and both outputs are "
                           "required", NPU_DEV_ARG(d));
    attnrt_mla_args_t a;
    attnrt_batch_host_t batch;
    PLUGIN_COPY_IN(a, args_in);
    PLUGIN_COPY_IN(batch, batch_in);
    attnrt_status_t st = check_args(d, &a, &batch);
    if (st == ATTNRT_OK) st = check_supported(d, &a);
    if (st != ATTNRT_OK) return st;

    npu_mla_plan_t *p = calloc(1, sizeof *p);
    const int64_t B = batch.num_seqs > 0 ? batch.num_seqs : 0;
    int64_t *bounds = malloc(sizeof(int64_t) * (size_t)(2 * B + 1));
    if (!p || !bounds) {
        free(p);
        free(bounds);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, NPU_DEV_FMT " mla plan: out of host memory", NPU_DEV_ARG(d));
    }
    p->device = d;
    p->sparse = a.indices != NULL;
    p->num_tokens = a.query->shape[0];
    p->num_q_heads = a.query->shape[1];
    p->kv_dim = a.query->shape[2];
    p->v_dim = a.out->shape[2];
    p->topk = a.indices ? a.indices->shape[1] : 0;
    p->num_seqs = B;
    p->block_size = a.kv_cache->shape[1];
    p->bt_cols = a.block_table->shape[1];
    p->max_model_len = p->bt_cols * p->block_size;
    p->prefill_chunk = d->sel.prefill_chunk;
    if (p->max_model_len > 0)
        st = select_kernel(d, &a, p);
    else
        snprintf(p->kernel_name, sizeof p->kernel_name, "none"); /* no column: every row is empty */
    if (st == ATTNRT_OK) cost_batch(d, &a, &batch, p, bounds, bounds + B);
    free(bounds);
    if (st == ATTNRT_OK && !npu_online_floats(p->kv_dim, p->v_dim))
        st = plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " mla plan: kv_dim %lld / v_dim %lld: the run's "
                         "scratch would not fit in memory", NPU_DEV_ARG(d), (long long)p->kv_dim, (long long)p->v_dim);
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
