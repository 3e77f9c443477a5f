/* cuda_kernel_coverage — every paged-attention row of the cuda plugin's kernel table run on the GPU: for each call of
 * kernel_shapes.h (the calls whose plan test_cuda_kernel_select checks: one a row, inside its rule), the same inputs on
 * cuda:0 (or the device argv[1] names) and on cpu:0 through the public API, outputs compared. Not a CI test (it needs
 * a GPU): bench/h200/run.sh runs it. Exit 0 every call within tolerance, 1 a mismatch or an error, 77 no such device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnrt.h"
#include "kernel_shapes.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}
static float uniform(void) { return (float)rnd() / 4294967296.0f * 2.0f - 1.0f; } /* [-1, 1) */

static uint16_t f32_to_half_bits(float f, int bf16)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if (bf16) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    const uint32_t s = (u >> 16) & 0x8000u;
    const int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)s; /* |f| < 2^-14: zero is close enough for test data */
    return (uint16_t)(s | (uint32_t)e << 10 | ((u >> 13) & 0x3ffu));
}

static float half_bits_to_f32(uint16_t h, int bf16)
{
    uint32_t u;
    if (bf16) u = (uint32_t)h << 16;
    else {
        const uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
        u = e == 0 ? s : e == 31 ? s | 0x7f800000u | m << 13 : s | (e - 15 + 127) << 23 | m << 13;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* n random elements of dtype k into buf: values in [-1, 1) (16-bit, f32), fp8 codes of magnitude 2^-3 .. 2^1 */
static void fill(void *buf, size_t n, int k)
{
    for (size_t i = 0; i < n; i++) {
        const uint32_t r = rnd();
        if (k == E4M3) ((uint8_t *)buf)[i] = (uint8_t)((r & 0x80u) | (4u + r % 5u) << 3 | ((r >> 8) & 7u));
        else if (k == E5M2) ((uint8_t *)buf)[i] = (uint8_t)((r & 0x80u) | (12u + r % 5u) << 2 | ((r >> 8) & 3u));
        else if (k == F32) ((float *)buf)[i] = uniform();
        else ((uint16_t *)buf)[i] = f32_to_half_bits(uniform(), k == BF16);
    }
}

static float element(const void *buf, size_t i, int k)
{
    return k == F32 ? ((const float *)buf)[i] : half_bits_to_f32(((const uint16_t *)buf)[i], k == BF16);
}

typedef struct inputs {
    int64_t B, L, S, T, nb, cols;
    void   *q, *k, *v;
    int32_t *bt, *qsl, *sl;
    float   kscale, vscale;
} inputs_t;

/* One device's run of shape s on the inputs: its output into out (host, T x Hq x D elements of the query's type) */
static int run_on(const char *device, const shape_t *s, const inputs_t *in, void *out)
{
    attnrt_context_t *ctx = NULL;
    if (attnrt_open(device, &ctx) != ATTNRT_OK) return printf("  %s: %s\n", device, attnrt_last_error()), 0;
    const attnrt_dtype_t qd = shape_dtype(s->q), kvd = shape_dtype(s->kv), i32 = {ATTNRT_DTYPE_CODE_INT, 32, 1};
    const size_t qes = attnrt_dtype_size(qd), kves = attnrt_dtype_size(kvd);
    const size_t qbytes = (size_t)(in->T * s->hq * s->d) * qes, cbytes = (size_t)(in->nb * s->bs * s->hkv * s->d) * kves;
    const size_t btbytes = (size_t)(in->B * in->cols) * 4, scbytes = 2 * sizeof(float);
    void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *dbt = NULL, *dqsl = NULL, *dsl = NULL, *dsc = NULL, *ws = NULL;
    attnrt_plan_t *plan = NULL;
    int ok = attnrt_mem_alloc(ctx, qbytes, &dq) == ATTNRT_OK && attnrt_mem_alloc(ctx, cbytes, &dk) == ATTNRT_OK &&
             attnrt_mem_alloc(ctx, cbytes, &dv) == ATTNRT_OK && attnrt_mem_alloc(ctx, qbytes, &dout) == ATTNRT_OK &&
             attnrt_mem_alloc(ctx, btbytes, &dbt) == ATTNRT_OK && attnrt_mem_alloc(ctx, (size_t)(in->B + 1) * 4, &dqsl) == ATTNRT_OK &&
             attnrt_mem_alloc(ctx, (size_t)in->B * 4, &dsl) == ATTNRT_OK && attnrt_mem_alloc(ctx, scbytes, &dsc) == ATTNRT_OK;
    const float scales[2] = {in->kscale, in->vscale};
    ok = ok && attnrt_mem_copy_to_device(ctx, dq, in->q, qbytes, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_device(ctx, dk, in->k, cbytes, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_device(ctx, dv, in->v, cbytes, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_device(ctx, dbt, in->bt, btbytes, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_device(ctx, dqsl, in->qsl, (size_t)(in->B + 1) * 4, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_device(ctx, dsl, in->sl, (size_t)in->B * 4, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_device(ctx, dsc, scales, scbytes, NULL) == ATTNRT_OK &&
         attnrt_mem_set(ctx, dout, 0xff, qbytes, NULL) == ATTNRT_OK; /* NaN: every element must be written */
    attnrt_tensor_t q, kc, vc, o, bt, qsl, sl, ks, vs;
    const int64_t qshape[3] = {in->T, s->hq, s->d}, cshape[4] = {in->nb, s->bs, s->hkv, s->d}, btshape[2] = {in->B, in->cols};
    const int64_t n1[1] = {in->B + 1}, nb[1] = {in->B}, one[1] = {1};
    attnrt_tensor_init(&q, dq, qd, 3, qshape);
    attnrt_tensor_init(&o, dout, qd, 3, qshape);
    attnrt_tensor_init(&kc, dk, kvd, 4, cshape);
    attnrt_tensor_init(&vc, dv, kvd, 4, cshape);
    if (s->hnd) { /* a block's rows of one head side by side */
        kc.strides[1] = vc.strides[1] = s->d;
        kc.strides[2] = vc.strides[2] = (int64_t)s->bs * s->d;
    }
    attnrt_tensor_init(&bt, dbt, i32, 2, btshape);
    attnrt_tensor_init(&qsl, dqsl, i32, 1, n1);
    attnrt_tensor_init(&sl, dsl, i32, 1, nb);
    attnrt_tensor_init(&ks, dsc, shape_dtype(F32), 1, one);
    attnrt_tensor_init(&vs, (char *)dsc + sizeof(float), shape_dtype(F32), 1, one);
    attnrt_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.query = &q, a.key_cache = &kc, a.value_cache = &vc, a.out = &o;
    a.block_table = &bt, a.query_start_loc = &qsl, a.seq_lens = &sl;
    if (kvd.bits == 8) a.key_scale = &ks, a.value_scale = &vs;
    a.causal = 1;
    a.softcap = s->softcap ? 30.0f : 0.0f;
    attnrt_batch_host_t batch;
    memset(&batch, 0, sizeof batch);
    batch.struct_size = sizeof batch;
    batch.num_seqs = (int32_t)in->B, batch.query_start_loc = in->qsl, batch.seq_lens = in->sl;
    batch.block_table = in->bt, batch.block_table_stride = in->cols;
    size_t wsb = 0;
    ok = ok && attnrt_attention_plan(ctx, &a, &batch, &plan) == ATTNRT_OK && attnrt_plan_workspace_size(plan, &wsb) == ATTNRT_OK &&
         (!wsb || attnrt_mem_alloc(ctx, wsb, &ws) == ATTNRT_OK) && attnrt_attention_run(plan, &a, ws, wsb, NULL) == ATTNRT_OK &&
         attnrt_mem_copy_to_host(ctx, out, dout, qbytes, NULL) == ATTNRT_OK;
    if (!ok) printf("  %s: %s\n", device, attnrt_last_error());
    attnrt_plan_destroy(plan);
    void *bufs[] = {dq, dk, dv, dout, dbt, dqsl, dsl, dsc, ws};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) attnrt_mem_free(ctx, bufs[i]);
    attnrt_close(ctx);
    return ok;
}

/* Shape s on the device and the cpu; 1 where the outputs agree within the query type's tolerance */
static int check(const char *device, const shape_t *s)
{
    inputs_t in;
    memset(&in, 0, sizeof in);
    in.B = s->b, in.L = s->new_tokens, in.S = (int64_t)s->ctx + s->new_tokens, in.T = in.B * in.L;
    in.cols = (in.S + s->bs - 1) / s->bs;
    in.nb = in.B * in.cols + 3; /* spare blocks no table points at */
    const size_t qn = (size_t)(in.T * s->hq * s->d), cn = (size_t)(in.nb * s->bs * s->hkv * s->d);
    const size_t qes = attnrt_dtype_size(shape_dtype(s->q)), kves = attnrt_dtype_size(shape_dtype(s->kv));
    in.q = malloc(qn * qes), in.k = malloc(cn * kves), in.v = malloc(cn * kves);
    in.bt = malloc((size_t)(in.B * in.cols) * 4), in.qsl = malloc((size_t)(in.B + 1) * 4), in.sl = malloc((size_t)in.B * 4);
    void *out_dev = malloc(qn * qes), *out_cpu = malloc(qn * qes);
    int ok = in.q && in.k && in.v && in.bt && in.qsl && in.sl && out_dev && out_cpu;
    if (ok) {
        fill(in.q, qn, s->q), fill(in.k, cn, s->kv), fill(in.v, cn, s->kv);
        in.kscale = 0.5f, in.vscale = 0.25f;
        for (int64_t i = 0; i < in.B * in.cols; i++) in.bt[i] = (int32_t)i; /* then shuffled: blocks scattered */
        for (int64_t i = in.B * in.cols - 1; i > 0; i--) {
            const int64_t j = (int64_t)(rnd() % (uint32_t)(i + 1));
            const int32_t t = in.bt[i];
            in.bt[i] = in.bt[j], in.bt[j] = t;
        }
        for (int64_t b = 0; b <= in.B; b++) in.qsl[b] = (int32_t)(b * in.L);
        for (int64_t b = 0; b < in.B; b++) in.sl[b] = (int32_t)in.S;
        ok = run_on(device, s, &in, out_dev) && run_on("cpu:0", s, &in, out_cpu);
    }
    double err = 0, ref = 0;
    for (size_t i = 0; ok && i < qn; i++) {
        const double g = element(out_dev, i, s->q), c = element(out_cpu, i, s->q);
        err = isfinite(g) && isfinite(c) ? fmax(err, fabs(g - c)) : INFINITY;
        ref = fmax(ref, fabs(c));
    }
    /* relative to the largest output: a few roundings of the output type, of P in it, and of sums in another order */
    const double tol = (s->q == BF16 ? 2e-2 : s->q == F16 ? 4e-3 : 1e-4) * fmax(ref, 1e-3);
    const int pass = ok && err <= tol;
    printf("%-4s %-52s max |device - cpu| %.3g (tolerance %.3g, outputs up to %.3g)\n", pass ? "ok" : "FAIL", s->what, err, tol, ref);
    free(in.q), free(in.k), free(in.v), free(in.bt), free(in.qsl), free(in.sl), free(out_dev), free(out_cpu);
    return pass;
}

int main(int argc, char **argv)
{
    const char *device = argc > 1 ? argv[1] : "cuda:0";
    attnrt_context_t *probe = NULL;
    if (attnrt_init() != ATTNRT_OK || attnrt_open(device, &probe) != ATTNRT_OK) {
        printf("cuda_kernel_coverage: skipped: no device %s (%s)\n", device, attnrt_last_error());
        return 77;
    }
    attnrt_close(probe);
    int failures = 0;
    for (size_t i = 0; i < sizeof cuda_hopper_shapes / sizeof *cuda_hopper_shapes; i++) failures += !check(device, &cuda_hopper_shapes[i]);
    printf("cuda_kernel_coverage: %s (%d of %zu calls differ)\n", failures ? "FAILED" : "PASSED", failures,
           sizeof cuda_hopper_shapes / sizeof *cuda_hopper_shapes);
    attnrt_shutdown();
    return failures ? 1 : 0;
}
