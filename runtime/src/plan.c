/* Plans: validate once per batch shape, let the plugin split the work, size the workspace; runs then
 * only check that they match the plan and dispatch. The object and the checks every kind of plan shares;
 * each op's plan and run live in the op's file (attention.c, cascade.c, mla.c, lightning.c, gated_delta.c). */
#include <stdlib.h>

#include "plan.h"
#include "tensor.h"

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
