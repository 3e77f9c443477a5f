/* Zero means default: an args struct from its ATTNRT_*_INIT macro plus only the required fields computes
 * the op's plain form (no window, no soft-cap, no sinks, scale 1/sqrt(head_dim), not causal, no L2
 * norm), checked against the float64 reference on fresh random inputs with every output poisoned (NaN)
 * before the run. MLA's scale is required and set. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "reference.h"
#include "struct_sizes_util.h"

static double *to_double(const float *x, size_t n)
{
    double *d = malloc(n * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

static float *download_f32(sz_mem_t *m, const void *dev, size_t n)
{
    float *h = malloc(n * sizeof *h);
    assert_non_null(h);
    sz_download(m, h, dev, n * sizeof *h);
    return h;
}

/* Runs a plan the caller made (`planned`: its status) with a workspace of the planned size; destroys it. */
static void run_plan(attnrt_context_t *ctx, attnrt_status_t planned, attnrt_plan_t *plan, const char *what,
                     attnrt_status_t (*run)(attnrt_plan_t *, const void *, void *, size_t, attnrt_stream_t *),
                     const void *args)
{
    if (planned != ATTNRT_OK) fail_msg("%s plan: %s: %s", what, attnrt_status_name(planned), attnrt_last_error());
    size_t bytes = 0;
    OPS_OK(attnrt_plan_workspace_size(plan, &bytes));
    void *ws = NULL;
    if (bytes) OPS_OK(attnrt_mem_alloc(ctx, bytes, &ws));
    attnrt_status_t st = run(plan, args, ws, bytes, NULL);
    if (ws) OPS_OK(attnrt_mem_free(ctx, ws));
    OPS_OK(attnrt_plan_destroy(plan));
    if (st != ATTNRT_OK) fail_msg("%s run: %s: %s", what, attnrt_status_name(st), attnrt_last_error());
}

static attnrt_status_t mla_run(attnrt_plan_t *p, const void *a, void *w, size_t n, attnrt_stream_t *s)
{
    return attnrt_mla_run(p, a, w, n, s);
}
static attnrt_status_t lightning_run(attnrt_plan_t *p, const void *a, void *w, size_t n, attnrt_stream_t *s)
{
    return attnrt_lightning_run(p, a, w, n, s);
}
static attnrt_status_t gated_delta_run(attnrt_plan_t *p, const void *a, void *w, size_t n, attnrt_stream_t *s)
{
    return attnrt_gated_delta_run(p, a, w, n, s);
}

/* ---- paged attention ---- */

static void attention_init_is_plain_attention(void **state)
{
    ops_fixture_t *f = *state;
    sz_attention_t p;
    sz_attention_make(&p, f->ctx);
    const size_t n = (size_t)p.T * SZ_HQ * SZ_D;
    float *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want);
    assert_true(got && want);
    sz_attention_run(&p, &p.args, &p.batch, got); /* ATTNRT_ATTENTION_ARGS_INIT + the required tensors */
    sz_attention_reference(&p, 0, want);
    sz_expect_close("ATTNRT_ATTENTION_ARGS_INIT attention", got, want, n, 2e-5);
    /* memset(0) with struct_size set is the same struct */
    attnrt_attention_args_t zeroed;
    memset(&zeroed, 0, sizeof zeroed);
    zeroed.struct_size = sizeof zeroed;
    zeroed.query = p.args.query;
    zeroed.key_cache = p.args.key_cache;
    zeroed.value_cache = p.args.value_cache;
    zeroed.block_table = p.args.block_table;
    zeroed.query_start_loc = p.args.query_start_loc;
    zeroed.seq_lens = p.args.seq_lens;
    zeroed.out = p.args.out;
    sz_attention_run(&p, &zeroed, &p.batch, got);
    sz_expect_close("zero-filled attention args", got, want, n, 2e-5);
    free(got);
    free(want);
    sz_attention_free(&p);
}

/* ---- kv_write ---- */

enum { KV_T = 7, KV_H = 2, KV_D = 16, KV_BLOCK = 4, KV_BLOCKS = 5, KV_SLOTS = KV_BLOCK * KV_BLOCKS };

static void kv_write_init_writes_the_rows(void **state)
{
    ops_fixture_t *f = *state;
    sz_mem_t m = {.ctx = f->ctx};
    const size_t nkv = (size_t)KV_T * KV_H * KV_D, nc = (size_t)KV_SLOTS * KV_H * KV_D;
    float hk[KV_T * KV_H * KV_D], hv[KV_T * KV_H * KV_D];
    int64_t slots[KV_T];
    int32_t perm[KV_SLOTS];
    for (int i = 0; i < KV_SLOTS; i++) perm[i] = i;
    for (int i = KV_SLOTS - 1; i > 0; i--) {
        int j = sz_rand_int(0, i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (int t = 0; t < KV_T; t++) slots[t] = perm[t];
    slots[sz_rand_int(0, KV_T - 1)] = -1; /* one padding token */
    const int64_t kv[3] = {KV_T, KV_H, KV_D}, cache[4] = {KV_BLOCKS, KV_BLOCK, KV_H, KV_D}, tok[1] = {KV_T};
    attnrt_tensor_t key, value, slot_mapping, key_cache, value_cache;
    sz_tensor(&key, sz_random_f32(&m, nkv, -1.0f, 1.0f, hk), ATTNRT_F32, 3, kv);
    sz_tensor(&value, sz_random_f32(&m, nkv, -1.0f, 1.0f, hv), ATTNRT_F32, 3, kv);
    sz_tensor(&slot_mapping, sz_upload(&m, slots, sizeof slots), ATTNRT_I64, 1, tok);
    sz_tensor(&key_cache, sz_nan_f32(&m, nc), ATTNRT_F32, 4, cache);
    sz_tensor(&value_cache, sz_nan_f32(&m, nc), ATTNRT_F32, 4, cache);
    attnrt_kv_write_args_t args = ATTNRT_KV_WRITE_ARGS_INIT;
    args.key = &key;
    args.value = &value;
    args.slot_mapping = &slot_mapping;
    args.key_cache = &key_cache;
    args.value_cache = &value_cache;
    OPS_OK(attnrt_kv_write(f->ctx, &args, NULL));

    double *k = to_double(hk, nkv), *v = to_double(hv, nkv);
    double *kc = malloc(nc * sizeof *kc), *vc = malloc(nc * sizeof *vc);
    assert_true(kc && vc);
    for (size_t i = 0; i < nc; i++) kc[i] = vc[i] = NAN;
    ref_kv_write(KV_T, KV_H, KV_D, KV_D, k, v, slots, KV_BLOCK, kc, vc);
    float *gk = download_f32(&m, key_cache.data, nc), *gv = download_f32(&m, value_cache.data, nc);
    for (size_t i = 0; i < nc; i++) {
        /* rows no slot names keep their NaN; written rows are exact f32 copies */
        if (isnan(kc[i]) != isnan(gk[i]) || (!isnan(kc[i]) && (double)gk[i] != kc[i]))
            fail_msg("key_cache element %zu is %.9g, the reference says %.9g", i, (double)gk[i], kc[i]);
        if (isnan(vc[i]) != isnan(gv[i]) || (!isnan(vc[i]) && (double)gv[i] != vc[i]))
            fail_msg("value_cache element %zu is %.9g, the reference says %.9g", i, (double)gv[i], vc[i]);
    }
    free(k);
    free(v);
    free(kc);
    free(vc);
    free(gk);
    free(gv);
    sz_mem_free(&m);
}

/* ---- merge ---- */

enum { MG_T = 5, MG_H = 3, MG_D = 16 };

static void merge_init_merges_without_sinks(void **state)
{
    ops_fixture_t *f = *state;
    sz_mem_t m = {.ctx = f->ctx};
    const size_t no = (size_t)MG_T * MG_H * MG_D, ns = (size_t)MG_T * MG_H;
    float ho[2][MG_T * MG_H * MG_D], hs[2][MG_T * MG_H];
    const int64_t o_shape[3] = {MG_T, MG_H, MG_D}, s_shape[2] = {MG_T, MG_H};
    attnrt_tensor_t o[2], s[2], out;
    for (int i = 0; i < 2; i++) {
        sz_tensor(&o[i], sz_random_f32(&m, no, -1.0f, 1.0f, ho[i]), ATTNRT_F32, 3, o_shape);
        sz_tensor(&s[i], sz_random_f32(&m, ns, -4.0f, 4.0f, hs[i]), ATTNRT_F32, 2, s_shape);
    }
    sz_tensor(&out, sz_nan_f32(&m, no), ATTNRT_F32, 3, o_shape);
    const attnrt_tensor_t *states[2] = {&o[0], &o[1]}, *lses[2] = {&s[0], &s[1]};
    attnrt_merge_args_t args = ATTNRT_MERGE_ARGS_INIT;
    args.num_states = 2;
    args.states = states;
    args.lses = lses;
    args.out = &out;
    OPS_OK(attnrt_merge_states(f->ctx, &args, NULL));

    double *od = malloc(2 * no * sizeof *od), *sd = malloc(2 * ns * sizeof *sd), *want = malloc(no * sizeof *want);
    assert_true(od && sd && want);
    for (int i = 0; i < 2; i++) {
        for (size_t j = 0; j < no; j++) od[i * no + j] = ho[i][j];
        for (size_t j = 0; j < ns; j++) sd[i * ns + j] = hs[i][j];
    }
    ref_merge_states(2, MG_T, MG_H, MG_D, od, sd, want, NULL);
    float *got = download_f32(&m, out.data, no);
    sz_expect_close("ATTNRT_MERGE_ARGS_INIT merge", got, want, no, 2e-5);
    free(od);
    free(sd);
    free(want);
    free(got);
    sz_mem_free(&m);
}

/* ---- MLA ---- */

enum { ML_B = 2, ML_HQ = 4, ML_KV = 24, ML_V = 16, ML_BLOCK = 4, ML_MAXB = 4, ML_BLOCKS = ML_B * ML_MAXB + 1 };

static void mla_init_with_its_scale_is_plain_mla(void **state)
{
    ops_fixture_t *f = *state;
    sz_mem_t m = {.ctx = f->ctx};
    int32_t qsl[ML_B + 1] = {0}, seq[ML_B], table[ML_B * ML_MAXB];
    for (int b = 0; b < ML_B; b++) {
        int32_t len = b == 0 ? 1 : sz_rand_int(2, 6);
        qsl[b + 1] = qsl[b] + len;
        seq[b] = len + sz_rand_int(0, ML_MAXB * ML_BLOCK - len);
    }
    for (int i = 0; i < ML_B * ML_MAXB; i++) table[i] = ML_BLOCKS - 1 - i; /* reversed: never the identity */
    const int32_t T = qsl[ML_B];
    const size_t nq = (size_t)T * ML_HQ * ML_KV, nc = (size_t)ML_BLOCKS * ML_BLOCK * ML_KV;
    const size_t no = (size_t)T * ML_HQ * ML_V;
    float *hq = malloc(nq * sizeof *hq), *hc = malloc(nc * sizeof *hc);
    assert_true(hq && hc);
    const int64_t q_shape[3] = {T, ML_HQ, ML_KV}, c_shape[4] = {ML_BLOCKS, ML_BLOCK, 1, ML_KV};
    const int64_t t_shape[2] = {ML_B, ML_MAXB}, qsl_shape[1] = {ML_B + 1}, seq_shape[1] = {ML_B};
    const int64_t o_shape[3] = {T, ML_HQ, ML_V};
    attnrt_tensor_t query, cache, block_table, query_start_loc, seq_lens, out;
    sz_tensor(&query, sz_random_f32(&m, nq, -1.0f, 1.0f, hq), ATTNRT_F32, 3, q_shape);
    sz_tensor(&cache, sz_random_f32(&m, nc, -1.0f, 1.0f, hc), ATTNRT_F32, 4, c_shape);
    sz_tensor(&block_table, sz_upload(&m, table, sizeof table), ATTNRT_I32, 2, t_shape);
    sz_tensor(&query_start_loc, sz_upload(&m, qsl, sizeof qsl), ATTNRT_I32, 1, qsl_shape);
    sz_tensor(&seq_lens, sz_upload(&m, seq, sizeof seq), ATTNRT_I32, 1, seq_shape);
    sz_tensor(&out, sz_nan_f32(&m, no), ATTNRT_F32, 3, o_shape);
    attnrt_mla_args_t args = ATTNRT_MLA_ARGS_INIT;
    args.query = &query;
    args.kv_cache = &cache;
    args.block_table = &block_table;
    args.query_start_loc = &query_start_loc;
    args.seq_lens = &seq_lens;
    args.out = &out;
    args.scale = sz_rand(0.1f, 0.5f);
    attnrt_batch_host_t batch = ATTNRT_BATCH_HOST_INIT;
    batch.num_seqs = ML_B;
    batch.query_start_loc = qsl;
    batch.seq_lens = seq;
    batch.block_table = table;
    batch.block_table_stride = ML_MAXB;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_mla_plan(f->ctx, &args, &batch, &plan);
    run_plan(f->ctx, st, plan, "ATTNRT_MLA_ARGS_INIT mla", mla_run, &args);

    double *q = to_double(hq, nq), *c = to_double(hc, nc), *want = malloc(no * sizeof *want);
    assert_non_null(want);
    ref_mla_problem r = {
        .num_seqs = ML_B, .query_start_loc = qsl, .seq_lens = seq, .num_q_heads = ML_HQ, .kv_dim = ML_KV,
        .v_dim = ML_V, .q = q, .kv_cache = c, .num_blocks = ML_BLOCKS, .block_size = ML_BLOCK,
        .block_table = table, .max_blocks_per_seq = ML_MAXB, .scale = args.scale, .out = want,
    };
    ref_mla(&r);
    float *got = download_f32(&m, out.data, no);
    sz_expect_close("ATTNRT_MLA_ARGS_INIT mla", got, want, no, 2e-5);
    free(q);
    free(c);
    free(want);
    free(got);
    free(hq);
    free(hc);
    sz_mem_free(&m);
}

/* ---- lightning and gated delta ---- */

enum { LN_B = 2, LN_H = 2, LN_HV = 4, LN_DK = 8, LN_DV = 4, LN_SLOTS = 3 };

typedef struct linear_problem {
    sz_mem_t            m;
    int32_t             qsl[LN_B + 1], idx[LN_B], T;
    uint8_t             init[LN_B];
    attnrt_tensor_t     qsl_t, idx_t, init_t, state;
    attnrt_state_pool_t *pool;
    attnrt_batch_host_t batch;
    attnrt_state_host_t states;
} linear_problem_t;

/* Two requests (a decode and a prefill) in slots 1 and 0, both starting from a zero state. */
static void linear_make(linear_problem_t *p, attnrt_context_t *ctx, int32_t heads)
{
    memset(p, 0, sizeof *p);
    p->m.ctx = ctx;
    p->qsl[1] = 1;
    p->qsl[2] = 1 + sz_rand_int(2, 9);
    p->T = p->qsl[LN_B];
    p->idx[0] = 1;
    p->idx[1] = 0;
    const int64_t slot[3] = {heads, LN_DK, LN_DV}, per_seq[1] = {LN_B}, qsl_shape[1] = {LN_B + 1};
    OPS_OK(attnrt_state_pool_create(ctx, ATTNRT_F32, 3, slot, LN_SLOTS, &p->pool));
    for (int i = 0; i < LN_SLOTS; i++) {
        int32_t s = -1;
        OPS_OK(attnrt_state_slot_alloc(p->pool, &s));
    }
    OPS_OK(attnrt_state_pool_tensor(p->pool, &p->state));
    size_t pool_floats = (size_t)LN_SLOTS * heads * LN_DK * LN_DV;
    float *nan = malloc(pool_floats * sizeof *nan);
    assert_non_null(nan);
    for (size_t i = 0; i < pool_floats; i++) nan[i] = NAN; /* has_initial_state 0: never read */
    OPS_OK(attnrt_mem_copy_to_device(ctx, p->state.data, nan, pool_floats * sizeof *nan, NULL));
    free(nan);
    sz_tensor(&p->qsl_t, sz_upload(&p->m, p->qsl, sizeof p->qsl), ATTNRT_I32, 1, qsl_shape);
    sz_tensor(&p->idx_t, sz_upload(&p->m, p->idx, sizeof p->idx), ATTNRT_I32, 1, per_seq);
    sz_tensor(&p->init_t, sz_upload(&p->m, p->init, sizeof p->init), ATTNRT_U8, 1, per_seq);
    p->batch = (attnrt_batch_host_t)ATTNRT_BATCH_HOST_INIT;
    p->batch.num_seqs = LN_B;
    p->batch.query_start_loc = p->qsl;
    p->states = (attnrt_state_host_t)ATTNRT_STATE_HOST_INIT;
    p->states.state_indices = p->idx;
    p->states.has_initial_state = p->init;
}

static void linear_free(linear_problem_t *p)
{
    OPS_OK(attnrt_state_pool_destroy(p->pool));
    sz_mem_free(&p->m);
}

/* The requests' final states against the reference's pool. */
static void expect_states(linear_problem_t *p, const double *ref_pool, int32_t heads, const char *what)
{
    size_t per_slot = (size_t)heads * LN_DK * LN_DV, n = LN_SLOTS * per_slot;
    float *got = download_f32(&p->m, p->state.data, n);
    for (int b = 0; b < LN_B; b++) {
        size_t at = (size_t)p->idx[b] * per_slot;
        sz_expect_close(what, got + at, ref_pool + at, per_slot, 2e-5);
    }
    free(got);
}

static void lightning_init_runs_the_recurrence(void **state)
{
    ops_fixture_t *f = *state;
    linear_problem_t p;
    linear_make(&p, f->ctx, LN_H);
    const size_t nk = (size_t)p.T * LN_H * LN_DK, nv = (size_t)p.T * LN_H * LN_DV;
    float *hq = malloc(nk * sizeof *hq), *hk = malloc(nk * sizeof *hk), *hv = malloc(nv * sizeof *hv), hs[LN_H];
    assert_true(hq && hk && hv);
    const int64_t qk[3] = {p.T, LN_H, LN_DK}, v_shape[3] = {p.T, LN_H, LN_DV}, heads[1] = {LN_H};
    attnrt_tensor_t q, k, v, out, slopes;
    sz_tensor(&q, sz_random_f32(&p.m, nk, -1.0f, 1.0f, hq), ATTNRT_F32, 3, qk);
    sz_tensor(&k, sz_random_f32(&p.m, nk, -1.0f, 1.0f, hk), ATTNRT_F32, 3, qk);
    sz_tensor(&v, sz_random_f32(&p.m, nv, -1.0f, 1.0f, hv), ATTNRT_F32, 3, v_shape);
    sz_tensor(&slopes, sz_random_f32(&p.m, LN_H, 0.05f, 1.5f, hs), ATTNRT_F32, 1, heads);
    sz_tensor(&out, sz_nan_f32(&p.m, nv), ATTNRT_F32, 3, v_shape);
    attnrt_lightning_args_t args = ATTNRT_LIGHTNING_ARGS_INIT;
    args.query = &q;
    args.key = &k;
    args.value = &v;
    args.out = &out;
    args.slopes = &slopes;
    args.state = &p.state;
    args.query_start_loc = &p.qsl_t;
    args.state_indices = &p.idx_t;
    args.has_initial_state = &p.init_t;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_lightning_plan(f->ctx, &args, &p.batch, &p.states, p.pool, &plan);
    run_plan(f->ctx, st, plan, "ATTNRT_LIGHTNING_ARGS_INIT lightning", lightning_run, &args);

    const size_t pool_n = (size_t)LN_SLOTS * LN_H * LN_DK * LN_DV;
    double *dq = to_double(hq, nk), *dk = to_double(hk, nk), *dv = to_double(hv, nv), *ds = to_double(hs, LN_H);
    double *pool = calloc(pool_n, sizeof *pool), *want = malloc(nv * sizeof *want);
    assert_true(pool && want);
    ref_lightning(LN_B, p.qsl, p.idx, p.init, LN_H, LN_DK, LN_DV, ds, dq, dk, dv, pool, want);
    float *got = download_f32(&p.m, out.data, nv);
    sz_expect_close("ATTNRT_LIGHTNING_ARGS_INIT lightning out", got, want, nv, 2e-5);
    expect_states(&p, pool, LN_H, "ATTNRT_LIGHTNING_ARGS_INIT lightning final states");
    free(got);
    free(dq);
    free(dk);
    free(dv);
    free(ds);
    free(pool);
    free(want);
    free(hq);
    free(hk);
    free(hv);
    linear_free(&p);
}

static void gated_delta_init_is_unnormalised_with_the_default_scale(void **state)
{
    ops_fixture_t *f = *state;
    linear_problem_t p;
    linear_make(&p, f->ctx, LN_HV);
    const size_t nk = (size_t)p.T * LN_H * LN_DK, nv = (size_t)p.T * LN_HV * LN_DV, ng = (size_t)p.T * LN_HV;
    float *hq = malloc(nk * sizeof *hq), *hk = malloc(nk * sizeof *hk), *hv = malloc(nv * sizeof *hv);
    float *hg = malloc(ng * sizeof *hg), *hb = malloc(ng * sizeof *hb);
    assert_true(hq && hk && hv && hg && hb);
    const int64_t qk[3] = {p.T, LN_H, LN_DK}, v_shape[3] = {p.T, LN_HV, LN_DV}, gate[2] = {p.T, LN_HV};
    attnrt_tensor_t q, k, v, g, beta, out;
    sz_tensor(&q, sz_random_f32(&p.m, nk, -1.0f, 1.0f, hq), ATTNRT_F32, 3, qk);
    sz_tensor(&k, sz_random_f32(&p.m, nk, -1.0f, 1.0f, hk), ATTNRT_F32, 3, qk);
    sz_tensor(&v, sz_random_f32(&p.m, nv, -1.0f, 1.0f, hv), ATTNRT_F32, 3, v_shape);
    sz_tensor(&g, sz_random_f32(&p.m, ng, -1.5f, -0.05f, hg), ATTNRT_F32, 2, gate);
    sz_tensor(&beta, sz_random_f32(&p.m, ng, 0.05f, 1.0f, hb), ATTNRT_F32, 2, gate);
    sz_tensor(&out, sz_nan_f32(&p.m, nv), ATTNRT_F32, 3, v_shape);
    attnrt_gated_delta_args_t args = ATTNRT_GATED_DELTA_ARGS_INIT;
    args.query = &q;
    args.key = &k;
    args.value = &v;
    args.g = &g;
    args.beta = &beta;
    args.out = &out;
    args.state = &p.state;
    args.query_start_loc = &p.qsl_t;
    args.state_indices = &p.idx_t;
    args.has_initial_state = &p.init_t;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_gated_delta_plan(f->ctx, &args, &p.batch, &p.states, p.pool, &plan);
    run_plan(f->ctx, st, plan, "ATTNRT_GATED_DELTA_ARGS_INIT gated delta", gated_delta_run, &args);

    const size_t pool_n = (size_t)LN_SLOTS * LN_HV * LN_DK * LN_DV;
    double *dq = to_double(hq, nk), *dk = to_double(hk, nk), *dv = to_double(hv, nv);
    double *dg = to_double(hg, ng), *db = to_double(hb, ng);
    double *pool = calloc(pool_n, sizeof *pool), *want = malloc(nv * sizeof *want);
    assert_true(pool && want);
    ref_gated_delta(LN_B, p.qsl, p.idx, p.init, LN_H, LN_HV, LN_DK, LN_DV, 0, 1.0 / sqrt((double)LN_DK), dq, dk, dv,
                    dg, db, pool, want, NULL, 0, NULL);
    float *got = download_f32(&p.m, out.data, nv);
    sz_expect_close("ATTNRT_GATED_DELTA_ARGS_INIT gated delta out", got, want, nv, 2e-5);
    expect_states(&p, pool, LN_HV, "ATTNRT_GATED_DELTA_ARGS_INIT gated delta final states");
    free(got);
    free(dq);
    free(dk);
    free(dv);
    free(dg);
    free(db);
    free(pool);
    free(want);
    free(hq);
    free(hk);
    free(hv);
    free(hg);
    free(hb);
    linear_free(&p);
}

int sz_run_zero_default_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(attention_init_is_plain_attention),
        OPS_TEST(kv_write_init_writes_the_rows),
        OPS_TEST(merge_init_merges_without_sinks),
        OPS_TEST(mla_init_with_its_scale_is_plain_mla),
        OPS_TEST(lightning_init_runs_the_recurrence),
        OPS_TEST(gated_delta_init_is_unnormalised_with_the_default_scale),
    };
    return cmocka_run_group_tests_name("zero means default", tests, NULL, NULL);
}
