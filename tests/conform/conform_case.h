/* conform_case.h - what one conformance case is, what running it yields, and the case list.
 *
 * A case is plain data: the op, its shapes and options, and the seed its input numbers come from.
 * Running it (conform_ops.h) fills a cf_result_t. The list (conform_cases.c: directed cases that
 * cover every option, conform_sweep.c: the random sweep) is a pure function of the global seed.
 */
#ifndef ATTNRT_CONFORM_CASE_H
#define ATTNRT_CONFORM_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "conform_dtype.h"

#define CF_MAX_SEQS 16
#define CF_MAX_STATES 8
#define CF_NAME_MAX 320
#define CF_MESSAGE_MAX 768

typedef enum cf_op {
    CF_OP_ATTENTION = 0, /* attnrt_attention_plan / run (caches filled through attnrt_kv_write) */
    CF_OP_CASCADE,       /* attnrt_cascade_plan / run with one shared prefix                   */
    CF_OP_KV_WRITE,      /* attnrt_kv_write alone: bit-exact bytes, untouched slots kept       */
    CF_OP_MERGE,         /* attnrt_merge_states                                                 */
    CF_OP_COUNT_
} cf_op_t;

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

/* The directed cases (conform_cases.c): every option at least once, boundaries on purpose. */
int cf_cases_directed(cf_case_list_t *list, uint64_t seed);
/* `count` random cases over the whole parameter space (conform_sweep.c). */
int cf_cases_sweep(cf_case_list_t *list, uint64_t seed, int count);

/* Case seeds: a stable function of the global seed and the case's position. */
uint64_t cf_case_seed(uint64_t global_seed, uint64_t index);

#endif
