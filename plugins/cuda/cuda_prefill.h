/* cuda_prefill.h — the prefill fast path (kernels/attn_prefill.cuh): which kernel, whether a call may
 * take it. Internal to the cuda plugin. */
#ifndef ATTNRT_CUDA_PREFILL_H
#define ATTNRT_CUDA_PREFILL_H

#include "cuda_internal.h"
#include "cuda_prefill_cfg.h"

/* Finds the fast prefill kernels and raises their shared-memory limit: ck_attn_prefill_wg_<t>_d<D>
 * (wgmma) in the sm_90a module when the device has one (compute capability 9.0), else
 * ck_attn_prefill_<t>_d<D> (FA2, mma.sync) in the main module; a kernel the device cannot hold stays
 * NULL; beside the wgmma kernel, its warp-specialized form ck_attn_prefill_ws_<t>_d<D>.
 * ATTNRT_CUDA_PREFILL=fa2 takes the FA2 kernels everywhere; =wg the wgmma kernel without the warp-specialized
 * one; =ws the warp-specialized one wherever it can run (else the plan's rule: cuda_attention_plan.c); =mma
 * leaves them all NULL (every prefill on the general tensor-core kernel). For comparisons and for proving each
 * path. */
attnrt_status_t cuda_prefill_load(cuda_dev_t *d);

/* The fast kernel (wgmma or FA2: they take the same calls) for this call's prefill tiles, or NULL: 16-bit Q
 * with a K/V cache of the same type, Dqk = Dv in {64, 128, 256}, no soft-cap, no ALiBi, a positive (or
 * default) scale. `t`: 0 f16, 1 bf16; `di`: the head-dim index (cuda_mma_dim_index). Sets *smem and
 * *threads only when it returns a kernel (its tiles are CK_PF_ROWS rows). The run still checks the
 * cache's alignment (else SIMT, as before). */
CUfunction cuda_prefill_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, int di, uint32_t *smem,
                               uint32_t *threads);

/* The warp-specialized wgmma kernel for the same calls where the cache can be read by tensor copies (blocks
 * of a multiple of 8 rows, K and V alike), or NULL; *box_rows: the boxes' rows its tensor maps need. The run
 * falls back to cuda_prefill_kernel's where the driver will not encode the maps. */
CUfunction cuda_prefill_ws_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, int di, uint32_t *smem,
                                  uint32_t *threads, int *box_rows);

/* The same kernel's fp8-cache form (ck_attn_prefill_ws_<t>_<e4m3|e5m2>_d<D>) for this call's prefill tiles, or NULL: an
 * e4m3 / e5m2 cache with per-tensor scales (or none) under 16-bit Q, Dqk = Dv in {64, 128, 256}, a GQA group of at most
 * CK_PF_ROWS heads or a multiple of it, the other conditions of cuda_prefill_kernel and cuda_prefill_ws_kernel. Its tiles are CK_PF_ROWS rows, which the general kernel does not
 * take: where the run cannot encode its maps, the SIMT kernel. */
CUfunction cuda_prefill_ws_fp8_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, int di, uint32_t *smem,
                                      uint32_t *threads, int *box_rows);

/* Where cuda_prefill_ws_fp8_kernel takes the call with a bf16 Q at D 128 / 256: its form that reads K by e4m3 products
 * (`_kd`, the same shared memory and threads), or NULL (none built, another Q type, ATTNRT_CUDA_PREFILL_FP8K=widen). The
 * plan takes it by the keys its items read. */
CUfunction cuda_prefill_ws_fp8_kd_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int di);

/* Where cuda_prefill_ws_kernel takes a D 64 call: its long-item form (`_n192`, 192-key tiles, the same threads; its shared
 * memory into *smem), or NULL (none built, ATTNRT_CUDA_PREFILL_TILE=128). The plan takes it by the keys its items read. */
CUfunction cuda_prefill_ws_long_kernel(const cuda_dev_t *d, const attnrt_attention_args_t *a, int t, uint32_t *smem);

#endif /* ATTNRT_CUDA_PREFILL_H */
