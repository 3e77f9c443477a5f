/* conform_lightning.c - lightning (linear) attention over a state pool: the rounds of the case
 * (conform_state.c does the pool, the metadata and the judging) with fresh q, k, v each round, and
 * the blockwise check: N prefill tokens in one call, in chunks of 64 and as N decode steps through
 * the API must give the same outputs and final state within float32 tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"
#include "conform_state.h"
#include "reference.h"

#define MAX_HEADS 256

typedef struct lightning {
    const cf_case_t *c;
    int              H, dk, dv;
    double           slopes[MAX_HEADS];  /* as the device sees them (f32)     */
    attnrt_tensor_t  slopes_t, q, k, v, out, pool, qsl, state_indices, has_init;
    double          *q_ref, *k_ref, *v_ref;
    attnrt_lightning_args_t args;
} lightning_t;

static void set_args(lightning_t *L)
{
    memset(&L->args, 0, sizeof L->args);
    L->args.struct_size = sizeof L->args;
    L->args.query = &L->q;
    L->args.key = &L->k;
    L->args.value = &L->v;
    L->args.out = &L->out;
    L->args.slopes = &L->slopes_t;
    L->args.state = &L->pool;
    L->args.query_start_loc = &L->qsl;
    L->args.state_indices = &L->state_indices;
    L->args.has_initial_state = &L->has_init;
}

/* Per-head decay rates: MiniMax-01's (2^(-8/H))^(h+1), scaled as for a random layer, or uniform up
 * to slope_max; head 0 without decay when the case asks. */
static int make_slopes(cf_dev_t *dev, cf_rng_t *rng, lightning_t *L, cf_result_t *res)
{
    float vals[MAX_HEADS];
    const double layer = cf_rng_range(rng, 0.05, 1.0);
    for (int h = 0; h < L->H; h++) {
        double s = L->c->slope_max > 0 ? cf_rng_range(rng, 0.0, L->c->slope_max)
                                       : pow(pow(2.0, -8.0 / L->H), h + 1) * layer;
        if (h == 0 && L->c->zero_slope) s = 0.0;
        vals[h] = (float)s;
        L->slopes[h] = vals[h];
    }
    void *p = NULL;
    if (cf_dev_upload_new(dev, vals, sizeof(float) * (size_t)L->H, &p, "slopes upload") != 0) {
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    const int64_t shape[1] = {L->H};
    cf_tensor_contig(&L->slopes_t, p, ATTNRT_F32, 1, shape);
    return 0;
}

static int lightning_inputs(void *self, cf_dev_t *dev, cf_rng_t *rng, const cf_round_t *r, const attnrt_tensor_t *out,
                            const attnrt_tensor_t *pool, cf_result_t *res)
{
    lightning_t *L = self;
    const cf_dtype_t dt = L->c->q_dtype;
    const int64_t qs[3] = {r->T, L->H, L->dk}, vs[3] = {r->T, L->H, L->dv};
    if (cf_state_upload_normal(dev, rng, dt, 1.0, 3, qs, &L->q, &L->q_ref, res) ||
        cf_state_upload_normal(dev, rng, dt, 1.0, 3, qs, &L->k, &L->k_ref, res) ||
        cf_state_upload_normal(dev, rng, dt, 1.0, 3, vs, &L->v, &L->v_ref, res))
        return -1;
    L->out = *out;
    L->pool = *pool;
    L->qsl = r->qsl_t;
    L->state_indices = r->state_indices_t;
    L->has_init = r->has_init_t;
    set_args(L);
    return 0;
}

static attnrt_status_t lightning_plan(void *self, attnrt_context_t *ctx, const cf_round_t *r,
                                      const attnrt_state_host_t *host, const attnrt_state_pool_t *pool,
                                      attnrt_plan_t **plan)
{
    lightning_t *L = self;
    return attnrt_lightning_plan(ctx, &L->args, &r->batch, host, pool, plan);
}

static attnrt_status_t lightning_run(void *self, attnrt_plan_t *plan, void *ws, size_t ws_bytes,
                                     attnrt_stream_t *stream)
{
    lightning_t *L = self;
    return attnrt_lightning_run(plan, &L->args, ws, ws_bytes, stream);
}

static void lightning_reference(void *self, const cf_round_t *r, double *pool, double *ref_out)
{
    lightning_t *L = self;
    ref_lightning(r->B, r->qsl, r->state_indices, r->has_init, L->H, L->dk, L->dv, L->slopes, L->q_ref, L->k_ref,
                  L->v_ref, pool, ref_out);
}

static void lightning_query(const cf_case_t *c, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_LIGHTNING;
    q->q_dtype = cf_dtype_attnrt(c->q_dtype);
    q->head_dim_qk = (uint32_t)c->head_dim_qk; /* as the runtime asks: the state is always f32 */
    q->head_dim_v = (uint32_t)c->head_dim_v;
    q->num_q_heads = (uint32_t)c->num_q_heads;
}

/* ---- the blockwise check ------------------------------------------------------------------------ */

/* A view of rows [first, first + count) of a contiguous [N, ...] tensor. */
static attnrt_tensor_t rows_of(const attnrt_tensor_t *t, int64_t first, int64_t count)
{
    attnrt_tensor_t v = *t;
    v.data = (char *)t->data + (size_t)(first * t->strides[0]) * attnrt_dtype_size(t->dtype);
    v.shape[0] = count;
    return v;
}

typedef struct chunked {
    int          chunk;      /* tokens per call                                                  */
    int          slot;
    const char  *label;
    attnrt_tensor_t out;     /* [N, H, Dv] f32                                                   */
    double      *out_got;    /* [N, H, Dv]                                                       */
    double      *state_got;  /* [H, Dk, Dv]                                                      */
} chunked_t;

/* Feeds all N tokens to `slot` in calls of ch->chunk tokens (the first with has_initial_state 0). */
static int run_chunked(const cf_env_t *env, cf_dev_t *dev, lightning_t *L, int N, const attnrt_tensor_t *q,
                       const attnrt_tensor_t *k, const attnrt_tensor_t *v, const attnrt_state_pool_t *pool,
                       chunked_t *ch, cf_result_t *res)
{
    int32_t qsl[2] = {0, ch->chunk}, slot[1] = {ch->slot};
    uint8_t init0[1] = {0}, init1[1] = {1};
    const int64_t s2[1] = {2}, s1[1] = {1};
    void *p_qsl = NULL, *p_slot = NULL, *p_i0 = NULL, *p_i1 = NULL;
    if (cf_dev_upload_new(dev, qsl, sizeof qsl, &p_qsl, "query_start_loc upload") ||
        cf_dev_upload_new(dev, slot, sizeof slot, &p_slot, "state_indices upload") ||
        cf_dev_upload_new(dev, init0, 1, &p_i0, "has_initial_state upload") ||
        cf_dev_upload_new(dev, init1, 1, &p_i1, "has_initial_state upload")) {
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    cf_tensor_contig(&L->qsl, p_qsl, ATTNRT_I32, 1, s2);
    cf_tensor_contig(&L->state_indices, p_slot, ATTNRT_I32, 1, s1);
    attnrt_batch_host_t batch = {.struct_size = sizeof batch, .num_seqs = 1, .query_start_loc = qsl};
    attnrt_state_host_t host0 = {.struct_size = sizeof host0, .state_indices = slot, .has_initial_state = init0};
    attnrt_state_host_t host1 = host0;
    host1.has_initial_state = init1;
    attnrt_plan_t *plans[2] = {NULL, NULL};
    void *ws[2] = {NULL, NULL};
    size_t ws_bytes[2] = {0, 0};
    int rc = -1;
    char call[96];
    for (int first = 0; first < N; first += ch->chunk) {
        const int which = first > 0;
        cf_tensor_contig(&L->has_init, which ? p_i1 : p_i0, ATTNRT_U8, 1, s1);
        L->q = rows_of(q, first, ch->chunk);
        L->k = rows_of(k, first, ch->chunk);
        L->v = rows_of(v, first, ch->chunk);
        L->out = rows_of(&ch->out, first, ch->chunk);
        set_args(L);
        if (!plans[which]) { /* one plan for the first call, one reused by every later call */
            snprintf(call, sizeof call, "attnrt_lightning_plan (%s)", ch->label);
            if (!cf_check_status(attnrt_lightning_plan(env->ctx, &L->args, &batch, which ? &host1 : &host0, pool,
                                                       &plans[which]),
                                 call, res) ||
                cf_workspace(dev, plans[which], &ws[which], &ws_bytes[which], res) != 0)
                goto done;
        }
        snprintf(call, sizeof call, "attnrt_lightning_run (%s, tokens %d..%d)", ch->label, first, first + ch->chunk - 1);
        if (!cf_check_status(attnrt_lightning_run(plans[which], &L->args, ws[which], ws_bytes[which], NULL), call, res))
            goto done;
    }
    rc = cf_state_read_out(dev, CF_F32, &ch->out, ch->out_got, res);
done:
    attnrt_plan_destroy(plans[0]);
    attnrt_plan_destroy(plans[1]);
    return rc;
}

static void run_blockwise(const cf_env_t *env, const cf_case_t *c, cf_rng_t *rng, cf_dev_t *dev, lightning_t *L,
                          cf_result_t *res)
{
    const int N = c->rounds[0].q_lens[0], H = L->H, dk = L->dk, dv = L->dv;
    const size_t slot_elems = (size_t)H * (size_t)dk * (size_t)dv, out_elems = (size_t)N * (size_t)H * (size_t)dv;
    enum { RUNS = 3, SLOTS = RUNS + 1 };
    chunked_t runs[RUNS] = {{N, 0, "one call", {0}, NULL, NULL}, {64, 0, "chunks of 64", {0}, NULL, NULL},
                            {1, 0, "decode steps", {0}, NULL, NULL}};
    attnrt_state_pool_t *pool = NULL;
    attnrt_tensor_t pool_t, q, k, v;
    double *ref_out = malloc(sizeof(double) * (out_elems + 1));
    double *ref_pool = malloc(sizeof(double) * (SLOTS * slot_elems + 1));
    float *image = malloc(sizeof(float) * (SLOTS * slot_elems + 1));
    float *got = malloc(sizeof(float) * (SLOTS * slot_elems + 1));
    int ok = ref_out && ref_pool && image && got;
    for (int i = 0; i < RUNS && ok; i++) {
        runs[i].out_got = malloc(sizeof(double) * (out_elems + 1));
        runs[i].state_got = malloc(sizeof(double) * (slot_elems + 1));
        ok = runs[i].out_got && runs[i].state_got;
    }
    if (!ok) {
        cf_result_fail(res, "checker: out of host memory");
        goto done;
    }
    const int64_t slot_shape[3] = {H, dk, dv}, qs[3] = {N, H, dk}, vs[3] = {N, H, dv};
    if (!cf_check_status(attnrt_state_pool_create(env->ctx, ATTNRT_F32, 3, slot_shape, SLOTS, &pool),
                         "attnrt_state_pool_create", res) ||
        !cf_check_status(attnrt_state_pool_tensor(pool, &pool_t), "attnrt_state_pool_tensor", res))
        goto done;
    int32_t slots[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        if (!cf_check_status(attnrt_state_slot_alloc(pool, &slots[i]), "attnrt_state_slot_alloc", res)) goto done;
    /* the run slots start as NaN (has_initial_state 0 must not read them); the last slot, named by no
     * call, holds a pattern that must survive */
    for (size_t i = 0; i < SLOTS * slot_elems; i++)
        image[i] = i / slot_elems == SLOTS - 1 ? (float)cf_rng_normal(rng) : NAN;
    if (!cf_check_status(attnrt_mem_copy_to_device(env->ctx, pool_t.data, image, SLOTS * slot_elems * sizeof(float), NULL),
                         "attnrt_mem_copy_to_device (the state pool)", res))
        goto done;
    if (make_slopes(dev, rng, L, res) || cf_state_upload_normal(dev, rng, CF_F32, 1.0, 3, qs, &q, &L->q_ref, res) ||
        cf_state_upload_normal(dev, rng, CF_F32, 1.0, 3, qs, &k, &L->k_ref, res) ||
        cf_state_upload_normal(dev, rng, CF_F32, 1.0, 3, vs, &v, &L->v_ref, res))
        goto done;
    L->pool = pool_t;
    for (int i = 0; i < RUNS; i++) {
        runs[i].slot = slots[i];
        if (cf_state_poisoned_out(dev, CF_F32, N, H, dv, &runs[i].out, res) ||
            run_chunked(env, dev, L, N, &q, &k, &v, pool, &runs[i], res))
            goto done;
    }
    if (!cf_check_status(attnrt_mem_copy_to_host(env->ctx, got, pool_t.data, SLOTS * slot_elems * sizeof(float), NULL),
                         "attnrt_mem_copy_to_host (the state pool)", res))
        goto done;
    for (int i = 0; i < RUNS; i++)
        for (size_t e = 0; e < slot_elems; e++) runs[i].state_got[e] = got[(size_t)slots[i] * slot_elems + e];

    /* the one call against the float64 recurrence */
    const int32_t qsl[2] = {0, N}, idx[1] = {0};
    const uint8_t init[1] = {0};
    ref_lightning(1, qsl, idx, init, H, dk, dv, L->slopes, L->q_ref, L->k_ref, L->v_ref, ref_pool, ref_out);
    if (env->corrupt) res->corrupted = cf_corrupt_output(runs[0].out_got, ref_out, out_elems);
    const double tol = 1e-5, tiny = 0x1p-126;
    double worst = 0.0;
    cf_compare_out("out (one call)", runs[0].out_got, ref_out, NULL, (size_t)N, (size_t)H, (size_t)dv, tol, tiny, res);
    worst = res->error;
    cf_compare_out("final state (one call), as [head, k-row]", runs[0].state_got, ref_pool, NULL, (size_t)H,
                   (size_t)dk, (size_t)dv, tol, tiny, res);
    if (!(res->error <= worst)) worst = res->error;
    /* the other feeds against the one call, to float32 tolerance */
    for (int i = 1; i < RUNS; i++) {
        char what[96];
        snprintf(what, sizeof what, "out (%s) against out (one call)", runs[i].label);
        cf_compare_out(what, runs[i].out_got, runs[0].out_got, NULL, (size_t)N, (size_t)H, (size_t)dv, tol, tiny, res);
        if (!(res->error <= worst)) worst = res->error;
        snprintf(what, sizeof what, "final state (%s) against the one call's, as [head, k-row]", runs[i].label);
        cf_compare_out(what, runs[i].state_got, runs[0].state_got, NULL, (size_t)H, (size_t)dk, (size_t)dv, tol, tiny,
                       res);
        if (!(res->error <= worst)) worst = res->error;
    }
    res->error = worst;
    if (memcmp(got + (size_t)slots[SLOTS - 1] * slot_elems, image + (SLOTS - 1) * slot_elems,
               slot_elems * sizeof(float)) != 0)
        cf_result_fail(res, "state slot %d, named by no call, changed", slots[SLOTS - 1]);
done:
    if (pool) attnrt_state_pool_destroy(pool);
    for (int i = 0; i < RUNS; i++) {
        free(runs[i].out_got);
        free(runs[i].state_got);
    }
    free(ref_out);
    free(ref_pool);
    free(image);
    free(got);
}

void cf_run_lightning(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    attnrt_op_query_t query;
    lightning_query(c, &query);
    if (!cf_ask_supported(env, &query, "lightning", res)) return;
    if (c->num_q_heads > MAX_HEADS) {
        cf_result_fail(res, "checker: more than %d heads", MAX_HEADS);
        return;
    }
    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    lightning_t L;
    memset(&L, 0, sizeof L);
    L.c = c;
    L.H = c->num_q_heads;
    L.dk = c->head_dim_qk;
    L.dv = c->head_dim_v;
    attnrt_stream_t *stream = NULL;
    cf_pool_t pool;
    memset(&pool, 0, sizeof pool);
    if (c->blockwise) {
        run_blockwise(env, c, &rng, &dev, &L, res);
        goto done;
    }
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    if (make_slopes(&dev, &rng, &L, res) != 0 ||
        cf_pool_setup(env, c, &rng, L.H, L.dk, L.dv, stream, &pool, res) != 0)
        goto done;
    const cf_dtype_t dts[2] = {c->q_dtype, c->out_dtype};
    const cf_state_op_t op = {
        .name = "lightning",
        .out_heads = L.H,
        .dv = L.dv,
        .out_dtype = c->out_dtype,
        .tolerance = cf_tolerance_of(dts, 2),
        .inputs = lightning_inputs,
        .plan = lightning_plan,
        .run = lightning_run,
        .reference = lightning_reference,
        .self = &L,
    };
    res->tolerance = op.tolerance;
    cf_state_rounds(env, c, &rng, &dev, &pool, &op, stream, res);
done:
    cf_pool_free(&pool);
    free(L.q_ref);
    free(L.k_ref);
    free(L.v_ref);
    cf_dev_release(&dev);
    if (stream) attnrt_stream_destroy(stream);
}
