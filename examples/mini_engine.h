/*
 * mini_engine.h — the pieces of the mini engine example that its three files share.
 *
 *   mini_engine.c        flags, device buffers, the step loop (plan once, run per layer), the summary
 *   mini_engine_sched.c  requests, the paged block allocator and the token-budget scheduler (host only)
 *   mini_engine_check.c  the float64 checks of a step: attention against the paged cache as it is on the
 *                        device, the GDN layer against a float64 gated-delta recurrence
 *
 * Everything here is host code an engine would own; only mini_engine.c and the check call libattnrt.
 */
#ifndef MINI_ENGINE_H
#define MINI_ENGINE_H

#include <stdint.h>

#include "attnrt.h"

/* ---- configuration (flags) ------------------------------------------------------------------ */

typedef struct engine_config {
    int            layers, q_heads, kv_heads, head_dim, block_size;
    int            gdn_layers;              /* 0 | 1 gated-delta-net layers after the attention ones */
    int            steps, max_batch_tokens, max_seqs, pool_tokens;
    double         arrival_rate;            /* mean requests arriving per step (Poisson)            */
    int            min_prompt, max_prompt;  /* prompt lengths: log-normal, clamped to this range    */
    int            min_output, max_output;  /* output lengths: log-normal, clamped likewise         */
    uint64_t       seed;
    attnrt_dtype_t dtype;                   /* q / k / v / out                                       */
    attnrt_dtype_t kv_dtype;                /* the paged cache                                       */
    const char    *device;                  /* NULL: attnrt_open's default                            */
    int            check_every;             /* 0: never                                              */
    int            quiet;
} engine_config_t;

/* Prints "mini_engine: <what>: <status>: <attnrt_last_error()>" and returns 0 when st is an error. */
int api_ok(attnrt_status_t st, const char *what);
#define TRY_API(call)                        \
    do {                                     \
        if (!api_ok((call), #call)) goto fail; \
    } while (0)

/* ---- a seeded RNG (splitmix64): the same seed gives the same run on every device ---------------- */

typedef struct rng { uint64_t s; } rng_t;

static inline uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [0, 1). */
static inline double rng_uniform(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

/* ---- requests, the block pool and the scheduler (mini_engine_sched.c) ---------------------------- */

typedef struct request {
    int      id;
    int      prompt_len, output_len;
    int      generated;   /* tokens sampled so far; the request is done at output_len           */
    int      computed;    /* tokens whose K/V are in the cache                                  */
    int      scheduled;   /* tokens in this step's batch (0: not in it)                          */
    int      num_blocks;  /* blocks[0 .. num_blocks) hold positions [0, num_blocks * block_size) */
    int32_t *blocks;      /* logical block -> physical block, max_blocks_per_seq entries       */
    int32_t  state_slot;  /* the GDN state slot (the same id in every GDN layer's pool); -1: none  */
} request_t;

/* A free list of physical block ids, shared by every layer: block b of the pool means block b of
 * each layer's cache, so one allocation serves the whole model. */
typedef struct block_pool {
    int32_t *free_ids;
    int      num_free, num_total;
} block_pool_t;

/* One step's batch on the host, in the shapes libattnrt wants; sized once for the largest step. */
typedef struct batch {
    int         num_seqs, num_tokens, prefill_tokens, decode_tokens;
    request_t **rows;            /* [num_seqs] the request behind each row                       */
    int32_t    *query_start_loc; /* [num_seqs + 1]                                                 */
    int32_t    *seq_lens;        /* [num_seqs] KV length including this step's tokens            */
    int32_t    *block_table;     /* [num_seqs, max_blocks_per_seq]                                */
    int64_t    *slot_mapping;    /* [num_tokens] block * block_size + row of each new token      */
} batch_t;

typedef struct scheduler {
    const engine_config_t *cfg;
    int                    max_blocks_per_seq;
    block_pool_t           pool;
    rng_t                  rng;
    request_t            **waiting, **running; /* FIFO (preempted ones go first); admission order */
    int                    num_waiting, num_running, waiting_cap;
    int                    next_id;
    long                   arrived, completed, preemptions;
    /* (optional) called when a running request gives up its seat (completed or preempted), before it
     * is freed or requeued: the engine returns the request's state slot there. */
    void                 (*on_release)(void *user, request_t *r);
    void                  *release_user;
} scheduler_t;

int  sched_init(scheduler_t *s, const engine_config_t *cfg);
void sched_destroy(scheduler_t *s);
int  batch_alloc(batch_t *b, const scheduler_t *s);
void batch_free(batch_t *b);
/* Adds this step's Poisson arrivals to the waiting queue; 0 when out of host memory. */
int  sched_arrivals(scheduler_t *s);
/* Picks this step's tokens within the budget (decodes first, then chunked prefill) and fills *b. */
void sched_schedule(scheduler_t *s, batch_t *b);
/* After the step ran: advances every scheduled request, samples, retires finished ones. */
void sched_finish_step(scheduler_t *s);
/* Blocks in use / blocks in the pool. */
double sched_pool_used(const scheduler_t *s);

/* ---- the float64 check (mini_engine_check.c) ------------------------------------------------- */

/* Encodes x as dtype (f32 / f16 / bf16) into element i of dst. */
void   encode_act(void *dst, size_t i, float x, attnrt_dtype_t dtype);
/* Element i of src in any dtype the example uses, as a double (fp8 not yet multiplied by a scale). */
double decode_any(const void *src, size_t i, attnrt_dtype_t dtype);
/* The fp8 format's largest finite value, for the KV scale; 0 for other dtypes. */
double fp8_max(attnrt_dtype_t dtype);
/* The relative L2 error a dtype pair is allowed against float64 (docs/semantics.md). */
double check_tolerance(const engine_config_t *cfg);

/* What one layer of one step looked like, for the check. Device pointers are that layer's. */
typedef struct check_layer {
    const batch_t *batch;
    const void    *q_host;                 /* [T, Hq, D] the exact query bits sent to the device */
    const void    *k_host, *v_host;        /* [T, Hkv, D] the K/V sent to attnrt_kv_write          */
    const void    *out_dev;                /* [T, Hq, D] the attention output on the device      */
    const void    *k_cache_dev, *v_cache_dev;
    float          k_scale, v_scale;       /* fp8 caches only                                    */
} check_layer_t;

/* Recomputes every row of the batch in float64 from the cache as stored on the device; *max_rel is
 * the largest relative L2 error of any request, *kv_bad the number of cache elements of this step's
 * tokens that do not hold what was written. 0 on an API failure (already printed). */
int check_step(attnrt_context_t *ctx, attnrt_stream_t *stream, const engine_config_t *cfg,
               int max_blocks_per_seq, const check_layer_t *in, double *max_rel, long *kv_bad);

/* The GDN layer of one step, for the check: inputs as sent (q, k, v in cfg->dtype; g, beta f32). */
typedef struct check_gdn {
    const batch_t  *batch;
    int             H, HV, Dk, Dv;
    const void     *q_host, *k_host;       /* [T, H, Dk]                                           */
    const void     *v_host;                /* [T, HV, Dv]                                          */
    const float    *g_host, *beta_host;    /* [T, HV]                                              */
    const uint8_t  *has_initial_state;     /* [B]                                                  */
    const float    *state_before;          /* [B, HV, Dk, Dv] row b's slot before the run (f32);
                                              read only where has_initial_state[b] = 1            */
    const void     *out_dev;               /* [T, HV, Dv] the GDN output on the device             */
} check_gdn_t;

/* Recomputes the step's GDN tokens in float64 (use_l2norm = 1, scale Dk^-1/2) and compares: *max_rel is
 * the largest relative L2 error of any request. 0 on an API failure or out of memory (printed). */
int check_gdn(attnrt_context_t *ctx, attnrt_stream_t *stream, const engine_config_t *cfg, const check_gdn_t *in,
              double *max_rel);

#endif
