/* cpu_simd_kernels.h — the attention kernels of cpu_simd.h, written once over a small vector vocabulary
 * and instantiated by each cpu_simd_<isa>.c (compiled with that ISA's flags). Not a public header:
 * include it only from those files, after defining:
 *
 *   VF, VL                  the float vector type and its lane count
 *   vf_zero() vf_set1(x) vf_loadu(p) vf_storeu(p, v) vf_add vf_sub vf_mul vf_max
 *   vf_fma(a, b, c)         a * b + c
 *   vf_hsum(v) vf_hmax(v)   horizontal sum / max
 *   vf_exp(v)               e^v for v <= 88 (the kernels pass v <= 0), 0 below -87.3 and for -inf;
 *                           relative error <= 7.5e-8 (Cody-Waite + Cephes' polynomial, Horner form)
 *   vf_load_f16/bf16/e4m3/e5m2(p)  VL stored elements -> VL floats (fp8 without its scale)
 *   SIMD_TABLE              the name of the table to define (cpu_simd_avx512, ...)
 *   SIMD_ISA, SIMD_NAME     its cpu_isa_t and name
 *   WIDE_KEYB               keys per wide score micro-kernel (WIDE_ROWV row vectors x WIDE_KEYB accumulators)
 *   WIDE_ROWV               (optional, default 2) row vectors per wide score micro-kernel
 *   WIDE_PCV                value vectors per wide PV micro-kernel (WIDE_PVR rows x WIDE_PCV accumulators)
 *   WIDE_PVR                (optional, default 4; even) rows per wide PV micro-kernel
 *   NARROW_DB               value vectors per narrow PV step (4 rows x NARROW_DB accumulators)
 *   NARROW_KB               keys per narrow score step (4 rows x NARROW_KB accumulators)
 *   VF_HAS_HSUM4            (optional) vf_hsum4(a, b, c, d, out[4]) is defined: four sums at once
 *   VF_HAS_SCORES16         (optional) vf_scores16(acc[4][4], ks, s, ld): 4 keys x 4 rows of sums, scaled, stored
 *   SIMD_BF16_DOT           (optional, AVX-512 + AVX512_BF16) narrow scores of bf16 keys by vdpbf16ps
 *
 * Why these shapes: a micro-kernel keeps its accumulators in registers for a whole loop and loads
 * each operand once per several FMAs (scores: WIDE_ROWV query vectors + WIDE_KEYB broadcast key elements
 * per WIDE_ROWV * WIDE_KEYB FMAs; P.V: WIDE_PCV value vectors + WIDE_PVR broadcast probabilities per
 * WIDE_PVR * WIDE_PCV FMAs), so it runs at the FMA ports rather than at the load ports.
 */
#ifndef SIMD_TABLE
#error "cpu_simd_kernels.h is instantiated by cpu_simd_<isa>.c only"
#endif

#include <float.h>
#include <math.h>
#include <string.h>

#define KI static inline __attribute__((always_inline))
#define NRB 4 /* narrow rows per block; the glue pads narrow rows to a multiple of it */

#ifndef VF_HAS_HSUM4
/* out[i] = horizontal sum of the i-th vector. */
KI void vf_hsum4(VF a, VF b, VF c, VF d, float out[4])
{
    out[0] = vf_hsum(a);
    out[1] = vf_hsum(b);
    out[2] = vf_hsum(c);
    out[3] = vf_hsum(d);
}
#endif
#ifndef WIDE_ROWV
#define WIDE_ROWV 2
#endif
#ifndef WIDE_PVR
#define WIDE_PVR 4
#endif

/* rows_pad (a multiple of CPU_WIDE_ROW_ALIGN) ends in a block of fewer row vectors / an even number of rows */
#if CPU_WIDE_ROW_ALIGN % VL != 0 || CPU_WIDE_ROW_ALIGN % 2 != 0 || WIDE_PVR % 2 != 0 || WIDE_ROWV > 3 || \
    CPU_ATTN_CHUNK % WIDE_KEYB != 0 || CPU_DIM_ALIGN % VL != 0
#error "micro-kernel shapes do not tile the scratch layout"
#endif

/* ---- loads of one cache row in any stored format, dequantised in registers ------------------ */

KI VF load_kv(const void *row, int64_t i, const dc_kind_t kind)
{
    switch (kind) {
    case DC_F16: return vf_load_f16((const uint16_t *)row + i);
    case DC_BF16: return vf_load_bf16((const uint16_t *)row + i);
    case DC_E4M3: return vf_load_e4m3((const uint8_t *)row + i);
    case DC_E5M2: return vf_load_e5m2((const uint8_t *)row + i);
    default: return vf_loadu((const float *)row + i);
    }
}

KI float load_kv1(const void *row, int64_t i, const dc_kind_t kind)
{
    switch (kind) {
    case DC_F16: return dc_f16_to_f32(((const uint16_t *)row)[i]);
    case DC_BF16: return dc_bf16_to_f32(((const uint16_t *)row)[i]);
    case DC_E4M3: return dc_e4m3_to_f32(((const uint8_t *)row)[i]);
    case DC_E5M2: return dc_e5m2_to_f32(((const uint8_t *)row)[i]);
    default: return ((const float *)row)[i];
    }
}

/* Asks for a cache row of `bytes` bytes in L1 (prefetcht0): the rows of the chunk processed next. Into
 * L1, not L2 (prefetcht1/t2): the rows are used within a few microseconds, and decode runs faster so
 * (prefill is unchanged). */
KI void prefetch_row(const void *row, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch((const char *)row + off, 0, 3);
}

/* Bytes of one prefetch piece: a row cut into pf_units pieces, whole cache lines. */
KI size_t pf_piece(const cpu_kv_chunk_t *c, size_t row_bytes)
{
    const int units = c->pf_units > 0 ? c->pf_units : 1;
    return ((row_bytes + (size_t)units - 1) / (size_t)units + 63) / 64 * 64;
}

/* Calls fn_k(args..., kind) with `kind` a constant, so each format gets its own loop. */
#define BY_KIND(kind, fn, ...)                                                                     \
    switch (kind) {                                                                                \
    case DC_F16: fn(__VA_ARGS__, DC_F16); break;                                                   \
    case DC_BF16: fn(__VA_ARGS__, DC_BF16); break;                                                 \
    case DC_E4M3: fn(__VA_ARGS__, DC_E4M3); break;                                                 \
    case DC_E5M2: fn(__VA_ARGS__, DC_E5M2); break;                                                 \
    default: fn(__VA_ARGS__, DC_F32); break;                                                       \
    }

/* ---- online softmax of one row over n scores (narrow layout) -------------------------------- */

/* Scores -> probabilities in place; returns alpha = e^{m_old - m_new} and updates m, l. A row whose
 * scores are all -inf so far keeps m = -inf, l = 0 (its probabilities are 0, never NaN). */
KI float softmax_row(float *s, int n, float *m, float *l)
{
    VF vm = vf_set1(-INFINITY);
    int j = 0;
    for (; j + VL <= n; j += VL) vm = vf_max(vm, vf_loadu(s + j));
    float cm = vf_hmax(vm);
    for (; j < n; j++) cm = s[j] > cm ? s[j] : cm;
    const float m_old = *m, m_new = cm > m_old ? cm : m_old;
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;
    const VF vmu = vf_set1(m_use);
    VF vs = vf_zero();
    for (j = 0; j + VL <= n; j += VL) {
        const VF p = vf_exp(vf_sub(vf_loadu(s + j), vmu));
        vf_storeu(s + j, p);
        vs = vf_add(vs, p);
    }
    float sum = vf_hsum(vs);
    for (; j < n; j++) {
        s[j] = expf(s[j] - m_use);
        sum += s[j];
    }
    const float alpha = expf(m_old - m_use); /* 0 while m_old is -inf */
    *l = *l * alpha + sum;
    *m = m_new;
    return alpha;
}

/* ---- narrow: few rows, K/V straight from the cache ------------------------------------------ */

#ifdef SIMD_BF16_DOT
/* bf16 keys: acc += q . k by vdpbf16ps against the bf16 query (t->qb, unscaled), 32 products an
 * instruction and no widening of the keys; the last dq % 32 elements in f32. bf16 x bf16 products are
 * exact in f32 and the softmax scale multiplies the f32 sums, so the scores are as exact as the f32
 * kernels' (folding the scale into the bf16 query would round it: 2^-9 of every product, times the
 * scale, in the logits). */
KI void scores_block_bf16(const cpu_tile_t *t, const cpu_kv_chunk_t *c, size_t hoff, int r0, int j0, const int nk)
{
    const int dq = t->dqk, ld = t->dqk_pad, dvec = dq / 32 * 32;
    const uint16_t *qb = t->qb + (size_t)r0 * (size_t)ld;
    const uint16_t *k[NARROW_KB];
    VF acc[NARROW_KB][NRB];
#pragma GCC unroll 4
    for (int b = 0; b < nk; b++) {
        k[b] = (const uint16_t *)(const void *)((const char *)c->k[j0 + b] + hoff);
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) acc[b][r] = vf_zero();
    }
    for (int d = 0; d < dvec; d += 32) {
        __m512bh qv[NRB];
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) qv[r] = (__m512bh)_mm512_loadu_si512((const void *)(qb + r * ld + d));
#pragma GCC unroll 4
        for (int b = 0; b < nk; b++) {
            const __m512bh kv = (__m512bh)_mm512_loadu_si512((const void *)(k[b] + d));
#pragma GCC unroll 4
            for (int r = 0; r < NRB; r++) acc[b][r] = _mm512_dpbf16_ps(acc[b][r], qv[r], kv);
        }
    }
    float *s = t->s + (size_t)r0 * CPU_ATTN_CHUNK + j0;
#ifdef VF_HAS_SCORES16
    if (nk == 4 && dvec == dq) {
        const float ks[4] = {c->ks[j0] * t->qb_scale, c->ks[j0 + 1] * t->qb_scale, c->ks[j0 + 2] * t->qb_scale,
                             c->ks[j0 + 3] * t->qb_scale};
        vf_scores16(acc, ks, s, CPU_ATTN_CHUNK);
        return;
    }
#endif
#pragma GCC unroll 4
    for (int b = 0; b < nk; b++) {
        float sum[NRB];
        vf_hsum4(acc[b][0], acc[b][1], acc[b][2], acc[b][3], sum);
        for (int d = dvec; d < dq; d++) {
            const float kx = dc_bf16_to_f32(k[b][d]);
            for (int r = 0; r < NRB; r++) sum[r] += dc_bf16_to_f32(qb[r * ld + d]) * kx;
        }
        const float ks = c->ks[j0 + b] * t->qb_scale;
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) s[r * CPU_ATTN_CHUNK + b] = sum[r] * ks;
    }
}
#endif

/* Scores of keys j0 .. j0+nk (nk <= NARROW_KB) for rows r0 .. r0+NRB; key j's row is c->k[j] + hoff
 * bytes. Each query vector is loaded once for nk keys: nk x NRB independent accumulators, one
 * horizontal sum per 4 rows. */
KI void narrow_scores_block(const cpu_tile_t *t, const cpu_kv_chunk_t *c, size_t hoff, int r0, int j0, const int nk,
                            const dc_kind_t kind)
{
#ifdef SIMD_BF16_DOT
    if (kind == DC_BF16 && t->qb) {
        scores_block_bf16(t, c, hoff, r0, j0, nk);
        return;
    }
#endif
    const int dq = t->dqk, ld = t->dqk_pad, dvec = dq / VL * VL;
    const float *q = t->q + (size_t)r0 * (size_t)ld;
    const void *k[NARROW_KB];
    VF acc[NARROW_KB][NRB];
#pragma GCC unroll 4
    for (int b = 0; b < nk; b++) {
        k[b] = (const char *)c->k[j0 + b] + hoff;
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) acc[b][r] = vf_zero();
    }
    for (int d = 0; d < dvec; d += VL) {
        VF qv[NRB];
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) qv[r] = vf_loadu(q + r * ld + d);
#pragma GCC unroll 4
        for (int b = 0; b < nk; b++) {
            const VF kv = load_kv(k[b], d, kind);
#pragma GCC unroll 4
            for (int r = 0; r < NRB; r++) acc[b][r] = vf_fma(qv[r], kv, acc[b][r]);
        }
    }
    float *s = t->s + (size_t)r0 * CPU_ATTN_CHUNK + j0;
#ifdef VF_HAS_SCORES16
    if (nk == 4 && dvec == dq) { /* the common case: four keys, no tail */
        vf_scores16(acc, c->ks + j0, s, CPU_ATTN_CHUNK);
        return;
    }
#endif
#pragma GCC unroll 4
    for (int b = 0; b < nk; b++) {
        float sum[NRB];
        vf_hsum4(acc[b][0], acc[b][1], acc[b][2], acc[b][3], sum);
        for (int d = dvec; d < dq; d++) { /* the last dq % VL elements */
            const float kx = load_kv1(k[b], d, kind);
            for (int r = 0; r < NRB; r++) sum[r] += q[r * ld + d] * kx;
        }
        const float ks = c->ks[j0 + b];
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) s[r * CPU_ATTN_CHUNK + b] = sum[r] * ks;
    }
}

/* Scores of keys [j, j + nk) for every row of each of `units` tiles (unit u's rows at + u * hoff). */
KI void scores_keys(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t hoff, int j, const int nk,
                    size_t piece, const dc_kind_t kind)
{
    for (int u = 0; u < units; u++) {
        if ((size_t)u * piece < c->pf_score_bytes)
            for (int b = j; b < j + nk && b < c->pf_n; b++)
                prefetch_row((const char *)c->pf_score[b] + (size_t)u * piece, piece);
        for (int r0 = 0; r0 < tiles[u].rows; r0 += NRB)
            narrow_scores_block(&tiles[u], c, (size_t)u * hoff, r0, j, nk, kind);
    }
    for (int u = units; (size_t)u * piece < c->pf_score_bytes; u++) /* more pieces than units */
        for (int b = j; b < j + nk && b < c->pf_n; b++) prefetch_row((const char *)c->pf_score[b] + (size_t)u * piece, piece);
}

KI void scores_k(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t hoff, const dc_kind_t kind)
{
    const size_t piece = pf_piece(c, c->pf_score_bytes);
    int j = 0;
    for (; j + NARROW_KB <= c->n; j += NARROW_KB) scores_keys(tiles, units, c, hoff, j, NARROW_KB, piece, kind);
    for (; j < c->n; j++) scores_keys(tiles, units, c, hoff, j, 1, piece, kind);
}

/* o[r0 .. r0+NRB)[d .. d + nb*VL) = a_r o + sum_{j in [j0, j1)} p[r][j] v_j (+ hoff bytes), nb <= NARROW_DB
 * vectors; a_r is alpha_r on a chunk's first keys, else 1. With pf, prefetches [pf_value[j] + pf_off, + piece)
 * for those keys. */
KI void narrow_pv_block(const cpu_tile_t *t, const cpu_kv_chunk_t *c, size_t hoff, int r0, int d, const int nb,
                        int j0, int j1, int first, int pf, size_t pf_off, size_t piece, const dc_kind_t kind)
{
    VF acc[NRB][NARROW_DB];
    float *o = t->o + (size_t)r0 * (size_t)t->dv_pad + d;
    const float *p = t->s + (size_t)r0 * CPU_ATTN_CHUNK;
#pragma GCC unroll 4
    for (int r = 0; r < NRB; r++) {
        const VF a = vf_set1(first ? t->alpha[r0 + r] : 1.0f);
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) acc[r][b] = vf_mul(a, vf_loadu(o + r * t->dv_pad + b * VL));
    }
    for (int j = j0; j < j1; j++) {
        if (pf && j < c->pf_n) prefetch_row((const char *)c->pf_value[j] + pf_off, piece);
        const void *vr = (const char *)c->v[j] + hoff;
        VF v[NARROW_DB];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) v[b] = load_kv(vr, d + b * VL, kind);
#pragma GCC unroll 4
        for (int r = 0; r < NRB; r++) {
            const VF pr = vf_set1(p[r * CPU_ATTN_CHUNK + j]);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) acc[r][b] = vf_fma(pr, v[b], acc[r][b]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < NRB; r++)
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) vf_storeu(o + r * t->dv_pad + b * VL, acc[r][b]);
}

/* Every row of tile t (unit u) over keys [j0, j1) of the chunk (value rows + hoff bytes); prefetches piece
 * u of the next rows of those keys (the last unit also any pieces beyond the units). bf16 values are
 * widened and FMA'd in f32 under every ISA: vdpbf16ps on key pairs would round the probabilities to
 * bf16 (up to 2^-9 max |v| in the output) and measured no faster on this memory-bound path. */
KI void pv_range(const cpu_tile_t *t, const cpu_kv_chunk_t *c, size_t hoff, int j0, int j1, int first, int u,
                 int units, const dc_kind_t kind)
{
    const int dv = t->dv;
    const size_t piece = pf_piece(c, c->pf_value_bytes);
    const int pf = (size_t)u * piece < c->pf_value_bytes;
    if (u == units - 1) /* pieces no unit takes */
        for (size_t off = (size_t)units * piece; off < c->pf_value_bytes; off += piece)
            for (int j = j0; j < j1 && j < c->pf_n; j++) prefetch_row((const char *)c->pf_value[j] + off, piece);
    if (pf && dv < VL) /* no vector block runs: prefetch here */
        for (int j = j0; j < j1 && j < c->pf_n; j++) prefetch_row((const char *)c->pf_value[j] + (size_t)u * piece, piece);
    for (int r0 = 0; r0 < t->rows; r0 += NRB) {
        int d = 0, pf0 = pf && r0 == 0; /* prefetch once per key */
        for (; d + NARROW_DB * VL <= dv; d += NARROW_DB * VL, pf0 = 0)
            narrow_pv_block(t, c, hoff, r0, d, NARROW_DB, j0, j1, first, pf0, (size_t)u * piece, piece, kind);
        for (; d + VL <= dv; d += VL, pf0 = 0)
            narrow_pv_block(t, c, hoff, r0, d, 1, j0, j1, first, pf0, (size_t)u * piece, piece, kind);
        for (; d < dv; d++) /* the last dv % VL columns */
            for (int r = r0; r < r0 + NRB; r++) {
                float *o = t->o + (size_t)r * (size_t)t->dv_pad + d;
                float x = first ? t->alpha[r] * *o : *o;
                for (int j = j0; j < j1; j++)
                    x += t->s[(size_t)r * CPU_ATTN_CHUNK + j] * load_kv1((const char *)c->v[j] + hoff, d, kind);
                *o = x;
            }
    }
}

/* The online-softmax step of every row of a tile; pad rows get weight 0. */
static void narrow_softmax(const cpu_tile_t *t, const cpu_kv_chunk_t *c)
{
    const int padded = (t->rows + NRB - 1) / NRB * NRB;
    for (int r = 0; r < t->rows; r++) {
        float *s = t->s + (size_t)r * CPU_ATTN_CHUNK;
        t->alpha[r] = softmax_row(s, c->n, &t->m[r], &t->l[r]);
        if (c->scaled)
            for (int j = 0; j < c->n; j++) s[j] *= c->vs[j];
    }
    for (int r = t->rows; r < padded; r++) {
        memset(t->s + (size_t)r * CPU_ATTN_CHUNK, 0, sizeof(float) * CPU_ATTN_CHUNK);
        t->alpha[r] = 0.0f;
    }
}

KI void narrow_scores_k(const cpu_tile_t *t, const cpu_kv_chunk_t *c, const dc_kind_t kind) { scores_k(t, 1, c, 0, kind); }
KI void narrow_pv_k(const cpu_tile_t *t, const cpu_kv_chunk_t *c, const dc_kind_t kind) { pv_range(t, c, 0, 0, c->n, 1, 0, 1, kind); }

static void narrow_scores(const cpu_tile_t *t, const cpu_kv_chunk_t *c) { BY_KIND(c->kind, narrow_scores_k, t, c) }

static void narrow_update(const cpu_tile_t *t, const cpu_kv_chunk_t *c)
{
    narrow_softmax(t, c);
    BY_KIND(c->kind, narrow_pv_k, t, c)
}

/* ---- decode: every KV head of a chunk in memory order --------------------------------------- */

/* Key j's row of KV head u is c->k[j] + u * hoff: with NHD caches a key's heads are adjacent, so taking
 * NARROW_KB keys at a time over all heads reads each block front to back in windows of NARROW_KB rows
 * (a key at a time would be strictly sequential, but then every score needs its own horizontal sum:
 * measured slower here, the kernel being the bound, not the access order). */
KI void decode_scores_k(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t hoff, const dc_kind_t kind)
{
    scores_k(tiles, units, c, hoff, kind);
}

/* Values likewise, CPU_DECODE_PV_KEYS keys (all heads) at a time: each unit's accumulators stay in
 * registers over those keys. */
KI void decode_pv_k(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t hoff, const dc_kind_t kind)
{
    for (int j0 = 0; j0 < c->n; j0 += CPU_DECODE_PV_KEYS) {
        const int j1 = j0 + CPU_DECODE_PV_KEYS < c->n ? j0 + CPU_DECODE_PV_KEYS : c->n;
        for (int u = 0; u < units; u++) pv_range(&tiles[u], c, (size_t)u * hoff, j0, j1, j0 == 0, u, units, kind);
    }
}

static void decode_scores(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t k_head_bytes)
{
    BY_KIND(c->kind, decode_scores_k, tiles, units, c, k_head_bytes)
}

static void decode_update(const cpu_tile_t *tiles, int units, const cpu_kv_chunk_t *c, size_t v_head_bytes)
{
    for (int u = 0; u < units; u++) narrow_softmax(&tiles[u], c);
    BY_KIND(c->kind, decode_pv_k, tiles, units, c, v_head_bytes)
}

/* ---- wide: rows in lanes, the chunk dequantised once into f32 -------------------------------- */

KI void pack_row(float *dst, const void *src, int n, int n_pad, float scale, const dc_kind_t kind)
{
    int i = 0;
    if (scale == 1.0f)
        for (; i + VL <= n; i += VL) vf_storeu(dst + i, load_kv(src, i, kind));
    else
        for (; i + VL <= n; i += VL) vf_storeu(dst + i, vf_mul(vf_set1(scale), load_kv(src, i, kind)));
    for (; i < n; i++) dst[i] = load_kv1(src, i, kind) * scale;
    for (; i < n_pad; i++) dst[i] = 0.0f;
}

KI void wide_pack_k(const cpu_tile_t *t, const cpu_kv_chunk_t *c, const dc_kind_t kind)
{
    for (int j = 0; j < c->n; j++) {
        pack_row(t->kc + (size_t)j * (size_t)t->dqk_pad, c->k[j], t->dqk, t->dqk_pad, c->ks[j], kind);
        pack_row(t->vc + (size_t)j * (size_t)t->dv_pad, c->v[j], t->dv, t->dv_pad, c->vs[j], kind);
    }
    const int n_pad = (c->n + WIDE_KEYB - 1) / WIDE_KEYB * WIDE_KEYB; /* keys the score kernel reads */
    for (int j = c->n; j < n_pad; j++) memset(t->kc + (size_t)j * (size_t)t->dqk_pad, 0, sizeof(float) * (size_t)t->dqk_pad);
}

static void wide_pack(const cpu_tile_t *t, const cpu_kv_chunk_t *c) { BY_KIND(c->kind, wide_pack_k, t, c) }

/* s[j][r] = sum_d qt[d][r] kc[j][d] for rows r0 .. r0 + rv VL, keys j0 .. j0 + WIDE_KEYB: rv row vectors x
 * WIDE_KEYB keys of accumulators, each query vector loaded once for WIDE_KEYB broadcast keys. */
KI void wide_scores_block(const cpu_tile_t *t, int r0, int j0, const int rv)
{
    const int ld = t->ld, kld = t->dqk_pad, dq = t->dqk;
    VF acc[WIDE_KEYB][WIDE_ROWV];
#pragma GCC unroll 16
    for (int k = 0; k < WIDE_KEYB; k++)
#pragma GCC unroll 3
        for (int v = 0; v < rv; v++) acc[k][v] = vf_zero();
    const float *qt = t->q + r0;
    const float *kc = t->kc + (size_t)j0 * (size_t)kld;
    for (int d = 0; d < dq; d++) {
        VF qv[WIDE_ROWV];
#pragma GCC unroll 3
        for (int v = 0; v < rv; v++) qv[v] = vf_loadu(qt + (size_t)d * (size_t)ld + v * VL);
#pragma GCC unroll 16
        for (int k = 0; k < WIDE_KEYB; k++) {
            const VF kb = vf_set1(kc[(size_t)k * (size_t)kld + d]);
#pragma GCC unroll 3
            for (int v = 0; v < rv; v++) acc[k][v] = vf_fma(qv[v], kb, acc[k][v]);
        }
    }
    float *s = t->s + (size_t)j0 * (size_t)ld + r0;
#pragma GCC unroll 16
    for (int k = 0; k < WIDE_KEYB; k++)
#pragma GCC unroll 3
        for (int v = 0; v < rv; v++) vf_storeu(s + (size_t)k * (size_t)ld + v * VL, acc[k][v]);
}

/* Every row's scores: WIDE_ROWV row vectors at a time, the last ones two (four left: 2 + 2, not 3 + 1) or one at a
 * time. The next chunk's rows are prefetched one piece per micro-kernel call (paced: a burst would stall). */
static void wide_scores(const cpu_tile_t *t, const cpu_kv_chunk_t *c, int n)
{
    int pf = 0;
    const int n_pad = (n + WIDE_KEYB - 1) / WIDE_KEYB * WIDE_KEYB;
    for (int r0 = 0, rv = 0; r0 < t->rows_pad; r0 += rv * VL) {
        const int rem = (t->rows_pad - r0) / VL; /* row vectors left */
        rv = rem >= WIDE_ROWV && rem != 4 ? WIDE_ROWV : rem >= 2 ? 2 : 1;
        for (int j0 = 0; j0 < n_pad; j0 += WIDE_KEYB) {
            if (pf < c->pf_n) {
                prefetch_row(c->pf_score[pf], c->pf_score_bytes);
                prefetch_row(c->pf_value[pf], c->pf_value_bytes);
                pf++;
            }
            if (rv == WIDE_ROWV)
                wide_scores_block(t, r0, j0, WIDE_ROWV);
            else if (rv == 2)
                wide_scores_block(t, r0, j0, 2);
            else
                wide_scores_block(t, r0, j0, 1);
        }
    }
    for (; pf < c->pf_n; pf++) { /* few rows: the pieces left */
        prefetch_row(c->pf_score[pf], c->pf_score_bytes);
        prefetch_row(c->pf_value[pf], c->pf_value_bytes);
    }
}

/* o[r0 .. r0+nr)[c0 .. c0 + nb*VL) = alpha_r o + sum_j p[j][r] vc[j]. */
KI void wide_pv_block(const cpu_tile_t *t, int n, int r0, int c0, const int nr, const int nb)
{
    const int ld = t->ld, vld = t->dv_pad;
    VF acc[WIDE_PVR][WIDE_PCV];
    float *o = t->o + (size_t)r0 * (size_t)vld + c0;
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++) {
        const VF a = vf_set1(t->alpha[r0 + r]);
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) acc[r][b] = vf_mul(a, vf_loadu(o + r * vld + b * VL));
    }
    const float *p = t->s + r0;
    const float *vc = t->vc + c0;
    for (int j = 0; j < n; j++) {
        VF v[WIDE_PCV];
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) v[b] = vf_loadu(vc + (size_t)j * (size_t)vld + b * VL);
#pragma GCC unroll 8
        for (int r = 0; r < nr; r++) {
            const VF pr = vf_set1(p[(size_t)j * (size_t)ld + r]);
#pragma GCC unroll 4
            for (int b = 0; b < nb; b++) acc[r][b] = vf_fma(pr, v[b], acc[r][b]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < nr; r++)
#pragma GCC unroll 4
        for (int b = 0; b < nb; b++) vf_storeu(o + r * vld + b * VL, acc[r][b]);
}

/* Rows r0 .. r0 + nr of the P.V update over every value column: WIDE_PCV vectors at a time, then the rest. */
KI void wide_pv_rows(const cpu_tile_t *t, int n, int r0, const int nr)
{
    const int vecs = (t->dv + VL - 1) / VL; /* dv_pad is a stride; pack zeroed the columns up to it */
    int b = 0;
    for (; b + WIDE_PCV <= vecs; b += WIDE_PCV) wide_pv_block(t, n, r0, b * VL, nr, WIDE_PCV);
    switch (vecs - b) { /* CPU_DIM_ALIGN keeps this below WIDE_PCV */
    case 3: wide_pv_block(t, n, r0, b * VL, nr, 3 < WIDE_PCV ? 3 : WIDE_PCV); break;
    case 2: wide_pv_block(t, n, r0, b * VL, nr, 2 < WIDE_PCV ? 2 : WIDE_PCV); break;
    case 1: wide_pv_block(t, n, r0, b * VL, nr, 1); break;
    default: break;
    }
}

static void wide_update(const cpu_tile_t *t, int n)
{
    const int ld = t->ld;
    const VF floor_m = vf_set1(-FLT_MAX); /* a row with only -inf so far subtracts a finite max */
    for (int r = 0; r < t->rows_pad; r += VL) {
        const VF m_old = vf_loadu(t->m + r);
        VF cm = m_old;
        for (int j = 0; j < n; j++) cm = vf_max(cm, vf_loadu(t->s + (size_t)j * (size_t)ld + r));
        const VF m_use = vf_max(cm, floor_m);
        VF sum = vf_zero();
        for (int j = 0; j < n; j++) {
            float *s = t->s + (size_t)j * (size_t)ld + r;
            const VF p = vf_exp(vf_sub(vf_loadu(s), m_use));
            vf_storeu(s, p);
            sum = vf_add(sum, p);
        }
        const VF alpha = vf_exp(vf_sub(m_old, m_use));
        vf_storeu(t->alpha + r, alpha);
        vf_storeu(t->l + r, vf_fma(vf_loadu(t->l + r), alpha, sum));
        vf_storeu(t->m + r, cm);
    }
    /* WIDE_PVR rows at a time; rows_pad is even, so the rest is an even count below WIDE_PVR (6: 2 or 4) */
    int r0 = 0;
    for (; r0 + WIDE_PVR <= t->rows_pad; r0 += WIDE_PVR) wide_pv_rows(t, n, r0, WIDE_PVR);
    for (; r0 + 4 <= t->rows_pad; r0 += 4) wide_pv_rows(t, n, r0, 4 < WIDE_PVR ? 4 : WIDE_PVR);
    for (; r0 < t->rows_pad; r0 += 2) wide_pv_rows(t, n, r0, 2);
}

const cpu_simd_t SIMD_TABLE = {
    .isa = SIMD_ISA,
    .name = SIMD_NAME,
#ifdef SIMD_BF16_DOT
    .bf16_dot = 1,
#endif
    .narrow_scores = narrow_scores,
    .narrow_update = narrow_update,
    .decode_scores = decode_scores,
    .decode_update = decode_update,
    .wide_pack = wide_pack,
    .wide_scores = wide_scores,
    .wide_update = wide_update,
};
