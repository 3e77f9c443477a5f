/* Multi-head latent attention (ABI 1.2), dense and sparse: every shape, dtype, stride, option and host
 * index is checked here, then the plugin plans; runs check that they match the plan and dispatch.
 * The host batch is paged attention's, checked by the same code with one KV head of kv_dim columns. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "struct_in.h"
#include "tensor.h"

static const plan_kind_t kind_mla = {"attnrt_mla_plan", "attnrt_mla_run"};

typedef struct mla_shape {
    attention_shape_t att; /* Hkv = 1, Dqk = kv_dim, Dv = v_dim */
    int64_t           topk; /* -1: dense */
} mla_shape_t;

/* Reads the caller's args into *a (struct_in.h), then checks them. */
static attnrt_status_t check_mla_args(const char *fn, const attnrt_mla_args_t *args, int need_data,
                                      attnrt_mla_args_t *a, mla_shape_t *ms)
{
    TRY(attnrt_mla_args_in(fn, "args", args, a));
    memset(ms, 0, sizeof *ms);
    attention_shape_t *s = &ms->att;
    const int nd = need_data;
    TRY(attnrt_check_tensor(fn, "query", a->query, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "kv_cache", a->kv_cache, 0, 4, DT_KV, 1, nd));
    TRY(attnrt_check_tensor(fn, "block_table", a->block_table, 0, 2, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "query_start_loc", a->query_start_loc, 0, 1, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "seq_lens", a->seq_lens, 0, 1, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "out", a->out, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "lse", a->lse, 1, 2, DT_F32, 0, nd));
    TRY(attnrt_check_tensor(fn, "sinks", a->sinks, 1, 1, DT_F32, 0, nd));
    TRY(attnrt_check_tensor(fn, "indices", a->indices, 1, 2, DT_I32, 0, nd));
    TRY(attnrt_check_no_overlap(fn, "out", a->out));
    TRY(attnrt_check_no_overlap(fn, "lse", a->lse));

    s->T = a->query->shape[0];
    s->Hq = a->query->shape[1];
    s->Dqk = a->query->shape[2];
    s->num_blocks = a->kv_cache->shape[0];
    s->block_size = a->kv_cache->shape[1];
    s->Hkv = 1;
    s->Dv = a->out->shape[2];
    s->B = a->seq_lens->shape[0];
    s->max_blocks = a->block_table->shape[1];
    ms->topk = a->indices ? a->indices->shape[1] : -1;

    if (s->Hq < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query.shape[1] (num_q_heads) = %lld; must be >= 1", fn,
                           (long long)s->Hq);
    if (s->Dqk < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query.shape[2] (kv_dim) = %lld; must be >= 1", fn,
                           (long long)s->Dqk);
    if (s->block_size < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: kv_cache.shape[1] (block_size) = %lld; must be >= 1", fn,
                           (long long)s->block_size);
    if (a->kv_cache->shape[2] != 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: kv_cache.shape[2] = %lld, expected 1: an MLA cache has "
                           "one latent head [num_blocks, block_size, 1, kv_dim]", fn, (long long)a->kv_cache->shape[2]);
    TRY(attnrt_check_rows(fn, "num_tokens (query.shape[0])", s->T, "num_q_heads (query.shape[1])", s->Hq));
    TRY(attnrt_check_rows(fn, "num_seqs (seq_lens.shape[0])", s->B, "num_q_heads (query.shape[1])", s->Hq));
    TRY(attnrt_check_dim(fn, "kv_cache", a->kv_cache, 3, s->Dqk, "kv_dim = query.shape[2]"));
    TRY(attnrt_check_dim(fn, "block_table", a->block_table, 0, s->B, "num_seqs = seq_lens.shape[0]"));
    TRY(attnrt_check_dim(fn, "query_start_loc", a->query_start_loc, 0, s->B + 1, "num_seqs + 1"));
    TRY(attnrt_check_dim(fn, "out", a->out, 0, s->T, "num_tokens = query.shape[0]"));
    TRY(attnrt_check_dim(fn, "out", a->out, 1, s->Hq, "num_q_heads = query.shape[1]"));
    if (s->Dv < 1 || s->Dv > s->Dqk)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: out.shape[2] (v_dim) = %lld; must be in [1, kv_dim = %lld] "
                           "(the value is the first v_dim columns of a latent row)", fn, (long long)s->Dv,
                           (long long)s->Dqk);
    if (!attnrt_dtype_equal(a->out->dtype, a->query->dtype) && !attnrt_dtype_equal(a->out->dtype, ATTNRT_F32))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: out.dtype = %s; expected query's dtype (%s) or f32", fn,
                           attnrt_dtype_name(a->out->dtype), attnrt_dtype_name(a->query->dtype));
    if (a->lse) {
        TRY(attnrt_check_dim(fn, "lse", a->lse, 0, s->T, "num_tokens = query.shape[0]"));
        TRY(attnrt_check_dim(fn, "lse", a->lse, 1, s->Hq, "num_q_heads = query.shape[1]"));
    }
    if (a->sinks) TRY(attnrt_check_dim(fn, "sinks", a->sinks, 0, s->Hq, "num_q_heads = query.shape[1]"));
    if (a->indices) TRY(attnrt_check_dim(fn, "indices", a->indices, 0, s->T, "num_tokens = query.shape[0]"));
    if (a->indices_host && !a->indices)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: indices_host is given but indices is NULL (dense MLA has "
                           "no indices)", fn);
    TRY(attnrt_check_kv_scale(fn, "kv_scale", a->kv_cache, a->kv_scale, nd, &s->per_block_scale));

    if (!isfinite(a->scale) || !(a->scale > 0))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: scale = %g; must be finite and > 0 (MLA takes the model's "
                           "softmax scale, e.g. 1/sqrt(192) * mscale)", fn, (double)a->scale);
    if (a->causal != 0 && a->causal != 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: causal = %d; must be 0 or 1", fn, a->causal);
    return ATTNRT_OK;
}

/* Every host index a sparse kernel would follow: -1 (unused) or a key position of the token's request. */
static attnrt_status_t check_indices_host(const char *fn, const attnrt_mla_args_t *a, const mla_shape_t *ms,
                                          const attnrt_batch_host_t *batch)
{
    const int32_t *idx = a->indices_host, *qsl = batch->query_start_loc;
    for (int64_t b = 0; b < ms->att.B; b++) {
        int32_t seq_len = batch->seq_lens[b];
        for (int64_t t = qsl[b]; t < qsl[b + 1]; t++)
            for (int64_t j = 0; j < ms->topk; j++) {
                int32_t v = idx[t * ms->topk + j];
                if (v < -1)
                    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: indices[%lld][%lld] = %d; must be -1 (unused) "
                                       "or a key position in [0, seq_lens[%lld] = %d)", fn, (long long)t, (long long)j,
                                       v, (long long)b, seq_len);
                if (v >= seq_len)
                    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: indices[%lld][%lld] = %d >= seq_lens[%lld] = "
                                       "%d", fn, (long long)t, (long long)j, v, (long long)b, seq_len);
            }
    }
    return ATTNRT_OK;
}

static void mla_query(const attnrt_mla_args_t *a, const mla_shape_t *ms, attnrt_op_query_t *q)
{
    const attention_shape_t *s = &ms->att;
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_MLA;
    q->q_dtype = a->query->dtype;
    q->kv_dtype = a->kv_cache->dtype;
    q->head_dim_qk = (uint32_t)s->Dqk;
    q->head_dim_v = (uint32_t)s->Dv;
    q->block_size = (uint32_t)s->block_size;
    q->num_q_heads = (uint32_t)s->Hq;
    q->num_kv_heads = 1;
    q->features = (a->indices ? ATTNRT_FEATURE_SPARSE : 0u) | (!a->indices && a->causal ? ATTNRT_FEATURE_CAUSAL : 0u) |
                  (a->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (a->lse ? ATTNRT_FEATURE_LSE : 0u) |
                  (s->per_block_scale ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u);
}

static const char *const tensor_names[] = {"query", "out", "kv_cache", "block_table", "query_start_loc",
                                           "seq_lens", "lse", "sinks", "kv_scale", "indices"};
static const char *const scalar_names[] = {"scale", "causal"};
static const signature_schema_t mla_schema = {SIG_COUNT(tensor_names), SIG_COUNT(scalar_names), tensor_names,
                                              scalar_names, NULL};

#define MLA_TENSORS(a)                                                                                          \
    {(a)->query, (a)->out, (a)->kv_cache, (a)->block_table, (a)->query_start_loc, (a)->seq_lens, (a)->lse,          \
     (a)->sinks, (a)->kv_scale, (a)->indices}

static void mla_signature(const attnrt_mla_args_t *a, plan_signature_t *sig)
{
    const attnrt_tensor_t *tensors[] = MLA_TENSORS(a);
    const double scalars[] = {a->scale, a->causal};
    _Static_assert(SIG_COUNT(tensors) == SIG_COUNT(tensor_names), "mla: tensors and their names");
    _Static_assert(SIG_COUNT(scalars) == SIG_COUNT(scalar_names), "mla: options and their names");
    attnrt_signature_make(sig, &mla_schema, tensors, scalars);
}

static attnrt_status_t mla_check_spans(attnrt_context_t *ctx, const char *fn, const attnrt_mla_args_t *a)
{
    const attnrt_tensor_t *tensors[] = MLA_TENSORS(a);
    return attnrt_check_spans(ctx, fn, tensors, tensor_names, SIG_COUNT(tensors));
}

attnrt_status_t attnrt_mla_plan(attnrt_context_t *ctx, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                                attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_mla_plan";
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    mla_shape_t ms;
    attnrt_mla_args_t a;
    attnrt_batch_host_t b;
    TRY(check_mla_args(fn, args, 0, &a, &ms));
    TRY(attnrt_batch_host_in(fn, "batch", batch, &b));
    /* Sparse indices are the whole mask: the causal rule on seq_len vs query length is dense-only. */
    TRY(attnrt_attention_check_batch(fn, &ms.att, &b, a.causal && !a.indices, a.block_table, &attnrt_batch_names));
    if (a.indices_host) TRY(check_indices_host(fn, &a, &ms, &b));
    TRY(mla_check_spans(ctx, fn, &a));

    /* Validation first, so bad input is INVALID_ARGUMENT on every device; then what the device offers. */
    const attnrt_plugin_api_t *api = ctx->api;
    if (!api->mla_plan || !api->mla_run || !api->plan_destroy) return attnrt_plan_entry_missing(fn, ctx, "MLA");
    attnrt_op_query_t query;
    mla_query(&a, &ms, &query);
    TRY(attnrt_require_supported(fn, ctx, &query));

    attnrt_plan_t *p = NULL;
    TRY(attnrt_plan_new(fn, ctx, &kind_mla, &p));
    plan_pass_t *pass = &p->pass[0];
    attnrt_status_t st = api->mla_plan(ctx->device, &a, &b, &pass->plugin_plan, &pass->plugin_workspace);
    st = attnrt_plan_pass_result(fn, ctx, st, pass, api->plan_destroy);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    mla_signature(&a, &p->signature);
    p->workspace_bytes = pass->plugin_workspace;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_mla_run(attnrt_plan_t *plan, const attnrt_mla_args_t *args, void *workspace,
                               size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_mla_run";
    attnrt_clear_error();
    TRY(attnrt_plan_check_kind(fn, plan, &kind_mla, stream));
    mla_shape_t ms;
    plan_signature_t now;
    attnrt_mla_args_t a;
    TRY(check_mla_args(fn, args, 1, &a, &ms));
    mla_signature(&a, &now);
    TRY(attnrt_plan_check_run(fn, plan, &now, workspace, workspace_bytes));
    attnrt_context_t *ctx = plan->ctx;
    TRY(mla_check_spans(ctx, fn, &a));
    attnrt_status_t st = ctx->api->mla_run(ctx->device, plan->pass[0].plugin_plan, &a, workspace, workspace_bytes,
                                           stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
