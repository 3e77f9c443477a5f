/* struct_sizes_util.c - see struct_sizes_util.h. */
#include "struct_sizes_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "reference.h"

static uint64_t rng_state;

void sz_seed_init(void)
{
    const char *env = getenv("SZ_SEED");
    uint64_t seed = env && *env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    fprintf(stderr, "struct-size tests: random seed %llu (replay with SZ_SEED=%llu)\n", (unsigned long long)seed,
            (unsigned long long)seed);
    rng_state = seed * 0x9E3779B97F4A7C15ull + 1; /* never 0 */
}

static uint64_t next_u64(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

float sz_rand(float lo, float hi) { return lo + (hi - lo) * (float)((double)(next_u64() >> 11) * 0x1p-53); }

int32_t sz_rand_int(int32_t lo, int32_t hi) { return lo + (int32_t)(next_u64() % (uint64_t)(hi - lo + 1)); }

static void *keep(sz_mem_t *m, size_t bytes)
{
    assert_true(m->n < (int)(sizeof m->bufs / sizeof m->bufs[0]));
    void *dev = NULL;
    OPS_OK(attnrt_mem_alloc(m->ctx, bytes ? bytes : 1, &dev));
    return m->bufs[m->n++] = dev;
}

void *sz_upload(sz_mem_t *m, const void *host, size_t bytes)
{
    void *dev = keep(m, bytes);
    if (bytes) OPS_OK(attnrt_mem_copy_to_device(m->ctx, dev, host, bytes, NULL));
    return dev;
}

void *sz_random_f32(sz_mem_t *m, size_t n, float lo, float hi, float *host)
{
    float *h = malloc(n * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) h[i] = sz_rand(lo, hi);
    void *dev = sz_upload(m, h, n * sizeof *h);
    if (host) memcpy(host, h, n * sizeof *h);
    free(h);
    return dev;
}

void *sz_nan_f32(sz_mem_t *m, size_t n)
{
    float *h = malloc(n * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++) h[i] = NAN;
    void *dev = sz_upload(m, h, n * sizeof *h);
    free(h);
    return dev;
}

void sz_download(sz_mem_t *m, void *host, const void *dev, size_t bytes)
{
    OPS_OK(attnrt_mem_copy_to_host(m->ctx, host, dev, bytes, NULL));
}

void sz_mem_free(sz_mem_t *m)
{
    for (int i = 0; i < m->n; i++) OPS_OK(attnrt_mem_free(m->ctx, m->bufs[i]));
    m->n = 0;
}

void sz_tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
{
    OPS_OK(attnrt_tensor_init(t, data, dtype, ndim, shape));
}

void sz_expect_close(const char *what, const float *got, const double *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++)
        if (isnan(got[i]) || fabs((double)got[i] - want[i]) > tol * (1.0 + fabs(want[i])))
            fail_msg("%s: element %zu is %.9g, the float64 reference says %.9g", what, i, (double)got[i], want[i]);
}

void sz_expect_same(const char *what, const void *a, const void *b, size_t bytes)
{
    const unsigned char *x = a, *y = b;
    for (size_t i = 0; i < bytes; i++)
        if (x[i] != y[i]) {
            size_t e = i / sizeof(float);
            float fa, fb;
            memcpy(&fa, x + e * sizeof fa, sizeof fa);
            memcpy(&fb, y + e * sizeof fb, sizeof fb);
            fail_msg("%s: byte %zu differs (float %zu: %.9g vs %.9g)", what, i, e, (double)fa, (double)fb);
        }
}

void *sz_cut(const void *full, size_t size)
{
    unsigned char *p = malloc(size);
    assert_non_null(p);
    memcpy(p, full, size);
    memcpy(p, &size, sizeof size);
    return p;
}

void *sz_grow(const void *full, size_t full_size, size_t extra, size_t poke_at, unsigned char poke)
{
    unsigned char *p = calloc(1, full_size + extra);
    assert_non_null(p);
    memcpy(p, full, full_size);
    size_t size = full_size + extra;
    memcpy(p, &size, sizeof size);
    if (poke) {
        assert_true(poke_at >= full_size && poke_at < size);
        p[poke_at] = poke;
    }
    return p;
}

/* ---- the random paged-attention problem ---- */

void sz_attention_make(sz_attention_t *p, attnrt_context_t *ctx)
{
    memset(p, 0, sizeof *p);
    p->mem.ctx = ctx;
    /* request 0 a decode, 1 a prefill, 2 a prefill chunk after earlier context; random lengths */
    p->qsl[0] = 0;
    for (int b = 0; b < SZ_B; b++) {
        int32_t len = b == 0 ? 1 : sz_rand_int(2, 8);
        int32_t ctx_len = sz_rand_int(b == 2 ? 1 : 0, SZ_MAX_BLOCKS * SZ_BLOCK - len);
        p->qsl[b + 1] = p->qsl[b] + len;
        p->seq_lens[b] = len + ctx_len;
    }
    p->T = p->qsl[SZ_B];
    /* every request's blocks distinct, from a random permutation of the pool */
    int32_t perm[SZ_NUM_BLOCKS];
    for (int i = 0; i < SZ_NUM_BLOCKS; i++) perm[i] = i;
    for (int i = SZ_NUM_BLOCKS - 1; i > 0; i--) {
        int j = sz_rand_int(0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int i = 0; i < SZ_B * SZ_MAX_BLOCKS; i++) p->table[i] = perm[i];

    const size_t nq = (size_t)p->T * SZ_HQ * SZ_D, nc = (size_t)SZ_NUM_BLOCKS * SZ_BLOCK * SZ_HKV * SZ_D;
    p->q = malloc(nq * sizeof *p->q);
    p->k = malloc(nc * sizeof *p->k);
    p->v = malloc(nc * sizeof *p->v);
    assert_true(p->q && p->k && p->v);
    const int64_t act[3] = {p->T, SZ_HQ, SZ_D}, cache[4] = {SZ_NUM_BLOCKS, SZ_BLOCK, SZ_HKV, SZ_D};
    const int64_t table[2] = {SZ_B, SZ_MAX_BLOCKS}, qsl[1] = {SZ_B + 1}, per_seq[1] = {SZ_B};
    sz_tensor(&p->query, sz_random_f32(&p->mem, nq, -1.0f, 1.0f, p->q), ATTNRT_F32, 3, act);
    sz_tensor(&p->key_cache, sz_random_f32(&p->mem, nc, -1.0f, 1.0f, p->k), ATTNRT_F32, 4, cache);
    sz_tensor(&p->value_cache, sz_random_f32(&p->mem, nc, -1.0f, 1.0f, p->v), ATTNRT_F32, 4, cache);
    sz_tensor(&p->block_table, sz_upload(&p->mem, p->table, sizeof p->table), ATTNRT_I32, 2, table);
    sz_tensor(&p->query_start_loc, sz_upload(&p->mem, p->qsl, sizeof p->qsl), ATTNRT_I32, 1, qsl);
    sz_tensor(&p->seq_lens_t, sz_upload(&p->mem, p->seq_lens, sizeof p->seq_lens), ATTNRT_I32, 1, per_seq);
    p->dout = sz_nan_f32(&p->mem, nq);
    sz_tensor(&p->out, p->dout, ATTNRT_F32, 3, act);
    p->batch = (attnrt_batch_host_t)ATTNRT_BATCH_HOST_INIT;
    p->batch.num_seqs = SZ_B;
    p->batch.query_start_loc = p->qsl;
    p->batch.seq_lens = p->seq_lens;
    p->batch.block_table = p->table;
    p->batch.block_table_stride = SZ_MAX_BLOCKS;
    p->args = (attnrt_attention_args_t)ATTNRT_ATTENTION_ARGS_INIT;
    p->args.query = &p->query;
    p->args.key_cache = &p->key_cache;
    p->args.value_cache = &p->value_cache;
    p->args.block_table = &p->block_table;
    p->args.query_start_loc = &p->query_start_loc;
    p->args.seq_lens = &p->seq_lens_t;
    p->args.out = &p->out;
}

void sz_attention_free(sz_attention_t *p)
{
    sz_mem_free(&p->mem);
    free(p->q);
    free(p->k);
    free(p->v);
}

void sz_attention_run(sz_attention_t *p, const attnrt_attention_args_t *args, const attnrt_batch_host_t *batch,
                      float *host_out)
{
    const size_t n = (size_t)p->T * SZ_HQ * SZ_D;
    float *nan = malloc(n * sizeof *nan);
    assert_non_null(nan);
    for (size_t i = 0; i < n; i++) nan[i] = NAN;
    OPS_OK(attnrt_mem_copy_to_device(p->mem.ctx, p->dout, nan, n * sizeof *nan, NULL));
    free(nan);
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_attention_plan(p->mem.ctx, args, batch, &plan));
    size_t ws_bytes = 0;
    OPS_OK(attnrt_plan_workspace_size(plan, &ws_bytes));
    void *ws = NULL;
    if (ws_bytes) OPS_OK(attnrt_mem_alloc(p->mem.ctx, ws_bytes, &ws));
    attnrt_status_t st = attnrt_attention_run(plan, args, ws, ws_bytes, NULL);
    if (ws) OPS_OK(attnrt_mem_free(p->mem.ctx, ws));
    OPS_OK(attnrt_plan_destroy(plan));
    if (st != ATTNRT_OK) fail_msg("attnrt_attention_run: %s: %s", attnrt_status_name(st), attnrt_last_error());
    sz_download(&p->mem, host_out, p->dout, n * sizeof *host_out);
}

static double *to_double(const float *x, size_t n)
{
    double *d = malloc(n * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

void sz_attention_reference(const sz_attention_t *p, int causal, double *out)
{
    const size_t nq = (size_t)p->T * SZ_HQ * SZ_D, nc = (size_t)SZ_NUM_BLOCKS * SZ_BLOCK * SZ_HKV * SZ_D;
    double *q = to_double(p->q, nq), *k = to_double(p->k, nc), *v = to_double(p->v, nc);
    ref_attention_problem r = {
        .num_seqs = SZ_B,
        .query_start_loc = p->qsl,
        .seq_lens = p->seq_lens,
        .num_q_heads = SZ_HQ,
        .num_kv_heads = SZ_HKV,
        .head_dim_qk = SZ_D,
        .head_dim_v = SZ_D,
        .q = q,
        .k_cache = k,
        .v_cache = v,
        .num_blocks = SZ_NUM_BLOCKS,
        .block_size = SZ_BLOCK,
        .block_table = p->table,
        .max_blocks_per_seq = SZ_MAX_BLOCKS,
        .scale = 1.0 / sqrt((double)SZ_D),
        .causal = causal,
        .window_left = -1,
        .window_right = -1,
        .out = out,
    };
    ref_paged_attention(&r);
    free(q);
    free(k);
    free(v);
}
