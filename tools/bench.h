/* bench.h — attnrt-bench's pieces: options (bench_cli.c), the machine's ceilings measured in the same
 * run (bench_ceiling.c), the ops and their timing (bench_ops.c), and the report (bench_report.c).
 * tools/attnrt_bench.c is the thin main that strings them together. */
#ifndef ATTNRT_BENCH_H
#define ATTNRT_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

typedef enum bench_op {
    BENCH_DECODE, BENCH_PREFILL, BENCH_MIXED, BENCH_KV_WRITE, BENCH_MERGE,
    BENCH_MLA_DECODE, BENCH_LIGHTNING_DECODE, BENCH_GDN_DECODE /* bench_mla.c, bench_linear.c */
} bench_op_t;

/* How a run is timed (docs/tools.md): queued = on a created stream behind a device copy that keeps the
 * device busy while the host enqueues (what a step costs inside an engine's stream of work); single =
 * one call on the NULL stream between two events (the ABI makes that call synchronous, so the region
 * also holds the host launch, the host's wait and the wake from it). both: queued, and single beside it. */
typedef enum bench_timing { BENCH_TIMING_BOTH, BENCH_TIMING_QUEUED, BENCH_TIMING_SINGLE } bench_timing_t;

typedef struct bench_options {
    const char    *plugin, *device;
    bench_op_t     op;
    int64_t        batch;         /* requests (decode, prefill) or decodes (mixed)                  */
    int64_t        ctx;           /* KV length per request (decode, prefill; mixed: the decodes')   */
    int64_t        new_tokens;    /* query tokens of a prefill request; tokens of kv_write / merge  */
    int64_t        prefill_ctx;   /* mixed: the prefill chunk's KV length                           */
    int64_t        heads, kv_heads, head_dim, block_size;
    attnrt_dtype_t dtype, kv_dtype;
    int            iters, warmup, threads; /* threads 0: the plugin's default                       */
    int            causal, hnd, json, no_ceiling;
    int            shuffled;      /* block order: 1 shuffled (an allocator after churn), 0 in order   */
    int64_t        v_dim;         /* mla: value columns of the latent; lightning / gdn: Dv (0: default) */
    int64_t        topk;          /* mla: sparse top-k per token (0: dense)                          */
    bench_timing_t timing;
    int            async_device;  /* set by main: the device's streams run asynchronously (not a cpu or
                                     simulated device, whose calls complete before they return) */
} bench_options_t;

/* 0: run; 1: help printed; -1: usage error (printed). */
int bench_parse(int argc, char **argv, bench_options_t *o);
const char *bench_op_name(bench_op_t op);

/* Summary of repeated timings, in milliseconds. */
typedef struct bench_stats {
    double median, min, max, p10, p90;
    int    n;
} bench_stats_t;
void bench_stats_of(double *samples, int n, bench_stats_t *st); /* sorts samples */

/* The KV blocks a decode reads, in the order it reads them (request by request, block-table order):
 * what the paged-read ceiling walks. Blocks are contiguous (NHD and HND alike). */
typedef struct bench_paged {
    const char    *k, *v;        /* the caches (host memory: the cpu plugin's device memory)        */
    size_t         block_bytes;  /* one block of one cache                                          */
    const int32_t *blocks;       /* n block ids                                                     */
    int64_t        n;
} bench_paged_t;

/* A ceiling: a sample per call, so the bench can interleave it with the op's runs. */
typedef struct bench_ceiling {
    const char *mem_what;   /* "memory read (AVX-512 loads, 2 threads, 2048 MiB)" or "device copy ..." */
    const char *fma_what;   /* NULL when the device has no FMA ceiling measured here              */
    double (*mem_sample)(struct bench_ceiling *c); /* GB/s of one measurement                    */
    double (*fma_sample)(struct bench_ceiling *c); /* GFLOP/s; NULL when not measured            */
    /* GB/s of reading an op's own KV blocks (bench_paged_t) with the same loads and threads; NULL
       where the caches are not host memory */
    double (*paged_sample)(struct bench_ceiling *c, const bench_paged_t *p);
    const char *paged_what;
    void   (*destroy)(struct bench_ceiling *c);
    void   *impl;
    char    mem_buf[160], fma_buf[160], paged_buf[200];
} bench_ceiling_t;

/* The CPU's ceilings with `threads` threads (host memory, SIMD loads, register-resident FMAs), or for
 * another device its copy bandwidth through attnrt_mem_copy_on_device. 0, or -1 with a message. */
int bench_ceiling_open(attnrt_context_t *ctx, int is_cpu, int threads, bench_ceiling_t *c);

/* One measured op: what it moves and computes, and how long it took. */
typedef struct bench_result {
    bench_stats_t time;             /* ms per run (queued where measured, else single)        */
    double        bytes;            /* bytes of KV + q + out (+ metadata) a run reads or writes */
    double        flops;            /* 2 * Hq * (Dqk + Dv) per kept (query, key) pair        */
    const char    *timer;           /* how `time` was taken, in words                         */
    /* timing both: the single-call figure beside the queued one; queued: the host's time in the run
       call (enqueue only) and how many samples the host took longer to enqueue than the device copy
       in front of the op ran (their region may hold host time: never shorter than the truth) */
    int           has_single, has_host;
    bench_stats_t single, host_us;
    int           host_late;
    /* mixed: the parts, each run alone */
    int           has_parts;
    bench_stats_t part_decode, part_prefill;
    /* ceilings sampled between the runs (medians) */
    bench_stats_t mem_gbs, fma_gflops, paged_gbs;
    int           has_fma, has_paged;
    /* the device's own account of the last timed run (attnrt_last_op_stats), where it keeps one:
       npu_sim's cost model (simulated time, bytes, partitions, padding) */
    int               has_op_stats;
    attnrt_op_stats_t op_stats;
} bench_result_t;

/* Sets up the op's tensors on ctx's device, runs warm-up + iters, and samples the ceiling (may be
 * NULL) once per timed run. 0, or -1 with a message on stderr. */
int bench_run(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *ceiling, bench_result_t *r);

/* Shared by the ops' files (bench_ops.c): a random (or zero) device buffer of n elements, a device copy
 * of host bytes (NULL with a message on failure), and warm-up + timed runs of fn into r->time with the
 * ceilings sampled in between. */
void *bench_dev_random(attnrt_context_t *ctx, size_t n, attnrt_dtype_t dt, int zero);
void *bench_dev_copy(attnrt_context_t *ctx, const void *host, size_t bytes);
typedef int (*bench_run_fn)(attnrt_context_t *ctx, void *what, attnrt_stream_t *stream); /* 0 or -1 */
int bench_time(attnrt_context_t *ctx, const bench_options_t *o, bench_run_fn fn, void *what, bench_ceiling_t *c,
               bench_result_t *r);
/* The device buffers, plan and workspace an op's set-up makes, released together by bench_res_free. */
typedef struct bench_res {
    void *bufs[12];
    int nbufs;
    attnrt_plan_t *plan;
    void *ws;
    size_t ws_bytes;
} bench_res_t;
/* Keeps device buffer p for bench_res_free and returns it; a NULL p (a failed allocation) is not kept,
 * so the caller sees it as a short nbufs. */
void *bench_keep(bench_res_t *res, void *p);
/* Allocates the workspace res->plan asks for: ATTNRT_OK or the failed call's status. */
attnrt_status_t bench_res_workspace(attnrt_context_t *ctx, bench_res_t *res);
/* Destroys the plan, frees the buffers and the workspace, and zeroes res. */
void bench_res_free(attnrt_context_t *ctx, bench_res_t *res);
/* In the ops' set-up code: on a failed libattnrt call, says which and why, sets rc = -1, goes to done. */
#define BENCH_CHECK(call, what)                                                                            \
    do {                                                                                                   \
        attnrt_status_t st_ = (call);                                                                      \
        if (st_ != ATTNRT_OK) {                                                                            \
            fprintf(stderr, "attnrt-bench: %s: %s: %s\n", what, attnrt_status_name(st_), attnrt_last_error()); \
            rc = -1;                                                                                       \
            goto done;                                                                                     \
        }                                                                                                  \
    } while (0)

/* MLA decode (bench_mla.c); lightning and GDN decode over a state pool (bench_linear.c). */
int bench_mla(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r);
int bench_linear(attnrt_context_t *ctx, const bench_options_t *o, bench_ceiling_t *c, bench_result_t *r);

/* Prints the result as text or as one JSON document. */
void bench_report(const bench_options_t *o, attnrt_context_t *ctx, const bench_ceiling_t *c, const bench_result_t *r);

#endif
