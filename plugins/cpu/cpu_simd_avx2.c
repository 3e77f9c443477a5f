/* cpu_simd_avx2.c — the kernels of cpu_simd_kernels.h over 8-lane AVX2 vectors with FMA and F16C.
 * Compiled with -mavx2 -mfma -mf16c (plugins/cpu/meson.build) and only ever called after
 * cpu_simd_select saw those features in cpuid and xgetbv. */
#include <immintrin.h>
#include <stdint.h>

#include "cpu_simd.h"

#define VL 8
typedef __m256 VF;

#define vf_zero() _mm256_setzero_ps()
#define vf_set1(x) _mm256_set1_ps(x)
#define vf_loadu(p) _mm256_loadu_ps(p)
#define vf_storeu(p, v) _mm256_storeu_ps((p), (v))
#define vf_add(a, b) _mm256_add_ps((a), (b))
#define vf_sub(a, b) _mm256_sub_ps((a), (b))
#define vf_mul(a, b) _mm256_mul_ps((a), (b))
#define vf_max(a, b) _mm256_max_ps((a), (b))
#define vf_fma(a, b, c) _mm256_fmadd_ps((a), (b), (c))

static inline float vf_hsum(VF v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

static inline float vf_hmax(VF v)
{
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* Four horizontal sums at once: a transposing hadd tree. */
#define VF_HAS_HSUM4 1
static inline void vf_hsum4(VF a, VF b, VF c, VF d, float out[4])
{
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}

static inline VF vf_load_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p)); }

static inline VF vf_load_bf16(const uint16_t *p)
{
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

/* e4m3fn as f16 (see cpu_simd_avx512.c): sign | em << 7 is the f16 of value / 256; S.1111.111 is NaN. */
static inline VF vf_load_e4m3(const uint8_t *p)
{
    const __m128i x = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)p));
    const __m128i em = _mm_and_si128(x, _mm_set1_epi16(0x7f));
    const __m128i sign = _mm_slli_epi16(_mm_and_si128(x, _mm_set1_epi16(0x80)), 8);
    __m128i h = _mm_or_si128(sign, _mm_slli_epi16(em, 7));
    const __m128i nan = _mm_cmpeq_epi16(em, _mm_set1_epi16(0x7f));
    h = _mm_blendv_epi8(h, _mm_or_si128(sign, _mm_set1_epi16(0x7e00)), nan);
    return _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
}

static inline VF vf_load_e5m2(const uint8_t *p)
{
    const __m128i x = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)p));
    return _mm256_cvtph_ps(_mm_slli_epi16(x, 8));
}

/* e^x for x <= 88 as in cpu_simd_avx512.c. */
static inline VF vf_exp(VF x)
{
    const VF magic = _mm256_set1_ps(12582912.0f);
    const VF keep = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_GE_OQ); /* -inf, NaN: 0 */
    const VF t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
    const VF n = _mm256_sub_ps(t, magic);
    VF r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    VF y = _mm256_set1_ps(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.0f));
    y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.0f));
    const __m256i e = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(magic));
    const VF pow2n = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
    return _mm256_and_ps(_mm256_mul_ps(y, pow2n), keep);
}

#define SIMD_TABLE cpu_simd_avx2
#define SIMD_ISA CPU_ISA_AVX2
#define SIMD_NAME "avx2"
#define WIDE_KEYB 4
#define WIDE_PCV 2
#define NARROW_DB 2
#define NARROW_KB 2

#include "cpu_simd_kernels.h"
