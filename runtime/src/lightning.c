/* Lightning (linear) attention with per-head decay and per-request state slots (ABI 1.2): checks,
 * the capability question, plan and run. The shared checks are in linear_check.c. */
#include <string.h>

#include "linear.h"
#include "struct_in.h"
#include "tensor.h"

static const plan_kind_t kind_lightning = {"attnrt_lightning_plan", "attnrt_lightning_run"};

/* Reads the caller's args into *a (struct_in.h), then checks them. */
static attnrt_status_t check_lightning_args(const char *fn, const attnrt_lightning_args_t *args, int need_data,
                                            attnrt_lightning_args_t *a, linear_shape_t *s)
{
    TRY(attnrt_lightning_args_in(fn, "args", args, a));
    const linear_tensors_t lt = {a->query, a->key, a->value, a->out, a->state, a->query_start_loc, a->state_indices,
                                 a->has_initial_state, 0, 0, 0};
    TRY(attnrt_linear_check_tensors(fn, &lt, need_data, s));
    TRY(attnrt_check_tensor(fn, "slopes", a->slopes, 0, 1, DT_F32, 0, need_data));
    return attnrt_check_dim(fn, "slopes", a->slopes, 0, s->H, "num_heads = query.shape[1]");
}

static const char *const tensor_names[] = {"query", "key", "value", "out", "slopes", "state", "query_start_loc",
                                           "state_indices", "has_initial_state"};
static const signature_schema_t lightning_schema = {SIG_COUNT(tensor_names), 0, tensor_names, NULL, NULL};

#define LIGHTNING_TENSORS(a)                                                                                    \
    {(a)->query, (a)->key, (a)->value, (a)->out, (a)->slopes, (a)->state, (a)->query_start_loc, (a)->state_indices, \
     (a)->has_initial_state}

static void lightning_signature(const attnrt_lightning_args_t *a, plan_signature_t *sig)
{
    const attnrt_tensor_t *tensors[] = LIGHTNING_TENSORS(a);
    _Static_assert(SIG_COUNT(tensors) == SIG_COUNT(tensor_names), "lightning: tensors and their names");
    attnrt_signature_make(sig, &lightning_schema, tensors, NULL);
}

static attnrt_status_t lightning_check_spans(attnrt_context_t *ctx, const char *fn, const attnrt_lightning_args_t *a)
{
    const attnrt_tensor_t *tensors[] = LIGHTNING_TENSORS(a);
    return attnrt_check_spans(ctx, fn, tensors, tensor_names, SIG_COUNT(tensors));
}

attnrt_status_t attnrt_lightning_plan(attnrt_context_t *ctx, const attnrt_lightning_args_t *args,
                                      const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                      const attnrt_state_pool_t *pool, attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_lightning_plan";
    attnrt_clear_error();
    if (!ctx || !pool || !plan)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : !pool ? "pool" : "plan");
    linear_shape_t s;
    attnrt_lightning_args_t a;
    attnrt_batch_host_t b;
    attnrt_state_host_t h;
    TRY(check_lightning_args(fn, args, 0, &a, &s));
    TRY(attnrt_batch_host_in(fn, "batch", batch, &b));
    TRY(attnrt_state_host_in(fn, "states", states, &h));
    TRY(attnrt_linear_check_host(fn, ctx, &s, a.state, &b, &h, pool));
    TRY(lightning_check_spans(ctx, fn, &a));

    /* Validation first, so bad input is INVALID_ARGUMENT on every device; then what the device offers. */
    const attnrt_plugin_api_t *api = ctx->api;
    if (!api->lightning_plan || !api->lightning_run || !api->plan_destroy)
        return attnrt_plan_entry_missing(fn, ctx, "lightning attention");
    attnrt_op_query_t query;
    memset(&query, 0, sizeof query);
    query.struct_size = sizeof query;
    query.op = ATTNRT_OP_LIGHTNING;
    query.q_dtype = a.query->dtype;
    query.head_dim_qk = (uint32_t)s.Dk;
    query.head_dim_v = (uint32_t)s.Dv;
    query.num_q_heads = (uint32_t)s.H;
    TRY(attnrt_require_supported(fn, ctx, &query));

    attnrt_plan_t *p = NULL;
    TRY(attnrt_plan_new(fn, ctx, &kind_lightning, &p));
    plan_pass_t *pass = &p->pass[0];
    attnrt_status_t st = api->lightning_plan(ctx->device, &a, &b, &h, &pass->plugin_plan, &pass->plugin_workspace);
    st = attnrt_plan_pass_result(fn, ctx, st, pass, api->plan_destroy);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    lightning_signature(&a, &p->signature);
    p->workspace_bytes = pass->plugin_workspace;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_lightning_run(attnrt_plan_t *plan, const attnrt_lightning_args_t *args, void *workspace,
                                     size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_lightning_run";
    attnrt_clear_error();
    TRY(attnrt_plan_check_kind(fn, plan, &kind_lightning, stream));
    linear_shape_t s;
    plan_signature_t now;
    attnrt_lightning_args_t a;
    TRY(check_lightning_args(fn, args, 1, &a, &s));
    lightning_signature(&a, &now);
    TRY(attnrt_plan_check_run(fn, plan, &now, workspace, workspace_bytes));
    attnrt_context_t *ctx = plan->ctx;
    TRY(lightning_check_spans(ctx, fn, &a));
    attnrt_status_t st = ctx->api->lightning_run(ctx->device, plan->pass[0].plugin_plan, &a, workspace,
                                                 workspace_bytes, stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
