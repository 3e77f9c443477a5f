/* conform_dtype.c - dtype facts and conversions for the checker, on top of reference.h. */
#include "conform_dtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

attnrt_dtype_t cf_dtype_attnrt(cf_dtype_t dt)
{
    switch (dt) {
    case CF_F32:  return ATTNRT_F32;
    case CF_F16:  return ATTNRT_F16;
    case CF_BF16: return ATTNRT_BF16;
    case CF_E4M3: return ATTNRT_FP8_E4M3;
    default:      return ATTNRT_FP8_E5M2;
    }
}

size_t cf_dtype_size(cf_dtype_t dt) { return dt == CF_F32 ? 4 : dt <= CF_BF16 ? 2 : 1; }

const char *cf_dtype_name(cf_dtype_t dt)
{
    static const char *const names[CF_DTYPE_COUNT_] = {"f32", "f16", "bf16", "e4m3", "e5m2"};
    return (unsigned)dt < CF_DTYPE_COUNT_ ? names[dt] : "?";
}

int cf_dtype_is_fp8(cf_dtype_t dt) { return dt == CF_E4M3 || dt == CF_E5M2; }

double cf_dtype_tolerance(cf_dtype_t dt)
{
    switch (dt) {
    case CF_F32: return 1e-5;
    case CF_F16: return 2e-3;
    default:     return 1e-2; /* bf16 and fp8 (the latter against the same dequantised values) */
    }
}

double cf_tolerance_of(const cf_dtype_t *dts, int n)
{
    double tol = 0.0;
    for (int i = 0; i < n; i++)
        if (cf_dtype_tolerance(dts[i]) > tol) tol = cf_dtype_tolerance(dts[i]);
    return tol;
}

double cf_decode(cf_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case CF_F32: {
        float f;
        memcpy(&f, (const char *)buf + 4 * i, 4);
        return f;
    }
    case CF_F16:
    case CF_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)buf + 2 * i, 2);
        return dt == CF_F16 ? ref_f16_to_double(h) : ref_bf16_to_double(h);
    }
    case CF_E4M3: return ref_e4m3_to_double(((const uint8_t *)buf)[i]);
    default:      return ref_e5m2_to_double(((const uint8_t *)buf)[i]);
    }
}

void cf_encode(cf_dtype_t dt, double x, void *buf, size_t i)
{
    switch (dt) {
    case CF_F32: {
        float f = (float)x;
        memcpy((char *)buf + 4 * i, &f, 4);
        break;
    }
    case CF_F16:
    case CF_BF16: {
        uint16_t h = dt == CF_F16 ? ref_double_to_f16(x) : ref_double_to_bf16(x);
        memcpy((char *)buf + 2 * i, &h, 2);
        break;
    }
    case CF_E4M3: ((uint8_t *)buf)[i] = ref_double_to_e4m3(x); break;
    default:      ((uint8_t *)buf)[i] = ref_double_to_e5m2(x); break;
    }
}

double cf_round(cf_dtype_t dt, double x)
{
    unsigned char tmp[4];
    cf_encode(dt, x, tmp, 0);
    return cf_decode(dt, tmp, 0);
}

void cf_poison(cf_dtype_t dt, void *buf, size_t i) { cf_encode(dt, NAN, buf, i); }

uint32_t cf_bits(cf_dtype_t dt, const void *buf, size_t i)
{
    switch (cf_dtype_size(dt)) {
    case 4: {
        uint32_t v;
        memcpy(&v, (const char *)buf + 4 * i, 4);
        return v;
    }
    case 2: {
        uint16_t v;
        memcpy(&v, (const char *)buf + 2 * i, 2);
        return v;
    }
    default: return ((const uint8_t *)buf)[i];
    }
}

int cf_fp8_ulp_distance(uint8_t a, uint8_t b)
{
    int oa = (a & 0x80) ? -(int)(a & 0x7f) : (int)(a & 0x7f);
    int ob = (b & 0x80) ? -(int)(b & 0x7f) : (int)(b & 0x7f);
    return abs(oa - ob);
}

double cf_fp8_max(cf_dtype_t dt) { return dt == CF_E4M3 ? 448.0 : dt == CF_E5M2 ? 57344.0 : 0.0; }

double cf_dtype_min_normal(cf_dtype_t dt)
{
    switch (dt) {
    case CF_F16:  return 0x1p-14;
    case CF_E4M3: return 0x1p-6;
    case CF_E5M2: return 0x1p-14;
    default:      return 0x1p-126; /* f32, bf16 */
    }
}
