/* cpu:0 — the machine's model, cores (affinity mask), memory (sysinfo), SIMD features (cpuid) and the
 * kernels chosen from them (cpu_cpuid.c). */
#include "cpu_device.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "cpu_simd.h"
#include "plugin_error.h"
#include "plugin_struct.h"

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
    PLUGIN_COPY_OUT(props, p);
}

static void simd_features(char *out, size_t cap)
{
    static const unsigned shown[] = {CPU_FEAT_AVX512F, CPU_FEAT_AVX512BF16, CPU_FEAT_AVX512FP16, CPU_FEAT_AVX2,
                                     CPU_FEAT_FMA, CPU_FEAT_F16C, CPU_FEAT_SSE42};
    const uint32_t have = cpu_cpuid_features();
    uint32_t mask = 0;
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) mask |= have & shown[i];
    cpu_feature_list(mask, out, cap);
}

/* The kernels a device opened now would use: "avx512", "avx2 (forced by ATTNRT_CPU_ISA)", or why the
 * forced one cannot be used. */
static void chosen_isa(char *out, size_t cap)
{
    const cpu_simd_t *simd = NULL;
    int forced = 0;
    if (cpu_simd_select(&simd, &forced) != ATTNRT_OK) {
        char why[180];
        plugin_last_error(why, sizeof why);
        snprintf(out, cap, "none: %s", why);
    } else {
        snprintf(out, cap, "%s%s", simd->name, forced ? " (forced by ATTNRT_CPU_ISA)" : "");
    }
}

enum { ATTR_SIMD, ATTR_CACHE, ATTR_THREADS, ATTR_ISA, ATTR_COUNT_ };

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
    case ATTR_ISA:
        snprintf(attr->key, sizeof attr->key, "isa");
        chosen_isa(attr->value, sizeof attr->value);
        break;
    }
    return ATTNRT_OK;
}
