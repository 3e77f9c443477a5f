/* Input structs of an older, smaller struct_size are accepted, their missing fields read as zero
 * (attnrt_types.h "Versioned structs"). Each test runs an op three times from the same device state:
 *   1. with the full-size struct whose trailing fields are zero;
 *   2. with the struct cut before those fields, in a heap block of exactly that size (ASan and valgrind
 *      catch any read past it);
 *   3. with the cut struct_size in a full-size block whose trailing fields hold values that would change
 *      the result or be refused if they were read (so the test fails without a sanitizer too);
 * and requires the three results to be byte-for-byte equal. Paged attention also runs on fresh random
 * inputs against the float64 reference. A struct cut before a REQUIRED field is refused, the message
 * saying that the struct ends before it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "struct_sizes_util.h"

/* One call of the op under test with `s` in place of the baseline struct. */
typedef attnrt_status_t (*op_call_fn)(ops_fixture_t *f, const void *s);

/* A device region the op writes: reset to its first contents before each run, compared after. */
typedef struct region {
    const char    *name;
    void          *dev;
    size_t         bytes;
    unsigned char *init, *first;
} region_t;

static void region_read(ops_fixture_t *f, const region_t *r, void *host)
{
    OPS_OK(attnrt_mem_copy_to_host(f->ctx, host, r->dev, r->bytes, NULL));
}

static void expect_cut_equals_full(ops_fixture_t *f, const char *what, op_call_fn call, const void *zero_tail,
                                   const void *poisoned_tail, size_t full_size, size_t cut, region_t *regions, int n)
{
    assert_true(cut < full_size);
    void *exact = sz_cut(zero_tail, cut);
    unsigned char *poisoned = malloc(full_size);
    assert_non_null(poisoned);
    memcpy(poisoned, poisoned_tail, full_size);
    memcpy(poisoned, &cut, sizeof cut);
    assert_true(memcmp(poisoned + cut, (const unsigned char *)zero_tail + cut, full_size - cut) != 0);
    for (int i = 0; i < n; i++) {
        regions[i].init = malloc(regions[i].bytes);
        regions[i].first = malloc(regions[i].bytes);
        assert_true(regions[i].init && regions[i].first);
        region_read(f, &regions[i], regions[i].init);
    }
    const void *variants[3] = {zero_tail, exact, poisoned};
    const char *names[3] = {"full size, zero tail", "exact heap block", "cut with a poisoned tail"};
    unsigned char *now = NULL;
    for (int v = 0; v < 3; v++) {
        for (int i = 0; i < n; i++)
            OPS_OK(attnrt_mem_copy_to_device(f->ctx, regions[i].dev, regions[i].init, regions[i].bytes, NULL));
        attnrt_status_t st = call(f, variants[v]);
        if (st != ATTNRT_OK)
            fail_msg("%s (%s, struct_size %zu): %s: %s", what, names[v], v ? cut : full_size, attnrt_status_name(st),
                     attnrt_last_error());
        for (int i = 0; i < n; i++) {
            if (v == 0) {
                region_read(f, &regions[i], regions[i].first);
                continue;
            }
            now = realloc(now, regions[i].bytes);
            assert_non_null(now);
            region_read(f, &regions[i], now);
            char label[160];
            snprintf(label, sizeof label, "%s: %s after the %s run vs the full-size run", what, regions[i].name,
                     names[v]);
            sz_expect_same(label, now, regions[i].first, regions[i].bytes);
        }
    }
    for (int i = 0; i < n; i++) {
        free(regions[i].init);
        free(regions[i].first);
    }
    free(now);
    free(exact);
    free(poisoned);
}

static region_t buffer_region(ops_fixture_t *f, int b, const char *name)
{
    return (region_t){name, f->dev[b], f->bytes[b], NULL, NULL};
}

static region_t tensor_region(const char *name, const attnrt_tensor_t *t)
{
    size_t n = attnrt_dtype_size(t->dtype);
    for (int32_t d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return (region_t){name, t->data, n, NULL, NULL};
}

/* Plans and runs a plan kind; the plan is destroyed before returning. */
static attnrt_status_t finish(ops_fixture_t *f, attnrt_status_t st, attnrt_plan_t *plan, int kind, const void *args)
{
    if (st != ATTNRT_OK) return st;
    void *ws = f->dev[OB_WORKSPACE];
    size_t bytes = f->bytes[OB_WORKSPACE];
    switch (kind) {
    case 0: st = attnrt_attention_run(plan, args, ws, bytes, NULL); break;
    case 1: st = attnrt_cascade_run(plan, args, ws, bytes, NULL); break;
    case 2: st = attnrt_mla_run(plan, args, ws, bytes, NULL); break;
    case 3: st = attnrt_lightning_run(plan, args, ws, bytes, NULL); break;
    default: st = attnrt_gated_delta_run(plan, args, ws, bytes, NULL); break;
    }
    attnrt_plan_destroy(plan);
    return st;
}

/* ---- paged attention: fresh random inputs, the float64 reference ---- */

static void attention_args_without_windows_are_plain_attention(void **state)
{
    ops_fixture_t *f = *state;
    sz_attention_t p;
    sz_attention_make(&p, f->ctx);
    const size_t n = (size_t)p.T * SZ_HQ * SZ_D, cut = ATTNRT_STRUCT_SIZE(attnrt_attention_args_t, causal);
    float *full_out = malloc(n * sizeof(float)), *cut_out = malloc(n * sizeof(float));
    double *want = malloc(n * sizeof *want);
    assert_true(full_out && cut_out && want);
    for (int causal = 0; causal <= 1; causal++) {
        attnrt_attention_args_t full = p.args, poisoned = p.args;
        full.causal = poisoned.causal = causal;
        poisoned.sliding_window_left = poisoned.sliding_window_right = 1; /* one key each, if read */
        poisoned.struct_size = cut;
        sz_attention_run(&p, &full, &p.batch, full_out);
        sz_attention_reference(&p, causal, want);
        sz_expect_close(causal ? "causal attention, full-size args" : "attention, full-size args", full_out, want, n,
                        2e-5);
        attnrt_attention_args_t *exact = sz_cut(&full, cut);
        sz_attention_run(&p, exact, &p.batch, cut_out);
        free(exact);
        sz_expect_same("attention args cut before sliding_window_left (exact heap block)", cut_out, full_out,
                       n * sizeof(float));
        sz_attention_run(&p, &poisoned, &p.batch, cut_out);
        sz_expect_same("attention args cut before sliding_window_left (windows 1 past struct_size)", cut_out,
                       full_out, n * sizeof(float));
    }
    /* Cut before `causal` too: a causal = 1 past struct_size is not read, so the attention is not causal. */
    attnrt_attention_args_t poisoned = p.args;
    poisoned.causal = 1;
    poisoned.struct_size = ATTNRT_STRUCT_SIZE(attnrt_attention_args_t, softcap);
    sz_attention_run(&p, &poisoned, &p.batch, cut_out);
    sz_attention_reference(&p, 0, want);
    sz_expect_close("attention args cut before causal", cut_out, want, n, 2e-5);
    free(full_out);
    free(cut_out);
    free(want);
    sz_attention_free(&p);
}

/* ---- the other ops, on the fixture's baselines ---- */

static attnrt_status_t call_kv_write(ops_fixture_t *f, const void *s)
{
    return attnrt_kv_write(f->ctx, s, NULL);
}

static void kv_write_args_without_slot_mapping_host(void **state)
{
    ops_fixture_t *f = *state;
    int64_t bad_slots[OPS_T];
    for (int t = 0; t < OPS_T; t++) bad_slots[t] = (int64_t)OPS_NUM_BLOCKS * OPS_BLOCK; /* refused if read */
    attnrt_kv_write_args_t zero = f->kvw, poisoned = f->kvw;
    zero.slot_mapping_host = NULL;
    poisoned.slot_mapping_host = bad_slots;
    region_t r[] = {buffer_region(f, OB_KEY_CACHE, "key_cache"), buffer_region(f, OB_VALUE_CACHE, "value_cache")};
    expect_cut_equals_full(f, "kv_write", call_kv_write, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_kv_write_args_t, value_scale), r, 2);
}

static attnrt_status_t call_merge(ops_fixture_t *f, const void *s)
{
    return attnrt_merge_states(f->ctx, s, NULL);
}

static void merge_args_without_sinks(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_merge_args_t zero = f->merge, poisoned = f->merge;
    poisoned.sinks = &f->sinks; /* would change every output row */
    region_t r[] = {buffer_region(f, OB_OUT, "out"), buffer_region(f, OB_LSE, "out_lse")};
    expect_cut_equals_full(f, "merge_states", call_merge, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_merge_args_t, out_lse), r, 2);
}

static attnrt_status_t call_cascade_suffix(ops_fixture_t *f, const void *s)
{
    attnrt_cascade_args_t cas = f->cas;
    cas.suffix = s;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_cascade_plan(f->ctx, &cas, &f->cas_host, &plan);
    return finish(f, st, plan, 1, &cas);
}

static void cascade_suffix_without_windows(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_args_t zero = f->att, poisoned = f->att;
    poisoned.sliding_window_left = 2; /* cascade refuses windows, if read */
    region_t r[] = {buffer_region(f, OB_OUT, "out")};
    expect_cut_equals_full(f, "cascade with an older suffix", call_cascade_suffix, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_attention_args_t, causal), r, 1);
}

static attnrt_status_t call_cascade_prefix(ops_fixture_t *f, const void *s)
{
    attnrt_cascade_host_t host = f->cas_host;
    host.prefix = s;
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_cascade_plan(f->ctx, &f->cas, &host, &plan);
    return finish(f, st, plan, 1, &f->cas);
}

/* The shared prefix's block table has row stride 0, which a batch without block_table_stride reads. */
static void cascade_prefix_batch_without_row_stride(void **state)
{
    ops_fixture_t *f = *state;
    assert_int_equal(f->prefix_batch.block_table_stride, 0);
    attnrt_batch_host_t zero = f->prefix_batch, poisoned = f->prefix_batch;
    poisoned.block_table_stride = 3; /* differs from prefix_block_table.strides[0]: refused, if read */
    region_t r[] = {buffer_region(f, OB_OUT, "out")};
    expect_cut_equals_full(f, "cascade with an older host->prefix", call_cascade_prefix, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_batch_host_t, block_table), r, 1);
}

static attnrt_status_t call_mla(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_mla_plan(f->ctx, s, &f->batch, &plan);
    return finish(f, st, plan, 2, s);
}

static void mla_args_without_causal(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_mla_args_t zero = f->x->mla, poisoned = f->x->mla;
    zero.causal = 0;
    poisoned.causal = 1; /* masks the prefill rows, if read */
    region_t r[] = {buffer_region(f, OB_OUT, "out")};
    expect_cut_equals_full(f, "mla", call_mla, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_mla_args_t, scale), r, 1);
}

static attnrt_status_t call_lightning_batch(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_lightning_plan(f->ctx, &f->x->lin, s, &f->x->lin_states, f->x->lin_pool, &plan);
    return finish(f, st, plan, 3, &f->x->lin);
}

static attnrt_status_t call_lightning_states(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_lightning_plan(f->ctx, &f->x->lin, &f->x->lin_batch, s, f->x->lin_pool, &plan);
    return finish(f, st, plan, 3, &f->x->lin);
}

static void lightning_with_older_batch_and_states(void **state)
{
    ops_fixture_t *f = *state;
    ops_ext_t *x = f->x;
    region_t r[] = {tensor_region("lightning out", &x->lout), tensor_region("lightning state pool", &x->lin_state)};
    /* A batch of the linear ops needs num_seqs and query_start_loc only. */
    int32_t junk[OPS_B * OPS_MAX_BLOCKS] = {0};
    attnrt_batch_host_t zero = x->lin_batch, poisoned = x->lin_batch;
    zero.seq_lens = NULL;
    poisoned.seq_lens = poisoned.block_table = junk;
    poisoned.block_table_stride = -1; /* refused by the paged checks; never looked at here */
    expect_cut_equals_full(f, "lightning with an older batch", call_lightning_batch, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_batch_host_t, query_start_loc), r, 2);
    attnrt_state_host_t szero = x->lin_states, spoisoned = x->lin_states;
    spoisoned.num_spec = 2; /* refused without speculative decoding, if read */
    expect_cut_equals_full(f, "lightning with older states", call_lightning_states, &szero, &spoisoned, sizeof szero,
                           ATTNRT_STRUCT_SIZE(attnrt_state_host_t, num_accepted), r, 2);
}

static attnrt_status_t call_gated_delta(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_gated_delta_plan(f->ctx, s, &f->x->lin_batch, &f->x->gdn_states, f->x->gdn_pool,
                                                 &plan);
    return finish(f, st, plan, 4, s);
}

static void gated_delta_args_without_use_l2norm_or_scale(void **state)
{
    ops_fixture_t *f = *state;
    ops_ext_t *x = f->x;
    region_t r[] = {tensor_region("gated delta out", &x->gout), tensor_region("gated delta state pool", &x->gdn_state)};
    attnrt_gated_delta_args_t zero = x->gdn, poisoned = x->gdn;
    zero.use_l2norm = 0;
    poisoned.use_l2norm = 1;
    expect_cut_equals_full(f, "gated delta cut before use_l2norm", call_gated_delta, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_gated_delta_args_t, scale), r, 2);
    zero.scale = 0.0f;
    poisoned.scale = 0.125f; /* Dk^-1/2 is 0.354 */
    expect_cut_equals_full(f, "gated delta cut before scale", call_gated_delta, &zero, &poisoned, sizeof zero,
                           ATTNRT_STRUCT_SIZE(attnrt_gated_delta_args_t, num_accepted), r, 2);
}

/* ---- queries and configs ---- */

static void op_query_without_features(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_op_query_t zero = ATTNRT_OP_QUERY_INIT;
    zero.op = ATTNRT_OP_LIGHTNING;
    zero.q_dtype = zero.kv_dtype = ATTNRT_F32;
    zero.head_dim_qk = zero.head_dim_v = 16;
    zero.num_q_heads = zero.num_kv_heads = 2;
    attnrt_op_query_t poisoned = zero;
    poisoned.features = ATTNRT_FEATURE_SPARSE;
    char reason[256];
    assert_int_equal(attnrt_op_supported(f->ctx, &poisoned, reason, sizeof reason), ATTNRT_ERR_UNSUPPORTED);
    OPS_OK(attnrt_op_supported(f->ctx, &zero, NULL, 0));
    const size_t cut = ATTNRT_STRUCT_SIZE(attnrt_op_query_t, num_kv_heads);
    attnrt_op_query_t *exact = sz_cut(&zero, cut);
    OPS_OK(attnrt_op_supported(f->ctx, exact, NULL, 0));
    OPS_OK(attnrt_device_op_supported(0, exact, NULL, 0));
    free(exact);
    poisoned.struct_size = cut;
    OPS_OK(attnrt_op_supported(f->ctx, &poisoned, NULL, 0));
}

static void attention_config_without_model_kind(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t zero = ATTNRT_ATTENTION_CONFIG_INIT;
    zero.max_model_len = 4096;
    zero.block_size = 32;
    zero.head_dim = 128;
    attnrt_attention_config_t poisoned = zero;
    poisoned.model_kind = 99; /* not an attnrt_model_kind: refused, if read */
    attnrt_attention_selection_t want = ATTNRT_ATTENTION_SELECTION_INIT, got = ATTNRT_ATTENTION_SELECTION_INIT;
    assert_int_equal(attnrt_select_attention(f->ctx, &poisoned, &got), ATTNRT_ERR_INVALID_ARGUMENT);
    OPS_OK(attnrt_select_attention(f->ctx, &zero, &want));
    const size_t cut = ATTNRT_STRUCT_SIZE(attnrt_attention_config_t, kv_dtype);
    attnrt_attention_config_t *exact = sz_cut(&zero, cut);
    memset(&got, 0x5a, sizeof got);
    got.struct_size = sizeof got;
    OPS_OK(attnrt_select_attention(f->ctx, exact, &got));
    free(exact);
    sz_expect_same("selection for a config cut before model_kind", &got, &want, sizeof got);
    poisoned.struct_size = cut;
    memset(&got, 0x5a, sizeof got);
    got.struct_size = sizeof got;
    OPS_OK(attnrt_select_attention(f->ctx, &poisoned, &got));
    sz_expect_same("selection for a config cut before model_kind (model_kind 99 past struct_size)", &got, &want,
                   sizeof got);
}

/* ---- a struct cut before a required field: refused, the message says where the struct ends ---- */

static char *needle(char *buf, size_t cap, const char *field, const char *zero, const char *arg, size_t size)
{
    snprintf(buf, cap, "%s->%s is %s (%s->struct_size %zu ends before it)", arg, field, zero, arg, size);
    return buf;
}

static void structs_cut_before_a_required_field_are_refused(void **state)
{
    ops_fixture_t *f = *state;
    ops_ext_t *x = f->x;
    char want[160];
    size_t cut = ATTNRT_STRUCT_SIZE(attnrt_attention_args_t, seq_lens);
    attnrt_attention_args_t *att = sz_cut(&f->att, cut);
    OPS_ATTENTION_PLAN_REJECTS(f, f->ctx, att, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT,
                               needle(want, sizeof want, "out", "NULL", "args", cut));
    free(att);

    cut = ATTNRT_STRUCT_SIZE(attnrt_cascade_args_t, prefix_block_table);
    attnrt_cascade_args_t *cas = sz_cut(&f->cas, cut);
    OPS_CASCADE_PLAN_REJECTS(f, f->ctx, cas, &f->cas_host, ATTNRT_ERR_INVALID_ARGUMENT,
                             needle(want, sizeof want, "prefix_seq_lens", "NULL", "args", cut));
    free(cas);

    cut = ATTNRT_STRUCT_SIZE(attnrt_cascade_host_t, prefix);
    attnrt_cascade_host_t *host = sz_cut(&f->cas_host, cut);
    OPS_CASCADE_PLAN_REJECTS(f, f->ctx, &f->cas, host, ATTNRT_ERR_INVALID_ARGUMENT,
                             needle(want, sizeof want, "suffix", "NULL", "host", cut));
    free(host);

    cut = ATTNRT_STRUCT_SIZE(attnrt_kv_write_args_t, key_cache);
    attnrt_kv_write_args_t *kvw = sz_cut(&f->kvw, cut);
    OPS_REJECTS(f, "attnrt_kv_write", attnrt_kv_write(f->ctx, kvw, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                needle(want, sizeof want, "value_cache", "NULL", "args", cut));
    free(kvw);

    cut = sizeof(size_t);
    attnrt_merge_args_t *merge = sz_cut(&f->merge, cut);
    OPS_REJECTS(f, "attnrt_merge_states", attnrt_merge_states(f->ctx, merge, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                needle(want, sizeof want, "num_states", "0", "args", cut));
    free(merge);

    cut = ATTNRT_STRUCT_SIZE(attnrt_lightning_args_t, state_indices);
    attnrt_lightning_args_t *lin = sz_cut(&x->lin, cut);
    OPS_STATE_PLAN_REJECTS(f, "attnrt_lightning_plan", attnrt_lightning_plan, f->ctx, lin, &x->lin_batch,
                           &x->lin_states, x->lin_pool, ATTNRT_ERR_INVALID_ARGUMENT,
                           needle(want, sizeof want, "has_initial_state", "NULL", "args", cut));
    free(lin);

    cut = ATTNRT_STRUCT_SIZE(attnrt_state_host_t, state_indices);
    attnrt_state_host_t *states = sz_cut(&x->gdn_states, cut);
    OPS_STATE_PLAN_REJECTS(f, "attnrt_gated_delta_plan", attnrt_gated_delta_plan, f->ctx, &x->gdn, &x->lin_batch,
                           states, x->gdn_pool, ATTNRT_ERR_INVALID_ARGUMENT,
                           needle(want, sizeof want, "has_initial_state", "NULL", "states", cut));
    free(states);

    cut = sizeof(size_t);
    attnrt_batch_host_t *batch = sz_cut(&x->lin_batch, cut);
    OPS_STATE_PLAN_REJECTS(f, "attnrt_gated_delta_plan", attnrt_gated_delta_plan, f->ctx, &x->gdn, batch,
                           &x->gdn_states, x->gdn_pool, ATTNRT_ERR_INVALID_ARGUMENT,
                           needle(want, sizeof want, "query_start_loc", "NULL", "batch", cut));
    free(batch);
}

static void mla_cut_before_its_required_scale_is_refused(void **state)
{
    ops_fixture_t *f = *state;
    char want[160];
    size_t cut = ATTNRT_STRUCT_SIZE(attnrt_mla_args_t, indices_host);
    attnrt_mla_args_t *mla = sz_cut(&f->x->mla, cut);
    OPS_MLA_PLAN_REJECTS(f, f->ctx, mla, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT,
                         needle(want, sizeof want, "scale", "0", "args", cut));
    free(mla);
}

int sz_run_older_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_TEST(attention_args_without_windows_are_plain_attention),
        OPS_TEST(kv_write_args_without_slot_mapping_host),
        OPS_TEST(merge_args_without_sinks),
        OPS_TEST(cascade_suffix_without_windows),
        OPS_TEST(cascade_prefix_batch_without_row_stride),
        OPS_MLA_TEST(mla_args_without_causal),
        OPS_LINEAR_TEST(lightning_with_older_batch_and_states),
        OPS_LINEAR_TEST(gated_delta_args_without_use_l2norm_or_scale),
        OPS_TEST(op_query_without_features),
        OPS_TEST(attention_config_without_model_kind),
        OPS_LINEAR_TEST(structs_cut_before_a_required_field_are_refused),
        OPS_MLA_TEST(mla_cut_before_its_required_scale_is_refused),
    };
    return cmocka_run_group_tests_name("older, smaller input structs", tests, NULL, NULL);
}
