/* cpu_simd_avx512.c — the kernels of cpu_simd_kernels.h over 16-lane AVX-512 vectors (cpu_simd_avx512.h).
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c (plugins/cpu/meson.build) and
 * only ever called after cpu_simd_select saw those features in cpuid and xgetbv. */
#include "cpu_simd_avx512.h"

#define SIMD_TABLE cpu_simd_avx512
#define SIMD_ISA CPU_ISA_AVX512
#define SIMD_NAME "avx512"

#include "cpu_simd_kernels.h"
