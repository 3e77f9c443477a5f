/* Attention plans: validate once per batch shape, let the plugin split the work, size the workspace;
 * runs then only check that they match the plan and dispatch. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

attnrt_status_t attnrt_plan_new(const char *fn, attnrt_context_t *ctx, int kind, attnrt_plan_t **plan)
{
    attnrt_plan_t *p = calloc(1, sizeof *p);
    if (!p) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    p->ctx = ctx;
    p->kind = kind;
    atomic_fetch_add(&ctx->live_plans, 1);
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_plan_pass(const char *fn, attnrt_context_t *ctx, const attnrt_attention_args_t *a,
                                 const attnrt_batch_host_t *batch, plan_pass_t *pass)
{
    memset(pass, 0, sizeof *pass);
    if (!ctx->api->attention_plan || !ctx->api->attention_run || !ctx->api->attention_plan_destroy)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: the %s plugin has no paged attention (its ABI is %u.%u)", fn,
                           ctx->ref->plugin->name, ctx->ref->plugin->abi_major, ctx->ref->plugin->abi_minor);
    attnrt_status_t st = ctx->api->attention_plan(ctx->device, a, batch, &pass->plugin_plan, &pass->plugin_workspace);
    if (st != ATTNRT_OK) {
        pass->plugin_plan = NULL;
        return attnrt_context_fail(ctx, st, fn);
    }
    attnrt_attention_signature(a, &pass->signature);
    return ATTNRT_OK;
}

void attnrt_plan_pass_release(attnrt_context_t *ctx, plan_pass_t *pass)
{
    if (pass->plugin_plan) ctx->api->attention_plan_destroy(ctx->device, pass->plugin_plan);
    pass->plugin_plan = NULL;
}

attnrt_status_t attnrt_plan_check_workspace(const char *fn, const attnrt_plan_t *plan, const void *workspace,
                                            size_t bytes)
{
    if (bytes < plan->workspace_bytes)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: workspace_bytes = %zu < %zu the plan needs "
                           "(attnrt_plan_workspace_size)", fn, bytes, plan->workspace_bytes);
    if (plan->workspace_bytes > 0 && !workspace)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: workspace is NULL but the plan needs %zu bytes", fn,
                           plan->workspace_bytes);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_attention_plan(attnrt_context_t *ctx, const attnrt_attention_args_t *args,
                                      const attnrt_batch_host_t *batch, attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_attention_plan";
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    attention_shape_t shape;
    attnrt_status_t st = attnrt_attention_check_args(fn, args, 0, &shape);
    if (st == ATTNRT_OK)
        st = attnrt_attention_check_batch(fn, &shape, batch, args->causal, args->block_table, &attnrt_batch_names);
    if (st != ATTNRT_OK) return st;
    attnrt_op_query_t query;
    attnrt_attention_query(args, &shape, &query);
    st = attnrt_require_supported(fn, ctx, &query);
    if (st != ATTNRT_OK) return st;

    attnrt_plan_t *p = NULL;
    st = attnrt_plan_new(fn, ctx, PLAN_ATTENTION, &p);
    if (st != ATTNRT_OK) return st;
    st = attnrt_plan_pass(fn, ctx, args, batch, &p->pass[0]);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    p->shape = shape;
    p->workspace_bytes = p->pass[0].plugin_workspace;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_plan_workspace_size(const attnrt_plan_t *plan, size_t *bytes)
{
    attnrt_clear_error();
    if (!plan || !bytes)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_plan_workspace_size: %s is NULL", plan ? "bytes" : "plan");
    *bytes = plan->workspace_bytes;
    return ATTNRT_OK;
}

void attnrt_plan_free(attnrt_plan_t *plan)
{
    if (!plan) return;
    for (int i = 0; i < 2; i++) attnrt_plan_pass_release(plan->ctx, &plan->pass[i]);
    atomic_fetch_sub(&plan->ctx->live_plans, 1);
    free(plan);
}

attnrt_status_t attnrt_plan_destroy(attnrt_plan_t *plan)
{
    attnrt_clear_error();
    attnrt_plan_free(plan);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_attention_run(attnrt_plan_t *plan, const attnrt_attention_args_t *args, void *workspace,
                                     size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_attention_run";
    attnrt_clear_error();
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    if (plan->kind != PLAN_ATTENTION)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan was made by attnrt_cascade_plan; use "
                           "attnrt_cascade_run", fn);
    attnrt_context_t *ctx = plan->ctx;
    if (stream && stream->ctx != ctx)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: stream belongs to another context", fn);
    attention_shape_t shape;
    attnrt_status_t st = attnrt_attention_check_args(fn, args, 1, &shape);
    if (st == ATTNRT_OK) st = attnrt_attention_check_signature(fn, &plan->pass[0].signature, args);
    if (st == ATTNRT_OK) st = attnrt_plan_check_workspace(fn, plan, workspace, workspace_bytes);
    if (st != ATTNRT_OK) return st;
    st = ctx->api->attention_run(ctx->device, plan->pass[0].plugin_plan, args, workspace, workspace_bytes,
                                 stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
