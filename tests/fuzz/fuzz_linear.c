/* fuzz_linear.c - lightning and the gated delta rule from a fuzz input: dtypes, heads, head dims, a
 * state pool with some slots allocated (and one freed again), the batch, state_indices, has_initial_state
 * and, for the gated delta rule, speculative rows and num_accepted; host metadata may be broken on
 * purpose and device copies corrupted after the plan. An uncorrupted run is judged on its output
 * (padding rows exactly 0) and on every slot of the pool: the slots the batch writes against the
 * reference's pool, all others byte for byte as before. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conform_device.h"
#include "fuzz.h"
#include "reference.h"

#define MAX_SEQS  4
#define MAX_SLOTS 8
#define MAX_SPEC  3
#define MAX_W     (MAX_SPEC + 1)
#define MAX_HEADS 3

static const int head_dims[] = {1, 2, 3, 4, 8, 16, 32}; /* at most 32: gdn_magnitude's buffers */

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct lin {
    const char *op, *plan_fn;
    int         gdn;
    cf_dtype_t  q_dt, out_dt, gb_dt;
    int         H, HV, Dk, Dv;
    int         num_slots, allocated[MAX_SLOTS];
    int         B, T, spec, width; /* width: num_spec + 1 */
    int32_t     qsl[MAX_SEQS + 1], idx[MAX_SEQS], rows[MAX_SEQS * MAX_W], accepted[MAX_SEQS];
    uint8_t     init[MAX_SEQS];
    int32_t     host_num_seqs, use_l2norm;
    float       scale;
    int         pass_state_indices, bool_init;
} lin_t;

/* ---- drawing ------------------------------------------------------------------------------------ */

/* A slot for a request: the next unused allocated one (or -1 when none is left), -1, or a wild value. */
static int32_t draw_slot(fz_in_t *in, const int *order, int n, int *next, int num_slots)
{
    switch (fz_byte(in) % 6) {
    case 4:  return -1;
    case 5:  return fz_wild(in, num_slots);
    default: return *next < n ? order[(*next)++] : -1;
    }
}

static void draw(fz_in_t *in, cf_rng_t *rng, lin_t *l)
{
    static const float scales[] = {0.1f, 0.5f, 1.0f, -1.0f, NAN, INFINITY};
    l->q_dt = (cf_dtype_t)fz_range(in, CF_F32, CF_BF16);
    l->out_dt = fz_bit(in) ? CF_F32 : l->q_dt;
    l->gb_dt = fz_bit(in) ? CF_F32 : l->q_dt;
    l->H = fz_range(in, 1, MAX_HEADS);
    l->HV = l->gdn ? l->H * fz_range(in, 1, 3) : l->H;
    l->Dk = fz_pick(in, head_dims, COUNT(head_dims));
    l->Dv = fz_pick(in, head_dims, COUNT(head_dims));
    if (l->gdn) {
        const int n = fz_byte(in);
        l->use_l2norm = n % 8 == 7 ? fz_wild(in, 2) : n & 1;
        const int s = fz_byte(in);
        l->scale = s < 200 ? 0.0f : scales[s % COUNT(scales)];
        l->spec = fz_bit(in);
        l->width = l->spec ? fz_range(in, 1, MAX_W) : 1;
    }
    l->num_slots = fz_range(in, 1, MAX_SLOTS);
    const int n_alloc = fz_range(in, 0, l->num_slots);
    for (int s = 0; s < n_alloc; s++) l->allocated[s] = 1;
    if (n_alloc > 0 && fz_bit(in)) l->allocated[fz_byte(in) % n_alloc] = 0; /* freed again */
    int order[MAX_SLOTS], n = 0, next = 0;
    for (int s = 0; s < l->num_slots; s++)
        if (l->allocated[s]) order[n++] = s;
    cf_rng_shuffle(rng, order, n);

    l->B = fz_range(in, 0, MAX_SEQS);
    l->qsl[0] = 0;
    for (int b = 0; b < l->B; b++) {
        l->qsl[b + 1] = l->qsl[b] + fz_range(in, 0, l->spec ? l->width : 5);
        const int i = fz_byte(in);
        l->init[b] = (uint8_t)(i % 16 == 15 ? fz_byte(in) : i & 1);
        if (!l->spec) {
            l->idx[b] = draw_slot(in, order, n, &next, l->num_slots);
            continue;
        }
        l->idx[b] = fz_wild(in, l->num_slots); /* not used with speculative rows */
        for (int j = 0; j < l->width; j++) l->rows[b * l->width + j] = draw_slot(in, order, n, &next, l->num_slots);
        const int a = fz_byte(in);
        l->accepted[b] = a % 8 == 7 ? fz_wild(in, l->width) : 1 + a % l->width;
        /* a request that reads its initial state needs the slot it reads */
        if (l->init[b] == 1 && l->rows[b * l->width] >= 0 && l->accepted[b] >= 1 && l->accepted[b] <= l->width &&
            l->rows[b * l->width + l->accepted[b] - 1] == -1)
            l->init[b] = 0;
    }
    l->T = l->qsl[l->B];
    l->host_num_seqs = l->B;
    l->pass_state_indices = !l->spec || fz_bit(in);
    l->bool_init = fz_bit(in);
}

static void describe(const lin_t *l)
{
    char qsl[96], idx[96], init[96], rows[200], acc[96], alloc[64];
    int32_t init32[MAX_SEQS], alloc32[MAX_SLOTS];
    for (int b = 0; b < l->B; b++) init32[b] = l->init[b];
    for (int s = 0; s < l->num_slots; s++) alloc32[s] = l->allocated[s];
    fz_describe("q %s, out %s, g/beta %s, H %d, HV %d, Dk %d, Dv %d, scale %g, use_l2norm %d; pool of %d slots, "
                "allocated [%s]; B %d, T %d, query_start_loc [%s], state_indices [%s]%s, has_initial_state [%s] (%s); "
                "speculative %d, spec_state_indices [%s] (width %d), num_accepted [%s]",
                cf_dtype_name(l->q_dt), cf_dtype_name(l->out_dt), cf_dtype_name(l->gb_dt), l->H, l->HV, l->Dk, l->Dv,
                (double)l->scale, l->use_l2norm, l->num_slots, fz_list32(alloc, sizeof alloc, alloc32, l->num_slots),
                l->B, l->T, fz_list32(qsl, sizeof qsl, l->qsl, l->B + 1), fz_list32(idx, sizeof idx, l->idx, l->B),
                l->pass_state_indices ? "" : " (not passed)", fz_list32(init, sizeof init, init32, l->B),
                l->bool_init ? "bool" : "u8", l->spec,
                fz_list32(rows, sizeof rows, l->rows, l->spec ? l->B * l->width : 0), l->width,
                fz_list32(acc, sizeof acc, l->accepted, l->spec ? l->B : 0));
}

/* One host field broken on purpose (the value may happen to be valid). */
static void break_host(fz_in_t *in, lin_t *l)
{
    if (fz_byte(in) % 4 != 3) return; /* an exhausted input breaks nothing */
    switch (fz_byte(in) % 6) {
    case 0: fz_corrupt_i32(in, l->qsl, l->B + 1, l->T, "host query_start_loc"); break;
    case 1: fz_corrupt_i32(in, l->idx, l->B, l->num_slots, "host state_indices"); break;
    case 2:
        if (l->B) {
            const int at = fz_byte(in) % l->B;
            l->init[at] = fz_byte(in);
            fz_describe_more("; host has_initial_state[%d] = %u", at, l->init[at]);
        }
        break;
    case 3:
        l->host_num_seqs = fz_wild(in, l->B);
        fz_describe_more("; batch.num_seqs = %d", l->host_num_seqs);
        break;
    case 4: fz_corrupt_i32(in, l->rows, l->spec ? l->B * l->width : 0, l->num_slots, "host spec_state_indices"); break;
    default: fz_corrupt_i32(in, l->accepted, l->spec ? l->B : 0, l->width, "host num_accepted"); break;
    }
}

/* ---- the contract (docs/semantics.md), checked independently of the runtime ------------------- */

static int padding(const lin_t *l, int b) { return l->spec ? l->rows[b * l->width] < 0 : l->idx[b] < 0; }

/* slot is allocated and not another request's (owner: 1 + the request that took it). */
static int take_slot(const lin_t *l, int32_t slot, int b, int *owner)
{
    if (slot < 0 || slot >= l->num_slots || !l->allocated[slot]) return 0;
    if (owner[slot] && owner[slot] != b + 1) return 0;
    owner[slot] = b + 1;
    return 1;
}

static int valid_call(const lin_t *l)
{
    if (l->gdn && (!isfinite(l->scale) || l->scale < 0 || (l->use_l2norm != 0 && l->use_l2norm != 1))) return 0;
    if (l->host_num_seqs != l->B || l->qsl[0] != 0 || l->qsl[l->B] != l->T) return 0;
    int owner[MAX_SLOTS] = {0};
    for (int b = 0; b < l->B; b++) {
        const int64_t len = (int64_t)l->qsl[b + 1] - l->qsl[b];
        if (len < 0 || l->init[b] > 1) return 0;
        if (!l->spec) {
            if (l->idx[b] != -1 && !take_slot(l, l->idx[b], b, owner)) return 0;
            continue;
        }
        if (len > l->width) return 0;
        if (padding(l, b)) continue;
        const int32_t *row = l->rows + b * l->width;
        if (l->accepted[b] < 1 || l->accepted[b] > l->width) return 0;
        for (int j = 0; j < l->width; j++)
            if (row[j] != -1 && !take_slot(l, row[j], b, owner)) return 0;
        if (l->init[b] && row[l->accepted[b] - 1] == -1) return 0;
    }
    return 1;
}

/* ---- device side -------------------------------------------------------------------------------- */

typedef struct lin_io {
    attnrt_state_pool_t *pool;
    attnrt_tensor_t pool_t, q, k, v, g, beta, slopes, out, qsl, idx, init, rows, accepted;
    double *q_ref, *k_ref, *v_ref, *g_ref, *beta_ref, slopes_ref[MAX_HEADS];
    float  *pool_before;
    double *pool_ref;
    size_t  slot_elems;
} lin_io_t;

static attnrt_tensor_t upload_values(fz_dev_t *dev, cf_dtype_t dt, const double *vals, size_t n, int ndim,
                                     const int64_t *shape, double **ref)
{
    unsigned char *h = malloc(n * cf_dtype_size(dt) + 1);
    *ref = malloc(sizeof(double) * (n + 1));
    if (!h || !*ref) fz_finding("linear", "out of host memory");
    for (size_t i = 0; i < n; i++) {
        cf_encode(dt, vals[i], h, i);
        (*ref)[i] = cf_decode(dt, h, i);
    }
    attnrt_tensor_t t;
    cf_tensor_contig(&t, fz_upload(dev, h, n * cf_dtype_size(dt)), cf_dtype_attnrt(dt), ndim, shape);
    free(h);
    return t;
}

static attnrt_tensor_t upload_normal(fz_dev_t *dev, cf_rng_t *rng, cf_dtype_t dt, double amp, int ndim,
                                     const int64_t *shape, double **ref)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    double *vals = malloc(sizeof(double) * (n + 1));
    if (!vals) fz_finding("linear", "out of host memory");
    for (size_t i = 0; i < n; i++) vals[i] = amp * cf_rng_normal(rng);
    attnrt_tensor_t t = upload_values(dev, dt, vals, n, ndim, shape, ref);
    free(vals);
    return t;
}

static attnrt_tensor_t upload_i32(fz_dev_t *dev, const int32_t *v, int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    attnrt_tensor_t t;
    cf_tensor_contig(&t, fz_upload(dev, v, n * sizeof(int32_t)), ATTNRT_I32, ndim, shape);
    return t;
}

/* The pool: allocated as drawn, filled with random states (read back as the reference's pool). */
static void setup_pool(fz_dev_t *dev, cf_rng_t *rng, const lin_t *l, lin_io_t *io)
{
    const int64_t slot_shape[3] = {l->HV, l->Dk, l->Dv};
    fz_require_ok("attnrt_state_pool_create",
                  attnrt_state_pool_create(dev->ctx, ATTNRT_F32, 3, slot_shape, l->num_slots, &io->pool));
    fz_require_ok("attnrt_state_pool_tensor", attnrt_state_pool_tensor(io->pool, &io->pool_t));
    int last = -1;
    for (int s = 0; s < l->num_slots; s++)
        if (l->allocated[s]) last = s;
    for (int s = 0; s <= last; s++) { /* the lowest free id each time: 0, 1, ...; then the gaps freed */
        int32_t got = -1;
        fz_require_ok("attnrt_state_slot_alloc", attnrt_state_slot_alloc(io->pool, &got));
    }
    for (int s = 0; s <= last; s++)
        if (!l->allocated[s]) fz_require_ok("attnrt_state_slot_free", attnrt_state_slot_free(io->pool, s));
    io->slot_elems = (size_t)l->HV * (size_t)l->Dk * (size_t)l->Dv;
    const size_t n = io->slot_elems * (size_t)l->num_slots;
    io->pool_before = malloc(sizeof(float) * n);
    io->pool_ref = malloc(sizeof(double) * n);
    if (!io->pool_before || !io->pool_ref) fz_finding("linear", "out of host memory");
    for (size_t i = 0; i < n; i++) io->pool_ref[i] = io->pool_before[i] = (float)cf_rng_normal(rng);
    fz_overwrite(dev, io->pool_t.data, io->pool_before, n * sizeof(float));
}

static void setup_io(fz_dev_t *dev, cf_rng_t *rng, const lin_t *l, lin_io_t *io)
{
    const int64_t qs[3] = {l->T, l->H, l->Dk}, vs[3] = {l->T, l->HV, l->Dv}, gs[2] = {l->T, l->HV};
    io->q = upload_normal(dev, rng, l->q_dt, 1.0, 3, qs, &io->q_ref);
    /* without the in-kernel norm, keys of unit norm keep the delta rule stable (beta |k|^2 < 2) */
    io->k = upload_normal(dev, rng, l->q_dt, l->gdn && !l->use_l2norm ? 1.0 / sqrt((double)l->Dk) : 1.0, 3, qs,
                          &io->k_ref);
    io->v = upload_normal(dev, rng, l->q_dt, 1.0, 3, vs, &io->v_ref);
    const size_t ng = (size_t)l->T * (size_t)l->HV;
    double *g = malloc(sizeof(double) * (ng + 1)), *beta = malloc(sizeof(double) * (ng + 1));
    if (!g || !beta) fz_finding("linear", "out of host memory");
    for (size_t i = 0; i < ng; i++) {
        g[i] = -exp(cf_rng_range(rng, -5.0, 1.5));
        beta[i] = cf_rng_range(rng, 0.02, 0.98);
    }
    io->g = upload_values(dev, l->gb_dt, g, ng, 2, gs, &io->g_ref);
    io->beta = upload_values(dev, l->gb_dt, beta, ng, 2, gs, &io->beta_ref);
    free(g);
    free(beta);
    float slopes[MAX_HEADS];
    const double layer = cf_rng_range(rng, 0.05, 1.0);
    for (int h = 0; h < l->H; h++) io->slopes_ref[h] = slopes[h] = (float)(pow(pow(2.0, -8.0 / l->H), h + 1) * layer);
    const int64_t hs[1] = {l->H};
    cf_tensor_contig(&io->slopes, fz_upload(dev, slopes, sizeof(float) * (size_t)l->H), ATTNRT_F32, 1, hs);

    const size_t on = ng * (size_t)l->Dv;
    unsigned char *oh = malloc(on * cf_dtype_size(l->out_dt) + 1);
    if (!oh) fz_finding("linear", "out of host memory");
    for (size_t i = 0; i < on; i++) cf_poison(l->out_dt, oh, i);
    cf_tensor_contig(&io->out, fz_upload(dev, oh, on * cf_dtype_size(l->out_dt)), cf_dtype_attnrt(l->out_dt), 3, vs);
    free(oh);

    const int64_t b1[1] = {l->B + 1}, b0[1] = {l->B}, bw[2] = {l->B, l->width};
    io->qsl = upload_i32(dev, l->qsl, 1, b1);
    io->idx = upload_i32(dev, l->idx, 1, b0);
    io->rows = upload_i32(dev, l->rows, 2, bw);
    io->accepted = upload_i32(dev, l->accepted, 1, b0);
    cf_tensor_contig(&io->init, fz_upload(dev, l->init, (size_t)l->B), l->bool_init ? ATTNRT_BOOL : ATTNRT_U8, 1, b0);
}

/* Device metadata corrupted after the plan: 0 to 3 values. */
static int corrupt_device(fz_in_t *in, fz_dev_t *dev, const lin_t *l, lin_io_t *io)
{
    lin_t c = *l;
    int changed = 0;
    const int n = fz_byte(in) % 4;
    for (int i = 0; i < n; i++) switch (fz_byte(in) % 5) {
        case 0: changed |= fz_corrupt_i32(in, c.qsl, c.B + 1, c.T, "device query_start_loc"); break;
        case 1: changed |= fz_corrupt_i32(in, c.idx, c.B, c.num_slots, "device state_indices"); break;
        case 2:
            changed |= fz_corrupt_i32(in, c.rows, c.spec ? c.B * c.width : 0, c.num_slots, "device spec_state_indices");
            break;
        case 3: changed |= fz_corrupt_i32(in, c.accepted, c.spec ? c.B : 0, c.width, "device num_accepted"); break;
        default:
            if (c.B) {
                const int at = fz_byte(in) % c.B;
                const uint8_t v = fz_byte(in);
                changed |= c.init[at] != v;
                c.init[at] = v;
                fz_describe_more("; device has_initial_state[%d] = %u", at, v);
            }
            break;
        }
    if (!changed) return 0;
    fz_overwrite(dev, io->qsl.data, c.qsl, sizeof(int32_t) * (size_t)(c.B + 1));
    fz_overwrite(dev, io->idx.data, c.idx, sizeof(int32_t) * (size_t)c.B);
    fz_overwrite(dev, io->rows.data, c.rows, sizeof(int32_t) * (size_t)(c.B * c.width));
    fz_overwrite(dev, io->accepted.data, c.accepted, sizeof(int32_t) * (size_t)c.B);
    fz_overwrite(dev, io->init.data, c.init, (size_t)c.B);
    return 1;
}

/* ---- judging ------------------------------------------------------------------------------------ */

/* The gated delta rule over the absolute values of its terms (the delta as beta (|v| + |S^T k|)): the
 * size of what each output and state element sums, for judging ill-conditioned results. pool holds
 * |the pool| and is updated like the reference's. */
static void gdn_magnitude(const lin_t *l, const lin_io_t *io, double *pool, double *out)
{
    const int group = l->HV / l->H, dk = l->Dk, dv = l->Dv;
    const double scale = l->scale > 0 ? (double)l->scale : 1.0 / sqrt((double)dk);
    double state[MAX_HEADS * 3 * 32 * 32], qn[32], kn[32], vn[32];
    for (int b = 0; b < l->B; b++) {
        const int32_t *row = l->spec ? l->rows + b * l->width : NULL;
        const int q0 = l->qsl[b], len = l->qsl[b + 1] - q0;
        if (padding(l, b)) {
            memset(out + (size_t)q0 * (size_t)(l->HV * dv), 0, sizeof(double) * (size_t)(len * l->HV * dv));
            continue;
        }
        const int32_t read = row ? row[l->accepted[b] - 1] : l->idx[b];
        if (l->init[b] && read >= 0)
            memcpy(state, pool + (size_t)read * io->slot_elems, sizeof(double) * io->slot_elems);
        else
            memset(state, 0, sizeof(double) * io->slot_elems);
        for (int i = 0; i < len; i++) {
            const size_t t = (size_t)(q0 + i);
            for (int h = 0; h < l->HV; h++) {
                const double *q = io->q_ref + (t * (size_t)l->H + (size_t)(h / group)) * (size_t)dk;
                const double *k = io->k_ref + (t * (size_t)l->H + (size_t)(h / group)) * (size_t)dk;
                const double *v = io->v_ref + (t * (size_t)l->HV + (size_t)h) * (size_t)dv;
                double qq = 0.0, kk = 0.0;
                for (int a = 0; a < dk; a++) {
                    qq += q[a] * q[a];
                    kk += k[a] * k[a];
                }
                for (int a = 0; a < dk; a++) {
                    qn[a] = fabs(q[a]) * scale / (l->use_l2norm ? sqrt(qq + 1e-6) : 1.0);
                    kn[a] = fabs(k[a]) / (l->use_l2norm ? sqrt(kk + 1e-6) : 1.0);
                }
                const size_t row_at = t * (size_t)l->HV + (size_t)h;
                double *S = state + (size_t)h * (size_t)(dk * dv), *o = out + row_at * (size_t)dv;
                const double decay = exp(io->g_ref[row_at]), beta = io->beta_ref[row_at];
                for (int e = 0; e < dk * dv; e++) S[e] *= decay;
                for (int d = 0; d < dv; d++) {
                    double stk = 0.0;
                    for (int a = 0; a < dk; a++) stk += S[a * dv + d] * kn[a];
                    vn[d] = beta * (fabs(v[d]) + stk);
                }
                for (int a = 0; a < dk; a++)
                    for (int d = 0; d < dv; d++) S[a * dv + d] += kn[a] * vn[d];
                for (int d = 0; d < dv; d++) {
                    o[d] = 0.0;
                    for (int a = 0; a < dk; a++) o[d] += S[a * dv + d] * qn[a];
                }
            }
            if (row && row[i] >= 0)
                memcpy(pool + (size_t)row[i] * io->slot_elems, state, sizeof(double) * io->slot_elems);
        }
        if (!row) memcpy(pool + (size_t)l->idx[b] * io->slot_elems, state, sizeof(double) * io->slot_elems);
    }
}

/* Output and pool of the same batch over the absolute values of every term. */
static void magnitude(const lin_t *l, const lin_io_t *io, double *pool, double *out)
{
    const size_t np = io->slot_elems * (size_t)l->num_slots;
    for (size_t i = 0; i < np; i++) pool[i] = fabs((double)io->pool_before[i]);
    if (l->gdn) {
        gdn_magnitude(l, io, pool, out);
        return;
    }
    const size_t nq = (size_t)l->T * (size_t)l->H * (size_t)l->Dk, nv = (size_t)l->T * (size_t)l->H * (size_t)l->Dv;
    double *q = malloc(sizeof(double) * (nq + 1)), *k = malloc(sizeof(double) * (nq + 1));
    double *v = malloc(sizeof(double) * (nv + 1));
    if (!q || !k || !v) fz_finding(l->op, "out of host memory");
    for (size_t i = 0; i < nq; i++) {
        q[i] = fabs(io->q_ref[i]);
        k[i] = fabs(io->k_ref[i]);
    }
    for (size_t i = 0; i < nv; i++) v[i] = fabs(io->v_ref[i]);
    ref_lightning(l->B, l->qsl, l->idx, l->init, l->H, l->Dk, l->Dv, io->slopes_ref, q, k, v, pool, out);
    free(q);
    free(k);
    free(v);
}

static void judge(fz_dev_t *dev, const lin_t *l, lin_io_t *io)
{
    const size_t rows = (size_t)l->T * (size_t)l->HV, on = rows * (size_t)l->Dv;
    double *ref = malloc(sizeof(double) * (on + 1)), *got = malloc(sizeof(double) * (on + 1));
    double *row_lse = malloc(sizeof(double) * (rows + 1)), *slot = malloc(sizeof(double) * (io->slot_elems + 1));
    unsigned char *raw = malloc(on * cf_dtype_size(l->out_dt) + 1);
    float *pool = malloc(sizeof(float) * io->slot_elems * (size_t)l->num_slots);
    double *mag = malloc(sizeof(double) * (on + 1));
    double *mag_pool = malloc(sizeof(double) * io->slot_elems * (size_t)l->num_slots);
    if (!ref || !got || !row_lse || !slot || !raw || !pool || !mag || !mag_pool)
        fz_finding(l->op, "out of host memory");
    magnitude(l, io, mag_pool, mag);
    if (l->gdn)
        ref_gated_delta(l->B, l->qsl, l->idx, l->init, l->H, l->HV, l->Dk, l->Dv, l->use_l2norm,
                        l->scale > 0 ? (double)l->scale : 1.0 / sqrt((double)l->Dk), io->q_ref, io->k_ref, io->v_ref,
                        io->g_ref, io->beta_ref, io->pool_ref, ref, l->spec ? l->rows : NULL, l->width - 1,
                        l->spec ? l->accepted : NULL);
    else
        ref_lightning(l->B, l->qsl, l->idx, l->init, l->H, l->Dk, l->Dv, io->slopes_ref, io->q_ref, io->k_ref,
                      io->v_ref, io->pool_ref, ref);

    fz_download(dev, raw, io->out.data, on * cf_dtype_size(l->out_dt));
    for (size_t i = 0; i < on; i++) got[i] = cf_decode(l->out_dt, raw, i);
    for (int b = 0; b < l->B; b++) /* padding rows must be exactly 0: judged like rows with no key */
        for (size_t r = (size_t)l->qsl[b] * (size_t)l->HV; r < (size_t)l->qsl[b + 1] * (size_t)l->HV; r++)
            row_lse[r] = padding(l, b) ? -INFINITY : 0.0;
    const cf_dtype_t dts[3] = {l->q_dt, l->out_dt, l->gdn ? l->gb_dt : l->q_dt};
    const double tol = cf_tolerance_of(dts, 3);
    fz_compare(l->op, "out", got, ref, mag, row_lse, (size_t)l->T, (size_t)l->HV, (size_t)l->Dv, tol, l->out_dt);

    int written[MAX_SLOTS] = {0};
    for (int b = 0; b < l->B; b++) {
        if (padding(l, b)) continue;
        if (!l->spec) written[l->idx[b]] = 1;
        for (int t = 0; l->spec && t < l->qsl[b + 1] - l->qsl[b]; t++)
            if (l->rows[b * l->width + t] >= 0) written[l->rows[b * l->width + t]] = 1;
    }
    fz_download(dev, pool, io->pool_t.data, sizeof(float) * io->slot_elems * (size_t)l->num_slots);
    for (int s = 0; s < l->num_slots; s++) {
        const float *g = pool + (size_t)s * io->slot_elems, *before = io->pool_before + (size_t)s * io->slot_elems;
        if (!written[s]) {
            if (memcmp(g, before, sizeof(float) * io->slot_elems) != 0)
                fz_finding(l->op, "state slot %d changed but no request of the batch writes it", s);
            continue;
        }
        for (size_t i = 0; i < io->slot_elems; i++) slot[i] = g[i];
        fz_compare(l->op, "state slot", slot, io->pool_ref + (size_t)s * io->slot_elems,
                   mag_pool + (size_t)s * io->slot_elems, NULL, (size_t)l->HV,
                   (size_t)l->Dk, (size_t)l->Dv, tol, CF_F32);
    }
    free(ref);
    free(got);
    free(row_lse);
    free(slot);
    free(raw);
    free(pool);
    free(mag);
    free(mag_pool);
}

/* ---- one input ---------------------------------------------------------------------------------- */

static attnrt_status_t plan_op(const lin_t *l, lin_io_t *io, const attnrt_lightning_args_t *la,
                               const attnrt_gated_delta_args_t *ga, attnrt_plan_t **plan)
{
    attnrt_batch_host_t batch = {sizeof batch, l->host_num_seqs, l->qsl, NULL, NULL, 0};
    attnrt_state_host_t states = {sizeof states, l->idx, l->init, l->spec ? l->rows : NULL,
                                  l->spec ? l->accepted : NULL, l->spec ? l->width - 1 : 0};
    if (l->gdn) return attnrt_gated_delta_plan(fz_context(), ga, &batch, &states, io->pool, plan);
    return attnrt_lightning_plan(fz_context(), la, &batch, &states, io->pool, plan);
}

static void fuzz_linear(fz_in_t *in, lin_t *l)
{
    cf_rng_t rng;
    cf_rng_init(&rng, fz_u32(in));
    draw(in, &rng, l);
    describe(l);
    break_host(in, l);
    const int valid = valid_call(l);

    fz_dev_t dev;
    fz_dev_init(&dev, in);
    lin_io_t io;
    memset(&io, 0, sizeof io);
    setup_pool(&dev, &rng, l, &io);
    setup_io(&dev, &rng, l, &io);
    attnrt_lightning_args_t la = {sizeof la, &io.q, &io.k, &io.v, &io.out, &io.slopes, &io.pool_t, &io.qsl, &io.idx,
                                  &io.init};
    attnrt_gated_delta_args_t ga = {sizeof ga, &io.q, &io.k, &io.v, &io.g, &io.beta, &io.out, &io.pool_t, &io.qsl,
                                    l->pass_state_indices ? &io.idx : NULL, &io.init, l->spec ? &io.rows : NULL,
                                    l->spec ? &io.accepted : NULL, l->scale, l->use_l2norm};
    attnrt_plan_t *plan = NULL;
    attnrt_status_t st = plan_op(l, &io, &la, &ga, &plan);
    if (st != ATTNRT_OK) {
        fz_check_refusal(l->plan_fn, st, valid);
    } else {
        if (!valid) fz_finding(l->op, "%s accepted metadata that breaks the contract", l->plan_fn);
        size_t ws_bytes = 0;
        fz_require_ok("attnrt_plan_workspace_size", attnrt_plan_workspace_size(plan, &ws_bytes));
        unsigned char *junk = calloc(ws_bytes + 1, 1);
        if (!junk) fz_finding(l->op, "out of host memory");
        void *ws = fz_upload(&dev, junk, ws_bytes);
        free(junk);
        const int corrupted = corrupt_device(in, &dev, l, &io);
        st = l->gdn ? attnrt_gated_delta_run(plan, &ga, ws, ws_bytes, NULL)
                    : attnrt_lightning_run(plan, &la, ws, ws_bytes, NULL);
        fz_require_ok(corrupted ? "run (device metadata corrupted after the plan)" : "run", st);
        fz_dev_check_slack(&dev, l->op);
        fz_trace(corrupted ? "ran with corrupted device metadata" : "ran and judged");
        if (!corrupted) judge(&dev, l, &io);
        fz_require_ok("attnrt_plan_destroy", attnrt_plan_destroy(plan));
    }
    fz_require_ok("attnrt_state_pool_destroy", attnrt_state_pool_destroy(io.pool));
    free(io.q_ref);
    free(io.k_ref);
    free(io.v_ref);
    free(io.g_ref);
    free(io.beta_ref);
    free(io.pool_before);
    free(io.pool_ref);
    fz_dev_release(&dev);
}

void fz_lightning(fz_in_t *in)
{
    lin_t l;
    memset(&l, 0, sizeof l);
    l.op = "lightning";
    l.plan_fn = "attnrt_lightning_plan";
    l.width = 1;
    fuzz_linear(in, &l);
}

void fz_gated_delta(fz_in_t *in)
{
    lin_t l;
    memset(&l, 0, sizeof l);
    l.op = "gated_delta";
    l.plan_fn = "attnrt_gated_delta_plan";
    l.gdn = 1;
    fuzz_linear(in, &l);
}
