/* The float64 reference against answers derivable by hand: the f16, bf16 and fp8 converters and the fp8 quantiser. */
#include "test_reference.h"

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

int ref_test_dtype(void)
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
    };
    return cmocka_run_group_tests_name("reference: scalar formats", tests, NULL, NULL);
}
