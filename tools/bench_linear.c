/* bench_linear.c — attnrt-bench's lightning and gated-delta (GDN) decode: B requests of one token, each
 * with its own slot of an f32 state pool [B, HV, Dk, Dv] (HV = heads; GDN key heads = kv-heads,
 * lightning: as many as HV), has_initial_state = 1, so every run reads each state and writes it back.
 * Bytes: the state read + written (2 x 4 B x B x HV x Dk x Dv) plus q, k, v, out (and g, beta): the
 * floor of what a decode step must move. FLOPs: per (request, head) 4 Dk Dv (lightning: update and
 * q S) or 6 Dk Dv (GDN: decay, S^T k, rank-1 update, S^T q). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct lin_bench {
    int gdn;
    attnrt_tensor_t q, k, v, out, g, beta, slopes, state, qsl, idx, init;
    attnrt_lightning_args_t la;
    attnrt_gated_delta_args_t ga;
    attnrt_batch_host_t batch;
    attnrt_state_host_t states;
    attnrt_state_pool_t *pool;
    int32_t *qsl_h, *idx_h;
    uint8_t *init_h;
    bench_res_t res;
} lin_bench_t;

static int run_linear(attnrt_context_t *ctx, void *what, attnrt_stream_t *stream)
{
    lin_bench_t *s = what;
    (void)ctx;
    const attnrt_status_t st = s->gdn ? attnrt_gated_delta_run(s->res.plan, &s->ga, s->res.ws, s->res.ws_bytes, stream)
                                      : attnrt_lightning_run(s->res.plan, &s->la, s->res.ws, s->res.ws_bytes, stream);
    return st == ATTNRT_OK ? 0 : -1;
}

int bench_linear(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r)
{
    lin_bench_t s;
    memset(&s, 0, sizeof s);
    s.gdn = o->op == BENCH_GDN_DECODE;
    const int64_t B = o->batch, HV = o->heads, H = s.gdn ? o->kv_heads : o->heads, Dk = o->head_dim;
    const int64_t Dv = o->v_dim ? o->v_dim : Dk;
    const char *name = s.gdn ? "gdn_decode" : "lightning_decode";
    int rc = 0;
    if (B > INT32_MAX) {
        fprintf(stderr, "attnrt-bench: %s: --batch %lld is more slots than a pool holds\n", name, (long long)B);
        return -1;
    }
    s.qsl_h = calloc((size_t)B + 1, sizeof *s.qsl_h);
    s.idx_h = calloc((size_t)B, sizeof *s.idx_h);
    s.init_h = calloc((size_t)B, sizeof *s.init_h);
    if (!s.qsl_h || !s.idx_h || !s.init_h) {
        fprintf(stderr, "attnrt-bench: %s: out of host memory\n", name);
        rc = -1;
        goto done;
    }
    const int64_t slot_shape[3] = {HV, Dk, Dv};
    BENCH_CHECK(attnrt_state_pool_create(ctx, ATTNRT_F32, 3, slot_shape, (int32_t)B, &s.pool), "attnrt_state_pool_create");
    for (int64_t b = 0; b < B; b++) {
        int32_t slot = -1;
        BENCH_CHECK(attnrt_state_slot_alloc(s.pool, &slot), "attnrt_state_slot_alloc");
        BENCH_CHECK(attnrt_state_slot_zero(s.pool, slot, NULL), "attnrt_state_slot_zero");
        s.idx_h[b] = slot;
        s.qsl_h[b + 1] = (int32_t)(b + 1);
        s.init_h[b] = 1;
    }
    BENCH_CHECK(attnrt_state_pool_tensor(s.pool, &s.state), "attnrt_state_pool_tensor");

    const double es = (double)attnrt_dtype_size(o->dtype);
    r->bytes = 2.0 * 4.0 * (double)B * (double)HV * (double)Dk * (double)Dv +
               (double)B * (2.0 * (double)H * (double)Dk + 2.0 * (double)HV * (double)Dv) * es +
               (s.gdn ? 2.0 * (double)B * (double)HV * es : 0.0);
    r->flops = (s.gdn ? 6.0 : 4.0) * (double)B * (double)HV * (double)Dk * (double)Dv;

    const int64_t qk[3] = {B, H, Dk}, vo[3] = {B, HV, Dv}, gb[2] = {B, HV}, hs[1] = {H}, qs[1] = {B + 1}, bs[1] = {B};
    void *q = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * H * Dk), o->dtype, 0));
    void *k = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * H * Dk), o->dtype, 0));
    void *v = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * HV * Dv), o->dtype, 0));
    void *out = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * HV * Dv), o->dtype, 1));
    /* g = log decay <= 0 and beta in [0, 1] keep the GDN state bounded over many runs: zeros do */
    void *g = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * HV), o->dtype, 1));
    void *beta = bench_keep(&s.res, bench_dev_random(ctx, (size_t)(B * HV), o->dtype, 1));
    void *slopes = bench_keep(&s.res, bench_dev_random(ctx, (size_t)H, ATTNRT_F32, 1));
    void *qsl = bench_keep(&s.res, bench_dev_copy(ctx, s.qsl_h, (size_t)(B + 1) * sizeof(int32_t)));
    void *idx = bench_keep(&s.res, bench_dev_copy(ctx, s.idx_h, (size_t)B * sizeof(int32_t)));
    void *init = bench_keep(&s.res, bench_dev_copy(ctx, s.init_h, (size_t)B));
    if (s.res.nbufs != 10) {
        fprintf(stderr, "attnrt-bench: %s: cannot allocate the device buffers: %s\n", name, attnrt_last_error());
        rc = -1;
        goto done;
    }
    BENCH_CHECK(attnrt_tensor_init(&s.q, q, o->dtype, 3, qk), "query");
    BENCH_CHECK(attnrt_tensor_init(&s.k, k, o->dtype, 3, qk), "key");
    BENCH_CHECK(attnrt_tensor_init(&s.v, v, o->dtype, 3, vo), "value");
    BENCH_CHECK(attnrt_tensor_init(&s.out, out, o->dtype, 3, vo), "out");
    BENCH_CHECK(attnrt_tensor_init(&s.g, g, o->dtype, 2, gb), "g");
    BENCH_CHECK(attnrt_tensor_init(&s.beta, beta, o->dtype, 2, gb), "beta");
    BENCH_CHECK(attnrt_tensor_init(&s.slopes, slopes, ATTNRT_F32, 1, hs), "slopes");
    BENCH_CHECK(attnrt_tensor_init(&s.qsl, qsl, ATTNRT_I32, 1, qs), "query_start_loc");
    BENCH_CHECK(attnrt_tensor_init(&s.idx, idx, ATTNRT_I32, 1, bs), "state_indices");
    BENCH_CHECK(attnrt_tensor_init(&s.init, init, ATTNRT_U8, 1, bs), "has_initial_state");
    s.batch = (attnrt_batch_host_t){.struct_size = sizeof s.batch, .num_seqs = (int32_t)B, .query_start_loc = s.qsl_h};
    s.states = (attnrt_state_host_t){.struct_size = sizeof s.states, .state_indices = s.idx_h,
                                     .has_initial_state = s.init_h};
    if (s.gdn) {
        s.ga = (attnrt_gated_delta_args_t){.struct_size = sizeof s.ga, .query = &s.q, .key = &s.k, .value = &s.v,
                                           .g = &s.g, .beta = &s.beta, .out = &s.out, .state = &s.state,
                                           .query_start_loc = &s.qsl, .state_indices = &s.idx,
                                           .has_initial_state = &s.init, .use_l2norm = 1};
        BENCH_CHECK(attnrt_gated_delta_plan(ctx, &s.ga, &s.batch, &s.states, s.pool, &s.res.plan), "attnrt_gated_delta_plan");
    } else {
        s.la = (attnrt_lightning_args_t){.struct_size = sizeof s.la, .query = &s.q, .key = &s.k, .value = &s.v,
                                         .out = &s.out, .slopes = &s.slopes, .state = &s.state,
                                         .query_start_loc = &s.qsl, .state_indices = &s.idx,
                                         .has_initial_state = &s.init};
        BENCH_CHECK(attnrt_lightning_plan(ctx, &s.la, &s.batch, &s.states, s.pool, &s.res.plan), "attnrt_lightning_plan");
    }
    BENCH_CHECK(bench_res_workspace(ctx, &s.res), "workspace");
    rc = bench_time(ctx, o, run_linear, &s, c, r);
done:
    bench_res_free(ctx, &s.res);
    if (s.pool) attnrt_state_pool_destroy(s.pool);
    free(s.qsl_h), free(s.idx_h), free(s.init_h);
    return rc;
}
