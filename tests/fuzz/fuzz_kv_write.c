/* fuzz_kv_write.c - attnrt_kv_write from a fuzz input: dtypes, heads, head dims, block size, layout,
 * fp8 scales, boundary values and a slot mapping of valid, padding and out-of-range slots, with or
 * without its host copy, the device copy possibly corrupted after the host copy was checked. The result
 * is defined for any slot (plugins skip slots outside the cache), so every run is judged: each cache
 * row named by exactly one in-range slot holds its token (bit-exact; fp8 within 1 ulp), every other
 * byte is unchanged. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conform_device.h"
#include "fuzz.h"
#include "reference.h"

#define OP         "kv_write"
#define MAX_TOKENS 12
#define MAX_SLOTS  96 /* 6 blocks of 16 */

static const int head_dims[] = {1, 2, 3, 4, 8, 16, 32, 64};
static const int block_sizes[] = {1, 2, 3, 4, 8, 16};
static const double edge_values[] = {0.0, -0.0, 3e4, -3e4, 1e-6, 7e4, -7e4, 0.5};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct kvw {
    cf_dtype_t src_dt, kv_dt;
    int        Hkv, D[2], bs, num_blocks, hnd, per_block, T, host_slots;
    int64_t    slots[MAX_TOKENS], dev_slots[MAX_TOKENS];
} kvw_t;

/* A slot for a token: an unused valid one, padding, any negative value or a wild one. */
static int64_t draw_slot(fz_in_t *in, const int *free_slots, int *next, int total)
{
    switch (fz_byte(in) % 8) {
    case 5:  return -1;
    case 6:  return -2 - (int64_t)fz_byte(in);
    case 7:  return fz_wild(in, total);
    default: return *next < total ? free_slots[(*next)++] : -1;
    }
}

static int64_t wild64(fz_in_t *in, int64_t total)
{
    switch (fz_byte(in) % 4) {
    case 0:  return INT64_MAX;
    case 1:  return INT64_MIN;
    case 2:  return (int64_t)1 << (32 + fz_byte(in) % 31);
    default: return fz_wild(in, total);
    }
}

static int64_t view_at(const int64_t *st, int blk, int row, int h, int d)
{
    return blk * st[0] + row * st[1] + h * st[2] + d;
}

/* Judges one cache (which: 0 key, 1 value) after the write. */
static void judge_cache(const kvw_t *w, int which, const float *scales, const unsigned char *before,
                        const unsigned char *after, const double *src)
{
    const int D = w->D[which], total = w->num_blocks * w->bs;
    const int64_t nhd[4] = {(int64_t)w->bs * w->Hkv * D, (int64_t)w->Hkv * D, D, 1};
    const int64_t hnd[4] = {(int64_t)w->Hkv * w->bs * D, D, (int64_t)w->bs * D, 1};
    const int64_t *st = w->hnd ? hnd : nhd;
    int writer[MAX_SLOTS]; /* per slot: -1 none, -2 several, else the token */
    for (int s = 0; s < total; s++) writer[s] = -1;
    for (int t = 0; t < w->T; t++) {
        const int64_t s = w->dev_slots[t];
        if (s >= 0 && s < total) writer[s] = writer[s] == -1 ? t : -2;
    }
    unsigned char code[4];
    for (int blk = 0; blk < w->num_blocks; blk++)
        for (int row = 0; row < w->bs; row++)
            for (int h = 0; h < w->Hkv; h++)
                for (int d = 0; d < D; d++) {
                    const size_t at = (size_t)view_at(st, blk, row, h, d);
                    const int t = writer[blk * w->bs + row];
                    if (t == -2) continue; /* two tokens for one slot: either may win */
                    if (t == -1) {
                        if (cf_bits(w->kv_dt, after, at) != cf_bits(w->kv_dt, before, at))
                            fz_finding(OP, "%s_cache[%d][%d][%d][%d] changed but no slot names it",
                                       which ? "value" : "key", blk, row, h, d);
                        continue;
                    }
                    const double x = src[((size_t)t * w->Hkv + h) * D + d];
                    if (cf_dtype_is_fp8(w->kv_dt)) {
                        const float s = scales[w->per_block ? blk * w->Hkv + h : 0];
                        code[0] = ref_quantize_fp8(x, s, w->kv_dt == CF_E5M2);
                        if (cf_fp8_ulp_distance(code[0], after[at]) > 1)
                            fz_finding(OP, "%s_cache[%d][%d][%d][%d] = 0x%02x for %g / scale %g; expected 0x%02x "
                                       "(within 1 ulp)", which ? "value" : "key", blk, row, h, d, after[at], x,
                                       (double)s, code[0]);
                    } else {
                        cf_encode(w->kv_dt, x, code, 0);
                        if (cf_bits(w->kv_dt, after, at) != cf_bits(w->kv_dt, code, 0))
                            fz_finding(OP, "%s_cache[%d][%d][%d][%d] = 0x%x for %g; expected 0x%x",
                                       which ? "value" : "key", blk, row, h, d, cf_bits(w->kv_dt, after, at), x,
                                       cf_bits(w->kv_dt, code, 0));
                    }
                }
}

void fz_kv_write(fz_in_t *in)
{
    kvw_t w;
    memset(&w, 0, sizeof w);
    cf_rng_t rng;
    cf_rng_init(&rng, fz_u32(in));
    w.src_dt = (cf_dtype_t)fz_range(in, CF_F32, CF_BF16);
    w.kv_dt = (cf_dtype_t)fz_range(in, CF_F32, CF_E5M2);
    w.Hkv = fz_range(in, 1, 3);
    w.D[0] = fz_pick(in, head_dims, COUNT(head_dims));
    w.D[1] = fz_bit(in) ? fz_pick(in, head_dims, COUNT(head_dims)) : w.D[0];
    w.bs = fz_pick(in, block_sizes, COUNT(block_sizes));
    w.num_blocks = fz_range(in, 1, 6);
    w.hnd = fz_bit(in);
    w.per_block = cf_dtype_is_fp8(w.kv_dt) && fz_bit(in);
    const int edges = fz_bit(in);
    w.T = fz_range(in, 0, MAX_TOKENS);
    const int total = w.num_blocks * w.bs;
    int free_slots[MAX_SLOTS], next = 0;
    for (int s = 0; s < total; s++) free_slots[s] = s;
    cf_rng_shuffle(&rng, free_slots, total);
    for (int t = 0; t < w.T; t++) w.dev_slots[t] = w.slots[t] = draw_slot(in, free_slots, &next, total);
    w.host_slots = fz_bit(in);
    int valid = 1;
    for (int t = 0; t < w.T && w.host_slots; t++) valid &= w.slots[t] < total;
    const int n_corrupt = fz_byte(in) % 3;
    for (int i = 0; i < n_corrupt && w.T > 0; i++) w.dev_slots[fz_byte(in) % w.T] = wild64(in, total);

    char host[300], devs[300];
    fz_describe("key/value %s, caches %s%s, Hkv %d, Dk %d, Dv %d, block_size %d, num_blocks %d, %s, edge values %d; "
                "T %d, slot_mapping [%s]%s, on the device [%s]", cf_dtype_name(w.src_dt), cf_dtype_name(w.kv_dt),
                w.per_block ? " (per-block scales)" : "", w.Hkv, w.D[0], w.D[1], w.bs, w.num_blocks,
                w.hnd ? "HND" : "NHD", edges, w.T, fz_list(host, sizeof host, w.slots, w.T),
                w.host_slots ? " (host copy given)" : "", fz_list(devs, sizeof devs, w.dev_slots, w.T));

    fz_dev_t dev;
    fz_dev_init(&dev, in);
    attnrt_tensor_t src_t[2], cache_t[2], scale_t[2], slot_t;
    double *src[2];
    unsigned char *before[2], *after[2];
    float scales[2][6 * 3];
    const int n_scales = w.per_block ? w.num_blocks * w.Hkv : 1;
    for (int c = 0; c < 2; c++) {
        const int D = w.D[c];
        const size_t sn = (size_t)w.T * (size_t)w.Hkv * (size_t)D, cn = (size_t)total * (size_t)w.Hkv * (size_t)D;
        const size_t ses = cf_dtype_size(w.src_dt), ces = cf_dtype_size(w.kv_dt);
        unsigned char *sh = malloc(sn * ses + 1);
        src[c] = malloc(sizeof(double) * (sn + 1));
        before[c] = malloc(cn * ces + 1);
        after[c] = malloc(cn * ces + 1);
        if (!sh || !src[c] || !before[c] || !after[c]) fz_finding(OP, "out of host memory");
        for (size_t i = 0; i < sn; i++) {
            const int edge = edges && cf_rng_chance(&rng, 0.3);
            const double x = edge ? edge_values[cf_rng_int(&rng, 0, COUNT(edge_values) - 1)] : cf_rng_normal(&rng);
            cf_encode(w.src_dt, x, sh, i);
            src[c][i] = cf_decode(w.src_dt, sh, i);
        }
        for (size_t i = 0; i < cn * ces; i++) before[c][i] = (unsigned char)cf_rng_u64(&rng);
        const int64_t s_shape[3] = {w.T, w.Hkv, D}, c_shape[4] = {w.num_blocks, w.bs, w.Hkv, D};
        const int64_t nhd[4] = {(int64_t)w.bs * w.Hkv * D, (int64_t)w.Hkv * D, D, 1};
        const int64_t hnd[4] = {(int64_t)w.Hkv * w.bs * D, D, (int64_t)w.bs * D, 1};
        cf_tensor_contig(&src_t[c], fz_upload(&dev, sh, sn * ses), cf_dtype_attnrt(w.src_dt), 3, s_shape);
        cf_tensor(&cache_t[c], fz_upload(&dev, before[c], cn * ces), cf_dtype_attnrt(w.kv_dt), 4, c_shape,
                  w.hnd ? hnd : nhd);
        free(sh);
        for (int i = 0; i < n_scales; i++) scales[c][i] = (float)cf_rng_range(&rng, 0.01, 0.5);
        const int64_t one[1] = {1}, blk[2] = {w.num_blocks, w.Hkv};
        cf_tensor_contig(&scale_t[c], fz_upload(&dev, scales[c], sizeof(float) * (size_t)n_scales), ATTNRT_F32,
                         w.per_block ? 2 : 1, w.per_block ? blk : one);
    }
    const int64_t t_shape[1] = {w.T};
    cf_tensor_contig(&slot_t, fz_upload(&dev, w.dev_slots, sizeof(int64_t) * (size_t)w.T), ATTNRT_I64, 1, t_shape);

    attnrt_kv_write_args_t args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.key = &src_t[0];
    args.value = &src_t[1];
    args.slot_mapping = &slot_t;
    args.key_cache = &cache_t[0];
    args.value_cache = &cache_t[1];
    args.key_scale = cf_dtype_is_fp8(w.kv_dt) ? &scale_t[0] : NULL;
    args.value_scale = cf_dtype_is_fp8(w.kv_dt) ? &scale_t[1] : NULL;
    args.slot_mapping_host = w.host_slots ? w.slots : NULL;
    attnrt_status_t st = attnrt_kv_write(dev.ctx, &args, NULL);
    if (st != ATTNRT_OK) {
        fz_check_refusal("attnrt_kv_write", st, valid);
    } else {
        if (!valid) fz_finding(OP, "attnrt_kv_write accepted a host slot_mapping with a slot past the cache");
        fz_dev_check_slack(&dev, OP);
        fz_trace("written and judged");
        for (int c = 0; c < 2; c++) {
            fz_download(&dev, after[c], cache_t[c].data,
                        (size_t)total * (size_t)w.Hkv * (size_t)w.D[c] * cf_dtype_size(w.kv_dt));
            judge_cache(&w, c, scales[c], before[c], after[c], src[c]);
        }
    }
    for (int c = 0; c < 2; c++) {
        free(src[c]);
        free(before[c]);
        free(after[c]);
    }
    fz_dev_release(&dev);
}
