/* attn_prefill.cu — the prefill fast path's kernels, loaded by name by the host (cuda_kernel_table.c):
 * ck_attn_prefill_<f16|bf16>_d<64|128|256>; shapes and blocks a SM in cuda_prefill_cfg.h. */
#include "attn_prefill.cuh"

#define CK_PF_KERNEL(tname, T, D)                                                                         \
    extern "C" __global__ void __launch_bounds__(CK_PF_WARPS(D) * 32, CK_PF_BLOCKS_PER_SM(D))              \
        ck_attn_prefill_##tname##_d##D(const __grid_constant__ ck_attn_args_t a)                            \
    {                                                                                                     \
        ck_pdl_launch_dependents();                                                                       \
        attn_prefill<T, D>(a);                                                                            \
    }

CK_PF_EACH(CK_PF_KERNEL)

