/* Capacity plans: paged attention planned once for every batch within a capacity (attnrt_capacity_t),
 * then given each step's batch by attnrt_plan_update, so that a run captured in a graph replays any
 * later batch. The plan's args and every run's have the capacity shapes; attention.c runs them. */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "struct_in.h"
#include "tensor.h"

const plan_kind_t attnrt_kind_attention_capacity = {"attnrt_attention_plan_capacity", "attnrt_attention_run"};

/* One bound: 0 takes `limit` (what the tensors hold); a negative value, or one above `limit`, is refused. */
static attnrt_status_t resolve(const char *fn, const char *field, int64_t *value, int64_t limit, const char *limit_name)
{
    if (*value < 0)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: capacity->%s = %lld; must be >= 0 (0: %s = %lld)", fn,
                           field, (long long)*value, limit_name, (long long)limit);
    if (*value == 0) *value = limit;
    else if (*value > limit)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: capacity->%s = %lld > %s = %lld; the args' tensors must "
                           "hold the capacity", fn, field, (long long)*value, limit_name, (long long)limit);
    return ATTNRT_OK;
}

/* *out = the caller's capacity with every zero replaced by the bound the tensors give, each field checked
 * against the args' shapes (already checked by attnrt_attention_check_args: block_table, seq_lens and
 * query_start_loc agree on num_seqs, query and out on num_tokens). */
static attnrt_status_t resolve_capacity(const char *fn, const attnrt_capacity_t *in, const attention_shape_t *s,
                                        attnrt_capacity_t *out)
{
    attnrt_capacity_t c;
    TRY(attnrt_capacity_in(fn, "capacity", in, &c));
    int64_t seqs = c.max_seqs, blocks = c.max_blocks_per_seq;
    TRY(resolve(fn, "max_seqs", &seqs, s->B, "block_table.shape[0] (num_seqs)"));
    TRY(resolve(fn, "max_blocks_per_seq", &blocks, s->max_blocks, "block_table.shape[1]"));
    TRY(resolve(fn, "max_tokens", &c.max_tokens, s->T, "query.shape[0] (num_tokens)"));
    char keys[96];
    snprintf(keys, sizeof keys, "max_blocks_per_seq %lld x block_size %lld", (long long)blocks,
             (long long)s->block_size);
    TRY(resolve(fn, "max_seq_len", &c.max_seq_len, blocks * s->block_size, keys));
    c.max_seqs = (int32_t)seqs; /* both <= a tensor dim, so < 2^31 */
    c.max_blocks_per_seq = (int32_t)blocks;
    *out = c;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_attention_plan_capacity(attnrt_context_t *ctx, const attnrt_attention_args_t *args,
                                               const attnrt_capacity_t *capacity, attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_attention_plan_capacity";
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    attention_shape_t shape;
    attnrt_capacity_t cap;
    attnrt_attention_args_t a;
    TRY(attnrt_attention_args_in(fn, "args", args, &a));
    args = &a; /* the runtime's full-size copy from here on */
    TRY(attnrt_attention_check_args(fn, args, 0, &shape));
    TRY(resolve_capacity(fn, capacity, &shape, &cap));
    TRY(attnrt_attention_check_spans(ctx, fn, args));
    const attnrt_plugin_api_t *api = ctx->api;
    if (!api->attention_plan_capacity || !api->attention_plan_update || !api->attention_plan_destroy ||
        !api->attention_run) {
        const attnrt_plugin_t *pl = ctx->ref->plugin;
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: %s has no capacity plans (plugin ABI %u.%u): plan per batch "
                           "with attnrt_attention_plan", fn, ctx->ref->name, pl->abi_major, pl->abi_minor);
    }
    attnrt_op_query_t query;
    attnrt_attention_query(args, &shape, &query);
    TRY(attnrt_require_supported(fn, ctx, &query));

    attnrt_plan_t *p = NULL;
    TRY(attnrt_plan_new(fn, ctx, &attnrt_kind_attention_capacity, &p));
    plan_pass_t *pass = &p->pass[0];
    attnrt_status_t st = api->attention_plan_capacity(ctx->device, args, &cap, &pass->plugin_plan,
                                                      &pass->plugin_workspace);
    st = attnrt_plan_pass_result(fn, ctx, st, pass, api->attention_plan_destroy);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    attnrt_attention_signature(args, &p->signature);
    p->workspace_bytes = pass->plugin_workspace;
    p->capacity.bounds = cap;
    p->capacity.shape = shape;
    p->capacity.block_table = *args->block_table;
    p->capacity.block_table.data = NULL;
    p->capacity.causal = args->causal;
    atomic_store(&p->capacity.has_batch, 0);
    *plan = p;
    return ATTNRT_OK;
}

/* The batch as attnrt_attention_plan checks one, over the capacity's tensors, after the capacity's own
 * bounds (their messages name the request and the bound). */
static attnrt_status_t check_update_batch(const char *fn, const attnrt_plan_t *plan, const attnrt_batch_host_t *batch)
{
    const attnrt_capacity_t *c = &plan->capacity.bounds;
    const int32_t B = batch->num_seqs;
    if (B < 0) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->num_seqs = %d; must be >= 0", fn, B);
    if (B > c->max_seqs)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->num_seqs = %d > max_seqs = %d of the plan's "
                           "capacity", fn, B, c->max_seqs);
    if (!batch->query_start_loc || !batch->seq_lens)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->%s is NULL", fn,
                           batch->query_start_loc ? "seq_lens" : "query_start_loc");
    const int32_t T = batch->query_start_loc[B];
    if (T > c->max_tokens)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->query_start_loc[%d] = %d (the batch's tokens) > "
                           "max_tokens = %lld of the plan's capacity", fn, B, T, (long long)c->max_tokens);
    for (int32_t b = 0; b < B; b++)
        if (batch->seq_lens[b] > c->max_seq_len)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: batch->seq_lens[%d] = %d (request %d) > max_seq_len = "
                               "%lld of the plan's capacity", fn, b, batch->seq_lens[b], b, (long long)c->max_seq_len);
    /* max_seq_len <= max_blocks_per_seq x block_size, so every request also fits its blocks; the rest (every
     * index, monotone query_start_loc, seq_lens against query lengths, block ids) as a per-batch plan. */
    attention_shape_t s = plan->capacity.shape;
    s.B = B;
    s.T = T;
    return attnrt_attention_check_batch(fn, &s, batch, plan->capacity.causal, &plan->capacity.block_table,
                                        &attnrt_batch_names);
}

attnrt_status_t attnrt_plan_update(attnrt_plan_t *plan, const attnrt_batch_host_t *batch, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_plan_update";
    attnrt_clear_error();
    if (!plan) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan is NULL", fn);
    if (plan->kind != &attnrt_kind_attention_capacity)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: plan was made by %s; only attnrt_attention_plan_capacity "
                           "plans take updates", fn, plan->kind->planner);
    TRY(attnrt_check_stream_context(fn, stream, plan->ctx, "the plan's"));
    attnrt_batch_host_t full; /* the plugin gets the runtime's full-size copy */
    TRY(attnrt_batch_host_in(fn, "batch", batch, &full));
    TRY(check_update_batch(fn, plan, &full));
    attnrt_context_t *ctx = plan->ctx;
    attnrt_status_t st = ctx->api->attention_plan_update(ctx->device, plan->pass[0].plugin_plan, &full,
                                                         stream ? stream->handle : NULL);
    /* A plugin that failed may have half-written its batch: no run until an update succeeds. A refusal
     * above leaves the plan as it was. */
    atomic_store(&plan->capacity.has_batch, st == ATTNRT_OK);
    return st == ATTNRT_OK ? st : attnrt_context_fail(ctx, st, fn);
}

attnrt_status_t attnrt_capacity_check_run(const char *fn, attnrt_plan_t *plan)
{
    if (!atomic_load(&plan->capacity.has_batch))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: the capacity plan has no batch yet; give it one with "
                           "attnrt_plan_update before its first run", fn);
    return ATTNRT_OK;
}
