/* Every public function of attnrt.h given bad input: a clear status, a message naming the argument,
 * nothing written, no crash. Plus the static names: statuses, ops, the version string. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loader_util.h"

int loader_args_tests(void);

/* Runs `call`, expects `status` and a last error that contains `needle`. */
#define expect_bad(call, status, needle)  \
    do {                                  \
        assert_status(call, status);      \
        assert_error_has(needle);         \
        assert_one_line(attnrt_last_error()); \
    } while (0)

/* ---- names and versions ---- */

static void test_every_status_has_a_distinct_name_and_unknown_values_have_one_too(void **state)
{
    (void)state;
    static const struct { attnrt_status_t status; const char *name; } all[] = {
        {ATTNRT_OK, "ATTNRT_OK"},
        {ATTNRT_ERR_INVALID_ARGUMENT, "ATTNRT_ERR_INVALID_ARGUMENT"},
        {ATTNRT_ERR_UNSUPPORTED, "ATTNRT_ERR_UNSUPPORTED"},
        {ATTNRT_ERR_OUT_OF_MEMORY, "ATTNRT_ERR_OUT_OF_MEMORY"},
        {ATTNRT_ERR_NOT_FOUND, "ATTNRT_ERR_NOT_FOUND"},
        {ATTNRT_ERR_ABI_MISMATCH, "ATTNRT_ERR_ABI_MISMATCH"},
        {ATTNRT_ERR_PLUGIN, "ATTNRT_ERR_PLUGIN"},
        {ATTNRT_ERR_NO_DEVICE, "ATTNRT_ERR_NO_DEVICE"},
        {ATTNRT_ERR_DEVICE, "ATTNRT_ERR_DEVICE"},
        {ATTNRT_ERR_BUSY, "ATTNRT_ERR_BUSY"},
        {ATTNRT_ERR_INTERNAL, "ATTNRT_ERR_INTERNAL"},
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        assert_string_equal(attnrt_status_name(all[i].status), all[i].name);
    const int unknown[] = {1, 7, -11, -99, 1000};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        assert_string_equal(attnrt_status_name((attnrt_status_t)unknown[i]), "ATTNRT_ERR_UNKNOWN");
}

static void test_version_string_names_the_library_and_the_abi(void **state)
{
    (void)state;
    int major = -1, minor = -1, patch = -1;
    attnrt_version(&major, &minor, &patch);
    assert_int_equal(major, ATTNRT_VERSION_MAJOR);
    assert_int_equal(minor, ATTNRT_VERSION_MINOR);
    assert_int_equal(patch, ATTNRT_VERSION_PATCH);
    attnrt_version(NULL, NULL, NULL); /* each pointer may be NULL */
    attnrt_version(&major, NULL, NULL);
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d (plugin ABI %d.%d)", ATTNRT_VERSION_MAJOR, ATTNRT_VERSION_MINOR,
             ATTNRT_VERSION_PATCH, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    assert_string_equal(attnrt_version_string(), want);
    uint32_t abi_major = 99, abi_minor = 99;
    attnrt_abi_version(&abi_major, &abi_minor);
    assert_int_equal(abi_major, ATTNRT_ABI_MAJOR);
    assert_int_equal(abi_minor, ATTNRT_ABI_MINOR);
    attnrt_abi_version(NULL, NULL); /* each pointer may be NULL */
    attnrt_abi_version(NULL, &abi_minor);
    assert_int_equal(abi_minor, ATTNRT_ABI_MINOR);
}

static void test_every_op_has_a_name_and_others_are_unknown(void **state)
{
    (void)state;
    static const char *const names[] = {"", "kv_write", "paged_attention", "merge_states", "cascade", "mla",
                                        "lightning", "gated_delta"};
    for (uint32_t op = 1; op < ATTNRT_OP_COUNT_; op++) assert_string_equal(attnrt_op_name(op), names[op]);
    assert_string_equal(attnrt_op_name(0), "unknown");
    assert_string_equal(attnrt_op_name(ATTNRT_OP_COUNT_), "unknown");
    assert_string_equal(attnrt_op_name(UINT32_MAX), "unknown");
}

/* ---- plugin and device queries ---- */

static void test_query_functions_reject_null_outputs(void **state)
{
    (void)state;
    tl_use("basic");
    expect_bad(attnrt_plugin_count(NULL), ATTNRT_ERR_INVALID_ARGUMENT, "count");
    expect_bad(attnrt_plugin_get_info(0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "info");
    expect_bad(attnrt_device_count(NULL), ATTNRT_ERR_INVALID_ARGUMENT, "count");
    expect_bad(attnrt_device_get_properties(0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "props");
    expect_bad(attnrt_device_get_attribute(0, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "attr");
    expect_bad(attnrt_device_get_plugin(0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "plugin_index");
    uint32_t index = 42;
    expect_bad(attnrt_device_find(NULL, &index), ATTNRT_ERR_INVALID_ARGUMENT, "name");
    expect_bad(attnrt_device_find("basic:0", NULL), ATTNRT_ERR_INVALID_ARGUMENT, "index");
    expect_bad(attnrt_device_default(NULL), ATTNRT_ERR_INVALID_ARGUMENT, "index");
    assert_int_equal(index, 42);
    expect_bad(attnrt_open(NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx");
    assert_int_equal(tl_attr(0, "open_devices"), 0);
}

static void test_struct_size_too_small_is_rejected(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_plugin_info_t info = {0};
    expect_bad(attnrt_plugin_get_info(0, &info), ATTNRT_ERR_INVALID_ARGUMENT, "info->struct_size = 0");
    assert_null(info.path);
    attnrt_device_properties_t props = {0};
    expect_bad(attnrt_device_get_properties(0, &props), ATTNRT_ERR_INVALID_ARGUMENT, "props->struct_size = 0");
    assert_int_equal(props.name[0], 0);
    attnrt_device_attribute_t attr = {0};
    expect_bad(attnrt_device_get_attribute(0, 0, &attr), ATTNRT_ERR_INVALID_ARGUMENT, "attr->struct_size = 0");
    attr.struct_size = sizeof attr - 1;
    expect_bad(attnrt_device_get_attribute(0, 0, &attr), ATTNRT_ERR_INVALID_ARGUMENT, "attr->struct_size");
    assert_int_equal(attr.key[0], 0);
    attnrt_op_query_t q = {.struct_size = 0, .op = ATTNRT_OP_MERGE_STATES};
    expect_bad(attnrt_device_op_supported(0, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "query->struct_size = 0");
    assert_int_equal(tl_attr(0, "violations"), 0);
}

static void test_index_out_of_range_is_rejected_naming_the_function(void **state)
{
    (void)state;
    tl_use("two_devices");
    attnrt_plugin_info_t info = ATTNRT_PLUGIN_INFO_INIT;
    expect_bad(attnrt_plugin_get_info(1, &info), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_plugin_get_info: index = 1 >= plugin count = 1");
    assert_null(info.path);
    attnrt_device_properties_t props = {.struct_size = sizeof props};
    expect_bad(attnrt_device_get_properties(2, &props), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_get_properties: index = 2 >= device count = 2");
    expect_bad(attnrt_device_get_properties(UINT32_MAX, &props), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_get_properties: index = 4294967295 >= device count = 2");
    assert_int_equal(props.name[0], 0);
    attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
    expect_bad(attnrt_device_get_attribute(2, 0, &attr), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_get_attribute: index = 2 >= device count = 2");
    expect_bad(attnrt_device_get_attribute(1, 1000, &attr), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_get_attribute: i = 1000 >= attribute_count = 9 of two_devices:1");
    uint32_t plugin = 42;
    expect_bad(attnrt_device_get_plugin(2, &plugin), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_get_plugin: index = 2 >= device count = 2");
    assert_int_equal(plugin, 42);
    assert_ok(attnrt_device_get_plugin(1, &plugin));
    assert_int_equal(plugin, 0);
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_MERGE_STATES};
    expect_bad(attnrt_device_op_supported(2, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_op_supported: index = 2 >= device count = 2");
    uint32_t index = 42;
    expect_bad(attnrt_device_find("two_devices:2", &index), ATTNRT_ERR_NOT_FOUND,
               "attnrt_device_find: no device named 'two_devices:2'");
    assert_int_equal(index, 42);
    attnrt_context_t *ctx = NULL;
    expect_bad(attnrt_open("two_devices:2", &ctx), ATTNRT_ERR_NOT_FOUND,
               "attnrt_open: no device named 'two_devices:2'; devices: two_devices:0, two_devices:1");
    assert_null(ctx);
}

static void test_attribute_index_out_of_range_names_the_device_once(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_device_attribute_t attr = {.struct_size = sizeof attr};
    assert_status(attnrt_device_get_attribute(0, 9, &attr), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_string_equal(attnrt_last_error(), "attnrt_device_get_attribute: i = 9 >= attribute_count = 9 of basic:0");
    assert_int_equal(attr.key[0], 0);
}

static void test_capability_query_errors_name_the_function_called(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    attnrt_op_query_t bad_op = {.struct_size = sizeof bad_op, .op = 99};
    assert_ok(attnrt_open(NULL, &ctx));
    expect_bad(attnrt_op_supported(ctx, NULL, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_op_supported: query is NULL");
    expect_bad(attnrt_op_supported(ctx, &bad_op, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_op_supported: query->op = 99 is not an attnrt_op_t");
    assert_ok(attnrt_close(ctx));
    expect_bad(attnrt_device_op_supported(0, NULL, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_op_supported: query is NULL");
    expect_bad(attnrt_device_op_supported(0, &bad_op, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT,
               "attnrt_device_op_supported: query->op = 99 is not an attnrt_op_t");
}

static void test_a_failed_start_up_is_replayed_naming_the_function_called(void **state)
{
    (void)state;
    tl_use("probe_fails");
    attnrt_context_t *ctx = NULL;
    uint32_t n = 0;
    expect_bad(attnrt_init(), ATTNRT_ERR_NO_DEVICE, "attnrt_init: ATTNRT_PLUGIN=");
    expect_bad(attnrt_open(NULL, &ctx), ATTNRT_ERR_NO_DEVICE, "attnrt_open: ATTNRT_PLUGIN=");
    expect_bad(attnrt_device_count(&n), ATTNRT_ERR_NO_DEVICE, "attnrt_device_count: ATTNRT_PLUGIN=");
    expect_bad(attnrt_device_find("x", &n), ATTNRT_ERR_NO_DEVICE, "attnrt_device_find: ATTNRT_PLUGIN=");
    expect_bad(attnrt_device_default(&n), ATTNRT_ERR_NO_DEVICE, "attnrt_device_default: ATTNRT_PLUGIN=");
    assert_error_has("tp-probe: no fake driver here");
}

/* ---- contexts, memory, streams, events, capabilities ---- */

static void test_context_functions_reject_a_null_context(void **state)
{
    (void)state;
    tl_use("basic");
    void *p = (void *)&p;
    char host[8];
    attnrt_stream_t *s = NULL;
    attnrt_event_t *e = NULL;
    assert_ok(attnrt_close(NULL)); /* documented no-op */
    assert_string_equal(attnrt_context_device_name(NULL), "");
    expect_bad(attnrt_mem_alloc(NULL, 8, &p), ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_mem_alloc: ctx is NULL");
    assert_ptr_equal(p, (void *)&p);
    expect_bad(attnrt_mem_free(NULL, p), ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_mem_free: ctx is NULL");
    expect_bad(attnrt_mem_copy_to_device(NULL, p, host, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_mem_copy_to_host(NULL, host, p, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_mem_copy_on_device(NULL, p, p, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_mem_set(NULL, p, 0, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_mem_set: ctx is NULL");
    expect_bad(attnrt_stream_create(NULL, &s), ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_stream_create: ctx is NULL");
    expect_bad(attnrt_stream_synchronize(NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_event_create(NULL, &e), ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_event_create: ctx is NULL");
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_MERGE_STATES};
    expect_bad(attnrt_op_supported(NULL, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_op_supported: ctx is NULL");
    assert_null(s);
    assert_null(e);
}

static void test_context_functions_reject_null_pointers_and_zero_bytes(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    attnrt_event_t *e = NULL;
    void *p = NULL;
    char host[8] = {0};
    float ms = -1.0f;
    assert_ok(attnrt_open(NULL, &ctx));
    expect_bad(attnrt_mem_alloc(ctx, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ptr is NULL");
    expect_bad(attnrt_mem_alloc(ctx, 0, &p), ATTNRT_ERR_INVALID_ARGUMENT, "bytes = 0");
    assert_null(p);
    assert_int_equal(tl_attr(0, "alloc_calls"), 0); /* nothing bad reached the plugin */
    assert_ok(attnrt_mem_alloc(ctx, sizeof host, &p));
    expect_bad(attnrt_mem_copy_to_device(ctx, NULL, host, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "dst is NULL");
    expect_bad(attnrt_mem_copy_to_device(ctx, p, NULL, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "src is NULL");
    expect_bad(attnrt_mem_copy_to_host(ctx, NULL, p, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "dst is NULL");
    expect_bad(attnrt_mem_copy_on_device(ctx, p, NULL, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "src is NULL");
    expect_bad(attnrt_mem_set(ctx, NULL, 0, 8, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "dst is NULL");
    /* Zero bytes is a valid empty operation, even with NULL pointers. */
    assert_ok(attnrt_mem_copy_to_device(ctx, NULL, NULL, 0, NULL));
    assert_ok(attnrt_mem_copy_to_host(ctx, NULL, NULL, 0, NULL));
    assert_ok(attnrt_mem_copy_on_device(ctx, NULL, NULL, 0, NULL));
    assert_ok(attnrt_mem_set(ctx, NULL, 0, 0, NULL));
    assert_ok(attnrt_mem_free(ctx, NULL)); /* NULL is a no-op */
    expect_bad(attnrt_stream_create(ctx, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "stream is NULL");
    assert_ok(attnrt_stream_destroy(NULL));
    expect_bad(attnrt_event_create(ctx, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "event is NULL");
    assert_ok(attnrt_event_destroy(NULL));
    expect_bad(attnrt_event_record(NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "event is NULL");
    assert_ok(attnrt_event_create(ctx, &e));
    expect_bad(attnrt_event_elapsed_ms(NULL, e, &ms), ATTNRT_ERR_INVALID_ARGUMENT, "start is NULL");
    expect_bad(attnrt_event_elapsed_ms(e, NULL, &ms), ATTNRT_ERR_INVALID_ARGUMENT, "end is NULL");
    expect_bad(attnrt_event_elapsed_ms(e, e, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ms is NULL");
    assert_true(ms == -1.0f);
    assert_ok(attnrt_event_destroy(e));
    assert_ok(attnrt_mem_free(ctx, p));
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "violations"), 0);
    assert_int_equal(tl_attr(0, "live_allocations"), 0);
}

static void test_capability_query_rejects_bad_queries(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    char reason[64] = "stale";
    assert_ok(attnrt_open(NULL, &ctx));
    expect_bad(attnrt_op_supported(ctx, NULL, reason, sizeof reason), ATTNRT_ERR_INVALID_ARGUMENT, "query is NULL");
    assert_string_equal(reason, "");
    attnrt_op_query_t q = {.struct_size = sizeof q, .op = 0};
    expect_bad(attnrt_op_supported(ctx, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "op = 0");
    q.op = ATTNRT_OP_COUNT_;
    expect_bad(attnrt_op_supported(ctx, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "is not an attnrt_op_t");
    q.op = ATTNRT_OP_MERGE_STATES;
    q.struct_size = sizeof(size_t) - 1; /* cannot even hold struct_size */
    expect_bad(attnrt_op_supported(ctx, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "query->struct_size = 7");
    q.struct_size = ATTNRT_STRUCT_SIZE(attnrt_op_query_t, op); /* an older, smaller struct: the rest reads as 0 */
    assert_ok(attnrt_op_supported(ctx, &q, NULL, 0));
    q.struct_size = sizeof(size_t); /* even op lies beyond it */
    expect_bad(attnrt_op_supported(ctx, &q, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "query->op is 0");
    expect_bad(attnrt_device_op_supported(0, NULL, NULL, 0), ATTNRT_ERR_INVALID_ARGUMENT, "query is NULL");
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "open_devices"), 0); /* the failed device query closed what it opened */
}

/* A caller whose attnrt_op_query_t ends exactly at its struct_size, right before an unreadable page: the
 * runtime must read nothing beyond struct_size. */
static void test_capability_query_reads_nothing_beyond_struct_size(void **state)
{
    (void)state;
    tl_use("basic");
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *mem = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    assert_int_equal(mprotect(mem + page, (size_t)page, PROT_NONE), 0);
    const size_t size = ATTNRT_OP_QUERY_STRUCT_SIZE;
    attnrt_op_query_t full = {.struct_size = size, .op = ATTNRT_OP_MERGE_STATES};
    attnrt_op_query_t *q = (attnrt_op_query_t *)(void *)(mem + page - size); /* its tail padding is unmapped */
    memcpy(q, &full, size);
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(NULL, &ctx));
    assert_ok(attnrt_op_supported(ctx, q, NULL, 0));
    /* The struct is only 4-byte aligned here, so fields are written through memcpy, as the runtime reads them. */
    uint32_t op = ATTNRT_OP_PAGED_ATTENTION;
    memcpy((unsigned char *)q + offsetof(attnrt_op_query_t, op), &op, sizeof op);
    assert_status(attnrt_op_supported(ctx, q, NULL, 0), ATTNRT_ERR_UNSUPPORTED);
    op = ATTNRT_OP_CASCADE; /* composed by the runtime from its parts */
    memcpy((unsigned char *)q + offsetof(attnrt_op_query_t, op), &op, sizeof op);
    assert_status(attnrt_op_supported(ctx, q, NULL, 0), ATTNRT_ERR_UNSUPPORTED);
    assert_ok(attnrt_close(ctx));
    munmap(mem, 2 * (size_t)page);
    assert_int_equal(tl_attr(0, "violations"), 0);
}

static void test_op_functions_reject_null_handles_and_args(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    attnrt_plan_t *plan = (attnrt_plan_t *)&plan; /* a sentinel: must not be overwritten */
    size_t bytes = 42;
    attnrt_attention_args_t attn = {.struct_size = sizeof attn};
    attnrt_batch_host_t batch = {.struct_size = sizeof batch};
    attnrt_kv_write_args_t kv = {.struct_size = sizeof kv};
    attnrt_merge_args_t merge = {.struct_size = sizeof merge};
    attnrt_cascade_args_t cascade = {.struct_size = sizeof cascade};
    attnrt_cascade_host_t cascade_host = {.struct_size = sizeof cascade_host};
    expect_bad(attnrt_kv_write(NULL, &kv, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_attention_plan(NULL, &attn, &batch, &plan), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_merge_states(NULL, &merge, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_cascade_plan(NULL, &cascade, &cascade_host, &plan), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    expect_bad(attnrt_plan_workspace_size(NULL, &bytes), ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
    expect_bad(attnrt_attention_run(NULL, &attn, NULL, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
    expect_bad(attnrt_cascade_run(NULL, &cascade, NULL, 0, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "plan is NULL");
    assert_ok(attnrt_plan_destroy(NULL));
    assert_ptr_equal(plan, (attnrt_plan_t *)&plan);
    assert_int_equal(bytes, 42);

    assert_ok(attnrt_open(NULL, &ctx));
    expect_bad(attnrt_kv_write(ctx, NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
    expect_bad(attnrt_attention_plan(ctx, NULL, &batch, &plan), ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
    expect_bad(attnrt_merge_states(ctx, NULL, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "args is NULL");
    expect_bad(attnrt_cascade_plan(ctx, NULL, &cascade_host, &plan), ATTNRT_ERR_INVALID_ARGUMENT, "is NULL");
    merge.struct_size = 0;
    expect_bad(attnrt_merge_states(ctx, &merge, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "args->struct_size = 0");
    assert_ptr_equal(plan, (attnrt_plan_t *)&plan);
    assert_ok(attnrt_close(ctx));
    assert_int_equal(tl_attr(0, "op_calls"), 0);
    assert_int_equal(tl_attr(0, "violations"), 0);
}

static void test_tensor_helpers_reject_bad_input(void **state)
{
    (void)state;
    const attnrt_dtype_t f32 = {ATTNRT_DTYPE_CODE_FLOAT, 32, 1}, odd = {ATTNRT_DTYPE_CODE_FLOAT, 24, 1};
    const int64_t shape[ATTNRT_MAX_DIMS + 1] = {2, 3, 4, 5, 6, 7, 8};
    attnrt_tensor_t t;
    expect_bad(attnrt_tensor_init(NULL, NULL, f32, 1, shape), ATTNRT_ERR_INVALID_ARGUMENT, "is NULL");
    expect_bad(attnrt_tensor_init(&t, NULL, f32, 1, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "shape");
    expect_bad(attnrt_tensor_init(&t, NULL, f32, 0, shape), ATTNRT_ERR_INVALID_ARGUMENT, "ndim");
    expect_bad(attnrt_tensor_init(&t, NULL, f32, ATTNRT_MAX_DIMS + 1, shape), ATTNRT_ERR_INVALID_ARGUMENT, "ndim");
    assert_ok(attnrt_tensor_init(&t, NULL, f32, 3, shape));
    assert_int_equal(t.struct_size, sizeof t);
    assert_int_equal(t.strides[2], 1);
    assert_int_equal(t.strides[1], 4);
    assert_int_equal(t.strides[0], 12);
    assert_int_equal(attnrt_dtype_size(f32), 4);
    assert_int_equal(attnrt_dtype_size(odd), 0);
    assert_string_equal(attnrt_dtype_name(f32), "f32");
    assert_string_equal(attnrt_dtype_name(odd), "unknown");
}

static void test_bad_device_names_and_env_are_reported(void **state)
{
    (void)state;
    tl_use("basic");
    attnrt_context_t *ctx = NULL;
    expect_bad(attnrt_open("cuda:0", &ctx), ATTNRT_ERR_NOT_FOUND, "no device named 'cuda:0'; devices: basic:0");
    assert_null(ctx);
    assert_ok(attnrt_open("", &ctx)); /* "" picks the default device */
    assert_string_equal(attnrt_context_device_name(ctx), "basic:0");
    assert_ok(attnrt_close(ctx));
    uint32_t index = 42;
    setenv("ATTNRT_DEVICE", "nope", 1);
    expect_bad(attnrt_device_default(&index), ATTNRT_ERR_NOT_FOUND, "ATTNRT_DEVICE=nope");
    assert_int_equal(index, 42);
}

#define T(name) cmocka_unit_test_setup_teardown(test_##name, tl_setup, tl_teardown)

int loader_args_tests(void)
{
    const struct CMUnitTest tests[] = {
        T(every_status_has_a_distinct_name_and_unknown_values_have_one_too),
        T(version_string_names_the_library_and_the_abi),
        T(every_op_has_a_name_and_others_are_unknown),
        T(query_functions_reject_null_outputs),
        T(struct_size_too_small_is_rejected),
        T(index_out_of_range_is_rejected_naming_the_function),
        T(attribute_index_out_of_range_names_the_device_once),
        T(capability_query_errors_name_the_function_called),
        T(a_failed_start_up_is_replayed_naming_the_function_called),
        T(context_functions_reject_a_null_context),
        T(context_functions_reject_null_pointers_and_zero_bytes),
        T(capability_query_rejects_bad_queries),
        T(capability_query_reads_nothing_beyond_struct_size),
        T(op_functions_reject_null_handles_and_args),
        T(tensor_helpers_reject_bad_input),
        T(bad_device_names_and_env_are_reported),
    };
    return tl_run_isolated("loader: bad arguments and names", tests, sizeof tests / sizeof tests[0]);
}
