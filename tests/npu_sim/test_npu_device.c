/* test_npu_device.c — the device around the kernels: profiles from ATTNRT_NPU_PROFILE and from the
 * "profile" open option (unknown keys and values refused by name), the ExtDev type, the memory budget
 * (OUT_OF_MEMORY past it, given back on free), attributes, select_attention and last_op_stats through
 * the vtable, and events that measure simulated time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "npu_fixture.h"

static attnrt_status_t open_with(npu_fx_t *fx, const char *key, const char *value)
{
    memset(fx, 0, sizeof *fx);
    attnrt_status_t st = npu_fx_open(fx, NULL, NULL); /* defaults, then reopen with the option */
    assert_int_equal(st, ATTNRT_OK);
    fx->api->device_close(fx->dev);
    fx->dev = NULL;
    attnrt_device_attribute_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    snprintf(o.key, sizeof o.key, "%s", key);
    snprintf(o.value, sizeof o.value, "%s", value);
    return fx->api->device_open_with_options(fx->plugin, 0, &o, 1, &fx->dev);
}

static void unknown_options_are_refused_by_name(void **state)
{
    (void)state;
    npu_fx_t fx;
    assert_int_equal(open_with(&fx, "profile", "rbln-rebel200"), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(npu_fx_error(&fx), "\"rbln-rebel200\": unknown profile; known profiles: rbln-atom, rbln-rebel100"));
    npu_fx_close(&fx);
    assert_int_equal(open_with(&fx, "profil", "rbln-atom"), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(npu_fx_error(&fx), "unknown open option \"profil\""));
    npu_fx_close(&fx);
    assert_int_equal(open_with(&fx, "front_end", "sglang"), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(npu_fx_error(&fx), "\"sglang\""));
    npu_fx_close(&fx);
    assert_int_equal(open_with(&fx, "prefill_chunk", "100"), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(npu_fx_error(&fx), "`prefill_chunk_size` must be a positive integer divisible by 64."));
    npu_fx_close(&fx);
}

static void the_environment_chooses_the_profile(void **state)
{
    (void)state;
    const attnrt_plugin_api_t *api = NULL;
    npu_fx_t fx;
    setenv("ATTNRT_NPU_PROFILE", "rbln-rebel100", 1);
    assert_int_equal(npu_fx_open(&fx, NULL, NULL), ATTNRT_OK);
    attnrt_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    assert_int_equal(fx.api->device_properties(fx.plugin, 0, &props), ATTNRT_OK);
    assert_string_equal(props.arch, "rbln-rebel100");
    assert_string_equal(props.vendor, "Rebellions (simulated)");
    assert_string_equal(props.name, "npu_sim:0");
    assert_int_equal(props.device_type, ATTNRT_DEVICE_TYPE_EXTDEV);
    assert_true(props.memory_total == 140ull << 30); /* 144 GiB - 4 GiB */
    api = fx.api;
    npu_fx_close(&fx);
    setenv("ATTNRT_NPU_PROFILE", "rbln-nope", 1);
    void *plugin = NULL;
    attnrt_host_api_t host = {sizeof host, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR, ATTNRT_LOG_WARN, NULL};
    assert_int_equal(api->init(&host, &plugin), ATTNRT_ERR_INVALID_ARGUMENT);
    char msg[256];
    api->last_error(msg, sizeof msg);
    assert_string_equal(msg, "ATTNRT_NPU_PROFILE=rbln-nope: unknown npu_sim profile; known profiles: rbln-atom, rbln-rebel100");
    unsetenv("ATTNRT_NPU_PROFILE");
}

static void memory_past_the_budget_is_out_of_memory(void **state)
{
    (void)state;
    npu_fx_t fx;
    assert_int_equal(npu_fx_open(&fx, "rbln-atom", NULL), ATTNRT_OK);
    const size_t budget = (16ull << 30) - (288ull << 20);
    void *a = NULL, *b = NULL;
    assert_int_equal(fx.api->mem_alloc(fx.dev, budget + 1, &a), ATTNRT_ERR_OUT_OF_MEMORY);
    assert_non_null(strstr(npu_fx_error(&fx), "out of device memory"));
    assert_int_equal(fx.api->mem_alloc(fx.dev, 1 << 20, &a), ATTNRT_OK);
    assert_true(((uintptr_t)a & 255) == 0);
    /* the rest of the budget minus one byte does not fit any more; after the free it would */
    assert_int_equal(fx.api->mem_alloc(fx.dev, budget - (1 << 20) + 1, &b), ATTNRT_ERR_OUT_OF_MEMORY);
    fx.api->mem_free(fx.dev, a);
    attnrt_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    fx.api->device_properties(fx.plugin, 0, &props);
    assert_true(props.memory_free == props.memory_total);
    npu_fx_close(&fx);
}

static void attributes_show_the_limits(void **state)
{
    (void)state;
    npu_fx_t fx;
    assert_int_equal(npu_fx_open(&fx, NULL, NULL), ATTNRT_OK);
    attnrt_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props;
    fx.api->device_properties(fx.plugin, 0, &props);
    int seen = 0;
    for (uint32_t i = 0; i < props.attribute_count; i++) {
        attnrt_device_attribute_t a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        assert_int_equal(fx.api->device_attribute(fx.plugin, 0, i, &a), ATTNRT_OK);
        if (!strcmp(a.key, "vllm_block_size")) seen += strstr(a.value, "1024-32768") != NULL;
        if (!strcmp(a.key, "head_sizes")) seen += strstr(a.value, "[32, 64, 80, 96, 128, 160, 192, 224, 256]") != NULL;
        if (!strcmp(a.key, "sliding_window_max")) seen += strstr(a.value, "32640") != NULL;
    }
    assert_int_equal(seen, 3);
    npu_fx_close(&fx);
}

static void select_attention_and_stats_through_the_vtable(void **state)
{
    (void)state;
    npu_fx_t fx;
    assert_int_equal(npu_fx_open(&fx, "rbln-rebel100", NULL), ATTNRT_OK);
    attnrt_op_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(fx.api->last_op_stats(fx.dev, &s), ATTNRT_OK);
    assert_int_equal(s.op, 0); /* no op yet */
    attnrt_attention_config_t c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.max_model_len = 32768;
    c.block_size = 4096;
    c.head_dim = 128;
    attnrt_attention_selection_t sel;
    memset(&sel, 0, sizeof sel);
    sel.struct_size = sizeof sel;
    assert_int_equal(fx.api->select_attention(fx.dev, &c, &sel), ATTNRT_OK);
    assert_string_equal(sel.kernel, "flash");
    assert_int_equal(sel.partition_len, 4096);
    assert_int_equal(sel.num_partitions, 8);
    assert_int_equal(sel.prefill_chunk, 512);
    c.block_size = 32768;
    assert_int_equal(fx.api->select_attention(fx.dev, &c, &sel), ATTNRT_ERR_UNSUPPORTED);
    assert_string_equal(npu_fx_error(&fx),
                        "block_size (32768) must be a power of two within the supported range for Rebel100 (512-16384 tokens) "
                        "[rbln-rebel100, vLLM path; accepted: block_size 512, 1024, 2048, 4096, 8192, 16384 (Flash)]");
    /* a caller with a shorter (older) selection struct gets only its part */
    unsigned char small[offsetof(attnrt_attention_selection_t, block_size) + 8];
    memset(small, 0xab, sizeof small);
    attnrt_attention_selection_t *part = (attnrt_attention_selection_t *)(void *)small;
    const size_t short_size = offsetof(attnrt_attention_selection_t, block_size);
    memcpy(small, &short_size, sizeof short_size);
    c.block_size = 4096;
    assert_int_equal(fx.api->select_attention(fx.dev, &c, part), ATTNRT_OK);
    assert_int_equal(small[short_size], 0xab);
    npu_fx_close(&fx);
}

static void events_measure_simulated_time(void **state)
{
    (void)state;
    npu_fx_t fx;
    assert_int_equal(npu_fx_open(&fx, NULL, NULL), ATTNRT_OK);
    void *e0, *e1;
    assert_int_equal(fx.api->event_create(fx.dev, &e0), ATTNRT_OK);
    assert_int_equal(fx.api->event_create(fx.dev, &e1), ATTNRT_OK);
    fx.api->event_record(fx.dev, e0, NULL);
    /* one merge of 2 states [4, 2, 64] f32 */
    float *o = calloc(4 * 2 * 64 * 3, sizeof(float)), lse[3][8] = {{0}};
    const int64_t osh[3] = {4, 2, 64}, ost[3] = {128, 64, 1}, lsh[2] = {4, 2}, lst[2] = {2, 1};
    attnrt_tensor_t t[3], l[3];
    for (int i = 0; i < 3; i++) {
        memset(&t[i], 0, sizeof t[i]);
        memset(&l[i], 0, sizeof l[i]);
        t[i].struct_size = l[i].struct_size = sizeof t[i];
        t[i].data = o + i * 512;
        l[i].data = lse[i];
        t[i].dtype = l[i].dtype = ATTNRT_F32;
        t[i].ndim = 3;
        l[i].ndim = 2;
        memcpy(t[i].shape, osh, sizeof osh);
        memcpy(t[i].strides, ost, sizeof ost);
        memcpy(l[i].shape, lsh, sizeof lsh);
        memcpy(l[i].strides, lst, sizeof lst);
    }
    const attnrt_tensor_t *states[2] = {&t[0], &t[1]}, *lses[2] = {&l[0], &l[1]};
    attnrt_merge_args_t m = {sizeof m, 2, states, lses, &t[2], &l[2], NULL};
    assert_int_equal(fx.api->merge_states(fx.dev, &m, NULL), ATTNRT_OK);
    fx.api->event_record(fx.dev, e1, NULL);
    float ms = 0;
    assert_int_equal(fx.api->event_elapsed_ms(fx.dev, e0, e1, &ms), ATTNRT_OK);
    attnrt_op_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    fx.api->last_op_stats(fx.dev, &s);
    assert_int_equal(s.op, ATTNRT_OP_MERGE_STATES);
    assert_int_equal(s.launches, 1);
    assert_true(ms > 0 && (double)ms * 1e3 > 0.999 * s.time_us && (double)ms * 1e3 < 1.001 * s.time_us);
    fx.api->event_destroy(fx.dev, e0);
    fx.api->event_destroy(fx.dev, e1);
    free(o);
    npu_fx_close(&fx);
}

int main(void)
{
    unsetenv("ATTNRT_NPU_PROFILE"); /* the defaults under test are the plugin's own */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_options_are_refused_by_name),
        cmocka_unit_test(the_environment_chooses_the_profile),
        cmocka_unit_test(memory_past_the_budget_is_out_of_memory),
        cmocka_unit_test(attributes_show_the_limits),
        cmocka_unit_test(select_attention_and_stats_through_the_vtable),
        cmocka_unit_test(events_measure_simulated_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
