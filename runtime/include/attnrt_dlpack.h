/*
 * attnrt_dlpack.h — DLPack tensors in, for engines that hold torch / numpy / cupy / jax tensors. Needs
 * <dlpack/dlpack.h> (Debian's libdlpack-dev; any DLPack 0.6 or later: DLTensor's layout is the same).
 *
 * The rule for device memory: a tensor's data may be any address of the context's device that the
 * engine allocated (torch's caching allocator, a slice of a bigger buffer), not only attnrt_mem_alloc
 * memory. libattnrt borrows it for the call and checks the device, dtype, shape and strides; it cannot
 * check the extent of memory it did not allocate, so a view must lie inside its allocation.
 */
#ifndef ATTNRT_DLPACK_H
#define ATTNRT_DLPACK_H

#include <dlpack/dlpack.h>

#include "attnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills *t from `dl` (borrowed for the call; *t then points at dl->data + dl->byte_offset, which must
 * stay alive while t is used). Checked: the device (dl->device.device_type and device_id against the
 * context's device: kDLCPU 0 for cpu, kDLCUDA / kDLCUDAManaged <ordinal> for cuda:<ordinal>, kDLExtDev 0 or
 * kDLCPU 0 for npu_sim:0, whose memory is host memory; a mismatch names both), the dtype
 * (lanes 1, a dtype libattnrt knows: DLPack's codes are ours, fp8 included as DLPack 1.1 numbers them:
 * kDLFloat8_e4m3fn = 10, kDLFloat8_e5m2 = 12), ndim (0 reads as shape [1]; at most ATTNRT_MAX_DIMS),
 * shape (>= 0) and strides (NULL: compact row-major; negative strides are refused). A cache stored as
 * uint8 by the engine becomes fp8 by setting t->dtype afterwards (same size, same bits). */
ATTNRT_API attnrt_status_t attnrt_tensor_from_dlpack(attnrt_context_t *ctx, const DLTensor *dl, attnrt_tensor_t *t);

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_DLPACK_H */
