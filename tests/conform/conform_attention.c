/* conform_attention.c - one paged-attention case: caches through attnrt_kv_write, a plan, a run (twice
 * when the case reuses the plan for a second layer), and the float64 reference over the values the
 * device really stored. The run loop here serves cascade too (conform_cascade.c). */
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"

void cf_attn_cache_spec(const cf_case_t *c, const int *lens, int num_seqs, cf_cache_spec_t *s)
{
    memset(s, 0, sizeof *s);
    s->num_seqs = num_seqs;
    s->lens = lens;
    s->block_size = c->block_size;
    s->table_cols = c->max_model_len > 0 && c->block_size > 0 ? c->max_model_len / c->block_size : 0;
    s->num_kv_heads = c->num_kv_heads;
    s->head_dim_k = c->head_dim_qk;
    s->head_dim_v = c->head_dim_v;
    s->kv_dtype = c->kv_dtype;
    s->src_dtype = c->q_dtype; /* new keys come from the same projection as the queries */
    s->hnd = c->hnd;
    s->per_block_scale = c->per_block_scale;
    s->interleaved = c->kv_interleaved;
    s->write_direct = c->write_direct;
    s->padding_slots = c->padding_slots;
    s->host_slots = (int)(c->seed & 1u);
}

int cf_attn_supported(const cf_env_t *env, const cf_case_t *c, uint32_t op, const cf_cache_spec_t *spec,
                      cf_result_t *res)
{
    attnrt_op_query_t q;
    cf_attn_query(c, op, &q);
    if (!cf_ask_supported(env, &q, op == ATTNRT_OP_CASCADE ? "cascade" : "paged_attention", res)) return 0;
    if (c->write_direct) return 1;
    cf_cache_kv_write_query(spec, &q);
    return cf_ask_supported(env, &q, "kv_write (fills the cache)", res);
}

/* The device's counters of the run just made, where it keeps them (shown by -v and --json). */
static void record_stats(const cf_env_t *env, cf_result_t *res)
{
    attnrt_op_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    if (attnrt_last_op_stats(env->ctx, &st) != ATTNRT_OK || st.op == 0) return;
    res->has_stats = 1;
    res->stats_us = st.time_us;
    res->stats_bytes = st.bytes_moved;
    res->stats_flops = st.flops;
    res->stats_partitions = st.partitions;
    res->stats_padded_rows = st.padded_rows;
    res->stats_padding_tokens = st.padding_tokens;
    res->stats_launches = st.launches;
}

void cf_attn_execute(const cf_env_t *env, const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, cf_attn_io_t *io,
                     const cf_cache_t *cache, attnrt_plan_t *plan, attnrt_stream_t *stream,
                     const cf_attn_runner_t *runner, cf_result_t *res)
{
    void *ws = NULL;
    size_t ws_bytes = 0;
    if (cf_workspace(dev, plan, &ws, &ws_bytes, res) != 0) return;
    for (int layer = 0; layer < (c->plan_reuse ? 2 : 1) && res->status == CF_PASS; layer++) {
        if (layer > 0 && cf_attn_io_next_layer(c, dev, rng, io, res) != 0) return;
        if (!cf_check_status(runner->run(runner->user, plan, ws, ws_bytes, stream), runner->run_name, res)) return;
        if (!cf_check_status(attnrt_stream_synchronize(env->ctx, stream), "attnrt_stream_synchronize", res)) return;
        if (layer == 0) record_stats(env, res);
        ref_attention_problem p;
        cf_attn_io_problem(c, io, cache, &p);
        runner->reference(runner->user, &p);
        cf_attn_io_judge(c, dev, io, layer, env->corrupt, res);
    }
}

static attnrt_status_t run_attention(const void *user, attnrt_plan_t *plan, void *ws, size_t ws_bytes,
                                     attnrt_stream_t *s)
{
    return attnrt_attention_run(plan, user, ws, ws_bytes, s);
}

static void reference_attention(const void *user, const ref_attention_problem *p)
{
    (void)user;
    ref_paged_attention(p);
}

void cf_run_attention(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    cf_cache_spec_t spec;
    cf_attn_cache_spec(c, c->kv_lens, c->num_seqs, &spec);
    if (!cf_attn_supported(env, c, ATTNRT_OP_PAGED_ATTENTION, &spec, res)) return;

    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    cf_cache_t cache;
    cf_attn_io_t io;
    memset(&io, 0, sizeof io);
    attnrt_plan_t *plan = NULL;
    attnrt_stream_t *stream = NULL;
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    spec.stream = stream;
    if (cf_cache_build(env, &dev, &rng, &spec, &cache, res) != 0) goto done;
    if (cf_attn_io_setup(c, &dev, &rng, &cache, &io, res) != 0) goto done;
    if (!cf_check_status(attnrt_attention_plan(env->ctx, &io.args, &io.batch, &plan), "attnrt_attention_plan", res))
        goto done;
    const cf_attn_runner_t runner = {"attnrt_attention_run", run_attention, reference_attention, &io.args};
    cf_attn_execute(env, c, &dev, &rng, &io, &cache, plan, stream, &runner, res);
done:
    attnrt_plan_destroy(plan);
    cf_attn_io_free(&io);
    cf_cache_free(&cache);
    cf_dev_release(&dev);
    if (stream) attnrt_stream_destroy(stream);
}
