/* Loading one plugin: ABI negotiation, vtable checks, probe/init/count failures, lifecycle, and files
 * that are not plugins. main() runs this group and those of test_loader_discovery.c,
 * test_loader_context.c, test_loader_args.c and test_loader_validation.c, each test in its own process
 * (tl_run_isolated). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "loader_util.h"

int loader_discovery_tests(void);
int loader_context_tests(void);
int loader_args_tests(void);
int loader_validation_tests(void);
int loader_init_and_exit(void);

/* True while the shared object at `path` is mapped in this process. */
static int is_mapped(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != NULL;
}

static void abi_str(char *buf, size_t cap, unsigned major, unsigned minor)
{
    snprintf(buf, cap, "ABI %u.%u", major, minor);
}

/* ---- ABI negotiation and the vtable check ---- */

static void test_abi_major_mismatch_is_refused_with_an_actionable_message(void **state)
{
    (void)state;
    const char *path = tl_plugin("abi_major3");
    tl_use("abi_major3");
    assert_status(attnrt_init(), ATTNRT_ERR_ABI_MISMATCH);
    char plugin_abi[32], runtime_abi[32];
    abi_str(plugin_abi, sizeof plugin_abi, 3, 0); /* the variant declares 3.0 */
    abi_str(runtime_abi, sizeof runtime_abi, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    assert_error_has(path);
    assert_error_has(plugin_abi);
    assert_error_has(runtime_abi);
    assert_error_has("rebuild the plugin");
    assert_one_line(attnrt_last_error());

    attnrt_plugin_info_t info = tl_info(0);
    assert_int_equal(info.status, ATTNRT_ERR_ABI_MISMATCH);
    assert_int_equal(info.abi_major, 3);
    assert_int_equal(info.abi_minor, 0);
    assert_string_equal(info.name, "abi_major3"); /* the file's stem: it never got far enough to say */
    assert_has(info.reason, plugin_abi);
}

static void test_refused_plugin_is_unmapped(void **state)
{
    (void)state;
    tl_use("basic");
    assert_ok(attnrt_init());
    assert_true(is_mapped(tl_plugin("basic"))); /* the control: a loaded plugin is mapped */
    assert_ok(attnrt_shutdown());
    assert_false(is_mapped(tl_plugin("basic")));

    tl_use("abi_major3");
    assert_status(attnrt_init(), ATTNRT_ERR_ABI_MISMATCH);
    assert_false(is_mapped(tl_plugin("abi_major3")));
}

static void test_older_minor_plugin_is_accepted(void **state)
{
    (void)state;
    tl_use("older_minor");
    assert_ok(attnrt_init());
    attnrt_plugin_info_t info = tl_info(0);
    assert_int_equal(info.status, ATTNRT_OK);
    assert_int_equal(info.abi_major, ATTNRT_ABI_MAJOR);
    assert_int_equal(info.abi_minor, 0);
    assert_string_equal(info.reason, "");
    uint32_t count = 0, index = 99;
    assert_ok(attnrt_device_count(&count));
    assert_int_equal(count, 1);
    assert_ok(attnrt_device_find("older_minor:0", &index));
    assert_int_equal(index, 0);
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_string_equal(attnrt_context_device_name(ctx), "older_minor:0");
    /* merge_states (a 1.1 entry) lies beyond its struct_size: it reads as NULL, never called. */
    char msg[1024];
    assert_status(tl_merge_once(ctx, msg, sizeof msg), ATTNRT_ERR_UNSUPPORTED);
    assert_has(msg, "has no merge_states");
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "violations"), 0);
    assert_int_equal(tl_attr(0, "op_calls"), 0);
}

static void test_current_minor_plugin_gets_its_op_entries_called(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    char msg[1024];
    assert_ok(attnrt_open(NULL, &ctx));
    attnrt_status_t st = tl_merge_once(ctx, msg, sizeof msg); /* the control for the test above */
    if (st != ATTNRT_OK) fail_msg("merge on basic:0: %s: %s", attnrt_status_name(st), msg);
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "op_calls"), 1);
    assert_int_equal(tl_attr(0, "violations"), 0);
}

static void test_newer_minor_plugin_is_accepted_and_its_extra_entries_ignored(void **state)
{
    (void)state;
    tl_use("newer_minor");
    assert_ok(attnrt_init());
    attnrt_plugin_info_t info = tl_info(0);
    assert_int_equal(info.status, ATTNRT_OK);
    assert_int_equal(info.abi_minor, ATTNRT_ABI_MINOR + 1);
    assert_int_equal(info.device_count, 1);

    attnrt_context_t *ctx = NULL;
    void *p = NULL;
    assert_ok(attnrt_open("newer_minor:0", &ctx));
    assert_ok(attnrt_mem_alloc(ctx, 64, &p));
    assert_ok(attnrt_mem_set(ctx, p, 0, 64, NULL));
    assert_ok(attnrt_mem_free(ctx, p));
    char msg[1024];
    assert_status(tl_merge_once(ctx, msg, sizeof msg), ATTNRT_OK);
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "op_calls"), 1);
    assert_int_equal(tl_attr(0, "violations"), 0); /* the appended entry counts a violation if called */
}

static void test_vtable_smaller_than_abi_1_0_is_refused(void **state)
{
    (void)state;
    tl_use("tiny_vtable");
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_error_has(tl_plugin("tiny_vtable"));
    assert_error_has("smaller than its required entries");
    assert_one_line(attnrt_last_error());
}

static void test_null_required_entry_is_refused_naming_it(void **state)
{
    (void)state;
    tl_use("null_required");
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_error_has(tl_plugin("null_required"));
    assert_error_has("'device_open'");
    assert_one_line(attnrt_last_error());
    assert_int_equal(tl_info(0).status, ATTNRT_ERR_PLUGIN);
}

static void test_plugin_without_a_name_is_refused(void **state)
{
    (void)state;
    tl_use("no_name");
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_error_has(tl_plugin("no_name"));
    assert_error_has("has no name");
}

static void test_probe_failure_is_no_device_with_the_plugins_message(void **state)
{
    (void)state;
    tl_use("probe_fails");
    tl_trace_start();
    assert_status(attnrt_init(), ATTNRT_ERR_NO_DEVICE);
    assert_string_equal(tl_trace(), "probe_fails probe\n"); /* a failed probe stops before init */
    assert_error_has("probe failed");
    assert_error_has("tp-probe: no fake driver here");
    assert_error_has(tl_plugin("probe_fails"));
    assert_one_line(attnrt_last_error());
}

static void test_init_failure_is_refused_with_the_plugins_message(void **state)
{
    (void)state;
    tl_use("init_fails");
    tl_trace_start();
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_string_equal(tl_trace(), "init_fails probe\ninit_fails init\n"); /* nothing to shut down */
    assert_error_has("init failed");
    assert_error_has("tp-init: the fake driver refused to start");
    assert_error_has(tl_plugin("init_fails"));
    assert_false(is_mapped(tl_plugin("init_fails")));
}

static void test_device_count_failure_is_refused_and_the_plugin_shut_down(void **state)
{
    (void)state;
    tl_use("count_fails");
    tl_trace_start();
    assert_status(attnrt_init(), ATTNRT_ERR_DEVICE);
    assert_error_has("cannot count devices");
    assert_error_has("tp-count: the fake driver lost its devices");
    /* init succeeded, so shutdown must free what it made before the unload */
    assert_string_equal(tl_trace(), "count_fails probe\ncount_fails init\ncount_fails shutdown\n");
    assert_false(is_mapped(tl_plugin("count_fails")));
}

static void test_plugin_names_and_versions_are_copied_not_borrowed(void **state)
{
    (void)state;
    tl_use("probe_fails"); /* refused after it told its name, then unloaded */
    assert_status(attnrt_init(), ATTNRT_ERR_NO_DEVICE);
    assert_false(is_mapped(tl_plugin("probe_fails")));
    attnrt_plugin_info_t info = tl_info(0); /* borrowed strings would point into the unmapped file */
    assert_string_equal(info.name, "probe_fails");
    assert_string_equal(info.version, "9.8.7-test");
    assert_int_equal(info.abi_major, ATTNRT_ABI_MAJOR);
    assert_int_equal(info.status, ATTNRT_ERR_NO_DEVICE);
    assert_has(info.reason, "tp-probe: no fake driver here");
}

static void test_each_plugin_is_initialised_once_and_shut_down_once(void **state)
{
    (void)state;
    tl_use("basic");
    tl_trace_start();
    assert_ok(attnrt_init());
    assert_ok(attnrt_init()); /* later calls reuse the first */
    uint32_t count = 0;
    assert_ok(attnrt_device_count(&count));
    assert_string_equal(tl_trace(), "basic probe\nbasic init\n");
    assert_ok(attnrt_shutdown());
    assert_string_equal(tl_trace(), "basic probe\nbasic init\nbasic shutdown\n");
    assert_ok(attnrt_shutdown()); /* a second shutdown has nothing left to do */
    assert_string_equal(tl_trace(), "basic probe\nbasic init\nbasic shutdown\n");
}

static void test_plugin_is_given_the_runtimes_abi(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
    uint32_t i = 0;
    for (; i < 16; i++) {
        assert_ok(attnrt_device_get_attribute(0, i, &attr));
        if (strcmp(attr.key, "host_abi") == 0) break;
    }
    char want[32];
    snprintf(want, sizeof want, "%u.%u", ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    assert_string_equal(attr.value, want);
    assert_int_equal(tl_attr(0, "live_inits"), 1);
}

/* ---- files that are not plugins ---- */

static void test_nonexistent_path_is_not_found(void **state)
{
    (void)state;
    tl_env_reset();
    setenv("ATTNRT_PLUGIN", "/nonexistent/attnrt_x.so", 1);
    assert_status(attnrt_init(), ATTNRT_ERR_NOT_FOUND);
    assert_error_has("/nonexistent/attnrt_x.so");
    assert_error_has("no such file");
    attnrt_plugin_info_t info = tl_info(0);
    assert_int_equal(info.status, ATTNRT_ERR_NOT_FOUND);
    assert_string_equal(info.name, "x");
}

static void test_file_that_is_not_a_shared_object_is_refused_with_dlerror(void **state)
{
    (void)state;
    const char *path = tl_tmp_write("attnrt_garbage.so", "this is not an ELF file\n");
    assert_null(dlopen(path, RTLD_NOW | RTLD_LOCAL));
    char why[1024];
    snprintf(why, sizeof why, "%s", dlerror()); /* what the runtime should have passed on */
    tl_env_reset();
    setenv("ATTNRT_PLUGIN", path, 1);
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_error_has("cannot be loaded");
    assert_error_has(why);
    assert_one_line(attnrt_last_error());
}

static void test_plugin_without_entry_symbol_is_refused_naming_it(void **state)
{
    (void)state;
    tl_use("no_entry");
    assert_status(attnrt_init(), ATTNRT_ERR_PLUGIN);
    assert_error_has(tl_plugin("no_entry"));
    assert_error_has("does not export attnrt_plugin_get_api");
}

static void test_entry_returning_null_is_refused(void **state)
{
    (void)state;
    tl_use("returns_null");
    assert_status(attnrt_init(), ATTNRT_ERR_ABI_MISMATCH);
    assert_error_has(tl_plugin("returns_null"));
    assert_error_has("declined");
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int main(int argc, char **argv)
{
    tl_argv0 = argv[0];
    if (argc > 1 && strcmp(argv[1], "--init-and-exit") == 0) return loader_init_and_exit();
    const struct CMUnitTest tests[] = {
        T(abi_major_mismatch_is_refused_with_an_actionable_message),
        T(refused_plugin_is_unmapped),
        T(older_minor_plugin_is_accepted),
        T(current_minor_plugin_gets_its_op_entries_called),
        T(newer_minor_plugin_is_accepted_and_its_extra_entries_ignored),
        T(vtable_smaller_than_abi_1_0_is_refused),
        T(null_required_entry_is_refused_naming_it),
        T(plugin_without_a_name_is_refused),
        T(probe_failure_is_no_device_with_the_plugins_message),
        T(init_failure_is_refused_with_the_plugins_message),
        T(device_count_failure_is_refused_and_the_plugin_shut_down),
        T(plugin_names_and_versions_are_copied_not_borrowed),
        T(each_plugin_is_initialised_once_and_shut_down_once),
        T(plugin_is_given_the_runtimes_abi),
        T(nonexistent_path_is_not_found),
        T(file_that_is_not_a_shared_object_is_refused_with_dlerror),
        T(plugin_without_entry_symbol_is_refused_naming_it),
        T(entry_returning_null_is_refused),
    };
    int failed = tl_run_isolated("loader: loading one plugin", tests, sizeof tests / sizeof tests[0]);
    failed += loader_discovery_tests();
    failed += loader_context_tests();
    failed += loader_args_tests();
    failed += loader_validation_tests();
    return failed ? 1 : 0;
}
