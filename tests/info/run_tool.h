/* Runs a program with a controlled environment and captures what it writes, for the tool tests. */
#ifndef ATTNRT_TEST_RUN_TOOL_H
#define ATTNRT_TEST_RUN_TOOL_H

typedef struct tool_result {
    int   exit_code; /* the exit status, or 128 + signal when it was killed */
    char *out;       /* everything written to stdout, NUL-terminated; owned */
    char *err;       /* everything written to stderr; owned */
} tool_result_t;

/* Runs `argv` (argv[0] an absolute path) with this process's environment minus every ATTNRT_*
 * variable, then `env` ("NAME=value" strings, NULL-terminated; may be NULL) added. ATTNRT_PLUGIN_PATH
 * is always set to "" unless `env` sets it, so only the build tree's plugins are found.
 * Returns 0 and fills *r, or -1 when the program could not be run. */
int run_tool(char *const argv[], const char *const env[], tool_result_t *r);
void tool_result_free(tool_result_t *r);

/* Number of lines of `text` that contain `needle`. */
int count_lines_containing(const char *text, const char *needle);
/* Number of non-overlapping occurrences of `needle` in `text`. */
int count_occurrences(const char *text, const char *needle);

#endif
