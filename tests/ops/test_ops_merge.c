/* Bad inputs of attnrt_merge_states. Baseline: two states [9, 4, 16] f32 with their lses [9, 4],
 * merged into out [9, 4, 16] and out_lse [9, 4]. */
#include "ops_fixture.h"

static const char MS[] = "attnrt_merge_states";

#define MERGE_REJECTS(f, expected, needle) \
    OPS_REJECTS((f), MS, attnrt_merge_states((f)->ctx, &(f)->merge, NULL), (expected), (needle))
#define MERGE_INVALID(f, needle) MERGE_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

static void reshape(attnrt_tensor_t *t, int32_t ndim, int64_t a, int64_t b, int64_t c)
{
    const int64_t shape[3] = {a, b, c};
    ops_retensor(t, t->dtype, ndim, shape);
}

/* ---- the baseline ---- */

static void merge_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    OPS_OK(attnrt_merge_states(f->ctx, &f->merge, NULL));
}

/* ---- null pointers, struct sizes, counts ---- */

static void merge_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, MS, attnrt_merge_states(NULL, &f->merge, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void merge_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, MS, attnrt_merge_states(f->ctx, NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void merge_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->merge.struct_size = 0;
    MERGE_INVALID(f, "args->struct_size = 0");
}

static void merge_refuses_num_states_0(void **state)
{
    ops_fixture_t *f = *state;
    f->merge.num_states = 0;
    MERGE_INVALID(f, "num_states = 0");
}

static void merge_refuses_null_states(void **state)
{
    ops_fixture_t *f = *state;
    f->merge.states = NULL;
    MERGE_INVALID(f, "states is NULL");
}

static void merge_refuses_null_lses(void **state)
{
    ops_fixture_t *f = *state;
    f->merge.lses = NULL;
    MERGE_INVALID(f, "lses is NULL");
}

static void merge_refuses_null_state_entry(void **state)
{
    ops_fixture_t *f = *state;
    f->merge_states[1] = NULL;
    MERGE_INVALID(f, "states[1] is NULL");
}

static void merge_refuses_null_lse_entry(void **state)
{
    ops_fixture_t *f = *state;
    f->merge_lses[0] = NULL;
    MERGE_INVALID(f, "lses[0] is NULL");
}

static void merge_refuses_null_out(void **state)
{
    ops_fixture_t *f = *state;
    f->merge.out = NULL;
    MERGE_INVALID(f, "out is NULL");
}

static void merge_refuses_out_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->out.struct_size = 0;
    MERGE_INVALID(f, "out.struct_size = 0");
}

static void merge_refuses_state_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->states[1].struct_size = 0;
    MERGE_INVALID(f, "states[1].struct_size = 0");
}

static void merge_refuses_null_out_data(void **state)
{
    ops_fixture_t *f = *state;
    f->out.data = NULL;
    MERGE_INVALID(f, "out.data is NULL");
}

static void merge_refuses_null_state_data(void **state)
{
    ops_fixture_t *f = *state;
    f->states[1].data = NULL;
    MERGE_INVALID(f, "states[1].data is NULL");
}

/* ---- ndim, dtype, strides ---- */

static void merge_refuses_2d_state(void **state)
{
    ops_fixture_t *f = *state;
    f->states[0].ndim = 2;
    MERGE_INVALID(f, "states[0].ndim = 2, expected 3");
}

static void merge_refuses_3d_lse(void **state)
{
    ops_fixture_t *f = *state;
    f->state_lses[1].ndim = 3;
    MERGE_INVALID(f, "lses[1].ndim = 3, expected 2");
}

static void merge_refuses_int32_state(void **state)
{
    ops_fixture_t *f = *state;
    f->states[0].dtype = ATTNRT_I32;
    MERGE_INVALID(f, "states[0].dtype = i32, expected one of f32, f16, bf16");
}

static void merge_refuses_f16_lse(void **state)
{
    ops_fixture_t *f = *state;
    f->state_lses[0].dtype = ATTNRT_F16;
    MERGE_INVALID(f, "lses[0].dtype = f16, expected one of f32");
}

static void merge_refuses_fp8_out(void **state)
{
    ops_fixture_t *f = *state;
    f->out.dtype = ATTNRT_FP8_E4M3;
    MERGE_INVALID(f, "out.dtype = fp8_e4m3");
}

static void merge_refuses_negative_state_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->states[0].strides[0] = -64;
    MERGE_INVALID(f, "states[0].strides[0] = -64 < 0");
}

static void merge_refuses_state_inner_stride_2(void **state)
{
    ops_fixture_t *f = *state;
    f->states[1].strides[2] = 2;
    MERGE_INVALID(f, "states[1].strides[2] = 2; the innermost (head_dim) stride must be 1");
}

/* ---- shapes that disagree ---- */

static void merge_refuses_state_tokens_differing_from_out(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->states[1], 3, OPS_T - 1, OPS_HQ, OPS_D);
    MERGE_INVALID(f, "states[1].shape[0] = 8, expected num_tokens = out.shape[0] = 9");
}

static void merge_refuses_state_heads_differing_from_out(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->states[0], 3, OPS_T, 3, OPS_D);
    MERGE_INVALID(f, "states[0].shape[1] = 3, expected num_heads = out.shape[1] = 4");
}

static void merge_refuses_state_head_dim_differing_from_out(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->states[1], 3, OPS_T, OPS_HQ, 8);
    MERGE_INVALID(f, "states[1].shape[2] = 8, expected head_dim = out.shape[2] = 16");
}

static void merge_refuses_lse_tokens_differing_from_out(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->state_lses[1], 2, OPS_T - 1, OPS_HQ, 0);
    MERGE_INVALID(f, "lses[1].shape[0] = 8, expected num_tokens = out.shape[0] = 9");
}

static void merge_refuses_lse_heads_differing_from_out(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->state_lses[0], 2, OPS_T, 3, 0);
    MERGE_INVALID(f, "lses[0].shape[1] = 3, expected num_heads = out.shape[1] = 4");
}

static void merge_refuses_out_lse_shape_differing_from_out(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->lse, 2, OPS_T, 3, 0);
    MERGE_INVALID(f, "out_lse.shape[1] = 3, expected num_heads = out.shape[1] = 4");
}

static void merge_refuses_out_lse_f16(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.dtype = ATTNRT_F16;
    MERGE_INVALID(f, "out_lse.dtype = f16, expected one of f32");
}

static void merge_refuses_sinks_length_differing_from_heads(void **state)
{
    ops_fixture_t *f = *state;
    f->sinks.shape[0] = 3;
    f->merge.sinks = &f->sinks;
    MERGE_INVALID(f, "sinks.shape[0] = 3, expected num_heads = out.shape[1] = 4");
}

/* ---- streams ---- */

static void merge_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, MS, attnrt_merge_states(f->ctx, &f->merge, foreign), ATTNRT_ERR_INVALID_ARGUMENT,
                "stream belongs to another context");
}

int ops_run_merge_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(merge_baseline_succeeds),
        OPS_TEST(merge_refuses_null_ctx),
        OPS_TEST(merge_refuses_null_args),
        OPS_TEST(merge_refuses_args_struct_size_0),
        OPS_TEST(merge_refuses_num_states_0),
        OPS_TEST(merge_refuses_null_states),
        OPS_TEST(merge_refuses_null_lses),
        OPS_TEST(merge_refuses_null_state_entry),
        OPS_TEST(merge_refuses_null_lse_entry),
        OPS_TEST(merge_refuses_null_out),
        OPS_TEST(merge_refuses_out_struct_size_0),
        OPS_TEST(merge_refuses_state_struct_size_0),
        OPS_TEST(merge_refuses_null_out_data),
        OPS_TEST(merge_refuses_null_state_data),
        OPS_TEST(merge_refuses_2d_state),
        OPS_TEST(merge_refuses_3d_lse),
        OPS_TEST(merge_refuses_int32_state),
        OPS_TEST(merge_refuses_f16_lse),
        OPS_TEST(merge_refuses_fp8_out),
        OPS_TEST(merge_refuses_negative_state_stride),
        OPS_TEST(merge_refuses_state_inner_stride_2),
        OPS_TEST(merge_refuses_state_tokens_differing_from_out),
        OPS_TEST(merge_refuses_state_heads_differing_from_out),
        OPS_TEST(merge_refuses_state_head_dim_differing_from_out),
        OPS_TEST(merge_refuses_lse_tokens_differing_from_out),
        OPS_TEST(merge_refuses_lse_heads_differing_from_out),
        OPS_TEST(merge_refuses_out_lse_shape_differing_from_out),
        OPS_TEST(merge_refuses_out_lse_f16),
        OPS_TEST(merge_refuses_sinks_length_differing_from_heads),
        OPS_TEST(merge_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_merge_states", tests, NULL, NULL);
}
