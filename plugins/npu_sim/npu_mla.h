/* npu_mla.h — multi-head latent attention on the simulated NPU, dense and sparse, through the same
 * rules, partitioned execution and cost model as paged attention: the kernel comes from the selection
 * rules on the configuration the block table implies (an MLA layer), the run walks each request's
 * partitions (partition = block) merging partial softmax states, and the plan is costed with one latent
 * row per token. The vtable entries mla_plan / mla_run / plan_destroy. */
#ifndef ATTNRT_NPU_MLA_H
#define ATTNRT_NPU_MLA_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "npu_cost.h"
#include "npu_device.h"

/* What mla_plan leaves for mla_run; read-only once made (runs of one plan may race). */
typedef struct npu_mla_plan {
    const npu_device_t *device;
    char    kernel_name[32];
    int     sparse;
    int64_t max_model_len, block_size, bt_cols, prefill_chunk;
    /* the shapes the plan was made for; a run with others is refused */
    int64_t num_tokens, num_seqs, num_q_heads, kv_dim, v_dim, topk;
    attnrt_op_stats_t stats; /* the op's cost, recorded by every run */
} npu_mla_plan_t;

/* The capability answer for ATTNRT_OP_MLA (npu_op_rules' MLA rule; ctx: the device's npu_select_ctx_t):
 * the block-size rules of the context's front end, one latent KV head, FP8 caches with the sparse
 * feature only, one scale per tensor, no LSE output. */
attnrt_status_t npu_mla_check(const void *ctx, const attnrt_op_query_t *query, char *reason, size_t cap);

/* Scratch bytes a run of plan p needs (0 when a run computes nothing). */
size_t npu_mla_workspace_bytes(const npu_mla_plan_t *p);

attnrt_status_t npu_mla_plan(void *device, const attnrt_mla_args_t *args, const attnrt_batch_host_t *batch,
                             void **plan, size_t *workspace_bytes);
attnrt_status_t npu_mla_run(void *device, const void *plan, const attnrt_mla_args_t *args, void *workspace,
                            size_t workspace_bytes, void *stream);
/* Frees a plan of mla_plan (npu_sim makes no other plan_destroy plans). */
void            npu_mla_plan_destroy(void *device, void *plan);

#endif
