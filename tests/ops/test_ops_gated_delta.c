/* Bad inputs of attnrt_gated_delta_plan (ABI 1.2), speculative decoding included; the baseline is in
 * ops_linear.h. */
#include <math.h>

#include "ops_linear.h"

static const char GP[] = "attnrt_gated_delta_plan";

#define GPLAN_REJECTS(f, expected, needle)                                                                    \
    OPS_STATE_PLAN_REJECTS((f), GP, attnrt_gated_delta_plan, (f)->ctx, &(f)->x->gdn, &(f)->x->lin_batch,      \
                           &(f)->x->gdn_states, (f)->x->gdn_pool, (expected), (needle))
#define GPLAN_INVALID(f, needle) GPLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

/* A new pool of `slots` slots of [hv, dk, dv] (0..2 allocated) replaces the op's pool and state. */
static void replace_gdn_pool(ops_fixture_t *f, attnrt_dtype_t dtype, int64_t hv, int64_t dk, int64_t dv)
{
    const int64_t slot[3] = {hv, dk, dv};
    f->x->gdn_pool = ops_pool(f, dtype, 3, slot, 4, 3, &f->x->gdn_state);
}

static void gated_delta_plan_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_workspace_of(ops_gated_delta_plan_ok(f));
}

static void gated_delta_plan_spec_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    ops_workspace_of(ops_gated_delta_plan_ok(f));
}

static void gated_delta_plan_accepts_padding_row(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_gdn_state_indices[0] = -1;
    ops_gated_delta_plan_ok(f);
}

/* "A request whose spec_state_indices[b][0] < 0 is padding." */
static void gated_delta_plan_accepts_spec_padding_row(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1)] = -1;
    ops_gated_delta_plan_ok(f);
}

/* ---- null pointers and struct sizes ---- */

static void gated_delta_plan_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, GP, attnrt_gated_delta_plan, NULL, &f->x->gdn, &f->x->lin_batch, &f->x->gdn_states,
                           f->x->gdn_pool, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void gated_delta_plan_refuses_null_plan_out(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, GP,
                attnrt_gated_delta_plan(f->ctx, &f->x->gdn, &f->x->lin_batch, &f->x->gdn_states, f->x->gdn_pool, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
}

static void gated_delta_plan_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, GP, attnrt_gated_delta_plan, f->ctx, NULL, &f->x->lin_batch, &f->x->gdn_states,
                           f->x->gdn_pool, ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void gated_delta_plan_refuses_null_batch(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, GP, attnrt_gated_delta_plan, f->ctx, &f->x->gdn, NULL, &f->x->gdn_states,
                           f->x->gdn_pool, ATTNRT_ERR_INVALID_ARGUMENT, "batch is NULL");
}

static void gated_delta_plan_refuses_null_states(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, GP, attnrt_gated_delta_plan, f->ctx, &f->x->gdn, &f->x->lin_batch, NULL,
                           f->x->gdn_pool, ATTNRT_ERR_INVALID_ARGUMENT, "states is NULL");
}

static void gated_delta_plan_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, GP, attnrt_gated_delta_plan, f->ctx, &f->x->gdn, &f->x->lin_batch, &f->x->gdn_states,
                           NULL, ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
}

static void gated_delta_plan_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn.struct_size = 0;
    GPLAN_INVALID(f, "args->struct_size = 0");
}

static void gated_delta_plan_refuses_states_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn_states.struct_size = 0;
    GPLAN_INVALID(f, "states->struct_size = 0");
}

static void gated_delta_plan_refuses_g_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->g.struct_size = 0;
    GPLAN_INVALID(f, "g.struct_size = 0");
}

#define GDN_NULL_TENSOR_TEST(field)                                   \
    static void gated_delta_plan_refuses_null_##field(void **state)   \
    {                                                                 \
        ops_fixture_t *f = *state;                                    \
        f->x->gdn.field = NULL;                                       \
        GPLAN_INVALID(f, #field " is NULL");                          \
    }
GDN_NULL_TENSOR_TEST(query)
GDN_NULL_TENSOR_TEST(key)
GDN_NULL_TENSOR_TEST(value)
GDN_NULL_TENSOR_TEST(g)
GDN_NULL_TENSOR_TEST(beta)
GDN_NULL_TENSOR_TEST(out)
GDN_NULL_TENSOR_TEST(state)
GDN_NULL_TENSOR_TEST(query_start_loc)
GDN_NULL_TENSOR_TEST(state_indices)
GDN_NULL_TENSOR_TEST(has_initial_state)

static void gated_delta_plan_refuses_null_host_state_indices(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn_states.state_indices = NULL;
    GPLAN_INVALID(f, "state_indices is NULL");
}

static void gated_delta_plan_refuses_null_host_has_initial_state(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn_states.has_initial_state = NULL;
    GPLAN_INVALID(f, "has_initial_state is NULL");
}

static void gated_delta_plan_refuses_null_host_has_initial_state_with_spec(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn_states.has_initial_state = NULL;
    GPLAN_INVALID(f, "has_initial_state is NULL");
}

/* ---- heads and dims ---- */

/* H 4, HV 6 throughout (q, k, v, g, beta, out and a pool of [6, 8, 4] slots): only HV % H is wrong. */
static void gated_delta_plan_refuses_value_heads_not_multiple_of_heads(void **state)
{
    ops_fixture_t *f = *state;
    ops_ext_t *x = f->x;
    ops_reshape3(&x->gq, OPS_T, 4, OPS_LIN_DK);
    ops_reshape3(&x->gk, OPS_T, 4, OPS_LIN_DK);
    ops_reshape3(&x->gv, OPS_T, 6, OPS_LIN_DV);
    ops_reshape3(&x->gout, OPS_T, 6, OPS_LIN_DV);
    ops_reshape2(&x->g, OPS_T, 6);
    ops_reshape2(&x->beta, OPS_T, 6);
    replace_gdn_pool(f, ATTNRT_F32, 6, OPS_LIN_DK, OPS_LIN_DV);
    GPLAN_INVALID(f, "num_v_heads = 6 (value.shape[1]) is not a multiple of num_heads = 4 (query.shape[1])");
}

static void gated_delta_plan_refuses_key_heads_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->gk, OPS_T, 1, OPS_LIN_DK);
    GPLAN_INVALID(f, "key.shape[1] = 1");
}

static void gated_delta_plan_refuses_key_head_dim_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->gk, OPS_T, OPS_LIN_H, 4);
    GPLAN_INVALID(f, "key.shape[2] = 4");
}

static void gated_delta_plan_refuses_value_tokens_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gv.shape[0] = OPS_T - 1;
    GPLAN_INVALID(f, "value.shape[0] = 8");
}

static void gated_delta_plan_refuses_out_heads_differing_from_value(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->gout, OPS_T, OPS_LIN_H, OPS_LIN_DV);
    GPLAN_INVALID(f, "out.shape[1] = 2");
}

static void gated_delta_plan_refuses_out_head_dim_differing_from_value(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->gout, OPS_T, OPS_GDN_HV, 6);
    GPLAN_INVALID(f, "out.shape[2] = 6");
}

static void gated_delta_plan_refuses_g_of_5_heads(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape2(&f->x->g, OPS_T, OPS_GDN_HV + 1);
    GPLAN_INVALID(f, "g.shape[1] = 5");
}

static void gated_delta_plan_refuses_beta_tokens_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->x->beta.shape[0] = OPS_T - 1;
    GPLAN_INVALID(f, "beta.shape[0] = 8");
}

static void gated_delta_plan_refuses_3d_g(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->g, OPS_T, OPS_GDN_HV, 1);
    GPLAN_INVALID(f, "g.ndim = 3, expected 2");
}

static void gated_delta_plan_refuses_int32_g(void **state)
{
    ops_fixture_t *f = *state;
    f->x->g.dtype = ATTNRT_I32;
    GPLAN_INVALID(f, "g.dtype = i32");
}

/* g and beta are f32 or the activation dtype: f16 gates with an f32 query are neither. */
static void gated_delta_plan_refuses_f16_g_for_f32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->g.dtype = ATTNRT_F16;
    GPLAN_INVALID(f, "g.dtype = f16");
}

static void gated_delta_plan_refuses_int32_beta(void **state)
{
    ops_fixture_t *f = *state;
    f->x->beta.dtype = ATTNRT_I32;
    GPLAN_INVALID(f, "beta.dtype = i32");
}

static void gated_delta_plan_refuses_key_dtype_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gk.dtype = ATTNRT_BF16;
    GPLAN_INVALID(f, "key.dtype = bf16");
}

static void gated_delta_plan_refuses_state_value_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    replace_gdn_pool(f, ATTNRT_F32, OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV);
    GPLAN_INVALID(f, "state.shape[1] = 2");
}

static void gated_delta_plan_refuses_state_key_dim_differing(void **state)
{
    ops_fixture_t *f = *state;
    replace_gdn_pool(f, ATTNRT_F32, OPS_GDN_HV, 6, OPS_LIN_DV);
    GPLAN_INVALID(f, "state.shape[2] = 6");
}

static void gated_delta_plan_refuses_state_value_dim_differing(void **state)
{
    ops_fixture_t *f = *state;
    replace_gdn_pool(f, ATTNRT_F32, OPS_GDN_HV, OPS_LIN_DK, 6);
    GPLAN_INVALID(f, "state.shape[3] = 6");
}

static void gated_delta_plan_refuses_bf16_state_pool(void **state)
{
    ops_fixture_t *f = *state;
    replace_gdn_pool(f, ATTNRT_BF16, OPS_GDN_HV, OPS_LIN_DK, OPS_LIN_DV);
    GPLAN_INVALID(f, "state.dtype = bf16");
}

/* ---- the state must be the pool's tensor ---- */

static void gated_delta_plan_refuses_state_of_another_pool(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t slot[3] = {OPS_GDN_HV, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_tensor_t other;
    ops_pool(f, ATTNRT_F32, 3, slot, OPS_GDN_SLOTS, OPS_GDN_ALLOCATED, &other);
    f->x->gdn.state = &other;
    GPLAN_INVALID(f, "state is not the pool's tensor");
}

static void gated_delta_plan_refuses_lightning_pool(void **state)
{
    ops_fixture_t *f = *state;
    /* the GDN state with the lightning pool: its tensor is not the given pool's */
    OPS_STATE_PLAN_REJECTS(f, GP, attnrt_gated_delta_plan, f->ctx, &f->x->gdn, &f->x->lin_batch, &f->x->gdn_states,
                           f->x->lin_pool, ATTNRT_ERR_INVALID_ARGUMENT, "state is not the pool's tensor");
}

static void gated_delta_plan_refuses_hand_made_state(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_GDN_SLOTS, OPS_GDN_HV, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_tensor_t hand;
    ops_tensor(&hand, f->dev[OB_WORKSPACE], ATTNRT_F32, 4, shape);
    f->x->gdn.state = &hand;
    GPLAN_INVALID(f, "state is not the pool's tensor");
}

/* ---- the host state indices ---- */

static void gated_delta_plan_refuses_freed_slot(void **state)
{
    ops_fixture_t *f = *state;
    OPS_OK(attnrt_state_slot_free(f->x->gdn_pool, 2));
    GPLAN_INVALID(f, "state_indices[2] = 2: slot 2 is not allocated");
}

static void gated_delta_plan_refuses_never_allocated_slot(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_gdn_state_indices[1] = OPS_GDN_SLOTS - 1;
    GPLAN_INVALID(f, "state_indices[1] = 15: slot 15 is not allocated");
}

static void gated_delta_plan_refuses_slot_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_gdn_state_indices[2] = 900;
    GPLAN_INVALID(f, "state_indices[2] = 900 >= num_slots = 16");
}

static void gated_delta_plan_refuses_slot_below_minus_1(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_gdn_state_indices[1] = -5;
    GPLAN_INVALID(f, "state_indices[1] = -5");
}

/* ---- options ---- */

static void gated_delta_plan_refuses_nan_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn.scale = NAN;
    GPLAN_INVALID(f, "scale = nan");
}

static void gated_delta_plan_refuses_negative_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn.scale = -1.0f;
    GPLAN_INVALID(f, "scale = -1");
}

static void gated_delta_plan_refuses_infinite_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn.scale = INFINITY;
    GPLAN_INVALID(f, "scale = inf");
}

static void gated_delta_plan_refuses_use_l2norm_2(void **state)
{
    ops_fixture_t *f = *state;
    f->x->gdn.use_l2norm = 2;
    GPLAN_INVALID(f, "use_l2norm = 2");
}

/* ---- speculative decoding ---- */

static void gated_delta_plan_refuses_spec_without_host_num_accepted(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn_states.num_accepted = NULL;
    GPLAN_INVALID(f, "num_accepted is NULL");
}

static void gated_delta_plan_refuses_spec_without_num_accepted_tensor(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn.num_accepted = NULL;
    GPLAN_INVALID(f, "num_accepted is NULL");
}

static void gated_delta_plan_refuses_spec_tensor_without_host_copy(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn_states.spec_state_indices = NULL;
    GPLAN_INVALID(f, "spec_state_indices is NULL");
}

static void gated_delta_plan_refuses_host_spec_without_tensor(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn.spec_state_indices = NULL;
    f->x->gdn.num_accepted = NULL;
    GPLAN_INVALID(f, "spec_state_indices is NULL");
}

static void gated_delta_plan_refuses_num_accepted_0(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_num_accepted[1] = 0;
    GPLAN_INVALID(f, "num_accepted[1] = 0");
}

static void gated_delta_plan_refuses_negative_num_accepted(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_num_accepted[0] = -1;
    GPLAN_INVALID(f, "num_accepted[0] = -1");
}

static void gated_delta_plan_refuses_num_accepted_past_num_spec_plus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_num_accepted[2] = OPS_GDN_NUM_SPEC + 2;
    GPLAN_INVALID(f, "num_accepted[2] = 6");
}

/* num_spec 3: request 0 has 5 tokens, more than num_spec + 1 = 4. */
static void gated_delta_plan_refuses_request_longer_than_num_spec_plus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    ops_reshape2(&f->x->spec, OPS_B, 4);
    f->x->gdn_states.num_spec = 3;
    f->x->h_num_accepted[2] = 4;
    GPLAN_INVALID(f, "request 0&&5&&num_spec");
}

static void gated_delta_plan_refuses_num_spec_differing_from_tensor(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn_states.num_spec = OPS_GDN_NUM_SPEC - 1; /* the tensor has num_spec + 1 = 5 columns */
    GPLAN_INVALID(f, "num_spec = 3&&spec_state_indices.shape[1]");
}

static void gated_delta_plan_refuses_negative_num_spec(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->gdn_states.num_spec = -1;
    GPLAN_INVALID(f, "num_spec = -1");
}

static void gated_delta_plan_refuses_spec_rows_differing_from_num_seqs(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->spec.shape[0] = OPS_B - 1;
    GPLAN_INVALID(f, "spec_state_indices.shape[0] = 2");
}

static void gated_delta_plan_refuses_i64_spec_state_indices(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->spec.dtype = ATTNRT_I64;
    GPLAN_INVALID(f, "spec_state_indices.dtype = i64");
}

static void gated_delta_plan_refuses_num_accepted_of_2_requests(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->num_accepted.shape[0] = OPS_B - 1;
    GPLAN_INVALID(f, "num_accepted.shape[0] = 2");
}

static void gated_delta_plan_refuses_spec_slot_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1) + 2] = 900;
    GPLAN_INVALID(f, "spec_state_indices[1][2] = 900 >= num_slots = 16");
}

static void gated_delta_plan_refuses_freed_spec_slot(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    OPS_OK(attnrt_state_slot_free(f->x->gdn_pool, 7)); /* spec_state_indices[1][2] */
    GPLAN_INVALID(f, "spec_state_indices[1][2] = 7: slot 7 is not allocated");
}

static void gated_delta_plan_refuses_never_allocated_spec_slot(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_spec[2 * (OPS_GDN_NUM_SPEC + 1) + 4] = OPS_GDN_SLOTS - 1; /* the read slot of request 2 */
    GPLAN_INVALID(f, "spec_state_indices[2][4] = 15: slot 15 is not allocated");
}

/* has_initial_state[2] = 1 and num_accepted[2] = 5: request 2 reads spec_state_indices[2][4]. */
static void gated_delta_plan_refuses_unset_spec_slot_it_reads(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_spec[2 * (OPS_GDN_NUM_SPEC + 1) + 4] = -1;
    GPLAN_INVALID(f, "spec_state_indices[2][4] = -1");
}

static void gated_delta_plan_refuses_spec_slot_below_minus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1) + 1] = -3;
    GPLAN_INVALID(f, "spec_state_indices[1][1] = -3");
}

static void gated_delta_plan_refuses_spec_slot_shared_by_two_requests(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1) + 3] = 2; /* request 0's */
    GPLAN_INVALID(f, "spec_state_indices[1][3] = 2&&request 0");
}

static void gated_delta_plan_refuses_slot_shared_by_two_requests(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_gdn_state_indices[1] = 2;
    GPLAN_INVALID(f, "state_indices[2] = 2&&state_indices[1]");
}

int ops_run_gated_delta_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_LINEAR_TEST(gated_delta_plan_baseline_succeeds),
        OPS_LINEAR_TEST(gated_delta_plan_spec_baseline_succeeds),
        OPS_LINEAR_TEST(gated_delta_plan_accepts_padding_row),
        OPS_LINEAR_TEST(gated_delta_plan_accepts_spec_padding_row),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_ctx),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_plan_out),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_args),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_batch),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_states),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_pool),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_args_struct_size_0),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_states_struct_size_0),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_g_struct_size_0),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_query),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_key),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_value),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_g),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_beta),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_out),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_state),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_query_start_loc),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_state_indices),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_has_initial_state),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_host_state_indices),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_host_has_initial_state),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_null_host_has_initial_state_with_spec),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_value_heads_not_multiple_of_heads),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_key_heads_differing_from_query),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_key_head_dim_differing_from_query),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_value_tokens_differing),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_out_heads_differing_from_value),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_out_head_dim_differing_from_value),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_g_of_5_heads),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_beta_tokens_differing),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_3d_g),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_int32_g),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_f16_g_for_f32_query),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_int32_beta),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_key_dtype_differing_from_query),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_state_value_heads_differing),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_state_key_dim_differing),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_state_value_dim_differing),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_bf16_state_pool),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_state_of_another_pool),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_lightning_pool),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_hand_made_state),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_freed_slot),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_never_allocated_slot),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_slot_past_the_pool),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_slot_below_minus_1),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_nan_scale),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_negative_scale),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_infinite_scale),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_use_l2norm_2),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_without_host_num_accepted),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_without_num_accepted_tensor),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_tensor_without_host_copy),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_host_spec_without_tensor),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_num_accepted_0),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_negative_num_accepted),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_num_accepted_past_num_spec_plus_1),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_request_longer_than_num_spec_plus_1),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_num_spec_differing_from_tensor),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_negative_num_spec),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_rows_differing_from_num_seqs),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_i64_spec_state_indices),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_num_accepted_of_2_requests),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_slot_past_the_pool),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_freed_spec_slot),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_never_allocated_spec_slot),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_unset_spec_slot_it_reads),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_slot_below_minus_1),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_spec_slot_shared_by_two_requests),
        OPS_LINEAR_TEST(gated_delta_plan_refuses_slot_shared_by_two_requests),
    };
    return cmocka_run_group_tests_name("ops: attnrt_gated_delta_plan", tests, NULL, NULL);
}
