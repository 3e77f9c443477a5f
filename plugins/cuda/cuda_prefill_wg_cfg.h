/* cuda_prefill_wg_cfg.h — the shapes of the Hopper prefill kernel (kernels/attn_prefill_sm90a.cuh, built for
 * sm_90a into the second fatbin), shared by the host (C11: threads, shared memory) and the kernel. Kept
 * apart from cuda_prefill_cfg.h (the FA2 kernel's, a dependency of the main fatbin) so that changing
 * one rebuilds only its own fatbin.
 */
#ifndef ATTNRT_CUDA_PREFILL_WG_CFG_H
#define ATTNRT_CUDA_PREFILL_WG_CFG_H

#include "cuda_prefill_cfg.h"

/* The Hopper kernel (kernels/attn_prefill_sm90a.cuh, sm_90a only): the same CK_PF_ROWS rows a block, two
 * warpgroups of 64 rows each on wgmma (S = Q K^T with Q and K from shared memory, O += P V with P from
 * registers), K/V tiles of CK_PFW_BN(d) keys. Every tile (Q, K, V) is stored as 64-element column blocks
 * of 128-byte rows with the 128-byte swizzle (chunk c of row r at c ^ (r & 7)), wgmma's canonical layout;
 * the region starts 1024-byte aligned (the slack below). */
#define CK_PFW_WARPS 8
#define CK_PFW_BN(d) ((d) == 256 ? 64 : 128) /* D 256: 128 keys would need S (64) + O (128) + P (32) registers */
#define CK_PFW_BLOCKS_PER_SM(d) ((d) == 64 ? 2 : 1) /* registers: 128 a thread at D 64 (H200 run 7: 1 a SM, 32% slower) */
#define CK_PFW_OVERLAP(d) 0 /* 1: O of a tile under the next tile's softmax (attn_prefill_wg's OV) */

static inline uint32_t ck_pfw_smem_bytes(int d)
{
    return 1024u + (uint32_t)(CK_PF_ROWS + 4 * CK_PFW_BN(d)) * (uint32_t)d * 2u +
           2u * CK_PF_ADDR_SLOTS * (uint32_t)CK_PFW_BN(d) * 8u + CK_PF_ROWS * 8u;
}

#endif /* ATTNRT_CUDA_PREFILL_WG_CFG_H */
