/* cpu_simd.h — the cpu plugin's SIMD kernels behind one table of function pointers, one table per
 * instruction set, chosen at run time (cpuid + xgetbv, never -march at build time) when a device is
 * opened, so one binary runs on any x86-64 and the portable table builds everywhere.
 *
 * Each ISA's kernels live in their own file compiled with their own flags (cpu_simd_avx512.c with
 * -mavx512f..., cpu_simd_avx512bf16.c with those and -mavx512bf16, cpu_simd_avx2.c with -mavx2 -mfma
 * -mf16c, cpu_simd_portable.c with none); all instantiate the same kernel template,
 * cpu_simd_kernels.h, over a small vector vocabulary.
 *
 * The kernels see one KV head and a chunk of at most CPU_ATTN_CHUNK keys at a time; the host glue
 * (cpu_attention.c) walks the block table, masks, splits and finishes rows. Two tile shapes:
 *   narrow (decode, few rows): query rows row-major, K/V read straight from the cache and dequantised in
 *          registers; scores s[row][key].
 *   wide (prefill, many rows): rows in SIMD lanes. The query is stored transposed (qt[d][row]); the
 *          chunk's K/V are dequantised once into f32 buffers and every row reuses them; scores are
 *          stored s[key][row]. Register-blocked like a GEMM micro-kernel.
 * Online softmax state per row: running max m, sum l, unnormalised output o[row][dv].
 */
#ifndef ATTNRT_CPU_SIMD_H
#define ATTNRT_CPU_SIMD_H

#include <stdint.h>

#include "attnrt_plugin.h"
#include "dtype_convert.h"

#define CPU_ATTN_CHUNK 64        /* keys per chunk: one online-softmax update                        */
#define CPU_WIDE_ROW_ALIGN 32    /* wide tiles pad their rows to this (a multiple of every ISA's block) */
#define CPU_DIM_ALIGN 16         /* packed K/V/o rows pad head dims to this many floats               */
#define CPU_NARROW_MAX_ROWS 16   /* rows a narrow kernel takes per call                               */
#define CPU_DECODE_PV_KEYS 16    /* keys (all heads) a decode PV step takes with registers held       */

typedef enum cpu_isa {
    CPU_ISA_PORTABLE = 0, CPU_ISA_AVX2 = 1, CPU_ISA_AVX512 = 2, CPU_ISA_AVX512BF16 = 3, CPU_ISA_COUNT_
} cpu_isa_t;

/* The leading dimension (floats) of a buffer of rows of n floats: n rounded up to CPU_DIM_ALIGN, plus
 * one cache line when that is a multiple of 256 bytes, so that the rows of a column walk do not all
 * fall into the same few L1 sets (a 1 KiB stride uses 1/16 of them and thrashes). */
static inline int cpu_attn_ld(int64_t n)
{
    int64_t ld = (n + CPU_DIM_ALIGN - 1) / CPU_DIM_ALIGN * CPU_DIM_ALIGN;
    if (ld % 64 == 0) ld += CPU_DIM_ALIGN;
    return (int)ld;
}

/* A chunk of keys of one KV head: row pointers into the caches (any layout, any block order). */
typedef struct cpu_kv_chunk {
    int         n;                      /* keys, 1 .. CPU_ATTN_CHUNK                                 */
    /* Memory the kernels prefetch into L2 while they work on this chunk, paced with the work: rows
     * [pf_score[j], + pf_score_bytes) while key j is scored, [pf_value[j], + pf_value_bytes) while its
     * value is added, j < pf_n (0: none), each row cut into pf_units pieces, piece u going with unit u
     * (decode: KV head u). The glue points them at what is read next (set_prefetch). */
    int         pf_n, pf_units;
    size_t      pf_score_bytes, pf_value_bytes;
    const void *pf_score[CPU_ATTN_CHUNK];
    const void *pf_value[CPU_ATTN_CHUNK];
    dc_kind_t   kind;                   /* cache dtype                                               */
    int         scaled;                 /* fp8 with a scale: ks/vs hold it, else they are all 1      */
    int64_t     pos[CPU_ATTN_CHUNK];    /* key positions, ascending                                  */
    const void *k[CPU_ATTN_CHUNK];      /* first element of the key row (Dqk elements)               */
    const void *v[CPU_ATTN_CHUNK];      /* first element of the value row (Dv elements)              */
    float       ks[CPU_ATTN_CHUNK];     /* fp8 scale of each key's block                             */
    float       vs[CPU_ATTN_CHUNK];
} cpu_kv_chunk_t;

/* The rows a kernel updates. All buffers are 64-byte aligned participant scratch; lds in floats. */
typedef struct cpu_tile {
    int    rows;        /* narrow: <= CPU_NARROW_MAX_ROWS; wide: rows_pad is rows rounded up      */
    int    rows_pad;    /* wide only: multiple of CPU_WIDE_ROW_ALIGN                             */
    int    ld;          /* wide only: the ld of qt and s, rows_pad plus one cache line (below)   */
    int    dqk, dv;     /* head dims                                                             */
    int    dv_pad;      /* the ld of o, vc: cpu_attn_ld(dv)                                      */
    int    dqk_pad;     /* the ld of narrow q rows and of kc: cpu_attn_ld(dqk)                   */
    const float *q;     /* narrow: [rows][dqk_pad], already times the softmax scale; wide: qt [dqk][ld] */
    const uint16_t *qb; /* narrow with bf16_dot, a bf16 query and a bf16 cache: the query unscaled (exact:
                           its values are bf16), same layout; else NULL                           */
    float  qb_scale;    /* with qb: the softmax scale, applied to the f32 sums of the bf16 dots  */
    float *o;           /* [rows(_pad)][dv_pad] unnormalised output                              */
    float *m, *l;       /* [rows(_pad)] running max (may be -inf) and sum                        */
    float *s;           /* scores, then probabilities: narrow [rows][CPU_ATTN_CHUNK]; wide [CPU_ATTN_CHUNK][ld] */
    float *alpha;       /* wide: [rows_pad] rescale factors of the current chunk                 */
    float *kc, *vc;     /* wide: [CPU_ATTN_CHUNK][dqk_pad] and [CPU_ATTN_CHUNK][dv_pad] f32       */
} cpu_tile_t;

/* One ISA's kernels. */
typedef struct cpu_simd {
    cpu_isa_t   isa;
    const char *name;   /* "avx512bf16", "avx512", "avx2", "portable" */
    int         bf16_dot; /* narrow scores of a bf16 query and cache use tile->qb (the glue fills it) */
    /* s[r][j] = q_r . k_j (times ks[j]) for r < rows, j < c->n. */
    void (*narrow_scores)(const cpu_tile_t *t, const cpu_kv_chunk_t *c);
    /* Online-softmax update of every row with s[r][0..n) (masked keys are -inf), then
     * o[r] = alpha_r o[r] + sum_j p[r][j] vs[j] v_j, reading V from the cache. */
    void (*narrow_update)(const cpu_tile_t *t, const cpu_kv_chunk_t *c);
    /* Decode over every KV head of a chunk: unit u's tile is tiles[u], its key j's row c->k[j] +
     * u * k_head_bytes (values likewise); the keys are taken one by one across all heads, i.e. in the
     * memory order of an NHD block. Same contracts as narrow_scores / narrow_update per tile; the
     * chunk's scales must be the same for every head. */
    void (*decode_scores)(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t k_head_bytes);
    void (*decode_update)(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t v_head_bytes);
    /* kc[j] = dequant(k_j) * ks[j], vc[j] likewise, zero-padded to the lds; j < c->n. */
    void (*wide_pack)(const cpu_tile_t *t, const cpu_kv_chunk_t *c);
    /* s[j][r] = qt[.][r] . kc[j] for j < n (rounded up to the kernel's key block), r < rows_pad;
     * prefetches c's pieces on the way. */
    void (*wide_scores)(const cpu_tile_t *t, const cpu_kv_chunk_t *c, int n);
    /* Online-softmax update of every row over s[0..n)[r], then o[r] = alpha_r o[r] + sum_j p[j][r] vc[j]. */
    void (*wide_update)(const cpu_tile_t *t, int n);
} cpu_simd_t;

/* ---- cpuid (cpu_cpuid.c) --------------------------------------------------------------------- */

/* Features the CPU has AND the OS saves the registers of (xgetbv), as bits. */
enum {
    CPU_FEAT_SSE42 = 1u << 0, CPU_FEAT_AVX = 1u << 1, CPU_FEAT_FMA = 1u << 2, CPU_FEAT_F16C = 1u << 3,
    CPU_FEAT_AVX2 = 1u << 4, CPU_FEAT_AVX512F = 1u << 5, CPU_FEAT_AVX512BW = 1u << 6,
    CPU_FEAT_AVX512VL = 1u << 7, CPU_FEAT_AVX512DQ = 1u << 8, CPU_FEAT_AVX512BF16 = 1u << 9,
    CPU_FEAT_AVX512FP16 = 1u << 10, CPU_FEAT_COUNT_ = 11
};
uint32_t cpu_cpuid_features(void);
/* "avx512f", ... for bit i < CPU_FEAT_COUNT_. */
const char *cpu_feature_name(unsigned bit);
/* Comma-separated names of the features in `mask`, "none" when empty. */
void cpu_feature_list(uint32_t mask, char *out, size_t cap);

/* The ISA's table, or NULL when this build has no kernels for it (e.g. avx512 on an ARM build). */
const cpu_simd_t *cpu_simd_table(cpu_isa_t isa);
/* Features an ISA's kernels need. */
uint32_t cpu_isa_required_features(cpu_isa_t isa);
/* The best ISA the CPU runs, unless ATTNRT_CPU_ISA=avx512bf16|avx512|avx2|portable forces one; forcing one the
 * CPU (or this build) lacks is ATTNRT_ERR_UNSUPPORTED with a message naming the missing features.
 * `forced` (may be NULL) says whether the environment chose. */
attnrt_status_t cpu_simd_select(const cpu_simd_t **simd, int *forced);

/* The tables (each defined in its own file; the x86 ones only in x86 builds). */
extern const cpu_simd_t cpu_simd_portable;
extern const cpu_simd_t cpu_simd_avx2;
extern const cpu_simd_t cpu_simd_avx512;
extern const cpu_simd_t cpu_simd_avx512bf16;

#endif
