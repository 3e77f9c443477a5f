/* kernel_shapes.h — a paged-attention call for each row of the cuda plugin's kernel table on a Hopper card, with the rows
 * its plan takes: test_cuda_kernel_select checks the plan's picks (fake driver), cuda_kernel_coverage runs each call on
 * the GPU against the cpu plugin. Small enough for the CPU's reference (a few GFLOP each), each inside its row's rule. */
#ifndef CK_TESTS_KERNEL_SHAPES_H
#define CK_TESTS_KERNEL_SHAPES_H

#include "attnrt_plugin.h"
#include "cuda_kernel_table.h"

enum { BF16, F16, E4M3, E5M2, F32 };

/* b requests of new_tokens query tokens each over ctx keys before them (causal), all alike */
typedef struct shape {
    const char *what;
    int         q, kv;               /* query and cache types (BF16 ...) */
    int         d, hq, hkv, bs;      /* head dim, query and KV heads, block size */
    int         b, ctx, new_tokens;
    int         hnd, softcap;        /* an HND cache; a soft-cap of 30 */
    int         prefill, ws, decode; /* the rows the plan takes (CK_K_*, -1: none) */
} shape_t;

static inline attnrt_dtype_t shape_dtype(int k)
{
    static const attnrt_dtype_t t[] = {{ATTNRT_DTYPE_CODE_BFLOAT, 16, 1}, {ATTNRT_DTYPE_CODE_FLOAT, 16, 1},
                                       {ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN, 8, 1}, {ATTNRT_DTYPE_CODE_FLOAT8_E5M2, 8, 1},
                                       {ATTNRT_DTYPE_CODE_FLOAT, 32, 1}};
    return t[k];
}

/* what, q, kv, D, Hq, Hkv, block, B, ctx, new tokens, HND, soft-cap; the rows (prefill, persistent, decode) */
static const shape_t cuda_hopper_shapes[] = {
    {"bf16 decode B64 x 1024", BF16, BF16, 128, 32, 8, 16, 64, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_TMA},
    {"bf16 decode B1 x 4096", BF16, BF16, 128, 32, 8, 16, 1, 4096, 1, 0, 0, -1, -1, CK_K_DECODE_TMA_W8},
    {"bf16 decode B64 x 1024, D 64", BF16, BF16, 64, 32, 8, 16, 64, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_TMA},
    {"bf16 decode B64 x 1024, D 256", BF16, BF16, 256, 32, 8, 16, 64, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_TMA},
    {"bf16 decode B64 x 1024, D 96", BF16, BF16, 96, 32, 8, 16, 64, 1024, 1, 0, 0, -1, -1, CK_K_DECODE},
    {"bf16 decode B64 x 1024, block 7", BF16, BF16, 128, 32, 8, 7, 64, 1024, 1, 0, 0, -1, -1, CK_K_DECODE},
    {"e4m3 decode B64 x 1024", BF16, E4M3, 128, 32, 8, 16, 64, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_T32_W2},
    {"e4m3 decode B96 x 1024", BF16, E4M3, 128, 32, 8, 16, 96, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_T32},
    {"e4m3 decode B16 x 32768, 8 / 8 heads", BF16, E4M3, 128, 8, 8, 16, 16, 32768, 1, 0, 0, -1, -1, CK_K_DECODE_T16},
    {"e4m3 decode B128 x 1024, block 7", BF16, E4M3, 128, 32, 8, 7, 128, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_W2},
    {"e4m3 decode B32 x 2048, block 7", BF16, E4M3, 128, 32, 8, 7, 32, 2048, 1, 0, 0, -1, -1, CK_K_DECODE},
    {"e5m2 decode B128 x 1024, D 64", F16, E5M2, 64, 32, 8, 16, 128, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_TMA_W2},
    {"e4m3 decode B16 x 1024, D 64", BF16, E4M3, 64, 32, 8, 16, 16, 1024, 1, 0, 0, -1, -1, CK_K_DECODE_TMA},
    {"e4m3 decode B64 x 2048, D 64, block 7", BF16, E4M3, 64, 32, 8, 7, 64, 2048, 1, 0, 0, -1, -1, CK_K_DECODE_L2W},
    {"e4m3 decode B64 x 2048, D 64, block 7, HND", BF16, E4M3, 64, 32, 8, 7, 64, 2048, 1, 1, 0, -1, -1, CK_K_DECODE},
    {"bf16 decode MQA B256 x 256", BF16, BF16, 128, 32, 1, 16, 256, 256, 1, 0, 0, -1, CK_K_DECODE_WS, -1},
    {"bf16 decode MQA B2 x 4096", BF16, BF16, 128, 32, 1, 16, 2, 4096, 1, 0, 0, -1, -1, CK_K_DECODE_TMA_W8},
    {"bf16 decode MQA B256 x 256, soft-cap", BF16, BF16, 128, 32, 1, 16, 256, 256, 1, 0, 1, -1, -1, CK_K_DECODE_WIDE_TMA},
    {"bf16 decode MQA B256 x 256, D 64, block 7, soft-cap", BF16, BF16, 64, 32, 1, 7, 256, 256, 1, 0, 1, -1, -1,
     CK_K_DECODE_WIDE},
    {"bf16 prefill B1 x 1024, 8 / 2 heads", BF16, BF16, 128, 8, 2, 16, 1, 0, 1024, 0, 0, CK_K_PREFILL_WG, CK_K_PREFILL_WS, -1},
    {"f16 prefill B1 x 1024, D 256, HND", F16, F16, 256, 8, 2, 32, 1, 0, 1024, 1, 0, CK_K_PREFILL_WG, CK_K_PREFILL_WS, -1},
    {"bf16 prefill 512 over 2048, D 64", BF16, BF16, 64, 8, 2, 16, 1, 2048, 512, 0, 0, CK_K_PREFILL_WG, CK_K_PREFILL_WS_N192, -1},
    {"bf16 prefill B1 x 1024, block 7", BF16, BF16, 128, 8, 2, 7, 1, 0, 1024, 0, 0, CK_K_PREFILL_WG, -1, -1},
    {"bf16 prefill B1 x 1024, soft-cap", BF16, BF16, 128, 8, 2, 16, 1, 0, 1024, 0, 1, CK_K_PREFILL, -1, -1},
    {"e4m3 prefill 256 over 1024, bf16", BF16, E4M3, 128, 8, 2, 16, 1, 1024, 256, 0, 0, CK_K_PREFILL, CK_K_PREFILL_WS_FP8_KD,
     -1},
    {"e4m3 prefill B8 x 256, bf16", BF16, E4M3, 128, 8, 2, 16, 8, 0, 256, 0, 0, CK_K_PREFILL, CK_K_PREFILL_WS_FP8, -1},
    {"e5m2 prefill B4 x 512, D 64, f16", F16, E5M2, 64, 8, 2, 16, 4, 0, 512, 0, 0, CK_K_PREFILL, CK_K_PREFILL_WS_FP8, -1},
    {"f32 decode B8 x 1024", F32, F32, 128, 32, 8, 16, 8, 1024, 1, 0, 0, CK_K_SIMT, -1, -1},
};

#endif /* CK_TESTS_KERNEL_SHAPES_H */
