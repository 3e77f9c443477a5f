/* conform_state.c - state pools and the rounds of the state ops (see conform_state.h). */
#include "conform_state.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"

#define PATTERN_AMPLITUDE 3.0 /* finite values in slots no request names                      */
#define STATE_AMPLITUDE   1.0 /* initial states of sequences that start with one              */

/* ---- helpers ------------------------------------------------------------------------------------ */

static size_t elems_of(int ndim, const int64_t *shape)
{
    size_t n = 1;
    for (int d = 0; d < ndim; d++) n *= (size_t)shape[d];
    return n;
}

int cf_state_upload_values(cf_dev_t *dev, cf_dtype_t dt, const double *vals, int ndim, const int64_t *shape,
                           attnrt_tensor_t *t, double **ref, cf_result_t *res)
{
    const size_t n = elems_of(ndim, shape);
    unsigned char *host = malloc(n * cf_dtype_size(dt) + 1);
    double *r = malloc(sizeof(double) * (n + 1));
    if (!host || !r) {
        free(host);
        free(r);
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        cf_encode(dt, vals[i], host, i);
        r[i] = cf_decode(dt, host, i);
    }
    void *p = NULL;
    int rc = cf_dev_upload_new(dev, host, n * cf_dtype_size(dt), &p, "input upload");
    free(host);
    if (rc != 0) {
        free(r);
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    cf_tensor_contig(t, p, cf_dtype_attnrt(dt), ndim, shape);
    free(*ref);
    *ref = r;
    return 0;
}

int cf_state_upload_normal(cf_dev_t *dev, cf_rng_t *rng, cf_dtype_t dt, double amplitude, int ndim,
                           const int64_t *shape, attnrt_tensor_t *t, double **ref, cf_result_t *res)
{
    const size_t n = elems_of(ndim, shape);
    double *vals = malloc(sizeof(double) * (n + 1));
    if (!vals) {
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) vals[i] = amplitude * cf_rng_normal(rng);
    int rc = cf_state_upload_values(dev, dt, vals, ndim, shape, t, ref, res);
    free(vals);
    return rc;
}

int cf_state_poisoned_out(cf_dev_t *dev, cf_dtype_t dt, int T, int heads, int dv, attnrt_tensor_t *t,
                          cf_result_t *res)
{
    const int64_t shape[3] = {T, heads, dv};
    const size_t n = elems_of(3, shape);
    unsigned char *host = malloc(n * cf_dtype_size(dt) + 1);
    if (!host) {
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) cf_poison(dt, host, i);
    void *p = NULL;
    int rc = cf_dev_upload_new(dev, host, n * cf_dtype_size(dt), &p, "out upload");
    free(host);
    if (rc != 0) {
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    cf_tensor_contig(t, p, cf_dtype_attnrt(dt), 3, shape);
    return 0;
}

int cf_state_read_out(cf_dev_t *dev, cf_dtype_t dt, const attnrt_tensor_t *t, double *got, cf_result_t *res)
{
    const size_t n = elems_of(t->ndim, t->shape);
    unsigned char *host = malloc(n * cf_dtype_size(dt) + 1);
    if (!host) {
        cf_result_fail(res, "checker: out of host memory");
        return -1;
    }
    int rc = cf_dev_download(dev, host, t->data, n * cf_dtype_size(dt), "out download");
    if (rc != 0)
        cf_result_fail(res, "%s", dev->error);
    else
        for (size_t i = 0; i < n; i++) got[i] = cf_decode(dt, host, i);
    free(host);
    return rc;
}

int cf_pool_read(cf_dev_t *dev, const cf_pool_t *p, float *into, cf_result_t *res)
{
    if (cf_dev_download(dev, into, p->tensor.data, (size_t)p->num_slots * p->slot_elems * sizeof(float),
                        "state pool download") == 0)
        return 0;
    cf_result_fail(res, "%s", dev->error);
    return -1;
}

/* ---- the pool ----------------------------------------------------------------------------------- */

/* has_init of the first request naming sequence s; -1 when none does. */
static int first_has_init(const cf_case_t *c, int s)
{
    for (int r = 0; r < c->num_rounds; r++)
        for (int b = 0; b < c->rounds[r].num_reqs; b++)
            if (c->rounds[r].seq[b] == s) return c->rounds[r].has_init[b];
    return -1;
}

static void fill_slot(cf_pool_t *p, int slot, cf_rng_t *rng, double amplitude)
{
    float *s = p->image + (size_t)slot * p->slot_elems;
    for (size_t i = 0; i < p->slot_elems; i++) s[i] = amplitude > 0 ? (float)(amplitude * cf_rng_normal(rng)) : NAN;
}

static int check_pool_tensor(const cf_pool_t *p, cf_result_t *res)
{
    const attnrt_tensor_t *t = &p->tensor;
    const int64_t want[4] = {p->num_slots, p->heads, p->dk, p->dv};
    const attnrt_dtype_t f32 = ATTNRT_F32;
    if (t->ndim != 4 || t->dtype.code != f32.code || t->dtype.bits != f32.bits || !t->data) {
        cf_result_fail(res, "attnrt_state_pool_tensor: ndim %d, dtype %s, data %p; expected a 4-D f32 tensor over "
                       "the pool's memory", t->ndim, attnrt_dtype_name(t->dtype), t->data);
        return -1;
    }
    int64_t stride = 1;
    for (int d = 3; d >= 0; d--) {
        if (t->shape[d] != want[d] || t->strides[d] != stride) {
            cf_result_fail(res, "attnrt_state_pool_tensor: dim %d has shape %lld stride %lld; expected %lld and %lld "
                           "(the contiguous [num_slots, slot_shape...] the pool was made with)", d,
                           (long long)t->shape[d], (long long)t->strides[d], (long long)want[d], (long long)stride);
            return -1;
        }
        stride *= want[d];
    }
    return 0;
}

/* Takes n_alloc slots: the lowest free id each time, also after a slot was freed again. */
static int allocate_slots(const cf_pool_t *p, cf_rng_t *rng, int n_alloc, cf_result_t *res)
{
    int32_t num = -1, free_count = -1, slot = -1;
    attnrt_status_t st = attnrt_state_pool_usage(p->pool, &num, &free_count);
    if (!cf_check_status(st, "attnrt_state_pool_usage", res)) return -1;
    if (num != p->num_slots || free_count != p->num_slots) {
        cf_result_fail(res, "attnrt_state_pool_usage of a new pool: %d slots, %d free; expected %d and %d", num,
                       free_count, p->num_slots, p->num_slots);
        return -1;
    }
    for (int i = 0; i < n_alloc; i++) {
        if (!cf_check_status(attnrt_state_slot_alloc(p->pool, &slot), "attnrt_state_slot_alloc", res)) return -1;
        if (slot != i) {
            cf_result_fail(res, "attnrt_state_slot_alloc returned slot %d; expected the lowest free id %d", slot, i);
            return -1;
        }
    }
    const int again = cf_rng_int(rng, 0, n_alloc - 1);
    if (!cf_check_status(attnrt_state_slot_free(p->pool, again), "attnrt_state_slot_free", res) ||
        !cf_check_status(attnrt_state_slot_alloc(p->pool, &slot), "attnrt_state_slot_alloc", res))
        return -1;
    if (slot != again) {
        cf_result_fail(res, "attnrt_state_slot_alloc after freeing slot %d returned %d; expected %d (the lowest free id)",
                       again, slot, again);
        return -1;
    }
    st = attnrt_state_pool_usage(p->pool, &num, &free_count);
    if (!cf_check_status(st, "attnrt_state_pool_usage", res)) return -1;
    if (free_count != p->num_slots - n_alloc) {
        cf_result_fail(res, "attnrt_state_pool_usage: %d free after %d of %d slots were taken", free_count, n_alloc,
                       p->num_slots);
        return -1;
    }
    return 0;
}

/* Compares the pool's bytes with `expect`; names the first difference. 1 when equal. */
static int pool_bytes_equal(const cf_pool_t *p, const float *got, const float *expect, const char *when,
                            cf_result_t *res)
{
    const size_t n = (size_t)p->num_slots * p->slot_elems;
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &expect[i], 4);
        if (a == b) continue;
        const size_t slot = i / p->slot_elems;
        cf_result_fail(res, "state pool %s: slot %zu (%s) element %zu = %g (0x%08x), expected %g (0x%08x)", when, slot,
                       p->role[slot], i % p->slot_elems, (double)got[i], a, (double)expect[i], b);
        return 0;
    }
    return 1;
}

int cf_pool_setup(const cf_env_t *env, const cf_case_t *c, cf_rng_t *rng, int heads, int dk, int dv,
                  attnrt_stream_t *stream, cf_pool_t *p, cf_result_t *res)
{
    memset(p, 0, sizeof *p);
    p->decoy = -1;
    int seqs = 0, fresh = 0, any_spec = 0;
    for (int r = 0; r < c->num_rounds; r++)
        for (int b = 0; b < c->rounds[r].num_reqs; b++) {
            const int s = c->rounds[r].seq[b];
            if (s + 1 > seqs) seqs = s + 1;
            if (c->rounds[r].spec && s >= 0) fresh += c->num_spec;
            any_spec |= c->rounds[r].spec;
        }
    if (seqs > CF_MAX_SEQS || c->num_spec > CF_MAX_SPEC) {
        cf_result_fail(res, "checker bug: %d sequences, %d draft tokens", seqs, c->num_spec);
        return -1;
    }
    const int extras = c->extra_slots > 0 ? c->extra_slots : 1;
    const int n_alloc = seqs + fresh + any_spec + extras;
    p->num_seqs = seqs;
    p->num_slots = n_alloc + 1;
    p->heads = heads;
    p->dk = dk;
    p->dv = dv;
    p->slot_elems = (size_t)heads * (size_t)dk * (size_t)dv;
    const size_t total = (size_t)p->num_slots * p->slot_elems;
    p->image = malloc(sizeof(float) * total);
    p->ref = malloc(sizeof(double) * total);
    p->role = calloc((size_t)p->num_slots, sizeof *p->role);
    p->fresh = malloc(sizeof(int) * (size_t)(fresh + 1));
    int *perm = malloc(sizeof(int) * (size_t)n_alloc);
    float *got = malloc(sizeof(float) * total);
    int rc = -1;
    if (!p->image || !p->ref || !p->role || !p->fresh || !perm || !got) {
        cf_result_fail(res, "checker: out of host memory for the state pool");
        goto done;
    }

    const int64_t shape[3] = {heads, dk, dv};
    if (!cf_check_status(attnrt_state_pool_create(env->ctx, ATTNRT_F32, 3, shape, p->num_slots, &p->pool),
                         "attnrt_state_pool_create", res))
        goto done;
    if (!cf_check_status(attnrt_state_pool_tensor(p->pool, &p->tensor), "attnrt_state_pool_tensor", res) ||
        check_pool_tensor(p, res) != 0 || allocate_slots(p, rng, n_alloc, res) != 0)
        goto done;

    /* roles in a shuffled order: sequences, fresh speculative slots, the decoy, extras */
    for (int i = 0; i < n_alloc; i++) perm[i] = i;
    cf_rng_shuffle(rng, perm, n_alloc);
    int next = 0;
    int copy_from = -1;
    for (int i = 0; i < extras; i++) { /* first, so that a sequence can be copied from one */
        const int slot = perm[n_alloc - 1 - i];
        snprintf(p->role[slot], sizeof p->role[slot], "named by no request");
        fill_slot(p, slot, rng, PATTERN_AMPLITUDE);
        copy_from = slot;
    }
    const int never = p->num_slots - 1;
    snprintf(p->role[never], sizeof p->role[never], "never allocated");
    fill_slot(p, never, rng, PATTERN_AMPLITUDE);
    if (any_spec) {
        p->decoy = perm[n_alloc - 1 - extras];
        snprintf(p->role[p->decoy], sizeof p->role[p->decoy], "state_indices, unused");
        fill_slot(p, p->decoy, rng, PATTERN_AMPLITUDE);
    }
    int zero_slots[CF_MAX_SEQS], copy_slots[CF_MAX_SEQS], n_zero = 0, n_copy = 0;
    for (int s = 0; s < seqs; s++) {
        const int slot = perm[next++];
        p->cur[s] = slot;
        snprintf(p->role[slot], sizeof p->role[slot], "sequence %d", s);
        const int init = first_has_init(c, s);
        if (init != 1) { /* never read: NaN shows any read */
            fill_slot(p, slot, rng, 0.0);
            continue;
        }
        const int how = cf_rng_int(rng, 0, 9);
        if (how < 2) { /* attnrt_state_slot_zero over NaN */
            fill_slot(p, slot, rng, 0.0);
            zero_slots[n_zero++] = slot;
        } else if (how < 4) { /* attnrt_state_slot_copy from an extra, over NaN */
            fill_slot(p, slot, rng, 0.0);
            copy_slots[n_copy++] = slot;
        } else {
            fill_slot(p, slot, rng, STATE_AMPLITUDE);
        }
    }
    for (int i = 0; i < fresh; i++) {
        const int slot = perm[next++];
        p->fresh[p->num_fresh++] = slot;
        snprintf(p->role[slot], sizeof p->role[slot], "speculative row");
        fill_slot(p, slot, rng, 0.0);
    }

    attnrt_status_t st = attnrt_mem_copy_to_device(env->ctx, p->tensor.data, p->image, total * sizeof(float), NULL);
    if (!cf_check_status(st, "attnrt_mem_copy_to_device (the state pool)", res)) goto done;
    for (int i = 0; i < n_zero; i++) {
        if (!cf_check_status(attnrt_state_slot_zero(p->pool, zero_slots[i], stream), "attnrt_state_slot_zero", res))
            goto done;
        memset(p->image + (size_t)zero_slots[i] * p->slot_elems, 0, p->slot_elems * sizeof(float));
    }
    for (int i = 0; i < n_copy; i++) {
        if (!cf_check_status(attnrt_state_slot_copy(p->pool, copy_from, copy_slots[i], stream),
                             "attnrt_state_slot_copy", res))
            goto done;
        memcpy(p->image + (size_t)copy_slots[i] * p->slot_elems, p->image + (size_t)copy_from * p->slot_elems,
               p->slot_elems * sizeof(float));
    }
    if (!cf_check_status(attnrt_stream_synchronize(env->ctx, stream), "attnrt_stream_synchronize", res)) goto done;
    st = attnrt_mem_copy_to_host(env->ctx, got, p->tensor.data, total * sizeof(float), NULL);
    if (!cf_check_status(st, "attnrt_mem_copy_to_host (the state pool)", res)) goto done;
    if (!pool_bytes_equal(p, got, p->image, "after the upload, attnrt_state_slot_zero and attnrt_state_slot_copy",
                          res))
        goto done;
    for (size_t i = 0; i < total; i++) p->ref[i] = p->image[i];
    rc = 0;
done:
    free(perm);
    free(got);
    return rc;
}

void cf_pool_free(cf_pool_t *p)
{
    if (p->pool) attnrt_state_pool_destroy(p->pool);
    free(p->image);
    free(p->ref);
    free(p->role);
    free(p->fresh);
    memset(p, 0, sizeof *p);
}

/* ---- the rounds --------------------------------------------------------------------------------- */

/* The worst error measured over a case's comparisons (NaN once one was not finite). */
typedef struct worst {
    double value; /* < 0: nothing measured yet */
    int    nan;
} worst_t;

static void track(worst_t *w, double e)
{
    if (isnan(e))
        w->nan = 1;
    else if (e > w->value)
        w->value = e;
}

static int upload_i32(cf_dev_t *dev, const int32_t *v, int ndim, const int64_t *shape, attnrt_tensor_t *t,
                      const char *what, cf_result_t *res)
{
    void *p = NULL;
    if (cf_dev_upload_new(dev, v, elems_of(ndim, shape) * sizeof(int32_t), &p, what) != 0) {
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    cf_tensor_contig(t, p, ATTNRT_I32, ndim, shape);
    return 0;
}

static int round_build(const cf_case_t *c, int ri, cf_pool_t *p, cf_dev_t *dev, cf_rng_t *rng, cf_round_t *r,
                       cf_result_t *res)
{
    const cf_state_round_t *sr = &c->rounds[ri];
    unsigned char *written = r->written;
    memset(r, 0, sizeof *r);
    r->written = written;
    memset(written, 0, (size_t)p->num_slots);
    r->index = ri;
    r->B = sr->num_reqs;
    r->spec = sr->spec;
    r->num_spec = c->num_spec;
    const int w = c->num_spec + 1;
    r->qsl[0] = 0;
    for (int b = 0; b < r->B; b++) {
        const int s = sr->seq[b], q_len = sr->q_lens[b];
        r->q_lens[b] = q_len;
        r->qsl[b + 1] = r->qsl[b] + q_len;
        r->padding[b] = s < 0;
        r->has_init[b] = (uint8_t)(s < 0 ? cf_rng_int(rng, 0, 1) : sr->has_init[b] != 0);
        if (!r->spec) {
            r->state_indices[b] = s < 0 ? -1 : p->cur[s];
            if (s >= 0) written[p->cur[s]] = 1;
            continue;
        }
        int32_t *row = r->spec_rows + (size_t)b * (size_t)w;
        r->state_indices[b] = p->decoy;
        r->num_accepted[b] = s < 0 ? 1 : sr->accepted[b];
        for (int k = 0; k < w; k++) row[k] = -1;
        if (s < 0) continue;
        for (int k = 0; k < w; k++) {
            if (k == sr->accepted[b] - 1)
                row[k] = p->cur[s];
            else if (p->next_fresh < p->num_fresh)
                row[k] = p->fresh[p->next_fresh++];
            /* a column past the request's tokens is never written: now and then -1 ("unused") there */
            if (k >= q_len && k != sr->accepted[b] - 1 && cf_rng_chance(rng, 0.3)) row[k] = -1;
        }
        for (int t = 0; t < q_len; t++) written[row[t]] = 1;
        if (q_len > 0) p->cur[s] = row[q_len - 1];
    }
    r->T = r->qsl[r->B];

    const int64_t b1[1] = {r->B + 1}, b0[1] = {r->B}, bw[2] = {r->B, w};
    if (upload_i32(dev, r->qsl, 1, b1, &r->qsl_t, "query_start_loc upload", res) ||
        upload_i32(dev, r->state_indices, 1, b0, &r->state_indices_t, "state_indices upload", res))
        return -1;
    if (r->spec && (upload_i32(dev, r->spec_rows, 2, bw, &r->spec_t, "spec_state_indices upload", res) ||
                    upload_i32(dev, r->num_accepted, 1, b0, &r->accepted_t, "num_accepted upload", res)))
        return -1;
    void *hp = NULL;
    if (cf_dev_upload_new(dev, r->has_init, (size_t)r->B, &hp, "has_initial_state upload") != 0) {
        cf_result_fail(res, "%s", dev->error);
        return -1;
    }
    /* both spellings the ABI allows: bool and uint8 */
    cf_tensor_contig(&r->has_init_t, hp, (c->seed >> 3) & 1u ? ATTNRT_BOOL : ATTNRT_U8, 1, b0);

    r->batch.struct_size = sizeof r->batch;
    r->batch.num_seqs = r->B;
    r->batch.query_start_loc = r->qsl;
    r->host.struct_size = sizeof r->host;
    r->host.state_indices = r->state_indices;
    r->host.has_initial_state = r->has_init;
    if (r->spec) {
        r->host.spec_state_indices = r->spec_rows;
        r->host.num_accepted = r->num_accepted;
        r->host.num_spec = r->num_spec;
    }
    return 0;
}

/* The first round's plan asked again with a slot never allocated, then one past the pool: both must
 * be refused by name before any kernel could follow them. */
static void refused_slots(const cf_env_t *env, const cf_state_op_t *op, const cf_pool_t *p, const cf_round_t *r,
                          cf_result_t *res)
{
    int b = 0;
    while (b < r->B && r->padding[b]) b++;
    if (b == r->B) return;
    const int w = r->num_spec + 1;
    for (int k = 0; k < 2 && res->status == CF_PASS; k++) {
        const int bad = k == 0 ? p->num_slots - 1 : p->num_slots;
        int32_t indices[CF_MAX_SEQS], rows[CF_MAX_SEQS * (CF_MAX_SPEC + 1)];
        memcpy(indices, r->state_indices, sizeof indices);
        memcpy(rows, r->spec_rows, sizeof rows);
        attnrt_state_host_t host = r->host;
        if (r->spec) {
            rows[(size_t)b * (size_t)w] = bad;
            host.spec_state_indices = rows;
        } else {
            indices[b] = bad;
            host.state_indices = indices;
        }
        const char *arg = r->spec ? "spec_state_indices" : "state_indices";
        const char *what = k == 0 ? "a slot never allocated" : "a slot past the pool";
        attnrt_plan_t *plan = NULL;
        attnrt_status_t st = op->plan(op->self, env->ctx, r, &host, p->pool, &plan);
        char number[16];
        snprintf(number, sizeof number, "%d", bad);
        if (st == ATTNRT_OK) {
            attnrt_plan_destroy(plan);
            cf_result_fail(res, "attnrt_%s_plan accepted %s[%d%s] = %d, %s (pool of %d slots)", op->name, arg, b,
                           r->spec ? "][0" : "", bad, what, p->num_slots);
        } else if (st != ATTNRT_ERR_INVALID_ARGUMENT) {
            cf_result_fail(res, "attnrt_%s_plan with %s[%d%s] = %d, %s: %s (%s); expected ATTNRT_ERR_INVALID_ARGUMENT",
                           op->name, arg, b, r->spec ? "][0" : "", bad, what, attnrt_status_name(st),
                           attnrt_last_error());
        } else if (!strstr(attnrt_last_error(), number) || !strstr(attnrt_last_error(), "state_indices")) {
            cf_result_fail(res, "attnrt_%s_plan refused %s[%d%s] = %d (%s) without naming the argument and the slot: "
                           "\"%s\"", op->name, arg, b, r->spec ? "][0" : "", bad, what, attnrt_last_error());
        }
    }
}

/* The slots the round wrote against the reference's pool; every other one byte for byte as before. */
static void judge_pool(cf_dev_t *dev, cf_pool_t *p, const cf_round_t *r, double tol, float *got, double *tmp,
                       worst_t *worst, cf_result_t *res)
{
    if (cf_pool_read(dev, p, got, res) != 0) return;
    const size_t E = p->slot_elems;
    for (int slot = 0; slot < p->num_slots; slot++) {
        const float *g = got + (size_t)slot * E, *before = p->image + (size_t)slot * E;
        if (r->written[slot]) {
            char what[128];
            snprintf(what, sizeof what, "state slot %d (%s) after round %d, as [head, k-row]", slot, p->role[slot],
                     r->index);
            for (size_t i = 0; i < E; i++) tmp[i] = g[i];
            const int ok = cf_compare_out(what, tmp, p->ref + (size_t)slot * E, NULL, (size_t)p->heads,
                                          (size_t)p->dk, (size_t)p->dv, tol, 0x1p-126, res);
            track(worst, res->error);
            if (!ok) return;
            continue;
        }
        if (memcmp(g, before, E * sizeof(float)) == 0) continue;
        size_t i = 0;
        while (i < E && memcmp(&g[i], &before[i], sizeof(float)) == 0) i++;
        cf_result_fail(res, "state slot %d (%s) is written by no request of round %d but changed: element %zu = %g, "
                       "was %g", slot, p->role[slot], r->index, i, (double)g[i], (double)before[i]);
        return;
    }
    memcpy(p->image, got, (size_t)p->num_slots * E * sizeof(float));
}

void cf_state_rounds(const cf_env_t *env, const cf_case_t *c, cf_rng_t *rng, cf_dev_t *dev, cf_pool_t *p,
                     const cf_state_op_t *op, attnrt_stream_t *stream, cf_result_t *res)
{
    int max_t = 1;
    for (int ri = 0; ri < c->num_rounds; ri++) {
        int t = 0;
        for (int b = 0; b < c->rounds[ri].num_reqs; b++) t += c->rounds[ri].q_lens[b];
        if (t > max_t) max_t = t;
    }
    const size_t out_elems = (size_t)max_t * (size_t)op->out_heads * (size_t)op->dv;
    const size_t pool_elems = (size_t)p->num_slots * p->slot_elems;
    cf_round_t r;
    r.written = malloc((size_t)p->num_slots);
    double *ref_out = malloc(sizeof(double) * (out_elems + 1));
    double *got_out = malloc(sizeof(double) * (out_elems + 1));
    double *row_lse = malloc(sizeof(double) * ((size_t)max_t * (size_t)op->out_heads + 1));
    float *got_pool = malloc(sizeof(float) * (pool_elems + 1));
    double *tmp = malloc(sizeof(double) * (p->slot_elems + 1));
    worst_t worst = {-1.0, 0};
    if (!r.written || !ref_out || !got_out || !row_lse || !got_pool || !tmp) {
        cf_result_fail(res, "checker: out of host memory");
        goto done;
    }
    for (int ri = 0; ri < c->num_rounds && res->status == CF_PASS; ri++) {
        attnrt_tensor_t out;
        attnrt_plan_t *plan = NULL;
        void *ws = NULL;
        size_t ws_bytes = 0;
        char call[64];
        if (round_build(c, ri, p, dev, rng, &r, res) != 0 ||
            cf_state_poisoned_out(dev, op->out_dtype, r.T, op->out_heads, op->dv, &out, res) != 0 ||
            op->inputs(op->self, dev, rng, &r, &out, &p->tensor, res) != 0)
            break;
        snprintf(call, sizeof call, "attnrt_%s_plan (round %d)", op->name, ri);
        if (!cf_check_status(op->plan(op->self, env->ctx, &r, &r.host, p->pool, &plan), call, res)) break;
        if (ri == 0) refused_slots(env, op, p, &r, res);
        snprintf(call, sizeof call, "attnrt_%s_run (round %d)", op->name, ri);
        if (res->status == CF_PASS && cf_workspace(dev, plan, &ws, &ws_bytes, res) == 0 &&
            cf_check_status(op->run(op->self, plan, ws, ws_bytes, stream), call, res) &&
            cf_check_status(attnrt_stream_synchronize(env->ctx, stream), "attnrt_stream_synchronize", res) &&
            cf_state_read_out(dev, op->out_dtype, &out, got_out, res) == 0) {
            op->reference(op->self, &r, p->ref, ref_out);
            const size_t n = (size_t)r.T * (size_t)op->out_heads * (size_t)op->dv;
            if (env->corrupt && ri == c->num_rounds - 1) res->corrupted = cf_corrupt_output(got_out, ref_out, n);
            for (int b = 0; b < r.B; b++) /* padding rows must be exactly 0: judged like rows with no key */
                for (int t = r.qsl[b]; t < r.qsl[b + 1]; t++)
                    for (int h = 0; h < op->out_heads; h++)
                        row_lse[(size_t)t * (size_t)op->out_heads + (size_t)h] = r.padding[b] ? -INFINITY : 0.0;
            char what[64];
            snprintf(what, sizeof what, c->num_rounds > 1 ? "out (round %d)" : "out", ri);
            cf_compare_out(what, got_out, ref_out, row_lse, (size_t)r.T, (size_t)op->out_heads, (size_t)op->dv,
                           op->tolerance, cf_dtype_min_normal(op->out_dtype), res);
            track(&worst, res->error);
            judge_pool(dev, p, &r, op->tolerance, got_pool, tmp, &worst, res);
        }
        attnrt_plan_destroy(plan);
    }
    res->error = worst.nan || worst.value < 0 ? NAN : worst.value;
done:
    free(r.written);
    free(ref_out);
    free(got_out);
    free(row_lse);
    free(got_pool);
    free(tmp);
}
