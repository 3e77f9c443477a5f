/* cpu_gated_delta.c — the gated delta rule (Qwen3-Next / Kimi-style GDN) over state slots
 * [num_slots, HV, Dk, Dv] f32.
 *
 * One work item is one (request, value head hv), reading key head hv / (HV / H): the head's [Dk, Dv]
 * state is loaded into the participant's scratch (zeroed when the request has no initial state), the
 * request's tokens are applied, and the state is written back. The recurrence, per token two passes
 * over S:
 *   pass 1: S = e^g S, and u = S^T k on the way;   v' = beta (v - u)
 *   pass 2: S = S + k v'^T, and o = S^T q on the way.
 * Decode and speculative rounds run this recurrence token by token. A prefill (a request of more than
 * one token, no spec decoding) runs in chunks of CPU_GDN_CHUNK tokens as matrix products (the WY /
 * UT form of gated DeltaNet), from the state S0 before the chunk, with G_i = g_0 + .. + g_i and
 * k_i, q_i rows (i, j < n):
 *   delta_i = beta_i (v_i - e^{G_i} k_i S0) - sum_{j<i} beta_i e^{G_i - G_j} (k_i . k_j) delta_j
 *   o_i     = e^{G_i} q_i S0 + sum_{j<=i} e^{G_i - G_j} (q_i . k_j) delta_j
 *   S_end   = e^{G_{n-1}} S0 + sum_j e^{G_{n-1} - G_j} k_j^T delta_j
 * which is the recurrence unrolled (delta_i is token i's v' above): the same sums, only the rounding
 * differs. The decays are exponentials of differences of G, so no power under- or overflows alone.
 *
 * Speculative decoding (spec_state_indices [B, num_spec + 1], num_accepted [B]): the initial state comes
 * from spec_state_indices[b][num_accepted[b] - 1] and after token t the state is written to
 * spec_state_indices[b][t]; a request with spec_state_indices[b][0] < 0 is padding.
 *
 * Metadata tensors are read at run time and trusted only as far as bounds go: query_start_loc is
 * clamped to [0, T]; a slot outside [0, num_slots) is padding (non-spec), a zero initial state (spec
 * read) or a skipped write (spec write); num_accepted outside 1 ..= num_spec + 1 starts from zeros.
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

static const char OP[] = "gated_delta";

/* Tokens per prefill chunk: the intra-chunk products are C x C, the rest is linear in C. */
#define CPU_GDN_CHUNK 64

/* Byte offsets inside one participant's scratch slice; q, k, v, u, o hold one row each in the token
 * path and C rows in a prefill chunk. */
typedef struct gdn_layout {
    size_t s, q, k, v, u, o, kt, kk, qk, gc, bc, total;
} gdn_layout_t;

static gdn_layout_t gdn_layout(int64_t Dk, int64_t Dv)
{
    const size_t dk = (size_t)Dk, dv = (size_t)Dv, f = sizeof(float), C = CPU_GDN_CHUNK;
    gdn_layout_t l;
    size_t at = 0;
    l.s = at;  at += cpu_linear_align(dk * dv * f); /* the value head's state                 */
    l.q = at;  at += cpu_linear_align(C * dk * f);  /* q rows (normalised, scaled)            */
    l.k = at;  at += cpu_linear_align(C * dk * f);  /* k rows (normalised)                    */
    l.v = at;  at += cpu_linear_align(C * dv * f);
    l.u = at;  at += cpu_linear_align(C * dv * f);  /* S^T k, then v' (delta)                 */
    l.o = at;  at += cpu_linear_align(C * dv * f);
    l.kt = at; at += cpu_linear_align(dk * C * f);  /* k^T [Dk, C]; then decayed for the state */
    l.kk = at; at += cpu_linear_align(C * C * f);   /* k_i . k_j                              */
    l.qk = at; at += cpu_linear_align(C * C * f);   /* q_i . k_j, then decayed and masked     */
    l.gc = at; at += cpu_linear_align(C * sizeof(double)); /* G_i, cumulative gates          */
    l.bc = at; at += cpu_linear_align(C * f);       /* beta_i                                 */
    l.total = at;
    return l;
}

typedef struct gdn_job {
    const cpu_linear_plan_t *plan;
    gdn_layout_t             lay;
    plugin_linear_t          l;     /* the run's args, decoded */
    int64_t                  group; /* value heads per key head */
} gdn_job_t;

typedef struct gdn_scratch {
    float  *s, *q, *k, *v, *u, *o, *kt, *kk, *qk, *bc;
    double *gc;
} gdn_scratch_t;

static gdn_scratch_t scratch_of(const gdn_job_t *job, unsigned worker)
{
    char *base = job->plan->scratch + (size_t)worker * job->plan->scratch_stride;
    const gdn_layout_t *l = &job->lay;
    gdn_scratch_t s = {(float *)(void *)(base + l->s),  (float *)(void *)(base + l->q),  (float *)(void *)(base + l->k),
                       (float *)(void *)(base + l->v),  (float *)(void *)(base + l->u),  (float *)(void *)(base + l->o),
                       (float *)(void *)(base + l->kt), (float *)(void *)(base + l->kk), (float *)(void *)(base + l->qk),
                       (float *)(void *)(base + l->bc), (double *)(void *)(base + l->gc)};
    return s;
}

/* x / sqrt(sum x^2 + 1e-6), in place. */
static void l2_normalise(float *x, int64_t n)
{
    const float inv = (float)(1.0 / sqrt((double)cpu_vec_dot(x, x, n) + 1e-6));
    cpu_vec_scale(x, inv, n);
}

/* Slot spec_state_indices[b][col]. */
static int64_t spec_slot(const gdn_job_t *job, int64_t b, int64_t col) { return plugin_view_i32_2(&job->l.spec_idx, b, col); }

static void load_state(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t slot, int64_t hv)
{
    const int64_t Dk = job->l.Dk, Dv = job->l.Dv;
    if (slot < 0 || slot >= job->l.slots) {
        memset(sc->s, 0, (size_t)(Dk * Dv) * sizeof(float));
        return;
    }
    const float *pooled = (const float *)(const void *)plugin_view_at(&job->l.state, slot, hv);
    for (int64_t a = 0; a < Dk; a++)
        memcpy(sc->s + (size_t)(a * Dv), pooled + a * job->l.state.st[2], (size_t)Dv * sizeof(float));
}

static void store_state(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t slot, int64_t hv)
{
    const int64_t Dk = job->l.Dk, Dv = job->l.Dv;
    if (slot < 0 || slot >= job->l.slots) return;
    float *pooled = (float *)(void *)plugin_view_at(&job->l.state, slot, hv);
    for (int64_t a = 0; a < Dk; a++)
        memcpy(pooled + a * job->l.state.st[2], sc->s + (size_t)(a * Dv), (size_t)Dv * sizeof(float));
}

/* Token t of value head hv into q, k, v (rows of Dk, Dk, Dv floats): normalised, q scaled. */
static void load_token(const gdn_job_t *job, int64_t t, int64_t hv, float *q, float *k, float *v)
{
    const plugin_linear_t *l = &job->l;
    const int64_t Dk = l->Dk, Dv = l->Dv, kh = hv / job->group;
    dc_row_to_f32(q, plugin_view_at(&l->q, t, kh), l->q.kind, (size_t)Dk, 1.0f);
    dc_row_to_f32(k, plugin_view_at(&l->k, t, kh), l->k.kind, (size_t)Dk, 1.0f);
    dc_row_to_f32(v, plugin_view_at(&l->v, t, hv), l->v.kind, (size_t)Dv, 1.0f);
    if (l->l2norm) {
        l2_normalise(q, Dk);
        l2_normalise(k, Dk);
    }
    cpu_vec_scale(q, l->scale, Dk);
}

static void store_out(const gdn_job_t *job, const float *row, int64_t t, int64_t hv)
{
    dc_row_from_f32(plugin_view_at(&job->l.out, t, hv), row, job->l.out.kind, (size_t)job->l.Dv, 1.0f);
}

/* Tokens t0 .. t0 + n - 1 (n <= CPU_GDN_CHUNK) of value head hv, blockwise (see the file comment). */
static void gdn_chunk(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t t0, int64_t n, int64_t hv)
{
    const int64_t Dk = job->l.Dk, Dv = job->l.Dv, C = CPU_GDN_CHUNK;
    double G = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = t0 + i;
        load_token(job, t, hv, sc->q + i * Dk, sc->k + i * Dk, sc->v + i * Dv);
        G += (double)plugin_view_scalar(&job->l.g, t, hv);
        sc->gc[i] = G;
        sc->bc[i] = plugin_view_scalar(&job->l.beta, t, hv);
    }
    for (int64_t a0 = 0; a0 < Dk; a0 += 16) { /* kt = k^T, in strips that stay in L1 */
        const int64_t a1 = a0 + 16 < Dk ? a0 + 16 : Dk;
        for (int64_t j = 0; j < n; j++)
            for (int64_t a = a0; a < a1; a++) sc->kt[a * C + j] = sc->k[j * Dk + a];
    }
    /* u = K S0, o = Q S0, kk = K K^T, qk = Q K^T */
    memset(sc->u, 0, (size_t)(n * Dv) * sizeof(float));
    memset(sc->o, 0, (size_t)(n * Dv) * sizeof(float));
    memset(sc->kk, 0, (size_t)(n * C) * sizeof(float));
    memset(sc->qk, 0, (size_t)(n * C) * sizeof(float));
    cpu_gemm_acc(sc->u, Dv, sc->k, Dk, sc->s, Dv, n, Dv, Dk);
    cpu_gemm_acc(sc->o, Dv, sc->q, Dk, sc->s, Dv, n, Dv, Dk);
    cpu_gemm_acc(sc->kk, C, sc->k, Dk, sc->kt, C, n, n, Dk);
    cpu_gemm_acc(sc->qk, C, sc->q, Dk, sc->kt, C, n, n, Dk);

    /* delta_i = beta_i (v_i - e^{G_i} k_i S0) - sum_{j<i} beta_i e^{G_i - G_j} kk_ij delta_j, in place of u */
    for (int64_t i = 0; i < n; i++) {
        float *d = sc->u + i * Dv;
        const float beta = sc->bc[i];
        cpu_vec_scale(d, -beta * (float)exp(sc->gc[i]), Dv);
        cpu_vec_axpy(d, sc->v + i * Dv, beta, Dv);
        for (int64_t j = 0; j < i; j++)
            cpu_vec_axpy(d, sc->u + j * Dv, -beta * (float)exp(sc->gc[i] - sc->gc[j]) * sc->kk[i * C + j], Dv);
    }
    /* o_i = e^{G_i} q_i S0 + sum_{j<=i} e^{G_i - G_j} qk_ij delta_j */
    for (int64_t i = 0; i < n; i++) {
        cpu_vec_scale(sc->o + i * Dv, (float)exp(sc->gc[i]), Dv);
        float *w = sc->qk + i * C;
        for (int64_t j = 0; j <= i; j++) w[j] *= (float)exp(sc->gc[i] - sc->gc[j]);
        for (int64_t j = i + 1; j < n; j++) w[j] = 0.0f;
    }
    cpu_gemm_acc(sc->o, Dv, sc->qk, C, sc->u, Dv, n, Dv, n);
    for (int64_t i = 0; i < n; i++) store_out(job, sc->o + i * Dv, t0 + i, hv);

    /* S = e^{G_{n-1}} S0 + (K^T diag(e^{G_{n-1} - G_j})) delta */
    const double last = sc->gc[n - 1];
    float *decay = sc->o; /* the outputs are stored: o is free */
    for (int64_t j = 0; j < n; j++) decay[j] = (float)exp(last - sc->gc[j]);
    for (int64_t a = 0; a < Dk; a++)
        for (int64_t j = 0; j < n; j++) sc->kt[a * C + j] *= decay[j];
    cpu_vec_scale(sc->s, (float)exp(last), Dk * Dv);
    cpu_gemm_acc(sc->s, Dv, sc->kt, C, sc->u, Dv, Dk, Dv, n);
}

/* One token t of value head hv on the state S (rows of Dv floats, row_st apart: the scratch copy, or
 * for a plain decode the pooled state itself, read and written in place); writes out[t, hv]. */
static void gdn_token(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t t, int64_t hv, float *S, int64_t row_st)
{
    const int64_t Dk = job->l.Dk, Dv = job->l.Dv;
    load_token(job, t, hv, sc->q, sc->k, sc->v);
    const float g = plugin_view_scalar(&job->l.g, t, hv);
    const float beta = plugin_view_scalar(&job->l.beta, t, hv);

    const float decay = (float)exp((double)g);
    memset(sc->u, 0, (size_t)Dv * sizeof(float));
    for (int64_t a = 0; a < Dk; a++) { /* S = e^g S; u = S^T k */
        float *s = S + a * row_st;
        cpu_vec_scale(s, decay, Dv);
        cpu_vec_axpy(sc->u, s, sc->k[a], Dv);
    }
    cpu_vec_scale(sc->u, -beta, Dv); /* v' = beta v - beta S^T k */
    cpu_vec_axpy(sc->u, sc->v, beta, Dv);
    memset(sc->o, 0, (size_t)Dv * sizeof(float));
    for (int64_t a = 0; a < Dk; a++) { /* S += k v'^T; o = S^T q */
        float *s = S + a * row_st;
        cpu_vec_axpy(s, sc->u, sc->k[a], Dv);
        cpu_vec_axpy(sc->o, s, sc->q[a], Dv);
    }
    store_out(job, sc->o, t, hv);
}

static void gdn_item(void *ctx, size_t index, unsigned worker)
{
    const gdn_job_t *job = ctx;
    const plugin_linear_t *l = &job->l;
    const cpu_linear_item_t it = job->plan->items[index];
    const gdn_scratch_t sc = scratch_of(job, worker);
    const int64_t b = it.seq, hv = it.head;
    const int64_t t_begin = plugin_clamp64(plugin_view_i32(&l->qsl, b), 0, l->T);
    const int64_t t_end = plugin_clamp64(plugin_view_i32(&l->qsl, b + 1), t_begin, l->T);

    int64_t read_slot, slot = -1;
    int padding;
    if (l->spec) {
        padding = spec_slot(job, b, 0) < 0;
        const int64_t na = plugin_view_i32(&l->accepted, b);
        read_slot = na >= 1 && na <= l->num_spec + 1 ? spec_slot(job, b, na - 1) : -1;
    } else {
        slot = plugin_view_i32(&l->slot_idx, b);
        padding = slot < 0 || slot >= l->slots;
        read_slot = slot;
    }
    if (padding) { /* outputs 0, no slot read or written */
        memset(sc.o, 0, (size_t)l->Dv * sizeof(float));
        for (int64_t t = t_begin; t < t_end; t++) store_out(job, sc.o, t, hv);
        return;
    }
    const int has_init = plugin_view_flag(&l->has_init, b);
    if (t_end == t_begin && (has_init || l->spec)) return; /* no token: no state changes */
    if (!l->spec && t_end - t_begin == 1) { /* a plain decode: in place, each state byte read and written once */
        float *pooled = (float *)(void *)plugin_view_at(&l->state, slot, hv);
        if (!has_init)
            for (int64_t a = 0; a < l->Dk; a++) memset(pooled + a * l->state.st[2], 0, (size_t)l->Dv * sizeof(float));
        gdn_token(job, &sc, t_begin, hv, pooled, l->state.st[2]);
        return;
    }
    load_state(job, &sc, has_init ? read_slot : -1, hv);

    if (l->spec) {
        for (int64_t t = t_begin; t < t_end; t++) {
            gdn_token(job, &sc, t, hv, sc.s, l->Dv);
            if (t - t_begin <= l->num_spec) store_state(job, &sc, spec_slot(job, b, t - t_begin), hv);
        }
    } else {
        for (int64_t t0 = t_begin; t0 < t_end; t0 += CPU_GDN_CHUNK)
            gdn_chunk(job, &sc, t0, t_end - t0 < CPU_GDN_CHUNK ? t_end - t0 : CPU_GDN_CHUNK, hv);
        store_state(job, &sc, slot, hv);
    }
}

attnrt_status_t cpu_gated_delta_plan(cpu_pool_t *pool, const attnrt_gated_delta_args_t *args_in,
                                     const attnrt_batch_host_t *batch_in, const attnrt_state_host_t *states_in,
                                     void **plan_out, size_t *workspace_bytes)
{
    attnrt_gated_delta_args_t a;
    attnrt_batch_host_t batch;
    plugin_linear_t l;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cpu", OP, a, args_in, batch, batch_in, PLUGIN_BATCH_QSL, plan_out,
                                          workspace_bytes);
    if (st == ATTNRT_OK) st = plugin_gated_delta_decode("cpu", &cpu_op_rules, NULL, &a, batch.num_seqs, 0, &l);
    if (st != ATTNRT_OK) return st;
    if (states_in) { /* the host copies the runtime checked must describe the same speculation */
        attnrt_state_host_t states;
        PLUGIN_COPY_IN(states, states_in);
        const int host_spec = states.spec_state_indices != NULL;
        if (host_spec != l.spec || (l.spec && states.num_spec != l.num_spec))
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                               "cpu gated_delta plan: the host states say %s (num_spec %d) but the args %s (num_spec %lld)",
                               host_spec ? "spec decoding" : "no spec decoding", states.num_spec,
                               l.spec ? "have spec_state_indices" : "have none", (long long)l.num_spec);
    }
    return cpu_linear_plan_make(pool, CPU_PLAN_GATED_DELTA, OP, &batch, &l, gdn_layout(l.Dk, l.Dv).total, plan_out,
                                workspace_bytes);
}

attnrt_status_t cpu_gated_delta_run(cpu_pool_t *pool, const void *plan, const attnrt_gated_delta_args_t *args_in)
{
    const cpu_linear_plan_t *p = cpu_linear_plan_of(plan, CPU_PLAN_GATED_DELTA, pool, OP, args_in);
    if (!p) return ATTNRT_ERR_INVALID_ARGUMENT;
    attnrt_gated_delta_args_t a;
    PLUGIN_COPY_IN(a, args_in);
    gdn_job_t job = {.plan = p};
    attnrt_status_t st = plugin_gated_delta_decode("cpu", &cpu_op_rules, NULL, &a, p->num_seqs, 1, &job.l);
    if (st == ATTNRT_OK) st = cpu_linear_check_run(p, &job.l, OP);
    if (st != ATTNRT_OK) return st;
    job.lay = gdn_layout(job.l.Dk, job.l.Dv);
    job.group = job.l.HV / job.l.H;
    cpu_parallel_for(pool, p->num_items, gdn_item, &job);
    return ATTNRT_OK;
}
