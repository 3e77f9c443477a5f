/* conform_case.h - what one conformance case is, what running it yields, and the case list.
 *
 * A case is plain data: the op, its shapes and options, and the seed its input numbers come from.
 * Running it (conform_ops.h) fills a cf_result_t. The list (conform_cases.c: directed cases that
 * cover every option, from the tables of conform_cases_directed.h; conform_sweep.c: the random sweep)
 * is a pure function of the global seed. conform_case.c holds the list, defaults and names.
 */
#ifndef ATTNRT_CONFORM_CASE_H
#define ATTNRT_CONFORM_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "conform_dtype.h"

#define CF_MAX_SEQS 16
#define CF_MAX_STATES 8
#define CF_MAX_ROUNDS 3
#define CF_NAME_MAX 320
#define CF_MESSAGE_MAX 768

typedef enum cf_op {
    CF_OP_ATTENTION = 0, /* attnrt_attention_plan / run (caches filled through attnrt_kv_write) */
    CF_OP_CASCADE,       /* attnrt_cascade_plan / run with one shared prefix                   */
    CF_OP_KV_WRITE,      /* attnrt_kv_write alone: bit-exact bytes, untouched slots kept       */
    CF_OP_MERGE,         /* attnrt_merge_states                                                 */
    CF_OP_MLA,           /* attnrt_mla_plan / run, dense or sparse (ABI 1.2)                    */
    CF_OP_LIGHTNING,     /* attnrt_lightning_plan / run over a state pool (ABI 1.2)             */
    CF_OP_GATED_DELTA,   /* attnrt_gated_delta_plan / run over a state pool (ABI 1.2)           */
    CF_OP_STATE_POOL,    /* attnrt_state_pool_* / attnrt_state_slot_* on their own (ABI 1.2)    */
    CF_OP_COUNT_
} cf_op_t;

/* One step (plan + run) of a state op: its requests in batch order. Each request continues a
 * logical sequence, whose state lives in a slot of the case's pool (the runner maps sequences to
 * slots), or is a padding row. */
typedef struct cf_state_round {
    int num_reqs;
    int spec;                      /* GDN: spec_state_indices / num_accepted this round            */
    int q_lens[CF_MAX_SEQS];
    int seq[CF_MAX_SEQS];          /* logical sequence 0 ..; -1: padding row (slot -1)             */
    int has_init[CF_MAX_SEQS];     /* 0: start from zeros; the slot then holds NaN garbage         */
    int accepted[CF_MAX_SEQS];     /* spec: num_accepted, 1 ..= num_spec + 1                       */
} cf_state_round_t;

typedef struct cf_case {
    cf_op_t  op;
    uint64_t seed;              /* every input number of the case is drawn from it        */
    char     tag[24];           /* short id: "attn-d80", "sweep-017"; names start with it  */

    /* batch (attention, cascade; kv_write uses seqs too: one slot run per sequence)      */
    int num_seqs;
    int q_lens[CF_MAX_SEQS];    /* query tokens of each request                           */
    int kv_lens[CF_MAX_SEQS];   /* seq_lens: KV length incl. the new tokens (cascade: suffix) */
    int prefix_len;             /* cascade: the shared prefix                             */

    int num_q_heads, num_kv_heads, head_dim_qk, head_dim_v, block_size;
    int max_model_len;          /* > 0: the block table is exactly max_model_len / block_size
                                   columns wide, as vLLM sizes it (a device may choose its kernel
                                   by it: npu_sim's naive = one column); 0: as wide as the longest
                                   sequence needs plus 0 or 1 padding column (drawn)              */
    cf_dtype_t q_dtype;         /* query; kv_write: key/value source; merge: states        */
    cf_dtype_t out_dtype;
    cf_dtype_t kv_dtype;        /* cache                                                  */

    int hnd;                    /* cache layout [blocks, Hkv, block_size, D] by strides    */
    int per_block_scale;        /* fp8: scale per (block, KV head), else per tensor        */
    int kv_interleaved;         /* K and V blocks alternate in one allocation (vLLM's
                                   [num_blocks, 2, ...]): a block stride of 2 blocks       */
    int strided;                /* q is a slice of a packed qkv row, out/LSE have padded or
                                   transposed strides; the gaps must stay untouched        */
    int write_direct;           /* caches written by the checker with the reference
                                   quantiser instead of attnrt_kv_write                    */
    int edge_values;            /* kv_write: ties, subnormals, saturation, -0              */
    int plan_reuse;             /* run the plan a second time, as the next layer would, with a
                                   new query into re-poisoned outputs                        */
    int use_stream;             /* run on a stream made with attnrt_stream_create          */
    int padding_slots;          /* kv_write: extra tokens with negative slots              */

    int   causal, window_left, window_right;
    float scale;                /* 0: the default 1 / sqrt(Dqk)                            */
    float softcap;              /* 0: off                                                  */
    int   alibi, sinks, lse;

    /* merge: num_states states of [T = num_tokens, H = num_q_heads, D = head_dim_v]       */
    int num_states, num_tokens;
    double empty_fraction;      /* share of (state, token, head) entries with lse = -inf   */
    int all_empty_token;        /* one token whose states are all empty                    */
    int extreme_lse;            /* lse values far apart and far from 0 (overflow traps)    */

    /* MLA (num_q_heads, head_dim_qk = kv_dim, head_dim_v = v_dim, block_size, causal, scale,
       sinks, lse, strided, plan_reuse, use_stream; the batch in q_lens / kv_lens)            */
    int topk;                   /* sparse: indices [T, topk]; 0 = dense                      */
    int sparse_host;            /* pass indices_host (then no index >= seq_len is drawn)     */
    int sparse_invalid;         /* -1 entries, duplicates and indices past seq_len           */

    /* lightning / gated delta: num_q_heads = H (q, k), num_v_heads = HV (v, out, state; =H for
       lightning), head_dim_qk = Dk, head_dim_v = Dv, q_dtype (q, k, v), out_dtype, scale   */
    int num_v_heads;
    cf_dtype_t gb_dtype;        /* GDN g and beta                                             */
    int use_l2norm;
    int num_spec;               /* GDN spec decoding: draft tokens per request               */
    int num_rounds;
    cf_state_round_t rounds[CF_MAX_ROUNDS];
    int extra_slots;            /* allocated slots no request names (must stay byte-identical) */
    int zero_slope;             /* lightning: head 0 has slope 0 (no decay)                  */
    double slope_max;           /* lightning: slopes drawn up to this (0: MiniMax's formula) */
    int blockwise;              /* lightning: N tokens in one call == 64 chunks == N decode steps */

    /* state pool API: pool of num_tokens slots of shape [num_q_heads, head_dim_qk, head_dim_v]
       (slot_ndim of them, trailing), dtype q_dtype                                          */
    int slot_ndim;
} cf_case_t;

typedef enum cf_status {
    CF_PASS = 0,
    CF_FAIL,
    CF_UNSUPPORTED,
} cf_status_t;

typedef struct cf_result {
    cf_status_t status;
    double      error;     /* measured: relative L2 of out (kv_write: worst fp8 ulp distance);
                              NAN when nothing was measured                                 */
    double      lse_error; /* worst |lse - ref| / (1 + |ref|); NAN when there is no LSE    */
    double      tolerance;
    double      seconds;
    int         corrupted; /* --self-test-corrupt perturbed this case's result after the run   */
    int         has_stats; /* the device keeps op counters (attnrt_last_op_stats): op_stats holds
                              those of the case's attention run (a simulator's cost model)        */
    double      stats_us;
    unsigned long long stats_bytes, stats_flops, stats_partitions, stats_padded_rows, stats_padding_tokens,
                       stats_launches;
    char        message[CF_MESSAGE_MAX]; /* why it failed or is unsupported; "" on pass     */
} cf_result_t;

/* A growable list of cases. */
typedef struct cf_case_list {
    cf_case_t *items;
    size_t     count, cap;
} cf_case_list_t;

/* Appends a copy; returns the stored case (NULL when out of memory). */
cf_case_t *cf_case_list_add(cf_case_list_t *list, const cf_case_t *c);
void       cf_case_list_free(cf_case_list_t *list);

/* A case with every field at its neutral default (f32, NHD, causal, no window, one empty batch). */
void cf_case_defaults(cf_case_t *c, cf_op_t op);
/* Total query tokens (attention, cascade) of the case. */
int  cf_case_tokens(const cf_case_t *c);
/* "tag op dtypes shapes options": unique within a list, stable for --filter. */
void cf_case_name(const cf_case_t *c, char *buf, size_t cap);
const char *cf_op_label(cf_op_t op);

/* The directed cases (conform_cases.c, one table row each): every option at least once, boundaries on purpose. */
int cf_cases_directed(cf_case_list_t *list, uint64_t seed);
/* `count` random cases over the whole parameter space of the 1.1 ops, then (count + 1) / 2 over the
 * ABI 1.2 ops (MLA, lightning, gated delta) (conform_sweep.c). */
int cf_cases_sweep(cf_case_list_t *list, uint64_t seed, int count);
/* How many cases cf_cases_sweep adds for `count`. */
int cf_cases_sweep_size(int count);

/* Case seeds: a stable function of the global seed and the case's position. */
uint64_t cf_case_seed(uint64_t global_seed, uint64_t index);

#endif
