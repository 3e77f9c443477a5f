/* npu_online.c — the online-softmax state of a group of rows (npu_online.h). */
#include "npu_online.h"

#include <math.h>
#include <string.h>

#include "npu_plan.h"
#include "plugin_softmax.h"

size_t npu_online_floats(int64_t dqk, int64_t dv)
{
    if (dqk < 0 || dv < 0 || dqk > INT32_MAX || dv > INT32_MAX) return 0;
    const uint64_t R = NPU_ROWS_MAX, K = NPU_TILE; /* below 2^40 in all: no overflow in 64 bits */
    /* q rows, running acc / m / l, partition acc / m / l, K tile, V tile, scores */
    const uint64_t n = R * (uint64_t)dqk + 2 * (R * (uint64_t)dv + 2 * R) + K * (uint64_t)dqk + K * (uint64_t)dv + K;
    return n <= SIZE_MAX / sizeof(float) ? (size_t)n : 0;
}

void npu_online_carve(npu_online_t *o, float *base, int v_in_k)
{
    const int64_t R = NPU_ROWS_MAX, K = NPU_TILE;
    o->q = base;    base += R * o->dqk;
    o->acc = base;  base += R * o->dv;
    o->m = base;    base += R;
    o->l = base;    base += R;
    o->pacc = base; base += R * o->dv;
    o->pm = base;   base += R;
    o->pl = base;   base += R;
    o->kt = base;   base += K * o->dqk;
    o->vt = v_in_k ? o->kt : base;
    base += K * o->dv;
    o->s = base;
    o->v_stride = v_in_k ? o->dqk : o->dv;
}

void npu_online_begin(const npu_online_t *o, int64_t rows)
{
    for (int64_t r = 0; r < rows; r++) {
        o->m[r] = -INFINITY;
        o->l[r] = 0.0f;
    }
    memset(o->acc, 0, sizeof(float) * (size_t)(rows * o->dv));
}

void npu_online_partition(const npu_online_t *o, int64_t rows)
{
    for (int64_t r = 0; r < rows; r++) {
        o->pm[r] = -INFINITY;
        o->pl[r] = 0.0f;
    }
    memset(o->pacc, 0, sizeof(float) * (size_t)(rows * o->dv));
}

static float dot(const float *a, const float *b, int64_t n)
{
    float acc[8] = {0};
    int64_t d = 0;
    for (; d + 8 <= n; d += 8)
        for (int k = 0; k < 8; k++) acc[k] += a[d + k] * b[d + k];
    float tail = 0.0f;
    for (; d < n; d++) tail += a[d] * b[d];
    return tail + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void npu_online_fold(const npu_online_t *o, int64_t r, int jb, int je)
{
    const float *q = o->q + r * o->dqk;
    for (int k = jb; k < je; k++) o->s[k] = o->scale * dot(q, o->kt + k * o->dqk, o->dqk);
    float alpha;
    if (!plugin_softmax_update(o->s + jb, je - jb, &o->pm[r], &o->pl[r], &alpha)) return;
    float *acc = o->pacc + r * o->dv;
    for (int64_t d = 0; d < o->dv; d++) acc[d] *= alpha;
    for (int k = jb; k < je; k++) {
        const float w = o->s[k], *v = o->vt + k * o->v_stride;
        for (int64_t d = 0; d < o->dv; d++) acc[d] += w * v[d];
    }
}

void npu_online_merge(const npu_online_t *o, int64_t rows)
{
    for (int64_t r = 0; r < rows; r++) {
        if (o->pm[r] == -INFINITY) continue;
        const float m_new = o->pm[r] > o->m[r] ? o->pm[r] : o->m[r];
        const float a = expf(o->m[r] - m_new), b = expf(o->pm[r] - m_new);
        float *acc = o->acc + r * o->dv;
        const float *pacc = o->pacc + r * o->dv;
        for (int64_t d = 0; d < o->dv; d++) acc[d] = a * acc[d] + b * pacc[d];
        o->l[r] = a * o->l[r] + b * o->pl[r];
        o->m[r] = m_new;
    }
}

void npu_walk_units(const npu_walk_t *w, const void *job,
                    void (*unit)(const void *job, int64_t seq, int64_t q_begin, int64_t L, int64_t S, int64_t t0,
                                 int64_t t1))
{
    for (int pass = 0; pass < 2; pass++) /* decode rows (the padded batch) first, then each prefill */
        for (int64_t b = 0; b < w->num_seqs; b++) {
            const int64_t q_begin = plugin_clamp64(plugin_view_i32(w->qsl, b), 0, w->T);
            const int64_t L = plugin_clamp64(plugin_view_i32(w->qsl, b + 1), q_begin, w->T) - q_begin;
            const int64_t S = plugin_clamp64(plugin_view_i32(w->sl, b), 0, w->max_len);
            if (L == 0 || (pass == 0) != (L == 1)) continue;
            for (int64_t i = 0; i < L;) { /* prefill chunks: never across a partition */
                const int64_t end = npu_chunk_end(S - L + i, S, w->chunk, w->block) - (S - L);
                unit(job, b, q_begin, L, S, i, end > i ? end : L);
                i = end > i ? end : L;
            }
        }
}
