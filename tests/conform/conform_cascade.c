/* conform_cascade.c - one cascade case: every request's own tokens and one shared prefix in the same
 * caches, the prefix named by a single block-table row given a dim-0 stride of 0, and the reference
 * computed as ONE softmax over [prefix ; own tokens] so that it independently checks the runtime's
 * composition (two attention passes and a merge, sinks applied once after it). */
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"

typedef struct cascade_user {
    const attnrt_cascade_args_t *args;
    int                          prefix_len;
    const int32_t               *prefix_row;
} cascade_user_t;

static attnrt_status_t run_cascade(const void *user, attnrt_plan_t *plan, void *ws, size_t ws_bytes,
                                   attnrt_stream_t *s)
{
    return attnrt_cascade_run(plan, ((const cascade_user_t *)user)->args, ws, ws_bytes, s);
}

static void reference_cascade(const void *user, const ref_attention_problem *p)
{
    const cascade_user_t *u = user;
    ref_cascade_attention(p, u->prefix_len, u->prefix_row);
}

void cf_run_cascade(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    /* The cache holds every request's own tokens and, as one more sequence, the shared prefix. */
    int lens[CF_MAX_SEQS + 1];
    memcpy(lens, c->kv_lens, sizeof(int) * (size_t)c->num_seqs);
    lens[c->num_seqs] = c->prefix_len;
    cf_cache_spec_t spec;
    cf_attn_cache_spec(c, lens, c->num_seqs + 1, &spec);
    if (!cf_attn_supported(env, c, ATTNRT_OP_CASCADE, &spec, res)) return;

    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    cf_cache_t cache;
    cf_attn_io_t io;
    memset(&io, 0, sizeof io);
    attnrt_plan_t *plan = NULL;
    attnrt_stream_t *stream = NULL;
    void *p_row = NULL, *p_lens = NULL;
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    spec.stream = stream;
    if (cf_cache_build(env, &dev, &rng, &spec, &cache, res) != 0) goto done;
    if (cf_attn_io_setup(c, &dev, &rng, &cache, &io, res) != 0) goto done;

    const int32_t *prefix_row = cache.block_table + (size_t)c->num_seqs * (size_t)cache.max_blocks;
    int32_t prefix_lens[CF_MAX_SEQS];
    for (int b = 0; b < c->num_seqs; b++) prefix_lens[b] = c->prefix_len;
    if (cf_dev_upload_new(&dev, prefix_row, sizeof(int32_t) * (size_t)cache.max_blocks, &p_row, "prefix table") ||
        cf_dev_upload_new(&dev, prefix_lens, sizeof(int32_t) * (size_t)c->num_seqs, &p_lens, "prefix_seq_lens")) {
        cf_result_fail(res, "%s", dev.error);
        goto done;
    }
    attnrt_tensor_t prefix_table, prefix_seq_lens;
    const int64_t pt_shape[2] = {c->num_seqs, cache.max_blocks}, pt_strides[2] = {0, 1}, pl_shape[1] = {c->num_seqs};
    cf_tensor(&prefix_table, p_row, ATTNRT_I32, 2, pt_shape, pt_strides);
    cf_tensor_contig(&prefix_seq_lens, p_lens, ATTNRT_I32, 1, pl_shape);
    const attnrt_cascade_args_t args = {
        .struct_size = sizeof args,
        .suffix = &io.args,
        .prefix_block_table = &prefix_table,
        .prefix_seq_lens = &prefix_seq_lens,
    };
    const attnrt_batch_host_t prefix_batch = {
        .struct_size = sizeof prefix_batch,
        .num_seqs = c->num_seqs,
        .query_start_loc = io.qsl,
        .seq_lens = prefix_lens,
        .block_table = prefix_row,
        .block_table_stride = 0,
    };
    const attnrt_cascade_host_t host = {.struct_size = sizeof host, .prefix = &prefix_batch, .suffix = &io.batch};
    if (!cf_check_status(attnrt_cascade_plan(env->ctx, &args, &host, &plan), "attnrt_cascade_plan", res)) goto done;
    const cascade_user_t user = {&args, c->prefix_len, prefix_row};
    const cf_attn_runner_t runner = {"attnrt_cascade_run", run_cascade, reference_cascade, &user};
    cf_attn_execute(env, c, &dev, &rng, &io, &cache, plan, stream, &runner, res);
done:
    attnrt_plan_destroy(plan);
    cf_attn_io_free(&io);
    cf_cache_free(&cache);
    cf_dev_release(&dev);
    if (stream) attnrt_stream_destroy(stream);
}
