/* Merging partial attention states: checks, then one plugin call. */
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "struct_in.h"
#include "tensor.h"

/* Checks the runtime's copy `a` of the caller's args (attnrt_merge_args_in). */
static attnrt_status_t check_merge(const char *fn, const attnrt_merge_args_t *a, attnrt_op_query_t *q)
{
    if (a->num_states < 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_states = 0; merge at least one state", fn);
    if (!a->states || !a->lses)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, a->states ? "lses" : "states");
    TRY(attnrt_check_tensor(fn, "out", a->out, 0, 3, DT_ACT, 1, 1));
    TRY(attnrt_check_no_overlap(fn, "out", a->out));
    int64_t T = a->out->shape[0], H = a->out->shape[1], D = a->out->shape[2];
    TRY(attnrt_check_rows(fn, "num_tokens (out.shape[0])", T, "num_heads (out.shape[1])", H));
    for (uint32_t i = 0; i < a->num_states; i++) {
        char name[32], lname[32];
        snprintf(name, sizeof name, "states[%u]", i);
        snprintf(lname, sizeof lname, "lses[%u]", i);
        TRY(attnrt_check_tensor(fn, name, a->states[i], 0, 3, DT_ACT, 1, 1));
        TRY(attnrt_check_tensor(fn, lname, a->lses[i], 0, 2, DT_F32, 0, 1));
        if (i > 0) TRY(attnrt_check_same_dtype(fn, name, a->states[i], "states[0]", a->states[0]));
        TRY(attnrt_check_dim(fn, name, a->states[i], 0, T, "num_tokens = out.shape[0]"));
        TRY(attnrt_check_dim(fn, name, a->states[i], 1, H, "num_heads = out.shape[1]"));
        TRY(attnrt_check_dim(fn, name, a->states[i], 2, D, "head_dim = out.shape[2]"));
        TRY(attnrt_check_dim(fn, lname, a->lses[i], 0, T, "num_tokens = out.shape[0]"));
        TRY(attnrt_check_dim(fn, lname, a->lses[i], 1, H, "num_heads = out.shape[1]"));
    }
    TRY(attnrt_check_tensor(fn, "out_lse", a->out_lse, 1, 2, DT_F32, 0, 1));
    TRY(attnrt_check_no_overlap(fn, "out_lse", a->out_lse));
    if (a->out_lse) {
        TRY(attnrt_check_dim(fn, "out_lse", a->out_lse, 0, T, "num_tokens = out.shape[0]"));
        TRY(attnrt_check_dim(fn, "out_lse", a->out_lse, 1, H, "num_heads = out.shape[1]"));
    }
    TRY(attnrt_check_tensor(fn, "sinks", a->sinks, 1, 1, DT_F32, 0, 1));
    if (a->sinks) TRY(attnrt_check_dim(fn, "sinks", a->sinks, 0, H, "num_heads = out.shape[1]"));
    memset(q, 0, sizeof *q);
    q->struct_size = sizeof *q;
    q->op = ATTNRT_OP_MERGE_STATES;
    q->q_dtype = a->out->dtype;
    q->kv_dtype = a->states[0]->dtype;
    q->head_dim_v = (uint32_t)D;
    q->num_q_heads = (uint32_t)H;
    q->features = (a->sinks ? ATTNRT_FEATURE_SINKS : 0u) | (a->out_lse ? ATTNRT_FEATURE_LSE : 0u);
    return ATTNRT_OK;
}

/* Every tensor with data inside its attnrt_mem_alloc allocation. */
static attnrt_status_t check_merge_spans(attnrt_context_t *ctx, const char *fn, const attnrt_merge_args_t *a)
{
    static const char *const names[] = {"out", "out_lse", "sinks"};
    const attnrt_tensor_t *tensors[] = {a->out, a->out_lse, a->sinks};
    TRY(attnrt_check_spans(ctx, fn, tensors, names, 3));
    for (uint32_t i = 0; i < a->num_states; i++) {
        char name[32], lname[32];
        snprintf(name, sizeof name, "states[%u]", i);
        snprintf(lname, sizeof lname, "lses[%u]", i);
        const char *const pair_names[] = {name, lname};
        const attnrt_tensor_t *pair[] = {a->states[i], a->lses[i]};
        TRY(attnrt_check_spans(ctx, fn, pair, pair_names, 2));
    }
    return ATTNRT_OK;
}

attnrt_status_t attnrt_merge_states_unchecked(attnrt_context_t *ctx, const attnrt_merge_args_t *args,
                                              attnrt_stream_t *stream, const char *fn)
{
    if (!ctx->api->merge_states)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: the %s plugin has no merge_states", fn, ctx->ref->plugin->name);
    attnrt_status_t st = ctx->api->merge_states(ctx->device, args, stream ? stream->handle : NULL);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}

attnrt_status_t attnrt_merge_states(attnrt_context_t *ctx, const attnrt_merge_args_t *args, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_merge_states";
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    TRY(attnrt_check_stream_context(fn, stream, ctx, "ctx"));
    attnrt_op_query_t query;
    attnrt_merge_args_t a;
    attnrt_status_t st = attnrt_merge_args_in(fn, "args", args, &a);
    if (st == ATTNRT_OK) st = check_merge(fn, &a, &query);
    if (st == ATTNRT_OK) st = check_merge_spans(ctx, fn, &a);
    if (st != ATTNRT_OK) return st;
    st = attnrt_require_supported(fn, ctx, &query);
    if (st != ATTNRT_OK) return st;
    if (a.out->shape[0] == 0) return ATTNRT_OK;
    return attnrt_merge_states_unchecked(ctx, &a, stream, fn);
}
