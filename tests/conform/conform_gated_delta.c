/* conform_gated_delta.c - the gated delta rule over a state pool: the rounds of the case
 * (conform_state.c does the pool, the metadata, speculative rows and the judging) with fresh q, k, v,
 * g and beta each round. Without the in-kernel L2 norm the keys are drawn with unit norm, as a model
 * that normalises them earlier hands them over (the delta rule is only stable for beta |k|^2 < 2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"
#include "conform_state.h"
#include "reference.h"

typedef struct gdn {
    const cf_case_t *c;
    int              H, HV, dk, dv;
    double           scale;  /* what the reference multiplies q with */
    attnrt_tensor_t  q, k, v, g, beta, out, pool, qsl, state_indices, has_init, spec, accepted;
    double          *q_ref, *k_ref, *v_ref, *g_ref, *beta_ref;
    attnrt_gated_delta_args_t args;
} gdn_t;

static int gdn_inputs(void *self, cf_dev_t *dev, cf_rng_t *rng, const cf_round_t *r, const attnrt_tensor_t *out,
                      const attnrt_tensor_t *pool, cf_result_t *res)
{
    gdn_t *G = self;
    const cf_case_t *c = G->c;
    const int64_t qs[3] = {r->T, G->H, G->dk}, vs[3] = {r->T, G->HV, G->dv}, gs[2] = {r->T, G->HV};
    const size_t n_g = (size_t)r->T * (size_t)G->HV;
    double *g = malloc(sizeof(double) * (n_g + 1)), *beta = malloc(sizeof(double) * (n_g + 1));
    if (!g || !beta) {
        free(g);
        free(beta);
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n_g; i++) {
        g[i] = -exp(cf_rng_range(rng, -5.0, 1.5)); /* decay e^g from about 0.01 to 0.993 */
        beta[i] = cf_rng_range(rng, 0.02, 0.98);
    }
    const double k_amp = c->use_l2norm ? 1.0 : 1.0 / sqrt((double)G->dk);
    int rc = cf_state_upload_normal(dev, rng, c->q_dtype, 1.0, 3, qs, &G->q, &G->q_ref, res) ||
             cf_state_upload_normal(dev, rng, c->q_dtype, k_amp, 3, qs, &G->k, &G->k_ref, res) ||
             cf_state_upload_normal(dev, rng, c->q_dtype, 1.0, 3, vs, &G->v, &G->v_ref, res) ||
             cf_state_upload_values(dev, c->gb_dtype, g, 2, gs, &G->g, &G->g_ref, res) ||
             cf_state_upload_values(dev, c->gb_dtype, beta, 2, gs, &G->beta, &G->beta_ref, res)
                 ? -1
                 : 0;
    free(g);
    free(beta);
    if (rc != 0) return -1;
    G->out = *out;
    G->pool = *pool;
    G->qsl = r->qsl_t;
    G->state_indices = r->state_indices_t;
    G->has_init = r->has_init_t;
    G->spec = r->spec_t;
    G->accepted = r->accepted_t;
    attnrt_gated_delta_args_t *a = &G->args;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->query = &G->q;
    a->key = &G->k;
    a->value = &G->v;
    a->g = &G->g;
    a->beta = &G->beta;
    a->out = &G->out;
    a->state = &G->pool;
    a->query_start_loc = &G->qsl;
    a->state_indices = &G->state_indices;
    a->has_initial_state = &G->has_init;
    a->spec_state_indices = r->spec ? &G->spec : NULL;
    a->num_accepted = r->spec ? &G->accepted : NULL;
    a->scale = c->scale;
    a->use_l2norm = c->use_l2norm;
    return 0;
}

static attnrt_status_t gdn_plan(void *self, attnrt_context_t *ctx, const cf_round_t *r, const attnrt_state_host_t *host,
                                const attnrt_state_pool_t *pool, attnrt_plan_t **plan)
{
    gdn_t *G = self;
    return attnrt_gated_delta_plan(ctx, &G->args, &r->batch, host, pool, plan);
}

static attnrt_status_t gdn_run(void *self, attnrt_plan_t *plan, void *ws, size_t ws_bytes, attnrt_stream_t *stream)
{
    gdn_t *G = self;
    return attnrt_gated_delta_run(plan, &G->args, ws, ws_bytes, stream);
}

static void gdn_reference(void *self, const cf_round_t *r, double *pool, double *ref_out)
{
    gdn_t *G = self;
    ref_gated_delta(r->B, r->qsl, r->state_indices, r->has_init, G->H, G->HV, G->dk, G->dv, G->c->use_l2norm, G->scale,
                    G->q_ref, G->k_ref, G->v_ref, G->g_ref, G->beta_ref, pool, ref_out, r->spec ? r->spec_rows : NULL,
                    r->num_spec, r->spec ? r->num_accepted : NULL);
}

static void gdn_query(const cf_case_t *c, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_GATED_DELTA;
    q->q_dtype = cf_dtype_attnrt(c->q_dtype);
    q->head_dim_qk = (uint32_t)c->head_dim_qk;
    q->head_dim_v = (uint32_t)c->head_dim_v;
    q->num_q_heads = (uint32_t)c->num_q_heads;
    q->num_kv_heads = (uint32_t)c->num_v_heads; /* as the runtime asks: HV there */
}

void cf_run_gated_delta(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    attnrt_op_query_t query;
    gdn_query(c, &query);
    if (!cf_ask_supported(env, &query, "gated_delta", res)) return;
    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    gdn_t G;
    memset(&G, 0, sizeof G);
    G.c = c;
    G.H = c->num_q_heads;
    G.HV = c->num_v_heads;
    G.dk = c->head_dim_qk;
    G.dv = c->head_dim_v;
    G.scale = c->scale > 0 ? (double)c->scale : 1.0 / sqrt((double)G.dk);
    attnrt_stream_t *stream = NULL;
    cf_pool_t pool;
    memset(&pool, 0, sizeof pool);
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    if (cf_pool_setup(env, c, &rng, G.HV, G.dk, G.dv, stream, &pool, res) != 0) goto done;
    const cf_dtype_t dts[3] = {c->q_dtype, c->out_dtype, c->gb_dtype};
    const cf_state_op_t op = {
        .name = "gated_delta",
        .out_heads = G.HV,
        .dv = G.dv,
        .out_dtype = c->out_dtype,
        .tolerance = cf_tolerance_of(dts, 3),
        .inputs = gdn_inputs,
        .plan = gdn_plan,
        .run = gdn_run,
        .reference = gdn_reference,
        .self = &G,
    };
    res->tolerance = op.tolerance;
    cf_state_rounds(env, c, &rng, &dev, &pool, &op, stream, res);
done:
    cf_pool_free(&pool);
    free(G.q_ref);
    free(G.k_ref);
    free(G.v_ref);
    free(G.g_ref);
    free(G.beta_ref);
    cf_dev_release(&dev);
    if (stream) attnrt_stream_destroy(stream);
}
