/* Paged attention: every shape, dtype, stride, option and host index is checked here, before any
 * plugin sees the call. Messages name the argument and the bad value. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "tensor.h"

static attnrt_status_t bad(const char *fn, const char *fmt_arg, long long v, const char *rule)
{
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %lld; %s", fn, fmt_arg, v, rule);
}

attnrt_status_t attnrt_attention_check_args(const char *fn, const attnrt_attention_args_t *a, int need_data,
                                            attention_shape_t *s)
{
    /* `a` is the runtime's full-size copy (attnrt_attention_args_in), never the caller's struct. */
    if (!a || a->struct_size != sizeof *a)
        return attnrt_fail(ATTNRT_ERR_INTERNAL, "%s: the args reached the checks without attnrt_attention_args_in",
                           fn);
    memset(s, 0, sizeof *s);
    const int nd = need_data;
    TRY(attnrt_check_tensor(fn, "query", a->query, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "key_cache", a->key_cache, 0, 4, DT_KV, 1, nd));
    TRY(attnrt_check_tensor(fn, "value_cache", a->value_cache, 0, 4, DT_KV, 1, nd));
    TRY(attnrt_check_tensor(fn, "block_table", a->block_table, 0, 2, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "query_start_loc", a->query_start_loc, 0, 1, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "seq_lens", a->seq_lens, 0, 1, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "out", a->out, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "lse", a->lse, 1, 2, DT_F32, 0, nd));
    TRY(attnrt_check_tensor(fn, "alibi_slopes", a->alibi_slopes, 1, 1, DT_F32, 0, nd));
    TRY(attnrt_check_tensor(fn, "sinks", a->sinks, 1, 1, DT_F32, 0, nd));
    TRY(attnrt_check_no_overlap(fn, "out", a->out));
    TRY(attnrt_check_no_overlap(fn, "lse", a->lse));

    s->T = a->query->shape[0];
    s->Hq = a->query->shape[1];
    s->Dqk = a->query->shape[2];
    s->num_blocks = a->key_cache->shape[0];
    s->block_size = a->key_cache->shape[1];
    s->Hkv = a->key_cache->shape[2];
    s->Dv = a->value_cache->shape[3];
    s->B = a->seq_lens->shape[0];
    s->max_blocks = a->block_table->shape[1];

    if (s->Hq < 1) return bad(fn, "query.shape[1] (num_q_heads)", s->Hq, "must be >= 1");
    if (s->Dqk < 1) return bad(fn, "query.shape[2] (head_dim_qk)", s->Dqk, "must be >= 1");
    if (s->block_size < 1) return bad(fn, "key_cache.shape[1] (block_size)", s->block_size, "must be >= 1");
    if (s->Hkv < 1) return bad(fn, "key_cache.shape[2] (num_kv_heads)", s->Hkv, "must be >= 1");
    if (s->Dv < 1) return bad(fn, "value_cache.shape[3] (head_dim_v)", s->Dv, "must be >= 1");
    if (s->Hq % s->Hkv != 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_q_heads = %lld (query.shape[1]) is not a multiple of "
                           "num_kv_heads = %lld (key_cache.shape[2])", fn, (long long)s->Hq, (long long)s->Hkv);
    TRY(attnrt_check_rows(fn, "num_tokens (query.shape[0])", s->T, "num_q_heads (query.shape[1])", s->Hq));
    TRY(attnrt_check_rows(fn, "num_seqs (seq_lens.shape[0])", s->B, "num_q_heads (query.shape[1])", s->Hq));
    TRY(attnrt_check_dim(fn, "key_cache", a->key_cache, 3, s->Dqk, "head_dim_qk = query.shape[2]"));
    TRY(attnrt_check_same_dtype(fn, "value_cache", a->value_cache, "key_cache", a->key_cache));
    TRY(attnrt_check_dim(fn, "value_cache", a->value_cache, 0, s->num_blocks, "num_blocks = key_cache.shape[0]"));
    TRY(attnrt_check_dim(fn, "value_cache", a->value_cache, 1, s->block_size, "block_size = key_cache.shape[1]"));
    TRY(attnrt_check_dim(fn, "value_cache", a->value_cache, 2, s->Hkv, "num_kv_heads = key_cache.shape[2]"));
    TRY(attnrt_check_dim(fn, "block_table", a->block_table, 0, s->B, "num_seqs = seq_lens.shape[0]"));
    TRY(attnrt_check_dim(fn, "query_start_loc", a->query_start_loc, 0, s->B + 1, "num_seqs + 1"));
    TRY(attnrt_check_dim(fn, "out", a->out, 0, s->T, "num_tokens = query.shape[0]"));
    TRY(attnrt_check_dim(fn, "out", a->out, 1, s->Hq, "num_q_heads = query.shape[1]"));
    TRY(attnrt_check_dim(fn, "out", a->out, 2, s->Dv, "head_dim_v = value_cache.shape[3]"));
    if (!attnrt_dtype_equal(a->out->dtype, a->query->dtype) && !attnrt_dtype_equal(a->out->dtype, ATTNRT_F32))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: out.dtype = %s; expected query's dtype (%s) or f32", fn,
                           attnrt_dtype_name(a->out->dtype), attnrt_dtype_name(a->query->dtype));
    if (a->lse) {
        TRY(attnrt_check_dim(fn, "lse", a->lse, 0, s->T, "num_tokens = query.shape[0]"));
        TRY(attnrt_check_dim(fn, "lse", a->lse, 1, s->Hq, "num_q_heads = query.shape[1]"));
    }
    if (a->alibi_slopes) TRY(attnrt_check_dim(fn, "alibi_slopes", a->alibi_slopes, 0, s->Hq, "num_q_heads"));
    if (a->sinks) TRY(attnrt_check_dim(fn, "sinks", a->sinks, 0, s->Hq, "num_q_heads"));
    TRY(attnrt_check_kv_scales(fn, a->key_cache, a->key_scale, a->value_scale, nd, &s->per_block_scale));

    if (!isfinite(a->scale) || a->scale < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: scale = %g; must be finite and >= 0 (0: 1/sqrt(head_dim))",
                           fn, (double)a->scale);
    if (!isfinite(a->softcap) || a->softcap < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: softcap = %g; must be finite and >= 0 (0: off)", fn,
                           (double)a->softcap);
    if (a->causal != 0 && a->causal != 1) return bad(fn, "causal", a->causal, "must be 0 or 1");
    if (a->sliding_window_left < 0)
        return bad(fn, "sliding_window_left", a->sliding_window_left, "must be >= 0 (0: unlimited)");
    if (a->sliding_window_right < 0)
        return bad(fn, "sliding_window_right", a->sliding_window_right, "must be >= 0 (0: unlimited)");
    return ATTNRT_OK;
}

attnrt_status_t attnrt_check_host_query_start_loc(const char *fn, const int32_t *qsl, int64_t B, int64_t T)
{
    if (qsl[0] != 0) return bad(fn, "query_start_loc[0]", qsl[0], "must be 0");
    for (int64_t b = 0; b < B; b++)
        if (qsl[b + 1] < qsl[b])
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query_start_loc is not monotonic: "
                               "query_start_loc[%lld] = %d < query_start_loc[%lld] = %d", fn, (long long)b + 1,
                               qsl[b + 1], (long long)b, qsl[b]);
    if (qsl[B] != T)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query_start_loc[%lld] = %d differs from num_tokens = %lld "
                           "(query.shape[0])", fn, (long long)B, qsl[B], (long long)T);
    return ATTNRT_OK;
}

const batch_names_t attnrt_batch_names = {"batch", "seq_lens", "block_table"};
const batch_names_t attnrt_prefix_batch_names = {"host->prefix", "prefix_seq_lens", "prefix_block_table"};

attnrt_status_t attnrt_attention_check_batch(const char *fn, const attention_shape_t *s,
                                             const attnrt_batch_host_t *batch, int causal,
                                             const attnrt_tensor_t *block_table, const batch_names_t *n)
{
    /* `batch` is the runtime's full-size copy (attnrt_batch_host_in), never the caller's struct. */
    if (!batch || batch->struct_size != sizeof *batch)
        return attnrt_fail(ATTNRT_ERR_INTERNAL, "%s: %s reached the checks without attnrt_batch_host_in", fn,
                           n->batch);
    if (batch->num_seqs != s->B)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s->num_seqs = %d differs from seq_lens.shape[0] = %lld",
                           fn, n->batch, batch->num_seqs, (long long)s->B);
    if (!batch->query_start_loc || !batch->seq_lens)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s->%s is NULL", fn, n->batch,
                           batch->query_start_loc ? "seq_lens" : "query_start_loc");
    if (!batch->block_table && s->B > 0 && s->max_blocks > 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s->block_table is NULL", fn, n->batch);
    if (batch->block_table_stride < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s->block_table_stride = %lld; must be >= 0", fn,
                           n->batch, (long long)batch->block_table_stride);
    /* The host copy must mirror the device tensor, or the rows checked here are not the rows a kernel reads. */
    if (s->B > 1 && batch->block_table_stride != block_table->strides[0])
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s->block_table_stride = %lld differs from "
                           "%s.strides[0] = %lld", fn, n->batch, (long long)batch->block_table_stride, n->block_table,
                           (long long)block_table->strides[0]);
    const int32_t *qsl = batch->query_start_loc;
    TRY(attnrt_check_host_query_start_loc(fn, qsl, s->B, s->T));
    for (int64_t b = 0; b < s->B; b++) {
        int64_t len = (int64_t)qsl[b + 1] - qsl[b];
        int32_t seq_len = batch->seq_lens[b];
        if (seq_len < 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld] = %d < 0", fn, n->seq_lens, (long long)b,
                               seq_len);
        if (causal && seq_len < len)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld] = %d < query length %lld of request "
                               "%lld (query_start_loc[%lld] - query_start_loc[%lld]); seq_lens count the new tokens too",
                               fn, n->seq_lens, (long long)b, seq_len, (long long)len, (long long)b, (long long)b + 1,
                               (long long)b);
        int64_t blocks = ((int64_t)seq_len + s->block_size - 1) / s->block_size;
        if (blocks > s->max_blocks)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld] = %d needs %lld blocks of %lld but "
                               "%s has %lld columns", fn, n->seq_lens, (long long)b, seq_len, (long long)blocks,
                               (long long)s->block_size, n->block_table, (long long)s->max_blocks);
        const int32_t *row = batch->block_table + b * batch->block_table_stride;
        for (int64_t j = 0; j < blocks; j++) {
            if (row[j] < 0)
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld][%lld] = %d < 0", fn, n->block_table,
                                   (long long)b, (long long)j, row[j]);
            if (row[j] >= s->num_blocks)
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s[%lld][%lld] = %d >= num_blocks = %lld", fn,
                                   n->block_table, (long long)b, (long long)j, row[j], (long long)s->num_blocks);
        }
    }
    return ATTNRT_OK;
}

void attnrt_attention_query(const attnrt_attention_args_t *a, const attention_shape_t *s, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_PAGED_ATTENTION;
    q->q_dtype = a->query->dtype;
    q->kv_dtype = a->key_cache->dtype;
    q->head_dim_qk = (uint32_t)s->Dqk;
    q->head_dim_v = (uint32_t)s->Dv;
    q->block_size = (uint32_t)s->block_size;
    q->num_q_heads = (uint32_t)s->Hq;
    q->num_kv_heads = (uint32_t)s->Hkv;
    q->features = (a->causal ? ATTNRT_FEATURE_CAUSAL : 0u) |
                  (a->sliding_window_left || a->sliding_window_right ? ATTNRT_FEATURE_SLIDING_WINDOW : 0u) |
                  (a->softcap > 0 ? ATTNRT_FEATURE_SOFTCAP : 0u) | (a->alibi_slopes ? ATTNRT_FEATURE_ALIBI : 0u) |
                  (a->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (a->lse ? ATTNRT_FEATURE_LSE : 0u) |
                  (s->per_block_scale ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u) |
                  (attnrt_cache_is_hnd(a->key_cache) ? ATTNRT_FEATURE_LAYOUT_HND : 0u);
}

static const char *const tensor_names[] = {"query", "key_cache", "value_cache", "block_table", "query_start_loc",
                                          "seq_lens", "out", "lse", "alibi_slopes", "sinks", "key_scale",
                                          "value_scale"};
static const char *const scalar_names[] = {"scale", "softcap", "causal", "sliding_window_left", "sliding_window_right"};

/* One message for all five options, as runs have always said it. */
static attnrt_status_t options_differ(const char *fn, const plan_signature_t *planned, const plan_signature_t *now)
{
    const double *p = planned->scalars, *n = now->scalars;
    return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: scale, softcap, causal or window differ from the plan "
                       "(planned scale %g softcap %g causal %d window %d/%d, got %g %g %d %d/%d)", fn, p[0], p[1],
                       (int)p[2], (int)p[3], (int)p[4], n[0], n[1], (int)n[2], (int)n[3], (int)n[4]);
}

static const signature_schema_t attention_schema = {
    .num_tensors = SIG_COUNT(tensor_names),
    .num_scalars = SIG_COUNT(scalar_names),
    .tensor_names = tensor_names,
    .scalar_names = scalar_names,
    .scalar_mismatch = options_differ,
};

#define ATTENTION_TENSORS(a)                                                                                    \
    {(a)->query, (a)->key_cache, (a)->value_cache, (a)->block_table, (a)->query_start_loc, (a)->seq_lens, (a)->out, \
     (a)->lse, (a)->alibi_slopes, (a)->sinks, (a)->key_scale, (a)->value_scale}

void attnrt_attention_signature(const attnrt_attention_args_t *a, plan_signature_t *sig)
{
    const attnrt_tensor_t *tensors[] = ATTENTION_TENSORS(a);
    const double scalars[] = {a->scale, a->softcap, a->causal, a->sliding_window_left, a->sliding_window_right};
    _Static_assert(SIG_COUNT(tensors) == SIG_COUNT(tensor_names), "attention: tensors and their names");
    _Static_assert(SIG_COUNT(scalars) == SIG_COUNT(scalar_names), "attention: options and their names");
    attnrt_signature_make(sig, &attention_schema, tensors, scalars);
}

attnrt_status_t attnrt_attention_check_spans(attnrt_context_t *ctx, const char *fn, const attnrt_attention_args_t *a)
{
    const attnrt_tensor_t *tensors[] = ATTENTION_TENSORS(a);
    return attnrt_check_spans(ctx, fn, tensors, tensor_names, SIG_COUNT(tensors));
}
