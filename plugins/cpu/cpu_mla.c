/* cpu_mla.c — multi-head latent attention, dense and sparse, over a one-head latent cache
 * [num_blocks, block_size, 1, kv_dim]; the value of a key is the first v_dim columns of its row.
 *
 * A work item holds up to CPU_MLA_ROWS query rows: a tile of tokens of one request times a chunk of
 * its query heads. Every head of a token reads the same latent rows, so an item gathers and
 * dequantises each row once (CPU_MLA_KEY_CHUNK rows at a time, C) and scores the chunk for all of its
 * rows as one product Q C^T, folds each row's scores into its own online softmax (running max, sum,
 * f32 accumulator), then adds P C_v to the accumulators as a second product. Dense items walk the
 * union of their tokens' key ranges in position order, each token using only the chunk keys up to its
 * causal limit; sparse items walk each token's index list as given, so a repeated index counts once
 * per occurrence. Memory is O(rows x kv_dim) per participant, whatever the sequence length.
 *
 * Metadata tensors are read at run time and trusted only as far as bounds go: query_start_loc is
 * clamped to [0, T], seq_lens to what the block table can address, block ids outside the cache and
 * sparse indices outside [0, seq_len) are skipped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_args.h"
#include "cpu_gemm.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_error.h"

/* Query rows per item: enough to amortise each dequantised latent row over many dot products. */
#define CPU_MLA_ROWS 32
/* Latent rows gathered and scored together: one online-softmax update. */
#define CPU_MLA_KEY_CHUNK 32
/* Fewest heads an item is cut down to when a batch has too few items for the pool: below this the
 * per-item dequantisation starts to cost as much as the dot products it feeds. */
#define CPU_MLA_MIN_HEADS 4
#define CPU_MLA_ALIGN 64

static const char OP[] = "mla";

typedef struct mla_item {
    int32_t seq, q_first, q_count, head_first, head_count; /* tokens within the request; heads */
} mla_item_t;

typedef struct mla_plan {
    cpu_plan_head_t   head;
    const cpu_pool_t *pool;
    int64_t T, B, Hq, D, Dv, topk; /* shapes the plan was made for; run refuses others */
    int     sparse;
    mla_item_t *items;             /* costliest first */
    size_t      num_items;
    char       *scratch;           /* slices slices of scratch_stride bytes */
    size_t      scratch_stride;
    unsigned    slices;
} mla_plan_t;

typedef struct mla_shape {
    int64_t   T, B, Hq, D, Dv, NB, BS, topk;
    int       sparse;
    dc_kind_t q, kv, out;
} mla_shape_t;

#define ANY CPU_ANY_DIM

static int kind_is_fp8(dc_kind_t k) { return k == DC_E4M3 || k == DC_E5M2; }

/* Checks every tensor against the others. B comes from the host batch (plan) or the plan (run); the
 * metadata tensors are required at run only, as their data is what the kernel walks. */
static attnrt_status_t mla_check(const attnrt_mla_args_t *a, int64_t B, int run, mla_shape_t *sh)
{
    attnrt_status_t st;
    if (!a->query || !a->kv_cache || !a->out || (run && (!a->block_table || !a->query_start_loc || !a->seq_lens)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla: query, kv_cache and out are required%s",
                           run ? ", and block_table, query_start_loc and seq_lens at run" : "");
    if ((st = cpu_check_shape(a->query, OP, "query", 3, (const int64_t[]){ANY, ANY, ANY}, 1))) return st;
    const int64_t T = a->query->shape[0], Hq = a->query->shape[1], D = a->query->shape[2];
    if ((st = cpu_check_shape(a->kv_cache, OP, "kv_cache", 4, (const int64_t[]){ANY, ANY, 1, D}, 1))) return st;
    const int64_t NB = a->kv_cache->shape[0], BS = a->kv_cache->shape[1];
    if ((st = cpu_check_shape(a->out, OP, "out", 3, (const int64_t[]){T, Hq, ANY}, 1))) return st;
    const int64_t Dv = a->out->shape[2];
    if (D < 1 || Dv < 1 || Dv > D || BS < 1)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla: kv_dim %lld, v_dim %lld, block_size %lld: need "
                           "1 <= v_dim <= kv_dim and block_size >= 1", (long long)D, (long long)Dv, (long long)BS);
    if (a->block_table && (st = cpu_check_shape(a->block_table, OP, "block_table", 2, (const int64_t[]){B, ANY}, 0)))
        return st;
    if (a->query_start_loc &&
        (st = cpu_check_shape(a->query_start_loc, OP, "query_start_loc", 1, (const int64_t[]){B + 1}, 0)))
        return st;
    if (a->seq_lens && (st = cpu_check_shape(a->seq_lens, OP, "seq_lens", 1, (const int64_t[]){B}, 0))) return st;
    if (a->lse && (st = cpu_check_shape(a->lse, OP, "lse", 2, (const int64_t[]){T, Hq}, 0))) return st;
    if (a->sinks && (st = cpu_check_shape(a->sinks, OP, "sinks", 1, (const int64_t[]){Hq}, 0))) return st;
    if (a->indices && (st = cpu_check_shape(a->indices, OP, "indices", 2, (const int64_t[]){T, ANY}, 0))) return st;

    if ((st = cpu_check_act(a->query, OP, "query"))) return st;
    const dc_kind_t qk = dc_kind_of(a->query->dtype), kvk = dc_kind_of(a->kv_cache->dtype);
    if ((st = cpu_check_out_kind(qk, dc_kind_of(a->out->dtype), OP))) return st;
    const struct { const attnrt_tensor_t *t; const char *name; int is_f32; } typed[] = {
        {a->block_table, "block_table", 0}, {a->query_start_loc, "query_start_loc", 0}, {a->seq_lens, "seq_lens", 0},
        {a->indices, "indices", 0},         {a->lse, "lse", 1},                         {a->sinks, "sinks", 1},
    };
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        if (!typed[i].t) continue;
        st = typed[i].is_f32 ? cpu_check_dtype(typed[i].t, OP, typed[i].name, ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")
                             : cpu_check_dtype(typed[i].t, OP, typed[i].name, ATTNRT_DTYPE_CODE_INT, 32, "int32");
        if (st) return st;
    }
    if (kind_is_fp8(kvk) && a->kv_scale) {
        if ((st = cpu_check_dtype(a->kv_scale, OP, "kv_scale", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32"))) return st;
        const int per_tensor = a->kv_scale->ndim == 1 && a->kv_scale->shape[0] == 1;
        const int per_block = a->kv_scale->ndim == 2 && a->kv_scale->shape[0] == NB && a->kv_scale->shape[1] == 1;
        if (!per_tensor && !per_block)
            return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu mla: kv_scale must be [1] or [num_blocks = %lld, 1]",
                               (long long)NB);
    }
    if (!(a->scale > 0.0f) || isinf(a->scale))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla: scale %g must be finite and > 0 (the model's "
                           "1/sqrt(qk_head_dim) * mscale)", (double)a->scale);

    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_MLA;
    q.q_dtype = a->query->dtype;
    q.kv_dtype = a->kv_cache->dtype;
    q.head_dim_qk = (uint32_t)(D > UINT32_MAX ? UINT32_MAX : D);
    q.head_dim_v = (uint32_t)(Dv > UINT32_MAX ? UINT32_MAX : Dv);
    q.num_kv_heads = 1;
    q.features = (a->indices ? ATTNRT_FEATURE_SPARSE : 0u) | (a->causal ? ATTNRT_FEATURE_CAUSAL : 0u);
    char reason[256];
    if (cpu_op_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu mla: %s", reason);

    if (run && B > 0 &&
        (!a->query->data || !a->kv_cache->data || !a->out->data || !a->block_table->data ||
         !a->query_start_loc->data || !a->seq_lens->data || (a->indices && !a->indices->data)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla run: a required tensor has no data");

    *sh = (mla_shape_t){T, B, Hq, D, Dv, NB, BS, a->indices ? a->indices->shape[1] : 0, a->indices != NULL,
                        qk, kvk, dc_kind_of(a->out->dtype)};
    return ATTNRT_OK;
}

/* Byte offsets inside one participant's scratch slice. */
typedef struct mla_layout {
    size_t q, acc, pv, c, ct, p, m, l, pos, total;
} mla_layout_t;

static size_t align_up(size_t n) { return (n + CPU_MLA_ALIGN - 1) / CPU_MLA_ALIGN * CPU_MLA_ALIGN; }

static mla_layout_t mla_layout(int64_t D, int64_t Dv)
{
    const size_t R = CPU_MLA_ROWS, K = CPU_MLA_KEY_CHUNK, d = (size_t)D, dv = (size_t)Dv, f = sizeof(float);
    mla_layout_t l;
    size_t at = 0;
    l.q = at;   at += align_up(R * d * f);   /* the item's query rows in f32            */
    l.acc = at; at += align_up(R * dv * f);  /* unnormalised outputs                    */
    l.pv = at;  at += align_up(R * dv * f);  /* the current chunk's P C_v               */
    l.c = at;   at += align_up(K * d * f);   /* the chunk's latent rows, dequantised    */
    l.ct = at;  at += align_up(d * K * f);   /* the same, transposed: [kv_dim, K]       */
    l.p = at;   at += align_up(R * K * f);   /* scores, then probabilities, [R, K]      */
    l.m = at;   at += align_up(R * f);       /* running max per row                     */
    l.l = at;   at += align_up(R * f);       /* running sum per row                     */
    l.pos = at; at += align_up(K * sizeof(int64_t)); /* key position of each chunk row  */
    l.total = at;
    return l;
}

typedef struct mla_job {
    const mla_plan_t *plan;
    mla_layout_t      lay;
    int64_t T, Hq, D, Dv, NB, BS, topk;
    int     sparse, causal;
    float   scale;
    const char *q;   int64_t q_st[2];   dc_kind_t q_kind;   size_t q_es;
    char       *out; int64_t out_st[2]; dc_kind_t out_kind; size_t out_es;
    float      *lse; int64_t lse_st[2];
    const float *sinks; int64_t sinks_st;
    const char  *kv; int64_t kv_st[2]; dc_kind_t kv_kind; size_t kv_es;
    const float *kv_scale; int64_t kv_scale_st; /* NULL: 1 (non-fp8 caches, or none given) */
    const int32_t *bt; int64_t bt_st[2], bt_cols;
    const int32_t *idx; int64_t idx_st[2];
    const attnrt_tensor_t *qsl, *sl;
} mla_job_t;

typedef struct mla_scratch {
    float   *q, *acc, *pv, *c, *ct, *p, *m, *l;
    int64_t *pos;
} mla_scratch_t;

static mla_scratch_t scratch_of(const mla_job_t *job, unsigned worker)
{
    char *base = job->plan->scratch + (size_t)worker * job->plan->scratch_stride;
    const mla_layout_t *l = &job->lay;
    mla_scratch_t s = {(float *)(void *)(base + l->q), (float *)(void *)(base + l->acc), (float *)(void *)(base + l->pv),
                       (float *)(void *)(base + l->c),
                       (float *)(void *)(base + l->ct), (float *)(void *)(base + l->p),  (float *)(void *)(base + l->m),
                       (float *)(void *)(base + l->l), (int64_t *)(void *)(base + l->pos)};
    return s;
}

/* Dequantises the latent row at position pk (< the clamped seq_len) of request seq into chunk row n.
 * Returns 0, adding nothing, when its block id lies outside the cache. */
static int gather_key(const mla_job_t *job, const mla_scratch_t *sc, int64_t seq, int64_t pk, int n)
{
    const int64_t block = job->bt[seq * job->bt_st[0] + (pk / job->BS) * job->bt_st[1]];
    if (block < 0 || block >= job->NB) return 0;
    const char *src = job->kv + (size_t)(block * job->kv_st[0] + (pk % job->BS) * job->kv_st[1]) * job->kv_es;
    const float scale = job->kv_scale ? job->kv_scale[block * job->kv_scale_st] : 1.0f;
    dc_row_to_f32(sc->c + (size_t)n * (size_t)job->D, src, job->kv_kind, (size_t)job->D, scale);
    sc->pos[n] = pk;
    return 1;
}

/* Turns row r's raw scores over chunk keys [0, lim) into probabilities against its updated running
 * max and adds them to its running sum; returns e^{m_old - m_new}, the factor its accumulator takes. */
static float softmax_update(const mla_job_t *job, const mla_scratch_t *sc, int64_t r, int lim)
{
    float *p = sc->p + (size_t)r * CPU_MLA_KEY_CHUNK;
    float smax = -INFINITY;
    for (int j = 0; j < lim; j++) {
        p[j] *= job->scale;
        smax = p[j] > smax ? p[j] : smax;
    }
    const float m_old = sc->m[r];
    const float m_new = smax > m_old ? smax : m_old;
    if (m_new == -INFINITY) { /* every score -inf: nothing to add, and e^{-inf - -inf} is NaN */
        memset(p, 0, (size_t)lim * sizeof *p);
        return 1.0f;
    }
    float psum = 0.0f;
    for (int j = 0; j < lim; j++) {
        p[j] = expf(p[j] - m_new);
        psum += p[j];
    }
    const float alpha = expf(m_old - m_new); /* 0 on the row's first keys: m_old is -inf, acc is 0 */
    sc->l[r] = sc->l[r] * alpha + psum;
    sc->m[r] = m_new;
    return alpha;
}

/* Folds the n gathered keys into rows r0 .. r0 + nt * nh of the item (token ti owns nh consecutive
 * rows and sees its first lim[ti] keys): S = Q C^T, the online softmax per row, then
 * acc = alpha acc + P C_v. The chunk's sum is formed apart (pv) so that long rows add in two levels,
 * not one chain of thousands of terms. A key a token does not see takes no part in its product at
 * all (not even as 0 * value). */
static void fold_chunk(const mla_job_t *job, const mla_scratch_t *sc, int64_t r0, int64_t nt, int64_t nh, int n,
                       const int *lim)
{
    const int64_t D = job->D, Dv = job->Dv, K = CPU_MLA_KEY_CHUNK, rows = nt * nh;
    for (int64_t d0 = 0; d0 < D; d0 += 16) { /* transpose in strips of 16 columns: each strip stays in L1 */
        const int64_t d1 = d0 + 16 < D ? d0 + 16 : D;
        for (int j = 0; j < n; j++) {
            const float *c = sc->c + (size_t)j * (size_t)D;
            for (int64_t d = d0; d < d1; d++) sc->ct[d * K + j] = c[d];
        }
    }
    float *p = sc->p + (size_t)(r0 * K);
    memset(p, 0, (size_t)(rows * K) * sizeof *p);
    cpu_gemm_acc(p, K, sc->q + (size_t)(r0 * D), D, sc->ct, K, rows, n, D);
    int all = 1;
    float alpha[CPU_MLA_ROWS];
    for (int64_t ti = 0; ti < nt; ti++) {
        all &= lim[ti] == n;
        for (int64_t hh = 0; hh < nh; hh++) alpha[ti * nh + hh] = softmax_update(job, sc, r0 + ti * nh + hh, lim[ti]);
    }
    float *pv = sc->pv + (size_t)(r0 * Dv), *acc = sc->acc + (size_t)(r0 * Dv);
    memset(pv, 0, (size_t)(rows * Dv) * sizeof *pv);
    if (all) {
        cpu_gemm_acc(pv, Dv, p, K, sc->c, D, rows, Dv, n);
    } else {
        for (int64_t ti = 0; ti < nt; ti++)
            if (lim[ti] > 0)
                cpu_gemm_acc(pv + (size_t)(ti * nh * Dv), Dv, p + (size_t)(ti * nh * K), K, sc->c, D, nh, Dv, lim[ti]);
    }
    for (int64_t r = 0; r < rows; r++) cpu_vec_scale_add(acc + (size_t)(r * Dv), pv + (size_t)(r * Dv), alpha[r], Dv);
}

/* Writes row r: acc / (sum + e^{sink - m}), LSE = m + ln(sum); a row without keys gets 0 and -inf. */
static void finish_row(const mla_job_t *job, const mla_scratch_t *sc, int64_t r, int64_t t, int64_t h)
{
    const int64_t Dv = job->Dv;
    float *acc = sc->acc + (size_t)(r * Dv);
    const float m = sc->m[r], l = sc->l[r];
    double lse = -INFINITY;
    if (l > 0.0f) {
        double den = (double)l;
        if (job->sinks) den += exp((double)job->sinks[h * job->sinks_st] - (double)m);
        cpu_vec_scale(acc, (float)(1.0 / den), Dv);
        lse = (double)m + log((double)l);
    } else {
        memset(acc, 0, (size_t)Dv * sizeof *acc);
    }
    dc_row_from_f32(job->out + (size_t)(t * job->out_st[0] + h * job->out_st[1]) * job->out_es, acc, job->out_kind,
                    (size_t)Dv, 1.0f);
    if (job->lse) job->lse[t * job->lse_st[0] + h * job->lse_st[1]] = (float)lse;
}

/* Sparse: token ti of the item (request token index i, absolute t) over its own index list. */
static void sparse_token(const mla_job_t *job, const mla_scratch_t *sc, int64_t seq, int64_t t, int64_t S,
                         int64_t ti, int64_t nh)
{
    const int32_t *row = job->idx + t * job->idx_st[0];
    for (int64_t j = 0; j < job->topk;) {
        int n = 0;
        while (j < job->topk && n < CPU_MLA_KEY_CHUNK) {
            const int64_t pk = row[j * job->idx_st[1]];
            j++;
            if (pk >= 0 && pk < S) n += gather_key(job, sc, seq, pk, n); /* -1 unused, >= seq_len absent */
        }
        if (n == 0) break;
        fold_chunk(job, sc, ti * nh, 1, nh, n, &n);
    }
}

static void mla_item_run(void *ctx, size_t index, unsigned worker)
{
    const mla_job_t *job = ctx;
    const mla_item_t it = job->plan->items[index];
    const mla_scratch_t sc = scratch_of(job, worker);
    const int64_t seq = it.seq, D = job->D;

    const int64_t q_begin = cpu_clamp64(cpu_i32_at(job->qsl, seq), 0, job->T);
    const int64_t q_end = cpu_clamp64(cpu_i32_at(job->qsl, seq + 1), q_begin, job->T);
    const int64_t L = q_end - q_begin;
    const int64_t S = cpu_clamp64(cpu_i32_at(job->sl, seq), 0, job->bt_cols * job->BS);
    const int64_t i0 = it.q_first, i1 = i0 + it.q_count < L ? i0 + it.q_count : L;
    if (i1 <= i0) return;
    const int64_t nt = i1 - i0, nh = it.head_count, rows = nt * nh, h0 = it.head_first;

    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const char *q = job->q + (size_t)((q_begin + i0 + ti) * job->q_st[0] + (h0 + hh) * job->q_st[1]) * job->q_es;
            dc_row_to_f32(sc.q + (size_t)((ti * nh + hh) * D), q, job->q_kind, (size_t)D, 1.0f);
        }
    for (int64_t r = 0; r < rows; r++) {
        sc.m[r] = -INFINITY;
        sc.l[r] = 0.0f;
    }
    memset(sc.acc, 0, (size_t)(rows * job->Dv) * sizeof(float));

    if (job->sparse) {
        for (int64_t ti = 0; ti < nt; ti++) sparse_token(job, &sc, seq, q_begin + i0 + ti, S, ti, nh);
    } else {
        const int64_t pq0 = S - L + i0; /* bottom-right: the request's last query sits at S - 1 */
        int64_t hi = S - 1;
        if (job->causal && pq0 + nt - 1 < hi) hi = pq0 + nt - 1;
        for (int64_t p = 0; p <= hi;) {
            int n = 0;
            while (p <= hi && n < CPU_MLA_KEY_CHUNK) n += gather_key(job, &sc, seq, p++, n);
            if (n == 0) break;
            int lim[CPU_MLA_ROWS];
            for (int64_t ti = 0; ti < nt; ti++) {
                int je = n; /* positions ascend: trim the chunk to this token's causal limit */
                if (job->causal)
                    while (je > 0 && sc.pos[je - 1] > pq0 + ti) je--;
                lim[ti] = je;
            }
            fold_chunk(job, &sc, 0, nt, nh, n, lim);
        }
    }

    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) finish_row(job, &sc, ti * nh + hh, q_begin + i0 + ti, h0 + hh);
}

typedef struct costed_item {
    int64_t    cost;
    size_t     order; /* ties keep batch order: deterministic plans */
    mla_item_t item;
} costed_item_t;

static int by_cost_desc(const void *pa, const void *pb)
{
    const costed_item_t *a = pa, *b = pb;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

/* Request b's query length, its bounds clamped to the T query rows as the run clamps them. */
static int64_t host_len(const attnrt_batch_host_t *batch, int64_t b, int64_t T)
{
    const int64_t lo = cpu_clamp64(batch->query_start_loc[b], 0, T);
    return cpu_clamp64(batch->query_start_loc[b + 1], lo, T) - lo;
}

/* Items of the batch; SIZE_MAX when that overflows (the allocation then fails). */
static size_t count_items(const attnrt_batch_host_t *batch, int64_t B, int64_t T, int64_t Hq, int64_t hpi, int64_t tile)
{
    size_t n = 0;
    for (int64_t b = 0; b < B; b++) n = cpu_size_add(n, (size_t)((host_len(batch, b, T) + tile - 1) / tile));
    return cpu_size_mul(n, (size_t)((Hq + hpi - 1) / hpi));
}

void cpu_mla_plan_destroy(void *plan)
{
    mla_plan_t *p = plan;
    if (!p) return;
    p->head.magic = 0;
    free(p->items);
    free(p->scratch);
    free(p);
}

attnrt_status_t cpu_mla_plan(cpu_pool_t *pool, const attnrt_mla_args_t *args_in, const attnrt_batch_host_t *batch_in,
                             void **plan_out, size_t *workspace_bytes)
{
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla plan: args, batch and both outputs are required");
    attnrt_mla_args_t a;
    attnrt_batch_host_t batch;
    cpu_args_copy(&a, sizeof a, args_in, args_in->struct_size);
    cpu_args_copy(&batch, sizeof batch, batch_in, batch_in->struct_size);
    if (batch.num_seqs < 0 || (batch.num_seqs > 0 && (!batch.query_start_loc || !batch.seq_lens)))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla plan: the host batch has %d requests but no "
                           "query_start_loc or seq_lens", batch.num_seqs);
    mla_shape_t sh;
    attnrt_status_t st = mla_check(&a, batch.num_seqs, 0, &sh);
    if (st != ATTNRT_OK) return st;
    const int64_t B = sh.B, Hq = sh.Hq;

    /* Heads per item: all of a token's heads share its latent rows, so as many as fit; halved while
     * the batch has fewer items than twice the pool (decode of a few requests), down to a floor. */
    const unsigned slices = cpu_pool_size(pool);
    int64_t hpi = Hq < CPU_MLA_ROWS ? (Hq > 0 ? Hq : 1) : CPU_MLA_ROWS, tile = 1;
    for (;;) {
        tile = sh.sparse ? 1 : CPU_MLA_ROWS / hpi;
        if (count_items(&batch, B, sh.T, Hq, hpi, tile) >= 2u * slices || hpi <= CPU_MLA_MIN_HEADS) break;
        hpi = (hpi + 1) / 2;
    }
    const size_t n_items = Hq > 0 ? count_items(&batch, B, sh.T, Hq, hpi, tile) : 0;

    const mla_layout_t lay = mla_layout(sh.D, sh.Dv);
    mla_plan_t *p = calloc(1, sizeof *p);
    costed_item_t *tmp = n_items ? malloc(cpu_size_mul(n_items, sizeof *tmp)) : NULL;
    if (p && n_items) p->items = malloc(cpu_size_mul(n_items, sizeof *p->items));
    if (p) p->scratch = aligned_alloc(CPU_MLA_ALIGN, cpu_size_mul(lay.total, slices));
    if (!p || !p->scratch || (n_items && (!tmp || !p->items))) {
        free(tmp);
        cpu_mla_plan_destroy(p);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu mla plan: out of memory for %zu work items", n_items);
    }

    size_t k = 0;
    for (int64_t b = 0; b < B && n_items; b++) {
        const int64_t L = host_len(&batch, b, sh.T), S = batch.seq_lens[b] > 0 ? batch.seq_lens[b] : 0;
        for (int64_t i0 = 0; i0 < L; i0 += tile) {
            const int64_t n = L - i0 < tile ? L - i0 : tile;
            int64_t keys = sh.sparse ? sh.topk : S;
            if (!sh.sparse && a.causal) keys = S - L + i0 + n < S ? S - L + i0 + n : S;
            if (keys < 0) keys = 0;
            for (int64_t hf = 0; hf < Hq; hf += hpi) {
                const int64_t hc = Hq - hf < hpi ? Hq - hf : hpi;
                tmp[k].cost = n * hc * (keys + 1); /* +1: an empty row still costs its write */
                tmp[k].order = k;
                tmp[k].item = (mla_item_t){(int32_t)b, (int32_t)i0, (int32_t)n, (int32_t)hf, (int32_t)hc};
                k++;
            }
        }
    }
    if (n_items > 1) qsort(tmp, n_items, sizeof *tmp, by_cost_desc);
    for (size_t i = 0; i < n_items; i++) p->items[i] = tmp[i].item;
    free(tmp);

    p->head.magic = CPU_PLAN_MAGIC;
    p->head.kind = CPU_PLAN_MLA;
    p->pool = pool;
    p->T = sh.T;
    p->B = B;
    p->Hq = Hq;
    p->D = sh.D;
    p->Dv = sh.Dv;
    p->topk = sh.topk;
    p->sparse = sh.sparse;
    p->num_items = n_items;
    p->scratch_stride = lay.total;
    p->slices = slices;
    *plan_out = p;
    *workspace_bytes = 0; /* no split-KV: every item owns whole rows, scratch lives in the plan */
    return ATTNRT_OK;
}

attnrt_status_t cpu_mla_run(cpu_pool_t *pool, const void *plan, const attnrt_mla_args_t *args_in)
{
    const mla_plan_t *p = plan;
    if (!p || p->head.magic != CPU_PLAN_MAGIC || p->head.kind != CPU_PLAN_MLA || p->pool != pool)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla run: the plan is NULL, not an mla plan, or made on another device");
    if (!args_in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu mla run: args are required");
    attnrt_mla_args_t a;
    cpu_args_copy(&a, sizeof a, args_in, args_in->struct_size);
    mla_shape_t sh;
    attnrt_status_t st = mla_check(&a, p->B, 1, &sh);
    if (st != ATTNRT_OK) return st;
    if (sh.T != p->T || sh.Hq != p->Hq || sh.D != p->D || sh.Dv != p->Dv || sh.sparse != p->sparse || sh.topk != p->topk)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu mla run: shapes (T %lld, Hq %lld, D %lld/%lld, %s topk %lld) differ from the plan's "
                           "(T %lld, Hq %lld, D %lld/%lld, %s topk %lld); plan this batch again",
                           (long long)sh.T, (long long)sh.Hq, (long long)sh.D, (long long)sh.Dv,
                           sh.sparse ? "sparse" : "dense", (long long)sh.topk, (long long)p->T, (long long)p->Hq,
                           (long long)p->D, (long long)p->Dv, p->sparse ? "sparse" : "dense", (long long)p->topk);

    mla_job_t job;
    memset(&job, 0, sizeof job);
    job.plan = p;
    job.lay = mla_layout(sh.D, sh.Dv);
    job.T = sh.T;
    job.Hq = sh.Hq;
    job.D = sh.D;
    job.Dv = sh.Dv;
    job.NB = sh.NB;
    job.BS = sh.BS;
    job.topk = sh.topk;
    job.sparse = sh.sparse;
    job.causal = a.causal != 0;
    job.scale = a.scale;
    job.q = a.query->data;
    job.out = a.out->data;
    for (int i = 0; i < 2; i++) {
        job.q_st[i] = a.query->strides[i];
        job.out_st[i] = a.out->strides[i];
        job.kv_st[i] = a.kv_cache->strides[i];
        job.bt_st[i] = a.block_table->strides[i];
    }
    job.q_kind = sh.q;
    job.out_kind = sh.out;
    job.kv_kind = sh.kv;
    job.q_es = dc_kind_size(sh.q);
    job.out_es = dc_kind_size(sh.out);
    job.kv_es = dc_kind_size(sh.kv);
    job.kv = a.kv_cache->data;
    if (a.lse) {
        job.lse = a.lse->data;
        job.lse_st[0] = a.lse->strides[0];
        job.lse_st[1] = a.lse->strides[1];
    }
    if (a.sinks) {
        job.sinks = a.sinks->data;
        job.sinks_st = a.sinks->strides[0];
    }
    if (kind_is_fp8(sh.kv) && a.kv_scale && a.kv_scale->data) {
        job.kv_scale = a.kv_scale->data;
        job.kv_scale_st = a.kv_scale->ndim == 2 ? a.kv_scale->strides[0] : 0;
    }
    job.bt = a.block_table->data;
    job.bt_cols = a.block_table->shape[1];
    if (a.indices) {
        job.idx = a.indices->data;
        job.idx_st[0] = a.indices->strides[0];
        job.idx_st[1] = a.indices->strides[1];
    }
    job.qsl = a.query_start_loc;
    job.sl = a.seq_lens;

    cpu_parallel_for(pool, p->num_items, mla_item_run, &job);
    return ATTNRT_OK;
}
