/* Lightning attention and the gated delta rule (ABI 1.2): the checks both share. Both read and write
 * per-request states in a pool (state_pool.h) through slot ids checked on the host at plan time. */
#ifndef ATTNRT_LINEAR_H
#define ATTNRT_LINEAR_H

#include "plan.h"
#include "state_pool.h"

/* The tensors both ops have, in the op's own names. */
typedef struct linear_tensors {
    const attnrt_tensor_t *query, *key, *value, *out, *state, *query_start_loc, *state_indices, *has_initial_state;
    int grouped;                /* gated delta: value heads HV may be a multiple of H; lightning: HV == H */
    int state_indices_optional; /* gated delta with speculative decoding: state_indices is not used     */
    int has_spec_args;          /* the op's args have spec_state_indices / num_accepted (gated delta)   */
} linear_tensors_t;

typedef struct linear_shape {
    int64_t T, B, H, HV, Dk, Dv;
    int64_t num_spec;  /* -1: no speculative decoding */
    int has_spec_args; /* from linear_tensors_t: whether the op could have had speculative decoding */
} linear_shape_t;

/* Checks the shared tensors (need_data: a run); fills T, B, H, HV, Dk, Dv and sets num_spec = -1. */
ATTNRT_HIDDEN attnrt_status_t attnrt_linear_check_tensors(const char *fn, const linear_tensors_t *lt, int need_data,
                                                          linear_shape_t *s);
/* The plan-time checks of the host metadata (the runtime's copies of batch and states: struct_in.h)
 * against the shape and the pool: batch->query_start_loc,
 * states (every slot id -1 or allocated in `pool`, no slot shared by two requests, spec rules), and
 * that `state` is the pool's tensor. `pool` must be on `ctx`. */
ATTNRT_HIDDEN attnrt_status_t attnrt_linear_check_host(const char *fn, attnrt_context_t *ctx, const linear_shape_t *s,
                                                       const attnrt_tensor_t *state, const attnrt_batch_host_t *batch,
                                                       const attnrt_state_host_t *states,
                                                       const attnrt_state_pool_t *pool);

#endif /* ATTNRT_LINEAR_H */
