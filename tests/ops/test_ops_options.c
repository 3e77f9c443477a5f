/* Bad inputs of the ABI 1.2 device calls: attnrt_open_with_options, attnrt_select_attention,
 * attnrt_last_op_stats, and the 1.2 dtypes in attnrt_tensor_init. On the cpu plugin: it takes no
 * device options, has no selection rules (the runtime answers kernel "paged" with the configured block
 * size) and keeps no op counters (ATTNRT_ERR_UNSUPPORTED). */
#include <stdio.h>
#include <stdlib.h>

#include "ops_fixture.h"

static const char OO[] = "attnrt_open_with_options";
static const char SEL[] = "attnrt_select_attention";
static const char LS[] = "attnrt_last_op_stats";

#define CTX_SENTINEL ((attnrt_context_t *)(uintptr_t)0x5e5e5e5e)

static attnrt_device_attribute_t option(const char *key, const char *value)
{
    attnrt_device_attribute_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    snprintf(o.key, sizeof o.key, "%s", key);
    snprintf(o.value, sizeof o.value, "%s", value);
    return o;
}

/* attnrt_open_with_options must fail with either status, leave *ctx alone and open nothing. */
static void open_rejects(ops_fixture_t *f, const char *device, const attnrt_device_attribute_t *options, uint32_t n,
                         attnrt_status_t expected_a, attnrt_status_t expected_b, const char *needle, int line)
{
    attnrt_context_t *ctx = CTX_SENTINEL;
    ops_snapshot(f);
    attnrt_status_t st = attnrt_open_with_options(device, options, n, &ctx);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", attnrt_last_error());
    if (st == ATTNRT_OK && ctx && ctx != CTX_SENTINEL) attnrt_close(ctx);
    attnrt_status_t expected = st == expected_b ? expected_b : expected_a;
    if (st != expected)
        fail_msg("line %d: attnrt_open_with_options returned %s, expected %s; last error: \"%s\"", line,
                 attnrt_status_name(st), attnrt_status_name(expected), msg);
    if (strncmp(msg, OO, strlen(OO)) != 0) fail_msg("line %d: message does not start with %s: \"%s\"", line, OO, msg);
    if (!strstr(msg, needle)) fail_msg("line %d: message \"%s\" does not contain \"%s\"", line, msg, needle);
    if (strchr(msg, '\n')) fail_msg("line %d: message spans lines: \"%s\"", line, msg);
    if (ctx != CTX_SENTINEL) fail_msg("line %d: refused attnrt_open_with_options wrote *ctx", line);
    ops_assert_untouched(f, "attnrt_open_with_options");
}

/* ---- attnrt_open_with_options ---- */

static void open_with_no_options_opens_like_attnrt_open(void **state)
{
    (void)state;
    attnrt_context_t *ctx = NULL;
    OPS_OK(attnrt_open_with_options("cpu:0", NULL, 0, &ctx));
    assert_non_null(ctx);
    assert_string_equal(attnrt_context_device_name(ctx), "cpu:0");
    OPS_OK(attnrt_close(ctx));
}

static void open_with_options_refuses_a_key_the_cpu_plugin_does_not_take(void **state)
{
    const attnrt_device_attribute_t opts[1] = {option("profile", "rbln-rebel100")};
    open_rejects(*state, "cpu:0", opts, 1, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_UNSUPPORTED, "profile", __LINE__);
}

static void open_with_options_names_an_unknown_key(void **state)
{
    const attnrt_device_attribute_t opts[1] = {option("no_such_key_42", "1")};
    open_rejects(*state, "cpu:0", opts, 1, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_UNSUPPORTED, "no_such_key_42",
                 __LINE__);
}

static void open_with_options_refuses_null_options_with_a_count(void **state)
{
    open_rejects(*state, "cpu:0", NULL, 2, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_INVALID_ARGUMENT,
                 "options is NULL", __LINE__);
}

static void open_with_options_refuses_option_struct_size_0(void **state)
{
    attnrt_device_attribute_t opts[1] = {option("profile", "x")};
    opts[0].struct_size = 0;
    open_rejects(*state, "cpu:0", opts, 1, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_INVALID_ARGUMENT,
                 "options[0].struct_size = 0", __LINE__);
}

static void open_with_options_refuses_second_option_struct_size_0(void **state)
{
    attnrt_device_attribute_t opts[2] = {option("a", "1"), option("b", "2")};
    opts[1].struct_size = 0;
    open_rejects(*state, "cpu:0", opts, 2, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_INVALID_ARGUMENT,
                 "options[1].struct_size = 0", __LINE__);
}

/* A key filling its 64 bytes without a NUL: never read past the field. */
static void open_with_options_refuses_unterminated_key(void **state)
{
    attnrt_device_attribute_t *opt = malloc(sizeof *opt); /* on the heap, so an over-read shows */
    assert_non_null(opt);
    *opt = option("", "x");
    memset(opt->key, 'k', sizeof opt->key);
    memset(opt->value, 'v', sizeof opt->value);
    open_rejects(*state, "cpu:0", opt, 1, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_UNSUPPORTED, "key", __LINE__);
    free(opt);
}

static void open_with_options_refuses_empty_key(void **state)
{
    const attnrt_device_attribute_t opts[1] = {option("", "x")};
    open_rejects(*state, "cpu:0", opts, 1, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_INVALID_ARGUMENT,
                 "options[0].key is empty", __LINE__);
}

static void open_with_options_refuses_unterminated_value(void **state)
{
    attnrt_device_attribute_t *opt = malloc(sizeof *opt);
    assert_non_null(opt);
    *opt = option("profile", "");
    memset(opt->value, 'v', sizeof opt->value);
    open_rejects(*state, "cpu:0", opt, 1, ATTNRT_ERR_INVALID_ARGUMENT, ATTNRT_ERR_INVALID_ARGUMENT,
                 "options[0].value", __LINE__);
    free(opt);
}

static void open_with_options_refuses_null_ctx_out(void **state)
{
    ops_fixture_t *f = *state;
    const attnrt_device_attribute_t opts[1] = {option("profile", "x")};
    OPS_REJECTS(f, OO, attnrt_open_with_options("cpu:0", opts, 1, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

/* As attnrt_open: NOT_FOUND naming the device (attnrt_device_find's message, which lists the devices). */
static void open_with_options_refuses_unknown_device(void **state)
{
    (void)state;
    attnrt_context_t *ctx = CTX_SENTINEL;
    attnrt_status_t st = attnrt_open_with_options("nosuch:3", NULL, 0, &ctx);
    if (st == ATTNRT_OK && ctx && ctx != CTX_SENTINEL) attnrt_close(ctx);
    assert_int_equal(st, ATTNRT_ERR_NOT_FOUND);
    assert_non_null(strstr(attnrt_last_error(), "nosuch:3"));
    assert_true(ctx == CTX_SENTINEL);
}

/* ---- attnrt_select_attention ---- */

static attnrt_attention_config_t config_16(void)
{
    attnrt_attention_config_t c;
    memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.front_end = ATTNRT_FRONT_END_DEFAULT;
    c.layer_kind = ATTNRT_LAYER_FULL;
    c.max_model_len = 4096;
    c.block_size = 16;
    c.head_dim = 128;
    return c;
}

static attnrt_attention_selection_t poisoned_selection(void)
{
    attnrt_attention_selection_t s;
    memset(&s, 0x3c, sizeof s);
    s.struct_size = sizeof s;
    return s;
}

static void select_attention_on_cpu_answers_paged_with_the_block_size(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t c = config_16();
    attnrt_attention_selection_t s = poisoned_selection();
    OPS_OK(attnrt_select_attention(f->ctx, &c, &s));
    assert_string_equal(s.kernel, "paged");
    assert_int_equal(s.block_size, 16);
    assert_true(memchr(s.notes, '\0', sizeof s.notes) != NULL);
}

/* A caller compiled with a shorter selection (up to `kernel`) gets only what its struct_size covers. */
static void select_attention_writes_only_within_struct_size(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t c = config_16();
    attnrt_attention_selection_t s = poisoned_selection(), before;
    const size_t short_size = ATTNRT_STRUCT_SIZE(attnrt_attention_selection_t, kernel);
    s.struct_size = short_size;
    before = s;
    OPS_OK(attnrt_select_attention(f->ctx, &c, &s));
    assert_string_equal(s.kernel, "paged");
    assert_int_equal(s.struct_size, short_size);
    assert_memory_equal((char *)&s + short_size, (char *)&before + short_size, sizeof s - short_size);
}

static void select_attention_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t c = config_16();
    attnrt_attention_selection_t s = poisoned_selection(), before = s;
    OPS_REJECTS(f, SEL, attnrt_select_attention(NULL, &c, &s), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
    assert_memory_equal(&s, &before, sizeof s);
}

static void select_attention_refuses_null_config(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_selection_t s = poisoned_selection(), before = s;
    OPS_REJECTS(f, SEL, attnrt_select_attention(f->ctx, NULL, &s), ATTNRT_ERR_INVALID_ARGUMENT, "config is NULL");
    assert_memory_equal(&s, &before, sizeof s);
}

static void select_attention_refuses_null_selection(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t c = config_16();
    OPS_REJECTS(f, SEL, attnrt_select_attention(f->ctx, &c, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                "selection is NULL");
}

static void select_attention_refuses_config_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t c = config_16();
    attnrt_attention_selection_t s = poisoned_selection(), before = s;
    c.struct_size = 0;
    OPS_REJECTS(f, SEL, attnrt_select_attention(f->ctx, &c, &s), ATTNRT_ERR_INVALID_ARGUMENT,
                "config->struct_size = 0");
    assert_memory_equal(&s, &before, sizeof s);
}

static void select_attention_refuses_selection_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_attention_config_t c = config_16();
    attnrt_attention_selection_t s = poisoned_selection();
    s.struct_size = 0;
    attnrt_attention_selection_t before = s;
    OPS_REJECTS(f, SEL, attnrt_select_attention(f->ctx, &c, &s), ATTNRT_ERR_INVALID_ARGUMENT,
                "selection->struct_size = 0");
    assert_memory_equal(&s, &before, sizeof s);
}

static void select_rejects(ops_fixture_t *f, attnrt_attention_config_t *c, const char *needle, int line)
{
    attnrt_attention_selection_t s = poisoned_selection(), before = s;
    ops_snapshot(f);
    attnrt_status_t st = attnrt_select_attention(f->ctx, c, &s);
    char where[64];
    snprintf(where, sizeof where, "attnrt_select_attention (line %d)", line);
    ops_check_rejected(f, where, SEL, st, ATTNRT_ERR_INVALID_ARGUMENT, needle, __FILE__, line);
    assert_memory_equal(&s, &before, sizeof s);
}

static void select_attention_refuses_negative_block_size(void **state)
{
    attnrt_attention_config_t c = config_16();
    c.block_size = -16;
    select_rejects(*state, &c, "block_size = -16", __LINE__);
}

static void select_attention_refuses_unknown_layer_kind(void **state)
{
    attnrt_attention_config_t c = config_16();
    c.layer_kind = 9;
    select_rejects(*state, &c, "layer_kind = 9", __LINE__);
}

static void select_attention_refuses_unknown_front_end(void **state)
{
    attnrt_attention_config_t c = config_16();
    c.front_end = 7;
    select_rejects(*state, &c, "front_end = 7", __LINE__);
}

static void select_attention_refuses_unterminated_attn_impl(void **state)
{
    attnrt_attention_config_t c = config_16();
    memset(c.attn_impl, 'f', sizeof c.attn_impl);
    select_rejects(*state, &c, "attn_impl", __LINE__);
}

static void select_attention_refuses_integer_kv_dtype(void **state)
{
    attnrt_attention_config_t c = config_16();
    c.kv_dtype = ATTNRT_I32;
    select_rejects(*state, &c, "kv_dtype", __LINE__);
}

/* ---- attnrt_last_op_stats ---- */

static void last_op_stats_on_cpu_is_unsupported(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_op_stats_t s, before;
    memset(&s, 0x3c, sizeof s);
    s.struct_size = sizeof s;
    before = s;
    OPS_REJECTS(f, LS, attnrt_last_op_stats(f->ctx, &s), ATTNRT_ERR_UNSUPPORTED, "cpu");
    assert_memory_equal(&s, &before, sizeof s);
}

static void last_op_stats_refuses_null_ctx(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_op_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    OPS_REJECTS(f, LS, attnrt_last_op_stats(NULL, &s), ATTNRT_ERR_INVALID_ARGUMENT, "ctx is NULL");
}

static void last_op_stats_refuses_null_stats(void **state)
{
    ops_fixture_t *f = *state;
    OPS_REJECTS(f, LS, attnrt_last_op_stats(f->ctx, NULL), ATTNRT_ERR_INVALID_ARGUMENT, "stats is NULL");
}

static void last_op_stats_refuses_struct_size_0(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_op_stats_t s, before;
    memset(&s, 0x3c, sizeof s);
    s.struct_size = 0;
    before = s;
    OPS_REJECTS(f, LS, attnrt_last_op_stats(f->ctx, &s), ATTNRT_ERR_INVALID_ARGUMENT, "stats->struct_size = 0");
    assert_memory_equal(&s, &before, sizeof s);
}

/* ---- the 1.2 dtypes ---- */

/* has_initial_state is "[B] bool / uint8"; bool is the 1.2 dtype code, so attnrt_tensor_init describes it.
 * (u8 is accepted by the op checks in a hand-made descriptor: see the lightning and gated-delta groups.) */
static void tensor_init_accepts_bool(void **state)
{
    (void)state;
    const int64_t shape[1] = {3};
    attnrt_tensor_t t;
    OPS_OK(attnrt_tensor_init(&t, NULL, ATTNRT_BOOL, 1, shape));
    assert_int_equal(t.dtype.code, ATTNRT_DTYPE_CODE_BOOL);
    assert_int_equal(t.dtype.bits, 8);
    assert_int_equal(attnrt_dtype_size(ATTNRT_BOOL), 1);
}

int ops_run_options_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_EXT_TEST(open_with_no_options_opens_like_attnrt_open),
        OPS_EXT_TEST(open_with_options_refuses_a_key_the_cpu_plugin_does_not_take),
        OPS_EXT_TEST(open_with_options_names_an_unknown_key),
        OPS_EXT_TEST(open_with_options_refuses_null_options_with_a_count),
        OPS_EXT_TEST(open_with_options_refuses_option_struct_size_0),
        OPS_EXT_TEST(open_with_options_refuses_second_option_struct_size_0),
        OPS_EXT_TEST(open_with_options_refuses_unterminated_key),
        OPS_EXT_TEST(open_with_options_refuses_empty_key),
        OPS_EXT_TEST(open_with_options_refuses_unterminated_value),
        OPS_EXT_TEST(open_with_options_refuses_null_ctx_out),
        OPS_EXT_TEST(open_with_options_refuses_unknown_device),
        OPS_EXT_TEST(select_attention_on_cpu_answers_paged_with_the_block_size),
        OPS_EXT_TEST(select_attention_writes_only_within_struct_size),
        OPS_EXT_TEST(select_attention_refuses_null_ctx),
        OPS_EXT_TEST(select_attention_refuses_null_config),
        OPS_EXT_TEST(select_attention_refuses_null_selection),
        OPS_EXT_TEST(select_attention_refuses_config_struct_size_0),
        OPS_EXT_TEST(select_attention_refuses_selection_struct_size_0),
        OPS_EXT_TEST(select_attention_refuses_negative_block_size),
        OPS_EXT_TEST(select_attention_refuses_unknown_layer_kind),
        OPS_EXT_TEST(select_attention_refuses_unknown_front_end),
        OPS_EXT_TEST(select_attention_refuses_unterminated_attn_impl),
        OPS_EXT_TEST(select_attention_refuses_integer_kv_dtype),
        OPS_EXT_TEST(last_op_stats_on_cpu_is_unsupported),
        OPS_EXT_TEST(last_op_stats_refuses_null_ctx),
        OPS_EXT_TEST(last_op_stats_refuses_null_stats),
        OPS_EXT_TEST(last_op_stats_refuses_struct_size_0),
        OPS_EXT_TEST(tensor_init_accepts_bool),
    };
    return cmocka_run_group_tests_name("ops: device options, kernel selection, op stats", tests, NULL, NULL);
}
