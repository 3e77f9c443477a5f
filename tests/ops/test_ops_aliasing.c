/* Outputs that overlap themselves, on every op entry that writes: out, lse, out_lse, the caches kv_write
 * writes and the state pools of the linear ops. Worker threads would race on the shared elements, so
 * each is refused, naming the tensor and the dims. Inputs may still broadcast (stride 0), and the layouts
 * engines use (HND caches, K and V interleaved in one buffer, padded rows) stay accepted. */
#include <stdio.h>

#include "ops_entries.h"

typedef enum overlap { STRIDE_0, HALF_STRIDE } overlap_t; /* strides[0] = 0, or half the row: rows overlap */

typedef struct alias_row {
    ops_entry_t entry;
    const char *tensor;
} alias_row_t;

/* Every output of every entry. */
static const alias_row_t alias_rows[] = {
    {E_ATTENTION_PLAN, "out"},   {E_ATTENTION_PLAN, "lse"},     {E_ATTENTION_RUN, "out"},   {E_ATTENTION_RUN, "lse"},
    {E_KV_WRITE, "key_cache"},   {E_KV_WRITE, "value_cache"},   {E_MERGE_STATES, "out"},    {E_MERGE_STATES, "out_lse"},
    {E_CASCADE_PLAN, "out"},     {E_CASCADE_PLAN, "lse"},       {E_CASCADE_RUN, "out"},     {E_CASCADE_RUN, "lse"},
    {E_MLA_PLAN, "out"},         {E_MLA_PLAN, "lse"},           {E_MLA_RUN, "out"},         {E_MLA_RUN, "lse"},
    {E_LIGHTNING_PLAN, "out"},   {E_LIGHTNING_PLAN, "state"},   {E_LIGHTNING_RUN, "out"},   {E_LIGHTNING_RUN, "state"},
    {E_GATED_DELTA_PLAN, "out"}, {E_GATED_DELTA_PLAN, "state"}, {E_GATED_DELTA_RUN, "out"}, {E_GATED_DELTA_RUN, "state"},
};

static void refuse_overlapping_outputs(ops_fixture_t *f, ops_family_t family, overlap_t how)
{
    ops_entries_prepare(f, family);
    for (size_t i = 0; i < sizeof alias_rows / sizeof alias_rows[0]; i++) {
        const alias_row_t *r = &alias_rows[i];
        if (ops_entry_family(r->entry) != family) continue;
        attnrt_tensor_t *t = ops_entry_tensor(f, r->entry, r->tensor);
        const attnrt_tensor_t saved = *t;
        t->strides[0] = how == STRIDE_0 ? 0 : t->strides[0] / 2;
        char row[96], needle[160];
        snprintf(row, sizeof row, "%s.strides[0] = %lld", r->tensor, (long long)t->strides[0]);
        if (how == STRIDE_0)
            snprintf(needle, sizeof needle, "%s.strides[0] = 0 with shape[0] = %lld&&race", r->tensor,
                     (long long)t->shape[0]);
        else
            snprintf(needle, sizeof needle, "%s overlaps itself: dim 0 (strides[0] = %lld)&&race", r->tensor,
                     (long long)t->strides[0]);
        ops_entry_rejects(f, r->entry, ATTNRT_ERR_INVALID_ARGUMENT, needle, row);
        *t = saved;
    }
}

static void output_with_stride_0_is_refused_by_the_v11_ops(void **state)
{
    refuse_overlapping_outputs(*state, FAMILY_V11, STRIDE_0);
}

static void output_with_overlapping_rows_is_refused_by_the_v11_ops(void **state)
{
    refuse_overlapping_outputs(*state, FAMILY_V11, HALF_STRIDE);
}

static void output_with_stride_0_is_refused_by_mla(void **state)
{
    refuse_overlapping_outputs(*state, FAMILY_MLA, STRIDE_0);
}

static void output_with_overlapping_rows_is_refused_by_mla(void **state)
{
    refuse_overlapping_outputs(*state, FAMILY_MLA, HALF_STRIDE);
}

static void output_with_stride_0_is_refused_by_the_linear_ops(void **state)
{
    refuse_overlapping_outputs(*state, FAMILY_LINEAR, STRIDE_0);
}

static void output_with_overlapping_rows_is_refused_by_the_linear_ops(void **state)
{
    refuse_overlapping_outputs(*state, FAMILY_LINEAR, HALF_STRIDE);
}

/* Heads inside rows: out [9, 4, 16] whose head stride 8 is half a head, so heads overlap. */
static void output_with_overlapping_heads_names_both_dims(void **state)
{
    ops_fixture_t *f = *state;
    f->out.strides[1] = 8;
    ops_entry_rejects(f, E_ATTENTION_PLAN, ATTNRT_ERR_INVALID_ARGUMENT,
                      "out overlaps itself: dim 1 (strides[1] = 8) steps inside the 16 elements that dim 2 spans",
                      "out.strides[1] = 8");
}

/* out_lse [9, 4] with strides {5, 2}: its 36 elements are disjoint (5i + 2j never repeats for j < 4), but
 * sorted by stride, dim 0's 5 steps inside the 7 elements of dim 1: a layout the check cannot prove
 * disjoint is refused (docs/semantics.md says so). */
static void disjoint_interleaving_the_check_cannot_prove_is_refused(void **state)
{
    ops_fixture_t *f = *state;
    f->lse.strides[0] = 5;
    f->lse.strides[1] = 2;
    ops_entry_rejects(f, E_MERGE_STATES, ATTNRT_ERR_INVALID_ARGUMENT,
                      "out_lse overlaps itself: dim 0 (strides[0] = 5) steps inside the 7 elements that dim 1 spans",
                      "out_lse.strides = {5, 2}");
}

/* ---- what stays accepted ---- */

/* Broadcast inputs: every token reads one query row, both merge states share one row per token's heads. */
static void inputs_may_broadcast(void **state)
{
    ops_fixture_t *f = *state;
    f->query.strides[0] = 0;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    OPS_OK(attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL));
    f->states[1].strides[0] = 0;
    f->state_lses[1].strides[0] = 0;
    OPS_OK(attnrt_merge_states(f->ctx, &f->merge, NULL));
}

/* The cache layouts engines pass: NHD (the fixture's), HND, and K and V interleaved per block in one buffer. */
static void engine_cache_layouts_stay_accepted(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t block = (int64_t)OPS_BLOCK * OPS_HKV * OPS_D; /* elements of one block of one cache */
    static const struct {
        const char *name;
        int         interleaved;
        int64_t     strides[4];
    } layouts[] = {
        {"HND", 0, {(int64_t)OPS_BLOCK * OPS_HKV * OPS_D, OPS_D, (int64_t)OPS_BLOCK * OPS_D, 1}},
        {"K and V interleaved", 1, {2 * (int64_t)OPS_BLOCK * OPS_HKV * OPS_D, (int64_t)OPS_HKV * OPS_D, OPS_D, 1}},
    };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        attnrt_tensor_t *caches[2] = {&f->key_cache, &f->value_cache};
        for (int c = 0; c < 2; c++) {
            memcpy(caches[c]->strides, layouts[i].strides, sizeof layouts[i].strides);
            if (layouts[i].interleaved) {
                caches[c]->shape[0] = OPS_NUM_BLOCKS / 2; /* both caches in the key cache's buffer */
                caches[c]->data = (float *)f->dev[OB_KEY_CACHE] + c * block;
            }
        }
        attnrt_status_t st = attnrt_kv_write(f->ctx, &f->kvw, NULL);
        if (st != ATTNRT_OK) fail_msg("%s: attnrt_kv_write: %s", layouts[i].name, attnrt_last_error());
        attnrt_plan_t *plan = NULL;
        st = attnrt_attention_plan(f->ctx, &f->att, &f->batch, &plan);
        if (st != ATTNRT_OK) fail_msg("%s: attnrt_attention_plan: %s", layouts[i].name, attnrt_last_error());
        st = attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", attnrt_last_error());
        OPS_OK(attnrt_plan_destroy(plan));
        if (st != ATTNRT_OK) fail_msg("%s: attnrt_attention_run: %s", layouts[i].name, msg);
    }
}

/* Rows padded past their elements (out [9, 4, 16] with 80-element rows) are disjoint: accepted. */
static void padded_output_rows_stay_accepted(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t row = (int64_t)OPS_HQ * OPS_D + 16;
    void *out = NULL;
    OPS_OK(attnrt_mem_alloc(f->ctx, (size_t)(OPS_T * row) * sizeof(float), &out));
    f->out.data = out;
    f->out.strides[0] = row;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_attention_plan(f->ctx, &f->att, &f->batch, &plan);
    if (st == ATTNRT_OK) {
        ops_keep_plan(f, plan);
        st = attnrt_attention_run(plan, &f->att, f->dev[OB_WORKSPACE], f->bytes[OB_WORKSPACE], NULL);
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    OPS_OK(attnrt_mem_free(f->ctx, out));
    if (st != ATTNRT_OK) fail_msg("padded out rows: %s", msg);
}

int ops_run_aliasing_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(output_with_stride_0_is_refused_by_the_v11_ops),
        OPS_TEST(output_with_overlapping_rows_is_refused_by_the_v11_ops),
        OPS_MLA_TEST(output_with_stride_0_is_refused_by_mla),
        OPS_MLA_TEST(output_with_overlapping_rows_is_refused_by_mla),
        OPS_LINEAR_TEST(output_with_stride_0_is_refused_by_the_linear_ops),
        OPS_LINEAR_TEST(output_with_overlapping_rows_is_refused_by_the_linear_ops),
        OPS_TEST(output_with_overlapping_heads_names_both_dims),
        OPS_TEST(disjoint_interleaving_the_check_cannot_prove_is_refused),
        OPS_TEST(inputs_may_broadcast),
        OPS_TEST(engine_cache_layouts_stay_accepted),
        OPS_TEST(padded_output_rows_stay_accepted),
    };
    return cmocka_run_group_tests_name("ops: outputs that overlap themselves", tests, NULL, NULL);
}
