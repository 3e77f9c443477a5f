/* How messages name a dtype the op refuses: a vector dtype (lanes = 2) by its name and lanes, an unknown
 * one by its code and bits; never just "unknown". On an input and an output of every op entry. */
#include <stdio.h>

#include "ops_entries.h"

typedef struct dtype_row {
    ops_entry_t entry;
    const char *tensor;
} dtype_row_t;

static const dtype_row_t dtype_rows[] = {
    {E_ATTENTION_PLAN, "query"},  {E_ATTENTION_RUN, "out"},       {E_ATTENTION_RUN, "query_start_loc"},
    {E_KV_WRITE, "key"},          {E_KV_WRITE, "value_cache"},    {E_MERGE_STATES, "states[0]"},
    {E_MERGE_STATES, "out_lse"},  {E_CASCADE_PLAN, "key_cache"},  {E_CASCADE_RUN, "lse"},
    {E_MLA_PLAN, "kv_cache"},     {E_MLA_RUN, "query"},           {E_MLA_RUN, "out"},
    {E_LIGHTNING_PLAN, "slopes"}, {E_LIGHTNING_RUN, "value"},     {E_LIGHTNING_RUN, "out"},
    {E_GATED_DELTA_PLAN, "g"},    {E_GATED_DELTA_RUN, "out"},     {E_GATED_DELTA_RUN, "state"},
};

/* The tensor's own dtype with two lanes ("f32" -> "f32x2"). */
static void refuse_two_lane_dtypes(ops_fixture_t *f, ops_family_t family)
{
    ops_entries_prepare(f, family);
    for (size_t i = 0; i < sizeof dtype_rows / sizeof dtype_rows[0]; i++) {
        const dtype_row_t *r = &dtype_rows[i];
        if (ops_entry_family(r->entry) != family) continue;
        attnrt_tensor_t *t = ops_entry_tensor(f, r->entry, r->tensor);
        const attnrt_tensor_t saved = *t;
        char row[96], needle[192];
        snprintf(needle, sizeof needle, "%s.dtype = %sx2 (lanes = 2; libattnrt takes scalar dtypes, lanes = 1)",
                 r->tensor, attnrt_dtype_name(t->dtype));
        snprintf(row, sizeof row, "%s.dtype.lanes = 2", r->tensor);
        t->dtype.lanes = 2;
        ops_entry_rejects(f, r->entry, ATTNRT_ERR_INVALID_ARGUMENT, needle, row);
        *t = saved;
    }
}

static void two_lane_dtype_is_named_by_the_v11_ops(void **state) { refuse_two_lane_dtypes(*state, FAMILY_V11); }

static void two_lane_dtype_is_named_by_mla(void **state) { refuse_two_lane_dtypes(*state, FAMILY_MLA); }

static void two_lane_dtype_is_named_by_the_linear_ops(void **state) { refuse_two_lane_dtypes(*state, FAMILY_LINEAR); }

static void unknown_dtype_is_named_by_code_and_bits(void **state)
{
    ops_fixture_t *f = *state;
    f->query.dtype = ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 64);
    ops_entry_rejects(f, E_ATTENTION_PLAN, ATTNRT_ERR_INVALID_ARGUMENT,
                      "query.dtype = {code 2, bits 64, lanes 1} (a dtype libattnrt does not know), expected one of",
                      "query.dtype = f64");
}

int ops_run_dtype_name_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(two_lane_dtype_is_named_by_the_v11_ops),
        OPS_MLA_TEST(two_lane_dtype_is_named_by_mla),
        OPS_LINEAR_TEST(two_lane_dtype_is_named_by_the_linear_ops),
        OPS_TEST(unknown_dtype_is_named_by_code_and_bits),
    };
    return cmocka_run_group_tests_name("ops: dtype names in messages", tests, NULL, NULL);
}
