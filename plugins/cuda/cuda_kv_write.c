/* cuda_kv_write.c — host side of kv_write: the tensors decoded into ck_kv_write_args_t, one launch
 * (kernels/kv_write.cu). The kernel reads slot_mapping on the device and skips slots outside the cache. */
#include <string.h>

#include "cuda_internal.h"
#include "plugin_args.h"
#include "plugin_error.h"

static attnrt_status_t side_init(ck_kv_side_t *s, const attnrt_tensor_t *src, const attnrt_tensor_t *cache,
                                 const attnrt_tensor_t *scale, const char *which)
{
    memset(s, 0, sizeof *s);
    s->src = src->data;
    s->cache = cache->data;
    s->src_st[0] = src->strides[0];
    s->src_st[1] = src->strides[1];
    for (int i = 0; i < 3; i++) s->cache_st[i] = cache->strides[i];
    s->dim = (int32_t)src->shape[2];
    s->src_dtype = cuda_ck_dtype(src->dtype);
    s->cache_dtype = cuda_ck_dtype(cache->dtype);
    if (s->src_dtype < 0 || s->src_dtype > CK_BF16 || s->cache_dtype < 0)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cuda kv_write: %s (code %u/%u bits) or its cache (code %u/%u bits) "
                           "has a format the cuda plugin cannot convert", which, src->dtype.code, src->dtype.bits,
                           cache->dtype.code, cache->dtype.bits);
    if ((s->cache_dtype == CK_E4M3 || s->cache_dtype == CK_E5M2) && scale && scale->data) {
        s->scale = scale->data;
        if (scale->ndim == 2) {
            s->scale_st[0] = scale->strides[0];
            s->scale_st[1] = scale->strides[1];
        }
    }
    return ATTNRT_OK;
}

attnrt_status_t cuda_kv_write(cuda_dev_t *d, const attnrt_kv_write_args_t *in, void *stream)
{
    attnrt_kv_write_args_t a;
    attnrt_status_t st = plugin_kv_write_open("cuda", in, &a);
    if (st != ATTNRT_OK) return st;
    ck_kv_write_args_t k;
    memset(&k, 0, sizeof k);
    st = side_init(&k.side[0], a.key, a.key_cache, a.key_scale, "key");
    if (st == ATTNRT_OK) st = side_init(&k.side[1], a.value, a.value_cache, a.value_scale, "value");
    if (st != ATTNRT_OK) return st;
    k.slots = a.slot_mapping->data;
    k.slot_st = a.slot_mapping->strides[0];
    k.num_tokens = a.slot_mapping->shape[0];
    k.num_heads = a.key->shape[1];
    k.num_blocks = a.key_cache->shape[0];
    k.block_size = a.key_cache->shape[1];
    if (k.num_tokens <= 0 || k.num_heads <= 0 || k.block_size <= 0) return ATTNRT_OK;
    st = cuda_enter(d);
    if (st != ATTNRT_OK) return st;
    const uint32_t grid = (uint32_t)(k.num_tokens < (1 << 20) ? k.num_tokens : (1 << 20));
    st = cuda_launch(d->k.kv_write, grid, 128, 0, stream, &k, "cuda kv_write");
    return st == ATTNRT_OK ? cuda_finish(stream, "cuda kv_write") : st;
}
