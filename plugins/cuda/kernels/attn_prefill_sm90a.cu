/* attn_prefill_sm90a.cu — the wgmma prefill kernels, part of the sm_90a fatbin (fatbin_sm90a.cu: `-gencode
 * arch=compute_90a,code=sm_90a`, loaded on compute capability 9.0 devices only), loaded by name by the host
 * (cuda_kernel_table.c): ck_attn_prefill_wg_<f16|bf16>_d<D> (attn_prefill_sm90a.cuh: two blocks a SM) and
 * ck_attn_prefill_ws_<f16|bf16>_d<D> (attn_prefill_ws_sm90a.cuh: warp-specialized, one block a SM; its fp8-cache
 * forms below; D 64's long-item forms `_n192`). */
#include "attn_prefill_sm90a.cuh"
#include "attn_prefill_ws_sm90a.cuh"

#define CK_PFW_KERNEL(tname, T, D)                                                                        \
    extern "C" __global__ void __launch_bounds__(CK_PFW_WARPS * 32, CK_PFW_BLOCKS_PER_SM(D))              \
        ck_attn_prefill_wg_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                        \
    {                                                                                                     \
        ck_pdl_launch_dependents();                                                                       \
        attn_prefill_wg<T, D>(a);                                                                         \
    }
#define CK_PFS_KERNEL(tname, T, D)                                                                        \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                        \
    {                                                                                                     \
        ck_pdl_launch_dependents();                                                                       \
        attn_prefill_ws<T, D, false>(a);                                                                  \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_dec_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                    \
    {                                                                                                     \
        attn_prefill_ws<T, D, true>(a);                                                                   \
    }
/* both kernels for each query type and head dim */
#define CK_PF_SM90A_KERNELS(tname, T, D) CK_PFW_KERNEL(tname, T, D) CK_PFS_KERNEL(tname, T, D)

CK_PF_EACH(CK_PF_SM90A_KERNELS)

/* The warp-specialized kernel over fp8 caches (per-tensor scales): ck_attn_prefill_ws_<f16|bf16>_<e4m3|e5m2>_d<D> */
#define CK_PFS_FP8_KERNEL(tname, T, kvname, KV, D)                                                        \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_##tname##_##kvname##_d##D(const __grid_constant__ ck_attn_args_t a)             \
    {                                                                                                     \
        ck_pdl_launch_dependents();                                                                       \
        attn_prefill_ws<T, D, false, KV>(a);                                                              \
    }
#define CK_PFS_FP8_KERNELS(tname, T)                                                                      \
    CK_PFS_FP8_KERNEL(tname, T, e4m3, CK_E4M3, 64)                                                        \
    CK_PFS_FP8_KERNEL(tname, T, e4m3, CK_E4M3, 128)                                                       \
    CK_PFS_FP8_KERNEL(tname, T, e5m2, CK_E5M2, 64)                                                        \
    CK_PFS_FP8_KERNEL(tname, T, e5m2, CK_E5M2, 128)                                                       \
    CK_PFS_FP8_KERNEL(tname, T, e4m3, CK_E4M3, 256)                                                       \
    CK_PFS_FP8_KERNEL(tname, T, e5m2, CK_E5M2, 256)

CK_PFS_FP8_KERNELS(f16, __half)
CK_PFS_FP8_KERNELS(bf16, __nv_bfloat16)

/* Its form for items of many keys over an fp8 cache with a bf16 Q (K read by e4m3 products, Q in two e4m3 terms):
 * ck_attn_prefill_ws_bf16_<e4m3|e5m2>_d<D>_kd */
#define CK_PFS_FP8_KD_KERNEL(kvname, KV, D)                                                               \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_bf16_##kvname##_d##D##_kd(const __grid_constant__ ck_attn_args_t a)               \
    {                                                                                                     \
        ck_pdl_launch_dependents();                                                                       \
        attn_prefill_ws<__nv_bfloat16, D, false, KV, true>(a);                                            \
    }
CK_PFS_FP8_KD_KERNEL(e4m3, CK_E4M3, 128)
CK_PFS_FP8_KD_KERNEL(e5m2, CK_E5M2, 128)
CK_PFS_FP8_KD_KERNEL(e4m3, CK_E4M3, 256)
CK_PFS_FP8_KD_KERNEL(e5m2, CK_E5M2, 256)

/* D 64's long-item form (192-key tiles; the plan takes it for items of many keys): ck_attn_prefill_ws_<f16|bf16>_d64_n192.
 * None over fp8 caches: there the producer's widening paces the tiles, and 192-key tiles measured 4-9 % slower (with two
 * landing slots too). */
#define CK_PFS_LONG_KERNEL(tname, T)                                                                      \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_##tname##_d64_n192(const __grid_constant__ ck_attn_args_t a)                    \
    {                                                                                                     \
        ck_pdl_launch_dependents();                                                                       \
        attn_prefill_ws<T, 64, false, 0, false, CK_PFS_BN_LONG>(a);                                       \
    }
CK_PFS_LONG_KERNEL(f16, __half)
CK_PFS_LONG_KERNEL(bf16, __nv_bfloat16)
