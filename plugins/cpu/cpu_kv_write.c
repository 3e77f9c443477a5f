/* cpu_kv_write.c — scatters new K/V rows into the paged caches, converting (and quantising) on the way.
 * The cache's layout (NHD or HND) is only its strides; slots outside the cache are skipped, never
 * written, whatever the slot mapping holds. */
#include <string.h>

#include "cpu_ops.h"
#include "dtype_convert.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define KV_CONVERT_CHUNK 256            /* floats of stack scratch per conversion step           */
#define KV_MIN_ELEMS_PER_ITEM 16384     /* below this, waking another thread costs more than it saves */

/* One side (K or V) of the write, decoded from its tensors once per call. */
typedef struct kv_side {
    const char *src;        /* [T, Hkv, D] */
    int64_t     src_st[2];  /* token, head strides (elements) */
    dc_kind_t   src_kind;
    size_t      src_esize;
    char       *cache;      /* [num_blocks, block_size, Hkv, D] */
    int64_t     cache_st[3];
    dc_kind_t   cache_kind;
    size_t      cache_esize;
    int64_t     dim;        /* D */
    const float *scale;     /* fp8 only: [1] or [num_blocks, Hkv]; NULL otherwise */
    int64_t     scale_st[2];
    int         scale_per_block;
} kv_side_t;

typedef struct kv_job {
    kv_side_t      side[2];
    const int64_t *slots;
    int64_t        slot_st;
    int64_t        num_tokens, num_heads, num_blocks, block_size;
    int64_t        tokens_per_item;
} kv_job_t;

static int is_fp8(dc_kind_t k) { return k == DC_E4M3 || k == DC_E5M2; }

static void side_init(kv_side_t *s, const attnrt_tensor_t *src, const attnrt_tensor_t *cache,
                      const attnrt_tensor_t *scale)
{
    s->src = src->data;
    s->src_st[0] = src->strides[0];
    s->src_st[1] = src->strides[1];
    s->src_kind = dc_kind_of(src->dtype);
    s->src_esize = dc_kind_size(s->src_kind);
    s->cache = cache->data;
    for (int i = 0; i < 3; i++) s->cache_st[i] = cache->strides[i];
    s->cache_kind = dc_kind_of(cache->dtype);
    s->cache_esize = dc_kind_size(s->cache_kind);
    s->dim = src->shape[2];
    s->scale = NULL;
    s->scale_per_block = 0;
    if (is_fp8(s->cache_kind) && scale && scale->data) {
        s->scale = scale->data;
        s->scale_per_block = scale->ndim == 2;
        s->scale_st[0] = scale->strides[0];
        s->scale_st[1] = scale->ndim == 2 ? scale->strides[1] : 0;
    }
}

/* Writes one [D] row: a plain copy when the formats match, else through f32 in stack-sized chunks. */
static void write_row(const kv_side_t *s, int64_t token, int64_t head, int64_t block, int64_t row)
{
    const char *src = s->src + (size_t)(token * s->src_st[0] + head * s->src_st[1]) * s->src_esize;
    char *dst = s->cache + (size_t)(block * s->cache_st[0] + row * s->cache_st[1] + head * s->cache_st[2]) *
                               s->cache_esize;
    if (s->src_kind == s->cache_kind) {
        memcpy(dst, src, (size_t)s->dim * s->src_esize);
        return;
    }
    float scale = 1.0f;
    if (s->scale) scale = s->scale_per_block ? s->scale[block * s->scale_st[0] + head * s->scale_st[1]] : s->scale[0];
    float buf[KV_CONVERT_CHUNK];
    for (int64_t d = 0; d < s->dim; d += KV_CONVERT_CHUNK) {
        size_t n = (size_t)(s->dim - d < KV_CONVERT_CHUNK ? s->dim - d : KV_CONVERT_CHUNK);
        dc_row_to_f32(buf, src + (size_t)d * s->src_esize, s->src_kind, n, 1.0f);
        dc_row_from_f32(dst + (size_t)d * s->cache_esize, buf, s->cache_kind, n, scale);
    }
}

static void kv_item(void *ctx, size_t item, unsigned worker)
{
    (void)worker;
    const kv_job_t *job = ctx;
    const int64_t capacity = job->num_blocks * job->block_size;
    int64_t t0 = (int64_t)item * job->tokens_per_item;
    int64_t t1 = t0 + job->tokens_per_item < job->num_tokens ? t0 + job->tokens_per_item : job->num_tokens;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t slot = job->slots[t * job->slot_st];
        if (slot < 0 || slot >= capacity) continue; /* padding, or a slot the cache does not have */
        const int64_t block = slot / job->block_size, row = slot % job->block_size;
        for (int64_t h = 0; h < job->num_heads; h++) {
            write_row(&job->side[0], t, h, block, row);
            write_row(&job->side[1], t, h, block, row);
        }
    }
}

attnrt_status_t cpu_kv_write(cpu_pool_t *pool, const attnrt_kv_write_args_t *in)
{
    attnrt_kv_write_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (!a.key || !a.value || !a.slot_mapping || !a.key_cache || !a.value_cache)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu kv_write: key, value, slot_mapping and both caches are required");

    kv_job_t job;
    memset(&job, 0, sizeof job);
    side_init(&job.side[0], a.key, a.key_cache, a.key_scale);
    side_init(&job.side[1], a.value, a.value_cache, a.value_scale);
    for (int i = 0; i < 2; i++)
        if (!job.side[i].src_esize || !job.side[i].cache_esize)
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu kv_write: %s or its cache has a dtype the cpu plugin cannot convert",
                               i ? "value" : "key");
    job.slots = a.slot_mapping->data;
    job.slot_st = a.slot_mapping->strides[0];
    job.num_tokens = a.slot_mapping->shape[0];
    job.num_heads = a.key->shape[1];
    job.num_blocks = a.key_cache->shape[0];
    job.block_size = a.key_cache->shape[1];
    if (job.num_tokens <= 0 || job.num_heads <= 0 || job.block_size <= 0) return ATTNRT_OK;

    const int64_t per_token = job.num_heads * (job.side[0].dim + job.side[1].dim);
    int64_t per_item = per_token > 0 ? (KV_MIN_ELEMS_PER_ITEM + per_token - 1) / per_token : job.num_tokens;
    const int64_t balanced = (job.num_tokens + 4 * (int64_t)cpu_pool_size(pool) - 1) / (4 * (int64_t)cpu_pool_size(pool));
    if (balanced > per_item) per_item = balanced; /* about four items per thread, never tiny ones */
    job.tokens_per_item = per_item;
    cpu_parallel_for(pool, (size_t)((job.num_tokens + per_item - 1) / per_item), kv_item, &job);
    return ATTNRT_OK;
}
