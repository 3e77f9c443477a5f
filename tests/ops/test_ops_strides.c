/* Strides and extents, on every op entry that takes tensors: a tensor's extent, the sum of
 * (shape_i - 1) * strides_i * element size, must be computed without overflow and stay within 2^48 bytes,
 * its end must not wrap the address space, and memory from attnrt_mem_alloc must hold all of it. */
#include <stdio.h>

#include "ops_entries.h"

typedef struct stride_row {
    ops_entry_t entry;
    const char *tensor;
    int         dim;
} stride_row_t;

/* An input and an output of every entry (runs: after a plan of the valid baseline). */
static const stride_row_t overflow_rows[] = {
    {E_ATTENTION_PLAN, "key_cache", 0},       {E_ATTENTION_PLAN, "out", 0},
    {E_ATTENTION_RUN, "key_cache", 0},        {E_ATTENTION_RUN, "query_start_loc", 0},
    {E_ATTENTION_RUN, "out", 1},              {E_ATTENTION_RUN, "lse", 0},
    {E_KV_WRITE, "key", 0},                   {E_KV_WRITE, "slot_mapping", 0},
    {E_KV_WRITE, "key_cache", 0},             {E_KV_WRITE, "value_cache", 1},
    {E_MERGE_STATES, "states[1]", 0},         {E_MERGE_STATES, "out", 0},
    {E_MERGE_STATES, "out_lse", 0},
    {E_CASCADE_PLAN, "prefix_seq_lens", 0},   {E_CASCADE_PLAN, "lse", 0},
    {E_CASCADE_RUN, "prefix_block_table", 1}, {E_CASCADE_RUN, "out", 0},
    {E_MLA_PLAN, "kv_cache", 0},              {E_MLA_PLAN, "out", 0},
    {E_MLA_RUN, "query", 0},                  {E_MLA_RUN, "lse", 1},
    {E_LIGHTNING_PLAN, "key", 0},             {E_LIGHTNING_PLAN, "out", 0},
    {E_LIGHTNING_RUN, "slopes", 0},           {E_LIGHTNING_RUN, "state", 0},
    {E_GATED_DELTA_PLAN, "g", 0},             {E_GATED_DELTA_PLAN, "state", 1},
    {E_GATED_DELTA_RUN, "value", 0},          {E_GATED_DELTA_RUN, "out", 0},
};

static void refuse_overflowing_strides(ops_fixture_t *f, ops_family_t family)
{
    ops_entries_prepare(f, family);
    for (size_t i = 0; i < sizeof overflow_rows / sizeof overflow_rows[0]; i++) {
        const stride_row_t *r = &overflow_rows[i];
        if (ops_entry_family(r->entry) != family) continue;
        attnrt_tensor_t *t = ops_entry_tensor(f, r->entry, r->tensor);
        const attnrt_tensor_t saved = *t;
        t->strides[r->dim] = (int64_t)1 << 62;
        char row[96], needle[160];
        snprintf(row, sizeof row, "%s.strides[%d] = 1 << 62", r->tensor, r->dim);
        snprintf(needle, sizeof needle, "%s.strides[%d] = 4611686018427387904&&overflows int64", r->tensor, r->dim);
        ops_entry_rejects(f, r->entry, ATTNRT_ERR_INVALID_ARGUMENT, needle, row);
        *t = saved;
    }
}

static void extent_overflowing_int64_is_refused_by_the_v11_ops(void **state)
{
    refuse_overflowing_strides(*state, FAMILY_V11);
}

static void extent_overflowing_int64_is_refused_by_mla(void **state) { refuse_overflowing_strides(*state, FAMILY_MLA); }

static void extent_overflowing_int64_is_refused_by_the_linear_ops(void **state)
{
    refuse_overflowing_strides(*state, FAMILY_LINEAR);
}

/* No overflow, but more than 2^48 bytes: 8 rows of 2^45 floats apart span 2^50 bytes. */
static void extent_beyond_2_to_48_bytes_is_refused(void **state)
{
    ops_fixture_t *f = *state;
    ops_entries_prepare(f, FAMILY_V11);
    static const stride_row_t rows[] = {{E_ATTENTION_PLAN, "query", 0}, {E_KV_WRITE, "value_cache", 0},
                                        {E_MERGE_STATES, "lses[0]", 0}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        attnrt_tensor_t *t = ops_entry_tensor(f, rows[i].entry, rows[i].tensor);
        const attnrt_tensor_t saved = *t;
        t->strides[0] = (int64_t)1 << 45;
        char needle[128];
        snprintf(needle, sizeof needle, "%s.strides[0] = 35184372088832&&exceeds 2^48 bytes", rows[i].tensor);
        ops_entry_rejects(f, rows[i].entry, ATTNRT_ERR_INVALID_ARGUMENT, needle, "strides[0] = 1 << 45");
        *t = saved;
    }
}

/* A plan never reads data, but a pointer whose tensor would end past the top of memory is still wrong. */
static void tensor_whose_end_wraps_the_address_space_is_refused(void **state)
{
    ops_fixture_t *f = *state;
    f->query.data = (void *)(UINTPTR_MAX - 63);
    ops_entry_rejects(f, E_ATTENTION_PLAN, ATTNRT_ERR_INVALID_ARGUMENT, "query.data&&wraps the address space",
                      "query.data near UINTPTR_MAX");
}

/* ---- memory from attnrt_mem_alloc must hold the whole tensor ---- */

typedef struct span_row {
    ops_entry_t entry;
    const char *tensor;
} span_row_t;

/* An input and an output of every entry. The state of the linear plans must be the pool's own, so only
 * their runs (which may pass another buffer of the same layout) move it. */
static const span_row_t span_rows[] = {
    {E_ATTENTION_PLAN, "query"},          {E_ATTENTION_PLAN, "out"},
    {E_ATTENTION_RUN, "key_cache"},       {E_ATTENTION_RUN, "lse"},
    {E_KV_WRITE, "slot_mapping"},         {E_KV_WRITE, "value_cache"},
    {E_MERGE_STATES, "lses[0]"},          {E_MERGE_STATES, "out"},
    {E_CASCADE_PLAN, "prefix_seq_lens"},  {E_CASCADE_PLAN, "lse"},
    {E_CASCADE_RUN, "prefix_block_table"}, {E_CASCADE_RUN, "out"},
    {E_MLA_PLAN, "kv_cache"},             {E_MLA_PLAN, "out"},
    {E_MLA_RUN, "block_table"},           {E_MLA_RUN, "lse"},
    {E_LIGHTNING_PLAN, "value"},          {E_LIGHTNING_PLAN, "out"},
    {E_LIGHTNING_RUN, "has_initial_state"}, {E_LIGHTNING_RUN, "state"},
    {E_GATED_DELTA_PLAN, "beta"},         {E_GATED_DELTA_PLAN, "out"},
    {E_GATED_DELTA_RUN, "query_start_loc"}, {E_GATED_DELTA_RUN, "state"},
};

/* Bytes from data to the end of the last element. */
static size_t span_of(const attnrt_tensor_t *t)
{
    size_t extent = 0;
    for (int32_t d = 0; d < t->ndim; d++) extent += (size_t)(t->shape[d] - 1) * (size_t)t->strides[d];
    return (extent + 1) * attnrt_dtype_size(t->dtype);
}

/* The tensor is moved into a fresh allocation one element too small: its last element lies past the end. */
static void refuse_tensors_past_their_allocation(ops_fixture_t *f, ops_family_t family)
{
    ops_entries_prepare(f, family);
    for (size_t i = 0; i < sizeof span_rows / sizeof span_rows[0]; i++) {
        const span_row_t *r = &span_rows[i];
        if (ops_entry_family(r->entry) != family) continue;
        attnrt_tensor_t *t = ops_entry_tensor(f, r->entry, r->tensor);
        const size_t elem = attnrt_dtype_size(t->dtype);
        void *short_buffer = ops_entry_buffer(f, span_of(t) - elem);
        void *saved = t->data;
        t->data = short_buffer;
        char row[96], needle[160];
        snprintf(row, sizeof row, "%s in an allocation one element short", r->tensor);
        snprintf(needle, sizeof needle, "%s spans %zu bytes&&runs %zu bytes past the end", r->tensor, span_of(t),
                 elem);
        ops_entry_rejects(f, r->entry, ATTNRT_ERR_INVALID_ARGUMENT, needle, row);
        t->data = saved;
        ops_entry_buffer_free(f, short_buffer);
    }
}

static void tensor_past_its_allocation_is_refused_by_the_v11_ops(void **state)
{
    refuse_tensors_past_their_allocation(*state, FAMILY_V11);
}

static void tensor_past_its_allocation_is_refused_by_mla(void **state)
{
    refuse_tensors_past_their_allocation(*state, FAMILY_MLA);
}

static void tensor_past_its_allocation_is_refused_by_the_linear_ops(void **state)
{
    refuse_tensors_past_their_allocation(*state, FAMILY_LINEAR);
}

/* The bytes a plan uses of the workspace must lie inside its allocation too, whatever workspace_bytes says. */
static void workspace_past_its_allocation_is_refused(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_cascade_plan_ok(f);
    size_t need = 0;
    OPS_OK(attnrt_plan_workspace_size(plan, &need));
    assert_true(need > 1);
    void *ws = ops_entry_buffer(f, need - 1);
    OPS_REJECTS(f, "attnrt_cascade_run", attnrt_cascade_run(plan, &f->cas, ws, need, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "workspace spans&&runs 1 bytes past the end");
    ops_entry_buffer_free(f, ws);
}

/* No off-by-one: a tensor that ends exactly where its allocation ends is accepted. */
static void tensor_ending_at_its_allocation_end_is_accepted(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    const size_t bytes = span_of(&f->out);
    void *out = NULL;
    OPS_OK(attnrt_mem_alloc(f->ctx, bytes, &out));
    f->out.data = out;
    attnrt_status_t st = attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    OPS_OK(attnrt_mem_free(f->ctx, out));
    if (st != ATTNRT_OK) fail_msg("attnrt_attention_run returned %s: %s", attnrt_status_name(st), msg);
}

int ops_run_stride_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(extent_overflowing_int64_is_refused_by_the_v11_ops),
        OPS_MLA_TEST(extent_overflowing_int64_is_refused_by_mla),
        OPS_LINEAR_TEST(extent_overflowing_int64_is_refused_by_the_linear_ops),
        OPS_TEST(extent_beyond_2_to_48_bytes_is_refused),
        OPS_TEST(tensor_whose_end_wraps_the_address_space_is_refused),
        OPS_TEST(tensor_past_its_allocation_is_refused_by_the_v11_ops),
        OPS_MLA_TEST(tensor_past_its_allocation_is_refused_by_mla),
        OPS_LINEAR_TEST(tensor_past_its_allocation_is_refused_by_the_linear_ops),
        OPS_TEST(workspace_past_its_allocation_is_refused),
        OPS_TEST(tensor_ending_at_its_allocation_end_is_accepted),
    };
    return cmocka_run_group_tests_name("ops: strides and extents", tests, NULL, NULL);
}
