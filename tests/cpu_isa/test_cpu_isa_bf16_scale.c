/* test_cpu_isa_bf16_scale: paged attention of bf16 queries over bf16 caches with a large softmax scale
 * and a soft-cap, under whatever ISA ATTNRT_CPU_ISA forces (run through isa_guard). A large scale
 * magnifies any rounding of the query's products into the logits (s = scale * q.k); bf16 queries and
 * keys multiply exactly in f32, so every ISA must match the float64 reference (fed the same bf16
 * values) as closely as the f32 kernels do: max |out - ref| <= 5e-6 and LSE within 2e-6 (1 + |ref|).
 * Decode (narrow and all-heads tiles, split-KV), head dims with and without a scalar tail, and a
 * prefill (wide tiles); out in f32, so that the check sees the kernel and not the output's rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "reference.h"

#define MAX_REQ 3
#define OUT_TOL 5e-6 /* the avx2 and portable kernels stay below 1.2e-6 (out) and 4e-7 (LSE) here */
#define LSE_TOL 2e-6

typedef struct bcase {
    const char *name;
    int         d, hq, hkv, bs;
    int         nreq, qlen[MAX_REQ], kvlen[MAX_REQ];
    float       scale, softcap;
} bcase_t;

static const bcase_t cases[] = {
    {"d64-gqa4-decode-scale10-cap5", 64, 8, 2, 16, 2, {1, 1}, {300, 77}, 10.0f, 5.0f},
    {"d128-mha-decode-split-scale10-cap5", 128, 4, 4, 16, 1, {1}, {3000}, 10.0f, 5.0f},
    {"d80-gqa2-decode-tail-scale10-cap5", 80, 4, 2, 8, 2, {1, 3}, {130, 40}, 10.0f, 5.0f},
    {"d64-gqa8-decode-scale8-cap30", 64, 16, 2, 16, 3, {1, 1, 1}, {500, 64, 9}, 8.0f, 30.0f},
    {"d64-gqa2-prefill-scale10-cap5", 64, 4, 2, 16, 1, {48}, {100}, 10.0f, 5.0f},
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) /* [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* n bf16 values in [-1, 1): the stored bits in *bits, the values in *vals. */
static void fill_bf16(uint16_t *bits, double *vals, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bits[i] = ref_double_to_bf16(rnd());
        vals[i] = ref_bf16_to_double(bits[i]);
    }
}

static void *dev(attnrt_context_t *ctx, const void *host, size_t bytes)
{
    void *d = NULL;
    if (attnrt_mem_alloc(ctx, bytes, &d) != ATTNRT_OK) return NULL;
    if (host && attnrt_mem_copy_to_device(ctx, d, host, bytes, NULL) != ATTNRT_OK) return NULL;
    return d;
}

/* Runs one case and compares it with the reference; returns 1 when it fails. */
static int run_case(attnrt_context_t *ctx, const bcase_t *c)
{
    const int D = c->d, Hq = c->hq, Hkv = c->hkv, bs = c->bs, B = c->nreq;
    int32_t qsl[MAX_REQ + 1] = {0}, sl[MAX_REQ];
    int max_blocks = 1, nblk = 0;
    for (int b = 0; b < B; b++) {
        qsl[b + 1] = qsl[b] + c->qlen[b];
        sl[b] = c->kvlen[b];
        const int nb = (c->kvlen[b] + bs - 1) / bs;
        nblk += nb;
        if (nb > max_blocks) max_blocks = nb;
    }
    const int T = qsl[B];
    int32_t *bt = calloc((size_t)(unsigned)B * (unsigned)max_blocks, sizeof *bt);
    for (int b = 0, next = 0; b < B; b++) /* blocks in reverse, so no request reads its blocks in order */
        for (int k = 0; k < (c->kvlen[b] + bs - 1) / bs; k++) bt[b * max_blocks + k] = nblk - 1 - next++;

    const size_t nq = (size_t)T * (size_t)Hq * (size_t)D, nkv = (size_t)nblk * (size_t)bs * (size_t)Hkv * (size_t)D;
    const size_t nout = (size_t)T * (size_t)Hq * (size_t)D, nlse = (size_t)T * (size_t)Hq;
    uint16_t *qb = malloc(nq * 2), *kb = malloc(nkv * 2), *vb = malloc(nkv * 2);
    double *qd = malloc(nq * sizeof *qd), *kd = malloc(nkv * sizeof *kd), *vd = malloc(nkv * sizeof *vd);
    fill_bf16(qb, qd, nq);
    fill_bf16(kb, kd, nkv);
    fill_bf16(vb, vd, nkv);

    void *d_q = dev(ctx, qb, nq * 2), *d_k = dev(ctx, kb, nkv * 2), *d_v = dev(ctx, vb, nkv * 2);
    void *d_out = dev(ctx, NULL, nout * 4), *d_lse = dev(ctx, NULL, nlse * 4);
    void *d_bt = dev(ctx, bt, (size_t)(B * max_blocks) * 4), *d_qsl = dev(ctx, qsl, (size_t)(B + 1) * 4);
    void *d_sl = dev(ctx, sl, (size_t)B * 4);
    int failed = !d_q || !d_k || !d_v || !d_out || !d_lse || !d_bt || !d_qsl || !d_sl;
    if (!failed) attnrt_mem_set(ctx, d_out, 0xff, nout * 4, NULL); /* NaN: every element must be written */

    attnrt_tensor_t tq, tk, tv, tout, tlse, tbt, tqsl, tsl;
    const int64_t qs[3] = {T, Hq, D}, ks[4] = {nblk, bs, Hkv, D}, ls[2] = {T, Hq}, bts[2] = {B, max_blocks};
    const int64_t qsls[1] = {B + 1}, sls[1] = {B};
    attnrt_tensor_init(&tq, d_q, ATTNRT_BF16, 3, qs);
    attnrt_tensor_init(&tk, d_k, ATTNRT_BF16, 4, ks);
    attnrt_tensor_init(&tv, d_v, ATTNRT_BF16, 4, ks);
    attnrt_tensor_init(&tout, d_out, ATTNRT_F32, 3, qs);
    attnrt_tensor_init(&tlse, d_lse, ATTNRT_F32, 2, ls);
    attnrt_tensor_init(&tbt, d_bt, ATTNRT_I32, 2, bts);
    attnrt_tensor_init(&tqsl, d_qsl, ATTNRT_I32, 1, qsls);
    attnrt_tensor_init(&tsl, d_sl, ATTNRT_I32, 1, sls);
    attnrt_attention_args_t a = {.struct_size = sizeof a, .query = &tq, .key_cache = &tk, .value_cache = &tv,
                                 .block_table = &tbt, .query_start_loc = &tqsl, .seq_lens = &tsl, .out = &tout,
                                 .lse = &tlse, .scale = c->scale, .softcap = c->softcap, .causal = 1};
    attnrt_batch_host_t batch = {.struct_size = sizeof batch, .num_seqs = B, .query_start_loc = qsl, .seq_lens = sl,
                                 .block_table = bt, .block_table_stride = max_blocks};
    attnrt_plan_t *plan = NULL;
    size_t ws_bytes = 0;
    void *ws = NULL;
    if (!failed && (attnrt_attention_plan(ctx, &a, &batch, &plan) != ATTNRT_OK ||
                    attnrt_plan_workspace_size(plan, &ws_bytes) != ATTNRT_OK ||
                    (ws_bytes && !(ws = dev(ctx, NULL, ws_bytes))) ||
                    attnrt_attention_run(plan, &a, ws, ws_bytes, NULL) != ATTNRT_OK ||
                    attnrt_stream_synchronize(ctx, NULL) != ATTNRT_OK)) {
        printf("FAIL %s: %s\n", c->name, attnrt_last_error());
        failed = 1;
    }

    float *out = malloc(nout * sizeof *out), *lse = malloc(nlse * sizeof *lse);
    double *ref = malloc(nout * sizeof *ref), *ref_lse = malloc(nlse * sizeof *ref_lse);
    double out_err = 0.0, lse_err = 0.0;
    if (!failed) {
        attnrt_mem_copy_to_host(ctx, out, d_out, nout * 4, NULL);
        attnrt_mem_copy_to_host(ctx, lse, d_lse, nlse * 4, NULL);
        ref_attention_problem p = {.num_seqs = B, .query_start_loc = qsl, .seq_lens = sl, .num_q_heads = Hq,
                                   .num_kv_heads = Hkv, .head_dim_qk = D, .head_dim_v = D, .q = qd, .k_cache = kd,
                                   .v_cache = vd, .num_blocks = nblk, .block_size = bs, .block_table = bt,
                                   .max_blocks_per_seq = max_blocks, .scale = c->scale, .causal = 1,
                                   .window_left = -1, .window_right = -1, .softcap = c->softcap,
                                   .out = ref, .lse = ref_lse};
        ref_paged_attention(&p);
        for (size_t i = 0; i < nout; i++) {
            const double e = isfinite(out[i]) ? fabs((double)out[i] - ref[i]) : INFINITY;
            if (e > out_err) out_err = e;
        }
        for (size_t i = 0; i < nlse; i++) {
            const double e = isfinite(lse[i]) ? fabs((double)lse[i] - ref_lse[i]) / (1.0 + fabs(ref_lse[i])) : INFINITY;
            if (e > lse_err) lse_err = e;
        }
        failed = !(out_err <= OUT_TOL) || !(lse_err <= LSE_TOL);
        printf("%s %-36s max |out - ref| %.2e, LSE %.2e, workspace %zu B\n", failed ? "FAIL" : "pass", c->name,
               out_err, lse_err, ws_bytes);
    }

    attnrt_plan_destroy(plan);
    void *bufs[] = {d_q, d_k, d_v, d_out, d_lse, d_bt, d_qsl, d_sl, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) attnrt_mem_free(ctx, bufs[i]);
    free(bt), free(qb), free(kb), free(vb), free(qd), free(kd), free(vd);
    free(out), free(lse), free(ref), free(ref_lse);
    return failed;
}

int main(void)
{
    attnrt_context_t *ctx = NULL;
    if (attnrt_open("cpu:0", &ctx) != ATTNRT_OK) {
        fprintf(stderr, "test_cpu_isa_bf16_scale: cannot open cpu:0: %s\n", attnrt_last_error());
        return 1;
    }
    const char *isa = getenv("ATTNRT_CPU_ISA");
    printf("test_cpu_isa_bf16_scale: ATTNRT_CPU_ISA=%s\n", isa ? isa : "(unset: the best)");
    int failures = 0;
    const size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) failures += run_case(ctx, &cases[i]);
    attnrt_close(ctx);
    attnrt_shutdown();
    printf("%d of %zu cases failed\n", failures, n);
    return failures ? 1 : 0;
}
