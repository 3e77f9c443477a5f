/* npu_fixture.h — drives the npu_sim plugin through its own vtable (linked in statically, no runtime):
 * opens a device with options, builds a paged-attention batch (caches filled through kv_write, shuffled
 * physical blocks), plans, runs, reads the op counters, and judges the output against the float64
 * reference of tests/reference. */
#ifndef ATTNRT_NPU_FIXTURE_H
#define ATTNRT_NPU_FIXTURE_H

#include <stdint.h>

#include "attnrt_plugin.h"

#define NPU_FX_MAX_SEQS 300

typedef struct npu_fx {
    const attnrt_plugin_api_t *api;
    void *plugin;
    void *dev;
} npu_fx_t;

/* Opens npu_sim:0 with options {"profile", profile} and {"front_end", front_end} (either may be NULL). */
attnrt_status_t npu_fx_open(npu_fx_t *fx, const char *profile, const char *front_end);
/* The same with {"model_kind", model_kind} too (NULL: the default, a decoder). */
attnrt_status_t npu_fx_open_kind(npu_fx_t *fx, const char *profile, const char *front_end, const char *model_kind);
void            npu_fx_close(npu_fx_t *fx);
/* The plugin's last error message for this thread. */
const char     *npu_fx_error(const npu_fx_t *fx);

typedef struct npu_case {
    const char    *profile, *front_end;   /* NULL: the defaults (environment, vLLM)              */
    int            block_size, cols;      /* cache blocks and block-table columns per request:
                                             max_model_len = cols * block_size                   */
    int            num_seqs;
    int            q_lens[NPU_FX_MAX_SEQS], kv_lens[NPU_FX_MAX_SEQS];
    int            hq, hkv, dqk, dv;
    attnrt_dtype_t q_dtype, kv_dtype;     /* out has q's dtype; fp8 caches get scale 0.5 / 0.25   */
    int            causal, window_left, sinks, lse, hnd;
    float          softcap;
    int            skip_reference;        /* cost-only cases: do not compute the reference       */
} npu_case_t;

/* Defaults: rbln-rebel100 / vLLM, one decode row at 1, Hq 4, Hkv 2, D 64, f16, causal, no window. */
void npu_case_defaults(npu_case_t *c);

typedef struct npu_result {
    attnrt_status_t   status;        /* of the first failing call (plan, usually), or OK        */
    char              message[768];
    double            rel_err;       /* ||out - ref|| / ||ref|| (0 when the reference is 0)     */
    double            max_row_err;   /* worst row: ||out - ref|| / max(||ref row||, 1e-3)        */
    attnrt_op_stats_t stats;         /* last_op_stats after the run                             */
} npu_result_t;

/* Runs the case end to end; returns 0 when every call succeeded (res->status OK). */
int npu_run_case(const npu_case_t *c, npu_result_t *res);

/* Tolerance of the least precise dtype in play (docs/semantics.md). */
double npu_case_tolerance(const npu_case_t *c);

#endif
