/* stream_work.c — what one thread reads from a paged KV cache when it also computes: paged_read.c's cache
 * (K and V blocks of BS keys x 8 heads x 256 bytes, shuffled over transparent huge pages, ctx 65536) read
 * block by block, W FMAs on each 64-byte line (W 8 gives decode's in-cache rate on the Ice Lake VM, about
 * 14-16 GB/s), with software prefetches of block b+2 in one of five patterns. Prints the rate from DRAM
 * (best of 6 passes, each after a 256 MiB write) and with the same work over a cache that stays in L2 (the
 * compute-only rate). Not attnrt-bench: a calibration of what a kernel's prefetches can do on a machine
 * (docs/perf/cpu.md).
 *
 *   gcc -O2 -mavx512f -o /tmp/stream_work bench/cpu/stream_work.c
 *   /tmp/stream_work MODE [W [BS [BURST]]]   MODE 0: no software prefetch; 1: one line of block b+2 per
 *       line read, address order; 2: BURST (16) lines of it every BURST lines read; 3: one line per line
 *       read in the decode kernel's order (4 keys at a time, 256-byte piece u of each for KV head u);
 *       4: that order in bursts of 16 lines (the 4 keys' pieces of one head at once, as the kernel does)
 *   two threads: (  /tmp/stream_work 1 & /tmp/stream_work 1; wait  ) */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define ROW 2048 /* one key, 8 heads x 128 bf16 */
#define DIST 2   /* blocks of lead */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Prefetches what mode asks for of block q while line o of the block being read is read (mode 0: nothing). */
static void prefetch_for(int mode, const char *q, size_t o, int burst)
{
    const size_t group = o / (4 * ROW) * (4 * ROW), i = o % (4 * ROW) / 64; /* 4 keys = 128 lines */
    switch (mode) {
    case 1: __builtin_prefetch(q + o, 0, 3); break;
    case 2:
        if (o % (64 * (size_t)burst) == 0)
            for (size_t z = 0; z < 64 * (size_t)burst; z += 64) __builtin_prefetch(q + o + z, 0, 3);
        break;
    case 3: /* line i: head u = i / 16, key i % 16 / 4, line i % 4 of the head's 256 bytes */
        __builtin_prefetch(q + group + i % 16 / 4 * ROW + i / 16 * 256 + i % 4 * 64, 0, 3);
        break;
    case 4:
        if (i % 16 == 0)
            for (size_t k = 0; k < 4; k++)
                for (size_t l = 0; l < 4; l++) __builtin_prefetch(q + group + k * ROW + i / 16 * 256 + l * 64, 0, 3);
        break;
    default: break;
    }
}

/* Best GB/s of `passes` passes over the cache; evict: write 256 MiB before each. */
static double run(int mode, int work, int burst, const char *k, const char *v, const int *perm, size_t nb, size_t blk,
                  int passes, char *evict, size_t evict_bytes, float *sink)
{
    const __m512 m = _mm512_set1_ps(0.999f);
    __m512 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm512_setzero_ps();
    double best = 0.0;
    for (int pass = 0; pass < passes; pass++) {
        if (evict) memset(evict, pass, evict_bytes);
        const double t0 = now_s();
        for (size_t b = 0; b < nb; b++)
            for (int kv = 0; kv < 2; kv++) {
                const char *p = (kv ? v : k) + (size_t)perm[b] * blk;
                const char *q = b + DIST < nb ? (kv ? v : k) + (size_t)perm[b + DIST] * blk : NULL;
                for (size_t o = 0; o < blk; o += 8 * 64) { /* 8 lines, one accumulator each */
#pragma GCC unroll 8
                    for (int l = 0; l < 8; l++) {
                        if (q) prefetch_for(mode, q, o + 64 * (size_t)l, burst);
                        const __m512 x = _mm512_castsi512_ps(_mm512_load_si512((const void *)(p + o + 64 * (size_t)l)));
                        acc[l] = _mm512_fmadd_ps(x, m, acc[l]);
                        for (int w = 1; w < work; w++) acc[l] = _mm512_fmadd_ps(acc[l], m, x);
                    }
                }
            }
        const double gbs = 2.0 * (double)(nb * blk) / (now_s() - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    __m512 tot = acc[0];
    for (int i = 1; i < 8; i++) tot = _mm512_add_ps(tot, acc[i]);
    *sink += _mm512_reduce_add_ps(tot);
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODE [W [BS [BURST]]]\n", argv[0]);
        return 2;
    }
    const int mode = atoi(argv[1]), work = argc > 2 ? atoi(argv[2]) : 8, bs = argc > 3 ? atoi(argv[3]) : 16;
    const int burst = argc > 4 ? atoi(argv[4]) : 16;
    const size_t blk = (size_t)bs * ROW, nb = 65536 / (size_t)bs, total = nb * blk;
    const size_t small_nb = bs < 128 ? 128 / (size_t)bs : 1; /* 128 keys or one block: K + V stay in L2 */
    char *k = aligned_alloc(1 << 21, total), *v = aligned_alloc(1 << 21, total);
    const size_t evict_bytes = (size_t)256 << 20;
    char *evict = malloc(evict_bytes);
    int *perm = malloc(nb * sizeof *perm);
    if (!k || !v || !evict || !perm || blk % (8 * 64) != 0) return 1;
    madvise(k, total, MADV_HUGEPAGE), madvise(v, total, MADV_HUGEPAGE);
    memset(k, 1, total), memset(v, 1, total);
    for (size_t i = 0; i < nb; i++) perm[i] = (int)i;
    srand(1);
    for (size_t i = nb - 1; i > 0; i--) {
        const size_t j = (size_t)rand() % (i + 1);
        const int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    float sink = 0.0f;
    const double dram = run(mode, work, burst, k, v, perm, nb, blk, 6, evict, evict_bytes, &sink);
    /* the first small_nb blocks in order: a cache of that many blocks, read again and again */
    int *ident = malloc(small_nb * sizeof *ident);
    if (!ident) return 1;
    for (size_t i = 0; i < small_nb; i++) ident[i] = (int)i;
    const double cached = run(mode, work, burst, k, v, ident, small_nb, blk, 2000, NULL, 0, &sink);
    printf("mode %d W %d BS %d burst %d: from DRAM %.2f GB/s, from L2 %.2f GB/s (%g)\n", mode, work, bs, burst, dram,
           cached, (double)sink);
    return 0;
}
