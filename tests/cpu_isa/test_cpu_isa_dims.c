/* test_cpu_isa_dims: paged attention on shapes the conformance cases do not reach, under whatever ISA
 * ATTNRT_CPU_ISA forces (run through isa_guard): head dims that are not a multiple of any SIMD width
 * (the kernels' scalar tails), Dqk != Dv, block size 1 and odd blocks, HND, fp8 with per-block scales,
 * GQA groups of 1 to 16 (narrow, all-heads decode and wide tiles), decodes long enough to be split
 * across threads, windows + softcap + ALiBi + sinks on boundary chunks, cross-attention. Each case
 * is compared with the float64 reference (tests/reference) fed the same dequantised cache values:
 * relative L2 error of out <= 2e-5, LSE within 1e-4 (1 + |ref|), every ISA and cache dtype alike,
 * -inf exactly where no key is kept. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "reference.h"

#define MAX_REQ 4

typedef struct tcase {
    const char    *name;
    int            dqk, dv, hq, hkv, bs;
    attnrt_dtype_t kv;
    int            hnd, block_scale;
    int            nreq, qlen[MAX_REQ], kvlen[MAX_REQ];
    int            causal, wl, wr;
    float          softcap;
    int            alibi, sinks;
} tcase_t;

static uint64_t rng = 0x2545f4914f6cdd1dull;
static double rnd(void) /* [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* Stores x in the cache format at byte offset i * size; returns the value the kernel will read. */
static double store(void *dst, size_t i, double x, attnrt_dtype_t dt, double scale)
{
    if (dt.bits == 32) {
        ((float *)dst)[i] = (float)x;
        return (float)x;
    }
    if (dt.bits == 16) {
        const int f16 = dt.code == ATTNRT_F16.code;
        const uint16_t h = f16 ? ref_double_to_f16(x) : ref_double_to_bf16(x);
        ((uint16_t *)dst)[i] = h;
        return f16 ? ref_f16_to_double(h) : ref_bf16_to_double(h);
    }
    const int e5m2 = dt.code == ATTNRT_FP8_E5M2.code;
    const uint8_t b = ref_quantize_fp8(x, scale, e5m2);
    ((uint8_t *)dst)[i] = b;
    return ref_dequantize_fp8(b, scale, e5m2);
}

static void *dev(attnrt_context_t *ctx, const void *host, size_t bytes)
{
    void *d = NULL;
    if (attnrt_mem_alloc(ctx, bytes ? bytes : 1, &d) != ATTNRT_OK) return NULL;
    if (host) attnrt_mem_copy_to_device(ctx, d, host, bytes, NULL);
    return d;
}

static int run_case(attnrt_context_t *ctx, const tcase_t *c)
{
    const int Hq = c->hq, Hkv = c->hkv, Dq = c->dqk, Dv = c->dv, bs = c->bs, B = c->nreq;
    const int fp8 = c->kv.bits == 8;
    int32_t qsl[MAX_REQ + 1] = {0}, sl[MAX_REQ];
    int nblk = 2, max_blocks = 1; /* two spare blocks no request uses */
    for (int b = 0; b < B; b++) {
        qsl[b + 1] = qsl[b] + c->qlen[b];
        sl[b] = c->kvlen[b];
        const int nb = (c->kvlen[b] + bs - 1) / bs;
        nblk += nb;
        if (nb > max_blocks) max_blocks = nb;
    }
    const int T = qsl[B];
    int32_t *bt = calloc((unsigned)B * (unsigned)max_blocks, sizeof *bt), *perm = malloc((unsigned)nblk * sizeof *perm);
    for (int i = 0; i < nblk; i++) perm[i] = i;
    for (int i = nblk - 1; i > 0; i--) {
        const int j = (int)((rnd() + 1.0) * 0.5 * (i + 1)) % (i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int b = 0, next = 0; b < B; b++)
        for (int k = 0; k < (c->kvlen[b] + bs - 1) / bs; k++) bt[b * max_blocks + k] = perm[next++];

    /* Caches: logical NHD doubles for the reference, stored bytes in NHD or HND for the device. */
    const size_t es = attnrt_dtype_size(c->kv), rows = (size_t)nblk * (size_t)bs * (size_t)Hkv;
    double *kd = malloc(rows * (size_t)Dq * sizeof *kd), *vd = malloc(rows * (size_t)Dv * sizeof *vd);
    char *kb = malloc(rows * (size_t)Dq * es), *vb = malloc(rows * (size_t)Dv * es);
    float *scales = malloc((size_t)(nblk * Hkv) * sizeof *scales);
    for (int i = 0; i < nblk * Hkv; i++) scales[i] = fp8 ? (float)(c->block_scale ? 0.004 + 0.003 * (rnd() + 1.0) : 0.006) : 1.0f;
    for (int blk = 0; blk < nblk; blk++)
        for (int r = 0; r < bs; r++)
            for (int h = 0; h < Hkv; h++) {
                const size_t logical = ((size_t)blk * (size_t)bs + (size_t)r) * (size_t)Hkv + (size_t)h;
                const size_t phys = c->hnd ? ((size_t)blk * (size_t)Hkv + (size_t)h) * (size_t)bs + (size_t)r : logical;
                const double sc = scales[blk * Hkv + h];
                for (int d = 0; d < Dq; d++)
                    kd[logical * (size_t)Dq + (size_t)d] = store(kb, phys * (size_t)Dq + (size_t)d, rnd(), c->kv, sc);
                for (int d = 0; d < Dv; d++)
                    vd[logical * (size_t)Dv + (size_t)d] = store(vb, phys * (size_t)Dv + (size_t)d, rnd(), c->kv, sc);
            }
    float *q = malloc((size_t)(T * Hq * Dq) * sizeof *q), slopes[64], sinks[64];
    double *qd = malloc((size_t)(T * Hq * Dq) * sizeof *qd), slopes_d[64], sinks_d[64];
    for (int i = 0; i < T * Hq * Dq; i++) qd[i] = q[i] = (float)(2.0 * rnd());
    for (int h = 0; h < Hq; h++) {
        slopes_d[h] = slopes[h] = (float)(0.25 * (rnd() + 1.0));
        sinks_d[h] = sinks[h] = (float)(2.0 * rnd());
    }

    void *d_q = dev(ctx, q, (size_t)(T * Hq * Dq) * 4), *d_k = dev(ctx, kb, rows * (size_t)Dq * es);
    void *d_v = dev(ctx, vb, rows * (size_t)Dv * es), *d_out = dev(ctx, NULL, (size_t)(T * Hq * Dv) * 4);
    void *d_lse = dev(ctx, NULL, (size_t)(T * Hq) * 4), *d_bt = dev(ctx, bt, (size_t)(B * max_blocks) * 4);
    void *d_qsl = dev(ctx, qsl, (size_t)(B + 1) * 4), *d_sl = dev(ctx, sl, (size_t)B * 4);
    void *d_sc = dev(ctx, scales, (size_t)(nblk * Hkv) * 4), *d_al = dev(ctx, slopes, (size_t)Hq * 4);
    void *d_si = dev(ctx, sinks, (size_t)Hq * 4);
    attnrt_mem_set(ctx, d_out, 0xff, (size_t)(T * Hq * Dv) * 4, NULL); /* NaN: every element must be written */

    attnrt_tensor_t tq, tk, tv, tout, tlse, tbt, tqsl, tsl, tsc, tal, tsi;
    const int64_t qs[3] = {T, Hq, Dq}, os[3] = {T, Hq, Dv}, ls[2] = {T, Hq}, ks[4] = {nblk, bs, Hkv, Dq};
    const int64_t vs[4] = {nblk, bs, Hkv, Dv}, bts[2] = {B, max_blocks}, qsls[1] = {B + 1}, sls[1] = {B};
    const int64_t scs[2] = {nblk, Hkv}, hs[1] = {Hq}, one[1] = {1};
    attnrt_tensor_init(&tq, d_q, ATTNRT_F32, 3, qs);
    attnrt_tensor_init(&tk, d_k, c->kv, 4, ks);
    attnrt_tensor_init(&tv, d_v, c->kv, 4, vs);
    if (c->hnd) {
        tk.strides[1] = Dq, tk.strides[2] = (int64_t)bs * Dq;
        tv.strides[1] = Dv, tv.strides[2] = (int64_t)bs * Dv;
    }
    attnrt_tensor_init(&tout, d_out, ATTNRT_F32, 3, os);
    attnrt_tensor_init(&tlse, d_lse, ATTNRT_F32, 2, ls);
    attnrt_tensor_init(&tbt, d_bt, ATTNRT_I32, 2, bts);
    attnrt_tensor_init(&tqsl, d_qsl, ATTNRT_I32, 1, qsls);
    attnrt_tensor_init(&tsl, d_sl, ATTNRT_I32, 1, sls);
    attnrt_tensor_init(&tsc, d_sc, ATTNRT_F32, c->block_scale ? 2 : 1, c->block_scale ? scs : one);
    attnrt_tensor_init(&tal, d_al, ATTNRT_F32, 1, hs);
    attnrt_tensor_init(&tsi, d_si, ATTNRT_F32, 1, hs);
    attnrt_attention_args_t a = {.struct_size = sizeof a, .query = &tq, .key_cache = &tk, .value_cache = &tv,
                                 .block_table = &tbt, .query_start_loc = &tqsl, .seq_lens = &tsl, .out = &tout,
                                 .lse = &tlse, .alibi_slopes = c->alibi ? &tal : NULL, .sinks = c->sinks ? &tsi : NULL,
                                 .key_scale = fp8 ? &tsc : NULL, .value_scale = fp8 ? &tsc : NULL,
                                 .softcap = c->softcap, .causal = c->causal, .sliding_window_left = c->wl + 1, .sliding_window_right = c->wr + 1};
    attnrt_batch_host_t batch = {.struct_size = sizeof batch, .num_seqs = B, .query_start_loc = qsl, .seq_lens = sl,
                                 .block_table = bt, .block_table_stride = max_blocks};
    attnrt_plan_t *plan = NULL;
    size_t ws_bytes = 0;
    void *ws = NULL;
    int failed = 0;
    if (attnrt_attention_plan(ctx, &a, &batch, &plan) != ATTNRT_OK || attnrt_plan_workspace_size(plan, &ws_bytes) != ATTNRT_OK ||
        (ws_bytes && !(ws = dev(ctx, NULL, ws_bytes))) || attnrt_attention_run(plan, &a, ws, ws_bytes, NULL) != ATTNRT_OK ||
        attnrt_stream_synchronize(ctx, NULL) != ATTNRT_OK) {
        printf("FAIL %s: %s\n", c->name, attnrt_last_error());
        failed = 1;
    }

    float *out = malloc((size_t)(T * Hq * Dv) * sizeof *out), *lse = malloc((size_t)(T * Hq) * sizeof *lse);
    double *ref = malloc((size_t)(T * Hq * Dv) * sizeof *ref), *ref_lse = malloc((size_t)(T * Hq) * sizeof *ref_lse);
    attnrt_mem_copy_to_host(ctx, out, d_out, (size_t)(T * Hq * Dv) * 4, NULL);
    attnrt_mem_copy_to_host(ctx, lse, d_lse, (size_t)(T * Hq) * 4, NULL);
    ref_attention_problem p = {.num_seqs = B, .query_start_loc = qsl, .seq_lens = sl, .num_q_heads = Hq,
                               .num_kv_heads = Hkv, .head_dim_qk = Dq, .head_dim_v = Dv, .q = qd, .k_cache = kd,
                               .v_cache = vd, .num_blocks = nblk, .block_size = bs, .block_table = bt,
                               .max_blocks_per_seq = max_blocks, .scale = 1.0 / sqrt((double)Dq), .causal = c->causal,
                               .window_left = c->wl, .window_right = c->wr, .softcap = c->softcap,
                               .alibi_slopes = c->alibi ? slopes_d : NULL, .sinks = c->sinks ? sinks_d : NULL,
                               .out = ref, .lse = ref_lse};
    ref_paged_attention(&p);
    double err = 0.0, norm = 0.0, lse_err = 0.0;
    for (int i = 0; i < T * Hq * Dv && !failed; i++) {
        err += ((double)out[i] - ref[i]) * ((double)out[i] - ref[i]);
        norm += ref[i] * ref[i];
        if (!isfinite(out[i])) failed = 1;
    }
    for (int i = 0; i < T * Hq && !failed; i++) {
        if (isinf(ref_lse[i]) || isinf(lse[i])) {
            if (!(isinf(ref_lse[i]) && isinf(lse[i]) && lse[i] < 0)) failed = 1;
            continue;
        }
        const double e = fabs((double)lse[i] - ref_lse[i]) / (1.0 + fabs(ref_lse[i]));
        lse_err = e > lse_err ? e : lse_err;
    }
    const double rel = norm > 0 ? sqrt(err / norm) : sqrt(err);
    if (!failed && (rel > 2e-5 || lse_err > 1e-4)) failed = 1;
    printf("%s %-34s rel L2 %.2e, LSE %.2e, workspace %zu B\n", failed ? "FAIL" : "pass", c->name, rel, lse_err, ws_bytes);

    attnrt_plan_destroy(plan);
    void *bufs[] = {d_q, d_k, d_v, d_out, d_lse, d_bt, d_qsl, d_sl, d_sc, d_al, d_si, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) attnrt_mem_free(ctx, bufs[i]);
    free(bt), free(perm), free(kd), free(vd), free(kb), free(vb), free(scales), free(q), free(qd);
    free(out), free(lse), free(ref), free(ref_lse);
    return failed;
}

int main(void)
{
    const tcase_t cases[] = {
        {"d36-mqa-bs1", 36, 36, 5, 1, 1, ATTNRT_F32, 0, 0, 3, {1, 9, 3}, {40, 9, 20}, 1, -1, -1, 0, 0, 0},
        {"d72-gqa3-bs3-f16-hnd", 72, 72, 6, 2, 3, ATTNRT_F16, 1, 0, 2, {1, 20}, {300, 50}, 1, -1, -1, 0, 0, 0},
        {"d100v36-gqa2-bf16-split", 100, 36, 8, 4, 16, ATTNRT_BF16, 0, 0, 2, {1, 70}, {2000, 70}, 1, -1, -1, 0, 0, 0},
        {"d200-mha-bs5-e4m3-block", 200, 200, 4, 4, 5, ATTNRT_FP8_E4M3, 0, 1, 2, {1, 33}, {500, 100}, 1, -1, -1, 0, 0, 0},
        {"d48-window-softcap-alibi-sinks", 48, 48, 8, 2, 7, ATTNRT_F32, 0, 0, 2, {1, 40}, {90, 120}, 1, 17, -1, 5.0f, 1, 1},
        {"d128-gqa16-decode-hnd", 128, 128, 32, 2, 16, ATTNRT_F16, 1, 0, 3, {1, 1, 2}, {5000, 77, 300}, 1, -1, -1, 0, 0, 0},
        {"d64-long-decode-split", 64, 64, 2, 2, 16, ATTNRT_BF16, 0, 0, 1, {1}, {20000}, 1, -1, -1, 0, 0, 1},
        {"d16-e5m2-bs2", 16, 16, 3, 1, 2, ATTNRT_FP8_E5M2, 0, 0, 2, {4, 1}, {4, 33}, 1, -1, -1, 0, 0, 0},
        {"d136-cross-window-both", 136, 136, 4, 2, 8, ATTNRT_F32, 0, 0, 2, {12, 1}, {5, 70}, 0, 3, 2, 0, 0, 0},
        {"d96-gqa8-prefill-bs1", 96, 96, 16, 2, 1, ATTNRT_F16, 0, 0, 1, {130}, {300}, 1, -1, -1, 0, 0, 1},
        {"d128-gqa4-decode-e4m3-tensor", 128, 128, 32, 8, 16, ATTNRT_FP8_E4M3, 0, 0, 2, {1, 1}, {3000, 45}, 1, -1, -1, 0, 0, 1},
        {"d64-gqa16-decode-window", 64, 64, 32, 2, 16, ATTNRT_F32, 0, 0, 2, {1, 1}, {1500, 300}, 1, 700, -1, 0, 1, 0},
    };
    attnrt_context_t *ctx = NULL;
    if (attnrt_open("cpu:0", &ctx) != ATTNRT_OK) {
        fprintf(stderr, "test_cpu_isa_dims: cannot open cpu:0: %s\n", attnrt_last_error());
        return 1;
    }
    const char *isa = getenv("ATTNRT_CPU_ISA");
    printf("test_cpu_isa_dims: ATTNRT_CPU_ISA=%s\n", isa ? isa : "(unset: the best)");
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) failures += run_case(ctx, &cases[i]);
    attnrt_close(ctx);
    attnrt_shutdown();
    printf("%d of %zu cases failed\n", failures, sizeof cases / sizeof cases[0]);
    return failures ? 1 : 0;
}
