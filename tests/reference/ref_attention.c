/* ref_attention.c - paged attention, cascade attention, KV write and state merging in float64,
 * one query row at a time: collect every kept key's score into a buffer, subtract the max,
 * exponentiate, sum. No blocking and no online softmax, so it shares no trick with the kernels. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

/* Scratch for one row of scores; test-only code, so failing loudly beats a wrong golden answer. */
static void *ref_alloc(size_t count, size_t size)
{
    void *ptr = calloc(count ? count : 1, size);
    if (!ptr)
        abort();
    return ptr;
}

double ref_softmax_row(int n, double *w, const double *sink)
{
    double m, sum = 0.0, den;
    int j;

    if (n == 0)
        return -INFINITY;
    m = w[0];
    for (j = 1; j < n; j++)
        if (w[j] > m)
            m = w[j];
    for (j = 0; j < n; j++)
        sum += exp(w[j] - m);
    /* The sink is measured against the scores' max too; a sink far above them makes den inf and the
     * weights 0, which is the right limit (and not NaN). */
    den = sum + (sink ? exp(*sink - m) : 0.0);
    for (j = 0; j < n; j++)
        w[j] = exp(w[j] - m) / den;
    return m + log(sum);
}

/* Index of the NHD token row (block * block_size + row) holding concatenated position pk of request b:
 * positions below prefix_len are the shared cascade prefix, the rest the request's own tokens. */
static size_t token_row(const ref_attention_problem *p, int b, int prefix_len, const int32_t *prefix_table,
                        int pk)
{
    int pos = pk;
    int32_t block;

    if (pk < prefix_len) {
        block = prefix_table[pos / p->block_size];
    } else {
        pos = pk - prefix_len;
        block = p->block_table[(size_t)b * (size_t)p->max_blocks_per_seq + (size_t)(pos / p->block_size)];
    }
    return (size_t)block * (size_t)p->block_size + (size_t)(pos % p->block_size);
}

static int key_kept(const ref_attention_problem *p, int pq, int pk)
{
    if (p->causal && pk > pq)
        return 0;
    if (p->window_left >= 0 && pq - pk > p->window_left)
        return 0;
    if (p->window_right >= 0 && pk - pq > p->window_right)
        return 0;
    return 1;
}

/* Attention of every query over [prefix ; request's own keys]; plain paged attention is prefix_len 0. */
static void attend(const ref_attention_problem *p, int prefix_len, const int32_t *prefix_table)
{
    const int hq = p->num_q_heads, hkv = p->num_kv_heads, dqk = p->head_dim_qk, dv = p->head_dim_v;
    const int group = hq / hkv;
    int b;

    for (b = 0; b < p->num_seqs; b++) {
        const int q_begin = p->query_start_loc[b];
        const int q_len = p->query_start_loc[b + 1] - q_begin;
        const int kv_len = prefix_len + p->seq_lens[b];
        double *w = ref_alloc((size_t)kv_len, sizeof(double));
        size_t *rows = ref_alloc((size_t)kv_len, sizeof(size_t));
        int i, h;

        for (i = 0; i < q_len; i++) {
            const int t = q_begin + i;
            const int pq = kv_len - q_len + i; /* bottom-right alignment */
            for (h = 0; h < hq; h++) {
                const int kvh = h / group;
                const double *qv = p->q + ((size_t)t * hq + h) * dqk;
                double *o = p->out + ((size_t)t * hq + h) * dv;
                double lse;
                int n = 0, pk, j, d;

                /* Masks do not depend on the score, so testing them first and scoring only kept
                 * keys gives the same result as the contract's "score, then mask" order. */
                for (pk = 0; pk < kv_len; pk++) {
                    const double *kv;
                    double s = 0.0;
                    if (!key_kept(p, pq, pk))
                        continue;
                    rows[n] = token_row(p, b, prefix_len, prefix_table, pk);
                    kv = p->k_cache + (rows[n] * hkv + kvh) * dqk;
                    for (d = 0; d < dqk; d++)
                        s += qv[d] * kv[d];
                    s *= p->scale;
                    if (p->softcap > 0.0)
                        s = p->softcap * tanh(s / p->softcap);
                    if (p->alibi_slopes)
                        s += -p->alibi_slopes[h] * fabs((double)(pq - pk));
                    w[n++] = s;
                }
                lse = ref_softmax_row(n, w, p->sinks ? &p->sinks[h] : NULL);
                for (d = 0; d < dv; d++)
                    o[d] = 0.0;
                for (j = 0; j < n; j++) {
                    const double *vv = p->v_cache + (rows[j] * hkv + kvh) * dv;
                    for (d = 0; d < dv; d++)
                        o[d] += w[j] * vv[d];
                }
                if (p->lse)
                    p->lse[(size_t)t * hq + h] = lse;
            }
        }
        free(w);
        free(rows);
    }
}

void ref_paged_attention(const ref_attention_problem *p)
{
    attend(p, 0, NULL);
}

void ref_cascade_attention(const ref_attention_problem *suffix, int prefix_len,
                           const int32_t *prefix_block_table)
{
    attend(suffix, prefix_len, prefix_block_table);
}

void ref_kv_write(int num_tokens, int num_kv_heads, int head_dim_k, int head_dim_v, const double *k,
                  const double *v, const int64_t *slot_mapping, int block_size, double *k_cache,
                  double *v_cache)
{
    int t, h, d;

    for (t = 0; t < num_tokens; t++) {
        const int64_t slot = slot_mapping[t];
        size_t row;
        if (slot < 0) /* padding token */
            continue;
        /* NHD: row index block * block_size + row is the slot itself, spelt out to mirror the contract */
        row = (size_t)(slot / block_size) * (size_t)block_size + (size_t)(slot % block_size);
        for (h = 0; h < num_kv_heads; h++) {
            for (d = 0; d < head_dim_k; d++)
                k_cache[(row * num_kv_heads + h) * head_dim_k + d] =
                    k[((size_t)t * num_kv_heads + h) * head_dim_k + d];
            for (d = 0; d < head_dim_v; d++)
                v_cache[(row * num_kv_heads + h) * head_dim_v + d] =
                    v[((size_t)t * num_kv_heads + h) * head_dim_v + d];
        }
    }
}

void ref_merge_two(int num_tokens, int num_heads, int head_dim, const double *o_a, const double *s_a,
                   const double *o_b, const double *s_b, double *out, double *s_out)
{
    size_t th, count = (size_t)num_tokens * (size_t)num_heads;
    int d;

    for (th = 0; th < count; th++) {
        const double sa = s_a[th], sb = s_b[th];
        const double m = sa > sb ? sa : sb;
        double wa, wb;

        if (m == -INFINITY) { /* both empty: (0, -inf), never e^{-inf - -inf} = NaN */
            for (d = 0; d < head_dim; d++)
                out[th * head_dim + d] = 0.0;
            if (s_out)
                s_out[th] = -INFINITY;
            continue;
        }
        wa = exp(sa - m);
        wb = exp(sb - m);
        for (d = 0; d < head_dim; d++) {
            /* a zero weight skips the read: an empty partial's o may be garbage */
            double acc = 0.0;
            if (wa > 0.0)
                acc += wa * o_a[th * head_dim + d];
            if (wb > 0.0)
                acc += wb * o_b[th * head_dim + d];
            out[th * head_dim + d] = acc / (wa + wb);
        }
        if (s_out)
            s_out[th] = m + log(wa + wb);
    }
}

void ref_merge_states(int n, int num_tokens, int num_heads, int head_dim, const double *o, const double *s,
                      double *out, double *s_out)
{
    const size_t count = (size_t)num_tokens * (size_t)num_heads;
    size_t th;
    int i, d;

    for (th = 0; th < count; th++) {
        double m = -INFINITY, sum = 0.0;

        for (i = 0; i < n; i++)
            if (s[(size_t)i * count + th] > m)
                m = s[(size_t)i * count + th];
        for (d = 0; d < head_dim; d++)
            out[th * head_dim + d] = 0.0;
        if (m == -INFINITY) { /* every state empty (or n == 0) */
            if (s_out)
                s_out[th] = -INFINITY;
            continue;
        }
        for (i = 0; i < n; i++) {
            const double w = exp(s[(size_t)i * count + th] - m);
            if (w == 0.0)
                continue;
            sum += w;
            for (d = 0; d < head_dim; d++)
                out[th * head_dim + d] += w * o[((size_t)i * count + th) * head_dim + d];
        }
        for (d = 0; d < head_dim; d++)
            out[th * head_dim + d] /= sum;
        if (s_out)
            s_out[th] = m + log(sum);
    }
}
