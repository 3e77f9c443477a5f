/* test_cpu_plan_huge_shapes: the cpu plugin called directly through its vtable, as an out-of-tree tool
 * calls it (no runtime in between to bound shapes first), refuses a plan whose tensors have a size
 * outside [0, 2^31) with ATTNRT_ERR_INVALID_ARGUMENT naming the tensor and the dimension, at once and
 * without undefined behaviour (the sanitizer builds run it too): paged attention, MLA, lightning and
 * gated delta, data NULL as at plan time. A size of 2^32 + 64 must not pass as 64.
 *
 *   test_cpu_plan_huge_shapes PATH_TO_attnrt_cpu.so
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnrt_plugin.h"

enum { T = 4, B = 1 };

/* Valid small args of every op (data NULL), which each case breaks in one dimension. */
typedef struct fixture {
    attnrt_tensor_t q, kc, vc, out, bt, qsl, sl;                           /* attention */
    attnrt_tensor_t mq, mcache, mout;                                      /* MLA */
    attnrt_tensor_t lq, lk, lv, lout, slopes, lstate, idx, init;           /* lightning */
    attnrt_tensor_t gq, gk, gv, g, beta, gout, gstate;                     /* gated delta */
    attnrt_attention_args_t   att;
    attnrt_mla_args_t         mla;
    attnrt_lightning_args_t   lin;
    attnrt_gated_delta_args_t gdn;
} fixture_t;

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

static void fixture_init(fixture_t *f)
{
    tensor(&f->q, ATTNRT_F32, 3, (const int64_t[]){T, 4, 64});
    tensor(&f->kc, ATTNRT_F32, 4, (const int64_t[]){8, 16, 2, 64});
    tensor(&f->vc, ATTNRT_F32, 4, (const int64_t[]){8, 16, 2, 64});
    tensor(&f->out, ATTNRT_F32, 3, (const int64_t[]){T, 4, 64});
    tensor(&f->bt, ATTNRT_I32, 2, (const int64_t[]){B, 4});
    tensor(&f->qsl, ATTNRT_I32, 1, (const int64_t[]){B + 1});
    tensor(&f->sl, ATTNRT_I32, 1, (const int64_t[]){B});
    f->att = (attnrt_attention_args_t){.struct_size = sizeof f->att, .query = &f->q, .key_cache = &f->kc,
                                       .value_cache = &f->vc, .block_table = &f->bt, .query_start_loc = &f->qsl,
                                       .seq_lens = &f->sl, .out = &f->out, .causal = 1};
    tensor(&f->mq, ATTNRT_F32, 3, (const int64_t[]){T, 4, 64});
    tensor(&f->mcache, ATTNRT_F32, 4, (const int64_t[]){8, 16, 1, 64});
    tensor(&f->mout, ATTNRT_F32, 3, (const int64_t[]){T, 4, 32});
    f->mla = (attnrt_mla_args_t){.struct_size = sizeof f->mla, .query = &f->mq, .kv_cache = &f->mcache,
                                 .block_table = &f->bt, .query_start_loc = &f->qsl, .seq_lens = &f->sl,
                                 .out = &f->mout, .scale = 0.125f, .causal = 1};
    tensor(&f->lq, ATTNRT_F32, 3, (const int64_t[]){T, 2, 32});
    tensor(&f->lk, ATTNRT_F32, 3, (const int64_t[]){T, 2, 32});
    tensor(&f->lv, ATTNRT_F32, 3, (const int64_t[]){T, 2, 32});
    tensor(&f->lout, ATTNRT_F32, 3, (const int64_t[]){T, 2, 32});
    tensor(&f->slopes, ATTNRT_F32, 1, (const int64_t[]){2});
    tensor(&f->lstate, ATTNRT_F32, 4, (const int64_t[]){4, 2, 32, 32});
    tensor(&f->idx, ATTNRT_I32, 1, (const int64_t[]){B});
    tensor(&f->init, ATTNRT_U8, 1, (const int64_t[]){B});
    f->lin = (attnrt_lightning_args_t){.struct_size = sizeof f->lin, .query = &f->lq, .key = &f->lk, .value = &f->lv,
                                       .out = &f->lout, .slopes = &f->slopes, .state = &f->lstate,
                                       .query_start_loc = &f->qsl, .state_indices = &f->idx,
                                       .has_initial_state = &f->init};
    tensor(&f->gq, ATTNRT_F32, 3, (const int64_t[]){T, 1, 32});
    tensor(&f->gk, ATTNRT_F32, 3, (const int64_t[]){T, 1, 32});
    tensor(&f->gv, ATTNRT_F32, 3, (const int64_t[]){T, 2, 32});
    tensor(&f->g, ATTNRT_F32, 2, (const int64_t[]){T, 2});
    tensor(&f->beta, ATTNRT_F32, 2, (const int64_t[]){T, 2});
    tensor(&f->gout, ATTNRT_F32, 3, (const int64_t[]){T, 2, 32});
    tensor(&f->gstate, ATTNRT_F32, 4, (const int64_t[]){4, 2, 32, 32});
    f->gdn = (attnrt_gated_delta_args_t){.struct_size = sizeof f->gdn, .query = &f->gq, .key = &f->gk, .value = &f->gv,
                                         .g = &f->g, .beta = &f->beta, .out = &f->gout, .state = &f->gstate,
                                         .query_start_loc = &f->qsl, .state_indices = &f->idx,
                                         .has_initial_state = &f->init, .use_l2norm = 1};
}

typedef enum { OP_ATTENTION, OP_MLA, OP_LIGHTNING, OP_GATED_DELTA } op_t;

/* One case: set dims of up to two tensors (the second keeps the args consistent), expect the needle. */
typedef struct hcase {
    const char *name;
    op_t        op;
    size_t      t1;
    int         d1;
    size_t      t2;
    int         d2;
    int64_t     value;
    const char *needle;
} hcase_t;

#define TOFF(field) offsetof(fixture_t, field)
#define NONE ((size_t)-1)

static const hcase_t cases[] = {
    {"attention tokens 2^31", OP_ATTENTION, TOFF(q), 0, TOFF(out), 0, (int64_t)1 << 31, "query.shape[0]"},
    {"attention head dim 2^32 + 64 (not 64)", OP_ATTENTION, TOFF(q), 2, TOFF(kc), 3, ((int64_t)1 << 32) + 64,
     "query.shape[2]"},
    {"attention kv heads 2^31", OP_ATTENTION, TOFF(kc), 2, TOFF(vc), 2, (int64_t)1 << 31, "key_cache.shape[2]"},
    {"attention cache blocks 2^62", OP_ATTENTION, TOFF(kc), 0, TOFF(vc), 0, (int64_t)1 << 62, "key_cache.shape[0]"},
    {"attention block-table columns 2^40", OP_ATTENTION, TOFF(bt), 1, NONE, 0, (int64_t)1 << 40, "block_table.shape[1]"},
    {"MLA latent blocks 2^31", OP_MLA, TOFF(mcache), 0, NONE, 0, (int64_t)1 << 31, "kv_cache.shape[0]"},
    {"MLA heads 2^40", OP_MLA, TOFF(mq), 1, TOFF(mout), 1, (int64_t)1 << 40, "query.shape[1]"},
    {"lightning state slots 2^33", OP_LIGHTNING, TOFF(lstate), 0, NONE, 0, (int64_t)1 << 33, "state.shape[0]"},
    {"lightning tokens 2^31 + 4", OP_LIGHTNING, TOFF(lq), 0, NONE, 0, ((int64_t)1 << 31) + 4, "query.shape[0]"},
    {"gated delta state slots 2^31", OP_GATED_DELTA, TOFF(gstate), 0, NONE, 0, (int64_t)1 << 31, "state.shape[0]"},
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_cpu_plan_huge_shapes PATH_TO_attnrt_cpu.so\n");
        return 2;
    }
    void *so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    typedef const attnrt_plugin_api_t *(*get_api_fn)(uint32_t, uint32_t);
    get_api_fn get_api;
    *(void **)&get_api = dlsym(so, "attnrt_plugin_get_api");
    const attnrt_plugin_api_t *api = get_api ? get_api(ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR) : NULL;
    const attnrt_host_api_t host = {sizeof host, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR, 0, NULL};
    void *plugin = NULL, *dev = NULL;
    if (!api || api->init(&host, &plugin) != ATTNRT_OK || api->device_open(plugin, 0, &dev) != ATTNRT_OK) {
        fprintf(stderr, "cannot open cpu:0 through %s\n", argv[1]);
        return 1;
    }
    const int32_t h_qsl[B + 1] = {0, T}, h_sl[B] = {20}, h_bt[4] = {0, 1, 2, 3}, h_idx[B] = {0};
    const uint8_t h_init[B] = {0};
    const attnrt_batch_host_t batch = {sizeof batch, B, h_qsl, h_sl, h_bt, 4};
    const attnrt_state_host_t states = {sizeof states, h_idx, h_init, NULL, NULL, 0};

    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const hcase_t *c = &cases[i];
        fixture_t f;
        fixture_init(&f);
        ((attnrt_tensor_t *)(void *)((char *)&f + c->t1))->shape[c->d1] = c->value;
        if (c->t2 != NONE) ((attnrt_tensor_t *)(void *)((char *)&f + c->t2))->shape[c->d2] = c->value;
        void *plan = NULL;
        size_t ws = 0;
        attnrt_status_t st = ATTNRT_ERR_INTERNAL;
        switch (c->op) {
        case OP_ATTENTION: st = api->attention_plan(dev, &f.att, &batch, &plan, &ws); break;
        case OP_MLA: st = api->mla_plan(dev, &f.mla, &batch, &plan, &ws); break;
        case OP_LIGHTNING: st = api->lightning_plan(dev, &f.lin, &batch, &states, &plan, &ws); break;
        case OP_GATED_DELTA: st = api->gated_delta_plan(dev, &f.gdn, &batch, &states, &plan, &ws); break;
        }
        char msg[512] = "";
        if (st != ATTNRT_OK) api->last_error(msg, sizeof msg);
        const int ok = st == ATTNRT_ERR_INVALID_ARGUMENT && strstr(msg, c->needle) != NULL;
        printf("%s %-40s status %d: %s\n", ok ? "pass" : "FAIL", c->name, (int)st,
               st == ATTNRT_OK ? "(a plan was made)" : msg);
        if (st == ATTNRT_OK) {
            if (c->op == OP_ATTENTION) api->attention_plan_destroy(dev, plan);
            else api->plan_destroy(dev, plan);
        }
        failures += !ok;
    }
    api->device_close(dev);
    api->shutdown(plugin);
    dlclose(so);
    printf("%d of %zu cases failed\n", failures, sizeof cases / sizeof cases[0]);
    return failures ? 1 : 0;
}
