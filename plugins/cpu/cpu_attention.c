/* cpu_attention.c — paged attention run: the host side of the kernels in cpu_simd.h.
 *
 * An item (see cpu_attention_plan.h) holds query rows of one request and one KV head. Its keys are
 * walked in position order over the union of its rows' key ranges (cut to its split, if any), in
 * chunks of CPU_ATTN_CHUNK keys gathered through the block table as row pointers; the ISA's kernels
 * score a chunk, this file masks the boundary chunks (causal, window) and applies softcap / ALiBi,
 * and the kernels fold the chunk into every row's online softmax. Chunks beyond the rows' ranges are
 * never visited (the causal upper triangle is skipped); memory is O(rows x head_dim) per participant.
 *
 * The metadata tensors are read here, at run time (the cpu's device memory is host memory), and are
 * trusted only as far as bounds go: lengths are clamped to the tensors, and keys whose block id lies
 * outside the cache are skipped, so garbage metadata gives garbage numbers but never a stray access.
 */
#include <math.h>
#include <string.h>

#include "cpu_attention_plan.h"
#include "cpu_ops.h"
#include "dtype_convert.h"
#include "plugin_error.h"
#include "plugin_softmax.h"
#include "plugin_struct.h"
#include "plugin_tensor.h"

/* Everything the items read, decoded from the args once per run. Strides are in elements. */
typedef struct attn_job {
    const cpu_attn_plan_t    *plan;
    const cpu_simd_t         *simd;
    cpu_attn_scratch_layout_t lay;
    int64_t T, Hq, Hkv, group, dqk, dv;

    const char *q;   int64_t q_st[2];   dc_kind_t q_kind;   size_t q_es;
    char       *out; int64_t out_st[2]; dc_kind_t out_kind; size_t out_es;
    float      *lse; int64_t lse_st[2];

    const char *kc, *vc;
    int64_t     kc_st[3], vc_st[3];
    dc_kind_t   kv_kind;
    size_t      kv_es;
    int64_t     num_blocks, block_size;
    const float *k_scale, *v_scale;    /* fp8 only; NULL means 1 */
    int64_t     ks_st[2], vs_st[2];    /* [num_blocks, Hkv] strides, both 0 for a per-tensor scale */

    const int32_t *bt;  int64_t bt_st[2]; int64_t bt_cols;
    const int32_t *qsl; int64_t qsl_st;
    const int32_t *sl;  int64_t sl_st;

    const float *alibi; int64_t alibi_st;
    const float *sinks; int64_t sinks_st;
    float   scale, softcap;
    int     causal;
    int64_t window_left, window_right;

    float *ws_o, *ws_m, *ws_l;         /* split-KV partial states (the workspace) */
} attn_job_t;

static float scale_at(const float *scale, const int64_t st[2], int64_t block, int64_t head)
{
    return scale ? scale[block * st[0] + head * st[1]] : 1.0f;
}

/* A request's query rows [q_begin, q_begin + L) and key count S, clamped to what the tensors hold. */
static void seq_bounds(const attn_job_t *job, int64_t seq, int64_t *q_begin, int64_t *L, int64_t *S)
{
    *q_begin = plugin_clamp64(job->qsl[seq * job->qsl_st], 0, job->T);
    *L = plugin_clamp64(job->qsl[(seq + 1) * job->qsl_st], *q_begin, job->T) - *q_begin;
    *S = plugin_clamp64(job->sl[seq * job->sl_st], 0, job->bt_cols * job->block_size);
}

/* Gathers up to CPU_ATTN_CHUNK keys from positions *p .. hi of request `seq` as row pointers, skipping
 * blocks that do not exist; advances *p. */
static int build_chunk(const attn_job_t *job, int64_t seq, int64_t kv_head, int64_t *p, int64_t hi, cpu_kv_chunk_t *c)
{
    const int64_t bs = job->block_size;
    const size_t es = job->kv_es;
    int n = 0;
    while (*p <= hi && n < CPU_ATTN_CHUNK) {
        const int64_t logical = *p / bs, row0 = *p % bs;
        const int64_t last = (logical + 1) * bs - 1 < hi ? (logical + 1) * bs - 1 : hi; /* in this block */
        const int64_t block = job->bt[seq * job->bt_st[0] + logical * job->bt_st[1]];
        if (block < 0 || block >= job->num_blocks) { /* garbage table entry: those keys do not exist */
            *p = last + 1;
            continue;
        }
        int64_t take = last - *p + 1;
        if (take > CPU_ATTN_CHUNK - n) take = CPU_ATTN_CHUNK - n;
        const float ks = scale_at(job->k_scale, job->ks_st, block, kv_head);
        const float vs = scale_at(job->v_scale, job->vs_st, block, kv_head);
        const char *k = job->kc + (size_t)(block * job->kc_st[0] + row0 * job->kc_st[1] + kv_head * job->kc_st[2]) * es;
        const char *v = job->vc + (size_t)(block * job->vc_st[0] + row0 * job->vc_st[1] + kv_head * job->vc_st[2]) * es;
        const size_t kstep = (size_t)job->kc_st[1] * es, vstep = (size_t)job->vc_st[1] * es;
        for (int64_t j = 0; j < take; j++, n++) {
            c->k[n] = k + (size_t)j * kstep;
            c->v[n] = v + (size_t)j * vstep;
            c->pos[n] = *p + j;
            c->ks[n] = ks;
            c->vs[n] = vs;
        }
        *p += take;
    }
    c->n = n;
    return n;
}

/* Points the prefetch pieces of `cur` (the chunk of unit u of `units` being worked on) at what is read
 * next. Key-major decode reads K key by key, front to back, which the hardware prefetchers follow; so
 * its scores prefetch the values of the same keys (used by the PV step right after) and its PV step
 * the next chunk's keys. Otherwise: the next unit's rows of these keys (`next_unit`), or, after the last
 * unit, the first unit's rows of the next chunk. Software prefetches are what the memory system can
 * have in flight beyond what the reorder window reaches: the block table scatters the rows. */
static void set_prefetch(const attn_job_t *job, cpu_kv_chunk_t *cur, const cpu_kv_chunk_t *next_chunk,
                         const cpu_kv_chunk_t *next_unit, int64_t u, int64_t units, int key_major)
{
    const size_t es = job->kv_es;
    cur->pf_n = 0;
    cur->pf_units = 1;
    cur->pf_score_bytes = cur->pf_value_bytes = 0; /* the kernels' piece loops read these even when pf_n is 0 */
    if (key_major) {
        cur->pf_n = cur->n;
        cur->pf_units = (int)units; /* piece u of a whole row goes with KV head u */
        cur->pf_score_bytes = (size_t)units * (size_t)job->dv * es;
        cur->pf_value_bytes = (size_t)units * (size_t)job->dqk * es;
        for (int j = 0; j < cur->n; j++) {
            cur->pf_score[j] = cur->v[j];
            cur->pf_value[j] = next_chunk && j < next_chunk->n ? next_chunk->k[j] : cur->v[j];
        }
        return;
    }
    const cpu_kv_chunk_t *src = u + 1 < units ? next_unit : next_chunk;
    if (!src) return;
    cur->pf_n = src->n;
    cur->pf_score_bytes = (size_t)job->dqk * es;
    cur->pf_value_bytes = (size_t)job->dv * es;
    memcpy(cur->pf_score, src->k, (size_t)src->n * sizeof src->k[0]);
    memcpy(cur->pf_value, src->v, (size_t)src->n * sizeof src->v[0]);
}

/* Chunks ahead of the one being worked on whose blocks key-major decode touches (touch_ahead). */
#define DECODE_TOUCH_CHUNKS 2

/* Touches one line in each 4 KiB of the K and V rows of keys [pos, pos + CPU_ATTN_CHUNK) (all heads:
 * key-major decode), so that the address translation and the first lines of blocks the table scatters
 * are under way before the chunk's own prefetches (set_prefetch) ask for all of its rows: small blocks
 * scatter a chunk over many pages, whose translations would otherwise come one after another. */
static void touch_ahead(const attn_job_t *job, int64_t seq, int64_t pos, int64_t end)
{
    const int64_t bs = job->block_size, last = pos + CPU_ATTN_CHUNK - 1 < end ? pos + CPU_ATTN_CHUNK - 1 : end;
    const size_t es = job->kv_es, krow = (size_t)job->kc_st[1] * es, vrow = (size_t)job->vc_st[1] * es;
    for (int64_t logical = pos / bs; pos <= last && logical <= last / bs; logical++) {
        const int64_t block = job->bt[seq * job->bt_st[0] + logical * job->bt_st[1]];
        if (block < 0 || block >= job->num_blocks) continue;
        const int64_t r0 = logical * bs < pos ? pos - logical * bs : 0;
        const int64_t rows = ((logical + 1) * bs - 1 < last ? bs : last - logical * bs + 1) - r0;
        const char *k = job->kc + (size_t)(block * job->kc_st[0]) * es + (size_t)r0 * krow;
        const char *v = job->vc + (size_t)(block * job->vc_st[0]) * es + (size_t)r0 * vrow;
        for (size_t off = 0; off < (size_t)rows * krow; off += 4096) __builtin_prefetch(k + off, 0, 3);
        for (size_t off = 0; off < (size_t)rows * vrow; off += 4096) __builtin_prefetch(v + off, 0, 3);
    }
}

/* The scores of row r of token ti and head h over the chunk, at s[r * rs + j * js]: softcap and ALiBi
 * in the contract's order, then -inf outside the token's key range [lo, hi]. */
static void fix_scores(const attn_job_t *job, const cpu_kv_chunk_t *c, float *s, int64_t rs, int64_t js, int64_t r,
                       int64_t h, int64_t pq, int64_t lo, int64_t hi)
{
    float *row = s + r * rs;
    const int n = c->n;
    if (job->softcap > 0.0f || job->alibi) {
        const float slope = job->alibi ? job->alibi[h * job->alibi_st] : 0.0f;
        for (int j = 0; j < n; j++) {
            float x = row[j * js];
            if (job->softcap > 0.0f) x = job->softcap * tanhf(x / job->softcap);
            if (job->alibi) {
                const int64_t dist = pq - c->pos[j];
                x -= slope * (float)(dist < 0 ? -dist : dist);
            }
            row[j * js] = x;
        }
    }
    for (int j = 0; j < n && c->pos[j] < lo; j++) row[j * js] = -INFINITY;
    for (int j = n - 1; j >= 0 && c->pos[j] > hi; j--) row[j * js] = -INFINITY;
}

/* Writes one finished row: o / (l + e^{sink - m}), LSE = m + ln(l); a row without keys gets 0, -inf. */
static void finish_row(const attn_job_t *job, float *o, float m, float l, int64_t t, int64_t h)
{
    const int64_t dv = job->dv;
    const double lse = plugin_softmax_finish(o, dv, m, l, job->sinks ? &job->sinks[h * job->sinks_st] : NULL);
    char *dst = job->out + (size_t)(t * job->out_st[0] + h * job->out_st[1]) * job->out_es;
    dc_row_from_f32(dst, o, job->out_kind, (size_t)dv, 1.0f);
    if (job->lse) job->lse[t * job->lse_st[0] + h * job->lse_st[1]] = (float)lse;
}

/* Loads the query rows of one KV head's tile (row r = token ti * nh + head hh), times the softmax
 * scale, in the layout of its kernel; pad rows are zero; the softmax state starts empty. */
static void load_queries(const attn_job_t *job, const cpu_tile_t *t, int wide, int64_t q0, int64_t nt, int64_t nh,
                         int64_t h0, float *tmp)
{
    const int64_t dq = job->dqk, rows = nt * nh;
    float *q = (float *)t->q;
    const int64_t padded = wide ? t->rows_pad : (rows + 3) / 4 * 4;
    for (int64_t r = 0; r < rows; r++) {
        const int64_t ti = r / nh, hh = r % nh;
        const char *src = job->q + (size_t)((q0 + ti) * job->q_st[0] + (h0 + hh) * job->q_st[1]) * job->q_es;
        float *dst = wide ? tmp : q + r * t->dqk_pad;
        dc_row_to_f32(dst, src, job->q_kind, (size_t)dq, 1.0f);
        if (t->qb) /* the bf16 dots' query, unscaled: bf16 x bf16 products are exact in f32 */
            for (int64_t d = 0; d < dq; d++) ((uint16_t *)t->qb)[r * t->dqk_pad + d] = dc_f32_to_bf16(dst[d]);
        for (int64_t d = 0; d < dq; d++) dst[d] *= job->scale;
        if (wide)
            for (int64_t d = 0; d < dq; d++) q[d * t->ld + r] = tmp[d];
    }
    if (wide) {
        for (int64_t d = 0; d < dq; d++)
            for (int64_t r = rows; r < padded; r++) q[d * t->ld + r] = 0.0f;
    } else {
        memset(q + rows * t->dqk_pad, 0, (size_t)((padded - rows) * t->dqk_pad) * sizeof(float));
        if (t->qb)
            memset((uint16_t *)t->qb + rows * t->dqk_pad, 0, (size_t)((padded - rows) * t->dqk_pad) * sizeof(uint16_t));
    }
    for (int64_t r = 0; r < padded; r++) {
        t->m[r] = -INFINITY;
        t->l[r] = 0.0f;
    }
    memset(t->o, 0, (size_t)(padded * t->dv_pad) * sizeof(float));
}

/* The narrow tile of KV head u of an all-heads item: its rows start at u * stride. */
static cpu_tile_t sub_tile(const cpu_tile_t *t, int64_t u, int64_t stride, int rows)
{
    cpu_tile_t s = *t;
    s.rows = rows;
    s.q += u * stride * t->dqk_pad;
    if (s.qb) s.qb += u * stride * t->dqk_pad;
    s.o += u * stride * t->dv_pad;
    s.m += u * stride;
    s.l += u * stride;
    s.alpha += u * stride;
    s.s += u * stride * CPU_ATTN_CHUNK;
    return s;
}

static void attn_item(void *ctx, size_t index, unsigned worker)
{
    const attn_job_t *job = ctx;
    const cpu_attn_item_t it = job->plan->items[index];
    const cpu_attn_scratch_layout_t *lay = &job->lay;
    char *base = job->plan->scratch + (size_t)worker * job->plan->scratch_stride;
    const int64_t seq = it.seq;
    int64_t q_begin, L, S;
    seq_bounds(job, seq, &q_begin, &L, &S);
    const int64_t i0 = it.q_first, i1 = i0 + it.q_count < L ? i0 + it.q_count : L;
    if (i1 <= i0) return;
    /* An item covers one KV head, or (kv_head < 0: decode, one token) all of them, each KV head's rows
     * a narrow tile of its own, so that each block of the cache is read whole, by one thread. */
    const int all = it.kv_head < 0, wide = it.wide;
    const int64_t units = all ? job->Hkv : 1, kv0 = all ? 0 : it.kv_head;
    const int64_t nt = i1 - i0, nh = all ? job->group : it.head_count, rows = nt * nh;
    const int64_t stride = (rows + 3) / 4 * 4; /* rows of one unit, padded for the narrow kernel */
    const int64_t h0 = kv0 * job->group + (all ? 0 : it.head_first);

    cpu_tile_t t = {
        .rows = (int)rows,
        .rows_pad = (int)((rows + CPU_WIDE_ROW_ALIGN - 1) / CPU_WIDE_ROW_ALIGN * CPU_WIDE_ROW_ALIGN),
        .ld = cpu_attn_ld((rows + CPU_WIDE_ROW_ALIGN - 1) / CPU_WIDE_ROW_ALIGN * CPU_WIDE_ROW_ALIGN),
        .dqk = (int)job->dqk, .dv = (int)job->dv, .dv_pad = lay->dv_pad, .dqk_pad = lay->dqk_pad,
        .q = (const float *)(void *)(base + lay->q), .o = (float *)(void *)(base + lay->o),
        .m = (float *)(void *)(base + lay->m), .l = (float *)(void *)(base + lay->l),
        .s = (float *)(void *)(base + lay->s), .alpha = (float *)(void *)(base + lay->alpha),
        .kc = (float *)(void *)(base + lay->kc), .vc = (float *)(void *)(base + lay->vc),
        /* bf16 dots only where they are exact: a query of f32 or f16 would be rounded to bf16 */
        .qb = !wide && job->simd->bf16_dot && job->kv_kind == DC_BF16 && job->q_kind == DC_BF16
                  ? (const uint16_t *)(void *)(base + lay->qb) : NULL,
        .qb_scale = job->scale,
    };
    int64_t *lo = (int64_t *)(void *)(base + lay->lo), *hi = (int64_t *)(void *)(base + lay->hi);
    for (int64_t u = 0; u < units; u++) {
        const cpu_tile_t tu = wide ? t : sub_tile(&t, u, stride, (int)rows);
        load_queries(job, &tu, wide, q_begin + i0, nt, nh, h0 + u * job->group, t.kc); /* kc: free until the first chunk */
    }

    /* Each token's key range; the item walks their union, cut to its split. */
    const int64_t pq0 = S - L + i0; /* bottom-right alignment: the last query sits at S - 1 */
    for (int64_t ti = 0; ti < nt; ti++)
        plugin_key_range(pq0 + ti, S, job->causal, job->window_left, job->window_right, &lo[ti], &hi[ti]);
    int64_t p = lo[0], end = hi[nt - 1];
    if (it.split >= 0) {
        const cpu_attn_split_t *sp = &job->plan->splits[seq];
        cpu_attn_split_range(lo[0], hi[nt - 1], it.split, sp->nsplit, &p, &end);
    }
    const int64_t inner_lo = lo[nt - 1], inner_hi = hi[0]; /* keys every row keeps */
    const int fix_all = job->softcap > 0.0f || job->alibi != NULL;
    const int64_t rs = wide ? 1 : CPU_ATTN_CHUNK, js = wide ? t.ld : 1;

    /* The chunk the kernels work on names what to prefetch while they do (set_prefetch); they prefetch
     * it piece by piece as they consume their own rows, so the memory system always has the next rows
     * in flight: the block table scatters them, so the hardware prefetchers cannot guess them. */
    cpu_kv_chunk_t chunks[4];
    cpu_kv_chunk_t *c = &chunks[0], *next = &chunks[1], *cu = &chunks[2], *cn = &chunks[3];
    for (int i = 0; i < 4; i++) {
        chunks[i].kind = job->kv_kind;
        chunks[i].scaled = job->k_scale != NULL || job->v_scale != NULL;
        chunks[i].n = 0;
        chunks[i].pf_n = 0;
        chunks[i].pf_units = 1;
    }
    /* Key-major decode: every KV head, heads adjacent in the cache (NHD), one scale for all heads. */
    const int key_major = all && !wide && job->kc_st[2] == job->dqk && job->vc_st[2] == job->dv &&
                          job->ks_st[1] == 0 && job->vs_st[1] == 0;
    cpu_tile_t tiles[CPU_ATTN_DECODE_ROWS / 4];
    for (int64_t u = 0; u < units && !wide; u++) tiles[u] = sub_tile(&t, u, stride, (int)rows);
    if (p <= end) build_chunk(job, seq, kv0, &p, end, c);
    while (c->n > 0) {
        next->n = 0;
        if (p <= end) build_chunk(job, seq, kv0, &p, end, next);
        const int fix = fix_all || c->pos[0] < inner_lo || c->pos[c->n - 1] > inner_hi;
        if (key_major) {
            touch_ahead(job, seq, c->pos[0] + DECODE_TOUCH_CHUNKS * CPU_ATTN_CHUNK, end);
            set_prefetch(job, c, next->n > 0 ? next : NULL, NULL, 0, units, 1);
            job->simd->decode_scores(tiles, (int)units, c, (size_t)job->kc_st[2] * job->kv_es);
            for (int64_t u = 0; u < units && fix; u++)
                for (int64_t r = 0; r < rows; r++)
                    fix_scores(job, c, tiles[u].s, rs, js, r, h0 + u * job->group + r, pq0, lo[0], hi[0]);
            job->simd->decode_update(tiles, (int)units, c, (size_t)job->vc_st[2] * job->kv_es);
        } else {
            *cu = *c;
            for (int64_t u = 0; u < units; u++) {
                if (u + 1 < units) { /* the next head's rows of these keys */
                    int64_t pu = c->pos[0];
                    build_chunk(job, seq, kv0 + u + 1, &pu, c->pos[c->n - 1], cn);
                }
                set_prefetch(job, cu, next->n > 0 ? next : NULL, cn, u, units, 0);
                const cpu_tile_t *tu = wide ? &t : &tiles[u];
                if (wide) {
                    job->simd->wide_pack(tu, cu);
                    job->simd->wide_scores(tu, cu, cu->n);
                } else {
                    job->simd->narrow_scores(tu, cu);
                }
                if (fix)
                    for (int64_t r = 0; r < rows; r++) {
                        const int64_t ti = r / nh;
                        fix_scores(job, cu, tu->s, rs, js, r, h0 + u * job->group + r % nh, pq0 + ti, lo[ti], hi[ti]);
                    }
                if (wide)
                    job->simd->wide_update(tu, cu->n);
                else
                    job->simd->narrow_update(tu, cu);
                if (u + 1 < units) { /* the chunk just built is the next one to run */
                    cpu_kv_chunk_t *tmp = cu;
                    cu = cn;
                    cn = tmp;
                }
            }
        }
        cpu_kv_chunk_t *done = c;
        c = next;
        next = done;
    }

    for (int64_t u = 0; u < units; u++)
        for (int64_t r = 0; r < rows; r++) {
            const int64_t ti = r / nh, h = h0 + u * job->group + r % nh, tr = (wide ? 0 : u * stride) + r;
            float *o = t.o + tr * t.dv_pad;
            if (it.split >= 0) { /* a partial state, merged by merge_item */
                const cpu_attn_split_t *sp = &job->plan->splits[seq];
                const int64_t w = sp->part_base + ((int64_t)it.split * sp->qlen + i0 + ti) * job->Hq + h;
                memcpy(job->ws_o + w * job->dv, o, (size_t)job->dv * sizeof(float));
                job->ws_m[w] = t.m[tr];
                job->ws_l[w] = t.l[tr];
            } else {
                finish_row(job, o, t.m[tr], t.l[tr], q_begin + i0 + ti, h);
            }
        }
}

/* Merges the split parts of one request's rows of one KV head, then finishes them. */
static void merge_item(void *ctx, size_t index, unsigned worker)
{
    const attn_job_t *job = ctx;
    const int64_t seq = job->plan->merge_seqs[index / (size_t)job->Hkv], kv_head = (int64_t)(index % (size_t)job->Hkv);
    const cpu_attn_split_t *sp = &job->plan->splits[seq];
    float *o = (float *)(void *)(job->plan->scratch + (size_t)worker * job->plan->scratch_stride + job->lay.o);
    int64_t q_begin, L, S;
    seq_bounds(job, seq, &q_begin, &L, &S);
    if (L > sp->qlen) L = sp->qlen;
    for (int64_t i = 0; i < L; i++)
        for (int64_t h = kv_head * job->group; h < (kv_head + 1) * job->group; h++) {
            float m = -INFINITY;
            for (int32_t s = 0; s < sp->nsplit; s++) {
                const int64_t w = sp->part_base + ((int64_t)s * sp->qlen + i) * job->Hq + h;
                if (job->ws_l[w] > 0.0f && job->ws_m[w] > m) m = job->ws_m[w];
            }
            float l = 0.0f;
            memset(o, 0, (size_t)job->dv * sizeof(float));
            for (int32_t s = 0; s < sp->nsplit && m != -INFINITY; s++) {
                const int64_t w = sp->part_base + ((int64_t)s * sp->qlen + i) * job->Hq + h;
                if (!(job->ws_l[w] > 0.0f)) continue; /* an empty part: its m may be -inf */
                const float f = expf(job->ws_m[w] - m);
                l += f * job->ws_l[w];
                const float *po = job->ws_o + w * job->dv;
                for (int64_t d = 0; d < job->dv; d++) o[d] += f * po[d];
            }
            finish_row(job, o, m, l, q_begin + i, h);
        }
}

/* The fp8 scale of one cache: per tensor ([1]: strides 0) or per (block, KV head). */
static void scale_init(const attnrt_tensor_t *t, dc_kind_t kv_kind, const float **scale, int64_t st[2])
{
    *scale = NULL;
    st[0] = st[1] = 0;
    if ((kv_kind != DC_E4M3 && kv_kind != DC_E5M2) || !t || !t->data) return;
    *scale = t->data;
    if (t->ndim == 2) {
        st[0] = t->strides[0];
        st[1] = t->strides[1];
    }
}

static attnrt_status_t check_run_args(const cpu_attn_plan_t *p, const cpu_pool_t *pool, const attnrt_attention_args_t *a)
{
    if (!p || p->pool != pool)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention run: the plan is NULL or was made on another device");
    if (!a->query || !a->key_cache || !a->value_cache || !a->block_table || !a->query_start_loc || !a->seq_lens || !a->out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention run: a required tensor is NULL");
    if (a->query->shape[0] != p->num_tokens || a->query->shape[1] != p->num_q_heads ||
        a->key_cache->shape[2] != p->num_kv_heads || a->query->shape[2] != p->head_dim_qk ||
        a->value_cache->shape[3] != p->head_dim_v || a->seq_lens->shape[0] != p->num_seqs ||
        a->query_start_loc->shape[0] != p->num_seqs + 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu paged attention run: shapes (T %lld, Hq %lld, Hkv %lld, D %lld/%lld, B %lld) differ from "
                           "the plan's (T %lld, Hq %lld, Hkv %lld, D %lld/%lld, B %lld); plan this batch again",
                           (long long)a->query->shape[0], (long long)a->query->shape[1], (long long)a->key_cache->shape[2],
                           (long long)a->query->shape[2], (long long)a->value_cache->shape[3], (long long)a->seq_lens->shape[0],
                           (long long)p->num_tokens, (long long)p->num_q_heads, (long long)p->num_kv_heads,
                           (long long)p->head_dim_qk, (long long)p->head_dim_v, (long long)p->num_seqs);
    return ATTNRT_OK;
}

attnrt_status_t cpu_attention_run(cpu_pool_t *pool, const void *plan, const attnrt_attention_args_t *in,
                                  void *workspace, size_t workspace_bytes)
{
    const cpu_attn_plan_t *p = plan;
    attnrt_attention_args_t a;
    PLUGIN_COPY_IN(a, in);
    attnrt_status_t st = check_run_args(p, pool, &a);
    if (st != ATTNRT_OK) return st;
    if (p->workspace_bytes && (!workspace || workspace_bytes < p->workspace_bytes))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention run: workspace of %zu bytes, the plan needs %zu",
                           workspace ? workspace_bytes : 0, p->workspace_bytes);

    attn_job_t job;
    memset(&job, 0, sizeof job);
    job.plan = p;
    job.simd = p->simd;
    job.lay = cpu_attn_scratch_layout(p->head_dim_qk, p->head_dim_v);
    job.T = p->num_tokens;
    job.Hq = p->num_q_heads;
    job.Hkv = p->num_kv_heads;
    job.group = job.Hq / job.Hkv;
    job.dqk = p->head_dim_qk;
    job.dv = p->head_dim_v;

    job.q = a.query->data;
    job.q_st[0] = a.query->strides[0];
    job.q_st[1] = a.query->strides[1];
    job.q_kind = dc_kind_of(a.query->dtype);
    job.out = a.out->data;
    job.out_st[0] = a.out->strides[0];
    job.out_st[1] = a.out->strides[1];
    job.out_kind = dc_kind_of(a.out->dtype);
    job.kv_kind = dc_kind_of(a.key_cache->dtype);
    if (job.q_kind == DC_INVALID || job.q_kind == DC_E4M3 || job.q_kind == DC_E5M2 || job.out_kind == DC_INVALID ||
        job.out_kind == DC_E4M3 || job.out_kind == DC_E5M2 || job.kv_kind == DC_INVALID ||
        dc_kind_of(a.value_cache->dtype) != job.kv_kind)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu paged attention run: dtypes q %s, out %s, cache %s/%s are not supported",
                           dc_kind_name(job.q_kind), dc_kind_name(job.out_kind), dc_kind_name(job.kv_kind),
                           dc_kind_name(dc_kind_of(a.value_cache->dtype)));
    job.q_es = dc_kind_size(job.q_kind);
    job.out_es = dc_kind_size(job.out_kind);
    job.kv_es = dc_kind_size(job.kv_kind);
    if (a.lse) {
        job.lse = a.lse->data;
        job.lse_st[0] = a.lse->strides[0];
        job.lse_st[1] = a.lse->strides[1];
    }

    job.kc = a.key_cache->data;
    job.vc = a.value_cache->data;
    for (int i = 0; i < 3; i++) {
        job.kc_st[i] = a.key_cache->strides[i];
        job.vc_st[i] = a.value_cache->strides[i];
    }
    job.num_blocks = a.key_cache->shape[0] < a.value_cache->shape[0] ? a.key_cache->shape[0] : a.value_cache->shape[0];
    job.block_size = a.key_cache->shape[1] < a.value_cache->shape[1] ? a.key_cache->shape[1] : a.value_cache->shape[1];
    scale_init(a.key_scale, job.kv_kind, &job.k_scale, job.ks_st);
    scale_init(a.value_scale, job.kv_kind, &job.v_scale, job.vs_st);

    job.bt = a.block_table->data;
    job.bt_st[0] = a.block_table->strides[0];
    job.bt_st[1] = a.block_table->ndim > 1 ? a.block_table->strides[1] : 1;
    job.bt_cols = a.block_table->ndim > 1 ? a.block_table->shape[1] : 0;
    job.qsl = a.query_start_loc->data;
    job.qsl_st = a.query_start_loc->strides[0];
    job.sl = a.seq_lens->data;
    job.sl_st = a.seq_lens->strides[0];
    if (a.alibi_slopes) {
        job.alibi = a.alibi_slopes->data;
        job.alibi_st = a.alibi_slopes->strides[0];
    }
    if (a.sinks) {
        job.sinks = a.sinks->data;
        job.sinks_st = a.sinks->strides[0];
    }
    job.scale = a.scale != 0.0f ? a.scale : (float)(1.0 / sqrt((double)job.dqk));
    job.softcap = a.softcap;
    job.causal = a.causal != 0;
    job.window_left = plugin_window_count(a.sliding_window_left);
    job.window_right = plugin_window_count(a.sliding_window_right);
    if (job.block_size <= 0 || job.dqk <= 0 || job.dv <= 0) return ATTNRT_OK; /* nothing to read or write */
    if (p->workspace_bytes) {
        job.ws_o = workspace;
        job.ws_m = job.ws_o + p->part_rows * job.dv;
        job.ws_l = job.ws_m + p->part_rows;
    }

    cpu_parallel_for(pool, p->num_items, attn_item, &job);
    if (p->num_merges) cpu_parallel_for(pool, p->num_merges * (size_t)job.Hkv, merge_item, &job);
    return ATTNRT_OK;
}
