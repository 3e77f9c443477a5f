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

#include "cpu_gemm.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_mla.h"
#include "plugin_struct.h"
#include "plugin_softmax.h"

/* Query rows per item: enough to amortise each dequantised latent row over many dot products. */
#define CPU_MLA_ROWS 32
/* Latent rows gathered and scored together: one online-softmax update. */
#define CPU_MLA_KEY_CHUNK 32
/* Fewest heads an item is cut down to when a batch has too few items for the pool: below this the
 * per-item dequantisation starts to cost as much as the dot products it feeds. */
#define CPU_MLA_MIN_HEADS 4
#define CPU_MLA_ALIGN 64

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
    plugin_mla_t      m; /* the run's args, decoded */
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
    const plugin_mla_t *m = &job->m;
    const int64_t block = plugin_view_i32_2(&m->block_table, seq, pk / m->block_size);
    if (block < 0 || block >= m->num_blocks) return 0;
    const char *src = plugin_view_at(&m->kv, block, pk % m->block_size);
    const float scale = m->kv_scale ? m->kv_scale[block * m->kv_scale_st] : 1.0f;
    dc_row_to_f32(sc->c + (size_t)n * (size_t)m->D, src, m->kv.kind, (size_t)m->D, scale);
    sc->pos[n] = pk;
    return 1;
}

/* Turns row r's raw scores over chunk keys [0, lim) into probabilities against its updated running
 * max and adds them to its running sum; returns e^{m_old - m_new}, the factor its accumulator takes. */
static float softmax_update(const mla_job_t *job, const mla_scratch_t *sc, int64_t r, int lim)
{
    float *p = sc->p + (size_t)r * CPU_MLA_KEY_CHUNK, alpha;
    for (int j = 0; j < lim; j++) p[j] *= job->m.scale;
    plugin_softmax_update(p, lim, &sc->m[r], &sc->l[r], &alpha); /* all -inf: p zeroed, alpha 1 */
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
    const int64_t D = job->m.D, Dv = job->m.Dv, K = CPU_MLA_KEY_CHUNK, rows = nt * nh;
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
    const plugin_mla_t *m = &job->m;
    float *acc = sc->acc + (size_t)(r * m->Dv);
    const float sink = m->sinks.data ? plugin_view_f32(&m->sinks, h) : 0.0f;
    const double lse = plugin_softmax_finish(acc, m->Dv, sc->m[r], sc->l[r], m->sinks.data ? &sink : NULL);
    dc_row_from_f32(plugin_view_at(&m->out, t, h), acc, m->out.kind, (size_t)m->Dv, 1.0f);
    if (m->lse.data) *(float *)(void *)plugin_view_at(&m->lse, t, h) = (float)lse;
}

/* Sparse: token ti of the item (request token index i, absolute t) over its own index list. */
static void sparse_token(const mla_job_t *job, const mla_scratch_t *sc, int64_t seq, int64_t t, int64_t S,
                         int64_t ti, int64_t nh)
{
    for (int64_t j = 0; j < job->m.topk;) {
        int n = 0;
        while (j < job->m.topk && n < CPU_MLA_KEY_CHUNK) {
            const int64_t pk = plugin_view_i32_2(&job->m.indices, t, j);
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
    const plugin_mla_t *m = &job->m;
    const mla_item_t it = job->plan->items[index];
    const mla_scratch_t sc = scratch_of(job, worker);
    const int64_t seq = it.seq, D = m->D;

    const int64_t q_begin = plugin_clamp64(plugin_view_i32(&m->qsl, seq), 0, m->T);
    const int64_t q_end = plugin_clamp64(plugin_view_i32(&m->qsl, seq + 1), q_begin, m->T);
    const int64_t L = q_end - q_begin;
    const int64_t S = plugin_clamp64(plugin_view_i32(&m->seq_lens, seq), 0, m->bt_cols * m->block_size);
    const int64_t i0 = it.q_first, i1 = i0 + it.q_count < L ? i0 + it.q_count : L;
    if (i1 <= i0) return;
    const int64_t nt = i1 - i0, nh = it.head_count, rows = nt * nh, h0 = it.head_first;

    for (int64_t ti = 0; ti < nt; ti++)
        for (int64_t hh = 0; hh < nh; hh++) {
            const char *q = plugin_view_at(&m->q, q_begin + i0 + ti, h0 + hh);
            dc_row_to_f32(sc.q + (size_t)((ti * nh + hh) * D), q, m->q.kind, (size_t)D, 1.0f);
        }
    for (int64_t r = 0; r < rows; r++) {
        sc.m[r] = -INFINITY;
        sc.l[r] = 0.0f;
    }
    memset(sc.acc, 0, (size_t)(rows * m->Dv) * sizeof(float));

    if (m->sparse) {
        for (int64_t ti = 0; ti < nt; ti++) sparse_token(job, &sc, seq, q_begin + i0 + ti, S, ti, nh);
    } else {
        const int64_t pq0 = S - L + i0; /* bottom-right: the request's last query sits at S - 1 */
        int64_t hi = S - 1;
        if (m->causal && pq0 + nt - 1 < hi) hi = pq0 + nt - 1;
        for (int64_t p = 0; p <= hi;) {
            int n = 0;
            while (p <= hi && n < CPU_MLA_KEY_CHUNK) n += gather_key(job, &sc, seq, p++, n);
            if (n == 0) break;
            int lim[CPU_MLA_ROWS];
            for (int64_t ti = 0; ti < nt; ti++) {
                int je = n; /* positions ascend: trim the chunk to this token's causal limit */
                if (m->causal)
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
    plugin_cost_key_t key;
    mla_item_t        item;
} costed_item_t;

/* Items of the batch; SIZE_MAX when that overflows (the allocation then fails). */
static size_t count_items(const attnrt_batch_host_t *batch, int64_t B, int64_t T, int64_t Hq, int64_t hpi, int64_t tile)
{
    size_t n = 0;
    for (int64_t b = 0; b < B; b++)
        n = plugin_size_add(n, (size_t)((plugin_batch_query_len(batch, b, T) + tile - 1) / tile));
    return plugin_size_mul(n, (size_t)((Hq + hpi - 1) / hpi));
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
    attnrt_mla_args_t a;
    attnrt_batch_host_t batch;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cpu", "mla", a, args_in, batch, batch_in, PLUGIN_BATCH_QSL_SEQ_LENS, plan_out,
                                          workspace_bytes);
    plugin_mla_t sh;
    if (st == ATTNRT_OK) st = plugin_mla_decode("cpu", &cpu_op_rules, NULL, &a, batch.num_seqs, 0, &sh);
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
    costed_item_t *tmp = n_items ? malloc(plugin_size_mul(n_items, sizeof *tmp)) : NULL;
    if (p && n_items) p->items = malloc(plugin_size_mul(n_items, sizeof *p->items));
    if (p) p->scratch = aligned_alloc(CPU_MLA_ALIGN, plugin_size_mul(lay.total, slices));
    if (!p || !p->scratch || (n_items && (!tmp || !p->items))) {
        free(tmp);
        cpu_mla_plan_destroy(p);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu mla plan: out of memory for %zu work items", n_items);
    }

    size_t k = 0;
    for (int64_t b = 0; b < B && n_items; b++) {
        const int64_t L = plugin_batch_query_len(&batch, b, sh.T), S = batch.seq_lens[b] > 0 ? batch.seq_lens[b] : 0;
        for (int64_t i0 = 0; i0 < L; i0 += tile) {
            const int64_t n = L - i0 < tile ? L - i0 : tile;
            int64_t keys = sh.sparse ? sh.topk : S;
            if (!sh.sparse && a.causal) keys = S - L + i0 + n < S ? S - L + i0 + n : S;
            if (keys < 0) keys = 0;
            for (int64_t hf = 0; hf < Hq; hf += hpi) {
                const int64_t hc = Hq - hf < hpi ? Hq - hf : hpi;
                tmp[k].key = (plugin_cost_key_t){(double)(n * hc * (keys + 1)), k}; /* +1: an empty row still costs its write */
                tmp[k].item = (mla_item_t){(int32_t)b, (int32_t)i0, (int32_t)n, (int32_t)hf, (int32_t)hc};
                k++;
            }
        }
    }
    if (n_items > 1) qsort(tmp, n_items, sizeof *tmp, plugin_by_cost_desc);
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
    PLUGIN_COPY_IN(a, args_in);
    mla_job_t job;
    const plugin_mla_t *m = &job.m;
    attnrt_status_t st = plugin_mla_decode("cpu", &cpu_op_rules, NULL, &a, p->B, 1, &job.m);
    if (st != ATTNRT_OK) return st;
    if (m->T != p->T || m->Hq != p->Hq || m->D != p->D || m->Dv != p->Dv || m->sparse != p->sparse || m->topk != p->topk)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu mla run: shapes (T %lld, Hq %lld, D %lld/%lld, %s topk %lld) differ from the plan's "
                           "(T %lld, Hq %lld, D %lld/%lld, %s topk %lld); plan this batch again",
                           (long long)m->T, (long long)m->Hq, (long long)m->D, (long long)m->Dv,
                           m->sparse ? "sparse" : "dense", (long long)m->topk, (long long)p->T, (long long)p->Hq,
                           (long long)p->D, (long long)p->Dv, p->sparse ? "sparse" : "dense", (long long)p->topk);

    job.plan = p;
    job.lay = mla_layout(m->D, m->Dv);
    cpu_parallel_for(pool, p->num_items, mla_item_run, &job);
    return ATTNRT_OK;
}
