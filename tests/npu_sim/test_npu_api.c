/* test_npu_api.c — npu_sim through libattnrt's public API, as an engine sees it: opt-in device type,
 * attnrt_open_with_options with the profile, attnrt_select_attention with the vendor's wording,
 * capability answers, and a decode step (kv_write + plan + run) whose counters come back through
 * attnrt_last_op_stats and whose output matches the float64 reference. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "attnrt.h"
#include "reference.h"

static attnrt_device_attribute_t opt(const char *key, const char *value)
{
    attnrt_device_attribute_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    snprintf(o.key, sizeof o.key, "%s", key);
    snprintf(o.value, sizeof o.value, "%s", value);
    return o;
}

static int setup(void **state)
{
    (void)state;
    setenv("ATTNRT_PLUGIN", "npu_sim", 1);
    unsetenv("ATTNRT_NPU_PROFILE");
    return attnrt_init() == ATTNRT_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return attnrt_shutdown() == ATTNRT_OK ? 0 : -1;
}

static void the_simulator_is_an_opt_in_extdev(void **state)
{
    (void)state;
    uint32_t index;
    assert_int_equal(attnrt_device_find("npu_sim:0", &index), ATTNRT_OK);
    attnrt_device_properties_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    assert_int_equal(attnrt_device_get_properties(index, &p), ATTNRT_OK);
    assert_int_equal(p.device_type, ATTNRT_DEVICE_TYPE_EXTDEV);
    assert_string_equal(p.vendor, "Rebellions (simulated)");
    assert_string_equal(p.arch, "rbln-atom");
}

static void options_choose_the_profile_and_unknown_ones_are_refused(void **state)
{
    (void)state;
    attnrt_context_t *ctx = NULL;
    attnrt_device_attribute_t bad = opt("profile", "rbln-ca99");
    assert_int_equal(attnrt_open_with_options("npu_sim:0", &bad, 1, &ctx), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attnrt_last_error(), "unknown profile; known profiles: rbln-atom, rbln-rebel100"));
    bad = opt("partition", "4096");
    assert_int_equal(attnrt_open_with_options("npu_sim:0", &bad, 1, &ctx), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attnrt_last_error(), "unknown open option \"partition\""));

    attnrt_device_attribute_t o = opt("profile", "rbln-rebel100");
    assert_int_equal(attnrt_open_with_options("npu_sim:0", &o, 1, &ctx), ATTNRT_OK);
    attnrt_attention_config_t c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.front_end = ATTNRT_FRONT_END_COMPILED;
    c.attn_impl[0] = '\0';
    c.max_model_len = 32768;
    attnrt_attention_selection_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_ERR_UNSUPPORTED);
    assert_non_null(strstr(attnrt_last_error(), "`max_seq_len` is set to 32768, which exceeds the limit of 16384 for "
                                                "'eager' attention."));
    snprintf(c.attn_impl, sizeof c.attn_impl, "flash_attn");
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_OK);
    assert_string_equal(s.kernel, "flash");
    assert_int_equal(s.partition_len, 8192);
    assert_int_equal(s.num_partitions, 4);
    assert_int_equal(s.prefill_chunk, 512);
    /* the model kind passes through the runtime: a pooling model is Naive with block = max_model_len */
    c.attn_impl[0] = '\0';
    c.max_model_len = 8192;
    c.model_kind = ATTNRT_MODEL_POOLING;
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_OK);
    assert_string_equal(s.kernel, "naive");
    assert_int_equal(s.block_size, 8192);
    c.block_size = 4096;
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_ERR_UNSUPPORTED);
    assert_non_null(strstr(attnrt_last_error(), "Pooling models use Naive Attention with block_size == max_model_len"));
    c.model_kind = ATTNRT_MODEL_POOLING_QWEN3;
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_OK);
    assert_string_equal(s.kernel, "flash");
    c.model_kind = ATTNRT_MODEL_ENCODER_DECODER + 1;
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(attnrt_last_error(), "config->model_kind = 4 is not an attnrt_model_kind"));
    /* a caller of ABI 1.2, whose struct ends at kv_dtype, asks for a decoder */
    c.model_kind = ATTNRT_MODEL_POOLING;
    c.struct_size = offsetof(attnrt_attention_config_t, kv_dtype) + sizeof c.kv_dtype;
    assert_int_equal(attnrt_select_attention(ctx, &c, &s), ATTNRT_OK);
    assert_string_equal(s.kernel, "flash");
    c.struct_size = sizeof c;

    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_PAGED_ATTENTION;
    q.q_dtype = q.kv_dtype = ATTNRT_F16;
    q.head_dim_qk = q.head_dim_v = 128;
    q.block_size = 16;
    char reason[512];
    assert_int_equal(attnrt_op_supported(ctx, &q, reason, sizeof reason), ATTNRT_ERR_UNSUPPORTED);
    assert_string_equal(reason, "block_size (16) must be a power of two within the supported range for Rebel100 "
                                "(512-16384 tokens)");
    assert_int_equal(attnrt_close(ctx), ATTNRT_OK);
}

static attnrt_tensor_t tensor(void *data, attnrt_dtype_t dt, int ndim, const int64_t *shape)
{
    attnrt_tensor_t t;
    assert_int_equal(attnrt_tensor_init(&t, data, dt, ndim, shape), ATTNRT_OK);
    return t;
}

static void *dev_copy(attnrt_context_t *ctx, const void *host, size_t bytes)
{
    void *p = NULL;
    assert_int_equal(attnrt_mem_alloc(ctx, bytes, &p), ATTNRT_OK);
    assert_int_equal(attnrt_mem_copy_to_device(ctx, p, host, bytes, NULL), ATTNRT_OK);
    return p;
}

/* One decode row at position 600 over block_size 512 (flash, 2 partitions), f32 to keep it exact. */
static void a_decode_step_reports_its_cost(void **state)
{
    (void)state;
    enum { BS = 512, COLS = 2, S = 600, HQ = 2, HKV = 1, D = 64 };
    attnrt_device_attribute_t o = opt("profile", "rbln-rebel100");
    attnrt_context_t *ctx = NULL;
    assert_int_equal(attnrt_open_with_options("npu_sim:0", &o, 1, &ctx), ATTNRT_OK);

    float *k = malloc(sizeof(float) * S * HKV * D), *v = malloc(sizeof(float) * S * HKV * D), q[HQ * D];
    int64_t *slots = malloc(sizeof(int64_t) * S);
    const int32_t table[COLS] = {1, 0}, qsl[2] = {0, 1}, sl[1] = {S};
    uint32_t x = 12345;
    for (int i = 0; i < S * HKV * D; i++) {
        x = x * 1664525u + 1013904223u;
        k[i] = (float)((double)(x >> 8) / 8388608.0 - 1.0);
        x = x * 1664525u + 1013904223u;
        v[i] = (float)((double)(x >> 8) / 8388608.0 - 1.0);
    }
    for (int i = 0; i < HQ * D; i++) q[i] = (float)sin(0.37 * i) * 2.0f;
    for (int p = 0; p < S; p++) slots[p] = (int64_t)table[p / BS] * BS + p % BS;
    const size_t cache_bytes = sizeof(float) * COLS * BS * HKV * D;
    void *kc = NULL, *vc = NULL;
    assert_int_equal(attnrt_mem_alloc(ctx, cache_bytes, &kc), ATTNRT_OK);
    assert_int_equal(attnrt_mem_alloc(ctx, cache_bytes, &vc), ATTNRT_OK);
    void *kd = dev_copy(ctx, k, sizeof(float) * S * HKV * D), *vd = dev_copy(ctx, v, sizeof(float) * S * HKV * D);
    void *sd = dev_copy(ctx, slots, sizeof(int64_t) * S), *qd = dev_copy(ctx, q, sizeof q);
    void *btd = dev_copy(ctx, table, sizeof table), *qsld = dev_copy(ctx, qsl, sizeof qsl), *sld = dev_copy(ctx, sl, sizeof sl);
    void *od = NULL;
    assert_int_equal(attnrt_mem_alloc(ctx, sizeof(float) * HQ * D, &od), ATTNRT_OK);

    const int64_t ksh[3] = {S, HKV, D}, ssh[1] = {S}, csh[4] = {COLS, BS, HKV, D}, qsh[3] = {1, HQ, D};
    const int64_t btsh[2] = {1, COLS}, qslsh[1] = {2}, slsh[1] = {1};
    attnrt_tensor_t tk = tensor(kd, ATTNRT_F32, 3, ksh), tv = tensor(vd, ATTNRT_F32, 3, ksh);
    attnrt_tensor_t ts = tensor(sd, ATTNRT_I64, 1, ssh), tkc = tensor(kc, ATTNRT_F32, 4, csh);
    attnrt_tensor_t tvc = tensor(vc, ATTNRT_F32, 4, csh), tq = tensor(qd, ATTNRT_F32, 3, qsh);
    attnrt_tensor_t to = tensor(od, ATTNRT_F32, 3, qsh), tbt = tensor(btd, ATTNRT_I32, 2, btsh);
    attnrt_tensor_t tqsl = tensor(qsld, ATTNRT_I32, 1, qslsh), tsl = tensor(sld, ATTNRT_I32, 1, slsh);
    attnrt_kv_write_args_t w = {sizeof w, &tk, &tv, &ts, &tkc, &tvc, NULL, NULL, slots};
    assert_int_equal(attnrt_kv_write(ctx, &w, NULL), ATTNRT_OK);
    attnrt_op_stats_t st;
    memset(&st, 0, sizeof st);
    st.struct_size = sizeof st;
    assert_int_equal(attnrt_last_op_stats(ctx, &st), ATTNRT_OK);
    assert_int_equal(st.op, ATTNRT_OP_KV_WRITE);

    attnrt_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.query = &tq;
    a.key_cache = &tkc;
    a.value_cache = &tvc;
    a.block_table = &tbt;
    a.query_start_loc = &tqsl;
    a.seq_lens = &tsl;
    a.out = &to;
    a.causal = 1;
    attnrt_batch_host_t batch = {sizeof batch, 1, qsl, sl, table, COLS};
    attnrt_plan_t *plan = NULL;
    assert_int_equal(attnrt_attention_plan(ctx, &a, &batch, &plan), ATTNRT_OK);
    size_t ws_bytes = 0;
    void *ws = NULL;
    assert_int_equal(attnrt_plan_workspace_size(plan, &ws_bytes), ATTNRT_OK);
    assert_int_equal(attnrt_mem_alloc(ctx, ws_bytes, &ws), ATTNRT_OK);
    assert_int_equal(attnrt_attention_run(plan, &a, ws, ws_bytes, NULL), ATTNRT_OK);
    assert_int_equal(attnrt_last_op_stats(ctx, &st), ATTNRT_OK);
    assert_int_equal(st.op, ATTNRT_OP_PAGED_ATTENTION);
    assert_int_equal(st.simulated, 1);
    assert_int_equal(st.partitions, 2); /* ceil(600 / 512) */
    assert_int_equal(st.padded_rows, 0);
    assert_int_equal(st.launches, 1);
    assert_true(st.time_us > 0 && st.bytes_moved > 0 && st.flops > 0);

    float out[HQ * D];
    assert_int_equal(attnrt_mem_copy_to_host(ctx, out, od, sizeof out, NULL), ATTNRT_OK);
    double qd64[HQ * D], *k64 = malloc(sizeof(double) * COLS * BS * HKV * D), *v64 = malloc(sizeof(double) * COLS * BS * HKV * D);
    double ref[HQ * D];
    for (int i = 0; i < HQ * D; i++) qd64[i] = q[i];
    memset(k64, 0, sizeof(double) * COLS * BS * HKV * D);
    memset(v64, 0, sizeof(double) * COLS * BS * HKV * D);
    for (int p = 0; p < S; p++)
        for (int d = 0; d < HKV * D; d++) {
            k64[slots[p] * HKV * D + d] = k[p * HKV * D + d];
            v64[slots[p] * HKV * D + d] = v[p * HKV * D + d];
        }
    ref_attention_problem pr = {1, qsl, sl, HQ, HKV, D, D, qd64, k64, v64, COLS, BS, table, COLS, 1.0 / sqrt(D), 1, -1, -1,
                                0, NULL, NULL, ref, NULL};
    ref_paged_attention(&pr);
    double num = 0, den = 0;
    for (int i = 0; i < HQ * D; i++) {
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    assert_true(sqrt(num / den) < 1e-5);

    assert_int_equal(attnrt_plan_destroy(plan), ATTNRT_OK);
    assert_int_equal(attnrt_mem_free(ctx, ws), ATTNRT_OK);
    void *bufs[] = {kc, vc, kd, vd, sd, qd, btd, qsld, sld, od};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) attnrt_mem_free(ctx, bufs[i]);
    assert_int_equal(attnrt_close(ctx), ATTNRT_OK);
    free(k), free(v), free(slots), free(k64), free(v64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_simulator_is_an_opt_in_extdev),
        cmocka_unit_test(options_choose_the_profile_and_unknown_ones_are_refused),
        cmocka_unit_test(a_decode_step_reports_its_cost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
