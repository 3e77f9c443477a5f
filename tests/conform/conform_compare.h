/* conform_compare.h - judging an op's output against the float64 reference.
 *
 * The metric is docs/semantics.md's: relative L2 error ||out - ref|| / ||ref|| over the whole output. On top
 * of it, so that one wrong row cannot hide in a large batch, every row (one token and head) must be
 * within CF_ROW_FACTOR times the tolerance of its reference row; a row with no kept key must be
 * exactly 0; any NaN or inf fails. LSE is compared element by element.
 */
#ifndef ATTNRT_CONFORM_COMPARE_H
#define ATTNRT_CONFORM_COMPARE_H

#include <stddef.h>

#include "conform_case.h"

#define CF_ROW_FACTOR 10.0

/* Marks the result failed and appends the formatted reason to its message (first reason first). */
void cf_result_fail(cf_result_t *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Marks the result unsupported with the reason (never downgrades a failure). */
void cf_result_unsupported(cf_result_t *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* out, ref: [tokens, heads, dim] dense doubles. ref_lse [tokens, heads] tells empty rows (-inf); it
 * may be NULL when no row can be empty. `tiny`: the smallest normal value of the output dtype; norms
 * below what it allows are not asked for. Sets res->error (the relative L2 error) and fails the
 * result with the first offending index when a check does not hold. Returns 1 when it passed. */
int cf_compare_out(const char *what, const double *out, const double *ref, const double *ref_lse, size_t tokens,
                   size_t heads, size_t dim, double tol, double tiny, cf_result_t *res);
/* lse, ref: [tokens, heads]. -inf must match exactly; otherwise |lse - ref| <= tol * (1 + |ref|).
 * Sets res->lse_error. Returns 1 when it passed. */
int cf_compare_lse(const char *what, const double *lse, const double *ref, size_t tokens, size_t heads, double tol,
                   cf_result_t *res);

/* --self-test-corrupt: moves the element of out where |ref| is largest by more than the whole
 * reference's norm, so any sound checker must fail the case. Returns 0 (nothing done) when n == 0. */
int cf_corrupt_output(double *out, const double *ref, size_t n);

#endif
