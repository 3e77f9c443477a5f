/* merge.cu — merging partial attention states.
 *   ck_merge_states: the merge_states op, n (<= CK_MERGE_MAX_STATES) states of any layout and format.
 *   ck_attn_split_merge: the split-KV partials of the decode kernel, one block per row tile.
 * m = max lse_i, w_i = e^{lse_i - m}, o = sum w_i o_i / sum w_i, lse = m + ln sum w_i; all states empty
 * gives (0, -inf). A state of weight 0 is never read (its o may be poison). Sinks once, after: the
 * normaliser gains e^{sink - m}. One thread owns each output element and reads every state's element
 * before writing it, and the row's LSE is written after a barrier, so out (and out_lse) may alias a
 * state (an in-place merge). */
#include "ck_common.cuh"

extern "C" __global__ void __launch_bounds__(128) ck_merge_states(const __grid_constant__ ck_merge_args_t a)
{
    __shared__ float w[CK_MERGE_MAX_STATES];
    __shared__ float row_lse;
    const int n = a.num_states;
    const int64_t rows = a.num_tokens * a.num_heads;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t t = row / a.num_heads, h = row - t * a.num_heads;
        if (threadIdx.x == 0) {
            float m = -CK_INF;
            for (int i = 0; i < n; i++) m = fmaxf(m, a.st[i].lse[t * a.st[i].lse_st[0] + h * a.st[i].lse_st[1]]);
            double sum = 0.0;
            if (m != -CK_INF)
                for (int i = 0; i < n; i++)
                    sum += exp((double)a.st[i].lse[t * a.st[i].lse_st[0] + h * a.st[i].lse_st[1]] - (double)m);
            const double lse = m == -CK_INF ? -(double)CK_INF : (double)m + log(sum);
            double post = m == -CK_INF ? 0.0 : 1.0 / sum;
            if (a.sinks && m != -CK_INF) post /= 1.0 + exp((double)a.sinks[h * a.sinks_st] - lse);
            for (int i = 0; i < n; i++) {
                const float li = a.st[i].lse[t * a.st[i].lse_st[0] + h * a.st[i].lse_st[1]];
                w[i] = m == -CK_INF ? 0.0f : (float)(exp((double)li - (double)m) * post);
            }
            row_lse = (float)lse;
        }
        __syncthreads(); /* weights ready; every lse of this row has been read */
        for (int64_t d = threadIdx.x; d < a.dim; d += blockDim.x) {
            float acc = 0.0f;
            for (int i = 0; i < n; i++) {
                if (w[i] == 0.0f) continue;
                const ck_merge_state_t &s = a.st[i];
                acc += w[i] * ck_load(s.o, t * s.o_st[0] + h * s.o_st[1] + d, s.dtype);
            }
            ck_store(a.out, t * a.out_st[0] + h * a.out_st[1] + d, a.out_dtype, acc);
        }
        if (threadIdx.x == 0 && a.out_lse) a.out_lse[t * a.out_lse_st[0] + h * a.out_lse_st[1]] = row_lse;
        __syncthreads(); /* w and row_lse are rewritten for the next row */
    }
}

extern "C" __global__ void __launch_bounds__(128) ck_attn_split_merge(const __grid_constant__ ck_attn_args_t a)
{
    __shared__ float wts[CK_SPLIT_ROWS][CK_MAX_SPLITS];
    const ck_work_item_t it = a.items[blockIdx.x];
    const int64_t seq = it.seq;
    const int64_t q_begin = ck_clamp(a.qsl[seq * a.qsl_st], 0, a.num_tokens);
    const int64_t q_end = ck_clamp(a.qsl[(seq + 1) * a.qsl_st], q_begin, a.num_tokens);
    const int hc = it.head_count, ns = min(it.num_splits, CK_MAX_SPLITS);
    const int64_t ntok = min((int64_t)(CK_SPLIT_ROWS / hc), q_end - q_begin - it.q_first);
    if (ntok <= 0) return;
    const int nrows = (int)ntok * hc;
    const int hbase = it.kv_head * a.group + it.head_first;
    const int64_t tok0 = q_begin + it.q_first;
    const float *plse = a.part_lse + (int64_t)it.part_index * CK_SPLIT_ROWS;
    const float *po = a.part_o + (int64_t)it.part_index * CK_SPLIT_ROWS * a.dv;

    if (threadIdx.x < nrows) {
        const int row = threadIdx.x;
        const int64_t tok = tok0 + row / hc;
        const int h = hbase + row % hc;
        float m = -CK_INF;
        for (int s = 0; s < ns; s++) m = fmaxf(m, plse[s * CK_SPLIT_ROWS + row]);
        float sum = 0.0f, lse = -CK_INF, post = 0.0f;
        if (m != -CK_INF) {
            for (int s = 0; s < ns; s++) sum += expf(plse[s * CK_SPLIT_ROWS + row] - m);
            lse = m + logf(sum);
            float den = sum;
            if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m);
            post = 1.0f / den;
        }
        for (int s = 0; s < ns; s++) wts[row][s] = m == -CK_INF ? 0.0f : expf(plse[s * CK_SPLIT_ROWS + row] - m) * post;
        if (a.lse) a.lse[tok * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lse;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < nrows * a.dv; idx += blockDim.x) {
        const int row = idx / a.dv, c = idx - row * a.dv;
        float o = 0.0f;
        for (int s = 0; s < ns; s++) {
            const float ws = wts[row][s];
            if (ws != 0.0f) o += ws * po[((int64_t)s * CK_SPLIT_ROWS + row) * a.dv + c];
        }
        const int64_t tok = tok0 + row / hc;
        const int h = hbase + row % hc;
        ck_store(a.out, tok * a.out_st[0] + (int64_t)h * a.out_st[1] + c, a.out_dtype, o);
    }
}
