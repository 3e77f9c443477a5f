/* Paged attention: the plan (arguments and batch checked once, the plugin's plan, the workspace size) and
 * the run (the arguments checked against the plan, then dispatched). The checks themselves are in
 * attention_check.c; cascade.c makes its two passes with attnrt_plan_attention_pass; capacity plans
 * (capacity.c) are run here too. */
#include <string.h>

#include "plan.h"
#include "struct_in.h"
#include "tensor.h"

const plan_kind_t attnrt_kind_attention = {"attnrt_attention_plan", "attnrt_attention_run"};

attnrt_status_t attnrt_plan_attention_pass(const char *fn, attnrt_context_t *ctx, const attnrt_attention_args_t *a,
                                           const attnrt_batch_host_t *batch, plan_pass_t *pass)
{
    memset(pass, 0, sizeof *pass);
    if (!ctx->api->attention_plan || !ctx->api->attention_run || !ctx->api->attention_plan_destroy)
        return attnrt_plan_entry_missing(fn, ctx, "paged attention");
    attnrt_status_t st = ctx->api->attention_plan(ctx->device, a, batch, &pass->plugin_plan, &pass->plugin_workspace);
    return attnrt_plan_pass_result(fn, ctx, st, pass, ctx->api->attention_plan_destroy);
}

attnrt_status_t attnrt_attention_plan(attnrt_context_t *ctx, const attnrt_attention_args_t *args,
                                      const attnrt_batch_host_t *batch, attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_attention_plan";
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    attention_shape_t shape;
    attnrt_attention_args_t a;
    attnrt_batch_host_t b;
    attnrt_status_t st = attnrt_attention_args_in(fn, "args", args, &a);
    if (st == ATTNRT_OK) st = attnrt_attention_check_args(fn, &a, 0, &shape);
    if (st == ATTNRT_OK) st = attnrt_batch_host_in(fn, "batch", batch, &b);
    if (st == ATTNRT_OK)
        st = attnrt_attention_check_batch(fn, &shape, &b, a.causal, a.block_table, &attnrt_batch_names);
    if (st == ATTNRT_OK) st = attnrt_attention_check_spans(ctx, fn, &a);
    if (st != ATTNRT_OK) return st;
    attnrt_op_query_t query;
    attnrt_attention_query(&a, &shape, &query);
    st = attnrt_require_supported(fn, ctx, &query);
    if (st != ATTNRT_OK) return st;

    attnrt_plan_t *p = NULL;
    st = attnrt_plan_new(fn, ctx, &attnrt_kind_attention, &p);
    if (st != ATTNRT_OK) return st;
    st = attnrt_plan_attention_pass(fn, ctx, &a, &b, &p->pass[0]);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    attnrt_attention_signature(&a, &p->signature);
    p->workspace_bytes = p->pass[0].plugin_workspace;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_attention_run(attnrt_plan_t *plan, const attnrt_attention_args_t *args, void *workspace,
                                     size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_attention_run";
    attnrt_clear_error();
    /* Both kinds of paged-attention plan run here; a capacity plan only once it has a batch. */
    const int capacity = plan && plan->kind == &attnrt_kind_attention_capacity;
    TRY(attnrt_plan_check_kind(fn, plan, capacity ? &attnrt_kind_attention_capacity : &attnrt_kind_attention, stream));
    if (capacity) TRY(attnrt_capacity_check_run(fn, plan));
    attention_shape_t shape;
    plan_signature_t now;
    attnrt_attention_args_t a;
    TRY(attnrt_attention_args_in(fn, "args", args, &a));
    TRY(attnrt_attention_check_args(fn, &a, 1, &shape));
    attnrt_attention_signature(&a, &now);
    TRY(attnrt_plan_check_run(fn, plan, &now, workspace, workspace_bytes));
    attnrt_context_t *ctx = plan->ctx;
    TRY(attnrt_attention_check_spans(ctx, fn, &a));
    attnrt_status_t st = ctx->api->attention_run(ctx->device, plan->pass[0].plugin_plan, &a, workspace,
                                                 workspace_bytes, stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
