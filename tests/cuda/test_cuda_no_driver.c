/* The cuda plugin on a machine without the NVIDIA driver (CI): it loads (no link-time dependency on
 * libcuda), its probe fails, and the reason is one line that says so. Where a driver IS present the
 * behaviour under test cannot happen: the program exits 77 (skipped). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"

static void assert_one_line_with(const char *msg, const char *what)
{
    assert_non_null(msg);
    if (!strstr(msg, what)) fail_msg("expected \"%s\" in: %s", what, msg);
    assert_null(strchr(msg, '\n'));
}

static void test_explicit_cuda_fails_init_with_one_line_naming_the_missing_driver(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", "cuda", 1);
    attnrt_status_t st = attnrt_init();
    assert_int_equal(st, ATTNRT_ERR_NO_DEVICE);
    assert_one_line_with(attnrt_last_error(), "no CUDA driver");
    assert_one_line_with(attnrt_last_error(), "libcuda.so.1");
    /* every later call fails the same way until shutdown */
    uint32_t n = 0;
    assert_int_not_equal(attnrt_device_count(&n), ATTNRT_OK);
    assert_int_equal(attnrt_shutdown(), ATTNRT_OK);
    unsetenv("ATTNRT_PLUGIN");
}

static void test_auto_mode_lists_cuda_as_failed_and_carries_on(void **state)
{
    (void)state;
    unsetenv("ATTNRT_PLUGIN");
    assert_int_equal(attnrt_init(), ATTNRT_OK);
    uint32_t count = 0, found = 0;
    assert_int_equal(attnrt_plugin_count(&count), ATTNRT_OK);
    for (uint32_t i = 0; i < count; i++) {
        attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
        assert_int_equal(attnrt_plugin_get_info(i, &info), ATTNRT_OK);
        if (strcmp(info.name, "cuda") != 0) continue;
        found = 1;
        assert_int_equal(info.status, ATTNRT_ERR_NO_DEVICE);
        assert_int_equal(info.device_count, 0);
        assert_one_line_with(info.reason, "no CUDA driver");
    }
    assert_true(found); /* the build tree's cuda plugin was tried */
    assert_int_equal(attnrt_shutdown(), ATTNRT_OK);
}

int main(void)
{
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver) { /* a driver is installed: "no driver" cannot be observed here */
        dlclose(driver);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_explicit_cuda_fails_init_with_one_line_naming_the_missing_driver),
        cmocka_unit_test(test_auto_mode_lists_cuda_as_failed_and_carries_on),
    };
    return cmocka_run_group_tests_name("cuda plugin without a driver", tests, NULL, NULL);
}
