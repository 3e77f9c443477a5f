/* test_dlpack: attnrt_tensor_from_dlpack on cpu:0 (and npu_sim:0 when built), with DLTensors built by hand.
 *   - ops over DLPack tensors: kv_write and paged attention with tensors at byte offsets inside attnrt_mem_alloc'd
 *     and plain malloc'd buffers (HND caches through explicit strides), checked against the float64 reference,
 *     and the bytes around each output unchanged;
 *   - the mapping: NULL strides -> compact row-major, explicit strides kept, ndim 0 -> [1], fp8 codes, uint8;
 *   - refusals, each with a message naming the field and value and *t left as it was: NULL arguments, negative
 *     strides and shapes, lanes 2, unknown dtypes, ndim 7 and -1, another device type or id (naming both), NULL
 *     shape, NULL data with an offset. Inputs are fresh random numbers each run (the seed is printed). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "attnrt_dlpack.h"
#include "reference.h"

#define assert_status(call, expected)                                                                      \
    do {                                                                                                   \
        attnrt_status_t got_ = (call);                                                                     \
        if (got_ != (expected))                                                                            \
            fail_msg("%s returned %s, expected %s: %s", #call, attnrt_status_name(got_),                  \
                     attnrt_status_name(expected), attnrt_last_error());                                   \
    } while (0)
#define assert_ok(call) assert_status(call, ATTNRT_OK)

static void assert_error_has(const char *needle)
{
    if (!strstr(attnrt_last_error(), needle)) fail_msg("message \"%s\" lacks \"%s\"", attnrt_last_error(), needle);
}

static uint64_t g_seed, g_rng;
static double rnd(void) /* [-1, 1) */
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static attnrt_context_t *open_named(const char *name)
{
    attnrt_context_t *ctx = NULL;
    assert_ok(attnrt_open(name, &ctx));
    return ctx;
}

static DLTensor dl_tensor(void *data, uint64_t byte_offset, uint8_t code, uint8_t bits, int32_t ndim, int64_t *shape,
                          int64_t *strides)
{
    DLTensor dl;
    memset(&dl, 0, sizeof dl);
    dl.data = data;
    dl.byte_offset = byte_offset;
    dl.device.device_type = kDLCPU;
    dl.device.device_id = 0;
    dl.dtype.code = code;
    dl.dtype.bits = bits;
    dl.dtype.lanes = 1;
    dl.ndim = ndim;
    dl.shape = shape;
    dl.strides = strides;
    return dl;
}

static attnrt_tensor_t from_dl(attnrt_context_t *ctx, const DLTensor *dl)
{
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    assert_ok(attnrt_tensor_from_dlpack(ctx, dl, &t));
    return t;
}

/* A refusal with INVALID_ARGUMENT whose message has `needle`, and *t as it was. */
static void assert_refused(attnrt_context_t *ctx, const DLTensor *dl, const char *needle)
{
    attnrt_tensor_t t, before;
    memset(&t, 0xab, sizeof t);
    before = t;
    assert_status(attnrt_tensor_from_dlpack(ctx, dl, &t), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_tensor_from_dlpack: ");
    assert_error_has(needle);
    assert_memory_equal(&t, &before, sizeof t);
}

/* ---- ops on DLPack tensors ---------------------------------------------------------------------------------- */

enum { KV_T = 5, KV_H = 2, KV_D = 8, KV_BS = 4, KV_BLOCKS = 3 };

/* key / value at byte offsets into malloc'd buffers, the caches at a byte offset into an attnrt_mem_alloc'd one: the
 * caches must equal the reference's kv_write of the same initial contents, and no byte before or after move. */
static void kv_write_honours_byte_offsets(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("cpu:0");
    const size_t kv_elems = (size_t)KV_T * KV_H * KV_D, cache_elems = (size_t)KV_BLOCKS * KV_BS * KV_H * KV_D;
    const uint64_t kv_off = 3 * sizeof(float), cache_off = 64, slot_off = 2 * sizeof(int64_t);
    const size_t cache_buf_bytes = cache_off + 2 * cache_elems * sizeof(float) + 64; /* K then V, then a tail */

    float *kbuf = malloc(kv_off + kv_elems * sizeof(float)), *vbuf = malloc(kv_off + kv_elems * sizeof(float));
    int64_t *slot_buf = malloc(slot_off + KV_T * sizeof(int64_t));
    unsigned char *host_cache = malloc(cache_buf_bytes), *after = malloc(cache_buf_bytes);
    double *k = malloc(kv_elems * sizeof(double)), *v = malloc(kv_elems * sizeof(double));
    double *kc = malloc(cache_elems * sizeof(double)), *vc = malloc(cache_elems * sizeof(double));
    assert_true(kbuf && vbuf && slot_buf && host_cache && after && k && v && kc && vc);

    for (size_t i = 0; i < kv_elems; i++) {
        k[i] = (float)rnd(), v[i] = (float)rnd();
        float kf = (float)k[i], vf = (float)v[i];
        memcpy((char *)kbuf + kv_off + i * sizeof(float), &kf, sizeof kf);
        memcpy((char *)vbuf + kv_off + i * sizeof(float), &vf, sizeof vf);
    }
    memset(kbuf, 0xff, kv_off); /* NaN bytes: read only if the offset were ignored */
    memset(vbuf, 0xff, kv_off);
    for (size_t i = 0; i < cache_buf_bytes; i++) host_cache[i] = (unsigned char)(128.0 + 127.0 * rnd());
    float *hk = (float *)(host_cache + cache_off), *hv = hk + cache_elems;
    for (size_t i = 0; i < cache_elems; i++) hk[i] = (float)rnd(), hv[i] = (float)rnd(), kc[i] = hk[i], vc[i] = hv[i];
    /* distinct slots in shuffled blocks, one padding row */
    const int64_t slots[KV_T] = {2 * KV_BS + 1, 0 * KV_BS + 3, -1, 1 * KV_BS + 0, 2 * KV_BS + 2};
    memset(slot_buf, 0x7f, slot_off);
    memcpy((char *)slot_buf + slot_off, slots, sizeof slots);

    void *dev = NULL;
    assert_ok(attnrt_mem_alloc(ctx, cache_buf_bytes, &dev));
    assert_ok(attnrt_mem_copy_to_device(ctx, dev, host_cache, cache_buf_bytes, NULL));

    int64_t s_kv[3] = {KV_T, KV_H, KV_D}, s_slots[1] = {KV_T}, s_cache[4] = {KV_BLOCKS, KV_BS, KV_H, KV_D};
    DLTensor dk = dl_tensor(kbuf, kv_off, kDLFloat, 32, 3, s_kv, NULL);
    DLTensor dv = dl_tensor(vbuf, kv_off, kDLFloat, 32, 3, s_kv, NULL);
    DLTensor ds = dl_tensor(slot_buf, slot_off, kDLInt, 64, 1, s_slots, NULL);
    DLTensor dkc = dl_tensor(dev, cache_off, kDLFloat, 32, 4, s_cache, NULL);
    DLTensor dvc = dl_tensor(dev, cache_off + cache_elems * sizeof(float), kDLFloat, 32, 4, s_cache, NULL);
    attnrt_tensor_t tk = from_dl(ctx, &dk), tv = from_dl(ctx, &dv), ts = from_dl(ctx, &ds);
    attnrt_tensor_t tkc = from_dl(ctx, &dkc), tvc = from_dl(ctx, &dvc);
    assert_ptr_equal(tk.data, (char *)kbuf + kv_off);
    assert_ptr_equal(tkc.data, (char *)dev + cache_off);

    attnrt_kv_write_args_t args = {.struct_size = sizeof args};
    args.key = &tk, args.value = &tv, args.slot_mapping = &ts, args.key_cache = &tkc, args.value_cache = &tvc;
    args.slot_mapping_host = slots;
    assert_ok(attnrt_kv_write(ctx, &args, NULL));
    assert_ok(attnrt_mem_copy_to_host(ctx, after, dev, cache_buf_bytes, NULL));

    ref_kv_write(KV_T, KV_H, KV_D, KV_D, k, v, slots, KV_BS, kc, vc);
    const float *ak = (const float *)(after + cache_off), *av = ak + cache_elems;
    for (size_t i = 0; i < cache_elems; i++) {
        if ((double)ak[i] != kc[i] || (double)av[i] != vc[i])
            fail_msg("cache element %zu: key %g (expected %g), value %g (expected %g); seed %llu", i, (double)ak[i],
                     kc[i], (double)av[i], vc[i], (unsigned long long)g_seed);
    }
    assert_memory_equal(after, host_cache, cache_off); /* before the caches */
    assert_memory_equal(after + cache_off + 2 * cache_elems * sizeof(float),
                        host_cache + cache_off + 2 * cache_elems * sizeof(float), 64); /* after them */

    assert_ok(attnrt_mem_free(ctx, dev));
    assert_ok(attnrt_close(ctx));
    free(kbuf), free(vbuf), free(slot_buf), free(host_cache), free(after), free(k), free(v), free(kc), free(vc);
}

enum { A_B = 2, A_T = 4, A_HQ = 4, A_HKV = 2, A_D = 16, A_BS = 4, A_BLOCKS = 6, A_MAXB = 2 };

/* Paged attention over DLPack tensors: the query at an offset into a malloc'd buffer, HND caches (explicit strides)
 * at an offset into an attnrt_mem_alloc'd one, the metadata with and without offsets, out at an offset into another
 * attnrt_mem_alloc'd buffer poisoned with NaN: out equals the float64 reference, the bytes around it are untouched. */
static void attention_over_dlpack_tensors_matches_the_reference(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("cpu:0");
    const int32_t qsl[A_B + 1] = {0, 3, 4}, seq_lens[A_B] = {7, 5};
    const int32_t table[A_B * A_MAXB] = {3, 0, 5, 2};
    const size_t q_elems = (size_t)A_T * A_HQ * A_D, cache_elems = (size_t)A_BLOCKS * A_BS * A_HKV * A_D;
    const uint64_t q_off = 5 * sizeof(float), cache_off = 256, out_off = 128, qsl_off = 2 * sizeof(int32_t);
    const size_t out_buf = out_off + q_elems * sizeof(float) + 96, cache_buf = cache_off + 2 * cache_elems * 4;

    float *qbuf = malloc(q_off + q_elems * sizeof(float));
    int32_t *qsl_buf = malloc(qsl_off + sizeof qsl);
    float *hcache = malloc(cache_buf);
    unsigned char *out_host = malloc(out_buf), *poison = malloc(out_buf);
    double *q = malloc(q_elems * sizeof(double)), *kref = malloc(cache_elems * sizeof(double));
    double *vref = malloc(cache_elems * sizeof(double)), *ref_out = malloc(q_elems * sizeof(double));
    assert_true(qbuf && qsl_buf && hcache && out_host && poison && q && kref && vref && ref_out);

    memset(qbuf, 0xff, q_off);
    for (size_t i = 0; i < q_elems; i++) {
        float f = (float)rnd();
        q[i] = f;
        memcpy((char *)qbuf + q_off + i * sizeof(float), &f, sizeof f);
    }
    memset(qsl_buf, 0x7f, qsl_off);
    memcpy((char *)qsl_buf + qsl_off, qsl, sizeof qsl);
    /* HND: [blocks, Hkv, block_size, D] in memory; the logical shape stays [blocks, block_size, Hkv, D] */
    int64_t hnd_strides[4] = {(int64_t)A_HKV * A_BS * A_D, A_D, (int64_t)A_BS * A_D, 1};
    memset(hcache, 0xff, cache_off);
    float *hk = (float *)((char *)hcache + cache_off), *hv = hk + cache_elems;
    for (int b = 0; b < A_BLOCKS; b++)
        for (int r = 0; r < A_BS; r++)
            for (int h = 0; h < A_HKV; h++)
                for (int d = 0; d < A_D; d++) {
                    size_t mem = (size_t)(b * hnd_strides[0] + r * hnd_strides[1] + h * hnd_strides[2] + d);
                    size_t nhd = (((size_t)b * A_BS + r) * A_HKV + h) * A_D + d;
                    hk[mem] = (float)rnd(), hv[mem] = (float)rnd();
                    kref[nhd] = hk[mem], vref[nhd] = hv[mem];
                }
    memset(poison, 0xff, out_buf);

    void *dcache = NULL, *dout = NULL;
    assert_ok(attnrt_mem_alloc(ctx, cache_buf, &dcache));
    assert_ok(attnrt_mem_alloc(ctx, out_buf, &dout));
    assert_ok(attnrt_mem_copy_to_device(ctx, dcache, hcache, cache_buf, NULL));
    assert_ok(attnrt_mem_copy_to_device(ctx, dout, poison, out_buf, NULL));

    int64_t s_q[3] = {A_T, A_HQ, A_D}, s_cache[4] = {A_BLOCKS, A_BS, A_HKV, A_D}, s_bt[2] = {A_B, A_MAXB};
    int64_t s_qsl[1] = {A_B + 1}, s_b[1] = {A_B};
    DLTensor dq = dl_tensor(qbuf, q_off, kDLFloat, 32, 3, s_q, NULL);
    DLTensor dkc = dl_tensor(dcache, cache_off, kDLFloat, 32, 4, s_cache, hnd_strides);
    DLTensor dvc = dl_tensor(dcache, cache_off + cache_elems * 4, kDLFloat, 32, 4, s_cache, hnd_strides);
    DLTensor dbt = dl_tensor((void *)table, 0, kDLInt, 32, 2, s_bt, NULL);
    DLTensor dqsl = dl_tensor(qsl_buf, qsl_off, kDLInt, 32, 1, s_qsl, NULL);
    DLTensor dsl = dl_tensor((void *)seq_lens, 0, kDLInt, 32, 1, s_b, NULL);
    DLTensor dout_dl = dl_tensor(dout, out_off, kDLFloat, 32, 3, s_q, NULL);
    attnrt_tensor_t tq = from_dl(ctx, &dq), tkc = from_dl(ctx, &dkc), tvc = from_dl(ctx, &dvc);
    attnrt_tensor_t tbt = from_dl(ctx, &dbt), tqsl = from_dl(ctx, &dqsl), tsl = from_dl(ctx, &dsl);
    attnrt_tensor_t tout = from_dl(ctx, &dout_dl);
    assert_memory_equal(tkc.strides, hnd_strides, sizeof hnd_strides);

    attnrt_attention_args_t args = {.struct_size = sizeof args};
    args.query = &tq, args.key_cache = &tkc, args.value_cache = &tvc, args.block_table = &tbt;
    args.query_start_loc = &tqsl, args.seq_lens = &tsl, args.out = &tout, args.causal = 1;
    attnrt_batch_host_t batch = {.struct_size = sizeof batch};
    batch.num_seqs = A_B, batch.query_start_loc = qsl, batch.seq_lens = seq_lens, batch.block_table = table;
    batch.block_table_stride = A_MAXB;
    attnrt_plan_t *plan = NULL;
    assert_ok(attnrt_attention_plan(ctx, &args, &batch, &plan));
    size_t ws = 0;
    assert_ok(attnrt_plan_workspace_size(plan, &ws));
    assert_int_equal(ws, 0);
    assert_ok(attnrt_attention_run(plan, &args, NULL, 0, NULL));
    assert_ok(attnrt_plan_destroy(plan));
    assert_ok(attnrt_mem_copy_to_host(ctx, out_host, dout, out_buf, NULL));

    ref_attention_problem p;
    memset(&p, 0, sizeof p);
    p.num_seqs = A_B, p.query_start_loc = qsl, p.seq_lens = seq_lens, p.num_q_heads = A_HQ, p.num_kv_heads = A_HKV;
    p.head_dim_qk = A_D, p.head_dim_v = A_D, p.q = q, p.k_cache = kref, p.v_cache = vref, p.num_blocks = A_BLOCKS;
    p.block_size = A_BS, p.block_table = table, p.max_blocks_per_seq = A_MAXB, p.scale = 1.0 / sqrt((double)A_D);
    p.causal = 1, p.window_left = -1, p.window_right = -1, p.out = ref_out;
    ref_paged_attention(&p);
    double worst = 0.0;
    for (size_t i = 0; i < q_elems; i++) {
        float got;
        memcpy(&got, out_host + out_off + i * sizeof(float), sizeof got);
        double err = fabs((double)got - ref_out[i]);
        if (!(err <= 1e-5)) fail_msg("out[%zu] = %g, reference %g (seed %llu)", i, (double)got, ref_out[i],
                                     (unsigned long long)g_seed);
        if (err > worst) worst = err;
    }
    assert_memory_equal(out_host, poison, out_off);
    assert_memory_equal(out_host + out_off + q_elems * sizeof(float), poison, 96);

    assert_ok(attnrt_mem_free(ctx, dcache));
    assert_ok(attnrt_mem_free(ctx, dout));
    assert_ok(attnrt_close(ctx));
    free(qbuf), free(qsl_buf), free(hcache), free(out_host), free(poison), free(q), free(kref), free(vref);
    free(ref_out);
}

/* ---- the mapping ------------------------------------------------------------------------------------------- */

static void strides_shapes_and_dtypes_map(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("cpu:0");
    float buf[64];

    int64_t shape[3] = {2, 3, 4};
    DLTensor dl = dl_tensor(buf, 8, kDLFloat, 32, 3, shape, NULL);
    attnrt_tensor_t t = from_dl(ctx, &dl);
    assert_int_equal(t.struct_size, sizeof t);
    assert_ptr_equal(t.data, (char *)buf + 8);
    assert_int_equal(t.ndim, 3);
    assert_int_equal(t.shape[0], 2), assert_int_equal(t.shape[1], 3), assert_int_equal(t.shape[2], 4);
    assert_int_equal(t.strides[0], 12), assert_int_equal(t.strides[1], 4), assert_int_equal(t.strides[2], 1);
    assert_string_equal(attnrt_dtype_name(t.dtype), "f32");

    int64_t cm_shape[2] = {3, 5}, cm_strides[2] = {1, 3}; /* column-major, and a broadcast (stride 0) dim */
    dl = dl_tensor(buf, 0, kDLBfloat, 16, 2, cm_shape, cm_strides);
    t = from_dl(ctx, &dl);
    assert_int_equal(t.strides[0], 1), assert_int_equal(t.strides[1], 3);
    assert_string_equal(attnrt_dtype_name(t.dtype), "bf16");
    int64_t bc_strides[2] = {0, 1};
    dl = dl_tensor(buf, 0, kDLFloat, 16, 2, cm_shape, bc_strides);
    t = from_dl(ctx, &dl);
    assert_int_equal(t.strides[0], 0);
    assert_string_equal(attnrt_dtype_name(t.dtype), "f16");

    dl = dl_tensor(buf, 4, kDLFloat, 32, 0, NULL, NULL); /* a scalar: shape may be NULL */
    t = from_dl(ctx, &dl);
    assert_int_equal(t.ndim, 1), assert_int_equal(t.shape[0], 1), assert_int_equal(t.strides[0], 1);
    assert_ptr_equal(t.data, (char *)buf + 4);

    int64_t six[6] = {1, 2, 1, 2, 1, 2}, one[1] = {16};
    dl = dl_tensor(buf, 0, kDLInt, 32, 6, six, NULL);
    t = from_dl(ctx, &dl);
    assert_int_equal(t.ndim, 6), assert_int_equal(t.strides[0], 8), assert_int_equal(t.strides[5], 1);

    /* fp8 as DLPack 1.1 numbers it; a uint8 cache becomes fp8 by setting the dtype afterwards */
    dl = dl_tensor(buf, 0, 10, 8, 1, one, NULL);
    assert_string_equal(attnrt_dtype_name(from_dl(ctx, &dl).dtype), "fp8_e4m3");
    dl = dl_tensor(buf, 0, 12, 8, 1, one, NULL);
    assert_string_equal(attnrt_dtype_name(from_dl(ctx, &dl).dtype), "fp8_e5m2");
    dl = dl_tensor(buf, 0, kDLUInt, 8, 1, one, NULL);
    t = from_dl(ctx, &dl);
    assert_string_equal(attnrt_dtype_name(t.dtype), "u8");
    t.dtype = ATTNRT_FP8_E4M3;
    assert_int_equal(attnrt_dtype_size(t.dtype), 1);
    dl = dl_tensor(buf, 0, 6, 8, 1, one, NULL); /* kDLBool (DLPack 0.8) */
    assert_string_equal(attnrt_dtype_name(from_dl(ctx, &dl).dtype), "bool");
    dl = dl_tensor(buf, 0, kDLInt, 64, 1, one, NULL);
    assert_string_equal(attnrt_dtype_name(from_dl(ctx, &dl).dtype), "i64");

    /* NULL data (a plan's tensors) stays NULL; an empty dimension is fine */
    int64_t empty[2] = {0, 4};
    dl = dl_tensor(NULL, 0, kDLFloat, 32, 2, empty, NULL);
    t = from_dl(ctx, &dl);
    assert_null(t.data);
    assert_int_equal(t.shape[0], 0), assert_int_equal(t.strides[0], 4);

    /* managed CUDA memory is not the cpu's either */
    dl = dl_tensor(buf, 0, kDLFloat, 32, 1, one, NULL);
    dl.device.device_type = kDLCUDAManaged;
    assert_refused(ctx, &dl, "dl->device is kDLCUDAManaged 0");
    assert_ok(attnrt_close(ctx));
}

/* ---- refusals ---------------------------------------------------------------------------------------------- */

static void bad_tensors_are_refused_naming_the_field(void **state)
{
    (void)state;
    attnrt_context_t *ctx = open_named("cpu:0");
    float buf[64];
    int64_t shape[2] = {4, 4};
    attnrt_tensor_t t;
    DLTensor dl = dl_tensor(buf, 0, kDLFloat, 32, 2, shape, NULL);

    assert_status(attnrt_tensor_from_dlpack(NULL, &dl, &t), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_tensor_from_dlpack: ctx is NULL");
    assert_status(attnrt_tensor_from_dlpack(ctx, NULL, &t), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_tensor_from_dlpack: dl is NULL");
    assert_status(attnrt_tensor_from_dlpack(ctx, &dl, NULL), ATTNRT_ERR_INVALID_ARGUMENT);
    assert_error_has("attnrt_tensor_from_dlpack: t is NULL");

    int64_t neg_strides[2] = {4, -1};
    dl = dl_tensor(buf, 0, kDLFloat, 32, 2, shape, neg_strides);
    assert_refused(ctx, &dl, "dl->strides[1] = -1 < 0");

    int64_t neg_shape[2] = {4, -2};
    dl = dl_tensor(buf, 0, kDLFloat, 32, 2, neg_shape, NULL);
    assert_refused(ctx, &dl, "dl->shape[1] = -2 < 0");

    dl = dl_tensor(buf, 0, kDLFloat, 32, 2, shape, NULL);
    dl.dtype.lanes = 2;
    assert_refused(ctx, &dl, "lanes = 2");
    dl = dl_tensor(buf, 0, kDLFloat, 64, 2, shape, NULL); /* f64: not a dtype libattnrt takes */
    assert_refused(ctx, &dl, "{code 2, bits 64, lanes 1} (a dtype libattnrt does not know)");
    dl = dl_tensor(buf, 0, 5, 64, 2, shape, NULL); /* kDLComplex */
    assert_refused(ctx, &dl, "does not know");

    int64_t seven[7] = {1, 1, 1, 1, 1, 1, 1};
    dl = dl_tensor(buf, 0, kDLFloat, 32, 7, seven, NULL);
    assert_refused(ctx, &dl, "dl->ndim = 7, expected 0..6");
    dl = dl_tensor(buf, 0, kDLFloat, 32, -1, seven, NULL);
    assert_refused(ctx, &dl, "dl->ndim = -1");
    dl = dl_tensor(buf, 0, kDLFloat, 32, 2, NULL, NULL);
    assert_refused(ctx, &dl, "dl->shape is NULL");
    dl = dl_tensor(NULL, 16, kDLFloat, 32, 2, shape, NULL);
    assert_refused(ctx, &dl, "dl->data is NULL with byte_offset 16");
    dl = dl_tensor(buf, UINT64_MAX - 2, kDLFloat, 32, 2, shape, NULL);
    assert_refused(ctx, &dl, "wraps the address space");
    int64_t huge3[3] = {2, INT64_C(1) << 40, INT64_C(1) << 40};
    dl = dl_tensor(buf, 0, kDLFloat, 32, 3, huge3, NULL);
    assert_refused(ctx, &dl, "overflow int64");

    /* another device: the message names both */
    dl = dl_tensor(buf, 0, kDLFloat, 32, 2, shape, NULL);
    dl.device.device_type = kDLCUDA;
    assert_refused(ctx, &dl, "dl->device is kDLCUDA 0, but ctx is cpu:0 (kDLCPU 0)");
    dl.device.device_type = kDLCPU;
    dl.device.device_id = 1;
    assert_refused(ctx, &dl, "dl->device is kDLCPU 1, but ctx is cpu:0 (kDLCPU 0)");
    dl.device.device_type = (DLDeviceType)99;
    dl.device.device_id = 0;
    assert_refused(ctx, &dl, "dl->device is device type 99 0");
    assert_ok(attnrt_close(ctx));
}

/* npu_sim keeps its memory on the host: kDLCPU 0 and kDLExtDev 0 are its memory, kDLCUDA is not. */
static void npu_sim_takes_host_tensors(void **state)
{
    (void)state;
    uint32_t index = 0;
    if (attnrt_device_find("npu_sim:0", &index) != ATTNRT_OK) skip(); /* not built */
    attnrt_context_t *ctx = open_named("npu_sim:0");
    float buf[16];
    int64_t shape[1] = {16};
    DLTensor dl = dl_tensor(buf, 0, kDLFloat, 32, 1, shape, NULL);
    attnrt_tensor_t t = from_dl(ctx, &dl);
    assert_ptr_equal(t.data, buf);
    dl.device.device_type = kDLExtDev;
    t = from_dl(ctx, &dl);
    dl.device.device_id = 1;
    assert_refused(ctx, &dl, "dl->device is kDLExtDev 1, but ctx is npu_sim:0 (kDLExtDev 0, or kDLCPU 0: its memory "
                             "is host memory)");
    dl.device.device_type = kDLCUDA;
    dl.device.device_id = 0;
    assert_refused(ctx, &dl, "dl->device is kDLCUDA 0, but ctx is npu_sim:0");
    assert_ok(attnrt_close(ctx));
}

int main(void)
{
    g_seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    const char *seed = getenv("ATTNRT_TEST_SEED");
    if (seed && seed[0]) g_seed = strtoull(seed, NULL, 0);
    g_rng = g_seed ? g_seed : 1;
    printf("test_dlpack: seed %llu (ATTNRT_TEST_SEED repeats a run)\n", (unsigned long long)g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kv_write_honours_byte_offsets),
        cmocka_unit_test(attention_over_dlpack_tensors_matches_the_reference),
        cmocka_unit_test(strides_shapes_and_dtypes_map),
        cmocka_unit_test(bad_tensors_are_refused_naming_the_field),
        cmocka_unit_test(npu_sim_takes_host_tensors),
    };
    int failed = cmocka_run_group_tests_name("attnrt_tensor_from_dlpack", tests, NULL, NULL);
    attnrt_shutdown();
    return failed;
}
