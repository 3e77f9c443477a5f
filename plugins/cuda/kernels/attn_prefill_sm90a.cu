/* attn_prefill_sm90a.cu — the wgmma prefill kernels (attn_prefill_sm90a.cuh), part of the sm_90a fatbin
 * (fatbin_sm90a.cu: `-gencode arch=compute_90a,code=sm_90a`, loaded on compute capability 9.0 devices
 * only), picked by name by the host (cuda_prefill.c): ck_attn_prefill_wg_<f16|bf16>_d<D>. */
#include "attn_prefill_sm90a.cuh"

#define CK_PFW_KERNEL(tname, T, D)                                                                        \
    extern "C" __global__ void __launch_bounds__(CK_PFW_WARPS * 32, CK_PFW_BLOCKS_PER_SM(D))              \
        ck_attn_prefill_wg_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                        \
    {                                                                                                     \
        attn_prefill_wg<T, D>(a);                                                                         \
    }

CK_PFW_KERNEL(f16, __half, 64)
CK_PFW_KERNEL(f16, __half, 128)
CK_PFW_KERNEL(f16, __half, 256)
CK_PFW_KERNEL(bf16, __nv_bfloat16, 64)
CK_PFW_KERNEL(bf16, __nv_bfloat16, 128)
CK_PFW_KERNEL(bf16, __nv_bfloat16, 256)
