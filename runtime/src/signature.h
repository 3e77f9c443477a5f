/* Plan signatures: what a run must match of its plan, for every kind of plan. A signature is the
 * layout (dtype, shape, strides; never data) of each tensor argument in a fixed order, plus the
 * scalar options; a schema per op names them for messages. Building and comparing one is a few
 * hundred bytes of copies on the stack: no allocation, no lock, fit for the dispatch path. */
#ifndef ATTNRT_SIGNATURE_H
#define ATTNRT_SIGNATURE_H

#include "internal.h"

#define PLAN_SIG_MAX_TENSORS 16
#define PLAN_SIG_MAX_SCALARS 8

typedef struct plan_signature plan_signature_t;

/* What an op's signature holds and how its parts are called. Static, one per op. */
typedef struct signature_schema {
    uint32_t           num_tensors, num_scalars;
    const char *const *tensor_names; /* num_tensors argument names: "query", "kv_cache", ...       */
    const char *const *scalar_names; /* num_scalars option names: "scale", "causal", ...           */
    /* (optional) The message when a scalar differs; NULL: "<name> = <got> differs from the plan's <planned>". */
    attnrt_status_t (*scalar_mismatch)(const char *fn, const plan_signature_t *planned, const plan_signature_t *now);
} signature_schema_t;

struct plan_signature {
    const signature_schema_t *schema;
    attnrt_tensor_t           tensors[PLAN_SIG_MAX_TENSORS]; /* data NULL; an absent tensor is all zero */
    double                    scalars[PLAN_SIG_MAX_SCALARS]; /* float and int32 options, exactly        */
};

/* Fills *sig from schema->num_tensors tensors (NULL = absent) and schema->num_scalars scalars. */
ATTNRT_HIDDEN void attnrt_signature_make(plan_signature_t *sig, const signature_schema_t *schema,
                                         const attnrt_tensor_t *const *tensors, const double *scalars);
/* ATTNRT_OK when `now` equals `planned`; else INVALID_ARGUMENT naming the first argument that differs. */
ATTNRT_HIDDEN attnrt_status_t attnrt_signature_check(const char *fn, const plan_signature_t *planned,
                                                     const plan_signature_t *now);

/* Compile-time check that an op's argument list and its schema's name table have the same length. */
#define SIG_COUNT(array) ((uint32_t)(sizeof(array) / sizeof((array)[0])))

#endif /* ATTNRT_SIGNATURE_H */
