/* Huge shapes (dims near 2^31): refused by the runtime, in milliseconds, before any plugin is asked and
 * before any memory is read. The limits (docs/semantics.md): a tensor holds and spans at most 2^48
 * bytes; one call computes at most 2^31 - 1 rows (num_tokens or num_seqs times num_heads). */
#include <stdio.h>
#include <time.h>

#include "ops_entries.h"

#define BIG INT32_MAX
#define MAX_EDITS 6
#define FAST_MS 100.0 /* a refusal is O(1) per tensor; the bound leaves room for a loaded sanitizer build */

typedef struct edit {
    const char *tensor;
    int         dim;
    int64_t     value;
} edit_t;

typedef struct huge_row {
    ops_entry_t entry;
    const char *what;
    int64_t     tokens;    /* > 0: the batch's last request ends at token `tokens` (a prefill of all but 6) */
    int         keep_data; /* runs: the tensors keep their (small) buffers; plans: edited tensors get NULL data */
    edit_t      edits[MAX_EDITS];
    const char *needle;
} huge_row_t;

static const huge_row_t huge_rows[] = {
    /* paged attention: caches of one block of 2^31 - 1 slots hold any sequence the host batch names */
    {E_ATTENTION_PLAN, "2^31 - 1 tokens", BIG, 0,
     {{"query", 0, BIG}, {"out", 0, BIG}, {"key_cache", 1, BIG}, {"value_cache", 1, BIG}},
     "num_tokens (query.shape[0]) = 2147483647 times num_q_heads (query.shape[1]) = 4 is 8589934588 rows"},
    {E_ATTENTION_PLAN, "2^31 - 2 query heads", 0, 0, {{"query", 1, BIG - 1}, {"out", 1, BIG - 1}},
     "num_tokens (query.shape[0]) = 9 times num_q_heads (query.shape[1]) = 2147483646"},
    {E_ATTENTION_PLAN, "caches of 2^31 - 1 blocks of 2^31 - 1 slots", 0, 0,
     {{"key_cache", 0, BIG}, {"key_cache", 1, BIG}, {"value_cache", 0, BIG}, {"value_cache", 1, BIG}},
     "key_cache.shape = [2147483647, 2147483647, 2, 16] holds more than 2^48 bytes"},
    {E_CASCADE_PLAN, "2^31 - 1 tokens", BIG, 0,
     {{"query", 0, BIG}, {"out", 0, BIG}, {"key_cache", 1, BIG}, {"value_cache", 1, BIG}},
     "num_tokens (query.shape[0]) = 2147483647 times num_q_heads (query.shape[1]) = 4"},
    {E_CASCADE_PLAN, "2^31 - 2 query heads", 0, 0, {{"query", 1, BIG - 1}, {"out", 1, BIG - 1}},
     "num_q_heads (query.shape[1]) = 2147483646"},
    /* MLA */
    {E_MLA_PLAN, "2^31 - 1 tokens", BIG, 0, {{"query", 0, BIG}, {"out", 0, BIG}, {"kv_cache", 1, BIG}},
     "num_tokens (query.shape[0]) = 2147483647 times num_q_heads (query.shape[1]) = 4"},
    {E_MLA_PLAN, "2^31 - 1 query heads", 0, 0, {{"query", 1, BIG}, {"out", 1, BIG}},
     "num_tokens (query.shape[0]) = 9 times num_q_heads (query.shape[1]) = 2147483647"},
    {E_MLA_PLAN, "a latent cache of 2^31 - 1 blocks of 2^31 - 1 slots", 0, 0, {{"kv_cache", 0, BIG}, {"kv_cache", 1, BIG}},
     "kv_cache.shape = [2147483647, 2147483647, 1, 24] holds more than 2^48 bytes"},
    /* linear ops */
    {E_LIGHTNING_PLAN, "2^31 - 1 tokens", BIG, 0,
     {{"query", 0, BIG}, {"key", 0, BIG}, {"value", 0, BIG}, {"out", 0, BIG}},
     "num_tokens (query.shape[0]) = 2147483647 times num_heads (value.shape[1]) = 2"},
    {E_LIGHTNING_PLAN, "2^31 - 1 heads", 0, 0,
     {{"query", 1, BIG}, {"key", 1, BIG}, {"value", 1, BIG}, {"out", 1, BIG}, {"slopes", 0, BIG}},
     "num_tokens (query.shape[0]) = 9 times num_heads (value.shape[1]) = 2147483647"},
    {E_GATED_DELTA_PLAN, "2^31 - 1 tokens", BIG, 0,
     {{"query", 0, BIG}, {"key", 0, BIG}, {"value", 0, BIG}, {"out", 0, BIG}, {"g", 0, BIG}, {"beta", 0, BIG}},
     "num_tokens (query.shape[0]) = 2147483647 times num_v_heads (value.shape[1]) = 4"},
    {E_GATED_DELTA_PLAN, "head dims of 2^31 - 1", 0, 0,
     {{"query", 2, BIG}, {"key", 2, BIG}, {"value", 2, BIG}, {"out", 2, BIG}, {"state", 2, BIG}, {"state", 3, BIG}},
     "state.shape = [16, 4, 2147483647, 2147483647] holds more than 2^48 bytes"},
    /* entries that read data: refused before a byte of the (9-token) buffers is read past their end */
    {E_KV_WRITE, "2^31 - 1 tokens", 0, 1, {{"key", 0, BIG}, {"value", 0, BIG}, {"slot_mapping", 0, BIG}},
     "num_tokens (key.shape[0]) = 2147483647 times num_kv_heads (key_cache.shape[2]) = 2"},
    {E_MERGE_STATES, "2^31 - 1 tokens", 0, 1,
     {{"out", 0, BIG}, {"out_lse", 0, BIG}, {"states[0]", 0, BIG}, {"states[1]", 0, BIG}, {"lses[0]", 0, BIG},
      {"lses[1]", 0, BIG}},
     "num_tokens (out.shape[0]) = 2147483647 times num_heads (out.shape[1]) = 4"},
};

/* Contiguous strides for the edited shape, saturating at INT64_MAX where they cannot be represented. */
static void make_contiguous(attnrt_tensor_t *t)
{
    int64_t stride = 1;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        t->strides[d] = stride;
        if (__builtin_mul_overflow(stride, t->shape[d] > 0 ? t->shape[d] : 1, &stride)) stride = INT64_MAX;
    }
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void refuse_huge_shapes(ops_fixture_t *f, ops_family_t family)
{
    for (size_t i = 0; i < sizeof huge_rows / sizeof huge_rows[0]; i++) {
        const huge_row_t *r = &huge_rows[i];
        if (ops_entry_family(r->entry) != family) continue;
        attnrt_tensor_t saved[MAX_EDITS];
        int32_t qsl_end = f->h_qsl[OPS_B], seq_end = f->h_seq_lens[OPS_B - 1];
        for (int e = 0; e < MAX_EDITS && r->edits[e].tensor; e++) {
            attnrt_tensor_t *t = ops_entry_tensor(f, r->entry, r->edits[e].tensor);
            saved[e] = *t;
        }
        for (int e = 0; e < MAX_EDITS && r->edits[e].tensor; e++) {
            attnrt_tensor_t *t = ops_entry_tensor(f, r->entry, r->edits[e].tensor);
            t->shape[r->edits[e].dim] = r->edits[e].value;
            make_contiguous(t);
            if (!r->keep_data) t->data = NULL;
        }
        const int64_t *slots = f->kvw.slot_mapping_host;
        f->kvw.slot_mapping_host = NULL; /* the host copy has 9 slots */
        if (r->tokens) {
            f->h_qsl[OPS_B] = (int32_t)r->tokens;
            f->h_seq_lens[OPS_B - 1] = (int32_t)(r->tokens - 2);
        }
        char call[160];
        snprintf(call, sizeof call, "%s (%s)", ops_entry_fn(r->entry), r->what);
        int plan_written = 0;
        ops_snapshot(f);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        attnrt_status_t st = ops_entry_call(f, r->entry, &plan_written);
        const double ms = ms_since(&t0);
        ops_check_rejected(f, call, ops_entry_fn(r->entry), st, ATTNRT_ERR_INVALID_ARGUMENT, r->needle, __FILE__,
                           __LINE__);
        if (plan_written) fail_msg("%s: a refused plan call wrote *plan", call);
        if (ms > FAST_MS) fail_msg("%s took %.1f ms to refuse; expected under %.0f ms", call, ms, FAST_MS);
        f->kvw.slot_mapping_host = slots;
        f->h_qsl[OPS_B] = qsl_end;
        f->h_seq_lens[OPS_B - 1] = seq_end;
        for (int e = MAX_EDITS - 1; e >= 0; e--)
            if (r->edits[e].tensor) *ops_entry_tensor(f, r->entry, r->edits[e].tensor) = saved[e];
    }
}

static void huge_shapes_are_refused_fast_by_the_v11_ops(void **state) { refuse_huge_shapes(*state, FAMILY_V11); }

static void huge_shapes_are_refused_fast_by_mla(void **state) { refuse_huge_shapes(*state, FAMILY_MLA); }

static void huge_shapes_are_refused_fast_by_the_linear_ops(void **state) { refuse_huge_shapes(*state, FAMILY_LINEAR); }

int ops_run_huge_shape_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(huge_shapes_are_refused_fast_by_the_v11_ops),
        OPS_MLA_TEST(huge_shapes_are_refused_fast_by_mla),
        OPS_LINEAR_TEST(huge_shapes_are_refused_fast_by_the_linear_ops),
    };
    return cmocka_run_group_tests_name("ops: huge shapes", tests, NULL, NULL);
}
