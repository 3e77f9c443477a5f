/* npu_kv_write.c — scatters new K/V rows into the paged caches (fp8 caches quantise on write with their
 * per-tensor scale). On the NPU the cache update is fused into the attention kernel (vllm-rbln's
 * "cache update is included into flash attention"); here it is its own op, charged as the bytes it
 * moves plus one launch. Slots outside the cache are skipped whatever the slot mapping holds. */
#include <string.h>

#include "dtype_convert.h"
#include "npu_cost.h"
#include "npu_ops.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define CONVERT_CHUNK 256 /* floats of stack scratch per conversion step */

typedef struct side {
    const char *src;
    int64_t     src_st[2];
    dc_kind_t   src_kind;
    char       *cache;
    int64_t     cache_st[3];
    dc_kind_t   cache_kind;
    int64_t     dim;
    const float *scale; /* fp8: [1] or [num_blocks, Hkv]; NULL otherwise */
    int64_t     scale_st[2];
} side_t;

static int is_fp8(dc_kind_t k) { return k == DC_E4M3 || k == DC_E5M2; }

static void side_init(side_t *s, const attnrt_tensor_t *src, const attnrt_tensor_t *cache, const attnrt_tensor_t *scale)
{
    memset(s, 0, sizeof *s);
    s->src = src->data;
    s->src_st[0] = src->strides[0];
    s->src_st[1] = src->strides[1];
    s->src_kind = dc_kind_of(src->dtype);
    s->cache = cache->data;
    for (int i = 0; i < 3; i++) s->cache_st[i] = cache->strides[i];
    s->cache_kind = dc_kind_of(cache->dtype);
    s->dim = src->shape[2];
    if (is_fp8(s->cache_kind) && scale && scale->data) {
        s->scale = scale->data;
        if (scale->ndim == 2) {
            s->scale_st[0] = scale->strides[0];
            s->scale_st[1] = scale->strides[1];
        }
    }
}

static void write_row(const side_t *s, int64_t t, int64_t h, int64_t block, int64_t row)
{
    const size_t ses = dc_kind_size(s->src_kind), ces = dc_kind_size(s->cache_kind);
    const char *src = s->src + (size_t)(t * s->src_st[0] + h * s->src_st[1]) * ses;
    char *dst = s->cache + (size_t)(block * s->cache_st[0] + row * s->cache_st[1] + h * s->cache_st[2]) * ces;
    if (s->src_kind == s->cache_kind) {
        memcpy(dst, src, (size_t)s->dim * ses);
        return;
    }
    const float scale = s->scale ? s->scale[block * s->scale_st[0] + h * s->scale_st[1]] : 1.0f;
    float buf[CONVERT_CHUNK];
    for (int64_t d = 0; d < s->dim; d += CONVERT_CHUNK) {
        const size_t n = (size_t)(s->dim - d < CONVERT_CHUNK ? s->dim - d : CONVERT_CHUNK);
        dc_row_to_f32(buf, src + (size_t)d * ses, s->src_kind, n, 1.0f);
        dc_row_from_f32(dst + (size_t)d * ces, buf, s->cache_kind, n, scale);
    }
}

attnrt_status_t npu_kv_write(npu_device_t *d, const attnrt_kv_write_args_t *in)
{
    attnrt_kv_write_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (!a.key || !a.value || !a.slot_mapping || !a.key_cache || !a.value_cache)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " kv_write: key, value, slot_mapping and both caches "
                           "are required", NPU_DEV_ARG(d));
    side_t k, v;
    side_init(&k, a.key, a.key_cache, a.key_scale);
    side_init(&v, a.value, a.value_cache, a.value_scale);
    if (!dc_kind_size(k.src_kind) || !dc_kind_size(k.cache_kind) || !dc_kind_size(v.src_kind) ||
        !dc_kind_size(v.cache_kind))
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " kv_write: a dtype npu_sim cannot convert",
                           NPU_DEV_ARG(d));
    const int64_t T = a.slot_mapping->shape[0], H = a.key->shape[1];
    const int64_t bs = a.key_cache->shape[1], capacity = a.key_cache->shape[0] * bs;
    const int64_t *slots = a.slot_mapping->data;
    const int64_t slot_st = a.slot_mapping->strides[0];
    int64_t written = 0;
    for (int64_t t = 0; t < T && bs > 0; t++) {
        const int64_t slot = slots[t * slot_st];
        if (slot < 0 || slot >= capacity) continue; /* padding, or a slot the cache does not have */
        for (int64_t h = 0; h < H; h++) {
            write_row(&k, t, h, slot / bs, slot % bs);
            write_row(&v, t, h, slot / bs, slot % bs);
        }
        written++;
    }
    attnrt_op_stats_t st;
    npu_cost_begin(&st, ATTNRT_OP_KV_WRITE);
    npu_cost_kv_write(d->sel.profile, written, H, k.dim, v.dim, (int64_t)dc_kind_size(k.src_kind),
                      (int64_t)dc_kind_size(k.cache_kind), &st);
    npu_device_record(d, &st);
    return ATTNRT_OK;
}
