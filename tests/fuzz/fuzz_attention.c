/* fuzz_attention.c - paged attention from a fuzz input: dtypes, heads, head dims, block size, layout,
 * fp8 scales, options (causal, window, soft-cap, scale, ALiBi, sinks, LSE) and the batch, whose host
 * metadata may be broken on purpose and whose device copies may be corrupted after the plan.
 * Spare blocks hold NaN, and block-table columns past a sequence's end may name them, so a kernel that
 * reads a block no used entry names shows in the output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conform_compare.h"
#include "conform_device.h"
#include "fuzz.h"
#include "reference.h"

#define OP       "attention"
#define MAX_SEQS 4
#define MAX_COLS 40 /* 30 keys of block size 1, plus padding columns */
#define MAX_HQ   12

static const int head_dims[] = {1, 2, 3, 4, 8, 16, 32, 64};
static const int block_sizes[] = {1, 2, 3, 4, 8, 16, 32};
static const cf_dtype_t kv_dtypes[] = {CF_F32, CF_F16, CF_BF16, CF_E4M3, CF_E5M2};

typedef struct attn {
    cf_dtype_t q_dt, kv_dt, out_dt;
    int        Hq, Hkv, Dqk, Dv, bs, hnd, per_block;
    int        B, T, cols, num_blocks, used_blocks;
    uint8_t    nan_block[MAX_SEQS * MAX_COLS + 2]; /* spare blocks no used entry names: NaN */
    int32_t    qsl[MAX_SEQS + 1], seq_lens[MAX_SEQS], table[MAX_SEQS * MAX_COLS];
    int32_t    host_num_seqs;
    int64_t    host_stride;
    int32_t    causal, window_left, window_right;
    float      scale, softcap;
    int        alibi, sinks, lse;
} attn_t;

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int32_t window_of(fz_in_t *in)
{
    const int w = fz_byte(in);
    if (w < 160) return -1;
    if (w < 250) return (w - 160) % 12;
    return -2 - fz_byte(in); /* invalid */
}

static float option_of(fz_in_t *in, const float *table, int n)
{
    const int v = fz_byte(in);
    return v < 200 ? 0.0f : table[v % n];
}

static void draw_shape(fz_in_t *in, attn_t *a)
{
    a->q_dt = (cf_dtype_t)fz_range(in, CF_F32, CF_BF16);
    const int kv = fz_range(in, 0, COUNT(kv_dtypes));
    a->kv_dt = kv == 0 ? a->q_dt : kv_dtypes[kv - 1];
    a->out_dt = fz_bit(in) ? CF_F32 : a->q_dt;
    a->Hkv = fz_range(in, 1, 3);
    a->Hq = a->Hkv * fz_range(in, 1, 4);
    a->Dqk = fz_pick(in, head_dims, COUNT(head_dims));
    a->Dv = fz_bit(in) ? fz_pick(in, head_dims, COUNT(head_dims)) : a->Dqk;
    a->bs = fz_pick(in, block_sizes, COUNT(block_sizes));
    a->hnd = fz_bit(in);
    a->per_block = cf_dtype_is_fp8(a->kv_dt) && fz_bit(in);
}

static void draw_options(fz_in_t *in, attn_t *a)
{
    static const float softcaps[] = {1.5f, 5.0f, 30.0f, -1.0f, NAN, INFINITY, 0.5f};
    static const float scales[] = {0.05f, 0.2f, 0.5f, 1.0f, -0.5f, NAN, INFINITY};
    const int c = fz_byte(in) % 4;
    a->causal = c == 3 ? fz_wild(in, 2) : c != 0;
    a->window_left = window_of(in);
    a->window_right = window_of(in);
    a->softcap = option_of(in, softcaps, COUNT(softcaps));
    a->scale = option_of(in, scales, COUNT(scales));
    a->alibi = fz_bit(in);
    a->sinks = fz_bit(in);
    a->lse = fz_bit(in);
}

/* The batch: lengths, the block table (shuffled or shared blocks; padding columns named by `junk`). */
static void draw_batch(fz_in_t *in, cf_rng_t *rng, attn_t *a)
{
    int blocks[MAX_SEQS], max_blocks = 0;
    a->B = fz_range(in, 0, MAX_SEQS);
    a->qsl[0] = 0;
    for (int b = 0; b < a->B; b++) {
        const int q = fz_range(in, 0, 6), ctx = fz_range(in, 0, 24);
        a->qsl[b + 1] = a->qsl[b] + q;
        a->seq_lens[b] = a->causal == 0 ? ctx : q + ctx; /* cross-attention may be shorter than the query */
        blocks[b] = (a->seq_lens[b] + a->bs - 1) / a->bs;
        if (blocks[b] > max_blocks) max_blocks = blocks[b];
        a->used_blocks += blocks[b];
    }
    a->T = a->qsl[a->B];
    a->cols = max_blocks + fz_range(in, 0, 2);
    const int spare = fz_range(in, 1, 2), shared = fz_bit(in), junk_kind = fz_range(in, 0, 2);
    const int32_t junk_wild = fz_wild(in, a->used_blocks + spare);
    a->num_blocks = a->used_blocks + spare;
    int perm[MAX_SEQS * MAX_COLS];
    for (int i = 0; i < a->used_blocks; i++) perm[i] = i;
    cf_rng_shuffle(rng, perm, a->used_blocks);
    int next = 0;
    for (int b = 0; b < a->B; b++)
        for (int j = 0; j < a->cols; j++) {
            int32_t *e = &a->table[b * a->cols + j];
            if (j < blocks[b])
                *e = shared ? cf_rng_int(rng, 0, a->used_blocks - 1) : perm[next++];
            else
                *e = junk_kind == 0 ? a->used_blocks + cf_rng_int(rng, 0, spare - 1) : junk_kind == 1 ? -1 : junk_wild;
        }
    a->host_num_seqs = a->B;
    a->host_stride = a->cols > 0 ? a->cols : 1; /* what the contiguous device table has */
}

static void describe(const attn_t *a)
{
    char qsl[96], seq[96], table[700];
    fz_describe("q %s, kv %s%s, out %s, Hq %d, Hkv %d, Dqk %d, Dv %d, block_size %d, %s, num_blocks %d (%d used); "
                "causal %d, window %d/%d, scale %g, softcap %g, alibi %d, sinks %d, lse %d; B %d, T %d, "
                "query_start_loc [%s], seq_lens [%s], block_table [%s] (%d columns)",
                cf_dtype_name(a->q_dt), cf_dtype_name(a->kv_dt), a->per_block ? " (per-block scales)" : "",
                cf_dtype_name(a->out_dt), a->Hq, a->Hkv, a->Dqk, a->Dv, a->bs, a->hnd ? "HND" : "NHD", a->num_blocks,
                a->used_blocks, a->causal, a->window_left, a->window_right, (double)a->scale, (double)a->softcap,
                a->alibi, a->sinks, a->lse, a->B, a->T, fz_list32(qsl, sizeof qsl, a->qsl, a->B + 1),
                fz_list32(seq, sizeof seq, a->seq_lens, a->B), fz_list32(table, sizeof table, a->table, a->B * a->cols),
                a->cols);
}

/* One host field broken on purpose (the value may happen to be valid). */
static void break_host(fz_in_t *in, attn_t *a)
{
    if (fz_byte(in) % 4 != 3) return; /* an exhausted input breaks nothing */
    switch (fz_byte(in) % 5) {
    case 0: fz_corrupt_i32(in, a->qsl, a->B + 1, a->T, "host query_start_loc"); break;
    case 1: fz_corrupt_i32(in, a->seq_lens, a->B, (int64_t)a->cols * a->bs, "host seq_lens"); break;
    case 2: fz_corrupt_i32(in, a->table, a->B * a->cols, a->num_blocks, "host block_table"); break;
    case 3:
        a->host_num_seqs = fz_wild(in, a->B);
        fz_describe_more("; batch.num_seqs = %d", a->host_num_seqs);
        break;
    default:
        a->host_stride = fz_wild(in, a->cols);
        fz_describe_more("; batch.block_table_stride = %lld", (long long)a->host_stride);
        break;
    }
}

/* The contract (docs/semantics.md), checked independently of the runtime; table_stride: the device
 * block table's, which the host copy must mirror. */
static int valid_call(const attn_t *a, int64_t table_stride)
{
    if ((a->causal != 0 && a->causal != 1) || a->window_left < -1 || a->window_right < -1) return 0;
    if (!isfinite(a->scale) || a->scale < 0 || !isfinite(a->softcap) || a->softcap < 0) return 0;
    if (a->host_num_seqs != a->B || a->host_stride < 0 || (a->B > 1 && a->host_stride != table_stride)) return 0;
    if (a->qsl[0] != 0 || a->qsl[a->B] != a->T) return 0;
    for (int b = 0; b < a->B; b++) {
        const int64_t len = (int64_t)a->qsl[b + 1] - a->qsl[b], seq = a->seq_lens[b];
        if (len < 0 || seq < 0 || (a->causal && seq < len)) return 0;
        const int64_t blocks = (seq + a->bs - 1) / a->bs;
        if (blocks > a->cols) return 0;
        for (int64_t j = 0; j < blocks; j++) {
            const int32_t e = a->table[b * a->cols + j];
            if (e < 0 || e >= a->num_blocks) return 0;
        }
    }
    return 1;
}

/* Spare blocks hold NaN, unless a used entry names one (a broken host table may, validly). */
static void mark_nan_blocks(attn_t *a)
{
    for (int blk = 0; blk < a->num_blocks; blk++) a->nan_block[blk] = blk >= a->used_blocks;
    for (int b = 0; b < a->B; b++) {
        const int64_t seq = a->seq_lens[b] > 0 ? a->seq_lens[b] : 0;
        for (int64_t j = 0; j < a->cols && j < (seq + a->bs - 1) / a->bs; j++) {
            const int32_t e = a->table[b * a->cols + j];
            if (e >= 0 && e < a->num_blocks) a->nan_block[e] = 0;
        }
    }
}

/* Device-side state of one input. */
typedef struct attn_io {
    attnrt_tensor_t q, k, v, table, qsl, seq_lens, out, lse, alibi, sinks, k_scale, v_scale;
    attnrt_attention_args_t args;
    double *q_ref, *k_deq, *v_deq, alibi_ref[MAX_HQ], sinks_ref[MAX_HQ];
} attn_io_t;

/* One cache (key or value): random values in used blocks, NaN in spare ones; *deq gets them decoded
 * (NHD doubles), as the reference reads them. */
static void make_cache(fz_dev_t *dev, cf_rng_t *rng, const attn_t *a, int D, const float *scales, attnrt_tensor_t *t,
                       double **deq)
{
    const size_t rows = (size_t)a->num_blocks * (size_t)a->bs, n = rows * (size_t)a->Hkv * (size_t)D;
    const size_t es = cf_dtype_size(a->kv_dt);
    unsigned char *img = malloc(n * es + 1);
    *deq = malloc(sizeof(double) * (n + 1));
    if (!img || !*deq) fz_finding(OP, "out of host memory");
    const int64_t nhd[4] = {(int64_t)a->bs * a->Hkv * D, (int64_t)a->Hkv * D, D, 1};
    const int64_t hnd[4] = {(int64_t)a->Hkv * a->bs * D, D, (int64_t)a->bs * D, 1};
    const int64_t *st = a->hnd ? hnd : nhd;
    for (int blk = 0; blk < a->num_blocks; blk++)
        for (int r = 0; r < a->bs; r++)
            for (int h = 0; h < a->Hkv; h++)
                for (int d = 0; d < D; d++) {
                    const size_t at = (size_t)(blk * st[0] + r * st[1] + h * st[2] + d);
                    const size_t nhd_at = (((size_t)blk * a->bs + r) * a->Hkv + h) * D + d;
                    const double x = cf_rng_normal(rng);
                    if (a->nan_block[blk]) {
                        cf_poison(a->kv_dt, img, at);
                        (*deq)[nhd_at] = NAN;
                    } else if (cf_dtype_is_fp8(a->kv_dt)) {
                        const double s = scales[a->per_block ? blk * a->Hkv + h : 0];
                        const int e5m2 = a->kv_dt == CF_E5M2;
                        img[at] = ref_quantize_fp8(x, s, e5m2);
                        (*deq)[nhd_at] = ref_dequantize_fp8(img[at], s, e5m2);
                    } else {
                        cf_encode(a->kv_dt, x, img, at);
                        (*deq)[nhd_at] = cf_decode(a->kv_dt, img, at);
                    }
                }
    const int64_t shape[4] = {a->num_blocks, a->bs, a->Hkv, D};
    cf_tensor(t, fz_upload(dev, img, n * es), cf_dtype_attnrt(a->kv_dt), 4, shape, st);
    free(img);
}

/* Query, caches, scales, per-head tensors, metadata and poisoned outputs on the device. */
static void setup_io(fz_dev_t *dev, cf_rng_t *rng, const attn_t *a, attn_io_t *io)
{
    memset(io, 0, sizeof *io);
    const size_t qn = (size_t)a->T * (size_t)a->Hq * (size_t)a->Dqk;
    unsigned char *qh = malloc(qn * cf_dtype_size(a->q_dt) + 1);
    io->q_ref = malloc(sizeof(double) * (qn + 1));
    if (!qh || !io->q_ref) fz_finding(OP, "out of host memory");
    const double magnitude = cf_rng_range(rng, 1.0, 2.5);
    for (size_t i = 0; i < qn; i++) {
        cf_encode(a->q_dt, magnitude * cf_rng_normal(rng), qh, i);
        io->q_ref[i] = cf_decode(a->q_dt, qh, i);
    }
    const int64_t q_shape[3] = {a->T, a->Hq, a->Dqk};
    cf_tensor_contig(&io->q, fz_upload(dev, qh, qn * cf_dtype_size(a->q_dt)), cf_dtype_attnrt(a->q_dt), 3, q_shape);
    free(qh);

    /* fp8 scales: one, or one per (block, KV head) */
    float ks[MAX_SEQS * MAX_COLS * 3 + 8], vs[MAX_SEQS * MAX_COLS * 3 + 8];
    const int n_scales = a->per_block ? a->num_blocks * a->Hkv : 1;
    for (int i = 0; i < n_scales; i++) {
        ks[i] = (float)cf_rng_range(rng, 0.01, 0.5);
        vs[i] = (float)cf_rng_range(rng, 0.01, 0.5);
    }
    make_cache(dev, rng, a, a->Dqk, ks, &io->k, &io->k_deq);
    make_cache(dev, rng, a, a->Dv, vs, &io->v, &io->v_deq);
    if (cf_dtype_is_fp8(a->kv_dt)) {
        const int64_t one[1] = {1}, blk[2] = {a->num_blocks, a->Hkv};
        cf_tensor_contig(&io->k_scale, fz_upload(dev, ks, sizeof(float) * (size_t)n_scales), ATTNRT_F32,
                         a->per_block ? 2 : 1, a->per_block ? blk : one);
        cf_tensor_contig(&io->v_scale, fz_upload(dev, vs, sizeof(float) * (size_t)n_scales), ATTNRT_F32,
                         a->per_block ? 2 : 1, a->per_block ? blk : one);
    }

    float heads[MAX_HQ];
    const int64_t h_shape[1] = {a->Hq};
    for (int h = 0; h < a->Hq; h++) io->alibi_ref[h] = heads[h] = (float)cf_rng_range(rng, 0.01, 0.3);
    cf_tensor_contig(&io->alibi, fz_upload(dev, heads, sizeof(float) * (size_t)a->Hq), ATTNRT_F32, 1, h_shape);
    for (int h = 0; h < a->Hq; h++)
        io->sinks_ref[h] = heads[h] = (float)(log(1.0 + a->T) + cf_rng_range(rng, -1.0, 2.0));
    cf_tensor_contig(&io->sinks, fz_upload(dev, heads, sizeof(float) * (size_t)a->Hq), ATTNRT_F32, 1, h_shape);

    const int64_t t_shape[2] = {a->B, a->cols}, b1[1] = {a->B + 1}, b0[1] = {a->B};
    cf_tensor_contig(&io->table, fz_upload(dev, a->table, sizeof(int32_t) * (size_t)a->B * (size_t)a->cols),
                     ATTNRT_I32, 2, t_shape);
    cf_tensor_contig(&io->qsl, fz_upload(dev, a->qsl, sizeof(int32_t) * (size_t)(a->B + 1)), ATTNRT_I32, 1, b1);
    cf_tensor_contig(&io->seq_lens, fz_upload(dev, a->seq_lens, sizeof(int32_t) * (size_t)a->B), ATTNRT_I32, 1, b0);

    const size_t on = (size_t)a->T * (size_t)a->Hq * (size_t)a->Dv, rows = (size_t)a->T * (size_t)a->Hq;
    unsigned char *oh = malloc(on * cf_dtype_size(a->out_dt) + 1);
    float *lh = malloc(sizeof(float) * (rows + 1));
    if (!oh || !lh) fz_finding(OP, "out of host memory");
    for (size_t i = 0; i < on; i++) cf_poison(a->out_dt, oh, i);
    for (size_t i = 0; i < rows; i++) lh[i] = NAN;
    const int64_t o_shape[3] = {a->T, a->Hq, a->Dv}, l_shape[2] = {a->T, a->Hq};
    cf_tensor_contig(&io->out, fz_upload(dev, oh, on * cf_dtype_size(a->out_dt)), cf_dtype_attnrt(a->out_dt), 3,
                     o_shape);
    cf_tensor_contig(&io->lse, fz_upload(dev, lh, sizeof(float) * rows), ATTNRT_F32, 2, l_shape);
    free(oh);
    free(lh);

    attnrt_attention_args_t *g = &io->args;
    memset(g, 0, sizeof *g);
    g->struct_size = sizeof *g;
    g->query = &io->q;
    g->key_cache = &io->k;
    g->value_cache = &io->v;
    g->block_table = &io->table;
    g->query_start_loc = &io->qsl;
    g->seq_lens = &io->seq_lens;
    g->out = &io->out;
    g->lse = a->lse ? &io->lse : NULL;
    g->alibi_slopes = a->alibi ? &io->alibi : NULL;
    g->sinks = a->sinks ? &io->sinks : NULL;
    g->key_scale = cf_dtype_is_fp8(a->kv_dt) ? &io->k_scale : NULL;
    g->value_scale = cf_dtype_is_fp8(a->kv_dt) ? &io->v_scale : NULL;
    g->scale = a->scale;
    g->softcap = a->softcap;
    g->causal = a->causal;
    g->sliding_window_left = a->window_left + 1; /* inclusive counts (-1 unlimited) as public windows */
    g->sliding_window_right = a->window_right + 1;
}

/* Device metadata corrupted after the plan: 0 to 3 values of block_table, seq_lens or query_start_loc. */
static int corrupt_device(fz_in_t *in, fz_dev_t *dev, const attn_t *a, attn_io_t *io)
{
    int32_t qsl[MAX_SEQS + 1], seq_lens[MAX_SEQS], table[MAX_SEQS * MAX_COLS];
    memcpy(qsl, a->qsl, sizeof qsl);
    memcpy(seq_lens, a->seq_lens, sizeof seq_lens);
    memcpy(table, a->table, sizeof table);
    int changed = 0;
    const int n = fz_byte(in) % 4;
    for (int i = 0; i < n; i++) switch (fz_byte(in) % 3) {
        case 0: changed |= fz_corrupt_i32(in, table, a->B * a->cols, a->num_blocks, "device block_table"); break;
        case 1: changed |= fz_corrupt_i32(in, seq_lens, a->B, (int64_t)a->cols * a->bs, "device seq_lens"); break;
        default: changed |= fz_corrupt_i32(in, qsl, a->B + 1, a->T, "device query_start_loc"); break;
        }
    if (!changed) return 0;
    fz_overwrite(dev, io->table.data, table, sizeof(int32_t) * (size_t)a->B * (size_t)a->cols);
    fz_overwrite(dev, io->seq_lens.data, seq_lens, sizeof(int32_t) * (size_t)a->B);
    fz_overwrite(dev, io->qsl.data, qsl, sizeof(int32_t) * (size_t)(a->B + 1));
    return 1;
}

static void judge(fz_dev_t *dev, const attn_t *a, const attn_io_t *io)
{
    const size_t rows = (size_t)a->T * (size_t)a->Hq, on = rows * (size_t)a->Dv;
    double *ref = malloc(sizeof(double) * (on + 1)), *ref_lse = malloc(sizeof(double) * (rows + 1));
    double *got = malloc(sizeof(double) * (on + 1)), *got_lse = malloc(sizeof(double) * (rows + 1));
    unsigned char *raw = malloc(on * cf_dtype_size(a->out_dt) + 1);
    float *raw_lse = malloc(sizeof(float) * (rows + 1));
    if (!ref || !ref_lse || !got || !got_lse || !raw || !raw_lse) fz_finding(OP, "out of host memory");
    ref_attention_problem p;
    memset(&p, 0, sizeof p);
    p.num_seqs = a->B;
    p.query_start_loc = a->qsl;
    p.seq_lens = a->seq_lens;
    p.num_q_heads = a->Hq;
    p.num_kv_heads = a->Hkv;
    p.head_dim_qk = a->Dqk;
    p.head_dim_v = a->Dv;
    p.q = io->q_ref;
    p.k_cache = io->k_deq;
    p.v_cache = io->v_deq;
    p.num_blocks = a->num_blocks;
    p.block_size = a->bs;
    p.block_table = a->table;
    p.max_blocks_per_seq = a->cols;
    p.scale = a->scale > 0 ? (double)a->scale : 1.0 / sqrt((double)a->Dqk);
    p.causal = a->causal;
    p.window_left = a->window_left;
    p.window_right = a->window_right;
    p.softcap = a->softcap;
    p.alibi_slopes = a->alibi ? io->alibi_ref : NULL;
    p.sinks = a->sinks ? io->sinks_ref : NULL;
    p.out = ref;
    p.lse = ref_lse;
    ref_paged_attention(&p);
    /* the size of the terms: the same weights over |v| */
    const size_t vn = (size_t)a->num_blocks * (size_t)a->bs * (size_t)a->Hkv * (size_t)a->Dv;
    double *v_abs = malloc(sizeof(double) * (vn + 1)), *mag = malloc(sizeof(double) * (on + 1));
    double *mag_lse = malloc(sizeof(double) * (rows + 1));
    if (!v_abs || !mag || !mag_lse) fz_finding(OP, "out of host memory");
    for (size_t i = 0; i < vn; i++) v_abs[i] = fabs(io->v_deq[i]);
    p.v_cache = v_abs;
    p.out = mag;
    p.lse = mag_lse;
    ref_paged_attention(&p);

    fz_download(dev, raw, io->out.data, on * cf_dtype_size(a->out_dt));
    for (size_t i = 0; i < on; i++) got[i] = cf_decode(a->out_dt, raw, i);
    const cf_dtype_t dts[3] = {a->q_dt, a->out_dt, a->kv_dt};
    const double tol = cf_tolerance_of(dts, 3);
    fz_compare(OP, "out", got, ref, mag, ref_lse, (size_t)a->T, (size_t)a->Hq, (size_t)a->Dv, tol, a->out_dt);
    if (a->lse) {
        fz_download(dev, raw_lse, io->lse.data, sizeof(float) * rows);
        for (size_t i = 0; i < rows; i++) got_lse[i] = raw_lse[i];
        cf_result_t res;
        memset(&res, 0, sizeof res);
        if (!cf_compare_lse("lse", got_lse, ref_lse, (size_t)a->T, (size_t)a->Hq, tol, &res))
            fz_finding(OP, "differs from the float64 reference: %s", res.message);
    }
    free(ref);
    free(ref_lse);
    free(v_abs);
    free(mag);
    free(mag_lse);
    free(got);
    free(got_lse);
    free(raw);
    free(raw_lse);
}

void fz_attention(fz_in_t *in)
{
    attn_t a;
    memset(&a, 0, sizeof a);
    cf_rng_t rng;
    cf_rng_init(&rng, fz_u32(in));
    draw_shape(in, &a);
    draw_options(in, &a);
    draw_batch(in, &rng, &a);
    describe(&a);
    break_host(in, &a);
    mark_nan_blocks(&a);

    fz_dev_t dev;
    fz_dev_init(&dev, in);
    attn_io_t io;
    setup_io(&dev, &rng, &a, &io);
    const int valid = valid_call(&a, io.table.strides[0]);
    attnrt_batch_host_t batch = {sizeof batch, a.host_num_seqs, a.qsl, a.seq_lens, a.table, a.host_stride};
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = attnrt_attention_plan(dev.ctx, &io.args, &batch, &plan);
    if (st != ATTNRT_OK) {
        fz_check_refusal("attnrt_attention_plan", st, valid);
    } else {
        if (!valid) fz_finding(OP, "attnrt_attention_plan accepted metadata that breaks the contract");
        size_t ws_bytes = 0;
        fz_require_ok("attnrt_plan_workspace_size", attnrt_plan_workspace_size(plan, &ws_bytes));
        unsigned char *junk = calloc(ws_bytes + 1, 1);
        if (!junk) fz_finding(OP, "out of host memory");
        void *ws = fz_upload(&dev, junk, ws_bytes);
        free(junk);
        const int corrupted = corrupt_device(in, &dev, &a, &io);
        fz_require_ok(corrupted ? "attnrt_attention_run (device metadata corrupted after the plan)"
                                : "attnrt_attention_run",
                      attnrt_attention_run(plan, &io.args, ws, ws_bytes, NULL));
        fz_dev_check_slack(&dev, OP);
        fz_trace(corrupted ? "ran with corrupted device metadata" : "ran and judged");
        if (!corrupted) judge(&dev, &a, &io);
        fz_require_ok("attnrt_plan_destroy", attnrt_plan_destroy(plan));
    }
    free(io.q_ref);
    free(io.k_deq);
    free(io.v_deq);
    fz_dev_release(&dev);
}
