/* What the runtime refuses to take from a plugin: more devices than the limit, a name or a device name that
 * is already taken or malformed, status codes outside attnrt_status_t, a NULL "successful" allocation, and
 * files any user could have replaced. Each refusal keeps the plugin's record with its reason (what
 * attnrt-info prints) and leaves the other plugins' devices as they were. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "loader_util.h"

int loader_validation_tests(void);

static int is_mapped(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

/* The record of the file `path`, which must exist. */
static attnrt_plugin_info_t record_of(const char *path)
{
    int index = tl_plugin_index(path);
    if (index < 0) fail_msg("%s was never tried", path);
    return tl_info((uint32_t)index);
}

/* Fails unless `path` was refused with ATTNRT_ERR_PLUGIN, a one-line reason holding `needle`, no device
 * and no code left mapped. */
static void assert_refused(const char *path, const char *needle)
{
    attnrt_plugin_info_t info = record_of(path);
    if (info.status != ATTNRT_ERR_PLUGIN)
        fail_msg("%s: status %s, expected ATTNRT_ERR_PLUGIN; reason \"%s\"", path, attnrt_status_name(info.status),
                 info.reason);
    assert_has(info.reason, needle);
    assert_has(info.reason, path);
    assert_one_line(info.reason);
    assert_int_equal(info.device_count, 0);
    assert_false(is_mapped(path));
}

/* Device `name` exists and belongs to the plugin loaded from `path`. */
static void assert_device_of(const char *name, const char *path)
{
    uint32_t index = 0, plugin = 0;
    assert_ok(attnrt_device_find(name, &index));
    assert_ok(attnrt_device_get_plugin(index, &plugin));
    assert_string_equal(tl_info(plugin).path, path);
}

/* ---- counts and names ---- */

static void test_plugin_reporting_more_devices_than_the_limit_is_refused(void **state)
{
    (void)state;
    const char *huge = tl_tmp_copy("huge_count", "attnrt_huge_count.so");
    const char *two = tl_tmp_copy("two_devices", "attnrt_two_devices.so");
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    assert_ok(attnrt_init()); /* the devices of 2^32 - 1 + 2 must not wrap a 32-bit total */
    assert_refused(huge, "reports 4294967295 devices, more than the 4096 a plugin may have");
    assert_device_of("two_devices:1", two);
    uint32_t index;
    assert_status(attnrt_device_find("huge_count:0", &index), ATTNRT_ERR_NOT_FOUND);
}

static void test_plugin_calling_itself_by_a_loaded_plugins_name_is_refused(void **state)
{
    (void)state;
    const char *basic = tl_tmp_copy("basic", "attnrt_basic.so");
    const char *claims = tl_tmp_copy("named_basic", "attnrt_named_basic.so"); /* sorts after: basic is loaded */
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    assert_ok(attnrt_init());
    assert_refused(claims, "calls itself 'basic', the name of the plugin already loaded from");
    assert_has(record_of(claims).reason, basic);
    assert_device_of("basic:0", basic);
    uint32_t index;
    assert_status(attnrt_device_find("named_basic:0", &index), ATTNRT_ERR_NOT_FOUND);
}

#ifdef TL_CPU_PLUGIN
static void test_plugin_calling_itself_cpu_never_stands_in_for_cpu0(void **state)
{
    (void)state;
    const char *cpu = tl_tmp_copy(TL_CPU_PLUGIN, "attnrt_cpu.so");
    const char *claims = tl_tmp_copy("named_cpu", "attnrt_named_cpu.so"); /* "cpu", with a device "cpu:0" */
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    assert_ok(attnrt_init());
    assert_refused(claims, "calls itself 'cpu'");
    assert_device_of("cpu:0", cpu);
    uint32_t count = 0, cpus = 0;
    assert_ok(attnrt_device_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        attnrt_device_properties_t props = {.struct_size = sizeof props};
        assert_ok(attnrt_device_get_properties(i, &props));
        cpus += strcmp(props.name, "cpu:0") == 0;
    }
    assert_int_equal(cpus, 1);
}
#endif

static void test_plugin_whose_device_name_is_taken_or_broken_is_refused(void **state)
{
    (void)state;
    static const struct {
        const char *first;  /* loaded first, or NULL */
        const char *plugin; /* the one refused */
        const char *reason;
    } cases[] = {
        {"basic", "dup_device", "its device 0 calls itself 'basic:0', the name of device 0 of the plugin basic"},
        {NULL, "twin_devices", "its device 1 calls itself 'twin', the name of device 0 of the plugin twin_devices"},
        {NULL, "unterminated", "device 0's name is not NUL-terminated within its 64 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[PATH_MAX], file[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/case%zu", tl_tmpdir(), i);
        assert_int_equal(mkdir(dir, 0700), 0);
        const char *first = NULL;
        if (cases[i].first) {
            snprintf(file, sizeof file, "case%zu/attnrt_a_%s.so", i, cases[i].first); /* sorts first */
            first = tl_tmp_copy(cases[i].first, file);
        }
        snprintf(file, sizeof file, "case%zu/attnrt_%s.so", i, cases[i].plugin);
        const char *refused = tl_tmp_copy(cases[i].plugin, file);
        setenv("ATTNRT_PLUGIN_PATH", dir, 1);
        assert_ok(attnrt_init());
        assert_refused(refused, cases[i].reason);
        if (first) assert_device_of("basic:0", first);
        assert_ok(attnrt_shutdown());

        tl_env_reset(); /* explicit mode: the refusal is the init's failure */
        setenv("ATTNRT_PLUGIN", refused, 1);
        attnrt_status_t st = attnrt_init();
        if (!first) {
            assert_status(st, ATTNRT_ERR_PLUGIN);
            assert_error_has(cases[i].reason);
        }
        assert_ok(attnrt_shutdown());
        tl_env_reset();
    }
}

/* ---- what plugin calls return ---- */

static void test_status_outside_the_enum_is_a_plugin_error(void **state)
{
    (void)state;
    tl_use("odd_status");
    attnrt_context_t *ctx = NULL;
    attnrt_stream_t *stream = (attnrt_stream_t *)&stream;
    void *p = (void *)&p;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_status(attnrt_mem_alloc(ctx, 64, &p), ATTNRT_ERR_PLUGIN); /* the plugin said 1: never success */
    assert_error_has("attnrt_mem_alloc(odd_status:0, 64 bytes): the odd_status plugin returned 1, which is not an "
                     "attnrt_status_t");
    assert_error_has("answers mem_alloc with 1"); /* its message still comes along */
    assert_ptr_equal(p, (void *)&p);
    assert_status(attnrt_stream_create(ctx, &stream), ATTNRT_ERR_PLUGIN);
    assert_error_has("attnrt_stream_create: the odd_status plugin returned -77, which is not an attnrt_status_t");
    assert_ptr_equal(stream, (attnrt_stream_t *)&stream);
    assert_ok(attnrt_close(ctx));
}

static void test_allocation_reported_as_success_with_a_null_pointer_is_refused(void **state)
{
    (void)state;
    tl_use("null_alloc");
    attnrt_context_t *ctx = NULL;
    void *p = (void *)&p;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_status(attnrt_mem_alloc(ctx, 64, &p), ATTNRT_ERR_PLUGIN);
    assert_error_has("attnrt_mem_alloc(null_alloc:0, 64 bytes)");
    assert_error_has("NULL pointer");
    assert_ptr_equal(p, (void *)&p);
    assert_ok(attnrt_close(ctx)); /* nothing was counted as allocated */
}

static void test_state_pool_over_a_null_allocation_is_refused(void **state)
{
    (void)state;
    tl_use("null_alloc");
    attnrt_context_t *ctx = NULL;
    attnrt_state_pool_t *pool = (attnrt_state_pool_t *)&pool;
    const int64_t slot_shape[] = {2, 4, 4};
    assert_ok(attnrt_open(NULL, &ctx));
    assert_status(attnrt_state_pool_create(ctx, ATTNRT_F32, 3, slot_shape, 4, &pool), ATTNRT_ERR_PLUGIN);
    assert_error_has("attnrt_state_pool_create(null_alloc:0)");
    assert_error_has("NULL pointer");
    assert_ptr_equal(pool, (attnrt_state_pool_t *)&pool);
    assert_ok(attnrt_close(ctx)); /* no pool was counted */
}

/* ---- files any user could have replaced ---- */

static void test_plugin_that_other_users_can_write_is_refused_unless_allowed(void **state)
{
    (void)state;
    static const struct {
        mode_t      file_mode, dir_mode;
        const char *allow;    /* ATTNRT_PLUGIN_ALLOW_WRITABLE, or NULL */
        const char *writable; /* "file" or "folder" when refused; NULL: loads */
    } cases[] = {
        {0644, 0755, NULL, NULL},
        {0646, 0755, NULL, "file"},
        {0644, 0777, NULL, "folder"},
        {0644, 01777, NULL, "folder"}, /* a sticky folder still lets anyone plant a file */
        {0666, 0777, "0", "file"},     /* only "1" allows */
        {0646, 0755, "1", NULL},
        {0644, 01777, "1", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[PATH_MAX], file[PATH_MAX], want[2 * PATH_MAX];
        snprintf(dir, sizeof dir, "%s/case%zu", tl_tmpdir(), i);
        assert_int_equal(mkdir(dir, 0700), 0);
        snprintf(file, sizeof file, "case%zu/attnrt_basic.so", i);
        const char *path = tl_tmp_copy("basic", file);
        assert_int_equal(chmod(path, cases[i].file_mode), 0);
        assert_int_equal(chmod(dir, cases[i].dir_mode), 0);
        setenv("ATTNRT_PLUGIN_PATH", dir, 1);
        if (cases[i].allow) setenv("ATTNRT_PLUGIN_ALLOW_WRITABLE", cases[i].allow, 1);
        assert_ok(attnrt_init());
        if (cases[i].writable) {
            int is_file = strcmp(cases[i].writable, "file") == 0;
            snprintf(want, sizeof want, "its %s %s is writable by every user (mode %04o)", cases[i].writable,
                     is_file ? path : dir, (unsigned)(is_file ? cases[i].file_mode : cases[i].dir_mode));
            assert_refused(path, want);
            assert_has(record_of(path).reason, "ATTNRT_PLUGIN_ALLOW_WRITABLE=1");
        } else {
            assert_device_of("basic:0", path);
        }
        assert_ok(attnrt_shutdown());
        unsetenv("ATTNRT_PLUGIN_ALLOW_WRITABLE");
        assert_int_equal(chmod(dir, 0700), 0);
    }
}

static void test_writable_plugin_named_explicitly_fails_the_start_up(void **state)
{
    (void)state;
    const char *path = tl_tmp_copy("basic", "attnrt_basic.so");
    assert_int_equal(chmod(path, 0666), 0);
    setenv("ATTNRT_PLUGIN", path, 1);
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_error_has("attnrt_init: ATTNRT_PLUGIN=");
    assert_error_has("is writable by every user");
    assert_false(is_mapped(path));
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int loader_validation_tests(void)
{
    const struct CMUnitTest tests[] = {
        T(plugin_reporting_more_devices_than_the_limit_is_refused),
        T(plugin_calling_itself_by_a_loaded_plugins_name_is_refused),
#ifdef TL_CPU_PLUGIN
        T(plugin_calling_itself_cpu_never_stands_in_for_cpu0),
#endif
        T(plugin_whose_device_name_is_taken_or_broken_is_refused),
        T(status_outside_the_enum_is_a_plugin_error),
        T(allocation_reported_as_success_with_a_null_pointer_is_refused),
        T(state_pool_over_a_null_allocation_is_refused),
        T(plugin_that_other_users_can_write_is_refused_unless_allowed),
        T(writable_plugin_named_explicitly_fails_the_start_up),
    };
    return tl_run_isolated("loader: what a plugin may return, and where it may lie", tests,
                           sizeof tests / sizeof tests[0]);
}
