/* conform_state_pool.c - the state-slot API on its own: a pool's tensor and usage, allocation of the
 * lowest free id (also after a free), a full pool, errors that name the slot (double free, out of
 * range, copying into or from a freed slot), and the bytes of the whole pool after slot_zero and
 * slot_copy: the named slots exactly zero / exactly the source, every other byte unchanged. Only on a
 * device that runs lightning or gated delta: elsewhere the cases are unsupported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_attn_io.h"
#include "conform_compare.h"

/* A call that must fail and name `slot` in its message. */
static void must_refuse(attnrt_status_t st, const char *call, int slot, cf_result_t *res)
{
    char number[16];
    snprintf(number, sizeof number, "%d", slot);
    if (st == ATTNRT_OK)
        cf_result_fail(res, "%s succeeded; it must be refused", call);
    else if (!strstr(attnrt_last_error(), number))
        cf_result_fail(res, "%s was refused (%s) without naming slot %d: \"%s\"", call, attnrt_status_name(st), slot,
                       attnrt_last_error());
}

static int check_tensor(const attnrt_tensor_t *t, const cf_case_t *c, const int64_t *slot_shape, int n, cf_result_t *res)
{
    const attnrt_dtype_t want = cf_dtype_attnrt(c->q_dtype);
    if (t->ndim != c->slot_ndim + 1 || t->dtype.code != want.code || t->dtype.bits != want.bits || !t->data) {
        cf_result_fail(res, "attnrt_state_pool_tensor: ndim %d, dtype %s; expected ndim %d, dtype %s", t->ndim,
                       attnrt_dtype_name(t->dtype), c->slot_ndim + 1, cf_dtype_name(c->q_dtype));
        return -1;
    }
    int64_t stride = 1;
    for (int d = c->slot_ndim; d >= 0; d--) {
        const int64_t extent = d == 0 ? n : slot_shape[d - 1];
        if (t->shape[d] != extent || t->strides[d] != stride) {
            cf_result_fail(res, "attnrt_state_pool_tensor: dim %d has shape %lld stride %lld; expected %lld and %lld", d,
                           (long long)t->shape[d], (long long)t->strides[d], (long long)extent, (long long)stride);
            return -1;
        }
        stride *= extent;
    }
    return 0;
}

static int usage_is(attnrt_state_pool_t *pool, int n, int free_count, const char *when, cf_result_t *res)
{
    int32_t got_n = -1, got_free = -1;
    if (!cf_check_status(attnrt_state_pool_usage(pool, &got_n, &got_free), "attnrt_state_pool_usage", res)) return -1;
    if (got_n == n && got_free == free_count) return 0;
    cf_result_fail(res, "attnrt_state_pool_usage %s: %d slots, %d free; expected %d and %d", when, got_n, got_free, n,
                   free_count);
    return -1;
}

/* A pool holds the states of lightning and gated delta. The runtime builds it on the plugin's memory
 * entries alone, so on a device that runs neither op a pass would be the runtime's, not the plugin's:
 * "unsupported" then, with the plugin's reasons. Asked with every other field 0 ("any"). */
static int pool_applies(const cf_env_t *env, cf_result_t *res)
{
    static const uint32_t ops[2] = {ATTNRT_OP_LIGHTNING, ATTNRT_OP_GATED_DELTA};
    char why[2][256];
    for (int i = 0; i < 2; i++) {
        attnrt_op_query_t q = {.struct_size = sizeof q, .op = ops[i]};
        why[i][0] = '\0';
        const attnrt_status_t st = attnrt_op_supported(env->ctx, &q, why[i], sizeof why[i]);
        if (st == ATTNRT_OK) return 1;
        if (st != ATTNRT_ERR_UNSUPPORTED) {
            cf_result_fail(res, "attnrt_op_supported(%s, every field any): %s: %s", attnrt_op_name(ops[i]),
                           attnrt_status_name(st), attnrt_last_error());
            return 0;
        }
    }
    cf_result_unsupported(res, "state pools serve lightning and gated_delta, and the device runs neither (lightning: "
                          "%s; gated_delta: %s)", why[0], why[1]);
    return 0;
}

void cf_run_state_pool(const cf_env_t *env, const cf_case_t *c, cf_result_t *res)
{
    if (!pool_applies(env, res)) return;
    res->tolerance = 0.0; /* bit-exact */
    const int n = c->num_tokens;
    const int64_t all[3] = {c->num_q_heads, c->head_dim_qk, c->head_dim_v};
    const int64_t *slot_shape = all + (3 - c->slot_ndim);
    size_t slot_elems = 1;
    for (int d = 0; d < c->slot_ndim; d++) slot_elems *= (size_t)slot_shape[d];
    const size_t es = cf_dtype_size(c->q_dtype), bytes = (size_t)n * slot_elems * es;
    cf_rng_t rng;
    cf_rng_init(&rng, c->seed);
    attnrt_state_pool_t *pool = NULL;
    attnrt_stream_t *stream = NULL;
    unsigned char *expect = malloc(bytes + 1), *got = malloc(bytes + 1);
    char call[96];
    if (!expect || !got) {
        cf_result_fail(res, "checker: out of host memory");
        goto done;
    }
    if (!cf_check_status(attnrt_state_pool_create(env->ctx, cf_dtype_attnrt(c->q_dtype), c->slot_ndim, slot_shape, n,
                                                  &pool),
                         "attnrt_state_pool_create", res))
        goto done;
    attnrt_tensor_t t;
    if (!cf_check_status(attnrt_state_pool_tensor(pool, &t), "attnrt_state_pool_tensor", res) ||
        check_tensor(&t, c, slot_shape, n, res) != 0 || usage_is(pool, n, n, "of a new pool", res) != 0)
        goto done;

    int32_t slot = -1;
    for (int i = 0; i < n; i++) {
        if (!cf_check_status(attnrt_state_slot_alloc(pool, &slot), "attnrt_state_slot_alloc", res)) goto done;
        if (slot != i) {
            cf_result_fail(res, "attnrt_state_slot_alloc returned slot %d; expected the lowest free id %d", slot, i);
            goto done;
        }
    }
    if (usage_is(pool, n, 0, "when full", res) != 0) goto done;
    attnrt_status_t st = attnrt_state_slot_alloc(pool, &slot);
    if (st != ATTNRT_ERR_OUT_OF_MEMORY) {
        cf_result_fail(res, "attnrt_state_slot_alloc on a full pool: %s; expected ATTNRT_ERR_OUT_OF_MEMORY",
                       attnrt_status_name(st));
        goto done;
    }
    const int a = cf_rng_int(&rng, 0, n - 1);
    if (!cf_check_status(attnrt_state_slot_free(pool, a), "attnrt_state_slot_free", res)) goto done;
    snprintf(call, sizeof call, "attnrt_state_slot_free(%d) of a free slot", a);
    must_refuse(attnrt_state_slot_free(pool, a), call, a, res);
    snprintf(call, sizeof call, "attnrt_state_slot_free(%d) past the pool", n);
    must_refuse(attnrt_state_slot_free(pool, n), call, n, res);
    must_refuse(attnrt_state_slot_free(pool, -1), "attnrt_state_slot_free(-1)", -1, res);
    if (res->status != CF_PASS || usage_is(pool, n, 1, "after a free", res) != 0) goto done;
    if (!cf_check_status(attnrt_state_slot_alloc(pool, &slot), "attnrt_state_slot_alloc", res)) goto done;
    if (slot != a) {
        cf_result_fail(res, "attnrt_state_slot_alloc after freeing slot %d returned %d", a, slot);
        goto done;
    }

    /* roles: z zeroed, s copied to d, f freed; everything else must keep its bytes */
    int roles[4] = {0, 1, 2, 3};
    int *perm = malloc(sizeof(int) * (size_t)n);
    if (!perm) {
        cf_result_fail(res, "checker: out of host memory");
        goto done;
    }
    for (int i = 0; i < n; i++) perm[i] = i;
    cf_rng_shuffle(&rng, perm, n);
    for (int i = 0; i < 4; i++) roles[i] = perm[i];
    free(perm);
    const int z = roles[0], s = roles[1], d = roles[2], f = roles[3];
    if (!cf_check_status(attnrt_state_slot_free(pool, f), "attnrt_state_slot_free", res)) goto done;
    for (size_t i = 0; i < (size_t)n * slot_elems; i++) cf_encode(c->q_dtype, 2.0 * cf_rng_normal(&rng), expect, i);
    if (!cf_check_status(attnrt_mem_copy_to_device(env->ctx, t.data, expect, bytes, NULL),
                         "attnrt_mem_copy_to_device (the pool)", res))
        goto done;
    if (c->use_stream && !cf_check_status(attnrt_stream_create(env->ctx, &stream), "attnrt_stream_create", res))
        goto done;
    if (!cf_check_status(attnrt_state_slot_zero(pool, z, stream), "attnrt_state_slot_zero", res) ||
        !cf_check_status(attnrt_state_slot_copy(pool, s, d, stream), "attnrt_state_slot_copy", res))
        goto done;
    memset(expect + (size_t)z * slot_elems * es, 0, slot_elems * es);
    memcpy(expect + (size_t)d * slot_elems * es, expect + (size_t)s * slot_elems * es, slot_elems * es);
    snprintf(call, sizeof call, "attnrt_state_slot_copy(%d -> %d), the destination freed", s, f);
    must_refuse(attnrt_state_slot_copy(pool, s, f, stream), call, f, res);
    snprintf(call, sizeof call, "attnrt_state_slot_copy(%d -> %d), the source freed", f, d);
    must_refuse(attnrt_state_slot_copy(pool, f, d, stream), call, f, res);
    snprintf(call, sizeof call, "attnrt_state_slot_copy(%d -> %d), the destination past the pool", s, n);
    must_refuse(attnrt_state_slot_copy(pool, s, n, stream), call, n, res);
    if (res->status != CF_PASS) goto done;
    if (!cf_check_status(attnrt_stream_synchronize(env->ctx, stream), "attnrt_stream_synchronize", res) ||
        !cf_check_status(attnrt_mem_copy_to_host(env->ctx, got, t.data, bytes, NULL), "attnrt_mem_copy_to_host", res))
        goto done;
    if (env->corrupt) { /* self-test: one bit of the zeroed slot */
        got[(size_t)z * slot_elems * es] ^= 1u;
        res->corrupted = 1;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < (size_t)n * slot_elems; i++)
        if (cf_bits(c->q_dtype, got, i) != cf_bits(c->q_dtype, expect, i) && bad++ == 0) first = i;
    res->error = (double)bad;
    if (bad) {
        const int at = (int)(first / slot_elems);
        cf_result_fail(res, "state pool after slot_zero(%d) and slot_copy(%d -> %d): slot %d (%s) element %zu = 0x%x, "
                       "expected 0x%x; %zu elements differ", z, s, d, at,
                       at == z ? "zeroed" : at == d ? "the copy" : at == s ? "the copy's source" : "untouched",
                       first % slot_elems, cf_bits(c->q_dtype, got, first), cf_bits(c->q_dtype, expect, first), bad);
    }
done:
    if (pool) {
        st = attnrt_state_pool_destroy(pool);
        if (st != ATTNRT_OK) cf_result_fail(res, "attnrt_state_pool_destroy: %s: %s", attnrt_status_name(st), attnrt_last_error());
    }
    if (stream) attnrt_stream_destroy(stream);
    free(expect);
    free(got);
}
