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

#include "cpu_args.h"
#include "cpu_gemm.h"
#include "cpu_linear.h"
#include "cpu_ops.h"
#include "cpu_vec.h"
#include "dtype_convert.h"
#include "plugin_error.h"

static const char OP[] = "gated_delta";

typedef struct gdn_shape {
    int64_t   T, B, H, HV, Dk, Dv, slots, num_spec;
    int       spec;
    dc_kind_t q, k, v, g, beta, out;
} gdn_shape_t;

#define ANY CPU_ANY_DIM

static attnrt_status_t gdn_check(const attnrt_gated_delta_args_t *a, int64_t B, int run, gdn_shape_t *sh)
{
    attnrt_status_t st;
    const int spec = a->spec_state_indices != NULL;
    if (!a->query || !a->key || !a->value || !a->g || !a->beta || !a->out || !a->state || !a->query_start_loc ||
        (!spec && !a->state_indices) || (spec && !a->num_accepted))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu gated_delta: query, key, value, g, beta, out, state, query_start_loc and state_indices "
                           "(num_accepted with spec_state_indices) are required");
    if ((st = cpu_check_shape(a->query, OP, "query", 3, (const int64_t[]){ANY, ANY, ANY}, 1))) return st;
    const int64_t T = a->query->shape[0], H = a->query->shape[1], Dk = a->query->shape[2];
    if ((st = cpu_check_shape(a->value, OP, "value", 3, (const int64_t[]){T, ANY, ANY}, 1))) return st;
    const int64_t HV = a->value->shape[1], Dv = a->value->shape[2];
    if (H < 1 || HV < 1 || HV % H != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta: %lld value heads are not a multiple of %lld key heads",
                           (long long)HV, (long long)H);
    if ((st = cpu_check_shape(a->key, OP, "key", 3, (const int64_t[]){T, H, Dk}, 1))) return st;
    if ((st = cpu_check_shape(a->g, OP, "g", 2, (const int64_t[]){T, HV}, 0))) return st;
    if ((st = cpu_check_shape(a->beta, OP, "beta", 2, (const int64_t[]){T, HV}, 0))) return st;
    if ((st = cpu_check_shape(a->out, OP, "out", 3, (const int64_t[]){T, HV, Dv}, 1))) return st;
    if ((st = cpu_check_shape(a->state, OP, "state", 4, (const int64_t[]){ANY, HV, Dk, Dv}, 1))) return st;
    if ((st = cpu_check_shape(a->query_start_loc, OP, "query_start_loc", 1, (const int64_t[]){B + 1}, 0))) return st;
    if (a->state_indices && (st = cpu_check_shape(a->state_indices, OP, "state_indices", 1, (const int64_t[]){B}, 0)))
        return st;
    if (a->has_initial_state &&
        (st = cpu_check_shape(a->has_initial_state, OP, "has_initial_state", 1, (const int64_t[]){B}, 0)))
        return st;
    int64_t num_spec = 0;
    if (spec) {
        if ((st = cpu_check_shape(a->spec_state_indices, OP, "spec_state_indices", 2, (const int64_t[]){B, ANY}, 0)))
            return st;
        num_spec = a->spec_state_indices->shape[1] - 1;
        if (num_spec < 0)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta: spec_state_indices has no column");
        if ((st = cpu_check_shape(a->num_accepted, OP, "num_accepted", 1, (const int64_t[]){B}, 0))) return st;
    }

    if ((st = cpu_check_act(a->query, OP, "query")) || (st = cpu_check_act(a->key, OP, "key")) ||
        (st = cpu_check_act(a->value, OP, "value")) || (st = cpu_check_act(a->g, OP, "g")) ||
        (st = cpu_check_act(a->beta, OP, "beta")))
        return st;
    if ((st = cpu_check_out_kind(dc_kind_of(a->query->dtype), dc_kind_of(a->out->dtype), OP))) return st;
    if ((st = cpu_check_dtype(a->state, OP, "state", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")) ||
        (st = cpu_check_dtype(a->query_start_loc, OP, "query_start_loc", ATTNRT_DTYPE_CODE_INT, 32, "int32")))
        return st;
    if (a->state_indices && (st = cpu_check_dtype(a->state_indices, OP, "state_indices", ATTNRT_DTYPE_CODE_INT, 32, "int32")))
        return st;
    if (spec && ((st = cpu_check_dtype(a->spec_state_indices, OP, "spec_state_indices", ATTNRT_DTYPE_CODE_INT, 32, "int32")) ||
                 (st = cpu_check_dtype(a->num_accepted, OP, "num_accepted", ATTNRT_DTYPE_CODE_INT, 32, "int32"))))
        return st;
    if (a->has_initial_state && (st = cpu_check_flag(a->has_initial_state, OP, "has_initial_state"))) return st;

    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_GATED_DELTA;
    q.q_dtype = a->query->dtype;
    q.head_dim_qk = (uint32_t)(Dk > UINT32_MAX ? UINT32_MAX : Dk);
    q.head_dim_v = (uint32_t)(Dv > UINT32_MAX ? UINT32_MAX : Dv);
    char reason[256];
    if (Dk < 1 || Dv < 1 || cpu_op_check(&q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "cpu gated_delta: %s", Dk < 1 || Dv < 1 ? "head dims must be >= 1" : reason);
    if (!(a->scale >= 0.0f) || isinf(a->scale))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta: scale %g is not a finite number >= 0", (double)a->scale);

    /* per-token tensors of a batch without tokens may have no data (they have no elements) */
    if (run && B > 0 &&
        ((T > 0 && (!a->query->data || !a->key->data || !a->value->data || !a->g->data || !a->beta->data ||
                    !a->out->data)) ||
         !a->state->data || !a->query_start_loc->data || (!spec && !a->state_indices->data) ||
         (spec && (!a->spec_state_indices->data || !a->num_accepted->data))))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta run: a required tensor has no data");

    *sh = (gdn_shape_t){T, B, H, HV, Dk, Dv, a->state->shape[0], num_spec, spec,
                        dc_kind_of(a->query->dtype), dc_kind_of(a->key->dtype), dc_kind_of(a->value->dtype),
                        dc_kind_of(a->g->dtype), dc_kind_of(a->beta->dtype), dc_kind_of(a->out->dtype)};
    return ATTNRT_OK;
}

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
    int64_t T, H, HV, group, Dk, Dv, slots, num_spec;
    int     spec, l2norm;
    float   scale;
    const char *q, *k, *v, *g, *beta;
    int64_t     q_st[2], k_st[2], v_st[2], g_st[2], beta_st[2];
    dc_kind_t   q_kind, k_kind, v_kind, g_kind, beta_kind;
    size_t      q_es, k_es, v_es;
    char       *out;
    int64_t     out_st[2];
    dc_kind_t   out_kind;
    size_t      out_es;
    float      *state;
    int64_t     state_st[3];
    const attnrt_tensor_t *qsl, *slot_idx, *has_init, *spec_idx, *accepted;
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
static int64_t spec_slot(const gdn_job_t *job, int64_t b, int64_t col)
{
    const attnrt_tensor_t *t = job->spec_idx;
    return ((const int32_t *)t->data)[b * t->strides[0] + col * t->strides[1]];
}

static void load_state(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t slot, int64_t hv)
{
    const int64_t Dk = job->Dk, Dv = job->Dv;
    if (slot < 0 || slot >= job->slots) {
        memset(sc->s, 0, (size_t)(Dk * Dv) * sizeof(float));
        return;
    }
    const float *pooled = job->state + slot * job->state_st[0] + hv * job->state_st[1];
    for (int64_t a = 0; a < Dk; a++)
        memcpy(sc->s + (size_t)(a * Dv), pooled + a * job->state_st[2], (size_t)Dv * sizeof(float));
}

static void store_state(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t slot, int64_t hv)
{
    const int64_t Dk = job->Dk, Dv = job->Dv;
    if (slot < 0 || slot >= job->slots) return;
    float *pooled = job->state + slot * job->state_st[0] + hv * job->state_st[1];
    for (int64_t a = 0; a < Dk; a++)
        memcpy(pooled + a * job->state_st[2], sc->s + (size_t)(a * Dv), (size_t)Dv * sizeof(float));
}

/* Token t of value head hv into q, k, v (rows of Dk, Dk, Dv floats): normalised, q scaled. */
static void load_token(const gdn_job_t *job, int64_t t, int64_t hv, float *q, float *k, float *v)
{
    const int64_t Dk = job->Dk, Dv = job->Dv, kh = hv / job->group;
    dc_row_to_f32(q, job->q + (size_t)(t * job->q_st[0] + kh * job->q_st[1]) * job->q_es, job->q_kind, (size_t)Dk, 1.0f);
    dc_row_to_f32(k, job->k + (size_t)(t * job->k_st[0] + kh * job->k_st[1]) * job->k_es, job->k_kind, (size_t)Dk, 1.0f);
    dc_row_to_f32(v, job->v + (size_t)(t * job->v_st[0] + hv * job->v_st[1]) * job->v_es, job->v_kind, (size_t)Dv, 1.0f);
    if (job->l2norm) {
        l2_normalise(q, Dk);
        l2_normalise(k, Dk);
    }
    cpu_vec_scale(q, job->scale, Dk);
}

static void store_out(const gdn_job_t *job, const float *row, int64_t t, int64_t hv)
{
    dc_row_from_f32(job->out + (size_t)(t * job->out_st[0] + hv * job->out_st[1]) * job->out_es, row, job->out_kind,
                    (size_t)job->Dv, 1.0f);
}

/* Tokens t0 .. t0 + n - 1 (n <= CPU_GDN_CHUNK) of value head hv, blockwise (see the file comment). */
static void gdn_chunk(const gdn_job_t *job, const gdn_scratch_t *sc, int64_t t0, int64_t n, int64_t hv)
{
    const int64_t Dk = job->Dk, Dv = job->Dv, C = CPU_GDN_CHUNK;
    double G = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t t = t0 + i;
        load_token(job, t, hv, sc->q + i * Dk, sc->k + i * Dk, sc->v + i * Dv);
        G += (double)cpu_scalar_at(job->g, job->g_kind, t * job->g_st[0] + hv * job->g_st[1]);
        sc->gc[i] = G;
        sc->bc[i] = cpu_scalar_at(job->beta, job->beta_kind, t * job->beta_st[0] + hv * job->beta_st[1]);
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
    const int64_t Dk = job->Dk, Dv = job->Dv;
    load_token(job, t, hv, sc->q, sc->k, sc->v);
    const float g = cpu_scalar_at(job->g, job->g_kind, t * job->g_st[0] + hv * job->g_st[1]);
    const float beta = cpu_scalar_at(job->beta, job->beta_kind, t * job->beta_st[0] + hv * job->beta_st[1]);

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
    const cpu_linear_item_t it = job->plan->items[index];
    const gdn_scratch_t sc = scratch_of(job, worker);
    const int64_t b = it.seq, hv = it.head;
    const int64_t t_begin = cpu_clamp64(cpu_i32_at(job->qsl, b), 0, job->T);
    const int64_t t_end = cpu_clamp64(cpu_i32_at(job->qsl, b + 1), t_begin, job->T);

    int64_t read_slot, slot = -1;
    int padding;
    if (job->spec) {
        padding = spec_slot(job, b, 0) < 0;
        const int64_t na = cpu_i32_at(job->accepted, b);
        read_slot = na >= 1 && na <= job->num_spec + 1 ? spec_slot(job, b, na - 1) : -1;
    } else {
        slot = cpu_i32_at(job->slot_idx, b);
        padding = slot < 0 || slot >= job->slots;
        read_slot = slot;
    }
    if (padding) { /* outputs 0, no slot read or written */
        memset(sc.o, 0, (size_t)job->Dv * sizeof(float));
        for (int64_t t = t_begin; t < t_end; t++)
            dc_row_from_f32(job->out + (size_t)(t * job->out_st[0] + hv * job->out_st[1]) * job->out_es, sc.o,
                            job->out_kind, (size_t)job->Dv, 1.0f);
        return;
    }
    const int has_init = cpu_flag_at(job->has_init, b);
    if (t_end == t_begin && (has_init || job->spec)) return; /* no token: no state changes */
    if (!job->spec && t_end - t_begin == 1) { /* a plain decode: in place, each state byte read and written once */
        float *pooled = job->state + slot * job->state_st[0] + hv * job->state_st[1];
        if (!has_init)
            for (int64_t a = 0; a < job->Dk; a++) memset(pooled + a * job->state_st[2], 0, (size_t)job->Dv * sizeof(float));
        gdn_token(job, &sc, t_begin, hv, pooled, job->state_st[2]);
        return;
    }
    load_state(job, &sc, has_init ? read_slot : -1, hv);

    if (job->spec) {
        for (int64_t t = t_begin; t < t_end; t++) {
            gdn_token(job, &sc, t, hv, sc.s, job->Dv);
            if (job->spec && t - t_begin <= job->num_spec) store_state(job, &sc, spec_slot(job, b, t - t_begin), hv);
        }
    } else {
        for (int64_t t0 = t_begin; t0 < t_end; t0 += CPU_GDN_CHUNK)
            gdn_chunk(job, &sc, t0, t_end - t0 < CPU_GDN_CHUNK ? t_end - t0 : CPU_GDN_CHUNK, hv);
    }
    if (!job->spec) store_state(job, &sc, slot, hv);
}

attnrt_status_t cpu_gated_delta_plan(cpu_pool_t *pool, const attnrt_gated_delta_args_t *args_in,
                                     const attnrt_batch_host_t *batch_in, const attnrt_state_host_t *states_in,
                                     void **plan_out, size_t *workspace_bytes)
{
    if (!args_in || !batch_in || !plan_out || !workspace_bytes)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta plan: args, batch and both outputs are required");
    attnrt_gated_delta_args_t a;
    attnrt_batch_host_t batch;
    cpu_args_copy(&a, sizeof a, args_in, args_in->struct_size);
    cpu_args_copy(&batch, sizeof batch, batch_in, batch_in->struct_size);
    if (batch.num_seqs < 0 || (batch.num_seqs > 0 && !batch.query_start_loc))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta plan: the host batch has %d requests and %s",
                           batch.num_seqs, batch.query_start_loc ? "a query_start_loc" : "no query_start_loc");
    gdn_shape_t sh;
    attnrt_status_t st = gdn_check(&a, batch.num_seqs, 0, &sh);
    if (st != ATTNRT_OK) return st;
    if (states_in) {
        attnrt_state_host_t states;
        cpu_args_copy(&states, sizeof states, states_in, states_in->struct_size);
        const int host_spec = states.spec_state_indices != NULL;
        if (host_spec != sh.spec || (sh.spec && states.num_spec != sh.num_spec))
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                               "cpu gated_delta plan: the host states say %s (num_spec %d) but the args %s (num_spec %lld)",
                               host_spec ? "spec decoding" : "no spec decoding", states.num_spec,
                               sh.spec ? "have spec_state_indices" : "have none", (long long)sh.num_spec);
    }

    cpu_linear_plan_t *p = NULL;
    st = cpu_linear_plan_new(pool, CPU_PLAN_GATED_DELTA, OP, &batch, sh.B, sh.HV, gdn_layout(sh.Dk, sh.Dv).total, &p);
    if (st != ATTNRT_OK) return st;
    p->num_tokens = sh.T;
    p->num_seqs = sh.B;
    p->num_heads = sh.HV;
    p->num_k_heads = sh.H;
    p->head_dim_k = sh.Dk;
    p->head_dim_v = sh.Dv;
    p->num_spec = sh.spec ? sh.num_spec : -1;
    *plan_out = p;
    *workspace_bytes = 0; /* scratch lives in the plan */
    return ATTNRT_OK;
}

void cpu_gated_delta_plan_destroy(void *plan) { cpu_linear_plan_free(plan); }

attnrt_status_t cpu_gated_delta_run(cpu_pool_t *pool, const void *plan, const attnrt_gated_delta_args_t *args_in)
{
    const cpu_linear_plan_t *p = cpu_linear_plan_of(plan, CPU_PLAN_GATED_DELTA, pool, OP);
    if (!p) return ATTNRT_ERR_INVALID_ARGUMENT;
    if (!args_in) return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu gated_delta run: args are required");
    attnrt_gated_delta_args_t a;
    cpu_args_copy(&a, sizeof a, args_in, args_in->struct_size);
    gdn_shape_t sh;
    attnrt_status_t st = gdn_check(&a, p->num_seqs, 1, &sh);
    if (st != ATTNRT_OK) return st;
    if (sh.T != p->num_tokens || sh.HV != p->num_heads || sh.H != p->num_k_heads || sh.Dk != p->head_dim_k ||
        sh.Dv != p->head_dim_v || (sh.spec ? sh.num_spec : -1) != p->num_spec)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "cpu gated_delta run: shapes (T %lld, H %lld, HV %lld, Dk %lld, Dv %lld, num_spec %lld) differ "
                           "from the plan's (T %lld, H %lld, HV %lld, Dk %lld, Dv %lld, num_spec %lld); plan this batch again",
                           (long long)sh.T, (long long)sh.H, (long long)sh.HV, (long long)sh.Dk, (long long)sh.Dv,
                           (long long)(sh.spec ? sh.num_spec : -1), (long long)p->num_tokens, (long long)p->num_k_heads,
                           (long long)p->num_heads, (long long)p->head_dim_k, (long long)p->head_dim_v,
                           (long long)p->num_spec);

    gdn_job_t job;
    memset(&job, 0, sizeof job);
    job.plan = p;
    job.lay = gdn_layout(sh.Dk, sh.Dv);
    job.T = sh.T;
    job.H = sh.H;
    job.HV = sh.HV;
    job.group = sh.HV / sh.H;
    job.Dk = sh.Dk;
    job.Dv = sh.Dv;
    job.slots = sh.slots;
    job.num_spec = sh.num_spec;
    job.spec = sh.spec;
    job.l2norm = a.use_l2norm != 0;
    job.scale = a.scale != 0.0f ? a.scale : (float)(1.0 / sqrt((double)sh.Dk));
    job.q = a.query->data;
    job.k = a.key->data;
    job.v = a.value->data;
    job.g = a.g->data;
    job.beta = a.beta->data;
    job.out = a.out->data;
    for (int i = 0; i < 2; i++) {
        job.q_st[i] = a.query->strides[i];
        job.k_st[i] = a.key->strides[i];
        job.v_st[i] = a.value->strides[i];
        job.g_st[i] = a.g->strides[i];
        job.beta_st[i] = a.beta->strides[i];
        job.out_st[i] = a.out->strides[i];
    }
    job.q_kind = sh.q;
    job.k_kind = sh.k;
    job.v_kind = sh.v;
    job.g_kind = sh.g;
    job.beta_kind = sh.beta;
    job.out_kind = sh.out;
    job.q_es = dc_kind_size(sh.q);
    job.k_es = dc_kind_size(sh.k);
    job.v_es = dc_kind_size(sh.v);
    job.out_es = dc_kind_size(sh.out);
    job.state = a.state->data;
    for (int i = 0; i < 3; i++) job.state_st[i] = a.state->strides[i];
    job.qsl = a.query_start_loc;
    job.slot_idx = a.state_indices;
    job.has_init = a.has_initial_state;
    job.spec_idx = a.spec_state_indices;
    job.accepted = a.num_accepted;

    cpu_parallel_for(pool, p->num_items, gdn_item, &job);
    return ATTNRT_OK;
}
