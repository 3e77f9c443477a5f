/* plugin_linear.c — see plugin_linear.h. */
#include "plugin_linear.h"

#include <math.h>
#include <string.h>

#include "plugin_check.h"
#include "plugin_error.h"
#include "plugin_query.h"

#define ANY PLUGIN_ANY_DIM

/* The rules' answer for the rebuilt query, and head dims >= 1. */
static attnrt_status_t check_supported(const char *who, const char *op, const plugin_op_rules_t *rules,
                                       const void *ctx, uint32_t opcode, const attnrt_tensor_t *query,
                                       const attnrt_tensor_t *state, int64_t H, int64_t Dk, int64_t Dv)
{
    attnrt_op_query_t q;
    plugin_linear_query(opcode, query, state, H, Dk, Dv, &q);
    char reason[PLUGIN_REASON_MAX];
    if (Dk < 1 || Dv < 1 || plugin_op_check(rules, ctx, &q, reason, sizeof reason) != ATTNRT_OK)
        return plugin_fail(ATTNRT_ERR_UNSUPPORTED, "%s %s: %s", who, op,
                           Dk < 1 || Dv < 1 ? "head dims must be >= 1" : reason);
    return ATTNRT_OK;
}

/* The views both ops share. */
static void view_common(plugin_linear_t *l, const attnrt_tensor_t *q, const attnrt_tensor_t *k,
                        const attnrt_tensor_t *v, const attnrt_tensor_t *out, const attnrt_tensor_t *state,
                        const attnrt_tensor_t *qsl, const attnrt_tensor_t *slot_idx, const attnrt_tensor_t *has_init)
{
    l->q = plugin_view_of(q);
    l->k = plugin_view_of(k);
    l->v = plugin_view_of(v);
    l->out = plugin_view_of(out);
    l->state = plugin_view_of(state);
    l->qsl = plugin_view_of(qsl);
    l->slot_idx = plugin_view_of(slot_idx);
    l->has_init = plugin_view_of(has_init);
    l->slots = state->shape[0];
}

attnrt_status_t plugin_lightning_decode(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                        const attnrt_lightning_args_t *a, int64_t B, int run, plugin_linear_t *l)
{
    static const char OP[] = "lightning";
    attnrt_status_t st;
    memset(l, 0, sizeof *l);
    if (!a->query || !a->key || !a->value || !a->out || !a->slopes || !a->state || !a->query_start_loc ||
        !a->state_indices)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "%s lightning: query, key, value, out, slopes, state, query_start_loc and state_indices "
                           "are required", who);
    if ((st = plugin_check_shape(a->query, who, OP, "query", 3, (const int64_t[]){ANY, ANY, ANY}, 1))) return st;
    const int64_t T = a->query->shape[0], H = a->query->shape[1], Dk = a->query->shape[2];
    if ((st = plugin_check_shape(a->value, who, OP, "value", 3, (const int64_t[]){T, H, ANY}, 1))) return st;
    const int64_t Dv = a->value->shape[2];
    if ((st = plugin_check_shape(a->key, who, OP, "key", 3, (const int64_t[]){T, H, Dk}, 1))) return st;
    if ((st = plugin_check_shape(a->out, who, OP, "out", 3, (const int64_t[]){T, H, Dv}, 1))) return st;
    if ((st = plugin_check_shape(a->slopes, who, OP, "slopes", 1, (const int64_t[]){H}, 0))) return st;
    if ((st = plugin_check_shape(a->state, who, OP, "state", 4, (const int64_t[]){ANY, H, Dk, Dv}, 1))) return st;
    if ((st = plugin_check_shape(a->query_start_loc, who, OP, "query_start_loc", 1, (const int64_t[]){B + 1}, 0)))
        return st;
    if ((st = plugin_check_shape(a->state_indices, who, OP, "state_indices", 1, (const int64_t[]){B}, 0))) return st;
    if (a->has_initial_state &&
        (st = plugin_check_shape(a->has_initial_state, who, OP, "has_initial_state", 1, (const int64_t[]){B}, 0)))
        return st;

    if ((st = plugin_check_act(a->query, who, OP, "query")) || (st = plugin_check_act(a->key, who, OP, "key")) ||
        (st = plugin_check_act(a->value, who, OP, "value")))
        return st;
    if ((st = plugin_check_out_kind(dc_kind_of(a->query->dtype), dc_kind_of(a->out->dtype), who, OP))) return st;
    if ((st = plugin_check_dtype(a->slopes, who, OP, "slopes", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")) ||
        (st = plugin_check_dtype(a->state, who, OP, "state", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")) ||
        (st = plugin_check_dtype(a->query_start_loc, who, OP, "query_start_loc", ATTNRT_DTYPE_CODE_INT, 32, "int32")) ||
        (st = plugin_check_dtype(a->state_indices, who, OP, "state_indices", ATTNRT_DTYPE_CODE_INT, 32, "int32")))
        return st;
    if (a->has_initial_state && (st = plugin_check_flag(a->has_initial_state, who, OP, "has_initial_state"))) return st;
    if ((st = check_supported(who, OP, rules, ctx, ATTNRT_OP_LIGHTNING, a->query, a->state, H, Dk, Dv))) return st;

    /* per-token tensors of a batch without tokens may have no data (they have no elements) */
    if (run && B > 0 &&
        ((T > 0 && (!a->query->data || !a->key->data || !a->value->data || !a->out->data)) || !a->slopes->data ||
         !a->state->data || !a->query_start_loc->data || !a->state_indices->data))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s lightning run: a required tensor has no data", who);

    *l = (plugin_linear_t){.T = T, .B = B, .H = H, .HV = H, .Dk = Dk, .Dv = Dv};
    view_common(l, a->query, a->key, a->value, a->out, a->state, a->query_start_loc, a->state_indices,
                a->has_initial_state);
    l->slopes = plugin_view_of(a->slopes);
    return ATTNRT_OK;
}

/* Gated delta's shapes; *num_spec from spec_state_indices (0 without). */
static attnrt_status_t gdn_shapes(const char *who, const char *OP, const attnrt_gated_delta_args_t *a, int64_t B,
                                  int64_t *num_spec)
{
    attnrt_status_t st;
    if ((st = plugin_check_shape(a->query, who, OP, "query", 3, (const int64_t[]){ANY, ANY, ANY}, 1))) return st;
    const int64_t T = a->query->shape[0], H = a->query->shape[1], Dk = a->query->shape[2];
    if ((st = plugin_check_shape(a->value, who, OP, "value", 3, (const int64_t[]){T, ANY, ANY}, 1))) return st;
    const int64_t HV = a->value->shape[1], Dv = a->value->shape[2];
    if (H < 1 || HV < 1 || HV % H != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s gated_delta: %lld value heads are not a multiple of %lld "
                           "key heads", who, (long long)HV, (long long)H);
    if ((st = plugin_check_shape(a->key, who, OP, "key", 3, (const int64_t[]){T, H, Dk}, 1))) return st;
    if ((st = plugin_check_shape(a->g, who, OP, "g", 2, (const int64_t[]){T, HV}, 0))) return st;
    if ((st = plugin_check_shape(a->beta, who, OP, "beta", 2, (const int64_t[]){T, HV}, 0))) return st;
    if ((st = plugin_check_shape(a->out, who, OP, "out", 3, (const int64_t[]){T, HV, Dv}, 1))) return st;
    if ((st = plugin_check_shape(a->state, who, OP, "state", 4, (const int64_t[]){ANY, HV, Dk, Dv}, 1))) return st;
    if ((st = plugin_check_shape(a->query_start_loc, who, OP, "query_start_loc", 1, (const int64_t[]){B + 1}, 0)))
        return st;
    if (a->state_indices &&
        (st = plugin_check_shape(a->state_indices, who, OP, "state_indices", 1, (const int64_t[]){B}, 0)))
        return st;
    if (a->has_initial_state &&
        (st = plugin_check_shape(a->has_initial_state, who, OP, "has_initial_state", 1, (const int64_t[]){B}, 0)))
        return st;
    *num_spec = 0;
    if (a->spec_state_indices) {
        if ((st = plugin_check_shape(a->spec_state_indices, who, OP, "spec_state_indices", 2,
                                     (const int64_t[]){B, ANY}, 0)))
            return st;
        *num_spec = a->spec_state_indices->shape[1] - 1;
        if (*num_spec < 0)
            return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s gated_delta: spec_state_indices has no column", who);
        if ((st = plugin_check_shape(a->num_accepted, who, OP, "num_accepted", 1, (const int64_t[]){B}, 0))) return st;
    }
    return ATTNRT_OK;
}

/* Gated delta's dtypes. */
static attnrt_status_t gdn_dtypes(const char *who, const char *OP, const attnrt_gated_delta_args_t *a)
{
    attnrt_status_t st;
    const int spec = a->spec_state_indices != NULL;
    if ((st = plugin_check_act(a->query, who, OP, "query")) || (st = plugin_check_act(a->key, who, OP, "key")) ||
        (st = plugin_check_act(a->value, who, OP, "value")) || (st = plugin_check_act(a->g, who, OP, "g")) ||
        (st = plugin_check_act(a->beta, who, OP, "beta")))
        return st;
    if ((st = plugin_check_out_kind(dc_kind_of(a->query->dtype), dc_kind_of(a->out->dtype), who, OP))) return st;
    if ((st = plugin_check_dtype(a->state, who, OP, "state", ATTNRT_DTYPE_CODE_FLOAT, 32, "f32")) ||
        (st = plugin_check_dtype(a->query_start_loc, who, OP, "query_start_loc", ATTNRT_DTYPE_CODE_INT, 32, "int32")))
        return st;
    if (a->state_indices &&
        (st = plugin_check_dtype(a->state_indices, who, OP, "state_indices", ATTNRT_DTYPE_CODE_INT, 32, "int32")))
        return st;
    if (spec &&
        ((st = plugin_check_dtype(a->spec_state_indices, who, OP, "spec_state_indices", ATTNRT_DTYPE_CODE_INT, 32,
                                  "int32")) ||
         (st = plugin_check_dtype(a->num_accepted, who, OP, "num_accepted", ATTNRT_DTYPE_CODE_INT, 32, "int32"))))
        return st;
    if (a->has_initial_state && (st = plugin_check_flag(a->has_initial_state, who, OP, "has_initial_state"))) return st;
    return ATTNRT_OK;
}

attnrt_status_t plugin_gated_delta_decode(const char *who, const plugin_op_rules_t *rules, const void *ctx,
                                          const attnrt_gated_delta_args_t *a, int64_t B, int run, plugin_linear_t *l)
{
    static const char OP[] = "gated_delta";
    attnrt_status_t st;
    memset(l, 0, sizeof *l);
    const int spec = a->spec_state_indices != NULL;
    if (!a->query || !a->key || !a->value || !a->g || !a->beta || !a->out || !a->state || !a->query_start_loc ||
        (!spec && !a->state_indices) || (spec && !a->num_accepted))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT,
                           "%s gated_delta: query, key, value, g, beta, out, state, query_start_loc and state_indices "
                           "(num_accepted with spec_state_indices) are required", who);
    int64_t num_spec = 0;
    if ((st = gdn_shapes(who, OP, a, B, &num_spec)) || (st = gdn_dtypes(who, OP, a))) return st;
    const int64_t T = a->query->shape[0], H = a->query->shape[1], Dk = a->query->shape[2];
    const int64_t HV = a->value->shape[1], Dv = a->value->shape[2];
    if ((st = check_supported(who, OP, rules, ctx, ATTNRT_OP_GATED_DELTA, a->query, a->state, H, Dk, Dv))) return st;
    if (!(a->scale >= 0.0f) || isinf(a->scale))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s gated_delta: scale %g is not a finite number >= 0", who,
                           (double)a->scale);

    /* per-token tensors of a batch without tokens may have no data (they have no elements) */
    if (run && B > 0 &&
        ((T > 0 && (!a->query->data || !a->key->data || !a->value->data || !a->g->data || !a->beta->data ||
                    !a->out->data)) ||
         !a->state->data || !a->query_start_loc->data || (!spec && !a->state_indices->data) ||
         (spec && (!a->spec_state_indices->data || !a->num_accepted->data))))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s gated_delta run: a required tensor has no data", who);

    *l = (plugin_linear_t){.T = T, .B = B, .H = H, .HV = HV, .Dk = Dk, .Dv = Dv, .num_spec = num_spec, .spec = spec};
    view_common(l, a->query, a->key, a->value, a->out, a->state, a->query_start_loc, a->state_indices,
                a->has_initial_state);
    l->g = plugin_view_of(a->g);
    l->beta = plugin_view_of(a->beta);
    l->spec_idx = plugin_view_of(a->spec_state_indices);
    l->accepted = plugin_view_of(a->num_accepted);
    l->scale = plugin_gated_delta_scale(a->scale, Dk);
    l->l2norm = a->use_l2norm != 0;
    return ATTNRT_OK;
}

float plugin_gated_delta_scale(float scale, int64_t Dk)
{
    return scale != 0.0f ? scale : (float)(1.0 / sqrt((double)Dk));
}
