/* cpu_vec.h — the f32 row loops of the kernels, written as blocks of 8 independent lanes so that
 * GCC's and Clang's SLP vectoriser turns them into SIMD at -O2 without any ISA flag (a plain reduction
 * loop would stay scalar: reassociating a float sum needs -ffast-math). */
#ifndef ATTNRT_CPU_VEC_H
#define ATTNRT_CPU_VEC_H

#include <stdint.h>

#define CPU_VEC_LANES 8

/* sum a[i] * b[i], as 8 partial sums then a pairwise tree. */
static inline float cpu_vec_dot(const float *restrict a, const float *restrict b, int64_t n)
{
    float acc[CPU_VEC_LANES] = {0};
    int64_t d = 0;
    for (; d + CPU_VEC_LANES <= n; d += CPU_VEC_LANES)
        for (int k = 0; k < CPU_VEC_LANES; k++) acc[k] += a[d + k] * b[d + k];
    float tail = 0.0f;
    for (; d < n; d++) tail += a[d] * b[d];
    return tail + (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])));
}

/* y = p * x */
static inline void cpu_vec_set_scaled(float *restrict y, const float *restrict x, float p, int64_t n)
{
    int64_t d = 0;
    for (; d + CPU_VEC_LANES <= n; d += CPU_VEC_LANES)
        for (int k = 0; k < CPU_VEC_LANES; k++) y[d + k] = p * x[d + k];
    for (; d < n; d++) y[d] = p * x[d];
}

/* y += p * x */
static inline void cpu_vec_axpy(float *restrict y, const float *restrict x, float p, int64_t n)
{
    int64_t d = 0;
    for (; d + CPU_VEC_LANES <= n; d += CPU_VEC_LANES)
        for (int k = 0; k < CPU_VEC_LANES; k++) y[d + k] += p * x[d + k];
    for (; d < n; d++) y[d] += p * x[d];
}

/* y = a * y + x */
static inline void cpu_vec_scale_add(float *restrict y, const float *restrict x, float a, int64_t n)
{
    int64_t d = 0;
    for (; d + CPU_VEC_LANES <= n; d += CPU_VEC_LANES)
        for (int k = 0; k < CPU_VEC_LANES; k++) y[d + k] = a * y[d + k] + x[d + k];
    for (; d < n; d++) y[d] = a * y[d] + x[d];
}

/* y = a * y */
static inline void cpu_vec_scale(float *restrict y, float a, int64_t n)
{
    int64_t d = 0;
    for (; d + CPU_VEC_LANES <= n; d += CPU_VEC_LANES)
        for (int k = 0; k < CPU_VEC_LANES; k++) y[d + k] *= a;
    for (; d < n; d++) y[d] *= a;
}

#endif
