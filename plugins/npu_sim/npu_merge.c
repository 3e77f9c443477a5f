/* npu_merge.c — n-way merge of partial states (o_i, lse_i), SEMANTICS.md "Merging partial states":
 * the same online-softmax merge the flash kernel applies between KV partitions, offered as an op.
 * m = max lse_i; w_i = e^{lse_i - m}; o = sum w_i o_i / sum w_i; lse = m + ln sum w_i; all empty gives
 * (0, -inf) and a state of weight 0 is never read. Sinks once, after: o *= 1 / (1 + e^{sink - lse}).
 * Each row is accumulated in full before it is written, so out may alias a state (in-place merge). */
#include <math.h>
#include <string.h>

#include "dtype_convert.h"
#include "npu_cost.h"
#include "npu_ops.h"
#include "plugin_error.h"
#include "plugin_struct.h"

#define D_CHUNK 64 /* floats of stack accumulator per step */

static float lse_at(const attnrt_tensor_t *t, int64_t tok, int64_t h)
{
    return ((const float *)t->data)[tok * t->strides[0] + h * t->strides[1]];
}

static void merge_row(const attnrt_merge_args_t *a, int64_t tok, int64_t h, int64_t D)
{
    const uint32_t n = a->num_states;
    float m = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        const float s = lse_at(a->lses[i], tok, h);
        m = s > m ? s : m;
    }
    double sum = 0.0;
    if (m != -INFINITY)
        for (uint32_t i = 0; i < n; i++) sum += exp((double)lse_at(a->lses[i], tok, h) - (double)m);
    const double lse = m == -INFINITY ? -INFINITY : (double)m + log(sum);
    double post = m == -INFINITY ? 0.0 : 1.0 / sum;
    if (a->sinks && m != -INFINITY) {
        const float sink = ((const float *)a->sinks->data)[h * a->sinks->strides[0]];
        post /= 1.0 + exp((double)sink - lse);
    }
    const dc_kind_t ok = dc_kind_of(a->out->dtype);
    char *out = (char *)a->out->data + (size_t)(tok * a->out->strides[0] + h * a->out->strides[1]) * dc_kind_size(ok);
    float acc[D_CHUNK], tmp[D_CHUNK];
    for (int64_t d0 = 0; d0 < D; d0 += D_CHUNK) {
        const int64_t nd = D - d0 < D_CHUNK ? D - d0 : D_CHUNK;
        memset(acc, 0, sizeof acc);
        for (uint32_t i = 0; i < n && m != -INFINITY; i++) {
            const float w = (float)(exp((double)lse_at(a->lses[i], tok, h) - (double)m) * post);
            if (w == 0.0f) continue;
            const attnrt_tensor_t *st = a->states[i];
            const dc_kind_t k = dc_kind_of(st->dtype);
            const char *o = (const char *)st->data +
                            (size_t)(tok * st->strides[0] + h * st->strides[1] + d0) * dc_kind_size(k);
            dc_row_to_f32(tmp, o, k, (size_t)nd, 1.0f);
            for (int64_t j = 0; j < nd; j++) acc[j] += w * tmp[j];
        }
        dc_row_from_f32(out + (size_t)d0 * dc_kind_size(ok), acc, ok, (size_t)nd, 1.0f);
    }
    if (a->out_lse) ((float *)a->out_lse->data)[tok * a->out_lse->strides[0] + h * a->out_lse->strides[1]] = (float)lse;
}

attnrt_status_t npu_merge_states(npu_device_t *d, const attnrt_merge_args_t *in)
{
    attnrt_merge_args_t a;
    PLUGIN_COPY_IN(a, in);
    if (a.num_states < 1 || !a.states || !a.lses || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, NPU_DEV_FMT " merge_states: needs >= 1 state, its lses and out",
                           NPU_DEV_ARG(d));
    int64_t state_bytes = 0;
    for (uint32_t i = 0; i < a.num_states; i++) {
        const dc_kind_t k = a.states[i] ? dc_kind_of(a.states[i]->dtype) : DC_INVALID;
        if (!a.lses[i] || (k != DC_F32 && k != DC_F16 && k != DC_BF16))
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " merge_states: state %u is missing, has no lse, or "
                               "is not f32/f16/bf16", NPU_DEV_ARG(d), i);
        state_bytes = (int64_t)dc_kind_size(k);
    }
    const dc_kind_t ok = dc_kind_of(a.out->dtype);
    if (ok != DC_F32 && ok != DC_F16 && ok != DC_BF16)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, NPU_DEV_FMT " merge_states: out dtype %s is not f32/f16/bf16",
                           NPU_DEV_ARG(d), dc_kind_name(ok));
    const int64_t T = a.out->shape[0], H = a.out->shape[1], D = a.out->shape[2];
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) merge_row(&a, t, h, D);
    attnrt_op_stats_t st;
    npu_cost_begin(&st, ATTNRT_OP_MERGE_STATES);
    npu_cost_merge(d->sel.profile, a.num_states, T, H, D, state_bytes, (int64_t)dc_kind_size(ok), &st);
    npu_device_record(d, &st);
    return ATTNRT_OK;
}
