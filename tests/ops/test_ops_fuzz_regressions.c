/* What the fuzz target (tests/fuzz) found, one test per finding, on the cpu plugin. Each test builds the
 * smallest call that showed the defect and states the behaviour the contract asks for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"

enum { H = 2, DK = 4, DV = 3, SLOTS = 2, SLOT_ELEMS = H * DK * DV };

#define ASSERT_OK(call)                                                                                   \
    do {                                                                                                  \
        attnrt_status_t st_ = (call);                                                                     \
        if (st_ != ATTNRT_OK) fail_msg("%s: %s: %s", #call, attnrt_status_name(st_), attnrt_last_error()); \
    } while (0)

/* A state-op batch of two requests that bring no new tokens (T = 0): request 0 in slot 0 without an
 * initial state, request 1 in slot 1 with one. Tensors without elements have NULL data, as the API
 * allows. */
typedef struct empty_batch {
    attnrt_context_t    *ctx;
    attnrt_state_pool_t *pool;
    attnrt_tensor_t      pool_t, q, k, v, out, g, beta, slopes, qsl, idx, init;
    void                *meta;  /* device copies of the metadata and the per-head tensors */
    float                before[SLOTS * SLOT_ELEMS];
    int32_t              h_qsl[3], h_idx[2];
    uint8_t              h_init[2];
    attnrt_batch_host_t  batch;
    attnrt_state_host_t  states;
} empty_batch_t;

static void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
{
    ASSERT_OK(attnrt_tensor_init(t, data, dtype, ndim, shape));
}

static int setup(void **state)
{
    empty_batch_t *e = calloc(1, sizeof *e);
    assert_non_null(e);
    const char *device = getenv("ATTNRT_DEVICE"); /* the suite leaves it empty: cpu:0; set it to try a GPU */
    ASSERT_OK(attnrt_open(device && device[0] ? device : "cpu:0", &e->ctx));
    const int64_t slot_shape[3] = {H, DK, DV};
    ASSERT_OK(attnrt_state_pool_create(e->ctx, ATTNRT_F32, 3, slot_shape, SLOTS, &e->pool));
    ASSERT_OK(attnrt_state_pool_tensor(e->pool, &e->pool_t));
    for (int s = 0; s < SLOTS; s++) {
        int32_t slot = -1;
        ASSERT_OK(attnrt_state_slot_alloc(e->pool, &slot));
    }
    for (int i = 0; i < SLOTS * SLOT_ELEMS; i++) e->before[i] = 0.25f * (float)(i % 7) - 0.5f;
    ASSERT_OK(attnrt_mem_copy_to_device(e->ctx, e->pool_t.data, e->before, sizeof e->before, NULL));

    const int32_t qsl[3] = {0, 0, 0}, idx[2] = {0, 1};
    const uint8_t init[2] = {0, 1};
    const float ones[H] = {1.0f, 1.0f};
    memcpy(e->h_qsl, qsl, sizeof qsl);
    memcpy(e->h_idx, idx, sizeof idx);
    memcpy(e->h_init, init, sizeof init);
    ASSERT_OK(attnrt_mem_alloc(e->ctx, 256, &e->meta));
    unsigned char *m = e->meta;
    ASSERT_OK(attnrt_mem_copy_to_device(e->ctx, m, qsl, sizeof qsl, NULL));
    ASSERT_OK(attnrt_mem_copy_to_device(e->ctx, m + 64, idx, sizeof idx, NULL));
    ASSERT_OK(attnrt_mem_copy_to_device(e->ctx, m + 128, init, sizeof init, NULL));
    ASSERT_OK(attnrt_mem_copy_to_device(e->ctx, m + 192, ones, sizeof ones, NULL));

    const int64_t qs[3] = {0, H, DK}, vs[3] = {0, H, DV}, gs[2] = {0, H}, b1[1] = {3}, b0[1] = {2}, hs[1] = {H};
    tensor(&e->q, NULL, ATTNRT_F32, 3, qs);
    tensor(&e->k, NULL, ATTNRT_F32, 3, qs);
    tensor(&e->v, NULL, ATTNRT_F32, 3, vs);
    tensor(&e->out, NULL, ATTNRT_F32, 3, vs);
    tensor(&e->g, NULL, ATTNRT_F32, 2, gs);
    tensor(&e->beta, NULL, ATTNRT_F32, 2, gs);
    tensor(&e->qsl, m, ATTNRT_I32, 1, b1);
    tensor(&e->idx, m + 64, ATTNRT_I32, 1, b0);
    tensor(&e->init, m + 128, ATTNRT_U8, 1, b0);
    tensor(&e->slopes, m + 192, ATTNRT_F32, 1, hs);

    e->batch = (attnrt_batch_host_t){sizeof e->batch, 2, e->h_qsl, NULL, NULL, 0};
    e->states = (attnrt_state_host_t){sizeof e->states, e->h_idx, e->h_init, NULL, NULL, 0};
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    empty_batch_t *e = *state;
    ASSERT_OK(attnrt_state_pool_destroy(e->pool));
    ASSERT_OK(attnrt_mem_free(e->ctx, e->meta));
    ASSERT_OK(attnrt_close(e->ctx));
    free(e);
    return 0;
}

/* After the run: slot 0 (no initial state, no tokens) holds the zero state, slot 1 what it held. */
static void assert_pool_after_empty_batch(const empty_batch_t *e)
{
    float got[SLOTS * SLOT_ELEMS];
    ASSERT_OK(attnrt_mem_copy_to_host(e->ctx, got, e->pool_t.data, sizeof got, NULL));
    for (int i = 0; i < SLOT_ELEMS; i++)
        if (got[i] != 0.0f) fail_msg("slot 0 element %d = %g after a request without tokens or initial state; "
                                     "expected the zero state", i, (double)got[i]);
    if (memcmp(got + SLOT_ELEMS, e->before + SLOT_ELEMS, sizeof(float) * SLOT_ELEMS) != 0)
        fail_msg("slot 1 changed, but its request brought no tokens");
}

static void lightning_runs_a_batch_of_requests_without_tokens(void **state)
{
    empty_batch_t *e = *state;
    const attnrt_lightning_args_t args = {sizeof args, &e->q, &e->k, &e->v, &e->out, &e->slopes, &e->pool_t,
                                          &e->qsl, &e->idx, &e->init};
    attnrt_plan_t *plan = NULL;
    ASSERT_OK(attnrt_lightning_plan(e->ctx, &args, &e->batch, &e->states, e->pool, &plan));
    attnrt_status_t st = attnrt_lightning_run(plan, &args, NULL, 0, NULL);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    ASSERT_OK(attnrt_plan_destroy(plan));
    if (st != ATTNRT_OK) fail_msg("attnrt_lightning_run of a planned batch without tokens: %s: %s",
                                  attnrt_status_name(st), msg);
    assert_pool_after_empty_batch(e);
}

static void gated_delta_runs_a_batch_of_requests_without_tokens(void **state)
{
    empty_batch_t *e = *state;
    const attnrt_gated_delta_args_t args = {sizeof args, &e->q, &e->k, &e->v, &e->g, &e->beta, &e->out, &e->pool_t,
                                            &e->qsl, &e->idx, &e->init, NULL, NULL, 0.0f, 0};
    attnrt_plan_t *plan = NULL;
    ASSERT_OK(attnrt_gated_delta_plan(e->ctx, &args, &e->batch, &e->states, e->pool, &plan));
    attnrt_status_t st = attnrt_gated_delta_run(plan, &args, NULL, 0, NULL);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    ASSERT_OK(attnrt_plan_destroy(plan));
    if (st != ATTNRT_OK) fail_msg("attnrt_gated_delta_run of a planned batch without tokens: %s: %s",
                                  attnrt_status_name(st), msg);
    assert_pool_after_empty_batch(e);
}

int main(void)
{
    const char *device = getenv("ATTNRT_DEVICE");
    if (!device || !device[0]) /* before any libattnrt call: exactly the build tree's cpu plugin */
        setenv("ATTNRT_PLUGIN", "cpu", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lightning_runs_a_batch_of_requests_without_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(gated_delta_runs_a_batch_of_requests_without_tokens, setup, teardown),
    };
    int failed = cmocka_run_group_tests_name("fuzz regressions", tests, NULL, NULL);
    attnrt_status_t st = attnrt_shutdown();
    if (st != ATTNRT_OK) failed++;
    return failed ? 1 : 0;
}
