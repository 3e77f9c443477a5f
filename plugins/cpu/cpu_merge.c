/* cpu_merge.c — n-way merge of partial attention states (o_i, lse_i), SEMANTICS.md "Merging partial
 * states": m = max lse_i; w_i = e^{lse_i - m}; o = sum w_i o_i / sum w_i; lse = m + ln(sum w_i). All
 * states empty (m = -inf) gives (0, -inf). A state with weight 0 is not read, so the poisoned output
 * of an empty partial cannot leak NaN. Sinks are applied once, after the merge:
 * o *= 1 / (1 + e^{sink - lse}).
 *
 * Each output row is built D_CHUNK columns at a time from every state before any of it is written, so
 * out may be the very same tensor as one of the states (an in-place merge), and lse likewise.
 */
#include <math.h>
#include <string.h>

#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define D_CHUNK 64                /* floats of stack accumulator per step                  */
#define MIN_ROWS_PER_ITEM 64      /* (token, head) rows per work item at the least           */

typedef struct merge_job {
    const attnrt_merge_args_t *a;
    int64_t T, H, D;
    int64_t rows_per_item;
} merge_job_t;

static float lse_at(const attnrt_tensor_t *t, int64_t tok, int64_t h)
{
    return ((const float *)t->data)[tok * t->strides[0] + h * t->strides[1]];
}

static void merge_row(const merge_job_t *job, int64_t tok, int64_t h)
{
    const attnrt_merge_args_t *a = job->a;
    const uint32_t n = a->num_states;
    const dc_kind_t out_kind = dc_kind_of(a->out->dtype);
    const size_t out_es = dc_kind_size(out_kind);
    char *out = (char *)a->out->data + (size_t)(tok * a->out->strides[0] + h * a->out->strides[1]) * out_es;

    float m = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        const float s = lse_at(a->lses[i], tok, h);
        m = s > m ? s : m;
    }
    double sum = 0.0;
    if (m != -INFINITY)
        for (uint32_t i = 0; i < n; i++) sum += exp((double)lse_at(a->lses[i], tok, h) - (double)m);
    const double lse = m == -INFINITY ? -INFINITY : (double)m + log(sum);
    /* one factor for the normalisation and the sink: o = sum_i w_i o_i * post */
    double post = m == -INFINITY ? 0.0 : 1.0 / sum;
    if (a->sinks && m != -INFINITY) {
        const float sink = ((const float *)a->sinks->data)[h * a->sinks->strides[0]];
        post /= 1.0 + exp((double)sink - lse);
    }

    float acc[D_CHUNK], tmp[D_CHUNK];
    for (int64_t d0 = 0; d0 < job->D; d0 += D_CHUNK) {
        const int64_t nd = job->D - d0 < D_CHUNK ? job->D - d0 : D_CHUNK;
        memset(acc, 0, sizeof acc);
        for (uint32_t i = 0; i < n && m != -INFINITY; i++) {
            const float w = (float)(exp((double)lse_at(a->lses[i], tok, h) - (double)m) * post);
            if (w == 0.0f) continue;
            const attnrt_tensor_t *st = a->states[i];
            const dc_kind_t k = dc_kind_of(st->dtype);
            const char *o = (const char *)st->data +
                            (size_t)(tok * st->strides[0] + h * st->strides[1] + d0) * dc_kind_size(k);
            dc_row_to_f32(tmp, o, k, (size_t)nd, 1.0f);
            cpu_vec_axpy(acc, tmp, w, nd);
        }
        dc_row_from_f32(out + (size_t)d0 * out_es, acc, out_kind, (size_t)nd, 1.0f);
    }
    if (a->out_lse) ((float *)a->out_lse->data)[tok * a->out_lse->strides[0] + h * a->out_lse->strides[1]] = (float)lse;
}

static void merge_item(void *ctx, size_t item, unsigned worker)
{
    (void)worker;
    const merge_job_t *job = ctx;
    const int64_t rows = job->T * job->H;
    const int64_t r0 = (int64_t)item * job->rows_per_item;
    const int64_t r1 = r0 + job->rows_per_item < rows ? r0 + job->rows_per_item : rows;
    for (int64_t r = r0; r < r1; r++) merge_row(job, r / job->H, r % job->H);
}

attnrt_status_t cpu_merge_states(cpu_pool_t *pool, const attnrt_merge_args_t *in)
{
    attnrt_merge_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (a.num_states < 1 || !a.states || !a.lses || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu merge_states: needs >= 1 state, its lses and out");
    for (uint32_t i = 0; i < a.num_states; i++) {
        dc_kind_t k = a.states[i] ? dc_kind_of(a.states[i]->dtype) : DC_INVALID;
        if (!a.lses[i] || (k != DC_F32 && k != DC_F16 && k != DC_BF16))
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu merge_states: state %u is missing, has no lse, or is not f32/f16/bf16", i);
    }
    dc_kind_t ok = dc_kind_of(a.out->dtype);
    if (ok != DC_F32 && ok != DC_F16 && ok != DC_BF16)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu merge_states: out dtype %s is not f32/f16/bf16", dc_kind_name(ok));

    merge_job_t job = {&a, a.out->shape[0], a.out->shape[1], a.out->shape[2], 0};
    const int64_t rows = job.T * job.H;
    if (rows <= 0) return ATTNRT_OK;
    const int64_t threads = (int64_t)cpu_pool_size(pool);
    int64_t per_item = (rows + 4 * threads - 1) / (4 * threads);
    if (per_item < MIN_ROWS_PER_ITEM) per_item = MIN_ROWS_PER_ITEM;
    job.rows_per_item = per_item;
    cpu_parallel_for(pool, (size_t)((rows + per_item - 1) / per_item), merge_item, &job);
    return ATTNRT_OK;
}
