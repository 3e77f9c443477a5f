/* Bad inputs of attnrt_lightning_plan / _run and attnrt_gated_delta_plan / _run (ABI 1.2). Baselines
 * (ops_fixture.h): the fixture's batch of 3 requests over T = 9 tokens; lightning H 2, Dk 8, Dv 4 with
 * a pool of 8 slots (0..5 allocated); gated delta H 2, HV 4, Dk 8, Dv 4 with a pool of 16 slots (0..14
 * allocated); state_indices {0, 1, 2}, has_initial_state {0, 1, 1}; spec: num_spec 4,
 * spec_state_indices = slots 0..14, num_accepted {1, 3, 5}. Every pool's storage is poisoned and
 * compared after each refused call. */
#include <limits.h>
#include <math.h>
#include <stdio.h>

#include "ops_fixture.h"
#include "ops_planner.h"

static const char LP[] = "attnrt_lightning_plan";
static const char LR[] = "attnrt_lightning_run";
static const char GP[] = "attnrt_gated_delta_plan";
static const char GR[] = "attnrt_gated_delta_run";

#define LPLAN_REJECTS(f, expected, needle)                                                                    \
    OPS_STATE_PLAN_REJECTS((f), LP, attnrt_lightning_plan, (f)->ctx, &(f)->x->lin, &(f)->x->lin_batch,        \
                           &(f)->x->lin_states, (f)->x->lin_pool, (expected), (needle))
#define LPLAN_INVALID(f, needle) LPLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)
#define GPLAN_REJECTS(f, expected, needle)                                                                    \
    OPS_STATE_PLAN_REJECTS((f), GP, attnrt_gated_delta_plan, (f)->ctx, &(f)->x->gdn, &(f)->x->lin_batch,      \
                           &(f)->x->gdn_states, (f)->x->gdn_pool, (expected), (needle))
#define GPLAN_INVALID(f, needle) GPLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

#define LRUN_INVALID(f, plan, needle)                                                                         \
    OPS_REJECTS((f), LR, attnrt_lightning_run((plan), &(f)->x->lin, (f)->dev[OB_WORKSPACE],                   \
                                              (f)->bytes[OB_WORKSPACE], NULL),                                \
                ATTNRT_ERR_INVALID_ARGUMENT, (needle))
#define GRUN_INVALID(f, plan, needle)                                                                         \
    OPS_REJECTS((f), GR, attnrt_gated_delta_run((plan), &(f)->x->gdn, (f)->dev[OB_WORKSPACE],                 \
                                                (f)->bytes[OB_WORKSPACE], NULL),                              \
                ATTNRT_ERR_INVALID_ARGUMENT, (needle))

static void reshape2(attnrt_tensor_t *t, int64_t a, int64_t b)
{
    const int64_t shape[2] = {a, b};
    ops12_tensor(t, t->data, t->dtype, 2, shape);
}

static void reshape3(attnrt_tensor_t *t, int64_t a, int64_t b, int64_t c)
{
    const int64_t shape[3] = {a, b, c};
    ops12_tensor(t, t->data, t->dtype, 3, shape);
}

/* A new pool of `slots` slots of [h, dk, dv] (0..2 allocated) replaces the op's pool and state. */
static void replace_lin_pool(ops_fixture_t *f, attnrt_dtype_t dtype, int64_t h, int64_t dk, int64_t dv)
{
    const int64_t slot[3] = {h, dk, dv};
    f->x->lin_pool = ops12_pool(f, dtype, 3, slot, 4, 3, &f->x->lin_state);
}

static void replace_gdn_pool(ops_fixture_t *f, attnrt_dtype_t dtype, int64_t hv, int64_t dk, int64_t dv)
{
    const int64_t slot[3] = {hv, dk, dv};
    f->x->gdn_pool = ops12_pool(f, dtype, 3, slot, 4, 3, &f->x->gdn_state);
}

/* ============================== lightning plan ============================== */

static void lightning_plan_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops12_workspace_of(ops_lightning_plan_ok(f));
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
    reshape2(&f->x->slopes, 1, OPS_LIN_H);
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
    f->x->lin_pool = ops12_pool(f, ATTNRT_F32, 2, slot, 4, 3, &f->x->lin_state);
    LPLAN_INVALID(f, "state.ndim = 3, expected 4");
}

/* ---- shapes and strides ---- */

static void lightning_plan_refuses_key_head_dim_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->x->lk, OPS_T, OPS_LIN_H, 4);
    LPLAN_INVALID(f, "key.shape[2] = 4");
}

static void lightning_plan_refuses_key_heads_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->x->lk, OPS_T, 1, OPS_LIN_DK);
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
    reshape3(&f->x->lv, OPS_T, 1, OPS_LIN_DV);
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
    reshape3(&f->x->lout, OPS_T, OPS_LIN_H, 6);
    LPLAN_INVALID(f, "out.shape[2] = 6");
}

static void lightning_plan_refuses_out_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->x->lout, OPS_T, 1, OPS_LIN_DV);
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
    ops12_pool(f, ATTNRT_F32, 3, slot, OPS_LIN_SLOTS, OPS_LIN_ALLOCATED, &other); /* same shape, same slots */
    f->x->lin.state = &other;
    LPLAN_INVALID(f, "state is not the pool's tensor");
}

static void lightning_plan_refuses_hand_made_state(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_LIN_SLOTS, OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_tensor_t hand;
    ops12_tensor(&hand, f->dev[OB_KEY_CACHE], ATTNRT_F32, 4, shape); /* 512 of its 2048 floats */
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
    ops12_keep_pool(f, pool);
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

/* ============================== gated delta plan ============================== */

static void gated_delta_plan_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops12_workspace_of(ops_gated_delta_plan_ok(f));
}

static void gated_delta_plan_spec_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    ops12_workspace_of(ops_gated_delta_plan_ok(f));
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
    ops12_use_spec(f);
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
    ops12_use_spec(f);
    f->x->gdn_states.has_initial_state = NULL;
    GPLAN_INVALID(f, "has_initial_state is NULL");
}

/* ---- heads and dims ---- */

/* H 4, HV 6 throughout (q, k, v, g, beta, out and a pool of [6, 8, 4] slots): only HV % H is wrong. */
static void gated_delta_plan_refuses_value_heads_not_multiple_of_heads(void **state)
{
    ops_fixture_t *f = *state;
    ops12_t *x = f->x;
    reshape3(&x->gq, OPS_T, 4, OPS_LIN_DK);
    reshape3(&x->gk, OPS_T, 4, OPS_LIN_DK);
    reshape3(&x->gv, OPS_T, 6, OPS_LIN_DV);
    reshape3(&x->gout, OPS_T, 6, OPS_LIN_DV);
    reshape2(&x->g, OPS_T, 6);
    reshape2(&x->beta, OPS_T, 6);
    replace_gdn_pool(f, ATTNRT_F32, 6, OPS_LIN_DK, OPS_LIN_DV);
    GPLAN_INVALID(f, "num_v_heads = 6 (value.shape[1]) is not a multiple of num_heads = 4 (query.shape[1])");
}

static void gated_delta_plan_refuses_key_heads_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->x->gk, OPS_T, 1, OPS_LIN_DK);
    GPLAN_INVALID(f, "key.shape[1] = 1");
}

static void gated_delta_plan_refuses_key_head_dim_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->x->gk, OPS_T, OPS_LIN_H, 4);
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
    reshape3(&f->x->gout, OPS_T, OPS_LIN_H, OPS_LIN_DV);
    GPLAN_INVALID(f, "out.shape[1] = 2");
}

static void gated_delta_plan_refuses_out_head_dim_differing_from_value(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->x->gout, OPS_T, OPS_GDN_HV, 6);
    GPLAN_INVALID(f, "out.shape[2] = 6");
}

static void gated_delta_plan_refuses_g_of_5_heads(void **state)
{
    ops_fixture_t *f = *state;
    reshape2(&f->x->g, OPS_T, OPS_GDN_HV + 1);
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
    reshape3(&f->x->g, OPS_T, OPS_GDN_HV, 1);
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
    ops12_pool(f, ATTNRT_F32, 3, slot, OPS_GDN_SLOTS, OPS_GDN_ALLOCATED, &other);
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
    ops12_tensor(&hand, f->dev[OB_WORKSPACE], ATTNRT_F32, 4, shape);
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
    ops12_use_spec(f);
    f->x->gdn_states.num_accepted = NULL;
    GPLAN_INVALID(f, "num_accepted is NULL");
}

static void gated_delta_plan_refuses_spec_without_num_accepted_tensor(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->gdn.num_accepted = NULL;
    GPLAN_INVALID(f, "num_accepted is NULL");
}

static void gated_delta_plan_refuses_spec_tensor_without_host_copy(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->gdn_states.spec_state_indices = NULL;
    GPLAN_INVALID(f, "spec_state_indices is NULL");
}

static void gated_delta_plan_refuses_host_spec_without_tensor(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->gdn.spec_state_indices = NULL;
    f->x->gdn.num_accepted = NULL;
    GPLAN_INVALID(f, "spec_state_indices is NULL");
}

static void gated_delta_plan_refuses_num_accepted_0(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_num_accepted[1] = 0;
    GPLAN_INVALID(f, "num_accepted[1] = 0");
}

static void gated_delta_plan_refuses_negative_num_accepted(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_num_accepted[0] = -1;
    GPLAN_INVALID(f, "num_accepted[0] = -1");
}

static void gated_delta_plan_refuses_num_accepted_past_num_spec_plus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_num_accepted[2] = OPS_GDN_NUM_SPEC + 2;
    GPLAN_INVALID(f, "num_accepted[2] = 6");
}

/* num_spec 3: request 0 has 5 tokens, more than num_spec + 1 = 4. */
static void gated_delta_plan_refuses_request_longer_than_num_spec_plus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    reshape2(&f->x->spec, OPS_B, 4);
    f->x->gdn_states.num_spec = 3;
    f->x->h_num_accepted[2] = 4;
    GPLAN_INVALID(f, "request 0&&5&&num_spec");
}

static void gated_delta_plan_refuses_num_spec_differing_from_tensor(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->gdn_states.num_spec = OPS_GDN_NUM_SPEC - 1; /* the tensor has num_spec + 1 = 5 columns */
    GPLAN_INVALID(f, "num_spec = 3&&spec_state_indices.shape[1]");
}

static void gated_delta_plan_refuses_negative_num_spec(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->gdn_states.num_spec = -1;
    GPLAN_INVALID(f, "num_spec = -1");
}

static void gated_delta_plan_refuses_spec_rows_differing_from_num_seqs(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->spec.shape[0] = OPS_B - 1;
    GPLAN_INVALID(f, "spec_state_indices.shape[0] = 2");
}

static void gated_delta_plan_refuses_i64_spec_state_indices(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->spec.dtype = ATTNRT_I64;
    GPLAN_INVALID(f, "spec_state_indices.dtype = i64");
}

static void gated_delta_plan_refuses_num_accepted_of_2_requests(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->num_accepted.shape[0] = OPS_B - 1;
    GPLAN_INVALID(f, "num_accepted.shape[0] = 2");
}

static void gated_delta_plan_refuses_spec_slot_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1) + 2] = 900;
    GPLAN_INVALID(f, "spec_state_indices[1][2] = 900 >= num_slots = 16");
}

static void gated_delta_plan_refuses_freed_spec_slot(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    OPS_OK(attnrt_state_slot_free(f->x->gdn_pool, 7)); /* spec_state_indices[1][2] */
    GPLAN_INVALID(f, "spec_state_indices[1][2] = 7: slot 7 is not allocated");
}

static void gated_delta_plan_refuses_never_allocated_spec_slot(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_spec[2 * (OPS_GDN_NUM_SPEC + 1) + 4] = OPS_GDN_SLOTS - 1; /* the read slot of request 2 */
    GPLAN_INVALID(f, "spec_state_indices[2][4] = 15: slot 15 is not allocated");
}

/* has_initial_state[2] = 1 and num_accepted[2] = 5: request 2 reads spec_state_indices[2][4]. */
static void gated_delta_plan_refuses_unset_spec_slot_it_reads(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_spec[2 * (OPS_GDN_NUM_SPEC + 1) + 4] = -1;
    GPLAN_INVALID(f, "spec_state_indices[2][4] = -1");
}

static void gated_delta_plan_refuses_spec_slot_below_minus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1) + 1] = -3;
    GPLAN_INVALID(f, "spec_state_indices[1][1] = -3");
}

static void gated_delta_plan_refuses_spec_slot_shared_by_two_requests(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    f->x->h_spec[1 * (OPS_GDN_NUM_SPEC + 1) + 3] = 2; /* request 0's */
    GPLAN_INVALID(f, "spec_state_indices[1][3] = 2&&request 0");
}

static void gated_delta_plan_refuses_slot_shared_by_two_requests(void **state)
{
    ops_fixture_t *f = *state;
    f->x->h_gdn_state_indices[1] = 2;
    GPLAN_INVALID(f, "state_indices[2] = 2&&state_indices[1]");
}

/* ============================== runs ============================== */

static void lightning_run_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    size_t ws = ops12_workspace_of(plan);
    OPS_OK(attnrt_lightning_run(plan, &f->x->lin, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void gated_delta_run_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    size_t ws = ops12_workspace_of(plan);
    OPS_OK(attnrt_gated_delta_run(plan, &f->x->gdn, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void gated_delta_run_spec_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    size_t ws = ops12_workspace_of(plan);
    OPS_OK(attnrt_gated_delta_run(plan, &f->x->gdn, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void lightning_run_refuses_null_plan(void **state)
{
    ops_fixture_t *f = *state;
    LRUN_INVALID(f, NULL, "plan is NULL");
}

static void gated_delta_run_refuses_null_plan(void **state)
{
    ops_fixture_t *f = *state;
    GRUN_INVALID(f, NULL, "plan is NULL");
}

static void lightning_run_refuses_gated_delta_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    LRUN_INVALID(f, plan, "plan was made by attnrt_gated_delta_plan");
}

static void gated_delta_run_refuses_lightning_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    GRUN_INVALID(f, plan, "plan was made by attnrt_lightning_plan");
}

static void lightning_run_refuses_attention_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    LRUN_INVALID(f, plan, "plan was made by attnrt_attention_plan");
}

static void gated_delta_run_refuses_cascade_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    GRUN_INVALID(f, plan, "plan was made by attnrt_cascade_plan");
}

static void attention_run_refuses_lightning_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    OPS_REJECTS(f, "attnrt_attention_run",
                attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan was made by attnrt_lightning_plan");
}

static void mla_run_refuses_gated_delta_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    attnrt_mla_args_t mla = {.struct_size = sizeof mla}; /* refused on the plan before the args are read */
    OPS_REJECTS(f, "attnrt_mla_run", attnrt_mla_run(plan, &mla, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan was made by attnrt_gated_delta_plan");
}

static void lightning_run_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    OPS_REJECTS(f, LR, attnrt_lightning_run(plan, NULL, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void gated_delta_run_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    f->x->gdn.struct_size = 0;
    GRUN_INVALID(f, plan, "args->struct_size = 0");
}

static void lightning_run_refuses_null_query_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    f->x->lq.data = NULL;
    LRUN_INVALID(f, plan, "query.data is NULL");
}

static void lightning_run_refuses_null_has_initial_state(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    f->x->lin.has_initial_state = NULL;
    LRUN_INVALID(f, plan, "has_initial_state is NULL");
}

static void gated_delta_run_refuses_null_g_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    f->x->g.data = NULL;
    GRUN_INVALID(f, plan, "g.data is NULL");
}

static void lightning_run_refuses_batch_shape_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    f->x->lq.shape[0] = f->x->lk.shape[0] = f->x->lv.shape[0] = f->x->lout.shape[0] = OPS_T - 1;
    LRUN_INVALID(f, plan, "query differs from the plan");
}

static void gated_delta_run_refuses_out_strides_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    f->x->gout.strides[0] = OPS_GDN_HV * OPS_LIN_DV + 4; /* a padded row pitch */
    GRUN_INVALID(f, plan, "out differs from the plan");
}

static void gated_delta_run_refuses_tokens_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    ops12_t *x = f->x;
    x->gq.shape[0] = x->gk.shape[0] = x->gv.shape[0] = x->g.shape[0] = x->beta.shape[0] = x->gout.shape[0] = OPS_T - 1;
    GRUN_INVALID(f, plan, "query differs from the plan");
}

/* Plan once per step, run per layer: each layer has its own pool of the same shape, with the same slot
 * ids allocated in lockstep, so a run may pass another pool's tensor (only the layout must match). */
static void lightning_run_accepts_the_pool_of_another_layer(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    const int64_t slot[3] = {OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV};
    attnrt_tensor_t layer2;
    ops12_pool(f, ATTNRT_F32, 3, slot, OPS_LIN_SLOTS, OPS_LIN_ALLOCATED, &layer2);
    f->x->lin.state = &layer2;
    size_t ws = ops12_workspace_of(plan);
    OPS_OK(attnrt_lightning_run(plan, &f->x->lin, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void lightning_run_refuses_has_initial_state_dtype_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    f->x->lin_has_init.dtype = ATTNRT_U8;
    LRUN_INVALID(f, plan, "has_initial_state differs from the plan");
}

static void gated_delta_run_refuses_spec_given_when_plan_had_none(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    ops12_use_spec(f);
    GRUN_INVALID(f, plan, "spec_state_indices differs from the plan");
}

static void gated_delta_run_refuses_spec_absent_when_planned(void **state)
{
    ops_fixture_t *f = *state;
    ops12_use_spec(f);
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    f->x->gdn.spec_state_indices = NULL;
    f->x->gdn.num_accepted = NULL;
    GRUN_INVALID(f, plan, "spec_state_indices differs from the plan");
}

static void gated_delta_run_refuses_scale_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    f->x->gdn.scale = 0.5f;
    GRUN_INVALID(f, plan, "scale&&0.5");
}

static void gated_delta_run_refuses_use_l2norm_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    f->x->gdn.use_l2norm = 0;
    GRUN_INVALID(f, plan, "use_l2norm");
}

/* On the planner device (cpu plans ask for no workspace), with a pool there laid out as the baseline's. */
static void lightning_run_refuses_workspace_smaller_than_planned(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_tensor_t pool_tensor;
    attnrt_state_pool_t *pool = ops_planner_pool(f, f->x->lin_pool, &pool_tensor);
    f->x->lin.state = &pool_tensor;
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_lightning_plan(ops_planner_context(f), &f->x->lin, &f->x->lin_batch, &f->x->lin_states, pool,
                                 &plan));
    ops_keep_plan(f, plan);
    size_t ws = ops12_workspace_of(plan);
    assert_true(ws > 0);
    char needle[96];
    snprintf(needle, sizeof needle, "workspace_bytes = %zu < %zu the plan needs", ws - 1, ws);
    OPS_REJECTS(f, LR, attnrt_lightning_run(plan, &f->x->lin, f->dev[OB_WORKSPACE], ws - 1, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, needle);
}

/* As for lightning. */
static void gated_delta_run_refuses_workspace_smaller_than_planned(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_tensor_t pool_tensor;
    attnrt_state_pool_t *pool = ops_planner_pool(f, f->x->gdn_pool, &pool_tensor);
    f->x->gdn.state = &pool_tensor;
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_gated_delta_plan(ops_planner_context(f), &f->x->gdn, &f->x->lin_batch, &f->x->gdn_states, pool,
                                   &plan));
    ops_keep_plan(f, plan);
    size_t ws = ops12_workspace_of(plan);
    assert_true(ws > 0);
    char needle[96];
    snprintf(needle, sizeof needle, "workspace_bytes = %zu < %zu the plan needs", ws - 1, ws);
    OPS_REJECTS(f, GR, attnrt_gated_delta_run(plan, &f->x->gdn, f->dev[OB_WORKSPACE], ws - 1, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, needle);
}

static void lightning_run_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, LR, attnrt_lightning_run(plan, &f->x->lin, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], foreign),
                ATTNRT_ERR_INVALID_ARGUMENT, "stream belongs to another context");
}

static void gated_delta_run_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, GR,
                attnrt_gated_delta_run(plan, &f->x->gdn, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], foreign),
                ATTNRT_ERR_INVALID_ARGUMENT, "stream belongs to another context");
}

int ops_run_lightning_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS12_LINEAR_TEST(lightning_plan_baseline_succeeds),
        OPS12_LINEAR_TEST(lightning_plan_accepts_padding_row),
        OPS12_LINEAR_TEST(lightning_plan_accepts_null_activation_data),
        OPS12_LINEAR_TEST(lightning_plan_accepts_u8_has_initial_state),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_ctx),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_plan_out),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_args),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_batch),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_states),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_pool),
        OPS12_LINEAR_TEST(lightning_plan_refuses_args_struct_size_0),
        OPS12_LINEAR_TEST(lightning_plan_refuses_batch_struct_size_0),
        OPS12_LINEAR_TEST(lightning_plan_refuses_states_struct_size_0),
        OPS12_LINEAR_TEST(lightning_plan_refuses_query_struct_size_0),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_key),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_value),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_out),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_slopes),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_state),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_query_start_loc),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_state_indices),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_has_initial_state),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_host_state_indices),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_host_has_initial_state),
        OPS12_LINEAR_TEST(lightning_plan_refuses_null_host_query_start_loc),
        OPS12_LINEAR_TEST(lightning_plan_refuses_2d_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_int32_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_key_dtype_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_value_dtype_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_bf16_out_for_f32_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_f16_slopes),
        OPS12_LINEAR_TEST(lightning_plan_refuses_2d_slopes),
        OPS12_LINEAR_TEST(lightning_plan_refuses_slopes_of_3_heads),
        OPS12_LINEAR_TEST(lightning_plan_refuses_i64_state_indices),
        OPS12_LINEAR_TEST(lightning_plan_refuses_f32_has_initial_state),
        OPS12_LINEAR_TEST(lightning_plan_refuses_f32_query_start_loc),
        OPS12_LINEAR_TEST(lightning_plan_refuses_f16_state_pool),
        OPS12_LINEAR_TEST(lightning_plan_refuses_pool_of_2d_slots),
        OPS12_LINEAR_TEST(lightning_plan_refuses_key_head_dim_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_key_heads_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_key_tokens_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_value_heads_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_value_tokens_differing_from_query),
        OPS12_LINEAR_TEST(lightning_plan_refuses_out_head_dim_differing_from_value),
        OPS12_LINEAR_TEST(lightning_plan_refuses_out_heads_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_out_tokens_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_heads_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_key_dim_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_value_dim_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_indices_of_4_requests),
        OPS12_LINEAR_TEST(lightning_plan_refuses_has_initial_state_of_2_requests),
        OPS12_LINEAR_TEST(lightning_plan_refuses_query_start_loc_length_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_empty_query_start_loc),
        OPS12_LINEAR_TEST(lightning_plan_refuses_negative_query_stride),
        OPS12_LINEAR_TEST(lightning_plan_refuses_query_inner_stride_2),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_of_another_pool),
        OPS12_LINEAR_TEST(lightning_plan_refuses_hand_made_state),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_with_the_pools_pointer_but_other_strides),
        OPS12_LINEAR_TEST(lightning_plan_refuses_state_with_the_pools_pointer_but_more_slots),
        OPS12_LINEAR_TEST(lightning_plan_refuses_freed_slot),
        OPS12_LINEAR_TEST(lightning_plan_refuses_never_allocated_slot),
        OPS12_LINEAR_TEST(lightning_plan_refuses_slot_past_the_pool),
        OPS12_LINEAR_TEST(lightning_plan_refuses_slot_equal_to_num_slots),
        OPS12_LINEAR_TEST(lightning_plan_refuses_slot_below_minus_1),
        OPS12_LINEAR_TEST(lightning_plan_refuses_slot_int32_min),
        OPS12_LINEAR_TEST(lightning_plan_refuses_slot_shared_by_two_requests),
        OPS12_LINEAR_TEST(lightning_plan_refuses_has_initial_state_2),
        OPS12_LINEAR_TEST(lightning_plan_refuses_spec_metadata_in_states),
        OPS12_LINEAR_TEST(lightning_plan_refuses_num_spec_in_states),
        OPS12_LINEAR_TEST(lightning_plan_refuses_pool_of_another_context),
        OPS12_LINEAR_TEST(lightning_plan_refuses_num_seqs_differing),
        OPS12_LINEAR_TEST(lightning_plan_refuses_negative_num_seqs),
        OPS12_LINEAR_TEST(lightning_plan_refuses_query_start_loc_not_starting_at_0),
        OPS12_LINEAR_TEST(lightning_plan_refuses_non_monotonic_query_start_loc),
        OPS12_LINEAR_TEST(lightning_plan_refuses_query_start_loc_ending_past_num_tokens),
    };
    return cmocka_run_group_tests_name("ops: attnrt_lightning_plan", tests, NULL, NULL);
}

int ops_run_gated_delta_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS12_LINEAR_TEST(gated_delta_plan_baseline_succeeds),
        OPS12_LINEAR_TEST(gated_delta_plan_spec_baseline_succeeds),
        OPS12_LINEAR_TEST(gated_delta_plan_accepts_padding_row),
        OPS12_LINEAR_TEST(gated_delta_plan_accepts_spec_padding_row),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_ctx),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_plan_out),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_args),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_batch),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_states),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_pool),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_args_struct_size_0),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_states_struct_size_0),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_g_struct_size_0),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_query),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_key),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_value),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_g),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_beta),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_out),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_state),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_query_start_loc),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_state_indices),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_has_initial_state),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_host_state_indices),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_host_has_initial_state),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_null_host_has_initial_state_with_spec),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_value_heads_not_multiple_of_heads),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_key_heads_differing_from_query),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_key_head_dim_differing_from_query),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_value_tokens_differing),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_out_heads_differing_from_value),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_out_head_dim_differing_from_value),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_g_of_5_heads),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_beta_tokens_differing),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_3d_g),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_int32_g),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_f16_g_for_f32_query),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_int32_beta),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_key_dtype_differing_from_query),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_state_value_heads_differing),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_state_key_dim_differing),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_state_value_dim_differing),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_bf16_state_pool),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_state_of_another_pool),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_lightning_pool),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_hand_made_state),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_freed_slot),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_never_allocated_slot),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_slot_past_the_pool),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_slot_below_minus_1),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_nan_scale),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_negative_scale),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_infinite_scale),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_use_l2norm_2),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_without_host_num_accepted),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_without_num_accepted_tensor),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_tensor_without_host_copy),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_host_spec_without_tensor),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_num_accepted_0),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_negative_num_accepted),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_num_accepted_past_num_spec_plus_1),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_request_longer_than_num_spec_plus_1),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_num_spec_differing_from_tensor),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_negative_num_spec),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_rows_differing_from_num_seqs),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_i64_spec_state_indices),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_num_accepted_of_2_requests),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_slot_past_the_pool),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_freed_spec_slot),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_never_allocated_spec_slot),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_unset_spec_slot_it_reads),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_slot_below_minus_1),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_spec_slot_shared_by_two_requests),
        OPS12_LINEAR_TEST(gated_delta_plan_refuses_slot_shared_by_two_requests),
    };
    return cmocka_run_group_tests_name("ops: attnrt_gated_delta_plan", tests, NULL, NULL);
}

int ops_run_linear_run_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS12_LINEAR_TEST(lightning_run_baseline_succeeds),
        OPS12_LINEAR_TEST(gated_delta_run_baseline_succeeds),
        OPS12_LINEAR_TEST(gated_delta_run_spec_baseline_succeeds),
        OPS12_LINEAR_TEST(lightning_run_refuses_null_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_null_plan),
        OPS12_LINEAR_TEST(lightning_run_refuses_gated_delta_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_lightning_plan),
        OPS12_LINEAR_TEST(lightning_run_refuses_attention_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_cascade_plan),
        OPS12_LINEAR_TEST(attention_run_refuses_lightning_plan),
        OPS12_LINEAR_TEST(mla_run_refuses_gated_delta_plan),
        OPS12_LINEAR_TEST(lightning_run_refuses_null_args),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_args_struct_size_0),
        OPS12_LINEAR_TEST(lightning_run_refuses_null_query_data),
        OPS12_LINEAR_TEST(lightning_run_refuses_null_has_initial_state),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_null_g_data),
        OPS12_LINEAR_TEST(lightning_run_refuses_batch_shape_differing_from_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_out_strides_differing_from_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_tokens_differing_from_plan),
        OPS12_LINEAR_TEST(lightning_run_accepts_the_pool_of_another_layer),
        OPS12_LINEAR_TEST(lightning_run_refuses_has_initial_state_dtype_differing_from_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_spec_given_when_plan_had_none),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_spec_absent_when_planned),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_scale_differing_from_plan),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_use_l2norm_differing_from_plan),
        OPS_PLANNER_LINEAR_TEST(lightning_run_refuses_workspace_smaller_than_planned),
        OPS_PLANNER_LINEAR_TEST(gated_delta_run_refuses_workspace_smaller_than_planned),
        OPS12_LINEAR_TEST(lightning_run_refuses_stream_of_another_context),
        OPS12_LINEAR_TEST(gated_delta_run_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_lightning_run / attnrt_gated_delta_run", tests, NULL, NULL);
}
