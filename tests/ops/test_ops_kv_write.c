/* Bad inputs of attnrt_kv_write: each test breaks one thing of the valid baseline (9 tokens of a mixed
 * batch into 16 blocks of 4, Hkv 2, D 16, f32) and expects the exact status, a message naming the
 * argument and the value, and no byte written to the caches. */
#include "ops_fixture.h"

static const char KW[] = "attnrt_kv_write";

#define KV_REJECTS(f, expected, needle) \
    OPS_REJECTS((f), KW, attnrt_kv_write((f)->ctx, &(f)->kvw, NULL), (expected), (needle))
#define KV_INVALID(f, needle) KV_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

/* ---- the baseline ---- */

static void kv_write_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    OPS_OK(attnrt_kv_write(f->ctx, &f->kvw, NULL));
}

static void kv_write_accepts_negative_slot_as_padding(void **state)
{
    ops_fixture_t *f = *state;
    f->h_slots[3] = -1;
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, f->slot_mapping.data, f->h_slots, sizeof f->h_slots, NULL));
    OPS_OK(attnrt_kv_write(f->ctx, &f->kvw, NULL));
}

/* ---- null pointers and struct sizes ---- */

static void kv_write_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, KW, attnrt_kv_write(NULL, &f->kvw, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void kv_write_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, KW, attnrt_kv_write(f->ctx, NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void kv_write_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.struct_size = 0;
    KV_INVALID(f, "args->struct_size = 0");
}

static void kv_write_refuses_null_key(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.key = NULL;
    KV_INVALID(f, "key is NULL");
}

static void kv_write_refuses_null_value(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.value = NULL;
    KV_INVALID(f, "value is NULL");
}

static void kv_write_refuses_null_slot_mapping(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.slot_mapping = NULL;
    KV_INVALID(f, "slot_mapping is NULL");
}

static void kv_write_refuses_null_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.key_cache = NULL;
    KV_INVALID(f, "key_cache is NULL");
}

static void kv_write_refuses_null_value_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.value_cache = NULL;
    KV_INVALID(f, "value_cache is NULL");
}

static void kv_write_refuses_key_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->key.struct_size = 0;
    KV_INVALID(f, "key.struct_size = 0");
}

static void kv_write_refuses_null_key_data(void **state)
{
    ops_fixture_t *f = *state;
    f->key.data = NULL;
    KV_INVALID(f, "key.data is NULL");
}

static void kv_write_refuses_null_key_cache_data(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.data = NULL;
    KV_INVALID(f, "key_cache.data is NULL");
}

static void kv_write_refuses_null_slot_mapping_data(void **state)
{
    ops_fixture_t *f = *state;
    f->slot_mapping.data = NULL;
    KV_INVALID(f, "slot_mapping.data is NULL");
}

/* ---- ndim, dtype, shape and stride of one tensor ---- */

static void kv_write_refuses_2d_key(void **state)
{
    ops_fixture_t *f = *state;
    f->key.ndim = 2;
    KV_INVALID(f, "key.ndim = 2, expected 3");
}

static void kv_write_refuses_3d_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.ndim = 3;
    KV_INVALID(f, "key_cache.ndim = 3, expected 4");
}

static void kv_write_refuses_int32_key(void **state)
{
    ops_fixture_t *f = *state;
    f->key.dtype = ATTNRT_I32;
    KV_INVALID(f, "key.dtype = i32, expected one of f32, f16, bf16");
}

static void kv_write_refuses_int32_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.dtype = ATTNRT_I32;
    KV_INVALID(f, "key_cache.dtype = i32");
}

static void kv_write_refuses_int32_slot_mapping(void **state)
{
    ops_fixture_t *f = *state;
    f->slot_mapping.dtype = ATTNRT_I32;
    KV_INVALID(f, "slot_mapping.dtype = i32, expected one of i64");
}

static void kv_write_refuses_negative_key_shape(void **state)
{
    ops_fixture_t *f = *state;
    f->key.shape[0] = -1;
    KV_INVALID(f, "key.shape[0] = -1 is out of range");
}

static void kv_write_refuses_negative_key_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->key.strides[0] = -32;
    KV_INVALID(f, "key.strides[0] = -32 < 0");
}

static void kv_write_refuses_key_cache_inner_stride_2(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.strides[3] = 2;
    KV_INVALID(f, "key_cache.strides[3] = 2; the innermost (head_dim) stride must be 1");
}

/* ---- sizes ---- */

static void kv_write_refuses_block_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.shape[1] = 0;
    KV_INVALID(f, "key_cache.shape[1] (block_size) = 0");
}

static void kv_write_refuses_num_kv_heads_0(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.shape[2] = 0;
    KV_INVALID(f, "num_kv_heads = 0");
}

static void kv_write_refuses_head_dim_0(void **state)
{
    ops_fixture_t *f = *state;
    f->key_cache.shape[3] = 0;
    KV_INVALID(f, "head_dim_k = 0");
}

/* ---- tensors that disagree ---- */

static void kv_write_refuses_value_dtype_differing_from_key(void **state)
{
    ops_fixture_t *f = *state;
    f->value.dtype = ATTNRT_F16;
    KV_INVALID(f, "value.dtype = f16 differs from key.dtype = f32");
}

static void kv_write_refuses_value_cache_dtype_differing_from_key_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->value_cache.dtype = ATTNRT_F16;
    KV_INVALID(f, "value_cache.dtype = f16 differs from key_cache.dtype = f32");
}

static void kv_write_refuses_key_heads_differing_from_cache(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[3] = {OPS_T, 3, OPS_D};
    ops_retensor(&f->key, ATTNRT_F32, 3, shape);
    KV_INVALID(f, "key.shape[1] = 3, expected num_kv_heads = key_cache.shape[2] = 2");
}

static void kv_write_refuses_key_head_dim_differing_from_cache(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[3] = {OPS_T, OPS_HKV, 8};
    ops_retensor(&f->key, ATTNRT_F32, 3, shape);
    KV_INVALID(f, "key.shape[2] = 8, expected head_dim_k = key_cache.shape[3] = 16");
}

static void kv_write_refuses_value_tokens_differing_from_key(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[3] = {OPS_T - 1, OPS_HKV, OPS_D};
    ops_retensor(&f->value, ATTNRT_F32, 3, shape);
    KV_INVALID(f, "value.shape[0] = 8, expected num_tokens = key.shape[0] = 9");
}

static void kv_write_refuses_value_head_dim_differing_from_value_cache(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[3] = {OPS_T, OPS_HKV, 8};
    ops_retensor(&f->value, ATTNRT_F32, 3, shape);
    KV_INVALID(f, "value.shape[2] = 8, expected head_dim_v = value_cache.shape[3] = 16");
}

static void kv_write_refuses_slot_mapping_length_differing_from_tokens(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[1] = {OPS_T - 1};
    ops_retensor(&f->slot_mapping, ATTNRT_I64, 1, shape);
    KV_INVALID(f, "slot_mapping.shape[0] = 8, expected num_tokens = key.shape[0] = 9");
}

static void kv_write_refuses_value_cache_num_blocks_differing(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_NUM_BLOCKS - 1, OPS_BLOCK, OPS_HKV, OPS_D};
    ops_retensor(&f->value_cache, ATTNRT_F32, 4, shape);
    KV_INVALID(f, "value_cache.shape[0] = 15, expected num_blocks = key_cache.shape[0] = 16");
}

static void kv_write_refuses_value_cache_block_size_differing(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[4] = {OPS_NUM_BLOCKS, OPS_BLOCK * 2, OPS_HKV, OPS_D};
    ops_retensor(&f->value_cache, ATTNRT_F32, 4, shape);
    KV_INVALID(f, "value_cache.shape[1] = 8, expected block_size = key_cache.shape[1] = 4");
}

/* ---- slots checked on the host ---- */

static void kv_write_refuses_slot_at_num_blocks_times_block_size(void **state)
{
    ops_fixture_t *f = *state;
    f->h_slots[4] = OPS_NUM_BLOCKS * OPS_BLOCK;
    KV_INVALID(f, "slot_mapping[4] = 64 >= num_blocks * block_size = 64");
}

static void kv_write_refuses_huge_slot(void **state)
{
    ops_fixture_t *f = *state;
    f->h_slots[8] = INT64_MAX;
    KV_INVALID(f, "slot_mapping[8] = 9223372036854775807 >= num_blocks * block_size = 64");
}

/* ---- fp8 scales ---- */

static void kv_write_refuses_fp8_cache_without_scales(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    KV_INVALID(f, "key_scale is NULL but the cache is fp8_e4m3");
}

static void kv_write_refuses_fp8_cache_without_value_scale(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    f->kvw.key_scale = &f->key_scale;
    KV_INVALID(f, "value_scale is NULL but the cache is fp8_e4m3");
}

static void kv_write_refuses_per_block_scale_with_wrong_num_blocks(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[2] = {OPS_NUM_BLOCKS - 1, OPS_HKV};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->key_scale, 2, shape);
    ops_set_scale(&f->value_scale, 2, shape);
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "key_scale.shape[0] = 15, expected num_blocks = 16");
}

static void kv_write_refuses_per_block_scale_with_wrong_heads(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t good[2] = {OPS_NUM_BLOCKS, OPS_HKV}, bad[2] = {OPS_NUM_BLOCKS, 3};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->key_scale, 2, good);
    ops_set_scale(&f->value_scale, 2, bad);
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "value_scale.shape[1] = 3, expected num_kv_heads = 2");
}

static void kv_write_refuses_per_tensor_scale_of_2_elements(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[1] = {2};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->key_scale, 1, shape);
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "key_scale.shape[0] = 2, expected 1 (per-tensor scale)");
}

static void kv_write_refuses_mixed_scale_granularity(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t per_block[2] = {OPS_NUM_BLOCKS, OPS_HKV};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->value_scale, 2, per_block);
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "key_scale is per tensor but value_scale per block");
}

static void kv_write_refuses_3d_scale_as_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[3] = {OPS_NUM_BLOCKS, OPS_HKV, 1};
    ops_make_fp8_caches(f);
    ops_set_scale(&f->key_scale, 3, shape);
    ops_set_scale(&f->value_scale, 3, shape);
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_REJECTS(f, ATTNRT_ERR_UNSUPPORTED, "key_scale has ndim = 3");
}

/* A malformed ndim is a bad argument, not a granularity the device lacks. */
static void kv_write_refuses_negative_scale_ndim_as_invalid(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    f->key_scale.ndim = -1;
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "key_scale.ndim = -1");
}

static void kv_write_refuses_f16_scale(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    f->key_scale.dtype = ATTNRT_F16;
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "key_scale.dtype = f16, expected one of f32");
}

static void kv_write_refuses_scale_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    f->value_scale.struct_size = 0;
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "value_scale.struct_size = 0");
}

static void kv_write_refuses_scale_without_data(void **state)
{
    ops_fixture_t *f = *state;
    ops_make_fp8_caches(f);
    f->key_scale.data = NULL;
    f->kvw.key_scale = &f->key_scale;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "key_scale.data is NULL");
}

static void kv_write_refuses_key_scale_for_f32_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.key_scale = &f->key_scale;
    KV_INVALID(f, "key_scale given but the cache is f32");
}

static void kv_write_refuses_value_scale_for_f32_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->kvw.value_scale = &f->value_scale;
    KV_INVALID(f, "value_scale given but the cache is f32");
}

/* ---- streams ---- */

static void kv_write_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, KW, attnrt_kv_write(f->ctx, &f->kvw, foreign), ATTNRT_ERR_INVALID_ARGUMENT,
                "stream belongs to another context");
}

int ops_run_kv_write_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(kv_write_baseline_succeeds),
        OPS_TEST(kv_write_accepts_negative_slot_as_padding),
        OPS_TEST(kv_write_refuses_null_ctx),
        OPS_TEST(kv_write_refuses_null_args),
        OPS_TEST(kv_write_refuses_args_struct_size_0),
        OPS_TEST(kv_write_refuses_null_key),
        OPS_TEST(kv_write_refuses_null_value),
        OPS_TEST(kv_write_refuses_null_slot_mapping),
        OPS_TEST(kv_write_refuses_null_key_cache),
        OPS_TEST(kv_write_refuses_null_value_cache),
        OPS_TEST(kv_write_refuses_key_struct_size_0),
        OPS_TEST(kv_write_refuses_null_key_data),
        OPS_TEST(kv_write_refuses_null_key_cache_data),
        OPS_TEST(kv_write_refuses_null_slot_mapping_data),
        OPS_TEST(kv_write_refuses_2d_key),
        OPS_TEST(kv_write_refuses_3d_key_cache),
        OPS_TEST(kv_write_refuses_int32_key),
        OPS_TEST(kv_write_refuses_int32_key_cache),
        OPS_TEST(kv_write_refuses_int32_slot_mapping),
        OPS_TEST(kv_write_refuses_negative_key_shape),
        OPS_TEST(kv_write_refuses_negative_key_stride),
        OPS_TEST(kv_write_refuses_key_cache_inner_stride_2),
        OPS_TEST(kv_write_refuses_block_size_0),
        OPS_TEST(kv_write_refuses_num_kv_heads_0),
        OPS_TEST(kv_write_refuses_head_dim_0),
        OPS_TEST(kv_write_refuses_value_dtype_differing_from_key),
        OPS_TEST(kv_write_refuses_value_cache_dtype_differing_from_key_cache),
        OPS_TEST(kv_write_refuses_key_heads_differing_from_cache),
        OPS_TEST(kv_write_refuses_key_head_dim_differing_from_cache),
        OPS_TEST(kv_write_refuses_value_tokens_differing_from_key),
        OPS_TEST(kv_write_refuses_value_head_dim_differing_from_value_cache),
        OPS_TEST(kv_write_refuses_slot_mapping_length_differing_from_tokens),
        OPS_TEST(kv_write_refuses_value_cache_num_blocks_differing),
        OPS_TEST(kv_write_refuses_value_cache_block_size_differing),
        OPS_TEST(kv_write_refuses_slot_at_num_blocks_times_block_size),
        OPS_TEST(kv_write_refuses_huge_slot),
        OPS_TEST(kv_write_refuses_fp8_cache_without_scales),
        OPS_TEST(kv_write_refuses_fp8_cache_without_value_scale),
        OPS_TEST(kv_write_refuses_per_block_scale_with_wrong_num_blocks),
        OPS_TEST(kv_write_refuses_per_block_scale_with_wrong_heads),
        OPS_TEST(kv_write_refuses_per_tensor_scale_of_2_elements),
        OPS_TEST(kv_write_refuses_mixed_scale_granularity),
        OPS_TEST(kv_write_refuses_3d_scale_as_unsupported),
        OPS_TEST(kv_write_refuses_negative_scale_ndim_as_invalid),
        OPS_TEST(kv_write_refuses_f16_scale),
        OPS_TEST(kv_write_refuses_scale_struct_size_0),
        OPS_TEST(kv_write_refuses_scale_without_data),
        OPS_TEST(kv_write_refuses_key_scale_for_f32_cache),
        OPS_TEST(kv_write_refuses_value_scale_for_f32_cache),
        OPS_TEST(kv_write_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_kv_write", tests, NULL, NULL);
}
