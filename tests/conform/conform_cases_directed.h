/* conform_cases_directed.h - what the files of directed cases share: the builder that appends a case
 * with a stable per-tag seed (conform_cases.c), and the ABI 1.2 families (conform_cases12.c). */
#ifndef ATTNRT_CONFORM_CASES_DIRECTED_H
#define ATTNRT_CONFORM_CASES_DIRECTED_H

#include "conform_case.h"

#define CF_MIXED_BATCH "1/33 5/21 1/70 12/12 3/40" /* decode, chunked prefill, prefill, in no order */

typedef struct cf_builder {
    cf_case_list_t *list;
    uint64_t        seed;
    int             failed; /* an append failed (out of memory): the list is incomplete */
} cf_builder_t;

/* A new case `tag` with the defaults, a batch "q/kv q/kv ..." (query length / seq_len per request),
 * heads "Hq/Hkv", head dims and block size. Never NULL: after a failed append it returns scratch. */
cf_case_t *cf_directed_add(cf_builder_t *b, cf_op_t op, const char *tag, const char *batch, int hq, int hkv, int dqk,
                           int dv, int bs);
void cf_directed_dtypes(cf_case_t *c, cf_dtype_t q, cf_dtype_t out, cf_dtype_t kv);

/* conform_cases12.c: MLA, lightning, gated delta, state pools. */
void cf_directed_mla(cf_builder_t *b);
void cf_directed_lightning(cf_builder_t *b);
void cf_directed_gated_delta(cf_builder_t *b);
void cf_directed_state_pool(cf_builder_t *b);

#endif
