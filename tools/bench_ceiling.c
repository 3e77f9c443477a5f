/* bench_ceiling.c — the roofline attnrt-bench measures in the same run as the op:
 *   cpu:    memory-read bandwidth: every thread streams its slice of a buffer of at least 4x the
 *           last-level cache (and 256 MiB) with the widest SIMD loads the CPU has, on transparent huge
 *           pages where the kernel grants them (as the cpu plugin's KV caches); fp32 FMA peak:
 *           every thread runs independent register-resident FMA chains. Threads are created per sample
 *           and start together on a barrier; a sample is timed from the barrier to the last thread.
 *           Paged read (decode ops): the op's own K and V blocks, block by block in the order the
 *           op visits them, each thread a contiguous share, the same loads, the head of the
 *           next-but-one block prefetched: what memory gives for that layout (scattered blocks of a
 *           few tens of KiB read at a fraction of a long stream's rate: docs/perf/cpu.md).
 *   others: device copy bandwidth through attnrt_mem_copy_on_device (read + write bytes); no FMA peak.
 * The SIMD bodies use target attributes and are chosen by __builtin_cpu_supports: no -m flag, so the
 * tool runs on any CPU of its architecture. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "bench.h"

#define MIN_READ_BYTES ((size_t)256 << 20)
#define FMA_ITERS 20000000L /* per thread per sample: ~0.1 s at 5 GHz x 12 chains */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- SIMD bodies -------------------------------------------------------------------------------- */

typedef float v4f __attribute__((vector_size(16)));

static float read_plain(const char *p, size_t n)
{
    v4f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    for (size_t i = 0; i + 64 <= n; i += 64) {
        v4f a, b, c, d;
        memcpy(&a, p + i, 16), memcpy(&b, p + i + 16, 16), memcpy(&c, p + i + 32, 16), memcpy(&d, p + i + 48, 16);
        s0 += a, s1 += b, s2 += c, s3 += d;
    }
    v4f s = (s0 + s1) + (s2 + s3);
    return s[0] + s[1] + s[2] + s[3];
}

/* 12 chains of x = x * a + b: independent, so they run at the FMA ports, not at their latency. */
#define FMA_BODY(T, FMA, SET1, LANES)                                                                    \
    T x0 = SET1(0.1f), x1 = SET1(0.2f), x2 = SET1(0.3f), x3 = SET1(0.4f), x4 = SET1(0.5f), x5 = SET1(0.6f); \
    T x6 = SET1(0.7f), x7 = SET1(0.8f), x8 = SET1(0.9f), x9 = SET1(1.0f), x10 = SET1(1.1f), x11 = SET1(1.2f); \
    T a = SET1(0.99999f), b = SET1(1e-6f);                                                               \
    for (long i = 0; i < iters; i++) {                                                                   \
        x0 = FMA(x0, a, b), x1 = FMA(x1, a, b), x2 = FMA(x2, a, b), x3 = FMA(x3, a, b);                  \
        x4 = FMA(x4, a, b), x5 = FMA(x5, a, b), x6 = FMA(x6, a, b), x7 = FMA(x7, a, b);                  \
        x8 = FMA(x8, a, b), x9 = FMA(x9, a, b), x10 = FMA(x10, a, b), x11 = FMA(x11, a, b);              \
    }                                                                                                    \
    T s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7 + x8 + x9 + x10 + x11;                                   \
    float out = 0.0f;                                                                                    \
    for (int k = 0; k < LANES; k++) out += s[k];                                                         \
    *flops = 2.0 * 12.0 * LANES * (double)iters;                                                         \
    return out;

static inline v4f fma_plain(v4f x, v4f a, v4f b) { return x * a + b; }
static inline v4f set1_plain(float v) { return (v4f){v, v, v, v}; }
static float fma_loop_plain(long iters, double *flops) { FMA_BODY(v4f, fma_plain, set1_plain, 4) }

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f"))) static float read_avx512(const char *p, size_t n)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 256 <= n; i += 256) {
        s0 = _mm512_add_ps(s0, _mm512_load_ps((const float *)(const void *)(p + i)));
        s1 = _mm512_add_ps(s1, _mm512_load_ps((const float *)(const void *)(p + i + 64)));
        s2 = _mm512_add_ps(s2, _mm512_load_ps((const float *)(const void *)(p + i + 128)));
        s3 = _mm512_add_ps(s3, _mm512_load_ps((const float *)(const void *)(p + i + 192)));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

__attribute__((target("avx2"))) static float read_avx2(const char *p, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 128 <= n; i += 128) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps((const float *)(const void *)(p + i)));
        s1 = _mm256_add_ps(s1, _mm256_load_ps((const float *)(const void *)(p + i + 32)));
        s2 = _mm256_add_ps(s2, _mm256_load_ps((const float *)(const void *)(p + i + 64)));
        s3 = _mm256_add_ps(s3, _mm256_load_ps((const float *)(const void *)(p + i + 96)));
    }
    float t[8];
    _mm256_storeu_ps(t, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

__attribute__((target("avx512f"))) static float fma_loop_avx512(long iters, double *flops)
{
    FMA_BODY(__m512, _mm512_fmadd_ps, _mm512_set1_ps, 16)
}

__attribute__((target("avx2,fma"))) static float fma_loop_avx2(long iters, double *flops)
{
    FMA_BODY(__m256, _mm256_fmadd_ps, _mm256_set1_ps, 8)
}
#endif

/* ---- threads ------------------------------------------------------------------------------------ */

typedef struct cpu_ceiling {
    int               threads;
    char             *buf;
    size_t            bytes;
    float           (*read)(const char *, size_t);
    float           (*fma)(long, double *);
    const char       *isa;
    pthread_barrier_t start;
    int               mode; /* 0 read, 1 fma, 2 first touch, 3 paged read */
    const bench_paged_t *paged;
    double            t0, t_end[1024], flops[1024];
    volatile float    sink;
} cpu_ceiling_t;

typedef struct worker_arg { cpu_ceiling_t *c; int index; } worker_arg_t;

/* How the paged reader prefetches: the first PAGED_PF_HEAD bytes of the block PAGED_PF_DIST ahead (of each
 * cache) before reading a block, and no more: the hardware prefetchers follow a block once it is being
 * read, and software prefetches of whole blocks compete with them. The best of the simple readers tried
 * on the CI machine (2 threads, blocks shuffled): none 41 / 63 GB/s (block 16 / 256), whole next-but-one
 * block 43 / 50, its first 4 KiB 46 / 62 (docs/perf/cpu.md). */
#define PAGED_PF_DIST 2
#define PAGED_PF_HEAD 4096

/* Blocks [b0, b1) of the paged view: K block then V block. */
static float read_paged(const cpu_ceiling_t *c, int64_t b0, int64_t b1)
{
    const bench_paged_t *p = c->paged;
    const size_t bb = p->block_bytes, head = bb < PAGED_PF_HEAD ? bb : PAGED_PF_HEAD;
    float r = 0.0f;
    for (int64_t b = b0; b < b1; b++)
        for (int kv = 0; kv < 2; kv++) {
            const char *base = kv ? p->v : p->k;
            if (b + PAGED_PF_DIST < b1)
                for (size_t i = 0; i < head; i += 64)
                    __builtin_prefetch(base + (size_t)p->blocks[b + PAGED_PF_DIST] * bb + i, 0, 3);
            r += c->read(base + (size_t)p->blocks[b] * bb, bb);
        }
    return r;
}

static void *worker(void *p)
{
    worker_arg_t *w = p;
    cpu_ceiling_t *c = w->c;
    const size_t slice = c->bytes / (size_t)c->threads / 4096 * 4096;
    const char *mine = c->buf + (size_t)w->index * slice;
    if (pthread_barrier_wait(&c->start) == PTHREAD_BARRIER_SERIAL_THREAD) c->t0 = now_s();
    pthread_barrier_wait(&c->start); /* t0 is written before anyone starts */
    float r = 0.0f;
    if (c->mode == 0) r = c->read(mine, slice);
    else if (c->mode == 1) r = c->fma(FMA_ITERS, &c->flops[w->index]);
    else if (c->mode == 3)
        r = read_paged(c, c->paged->n * w->index / c->threads, c->paged->n * (w->index + 1) / c->threads);
    else memset((char *)mine, 1, slice); /* first touch by the thread that will read it */
    c->t_end[w->index] = now_s();
    if (r == 12345.0f) c->sink = r;
    return NULL;
}

/* Runs one sample on all threads; returns its seconds (barrier to the last thread). */
static double run_threads(cpu_ceiling_t *c, int mode)
{
    pthread_t tid[1024];
    worker_arg_t args[1024];
    c->mode = mode;
    pthread_barrier_init(&c->start, NULL, (unsigned)c->threads);
    int made = 0;
    for (int i = 1; i < c->threads; i++) {
        args[i] = (worker_arg_t){c, i};
        if (pthread_create(&tid[i], NULL, worker, &args[i]) != 0) break;
        made++;
    }
    if (made != c->threads - 1) { /* cannot start them all: the barrier would never open */
        fprintf(stderr, "attnrt-bench: cannot start %d ceiling threads\n", c->threads);
        exit(1);
    }
    args[0] = (worker_arg_t){c, 0};
    worker(&args[0]);
    for (int i = 1; i < c->threads; i++) pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&c->start);
    double end = c->t0;
    for (int i = 0; i < c->threads; i++) end = c->t_end[i] > end ? c->t_end[i] : end;
    return end - c->t0;
}

static double cpu_mem_sample(bench_ceiling_t *bc)
{
    cpu_ceiling_t *c = bc->impl;
    const size_t slice = c->bytes / (size_t)c->threads / 4096 * 4096;
    return (double)(slice * (size_t)c->threads) / run_threads(c, 0) * 1e-9;
}

static double cpu_fma_sample(bench_ceiling_t *bc)
{
    cpu_ceiling_t *c = bc->impl;
    double s = run_threads(c, 1), f = 0.0;
    for (int i = 0; i < c->threads; i++) f += c->flops[i];
    return f / s * 1e-9;
}

static double cpu_paged_sample(bench_ceiling_t *bc, const bench_paged_t *p)
{
    cpu_ceiling_t *c = bc->impl;
    c->paged = p;
    return 2.0 * (double)p->n * (double)p->block_bytes / run_threads(c, 3) * 1e-9;
}

static void cpu_destroy(bench_ceiling_t *bc)
{
    cpu_ceiling_t *c = bc->impl;
    if (!c) return;
    free(c->buf);
    free(c);
    bc->impl = NULL;
}

static int cpu_open(int threads, bench_ceiling_t *bc)
{
    cpu_ceiling_t *c = calloc(1, sizeof *c);
    if (!c) return -1;
    c->threads = threads < 1 ? 1 : threads > 1024 ? 1024 : threads;
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
    size_t bytes = llc > 0 ? (size_t)llc * 4 : 0;
    if (bytes < MIN_READ_BYTES) bytes = MIN_READ_BYTES;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && bytes > (size_t)pages * (size_t)page / 4) bytes = (size_t)pages * (size_t)page / 4;
    c->bytes = (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    c->buf = aligned_alloc(2u << 20, c->bytes);
    if (!c->buf) {
        free(c);
        fprintf(stderr, "attnrt-bench: cannot allocate the %zu MiB read buffer\n", bytes >> 20);
        return -1;
    }
#ifdef MADV_HUGEPAGE
    (void)madvise(c->buf, c->bytes, MADV_HUGEPAGE); /* as the cpu plugin's large buffers: the same pages */
#endif
    c->read = read_plain;
    c->fma = fma_loop_plain;
    c->isa = "portable 16-byte";
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        c->read = read_avx512, c->fma = fma_loop_avx512, c->isa = "AVX-512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        c->read = read_avx2, c->fma = fma_loop_avx2, c->isa = "AVX2";
    }
#endif
    run_threads(c, 2);
    bc->impl = c;
    bc->mem_sample = cpu_mem_sample;
    bc->fma_sample = cpu_fma_sample;
    bc->paged_sample = cpu_paged_sample;
    bc->destroy = cpu_destroy;
    snprintf(bc->mem_buf, sizeof bc->mem_buf, "memory read: %s loads, %d threads, %zu MiB buffer (4x LLC %ld MiB)",
             c->isa, c->threads, c->bytes >> 20, llc > 0 ? llc >> 20 : -1L);
    snprintf(bc->fma_buf, sizeof bc->fma_buf, "fp32 FMA peak: %s, %d threads, 12 register-resident chains", c->isa,
             c->threads);
    snprintf(bc->paged_buf, sizeof bc->paged_buf, "paged read: the op's K/V blocks in its order, %s loads, %d threads, "
             "next-but-one block's head prefetched", c->isa, c->threads);
    bc->mem_what = bc->mem_buf;
    bc->fma_what = bc->fma_buf;
    bc->paged_what = bc->paged_buf;
    return 0;
}

/* ---- other devices: copy bandwidth ---------------------------------------------------------------- */

typedef struct dev_ceiling {
    attnrt_context_t *ctx;
    void             *a, *b;
    size_t            bytes;
} dev_ceiling_t;

static double dev_mem_sample(bench_ceiling_t *bc)
{
    dev_ceiling_t *d = bc->impl;
    double t0 = now_s();
    if (attnrt_mem_copy_on_device(d->ctx, d->b, d->a, d->bytes, NULL) != ATTNRT_OK ||
        attnrt_stream_synchronize(d->ctx, NULL) != ATTNRT_OK)
        return 0.0;
    return 2.0 * (double)d->bytes / (now_s() - t0) * 1e-9; /* read + write */
}

static void dev_destroy(bench_ceiling_t *bc)
{
    dev_ceiling_t *d = bc->impl;
    if (!d) return;
    attnrt_mem_free(d->ctx, d->a);
    attnrt_mem_free(d->ctx, d->b);
    free(d);
    bc->impl = NULL;
}

static int dev_open(attnrt_context_t *ctx, bench_ceiling_t *bc)
{
    dev_ceiling_t *d = calloc(1, sizeof *d);
    if (!d) return -1;
    d->ctx = ctx;
    d->bytes = (size_t)512 << 20;
    if (attnrt_mem_alloc(ctx, d->bytes, &d->a) != ATTNRT_OK || attnrt_mem_alloc(ctx, d->bytes, &d->b) != ATTNRT_OK ||
        attnrt_mem_set(ctx, d->a, 1, d->bytes, NULL) != ATTNRT_OK) {
        fprintf(stderr, "attnrt-bench: cannot set up the device copy ceiling: %s\n", attnrt_last_error());
        if (d->a) attnrt_mem_free(ctx, d->a);
        free(d);
        return -1;
    }
    bc->impl = d;
    bc->mem_sample = dev_mem_sample;
    bc->fma_sample = NULL;
    bc->destroy = dev_destroy;
    snprintf(bc->mem_buf, sizeof bc->mem_buf, "device copy (read + write bytes), %zu MiB, attnrt_mem_copy_on_device",
             d->bytes >> 20);
    bc->mem_what = bc->mem_buf;
    bc->fma_what = NULL;
    return 0;
}

int bench_ceiling_open(attnrt_context_t *ctx, int is_cpu, int threads, bench_ceiling_t *c)
{
    memset(c, 0, sizeof *c);
    return is_cpu ? cpu_open(threads, c) : dev_open(ctx, c);
}
