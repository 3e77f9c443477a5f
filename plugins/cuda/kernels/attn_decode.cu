/* attn_decode.cu — the decode family's translation unit (its own fatbin, so that nvcc compiles it beside
 * the attention family instead of after it: these instances are most of the kernels' compile time): the
 * tensor-core decode kernels the host loads by name (cuda_kernel_table.c lists each),
 * ck_attn_mma_decode_<f16|bf16>_<kv16|fp8>_d<64|128|256>[form] (attn_decode.cuh: keys in the mma's M dimension,
 * a cp.async ring per warp, split-KV merged by the last block of each row tile). Every kernel ends in
 * ck_pdl_wait_at_exit: a mixed batch launches it to overlap its prefill kernel (cuda_launch_overlapped). */
#include "attn_decode.cuh"

#define CK_DEC_KERNEL(tname, T, kvname, FP8, D)                                                               \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, (D) == 256 ? 1 : 2)                      \
        ck_attn_mma_decode_##tname##_##kvname##_d##D(const __grid_constant__ ck_attn_args_t a)                \
    {                                                                                                         \
        attn_decode_entry<T, FP8, D>(a);                                                                      \
        ck_pdl_wait_at_exit();                                                                                \
    }

/* fp8 D 128 takes the split refill (attn_decode.cuh's CPS 4): 2-3.5 % faster than the refill before the wait */
#define CK_DEC_ALL_D(tname, T, kvname, FP8)                                                                   \
    CK_DEC_KERNEL(tname, T, kvname, FP8, 64)                                                                  \
    CK_DEC_KERNEL(tname, T, kvname, FP8, 128)                                                                 \
    CK_DEC_KERNEL(tname, T, kvname, FP8, 256)
#define CK_DEC_FP8_KERNELS(tname, T)                                                                          \
    CK_DEC_KERNEL(tname, T, fp8, true, 64)                                                                    \
    CK_DEC_KERNEL(tname, T, fp8, true, 256)                                                                   \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, 2)                                        \
        ck_attn_mma_decode_##tname##_fp8_d128(const __grid_constant__ ck_attn_args_t a)                       \
    {                                                                                                         \
        attn_decode_entry<T, true, 128, 4>(a);                                                                \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_ALL_D(f16, __half, kv16, false)
CK_DEC_FP8_KERNELS(f16, __half)
CK_DEC_ALL_D(bf16, __nv_bfloat16, kv16, false)
CK_DEC_FP8_KERNELS(bf16, __nv_bfloat16)

/* fp8 D 64 with 256-byte L2 fetches (attn_decode.cuh's L2W; `_w` suffix), for NHD caches whose blocks read
 * at most 4096 keys (the plan's choice: 7-8 % faster there; at D 128 within +-1.3 %, not built) */
#define CK_DEC_L2W_KERNEL(tname, T)                                                                           \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, 2)                                        \
        ck_attn_mma_decode_##tname##_fp8_d64_w(const __grid_constant__ ck_attn_args_t a)                      \
    {                                                                                                         \
        attn_decode_entry<T, true, 64, 0, true>(a);                                                           \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_L2W_KERNEL(f16, __half)
CK_DEC_L2W_KERNEL(bf16, __nv_bfloat16)

/* The tensor-copy form (attn_decode.cuh's TMAQ; `_t` suffix): a tile's rows of each block as one box a 128-byte
 * column block, for D 64 (fp8: 64-byte rows, the copy engine's 64-byte swizzle; 16-bit: 128-byte rows and
 * swizzle), 16-bit D 128 / 256 (two / four column blocks) and fp8 D 128 at two tile geometries (below); the
 * plan's choice where the block size is a multiple of 8 and the driver encodes tensor maps. The host loads
 * them on compute capability 9.0 and later only, so their sm_80 image is a trap (not a second copy of the
 * cp.async form that nothing launches: compile time). */
template <typename T, bool FP8, int D, int TKPW = 0, int TSTAGES = 0, int NWT = 0>
__device__ __forceinline__ void attn_decode_tma_entry(const ck_attn_args_t &a)
{
    if constexpr (CK_DEC_BULK)
        attn_decode_entry<T, FP8, D, 0, false, true, TKPW, TSTAGES, NWT>(a);
    else
        __trap();
}

#define CK_DEC_TMA_KERNEL(tname, T, kvname, FP8, D)                                                           \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, (D) == 256 ? 1 : 2)                      \
        ck_attn_mma_decode_##tname##_##kvname##_d##D##_t(const __grid_constant__ ck_attn_args_t a)           \
    {                                                                                                         \
        attn_decode_tma_entry<T, FP8, D>(a);                                                                  \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_TMA_KERNEL(f16, __half, fp8, true, 64)
CK_DEC_TMA_KERNEL(bf16, __nv_bfloat16, fp8, true, 64)
CK_DEC_TMA_KERNEL(f16, __half, kv16, false, 64)
CK_DEC_TMA_KERNEL(bf16, __nv_bfloat16, kv16, false, 64)
CK_DEC_TMA_KERNEL(f16, __half, kv16, false, 128)
CK_DEC_TMA_KERNEL(bf16, __nv_bfloat16, kv16, false, 128)
CK_DEC_TMA_KERNEL(f16, __half, kv16, false, 256)
CK_DEC_TMA_KERNEL(bf16, __nv_bfloat16, kv16, false, 256)

/* fp8 D 128 by tensor copies at the two geometries of cuda_kernel_args.h (`_t32`: 32-key tiles, 3 stages, for
 * blocks of at most 2048 keys; `_t16`: 16-key tiles, 4 stages, for blocks of 8192 keys and more; between them
 * the plan keeps the cp.async kernel) */
#define CK_DEC_TMA_FP8_KERNEL(tname, T, K)                                                                    \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, 2)                                        \
        ck_attn_mma_decode_##tname##_fp8_d128_t##K(const __grid_constant__ ck_attn_args_t a)                  \
    {                                                                                                         \
        attn_decode_tma_entry<T, true, 128, CK_DEC_T##K##_KPW, CK_DEC_T##K##_STAGES>(a);                      \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_TMA_FP8_KERNEL(f16, __half, 32)
CK_DEC_TMA_FP8_KERNEL(bf16, __nv_bfloat16, 32)
CK_DEC_TMA_FP8_KERNEL(f16, __half, 16)
CK_DEC_TMA_FP8_KERNEL(bf16, __nv_bfloat16, 16)

/* Blocks of 2 warps, 4 an SM (the same 8 warps an SM), for the fp8 decode kernels (D 128 and 64), whose blocks stream
 * half the bytes a key of the 16-bit ones: a batch of more row tiles than the 4-warp kernels hold at once runs in half
 * the rounds, so half the lockstep block starts and ends (the plan's choice for unsplit batches whose rounds this does
 * not lengthen; 16-bit D 64 / 128 measured no faster). `_fp8_d128_w2` is the cp.async fp8 D 128 kernel's form,
 * `_t32_w2` `_t32`'s, `_t_w2` fp8 D 64's `_t`. */
#define CK_DEC_W2_KERNELS(tname, T)                                                                           \
    extern "C" __global__ void __launch_bounds__(2 * 32, 4)                                                  \
        ck_attn_mma_decode_##tname##_fp8_d128_w2(const __grid_constant__ ck_attn_args_t a)                 \
    {                                                                                                         \
        attn_decode_entry<T, true, 128, 4, false, false, 0, 0, 2>(a);                                         \
        ck_pdl_wait_at_exit();                                                                                \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(2 * 32, 4)                                                  \
        ck_attn_mma_decode_##tname##_fp8_d128_t32_w2(const __grid_constant__ ck_attn_args_t a)                \
    {                                                                                                         \
        attn_decode_tma_entry<T, true, 128, CK_DEC_T32_KPW, CK_DEC_T32_STAGES, 2>(a);                        \
        ck_pdl_wait_at_exit();                                                                               \
    }

CK_DEC_W2_KERNELS(f16, __half)
CK_DEC_W2_KERNELS(bf16, __nv_bfloat16)

#define CK_DEC_W2_D64_KERNEL(tname, T, kvname, FP8)                                                           \
    extern "C" __global__ void __launch_bounds__(2 * 32, 4)                                                  \
        ck_attn_mma_decode_##tname##_##kvname##_d64_t_w2(const __grid_constant__ ck_attn_args_t a)           \
    {                                                                                                         \
        attn_decode_tma_entry<T, FP8, 64, 0, 0, 2>(a);                                                        \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_W2_D64_KERNEL(f16, __half, fp8, true)
CK_DEC_W2_D64_KERNEL(bf16, __nv_bfloat16, fp8, true)

/* Blocks of 8 warps, one an SM, for 16-bit D 128 by tensor copies (`_t_w8`): where a batch's 4-warp blocks leave every
 * SM with one block at most (few row tiles in their most key splits: one long request, MQA or a tensor-parallel
 * shard of one KV head), twice the warps stream each block's keys, with no more partials to merge; where they are
 * short, one round of these in longer splits (the plan's rule: cuda_kernel_table.c). */
#define CK_DEC_W8_KERNEL(tname, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(8 * 32, 1)                                                  \
        ck_attn_mma_decode_##tname##_kv16_d128_t_w8(const __grid_constant__ ck_attn_args_t a)                \
    {                                                                                                         \
        attn_decode_tma_entry<T, false, 128, 0, 0, 8>(a);                                                     \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_W8_KERNEL(f16, __half)
CK_DEC_W8_KERNEL(bf16, __nv_bfloat16)

/* Wide GQA groups (more than 16 query heads a KV head: MQA and its tensor-parallel shards), 16-bit caches, D 64 / 128:
 * 32-row tiles of one token's heads (attn_decode_wide_entry), `_r32` in the plain form (bulk copies on sm_90, cp.async
 * on sm_80) and `_t_r32` by tensor copies (sm_90; the plan's choice, the plain one its fallback when a run's maps
 * cannot be encoded). */
#define CK_DEC_WIDE_KERNELS(tname, T, D)                                                                      \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, 2)                                        \
        ck_attn_mma_decode_##tname##_kv16_d##D##_r32(const __grid_constant__ ck_attn_args_t a)                \
    {                                                                                                         \
        attn_decode_wide_entry<T, D, false>(a);                                                               \
        ck_pdl_wait_at_exit();                                                                                \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(CK_DEC_WARPS * 32, 2)                                        \
        ck_attn_mma_decode_##tname##_kv16_d##D##_t_r32(const __grid_constant__ ck_attn_args_t a)              \
    {                                                                                                         \
        if constexpr (CK_DEC_BULK)                                                                            \
            attn_decode_wide_entry<T, D, true>(a);                                                            \
        else                                                                                                  \
            __trap();                                                                                         \
        ck_pdl_wait_at_exit();                                                                                \
    }

CK_DEC_WIDE_KERNELS(f16, __half, 64)
CK_DEC_WIDE_KERNELS(bf16, __nv_bfloat16, 64)
CK_DEC_WIDE_KERNELS(f16, __half, 128)
CK_DEC_WIDE_KERNELS(bf16, __nv_bfloat16, 128)
