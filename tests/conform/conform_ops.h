/* conform_ops.h - running one case of each op against the device and the float64 reference.
 *
 * Each runner draws the case's inputs from its seed, asks attnrt_op_supported first (an unsupported
 * combination is reported as such, never as a pass), poisons every output with NaN, runs the op through
 * the public API, copies the results back, computes the reference and compares. It fills *res and
 * frees everything it allocated, whatever the outcome.
 */
#ifndef ATTNRT_CONFORM_OPS_H
#define ATTNRT_CONFORM_OPS_H

#include "attnrt.h"
#include "conform_case.h"

typedef struct cf_env {
    attnrt_context_t *ctx;     /* borrowed: the device under test                             */
    int               corrupt; /* --self-test-corrupt: perturb each result after the run      */
} cf_env_t;

void cf_run_attention(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_cascade(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_kv_write(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_merge(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_mla(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_lightning(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_gated_delta(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);
void cf_run_state_pool(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);

/* Dispatches on c->op and times the run. */
void cf_run_case(const cf_env_t *env, const cf_case_t *c, cf_result_t *res);

/* Asks the device about `query`; on "no" marks res unsupported with "<what>: <reason>" and returns 0. */
int cf_ask_supported(const cf_env_t *env, const attnrt_op_query_t *query, const char *what, cf_result_t *res);

#endif
