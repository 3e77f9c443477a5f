/* Shared fixture of the bad-input tests: a context on the cpu plugin and a VALID baseline of every op's
 * arguments (B = 3 mixed prefill/decode, Hq 4, Hkv 2, D 16, block 4, 16 blocks, f32), which each test
 * breaks in exactly one place. Every device buffer is filled (inputs with valid data, outputs, caches
 * and workspaces with a byte pattern) and OPS_REJECTS checks that a refused call wrote none of it. */
#ifndef OPS_FIXTURE_H
#define OPS_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"

/* Baseline sizes. Requests: 0 = prefill of 5 (seq 5), 1 = decode (seq 9), 2 = chunked prefill of 3 (seq 7). */
enum {
    OPS_B = 3,
    OPS_T = 9,
    OPS_HQ = 4,
    OPS_HKV = 2,
    OPS_D = 16,
    OPS_BLOCK = 4,
    OPS_NUM_BLOCKS = 16,
    OPS_MAX_BLOCKS = 4,        /* block_table columns                              */
    OPS_PREFIX_LEN = 8,        /* cascade: shared prefix of 8 tokens in blocks 7, 8 */
    OPS_PREFIX_BLOCKS = 2,
    OPS_SCALE_ELEMS = 64,      /* room for any scale tensor a test describes        */
};

/* Device buffers, each filled at setup and compared after every refused call. */
enum ops_buf {
    OB_QUERY, OB_KEY_CACHE, OB_VALUE_CACHE, OB_BLOCK_TABLE, OB_QSL, OB_SEQ_LENS, OB_OUT, OB_LSE,
    OB_ALIBI, OB_SINKS, OB_KEY_SCALE, OB_VALUE_SCALE,
    OB_KEY, OB_VALUE, OB_SLOT_MAPPING,                /* kv_write                  */
    OB_STATE0, OB_STATE1, OB_STATE_LSE0, OB_STATE_LSE1, /* merge inputs              */
    OB_PREFIX_BLOCK_TABLE, OB_PREFIX_SEQ_LENS,        /* cascade                   */
    OB_WORKSPACE,                                     /* big enough for any plan   */
    OB_COUNT
};

typedef struct ops_fixture {
    attnrt_context_t *ctx;
    void             *dev[OB_COUNT];
    size_t            bytes[OB_COUNT];
    unsigned char    *snap[OB_COUNT]; /* host copies taken by ops_snapshot */

    /* tensors over the buffers (tests edit these freely; each test gets a fresh fixture) */
    attnrt_tensor_t query, key_cache, value_cache, block_table, qsl, seq_lens, out, lse, alibi, sinks, key_scale,
        value_scale, key, value, slot_mapping, states[2], state_lses[2], prefix_block_table, prefix_seq_lens;

    /* host batch metadata */
    int32_t             h_qsl[OPS_B + 1], h_seq_lens[OPS_B], h_block_table[OPS_B * OPS_MAX_BLOCKS];
    int32_t             h_prefix_seq_lens[OPS_B], h_prefix_block_table[OPS_PREFIX_BLOCKS];
    int64_t             h_slots[OPS_T];
    attnrt_batch_host_t batch, prefix_batch;

    /* the baselines: attention (causal, lse and the rest absent), kv_write, 2-way merge, cascade */
    attnrt_attention_args_t att;
    attnrt_kv_write_args_t  kvw;
    const attnrt_tensor_t  *merge_states[2], *merge_lses[2];
    attnrt_merge_args_t     merge;
    attnrt_cascade_args_t   cas;
    attnrt_cascade_host_t   cas_host;

    /* what a test made, released by the teardown only after it checked that attnrt_close succeeds */
    attnrt_plan_t     *plans[4];
    attnrt_context_t  *other_ctx;
    attnrt_stream_t   *other_stream;
} ops_fixture_t;

/* cmocka fixtures: setup opens a context on the cpu plugin and builds the baseline; teardown frees the
 * buffers and then requires attnrt_close to succeed (ATTNRT_ERR_BUSY there means a plan leaked). */
int ops_setup(void **state);
int ops_teardown(void **state);

/* Copies every buffer to the host, to compare after the call. */
void ops_snapshot(ops_fixture_t *f);
/* Fails the test when any byte of any buffer differs from the snapshot; `what` names the call. */
void ops_assert_untouched(ops_fixture_t *f, const char *what);

/* A plan the test needs to succeed (remembered for the teardown); fails the test with the message if not. */
attnrt_plan_t *ops_attention_plan_ok(ops_fixture_t *f);
attnrt_plan_t *ops_cascade_plan_ok(ops_fixture_t *f);
/* Keeps a plan for the teardown to destroy. */
attnrt_plan_t *ops_keep_plan(ops_fixture_t *f, attnrt_plan_t *plan);
/* A stream of a second context on the same device (closed by the teardown). */
attnrt_stream_t *ops_foreign_stream(ops_fixture_t *f);

/* Re-describes `t` as a contiguous tensor over the same data (shape `shape` of `ndim` dims, `dtype`). */
void ops_retensor(attnrt_tensor_t *t, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape);
/* Makes both caches fp8 e4m3 over the same buffers (the scale tensors stay absent). */
void ops_make_fp8_caches(ops_fixture_t *f);
/* Describes key_scale / value_scale over their buffers (all 1.0) with the given shape. */
void ops_set_scale(attnrt_tensor_t *t, int32_t ndim, const int64_t *shape);

/* Called by OPS_REJECTS: status, message (non-empty, one line, naming `fn` and containing `needle`),
 * then every buffer unchanged. */
void ops_check_rejected(ops_fixture_t *f, const char *call, const char *fn, attnrt_status_t got,
                        attnrt_status_t expected, const char *needle, const char *file, int line);

/* Runs `call`, which must fail with `expected`, a message from `fn` containing `needle`, and no write. */
#define OPS_REJECTS(f, fn, call, expected, needle)                                                   \
    do {                                                                                             \
        ops_snapshot(f);                                                                             \
        attnrt_status_t ops_st_ = (call);                                                            \
        ops_check_rejected((f), #call, (fn), ops_st_, (expected), (needle), __FILE__, __LINE__);      \
    } while (0)

/* Runs `call`, which must succeed; prints the message when it does not. */
#define OPS_OK(call)                                                                                 \
    do {                                                                                             \
        attnrt_status_t ops_st_ = (call);                                                            \
        if (ops_st_ != ATTNRT_OK)                                                                    \
            fail_msg("%s returned %s, expected ATTNRT_OK; last error: \"%s\"", #call,                \
                     attnrt_status_name(ops_st_), attnrt_last_error());                              \
    } while (0)

/* A plan call that must fail: as OPS_REJECTS, and *plan must keep the sentinel. A plan wrongly made is
 * kept for the teardown, so the test fails on the missing check, not on a leak. */
#define OPS_PLAN_REJECTS(f, fn, plan_fn, ctx, args, host, expected, needle)                          \
    do {                                                                                             \
        attnrt_plan_t *ops_p_ = OPS_SENTINEL_PLAN;                                                   \
        ops_snapshot(f);                                                                             \
        attnrt_status_t ops_st_ = plan_fn((ctx), (args), (host), &ops_p_);                            \
        if (ops_st_ == ATTNRT_OK && ops_p_ && ops_p_ != OPS_SENTINEL_PLAN) ops_keep_plan((f), ops_p_);  \
        ops_check_rejected((f), #plan_fn "(" #ctx ", " #args ", " #host ", &plan)", (fn), ops_st_,      \
                           (expected), (needle), __FILE__, __LINE__);                                 \
        if (ops_p_ != OPS_SENTINEL_PLAN) fail_msg("%s:%d: refused " #plan_fn " wrote *plan", __FILE__, __LINE__); \
    } while (0)

#define OPS_ATTENTION_PLAN_REJECTS(f, ctx, args, batch, expected, needle)                            \
    OPS_PLAN_REJECTS(f, "attnrt_attention_plan", attnrt_attention_plan, ctx, args, batch, expected, needle)
#define OPS_CASCADE_PLAN_REJECTS(f, ctx, args, host, expected, needle)                               \
    OPS_PLAN_REJECTS(f, "attnrt_cascade_plan", attnrt_cascade_plan, ctx, args, host, expected, needle)

/* A pointer value no call may write into a plan out-parameter when it fails. */
#define OPS_SENTINEL_PLAN ((attnrt_plan_t *)(uintptr_t)0x5e5e5e5e)

/* One test with the fixture. */
#define OPS_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_setup, ops_teardown)

/* The groups, one per file, run by test_ops_main.c. */
int ops_run_tensor_tests(void);
int ops_run_kv_write_tests(void);
int ops_run_attention_plan_tests(void);
int ops_run_attention_batch_tests(void);
int ops_run_attention_run_tests(void);
int ops_run_merge_tests(void);
int ops_run_cascade_tests(void);

#endif /* OPS_FIXTURE_H */
