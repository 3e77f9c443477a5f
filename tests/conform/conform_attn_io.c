/* conform_attn_io.c - inputs, poisoned outputs and judging shared by attention and cascade. */
#include "conform_attn_io.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conform_compare.h"

#define SENTINEL 12.5 /* what out's gaps hold: finite, exact in every dtype, unlike any result */

static int upload(cf_dev_t *dev, const void *host, size_t bytes, void **ptr, const char *what, cf_result_t *res)
{
    if (cf_dev_upload_new(dev, host, bytes, ptr, what) == 0) return 0;
    cf_result_fail(res, "%s", dev->error);
    return -1;
}

int cf_check_status(attnrt_status_t st, const char *call, cf_result_t *res)
{
    if (st == ATTNRT_OK) return 1;
    if (st == ATTNRT_ERR_UNSUPPORTED)
        cf_result_unsupported(res, "%s: %s", call, attnrt_last_error());
    else
        cf_result_fail(res, "%s: %s: %s", call, attnrt_status_name(st), attnrt_last_error());
    return 0;
}

void cf_attn_query(const cf_case_t *c, uint32_t op, attnrt_op_query_t *q)
{
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = op;
    q->q_dtype = cf_dtype_attnrt(c->q_dtype);
    q->kv_dtype = cf_dtype_attnrt(c->kv_dtype);
    q->head_dim_qk = (uint32_t)c->head_dim_qk;
    q->head_dim_v = (uint32_t)c->head_dim_v;
    q->block_size = (uint32_t)c->block_size;
    q->num_q_heads = (uint32_t)c->num_q_heads;
    q->num_kv_heads = (uint32_t)c->num_kv_heads;
    q->features = (c->causal ? ATTNRT_FEATURE_CAUSAL : 0u) |
                  (c->window_left >= 0 || c->window_right >= 0 ? ATTNRT_FEATURE_SLIDING_WINDOW : 0u) |
                  (c->softcap > 0 ? ATTNRT_FEATURE_SOFTCAP : 0u) | (c->alibi ? ATTNRT_FEATURE_ALIBI : 0u) |
                  (c->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (c->lse ? ATTNRT_FEATURE_LSE : 0u) |
                  (cf_dtype_is_fp8(c->kv_dtype) && c->per_block_scale ? ATTNRT_FEATURE_KV_SCALE_BLOCK : 0u) |
                  (c->hnd && c->block_size > 1 ? ATTNRT_FEATURE_LAYOUT_HND : 0u);
}

int cf_workspace(cf_dev_t *dev, const attnrt_plan_t *plan, void **ws, size_t *bytes, cf_result_t *res)
{
    *ws = NULL;
    *bytes = 0;
    attnrt_status_t st = attnrt_plan_workspace_size(plan, bytes);
    if (!cf_check_status(st, "attnrt_plan_workspace_size", res)) return -1;
    if (*bytes == 0) return 0;
    unsigned char *junk = malloc(*bytes); /* 0xff bytes: NaN as f32, so unwritten scratch shows */
    if (!junk) {
        cf_result_fail(res, "checker: out of host memory for a %zu-byte workspace", *bytes);
        return -1;
    }
    memset(junk, 0xff, *bytes);
    int rc = upload(dev, junk, *bytes, ws, "workspace", res);
    free(junk);
    return rc;
}

/* Fresh query values into a new host buffer (*host, caller frees) laid out with q's strides, and their
 * rounded values into io->q_ref. */
static int make_query(const cf_case_t *c, cf_rng_t *rng, cf_attn_io_t *io, int64_t tok_stride, unsigned char **host,
                      size_t *bytes)
{
    const int hq = c->num_q_heads, d = c->head_dim_qk;
    const size_t elems = (size_t)io->T * (size_t)tok_stride;
    *bytes = elems * cf_dtype_size(c->q_dtype);
    *host = malloc(*bytes + 1);
    if (!io->q_ref) io->q_ref = malloc(sizeof(double) * ((size_t)io->T * (size_t)hq * (size_t)d + 1));
    if (!*host || !io->q_ref) return -1;
    /* queries a little larger than unit normal: sharper softmax rows, so a wrongly kept or dropped
     * key moves the output visibly even over long rows */
    const double magnitude = cf_rng_range(rng, 1.0, 2.5);
    for (size_t i = 0; i < elems; i++) cf_encode(c->q_dtype, magnitude * cf_rng_normal(rng), *host, i);
    for (int t = 0; t < io->T; t++)
        for (int h = 0; h < hq; h++)
            for (int k = 0; k < d; k++)
                io->q_ref[((size_t)t * hq + h) * d + k] =
                    cf_decode(c->q_dtype, *host, (size_t)(t * tok_stride) + (size_t)(h * d + k));
    return 0;
}

static int setup_query(const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, cf_attn_io_t *io, cf_result_t *res)
{
    const int hq = c->num_q_heads, d = c->head_dim_qk;
    /* strided: q is the q part of a packed [T, Hq + 2 Hkv, D] qkv row */
    const int64_t tok_stride = c->strided ? (int64_t)(hq + 2 * c->num_kv_heads) * d : (int64_t)hq * d;
    unsigned char *host = NULL;
    size_t bytes = 0;
    void *p = NULL;
    int rc = make_query(c, rng, io, tok_stride, &host, &bytes);
    if (rc != 0)
        cf_result_fail(res, "checker: out of host memory");
    else
        rc = upload(dev, host, bytes, &p, "query upload", res);
    free(host);
    const int64_t shape[3] = {io->T, hq, d}, strides[3] = {tok_stride, d, 1};
    cf_tensor(&io->q, p, cf_dtype_attnrt(c->q_dtype), 3, shape, strides);
    return rc;
}

/* out as first poisoned, LSE all NaN, uploaded over the device copies. */
static int poison_outputs(const cf_case_t *c, cf_dev_t *dev, cf_attn_io_t *io, cf_result_t *res)
{
    const size_t rows = io->lse_alloc_elems;
    float *lse = malloc(sizeof(float) * (rows + 1));
    if (!lse) {
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < rows; i++) lse[i] = NAN;
    attnrt_status_t st = ATTNRT_OK;
    if (io->out_alloc_elems)
        st = attnrt_mem_copy_to_device(dev->ctx, io->out.data, io->out_init,
                                       io->out_alloc_elems * cf_dtype_size(c->out_dtype), NULL);
    if (st == ATTNRT_OK && c->lse && rows)
        st = attnrt_mem_copy_to_device(dev->ctx, io->lse.data, lse, rows * sizeof(float), NULL);
    free(lse);
    return cf_check_status(st, "attnrt_mem_copy_to_device (poisoning the outputs)", res) ? 0 : -1;
}

int cf_attn_io_next_layer(const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, cf_attn_io_t *io, cf_result_t *res)
{
    unsigned char *host = NULL;
    size_t bytes = 0;
    int rc = make_query(c, rng, io, io->q.strides[0], &host, &bytes);
    if (rc != 0) {
        cf_result_fail(res, "checker: out of host memory");
    } else if (bytes) {
        rc = cf_check_status(attnrt_mem_copy_to_device(dev->ctx, io->q.data, host, bytes, NULL),
                             "attnrt_mem_copy_to_device (next layer's query)", res) ? 0 : -1;
    }
    free(host);
    return rc != 0 ? rc : poison_outputs(c, dev, io, res);
}

static int setup_outputs(const cf_case_t *c, cf_dev_t *dev, cf_attn_io_t *io, cf_result_t *res)
{
    const int hq = c->num_q_heads, dv = c->head_dim_v;
    const int64_t tok_stride = c->strided ? (int64_t)hq * dv + dv / 2 + 3 : (int64_t)hq * dv;
    io->out_alloc_elems = (size_t)io->T * (size_t)tok_stride;
    const size_t es = cf_dtype_size(c->out_dtype), rows = (size_t)io->T * (size_t)hq;
    io->out_init = malloc(io->out_alloc_elems * es + 1);
    io->out_got = malloc(sizeof(double) * (rows * (size_t)dv + 1));
    io->ref_out = malloc(sizeof(double) * (rows * (size_t)dv + 1));
    io->lse_got = malloc(sizeof(double) * (rows + 1));
    io->ref_lse = malloc(sizeof(double) * (rows + 1));
    if (!io->out_init || !io->out_got || !io->ref_out || !io->lse_got || !io->ref_lse) {
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < io->out_alloc_elems; i++) {
        const int in_view = (int64_t)(i % (size_t)tok_stride) < (int64_t)hq * dv;
        if (in_view)
            cf_poison(c->out_dtype, io->out_init, i);
        else
            cf_encode(c->out_dtype, SENTINEL, io->out_init, i);
    }
    void *p = NULL;
    if (upload(dev, io->out_init, io->out_alloc_elems * es, &p, "out upload", res) != 0) return -1;
    const int64_t shape[3] = {io->T, hq, dv}, strides[3] = {tok_stride, dv, 1};
    cf_tensor(&io->out, p, cf_dtype_attnrt(c->out_dtype), 3, shape, strides);
    if (!c->lse) return 0;

    io->lse_alloc_elems = rows;
    float *lse = malloc(sizeof(float) * (rows + 1));
    if (!lse) {
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < rows; i++) lse[i] = NAN;
    int rc = upload(dev, lse, rows * sizeof(float), &p, "lse upload", res);
    free(lse);
    /* strided: LSE stored head-major [Hq, T], as some kernels produce it */
    const int64_t lshape[2] = {io->T, hq};
    const int64_t lstrides[2] = {c->strided ? 1 : hq, c->strided ? io->T : 1};
    cf_tensor(&io->lse, p, ATTNRT_F32, 2, lshape, lstrides);
    return rc;
}

static int setup_heads(const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, cf_attn_io_t *io, cf_result_t *res)
{
    const int hq = c->num_q_heads;
    const int64_t shape[1] = {hq};
    float vals[256];
    void *p = NULL;
    if (c->alibi) {
        for (int h = 0; h < hq; h++) vals[h] = (float)cf_rng_range(rng, 0.01, 0.3);
        for (int h = 0; h < hq; h++) io->alibi[h] = vals[h];
        if (upload(dev, vals, sizeof(float) * (size_t)hq, &p, "alibi_slopes upload", res) != 0) return -1;
        cf_tensor_contig(&io->alibi_t, p, ATTNRT_F32, 1, shape);
    }
    if (c->sinks) {
        /* around ln(keys per row), where the sink takes a sizeable share of the denominator (a sink far
         * below the row's log-sum would make a plugin that drops it indistinguishable) */
        double keys = 1.0;
        for (int b = 0; b < c->num_seqs; b++) keys += (double)(c->kv_lens[b] + c->prefix_len) / c->num_seqs;
        for (int h = 0; h < hq; h++) vals[h] = (float)(log(keys) + cf_rng_range(rng, -1.0, 2.0));
        for (int h = 0; h < hq; h++) io->sinks[h] = vals[h];
        if (upload(dev, vals, sizeof(float) * (size_t)hq, &p, "sinks upload", res) != 0) return -1;
        cf_tensor_contig(&io->sinks_t, p, ATTNRT_F32, 1, shape);
    }
    return 0;
}

int cf_attn_io_setup(const cf_case_t *c, cf_dev_t *dev, cf_rng_t *rng, const cf_cache_t *cache, cf_attn_io_t *io,
                     cf_result_t *res)
{
    memset(io, 0, sizeof *io);
    io->B = c->num_seqs;
    io->qsl[0] = 0;
    for (int b = 0; b < io->B; b++) {
        io->qsl[b + 1] = io->qsl[b] + c->q_lens[b];
        io->seq_lens[b] = c->kv_lens[b];
    }
    io->T = io->qsl[io->B];
    io->scale = c->scale > 0 ? (double)c->scale : 1.0 / sqrt((double)c->head_dim_qk);
    if (c->num_q_heads > 256) {
        cf_result_fail(res, "checker: more than 256 query heads");
        return -1;
    }
    if (setup_query(c, dev, rng, io, res) || setup_outputs(c, dev, io, res) || setup_heads(c, dev, rng, io, res))
        return -1;

    void *p = NULL;
    const int64_t bt_shape[2] = {io->B, cache->max_blocks}, b1[1] = {io->B + 1}, b0[1] = {io->B};
    if (upload(dev, cache->block_table, sizeof(int32_t) * (size_t)io->B * (size_t)cache->max_blocks, &p,
               "block_table upload", res))
        return -1;
    cf_tensor_contig(&io->block_table, p, ATTNRT_I32, 2, bt_shape);
    if (upload(dev, io->qsl, sizeof(int32_t) * (size_t)(io->B + 1), &p, "query_start_loc upload", res)) return -1;
    cf_tensor_contig(&io->query_start_loc, p, ATTNRT_I32, 1, b1);
    if (upload(dev, io->seq_lens, sizeof(int32_t) * (size_t)io->B, &p, "seq_lens upload", res)) return -1;
    cf_tensor_contig(&io->seq_lens_t, p, ATTNRT_I32, 1, b0);

    attnrt_attention_args_t *a = &io->args;
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->query = &io->q;
    a->key_cache = &cache->k;
    a->value_cache = &cache->v;
    a->block_table = &io->block_table;
    a->query_start_loc = &io->query_start_loc;
    a->seq_lens = &io->seq_lens_t;
    a->out = &io->out;
    a->lse = c->lse ? &io->lse : NULL;
    a->alibi_slopes = c->alibi ? &io->alibi_t : NULL;
    a->sinks = c->sinks ? &io->sinks_t : NULL;
    a->key_scale = cache->fp8 ? &cache->k_scale : NULL;
    a->value_scale = cache->fp8 ? &cache->v_scale : NULL;
    a->scale = c->scale;
    a->softcap = c->softcap;
    a->causal = c->causal;
    a->sliding_window_left = c->window_left + 1; /* the case keeps inclusive counts, -1 unlimited */
    a->sliding_window_right = c->window_right + 1;

    io->batch.struct_size = sizeof io->batch;
    io->batch.num_seqs = io->B;
    io->batch.query_start_loc = io->qsl;
    io->batch.seq_lens = io->seq_lens;
    io->batch.block_table = cache->block_table;
    io->batch.block_table_stride = cache->max_blocks;
    return 0;
}

void cf_attn_io_problem(const cf_case_t *c, const cf_attn_io_t *io, const cf_cache_t *cache, ref_attention_problem *p)
{
    memset(p, 0, sizeof *p);
    p->num_seqs = io->B;
    p->query_start_loc = io->qsl;
    p->seq_lens = io->seq_lens;
    p->num_q_heads = c->num_q_heads;
    p->num_kv_heads = c->num_kv_heads;
    p->head_dim_qk = c->head_dim_qk;
    p->head_dim_v = c->head_dim_v;
    p->q = io->q_ref;
    p->k_cache = cache->k_deq;
    p->v_cache = cache->v_deq;
    p->num_blocks = cache->num_blocks;
    p->block_size = c->block_size;
    p->block_table = cache->block_table;
    p->max_blocks_per_seq = cache->max_blocks;
    p->scale = io->scale;
    p->causal = c->causal;
    p->window_left = c->window_left;
    p->window_right = c->window_right;
    p->softcap = (double)c->softcap; /* the float the device gets, widened */
    p->alibi_slopes = c->alibi ? io->alibi : NULL;
    p->sinks = c->sinks ? io->sinks : NULL;
    p->out = io->ref_out;
    p->lse = io->ref_lse;
}

void cf_attn_io_judge(const cf_case_t *c, cf_dev_t *dev, cf_attn_io_t *io, int layer, int corrupt, cf_result_t *res)
{
    const char *out_name = layer ? "out (the plan's second run)" : "out";
    const char *lse_name = layer ? "lse (the plan's second run)" : "lse";
    const int hq = c->num_q_heads, dv = c->head_dim_v;
    const size_t es = cf_dtype_size(c->out_dtype), rows = (size_t)io->T * (size_t)hq;
    unsigned char *got = malloc(io->out_alloc_elems * es + 1);
    float *lse = malloc(sizeof(float) * (io->lse_alloc_elems + 1));
    if (!got || !lse) {
        cf_result_fail(res, "checker: out of host memory");
        goto done;
    }
    if (cf_dev_download(dev, got, io->out.data, io->out_alloc_elems * es, "out download") ||
        (c->lse && cf_dev_download(dev, lse, io->lse.data, io->lse_alloc_elems * sizeof(float), "lse download"))) {
        cf_result_fail(res, "%s", dev->error);
        goto done;
    }
    const int64_t *os = io->out.strides;
    for (size_t i = 0; i < io->out_alloc_elems; i++)
        if ((int64_t)(i % (size_t)os[0]) >= (int64_t)hq * dv && cf_bits(c->out_dtype, got, i) != cf_bits(c->out_dtype, io->out_init, i)) {
            cf_result_fail(res, "%s: element %zu of its allocation lies between rows (token stride %lld) but was "
                           "overwritten: strides ignored", out_name, i, (long long)os[0]);
            goto done;
        }
    for (int t = 0; t < io->T; t++)
        for (int h = 0; h < hq; h++) {
            for (int d = 0; d < dv; d++)
                io->out_got[((size_t)t * hq + h) * dv + d] =
                    cf_decode(c->out_dtype, got, (size_t)(t * os[0] + h * os[1] + d));
            if (c->lse) io->lse_got[(size_t)t * hq + h] = lse[t * io->lse.strides[0] + h * io->lse.strides[1]];
        }
    if (corrupt) res->corrupted = cf_corrupt_output(io->out_got, io->ref_out, rows * (size_t)dv);
    const cf_dtype_t dts[3] = {c->q_dtype, c->out_dtype, c->kv_dtype};
    res->tolerance = cf_tolerance_of(dts, 3);
    cf_compare_out(out_name, io->out_got, io->ref_out, io->ref_lse, (size_t)io->T, (size_t)hq, (size_t)dv, res->tolerance,
                   cf_dtype_min_normal(c->out_dtype), res);
    if (c->lse) cf_compare_lse(lse_name, io->lse_got, io->ref_lse, (size_t)io->T, (size_t)hq, res->tolerance, res);
done:
    free(got);
    free(lse);
}

void cf_attn_io_free(cf_attn_io_t *io)
{
    free(io->q_ref);
    free(io->out_init);
    free(io->out_got);
    free(io->lse_got);
    free(io->ref_out);
    free(io->ref_lse);
}
