/* Shared helpers of the loader tests: where the test plugins are, the environment each test starts
 * from, a scratch plugin directory, and assertions that print attnrt_last_error() when they fail. */
#ifndef LOADER_UTIL_H
#define LOADER_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"

#ifndef TL_PLUGIN_DIR
#error "TL_PLUGIN_DIR (the build folder of the test plugins) must be defined by Meson"
#endif

/* Absolute path of the test plugin attnrt_<variant>.so. Rotating static storage: valid for 8 calls. */
const char *tl_plugin(const char *variant);

/* Every test starts from: no ATTNRT_PLUGIN / ATTNRT_DEVICE / TP_FAIL_ALLOC_AT, ATTNRT_PLUGIN_PATH="". */
void tl_env_reset(void);
/* Explicit mode on the test plugin `variant`, by absolute path. */
void tl_use(const char *variant);

/* cmocka fixtures: setup shuts the runtime down and resets the environment; teardown shuts it down
 * (which fails when a test left a context open), removes the scratch directory and restores the cwd. */
int tl_setup(void **state);
int tl_teardown(void **state);

/* Runs each test in a forked child, so a failed test cannot leave the process-wide runtime (open
 * contexts, loaded plugins, environment, cwd) to the next one; returns the number that failed.
 * TL_NO_FORK=1 runs them in this process instead (for a debugger). */
int tl_run_isolated(const char *group, const struct CMUnitTest *tests, size_t count);

/* A scratch directory, created on first use and removed by tl_teardown. */
const char *tl_tmpdir(void);
/* Copies the test plugin `variant` (or any absolute path) into the scratch directory as `name`. */
const char *tl_tmp_copy(const char *variant_or_path, const char *name);
/* Writes `content` into the scratch directory as `name`; returns the absolute path (static, rotating). */
const char *tl_tmp_write(const char *name, const char *content);

/* Sets TP_TRACE to a file in the scratch directory; tl_trace() returns what the test plugins wrote
 * there ("<name> probe\n<name> init\n..."), "" when nothing. */
void tl_trace_start(void);
const char *tl_trace(void);

/* The test plugin's counter attribute `key` (see test_plugin.c) of device `device`, as a number. */
long tl_attr(uint32_t device, const char *key);
/* Index of the plugin record whose path is `path`, or -1. */
int tl_plugin_index(const char *path);
/* attnrt_plugin_get_info(index), failing the test when it does not succeed. */
attnrt_plugin_info_t tl_info(uint32_t index);

/* One attnrt_merge_states call (a single 1x1x4 f32 state) on `ctx`, its device buffers allocated and
 * freed around it; returns its status and copies the message it left into msg. */
attnrt_status_t tl_merge_once(attnrt_context_t *ctx, char *msg, size_t cap);

/* The test binary's own path, for tests that run it again in a child process. */
extern const char *tl_argv0;

#define assert_status(expr, expected)                                                                        \
    do {                                                                                                     \
        attnrt_status_t tl_st_ = (expr);                                                                     \
        if (tl_st_ != (expected))                                                                            \
            fail_msg("%s returned %s, expected %s; last error: \"%s\"", #expr, attnrt_status_name(tl_st_),     \
                     attnrt_status_name(expected), attnrt_last_error());                                     \
    } while (0)

#define assert_ok(expr) assert_status(expr, ATTNRT_OK)

/* The calling thread's last error contains `needle`. */
#define assert_error_has(needle)                                                                             \
    do {                                                                                                     \
        const char *tl_msg_ = attnrt_last_error();                                                           \
        if (!strstr(tl_msg_, (needle)))                                                                      \
            fail_msg("last error \"%s\" does not contain \"%s\"", tl_msg_, (needle));                         \
    } while (0)

/* `text` contains `needle`. */
#define assert_has(text, needle)                                                                             \
    do {                                                                                                     \
        const char *tl_text_ = (text);                                                                       \
        if (!tl_text_ || !strstr(tl_text_, (needle)))                                                        \
            fail_msg("\"%s\" does not contain \"%s\"", tl_text_ ? tl_text_ : "(null)", (needle));             \
    } while (0)

/* One line: an error message a user reads must not span lines. */
#define assert_one_line(text) assert_null(strchr((text), '\n'))

#endif /* LOADER_UTIL_H */
