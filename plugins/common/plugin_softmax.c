/* plugin_softmax.c — see plugin_softmax.h. */
#include "plugin_softmax.h"

#include <math.h>
#include <string.h>

#include "dtype_convert.h"

#define MERGE_CHUNK 64 /* floats of stack accumulator per step of a merged row */

int plugin_softmax_update(float *s, int n, float *m, float *l, float *alpha)
{
    float smax = -INFINITY;
    for (int j = 0; j < n; j++) smax = s[j] > smax ? s[j] : smax;
    const float m_old = *m;
    const float m_new = smax > m_old ? smax : m_old;
    if (m_new == -INFINITY) { /* e^{-inf - -inf} would be NaN */
        memset(s, 0, (size_t)n * sizeof *s);
        *alpha = 1.0f;
        return 0;
    }
    float psum = 0.0f;
    for (int j = 0; j < n; j++) {
        s[j] = expf(s[j] - m_new);
        psum += s[j];
    }
    *alpha = expf(m_old - m_new); /* 0 on the row's first keys: m_old is -inf, the accumulator 0 */
    *l = *l * *alpha + psum;
    *m = m_new;
    return 1;
}

double plugin_softmax_finish(float *o, int64_t n, float m, float l, const float *sink)
{
    if (!(l > 0.0f)) {
        memset(o, 0, (size_t)n * sizeof *o);
        return -INFINITY;
    }
    double den = (double)l;
    if (sink) den += exp((double)*sink - (double)m);
    const float inv = (float)(1.0 / den); /* den inf (a sink far above): weights 0, not NaN */
    for (int64_t d = 0; d < n; d++) o[d] *= inv;
    return (double)m + log((double)l);
}

static float lse_at(const attnrt_tensor_t *t, int64_t tok, int64_t h)
{
    return ((const float *)t->data)[tok * t->strides[0] + h * t->strides[1]];
}

void plugin_merge_row(const attnrt_merge_args_t *a, int64_t tok, int64_t h, int64_t D)
{
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

    float acc[MERGE_CHUNK], tmp[MERGE_CHUNK];
    for (int64_t d0 = 0; d0 < D; d0 += MERGE_CHUNK) {
        const int64_t nd = D - d0 < MERGE_CHUNK ? D - d0 : MERGE_CHUNK;
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
        dc_row_from_f32(out + (size_t)d0 * out_es, acc, out_kind, (size_t)nd, 1.0f);
    }
    if (a->out_lse) ((float *)a->out_lse->data)[tok * a->out_lse->strides[0] + h * a->out_lse->strides[1]] = (float)lse;
}
