/* cpu_simd_avx512bf16.c — the AVX-512 kernels plus AVX512_BF16 dot products: narrow scores of bf16 keys
 * against a bf16 query by vdpbf16ps (32 products per instruction, no widening of the keys), the
 * softmax scale applied to the f32 sums, so the results are as exact as the f32 kernels'. Compiled with
 * the AVX-512 flags and -mavx512bf16; only ever called after cpu_simd_select saw avx512bf16 as well. */
#include "cpu_simd_avx512.h"

#define SIMD_BF16_DOT 1
#define SIMD_TABLE cpu_simd_avx512bf16
#define SIMD_ISA CPU_ISA_AVX512BF16
#define SIMD_NAME "avx512bf16"

#include "cpu_simd_kernels.h"
