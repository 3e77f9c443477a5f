/* cpu_caps.c — what the cpu plugin can do, as data the runtime and attnrt-info can ask for. The
 * attention plan asks the same question, so the answer and the behaviour cannot drift apart. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cpu_ops.h"
#include "dtype_convert.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define CPU_MAX_HEAD_DIM 1024u

/* Every feature bit ABI 1.1 defines except SPARSE, which belongs to MLA. */
#define CPU_ATTENTION_FEATURES                                                                          \
    (ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_ALIBI | \
     ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_KV_SCALE_BLOCK | ATTNRT_FEATURE_LAYOUT_HND)

/* MLA takes causal (dense), sinks, LSE, sparse indices and per-block fp8 scales ([num_blocks, 1]). */
#define CPU_MLA_FEATURES                                                                                  \
    (ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_SPARSE |            \
     ATTNRT_FEATURE_KV_SCALE_BLOCK)

/* q / key / state dtypes: the three float formats. */
static attnrt_status_t check_act_dtype(attnrt_dtype_t dt, const char *what, char *reason, size_t cap)
{
    if (plugin_dtype_is_any(dt)) return ATTNRT_OK;
    dc_kind_t k = dc_kind_of(dt);
    if (k == DC_F32 || k == DC_F16 || k == DC_BF16) return ATTNRT_OK;
    return plugin_refuse(reason, cap, "%s dtype (code %u, %u bits) is not f32, f16 or bf16", what, dt.code, dt.bits);
}

static attnrt_status_t check_cache_dtype(attnrt_dtype_t dt, char *reason, size_t cap)
{
    if (plugin_dtype_is_any(dt) || dc_kind_of(dt) != DC_INVALID) return ATTNRT_OK;
    return plugin_refuse(reason, cap, "cache dtype (code %u, %u bits) is not f32, f16, bf16, fp8_e4m3 or fp8_e5m2",
                  dt.code, dt.bits);
}

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

/* MLA: one latent KV head of width head_dim_qk (kv_dim), values its first head_dim_v columns. */
static attnrt_status_t check_mla(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    attnrt_status_t st = check_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = check_cache_dtype(q->kv_dtype, reason, cap);
    if (st == ATTNRT_OK) st = check_head_dims(q, "kv_dim", "v_dim", reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q->head_dim_qk && q->head_dim_v > q->head_dim_qk)
        return plugin_refuse(reason, cap, "v_dim %u > kv_dim %u: the value is the first v_dim columns of the latent",
                      q->head_dim_v, q->head_dim_qk);
    if (q->num_kv_heads > 1) return plugin_refuse(reason, cap, "mla has one latent KV head, not %u", q->num_kv_heads);
    return refuse_features(q->features, CPU_MLA_FEATURES, "mla", reason, cap);
}

/* Lightning and gated delta: kv_dtype is read as the key's or the state's dtype (the state is f32). */
static attnrt_status_t check_linear(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    const char *op = attnrt_op_string(q->op);
    attnrt_status_t st = check_act_dtype(q->q_dtype, "query", reason, cap);
    if (st == ATTNRT_OK) st = check_act_dtype(q->kv_dtype, "key / state", reason, cap);
    if (st == ATTNRT_OK) st = check_head_dims(q, "head_dim_k", "head_dim_v", reason, cap);
    if (st != ATTNRT_OK) return st;
    const uint32_t a = q->num_q_heads, b = q->num_kv_heads;
    if (q->op == ATTNRT_OP_LIGHTNING && a && b && a != b)
        return plugin_refuse(reason, cap, "lightning has as many key heads as query heads (%u != %u)", a, b);
    if (q->op == ATTNRT_OP_GATED_DELTA && a && b && (a > b ? a % b : b % a))
        return plugin_refuse(reason, cap, "gated_delta needs the value heads to be a multiple of the key heads (%u, %u)", a, b);
    return refuse_features(q->features, 0, op, reason, cap);
}

attnrt_status_t cpu_op_check(const attnrt_op_query_t *query, char *reason, size_t cap)
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
        return check_mla(&q, reason, cap);
    case ATTNRT_OP_LIGHTNING:
    case ATTNRT_OP_GATED_DELTA:
        return check_linear(&q, reason, cap);
    default:
        return plugin_refuse(reason, cap, "unknown op %u (the cpu plugin knows the ops of ABI %d.%d)", q.op,
                      ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    }

    const char *what = q.op == ATTNRT_OP_KV_WRITE ? "key" : q.op == ATTNRT_OP_MERGE_STATES ? "state" : "query";
    attnrt_status_t st = check_act_dtype(q.q_dtype, what, reason, cap);
    if (st != ATTNRT_OK) return st;
    if (q.op != ATTNRT_OP_MERGE_STATES) { /* merge has no cache */
        st = check_cache_dtype(q.kv_dtype, reason, cap);
        if (st != ATTNRT_OK) return st;
    }
    if (q.head_dim_qk > CPU_MAX_HEAD_DIM)
        return plugin_refuse(reason, cap, "head_dim_qk %u > %u", q.head_dim_qk, CPU_MAX_HEAD_DIM);
    if (q.head_dim_v > CPU_MAX_HEAD_DIM)
        return plugin_refuse(reason, cap, "head_dim_v %u > %u", q.head_dim_v, CPU_MAX_HEAD_DIM);
    if (q.op == ATTNRT_OP_PAGED_ATTENTION && q.num_q_heads && q.num_kv_heads && q.num_q_heads % q.num_kv_heads)
        return plugin_refuse(reason, cap, "num_q_heads %u is not a multiple of num_kv_heads %u", q.num_q_heads,
                      q.num_kv_heads);
    if (q.features & ATTNRT_FEATURE_SPARSE)
        return plugin_refuse(reason, cap, "the sparse feature (indices) belongs to mla, not %s", attnrt_op_string(q.op));
    if (q.features & ~(uint32_t)CPU_ATTENTION_FEATURES)
        return plugin_refuse(reason, cap, "unknown feature bits 0x%x", q.features & ~(uint32_t)CPU_ATTENTION_FEATURES);
    return ATTNRT_OK; /* any block size >= 1, any head counts */
}
