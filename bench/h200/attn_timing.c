/* attn_timing.c — the device script's fallback timer when tools/attnrt-bench is not built: one paged
 * attention shape (decode or causal prefill) on a device, timed with attnrt events (median of --iters
 * runs after --warmup), next to the device-to-device copy bandwidth measured in the same run. Flags
 * are a subset of attnrt-bench's, and --json prints the same keys (time_ms.median, gb_per_s,
 * gflop_per_s, mem_gb_per_s.median), so bench/h200/table.py reads either.
 *
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -Iruntime/include -Iabi bench/h200/attn_timing.c \
 *       -Lbuild-cuda/runtime -lattnrt -Wl,-rpath,$PWD/build-cuda/runtime -lm -o attn_timing
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMING_PROG "attn_timing"
#include "timing_util.h"

typedef struct opts {
    const char    *device;
    int            prefill;
    int64_t        batch, ctx, new_tokens, heads, kv_heads, head_dim, block_size;
    attnrt_dtype_t dtype, kv_dtype;
    int            iters, warmup, json;
} opts_t;

static attnrt_dtype_t parse_dtype(const char *s)
{
    if (!strcmp(s, "f32")) return ATTNRT_F32;
    if (!strcmp(s, "f16")) return ATTNRT_F16;
    if (!strcmp(s, "bf16")) return ATTNRT_BF16;
    if (!strcmp(s, "fp8_e4m3") || !strcmp(s, "e4m3")) return ATTNRT_FP8_E4M3;
    if (!strcmp(s, "fp8_e5m2") || !strcmp(s, "e5m2")) return ATTNRT_FP8_E5M2;
    fprintf(stderr, "attn_timing: unknown dtype %s\n", s);
    exit(2);
}

static size_t dsize(attnrt_dtype_t dt) { return dt.bits / 8u; }

static uint64_t rng = 0x2545f4914f6cdd1dull;
/* Random finite, non-zero bit patterns of the dtype, in [-1, 1) magnitudes. */
static void fill_host(void *p, size_t n, attnrt_dtype_t dt)
{
    for (size_t i = 0; i < n; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        float x = (float)((double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0);
        if (x == 0.0f) x = 0.5f;
        uint32_t b;
        memcpy(&b, &x, 4);
        switch (dt.bits) {
        case 32: ((float *)p)[i] = x; break;
        case 16:
            if (dt.code == ATTNRT_DTYPE_CODE_BFLOAT) {
                ((uint16_t *)p)[i] = (uint16_t)(b >> 16);
            } else {
                const uint32_t e = (b >> 23) & 0xff;
                ((uint16_t *)p)[i] = (uint16_t)(((b >> 16) & 0x8000u) | (e > 112 ? ((e - 112) << 10) | ((b >> 13) & 0x3ff) : 0x3c00u));
            }
            break;
        default: ((uint8_t *)p)[i] = (uint8_t)(0x30 + (rng & 0x0f) + ((rng >> 8) & 0x80)); break; /* ~0.1 .. 0.5 */
        }
    }
}

/* A device buffer of n elements with random contents (a 64 MiB host pattern, repeated). */
static void *dev_random(attnrt_context_t *ctx, size_t n, attnrt_dtype_t dt)
{
    const size_t bytes = n * dsize(dt), chunk = (size_t)64 << 20;
    void *d = NULL, *h = malloc(chunk);
    if (!h) exit(1);
    TRY(attnrt_mem_alloc(ctx, bytes ? bytes : 1, &d));
    fill_host(h, chunk / dsize(dt), dt);
    for (size_t off = 0; off < bytes; off += chunk)
        TRY(attnrt_mem_copy_to_device(ctx, (char *)d + off, h, bytes - off < chunk ? bytes - off : chunk, NULL));
    free(h);
    return d;
}

static void *dev_copy(attnrt_context_t *ctx, const void *h, size_t bytes)
{
    void *d = NULL;
    TRY(attnrt_mem_alloc(ctx, bytes, &d));
    TRY(attnrt_mem_copy_to_device(ctx, d, h, bytes, NULL));
    return d;
}

static void tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dt, int ndim, const int64_t *shape)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->data = data;
    t->dtype = dt;
    t->ndim = ndim;
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = s;
        s *= shape[i];
    }
}

/* Device-to-device copy bandwidth (bytes read + written), 1 GiB, median of 10. */
static double copy_ceiling(attnrt_context_t *ctx, attnrt_stream_t *s, attnrt_event_t *e0, attnrt_event_t *e1)
{
    const size_t bytes = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    TRY(attnrt_mem_alloc(ctx, bytes, &a));
    TRY(attnrt_mem_alloc(ctx, bytes, &b));
    TRY(attnrt_mem_set(ctx, a, 0x3c, bytes, NULL));
    double v[10];
    for (int i = 0; i < 12; i++) { /* two warm-ups */
        const double gbs = timing_copy_gbs(ctx, b, a, bytes, s, e0, e1);
        if (i >= 2) v[i - 2] = gbs;
    }
    TRY(attnrt_mem_free(ctx, a));
    TRY(attnrt_mem_free(ctx, b));
    return timing_median(v, 10);
}

static void parse(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->device = "cuda:0";
    o->batch = 1, o->ctx = 4096, o->new_tokens = 512, o->heads = 32, o->kv_heads = 8, o->head_dim = 128;
    o->block_size = 16, o->iters = 20, o->warmup = 3;
    o->dtype = ATTNRT_BF16;
    int kv_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!v) { fprintf(stderr, "attn_timing: %s needs a value\n", a); exit(2); }
        i++;
        if (!strcmp(a, "--op")) o->prefill = !strcmp(v, "prefill");
        else if (!strcmp(a, "--device")) o->device = v;
        else if (!strcmp(a, "--plugin")) setenv("ATTNRT_PLUGIN", v, 1);
        else if (!strcmp(a, "--batch")) o->batch = atoll(v);
        else if (!strcmp(a, "--ctx")) o->ctx = atoll(v);
        else if (!strcmp(a, "--new-tokens")) o->new_tokens = atoll(v);
        else if (!strcmp(a, "--heads")) o->heads = atoll(v);
        else if (!strcmp(a, "--kv-heads")) o->kv_heads = atoll(v);
        else if (!strcmp(a, "--head-dim")) o->head_dim = atoll(v);
        else if (!strcmp(a, "--block-size")) o->block_size = atoll(v);
        else if (!strcmp(a, "--dtype")) o->dtype = parse_dtype(v);
        else if (!strcmp(a, "--kv-dtype")) o->kv_dtype = parse_dtype(v), kv_set = 1;
        else if (!strcmp(a, "--iters")) o->iters = atoi(v);
        else if (!strcmp(a, "--warmup")) o->warmup = atoi(v);
        else { fprintf(stderr, "attn_timing: unknown option %s\n", a); exit(2); }
    }
    if (!kv_set) o->kv_dtype = o->dtype;
    if (o->iters < 1 || o->iters > 1000) o->iters = 20;
}

int main(int argc, char **argv)
{
    opts_t o;
    parse(argc, argv, &o);
    attnrt_context_t *ctx = NULL;
    TRY(attnrt_open(o.device, &ctx));
    attnrt_stream_t *s = NULL;
    attnrt_event_t *e0 = NULL, *e1 = NULL;
    TRY(attnrt_stream_create(ctx, &s));
    TRY(attnrt_event_create(ctx, &e0));
    TRY(attnrt_event_create(ctx, &e1));

    const int64_t B = o.batch, Lq = o.prefill ? o.new_tokens : 1, S = o.ctx, bs = o.block_size;
    const int64_t Hq = o.heads, Hkv = o.kv_heads, D = o.head_dim, T = B * Lq;
    const int64_t per_seq = (S + bs - 1) / bs, num_blocks = B * per_seq;
    int32_t *qsl = malloc(sizeof(int32_t) * (size_t)(B + 1)), *sl = malloc(sizeof(int32_t) * (size_t)B);
    int32_t *bt = malloc(sizeof(int32_t) * (size_t)(B * per_seq));
    qsl[0] = 0;
    for (int64_t b = 0; b < B; b++) qsl[b + 1] = (int32_t)((b + 1) * Lq), sl[b] = (int32_t)S;
    for (int64_t i = 0; i < B * per_seq; i++) bt[i] = (int32_t)((i * 7919) % num_blocks); /* scattered blocks */
    const size_t cache_elems = (size_t)(num_blocks * bs * Hkv * D);
    void *kc = dev_random(ctx, cache_elems, o.kv_dtype), *vc = dev_random(ctx, cache_elems, o.kv_dtype);
    void *q = dev_random(ctx, (size_t)(T * Hq * D), o.dtype), *out = NULL, *scale = NULL;
    TRY(attnrt_mem_alloc(ctx, (size_t)(T * Hq * D) * dsize(o.dtype), &out));
    void *d_qsl = dev_copy(ctx, qsl, sizeof(int32_t) * (size_t)(B + 1)), *d_sl = dev_copy(ctx, sl, sizeof(int32_t) * (size_t)B);
    void *d_bt = dev_copy(ctx, bt, sizeof(int32_t) * (size_t)(B * per_seq));
    const float one = 1.0f;
    attnrt_tensor_t tq, tkc, tvc, tbt, tqsl, tsl, tout, tscale;
    const int64_t sq[3] = {T, Hq, D}, sc[4] = {num_blocks, bs, Hkv, D}, sbt[2] = {B, per_seq}, sqsl[1] = {B + 1},
                  ssl[1] = {B}, s1[1] = {1};
    tensor(&tq, q, o.dtype, 3, sq);
    tensor(&tkc, kc, o.kv_dtype, 4, sc);
    tensor(&tvc, vc, o.kv_dtype, 4, sc);
    tensor(&tbt, d_bt, ATTNRT_I32, 2, sbt);
    tensor(&tqsl, d_qsl, ATTNRT_I32, 1, sqsl);
    tensor(&tsl, d_sl, ATTNRT_I32, 1, ssl);
    tensor(&tout, out, o.dtype, 3, sq);
    attnrt_attention_args_t a = {.struct_size = sizeof a, .query = &tq, .key_cache = &tkc, .value_cache = &tvc,
                                 .block_table = &tbt, .query_start_loc = &tqsl, .seq_lens = &tsl, .out = &tout,
                                 .causal = 1};
    if (o.kv_dtype.bits == 8) {
        scale = dev_copy(ctx, &one, sizeof one);
        tensor(&tscale, scale, ATTNRT_F32, 1, s1);
        a.key_scale = a.value_scale = &tscale;
    }
    attnrt_batch_host_t bh = {.struct_size = sizeof bh, .num_seqs = (int32_t)B, .query_start_loc = qsl,
                              .seq_lens = sl, .block_table = bt, .block_table_stride = per_seq};
    attnrt_plan_t *plan = NULL;
    TRY(attnrt_attention_plan(ctx, &a, &bh, &plan));
    size_t ws_bytes = 0;
    TRY(attnrt_plan_workspace_size(plan, &ws_bytes));
    void *ws = NULL;
    if (ws_bytes) TRY(attnrt_mem_alloc(ctx, ws_bytes, &ws));

    double *t = malloc(sizeof(double) * (size_t)o.iters);
    for (int i = 0; i < o.warmup; i++) TRY(attnrt_attention_run(plan, &a, ws, ws_bytes, s));
    for (int i = 0; i < o.iters; i++) {
        TRY(attnrt_event_record(e0, s));
        TRY(attnrt_attention_run(plan, &a, ws, ws_bytes, s));
        TRY(attnrt_event_record(e1, s));
        float ms = 0;
        TRY(attnrt_event_elapsed_ms(e0, e1, &ms));
        t[i] = ms;
    }
    const double ms = timing_median(t, o.iters);
    const double mem = copy_ceiling(ctx, s, e0, e1);

    /* bytes: K and V read once + q + out; FLOPs: 2 Hq (Dqk + Dv) per kept (query, key) pair */
    const double kv_bytes = (double)B * (double)S * (double)Hkv * 2.0 * (double)D * (double)dsize(o.kv_dtype);
    const double bytes = kv_bytes + 2.0 * (double)T * (double)Hq * (double)D * (double)dsize(o.dtype);
    double pairs = 0;
    for (int64_t i = 0; i < Lq; i++) pairs += (double)(S - Lq + i + 1);
    const double flops = 2.0 * (double)Hq * 2.0 * (double)D * pairs * (double)B;
    const double gbs = bytes / (ms * 1e-3) * 1e-9, gflops = flops / (ms * 1e-3) * 1e-9;
    if (o.json)
        printf("{\n    \"tool\": \"attn_timing\",\n    \"op\": \"%s\",\n    \"time_ms\": {\"median\": %.6g, \"n\": %d},\n"
               "    \"bytes\": %.6g,\n    \"kv_bytes\": %.6g,\n    \"flops\": %.6g,\n    \"gb_per_s\": %.6g,\n"
               "    \"gflop_per_s\": %.6g,\n    \"mem_gb_per_s\": {\"median\": %.6g},\n    \"fraction_of_mem\": %.6g,\n"
               "    \"workspace_bytes\": %zu\n}\n",
               o.prefill ? "prefill" : "decode", ms, o.iters, bytes, kv_bytes, flops, gbs, gflops, mem, gbs / mem, ws_bytes);
    else
        printf("attn_timing %s B %lld ctx %lld new %lld Hq %lld Hkv %lld D %lld bs %lld: %.3f ms, %.1f GB/s (%.0f%% of "
               "copy %.0f GB/s), %.1f TFLOP/s\n", o.prefill ? "prefill" : "decode", (long long)B, (long long)S,
               (long long)Lq, (long long)Hq, (long long)Hkv, (long long)D, (long long)bs, ms, gbs, 100.0 * gbs / mem,
               mem, gflops * 1e-3);

    TRY(attnrt_plan_destroy(plan));
    void *bufs[] = {ws, kc, vc, q, out, scale, d_qsl, d_sl, d_bt};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) TRY(attnrt_mem_free(ctx, bufs[i]));
    attnrt_event_destroy(e0);
    attnrt_event_destroy(e1);
    attnrt_stream_destroy(s);
    TRY(attnrt_close(ctx));
    attnrt_shutdown();
    free(t);
    free(qsl);
    free(sl);
    free(bt);
    return 0;
}
