/* cpu_simd_portable.c — the kernels of cpu_simd_kernels.h over 4-lane (16-byte) GCC/Clang vector
 * extensions, with no ISA flag: on x86-64 they compile to SSE2, on AArch64 to NEON, elsewhere to
 * whatever the target has. The fallback when the CPU has neither AVX2+FMA+F16C nor AVX-512, and ATTNRT_CPU_ISA=portable. */
#include <stdint.h>
#include <string.h>

#include "cpu_simd.h"

#define VL 4
typedef float VF __attribute__((vector_size(16)));
typedef int32_t VI __attribute__((vector_size(16)));

static inline VF vf_zero(void) { return (VF){0}; }
static inline VF vf_set1(float x) { return (VF){x, x, x, x}; }
static inline VF vf_loadu(const float *p)
{
    VF v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void vf_storeu(float *p, VF v) { memcpy(p, &v, sizeof v); }
static inline VF vf_add(VF a, VF b) { return a + b; }
static inline VF vf_sub(VF a, VF b) { return a - b; }
static inline VF vf_mul(VF a, VF b) { return a * b; }
static inline VF vf_fma(VF a, VF b, VF c) { return a * b + c; }
static inline VF vf_select(VI mask, VF a, VF b) { return (VF)((mask & (VI)a) | (~mask & (VI)b)); }
static inline VF vf_max(VF a, VF b) { return vf_select(a > b, a, b); }

static inline float vf_hsum(VF v)
{
    return (v[0] + v[2]) + (v[1] + v[3]);
}

static inline float vf_hmax(VF v)
{
    float m = v[0];
    for (int i = 1; i < VL; i++) m = v[i] > m ? v[i] : m;
    return m;
}

static inline VF vf_load_f16(const uint16_t *p)
{
    VF v;
    for (int i = 0; i < VL; i++) v[i] = dc_f16_to_f32(p[i]);
    return v;
}

static inline VF vf_load_bf16(const uint16_t *p)
{
    VI w = {0}; /* every lane is set below; the initialiser only quiets -Wmaybe-uninitialized */
    for (int i = 0; i < VL; i++) w[i] = (int32_t)((uint32_t)p[i] << 16);
    return (VF)w;
}

static inline VF vf_load_e4m3(const uint8_t *p)
{
    VF v;
    for (int i = 0; i < VL; i++) v[i] = dc_e4m3_to_f32(p[i]);
    return v;
}

static inline VF vf_load_e5m2(const uint8_t *p)
{
    VF v;
    for (int i = 0; i < VL; i++) v[i] = dc_e5m2_to_f32(p[i]);
    return v;
}

/* e^x for x <= 88 as in cpu_simd_avx512.c, without FMA (the Cody-Waite products n * C1 are exact). */
static inline VF vf_exp(VF x)
{
    const VF magic = vf_set1(12582912.0f);
    const VI keep = x >= vf_set1(-87.33654f); /* -inf and NaN give 0 */
    const VF t = x * 1.44269504088896341f + magic;
    const VF n = t - magic;
    VF r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    VF y = vf_set1(1.9875691500e-4f);
    y = y * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * r + 1.0f;
    y = y * r + 1.0f;
    const VI e = ((VI)t - (VI)magic + 127) << 23;
    return (VF)(keep & (VI)(y * (VF)e));
}

#define SIMD_TABLE cpu_simd_portable
#define SIMD_ISA CPU_ISA_PORTABLE
#define SIMD_NAME "portable"
#define WIDE_KEYB 4
#define WIDE_PCV 2
#define NARROW_DB 2
#define NARROW_KB 2

#include "cpu_simd_kernels.h"
