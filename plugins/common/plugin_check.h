/* plugin_check.h — shape and dtype checks of op arguments, with messages that name the plugin, the op
 * and the tensor ("cpu mla: kv_cache has shape [4, 16, 2, 576] (or a negative stride), expected
 * [*, *, 1, 576]"). The per-op decoders (plugin_mla.h, plugin_linear.h) call them on plan and run alike,
 * so a run indexes only by shapes it has verified. Sizes are bounded to [0, 2^31) as the runtime bounds
 * them, again here for callers that reach a plugin without the runtime (out-of-tree tools).
 *
 * Every check returns ATTNRT_OK, or an error with its message recorded by plugin_fail. Tensors, `who`
 * ("cpu"), `op` and `name` are borrowed for the call; nothing is kept. */
#ifndef ATTNRT_PLUGIN_CHECK_H
#define ATTNRT_PLUGIN_CHECK_H

#include <stdint.h>

#include "attnrt_plugin.h"
#include "dtype_convert.h"

#define PLUGIN_ANY_DIM (-1)        /* in an expected shape: any size */
#define PLUGIN_MAX_SHAPE INT32_MAX /* the largest size of any dimension */

/* Every size of t (may be NULL) in [0, 2^31); else INVALID_ARGUMENT. */
attnrt_status_t plugin_check_sizes(const attnrt_tensor_t *t, const char *who, const char *op, const char *name);
/* t (required) has `ndim` dims equal to shape (PLUGIN_ANY_DIM: any size), sizes in [0, 2^31), strides >= 0
 * and, when `rows` (data rows: q, k, v, out, caches, states), a unit innermost stride (or an innermost
 * size of 1); else INVALID_ARGUMENT. */
attnrt_status_t plugin_check_shape(const attnrt_tensor_t *t, const char *who, const char *op, const char *name,
                                   int ndim, const int64_t *shape, int rows);
/* t's dtype is f32, f16 or bf16; else UNSUPPORTED. */
attnrt_status_t plugin_check_act(const attnrt_tensor_t *t, const char *who, const char *op, const char *name);
/* t's dtype is {code, bits} (`want` names it: "int32"); else INVALID_ARGUMENT. */
attnrt_status_t plugin_check_dtype(const attnrt_tensor_t *t, const char *who, const char *op, const char *name,
                                   uint8_t code, uint8_t bits, const char *want);
/* A 0/1 flag tensor: bool / uint8 / int8, or int32; else INVALID_ARGUMENT. */
attnrt_status_t plugin_check_flag(const attnrt_tensor_t *t, const char *who, const char *op, const char *name);
/* The output rule of every attnrt op: out has the query's kind, or f32; else UNSUPPORTED. */
attnrt_status_t plugin_check_out_kind(dc_kind_t q, dc_kind_t out, const char *who, const char *op);

/* The activation formats: f32, f16, bf16. */
static inline int plugin_kind_is_act(dc_kind_t k) { return k == DC_F32 || k == DC_F16 || k == DC_BF16; }
static inline int plugin_kind_is_fp8(dc_kind_t k) { return k == DC_E4M3 || k == DC_E5M2; }

#endif /* ATTNRT_PLUGIN_CHECK_H */
