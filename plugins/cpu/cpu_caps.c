/* cpu_caps.c — what the cpu plugin can do, as data the runtime and attnrt-info can ask for: one rule
 * per op (plugin_caps.h). The plans ask the same question, so the answer and the behaviour cannot
 * drift apart. */
#include <stdio.h>

#include "cpu_ops.h"
#include "dtype_convert.h"
#include "plugin_caps.h"
#include "plugin_error.h"

#define CPU_MAX_HEAD_DIM 1024u

/* MLA takes causal (dense), sinks, LSE, sparse indices and per-block fp8 scales ([num_blocks, 1]). */
#define CPU_MLA_FEATURES                                                                                  \
    (ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_SPARSE |            \
     ATTNRT_FEATURE_KV_SCALE_BLOCK)

/* Head dims: 0 is "any", else 1 .. CPU_MAX_HEAD_DIM. */
static attnrt_status_t check_head_dims(const attnrt_op_query_t *q, const char *qk, const char *v, char *reason,
                                       size_t cap)
{
    if (q->head_dim_qk > CPU_MAX_HEAD_DIM) return plugin_refuse(reason, cap, "%s %u > %u", qk, q->head_dim_qk, CPU_MAX_HEAD_DIM);
    if (q->head_dim_v > CPU_MAX_HEAD_DIM) return plugin_refuse(reason, cap, "%s %u > %u", v, q->head_dim_v, CPU_MAX_HEAD_DIM);
    return ATTNRT_OK;
}

/* Feature bits an op does not take: a reason naming the first known one, or the unknown ones. */
static attnrt_status_t refuse_features(uint32_t features, uint32_t allowed, const char *op, char *reason, size_t cap)
{
    static const struct { uint32_t bit; const char *what; } known[] = {
        {ATTNRT_FEATURE_CAUSAL, "causal masking"},       {ATTNRT_FEATURE_SLIDING_WINDOW, "a sliding window"},
        {ATTNRT_FEATURE_SOFTCAP, "a soft-cap"},          {ATTNRT_FEATURE_ALIBI, "ALiBi"},
        {ATTNRT_FEATURE_SINKS, "sinks"},                 {ATTNRT_FEATURE_LSE, "an LSE output"},
        {ATTNRT_FEATURE_KV_SCALE_BLOCK, "per-block fp8 scales"},
        {ATTNRT_FEATURE_LAYOUT_HND, "the HND cache layout"}, {ATTNRT_FEATURE_SPARSE, "sparse indices"},
    };
    uint32_t all_known = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) all_known |= known[i].bit;
    if (features & ~all_known) return plugin_refuse(reason, cap, "unknown feature bits 0x%x", features & ~all_known);
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (features & ~allowed & known[i].bit) return plugin_refuse(reason, cap, "%s does not take %s", op, known[i].what);
    return ATTNRT_OK;
}

/* kv_write, paged_attention, merge_states: any block size >= 1, any head counts, heads up to the limit. */
static attnrt_status_t check_attention(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_attention_dtypes(q, reason, cap);
    if (st == ATTNRT_OK) st = check_head_dims(q, "head_dim_qk", "head_dim_v", reason, cap);
    return st == ATTNRT_OK ? plugin_rule_attention_shape(q, reason, cap) : st;
}

/* MLA: one latent KV head of width head_dim_qk (kv_dim), values its first head_dim_v columns. */
static attnrt_status_t check_mla(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_cache_dtype(q->kv_dtype, reason, cap);
    if (st == ATTNRT_OK) st = check_head_dims(q, "kv_dim", "v_dim", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_mla_latent(q, reason, cap);
    return st == ATTNRT_OK ? refuse_features(q->features, CPU_MLA_FEATURES, "mla", reason, cap) : st;
}

/* Lightning and gated delta: kv_dtype is read as the key's or the state's dtype (the state is f32). */
static attnrt_status_t check_linear(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_act_dtype(q->kv_dtype, "key / state", reason, cap);
    if (st == ATTNRT_OK) st = check_head_dims(q, "head_dim_k", "head_dim_v", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_linear_heads(q, reason, cap);
    return st == ATTNRT_OK ? refuse_features(q->features, 0, attnrt_op_string(q->op), reason, cap) : st;
}

const plugin_op_rules_t cpu_op_rules = PLUGIN_OP_RULES("the cpu plugin", check_attention, check_mla, check_linear);

attnrt_status_t cpu_op_check(const attnrt_op_query_t *query, char *reason, size_t cap)
{
    return plugin_op_check(&cpu_op_rules, NULL, query, reason, cap);
}
