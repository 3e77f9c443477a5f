/* Bad inputs of attnrt_lightning_plan (ABI 1.2); the baseline is in ops_linear.h. */
#include <limits.h>

#include "ops_linear.h"

static const char LP[] = "attnrt_lightning_plan";

#define LPLAN_REJECTS(f, expected, needle)                                                                    \
    OPS_STATE_PLAN_REJECTS((f), LP, attnrt_lightning_plan, (f)->ctx, &(f)->x->lin, &(f)->x->lin_batch,        \
                           &(f)->x->lin_states, (f)->x->lin_pool, (expected), (needle))
#define LPLAN_INVALID(f, needle) LPLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

/* A new pool of `slots` slots of [h, dk, dv] (0..2 allocated) replaces the op's pool and state. */
static void replace_lin_pool(ops_fixture_t *f, attnrt_dtype_t dtype, int64_t h, int64_t dk, int64_t dv)
{
    const int64_t slot[3] = {h, dk, dv};
    f->x->lin_pool = ops_pool(f, dtype, 3, slot, 4, 3, &f->x->lin_state);
}

static void lightning_plan_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_workspace_of(ops_lightning_plan_ok(f));
}

static void lightning_plan_accepts_padding_row(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[1] = -1;
    ops_lightning_plan_ok(f);
}

static void lightning_plan_accepts_null_activation_data(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lq.data = f->x->lk.data = f->x->lv.data = f->x->lout.data = NULL;
    ops_lightning_plan_ok(f);
}

static void lightning_plan_accepts_u8_has_initial_state(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_has_init.dtype = ATTNRT_U8;
    ops_lightning_plan_ok(f);
}

/* ---- null pointers and struct sizes ---- */

static void lightning_plan_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, LP, attnrt_lightning_plan, NULL, &f->x->lin, &f->x->lin_batch, &f->x->lin_states,
                           f->x->lin_pool, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void lightning_plan_refuses_null_plan_out(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, LP,
                attnrt_lightning_plan(f->ctx, &f->x->lin, &f->x->lin_batch, &f->x->lin_states, f->x->lin_pool, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
}

static void lightning_plan_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, LP, attnrt_lightning_plan, f->ctx, NULL, &f->x->lin_batch, &f->x->lin_states,
                           f->x->lin_pool, ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void lightning_plan_refuses_null_batch(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, LP, attnrt_lightning_plan, f->ctx, &f->x->lin, NULL, &f->x->lin_states,
                           f->x->lin_pool, ATTNRT_ERR_INVALID_ARGUMENT, "batch is NULL");
}

static void lightning_plan_refuses_null_states(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, LP, attnrt_lightning_plan, f->ctx, &f->x->lin, &f->x->lin_batch, NULL,
                           f->x->lin_pool, ATTNRT_ERR_INVALID_ARGUMENT, "states is NULL");
}

static void lightning_plan_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    OPS_STATE_PLAN_REJECTS(f, LP, attnrt_lightning_plan, f->ctx, &f->x->lin, &f->x->lin_batch, &f->x->lin_states,
                           NULL, ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
}

static void lightning_plan_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin.struct_size = 0;
    LPLAN_INVALID(f, "args->struct_size = 0");
}

static void lightning_plan_refuses_batch_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_batch.struct_size = 0;
    LPLAN_INVALID(f, "batch->struct_size = 0");
}

static void lightning_plan_refuses_states_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_states.struct_size = 0;
    LPLAN_INVALID(f, "states->struct_size = 0");
}

static void lightning_plan_refuses_query_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lq.struct_size = 0;
    LPLAN_INVALID(f, "query.struct_size = 0");
}

#define LIN_NULL_TENSOR_TEST(field)                                 \
    static void lightning_plan_refuses_null_##field(void **state)   \
    {                                                               \
        ops_fixture_t *f = *state;                                  \
        f->x->lin.field = NULL;                                     \
        LPLAN_INVALID(f, #field " is NULL");                        \
    }
LIN_NULL_TENSOR_TEST(query)
LIN_NULL_TENSOR_TEST(key)
LIN_NULL_TENSOR_TEST(value)
LIN_NULL_TENSOR_TEST(out)
LIN_NULL_TENSOR_TEST(slopes)
LIN_NULL_TENSOR_TEST(state)
LIN_NULL_TENSOR_TEST(query_start_loc)
LIN_NULL_TENSOR_TEST(state_indices)
LIN_NULL_TENSOR_TEST(has_initial_state)

static void lightning_plan_refuses_null_host_state_indices(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_states.state_indices = NULL;
    LPLAN_INVALID(f, "state_indices is NULL");
}

static void lightning_plan_refuses_null_host_has_initial_state(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_states.has_initial_state = NULL;
    LPLAN_INVALID(f, "has_initial_state is NULL");
}

static void lightning_plan_refuses_null_host_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_batch.query_start_loc = NULL;
    LPLAN_INVALID(f, "query_start_loc is NULL");
}

/* ---- ndim and dtype ---- */

static void lightning_plan_refuses_2d_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lq.ndim = 2;
    LPLAN_INVALID(f, "query.ndim = 2, expected 3");
}

static void lightning_plan_refuses_int32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lq.dtype = ATTNRT_I32;
    LPLAN_INVALID(f, "query.dtype = i32");
}

static void lightning_plan_refuses_key_dtype_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lk.dtype = ATTNRT_F16;
    LPLAN_INVALID(f, "key.dtype = f16");
}

static void lightning_plan_refuses_value_dtype_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lv.dtype = ATTNRT_BF16;
    LPLAN_INVALID(f, "value.dtype = bf16");
}

static void lightning_plan_refuses_bf16_out_for_f32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lout.dtype = ATTNRT_BF16;
    LPLAN_INVALID(f, "out.dtype = bf16");
}

static void lightning_plan_refuses_f16_slopes(void **state)
{
    ops_fixture_t *f = *state;
    f->x->slopes.dtype = ATTNRT_F16;
    LPLAN_INVALID(f, "slopes.dtype = f16");
}

static void lightning_plan_refuses_2d_slopes(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape2(&f->x->slopes, 1, OPS_LIN_H);
    LPLAN_INVALID(f, "slopes.ndim = 2, expected 1");
}

static void lightning_plan_refuses_slopes_of_3_heads(void **state)
{
    ops_fixture_t *f = *state;
    f->x->slopes.shape[0] = OPS_LIN_H + 1;
    LPLAN_INVALID(f, "slopes.shape[0] = 3");
}

static void lightning_plan_refuses_i64_state_indices(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_state_indices.dtype = ATTNRT_I64;
    LPLAN_INVALID(f, "state_indices.dtype = i64");
}

static void lightning_plan_refuses_f32_has_initial_state(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_has_init.dtype = ATTNRT_F32;
    LPLAN_INVALID(f, "has_initial_state.dtype = f32");
}

static void lightning_plan_refuses_f32_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->qsl.dtype = ATTNRT_F32;
    LPLAN_INVALID(f, "query_start_loc.dtype = f32");
}

static void lightning_plan_refuses_f16_state_pool(void **state)
{
    ops_fixture_t *f = *state;
    replace_lin_pool(f, ATTNRT_F16, OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV);
    LPLAN_INVALID(f, "state.dtype = f16");
}

static void lightning_plan_refuses_pool_of_2d_slots(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t slot[2] = {OPS_LIN_H, OPS_LIN_DK * OPS_LIN_DV};
    f->x->lin_pool = ops_pool(f, ATTNRT_F32, 2, slot, 4, 3, &f->x->lin_state);
    LPLAN_INVALID(f, "state.ndim = 3, expected 4");
}

/* ---- shapes and strides ---- */

static void lightning_plan_refuses_key_head_dim_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->lk, OPS_T, OPS_LIN_H, 4);
    LPLAN_INVALID(f, "key.shape[2] = 4");
}

static void lightning_plan_refuses_key_heads_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->lk, OPS_T, 1, OPS_LIN_DK);
    LPLAN_INVALID(f, "key.shape[1] = 1");
}

static void lightning_plan_refuses_key_tokens_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lk.shape[0] = OPS_T - 1;
    LPLAN_INVALID(f, "key.shape[0] = 8");
}

static void lightning_plan_refuses_value_heads_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->lv, OPS_T, 1, OPS_LIN_DV);
    LPLAN_INVALID(f, "value.shape[1] = 1");
}

static void lightning_plan_refuses_value_tokens_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lv.shape[0] = OPS_T - 1;
    LPLAN_INVALID(f, "value.shape[0] = 8");
}

static void lightning_plan_refuses_out_head_dim_differing_from_value(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->lout, OPS_T, OPS_LIN_H, 6);
    LPLAN_INVALID(f, "out.shape[2] = 6");
}

static void lightning_plan_refuses_out_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    ops_reshape3(&f->x->lout, OPS_T, 1, OPS_LIN_DV);
    LPLAN_INVALID(f, "out.shape[1] = 1");
}

static void lightning_plan_refuses_out_tokens_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lout.shape[0] = OPS_T - 1;
    LPLAN_INVALID(f, "out.shape[0] = 8");
}

static void lightning_plan_refuses_state_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    replace_lin_pool(f, ATTNRT_F32, OPS_LIN_H + 2, OPS_LIN_DK, OPS_LIN_DV);
    LPLAN_INVALID(f, "state.shape[1] = 4");
}

static void lightning_plan_refuses_state_key_dim_differing(void **state)
{
    ops_fixture_t *f = *state;
    replace_lin_pool(f, ATTNRT_F32, OPS_LIN_H, 6, OPS_LIN_DV);
    LPLAN_INVALID(f, "state.shape[2] = 6");
}

static void lightning_plan_refuses_state_value_dim_differing(void **state)
{
    ops_fixture_t *f = *state;
    replace_lin_pool(f, ATTNRT_F32, OPS_LIN_H, OPS_LIN_DK, 6);
    LPLAN_INVALID(f, "state.shape[3] = 6");
}

static void lightning_plan_refuses_state_indices_of_4_requests(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_state_indices.shape[0] = OPS_B + 1;
    LPLAN_INVALID(f, "state_indices.shape[0] = 4");
}

static void lightning_plan_refuses_has_initial_state_of_2_requests(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_has_init.shape[0] = OPS_B - 1;
    LPLAN_INVALID(f, "has_initial_state.shape[0] = 2");
}

static void lightning_plan_refuses_query_start_loc_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->qsl.shape[0] = OPS_B; /* num_seqs comes from query_start_loc here, so another tensor disagrees */
    LPLAN_INVALID(f, "query_start_loc.shape[0]");
}

static void lightning_plan_refuses_empty_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->qsl.shape[0] = 0;
    LPLAN_INVALID(f, "query_start_loc.shape[0] = 0");
}

static void lightning_plan_refuses_negative_query_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lq.strides[1] = -8;
    LPLAN_INVALID(f, "query.strides[1] = -8 < 0");
}

static void lightning_plan_refuses_query_inner_stride_2(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lq.strides[2] = 2;
    LPLAN_INVALID(f, "query.strides[2] = 2");
}

/* ---- the state must be the pool's tensor ---- */

static void lightning_plan_refuses_state_of_another_pool(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t slot[3] = {OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_tensor_t other;
    ops_pool(f, ATTNRT_F32, 3, slot, OPS_LIN_SLOTS, OPS_LIN_ALLOCATED, &other); /* same shape, same slots */
    f->x->lin.state = &other;
    LPLAN_INVALID(f, "state is not the pool's tensor");
}

static void lightning_plan_refuses_hand_made_state(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_LIN_SLOTS, OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_tensor_t hand;
    ops_tensor(&hand, f->dev[OB_KEY_CACHE], ATTNRT_F32, 4, shape); /* 512 of its 2048 floats */
    f->x->lin.state = &hand;
    LPLAN_INVALID(f, "state is not the pool's tensor");
}

/* The pool's pointer with a slot pitch twice the slot size: slot 2 would be read past the storage. */
static void lightning_plan_refuses_state_with_the_pools_pointer_but_other_strides(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_state.strides[0] *= 2;
    LPLAN_INVALID(f, "state");
}

/* The pool's pointer with more slots than the pool has. */
static void lightning_plan_refuses_state_with_the_pools_pointer_but_more_slots(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_state.shape[0] = 2 * OPS_LIN_SLOTS;
    f->x->h_lin_state_indices[2] = OPS_LIN_SLOTS + 1;
    LPLAN_INVALID(f, "state");
}

/* ---- the host state indices ---- */

static void lightning_plan_refuses_freed_slot(void **state)
{
    ops_fixture_t *f = *state;
    OPS_OK(attnrt_state_slot_free(f->x->lin_pool, 1));
    LPLAN_INVALID(f, "state_indices[1] = 1: slot 1 is not allocated");
}

static void lightning_plan_refuses_never_allocated_slot(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[2] = OPS_LIN_SLOTS - 1; /* slot 7: free */
    LPLAN_INVALID(f, "state_indices[2] = 7: slot 7 is not allocated");
}

static void lightning_plan_refuses_slot_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[2] = 900;
    LPLAN_INVALID(f, "state_indices[2] = 900 >= num_slots = 8");
}

static void lightning_plan_refuses_slot_equal_to_num_slots(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[0] = OPS_LIN_SLOTS;
    LPLAN_INVALID(f, "state_indices[0] = 8 >= num_slots = 8");
}

static void lightning_plan_refuses_slot_below_minus_1(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[0] = -2;
    LPLAN_INVALID(f, "state_indices[0] = -2");
}

static void lightning_plan_refuses_slot_int32_min(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[1] = INT32_MIN;
    LPLAN_INVALID(f, "state_indices[1] = -2147483648");
}

/* Two requests on one slot would race on its state. */
static void lightning_plan_refuses_slot_shared_by_two_requests(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_state_indices[2] = 0;
    LPLAN_INVALID(f, "state_indices[2] = 0&&state_indices[0]");
}

static void lightning_plan_refuses_has_initial_state_2(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_lin_has_init[1] = 2;
    LPLAN_INVALID(f, "has_initial_state[1] = 2");
}

/* Speculative decoding is the gated delta rule's; lightning has no spec tensors to match. */
static void lightning_plan_refuses_spec_metadata_in_states(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_states.spec_state_indices = f->x->h_spec;
    f->x->lin_states.num_accepted = f->x->h_num_accepted;
    f->x->lin_states.num_spec = 2;
    LPLAN_INVALID(f, "states->spec_state_indices is given&&this op has no speculative decoding");
}

static void lightning_plan_refuses_num_spec_in_states(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_states.num_spec = 2;
    LPLAN_INVALID(f, "num_spec = 2&&this op has no speculative decoding");
}

static void lightning_plan_refuses_pool_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t slot[3] = {OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_state_pool_t *pool = NULL;
    ops_foreign_stream(f); /* opens the second context */
    OPS_OK(attnrt_state_pool_create(f->other_ctx, ATTNRT_F32, 3, slot, OPS_LIN_SLOTS, &pool));
    ops_keep_pool(f, pool);
    for (int i = 0; i < OPS_LIN_ALLOCATED; i++) {
        int32_t id;
        OPS_OK(attnrt_state_slot_alloc(pool, &id));
    }
    OPS_OK(attnrt_state_pool_tensor(pool, &f->x->lin_state));
    f->x->lin_pool = pool;
    LPLAN_INVALID(f, "pool&&another context");
}

/* ---- the host batch ---- */

static void lightning_plan_refuses_num_seqs_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_batch.num_seqs = OPS_B - 1;
    LPLAN_INVALID(f, "num_seqs = 2");
}

static void lightning_plan_refuses_negative_num_seqs(void **state)
{
    ops_fixture_t *f = *state;
    f->x->lin_batch.num_seqs = -1;
    LPLAN_INVALID(f, "num_seqs = -1");
}

static void lightning_plan_refuses_query_start_loc_not_starting_at_0(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[0] = 1;
    LPLAN_INVALID(f, "query_start_loc[0] = 1");
}

static void lightning_plan_refuses_non_monotonic_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[2] = 4;
    LPLAN_INVALID(f, "query_start_loc[2] = 4 < query_start_loc[1] = 5");
}

static void lightning_plan_refuses_query_start_loc_ending_past_num_tokens(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[OPS_B] = OPS_T + 1;
    LPLAN_INVALID(f, "query_start_loc[3] = 10");
}

int ops_run_lightning_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_LINEAR_TEST(lightning_plan_baseline_succeeds),
        OPS_LINEAR_TEST(lightning_plan_accepts_padding_row),
        OPS_LINEAR_TEST(lightning_plan_accepts_null_activation_data),
        OPS_LINEAR_TEST(lightning_plan_accepts_u8_has_initial_state),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_ctx),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_plan_out),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_args),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_batch),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_states),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_pool),
        OPS_LINEAR_TEST(lightning_plan_refuses_args_struct_size_0),
        OPS_LINEAR_TEST(lightning_plan_refuses_batch_struct_size_0),
        OPS_LINEAR_TEST(lightning_plan_refuses_states_struct_size_0),
        OPS_LINEAR_TEST(lightning_plan_refuses_query_struct_size_0),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_key),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_value),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_out),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_slopes),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_state),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_query_start_loc),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_state_indices),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_has_initial_state),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_host_state_indices),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_host_has_initial_state),
        OPS_LINEAR_TEST(lightning_plan_refuses_null_host_query_start_loc),
        OPS_LINEAR_TEST(lightning_plan_refuses_2d_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_int32_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_key_dtype_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_value_dtype_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_bf16_out_for_f32_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_f16_slopes),
        OPS_LINEAR_TEST(lightning_plan_refuses_2d_slopes),
        OPS_LINEAR_TEST(lightning_plan_refuses_slopes_of_3_heads),
        OPS_LINEAR_TEST(lightning_plan_refuses_i64_state_indices),
        OPS_LINEAR_TEST(lightning_plan_refuses_f32_has_initial_state),
        OPS_LINEAR_TEST(lightning_plan_refuses_f32_query_start_loc),
        OPS_LINEAR_TEST(lightning_plan_refuses_f16_state_pool),
        OPS_LINEAR_TEST(lightning_plan_refuses_pool_of_2d_slots),
        OPS_LINEAR_TEST(lightning_plan_refuses_key_head_dim_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_key_heads_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_key_tokens_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_value_heads_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_value_tokens_differing_from_query),
        OPS_LINEAR_TEST(lightning_plan_refuses_out_head_dim_differing_from_value),
        OPS_LINEAR_TEST(lightning_plan_refuses_out_heads_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_out_tokens_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_heads_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_key_dim_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_value_dim_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_indices_of_4_requests),
        OPS_LINEAR_TEST(lightning_plan_refuses_has_initial_state_of_2_requests),
        OPS_LINEAR_TEST(lightning_plan_refuses_query_start_loc_length_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_empty_query_start_loc),
        OPS_LINEAR_TEST(lightning_plan_refuses_negative_query_stride),
        OPS_LINEAR_TEST(lightning_plan_refuses_query_inner_stride_2),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_of_another_pool),
        OPS_LINEAR_TEST(lightning_plan_refuses_hand_made_state),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_with_the_pools_pointer_but_other_strides),
        OPS_LINEAR_TEST(lightning_plan_refuses_state_with_the_pools_pointer_but_more_slots),
        OPS_LINEAR_TEST(lightning_plan_refuses_freed_slot),
        OPS_LINEAR_TEST(lightning_plan_refuses_never_allocated_slot),
        OPS_LINEAR_TEST(lightning_plan_refuses_slot_past_the_pool),
        OPS_LINEAR_TEST(lightning_plan_refuses_slot_equal_to_num_slots),
        OPS_LINEAR_TEST(lightning_plan_refuses_slot_below_minus_1),
        OPS_LINEAR_TEST(lightning_plan_refuses_slot_int32_min),
        OPS_LINEAR_TEST(lightning_plan_refuses_slot_shared_by_two_requests),
        OPS_LINEAR_TEST(lightning_plan_refuses_has_initial_state_2),
        OPS_LINEAR_TEST(lightning_plan_refuses_spec_metadata_in_states),
        OPS_LINEAR_TEST(lightning_plan_refuses_num_spec_in_states),
        OPS_LINEAR_TEST(lightning_plan_refuses_pool_of_another_context),
        OPS_LINEAR_TEST(lightning_plan_refuses_num_seqs_differing),
        OPS_LINEAR_TEST(lightning_plan_refuses_negative_num_seqs),
        OPS_LINEAR_TEST(lightning_plan_refuses_query_start_loc_not_starting_at_0),
        OPS_LINEAR_TEST(lightning_plan_refuses_non_monotonic_query_start_loc),
        OPS_LINEAR_TEST(lightning_plan_refuses_query_start_loc_ending_past_num_tokens),
    };
    return cmocka_run_group_tests_name("ops: attnrt_lightning_plan", tests, NULL, NULL);
}
