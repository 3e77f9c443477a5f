/* attnrt-info, run as a user runs it: the built binary under controlled environments, its text and
 * --json output checked against what the build tree's cpu plugin must report (JSON schema version 1:
 * docs/tools.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt_plugin.h"
#include "info_check.h"

#ifndef CPU_PLUGIN_PATH
#error "CPU_PLUGIN_PATH (the build tree's cpu plugin) must be defined by the build"
#endif

static const char *const op_names[] = {"kv_write", "paged_attention", "merge_states", "cascade",
                                       "mla", "lightning", "gated_delta"};
#define OP_NAME_COUNT (sizeof op_names / sizeof op_names[0])

/* ---- auto mode: the build tree's cpu plugin ---- */

static void test_text_lists_cpu_plugin_as_loaded_with_its_path(void **state)
{
    (void)state;
    tool_result_t r = run_info(NULL, NULL);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.err, "");
    assert_line_starting(r.out, "libattnrt ", "plugin ABI");
    assert_line_starting(r.out, "discovery: ", "auto");
    assert_line_starting(r.out, "  cpu ", ": loaded, 1 device");
    assert_int_equal(count_lines_containing(r.out, "    path: " CPU_PLUGIN_PATH), 1);
    /* other plugins of the build tree may be listed as failed (cuda without a driver); cpu is not */
    assert_int_equal(count_lines_containing(r.out, "reason:") <= count_lines_containing(r.out, ": not loaded ("), 1);
    tool_result_free(&r);
}

static void test_text_lists_cpu0_with_its_properties(void **state)
{
    (void)state;
    tool_result_t j = run_info("--json", NULL);
    jv_t *doc = parse_or_fail(j.out);
    tool_result_t r = run_info(NULL, NULL);
    assert_int_equal(r.exit_code, 0);
    /* The build tree may hold more plugins (npu_sim, cuda); cpu's folder is searched first. */
    assert_line_starting(r.out, "devices: ", "default cpu:0");
    assert_line_starting(r.out, "  cpu:0 (default): usable", NULL);
    assert_line_starting(r.out, "    plugin ", "cpu");
    assert_line_starting(r.out, "    type ", "cpu");
    static const char *const fields[] = {"vendor", "model", "arch", "driver"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char prefix[32], path[64];
        snprintf(prefix, sizeof prefix, "    %s ", fields[i]);
        snprintf(path, sizeof path, "devices.0.%s", fields[i]);
        const char *value = jv_str(jv_path(doc, path));
        assert_non_null(value);
        assert_line_starting(r.out, prefix, value);
    }
    char units[64];
    snprintf(units, sizeof units, "    compute units  %.0f", json_number(doc, "devices.0.compute_units"));
    assert_line_starting(r.out, units, NULL);
    assert_line_starting(r.out, "    memory ", " total, ");
    const jv_t *attrs = jv_path(doc, "devices.0.attributes");
    assert_non_null(attrs);
    assert_true(attrs->count > 0);
    for (size_t i = 0; i < attrs->count; i++) {
        char line[512];
        snprintf(line, sizeof line, "      %s = %s", attrs->keys[i], jv_str(&attrs->items[i]));
        assert_int_equal(count_lines_containing(r.out, line), 1);
    }
    char usable[64];
    snprintf(usable, sizeof usable, "%.0f of %zu device", json_number(doc, "usable_devices"),
             jv_get(doc, "devices")->count);
    assert_line_starting(r.out, usable, NULL);
    jv_free(doc);
    tool_result_free(&j);
    tool_result_free(&r);
}

static void test_json_names_cpu_plugin_and_cpu0(void **state)
{
    (void)state;
    tool_result_t r = run_info("--json", NULL);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.err, "");
    jv_t *doc = parse_or_fail(r.out);
    assert_int_equal(doc->type, JV_OBJECT);
    assert_non_null(jv_str(jv_get(doc, "version")));
    assert_int_equal((int)json_number(doc, "abi.major"), ATTNRT_ABI_MAJOR);
    assert_int_equal((int)json_number(doc, "abi.minor"), ATTNRT_ABI_MINOR);
    assert_json_string(doc, "mode", "auto");
    assert_json_string(doc, "env.ATTNRT_PLUGIN_PATH", "");
    assert_json_null(doc, "init_error");
    assert_true(jv_get(doc, "plugins")->count >= 1); /* the build tree may hold more plugins than cpu */
    assert_json_string(doc, "plugins.0.name", "cpu");
    assert_json_string(doc, "plugins.0.path", CPU_PLUGIN_PATH);
    assert_true(json_bool(doc, "plugins.0.loaded"));
    assert_json_string(doc, "plugins.0.status", "ATTNRT_OK");
    assert_json_null(doc, "plugins.0.reason");
    assert_int_equal((int)json_number(doc, "plugins.0.device_count"), 1);
    assert_true(jv_get(doc, "devices")->count >= 1);
    assert_json_string(doc, "devices.0.name", "cpu:0");
    assert_json_string(doc, "devices.0.plugin", "cpu");
    assert_json_string(doc, "devices.0.type", "cpu");
    assert_true(json_number(doc, "devices.0.compute_units") >= 1);
    assert_true(json_number(doc, "devices.0.memory_total_bytes") > 0);
    assert_true(json_number(doc, "devices.0.memory_free_bytes") <= json_number(doc, "devices.0.memory_total_bytes"));
    assert_true(json_bool(doc, "devices.0.default"));
    assert_true(json_bool(doc, "devices.0.usable"));
    assert_json_null(doc, "devices.0.open_error");
    assert_json_string(doc, "default_device", "cpu:0");
    assert_true((int)json_number(doc, "usable_devices") >= 1);
    jv_free(doc);
    tool_result_free(&r);
}

/* The index of string `s` in array `a` (JSON strings), or -1. */
static int index_in(const jv_t *a, const char *s)
{
    for (size_t i = 0; a && s && i < a->count; i++)
        if (jv_str(&a->items[i]) && strcmp(jv_str(&a->items[i]), s) == 0) return (int)i;
    return -1;
}

/* One structured refusal: its op, a combination of the op's grid, a reason listed in the op's reasons. */
static void check_refusal(const jv_t *doc, const char *op_name, const jv_t *op, const jv_t *grid, const jv_t *x)
{
    assert_int_equal(x->type, JV_OBJECT);
    assert_string_equal(jv_str(jv_get(x, "op")), op_name);
    if (index_in(jv_get(grid, "q_dtypes"), jv_str(jv_get(x, "q_dtype"))) < 0 ||
        index_in(jv_get(grid, "kv_dtypes"), jv_str(jv_get(x, "kv_dtype"))) < 0)
        fail_msg("%s: a refusal's dtypes are not in its grid", op_name);
    const double qk = json_number(x, "head_dim_qk"), v = json_number(x, "head_dim_v");
    const jv_t *heads = jv_get(grid, "head_dims");
    int head_found = 0;
    for (size_t i = 0; i < heads->count; i++)
        head_found |= json_number(&heads->items[i], "0") == qk && json_number(&heads->items[i], "1") == v;
    if (!head_found) fail_msg("%s: head_dim %g/%g is not in its grid", op_name, qk, v);
    const jv_t *blocks = jv_get(grid, "block_sizes");
    int block_found = 0;
    for (size_t i = 0; i < blocks->count; i++) block_found |= blocks->items[i].number == json_number(x, "block_size");
    if (!block_found) fail_msg("%s: block_size %g is not in its grid", op_name, json_number(x, "block_size"));
    const jv_t *features = jv_get(x, "features");
    assert_true(features && features->type == JV_ARRAY && features->count <= 1);
    if (features->count) assert_true(index_in(jv_get(grid, "features"), jv_str(&features->items[0])) > 0);
    const char *reason = jv_str(jv_get(x, "reason"));
    assert_non_null(reason);
    const jv_t *reasons = jv_get(op, "reasons");
    int listed = 0;
    for (size_t k = 0; k < reasons->count; k++) listed |= strcmp(jv_str(jv_get(&reasons->items[k], "reason")), reason) == 0;
    if (!listed) fail_msg("%s: refusal reason '%s' is not among the op's reasons", op_name, reason);
    (void)doc;
}

static void test_json_capabilities_cover_every_op_and_add_up(void **state)
{
    (void)state;
    tool_result_t r = run_info("--json", NULL);
    jv_t *doc = parse_or_fail(r.out);
    /* each family's grid: q x kv x heads x blocks x features */
    assert_true(json_number(doc, "capability_grids.attention.combinations") == 3 * 5 * 3 * 3 * 6);
    assert_true(json_number(doc, "capability_grids.mla.combinations") == 3 * 5 * 2 * 3 * 5);
    assert_true(json_number(doc, "capability_grids.linear.combinations") == 3 * 3 * 3 * 1 * 1);
    const jv_t *devices = jv_get(doc, "devices");
    for (size_t dev = 0; dev < devices->count; dev++) {
        const jv_t *caps = jv_get(&devices->items[dev], "capabilities");
        assert_non_null(caps);
        assert_int_equal(caps->count, OP_NAME_COUNT);
        for (size_t i = 0; i < OP_NAME_COUNT; i++) {
            const jv_t *op = jv_get(caps, op_names[i]);
            if (!op) fail_msg("capabilities lack op '%s'", op_names[i]);
            double supported = json_number(op, "supported"), total = json_number(op, "total"), counted = 0;
            const char *grid_name = jv_str(jv_get(op, "grid"));
            if (!grid_name) fail_msg("op '%s' does not name its grid", op_names[i]);
            char path[96];
            snprintf(path, sizeof path, "capability_grids.%s", grid_name);
            const jv_t *grid = jv_path(doc, path);
            assert_non_null(grid);
            assert_true(total == json_number(grid, "combinations"));
            const jv_t *reasons = jv_get(op, "reasons"), *refusals = jv_get(op, "refusals");
            assert_true(reasons && reasons->type == JV_ARRAY);
            assert_true(refusals && refusals->type == JV_ARRAY);
            for (size_t k = 0; k < reasons->count; k++) {
                const char *reason = jv_str(jv_get(&reasons->items[k], "reason"));
                assert_non_null(reason);
                assert_true(reason[0] != '\0');
                for (size_t m = 0; m < k; m++) /* each reason once per op */
                    assert_string_not_equal(reason, jv_str(jv_get(&reasons->items[m], "reason")));
                double count = json_number(&reasons->items[k], "count"), seen = 0;
                assert_true(count >= 1);
                for (size_t m = 0; m < refusals->count; m++)
                    seen += strcmp(jv_str(jv_get(&refusals->items[m], "reason")), reason) == 0;
                assert_true(seen == count); /* the count is the number of refusals that give it */
                counted += count;
            }
            /* every combination not supported is listed once, with the fields asked */
            assert_true(json_number(op, "refused") == (double)refusals->count);
            assert_true(supported + counted == total);
            assert_true(supported + (double)refusals->count == total);
            for (size_t m = 0; m < refusals->count; m++) check_refusal(doc, op_names[i], op, grid, &refusals->items[m]);
        }
    }
    jv_free(doc);
    tool_result_free(&r);
}

/* cpu:0 refuses exactly cascade with ALiBi or a sliding window: the structured list says which. */
static void test_json_refusals_name_the_combinations_cpu0_refuses(void **state)
{
    (void)state;
    static const char *const env_cpu[] = {"ATTNRT_PLUGIN=cpu", NULL};
    tool_result_t r = run_info("--json", env_cpu);
    jv_t *doc = parse_or_fail(r.out);
    assert_true(json_number(doc, "schema_version") == 1);
    assert_json_string(doc, "tool", "attnrt-info");
    const jv_t *refusals = jv_path(doc, "devices.0.capabilities.cascade.refusals");
    assert_non_null(refusals);
    assert_int_equal(refusals->count, 3 * 5 * 3 * 3 * 2); /* every q x kv x head x block, for alibi and sliding_window */
    size_t alibi = 0;
    for (size_t i = 0; i < refusals->count; i++) {
        const char *feature = jv_str(jv_path(&refusals->items[i], "features.0"));
        assert_non_null(feature);
        if (strcmp(feature, "alibi") == 0) alibi++;
        else assert_string_equal(feature, "sliding_window");
        assert_non_null(strstr(jv_str(jv_get(&refusals->items[i], "reason")), "ALiBi or sliding windows"));
    }
    assert_int_equal(alibi, refusals->count / 2);
    assert_int_equal(jv_path(doc, "devices.0.capabilities.paged_attention.refusals")->count, 0);
    jv_free(doc);
    tool_result_free(&r);
}

static void test_text_names_each_refusal_reason_once_and_stays_short(void **state)
{
    (void)state;
    /* One plugin only: reasons are listed once per device, and other devices may share some. */
    static const char *const env_cpu[] = {"ATTNRT_PLUGIN=cpu", NULL};
    tool_result_t j = run_info("--json", env_cpu);
    jv_t *doc = parse_or_fail(j.out);
    tool_result_t r = run_info(NULL, env_cpu);
    assert_true(count_occurrences(r.out, "\n") < 100);
    const jv_t *caps = jv_path(doc, "devices.0.capabilities");
    assert_non_null(caps);
    for (size_t i = 0; i < caps->count; i++) {
        char row[64];
        snprintf(row, sizeof row, "      %s ", caps->keys[i]);
        assert_line_starting(r.out, row, "supported");
        const jv_t *refusals = jv_get(&caps->items[i], "refusals");
        for (size_t k = 0; refusals && k < refusals->count; k++) {
            const char *reason = jv_str(jv_get(&refusals->items[k], "reason"));
            assert_non_null(reason);
            char listed[1024]; /* "      [3] <reason>  (180 combinations)" */
            snprintf(listed, sizeof listed, "] %s  (", reason);
            int times = count_lines_containing(r.out, listed);
            if (times != 1) fail_msg("reason '%s' is listed %d times in the text, not once", reason, times);
        }
    }
    jv_free(doc);
    tool_result_free(&j);
    tool_result_free(&r);
}

/* ---- explicit mode ---- */

static const char *const env_cuda[] = {"ATTNRT_PLUGIN=cuda", NULL};

static void test_explicit_cuda_without_its_plugin_fails_with_one_line_naming_it(void **state)
{
    (void)state;
    tool_result_t r = run_info(NULL, env_cuda);
    assert_int_equal(r.exit_code, 1);
    assert_line_starting(r.out, "discovery: ", "explicit (ATTNRT_PLUGIN=cuda)");
    assert_line_starting(r.out, "init: failed", NULL);
    assert_int_equal(count_lines_containing(r.out, "error: "), 1);
    assert_line_starting(r.out, "error: ", "ATTNRT_PLUGIN=cuda");
    assert_line_starting(r.out, "no usable device", NULL);
    tool_result_free(&r);
}

static void test_explicit_cuda_without_its_plugin_sets_json_init_error(void **state)
{
    (void)state;
    tool_result_t r = run_info("--json", env_cuda);
    assert_int_equal(r.exit_code, 1);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_string(doc, "mode", "explicit");
    assert_json_string(doc, "env.ATTNRT_PLUGIN", "cuda");
    const char *why = jv_str(jv_get(doc, "init_error"));
    assert_non_null(why);
    assert_non_null(strstr(why, "ATTNRT_PLUGIN=cuda"));
    assert_null(strchr(why, '\n'));
    assert_int_equal(jv_get(doc, "devices")->count, 0);
    assert_json_null(doc, "default_device");
    assert_int_equal((int)json_number(doc, "usable_devices"), 0);
    jv_free(doc);
    tool_result_free(&r);
}

static const char *const env_missing_file[] = {"ATTNRT_PLUGIN=/nonexistent/attnrt_x.so", NULL};

static void test_missing_plugin_file_is_listed_with_its_reason(void **state)
{
    (void)state;
    tool_result_t r = run_info(NULL, env_missing_file);
    assert_int_equal(r.exit_code, 1);
    assert_line_starting(r.out, "error: ", "/nonexistent/attnrt_x.so: no such file");
    assert_line_starting(r.out, "  x ", "not loaded (ATTNRT_ERR_NOT_FOUND)");
    assert_line_starting(r.out, "    path: ", "/nonexistent/attnrt_x.so");
    assert_line_starting(r.out, "    reason: ", "/nonexistent/attnrt_x.so: no such file");
    tool_result_free(&r);

    r = run_info("--json", env_missing_file);
    assert_int_equal(r.exit_code, 1);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_string(doc, "plugins.0.path", "/nonexistent/attnrt_x.so");
    assert_false(json_bool(doc, "plugins.0.loaded"));
    assert_json_string(doc, "plugins.0.status", "ATTNRT_ERR_NOT_FOUND");
    assert_json_string(doc, "plugins.0.reason", "/nonexistent/attnrt_x.so: no such file");
    assert_non_null(strstr(jv_str(jv_get(doc, "init_error")), "no such file"));
    jv_free(doc);
    tool_result_free(&r);
}

static void test_explicit_cpu_by_absolute_path_is_usable(void **state)
{
    (void)state;
    const char *const env[] = {"ATTNRT_PLUGIN=" CPU_PLUGIN_PATH, NULL};
    tool_result_t r = run_info("--json", env);
    assert_int_equal(r.exit_code, 0);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_string(doc, "mode", "explicit");
    assert_json_null(doc, "init_error");
    assert_int_equal(jv_get(doc, "plugins")->count, 1);
    assert_json_string(doc, "devices.0.name", "cpu:0");
    jv_free(doc);
    tool_result_free(&r);
}

static void test_bad_default_device_is_reported_and_cpu0_stays_usable(void **state)
{
    (void)state;
    const char *const env[] = {"ATTNRT_DEVICE=warp:9", NULL};
    tool_result_t r = run_info("--json", env);
    assert_int_equal(r.exit_code, 0);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_null(doc, "default_device");
    const char *why = jv_str(jv_get(doc, "default_device_error"));
    assert_non_null(why);
    assert_non_null(strstr(why, "warp:9"));
    assert_false(json_bool(doc, "devices.0.default"));
    assert_true(json_bool(doc, "devices.0.usable"));
    jv_free(doc);
    tool_result_free(&r);
}

/* ---- JSON strings made from hostile input: a plugin path is echoed into path and reason ---- */

static void test_json_escapes_quotes_backslashes_and_control_characters(void **state)
{
    (void)state;
    const char *path = "/nonexistent/q\"b\\s\tt\x01u\x1f\x7fv\n/attnrt_x.so";
    char setting[256];
    snprintf(setting, sizeof setting, "ATTNRT_PLUGIN=%s", path);
    const char *const env[] = {setting, NULL};
    tool_result_t r = run_info("--json", env);
    assert_int_equal(r.exit_code, 1);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_string(doc, "plugins.0.path", path);
    assert_json_string(doc, "env.ATTNRT_PLUGIN", path);
    assert_non_null(strstr(jv_str(jv_get(doc, "init_error")), path));
    jv_free(doc);
    tool_result_free(&r);
}

static void test_json_replaces_invalid_utf8_and_keeps_valid_utf8(void **state)
{
    (void)state;
    const char *const env[] = {"ATTNRT_PLUGIN=/nonexistent/\xc3\xa9\xff\xc0\xaf/attnrt_x.so", NULL};
    tool_result_t r = run_info("--json", env);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_string(doc, "plugins.0.path", "/nonexistent/\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd/attnrt_x.so");
    jv_free(doc);
    tool_result_free(&r);
}

/* ---- the command line (--query and --version: test_info_query.c) ---- */

static void test_unknown_option_prints_usage_on_stderr_and_exits_2(void **state)
{
    (void)state;
    tool_result_t r = run_info("--bogus", NULL);
    assert_int_equal(r.exit_code, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "'--bogus'"));
    assert_non_null(strstr(r.err, "usage: attnrt-info"));
    tool_result_free(&r);
}

static void test_stray_argument_exits_2(void **state)
{
    (void)state;
    tool_result_t r = run_info("cpu", NULL);
    assert_int_equal(r.exit_code, 2);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "usage: attnrt-info"));
    tool_result_free(&r);
}

static void test_help_prints_usage_on_stdout_and_exits_0(void **state)
{
    (void)state;
    tool_result_t r = run_info("--help", NULL);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.err, "");
    assert_line_starting(r.out, "usage: attnrt-info", "--json");
    assert_null(strstr(r.out, "plugins:")); /* help only: no probing */
    tool_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_lists_cpu_plugin_as_loaded_with_its_path),
        cmocka_unit_test(test_text_lists_cpu0_with_its_properties),
        cmocka_unit_test(test_json_names_cpu_plugin_and_cpu0),
        cmocka_unit_test(test_json_capabilities_cover_every_op_and_add_up),
        cmocka_unit_test(test_json_refusals_name_the_combinations_cpu0_refuses),
        cmocka_unit_test(test_text_names_each_refusal_reason_once_and_stays_short),
        cmocka_unit_test(test_explicit_cuda_without_its_plugin_fails_with_one_line_naming_it),
        cmocka_unit_test(test_explicit_cuda_without_its_plugin_sets_json_init_error),
        cmocka_unit_test(test_missing_plugin_file_is_listed_with_its_reason),
        cmocka_unit_test(test_explicit_cpu_by_absolute_path_is_usable),
        cmocka_unit_test(test_bad_default_device_is_reported_and_cpu0_stays_usable),
        cmocka_unit_test(test_json_escapes_quotes_backslashes_and_control_characters),
        cmocka_unit_test(test_json_replaces_invalid_utf8_and_keeps_valid_utf8),
        cmocka_unit_test(test_unknown_option_prints_usage_on_stderr_and_exits_2),
        cmocka_unit_test(test_stray_argument_exits_2),
        cmocka_unit_test(test_help_prints_usage_on_stdout_and_exits_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
