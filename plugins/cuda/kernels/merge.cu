/* merge.cu — the merge_states op: n (<= CK_MERGE_MAX_STATES) partial attention states of any layout and
 * format merged into one (the decode kernel merges its own key splits: split_merge.cuh).
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
