/* test_ops_concurrent_runs: one plan run by 8 threads at once, each on its own stream with its own
 * query and outputs (for the state ops its own state pool of the same layout and slots; where the
 * plan has a workspace, its own workspace), on every device attnrt_device_count lists, for every plan
 * kind: paged attention, cascade, MLA, lightning and gated delta. The ABI lets runs of one plan race
 * on distinct streams, so no plugin may keep state that a run writes in the plan or the device. Every
 * thread's result must equal, byte for byte, a single run of the same inputs; each thread has its own
 * query, so a run that used another's scratch shows. A kind a device does not support is listed, not
 * run; the CI's devices, cpu:0 and npu_sim:0, must both have been tested. */
#include <pthread.h>
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

enum {
    THREADS = 8,
    ROUNDS = 3,
    B = 3,           /* a prefill of 20 tokens (seq 40) and two decodes (seq 1200, 700): long enough to split */
    T = 22,
    HQ = 8,
    HKV = 2,
    D = 64,
    PREFIX_LEN = 48, /* cascade: one prefix shared by every request */
    MLA_KV = 96,
    MLA_V = 64,
    LIN_H = 4,       /* lightning heads; gated delta: LIN_H / 2 key heads, LIN_H value heads */
    LIN_DK = 32,
    LIN_DV = 32,
    SLOTS = 4,       /* state pool slots; 0..B-1 allocated */
    MAX_BUFS = 64,
    MAX_DEVICES = 16,
};

static const int32_t h_qsl[B + 1] = {0, 20, 21, 22};
static const int32_t h_seq[B] = {40, 1200, 700};
static const int32_t h_state_idx[B] = {0, 1, 2};
static const uint8_t h_has_init[B] = {0, 1, 1};

/* What one device is tested with: the first block size, dtype and LSE it supports for paged attention. */
typedef struct config {
    int            bs, lse;
    attnrt_dtype_t dt;
} config_t;

/* A device region a run writes, compared with the single run's copy. */
typedef struct region {
    const char *what;
    void       *dev;
    size_t      bytes;
    const void *init; /* host contents it starts from (a state); NULL: poisoned (NaN) before each run */
    void       *ref;
} region_t;

typedef struct job job_t;

/* One thread's own buffers, args and stream. */
typedef struct slot {
    job_t                    *job;
    void                     *query, *out, *lse, *ws;
    attnrt_state_pool_t      *pool;
    attnrt_tensor_t           t_query, t_out, t_lse, t_state;
    attnrt_attention_args_t   att;
    attnrt_cascade_args_t     cas;
    attnrt_mla_args_t         mla;
    attnrt_lightning_args_t   lin;
    attnrt_gated_delta_args_t gdn;
    region_t                  regions[3];
    int                       num_regions;
    attnrt_stream_t          *stream;
    attnrt_status_t           status;
    char                      msg[512];
} slot_t;

typedef struct kind {
    const char *name;
    /* Builds the shared inputs and every slot's own, then the plan (with slot 0's args). */
    attnrt_status_t (*plan)(job_t *j);
    attnrt_status_t (*run)(job_t *j, slot_t *s, attnrt_stream_t *stream);
} kind_t;

struct job {
    const kind_t      *kind;
    attnrt_context_t  *ctx;
    const char        *device;
    config_t           cfg;
    void              *bufs[MAX_BUFS];
    int                num_bufs;
    /* shared inputs */
    attnrt_tensor_t    key_cache, value_cache, block_table, qsl, seq_lens, prefix_bt, prefix_sl, mla_cache;
    attnrt_tensor_t    key, value, slopes, g, beta, state_idx, has_init;
    int32_t           *h_bt, h_prefix_bt[4], h_prefix_sl[B];
    int                bt_cols, num_blocks;
    attnrt_batch_host_t   batch, prefix_batch;
    attnrt_cascade_host_t cas_host;
    attnrt_state_host_t   states;
    float                *state_template; /* host: every slot's initial state */
    size_t                state_bytes;
    attnrt_plan_t        *plan;
    size_t                ws_bytes;
    slot_t                slots[THREADS];
    pthread_barrier_t     barrier;
};

/* Devices and how many kinds each was tested with (the plan made), for the coverage test at the end. */
static char g_devices[MAX_DEVICES][64];
static int  g_kinds_tested[MAX_DEVICES];
static int  g_num_devices;

/* One cmocka test: a kind on a device. */
typedef struct kind_on_device {
    const kind_t *kind;
    int           device;
    char          name[128];
} kind_on_device_t;

static uint64_t g_rng;
static double rnd(void) /* [-1, 1) */
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

#define OK(call)                                                                                        \
    do {                                                                                                \
        attnrt_status_t st_ = (call);                                                                   \
        if (st_ != ATTNRT_OK)                                                                           \
            fail_msg("%s returned %s: %s", #call, attnrt_status_name(st_), attnrt_last_error());         \
    } while (0)

static void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dt, int32_t ndim, const int64_t *shape)
{
    OK(attnrt_tensor_init(t, data, dt, ndim, shape));
}

static void *dev_alloc(job_t *j, size_t bytes)
{
    void *p = NULL;
    OK(attnrt_mem_alloc(j->ctx, bytes, &p));
    assert_true(j->num_bufs < MAX_BUFS);
    j->bufs[j->num_bufs++] = p;
    return p;
}

static void *dev_upload(job_t *j, const void *host, size_t bytes)
{
    void *p = dev_alloc(j, bytes);
    OK(attnrt_mem_copy_to_device(j->ctx, p, host, bytes, NULL));
    return p;
}

/* n values in [lo, hi) of dtype dt (f16, bf16 or f32) on the device, from the seed. */
static void *dev_values(job_t *j, attnrt_dtype_t dt, size_t n, uint64_t seed, double lo, double hi)
{
    const size_t es = attnrt_dtype_size(dt);
    unsigned char *h = malloc(n * es);
    assert_non_null(h);
    g_rng = 0x9e3779b97f4a7c15ull ^ (seed * 0xbf58476d1ce4e5b9ull);
    for (size_t i = 0; i < n; i++) {
        const double x = lo + (hi - lo) * 0.5 * (rnd() + 1.0);
        if (es == 4) {
            const float f = (float)x;
            memcpy(h + i * 4, &f, 4);
        } else {
            const uint16_t b = dt.code == ATTNRT_F16.code ? ref_double_to_f16(x) : ref_double_to_bf16(x);
            memcpy(h + i * 2, &b, 2);
        }
    }
    void *p = dev_upload(j, h, n * es);
    free(h);
    return p;
}

static void add_region(slot_t *s, const char *what, void *dev, size_t bytes, const void *init)
{
    region_t *r = &s->regions[s->num_regions++];
    r->what = what;
    r->dev = dev;
    r->bytes = bytes;
    r->init = init;
    r->ref = malloc(bytes);
    assert_non_null(r->ref);
}

/* ---- shared inputs ---------------------------------------------------------------------------- */

/* Paged caches, block table (blocks in reverse, so no request reads them in order), query_start_loc,
 * seq_lens; the cascade's prefix blocks after the requests'. */
static void make_paged_inputs(job_t *j, int kv_dim_k, int kv_dim_v, int kv_heads, attnrt_tensor_t *kc,
                              attnrt_tensor_t *vc)
{
    const int bs = j->cfg.bs;
    int used = 0;
    j->bt_cols = 1;
    for (int b = 0; b < B; b++) {
        const int nb = (h_seq[b] + bs - 1) / bs;
        used += nb;
        if (nb > j->bt_cols) j->bt_cols = nb;
    }
    const int prefix_blocks = (PREFIX_LEN + bs - 1) / bs;
    j->num_blocks = used + prefix_blocks + 1;
    j->h_bt = calloc((size_t)B * (unsigned)j->bt_cols, sizeof *j->h_bt);
    assert_non_null(j->h_bt);
    for (int b = 0, next = 0; b < B; b++)
        for (int k = 0; k < (h_seq[b] + bs - 1) / bs; k++) j->h_bt[b * j->bt_cols + k] = used - 1 - next++;
    for (int k = 0; k < prefix_blocks; k++) j->h_prefix_bt[k] = used + k;
    for (int b = 0; b < B; b++) j->h_prefix_sl[b] = PREFIX_LEN;

    const int64_t ks[4] = {j->num_blocks, bs, kv_heads, kv_dim_k}, vs[4] = {j->num_blocks, bs, kv_heads, kv_dim_v};
    const size_t rows = (size_t)j->num_blocks * (size_t)bs * (size_t)kv_heads;
    tensor(kc, dev_values(j, j->cfg.dt, rows * (size_t)kv_dim_k, 1, -1.0, 1.0), j->cfg.dt, 4, ks);
    if (vc) tensor(vc, dev_values(j, j->cfg.dt, rows * (size_t)kv_dim_v, 2, -1.0, 1.0), j->cfg.dt, 4, vs);
    const int64_t bts[2] = {B, j->bt_cols}, qsls[1] = {B + 1}, sls[1] = {B}, pbts[2] = {B, prefix_blocks};
    tensor(&j->block_table, dev_upload(j, j->h_bt, (size_t)(B * j->bt_cols) * 4), ATTNRT_I32, 2, bts);
    tensor(&j->qsl, dev_upload(j, h_qsl, sizeof h_qsl), ATTNRT_I32, 1, qsls);
    tensor(&j->seq_lens, dev_upload(j, h_seq, sizeof h_seq), ATTNRT_I32, 1, sls);
    tensor(&j->prefix_bt, dev_upload(j, j->h_prefix_bt, (size_t)prefix_blocks * 4), ATTNRT_I32, 2, pbts);
    j->prefix_bt.strides[0] = 0; /* one prefix row for every request */
    tensor(&j->prefix_sl, dev_upload(j, j->h_prefix_sl, sizeof j->h_prefix_sl), ATTNRT_I32, 1, sls);
    j->batch = (attnrt_batch_host_t){sizeof j->batch, B, h_qsl, h_seq, j->h_bt, j->bt_cols};
    j->prefix_batch = (attnrt_batch_host_t){sizeof j->prefix_batch, B, h_qsl, j->h_prefix_sl, j->h_prefix_bt, 0};
    j->cas_host = (attnrt_cascade_host_t){sizeof j->cas_host, &j->prefix_batch, &j->batch};
}

/* Slot t's own query [T, q_heads, q_dim] (seeded by t), out [T, out_heads, out_dim] and LSE [T, q_heads]. */
static void make_slot_io(job_t *j, int t, int q_heads, int q_dim, int out_heads, int out_dim, int with_lse)
{
    slot_t *s = &j->slots[t];
    const int64_t qs[3] = {T, q_heads, q_dim}, os[3] = {T, out_heads, out_dim}, ls[2] = {T, q_heads};
    const size_t es = attnrt_dtype_size(j->cfg.dt), out_bytes = (size_t)(T * out_heads * out_dim) * es;
    s->job = j;
    s->query = dev_values(j, j->cfg.dt, (size_t)(T * q_heads * q_dim), 100 + (uint64_t)t, -1.0, 1.0);
    s->out = dev_alloc(j, out_bytes);
    tensor(&s->t_query, s->query, j->cfg.dt, 3, qs);
    tensor(&s->t_out, s->out, j->cfg.dt, 3, os);
    add_region(s, "out", s->out, out_bytes, NULL);
    if (with_lse) {
        s->lse = dev_alloc(j, (size_t)(T * q_heads) * 4);
        tensor(&s->t_lse, s->lse, ATTNRT_F32, 2, ls);
        add_region(s, "lse", s->lse, (size_t)(T * q_heads) * 4, NULL);
    }
}

/* ---- the kinds -------------------------------------------------------------------------------- */

static void make_attention(job_t *j)
{
    make_paged_inputs(j, D, D, HKV, &j->key_cache, &j->value_cache);
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        make_slot_io(j, t, HQ, D, HQ, D, j->cfg.lse);
        s->att = (attnrt_attention_args_t){.struct_size = sizeof s->att, .query = &s->t_query,
                                           .key_cache = &j->key_cache, .value_cache = &j->value_cache,
                                           .block_table = &j->block_table, .query_start_loc = &j->qsl,
                                           .seq_lens = &j->seq_lens, .out = &s->t_out,
                                           .lse = j->cfg.lse ? &s->t_lse : NULL, .causal = 1};
        s->cas = (attnrt_cascade_args_t){sizeof s->cas, &s->att, &j->prefix_bt, &j->prefix_sl};
    }
}

static attnrt_status_t attention_plan(job_t *j)
{
    make_attention(j);
    return attnrt_attention_plan(j->ctx, &j->slots[0].att, &j->batch, &j->plan);
}

static attnrt_status_t attention_run(job_t *j, slot_t *s, attnrt_stream_t *stream)
{
    return attnrt_attention_run(j->plan, &s->att, s->ws, j->ws_bytes, stream);
}

static attnrt_status_t cascade_plan(job_t *j)
{
    make_attention(j);
    return attnrt_cascade_plan(j->ctx, &j->slots[0].cas, &j->cas_host, &j->plan);
}

static attnrt_status_t cascade_run(job_t *j, slot_t *s, attnrt_stream_t *stream)
{
    return attnrt_cascade_run(j->plan, &s->cas, s->ws, j->ws_bytes, stream);
}

static attnrt_status_t mla_plan(job_t *j)
{
    make_paged_inputs(j, MLA_KV, MLA_KV, 1, &j->mla_cache, NULL);
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        make_slot_io(j, t, HQ, MLA_KV, HQ, MLA_V, j->cfg.lse);
        s->mla = (attnrt_mla_args_t){.struct_size = sizeof s->mla, .query = &s->t_query, .kv_cache = &j->mla_cache,
                                     .block_table = &j->block_table, .query_start_loc = &j->qsl,
                                     .seq_lens = &j->seq_lens, .out = &s->t_out, .lse = j->cfg.lse ? &s->t_lse : NULL,
                                     .scale = 0.125f, .causal = 1};
    }
    return attnrt_mla_plan(j->ctx, &j->slots[0].mla, &j->batch, &j->plan);
}

static attnrt_status_t mla_run(job_t *j, slot_t *s, attnrt_stream_t *stream)
{
    return attnrt_mla_run(j->plan, &s->mla, s->ws, j->ws_bytes, stream);
}

/* The linear ops' shared inputs and each slot's pool (slots 0..B-1 allocated, as in slot 0's). */
static void make_linear(job_t *j, int key_heads, int value_heads)
{
    const int64_t qs[1] = {B + 1}, per_seq[1] = {B}, heads[1] = {value_heads};
    const int64_t ks[3] = {T, key_heads, LIN_DK}, vs[3] = {T, value_heads, LIN_DV}, gs[2] = {T, value_heads};
    const int64_t slot_shape[3] = {value_heads, LIN_DK, LIN_DV};
    tensor(&j->qsl, dev_upload(j, h_qsl, sizeof h_qsl), ATTNRT_I32, 1, qs);
    tensor(&j->key, dev_values(j, j->cfg.dt, (size_t)(T * key_heads * LIN_DK), 3, -1.0, 1.0), j->cfg.dt, 3, ks);
    tensor(&j->value, dev_values(j, j->cfg.dt, (size_t)(T * value_heads * LIN_DV), 4, -1.0, 1.0), j->cfg.dt, 3, vs);
    tensor(&j->slopes, dev_values(j, ATTNRT_F32, (size_t)value_heads, 5, 0.1, 1.0), ATTNRT_F32, 1, heads);
    tensor(&j->g, dev_values(j, ATTNRT_F32, (size_t)(T * value_heads), 6, -1.0, -0.05), ATTNRT_F32, 2, gs);
    tensor(&j->beta, dev_values(j, ATTNRT_F32, (size_t)(T * value_heads), 7, 0.05, 1.0), ATTNRT_F32, 2, gs);
    tensor(&j->state_idx, dev_upload(j, h_state_idx, sizeof h_state_idx), ATTNRT_I32, 1, per_seq);
    tensor(&j->has_init, dev_upload(j, h_has_init, sizeof h_has_init), ATTNRT_U8, 1, per_seq);
    j->batch = (attnrt_batch_host_t){sizeof j->batch, B, h_qsl, h_seq, NULL, 0};
    j->states = (attnrt_state_host_t){sizeof j->states, h_state_idx, h_has_init, NULL, NULL, 0};

    j->state_bytes = (size_t)SLOTS * (size_t)(value_heads * LIN_DK * LIN_DV) * sizeof(float);
    j->state_template = malloc(j->state_bytes);
    assert_non_null(j->state_template);
    g_rng = 0x51ed2701;
    for (size_t i = 0; i < j->state_bytes / sizeof(float); i++) j->state_template[i] = (float)(0.5 * rnd());
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        make_slot_io(j, t, key_heads, LIN_DK, value_heads, LIN_DV, 0);
        OK(attnrt_state_pool_create(j->ctx, ATTNRT_F32, 3, slot_shape, SLOTS, &s->pool));
        for (int b = 0; b < B; b++) {
            int32_t id = -1;
            OK(attnrt_state_slot_alloc(s->pool, &id));
            assert_int_equal(id, b);
        }
        s->t_state.struct_size = sizeof s->t_state;
        OK(attnrt_state_pool_tensor(s->pool, &s->t_state));
        add_region(s, "state pool", s->t_state.data, j->state_bytes, j->state_template);
    }
}

static attnrt_status_t lightning_plan(job_t *j)
{
    make_linear(j, LIN_H, LIN_H);
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        s->lin = (attnrt_lightning_args_t){.struct_size = sizeof s->lin, .query = &s->t_query, .key = &j->key,
                                           .value = &j->value, .out = &s->t_out, .slopes = &j->slopes,
                                           .state = &s->t_state, .query_start_loc = &j->qsl,
                                           .state_indices = &j->state_idx, .has_initial_state = &j->has_init};
    }
    return attnrt_lightning_plan(j->ctx, &j->slots[0].lin, &j->batch, &j->states, j->slots[0].pool, &j->plan);
}

static attnrt_status_t lightning_run(job_t *j, slot_t *s, attnrt_stream_t *stream)
{
    return attnrt_lightning_run(j->plan, &s->lin, s->ws, j->ws_bytes, stream);
}

static attnrt_status_t gated_delta_plan(job_t *j)
{
    make_linear(j, LIN_H / 2, LIN_H);
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        s->gdn = (attnrt_gated_delta_args_t){.struct_size = sizeof s->gdn, .query = &s->t_query, .key = &j->key,
                                             .value = &j->value, .g = &j->g, .beta = &j->beta, .out = &s->t_out,
                                             .state = &s->t_state, .query_start_loc = &j->qsl,
                                             .state_indices = &j->state_idx, .has_initial_state = &j->has_init,
                                             .use_l2norm = 1};
    }
    return attnrt_gated_delta_plan(j->ctx, &j->slots[0].gdn, &j->batch, &j->states, j->slots[0].pool, &j->plan);
}

static attnrt_status_t gated_delta_run(job_t *j, slot_t *s, attnrt_stream_t *stream)
{
    return attnrt_gated_delta_run(j->plan, &s->gdn, s->ws, j->ws_bytes, stream);
}

static const kind_t k_attention = {"paged attention", attention_plan, attention_run};
static const kind_t k_cascade = {"cascade", cascade_plan, cascade_run};
static const kind_t k_mla = {"MLA", mla_plan, mla_run};
static const kind_t k_lightning = {"lightning", lightning_plan, lightning_run};
static const kind_t k_gated_delta = {"gated delta", gated_delta_plan, gated_delta_run};

/* ---- the driver --------------------------------------------------------------------------------- */

/* Outputs poisoned (NaN), states back to their start, on the default stream (complete on return). */
static void reset_slot(job_t *j, slot_t *s)
{
    for (int r = 0; r < s->num_regions; r++) {
        const region_t *g = &s->regions[r];
        if (g->init)
            OK(attnrt_mem_copy_to_device(j->ctx, g->dev, g->init, g->bytes, NULL));
        else
            OK(attnrt_mem_set(j->ctx, g->dev, 0xff, g->bytes, NULL));
    }
}

static void *worker_main(void *arg)
{
    slot_t *s = arg;
    job_t *j = s->job;
    pthread_barrier_wait(&j->barrier);
    s->status = j->kind->run(j, s, s->stream);
    if (s->status == ATTNRT_OK) s->status = attnrt_stream_synchronize(j->ctx, s->stream);
    if (s->status != ATTNRT_OK) snprintf(s->msg, sizeof s->msg, "%s", attnrt_last_error());
    return NULL;
}

/* Every slot's run at once (a barrier), each on its own stream; then every result against the reference. */
static void concurrent_round(job_t *j, int round)
{
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) reset_slot(j, &j->slots[t]);
    assert_int_equal(pthread_barrier_init(&j->barrier, NULL, THREADS), 0);
    for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, worker_main, &j->slots[t]), 0);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    pthread_barrier_destroy(&j->barrier);
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        if (s->status != ATTNRT_OK)
            fail_msg("%s %s, round %d, thread %d: the run returned %s: %s", j->device, j->kind->name, round, t,
                     attnrt_status_name(s->status), s->msg);
        for (int r = 0; r < s->num_regions; r++) {
            const region_t *g = &s->regions[r];
            unsigned char *got = malloc(g->bytes);
            assert_non_null(got);
            OK(attnrt_mem_copy_to_host(j->ctx, got, g->dev, g->bytes, NULL));
            size_t at = 0;
            while (at < g->bytes && got[at] == ((const unsigned char *)g->ref)[at]) at++;
            free(got);
            if (at < g->bytes)
                fail_msg("%s %s, round %d, thread %d: %s differs from a single run's at byte %zu of %zu", j->device,
                         j->kind->name, round, t, g->what, at, g->bytes);
        }
    }
}

static void job_free(job_t *j)
{
    if (j->plan) OK(attnrt_plan_destroy(j->plan));
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        if (s->stream) OK(attnrt_stream_destroy(s->stream));
        if (s->pool) OK(attnrt_state_pool_destroy(s->pool));
        for (int r = 0; r < s->num_regions; r++) free(s->regions[r].ref);
    }
    for (int i = 0; i < j->num_bufs; i++) OK(attnrt_mem_free(j->ctx, j->bufs[i]));
    free(j->h_bt);
    free(j->state_template);
    OK(attnrt_close(j->ctx));
    free(j);
}

/* The configuration a device is tested with (its first supported block size, dtype, LSE), or -1. */
static int choose_config(attnrt_context_t *ctx, config_t *cfg)
{
    static const int sizes[] = {16, 1024};
    const attnrt_dtype_t dts[] = {ATTNRT_F16, ATTNRT_F32};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
            for (int lse = 1; lse >= 0; lse--) {
                attnrt_op_query_t q = {.struct_size = sizeof q, .op = ATTNRT_OP_PAGED_ATTENTION, .q_dtype = dts[d],
                                       .kv_dtype = dts[d], .head_dim_qk = D, .head_dim_v = D,
                                       .block_size = (uint32_t)sizes[i], .num_q_heads = HQ, .num_kv_heads = HKV,
                                       .features = lse ? ATTNRT_FEATURE_LSE : 0u};
                if (attnrt_op_supported(ctx, &q, NULL, 0) == ATTNRT_OK) {
                    *cfg = (config_t){sizes[i], lse, dts[d]};
                    return 0;
                }
            }
    return -1;
}

/* One kind on one device: plan, a single run per slot (the references), then ROUNDS concurrent rounds;
 * a kind the device does not support is listed instead. */
static void concurrent_runs_match_a_single_run(void **state)
{
    const kind_on_device_t *kd = *state;
    const kind_t *k = kd->kind;
    const char *device = g_devices[kd->device];
    job_t *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->kind = k;
    j->device = device;
    OK(attnrt_open(device, &j->ctx));
    if (choose_config(j->ctx, &j->cfg) != 0) fail_msg("%s: no block size of 16 or 1024 for paged attention", device);
    attnrt_status_t st = k->plan(j);
    if (st == ATTNRT_ERR_UNSUPPORTED) {
        printf("  %-10s %-16s not supported: %s\n", device, k->name, attnrt_last_error());
        job_free(j);
        return;
    }
    if (st != ATTNRT_OK) fail_msg("%s %s: plan returned %s: %s", device, k->name, attnrt_status_name(st), attnrt_last_error());
    g_kinds_tested[kd->device]++;
    OK(attnrt_plan_workspace_size(j->plan, &j->ws_bytes));
    for (int t = 0; t < THREADS; t++) {
        slot_t *s = &j->slots[t];
        if (j->ws_bytes) s->ws = dev_alloc(j, j->ws_bytes);
        OK(attnrt_stream_create(j->ctx, &s->stream));
    }
    for (int t = 0; t < THREADS; t++) { /* the references: one run at a time, on the default stream */
        slot_t *s = &j->slots[t];
        reset_slot(j, s);
        OK(k->run(j, s, NULL));
        for (int r = 0; r < s->num_regions; r++)
            OK(attnrt_mem_copy_to_host(j->ctx, s->regions[r].ref, s->regions[r].dev, s->regions[r].bytes, NULL));
    }
    for (int round = 0; round < ROUNDS; round++) concurrent_round(j, round);
    printf("  %-10s %-16s %d threads x %d rounds bit-exact (block %d, %s%s, workspace %zu B)\n", device, k->name,
           THREADS, ROUNDS, j->cfg.bs, attnrt_dtype_name(j->cfg.dt), j->slots[0].lse ? ", lse" : "", j->ws_bytes);
    job_free(j);
}

/* The CI's two devices must have been tested with at least one kind each (a build or a plugin that lost
 * one of them fails here). */
static void the_cpu_and_npu_sim_devices_were_tested(void **state)
{
    (void)state;
    static const char *required[] = {"cpu:0", "npu_sim:0"};
    printf("  devices tested:");
    for (int d = 0; d < g_num_devices; d++) printf(" %s (%d kinds)", g_devices[d], g_kinds_tested[d]);
    printf("\n");
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        int tested = 0;
        for (int d = 0; d < g_num_devices; d++)
            if (!strcmp(g_devices[d], required[i])) tested = g_kinds_tested[d];
        if (!tested) fail_msg("%s was not tested: attnrt_device_count does not list it, or it planned no kind",
                              required[i]);
    }
}

int main(void)
{
    /* Several pool participants on any machine, so that the cpu plugin splits the long decodes. */
    setenv("ATTNRT_NUM_THREADS", "4", 1);
    uint32_t n = 0;
    if (attnrt_device_count(&n) != ATTNRT_OK) {
        fprintf(stderr, "attnrt_device_count: %s\n", attnrt_last_error());
        return 1;
    }
    for (uint32_t i = 0; i < n && g_num_devices < MAX_DEVICES; i++) {
        attnrt_device_properties_t p;
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        if (attnrt_device_get_properties(i, &p) != ATTNRT_OK) {
            fprintf(stderr, "attnrt_device_get_properties(%u): %s\n", i, attnrt_last_error());
            return 1;
        }
        snprintf(g_devices[g_num_devices++], sizeof g_devices[0], "%s", p.name);
    }
    static const kind_t *const kinds[] = {&k_attention, &k_cascade, &k_mla, &k_lightning, &k_gated_delta};
    enum { KINDS = sizeof kinds / sizeof kinds[0] };
    static kind_on_device_t cases[KINDS * MAX_DEVICES];
    static struct CMUnitTest tests[KINDS * MAX_DEVICES + 1];
    size_t n_tests = 0;
    for (int k = 0; k < KINDS; k++)
        for (int d = 0; d < g_num_devices; d++) {
            kind_on_device_t *c = &cases[n_tests];
            *c = (kind_on_device_t){kinds[k], d, ""};
            snprintf(c->name, sizeof c->name, "concurrent %.24s runs match a single run on %.63s", kinds[k]->name,
                     g_devices[d]);
            tests[n_tests++] = (struct CMUnitTest){c->name, concurrent_runs_match_a_single_run, NULL, NULL, c};
        }
    tests[n_tests++] = (struct CMUnitTest){"the_cpu_and_npu_sim_devices_were_tested",
                                           the_cpu_and_npu_sim_devices_were_tested, NULL, NULL, NULL};
    const int failed = _cmocka_run_group_tests("concurrent runs", tests, n_tests, NULL, NULL);
    const attnrt_status_t st = attnrt_shutdown();
    if (st != ATTNRT_OK) fprintf(stderr, "attnrt_shutdown: %s\n", attnrt_last_error());
    return failed || st != ATTNRT_OK ? 1 : 0;
}
