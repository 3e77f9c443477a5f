/* npu_profile.c — the two device profiles, their selection from the environment, and the attributes
 * that show their limits (attnrt-info prints them). Every figure is tagged [S] (vendor) or [P] (ours);
 * docs/backends/npu_sim.md gives the source of each. */
#include "npu_profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_select.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define GIB (1024ull * 1024ull * 1024ull)
#define MIB (1024ull * 1024ull)

static const npu_profile_t profiles[] = {
    {
        .name = "rbln-atom",
        .family = "ATOM",
        .model = "RBLN ATOM (RBLN-CA family), simulated",
        .memory_kind = "GDDR6",
        .eager_max_seq_len = 32768,          /* [S] optimum-rbln PR #729: ATOM eager <= 32,768        */
        .flash_partition_min = 1024,         /* [S] PR #642 / #729: 1,024 - 32,768                     */
        .flash_partition_max = 32768,
        .flash_default_partition = 16384,    /* [S] DEFAULT_FLASH_ATTN_PARTITION_LENGTH                */
        .default_prefill_chunk = 128,        /* [S] set_default_values: 128 unless RBLN-CR             */
        .vllm_block_min = 1024,              /* [P] the docs give no ATOM range (the vLLM model path runs
                                                on Rebel100 only): ATOM's compiled-path flash range     */
        .vllm_block_max = 32768,
        .vllm_range_documented = 0,
        .sliding_window_base = 32768,        /* [S] MAX_SLIDING_WINDOW_SIZE; PR #729: <= 32,640 - chunk  */
        .memory_physical = 16 * GIB,         /* [S] 16 GB GDDR6                                         */
        .memory_reserved = 288 * MIB,        /* [S] runtime reserve                                     */
        .compute_units = 8,                  /* [S] 8 neural engines                                    */
        .sram_bytes = 8 * 4 * MIB + 32 * MIB,/* [S] 8 x 4 MB engine SRAM + 32 MB shared                 */
        .peak_flops_fp16 = 32e12,            /* [S, vendor claim] 32 TFLOPS fp16                        */
        .peak_flops_fp8 = 0.0,               /* no fp8 compute claimed                                  */
        .dram_bw_eff = 200e9,                /* [P] calibrate: 256 GB/s peak GDDR6, ~80% effective      */
        .partition_overhead_us = 2.0,        /* [P]                                                     */
        .launch_overhead_us = 5.0,           /* [P]                                                     */
    },
    {
        .name = "rbln-rebel100",
        .family = "Rebel100",
        .model = "RBLN REBEL100 (RBLN-CR family), simulated",
        .memory_kind = "HBM3E",
        .eager_max_seq_len = 16384,          /* [S] PR #729: REBEL eager <= 16,384                      */
        .flash_partition_min = 1024,         /* [S] PR #729: 1,024 - 16,384                              */
        .flash_partition_max = 16384,
        .flash_default_partition = 8192,     /* [S] PR #729                                             */
        .default_prefill_chunk = 512,        /* [S] set_default_values: 512 on RBLN-CR                  */
        .vllm_block_min = 512,               /* [S] docs "Attention Modes": Rebel100 512 - 16,384        */
        .vllm_block_max = 16384,
        .vllm_range_documented = 1,
        .sliding_window_base = 32767,        /* [S] PR #729: <= 32,255 with chunk 512 (int16 axis)       */
        .memory_physical = 144 * GIB,        /* [S] 144 GB HBM3E                                        */
        .memory_reserved = 4 * GIB,          /* [S] 1 GiB per chiplet, 4 chiplets                       */
        .compute_units = 4,                  /* [S] 4 chiplets                                          */
        .sram_bytes = 0,                     /* not published                                           */
        .peak_flops_fp16 = 1000e12,          /* [S, vendor claim] 1 PFLOPS fp16                         */
        .peak_flops_fp8 = 2000e12,           /* [S, vendor claim] 2 PFLOPS fp8                          */
        .dram_bw_eff = 2.7e12,               /* [P] the vendor's "effective" HBM3E figure               */
        .partition_overhead_us = 1.0,        /* [P]                                                     */
        .launch_overhead_us = 5.0,           /* [P]                                                     */
    },
};
#define PROFILE_COUNT (sizeof profiles / sizeof profiles[0])

const npu_profile_t *npu_profile_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < PROFILE_COUNT; i++)
        if (strcmp(profiles[i].name, name) == 0) return &profiles[i];
    return NULL;
}

const npu_profile_t *npu_profile_default(void) { return &profiles[0]; }

const char *npu_profile_names(void) { return "rbln-atom, rbln-rebel100"; }

uint64_t npu_profile_budget(const npu_profile_t *p) { return p->memory_physical - p->memory_reserved; }

int64_t npu_profile_window_max(const npu_profile_t *p, int64_t prefill_chunk)
{
    return p->sliding_window_base - prefill_chunk;
}

attnrt_status_t npu_profile_from_env(const npu_profile_t **out)
{
    const char *v = secure_getenv("ATTNRT_NPU_PROFILE");
    if (!v || !v[0]) {
        *out = npu_profile_default();
        return ATTNRT_OK;
    }
    const npu_profile_t *p = npu_profile_find(v);
    if (!p)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "ATTNRT_NPU_PROFILE=%s: unknown npu_sim profile; known profiles: %s",
                           v, npu_profile_names());
    *out = p;
    return ATTNRT_OK;
}

/* ---- attributes --------------------------------------------------------------------------------- */

enum {
    A_PROFILE, A_PROFILES, A_FRONT_END, A_EAGER_MAX, A_FLASH_RANGE, A_FLASH_DEFAULT, A_VLLM_BLOCKS, A_HEAD_SIZES,
    A_PREFILL_CHUNK, A_WINDOW_MAX, A_FP8, A_KV_LAYOUT, A_BUCKETS, A_MEMORY, A_SRAM, A_PEAK, A_BANDWIDTH,
    A_OVERHEADS, A_UNSUPPORTED, A_COUNT_
};

uint32_t npu_attribute_count(void) { return A_COUNT_; }

static void set(attnrt_device_attribute_t *a, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set(attnrt_device_attribute_t *a, const char *key, const char *fmt, ...)
{
    snprintf(a->key, sizeof a->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->value, sizeof a->value, fmt, ap);
    va_end(ap);
}

attnrt_status_t npu_attribute_fill(const npu_profile_t *p, uint32_t front_end, int64_t chunk, uint32_t i,
                                   attnrt_device_attribute_t *attr)
{
    if (i >= A_COUNT_)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "npu_sim:0 has %u attributes; asked for attribute %u", A_COUNT_, i);
    attnrt_device_attribute_t a;
    memset(&a, 0, sizeof a);
    char heads[96];
    switch (i) {
    case A_PROFILE: set(&a, "profile", "%s (%s)", p->name, p->family); break;
    case A_PROFILES: set(&a, "profiles", "%s (ATTNRT_NPU_PROFILE, or open option \"profile\")", npu_profile_names()); break;
    case A_FRONT_END:
        set(&a, "front_end", "%s (open options \"front_end\": vllm | compiled; \"model_kind\": decoder | pooling | "
            "pooling_qwen3 | encoder_decoder)",
            front_end == ATTNRT_FRONT_END_COMPILED ? "compiled" : "vllm");
        break;
    case A_EAGER_MAX: set(&a, "naive_max_seq_len", "%lld", (long long)p->eager_max_seq_len); break;
    case A_FLASH_RANGE:
        set(&a, "flash_partition_len", "%lld-%lld (compiled path; partition = block_size)", (long long)p->flash_partition_min,
            (long long)p->flash_partition_max);
        break;
    case A_FLASH_DEFAULT: set(&a, "flash_default_partition", "%lld", (long long)p->flash_default_partition); break;
    case A_VLLM_BLOCKS:
        set(&a, "vllm_block_size", "power of two, %lld-%lld%s", (long long)p->vllm_block_min, (long long)p->vllm_block_max,
            p->vllm_range_documented ? "" : " [P: compiled-path range; the docs give Rebel100's only]");
        break;
    case A_HEAD_SIZES:
        npu_head_sizes_string(heads, sizeof heads);
        set(&a, "head_sizes", "%s (vLLM path)", heads);
        break;
    case A_PREFILL_CHUNK: set(&a, "prefill_chunk", "%lld (positive multiple of 64)", (long long)chunk); break;
    case A_WINDOW_MAX:
        set(&a, "sliding_window_max", "%lld (%lld - prefill chunk %lld)", (long long)npu_profile_window_max(p, chunk),
            (long long)p->sliding_window_base, (long long)chunk);
        break;
    case A_FP8: set(&a, "fp8_kv_cache", "flash only (naive refuses); MLA: sparse only; sliding: any; one scale per tensor"); break;
    case A_KV_LAYOUT: set(&a, "kv_cache_layout", "HND native ([2, blocks, Hkv, 1, block, D]); NHD accepted"); break;
    case A_BUCKETS: set(&a, "decode_buckets", "1,2,4,...,%d (batch padded up)", NPU_DECODE_BUCKET_MAX); break;
    case A_MEMORY:
        set(&a, "memory", "%llu GiB %s - %llu MiB reserved = %llu bytes usable",
            (unsigned long long)(p->memory_physical >> 30), p->memory_kind,
            (unsigned long long)(p->memory_reserved >> 20), (unsigned long long)npu_profile_budget(p));
        break;
    case A_SRAM:
        if (p->sram_bytes)
            set(&a, "sram", "%llu MiB", (unsigned long long)(p->sram_bytes >> 20));
        else
            set(&a, "sram", "not published");
        break;
    case A_PEAK:
        if (p->peak_flops_fp8 > 0)
            set(&a, "peak_tflops", "fp16 %.0f, fp8 %.0f (vendor claim)", p->peak_flops_fp16 / 1e12, p->peak_flops_fp8 / 1e12);
        else
            set(&a, "peak_tflops", "fp16 %.0f (vendor claim)", p->peak_flops_fp16 / 1e12);
        break;
    case A_BANDWIDTH: set(&a, "dram_gbps_effective", "%.0f [P, calibration]", p->dram_bw_eff / 1e9); break;
    case A_OVERHEADS:
        set(&a, "cost_overheads_us", "partition %.1f, launch %.1f [P]", p->partition_overhead_us, p->launch_overhead_us);
        break;
    default:
        set(&a, "unsupported", "softcap, ALiBi, LSE output (so cascade), per-block fp8 scales, lightning, gated delta "
            "(RBLN documents no such kernel)");
        break;
    }
    PLUGIN_COPY_OUT(attr, a);
    return ATTNRT_OK;
}
