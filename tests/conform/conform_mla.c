/* conform_mla.c - multi-head latent attention, dense and sparse: a latent cache [blocks, block_size, 1,
 * kv_dim] in shuffled physical blocks with NaN spare blocks and finite garbage past each sequence's
 * end (written by the checker with the reference quantiser: MLA caches are not filled through
 * kv_write), the query and outputs of paged attention (conform_attn_io.c: strides, NaN poison,
 * sinks, LSE, a second layer), and the float64 ref_mla over the values the device really stores.
 *
 * Sparse cases draw each token's top-k list as DeepSeek's indexer would (distinct positions up to the
 * token's own, -1 where fewer exist; any position of the request when the case sets the causal flag,
 * which sparse MLA ignores) and, when the case asks, spoil it with negative entries,
 * duplicates (each occurrence counts) and positions past seq_len (dropped; they point at garbage rows,
 * NaN blocks or past the block table). With indices_host the runtime must refuse a position past
 * seq_len by name: the checker asks for such a plan first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"

typedef struct mla_user {
    attnrt_mla_args_t args;
    const int32_t    *indices; /* host [T, topk], NULL when dense */
    int               topk;
} mla_user_t;

static attnrt_status_t run_mla(const void *user, attnrt_plan_t *plan, void *ws, size_t ws_bytes, attnrt_stream_t *s)
{
    return attnrt_mla_run(plan, &((const mla_user_t *)user)->args, ws, ws_bytes, s);
}

static void reference_mla(const void *user, const ref_attention_problem *p)
{
    const mla_user_t *u = user;
    const ref_mla_problem m = {
        .num_seqs = p->num_seqs,
        .query_start_loc = p->query_start_loc,
        .seq_lens = p->seq_lens,
        .num_q_heads = p->num_q_heads,
        .kv_dim = p->head_dim_qk,
        .v_dim = p->head_dim_v,
        .q = p->q,
        .kv_cache = p->k_cache, /* [blocks, block_size, 1, kv_dim] == [blocks, block_size, kv_dim] */
        .num_blocks = p->num_blocks,
        .block_size = p->block_size,
        .block_table = p->block_table,
        .max_blocks_per_seq = p->max_blocks_per_seq,
        .scale = p->scale,
        .causal = p->causal,
        .indices = u->indices,
        .topk = u->topk,
        .sinks = p->sinks,
        .out = p->out,
        .lse = p->lse,
    };
    ref_mla(&m);
}

static void mla_query(const cf_case_t *c, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_MLA;
    q->q_dtype = cf_dtype_attnrt(c->q_dtype);
    q->kv_dtype = cf_dtype_attnrt(c->kv_dtype);
    q->head_dim_qk = (uint32_t)c->head_dim_qk;
    q->head_dim_v = (uint32_t)c->head_dim_v;
    q->block_size = (uint32_t)c->block_size;
    q->num_q_heads = (uint32_t)c->num_q_heads;
    q->num_kv_heads = 1;
    q->features = (c->topk == 0 && c->causal ? ATTNRT_FEATURE_CAUSAL : 0u) | (c->sinks ? ATTNRT_FEATURE_SINKS : 0u) |
                  (c->lse ? ATTNRT_FEATURE_LSE : 0u) |
                  (cf_dtype_is_fp8(c->kv_dtype) && c->per_block_scale ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u) |
                  (c->topk > 0 ? ATTNRT_FEATURE_SPARSE : 0u);
}

/* A position that does not exist for a request of seq_len L: exactly L, a garbage row or a NaN block
 * within the table, past the whole table, or far out. */
static int32_t beyond(cf_rng_t *rng, int L, int table_tokens)
{
    switch (cf_rng_int(rng, 0, 3)) {
    case 0: return L;
    case 1: return L + cf_rng_int(rng, 1, table_tokens > L ? table_tokens - L : 1);
    case 2: return table_tokens + cf_rng_int(rng, 0, 64);
    default: return (int32_t)cf_rng_int(rng, 1 << 20, 1 << 30);
    }
}

/* indices [T, topk] for the case; see the file comment. */
static void make_indices(const cf_case_t *c, cf_rng_t *rng, const cf_attn_io_t *io, int table_tokens, int32_t *idx,
                         int *pool)
{
    const int K = c->topk;
    int empty_token = c->sparse_invalid && io->T > 0 ? cf_rng_int(rng, 0, io->T - 1) : -1;
    for (int b = 0; b < io->B; b++) {
        const int L = io->seq_lens[b], q_len = io->qsl[b + 1] - io->qsl[b];
        for (int i = 0; i < q_len; i++) {
            const int t = io->qsl[b] + i;
            int32_t *row = idx + (size_t)t * (size_t)K;
            /* positions up to the token's own, as an indexer picks them; or any key of the request (a sparse
             * call is not causal: the causal flag, when set, must not hide the later ones) */
            int n = c->causal || (c->sparse_invalid && cf_rng_chance(rng, 0.5)) ? L : L - q_len + i + 1;
            if (n > L) n = L;
            if (n < 0) n = 0;
            for (int j = 0; j < n; j++) pool[j] = j;
            const int take = n < K ? n : K;
            for (int j = 0; j < take; j++) { /* partial Fisher-Yates: `take` distinct positions */
                const int r = cf_rng_int(rng, j, n - 1), tmp = pool[j];
                pool[j] = pool[r];
                pool[r] = tmp;
                row[j] = pool[j];
            }
            for (int j = take; j < K; j++) row[j] = -1;
            if (!c->sparse_invalid) continue;
            for (int j = 0; j < K; j++) {
                const double u = cf_rng_unit(rng);
                if (t == empty_token || u < 0.12) /* any negative is unused; the runtime refuses < -1 on the host */
                    row[j] = c->sparse_host || cf_rng_chance(rng, 0.7) ? -1 : -cf_rng_int(rng, 2, 1 << 30);
                else if (u < 0.24 && !c->sparse_host)
                    row[j] = beyond(rng, L, table_tokens);
                else if (u < 0.36 && j > 0)
                    row[j] = row[cf_rng_int(rng, 0, j - 1)]; /* a duplicate (maybe of -1) */
            }
        }
    }
}

/* With indices_host, one entry past its request's seq_len must make the plan fail by name. */
static void refused_index(const cf_env_t *env, const mla_user_t *u, const cf_attn_io_t *io, cf_rng_t *rng,
                          cf_result_t *res)
{
    int b = 0;
    while (b < io->B && (io->qsl[b + 1] == io->qsl[b])) b++;
    if (b == io->B || u->topk == 0) return;
    const size_t n = (size_t)io->T * (size_t)u->topk;
    int32_t *bad = malloc(sizeof(int32_t) * (n + 1));
    if (!bad) {
        cf_result_fail(res, "checker: out of host memory");
        return;
    }
    memcpy(bad, u->indices, sizeof(int32_t) * n);
    const int t = io->qsl[b] + cf_rng_int(rng, 0, io->qsl[b + 1] - io->qsl[b] - 1), j = cf_rng_int(rng, 0, u->topk - 1);
    bad[(size_t)t * (size_t)u->topk + (size_t)j] = io->seq_lens[b];
    attnrt_mla_args_t args = u->args;
    args.indices_host = bad;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_mla_plan(env->ctx, &args, &io->batch, &plan);
    if (st == ATTNRT_OK) {
        attnrt_plan_destroy(plan);
        cf_result_fail(res, "attnrt_mla_plan accepted indices_host[%d][%d] = %d >= seq_lens[%d] = %d", t, j,
                       io->seq_lens[b], b, io->seq_lens[b]);
    } else if (st != ATTNRT_ERR_INVALID_ARGUMENT) {
        cf_result_fail(res, "attnrt_mla_plan with indices[%d][%d] = %d >= seq_lens[%d]: %s (%s); expected "
                       "ATTNRT_ERR_INVALID_ARGUMENT", t, j, io->seq_lens[b], b, attnrt_status_name(st),
                       attnrt_last_error());
    } else if (!strstr(attnrt_last_error(), "indices")) {
        cf_result_fail(res, "attnrt_mla_plan refused indices[%d][%d] = %d >= seq_lens[%d] without naming indices: "
                       "\"%s\"", t, j, io->seq_lens[b], b, attnrt_last_error());
    }
    free(bad);
}

void cf_run_mla(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    attnrt_op_query_t query;
    mla_query(c, &query);
    if (!cf_ask_supported(env, &query, "mla", res)) return;

    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    cf_cache_spec_t spec;
    cf_attn_cache_spec(c, c->kv_lens, c->num_seqs, &spec);
    spec.num_kv_heads = 1;
    spec.head_dim_v = 1; /* the value cache of paged attention is not used: V is the latent's prefix */
    spec.hnd = spec.interleaved = spec.padding_slots = 0;
    spec.write_direct = 1;

    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    cf_cache_t cache;
    memset(&cache, 0, sizeof cache);
    cf_attn_io_t io;
    memset(&io, 0, sizeof io);
    attnrt_plan_t *plan = NULL;
    attnrt_stream_t *stream = NULL;
    int32_t *indices = NULL;
    int *scratch = NULL;
    mla_user_t user;
    memset(&user, 0, sizeof user);
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    spec.stream = stream;
    if (cf_cache_build(env, &dev, &rng, &spec, &cache, res) != 0) goto done;
    if (cf_attn_io_setup(c, &dev, &rng, &cache, &io, res) != 0) goto done;

    attnrt_tensor_t indices_t;
    memset(&indices_t, 0, sizeof indices_t);
    if (c->topk > 0) {
        int max_len = 1;
        for (int b = 0; b < io.B; b++)
            if (io.seq_lens[b] > max_len) max_len = io.seq_lens[b];
        const size_t n = (size_t)io.T * (size_t)c->topk;
        indices = malloc(sizeof(int32_t) * (n + 1));
        scratch = malloc(sizeof(int) * ((size_t)max_len + 1));
        if (!indices || !scratch) {
            cf_result_fail(res, "checker: out of host memory");
            goto done;
        }
        make_indices(c, &rng, &io, cache.max_blocks * c->block_size, indices, scratch);
        void *p = NULL;
        if (cf_dev_upload_new(&dev, indices, n * sizeof(int32_t), &p, "indices upload") != 0) {
            cf_result_fail(res, "%s", dev.error);
            goto done;
        }
        const int64_t shape[2] = {io.T, c->topk};
        cf_tensor_contig(&indices_t, p, ATTNRT_I32, 2, shape);
    }
    attnrt_mla_args_t *a = &user.args;
    a->struct_size = sizeof *a;
    a->query = &io.q;
    a->kv_cache = &cache.k;
    a->block_table = &io.block_table;
    a->query_start_loc = &io.query_start_loc;
    a->seq_lens = &io.seq_lens_t;
    a->out = &io.out;
    a->lse = c->lse ? &io.lse : NULL;
    a->sinks = c->sinks ? &io.sinks_t : NULL;
    a->kv_scale = cache.fp8 ? &cache.k_scale : NULL;
    a->indices = c->topk > 0 ? &indices_t : NULL;
    a->indices_host = c->topk > 0 && c->sparse_host ? indices : NULL;
    a->scale = c->scale;
    a->causal = c->causal; /* sparse: set in some cases, and must be ignored */
    user.indices = indices;
    user.topk = c->topk;

    if (!cf_check_status(attnrt_mla_plan(env->ctx, a, &io.batch, &plan), "attnrt_mla_plan", res)) goto done;
    if (c->sparse_host) refused_index(env, &user, &io, &rng, res);
    if (res->status != CF_PASS) goto done;
    const cf_attn_runner_t runner = {"attnrt_mla_run", run_mla, reference_mla, &user};
    cf_attn_execute(env, c, &dev, &rng, &io, &cache, plan, stream, &runner, res);
done:
    attnrt_plan_destroy(plan);
    free(indices);
    free(scratch);
    cf_attn_io_free(&io);
    cf_cache_free(&cache);
    cf_dev_release(&dev);
    if (stream) attnrt_stream_destroy(stream);
}
