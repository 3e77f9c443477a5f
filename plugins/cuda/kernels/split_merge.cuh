/* split_merge.cuh — combining the split-KV partial states of one decode row tile (the item's
 * num_splits states at part_index): m = max lse_s, w_s = e^{lse_s - m}, o = sum w_s o_s / (sum w_s +
 * sink), lse = m + ln sum w_s; all splits empty gives (0, -inf). Shared by the merge kernel and the
 * decode kernel's last block of a row tile. The partials are read through L2 (__ldcg): in the decode
 * kernel other blocks wrote them during this launch. */
#ifndef ATTNRT_SPLIT_MERGE_CUH
#define ATTNRT_SPLIT_MERGE_CUH

#include "ck_common.cuh"

/* wts: CK_SPLIT_ROWS x CK_MAX_SPLITS floats of shared memory; all threads of the block call it. */
__device__ __forceinline__ void ck_split_merge_rows(const ck_attn_args_t &a, const ck_work_item_t &it, float *wts)
{
    const int64_t seq = it.seq;
    const ck_request_t rq = ck_request(a, seq);
    const int64_t q_begin = rq.q_begin;
    const int hc = it.head_count, ns = min(it.num_splits, CK_MAX_SPLITS);
    const int64_t ntok = min((int64_t)(CK_SPLIT_ROWS / hc), rq.L - it.q_first);
    if (ntok <= 0) return;
    const int nrows = (int)ntok * hc;
    const int hbase = it.kv_head * a.group + it.head_first;
    const int64_t tok0 = q_begin + it.q_first;
    const float *plse = a.part_lse + (int64_t)it.part_index * CK_SPLIT_ROWS;
    const float *po = a.part_o + (int64_t)it.part_index * CK_SPLIT_ROWS * a.dv;

    if ((int)threadIdx.x < nrows) {
        const int row = threadIdx.x;
        const int64_t tok = tok0 + row / hc;
        const int h = hbase + row % hc;
        float m = -CK_INF;
        for (int s = 0; s < ns; s++) m = fmaxf(m, __ldcg(plse + s * CK_SPLIT_ROWS + row));
        float sum = 0.0f, lse = -CK_INF, post = 0.0f;
        if (m != -CK_INF) {
            for (int s = 0; s < ns; s++) sum += expf(__ldcg(plse + s * CK_SPLIT_ROWS + row) - m);
            lse = m + logf(sum);
            float den = sum;
            if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m);
            post = 1.0f / den;
        }
        for (int s = 0; s < ns; s++)
            wts[row * CK_MAX_SPLITS + s] = m == -CK_INF ? 0.0f : expf(__ldcg(plse + s * CK_SPLIT_ROWS + row) - m) * post;
        if (a.lse) a.lse[tok * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lse;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < nrows * a.dv; idx += blockDim.x) {
        const int row = idx / a.dv, c = idx - row * a.dv;
        float o = 0.0f;
        for (int s = 0; s < ns; s++) {
            const float ws = wts[row * CK_MAX_SPLITS + s];
            if (ws != 0.0f) o += ws * __ldcg(po + ((int64_t)s * CK_SPLIT_ROWS + row) * a.dv + c);
        }
        const int64_t tok = tok0 + row / hc;
        const int h = hbase + row % hc;
        ck_store(a.out, tok * a.out_st[0] + (int64_t)h * a.out_st[1] + c, a.out_dtype, o);
    }
}

#endif /* ATTNRT_SPLIT_MERGE_CUH */
