/* cuda_prefill_cfg.h — the shapes of the dedicated prefill kernel (kernels/attn_prefill.cuh), shared by
 * the host (C11: grid, threads, shared memory) and the kernel (CUDA C++), so the two cannot disagree.
 *
 * A block takes CK_PF_ROWS query rows ((token, head) pairs of one KV head, heads inner, as the other
 * tensor-core kernels) and streams keys in tiles of CK_PF_BN through a 2-stage cp.async ring:
 *   D 64 / 128: 4 warps x 32 rows (two m16 tiles a warp share every K/V fragment);
 *   D 256:      8 warps x 16 rows (32 rows would need 256 accumulator registers a thread), 1 block a SM.
 */
#ifndef CK_CUDA_PREFILL_CFG_H
#define CK_CUDA_PREFILL_CFG_H

#include <stdint.h>

#define CK_PF_ROWS 128
#define CK_PF_BN 64 /* keys a tile (128 at D 64 was 4% slower than 64 with a third block a SM) */
/* Blocks a SM the kernel is compiled for (registers: 65536 / (blocks x threads)): D 64 3 x 4 warps at
 * 168 registers (H200: 4% faster than 2 blocks with 128-key tiles), D 128 2 x 4 warps at 255,
 * D 256 1 x 8 warps (its 195 KB of shared memory allow no second). */
#define CK_PF_BLOCKS_PER_SM(d) ((d) == 64 ? 3 : (d) == 128 ? 2 : 1)
#define CK_PF_ADDR_SLOTS 3 /* ring of K/V row addresses: written 2 tiles ahead, read 1 tile ahead and now */
#define CK_PF_WARPS(d) ((d) == 256 ? 8 : 4)
#define CK_PF_MTILES(d) ((d) == 256 ? 1 : 2) /* m16 tiles a warp */

/* Dynamic shared memory: Q [ROWS][d], K and V [2 stages][BN][d] (16-bit elements, 16-byte chunks
 * XOR-swizzled within each row, no padding), the address rings [SLOTS][BN] of K and V, and each row's
 * key range (two ints). */
static inline uint32_t ck_pf_smem_bytes(int d)
{
    return (uint32_t)(CK_PF_ROWS + 4 * CK_PF_BN) * (uint32_t)d * 2u + 2u * CK_PF_ADDR_SLOTS * CK_PF_BN * 8u + CK_PF_ROWS * 8u;
}

#endif /* CK_CUDA_PREFILL_CFG_H */
