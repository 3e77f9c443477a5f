/* Plans: validate once per batch shape, let the plugin split the work, size the workspace; runs then
 * only check that they match the plan and dispatch. The object and its helpers serve every kind of
 * plan; paged attention's plan and run live here too. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "tensor.h"

const plan_kind_t attnrt_plan_kind_attention = {"attnrt_attention_plan", "attnrt_attention_run"};
const plan_kind_t attnrt_plan_kind_cascade = {"attnrt_cascade_plan", "attnrt_cascade_run"};

attnrt_status_t attnrt_plan_new(const char *fn, attnrt_context_t *ctx, const plan_kind_t *kind, attnrt_plan_t **plan)
{
    attnrt_plan_t *p = calloc(1, sizeof *p);
    if (!p) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    p->ctx = ctx;
    p->kind = kind;
    atomic_fetch_add(&ctx->live_plans, 1);
    *plan = p;
    return ATTNRT_OK;
}

void attnrt_plan_free(attnrt_plan_t *plan)
{
    if (!plan) return;
    for (int i = 0; i < 2; i++) {
        plan_pass_t *pass = &plan->pass[i];
        if (pass->plugin_plan && pass->destroy) pass->destroy(plan->ctx->device, pass->plugin_plan);
        pass->plugin_plan = NULL;
    }
    atomic_fetch_sub(&plan->ctx->live_plans, 1);
    free(plan);
}

attnrt_status_t attnrt_plan_pass_result(const char *fn, attnrt_context_t *ctx, attnrt_status_t status,
                                        plan_pass_t *pass, plugin_plan_destroy_fn destroy)
{
    if (status != ATTNRT_OK) {
        pass->plugin_plan = NULL; /* a failed call owns nothing we could free */
        pass->plugin_workspace = 0;
        return attnrt_context_fail(ctx, status, fn);
    }
    pass->destroy = destroy;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_plan_entry_missing(const char *fn, const attnrt_context_t *ctx, const char *what)
{
    const attnrt_plugin_t *p = ctx->ref->plugin;
    return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: the %s plugin has no %s (its ABI is %u.%u)", fn, p->name, what,
                       p->abi_major, p->abi_minor);
}

attnrt_status_t attnrt_plan_attention_pass(const char *fn, attnrt_context_t *ctx, const attnrt_attention_args_t *a,
                                           const attnrt_batch_host_t *batch, plan_pass_t *pass)
{
    memset(pass, 0, sizeof *pass);
    if (!ctx->api->attention_plan || !ctx->api->attention_run || !ctx->api->attention_plan_destroy)
        return attnrt_plan_entry_missing(fn, ctx, "paged attention");
    attnrt_status_t st = ctx->api->attention_plan(ctx->device, a, batch, &pass->plugin_plan, &pass->plugin_workspace);
    return attnrt_plan_pass_result(fn, ctx, st, pass, ctx->api->attention_plan_destroy);
}

attnrt_status_t attnrt_check_stream_context(const char *fn, const attnrt_stream_t *stream, const attnrt_context_t *ctx,
                                            const char *owner)
{
    if (!stream || stream->ctx == ctx) return ATTNRT_OK;
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: stream belongs to another context (%s at %p) than %s (%s at "
                       "%p)", fn, stream->ctx->ref->name, (const void *)stream->ctx, owner, ctx->ref->name,
                       (const void *)ctx);
}

attnrt_status_t attnrt_plan_check_kind(const char *fn, const attnrt_plan_t *plan, const plan_kind_t *kind,
                                       const attnrt_stream_t *stream)
{
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    if (plan->kind != kind)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan was made by %s; use %s", fn, plan->kind->planner,
                           plan->kind->runner);
    return attnrt_check_stream_context(fn, stream, plan->ctx, "the plan's");
}

attnrt_status_t attnrt_plan_check_run(const char *fn, const attnrt_plan_t *plan, const plan_signature_t *now,
                                      const void *workspace, size_t bytes)
{
    TRY(attnrt_signature_check(fn, &plan->signature, now));
    return attnrt_plan_check_workspace(fn, plan, workspace, bytes);
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
    /* The bytes the plan uses must lie inside the workspace's allocation, when it is one of ours. */
    return attnrt_context_check_span(plan->ctx, fn, "workspace", workspace, plan->workspace_bytes);
}

attnrt_status_t attnrt_plan_workspace_size(const attnrt_plan_t *plan, size_t *bytes)
{
    attnrt_clear_error();
    if (!plan || !bytes)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_plan_workspace_size: %s is NULL", plan ? "bytes" : "plan");
    *bytes = plan->workspace_bytes;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_plan_destroy(attnrt_plan_t *plan)
{
    attnrt_clear_error();
    attnrt_plan_free(plan);
    return ATTNRT_OK;
}

/* ---- paged attention ---- */

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
    if (st == ATTNRT_OK) st = attnrt_attention_check_spans(ctx, fn, args);
    if (st != ATTNRT_OK) return st;
    attnrt_op_query_t query;
    attnrt_attention_query(args, &shape, &query);
    st = attnrt_require_supported(fn, ctx, &query);
    if (st != ATTNRT_OK) return st;

    attnrt_plan_t *p = NULL;
    st = attnrt_plan_new(fn, ctx, &attnrt_plan_kind_attention, &p);
    if (st != ATTNRT_OK) return st;
    st = attnrt_plan_attention_pass(fn, ctx, args, batch, &p->pass[0]);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    attnrt_attention_signature(args, &p->signature);
    p->workspace_bytes = p->pass[0].plugin_workspace;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_attention_run(attnrt_plan_t *plan, const attnrt_attention_args_t *args, void *workspace,
                                     size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_attention_run";
    attnrt_clear_error();
    TRY(attnrt_plan_check_kind(fn, plan, &attnrt_plan_kind_attention, stream));
    attention_shape_t shape;
    plan_signature_t now;
    TRY(attnrt_attention_check_args(fn, args, 1, &shape));
    attnrt_attention_signature(args, &now);
    TRY(attnrt_plan_check_run(fn, plan, &now, workspace, workspace_bytes));
    attnrt_context_t *ctx = plan->ctx;
    TRY(attnrt_attention_check_spans(ctx, fn, args));
    attnrt_status_t st = ctx->api->attention_run(ctx->device, plan->pass[0].plugin_plan, args, workspace,
                                                 workspace_bytes, stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
