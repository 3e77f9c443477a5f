/* Plans: what attention_plan / cascade_plan decided, reused by every run of the same batch shape. */
#ifndef ATTNRT_PLAN_H
#define ATTNRT_PLAN_H

#include "attention.h"

enum plan_kind { PLAN_ATTENTION = 1, PLAN_CASCADE = 2 };

/* One plugin-side plan and the args layout it was made for. */
typedef struct plan_pass {
    void                 *plugin_plan;     /* plugin-owned; attention_plan_destroy frees it */
    size_t                plugin_workspace;
    attention_signature_t signature;
} plan_pass_t;

struct attnrt_plan {
    attnrt_context_t *ctx;
    int               kind;
    size_t            workspace_bytes;  /* what the caller must supply                    */
    plan_pass_t       pass[2];          /* attention: pass[0]; cascade: prefix, suffix    */
    /* cascade only: the suffix args layout the user planned, and where the partial states live */
    attention_signature_t user_signature;
    attnrt_tensor_t       prefix_block_table, prefix_seq_lens; /* layouts, data NULL */
    size_t                off_o[2], off_lse[2], off_plugin;
    attention_shape_t     shape;
};

/* Makes a plugin plan for `a` (already validated) into `pass`. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_pass(const char *fn, attnrt_context_t *ctx, const attnrt_attention_args_t *a,
                                               const attnrt_batch_host_t *batch, plan_pass_t *pass);
ATTNRT_HIDDEN void attnrt_plan_pass_release(attnrt_context_t *ctx, plan_pass_t *pass);
/* Allocates a plan object and counts it on the context. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_new(const char *fn, attnrt_context_t *ctx, int kind, attnrt_plan_t **plan);
/* Frees a plan without touching the thread's last error (for failure paths). */
ATTNRT_HIDDEN void attnrt_plan_free(attnrt_plan_t *plan);
/* Checks the workspace a run got against the plan. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_check_workspace(const char *fn, const attnrt_plan_t *plan,
                                                          const void *workspace, size_t bytes);

#endif /* ATTNRT_PLAN_H */
