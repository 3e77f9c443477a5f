/* test_npu_mla.c — MLA on NPU-legal configurations, dense and sparse, against the float64 reference
 * (ref_mla): flash over several partitions with a prefill whose chunks split at a partition, the naive
 * single block, sinks, FP8 latent caches in sparse MLA (refused in dense MLA), sparse indices that
 * repeat, are unused (-1) or lie past seq_len, both profiles and both front ends, DeepSeek's 576 / 512
 * widths; the refusals (LSE, small blocks) and the cost counters. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dtype_convert.h"
#include "npu_fixture.h"
#include "reference.h"

#define MAX_SEQS 8

typedef struct mla_case {
    const char    *profile, *front_end;
    int            block, cols, num_seqs;
    int            q_lens[MAX_SEQS], kv_lens[MAX_SEQS];
    int            hq, d, dv;
    attnrt_dtype_t q_dtype, kv_dtype;
    int            sparse, topk, causal, sinks, lse;
    float          kv_scale;
} mla_case_t;

typedef struct mla_result {
    attnrt_status_t   status;
    char              message[1024];
    double            rel_err;
    attnrt_op_stats_t stats;
} mla_result_t;

static void defaults(mla_case_t *c)
{
    memset(c, 0, sizeof *c);
    c->profile = "rbln-rebel100";
    c->front_end = "vllm";
    c->block = 512;
    c->cols = 3;
    c->num_seqs = 3;
    const int q[] = {1, 1, 200}, kv[] = {1, 1100, 700};
    memcpy(c->q_lens, q, sizeof q);
    memcpy(c->kv_lens, kv, sizeof kv);
    c->hq = 16;
    c->d = 64;
    c->dv = 32;
    c->q_dtype = c->kv_dtype = ATTNRT_F16;
    c->causal = 1;
    c->kv_scale = 1.0f;
}

static double rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-52 - 1.0;
}

static attnrt_tensor_t tensor(void *data, attnrt_dtype_t dt, int ndim, const int64_t *shape)
{
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.data = data;
    t.dtype = dt;
    t.ndim = ndim;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        stride *= shape[d];
    }
    return t;
}

/* Values rounded to dtype (stored with scale) and read back, so the reference sees what the device does. */
static void quantise(double *x, void *stored, dc_kind_t kind, size_t n, float scale)
{
    float *f = calloc(n ? n : 1, sizeof(float));
    for (size_t i = 0; i < n; i++) f[i] = (float)x[i];
    dc_row_from_f32(stored, f, kind, n, scale);
    dc_row_to_f32(f, stored, kind, n, scale);
    for (size_t i = 0; i < n; i++) x[i] = f[i];
    free(f);
}

static int run_mla(const mla_case_t *c, mla_result_t *res)
{
    memset(res, 0, sizeof *res);
    npu_fx_t fx;
    res->status = npu_fx_open(&fx, c->profile, c->front_end);
    if (res->status != ATTNRT_OK) return snprintf(res->message, sizeof res->message, "open failed"), -1;
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(c->block * 131 + c->hq * 7 + c->d + c->sparse);
    const int B = c->num_seqs, cols = c->cols, bs = c->block, NB = B * cols + 1, D = c->d, Dv = c->dv, H = c->hq;
    int32_t qsl[MAX_SEQS + 1] = {0}, bt[MAX_SEQS * 64];
    for (int b = 0; b < B; b++) qsl[b + 1] = qsl[b] + c->q_lens[b];
    const int T = qsl[B];
    for (int i = 0; i < B * cols; i++) bt[i] = (i * 7 + 3) % (B * cols) + 1; /* shuffled physical blocks; 0 unused */
    const dc_kind_t qk = dc_kind_of(c->q_dtype), kk = dc_kind_of(c->kv_dtype);
    double *q = malloc(sizeof(double) * (size_t)T * H * D), *cache = malloc(sizeof(double) * (size_t)NB * bs * D);
    double *ref = calloc((size_t)T * H * Dv, sizeof(double)), sinks_d[256];
    void *q_dev = malloc((size_t)T * H * D * dc_kind_size(qk)), *c_dev = malloc((size_t)NB * bs * D * dc_kind_size(kk));
    void *o_dev = calloc((size_t)T * H * Dv, dc_kind_size(qk));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)(T * (c->topk ? c->topk : 1)));
    float sinks_f[256], *lse_f = malloc(sizeof(float) * (size_t)T * H);
    for (size_t i = 0; i < (size_t)T * H * D; i++) q[i] = rnd(&seed);
    for (size_t i = 0; i < (size_t)NB * bs * D; i++) cache[i] = rnd(&seed);
    quantise(q, q_dev, qk, (size_t)T * H * D, 1.0f);
    quantise(cache, c_dev, kk, (size_t)NB * bs * D, c->kv_scale);
    for (int h = 0; h < H; h++) sinks_f[h] = (float)(sinks_d[h] = rnd(&seed));
    for (int b = 0; b < B; b++) /* sparse: repeats, -1 and indices past seq_len among the picks */
        for (int t = qsl[b]; t < qsl[b + 1]; t++)
            for (int k = 0; k < c->topk; k++) {
                const int S = c->kv_lens[b], r = (int)((rnd(&seed) + 1.0) * 0.5 * (S + 4));
                idx[t * c->topk + k] = k % 7 == 6 ? -1 : k % 5 == 4 ? idx[t * c->topk + k - 1] : r;
            }
    const double scale = 1.0 / sqrt(192.0);
    const ref_mla_problem rp = {B, qsl, c->kv_lens, H, D, Dv, q, cache, NB, bs, bt, cols, scale, c->causal,
                                c->sparse ? idx : NULL, c->topk, c->sinks ? sinks_d : NULL, ref, NULL};
    ref_mla(&rp);

    const int64_t qs[3] = {T, H, D}, cs[4] = {NB, bs, 1, D}, os[3] = {T, H, Dv}, bts[2] = {B, cols}, qls[1] = {B + 1},
                  sls[1] = {B}, is[2] = {T, c->topk}, hs[1] = {H}, ls[2] = {T, H}, one[1] = {1};
    const attnrt_dtype_t i32 = ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 32);
    attnrt_tensor_t tq = tensor(q_dev, c->q_dtype, 3, qs), tc = tensor(c_dev, c->kv_dtype, 4, cs);
    attnrt_tensor_t to = tensor(o_dev, c->q_dtype, 3, os), tbt = tensor(bt, i32, 2, bts), tqsl = tensor(qsl, i32, 1, qls);
    attnrt_tensor_t tsl = tensor((void *)c->kv_lens, i32, 1, sls), tidx = tensor(idx, i32, 2, is);
    attnrt_tensor_t tsinks = tensor(sinks_f, ATTNRT_F32, 1, hs), tlse = tensor(lse_f, ATTNRT_F32, 2, ls);
    float scale_f = c->kv_scale;
    attnrt_tensor_t tscale = tensor(&scale_f, ATTNRT_F32, 1, one);
    attnrt_mla_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.query = &tq;
    a.kv_cache = &tc;
    a.block_table = &tbt;
    a.query_start_loc = &tqsl;
    a.seq_lens = &tsl;
    a.out = &to;
    a.lse = c->lse ? &tlse : NULL;
    a.sinks = c->sinks ? &tsinks : NULL;
    a.kv_scale = &tscale;
    a.indices = c->sparse ? &tidx : NULL;
    a.scale = (float)scale;
    a.causal = c->causal;
    const attnrt_batch_host_t batch = {sizeof batch, B, qsl, c->kv_lens, bt, cols};
    void *plan = NULL;
    size_t ws_bytes = 0;
    res->status = fx.api->mla_plan(fx.dev, &a, &batch, &plan, &ws_bytes);
    if (res->status == ATTNRT_OK) {
        void *ws = malloc(ws_bytes ? ws_bytes : 1);
        res->status = fx.api->mla_run(fx.dev, plan, &a, ws, ws_bytes, NULL);
        free(ws);
        fx.api->plan_destroy(fx.dev, plan);
    }
    if (res->status != ATTNRT_OK) {
        fx.api->last_error(res->message, sizeof res->message);
    } else {
        res->stats.struct_size = sizeof res->stats;
        fx.api->last_op_stats(fx.dev, &res->stats);
        float *o = malloc(sizeof(float) * (size_t)T * H * Dv);
        dc_row_to_f32(o, o_dev, qk, (size_t)T * H * Dv, 1.0f);
        double num = 0.0, den = 0.0;
        for (size_t i = 0; i < (size_t)T * H * Dv; i++) {
            num += (o[i] - ref[i]) * (o[i] - ref[i]);
            den += ref[i] * ref[i];
        }
        res->rel_err = den > 0.0 ? sqrt(num / den) : sqrt(num);
        free(o);
    }
    free(q), free(cache), free(ref), free(q_dev), free(c_dev), free(o_dev), free(idx), free(lse_f);
    npu_fx_close(&fx);
    return res->status == ATTNRT_OK ? 0 : -1;
}

static void expect_pass(const mla_case_t *c, const char *what)
{
    mla_result_t r;
    const int rc = run_mla(c, &r);
    if (rc) fprintf(stderr, "%s: %s\n", what, r.message);
    assert_int_equal(rc, 0);
    const double tol = dc_kind_of(c->q_dtype) == DC_F32 ? 1e-5 : dc_kind_of(c->q_dtype) == DC_F16 ? 2e-3 : 1e-2;
    printf("%-44s rel err %.2e  %7.1f us  %3llu partitions  %llu bytes\n", what, r.rel_err, r.stats.time_us,
           (unsigned long long)r.stats.partitions, (unsigned long long)r.stats.bytes_moved);
    assert_true(r.rel_err <= tol);
    assert_int_equal(r.stats.op, ATTNRT_OP_MLA);
    assert_true(r.stats.time_us > 0);
}

static void expect_refused(const mla_case_t *c, const char *needle)
{
    mla_result_t r;
    assert_int_not_equal(run_mla(c, &r), 0);
    if (r.status != ATTNRT_ERR_UNSUPPORTED || !strstr(r.message, needle))
        fprintf(stderr, "expected UNSUPPORTED with \"%s\", got %d: %s\n", needle, r.status, r.message);
    assert_int_equal(r.status, ATTNRT_ERR_UNSUPPORTED);
    assert_non_null(strstr(r.message, needle));
}

static void dense_flash_across_partitions(void **state)
{
    (void)state;
    mla_case_t c;
    defaults(&c);
    expect_pass(&c, "dense, flash 3 x 512, f16");
    c.q_lens[2] = 700; /* a prefill over partition edges: its chunks split at 512 and 1024 */
    c.kv_lens[2] = 1500;
    c.sinks = 1;
    expect_pass(&c, "dense prefill across partitions, sinks");
    c.q_dtype = c.kv_dtype = ATTNRT_BF16;
    c.d = 576;
    c.dv = 512;
    c.q_lens[2] = 60; /* positions 990 .. 1049: across the edge at 1024 */
    c.kv_lens[2] = 1050;
    expect_pass(&c, "dense 576 / 512, bf16");
    c.causal = 0;
    c.q_dtype = c.kv_dtype = ATTNRT_F32;
    expect_pass(&c, "dense non-causal, f32");
}

static void dense_naive_and_the_compiled_path(void **state)
{
    (void)state;
    mla_case_t c;
    defaults(&c);
    c.cols = 1;
    c.block = 1024;
    c.kv_lens[1] = 1024;
    c.kv_lens[2] = 900;
    expect_pass(&c, "dense naive, one block of 1024");
    c.front_end = "compiled";
    c.profile = "rbln-atom";
    expect_pass(&c, "dense naive, compiled path, atom");
    c.cols = 2;
    c.kv_lens[1] = 2048;
    c.kv_lens[2] = 1900;
    expect_pass(&c, "dense flash 2 x 1024, compiled path");
}

static void sparse_with_fp8(void **state)
{
    (void)state;
    mla_case_t c;
    defaults(&c);
    c.sparse = 1;
    c.topk = 40;
    c.causal = 0;
    expect_pass(&c, "sparse top-40, f16 cache");
    c.kv_dtype = ATTNRT_FP8_E4M3;
    c.kv_scale = 0.5f;
    expect_pass(&c, "sparse, fp8 e4m3 latent cache");
    c.kv_dtype = ATTNRT_FP8_E5M2;
    c.d = 576;
    c.dv = 512;
    c.topk = 300; /* more than a tile in one partition */
    c.sinks = 1;
    c.q_lens[2] = 40;
    expect_pass(&c, "sparse 576 / 512, e5m2, top-300, sinks");
    c.profile = "rbln-atom";
    c.block = 1024;
    c.cols = 2;
    c.kv_lens[1] = 2000;
    expect_pass(&c, "sparse, atom, 2 x 1024");
}

static void refusals(void **state)
{
    (void)state;
    mla_case_t c;
    defaults(&c);
    c.kv_dtype = ATTNRT_FP8_E4M3;
    expect_refused(&c, "FP8 KV cache is supported only in Sparse MLA; Dense MLA does not support it.");
    c.kv_dtype = ATTNRT_F16;
    c.lse = 1;
    expect_refused(&c, "no log-sum-exp");
    c.lse = 0;
    c.block = 64;
    c.cols = 20;
    expect_refused(&c, "block_size (64) must be a power of two within the supported range for Rebel100");
    c.front_end = "compiled";
    expect_refused(&c, "`kvcache_partition_len` (64) is out of the supported range for 'flash_attn'");
}

static void counters_follow_the_partitions(void **state)
{
    (void)state;
    mla_case_t c;
    defaults(&c);
    c.num_seqs = 1;
    c.q_lens[0] = 1;
    mla_result_t r1, r3;
    c.kv_lens[0] = 100;
    assert_int_equal(run_mla(&c, &r1), 0);
    c.kv_lens[0] = 1300;
    assert_int_equal(run_mla(&c, &r3), 0);
    /* a decode row visits ceil(pos / 512) partitions, each read whole: one latent row of 64 f16 per token */
    assert_int_equal(r1.stats.partitions, 1);
    assert_int_equal(r3.stats.partitions, 3);
    assert_true(r3.stats.bytes_moved - r1.stats.bytes_moved == 2 * 512 * 64 * 2);
    assert_true(r3.stats.time_us > r1.stats.time_us);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense_flash_across_partitions),
        cmocka_unit_test(dense_naive_and_the_compiled_path),
        cmocka_unit_test(sparse_with_fp8),
        cmocka_unit_test(refusals),
        cmocka_unit_test(counters_follow_the_partitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
