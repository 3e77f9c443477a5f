#include "loader_util.h"

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

const char *tl_argv0;

static char tmpdir[PATH_MAX];
static char start_cwd[PATH_MAX];

static char *rotating(void)
{
    static char bufs[8][PATH_MAX];
    static unsigned next;
    return bufs[next++ % 8];
}

const char *tl_plugin(const char *variant)
{
    char *buf = rotating();
    snprintf(buf, PATH_MAX, "%s/attnrt_%s.so", TL_PLUGIN_DIR, variant);
    return buf;
}

void tl_env_reset(void)
{
    unsetenv("ATTNRT_PLUGIN");
    unsetenv("ATTNRT_DEVICE");
    unsetenv("TP_FAIL_ALLOC_AT");
    unsetenv("TP_TRACE");
    setenv("ATTNRT_PLUGIN_PATH", "", 1);
}

void tl_use(const char *variant)
{
    tl_env_reset();
    setenv("ATTNRT_PLUGIN", tl_plugin(variant), 1);
}

int tl_setup(void **state)
{
    (void)state;
    if (!start_cwd[0] && !getcwd(start_cwd, sizeof start_cwd)) return -1;
    if (attnrt_shutdown() != ATTNRT_OK) {
        fprintf(stderr, "setup: attnrt_shutdown failed: %s\n", attnrt_last_error());
        return -1;
    }
    tl_env_reset();
    return 0;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int tl_teardown(void **state)
{
    (void)state;
    int rc = 0;
    if (start_cwd[0] && chdir(start_cwd) != 0) rc = -1;
    if (attnrt_shutdown() != ATTNRT_OK) {
        fprintf(stderr, "teardown: attnrt_shutdown failed (a context was left open?): %s\n", attnrt_last_error());
        rc = -1;
    }
    if (tmpdir[0]) {
        nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        tmpdir[0] = '\0';
    }
    tl_env_reset();
    return rc;
}

int tl_run_isolated(const char *group, const struct CMUnitTest *tests, size_t count)
{
    const char *no_fork = getenv("TL_NO_FORK");
    if (no_fork && no_fork[0] == '1') return _cmocka_run_group_tests(group, tests, count, NULL, NULL);
    int failed = 0;
    printf("[==========] %s: %zu test(s), each in its own process\n", group, count);
    for (size_t i = 0; i < count; i++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0) {
            printf("[  FAILED  ] %s: fork failed\n", tests[i].name);
            failed++;
            continue;
        }
        if (pid == 0) {
            int f = _cmocka_run_group_tests(tests[i].name, &tests[i], 1, NULL, NULL);
            fflush(stdout);
            fflush(stderr);
            exit(f ? 1 : 0); /* exit, not _exit: valgrind's leak check runs at exit of each child */
        }
        int status = 0;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            printf("[  FAILED  ] %s (%s)\n", tests[i].name,
                   WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "see above");
            failed++;
        }
    }
    printf("[==========] %s: %d of %zu failed\n", group, failed, count);
    return failed;
}

const char *tl_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/attnrt_loader_XXXXXX");
        if (!mkdtemp(tmpdir)) fail_msg("mkdtemp failed");
        char real[PATH_MAX]; /* the runtime records canonical directories */
        if (realpath(tmpdir, real)) snprintf(tmpdir, sizeof tmpdir, "%s", real);
    }
    return tmpdir;
}

const char *tl_tmp_copy(const char *variant_or_path, const char *name)
{
    const char *from = variant_or_path[0] == '/' ? variant_or_path : tl_plugin(variant_or_path);
    char *to = rotating();
    if (snprintf(to, PATH_MAX, "%s/%s", tl_tmpdir(), name) >= PATH_MAX) fail_msg("path too long: %s", name);
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    if (!in || !out) fail_msg("cannot copy %s to %s", from, to);
    char buf[1 << 14];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) fail_msg("short write to %s", to);
    fclose(in);
    if (fclose(out) != 0) fail_msg("cannot close %s", to);
    return to;
}

const char *tl_tmp_write(const char *name, const char *content)
{
    char *to = rotating();
    if (snprintf(to, PATH_MAX, "%s/%s", tl_tmpdir(), name) >= PATH_MAX) fail_msg("path too long: %s", name);
    FILE *out = fopen(to, "wb");
    if (!out) fail_msg("cannot create %s", to);
    fputs(content, out);
    if (fclose(out) != 0) fail_msg("cannot close %s", to);
    return to;
}

void tl_trace_start(void) { setenv("TP_TRACE", tl_tmp_write("trace.txt", ""), 1); }

const char *tl_trace(void)
{
    static char text[4096];
    const char *path = getenv("TP_TRACE");
    FILE *f = path ? fopen(path, "rb") : NULL;
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    return text;
}

long tl_attr(uint32_t device, const char *key)
{
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    assert_ok(attnrt_device_get_properties(device, &props));
    for (uint32_t i = 0; i < props.attribute_count; i++) {
        attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
        assert_ok(attnrt_device_get_attribute(device, i, &attr));
        if (strcmp(attr.key, key) == 0) return strtol(attr.value, NULL, 10);
    }
    fail_msg("device %u (%s) has no attribute '%s'", device, props.name, key);
    return -1;
}

int tl_plugin_index(const char *path)
{
    uint32_t count = 0;
    assert_ok(attnrt_plugin_count(&count));
    for (uint32_t i = 0; i < count; i++) {
        attnrt_plugin_info_t info = tl_info(i);
        if (strcmp(info.path, path) == 0) return (int)i;
    }
    return -1;
}

attnrt_plugin_info_t tl_info(uint32_t index)
{
    attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
    assert_ok(attnrt_plugin_get_info(index, &info));
    assert_non_null(info.path);
    assert_non_null(info.name);
    assert_non_null(info.version);
    assert_non_null(info.reason);
    return info;
}

attnrt_status_t tl_merge_once(attnrt_context_t *ctx, char *msg, size_t cap)
{
    const attnrt_dtype_t f32 = {ATTNRT_DTYPE_CODE_FLOAT, 32, 1};
    const int64_t shape3[3] = {1, 1, 4}, shape2[2] = {1, 1};
    void *out = NULL, *state = NULL, *lse = NULL;
    assert_ok(attnrt_mem_alloc(ctx, 4 * sizeof(float), &out));
    assert_ok(attnrt_mem_alloc(ctx, 4 * sizeof(float), &state));
    assert_ok(attnrt_mem_alloc(ctx, sizeof(float), &lse));
    attnrt_tensor_t t_out, t_state, t_lse;
    assert_ok(attnrt_tensor_init(&t_out, out, f32, 3, shape3));
    assert_ok(attnrt_tensor_init(&t_state, state, f32, 3, shape3));
    assert_ok(attnrt_tensor_init(&t_lse, lse, f32, 2, shape2));
    const attnrt_tensor_t *states[1] = {&t_state}, *lses[1] = {&t_lse};
    attnrt_merge_args_t args = {.struct_size = sizeof args, .num_states = 1, .states = states, .lses = lses,
                                .out = &t_out};
    attnrt_status_t st = attnrt_merge_states(ctx, &args, NULL);
    snprintf(msg, cap, "%s", attnrt_last_error());
    assert_ok(attnrt_mem_free(ctx, out));
    assert_ok(attnrt_mem_free(ctx, state));
    assert_ok(attnrt_mem_free(ctx, lse));
    return st;
}
