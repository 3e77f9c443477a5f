/* Bad arguments of attnrt_attention_plan (the tensors and options; the host batch is in
 * test_ops_attention_batch.c). Validation comes before the capability question, so each of these
 * fails the same way whatever the device supports. */
#include <math.h>

#include "ops_fixture.h"

static const char AP[] = "attnrt_attention_plan";

#define PLAN_REJECTS(f, expected, needle) \
    OPS_ATTENTION_PLAN_REJECTS((f), (f)->ctx, &(f)->att, &(f)->batch, (expected), (needle))
#define PLAN_INVALID(f, needle) PLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

/* Both caches re-described with a new shape over the same buffers. */
static void reshape_caches(ops_fixture_t *f, int64_t blocks, int64_t block_size, int64_t heads, int64_t dim)
{
    const int64_t shape[4] = {blocks, block_size, heads, dim};
    ops_retensor(&f->key_cache, ATTNRT_F32, 4, shape);
    ops_retensor(&f->value_cache, ATTNRT_F32, 4, shape);
}

static void reshape3(attnrt_tensor_t *t, int64_t a, int64_t b, int64_t c)
{
    const int64_t shape[3] = {a, b, c};
    ops_retensor(t, t->dtype, 3, shape);
}

/* ---- the baseline ---- */

static void attention_plan_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    size_t bytes = SIZE_MAX;
    OPS_OK(attnrt_plan_workspace_size(plan, &bytes));
    assert_true(bytes < SIZE_MAX);
}

/* ---- null pointers and struct sizes ---- */

static void attention_plan_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_ATTENTION_PLAN_REJECTS(f, NULL, &f->att, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void attention_plan_refuses_null_plan_out(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, AP, attnrt_attention_plan(f->ctx, &f->att, &f->batch, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "plan is NULL");
}

static void attention_plan_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_ATTENTION_PLAN_REJECTS(f, f->ctx, NULL, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void attention_plan_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->att.struct_size = 0;
    PLAN_INVALID(f, "args->struct_size = 0");
}

#define NULL_TENSOR_TEST(field)                                  \
    static void attention_plan_refuses_null_##field(void **state) \
    {                                                            \
        ops_fixture_t *f = *state;                               \
        f->att.field = NULL;                                     \
        PLAN_INVALID(f, #field " is NULL");                      \
    }
NULL_TENSOR_TEST(query)
NULL_TENSOR_TEST(key_cache)
NULL_TENSOR_TEST(value_cache)
NULL_TENSOR_TEST(block_table)
NULL_TENSOR_TEST(query_start_loc)
NULL_TENSOR_TEST(seq_lens)
NULL_TENSOR_TEST(out)

static void attention_plan_refuses_query_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->query.struct_size = 0;
    PLAN_INVALID(f, "query.struct_size = 0");
}

static void attention_plan_refuses_optional_lse_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.struct_size = 0;
    f->att.lse = &f->lse;
    PLAN_INVALID(f, "lse.struct_size = 0");
}

static void attention_plan_accepts_null_data(void **state)
{
    ops_fixture_t *f = *state;
    f->query.data = f->out.data = f->key_cache.data = f->value_cache.data = NULL;
    ops_attention_plan_ok(f);
}

/* ---- ndim and dtype ---- */

static void attention_plan_refuses_2d_query(void **state)
{
    ops_fixture_t *f = *state;
    f->query.ndim = 2;
    PLAN_INVALID(f, "query.ndim = 2, expected 3");
}

static void attention_plan_refuses_3d_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.ndim = 3;
    PLAN_INVALID(f, "key_cache.ndim = 3, expected 4");
}

static void attention_plan_refuses_1d_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->block_table.ndim = 1;
    PLAN_INVALID(f, "block_table.ndim = 1, expected 2");
}

static void attention_plan_refuses_3d_lse(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.ndim = 3;
    f->att.lse = &f->lse;
    PLAN_INVALID(f, "lse.ndim = 3, expected 2");
}

static void attention_plan_refuses_int32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->query.dtype = ATTNRT_I32;
    PLAN_INVALID(f, "query.dtype = i32, expected one of f32, f16, bf16");
}

static void attention_plan_refuses_fp8_query(void **state)
{
    ops_fixture_t *f = *state;
    f->query.dtype = ATTNRT_FP8_E4M3;
    PLAN_INVALID(f, "query.dtype = fp8_e4m3, expected one of f32, f16, bf16");
}

static void attention_plan_refuses_int32_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.dtype = ATTNRT_I32;
    PLAN_INVALID(f, "key_cache.dtype = i32");
}

static void attention_plan_refuses_f32_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->block_table.dtype = ATTNRT_F32;
    PLAN_INVALID(f, "block_table.dtype = f32, expected one of i32");
}

static void attention_plan_refuses_i64_seq_lens(void **state)
{
    ops_fixture_t *f = *state;
    f->seq_lens.dtype = ATTNRT_I64;
    PLAN_INVALID(f, "seq_lens.dtype = i64, expected one of i32");
}

static void attention_plan_refuses_f32_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->qsl.dtype = ATTNRT_F32;
    PLAN_INVALID(f, "query_start_loc.dtype = f32, expected one of i32");
}

static void attention_plan_refuses_f16_lse(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.dtype = ATTNRT_F16;
    f->att.lse = &f->lse;
    PLAN_INVALID(f, "lse.dtype = f16, expected one of f32");
}

static void attention_plan_refuses_out_dtype_neither_query_nor_f32(void **state)
{
    ops_fixture_t *f = *state;
    f->out.dtype = ATTNRT_BF16;
    PLAN_INVALID(f, "out.dtype = bf16; expected query's dtype (f32) or f32");
}

/* ---- shapes and strides ---- */

static void attention_plan_refuses_negative_query_shape(void **state)
{
    ops_fixture_t *f = *state;
    f->query.shape[0] = -1;
    PLAN_INVALID(f, "query.shape[0] = -1 is out of range");
}

static void attention_plan_refuses_query_shape_beyond_int32(void **state)
{
    ops_fixture_t *f = *state;
    f->query.shape[0] = (int64_t)INT32_MAX + 1;
    PLAN_INVALID(f, "query.shape[0] = 2147483648 is out of range");
}

static void attention_plan_refuses_negative_key_cache_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.strides[0] = -128;
    PLAN_INVALID(f, "key_cache.strides[0] = -128 < 0");
}

static void attention_plan_refuses_query_inner_stride_2(void **state)
{
    ops_fixture_t *f = *state;
    f->query.strides[2] = 2;
    PLAN_INVALID(f, "query.strides[2] = 2; the innermost (head_dim) stride must be 1");
}

static void attention_plan_refuses_num_q_heads_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->query, OPS_T, 0, OPS_D);
    reshape3(&f->out, OPS_T, 0, OPS_D);
    PLAN_INVALID(f, "query.shape[1] (num_q_heads) = 0; must be >= 1");
}

static void attention_plan_refuses_head_dim_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->query, OPS_T, OPS_HQ, 0);
    PLAN_INVALID(f, "query.shape[2] (head_dim_qk) = 0; must be >= 1");
}

static void attention_plan_refuses_block_size_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape_caches(f, OPS_NUM_BLOCKS, 0, OPS_HKV, OPS_D);
    PLAN_INVALID(f, "key_cache.shape[1] (block_size) = 0; must be >= 1");
}

static void attention_plan_refuses_num_kv_heads_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape_caches(f, OPS_NUM_BLOCKS, OPS_BLOCK, 0, OPS_D);
    PLAN_INVALID(f, "key_cache.shape[2] (num_kv_heads) = 0; must be >= 1");
}

static void attention_plan_refuses_head_dim_v_0(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_NUM_BLOCKS, OPS_BLOCK, OPS_HKV, 0};
    ops_retensor(&f->value_cache, ATTNRT_F32, 4, shape);
    reshape3(&f->out, OPS_T, OPS_HQ, 0);
    PLAN_INVALID(f, "value_cache.shape[3] (head_dim_v) = 0; must be >= 1");
}

static void attention_plan_refuses_num_q_heads_not_multiple_of_num_kv_heads(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->query, OPS_T, 6, OPS_D);
    reshape3(&f->out, OPS_T, 6, OPS_D);
    reshape_caches(f, OPS_NUM_BLOCKS, OPS_BLOCK, 4, OPS_D);
    PLAN_INVALID(f, "num_q_heads = 6 (query.shape[1]) is not a multiple of num_kv_heads = 4");
}

/* ---- tensors that disagree ---- */

static void attention_plan_refuses_key_cache_head_dim_differing_from_query(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_NUM_BLOCKS, OPS_BLOCK, OPS_HKV, 8};
    ops_retensor(&f->key_cache, ATTNRT_F32, 4, shape);
    PLAN_INVALID(f, "key_cache.shape[3] = 8, expected head_dim_qk = query.shape[2] = 16");
}

static void attention_plan_refuses_value_cache_dtype_differing_from_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->value_cache.dtype = ATTNRT_F16;
    PLAN_INVALID(f, "value_cache.dtype = f16 differs from key_cache.dtype = f32");
}

static void attention_plan_refuses_value_cache_num_blocks_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->value_cache.shape[0] = OPS_NUM_BLOCKS - 1;
    PLAN_INVALID(f, "value_cache.shape[0] = 15, expected num_blocks = key_cache.shape[0] = 16");
}

static void attention_plan_refuses_value_cache_block_size_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->value_cache.shape[1] = 2;
    PLAN_INVALID(f, "value_cache.shape[1] = 2, expected block_size = key_cache.shape[1] = 4");
}

static void attention_plan_refuses_value_cache_num_kv_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->value_cache.shape[2] = 1;
    PLAN_INVALID(f, "value_cache.shape[2] = 1, expected num_kv_heads = key_cache.shape[2] = 2");
}

static void attention_plan_refuses_block_table_rows_differing_from_num_seqs(void **state)
{
    ops_fixture_t *f = *state;
    f->block_table.shape[0] = OPS_B - 1;
    PLAN_INVALID(f, "block_table.shape[0] = 2, expected num_seqs = seq_lens.shape[0] = 3");
}

static void attention_plan_refuses_query_start_loc_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->qsl.shape[0] = OPS_B;
    PLAN_INVALID(f, "query_start_loc.shape[0] = 3, expected num_seqs + 1 = 4");
}

static void attention_plan_refuses_out_tokens_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->out.shape[0] = OPS_T - 1;
    PLAN_INVALID(f, "out.shape[0] = 8, expected num_tokens = query.shape[0] = 9");
}

static void attention_plan_refuses_out_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->out.shape[1] = OPS_HQ / 2;
    PLAN_INVALID(f, "out.shape[1] = 2, expected num_q_heads = query.shape[1] = 4");
}

static void attention_plan_refuses_out_head_dim_differing_from_value_cache(void **state)
{
    ops_fixture_t *f = *state;
    reshape3(&f->out, OPS_T, OPS_HQ, 8);
    PLAN_INVALID(f, "out.shape[2] = 8, expected head_dim_v = value_cache.shape[3] = 16");
}

static void attention_plan_refuses_lse_tokens_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.shape[0] = OPS_T - 1;
    f->att.lse = &f->lse;
    PLAN_INVALID(f, "lse.shape[0] = 8, expected num_tokens = query.shape[0] = 9");
}

static void attention_plan_refuses_lse_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.shape[1] = 3;
    f->att.lse = &f->lse;
    PLAN_INVALID(f, "lse.shape[1] = 3, expected num_q_heads = query.shape[1] = 4");
}

static void attention_plan_refuses_alibi_slopes_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->alibi.shape[0] = 3;
    f->att.alibi_slopes = &f->alibi;
    PLAN_INVALID(f, "alibi_slopes.shape[0] = 3, expected num_q_heads = 4");
}

static void attention_plan_refuses_sinks_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->sinks.shape[0] = 5;
    f->att.sinks = &f->sinks;
    PLAN_INVALID(f, "sinks.shape[0] = 5, expected num_q_heads = 4");
}

/* ---- fp8 scales ---- */

static void attention_plan_refuses_fp8_cache_without_scales(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    PLAN_INVALID(f, "key_scale is NULL but the cache is fp8_e4m3");
}

static void attention_plan_refuses_per_block_scale_with_wrong_shape(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[2] = {OPS_NUM_BLOCKS, OPS_HKV + 1};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->key_scale, 2, shape);
    ops_set_scale(&f->value_scale, 2, shape);
    f->att.key_scale = &f->key_scale;
    f->att.value_scale = &f->value_scale;
    PLAN_INVALID(f, "key_scale.shape[1] = 3, expected num_kv_heads = 2");
}

static void attention_plan_refuses_3d_scale_as_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[3] = {OPS_NUM_BLOCKS, OPS_HKV, 1};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->key_scale, 3, shape);
    f->att.key_scale = &f->key_scale;
    f->att.value_scale = &f->value_scale;
    PLAN_REJECTS(f, ATTNRT_ERR_UNSUPPORTED, "key_scale has ndim = 3");
}

static void attention_plan_refuses_scales_for_f32_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->att.key_scale = &f->key_scale;
    f->att.value_scale = &f->value_scale;
    PLAN_INVALID(f, "key_scale given but the cache is f32");
}

/* ---- options ---- */

static void attention_plan_refuses_nan_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->att.scale = NAN;
    PLAN_INVALID(f, "scale = nan");
}

static void attention_plan_refuses_infinite_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->att.scale = INFINITY;
    PLAN_INVALID(f, "scale = inf");
}

static void attention_plan_refuses_negative_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->att.scale = -0.25f;
    PLAN_INVALID(f, "scale = -0.25");
}

static void attention_plan_refuses_negative_softcap(void **state)
{
    ops_fixture_t *f = *state;
    f->att.softcap = -30.0f;
    PLAN_INVALID(f, "softcap = -30");
}

static void attention_plan_refuses_nan_softcap(void **state)
{
    ops_fixture_t *f = *state;
    f->att.softcap = NAN;
    PLAN_INVALID(f, "softcap = nan");
}

static void attention_plan_refuses_causal_2(void **state)
{
    ops_fixture_t *f = *state;
    f->att.causal = 2;
    PLAN_INVALID(f, "causal = 2; must be 0 or 1");
}

static void attention_plan_refuses_negative_causal(void **state)
{
    ops_fixture_t *f = *state;
    f->att.causal = -1;
    PLAN_INVALID(f, "causal = -1; must be 0 or 1");
}

static void attention_plan_refuses_negative_sliding_window_left(void **state)
{
    ops_fixture_t *f = *state;
    f->att.sliding_window_left = -1;
    PLAN_INVALID(f, "sliding_window_left = -1; must be >= 0 (0: unlimited)");
}

static void attention_plan_refuses_negative_sliding_window_right(void **state)
{
    ops_fixture_t *f = *state;
    f->att.sliding_window_right = -1;
    PLAN_INVALID(f, "sliding_window_right = -1; must be >= 0 (0: unlimited)");
}

int ops_run_attention_plan_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(attention_plan_baseline_succeeds),
        OPS_TEST(attention_plan_refuses_null_ctx),
        OPS_TEST(attention_plan_refuses_null_plan_out),
        OPS_TEST(attention_plan_refuses_null_args),
        OPS_TEST(attention_plan_refuses_args_struct_size_0),
        OPS_TEST(attention_plan_refuses_null_query),
        OPS_TEST(attention_plan_refuses_null_key_cache),
        OPS_TEST(attention_plan_refuses_null_value_cache),
        OPS_TEST(attention_plan_refuses_null_block_table),
        OPS_TEST(attention_plan_refuses_null_query_start_loc),
        OPS_TEST(attention_plan_refuses_null_seq_lens),
        OPS_TEST(attention_plan_refuses_null_out),
        OPS_TEST(attention_plan_refuses_query_struct_size_0),
        OPS_TEST(attention_plan_refuses_optional_lse_struct_size_0),
        OPS_TEST(attention_plan_accepts_null_data),
        OPS_TEST(attention_plan_refuses_2d_query),
        OPS_TEST(attention_plan_refuses_3d_key_cache),
        OPS_TEST(attention_plan_refuses_1d_block_table),
        OPS_TEST(attention_plan_refuses_3d_lse),
        OPS_TEST(attention_plan_refuses_int32_query),
        OPS_TEST(attention_plan_refuses_fp8_query),
        OPS_TEST(attention_plan_refuses_int32_key_cache),
        OPS_TEST(attention_plan_refuses_f32_block_table),
        OPS_TEST(attention_plan_refuses_i64_seq_lens),
        OPS_TEST(attention_plan_refuses_f32_query_start_loc),
        OPS_TEST(attention_plan_refuses_f16_lse),
        OPS_TEST(attention_plan_refuses_out_dtype_neither_query_nor_f32),
        OPS_TEST(attention_plan_refuses_negative_query_shape),
        OPS_TEST(attention_plan_refuses_query_shape_beyond_int32),
        OPS_TEST(attention_plan_refuses_negative_key_cache_stride),
        OPS_TEST(attention_plan_refuses_query_inner_stride_2),
        OPS_TEST(attention_plan_refuses_num_q_heads_0),
        OPS_TEST(attention_plan_refuses_head_dim_0),
        OPS_TEST(attention_plan_refuses_block_size_0),
        OPS_TEST(attention_plan_refuses_num_kv_heads_0),
        OPS_TEST(attention_plan_refuses_head_dim_v_0),
        OPS_TEST(attention_plan_refuses_num_q_heads_not_multiple_of_num_kv_heads),
        OPS_TEST(attention_plan_refuses_key_cache_head_dim_differing_from_query),
        OPS_TEST(attention_plan_refuses_value_cache_dtype_differing_from_key_cache),
        OPS_TEST(attention_plan_refuses_value_cache_num_blocks_differing),
        OPS_TEST(attention_plan_refuses_value_cache_block_size_differing),
        OPS_TEST(attention_plan_refuses_value_cache_num_kv_heads_differing),
        OPS_TEST(attention_plan_refuses_block_table_rows_differing_from_num_seqs),
        OPS_TEST(attention_plan_refuses_query_start_loc_length_differing),
        OPS_TEST(attention_plan_refuses_out_tokens_differing),
        OPS_TEST(attention_plan_refuses_out_heads_differing),
        OPS_TEST(attention_plan_refuses_out_head_dim_differing_from_value_cache),
        OPS_TEST(attention_plan_refuses_lse_tokens_differing),
        OPS_TEST(attention_plan_refuses_lse_heads_differing),
        OPS_TEST(attention_plan_refuses_alibi_slopes_length_differing),
        OPS_TEST(attention_plan_refuses_sinks_length_differing),
        OPS_TEST(attention_plan_refuses_fp8_cache_without_scales),
        OPS_TEST(attention_plan_refuses_per_block_scale_with_wrong_shape),
        OPS_TEST(attention_plan_refuses_3d_scale_as_unsupported),
        OPS_TEST(attention_plan_refuses_scales_for_f32_cache),
        OPS_TEST(attention_plan_refuses_nan_scale),
        OPS_TEST(attention_plan_refuses_infinite_scale),
        OPS_TEST(attention_plan_refuses_negative_scale),
        OPS_TEST(attention_plan_refuses_negative_softcap),
        OPS_TEST(attention_plan_refuses_nan_softcap),
        OPS_TEST(attention_plan_refuses_causal_2),
        OPS_TEST(attention_plan_refuses_negative_causal),
        OPS_TEST(attention_plan_refuses_negative_sliding_window_left),
        OPS_TEST(attention_plan_refuses_negative_sliding_window_right),
    };
    return cmocka_run_group_tests_name("ops: attnrt_attention_plan arguments", tests, NULL, NULL);
}
