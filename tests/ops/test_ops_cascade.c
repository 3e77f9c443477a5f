/* Bad inputs of attnrt_cascade_plan / attnrt_cascade_run. Baseline: the attention baseline as the
 * suffix, after one shared prefix of 8 tokens in blocks {7, 8} (prefix_block_table [3, 2] with a
 * dim-0 stride of 0). A cascade plan always needs a workspace (the partial states live there), so the
 * workspace checks are tested here. */
#include <math.h>
#include <stdio.h>

#include "ops_fixture.h"

static const char CP[] = "attnrt_cascade_plan";
static const char CR[] = "attnrt_cascade_run";

#define CPLAN_REJECTS(f, expected, needle) \
    OPS_CASCADE_PLAN_REJECTS((f), (f)->ctx, &(f)->cas, &(f)->cas_host, (expected), (needle))
#define CPLAN_INVALID(f, needle) CPLAN_REJECTS(f, ATTNRT_ERR_INVALID_ARGUMENT, needle)

#define CRUN_REJECTS(f, plan, expected, needle)                                                         \
    OPS_REJECTS((f), CR, attnrt_cascade_run((plan), &(f)->cas, (f)->dev[OB_WORKSPACE], (f)->bytes[OB_WORKSPACE], \
                                            NULL),                                                      \
                (expected), (needle))
#define CRUN_INVALID(f, plan, needle) CRUN_REJECTS(f, plan, ATTNRT_ERR_INVALID_ARGUMENT, needle)

static size_t workspace_of(attnrt_plan_t *plan)
{
    size_t bytes = 0;
    OPS_OK(attnrt_plan_workspace_size(plan, &bytes));
    return bytes;
}

/* ---- the baseline ---- */

static void cascade_plan_baseline_succeeds_with_a_workspace(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    size_t ws = workspace_of(plan);
    assert_true(ws > 0);
    assert_true(ws <= f->bytes[OB_WORKSPACE]);
}

static void cascade_run_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    OPS_OK(attnrt_cascade_run(plan, &f->cas, f->dev[OB_WORKSPACE], workspace_of(plan), NULL));
    OPS_OK(attnrt_stream_synchronize(f->ctx, NULL));
}

/* "prefix->query_start_loc is not read (the suffix's is used)" */
static void cascade_plan_accepts_prefix_batch_without_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_batch.query_start_loc = NULL;
    ops_cascade_plan_ok(f);
}

/* ---- plan: null pointers and struct sizes ---- */

static void cascade_plan_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    OPS_CASCADE_PLAN_REJECTS(f, NULL, &f->cas, &f->cas_host, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void cascade_plan_refuses_null_plan_out(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, CP, attnrt_cascade_plan(f->ctx, &f->cas, &f->cas_host, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "plan is NULL");
}

static void cascade_plan_refuses_null_host(void **state)
{
    ops_fixture_t *f = *state;
    OPS_CASCADE_PLAN_REJECTS(f, f->ctx, &f->cas, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "host is NULL");
}

static void cascade_plan_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    OPS_CASCADE_PLAN_REJECTS(f, f->ctx, NULL, &f->cas_host, ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void cascade_plan_refuses_args_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->cas.struct_size = 0;
    CPLAN_INVALID(f, "args->struct_size = 0");
}

static void cascade_plan_refuses_host_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->cas_host.struct_size = 0;
    CPLAN_INVALID(f, "host->struct_size = 0");
}

static void cascade_plan_refuses_null_host_prefix(void **state)
{
    ops_fixture_t *f = *state;
    f->cas_host.prefix = NULL;
    CPLAN_INVALID(f, "host->prefix is NULL");
}

static void cascade_plan_refuses_null_host_suffix(void **state)
{
    ops_fixture_t *f = *state;
    f->cas_host.suffix = NULL;
    CPLAN_INVALID(f, "host->suffix is NULL");
}

static void cascade_plan_refuses_null_suffix_args(void **state)
{
    ops_fixture_t *f = *state;
    f->cas.suffix = NULL;
    CPLAN_INVALID(f, "suffix is NULL");
}

static void cascade_plan_refuses_suffix_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->att.struct_size = 0;
    CPLAN_INVALID(f, "suffix->struct_size = 0");
}

static void cascade_plan_refuses_null_prefix_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->cas.prefix_block_table = NULL;
    CPLAN_INVALID(f, "prefix_block_table is NULL");
}

static void cascade_plan_refuses_null_prefix_seq_lens(void **state)
{
    ops_fixture_t *f = *state;
    f->cas.prefix_seq_lens = NULL;
    CPLAN_INVALID(f, "prefix_seq_lens is NULL");
}

static void cascade_plan_refuses_prefix_batch_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_batch.struct_size = 0;
    CPLAN_INVALID(f, "host->prefix->struct_size = 0");
}

static void cascade_plan_refuses_null_prefix_batch_seq_lens(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_batch.seq_lens = NULL;
    CPLAN_INVALID(f, "host->prefix->seq_lens is NULL");
}

static void cascade_plan_refuses_null_suffix_batch_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.block_table = NULL;
    CPLAN_INVALID(f, "block_table is NULL");
}

/* ---- plan: the prefix tensors ---- */

static void cascade_plan_refuses_f32_prefix_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_block_table.dtype = ATTNRT_F32;
    CPLAN_INVALID(f, "prefix_block_table.dtype = f32, expected one of i32");
}

static void cascade_plan_refuses_prefix_block_table_rows_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_block_table.shape[0] = OPS_B - 1;
    CPLAN_INVALID(f, "prefix_block_table.shape[0] = 2, expected num_seqs = seq_lens.shape[0] = 3");
}

static void cascade_plan_refuses_prefix_seq_lens_length_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_seq_lens.shape[0] = OPS_B + 1;
    CPLAN_INVALID(f, "prefix_seq_lens.shape[0] = 4, expected num_seqs = seq_lens.shape[0] = 3");
}

static void cascade_plan_refuses_negative_prefix_block_table_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_block_table.strides[0] = -2;
    CPLAN_INVALID(f, "prefix_block_table.strides[0] = -2 < 0");
}

/* ---- plan: the prefix batch ---- */

static void cascade_plan_refuses_prefix_block_id_past_num_blocks(void **state)
{
    ops_fixture_t *f = *state;
    f->h_prefix_block_table[1] = 99;
    CPLAN_INVALID(f, "prefix_block_table[0][1] = 99 >= num_blocks = 16");
}

static void cascade_plan_refuses_negative_prefix_seq_len(void **state)
{
    ops_fixture_t *f = *state;
    f->h_prefix_seq_lens[2] = -1;
    CPLAN_INVALID(f, "prefix_seq_lens[2] = -1 < 0");
}

static void cascade_plan_refuses_prefix_seq_len_needing_more_blocks_than_columns(void **state)
{
    ops_fixture_t *f = *state;
    f->h_prefix_seq_lens[0] = OPS_PREFIX_LEN + 1;
    CPLAN_INVALID(f, "prefix_seq_lens[0] = 9 needs 3 blocks of 4 but prefix_block_table has 2 columns");
}

static void cascade_plan_refuses_prefix_num_seqs_differing(void **state)
{
    ops_fixture_t *f = *state;
    f->prefix_batch.num_seqs = OPS_B - 1;
    CPLAN_INVALID(f, "host->prefix->num_seqs = 2");
}

/* ---- plan: the suffix ---- */

static void cascade_plan_refuses_int32_query(void **state)
{
    ops_fixture_t *f = *state;
    f->query.dtype = ATTNRT_I32;
    CPLAN_INVALID(f, "query.dtype = i32");
}

static void cascade_plan_refuses_suffix_block_id_past_num_blocks(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[1 * OPS_MAX_BLOCKS + 2] = 912;
    CPLAN_INVALID(f, "block_table[1][2] = 912 >= num_blocks = 16");
}

static void cascade_plan_refuses_causal_suffix_shorter_than_query(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[1] = 0;
    CPLAN_INVALID(f, "seq_lens[1] = 0 < query length 1");
}

static void cascade_plan_refuses_nan_scale(void **state)
{
    ops_fixture_t *f = *state;
    f->att.scale = NAN;
    CPLAN_INVALID(f, "scale = nan");
}

static void cascade_plan_refuses_alibi_as_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    f->att.alibi_slopes = &f->alibi;
    CPLAN_REJECTS(f, ATTNRT_ERR_UNSUPPORTED, "cascade does not compose ALiBi or sliding windows");
}

static void cascade_plan_refuses_window_left_as_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    f->att.sliding_window_left = 128;
    CPLAN_REJECTS(f, ATTNRT_ERR_UNSUPPORTED, "cascade does not compose ALiBi or sliding windows");
}

static void cascade_plan_refuses_window_right_as_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    f->att.causal = 0;
    f->att.sliding_window_right = 1;
    CPLAN_REJECTS(f, ATTNRT_ERR_UNSUPPORTED, "cascade does not compose ALiBi or sliding windows");
}

/* A refusal that comes after the plan object exists must keep its message (the plan's clean-up must
 * not clear it). Here the cpu device refuses head_dim 1025 > 1024. */
static void cascade_plan_keeps_the_device_reason_when_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t act[3] = {OPS_T, OPS_HQ, 1025}, cache[4] = {OPS_NUM_BLOCKS, OPS_BLOCK, OPS_HKV, 1025};
    ops_retensor(&f->query, ATTNRT_F32, 3, act);
    ops_retensor(&f->out, ATTNRT_F32, 3, act);
    ops_retensor(&f->key_cache, ATTNRT_F32, 4, cache);
    ops_retensor(&f->value_cache, ATTNRT_F32, 4, cache);
    f->query.data = f->out.data = f->key_cache.data = f->value_cache.data = NULL; /* a plan reads no data */
    CPLAN_REJECTS(f, ATTNRT_ERR_UNSUPPORTED, "1025");
}

/* ---- run: plan, args ---- */

static void cascade_run_refuses_null_plan(void **state)
{
    ops_fixture_t *f = *state;
    CRUN_INVALID(f, NULL, "plan is NULL");
}

static void cascade_run_refuses_attention_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    CRUN_INVALID(f, plan, "plan was made by attnrt_attention_plan; use attnrt_attention_run");
}

static void cascade_run_refuses_null_args(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    OPS_REJECTS(f, CR, attnrt_cascade_run(plan, NULL, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
}

static void cascade_run_refuses_null_suffix_args(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->cas.suffix = NULL;
    CRUN_INVALID(f, plan, "suffix is NULL");
}

static void cascade_run_refuses_null_out_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->out.data = NULL;
    CRUN_INVALID(f, plan, "out.data is NULL");
}

static void cascade_run_refuses_null_prefix_block_table_data(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->prefix_block_table.data = NULL;
    CRUN_INVALID(f, plan, "prefix_block_table.data is NULL");
}

/* ---- run: differing from the plan ---- */

static void cascade_run_refuses_out_strides_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->out.strides[0] = OPS_HQ * OPS_D + 8;
    CRUN_INVALID(f, plan, "out differs from the plan (layout");
}

static void cascade_run_refuses_lse_given_when_plan_had_none(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->att.lse = &f->lse;
    CRUN_INVALID(f, plan, "lse differs from the plan (given or absent");
}

static void cascade_run_refuses_cache_dtype_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->key_cache.dtype = f->value_cache.dtype = ATTNRT_F16;
    CRUN_INVALID(f, plan, "key_cache differs from the plan (layout");
}

static void cascade_run_refuses_scale_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->att.scale = 0.5f;
    CRUN_INVALID(f, plan, "got 0.5 0 1 0/0");
}

static void cascade_run_refuses_window_as_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->att.sliding_window_left = 4;
    CRUN_REJECTS(f, plan, ATTNRT_ERR_UNSUPPORTED, "cascade does not compose ALiBi or sliding windows");
}

static void cascade_run_refuses_prefix_block_table_layout_differing_from_plan(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    f->prefix_block_table.strides[0] = OPS_PREFIX_BLOCKS; /* planned as one shared row (stride 0) */
    CRUN_INVALID(f, plan, "prefix_block_table or prefix_seq_lens differ from the plan");
}

/* ---- run: workspace and stream ---- */

static void cascade_run_refuses_workspace_smaller_than_planned(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    size_t ws = workspace_of(plan);
    char needle[96];
    snprintf(needle, sizeof needle, "workspace_bytes = %zu < %zu the plan needs", ws - 1, ws);
    OPS_REJECTS(f, CR, attnrt_cascade_run(plan, &f->cas, f->dev[OB_WORKSPACE], ws - 1, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, needle);
}

static void cascade_run_refuses_zero_workspace(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    OPS_REJECTS(f, CR, attnrt_cascade_run(plan, &f->cas, NULL, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "workspace_bytes = 0 <");
}

static void cascade_run_refuses_null_workspace(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    size_t ws = workspace_of(plan);
    char needle[96];
    snprintf(needle, sizeof needle, "workspace is NULL but the plan needs %zu bytes", ws);
    OPS_REJECTS(f, CR, attnrt_cascade_run(plan, &f->cas, NULL, ws, NULL), ATTNRT_ERR_INVALID_ARGUMENT, needle);
}

static void cascade_run_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, CR, attnrt_cascade_run(plan, &f->cas, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], foreign),
                ATTNRT_ERR_INVALID_ARGUMENT, "stream belongs to another context");
}

int ops_run_cascade_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(cascade_plan_baseline_succeeds_with_a_workspace),
        OPS_TEST(cascade_run_baseline_succeeds),
        OPS_TEST(cascade_plan_accepts_prefix_batch_without_query_start_loc),
        OPS_TEST(cascade_plan_refuses_null_ctx),
        OPS_TEST(cascade_plan_refuses_null_plan_out),
        OPS_TEST(cascade_plan_refuses_null_host),
        OPS_TEST(cascade_plan_refuses_null_args),
        OPS_TEST(cascade_plan_refuses_args_struct_size_0),
        OPS_TEST(cascade_plan_refuses_host_struct_size_0),
        OPS_TEST(cascade_plan_refuses_null_host_prefix),
        OPS_TEST(cascade_plan_refuses_null_host_suffix),
        OPS_TEST(cascade_plan_refuses_null_suffix_args),
        OPS_TEST(cascade_plan_refuses_suffix_struct_size_0),
        OPS_TEST(cascade_plan_refuses_null_prefix_block_table),
        OPS_TEST(cascade_plan_refuses_null_prefix_seq_lens),
        OPS_TEST(cascade_plan_refuses_prefix_batch_struct_size_0),
        OPS_TEST(cascade_plan_refuses_null_prefix_batch_seq_lens),
        OPS_TEST(cascade_plan_refuses_null_suffix_batch_block_table),
        OPS_TEST(cascade_plan_refuses_f32_prefix_block_table),
        OPS_TEST(cascade_plan_refuses_prefix_block_table_rows_differing),
        OPS_TEST(cascade_plan_refuses_prefix_seq_lens_length_differing),
        OPS_TEST(cascade_plan_refuses_negative_prefix_block_table_stride),
        OPS_TEST(cascade_plan_refuses_prefix_block_id_past_num_blocks),
        OPS_TEST(cascade_plan_refuses_negative_prefix_seq_len),
        OPS_TEST(cascade_plan_refuses_prefix_seq_len_needing_more_blocks_than_columns),
        OPS_TEST(cascade_plan_refuses_prefix_num_seqs_differing),
        OPS_TEST(cascade_plan_refuses_int32_query),
        OPS_TEST(cascade_plan_refuses_suffix_block_id_past_num_blocks),
        OPS_TEST(cascade_plan_refuses_causal_suffix_shorter_than_query),
        OPS_TEST(cascade_plan_refuses_nan_scale),
        OPS_TEST(cascade_plan_refuses_alibi_as_unsupported),
        OPS_TEST(cascade_plan_refuses_window_left_as_unsupported),
        OPS_TEST(cascade_plan_refuses_window_right_as_unsupported),
        OPS_TEST(cascade_plan_keeps_the_device_reason_when_unsupported),
        OPS_TEST(cascade_run_refuses_null_plan),
        OPS_TEST(cascade_run_refuses_attention_plan),
        OPS_TEST(cascade_run_refuses_null_args),
        OPS_TEST(cascade_run_refuses_null_suffix_args),
        OPS_TEST(cascade_run_refuses_null_out_data),
        OPS_TEST(cascade_run_refuses_null_prefix_block_table_data),
        OPS_TEST(cascade_run_refuses_out_strides_differing_from_plan),
        OPS_TEST(cascade_run_refuses_lse_given_when_plan_had_none),
        OPS_TEST(cascade_run_refuses_cache_dtype_differing_from_plan),
        OPS_TEST(cascade_run_refuses_scale_differing_from_plan),
        OPS_TEST(cascade_run_refuses_window_as_unsupported),
        OPS_TEST(cascade_run_refuses_prefix_block_table_layout_differing_from_plan),
        OPS_TEST(cascade_run_refuses_workspace_smaller_than_planned),
        OPS_TEST(cascade_run_refuses_zero_workspace),
        OPS_TEST(cascade_run_refuses_null_workspace),
        OPS_TEST(cascade_run_refuses_stream_of_another_context),
    };
    return cmocka_run_group_tests_name("ops: attnrt_cascade_plan / attnrt_cascade_run", tests, NULL, NULL);
}
