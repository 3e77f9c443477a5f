/* test_npu_huge_shapes.c — attention_plan called directly through the vtable (as an out-of-tree tool
 * calls it, with no runtime bounding shapes first), data NULL as at plan time: a size outside
 * [0, 2^31) is refused with ATTNRT_ERR_INVALID_ARGUMENT naming the tensor and the dimension (2^32 + 64
 * does not pass as a head size of 64), and shapes inside it whose byte counts pass 2^64 are costed in
 * floating point, the counters saturating, never wrapping (the sanitizer builds run this too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "npu_fixture.h"
#include "npu_plan.h"

enum { T = 1, B = 1 };

typedef struct args {
    attnrt_tensor_t q, kc, vc, out, bt, qsl, sl;
    attnrt_attention_args_t a;
} args_t;

static void tensor(attnrt_tensor_t *t, attnrt_dtype_t dt, int32_t ndim, const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->dtype = dt;
    t->ndim = ndim;
    int64_t stride = 1; /* contiguous, saturating at INT64_MAX: only plans see these tensors */
    for (int32_t d = ndim - 1; d >= 0; d--) {
        t->shape[d] = shape[d];
        t->strides[d] = stride;
        if (shape[d] > 0 && __builtin_mul_overflow(stride, shape[d], &stride)) stride = INT64_MAX;
    }
}

/* A decode of one token over one block of 1024 keys: Hq query heads over Hkv KV heads of head size D. */
static void args_init(args_t *x, int64_t Hq, int64_t Hkv, int64_t D)
{
    tensor(&x->q, ATTNRT_F16, 3, (const int64_t[]){T, Hq, D});
    tensor(&x->kc, ATTNRT_F16, 4, (const int64_t[]){4, 1024, Hkv, D});
    tensor(&x->vc, ATTNRT_F16, 4, (const int64_t[]){4, 1024, Hkv, D});
    tensor(&x->out, ATTNRT_F16, 3, (const int64_t[]){T, Hq, D});
    tensor(&x->bt, ATTNRT_I32, 2, (const int64_t[]){B, 1});
    tensor(&x->qsl, ATTNRT_I32, 1, (const int64_t[]){B + 1});
    tensor(&x->sl, ATTNRT_I32, 1, (const int64_t[]){B});
    x->a = (attnrt_attention_args_t){.struct_size = sizeof x->a, .query = &x->q, .key_cache = &x->kc,
                                     .value_cache = &x->vc, .block_table = &x->bt, .query_start_loc = &x->qsl,
                                     .seq_lens = &x->sl, .out = &x->out, .causal = 1};
}

static const int32_t h_qsl[B + 1] = {0, T}, h_sl[B] = {1000}, h_bt[1] = {0};
static const attnrt_batch_host_t batch = {sizeof batch, B, h_qsl, h_sl, h_bt, 1};

/* Which size of which tensor a case sets (two tensors, to keep the others consistent). */
typedef struct hcase {
    const char *name;
    size_t      t1;
    int         d1;
    size_t      t2;
    int         d2;
    int64_t     value;
    const char *needle;
} hcase_t;

#define TOFF(field) offsetof(args_t, field)
#define NONE ((size_t)-1)

static void plan_refuses_sizes_outside_0_to_2_31(void **state)
{
    (void)state;
    static const hcase_t cases[] = {
        {"tokens 2^31", TOFF(q), 0, TOFF(out), 0, (int64_t)1 << 31, "query.shape[0] = 2147483648"},
        {"head size 2^32 + 64", TOFF(q), 2, TOFF(kc), 3, ((int64_t)1 << 32) + 64, "query.shape[2] = 4294967360"},
        {"cache blocks 2^62", TOFF(kc), 0, TOFF(vc), 0, (int64_t)1 << 62, "key_cache.shape[0] = 4611686018427387904"},
        {"block-table columns 2^40", TOFF(bt), 1, NONE, 0, (int64_t)1 << 40, "block_table.shape[1] = 1099511627776"},
        {"negative query heads", TOFF(q), 1, TOFF(out), 1, -8, "query.shape[1] = -8"},
    };
    npu_fx_t fx;
    assert_int_equal(npu_fx_open(&fx, "rbln-rebel100", "compiled"), ATTNRT_OK); /* compiled: any head size */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const hcase_t *c = &cases[i];
        args_t x;
        args_init(&x, 8, 2, 64);
        ((attnrt_tensor_t *)(void *)((char *)&x + c->t1))->shape[c->d1] = c->value;
        if (c->t2 != NONE) ((attnrt_tensor_t *)(void *)((char *)&x + c->t2))->shape[c->d2] = c->value;
        void *plan = NULL;
        size_t ws = 0;
        const attnrt_status_t st = fx.api->attention_plan(fx.dev, &x.a, &batch, &plan, &ws);
        if (st == ATTNRT_OK) fx.api->attention_plan_destroy(fx.dev, plan);
        if (st != ATTNRT_ERR_INVALID_ARGUMENT || !strstr(npu_fx_error(&fx), c->needle) ||
            !strstr(npu_fx_error(&fx), "out of range [0, 2^31)"))
            fail_msg("%s: status %d, \"%s\"; expected ATTNRT_ERR_INVALID_ARGUMENT naming %s", c->name, (int)st,
                     st == ATTNRT_OK ? "(a plan was made)" : npu_fx_error(&fx), c->needle);
    }
    npu_fx_close(&fx);
}

/* 2^31 - 1 KV heads of head size 2^31 - 1 in fp16: a key is 2^64 bytes. The plan is made (nothing
 * is allocated for such shapes at plan time) and its counters saturate. */
static void plan_costs_of_byte_counts_past_2_64_saturate(void **state)
{
    (void)state;
    npu_fx_t fx;
    assert_int_equal(npu_fx_open(&fx, "rbln-rebel100", "compiled"), ATTNRT_OK);
    args_t x;
    args_init(&x, INT32_MAX, INT32_MAX, INT32_MAX);
    void *plan = NULL;
    size_t ws = 1;
    const attnrt_status_t st = fx.api->attention_plan(fx.dev, &x.a, &batch, &plan, &ws);
    if (st != ATTNRT_OK) fail_msg("attention_plan: status %d: %s", (int)st, npu_fx_error(&fx));
    const attnrt_op_stats_t *s = &((const npu_attn_plan_t *)plan)->stats;
    assert_int_equal(ws, npu_attn_workspace_bytes(plan)); /* the run's scratch, no more */
    assert_true(s->bytes_moved == UINT64_MAX);
    assert_true(s->flops == UINT64_MAX);
    assert_true(s->time_us > 0.0 && s->time_us < 1e300);
    fx.api->attention_plan_destroy(fx.dev, plan);
    npu_fx_close(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_refuses_sizes_outside_0_to_2_31),
        cmocka_unit_test(plan_costs_of_byte_counts_past_2_64_saturate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
