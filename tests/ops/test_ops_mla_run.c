/* Bad inputs of attnrt_mla_run (ABI 1.2): a run against its plan, its args, workspace and stream. The
 * baselines are attnrt_mla_plan's (test_ops_mla_plan.c). */
#include <math.h>
#include <stdio.h>

#include "ops_fixture.h"
#include "ops_planner.h"

static const char MR[] = "attnrt_mla_run";

#define MRUN_REJECTS(f, plan, expected, needle)                                                            \
    OPS_REJECTS((f), MR, attnrt_mla_run((plan), &(f)->x->mla, (f)->dev[OB_WORKSPACE], (f)->bytes[OB_WORKSPACE], \
                                        NULL),                                                             \
                (expected), (needle))
#define MRUN_INVALID(f, plan, needle) MRUN_REJECTS(f, plan, ATTNRT_ERR_INVALID_ARGUMENT, needle)

static void mla_run_dense_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    size_t ws = ops_workspace_of(plan);
    OPS_OK(attnrt_mla_run(plan, &f->x->mla, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void mla_run_sparse_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    size_t ws = ops_workspace_of(plan);
    OPS_OK(attnrt_mla_run(plan, &f->x->mla, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void mla_run_refuses_null_plan(void **state)
{
    ops_fixture_t *f = *state;
    MRUN_INVALID(f, NULL, "plan is NULL");
}

static void mla_run_refuses_attention_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    MRUN_INVALID(f, plan, "plan was made by attnrt_attention_plan");
}

static void mla_run_refuses_cascade_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    MRUN_INVALID(f, plan, "plan was made by attnrt_cascade_plan");
}

static void attention_run_refuses_mla_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    OPS_REJECTS(f, "attnrt_attention_run",
                attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan was made by attnrt_mla_plan");
}

static void cascade_run_refuses_mla_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    OPS_REJECTS(f, "attnrt_cascade_run",
                attnrt_cascade_run(plan, &f->cas, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan was made by attnrt_mla_plan");
}

static void mla_run_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    OPS_REJECTS(f, MR, attnrt_mla_run(plan, NULL, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void mla_run_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.struct_size = 0;
    MRUN_INVALID(f, plan, "args->struct_size = 0");
}

static void mla_run_refuses_null_out(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.out = NULL;
    MRUN_INVALID(f, plan, "out is NULL");
}

static void mla_run_refuses_null_query_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla_query.data = NULL;
    MRUN_INVALID(f, plan, "query.data is NULL");
}

static void mla_run_refuses_null_kv_cache_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla_cache.data = NULL;
    MRUN_INVALID(f, plan, "kv_cache.data is NULL");
}

static void mla_run_refuses_null_out_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->out.data = NULL;
    MRUN_INVALID(f, plan, "out.data is NULL");
}

static void mla_run_refuses_null_indices_data(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->indices.data = NULL;
    MRUN_INVALID(f, plan, "indices.data is NULL");
}

static void mla_run_refuses_nan_scale(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.scale = NAN;
    MRUN_INVALID(f, plan, "scale = nan");
}

static void mla_run_refuses_batch_shape_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla_query.shape[0] = f->out.shape[0] = OPS_T - 1;
    MRUN_INVALID(f, plan, "query differs from the plan");
}

static void mla_run_refuses_cache_dtype_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla_cache.dtype = ATTNRT_F16;
    MRUN_INVALID(f, plan, "kv_cache differs from the plan");
}

static void mla_run_refuses_out_strides_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->out.strides[0] = OPS_HQ * OPS_MLA_V_DIM + 8;
    MRUN_INVALID(f, plan, "out differs from the plan");
}

static void mla_run_refuses_indices_given_when_plan_was_dense(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.indices = &f->x->indices;
    f->x->mla.indices_host = f->x->h_indices;
    MRUN_INVALID(f, plan, "indices differs from the plan");
}

static void mla_run_refuses_indices_absent_when_plan_was_sparse(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.indices = NULL;
    f->x->mla.indices_host = NULL;
    MRUN_INVALID(f, plan, "indices differs from the plan");
}

static void mla_run_refuses_lse_given_when_plan_had_none(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.lse = &f->lse;
    MRUN_INVALID(f, plan, "lse differs from the plan");
}

static void mla_run_refuses_scale_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.scale = 0.5f;
    MRUN_INVALID(f, plan, "scale&&0.5");
}

static void mla_run_refuses_causal_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    f->x->mla.causal = 0;
    MRUN_INVALID(f, plan, "causal = 0&&1");
}

/* On the planner device: cpu MLA plans ask for no workspace. */
static void mla_run_refuses_workspace_smaller_than_planned(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_mla_plan(ops_planner_context(f), &f->x->mla, &f->batch, &plan));
    ops_keep_plan(f, plan);
    size_t ws = ops_workspace_of(plan);
    assert_true(ws > 0);
    char needle[96];
    snprintf(needle, sizeof needle, "workspace_bytes = %zu < %zu the plan needs", ws - 1, ws);
    OPS_REJECTS(f, MR, attnrt_mla_run(plan, &f->x->mla, f->dev[OB_WORKSPACE], ws - 1, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, needle);
}

static void mla_run_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_mla_plan_ok(f);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, MR, attnrt_mla_run(plan, &f->x->mla, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], foreign),
                ATTNRT_ERR_INVALID_ARGUMENT, "stream belongs to another context");
}

int ops_run_mla_run_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_MLA_TEST(mla_run_dense_baseline_succeeds),
        OPS_MLA_TEST(mla_run_sparse_baseline_succeeds),
        OPS_MLA_TEST(mla_run_refuses_null_plan),
        OPS_MLA_TEST(mla_run_refuses_attention_plan),
        OPS_MLA_TEST(mla_run_refuses_cascade_plan),
        OPS_MLA_TEST(attention_run_refuses_mla_plan),
        OPS_MLA_TEST(cascade_run_refuses_mla_plan),
        OPS_MLA_TEST(mla_run_refuses_null_args),
        OPS_MLA_TEST(mla_run_refuses_args_struct_size_0),
        OPS_MLA_TEST(mla_run_refuses_null_out),
        OPS_MLA_TEST(mla_run_refuses_null_query_data),
        OPS_MLA_TEST(mla_run_refuses_null_kv_cache_data),
        OPS_MLA_TEST(mla_run_refuses_null_out_data),
        OPS_MLA_TEST(mla_run_refuses_null_indices_data),
        OPS_MLA_TEST(mla_run_refuses_nan_scale),
        OPS_MLA_TEST(mla_run_refuses_batch_shape_differing_from_plan),
        OPS_MLA_TEST(mla_run_refuses_cache_dtype_differing_from_plan),
        OPS_MLA_TEST(mla_run_refuses_out_strides_differing_from_plan),
        OPS_MLA_TEST(mla_run_refuses_indices_given_when_plan_was_dense),
        OPS_MLA_TEST(mla_run_refuses_indices_absent_when_plan_was_sparse),
        OPS_MLA_TEST(mla_run_refuses_lse_given_when_plan_had_none),
        OPS_MLA_TEST(mla_run_refuses_scale_differing_from_plan),
        OPS_MLA_TEST(mla_run_refuses_causal_differing_from_plan),
        OPS_PLANNER_MLA_TEST(mla_run_refuses_workspace_smaller_than_planned),
        OPS_MLA_TEST(mla_run_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_mla_run", tests, NULL, NULL);
}
