/* Bad inputs of the state-slot pools (ABI 1.2): attnrt_state_pool_create / _destroy / _tensor / _usage,
 * attnrt_state_slot_alloc / _free / _zero / _copy, and attnrt_close while a pool lives. Every pool a
 * test makes through ops_pool has its storage poisoned and compared after each refused call. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops_fixture.h"

static const char PC[] = "attnrt_state_pool_create";
static const char PT[] = "attnrt_state_pool_tensor";
static const char PU[] = "attnrt_state_pool_usage";
static const char SA[] = "attnrt_state_slot_alloc";
static const char SF[] = "attnrt_state_slot_free";
static const char SZ[] = "attnrt_state_slot_zero";
static const char SC[] = "attnrt_state_slot_copy";

#define POOL_SENTINEL ((attnrt_state_pool_t *)(uintptr_t)0x5e5e5e5e)

/* A pool of 4 slots of [2, 3, 5] f32 with slots 0 and 1 allocated (2 and 3 free). */
static const int64_t slot3[3] = {2, 3, 5};
enum { SMALL_SLOTS = 4, SMALL_ALLOCATED = 2, SLOT_FLOATS = 2 * 3 * 5 };

static attnrt_state_pool_t *small_pool(ops_fixture_t *f, attnrt_tensor_t *t)
{
    return ops_pool(f, ATTNRT_F32, 3, slot3, SMALL_SLOTS, SMALL_ALLOCATED, t);
}

/* create must fail, leave *pool alone and make nothing (attnrt_close in the teardown checks that). */
#define CREATE_REJECTS(f, ctx, dtype, ndim, shape, num_slots, expected, needle)                            \
    do {                                                                                                   \
        attnrt_state_pool_t *pool_ = POOL_SENTINEL;                                                        \
        ops_snapshot(f);                                                                                   \
        attnrt_status_t st_ = attnrt_state_pool_create((ctx), (dtype), (ndim), (shape), (num_slots), &pool_); \
        if (st_ == ATTNRT_OK && pool_ && pool_ != POOL_SENTINEL) attnrt_state_pool_destroy(pool_);          \
        ops_check_rejected((f), "attnrt_state_pool_create(" #ctx ", " #dtype ", " #ndim ", " #shape ", " #num_slots \
                           ", &pool)", PC, st_, (expected), (needle), __FILE__, __LINE__);                 \
        if (pool_ != POOL_SENTINEL) fail_msg("%s:%d: refused attnrt_state_pool_create wrote *pool", __FILE__, __LINE__); \
    } while (0)
#define CREATE_INVALID(f, dtype, ndim, shape, num_slots, needle) \
    CREATE_REJECTS(f, (f)->ctx, dtype, ndim, shape, num_slots, ATTNRT_ERR_INVALID_ARGUMENT, needle)

static void usage_is(attnrt_state_pool_t *pool, int32_t slots, int32_t free_slots)
{
    int32_t n = -7, nf = -7;
    OPS_OK(attnrt_state_pool_usage(pool, &n, &nf));
    if (n != slots || nf != free_slots)
        fail_msg("attnrt_state_pool_usage: %d slots, %d free; expected %d slots, %d free", n, nf, slots, free_slots);
}

static float *read_storage(ops_fixture_t *f, const attnrt_tensor_t *t)
{
    size_t bytes = ops_pool_bytes(t);
    float *host = malloc(bytes);
    assert_non_null(host);
    OPS_OK(attnrt_mem_copy_to_host(f->ctx, host, t->data, bytes, NULL));
    return host;
}

/* ---- create ---- */

static void pool_create_baseline_succeeds(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    usage_is(pool, SMALL_SLOTS, SMALL_SLOTS - SMALL_ALLOCATED);
}

static void pool_create_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_REJECTS(f, NULL, ATTNRT_F32, 3, slot3, 4, ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void pool_create_refuses_null_pool_out(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, PC, attnrt_state_pool_create(f->ctx, ATTNRT_F32, 3, slot3, 4, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "pool is NULL");
}

static void pool_create_refuses_null_slot_shape(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_INVALID(f, ATTNRT_F32, 3, NULL, 4, "slot_shape is NULL");
}

static void pool_create_refuses_unknown_dtype(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_INVALID(f, ATTNRT_DTYPE(ATTNRT_DTYPE_CODE_FLOAT, 64), 3, slot3, 4, "dtype");
}

static void pool_create_refuses_vector_lanes(void **state)
{
    ops_fixture_t *f = *state;
    const attnrt_dtype_t f32x4 = {ATTNRT_DTYPE_CODE_FLOAT, 32, 4};
    CREATE_INVALID(f, f32x4, 3, slot3, 4, "dtype");
}

static void pool_create_refuses_slot_ndim_0(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_INVALID(f, ATTNRT_F32, 0, slot3, 4, "slot_ndim = 0");
}

static void pool_create_refuses_negative_slot_ndim(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_INVALID(f, ATTNRT_F32, -1, slot3, 4, "slot_ndim = -1");
}

/* The pool's tensor is [num_slots, slot_shape...]: at most ATTNRT_MAX_DIMS - 1 = 5 slot dims. */
static void pool_create_refuses_slot_ndim_6(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape6[6] = {1, 1, 1, 1, 1, 1};
    CREATE_INVALID(f, ATTNRT_F32, 6, shape6, 4, "slot_ndim = 6");
}

static void pool_create_accepts_slot_ndim_5(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t shape5[5] = {1, 2, 1, 3, 1};
    attnrt_tensor_t t;
    ops_pool(f, ATTNRT_F32, 5, shape5, 2, 0, &t);
    assert_int_equal(t.ndim, 6);
    assert_int_equal(t.shape[0], 2);
    assert_int_equal(t.shape[4], 3);
}

static void pool_create_refuses_negative_slot_shape(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t bad[3] = {2, -3, 5};
    CREATE_INVALID(f, ATTNRT_F32, 3, bad, 4, "slot_shape[1] = -3");
}

static void pool_create_refuses_zero_slot_shape(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t bad[3] = {2, 3, 0};
    CREATE_INVALID(f, ATTNRT_F32, 3, bad, 4, "slot_shape[2] = 0");
}

static void pool_create_refuses_num_slots_0(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_INVALID(f, ATTNRT_F32, 3, slot3, 0, "num_slots = 0");
}

static void pool_create_refuses_negative_num_slots(void **state)
{
    ops_fixture_t *f = *state;
    CREATE_INVALID(f, ATTNRT_F32, 3, slot3, -3, "num_slots = -3");
}

static void pool_create_refuses_slot_shape_beyond_int32(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t huge[2] = {(int64_t)1 << 62, 4};
    CREATE_INVALID(f, ATTNRT_F32, 2, huge, 2, "slot_shape[0] = 4611686018427387904");
}

/* (2^31 - 1)^3 f32 elements per slot: the byte count cannot be represented. Refused (as invalid or as
 * out of memory), never a small allocation that later ops would overrun. */
static void pool_create_refuses_size_that_overflows(void **state)
{
    ops_fixture_t *f = *state;
    const int64_t huge[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
    attnrt_state_pool_t *pool = POOL_SENTINEL;
    ops_snapshot(f);
    attnrt_status_t st = attnrt_state_pool_create(f->ctx, ATTNRT_F32, 3, huge, 2, &pool);
    if (st == ATTNRT_OK && pool && pool != POOL_SENTINEL) attnrt_state_pool_destroy(pool);
    ops_check_rejected(f, "attnrt_state_pool_create(huge)", PC, st,
                       st == ATTNRT_ERR_OUT_OF_MEMORY ? ATTNRT_ERR_OUT_OF_MEMORY : ATTNRT_ERR_INVALID_ARGUMENT, "",
                       __FILE__, __LINE__);
    if (pool != POOL_SENTINEL) fail_msg("refused attnrt_state_pool_create wrote *pool");
}

/* ---- destroy, tensor, usage ---- */

static void pool_destroy_accepts_null(void **state)
{
    (void)state;
    OPS_OK(attnrt_state_pool_destroy(NULL));
}

static void pool_tensor_describes_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_tensor_t t;
    small_pool(f, &t);
    assert_true(t.struct_size >= ATTNRT_TENSOR_STRUCT_SIZE);
    assert_non_null(t.data);
    assert_int_equal(t.dtype.code, ATTNRT_DTYPE_CODE_FLOAT);
    assert_int_equal(t.dtype.bits, 32);
    assert_int_equal(t.ndim, 4);
    const int64_t shape[4] = {SMALL_SLOTS, 2, 3, 5}, strides[4] = {SLOT_FLOATS, 15, 5, 1};
    for (int d = 0; d < 4; d++) {
        assert_int_equal(t.shape[d], shape[d]);
        assert_int_equal(t.strides[d], strides[d]);
    }
}

static void pool_tensor_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_tensor_t t, before;
    memset(&t, 0x3c, sizeof t);
    before = t;
    OPS_REJECTS(f, PT, attnrt_state_pool_tensor(NULL, &t), ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
    assert_memory_equal(&t, &before, sizeof t);
}

static void pool_tensor_refuses_null_tensor(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, PT, attnrt_state_pool_tensor(pool, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "tensor is NULL");
}

static void pool_usage_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    int32_t n = -7, nf = -7;
    OPS_REJECTS(f, PU, attnrt_state_pool_usage(NULL, &n, &nf), ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
    assert_int_equal(n, -7);
    assert_int_equal(nf, -7);
}

static void pool_usage_accepts_null_outputs(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    int32_t n = -7, nf = -7;
    OPS_OK(attnrt_state_pool_usage(pool, NULL, NULL));
    OPS_OK(attnrt_state_pool_usage(pool, &n, NULL));
    OPS_OK(attnrt_state_pool_usage(pool, NULL, &nf));
    assert_int_equal(n, SMALL_SLOTS);
    assert_int_equal(nf, SMALL_SLOTS - SMALL_ALLOCATED);
}

/* ---- alloc ---- */

static void slot_alloc_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    int32_t slot = -7;
    OPS_REJECTS(f, SA, attnrt_state_slot_alloc(NULL, &slot), ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
    assert_int_equal(slot, -7);
}

static void slot_alloc_refuses_null_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SA, attnrt_state_slot_alloc(pool, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "slot is NULL");
    usage_is(pool, SMALL_SLOTS, SMALL_SLOTS - SMALL_ALLOCATED);
}

static void slot_alloc_takes_the_lowest_free_id(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL); /* 0, 1 taken */
    int32_t slot = -7;
    OPS_OK(attnrt_state_slot_alloc(pool, &slot));
    assert_int_equal(slot, 2);
    OPS_OK(attnrt_state_slot_free(pool, 0));
    OPS_OK(attnrt_state_slot_alloc(pool, &slot));
    assert_int_equal(slot, 0);
    usage_is(pool, SMALL_SLOTS, 1);
}

static void slot_alloc_refuses_when_exhausted_naming_the_pool_size(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    int32_t slot = -7;
    OPS_OK(attnrt_state_slot_alloc(pool, &slot));
    OPS_OK(attnrt_state_slot_alloc(pool, &slot));
    assert_int_equal(slot, 3);
    usage_is(pool, SMALL_SLOTS, 0);
    slot = -7;
    OPS_REJECTS(f, SA, attnrt_state_slot_alloc(pool, &slot), ATTNRT_ERR_OUT_OF_MEMORY, "4 slots");
    assert_int_equal(slot, -7);
    usage_is(pool, SMALL_SLOTS, 0);
    /* a freed slot can be taken again */
    OPS_OK(attnrt_state_slot_free(pool, 1));
    OPS_OK(attnrt_state_slot_alloc(pool, &slot));
    assert_int_equal(slot, 1);
}

/* ---- free ---- */

static void slot_free_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, SF, attnrt_state_slot_free(NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
}

static void slot_free_refuses_a_free_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SF, attnrt_state_slot_free(pool, 2), ATTNRT_ERR_INVALID_ARGUMENT, "slot 2 is not allocated");
    usage_is(pool, SMALL_SLOTS, SMALL_SLOTS - SMALL_ALLOCATED);
}

static void slot_free_refuses_a_double_free(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_OK(attnrt_state_slot_free(pool, 1));
    OPS_REJECTS(f, SF, attnrt_state_slot_free(pool, 1), ATTNRT_ERR_INVALID_ARGUMENT, "slot 1 is not allocated");
    usage_is(pool, SMALL_SLOTS, 3);
}

static void slot_free_refuses_slot_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SF, attnrt_state_slot_free(pool, 4), ATTNRT_ERR_INVALID_ARGUMENT, "slot = 4&&num_slots = 4");
    usage_is(pool, SMALL_SLOTS, SMALL_SLOTS - SMALL_ALLOCATED);
}

static void slot_free_refuses_int32_max(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SF, attnrt_state_slot_free(pool, INT32_MAX), ATTNRT_ERR_INVALID_ARGUMENT, "slot = 2147483647");
}

static void slot_free_refuses_negative_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SF, attnrt_state_slot_free(pool, -1), ATTNRT_ERR_INVALID_ARGUMENT, "slot = -1");
    usage_is(pool, SMALL_SLOTS, SMALL_SLOTS - SMALL_ALLOCATED);
}

/* ---- zero ---- */

static void slot_zero_zeroes_only_its_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_tensor_t t;
    attnrt_state_pool_t *pool = small_pool(f, &t);
    float *before = read_storage(f, &t);
    OPS_OK(attnrt_state_slot_zero(pool, 1, NULL));
    float *after = read_storage(f, &t);
    for (int i = 0; i < SMALL_SLOTS * SLOT_FLOATS; i++) {
        int in_slot = i / SLOT_FLOATS == 1;
        if (in_slot && after[i] != 0.0f) fail_msg("slot 1 element %d = %g after zeroing", i % SLOT_FLOATS, after[i]);
        if (!in_slot && memcmp(&after[i], &before[i], sizeof(float)) != 0)
            fail_msg("attnrt_state_slot_zero(1) wrote element %d of slot %d", i % SLOT_FLOATS, i / SLOT_FLOATS);
    }
    free(before);
    free(after);
}

static void slot_zero_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, SZ, attnrt_state_slot_zero(NULL, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
}

static void slot_zero_refuses_unallocated_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SZ, attnrt_state_slot_zero(pool, 3, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "slot 3 is not allocated");
}

static void slot_zero_refuses_freed_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_OK(attnrt_state_slot_free(pool, 0));
    OPS_REJECTS(f, SZ, attnrt_state_slot_zero(pool, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "slot 0 is not allocated");
}

static void slot_zero_refuses_slot_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SZ, attnrt_state_slot_zero(pool, 4, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "slot = 4&&num_slots = 4");
}

static void slot_zero_refuses_negative_slot(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SZ, attnrt_state_slot_zero(pool, -1, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "slot = -1");
}

static void slot_zero_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, SZ, attnrt_state_slot_zero(pool, 0, foreign), ATTNRT_ERR_INVALID_ARGUMENT,
                "stream belongs to another context&&than the pool's context");
}

/* ---- copy ---- */

static void slot_copy_copies_only_into_dst(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_tensor_t t;
    attnrt_state_pool_t *pool = small_pool(f, &t);
    float *before = read_storage(f, &t);
    OPS_OK(attnrt_state_slot_copy(pool, 0, 1, NULL));
    float *after = read_storage(f, &t);
    for (int i = 0; i < SMALL_SLOTS * SLOT_FLOATS; i++) {
        int s = i / SLOT_FLOATS, e = i % SLOT_FLOATS;
        const float *want = s == 1 ? &before[e] : &before[i];
        if (memcmp(&after[i], want, sizeof(float)) != 0)
            fail_msg("after copying slot 0 into 1, element %d of slot %d differs", e, s);
    }
    free(before);
    free(after);
}

static void slot_copy_onto_itself_is_fine(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    ops_snapshot(f);
    OPS_OK(attnrt_state_slot_copy(pool, 1, 1, NULL));
    ops_assert_untouched(f, "attnrt_state_slot_copy(pool, 1, 1)");
}

static void slot_copy_refuses_null_pool(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(NULL, 0, 1, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "pool is NULL");
}

static void slot_copy_refuses_unallocated_src(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 2, 1, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "src&&slot 2 is not allocated");
}

static void slot_copy_refuses_unallocated_dst(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 0, 3, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "dst&&slot 3 is not allocated");
}

static void slot_copy_refuses_freed_dst(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_OK(attnrt_state_slot_free(pool, 1));
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 0, 1, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "dst&&slot 1 is not allocated");
}

static void slot_copy_refuses_src_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 4, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "src = 4&&num_slots = 4");
}

static void slot_copy_refuses_dst_past_the_pool(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 0, 100, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "dst = 100&&num_slots = 4");
}

static void slot_copy_refuses_negative_dst(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 0, -1, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "dst = -1");
}

static void slot_copy_refuses_stream_of_another_context(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_state_pool_t *pool = small_pool(f, NULL);
    attnrt_stream_t *foreign = ops_foreign_stream(f);
    OPS_REJECTS(f, SC, attnrt_state_slot_copy(pool, 0, 1, foreign), ATTNRT_ERR_INVALID_ARGUMENT,
                "stream belongs to another context&&than the pool's context");
}

/* ---- the context while a pool lives ---- */

static void close_is_busy_while_a_pool_lives(void **state)
{
    (void)state;
    attnrt_context_t *ctx = NULL;
    attnrt_state_pool_t *pool = NULL;
    OPS_OK(attnrt_open("cpu:0", &ctx));
    OPS_OK(attnrt_state_pool_create(ctx, ATTNRT_F32, 3, slot3, 4, &pool));
    attnrt_status_t st = attnrt_close(ctx);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    /* the pool now dangles: destroying it would touch the freed context */
    if (st == ATTNRT_OK) fail_msg("attnrt_close succeeded while a state pool lived");
    /* clean up before judging, so a failure here leaks nothing */
    OPS_OK(attnrt_state_pool_destroy(pool));
    OPS_OK(attnrt_close(ctx));
    if (st != ATTNRT_ERR_BUSY) fail_msg("attnrt_close returned %s, expected ATTNRT_ERR_BUSY", attnrt_status_name(st));
    /* the pool is counted as a pool, not as one of the context's allocations */
    if (strncmp(msg, "attnrt_close", strlen("attnrt_close")) != 0 ||
        !strstr(msg, "0 allocation(s)") || !strstr(msg, "1 state pool(s)"))
        fail_msg("attnrt_close's message does not count the live pool: \"%s\"", msg);
}

int ops_run_state_pool_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_EXT_TEST(pool_create_baseline_succeeds),
        OPS_EXT_TEST(pool_create_refuses_null_ctx),
        OPS_EXT_TEST(pool_create_refuses_null_pool_out),
        OPS_EXT_TEST(pool_create_refuses_null_slot_shape),
        OPS_EXT_TEST(pool_create_refuses_unknown_dtype),
        OPS_EXT_TEST(pool_create_refuses_vector_lanes),
        OPS_EXT_TEST(pool_create_refuses_slot_ndim_0),
        OPS_EXT_TEST(pool_create_refuses_negative_slot_ndim),
        OPS_EXT_TEST(pool_create_refuses_slot_ndim_6),
        OPS_EXT_TEST(pool_create_accepts_slot_ndim_5),
        OPS_EXT_TEST(pool_create_refuses_negative_slot_shape),
        OPS_EXT_TEST(pool_create_refuses_zero_slot_shape),
        OPS_EXT_TEST(pool_create_refuses_num_slots_0),
        OPS_EXT_TEST(pool_create_refuses_negative_num_slots),
        OPS_EXT_TEST(pool_create_refuses_slot_shape_beyond_int32),
        OPS_EXT_TEST(pool_create_refuses_size_that_overflows),
        OPS_EXT_TEST(pool_destroy_accepts_null),
        OPS_EXT_TEST(pool_tensor_describes_the_pool),
        OPS_EXT_TEST(pool_tensor_refuses_null_pool),
        OPS_EXT_TEST(pool_tensor_refuses_null_tensor),
        OPS_EXT_TEST(pool_usage_refuses_null_pool),
        OPS_EXT_TEST(pool_usage_accepts_null_outputs),
        OPS_EXT_TEST(slot_alloc_refuses_null_pool),
        OPS_EXT_TEST(slot_alloc_refuses_null_slot),
        OPS_EXT_TEST(slot_alloc_takes_the_lowest_free_id),
        OPS_EXT_TEST(slot_alloc_refuses_when_exhausted_naming_the_pool_size),
        OPS_EXT_TEST(slot_free_refuses_null_pool),
        OPS_EXT_TEST(slot_free_refuses_a_free_slot),
        OPS_EXT_TEST(slot_free_refuses_a_double_free),
        OPS_EXT_TEST(slot_free_refuses_slot_past_the_pool),
        OPS_EXT_TEST(slot_free_refuses_int32_max),
        OPS_EXT_TEST(slot_free_refuses_negative_slot),
        OPS_EXT_TEST(slot_zero_zeroes_only_its_slot),
        OPS_EXT_TEST(slot_zero_refuses_null_pool),
        OPS_EXT_TEST(slot_zero_refuses_unallocated_slot),
        OPS_EXT_TEST(slot_zero_refuses_freed_slot),
        OPS_EXT_TEST(slot_zero_refuses_slot_past_the_pool),
        OPS_EXT_TEST(slot_zero_refuses_negative_slot),
        OPS_EXT_TEST(slot_zero_refuses_stream_of_another_context),
        OPS_EXT_TEST(slot_copy_copies_only_into_dst),
        OPS_EXT_TEST(slot_copy_onto_itself_is_fine),
        OPS_EXT_TEST(slot_copy_refuses_null_pool),
        OPS_EXT_TEST(slot_copy_refuses_unallocated_src),
        OPS_EXT_TEST(slot_copy_refuses_unallocated_dst),
        OPS_EXT_TEST(slot_copy_refuses_freed_dst),
        OPS_EXT_TEST(slot_copy_refuses_src_past_the_pool),
        OPS_EXT_TEST(slot_copy_refuses_dst_past_the_pool),
        OPS_EXT_TEST(slot_copy_refuses_negative_dst),
        OPS_EXT_TEST(slot_copy_refuses_stream_of_another_context),
        OPS_EXT_TEST(close_is_busy_while_a_pool_lives),
    };
    return cmocka_run_group_tests_name("ops: state pools and slots", tests, NULL, NULL);
}
