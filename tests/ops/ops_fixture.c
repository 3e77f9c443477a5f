/* The bad-input tests' fixture: one valid baseline per op, device buffers, snapshots. */
#include <stdio.h>
#include <stdlib.h>

#include "ops_fixture.h"

#define OPS_WORKSPACE_BYTES (1u << 20)

static const char *const buf_names[OB_COUNT] = {
    "query", "key_cache", "value_cache", "block_table", "query_start_loc", "seq_lens", "out", "lse",
    "alibi_slopes", "sinks", "key_scale", "value_scale", "key", "value", "slot_mapping",
    "states[0]", "states[1]", "lses[0]", "lses[1]", "prefix_block_table", "prefix_seq_lens", "workspace"};

/* Deterministic inputs in [-1, 1): never zeros, never NaN. */
static float next_input(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f + 1.0f / 65536.0f;
}

static void fill_floats(ops_fixture_t *f, int b, uint32_t seed)
{
    size_t n = f->bytes[b] / sizeof(float);
    float *host = malloc(n * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < n; i++) host[i] = next_input(&seed);
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, f->dev[b], host, n * sizeof *host, NULL));
    free(host);
}

static void fill_const(ops_fixture_t *f, int b, float v)
{
    size_t n = f->bytes[b] / sizeof(float);
    float *host = malloc(n * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < n; i++) host[i] = v;
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, f->dev[b], host, n * sizeof *host, NULL));
    free(host);
}

/* Outputs, caches and the workspace: a byte pattern that no op would write by accident. */
static void fill_poison(ops_fixture_t *f, int b)
{
    unsigned char *host = malloc(f->bytes[b]);
    assert_non_null(host);
    for (size_t i = 0; i < f->bytes[b]; i++) host[i] = (unsigned char)(0xA5u ^ (i * 29u + (unsigned)b * 7u));
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, f->dev[b], host, f->bytes[b], NULL));
    free(host);
}

static void upload(ops_fixture_t *f, int b, const void *host, size_t bytes)
{
    assert_true(bytes <= f->bytes[b]);
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, f->dev[b], host, bytes, NULL));
}

static void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
{
    OPS_OK(attnrt_tensor_init(t, data, dtype, ndim, shape));
}

void ops_retensor(attnrt_tensor_t *t, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
{
    tensor(t, t->data, dtype, ndim, shape);
}

void ops_make_fp8_caches(ops_fixture_t *f)
{
    const int64_t cache[4] = {OPS_NUM_BLOCKS, OPS_BLOCK, OPS_HKV, OPS_D};
    ops_retensor(&f->key_cache, ATTNRT_FP8_E4M3, 4, cache);
    ops_retensor(&f->value_cache, ATTNRT_FP8_E4M3, 4, cache);
}

void ops_set_scale(attnrt_tensor_t *t, int32_t ndim, const int64_t *shape)
{
    tensor(t, t->data, ATTNRT_F32, ndim, shape);
}

static void build_host_batch(ops_fixture_t *f)
{
    /* request 0: prefill 5 of 5; request 1: decode at 9; request 2: chunked prefill 3 of 7 */
    const int32_t qsl[OPS_B + 1] = {0, 5, 6, 9};
    const int32_t seq_lens[OPS_B] = {5, 9, 7};
    /* unused columns hold block 0, as engines pad them */
    const int32_t table[OPS_B * OPS_MAX_BLOCKS] = {0, 1, 0, 0, /**/ 2, 3, 4, 0, /**/ 5, 6, 0, 0};
    memcpy(f->h_qsl, qsl, sizeof qsl);
    memcpy(f->h_seq_lens, seq_lens, sizeof seq_lens);
    memcpy(f->h_block_table, table, sizeof table);
    for (int b = 0; b < OPS_B; b++) f->h_prefix_seq_lens[b] = OPS_PREFIX_LEN;
    f->h_prefix_block_table[0] = 7;
    f->h_prefix_block_table[1] = 8;
    /* kv_write slots: where the batch's new tokens live */
    for (int b = 0; b < OPS_B; b++) {
        int32_t len = qsl[b + 1] - qsl[b];
        for (int32_t i = 0; i < len; i++) {
            int32_t p = seq_lens[b] - len + i;
            f->h_slots[qsl[b] + i] = (int64_t)table[b * OPS_MAX_BLOCKS + p / OPS_BLOCK] * OPS_BLOCK + p % OPS_BLOCK;
        }
    }
    f->batch = (attnrt_batch_host_t){sizeof f->batch, OPS_B, f->h_qsl, f->h_seq_lens, f->h_block_table,
                                     OPS_MAX_BLOCKS};
    f->prefix_batch = (attnrt_batch_host_t){sizeof f->prefix_batch, OPS_B, f->h_qsl, f->h_prefix_seq_lens,
                                            f->h_prefix_block_table, 0};
}

static void alloc_buffers(ops_fixture_t *f)
{
    const size_t fl = sizeof(float), i32 = sizeof(int32_t);
    const size_t act = (size_t)OPS_T * OPS_HQ * OPS_D * fl, kv = (size_t)OPS_T * OPS_HKV * OPS_D * fl;
    const size_t cache = (size_t)OPS_NUM_BLOCKS * OPS_BLOCK * OPS_HKV * OPS_D * fl;
    const size_t sizes[OB_COUNT] = {
        [OB_QUERY] = act, [OB_KEY_CACHE] = cache, [OB_VALUE_CACHE] = cache,
        [OB_BLOCK_TABLE] = OPS_B * OPS_MAX_BLOCKS * i32, [OB_QSL] = (OPS_B + 1) * i32, [OB_SEQ_LENS] = OPS_B * i32,
        [OB_OUT] = act, [OB_LSE] = OPS_T * OPS_HQ * fl, [OB_ALIBI] = OPS_HQ * fl, [OB_SINKS] = OPS_HQ * fl,
        [OB_KEY_SCALE] = OPS_SCALE_ELEMS * fl, [OB_VALUE_SCALE] = OPS_SCALE_ELEMS * fl,
        [OB_KEY] = kv, [OB_VALUE] = kv, [OB_SLOT_MAPPING] = OPS_T * sizeof(int64_t),
        [OB_STATE0] = act, [OB_STATE1] = act, [OB_STATE_LSE0] = OPS_T * OPS_HQ * fl,
        [OB_STATE_LSE1] = OPS_T * OPS_HQ * fl, [OB_PREFIX_BLOCK_TABLE] = OPS_PREFIX_BLOCKS * i32,
        [OB_PREFIX_SEQ_LENS] = OPS_B * i32, [OB_WORKSPACE] = OPS_WORKSPACE_BYTES};
    for (int b = 0; b < OB_COUNT; b++) {
        f->bytes[b] = sizes[b];
        OPS_OK(attnrt_mem_alloc(f->ctx, sizes[b], &f->dev[b]));
        f->snap[b] = malloc(sizes[b]);
        assert_non_null(f->snap[b]);
    }
}

static void fill_buffers(ops_fixture_t *f)
{
    fill_floats(f, OB_QUERY, 1);
    fill_floats(f, OB_KEY, 2);
    fill_floats(f, OB_VALUE, 3);
    fill_floats(f, OB_STATE0, 4);
    fill_floats(f, OB_STATE1, 5);
    fill_floats(f, OB_STATE_LSE0, 6);
    fill_floats(f, OB_STATE_LSE1, 7);
    fill_floats(f, OB_ALIBI, 8);
    fill_floats(f, OB_SINKS, 9);
    fill_const(f, OB_KEY_SCALE, 1.0f);
    fill_const(f, OB_VALUE_SCALE, 1.0f);
    const int poisoned[] = {OB_KEY_CACHE, OB_VALUE_CACHE, OB_OUT, OB_LSE, OB_WORKSPACE};
    for (size_t i = 0; i < sizeof poisoned / sizeof poisoned[0]; i++) fill_poison(f, poisoned[i]);
    upload(f, OB_BLOCK_TABLE, f->h_block_table, sizeof f->h_block_table);
    upload(f, OB_QSL, f->h_qsl, sizeof f->h_qsl);
    upload(f, OB_SEQ_LENS, f->h_seq_lens, sizeof f->h_seq_lens);
    upload(f, OB_SLOT_MAPPING, f->h_slots, sizeof f->h_slots);
    upload(f, OB_PREFIX_BLOCK_TABLE, f->h_prefix_block_table, sizeof f->h_prefix_block_table);
    upload(f, OB_PREFIX_SEQ_LENS, f->h_prefix_seq_lens, sizeof f->h_prefix_seq_lens);
}

static void build_tensors(ops_fixture_t *f)
{
    const int64_t act[3] = {OPS_T, OPS_HQ, OPS_D}, kv[3] = {OPS_T, OPS_HKV, OPS_D};
    const int64_t cache[4] = {OPS_NUM_BLOCKS, OPS_BLOCK, OPS_HKV, OPS_D};
    const int64_t table[2] = {OPS_B, OPS_MAX_BLOCKS}, qsl[1] = {OPS_B + 1}, per_seq[1] = {OPS_B};
    const int64_t lse[2] = {OPS_T, OPS_HQ}, heads[1] = {OPS_HQ}, one[1] = {1}, tokens[1] = {OPS_T};
    const int64_t prefix_table[2] = {OPS_B, OPS_PREFIX_BLOCKS};
    tensor(&f->query, f->dev[OB_QUERY], ATTNRT_F32, 3, act);
    tensor(&f->key_cache, f->dev[OB_KEY_CACHE], ATTNRT_F32, 4, cache);
    tensor(&f->value_cache, f->dev[OB_VALUE_CACHE], ATTNRT_F32, 4, cache);
    tensor(&f->block_table, f->dev[OB_BLOCK_TABLE], ATTNRT_I32, 2, table);
    tensor(&f->qsl, f->dev[OB_QSL], ATTNRT_I32, 1, qsl);
    tensor(&f->seq_lens, f->dev[OB_SEQ_LENS], ATTNRT_I32, 1, per_seq);
    tensor(&f->out, f->dev[OB_OUT], ATTNRT_F32, 3, act);
    tensor(&f->lse, f->dev[OB_LSE], ATTNRT_F32, 2, lse);
    tensor(&f->alibi, f->dev[OB_ALIBI], ATTNRT_F32, 1, heads);
    tensor(&f->sinks, f->dev[OB_SINKS], ATTNRT_F32, 1, heads);
    tensor(&f->key_scale, f->dev[OB_KEY_SCALE], ATTNRT_F32, 1, one);
    tensor(&f->value_scale, f->dev[OB_VALUE_SCALE], ATTNRT_F32, 1, one);
    tensor(&f->key, f->dev[OB_KEY], ATTNRT_F32, 3, kv);
    tensor(&f->value, f->dev[OB_VALUE], ATTNRT_F32, 3, kv);
    tensor(&f->slot_mapping, f->dev[OB_SLOT_MAPPING], ATTNRT_I64, 1, tokens);
    tensor(&f->states[0], f->dev[OB_STATE0], ATTNRT_F32, 3, act);
    tensor(&f->states[1], f->dev[OB_STATE1], ATTNRT_F32, 3, act);
    tensor(&f->state_lses[0], f->dev[OB_STATE_LSE0], ATTNRT_F32, 2, lse);
    tensor(&f->state_lses[1], f->dev[OB_STATE_LSE1], ATTNRT_F32, 2, lse);
    tensor(&f->prefix_block_table, f->dev[OB_PREFIX_BLOCK_TABLE], ATTNRT_I32, 2, prefix_table);
    f->prefix_block_table.strides[0] = 0; /* one shared prefix row */
    tensor(&f->prefix_seq_lens, f->dev[OB_PREFIX_SEQ_LENS], ATTNRT_I32, 1, per_seq);
}

static void build_args(ops_fixture_t *f)
{
    f->att = (attnrt_attention_args_t){
        .struct_size = sizeof f->att,
        .query = &f->query,
        .key_cache = &f->key_cache,
        .value_cache = &f->value_cache,
        .block_table = &f->block_table,
        .query_start_loc = &f->qsl,
        .seq_lens = &f->seq_lens,
        .out = &f->out,
        .scale = 0.0f,
        .softcap = 0.0f,
        .causal = 1,
    };
    f->kvw = (attnrt_kv_write_args_t){
        .struct_size = sizeof f->kvw,
        .key = &f->key,
        .value = &f->value,
        .slot_mapping = &f->slot_mapping,
        .key_cache = &f->key_cache,
        .value_cache = &f->value_cache,
        .slot_mapping_host = f->h_slots,
    };
    for (int i = 0; i < 2; i++) {
        f->merge_states[i] = &f->states[i];
        f->merge_lses[i] = &f->state_lses[i];
    }
    f->merge = (attnrt_merge_args_t){
        .struct_size = sizeof f->merge,
        .num_states = 2,
        .states = f->merge_states,
        .lses = f->merge_lses,
        .out = &f->out,
        .out_lse = &f->lse,
    };
    f->cas = (attnrt_cascade_args_t){sizeof f->cas, &f->att, &f->prefix_block_table, &f->prefix_seq_lens};
    f->cas_host = (attnrt_cascade_host_t){sizeof f->cas_host, &f->prefix_batch, &f->batch};
}

int ops_setup(void **state)
{
    ops_fixture_t *f = calloc(1, sizeof *f);
    if (!f) return -1;
    *state = f;
    attnrt_status_t st = attnrt_open("cpu:0", &f->ctx);
    if (st != ATTNRT_OK) {
        print_error("attnrt_open(cpu:0) returned %s: %s\n", attnrt_status_name(st), attnrt_last_error());
        free(f);
        *state = NULL;
        return -1;
    }
    alloc_buffers(f);
    build_host_batch(f);
    fill_buffers(f);
    build_tensors(f);
    build_args(f);
    return 0;
}

int ops_teardown(void **state)
{
    ops_fixture_t *f = *state;
    int rc = 0;
    if (!f) return 0;
    for (size_t i = 0; i < sizeof f->plans / sizeof f->plans[0]; i++)
        if (f->plans[i] && attnrt_plan_destroy(f->plans[i]) != ATTNRT_OK) rc = -1;
    if (f->other_stream) attnrt_stream_destroy(f->other_stream);
    if (f->other_ctx && attnrt_close(f->other_ctx) != ATTNRT_OK) {
        print_error("attnrt_close(second context): %s\n", attnrt_last_error());
        rc = -1;
    }
    for (int b = 0; b < OB_COUNT; b++) {
        if (f->dev[b]) attnrt_mem_free(f->ctx, f->dev[b]);
        free(f->snap[b]);
    }
    /* Every refused call must have left nothing behind: a leaked plan makes this ATTNRT_ERR_BUSY. */
    attnrt_status_t st = attnrt_close(f->ctx);
    if (st != ATTNRT_OK) {
        print_error("attnrt_close returned %s, expected ATTNRT_OK (something leaked): %s\n", attnrt_status_name(st),
                    attnrt_last_error());
        rc = -1;
    }
    free(f);
    return rc;
}

void ops_snapshot(ops_fixture_t *f)
{
    for (int b = 0; b < OB_COUNT; b++)
        OPS_OK(attnrt_mem_copy_to_host(f->ctx, f->snap[b], f->dev[b], f->bytes[b], NULL));
    for (int w = 0; w < f->num_watch; w++)
        OPS_OK(attnrt_mem_copy_to_host(f->ctx, f->watch[w].snap, f->watch[w].dev, f->watch[w].bytes, NULL));
}

/* The extension's regions (ops_watch): same comparison as the fixture's buffers. */
static void assert_watched_untouched(ops_fixture_t *f, const char *what)
{
    for (int w = 0; w < f->num_watch; w++) {
        const struct ops_watch *x = &f->watch[w];
        unsigned char *now = malloc(x->bytes);
        assert_non_null(now);
        attnrt_status_t st = attnrt_mem_copy_to_host(f->ctx, now, x->dev, x->bytes, NULL);
        if (st != ATTNRT_OK) {
            free(now);
            fail_msg("reading back %s failed: %s", x->name, attnrt_last_error());
        }
        for (size_t i = 0; i < x->bytes; i++)
            if (now[i] != x->snap[i]) {
                unsigned was = x->snap[i], is = now[i];
                free(now);
                fail_msg("%s was refused but wrote %s: byte %zu was 0x%02x, is 0x%02x", what, x->name, i, was, is);
            }
        free(now);
    }
}

void ops_assert_untouched(ops_fixture_t *f, const char *what)
{
    unsigned char *now = malloc(OPS_WORKSPACE_BYTES);
    assert_non_null(now);
    for (int b = 0; b < OB_COUNT; b++) {
        attnrt_status_t st = attnrt_mem_copy_to_host(f->ctx, now, f->dev[b], f->bytes[b], NULL);
        if (st != ATTNRT_OK) {
            free(now);
            fail_msg("reading back %s failed: %s", buf_names[b], attnrt_last_error());
        }
        for (size_t i = 0; i < f->bytes[b]; i++)
            if (now[i] != f->snap[b][i]) {
                unsigned was = f->snap[b][i], is = now[i];
                free(now);
                fail_msg("%s was refused but wrote %s: byte %zu was 0x%02x, is 0x%02x", what, buf_names[b], i, was,
                         is);
            }
    }
    free(now);
    assert_watched_untouched(f, what);
}

/* strstr for each part of "a&&b&&c". */
static const char *missing_part(const char *msg, const char *needle, char *part, size_t cap)
{
    while (*needle) {
        const char *end = strstr(needle, "&&");
        size_t n = end ? (size_t)(end - needle) : strlen(needle);
        snprintf(part, cap, "%.*s", (int)n, needle);
        if (!strstr(msg, part)) return part;
        needle += n;
        if (end) needle += 2;
    }
    return NULL;
}

void ops_check_rejected(ops_fixture_t *f, const char *call, const char *fn, attnrt_status_t got,
                        attnrt_status_t expected, const char *needle, const char *file, int line)
{
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    if (got != expected)
        fail_msg("%s:%d: %s returned %s, expected %s; last error: \"%s\"", file, line, call, attnrt_status_name(got),
                 attnrt_status_name(expected), msg);
    if (!msg[0]) fail_msg("%s:%d: %s failed with an empty attnrt_last_error()", file, line, call);
    if (strchr(msg, '\n')) fail_msg("%s:%d: %s: message spans lines: \"%s\"", file, line, call, msg);
    if (strncmp(msg, fn, strlen(fn)) != 0)
        fail_msg("%s:%d: %s: message does not start with \"%s\": \"%s\"", file, line, call, fn, msg);
    char part[512];
    if (missing_part(msg, needle, part, sizeof part))
        fail_msg("%s:%d: %s: message \"%s\" does not contain \"%s\"", file, line, call, msg, part);
    ops_assert_untouched(f, call);
}

static attnrt_plan_t *remember(ops_fixture_t *f, attnrt_plan_t *plan)
{
    for (size_t i = 0; i < sizeof f->plans / sizeof f->plans[0]; i++)
        if (!f->plans[i]) return f->plans[i] = plan;
    fail_msg("a test made more than %zu plans", sizeof f->plans / sizeof f->plans[0]);
    return NULL;
}

attnrt_plan_t *ops_attention_plan_ok(ops_fixture_t *f)
{
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_attention_plan(f->ctx, &f->att, &f->batch, &plan));
    assert_non_null(plan);
    return remember(f, plan);
}

attnrt_plan_t *ops_cascade_plan_ok(ops_fixture_t *f)
{
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_cascade_plan(f->ctx, &f->cas, &f->cas_host, &plan));
    assert_non_null(plan);
    return remember(f, plan);
}

attnrt_plan_t *ops_keep_plan(ops_fixture_t *f, attnrt_plan_t *plan) { return remember(f, plan); }

attnrt_stream_t *ops_foreign_stream(ops_fixture_t *f)
{
    OPS_OK(attnrt_open("cpu:0", &f->other_ctx));
    OPS_OK(attnrt_stream_create(f->other_ctx, &f->other_stream));
    return f->other_stream;
}
