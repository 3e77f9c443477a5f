/* Bad inputs of attnrt_lightning_run and attnrt_gated_delta_run (ABI 1.2): a run against its plan, its
 * args, workspace and stream; the baselines are in ops_linear.h. */
#include <stdio.h>

#include "ops_linear.h"
#include "ops_planner.h"

static const char LR[] = "attnrt_lightning_run";
static const char GR[] = "attnrt_gated_delta_run";

#define LRUN_INVALID(f, plan, needle)                                                                         \
    OPS_REJECTS((f), LR, attnrt_lightning_run((plan), &(f)->x->lin, (f)->dev[OB_WORKSPACE],                   \
                                              (f)->bytes[OB_WORKSPACE], NULL),                                \
                ATTNRT_ERR_INVALID_ARGUMENT, (needle))
#define GRUN_INVALID(f, plan, needle)                                                                         \
    OPS_REJECTS((f), GR, attnrt_gated_delta_run((plan), &(f)->x->gdn, (f)->dev[OB_WORKSPACE],                 \
                                                (f)->bytes[OB_WORKSPACE], NULL),                              \
                ATTNRT_ERR_INVALID_ARGUMENT, (needle))

static void lightning_run_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_lightning_plan_ok(f);
    size_t ws = ops_workspace_of(plan);
    OPS_OK(attnrt_lightning_run(plan, &f->x->lin, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void gated_delta_run_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    size_t ws = ops_workspace_of(plan);
    OPS_OK(attnrt_gated_delta_run(plan, &f->x->gdn, ws ? f->dev[OB_WORKSPACE] : NULL, ws, NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

static void gated_delta_run_spec_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    size_t ws = ops_workspace_of(plan);
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
    ops_ext_t *x = f->x;
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
    ops_pool(f, ATTNRT_F32, 3, slot, OPS_LIN_SLOTS, OPS_LIN_ALLOCATED, &layer2);
    f->x->lin.state = &layer2;
    size_t ws = ops_workspace_of(plan);
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
    ops_use_spec(f);
    GRUN_INVALID(f, plan, "spec_state_indices differs from the plan");
}

static void gated_delta_run_refuses_spec_absent_when_planned(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_spec(f);
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
    size_t ws = ops_workspace_of(plan);
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
    size_t ws = ops_workspace_of(plan);
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

int ops_run_linear_run_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_LINEAR_TEST(lightning_run_baseline_succeeds),
        OPS_LINEAR_TEST(gated_delta_run_baseline_succeeds),
        OPS_LINEAR_TEST(gated_delta_run_spec_baseline_succeeds),
        OPS_LINEAR_TEST(lightning_run_refuses_null_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_null_plan),
        OPS_LINEAR_TEST(lightning_run_refuses_gated_delta_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_lightning_plan),
        OPS_LINEAR_TEST(lightning_run_refuses_attention_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_cascade_plan),
        OPS_LINEAR_TEST(attention_run_refuses_lightning_plan),
        OPS_LINEAR_TEST(mla_run_refuses_gated_delta_plan),
        OPS_LINEAR_TEST(lightning_run_refuses_null_args),
        OPS_LINEAR_TEST(gated_delta_run_refuses_args_struct_size_0),
        OPS_LINEAR_TEST(lightning_run_refuses_null_query_data),
        OPS_LINEAR_TEST(lightning_run_refuses_null_has_initial_state),
        OPS_LINEAR_TEST(gated_delta_run_refuses_null_g_data),
        OPS_LINEAR_TEST(lightning_run_refuses_batch_shape_differing_from_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_out_strides_differing_from_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_tokens_differing_from_plan),
        OPS_LINEAR_TEST(lightning_run_accepts_the_pool_of_another_layer),
        OPS_LINEAR_TEST(lightning_run_refuses_has_initial_state_dtype_differing_from_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_spec_given_when_plan_had_none),
        OPS_LINEAR_TEST(gated_delta_run_refuses_spec_absent_when_planned),
        OPS_LINEAR_TEST(gated_delta_run_refuses_scale_differing_from_plan),
        OPS_LINEAR_TEST(gated_delta_run_refuses_use_l2norm_differing_from_plan),
        OPS_PLANNER_LINEAR_TEST(lightning_run_refuses_workspace_smaller_than_planned),
        OPS_PLANNER_LINEAR_TEST(gated_delta_run_refuses_workspace_smaller_than_planned),
        OPS_LINEAR_TEST(lightning_run_refuses_stream_of_another_context),
        OPS_LINEAR_TEST(gated_delta_run_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_lightning_run / attnrt_gated_delta_run", tests, NULL, NULL);
}
