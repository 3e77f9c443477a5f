/* The bad-input fixture's extension: watched regions, state pools, and the MLA, lightning and
 * gated-delta baselines (see ops_fixture.h for their shapes). */
#include <stdio.h>
#include <stdlib.h>

#include "ops_fixture.h"

/* ---- watched regions ---- */

void ops_watch(ops_fixture_t *f, const char *name, void *dev, size_t bytes)
{
    const int cap = (int)(sizeof f->watch / sizeof f->watch[0]);
    if (f->num_watch >= cap) fail_msg("a test watches more than %d regions", cap);
    struct ops_watch *w = &f->watch[f->num_watch];
    w->snap = malloc(bytes ? bytes : 1);
    assert_non_null(w->snap);
    w->name = name;
    w->dev = dev;
    w->bytes = bytes;
    w->owned = 0;
    f->num_watch++;
}

void ops_unwatch(ops_fixture_t *f, const void *dev)
{
    for (int i = 0; i < f->num_watch; i++)
        if (f->watch[i].dev == dev) {
            free(f->watch[i].snap);
            f->watch[i] = f->watch[f->num_watch - 1];
            f->num_watch--;
            return;
        }
}

void *ops_buffer(ops_fixture_t *f, const char *name, size_t bytes)
{
    void *dev = NULL;
    OPS_OK(attnrt_mem_alloc(f->ctx, bytes, &dev));
    ops_watch(f, name, dev, bytes);
    f->watch[f->num_watch - 1].owned = 1;
    return dev;
}

void ops_poison(ops_fixture_t *f, void *dev, size_t bytes)
{
    unsigned char *host = malloc(bytes);
    assert_non_null(host);
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(0x5Au ^ (i * 37u + 11u));
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, dev, host, bytes, NULL));
    free(host);
}

static void fill_inputs(ops_fixture_t *f, void *dev, size_t bytes, uint32_t seed, float offset)
{
    size_t n = bytes / sizeof(float);
    float *host = malloc(n * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        host[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f + 1.0f / 65536.0f + offset;
    }
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, dev, host, n * sizeof *host, NULL));
    free(host);
}

static void *input_buffer(ops_fixture_t *f, const char *name, size_t floats, uint32_t seed, float offset)
{
    void *dev = ops_buffer(f, name, floats * sizeof(float));
    fill_inputs(f, dev, floats * sizeof(float), seed, offset);
    return dev;
}

static void *poison_buffer(ops_fixture_t *f, const char *name, size_t bytes)
{
    void *dev = ops_buffer(f, name, bytes);
    ops_poison(f, dev, bytes);
    return dev;
}

static void *host_buffer(ops_fixture_t *f, const char *name, const void *host, size_t bytes)
{
    void *dev = ops_buffer(f, name, bytes);
    OPS_OK(attnrt_mem_copy_to_device(f->ctx, dev, host, bytes, NULL));
    return dev;
}

void ops_tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->data = data;
    t->dtype = dtype;
    t->ndim = ndim;
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        t->shape[d] = shape[d];
        t->strides[d] = stride;
        stride *= shape[d] > 0 ? shape[d] : 1;
    }
}

size_t ops_pool_bytes(const attnrt_tensor_t *t)
{
    size_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
    return n * attnrt_dtype_size(t->dtype);
}

/* ---- pools ---- */

void ops_keep_pool(ops_fixture_t *f, attnrt_state_pool_t *pool)
{
    for (int i = 0; i < OPS_MAX_POOLS; i++)
        if (!f->x->pools[i]) {
            f->x->pools[i] = pool;
            return;
        }
    fail_msg("a test made more than %d pools", OPS_MAX_POOLS);
}

attnrt_state_pool_t *ops_pool(ops_fixture_t *f, attnrt_dtype_t dtype, int32_t slot_ndim, const int64_t *slot_shape,
                                int32_t num_slots, int32_t num_alloc, attnrt_tensor_t *tensor)
{
    attnrt_state_pool_t *pool = NULL;
    OPS_OK(attnrt_state_pool_create(f->ctx, dtype, slot_ndim, slot_shape, num_slots, &pool));
    assert_non_null(pool);
    ops_keep_pool(f, pool);
    for (int32_t i = 0; i < num_alloc; i++) {
        int32_t slot = -7;
        OPS_OK(attnrt_state_slot_alloc(pool, &slot));
        if (slot != i) fail_msg("attnrt_state_slot_alloc gave slot %d, expected the lowest free id %d", slot, i);
    }
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    OPS_OK(attnrt_state_pool_tensor(pool, &t));
    if (!t.data) fail_msg("attnrt_state_pool_tensor gave NULL data");
    size_t bytes = ops_pool_bytes(&t);
    ops_poison(f, t.data, bytes);
    ops_watch(f, "pool storage", t.data, bytes);
    if (tensor) *tensor = t;
    return pool;
}

void ops_pool_destroy(ops_fixture_t *f, attnrt_state_pool_t *pool)
{
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    OPS_OK(attnrt_state_pool_tensor(pool, &t));
    ops_unwatch(f, t.data);
    for (int i = 0; i < OPS_MAX_POOLS; i++)
        if (f->x->pools[i] == pool) f->x->pools[i] = NULL;
    OPS_OK(attnrt_state_pool_destroy(pool));
}

/* ---- baselines ---- */

static void build_mla(ops_fixture_t *f)
{
    ops_ext_t *x = f->x;
    const int64_t q[3] = {OPS_T, OPS_HQ, OPS_MLA_KV_DIM};
    const int64_t cache[4] = {OPS_NUM_BLOCKS, OPS_BLOCK, 1, OPS_MLA_KV_DIM};
    const int64_t idx[2] = {OPS_T, OPS_MLA_TOPK}, one[1] = {1};
    void *dq = input_buffer(f, "mla query", (size_t)OPS_T * OPS_HQ * OPS_MLA_KV_DIM, 21, 0.0f);
    void *dc = poison_buffer(f, "latent cache", (size_t)OPS_NUM_BLOCKS * OPS_BLOCK * OPS_MLA_KV_DIM * sizeof(float));
    /* sparse indices: for token i of request b, {0, seq_len - 1, p_q, -1} (all < seq_len) */
    for (int b = 0; b < OPS_B; b++)
        for (int32_t t = f->h_qsl[b]; t < f->h_qsl[b + 1]; t++) {
            int32_t seq = f->h_seq_lens[b], len = f->h_qsl[b + 1] - f->h_qsl[b];
            int32_t *row = x->h_indices + t * OPS_MLA_TOPK;
            row[0] = 0;
            row[1] = seq - 1;
            row[2] = seq - len + (t - f->h_qsl[b]);
            row[3] = -1;
        }
    void *di = host_buffer(f, "indices", x->h_indices, sizeof x->h_indices);
    ops_tensor(&x->mla_query, dq, ATTNRT_F32, 3, q);
    ops_tensor(&x->mla_cache, dc, ATTNRT_F32, 4, cache);
    ops_tensor(&x->indices, di, ATTNRT_I32, 2, idx);
    ops_tensor(&x->kv_scale, f->key_scale.data, ATTNRT_F32, 1, one); /* all 1.0 */
    x->mla = (attnrt_mla_args_t){
        .struct_size = sizeof x->mla,
        .query = &x->mla_query,
        .kv_cache = &x->mla_cache,
        .block_table = &f->block_table,
        .query_start_loc = &f->qsl,
        .seq_lens = &f->seq_lens,
        .out = &f->out,
        .scale = 0.25f,
        .causal = 1,
    };
}

void ops_use_sparse(ops_fixture_t *f)
{
    f->x->mla.indices = &f->x->indices;
    f->x->mla.indices_host = f->x->h_indices;
    f->x->mla.causal = 0;
}

static void build_linear(ops_fixture_t *f)
{
    ops_ext_t *x = f->x;
    const int64_t qk[3] = {OPS_T, OPS_LIN_H, OPS_LIN_DK}, lv[3] = {OPS_T, OPS_LIN_H, OPS_LIN_DV};
    const int64_t gv[3] = {OPS_T, OPS_GDN_HV, OPS_LIN_DV}, gate[2] = {OPS_T, OPS_GDN_HV};
    const int64_t heads[1] = {OPS_LIN_H}, per_seq[1] = {OPS_B}, spec[2] = {OPS_B, OPS_GDN_NUM_SPEC + 1};
    const int64_t lin_slot[3] = {OPS_LIN_H, OPS_LIN_DK, OPS_LIN_DV}, gdn_slot[3] = {OPS_GDN_HV, OPS_LIN_DK, OPS_LIN_DV};

    /* host state metadata */
    const int32_t idx[OPS_B] = {0, 1, 2};
    const uint8_t init[OPS_B] = {0, 1, 1};
    const int32_t accepted[OPS_B] = {1, 3, 5};
    memcpy(x->h_lin_state_indices, idx, sizeof idx);
    memcpy(x->h_gdn_state_indices, idx, sizeof idx);
    memcpy(x->h_lin_has_init, init, sizeof init);
    memcpy(x->h_gdn_has_init, init, sizeof init);
    for (int i = 0; i < OPS_B * (OPS_GDN_NUM_SPEC + 1); i++) x->h_spec[i] = i;
    memcpy(x->h_num_accepted, accepted, sizeof accepted);

    void *dq = input_buffer(f, "linear query", (size_t)OPS_T * OPS_LIN_H * OPS_LIN_DK, 31, 0.0f);
    void *dk = input_buffer(f, "linear key", (size_t)OPS_T * OPS_LIN_H * OPS_LIN_DK, 32, 0.0f);
    void *dv = input_buffer(f, "lightning value", (size_t)OPS_T * OPS_LIN_H * OPS_LIN_DV, 33, 0.0f);
    void *dout = poison_buffer(f, "lightning out", (size_t)OPS_T * OPS_LIN_H * OPS_LIN_DV * sizeof(float));
    void *dslopes = input_buffer(f, "slopes", OPS_LIN_H, 34, 1.5f); /* in (0.5, 2.5) */
    void *dgv = input_buffer(f, "gdn value", (size_t)OPS_T * OPS_GDN_HV * OPS_LIN_DV, 35, 0.0f);
    void *dg = input_buffer(f, "g", (size_t)OPS_T * OPS_GDN_HV, 36, -1.5f); /* log decay < 0 */
    void *dbeta = input_buffer(f, "beta", (size_t)OPS_T * OPS_GDN_HV, 37, 0.0f);
    void *dgout = poison_buffer(f, "gdn out", (size_t)OPS_T * OPS_GDN_HV * OPS_LIN_DV * sizeof(float));
    void *didx = host_buffer(f, "state_indices", idx, sizeof idx);
    void *dinit = host_buffer(f, "has_initial_state", init, sizeof init);
    void *dspec = host_buffer(f, "spec_state_indices", x->h_spec, sizeof x->h_spec);
    void *dacc = host_buffer(f, "num_accepted", accepted, sizeof accepted);

    ops_tensor(&x->lq, dq, ATTNRT_F32, 3, qk);
    ops_tensor(&x->lk, dk, ATTNRT_F32, 3, qk);
    ops_tensor(&x->lv, dv, ATTNRT_F32, 3, lv);
    ops_tensor(&x->lout, dout, ATTNRT_F32, 3, lv);
    ops_tensor(&x->slopes, dslopes, ATTNRT_F32, 1, heads);
    ops_tensor(&x->lin_state_indices, didx, ATTNRT_I32, 1, per_seq);
    ops_tensor(&x->lin_has_init, dinit, ATTNRT_BOOL, 1, per_seq);
    ops_tensor(&x->gq, dq, ATTNRT_F32, 3, qk);
    ops_tensor(&x->gk, dk, ATTNRT_F32, 3, qk);
    ops_tensor(&x->gv, dgv, ATTNRT_F32, 3, gv);
    ops_tensor(&x->g, dg, ATTNRT_F32, 2, gate);
    ops_tensor(&x->beta, dbeta, ATTNRT_F32, 2, gate);
    ops_tensor(&x->gout, dgout, ATTNRT_F32, 3, gv);
    ops_tensor(&x->gdn_state_indices, didx, ATTNRT_I32, 1, per_seq);
    ops_tensor(&x->gdn_has_init, dinit, ATTNRT_U8, 1, per_seq);
    ops_tensor(&x->spec, dspec, ATTNRT_I32, 2, spec);
    ops_tensor(&x->num_accepted, dacc, ATTNRT_I32, 1, per_seq);

    x->lin_pool = ops_pool(f, ATTNRT_F32, 3, lin_slot, OPS_LIN_SLOTS, OPS_LIN_ALLOCATED, &x->lin_state);
    x->gdn_pool = ops_pool(f, ATTNRT_F32, 3, gdn_slot, OPS_GDN_SLOTS, OPS_GDN_ALLOCATED, &x->gdn_state);

    x->lin_batch = (attnrt_batch_host_t){sizeof x->lin_batch, OPS_B, f->h_qsl, f->h_seq_lens, NULL, 0};
    x->lin_states = (attnrt_state_host_t){sizeof x->lin_states, x->h_lin_state_indices, x->h_lin_has_init, NULL,
                                          NULL, 0};
    x->gdn_states = (attnrt_state_host_t){sizeof x->gdn_states, x->h_gdn_state_indices, x->h_gdn_has_init, NULL,
                                          NULL, 0};
    x->lin = (attnrt_lightning_args_t){
        .struct_size = sizeof x->lin,
        .query = &x->lq,
        .key = &x->lk,
        .value = &x->lv,
        .out = &x->lout,
        .slopes = &x->slopes,
        .state = &x->lin_state,
        .query_start_loc = &f->qsl,
        .state_indices = &x->lin_state_indices,
        .has_initial_state = &x->lin_has_init,
    };
    x->gdn = (attnrt_gated_delta_args_t){
        .struct_size = sizeof x->gdn,
        .query = &x->gq,
        .key = &x->gk,
        .value = &x->gv,
        .g = &x->g,
        .beta = &x->beta,
        .out = &x->gout,
        .state = &x->gdn_state,
        .query_start_loc = &f->qsl,
        .state_indices = &x->gdn_state_indices,
        .has_initial_state = &x->gdn_has_init,
        .scale = 0.0f,
        .use_l2norm = 1,
    };
}

void ops_use_spec(ops_fixture_t *f)
{
    ops_ext_t *x = f->x;
    x->gdn.spec_state_indices = &x->spec;
    x->gdn.num_accepted = &x->num_accepted;
    x->gdn_states.spec_state_indices = x->h_spec;
    x->gdn_states.num_accepted = x->h_num_accepted;
    x->gdn_states.num_spec = OPS_GDN_NUM_SPEC;
}

/* ---- setup and teardown ---- */

int ops_ext_setup(void **state)
{
    if (ops_setup(state) != 0) return -1;
    ops_fixture_t *f = *state;
    f->x = calloc(1, sizeof *f->x);
    return f->x ? 0 : -1;
}

int ops_ext_setup_mla(void **state)
{
    if (ops_ext_setup(state) != 0) return -1;
    build_mla(*state);
    return 0;
}

int ops_ext_setup_linear(void **state)
{
    if (ops_ext_setup(state) != 0) return -1;
    build_linear(*state);
    return 0;
}

int ops_ext_teardown(void **state)
{
    ops_fixture_t *f = *state;
    int rc = 0;
    if (!f) return 0;
    /* plans first (a plan may refer to a pool), then pools, then the extension's buffers */
    for (size_t i = 0; i < sizeof f->plans / sizeof f->plans[0]; i++)
        if (f->plans[i]) {
            if (attnrt_plan_destroy(f->plans[i]) != ATTNRT_OK) rc = -1;
            f->plans[i] = NULL;
        }
    if (f->x)
        for (int i = 0; i < OPS_MAX_POOLS; i++)
            if (f->x->pools[i] && attnrt_state_pool_destroy(f->x->pools[i]) != ATTNRT_OK) {
                print_error("attnrt_state_pool_destroy: %s\n", attnrt_last_error());
                rc = -1;
            }
    for (int w = 0; w < f->num_watch; w++) {
        if (f->watch[w].owned) attnrt_mem_free(f->ctx, f->watch[w].dev);
        free(f->watch[w].snap);
    }
    f->num_watch = 0;
    free(f->x);
    f->x = NULL;
    if (ops_teardown(state) != 0) rc = -1;
    return rc;
}

/* ---- plans that must succeed ---- */

attnrt_plan_t *ops_mla_plan_ok(ops_fixture_t *f)
{
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_mla_plan(f->ctx, &f->x->mla, &f->batch, &plan));
    assert_non_null(plan);
    return ops_keep_plan(f, plan);
}

attnrt_plan_t *ops_lightning_plan_ok(ops_fixture_t *f)
{
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_lightning_plan(f->ctx, &f->x->lin, &f->x->lin_batch, &f->x->lin_states, f->x->lin_pool, &plan));
    assert_non_null(plan);
    return ops_keep_plan(f, plan);
}

attnrt_plan_t *ops_gated_delta_plan_ok(ops_fixture_t *f)
{
    attnrt_plan_t *plan = NULL;
    OPS_OK(attnrt_gated_delta_plan(f->ctx, &f->x->gdn, &f->x->lin_batch, &f->x->gdn_states, f->x->gdn_pool, &plan));
    assert_non_null(plan);
    return ops_keep_plan(f, plan);
}

size_t ops_workspace_of(attnrt_plan_t *plan)
{
    size_t bytes = SIZE_MAX;
    OPS_OK(attnrt_plan_workspace_size(plan, &bytes));
    assert_true(bytes < SIZE_MAX);
    return bytes;
}
