/* attn_prefill_sm90a.cu — the wgmma prefill kernels, part of the sm_90a fatbin (fatbin_sm90a.cu: `-gencode
 * arch=compute_90a,code=sm_90a`, loaded on compute capability 9.0 devices only), picked by name by the host
 * (cuda_prefill.c): ck_attn_prefill_wg_<f16|bf16>_d<D> (attn_prefill_sm90a.cuh: two blocks a SM) and
 * ck_attn_prefill_ws_<f16|bf16>_d<D> (attn_prefill_ws_sm90a.cuh: warp-specialized, one block a SM). */
#include "attn_prefill_sm90a.cuh"
#include "attn_prefill_ws_sm90a.cuh"

#define CK_PFW_KERNEL(tname, T, D)                                                                        \
    extern "C" __global__ void __launch_bounds__(CK_PFW_WARPS * 32, CK_PFW_BLOCKS_PER_SM(D))              \
        ck_attn_prefill_wg_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                        \
    {                                                                                                     \
        attn_prefill_wg<T, D>(a);                                                                         \
    }
#define CK_PFS_KERNEL(tname, T, D)                                                                        \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                        \
    {                                                                                                     \
        attn_prefill_ws<T, D, false>(a);                                                                  \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(CK_PFS_THREADS, 1)                                       \
        ck_attn_prefill_ws_dec_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                    \
    {                                                                                                     \
        attn_prefill_ws<T, D, true>(a);                                                                   \
    }
/* both kernels for each query type and head dim */
#define CK_PF_SM90A_KERNELS(tname, T, D) CK_PFW_KERNEL(tname, T, D) CK_PFS_KERNEL(tname, T, D)

CK_PF_SM90A_KERNELS(f16, __half, 64)
CK_PF_SM90A_KERNELS(f16, __half, 128)
CK_PF_SM90A_KERNELS(f16, __half, 256)
CK_PF_SM90A_KERNELS(bf16, __nv_bfloat16, 64)
CK_PF_SM90A_KERNELS(bf16, __nv_bfloat16, 128)
CK_PF_SM90A_KERNELS(bf16, __nv_bfloat16, 256)
