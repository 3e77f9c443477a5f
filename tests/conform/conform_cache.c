/* conform_cache.c - a shuffled paged cache, filled through attnrt_kv_write and checked byte by byte
 * (see conform_cache.h for what is checked and why). */
#include "conform_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_compare.h"
#include "reference.h"

/* Where one cache (0: key, 1: value) lives: an allocation, the element offset of block 0, strides. */
typedef struct view {
    int     alloc;
    size_t  base;
    int64_t strides[4];
    int     dim;
} view_t;

/* Host-side state of one build; freed before cf_cache_build returns. */
typedef struct build {
    const cf_cache_spec_t *spec;
    size_t         esize;
    int            n_allocs;
    size_t         elems[2];     /* elements of each allocation                                  */
    unsigned char *expect[2];    /* what the allocation must hold after the write                */
    unsigned char *initial[2];   /* what it held before                                          */
    unsigned char *got[2];       /* what the device holds after                                  */
    int32_t       *writer[2];    /* per element: 1 + the kv_write row that wrote it, 0: none      */
    view_t         view[2];
    int           *owner;        /* [num_blocks] sequence owning the block, -1 for a spare block  */
    float         *scales[2];    /* fp8: [1] or [num_blocks, Hkv]                                 */
    int            total_rows;   /* kv_write rows: real tokens + padding                          */
    unsigned char *src[2];       /* [total_rows, Hkv, D] in src_dtype                             */
    int64_t       *slots;        /* [total_rows]                                                  */
    void          *dptr[2];      /* device allocations (owned by the case's cf_dev_t)             */
} build_t;

static size_t view_offset(const view_t *v, int blk, int row, int h, int d)
{
    return v->base + (size_t)((int64_t)blk * v->strides[0] + (int64_t)row * v->strides[1] +
                              (int64_t)h * v->strides[2] + d);
}

static float scale_at(const build_t *b, int which, int blk, int h)
{
    return b->spec->per_block_scale ? b->scales[which][(size_t)blk * b->spec->num_kv_heads + h] : b->scales[which][0];
}

/* The code the cache must hold for source value x at (blk, h): one rounding from x (fp8: of x / scale). */
static void encode_cache(const build_t *b, int which, int blk, int h, double x, void *img, size_t off)
{
    cf_dtype_t kv = b->spec->kv_dtype;
    if (cf_dtype_is_fp8(kv))
        ((uint8_t *)img)[off] = ref_quantize_fp8(x, scale_at(b, which, blk, h), kv == CF_E5M2);
    else
        cf_encode(kv, x, img, off);
}

static double decode_cache(const build_t *b, int which, int blk, int h, const void *img, size_t off)
{
    cf_dtype_t kv = b->spec->kv_dtype;
    if (cf_dtype_is_fp8(kv))
        return ref_dequantize_fp8(((const uint8_t *)img)[off], scale_at(b, which, blk, h), kv == CF_E5M2);
    return cf_decode(kv, img, off);
}

/* A value on a boundary of the cache format: a rounding tie, a subnormal, a saturating value, -0. */
static double edge_value(cf_rng_t *rng, const cf_cache_spec_t *s, double scale)
{
    const cf_dtype_t kv = s->kv_dtype, src = s->src_dtype;
    switch (cf_rng_int(rng, 0, 3)) {
    case 0:
        if (!cf_dtype_is_fp8(kv) && kv != CF_F32) { /* halfway between two neighbours of the cache format */
            unsigned char tmp[4];
            cf_encode(kv, cf_rng_normal(rng), tmp, 0);
            double lo = cf_decode(kv, tmp, 0);
            uint16_t bits = (uint16_t)(cf_bits(kv, tmp, 0) + 1u);
            memcpy(tmp, &bits, 2);
            double mid = 0.5 * (lo + cf_decode(kv, tmp, 0));
            if (isfinite(mid) && cf_round(src, mid) == mid) return mid;
        }
        return cf_rng_normal(rng);
    case 1: return cf_rng_normal(rng) * (cf_dtype_is_fp8(kv) ? 1e-3 * scale : 1e-6); /* subnormal range */
    case 2:
        if (cf_dtype_is_fp8(kv)) {
            double x = (cf_rng_chance(rng, 0.5) ? 1 : -1) * cf_fp8_max(kv) * scale * cf_rng_range(rng, 1.01, 1.05);
            if (isfinite(cf_round(src, x)) && fabs(cf_round(src, x)) > cf_fp8_max(kv) * scale) return x;
        }
        return cf_rng_normal(rng);
    default: return -0.0;
    }
}

static int alloc_host(build_t *b, int n)
{
    for (int a = 0; a < n; a++) {
        b->expect[a] = malloc(b->elems[a] * b->esize + 1);
        b->initial[a] = malloc(b->elems[a] * b->esize + 1);
        b->got[a] = malloc(b->elems[a] * b->esize + 1);
        b->writer[a] = calloc(b->elems[a] + 1, sizeof(int32_t));
        if (!b->expect[a] || !b->initial[a] || !b->got[a] || !b->writer[a]) return -1;
    }
    return 0;
}

static void free_build(build_t *b)
{
    for (int a = 0; a < 2; a++) {
        free(b->expect[a]);
        free(b->initial[a]);
        free(b->got[a]);
        free(b->writer[a]);
        free(b->src[a]);
        free(b->scales[a]);
    }
    free(b->owner);
    free(b->slots);
}

/* Block table, layout and scales. */
static int plan_blocks(build_t *b, cf_rng_t *rng, cf_cache_t *cache)
{
    const cf_cache_spec_t *s = b->spec;
    const int bs = s->block_size, hkv = s->num_kv_heads;
    int total = 0, widest = 1;
    for (int q = 0; q < s->num_seqs; q++) {
        int nb = (s->lens[q] + bs - 1) / bs;
        total += nb;
        if (nb > widest) widest = nb;
    }
    const int spare = cf_rng_int(rng, 1, 3);
    cache->num_blocks = total + spare;
    const int pad_col = cf_rng_int(rng, 0, 1); /* drawn either way: the case's later numbers stay put */
    cache->max_blocks = s->table_cols > widest ? s->table_cols : widest + (s->table_cols > 0 ? 0 : pad_col);
    int *perm = malloc(sizeof(int) * (size_t)cache->num_blocks);
    b->owner = malloc(sizeof(int) * (size_t)cache->num_blocks);
    cache->block_table = malloc(sizeof(int32_t) * (size_t)(s->num_seqs > 0 ? s->num_seqs : 1) * (size_t)cache->max_blocks);
    if (!perm || !b->owner || !cache->block_table) {
        free(perm);
        return -1;
    }
    for (int i = 0; i < cache->num_blocks; i++) perm[i] = i;
    cf_rng_shuffle(rng, perm, cache->num_blocks);
    for (int i = 0; i < cache->num_blocks; i++) b->owner[i] = -1;
    int next = 0;
    for (int q = 0; q < s->num_seqs; q++) {
        int nb = (s->lens[q] + bs - 1) / bs;
        for (int j = 0; j < cache->max_blocks; j++) {
            int blk = j < nb ? perm[next++] : perm[total]; /* past the end: a NaN block */
            cache->block_table[(size_t)q * (size_t)cache->max_blocks + (size_t)j] = blk;
            if (j < nb) b->owner[blk] = q;
        }
    }
    free(perm);

    const size_t ek = (size_t)bs * (size_t)hkv * (size_t)s->head_dim_k;
    const size_t ev = (size_t)bs * (size_t)hkv * (size_t)s->head_dim_v;
    b->esize = cf_dtype_size(s->kv_dtype);
    b->n_allocs = s->interleaved ? 1 : 2;
    b->elems[0] = s->interleaved ? (size_t)cache->num_blocks * (ek + ev) : (size_t)cache->num_blocks * ek;
    b->elems[1] = s->interleaved ? 0 : (size_t)cache->num_blocks * ev;
    for (int w = 0; w < 2; w++) {
        view_t *v = &b->view[w];
        v->dim = w == 0 ? s->head_dim_k : s->head_dim_v;
        v->alloc = s->interleaved ? 0 : w;
        v->base = s->interleaved && w == 1 ? ek : 0;
        v->strides[0] = (int64_t)(s->interleaved ? ek + ev : w == 0 ? ek : ev);
        v->strides[1] = s->hnd ? v->dim : (int64_t)hkv * v->dim;
        v->strides[2] = s->hnd ? (int64_t)bs * v->dim : v->dim;
        v->strides[3] = 1;
    }

    if (cf_dtype_is_fp8(s->kv_dtype)) {
        const size_t n = s->per_block_scale ? (size_t)cache->num_blocks * (size_t)hkv : 1;
        /* Scales that put typical values (|x| < 4) in the upper part of the format, so that a few
         * saturate and most keep their precision. */
        const double base = s->kv_dtype == CF_E4M3 ? 4.0 / 448.0 : 0.25;
        for (int w = 0; w < 2; w++) {
            b->scales[w] = malloc(sizeof(float) * n);
            if (!b->scales[w]) return -1;
            for (size_t i = 0; i < n; i++) b->scales[w][i] = (float)(base * cf_rng_range(rng, 0.6, 2.0));
        }
    }
    return alloc_host(b, b->n_allocs);
}

/* Spare blocks: NaN. Everything else: finite garbage, which rows past a sequence's end keep. */
static void fill_initial(build_t *b, cf_rng_t *rng, const cf_cache_t *cache)
{
    const cf_cache_spec_t *s = b->spec;
    for (int w = 0; w < 2; w++) {
        const view_t *v = &b->view[w];
        for (int blk = 0; blk < cache->num_blocks; blk++)
            for (int row = 0; row < s->block_size; row++)
                for (int h = 0; h < s->num_kv_heads; h++)
                    for (int d = 0; d < v->dim; d++) {
                        size_t off = view_offset(v, blk, row, h, d);
                        if (b->owner[blk] < 0)
                            cf_poison(s->kv_dtype, b->initial[v->alloc], off);
                        else
                            cf_encode(s->kv_dtype, 4.0 * cf_rng_normal(rng), b->initial[v->alloc], off);
                    }
    }
    for (int a = 0; a < b->n_allocs; a++) memcpy(b->expect[a], b->initial[a], b->elems[a] * b->esize);
}

/* The kv_write rows: every token of every sequence in a shuffled order, mixed with padding rows. */
static int make_rows(build_t *b, cf_rng_t *rng, const cf_cache_t *cache)
{
    const cf_cache_spec_t *s = b->spec;
    const int bs = s->block_size, hkv = s->num_kv_heads;
    int tokens = 0;
    for (int q = 0; q < s->num_seqs; q++) tokens += s->lens[q];
    b->total_rows = tokens + s->padding_slots;
    const size_t rows = (size_t)b->total_rows;
    int *order = malloc(sizeof(int) * (rows + 1));
    int64_t *token_slot = malloc(sizeof(int64_t) * ((size_t)tokens + 1));
    b->slots = malloc(sizeof(int64_t) * (rows + 1));
    for (int w = 0; w < 2; w++)
        b->src[w] = malloc(rows * (size_t)hkv * (size_t)b->view[w].dim * cf_dtype_size(s->src_dtype) + 1);
    if (!order || !token_slot || !b->slots || !b->src[0] || !b->src[1]) {
        free(order);
        free(token_slot);
        return -1;
    }
    int t = 0;
    for (int q = 0; q < s->num_seqs; q++)
        for (int j = 0; j < s->lens[q]; j++)
            token_slot[t++] = (int64_t)cache->block_table[(size_t)q * (size_t)cache->max_blocks + (size_t)(j / bs)] * bs +
                              j % bs;
    for (int i = 0; i < b->total_rows; i++) order[i] = i;
    cf_rng_shuffle(rng, order, b->total_rows);

    for (int i = 0; i < b->total_rows; i++) {
        const int tok = order[i];
        /* vLLM pads with -1; any negative slot means "skip" */
        const int64_t slot = tok < tokens ? token_slot[tok] : (cf_rng_chance(rng, 0.7) ? -1 : -cf_rng_int(rng, 2, 1 << 30));
        b->slots[i] = slot;
        const int blk = slot >= 0 ? (int)(slot / bs) : 0, row = slot >= 0 ? (int)(slot % bs) : 0;
        for (int w = 0; w < 2; w++) {
            const view_t *v = &b->view[w];
            for (int h = 0; h < hkv; h++)
                for (int d = 0; d < v->dim; d++) {
                    const size_t si = ((size_t)i * (size_t)hkv + (size_t)h) * (size_t)v->dim + (size_t)d;
                    double x = cf_rng_normal(rng);
                    if (s->edge_values && cf_rng_chance(rng, 0.2))
                        x = edge_value(rng, s, cf_dtype_is_fp8(s->kv_dtype) ? scale_at(b, w, blk, h) : 1.0);
                    cf_encode(s->src_dtype, x, b->src[w], si);
                    if (slot < 0) continue;
                    const size_t off = view_offset(v, blk, row, h, d);
                    encode_cache(b, w, blk, h, cf_decode(s->src_dtype, b->src[w], si), b->expect[v->alloc], off);
                    b->writer[v->alloc][off] = i + 1;
                }
        }
    }
    free(order);
    free(token_slot);
    return 0;
}

/* Every byte of both caches after the write: written elements against the reference code, the rest
 * unchanged. Returns 1 when all hold. */
static int verify_write(build_t *b, const cf_cache_t *cache, int *worst_ulp, cf_result_t *res)
{
    const cf_cache_spec_t *s = b->spec;
    const int fp8 = cf_dtype_is_fp8(s->kv_dtype);
    long long bad = 0, total = 0;
    char first[400] = "";
    *worst_ulp = 0;
    for (int w = 0; w < 2; w++) {
        const view_t *v = &b->view[w];
        for (int blk = 0; blk < cache->num_blocks; blk++)
            for (int row = 0; row < s->block_size; row++)
                for (int h = 0; h < s->num_kv_heads; h++)
                    for (int d = 0; d < v->dim; d++) {
                        const size_t off = view_offset(v, blk, row, h, d);
                        const uint32_t got = cf_bits(s->kv_dtype, b->got[v->alloc], off);
                        const uint32_t exp = cf_bits(s->kv_dtype, b->expect[v->alloc], off);
                        const int32_t writer = b->writer[v->alloc][off];
                        int ok = got == exp;
                        total++;
                        if (!ok && writer && fp8 && !isnan(cf_decode(s->kv_dtype, b->got[v->alloc], off))) {
                            int ulp = cf_fp8_ulp_distance((uint8_t)got, (uint8_t)exp);
                            if (ulp > *worst_ulp) *worst_ulp = ulp;
                            ok = ulp <= 1;
                        }
                        if (ok) continue;
                        if (bad++ == 0) {
                            if (writer) {
                                const size_t si = ((size_t)(writer - 1) * (size_t)s->num_kv_heads + (size_t)h) *
                                                      (size_t)v->dim + (size_t)d;
                                snprintf(first, sizeof first, "%s_cache[block %d, row %d, head %d, d %d] = 0x%x, "
                                         "expected 0x%x%s (from %s %.9g, kv_write row %d, slot %lld)",
                                         w ? "value" : "key", blk, row, h, d, got, exp, fp8 ? " within 1 ulp" : "",
                                         w ? "value" : "key", cf_decode(s->src_dtype, b->src[w], si), writer - 1,
                                         (long long)b->slots[writer - 1]);
                            } else {
                                snprintf(first, sizeof first, "%s_cache[block %d, row %d, head %d, d %d] = 0x%x "
                                         "but no slot names it: it must keep its previous contents 0x%x",
                                         w ? "value" : "key", blk, row, h, d, got, exp);
                            }
                        }
                    }
    }
    if (bad == 0) return 1;
    cf_result_fail(res, "kv_write: %s; %lld of %lld cache elements differ", first, bad, total);
    return 0;
}

void cf_cache_kv_write_query(const cf_cache_spec_t *spec, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_KV_WRITE;
    q->q_dtype = cf_dtype_attnrt(spec->src_dtype);
    q->kv_dtype = cf_dtype_attnrt(spec->kv_dtype);
    q->head_dim_qk = (uint32_t)spec->head_dim_k;
    q->head_dim_v = (uint32_t)spec->head_dim_v;
    q->block_size = (uint32_t)spec->block_size;
    q->num_kv_heads = (uint32_t)spec->num_kv_heads;
    /* as the runtime derives them: HND only when the strides say so (block_size 1 is both) */
    q->features = (cf_dtype_is_fp8(spec->kv_dtype) && spec->per_block_scale ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u) |
                  (spec->hnd && spec->block_size > 1 ? ATTNRT_FEATURE_LAYOUT_HND : 0u);
}

static int device_tensors(build_t *b, cf_dev_t *dev, cf_cache_t *cache, const unsigned char *const *images)
{
    const cf_cache_spec_t *s = b->spec;
    void **ptr = b->dptr;
    for (int a = 0; a < b->n_allocs; a++)
        if (cf_dev_upload_new(dev, images[a], b->elems[a] * b->esize, &ptr[a], "cache upload") != 0) return -1;
    for (int w = 0; w < 2; w++) {
        const view_t *v = &b->view[w];
        const int64_t shape[4] = {cache->num_blocks, s->block_size, s->num_kv_heads, v->dim};
        cf_tensor(w ? &cache->v : &cache->k, ptr[v->alloc] ? (char *)ptr[v->alloc] + v->base * b->esize : NULL,
                  cf_dtype_attnrt(s->kv_dtype), 4, shape, v->strides);
    }
    cache->fp8 = cf_dtype_is_fp8(s->kv_dtype);
    if (cache->fp8) {
        const size_t n = s->per_block_scale ? (size_t)cache->num_blocks * (size_t)s->num_kv_heads : 1;
        const int64_t shape[2] = {s->per_block_scale ? cache->num_blocks : 1, s->num_kv_heads};
        for (int w = 0; w < 2; w++) {
            void *p = NULL;
            if (cf_dev_upload_new(dev, b->scales[w], n * sizeof(float), &p, "scale upload") != 0) return -1;
            cf_tensor_contig(w ? &cache->v_scale : &cache->k_scale, p, ATTNRT_F32, s->per_block_scale ? 2 : 1,
                             s->per_block_scale ? shape : &shape[0]);
        }
    }
    return 0;
}

static int run_kv_write(build_t *b, const cf_env_t *env, cf_dev_t *dev, cf_cache_t *cache, cf_result_t *res)
{
    const cf_cache_spec_t *s = b->spec;
    const size_t rows = (size_t)b->total_rows;
    void *pk = NULL, *pv = NULL, *ps = NULL;
    const size_t src_size = cf_dtype_size(s->src_dtype), hkv = (size_t)s->num_kv_heads;
    if (cf_dev_upload_new(dev, b->src[0], rows * hkv * (size_t)s->head_dim_k * src_size, &pk, "key upload") ||
        cf_dev_upload_new(dev, b->src[1], rows * hkv * (size_t)s->head_dim_v * src_size, &pv, "value upload") ||
        cf_dev_upload_new(dev, b->slots, rows * sizeof(int64_t), &ps, "slot_mapping upload")) {
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    attnrt_tensor_t key, value, slot_mapping;
    const int64_t kshape[3] = {b->total_rows, s->num_kv_heads, s->head_dim_k};
    const int64_t vshape[3] = {b->total_rows, s->num_kv_heads, s->head_dim_v};
    const int64_t sshape[1] = {b->total_rows};
    cf_tensor_contig(&key, pk, cf_dtype_attnrt(s->src_dtype), 3, kshape);
    cf_tensor_contig(&value, pv, cf_dtype_attnrt(s->src_dtype), 3, vshape);
    cf_tensor_contig(&slot_mapping, ps, ATTNRT_I64, 1, sshape);
    attnrt_kv_write_args_t args = {
        .struct_size = sizeof args,
        .key = &key,
        .value = &value,
        .slot_mapping = &slot_mapping,
        .key_cache = &cache->k,
        .value_cache = &cache->v,
        .key_scale = cache->fp8 ? &cache->k_scale : NULL,
        .value_scale = cache->fp8 ? &cache->v_scale : NULL,
        .slot_mapping_host = s->host_slots ? b->slots : NULL,
    };
    attnrt_status_t st = attnrt_kv_write(env->ctx, &args, s->stream);
    if (st == ATTNRT_OK) st = attnrt_stream_synchronize(env->ctx, s->stream);
    if (st == ATTNRT_ERR_UNSUPPORTED) {
        cf_result_unsupported(res, "kv_write: %s", attnrt_last_error());
        return -1;
    }
    if (st != ATTNRT_OK) {
        cf_result_fail(res, "attnrt_kv_write: %s: %s", attnrt_status_name(st), attnrt_last_error());
        return -1;
    }
    cache->written_tokens = b->total_rows;
    for (int a = 0; a < b->n_allocs; a++) {
        if (cf_dev_download(dev, b->got[a], b->dptr[a], b->elems[a] * b->esize, "cache download") != 0) {
            cf_result_fail(res, "%s", dev->error);
            return -1;
        }
    }
    /* self-test: the first written element of the key cache changes its lowest bit (fp8, where 1 ulp is
     * allowed: an exponent bit) */
    if (s->corrupt)
        for (size_t off = 0; off < b->elems[0]; off++)
            if (b->writer[0][off]) {
                b->got[0][off * b->esize] ^= cf_dtype_is_fp8(s->kv_dtype) ? 0x40u : 1u;
                cache->corrupted = 1;
                break;
            }
    return verify_write(b, cache, &cache->worst_ulp, res) ? 0 : -1;
}

int cf_cache_build(const cf_env_t *env, cf_dev_t *dev, cf_rng_t *rng, const cf_cache_spec_t *spec, cf_cache_t *cache,
                   cf_result_t *res)
{
    build_t b;
    memset(&b, 0, sizeof b);
    memset(cache, 0, sizeof *cache);
    b.spec = spec;
    int rc = -1;
    if (plan_blocks(&b, rng, cache) != 0) {
        cf_result_fail(res, "checker: out of host memory building the cache");
        goto done;
    }
    fill_initial(&b, rng, cache);
    if (make_rows(&b, rng, cache) != 0) {
        cf_result_fail(res, "checker: out of host memory building the kv_write rows");
        goto done;
    }
    if (spec->write_direct) {
        if (device_tensors(&b, dev, cache, (const unsigned char *const *)b.expect) != 0) {
            cf_result_fail(res, "%s", dev->error);
            goto done;
        }
        for (int a = 0; a < b.n_allocs; a++) memcpy(b.got[a], b.expect[a], b.elems[a] * b.esize);
    } else {
        if (device_tensors(&b, dev, cache, (const unsigned char *const *)b.initial) != 0) {
            cf_result_fail(res, "%s", dev->error);
            goto done;
        }
        if (run_kv_write(&b, env, dev, cache, res) != 0) goto done;
    }
    /* The reference reads what the device really stores, dequantised exactly as docs/semantics.md says. */
    const size_t hkv = (size_t)spec->num_kv_heads, bs = (size_t)spec->block_size;
    for (int w = 0; w < 2; w++) {
        const view_t *v = &b.view[w];
        double *deq = malloc(sizeof(double) * ((size_t)cache->num_blocks * bs * hkv * (size_t)v->dim + 1));
        if (!deq) {
            cf_result_fail(res, "checker: out of host memory");
            goto done;
        }
        *(w ? &cache->v_deq : &cache->k_deq) = deq;
        for (int blk = 0; blk < cache->num_blocks; blk++)
            for (size_t row = 0; row < bs; row++)
                for (size_t h = 0; h < hkv; h++)
                    for (int d = 0; d < v->dim; d++)
                        deq[(((size_t)blk * bs + row) * hkv + h) * (size_t)v->dim + (size_t)d] =
                            decode_cache(&b, w, blk, (int)h, b.got[v->alloc], view_offset(v, blk, (int)row, (int)h, d));
    }
    rc = 0;
done:
    free_build(&b);
    return rc;
}

void cf_cache_free(cf_cache_t *cache)
{
    free(cache->block_table);
    free(cache->k_deq);
    free(cache->v_deq);
    memset(cache, 0, sizeof *cache);
}
