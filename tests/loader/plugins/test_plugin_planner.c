/* The planner variant's op entries (see test_plugin_planner.h). A plan is only its workspace size; a run
 * does no math but uses its workspace as a device would: it writes all the planned bytes, so a run the
 * runtime lets through with too small a workspace writes past what the caller said it has. */
#include <stdlib.h>
#include <string.h>

#include "plugin_error.h"
#include "test_plugin_planner.h"

enum { PLAN_MAGIC = 0x7e57914e };

typedef struct tp_plan {
    uint32_t magic;
    size_t   workspace;
} tp_plan_t;

static attnrt_status_t plan_new(void **plan, size_t *workspace_bytes)
{
    tp_plan_t *p = calloc(1, sizeof *p);
    if (!p) return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "tp-planner: out of memory for a plan");
    p->magic = PLAN_MAGIC;
    p->workspace = TP_PLANNER_WORKSPACE;
    *plan = p;
    *workspace_bytes = p->workspace;
    return ATTNRT_OK;
}

static void plan_free(void *device, void *plan)
{
    (void)device;
    tp_plan_t *p = plan;
    if (p) p->magic = 0;
    free(p);
}

static attnrt_status_t plan_run(const void *plan, void *workspace, size_t workspace_bytes)
{
    const tp_plan_t *p = plan;
    if (!p || p->magic != PLAN_MAGIC)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "tp-planner: run given something that is not its plan");
    if (workspace) memset(workspace, 0x77, p->workspace);
    return ATTNRT_OK;
}

static attnrt_status_t supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    (void)device;
    (void)query;
    if (reason && cap) reason[0] = '\0';
    return ATTNRT_OK;
}

static attnrt_status_t attention_plan(void *device, const attnrt_attention_args_t *args,
                                      const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes)
{
    (void)device;
    (void)args;
    (void)batch;
    return plan_new(plan, workspace_bytes);
}

static attnrt_status_t attention_run(void *device, const void *plan, const attnrt_attention_args_t *args,
                                     void *workspace, size_t workspace_bytes, void *stream)
{
    (void)device;
    (void)args;
    (void)stream;
    return plan_run(plan, workspace, workspace_bytes);
}

static attnrt_status_t mla_plan(void *device, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                                void **plan, size_t *workspace_bytes)
{
    (void)device;
    (void)args;
    (void)batch;
    return plan_new(plan, workspace_bytes);
}

static attnrt_status_t mla_run(void *device, const void *plan, const attnrt_mla_args_t *args, void *workspace,
                               size_t workspace_bytes, void *stream)
{
    (void)device;
    (void)args;
    (void)stream;
    return plan_run(plan, workspace, workspace_bytes);
}

static attnrt_status_t lightning_plan(void *device, const attnrt_lightning_args_t *args,
                                      const attnrt_batch_host_t *batch, const attnrt_state_host_t *states, void **plan,
                                      size_t *workspace_bytes)
{
    (void)device;
    (void)args;
    (void)batch;
    (void)states;
    return plan_new(plan, workspace_bytes);
}

static attnrt_status_t lightning_run(void *device, const void *plan, const attnrt_lightning_args_t *args,
                                     void *workspace, size_t workspace_bytes, void *stream)
{
    (void)device;
    (void)args;
    (void)stream;
    return plan_run(plan, workspace, workspace_bytes);
}

static attnrt_status_t gated_delta_plan(void *device, const attnrt_gated_delta_args_t *args,
                                        const attnrt_batch_host_t *batch, const attnrt_state_host_t *states,
                                        void **plan, size_t *workspace_bytes)
{
    (void)device;
    (void)args;
    (void)batch;
    (void)states;
    return plan_new(plan, workspace_bytes);
}

static attnrt_status_t gated_delta_run(void *device, const void *plan, const attnrt_gated_delta_args_t *args,
                                       void *workspace, size_t workspace_bytes, void *stream)
{
    (void)device;
    (void)args;
    (void)stream;
    return plan_run(plan, workspace, workspace_bytes);
}

const attnrt_plugin_api_t *tp_planner_api(const attnrt_plugin_api_t *base)
{
    static attnrt_plugin_api_t api; /* filled on each call with the same values: a racy repeat is harmless */
    api = *base;
    api.op_supported = supported;
    api.attention_plan = attention_plan;
    api.attention_plan_destroy = plan_free;
    api.attention_run = attention_run;
    api.mla_plan = mla_plan;
    api.mla_run = mla_run;
    api.lightning_plan = lightning_plan;
    api.lightning_run = lightning_run;
    api.gated_delta_plan = gated_delta_plan;
    api.gated_delta_run = gated_delta_run;
    api.plan_destroy = plan_free;
    return &api;
}
