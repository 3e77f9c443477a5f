/* Paged attention: argument and batch validation, the capability question, and plans. */
#ifndef ATTNRT_ATTENTION_H
#define ATTNRT_ATTENTION_H

#include "context.h"
#include "signature.h"

typedef struct attention_shape {
    int64_t T, B, Hq, Hkv, Dqk, Dv, num_blocks, block_size, max_blocks;
    int     per_block_scale;
} attention_shape_t;

/* Checks every tensor and option of `a` (the runtime's copy: attnrt_attention_args_in, struct_in.h); fills
 * *shape. need_data: a run (data pointers must be set). */
ATTNRT_HIDDEN attnrt_status_t attnrt_attention_check_args(const char *fn, const attnrt_attention_args_t *a,
                                                          int need_data, attention_shape_t *shape);
/* How messages name a batch and its tensors (the cascade prefix has its own names). */
typedef struct batch_names {
    const char *batch, *seq_lens, *block_table;
} batch_names_t;
ATTNRT_HIDDEN extern const batch_names_t attnrt_batch_names, attnrt_prefix_batch_names;

/* Checks a host query_start_loc [B + 1]: starts at 0, never decreases, ends at num_tokens T. */
ATTNRT_HIDDEN attnrt_status_t attnrt_check_host_query_start_loc(const char *fn, const int32_t *qsl, int64_t B,
                                                                int64_t T);
/* Checks the host batch (the runtime's copy: attnrt_batch_host_in) against the shape: every index a kernel
 * would follow, and that the host block table has the device tensor's row stride. */
ATTNRT_HIDDEN attnrt_status_t attnrt_attention_check_batch(const char *fn, const attention_shape_t *shape,
                                                           const attnrt_batch_host_t *batch, int causal,
                                                           const attnrt_tensor_t *block_table,
                                                           const batch_names_t *names);
/* The capability question for these args. */
ATTNRT_HIDDEN void attnrt_attention_query(const attnrt_attention_args_t *a, const attention_shape_t *shape,
                                          attnrt_op_query_t *q);
/* What a run must match of its plan: every tensor's layout (data ignored) and every option. */
ATTNRT_HIDDEN void attnrt_attention_signature(const attnrt_attention_args_t *a, plan_signature_t *sig);

/* Every tensor of `a` with data lies inside the attnrt_mem_alloc allocation it starts in (when it starts
 * in one). After attnrt_attention_check_args. */
ATTNRT_HIDDEN attnrt_status_t attnrt_attention_check_spans(attnrt_context_t *ctx, const char *fn,
                                                           const attnrt_attention_args_t *a);

/* Asks the context's plugin (capability.c); fails with "<fn>: <device> does not support ...: <reason>". */
ATTNRT_HIDDEN attnrt_status_t attnrt_require_supported(const char *fn, attnrt_context_t *ctx,
                                                       const attnrt_op_query_t *query);

/* Dispatches a merge whose args the runtime built itself (cascade.c); no checks. */
ATTNRT_HIDDEN attnrt_status_t attnrt_merge_states_unchecked(attnrt_context_t *ctx, const attnrt_merge_args_t *args,
                                                            attnrt_stream_t *stream, const char *fn);

#endif /* ATTNRT_ATTENTION_H */
