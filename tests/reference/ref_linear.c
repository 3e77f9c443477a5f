/* ref_linear.c - lightning linear attention and the gated delta rule as the plain per-token
 * recurrences over a [Dk, Dv] state per head. Blockwise/chunked kernels must equal these. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scratch state; test-only code, so failing loudly beats a wrong golden answer. */
static void *ref_alloc(size_t count, size_t size)
{
    void *ptr = calloc(count ? count : 1, size);
    if (!ptr)
        abort();
    return ptr;
}

static void zero_rows(double *out, int first_token, int num_tokens, size_t row_len)
{
    size_t i;
    for (i = 0; i < (size_t)num_tokens * row_len; i++)
        out[(size_t)first_token * row_len + i] = 0.0;
}

void ref_lightning(int num_seqs, const int32_t *query_start_loc, const int32_t *state_indices,
                   const uint8_t *has_initial_state, int num_heads, int head_dim_k, int head_dim_v,
                   const double *slopes, const double *q, const double *k, const double *v,
                   double *state_pool, double *out)
{
    const int hn = num_heads, dk = head_dim_k, dv = head_dim_v;
    const size_t state_len = (size_t)hn * dk * dv;
    double *state = ref_alloc(state_len, sizeof(double)); /* [H, Dk, Dv] of the current request */
    int b;

    for (b = 0; b < num_seqs; b++) {
        const int q_begin = query_start_loc[b];
        const int q_len = query_start_loc[b + 1] - q_begin;
        const int32_t slot = state_indices[b];
        double *pooled;
        int i, h, a, d;

        if (slot < 0) { /* padding request */
            zero_rows(out, q_begin, q_len, (size_t)hn * dv);
            continue;
        }
        pooled = state_pool + (size_t)slot * state_len;
        if (!has_initial_state || has_initial_state[b])
            memcpy(state, pooled, state_len * sizeof(double));
        else
            memset(state, 0, state_len * sizeof(double)); /* all-bits-zero is 0.0 in IEEE 754 */

        for (i = 0; i < q_len; i++) {
            const size_t t = (size_t)(q_begin + i);
            for (h = 0; h < hn; h++) {
                const double lambda = exp(-slopes[h]);
                const double *qv = q + (t * hn + h) * dk;
                const double *kv = k + (t * hn + h) * dk;
                const double *vv = v + (t * hn + h) * dv;
                double *s = state + (size_t)h * dk * dv;
                double *o = out + (t * hn + h) * dv;

                for (a = 0; a < dk; a++) /* S = lambda S + k^T v */
                    for (d = 0; d < dv; d++)
                        s[a * dv + d] = lambda * s[a * dv + d] + kv[a] * vv[d];
                for (d = 0; d < dv; d++) { /* o = q S */
                    o[d] = 0.0;
                    for (a = 0; a < dk; a++)
                        o[d] += qv[a] * s[a * dv + d];
                }
            }
        }
        memcpy(pooled, state, state_len * sizeof(double));
    }
    free(state);
}

/* x / sqrt(sum x^2 + 1e-6), written to y. */
static void l2_normalise(const double *x, double *y, int n)
{
    double ss = 0.0;
    int i;
    for (i = 0; i < n; i++)
        ss += x[i] * x[i];
    for (i = 0; i < n; i++)
        y[i] = x[i] / sqrt(ss + 1e-6);
}

void ref_gated_delta(int num_seqs, const int32_t *query_start_loc, const int32_t *state_indices,
                     const uint8_t *has_initial_state, int num_heads, int num_v_heads, int head_dim_k,
                     int head_dim_v, int use_l2norm, double scale, const double *q, const double *k,
                     const double *v, const double *g, const double *beta, double *state_pool,
                     double *out, const int32_t *spec_state_indices, int num_spec,
                     const int32_t *num_accepted)
{
    const int hk = num_heads, hv = num_v_heads, dk = head_dim_k, dv = head_dim_v;
    const int group = hv / hk;
    const int spec = spec_state_indices != NULL && num_accepted != NULL;
    const size_t state_len = (size_t)hv * dk * dv;
    double *state = ref_alloc(state_len, sizeof(double)); /* [HV, Dk, Dv] of the current request */
    double *qn = ref_alloc((size_t)dk, sizeof(double));
    double *kn = ref_alloc((size_t)dk, sizeof(double));
    double *vnew = ref_alloc((size_t)dv, sizeof(double));
    int b;

    for (b = 0; b < num_seqs; b++) {
        const int q_begin = query_start_loc[b];
        const int q_len = query_start_loc[b + 1] - q_begin;
        const int32_t *spec_row = spec ? spec_state_indices + (size_t)b * (size_t)(num_spec + 1) : NULL;
        const int padding = spec ? spec_row[0] < 0 : state_indices[b] < 0;
        int32_t read_slot;
        int i, h, a, d;

        if (padding) {
            zero_rows(out, q_begin, q_len, (size_t)hv * dv);
            continue;
        }
        /* spec: the state after the last accepted token; num_accepted < 1 has none, so start from 0 */
        read_slot = !spec ? state_indices[b] : num_accepted[b] >= 1 ? spec_row[num_accepted[b] - 1] : -1;
        if ((!has_initial_state || has_initial_state[b]) && read_slot >= 0)
            memcpy(state, state_pool + (size_t)read_slot * state_len, state_len * sizeof(double));
        else
            memset(state, 0, state_len * sizeof(double)); /* all-bits-zero is 0.0 in IEEE 754 */

        for (i = 0; i < q_len; i++) {
            const size_t t = (size_t)(q_begin + i);
            for (h = 0; h < hv; h++) {
                const int kh = h / group;
                const double *qv = q + (t * hk + kh) * dk;
                const double *kv = k + (t * hk + kh) * dk;
                const double *vv = v + (t * hv + h) * dv;
                const double decay = exp(g[t * hv + h]);
                const double bt = beta[t * hv + h];
                double *s = state + (size_t)h * dk * dv;
                double *o = out + (t * hv + h) * dv;

                if (use_l2norm) {
                    l2_normalise(qv, qn, dk);
                    l2_normalise(kv, kn, dk);
                } else {
                    memcpy(qn, qv, (size_t)dk * sizeof(double));
                    memcpy(kn, kv, (size_t)dk * sizeof(double));
                }
                for (a = 0; a < dk; a++)
                    qn[a] *= scale;

                for (a = 0; a < dk; a++) /* S = e^g S */
                    for (d = 0; d < dv; d++)
                        s[a * dv + d] *= decay;
                for (d = 0; d < dv; d++) { /* v' = beta (v - S^T k) */
                    double stk = 0.0;
                    for (a = 0; a < dk; a++)
                        stk += s[a * dv + d] * kn[a];
                    vnew[d] = bt * (vv[d] - stk);
                }
                for (a = 0; a < dk; a++) /* S = S + k v'^T */
                    for (d = 0; d < dv; d++)
                        s[a * dv + d] += kn[a] * vnew[d];
                for (d = 0; d < dv; d++) { /* o = S^T q */
                    o[d] = 0.0;
                    for (a = 0; a < dk; a++)
                        o[d] += s[a * dv + d] * qn[a];
                }
            }
            if (spec && spec_row[i] >= 0) /* one slot per speculative position */
                memcpy(state_pool + (size_t)spec_row[i] * state_len, state, state_len * sizeof(double));
        }
        if (!spec)
            memcpy(state_pool + (size_t)state_indices[b] * state_len, state, state_len * sizeof(double));
    }
    free(state);
    free(qn);
    free(kn);
    free(vnew);
}
