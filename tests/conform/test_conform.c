/* test_conform.c - the checker's own machinery, without a device: the comparison catches what it
 * must and passes what it must, seeds replay, case names are unique, dtype helpers are exact. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conform_case.h"
#include "conform_compare.h"
#include "conform_dtype.h"
#include "conform_rng.h"

static cf_result_t fresh(void)
{
    cf_result_t r;
    memset(&r, 0, sizeof r);
    r.status = CF_PASS;
    return r;
}

static void compare_passes_within_tolerance(void **state)
{
    (void)state;
    double ref[8] = {1, 2, 3, 4, -1, -2, -3, -4}, out[8];
    for (int i = 0; i < 8; i++) out[i] = ref[i] * (1 + 1e-7);
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, NULL, 2, 1, 4, 1e-5, 0x1p-126, &r), 1);
    assert_int_equal(r.status, CF_PASS);
    assert_true(r.error < 1e-6);
}

static void compare_fails_on_nan(void **state)
{
    (void)state;
    double ref[4] = {1, 2, 3, 4}, out[4] = {1, 2, NAN, 4};
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, NULL, 1, 1, 4, 1e-2, 0x1p-126, &r), 0);
    assert_int_equal(r.status, CF_FAIL);
    assert_non_null(strstr(r.message, "NaN"));
}

static void compare_fails_on_one_wrong_row_in_a_large_batch(void **state)
{
    (void)state;
    enum { ROWS = 4000, D = 4 };
    double *ref = malloc(sizeof(double) * ROWS * D), *out = malloc(sizeof(double) * ROWS * D);
    for (int i = 0; i < ROWS * D; i++) ref[i] = out[i] = 1.0 + (i % 7);
    for (int d = 0; d < D; d++) out[1234 * D + d] = -out[1234 * D + d]; /* hidden by the global norm */
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, NULL, ROWS, 1, D, 1e-1, 0x1p-126, &r), 0);
    assert_non_null(strstr(r.message, "t=1234"));
    free(ref);
    free(out);
}

static void compare_forgives_rows_below_the_output_range(void **state)
{
    (void)state;
    /* a sink that swamps every key: the true row is 1e-60, the f32 output flushes to 0 */
    double ref[6] = {1, 2, 1e-60, 2e-60, 3, 4}, out[6] = {1, 2, 0, 0, 3, 4};
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, NULL, 3, 1, 2, 1e-5, 0x1p-126, &r), 1);
    out[2] = 0.5; /* but a visible value there is wrong */
    r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, NULL, 3, 1, 2, 1e-1, 0x1p-126, &r), 0);
}

static void compare_requires_exact_zero_in_empty_rows(void **state)
{
    (void)state;
    double ref[4] = {0, 0, 1, 1}, out[4] = {1e-30, 0, 1, 1}, lse[2] = {-INFINITY, 0.5};
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, lse, 2, 1, 2, 1e-2, 0x1p-126, &r), 0);
    assert_non_null(strstr(r.message, "no kept key"));
}

static void lse_minus_infinity_must_match_exactly(void **state)
{
    (void)state;
    double ref[3] = {-INFINITY, 1.0, 2.0}, got[3] = {-1e30, 1.0, 2.0};
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_lse("lse", got, ref, 3, 1, 1e-5, &r), 0);
    got[0] = -INFINITY;
    r = fresh();
    assert_int_equal(cf_compare_lse("lse", got, ref, 3, 1, 1e-5, &r), 1);
    got[2] = 2.01;
    assert_int_equal(cf_compare_lse("lse", got, ref, 3, 1, 1e-3, &r), 0);
}

static void corruption_is_always_caught(void **state)
{
    (void)state;
    double ref[6] = {0.1, -0.2, 0.3, 100, 0.5, 0.6}, out[6];
    memcpy(out, ref, sizeof out);
    assert_int_equal(cf_corrupt_output(out, ref, 6), 1);
    cf_result_t r = fresh();
    assert_int_equal(cf_compare_out("out", out, ref, NULL, 3, 1, 2, 1e-2, 0x1p-126, &r), 0);
    assert_int_equal(cf_corrupt_output(out, ref, 0), 0);
}

static void failure_outranks_unsupported(void **state)
{
    (void)state;
    cf_result_t r = fresh();
    cf_result_unsupported(&r, "no fp8");
    assert_int_equal(r.status, CF_UNSUPPORTED);
    cf_result_fail(&r, "wrong");
    assert_int_equal(r.status, CF_FAIL);
    cf_result_unsupported(&r, "later");
    assert_int_equal(r.status, CF_FAIL);
    assert_string_equal(r.message, "wrong");
}

static void tolerance_is_the_least_precise_dtype(void **state)
{
    (void)state;
    cf_dtype_t a[3] = {CF_F32, CF_F16, CF_F32}, b[2] = {CF_F32, CF_E4M3}, c[1] = {CF_F32};
    assert_true(cf_tolerance_of(a, 3) == 2e-3);
    assert_true(cf_tolerance_of(b, 2) == 1e-2);
    assert_true(cf_tolerance_of(c, 1) == 1e-5);
}

static void dtype_round_trips_and_poison(void **state)
{
    (void)state;
    unsigned char buf[16];
    for (int dt = CF_F32; dt < CF_DTYPE_COUNT_; dt++) {
        cf_encode((cf_dtype_t)dt, 1.5, buf, 1);
        assert_true(cf_decode((cf_dtype_t)dt, buf, 1) == 1.5);
        cf_poison((cf_dtype_t)dt, buf, 2);
        assert_true(isnan(cf_decode((cf_dtype_t)dt, buf, 2)));
    }
    assert_true(cf_round(CF_F16, 1.0 + 1.0 / 4096) == 1.0); /* a tie rounds to even */
    assert_true(cf_round(CF_E4M3, 1000.0) == 448.0);        /* fp8 saturates */
    assert_int_equal(cf_fp8_ulp_distance(0x80, 0x00), 0);   /* -0 and +0 */
    assert_int_equal(cf_fp8_ulp_distance(0x81, 0x01), 2);
}

static void rng_replays_from_its_seed(void **state)
{
    (void)state;
    cf_rng_t a, b;
    cf_rng_init(&a, 42);
    cf_rng_init(&b, 42);
    for (int i = 0; i < 100; i++) assert_true(cf_rng_u64(&a) == cf_rng_u64(&b));
    cf_rng_init(&a, 0);
    assert_true(cf_rng_u64(&a) != 0);
    for (int i = 0; i < 1000; i++) {
        int v = cf_rng_int(&a, -3, 5);
        assert_true(v >= -3 && v <= 5);
        assert_true(cf_rng_normal(&a) != 0.0);
    }
}

static void case_list_is_deterministic_with_unique_names(void **state)
{
    (void)state;
    cf_case_list_t x = {0}, y = {0};
    assert_int_equal(cf_cases_directed(&x, 7), 0);
    assert_int_equal(cf_cases_sweep(&x, 7, 50), 0);
    assert_int_equal(cf_cases_directed(&y, 7), 0);
    assert_int_equal(cf_cases_sweep(&y, 7, 60), 0);
    assert_true(x.count + (size_t)(cf_cases_sweep_size(60) - cf_cases_sweep_size(50)) == y.count);
    char (*names)[CF_NAME_MAX] = calloc(x.count, sizeof *names);
    int ops[CF_OP_COUNT_] = {0};
    for (size_t i = 0; i < x.count; i++) {
        char other[CF_NAME_MAX];
        cf_case_name(&x.items[i], names[i], CF_NAME_MAX);
        size_t k = 0; /* a longer sweep keeps the earlier cases of each series */
        while (k < y.count && strcmp(y.items[k].tag, x.items[i].tag) != 0) k++;
        assert_true(k < y.count);
        cf_case_name(&y.items[k], other, CF_NAME_MAX);
        assert_string_equal(names[i], other);
        assert_true(x.items[i].seed == y.items[k].seed);
        ops[x.items[i].op]++;
        char tag[32];
        snprintf(tag, sizeof tag, "%s ", x.items[i].tag);
        for (size_t j = 0; j < i; j++) assert_null(strstr(names[j], tag)); /* --filter 'tag ' is unique */
    }
    for (int op = 0; op < CF_OP_COUNT_; op++) assert_true(ops[op] > 0);
    free(names);
    cf_case_list_free(&x);
    cf_case_list_free(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compare_passes_within_tolerance),
        cmocka_unit_test(compare_fails_on_nan),
        cmocka_unit_test(compare_fails_on_one_wrong_row_in_a_large_batch),
        cmocka_unit_test(compare_forgives_rows_below_the_output_range),
        cmocka_unit_test(compare_requires_exact_zero_in_empty_rows),
        cmocka_unit_test(lse_minus_infinity_must_match_exactly),
        cmocka_unit_test(corruption_is_always_caught),
        cmocka_unit_test(failure_outranks_unsupported),
        cmocka_unit_test(tolerance_is_the_least_precise_dtype),
        cmocka_unit_test(dtype_round_trips_and_poison),
        cmocka_unit_test(rng_replays_from_its_seed),
        cmocka_unit_test(case_list_is_deterministic_with_unique_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
