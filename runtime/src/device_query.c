/* Questions to a context's device beyond the capability matrix (ABI 1.2): which kernel and partitioning
 * it would pick for a model configuration, and what the last op it ran cost. Both entries are optional
 * in the vtable: selection falls back to the plain paged kernel, counters are then unsupported. */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "struct_in.h"
#include "tensor.h"

#define DEFAULT_BLOCK_SIZE 16

/* The config as this runtime knows it (struct_in.h: the caller's fields up to its struct_size, zero
 * beyond), checked. */
static attnrt_status_t read_config(const char *fn, const attnrt_attention_config_t *config,
                                   attnrt_attention_config_t *full)
{
    TRY(attnrt_attention_config_in(fn, "config", config, full));
    const attnrt_attention_config_t *c = full;
    if (c->front_end > ATTNRT_FRONT_END_COMPILED)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->front_end = %u is not an attnrt_front_end (0..%d)",
                           fn, c->front_end, ATTNRT_FRONT_END_COMPILED);
    if (c->layer_kind > ATTNRT_LAYER_MLA_SPARSE)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->layer_kind = %u is not an attnrt_layer_kind "
                           "(0..%d)", fn, c->layer_kind, ATTNRT_LAYER_MLA_SPARSE);
    if (c->model_kind > ATTNRT_MODEL_ENCODER_DECODER)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->model_kind = %u is not an attnrt_model_kind "
                           "(0..%d)", fn, c->model_kind, ATTNRT_MODEL_ENCODER_DECODER);
    if (!memchr(c->attn_impl, '\0', sizeof c->attn_impl))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->attn_impl is not NUL-terminated within its %zu "
                           "bytes", fn, sizeof c->attn_impl);
    const struct {
        const char *name;
        int64_t     value;
    } sizes[] = {{"max_model_len", c->max_model_len}, {"block_size", c->block_size},
                 {"partition_len", c->partition_len}, {"prefill_chunk", c->prefill_chunk},
                 {"sliding_window", c->sliding_window}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value < 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->%s = %lld; must be >= 0 (0: default)", fn,
                               sizes[i].name, (long long)sizes[i].value);
    if (c->has_sinks > 1)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->has_sinks = %u; must be 0 or 1", fn, c->has_sinks);
    int no_kv_dtype = c->kv_dtype.code == 0 && c->kv_dtype.bits == 0 && c->kv_dtype.lanes == 0;
    if (!no_kv_dtype && !(attnrt_dtype_bit(c->kv_dtype) & DT_KV))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: config->kv_dtype = {code %u, bits %u, lanes %u} is not a "
                           "cache dtype ({0, 0, 0} means the activation dtype)", fn, c->kv_dtype.code,
                           c->kv_dtype.bits, c->kv_dtype.lanes);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_select_attention(attnrt_context_t *ctx, const attnrt_attention_config_t *config,
                                        attnrt_attention_selection_t *selection)
{
    static const char fn[] = "attnrt_select_attention";
    attnrt_clear_error();
    if (!ctx || !selection)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, !ctx ? "ctx" : "selection");
    size_t caller_size = selection->struct_size;
    if (caller_size < ATTNRT_STRUCT_SIZE(attnrt_attention_selection_t, kernel))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: selection->struct_size = %zu; set it to "
                           "sizeof(attnrt_attention_selection_t)", fn, caller_size);
    attnrt_attention_config_t cfg;
    TRY(read_config(fn, config, &cfg));

    /* The plugin fills a full-size struct the runtime owns; the caller gets what its struct_size covers. */
    attnrt_attention_selection_t full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    if (ctx->api->select_attention) {
        attnrt_status_t st = ctx->api->select_attention(ctx->device, &cfg, &full);
        if (st != ATTNRT_OK) {
            char what[128];
            snprintf(what, sizeof what, "%s(%s)", fn, ctx->ref->name);
            return attnrt_context_fail(ctx, st, what);
        }
        full.kernel[sizeof full.kernel - 1] = full.notes[sizeof full.notes - 1] = '\0';
    } else {
        attnrt_strlcpy(full.kernel, "paged", sizeof full.kernel);
        full.block_size = cfg.block_size ? cfg.block_size : DEFAULT_BLOCK_SIZE;
        full.partition_len = 0;
        full.num_partitions = 1;
        full.prefill_chunk = cfg.prefill_chunk;
        attnrt_strlcpy(full.notes, "no kernel-selection rules on this device; any block size works",
                       sizeof full.notes);
    }
    full.struct_size = caller_size;
    memcpy(selection, &full, caller_size < sizeof full ? caller_size : sizeof full);
    return ATTNRT_OK;
}

attnrt_status_t attnrt_last_op_stats(attnrt_context_t *ctx, attnrt_op_stats_t *stats)
{
    static const char fn[] = "attnrt_last_op_stats";
    attnrt_clear_error();
    if (!ctx || !stats) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, ctx ? "stats" : "ctx");
    size_t caller_size = stats->struct_size;
    if (caller_size < ATTNRT_STRUCT_SIZE(attnrt_op_stats_t, op))
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: stats->struct_size = %zu; set it to "
                           "sizeof(attnrt_op_stats_t)", fn, caller_size);
    const attnrt_plugin_t *p = ctx->ref->plugin;
    if (!ctx->api->last_op_stats)
        return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: the %s plugin keeps no op counters (its ABI is %u.%u)", fn,
                           p->name, p->abi_major, p->abi_minor);
    attnrt_op_stats_t full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    attnrt_status_t st = ctx->api->last_op_stats(ctx->device, &full);
    if (st != ATTNRT_OK) return attnrt_context_fail(ctx, st, fn);
    full.struct_size = caller_size;
    memcpy(stats, &full, caller_size < sizeof full ? caller_size : sizeof full);
    return ATTNRT_OK;
}
