/* Bad inputs of attnrt_attention_run: the plan is the valid baseline's; each test then runs with one
 * thing broken or differing from the plan, and expects the refusal and no byte of out, lse, caches or
 * workspace written. */
#include <math.h>
#include <stdio.h>

#include "ops_fixture.h"
#include "ops_planner.h"

static const char AR[] = "attnrt_attention_run";

#define RUN_REJECTS(f, plan, expected, needle)                                                              \
    OPS_REJECTS((f), AR, attnrt_attention_run((plan), &(f)->att, (f)->dev[OB_WORKSPACE], (f)->bytes[OB_WORKSPACE], \
                                              NULL),                                                        \
                (expected), (needle))
#define RUN_INVALID(f, plan, needle) RUN_REJECTS(f, plan, ATTNRT_ERR_INVALID_ARGUMENT, needle)

static size_t workspace_of(attnrt_plan_t *plan)
{
    size_t bytes = 0;
    OPS_OK(attnrt_plan_workspace_size(plan, &bytes));
    return bytes;
}

/* ---- the baseline ---- */

static void attention_run_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    size_t ws = workspace_of(plan);
    OPS_OK(attnrt_attention_run(plan, &f->att, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

/* ---- the plan ---- */

static void attention_run_refuses_null_plan(void **state)
{
    ops_fixture_t *f = *state;
    RUN_INVALID(f, NULL, "plan is NULL");
}

static void attention_run_refuses_cascade_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    RUN_INVALID(f, plan, "plan was made by attnrt_cascade_plan; use attnrt_cascade_run");
}

/* ---- the args themselves ---- */

static void attention_run_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    OPS_REJECTS(f, AR, attnrt_attention_run(plan, NULL, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void attention_run_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.struct_size = 0;
    RUN_INVALID(f, plan, "args->struct_size = 0");
}

static void attention_run_refuses_null_out(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.out = NULL;
    RUN_INVALID(f, plan, "out is NULL");
}

static void attention_run_refuses_null_query_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->query.data = NULL;
    RUN_INVALID(f, plan, "query.data is NULL");
}

static void attention_run_refuses_null_out_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->out.data = NULL;
    RUN_INVALID(f, plan, "out.data is NULL");
}

static void attention_run_refuses_null_block_table_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->block_table.data = NULL;
    RUN_INVALID(f, plan, "block_table.data is NULL");
}

static void attention_run_refuses_null_lse_data(void **state)
{
    ops_fixture_t *f = *state;
    f->att.lse = &f->lse;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->lse.data = NULL;
    RUN_INVALID(f, plan, "lse.data is NULL");
}

/* [2^31-1, 1024, 2, 16] f32 caches, just inside the 2^48-byte limit on a tensor: NULL data must still be refused.
 * Non-causal with every seq_len 0, so a kernel reached by mistake reads no key. */
static void attention_run_refuses_null_data_of_a_huge_cache(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t huge[4] = {INT32_MAX, 1024, OPS_HKV, OPS_D};
    const int32_t zeros[OPS_B] = {0, 0, 0};
    ops_retensor(&f->key_cache, ATTNRT_F32, 4, huge);
    ops_retensor(&f->value_cache, ATTNRT_F32, 4, huge);
    f->key_cache.data = f->value_cache.data = NULL;
    f->att.causal = 0;
    memcpy(f->h_seq_lens, zeros, sizeof zeros);
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, f->seq_lens.data, zeros, sizeof zeros, NULL));
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    RUN_INVALID(f, plan, "key_cache.data is NULL");
}

static void attention_run_refuses_negative_stride(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->query.strides[1] = -16;
    RUN_INVALID(f, plan, "query.strides[1] = -16 < 0");
}

static void attention_run_refuses_nan_scale(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.scale = NAN;
    RUN_INVALID(f, plan, "scale = nan");
}

/* ---- args differing from the plan ---- */

static void attention_run_refuses_batch_shape_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->query.shape[0] = f->out.shape[0] = OPS_T - 1;
    RUN_INVALID(f, plan, "query differs from the plan (layout, shape, dtype or strides)");
}

static void attention_run_refuses_out_strides_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->out.strides[0] = OPS_HQ * OPS_D + 8; /* a padded row pitch */
    RUN_INVALID(f, plan, "out differs from the plan (layout");
}

static void attention_run_refuses_cache_dtype_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->key_cache.dtype = f->value_cache.dtype = ATTNRT_F16;
    RUN_INVALID(f, plan, "key_cache differs from the plan (layout");
}

static void attention_run_refuses_cache_layout_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    /* HND instead of the planned NHD: [blocks, Hkv, block_size, D] in memory */
    attnrt_tensor_t *caches[2] = {&f->key_cache, &f->value_cache};
    for (int i = 0; i < 2; i++) {
        caches[i]->strides[1] = OPS_D;
        caches[i]->strides[2] = OPS_BLOCK * OPS_D;
    }
    RUN_INVALID(f, plan, "key_cache differs from the plan (layout");
}

static void attention_run_refuses_lse_given_when_plan_had_none(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.lse = &f->lse;
    RUN_INVALID(f, plan, "lse differs from the plan (given or absent");
}

static void attention_run_refuses_lse_absent_when_planned(void **state)
{
    ops_fixture_t *f = *state;
    f->att.lse = &f->lse;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.lse = NULL;
    RUN_INVALID(f, plan, "lse differs from the plan (given or absent");
}

static void attention_run_refuses_window_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.sliding_window_left = 4;
    RUN_INVALID(f, plan, "window differ from the plan (planned scale 0 softcap 0 causal 1 window 0/0, got 0 0 1 4/0)");
}

static void attention_run_refuses_causal_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.causal = 0;
    RUN_INVALID(f, plan, "got 0 0 0 0/0");
}

static void attention_run_refuses_scale_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.scale = 0.5f;
    RUN_INVALID(f, plan, "got 0.5 0 1 0/0");
}

static void attention_run_refuses_softcap_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    f->att.softcap = 30.0f;
    RUN_INVALID(f, plan, "got 0 30 1 0/0");
}

/* ---- workspace and stream ---- */

/* On the planner device: cpu attention plans ask for no workspace. */
static void attention_run_refuses_workspace_smaller_than_planned(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_attention_plan(ops_planner_context(f), &f->att, &f->batch, &plan));
    ops_keep_plan(f, plan);
    size_t ws = workspace_of(plan);
    assert_true(ws > 0);
    char needle[96];
    snprintf(needle, sizeof needle, "workspace_bytes = %zu < %zu the plan needs", ws - 1, ws);
    OPS_REJECTS(f, AR, attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], ws - 1, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, needle);
}

static void attention_run_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, AR, attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], foreign),
                ATTNRT_ERR_INVALID_ARGUMENT, "stream belongs to another context");
}

int ops_run_attention_run_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(attention_run_baseline_succeeds),
        OPS_TEST(attention_run_refuses_null_plan),
        OPS_TEST(attention_run_refuses_cascade_plan),
        OPS_TEST(attention_run_refuses_null_args),
        OPS_TEST(attention_run_refuses_args_struct_size_0),
        OPS_TEST(attention_run_refuses_null_out),
        OPS_TEST(attention_run_refuses_null_query_data),
        OPS_TEST(attention_run_refuses_null_out_data),
        OPS_TEST(attention_run_refuses_null_block_table_data),
        OPS_TEST(attention_run_refuses_null_lse_data),
        OPS_TEST(attention_run_refuses_null_data_of_a_huge_cache),
        OPS_TEST(attention_run_refuses_negative_stride),
        OPS_TEST(attention_run_refuses_nan_scale),
        OPS_TEST(attention_run_refuses_batch_shape_differing_from_plan),
        OPS_TEST(attention_run_refuses_out_strides_differing_from_plan),
        OPS_TEST(attention_run_refuses_cache_dtype_differing_from_plan),
        OPS_TEST(attention_run_refuses_cache_layout_differing_from_plan),
        OPS_TEST(attention_run_refuses_lse_given_when_plan_had_none),
        OPS_TEST(attention_run_refuses_lse_absent_when_planned),
        OPS_TEST(attention_run_refuses_window_differing_from_plan),
        OPS_TEST(attention_run_refuses_causal_differing_from_plan),
        OPS_TEST(attention_run_refuses_scale_differing_from_plan),
        OPS_TEST(attention_run_refuses_softcap_differing_from_plan),
        OPS_PLANNER_TEST(attention_run_refuses_workspace_smaller_than_planned),
        OPS_TEST(attention_run_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_attention_run", tests, NULL, NULL);
}
