/* The gated delta rule (GDN, ABI 1.2), with speculative decoding through per-token state slots: checks,
 * the capability question, plan and run. The shared checks are in linear_check.c. */
#include <math.h>
#include <string.h>

#include "linear.h"
#include "struct_in.h"
#include "tensor.h"

static const plan_kind_t kind_gated_delta = {"attnrt_gated_delta_plan", "attnrt_gated_delta_run"};

/* g and beta: [T, HV], f32 or the activation (query's) dtype. */
static attnrt_status_t check_gate(const char *fn, const char *name, const attnrt_tensor_t *t,
                                  const attnrt_tensor_t *query, const linear_shape_t *s, int need_data)
{
    TRY(attnrt_check_tensor(fn, name, t, 0, 2, DT_ACT, 0, need_data));
    if (!attnrt_dtype_equal(t->dtype, ATTNRT_F32) && !attnrt_dtype_equal(t->dtype, query->dtype))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s.dtype = %s; expected f32 or query's dtype (%s)", fn,
                           name, attnrt_dtype_name(t->dtype), attnrt_dtype_name(query->dtype));
    TRY(attnrt_check_dim(fn, name, t, 0, s->T, "num_tokens = query.shape[0]"));
    return attnrt_check_dim(fn, name, t, 1, s->HV, "num_v_heads = value.shape[1]");
}

/* Reads the caller's args into *a (struct_in.h), then checks them. */
static attnrt_status_t check_gdn_args(const char *fn, const attnrt_gated_delta_args_t *args, int need_data,
                                      attnrt_gated_delta_args_t *a, linear_shape_t *s)
{
    TRY(attnrt_gated_delta_args_in(fn, "args", args, a));
    const int spec = a->spec_state_indices != NULL;
    const linear_tensors_t lt = {a->query, a->key, a->value, a->out, a->state, a->query_start_loc, a->state_indices,
                                 a->has_initial_state, 1, spec, 1};
    TRY(attnrt_linear_check_tensors(fn, &lt, need_data, s));
    TRY(check_gate(fn, "g", a->g, a->query, s, need_data));
    TRY(check_gate(fn, "beta", a->beta, a->query, s, need_data));
    if (spec != (a->num_accepted != NULL))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL but %s is given; speculative decoding needs "
                           "both spec_state_indices and num_accepted", fn, spec ? "num_accepted" : "spec_state_indices",
                           spec ? "spec_state_indices" : "num_accepted");
    if (spec) {
        TRY(attnrt_check_tensor(fn, "spec_state_indices", a->spec_state_indices, 0, 2, DT_I32, 0, need_data));
        TRY(attnrt_check_tensor(fn, "num_accepted", a->num_accepted, 0, 1, DT_I32, 0, need_data));
        TRY(attnrt_check_dim(fn, "spec_state_indices", a->spec_state_indices, 0, s->B,
                             "num_seqs = query_start_loc.shape[0] - 1"));
        if (a->spec_state_indices->shape[1] < 1)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: spec_state_indices.shape[1] = 0; must be num_spec + 1 "
                               ">= 1", fn);
        TRY(attnrt_check_dim(fn, "num_accepted", a->num_accepted, 0, s->B, "num_seqs = query_start_loc.shape[0] - 1"));
        s->num_spec = a->spec_state_indices->shape[1] - 1;
    }
    if (!isfinite(a->scale) || a->scale < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: scale = %g; must be finite and >= 0 (0: 1/sqrt(head_dim_k))",
                           fn, (double)a->scale);
    if (a->use_l2norm != 0 && a->use_l2norm != 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: use_l2norm = %d; must be 0 or 1", fn, a->use_l2norm);
    return ATTNRT_OK;
}

static const char *const tensor_names[] = {"query", "key", "value", "g", "beta", "out", "state", "query_start_loc",
                                           "state_indices", "has_initial_state", "spec_state_indices",
                                           "num_accepted"};
static const char *const scalar_names[] = {"scale", "use_l2norm"};
static const signature_schema_t gdn_schema = {SIG_COUNT(tensor_names), SIG_COUNT(scalar_names), tensor_names,
                                              scalar_names, NULL};

#define GDN_TENSORS(a)                                                                                          \
    {(a)->query, (a)->key, (a)->value, (a)->g, (a)->beta, (a)->out, (a)->state, (a)->query_start_loc,               \
     (a)->state_indices, (a)->has_initial_state, (a)->spec_state_indices, (a)->num_accepted}

static attnrt_status_t gdn_check_spans(attnrt_context_t *ctx, const char *fn, const attnrt_gated_delta_args_t *a)
{
    const attnrt_tensor_t *tensors[] = GDN_TENSORS(a);
    return attnrt_check_spans(ctx, fn, tensors, tensor_names, SIG_COUNT(tensors));
}

static void gdn_signature(const attnrt_gated_delta_args_t *a, plan_signature_t *sig)
{
    const attnrt_tensor_t *tensors[] = GDN_TENSORS(a);
    const double scalars[] = {a->scale, a->use_l2norm};
    _Static_assert(SIG_COUNT(tensors) == SIG_COUNT(tensor_names), "gated delta: tensors and their names");
    _Static_assert(SIG_COUNT(scalars) == SIG_COUNT(scalar_names), "gated delta: options and their names");
    attnrt_signature_make(sig, &gdn_schema, tensors, scalars);
}

attnrt_status_t attnrt_gated_delta_plan(attnrt_context_t *ctx, const attnrt_gated_delta_args_t *args,
                                        const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                        const attnrt_state_pool_t *pool, attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_gated_delta_plan";
    attnrt_clear_error();
    if (!ctx || !pool || !plan)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !pool ? "pool" : "plan");
    linear_shape_t s;
    attnrt_gated_delta_args_t a;
    attnrt_batch_host_t b;
    attnrt_state_host_t h;
    TRY(check_gdn_args(fn, args, 0, &a, &s));
    TRY(attnrt_batch_host_in(fn, "batch", batch, &b));
    TRY(attnrt_state_host_in(fn, "states", states, &h));
    TRY(attnrt_linear_check_host(fn, ctx, &s, a.state, &b, &h, pool));
    TRY(gdn_check_spans(ctx, fn, &a));

    /* Validation first, so bad input is INVALID_ARGUMENT on every device; then what the device offers. */
    const attnrt_plugin_api_t *api = ctx->api;
    if (!api->gated_delta_plan || !api->gated_delta_run || !api->plan_destroy)
        return attnrt_plan_entry_missing(fn, ctx, "gated delta rule");
    attnrt_op_query_t query;
    memset(&query, 0, sizeof query);
    query.struct_size = sizeof query;
    query.op = ATTNRT_OP_GATED_DELTA;
    query.q_dtype = a.query->dtype;
    query.head_dim_qk = (uint32_t)s.Dk;
    query.head_dim_v = (uint32_t)s.Dv;
    query.num_q_heads = (uint32_t)s.H;
    query.num_kv_heads = (uint32_t)s.HV;
    TRY(attnrt_require_supported(fn, ctx, &query));

    attnrt_plan_t *p = NULL;
    TRY(attnrt_plan_new(fn, ctx, &kind_gated_delta, &p));
    plan_pass_t *pass = &p->pass[0];
    attnrt_status_t st = api->gated_delta_plan(ctx->device, &a, &b, &h, &pass->plugin_plan,
                                               &pass->plugin_workspace);
    st = attnrt_plan_pass_result(fn, ctx, st, pass, api->plan_destroy);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    gdn_signature(&a, &p->signature);
    p->workspace_bytes = pass->plugin_workspace;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_gated_delta_run(attnrt_plan_t *plan, const attnrt_gated_delta_args_t *args, void *workspace,
                                       size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_gated_delta_run";
    attnrt_clear_error();
    TRY(attnrt_plan_check_kind(fn, plan, &kind_gated_delta, stream));
    linear_shape_t s;
    plan_signature_t now;
    attnrt_gated_delta_args_t a;
    TRY(check_gdn_args(fn, args, 1, &a, &s));
    gdn_signature(&a, &now);
    TRY(attnrt_plan_check_run(fn, plan, &now, workspace, workspace_bytes));
    attnrt_context_t *ctx = plan->ctx;
    TRY(gdn_check_spans(ctx, fn, &a));
    attnrt_status_t st = ctx->api->gated_delta_run(ctx->device, plan->pass[0].plugin_plan, &a, workspace,
                                                   workspace_bytes, stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
