/* npu_plan.h — what attention_plan leaves for attention_run: the kernel the rules chose for the batch's
 * block table, the shapes the plan was made for and the op's simulated cost. Read-only once made: runs
 * of one plan may race on distinct streams. Internal to the plugin; plugin-owned, freed by
 * npu_attention_plan_destroy. */
#ifndef ATTNRT_NPU_PLAN_H
#define ATTNRT_NPU_PLAN_H

#include <stdint.h>

#include "npu_cost.h"
#include "npu_device.h"
#include "npu_online.h"

typedef struct npu_attn_plan {
    const npu_device_t *device;
    npu_kernel_t kernel;
    char         kernel_name[32];
    int64_t      max_model_len;  /* block table columns x block_size                               */
    int64_t      block_size;     /* = the flash partition; the naive block is all of max_model_len */
    int64_t      bt_cols;        /* partitions (blocks) per request                                */
    int64_t      prefill_chunk;
    int64_t      window;         /* sliding: window_left + 1 keys per row; 0: none                  */
    /* the shapes the plan was made for; a run with others is refused */
    int64_t num_tokens, num_seqs, num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    attnrt_op_stats_t stats;     /* the op's cost, recorded by every run                            */
} npu_attn_plan_t;

/* The kernel the selection rules give config c, a plan's derived configuration (its front end and model
 * kind are set here, the context's); its name goes to kernel. A refusal names the op ("mla") and the
 * configuration: max_model_len = bt_cols block-table columns x block_size. */
attnrt_status_t npu_plan_select(const npu_device_t *d, const char *op, attnrt_attention_config_t *c, int64_t bt_cols,
                                char *kernel, size_t cap);

/* The workspace a run of plan p needs: its scratch, plus room to align it (0 when a run computes nothing). */
size_t npu_attn_workspace_bytes(const npu_attn_plan_t *p);

/* End (exclusive) of the prefill chunk that starts at position p of a request whose queries end at
 * `end`: at most `chunk` tokens, and never across a partition (block) boundary [S]. */
static inline int64_t npu_chunk_end(int64_t p, int64_t end, int64_t chunk, int64_t block)
{
    int64_t e = p + chunk < end ? p + chunk : end;
    if (p >= 0 && block > 0) {
        const int64_t boundary = (p / block + 1) * block;
        if (boundary < e) e = boundary;
    }
    return e;
}

#endif
