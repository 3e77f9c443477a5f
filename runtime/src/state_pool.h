/* State-slot pools (ABI 1.2): per-request recurrent states in one device allocation the runtime owns,
 * with a host-side bitmap of the slots in use. Plans check slot ids against it. */
#ifndef ATTNRT_STATE_POOL_H
#define ATTNRT_STATE_POOL_H

#include <pthread.h>

#include "context.h"

struct attnrt_state_pool {
    attnrt_context_t *ctx;
    attnrt_tensor_t   tensor;     /* the whole pool [num_slots, slot_shape...], contiguous; data owned */
    int32_t           num_slots;
    size_t            slot_bytes;
    pthread_mutex_t   lock;       /* guards used[] and num_free: engines allocate from scheduler threads */
    int32_t           num_free;
    uint64_t         *used;       /* bit s set: slot s is allocated */
};

/* INVALID_ARGUMENT unless `slot` is allocated in `pool`. `arg` names it in the message
 * ("state_indices[3]"): "<fn>: <arg> = 17: slot 17 is not allocated in the pool (freed or never
 * allocated)", "<fn>: <arg> = 900 >= num_slots = 64", "<fn>: <arg> = -2 < 0". */
ATTNRT_HIDDEN attnrt_status_t attnrt_state_pool_check_slot(const char *fn, const char *arg,
                                                           const attnrt_state_pool_t *pool, int32_t slot);
/* INVALID_ARGUMENT "<fn>: state is not the pool's tensor: ..." unless `state` has exactly the pool's data
 * pointer, dtype, shape and (contiguous) strides. */
ATTNRT_HIDDEN attnrt_status_t attnrt_state_pool_check_tensor(const char *fn, const attnrt_state_pool_t *pool,
                                                             const attnrt_tensor_t *state);

#endif /* ATTNRT_STATE_POOL_H */
