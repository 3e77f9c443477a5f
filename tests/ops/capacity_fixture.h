/* The capacity-plan tests' fixture (test_ops_capacity.c, test_ops_capacity_refusals.c): one context on
 * $ATTNRT_DEVICE (cpu:0 when unset), device tensors of a capacity's shapes (f32, causal, with LSE), a
 * capacity plan over them, and batches written into those same tensors step after step, as an engine
 * replaying a captured graph does. */
#ifndef CAPACITY_FIXTURE_H
#define CAPACITY_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "attnrt.h"

/* A capacity and the model shapes around it. */
typedef struct cap_config {
    int32_t max_seqs, max_blocks, block_size, max_tokens;
    int32_t num_q_heads, num_kv_heads, head_dim, num_blocks;
} cap_config_t;

/* One request of a batch: its new tokens and its keys (the new tokens included). */
typedef struct cap_request {
    int32_t query_len, seq_len;
} cap_request_t;

#define CAP_MAX_SEQS 16

typedef struct cap_fixture {
    const char       *device;
    attnrt_context_t *ctx;
    cap_config_t      cfg;
    /* device buffers of the capacity's shapes, and the tensors over them */
    void             *d_query, *d_key_cache, *d_value_cache, *d_block_table, *d_qsl, *d_seq_lens, *d_out, *d_lse;
    void             *d_ws;
    size_t            ws_bytes;
    attnrt_tensor_t   query, key_cache, value_cache, block_table, qsl, seq_lens, out, lse;
    attnrt_attention_args_t args;
    attnrt_capacity_t       capacity;
    attnrt_plan_t          *plan;
    /* host copies of what the device tensors hold */
    float            *h_query, *h_key_cache, *h_value_cache;
    int32_t          *h_block_table; /* [max_seqs, max_blocks]; -1 where no block is used */
    int32_t           h_qsl[CAP_MAX_SEQS + 1], h_seq_lens[CAP_MAX_SEQS];
    attnrt_batch_host_t batch;       /* the current batch over the host copies */
    uint64_t          rng;
    /* what a test made, released by the teardown */
    attnrt_plan_t    *extra_plans[4];
    attnrt_context_t *other_ctx;
    attnrt_stream_t  *other_stream;
} cap_fixture_t;

/* The configurations: small (max_seqs 8, 16 blocks of 16, max_tokens 64) and long (max_seqs 4, 64 blocks
 * of 16: requests of up to 1,024 keys, which the cpu splits into key ranges). */
extern const cap_config_t cap_small, cap_long;

/* cmocka fixtures: the context, the buffers (inputs random, outputs poisoned) and the capacity plan
 * (capacity fields all 0: the tensors' shapes); the teardown destroys every plan and requires
 * attnrt_close to succeed (BUSY there means something leaked). */
int cap_setup_small(void **state);
int cap_setup_long(void **state);
int cap_teardown(void **state);

/* Fills the host copies for `n` requests (block ids distinct and random, every other table entry -1;
 * query_start_loc repeating its last value and seq_lens 0 past n, as engines pad), fresh random queries
 * and caches, and uploads all of it into the capacity tensors. */
void cap_write_batch(cap_fixture_t *f, const cap_request_t *reqs, int n);
/* Fresh random queries and caches (a new layer), uploaded. */
void cap_refill_inputs(cap_fixture_t *f);
/* NaN-poisons out, lse and the workspace. */
void cap_poison_outputs(cap_fixture_t *f);
/* The batch's tokens (query_start_loc[num_seqs]). */
int32_t cap_batch_tokens(const cap_fixture_t *f);

/* The poison a NaN-poisoned float holds, bit for bit. */
#define CAP_POISON_BITS 0x7fc0dead

/* Runs `call`, which must succeed; prints the message when it does not. */
#define CAP_OK(call)                                                                                    \
    do {                                                                                                \
        attnrt_status_t cap_st_ = (call);                                                               \
        if (cap_st_ != ATTNRT_OK)                                                                       \
            fail_msg("%s returned %s, expected ATTNRT_OK; last error: \"%s\"", #call,                   \
                     attnrt_status_name(cap_st_), attnrt_last_error());                                 \
    } while (0)

/* Keeps a plan for the teardown. */
attnrt_plan_t *cap_keep_plan(cap_fixture_t *f, attnrt_plan_t *plan);

/* The groups (one per file), run by test_ops_capacity.c's main. */
int cap_run_batch_tests(void);
int cap_run_refusal_tests(void);

#endif /* CAPACITY_FIXTURE_H */
