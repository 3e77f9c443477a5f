/* plugin_args.h — the opening every op entry repeats, and the decoded kv_write and merge_states.
 *
 * An op entry first makes its own copy of each caller struct (plugin_struct.h: fields past the
 * caller's struct_size read 0) and refuses what is missing, with one message per op for every plugin:
 * "<who> <op> plan: args, batch and both outputs are required". `who` names the plugin or device in
 * messages ("cpu", "npu_sim:0 (rbln-atom)"); it and `op` are borrowed for the call.
 *
 * Ownership: the copies are the caller's locals; the tensor pointers inside them, and every view of a
 * decoded op, borrow the caller's tensors for the one call (the ABI lends tensors for a call). */
#ifndef ATTNRT_PLUGIN_ARGS_H
#define ATTNRT_PLUGIN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "plugin_caps.h"
#include "plugin_tensor.h"

/* What of the host batch a plan reads, for plugin_plan_open to require. */
enum plugin_batch_needs {
    PLUGIN_BATCH_AS_GIVEN = 0,    /* the plan checks the batch itself                                */
    PLUGIN_BATCH_QSL = 1,         /* num_seqs >= 0, query_start_loc when there are requests          */
    PLUGIN_BATCH_QSL_SEQ_LENS = 3 /* the same, and seq_lens                                          */
};

/* A plan entry's opening: every pointer given (plan_out and workspace_bytes are written only later,
 * by the plan), then *args (args_size bytes) and *batch the caller's structs, copied, and the batch
 * holding what `needs` (enum plugin_batch_needs) names. */
attnrt_status_t plugin_plan_open(const char *who, const char *op, const void *args_in, void *args, size_t args_size,
                                 const attnrt_batch_host_t *batch_in, attnrt_batch_host_t *batch, uint32_t needs,
                                 void *const *plan_out, const size_t *workspace_bytes);
#define PLUGIN_PLAN_OPEN(who, op, a, args_in, batch, batch_in, needs, plan_out, workspace_bytes)                  \
    plugin_plan_open((who), (op), (args_in), &(a), sizeof(a), (batch_in), &(batch), (needs), (plan_out), \
                     (workspace_bytes))

/* The sort key a plan's work items start with: costliest first, so the long ones start early; ties in
 * the order the items were made, so plans are deterministic. */
typedef struct plugin_cost_key {
    double cost;  /* an estimate: a double, as products of rows and keys may pass 2^63 */
    size_t order;
} plugin_cost_key_t;

/* qsort comparator of items whose first member is a plugin_cost_key_t. */
int plugin_by_cost_desc(const void *a, const void *b);

/* ---- paged attention --------------------------------------------------------------------------- */

/* A plan's check of its args against the plugin's `rules`: the query op_supported answers, rebuilt
 * with the features the args use (soft-cap, ALiBi, LSE, per-block fp8 scales), then out in the query's
 * dtype or f32 and one dtype for both caches. Messages start "<who> paged attention". */
attnrt_status_t plugin_attention_supported(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                           const attnrt_attention_args_t *a);

/* ---- kv_write ---------------------------------------------------------------------------------- */

/* *a = the caller's args, with key, value, slot_mapping and both caches present. */
attnrt_status_t plugin_kv_write_open(const char *who, const attnrt_kv_write_args_t *in, attnrt_kv_write_args_t *a);

/* One side (K or V) of a write: the new rows and the cache they go to. */
typedef struct plugin_kv_side {
    plugin_view_t src;         /* [T, Hkv, D] f32 / f16 / bf16                                   */
    plugin_view_t cache;       /* [num_blocks, block_size, Hkv, D]: NHD or HND is only its strides */
    const float  *scale;       /* fp8 caches: [1] or [num_blocks, Hkv]; NULL otherwise (no scaling) */
    int64_t       scale_st[2]; /* 0, 0 for a per-tensor scale                                    */
    int64_t       dim;         /* D                                                              */
} plugin_kv_side_t;

typedef struct plugin_kv_write {
    plugin_kv_side_t side[2];  /* K, V                                                           */
    const int64_t   *slots;    /* [T]: block * block_size + row; outside the cache: skipped      */
    int64_t          slot_st;
    int64_t          num_tokens, num_heads, num_blocks, block_size;
} plugin_kv_write_t;

/* Decodes opened args (plugin_kv_write_open); UNSUPPORTED naming the side whose rows or cache have a
 * dtype the host conversions lack ("<who> kv_write: key or its cache has a dtype this plugin cannot convert"). */
attnrt_status_t plugin_kv_write_decode(const char *who, const attnrt_kv_write_args_t *a, plugin_kv_write_t *kw);
/* Host memory: writes token t's rows of every head into their cache slot, converting (and quantising:
 * stored = sat(x / scale)) on the way; a slot outside the cache is skipped. Returns 1 when written. */
int plugin_kv_write_token(const plugin_kv_write_t *kw, int64_t t);

/* ---- merge_states ------------------------------------------------------------------------------ */

/* *a = the caller's args: >= 1 state, each with its LSE, states and out f32 / f16 / bf16. */
attnrt_status_t plugin_merge_open(const char *who, const attnrt_merge_args_t *in, attnrt_merge_args_t *a);

#endif /* ATTNRT_PLUGIN_ARGS_H */
