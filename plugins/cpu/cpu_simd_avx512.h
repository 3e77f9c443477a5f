/* cpu_simd_avx512.h — the vector vocabulary of cpu_simd_kernels.h over 16-lane AVX-512 vectors, shared
 * by cpu_simd_avx512.c and cpu_simd_avx512bf16.c (both compiled with the AVX-512 flags). */
#ifndef ATTNRT_CPU_SIMD_AVX512_H
#define ATTNRT_CPU_SIMD_AVX512_H

#include <immintrin.h>
#include <stdint.h>

#include "cpu_simd.h"

#define VL 16
typedef __m512 VF;

#define vf_zero() _mm512_setzero_ps()
#define vf_set1(x) _mm512_set1_ps(x)
#define vf_loadu(p) _mm512_loadu_ps(p)
#define vf_storeu(p, v) _mm512_storeu_ps((p), (v))
#define vf_add(a, b) _mm512_add_ps((a), (b))
#define vf_sub(a, b) _mm512_sub_ps((a), (b))
#define vf_mul(a, b) _mm512_mul_ps((a), (b))
#define vf_max(a, b) _mm512_max_ps((a), (b))
#define vf_fma(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define vf_hsum(v) _mm512_reduce_add_ps(v)
#define vf_hmax(v) _mm512_reduce_max_ps(v)

/* Four horizontal sums at once: fold to 256 bits, then a transposing hadd tree. */
#define VF_HAS_HSUM4 1
static inline void vf_hsum4(VF a, VF b, VF c, VF d, float out[4])
{
    const __m256 a2 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    const __m256 b2 = _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1));
    const __m256 c2 = _mm256_add_ps(_mm512_castps512_ps256(c), _mm512_extractf32x8_ps(c, 1));
    const __m256 d2 = _mm256_add_ps(_mm512_castps512_ps256(d), _mm512_extractf32x8_ps(d, 1));
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a2, b2), _mm256_hadd_ps(c2, d2));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}

/* Sixteen horizontal sums at once, acc[b][r] for 4 keys b x 4 rows r, into the scores of 4 rows:
 * s[r * ld + b] = sum(acc[b][r]) * ks[b]. A shuffle tree: 512 -> 256 -> 128 bits, then a 4x4 transpose
 * add, 45 operations where four vf_hsum4 take about 80. */
#define VF_HAS_SCORES16 1
static inline void vf_scores16(VF acc[4][4], const float *ks, float *s, int ld)
{
    VF z[8], w[4];
    for (int m = 0; m < 8; m++) { /* pairs (A_2m, A_2m+1), A_{4b+r} = acc[b][r] */
        const VF x = acc[m >> 1][(m & 1) * 2], y = acc[m >> 1][(m & 1) * 2 + 1];
        z[m] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x44), _mm512_shuffle_f32x4(x, y, 0xEE));
    }
    for (int n = 0; n < 4; n++) /* lane i of w[n]: the 4 partial sums of A_{4n+i} */
        w[n] = _mm512_add_ps(_mm512_shuffle_f32x4(z[2 * n], z[2 * n + 1], 0x88),
                             _mm512_shuffle_f32x4(z[2 * n], z[2 * n + 1], 0xDD));
    const VF u01 = _mm512_add_ps(_mm512_unpacklo_ps(w[0], w[1]), _mm512_unpackhi_ps(w[0], w[1]));
    const VF u23 = _mm512_add_ps(_mm512_unpacklo_ps(w[2], w[3]), _mm512_unpackhi_ps(w[2], w[3]));
    /* lane r, element b: A_{4b + r} = acc[b][r] */
    VF res = _mm512_add_ps(_mm512_shuffle_ps(u01, u23, 0x44), _mm512_shuffle_ps(u01, u23, 0xEE));
    res = _mm512_mul_ps(res, _mm512_broadcast_f32x4(_mm_loadu_ps(ks)));
    _mm_storeu_ps(s, _mm512_castps512_ps128(res));
    _mm_storeu_ps(s + ld, _mm512_extractf32x4_ps(res, 1));
    _mm_storeu_ps(s + 2 * ld, _mm512_extractf32x4_ps(res, 2));
    _mm_storeu_ps(s + 3 * ld, _mm512_extractf32x4_ps(res, 3));
}

static inline VF vf_load_f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)p)); }

static inline VF vf_load_bf16(const uint16_t *p)
{
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

/* e4m3fn as f16: sign | em << 7 is the f16 of value / 256 for every finite e4m3 (subnormals too);
 * S.1111.111 is NaN. */
static inline VF vf_load_e4m3(const uint8_t *p)
{
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
    const __m256i em = _mm256_and_si256(x, _mm256_set1_epi16(0x7f));
    const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x80)), 8);
    __m256i h = _mm256_or_si256(sign, _mm256_slli_epi16(em, 7));
    const __m256i nan = _mm256_cmpeq_epi16(em, _mm256_set1_epi16(0x7f));
    h = _mm256_blendv_epi8(h, _mm256_or_si256(sign, _mm256_set1_epi16(0x7e00)), nan);
    return _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
}

/* e5m2 is the high byte of the f16 with the same value. */
static inline VF vf_load_e5m2(const uint8_t *p)
{
    const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)p));
    return _mm512_cvtph_ps(_mm256_slli_epi16(x, 8));
}

/* e^x for x <= 88 (the kernels pass x <= 0): x = n ln2 + r (Cody-Waite, n rounded by the 1.5 * 2^23
 * trick), e^r by Cephes' expf polynomial in Horner form (7 FMAs, max relative error 7.5e-8 over
 * [-87.3, 0]), 2^n built in the exponent field. Below -87.3 (and -inf): 0. */
static inline VF vf_exp(VF x)
{
    const VF magic = _mm512_set1_ps(12582912.0f);
    const __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_GE_OQ); /* -inf, NaN: 0 */
    const VF t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic);
    const VF n = _mm512_sub_ps(t, magic);
    VF r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    VF y = _mm512_set1_ps(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(magic));
    const VF pow2n = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23));
    return _mm512_maskz_mul_ps(keep, y, pow2n);
}

#define WIDE_KEYB 8
#define WIDE_ROWV 3 /* 24 score accumulators, 11 loads a 24 FMAs: 2 x 8 (10 a 16) ran 17-40 % slower on Ice Lake */
#define WIDE_PCV 4
#define WIDE_PVR 6  /* 24 P.V accumulators, 4 value loads + 6 broadcasts a 24 FMAs: 4 rows 13 % slower there */
#define NARROW_DB 4
#define NARROW_KB 4

#endif
