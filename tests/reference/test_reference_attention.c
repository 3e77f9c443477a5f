/* The float64 reference against answers derivable by hand: paged attention (masks, soft-cap, ALiBi, sinks, GQA, block tables), kv_write, merge and cascade. */
#include "test_reference.h"

/* One request, block_size 1, identity block table (key j is cache row j), scale 1, no masks.
 * The problem points into the fixture, so a fixture must not be copied after single_init. */
typedef struct single {
    int32_t qsl[2], seq_len, table[MAXK];
    ref_attention_problem p;
} single;

static ref_attention_problem *single_init(single *s, int q_len, int seq_len, int hq, int hkv, int dqk, int dv,
                                          const double *q, const double *k, const double *v, double *out,
                                          double *lse)
{
    int i;
    s->qsl[0] = 0;
    s->qsl[1] = q_len;
    s->seq_len = seq_len;
    for (i = 0; i < MAXK; i++)
        s->table[i] = i;
    s->p = (ref_attention_problem){.num_seqs = 1, .query_start_loc = s->qsl, .seq_lens = &s->seq_len,
        .num_q_heads = hq, .num_kv_heads = hkv, .head_dim_qk = dqk, .head_dim_v = dv, .q = q, .k_cache = k,
        .v_cache = v, .num_blocks = MAXK, .block_size = 1, .block_table = s->table,
        .max_blocks_per_seq = MAXK, .scale = 1.0, .window_left = -1, .window_right = -1, .out = out,
        .lse = lse};
    poison(out, (size_t)q_len * hq * dv);
    if (lse)
        poison(lse, (size_t)q_len * hq);
    return &s->p;
}

TEST(test_attention_one_key_outputs_its_value)
{
    const double q[] = {1, 2}, k[] = {3, -1}, v[] = {4, 5, 6};
    double out[3], lse[1];
    single s;
    ref_attention_problem *p = single_init(&s, 1, 1, 1, 1, 2, 3, q, k, v, out, lse);
    p->scale = 0.5;
    ref_paged_attention(p);
    EXPECT(out, 4, 5, 6);
    EXPECT(lse, 0.5); /* scale * q.k */
}

TEST(test_attention_equal_scores_average_the_values)
{
    const double q[] = {0.5, 0.25}, k[] = {1, 1, 1, 1, 1, 1}, v[] = {1, 2, 6};
    double out[1], lse[1];
    single s;
    ref_paged_attention(single_init(&s, 1, 3, 1, 1, 2, 1, q, k, v, out, lse));
    EXPECT(out, 3);
    EXPECT(lse, 0.75 + log(3.0));
}

TEST(test_attention_sink_joins_denominator_once)
{
    const double q[] = {1}, k[] = {2}, v[] = {3, -1}, sink[] = {0.5};
    const double w = exp(2.0) / (exp(0.5) + exp(2.0));
    double out[2], lse[1];
    single s;
    ref_attention_problem *p = single_init(&s, 1, 1, 1, 1, 1, 2, q, k, v, out, lse);
    p->sinks = sink;
    ref_paged_attention(p);
    EXPECT(out, 3 * w, -1 * w);
    EXPECT(lse, 2); /* sink excluded from the LSE */
}

TEST(test_attention_causal_is_bottom_right_aligned)
{
    const double q[] = {0, 0}, k[] = {1, 2, 3, 4}, v[] = {1, 2, 4, 8};
    double out[2];
    single s;
    ref_attention_problem *p = single_init(&s, 2, 4, 1, 1, 1, 1, q, k, v, out, NULL);
    p->causal = 1;
    ref_paged_attention(p);
    EXPECT(out, 7.0 / 3, 15.0 / 4); /* query 0 sits at position 2: keys 0..2 */
}

TEST(test_attention_window_left_zero_keeps_only_the_diagonal)
{
    const double q[] = {1, 1, 1}, k[] = {1, 2, 3}, v[] = {10, 20, 30};
    double out[3];
    single s;
    ref_attention_problem *p = single_init(&s, 3, 3, 1, 1, 1, 1, q, k, v, out, NULL);
    p->causal = 1;
    p->window_left = 0;
    ref_paged_attention(p);
    EXPECT(out, 10, 20, 30);
}

TEST(test_attention_window_left_is_an_inclusive_count)
{
    const double q[] = {0}, k[] = {1, 2, 3, 4}, v[] = {1, 2, 4, 8};
    double out[1];
    single s;
    ref_attention_problem *p = single_init(&s, 1, 4, 1, 1, 1, 1, q, k, v, out, NULL);
    p->causal = 1;
    p->window_left = 1; /* keys at distance 0 and 1 */
    ref_paged_attention(p);
    EXPECT(out, 6);
}

TEST(test_attention_window_right_limits_future_keys)
{
    const double q[] = {0, 0, 0, 0}, k[] = {1, 2, 3, 4}, v[] = {1, 2, 4, 8};
    double out[4];
    single s;
    ref_attention_problem *p = single_init(&s, 4, 4, 1, 1, 1, 1, q, k, v, out, NULL);
    p->window_left = 0;
    p->window_right = 1;
    ref_paged_attention(p);
    EXPECT(out, 1.5, 3, 6, 8);
}

TEST(test_attention_softcap_caps_scores)
{
    const double q[] = {10}, k[] = {10, 0}, v[] = {1, 3};
    const double c = 2.0 * tanh(25.0); /* score 0.5 * 100 = 50, capped at 2 */
    double out[1], lse[1];
    single s;
    ref_attention_problem *p = single_init(&s, 1, 2, 1, 1, 1, 1, q, k, v, out, lse);
    p->scale = 0.5;
    p->softcap = 2.0;
    ref_paged_attention(p);
    EXPECT(out, (exp(c) + 3.0) / (exp(c) + 1.0));
    EXPECT(lse, log(exp(c) + 1.0));
}

TEST(test_attention_alibi_adds_minus_slope_times_distance)
{
    const double q[] = {0, 0}, k[] = {1, 2, 3}, v[] = {1, 2, 4}, slopes[] = {log(2.0), 0.0};
    double out[2], lse[2];
    single s;
    ref_attention_problem *p = single_init(&s, 1, 3, 2, 1, 1, 1, q, k, v, out, lse);
    p->causal = 1;
    p->alibi_slopes = slopes;
    ref_paged_attention(p);
    EXPECT(out, 21.0 / 7, 7.0 / 3); /* head 0 weights 1/4 : 1/2 : 1; head 1 has slope 0 */
    NEAR(lse[0], log(7.0 / 4.0));
}

TEST(test_attention_alibi_is_added_after_the_softcap)
{
    const double q[] = {0}, k[] = {1, 1}, v[] = {0, 1}, slopes[] = {10.0};
    double out[1];
    single s;
    ref_attention_problem *p = single_init(&s, 1, 2, 1, 1, 1, 1, q, k, v, out, NULL);
    p->softcap = 1.0;
    p->alibi_slopes = slopes;
    ref_paged_attention(p);
    EXPECT(out, 1.0 / (1.0 + exp(-10.0))); /* capping after ALiBi would give 1/(1+e^-tanh 10) */
}

TEST(test_attention_row_without_keys_gives_zero_and_neg_inf_lse)
{
    /* Query length 2 over 1 key: the first query sits at position -1 and precedes every key. */
    const double q[] = {1, 1}, k[] = {2}, v[] = {3, 4}, sink[] = {0.0};
    double out[4], lse[2];
    single s;
    ref_attention_problem *p = single_init(&s, 2, 1, 1, 1, 1, 2, q, k, v, out, lse);
    p->causal = 1;
    p->sinks = sink;
    ref_paged_attention(p);
    assert_true(out[0] == 0.0 && out[1] == 0.0);
    IS_NEG_INF(lse[0]);
    NEAR(out[2], 3.0 * exp(2.0) / (1.0 + exp(2.0)));
    NEAR(lse[1], 2.0);
}

TEST(test_attention_gqa_maps_query_head_h_to_kv_head_h_over_group)
{
    /* Hq 4, Hkv 2: kv head 0 gives equal scores, kv head 1 gives weights 1/4, 3/4. */
    const double q[] = {1, 1, 1, 1}, k[] = {0, 0, 0, log(3.0)}, v[] = {1, 10, 3, 20};
    double out[4];
    single s;
    ref_paged_attention(single_init(&s, 1, 2, 4, 2, 1, 1, q, k, v, out, NULL));
    EXPECT(out, 2, 2, 17.5, 17.5);
}

TEST(test_attention_head_dim_v_may_differ_from_qk)
{
    const double q[] = {1, 0, 0}, k[] = {log(2.0), 5, 5, 0, 7, 7}, v[] = {3, 0, 0, 3};
    double out[2], lse[1];
    single s;
    ref_paged_attention(single_init(&s, 1, 2, 1, 1, 3, 2, q, k, v, out, lse));
    EXPECT(out, 2, 1); /* weights 2/3, 1/3 */
    EXPECT(lse, log(3.0));
}

TEST(test_attention_block_table_maps_positions_to_physical_rows)
{
    /* block_size 2; request 0 (prefill, 3 tokens) uses blocks [3, 1], request 1 (decode at
     * position 3) uses blocks [0, 2]. Each query sees only its own position, so out = v[row]. */
    const int32_t qsl[] = {0, 3, 4}, seq_lens[] = {3, 4}, table[] = {3, 1, 0, 2};
    const double q[] = {1, 1, 1, 1}, k[] = {0, .1, .2, .3, .4, .5, .6, .7};
    const double v[] = {100, 101, 102, 103, 104, 105, 106, 107};
    double out[4];
    const ref_attention_problem p = {.num_seqs = 2, .query_start_loc = qsl, .seq_lens = seq_lens,
        .num_q_heads = 1, .num_kv_heads = 1, .head_dim_qk = 1, .head_dim_v = 1, .q = q, .k_cache = k,
        .v_cache = v, .num_blocks = 4, .block_size = 2, .block_table = table, .max_blocks_per_seq = 2,
        .scale = 1.0, .causal = 1, .window_left = 0, .window_right = -1, .out = out};
    poison(out, 4);
    ref_paged_attention(&p);
    EXPECT(out, 106, 107, 102, 105);
}

TEST(test_kv_write_stores_at_slot_and_skips_negative_slots)
{
    /* 3 blocks of 2 rows, Hkv 2, Dk 2, Dv 1; token 0 -> row 5, token 1 skipped, token 2 -> row 2. */
    const int64_t slots[] = {5, -1, 2};
    double k[12], v[6], kc[24], vc[12];
    int i;
    for (i = 0; i < 12; i++)
        k[i] = 1.0 + i;
    for (i = 0; i < 6; i++)
        v[i] = -1.0 - i;
    for (i = 0; i < 24; i++)
        kc[i] = 99.0;
    for (i = 0; i < 12; i++)
        vc[i] = 99.0;
    ref_kv_write(3, 2, 2, 1, k, v, slots, 2, kc, vc);
    for (i = 0; i < 24; i++)
        NEAR(kc[i], i / 4 == 5 ? k[i % 4] : i / 4 == 2 ? k[8 + i % 4] : 99.0);
    for (i = 0; i < 12; i++)
        NEAR(vc[i], i / 2 == 5 ? v[i % 2] : i / 2 == 2 ? v[4 + i % 2] : 99.0);
}

/* ---------------------------------------------------------------- merge and cascade */

TEST(test_merge_of_two_empty_states_is_zero_and_neg_inf)
{
    const double o[] = {NAN, NAN, NAN, NAN}, s[] = {-INFINITY, -INFINITY};
    double out[2], s_out[1];
    poison(out, 2);
    ref_merge_two(1, 1, 2, o, s, o + 2, s + 1, out, s_out);
    assert_true(out[0] == 0.0 && out[1] == 0.0);
    IS_NEG_INF(s_out[0]);
    poison(out, 2);
    ref_merge_states(2, 1, 1, 2, o, s, out, s_out);
    assert_true(out[0] == 0.0 && out[1] == 0.0);
    IS_NEG_INF(s_out[0]);
}

TEST(test_merge_with_empty_state_returns_the_other_state)
{
    const double o[] = {1, 2, NAN, NAN}, s[] = {0.3, -INFINITY};
    double out[2], s_out[1];
    poison(out, 2);
    ref_merge_two(1, 1, 2, o, s, o + 2, s + 1, out, s_out);
    EXPECT(out, 1, 2);
    EXPECT(s_out, 0.3);
    poison(out, 2);
    ref_merge_two(1, 1, 2, o + 2, s + 1, o, s, out, s_out); /* empty state first */
    EXPECT(out, 1, 2);
    EXPECT(s_out, 0.3);
    poison(out, 2);
    ref_merge_states(2, 1, 1, 2, o, s, out, s_out);
    EXPECT(out, 1, 2);
    EXPECT(s_out, 0.3);
}

/* Attention of one query (Hq 2, Hkv 1, Dqk 4, Dv 3) over cache rows [first, first + count). */
static void attend_rows(int first, int count, const double *q, const double *k, const double *v, double *out,
                        double *lse)
{
    single s;
    ref_attention_problem *p = single_init(&s, 1, count, 2, 1, 4, 3, q, k, v, out, lse);
    int i;
    for (i = 0; i < count; i++)
        s.table[i] = first + i;
    p->scale = 0.5;
    ref_paged_attention(p);
}

TEST(test_merge_two_equals_attention_over_the_union_of_keys)
{
    double q[8], k[24], v[18], o_all[6], s_all[2], o_ab[12], s_ab[4], out[6], s_out[2];
    fill_random(q, 8, 1);
    fill_random(k, 24, 2);
    fill_random(v, 18, 3);
    attend_rows(0, 6, q, k, v, o_all, s_all);
    attend_rows(0, 4, q, k, v, o_ab, s_ab);
    attend_rows(4, 2, q, k, v, o_ab + 6, s_ab + 2);
    ref_merge_two(1, 2, 3, o_ab, s_ab, o_ab + 6, s_ab + 2, out, s_out);
    EXPECT(out, o_all[0], o_all[1], o_all[2], o_all[3], o_all[4], o_all[5]);
    EXPECT(s_out, s_all[0], s_all[1]);
}

TEST(test_merge_states_equals_attention_over_the_union_of_keys)
{
    double q[8], k[24], v[18], o_all[6], s_all[2], o_n[18], s_n[6], out[6], s_out[2];
    int i;
    fill_random(q, 8, 4);
    fill_random(k, 24, 5);
    fill_random(v, 18, 6);
    attend_rows(0, 6, q, k, v, o_all, s_all);
    for (i = 0; i < 3; i++)
        attend_rows(2 * i, 2, q, k, v, o_n + 6 * i, s_n + 2 * i);
    ref_merge_states(3, 1, 2, 3, o_n, s_n, out, s_out);
    EXPECT(out, o_all[0], o_all[1], o_all[2], o_all[3], o_all[4], o_all[5]);
    EXPECT(s_out, s_all[0], s_all[1]);
}

/* Cascade fixture: block_size 1, prefix of 3 tokens in rows {9, 3, 12}; request 0 has a 3-token
 * suffix (rows 0..2) and 2 queries, request 1 a 2-token suffix (rows 5, 6) and 2 queries.
 * Hq 2, Hkv 1, Dqk 3, Dv 2, causal, scale 0.7. */
enum { CAS_T = 4, CAS_H = 2, CAS_DQK = 3, CAS_DV = 2, CAS_ROWS = 16, CAS_PREFIX = 3 };
enum { CAS_OUT = CAS_T * CAS_H * CAS_DV, CAS_LSE = CAS_T * CAS_H };
static const int32_t cas_qsl[] = {0, 2, 4}, cas_suffix_lens[] = {3, 2};
static const int32_t cas_prefix[] = {9, 3, 12}, cas_suffix_table[] = {0, 1, 2, 5, 6, 0};

typedef struct cascade_data {
    double q[CAS_T * CAS_H * CAS_DQK], k[CAS_ROWS * CAS_DQK], v[CAS_ROWS * CAS_DV], sinks[CAS_H];
} cascade_data;

static void cascade_fill(cascade_data *d)
{
    fill_random(d->q, sizeof d->q / sizeof d->q[0], 7);
    fill_random(d->k, sizeof d->k / sizeof d->k[0], 8);
    fill_random(d->v, sizeof d->v / sizeof d->v[0], 9);
    d->sinks[0] = 0.4;
    d->sinks[1] = -1.3;
}

static ref_attention_problem cascade_problem(const cascade_data *d, const int32_t *seq_lens,
                                             const int32_t *table, int max_blocks, double *out, double *lse)
{
    poison(out, CAS_OUT);
    poison(lse, CAS_LSE);
    return (ref_attention_problem){.num_seqs = 2, .query_start_loc = cas_qsl, .seq_lens = seq_lens,
        .num_q_heads = CAS_H, .num_kv_heads = 1, .head_dim_qk = CAS_DQK, .head_dim_v = CAS_DV, .q = d->q,
        .k_cache = d->k, .v_cache = d->v, .num_blocks = CAS_ROWS, .block_size = 1, .block_table = table,
        .max_blocks_per_seq = max_blocks, .scale = 0.7, .causal = 1, .window_left = -1, .window_right = -1,
        .out = out, .lse = lse};
}

TEST(test_cascade_equals_attention_over_prefix_then_suffix)
{
    /* The same rows as one request each: block table = prefix rows followed by suffix rows. */
    const int32_t concat_lens[] = {6, 5}, concat_table[] = {9, 3, 12, 0, 1, 2, 9, 3, 12, 5, 6, 0};
    const double slopes[] = {0.25, 0.5};
    double o_cas[CAS_OUT], l_cas[CAS_LSE], o_ref[CAS_OUT], l_ref[CAS_LSE];
    ref_attention_problem cas, whole;
    cascade_data d;
    int i;
    cascade_fill(&d);
    cas = cascade_problem(&d, cas_suffix_lens, cas_suffix_table, 3, o_cas, l_cas);
    whole = cascade_problem(&d, concat_lens, concat_table, 6, o_ref, l_ref);
    cas.alibi_slopes = whole.alibi_slopes = slopes;
    cas.sinks = whole.sinks = d.sinks;
    cas.window_left = whole.window_left = 3;
    ref_cascade_attention(&cas, CAS_PREFIX, cas_prefix);
    ref_paged_attention(&whole);
    for (i = 0; i < CAS_OUT; i++)
        NEAR(o_cas[i], o_ref[i]);
    for (i = 0; i < CAS_LSE; i++)
        NEAR(l_cas[i], l_ref[i]);
}

TEST(test_cascade_equals_merge_of_prefix_and_suffix_with_sink_applied_once)
{
    const int32_t prefix_lens[] = {3, 3}, prefix_tables[] = {9, 3, 12, 9, 3, 12};
    double o_cas[CAS_OUT], l_cas[CAS_LSE], o_pre[CAS_OUT], l_pre[CAS_LSE], o_suf[CAS_OUT], l_suf[CAS_LSE];
    double o_m[CAS_OUT], l_m[CAS_LSE];
    ref_attention_problem cas, pre, suf;
    cascade_data d;
    int th, c;
    cascade_fill(&d);
    cas = cascade_problem(&d, cas_suffix_lens, cas_suffix_table, 3, o_cas, l_cas);
    cas.sinks = d.sinks;
    pre = cascade_problem(&d, prefix_lens, prefix_tables, 3, o_pre, l_pre);
    pre.causal = 0;
    suf = cascade_problem(&d, cas_suffix_lens, cas_suffix_table, 3, o_suf, l_suf);
    ref_cascade_attention(&cas, CAS_PREFIX, cas_prefix);
    ref_paged_attention(&pre);
    ref_paged_attention(&suf);
    ref_merge_two(CAS_T, CAS_H, CAS_DV, o_pre, l_pre, o_suf, l_suf, o_m, l_m);
    for (th = 0; th < CAS_LSE; th++) {
        const double keep = exp(l_m[th]) / (exp(l_m[th]) + exp(d.sinks[th % CAS_H]));
        for (c = 0; c < CAS_DV; c++)
            NEAR(o_cas[th * CAS_DV + c], o_m[th * CAS_DV + c] * keep);
        NEAR(l_cas[th], l_m[th]);
    }
}

int ref_test_attention(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_attention_one_key_outputs_its_value),
        cmocka_unit_test(test_attention_equal_scores_average_the_values),
        cmocka_unit_test(test_attention_sink_joins_denominator_once),
        cmocka_unit_test(test_attention_causal_is_bottom_right_aligned),
        cmocka_unit_test(test_attention_window_left_zero_keeps_only_the_diagonal),
        cmocka_unit_test(test_attention_window_left_is_an_inclusive_count),
        cmocka_unit_test(test_attention_window_right_limits_future_keys),
        cmocka_unit_test(test_attention_softcap_caps_scores),
        cmocka_unit_test(test_attention_alibi_adds_minus_slope_times_distance),
        cmocka_unit_test(test_attention_alibi_is_added_after_the_softcap),
        cmocka_unit_test(test_attention_row_without_keys_gives_zero_and_neg_inf_lse),
        cmocka_unit_test(test_attention_gqa_maps_query_head_h_to_kv_head_h_over_group),
        cmocka_unit_test(test_attention_head_dim_v_may_differ_from_qk),
        cmocka_unit_test(test_attention_block_table_maps_positions_to_physical_rows),
        cmocka_unit_test(test_kv_write_stores_at_slot_and_skips_negative_slots),
        cmocka_unit_test(test_merge_of_two_empty_states_is_zero_and_neg_inf),
        cmocka_unit_test(test_merge_with_empty_state_returns_the_other_state),
        cmocka_unit_test(test_merge_two_equals_attention_over_the_union_of_keys),
        cmocka_unit_test(test_merge_states_equals_attention_over_the_union_of_keys),
        cmocka_unit_test(test_cascade_equals_attention_over_prefix_then_suffix),
        cmocka_unit_test(test_cascade_equals_merge_of_prefix_and_suffix_with_sink_applied_once),
    };
    return cmocka_run_group_tests_name("reference: paged attention, kv_write, merge, cascade", tests, NULL, NULL);
}
