/* attnrt-info --query and --version, run as a user runs them: the built binary against the build
 * tree's cpu plugin. --query asks one question of one device and answers with one line (or one JSON
 * document) and its exit status: 0 supported, 1 unsupported, 2 a malformed question, 3 not asked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"
#include "info_check.h"

static const char *const env_cpu_only[] = {"ATTNRT_PLUGIN=cpu", NULL};

static void test_query_supported_on_cpu0_exits_0(void **state)
{
    (void)state;
    const char *const args[] = {"--query", "op=paged_attention,dtype=bf16,head_dim=128,block_size=16", "--device",
                                "cpu:0", NULL};
    tool_result_t r = run_info_args(args, NULL);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.err, "");
    assert_string_equal(r.out, "supported: paged_attention q_dtype=bf16 kv_dtype=bf16 head_dim_qk=128 head_dim_v=128 "
                               "block_size=16 on cpu:0\n");
    tool_result_free(&r);
    /* without --device: the default device, cpu:0 here */
    const char *const args2[] = {"--query=op=kv_write,q_dtype=f16,kv_dtype=fp8_e4m3,features=layout_hnd+kv_scale_block",
                                 NULL};
    r = run_info_args(args2, env_cpu_only);
    assert_int_equal(r.exit_code, 0);
    assert_line_starting(r.out, "supported: kv_write q_dtype=f16 kv_dtype=fp8_e4m3 features=kv_scale_block+layout_hnd",
                         "on cpu:0");
    tool_result_free(&r);
}

static void test_query_refused_on_cpu0_exits_1_with_the_reason(void **state)
{
    (void)state;
    const char *const args[] = {"--query", "op=cascade,dtype=f16,head_dim=64,block_size=16,features=alibi", "--device",
                                "cpu:0", NULL};
    tool_result_t r = run_info_args(args, NULL);
    assert_int_equal(r.exit_code, 1);
    assert_string_equal(r.err, "");
    assert_line_starting(r.out, "unsupported: cascade q_dtype=f16 kv_dtype=f16 head_dim_qk=64 head_dim_v=64 "
                                "block_size=16 features=alibi on cpu:0: ", "ALiBi or sliding windows");
    assert_int_equal(count_occurrences(r.out, "\n"), 1);
    tool_result_free(&r);
}

static void test_query_json_answers_with_the_fields_asked(void **state)
{
    (void)state;
    const char *const yes[] = {"--json", "--query", "op=mla,q_dtype=bf16,kv_dtype=fp8_e4m3,head_dim_qk=576,"
                               "head_dim_v=512,block_size=64,features=sparse", NULL};
    tool_result_t r = run_info_args(yes, env_cpu_only);
    assert_int_equal(r.exit_code, 0);
    jv_t *doc = parse_or_fail(r.out);
    assert_true(json_number(doc, "schema_version") == 1);
    assert_json_string(doc, "query.op", "mla");
    assert_json_string(doc, "query.q_dtype", "bf16");
    assert_json_string(doc, "query.kv_dtype", "fp8_e4m3");
    assert_true(json_number(doc, "query.head_dim_qk") == 576 && json_number(doc, "query.head_dim_v") == 512);
    assert_true(json_number(doc, "query.block_size") == 64);
    assert_json_string(doc, "query.features.0", "sparse");
    assert_json_string(doc, "device", "cpu:0");
    assert_true(json_bool(doc, "supported"));
    assert_json_null(doc, "reason");
    assert_json_null(doc, "error");
    jv_free(doc);
    tool_result_free(&r);

    const char *const no[] = {"--json", "--query", "op=cascade,features=sliding_window", NULL};
    r = run_info_args(no, env_cpu_only);
    assert_int_equal(r.exit_code, 1);
    doc = parse_or_fail(r.out);
    assert_false(json_bool(doc, "supported"));
    assert_json_null(doc, "query.q_dtype"); /* left out: any */
    assert_true(json_number(doc, "query.head_dim_qk") == 0);
    assert_non_null(strstr(jv_str(jv_get(doc, "reason")), "sliding windows"));
    jv_free(doc);
    tool_result_free(&r);
}

static void test_query_on_a_missing_device_exits_3_naming_it(void **state)
{
    (void)state;
    const char *const args[] = {"--query", "op=kv_write", "--device", "warp:9", NULL};
    tool_result_t r = run_info_args(args, NULL);
    assert_int_equal(r.exit_code, 3);
    assert_string_equal(r.out, "");
    assert_non_null(strstr(r.err, "warp:9"));
    tool_result_free(&r);
    const char *const json[] = {"--json", "--query", "op=kv_write", "--device", "warp:9", NULL};
    r = run_info_args(json, NULL);
    assert_int_equal(r.exit_code, 3);
    jv_t *doc = parse_or_fail(r.out);
    assert_json_null(doc, "supported");
    assert_non_null(strstr(jv_str(jv_get(doc, "error")), "warp:9"));
    jv_free(doc);
    tool_result_free(&r);
}

static void test_query_malformed_spec_exits_2_naming_the_part(void **state)
{
    (void)state;
    static const struct { const char *spec, *named; } bad[] = {
        {"dtype=f32", "op=... is required"},
        {"op=attention", "'attention' for op"},
        {"op=kv_write,dtype=f64", "'f64' for dtype"},
        {"op=kv_write,head_dim=-1", "'-1' for head_dim"},
        {"op=kv_write,block_size=16x", "'16x' for block_size"},
        {"op=kv_write,features=lse+", "'lse+' for features"},
        {"op=kv_write,features=rope", "'rope' for features"},
        {"op=kv_write,heads=8", "unknown key 'heads'"},
        {"op=kv_write,,dtype=f32", "'' is not KEY=VALUE"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *const args[] = {"--query", bad[i].spec, NULL};
        tool_result_t r = run_info_args(args, NULL);
        if (r.exit_code != 2 || !strstr(r.err, bad[i].named))
            fail_msg("--query %s: exit %d, stderr:\n%s", bad[i].spec, r.exit_code, r.err);
        assert_string_equal(r.out, "");
        tool_result_free(&r);
    }
    const char *const device_alone[] = {"--device", "cpu:0", NULL};
    tool_result_t r = run_info_args(device_alone, NULL);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "--device goes with --query"));
    tool_result_free(&r);
    const char *const no_value[] = {"--query", NULL};
    r = run_info_args(no_value, NULL);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err, "--query needs a value"));
    tool_result_free(&r);
}

static void test_version_names_the_library_and_its_abi(void **state)
{
    (void)state;
    tool_result_t r = run_info("--version", NULL);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.err, "");
    char want[128];
    snprintf(want, sizeof want, "attnrt-info: libattnrt %d.%d.%d (plugin ABI %d.%d)\n", ATTNRT_VERSION_MAJOR,
             ATTNRT_VERSION_MINOR, ATTNRT_VERSION_PATCH, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    assert_string_equal(r.out, want);
    tool_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query_supported_on_cpu0_exits_0),
        cmocka_unit_test(test_query_refused_on_cpu0_exits_1_with_the_reason),
        cmocka_unit_test(test_query_json_answers_with_the_fields_asked),
        cmocka_unit_test(test_query_on_a_missing_device_exits_3_naming_it),
        cmocka_unit_test(test_query_malformed_spec_exits_2_naming_the_part),
        cmocka_unit_test(test_version_names_the_library_and_its_abi),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
