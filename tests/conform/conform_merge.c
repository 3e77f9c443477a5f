/* conform_merge.c - attnrt_merge_states: n partial states (o, lse), some empty (lse = -inf), merged
 * and compared with the reference's literal two-state formula (n = 2) or its n-way softmax-weighted
 * sum; sinks, when given, join once after the merge: o *= e^lse / (e^lse + e^sink). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"
#include "conform_device.h"
#include "reference.h"

typedef struct merge_bufs {
    unsigned char *state_host[CF_MAX_STATES];
    double        *o_ref, *s_ref;       /* [n, T, H, D], [n, T, H] as the device sees them */
    double        *out_ref, *lse_ref;   /* [T, H, D], [T, H]                                 */
    double        *out_got, *lse_got;
    unsigned char *out_host;
    float         *lse_host;
} merge_bufs_t;

static void free_bufs(merge_bufs_t *m)
{
    for (int i = 0; i < CF_MAX_STATES; i++) free(m->state_host[i]);
    free(m->o_ref);
    free(m->s_ref);
    free(m->out_ref);
    free(m->lse_ref);
    free(m->out_got);
    free(m->lse_got);
    free(m->out_host);
    free(m->lse_host);
}

/* The states' LSEs: ordinary spread, a share of empties, optionally far apart and far from 0
 * (e^lse overflows f32 there), and one token whose states are all empty. */
static void make_lses(const cf_case_t *c, cf_rng_t *rng, double *s, float *s_host)
{
    const int n = c->num_states, T = c->num_tokens, H = c->num_q_heads;
    const size_t count = (size_t)T * (size_t)H;
    const int empty_token = c->all_empty_token && T > 0 ? cf_rng_int(rng, 0, T - 1) : -1;
    for (int i = 0; i < n; i++)
        for (size_t th = 0; th < count; th++) {
            double v = c->extreme_lse ? cf_rng_range(rng, -150.0, 150.0) : cf_rng_range(rng, -4.0, 8.0);
            if (cf_rng_chance(rng, c->empty_fraction) || (int)(th / (size_t)H) == empty_token) v = -INFINITY;
            s_host[(size_t)i * count + th] = (float)v;
            s[(size_t)i * count + th] = (double)(float)v;
        }
}

void cf_run_merge(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    const int n = c->num_states, T = c->num_tokens, H = c->num_q_heads, D = c->head_dim_v;
    const size_t count = (size_t)T * (size_t)H, elems = count * (size_t)D;
    const size_t ses = cf_dtype_size(c->q_dtype), oes = cf_dtype_size(c->out_dtype);
    attnrt_op_query_t q;
    memset(&q, 0, sizeof q);
    q.struct_size = sizeof q;
    q.op = ATTNRT_OP_MERGE_STATES;
    q.q_dtype = cf_dtype_attnrt(c->out_dtype);
    q.kv_dtype = cf_dtype_attnrt(c->q_dtype);
    q.head_dim_v = (uint32_t)D;
    q.num_q_heads = (uint32_t)H;
    q.features = (c->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (c->lse ? ATTNRT_FEATURE_LSE : 0u);
    if (!cf_ask_supported(env, &q, "merge_states", res)) return;

    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    cf_dev_t dev;
    cf_dev_init(&dev, env->ctx);
    attnrt_stream_t *stream = NULL;
    merge_bufs_t m;
    memset(&m, 0, sizeof m);
    float *s_host = malloc(sizeof(float) * ((size_t)n * count + 1));
    m.o_ref = malloc(sizeof(double) * ((size_t)n * elems + 1));
    m.s_ref = malloc(sizeof(double) * ((size_t)n * count + 1));
    m.out_ref = malloc(sizeof(double) * (elems + 1));
    m.lse_ref = malloc(sizeof(double) * (count + 1));
    m.out_got = malloc(sizeof(double) * (elems + 1));
    m.lse_got = malloc(sizeof(double) * (count + 1));
    m.out_host = malloc(elems * oes + 1);
    m.lse_host = malloc(sizeof(float) * (count + 1));
    int alloc_ok = s_host && m.o_ref && m.s_ref && m.out_ref && m.lse_ref && m.out_got && m.lse_got && m.out_host &&
                   m.lse_host;
    for (int i = 0; i < n && alloc_ok; i++) alloc_ok = (m.state_host[i] = malloc(elems * ses + 1)) != NULL;
    if (!alloc_ok) {
        cf_result_fail(res, "checker: out of host memory");
        goto done;
    }
    make_lses(c, &rng, m.s_ref, s_host);

    attnrt_tensor_t states[CF_MAX_STATES], lses[CF_MAX_STATES], out, out_lse, sinks;
    const attnrt_tensor_t *state_ptrs[CF_MAX_STATES], *lse_ptrs[CF_MAX_STATES];
    const int64_t oshape[3] = {T, H, D}, lshape[2] = {T, H}, hshape[1] = {H};
    void *p = NULL;
    for (int i = 0; i < n; i++) {
        /* an empty state's o is finite garbage: its weight e^-inf = 0 must silence it */
        for (size_t e = 0; e < elems; e++) {
            cf_encode(c->q_dtype, cf_rng_normal(&rng) * 2.0, m.state_host[i], e);
            m.o_ref[(size_t)i * elems + e] = cf_decode(c->q_dtype, m.state_host[i], e);
        }
        if (cf_dev_upload_new(&dev, m.state_host[i], elems * ses, &p, "state upload")) goto dev_fail;
        cf_tensor_contig(&states[i], p, cf_dtype_attnrt(c->q_dtype), 3, oshape);
        if (cf_dev_upload_new(&dev, s_host + (size_t)i * count, count * sizeof(float), &p, "lse upload")) goto dev_fail;
        cf_tensor_contig(&lses[i], p, ATTNRT_F32, 2, lshape);
        state_ptrs[i] = &states[i];
        lse_ptrs[i] = &lses[i];
    }
    for (size_t e = 0; e < elems; e++) cf_poison(c->out_dtype, m.out_host, e);
    for (size_t e = 0; e < count; e++) m.lse_host[e] = NAN;
    if (cf_dev_upload_new(&dev, m.out_host, elems * oes, &p, "out upload")) goto dev_fail;
    cf_tensor_contig(&out, p, cf_dtype_attnrt(c->out_dtype), 3, oshape);
    if (cf_dev_upload_new(&dev, m.lse_host, count * sizeof(float), &p, "out_lse upload")) goto dev_fail;
    cf_tensor_contig(&out_lse, p, ATTNRT_F32, 2, lshape);
    float sink_vals[256];
    double sink_ref[256];
    if (c->sinks) {
        /* within the states' LSE range, so the sink always takes a visible share */
        for (int h = 0; h < H && h < 256; h++) sink_ref[h] = sink_vals[h] = (float)cf_rng_range(&rng, 0.0, 8.0);
        if (cf_dev_upload_new(&dev, sink_vals, sizeof(float) * (size_t)H, &p, "sinks upload")) goto dev_fail;
        cf_tensor_contig(&sinks, p, ATTNRT_F32, 1, hshape);
    }

    attnrt_merge_args_t args = {
        .struct_size = sizeof args,
        .num_states = (uint32_t)n,
        .states = state_ptrs,
        .lses = lse_ptrs,
        .out = &out,
        .out_lse = c->lse ? &out_lse : NULL,
        .sinks = c->sinks ? &sinks : NULL,
    };
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    if (!cf_check_status(attnrt_merge_states(env->ctx, &args, stream), "attnrt_merge_states", res)) goto done;
    if (!cf_check_status(attnrt_stream_synchronize(env->ctx, stream), "attnrt_stream_synchronize", res)) goto done;
    if (cf_dev_download(&dev, m.out_host, out.data, elems * oes, "out download") ||
        (c->lse && cf_dev_download(&dev, m.lse_host, out_lse.data, count * sizeof(float), "out_lse download")))
        goto dev_fail;

    if (n == 2) /* the literal two-state formula of docs/semantics.md */
        ref_merge_two(T, H, D, m.o_ref, m.s_ref, m.o_ref + elems, m.s_ref + count, m.out_ref, m.lse_ref);
    else
        ref_merge_states(n, T, H, D, m.o_ref, m.s_ref, m.out_ref, m.lse_ref);
    if (c->sinks) /* the sink joins the merged denominator once; LSE excludes it */
        for (size_t th = 0; th < count; th++) {
            if (m.lse_ref[th] == -INFINITY) continue;
            const double keep = 1.0 / (1.0 + exp(sink_ref[th % (size_t)H] - m.lse_ref[th]));
            for (int d = 0; d < D; d++) m.out_ref[th * (size_t)D + (size_t)d] *= keep;
        }
    for (size_t e = 0; e < elems; e++) m.out_got[e] = cf_decode(c->out_dtype, m.out_host, e);
    for (size_t e = 0; e < count; e++) m.lse_got[e] = m.lse_host[e];
    if (env->corrupt) res->corrupted = cf_corrupt_output(m.out_got, m.out_ref, elems);
    const cf_dtype_t dts[2] = {c->q_dtype, c->out_dtype};
    res->tolerance = cf_tolerance_of(dts, 2);
    cf_compare_out("out", m.out_got, m.out_ref, m.lse_ref, (size_t)T, (size_t)H, (size_t)D, res->tolerance,
                   cf_dtype_min_normal(c->out_dtype), res);
    if (c->lse) cf_compare_lse("out_lse", m.lse_got, m.lse_ref, (size_t)T, (size_t)H, res->tolerance, res);
    goto done;
dev_fail:
    cf_result_fail(res, "%s", dev.error);
done:
    free(s_host);
    free_bufs(&m);
    cf_dev_release(&dev);
    if (stream) attnrt_stream_destroy(stream);
}
