/*
 * mini_engine_check.c — how an engine can validate a backend: recompute a step in float64 with the
 * plainest loops, from the paged cache AS IT IS ON THE DEVICE (copied back block by block), and compare.
 *
 * Two comparisons per request:
 *   - kv_write: the cache rows of this step's new tokens must hold the K/V we sent, rounded once to
 *     the cache's format (exactly equal when the formats match). A slot written to the wrong row or
 *     block shows up here; the reference below could not see it, as it reads the same wrong cache.
 *   - attention: the query is the exact bits we sent and the cache the exact bits stored, so what is
 *     left is the kernel's arithmetic and the rounding of its output: the tolerances of docs/semantics.md.
 *
 * Self-contained on purpose (its own dtype decoding, its own reference): the example must build and
 * run where the project's tests are not built.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mini_engine.h"

static int dtype_is(attnrt_dtype_t a, attnrt_dtype_t b) { return a.code == b.code && a.bits == b.bits; }

/* ---- storage formats ------------------------------------------------------------------------- */

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* f32 -> f16, round to nearest even. Only finite inputs reach here (our random numbers). */
static uint16_t f16_from_f32(float x)
{
    uint16_t sign = (uint16_t)((f32_bits(x) >> 16) & 0x8000u);
    float a = fabsf(x);
    if (a >= 65520.0f) return sign | 0x7c00u;                            /* rounds to inf */
    if (a < 0x1p-14f) return sign | (uint16_t)lrintf(a * 0x1p24f);       /* subnormal: m * 2^-24, exact product */
    uint32_t u = f32_bits(a);
    u += 0xfffu + ((u >> 13) & 1u);                                     /* round the 13 dropped bits, ties to even */
    return sign | (uint16_t)((u - ((uint32_t)(127 - 15) << 23)) >> 13); /* rebias the exponent 127 -> 15 */
}

static double f16_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000u) ? -v : v;
}

/* e4m3fn: bias 7, 3 mantissa bits, no infinity, S.1111.111 is NaN. */
static double e4m3_to_double(uint8_t b)
{
    int e = (b >> 3) & 0xf, m = b & 7;
    double v = e == 0 ? ldexp(m, -9) : (e == 15 && m == 7) ? NAN : ldexp(m + 8, e - 10);
    return (b & 0x80u) ? -v : v;
}

void encode_act(void *dst, size_t i, float x, attnrt_dtype_t dtype)
{
    if (dtype_is(dtype, ATTNRT_F32)) {
        ((float *)dst)[i] = x;
    } else if (dtype_is(dtype, ATTNRT_F16)) {
        ((uint16_t *)dst)[i] = f16_from_f32(x);
    } else { /* bf16: the top half of the f32, rounded to nearest even */
        uint32_t u = f32_bits(x);
        ((uint16_t *)dst)[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

double decode_any(const void *src, size_t i, attnrt_dtype_t dtype)
{
    if (dtype_is(dtype, ATTNRT_F32)) return ((const float *)src)[i];
    if (dtype_is(dtype, ATTNRT_F16)) return f16_to_double(((const uint16_t *)src)[i]);
    if (dtype_is(dtype, ATTNRT_BF16)) return f32_from_bits((uint32_t)((const uint16_t *)src)[i] << 16);
    if (dtype_is(dtype, ATTNRT_FP8_E4M3)) return e4m3_to_double(((const uint8_t *)src)[i]);
    /* e5m2 is the top byte of the f16 with the same value */
    return f16_to_double((uint16_t)(((const uint8_t *)src)[i] << 8));
}

double fp8_max(attnrt_dtype_t dtype)
{
    if (dtype_is(dtype, ATTNRT_FP8_E4M3)) return 448.0;
    if (dtype_is(dtype, ATTNRT_FP8_E5M2)) return 57344.0;
    return 0.0;
}

double check_tolerance(const engine_config_t *cfg)
{
    double tol = dtype_is(cfg->dtype, ATTNRT_F32) ? 1e-5 : dtype_is(cfg->dtype, ATTNRT_F16) ? 2e-3 : 1e-2;
    if (fp8_max(cfg->kv_dtype) > 0 && tol < 1e-2) tol = 1e-2;
    /* An f32 query over a 16-bit cache is judged as the 16-bit format: the cache bits are exact, but
     * kernels may round the query or probabilities to the cache's format before their dot products. */
    if (dtype_is(cfg->kv_dtype, ATTNRT_F16) && tol < 2e-3) tol = 2e-3;
    if (dtype_is(cfg->kv_dtype, ATTNRT_BF16) && tol < 1e-2) tol = 1e-2;
    return tol;
}

/* How far one rounding to `dtype` may move x: |stored - x| <= rel * |x| + abs (abs: half the
 * smallest subnormal, for values that round into the subnormal range). fp8 abs is before the scale. */
static void rounding_bound(attnrt_dtype_t dtype, double *rel, double *abs)
{
    if (dtype_is(dtype, ATTNRT_F32)) *rel = 0x1p-24, *abs = 0x1p-150;
    else if (dtype_is(dtype, ATTNRT_F16)) *rel = 0x1p-11, *abs = 0x1p-25;
    else if (dtype_is(dtype, ATTNRT_BF16)) *rel = 0x1p-8, *abs = 0x1p-134;
    else if (dtype_is(dtype, ATTNRT_FP8_E4M3)) *rel = 0x1p-4, *abs = 0x1p-10;
    else *rel = 0x1p-3, *abs = 0x1p-17; /* e5m2 */
}

/* Elements of the new tokens' rows in `cache` (logical order, dequantised) that are not `sent` rounded
 * once to the cache format. */
static long count_bad_rows(const engine_config_t *cfg, const double *cache, const void *sent, int first_pos,
                           int first_token, int tokens, double scale)
{
    const size_t row = (size_t)cfg->kv_heads * cfg->head_dim;
    const int same = dtype_is(cfg->dtype, cfg->kv_dtype);
    double rel, abs;
    rounding_bound(cfg->kv_dtype, &rel, &abs);
    long bad = 0;
    for (int i = 0; i < tokens; i++)
        for (size_t e = 0; e < row; e++) {
            double x = decode_any(sent, (size_t)(first_token + i) * row + e, cfg->dtype);
            double y = cache[(size_t)(first_pos + i) * row + e];
            bad += same ? !(x == y) : !(fabs(y - x) <= rel * fabs(x) + abs * scale);
        }
    return bad;
}

/* ---- the reference ---------------------------------------------------------------------------- */

/* Copies the first `blocks` logical blocks of one request from a device cache into host memory in
 * logical order, so that position t of the request is row t of `staging`. */
static int gather_blocks(attnrt_context_t *ctx, attnrt_stream_t *stream, const void *cache_dev,
                         const int32_t *block_row, int blocks, size_t block_bytes, unsigned char *staging)
{
    for (int j = 0; j < blocks; j++) {
        const unsigned char *src = (const unsigned char *)cache_dev + (size_t)block_row[j] * block_bytes;
        TRY_API(attnrt_mem_copy_to_host(ctx, staging + (size_t)j * block_bytes, src, block_bytes, stream));
    }
    return 1;
fail:
    return 0;
}

int check_step(attnrt_context_t *ctx, attnrt_stream_t *stream, const engine_config_t *cfg,
               int max_blocks_per_seq, const check_layer_t *in, double *max_rel, long *kv_bad)
{
    const batch_t *b = in->batch;
    const int Hq = cfg->q_heads, Hkv = cfg->kv_heads, D = cfg->head_dim, bs = cfg->block_size;
    const int group = Hq / Hkv;
    const size_t block_bytes = (size_t)bs * Hkv * D * attnrt_dtype_size(cfg->kv_dtype); /* of one cache */
    const size_t max_keys = (size_t)max_blocks_per_seq * bs;
    const double scale = 1.0 / sqrt((double)D); /* what scale = 0 in attnrt_attention_args_t means */
    int ok = 0;

    size_t out_bytes = (size_t)b->num_tokens * Hq * D * attnrt_dtype_size(cfg->dtype);
    unsigned char *out = malloc(out_bytes);
    unsigned char *k_raw = malloc((size_t)max_blocks_per_seq * block_bytes);
    unsigned char *v_raw = malloc((size_t)max_blocks_per_seq * block_bytes);
    double *k = malloc(max_keys * Hkv * D * sizeof *k), *v = malloc(max_keys * Hkv * D * sizeof *v);
    double *p = malloc(max_keys * sizeof *p), *o = malloc((size_t)D * sizeof *o), *q = malloc((size_t)D * sizeof *q);
    if (!out || !k_raw || !v_raw || !k || !v || !p || !o || !q) {
        fprintf(stderr, "mini_engine: out of host memory in the check\n");
        goto fail;
    }
    TRY_API(attnrt_mem_copy_to_host(ctx, out, in->out_dev, out_bytes, stream));

    *max_rel = 0.0;
    *kv_bad = 0;
    for (int s = 0; s < b->num_seqs; s++) {
        const int seq_len = b->seq_lens[s];
        const int q0 = b->query_start_loc[s], L = b->query_start_loc[s + 1] - q0;
        const int32_t *row = b->block_table + (size_t)s * max_blocks_per_seq;
        const int blocks = (seq_len + bs - 1) / bs;
        if (!gather_blocks(ctx, stream, in->k_cache_dev, row, blocks, block_bytes, k_raw) ||
            !gather_blocks(ctx, stream, in->v_cache_dev, row, blocks, block_bytes, v_raw))
            goto fail;
        TRY_API(attnrt_stream_synchronize(ctx, stream)); /* the host buffers are borrowed until now */
        /* Dequantise as docs/semantics.md says: read value = stored * scale (scale 1 for float caches). */
        const double ks = fp8_max(cfg->kv_dtype) > 0 ? in->k_scale : 1.0;
        const double vs = fp8_max(cfg->kv_dtype) > 0 ? in->v_scale : 1.0;
        for (size_t e = 0; e < (size_t)seq_len * Hkv * D; e++) {
            k[e] = decode_any(k_raw, e, cfg->kv_dtype) * ks;
            v[e] = decode_any(v_raw, e, cfg->kv_dtype) * vs;
        }
        *kv_bad += count_bad_rows(cfg, k, in->k_host, seq_len - L, q0, L, ks) +
                   count_bad_rows(cfg, v, in->v_host, seq_len - L, q0, L, vs);

        double err2 = 0.0, ref2 = 0.0;
        for (int i = 0; i < L; i++) {
            const int pos = seq_len - L + i; /* bottom-right causal: the query sees keys 0..pos */
            const size_t t = (size_t)(q0 + i);
            for (int h = 0; h < Hq; h++) {
                const int kvh = h / group;
                const size_t qi = (t * Hq + h) * D;
                double m = -INFINITY, sum = 0.0;
                for (int d = 0; d < D; d++) q[d] = decode_any(in->q_host, qi + d, cfg->dtype);
                for (int j = 0; j <= pos; j++) {
                    double dot = 0.0;
                    for (int d = 0; d < D; d++) dot += q[d] * k[((size_t)j * Hkv + kvh) * D + d];
                    p[j] = scale * dot;
                    if (p[j] > m) m = p[j];
                }
                for (int j = 0; j <= pos; j++) {
                    p[j] = exp(p[j] - m); /* minus the max: the same softmax, without overflow */
                    sum += p[j];
                }
                for (int d = 0; d < D; d++) o[d] = 0.0;
                for (int j = 0; j <= pos; j++)
                    for (int d = 0; d < D; d++) o[d] += p[j] / sum * v[((size_t)j * Hkv + kvh) * D + d];
                for (int d = 0; d < D; d++) {
                    double got = decode_any(out, qi + d, cfg->dtype);
                    err2 += (got - o[d]) * (got - o[d]);
                    ref2 += o[d] * o[d];
                }
            }
        }
        double rel = sqrt(err2 / ref2);
        if (isnan(rel)) rel = INFINITY; /* a NaN output must fail the check, not slip past a comparison */
        if (rel > *max_rel) *max_rel = rel;
    }
    ok = 1;
fail:
    free(out);
    free(k_raw);
    free(v_raw);
    free(k);
    free(v);
    free(p);
    free(o);
    free(q);
    return ok;
}

/* ---- the GDN layer ---------------------------------------------------------------------------- */

/* x / sqrt(sum x^2 + 1e-6), in place (docs/semantics.md "Gated delta rule"). */
static void l2norm(double *x, int n)
{
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double inv = 1.0 / sqrt(ss + 1e-6);
    for (int i = 0; i < n; i++) x[i] *= inv;
}

int check_gdn(attnrt_context_t *ctx, attnrt_stream_t *stream, const engine_config_t *cfg, const check_gdn_t *in,
              double *max_rel)
{
    const batch_t *b = in->batch;
    const int H = in->H, HV = in->HV, Dk = in->Dk, Dv = in->Dv, T = b->num_tokens;
    const size_t slot_elems = (size_t)HV * Dk * Dv, out_elems = (size_t)T * HV * Dv;
    const size_t out_bytes = out_elems * attnrt_dtype_size(cfg->dtype);
    void *out = malloc(out_bytes);
    double *S = malloc(slot_elems * sizeof *S), *q = malloc((size_t)Dk * sizeof *q);
    double *k = malloc((size_t)Dk * sizeof *k), *vn = malloc((size_t)Dv * sizeof *vn);
    int ok = 0;
    *max_rel = 0.0;
    if (!out || !S || !q || !k || !vn) {
        fprintf(stderr, "mini_engine: out of host memory in the GDN check\n");
        goto fail;
    }
    TRY_API(attnrt_mem_copy_to_host(ctx, out, in->out_dev, out_bytes, stream));
    TRY_API(attnrt_stream_synchronize(ctx, stream));

    const double scale = 1.0 / sqrt((double)Dk);
    for (int r = 0; r < b->num_seqs; r++) {
        /* The state the request starts from: its slot as it was before the run, or zeros. */
        for (size_t i = 0; i < slot_elems; i++)
            S[i] = in->has_initial_state[r] ? (double)in->state_before[(size_t)r * slot_elems + i] : 0.0;
        double err2 = 0.0, ref2 = 0.0;
        for (int t = b->query_start_loc[r]; t < b->query_start_loc[r + 1]; t++)
            for (int hv = 0; hv < HV; hv++) {
                const int h = hv / (HV / H); /* the key head of this value head */
                for (int i = 0; i < Dk; i++) {
                    q[i] = decode_any(in->q_host, ((size_t)t * H + h) * Dk + i, cfg->dtype);
                    k[i] = decode_any(in->k_host, ((size_t)t * H + h) * Dk + i, cfg->dtype);
                }
                l2norm(q, Dk);
                l2norm(k, Dk);
                for (int i = 0; i < Dk; i++) q[i] *= scale;
                double *Sh = S + (size_t)hv * Dk * Dv; /* [Dk, Dv] */
                const double decay = exp((double)in->g_host[(size_t)t * HV + hv]);
                const double beta = (double)in->beta_host[(size_t)t * HV + hv];
                /* S = e^g S; v' = beta (v - S^T k); S = S + k v'^T; o = S^T q */
                for (size_t i = 0; i < (size_t)Dk * Dv; i++) Sh[i] *= decay;
                for (int j = 0; j < Dv; j++) {
                    double sk = 0.0;
                    for (int i = 0; i < Dk; i++) sk += Sh[(size_t)i * Dv + j] * k[i];
                    vn[j] = beta * (decode_any(in->v_host, ((size_t)t * HV + hv) * Dv + j, cfg->dtype) - sk);
                }
                for (int i = 0; i < Dk; i++)
                    for (int j = 0; j < Dv; j++) Sh[(size_t)i * Dv + j] += k[i] * vn[j];
                for (int j = 0; j < Dv; j++) {
                    double o = 0.0;
                    for (int i = 0; i < Dk; i++) o += Sh[(size_t)i * Dv + j] * q[i];
                    double got = decode_any(out, ((size_t)t * HV + hv) * Dv + j, cfg->dtype);
                    err2 += (got - o) * (got - o);
                    ref2 += o * o;
                }
            }
        double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
        if (isnan(rel) || rel > *max_rel) *max_rel = rel; /* a NaN sticks */
    }
    ok = 1;
fail:
    free(out);
    free(S);
    free(q);
    free(k);
    free(vn);
    return ok;
}
