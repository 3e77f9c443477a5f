/* test_ops_capacity: capacity plans on $ATTNRT_DEVICE (cpu:0 when unset). One plan per capacity, made
 * once; then step after step a new batch (decode only, mixed prefill and decode, fewer requests than
 * the capacity with padded entries, none, one at the capacity's bounds) written into the SAME device
 * tensors, attnrt_plan_update, and runs (two layers: fresh queries and caches each) checked against
 * the float64 reference, with out and lse NaN-poisoned before every run and the rows past the batch's
 * tokens required to keep their poison. Each step's run must also equal what a per-batch plan of that
 * batch computes: bit for bit on cpu (the same work items), within the f32 tolerance elsewhere. Then
 * random batches within each capacity, step after step. The refusals are in test_ops_capacity_refusals.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity_fixture.h"
#include "reference.h"

#define TOL_F32 1e-5 /* docs/semantics.md "Tolerances": relative L2, f32 */

static int on_cpu(const cap_fixture_t *f) { return strncmp(f->device, "cpu:", 4) == 0; }

static size_t row_floats(const cap_fixture_t *f) { return (size_t)f->cfg.num_q_heads * (size_t)f->cfg.head_dim; }

/* Outputs of one run, read back: every row of the capacity. */
typedef struct outputs {
    float *out, *lse;
} outputs_t;

static void outputs_alloc(const cap_fixture_t *f, outputs_t *o)
{
    o->out = malloc((size_t)f->cfg.max_tokens * row_floats(f) * sizeof(float) + 1);
    o->lse = malloc((size_t)f->cfg.max_tokens * (size_t)f->cfg.num_q_heads * sizeof(float) + 1);
    assert_true(o->out && o->lse);
}

static void outputs_free(outputs_t *o)
{
    free(o->out);
    free(o->lse);
}

/* Poisons, runs the capacity plan over the capacity tensors, reads every row back. */
static void run_capacity(cap_fixture_t *f, attnrt_stream_t *stream, outputs_t *o)
{
    cap_poison_outputs(f);
    CAP_OK(attnrt_attention_run(f->plan, &f->args, f->d_ws, f->ws_bytes, stream));
    if (stream) CAP_OK(attnrt_stream_synchronize(f->ctx, stream));
    const cap_config_t *c = &f->cfg;
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, o->out, f->d_out, (size_t)c->max_tokens * row_floats(f) * sizeof(float), NULL));
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, o->lse, f->d_lse, (size_t)c->max_tokens * (size_t)c->num_q_heads * sizeof(float),
                                   NULL));
}

/* Rows from the batch's tokens on keep the poison, bit for bit. */
static void assert_poison_kept(const cap_fixture_t *f, const outputs_t *o, const char *step)
{
    const size_t T = (size_t)cap_batch_tokens(f), rows = (size_t)f->cfg.max_tokens, hq = (size_t)f->cfg.num_q_heads;
    for (size_t i = T * row_floats(f); i < rows * row_floats(f); i++) {
        uint32_t bits;
        memcpy(&bits, &o->out[i], sizeof bits);
        if (bits != CAP_POISON_BITS)
            fail_msg("%s: out row %zu (past the batch's %zu tokens) was written: element %zu is %g", step,
                     i / row_floats(f), T, i, (double)o->out[i]);
    }
    for (size_t i = T * hq; i < rows * hq; i++) {
        uint32_t bits;
        memcpy(&bits, &o->lse[i], sizeof bits);
        if (bits != CAP_POISON_BITS)
            fail_msg("%s: lse row %zu (past the batch's %zu tokens) was written: %g", step, i / hq, T, (double)o->lse[i]);
    }
}

static double *to_double(const float *x, size_t n)
{
    double *d = malloc(n * sizeof *d + 1);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = x[i];
    return d;
}

/* The batch's rows against the float64 reference: out within the f32 tolerance (relative L2), lse within
 * it scaled by 1 + |lse| (as attnrt-conform judges it). */
static void check_reference(const cap_fixture_t *f, const outputs_t *o, const char *step)
{
    const cap_config_t *c = &f->cfg;
    const int n = f->batch.num_seqs, T = cap_batch_tokens(f);
    if (T == 0) return;
    const size_t cache_n = (size_t)c->num_blocks * (size_t)c->block_size * (size_t)c->num_kv_heads * (size_t)c->head_dim;
    double *q = to_double(f->h_query, (size_t)T * row_floats(f));
    double *k = to_double(f->h_key_cache, cache_n), *v = to_double(f->h_value_cache, cache_n);
    double *ref_out = calloc((size_t)T * row_floats(f), sizeof(double));
    double *ref_lse = calloc((size_t)T * (size_t)c->num_q_heads, sizeof(double));
    assert_true(ref_out && ref_lse);
    const ref_attention_problem p = {
        .num_seqs = n, .query_start_loc = f->h_qsl, .seq_lens = f->h_seq_lens,
        .num_q_heads = c->num_q_heads, .num_kv_heads = c->num_kv_heads, .head_dim_qk = c->head_dim,
        .head_dim_v = c->head_dim, .q = q, .k_cache = k, .v_cache = v, .num_blocks = c->num_blocks,
        .block_size = c->block_size, .block_table = f->h_block_table, .max_blocks_per_seq = c->max_blocks,
        .scale = 1.0 / sqrt((double)c->head_dim), .causal = 1, .window_left = -1, .window_right = -1,
        .out = ref_out, .lse = ref_lse,
    };
    ref_paged_attention(&p);
    double err = 0.0, norm = 0.0, lse_err = 0.0;
    size_t lse_at = 0;
    for (size_t i = 0; i < (size_t)T * row_floats(f); i++) {
        const double d = (double)o->out[i] - ref_out[i];
        err += d * d;
        norm += ref_out[i] * ref_out[i];
    }
    for (size_t i = 0; i < (size_t)T * (size_t)c->num_q_heads; i++) {
        const double e = fabs((double)o->lse[i] - ref_lse[i]) / (1.0 + fabs(ref_lse[i]));
        if (!(e <= lse_err)) { /* NaN counts as the worst */
            lse_err = isnan(e) ? INFINITY : e;
            lse_at = i;
        }
    }
    const double rel = sqrt(err) / (sqrt(norm) + 1e-30);
    free(q);
    free(k);
    free(v);
    free(ref_out);
    free(ref_lse);
    if (!(rel <= TOL_F32)) fail_msg("%s: out differs from the float64 reference: relative L2 %.3g > %g", step, rel, TOL_F32);
    if (!(lse_err <= TOL_F32))
        fail_msg("%s: lse[%zu] = %g differs from the reference: error %.3g > %g", step, lse_at, (double)o->lse[lse_at],
                 lse_err, TOL_F32);
}

/* The same batch through attnrt_attention_plan, over views of the batch's shapes on the same device
 * data (rows and requests are prefixes of the capacity tensors), its outputs in buffers of its own.
 * Returns the per-batch plan's workspace bytes. */
static size_t check_per_batch_plan(cap_fixture_t *f, const outputs_t *o, const char *step)
{
    const cap_config_t *c = &f->cfg;
    const int n = f->batch.num_seqs, T = cap_batch_tokens(f);
    if (n == 0) return 0;
    const size_t out_bytes = (size_t)T * row_floats(f) * sizeof(float), lse_bytes = (size_t)T * (size_t)c->num_q_heads * 4;
    void *d_out = NULL, *d_lse = NULL, *d_ws = NULL;
    CAP_OK(attnrt_mem_alloc(f->ctx, out_bytes + 1, &d_out));
    CAP_OK(attnrt_mem_alloc(f->ctx, lse_bytes + 1, &d_lse));
    const int64_t act[3] = {T, c->num_q_heads, c->head_dim}, table[2] = {n, c->max_blocks}, qsl[1] = {n + 1};
    const int64_t seqs[1] = {n}, lse[2] = {T, c->num_q_heads};
    attnrt_tensor_t query, bt, qs, sl, out, ls;
    CAP_OK(attnrt_tensor_init(&query, f->d_query, ATTNRT_F32, 3, act));
    CAP_OK(attnrt_tensor_init(&bt, f->d_block_table, ATTNRT_I32, 2, table));
    CAP_OK(attnrt_tensor_init(&qs, f->d_qsl, ATTNRT_I32, 1, qsl));
    CAP_OK(attnrt_tensor_init(&sl, f->d_seq_lens, ATTNRT_I32, 1, seqs));
    CAP_OK(attnrt_tensor_init(&out, d_out, ATTNRT_F32, 3, act));
    CAP_OK(attnrt_tensor_init(&ls, d_lse, ATTNRT_F32, 2, lse));
    attnrt_attention_args_t args = f->args;
    args.query = &query;
    args.block_table = &bt;
    args.query_start_loc = &qs;
    args.seq_lens = &sl;
    args.out = &out;
    args.lse = &ls;
    attnrt_plan_t *plan = NULL;
    size_t ws = 0;
    CAP_OK(attnrt_attention_plan(f->ctx, &args, &f->batch, &plan));
    CAP_OK(attnrt_plan_workspace_size(plan, &ws));
    if (ws) CAP_OK(attnrt_mem_alloc(f->ctx, ws, &d_ws));
    CAP_OK(attnrt_attention_run(plan, &args, d_ws, ws, NULL));
    float *got = malloc(out_bytes + 1), *got_lse = malloc(lse_bytes + 1);
    assert_true(got && got_lse);
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, got, d_out, out_bytes, NULL));
    CAP_OK(attnrt_mem_copy_to_host(f->ctx, got_lse, d_lse, lse_bytes, NULL));
    CAP_OK(attnrt_plan_destroy(plan));
    CAP_OK(attnrt_mem_free(f->ctx, d_out));
    CAP_OK(attnrt_mem_free(f->ctx, d_lse));
    if (d_ws) CAP_OK(attnrt_mem_free(f->ctx, d_ws));
    double err = 0.0, norm = 0.0;
    int same = memcmp(got, o->out, out_bytes) == 0 && memcmp(got_lse, o->lse, lse_bytes) == 0;
    for (size_t i = 0; i < (size_t)T * row_floats(f); i++) {
        const double d = (double)got[i] - (double)o->out[i];
        err += d * d;
        norm += (double)got[i] * (double)got[i];
    }
    free(got);
    free(got_lse);
    const double rel = sqrt(err) / (sqrt(norm) + 1e-30);
    if (on_cpu(f) && !same)
        fail_msg("%s: the capacity plan's run differs from a per-batch plan's (relative L2 %.3g); on cpu both cut the "
                 "batch into the same work items and must agree bit for bit", step, rel);
    if (!(rel <= TOL_F32))
        fail_msg("%s: the capacity plan's run differs from a per-batch plan's: relative L2 %.3g > %g", step, rel, TOL_F32);
    return ws;
}

/* One engine step: the batch into the capacity tensors, update, then two layers (fresh inputs each),
 * each run checked. Returns the per-batch plan's workspace bytes for the batch. */
static size_t step(cap_fixture_t *f, attnrt_stream_t *stream, const char *name, const cap_request_t *reqs, int n)
{
    cap_write_batch(f, reqs, n);
    CAP_OK(attnrt_plan_update(f->plan, &f->batch, stream));
    outputs_t o;
    outputs_alloc(f, &o);
    size_t per_batch_ws = 0;
    for (int layer = 0; layer < 2; layer++) {
        char what[160];
        snprintf(what, sizeof what, "%s on %s, %d requests, %d tokens, layer %d", name, f->device, n,
                 cap_batch_tokens(f), layer);
        if (layer > 0) cap_refill_inputs(f);
        run_capacity(f, stream, &o);
        assert_poison_kept(f, &o, what);
        check_reference(f, &o, what);
        if (layer == 0) per_batch_ws = check_per_batch_plan(f, &o, what);
    }
    outputs_free(&o);
    return per_batch_ws;
}

/* A seq_len in [lo, hi] for a request of the fixture's stream of random numbers. */
static int32_t pick(cap_fixture_t *f, int32_t lo, int32_t hi)
{
    f->rng ^= f->rng << 13, f->rng ^= f->rng >> 7, f->rng ^= f->rng << 17;
    return lo + (int32_t)((f->rng >> 11) % (uint64_t)(hi - lo + 1));
}

static void small_capacity_replays_five_batches(void **state)
{
    cap_fixture_t *f = *state;
    cap_request_t r[8];
    for (int b = 0; b < 8; b++) r[b] = (cap_request_t){1, pick(f, 1, 256)};
    step(f, NULL, "decode only", r, 8);

    /* a prefill, decodes, a chunked prefill and a speculative run of 4: 41 tokens */
    const cap_request_t mixed[5] = {{20, 20}, {1, pick(f, 2, 256)}, {15, 100}, {1, 256}, {4, 150}};
    step(f, NULL, "mixed prefill and decode", mixed, 5);

    /* 3 of 8 requests: query_start_loc repeats 11 from entry 3 on, seq_lens are 0 there */
    const cap_request_t few[3] = {{1, 37}, {9, 9}, {1, pick(f, 100, 256)}};
    step(f, NULL, "fewer requests than the capacity", few, 3);

    step(f, NULL, "no request", r, 0);

    /* the capacity's bounds: 8 requests, 64 tokens, a request of max_seq_len keys */
    const cap_request_t full[8] = {{16, 256}, {16, 16}, {8, 200}, {8, 8}, {13, 77}, {1, 255}, {1, 1}, {1, 129}};
    step(f, NULL, "a batch at the capacity", full, 8);
}

/* Long requests on a created stream: on cpu (ATTNRT_NUM_THREADS >= 2) decode batches of few requests are
 * split into key ranges whose partial states go to the capacity's workspace. */
static void long_capacity_replays_split_batches(void **state)
{
    cap_fixture_t *f = *state;
    attnrt_stream_t *stream = NULL;
    CAP_OK(attnrt_stream_create(f->ctx, &stream));
    const cap_request_t decode[2] = {{1, 1000}, {1, pick(f, 800, 1024)}};
    const size_t split_ws = step(f, stream, "long decode", decode, 2);
    const cap_request_t mixed[4] = {{1, 1024}, {20, 20}, {4, 700}, {7, 300}};
    step(f, stream, "long mixed", mixed, 4);
    const cap_request_t one[1] = {{1, 777}};
    step(f, stream, "one long decode of four", one, 1);
    const cap_request_t spec[3] = {{15, pick(f, 500, 1024)}, {16, 999}, {1, 513}};
    step(f, stream, "speculative runs", spec, 3);
    CAP_OK(attnrt_stream_destroy(stream));
    if (on_cpu(f)) {
        /* the steps above must have taken the split path, and the capacity's workspace must hold it */
        if (split_ws == 0) fail_msg("cpu: the long decode batch was not split (per-batch workspace 0): the test "
                                    "does not reach split-KV");
        if (f->ws_bytes < split_ws)
            fail_msg("cpu: the capacity plan's workspace (%zu bytes) is smaller than one batch's (%zu)", f->ws_bytes,
                     split_ws);
    }
}

/* Random batches within the capacity, step after step on one plan: request counts from none to the
 * capacity, decodes, speculative runs, prefills and requests without new tokens, any lengths. */
static void random_steps(cap_fixture_t *f, int steps)
{
    const cap_config_t *c = &f->cfg;
    const int32_t max_keys = c->max_blocks * c->block_size;
    for (int s = 0; s < steps; s++) {
        cap_request_t r[CAP_MAX_SEQS];
        const int n = pick(f, 0, c->max_seqs);
        int32_t left = c->max_tokens;
        for (int b = 0; b < n; b++) {
            const int kind = pick(f, 0, 7);
            int32_t L = kind < 4 ? 1 : kind < 6 ? pick(f, 2, 16) : kind < 7 ? pick(f, 1, c->max_tokens) : 0;
            if (L > left) L = left;
            left -= L;
            r[b] = (cap_request_t){L, pick(f, L > 0 ? L : 0, max_keys)};
        }
        char name[64];
        snprintf(name, sizeof name, "random step %d", s);
        step(f, NULL, name, r, n);
    }
}

static void small_capacity_replays_random_batches(void **state) { random_steps(*state, 24); }
static void long_capacity_replays_random_batches(void **state) { random_steps(*state, 24); }

int cap_run_batch_tests(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(small_capacity_replays_five_batches, cap_setup_small, cap_teardown),
        cmocka_unit_test_setup_teardown(long_capacity_replays_split_batches, cap_setup_long, cap_teardown),
        cmocka_unit_test_setup_teardown(small_capacity_replays_random_batches, cap_setup_small, cap_teardown),
        cmocka_unit_test_setup_teardown(long_capacity_replays_random_batches, cap_setup_long, cap_teardown),
    };
    return cmocka_run_group_tests_name("capacity plans: batches", tests, NULL, NULL);
}

int main(void)
{
    /* The cpu splits long decodes only with two threads or more: fix the count, whatever the machine. */
    setenv("ATTNRT_NUM_THREADS", "4", 0);
    int failed = cap_run_batch_tests();
    failed += cap_run_refusal_tests();
    attnrt_status_t st = attnrt_shutdown();
    if (st != ATTNRT_OK) {
        fprintf(stderr, "attnrt_shutdown returned %s: %s\n", attnrt_status_name(st), attnrt_last_error());
        failed++;
    }
    return failed ? 1 : 0;
}
