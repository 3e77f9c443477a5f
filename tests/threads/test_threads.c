/* Threads using libattnrt at once, on the real plugins (cpu, and npu_sim where built): a context per
 * thread, one context with a stream per thread, and one state pool shared by every thread. Each thread's
 * results must equal a run made alone. main() also runs the start-up and shut-down races of
 * test_threads_registry.c. The suite 'threads' runs in the plain, ASan and ThreadSanitizer builds. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "loader_util.h"
#include "thr_work.h"

int threads_registry_tests(void);

enum { THREADS = 4, RUNS = 3, SEED = 2024 };

typedef struct ctx_case {
    const thr_device_t *dev;
    attnrt_context_t   *shared;            /* the one context of the stream-per-thread test */
    float               expected[THR_OUT]; /* the step run alone */
    thr_report_t        report[THREADS];
    int                 mismatches[THREADS];
} ctx_case_t;

/* The step run alone on a context of its own: what every thread must get. */
static void expected_output(const thr_device_t *dev, float out[THR_OUT])
{
    attnrt_context_t *ctx = NULL;
    thr_work_t w;
    assert_ok(thr_open(dev, &ctx));
    assert_ok(thr_work_make(&w, ctx, dev->block_size, SEED));
    assert_ok(thr_work_run(&w, NULL, out));
    thr_work_free(&w);
    assert_ok(attnrt_close(ctx));
}

/* Plans the step on ctx and runs it RUNS times on `stream`, counting outputs that differ. */
static void run_step(ctx_case_t *c, unsigned i, attnrt_context_t *ctx, attnrt_stream_t *stream)
{
    thr_work_t w;
    float out[THR_OUT];
    if (thr_check(&c->report[i], thr_work_make(&w, ctx, c->dev->block_size, SEED), "thr_work_make") == ATTNRT_OK)
        for (int k = 0; k < RUNS; k++) {
            if (thr_check(&c->report[i], thr_work_run(&w, stream, out), "thr_work_run") != ATTNRT_OK) break;
            c->mismatches[i] += memcmp(out, c->expected, sizeof out) != 0;
        }
    thr_work_free(&w);
}

static void check_reports(const ctx_case_t *c)
{
    for (unsigned i = 0; i < THREADS; i++) {
        const thr_report_t *r = &c->report[i];
        if (r->status != ATTNRT_OK)
            fail_msg("%s, thread %u: %s returned %s: %s", c->dev->name, i, r->where, attnrt_status_name(r->status),
                     r->error);
        if (c->mismatches[i]) fail_msg("%s, thread %u: %d of %d runs differ from the run made alone", c->dev->name, i,
                                       c->mismatches[i], RUNS);
    }
}

/* ---- a context per thread ---- */

static void own_context(unsigned i, void *arg)
{
    ctx_case_t *c = arg;
    attnrt_context_t *ctx = NULL;
    if (thr_check(&c->report[i], thr_open(c->dev, &ctx), "attnrt_open") != ATTNRT_OK) return;
    run_step(c, i, ctx, NULL);
    thr_check(&c->report[i], attnrt_close(ctx), "attnrt_close");
}

static void test_each_thread_runs_attention_on_a_context_of_its_own(void **state)
{
    (void)state;
    for (unsigned d = 0; d < thr_device_count; d++) {
        static ctx_case_t c;
        memset(&c, 0, sizeof c);
        c.dev = &thr_devices[d];
        expected_output(c.dev, c.expected);
        thr_run(THREADS, own_context, &c);
        check_reports(&c);
    }
}

/* ---- one context, a stream per thread ---- */

static void own_stream(unsigned i, void *arg)
{
    ctx_case_t *c = arg;
    attnrt_stream_t *stream = NULL;
    if (thr_check(&c->report[i], attnrt_stream_create(c->shared, &stream), "attnrt_stream_create") != ATTNRT_OK)
        return;
    run_step(c, i, c->shared, stream);
    thr_check(&c->report[i], attnrt_stream_destroy(stream), "attnrt_stream_destroy");
}

static void test_threads_share_one_context_each_on_a_stream_of_its_own(void **state)
{
    (void)state;
    for (unsigned d = 0; d < thr_device_count; d++) {
        static ctx_case_t c;
        memset(&c, 0, sizeof c);
        c.dev = &thr_devices[d];
        expected_output(c.dev, c.expected);
        assert_ok(thr_open(c.dev, &c.shared));
        thr_run(THREADS, own_stream, &c);
        assert_ok(attnrt_close(c.shared)); /* every stream, plan and buffer was released */
        check_reports(&c);
    }
}

/* ---- one state pool shared by every thread ---- */

enum { SLOTS = 6, ROUNDS = 300 };

typedef struct pool_case {
    attnrt_state_pool_t *pool;
    atomic_int           holder[SLOTS]; /* 1 + the thread that holds the slot, 0 when free */
    atomic_int           twice;         /* a slot handed to a thread while another held it */
    atomic_int           full;          /* allocations refused because every slot was taken */
    thr_report_t         report[THREADS];
} pool_case_t;

static void use_slots(unsigned i, void *arg)
{
    pool_case_t *c = arg;
    thr_report_t *r = &c->report[i];
    for (int k = 0; k < ROUNDS && r->status == ATTNRT_OK; k++) {
        int32_t slot = -1, num_slots = 0, num_free = 0;
        attnrt_status_t st = attnrt_state_slot_alloc(c->pool, &slot);
        if (st == ATTNRT_ERR_OUT_OF_MEMORY) { /* all taken: the one clean refusal */
            atomic_fetch_add(&c->full, 1);
            continue;
        }
        if (thr_check(r, st, "attnrt_state_slot_alloc") != ATTNRT_OK) break;
        if (slot < 0 || slot >= SLOTS) {
            r->status = ATTNRT_ERR_INTERNAL;
            snprintf(r->error, sizeof r->error, "attnrt_state_slot_alloc gave slot %d of a pool of %d", slot, SLOTS);
            break;
        }
        if (atomic_exchange(&c->holder[slot], (int)i + 1) != 0) atomic_fetch_add(&c->twice, 1);
        thr_check(r, attnrt_state_slot_zero(c->pool, slot, NULL), "attnrt_state_slot_zero");
        thr_check(r, attnrt_state_pool_usage(c->pool, &num_slots, &num_free), "attnrt_state_pool_usage");
        atomic_store(&c->holder[slot], 0);
        thr_check(r, attnrt_state_slot_free(c->pool, slot), "attnrt_state_slot_free");
    }
}

static void test_a_shared_state_pool_never_hands_one_slot_to_two_threads(void **state)
{
    (void)state;
    static pool_case_t c;
    memset(&c, 0, sizeof c);
    attnrt_context_t *ctx = NULL;
    const int64_t slot_shape[2] = {2, 8};
    assert_ok(attnrt_open("cpu:0", &ctx));
    assert_ok(attnrt_state_pool_create(ctx, ATTNRT_F32, 2, slot_shape, SLOTS, &c.pool));
    thr_run(THREADS, use_slots, &c);
    for (unsigned i = 0; i < THREADS; i++)
        if (c.report[i].status != ATTNRT_OK)
            fail_msg("thread %u: %s returned %s: %s", i, c.report[i].where, attnrt_status_name(c.report[i].status),
                     c.report[i].error);
    assert_int_equal(atomic_load(&c.twice), 0);
    int32_t num_slots = 0, num_free = 0;
    assert_ok(attnrt_state_pool_usage(c.pool, &num_slots, &num_free));
    assert_int_equal(num_free, SLOTS); /* every slot came back */
    assert_ok(attnrt_state_pool_destroy(c.pool));
    assert_ok(attnrt_close(ctx));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int main(int argc, char **argv)
{
    (void)argc;
    tl_argv0 = argv[0];
    const struct CMUnitTest tests[] = {
        T(each_thread_runs_attention_on_a_context_of_its_own),
        T(threads_share_one_context_each_on_a_stream_of_its_own),
        T(a_shared_state_pool_never_hands_one_slot_to_two_threads),
    };
    int failed = tl_run_isolated("threads: contexts, streams and pools", tests, sizeof tests / sizeof tests[0]);
    failed += threads_registry_tests();
    return failed ? 1 : 0;
}
