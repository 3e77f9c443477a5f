/* plugin_linear.h — lightning and gated-delta calls decoded: every tensor checked against the others,
 * then the shapes and views of the one job both ops are (per request and state head: load the
 * head's [Dk, Dv] state slot, fold the request's tokens in, store it back). Plan and run decode alike.
 *
 * Ownership: the views borrow the call's tensors (per-token data may be NULL for a batch without
 * tokens, any data at plan time); the decoded struct is the caller's local and owns nothing. */
#ifndef ATTNRT_PLUGIN_LINEAR_H
#define ATTNRT_PLUGIN_LINEAR_H

#include <stdint.h>

#include "attnrt_plugin.h"
#include "plugin_caps.h"
#include "plugin_tensor.h"

typedef struct plugin_linear {
    int64_t T, B, H, HV, Dk, Dv;  /* H key heads, HV value (state) heads: lightning HV = H              */
    int64_t slots;                /* state pool slots                                                  */
    int64_t num_spec;             /* gated delta with spec_state_indices: draft tokens; else 0         */
    int     spec;
    plugin_view_t q, k, v, out;   /* [T, H, Dk], [T, H, Dk], [T, HV, Dv], [T, HV, Dv]                  */
    plugin_view_t state;          /* [slots, HV, Dk, Dv] f32, read and written                         */
    plugin_view_t qsl;            /* [B + 1] int32                                                     */
    plugin_view_t slot_idx;       /* [B] int32, -1 padding (absent with spec)                           */
    plugin_view_t has_init;       /* optional [B] flags; absent: every request has a state            */
    plugin_view_t slopes;         /* lightning: [H] f32                                                */
    plugin_view_t g, beta;        /* gated delta: [T, HV], f32 or the activation format                */
    plugin_view_t spec_idx;       /* gated delta with spec: [B, num_spec + 1] int32                    */
    plugin_view_t accepted;       /* gated delta with spec: [B] int32                                  */
    float scale;                  /* gated delta: the query's scale (0 given: Dk^-1/2)                 */
    int   l2norm;                 /* gated delta: L2-normalise q and k first                           */
} plugin_linear_t;

/* Check `a` (the plugin's copy) for B requests (the host batch's at plan, the plan's at run) and fill
 * *l; at run (`run`) every tensor a kernel reads must carry data. What the plugin's `rules` refuse for
 * the rebuilt query (plugin_query.h) is UNSUPPORTED. Messages start "<who> lightning" / "<who> gated_delta". */
attnrt_status_t plugin_lightning_decode(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                        const attnrt_lightning_args_t *a, int64_t B, int run, plugin_linear_t *l);
attnrt_status_t plugin_gated_delta_decode(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                          const attnrt_gated_delta_args_t *a, int64_t B, int run, plugin_linear_t *l);

/* The query scale a gated-delta call asks for: `scale`, or Dk^-1/2 for 0. */
float plugin_gated_delta_scale(float scale, int64_t Dk);

#endif /* ATTNRT_PLUGIN_LINEAR_H */
