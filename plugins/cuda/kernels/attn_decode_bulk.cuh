/* attn_decode_bulk.cuh — the sm_90 copy path of the decode kernel: whole K / V rows by the bulk copy
 * engine (cp.async.bulk, global -> shared) completing on one mbarrier a ring stage.
 *
 * Why: the per-thread 16-byte cp.async path reads at most ~75% of the H200's DRAM rate for the
 * decode kernel whatever its warps do; a bulk copy moves a whole
 * row (256 bytes bf16 / 128 fp8 at D 128) outside the L1 request path.
 *
 * Used for 16-bit caches only (CK_DEC_BULK_KV in cuda_kernel_args.h: fp8's 128-byte rows double the
 * copies a tile and made that kernel instruction-bound).
 * CK_DEC_BULK is 1 where the device code is compiled for sm_90 or later (the sm_90 SASS and the
 * compute_90 PTX of the main fatbin), 0 for sm_80; the host sizes shared memory for either
 * (ck_dec_layout). The wrappers are empty below sm_90: nothing calls them there. */
#ifndef ATTNRT_ATTN_DECODE_BULK_CUH
#define ATTNRT_ATTN_DECODE_BULK_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CK_DEC_BULK 1
#else
#define CK_DEC_BULK 0
#endif

/* An mbarrier of `count` expected arrivals at shared address bar; then fence.mbarrier_init so the copy
 * engine's completions see it initialised. */
__device__ __forceinline__ void ck_mbar_init(uint32_t bar, uint32_t count)
{
#if CK_DEC_BULK
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}

__device__ __forceinline__ void ck_mbar_init_fence()
{
#if CK_DEC_BULK
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void ck_mbar_inval(uint32_t bar)
{
#if CK_DEC_BULK
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
#endif
}

/* One arrival (this thread's, with release semantics for its earlier writes). */
__device__ __forceinline__ void ck_mbar_arrive(uint32_t bar)
{
#if CK_DEC_BULK
    asm volatile("{ .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
#endif
}

/* One arrival that also expects `bytes` more of copy completions in the current phase. */
__device__ __forceinline__ void ck_mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
#if CK_DEC_BULK
    asm volatile("{ .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
                 : "memory");
#endif
}

/* Wait until the phase of the given parity has completed (its copies have landed and are visible).
 * The label is local to the asm's { } scope, so the wrapper can be inlined many times. */
__device__ __forceinline__ void ck_mbar_wait(uint32_t bar, uint32_t parity)
{
#if CK_DEC_BULK
    asm volatile("{\n .reg .pred done;\n"
                 "DEC_WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 " @!done bra DEC_WAIT;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
#endif
}

/* Ordinary shared-memory writes of this thread ordered before later bulk copies into the same bytes. */
__device__ __forceinline__ void ck_fence_proxy_async_smem()
{
#if CK_DEC_BULK
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/* Nonzero in exactly one lane of the (converged) warp. elect.sync rather than `lane == 0`: the compiler
 * then knows a single thread issues the bulk copies and needs no loop over active lanes for their
 * uniform operands. */
__device__ __forceinline__ uint32_t ck_elect_one()
{
    uint32_t one = 0;
#if CK_DEC_BULK
    asm volatile("{\n .reg .pred p;\n .reg .b32 r;\n elect.sync r|p, 0xffffffff;\n selp.u32 %0, 1, 0, p;\n}\n" : "=r"(one));
#endif
    return one;
}

/* `bytes` (a multiple of 16; both addresses 16-byte aligned) from global src to shared dst, counted on
 * bar, when `issue` is nonzero (a predicate, not a branch: no divergence around the copy). */
__device__ __forceinline__ void ck_bulk_g2s(uint32_t dst, uint64_t src, uint32_t bytes, uint32_t bar, uint32_t issue)
{
#if CK_DEC_BULK
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
                 " @p cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n}\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar), "r"(issue)
                 : "memory");
#endif
}

/* One K and one V row of BYTES bytes (an immediate) from global ka / va to shared kdst / vdst, counted on
 * bar. No predicate: the issuing loop of a tile whose keys are all present stays one basic block, so the
 * compiler moves the barrier address into a uniform register once a tile rather than once a copy (run
 * 16's SASS: ~25 instructions a row with predicates, each copy behind its own branch). No "memory"
 * clobber: the copies' shared-memory writes are ordered by the mbarrier wait (which has one), and the
 * loads of the next rows' addresses may be issued ahead of these copies. */
template <int BYTES>
__device__ __forceinline__ void ck_bulk_g2s_kv_row(uint32_t kdst, uint32_t vdst, uint64_t ka, uint64_t va, uint32_t bar)
{
#if CK_DEC_BULK
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%2], %5, [%4];\n"
                 "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%1], [%3], %5, [%4];\n" ::"r"(kdst),
                 "r"(vdst), "l"(ka), "l"(va), "r"(bar), "n"(BYTES));
#endif
}

/* A box of a 4-D tensor map (coordinates innermost first) into shared memory at dst, counted on bar (the
 * tensor-copy form of the decode kernel: one box is a block's rows of one KV head). Elements outside the
 * tensor land as zeros and still count. */
__device__ __forceinline__ void ck_tma_load_4d(uint32_t dst, const void *tmap, int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                                               uint32_t bar)
{
#if CK_DEC_BULK
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
                 "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
                 : "memory");
#endif
}

/* A box of a 3-D tensor map into shared memory at dst, counted on bar (the warp-specialized prefill kernel's Q: a
 * [tokens][heads][D] map, boxes of 64 columns x the item's heads x its tokens). */
__device__ __forceinline__ void ck_tma_load_3d(uint32_t dst, const void *tmap, int32_t c0, int32_t c1, int32_t c2, uint32_t bar)
{
#if CK_DEC_BULK
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
                 "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
#endif
}

#endif /* ATTNRT_ATTN_DECODE_BULK_CUH */
