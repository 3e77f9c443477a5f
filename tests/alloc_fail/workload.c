/* The scenarios' valid arguments (see workload.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workload.h"

#define WL_OK(call)                                                                                   \
    do {                                                                                              \
        attnrt_status_t wl_st_ = (call);                                                              \
        if (wl_st_ != ATTNRT_OK)                                                                      \
            fail_msg("%s returned %s: %s", #call, attnrt_status_name(wl_st_), attnrt_last_error());   \
    } while (0)

static void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape)
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
        stride *= shape[d];
    }
}

static void *buffer(wl_t *w, size_t bytes)
{
    if (w->num_bufs == WL_MAX_BUFS) fail_msg("workload: more than %d buffers", WL_MAX_BUFS);
    void *dev = NULL;
    WL_OK(attnrt_mem_alloc(w->ctx, bytes, &dev));
    return w->bufs[w->num_bufs++] = dev;
}

static void *upload(wl_t *w, const void *host, size_t bytes)
{
    void *dev = buffer(w, bytes);
    WL_OK(attnrt_mem_copy_to_device(w->ctx, dev, host, bytes, NULL));
    return dev;
}

/* Finite inputs in [offset - 1, offset + 1). */
static void fill_random(wl_t *w, void *dev, size_t count, uint32_t seed, float offset)
{
    float *host = malloc(count * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        host[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f + offset;
    }
    WL_OK(attnrt_mem_copy_to_device(w->ctx, dev, host, count * sizeof *host, NULL));
    free(host);
}

static void *randoms(wl_t *w, size_t count, uint32_t seed, float offset)
{
    void *dev = buffer(w, count * sizeof(float));
    fill_random(w, dev, count, seed, offset);
    return dev;
}

size_t wl_pool_bytes(const attnrt_state_pool_t *pool, void **data)
{
    attnrt_tensor_t t = {.struct_size = sizeof t};
    WL_OK(attnrt_state_pool_tensor(pool, &t));
    size_t n = attnrt_dtype_size(t.dtype);
    for (int32_t d = 0; d < t.ndim; d++) n *= (size_t)t.shape[d];
    if (data) *data = t.data;
    return n;
}

static void build_batch(wl_t *w)
{
    const wl_shape_t *s = &w->shape;
    const int32_t B = s->num_seqs, cols = s->max_blocks, first_prefix_block = B * cols;
    w->h_block_table = calloc((size_t)B * cols, sizeof *w->h_block_table);
    assert_non_null(w->h_block_table);
    w->h_qsl[0] = 0;
    for (int32_t b = 0; b < B; b++) {
        w->h_qsl[b + 1] = w->h_qsl[b] + s->q_lens[b];
        w->h_seq_lens[b] = s->seq_lens[b];
        w->h_prefix_lens[b] = WL_PREFIX_BLOCKS * s->block_size;
        for (int32_t c = 0; c < cols; c++) w->h_block_table[b * cols + c] = b * cols + c;
    }
    for (int32_t i = 0; i < WL_PREFIX_BLOCKS; i++) w->h_prefix_table[i] = first_prefix_block + i;
    w->T = w->h_qsl[B];
    w->h_slots = calloc((size_t)w->T, sizeof *w->h_slots);
    assert_non_null(w->h_slots);
    for (int32_t b = 0; b < B; b++) /* the batch's new tokens sit at the end of each sequence */
        for (int32_t i = 0; i < s->q_lens[b]; i++) {
            int32_t p = s->seq_lens[b] - s->q_lens[b] + i;
            w->h_slots[w->h_qsl[b] + i] =
                (int64_t)w->h_block_table[b * cols + p / s->block_size] * s->block_size + p % s->block_size;
        }
    w->batch = (attnrt_batch_host_t){sizeof w->batch, B, w->h_qsl, w->h_seq_lens, w->h_block_table, cols};
    w->prefix_batch = (attnrt_batch_host_t){sizeof w->prefix_batch, B, w->h_qsl, w->h_prefix_lens, w->h_prefix_table, 0};
}

static void build_attention(wl_t *w)
{
    const wl_shape_t *s = &w->shape;
    const int64_t T = w->T, B = s->num_seqs, Hq = s->q_heads, Hkv = s->kv_heads, D = s->head_dim;
    const int64_t blocks = B * s->max_blocks + WL_PREFIX_BLOCKS;
    const int64_t act[3] = {T, Hq, D}, kv[3] = {T, Hkv, D}, cache[4] = {blocks, s->block_size, Hkv, D};
    const int64_t table[2] = {B, s->max_blocks}, qsl[1] = {B + 1}, per_seq[1] = {B}, lse[2] = {T, Hq};
    const int64_t tokens[1] = {T}, prefix_table[2] = {B, WL_PREFIX_BLOCKS};
    const size_t cache_floats = (size_t)(blocks * s->block_size * Hkv * D);

    tensor(&w->query, randoms(w, (size_t)(T * Hq * D), 1, 0.0f), ATTNRT_F32, 3, act);
    tensor(&w->key_cache, randoms(w, cache_floats, 2, 0.0f), ATTNRT_F32, 4, cache);
    tensor(&w->value_cache, randoms(w, cache_floats, 3, 0.0f), ATTNRT_F32, 4, cache);
    tensor(&w->block_table, upload(w, w->h_block_table, (size_t)(B * s->max_blocks) * sizeof(int32_t)), ATTNRT_I32, 2,
           table);
    tensor(&w->qsl, upload(w, w->h_qsl, (size_t)(B + 1) * sizeof(int32_t)), ATTNRT_I32, 1, qsl);
    tensor(&w->seq_lens, upload(w, w->h_seq_lens, (size_t)B * sizeof(int32_t)), ATTNRT_I32, 1, per_seq);
    tensor(&w->out, randoms(w, (size_t)(T * Hq * D), 4, 0.0f), ATTNRT_F32, 3, act);
    tensor(&w->lse, randoms(w, (size_t)(T * Hq), 5, 0.0f), ATTNRT_F32, 2, lse);
    tensor(&w->key, randoms(w, (size_t)(T * Hkv * D), 6, 0.0f), ATTNRT_F32, 3, kv);
    tensor(&w->value, randoms(w, (size_t)(T * Hkv * D), 7, 0.0f), ATTNRT_F32, 3, kv);
    tensor(&w->slots, upload(w, w->h_slots, (size_t)T * sizeof(int64_t)), ATTNRT_I64, 1, tokens);
    for (int i = 0; i < 2; i++) {
        tensor(&w->states[i], randoms(w, (size_t)(T * Hq * D), 8 + (uint32_t)i, 0.0f), ATTNRT_F32, 3, act);
        tensor(&w->lses[i], randoms(w, (size_t)(T * Hq), 10 + (uint32_t)i, 0.0f), ATTNRT_F32, 2, lse);
        w->merge_states[i] = &w->states[i];
        w->merge_lses[i] = &w->lses[i];
    }
    tensor(&w->prefix_table, upload(w, w->h_prefix_table, sizeof w->h_prefix_table), ATTNRT_I32, 2, prefix_table);
    w->prefix_table.strides[0] = 0; /* every request shares the one prefix row */
    tensor(&w->prefix_lens, upload(w, w->h_prefix_lens, (size_t)B * sizeof(int32_t)), ATTNRT_I32, 1, per_seq);
    w->workspace = buffer(w, WL_WORKSPACE_BYTES);

    w->att = (attnrt_attention_args_t){.struct_size = sizeof w->att, .query = &w->query, .key_cache = &w->key_cache,
                                       .value_cache = &w->value_cache, .block_table = &w->block_table,
                                       .query_start_loc = &w->qsl, .seq_lens = &w->seq_lens, .out = &w->out,
                                       .causal = 1};
    w->kvw = (attnrt_kv_write_args_t){.struct_size = sizeof w->kvw, .key = &w->key, .value = &w->value,
                                      .slot_mapping = &w->slots, .key_cache = &w->key_cache,
                                      .value_cache = &w->value_cache, .slot_mapping_host = w->h_slots};
    w->merge = (attnrt_merge_args_t){.struct_size = sizeof w->merge, .num_states = 2, .states = w->merge_states,
                                     .lses = w->merge_lses, .out = &w->out, .out_lse = &w->lse};
    w->cas = (attnrt_cascade_args_t){sizeof w->cas, &w->att, &w->prefix_table, &w->prefix_lens};
    w->cas_host = (attnrt_cascade_host_t){sizeof w->cas_host, &w->prefix_batch, &w->batch};
}

static void build_mla(wl_t *w)
{
    const wl_shape_t *s = &w->shape;
    const int64_t T = w->T, Hq = s->q_heads, blocks = (int64_t)s->num_seqs * s->max_blocks + WL_PREFIX_BLOCKS;
    const int64_t q[3] = {T, Hq, WL_MLA_KV_DIM}, cache[4] = {blocks, s->block_size, 1, WL_MLA_KV_DIM};
    const int64_t idx[2] = {T, 4};
    w->h_indices = calloc((size_t)T * 4, sizeof *w->h_indices);
    assert_non_null(w->h_indices);
    for (int32_t b = 0; b < s->num_seqs; b++) /* token i attends to {0, its own position, the last, none} */
        for (int32_t t = w->h_qsl[b]; t < w->h_qsl[b + 1]; t++) {
            int32_t *row = w->h_indices + t * 4;
            row[0] = 0;
            row[1] = s->seq_lens[b] - s->q_lens[b] + (t - w->h_qsl[b]);
            row[2] = s->seq_lens[b] - 1;
            row[3] = -1;
        }
    tensor(&w->mla_query, randoms(w, (size_t)(T * Hq * WL_MLA_KV_DIM), 21, 0.0f), ATTNRT_F32, 3, q);
    tensor(&w->latent, randoms(w, (size_t)(blocks * s->block_size * WL_MLA_KV_DIM), 22, 0.0f), ATTNRT_F32, 4, cache);
    tensor(&w->indices, upload(w, w->h_indices, (size_t)T * 4 * sizeof(int32_t)), ATTNRT_I32, 2, idx);
    w->mla = (attnrt_mla_args_t){.struct_size = sizeof w->mla, .query = &w->mla_query, .kv_cache = &w->latent,
                                 .block_table = &w->block_table, .query_start_loc = &w->qsl,
                                 .seq_lens = &w->seq_lens, .out = &w->out, .scale = 0.25f, .causal = 1};
    w->mla_sparse = w->mla;
    w->mla_sparse.indices = &w->indices;
    w->mla_sparse.indices_host = w->h_indices;
    w->mla_sparse.causal = 0;
}

static attnrt_state_pool_t *pool_with_slots(wl_t *w, int32_t heads, int32_t num_slots, int32_t allocated,
                                            attnrt_tensor_t *tensor_out, uint32_t seed)
{
    const int64_t slot[3] = {heads, WL_LIN_DK, WL_LIN_DV};
    attnrt_state_pool_t *pool = NULL;
    WL_OK(attnrt_state_pool_create(w->ctx, ATTNRT_F32, 3, slot, num_slots, &pool));
    for (int32_t i = 0; i < allocated; i++) {
        int32_t got = -1;
        WL_OK(attnrt_state_slot_alloc(pool, &got));
    }
    *tensor_out = (attnrt_tensor_t){.struct_size = sizeof *tensor_out};
    WL_OK(attnrt_state_pool_tensor(pool, tensor_out));
    void *data = NULL;
    size_t bytes = wl_pool_bytes(pool, &data);
    fill_random(w, data, bytes / sizeof(float), seed, 0.0f);
    return pool;
}

static void build_linear(wl_t *w)
{
    const int32_t B = w->shape.num_seqs, spec_slots = B * (WL_GDN_NUM_SPEC + 1);
    const int64_t T = w->T, qk[3] = {T, WL_LIN_H, WL_LIN_DK}, lv[3] = {T, WL_LIN_H, WL_LIN_DV};
    const int64_t gv[3] = {T, WL_GDN_HV, WL_LIN_DV}, gate[2] = {T, WL_GDN_HV}, heads[1] = {WL_LIN_H};
    const int64_t per_seq[1] = {B}, spec[2] = {B, WL_GDN_NUM_SPEC + 1};
    for (int32_t b = 0; b < B; b++) {
        w->h_state_indices[b] = b;
        w->h_init[b] = b > 0; /* request 0 starts from a zero state */
        w->h_num_accepted[b] = 1 + (2 * b) % (WL_GDN_NUM_SPEC + 1);
    }
    for (int32_t i = 0; i < spec_slots; i++) w->h_spec[i] = i;

    tensor(&w->lq, randoms(w, (size_t)(T * WL_LIN_H * WL_LIN_DK), 31, 0.0f), ATTNRT_F32, 3, qk);
    tensor(&w->lk, randoms(w, (size_t)(T * WL_LIN_H * WL_LIN_DK), 32, 0.0f), ATTNRT_F32, 3, qk);
    tensor(&w->lv, randoms(w, (size_t)(T * WL_LIN_H * WL_LIN_DV), 33, 0.0f), ATTNRT_F32, 3, lv);
    tensor(&w->lout, randoms(w, (size_t)(T * WL_LIN_H * WL_LIN_DV), 34, 0.0f), ATTNRT_F32, 3, lv);
    tensor(&w->slopes, randoms(w, WL_LIN_H, 35, 1.5f), ATTNRT_F32, 1, heads);
    tensor(&w->gv, randoms(w, (size_t)(T * WL_GDN_HV * WL_LIN_DV), 36, 0.0f), ATTNRT_F32, 3, gv);
    tensor(&w->g, randoms(w, (size_t)(T * WL_GDN_HV), 37, -1.5f), ATTNRT_F32, 2, gate); /* log decay < 0 */
    tensor(&w->beta, randoms(w, (size_t)(T * WL_GDN_HV), 38, 0.0f), ATTNRT_F32, 2, gate);
    tensor(&w->gout, randoms(w, (size_t)(T * WL_GDN_HV * WL_LIN_DV), 39, 0.0f), ATTNRT_F32, 3, gv);
    tensor(&w->state_indices, upload(w, w->h_state_indices, (size_t)B * sizeof(int32_t)), ATTNRT_I32, 1, per_seq);
    void *init = upload(w, w->h_init, (size_t)B);
    tensor(&w->lin_init, init, ATTNRT_BOOL, 1, per_seq);
    tensor(&w->gdn_init, init, ATTNRT_U8, 1, per_seq);
    tensor(&w->spec, upload(w, w->h_spec, (size_t)spec_slots * sizeof(int32_t)), ATTNRT_I32, 2, spec);
    tensor(&w->num_accepted, upload(w, w->h_num_accepted, (size_t)B * sizeof(int32_t)), ATTNRT_I32, 1, per_seq);

    w->lin_pool = pool_with_slots(w, WL_LIN_H, B + 2, B, &w->lin_state, 41);
    w->gdn_pool = pool_with_slots(w, WL_GDN_HV, spec_slots + 1, spec_slots, &w->gdn_state, 42);

    w->lin_batch = (attnrt_batch_host_t){sizeof w->lin_batch, B, w->h_qsl, w->h_seq_lens, NULL, 0};
    w->lin_states = (attnrt_state_host_t){sizeof w->lin_states, w->h_state_indices, w->h_init, NULL, NULL, 0};
    w->gdn_states = w->lin_states;
    w->gdn_spec_states = (attnrt_state_host_t){sizeof w->gdn_spec_states, w->h_state_indices, w->h_init, w->h_spec,
                                               w->h_num_accepted, WL_GDN_NUM_SPEC};
    w->lin = (attnrt_lightning_args_t){.struct_size = sizeof w->lin, .query = &w->lq, .key = &w->lk,
                                       .value = &w->lv, .out = &w->lout, .slopes = &w->slopes,
                                       .state = &w->lin_state, .query_start_loc = &w->qsl,
                                       .state_indices = &w->state_indices, .has_initial_state = &w->lin_init};
    w->gdn = (attnrt_gated_delta_args_t){.struct_size = sizeof w->gdn, .query = &w->lq, .key = &w->lk,
                                         .value = &w->gv, .g = &w->g, .beta = &w->beta, .out = &w->gout,
                                         .state = &w->gdn_state, .query_start_loc = &w->qsl,
                                         .state_indices = &w->state_indices, .has_initial_state = &w->gdn_init,
                                         .use_l2norm = 1};
    w->gdn_spec = w->gdn;
    w->gdn_spec.spec_state_indices = &w->spec;
    w->gdn_spec.num_accepted = &w->num_accepted;
}

void wl_new(const wl_shape_t *shape, wl_t **out)
{
    wl_t *w = calloc(1, sizeof *w);
    assert_non_null(w);
    *out = w; /* before anything can fail: the caller's teardown frees what was made */
    w->shape = *shape;
    if (shape->profile) {
        attnrt_device_attribute_t o = {.struct_size = sizeof o};
        snprintf(o.key, sizeof o.key, "profile");
        snprintf(o.value, sizeof o.value, "%s", shape->profile);
        WL_OK(attnrt_open_with_options(shape->device, &o, 1, &w->ctx));
    } else {
        WL_OK(attnrt_open(shape->device, &w->ctx));
    }
    build_batch(w);
    build_attention(w);
    if (shape->more_ops) {
        build_mla(w);
        build_linear(w);
    }
}

int wl_free(wl_t *w)
{
    if (!w) return 0;
    int bad = attnrt_state_pool_destroy(w->lin_pool) != ATTNRT_OK;
    bad |= attnrt_state_pool_destroy(w->gdn_pool) != ATTNRT_OK;
    for (int i = 0; i < w->num_bufs; i++) bad |= attnrt_mem_free(w->ctx, w->bufs[i]) != ATTNRT_OK;
    if (attnrt_close(w->ctx) != ATTNRT_OK) {
        print_error("workload: attnrt_close: %s\n", attnrt_last_error());
        bad = 1;
    }
    free(w->h_block_table);
    free(w->h_slots);
    free(w->h_indices);
    free(w);
    return bad ? -1 : 0;
}
