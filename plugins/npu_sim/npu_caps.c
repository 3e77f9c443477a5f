/* npu_caps.c — the capability answers: the RBLN rules (docs/backends/npu_sim_rules.md) mapped onto
 * an attnrt_op_query_t, one rule per op (plugin_caps.h; MLA's in npu_mla_plan.c).
 *
 * A query has a block size, head dims, dtypes and features but no max_model_len, so it asks "is there
 * a model configuration with this block size that the device runs?":
 *  - vLLM front end (the default): block_size a power of two in the device's vLLM-path range (a
 *    naive layer with max_model_len = block_size, or flash with max_model_len a multiple of it), one
 *    head_size from the backend's list, K and V of one head size;
 *  - compiled front end: a power-of-two block_size usable as a Naive max_model_len or a Flash partition;
 *    any head size.
 * FP8 caches pass (flash takes them; attention_plan refuses them when the block table makes the layer
 * naive). Features the RBLN kernels lack are refused with the vendor's reason where it has one.
 * attention_plan asks the same question, then applies the rules that need max_model_len. */
#include "npu_mla.h"
#include "npu_ops.h"
#include "plugin_caps.h"
#include "plugin_error.h"

/* The cache geometry: block size, and on the vLLM path the backend's single head_size. */
static attnrt_status_t cache_rules(const npu_select_ctx_t *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    char msg[NPU_MSG_MAX];
    if (ctx->front_end == ATTNRT_FRONT_END_COMPILED) {
        if (q->block_size && !npu_rule_compiled_block(ctx->profile, q->block_size, msg, sizeof msg))
            return plugin_refuse(reason, cap, "%s", msg);
        return ATTNRT_OK;
    }
    if (q->block_size && !npu_rule_vllm_block(ctx->profile, q->block_size, msg, sizeof msg))
        return plugin_refuse(reason, cap, "%s", msg);
    if (q->head_dim_qk && q->head_dim_v && q->head_dim_qk != q->head_dim_v)
        return plugin_refuse(reason, cap, "head_dim_qk %u != head_dim_v %u: the RBLN attention backend has one head_size for "
                      "K and V (its cache is [2, num_blocks, Hkv, 1, block_size, head_size])", q->head_dim_qk,
                      q->head_dim_v);
    const uint32_t head = q->head_dim_qk ? q->head_dim_qk : q->head_dim_v;
    if (head && !npu_rule_head_size(head, msg, sizeof msg)) return plugin_refuse(reason, cap, "%s", msg);
    return ATTNRT_OK;
}

static attnrt_status_t feature_rules(uint32_t f, int attention, char *reason, size_t cap)
{
    if (f & ATTNRT_FEATURE_SPARSE) return plugin_refuse(reason, cap, "the sparse feature (indices) belongs to MLA");
    if (f & ATTNRT_FEATURE_KV_SCALE_BLOCK)
        return plugin_refuse(reason, cap, "per-block fp8 KV scales: vLLM-style FP8 KV caches carry one scale per tensor "
                      "(k_scale / v_scale); use a [1] scale");
    if (!attention) return ATTNRT_OK;
    if (f & ATTNRT_FEATURE_SOFTCAP)
        return plugin_refuse(reason, cap, "logits soft cap: %s (vllm-rbln drops the cap; npu_sim refuses instead of computing "
                      "something else)", npu_msg_softcap);
    if (f & ATTNRT_FEATURE_ALIBI)
        return plugin_refuse(reason, cap, "ALiBi: the RBLN attention kernels take no ALiBi slopes (vllm-rbln keeps "
                      "alibi_slopes but passes them to no kernel)");
    if (f & ATTNRT_FEATURE_LSE)
        return plugin_refuse(reason, cap, "LSE output: the RBLN attention kernels return only the attention output, no "
                      "log-sum-exp (and vllm-rbln never uses cascade attention)");
    return ATTNRT_OK;
}

/* kv_write and paged attention: dtypes, the cache geometry, GQA, then the features. */
static attnrt_status_t check_attention(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, q->op == ATTNRT_OP_KV_WRITE ? "key" : "query", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_cache_dtype(q->kv_dtype, reason, cap);
    if (st == ATTNRT_OK) st = cache_rules(ctx, q, reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q->op == ATTNRT_OP_PAGED_ATTENTION && q->num_q_heads && q->num_kv_heads && q->num_q_heads % q->num_kv_heads)
        return plugin_refuse(reason, cap, "num_q_heads %u is not a multiple of num_kv_heads %u", q->num_q_heads, q->num_kv_heads);
    return feature_rules(q->features, q->op == ATTNRT_OP_PAGED_ATTENTION, reason, cap);
}

/* merge_states: out (q_dtype) and states (kv_dtype) in the activation formats; the attention-only
 * feature bits say nothing about a merge. */
static attnrt_status_t check_merge(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, "out", reason, cap);
    if (st == ATTNRT_OK) st = plugin_rule_act_dtype(q->kv_dtype, "state", reason, cap);
    if (st == ATTNRT_OK && (q->features & ATTNRT_FEATURE_SPARSE))
        return plugin_refuse(reason, cap, "the sparse feature (indices) belongs to MLA");
    return st;
}

static attnrt_status_t refuse_cascade(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    (void)q;
    return plugin_refuse(reason, cap, "cascade attention: RBLN documents no such kernel (vllm-rbln's "
                         "use_cascade_attention returns False, and the RBLN kernels return no LSE to merge)");
}

static attnrt_status_t refuse_linear(const void *ctx, const attnrt_op_query_t *q, char *reason, size_t cap)
{
    (void)ctx;
    return plugin_refuse(reason, cap, "%s: RBLN documents no such kernel (its attention modes are full, sliding-window "
                         "and MLA attention)", attnrt_op_string(q->op));
}

const plugin_op_rules_t npu_op_rules = {
    .who = "npu_sim",
    .rule = {
        [ATTNRT_OP_KV_WRITE] = check_attention,
        [ATTNRT_OP_PAGED_ATTENTION] = check_attention,
        [ATTNRT_OP_MERGE_STATES] = check_merge,
        [ATTNRT_OP_CASCADE] = refuse_cascade,
        [ATTNRT_OP_MLA] = npu_mla_check,
        [ATTNRT_OP_LIGHTNING] = refuse_linear,
        [ATTNRT_OP_GATED_DELTA] = refuse_linear,
    },
};

attnrt_status_t npu_op_check(const npu_select_ctx_t *ctx, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    return plugin_op_check(&npu_op_rules, ctx, query, reason, cap);
}
