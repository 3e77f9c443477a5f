/* cuda_caps.c — what the cuda plugin can do, as data. The attention plan asks the same question, so the
 * answer and the behaviour cannot drift apart. Which kernel runs a supported combination (tensor cores
 * or CUDA cores) is the plan's business, not a capability: both compute the same function. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cuda_internal.h"
#include "plugin_error.h"

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

attnrt_status_t cuda_op_check(const attnrt_op_query_t *query, char *reason, size_t cap)
{
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    if (query) memcpy(&q, query, query->struct_size < sizeof q ? query->struct_size : sizeof q);
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
        return plugin_refuse(reason, cap, "%s is not implemented in the cuda plugin yet", attnrt_op_string(q.op));
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
