/* Input structs at the public boundary: every struct an engine passes in (args, host batches, queries,
 * configs, capacities) is read once, here, into a full-size copy the runtime owns; the checks and the
 * plugin then see only that copy. The rules are in struct_in.c. */
#ifndef ATTNRT_STRUCT_IN_H
#define ATTNRT_STRUCT_IN_H

#include "internal.h"

/* The largest struct_size the runtime reads: far above any struct of this ABI, so that a struct_size
 * left uninitialised is refused instead of sending the zero-tail check through unrelated memory. */
#define ATTNRT_STRUCT_IN_MAX 4096

/* Reads the caller's `in` into *out (our sizeof, zero beyond the caller's struct_size, struct_size set to
 * our sizeof). `arg` is how messages name the argument: "args", "batch", "host->prefix". On failure *out
 * is unspecified and the message says why. One per input struct of the API: */
#define ATTNRT_STRUCT_IN_DECLARE(name, type) \
    ATTNRT_HIDDEN attnrt_status_t attnrt_##name##_in(const char *fn, const char *arg, const type *in, type *out);
ATTNRT_STRUCT_IN_DECLARE(attention_args, attnrt_attention_args_t)
ATTNRT_STRUCT_IN_DECLARE(batch_host, attnrt_batch_host_t)
ATTNRT_STRUCT_IN_DECLARE(cascade_args, attnrt_cascade_args_t)
ATTNRT_STRUCT_IN_DECLARE(cascade_host, attnrt_cascade_host_t)
ATTNRT_STRUCT_IN_DECLARE(kv_write_args, attnrt_kv_write_args_t)
ATTNRT_STRUCT_IN_DECLARE(merge_args, attnrt_merge_args_t)
ATTNRT_STRUCT_IN_DECLARE(mla_args, attnrt_mla_args_t)
ATTNRT_STRUCT_IN_DECLARE(lightning_args, attnrt_lightning_args_t)
ATTNRT_STRUCT_IN_DECLARE(gated_delta_args, attnrt_gated_delta_args_t)
ATTNRT_STRUCT_IN_DECLARE(state_host, attnrt_state_host_t)
ATTNRT_STRUCT_IN_DECLARE(op_query, attnrt_op_query_t)
ATTNRT_STRUCT_IN_DECLARE(attention_config, attnrt_attention_config_t)
ATTNRT_STRUCT_IN_DECLARE(capacity, attnrt_capacity_t)
#undef ATTNRT_STRUCT_IN_DECLARE

/* A tensor is checked in place (the args keep pointing at the caller's): struct_size at least
 * ATTNRT_TENSOR_STRUCT_SIZE (every field is required), and past our sizeof only zero bytes.
 * `name` as messages name the tensor ("query", "states[1]"); messages read "<name>.struct_size". */
ATTNRT_HIDDEN attnrt_status_t attnrt_tensor_struct_check(const char *fn, const char *name, const attnrt_tensor_t *t);

#endif /* ATTNRT_STRUCT_IN_H */
