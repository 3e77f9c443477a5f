/* linear.cu — lightning attention and the gated delta rule over f32 state slots [slots, HV, Dk, Dv].
 *
 * One block (128 threads) per (request, state head, 32 value columns). The decode kernels' grid is 1-D
 * with the column slices of a head adjacent, block x = (request x HV + head) x slices + slice, so they
 * are dispatched together and a head's state rows (512 bytes at Dv 128) are read and written whole
 * while their DRAM pages are open; ck_lin_body's is 2-D (x: request x HV, y: slice; its scalar form
 * spills with the 1-D index). Thread (warp w, lane l) owns
 * columns col0 + 4 (l & 7) + [0, 4) of rows r, r + 16, ... (r = 4 w + (l >> 3)): its part of the state
 * is loaded once by cp.async (16 bytes when aligned) into the block's shared-memory slice, which only
 * that thread reads and writes (no barrier guards it), and stored once, so a decode streams the state
 * exactly once in and once out. Shared memory rather than registers holds it so that a block costs
 * ~48-64 registers a thread: 8-10 blocks an SM keep 128-160 KB of state loads in flight (registers:
 * 5-6 blocks, 80-96 KB). Per token the q / k / v rows are staged in
 * shared memory, each thread updates its rows, and the column sums over Dk (o = q S, u = S^T k) are
 * reduced across the 4 row lanes of a warp by shuffles and across the 4 warps through shared memory.
 *
 * Prefill is the same loop over the request's tokens: the recurrence itself, token by token, exact in
 * f32 (no chunked form yet: a long prefill of one request is latency-bound, one token after another).
 *
 * Lightning: S = lambda S + k^T v, o = q S, with lambda = e^{-slope} split as hi + lo (hi = (float)
 * lambda) and applied as hi S + (lo S + k v): without the split the f32 rounding of lambda biases old
 * terms by steps x 3e-8 over thousands of steps (as in plugins/cpu/cpu_lightning.c).
 * GDN: S = e^g S; u = S^T k; v' = beta (v - u); S += k v'^T; o = S^T q, computed as
 * o = (e^g S_old)^T q + v' (k . q) so that both column sums come from one pass over the decayed state.
 *
 * Metadata is read on the device and trusted only as far as bounds go: query_start_loc is clamped to
 * [0, T]; a slot outside [0, slots) is padding (outputs 0, nothing read or written), a zero initial
 * state (speculative read) or a skipped write (speculative write). */
#include "ck_common.cuh"
#include "../cuda_mla_linear.h"

/* 4 bytes global -> shared (the scalar path); the wait orders the thread's own later shared reads. */
__device__ __forceinline__ void ck_lin_cp4(uint32_t dst, const void *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void ck_lin_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

__device__ __forceinline__ int ck_lin_flag(const ck_lin_args_t &a, int64_t b)
{
    if (!a.has_init) return 1;
    if (a.init_bits == 32) return ((const int32_t *)a.has_init)[b * a.init_st] != 0;
    return ((const uint8_t *)a.has_init)[b * a.init_st] != 0;
}

/* Column sums over the block's row groups, in two halves so that one barrier can serve two sums.
 * ck_lin_colsum_part: a thread's partial sums of its 4 columns, added over the warp's 4 row lanes by
 * shuffles and stored into red[warp][32] (red: [CK_LIN_WARPS][CK_LIN_COLS] floats of shared memory,
 * 16-byte aligned); no barrier. ck_lin_colsum_total, after a barrier: column c's sum over the warps. */
__device__ __forceinline__ void ck_lin_colsum_part(float part[4], float *red, int warp, int lane)
{
#pragma unroll
    for (int c = 0; c < 4; c++) {
        part[c] += __shfl_xor_sync(0xffffffffu, part[c], 8);
        part[c] += __shfl_xor_sync(0xffffffffu, part[c], 16);
    }
    if (lane < 8) *(float4 *)(red + warp * CK_LIN_COLS + lane * 4) = make_float4(part[0], part[1], part[2], part[3]);
}
/* GDN's pass over a thread's RPT rows of the decayed state (row rg + i * CK_LIN_ROW_GROUPS, 4 columns at
 * my + i * CK_LIN_SROW): adds (decay S[row][c]) k[row] kf to pu[c] and (decay S[row][c]) q[row] qf to
 * po[c], the column sums (e^g S)^T k and (e^g S)^T q. GUARD: rows at or past dk count as zero (the
 * general kernel; the decode kernel's rows all exist). */
template <int RPT, bool GUARD>
__device__ __forceinline__ void ck_lin_decayed_sums(const float *my, const float *sk, const float *sq, float kf, float qf,
                                                    float decay, int rg, int dk, float pu[4], float po[4])
{
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        const int row = rg + i * CK_LIN_ROW_GROUPS;
        const float kr = !GUARD || row < dk ? sk[row] * kf : 0.0f, qr = !GUARD || row < dk ? sq[row] * qf : 0.0f;
        const float4 x = *(const float4 *)(my + i * CK_LIN_SROW);
        const float S[4] = {x.x * decay, x.y * decay, x.z * decay, x.w * decay};
#pragma unroll
        for (int c = 0; c < 4; c++) {
            pu[c] += S[c] * kr;
            po[c] += S[c] * qr;
        }
    }
}
__device__ __forceinline__ float ck_lin_colsum_total(const float *red, int c)
{
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < CK_LIN_WARPS; w++) s += red[w * CK_LIN_COLS + c];
    return s;
}

/* The decode kernels' state loads and stores carry an explicit L2::evict_normal policy (createpolicy +
 * .L2::cache_hint). On the H200: 2-4 us faster at
 * B 64 x H 16 and 3-6 points faster at the larger shapes than the plain cp.async.cg / st.global.v4 forms,
 * whose stores made 23-37 % more L2 write sectors (ncu); evict_first on either was slower. */
__device__ __forceinline__ uint64_t ck_lin_policy_normal()
{
    uint64_t p;
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}
__device__ __forceinline__ void ck_lin_cp16_pol(uint32_t dst, const void *src, int src_bytes, uint64_t pol)
{
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src), "r"(src_bytes),
                 "l"(pol));
}
__device__ __forceinline__ void ck_lin_st16_pol(float *p, float4 x, uint64_t pol)
{
    asm volatile("st.global.L2::cache_hint.v4.f32 [%0], {%1, %2, %3, %4}, %5;\n" ::"l"(p), "f"(x.x), "f"(x.y), "f"(x.z),
                 "f"(x.w), "l"(pol) : "memory");
}

/* GDN decode: |q|^2, |k|^2 and q . k over the RPT x 16 staged rows, summed over the warp (every warp
 * forms them itself: no barrier; every lane gets the totals). */
template <int RPT>
__device__ __forceinline__ void ck_lin_norms(const float *sq, const float *sk, int lane, float &nq2, float &nk2, float &qk2)
{
#pragma unroll
    for (int i = lane; i < RPT * CK_LIN_ROW_GROUPS; i += 32) {
        const float x = sq[i], y = sk[i];
        nq2 += x * x, nk2 += y * y, qk2 += x * y;
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        nq2 += __shfl_xor_sync(0xffffffffu, nq2, o);
        nk2 += __shfl_xor_sync(0xffffffffu, nk2, o);
        qk2 += __shfl_xor_sync(0xffffffffu, qk2, o);
    }
}

/* The decode kernels' small inputs (slot, has_init flag, q, k, v, beta, g) as raw bits by predicated loads
 * without a branch, so that all of them are in flight together: ck_load's switch on the format makes each
 * load wait for the one before, and the chain of those round trips, behind the state's own loads, is on
 * every block's path. ck_lin_lg: log2 of a format's element bytes; lg < 0: no load, 0 returned; the bits
 * are decoded by ck_from_bits (ck_common.cuh). */
__device__ __forceinline__ int ck_lin_lg(int kind) { return kind == CK_F32 ? 2 : kind == CK_F16 || kind == CK_BF16 ? 1 : 0; }
__device__ __forceinline__ uint32_t ck_lin_ld_bits(const void *p, int64_t i, int lg)
{
    const char *at = (const char *)p + i * (lg > 0 ? 1 << lg : 1);
    uint32_t r;
    asm("{\n\t.reg .pred p4, p2, p1;\n\t.reg .u16 h;\n\t"
        "setp.eq.s32 p4, %2, 2;\n\tsetp.eq.s32 p2, %2, 1;\n\tsetp.eq.s32 p1, %2, 0;\n\t"
        "mov.b32 %0, 0;\n\tmov.u16 h, 0;\n\t"
        "@p4 ld.global.b32 %0, [%1];\n\t@p2 ld.global.u16 h, [%1];\n\t@p1 ld.global.u8 h, [%1];\n\t"
        "@!p4 cvt.u32.u16 %0, h;\n\t}"
        : "=r"(r)
        : "l"(at), "r"(lg));
    return r;
}

/* The decode kernels' block index -> (request, head, first column): a 1-D grid, a head's column slices
 * adjacent (see the top of the file). */
__device__ __forceinline__ void ck_lin_block(const ck_lin_args_t &a, int &b, int &hv, int &col0)
{
    const unsigned slices = (unsigned)(a.dv + CK_LIN_COLS - 1) / CK_LIN_COLS;
    const unsigned bh = blockIdx.x / slices, ub = bh / (unsigned)a.heads;
    b = (int)ub;
    hv = (int)(bh - ub * (unsigned)a.heads);
    col0 = (int)(blockIdx.x - bh * slices) * CK_LIN_COLS;
}

/* This thread's rows of the state slice (my: element (i, c) at my[i * CK_LIN_SROW + c]; rows rg + i x
 * CK_LIN_ROW_GROUPS, columns jc .. jc + 3) into the slot's state at dst, rows and columns past Dk / Dv left out */
template <int RPT, bool VEC>
__device__ __forceinline__ void ck_lin_store_state(const ck_lin_args_t &a, float *dst, const float *my, int rg, int jc)
{
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        const int row = rg + i * CK_LIN_ROW_GROUPS;
        if (row >= a.dk) continue;
        const float4 x = *(const float4 *)(my + i * CK_LIN_SROW);
        if (VEC) {
            if (jc < a.dv) *(float4 *)(dst + row * a.state_st[2] + jc) = x;
        } else {
            const float S[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (jc + c < a.dv) dst[row * a.state_st[2] + jc + c] = S[c];
        }
    }
}

template <int OP, int RPT, bool VEC>
__device__ __forceinline__ void ck_lin_body(const ck_lin_args_t &a)
{
    __shared__ float sq[CK_LIN_MAX_DK], sk[CK_LIN_MAX_DK], sv[CK_LIN_COLS], svp[CK_LIN_COLS];
    __shared__ __align__(16) float red[2][CK_LIN_WARPS * CK_LIN_COLS];
    __shared__ float sfac[4]; /* [3]: the token's decay e^g */
    __shared__ float snorm[4]; /* |q|^2, |k|^2, q . k of the token */
    __shared__ float sbeta;
    /* the block's state slice, [RPT x 16 rows][32 columns]: each thread reads and writes only its own
     * elements (no barrier guards it), loaded by cp.async so that the loads cost no registers */
    __shared__ __align__(16) float sS[RPT * CK_LIN_ROW_GROUPS * CK_LIN_COLS];

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int cg = lane & 7, rg = warp * 4 + (lane >> 3);
    const int64_t b = blockIdx.x / a.heads, hv = blockIdx.x - b * a.heads;
    const int col0 = blockIdx.y * CK_LIN_COLS;
    const int ncols = min(CK_LIN_COLS, a.dv - col0);
    const int jc = col0 + cg * 4; /* this thread's first column */
    const int64_t kh = hv / a.group;
    const int64_t t_begin = ck_clamp(a.qsl[b * a.qsl_st], 0, a.num_tokens);
    const int64_t t_end = ck_clamp(a.qsl[(b + 1) * a.qsl_st], t_begin, a.num_tokens);

    /* which slot is read, which written, or padding */
    int64_t read_slot = -1, write_slot = -1;
    bool padding;
    if (OP == CK_LIN_GDN && a.spec) {
        padding = a.spec_idx[b * a.spec_st[0]] < 0;
        const int64_t na = a.accepted[b * a.acc_st];
        read_slot = na >= 1 && na <= a.num_spec + 1 ? a.spec_idx[b * a.spec_st[0] + (na - 1) * a.spec_st[1]] : -1;
    } else {
        const int64_t slot = a.slot_idx[b * a.slot_st];
        padding = slot < 0 || slot >= a.num_slots;
        read_slot = write_slot = slot;
    }
    if (padding) {
        for (int64_t t = t_begin; t < t_end; t++)
            if (tid < ncols) ck_store(a.out, t * a.out_st[0] + hv * a.out_st[1] + col0 + tid, a.out_dtype, 0.0f);
        return;
    }
    const int has_init = ck_lin_flag(a, b);
    if (t_end == t_begin && (has_init || (OP == CK_LIN_GDN && a.spec))) return; /* no token: no change */

    float *const my = sS + rg * CK_LIN_COLS + cg * 4; /* element (i, c): my[i * CK_LIN_SROW + c] */
    const bool read = has_init && read_slot >= 0 && read_slot < a.num_slots;
    const float *src = a.state + (read ? read_slot : 0) * a.state_st[0] + hv * a.state_st[1];
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        const int row = rg + i * CK_LIN_ROW_GROUPS;
        const bool ok = read && row < a.dk;
        float *d = my + i * CK_LIN_SROW;
        if (VEC) {
            const bool okv = ok && jc < a.dv;
            ck_cp_async16(ck_smem(d), okv ? src + row * a.state_st[2] + jc : src, okv ? 16 : 0);
        } else {
#pragma unroll
            for (int c = 0; c < 4; c++) {
                if (ok && jc + c < a.dv) ck_lin_cp4(ck_smem(d + c), src + row * a.state_st[2] + jc + c);
                else d[c] = 0.0f;
            }
        }
    }
    ck_cp_async_commit();

    float hi = 1.0f, lo = 0.0f;
    if (OP == CK_LIN_LIGHTNING) {
        const double lambda = exp(-(double)a.slopes[hv * a.slopes_st]);
        hi = (float)lambda;
        lo = (float)(lambda - (double)hi);
    }

    for (int64_t t = t_begin; t < t_end; t++) {
        __syncthreads(); /* the previous token is done with the shared rows */
        for (int i = tid; i < a.dk; i += CK_LIN_THREADS) {
            sq[i] = ck_load(a.q, t * a.q_st[0] + kh * a.q_st[1] + i, a.q_dtype);
            sk[i] = ck_load(a.k, t * a.k_st[0] + kh * a.k_st[1] + i, a.k_dtype);
        }
        if (tid < ncols) sv[tid] = ck_load(a.v, t * a.v_st[0] + hv * a.v_st[1] + col0 + tid, a.v_dtype);
        if (OP == CK_LIN_GDN && tid == 0) {
            const float g = ck_load(a.g, t * a.g_st[0] + hv * a.g_st[1], a.g_dtype);
            sfac[3] = (float)exp((double)g);
            sbeta = ck_load(a.beta, t * a.beta_st[0] + hv * a.beta_st[1], a.beta_dtype);
        }
        __syncthreads();
        if (OP == CK_LIN_GDN) {
            /* warp 0: |q|^2, warp 1: |k|^2, warp 2: q . k, each over Dk */
            if (warp < 3) {
                float s = 0.0f;
                for (int i = lane; i < a.dk; i += 32) {
                    const float x = warp == 1 ? sk[i] : sq[i], y = warp == 0 ? sq[i] : sk[i];
                    s += x * y;
                }
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
                if (lane == 0) snorm[warp] = s;
            }
            __syncthreads();
        }

        ck_lin_wait_all(); /* this thread's state elements have landed (first token; a no-op after) */
        float po[4] = {0.0f, 0.0f, 0.0f, 0.0f}, pu[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (OP == CK_LIN_LIGHTNING) {
            float v4[4];
#pragma unroll
            for (int c = 0; c < 4; c++) v4[c] = cg * 4 + c < ncols ? sv[cg * 4 + c] : 0.0f;
#pragma unroll
            for (int i = 0; i < RPT; i++) {
                const int row = rg + i * CK_LIN_ROW_GROUPS;
                const float kr = row < a.dk ? sk[row] : 0.0f, qr = row < a.dk ? sq[row] : 0.0f;
                float4 *p4 = (float4 *)(my + i * CK_LIN_SROW);
                const float4 x = *p4;
                float S[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                for (int c = 0; c < 4; c++) {
                    S[c] = hi * S[c] + (lo * S[c] + kr * v4[c]);
                    po[c] += qr * S[c];
                }
                *p4 = make_float4(S[0], S[1], S[2], S[3]);
            }
            ck_lin_colsum_part(po, red[0], warp, lane);
            __syncthreads();
            if (tid < ncols)
                ck_store(a.out, t * a.out_st[0] + hv * a.out_st[1] + col0 + tid, a.out_dtype, ck_lin_colsum_total(red[0], tid));
        } else {
            /* every thread forms the factors itself (no extra barrier): q scale with the L2 norm folded in */
            const float nq = a.l2norm ? (float)(1.0 / sqrt((double)snorm[0] + 1e-6)) : 1.0f;
            const float kf = a.l2norm ? (float)(1.0 / sqrt((double)snorm[1] + 1e-6)) : 1.0f;
            const float qf = nq * a.scale, qk = snorm[2] * qf * kf, decay = sfac[3];
            ck_lin_decayed_sums<RPT, true>(my, sk, sq, kf, qf, decay, rg, a.dk, pu, po);
            ck_lin_colsum_part(pu, red[1], warp, lane);
            ck_lin_colsum_part(po, red[0], warp, lane);
            __syncthreads();
            if (tid < CK_LIN_COLS) {
                const float u = ck_lin_colsum_total(red[1], tid);
                const float vp = tid < ncols ? sbeta * (sv[tid] - u) : 0.0f;
                svp[tid] = vp;
                if (tid < ncols)
                    ck_store(a.out, t * a.out_st[0] + hv * a.out_st[1] + col0 + tid, a.out_dtype,
                             ck_lin_colsum_total(red[0], tid) + vp * qk);
            }
            __syncthreads();
            float vp4[4];
#pragma unroll
            for (int c = 0; c < 4; c++) vp4[c] = svp[cg * 4 + c];
#pragma unroll
            for (int i = 0; i < RPT; i++) {
                const int row = rg + i * CK_LIN_ROW_GROUPS;
                const float kr = row < a.dk ? sk[row] * kf : 0.0f;
                float4 *p4 = (float4 *)(my + i * CK_LIN_SROW);
                const float4 x = *p4; /* decayed again, rounded as in the first pass (no contraction) */
                *p4 = make_float4(__fmul_rn(x.x, decay) + kr * vp4[0], __fmul_rn(x.y, decay) + kr * vp4[1],
                                  __fmul_rn(x.z, decay) + kr * vp4[2], __fmul_rn(x.w, decay) + kr * vp4[3]);
            }
            if (a.spec) { /* after token t the state goes to spec_state_indices[b][t - t_begin] */
                const int64_t j = t - t_begin;
                const int64_t ws = j <= a.num_spec ? a.spec_idx[b * a.spec_st[0] + j * a.spec_st[1]] : -1;
                if (ws >= 0 && ws < a.num_slots)
                    ck_lin_store_state<RPT, VEC>(a, a.state + ws * a.state_st[0] + hv * a.state_st[1], my, rg, jc);
            }
        }
    }

    if (OP == CK_LIN_GDN && a.spec) return;
    ck_lin_wait_all(); /* no token (a restart without one): the zeros */
    ck_lin_store_state<RPT, VEC>(a, a.state + write_slot * a.state_st[0] + hv * a.state_st[1], my, rg, jc);
}

/* ---- decode: every request has exactly one token (the plan saw it on the host), no speculative
 * slots, Dk <= 128, float4 state access; token b is request b's. Compared with ck_lin_body: no token
 * loop, so the new state goes from registers straight to global memory (no shared write-back and
 * re-read); 2 barriers a block (lightning) or 3 (GDN) instead of 3 / 6; every warp forms the GDN norms
 * |q|^2, |k|^2, q . k itself from the staged q, k; v, beta and e^g stay in registers and GDN's v' goes
 * into its own column of the reduction buffer; the column sums finish in the threads that use them.
 * What that buys is residency: 40 registers and <= 18432 B of shared memory a block (state slice, q,
 * k, the reduction rows) fit 12 blocks an SM (ck_lin_body: 8-10), i.e. more state loads in flight.
 * The small inputs (has_init flag, q, k, v, beta, g; lightning's slope) are requested together with the
 * slot by branch-free loads (ck_lin_ld_bits): with ck_load's switch they were a chain of round trips on
 * every block's path (H200, B 64 x H 16: GDN 42.5 -> 39.1 us, lightning 41.2 -> 38.9 us). */
template <int OP, int RPT>
__device__ __forceinline__ void ck_lin_decode_body(const ck_lin_args_t &a)
{
    constexpr int NRED = OP == CK_LIN_GDN ? 2 : 1; /* o partials; GDN also u partials, then v' */
    __shared__ float sq[RPT * CK_LIN_ROW_GROUPS], sk[RPT * CK_LIN_ROW_GROUPS];
    __shared__ __align__(16) float red[NRED][CK_LIN_WARPS * CK_LIN_COLS];
    __shared__ __align__(16) float sv[OP == CK_LIN_LIGHTNING ? CK_LIN_COLS : 1];
    __shared__ __align__(16) float sS[RPT * CK_LIN_ROW_GROUPS * CK_LIN_COLS];

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int cg = lane & 7, rg = warp * 4 + (lane >> 3);
    int b, hv, col0;
    ck_lin_block(a, b, hv, col0);
    const int ncols = min(CK_LIN_COLS, a.dv - col0), jc = col0 + cg * 4;
    const int64_t kh = hv / a.group;
    const int64_t out_at = b * a.out_st[0] + hv * a.out_st[1] + col0;

    const int64_t slot = a.slot_idx[b * a.slot_st];
    /* the flag, q, k, v, beta and g (lightning: the slope) requested together with the slot, as raw
     * bits (ck_lin_ld_bits); converted after the state loads are issued */
    const uint32_t rflag = ck_lin_ld_bits(a.has_init, b * a.init_st, !a.has_init ? -1 : a.init_bits == 32 ? 2 : 0);
    const uint32_t rq = ck_lin_ld_bits(a.q, b * a.q_st[0] + kh * a.q_st[1] + tid, tid < a.dk ? ck_lin_lg(a.q_dtype) : -1);
    const uint32_t rk = ck_lin_ld_bits(a.k, b * a.k_st[0] + kh * a.k_st[1] + tid, tid < a.dk ? ck_lin_lg(a.k_dtype) : -1);
    const uint32_t rv =
        ck_lin_ld_bits(a.v, b * a.v_st[0] + hv * a.v_st[1] + col0 + tid, tid < ncols ? ck_lin_lg(a.v_dtype) : -1);
    uint32_t rbeta = 0, rgate = 0;
    float slope = 0.0f;
    if (OP == CK_LIN_GDN) {
        rbeta = ck_lin_ld_bits(a.beta, b * a.beta_st[0] + hv * a.beta_st[1], warp == 0 ? ck_lin_lg(a.beta_dtype) : -1);
        rgate = ck_lin_ld_bits(a.g, b * a.g_st[0] + hv * a.g_st[1], lane == 0 ? ck_lin_lg(a.g_dtype) : -1);
    } else {
        slope = a.slopes[hv * a.slopes_st];
    }
    if (slot < 0 || slot >= a.num_slots) { /* padding */
        if (tid < ncols) ck_store(a.out, out_at + tid, a.out_dtype, 0.0f);
        return;
    }
    const bool read = !a.has_init || rflag != 0;
    const int64_t rstep = CK_LIN_ROW_GROUPS * a.state_st[2];
    /* this thread's first element in global memory and in the shared slice */
    float *const mine = a.state + slot * a.state_st[0] + hv * a.state_st[1] + rg * a.state_st[2] + jc;
    float *const my = sS + rg * CK_LIN_COLS + cg * 4;
    const bool colok = jc < a.dv;
    const uint64_t pol_ld = ck_lin_policy_normal();
#pragma unroll
    for (int i = 0; i < RPT; i++) {
        const bool ok = read && colok && rg + i * CK_LIN_ROW_GROUPS < a.dk;
        ck_lin_cp16_pol(ck_smem(my + i * CK_LIN_SROW), ok ? mine + i * rstep : a.state, ok ? 16 : 0, pol_ld);
    }
    ck_cp_async_commit();

    /* while the state is in flight: q, k (zero past Dk), v; GDN's e^g and beta */
    if (tid < RPT * CK_LIN_ROW_GROUPS) { /* 0 bits past Dk: 0 in every format */
        sq[tid] = ck_from_bits(rq, a.q_dtype);
        sk[tid] = ck_from_bits(rk, a.k_dtype);
    }
    float beta = 0.0f, decay = 1.0f;
    const float vreg = ck_from_bits(rv, a.v_dtype); /* 0 past the columns */
    if (OP == CK_LIN_LIGHTNING) {
        if (tid < CK_LIN_COLS) sv[tid] = vreg;
    } else {
        beta = ck_from_bits(rbeta, a.beta_dtype);
        if (lane == 0) decay = (float)exp((double)ck_from_bits(rgate, a.g_dtype));
        decay = __shfl_sync(0xffffffffu, decay, 0);
    }
    /* lightning's decay (an exp of the slope) formed while the state is still in flight */
    const double lambda = OP == CK_LIN_LIGHTNING ? exp(-(double)slope) : 0.0;
    __syncthreads();
    ck_lin_wait_all(); /* this thread's state elements have landed */

    float po[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (OP == CK_LIN_LIGHTNING) {
        const float hi = (float)lambda, lo = (float)(lambda - (double)hi);
        const float4 v4 = *(const float4 *)(sv + cg * 4); /* zero past the columns */
        const uint64_t pol = ck_lin_policy_normal(); /* formed here: no register pair held across the wait */
#pragma unroll 4 /* fully unrolled, the 8 rows' loads hoisted together spill at 40 registers */
        for (int i = 0; i < RPT; i++) {
            const int row = rg + i * CK_LIN_ROW_GROUPS;
            const float kr = sk[row], qr = sq[row];
            const float4 x = *(const float4 *)(my + i * CK_LIN_SROW);
            float4 S;
            S.x = hi * x.x + (lo * x.x + kr * v4.x);
            S.y = hi * x.y + (lo * x.y + kr * v4.y);
            S.z = hi * x.z + (lo * x.z + kr * v4.z);
            S.w = hi * x.w + (lo * x.w + kr * v4.w);
            po[0] += qr * S.x, po[1] += qr * S.y, po[2] += qr * S.z, po[3] += qr * S.w;
            if (colok && row < a.dk) ck_lin_st16_pol(mine + i * rstep, S, pol);
        }
        ck_lin_colsum_part(po, red[0], warp, lane);
        __syncthreads();
        if (tid < ncols) ck_store(a.out, out_at + tid, a.out_dtype, ck_lin_colsum_total(red[0], tid));
        return;
    }

    /* GDN: o = (e^g S)^T q + v' (k . q) with v' = beta (v - (e^g S)^T k); the norms after the wait (before
     * it, held across it, they spill at 40 registers) */
    float nq2 = 0.0f, nk2 = 0.0f, qk2 = 0.0f;
    ck_lin_norms<RPT>(sq, sk, lane, nq2, nk2, qk2);
    const float nq = a.l2norm ? (float)(1.0 / sqrt((double)nq2 + 1e-6)) : 1.0f;
    const float kf = a.l2norm ? (float)(1.0 / sqrt((double)nk2 + 1e-6)) : 1.0f;
    const float qf = nq * a.scale;
    float pu[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    ck_lin_decayed_sums<RPT, false>(my, sk, sq, kf, qf, decay, rg, 0, pu, po);
    ck_lin_colsum_part(po, red[0], warp, lane);
    ck_lin_colsum_part(pu, red[NRED - 1], warp, lane);
    __syncthreads();
    if (tid < CK_LIN_COLS) {
        const float o = ck_lin_colsum_total(red[0], tid), u = ck_lin_colsum_total(red[NRED - 1], tid);
        const float vp = beta * (vreg - u); /* 0 past the columns (v and u are) */
        red[NRED - 1][tid] = vp; /* column tid's own entry: only this thread read it */
        if (tid < ncols) ck_store(a.out, out_at + tid, a.out_dtype, o + vp * (qk2 * qf * kf));
    }
    __syncthreads();
    if (!colok) return;
    const float4 vp4 = *(const float4 *)(red[NRED - 1] + cg * 4);
#pragma unroll 4 /* fully unrolled, the stores' policy spills 4 bytes at 40 registers */
    for (int i = 0; i < RPT; i++) {
        const int row = rg + i * CK_LIN_ROW_GROUPS;
        if (row >= a.dk) break;
        const float kr = sk[row] * kf;
        const float4 x = *(const float4 *)(my + i * CK_LIN_SROW); /* decayed again, rounded as in pass 1 */
        ck_lin_st16_pol(mine + i * rstep,
                        make_float4(__fmul_rn(x.x, decay) + kr * vp4.x, __fmul_rn(x.y, decay) + kr * vp4.y,
                                    __fmul_rn(x.z, decay) + kr * vp4.z, __fmul_rn(x.w, decay) + kr * vp4.w),
                        ck_lin_policy_normal());
    }
}

/* Resident blocks per SM asked of the register allocator, as many as fit without spilling (sm_90,
 * -Xptxas -v: lightning 48 registers, GDN 64 at Dk 128; shared memory ~20 KB a block allows 11): state
 * loads in flight per SM grow with them (Dk 128: 8 rows x 16 B a thread). */
#define CK_LIN_MIN_BLOCKS(op, rpt) ((rpt) <= 8 ? ((op) == CK_LIN_LIGHTNING ? 10 : 8) : 4)
#define CK_LIN_KERNEL(op, opname, rpt, vec, vname)                                                         \
    extern "C" __global__ void __launch_bounds__(CK_LIN_THREADS, CK_LIN_MIN_BLOCKS(op, rpt))              \
        ck_lin_##opname##_r##rpt##_##vname(const __grid_constant__ ck_lin_args_t a)                        \
    {                                                                                                      \
        ck_lin_body<op, rpt, vec>(a);                                                                      \
    }
#define CK_LIN_KERNELS(op, opname)                                                                         \
    CK_LIN_KERNEL(op, opname, 1, true, v4) CK_LIN_KERNEL(op, opname, 1, false, s)                         \
    CK_LIN_KERNEL(op, opname, 2, true, v4) CK_LIN_KERNEL(op, opname, 2, false, s)                         \
    CK_LIN_KERNEL(op, opname, 4, true, v4) CK_LIN_KERNEL(op, opname, 4, false, s)                         \
    CK_LIN_KERNEL(op, opname, 8, true, v4) CK_LIN_KERNEL(op, opname, 8, false, s)                         \
    CK_LIN_KERNEL(op, opname, 16, true, v4) CK_LIN_KERNEL(op, opname, 16, false, s)

CK_LIN_KERNELS(CK_LIN_LIGHTNING, lightning)
CK_LIN_KERNELS(CK_LIN_GDN, gdn)

/* The decode kernels (Dk 33-64: 4 rows a thread, 65-128: 8): 12 blocks an SM at 40 registers (sm_90
 * -Xptxas -v: no spill; 18432 B of shared memory is the most that lets 12 fit). */
#define CK_LIN_DECODE_KERNEL(op, opname, rpt)                                                              \
    extern "C" __global__ void __launch_bounds__(CK_LIN_THREADS, 12)                                       \
        ck_lin_##opname##_decode_r##rpt(const __grid_constant__ ck_lin_args_t a)                           \
    {                                                                                                      \
        ck_lin_decode_body<op, rpt>(a);                                                                    \
    }
CK_LIN_DECODE_KERNEL(CK_LIN_LIGHTNING, lightning, 4)
CK_LIN_DECODE_KERNEL(CK_LIN_LIGHTNING, lightning, 8)
CK_LIN_DECODE_KERNEL(CK_LIN_GDN, gdn, 4)
CK_LIN_DECODE_KERNEL(CK_LIN_GDN, gdn, 8)
