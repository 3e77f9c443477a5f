/* Plans of every kind (attention, cascade, MLA, lightning, gated delta): what a *_plan call decided,
 * reused by every run of the same batch shape. One object, one set of helpers:
 *   - a kind (static): which function makes it and which runs it, for "use X" messages;
 *   - the signature every run must match (signature.h);
 *   - up to two plugin plans ("passes"), each with the vtable entry that frees it;
 *   - the workspace the caller supplies, and a small part only a kind needs (cascade's offsets). */
#ifndef ATTNRT_PLAN_H
#define ATTNRT_PLAN_H

#include "attention.h"

/* One kind of plan; static, one per op. Runs compare the plan's kind pointer with their own. */
typedef struct plan_kind {
    const char *planner; /* "attnrt_mla_plan" */
    const char *runner;  /* "attnrt_mla_run"  */
} plan_kind_t;

typedef void (*plugin_plan_destroy_fn)(void *device, void *plan);

/* One plugin-side plan. */
typedef struct plan_pass {
    void                  *plugin_plan;      /* plugin-owned; `destroy` frees it (NULL: nothing to free) */
    size_t                 plugin_workspace; /* bytes the plugin's run needs                             */
    plugin_plan_destroy_fn destroy;          /* attention_plan_destroy or the 1.2 plan_destroy           */
} plan_pass_t;

struct attnrt_plan {
    attnrt_context_t  *ctx;
    const plan_kind_t *kind;
    size_t             workspace_bytes; /* what the caller must supply                          */
    plan_signature_t   signature;       /* the user's args layout and options every run matches  */
    plan_pass_t        pass[2];         /* pass[0]; cascade: prefix, suffix                       */
    struct {                            /* cascade only                                           */
        attnrt_tensor_t   prefix_block_table, prefix_seq_lens; /* layouts, data NULL             */
        size_t            off_o[2], off_lse[2], off_plugin;   /* partial states in the workspace */
    } cascade;
    struct {                            /* capacity plans only (capacity.c)                       */
        attnrt_capacity_t bounds;       /* resolved: every field the bound itself, no zero default */
        attention_shape_t shape;        /* of the capacity-shaped args                            */
        attnrt_tensor_t   block_table;  /* its layout (data NULL): host tables must share its stride */
        int               causal;
        atomic_int        has_batch;    /* 1 after a successful update; runs refused before       */
    } capacity;
};

/* The kinds of paged-attention plans: per batch (attention.c) and for a capacity (capacity.c); both
 * are run by attnrt_attention_run. */
ATTNRT_HIDDEN extern const plan_kind_t attnrt_kind_attention, attnrt_kind_attention_capacity;

/* Allocates a plan object of `kind` and counts it on the context. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_new(const char *fn, attnrt_context_t *ctx, const plan_kind_t *kind,
                                              attnrt_plan_t **plan);
/* Frees a plan and its plugin plans without touching the thread's last error (for failure paths). */
ATTNRT_HIDDEN void attnrt_plan_free(attnrt_plan_t *plan);
/* Records the status of a plugin's *_plan call into `pass`: on success the entry that frees it, on
 * failure no plan and the plugin's message ("<fn>: <message>"). Returns `status`. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_pass_result(const char *fn, attnrt_context_t *ctx, attnrt_status_t status,
                                                      plan_pass_t *pass, plugin_plan_destroy_fn destroy);
/* Makes a plugin attention plan for `a` (already validated) into `pass` (attention.c). */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_attention_pass(const char *fn, attnrt_context_t *ctx,
                                                         const attnrt_attention_args_t *a,
                                                         const attnrt_batch_host_t *batch, plan_pass_t *pass);
/* The checks a run starts with: a plan (non-NULL) of `kind`, and a stream (NULL or) of its context. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_check_kind(const char *fn, const attnrt_plan_t *plan,
                                                     const plan_kind_t *kind, const attnrt_stream_t *stream);
/* The checks a run ends with, after its args passed: they match the plan's signature, and the workspace
 * is large enough. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_check_run(const char *fn, const attnrt_plan_t *plan,
                                                    const plan_signature_t *now, const void *workspace, size_t bytes);
/* Checks the workspace a run got against the plan. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_check_workspace(const char *fn, const attnrt_plan_t *plan,
                                                          const void *workspace, size_t bytes);
/* attnrt_attention_run's check of a capacity plan: it has a batch (capacity.c). */
ATTNRT_HIDDEN attnrt_status_t attnrt_capacity_check_run(const char *fn, attnrt_plan_t *plan);
/* The "the X plugin has no Y (its ABI is a.b)" refusal for a NULL op entry. */
ATTNRT_HIDDEN attnrt_status_t attnrt_plan_entry_missing(const char *fn, const attnrt_context_t *ctx, const char *what);

#endif /* ATTNRT_PLAN_H */
