/* dot_rate.c — the issue rate of one thread's 16-lane fp32 FMA (vfmadd231ps, 16 MACs) against the bf16
 * pair dot product (vdpbf16ps, 32 MACs) that the cpu plugin's bf16 decode uses: 12 independent
 * register-resident chains of each, so the rate, not the latency, is what is timed. The numbers behind
 * the decode roofline in docs/perf/cpu.md.
 *
 *   gcc -O2 -o /tmp/dot_rate bench/cpu/dot_rate.c && /tmp/dot_rate      (needs AVX512_BF16) */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Twelve named accumulators (an array would be spilled through memory between the steps). */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define STEPS 1200000000L

__attribute__((target("avx512f,avx512bf16"))) int main(void)
{
#define DECLARE(i) __m512 a##i = _mm512_setzero_ps();
    CHAINS(DECLARE)
    __m512 x = _mm512_set1_ps(1e-9f), y = _mm512_set1_ps(1.0f);
    __m512bh bx = (__m512bh)_mm512_set1_epi16(0x3000), by = (__m512bh)_mm512_set1_epi16(0x3f80);
    __asm__ volatile("" : "+v"(x), "+v"(y), "+v"(bx), "+v"(by)); /* not constants to the compiler */
    const double t0 = now_s();
    for (long n = 0; n < STEPS / 12; n++) {
#define FMA(i) a##i = _mm512_fmadd_ps(x, y, a##i);
        CHAINS(FMA)
    }
    const double t1 = now_s();
    for (long n = 0; n < STEPS / 12; n++) {
#define DOT(i) a##i = _mm512_dpbf16_ps(a##i, bx, by);
        CHAINS(DOT)
    }
    const double t2 = now_s();
    float sum = 0.0f;
#define SUM(i) sum += _mm512_reduce_add_ps(a##i);
    CHAINS(SUM)
    const double fma_ns = (t1 - t0) / (double)STEPS * 1e9, dot_ns = (t2 - t1) / (double)STEPS * 1e9;
    printf("vfmadd231ps: %.3f ns an instruction (%.1f GFLOP/s); vdpbf16ps: %.3f ns (%.1f GFLOP/s); checksum %g\n",
           fma_ns, 32.0 / fma_ns, dot_ns, 64.0 / dot_ns, (double)sum);
    return 0;
}
