/* cpu_gemm.h — C += A B on small f32 tiles (the matrix products of the MLA and lightning kernels), in
 * plain C shaped for the compiler's vectoriser: a 4 x 8 block of C is held in 32 accumulators (8
 * vector registers of SSE2, 4 of AVX) across the whole k loop, so each loaded row of B feeds four
 * multiply-adds. The unroll pragmas make GCC keep those accumulators in registers at -O2; compilers
 * that ignore them still compute the same sums. No ISA flags, no intrinsics. */
#ifndef ATTNRT_CPU_GEMM_H
#define ATTNRT_CPU_GEMM_H

#include <stdint.h>

#define CPU_GEMM_MR 4
#define CPU_GEMM_NR 8

/* C[m x n] += A[m x k] B[k x n]; all row-major with leading dimensions (in elements) ldc, lda, ldb.
 * Each element of C is accumulated over k in order, in f32. C must not overlap A or B. */
static inline void cpu_gemm_acc(float *restrict C, int64_t ldc, const float *restrict A, int64_t lda,
                                const float *restrict B, int64_t ldb, int64_t m, int64_t n, int64_t k)
{
    int64_t i = 0;
    for (; i + CPU_GEMM_MR <= m; i += CPU_GEMM_MR) {
        int64_t j = 0;
        for (; j + CPU_GEMM_NR <= n; j += CPU_GEMM_NR) {
            float acc[CPU_GEMM_MR][CPU_GEMM_NR];
            for (int r = 0; r < CPU_GEMM_MR; r++)
                for (int l = 0; l < CPU_GEMM_NR; l++) acc[r][l] = C[(i + r) * ldc + j + l];
            for (int64_t p = 0; p < k; p++) {
                const float *b = B + p * ldb + j;
#pragma GCC unroll 4
                for (int r = 0; r < CPU_GEMM_MR; r++) {
                    const float a = A[(i + r) * lda + p];
#pragma GCC unroll 8
                    for (int l = 0; l < CPU_GEMM_NR; l++) acc[r][l] += a * b[l];
                }
            }
            for (int r = 0; r < CPU_GEMM_MR; r++)
                for (int l = 0; l < CPU_GEMM_NR; l++) C[(i + r) * ldc + j + l] = acc[r][l];
        }
        for (; j < n; j++) /* the last columns, fewer than 8 */
            for (int r = 0; r < CPU_GEMM_MR; r++) {
                float s = C[(i + r) * ldc + j];
                for (int64_t p = 0; p < k; p++) s += A[(i + r) * lda + p] * B[p * ldb + j];
                C[(i + r) * ldc + j] = s;
            }
    }
    for (; i < m; i++) { /* the last rows, fewer than 4: row times B, 8 columns at a time */
        int64_t j = 0;
        for (; j + CPU_GEMM_NR <= n; j += CPU_GEMM_NR) {
            float acc[CPU_GEMM_NR];
            for (int l = 0; l < CPU_GEMM_NR; l++) acc[l] = C[i * ldc + j + l];
            for (int64_t p = 0; p < k; p++) {
                const float a = A[i * lda + p];
                const float *b = B + p * ldb + j;
#pragma GCC unroll 8
                for (int l = 0; l < CPU_GEMM_NR; l++) acc[l] += a * b[l];
            }
            for (int l = 0; l < CPU_GEMM_NR; l++) C[i * ldc + j + l] = acc[l];
        }
        for (; j < n; j++) {
            float s = C[i * ldc + j];
            for (int64_t p = 0; p < k; p++) s += A[i * lda + p] * B[p * ldb + j];
            C[i * ldc + j] = s;
        }
    }
}

#endif
