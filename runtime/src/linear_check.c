/* Lightning and gated delta: the argument and host-metadata checks they share. Every slot id a kernel
 * would read or write is checked against the pool on the host, so a kernel never touches a freed slot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linear.h"
#include "tensor.h"

attnrt_status_t attnrt_linear_check_tensors(const char *fn, const linear_tensors_t *lt, int need_data,
                                            linear_shape_t *s)
{
    const int nd = need_data;
    memset(s, 0, sizeof *s);
    s->num_spec = -1;
    s->has_spec_args = lt->has_spec_args;
    TRY(attnrt_check_tensor(fn, "query", lt->query, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "key", lt->key, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "value", lt->value, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "out", lt->out, 0, 3, DT_ACT, 1, nd));
    TRY(attnrt_check_tensor(fn, "state", lt->state, 0, 4, DT_F32, 1, nd));
    TRY(attnrt_check_tensor(fn, "query_start_loc", lt->query_start_loc, 0, 1, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "state_indices", lt->state_indices, lt->state_indices_optional, 1, DT_I32, 0, nd));
    TRY(attnrt_check_tensor(fn, "has_initial_state", lt->has_initial_state, 0, 1, DT_FLAG, 0, nd));
    TRY(attnrt_check_no_overlap(fn, "out", lt->out));
    TRY(attnrt_check_no_overlap(fn, "state", lt->state));

    s->T = lt->query->shape[0];
    s->H = lt->query->shape[1];
    s->Dk = lt->query->shape[2];
    s->HV = lt->value->shape[1];
    s->Dv = lt->value->shape[2];
    s->B = lt->query_start_loc->shape[0] - 1;
    if (s->H < 1 || s->Dk < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query.shape[%d] (%s) = %lld; must be >= 1", fn,
                           s->H < 1 ? 1 : 2, s->H < 1 ? "num_heads" : "head_dim_k",
                           (long long)(s->H < 1 ? s->H : s->Dk));
    if (s->HV < 1 || s->Dv < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: value.shape[%d] (%s) = %lld; must be >= 1", fn,
                           s->HV < 1 ? 1 : 2, s->HV < 1 ? (lt->grouped ? "num_v_heads" : "num_heads") : "head_dim_v",
                           (long long)(s->HV < 1 ? s->HV : s->Dv));
    if (s->B < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query_start_loc.shape[0] = 0; must be num_seqs + 1 >= 1",
                           fn);
    /* Rows per head of the wider side: value heads (gated delta has HV >= H) unless the args are off. */
    const int64_t rows_heads = s->HV >= s->H ? s->HV : s->H;
    const char *heads_name = s->HV < s->H ? "num_heads (query.shape[1])"
                             : lt->grouped ? "num_v_heads (value.shape[1])" : "num_heads (value.shape[1])";
    TRY(attnrt_check_rows(fn, "num_tokens (query.shape[0])", s->T, heads_name, rows_heads));
    TRY(attnrt_check_rows(fn, "num_seqs (query_start_loc.shape[0] - 1)", s->B, heads_name, rows_heads));
    TRY(attnrt_check_same_dtype(fn, "key", lt->key, "query", lt->query));
    TRY(attnrt_check_same_dtype(fn, "value", lt->value, "query", lt->query));
    TRY(attnrt_check_dim(fn, "key", lt->key, 0, s->T, "num_tokens = query.shape[0]"));
    TRY(attnrt_check_dim(fn, "key", lt->key, 1, s->H, "num_heads = query.shape[1]"));
    TRY(attnrt_check_dim(fn, "key", lt->key, 2, s->Dk, "head_dim_k = query.shape[2]"));
    TRY(attnrt_check_dim(fn, "value", lt->value, 0, s->T, "num_tokens = query.shape[0]"));
    if (!lt->grouped) {
        TRY(attnrt_check_dim(fn, "value", lt->value, 1, s->H, "num_heads = query.shape[1]"));
    } else if (s->HV % s->H != 0) {
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_v_heads = %lld (value.shape[1]) is not a multiple of "
                           "num_heads = %lld (query.shape[1])", fn, (long long)s->HV, (long long)s->H);
    }
    const char *heads = lt->grouped ? "num_v_heads = value.shape[1]" : "num_heads = query.shape[1]";
    TRY(attnrt_check_dim(fn, "out", lt->out, 0, s->T, "num_tokens = query.shape[0]"));
    TRY(attnrt_check_dim(fn, "out", lt->out, 1, s->HV, heads));
    TRY(attnrt_check_dim(fn, "out", lt->out, 2, s->Dv, "head_dim_v = value.shape[2]"));
    if (!attnrt_dtype_equal(lt->out->dtype, lt->query->dtype) && !attnrt_dtype_equal(lt->out->dtype, ATTNRT_F32))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: out.dtype = %s; expected query's dtype (%s) or f32", fn,
                           attnrt_dtype_name(lt->out->dtype), attnrt_dtype_name(lt->query->dtype));
    if (lt->state->shape[0] < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: state.shape[0] (num_slots) = 0; pass the pool's tensor "
                           "(attnrt_state_pool_tensor)", fn);
    TRY(attnrt_check_dim(fn, "state", lt->state, 1, s->HV, heads));
    TRY(attnrt_check_dim(fn, "state", lt->state, 2, s->Dk, "head_dim_k = query.shape[2]"));
    TRY(attnrt_check_dim(fn, "state", lt->state, 3, s->Dv, "head_dim_v = value.shape[2]"));
    if (lt->state_indices)
        TRY(attnrt_check_dim(fn, "state_indices", lt->state_indices, 0, s->B, "num_seqs = query_start_loc.shape[0] - 1"));
    TRY(attnrt_check_dim(fn, "has_initial_state", lt->has_initial_state, 0, s->B,
                         "num_seqs = query_start_loc.shape[0] - 1"));
    return ATTNRT_OK;
}

static attnrt_status_t check_batch(const char *fn, const linear_shape_t *s, const attnrt_batch_host_t *batch)
{
    if (batch->num_seqs != s->B)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->num_seqs = %d differs from num_seqs = %lld "
                           "(query_start_loc.shape[0] - 1)", fn, batch->num_seqs, (long long)s->B);
    if (!batch->query_start_loc)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->query_start_loc is NULL", fn);
    return attnrt_check_host_query_start_loc(fn, batch->query_start_loc, s->B, s->T);
}

static attnrt_status_t check_states_struct(const char *fn, const linear_shape_t *s, const attnrt_state_host_t *st)
{
    if (!st->has_initial_state)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->has_initial_state is NULL (required: 0 starts a "
                           "request from a zero state)", fn);
    if (s->num_spec < 0) {
        if (!st->state_indices) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->state_indices is NULL", fn);
        const char *why = s->has_spec_args ? "args->spec_state_indices is NULL (no speculative decoding)"
                                           : "this op has no speculative decoding";
        if (st->spec_state_indices || st->num_accepted)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->%s is given but %s; leave it NULL", fn,
                               st->spec_state_indices ? "spec_state_indices" : "num_accepted", why);
        if (st->num_spec != 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->num_spec = %d but %s; set it to 0", fn,
                               st->num_spec, why);
        return ATTNRT_OK;
    }
    if (!st->spec_state_indices || !st->num_accepted)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->%s is NULL but args->spec_state_indices is given",
                           fn, st->spec_state_indices ? "num_accepted" : "spec_state_indices");
    if (st->num_spec != s->num_spec)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->num_spec = %d differs from "
                           "spec_state_indices.shape[1] - 1 = %lld", fn, st->num_spec, (long long)s->num_spec);
    return ATTNRT_OK;
}

/* Checks one slot id a request reads or writes: allocated, and not another request's. owner[slot] is
 * 1 + the request that used it first (0: none yet). `arg` names the entry in messages. */
static attnrt_status_t check_request_slot(const char *fn, const char *arg, const attnrt_state_pool_t *pool,
                                          int32_t slot, int64_t b, int32_t *owner, int spec)
{
    TRY(attnrt_state_pool_check_slot(fn, arg, pool, slot));
    if (owner[slot] != 0 && owner[slot] != b + 1) {
        if (spec)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d is also a slot of request %d; two requests "
                               "cannot share a slot (their state writes would race)", fn, arg, slot, owner[slot] - 1);
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d is also state_indices[%d]; two requests cannot "
                           "share a slot (their state writes would race)", fn, arg, slot, owner[slot] - 1);
    }
    owner[slot] = (int32_t)(b + 1);
    return ATTNRT_OK;
}

static attnrt_status_t check_requests(const char *fn, const linear_shape_t *s, const attnrt_batch_host_t *batch,
                                      const attnrt_state_host_t *st, const attnrt_state_pool_t *pool, int32_t *owner)
{
    const int32_t *qsl = batch->query_start_loc;
    const int64_t width = s->num_spec + 1;
    char arg[64];
    for (int64_t b = 0; b < s->B; b++) {
        uint8_t init = st->has_initial_state[b];
        if (init > 1)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: states->has_initial_state[%lld] = %u; must be 0 or 1",
                               fn, (long long)b, init);
        if (s->num_spec < 0) {
            int32_t slot = st->state_indices[b];
            if (slot == -1) continue; /* padding */
            snprintf(arg, sizeof arg, "state_indices[%lld]", (long long)b);
            if (slot < -1)
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d; must be -1 (padding) or a slot id in "
                                   "[0, %d)", fn, arg, slot, pool->num_slots);
            TRY(check_request_slot(fn, arg, pool, slot, b, owner, 0));
            continue;
        }
        int64_t len = (int64_t)qsl[b + 1] - qsl[b];
        if (len > width)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query length %lld of request %lld "
                               "(query_start_loc[%lld] - query_start_loc[%lld]) > num_spec + 1 = %lld", fn,
                               (long long)len, (long long)b, (long long)b + 1, (long long)b, (long long)width);
        const int32_t *row = st->spec_state_indices + b * width;
        if (row[0] < 0) continue; /* padding */
        int32_t accepted = st->num_accepted[b];
        if (accepted < 1 || accepted > width)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_accepted[%lld] = %d; must be in [1, num_spec + 1 = "
                               "%lld]", fn, (long long)b, accepted, (long long)width);
        for (int64_t j = 0; j < width; j++) {
            snprintf(arg, sizeof arg, "spec_state_indices[%lld][%lld]", (long long)b, (long long)j);
            if (row[j] == -1) continue; /* not written */
            if (row[j] < -1)
                return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %d; must be -1 (unused) or a slot id in "
                                   "[0, %d)", fn, arg, row[j], pool->num_slots);
            TRY(check_request_slot(fn, arg, pool, row[j], b, owner, 1));
        }
        if (init && row[accepted - 1] == -1)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: spec_state_indices[%lld][%d] = -1 but request %lld "
                               "reads its initial state there (num_accepted[%lld] = %d, has_initial_state[%lld] = 1)",
                               fn, (long long)b, accepted - 1, (long long)b, (long long)b, accepted, (long long)b);
    }
    return ATTNRT_OK;
}

attnrt_status_t attnrt_linear_check_host(const char *fn, attnrt_context_t *ctx, const linear_shape_t *s,
                                         const attnrt_tensor_t *state, const attnrt_batch_host_t *batch,
                                         const attnrt_state_host_t *states, const attnrt_state_pool_t *pool)
{
    if (pool->ctx != ctx)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: pool belongs to another context (%s)", fn,
                           pool->ctx->ref->name);
    TRY(attnrt_state_pool_check_tensor(fn, pool, state));
    TRY(check_batch(fn, s, batch));
    TRY(check_states_struct(fn, s, states));
    int32_t *owner = calloc((size_t)pool->num_slots, sizeof *owner);
    if (!owner) return attnrt_fail(ATTNRT_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
    attnrt_status_t st = check_requests(fn, s, batch, states, pool, owner);
    free(owner);
    return st;
}
