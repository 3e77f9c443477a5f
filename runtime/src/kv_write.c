/* KV write: checks, then one plugin call. Slots are checked on the host when the caller gives a host
 * copy of slot_mapping; plugins skip out-of-range slots either way. */
#include <string.h>

#include "attention.h"
#include "struct_in.h"
#include "tensor.h"

/* Checks the runtime's copy `a` of the caller's args (attnrt_kv_write_args_in). */
static attnrt_status_t check_kv_write(const char *fn, const attnrt_kv_write_args_t *a, attnrt_op_query_t *q)
{
    TRY(attnrt_check_tensor(fn, "key", a->key, 0, 3, DT_ACT, 1, 1));
    TRY(attnrt_check_tensor(fn, "value", a->value, 0, 3, DT_ACT, 1, 1));
    TRY(attnrt_check_tensor(fn, "slot_mapping", a->slot_mapping, 0, 1, DT_I64, 0, 1));
    TRY(attnrt_check_tensor(fn, "key_cache", a->key_cache, 0, 4, DT_KV, 1, 1));
    TRY(attnrt_check_tensor(fn, "value_cache", a->value_cache, 0, 4, DT_KV, 1, 1));
    TRY(attnrt_check_no_overlap(fn, "key_cache", a->key_cache));
    TRY(attnrt_check_no_overlap(fn, "value_cache", a->value_cache));
    const attnrt_tensor_t *kc = a->key_cache;
    int64_t T = a->key->shape[0], Hkv = kc->shape[2], Dk = kc->shape[3], Dv = a->value_cache->shape[3];
    if (kc->shape[1] < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: key_cache.shape[1] (block_size) = %lld; must be >= 1", fn,
                           (long long)kc->shape[1]);
    if (Hkv < 1 || Dk < 1 || Dv < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_kv_heads = %lld, head_dim_k = %lld, head_dim_v = %lld;"
                           " each must be >= 1", fn, (long long)Hkv, (long long)Dk, (long long)Dv);
    TRY(attnrt_check_rows(fn, "num_tokens (key.shape[0])", T, "num_kv_heads (key_cache.shape[2])", Hkv));
    TRY(attnrt_check_same_dtype(fn, "value", a->value, "key", a->key));
    TRY(attnrt_check_same_dtype(fn, "value_cache", a->value_cache, "key_cache", kc));
    TRY(attnrt_check_dim(fn, "key", a->key, 1, Hkv, "num_kv_heads = key_cache.shape[2]"));
    TRY(attnrt_check_dim(fn, "key", a->key, 2, Dk, "head_dim_k = key_cache.shape[3]"));
    TRY(attnrt_check_dim(fn, "value", a->value, 0, T, "num_tokens = key.shape[0]"));
    TRY(attnrt_check_dim(fn, "value", a->value, 1, Hkv, "num_kv_heads = key_cache.shape[2]"));
    TRY(attnrt_check_dim(fn, "value", a->value, 2, Dv, "head_dim_v = value_cache.shape[3]"));
    TRY(attnrt_check_dim(fn, "slot_mapping", a->slot_mapping, 0, T, "num_tokens = key.shape[0]"));
    for (int d = 0; d < 3; d++)
        TRY(attnrt_check_dim(fn, "value_cache", a->value_cache, d, kc->shape[d],
                             d == 0 ? "num_blocks = key_cache.shape[0]"
                                    : d == 1 ? "block_size = key_cache.shape[1]" : "num_kv_heads = key_cache.shape[2]"));
    int per_block = 0;
    TRY(attnrt_check_kv_scales(fn, kc, a->key_scale, a->value_scale, 1, &per_block));
    if (a->slot_mapping_host) {
        int64_t slots = kc->shape[0] * kc->shape[1];
        for (int64_t t = 0; t < T; t++)
            if (a->slot_mapping_host[t] >= slots)
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: slot_mapping[%lld] = %lld >= num_blocks * "
                                   "block_size = %lld", fn, (long long)t, (long long)a->slot_mapping_host[t],
                                   (long long)slots);
    }
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_KV_WRITE;
    q->q_dtype = a->key->dtype;
    q->kv_dtype = kc->dtype;
    q->head_dim_qk = (uint32_t)Dk;
    q->head_dim_v = (uint32_t)Dv;
    q->block_size = (uint32_t)kc->shape[1];
    q->num_kv_heads = (uint32_t)Hkv;
    q->features = (per_block ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u) |
                  (attnrt_cache_is_hnd(kc) ? ATTNRT_FEATURE_LAYOUT_HND : 0u);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_kv_write(attnrt_context_t *ctx, const attnrt_kv_write_args_t *args, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_kv_write";
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    TRY(attnrt_check_stream_context(fn, stream, ctx, "ctx"));
    attnrt_op_query_t query;
    attnrt_kv_write_args_t a;
    attnrt_status_t st = attnrt_kv_write_args_in(fn, "args", args, &a);
    if (st == ATTNRT_OK) st = check_kv_write(fn, &a, &query);
    if (st != ATTNRT_OK) return st;
    static const char *const names[] = {"key", "value", "slot_mapping", "key_cache", "value_cache", "key_scale",
                                        "value_scale"};
    const attnrt_tensor_t *tensors[] = {a.key, a.value, a.slot_mapping, a.key_cache, a.value_cache, a.key_scale,
                                        a.value_scale};
    _Static_assert(sizeof names / sizeof names[0] == sizeof tensors / sizeof tensors[0], "kv_write: tensors, names");
    st = attnrt_check_spans(ctx, fn, tensors, names, sizeof tensors / sizeof tensors[0]);
    if (st != ATTNRT_OK) return st;
    st = attnrt_require_supported(fn, ctx, &query);
    if (st != ATTNRT_OK) return st;
    if (!ctx->api->kv_write)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: the %s plugin has no kv_write", fn, ctx->ref->plugin->name);
    if (a.key->shape[0] == 0) return ATTNRT_OK;
    st = ctx->api->kv_write(ctx->device, &a, stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}
