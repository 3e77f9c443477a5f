/* npu_fixture.c — see npu_fixture.h. Device memory of npu_sim is host memory, but every transfer still
 * goes through the vtable's mem_copy, as an engine's would. */
#include "npu_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "reference.h"

const attnrt_plugin_api_t *attnrt_plugin_get_api(uint32_t host_abi_major, uint32_t host_abi_minor);

static char fx_message[1024];

const char *npu_fx_error(const npu_fx_t *fx)
{
    fx->api->last_error(fx_message, sizeof fx_message);
    return fx_message;
}

static void option(attnrt_device_attribute_t *o, const char *key, const char *value)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    snprintf(o->key, sizeof o->key, "%s", key);
    snprintf(o->value, sizeof o->value, "%s", value);
}

attnrt_status_t npu_fx_open(npu_fx_t *fx, const char *profile, const char *front_end)
{
    return npu_fx_open_kind(fx, profile, front_end, NULL);
}

attnrt_status_t npu_fx_open_kind(npu_fx_t *fx, const char *profile, const char *front_end, const char *model_kind)
{
    memset(fx, 0, sizeof *fx);
    fx->api = attnrt_plugin_get_api(ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR);
    if (!fx->api) return ATTNRT_ERR_PLUGIN;
    attnrt_host_api_t host = {sizeof host, ATTNRT_ABI_MAJOR, ATTNRT_ABI_MINOR, ATTNRT_LOG_WARN, NULL};
    attnrt_status_t st = fx->api->init(&host, &fx->plugin);
    if (st != ATTNRT_OK) return st;
    attnrt_device_attribute_t opts[3];
    uint32_t n = 0;
    if (profile) option(&opts[n++], "profile", profile);
    if (front_end) option(&opts[n++], "front_end", front_end);
    if (model_kind) option(&opts[n++], "model_kind", model_kind);
    st = fx->api->device_open_with_options(fx->plugin, 0, opts, n, &fx->dev);
    if (st != ATTNRT_OK) {
        fx->api->shutdown(fx->plugin);
        fx->plugin = NULL;
    }
    return st;
}

void npu_fx_close(npu_fx_t *fx)
{
    if (fx->dev) fx->api->device_close(fx->dev);
    if (fx->plugin) fx->api->shutdown(fx->plugin);
    memset(fx, 0, sizeof *fx);
}

void npu_case_defaults(npu_case_t *c)
{
    memset(c, 0, sizeof *c);
    c->profile = "rbln-rebel100";
    c->block_size = 512;
    c->cols = 2;
    c->num_seqs = 1;
    c->q_lens[0] = 1;
    c->kv_lens[0] = 1;
    c->hq = 4;
    c->hkv = 2;
    c->dqk = c->dv = 64;
    c->q_dtype = c->kv_dtype = ATTNRT_F16;
    c->causal = 1;
    c->window_left = -1;
}

static int is_fp8(attnrt_dtype_t dt) { return dc_kind_of(dt) == DC_E4M3 || dc_kind_of(dt) == DC_E5M2; }

double npu_case_tolerance(const npu_case_t *c)
{
    double t = 1e-5;
    const dc_kind_t kinds[2] = {dc_kind_of(c->q_dtype), dc_kind_of(c->kv_dtype)};
    for (int i = 0; i < 2; i++) {
        const double k = kinds[i] == DC_F16 ? 2e-3 : kinds[i] == DC_F32 ? 1e-5 : 1e-2;
        if (k > t) t = k;
    }
    return t;
}

/* xorshift64*: uniform in [-1, 1). */
static double rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1Dull) >> 11) * 0x1p-52 - 1.0;
}

typedef struct bufs {
    void *dev[16];
    int   n;
} bufs_t;

/* A device buffer holding `bytes` copied from host (or filled with `fill` when host is NULL). */
static void *upload(const npu_fx_t *fx, bufs_t *b, const void *host, size_t bytes, int fill)
{
    void *p = NULL;
    if (!bytes) bytes = 1;
    if (fx->api->mem_alloc(fx->dev, bytes, &p) != ATTNRT_OK) return NULL;
    b->dev[b->n++] = p;
    if (host)
        fx->api->mem_copy(fx->dev, p, host, bytes, ATTNRT_COPY_HOST_TO_DEVICE, NULL);
    else
        fx->api->mem_set(fx->dev, p, fill, bytes, NULL);
    return p;
}

static attnrt_tensor_t tensor(void *data, attnrt_dtype_t dt, int ndim, const int64_t *shape, const int64_t *strides)
{
    attnrt_tensor_t t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.data = data;
    t.dtype = dt;
    t.ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        t.shape[d] = shape[d];
        if (strides) {
            t.strides[d] = strides[d];
        } else {
            int64_t s = 1;
            for (int e = d + 1; e < ndim; e++) s *= shape[e];
            t.strides[d] = s;
        }
    }
    return t;
}

/* Random values in the activation dtype: host bytes (caller frees). */
static void *random_act(uint64_t *seed, attnrt_dtype_t dt, size_t n, double magnitude)
{
    float *f = malloc(sizeof(float) * (n + 1));
    void *bytes = malloc(dc_kind_size(dc_kind_of(dt)) * (n + 1));
    for (size_t i = 0; i < n; i++) f[i] = (float)(magnitude * rnd(seed));
    dc_row_from_f32(bytes, f, dc_kind_of(dt), n, 1.0f);
    free(f);
    return bytes;
}

/* Decodes n elements at dev (dtype dt, scale for fp8) into doubles. */
static void to_double(const void *src, attnrt_dtype_t dt, size_t n, float scale, double *out)
{
    float *f = malloc(sizeof(float) * (n + 1));
    dc_row_to_f32(f, src, dc_kind_of(dt), n, scale);
    for (size_t i = 0; i < n; i++) out[i] = (double)f[i];
    free(f);
}

typedef struct cache_view {
    int64_t shape[4], strides[4];
} cache_view_t;

static cache_view_t cache_view(const npu_case_t *c, int64_t num_blocks, int dim)
{
    cache_view_t v;
    const int64_t bs = c->block_size, H = c->hkv;
    v.shape[0] = num_blocks;
    v.shape[1] = bs;
    v.shape[2] = H;
    v.shape[3] = dim;
    v.strides[0] = bs * H * dim;
    v.strides[3] = 1;
    if (c->hnd) { /* [blocks, Hkv, block, D] by strides: the RBLN layout */
        v.strides[1] = dim;
        v.strides[2] = bs * dim;
    } else {
        v.strides[1] = H * dim;
        v.strides[2] = dim;
    }
    return v;
}

/* The cache's contents as doubles in NHD order [blocks, bs, Hkv, dim] (what the reference reads). */
static double *cache_doubles(const npu_fx_t *fx, const npu_case_t *c, const void *dev, const cache_view_t *v, float scale)
{
    const size_t es = dc_kind_size(dc_kind_of(c->kv_dtype));
    const size_t elems = (size_t)(v->shape[0] * v->shape[1] * v->shape[2] * v->shape[3]);
    unsigned char *host = malloc(elems * es + 1);
    fx->api->mem_copy(fx->dev, host, dev, elems * es, ATTNRT_COPY_DEVICE_TO_HOST, NULL);
    double *out = malloc(sizeof(double) * (elems + 1));
    for (int64_t b = 0; b < v->shape[0]; b++)
        for (int64_t r = 0; r < v->shape[1]; r++)
            for (int64_t h = 0; h < v->shape[2]; h++) {
                const size_t src = (size_t)(b * v->strides[0] + r * v->strides[1] + h * v->strides[2]);
                const size_t dst = (size_t)(((b * v->shape[1] + r) * v->shape[2] + h) * v->shape[3]);
                to_double(host + src * es, c->kv_dtype, (size_t)v->shape[3], scale, out + dst);
            }
    free(host);
    return out;
}

static void fail_msg(npu_result_t *r, attnrt_status_t st, const char *what, const npu_fx_t *fx)
{
    r->status = st;
    snprintf(r->message, sizeof r->message, "%s: %.700s", what, npu_fx_error(fx));
}

int npu_run_case(const npu_case_t *c, npu_result_t *res)
{
    memset(res, 0, sizeof *res);
    npu_fx_t fx;
    attnrt_status_t st = npu_fx_open(&fx, c->profile, c->front_end);
    if (st != ATTNRT_OK) {
        res->status = st;
        snprintf(res->message, sizeof res->message, "open: %.700s", fx.api ? npu_fx_error(&fx) : "no vtable");
        return -1;
    }
    uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(c->num_seqs * 131 + c->block_size * 7 + c->hq);
    const int B = c->num_seqs, cols = c->cols, bs = c->block_size;
    int T = 0, TK = 0;
    for (int b = 0; b < B; b++) {
        T += c->q_lens[b];
        TK += c->kv_lens[b];
    }
    const int64_t num_blocks = (int64_t)B * cols + 1;
    bufs_t bufs = {{0}, 0};
    const size_t kes = dc_kind_size(dc_kind_of(c->kv_dtype)), qes = dc_kind_size(dc_kind_of(c->q_dtype));

    /* physical blocks in a shuffled order */
    int32_t *table = malloc(sizeof(int32_t) * (size_t)(B * cols + 1));
    for (int i = 0; i < B * cols; i++) table[i] = i;
    for (int i = B * cols - 1; i > 0; i--) {
        const int j = (int)((rnd(&seed) + 1.0) * 0.5 * (i + 1)) % (i + 1);
        const int32_t t = table[i];
        table[i] = table[j];
        table[j] = t;
    }
    const cache_view_t kv_k = cache_view(c, num_blocks, c->dqk), kv_v = cache_view(c, num_blocks, c->dv);
    void *kc = upload(&fx, &bufs, NULL, (size_t)(num_blocks * bs * c->hkv * c->dqk) * kes, 0xff);
    void *vc = upload(&fx, &bufs, NULL, (size_t)(num_blocks * bs * c->hkv * c->dv) * kes, 0xff);
    const float kscale = 0.5f, vscale = 0.25f;
    void *ks = upload(&fx, &bufs, &kscale, sizeof kscale, 0), *vs = upload(&fx, &bufs, &vscale, sizeof vscale, 0);

    /* the cache, through kv_write */
    int64_t *slots = malloc(sizeof(int64_t) * (size_t)(TK + 1));
    for (int b = 0, t = 0; b < B; b++)
        for (int p = 0; p < c->kv_lens[b]; p++) slots[t++] = (int64_t)table[b * cols + p / bs] * bs + p % bs;
    void *khost = random_act(&seed, c->q_dtype, (size_t)TK * (size_t)(c->hkv * c->dqk), 1.0);
    void *vhost = random_act(&seed, c->q_dtype, (size_t)TK * (size_t)(c->hkv * c->dv), 1.0);
    void *kd = upload(&fx, &bufs, khost, (size_t)TK * (size_t)(c->hkv * c->dqk) * qes, 0);
    void *vd = upload(&fx, &bufs, vhost, (size_t)TK * (size_t)(c->hkv * c->dv) * qes, 0);
    void *sd = upload(&fx, &bufs, slots, sizeof(int64_t) * (size_t)(TK ? TK : 1), 0);
    const int64_t ksh[3] = {TK, c->hkv, c->dqk}, vsh[3] = {TK, c->hkv, c->dv}, ssh[1] = {TK}, one[1] = {1};
    attnrt_tensor_t tk = tensor(kd, c->q_dtype, 3, ksh, NULL), tv = tensor(vd, c->q_dtype, 3, vsh, NULL);
    attnrt_tensor_t ts = tensor(sd, ATTNRT_I64, 1, ssh, NULL);
    attnrt_tensor_t tkc = tensor(kc, c->kv_dtype, 4, kv_k.shape, kv_k.strides);
    attnrt_tensor_t tvc = tensor(vc, c->kv_dtype, 4, kv_v.shape, kv_v.strides);
    attnrt_tensor_t tks = tensor(ks, ATTNRT_F32, 1, one, NULL), tvs = tensor(vs, ATTNRT_F32, 1, one, NULL);
    const int fp8 = is_fp8(c->kv_dtype);
    attnrt_kv_write_args_t w = {sizeof w, &tk, &tv, &ts, &tkc, &tvc, fp8 ? &tks : NULL, fp8 ? &tvs : NULL, slots};
    void *plan = NULL;
    unsigned char *out_host = NULL;
    void *qhost = NULL;
    st = fx.api->kv_write(fx.dev, &w, NULL);
    if (st != ATTNRT_OK) {
        fail_msg(res, st, "kv_write", &fx);
        goto done;
    }

    /* the batch */
    int32_t *qsl = malloc(sizeof(int32_t) * (size_t)(B + 1)), *sl = malloc(sizeof(int32_t) * (size_t)(B + 1));
    qsl[0] = 0;
    for (int b = 0; b < B; b++) {
        qsl[b + 1] = qsl[b] + c->q_lens[b];
        sl[b] = c->kv_lens[b];
    }
    qhost = random_act(&seed, c->q_dtype, (size_t)T * (size_t)(c->hq * c->dqk), 2.0);
    float sinks[64];
    for (int h = 0; h < c->hq && h < 64; h++) sinks[h] = (float)(1.5 * rnd(&seed) + 0.5);
    void *qd = upload(&fx, &bufs, qhost, (size_t)T * (size_t)(c->hq * c->dqk) * qes, 0);
    void *od = upload(&fx, &bufs, NULL, (size_t)T * (size_t)(c->hq * c->dv) * qes, 0xff);
    void *btd = upload(&fx, &bufs, table, sizeof(int32_t) * (size_t)(B * cols), 0);
    void *qsld = upload(&fx, &bufs, qsl, sizeof(int32_t) * (size_t)(B + 1), 0);
    void *sld = upload(&fx, &bufs, sl, sizeof(int32_t) * (size_t)(B ? B : 1), 0);
    void *sinkd = upload(&fx, &bufs, sinks, sizeof(float) * (size_t)c->hq, 0);
    void *lsed = upload(&fx, &bufs, NULL, sizeof(float) * (size_t)(T * c->hq), 0xff);
    const int64_t qsh[3] = {T, c->hq, c->dqk}, osh[3] = {T, c->hq, c->dv}, btsh[2] = {B, cols};
    const int64_t qslsh[1] = {B + 1}, slsh[1] = {B}, sinksh[1] = {c->hq}, lsesh[2] = {T, c->hq};
    attnrt_tensor_t tq = tensor(qd, c->q_dtype, 3, qsh, NULL), to = tensor(od, c->q_dtype, 3, osh, NULL);
    attnrt_tensor_t tbt = tensor(btd, ATTNRT_I32, 2, btsh, NULL), tqsl = tensor(qsld, ATTNRT_I32, 1, qslsh, NULL);
    attnrt_tensor_t tsl = tensor(sld, ATTNRT_I32, 1, slsh, NULL), tsink = tensor(sinkd, ATTNRT_F32, 1, sinksh, NULL);
    attnrt_tensor_t tlse = tensor(lsed, ATTNRT_F32, 2, lsesh, NULL);
    attnrt_attention_args_t a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.query = &tq;
    a.key_cache = &tkc;
    a.value_cache = &tvc;
    a.block_table = &tbt;
    a.query_start_loc = &tqsl;
    a.seq_lens = &tsl;
    a.out = &to;
    a.lse = c->lse ? &tlse : NULL;
    a.sinks = c->sinks ? &tsink : NULL;
    a.key_scale = fp8 ? &tks : NULL;
    a.value_scale = fp8 ? &tvs : NULL;
    a.softcap = c->softcap;
    a.causal = c->causal;
    a.sliding_window_left = c->window_left + 1; /* the case keeps an inclusive count, -1 unlimited */
    attnrt_batch_host_t batch = {sizeof batch, B, qsl, sl, table, cols};
    size_t ws = 0;
    st = fx.api->attention_plan(fx.dev, &a, &batch, &plan, &ws);
    if (st != ATTNRT_OK) {
        fail_msg(res, st, "attention_plan", &fx);
        goto done_batch;
    }
    void *wsd = ws ? upload(&fx, &bufs, NULL, ws, 0xff) : NULL; /* the run's scratch */
    st = fx.api->attention_run(fx.dev, plan, &a, wsd, ws, NULL);
    if (st != ATTNRT_OK) {
        fail_msg(res, st, "attention_run", &fx);
        goto done_batch;
    }
    res->stats.struct_size = sizeof res->stats;
    fx.api->last_op_stats(fx.dev, &res->stats);

    if (!c->skip_reference) {
        const size_t out_n = (size_t)T * (size_t)(c->hq * c->dv), q_n = (size_t)T * (size_t)(c->hq * c->dqk);
        out_host = malloc(out_n * qes + 1);
        fx.api->mem_copy(fx.dev, out_host, od, out_n * qes, ATTNRT_COPY_DEVICE_TO_HOST, NULL);
        double *q = malloc(sizeof(double) * (q_n + 1)), *got = malloc(sizeof(double) * (out_n + 1));
        double *ref = malloc(sizeof(double) * (out_n + 1)), *sinkd64 = malloc(sizeof(double) * (size_t)c->hq);
        to_double(qhost, c->q_dtype, q_n, 1.0f, q);
        to_double(out_host, c->q_dtype, out_n, 1.0f, got);
        for (int h = 0; h < c->hq; h++) sinkd64[h] = sinks[h];
        double *kref = cache_doubles(&fx, c, kc, &kv_k, fp8 ? kscale : 1.0f);
        double *vref = cache_doubles(&fx, c, vc, &kv_v, fp8 ? vscale : 1.0f);
        ref_attention_problem p = {B, qsl, sl, c->hq, c->hkv, c->dqk, c->dv, q, kref, vref, (int)num_blocks, bs, table,
                                   cols, 1.0 / sqrt((double)c->dqk), c->causal, c->window_left, -1, c->softcap, NULL,
                                   c->sinks ? sinkd64 : NULL, ref, NULL};
        ref_paged_attention(&p);
        double num = 0, den = 0;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < c->hq; h++) {
                double rn = 0, rd = 0;
                for (int d = 0; d < c->dv; d++) {
                    const size_t i = ((size_t)t * (size_t)c->hq + (size_t)h) * (size_t)c->dv + (size_t)d;
                    const double e = got[i] - ref[i];
                    rn += isfinite(e) ? e * e : INFINITY;
                    rd += ref[i] * ref[i];
                }
                num += rn;
                den += rd;
                const double row = sqrt(rn) / fmax(sqrt(rd), 1e-3);
                if (!(row <= res->max_row_err)) res->max_row_err = row;
            }
        res->rel_err = den > 0 ? sqrt(num) / sqrt(den) : sqrt(num);
        free(q), free(got), free(ref), free(sinkd64), free(kref), free(vref);
    }
done_batch:
    free(qsl);
    free(sl);
done:
    if (plan) fx.api->attention_plan_destroy(fx.dev, plan);
    for (int i = bufs.n - 1; i >= 0; i--) fx.api->mem_free(fx.dev, bufs.dev[i]);
    free(out_host);
    free(qhost);
    free(khost);
    free(vhost);
    free(slots);
    free(table);
    npu_fx_close(&fx);
    res->status = res->status ? res->status : st;
    return res->status == ATTNRT_OK ? 0 : -1;
}
