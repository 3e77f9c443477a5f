/* Plan signatures: the layouts and options a run must share with its plan (see signature.h). */
#include <string.h>

#include "signature.h"

static void layout_of(const attnrt_tensor_t *t, attnrt_tensor_t *out)
{
    memset(out, 0, sizeof *out);
    if (!t) return;
    out->struct_size = sizeof *out;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    for (int32_t d = 0; d < t->ndim && d < ATTNRT_MAX_DIMS; d++) {
        out->shape[d] = t->shape[d];
        out->strides[d] = t->strides[d];
    }
}

void attnrt_signature_make(plan_signature_t *sig, const signature_schema_t *schema,
                           const attnrt_tensor_t *const *tensors, const double *scalars)
{
    memset(sig, 0, sizeof *sig);
    sig->schema = schema;
    for (uint32_t i = 0; i < schema->num_tensors && i < PLAN_SIG_MAX_TENSORS; i++) layout_of(tensors[i], &sig->tensors[i]);
    for (uint32_t i = 0; i < schema->num_scalars && i < PLAN_SIG_MAX_SCALARS; i++) sig->scalars[i] = scalars[i];
}

attnrt_status_t attnrt_signature_check(const char *fn, const plan_signature_t *planned, const plan_signature_t *now)
{
    const signature_schema_t *schema = planned->schema;
    if (now->schema != schema) /* callers check the plan's kind first; this is a runtime bug */
        return attnrt_fail(ATTNRT_ERR_INTERNAL, "%s: the run's signature is of another op than the plan's", fn);
    for (uint32_t i = 0; i < schema->num_tensors; i++)
        if (memcmp(&now->tensors[i], &planned->tensors[i], sizeof now->tensors[i]) != 0)
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s differs from the plan (%s, shape, dtype or "
                               "strides); make a new plan for a new batch shape", fn, schema->tensor_names[i],
                               (planned->tensors[i].ndim == 0) != (now->tensors[i].ndim == 0) ? "given or absent"
                                                                                              : "layout");
    for (uint32_t i = 0; i < schema->num_scalars; i++)
        if (now->scalars[i] != planned->scalars[i]) {
            if (schema->scalar_mismatch) return schema->scalar_mismatch(fn, planned, now);
            return attnrt_fail(ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s = %g differs from the plan's %g; make a new plan "
                               "for new options", fn, schema->scalar_names[i], now->scalars[i], planned->scalars[i]);
        }
    return ATTNRT_OK;
}
