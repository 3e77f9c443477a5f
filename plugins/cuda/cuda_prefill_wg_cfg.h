/* cuda_prefill_wg_cfg.h — the shapes of the Hopper prefill kernel (kernels/attn_prefill_sm90a.cuh, built for
 * sm_90a into the second fatbin), shared by the host (C11: threads, shared memory) and the kernel. Kept
 * apart from cuda_prefill_cfg.h (the FA2 kernel's, a dependency of the main fatbin) so that changing
 * one rebuilds only its own fatbin.
 */
#ifndef CK_CUDA_PREFILL_WG_CFG_H
#define CK_CUDA_PREFILL_WG_CFG_H

#include "cuda_prefill_cfg.h"

/* The Hopper kernel (kernels/attn_prefill_sm90a.cuh, sm_90a only): the same CK_PF_ROWS rows a block, two
 * warpgroups of 64 rows each on wgmma (S = Q K^T with Q and K from shared memory, O += P V with P from
 * registers), K/V tiles of CK_PFW_BN(d) keys. Every tile (Q, K, V) is stored as 64-element column blocks
 * of 128-byte rows with the 128-byte swizzle (chunk c of row r at c ^ (r & 7)), wgmma's canonical layout;
 * the region starts 1024-byte aligned (the slack below). */
#define CK_PFW_WARPS 8
/* Keys a tile: 128 at D 64; 64 at D 128 and 256, where S (BN / 2) + O (D / 2) + P (BN / 4) registers
 * must fit two blocks a SM (D 128: 128 registers a thread) or one (D 256). */
#define CK_PFW_BN(d) ((d) == 64 ? 128 : 64)
/* Blocks a SM: two (16 warps) at D 64 and D 128 — the softmax's latency is hidden by the other block's
 * warps (H200, D 128: 431 TFLOP/s with 64-key tiles x 2 blocks, 318 with 128-key tiles x 1; D 64: 1 block 32%
 * slower) — one at D 256 (200 KB of shared memory). */
#define CK_PFW_BLOCKS_PER_SM(d) ((d) == 256 ? 1 : 2)

static inline uint32_t ck_pfw_smem_bytes(int d)
{
    return 1024u + (uint32_t)(CK_PF_ROWS + 4 * CK_PFW_BN(d)) * (uint32_t)d * 2u +
           2u * CK_PF_ADDR_SLOTS * (uint32_t)CK_PFW_BN(d) * 8u + CK_PF_ROWS * 8u;
}

/* The warp-specialized kernel (kernels/attn_prefill_ws_sm90a.cuh): a producer warpgroup (tensor copies of Q into Q
 * slots and of K / V into rings, on mbarriers) and two consumer warpgroups of 64 rows, one persistent block a SM
 * walking the items: 128-key tiles at D 64 / 128, 64 at D 256 (O alone is 128 registers there). */
#define CK_PFS_THREADS 384
#define CK_PFS_KST 2 /* stages of the K ring */
#define CK_PFS_VST 2 /* of the V ring (3 at D 128 measured the same) */
#define CK_PFS_BN(d) ((d) == 256 ? 64 : 128)
/* D 64's long-item form (`_n192`): 192-key tiles, each tile's fixed work (turns, waits, the row max, O's rescale) spread
 * over 1.5x the keys: 5-10 % faster over items of thousands of keys, 6-14 % slower over items of 512-1024, whose masked
 * last tile grows (the plan picks by the keys an item reads: cuda_kernel_table.c). Not at D 128 / 256:
 * S + P + O would outgrow the consumers' registers; not over fp8 caches (4-9 % slower: the widening paces the tiles). */
#define CK_PFS_BN_LONG 192
/* Registers a thread after setmaxnreg, moved between warpgroups within the block's launch allocation (168 a thread x
 * 384: producer + 2 consumers <= 504, else setmaxnreg.inc waits for registers that never come): the producer
 * warpgroup walks the items (their descriptions, row ranges and block ids) in 72 without spilling, the consumers
 * need 216 at D 64 / 128 (ptxas -v: no spills); at D 256 (O alone is 128 registers) they spill 60 bytes. */
#define CK_PFS_LAUNCH_REGS 168
#define CK_PFS_PRODUCER_REGS 72
#define CK_PFS_CONSUMER_REGS 216
/* Over an fp8 cache the producer also widens the landed rows (four rows' loads in flight): at 72 it spilled 128 / 204
 * bytes (D 64 / 128); at 104, with the consumers at 200, nothing (ptxas -v): D 64 4 % faster, D 128 the same. D 256 keeps
 * 72 / 216 (288 bytes of spills): its consumers at 200 spill in the loop, 20 % slower */
#define CK_PFS_PRODUCER_REGS_FP8(d) ((d) == 256 ? 72 : 104)
#define CK_PFS_CONSUMER_REGS_FP8(d) ((d) == 256 ? 216 : 200)
/* Q slots: two (the next item's Q comes in while this one is computed and written), one at D 256 (two do not fit) */
#define CK_PFS_QST(d) ((d) == 256 ? 1 : 2)
/* Over an fp8 cache (`fp8` below) a tile's fp8 rows land where the producer widens them into its ring stage as f16: at D
 * 128 / 256 in the stage's own upper half (a row's fp8 bytes lie where its widened upper columns go), so each stage has a
 * landing mbarrier; at D 64 in a staging slot of the ring (one tile's 8 KB and one mbarrier) */
#define CK_PFS_FP8_LAND(d) ((d) == 64 ? 1 : 2) /* landing slots a ring (D 128 / 256: its stages, CK_PFS_KST = CK_PFS_VST) */

/* the kernel's layout: Q slots, K and V rings, the fp8 staging slots, mbarriers (full and empty of each stage and slot,
 * the fp8 landing slots', each slot's item published), the slots' item descriptions (ck_pf_block_t: 112 bytes), the stages' key counts and flags,
 * the slots' row ranges and key splits, the fp8 form's Q exponents (8 ints); bn: the kernel's keys a tile */
static inline uint32_t ck_pfs_smem_bytes(int d, int fp8, int bn)
{
    const uint32_t st = CK_PFS_KST + CK_PFS_VST, qst = CK_PFS_QST(d);
    return 1024u + (uint32_t)((int)qst * CK_PF_ROWS + (int)st * bn) * (uint32_t)d * 2u + 16u * (st + qst) + 8u * qst +
           112u * qst + 32u * st + 4u * ((st + 1u) & ~1u) + qst * CK_PF_ROWS * 8u + qst * 16u +
           (fp8 ? (d == 64 ? 2u * (uint32_t)bn * (uint32_t)d : 0u) + 16u * (uint32_t)CK_PFS_FP8_LAND(d) + 32u : 0u);
}

#endif /* CK_CUDA_PREFILL_WG_CFG_H */
