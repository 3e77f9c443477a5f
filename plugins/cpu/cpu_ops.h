/* cpu_ops.h — the cpu plugin's ops, as the vtable in cpu_plugin.c calls them. Each takes the opened
 * device's thread pool; argument structs and tensors are borrowed for the call (plan: see below). */
#ifndef ATTNRT_CPU_OPS_H
#define ATTNRT_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "cpu_threads.h"
#include "plugin_caps.h"

/* The capability rules (cpu_caps.c), one per op, and the answer they give for one query: ATTNRT_OK, or
 * ATTNRT_ERR_UNSUPPORTED with a reason copied into `reason` (NUL-terminated, truncated to cap; may be
 * NULL). Reads only the fields inside query->struct_size. */
extern const plugin_op_rules_t cpu_op_rules;
attnrt_status_t cpu_op_check(const attnrt_op_query_t *query, char *reason, size_t cap);

/* KV write (cpu_kv_write.c). */
attnrt_status_t cpu_kv_write(cpu_pool_t *pool, const attnrt_kv_write_args_t *args);

/* Paged attention (cpu_attention_plan.c, cpu_attention.c). The plan copies what it keeps from args and
 * batch (both borrowed for the call only) and is owned by the caller until cpu_attention_plan_destroy.
 * A plan belongs to the pool it was made with. */
attnrt_status_t cpu_attention_plan(cpu_pool_t *pool, const attnrt_attention_args_t *args,
                                   const attnrt_batch_host_t *batch, void **plan, size_t *workspace_bytes);
void cpu_attention_plan_destroy(void *plan);
/* workspace: the caller's, >= the plan's workspace_bytes (host memory of this device; NULL when 0). */
attnrt_status_t cpu_attention_run(cpu_pool_t *pool, const void *plan, const attnrt_attention_args_t *args,
                                  void *workspace, size_t workspace_bytes);

/* Capacity plans (cpu_attention_capacity.c): a plan for every batch within `capacity` (resolved by the
 * runtime), whose workspace covers them all; freed by cpu_attention_plan_destroy, run by
 * cpu_attention_run with args of the capacity shapes. It computes nothing until an update gives it a
 * batch; an update rebuilds its work items (no allocation) and must not race with its runs. */
attnrt_status_t cpu_attention_plan_capacity(cpu_pool_t *pool, const attnrt_attention_args_t *args,
                                            const attnrt_capacity_t *capacity, void **plan, size_t *workspace_bytes);
attnrt_status_t cpu_attention_plan_update(cpu_pool_t *pool, void *plan, const attnrt_batch_host_t *batch);

/* Merge of partial states (cpu_merge.c). */
attnrt_status_t cpu_merge_states(cpu_pool_t *pool, const attnrt_merge_args_t *args);

/* --- ABI 1.2 ops. Every plan they make starts with a cpu_plan_head_t, so the single plan_destroy entry
 * can tell which kind it frees (and a run refuses a plan of another kind). --------------------------- */
#define CPU_PLAN_MAGIC 0x41504c31u /* "1LPA": marks a live 1.2 plan */

typedef enum cpu_plan_kind {
    CPU_PLAN_MLA = 1,
    CPU_PLAN_LIGHTNING = 2,
    CPU_PLAN_GATED_DELTA = 3,
} cpu_plan_kind_t;

typedef struct cpu_plan_head {
    uint32_t magic; /* CPU_PLAN_MAGIC while the plan lives; cleared when it is freed */
    uint32_t kind;  /* cpu_plan_kind_t                                               */
} cpu_plan_head_t;

/* MLA dense / sparse (cpu_mla.c). Plans as for attention: copy what they keep; owned by the caller
 * until cpu_mla_plan_destroy; belong to the pool they were made with. */
attnrt_status_t cpu_mla_plan(cpu_pool_t *pool, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                             void **plan, size_t *workspace_bytes);
void cpu_mla_plan_destroy(void *plan);
attnrt_status_t cpu_mla_run(cpu_pool_t *pool, const void *plan, const attnrt_mla_args_t *args);

/* Lightning attention (cpu_lightning.c) and the gated delta rule (cpu_gated_delta.c): plans of
 * cpu_linear.h, freed by cpu_linear_plan_free. `states` may be NULL (the kernel reads the device tensors). */
attnrt_status_t cpu_lightning_plan(cpu_pool_t *pool, const attnrt_lightning_args_t *args,
                                   const attnrt_batch_host_t *batch, const attnrt_state_host_t *states, void **plan,
                                   size_t *workspace_bytes);
attnrt_status_t cpu_lightning_run(cpu_pool_t *pool, const void *plan, const attnrt_lightning_args_t *args);
attnrt_status_t cpu_gated_delta_plan(cpu_pool_t *pool, const attnrt_gated_delta_args_t *args,
                                     const attnrt_batch_host_t *batch, const attnrt_state_host_t *states, void **plan,
                                     size_t *workspace_bytes);
attnrt_status_t cpu_gated_delta_run(cpu_pool_t *pool, const void *plan, const attnrt_gated_delta_args_t *args);

#endif
