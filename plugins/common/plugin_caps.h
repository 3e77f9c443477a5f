/* plugin_caps.h — the capability query (op_supported) as every plugin answers it: the skeleton, a table
 * of one rule per op, and the rules plugins share.
 *
 * plugin_op_check copies the caller's query (fields past its struct_size read 0), clears the reason and
 * hands the query to the plugin's rule for its op; ops without a rule, and unknown ops, are refused
 * with one wording for all plugins. A plan asks the same question of the same table (plugin_query.h
 * rebuilds the query from its args), so what op_supported answers and what a plan accepts cannot drift.
 *
 * Rules return ATTNRT_OK, or ATTNRT_ERR_UNSUPPORTED with a human reason written by plugin_refuse into
 * `reason` (caller-owned, may be NULL, truncated to cap). Zero in a query field means "any". */
#ifndef ATTNRT_PLUGIN_CAPS_H
#define ATTNRT_PLUGIN_CAPS_H

#include <stddef.h>

#include "attnrt_plugin.h"

/* Every feature bit kv_write, paged_attention and merge_states may carry: all but SPARSE (MLA's). */
#define PLUGIN_ATTENTION_FEATURES                                                                       \
    (ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_ALIBI | \
     ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_KV_SCALE_BLOCK | ATTNRT_FEATURE_LAYOUT_HND)

/* Room for a reason: the longest vendor wording (npu_sim) fits. */
#define PLUGIN_REASON_MAX 512

/* One op's rule. `ctx` is the plugin's own (its device's selection state, or NULL), borrowed. */
typedef attnrt_status_t (*plugin_op_rule_fn)(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap);

typedef struct plugin_op_rules {
    const char       *who;                    /* "the cpu plugin": names the plugin in "unknown op" */
    plugin_op_rule_fn rule[ATTNRT_OP_COUNT_]; /* by attnrt_op_t; NULL: refused (cascade: composed by the
                                                 runtime from paged_attention and merge_states)      */
} plugin_op_rules_t;

/* The table of a plugin that runs every op of ABI 1.2 but cascade (which the runtime composes): one rule
 * for kv_write, paged_attention and merge_states, one for MLA, one for lightning and gated delta. */
#define PLUGIN_OP_RULES(who_, attention, mla, linear)                                                      \
    {                                                                                                     \
        .who = (who_), .rule = {[ATTNRT_OP_KV_WRITE] = (attention), [ATTNRT_OP_PAGED_ATTENTION] = (attention), \
                                [ATTNRT_OP_MERGE_STATES] = (attention), [ATTNRT_OP_MLA] = (mla),           \
                                [ATTNRT_OP_LIGHTNING] = (linear), [ATTNRT_OP_GATED_DELTA] = (linear)}      \
    }

/* The op_supported answer for `query` (may be NULL: op 0, unknown). */
attnrt_status_t plugin_op_check(const plugin_op_rules_t *rules, const void *ctx, const attnrt_op_query_t *query,
                                char *reason, size_t cap);

/* dt is f32, f16 or bf16 (or "any"); `what` names it in the reason ("query"). */
attnrt_status_t plugin_rule_act_dtype(attnrt_dtype_t dt, const char *what, char *reason, size_t cap);
/* dt is a cache format: f32, f16, bf16, fp8_e4m3 or fp8_e5m2 (or "any"). */
attnrt_status_t plugin_rule_cache_dtype(attnrt_dtype_t dt, char *reason, size_t cap);
/* kv_write, paged_attention, merge_states: the activation dtype (the key, query or state's) and, but for
 * merge, the cache dtype. */
attnrt_status_t plugin_rule_attention_dtypes(const attnrt_op_query_t *q, char *reason, size_t cap);
/* kv_write, paged_attention, merge_states after the plugin's own limits: query heads a multiple of KV
 * heads (paged attention), no sparse feature, no feature bit outside PLUGIN_ATTENTION_FEATURES. */
attnrt_status_t plugin_rule_attention_shape(const attnrt_op_query_t *q, char *reason, size_t cap);
/* MLA's latent: v_dim <= kv_dim (the value is the latent's first columns), one latent KV head. */
attnrt_status_t plugin_rule_mla_latent(const attnrt_op_query_t *q, char *reason, size_t cap);
/* Lightning: as many key heads as query heads; gated delta: value heads a multiple of key heads. */
attnrt_status_t plugin_rule_linear_heads(const attnrt_op_query_t *q, char *reason, size_t cap);

#endif /* ATTNRT_PLUGIN_CAPS_H */
