/* paged_read.c — how fast one thread reads a paged KV cache with no kernel at all: K and V caches of
 * blocks of BS keys x 8 heads x 128 bf16 (ctx 32768), blocks shuffled over transparent huge pages, read
 * block by block (K block, then V block) with AVX-512 loads; the best of 8 passes, each after a 256 MiB
 * write that evicts the caches. The numbers behind attnrt-bench's paged-read ceiling (docs/perf/cpu.md).
 *
 *   gcc -O2 -mavx512f -o /tmp/paged_read bench/cpu/paged_read.c
 *   /tmp/paged_read MODE [DIST [BS]]     MODE 0: no software prefetch; 1: all of block b+DIST first;
 *                                        2: block b+DIST's lines interleaved; 3: its first 4 KiB only
 *   two threads: run two at once (  /tmp/paged_read 3 2 16 & /tmp/paged_read 3 2 16; wait  ) */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define HEAD 4096

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void prefetch(const char *p, size_t n)
{
    for (size_t o = 0; o < n; o += 64) __builtin_prefetch(p + o, 0, 3);
}

int main(int argc, char **argv)
{
    const int mode = argc > 1 ? atoi(argv[1]) : 0, bs = argc > 3 ? atoi(argv[3]) : 16;
    const long dist = argc > 2 ? atol(argv[2]) : 1, ctx = 32768, nb = ctx / bs;
    const size_t bb = (size_t)bs * 8 * 128 * 2, total = (size_t)nb * bb;
    char *k = aligned_alloc(1u << 21, total), *v = aligned_alloc(1u << 21, total), *evict = malloc(256u << 20);
    int *bt = malloc((size_t)nb * sizeof *bt);
    if (!k || !v || !evict || !bt || mode < 0 || mode > 3 || bs < 1) return fprintf(stderr, "usage: see the header\n"), 2;
    madvise(k, total, MADV_HUGEPAGE), madvise(v, total, MADV_HUGEPAGE);
    memset(k, 1, total), memset(v, 1, total);
    srand(1);
    for (long i = 0; i < nb; i++) bt[i] = (int)i;
    for (long i = nb - 1; i > 0; i--) {
        const long j = rand() % (i + 1);
        const int t = bt[i];
        bt[i] = bt[j], bt[j] = t;
    }
    double best = 1e30;
    __m512 acc = _mm512_setzero_ps();
    for (int pass = 0; pass < 8; pass++) {
        memset(evict, pass, 256u << 20);
        const double t0 = now_s();
        for (long b = 0; b < nb; b++) {
            const char *ahead_k = b + dist < nb ? k + (size_t)bt[b + dist] * bb : NULL;
            const char *ahead_v = b + dist < nb ? v + (size_t)bt[b + dist] * bb : NULL;
            if (ahead_k && mode == 1) prefetch(ahead_k, bb), prefetch(ahead_v, bb);
            if (ahead_k && mode == 3) prefetch(ahead_k, bb < HEAD ? bb : HEAD), prefetch(ahead_v, bb < HEAD ? bb : HEAD);
            for (int kv = 0; kv < 2; kv++) {
                const char *blk = (kv ? v : k) + (size_t)bt[b] * bb, *ahead = kv ? ahead_v : ahead_k;
                for (size_t o = 0; o < bb; o += 64) {
                    acc = _mm512_add_ps(acc, _mm512_load_ps((const float *)(const void *)(blk + o)));
                    if (ahead && mode == 2) __builtin_prefetch(ahead + o, 0, 3);
                }
            }
        }
        const double t = now_s() - t0;
        best = t < best ? t : best;
    }
    printf("mode %d dist %ld block %d: %.1f GB/s (checksum %g)\n", mode, dist, bs, 2.0 * (double)total / best * 1e-9,
           (double)_mm512_reduce_add_ps(acc));
    return 0;
}
