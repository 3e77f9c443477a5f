/* npu_plan.c — attention_plan: asks the capability rules, derives the model configuration the batch
 * implies (max_model_len = block-table columns x block_size: vLLM's block tables are
 * ceil(max_model_len / block_size) wide, and whole blocks select the same kernel and partitions), runs
 * the kernel selection on it, and costs the batch the way the
 * NPU would run it: decode rows (query length 1) together, padded to a bucket; every other request
 * alone (batch 1) in prefill chunks that never cross a partition. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "npu_ops.h"
#include "npu_plan.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_query.h"
#include "plugin_struct.h"
#include "plugin_tensor.h"

/* Every size in [0, 2^31), as the runtime checks them (again here for callers that reach the plugin
 * without it): the plan's products of shapes then fit in 64 bits. */
static attnrt_status_t check_sizes(const npu_device_t *d, const attnrt_attention_args_t *a)
{
    const struct { const attnrt_tensor_t *t; const char *name; int ndim; } ts[] = {
        {a->query, "query", 3}, {a->key_cache, "key_cache", 4}, {a->value_cache, "value_cache", 4}, {a->out, "out", 3},
        {a->block_table, "block_table", 0},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        const attnrt_tensor_t *t = ts[i].t;
        if (ts[i].ndim && t->ndim != ts[i].ndim)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention plan: %s has %d dims, not %d",
                               NPU_DEV_ARG(d), ts[i].name, t->ndim, ts[i].ndim);
        for (int k = 0; k < t->ndim && k < ATTNRT_MAX_DIMS; k++)
            if (t->shape[k] < 0 || t->shape[k] > INT32_MAX)
                return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention plan: %s.shape[%d] = %lld "
                                   "is out of range [0, 2^31)", NPU_DEV_ARG(d), ts[i].name, k, (long long)t->shape[k]);
    }
    return ATTNRT_OK;
}

static const char *front_end_name(uint32_t fe) { return fe == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vLLM"; }

/* The query the runtime asked before planning, rebuilt from the args: plan refuses what op_supported does. */
static attnrt_status_t check_supported(const npu_device_t *d, const attnrt_attention_args_t *a)
{
    attnrt_status_t st = plugin_attention_supported(d->host.name, &npu_op_rules, &d->sel, a);
    if (st != ATTNRT_OK) return st;
    if (!a->causal && (a->sliding_window_left || a->sliding_window_right))
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " paged attention: sliding window (%d, %d) without causal: the "
                           "RBLN sliding-window kernel is causal with a left window only [P]", NPU_DEV_ARG(d),
                           a->sliding_window_left, a->sliding_window_right);
    return ATTNRT_OK;
}

attnrt_status_t npu_plan_select(const npu_device_t *d, const char *op, attnrt_attention_config_t *c, int64_t bt_cols,
                                char *kernel, size_t cap)
{
    c->struct_size = sizeof *c;
    c->front_end = d->sel.front_end;
    c->model_kind = d->sel.model_kind;
    attnrt_attention_selection_t sel;
    char msg[NPU_MSG_MAX];
    if (npu_select(&d->sel, c, &sel, msg, sizeof msg) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " %s (%s model path, max_model_len %lld = %lld "
                           "block-table columns x block_size %lld): %s", NPU_DEV_ARG(d), op,
                           front_end_name(c->front_end), (long long)c->max_model_len, (long long)bt_cols,
                           (long long)c->block_size, msg);
    snprintf(kernel, cap, "%s", sel.kernel);
    return ATTNRT_OK;
}

/* The kernel the selection rules give this batch's cache and block table. */
static attnrt_status_t select_kernel(const npu_device_t *d, const attnrt_attention_args_t *a, npu_attn_plan_t *p)
{
    attnrt_attention_config_t c = {
        .layer_kind = p->window ? ATTNRT_LAYER_SLIDING : ATTNRT_LAYER_FULL,
        .max_model_len = p->max_model_len, /* block == max_model_len: Naive; smaller: Flash, partition = block */
        .block_size = p->block_size,
        .sliding_window = p->window,
        .head_dim = (uint32_t)a->query->shape[2],
        .has_sinks = a->sinks != NULL,
        .kv_dtype = a->key_cache->dtype,
    };
    attnrt_status_t st = npu_plan_select(d, "paged attention", &c, p->bt_cols, p->kernel_name, sizeof p->kernel_name);
    if (st != ATTNRT_OK) return st;
    p->kernel = !strcmp(p->kernel_name, "naive") ? NPU_KERNEL_NAIVE
              : !strcmp(p->kernel_name, "sliding_window") ? NPU_KERNEL_SLIDING : NPU_KERNEL_FLASH;
    return ATTNRT_OK;
}

/* The op's simulated cost for the host batch. */
static attnrt_status_t cost_batch(const npu_device_t *d, const attnrt_attention_args_t *a,
                                  const attnrt_batch_host_t *batch, npu_attn_plan_t *p)
{
    npu_cost_shape_t sh;
    memset(&sh, 0, sizeof sh);
    sh.kernel = p->kernel;
    sh.num_q_heads = p->num_q_heads;
    sh.num_kv_heads = p->num_kv_heads;
    sh.head_dim_qk = p->head_dim_qk;
    sh.head_dim_v = p->head_dim_v;
    sh.q_bytes = (int64_t)dc_kind_size(dc_kind_of(a->query->dtype));
    sh.out_bytes = (int64_t)dc_kind_size(dc_kind_of(a->out->dtype));
    sh.kv_bytes = (int64_t)dc_kind_size(dc_kind_of(a->key_cache->dtype));
    sh.partition = p->kernel == NPU_KERNEL_NAIVE ? p->max_model_len : p->block_size;
    sh.window = p->window;

    npu_cost_begin(&p->stats, ATTNRT_OP_PAGED_ATTENTION);
    const int64_t B = batch->num_seqs > 0 ? batch->num_seqs : 0;
    int64_t *lo = malloc(sizeof(int64_t) * (size_t)(2 * B + 1));
    if (!lo) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, NPU_DEV_FMT " paged attention plan: out of host memory",
                                NPU_DEV_ARG(d));
    int64_t *hi = lo + B, decode = 0;
    const int64_t W = p->window;
    /* lengths clamped as the run clamps them: no more work costed than a run can do */
    for (int64_t b = 0; b < B; b++) { /* decode rows first: one bucketed launch group */
        const int64_t L = plugin_batch_query_len(batch, b, p->num_tokens), S = plugin_clamp64(batch->seq_lens[b], 0, p->max_model_len);
        if (L != 1) continue;
        lo[decode] = W && a->causal && S - W > 0 ? S - W : 0;
        hi[decode++] = S;
    }
    if (decode) npu_cost_decode(d->sel.profile, &sh, lo, hi, decode, &p->stats);
    free(lo);
    for (int64_t b = 0; b < B; b++) { /* then each prefill alone, chunk by chunk */
        const int64_t L = plugin_batch_query_len(batch, b, p->num_tokens), S = plugin_clamp64(batch->seq_lens[b], 0, p->max_model_len);
        if (L < 2) continue;
        for (int64_t pos = S - L; pos < S;) {
            const int64_t end = npu_chunk_end(pos, S, p->prefill_chunk, p->block_size);
            int64_t klo = 0, khi = a->causal ? end : S;
            if (W && a->causal && pos - W + 1 > 0) klo = pos - W + 1;
            if (khi < klo) khi = klo;
            npu_cost_prefill_chunk(d->sel.profile, &sh, end - pos, p->prefill_chunk, klo, khi, &p->stats);
            pos = end;
        }
    }
    return ATTNRT_OK;
}

attnrt_status_t npu_attention_plan(npu_device_t *d, const attnrt_attention_args_t *args_in,
                                   const attnrt_batch_host_t *batch_in, void **plan_out, size_t *workspace_bytes)
{
    attnrt_attention_args_t a;
    attnrt_batch_host_t batch;
    attnrt_status_t st = PLUGIN_PLAN_OPEN(d->host.name, "paged attention", a, args_in, batch, batch_in,
                                          PLUGIN_BATCH_AS_GIVEN, plan_out, workspace_bytes);
    if (st != ATTNRT_OK) return st;
    if (!a.query || !a.key_cache || !a.value_cache || !a.out || !a.block_table)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention plan: query, both caches, "
                           "block_table and out are required", NPU_DEV_ARG(d));
    if (batch.num_seqs > 0 && (!batch.query_start_loc || !batch.seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention plan: the host batch has no "
                           "query_start_loc or seq_lens", NPU_DEV_ARG(d));
    st = check_sizes(d, &a);
    if (st == ATTNRT_OK) st = check_supported(d, &a);
    if (st != ATTNRT_OK) return st;

    npu_attn_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, NPU_DEV_FMT " paged attention plan: out of host memory",
                               NPU_DEV_ARG(d));
    p->device = d;
    p->num_tokens = a.query->shape[0];
    p->num_q_heads = a.query->shape[1];
    p->head_dim_qk = a.query->shape[2];
    p->num_kv_heads = a.key_cache->shape[2];
    p->head_dim_v = a.value_cache->shape[3];
    p->num_seqs = batch.num_seqs > 0 ? batch.num_seqs : 0;
    p->block_size = a.key_cache->shape[1];
    p->bt_cols = a.block_table->ndim > 1 ? a.block_table->shape[1] : 0;
    p->max_model_len = p->bt_cols * p->block_size;
    p->prefill_chunk = d->sel.prefill_chunk;
    p->window = a.causal ? (int64_t)a.sliding_window_left : 0;
    if (p->max_model_len > 0) {
        st = select_kernel(d, &a, p);
    } else { /* no block-table column: every row is empty, nothing to select */
        p->kernel = NPU_KERNEL_FLASH;
        snprintf(p->kernel_name, sizeof p->kernel_name, "none");
    }
    if (st == ATTNRT_OK) st = cost_batch(d, &a, &batch, p);
    if (st == ATTNRT_OK && p->head_dim_qk > 0 && p->head_dim_v > 0 && !npu_online_floats(p->head_dim_qk, p->head_dim_v))
        st = plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " paged attention plan: head dims %lld / %lld: the "
                         "run's scratch would not fit in memory", NPU_DEV_ARG(d), (long long)p->head_dim_qk,
                         (long long)p->head_dim_v);
    if (st != ATTNRT_OK) {
        npu_attention_plan_destroy(p);
        return st;
    }
    *plan_out = p;
    *workspace_bytes = npu_attn_workspace_bytes(p);
    return ATTNRT_OK;
}

void npu_attention_plan_destroy(void *plan)
{
    free(plan);
}
