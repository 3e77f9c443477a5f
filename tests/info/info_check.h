/* What the attnrt-info tests share: running the built tool, and assertions on its text and JSON. */
#ifndef ATTNRT_TEST_INFO_CHECK_H
#define ATTNRT_TEST_INFO_CHECK_H

#include "json_parse.h"
#include "run_tool.h"

/* Runs attnrt-info (ATTNRT_INFO_PATH) with up to one argument, or with the NULL-terminated `args` (at
 * most 6), and the extra environment `env`; fails the test when it cannot be run. */
tool_result_t run_info(const char *arg, const char *const env[]);
tool_result_t run_info_args(const char *const args[], const char *const env[]);
/* The output parsed as JSON, or the test fails showing the parser's reason and the text. */
jv_t *parse_or_fail(const char *text);
/* Fails unless a line of `text` starts with `prefix` and (when not NULL) contains `must_contain`. */
void assert_line_starting(const char *text, const char *prefix, const char *must_contain);
/* The value at `path` (jv_path), which must exist with that type. */
void   assert_json_null(const jv_t *root, const char *path);
void   assert_json_string(const jv_t *root, const char *path, const char *expected);
double json_number(const jv_t *root, const char *path);
int    json_bool(const jv_t *root, const char *path);

#endif
