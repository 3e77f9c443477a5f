/* ref_dtype.c - scalar storage formats, written from each format's definition (sign bit, exponent
 * field with a bias, mantissa field with an implicit leading one) using only <math.h> arithmetic on
 * doubles, never bit tricks on float: that way it independently checks the bit-trick converters the
 * plugins use. */
#include "reference.h"

#include <math.h>

typedef struct ref_format {
    int exp_bits;        /* width of the exponent field */
    int man_bits;        /* width of the mantissa field (fraction, implicit 1 not stored) */
    int bias;            /* exponent field e encodes 2^(e - bias) for normals */
    int ieee_specials;   /* 1: all-ones exponent is inf/NaN (f16, bf16, e5m2); 0: only S.1111.111 is NaN */
    int saturate;        /* 1: out-of-range values clamp to +-max (fp8 cache stores), 0: overflow to inf */
} ref_format;

static const ref_format fmt_f16  = {5, 10, 15, 1, 0};
static const ref_format fmt_bf16 = {8, 7, 127, 1, 0};
static const ref_format fmt_e4m3 = {4, 3, 7, 0, 1};
static const ref_format fmt_e5m2 = {5, 2, 15, 1, 1};

static double max_finite(const ref_format *f)
{
    int all_ones = (1 << f->exp_bits) - 1;
    if (f->ieee_specials) /* top exponent is reserved, full mantissa allowed below it */
        return ldexp(2.0 - ldexp(1.0, -f->man_bits), all_ones - 1 - f->bias);
    /* e4m3fn: top exponent is an ordinary binade except its all-ones mantissa, which is NaN */
    return ldexp(2.0 - ldexp(2.0, -f->man_bits), all_ones - f->bias);
}

static double decode(unsigned bits, const ref_format *f)
{
    unsigned all_ones = (1u << f->exp_bits) - 1u;
    unsigned man_all = (1u << f->man_bits) - 1u;
    unsigned sign = (bits >> (f->exp_bits + f->man_bits)) & 1u;
    unsigned e = (bits >> f->man_bits) & all_ones;
    unsigned m = bits & man_all;
    double v;

    if (f->ieee_specials && e == all_ones)
        v = m ? NAN : INFINITY;
    else if (!f->ieee_specials && e == all_ones && m == man_all)
        v = NAN;
    else if (e == 0) /* subnormal: no implicit one, exponent of the smallest normal binade */
        v = ldexp((double)m, 1 - f->bias - f->man_bits);
    else
        v = ldexp((double)(m + (1u << f->man_bits)), (int)e - f->bias - f->man_bits);
    return sign ? -v : v;
}

/* Nearest integer to q >= 0, ties to the even neighbour. */
static double round_half_even(double q)
{
    double fl = floor(q);
    double frac = q - fl; /* exact: q and fl are close doubles */
    if (frac > 0.5)
        return fl + 1.0;
    if (frac < 0.5)
        return fl;
    return fl + fmod(fl, 2.0);
}

static unsigned encode(double x, const ref_format *f)
{
    unsigned all_ones = (1u << f->exp_bits) - 1u;
    unsigned sign = signbit(x) ? 1u << (f->exp_bits + f->man_bits) : 0u;
    unsigned inf_bits = all_ones << f->man_bits;
    double maxf = max_finite(f);
    int emin = 1 - f->bias; /* exponent of the smallest normal binade; subnormals share its spacing */
    double a, n;
    int e2, exp_unbiased, quantum_exp;

    if (isnan(x)) { /* IEEE-like formats: the quiet NaN (top mantissa bit); e4m3fn: its only NaN */
        unsigned man = f->ieee_specials ? 1u << (f->man_bits - 1) : (1u << f->man_bits) - 1u;
        return sign | inf_bits | man;
    }
    a = fabs(x);
    if (f->saturate && a > maxf)
        a = maxf; /* clamping before rounding equals rounding then clamping: maxf is representable */
    if (isinf(a))
        return sign | inf_bits;
    if (a == 0.0)
        return sign;

    (void)frexp(a, &e2); /* a = frac * 2^e2, frac in [0.5, 1): a lies in binade [2^(e2-1), 2^e2) */
    exp_unbiased = e2 - 1;
    if (exp_unbiased < emin)
        exp_unbiased = emin;
    quantum_exp = exp_unbiased - f->man_bits; /* spacing of representable values in this binade */
    n = round_half_even(ldexp(a, -quantum_exp));
    if (n == 0.0)
        return sign;
    if (ldexp(n, quantum_exp) > maxf) /* only possible without saturation */
        return sign | inf_bits;
    if (n >= ldexp(1.0, f->man_bits + 1)) { /* rounding carried into the next binade */
        n /= 2.0;
        exp_unbiased += 1;
    }
    if (n < ldexp(1.0, f->man_bits)) /* no implicit one: subnormal (only when exp_unbiased == emin) */
        return sign | (unsigned)n;
    return sign | ((unsigned)(exp_unbiased + f->bias) << f->man_bits) | ((unsigned)n - (1u << f->man_bits));
}

double ref_f16_to_double(uint16_t h) { return decode(h, &fmt_f16); }
uint16_t ref_double_to_f16(double x) { return (uint16_t)encode(x, &fmt_f16); }
double ref_bf16_to_double(uint16_t b) { return decode(b, &fmt_bf16); }
uint16_t ref_double_to_bf16(double x) { return (uint16_t)encode(x, &fmt_bf16); }
double ref_e4m3_to_double(uint8_t v) { return decode(v, &fmt_e4m3); }
uint8_t ref_double_to_e4m3(double x) { return (uint8_t)encode(x, &fmt_e4m3); }
double ref_e5m2_to_double(uint8_t v) { return decode(v, &fmt_e5m2); }
uint8_t ref_double_to_e5m2(double x) { return (uint8_t)encode(x, &fmt_e5m2); }

uint8_t ref_quantize_fp8(double x, double scale, int is_e5m2)
{
    return is_e5m2 ? ref_double_to_e5m2(x / scale) : ref_double_to_e4m3(x / scale);
}

double ref_dequantize_fp8(uint8_t v, double scale, int is_e5m2)
{
    return (is_e5m2 ? ref_e5m2_to_double(v) : ref_e4m3_to_double(v)) * scale;
}
