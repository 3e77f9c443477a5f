/* test_reference.c - proves the float64 golden reference against answers derivable by hand.
 * One behaviour per test, named after it. Outputs are poisoned with NaN first, so an unwritten
 * element fails just like a wrong one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "reference.h"

/* As libuv's TEST_IMPL: cmocka passes a state pointer that no test here uses. */
#define TEST(name)                                                                                  \
    static void name##_body(void);                                                                  \
    static void name(void **state) { (void)state; name##_body(); }                                  \
    static void name##_body(void)

#define TOL 1e-12
/* NEAR(x, want): one value; EXPECT(array, w0, w1, ...): array[i] ~ wi for every listed wi. */
#define NEAR(got, want) near_at((const double[]){got}, (const double[]){want}, 1, #got, __FILE__, __LINE__)
#define EXPECT(got, ...)                                                                            \
    near_at((got), (const double[]){__VA_ARGS__},                                                   \
            sizeof((const double[]){__VA_ARGS__}) / sizeof(double), #got, __FILE__, __LINE__)
#define IS_NEG_INF(x) assert_true(isinf(x) && (x) < 0)

static void near_at(const double *got, const double *want, size_t n, const char *what, const char *file,
                    int line)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (fabs(got[i] - want[i]) <= TOL * (1.0 + fabs(want[i])))
            continue;
        print_error("%s[%zu] = %.17g, want %.17g\n", what, i, got[i], want[i]);
        _fail(file, line);
    }
}

static void poison(double *x, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        x[i] = NAN;
}

/* Deterministic values in [-1, 1) for tests that compare two routes to the same answer. */
static void fill_random(double *x, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (double)(seed >> 8) / (double)(1u << 23) - 1.0;
    }
}

/* ---------------------------------------------------------------- scalar formats */

TEST(test_e4m3_decodes_known_bit_patterns)
{
    NEAR(ref_e4m3_to_double(0x38), 1.0);
    NEAR(ref_e4m3_to_double(0xb8), -1.0);
    NEAR(ref_e4m3_to_double(0x7e), 448.0);
    NEAR(ref_e4m3_to_double(0x78), 256.0); /* top exponent is an ordinary binade in e4m3fn */
    NEAR(ref_e4m3_to_double(0x08), ldexp(1.0, -6));
    NEAR(ref_e4m3_to_double(0x01), ldexp(1.0, -9));
    assert_true(ref_e4m3_to_double(0x80) == 0.0 && signbit(ref_e4m3_to_double(0x80)));
}

TEST(test_e4m3_nan_is_only_0x7f_and_0xff)
{
    int v, nans = 0;
    for (v = 0; v < 256; v++)
        nans += isnan(ref_e4m3_to_double((uint8_t)v)) != 0;
    assert_int_equal(nans, 2);
    assert_true(isnan(ref_e4m3_to_double(0x7f)) && isnan(ref_e4m3_to_double(0xff)));
    assert_int_equal(ref_double_to_e4m3(NAN) & 0x7f, 0x7f);
}

TEST(test_e4m3_max_is_448)
{
    assert_int_equal(ref_double_to_e4m3(448.0), 0x7e);
    assert_int_equal(ref_double_to_e4m3(-448.0), 0xfe);
}

TEST(test_e4m3_saturates_out_of_range_to_448)
{
    assert_int_equal(ref_double_to_e4m3(1000.0), 0x7e);
    assert_int_equal(ref_double_to_e4m3(-1000.0), 0xfe);
    assert_int_equal(ref_double_to_e4m3(470.0), 0x7e); /* would round to 480 if it existed */
    assert_int_equal(ref_double_to_e4m3(INFINITY), 0x7e);
    assert_int_equal(ref_double_to_e4m3(-INFINITY), 0xfe);
}

TEST(test_e4m3_rounds_to_nearest_even)
{
    assert_int_equal(ref_double_to_e4m3(1.0625), 0x38);         /* tie 1.0|1.125 -> even 1.0 */
    assert_int_equal(ref_double_to_e4m3(1.1875), 0x3a);         /* tie 1.125|1.25 -> even 1.25 */
    assert_int_equal(ref_double_to_e4m3(1.0625 + 1e-9), 0x39);  /* above the tie rounds up */
    assert_int_equal(ref_double_to_e4m3(ldexp(1.0, -10)), 0x00); /* subnormal tie 0|2^-9 -> 0 */
    assert_int_equal(ref_double_to_e4m3(ldexp(3.0, -10)), 0x02); /* tie 2^-9|2^-8 -> even 2^-8 */
}

TEST(test_e4m3_round_trips_every_non_nan_byte)
{
    int v;
    for (v = 0; v < 256; v++)
        if ((v & 0x7f) != 0x7f)
            assert_int_equal(ref_double_to_e4m3(ref_e4m3_to_double((uint8_t)v)), v);
}

TEST(test_e5m2_decodes_known_bit_patterns)
{
    NEAR(ref_e5m2_to_double(0x3c), 1.0);
    NEAR(ref_e5m2_to_double(0x7b), 57344.0);
    NEAR(ref_e5m2_to_double(0x01), ldexp(1.0, -16));
    assert_true(isinf(ref_e5m2_to_double(0x7c)));
    assert_true(isnan(ref_e5m2_to_double(0x7d)) && isnan(ref_e5m2_to_double(0xff)));
}

TEST(test_e5m2_saturates_to_57344_never_inf)
{
    assert_int_equal(ref_double_to_e5m2(57344.0), 0x7b);
    assert_int_equal(ref_double_to_e5m2(61440.0), 0x7b); /* IEEE would round this tie to inf */
    assert_int_equal(ref_double_to_e5m2(1e6), 0x7b);
    assert_int_equal(ref_double_to_e5m2(INFINITY), 0x7b);
    assert_int_equal(ref_double_to_e5m2(-INFINITY), 0xfb);
}

TEST(test_e5m2_rounds_to_nearest_even)
{
    assert_int_equal(ref_double_to_e5m2(1.125), 0x3c); /* tie 1.0|1.25 -> even 1.0 */
    assert_int_equal(ref_double_to_e5m2(1.375), 0x3e); /* tie 1.25|1.5 -> even 1.5 */
    assert_int_equal(ref_double_to_e5m2(1.2), 0x3d);
}

TEST(test_e5m2_round_trips_every_finite_byte)
{
    int v;
    for (v = 0; v < 256; v++)
        if ((v & 0x7c) != 0x7c)
            assert_int_equal(ref_double_to_e5m2(ref_e5m2_to_double((uint8_t)v)), v);
}

TEST(test_f16_encodes_known_values)
{
    assert_int_equal(ref_double_to_f16(1.0), 0x3c00);
    assert_int_equal(ref_double_to_f16(-2.0), 0xc000);
    assert_int_equal(ref_double_to_f16(65504.0), 0x7bff);
    assert_int_equal(ref_double_to_f16(0.1), 0x2e66);
    assert_int_equal(ref_double_to_f16(ldexp(1.0, -14)), 0x0400);
    assert_int_equal(ref_double_to_f16(ldexp(1.0, -24)), 0x0001);
    NEAR(ref_f16_to_double(0x3555), 0.333251953125);
    assert_true(isinf(ref_f16_to_double(0x7c00)) && isnan(ref_f16_to_double(0x7e00)));
}

TEST(test_f16_rounds_to_nearest_even)
{
    assert_int_equal(ref_double_to_f16(1.0 + ldexp(1.0, -11)), 0x3c00);
    assert_int_equal(ref_double_to_f16(1.0 + ldexp(3.0, -11)), 0x3c02);
    assert_int_equal(ref_double_to_f16(1.0 + ldexp(1.0, -11) + ldexp(1.0, -30)), 0x3c01);
    assert_int_equal(ref_double_to_f16(ldexp(1.0, -25)), 0x0000); /* tie 0|2^-24 -> 0 */
}

TEST(test_f16_overflows_to_inf)
{
    assert_int_equal(ref_double_to_f16(65519.0), 0x7bff);
    assert_int_equal(ref_double_to_f16(65520.0), 0x7c00); /* tie 65504|65536 rounds to even = inf */
    assert_int_equal(ref_double_to_f16(-1e10), 0xfc00);
}

TEST(test_bf16_encodes_known_values)
{
    assert_int_equal(ref_double_to_bf16(1.0), 0x3f80);
    assert_int_equal(ref_double_to_bf16(-2.0), 0xc000);
    assert_int_equal(ref_double_to_bf16(3.14159265358979), 0x4049);
    assert_int_equal(ref_double_to_bf16(0.1), 0x3dcd);
    NEAR(ref_bf16_to_double(0x3f81), 1.0078125);
    assert_true(isinf(ref_bf16_to_double(0x7f80)) && isnan(ref_bf16_to_double(0x7fc0)));
}

TEST(test_bf16_rounds_to_nearest_even)
{
    assert_int_equal(ref_double_to_bf16(1.0 + ldexp(1.0, -8)), 0x3f80);
    assert_int_equal(ref_double_to_bf16(1.0 + ldexp(3.0, -8)), 0x3f82);
    assert_int_equal(ref_double_to_bf16(1.0 + ldexp(1.0, -8) + ldexp(1.0, -20)), 0x3f81);
}

TEST(test_fp8_quantize_divides_by_scale_and_saturates)
{
    assert_int_equal(ref_quantize_fp8(3.0, 2.0, 0), 0x3c); /* 1.5 in e4m3 */
    NEAR(ref_dequantize_fp8(0x3c, 2.0, 0), 3.0);
    assert_int_equal(ref_quantize_fp8(3.0, 2.0, 1), 0x3e); /* 1.5 in e5m2 */
    NEAR(ref_dequantize_fp8(0x3e, 2.0, 1), 3.0);
    assert_int_equal(ref_quantize_fp8(1000.0, 0.5, 0), 0x7e);
    NEAR(ref_dequantize_fp8(ref_quantize_fp8(1000.0, 0.5, 0), 0.5, 0), 224.0);
}

/* ---------------------------------------------------------------- paged attention */

#define MAXK 64

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

/* ---------------------------------------------------------------- MLA */

/* Like `single`: one request, block_size 1, identity table, scale 1, dense, not causal. */
typedef struct single_mla {
    int32_t qsl[2], seq_len, table[MAXK];
    ref_mla_problem p;
} single_mla;

static ref_mla_problem *mla_init(single_mla *s, int q_len, int seq_len, int hq, int kv_dim, int v_dim,
                                 const double *q, const double *c, double *out, double *lse)
{
    int i;
    s->qsl[0] = 0;
    s->qsl[1] = q_len;
    s->seq_len = seq_len;
    for (i = 0; i < MAXK; i++)
        s->table[i] = i;
    s->p = (ref_mla_problem){.num_seqs = 1, .query_start_loc = s->qsl, .seq_lens = &s->seq_len,
        .num_q_heads = hq, .kv_dim = kv_dim, .v_dim = v_dim, .q = q, .kv_cache = c, .num_blocks = MAXK,
        .block_size = 1, .block_table = s->table, .max_blocks_per_seq = MAXK, .scale = 1.0, .out = out,
        .lse = lse};
    poison(out, (size_t)q_len * hq * v_dim);
    if (lse)
        poison(lse, (size_t)q_len * hq);
    return &s->p;
}

TEST(test_mla_one_key_outputs_its_first_v_dim_columns)
{
    const double q[] = {1, 0, 0, 1}, c[] = {1, 2, 3, 4};
    double out[2], lse[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 1, 1, 4, 2, q, c, out, lse);
    p->scale = 0.5;
    ref_mla(p);
    EXPECT(out, 1, 2);
    EXPECT(lse, 2.5);
}

TEST(test_mla_score_includes_the_rope_columns)
{
    const double q[] = {0, 0, 1}, c[] = {5, 0, log(2.0), 7, 0, 0};
    double out[1], lse[1];
    single_mla s;
    ref_mla(mla_init(&s, 1, 2, 1, 3, 1, q, c, out, lse));
    EXPECT(out, 17.0 / 3.0); /* weights 2/3, 1/3 */
    EXPECT(lse, log(3.0));
}

TEST(test_mla_dense_causal_is_bottom_right_aligned)
{
    const double q[] = {0, 0, 0, 0}, c[] = {1, 9, 2, 9, 6, 9};
    double out[2];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 2, 3, 1, 2, 1, q, c, out, NULL);
    p->causal = 1;
    ref_mla(p);
    EXPECT(out, 1.5, 3);
}

TEST(test_mla_sparse_attends_only_to_listed_positions)
{
    const double q[] = {0, 0}, c[] = {1, 0, 2, 0, 4, 0, 8, 0};
    const int32_t idx[] = {3, -1, 1, 7}; /* -1 unused; 7 is past seq_len and never exists */
    double out[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 4, 1, 2, 1, q, c, out, NULL);
    p->indices = idx;
    p->topk = 4;
    ref_mla(p);
    EXPECT(out, 5);
}

TEST(test_mla_sparse_row_without_indices_gives_zero_and_neg_inf_lse)
{
    const double q[] = {1, 1}, c[] = {1, 2}, sink[] = {0.0};
    const int32_t idx[] = {-1, -1};
    double out[1], lse[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 1, 1, 2, 1, q, c, out, lse);
    p->indices = idx;
    p->topk = 2;
    p->sinks = sink;
    ref_mla(p);
    assert_true(out[0] == 0.0);
    IS_NEG_INF(lse[0]);
}

TEST(test_mla_sink_joins_denominator_once)
{
    const double q[] = {1, 0}, c[] = {2, 5}, sink[] = {1.0};
    double out[1], lse[1];
    single_mla s;
    ref_mla_problem *p = mla_init(&s, 1, 1, 1, 2, 1, q, c, out, lse);
    p->sinks = sink;
    ref_mla(p);
    EXPECT(out, 2.0 * exp(2.0) / (exp(1.0) + exp(2.0)));
    EXPECT(lse, 2);
}

/* ---------------------------------------------------------------- lightning */

TEST(test_lightning_two_tokens_follow_the_recurrence)
{
    /* H 1, Dk 2, Dv 2, lambda = 1/2. S1 = k1^T v1, o1 = q1 S1; S2 = S1/2 + k2^T v2, o2 = q2 S2. */
    const int32_t qsl[] = {0, 2}, slot[] = {1};
    const uint8_t has_init[] = {0};
    const double slopes[] = {log(2.0)}, q[] = {1, 1, 1, 2}, k[] = {1, 0, 0, 1}, v[] = {2, 3, 4, 5};
    double pool[8] = {7, 7, 7, 7, 5, 5, 5, 5}, out[4];
    poison(out, 4);
    ref_lightning(1, qsl, slot, has_init, 1, 2, 2, slopes, q, k, v, pool, out);
    EXPECT(out, 2, 3, 9, 11.5);
    EXPECT(pool, 7, 7, 7, 7, 1, 1.5, 4, 5); /* slot 0 untouched, slot 1 holds S2 */
}

TEST(test_lightning_starts_from_the_slot_when_it_has_initial_state)
{
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {1};
    const double slopes[] = {log(2.0)}, q[] = {1, 0}, k[] = {1, 1}, v[] = {1, 2};
    double pool[4] = {1, 0, 0, 1}, out[2];
    poison(out, 2);
    ref_lightning(1, qsl, slot, has_init, 1, 2, 2, slopes, q, k, v, pool, out);
    EXPECT(out, 1.5, 2); /* S = I/2 + [[1,2],[1,2]] */
    EXPECT(pool, 1.5, 2, 1, 2.5);
}

TEST(test_lightning_padding_request_writes_zero_and_keeps_the_pool)
{
    const int32_t qsl[] = {0, 1}, slot[] = {-1};
    const double slopes[] = {0.1}, q[] = {1}, k[] = {1}, v[] = {1};
    double pool[1] = {3.0}, out[1];
    poison(out, 1);
    ref_lightning(1, qsl, slot, NULL, 1, 1, 1, slopes, q, k, v, pool, out);
    assert_true(out[0] == 0.0);
    EXPECT(pool, 3);
}

/* ---------------------------------------------------------------- gated delta rule */

TEST(test_gdn_one_step_follows_the_delta_rule)
{
    /* S0 = [1; 2], e^g = 1/2 -> S = [0.5; 1]; S^T k = 1.5; v' = 0.5 (4 - 1.5) = 1.25;
     * S = [1.75; 2.25]; o = S^T q = 1.75 + 4.5. */
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {1};
    const double q[] = {1, 2}, k[] = {1, 1}, v[] = {4}, g[] = {log(0.5)}, beta[] = {0.5};
    double pool[2] = {1, 2}, out[1];
    poison(out, 1);
    ref_gated_delta(1, qsl, slot, has_init, 1, 1, 2, 1, 0, 1.0, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    EXPECT(out, 6.25);
    EXPECT(pool, 1.75, 2.25);
}

TEST(test_gdn_l2_normalises_q_and_k_then_scales_q)
{
    /* Zero state: S = k^ (beta v)^T, o = (k^ . q^) beta v with q^ = scale q / |q|. */
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {0};
    const double q[] = {3, 4}, k[] = {0, 2}, v[] = {2}, g[] = {0.3}, beta[] = {0.5};
    const double nk = sqrt(4.0 + 1e-6), nq = sqrt(25.0 + 1e-6);
    double pool[2] = {9, 9}, out[1];
    poison(out, 1);
    ref_gated_delta(1, qsl, slot, has_init, 1, 1, 2, 1, 1, 0.5, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    EXPECT(out, (8.0 / (nk * nq)) * 0.5 * 0.5 * 2.0);
    EXPECT(pool, 0, 2.0 / nk * 0.5 * 2.0); /* the state never sees the q scale */
}

TEST(test_gdn_value_head_i_uses_key_head_i_over_group)
{
    /* H 2, HV 4, Dk = Dv = 1, zero state, beta 1, g 0: o = k q v per value head. */
    const int32_t qsl[] = {0, 1}, slot[] = {0};
    const uint8_t has_init[] = {0};
    const double q[] = {1, 3}, k[] = {1, 2}, v[] = {1, 1, 1, 1}, g[] = {0, 0, 0, 0}, beta[] = {1, 1, 1, 1};
    double pool[4], out[4];
    poison(out, 4);
    ref_gated_delta(1, qsl, slot, has_init, 2, 4, 1, 1, 0, 1.0, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    EXPECT(out, 1, 1, 6, 6);
}

TEST(test_gdn_spec_decoding_reads_last_accepted_slot_and_writes_each_position)
{
    /* Slots [4, 5, 6], 2 accepted -> start from slot 5 (S = 2). Dk = Dv = 1, g 0, beta 1/2, k = q = 1:
     * S <- (S + v) / 2, o = S. Token 0: S = 3 -> slot 4; token 1: S = 5 -> slot 5. */
    const int32_t qsl[] = {0, 2}, slot[] = {0}, spec[] = {4, 5, 6}, accepted[] = {2};
    const uint8_t has_init[] = {1};
    const double q[] = {1, 1}, k[] = {1, 1}, v[] = {4, 7}, g[] = {0, 0}, beta[] = {0.5, 0.5};
    double pool[7] = {11, 0, 0, 0, 1000, 2, 77}, out[2];
    poison(out, 2);
    ref_gated_delta(1, qsl, slot, has_init, 1, 1, 1, 1, 0, 1.0, q, k, v, g, beta, pool, out, spec, 2,
                    accepted);
    EXPECT(out, 3, 5);
    EXPECT(pool, 11, 0, 0, 0, 3, 5, 77); /* state_indices (slot 0) ignored, slot 6 untouched */
}

TEST(test_gdn_padding_request_writes_zero_and_keeps_the_pool)
{
    const int32_t qsl[] = {0, 1}, slot[] = {-1};
    const double q[] = {1}, k[] = {1}, v[] = {1}, g[] = {0}, beta[] = {1};
    double pool[1] = {3.0}, out[1];
    poison(out, 1);
    ref_gated_delta(1, qsl, slot, NULL, 1, 1, 1, 1, 0, 1.0, q, k, v, g, beta, pool, out, NULL, 0, NULL);
    assert_true(out[0] == 0.0);
    EXPECT(pool, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3_decodes_known_bit_patterns),
        cmocka_unit_test(test_e4m3_nan_is_only_0x7f_and_0xff),
        cmocka_unit_test(test_e4m3_max_is_448),
        cmocka_unit_test(test_e4m3_saturates_out_of_range_to_448),
        cmocka_unit_test(test_e4m3_rounds_to_nearest_even),
        cmocka_unit_test(test_e4m3_round_trips_every_non_nan_byte),
        cmocka_unit_test(test_e5m2_decodes_known_bit_patterns),
        cmocka_unit_test(test_e5m2_saturates_to_57344_never_inf),
        cmocka_unit_test(test_e5m2_rounds_to_nearest_even),
        cmocka_unit_test(test_e5m2_round_trips_every_finite_byte),
        cmocka_unit_test(test_f16_encodes_known_values),
        cmocka_unit_test(test_f16_rounds_to_nearest_even),
        cmocka_unit_test(test_f16_overflows_to_inf),
        cmocka_unit_test(test_bf16_encodes_known_values),
        cmocka_unit_test(test_bf16_rounds_to_nearest_even),
        cmocka_unit_test(test_fp8_quantize_divides_by_scale_and_saturates),
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
        cmocka_unit_test(test_mla_one_key_outputs_its_first_v_dim_columns),
        cmocka_unit_test(test_mla_score_includes_the_rope_columns),
        cmocka_unit_test(test_mla_dense_causal_is_bottom_right_aligned),
        cmocka_unit_test(test_mla_sparse_attends_only_to_listed_positions),
        cmocka_unit_test(test_mla_sparse_row_without_indices_gives_zero_and_neg_inf_lse),
        cmocka_unit_test(test_mla_sink_joins_denominator_once),
        cmocka_unit_test(test_lightning_two_tokens_follow_the_recurrence),
        cmocka_unit_test(test_lightning_starts_from_the_slot_when_it_has_initial_state),
        cmocka_unit_test(test_lightning_padding_request_writes_zero_and_keeps_the_pool),
        cmocka_unit_test(test_gdn_one_step_follows_the_delta_rule),
        cmocka_unit_test(test_gdn_l2_normalises_q_and_k_then_scales_q),
        cmocka_unit_test(test_gdn_value_head_i_uses_key_head_i_over_group),
        cmocka_unit_test(test_gdn_spec_decoding_reads_last_accepted_slot_and_writes_each_position),
        cmocka_unit_test(test_gdn_padding_request_writes_zero_and_keeps_the_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
