/* cpu_ops.h — the cpu plugin's ops, as the vtable in cpu_plugin.c calls them. Each takes the opened
 * device's thread pool; argument structs and tensors are borrowed for the call (plan: see below). */
#ifndef ATTNRT_CPU_OPS_H
#define ATTNRT_CPU_OPS_H

#include <stddef.h>

#include "attnrt_plugin.h"
#include "cpu_threads.h"

/* Capability answer for one query (cpu_caps.c). ATTNRT_OK, or ATTNRT_ERR_UNSUPPORTED with a reason
 * copied into `reason` (NUL-terminated, truncated to cap; may be NULL). Reads only the fields inside
 * query->struct_size. */
attnrt_status_t cpu_op_check(const attnrt_op_query_t *query, char *reason, size_t cap);

/* KV write (cpu_kv_write.c). */
attnrt_status_t cpu_kv_write(cpu_pool_t *pool, const attnrt_kv_write_args_t *args);

/* Paged attention (cpu_attention_plan.c, cpu_attention.c). The plan copies what it keeps from args and
 * batch (both borrowed for the call only) and is owned by the caller until cpu_attention_plan_destroy.
 * A plan belongs to the pool it was made with. */
attnrt_status_t cpu_attention_plan(cpu_pool_t *pool, const attnrt_attention_args_t *args,
                                   const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes);
void cpu_attention_plan_destroy(void *plan);
attnrt_status_t cpu_attention_run(cpu_pool_t *pool, const void *plan, const attnrt_attention_args_t *args);

/* Merge of partial states (cpu_merge.c). */
attnrt_status_t cpu_merge_states(cpu_pool_t *pool, const attnrt_merge_args_t *args);

#endif
