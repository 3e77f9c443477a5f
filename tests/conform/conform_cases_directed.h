/* conform_cases_directed.h - the directed cases as data: one row per case (tag, op, batch, shape, dtypes,
 * features), tables of rows per op family, and the one function that turns a row into a case
 * (conform_cases.c). */
#ifndef ATTNRT_CONFORM_CASES_DIRECTED_H
#define ATTNRT_CONFORM_CASES_DIRECTED_H

#include <stddef.h>

#include "conform_case.h"

#define CF_MIXED_BATCH "1/33 5/21 1/70 12/12 3/40" /* decode, chunked prefill, prefill, in no order */

/* What a row switches on; each bit sets the cf_case_t field named beside it. */
typedef enum cf_feature {
    CF_LSE             = 1u << 0,  /* lse                                      */
    CF_SINKS           = 1u << 1,  /* sinks                                    */
    CF_ALIBI           = 1u << 2,  /* alibi                                    */
    CF_NONCAUSAL       = 1u << 3,  /* causal = 0                               */
    CF_HND             = 1u << 4,  /* hnd                                      */
    CF_BLOCK_SCALE     = 1u << 5,  /* per_block_scale                          */
    CF_INTERLEAVED     = 1u << 6,  /* kv_interleaved                           */
    CF_STRIDED         = 1u << 7,  /* strided                                  */
    CF_DIRECT_WRITE    = 1u << 8,  /* write_direct                             */
    CF_TWO_LAYERS      = 1u << 9,  /* plan_reuse                               */
    CF_STREAM          = 1u << 10, /* use_stream                               */
    CF_EDGE_VALUES     = 1u << 11, /* edge_values                              */
    CF_ALL_EMPTY_TOKEN = 1u << 12, /* all_empty_token                          */
    CF_EXTREME_LSE     = 1u << 13, /* extreme_lse                              */
    CF_SPARSE_HOST     = 1u << 14, /* sparse_host                              */
    CF_SPARSE_INVALID  = 1u << 15, /* sparse_invalid                           */
    CF_L2NORM          = 1u << 16, /* use_l2norm                               */
    CF_ZERO_SLOPE      = 1u << 17, /* zero_slope                               */
    CF_BLOCKWISE       = 1u << 18, /* blockwise                                */
} cf_feature_t;

typedef struct cf_window {
    int on, left, right; /* on: the row sets window_left / window_right (else both stay -1) */
} cf_window_t;
#define CF_WINDOW(left, right) .window = {1, (left), (right)}

/* One directed case. The positional part is the same for every op; the options after it are named
 * (designated initializers) and 0 keeps cf_case_defaults' value. */
typedef struct cf_row {
    cf_op_t     op;
    const char *tag;   /* the case's seed is a hash of the whole tag; the name keeps its first 23 characters */
    const char *batch; /* "q/kv ..." per request (query tokens / seq_len); lightning and gated delta: rounds,
                          "|"-separated, '!' starting a speculative one, each request "<q_len>p" (padding)
                          or "<q_len>s<seq>[i][a<accepted>]" (i: it has an initial state)                      */
    int         hq, hkv; /* query / KV heads; merge: H / 1; lightning, gated delta: H (q, k) / HV (v, state)  */
    int         dqk, dv, bs;
    cf_dtype_t  q, out, kv; /* kv_write: source / - / cache; merge: states / out / -; lightning, gated delta:
                               q k v / out / -; state pool: slots / - / -                                   */
    unsigned    features;   /* cf_feature_t bits */
    /* options */
    cf_window_t window;
    float       scale, softcap;
    int         prefix;      /* cascade: prefix_len                                    */
    int         padding;     /* padding_slots                                          */
    int         mml;         /* max_model_len; every seq_len must fit it               */
    int         topk;        /* MLA sparse                                             */
    int         spec;        /* gated delta: num_spec                                  */
    int         extra_slots, slot_ndim;
    int         states, tokens; /* merge: num_states, num_tokens; state pool: tokens = slots */
    double      slope_max, empty;
    cf_dtype_t  gb; /* gated delta: g and beta */
} cf_row_t;

typedef struct cf_table {
    const cf_row_t *rows;
    size_t          count;
} cf_table_t;
#define CF_TABLE(rows) {(rows), sizeof(rows) / sizeof((rows)[0])}

/* The tables, in list order (cf_cases_directed). */
extern const cf_table_t cf_cases_attention;    /* conform_cases_paged.c */
extern const cf_table_t cf_cases_cascade;      /* conform_cases_paged.c */
extern const cf_table_t cf_cases_kv_write;     /* conform_cases_paged.c */
extern const cf_table_t cf_cases_merge;        /* conform_cases_paged.c */
extern const cf_table_t cf_cases_large_blocks; /* conform_cases_paged.c */
extern const cf_table_t cf_cases_mla;          /* conform_cases_mla.c */
extern const cf_table_t cf_cases_lightning;    /* conform_cases_linear.c */
extern const cf_table_t cf_cases_gated_delta;  /* conform_cases_linear.c */
extern const cf_table_t cf_cases_state_pool;   /* conform_cases_linear.c */

#endif
