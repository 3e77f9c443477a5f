/* conform_kv_write.c - attnrt_kv_write on its own: every byte of both caches afterwards, written
 * slots bit-exact against the reference quantisation (fp8 within 1 ulp), all others untouched.
 * The cache machinery (conform_cache.c) does the work; this case adds the boundary values and
 * padding the attention cases leave out, and reports the worst fp8 ulp distance as its error. */
#include <math.h>
#include <string.h>

#include "conform_cache.h"
#include "conform_compare.h"

void cf_run_kv_write(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    cf_cache_spec_t spec;
    memset(&spec, 0, sizeof spec);
    spec.num_seqs = c->num_seqs;
    spec.lens = c->kv_lens;
    spec.block_size = c->block_size;
    spec.table_cols = c->max_model_len > 0 && c->block_size > 0 ? c->max_model_len / c->block_size : 0;
    spec.num_kv_heads = c->num_kv_heads;
    spec.head_dim_k = c->head_dim_qk;
    spec.head_dim_v = c->head_dim_v;
    spec.kv_dtype = c->kv_dtype;
    spec.src_dtype = c->q_dtype;
    spec.hnd = c->hnd;
    spec.per_block_scale = c->per_block_scale;
    spec.interleaved = c->kv_interleaved;
    spec.padding_slots = c->padding_slots;
    spec.edge_values = c->edge_values;
    spec.host_slots = (int)(c->seed & 1u);
    spec.corrupt = env->corrupt;
    res->tolerance = cf_dtype_is_fp8(c->kv_dtype) ? 1.0 : 0.0; /* ulp */

    attnrt_op_query_t q;
    cf_cache_kv_write_query(&spec, &q);
    if (!cf_ask_supported(env, &q, "kv_write", res)) return;

    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    cf_cache_t cache;
    memset(&cache, 0, sizeof cache);
    if (c->use_stream && attnrt_stream_create(env->ctx, &spec.stream) != ATTNRT_OK) {
        cf_result_fail(res, "attnrt_stream_create: %s", attnrt_last_error());
    } else {
        if (cf_cache_build(env, &dev, &rng, &spec, &cache, res) == 0) res->error = cache.worst_ulp;
        res->corrupted = cache.corrupted;
    }
    cf_cache_free(&cache);
    cf_dev_release(&dev);
    if (spec.stream) attnrt_stream_destroy(spec.stream);
}
