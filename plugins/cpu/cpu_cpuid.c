/* cpu_cpuid.c — which SIMD features this CPU has (cpuid) and the OS enables (xgetbv), and the choice of
 * kernel table: the best one, or the one ATTNRT_CPU_ISA forces. Read from cpuid rather than
 * __builtin_cpu_supports: older compilers do not know every name (clang 14 lacks avx512bf16), and a
 * feature only counts when the OS saves its registers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cpu_simd.h"
#include "plugin_error.h"

static const char *const feature_names[CPU_FEAT_COUNT_] = {
    "sse4.2", "avx", "fma", "f16c", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512bf16", "avx512fp16",
};

const char *cpu_feature_name(unsigned bit) { return bit < CPU_FEAT_COUNT_ ? feature_names[bit] : "?"; }

uint32_t cpu_cpuid_features(void)
{
    uint32_t f = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d, b7 = 0, c7 = 0, d7 = 0, a71 = 0, unused;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int os_avx = 0, os_avx512 = 0;
    if (c & (1u << 27)) { /* OSXSAVE: xgetbv is usable */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        (void)hi;
        os_avx = (lo & 0x6) == 0x6;                      /* XMM and YMM state  */
        os_avx512 = os_avx && (lo & 0xe0) == 0xe0;       /* opmask, ZMM0-15 upper, ZMM16-31 */
    }
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a, b7, c7, d7);
        if (a >= 1) __cpuid_count(7, 1, a71, unused, unused, unused);
    }
    (void)c7;
    if ((c >> 20) & 1) f |= CPU_FEAT_SSE42;
    if (os_avx && ((c >> 28) & 1)) f |= CPU_FEAT_AVX;
    if (os_avx && ((c >> 12) & 1)) f |= CPU_FEAT_FMA;
    if (os_avx && ((c >> 29) & 1)) f |= CPU_FEAT_F16C;
    if (os_avx && ((b7 >> 5) & 1)) f |= CPU_FEAT_AVX2;
    if (os_avx512 && ((b7 >> 16) & 1)) f |= CPU_FEAT_AVX512F;
    if (os_avx512 && ((b7 >> 30) & 1)) f |= CPU_FEAT_AVX512BW;
    if (os_avx512 && ((b7 >> 31) & 1)) f |= CPU_FEAT_AVX512VL;
    if (os_avx512 && ((b7 >> 17) & 1)) f |= CPU_FEAT_AVX512DQ;
    if (os_avx512 && ((a71 >> 5) & 1)) f |= CPU_FEAT_AVX512BF16;
    if (os_avx512 && ((d7 >> 23) & 1)) f |= CPU_FEAT_AVX512FP16;
#endif
    return f;
}

void cpu_feature_list(uint32_t mask, char *out, size_t cap)
{
    size_t used = 0;
    if (cap) out[0] = '\0';
    for (unsigned i = 0; i < CPU_FEAT_COUNT_; i++) {
        if (!(mask & (1u << i))) continue;
        int n = snprintf(out + used, used < cap ? cap - used : 0, "%s%s", used ? "," : "", feature_names[i]);
        if (n > 0) used += (size_t)n;
    }
    if (!used) snprintf(out, cap, "none");
}

uint32_t cpu_isa_required_features(cpu_isa_t isa)
{
    switch (isa) {
    case CPU_ISA_AVX512BF16:
        return cpu_isa_required_features(CPU_ISA_AVX512) | CPU_FEAT_AVX512BF16;
    case CPU_ISA_AVX512:
        return CPU_FEAT_AVX512F | CPU_FEAT_AVX512BW | CPU_FEAT_AVX512VL | CPU_FEAT_AVX512DQ | CPU_FEAT_FMA | CPU_FEAT_F16C;
    case CPU_ISA_AVX2:
        return CPU_FEAT_AVX | CPU_FEAT_AVX2 | CPU_FEAT_FMA | CPU_FEAT_F16C;
    default:
        return 0;
    }
}

const cpu_simd_t *cpu_simd_table(cpu_isa_t isa)
{
    switch (isa) {
#if defined(ATTNRT_CPU_HAVE_AVX512BF16)
    case CPU_ISA_AVX512BF16: return &cpu_simd_avx512bf16;
#endif
#if defined(ATTNRT_CPU_HAVE_AVX512)
    case CPU_ISA_AVX512: return &cpu_simd_avx512;
#endif
#if defined(ATTNRT_CPU_HAVE_AVX2)
    case CPU_ISA_AVX2: return &cpu_simd_avx2;
#endif
    case CPU_ISA_PORTABLE: return &cpu_simd_portable;
    default: return NULL;
    }
}

static const char *const isa_names[CPU_ISA_COUNT_] = {"portable", "avx2", "avx512", "avx512bf16"};

attnrt_status_t cpu_simd_select(const cpu_simd_t **simd, int *forced)
{
    const uint32_t have = cpu_cpuid_features();
    const char *env = secure_getenv("ATTNRT_CPU_ISA");
    if (forced) *forced = 0;
    if (env && *env) {
        int isa = -1;
        for (int i = 0; i < CPU_ISA_COUNT_; i++)
            if (!strcmp(env, isa_names[i])) isa = i;
        if (isa < 0)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                               "cpu:0: ATTNRT_CPU_ISA=%s is not one of avx512bf16, avx512, avx2, portable (or unset for the best)", env);
        const cpu_simd_t *t = cpu_simd_table((cpu_isa_t)isa);
        if (!t)
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu:0: ATTNRT_CPU_ISA=%s, but this build of the cpu plugin has no %s "
                               "kernels (not an x86 build, or the compiler lacks the flags)", env, env);
        const uint32_t missing = cpu_isa_required_features((cpu_isa_t)isa) & ~have;
        if (missing) {
            char list[160];
            cpu_feature_list(missing, list, sizeof list);
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu:0: ATTNRT_CPU_ISA=%s, but this CPU (or its OS) lacks %s; "
                               "unset ATTNRT_CPU_ISA to use the best the CPU has", env, list);
        }
        *simd = t;
        if (forced) *forced = 1;
        return ATTNRT_OK;
    }
    for (int i = CPU_ISA_COUNT_ - 1; i >= 0; i--) {
        const cpu_simd_t *t = cpu_simd_table((cpu_isa_t)i);
        if (t && (cpu_isa_required_features((cpu_isa_t)i) & ~have) == 0) {
            *simd = t;
            return ATTNRT_OK;
        }
    }
    *simd = &cpu_simd_portable;
    return ATTNRT_OK;
}
