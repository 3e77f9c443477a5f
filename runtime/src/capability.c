/* The capability query: which op / dtype / shape / feature combinations a device supports, and why not. */
#include <stdio.h>
#include <string.h>

#include "attention.h"
#include "struct_in.h"
#include "tensor.h"

const char *attnrt_op_name(uint32_t op) { return attnrt_op_string(op); }

/* Cascade is composed by the runtime (cascade.c): two attention passes with LSE, then a merge that
 * applies the sinks. So the answer is the plugin's answers for those parts. */
static attnrt_status_t cascade_supported(const attnrt_plugin_api_t *api, void *device, const attnrt_op_query_t *query,
                                         char *why, size_t cap)
{
    if (query->features & (ATTNRT_FEATURE_ALIBI | ATTNRT_FEATURE_SLIDING_WINDOW)) {
        attnrt_strlcpy(why, "cascade does not compose ALiBi or sliding windows (the prefix offset would have to reach "
                       "the kernel); use paged attention over the whole sequence", cap);
        return ATTNRT_ERR_UNSUPPORTED;
    }
    if (!api->op_supported) {
        attnrt_strlcpy(why, "plugin has no capability query", cap);
        return ATTNRT_ERR_UNSUPPORTED;
    }
    attnrt_op_query_t part = *query;
    part.struct_size = sizeof part;
    part.op = ATTNRT_OP_PAGED_ATTENTION;
    part.features = (query->features | ATTNRT_FEATURE_LSE) & ~(uint32_t)ATTNRT_FEATURE_SINKS;
    char inner[400] = "";
    attnrt_status_t st = api->op_supported(device, &part, inner, sizeof inner);
    if (st == ATTNRT_OK) {
        part.op = ATTNRT_OP_MERGE_STATES;
        part.features = query->features & (ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE);
        part.kv_dtype = query->q_dtype;
        st = api->op_supported(device, &part, inner, sizeof inner);
        if (st != ATTNRT_OK) snprintf(why, cap, "its merge_states part: %.400s", inner);
    } else {
        snprintf(why, cap, "its paged_attention part: %.400s", inner);
    }
    return st;
}

/* The capability answer of `device`; messages start with `fn`, the public function asked. */
static attnrt_status_t ask(const char *fn, const attnrt_plugin_api_t *api, void *device, const char *device_name,
                           const attnrt_op_query_t *query, char *reason, size_t reason_cap)
{
    if (reason && reason_cap) reason[0] = '\0';
    attnrt_op_query_t full;
    TRY(attnrt_op_query_in(fn, "query", query, &full));
    if (full.op == 0 || full.op >= ATTNRT_OP_COUNT_)
        return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: query->op = %u is not an attnrt_op_t", fn, full.op);
    char why[512] = "";
    attnrt_status_t status;
    if (full.op == ATTNRT_OP_CASCADE) {
        status = cascade_supported(api, device, &full, why, sizeof why);
    } else if (!api->op_supported) {
        status = ATTNRT_ERR_UNSUPPORTED;
        attnrt_strlcpy(why, "plugin has no capability query", sizeof why);
    } else {
        status = api->op_supported(device, &full, why, sizeof why);
        why[sizeof why - 1] = '\0';
    }
    if (status == ATTNRT_OK) return ATTNRT_OK;
    if (!why[0]) attnrt_strlcpy(why, "no reason given", sizeof why);
    if (reason && reason_cap) attnrt_strlcpy(reason, why, reason_cap);
    return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: %s: %s unsupported: %s", fn, device_name, attnrt_op_name(full.op),
                       why);
}

attnrt_status_t attnrt_op_supported(attnrt_context_t *ctx, const attnrt_op_query_t *query, char *reason,
                                    size_t reason_cap)
{
    attnrt_clear_error();
    if (!ctx) return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "attnrt_op_supported: ctx is NULL");
    return ask("attnrt_op_supported", ctx->api, ctx->device, ctx->ref->name, query, reason, reason_cap);
}

attnrt_status_t attnrt_device_op_supported(uint32_t device, const attnrt_op_query_t *query, char *reason,
                                           size_t reason_cap)
{
    static const char fn[] = "attnrt_device_op_supported";
    attnrt_context_t *ctx = NULL;
    const attnrt_device_ref_t *ref = NULL;
    attnrt_clear_error();
    attnrt_status_t status = attnrt_registry_enter(fn);
    if (status == ATTNRT_OK) status = attnrt_registry_device(fn, device, &ref);
    if (status == ATTNRT_OK) status = attnrt_context_open(fn, ref->name, &ctx); /* then the context pins it */
    attnrt_registry_leave();
    if (status != ATTNRT_OK) return status;
    status = ask(fn, ctx->api, ctx->device, ctx->ref->name, query, reason, reason_cap);
    char saved[1024];
    attnrt_strlcpy(saved, attnrt_last_error(), sizeof saved);
    attnrt_close(ctx);
    return status == ATTNRT_OK ? status : attnrt_fail(status, "%s", saved);
}

attnrt_status_t attnrt_require_supported(const char *fn, attnrt_context_t *ctx, const attnrt_op_query_t *query)
{
    char why[512];
    attnrt_status_t st = ask(fn, ctx->api, ctx->device, ctx->ref->name, query, why, sizeof why);
    if (st == ATTNRT_OK) return st;
    return attnrt_fail(ATTNRT_ERR_UNSUPPORTED, "%s: %s does not support this %s (q %s, kv %s, head_dim %u/%u, "
                       "block_size %u): %s", fn, ctx->ref->name, attnrt_op_name(query->op),
                       attnrt_dtype_name(query->q_dtype), attnrt_dtype_name(query->kv_dtype), query->head_dim_qk,
                       query->head_dim_v, query->block_size, why);
}
