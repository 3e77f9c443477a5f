/* kv_write.cu — scatters new K/V rows into the paged caches, converting and quantising on the way.
 * One block per token (grid-stride), threads over (head, dim). Slots that are negative (padding) or
 * outside the cache are skipped: the kernel never writes out of bounds, whatever slot_mapping holds.
 * Same-format rows are copied bit for bit; fp8 stores saturate(x / scale) with one rounding from the
 * binary64 quotient, exactly as the reference quantiser does. */
#include "ck_common.cuh"

__device__ __forceinline__ void kvw_row(const ck_kv_side_t &s, int64_t t, int64_t h, int64_t blk, int64_t row,
                                        int d)
{
    const int64_t si = t * s.src_st[0] + h * s.src_st[1] + d;
    const int64_t ci = blk * s.cache_st[0] + row * s.cache_st[1] + h * s.cache_st[2] + d;
    if (s.src_dtype == s.cache_dtype) {
        if (s.src_dtype == CK_F32)
            ((uint32_t *)s.cache)[ci] = ((const uint32_t *)s.src)[si];
        else
            ((uint16_t *)s.cache)[ci] = ((const uint16_t *)s.src)[si];
        return;
    }
    const float x = ck_load(s.src, si, s.src_dtype);
    switch (s.cache_dtype) {
    case CK_F32: ((float *)s.cache)[ci] = x; break;
    case CK_F16: {
        const uint32_t b = __float_as_uint(x);
        const uint16_t nan = (uint16_t)(((b >> 16) & 0x8000u) | 0x7e00u);
        ((uint16_t *)s.cache)[ci] = isnan(x) ? nan : __half_as_ushort(__float2half_rn(x));
        break;
    }
    case CK_BF16: ((uint16_t *)s.cache)[ci] = ck_f32_to_bf16_bits(x); break;
    default: {
        const float sc = s.scale ? s.scale[blk * s.scale_st[0] + h * s.scale_st[1]] : 1.0f;
        const double q = (double)x / (double)sc;
        ((uint8_t *)s.cache)[ci] = (uint8_t)ck_encode(q, s.cache_dtype == CK_E4M3 ? ck_fmt_e4m3() : ck_fmt_e5m2());
        break;
    }
    }
}

extern "C" __global__ void __launch_bounds__(128) ck_kv_write(const ck_kv_write_args_t a)
{
    const int64_t capacity = a.num_blocks * a.block_size;
    for (int64_t t = blockIdx.x; t < a.num_tokens; t += gridDim.x) {
        const int64_t slot = a.slots[t * a.slot_st];
        if (slot < 0 || slot >= capacity) continue; /* padding, or a slot the cache does not have */
        const int64_t blk = slot / a.block_size, row = slot - blk * a.block_size;
        for (int w = 0; w < 2; w++) {
            const ck_kv_side_t &s = a.side[w];
            const int64_t n = a.num_heads * s.dim;
            for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
                const int64_t h = e / s.dim;
                kvw_row(s, t, h, blk, row, (int)(e - h * s.dim));
            }
        }
    }
}
