/* test_streams: the native stream and event entries (attnrt_stream_wrap, _native, _wait_event, attnrt_event_wrap,
 * _native, _synchronize).
 *   - bad inputs on cpu:0: each NULL argument and each stream or event of another context is refused with
 *     INVALID_ARGUMENT and a message naming it, nothing written, nothing counted on the context;
 *   - the synchronous devices (cpu:0, npu_sim:0 when built): wrapping and exporting are refused with UNSUPPORTED
 *     naming the device, waits and event synchronisation succeed at once;
 *   - native:0 (native_plugin.c, a plugin with native objects): a wrapper is counted on its context until
 *     destroyed, destroying it leaves the engine's object alone, handles pass through both ways, the plugin's
 *     refusals and a broken plugin's NULL handle are reported, and nothing leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"
#include "fake_native.h"

#ifndef STREAMS_PLUGIN_DIR
#error "STREAMS_PLUGIN_DIR must name the folder of attnrt_native.so"
#endif

#define assert_status(call, expected)                                                                      \
    do {                                                                                                   \
        attnrt_status_t got_ = (call);                                                                     \
        if (got_ != (expected))                                                                            \
            fail_msg("%s returned %s, expected %s: %s", #call, attnrt_status_name(got_),                  \
                     attnrt_status_name(expected), attnrt_last_error());                                   \
    } while (0)
#define assert_ok(call) assert_status(call, ATTNRT_OK)

static void assert_error_has(const char *needle)
{
    if (!strstr(attnrt_last_error(), needle)) fail_msg("message \"%s\" lacks \"%s\"", attnrt_last_error(), needle);
}

/* Something that is not a handle, written into outputs first: a refused call must leave it there. */
static void *const POISON = (void *)(uintptr_t)0x5a5a5a5a;

static attnrt_context_t *open_named(const char *name)
{
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(name, &ctx));
    return ctx;
}

/* attnrt_close succeeds only when no stream or event is counted on the context: what a refused call must leave. */
static void close_clean(attnrt_context_t *ctx) { assert_ok(attnrt_close(ctx)); }

/* ---- bad inputs (cpu:0) ---------------------------------------------------------------------------------- */

static void null_arguments_are_named(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("cpu:0");
    attnrt_stream_t *s = POISON;
    attnrt_event_t *e = POISON;
    void *native = POISON;
    int token = 0;

    assert_status(attnrt_stream_wrap(NULL, &token, &s), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_wrap: ctx is NULL");
    assert_status(attnrt_stream_wrap(ctx, &token, NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_wrap: stream is NULL");
    assert_status(attnrt_stream_native(NULL, NULL, &native), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_native: ctx is NULL");
    assert_status(attnrt_stream_native(ctx, NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_native: native is NULL");
    assert_status(attnrt_stream_wait_event(NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_wait_event: event is NULL");
    assert_status(attnrt_event_wrap(NULL, &token, &e), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_wrap: ctx is NULL");
    assert_status(attnrt_event_wrap(ctx, NULL, &e), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_wrap: native is NULL");
    assert_status(attnrt_event_wrap(ctx, &token, NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_wrap: event is NULL");
    assert_status(attnrt_event_native(NULL, &native), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_native: event is NULL");
    assert_status(attnrt_event_synchronize(NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_synchronize: event is NULL");

    attnrt_event_t *ev = NULL;
    assert_ok(attnrt_event_create(ctx, &ev));
    assert_status(attnrt_event_native(ev, NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_native: native is NULL");
    assert_ok(attnrt_event_destroy(ev));

    assert_ptr_equal(s, POISON);
    assert_ptr_equal(e, POISON);
    assert_ptr_equal(native, POISON);
    close_clean(ctx);
}

/* Two contexts on one device share its name; the message tells them apart by address. */
static void another_contexts_stream_or_event_is_refused(void **state)
{
    (void)state;
    attnrt_context_t *one = open_named("cpu:0"), *two = open_named("cpu:0");
    attnrt_stream_t *s2 = NULL;
    attnrt_event_t *e1 = NULL;
    assert_ok(attnrt_stream_create(two, &s2));
    assert_ok(attnrt_event_create(one, &e1));
    assert_ok(attnrt_event_record(e1, NULL));
    void *native = POISON;

    assert_status(attnrt_stream_native(one, s2, &native), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_native: stream belongs to another context");
    assert_ptr_equal(native, POISON);
    assert_status(attnrt_stream_wait_event(s2, e1), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_wait_event: stream belongs to another context");
    assert_error_has("than event");

    assert_ok(attnrt_event_destroy(e1));
    assert_ok(attnrt_stream_destroy(s2));
    close_clean(one);
    close_clean(two);
}

/* ---- synchronous devices: no native objects, waits that are already satisfied ----------------------------- */

static void check_synchronous_device(const char *name)
{
    attnrt_context_t *ctx = open_named(name);
    attnrt_stream_t *s = POISON, *created = NULL;
    attnrt_event_t *e = POISON, *ev = NULL;
    void *native = POISON;
    int token = 0;

    assert_status(attnrt_stream_wrap(ctx, &token, &s), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("attnrt_stream_wrap");
    assert_error_has(name);
    assert_error_has("has no native streams");
    assert_status(attnrt_stream_wrap(ctx, NULL, &s), ATTNRT_ERR_UNSUPPORTED); /* NULL native: refused as well */
    assert_ptr_equal(s, POISON);

    assert_ok(attnrt_stream_create(ctx, &created));
    assert_status(attnrt_stream_native(ctx, created, &native), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("has no native streams");
    assert_status(attnrt_stream_native(ctx, NULL, &native), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has(name);
    assert_ptr_equal(native, POISON);

    assert_status(attnrt_event_wrap(ctx, &token, &e), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("attnrt_event_wrap");
    assert_error_has(name);
    assert_error_has("has no native events");
    assert_ptr_equal(e, POISON);

    /* Work completes within each call: a wait or an event synchronisation has nothing left to wait for. */
    assert_ok(attnrt_event_create(ctx, &ev));
    assert_status(attnrt_event_native(ev, &native), ATTNRT_ERR_UNSUPPORTED);
    assert_error_has("has no native events");
    assert_ptr_equal(native, POISON);
    assert_ok(attnrt_event_synchronize(ev)); /* never recorded: nothing before it */
    assert_ok(attnrt_event_record(ev, created));
    assert_ok(attnrt_stream_wait_event(created, ev));
    assert_ok(attnrt_stream_wait_event(NULL, ev)); /* the default stream of the event's context */
    assert_ok(attnrt_event_synchronize(ev));

    assert_ok(attnrt_event_destroy(ev));
    assert_ok(attnrt_stream_destroy(created));
    close_clean(ctx);
}

static void cpu_has_no_native_objects(void **state)
{
    (void)state;
    check_synchronous_device("cpu:0");
}

static void npu_sim_has_no_native_objects(void **state)
{
    (void)state;
    uint32_t index = 0;
    if (attnrt_device_find("npu_sim:0", &index) != ATTNRT_OK) skip(); /* not built */
    check_synchronous_device("npu_sim:0");
}

/* ---- native:0: the wrapper life cycle -------------------------------------------------------------------- */

static char saved_path[4096], saved_plugin[256];
static int had_path, had_plugin;

static void save_env(const char *name, char *copy, size_t cap, int *had)
{
    const char *v = getenv(name);
    *had = v != NULL;
    snprintf(copy, cap, "%s", v ? v : "");
}

static void restore_env(const char *name, const char *copy, int had)
{
    if (had) setenv(name, copy, 1);
    else unsetenv(name);
}

static int native_setup(void **state)
{
    (void)state;
    save_env("ATTNRT_PLUGIN_PATH", saved_path, sizeof saved_path, &had_path);
    save_env("ATTNRT_PLUGIN", saved_plugin, sizeof saved_plugin, &had_plugin);
    setenv("ATTNRT_PLUGIN_PATH", STREAMS_PLUGIN_DIR, 1);
    setenv("ATTNRT_PLUGIN", "native", 1);
    return attnrt_shutdown() == ATTNRT_OK ? 0 : -1; /* the next call discovers again, with the path */
}

static int native_teardown(void **state)
{
    (void)state;
    restore_env("ATTNRT_PLUGIN_PATH", saved_path, had_path);
    restore_env("ATTNRT_PLUGIN", saved_plugin, had_plugin);
    return attnrt_shutdown() == ATTNRT_OK ? 0 : -1;
}

static fake_native_t fake(void)
{
    fake_native_t n;
    memset(&n, 0, sizeof n);
    n.magic = FAKE_NATIVE_MAGIC;
    return n;
}

static void wrapped_stream_is_counted_and_destroy_frees_only_the_wrapper(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("native:0");
    fake_native_t engine = fake();
    attnrt_stream_t *s = NULL;
    assert_ok(attnrt_stream_wrap(ctx, &engine, &s));
    assert_non_null(s);
    assert_int_equal(engine.wraps, 1);

    void *native = NULL;
    assert_ok(attnrt_stream_native(ctx, s, &native));
    assert_ptr_equal(native, &engine);
    assert_ok(attnrt_stream_synchronize(ctx, s));

    assert_status(attnrt_close(ctx), ATTNRT_ERR_BUSY);
    assert_error_has("1 stream(s)");
    assert_ok(attnrt_stream_destroy(s));
    assert_int_equal(engine.unwraps, 1);
    assert_int_equal(engine.magic, FAKE_NATIVE_MAGIC); /* still the engine's */
    close_clean(ctx);
}

static void created_and_default_streams_have_native_handles(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("native:0");
    attnrt_stream_t *s = NULL;
    assert_ok(attnrt_stream_create(ctx, &s));
    void *native = NULL;
    assert_ok(attnrt_stream_native(ctx, s, &native));
    const fake_native_t *n = native;
    assert_non_null(n);
    assert_int_equal(n->magic, FAKE_NATIVE_MAGIC);
    assert_true(n->owned);
    assert_false(n->is_default);

    assert_ok(attnrt_stream_native(ctx, NULL, &native));
    n = native;
    assert_non_null(n);
    assert_true(n->is_default);
    assert_ok(attnrt_stream_destroy(s));
    close_clean(ctx);
}

static void wrapped_event_records_waits_and_synchronizes(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("native:0");
    fake_native_t engine_stream = fake(), engine_event = fake();
    attnrt_stream_t *s = NULL;
    attnrt_event_t *e = NULL, *mine = NULL;
    assert_ok(attnrt_stream_wrap(ctx, &engine_stream, &s));
    assert_ok(attnrt_event_wrap(ctx, &engine_event, &e));
    assert_int_equal(engine_event.wraps, 1);

    void *native = NULL;
    assert_ok(attnrt_event_native(e, &native));
    assert_ptr_equal(native, &engine_event);

    /* libattnrt work waits for the engine's event, and the engine's event is recorded after libattnrt work */
    assert_ok(attnrt_stream_wait_event(s, e));
    assert_int_equal(engine_stream.waits, 1);
    assert_ptr_equal(engine_stream.waited_for, &engine_event);
    assert_ok(attnrt_event_record(e, s));
    assert_int_equal(engine_event.records, 1);
    assert_ok(attnrt_event_synchronize(e));
    assert_int_equal(engine_event.syncs, 1);

    /* a created event exported for the engine, and the NULL stream waiting on it */
    assert_ok(attnrt_event_create(ctx, &mine));
    assert_ok(attnrt_event_native(mine, &native));
    const fake_native_t *mine_native = native;
    assert_true(mine_native->owned);
    assert_ok(attnrt_stream_wait_event(NULL, mine));
    void *def = NULL;
    assert_ok(attnrt_stream_native(ctx, NULL, &def));
    assert_int_equal(((const fake_native_t *)def)->waits, 1);
    assert_ptr_equal(((const fake_native_t *)def)->waited_for, mine_native);

    assert_status(attnrt_close(ctx), ATTNRT_ERR_BUSY);
    assert_error_has("1 stream(s), 2 event(s)");
    assert_ok(attnrt_event_destroy(e));
    assert_int_equal(engine_event.unwraps, 1);
    assert_int_equal(engine_event.magic, FAKE_NATIVE_MAGIC);
    assert_ok(attnrt_event_destroy(mine));
    assert_ok(attnrt_stream_destroy(s));
    assert_int_equal(engine_stream.magic, FAKE_NATIVE_MAGIC);
    close_clean(ctx);
}

static void plugin_refusals_are_reported_and_nothing_is_counted(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("native:0");
    fake_native_t engine = fake();
    attnrt_stream_t *s = POISON;
    attnrt_event_t *e = POISON;

    engine.refuse = 1;
    assert_status(attnrt_stream_wrap(ctx, &engine, &s), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_stream_wrap: native:0: refuses to wrap");
    assert_status(attnrt_event_wrap(ctx, &engine, &e), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_event_wrap: native:0: refuses to wrap");
    /* NULL native: passed to the plugin, which decides (cuda takes it as the legacy default stream) */
    assert_status(attnrt_stream_wrap(ctx, NULL, &s), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("is not a native object");

    engine.refuse = 0;
    engine.null_handle = 1;
    assert_status(attnrt_stream_wrap(ctx, &engine, &s), ATTNRT_ERR_PLUGIN);
    assert_error_has("returned success with a NULL stream");
    assert_status(attnrt_event_wrap(ctx, &engine, &e), ATTNRT_ERR_PLUGIN);
    assert_error_has("returned success with a NULL event");

    assert_ptr_equal(s, POISON);
    assert_ptr_equal(e, POISON);
    assert_int_equal(engine.wraps, 0);
    close_clean(ctx); /* nothing counted */
}

static void wrapped_objects_of_another_context_are_refused(void **state)
{
    (void)state;
    attnrt_context_t *one = open_named("native:0"), *two = open_named("native:0");
    fake_native_t engine_stream = fake(), engine_event = fake();
    attnrt_stream_t *s1 = NULL;
    attnrt_event_t *e2 = NULL;
    assert_ok(attnrt_stream_wrap(one, &engine_stream, &s1));
    assert_ok(attnrt_event_wrap(two, &engine_event, &e2));
    void *native = POISON;
    assert_status(attnrt_stream_native(two, s1, &native), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("stream belongs to another context");
    assert_ptr_equal(native, POISON);
    assert_status(attnrt_stream_wait_event(s1, e2), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("stream belongs to another context");
    assert_int_equal(engine_stream.waits, 0);
    assert_ok(attnrt_stream_destroy(s1));
    assert_ok(attnrt_event_destroy(e2));
    close_clean(one);
    close_clean(two);
}

int main(void)
{
    const struct CMUnitTest host[] = {
        cmocka_unit_test(null_arguments_are_named),
        cmocka_unit_test(another_contexts_stream_or_event_is_refused),
        cmocka_unit_test(cpu_has_no_native_objects),
        cmocka_unit_test(npu_sim_has_no_native_objects),
    };
    const struct CMUnitTest native[] = {
        cmocka_unit_test(wrapped_stream_is_counted_and_destroy_frees_only_the_wrapper),
        cmocka_unit_test(created_and_default_streams_have_native_handles),
        cmocka_unit_test(wrapped_event_records_waits_and_synchronizes),
        cmocka_unit_test(plugin_refusals_are_reported_and_nothing_is_counted),
        cmocka_unit_test(wrapped_objects_of_another_context_are_refused),
    };
    int failed = cmocka_run_group_tests_name("streams on synchronous devices", host, NULL, NULL);
    failed += cmocka_run_group_tests_name("native streams (native:0)", native, native_setup, native_teardown);
    attnrt_shutdown();
    return failed;
}
