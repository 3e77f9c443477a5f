/* plugin_caps.c — see plugin_caps.h. */
#include "plugin_caps.h"

#include <string.h>

#include "dtype_convert.h"
#include "plugin_error.h"
#include "plugin_struct.h"

attnrt_status_t plugin_op_check(const plugin_op_rules_t *rules, const void *ctx, const attnrt_op_query_t *query,
                                char *reason, size_t cap)
{
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    if (query) PLUGIN_COPY_IN(q, query);
    if (reason && cap) reason[0] = '\0';
    if (q.op == 0 || q.op >= ATTNRT_OP_COUNT_)
        return plugin_refuse(reason, cap, "unknown op %u (%s knows the ops of ABI %d.%d)", q.op, rules->who,
                             ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    if (rules->rule[q.op]) return rules->rule[q.op](ctx, &q, reason, cap);
    if (q.op == ATTNRT_OP_CASCADE)
        return plugin_refuse(reason, cap, "cascade is composed by the runtime from paged_attention and merge_states");
    return plugin_refuse(reason, cap, "%s is not supported by %s", attnrt_op_string(q.op), rules->who);
}

attnrt_status_t plugin_rule_act_dtype(attnrt_dtype_t dt, const char *what, char *reason, size_t cap)
{
    if (plugin_dtype_is_any(dt)) return ATTNRT_OK;
    const dc_kind_t k = dc_kind_of(dt);
    if (k == DC_F32 || k == DC_F16 || k == DC_BF16) return ATTNRT_OK;
    return plugin_refuse(reason, cap, "%s dtype (code %u, %u bits) is not f32, f16 or bf16", what, dt.code, dt.bits);
}

attnrt_status_t plugin_rule_cache_dtype(attnrt_dtype_t dt, char *reason, size_t cap)
{
    if (plugin_dtype_is_any(dt) || dc_kind_of(dt) != DC_INVALID) return ATTNRT_OK;
    return plugin_refuse(reason, cap, "cache dtype (code %u, %u bits) is not f32, f16, bf16, fp8_e4m3 or fp8_e5m2",
                         dt.code, dt.bits);
}

attnrt_status_t plugin_rule_attention_dtypes(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    const char *what = q->op == ATTNRT_OP_KV_WRITE ? "key" : q->op == ATTNRT_OP_MERGE_STATES ? "state" : "query";
    attnrt_status_t st = plugin_rule_act_dtype(q->q_dtype, what, reason, cap);
    if (st == ATTNRT_OK && q->op != ATTNRT_OP_MERGE_STATES) st = plugin_rule_cache_dtype(q->kv_dtype, reason, cap);
    return st; /* merge has no cache */
}

attnrt_status_t plugin_rule_attention_shape(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    if (q->op == ATTNRT_OP_PAGED_ATTENTION && q->num_q_heads && q->num_kv_heads && q->num_q_heads % q->num_kv_heads)
        return plugin_refuse(reason, cap, "num_q_heads %u is not a multiple of num_kv_heads %u", q->num_q_heads,
                             q->num_kv_heads);
    if (q->features & ATTNRT_FEATURE_SPARSE)
        return plugin_refuse(reason, cap, "the sparse feature (indices) belongs to mla, not %s",
                             attnrt_op_string(q->op));
    const uint32_t unknown = q->features & ~(uint32_t)PLUGIN_ATTENTION_FEATURES;
    if (unknown) return plugin_refuse(reason, cap, "unknown feature bits 0x%x", unknown);
    return ATTNRT_OK; /* any block size >= 1, any head counts */
}

attnrt_status_t plugin_rule_mla_latent(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    if (q->head_dim_qk && q->head_dim_v > q->head_dim_qk)
        return plugin_refuse(reason, cap, "v_dim %u > kv_dim %u: the value is the first v_dim columns of the latent",
                             q->head_dim_v, q->head_dim_qk);
    if (q->num_kv_heads > 1) return plugin_refuse(reason, cap, "mla has one latent KV head, not %u", q->num_kv_heads);
    return ATTNRT_OK;
}

attnrt_status_t plugin_rule_linear_heads(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    const uint32_t a = q->num_q_heads, b = q->num_kv_heads;
    if (q->op == ATTNRT_OP_LIGHTNING && a && b && a != b)
        return plugin_refuse(reason, cap, "lightning has as many key heads as query heads (%u != %u)", a, b);
    if (q->op == ATTNRT_OP_GATED_DELTA && a && b && (a > b ? a % b : b % a))
        return plugin_refuse(reason, cap, "gated_delta needs the value heads to be a multiple of the key heads "
                             "(%u, %u)", a, b);
    return ATTNRT_OK;
}
