/* Using loaded plugins: contexts, memory, streams, events, the capability query, optional entries and
 * their fallbacks, BUSY rules, concurrent start-up, fault injection, and the real cpu plugin. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "loader_util.h"

int loader_context_tests(void);

static attnrt_op_query_t query_of(uint32_t op)
{
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = op};
    return q;
}

/* ---- contexts and memory on a test plugin ---- */

static void test_context_opens_the_default_device_and_closes(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_non_null(ctx);
    assert_string_equal(attnrt_context_device_name(ctx), "basic:0");
    assert_int_equal(tl_attr(0, "open_devices"), 1);
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "open_devices"), 0);
    assert_int_equal(tl_attr(0, "violations"), 0);
}

static void test_properties_are_written_only_up_to_the_callers_struct_size(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_device_properties_t full = {.struct_size = sizeof full};
    assert_ok(attnrt_device_get_properties(0, &full));
    assert_string_equal(full.name, "basic:0");
    assert_string_equal(full.vendor, "attnrt tests");
    assert_int_equal(full.device_type, ATTNRT_DEVICE_TYPE_EXTDEV);
    assert_int_equal(full.compute_units, 4);
    assert_true(full.memory_total == (uint64_t)1 << 30);

    attnrt_device_properties_t old; /* a caller built when the struct ended at `name` */
    memset(&old, 0xEE, sizeof old);
    old.struct_size = ATTNRT_STRUCT_SIZE(attnrt_device_properties_t, name);
    assert_ok(attnrt_device_get_properties(0, &old));
    assert_int_equal(old.struct_size, ATTNRT_STRUCT_SIZE(attnrt_device_properties_t, name));
    assert_string_equal(old.name, "basic:0");
    assert_int_equal((unsigned char)old.vendor[0], 0xEE); /* beyond its struct_size: untouched */
    assert_int_equal(old.compute_units, 0xEEEEEEEEu);
}

static void test_memory_round_trips_through_device_copies(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    attnrt_stream_t *stream = NULL;
    void *a = NULL, *b = NULL;
    unsigned char in[1000], out[1000];
    for (size_t i = 0; i < sizeof in; i++) in[i] = (unsigned char)(i * 7 + 3);
    assert_ok(attnrt_open(NULL, &ctx));
    assert_ok(attnrt_mem_alloc(ctx, sizeof in, &a));
    assert_ok(attnrt_mem_alloc(ctx, sizeof in, &b));
    assert_true((uintptr_t)a % 256 == 0 && (uintptr_t)b % 256 == 0);
    assert_int_equal(tl_attr(0, "live_allocations"), 2);
    assert_ok(attnrt_stream_create(ctx, &stream));
    assert_ok(attnrt_mem_copy_to_device(ctx, a, in, sizeof in, stream));
    assert_ok(attnrt_mem_copy_on_device(ctx, b, a, sizeof in, stream));
    assert_ok(attnrt_mem_set(ctx, a, 0, sizeof in, NULL));
    assert_ok(attnrt_stream_synchronize(ctx, stream));
    assert_ok(attnrt_mem_copy_to_host(ctx, out, b, sizeof out, NULL));
    assert_memory_equal(in, out, sizeof in);
    assert_ok(attnrt_mem_copy_to_host(ctx, out, a, sizeof out, NULL));
    for (size_t i = 0; i < sizeof out; i++) assert_int_equal(out[i], 0);
    assert_ok(attnrt_stream_destroy(stream));
    assert_ok(attnrt_mem_free(ctx, a));
    assert_ok(attnrt_mem_free(ctx, b));
    assert_int_equal(tl_attr(0, "live_allocations"), 0);
    assert_int_equal(tl_attr(0, "live_streams"), 0);
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "violations"), 0);
}

static void test_null_optional_entries_give_a_clean_unsupported(void **state)
{
    (void)state;
    tl_use("null_optional");
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));

    attnrt_event_t *ev = (attnrt_event_t *)&ev;
    assert_status(attnrt_event_create(ctx, &ev), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("has no events");
    assert_ptr_equal(ev, (attnrt_event_t *)&ev);

    attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
    assert_status(attnrt_device_get_attribute(0, 0, &attr), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("no device attributes");

    attnrt_op_query_t q = query_of(ATTNRT_OP_MERGE_STATES);
    char reason[128] = "stale";
    assert_status(attnrt_op_supported(ctx, &q, reason, sizeof reason), ATTNRT_ERR_UNSUPPORTED);
    assert_string_equal(reason, "plugin has no capability query");
    assert_error_has("plugin has no capability query");
    assert_ok(attnrt_close(ctx));

    strcpy(reason, "stale");
    assert_status(attnrt_device_op_supported(0, &q, reason, sizeof reason), ATTNRT_ERR_UNSUPPORTED);
    assert_string_equal(reason, "plugin has no capability query");
}

static void test_mem_set_falls_back_to_copies_when_the_plugin_has_none(void **state)
{
    (void)state;
    tl_use("null_optional");
    enum { N = 200000, OFF = 70001, LEN = 65537 }; /* several of the fallback's chunks, unaligned */
    attnrt_context_t *ctx = NULL;
    void *d = NULL;
    unsigned char *host = malloc(N);
    assert_non_null(host);
    assert_ok(attnrt_open(NULL, &ctx));
    assert_ok(attnrt_mem_alloc(ctx, N, &d));
    assert_ok(attnrt_mem_set(ctx, d, 0xAB, N, NULL));
    assert_ok(attnrt_mem_set(ctx, (char *)d + OFF, 0x5C, LEN, NULL));
    assert_ok(attnrt_mem_copy_to_host(ctx, host, d, N, NULL));
    size_t wrong = 0;
    for (size_t i = 0; i < N; i++) wrong += host[i] != ((i >= OFF && i < OFF + LEN) ? 0x5C : 0xAB);
    assert_int_equal(wrong, 0);
    free(host);
    assert_ok(attnrt_mem_free(ctx, d));
    assert_ok(attnrt_close(ctx));
}

static void test_capability_query_answers_yes_and_no_with_a_reason(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    attnrt_op_query_t yes = query_of(ATTNRT_OP_MERGE_STATES), no = query_of(ATTNRT_OP_PAGED_ATTENTION);
    char reason[128] = "stale";
    assert_ok(attnrt_op_supported(ctx, &yes, reason, sizeof reason));
    assert_string_equal(reason, "");
    assert_status(attnrt_op_supported(ctx, &no, reason, sizeof reason), ATTNRT_ERR_UNSUPPORTED);
    assert_string_equal(reason, "test plugin basic implements only merge_states, not op 2");
    assert_error_has("basic:0: paged_attention unsupported: test plugin basic implements only merge_states");
    char tiny[8];
    assert_status(attnrt_op_supported(ctx, &no, tiny, sizeof tiny), ATTNRT_ERR_UNSUPPORTED);
    assert_string_equal(tiny, "test pl"); /* truncated, terminated */
    assert_status(attnrt_op_supported(ctx, &no, NULL, 0), ATTNRT_ERR_UNSUPPORTED);
    assert_ok(attnrt_close(ctx));

    assert_ok(attnrt_device_op_supported(0, &yes, NULL, 0)); /* no context needed, none left open */
    assert_status(attnrt_device_op_supported(0, &no, reason, sizeof reason), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("implements only merge_states");
    assert_int_equal(tl_attr(0, "open_devices"), 0);
}

static void test_events_time_the_device_clock(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    attnrt_stream_t *s = NULL;
    attnrt_event_t *a = NULL, *b = NULL;
    float ms = -1.0f;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_ok(attnrt_stream_create(ctx, &s));
    assert_ok(attnrt_event_create(ctx, &a));
    assert_ok(attnrt_event_create(ctx, &b));
    assert_status(attnrt_event_elapsed_ms(a, b, &ms), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("never recorded"); /* the plugin's message */
    assert_true(ms == -1.0f);
    assert_ok(attnrt_event_record(a, s));
    assert_ok(attnrt_event_record(b, NULL));
    assert_ok(attnrt_event_record(b, s));
    assert_ok(attnrt_event_elapsed_ms(a, b, &ms));
    assert_true(ms == 0.5f); /* two ticks of the fake clock */
    assert_int_equal(tl_attr(0, "live_events"), 2);
    assert_ok(attnrt_event_destroy(a));
    assert_ok(attnrt_event_destroy(b));
    assert_ok(attnrt_stream_destroy(s));
    assert_int_equal(tl_attr(0, "live_events"), 0);
    assert_ok(attnrt_close(ctx));
}

static void test_streams_and_events_of_another_context_are_rejected(void **state)
{
    (void)state;
    tl_use("two_devices");
    attnrt_context_t *c0 = NULL, *c1 = NULL;
    attnrt_stream_t *s1 = NULL;
    attnrt_event_t *e0 = NULL, *e1 = NULL;
    void *p = NULL;
    char host[16] = {0};
    float ms;
    assert_ok(attnrt_open("two_devices:0", &c0));
    assert_ok(attnrt_open("two_devices:1", &c1));
    assert_string_equal(attnrt_context_device_name(c1), "two_devices:1");
    assert_ok(attnrt_stream_create(c1, &s1));
    assert_ok(attnrt_event_create(c0, &e0));
    assert_ok(attnrt_event_create(c1, &e1));
    assert_ok(attnrt_mem_alloc(c0, sizeof host, &p));

    /* Each must be caught by the runtime: the plugin counts a violation when a foreign handle reaches it. */
    assert_status(attnrt_mem_copy_to_device(c0, p, host, sizeof host, s1), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_mem_copy_to_device: stream belongs to another context (two_devices:1 at");
    assert_int_equal(tl_attr(0, "violations"), 0);
    assert_status(attnrt_mem_set(c0, p, 1, sizeof host, s1), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_mem_set: stream belongs to another context (two_devices:1 at");
    assert_int_equal(tl_attr(0, "violations"), 0);
    assert_status(attnrt_stream_synchronize(c0, s1), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_synchronize: stream belongs to another context (two_devices:1 at");
    assert_int_equal(tl_attr(0, "violations"), 0);
    assert_status(attnrt_event_record(e0, s1), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_status(attnrt_event_elapsed_ms(e0, e1, &ms), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_int_equal(tl_attr(0, "violations"), 0);
    assert_ok(attnrt_stream_synchronize(c1, s1)); /* the right pairing still works */

    assert_ok(attnrt_mem_free(c0, p));
    assert_ok(attnrt_event_destroy(e0));
    assert_ok(attnrt_event_destroy(e1));
    assert_ok(attnrt_stream_destroy(s1));
    assert_ok(attnrt_close(c0));
    assert_ok(attnrt_close(c1));
}

static void test_contexts_on_one_device_are_told_apart_by_address_in_messages(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *c0 = NULL, *c1 = NULL;
    attnrt_stream_t *s1 = NULL;
    attnrt_event_t *e0 = NULL, *e1 = NULL;
    void *p = NULL;
    char host[16] = {0}, want[256];
    float ms;
    assert_ok(attnrt_open("basic:0", &c0));
    assert_ok(attnrt_open("basic:0", &c1));
    assert_ok(attnrt_stream_create(c1, &s1));
    assert_ok(attnrt_event_create(c0, &e0));
    assert_ok(attnrt_event_create(c1, &e1));
    assert_ok(attnrt_mem_alloc(c0, sizeof host, &p));
    const void *a0 = c0, *a1 = c1;

    assert_status(attnrt_mem_copy_to_device(c0, p, host, sizeof host, s1), ATTNRT_ERR_INVALID_ARGUMENT);
    snprintf(want, sizeof want, "attnrt_mem_copy_to_device: stream belongs to another context (basic:0 at %p) than "
             "ctx (basic:0 at %p)", a1, a0);
    assert_string_equal(attnrt_last_error(), want);
    assert_status(attnrt_event_record(e0, s1), ATTNRT_ERR_INVALID_ARGUMENT);
    snprintf(want, sizeof want, "attnrt_event_record: stream belongs to another context (basic:0 at %p) than event "
             "(basic:0 at %p)", a1, a0);
    assert_string_equal(attnrt_last_error(), want);
    assert_status(attnrt_event_elapsed_ms(e0, e1, &ms), ATTNRT_ERR_INVALID_ARGUMENT);
    snprintf(want, sizeof want, "attnrt_event_elapsed_ms: end belongs to another context (basic:0 at %p) than start "
             "(basic:0 at %p)", a1, a0);
    assert_string_equal(attnrt_last_error(), want);
    assert_int_equal(tl_attr(0, "violations"), 0);

    assert_ok(attnrt_mem_free(c0, p));
    assert_ok(attnrt_event_destroy(e0));
    assert_ok(attnrt_event_destroy(e1));
    assert_ok(attnrt_stream_destroy(s1));
    assert_ok(attnrt_close(c0));
    assert_ok(attnrt_close(c1));
}

static void test_attnrt_device_selects_the_default_device(void **state)
{
    (void)state;
    tl_use("two_devices");
    setenv("ATTNRT_DEVICE", "two_devices:1", 1);
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_string_equal(attnrt_context_device_name(ctx), "two_devices:1");
    assert_ok(attnrt_close(ctx));
    setenv("ATTNRT_DEVICE", "bogus:3", 1);
    ctx = NULL;
    assert_status(attnrt_open(NULL, &ctx), ATTNRT_ERR_NOT_FOUND);
    assert_null(ctx);
    assert_error_has("ATTNRT_DEVICE=bogus:3");
    assert_error_has("two_devices:0, two_devices:1"); /* lists the names there are */
}

/* ---- BUSY ---- */

static void test_shutdown_with_an_open_context_is_busy_and_keeps_the_plugin(void **state)
{
    (void)state;
    tl_use("basic");
    tl_trace_start();
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_status(attnrt_shutdown(), ATTNRT_ERR_BUSY);
    assert_error_has("1 context(s) still open");
    assert_null(strstr(tl_trace(), "shutdown")); /* not shut down behind the context's back */
    assert_int_equal(tl_attr(0, "live_inits"), 1);
    void *p = NULL;
    assert_ok(attnrt_mem_alloc(ctx, 32, &p)); /* and still usable */
    assert_ok(attnrt_mem_free(ctx, p));
    assert_ok(attnrt_close(ctx));
    assert_ok(attnrt_shutdown());
    assert_non_null(strstr(tl_trace(), "basic shutdown"));
}

static void test_close_with_live_objects_is_busy_and_counts_them(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    attnrt_stream_t *s = NULL;
    attnrt_event_t *e = NULL;
    void *p = NULL, *q = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_ok(attnrt_mem_alloc(ctx, 10, &p));
    assert_status(attnrt_close(ctx), ATTNRT_ERR_BUSY);
    assert_error_has("1 allocation(s)");
    assert_error_has("basic:0");
    assert_ok(attnrt_mem_alloc(ctx, 10, &q));
    assert_ok(attnrt_stream_create(ctx, &s));
    assert_ok(attnrt_event_create(ctx, &e));
    assert_status(attnrt_close(ctx), ATTNRT_ERR_BUSY);
    assert_error_has("2 allocation(s)");
    assert_error_has("1 stream(s)");
    assert_error_has("1 event(s)");
    assert_int_equal(tl_attr(0, "open_devices"), 1); /* the device stayed open */
    assert_ok(attnrt_mem_free(ctx, p));
    assert_ok(attnrt_mem_free(ctx, q));
    assert_ok(attnrt_stream_destroy(s));
    assert_ok(attnrt_event_destroy(e));
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "violations"), 0);
}

/* ---- concurrency ---- */

enum { THREADS = 8 };
static pthread_barrier_t barrier;
static struct { attnrt_context_t *ctx; attnrt_status_t status; char error[256]; } slot[THREADS];

static void *open_at_once(void *arg)
{
    size_t i = (size_t)(uintptr_t)arg;
    pthread_barrier_wait(&barrier);
    slot[i].status = attnrt_open(NULL, &slot[i].ctx);
    snprintf(slot[i].error, sizeof slot[i].error, "%s", attnrt_last_error());
    return NULL;
}

static void *close_at_once(void *arg)
{
    size_t i = (size_t)(uintptr_t)arg;
    pthread_barrier_wait(&barrier);
    slot[i].status = attnrt_close(slot[i].ctx);
    snprintf(slot[i].error, sizeof slot[i].error, "%s", attnrt_last_error());
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t t[THREADS];
    assert_int_equal(pthread_barrier_init(&barrier, NULL, THREADS), 0);
    for (size_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)i), 0);
    for (size_t i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (size_t i = 0; i < THREADS; i++)
        if (slot[i].status != ATTNRT_OK)
            fail_msg("thread %zu: %s: %s", i, attnrt_status_name(slot[i].status), slot[i].error);
}

static void test_eight_threads_open_at_once_while_init_races(void **state)
{
    (void)state;
    tl_use("basic"); /* tl_setup shut the runtime down: the first opens also race to initialise */
    tl_trace_start();
    memset(slot, 0, sizeof slot);
    run_threads(open_at_once);
    for (size_t i = 0; i < THREADS; i++) {
        assert_non_null(slot[i].ctx);
        for (size_t j = 0; j < i; j++) assert_ptr_not_equal(slot[i].ctx, slot[j].ctx);
    }
    assert_int_equal(tl_attr(0, "live_inits"), 1); /* initialised exactly once */
    assert_int_equal(tl_attr(0, "open_devices"), THREADS);
    run_threads(close_at_once);
    assert_int_equal(tl_attr(0, "open_devices"), 0);
    assert_string_equal(tl_trace(), "basic probe\nbasic init\n"); /* one probe, one init */
    assert_int_equal(tl_attr(0, "violations"), 0);
}

/* ---- fault injection at the plugin boundary ---- */

static void test_injected_allocation_failure_returns_the_plugins_message(void **state)
{
    (void)state;
    tl_use("basic");
    setenv("TP_FAIL_ALLOC_AT", "3", 1);
    attnrt_context_t *ctx = NULL;
    void *p[4] = {NULL, NULL, NULL, NULL};
    assert_ok(attnrt_open(NULL, &ctx));
    assert_ok(attnrt_mem_alloc(ctx, 100, &p[0]));
    assert_ok(attnrt_mem_alloc(ctx, 100, &p[1]));
    p[2] = (void *)&p; /* must not be overwritten on failure */
    assert_status(attnrt_mem_alloc(ctx, 100, &p[2]), ATTNRT_ERR_OUT_OF_MEMORY);
    assert_ptr_equal(p[2], (void *)&p);
    assert_error_has("attnrt_mem_alloc(basic:0, 100 bytes)");
    assert_error_has("tp: injected failure of allocation #3 on basic:0 (TP_FAIL_ALLOC_AT=3)");
    assert_ok(attnrt_mem_alloc(ctx, 100, &p[3])); /* only the 3rd fails; success clears the error */
    assert_string_equal(attnrt_last_error(), "");
    assert_int_equal(tl_attr(0, "live_allocations"), 3);
    assert_int_equal(tl_attr(0, "alloc_calls"), 4);
    for (size_t i = 0; i < 4; i++)
        if (i != 2) assert_ok(attnrt_mem_free(ctx, p[i]));
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "live_allocations"), 0);
}

static void test_every_allocation_failure_point_is_recoverable(void **state)
{
    (void)state;
    for (int n = 1; n <= 4; n++) {
        assert_ok(attnrt_shutdown());
        tl_use("basic");
        char knob[8], expect[32];
        snprintf(knob, sizeof knob, "%d", n);
        snprintf(expect, sizeof expect, "allocation #%d", n);
        setenv("TP_FAIL_ALLOC_AT", knob, 1);
        attnrt_context_t *ctx = NULL;
        void *p[4] = {NULL, NULL, NULL, NULL};
        attnrt_status_t st = ATTNRT_OK;
        int got = 0;
        assert_ok(attnrt_open(NULL, &ctx));
        while (got < 4 && (st = attnrt_mem_alloc(ctx, 4096, &p[got])) == ATTNRT_OK) got++;
        assert_status(st, ATTNRT_ERR_OUT_OF_MEMORY);
        assert_int_equal(got, n - 1);
        assert_error_has(expect);
        assert_int_equal(tl_attr(0, "live_allocations"), n - 1);
        for (int i = 0; i < got; i++) assert_ok(attnrt_mem_free(ctx, p[i]));
        assert_ok(attnrt_close(ctx));
        assert_int_equal(tl_attr(0, "live_allocations"), 0);
    }
}

static void test_device_out_of_memory_is_reported_with_the_plugins_message(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    void *p = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_status(attnrt_mem_alloc(ctx, SIZE_MAX, &p), ATTNRT_ERR_OUT_OF_MEMORY);
    assert_null(p);
    assert_error_has("no room for");
    assert_int_equal(tl_attr(0, "live_allocations"), 0);
    assert_ok(attnrt_close(ctx));
}

/* ---- the real cpu plugin ---- */

#ifdef TL_CPU_PLUGIN
static void check_cpu0(void)
{
    uint32_t index = 99, count = 0;
    assert_ok(attnrt_device_count(&count));
    assert_int_equal(count, 1);
    assert_ok(attnrt_device_find("cpu:0", &index));
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    assert_ok(attnrt_device_get_properties(index, &props));
    assert_string_equal(props.name, "cpu:0");
    assert_int_equal(props.device_type, ATTNRT_DEVICE_TYPE_CPU);
    assert_true(props.compute_units >= 1);
    assert_true(props.memory_total > 0);
    assert_true(props.memory_free <= props.memory_total);
    assert_true(props.vendor[0] && props.model[0] && props.arch[0]);
    assert_true(props.attribute_count >= 1);
    for (uint32_t i = 0; i < props.attribute_count; i++) {
        attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
        assert_ok(attnrt_device_get_attribute(index, i, &attr));
        assert_true(attr.key[0] && attr.value[0]);
    }
    attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
    assert_status(attnrt_device_get_attribute(index, props.attribute_count, &attr), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_device_get_attribute: i = ");
    assert_error_has(" of cpu:0");

    attnrt_context_t *ctx = NULL;
    attnrt_stream_t *s = NULL;
    attnrt_event_t *e0 = NULL, *e1 = NULL;
    void *a = NULL, *b = NULL;
    enum { N = 4099 };
    static unsigned char in[N], out[N];
    for (size_t i = 0; i < N; i++) in[i] = (unsigned char)(i ^ (i >> 8));
    assert_ok(attnrt_open("cpu:0", &ctx));
    assert_ok(attnrt_mem_alloc(ctx, N, &a));
    assert_ok(attnrt_mem_alloc(ctx, N, &b));
    assert_true((uintptr_t)a % 256 == 0);
    assert_ok(attnrt_stream_create(ctx, &s));
    assert_ok(attnrt_event_create(ctx, &e0));
    assert_ok(attnrt_event_create(ctx, &e1));
    assert_ok(attnrt_event_record(e0, s));
    assert_ok(attnrt_mem_copy_to_device(ctx, a, in, N, s));
    assert_ok(attnrt_mem_copy_on_device(ctx, b, a, N, s));
    assert_ok(attnrt_mem_set(ctx, b, 0x77, 100, s));
    assert_ok(attnrt_event_record(e1, s));
    assert_ok(attnrt_stream_synchronize(NULL, s));
    assert_ok(attnrt_mem_copy_to_host(ctx, out, b, N, NULL));
    for (size_t i = 0; i < N; i++) assert_int_equal(out[i], i < 100 ? 0x77 : in[i]);
    float ms = -1.0f;
    assert_ok(attnrt_event_elapsed_ms(e0, e1, &ms));
    assert_true(ms >= 0.0f && ms < 60000.0f);
    attnrt_op_query_t q = query_of(ATTNRT_OP_PAGED_ATTENTION);
    char reason[256];
    attnrt_status_t st = attnrt_op_supported(ctx, &q, reason, sizeof reason);
    assert_true(st == ATTNRT_OK || (st == ATTNRT_ERR_UNSUPPORTED && reason[0]));
    assert_ok(attnrt_event_destroy(e0));
    assert_ok(attnrt_event_destroy(e1));
    assert_ok(attnrt_stream_destroy(s));
    assert_ok(attnrt_mem_free(ctx, a));
    assert_ok(attnrt_mem_free(ctx, b));
    assert_ok(attnrt_close(ctx));
}
#endif

#ifdef TL_CPU_PLUGIN /* registered only where the cpu plugin is built */
static void test_cpu_plugin_by_name_works_end_to_end(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", "cpu", 1); /* found in the build tree: this libattnrt runs from it */
    assert_ok(attnrt_init());
    attnrt_plugin_info_t info = tl_info(0);
    assert_string_equal(info.name, "cpu");
    assert_int_equal(info.status, ATTNRT_OK);
    check_cpu0();
}
#endif

#ifdef TL_CPU_PLUGIN /* registered only where the cpu plugin is built */
static void test_cpu_plugin_by_absolute_path_works_end_to_end(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", TL_CPU_PLUGIN, 1);
    assert_ok(attnrt_init());
    assert_string_equal(tl_info(0).path, TL_CPU_PLUGIN);
    check_cpu0();
}
#endif

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int loader_context_tests(void)
{
    const struct CMUnitTest tests[] = {
        T(context_opens_the_default_device_and_closes),
        T(properties_are_written_only_up_to_the_callers_struct_size),
        T(memory_round_trips_through_device_copies),
        T(null_optional_entries_give_a_clean_unsupported),
        T(mem_set_falls_back_to_copies_when_the_plugin_has_none),
        T(capability_query_answers_yes_and_no_with_a_reason),
        T(events_time_the_device_clock),
        T(streams_and_events_of_another_context_are_rejected),
        T(contexts_on_one_device_are_told_apart_by_address_in_messages),
        T(attnrt_device_selects_the_default_device),
        T(shutdown_with_an_open_context_is_busy_and_keeps_the_plugin),
        T(close_with_live_objects_is_busy_and_counts_them),
        T(eight_threads_open_at_once_while_init_races),
        T(injected_allocation_failure_returns_the_plugins_message),
        T(every_allocation_failure_point_is_recoverable),
        T(device_out_of_memory_is_reported_with_the_plugins_message),
#ifdef TL_CPU_PLUGIN
        T(cpu_plugin_by_name_works_end_to_end),
#endif
#ifdef TL_CPU_PLUGIN
        T(cpu_plugin_by_absolute_path_works_end_to_end),
#endif
    };
    return tl_run_isolated("loader: contexts, memory and plugins at work", tests, sizeof tests / sizeof tests[0]);
}
