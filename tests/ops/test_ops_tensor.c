/* Bad inputs of the tensor and plan helpers: attnrt_tensor_init, attnrt_dtype_name / _size,
 * attnrt_plan_workspace_size, attnrt_plan_destroy. */
#include "ops_fixture.h"

static const char TI[] = "attnrt_tensor_init";
static const int64_t shape3[3] = {2, 3, 4};

static void tensor_init_refuses_null_tensor(void **state)
{
    OPS_REJECTS(*state, TI, attnrt_tensor_init(NULL, NULL, ATTNRT_F32, 3, shape3), ATTNRT_ERR_INVALID_ARGUMENT,
                "t is NULL");
}

static void tensor_init_refuses_ndim_0(void **state)
{
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_F32, 0, shape3), ATTNRT_ERR_INVALID_ARGUMENT,
                "ndim = 0, expected 1..6");
}

static void tensor_init_refuses_negative_ndim(void **state)
{
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_F32, -1, shape3), ATTNRT_ERR_INVALID_ARGUMENT,
                "ndim = -1");
}

static void tensor_init_refuses_ndim_above_max(void **state)
{
    const int64_t shape7[7] = {1, 1, 1, 1, 1, 1, 1};
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_F32, ATTNRT_MAX_DIMS + 1, shape7),
                ATTNRT_ERR_INVALID_ARGUMENT, "ndim = 7, expected 1..6");
}

static void tensor_init_refuses_null_shape(void **state)
{
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_F32, 3, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "shape is NULL");
}

static void tensor_init_refuses_unknown_dtype(void **state)
{
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 64), 3, shape3),
                ATTNRT_ERR_INVALID_ARGUMENT, "dtype {code 2, bits 64, lanes 1}");
}

static void tensor_init_refuses_vector_lanes(void **state)
{
    attnrt_dtype_t f32x2 = {ATTNRT_DTYPE_CODE_FLOAT, 32, 2};
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, f32x2, 3, shape3), ATTNRT_ERR_INVALID_ARGUMENT,
                "lanes 2");
}

static void tensor_init_refuses_negative_shape(void **state)
{
    const int64_t bad[3] = {2, -3, 4};
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_F32, 3, bad), ATTNRT_ERR_INVALID_ARGUMENT,
                "shape[1] = -3 < 0");
}

/* Four dims of 2^31 - 1 elements: strides past 2^63 cannot be represented. */
static void tensor_init_refuses_shape_whose_strides_overflow(void **state)
{
    const int64_t huge[4] = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
    attnrt_tensor_t t;
    OPS_REJECTS(*state, TI, attnrt_tensor_init(&t, NULL, ATTNRT_F32, 4, huge), ATTNRT_ERR_INVALID_ARGUMENT,
                "overflow");
}

static void tensor_init_leaves_tensor_untouched_when_refused(void **state)
{
    const int64_t bad[3] = {2, 3, -4};
    attnrt_tensor_t t, before;
    memset(&t, 0x5a, sizeof t);
    before = t;
    assert_int_equal(attnrt_tensor_init(&t, NULL, ATTNRT_F32, 3, bad), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_memory_equal(&t, &before, sizeof t);
    (void)state;
}

static void tensor_init_fills_contiguous_row_major(void **state)
{
    float data[24];
    attnrt_tensor_t t;
    memset(&t, 0x5a, sizeof t);
    OPS_OK(attnrt_tensor_init(&t, data, ATTNRT_F32, 3, shape3));
    assert_int_equal(t.struct_size, sizeof t);
    assert_ptr_equal(t.data, data);
    assert_int_equal(t.ndim, 3);
    assert_int_equal(t.shape[0], 2);
    assert_int_equal(t.shape[2], 4);
    assert_int_equal(t.strides[0], 12);
    assert_int_equal(t.strides[1], 4);
    assert_int_equal(t.strides[2], 1);
    assert_int_equal(t.shape[3], 0); /* dims past ndim are zero */
    assert_int_equal(t.strides[5], 0);
    (void)state;
}

static void tensor_init_accepts_zero_extent(void **state)
{
    const int64_t empty[2] = {0, 8};
    attnrt_tensor_t t;
    OPS_OK(attnrt_tensor_init(&t, NULL, ATTNRT_F32, 2, empty));
    assert_int_equal(t.shape[0], 0);
    assert_int_equal(t.strides[1], 1);
    (void)state;
}

static void dtype_name_names_every_known_dtype(void **state)
{
    assert_string_equal(attnrt_dtype_name(ATTNRT_F32), "f32");
    assert_string_equal(attnrt_dtype_name(ATTNRT_F16), "f16");
    assert_string_equal(attnrt_dtype_name(ATTNRT_BF16), "bf16");
    assert_string_equal(attnrt_dtype_name(ATTNRT_FP8_E4M3), "fp8_e4m3");
    assert_string_equal(attnrt_dtype_name(ATTNRT_FP8_E5M2), "fp8_e5m2");
    assert_string_equal(attnrt_dtype_name(ATTNRT_I32), "i32");
    assert_string_equal(attnrt_dtype_name(ATTNRT_I64), "i64");
    assert_string_equal(attnrt_dtype_name(ATTNRT_U8), "u8");
    assert_string_equal(attnrt_dtype_name(ATTNRT_BOOL), "bool");
    (void)state;
}

static void dtype_name_is_unknown_for_other_dtypes(void **state)
{
    const attnrt_dtype_t f32x4 = {ATTNRT_DTYPE_CODE_FLOAT, 32, 4};
    assert_string_equal(attnrt_dtype_name(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 64)), "unknown");
    assert_string_equal(attnrt_dtype_name(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_UINT, 16)), "unknown");
    assert_string_equal(attnrt_dtype_name(ATTNRT_DTYPE(99, 32)), "unknown");
    assert_string_equal(attnrt_dtype_name(f32x4), "unknown");
    (void)state;
}

static void dtype_size_of_every_known_dtype(void **state)
{
    assert_int_equal(attnrt_dtype_size(ATTNRT_F32), 4);
    assert_int_equal(attnrt_dtype_size(ATTNRT_F16), 2);
    assert_int_equal(attnrt_dtype_size(ATTNRT_BF16), 2);
    assert_int_equal(attnrt_dtype_size(ATTNRT_FP8_E4M3), 1);
    assert_int_equal(attnrt_dtype_size(ATTNRT_FP8_E5M2), 1);
    assert_int_equal(attnrt_dtype_size(ATTNRT_I32), 4);
    assert_int_equal(attnrt_dtype_size(ATTNRT_I64), 8);
    (void)state;
}

static void dtype_size_is_0_for_unknown_dtypes(void **state)
{
    const attnrt_dtype_t f32x4 = {ATTNRT_DTYPE_CODE_FLOAT, 32, 4};
    assert_int_equal(attnrt_dtype_size(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 64)), 0);
    assert_int_equal(attnrt_dtype_size(ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_INT, 7)), 0);
    assert_int_equal(attnrt_dtype_size(f32x4), 0);
    (void)state;
}

static void plan_workspace_size_refuses_null_plan(void **state)
{
    size_t bytes = 12345;
    OPS_REJECTS(*state, "attnrt_plan_workspace_size", attnrt_plan_workspace_size(NULL, &bytes),
                ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
    assert_int_equal(bytes, 12345);
}

static void plan_workspace_size_refuses_null_bytes(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    OPS_REJECTS(f, "attnrt_plan_workspace_size", attnrt_plan_workspace_size(plan, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "bytes is NULL");
}

static void plan_destroy_of_null_is_ok(void **state)
{
    OPS_OK(attnrt_plan_destroy(NULL));
    (void)state;
}

int ops_run_tensor_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(tensor_init_refuses_null_tensor),
        OPS_TEST(tensor_init_refuses_ndim_0),
        OPS_TEST(tensor_init_refuses_negative_ndim),
        OPS_TEST(tensor_init_refuses_ndim_above_max),
        OPS_TEST(tensor_init_refuses_null_shape),
        OPS_TEST(tensor_init_refuses_unknown_dtype),
        OPS_TEST(tensor_init_refuses_vector_lanes),
        OPS_TEST(tensor_init_refuses_negative_shape),
        OPS_TEST(tensor_init_refuses_shape_whose_strides_overflow),
        OPS_TEST(tensor_init_leaves_tensor_untouched_when_refused),
        OPS_TEST(tensor_init_fills_contiguous_row_major),
        OPS_TEST(tensor_init_accepts_zero_extent),
        OPS_TEST(dtype_name_names_every_known_dtype),
        OPS_TEST(dtype_name_is_unknown_for_other_dtypes),
        OPS_TEST(dtype_size_of_every_known_dtype),
        OPS_TEST(dtype_size_is_0_for_unknown_dtypes),
        OPS_TEST(plan_workspace_size_refuses_null_plan),
        OPS_TEST(plan_workspace_size_refuses_null_bytes),
        OPS_TEST(plan_destroy_of_null_is_ok),
    };
    return cmocka_run_group_tests_name("ops: tensor and plan helpers", tests, NULL, NULL);
}
