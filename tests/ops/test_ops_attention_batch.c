/* Bad host batches given to attnrt_attention_plan: every index a kernel would follow is checked on the
 * host. Baseline: query_start_loc {0, 5, 6, 9}, seq_lens {5, 9, 7}, block_table rows {0,1}, {2,3,4},
 * {5,6} of 4 columns, 16 blocks of 4. */
#include <limits.h>

#include "ops_fixture.h"

#define BATCH_REJECTS(f, needle)                                                                   \
    OPS_ATTENTION_PLAN_REJECTS((f), (f)->ctx, &(f)->att, &(f)->batch, ATTNRT_ERR_INVALID_ARGUMENT, \
                               (needle))

/* ---- the batch struct ---- */

static void attention_plan_refuses_null_batch(void **state)
{
    ops_fixture_t *f = *state;
    OPS_ATTENTION_PLAN_REJECTS(f, f->ctx, &f->att, NULL, ATTNRT_ERR_INVALID_ARGUMENT, "batch is NULL");
}

static void attention_plan_refuses_batch_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.struct_size = 0;
    BATCH_REJECTS(f, "batch->struct_size = 0");
}

static void attention_plan_refuses_null_batch_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.query_start_loc = NULL;
    BATCH_REJECTS(f, "batch->query_start_loc is NULL");
}

static void attention_plan_refuses_null_batch_seq_lens(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.seq_lens = NULL;
    BATCH_REJECTS(f, "batch->seq_lens is NULL");
}

static void attention_plan_refuses_null_batch_block_table(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.block_table = NULL;
    BATCH_REJECTS(f, "batch->block_table is NULL");
}

static void attention_plan_refuses_num_seqs_differing_from_seq_lens(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.num_seqs = OPS_B - 1;
    BATCH_REJECTS(f, "batch->num_seqs = 2 differs from seq_lens.shape[0] = 3");
}

static void attention_plan_refuses_negative_num_seqs(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.num_seqs = -1;
    BATCH_REJECTS(f, "batch->num_seqs = -1");
}

static void attention_plan_refuses_negative_block_table_stride(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.block_table_stride = -4;
    BATCH_REJECTS(f, "batch->block_table_stride = -4; must be >= 0");
}

/* ---- query_start_loc ---- */

static void attention_plan_refuses_query_start_loc_not_starting_at_0(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[0] = 1;
    BATCH_REJECTS(f, "query_start_loc[0] = 1; must be 0");
}

static void attention_plan_refuses_non_monotonic_query_start_loc(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[2] = 4;
    BATCH_REJECTS(f, "query_start_loc is not monotonic: query_start_loc[2] = 4 < query_start_loc[1] = 5");
}

static void attention_plan_refuses_query_start_loc_ending_before_num_tokens(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[OPS_B] = OPS_T - 1;
    BATCH_REJECTS(f, "query_start_loc[3] = 8 differs from num_tokens = 9");
}

static void attention_plan_refuses_query_start_loc_ending_past_num_tokens(void **state)
{
    ops_fixture_t *f = *state;
    f->h_qsl[OPS_B] = OPS_T + 1;
    BATCH_REJECTS(f, "query_start_loc[3] = 10 differs from num_tokens = 9");
}

/* ---- seq_lens ---- */

static void attention_plan_refuses_causal_decode_with_seq_len_0(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[1] = 0;
    BATCH_REJECTS(f, "seq_lens[1] = 0 < query length 1 of request 1");
}

static void attention_plan_refuses_causal_seq_len_shorter_than_query(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[0] = 4;
    BATCH_REJECTS(f, "seq_lens[0] = 4 < query length 5 of request 0");
}

/* Cross-attention: without the causal mask the keys need not include the queries. */
static void attention_plan_accepts_non_causal_seq_len_shorter_than_query(void **state)
{
    ops_fixture_t *f = *state;
    f->att.causal = 0;
    f->h_seq_lens[0] = 3;
    f->h_seq_lens[1] = 0;
    ops_attention_plan_ok(f);
}

static void attention_plan_refuses_negative_seq_len(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[1] = -1;
    BATCH_REJECTS(f, "seq_lens[1] = -1 < 0");
}

static void attention_plan_refuses_seq_len_needing_more_blocks_than_columns(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[1] = OPS_MAX_BLOCKS * OPS_BLOCK + 1;
    BATCH_REJECTS(f, "seq_lens[1] = 17 needs 5 blocks of 4 but block_table has 4 columns");
}

static void attention_plan_refuses_int32_max_seq_len_without_overflow(void **state)
{
    ops_fixture_t *f = *state;
    f->h_seq_lens[2] = INT32_MAX;
    BATCH_REJECTS(f, "seq_lens[2] = 2147483647 needs 536870912 blocks of 4 but block_table has 4 columns");
}

/* ---- block_table ---- */

static void attention_plan_refuses_block_id_past_num_blocks(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[1 * OPS_MAX_BLOCKS + 2] = 912;
    BATCH_REJECTS(f, "block_table[1][2] = 912 >= num_blocks = 16");
}

static void attention_plan_refuses_block_id_equal_to_num_blocks(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[0 * OPS_MAX_BLOCKS + 1] = OPS_NUM_BLOCKS;
    BATCH_REJECTS(f, "block_table[0][1] = 16 >= num_blocks = 16");
}

static void attention_plan_refuses_negative_block_id(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[2 * OPS_MAX_BLOCKS + 1] = -1;
    BATCH_REJECTS(f, "block_table[2][1] = -1 < 0");
}

static void attention_plan_refuses_block_id_read_through_stride(void **state)
{
    ops_fixture_t *f = *state;
    /* one shared row (stride 0 on the host and on the device): request 1 reads its column 2 */
    f->batch.block_table_stride = 0;
    f->block_table.strides[0] = 0;
    f->h_block_table[2] = INT32_MAX;
    BATCH_REJECTS(f, "block_table[1][2] = 2147483647 >= num_blocks = 16");
}

/* The host rows must be the rows the kernel reads: with another stride the device's rows 1 and 2
 * would never be checked. */
static void attention_plan_refuses_host_block_table_stride_differing_from_tensor(void **state)
{
    ops_fixture_t *f = *state;
    f->batch.block_table_stride = 0;
    BATCH_REJECTS(f, "batch->block_table_stride = 0 differs from block_table.strides[0] = 4");
}

/* Columns past a request's last block are padding: engines leave anything there. */
static void attention_plan_accepts_any_padding_past_last_block(void **state)
{
    ops_fixture_t *f = *state;
    f->h_block_table[0 * OPS_MAX_BLOCKS + 2] = -1;
    f->h_block_table[0 * OPS_MAX_BLOCKS + 3] = 912;
    f->h_block_table[2 * OPS_MAX_BLOCKS + 3] = INT32_MIN;
    ops_attention_plan_ok(f);
}

int ops_run_attention_batch_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(attention_plan_refuses_null_batch),
        OPS_TEST(attention_plan_refuses_batch_struct_size_0),
        OPS_TEST(attention_plan_refuses_null_batch_query_start_loc),
        OPS_TEST(attention_plan_refuses_null_batch_seq_lens),
        OPS_TEST(attention_plan_refuses_null_batch_block_table),
        OPS_TEST(attention_plan_refuses_num_seqs_differing_from_seq_lens),
        OPS_TEST(attention_plan_refuses_negative_num_seqs),
        OPS_TEST(attention_plan_refuses_negative_block_table_stride),
        OPS_TEST(attention_plan_refuses_query_start_loc_not_starting_at_0),
        OPS_TEST(attention_plan_refuses_non_monotonic_query_start_loc),
        OPS_TEST(attention_plan_refuses_query_start_loc_ending_before_num_tokens),
        OPS_TEST(attention_plan_refuses_query_start_loc_ending_past_num_tokens),
        OPS_TEST(attention_plan_refuses_causal_decode_with_seq_len_0),
        OPS_TEST(attention_plan_refuses_causal_seq_len_shorter_than_query),
        OPS_TEST(attention_plan_accepts_non_causal_seq_len_shorter_than_query),
        OPS_TEST(attention_plan_refuses_negative_seq_len),
        OPS_TEST(attention_plan_refuses_seq_len_needing_more_blocks_than_columns),
        OPS_TEST(attention_plan_refuses_int32_max_seq_len_without_overflow),
        OPS_TEST(attention_plan_refuses_block_id_past_num_blocks),
        OPS_TEST(attention_plan_refuses_block_id_equal_to_num_blocks),
        OPS_TEST(attention_plan_refuses_negative_block_id),
        OPS_TEST(attention_plan_refuses_block_id_read_through_stride),
        OPS_TEST(attention_plan_refuses_host_block_table_stride_differing_from_tensor),
        OPS_TEST(attention_plan_accepts_any_padding_past_last_block),
    };
    return cmocka_run_group_tests_name("ops: attnrt_attention_plan host batch", tests, NULL, NULL);
}
