/* The capacity-plan tests' fixture: see capacity_fixture.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity_fixture.h"

const cap_config_t cap_small = {.max_seqs = 8, .max_blocks = 16, .block_size = 16, .max_tokens = 64,
                                .num_q_heads = 8, .num_kv_heads = 2, .head_dim = 64, .num_blocks = 136};
const cap_config_t cap_long = {.max_seqs = 4, .max_blocks = 64, .block_size = 16, .max_tokens = 32,
                               .num_q_heads = 8, .num_kv_heads = 2, .head_dim = 64, .num_blocks = 260};

static double rnd(uint64_t *s) /* [-1, 1) */
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static size_t query_elems(const cap_config_t *c)
{
    return (size_t)c->max_tokens * (size_t)c->num_q_heads * (size_t)c->head_dim;
}

static size_t cache_elems(const cap_config_t *c)
{
    return (size_t)c->num_blocks * (size_t)c->block_size * (size_t)c->num_kv_heads * (size_t)c->head_dim;
}

static void *device_buffer(cap_fixture_t *f, size_t bytes)
{
    void *p = NULL;
    CAP_OK(attnrt_mem_alloc(f->ctx, bytes ? bytes : 1, &p));
    return p;
}

static void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
{
    CAP_OK(attnrt_tensor_init(t, data, dtype, ndim, shape));
}

static void fill_random(uint64_t *rng, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)rnd(rng);
}

void cap_refill_inputs(cap_fixture_t *f)
{
    const cap_config_t *c = &f->cfg;
    fill_random(&f->rng, f->h_query, query_elems(c));
    fill_random(&f->rng, f->h_key_cache, cache_elems(c));
    fill_random(&f->rng, f->h_value_cache, cache_elems(c));
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, f->d_query, f->h_query, query_elems(c) * sizeof(float), NULL));
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, f->d_key_cache, f->h_key_cache, cache_elems(c) * sizeof(float), NULL));
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, f->d_value_cache, f->h_value_cache, cache_elems(c) * sizeof(float), NULL));
}

static void poison(cap_fixture_t *f, void *dev, size_t bytes)
{
    uint32_t *host = malloc(bytes ? bytes : 1);
    assert_non_null(host);
    for (size_t i = 0; i < bytes / sizeof *host; i++) host[i] = CAP_POISON_BITS;
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, dev, host, bytes, NULL));
    free(host);
}

void cap_poison_outputs(cap_fixture_t *f)
{
    const cap_config_t *c = &f->cfg;
    poison(f, f->d_out, query_elems(c) * sizeof(float));
    poison(f, f->d_lse, (size_t)c->max_tokens * (size_t)c->num_q_heads * sizeof(float));
    if (f->ws_bytes) poison(f, f->d_ws, f->ws_bytes / 4 * 4);
}

int32_t cap_batch_tokens(const cap_fixture_t *f) { return f->h_qsl[f->batch.num_seqs]; }

void cap_write_batch(cap_fixture_t *f, const cap_request_t *reqs, int n)
{
    const cap_config_t *c = &f->cfg;
    assert_true(n >= 0 && n <= c->max_seqs);
    /* Every physical block once, shuffled: requests never share one, and ids are far from sorted. */
    int32_t *perm = malloc((size_t)c->num_blocks * sizeof *perm);
    assert_non_null(perm);
    for (int32_t i = 0; i < c->num_blocks; i++) perm[i] = i;
    for (int32_t i = c->num_blocks - 1; i > 0; i--) {
        int32_t j = (int32_t)((rnd(&f->rng) + 1.0) * 0.5 * (i + 1));
        if (j > i) j = i;
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int32_t i = 0; i < c->max_seqs * c->max_blocks; i++) f->h_block_table[i] = -1;
    int32_t next = 0;
    f->h_qsl[0] = 0;
    for (int b = 0; b < c->max_seqs; b++) {
        const int live = b < n;
        f->h_qsl[b + 1] = f->h_qsl[b] + (live ? reqs[b].query_len : 0);
        f->h_seq_lens[b] = live ? reqs[b].seq_len : 0;
        const int32_t blocks = live ? (reqs[b].seq_len + c->block_size - 1) / c->block_size : 0;
        assert_true(blocks <= c->max_blocks);
        for (int32_t j = 0; j < blocks; j++) f->h_block_table[b * c->max_blocks + j] = perm[next++];
    }
    assert_true(next <= c->num_blocks);
    assert_true(f->h_qsl[c->max_seqs] <= c->max_tokens);
    free(perm);
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, f->d_qsl, f->h_qsl, (size_t)(c->max_seqs + 1) * sizeof(int32_t), NULL));
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, f->d_seq_lens, f->h_seq_lens, (size_t)c->max_seqs * sizeof(int32_t), NULL));
    CAP_OK(attnrt_mem_copy_to_device(f->ctx, f->d_block_table, f->h_block_table,
                                     (size_t)c->max_seqs * (size_t)c->max_blocks * sizeof(int32_t), NULL));
    f->batch = (attnrt_batch_host_t){sizeof f->batch, n, f->h_qsl, f->h_seq_lens, f->h_block_table, c->max_blocks};
    cap_refill_inputs(f);
}

static int setup(void **state, const cap_config_t *cfg)
{
    cap_fixture_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    f->cfg = *cfg;
    f->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)cfg->max_blocks;
    const char *env = getenv("ATTNRT_DEVICE");
    f->device = env && env[0] ? env : "cpu:0";
    attnrt_status_t st = attnrt_open(f->device, &f->ctx);
    if (st != ATTNRT_OK) {
        print_error("attnrt_open(%s) returned %s: %s\n", f->device, attnrt_status_name(st), attnrt_last_error());
        free(f);
        *state = NULL;
        return -1;
    }
    const cap_config_t *c = &f->cfg;
    const size_t qb = query_elems(c) * sizeof(float), cb = cache_elems(c) * sizeof(float);
    const size_t lse_b = (size_t)c->max_tokens * (size_t)c->num_q_heads * sizeof(float);
    f->d_query = device_buffer(f, qb);
    f->d_key_cache = device_buffer(f, cb);
    f->d_value_cache = device_buffer(f, cb);
    f->d_block_table = device_buffer(f, (size_t)c->max_seqs * (size_t)c->max_blocks * sizeof(int32_t));
    f->d_qsl = device_buffer(f, (size_t)(c->max_seqs + 1) * sizeof(int32_t));
    f->d_seq_lens = device_buffer(f, (size_t)c->max_seqs * sizeof(int32_t));
    f->d_out = device_buffer(f, qb);
    f->d_lse = device_buffer(f, lse_b);
    f->h_query = malloc(qb);
    f->h_key_cache = malloc(cb);
    f->h_value_cache = malloc(cb);
    f->h_block_table = malloc((size_t)c->max_seqs * (size_t)c->max_blocks * sizeof(int32_t));
    assert_true(f->h_query && f->h_key_cache && f->h_value_cache && f->h_block_table);

    const int64_t act[3] = {c->max_tokens, c->num_q_heads, c->head_dim};
    const int64_t cache[4] = {c->num_blocks, c->block_size, c->num_kv_heads, c->head_dim};
    const int64_t table[2] = {c->max_seqs, c->max_blocks}, qsl[1] = {c->max_seqs + 1}, seqs[1] = {c->max_seqs};
    const int64_t lse[2] = {c->max_tokens, c->num_q_heads};
    tensor(&f->query, f->d_query, ATTNRT_F32, 3, act);
    tensor(&f->key_cache, f->d_key_cache, ATTNRT_F32, 4, cache);
    tensor(&f->value_cache, f->d_value_cache, ATTNRT_F32, 4, cache);
    tensor(&f->block_table, f->d_block_table, ATTNRT_I32, 2, table);
    tensor(&f->qsl, f->d_qsl, ATTNRT_I32, 1, qsl);
    tensor(&f->seq_lens, f->d_seq_lens, ATTNRT_I32, 1, seqs);
    tensor(&f->out, f->d_out, ATTNRT_F32, 3, act);
    tensor(&f->lse, f->d_lse, ATTNRT_F32, 2, lse);
    f->args = (attnrt_attention_args_t){
        .struct_size = sizeof f->args,
        .query = &f->query,
        .key_cache = &f->key_cache,
        .value_cache = &f->value_cache,
        .block_table = &f->block_table,
        .query_start_loc = &f->qsl,
        .seq_lens = &f->seq_lens,
        .out = &f->out,
        .lse = &f->lse,
        .causal = 1,
    };
    f->capacity = (attnrt_capacity_t){.struct_size = sizeof f->capacity}; /* every bound from the tensors */
    const cap_request_t none[1] = {{0, 0}};
    cap_write_batch(f, none, 0); /* valid metadata from the start */
    CAP_OK(attnrt_attention_plan_capacity(f->ctx, &f->args, &f->capacity, &f->plan));
    CAP_OK(attnrt_plan_workspace_size(f->plan, &f->ws_bytes));
    f->d_ws = f->ws_bytes ? device_buffer(f, f->ws_bytes) : NULL;
    cap_poison_outputs(f);
    return 0;
}

int cap_setup_small(void **state) { return setup(state, &cap_small); }
int cap_setup_long(void **state) { return setup(state, &cap_long); }

attnrt_plan_t *cap_keep_plan(cap_fixture_t *f, attnrt_plan_t *plan)
{
    for (size_t i = 0; i < sizeof f->extra_plans / sizeof f->extra_plans[0]; i++)
        if (!f->extra_plans[i]) return f->extra_plans[i] = plan;
    fail_msg("a test kept more than %zu plans", sizeof f->extra_plans / sizeof f->extra_plans[0]);
    return NULL;
}

int cap_teardown(void **state)
{
    cap_fixture_t *f = *state;
    if (!f) return 0;
    int rc = 0;
    if (f->plan && attnrt_plan_destroy(f->plan) != ATTNRT_OK) rc = -1;
    for (size_t i = 0; i < sizeof f->extra_plans / sizeof f->extra_plans[0]; i++)
        if (f->extra_plans[i] && attnrt_plan_destroy(f->extra_plans[i]) != ATTNRT_OK) rc = -1;
    if (f->other_stream) attnrt_stream_destroy(f->other_stream);
    if (f->other_ctx && attnrt_close(f->other_ctx) != ATTNRT_OK) rc = -1;
    void *bufs[] = {f->d_query, f->d_key_cache, f->d_value_cache, f->d_block_table, f->d_qsl,
                    f->d_seq_lens, f->d_out, f->d_lse, f->d_ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) attnrt_mem_free(f->ctx, bufs[i]);
    attnrt_status_t st = attnrt_close(f->ctx);
    if (st != ATTNRT_OK) {
        print_error("attnrt_close returned %s, expected ATTNRT_OK (something leaked): %s\n", attnrt_status_name(st),
                    attnrt_last_error());
        rc = -1;
    }
    free(f->h_query);
    free(f->h_key_cache);
    free(f->h_value_cache);
    free(f->h_block_table);
    free(f);
    return rc;
}
