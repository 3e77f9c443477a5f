/* timing_util.h — what the timing programs of bench/h200 share: the check that ends the program on a
 * failed libattnrt call, the median, and one event-timed device copy (the copy ceiling's sample).
 * Define TIMING_PROG (the program's name, for messages) before including it. */
#ifndef ATTNRT_BENCH_TIMING_UTIL_H
#define ATTNRT_BENCH_TIMING_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "attnrt.h"

#define TRY(call)                                                                                             \
    do {                                                                                                      \
        attnrt_status_t st_ = (call);                                                                         \
        if (st_ != ATTNRT_OK) {                                                                               \
            fprintf(stderr, "%s: %s: %s: %s\n", TIMING_PROG, #call, attnrt_status_name(st_), attnrt_last_error()); \
            exit(1);                                                                                          \
        }                                                                                                     \
    } while (0)

static int timing_cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0 .. n) (sorts v). */
static double timing_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, timing_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Copy bandwidth (bytes read + written) of one device copy of `bytes` on `stream`, GB/s. */
static double timing_copy_gbs(attnrt_context_t *ctx, void *dst, const void *src, size_t bytes, attnrt_stream_t *stream,
                              attnrt_event_t *e0, attnrt_event_t *e1)
{
    TRY(attnrt_event_record(e0, stream));
    TRY(attnrt_mem_copy_on_device(ctx, dst, src, bytes, stream));
    TRY(attnrt_event_record(e1, stream));
    float ms = 0.0f;
    TRY(attnrt_event_elapsed_ms(e0, e1, &ms)); /* waits for e1 */
    return 2.0 * (double)bytes / ((double)ms * 1e-3) * 1e-9;
}

#endif
