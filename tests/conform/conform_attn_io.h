/* conform_attn_io.h - what paged attention and cascade share: the query, the poisoned outputs, the
 * optional per-head tensors, the batch metadata, reading the results back and judging them.
 *
 * Strided cases take q as a slice of a packed qkv row, give out a padded token stride and LSE a
 * transposed layout; the padding around out must come back untouched (a plugin that ignores strides
 * writes there).
 */
#ifndef ATTNRT_CONFORM_ATTN_IO_H
#define ATTNRT_CONFORM_ATTN_IO_H

#include "conform_cache.h"
#include "conform_case.h"
#include "conform_device.h"
#include "conform_rng.h"
#include "reference.h"

typedef struct cf_attn_io {
    int     T, B;
    int32_t qsl[CF_MAX_SEQS + 1], seq_lens[CF_MAX_SEQS];
    double  scale;               /* the scale the reference uses                               */
    double *q_ref;               /* [T, Hq, Dqk]: the query as the device sees it (rounded)    */
    double  alibi[256], sinks[256]; /* [Hq] as the device sees them (f32)                       */

    attnrt_tensor_t q, out, lse, alibi_t, sinks_t, block_table, query_start_loc, seq_lens_t;
    attnrt_attention_args_t args;
    attnrt_batch_host_t     batch;

    unsigned char *out_init;     /* out's allocation as poisoned: NaN in the view, sentinels in gaps */
    size_t         out_alloc_elems, lse_alloc_elems;
    double        *out_got, *lse_got;  /* dense [T, Hq, Dv] / [T, Hq] read back from the device */
    double        *ref_out, *ref_lse;  /* dense reference; ref_lse always computed (empty rows) */
} cf_attn_io_t;

/* Builds inputs and outputs on the device for case c over `cache` (its first c->num_seqs block-table
 * rows). Returns 0, or -1 with *res failed. */
int  cf_attn_io_setup(const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, const cf_cache_t *cache, cf_attn_io_t *io,
                      cf_result_t *res);
/* The reference problem for io over cache (out / lse point at io->ref_out / io->ref_lse). */
void cf_attn_io_problem(const cf_case_t *c, const cf_attn_io_t *io, const cf_cache_t *cache, ref_attention_problem *p);
/* The next layer of the same step: a fresh query uploaded over the old one, out and LSE poisoned
 * again. 0, or -1 with *res failed. */
int  cf_attn_io_next_layer(const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, cf_attn_io_t *io, cf_result_t *res);
/* Reads out and LSE back, checks the gaps, compares with io->ref_out / ref_lse. `layer` (0-based)
 * names the run in messages; `corrupt`: self-test. */
void cf_attn_io_judge(const cf_case_t *c, cf_dev_t *dev, cf_attn_io_t *io, int layer, int corrupt, cf_result_t *res);
void cf_attn_io_free(cf_attn_io_t *io);

/* ---- the run itself, shared by attention and cascade (conform_attention.c) ---------------------- */

/* One run of a plan with the case's args, and the reference for the same inputs. */
typedef struct cf_attn_runner {
    const char *run_name;                                              /* "attnrt_attention_run" */
    attnrt_status_t (*run)(const void *user, attnrt_plan_t *plan, void *ws, size_t ws_bytes, attnrt_stream_t *s);
    void (*reference)(const void *user, const ref_attention_problem *p);
    const void *user;
} cf_attn_runner_t;

/* The cache the case needs: `lens` per stored sequence (the case's, plus a cascade's prefix). */
void cf_attn_cache_spec(const cf_case_t *c, const int *lens, int num_seqs, cf_cache_spec_t *s);
/* The capability questions of the case (op: paged attention or cascade; kv_write unless the cache is
 * written directly). 0 and *res unsupported when the device says no. */
int  cf_attn_supported(const cf_env_t *env, const cf_case_t *c, uint32_t op, const cf_cache_spec_t *spec,
                       cf_result_t *res);
/* Workspace, run, synchronise, reference, judge; again for a second layer when c->plan_reuse. */
void cf_attn_execute(const cf_env_t *env, const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, cf_attn_io_t *io,
                     const cf_cache_t *cache, attnrt_plan_t *plan, attnrt_stream_t *stream,
                     const cf_attn_runner_t *runner, cf_result_t *res);

/* The capability query the runtime makes for this case (op: paged attention or cascade). */
void cf_attn_query(const cf_case_t *c, uint32_t op, attnrt_op_query_t *q);
/* Allocates the plan's workspace (poisoned with 0xff bytes) when it needs one. 0, or -1 with *res. */
int  cf_workspace(cf_dev_t *dev, const attnrt_plan_t *plan, void **ws, size_t *bytes, cf_result_t *res);
/* Turns a plan/run status into the result: UNSUPPORTED -> unsupported, other errors -> fail.
 * Returns 1 when st is ATTNRT_OK. */
int  cf_check_status(attnrt_status_t st, const char *call, cf_result_t *res);

#endif
