/* Discovery: explicit mode (ATTNRT_PLUGIN) fails loudly, auto mode skips and keeps every reason; the
 * search order, shadowing, what is never searched, the default device, and ATTNRT_LOG=debug. */
#include <dlfcn.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader_util.h"

extern char **environ;

int loader_discovery_tests(void);
int loader_init_and_exit(void);

/* ---- explicit vs auto mode ---- */

static void test_explicit_mode_failure_fails_every_later_call(void **state)
{
    (void)state;
    tl_use("probe_fails");
    assert_status(attnrt_init(), ATTNRT_ERR_NO_DEVICE);
    assert_status(attnrt_init(), ATTNRT_ERR_NO_DEVICE); /* later calls return the first call's status */
    assert_error_has("tp-probe");
    attnrt_context_t *ctx = (attnrt_context_t *)&ctx; /* a sentinel: must not be overwritten */
    assert_status(attnrt_open(NULL, &ctx), ATTNRT_ERR_NO_DEVICE);
    assert_error_has("tp-probe");
    assert_ptr_equal(ctx, (attnrt_context_t *)&ctx);
    uint32_t count = 77;
    assert_status(attnrt_device_count(&count), ATTNRT_ERR_NO_DEVICE);
    assert_int_equal(count, 77);
    assert_ok(attnrt_plugin_count(&count)); /* the record of the failure stays readable */
    assert_int_equal(count, 1);
}

static void test_auto_mode_skips_bad_plugins_and_keeps_their_reasons(void **state)
{
    (void)state;
    const char *good = tl_tmp_copy("basic", "attnrt_basic.so");
    const char *major3 = tl_tmp_copy("abi_major3", "attnrt_abi_major3.so");
    const char *noent = tl_tmp_copy("no_entry", "attnrt_no_entry.so");
    const char *garbage = tl_tmp_write("attnrt_garbage.so", "garbage");
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    assert_ok(attnrt_init());
    assert_string_equal(attnrt_last_error(), "");

    const struct { const char *path; attnrt_status_t status; const char *reason; } want[] = {
        {good, ATTNRT_OK, ""},
        {major3, ATTNRT_ERR_ABI_MISMATCH, "ABI 3.0"},
        {noent, ATTNRT_ERR_PLUGIN, "attnrt_plugin_get_api"},
        {garbage, ATTNRT_ERR_PLUGIN, "cannot be loaded"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int index = tl_plugin_index(want[i].path);
        if (index < 0) fail_msg("%s was not tried", want[i].path);
        attnrt_plugin_info_t info = tl_info((uint32_t)index);
        assert_int_equal(info.status, want[i].status);
        assert_has(info.reason, want[i].reason);
        assert_one_line(info.reason);
        if (want[i].status != ATTNRT_OK) assert_has(info.reason, want[i].path);
    }
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open("basic:0", &ctx));
    assert_ok(attnrt_close(ctx));
}

static void test_auto_mode_searches_path_dirs_in_order_then_files_by_name(void **state)
{
    (void)state;
    char first[PATH_MAX], second[PATH_MAX];
    snprintf(first, sizeof first, "%s/first", tl_tmpdir());
    snprintf(second, sizeof second, "%s/second", tl_tmpdir());
    assert_int_equal(mkdir(first, 0700), 0);
    assert_int_equal(mkdir(second, 0700), 0);
    const char *b = tl_tmp_copy("basic", "first/attnrt_basic.so");
    const char *a = tl_tmp_copy("abi_major3", "first/attnrt_abi_major3.so");
    const char *z = tl_tmp_copy("two_devices", "second/attnrt_zzz.so");
    char list[2 * PATH_MAX + 2];
    snprintf(list, sizeof list, "%s:%s", second, first);
    setenv("ATTNRT_PLUGIN_PATH", list, 1);
    assert_ok(attnrt_init());
    int iz = tl_plugin_index(z), ia = tl_plugin_index(a), ib = tl_plugin_index(b);
    assert_true(iz >= 0 && ia >= 0 && ib >= 0);
    assert_true(iz < ia); /* directory order first ... */
    assert_true(ia < ib); /* ... then names in order within a directory */
#ifdef TL_CPU_PLUGIN
    int icpu = tl_plugin_index(TL_CPU_PLUGIN); /* the build tree comes after ATTNRT_PLUGIN_PATH */
    assert_true(icpu > ib);
#endif
    uint32_t d0 = 99;
    assert_ok(attnrt_device_find("two_devices:0", &d0));
    assert_int_equal(d0, 0); /* devices follow plugin order */
}

/* ---- no silent limits ---- */

static void test_every_one_of_a_hundred_plugin_folders_is_searched(void **state)
{
    (void)state;
    enum { FOLDERS = 100 };
    static char list[FOLDERS * (PATH_MAX / 8)];
    size_t used = 0;
    for (int i = 0; i < FOLDERS; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/d%03d", tl_tmpdir(), i);
        assert_int_equal(mkdir(dir, 0700), 0);
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ":" : "", dir);
        assert_true(n > 0 && (size_t)n < sizeof list - used);
        used += (size_t)n;
    }
    const char *last = tl_tmp_copy("basic", "d099/attnrt_basic.so"); /* the last folder holds a plugin */
    setenv("ATTNRT_PLUGIN_PATH", list, 1);
    assert_ok(attnrt_init());
    int index = tl_plugin_index(last);
    if (index < 0) fail_msg("%s in the 100th folder was never tried", last);
    assert_int_equal(tl_info((uint32_t)index).status, ATTNRT_OK);
#ifdef TL_CPU_PLUGIN
    assert_true(tl_plugin_index(TL_CPU_PLUGIN) >= 0); /* and the build tree after them */
#endif
}

static void test_every_one_of_three_hundred_files_in_a_folder_is_tried(void **state)
{
    (void)state;
    enum { FILES = 300 };
    char name[64];
    for (int i = 0; i < FILES - 1; i++) {
        snprintf(name, sizeof name, "attnrt_junk%03d.so", i);
        tl_tmp_write(name, "not a shared object");
    }
    const char *good = tl_tmp_copy("basic", "attnrt_zz_basic.so"); /* sorts last */
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    assert_ok(attnrt_init());
    uint32_t count = 0, here = 0;
    assert_ok(attnrt_plugin_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        attnrt_plugin_info_t info = tl_info(i);
        if (strncmp(info.path, tl_tmpdir(), strlen(tl_tmpdir())) != 0) continue;
        here++;
        if (info.status != ATTNRT_OK) assert_has(info.reason, "cannot be loaded");
    }
    assert_int_equal(here, FILES); /* each has a record: loaded, or with its reason */
    int index = tl_plugin_index(good);
    assert_true(index >= 0);
    assert_int_equal(tl_info((uint32_t)index).status, ATTNRT_OK);
}

#ifdef TL_CPU_PLUGIN /* registered only where the cpu plugin is built */
static void test_earlier_directory_shadows_a_plugin_of_the_same_name(void **state)
{
    (void)state;
    const char *copy = tl_tmp_copy(TL_CPU_PLUGIN, "attnrt_cpu.so");
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    assert_ok(attnrt_init());
    assert_true(tl_plugin_index(copy) >= 0);
    assert_int_equal(tl_plugin_index(TL_CPU_PLUGIN), -1); /* the build tree's cpu plugin is skipped */
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

static void test_explicit_name_is_looked_up_in_plugin_path(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN_PATH", TL_PLUGIN_DIR, 1);
    setenv("ATTNRT_PLUGIN", "two_devices", 1);
    assert_ok(attnrt_init());
    uint32_t count = 0;
    assert_ok(attnrt_plugin_count(&count));
    assert_int_equal(count, 1); /* explicit mode loads that one plugin and nothing else */
    assert_string_equal(tl_info(0).path, tl_plugin("two_devices"));
    assert_ok(attnrt_device_count(&count));
    assert_int_equal(count, 2);
}

#ifdef TL_CUDA_PLUGIN
static void test_built_cuda_plugin_is_found_by_name(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", "cuda", 1);
    attnrt_status_t st = attnrt_init();
    if (st != ATTNRT_OK && st != ATTNRT_ERR_NO_DEVICE) /* without a driver its probe fails: NO_DEVICE */
        fail_msg("ATTNRT_PLUGIN=cuda: %s: %s", attnrt_status_name(st), attnrt_last_error());
    assert_string_equal(tl_info(0).path, TL_CUDA_PLUGIN);
    assert_string_equal(tl_info(0).name, "cuda");
}
#else
static void test_missing_cuda_plugin_is_one_clear_line(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", "cuda", 1);
    attnrt_status_t st = attnrt_init();
    assert_status(st, ATTNRT_ERR_NOT_FOUND);
    assert_error_has("ATTNRT_PLUGIN=cuda");
    assert_error_has("attnrt_cuda.so");
    assert_error_has("-Dcuda=enabled");
    assert_one_line(attnrt_last_error());
}
#endif

static void test_missing_plugin_without_a_meson_option_suggests_none(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", "acme_npu", 1);
    assert_status(attnrt_init(), ATTNRT_ERR_NOT_FOUND);
    assert_error_has("attnrt_init: ATTNRT_PLUGIN=acme_npu: no plugin file attnrt_acme_npu.so in");
    assert_error_has("ATTNRT_PLUGIN_PATH");
    assert_null(strstr(attnrt_last_error(), "meson")); /* there is no -Dacme_npu option to suggest */
    assert_one_line(attnrt_last_error());
}

static void test_relative_or_malformed_plugin_name_is_invalid_argument(void **state)
{
    (void)state;
    const char *bad[] = {"./attnrt_basic.so", "plugins/attnrt_cpu.so", "CPU", "cpu plugin", "../cpu",
                         "a_name_that_is_far_too_long_to_be_any_plugins_name_at_all"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("ATTNRT_PLUGIN", bad[i], 1);
        assert_status(attnrt_init(), ATTNRT_ERR_INVALID_ARGUMENT);
        assert_error_has(bad[i]);
        assert_error_has("absolute path");
        assert_ok(attnrt_shutdown());
    }
}

static void test_relative_plugin_dirs_and_the_cwd_are_never_searched(void **state)
{
    (void)state;
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/rel", tl_tmpdir());
    assert_int_equal(mkdir(rel, 0700), 0);
    tl_tmp_copy("basic", "rel/attnrt_basic.so");
    tl_tmp_copy("two_devices", "attnrt_two_devices.so");
    assert_int_equal(chdir(tl_tmpdir()), 0); /* tl_teardown restores the cwd */
    setenv("ATTNRT_PLUGIN_PATH", "rel:.:./rel", 1);
    assert_ok(attnrt_init());
    uint32_t count = 0;
    assert_ok(attnrt_plugin_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        attnrt_plugin_info_t info = tl_info(i);
        assert_string_not_equal(info.name, "basic");
        assert_string_not_equal(info.name, "two_devices");
        assert_null(strstr(info.path, tl_tmpdir()));
    }
    assert_ok(attnrt_shutdown());
    setenv("ATTNRT_PLUGIN", "basic", 1); /* nor does explicit mode look there */
    assert_status(attnrt_init(), ATTNRT_ERR_NOT_FOUND);
}

static void test_shutdown_rereads_the_environment(void **state)
{
    (void)state;
    uint32_t count = 0;
    tl_use("basic");
    assert_ok(attnrt_device_count(&count));
    assert_int_equal(count, 1);
    assert_ok(attnrt_shutdown());
    tl_use("two_devices");
    assert_ok(attnrt_device_count(&count));
    assert_int_equal(count, 2);
}

static void test_plugin_with_zero_devices_loads_but_opens_nothing(void **state)
{
    (void)state;
    tl_use("zero_devices");
    assert_ok(attnrt_init());
    uint32_t count = 5;
    assert_ok(attnrt_device_count(&count));
    assert_int_equal(count, 0);
    attnrt_context_t *ctx = NULL;
    assert_status(attnrt_open(NULL, &ctx), ATTNRT_ERR_NO_DEVICE);
    assert_error_has("attnrt_open: no device");
    assert_error_has("attnrt-info");
    assert_status(attnrt_open("zero_devices:0", &ctx), ATTNRT_ERR_NOT_FOUND);
    assert_error_has("attnrt_open: no device named 'zero_devices:0'; devices: (none)");
}

#ifdef TL_CPU_PLUGIN /* registered only where the cpu plugin is built */
static void test_default_device_prefers_the_cpu_over_other_devices(void **state)
{
    (void)state;
    tl_tmp_copy("basic", "attnrt_basic.so"); /* sorts before the build tree's cpu plugin */
    setenv("ATTNRT_PLUGIN_PATH", tl_tmpdir(), 1);
    uint32_t index = 99, basic = 99;
    assert_ok(attnrt_device_default(&index));
    assert_ok(attnrt_device_find("basic:0", &basic));
    assert_int_equal(basic, 0);
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    assert_ok(attnrt_device_get_properties(index, &props));
    assert_string_equal(props.name, "cpu:0");
    setenv("ATTNRT_DEVICE", "basic:0", 1); /* ATTNRT_DEVICE overrides the ranking */
    assert_ok(attnrt_device_default(&index));
    assert_int_equal(index, basic);
}
#endif

/* ---- ATTNRT_LOG, seen from a child process (the log level is read once per process) ---- */

/* Runs this test program as a child that starts libattnrt and shuts it down, with ATTNRT_LOG set to
 * `level` and ATTNRT_PLUGIN_PATH to `path`; returns what it wrote to stderr (static) and fails the test
 * unless it exited 0. */
static const char *child_stderr(const char *level, const char *path)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    setenv("ATTNRT_PLUGIN_PATH", path, 1);
    setenv("ATTNRT_LOG", level, 1);
    char *argv[] = {(char *)tl_argv0, (char *)"--init-and-exit", NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, tl_argv0, &fa, NULL, argv, environ);
    unsetenv("ATTNRT_LOG");
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    assert_int_equal(rc, 0);
    static char log[1 << 16];
    size_t used = 0;
    ssize_t n;
    while ((n = read(fds[0], log + used, sizeof log - 1 - used)) > 0) used += (size_t)n;
    log[used] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return log;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void test_debug_log_shows_paths_dlerror_and_both_abi_versions(void **state)
{
    (void)state;
    const char *major3 = tl_tmp_copy("abi_major3", "attnrt_abi_major3.so");
    const char *garbage = tl_tmp_write("attnrt_garbage.so", "garbage");
    assert_null(dlopen(garbage, RTLD_NOW | RTLD_LOCAL));
    char why[1024];
    snprintf(why, sizeof why, "%s", dlerror());
    const char *log = child_stderr("debug", tl_tmpdir());

    char line[PATH_MAX + 64], abis[128];
    snprintf(line, sizeof line, "trying plugin %s", major3);
    assert_has(log, line);
    snprintf(line, sizeof line, "trying plugin %s", garbage);
    assert_has(log, line);
    snprintf(abis, sizeof abis, "plugin ABI 2.0, runtime ABI %u.%u", ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    assert_has(log, abis);
    assert_has(log, why);
    assert_has(log, "ATTNRT_PLUGIN_PATH");
}

/* ATTNRT_LOG by number: 3 is debug (every path tried), 2 is info (loads, but no paths). */
static void test_log_level_by_number(void **state)
{
    (void)state;
    const char *basic = tl_tmp_copy("basic", "attnrt_basic.so");
    char tried[PATH_MAX + 32];
    snprintf(tried, sizeof tried, "trying plugin %s", basic);
    const char *log = child_stderr("3", tl_tmpdir());
    assert_has(log, tried);
    assert_int_equal(count_of(log, "ATTNRT_LOG="), 0);
    log = child_stderr("2", tl_tmpdir());
    assert_has(log, "loaded plugin basic");
    assert_int_equal(count_of(log, "trying plugin"), 0);
    assert_int_equal(count_of(log, "ATTNRT_LOG="), 0);
}

/* A value that is no level: one line naming it and the accepted values, then logging as by default
 * (warn: the relative folder's warning shows, the info and debug lines do not). */
static void test_bad_log_value_is_reported_once_and_ignored(void **state)
{
    (void)state;
    tl_tmp_copy("basic", "attnrt_basic.so");
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "relative/plugins:%s", tl_tmpdir());
    static const struct { const char *value, *shown; } bad[] = {
        {"verbose", "ATTNRT_LOG='verbose' is not one of error, warn, info, debug (or 0-3); ignored, logging at warn\n"},
        {"4", "ATTNRT_LOG='4' is not one of"},
        {"DEBUG", "ATTNRT_LOG='DEBUG' is not one of"},
        {"de\nbug", "ATTNRT_LOG='de?bug' is not one of"},
        {"1 ", "ATTNRT_LOG='1 ' is not one of"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *log = child_stderr(bad[i].value, path);
        if (count_of(log, "ATTNRT_LOG=") != 1 || !strstr(log, bad[i].shown))
            fail_msg("ATTNRT_LOG=%s: expected one line with \"%s\" in:\n%s", bad[i].value, bad[i].shown, log);
        assert_has(log, "ignoring relative plugin directory 'relative/plugins'"); /* warn */
        assert_int_equal(count_of(log, "loaded plugin"), 0);                     /* info */
        assert_int_equal(count_of(log, "trying plugin"), 0);                     /* debug */
    }
    char long_value[201];
    memset(long_value, 'x', 200);
    long_value[200] = '\0';
    const char *log = child_stderr(long_value, path);
    char shown[128];
    snprintf(shown, sizeof shown, "ATTNRT_LOG='%.64s'... is not one of", long_value);
    assert_has(log, shown);
    assert_int_equal(count_of(log, "\n"), 2); /* that line and the relative folder's warning */
}

/* ---- an engine's log sink (attnrt_log_set_callback / attnrt_log_set_level) ---- */

typedef struct log_seen {
    int  lines, above_warn;
    char text[1 << 14];
} log_seen_t;

static void log_sink(uint32_t level, const char *line, void *user_data)
{
    log_seen_t *seen = user_data;
    seen->lines++;
    if (level > ATTNRT_LOG_WARN) seen->above_warn++;
    size_t used = strlen(seen->text);
    snprintf(seen->text + used, sizeof seen->text - used, "%s\n", line);
}

static void test_log_sink_receives_every_line_at_the_level_set(void **state)
{
    (void)state;
    static log_seen_t seen;
    tl_use("basic");
    assert_ok(attnrt_log_set_level(ATTNRT_LOG_DEBUG));
    assert_ok(attnrt_log_set_callback(log_sink, &seen));
    assert_ok(attnrt_init());
    assert_ok(attnrt_log_set_callback(NULL, NULL));
    assert_true(seen.above_warn > 0);
    char line[PATH_MAX + 64];
    snprintf(line, sizeof line, "trying plugin %s", tl_plugin("basic"));
    assert_has(seen.text, line);
    const int before = seen.lines; /* NULL restores stderr: the sink hears nothing more */
    assert_ok(attnrt_shutdown());
    assert_ok(attnrt_init());
    assert_int_equal(seen.lines, before);
}

static void test_log_level_drops_lines_above_it(void **state)
{
    (void)state;
    static log_seen_t seen;
    tl_use("basic");
    assert_ok(attnrt_log_set_level(ATTNRT_LOG_ERROR));
    assert_ok(attnrt_log_set_callback(log_sink, &seen));
    assert_ok(attnrt_init());
    assert_ok(attnrt_log_set_callback(NULL, NULL));
    assert_int_equal(seen.above_warn, 0);
}

static void test_log_level_beyond_debug_is_refused_naming_it(void **state)
{
    (void)state;
    assert_status(attnrt_log_set_level(ATTNRT_LOG_DEBUG + 1), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_log_set_level: level 4");
    assert_status(attnrt_log_set_level(UINT32_MAX), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("ATTNRT_LOG_DEBUG");
}

/* The child of the tests above: start up with the inherited environment, shut down, exit. */
int loader_init_and_exit(void)
{
    attnrt_status_t st = attnrt_init();
    return st == ATTNRT_OK && attnrt_shutdown() == ATTNRT_OK ? 0 : 1;
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int loader_discovery_tests(void)
{
    const struct CMUnitTest tests[] = {
        T(explicit_mode_failure_fails_every_later_call),
        T(auto_mode_skips_bad_plugins_and_keeps_their_reasons),
        T(auto_mode_searches_path_dirs_in_order_then_files_by_name),
        T(every_one_of_a_hundred_plugin_folders_is_searched),
        T(every_one_of_three_hundred_files_in_a_folder_is_tried),
#ifdef TL_CPU_PLUGIN
        T(earlier_directory_shadows_a_plugin_of_the_same_name),
#endif
        T(explicit_name_is_looked_up_in_plugin_path),
#ifdef TL_CUDA_PLUGIN
        T(built_cuda_plugin_is_found_by_name),
#else
        T(missing_cuda_plugin_is_one_clear_line),
#endif
        T(missing_plugin_without_a_meson_option_suggests_none),
        T(relative_or_malformed_plugin_name_is_invalid_argument),
        T(relative_plugin_dirs_and_the_cwd_are_never_searched),
        T(shutdown_rereads_the_environment),
        T(plugin_with_zero_devices_loads_but_opens_nothing),
#ifdef TL_CPU_PLUGIN
        T(default_device_prefers_the_cpu_over_other_devices),
#endif
        T(debug_log_shows_paths_dlerror_and_both_abi_versions),
        T(log_level_by_number),
        T(bad_log_value_is_reported_once_and_ignored),
        T(log_sink_receives_every_line_at_the_level_set),
        T(log_level_drops_lines_above_it),
        T(log_level_beyond_debug_is_refused_naming_it),
    };
    return tl_run_isolated("loader: discovery", tests, sizeof tests / sizeof tests[0]);
}
