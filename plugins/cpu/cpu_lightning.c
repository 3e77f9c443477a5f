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

#include "cpu_args.h"
#include "cpu_gemm.h"
#include "cpu_linear.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_error.h"

/* Tokens per prefill chunk: the intra-chunk scores are a c x c triangle, the rest is linear in c. */
#define CPU_LIGHTNING_CHUNK 64

static const char OP[] = "lightning";

typedef struct lightning_shape {
    int64_t   T, B, H, Dk, Dv, slots;
    dc_kind_t q, k, v, out;
} lightning_shape_t;

/* Checks every tensor against the others (B from the caller: the host batch at plan, the plan at run);
 * with `run`, also that the tensors a kernel reads carry data. */
static attnrt_status_t lightning_check(const attnrt_lightning_args_t *a, int64_t B, int run, lightning_shape_t *sh)
{
    attnrt_status_t st;
    if (!a->query || !a->key || !a->value || !a->out || !a->slopes || !a->state || !a->query_start_loc ||
        !a->state_indices)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu lightning: query, key, value, out, slopes, state, query_start_loc and state_indices "
                           "are required");
    if ((st = cpu_check_shape(a->query, OP, "query", 3, (const int64_t[]){CPU_ANY_DIM, CPU_ANY_DIM, CPU_ANY_DIM}, 1)))
        return st;
    const int64_t T = a->query->shape[0], H = a->query->shape[1], Dk = a->query->shape[2];
    if ((st = cpu_check_shape(a->value, OP, "value", 3, (const int64_t[]){T, H, CPU_ANY_DIM}, 1))) return st;
    const int64_t Dv = a->value->shape[2];
    if ((st = cpu_check_shape(a->key, OP, "key", 3, (const int64_t[]){T, H, Dk}, 1))) return st;
    if ((st = cpu_check_shape(a->out, OP, "out", 3, (const int64_t[]){T, H, Dv}, 1))) return st;
    if ((st = cpu_check_shape(a->slopes, OP, "slopes", 1, (const int64_t[]){H}, 0))) return st;
    if ((st = cpu_check_shape(a->state, OP, "state", 4, (const int64_t[]){CPU_ANY_DIM, H, Dk, Dv}, 1))) return st;
    if ((st = cpu_check_shape(a->query_start_loc, OP, "query_start_loc", 1, (const int64_t[]){B + 1}, 0))) return st;
    if ((st = cpu_check_shape(a->state_indices, OP, "state_indices", 1, (const int64_t[]){B}, 0))) return st;
    if (a->has_initial_state &&
        (st = cpu_check_shape(a->has_initial_state, OP, "has_initial_state", 1, (const int64_t[]){B}, 0)))
        return st;

    if ((st = cpu_check_act(a->query, OP, "query")) || (st = cpu_check_act(a->key, OP, "key")) ||
        (st = cpu_check_act(a->value, OP, "value")))
        return st;
    if ((st = cpu_check_out_kind(dc_kind_of(a->query->dtype), dc_kind_of(a->out->dtype), OP))) return st;
    if ((st = cpu_check_dtype(a->slopes, OP, "slopes", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")) ||
        (st = cpu_check_dtype(a->state, OP, "state", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")) ||
        (st = cpu_check_dtype(a->query_start_loc, OP, "query_start_loc", ATTNRT_DTYPE_CODE_INT, 32, "int32")) ||
        (st = cpu_check_dtype(a->state_indices, OP, "state_indices", ATTNRT_DTYPE_CODE_INT, 32, "int32")))
        return st;
    if (a->has_initial_state && (st = cpu_check_flag(a->has_initial_state, OP, "has_initial_state"))) return st;

    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_LIGHTNING;
    q.q_dtype = a->query->dtype;
    q.head_dim_qk = (uint32_t)(Dk > UINT32_MAX ? UINT32_MAX : Dk);
    q.head_dim_v = (uint32_t)(Dv > UINT32_MAX ? UINT32_MAX : Dv);
    q.num_q_heads = (uint32_t)(H > UINT32_MAX ? UINT32_MAX : H);
    char reason[256];
    if (Dk < 1 || Dv < 1 || cpu_op_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu lightning: %s", Dk < 1 || Dv < 1 ? "head dims must be >= 1" : reason);

    /* per-token tensors of a batch without tokens may have no data (they have no elements) */
    if (run && B > 0 &&
        ((T > 0 && (!a->query->data || !a->key->data || !a->value->data || !a->out->data)) || !a->slopes->data ||
         !a->state->data || !a->query_start_loc->data || !a->state_indices->data))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu lightning run: a required tensor has no data");

    *sh = (lightning_shape_t){T, B, H, Dk, Dv, a->state->shape[0], dc_kind_of(a->query->dtype),
                              dc_kind_of(a->key->dtype), dc_kind_of(a->value->dtype), dc_kind_of(a->out->dtype)};
    return ATTNRT_OK;
}

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
    int64_t                  T, H, Dk, Dv, slots;
    const char *q, *k, *v;
    int64_t     q_st[2], k_st[2], v_st[2];
    dc_kind_t   q_kind, k_kind, v_kind;
    size_t      q_es, k_es, v_es;
    char       *out;
    int64_t     out_st[2];
    dc_kind_t   out_kind;
    size_t      out_es;
    const float *slopes;
    int64_t      slopes_st;
    float       *state;
    int64_t      state_st[3];
    const attnrt_tensor_t *qsl, *slot_idx, *has_init;
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
    const size_t dk = (size_t)job->Dk, dv = (size_t)job->Dv;
    dc_row_to_f32(sc->q + (size_t)i * dk, job->q + (size_t)(t * job->q_st[0] + h * job->q_st[1]) * job->q_es,
                  job->q_kind, dk, 1.0f);
    dc_row_to_f32(sc->k + (size_t)i * dk, job->k + (size_t)(t * job->k_st[0] + h * job->k_st[1]) * job->k_es,
                  job->k_kind, dk, 1.0f);
    dc_row_to_f32(sc->v + (size_t)i * dv, job->v + (size_t)(t * job->v_st[0] + h * job->v_st[1]) * job->v_es,
                  job->v_kind, dv, 1.0f);
}

static void store_out(const lightning_job_t *job, const float *row, int64_t t, int64_t h)
{
    char *o = job->out + (size_t)(t * job->out_st[0] + h * job->out_st[1]) * job->out_es;
    dc_row_from_f32(o, row, job->out_kind, (size_t)job->Dv, 1.0f);
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
    const int64_t Dk = job->Dk, Dv = job->Dv;
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
    const int64_t Dk = job->Dk, Dv = job->Dv, C = CPU_LIGHTNING_CHUNK;
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
    const cpu_linear_item_t it = job->plan->items[index];
    const lightning_scratch_t sc = scratch_of(job, worker);
    const int64_t b = it.seq, h = it.head, Dk = job->Dk, Dv = job->Dv;
    const int64_t t_begin = cpu_clamp64(cpu_i32_at(job->qsl, b), 0, job->T);
    const int64_t t_end = cpu_clamp64(cpu_i32_at(job->qsl, b + 1), t_begin, job->T);
    const int64_t slot = cpu_i32_at(job->slot_idx, b);

    if (slot < 0 || slot >= job->slots) { /* padding (or a slot that does not exist): zeros, state untouched */
        memset(sc.o, 0, (size_t)Dv * sizeof(float));
        for (int64_t t = t_begin; t < t_end; t++) store_out(job, sc.o, t, h);
        return;
    }
    const int has_init = cpu_flag_at(job->has_init, b);
    if (t_end == t_begin && has_init) return; /* no token: the state stays as it is */

    float *pooled = job->state + slot * job->state_st[0] + h * job->state_st[1];
    const double slope = (double)job->slopes[h * job->slopes_st];
    if (t_end - t_begin == 1) { /* decode: in place */
        decode_token(job, &sc, t_begin, h, exp(-slope), pooled, job->state_st[2], !has_init);
        return;
    }
    for (int64_t a = 0; a < Dk; a++) {
        float *s = sc.s + (size_t)(a * Dv);
        if (has_init)
            memcpy(s, pooled + a * job->state_st[2], (size_t)Dv * sizeof(float));
        else
            memset(s, 0, (size_t)Dv * sizeof(float));
    }

    for (int64_t t0 = t_begin; t0 < t_end; t0 += CPU_LIGHTNING_CHUNK) {
        const int64_t n = t_end - t0 < CPU_LIGHTNING_CHUNK ? t_end - t0 : CPU_LIGHTNING_CHUNK;
        prefill_chunk(job, &sc, t0, n, h, slope);
    }

    for (int64_t a = 0; a < Dk; a++)
        memcpy(pooled + a * job->state_st[2], sc.s + (size_t)(a * Dv), (size_t)Dv * sizeof(float));
}

attnrt_status_t cpu_lightning_plan(cpu_pool_t *pool, const attnrt_lightning_args_t *args_in,
                                   const attnrt_batch_host_t *batch_in, const attnrt_state_host_t *states, void **plan_out,
                                   size_t *workspace_bytes)
{
    (void)states; /* the kernel reads the device copies; the runtime has checked the host ones */
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu lightning plan: args, batch and both outputs are required");
    attnrt_lightning_args_t a;
    attnrt_batch_host_t batch;
    cpu_args_copy(&a, sizeof a, args_in, args_in->struct_size);
    cpu_args_copy(&batch, sizeof batch, batch_in, batch_in->struct_size);
    if (batch.num_seqs < 0 || (batch.num_seqs > 0 && !batch.query_start_loc))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu lightning plan: the host batch has %d requests and %s",
                           batch.num_seqs, batch.query_start_loc ? "a query_start_loc" : "no query_start_loc");
    lightning_shape_t sh;
    attnrt_status_t st = lightning_check(&a, batch.num_seqs, 0, &sh);
    if (st != ATTNRT_OK) return st;

    cpu_linear_plan_t *p = NULL;
    st = cpu_linear_plan_new(pool, CPU_PLAN_LIGHTNING, OP, &batch, sh.B, sh.H, lightning_layout(sh.Dk, sh.Dv).total, &p);
    if (st != ATTNRT_OK) return st;
    p->num_tokens = sh.T;
    p->num_seqs = sh.B;
    p->num_heads = sh.H;
    p->num_k_heads = sh.H;
    p->head_dim_k = sh.Dk;
    p->head_dim_v = sh.Dv;
    *plan_out = p;
    *workspace_bytes = 0; /* scratch lives in the plan */
    return ATTNRT_OK;
}

void cpu_lightning_plan_destroy(void *plan) { cpu_linear_plan_free(plan); }

attnrt_status_t cpu_lightning_run(cpu_pool_t *pool, const void *plan, const attnrt_lightning_args_t *args_in)
{
    const cpu_linear_plan_t *p = cpu_linear_plan_of(plan, CPU_PLAN_LIGHTNING, pool, OP);
    if (!p) return ATTNRT_ERR_INVALID_ARGUMENT;
    if (!args_in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu lightning run: args are required");
    attnrt_lightning_args_t a;
    cpu_args_copy(&a, sizeof a, args_in, args_in->struct_size);
    lightning_shape_t sh;
    attnrt_status_t st = lightning_check(&a, p->num_seqs, 1, &sh);
    if (st != ATTNRT_OK) return st;
    if (sh.T != p->num_tokens || sh.H != p->num_heads || sh.Dk != p->head_dim_k || sh.Dv != p->head_dim_v)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu lightning run: shapes (T %lld, H %lld, Dk %lld, Dv %lld) differ from the plan's "
                           "(T %lld, H %lld, Dk %lld, Dv %lld); plan this batch again",
                           (long long)sh.T, (long long)sh.H, (long long)sh.Dk, (long long)sh.Dv,
                           (long long)p->num_tokens, (long long)p->num_heads, (long long)p->head_dim_k,
                           (long long)p->head_dim_v);

    lightning_job_t job;
    memset(&job, 0, sizeof job);
    job.plan = p;
    job.lay = lightning_layout(sh.Dk, sh.Dv);
    job.T = sh.T;
    job.H = sh.H;
    job.Dk = sh.Dk;
    job.Dv = sh.Dv;
    job.slots = sh.slots;
    job.q = a.query->data;
    job.k = a.key->data;
    job.v = a.value->data;
    job.out = a.out->data;
    for (int i = 0; i < 2; i++) {
        job.q_st[i] = a.query->strides[i];
        job.k_st[i] = a.key->strides[i];
        job.v_st[i] = a.value->strides[i];
        job.out_st[i] = a.out->strides[i];
    }
    job.q_kind = sh.q;
    job.k_kind = sh.k;
    job.v_kind = sh.v;
    job.out_kind = sh.out;
    job.q_es = dc_kind_size(sh.q);
    job.k_es = dc_kind_size(sh.k);
    job.v_es = dc_kind_size(sh.v);
    job.out_es = dc_kind_size(sh.out);
    job.slopes = a.slopes->data;
    job.slopes_st = a.slopes->strides[0];
    job.state = a.state->data;
    for (int i = 0; i < 3; i++) job.state_st[i] = a.state->strides[i];
    job.qsl = a.query_start_loc;
    job.slot_idx = a.state_indices;
    job.has_init = a.has_initial_state;

    cpu_parallel_for(pool, p->num_items, lightning_item, &job);
    return ATTNRT_OK;
}
