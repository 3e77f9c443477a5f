/* Cascade (shared-prefix) attention, composed by the runtime from plugin ops:
 *   prefix pass: every query, no mask, over its request's prefix  -> (o_p, lse_p)
 *   suffix pass: the user's attention over each request's own tokens -> (o_s, lse_s)
 *   merge(o_p, o_s) into the user's out / lse, sinks applied once, after the merge.
 * The partial states live in the caller's workspace as f32. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "struct_in.h"
#include "tensor.h"

static const plan_kind_t kind_cascade = {"attnrt_cascade_plan", "attnrt_cascade_run"};

#define WS_ALIGN 256

static size_t align_up(size_t n) { return (n + WS_ALIGN - 1) / WS_ALIGN * WS_ALIGN; }

/* The two passes' args, built from the user's. Temporaries point into `ws` (NULL at plan time). */
typedef struct cascade_passes {
    attnrt_attention_args_t prefix, suffix;
    attnrt_tensor_t         o[2], lse[2];
} cascade_passes_t;

static void build_passes(const attnrt_cascade_args_t *a, const attention_shape_t *s, const attnrt_plan_t *plan,
                         char *ws, cascade_passes_t *p)
{
    const int64_t o_shape[3] = {s->T, s->Hq, s->Dv}, lse_shape[2] = {s->T, s->Hq};
    for (int i = 0; i < 2; i++) {
        attnrt_tensor_init(&p->o[i], ws ? ws + plan->cascade.off_o[i] : NULL, ATTNRT_F32, 3, o_shape);
        attnrt_tensor_init(&p->lse[i], ws ? ws + plan->cascade.off_lse[i] : NULL, ATTNRT_F32, 2, lse_shape);
    }
    p->prefix = *a->suffix;
    p->prefix.struct_size = sizeof p->prefix;
    p->prefix.block_table = a->prefix_block_table;
    p->prefix.seq_lens = a->prefix_seq_lens;
    p->prefix.causal = 0;
    p->prefix.out = &p->o[0];
    p->prefix.lse = &p->lse[0];
    p->prefix.sinks = NULL;
    p->suffix = *a->suffix;
    p->suffix.struct_size = sizeof p->suffix;
    p->suffix.out = &p->o[1];
    p->suffix.lse = &p->lse[1];
    p->suffix.sinks = NULL;
}

/* The runtime's copies of the caller's args: in->args.suffix points at in->suffix. */
typedef struct cascade_in {
    attnrt_cascade_args_t   args;
    attnrt_attention_args_t suffix;
} cascade_in_t;

/* Reads the caller's args into *in (struct_in.h), then checks them; `a` below is always &in->args. */
static attnrt_status_t check_cascade(const char *fn, const attnrt_cascade_args_t *args, int need_data,
                                     cascade_in_t *in, attention_shape_t *s)
{
    TRY(attnrt_cascade_args_in(fn, "args", args, &in->args));
    TRY(attnrt_attention_args_in(fn, "args->suffix", in->args.suffix, &in->suffix));
    in->args.suffix = &in->suffix;
    const attnrt_cascade_args_t *a = &in->args;
    attnrt_status_t st = attnrt_attention_check_args(fn, a->suffix, need_data, s);
    if (st != ATTNRT_OK) return st;
    if (a->suffix->alibi_slopes || a->suffix->sliding_window_left || a->suffix->sliding_window_right)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: cascade does not compose ALiBi or sliding windows (the prefix "
                           "offset would have to reach the kernel); use paged attention over the whole sequence", fn);
    st = attnrt_check_tensor(fn, "prefix_block_table", a->prefix_block_table, 0, 2, DT_I32, 0, need_data);
    if (st == ATTNRT_OK) st = attnrt_check_tensor(fn, "prefix_seq_lens", a->prefix_seq_lens, 0, 1, DT_I32, 0, need_data);
    if (st == ATTNRT_OK)
        st = attnrt_check_dim(fn, "prefix_block_table", a->prefix_block_table, 0, s->B, "num_seqs = seq_lens.shape[0]");
    if (st == ATTNRT_OK)
        st = attnrt_check_dim(fn, "prefix_seq_lens", a->prefix_seq_lens, 0, s->B, "num_seqs = seq_lens.shape[0]");
    return st;
}

/* Every tensor with data inside its attnrt_mem_alloc allocation: the suffix's, then the prefix's. */
static attnrt_status_t check_cascade_spans(attnrt_context_t *ctx, const char *fn, const attnrt_cascade_args_t *a)
{
    static const char *const names[] = {"prefix_block_table", "prefix_seq_lens"};
    const attnrt_tensor_t *tensors[] = {a->prefix_block_table, a->prefix_seq_lens};
    TRY(attnrt_attention_check_spans(ctx, fn, a->suffix));
    return attnrt_check_spans(ctx, fn, tensors, names, 2);
}

attnrt_status_t attnrt_cascade_plan(attnrt_context_t *ctx, const attnrt_cascade_args_t *args,
                                    const attnrt_cascade_host_t *host, attnrt_plan_t **plan)
{
    static const char fn[] = "attnrt_cascade_plan";
    attnrt_clear_error();
    if (!ctx || !plan)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "plan");
    attnrt_cascade_host_t h;
    attnrt_batch_host_t prefix_batch, suffix_batch;
    TRY(attnrt_cascade_host_in(fn, "host", host, &h));
    TRY(attnrt_batch_host_in(fn, "host->prefix", h.prefix, &prefix_batch));
    TRY(attnrt_batch_host_in(fn, "host->suffix", h.suffix, &suffix_batch));
    cascade_in_t in;
    const attnrt_cascade_args_t *a = &in.args;
    attention_shape_t s, ps;
    attnrt_status_t st = check_cascade(fn, args, 0, &in, &s);
    if (st == ATTNRT_OK) {
        static const batch_names_t suffix_names = {"host->suffix", "seq_lens", "block_table"};
        st = attnrt_attention_check_batch(fn, &s, &suffix_batch, a->suffix->causal, a->suffix->block_table,
                                          &suffix_names);
    }
    if (st == ATTNRT_OK) st = check_cascade_spans(ctx, fn, a);
    if (st != ATTNRT_OK) return st;
    /* Two f32 partial states [T, Hq, Dv] and their LSEs; shapes are < 2^31 each, the product may not be. */
    size_t o_elems, lse_elems, o_bytes, lse_bytes;
    if (__builtin_mul_overflow((size_t)s.T, (size_t)s.Hq, &lse_elems) ||
        __builtin_mul_overflow(lse_elems, (size_t)s.Dv, &o_elems) ||
        __builtin_mul_overflow(o_elems, sizeof(float), &o_bytes) || o_bytes > SIZE_MAX / 8)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: num_tokens %lld x num_q_heads %lld x head_dim_v %lld "
                           "floats overflow the workspace size", fn, (long long)s.T, (long long)s.Hq, (long long)s.Dv);
    o_bytes = align_up(o_bytes);
    lse_bytes = align_up(lse_elems * sizeof(float));

    attnrt_plan_t *p = NULL;
    st = attnrt_plan_new(fn, ctx, &kind_cascade, &p);
    if (st != ATTNRT_OK) return st;
    p->cascade.off_o[0] = 0;
    p->cascade.off_lse[0] = o_bytes;
    p->cascade.off_o[1] = o_bytes + lse_bytes;
    p->cascade.off_lse[1] = 2 * o_bytes + lse_bytes;
    p->cascade.off_plugin = 2 * (o_bytes + lse_bytes);

    cascade_passes_t passes;
    build_passes(a, &s, p, NULL, &passes);
    /* The prefix pass reads the suffix's query_start_loc with the prefix's lengths and blocks. */
    prefix_batch.query_start_loc = suffix_batch.query_start_loc;
    st = attnrt_attention_check_args(fn, &passes.prefix, 0, &ps);
    if (st == ATTNRT_OK)
        st = attnrt_attention_check_batch(fn, &ps, &prefix_batch, 0, a->prefix_block_table,
                                          &attnrt_prefix_batch_names);
    attnrt_op_query_t query;
    attnrt_attention_query(a->suffix, &s, &query);
    query.op = ATTNRT_OP_CASCADE;
    if (st == ATTNRT_OK) st = attnrt_require_supported(fn, ctx, &query);
    if (st == ATTNRT_OK) st = attnrt_plan_attention_pass(fn, ctx, &passes.prefix, &prefix_batch, &p->pass[0]);
    if (st == ATTNRT_OK) st = attnrt_plan_attention_pass(fn, ctx, &passes.suffix, &suffix_batch, &p->pass[1]);
    if (st != ATTNRT_OK) {
        attnrt_plan_free(p); /* keeps the failure's message */
        return st;
    }
    size_t plugin_ws = p->pass[0].plugin_workspace > p->pass[1].plugin_workspace ? p->pass[0].plugin_workspace
                                                                                  : p->pass[1].plugin_workspace;
    p->workspace_bytes = p->cascade.off_plugin + plugin_ws;
    attnrt_attention_signature(a->suffix, &p->signature);
    /* Keep the prefix tensors' layouts to check runs against. */
    p->cascade.prefix_block_table = *a->prefix_block_table;
    p->cascade.prefix_seq_lens = *a->prefix_seq_lens;
    p->cascade.prefix_block_table.data = p->cascade.prefix_seq_lens.data = NULL;
    *plan = p;
    return ATTNRT_OK;
}

attnrt_status_t attnrt_cascade_run(attnrt_plan_t *plan, const attnrt_cascade_args_t *args, void *workspace,
                                   size_t workspace_bytes, attnrt_stream_t *stream)
{
    static const char fn[] = "attnrt_cascade_run";
    attnrt_clear_error();
    TRY(attnrt_plan_check_kind(fn, plan, &kind_cascade, stream));
    attnrt_context_t *ctx = plan->ctx;
    attention_shape_t s;
    plan_signature_t now;
    cascade_in_t in;
    const attnrt_cascade_args_t *a = &in.args;
    TRY(check_cascade(fn, args, 1, &in, &s));
    attnrt_attention_signature(a->suffix, &now);
    /* The suffix args first, then the prefix tensors, as before the signature was generic. */
    attnrt_status_t st = attnrt_signature_check(fn, &plan->signature, &now);
    if (st == ATTNRT_OK && (!attnrt_tensor_same_layout(a->prefix_block_table, &plan->cascade.prefix_block_table) ||
                            !attnrt_tensor_same_layout(a->prefix_seq_lens, &plan->cascade.prefix_seq_lens)))
        st = attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: prefix_block_table or prefix_seq_lens differ from the plan "
                         "(shape, dtype or strides); make a new plan", fn);
    if (st == ATTNRT_OK) st = attnrt_plan_check_workspace(fn, plan, workspace, workspace_bytes);
    if (st == ATTNRT_OK) st = check_cascade_spans(ctx, fn, a);
    if (st != ATTNRT_OK) return st;

    cascade_passes_t passes;
    build_passes(a, &s, plan, workspace, &passes);
    char *plugin_ws = (char *)workspace + plan->cascade.off_plugin;
    size_t plugin_bytes = workspace_bytes - plan->cascade.off_plugin;
    void *sh = stream ? stream->handle : NULL;
    st = ctx->api->attention_run(ctx->device, plan->pass[0].plugin_plan, &passes.prefix, plugin_ws, plugin_bytes, sh);
    if (st == ATTNRT_OK)
        st = ctx->api->attention_run(ctx->device, plan->pass[1].plugin_plan, &passes.suffix, plugin_ws, plugin_bytes, sh);
    if (st != ATTNRT_OK) return attnrt_context_fail(ctx, st, fn);
    const attnrt_tensor_t *states[2] = {&passes.o[0], &passes.o[1]}, *lses[2] = {&passes.lse[0], &passes.lse[1]};
    attnrt_merge_args_t merge = {
        .struct_size = sizeof merge,
        .num_states = 2,
        .states = states,
        .lses = lses,
        .out = a->suffix->out,
        .out_lse = a->suffix->lse,
        .sinks = a->suffix->sinks,
    };
    return attnrt_merge_states_unchecked(ctx, &merge, stream, fn);
}
