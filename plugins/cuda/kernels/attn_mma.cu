/* attn_mma.cu — the tensor-core attention kernels the host picks by name (cuda_module.c has the same
 * table): ck_attn_mma_<prefill|decode>_<f16|bf16>_<kv16|fp8>_d<64|128|256>.
 *   prefill: attn_mma.cuh, 4 row warps x 1, 64 rows, BN 64 keys a tile (32 at D 256, for shared
 *            memory), a cp.async ring (CK_MMA_STAGES), one barrier a tile;
 *   decode:  attn_decode.cuh, keys in the mma's M dimension, a cp.async ring per warp, split-KV
 *            merged by the last block of each row tile. */
#include "attn_mma.cuh"
#include "attn_decode.cuh"

#define CK_MMA_KERNEL(cfg, tname, T, kvname, FP8, D, WM, BN)                                                  \
    extern "C" __global__ void __launch_bounds__(WM * 32, 2)                                                  \
        ck_attn_mma_##cfg##_##tname##_##kvname##_d##D(const __grid_constant__ ck_attn_args_t a)               \
    {                                                                                                         \
        attn_mma<T, FP8, D, WM, BN>(a);                                                                       \
    }

/* decode: attn_decode.cuh (keys in the mma's M dimension, a cp.async ring per warp) */
#define CK_DEC_KERNEL(tname, T, kvname, FP8, D)                                                               \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, (D) == 256 ? 1 : 2)                      \
        ck_attn_mma_decode_##tname##_##kvname##_d##D(const __grid_constant__ ck_attn_args_t a)                \
    {                                                                                                         \
        attn_decode_entry<T, FP8, D>(a);                                                                      \
    }

#define CK_MMA_BOTH_CFG(tname, T, kvname, FP8, D)                                                             \
    CK_MMA_KERNEL(prefill, tname, T, kvname, FP8, D, 4, ((D) == 256 ? 32 : 64))                               \
    CK_DEC_KERNEL(tname, T, kvname, FP8, D)

#define CK_MMA_ALL_D(tname, T, kvname, FP8)                                                                   \
    CK_MMA_BOTH_CFG(tname, T, kvname, FP8, 64)                                                                \
    CK_MMA_BOTH_CFG(tname, T, kvname, FP8, 128)                                                               \
    CK_MMA_BOTH_CFG(tname, T, kvname, FP8, 256)

CK_MMA_ALL_D(f16, __half, kv16, false)
CK_MMA_ALL_D(f16, __half, fp8, true)
CK_MMA_ALL_D(bf16, __nv_bfloat16, kv16, false)
CK_MMA_ALL_D(bf16, __nv_bfloat16, fp8, true)
