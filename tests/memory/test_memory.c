/* attnrt_mem_free's ownership rules on every device of the build tree (cpu, npu_sim): a pointer freed twice,
 * one from another context, one into the middle of an allocation or one never allocated is refused with a
 * message naming it, the process survives, and the live-allocation count attnrt_close checks stays right. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"

static uint32_t device; /* the device index the current group runs on */

#define assert_status(call, expected)                                                                      \
    do {                                                                                                   \
        attnrt_status_t got_ = (call);                                                                     \
        if (got_ != (expected))                                                                            \
            fail_msg("%s returned %s, expected %s: %s", #call, attnrt_status_name(got_),                  \
                     attnrt_status_name(expected), attnrt_last_error());                                   \
    } while (0)
#define assert_ok(call) assert_status(call, ATTNRT_OK)

static void assert_error_has(const char *needle)
{
    if (!strstr(attnrt_last_error(), needle)) fail_msg("message \"%s\" lacks \"%s\"", attnrt_last_error(), needle);
}

static attnrt_context_t *open_device(void)
{
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    assert_ok(attnrt_device_get_properties(device, &props));
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(props.name, &ctx));
    return ctx;
}

static void ptr_text(const void *p, char *buf, size_t cap) { snprintf(buf, cap, "%p", p); }

static void double_free_is_refused_naming_the_pointer(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_device();
    void *p = NULL;
    assert_ok(attnrt_mem_alloc(ctx, 256, &p));
    assert_ok(attnrt_mem_free(ctx, p));
    assert_status(attnrt_mem_free(ctx, p), ATTNRT_ERR_INVALID_ARGUMENT);
    char text[32];
    ptr_text(p, text, sizeof text);
    assert_error_has("attnrt_mem_free");
    assert_error_has(text);
    assert_error_has("not a live allocation");
    assert_ok(attnrt_close(ctx));
}

/* The count must not be fooled: a refused free takes nothing back, so one live allocation still blocks close. */
static void refused_free_leaves_the_live_count_right(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_device();
    void *a = NULL, *b = NULL;
    assert_ok(attnrt_mem_alloc(ctx, 64, &a));
    assert_ok(attnrt_mem_alloc(ctx, 64, &b));
    assert_ok(attnrt_mem_free(ctx, a));
    assert_status(attnrt_mem_free(ctx, a), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_status(attnrt_close(ctx), ATTNRT_ERR_BUSY);
    assert_error_has("1 allocation(s)");
    assert_ok(attnrt_mem_free(ctx, b));
    assert_ok(attnrt_close(ctx));
}

static void pointer_of_another_context_is_refused(void **state)
{
    (void)state;
    attnrt_context_t *one = open_device(), *two = open_device();
    void *p = NULL;
    assert_ok(attnrt_mem_alloc(one, 128, &p));
    assert_status(attnrt_mem_free(two, p), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("not from attnrt_mem_alloc on this context");
    assert_ok(attnrt_close(two));
    assert_ok(attnrt_mem_free(one, p)); /* still owned by its own context */
    assert_ok(attnrt_close(one));
}

static void pointer_inside_an_allocation_is_refused_with_its_offset(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_device();
    void *p = NULL;
    assert_ok(attnrt_mem_alloc(ctx, 1000, &p));
    assert_status(attnrt_mem_free(ctx, (char *)p + 40), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("40 bytes into the 1000-byte allocation");
    assert_ok(attnrt_mem_free(ctx, p));
    assert_ok(attnrt_close(ctx));
}

static void pointer_never_allocated_is_refused(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_device();
    void *foreign = malloc(32);
    assert_non_null(foreign);
    assert_status(attnrt_mem_free(ctx, foreign), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_mem_free");
    free(foreign); /* still ours: the plugin must not have freed it (ASan would report a double free) */
    assert_ok(attnrt_close(ctx));
}

/* Many allocations freed in an order other than allocation order: every one is found, none is refused. */
static void frees_in_any_order_are_accepted(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_device();
    enum { N = 97 };
    void *p[N];
    for (int i = 0; i < N; i++) assert_ok(attnrt_mem_alloc(ctx, (size_t)(i % 7 + 1) * 48, &p[i]));
    for (int i = 0; i < N; i++) assert_ok(attnrt_mem_free(ctx, p[(i * 31) % N])); /* 31 is coprime to 97 */
    for (int i = 0; i < N; i++) assert_status(attnrt_mem_free(ctx, p[i]), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_ok(attnrt_close(ctx));
}

static void free_of_null_is_a_no_op(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_device();
    assert_ok(attnrt_mem_free(ctx, NULL));
    assert_ok(attnrt_close(ctx));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(double_free_is_refused_naming_the_pointer),
        cmocka_unit_test(refused_free_leaves_the_live_count_right),
        cmocka_unit_test(pointer_of_another_context_is_refused),
        cmocka_unit_test(pointer_inside_an_allocation_is_refused_with_its_offset),
        cmocka_unit_test(pointer_never_allocated_is_refused),
        cmocka_unit_test(frees_in_any_order_are_accepted),
        cmocka_unit_test(free_of_null_is_a_no_op),
    };
    uint32_t count = 0;
    if (attnrt_device_count(&count) != ATTNRT_OK || count < 2) {
        fprintf(stderr, "test_memory: expected the build tree's cpu and npu_sim devices, found %u: %s\n", count,
                attnrt_last_error());
        return 1;
    }
    int failed = 0;
    for (device = 0; device < count; device++) {
        attnrt_device_properties_t props = {.struct_size = sizeof props};
        if (attnrt_device_get_properties(device, &props) != ATTNRT_OK) return 1;
        char group[96];
        snprintf(group, sizeof group, "memory ownership on %s", props.name);
        failed += cmocka_run_group_tests_name(group, tests, NULL, NULL);
    }
    if (attnrt_shutdown() != ATTNRT_OK) {
        fprintf(stderr, "attnrt_shutdown: %s\n", attnrt_last_error());
        failed++;
    }
    return failed ? 1 : 0;
}
