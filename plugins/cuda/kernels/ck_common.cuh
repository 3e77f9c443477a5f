/* ck_common.cuh — device helpers every kernel shares: element decode/encode for the five storage
 * formats (bit-exact with plugins/common/dtype_convert.c, which the conformance reference mirrors),
 * key ranges, paged K/V row lookups, and the small PTX wrappers (cp.async, ldmatrix, mma.sync). */
#ifndef ATTNRT_CK_COMMON_CUH
#define ATTNRT_CK_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include "../cuda_kernel_args.h"

#define CK_INF __int_as_float(0x7f800000)

/* ---- decode (exact) ------------------------------------------------------------------------- */
__device__ __forceinline__ float ck_f16_bits_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float ck_bf16_bits_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

/* e4m3fn: bias 7, 3 fraction bits, no inf, S.1111.111 is NaN; subnormals m * 2^-9. */
__device__ __forceinline__ float ck_e4m3_to_f32(uint32_t v)
{
    const uint32_t sign = (v & 0x80u) << 24, em = v & 0x7fu;
    uint32_t mag = em < 8u ? __float_as_uint((float)(em & 7u) * 0.001953125f) : (em << 20) + ((127u - 7u) << 23);
    mag = em == 0x7fu ? 0x7fc00000u : mag;
    return __uint_as_float(mag | sign);
}

/* e5m2 is the high byte of the f16 with the same value. */
__device__ __forceinline__ float ck_e5m2_to_f32(uint32_t v) { return ck_f16_bits_to_f32((uint16_t)(v << 8)); }

/* Two fp8 codes (the lower element in the low byte) as two floats, exactly (the same values as
 * ck_e4m3_to_f32 / ck_e5m2_to_f32: every e4m3 and e5m2 value is an f16 value). sm_89+: one
 * cvt.rn.f16x2.e4m3x2 / e5m2x2; older targets: the header's software path. */
__device__ __forceinline__ float2 ck_fp8x2_to_f32x2(uint16_t pair, bool e4m3)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)pair, e4m3 ? __NV_E4M3 : __NV_E5M2);
    return __half22float2(__half2(h));
}

/* The same two codes as the bits of an f16 pair (lower element in the low half): exact, as above. */
__device__ __forceinline__ uint32_t ck_fp8x2_to_h2bits(uint16_t pair, bool e4m3)
{
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)pair, e4m3 ? __NV_E4M3 : __NV_E5M2);
    return (uint32_t)h.x | ((uint32_t)h.y << 16);
}

/* Both fp8 pairs of a register widened to f16x2 (lo: bytes 0-1, hi: bytes 2-3). sm_89+: the 32-bit
 * register split into its 16-bit halves in PTX, so no shift is spent on the high pair. */
template <bool E4M3> __device__ __forceinline__ void ck_fp8x4_to_h2x2(uint32_t x, uint32_t &lo, uint32_t &hi)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (E4M3)
        asm("{ .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e4m3x2 %0, l;\n cvt.rn.f16x2.e4m3x2 %1, h;\n}"
            : "=r"(lo), "=r"(hi) : "r"(x));
    else
        asm("{ .reg .b16 l, h;\n mov.b32 {l, h}, %2;\n cvt.rn.f16x2.e5m2x2 %0, l;\n cvt.rn.f16x2.e5m2x2 %1, h;\n}"
            : "=r"(lo), "=r"(hi) : "r"(x));
#else
    lo = ck_fp8x2_to_h2bits((uint16_t)(x & 0xffffu), E4M3);
    hi = ck_fp8x2_to_h2bits((uint16_t)(x >> 16), E4M3);
#endif
}

/* A value of format `kind` from its raw bits (a 16-bit format's in the low 16, an fp8's in the low 8). */
__device__ __forceinline__ float ck_from_bits(uint32_t r, int kind)
{
    switch (kind) {
    case CK_F32: return __uint_as_float(r);
    case CK_F16: return ck_f16_bits_to_f32((uint16_t)r);
    case CK_BF16: return ck_bf16_bits_to_f32((uint16_t)r);
    case CK_E4M3: return ck_e4m3_to_f32(r);
    default: return ck_e5m2_to_f32(r);
    }
}

/* Element i of a tensor of format `kind` (fp8: the stored value; the caller applies the scale). */
__device__ __forceinline__ float ck_load(const void *p, int64_t i, int kind)
{
    switch (kind) { /* the load of the format's width, then its bits decoded */
    case CK_F32: return ck_from_bits(((const uint32_t *)p)[i], CK_F32);
    case CK_F16: return ck_from_bits(((const uint16_t *)p)[i], CK_F16);
    case CK_BF16: return ck_from_bits(((const uint16_t *)p)[i], CK_BF16);
    case CK_E4M3: return ck_from_bits(((const uint8_t *)p)[i], CK_E4M3);
    default: return ck_from_bits(((const uint8_t *)p)[i], CK_E5M2);
    }
}

/* ---- encode (round to nearest even, one rounding) ------------------------------------------- */
__device__ __forceinline__ uint16_t ck_f32_to_bf16_bits(float f)
{
    const uint32_t bits = __float_as_uint(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((bits >> 16) & 0x8000u) | 0x7fc0u);
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* A small binary format: fraction bits, bias, codes of max / inf (0: saturating) / NaN. */
struct ck_fmt {
    int      man_bits, bias;
    uint32_t sign_bit, max_code, inf_code, nan_code;
    double   max_value;
};

/* Port of dtype_convert.c's encoder: one round-to-nearest-even from the exact binary64 value. */
__device__ __noinline__ uint32_t ck_encode(double x, ck_fmt f)
{
    const uint64_t bits = (uint64_t)__double_as_longlong(x);
    const uint32_t sign = (bits >> 63) ? f.sign_bit : 0u;
    const int biased = (int)((bits >> 52) & 0x7ff);
    const uint64_t frac = bits & ((1ull << 52) - 1);
    if (biased == 0x7ff && frac) return sign | f.nan_code;
    const double a = fabs(x);
    if (a > f.max_value) {
        if (f.inf_code == 0u) return sign | f.max_code;
        const double half_ulp = ldexp(1.0, (int)(f.inf_code >> f.man_bits) - 1 - f.bias - f.man_bits - 1);
        return sign | (a >= f.max_value + half_ulp ? f.inf_code : f.max_code);
    }
    if (biased == 0) return sign;
    const uint64_t mant = frac | (1ull << 52);
    int e = biased - 1023;
    if (e < 1 - f.bias) e = 1 - f.bias;
    const int shift = 1075 + e - f.man_bits - biased;
    if (shift > 54) return sign;
    uint64_t n = mant >> shift;
    const uint64_t rem = mant & ((1ull << shift) - 1);
    const uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (n & 1u))) n++;
    uint32_t code;
    if (n >= (1ull << f.man_bits))
        code = ((uint32_t)(e + f.bias - 1) << f.man_bits) + (uint32_t)n;
    else
        code = (uint32_t)n;
    if (code > f.max_code) code = f.inf_code ? f.inf_code : f.max_code;
    return sign | code;
}

__device__ __forceinline__ ck_fmt ck_fmt_f16() { return ck_fmt{10, 15, 0x8000u, 0x7bffu, 0x7c00u, 0x7e00u, 65504.0}; }
__device__ __forceinline__ ck_fmt ck_fmt_e4m3() { return ck_fmt{3, 7, 0x80u, 0x7eu, 0u, 0x7fu, 448.0}; }
__device__ __forceinline__ ck_fmt ck_fmt_e5m2() { return ck_fmt{2, 15, 0x80u, 0x7bu, 0u, 0x7eu, 57344.0}; }

/* Stores x as element i of an f32 / f16 / bf16 tensor. */
__device__ __forceinline__ void ck_store(void *p, int64_t i, int kind, float x)
{
    switch (kind) {
    case CK_F32: ((float *)p)[i] = x; break;
    case CK_F16: ((__half *)p)[i] = __float2half_rn(x); break;
    default: ((uint16_t *)p)[i] = ck_f32_to_bf16_bits(x); break;
    }
}

/* ---- masks ---------------------------------------------------------------------------------- */
/* Keys a query at position pq may see among [0, seq_len): [*lo, *hi] (empty when lo > hi). Causal
 * keeps p_k <= pq; windows (>= 0) are inclusive counts. Both ends grow with pq. */
__device__ __forceinline__ void ck_key_range(int64_t pq, int64_t seq_len, int causal, int64_t wl, int64_t wr,
                                             int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = seq_len - 1;
    if (wl >= 0 && pq - wl > a) a = pq - wl;
    if (causal && pq < b) b = pq;
    if (wr >= 0 && pq + wr < b) b = pq + wr;
    *lo = a;
    *hi = b;
}

__device__ __forceinline__ int64_t ck_clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* The keys [*kbeg, *kend] an item's tokens pq0 .. pq0 + ntok - 1 see: the union of the first token's and the
 * last token's ranges, cut for split `split` of `num_splits` into whole tiles of `tile` keys (the last
 * split takes the rest). Empty when *kend < *kbeg. */
/* align > 1: the range starts at lo rounded down to a multiple of align (keys below lo are masked by the
 * rows' own ranges), so that every split and tile starts on that grid. */
__device__ __forceinline__ void ck_item_keys(int64_t pq0, int64_t ntok, int64_t S, int causal, int64_t wl, int64_t wr,
                                             int num_splits, int split, int64_t tile, int64_t *kbeg, int64_t *kend,
                                             int64_t align = 1)
{
    int64_t lo, hi, unused;
    ck_key_range(pq0, S, causal, wl, wr, &lo, &unused);
    ck_key_range(pq0 + ntok - 1, S, causal, wl, wr, &unused, &hi);
    if (align > 1 && hi >= lo) lo -= lo % align;
    *kbeg = lo, *kend = hi;
    if (num_splits > 1) {
        const int64_t nkeys = hi >= lo ? hi - lo + 1 : 0;
        const int64_t chunk = ((nkeys + num_splits - 1) / num_splits + tile - 1) / tile * tile;
        *kbeg = lo + (int64_t)split * chunk;
        *kend = min(hi, *kbeg + chunk - 1);
    }
}

/* Request seq's query rows [q_begin, q_begin + L) and key count S, read on the device and clamped to the
 * tensors (a replayed graph may see grown lengths). A: any kernel's args (qsl, seq_lens, their strides). */
struct ck_request_t {
    int64_t q_begin, L, S;
};
template <class A> __device__ __forceinline__ ck_request_t ck_request(const A &a, int64_t seq)
{
    const int64_t q_begin = ck_clamp(a.qsl[seq * a.qsl_st], 0, a.num_tokens);
    const int64_t q_end = ck_clamp(a.qsl[(seq + 1) * a.qsl_st], q_begin, a.num_tokens);
    return {q_begin, q_end - q_begin, ck_clamp(a.seq_lens[seq * a.sl_st], 0, a.bt_cols * a.block_size)};
}

/* ---- paged K/V rows ------------------------------------------------------------------------- */
/* key / block_size without a 64-bit division when both fit in 31 bits (every real cache). */
__device__ __forceinline__ int64_t ck_div_bs(int64_t key, int64_t bs)
{
    if (((uint64_t)key | (uint64_t)bs) >> 31 == 0) return (int64_t)((uint32_t)key / (uint32_t)bs);
    return key / bs;
}

/* One key a thread through the block table, a tile of BN keys a call, tiles in order: the key's (logical
 * block, row in it) advance by (BN / bs, BN % bs) from one division at the start instead of one a tile.
 * The prefill kernels load a tile's block ids a tile before its row addresses, so the block-table read is
 * never a dependent round trip between tiles. A: any kernel's args (block_table, bt_st). */
template <int BN> struct ck_bt_walker {
    int64_t lb, r; /* this thread's key in the next tile: logical block, row in it */
    const int64_t bsz, step_lb, step_r;

    __device__ __forceinline__ ck_bt_walker(int64_t key, int64_t block_size)
        : bsz(block_size), step_lb(BN / block_size), step_r(BN - step_lb * block_size)
    {
        lb = ck_div_bs(key, bsz);
        r = key - lb * bsz;
    }
    /* The block id of this thread's key in the next tile (-1 when !live: no key of this thread, or past the
     * range) and its row (*row); moves to the tile after. */
    template <class A> __device__ __forceinline__ int64_t next(const A &a, int64_t seq, bool live, int64_t *row)
    {
        const int64_t cur = lb;
        *row = r;
        lb += step_lb;
        r += step_r;
        if (r >= bsz) {
            r -= bsz;
            lb++;
        }
        if (!live) return -1;
        return a.block_table[seq * a.bt_st[0] + cur * a.bt_st[1]];
    }
};

/* A K / V pair of byte addresses: one KV head's base in each cache, or one key's rows. */
struct ck_kv_addr_t {
    uint64_t k, v;
};
/* KV head kvh's base in the K and V caches (ES bytes an element). */
template <int ES> __device__ __forceinline__ ck_kv_addr_t ck_kv_heads(const ck_attn_args_t &a, int kvh)
{
    return {(uint64_t)(uintptr_t)a.kc + (uint64_t)(kvh * a.kc_st[2] * ES),
            (uint64_t)(uintptr_t)a.vc + (uint64_t)(kvh * a.vc_st[2] * ES)};
}
/* The K and V rows of row r of cache block blk at the heads `head` (ck_kv_heads); returns whether the key
 * is present: live (in the caller's range) and a block id inside the cache (else a garbage entry). An
 * absent key's addresses are 0, which the copies turn into zeros. */
template <int ES>
__device__ __forceinline__ bool ck_kv_row(const ck_attn_args_t &a, ck_kv_addr_t head, bool live, int64_t blk, int64_t r,
                                          ck_kv_addr_t *row)
{
    row->k = row->v = 0;
    if (!live || blk < 0 || blk >= a.num_blocks) return false;
    row->k = head.k + (uint64_t)((blk * a.kc_st[0] + r * a.kc_st[1]) * ES);
    row->v = head.v + (uint64_t)((blk * a.vc_st[0] + r * a.vc_st[1]) * ES);
    return true;
}

/* ---- programmatic dependent launch (sm_90+; no-ops before, and where a launch did not ask for it) ---- */
/* A mixed batch's prefill kernel says at its start that the decode kernel launched after it may start: the
 * decode blocks then take the SMs its tail leaves idle (they read nothing it writes). */
__device__ __forceinline__ void ck_pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
/* ...and the decode kernel's block 0 waits, before it exits, for that prefill kernel to complete: the decode grid then
 * completes after it, so work that a stream or a graph orders after the run sees both kernels' writes. One block: the
 * rest never wait, and that one holds its SM slot only while the prefill's tail runs. */
__device__ __forceinline__ void ck_pdl_wait_at_exit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* ---- PTX wrappers --------------------------------------------------------------------------- */
__device__ __forceinline__ uint32_t ck_smem(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* A read-only load in a volatile asm: issued where it stands in the program, not sunk by the compiler to just
 * before its first use (where it would queue behind copies issued in between). */
__device__ __forceinline__ float ck_ldg_now_f32(const float *p)
{
    float v;
    asm volatile("ld.global.nc.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ int32_t ck_ldg_now_s32(const int32_t *p)
{
    int32_t v;
    asm volatile("ld.global.nc.b32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

/* 16 bytes global -> shared, bypassing L1; src_bytes 0 writes zeros (and reads nothing). */
__device__ __forceinline__ void ck_cp_async16(uint32_t dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void ck_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void ck_cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ck_ldmatrix_x4(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ck_ldmatrix_x4_trans(uint32_t r[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* D = A B + D, m16n8k16, f32 accumulators; A/B in f16 or bf16. */
template <typename T> __device__ __forceinline__ void ck_mma16816(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void ck_mma16816<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void ck_mma16816<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats as one register of two 16-bit values (the lower column in the low half). */
template <typename T> __device__ __forceinline__ uint32_t ck_pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t ck_pack2<__half>(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t ck_pack2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
}

/* A float as the 16-bit format T (round to nearest even). */
template <typename T> __device__ __forceinline__ T ck_from_f32(float x);
template <> __device__ __forceinline__ __half ck_from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 ck_from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

#endif /* ATTNRT_CK_COMMON_CUH */
