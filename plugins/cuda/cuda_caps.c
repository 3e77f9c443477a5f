/* cuda_caps.c — what the cuda plugin can do, as data. The attention plan asks the same question, so the
 * answer and the behaviour cannot drift apart. Which kernel runs a supported combination (tensor cores
 * or CUDA cores) is the plan's business, not a capability: both compute the same function. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "cuda_mla_linear.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define CUDA_ATTENTION_FEATURES                                                                         \
    (ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_ALIBI | \
     ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_KV_SCALE_BLOCK | ATTNRT_FEATURE_LAYOUT_HND)

static attnrt_status_t check_act_dtype(attnrt_dtype_t dt, const char *what, char *reason, size_t cap)
{
    if (plugin_dtype_is_any(dt)) return ATTNRT_OK;
    const int k = cuda_ck_dtype(dt);
    if (k == CK_F32 || k == CK_F16 || k == CK_BF16) return ATTNRT_OK;
    return plugin_refuse(reason, cap, "%s dtype (code %u, %u bits) is not f32, f16 or bf16", what, dt.code, dt.bits);
}

static attnrt_status_t check_cache_dtype(attnrt_dtype_t dt, char *reason, size_t cap)
{
    if (plugin_dtype_is_any(dt) || cuda_ck_dtype(dt) >= 0) return ATTNRT_OK;
    return plugin_refuse(reason, cap, "cache dtype (code %u, %u bits) is not f32, f16, bf16, fp8_e4m3 or fp8_e5m2", dt.code,
                  dt.bits);
}

/* MLA, lightning and gated delta (cuda_mla.c, cuda_linear.c; limits in cuda_mla_linear.h). MLA: one latent head of kv_dim <=
 * CK_MLA_MAX_DIM, values its first v_dim columns, any cache dtype. Lightning / gated delta: f32 / f16 /
 * bf16 activations, an f32 state, Dk <= CK_LIN_MAX_DK. */
static attnrt_status_t cuda_mla_linear_check(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    const char *op = attnrt_op_string(q->op);
    attnrt_status_t st = check_act_dtype(q->q_dtype, "query", reason, cap);
    if (st != ATTNRT_OK) return st;
    uint32_t allowed = 0;
    if (q->op == ATTNRT_OP_MLA) {
        st = check_cache_dtype(q->kv_dtype, reason, cap);
        if (st != ATTNRT_OK) return st;
        if (q->head_dim_qk > CK_MLA_MAX_DIM)
            return plugin_refuse(reason, cap, "kv_dim %u > %u (the cuda mla kernel's shared-memory tiles)", q->head_dim_qk,
                                 CK_MLA_MAX_DIM);
        if (q->head_dim_v > CK_MLA_MAX_DV)
            return plugin_refuse(reason, cap, "v_dim %u > %u", q->head_dim_v, CK_MLA_MAX_DV);
        if (q->head_dim_qk && q->head_dim_v > q->head_dim_qk)
            return plugin_refuse(reason, cap, "v_dim %u > kv_dim %u: the value is the first v_dim columns of the latent",
                                 q->head_dim_v, q->head_dim_qk);
        if (q->num_kv_heads > 1) return plugin_refuse(reason, cap, "mla has one latent KV head, not %u", q->num_kv_heads);
        allowed = ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_SPARSE |
                  ATTNRT_FEATURE_KV_SCALE_BLOCK;
    } else {
        st = check_act_dtype(q->kv_dtype, "key / state", reason, cap);
        if (st != ATTNRT_OK) return st;
        if (q->head_dim_qk > CK_LIN_MAX_DK)
            return plugin_refuse(reason, cap, "head_dim_k %u > %u (16 state rows per thread at most)", q->head_dim_qk,
                                 CK_LIN_MAX_DK);
        const uint32_t a = q->num_q_heads, b = q->num_kv_heads;
        if (q->op == ATTNRT_OP_LIGHTNING && a && b && a != b)
            return plugin_refuse(reason, cap, "lightning has as many key heads as query heads (%u != %u)", a, b);
        if (q->op == ATTNRT_OP_GATED_DELTA && a && b && (a > b ? a % b : b % a))
            return plugin_refuse(reason, cap, "gated_delta needs the value heads to be a multiple of the key heads (%u, %u)",
                                 a, b);
    }
    if (q->features & ~allowed)
        return plugin_refuse(reason, cap, "%s does not take feature bits 0x%x", op, q->features & ~allowed);
    return ATTNRT_OK;
}

attnrt_status_t cuda_op_check(const attnrt_op_query_t *query, char *reason, size_t cap)
{
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    if (query) PLUGIN_COPY_IN(q, query);
    if (reason && cap) reason[0] = '\0';

    switch (q.op) {
    case ATTNRT_OP_KV_WRITE:
    case ATTNRT_OP_PAGED_ATTENTION:
    case ATTNRT_OP_MERGE_STATES:
        break;
    case ATTNRT_OP_CASCADE:
        return plugin_refuse(reason, cap, "cascade is composed by the runtime from paged_attention and merge_states");
    case ATTNRT_OP_MLA:
    case ATTNRT_OP_LIGHTNING:
    case ATTNRT_OP_GATED_DELTA:
        return cuda_mla_linear_check(&q, reason, cap);
    default:
        return plugin_refuse(reason, cap, "unknown op %u (the cuda plugin knows the ops of ABI %d.%d)", q.op,
                      ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    }

    const char *what = q.op == ATTNRT_OP_KV_WRITE ? "key" : q.op == ATTNRT_OP_MERGE_STATES ? "state" : "query";
    attnrt_status_t st = check_act_dtype(q.q_dtype, what, reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q.op != ATTNRT_OP_MERGE_STATES) {
        st = check_cache_dtype(q.kv_dtype, reason, cap);
        if (st != ATTNRT_OK) return st;
    }
    if (q.op == ATTNRT_OP_PAGED_ATTENTION) { /* kv_write and merge take any head dim */
        if (q.head_dim_qk > CK_MAX_HEAD_DIM)
            return plugin_refuse(reason, cap, "head_dim_qk %u > %u (the cuda kernels hold at most %u dims per head)",
                          q.head_dim_qk, CK_MAX_HEAD_DIM, CK_MAX_HEAD_DIM);
        if (q.head_dim_v > CK_MAX_HEAD_DIM)
            return plugin_refuse(reason, cap, "head_dim_v %u > %u (the cuda kernels hold at most %u dims per head)",
                          q.head_dim_v, CK_MAX_HEAD_DIM, CK_MAX_HEAD_DIM);
        if (q.num_q_heads && q.num_kv_heads && q.num_q_heads % q.num_kv_heads)
            return plugin_refuse(reason, cap, "num_q_heads %u is not a multiple of num_kv_heads %u", q.num_q_heads,
                          q.num_kv_heads);
    }
    if (q.features & ATTNRT_FEATURE_SPARSE)
        return plugin_refuse(reason, cap, "the sparse feature (indices) belongs to mla, not %s", attnrt_op_string(q.op));
    if (q.features & ~(uint32_t)CUDA_ATTENTION_FEATURES)
        return plugin_refuse(reason, cap, "unknown feature bits 0x%x", q.features & ~(uint32_t)CUDA_ATTENTION_FEATURES);
    return ATTNRT_OK; /* any block size >= 1, any head counts */
}
