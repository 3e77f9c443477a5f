/* cuda_caps.c — what the cuda plugin can do, as data. The attention plan asks the same question, so the
 * answer and the behaviour cannot drift apart. Which kernel runs a supported combination (tensor cores
 * or CUDA cores) is the plan's business, not a capability: both compute the same function. One rule
 * per op (plugin_caps.h). */
#include "cuda_internal.h"
#include "cuda_ops12.h"
#include "plugin_caps.h"
#include "plugin_error.h"

/* kv_write and merge take any head dim; paged attention as many as the kernels hold. */
static attnrt_status_t check_attention(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_attention_dtypes(q, reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q->op == ATTNRT_OP_PAGED_ATTENTION && q->head_dim_qk > CK_MAX_HEAD_DIM)
        return plugin_refuse(reason, cap, "head_dim_qk %u > %u (the cuda kernels hold at most %u dims per head)",
                             q->head_dim_qk, CK_MAX_HEAD_DIM, CK_MAX_HEAD_DIM);
    if (q->op == ATTNRT_OP_PAGED_ATTENTION && q->head_dim_v > CK_MAX_HEAD_DIM)
        return plugin_refuse(reason, cap, "head_dim_v %u > %u (the cuda kernels hold at most %u dims per head)",
                             q->head_dim_v, CK_MAX_HEAD_DIM, CK_MAX_HEAD_DIM);
    return plugin_rule_attention_shape(q, reason, cap);
}

/* The 1.2 ops (cuda_mla.c, cuda_linear.c; limits in cuda_ops12.h) refuse every feature they do not list. */
static attnrt_status_t check_features(const attnrt_op_query_t *q, uint32_t allowed, char *reason, size_t cap)
{
    if (q->features & ~allowed)
        return plugin_refuse(reason, cap, "%s does not take feature bits 0x%x", attnrt_op_string(q->op),
                             q->features & ~allowed);
    return ATTNRT_OK;
}

/* MLA: one latent head of kv_dim <= CK_MLA_MAX_DIM, values its first v_dim columns, any cache dtype. */
static attnrt_status_t check_mla(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_cache_dtype(q->kv_dtype, reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q->head_dim_qk > CK_MLA_MAX_DIM)
        return plugin_refuse(reason, cap, "kv_dim %u > %u (the cuda mla kernel's shared-memory tiles)", q->head_dim_qk,
                             CK_MLA_MAX_DIM);
    if (q->head_dim_v > CK_MLA_MAX_DV) return plugin_refuse(reason, cap, "v_dim %u > %u", q->head_dim_v, CK_MLA_MAX_DV);
    st = plugin_rule_mla_latent(q, reason, cap);
    return st == ATTNRT_OK ? check_features(q, ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE |
                                                   ATTNRT_FEATURE_SPARSE | ATTNRT_FEATURE_KV_SCALE_BLOCK, reason, cap)
                           : st;
}

/* Lightning / gated delta: f32 / f16 / bf16 activations, an f32 state, Dk <= CK_LIN_MAX_DK. */
static attnrt_status_t check_linear(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_act_dtype(q->kv_dtype, "key / state", reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q->head_dim_qk > CK_LIN_MAX_DK)
        return plugin_refuse(reason, cap, "head_dim_k %u > %u (16 state rows per thread at most)", q->head_dim_qk,
                             CK_LIN_MAX_DK);
    st = plugin_rule_linear_heads(q, reason, cap);
    return st == ATTNRT_OK ? check_features(q, 0, reason, cap) : st;
}

static const plugin_op_rules_t cuda_op_rules =
    PLUGIN_OP_RULES("the cuda plugin", check_attention, check_mla, check_linear);

attnrt_status_t cuda_op_check(const attnrt_op_query_t *query, char *reason, size_t cap)
{
    return plugin_op_check(&cuda_op_rules, NULL, query, reason, cap);
}
