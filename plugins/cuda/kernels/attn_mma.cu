/* attn_mma.cu — the general tensor-core attention kernels the host loads by name (cuda_kernel_table.c lists
 * each): ck_attn_mma_prefill_<f16|bf16>_<kv16|fp8>_d<64|128|256> (attn_mma.cuh: 4 row warps x 1,
 * 64 rows, BN 64 keys a tile (32 at D 256, for shared memory), a cp.async ring (CK_MMA_STAGES), one
 * barrier a tile). Their decode counterparts are attn_decode.cu, a family of its own. */
#include "attn_mma.cuh"

#define CK_MMA_KERNEL(cfg, tname, T, kvname, FP8, D, WM, BN)                                                  \
    extern "C" __global__ void __launch_bounds__(WM * 32, 2)                                                  \
        ck_attn_mma_##cfg##_##tname##_##kvname##_d##D(const __grid_constant__ ck_attn_args_t a)               \
    {                                                                                                         \
        ck_pdl_launch_dependents();                                                                           \
        attn_mma<T, FP8, D, WM, BN>(a);                                                                       \
    }

#define CK_MMA_ALL_D(tname, T, kvname, FP8)                                                                   \
    CK_MMA_KERNEL(prefill, tname, T, kvname, FP8, 64, 4, 64)                                                  \
    CK_MMA_KERNEL(prefill, tname, T, kvname, FP8, 128, 4, 64)                                                 \
    CK_MMA_KERNEL(prefill, tname, T, kvname, FP8, 256, 4, 32)

CK_MMA_ALL_D(f16, __half, kv16, false)
CK_MMA_ALL_D(f16, __half, fp8, true)
CK_MMA_ALL_D(bf16, __nv_bfloat16, kv16, false)
CK_MMA_ALL_D(bf16, __nv_bfloat16, fp8, true)
