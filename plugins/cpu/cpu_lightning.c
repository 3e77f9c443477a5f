/* cpu_lightning.c — lightning (linear) attention with per-head decay lambda_h = exp(-slope_h) over state
 * slots [num_slots, H, Dk, Dv] f32.
 *
 * One work item is one (request, head): the head's [Dk, Dv] state is loaded into the participant's
 * scratch (zeroed instead when the request has no initial state: the slot is never read), the
 * request's tokens are folded in, and the state is written back. Items are independent: the pool runs
 * them in parallel.
 *
 * Decode (one token) is the recurrence itself: S = lambda S + k^T v; o = q S.
 * Prefill runs in chunks of CPU_LIGHTNING_CHUNK tokens from the state S0 before the chunk (i, j < c):
 *   o_i   = lambda^{i+1} q_i S0 + sum_{j<=i} lambda^{i-j} (q_i . k_j) v_j        (inter + intra)
 *   S_end = lambda^c S0 + sum_j lambda^{c-1-j} k_j^T v_j
 * which is the recurrence unrolled over the chunk: the same sums, only the rounding differs. Every
 * power has a non-negative exponent, so it lies in [0, 1] and cannot overflow however steep the decay,
 * and each is exp(-slope * n) computed in double, one rounding, rather than a chain of products.
 *
 * The state decays by the same factor at every token (or chunk) for thousands of steps, so rounding
 * lambda to f32 once would bias the old terms by (steps x 3e-8): 4e-5 after 4096 decode steps with
 * slope 1e-4. The decay is therefore applied as hi S + (lo S + new terms), lambda = hi + lo with
 * hi = (float) lambda: still f32 arithmetic, without the systematic error. (lo S must meet the new
 * terms before hi S: alone it is below half an ulp of hi S and would round away.)
 *
 * Metadata tensors are read at run time and trusted only as far as bounds go: query_start_loc is
 * clamped to [0, T], a slot outside [0, num_slots) makes the request padding.
 */
#include <math.h>
#include <string.h>

#include "cpu_gemm.h"
#include "cpu_linear.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_args.h"
#include "plugin_error.h"
#include "plugin_linear.h"
#include "plugin_struct.h"

/* Tokens per prefill chunk: the intra-chunk scores are a c x c triangle, the rest is linear in c. */
#define CPU_LIGHTNING_CHUNK 64

static const char OP[] = "lightning";

/* Byte offsets inside one participant's scratch slice. */
typedef struct lightning_layout {
    size_t s, q, k, kt, v, o, a, tmp, pw, total;
} lightning_layout_t;

/* Rows of the state updated per product in a prefill chunk (bounds the tmp buffer). */
#define CPU_LIGHTNING_STATE_ROWS 16

static lightning_layout_t lightning_layout(int64_t Dk, int64_t Dv)
{
    const size_t C = CPU_LIGHTNING_CHUNK, dk = (size_t)Dk, dv = (size_t)Dv, f = sizeof(float);
    lightning_layout_t l;
    size_t at = 0;
    l.s = at;  at += cpu_linear_align(dk * dv * f);  /* the head's state                       */
    l.q = at;  at += cpu_linear_align(C * dk * f);   /* the chunk's q, k, v in f32              */
    l.k = at;  at += cpu_linear_align(C * dk * f);   /* k rows; then lambda^{c-1-j} k_j, [Dk, C] */
    l.kt = at; at += cpu_linear_align(dk * C * f);   /* k transposed, [Dk, C]                   */
    l.v = at;  at += cpu_linear_align(C * dv * f);
    l.o = at;  at += cpu_linear_align(C * dv * f);   /* the chunk's outputs                     */
    l.a = at;  at += cpu_linear_align(C * C * f);    /* decayed causal scores, [C, C]           */
    l.tmp = at; at += cpu_linear_align(CPU_LIGHTNING_STATE_ROWS * dv * f); /* k^T v rows      */
    l.pw = at; at += cpu_linear_align((C + 1) * f);  /* lambda^n, n = 0 .. c                    */
    l.total = at;
    return l;
}

typedef struct lightning_job {
    const cpu_linear_plan_t *plan;
    lightning_layout_t       lay;
    plugin_linear_t          l; /* the run's args, decoded */
} lightning_job_t;

typedef struct lightning_scratch {
    float *s, *q, *k, *kt, *v, *o, *a, *tmp, *pw;
} lightning_scratch_t;

static lightning_scratch_t scratch_of(const lightning_job_t *job, unsigned worker)
{
    char *base = job->plan->scratch + (size_t)worker * job->plan->scratch_stride;
    const lightning_layout_t *l = &job->lay;
    lightning_scratch_t s = {(float *)(void *)(base + l->s),  (float *)(void *)(base + l->q),
                             (float *)(void *)(base + l->k),  (float *)(void *)(base + l->kt),
                             (float *)(void *)(base + l->v),  (float *)(void *)(base + l->o),
                             (float *)(void *)(base + l->a),  (float *)(void *)(base + l->tmp),
                             (float *)(void *)(base + l->pw)};
    return s;
}

/* Decodes token t, head h of q, k and v into row i of the chunk buffers. */
static void load_token(const lightning_job_t *job, const lightning_scratch_t *sc, int64_t t, int64_t h, int64_t i)
{
    const plugin_linear_t *l = &job->l;
    const size_t dk = (size_t)l->Dk, dv = (size_t)l->Dv;
    dc_row_to_f32(sc->q + (size_t)i * dk, plugin_view_at(&l->q, t, h), l->q.kind, dk, 1.0f);
    dc_row_to_f32(sc->k + (size_t)i * dk, plugin_view_at(&l->k, t, h), l->k.kind, dk, 1.0f);
    dc_row_to_f32(sc->v + (size_t)i * dv, plugin_view_at(&l->v, t, h), l->v.kind, dv, 1.0f);
}

static void store_out(const lightning_job_t *job, const float *row, int64_t t, int64_t h)
{
    dc_row_from_f32(plugin_view_at(&job->l.out, t, h), row, job->l.out.kind, (size_t)job->l.Dv, 1.0f);
}

/* y = (hi + lo) y + c x, with the decay factor split so that it is not rounded to one f32. */
static void decay_add_row(float *restrict y, const float *restrict x, float c, float hi, float lo, int64_t n)
{
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) /* blocks of 8 lanes: vectorised at -O2 (as in cpu_vec.h) */
        for (int l = 0; l < 8; l++) y[d + l] = hi * y[d + l] + (lo * y[d + l] + c * x[d + l]);
    for (; d < n; d++) y[d] = hi * y[d] + (lo * y[d] + c * x[d]);
}

static void split_power(double x, float *hi, float *lo)
{
    *hi = (float)x;
    *lo = (float)(x - (double)*hi);
}

/* One decode step: S = lambda S + k^T v, o = q S, fused in one pass over S, whose rows of Dv floats
 * are row_st apart (the pooled state itself: a decode reads and writes each state byte once, with
 * no copy through scratch); `zero`: S starts from zeros (no initial state). */
static void decode_token(const lightning_job_t *job, const lightning_scratch_t *sc, int64_t t, int64_t h,
                         double lambda, float *S, int64_t row_st, int zero)
{
    const int64_t Dk = job->l.Dk, Dv = job->l.Dv;
    float hi, lo;
    split_power(lambda, &hi, &lo);
    load_token(job, sc, t, h, 0);
    memset(sc->o, 0, (size_t)Dv * sizeof(float));
    for (int64_t a = 0; a < Dk; a++) {
        float *s = S + a * row_st;
        if (zero) memset(s, 0, (size_t)Dv * sizeof(float));
        decay_add_row(s, sc->v, sc->k[a], hi, lo, Dv);
        cpu_vec_axpy(sc->o, s, sc->q[a], Dv);
    }
    store_out(job, sc->o, t, h);
}

/* Tokens t0 .. t0 + n - 1 (n <= CPU_LIGHTNING_CHUNK) of head h, blockwise (see the file comment), as
 * matrix products: O = diag(lambda^{i+1}) Q S0 + (M o Q K^T) V with M_ij = lambda^{i-j} (j <= i, else
 * 0), and S = lambda^n S0 + (K diag(lambda^{n-1-j}))^T V. */
static void prefill_chunk(const lightning_job_t *job, const lightning_scratch_t *sc, int64_t t0, int64_t n,
                          int64_t h, double slope)
{
    const int64_t Dk = job->l.Dk, Dv = job->l.Dv, C = CPU_LIGHTNING_CHUNK;
    float *pw = sc->pw;
    for (int64_t m = 0; m <= n; m++) pw[m] = (float)exp(-slope * (double)m);
    for (int64_t i = 0; i < n; i++) load_token(job, sc, t0 + i, h, i);
    for (int64_t a0 = 0; a0 < Dk; a0 += 16) { /* kt = k^T, in strips that stay in L1 */
        const int64_t a1 = a0 + 16 < Dk ? a0 + 16 : Dk;
        for (int64_t j = 0; j < n; j++)
            for (int64_t a = a0; a < a1; a++) sc->kt[a * C + j] = sc->k[j * Dk + a];
    }

    /* inter-chunk: o_i = lambda^{i+1} q_i S0 */
    memset(sc->o, 0, (size_t)(n * Dv) * sizeof(float));
    cpu_gemm_acc(sc->o, Dv, sc->q, Dk, sc->s, Dv, n, Dv, Dk);
    for (int64_t i = 0; i < n; i++) cpu_vec_scale(sc->o + (size_t)(i * Dv), pw[i + 1], Dv);
    /* intra-chunk: the decayed causal kernel, the token itself included (lambda^0 = 1) */
    memset(sc->a, 0, (size_t)(n * C) * sizeof(float));
    cpu_gemm_acc(sc->a, C, sc->q, Dk, sc->kt, C, n, n, Dk);
    for (int64_t i = 0; i < n; i++) {
        float *ai = sc->a + (size_t)(i * C);
        for (int64_t j = 0; j <= i; j++) ai[j] *= pw[i - j];
        for (int64_t j = i + 1; j < n; j++) ai[j] = 0.0f;
    }
    cpu_gemm_acc(sc->o, Dv, sc->a, C, sc->v, Dv, n, Dv, n);
    for (int64_t i = 0; i < n; i++) store_out(job, sc->o + (size_t)(i * Dv), t0 + i, h);

    /* state: S = lambda^n S0 + sum_j lambda^{n-1-j} k_j^T v_j; the sum is built apart (tmp) so that the
     * decay can meet it as hi S + (lo S + sum) */
    for (int64_t a = 0; a < Dk; a++) /* k rows are no longer needed: reuse them as the decayed k^T */
        for (int64_t j = 0; j < n; j++) sc->k[a * C + j] = sc->kt[a * C + j] * pw[n - 1 - j];
    float hi, lo;
    split_power(exp(-slope * (double)n), &hi, &lo);
    for (int64_t a0 = 0; a0 < Dk; a0 += CPU_LIGHTNING_STATE_ROWS) {
        const int64_t rows = Dk - a0 < CPU_LIGHTNING_STATE_ROWS ? Dk - a0 : CPU_LIGHTNING_STATE_ROWS;
        memset(sc->tmp, 0, (size_t)(rows * Dv) * sizeof(float));
        cpu_gemm_acc(sc->tmp, Dv, sc->k + (size_t)(a0 * C), C, sc->v, Dv, rows, Dv, n);
        for (int64_t r = 0; r < rows; r++)
            decay_add_row(sc->s + (size_t)((a0 + r) * Dv), sc->tmp + (size_t)(r * Dv), 1.0f, hi, lo, Dv);
    }
}

static void lightning_item(void *ctx, size_t index, unsigned worker)
{
    const lightning_job_t *job = ctx;
    const plugin_linear_t *l = &job->l;
    const cpu_linear_item_t it = job->plan->items[index];
    const lightning_scratch_t sc = scratch_of(job, worker);
    const int64_t b = it.seq, h = it.head, Dk = l->Dk, Dv = l->Dv;
    const int64_t t_begin = plugin_clamp64(plugin_view_i32(&l->qsl, b), 0, l->T);
    const int64_t t_end = plugin_clamp64(plugin_view_i32(&l->qsl, b + 1), t_begin, l->T);
    const int64_t slot = plugin_view_i32(&l->slot_idx, b);

    if (slot < 0 || slot >= l->slots) { /* padding (or a slot that does not exist): zeros, state untouched */
        memset(sc.o, 0, (size_t)Dv * sizeof(float));
        for (int64_t t = t_begin; t < t_end; t++) store_out(job, sc.o, t, h);
        return;
    }
    const int has_init = plugin_view_flag(&l->has_init, b);
    if (t_end == t_begin && has_init) return; /* no token: the state stays as it is */

    float *pooled = (float *)(void *)plugin_view_at(&l->state, slot, h);
    const int64_t row_st = l->state.st[2];
    const double slope = (double)plugin_view_f32(&l->slopes, h);
    if (t_end - t_begin == 1) { /* decode: in place */
        decode_token(job, &sc, t_begin, h, exp(-slope), pooled, row_st, !has_init);
        return;
    }
    for (int64_t a = 0; a < Dk; a++) {
        float *s = sc.s + (size_t)(a * Dv);
        if (has_init)
            memcpy(s, pooled + a * row_st, (size_t)Dv * sizeof(float));
        else
            memset(s, 0, (size_t)Dv * sizeof(float));
    }

    for (int64_t t0 = t_begin; t0 < t_end; t0 += CPU_LIGHTNING_CHUNK) {
        const int64_t n = t_end - t0 < CPU_LIGHTNING_CHUNK ? t_end - t0 : CPU_LIGHTNING_CHUNK;
        prefill_chunk(job, &sc, t0, n, h, slope);
    }

    for (int64_t a = 0; a < Dk; a++)
        memcpy(pooled + a * row_st, sc.s + (size_t)(a * Dv), (size_t)Dv * sizeof(float));
}

attnrt_status_t cpu_lightning_plan(cpu_pool_t *pool, const attnrt_lightning_args_t *args_in,
                                   const attnrt_batch_host_t *batch_in, const attnrt_state_host_t *states, void **plan_out,
                                   size_t *workspace_bytes)
{
    (void)states; /* the kernel reads the device copies; the runtime has checked the host ones */
    attnrt_lightning_args_t a;
    attnrt_batch_host_t batch;
    plugin_linear_t l;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cpu", OP, a, args_in, batch, batch_in, PLUGIN_BATCH_QSL, plan_out,
                                          workspace_bytes);
    if (st == ATTNRT_OK) st = plugin_lightning_decode("cpu", &cpu_op_rules, NULL, &a, batch.num_seqs, 0, &l);
    if (st != ATTNRT_OK) return st;
    return cpu_linear_plan_make(pool, CPU_PLAN_LIGHTNING, OP, &batch, &l, lightning_layout(l.Dk, l.Dv).total, plan_out,
                                workspace_bytes);
}

attnrt_status_t cpu_lightning_run(cpu_pool_t *pool, const void *plan, const attnrt_lightning_args_t *args_in)
{
    const cpu_linear_plan_t *p = cpu_linear_plan_of(plan, CPU_PLAN_LIGHTNING, pool, OP, args_in);
    if (!p) return ATTNRT_ERR_INVALID_ARGUMENT;
    attnrt_lightning_args_t a;
    PLUGIN_COPY_IN(a, args_in);
    lightning_job_t job = {.plan = p};
    attnrt_status_t st = plugin_lightning_decode("cpu", &cpu_op_rules, NULL, &a, p->num_seqs, 1, &job.l);
    if (st == ATTNRT_OK) st = cpu_linear_check_run(p, &job.l, OP);
    if (st != ATTNRT_OK) return st;
    job.lay = lightning_layout(job.l.Dk, job.l.Dv);
    cpu_parallel_for(pool, p->num_items, lightning_item, &job);
    return ATTNRT_OK;
}
