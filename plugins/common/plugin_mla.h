/* plugin_mla.h — an MLA call decoded: every tensor checked against the others, then the shapes and
 * views a kernel walks (dense or sparse, over a one-head latent cache [num_blocks, block_size, 1,
 * kv_dim] whose value is the first v_dim columns of a row). The plan and the run of a plugin decode
 * alike, so a run indexes only by shapes it has verified.
 *
 * Ownership: the views borrow the call's tensors (data NULL at plan time is fine); the decoded struct
 * is the caller's local and owns nothing. */
#ifndef ATTNRT_PLUGIN_MLA_H
#define ATTNRT_PLUGIN_MLA_H

#include <stdint.h>

#include "attnrt_plugin.h"
#include "plugin_caps.h"
#include "plugin_tensor.h"

typedef struct plugin_mla {
    int64_t T, B, Hq, D, Dv;     /* tokens, requests, query heads, kv_dim, v_dim                       */
    int64_t num_blocks, block_size, bt_cols, topk;
    int     sparse, causal;
    float   scale;
    plugin_view_t q, out, kv;    /* [T, Hq, D], [T, Hq, Dv], [num_blocks, block_size, 1, D]           */
    plugin_view_t lse, sinks;    /* optional: [T, Hq] f32, [Hq] f32                                  */
    plugin_view_t block_table;   /* [B, bt_cols] int32                                               */
    plugin_view_t qsl, seq_lens; /* [B + 1], [B] int32                                               */
    plugin_view_t indices;       /* sparse: [T, topk] int32, -1 unused                               */
    const float  *kv_scale;      /* fp8 latent with a scale: [1] or [num_blocks, 1]; NULL: 1          */
    int64_t       kv_scale_st;   /* 0 for [1]                                                        */
} plugin_mla_t;

/* Checks `a` (the plugin's copy) for B requests (the host batch's at plan, the plan's at run) and
 * fills *m. The metadata tensors are required at run only (`run`), as their data is what the kernel
 * walks; at run every tensor read must also carry data. What the plugin's `rules` refuse for the
 * rebuilt query (plugin_query.h) is UNSUPPORTED. Messages start "<who> mla". */
attnrt_status_t plugin_mla_decode(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                  const attnrt_mla_args_t *a, int64_t B, int run, plugin_mla_t *m);

#endif /* ATTNRT_PLUGIN_MLA_H */
