/* plugin_softmax.h — the attention math every host-side implementation needs alike (cpu, npu_sim, a
 * reference): which keys a query sees, one step of a row's online softmax and its end, and the n-way
 * merge of partial states (docs/semantics.md, "Masks" and "Merging partial states"). f32 rows with the
 * exponentials and the final normalisation in the precision the semantics fix; no threads, no SIMD: a
 * plugin's own kernels do the bulk (scores, P V), these do the bookkeeping around them.
 *
 * Ownership: every pointer is the caller's and borrowed for the call; nothing is kept. */
#ifndef ATTNRT_PLUGIN_SOFTMAX_H
#define ATTNRT_PLUGIN_SOFTMAX_H

#include <stdint.h>

#include "attnrt_plugin.h"

/* Keys [*lo, *hi] (inclusive; empty when *lo > *hi) that a query at position pq sees among [0, seq_len):
 * causal keeps key positions <= pq; window_left / window_right (>= 0; < 0: unlimited) are inclusive
 * counts of keys to either side. */
/* A public sliding window (0: unlimited; W: W keys ending at the query's own position) as the inclusive
 * count of keys beyond the query's position the kernels take (-1: unlimited). */
static inline int64_t plugin_window_count(int32_t sliding_window) { return sliding_window > 0 ? sliding_window - 1 : -1; }

static inline void plugin_key_range(int64_t pq, int64_t seq_len, int causal, int64_t window_left,
                                    int64_t window_right, int64_t *lo, int64_t *hi)
{
    const int64_t left = window_left >= 0 ? pq - window_left : 0;
    const int64_t last = causal && pq < seq_len - 1 ? pq : seq_len - 1;
    const int64_t right = window_right >= 0 ? pq + window_right : last;
    *lo = left > 0 ? left : 0;
    *hi = right < last ? right : last;
}

/* One step of a row's online softmax over n new (scaled) scores s: m' = max(*m, max s), then s[j] =
 * e^{s[j] - m'} in place, *l = *l e^{*m - m'} + sum s[j], *m = m'; *alpha = e^{m_old - m'} is the
 * factor the row's accumulator takes before the new terms join it. Returns 0 when every score and *m
 * are -inf: nothing to add (s is zeroed, *alpha 1, the state untouched). */
int plugin_softmax_update(float *s, int n, float *m, float *l, float *alpha);

/* The end of a row's online softmax: o = acc / (l + e^{sink - m}) in place over n values, and the
 * row's LSE m + ln l (sinks excluded); a row that saw no key (l = 0) becomes 0 with LSE -inf. `sink`
 * is the head's raw sink logit, NULL without sinks. */
double plugin_softmax_finish(float *o, int64_t n, float m, float l, const float *sink);

/* Row (tok, h) of an n-way merge of partial states: m = max lse_i, w_i = e^{lse_i - m},
 * o = sum w_i o_i / sum w_i, lse = m + ln sum w_i; all states empty give (0, -inf) and a state of
 * weight 0 is never read (an empty partial's poisoned output cannot leak NaN). Sinks once, after:
 * o *= 1 / (1 + e^{sink - lse}). The row is accumulated in full before it is written, so out may be
 * one of the states (an in-place merge). `a` has been checked (plugin_merge_open); D = out's last dim. */
void plugin_merge_row(const attnrt_merge_args_t *a, int64_t tok, int64_t h, int64_t D);

#endif /* ATTNRT_PLUGIN_SOFTMAX_H */
