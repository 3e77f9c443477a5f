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

    /* the extension (ops_fixture_ext.c): more device regions compared after every refused call (its
     * buffers and the storage of every state pool a test made), and the MLA / lightning / gated delta baselines */
    struct ops_watch {
        const char    *name;
        void          *dev;
        size_t         bytes;
        unsigned char *snap;
        int            owned;  /* a buffer the fixture allocated (freed by the teardown); else pool storage */
    } watch[32];
    int           num_watch;
    struct ops_ext *x;
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

/* Called by OPS_REJECTS: status, message (non-empty, one line, naming `fn` and containing `needle`;
 * a needle "a&&b" needs both a and b), then every buffer unchanged. */
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

/* ================================================================================================ */
/* The extension: state pools, MLA, lightning, gated delta, device options (ops_fixture_ext.c).      */
/* Baselines over the fixture's batch (B 3, T 9, query_start_loc {0, 5, 6, 9}, seq_lens {5, 9, 7}):  */
/*  - MLA: query [9, 4, 24], latent cache [16, 4, 1, 24] f32, out = the fixture's out [9, 4, 16],   */
/*    the fixture's block_table / query_start_loc / seq_lens, scale 0.25, causal (dense). Sparse:    */
/*    indices [9, 4] with indices_host, causal 0.                                                     */
/*  - lightning: q, k [9, 2, 8], v, out [9, 2, 4], slopes [2], pool [8 slots, 2, 8, 4] f32 with      */
/*    slots 0..5 allocated, state_indices {0, 1, 2}, has_initial_state {0, 1, 1} (bool).             */
/*  - gated delta: q, k as lightning, v, out [9, 4, 4], g, beta [9, 4], pool [16 slots, 4, 8, 4] f32 */
/*    with slots 0..14 allocated, state_indices {0, 1, 2}, has_initial_state {0, 1, 1} (u8); spec:    */
/*    num_spec 4, spec_state_indices [3, 5] = slots 0..14, num_accepted {1, 3, 5}.                   */
/* ================================================================================================ */
enum {
    OPS_MLA_KV_DIM = 24,
    OPS_MLA_V_DIM = OPS_D,     /* the fixture's out serves MLA                       */
    OPS_MLA_TOPK = 4,
    OPS_LIN_H = 2,
    OPS_LIN_DK = 8,
    OPS_LIN_DV = 4,
    OPS_LIN_SLOTS = 8,
    OPS_LIN_ALLOCATED = 6,     /* slots 0..5; 6 and 7 stay free                      */
    OPS_GDN_HV = 4,
    OPS_GDN_SLOTS = 16,
    OPS_GDN_ALLOCATED = 15,    /* slots 0..14; 15 stays free                         */
    OPS_GDN_NUM_SPEC = 4,
    OPS_MAX_POOLS = 8,
};

typedef struct ops_ext {
    /* MLA (ops_ext_setup_mla) */
    attnrt_tensor_t   mla_query, mla_cache, indices, kv_scale;
    int32_t           h_indices[OPS_T * OPS_MLA_TOPK];
    attnrt_mla_args_t mla;

    /* lightning and gated delta (ops_ext_setup_linear) */
    attnrt_state_pool_t *pools[OPS_MAX_POOLS]; /* every pool a test made; the teardown destroys them */
    attnrt_state_pool_t *lin_pool, *gdn_pool;
    attnrt_tensor_t      lq, lk, lv, lout, slopes, lin_state, lin_state_indices, lin_has_init;
    attnrt_tensor_t      gq, gk, gv, g, beta, gout, gdn_state, gdn_state_indices, gdn_has_init, spec, num_accepted;
    int32_t              h_lin_state_indices[OPS_B], h_gdn_state_indices[OPS_B];
    uint8_t              h_lin_has_init[OPS_B], h_gdn_has_init[OPS_B];
    int32_t              h_spec[OPS_B * (OPS_GDN_NUM_SPEC + 1)], h_num_accepted[OPS_B];
    attnrt_batch_host_t  lin_batch; /* num_seqs, query_start_loc, seq_lens; no block_table */
    attnrt_state_host_t  lin_states, gdn_states;
    attnrt_lightning_args_t   lin;
    attnrt_gated_delta_args_t gdn; /* without spec; ops_use_spec adds it */
} ops_ext_t;

/* cmocka fixtures of the extension's groups: the plain fixture plus (mla) the MLA baseline or (linear) the
 * lightning and gated-delta baselines with their pools. The teardown destroys every pool, frees the
 * extension's buffers and then does what ops_teardown does (attnrt_close must succeed). */
int ops_ext_setup(void **state);
int ops_ext_setup_mla(void **state);
int ops_ext_setup_linear(void **state);
int ops_ext_teardown(void **state);
#define OPS_EXT_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_ext_setup, ops_ext_teardown)
#define OPS_MLA_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_ext_setup_mla, ops_ext_teardown)
#define OPS_LINEAR_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_ext_setup_linear, ops_ext_teardown)

/* Adds a device region to what ops_snapshot / ops_assert_untouched compare. */
void ops_watch(ops_fixture_t *f, const char *name, void *dev, size_t bytes);
/* Stops comparing a region (a pool the test destroyed). */
void ops_unwatch(ops_fixture_t *f, const void *dev);
/* A device buffer of `bytes`, watched, freed by the teardown. */
void *ops_buffer(ops_fixture_t *f, const char *name, size_t bytes);
/* Fills a device buffer: the poison pattern, or deterministic inputs in [-1, 1). */
void ops_poison(ops_fixture_t *f, void *dev, size_t bytes);
/* Describes `t` as a contiguous tensor by hand (any dtype code, even one attnrt_tensor_init refuses). */
void ops_tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape);
/* A pool that must be made: created, slots 0..num_alloc-1 allocated, storage poisoned and watched,
 * remembered for the teardown; *tensor (may be NULL) gets its tensor. */
attnrt_state_pool_t *ops_pool(ops_fixture_t *f, attnrt_dtype_t dtype, int32_t slot_ndim, const int64_t *slot_shape,
                                int32_t num_slots, int32_t num_alloc, attnrt_tensor_t *tensor);
/* Keeps a pool the test made itself (e.g. on another context) for the teardown to destroy. */
void ops_keep_pool(ops_fixture_t *f, attnrt_state_pool_t *pool);
/* Destroys a pool the test made with ops_pool (and stops watching it). */
void ops_pool_destroy(ops_fixture_t *f, attnrt_state_pool_t *pool);
/* Bytes of a pool's storage, from its tensor. */
size_t ops_pool_bytes(const attnrt_tensor_t *t);
/* Makes the MLA baseline sparse (indices + indices_host, causal 0). */
void ops_use_sparse(ops_fixture_t *f);
/* Makes the gated-delta baseline speculative (spec_state_indices + num_accepted, num_spec 4). */
void ops_use_spec(ops_fixture_t *f);

/* Plans the MLA, lightning and gated delta baselines must make (remembered for the teardown). */
attnrt_plan_t *ops_mla_plan_ok(ops_fixture_t *f);
attnrt_plan_t *ops_lightning_plan_ok(ops_fixture_t *f);
attnrt_plan_t *ops_gated_delta_plan_ok(ops_fixture_t *f);
/* Workspace bytes of a plan (fails the test when the call fails). */
size_t ops_workspace_of(attnrt_plan_t *plan);

/* As OPS_REJECTS, but either status is right (e.g. UNSUPPORTED or INVALID_ARGUMENT). */
#define OPS_REJECTS_EITHER(f, fn, call, expected_a, expected_b, needle)                               \
    do {                                                                                              \
        ops_snapshot(f);                                                                              \
        attnrt_status_t ops_st_ = (call);                                                             \
        ops_check_rejected((f), #call, (fn), ops_st_, ops_st_ == (expected_b) ? (expected_b) : (expected_a), \
                           (needle), __FILE__, __LINE__);                                             \
    } while (0)

#define OPS_MLA_PLAN_REJECTS(f, ctx, args, batch, expected, needle) \
    OPS_PLAN_REJECTS(f, "attnrt_mla_plan", attnrt_mla_plan, ctx, args, batch, expected, needle)

/* A lightning / gated-delta plan call that must fail; *plan must keep the sentinel. */
#define OPS_STATE_PLAN_REJECTS(f, fn, plan_fn, ctx, args, batch, states, pool, expected, needle)       \
    do {                                                                                              \
        attnrt_plan_t *ops_p_ = OPS_SENTINEL_PLAN;                                                    \
        ops_snapshot(f);                                                                              \
        attnrt_status_t ops_st_ = plan_fn((ctx), (args), (batch), (states), (pool), &ops_p_);          \
        if (ops_st_ == ATTNRT_OK && ops_p_ && ops_p_ != OPS_SENTINEL_PLAN) ops_keep_plan((f), ops_p_);  \
        ops_check_rejected((f), #plan_fn "(" #ctx ", " #args ", " #batch ", " #states ", " #pool ", &plan)", \
                           (fn), ops_st_, (expected), (needle), __FILE__, __LINE__);                  \
        if (ops_p_ != OPS_SENTINEL_PLAN) fail_msg("%s:%d: refused " #plan_fn " wrote *plan", __FILE__, __LINE__); \
    } while (0)

/* The extension's groups. */
int ops_run_state_pool_tests(void);
int ops_run_mla_plan_tests(void);
int ops_run_mla_run_tests(void);
int ops_run_lightning_tests(void);
int ops_run_gated_delta_tests(void);
int ops_run_linear_run_tests(void);
int ops_run_options_tests(void);

#endif /* OPS_FIXTURE_H */
