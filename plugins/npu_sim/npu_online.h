/* npu_online.h — the flash kernel's arithmetic on the CPU, shared by paged attention and MLA: a group
 * of query rows keeps a running softmax state (m, l, acc); each KV partition builds its own partial
 * state (pm, pl, pacc) from tiles of keys, then merges into the running one:
 * m' = max(m, m_p); acc' = e^{m - m'} acc + e^{m_p - m'} acc_p; l' likewise. A row ends with
 * plugin_softmax_finish over its acc, m and l. */
#ifndef ATTNRT_NPU_ONLINE_H
#define ATTNRT_NPU_ONLINE_H

#include <stddef.h>
#include <stdint.h>

#include "plugin_tensor.h"

/* Keys dequantised and scored together inside a partition (the CPU's tile, not the NPU's). */
#define NPU_TILE 128
/* Query rows (tokens x query heads of one KV head) one unit of work carries. */
#define NPU_ROWS_MAX 64

typedef struct npu_online {
    int64_t dqk, dv;   /* query / key row width; value width                                          */
    int64_t v_stride;  /* floats from one tile V row to the next: dv (a V tile) or dqk (V inside K)  */
    float   scale;
    /* scratch, carved by npu_online_carve */
    float *q, *acc, *m, *l, *pacc, *pm, *pl, *kt, *vt, *s;
} npu_online_t;

/* Floats of scratch for these widths; 0 when that many bytes overflow size_t. */
size_t npu_online_floats(int64_t dqk, int64_t dv);
/* Points the scratch at base (npu_online_floats(dqk, dv) floats); vt = kt when V lies inside K. */
void npu_online_carve(npu_online_t *o, float *base, int v_in_k);

/* Starts `rows` rows: running state empty. */
void npu_online_begin(const npu_online_t *o, int64_t rows);
/* Starts a partition for `rows` rows. */
void npu_online_partition(const npu_online_t *o, int64_t rows);
/* Folds tile keys [jb, je) into row r's partition state. */
void npu_online_fold(const npu_online_t *o, int64_t r, int jb, int je);
/* Merges each row's partition state into its running state. */
void npu_online_merge(const npu_online_t *o, int64_t rows);
/* The NPU's order of work over a batch: decode requests (query length 1) first, as the padded decode
 * batch, then each other request alone in prefill chunks of `chunk` tokens that never cross a
 * partition of `block` tokens. Metadata is clamped: query rows to [0, T], seq_len to [0, max_len]. */
typedef struct npu_walk {
    int64_t num_seqs, T, max_len, chunk, block;
    const plugin_view_t *qsl, *sl; /* query_start_loc [num_seqs + 1], seq_lens [num_seqs] */
} npu_walk_t;
/* Calls unit(job, request, first query row, query length L, seq_len S, t0, t1) per unit of tokens
 * [t0, t1) of the request's L. */
void npu_walk_units(const npu_walk_t *w, const void *job,
                    void (*unit)(const void *job, int64_t seq, int64_t q_begin, int64_t L, int64_t S, int64_t t0,
                                 int64_t t1));

#endif
