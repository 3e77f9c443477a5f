/* cpu_simd_avx512bf16.c — the AVX-512 kernels plus AVX512_BF16 dot products for bf16 caches: scores of
 * bf16 keys by vdpbf16ps (32 products per instruction, no widening of the keys) against the query
 * rounded to bf16 once per item. Within the bf16 tolerance of docs/semantics.md (1e-2): the query's
 * rounding adds about 2^-9 relative to each product. Compiled with the AVX-512 flags and -mavx512bf16;
 * only ever called after cpu_simd_select saw avx512bf16 as well. */
#include "cpu_simd_avx512.h"

#define SIMD_BF16_DOT 1
#define SIMD_TABLE cpu_simd_avx512bf16
#define SIMD_ISA CPU_ISA_AVX512BF16
#define SIMD_NAME "avx512bf16"

#include "cpu_simd_kernels.h"
