/* hostdev_ops.c — the example plugin's declared subset: kv_write and merge_states over f32, with the
 * capability answer that says so. op_supported reads only the query fields that apply to each op (the
 * table in docs/plugin-guide.md) and ignores the rest: attnrt-info asks every op with the same grid,
 * and a field an op does not have must not turn a supported combination into a refusal. The ops use the
 * same checks, so an answer and a call never disagree. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hostdev.h"

#define HOSTDEV_CHUNK 64 /* merge: output columns accumulated at a time, on the stack (an op allocates nothing) */

/* Every feature bit this header knows; a newer runtime's unknown bits are refused. */
#define KNOWN_FEATURES                                                                                             \
    (ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SLIDING_WINDOW | ATTNRT_FEATURE_SOFTCAP | ATTNRT_FEATURE_ALIBI |          \
     ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE | ATTNRT_FEATURE_KV_SCALE_BLOCK | ATTNRT_FEATURE_LAYOUT_HND |            \
     ATTNRT_FEATURE_SPARSE)

/* ---- capabilities ----------------------------------------------------------------------------- */

static attnrt_status_t refuse(char *reason, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static attnrt_status_t refuse(char *reason, size_t cap, const char *fmt, ...)
{
    if (reason && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, cap, fmt, ap);
        va_end(ap);
    }
    return ATTNRT_ERR_UNSUPPORTED;
}

/* A zero dtype is "any" (a tool's question); otherwise f32 only. */
static int f32_or_any(attnrt_dtype_t dt)
{
    return (dt.code == 0 && dt.bits == 0) || (dt.code == ATTNRT_DTYPE_CODE_FLOAT && dt.bits == 32 && dt.lanes <= 1);
}

/* A dtype as a refusal names it. */
static void dtype_words(attnrt_dtype_t dt, char *out, size_t cap)
{
    static const struct { uint8_t code, bits; const char *name; } names[] = {
        {ATTNRT_DTYPE_CODE_FLOAT, 32, "f32"},           {ATTNRT_DTYPE_CODE_FLOAT, 16, "f16"},
        {ATTNRT_DTYPE_CODE_BFLOAT, 16, "bf16"},         {ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN, 8, "fp8_e4m3"},
        {ATTNRT_DTYPE_CODE_FLOAT8_E5M2, 8, "fp8_e5m2"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (dt.code == names[i].code && dt.bits == names[i].bits) {
            snprintf(out, cap, "%s", names[i].name);
            return;
        }
    if (dt.code == 0 && dt.bits == 0) snprintf(out, cap, "any");
    else snprintf(out, cap, "code %u, %u bits", dt.code, dt.bits);
}

/* kv_write reads q_dtype (key / value), kv_dtype (the caches) and, of the features, KV_SCALE_BLOCK and
 * LAYOUT_HND. Head sizes, block size and KV heads are any: the copy works for all of them, NHD or HND. */
static attnrt_status_t kv_write_check(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    if (!f32_or_any(q->q_dtype) || !f32_or_any(q->kv_dtype)) {
        char key[32], cache[32];
        dtype_words(q->q_dtype, key, sizeof key);
        dtype_words(q->kv_dtype, cache, sizeof cache);
        return refuse(reason, cap, HOSTDEV_NAME " writes f32 keys and values into f32 caches only (asked: %s into %s)",
                      key, cache);
    }
    if (q->features & ATTNRT_FEATURE_KV_SCALE_BLOCK)
        return refuse(reason, cap, "per-block scales belong to fp8 caches; " HOSTDEV_NAME " has f32 caches only");
    return ATTNRT_OK;
}

/* merge_states reads q_dtype (out), kv_dtype (the states), head_dim_v, num_q_heads and, of the
 * features, SINKS and LSE; both features are done. */
static attnrt_status_t merge_check(const attnrt_op_query_t *q, char *reason, size_t cap)
{
    if (!f32_or_any(q->q_dtype) || !f32_or_any(q->kv_dtype)) {
        char out[32], states[32];
        dtype_words(q->q_dtype, out, sizeof out);
        dtype_words(q->kv_dtype, states, sizeof states);
        return refuse(reason, cap, HOSTDEV_NAME " merges f32 states into f32 outputs only (asked: %s states into %s)",
                      states, out);
    }
    return ATTNRT_OK;
}

attnrt_status_t hostdev_op_supported(void *device, const attnrt_op_query_t *query, char *reason, size_t cap)
{
    (void)device;
    attnrt_op_query_t q; /* fields an older caller lacks read as zero: "any" */
    memset(&q, 0, sizeof q);
    memcpy(&q, query, query->struct_size < sizeof q ? query->struct_size : sizeof q);
    if (reason && cap) reason[0] = '\0';
    if (q.features & ~(uint32_t)KNOWN_FEATURES)
        return refuse(reason, cap, "feature bits 0x%x are newer than " HOSTDEV_NAME " %s",
                      q.features & ~(uint32_t)KNOWN_FEATURES, HOSTDEV_VERSION);
    switch (q.op) {
    case ATTNRT_OP_KV_WRITE:     return kv_write_check(&q, reason, cap);
    case ATTNRT_OP_MERGE_STATES: return merge_check(&q, reason, cap);
    default:
        return refuse(reason, cap, HOSTDEV_NAME " implements kv_write and merge_states only, not %s",
                      attnrt_op_string(q.op));
    }
}

/* ---- tensors ---------------------------------------------------------------------------------- */

/* Element offset of [i0][i1][i2][i3] of a tensor of up to four dims (strides in elements). */
static int64_t offset_of(const attnrt_tensor_t *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
    const int64_t idx[4] = {i0, i1, i2, i3};
    int64_t off = 0;
    for (int32_t d = 0; d < t->ndim && d < 4; d++) off += idx[d] * t->strides[d];
    return off;
}

static float *f32_at(const attnrt_tensor_t *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
    return (float *)t->data + offset_of(t, i0, i1, i2, i3);
}

/* ---- kv_write --------------------------------------------------------------------------------- */

/* One token's K (or V) rows, all KV heads, into its slot of the cache. The head_dim stride is 1 on
 * both sides (the runtime checked), so a row is one memcpy. */
static void write_rows(const attnrt_tensor_t *src, const attnrt_tensor_t *cache, int64_t t, int64_t block, int64_t row)
{
    const int64_t H = cache->shape[2], D = cache->shape[3];
    for (int64_t h = 0; h < H; h++)
        memcpy(f32_at(cache, block, row, h, 0), f32_at(src, t, h, 0, 0), (size_t)D * sizeof(float));
}

attnrt_status_t hostdev_kv_write(void *device, const attnrt_kv_write_args_t *args, void *stream)
{
    (void)device;
    (void)stream; /* synchronous: done when the call returns, on any stream */
    attnrt_kv_write_args_t a; /* the fields an older caller lacks read as zero */
    memset(&a, 0, sizeof a);
    memcpy(&a, args, args->struct_size < sizeof a ? args->struct_size : sizeof a);
    /* The runtime checked every shape and stride and asked op_supported; called directly (a harness),
     * the plugin still refuses what it does not do rather than write wrong bytes. */
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_KV_WRITE, .q_dtype = a.key->dtype,
                           .kv_dtype = a.key_cache->dtype};
    char reason[256];
    if (kv_write_check(&q, reason, sizeof reason) != ATTNRT_OK || a.key_scale || a.value_scale)
        return hostdev_fail(ATTNRT_ERR_UNSUPPORTED, HOSTDEV_NAME ":0: kv_write: %s",
                            a.key_scale || a.value_scale ? "scales belong to fp8 caches" : reason);
    const int64_t T = a.key->shape[0], block_size = a.key_cache->shape[1];
    const int64_t slots = a.key_cache->shape[0] * block_size;
    const int64_t *mapping = a.slot_mapping->data;
    for (int64_t t = 0; t < T; t++) {
        const int64_t slot = mapping[t * a.slot_mapping->strides[0]];
        if (slot < 0 || slot >= slots) continue; /* padding; or a bad slot: skipped, never out of bounds */
        write_rows(a.key, a.key_cache, t, slot / block_size, slot % block_size);
        write_rows(a.value, a.value_cache, t, slot / block_size, slot % block_size);
    }
    return ATTNRT_OK;
}

/* ---- merge_states ----------------------------------------------------------------------------- */

/* o = sum_i w_i o_i / sum_i w_i with w_i = e^(lse_i - m), m = max lse_i; lse = m + ln sum_i w_i. All
 * states empty (m = -inf) gives (0, -inf). A state of weight 0 is never read: an empty partial may hold
 * NaN. A sink joins the denominator once, after the merge; out_lse excludes it. Each chunk reads every
 * state before writing out, so out may be one of the states. */
static void merge_row(const attnrt_merge_args_t *a, int64_t t, int64_t h, int64_t D)
{
    float m = -INFINITY;
    for (uint32_t i = 0; i < a->num_states; i++) m = fmaxf(m, *f32_at(a->lses[i], t, h, 0, 0));
    const int empty = m == -INFINITY;
    double sum = 0.0;
    for (uint32_t i = 0; !empty && i < a->num_states; i++) sum += exp((double)*f32_at(a->lses[i], t, h, 0, 0) - m);
    const double lse = empty ? -INFINITY : (double)m + log(sum);
    double keep = empty ? 0.0 : 1.0 / sum;
    if (a->sinks && !empty) keep /= 1.0 + exp((double)*f32_at(a->sinks, h, 0, 0, 0) - lse);
    for (int64_t d0 = 0; d0 < D; d0 += HOSTDEV_CHUNK) {
        const int64_t n = D - d0 < HOSTDEV_CHUNK ? D - d0 : HOSTDEV_CHUNK;
        double acc[HOSTDEV_CHUNK] = {0};
        for (uint32_t i = 0; !empty && i < a->num_states; i++) {
            const double w = exp((double)*f32_at(a->lses[i], t, h, 0, 0) - m);
            if (w == 0.0) continue;
            const float *o = f32_at(a->states[i], t, h, d0, 0);
            for (int64_t d = 0; d < n; d++) acc[d] += w * o[d];
        }
        float *out = f32_at(a->out, t, h, d0, 0);
        for (int64_t d = 0; d < n; d++) out[d] = (float)(acc[d] * keep);
    }
    if (a->out_lse) *f32_at(a->out_lse, t, h, 0, 0) = (float)lse;
}

attnrt_status_t hostdev_merge_states(void *device, const attnrt_merge_args_t *args, void *stream)
{
    (void)device;
    (void)stream; /* synchronous */
    attnrt_merge_args_t a;
    memset(&a, 0, sizeof a);
    memcpy(&a, args, args->struct_size < sizeof a ? args->struct_size : sizeof a);
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_MERGE_STATES, .q_dtype = a.out->dtype,
                           .kv_dtype = a.states[0]->dtype};
    char reason[256];
    if (merge_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return hostdev_fail(ATTNRT_ERR_UNSUPPORTED, HOSTDEV_NAME ":0: merge_states: %s", reason);
    const int64_t T = a.out->shape[0], H = a.out->shape[1], D = a.out->shape[2];
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) merge_row(&a, t, h, D);
    return ATTNRT_OK;
}
