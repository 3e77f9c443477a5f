/* cpu_attention.c — paged attention run: one online softmax per query row over the keys its masks keep.
 *
 * An item (see cpu_attention_plan.h) holds up to CPU_ATTN_ROWS_PER_ITEM query rows of one request and
 * one KV head. Its keys are walked in position order over the union of its rows' key ranges, gathered
 * CPU_ATTN_KEY_CHUNK at a time through the block table and dequantised once into f32; every row then
 * scores the chunk keys in its own range and folds them into its running (max, sum, accumulator).
 * Memory is O(rows x head_dim) per participant, whatever the sequence length.
 *
 * The metadata tensors are read here, at run time (the cpu's device memory is host memory), and are
 * trusted only as far as bounds go: lengths are clamped to the tensors, and keys whose block id lies
 * outside the cache are skipped, so garbage metadata gives garbage numbers but never a stray access.
 */
#include <math.h>
#include <string.h>

#include "cpu_attention_plan.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_error.h"

/* Everything the items read, decoded from the args once per run. Strides are in elements. */
typedef struct attn_job {
    const cpu_attn_plan_t    *plan;
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
} attn_job_t;

/* One participant's scratch, carved from the plan's slice. */
typedef struct attn_scratch {
    float   *q, *acc, *pv, *k, *v, *s, *m, *l;
    int64_t *pos;
} attn_scratch_t;

static attn_scratch_t scratch_of(const attn_job_t *job, unsigned worker)
{
    char *base = job->plan->scratch + (size_t)worker * job->plan->scratch_stride;
    const cpu_attn_scratch_layout_t *l = &job->lay;
    attn_scratch_t s = {
        (float *)(void *)(base + l->q),  (float *)(void *)(base + l->acc), (float *)(void *)(base + l->pv),
        (float *)(void *)(base + l->k),  (float *)(void *)(base + l->v),   (float *)(void *)(base + l->s),
        (float *)(void *)(base + l->m),  (float *)(void *)(base + l->l),   (int64_t *)(void *)(base + l->pos),
    };
    return s;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

static float scale_at(const float *scale, const int64_t st[2], int64_t block, int64_t head)
{
    return scale ? scale[block * st[0] + head * st[1]] : 1.0f;
}

/* Gathers up to CPU_ATTN_KEY_CHUNK keys from positions *p .. hi of request `seq` into the scratch,
 * dequantised, skipping blocks that do not exist; advances *p. Returns how many it gathered. */
static int gather_keys(const attn_job_t *job, const attn_scratch_t *sc, int64_t seq, int64_t kv_head,
                       int64_t *p, int64_t hi)
{
    const int64_t bs = job->block_size;
    int n = 0;
    while (*p <= hi && n < CPU_ATTN_KEY_CHUNK) {
        const int64_t logical = *p / bs, row0 = *p % bs;
        const int64_t last = (logical + 1) * bs - 1 < hi ? (logical + 1) * bs - 1 : hi; /* in this block */
        const int64_t block = job->bt[seq * job->bt_st[0] + logical * job->bt_st[1]];
        if (block < 0 || block >= job->num_blocks) { /* garbage table entry: those keys do not exist */
            *p = last + 1;
            continue;
        }
        int64_t take = last - *p + 1;
        if (take > CPU_ATTN_KEY_CHUNK - n) take = CPU_ATTN_KEY_CHUNK - n;
        const float ks = scale_at(job->k_scale, job->ks_st, block, kv_head);
        const float vs = scale_at(job->v_scale, job->vs_st, block, kv_head);
        for (int64_t j = 0; j < take; j++) {
            const int64_t row = row0 + j;
            const char *k = job->kc + (size_t)(block * job->kc_st[0] + row * job->kc_st[1] + kv_head * job->kc_st[2]) * job->kv_es;
            const char *v = job->vc + (size_t)(block * job->vc_st[0] + row * job->vc_st[1] + kv_head * job->vc_st[2]) * job->kv_es;
            dc_row_to_f32(sc->k + (size_t)n * (size_t)job->dqk, k, job->kv_kind, (size_t)job->dqk, ks);
            dc_row_to_f32(sc->v + (size_t)n * (size_t)job->dv, v, job->kv_kind, (size_t)job->dv, vs);
            sc->pos[n] = *p + j;
            n++;
        }
        *p += take;
    }
    return n;
}

/* Folds chunk keys [jb, je) into row r of query head h at position pq: scores (scale, softcap, ALiBi,
 * in the contract's order), then one rescale of the running state by e^{m_old - m_new}. The chunk's
 * weighted values are summed apart first (pv) so long rows add in two levels, not one long chain. */
static void fold_chunk(const attn_job_t *job, const attn_scratch_t *sc, int64_t r, int64_t h, int64_t pq,
                       int jb, int je)
{
    const int64_t dqk = job->dqk, dv = job->dv;
    const float *q = sc->q + (size_t)r * (size_t)dqk;
    float *acc = sc->acc + (size_t)r * (size_t)dv;
    float *s = sc->s;
    const float slope = job->alibi ? job->alibi[h * job->alibi_st] : 0.0f;
    float smax = -INFINITY;
    for (int j = jb; j < je; j++) {
        float x = job->scale * cpu_vec_dot(q, sc->k + (size_t)j * (size_t)dqk, dqk);
        if (job->softcap > 0.0f) x = job->softcap * tanhf(x / job->softcap);
        if (job->alibi) {
            const int64_t dist = pq - sc->pos[j];
            x -= slope * (float)(dist < 0 ? -dist : dist);
        }
        s[j] = x;
        smax = x > smax ? x : smax;
    }
    const float m_old = sc->m[r];
    const float m_new = smax > m_old ? smax : m_old;
    if (m_new == -INFINITY) return; /* every score -inf: nothing to add, and e^{-inf - -inf} is NaN */
    float psum = 0.0f;
    for (int j = jb; j < je; j++) {
        const float p = expf(s[j] - m_new);
        psum += p;
        if (j == jb)
            cpu_vec_set_scaled(sc->pv, sc->v + (size_t)j * (size_t)dv, p, dv);
        else
            cpu_vec_axpy(sc->pv, sc->v + (size_t)j * (size_t)dv, p, dv);
    }
    const float alpha = expf(m_old - m_new); /* 0 on the row's first keys: m_old is -inf, acc is 0 */
    cpu_vec_scale_add(acc, sc->pv, alpha, dv);
    sc->l[r] = sc->l[r] * alpha + psum;
    sc->m[r] = m_new;
}

/* Writes row r: acc / (sum + e^{sink - m}), LSE = m + ln(sum); a row without keys gets 0 and -inf. */
static void finish_row(const attn_job_t *job, const attn_scratch_t *sc, int64_t r, int64_t t, int64_t h)
{
    const int64_t dv = job->dv;
    float *acc = sc->acc + (size_t)r * (size_t)dv;
    const float m = sc->m[r], l = sc->l[r];
    double lse = -INFINITY;
    if (l > 0.0f) {
        double den = (double)l;
        if (job->sinks) den += exp((double)job->sinks[h * job->sinks_st] - (double)m);
        cpu_vec_scale(acc, (float)(1.0 / den), dv); /* den inf (sink far above): weights 0, not NaN */
        lse = (double)m + log((double)l);
    } else {
        memset(acc, 0, (size_t)dv * sizeof *acc);
    }
    char *o = job->out + (size_t)(t * job->out_st[0] + h * job->out_st[1]) * job->out_es;
    dc_row_from_f32(o, acc, job->out_kind, (size_t)dv, 1.0f);
    if (job->lse) job->lse[t * job->lse_st[0] + h * job->lse_st[1]] = (float)lse;
}

static void attn_item(void *ctx, size_t index, unsigned worker)
{
    const attn_job_t *job = ctx;
    const cpu_attn_item_t it = job->plan->items[index];
    const attn_scratch_t sc = scratch_of(job, worker);
    const int64_t seq = it.seq;

    /* This request's rows and keys, clamped to what the tensors hold. */
    const int64_t q_begin = clamp64(job->qsl[seq * job->qsl_st], 0, job->T);
    const int64_t q_end = clamp64(job->qsl[(seq + 1) * job->qsl_st], q_begin, job->T);
    const int64_t L = q_end - q_begin;
    const int64_t S = clamp64(job->sl[seq * job->sl_st], 0, job->bt_cols * job->block_size);
    const int64_t i0 = it.q_first;
    const int64_t i1 = i0 + it.q_count < L ? i0 + it.q_count : L;
    if (i1 <= i0) return;
    const int64_t nt = i1 - i0, nh = it.head_count, rows = nt * nh;
    const int64_t h0 = (int64_t)it.kv_head * job->group + it.head_first;

    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const char *q = job->q + (size_t)((q_begin + i0 + ti) * job->q_st[0] + (h0 + hh) * job->q_st[1]) * job->q_es;
            dc_row_to_f32(sc.q + (size_t)(ti * nh + hh) * (size_t)job->dqk, q, job->q_kind, (size_t)job->dqk, 1.0f);
        }
    for (int64_t r = 0; r < rows; r++) {
        sc.m[r] = -INFINITY;
        sc.l[r] = 0.0f;
    }
    memset(sc.acc, 0, (size_t)rows * (size_t)job->dv * sizeof(float));

    const int64_t pq0 = S - L + i0; /* bottom-right alignment: the last query sits at S - 1 */
    int64_t lo, hi, unused;
    cpu_attn_key_range(pq0, S, job->causal, job->window_left, job->window_right, &lo, &unused);
    cpu_attn_key_range(pq0 + nt - 1, S, job->causal, job->window_left, job->window_right, &unused, &hi);

    for (int64_t p = lo; p <= hi;) {
        const int n = gather_keys(job, &sc, seq, it.kv_head, &p, hi);
        if (n == 0) break;
        for (int64_t ti = 0; ti < nt; ti++) {
            const int64_t pq = pq0 + ti;
            int64_t rlo, rhi;
            cpu_attn_key_range(pq, S, job->causal, job->window_left, job->window_right, &rlo, &rhi);
            int jb = 0, je = n; /* the chunk's positions ascend: trim both ends to the row's range */
            while (jb < n && sc.pos[jb] < rlo) jb++;
            while (je > jb && sc.pos[je - 1] > rhi) je--;
            if (jb == je) continue;
            for (int64_t hh = 0; hh < nh; hh++) fold_chunk(job, &sc, ti * nh + hh, h0 + hh, pq, jb, je);
        }
    }

    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) finish_row(job, &sc, ti * nh + hh, q_begin + i0 + ti, h0 + hh);
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

attnrt_status_t cpu_attention_run(cpu_pool_t *pool, const void *plan, const attnrt_attention_args_t *in)
{
    const cpu_attn_plan_t *p = plan;
    attnrt_attention_args_t a;
    memset(&a, 0, sizeof a);
    memcpy(&a, in, in->struct_size < sizeof a ? in->struct_size : sizeof a);
    if (!p || p->pool != pool)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention run: the plan is NULL or was made on another device");
    if (!a.query || !a.key_cache || !a.value_cache || !a.block_table || !a.query_start_loc || !a.seq_lens || !a.out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention run: a required tensor is NULL");
    if (a.query->shape[0] != p->num_tokens || a.query->shape[1] != p->num_q_heads ||
        a.key_cache->shape[2] != p->num_kv_heads || a.query->shape[2] != p->head_dim_qk ||
        a.value_cache->shape[3] != p->head_dim_v || a.seq_lens->shape[0] != p->num_seqs ||
        a.query_start_loc->shape[0] != p->num_seqs + 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu paged attention run: shapes (T %lld, Hq %lld, Hkv %lld, D %lld/%lld, B %lld) differ from "
                           "the plan's (T %lld, Hq %lld, Hkv %lld, D %lld/%lld, B %lld); plan this batch again",
                           (long long)a.query->shape[0], (long long)a.query->shape[1], (long long)a.key_cache->shape[2],
                           (long long)a.query->shape[2], (long long)a.value_cache->shape[3], (long long)a.seq_lens->shape[0],
                           (long long)p->num_tokens, (long long)p->num_q_heads, (long long)p->num_kv_heads,
                           (long long)p->head_dim_qk, (long long)p->head_dim_v, (long long)p->num_seqs);

    attn_job_t job;
    memset(&job, 0, sizeof job);
    job.plan = p;
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
    job.window_left = a.window_left < 0 ? -1 : a.window_left;
    job.window_right = a.window_right < 0 ? -1 : a.window_right;
    if (job.block_size <= 0 || job.dqk <= 0 || job.dv <= 0) return ATTNRT_OK; /* nothing to read or write */

    cpu_parallel_for(pool, p->num_items, attn_item, &job);
    return ATTNRT_OK;
}
