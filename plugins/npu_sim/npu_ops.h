/* npu_ops.h — the simulated NPU's ops as the vtable (npu_plugin.c) calls them. Argument structs and
 * tensors are borrowed for the call; the runtime has checked shapes, dtypes and host indices. */
#ifndef ATTNRT_NPU_OPS_H
#define ATTNRT_NPU_OPS_H

#include <stddef.h>

#include "attnrt_plugin.h"
#include "npu_device.h"
#include "plugin_caps.h"

/* Capability answer (npu_caps.c): the selection rules mapped onto a query that has no max_model_len,
 * one rule per op (ctx: the device's npu_select_ctx_t). ATTNRT_OK, or ATTNRT_ERR_UNSUPPORTED with the
 * vendor's reason in `reason` (may be NULL). */
extern const plugin_op_rules_t npu_op_rules;
attnrt_status_t npu_op_check(const npu_select_ctx_t *ctx, const attnrt_op_query_t *query, char *reason, size_t cap);

/* KV write (npu_kv_write.c). */
attnrt_status_t npu_kv_write(npu_device_t *d, const attnrt_kv_write_args_t *args);

/* Paged attention (npu_plan.c: kernel selection, schedule and cost; npu_attention.c: execution). The
 * plan is plugin-owned until npu_attention_plan_destroy and belongs to the device it was made on. */
attnrt_status_t npu_attention_plan(npu_device_t *d, const attnrt_attention_args_t *args,
                                   const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes);
void            npu_attention_plan_destroy(void *plan);
/* workspace: at least the plan's workspace_bytes of the device's (host) memory, the run's scratch. */
attnrt_status_t npu_attention_run(npu_device_t *d, const void *plan, const attnrt_attention_args_t *args,
                                  void *workspace, size_t workspace_bytes);

/* Merge of partial states (npu_merge.c). */
attnrt_status_t npu_merge_states(npu_device_t *d, const attnrt_merge_args_t *args);

#endif
