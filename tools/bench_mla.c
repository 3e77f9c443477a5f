/* bench_mla.c — attnrt-bench's MLA decode: B requests of one token, `heads` query heads over `ctx`
 * latent rows of head_dim columns (576 for DeepSeek) in shuffled blocks of block_size, values the first
 * v_dim (512) columns; dense (causal) or sparse with --topk (each token's top-k distinct positions).
 * Bytes: every latent row the op must read once (dense: ctx per request; sparse: topk), plus q in and
 * out back. FLOPs: 2 * Hq * (kv_dim + v_dim) per (query, key) pair. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct mla_bench {
    attnrt_tensor_t q, kv, bt, qsl, sl, out, idx, scale;
    attnrt_mla_args_t args;
    attnrt_batch_host_t batch;
    int32_t *qsl_h, *sl_h, *bt_h, *idx_h;
    bench_res_t res;
} mla_bench_t;

static int run_mla(attnrt_context_t *ctx, void *what, attnrt_stream_t *stream)
{
    mla_bench_t *s = what;
    (void)ctx;
    return attnrt_mla_run(s->res.plan, &s->args, s->res.ws, s->res.ws_bytes, stream) == ATTNRT_OK ? 0 : -1;
}

static uint64_t mla_rng = 0x2545f4914f6cdd1dull;
static uint64_t next_rand(void)
{
    mla_rng ^= mla_rng << 13, mla_rng ^= mla_rng >> 7, mla_rng ^= mla_rng << 17;
    return mla_rng;
}

int bench_mla(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r)
{
    const int64_t B = o->batch, Hq = o->heads, D = o->head_dim, bs = o->block_size, S = o->ctx, K = o->topk;
    const int64_t Dv = o->v_dim ? o->v_dim : (D == 576 ? 512 : D);
    if (Dv > D) {
        fprintf(stderr, "attnrt-bench: mla_decode: --v-dim %lld > --head-dim %lld (the value is a prefix of the latent)\n",
                (long long)Dv, (long long)D);
        return -1;
    }
    mla_bench_t s;
    memset(&s, 0, sizeof s);
    int rc = 0;
    const int64_t nb = (S + bs - 1) / bs, blocks = B * nb;
    s.qsl_h = calloc((size_t)B + 1, sizeof *s.qsl_h);
    s.sl_h = calloc((size_t)B, sizeof *s.sl_h);
    s.bt_h = calloc((size_t)blocks, sizeof *s.bt_h);
    s.idx_h = K > 0 ? calloc((size_t)(B * K), sizeof *s.idx_h) : NULL;
    if (!s.qsl_h || !s.sl_h || !s.bt_h || (K > 0 && !s.idx_h)) {
        fprintf(stderr, "attnrt-bench: mla_decode: out of host memory\n");
        rc = -1;
        goto done;
    }
    for (int64_t i = 0; i < blocks; i++) s.bt_h[i] = (int32_t)i;
    for (int64_t i = blocks - 1; i > 0 && o->shuffled; i--) {
        const int64_t j = (int64_t)(next_rand() % (uint64_t)(i + 1));
        const int32_t t = s.bt_h[i];
        s.bt_h[i] = s.bt_h[j], s.bt_h[j] = t;
    }
    for (int64_t b = 0; b < B; b++) {
        s.qsl_h[b + 1] = (int32_t)(b + 1);
        s.sl_h[b] = (int32_t)S;
        for (int64_t k = 0; k < K; k++) /* distinct positions: a stride through the context from a random start */
            s.idx_h[b * K + k] = K <= S ? (int32_t)((next_rand() % (uint64_t)(S / K > 0 ? S / K : 1)) + k * (S / K))
                                        : (k < S ? (int32_t)k : -1);
    }
    const int64_t keys = K > 0 ? (K < S ? K : S) : S;
    const double kv_es = (double)attnrt_dtype_size(o->kv_dtype), q_es = (double)attnrt_dtype_size(o->dtype);
    r->bytes = (double)B * (double)keys * (double)D * kv_es + (double)B * (double)Hq * (double)(D + Dv) * q_es;
    r->flops = 2.0 * (double)B * (double)Hq * (double)(D + Dv) * (double)keys;

    const int64_t qshape[3] = {B, Hq, D}, oshape[3] = {B, Hq, Dv}, cshape[4] = {blocks, bs, 1, D};
    const int64_t btshape[2] = {B, nb}, qslshape[1] = {B + 1}, slshape[1] = {B}, ishape[2] = {B, K}, one[1] = {1};
    void *q = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * Hq * D), o->dtype, 0));
    void *kv = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(blocks * bs * D), o->kv_dtype, 0));
    void *out = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * Hq * Dv), o->dtype, 1));
    void *bt = bench_keep(&s.res, bench_dev_copy(ctx, s.bt_h, (size_t)blocks * sizeof(int32_t)));
    void *qsl = bench_keep(&s.res, bench_dev_copy(ctx, s.qsl_h, (size_t)(B + 1) * sizeof(int32_t)));
    void *sl = bench_keep(&s.res, bench_dev_copy(ctx, s.sl_h, (size_t)B * sizeof(int32_t)));
    const float unit = 1.0f;
    void *scale = bench_keep(&s.res, bench_dev_copy(ctx, &unit, sizeof unit));
    void *idx = K > 0 ? bench_keep(&s.res, bench_dev_copy(ctx, s.idx_h, (size_t)(B * K) * sizeof(int32_t))) : NULL;
    if (s.res.nbufs != (K > 0 ? 8 : 7)) {
        fprintf(stderr, "attnrt-bench: mla_decode: cannot allocate the device buffers: %s\n", attnrt_last_error());
        rc = -1;
        goto done;
    }
    BENCH_CHECK(attnrt_tensor_init(&s.q, q, o->dtype, 3, qshape), "query");
    BENCH_CHECK(attnrt_tensor_init(&s.out, out, o->dtype, 3, oshape), "out");
    BENCH_CHECK(attnrt_tensor_init(&s.kv, kv, o->kv_dtype, 4, cshape), "kv_cache");
    BENCH_CHECK(attnrt_tensor_init(&s.bt, bt, ATTNRT_I32, 2, btshape), "block_table");
    BENCH_CHECK(attnrt_tensor_init(&s.qsl, qsl, ATTNRT_I32, 1, qslshape), "query_start_loc");
    BENCH_CHECK(attnrt_tensor_init(&s.sl, sl, ATTNRT_I32, 1, slshape), "seq_lens");
    BENCH_CHECK(attnrt_tensor_init(&s.scale, scale, ATTNRT_F32, 1, one), "kv_scale");
    if (K > 0) BENCH_CHECK(attnrt_tensor_init(&s.idx, idx, ATTNRT_I32, 2, ishape), "indices");
    s.args = (attnrt_mla_args_t){.struct_size = sizeof s.args, .query = &s.q, .kv_cache = &s.kv, .block_table = &s.bt,
                                 .query_start_loc = &s.qsl, .seq_lens = &s.sl, .out = &s.out,
                                 .kv_scale = o->kv_dtype.bits == 8 ? &s.scale : NULL, .indices = K > 0 ? &s.idx : NULL,
                                 .scale = (float)(1.0 / sqrt(192.0)), .causal = o->causal};
    s.batch = (attnrt_batch_host_t){.struct_size = sizeof s.batch, .num_seqs = (int32_t)B, .query_start_loc = s.qsl_h,
                                    .seq_lens = s.sl_h, .block_table = s.bt_h, .block_table_stride = nb};
    BENCH_CHECK(attnrt_mla_plan(ctx, &s.args, &s.batch, &s.res.plan), "attnrt_mla_plan");
    BENCH_CHECK(bench_res_workspace(ctx, &s.res), "workspace");
    rc = bench_time(ctx, o, run_mla, &s, c, r);
done:
    bench_res_free(ctx, &s.res);
    free(s.qsl_h), free(s.sl_h), free(s.bt_h), free(s.idx_h);
    return rc;
}
