/* Helpers of the threaded tests: start N threads at once, and a small paged-attention step (2 requests,
 * a decode and a 2-token prefill, Hq 2, Hkv 1, D 64, f32) that a thread can plan, run and read back on
 * any context and stream. Nothing here asserts: threads report a status and a message, and the test's
 * own thread checks them (cmocka's failures may only be raised there). */
#ifndef THR_WORK_H
#define THR_WORK_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

enum { THR_T = 3, THR_HQ = 2, THR_HKV = 1, THR_D = 64, THR_OUT = THR_T * THR_HQ * THR_D };

/* A device the tests run on: its name, an open option (the npu_sim profile whose block sizes fit), and a
 * block size it supports. */
typedef struct thr_device {
    const char *name;
    const char *option_key, *option_value; /* NULL: plain attnrt_open */
    uint32_t    block_size;
} thr_device_t;

/* cpu:0, and npu_sim:0 where that plugin is built (THR_NPU_SIM) */
extern const thr_device_t thr_devices[];
extern const unsigned thr_device_count;

/* What a thread reports: its first failure (status and message), or OK. */
typedef struct thr_report {
    attnrt_status_t status;
    char            where[96];
    char            error[512];
} thr_report_t;

/* Records the first failure: `status` with attnrt_last_error() of this thread; returns status. */
attnrt_status_t thr_check(thr_report_t *r, attnrt_status_t status, const char *where);

/* Starts `n` threads running fn(i, arg) at the same moment (a barrier) and joins them. */
void thr_run(unsigned n, void (*fn)(unsigned i, void *arg), void *arg);

attnrt_status_t thr_open(const thr_device_t *dev, attnrt_context_t **ctx);

/* One attention step's buffers (device memory of ctx, inputs from `seed`) and its plan. */
typedef struct thr_work {
    attnrt_context_t       *ctx;
    void                   *buf[8];
    size_t                  workspace_bytes;
    attnrt_tensor_t         query, key_cache, value_cache, block_table, qsl, seq_lens, out;
    attnrt_attention_args_t args;
    attnrt_batch_host_t     batch;
    int32_t                 h_qsl[3], h_seq_lens[2], h_block_table[6];
    attnrt_plan_t          *plan;
} thr_work_t;

attnrt_status_t thr_work_make(thr_work_t *w, attnrt_context_t *ctx, uint32_t block_size, uint32_t seed);
/* Runs the plan on `stream` (NULL: the default stream), waits for it and copies out to `out`. */
attnrt_status_t thr_work_run(thr_work_t *w, attnrt_stream_t *stream, float out[THR_OUT]);
/* Destroys the plan and frees the buffers (whatever thr_work_make got to). */
void thr_work_free(thr_work_t *w);

#endif /* THR_WORK_H */
