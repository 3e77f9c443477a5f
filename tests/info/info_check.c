/* info_check.c - see info_check.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "info_check.h"

#ifndef ATTNRT_INFO_PATH
#error "ATTNRT_INFO_PATH (the built attnrt-info) must be defined by the build"
#endif

tool_result_t run_info(const char *arg, const char *const env[])
{
    char *argv[] = {(char *)ATTNRT_INFO_PATH, (char *)arg, NULL};
    tool_result_t r;
    assert_int_equal(run_tool(argv, env, &r), 0);
    return r;
}

/* Runs attnrt-info with the NULL-terminated arguments `args` (at most 6). */
tool_result_t run_info_args(const char *const args[], const char *const env[])
{
    char *argv[8] = {(char *)ATTNRT_INFO_PATH};
    for (int i = 0; args[i]; i++) {
        assert_true(i < 6);
        argv[i + 1] = (char *)args[i];
    }
    tool_result_t r;
    assert_int_equal(run_tool(argv, env, &r), 0);
    return r;
}

/* Parses the output as JSON or fails the test, showing the parser's reason and the text. */
jv_t *parse_or_fail(const char *text)
{
    char why[256];
    jv_t *v = jv_parse(text, why, sizeof why);
    if (!v) fail_msg("attnrt-info --json is not valid JSON: %s\n%s", why, text);
    return v;
}

/* A copy of the first line of `text` that starts with `prefix`, or NULL. */
static char *line_starting(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len >= n && strncmp(line, prefix, n) == 0) return strndup(line, len);
        line = end ? end + 1 : NULL;
    }
    return NULL;
}

void assert_line_starting(const char *text, const char *prefix, const char *must_contain)
{
    char *line = line_starting(text, prefix);
    if (!line) fail_msg("no line starts with '%s' in:\n%s", prefix, text);
    if (must_contain && !strstr(line, must_contain)) {
        fprintf(stderr, "line '%s' lacks '%s'\n", line, must_contain);
        free(line);
        fail();
    }
    free(line);
}

void assert_json_null(const jv_t *root, const char *path)
{
    const jv_t *v = jv_path(root, path);
    if (!v || v->type != JV_NULL) fail_msg("%s should be null", path);
}

void assert_json_string(const jv_t *root, const char *path, const char *expected)
{
    const char *s = jv_str(jv_path(root, path));
    if (!s) fail_msg("%s is missing or not a string", path);
    assert_string_equal(s, expected);
}

double json_number(const jv_t *root, const char *path)
{
    const jv_t *v = jv_path(root, path);
    if (!v || v->type != JV_NUMBER) fail_msg("%s is missing or not a number", path);
    return v->number;
}

int json_bool(const jv_t *root, const char *path)
{
    const jv_t *v = jv_path(root, path);
    if (!v || v->type != JV_BOOL) fail_msg("%s is missing or not a boolean", path);
    return v->boolean;
}
