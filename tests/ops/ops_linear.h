/* What the lightning and gated delta bad-input tests share (test_ops_lightning.c, test_ops_gated_delta.c,
 * test_ops_linear_run.c). Baselines (ops_fixture.h): the fixture's batch of 3 requests over T = 9 tokens;
 * lightning H 2, Dk 8, Dv 4 with a pool of 8 slots (0..5 allocated); gated delta H 2, HV 4, Dk 8, Dv 4
 * with a pool of 16 slots (0..14 allocated); state_indices {0, 1, 2}, has_initial_state {0, 1, 1}; spec:
 * num_spec 4, spec_state_indices = slots 0..14, num_accepted {1, 3, 5}. Every pool's storage is poisoned
 * and compared after each refused call. */
#ifndef OPS_LINEAR_H
#define OPS_LINEAR_H

#include "ops_fixture.h"

/* Re-describes `t` over its data with a new 2-D / 3-D shape (contiguous, its dtype kept). */
static inline void ops_reshape2(attnrt_tensor_t *t, int64_t a, int64_t b)
{
    const int64_t shape[2] = {a, b};
    ops_tensor(t, t->data, t->dtype, 2, shape);
}

static inline void ops_reshape3(attnrt_tensor_t *t, int64_t a, int64_t b, int64_t c)
{
    const int64_t shape[3] = {a, b, c};
    ops_tensor(t, t->data, t->dtype, 3, shape);
}

#endif /* OPS_LINEAR_H */
