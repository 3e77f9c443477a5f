/* Input structs LARGER than this library knows (a newer caller's): accepted when every byte past our
 * sizeof is zero (the fields we do not know are at their default), refused naming the struct and the
 * first non-zero byte when one is set, so that a newer caller's option is never silently dropped.
 * Also the sizes no version has: smaller than struct_size itself, or absurdly large (an unset field).
 * Every input struct of the API, in every place it is passed, and the tensors inside the args. */
#include <stdio.h>
#include <stdlib.h>

#include "struct_sizes_util.h"

enum { EXTRA = 24, POKE = 5 }; /* bytes a "newer" struct has past ours; the byte set among them */

typedef struct newer_case {
    const char *type, *fn, *arg;
    size_t      size;
    int         mla; /* needs the MLA baseline (else the linear one) */
    const void *(*base)(ops_fixture_t *f);
    attnrt_status_t (*call)(ops_fixture_t *f, const void *s); /* the op with `s` in place of base */
} newer_case_t;

/* Plans are destroyed at once: a call under test never leaves one behind. */
static attnrt_status_t drop(attnrt_status_t st, attnrt_plan_t *plan)
{
    if (st == ATTNRT_OK) attnrt_plan_destroy(plan);
    return st;
}

static const void *base_att(ops_fixture_t *f) { return &f->att; }
static const void *base_batch(ops_fixture_t *f) { return &f->batch; }
static const void *base_cas(ops_fixture_t *f) { return &f->cas; }
static const void *base_cas_host(ops_fixture_t *f) { return &f->cas_host; }
static const void *base_prefix(ops_fixture_t *f) { return &f->prefix_batch; }
static const void *base_kvw(ops_fixture_t *f) { return &f->kvw; }
static const void *base_merge(ops_fixture_t *f) { return &f->merge; }
static const void *base_mla(ops_fixture_t *f) { return &f->x->mla; }
static const void *base_lin(ops_fixture_t *f) { return &f->x->lin; }
static const void *base_gdn(ops_fixture_t *f) { return &f->x->gdn; }
static const void *base_states(ops_fixture_t *f) { return &f->x->gdn_states; }

static attnrt_status_t call_att(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_attention_plan(f->ctx, s, &f->batch, &p);
    return drop(st, p);
}

static attnrt_status_t call_batch(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_attention_plan(f->ctx, &f->att, s, &p);
    return drop(st, p);
}

static attnrt_status_t call_cas(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_cascade_plan(f->ctx, s, &f->cas_host, &p);
    return drop(st, p);
}

static attnrt_status_t call_cas_host(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_cascade_plan(f->ctx, &f->cas, s, &p);
    return drop(st, p);
}

static attnrt_status_t call_suffix(ops_fixture_t *f, const void *s)
{
    attnrt_cascade_args_t cas = f->cas;
    cas.suffix = s;
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_cascade_plan(f->ctx, &cas, &f->cas_host, &p);
    return drop(st, p);
}

static attnrt_status_t call_prefix(ops_fixture_t *f, const void *s)
{
    attnrt_cascade_host_t host = f->cas_host;
    host.prefix = s;
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_cascade_plan(f->ctx, &f->cas, &host, &p);
    return drop(st, p);
}

static attnrt_status_t call_kvw(ops_fixture_t *f, const void *s) { return attnrt_kv_write(f->ctx, s, NULL); }
static attnrt_status_t call_merge(ops_fixture_t *f, const void *s) { return attnrt_merge_states(f->ctx, s, NULL); }

static attnrt_status_t call_mla(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_mla_plan(f->ctx, s, &f->batch, &p);
    return drop(st, p);
}

static attnrt_status_t call_lin(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_lightning_plan(f->ctx, s, &f->x->lin_batch, &f->x->lin_states, f->x->lin_pool, &p);
    return drop(st, p);
}

static attnrt_status_t call_lin_batch(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_lightning_plan(f->ctx, &f->x->lin, s, &f->x->lin_states, f->x->lin_pool, &p);
    return drop(st, p);
}

static const void *base_lin_batch(ops_fixture_t *f) { return &f->x->lin_batch; }

static attnrt_status_t call_gdn(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_gated_delta_plan(f->ctx, s, &f->x->lin_batch, &f->x->gdn_states, f->x->gdn_pool, &p);
    return drop(st, p);
}

static attnrt_status_t call_states(ops_fixture_t *f, const void *s)
{
    attnrt_plan_t *p = NULL;
    attnrt_status_t st = attnrt_gated_delta_plan(f->ctx, &f->x->gdn, &f->x->lin_batch, s, f->x->gdn_pool, &p);
    return drop(st, p);
}

static attnrt_op_query_t g_query;
static attnrt_attention_config_t g_config;

static const void *base_query(ops_fixture_t *f)
{
    (void)f;
    g_query = (attnrt_op_query_t)ATTNRT_OP_QUERY_INIT;
    g_query.op = ATTNRT_OP_PAGED_ATTENTION;
    g_query.q_dtype = g_query.kv_dtype = ATTNRT_F32;
    g_query.head_dim_qk = g_query.head_dim_v = 64;
    return &g_query;
}

static attnrt_status_t call_query(ops_fixture_t *f, const void *s) { return attnrt_op_supported(f->ctx, s, NULL, 0); }

static const void *base_config(ops_fixture_t *f)
{
    (void)f;
    g_config = (attnrt_attention_config_t)ATTNRT_ATTENTION_CONFIG_INIT;
    g_config.max_model_len = 2048;
    return &g_config;
}

static attnrt_status_t call_config(ops_fixture_t *f, const void *s)
{
    attnrt_attention_selection_t sel = ATTNRT_ATTENTION_SELECTION_INIT;
    return attnrt_select_attention(f->ctx, s, &sel);
}

#define CASE(type, fn, arg, mla, base, call) {#type, fn, arg, sizeof(type), mla, base, call}
static const newer_case_t cases[] = {
    CASE(attnrt_attention_args_t, "attnrt_attention_plan", "args", 0, base_att, call_att),
    CASE(attnrt_batch_host_t, "attnrt_attention_plan", "batch", 0, base_batch, call_batch),
    CASE(attnrt_cascade_args_t, "attnrt_cascade_plan", "args", 0, base_cas, call_cas),
    CASE(attnrt_cascade_host_t, "attnrt_cascade_plan", "host", 0, base_cas_host, call_cas_host),
    CASE(attnrt_attention_args_t, "attnrt_cascade_plan", "args->suffix", 0, base_att, call_suffix),
    CASE(attnrt_batch_host_t, "attnrt_cascade_plan", "host->prefix", 0, base_prefix, call_prefix),
    CASE(attnrt_kv_write_args_t, "attnrt_kv_write", "args", 0, base_kvw, call_kvw),
    CASE(attnrt_merge_args_t, "attnrt_merge_states", "args", 0, base_merge, call_merge),
    CASE(attnrt_mla_args_t, "attnrt_mla_plan", "args", 1, base_mla, call_mla),
    CASE(attnrt_lightning_args_t, "attnrt_lightning_plan", "args", 0, base_lin, call_lin),
    CASE(attnrt_batch_host_t, "attnrt_lightning_plan", "batch", 0, base_lin_batch, call_lin_batch),
    CASE(attnrt_gated_delta_args_t, "attnrt_gated_delta_plan", "args", 0, base_gdn, call_gdn),
    CASE(attnrt_state_host_t, "attnrt_gated_delta_plan", "states", 0, base_states, call_states),
    CASE(attnrt_op_query_t, "attnrt_op_supported", "query", 0, base_query, call_query),
    CASE(attnrt_attention_config_t, "attnrt_select_attention", "config", 0, base_config, call_config),
};

static void check_case(ops_fixture_t *f, const newer_case_t *c)
{
    const void *base = c->base(f);
    OPS_OK(c->call(f, base));
    char want[320];

    /* newer, with the fields we do not know at zero: accepted */
    void *grown = sz_grow(base, c->size, EXTRA, 0, 0);
    attnrt_status_t st = c->call(f, grown);
    if (st != ATTNRT_OK)
        fail_msg("%s with %s->struct_size = %zu and a zero tail: %s: %s", c->fn, c->arg, c->size + EXTRA,
                 attnrt_status_name(st), attnrt_last_error());
    free(grown);

    /* newer, with one of them set: refused, naming the struct and the byte */
    grown = sz_grow(base, c->size, EXTRA, c->size + POKE, 0x01);
    snprintf(want, sizeof want, "%s->struct_size = %zu is larger than %s of this library (%zu bytes) and its byte %zu "
             "is not zero&&a field this library (ABI %d.%d) does not know is set", c->arg, c->size + EXTRA, c->type,
             c->size, c->size + POKE, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    OPS_REJECTS(f, c->fn, c->call(f, grown), ATTNRT_ERR_INVALID_ARGUMENT, want);
    free(grown);

    /* no version is smaller than struct_size itself */
    void *tiny = sz_cut(base, sizeof(size_t));
    size_t seven = sizeof(size_t) - 1;
    memcpy(tiny, &seven, sizeof seven);
    snprintf(want, sizeof want, "%s->struct_size = %zu is too small&&sizeof(%s)", c->arg, seven, c->type);
    OPS_REJECTS(f, c->fn, c->call(f, tiny), ATTNRT_ERR_INVALID_ARGUMENT, want);
    /* nor absurdly large: an unset struct_size, refused before a byte past the struct is read */
    size_t huge = (size_t)1 << 40;
    memcpy(tiny, &huge, sizeof huge);
    snprintf(want, sizeof want, "%s->struct_size = %zu is larger than any struct of this ABI", c->arg, huge);
    OPS_REJECTS(f, c->fn, c->call(f, tiny), ATTNRT_ERR_INVALID_ARGUMENT, want);
    free(tiny);
}

static void newer_structs_with_a_zero_tail_are_accepted_else_refused(void **state)
{
    ops_fixture_t *f = *state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (!cases[i].mla) check_case(f, &cases[i]);
}

static void newer_mla_args_with_a_zero_tail_are_accepted_else_refused(void **state)
{
    ops_fixture_t *f = *state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].mla) check_case(f, &cases[i]);
}

/* The runs read their args through the same code as the plans. */
static void newer_args_of_runs(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_attention_plan_ok(f);
    void *ws = f->dev[OB_WORKSPACE];
    size_t bytes = f->bytes[OB_WORKSPACE];
    attnrt_attention_args_t *grown = sz_grow(&f->att, sizeof f->att, EXTRA, 0, 0);
    OPS_OK(attnrt_attention_run(plan, grown, ws, bytes, NULL));
    free(grown);
    grown = sz_grow(&f->att, sizeof f->att, EXTRA, sizeof f->att + EXTRA - 1, 0x80);
    char want[256];
    snprintf(want, sizeof want, "args->struct_size = %zu is larger than attnrt_attention_args_t of this library (%zu "
             "bytes) and its byte %zu is not zero", sizeof f->att + EXTRA, sizeof f->att, sizeof f->att + EXTRA - 1);
    OPS_REJECTS(f, "attnrt_attention_run", attnrt_attention_run(plan, grown, ws, bytes, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, want);
    free(grown);

    attnrt_plan_t *cplan = ops_cascade_plan_ok(f);
    attnrt_cascade_args_t *cas = sz_grow(&f->cas, sizeof f->cas, EXTRA, sizeof f->cas + POKE, 0x10);
    snprintf(want, sizeof want, "args->struct_size = %zu is larger than attnrt_cascade_args_t", sizeof f->cas + EXTRA);
    OPS_REJECTS(f, "attnrt_cascade_run", attnrt_cascade_run(cplan, cas, ws, bytes, NULL), ATTNRT_ERR_INVALID_ARGUMENT,
                want);
    free(cas);
}

static void newer_gated_delta_args_of_runs(void **state)
{
    ops_fixture_t *f = *state;
    attnrt_plan_t *plan = ops_gated_delta_plan_ok(f);
    void *ws = f->dev[OB_WORKSPACE];
    size_t bytes = f->bytes[OB_WORKSPACE];
    attnrt_gated_delta_args_t *grown = sz_grow(&f->x->gdn, sizeof f->x->gdn, EXTRA, sizeof f->x->gdn + POKE, 0x01);
    OPS_REJECTS(f, "attnrt_gated_delta_run", attnrt_gated_delta_run(plan, grown, ws, bytes, NULL),
                ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_gated_delta_args_t of this library");
    free(grown);
}

/* Tensors: every field is required, so a smaller one is refused; a larger one with a zero tail is fine. */
static void tensors_larger_with_a_zero_tail_are_accepted_else_refused(void **state)
{
    ops_fixture_t *f = *state;
    const size_t size = sizeof(attnrt_tensor_t);
    attnrt_tensor_t *grown = sz_grow(&f->query, size, EXTRA, 0, 0);
    f->att.query = grown;
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_attention_plan(f->ctx, &f->att, &f->batch, &plan));
    OPS_OK(attnrt_plan_destroy(plan));
    free(grown);

    grown = sz_grow(&f->query, size, EXTRA, size + POKE, 0x02);
    f->att.query = grown;
    char want[256];
    snprintf(want, sizeof want, "query.struct_size = %zu is larger than attnrt_tensor_t of this library (%zu bytes) "
             "and its byte %zu is not zero", size + EXTRA, size, size + POKE);
    OPS_ATTENTION_PLAN_REJECTS(f, f->ctx, &f->att, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT, want);
    free(grown);

    f->att.query = &f->query;
    f->out.struct_size = ATTNRT_STRUCT_SIZE(attnrt_tensor_t, shape); /* strides missing */
    snprintf(want, sizeof want, "out.struct_size = %zu is too small (every field of it is required)",
             f->out.struct_size);
    OPS_ATTENTION_PLAN_REJECTS(f, f->ctx, &f->att, &f->batch, ATTNRT_ERR_INVALID_ARGUMENT, want);
}

int sz_run_newer_tests(void)
{
    const struct CMUnitTest tests[] = {
        OPS_LINEAR_TEST(newer_structs_with_a_zero_tail_are_accepted_else_refused),
        OPS_MLA_TEST(newer_mla_args_with_a_zero_tail_are_accepted_else_refused),
        OPS_TEST(newer_args_of_runs),
        OPS_LINEAR_TEST(newer_gated_delta_args_of_runs),
        OPS_TEST(tensors_larger_with_a_zero_tail_are_accepted_else_refused),
    };
    return cmocka_run_group_tests_name("newer, larger input structs", tests, NULL, NULL);
}
