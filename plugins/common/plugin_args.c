/* plugin_args.c — see plugin_args.h. */
#include "plugin_args.h"

#include <string.h>

#include "dtype_convert.h"
#include "plugin_check.h"
#include "plugin_error.h"
#include "plugin_query.h"
#include "plugin_struct.h"

#define KV_CONVERT_CHUNK 256 /* floats of stack scratch per conversion step */

attnrt_status_t plugin_plan_open(const char *who, const char *op, const void *args_in, void *args, size_t args_size,
                                 const attnrt_batch_host_t *batch_in, attnrt_batch_host_t *batch, uint32_t needs,
                                 void *const *plan_out, const size_t *workspace_bytes)
{
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s plan: args, batch and both outputs are required", who,
                           op);
    size_t given;
    memcpy(&given, args_in, sizeof given); /* every ABI struct starts with its struct_size */
    plugin_copy_struct(args, args_size, args_in, given);
    PLUGIN_COPY_IN(*batch, batch_in);
    const int need_sl = (needs & PLUGIN_BATCH_QSL_SEQ_LENS) == PLUGIN_BATCH_QSL_SEQ_LENS;
    const int missing = !batch->query_start_loc || (need_sl && !batch->seq_lens);
    if (needs && (batch->num_seqs < 0 || (batch->num_seqs > 0 && missing)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s %s plan: the host batch has %d requests but no "
                           "query_start_loc%s", who, op, batch->num_seqs, need_sl ? " or seq_lens" : "");
    return ATTNRT_OK;
}

int plugin_by_cost_desc(const void *pa, const void *pb)
{
    const plugin_cost_key_t *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

attnrt_status_t plugin_attention_supported(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                           const attnrt_attention_args_t *a)
{
    attnrt_op_query_t q;
    plugin_attention_query(a, &q);
    q.features = (a->softcap > 0 ? ATTNRT_FEATURE_SOFTCAP : 0u) | (a->alibi_slopes ? ATTNRT_FEATURE_ALIBI : 0u) |
                 (a->lse ? ATTNRT_FEATURE_LSE : 0u) |
                 (a->key_scale && a->key_scale->ndim == 2 ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u);
    char reason[PLUGIN_REASON_MAX];
    if (plugin_op_check(rules, ctx, &q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s paged attention: %s", who, reason);
    const dc_kind_t kk = dc_kind_of(a->key_cache->dtype), vk = dc_kind_of(a->value_cache->dtype);
    attnrt_status_t st = plugin_check_out_kind(dc_kind_of(a->query->dtype), dc_kind_of(a->out->dtype), who,
                                               "paged attention");
    if (st == ATTNRT_OK && vk != kk)
        st = plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s paged attention: key cache is %s but value cache is %s", who,
                         dc_kind_name(kk), dc_kind_name(vk));
    return st;
}

attnrt_status_t plugin_kv_write_open(const char *who, const attnrt_kv_write_args_t *in, attnrt_kv_write_args_t *a)
{
    PLUGIN_COPY_IN(*a, in);
    if (!a->key || !a->value || !a->slot_mapping || !a->key_cache || !a->value_cache)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s kv_write: key, value, slot_mapping and both caches are "
                           "required", who);
    return ATTNRT_OK;
}

static void side_init(plugin_kv_side_t *s, const attnrt_tensor_t *src, const attnrt_tensor_t *cache,
                      const attnrt_tensor_t *scale)
{
    memset(s, 0, sizeof *s);
    s->src = plugin_view_of(src);
    s->cache = plugin_view_of(cache);
    s->dim = src->shape[2];
    if (plugin_kind_is_fp8(s->cache.kind) && scale && scale->data) {
        s->scale = scale->data;
        if (scale->ndim == 2) {
            s->scale_st[0] = scale->strides[0];
            s->scale_st[1] = scale->strides[1];
        }
    }
}

attnrt_status_t plugin_kv_write_decode(const char *who, const attnrt_kv_write_args_t *a, plugin_kv_write_t *kw)
{
    memset(kw, 0, sizeof *kw);
    side_init(&kw->side[0], a->key, a->key_cache, a->key_scale);
    side_init(&kw->side[1], a->value, a->value_cache, a->value_scale);
    for (int i = 0; i < 2; i++)
        if (!dc_kind_size(kw->side[i].src.kind) || !dc_kind_size(kw->side[i].cache.kind))
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s kv_write: %s or its cache has a dtype this plugin cannot "
                               "convert", who, i ? "value" : "key");
    kw->slots = (const int64_t *)a->slot_mapping->data;
    kw->slot_st = a->slot_mapping->strides[0];
    kw->num_tokens = a->slot_mapping->shape[0];
    kw->num_heads = a->key->shape[1];
    kw->num_blocks = a->key_cache->shape[0];
    kw->block_size = a->key_cache->shape[1];
    return ATTNRT_OK;
}

/* One [D] row: a plain copy when the formats match, else through f32 in stack-sized chunks. */
static void write_row(const plugin_kv_side_t *s, int64_t t, int64_t h, int64_t block, int64_t row)
{
    const char *src = plugin_view_at(&s->src, t, h);
    char *dst = plugin_view_at3(&s->cache, block, row, h);
    if (s->src.kind == s->cache.kind) {
        memcpy(dst, src, (size_t)s->dim * s->src.es);
        return;
    }
    const float scale = s->scale ? s->scale[block * s->scale_st[0] + h * s->scale_st[1]] : 1.0f;
    float buf[KV_CONVERT_CHUNK];
    for (int64_t d = 0; d < s->dim; d += KV_CONVERT_CHUNK) {
        const size_t n = (size_t)(s->dim - d < KV_CONVERT_CHUNK ? s->dim - d : KV_CONVERT_CHUNK);
        dc_row_to_f32(buf, src + (size_t)d * s->src.es, s->src.kind, n, 1.0f);
        dc_row_from_f32(dst + (size_t)d * s->cache.es, buf, s->cache.kind, n, scale);
    }
}

int plugin_kv_write_token(const plugin_kv_write_t *kw, int64_t t)
{
    const int64_t slot = kw->slots[t * kw->slot_st];
    if (kw->block_size <= 0 || slot < 0 || slot >= kw->num_blocks * kw->block_size)
        return 0; /* padding, or a slot the cache does not have */
    const int64_t block = slot / kw->block_size, row = slot % kw->block_size;
    for (int64_t h = 0; h < kw->num_heads; h++) {
        write_row(&kw->side[0], t, h, block, row);
        write_row(&kw->side[1], t, h, block, row);
    }
    return 1;
}

attnrt_status_t plugin_merge_open(const char *who, const attnrt_merge_args_t *in, attnrt_merge_args_t *a)
{
    PLUGIN_COPY_IN(*a, in);
    if (a->num_states < 1 || !a->states || !a->lses || !a->out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s merge_states: needs >= 1 state, its lses and out", who);
    for (uint32_t i = 0; i < a->num_states; i++) {
        const dc_kind_t k = a->states[i] ? dc_kind_of(a->states[i]->dtype) : DC_INVALID;
        if (!a->lses[i] || !plugin_kind_is_act(k))
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s merge_states: state %u is missing, has no lse, or is not "
                               "f32/f16/bf16", who, i);
    }
    const dc_kind_t ok = dc_kind_of(a->out->dtype);
    if (!plugin_kind_is_act(ok))
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s merge_states: out dtype %s is not f32/f16/bf16", who,
                           dc_kind_name(ok));
    return ATTNRT_OK;
}
