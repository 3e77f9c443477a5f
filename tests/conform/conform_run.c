/* conform_run.c - one case from start to verdict: the capability question, the op, the clock. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "conform_compare.h"
#include "conform_ops.h"

int cf_ask_supported(const cf_env_t *env, const attnrt_op_query_t *query, const char *what, cf_result_t *res)
{
    char reason[512] = "";
    attnrt_status_t st = attnrt_op_supported(env->ctx, query, reason, sizeof reason);
    if (st == ATTNRT_OK) return 1;
    if (st == ATTNRT_ERR_UNSUPPORTED)
        cf_result_unsupported(res, "%s: %s", what, reason[0] ? reason : attnrt_last_error());
    else /* the question itself was refused: the checker built it, so that is a failure to report */
        cf_result_fail(res, "attnrt_op_supported(%s): %s: %s", what, attnrt_status_name(st), attnrt_last_error());
    return 0;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cf_run_case(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->status = CF_PASS;
    res->error = res->lse_error = NAN;
    const cf_dtype_t dts[3] = {c->q_dtype, c->out_dtype, c->kv_dtype};
    res->tolerance = cf_tolerance_of(dts, c->op == CF_OP_MERGE ? 2 : 3);
    const double start = now_seconds();
    switch (c->op) {
    case CF_OP_ATTENTION: cf_run_attention(env, c, res); break;
    case CF_OP_CASCADE:   cf_run_cascade(env, c, res); break;
    case CF_OP_KV_WRITE:  cf_run_kv_write(env, c, res); break;
    case CF_OP_MERGE:     cf_run_merge(env, c, res); break;
    case CF_OP_MLA:       cf_run_mla(env, c, res); break;
    case CF_OP_LIGHTNING: cf_run_lightning(env, c, res); break;
    case CF_OP_GATED_DELTA: cf_run_gated_delta(env, c, res); break;
    case CF_OP_STATE_POOL: cf_run_state_pool(env, c, res); break;
    default:              cf_result_fail(res, "checker bug: unknown op %d", (int)c->op); break;
    }
    res->seconds = now_seconds() - start;
}
