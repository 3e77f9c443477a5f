#include "thr_work.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const thr_device_t thr_devices[] = {
    {"cpu:0", NULL, NULL, 16},
#ifdef THR_NPU_SIM
    {"npu_sim:0", "profile", "rbln-rebel100", 512}, /* vLLM-path block sizes from 512 */
#endif
};
const unsigned thr_device_count = sizeof thr_devices / sizeof thr_devices[0];

attnrt_status_t thr_check(thr_report_t *r, attnrt_status_t status, const char *where)
{
    if (status != ATTNRT_OK && r->status == ATTNRT_OK) {
        r->status = status;
        snprintf(r->where, sizeof r->where, "%s", where);
        snprintf(r->error, sizeof r->error, "%s", attnrt_last_error());
    }
    return status;
}

typedef struct thr_start {
    pthread_barrier_t *barrier;
    void (*fn)(unsigned i, void *arg);
    void    *arg;
    unsigned i;
} thr_start_t;

static void *thr_main(void *p)
{
    thr_start_t *s = p;
    pthread_barrier_wait(s->barrier);
    s->fn(s->i, s->arg);
    return NULL;
}

void thr_run(unsigned n, void (*fn)(unsigned i, void *arg), void *arg)
{
    pthread_barrier_t barrier;
    pthread_t *t = calloc(n, sizeof *t);
    thr_start_t *s = calloc(n, sizeof *s);
    if (!t || !s || pthread_barrier_init(&barrier, NULL, n) != 0) abort();
    for (unsigned i = 0; i < n; i++) {
        s[i] = (thr_start_t){&barrier, fn, arg, i};
        if (pthread_create(&t[i], NULL, thr_main, &s[i]) != 0) abort();
    }
    for (unsigned i = 0; i < n; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    free(t);
    free(s);
}

attnrt_status_t thr_open(const thr_device_t *dev, attnrt_context_t **ctx)
{
    if (!dev->option_key) return attnrt_open(dev->name, ctx);
    attnrt_device_attribute_t o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    snprintf(o.key, sizeof o.key, "%s", dev->option_key);
    snprintf(o.value, sizeof o.value, "%s", dev->option_value);
    return attnrt_open_with_options(dev->name, &o, 1, ctx);
}

/* Inputs in [-1, 1), never zero. */
static float next_input(uint32_t *seed)
{
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f + 1.0f / 65536.0f;
}

static attnrt_status_t upload_random(attnrt_context_t *ctx, void *dev, size_t count, uint32_t seed)
{
    float *host = malloc(count * sizeof *host);
    if (!host) return ATTNRT_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; i++) host[i] = next_input(&seed);
    attnrt_status_t st = attnrt_mem_copy_to_device(ctx, dev, host, count * sizeof *host, NULL);
    free(host);
    return st;
}

#define THR_TRY(expr)                          \
    do {                                       \
        attnrt_status_t thr_st_ = (expr);      \
        if (thr_st_ != ATTNRT_OK) return thr_st_; \
    } while (0)

attnrt_status_t thr_work_make(thr_work_t *w, attnrt_context_t *ctx, uint32_t block_size, uint32_t seed)
{
    enum { B = 2, COLS = 3, NUM_BLOCKS = 5 };
    const attnrt_dtype_t f32 = ATTNRT_F32, i32 = ATTNRT_I32;
    memset(w, 0, sizeof *w);
    w->ctx = ctx;
    /* request 0: decode at 2 blocks + 5; request 1: a 2-token prefill at 1 block + 4 */
    const int32_t qsl[B + 1] = {0, 1, THR_T}, seq_lens[B] = {(int32_t)block_size * 2 + 5, (int32_t)block_size + 4};
    const int32_t table[B * COLS] = {0, 1, 2, 3, 4, 0};
    memcpy(w->h_qsl, qsl, sizeof qsl);
    memcpy(w->h_seq_lens, seq_lens, sizeof seq_lens);
    memcpy(w->h_block_table, table, sizeof table);
    const size_t act = (size_t)THR_OUT, cache = (size_t)NUM_BLOCKS * block_size * THR_HKV * THR_D;
    const size_t bytes[7] = {act * 4, cache * 4, cache * 4, sizeof table, sizeof qsl, sizeof seq_lens, act * 4};
    for (int i = 0; i < 7; i++) THR_TRY(attnrt_mem_alloc(ctx, bytes[i], &w->buf[i]));
    THR_TRY(upload_random(ctx, w->buf[0], act, seed));
    THR_TRY(upload_random(ctx, w->buf[1], cache, seed + 1));
    THR_TRY(upload_random(ctx, w->buf[2], cache, seed + 2));
    THR_TRY(attnrt_mem_copy_to_device(ctx, w->buf[3], table, sizeof table, NULL));
    THR_TRY(attnrt_mem_copy_to_device(ctx, w->buf[4], qsl, sizeof qsl, NULL));
    THR_TRY(attnrt_mem_copy_to_device(ctx, w->buf[5], seq_lens, sizeof seq_lens, NULL));

    const int64_t act_shape[3] = {THR_T, THR_HQ, THR_D}, cache_shape[4] = {NUM_BLOCKS, block_size, THR_HKV, THR_D};
    const int64_t table_shape[2] = {B, COLS}, qsl_shape[1] = {B + 1}, per_seq[1] = {B};
    THR_TRY(attnrt_tensor_init(&w->query, w->buf[0], f32, 3, act_shape));
    THR_TRY(attnrt_tensor_init(&w->key_cache, w->buf[1], f32, 4, cache_shape));
    THR_TRY(attnrt_tensor_init(&w->value_cache, w->buf[2], f32, 4, cache_shape));
    THR_TRY(attnrt_tensor_init(&w->block_table, w->buf[3], i32, 2, table_shape));
    THR_TRY(attnrt_tensor_init(&w->qsl, w->buf[4], i32, 1, qsl_shape));
    THR_TRY(attnrt_tensor_init(&w->seq_lens, w->buf[5], i32, 1, per_seq));
    THR_TRY(attnrt_tensor_init(&w->out, w->buf[6], f32, 3, act_shape));
    memset(&w->args, 0, sizeof w->args);
    w->args.struct_size = sizeof w->args;
    w->args.query = &w->query;
    w->args.key_cache = &w->key_cache;
    w->args.value_cache = &w->value_cache;
    w->args.block_table = &w->block_table;
    w->args.query_start_loc = &w->qsl;
    w->args.seq_lens = &w->seq_lens;
    w->args.out = &w->out;
    w->args.causal = 1;
    w->batch = (attnrt_batch_host_t){sizeof w->batch, B, w->h_qsl, w->h_seq_lens, w->h_block_table, COLS};
    THR_TRY(attnrt_attention_plan(ctx, &w->args, &w->batch, &w->plan));
    THR_TRY(attnrt_plan_workspace_size(w->plan, &w->workspace_bytes));
    if (w->workspace_bytes) THR_TRY(attnrt_mem_alloc(ctx, w->workspace_bytes, &w->buf[7]));
    return ATTNRT_OK;
}

attnrt_status_t thr_work_run(thr_work_t *w, attnrt_stream_t *stream, float out[THR_OUT])
{
    THR_TRY(attnrt_mem_set(w->ctx, w->buf[6], 0, THR_OUT * sizeof(float), stream));
    THR_TRY(attnrt_attention_run(w->plan, &w->args, w->buf[7], w->workspace_bytes, stream));
    THR_TRY(attnrt_stream_synchronize(w->ctx, stream));
    return attnrt_mem_copy_to_host(w->ctx, out, w->buf[6], THR_OUT * sizeof(float), NULL);
}

void thr_work_free(thr_work_t *w)
{
    if (w->plan) attnrt_plan_destroy(w->plan);
    for (int i = 0; i < 8; i++)
        if (w->buf[i]) attnrt_mem_free(w->ctx, w->buf[i]);
    memset(w, 0, sizeof *w);
}
