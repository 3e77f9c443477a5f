/* bench_ops.c — attnrt-bench's ops: builds each op's tensors on the device (random contents, paged KV
 * in shuffled blocks), times warm-up + iters runs, samples the ceilings between the runs, and counts the
 * bytes and FLOPs a run must move and compute. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define FILL_CHUNK ((size_t)4 << 20)

#define TRY(call)                                                                                          \
    do {                                                                                                   \
        attnrt_status_t st_ = (call);                                                                      \
        if (st_ != ATTNRT_OK) {                                                                            \
            fprintf(stderr, "attnrt-bench: %s: %s: %s\n", #call, attnrt_status_name(st_), attnrt_last_error()); \
            return -1;                                                                                     \
        }                                                                                                  \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bench_stats_of(double *v, int n, bench_stats_t *st)
{
    memset(st, 0, sizeof *st);
    if (n <= 0) return;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    st->n = n;
    st->min = v[0];
    st->max = v[n - 1];
    st->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    st->p10 = v[(n - 1) / 10];
    st->p90 = v[(n - 1) - (n - 1) / 10];
}

/* ---- device buffers with random contents ------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float rnd(void) /* uniform in [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Encodes by truncation (the values only need to be finite and varied). */
static void encode(void *dst, size_t i, float x, attnrt_dtype_t dt)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    const uint32_t sign = b >> 31, e = (b >> 23) & 0xff, m = b & 0x7fffff;
    uint16_t h = (uint16_t)(sign << 15);
    if (e >= 127 - 14) h |= (uint16_t)(((e - 127 + 15) << 10) | (m >> 13));
    switch (dt.bits) {
    case 32: ((float *)dst)[i] = x; break;
    case 16: ((uint16_t *)dst)[i] = dt.code == ATTNRT_F16.code ? h : (uint16_t)(b >> 16); break;
    default: /* fp8: e5m2 is the f16's high byte; e4m3 re-biased */
        if (dt.code == ATTNRT_FP8_E5M2.code)
            ((uint8_t *)dst)[i] = (uint8_t)(h >> 8);
        else
            ((uint8_t *)dst)[i] = (uint8_t)((sign << 7) | (e >= 127 - 6 ? ((e - 127 + 7) << 3) | (m >> 20) : 0));
    }
}

/* A device buffer of `n` elements of dt, random (or zero when `zero`). NULL with a message on failure. */
static void *dev_random(attnrt_context_t *ctx, size_t n, attnrt_dtype_t dt, int zero)
{
    const size_t es = attnrt_dtype_size(dt), bytes = n * es;
    void *d = NULL;
    if (attnrt_mem_alloc(ctx, bytes ? bytes : 1, &d) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-bench: cannot allocate %zu MiB on the device: %s\n", bytes >> 20, attnrt_last_error());
        return NULL;
    }
    if (zero) {
        attnrt_mem_set(ctx, d, 0, bytes, NULL);
        return d;
    }
    const size_t chunk = bytes < FILL_CHUNK ? bytes : FILL_CHUNK, per = chunk / es;
    char *host = malloc(chunk ? chunk : 1);
    if (!host) return NULL;
    for (size_t i = 0; i < per; i++) encode(host, i, rnd(), dt);
    for (size_t at = 0; at < bytes; at += chunk) /* a repeated 4 MiB pattern: enough for timing */
        attnrt_mem_copy_to_device(ctx, (char *)d + at, host, bytes - at < chunk ? bytes - at : chunk, NULL);
    free(host);
    return d;
}

static void *dev_copy(attnrt_context_t *ctx, const void *host, size_t bytes)
{
    void *d = NULL;
    if (attnrt_mem_alloc(ctx, bytes ? bytes : 1, &d) != ATTNRT_OK) return NULL;
    attnrt_mem_copy_to_device(ctx, d, host, bytes, NULL);
    return d;
}

/* ---- paged attention --------------------------------------------------------------------------- */

typedef struct attn_setup {
    attnrt_tensor_t q, kc, vc, bt, qsl, sl, out, scale;
    attnrt_attention_args_t args;
    attnrt_batch_host_t batch;
    int32_t *qsl_h, *sl_h, *bt_h;
    bench_paged_t paged;      /* decode: the blocks the op reads, for the paged-read ceiling (n 0: none) */
    int32_t *paged_blocks;
    bench_res_t res;
    double bytes, flops;
} attn_setup_t;

void *bench_keep(bench_res_t *res, void *p)
{
    if (p && res->nbufs < (int)(sizeof res->bufs / sizeof res->bufs[0])) res->bufs[res->nbufs++] = p;
    return p;
}

attnrt_status_t bench_res_workspace(attnrt_context_t *ctx, bench_res_t *res)
{
    attnrt_status_t st = attnrt_plan_workspace_size(res->plan, &res->ws_bytes);
    if (st == ATTNRT_OK && res->ws_bytes) st = attnrt_mem_alloc(ctx, res->ws_bytes, &res->ws);
    return st;
}

void bench_res_free(attnrt_context_t *ctx, bench_res_t *res)
{
    if (res->plan) attnrt_plan_destroy(res->plan);
    for (int i = 0; i < res->nbufs; i++) attnrt_mem_free(ctx, res->bufs[i]);
    if (res->ws) attnrt_mem_free(ctx, res->ws);
    memset(res, 0, sizeof *res);
}

static void attn_free(attnrt_context_t *ctx, attn_setup_t *s)
{
    bench_res_free(ctx, &s->res);
    free(s->qsl_h), free(s->sl_h), free(s->bt_h), free(s->paged_blocks);
    memset(s, 0, sizeof *s);
}

/* Requests r < n with qlen[r] query tokens over kvlen[r] keys, causal as the options say. */
static int attn_build(attnrt_context_t *ctx, const bench_options_t *o, int64_t n, const int64_t *qlen,
                      const int64_t *kvlen, attn_setup_t *s)
{
    memset(s, 0, sizeof *s);
    const int64_t Hq = o->heads, Hkv = o->kv_heads, D = o->head_dim, bs = o->block_size;
    int64_t T = 0, blocks = 0, max_blocks = 1;
    for (int64_t b = 0; b < n; b++) {
        const int64_t nb = (kvlen[b] + bs - 1) / bs;
        T += qlen[b];
        blocks += nb;
        if (nb > max_blocks) max_blocks = nb;
    }
    s->qsl_h = calloc((size_t)n + 1, sizeof *s->qsl_h);
    s->sl_h = calloc((size_t)n, sizeof *s->sl_h);
    s->bt_h = calloc((size_t)(n * max_blocks), sizeof *s->bt_h);
    int32_t *perm = malloc((size_t)blocks * sizeof *perm);
    if (!s->qsl_h || !s->sl_h || !s->bt_h || !perm) return free(perm), -1;
    for (int64_t i = 0; i < blocks; i++) perm[i] = (int32_t)i;
    for (int64_t i = blocks - 1; i > 0 && o->shuffled; i--) { /* as an engine's allocator leaves them after churn */
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        const int64_t j = (int64_t)(rng % (uint64_t)(i + 1));
        const int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int64_t next = 0;
    const double kv_es = (double)attnrt_dtype_size(o->kv_dtype), q_es = (double)attnrt_dtype_size(o->dtype);
    for (int64_t b = 0; b < n; b++) {
        s->qsl_h[b + 1] = s->qsl_h[b] + (int32_t)qlen[b];
        s->sl_h[b] = (int32_t)kvlen[b];
        for (int64_t k = 0; k < (kvlen[b] + bs - 1) / bs; k++) s->bt_h[b * max_blocks + k] = perm[next++];
        s->bytes += (double)kvlen[b] * (double)Hkv * 2.0 * (double)D * kv_es; /* every key read once */
        for (int64_t i = 0; i < qlen[b]; i++) {
            const int64_t pq = kvlen[b] - qlen[b] + i, kept = o->causal ? (pq + 1 < kvlen[b] ? pq + 1 : kvlen[b]) : kvlen[b];
            s->flops += 2.0 * (double)Hq * 2.0 * (double)D * (double)(kept > 0 ? kept : 0);
        }
    }
    free(perm);
    s->bytes += 2.0 * (double)T * (double)Hq * (double)D * q_es; /* q in, out back */

    const int64_t qshape[3] = {T, Hq, D};
    const int64_t cshape[4] = {blocks, bs, Hkv, D};
    const int64_t btshape[2] = {n, max_blocks}, qslshape[1] = {n + 1}, slshape[1] = {n}, one[1] = {1};
    const size_t cache_elems = (size_t)(blocks * bs * Hkv * D);
    void *q = bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hq * D), o->dtype, 0));
    void *kc = bench_keep(&s->res, dev_random(ctx, cache_elems, o->kv_dtype, 0));
    void *vc = bench_keep(&s->res, dev_random(ctx, cache_elems, o->kv_dtype, 0));
    void *out = bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hq * D), o->dtype, 1));
    void *bt = bench_keep(&s->res, dev_copy(ctx, s->bt_h, (size_t)(n * max_blocks) * sizeof(int32_t)));
    void *qsl = bench_keep(&s->res, dev_copy(ctx, s->qsl_h, (size_t)(n + 1) * sizeof(int32_t)));
    void *sl = bench_keep(&s->res, dev_copy(ctx, s->sl_h, (size_t)n * sizeof(int32_t)));
    const float unit = 1.0f;
    void *scale = bench_keep(&s->res, dev_copy(ctx, &unit, sizeof unit));
    if (s->res.nbufs != 8) return -1;
    TRY(attnrt_tensor_init(&s->q, q, o->dtype, 3, qshape));
    TRY(attnrt_tensor_init(&s->out, out, o->dtype, 3, qshape));
    TRY(attnrt_tensor_init(&s->kc, kc, o->kv_dtype, 4, cshape));
    TRY(attnrt_tensor_init(&s->vc, vc, o->kv_dtype, 4, cshape));
    if (o->hnd) /* [blocks][Hkv][bs][D] in memory, the same logical shape */
        for (attnrt_tensor_t *t = &s->kc; t; t = t == &s->kc ? &s->vc : NULL) {
            t->strides[2] = bs * D;
            t->strides[1] = D;
        }
    TRY(attnrt_tensor_init(&s->bt, bt, ATTNRT_I32, 2, btshape));
    TRY(attnrt_tensor_init(&s->qsl, qsl, ATTNRT_I32, 1, qslshape));
    TRY(attnrt_tensor_init(&s->sl, sl, ATTNRT_I32, 1, slshape));
    TRY(attnrt_tensor_init(&s->scale, scale, ATTNRT_F32, 1, one));
    const int fp8 = o->kv_dtype.bits == 8;
    s->args = (attnrt_attention_args_t){.struct_size = sizeof s->args, .query = &s->q, .key_cache = &s->kc,
                                        .value_cache = &s->vc, .block_table = &s->bt, .query_start_loc = &s->qsl,
                                        .seq_lens = &s->sl, .out = &s->out, .key_scale = fp8 ? &s->scale : NULL,
                                        .value_scale = fp8 ? &s->scale : NULL, .causal = o->causal};
    s->batch = (attnrt_batch_host_t){.struct_size = sizeof s->batch, .num_seqs = (int32_t)n, .query_start_loc = s->qsl_h,
                                     .seq_lens = s->sl_h, .block_table = s->bt_h, .block_table_stride = max_blocks};
    /* Decode reads every block of its requests once, in table order: the paged-read ceiling's walk.
       Blocks of whole 256-byte steps on 64-byte boundaries only (the ceiling reads 256 bytes a step, aligned). */
    const size_t block_bytes = (size_t)(bs * Hkv * D) * attnrt_dtype_size(o->kv_dtype);
    if (o->op == BENCH_DECODE && block_bytes % 256 == 0 && (uintptr_t)kc % 64 == 0 && (uintptr_t)vc % 64 == 0 &&
        (s->paged_blocks = malloc((size_t)blocks * sizeof *s->paged_blocks)) != NULL) {
        int64_t m = 0;
        for (int64_t b = 0; b < n; b++)
            for (int64_t k = 0; k < (kvlen[b] + bs - 1) / bs; k++) s->paged_blocks[m++] = s->bt_h[b * max_blocks + k];
        s->paged = (bench_paged_t){.k = kc, .v = vc, .block_bytes = block_bytes, .blocks = s->paged_blocks, .n = m};
    }
    TRY(attnrt_attention_plan(ctx, &s->args, &s->batch, &s->res.plan));
    TRY(bench_res_workspace(ctx, &s->res));
    return 0;
}

/* ---- timing ------------------------------------------------------------------------------------ */

typedef bench_run_fn run_fn;

static int run_attention(attnrt_context_t *ctx, void *what, attnrt_stream_t *stream)
{
    attn_setup_t *s = what;
    (void)ctx;
    return attnrt_attention_run(s->res.plan, &s->args, s->res.ws, s->res.ws_bytes, stream) == ATTNRT_OK ? 0 : -1;
}

/* The device copy in front of a queued run: 128 MiB (~65 us on an H200) outlasts the host's enqueue of
 * the event and the run (a few us), and being larger than the last-level cache it also leaves the op
 * the cold cache it finds in an engine, where other layers ran in between. */
#define QUEUE_COPY_BYTES ((size_t)128 << 20)

typedef struct timer {
    attnrt_event_t *a, *b, *c;    /* c: before the device copy of a queued run                       */
    attnrt_stream_t *stream;      /* queued runs: a created stream; NULL: single runs only           */
    void *copy_src, *copy_dst;
} timer_t_;

static void timer_close(attnrt_context_t *ctx, timer_t_ *tm)
{
    if (tm->a) attnrt_event_destroy(tm->a);
    if (tm->b) attnrt_event_destroy(tm->b);
    if (tm->c) attnrt_event_destroy(tm->c);
    if (tm->stream) attnrt_stream_destroy(tm->stream);
    if (tm->copy_src) attnrt_mem_free(ctx, tm->copy_src);
    if (tm->copy_dst) attnrt_mem_free(ctx, tm->copy_dst);
    memset(tm, 0, sizeof *tm);
}

/* Events where the plugin has them; a stream and the copy buffers when runs are also timed queued (an
 * asynchronous device, timing queued or both). A queued set-up that fails leaves single timing. */
static void timer_open(attnrt_context_t *ctx, const bench_options_t *o, timer_t_ *tm)
{
    memset(tm, 0, sizeof *tm);
    if (attnrt_event_create(ctx, &tm->a) != ATTNRT_OK || attnrt_event_create(ctx, &tm->b) != ATTNRT_OK) {
        timer_close(ctx, tm);
        return;
    }
    if (o->timing == BENCH_TIMING_SINGLE || !o->async_device) return;
    if (attnrt_event_create(ctx, &tm->c) != ATTNRT_OK || attnrt_stream_create(ctx, &tm->stream) != ATTNRT_OK ||
        attnrt_mem_alloc(ctx, QUEUE_COPY_BYTES, &tm->copy_src) != ATTNRT_OK ||
        attnrt_mem_alloc(ctx, QUEUE_COPY_BYTES, &tm->copy_dst) != ATTNRT_OK ||
        attnrt_mem_set(ctx, tm->copy_src, 0x3c, QUEUE_COPY_BYTES, NULL) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-bench: cannot set up queued timing (%s); timing single calls only\n", attnrt_last_error());
        attnrt_event_t *a = tm->a, *b = tm->b;
        tm->a = tm->b = NULL;
        timer_close(ctx, tm);
        tm->a = a, tm->b = b;
    }
}

/* single: ms of one run on the NULL stream between two events (no events: the host clock around run +
 * synchronize). The ABI makes a NULL-stream call synchronous, so the region holds the host launch, the
 * plugin's wait for the device and the wake from it, and the second event's trip to the device. */
static int time_single(attnrt_context_t *ctx, timer_t_ *tm, run_fn fn, void *what, double *ms)
{
    const double t0 = now_ms();
    if (tm->a) attnrt_event_record(tm->a, NULL);
    if (fn(ctx, what, NULL) != 0) {
        fprintf(stderr, "attnrt-bench: the op failed: %s\n", attnrt_last_error());
        return -1;
    }
    if (tm->b) attnrt_event_record(tm->b, NULL);
    attnrt_stream_synchronize(ctx, NULL);
    *ms = now_ms() - t0;
    float ev;
    if (tm->a && attnrt_event_elapsed_ms(tm->a, tm->b, &ev) == ATTNRT_OK) *ms = ev;
    return 0;
}

/* queued: ms of one run on a created stream, enqueued while the device still runs a 128 MiB copy in
 * front of it, between two events: the region is the op's device work and the gap from the work before
 * it, as each step of an engine's stream pays (nothing of the op's own work is left out: a run's host
 * copies, launches and device work are all in the stream). host_us: the host's time in the run call.
 * late: the host took longer to enqueue than the copy ran (the region then holds host time too). */
static int time_queued(attnrt_context_t *ctx, timer_t_ *tm, run_fn fn, void *what, double *ms, double *host_us,
                       int *late)
{
    const double e0 = now_ms();
    if (attnrt_event_record(tm->c, tm->stream) != ATTNRT_OK ||
        attnrt_mem_copy_on_device(ctx, tm->copy_dst, tm->copy_src, QUEUE_COPY_BYTES, tm->stream) != ATTNRT_OK ||
        attnrt_event_record(tm->a, tm->stream) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-bench: queued timing: %s\n", attnrt_last_error());
        return -1;
    }
    const double h0 = now_ms();
    if (fn(ctx, what, tm->stream) != 0) {
        fprintf(stderr, "attnrt-bench: the op failed: %s\n", attnrt_last_error());
        return -1;
    }
    const double h1 = now_ms();
    float ev = 0.0f, copy = 0.0f;
    if (attnrt_event_record(tm->b, tm->stream) != ATTNRT_OK || attnrt_event_elapsed_ms(tm->a, tm->b, &ev) != ATTNRT_OK ||
        attnrt_event_elapsed_ms(tm->c, tm->a, &copy) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-bench: queued timing: %s\n", attnrt_last_error());
        return -1;
    }
    *ms = ev;
    *host_us = (h1 - h0) * 1e3;
    *late = h1 - e0 > copy;
    return 0;
}

/* Times `fn` iters times after warm-up; samples the ceilings after each timed run when given (kept in r
 * when r is given; without r the samples only put the machine in the same state between runs, so that
 * the parts of a mixed batch start from the caches the mixed runs start from). */
static int time_op(attnrt_context_t *ctx, const bench_options_t *o, run_fn fn, void *what, bench_ceiling_t *c,
                   const bench_paged_t *paged, bench_stats_t *t, bench_result_t *r)
{
    timer_t_ tm;
    timer_open(ctx, o, &tm);
    const int queued = tm.stream != NULL, single = !queued || o->timing == BENCH_TIMING_BOTH;
    if (r)
        r->timer = queued ? "events, queued on a created stream behind a 128 MiB device copy"
                   : !tm.a          ? "host clock, one call + synchronize"
                   : o->async_device ? "events, one call on the NULL stream (synchronous: host launch and wait inside)"
                                     : "events, one call";
    const size_t n = (size_t)o->iters;
    double *ms = calloc(n, sizeof *ms), *one = calloc(n, sizeof *one), *host = calloc(n, sizeof *host);
    double *mem = calloc(n, sizeof *mem), *fma = calloc(n, sizeof *fma), *pg = calloc(n, sizeof *pg);
    const int with_paged = c && c->paged_sample && paged && paged->n > 0;
    int rc = ms && one && host && mem && fma && pg ? 0 : -1, late = 0, nlate = 0;
    for (int i = 0; i < o->warmup && rc == 0; i++) {
        if (queued) rc = time_queued(ctx, &tm, fn, what, &ms[0], &host[0], &late);
        if (single && rc == 0) rc = time_single(ctx, &tm, fn, what, &one[0]);
    }
    for (int i = 0; i < o->iters && rc == 0; i++) {
        if (queued) rc = time_queued(ctx, &tm, fn, what, &ms[i], &host[i], &late), nlate += late;
        if (single && rc == 0) rc = time_single(ctx, &tm, fn, what, &one[i]);
        if (c) { /* interleaved: the ceiling sees the same machine state as the op */
            mem[i] = c->mem_sample(c);
            if (c->fma_sample) fma[i] = c->fma_sample(c);
            if (with_paged) pg[i] = c->paged_sample(c, paged);
        }
    }
    if (rc == 0 && r) {
        r->op_stats = (attnrt_op_stats_t){.struct_size = sizeof r->op_stats};
        r->has_op_stats = attnrt_last_op_stats(ctx, &r->op_stats) == ATTNRT_OK && r->op_stats.op != 0;
    }
    if (rc == 0) {
        bench_stats_of(queued ? ms : one, o->iters, t);
        if (r && queued) {
            r->has_host = 1, r->host_late = nlate;
            bench_stats_of(host, o->iters, &r->host_us);
            if (single) r->has_single = 1, bench_stats_of(one, o->iters, &r->single);
        }
        if (c && r) {
            bench_stats_of(mem, o->iters, &r->mem_gbs);
            if (c->fma_sample) bench_stats_of(fma, o->iters, &r->fma_gflops), r->has_fma = 1;
            if (with_paged) bench_stats_of(pg, o->iters, &r->paged_gbs), r->has_paged = 1;
        }
    }
    free(ms), free(one), free(host), free(mem), free(fma), free(pg);
    timer_close(ctx, &tm);
    return rc;
}

static int bench_attention(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r)
{
    const int64_t n = o->op == BENCH_MIXED ? o->batch + 1 : o->batch;
    int64_t *qlen = calloc((size_t)n, sizeof *qlen), *kvlen = calloc((size_t)n, sizeof *kvlen);
    if (!qlen || !kvlen) return free(qlen), free(kvlen), -1;
    for (int64_t b = 0; b < o->batch; b++) {
        qlen[b] = o->op == BENCH_PREFILL ? o->new_tokens : 1;
        kvlen[b] = o->ctx;
    }
    if (o->op == BENCH_MIXED) { /* the prefill chunk last, as engines order them */
        qlen[n - 1] = o->new_tokens;
        kvlen[n - 1] = o->prefill_ctx;
    }
    attn_setup_t s;
    int rc = attn_build(ctx, o, n, qlen, kvlen, &s);
    if (rc == 0) {
        r->bytes = s.bytes;
        r->flops = s.flops;
        rc = time_op(ctx, o, run_attention, &s, c, &s.paged, &r->time, r);
    }
    attn_free(ctx, &s);
    if (rc == 0 && o->op == BENCH_MIXED) { /* each part alone, same shapes */
        attn_setup_t part;
        r->has_parts = 1;
        rc = attn_build(ctx, o, o->batch, qlen, kvlen, &part);
        if (rc == 0) rc = time_op(ctx, o, run_attention, &part, c, NULL, &r->part_decode, NULL);
        attn_free(ctx, &part);
        if (rc == 0) rc = attn_build(ctx, o, 1, qlen + n - 1, kvlen + n - 1, &part);
        if (rc == 0) rc = time_op(ctx, o, run_attention, &part, c, NULL, &r->part_prefill, NULL);
        attn_free(ctx, &part);
    }
    free(qlen), free(kvlen);
    return rc;
}

/* ---- kv_write and merge ------------------------------------------------------------------------ */

typedef struct simple_op {
    attnrt_kv_write_args_t kw;
    attnrt_merge_args_t mg;
    attnrt_tensor_t t[8];
    const attnrt_tensor_t *states[2], *lses[2];
    int64_t *slots_h;
    bench_res_t res;
    int is_merge;
} simple_op_t;

static int run_simple(attnrt_context_t *ctx, void *what, attnrt_stream_t *stream)
{
    simple_op_t *s = what;
    attnrt_status_t st = s->is_merge ? attnrt_merge_states(ctx, &s->mg, stream) : attnrt_kv_write(ctx, &s->kw, stream);
    return st == ATTNRT_OK ? 0 : -1;
}

/* The buffers and arguments of kv_write or merge; on failure what was made stays in s for the caller
 * to free. */
static int simple_build(attnrt_context_t *ctx, const bench_options_t *o, simple_op_t *s, bench_result_t *r)
{
    const int64_t T = o->batch * o->new_tokens, Hq = o->heads, Hkv = o->kv_heads, D = o->head_dim, bs = o->block_size;
    const double es = (double)attnrt_dtype_size(o->dtype), kv_es = (double)attnrt_dtype_size(o->kv_dtype);
    if (o->op == BENCH_MERGE) {
        const int64_t sh[3] = {T, Hq, D}, lsh[2] = {T, Hq};
        s->is_merge = 1;
        for (int i = 0; i < 2; i++) {
            bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hq * D), o->dtype, 0));
            bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hq), ATTNRT_F32, 0));
        }
        bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hq * D), o->dtype, 1));
        if (s->res.nbufs != 5) return -1;
        for (int i = 0; i < 2; i++) {
            TRY(attnrt_tensor_init(&s->t[2 * i], s->res.bufs[2 * i], o->dtype, 3, sh));
            TRY(attnrt_tensor_init(&s->t[2 * i + 1], s->res.bufs[2 * i + 1], ATTNRT_F32, 2, lsh));
            s->states[i] = &s->t[2 * i];
            s->lses[i] = &s->t[2 * i + 1];
        }
        TRY(attnrt_tensor_init(&s->t[4], s->res.bufs[4], o->dtype, 3, sh));
        s->mg = (attnrt_merge_args_t){.struct_size = sizeof s->mg, .num_states = 2, .states = s->states, .lses = s->lses,
                                      .out = &s->t[4]};
        r->bytes = 3.0 * (double)(T * Hq * D) * es + 2.0 * (double)(T * Hq) * 4.0;
    } else {
        const int64_t blocks = (T + bs - 1) / bs, rows[3] = {T, Hkv, D}, cache[4] = {blocks, bs, Hkv, D}, one[1] = {1};
        const int64_t sm[1] = {T};
        s->slots_h = malloc((size_t)T * sizeof *s->slots_h);
        if (!s->slots_h) return -1;
        for (int64_t i = 0; i < T; i++) s->slots_h[i] = i;
        bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hkv * D), o->dtype, 0));
        bench_keep(&s->res, dev_random(ctx, (size_t)(T * Hkv * D), o->dtype, 0));
        bench_keep(&s->res, dev_random(ctx, (size_t)(blocks * bs * Hkv * D), o->kv_dtype, 1));
        bench_keep(&s->res, dev_random(ctx, (size_t)(blocks * bs * Hkv * D), o->kv_dtype, 1));
        bench_keep(&s->res, dev_copy(ctx, s->slots_h, (size_t)T * sizeof *s->slots_h));
        const float unit = 1.0f;
        bench_keep(&s->res, dev_copy(ctx, &unit, sizeof unit));
        if (s->res.nbufs != 6) return -1;
        TRY(attnrt_tensor_init(&s->t[0], s->res.bufs[0], o->dtype, 3, rows));
        TRY(attnrt_tensor_init(&s->t[1], s->res.bufs[1], o->dtype, 3, rows));
        TRY(attnrt_tensor_init(&s->t[2], s->res.bufs[2], o->kv_dtype, 4, cache));
        TRY(attnrt_tensor_init(&s->t[3], s->res.bufs[3], o->kv_dtype, 4, cache));
        TRY(attnrt_tensor_init(&s->t[4], s->res.bufs[4], ATTNRT_I64, 1, sm));
        TRY(attnrt_tensor_init(&s->t[5], s->res.bufs[5], ATTNRT_F32, 1, one));
        const int fp8 = o->kv_dtype.bits == 8;
        s->kw = (attnrt_kv_write_args_t){.struct_size = sizeof s->kw, .key = &s->t[0], .value = &s->t[1],
                                         .slot_mapping = &s->t[4], .key_cache = &s->t[2], .value_cache = &s->t[3],
                                         .key_scale = fp8 ? &s->t[5] : NULL, .value_scale = fp8 ? &s->t[5] : NULL};
        r->bytes = 2.0 * (double)(T * Hkv * D) * (es + kv_es) + (double)T * 8.0;
    }
    return 0;
}

static int bench_simple(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r)
{
    simple_op_t s;
    memset(&s, 0, sizeof s);
    int rc = simple_build(ctx, o, &s, r);
    if (rc == 0) rc = time_op(ctx, o, run_simple, &s, c, NULL, &r->time, r);
    bench_res_free(ctx, &s.res);
    free(s.slots_h);
    return rc;
}

void *bench_dev_random(attnrt_context_t *ctx, size_t n, attnrt_dtype_t dt, int zero) { return dev_random(ctx, n, dt, zero); }
void *bench_dev_copy(attnrt_context_t *ctx, const void *host, size_t bytes) { return dev_copy(ctx, host, bytes); }
int bench_time(attnrt_context_t *ctx, const bench_options_t *o, bench_run_fn fn, void *what, bench_ceiling_t *c,
               bench_result_t *r)
{
    return time_op(ctx, o, fn, what, c, NULL, &r->time, r);
}

int bench_run(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r)
{
    memset(r, 0, sizeof *r);
    if (o->op == BENCH_MLA_DECODE) return bench_mla(ctx, o, c, r);
    if (o->op == BENCH_LIGHTNING_DECODE || o->op == BENCH_GDN_DECODE) return bench_linear(ctx, o, c, r);
    if (o->op == BENCH_KV_WRITE || o->op == BENCH_MERGE) return bench_simple(ctx, o, c, r);
    return bench_attention(ctx, o, c, r);
}
