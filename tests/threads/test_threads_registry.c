/* attnrt_shutdown against the other threads: it returns ATTNRT_ERR_BUSY while a query or an attnrt_open is
 * inside a plugin (never unloading code that runs), and when it races with threads that call attnrt_init,
 * query devices and plugins, and open, run and close contexts, every call returns OK or a clean BUSY. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "loader_util.h"
#include "thr_work.h"

int threads_registry_tests(void);

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&t, &t) != 0) {}
}

/* Waits until the test plugin has traced `line` (it is then inside that entry for TP_SLOW_MS). */
static void wait_for_trace(const char *line)
{
    for (int i = 0; i < 20000 && !strstr(tl_trace(), line); i++) sleep_us(500);
    assert_has(tl_trace(), line);
}

/* ---- a call inside a plugin ---- */

typedef struct inside {
    attnrt_status_t   status;
    char              name[ATTNRT_NAME_MAX];
    char              error[512];
    attnrt_context_t *ctx;
} inside_t;

static void *query_properties(void *arg)
{
    inside_t *q = arg;
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    q->status = attnrt_device_get_properties(0, &props);
    snprintf(q->name, sizeof q->name, "%s", props.name);
    snprintf(q->error, sizeof q->error, "%s", attnrt_last_error());
    return NULL;
}

static void *open_default(void *arg)
{
    inside_t *q = arg;
    q->status = attnrt_open(NULL, &q->ctx);
    snprintf(q->error, sizeof q->error, "%s", attnrt_last_error());
    return NULL;
}

/* Starts `fn` in a thread, waits until it is inside the plugin's `entry`, and calls attnrt_shutdown. */
static void shutdown_while_inside(void *(*fn)(void *), const char *entry, inside_t *q)
{
    tl_use("basic");
    tl_trace_start();
    assert_ok(attnrt_init());
    setenv("TP_SLOW_MS", "300", 1); /* from now on: discovery's own calls stay quick */
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, q), 0);
    char line[96];
    snprintf(line, sizeof line, "basic inside %s\n", entry);
    wait_for_trace(line);
    attnrt_status_t st = attnrt_shutdown();
    char error[512];
    snprintf(error, sizeof error, "%s", attnrt_last_error());
    pthread_join(t, NULL);
    unsetenv("TP_SLOW_MS");
    if (q->status != ATTNRT_OK) fail_msg("the call inside the plugin: %s: %s", attnrt_status_name(q->status), q->error);
    if (st != ATTNRT_ERR_BUSY)
        fail_msg("attnrt_shutdown while %s ran returned %s, expected ATTNRT_ERR_BUSY", entry, attnrt_status_name(st));
    assert_has(error, "attnrt_shutdown: another libattnrt call");
    assert_null(strstr(tl_trace(), "basic shutdown")); /* the plugin was never shut down under the call */
}

static void test_shutdown_while_a_device_query_is_inside_the_plugin_is_busy(void **state)
{
    (void)state;
    inside_t q;
    memset(&q, 0, sizeof q);
    shutdown_while_inside(query_properties, "device_properties", &q);
    assert_string_equal(q.name, "basic:0");
    assert_ok(attnrt_shutdown()); /* once the query has returned */
    assert_has(tl_trace(), "basic shutdown\n");
}

static void test_shutdown_while_attnrt_open_is_inside_the_plugin_is_busy(void **state)
{
    (void)state;
    inside_t q;
    memset(&q, 0, sizeof q);
    shutdown_while_inside(open_default, "device_open", &q);
    assert_string_equal(attnrt_context_device_name(q.ctx), "basic:0");
    assert_status(attnrt_shutdown(), ATTNRT_ERR_BUSY); /* now the open context holds it */
    assert_ok(attnrt_close(q.ctx));
    assert_ok(attnrt_shutdown());
}

/* ---- everything at once ---- */

enum { ROLES = 5, ROUNDS = 40 };

typedef struct hammer {
    atomic_int   workers_left;
    atomic_long  shutdowns_ok, shutdowns_busy, runs;
    float        expected[THR_OUT];
    thr_report_t report[ROLES];
} hammer_t;

static void pause_a_little(unsigned *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    sleep_us((long)(*seed >> 24)); /* 0 .. 255 us: gaps in which shutdown can succeed */
}

static void shut_down_repeatedly(hammer_t *h, thr_report_t *r)
{
    unsigned seed = 1;
    while (atomic_load(&h->workers_left) > 0) {
        attnrt_status_t st = attnrt_shutdown();
        if (st == ATTNRT_OK)
            atomic_fetch_add(&h->shutdowns_ok, 1);
        else if (st == ATTNRT_ERR_BUSY)
            atomic_fetch_add(&h->shutdowns_busy, 1);
        else if (thr_check(r, st, "attnrt_shutdown") != ATTNRT_OK)
            return;
        pause_a_little(&seed);
    }
}

static attnrt_status_t query_devices(void)
{
    uint32_t count = 0, index = 0;
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    attnrt_status_t st = attnrt_device_count(&count);
    if (st == ATTNRT_OK) st = attnrt_device_get_properties(0, &props);
    if (st == ATTNRT_OK) st = attnrt_device_find("cpu:0", &index);
    if (st == ATTNRT_OK && (count != 1 || index != 0 || strcmp(props.name, "cpu:0") != 0)) st = ATTNRT_ERR_INTERNAL;
    return st;
}

/* The info's strings live until attnrt_shutdown, which may come at once: only its numbers are read. */
static attnrt_status_t query_plugins(void)
{
    uint32_t count = 0;
    attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
    attnrt_status_t st = attnrt_plugin_count(&count);
    if (st == ATTNRT_OK) st = attnrt_plugin_get_info(0, &info);
    if (st == ATTNRT_OK && (count != 1 || info.status != ATTNRT_OK || info.device_count != 1)) st = ATTNRT_ERR_INTERNAL;
    return st;
}

static attnrt_status_t open_run_close(hammer_t *h)
{
    attnrt_context_t *ctx = NULL;
    thr_work_t w;
    float out[THR_OUT];
    attnrt_status_t st = attnrt_open("cpu:0", &ctx);
    if (st != ATTNRT_OK) return st;
    st = thr_work_make(&w, ctx, thr_devices[0].block_size, 7);
    if (st == ATTNRT_OK) st = thr_work_run(&w, NULL, out);
    if (st == ATTNRT_OK && memcmp(out, h->expected, sizeof out) != 0) st = ATTNRT_ERR_INTERNAL;
    thr_work_free(&w);
    attnrt_status_t closed = attnrt_close(ctx);
    if (st == ATTNRT_OK) atomic_fetch_add(&h->runs, 1);
    return st == ATTNRT_OK ? closed : st;
}

static void hammer_role(unsigned i, void *arg)
{
    hammer_t *h = arg;
    thr_report_t *r = &h->report[i];
    static const char *const what[ROLES] = {"attnrt_shutdown", "attnrt_init", "device queries", "plugin queries",
                                            "attnrt_open, run, attnrt_close"};
    if (i == 0) {
        shut_down_repeatedly(h, r);
        return;
    }
    unsigned seed = i * 7919u;
    for (int k = 0; k < ROUNDS && r->status == ATTNRT_OK; k++) {
        attnrt_status_t st = i == 1 ? attnrt_init() : i == 2 ? query_devices() : i == 3 ? query_plugins()
                                                                                         : open_run_close(h);
        thr_check(r, st, what[i]);
        pause_a_little(&seed);
    }
    atomic_fetch_sub(&h->workers_left, 1);
}

static void test_shutdown_racing_with_init_queries_and_runs_leaves_every_call_clean(void **state)
{
    (void)state;
    static hammer_t h;
    memset(&h, 0, sizeof h);
    setenv("ATTNRT_PLUGIN", "cpu", 1);
    attnrt_context_t *ctx = NULL;
    thr_work_t w;
    assert_ok(attnrt_open("cpu:0", &ctx)); /* the result every run must give */
    assert_ok(thr_work_make(&w, ctx, thr_devices[0].block_size, 7));
    assert_ok(thr_work_run(&w, NULL, h.expected));
    thr_work_free(&w);
    assert_ok(attnrt_close(ctx));

    atomic_store(&h.workers_left, ROLES - 1);
    thr_run(ROLES, hammer_role, &h);
    for (unsigned i = 0; i < ROLES; i++)
        if (h.report[i].status != ATTNRT_OK)
            fail_msg("%s returned %s: %s", h.report[i].where, attnrt_status_name(h.report[i].status),
                     h.report[i].error);
    printf("shutdowns: %ld done, %ld busy; attention runs: %ld\n", atomic_load(&h.shutdowns_ok),
           atomic_load(&h.shutdowns_busy), atomic_load(&h.runs));
    assert_true(atomic_load(&h.shutdowns_ok) > 0); /* the plugin was unloaded and loaded again mid-race */
    assert_int_equal(atomic_load(&h.runs), ROUNDS);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int threads_registry_tests(void)
{
    const struct CMUnitTest tests[] = {
        T(shutdown_while_a_device_query_is_inside_the_plugin_is_busy),
        T(shutdown_while_attnrt_open_is_inside_the_plugin_is_busy),
        T(shutdown_racing_with_init_queries_and_runs_leaves_every_call_clean),
    };
    return tl_run_isolated("threads: start-up and shut-down", tests, sizeof tests / sizeof tests[0]);
}
