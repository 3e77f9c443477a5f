/* cpu:0 — the machine's model, cores (affinity mask), memory (sysinfo) and SIMD features (cpuid). */
#include "cpu_device.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "plugin_error.h"

uint32_t cpu_usable_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (uint32_t)n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1;
}

/* First "key : value" line of /proc/cpuinfo whose key is `key`, or "" when there is none. */
static void cpuinfo_field(const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        snprintf(out, cap, "%s", colon);
        out[strcspn(out, "\n")] = '\0';
        break;
    }
    fclose(f);
}

void cpu_fill_properties(attnrt_device_properties_t *props)
{
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    snprintf(p.name, sizeof p.name, "cpu:0");
    cpuinfo_field("vendor_id", p.vendor, sizeof p.vendor);
    cpuinfo_field("model name", p.model, sizeof p.model);
    if (!p.vendor[0]) snprintf(p.vendor, sizeof p.vendor, "unknown");
    if (!p.model[0]) snprintf(p.model, sizeof p.model, "unknown CPU");
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(p.arch, sizeof p.arch, "%.63s", u.machine);
        snprintf(p.driver, sizeof p.driver, "Linux %.48s", u.release);
    }
    p.device_type = ATTNRT_DEVICE_TYPE_CPU;
    p.compute_units = cpu_usable_cores();
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
        p.memory_total = (uint64_t)si.totalram * si.mem_unit;
        p.memory_free = ((uint64_t)si.freeram + si.bufferram) * si.mem_unit;
    }
    p.attribute_count = cpu_attribute_count();
    /* Write only what the caller's struct_size covers. */
    size_t n = props->struct_size < sizeof p ? props->struct_size : sizeof p;
    size_t caller_size = props->struct_size;
    memcpy(props, &p, n);
    props->struct_size = caller_size;
}

#if defined(__x86_64__) || defined(__i386__)
/* From cpuid and xgetbv rather than __builtin_cpu_supports: older compilers do not know every name
 * (clang 14 lacks avx512bf16), and a feature only counts when the OS saves its registers. */
static int x86_feature(const char *name)
{
    unsigned a, b, c, d, a7 = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0, b71, c71, d71;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int os_avx = 0, os_avx512 = 0;
    if (c & (1u << 27)) { /* OSXSAVE: xgetbv is usable */
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        os_avx = (lo & 0x6) == 0x6;
        os_avx512 = os_avx && (lo & 0xe0) == 0xe0;
    }
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 0, a7, b7, c7, d7);
        if (a7 >= 1) __cpuid_count(7, 1, a71, b71, c71, d71);
    }
    (void)c7;
    if (!strcmp(name, "sse4.2")) return (c >> 20) & 1;
    if (!strcmp(name, "fma")) return os_avx && ((c >> 12) & 1);
    if (!strcmp(name, "f16c")) return os_avx && ((c >> 29) & 1);
    if (!strcmp(name, "avx2")) return os_avx && ((b7 >> 5) & 1);
    if (!strcmp(name, "avx512f")) return os_avx512 && ((b7 >> 16) & 1);
    if (!strcmp(name, "avx512bf16")) return os_avx512 && ((a71 >> 5) & 1);
    if (!strcmp(name, "avx512fp16")) return os_avx512 && ((d7 >> 23) & 1);
    return 0;
}
#endif

static void simd_features(char *out, size_t cap)
{
    out[0] = '\0';
#if defined(__x86_64__) || defined(__i386__)
    static const char *const names[] = {"avx512f", "avx512bf16", "avx512fp16", "avx2", "fma", "f16c", "sse4.2"};
    size_t used = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (x86_feature(names[i]))
            used += (size_t)snprintf(out + used, used < cap ? cap - used : 0, "%s%s", used ? "," : "", names[i]);
#endif
    if (!out[0]) snprintf(out, cap, "none");
}

enum { ATTR_SIMD, ATTR_CACHE, ATTR_THREADS, ATTR_COUNT_ };

uint32_t cpu_attribute_count(void) { return ATTR_COUNT_; }

attnrt_status_t cpu_fill_attribute(uint32_t i, attnrt_device_attribute_t *attr)
{
    if (i >= ATTR_COUNT_)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu:0 has %u attributes; asked for attribute %u", ATTR_COUNT_, i);
    switch (i) {
    case ATTR_SIMD:
        snprintf(attr->key, sizeof attr->key, "simd");
        simd_features(attr->value, sizeof attr->value);
        break;
    case ATTR_CACHE:
        snprintf(attr->key, sizeof attr->key, "cache_size");
        cpuinfo_field("cache size", attr->value, sizeof attr->value);
        if (!attr->value[0]) snprintf(attr->value, sizeof attr->value, "unknown");
        break;
    case ATTR_THREADS:
        snprintf(attr->key, sizeof attr->key, "online_cpus");
        snprintf(attr->value, sizeof attr->value, "%ld", sysconf(_SC_NPROCESSORS_ONLN));
        break;
    }
    return ATTNRT_OK;
}
