/* Bad inputs of attnrt_mla_plan (ABI 1.2). Baseline (ops_fixture.h): dense causal MLA over the fixture's
 * batch, query [9, 4, 24], latent cache [16, 4, 1, 24] f32, out [9, 4, 16], scale 0.25; sparse adds
 * indices [9, 4] with indices_host and causal 0. Validation comes before the capability question, so
 * each refusal is the same whatever the device supports. */
#include <math.h>
#include <stdio.h>

#include "ops_fixture.h"

static const char MP[] = "attnrt_mla_plan";

#define MPLAN_REJECTS(f, expected, needle) \
    OPS_MLA_PLAN_REJECTS((f), (f)->ctx, &(f)->x->mla, &(f)->batch, (expected), (needle))
#define MPLAN_INVALID(f, needle) MPLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

static void reshape(attnrt_tensor_t *t, int32_t ndim, int64_t a, int64_t b, int64_t c, int64_t d)
{
    const int64_t shape[4] = {a, b, c, d};
    ops_tensor(t, t->data, t->dtype, ndim, shape);
}

static void make_fp8_cache(ops_fixture_t *f)
{
    f->x->mla_cache.dtype = ATTNRT_FP8_E4M3; /* same shape; strides in elements do not change */
}

/* ---- the baselines ---- */

static void mla_plan_dense_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_workspace_of(ops_mla_plan_ok(f));
}

static void mla_plan_sparse_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    ops_workspace_of(ops_mla_plan_ok(f));
}

static void mla_plan_accepts_null_data(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_query.data = f->x->mla_cache.data = f->out.data = NULL;
    ops_mla_plan_ok(f);
}

static void mla_plan_accepts_lse_and_sinks(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.lse = &f->lse;
    f->x->mla.sinks = &f->sinks;
    ops_mla_plan_ok(f);
}

/* -1 marks an unused index; with indices_host the runtime refuses anything below it by name (the
 * brief's rule; docs/semantics.md says "any negative is unused" for what kernels do without it). */
static void mla_plan_refuses_index_below_minus_1(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->h_indices[4 * OPS_MLA_TOPK + 3] = -2;
    MPLAN_INVALID(f, "indices[4][3] = -2");
}

static void mla_plan_refuses_index_int32_min(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->h_indices[6 * OPS_MLA_TOPK + 3] = INT32_MIN;
    MPLAN_INVALID(f, "indices[6][3] = -2147483648");
}

/* ---- null pointers and struct sizes ---- */

static void mla_plan_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_MLA_PLAN_REJECTS(f, NULL, &f->x->mla, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void mla_plan_refuses_null_plan_out(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, MP, attnrt_mla_plan(f->ctx, &f->x->mla, &f->batch, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "plan is NULL");
}

static void mla_plan_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_MLA_PLAN_REJECTS(f, f->ctx, NULL, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void mla_plan_refuses_null_batch(void **state)
{
    ops_fixture_t *f = *state;
    OPS_MLA_PLAN_REJECTS(f, f->ctx, &f->x->mla, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch is NULL");
}

static void mla_plan_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.struct_size = 0;
    MPLAN_INVALID(f, "args->struct_size = 0");
}

/* An older caller's struct that ends before `causal` is read with causal = 0: the invalid value stored
 * past its struct_size is never read. */
static void mla_plan_accepts_args_struct_size_without_causal(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.struct_size = ATTNRT_STRUCT_SIZE(attnrt_mla_args_t, scale); /* `causal` missing */
    f->x->mla.causal = 7;
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_mla_plan(f->ctx, &f->x->mla, &f->batch, &plan));
    assert_int_equal(attnrt_plan_destroy(plan), ATTNRT_OK);
}

static void mla_plan_refuses_batch_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.struct_size = 0;
    MPLAN_INVALID(f, "batch->struct_size = 0");
}

static void mla_plan_refuses_query_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_query.struct_size = 0;
    MPLAN_INVALID(f, "query.struct_size = 0");
}

#define MLA_NULL_TENSOR_TEST(field)                           \
    static void mla_plan_refuses_null_##field(void **state)   \
    {                                                         \
        ops_fixture_t *f = *state;                            \
        f->x->mla.field = NULL;                               \
        MPLAN_INVALID(f, #field " is NULL");                  \
    }
MLA_NULL_TENSOR_TEST(query)
MLA_NULL_TENSOR_TEST(kv_cache)
MLA_NULL_TENSOR_TEST(block_table)
MLA_NULL_TENSOR_TEST(query_start_loc)
MLA_NULL_TENSOR_TEST(seq_lens)
MLA_NULL_TENSOR_TEST(out)

static void mla_plan_refuses_null_batch_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.query_start_loc = NULL;
    MPLAN_INVALID(f, "query_start_loc is NULL");
}

static void mla_plan_refuses_null_batch_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.block_table = NULL;
    MPLAN_INVALID(f, "block_table is NULL");
}

/* ---- ndim and dtype ---- */

static void mla_plan_refuses_2d_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_query.ndim = 2;
    MPLAN_INVALID(f, "query.ndim = 2, expected 3");
}

static void mla_plan_refuses_3d_kv_cache(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->x->mla_cache, 3, OPS_NUM_BLOCKS, OPS_BLOCK, OPS_MLA_KV_DIM, 0);
    MPLAN_INVALID(f, "kv_cache.ndim = 3, expected 4");
}

static void mla_plan_refuses_1d_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->block_table.ndim = 1;
    MPLAN_INVALID(f, "block_table.ndim = 1, expected 2");
}

static void mla_plan_refuses_int32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_query.dtype = ATTNRT_I32;
    MPLAN_INVALID(f, "query.dtype = i32");
}

static void mla_plan_refuses_fp8_query(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_query.dtype = ATTNRT_FP8_E4M3;
    MPLAN_INVALID(f, "query.dtype = fp8_e4m3");
}

static void mla_plan_refuses_int32_kv_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_cache.dtype = ATTNRT_I32;
    MPLAN_INVALID(f, "kv_cache.dtype = i32");
}

static void mla_plan_refuses_f32_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->block_table.dtype = ATTNRT_F32;
    MPLAN_INVALID(f, "block_table.dtype = f32");
}

static void mla_plan_refuses_i64_seq_lens(void **state)
{
    ops_fixture_t *f = *state;
    f->seq_lens.dtype = ATTNRT_I64;
    MPLAN_INVALID(f, "seq_lens.dtype = i64");
}

static void mla_plan_refuses_out_dtype_neither_query_nor_f32(void **state)
{
    ops_fixture_t *f = *state;
    f->out.dtype = ATTNRT_BF16;
    MPLAN_INVALID(f, "out.dtype = bf16");
}

static void mla_plan_refuses_f16_out_for_f32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->out.dtype = ATTNRT_F16;
    MPLAN_INVALID(f, "out.dtype = f16");
}

static void mla_plan_refuses_f16_lse(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.dtype = ATTNRT_F16;
    f->x->mla.lse = &f->lse;
    MPLAN_INVALID(f, "lse.dtype = f16");
}

/* ---- shapes and strides ---- */

static void mla_plan_refuses_kv_cache_with_2_heads(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->x->mla_cache, 4, OPS_NUM_BLOCKS / 2, OPS_BLOCK, 2, OPS_MLA_KV_DIM);
    MPLAN_INVALID(f, "kv_cache.shape[2] = 2");
}

static void mla_plan_refuses_kv_cache_with_0_heads(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->x->mla_cache, 4, OPS_NUM_BLOCKS, OPS_BLOCK, 0, OPS_MLA_KV_DIM);
    MPLAN_INVALID(f, "kv_cache.shape[2] = 0");
}

static void mla_plan_refuses_v_dim_above_kv_dim(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->out, 3, OPS_T, OPS_HQ, OPS_MLA_KV_DIM + 8, 0); /* 32 > 24 */
    MPLAN_INVALID(f, "out.shape[2] (v_dim) = 32&&kv_dim = 24");
}

static void mla_plan_refuses_v_dim_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->out, 3, OPS_T, OPS_HQ, 0, 0);
    MPLAN_INVALID(f, "out.shape[2]&&0");
}

static void mla_plan_refuses_query_dim_differing_from_kv_dim(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->x->mla_query, 3, OPS_T, OPS_HQ, 20, 0);
    MPLAN_INVALID(f, "query.shape[2]&&20&&24");
}

static void mla_plan_refuses_block_size_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->x->mla_cache, 4, OPS_NUM_BLOCKS, 0, 1, OPS_MLA_KV_DIM);
    MPLAN_INVALID(f, "kv_cache.shape[1] (block_size) = 0");
}

static void mla_plan_refuses_num_heads_0(void **state)
{
    ops_fixture_t *f = *state;
    reshape(&f->x->mla_query, 3, OPS_T, 0, OPS_MLA_KV_DIM, 0);
    reshape(&f->out, 3, OPS_T, 0, OPS_MLA_V_DIM, 0);
    MPLAN_INVALID(f, "query.shape[1]&&= 0");
}

static void mla_plan_refuses_negative_query_shape(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_query.shape[0] = -1;
    MPLAN_INVALID(f, "query.shape[0] = -1 is out of range");
}

static void mla_plan_refuses_negative_kv_cache_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_cache.strides[0] = -96;
    MPLAN_INVALID(f, "kv_cache.strides[0] = -96 < 0");
}

static void mla_plan_refuses_kv_cache_inner_stride_2(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla_cache.strides[3] = 2;
    MPLAN_INVALID(f, "kv_cache.strides[3] = 2");
}

static void mla_plan_refuses_out_tokens_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->out.shape[0] = OPS_T - 1;
    MPLAN_INVALID(f, "out.shape[0] = 8");
}

static void mla_plan_refuses_out_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->out.shape[1] = OPS_HQ / 2;
    MPLAN_INVALID(f, "out.shape[1] = 2");
}

static void mla_plan_refuses_block_table_rows_differing_from_num_seqs(void **state)
{
    ops_fixture_t *f = *state;
    f->block_table.shape[0] = OPS_B - 1;
    MPLAN_INVALID(f, "block_table.shape[0] = 2");
}

static void mla_plan_refuses_query_start_loc_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->qsl.shape[0] = OPS_B;
    MPLAN_INVALID(f, "query_start_loc.shape[0] = 3");
}

static void mla_plan_refuses_lse_heads_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.shape[1] = 3;
    f->x->mla.lse = &f->lse;
    MPLAN_INVALID(f, "lse.shape[1] = 3");
}

static void mla_plan_refuses_sinks_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->sinks.shape[0] = 5;
    f->x->mla.sinks = &f->sinks;
    MPLAN_INVALID(f, "sinks.shape[0] = 5");
}

/* ---- scale and causal ---- */

static void mla_plan_refuses_scale_0(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.scale = 0.0f; /* required for MLA: 1/sqrt(kv_dim) would be wrong */
    MPLAN_INVALID(f, "scale = 0");
}

static void mla_plan_refuses_nan_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.scale = NAN;
    MPLAN_INVALID(f, "scale = nan");
}

static void mla_plan_refuses_negative_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.scale = -0.25f;
    MPLAN_INVALID(f, "scale = -0.25");
}

static void mla_plan_refuses_infinite_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.scale = INFINITY;
    MPLAN_INVALID(f, "scale = inf");
}

static void mla_plan_refuses_causal_2(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.causal = 2;
    MPLAN_INVALID(f, "causal = 2");
}

/* ---- fp8 scales ---- */

/* fp8 latent caches take one scale [1] or one per block [num_blocks, 1]: both pass validation (the device
 * may still answer UNSUPPORTED; never INVALID_ARGUMENT). */
static void mla_plan_validates_fp8_cache_with_either_scale(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t per_tensor[1] = {1}, per_block[2] = {OPS_NUM_BLOCKS, 1};
    ops_use_sparse(f);
    make_fp8_cache(f);
    f->x->mla.kv_scale = &f->x->kv_scale;
    for (int i = 0; i < 2; i++) {
        ops_tensor(&f->x->kv_scale, f->x->kv_scale.data, ATTNRT_F32, i + 1, i ? per_block : per_tensor);
        attnrt_plan_t *plan = NULL;
        attnrt_status_t st = attnrt_mla_plan(f->ctx, &f->x->mla, &f->batch, &plan);
        if (st == ATTNRT_OK) OPS_OK(attnrt_plan_destroy(plan));
        if (st != ATTNRT_OK && st != ATTNRT_ERR_UNSUPPORTED)
            fail_msg("fp8 cache with a %s scale: attnrt_mla_plan returned %s: %s", i ? "per-block" : "per-tensor",
                     attnrt_status_name(st), attnrt_last_error());
    }
}

static void mla_plan_refuses_kv_scale_for_f32_cache(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->mla.kv_scale = &f->x->kv_scale;
    MPLAN_INVALID(f, "kv_scale given&&f32");
}

static void mla_plan_refuses_fp8_cache_without_kv_scale(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    make_fp8_cache(f);
    MPLAN_INVALID(f, "kv_scale is NULL&&fp8_e4m3");
}

static void mla_plan_refuses_per_block_kv_scale_with_2_columns(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[2] = {OPS_NUM_BLOCKS, 2};
    ops_use_sparse(f);
    make_fp8_cache(f);
    ops_tensor(&f->x->kv_scale, f->x->kv_scale.data, ATTNRT_F32, 2, shape);
    f->x->mla.kv_scale = &f->x->kv_scale;
    MPLAN_INVALID(f, "kv_scale.shape[1] = 2");
}

static void mla_plan_refuses_per_block_kv_scale_with_too_few_blocks(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape[2] = {OPS_NUM_BLOCKS - 1, 1};
    ops_use_sparse(f);
    make_fp8_cache(f);
    ops_tensor(&f->x->kv_scale, f->x->kv_scale.data, ATTNRT_F32, 2, shape);
    f->x->mla.kv_scale = &f->x->kv_scale;
    MPLAN_INVALID(f, "kv_scale.shape[0] = 15");
}

static void mla_plan_refuses_f16_kv_scale(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    make_fp8_cache(f);
    f->x->kv_scale.dtype = ATTNRT_F16;
    f->x->mla.kv_scale = &f->x->kv_scale;
    MPLAN_INVALID(f, "kv_scale.dtype = f16");
}

/* ---- sparse indices ---- */

static void mla_plan_refuses_i64_indices(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->indices.dtype = ATTNRT_I64;
    MPLAN_INVALID(f, "indices.dtype = i64");
}

static void mla_plan_refuses_1d_indices(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->indices.ndim = 1;
    MPLAN_INVALID(f, "indices.ndim = 1, expected 2");
}

static void mla_plan_refuses_indices_rows_differing_from_num_tokens(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->indices.shape[0] = OPS_T - 1;
    MPLAN_INVALID(f, "indices.shape[0] = 8");
}

static void mla_plan_refuses_negative_indices_stride(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->indices.strides[0] = -4;
    MPLAN_INVALID(f, "indices.strides[0] = -4 < 0");
}

static void mla_plan_refuses_indices_host_without_indices(void **state)
{
    ops_fixture_t *f = *state;
    f->x->mla.indices_host = f->x->h_indices; /* dense: there are no device indices to mirror */
    MPLAN_INVALID(f, "indices_host&&indices is NULL");
}

static void mla_plan_refuses_index_at_seq_len(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->h_indices[2 * OPS_MLA_TOPK + 1] = 5; /* token 2 is request 0, seq_len 5 */
    MPLAN_INVALID(f, "indices[2][1] = 5 >= seq_lens[0] = 5");
}

static void mla_plan_refuses_index_past_seq_len_of_decode_request(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->h_indices[5 * OPS_MLA_TOPK + 3] = 900; /* token 5 is request 1 (decode), seq_len 9 */
    MPLAN_INVALID(f, "indices[5][3] = 900 >= seq_lens[1] = 9");
}

static void mla_plan_refuses_index_past_seq_len_of_last_request(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->h_indices[8 * OPS_MLA_TOPK + 0] = 7; /* token 8 is request 2, seq_len 7 */
    MPLAN_INVALID(f, "indices[8][0] = 7 >= seq_lens[2] = 7");
}

static void mla_plan_refuses_index_int32_max(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->x->h_indices[0] = INT32_MAX;
    MPLAN_INVALID(f, "indices[0][0] = 2147483647 >= seq_lens[0] = 5");
}

/* ---- the host batch ---- */

static void mla_plan_refuses_block_id_past_the_cache(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[1 * OPS_MAX_BLOCKS + 2] = OPS_NUM_BLOCKS;
    MPLAN_INVALID(f, "block_table[1][2] = 16 >= num_blocks = 16");
}

static void mla_plan_refuses_negative_block_id(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[0] = -1;
    MPLAN_INVALID(f, "block_table[0][0] = -1 < 0");
}

static void mla_plan_refuses_block_id_past_the_cache_in_sparse_mode(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->h_block_table[2 * OPS_MAX_BLOCKS + 1] = 99;
    MPLAN_INVALID(f, "block_table[2][1] = 99 >= num_blocks = 16");
}

static void mla_plan_refuses_seq_len_needing_more_block_columns(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[1] = OPS_MAX_BLOCKS * OPS_BLOCK + 1;
    MPLAN_INVALID(f, "seq_lens[1] = 17");
}

static void mla_plan_refuses_causal_seq_len_shorter_than_query(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[0] = 4;
    MPLAN_INVALID(f, "seq_lens[0] = 4 < query length 5");
}

static void mla_plan_refuses_negative_seq_len(void **state)
{
    ops_fixture_t *f = *state;
    ops_use_sparse(f);
    f->h_seq_lens[1] = -1;
    MPLAN_INVALID(f, "seq_lens[1] = -1");
}

static void mla_plan_refuses_num_seqs_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.num_seqs = OPS_B - 1;
    MPLAN_INVALID(f, "num_seqs = 2");
}

static void mla_plan_refuses_non_monotonic_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[2] = 4;
    MPLAN_INVALID(f, "query_start_loc[2] = 4 < query_start_loc[1] = 5");
}

static void mla_plan_refuses_query_start_loc_ending_before_num_tokens(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[OPS_B] = OPS_T - 1;
    MPLAN_INVALID(f, "query_start_loc[3] = 8");
}

int ops_run_mla_plan_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_MLA_TEST(mla_plan_dense_baseline_succeeds),
        OPS_MLA_TEST(mla_plan_sparse_baseline_succeeds),
        OPS_MLA_TEST(mla_plan_accepts_null_data),
        OPS_MLA_TEST(mla_plan_accepts_lse_and_sinks),
        OPS_MLA_TEST(mla_plan_refuses_null_ctx),
        OPS_MLA_TEST(mla_plan_refuses_null_plan_out),
        OPS_MLA_TEST(mla_plan_refuses_null_args),
        OPS_MLA_TEST(mla_plan_refuses_null_batch),
        OPS_MLA_TEST(mla_plan_refuses_args_struct_size_0),
        OPS_MLA_TEST(mla_plan_accepts_args_struct_size_without_causal),
        OPS_MLA_TEST(mla_plan_refuses_batch_struct_size_0),
        OPS_MLA_TEST(mla_plan_refuses_query_struct_size_0),
        OPS_MLA_TEST(mla_plan_refuses_null_query),
        OPS_MLA_TEST(mla_plan_refuses_null_kv_cache),
        OPS_MLA_TEST(mla_plan_refuses_null_block_table),
        OPS_MLA_TEST(mla_plan_refuses_null_query_start_loc),
        OPS_MLA_TEST(mla_plan_refuses_null_seq_lens),
        OPS_MLA_TEST(mla_plan_refuses_null_out),
        OPS_MLA_TEST(mla_plan_refuses_null_batch_query_start_loc),
        OPS_MLA_TEST(mla_plan_refuses_null_batch_block_table),
        OPS_MLA_TEST(mla_plan_refuses_2d_query),
        OPS_MLA_TEST(mla_plan_refuses_3d_kv_cache),
        OPS_MLA_TEST(mla_plan_refuses_1d_block_table),
        OPS_MLA_TEST(mla_plan_refuses_int32_query),
        OPS_MLA_TEST(mla_plan_refuses_fp8_query),
        OPS_MLA_TEST(mla_plan_refuses_int32_kv_cache),
        OPS_MLA_TEST(mla_plan_refuses_f32_block_table),
        OPS_MLA_TEST(mla_plan_refuses_i64_seq_lens),
        OPS_MLA_TEST(mla_plan_refuses_out_dtype_neither_query_nor_f32),
        OPS_MLA_TEST(mla_plan_refuses_f16_out_for_f32_query),
        OPS_MLA_TEST(mla_plan_refuses_f16_lse),
        OPS_MLA_TEST(mla_plan_refuses_kv_cache_with_2_heads),
        OPS_MLA_TEST(mla_plan_refuses_kv_cache_with_0_heads),
        OPS_MLA_TEST(mla_plan_refuses_v_dim_above_kv_dim),
        OPS_MLA_TEST(mla_plan_refuses_v_dim_0),
        OPS_MLA_TEST(mla_plan_refuses_query_dim_differing_from_kv_dim),
        OPS_MLA_TEST(mla_plan_refuses_block_size_0),
        OPS_MLA_TEST(mla_plan_refuses_num_heads_0),
        OPS_MLA_TEST(mla_plan_refuses_negative_query_shape),
        OPS_MLA_TEST(mla_plan_refuses_negative_kv_cache_stride),
        OPS_MLA_TEST(mla_plan_refuses_kv_cache_inner_stride_2),
        OPS_MLA_TEST(mla_plan_refuses_out_tokens_differing),
        OPS_MLA_TEST(mla_plan_refuses_out_heads_differing),
        OPS_MLA_TEST(mla_plan_refuses_block_table_rows_differing_from_num_seqs),
        OPS_MLA_TEST(mla_plan_refuses_query_start_loc_length_differing),
        OPS_MLA_TEST(mla_plan_refuses_lse_heads_differing),
        OPS_MLA_TEST(mla_plan_refuses_sinks_length_differing),
        OPS_MLA_TEST(mla_plan_refuses_scale_0),
        OPS_MLA_TEST(mla_plan_refuses_nan_scale),
        OPS_MLA_TEST(mla_plan_refuses_negative_scale),
        OPS_MLA_TEST(mla_plan_refuses_infinite_scale),
        OPS_MLA_TEST(mla_plan_refuses_causal_2),
        OPS_MLA_TEST(mla_plan_validates_fp8_cache_with_either_scale),
        OPS_MLA_TEST(mla_plan_refuses_kv_scale_for_f32_cache),
        OPS_MLA_TEST(mla_plan_refuses_fp8_cache_without_kv_scale),
        OPS_MLA_TEST(mla_plan_refuses_per_block_kv_scale_with_2_columns),
        OPS_MLA_TEST(mla_plan_refuses_per_block_kv_scale_with_too_few_blocks),
        OPS_MLA_TEST(mla_plan_refuses_f16_kv_scale),
        OPS_MLA_TEST(mla_plan_refuses_i64_indices),
        OPS_MLA_TEST(mla_plan_refuses_1d_indices),
        OPS_MLA_TEST(mla_plan_refuses_indices_rows_differing_from_num_tokens),
        OPS_MLA_TEST(mla_plan_refuses_negative_indices_stride),
        OPS_MLA_TEST(mla_plan_refuses_indices_host_without_indices),
        OPS_MLA_TEST(mla_plan_refuses_index_at_seq_len),
        OPS_MLA_TEST(mla_plan_refuses_index_past_seq_len_of_decode_request),
        OPS_MLA_TEST(mla_plan_refuses_index_past_seq_len_of_last_request),
        OPS_MLA_TEST(mla_plan_refuses_index_int32_max),
        OPS_MLA_TEST(mla_plan_refuses_index_below_minus_1),
        OPS_MLA_TEST(mla_plan_refuses_index_int32_min),
        OPS_MLA_TEST(mla_plan_refuses_block_id_past_the_cache),
        OPS_MLA_TEST(mla_plan_refuses_negative_block_id),
        OPS_MLA_TEST(mla_plan_refuses_block_id_past_the_cache_in_sparse_mode),
        OPS_MLA_TEST(mla_plan_refuses_seq_len_needing_more_block_columns),
        OPS_MLA_TEST(mla_plan_refuses_causal_seq_len_shorter_than_query),
        OPS_MLA_TEST(mla_plan_refuses_negative_seq_len),
        OPS_MLA_TEST(mla_plan_refuses_num_seqs_differing),
        OPS_MLA_TEST(mla_plan_refuses_non_monotonic_query_start_loc),
        OPS_MLA_TEST(mla_plan_refuses_query_start_loc_ending_before_num_tokens),
    };
    return cmocka_run_group_tests_name("ops: attnrt_mla_plan", tests, NULL, NULL);
}
