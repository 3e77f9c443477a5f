/* ref_mla.c - MLA (absorbed weights) over a single latent head, dense and sparse, in float64. The
 * score uses all kv_dim columns (latent + rope part); V is the latent's first v_dim columns. */
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

static const double *latent_at(const ref_mla_problem *p, int b, int pos)
{
    const size_t logical = (size_t)b * (size_t)p->max_blocks_per_seq + (size_t)(pos / p->block_size);
    const int32_t block = p->block_table[logical];
    const size_t row = (size_t)block * (size_t)p->block_size + (size_t)(pos % p->block_size);
    return p->kv_cache + row * (size_t)p->kv_dim;
}

void ref_mla(const ref_mla_problem *p)
{
    int b;

    for (b = 0; b < p->num_seqs; b++) {
        const int q_begin = p->query_start_loc[b];
        const int q_len = p->query_start_loc[b + 1] - q_begin;
        const int kv_len = p->seq_lens[b];
        /* a sparse list may repeat a position, so size for whichever list is longer */
        const int max_keys = p->indices && p->topk > kv_len ? p->topk : kv_len;
        double *w = ref_alloc((size_t)max_keys, sizeof(double));
        int *pos = ref_alloc((size_t)max_keys, sizeof(int));
        int i, h;

        for (i = 0; i < q_len; i++) {
            const int t = q_begin + i;
            const int pq = kv_len - q_len + i; /* bottom-right alignment */
            int n = 0, j;

            /* The kept key positions are the same for every head of this token. */
            if (p->indices) {
                for (j = 0; j < p->topk; j++) {
                    const int32_t pk = p->indices[(size_t)t * p->topk + j];
                    if (pk >= 0 && pk < kv_len)
                        pos[n++] = pk;
                }
            } else {
                for (j = 0; j < kv_len; j++)
                    if (!p->causal || j <= pq)
                        pos[n++] = j;
            }

            for (h = 0; h < p->num_q_heads; h++) {
                const double *qv = p->q + ((size_t)t * p->num_q_heads + h) * p->kv_dim;
                double *o = p->out + ((size_t)t * p->num_q_heads + h) * p->v_dim;
                double lse;
                int d;

                for (j = 0; j < n; j++) {
                    const double *c = latent_at(p, b, pos[j]);
                    double s = 0.0;
                    for (d = 0; d < p->kv_dim; d++)
                        s += qv[d] * c[d];
                    w[j] = p->scale * s;
                }
                lse = ref_softmax_row(n, w, p->sinks ? &p->sinks[h] : NULL);
                for (d = 0; d < p->v_dim; d++)
                    o[d] = 0.0;
                for (j = 0; j < n; j++) {
                    const double *c = latent_at(p, b, pos[j]);
                    for (d = 0; d < p->v_dim; d++)
                        o[d] += w[j] * c[d];
                }
                if (p->lse)
                    p->lse[(size_t)t * p->num_q_heads + h] = lse;
            }
        }
        free(w);
        free(pos);
    }
}
