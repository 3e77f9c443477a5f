/* attn_simt.cu — paged attention on the CUDA cores: one warp per query row (token, q head), any
 * q / cache / out format, any head dims up to CK_MAX_HEAD_DIM. This is the path for f32 queries,
 * caches whose format differs from the query's (other than fp8), and layouts the tensor-core kernels
 * cannot take; it is also the cross-check (ATTNRT_CUDA_KERNELS=simt runs everything here).
 *
 * Each lane holds dims lane, lane + 32, ... of q and of the accumulator; a key's score is a warp
 * reduction. Keys are walked block by block through the block table; a block id outside the cache
 * means its keys do not exist (skipped). Metadata is clamped to the tensors, as the cpu plugin does. */
#include "ck_common.cuh"

#define SIMT_WARPS 4
#define SIMT_PER_LANE (CK_MAX_HEAD_DIM / 32)

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

/* The request whose query rows contain token t: the last b with qsl[b] <= t (empty requests skipped). */
__device__ __forceinline__ int64_t find_request(const ck_attn_args_t &a, int64_t t)
{
    int64_t lo = 0, hi = a.num_seqs - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (a.qsl[mid * a.qsl_st] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

extern "C" __global__ void __launch_bounds__(SIMT_WARPS * 32) ck_attn_simt(const ck_attn_args_t a)
{
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * SIMT_WARPS + (threadIdx.x >> 5);
    if (row >= a.num_tokens * a.hq || a.num_seqs <= 0) return;
    const int64_t t = row / a.hq;
    const int h = (int)(row - t * a.hq);
    const int64_t b = find_request(a, t);
    const int64_t q_begin = ck_clamp(a.qsl[b * a.qsl_st], 0, a.num_tokens);
    const int64_t q_end = ck_clamp(a.qsl[(b + 1) * a.qsl_st], q_begin, a.num_tokens);
    if (t < q_begin || t >= q_end) return; /* no request owns this row (garbage metadata) */
    const int64_t L = q_end - q_begin;
    const int64_t S = ck_clamp(a.seq_lens[b * a.sl_st], 0, a.bt_cols * a.block_size);
    const int64_t pq = S - L + (t - q_begin);
    const int kvh = h / a.group;

    float q[SIMT_PER_LANE], acc[SIMT_PER_LANE];
#pragma unroll
    for (int i = 0; i < SIMT_PER_LANE; i++) {
        const int d = lane + 32 * i;
        q[i] = d < a.dqk ? ck_load(a.q, t * a.q_st[0] + h * a.q_st[1] + d, a.q_dtype) : 0.0f;
        acc[i] = 0.0f;
    }
    const float slope = a.alibi ? a.alibi[h * a.alibi_st] : 0.0f;
    const bool fp8 = a.kv_dtype == CK_E4M3 || a.kv_dtype == CK_E5M2;

    int64_t lo, hi;
    ck_key_range(pq, S, a.causal, a.window_left, a.window_right, &lo, &hi);
    float m = -CK_INF, l = 0.0f;
    for (int64_t p = lo; p <= hi;) {
        const int64_t lb = p / a.block_size, r0 = p - lb * a.block_size;
        const int64_t last = min(hi, (lb + 1) * a.block_size - 1);
        const int64_t blk = a.block_table[b * a.bt_st[0] + lb * a.bt_st[1]];
        if (blk < 0 || blk >= a.num_blocks) { /* garbage table entry: those keys do not exist */
            p = last + 1;
            continue;
        }
        const float ks = fp8 && a.k_scale ? a.k_scale[blk * a.ks_st[0] + kvh * a.ks_st[1]] : 1.0f;
        const float vs = fp8 && a.v_scale ? a.v_scale[blk * a.vs_st[0] + kvh * a.vs_st[1]] : 1.0f;
        for (int64_t pk = p; pk <= last; pk++) {
            const int64_t r = r0 + (pk - p);
            const int64_t kb = blk * a.kc_st[0] + r * a.kc_st[1] + kvh * a.kc_st[2];
            const int64_t vb = blk * a.vc_st[0] + r * a.vc_st[1] + kvh * a.vc_st[2];
            float dot = 0.0f;
#pragma unroll
            for (int i = 0; i < SIMT_PER_LANE; i++) {
                const int d = lane + 32 * i;
                if (d < a.dqk) dot += q[i] * ck_load(a.kc, kb + d, a.kv_dtype);
            }
            float s = warp_sum(dot) * ks * a.scale;
            if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
            if (a.alibi) s -= slope * (float)(pq > pk ? pq - pk : pk - pq);
            const float m_new = fmaxf(m, s);
            const float alpha = expf(m - m_new); /* 0 on the first key: m is -inf */
            const float pw = expf(s - m_new);
            l = l * alpha + pw;
            m = m_new;
#pragma unroll
            for (int i = 0; i < SIMT_PER_LANE; i++) {
                const int d = lane + 32 * i;
                const float v = d < a.dv ? ck_load(a.vc, vb + d, a.kv_dtype) * vs : 0.0f;
                acc[i] = acc[i] * alpha + pw * v;
            }
        }
        p = last + 1;
    }

    /* acc / (l + e^{sink - m}); LSE = m + ln l; a row without keys gets 0 and -inf. */
    float inv = 0.0f, lse = -CK_INF;
    if (l > 0.0f) {
        float den = l;
        if (a.sinks) den += expf(a.sinks[h * a.sinks_st] - m);
        inv = 1.0f / den;
        lse = m + logf(l);
    }
#pragma unroll
    for (int i = 0; i < SIMT_PER_LANE; i++) {
        const int d = lane + 32 * i;
        if (d < a.dv) ck_store(a.out, t * a.out_st[0] + h * a.out_st[1] + d, a.out_dtype, acc[i] * inv);
    }
    if (a.lse && lane == 0) a.lse[t * a.lse_st[0] + h * a.lse_st[1]] = lse;
}
