/* split_merge.cuh — combining the split-KV partial states of one decode row tile (the item's
 * num_splits states at part_index): m = max lse_s, w_s = e^{lse_s - m}, o = sum w_s o_s / (sum w_s +
 * sink), lse = m + ln sum w_s; all splits empty gives (0, -inf). Run by the block that finishes a row
 * tile's last split: the decode kernels' and the warp-specialized kernel's (its decode items). The
 * partials are read through L2 (__ldcg): other blocks wrote them during this launch. */
#ifndef ATTNRT_SPLIT_MERGE_CUH
#define ATTNRT_SPLIT_MERGE_CUH

#include "ck_common.cuh"

/* The partial states of one split row tile: rows tok0 + row / hc, head hbase + row % hc for row < nrows; split s's row r
 * at slot-row part_index x CK_SPLIT_ROWS + s x rows + r (ck_work_item_t's layout, `rows` the tile's rows a split). */
struct ck_split_tile_t {
    int64_t tok0;
    int     hc, hbase, nrows, ns, part_index, rows;
};

/* wts: nrows x CK_MAX_SPLITS floats of shared memory; threads tid 0 .. nthreads - 1 (whole warps) call it, sync() a
 * barrier of exactly them. A merge is a chain of L2 round trips, not bytes (B 1 x 4096 at GQA 4: 4 rows of 32 splits,
 * 64 KB): the weights take a warp a row and a lane a split (every lse of a row in flight at once, reduced by shuffles),
 * the outputs a thread four columns with eight splits' loads in flight. */
template <class Sync>
__device__ __forceinline__ void ck_split_merge_tile(const ck_attn_args_t &a, const ck_split_tile_t &t, float *wts, int tid,
                                                    int nthreads, Sync sync)
{
    static_assert(CK_MAX_SPLITS <= 64, "a lane holds two splits' weights");
    const int hc = t.hc, ns = min(t.ns, CK_MAX_SPLITS), nrows = t.nrows, R = t.rows;
    const int64_t tok0 = t.tok0;
    const float *plse = a.part_lse + (int64_t)t.part_index * CK_SPLIT_ROWS; /* split s's rows: + s x R */
    const float *po = a.part_o + (int64_t)t.part_index * CK_SPLIT_ROWS * a.dv;
    const int lane = tid & 31, nwarps = nthreads >> 5;

    for (int row = tid >> 5; row < nrows; row += nwarps) {
        const float l0 = lane < ns ? __ldcg(plse + lane * R + row) : -CK_INF;
        const float l1 = lane + 32 < ns ? __ldcg(plse + (lane + 32) * R + row) : -CK_INF;
        float m = fmaxf(l0, l1);
#pragma unroll
        for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
        const float e0 = m == -CK_INF ? 0.0f : expf(l0 - m), e1 = m == -CK_INF ? 0.0f : expf(l1 - m);
        float sum = e0 + e1;
#pragma unroll
        for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
        const int h = t.hbase + row % hc;
        float lse = -CK_INF, post = 0.0f;
        if (m != -CK_INF) {
            lse = m + logf(sum);
            float den = sum;
            if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m);
            post = 1.0f / den;
        }
        if (lane < ns) wts[row * CK_MAX_SPLITS + lane] = e0 * post;
        if (lane + 32 < ns) wts[row * CK_MAX_SPLITS + lane + 32] = e1 * post;
        if (lane == 0 && a.lse) a.lse[(tok0 + row / hc) * a.lse_st[0] + (int64_t)h * a.lse_st[1]] = lse;
    }
    sync();
    /* an empty split (weight 0) wrote no partial: its values are not read into the sum (NaN-safe select) */
    const int dv = a.dv, cw = (dv & 3) == 0 ? 4 : 1, nq = dv / cw;
    for (int idx = tid; idx < nrows * nq; idx += nthreads) {
        const int row = idx / nq, c = (idx - row * nq) * cw;
        const float *w = wts + row * CK_MAX_SPLITS, *src = po + (int64_t)row * dv + c;
        const int64_t step = (int64_t)R * dv;
        float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (cw == 4) {
#pragma unroll 8
            for (int s = 0; s < ns; s++) {
                const float4 v = __ldcg(reinterpret_cast<const float4 *>(src + s * step));
                const float ws = w[s];
                o[0] += ws != 0.0f ? ws * v.x : 0.0f;
                o[1] += ws != 0.0f ? ws * v.y : 0.0f;
                o[2] += ws != 0.0f ? ws * v.z : 0.0f;
                o[3] += ws != 0.0f ? ws * v.w : 0.0f;
            }
        } else {
#pragma unroll 8
            for (int s = 0; s < ns; s++) {
                const float v = __ldcg(src + s * step), ws = w[s];
                o[0] += ws != 0.0f ? ws * v : 0.0f;
            }
        }
        const int64_t tok = tok0 + row / hc;
        const int h = t.hbase + row % hc;
        for (int j = 0; j < cw; j++) ck_store(a.out, tok * a.out_st[0] + (int64_t)h * a.out_st[1] + c + j, a.out_dtype, o[j]);
    }
}

/* The decode kernels' form: item it of a row tile of ROWS rows (CK_SPLIT_ROWS, or CK_DEC_WIDE_ROWS), wts ROWS x
 * CK_MAX_SPLITS floats of shared memory, every thread of the block. */
template <int ROWS = CK_SPLIT_ROWS>
__device__ __forceinline__ void ck_split_merge_rows(const ck_attn_args_t &a, const ck_work_item_t &it, float *wts)
{
    const ck_request_t rq = ck_request(a, it.seq);
    const int64_t ntok = min((int64_t)(ROWS / it.head_count), rq.L - it.q_first);
    if (ntok <= 0) return;
    ck_split_tile_t t;
    t.tok0 = rq.q_begin + it.q_first;
    t.hc = it.head_count;
    t.hbase = it.kv_head * a.group + it.head_first;
    t.nrows = (int)ntok * it.head_count;
    t.ns = it.num_splits;
    t.part_index = it.part_index;
    t.rows = ROWS;
    ck_split_merge_tile(a, t, wts, (int)threadIdx.x, (int)blockDim.x, [] { __syncthreads(); });
}

#endif /* ATTNRT_SPLIT_MERGE_CUH */
