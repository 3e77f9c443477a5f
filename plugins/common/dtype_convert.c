/* dtype_convert.c — the encoders (rounding lives here) and the row loops. Written from the formats'
 * definitions: a value is (-1)^s * 1.f * 2^(e - bias), or 0.f * 2^(1 - bias) when e == 0. */
#include "dtype_convert.h"

#include <math.h>

/* A small binary floating-point format, as far as encoding needs it. */
typedef struct dc_format {
    int      man_bits;  /* stored fraction bits                                           */
    int      bias;      /* exponent bias                                                  */
    unsigned sign_bit;  /* the sign's bit in the encoding                                 */
    unsigned max_code;  /* encoding (sign clear) of the largest finite value              */
    unsigned inf_code;  /* encoding of +inf, or 0 when the format saturates instead        */
    unsigned nan_code;  /* encoding (sign clear) of the NaN an encoder writes              */
    double   max_value; /* largest finite value                                           */
} dc_format_t;

static const dc_format_t fmt_f16  = {10, 15, 0x8000u, 0x7bffu, 0x7c00u, 0x7e00u, 65504.0};
static const dc_format_t fmt_e4m3 = {3, 7, 0x80u, 0x7eu, 0u, 0x7fu, 448.0};
static const dc_format_t fmt_e5m2 = {2, 15, 0x80u, 0x7bu, 0u, 0x7eu, 57344.0};

/* Encodes x with one round-to-nearest-even from the exact binary64 value. */
static unsigned encode(double x, const dc_format_t *f)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    const unsigned sign = (bits >> 63) ? f->sign_bit : 0u;
    const int biased = (int)((bits >> 52) & 0x7ff);
    const uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);

    if (biased == 0x7ff && frac) return sign | f->nan_code;
    const double a = fabs(x);
    if (a > f->max_value) {
        if (f->inf_code == 0u) return sign | f->max_code; /* fp8 cache: saturate, inf included */
        /* IEEE overflow: everything from max + half an ulp (the tie rounds to the even "2^emax") is inf */
        const double half_ulp = ldexp(1.0, (f->inf_code >> f->man_bits) - 1 - f->bias - f->man_bits - 1);
        return sign | (a >= f->max_value + half_ulp ? f->inf_code : f->max_code);
    }
    if (biased == 0) return sign; /* a binary64 subnormal is far below every target's smallest value */

    /* a = M * 2^(biased - 1075) with the implicit one in M. The target's quantum (spacing of its values)
     * is 2^(e - man_bits) in binade e, and 2^(1 - bias - man_bits) throughout the subnormal range. */
    const uint64_t mant = frac | (UINT64_C(1) << 52);
    int e = biased - 1023;
    if (e < 1 - f->bias) e = 1 - f->bias;
    const int shift = 1075 + e - f->man_bits - biased; /* n = mant / 2^shift, >= 52 - man_bits */
    if (shift > 54) return sign;                       /* below half the smallest subnormal */
    uint64_t n = mant >> shift;
    const uint64_t rem = mant & ((UINT64_C(1) << shift) - 1);
    const uint64_t half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (n & 1u))) n++;

    /* n counts quanta of binade e. Normal: code = (e + bias) << man_bits | (n - 2^man_bits), written as a
     * sum so that a carry out of the fraction bumps the exponent, as it must. Subnormal range: code = n
     * (n == 2^man_bits is exactly the smallest normal's code). */
    unsigned code;
    if (n >= (UINT64_C(1) << f->man_bits))
        code = ((unsigned)(e + f->bias - 1) << f->man_bits) + (unsigned)n;
    else
        code = (unsigned)n;
    if (code > f->max_code) code = f->inf_code ? f->inf_code : f->max_code; /* rounding up past max */
    return sign | code;
}

uint16_t dc_f32_to_f16(float f) { return (uint16_t)encode((double)f, &fmt_f16); }
uint8_t dc_f64_to_e4m3(double x) { return (uint8_t)encode(x, &fmt_e4m3); }
uint8_t dc_f64_to_e5m2(double x) { return (uint8_t)encode(x, &fmt_e5m2); }

dc_kind_t dc_kind_of(attnrt_dtype_t dt)
{
    if (dt.lanes != 1) return DC_INVALID;
    switch (dt.code) {
    case ATTNRT_DTYPE_CODE_FLOAT:
        return dt.bits == 32 ? DC_F32 : dt.bits == 16 ? DC_F16 : DC_INVALID;
    case ATTNRT_DTYPE_CODE_BFLOAT:
        return dt.bits == 16 ? DC_BF16 : DC_INVALID;
    case ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN:
        return dt.bits == 8 ? DC_E4M3 : DC_INVALID;
    case ATTNRT_DTYPE_CODE_FLOAT8_E5M2:
        return dt.bits == 8 ? DC_E5M2 : DC_INVALID;
    default:
        return DC_INVALID;
    }
}

size_t dc_kind_size(dc_kind_t kind)
{
    switch (kind) {
    case DC_F32: return 4;
    case DC_F16:
    case DC_BF16: return 2;
    case DC_E4M3:
    case DC_E5M2: return 1;
    default: return 0;
    }
}

const char *dc_kind_name(dc_kind_t kind)
{
    switch (kind) {
    case DC_F32: return "f32";
    case DC_F16: return "f16";
    case DC_BF16: return "bf16";
    case DC_E4M3: return "fp8_e4m3";
    case DC_E5M2: return "fp8_e5m2";
    default: return "invalid";
    }
}

/* One tight loop per kind, the switch outside, so each loop auto-vectorises on its own. */
void dc_row_to_f32(float *restrict dst, const void *restrict src, dc_kind_t kind, size_t n, float scale)
{
    switch (kind) {
    case DC_F32:
        memcpy(dst, src, n * sizeof *dst);
        break;
    case DC_F16: {
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = dc_f16_to_f32(s[i]);
        break;
    }
    case DC_BF16: {
        const uint16_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = dc_bf16_to_f32(s[i]);
        break;
    }
    case DC_E4M3: {
        const uint8_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = dc_e4m3_to_f32(s[i]) * scale;
        break;
    }
    case DC_E5M2: {
        const uint8_t *s = src;
        for (size_t i = 0; i < n; i++) dst[i] = dc_e5m2_to_f32(s[i]) * scale;
        break;
    }
    default:
        break;
    }
}

void dc_row_from_f32(void *restrict dst, const float *restrict src, dc_kind_t kind, size_t n, float scale)
{
    switch (kind) {
    case DC_F32:
        memcpy(dst, src, n * sizeof *src);
        break;
    case DC_F16: {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = dc_f32_to_f16(src[i]);
        break;
    }
    case DC_BF16: {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = dc_f32_to_bf16(src[i]);
        break;
    }
    case DC_E4M3: {
        uint8_t *d = dst;
        /* the quotient in double is exact enough that the fp8 rounding is the only one that matters */
        for (size_t i = 0; i < n; i++) d[i] = dc_f64_to_e4m3((double)src[i] / (double)scale);
        break;
    }
    case DC_E5M2: {
        uint8_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = dc_f64_to_e5m2((double)src[i] / (double)scale);
        break;
    }
    default:
        break;
    }
}
