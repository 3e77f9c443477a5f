/* conform_compare.c - output and LSE comparison against the reference (see conform_compare.h). */
#include "conform_compare.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void append(cf_result_t *res, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void append(cf_result_t *res, const char *fmt, va_list ap)
{
    size_t used = strlen(res->message);
    if (used + 3 >= sizeof res->message) return;
    if (used) {
        memcpy(res->message + used, "; ", 3);
        used += 2;
    }
    vsnprintf(res->message + used, sizeof res->message - used, fmt, ap);
}

void cf_result_fail(cf_result_t *res, const char *fmt, ...)
{
    if (res->status == CF_UNSUPPORTED) res->message[0] = '\0'; /* a failure outranks "unsupported" */
    res->status = CF_FAIL;
    va_list ap;
    va_start(ap, fmt);
    append(res, fmt, ap);
    va_end(ap);
}

void cf_result_unsupported(cf_result_t *res, const char *fmt, ...)
{
    if (res->status == CF_FAIL) return;
    res->status = CF_UNSUPPORTED;
    res->message[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    append(res, fmt, ap);
    va_end(ap);
}

/* Squared norms of row r's difference and reference. */
static void row_norms(const double *out, const double *ref, size_t r, size_t dim, double *d2, double *g2)
{
    *d2 = *g2 = 0.0;
    for (size_t d = 0; d < dim; d++) {
        const double o = out[r * dim + d], g = ref[r * dim + d];
        *d2 += (o - g) * (o - g);
        *g2 += g * g;
    }
}

int cf_compare_out(const char *what, const double *out, const double *ref, const double *ref_lse, size_t tokens,
                   size_t heads, size_t dim, double tol, double tiny, cf_result_t *res)
{
    const size_t rows = tokens * heads;
    double diff2 = 0.0, ref2 = 0.0, out2 = 0.0;

    for (size_t r = 0; r < rows; r++) {
        const double *o = out + r * dim;
        const int empty = ref_lse && ref_lse[r] == -INFINITY;
        for (size_t d = 0; d < dim; d++) {
            if (!isfinite(o[d])) { /* NaN is also what an element never written still holds (the poison) */
                res->error = NAN;
                cf_result_fail(res, "%s[t=%zu, h=%zu, d=%zu] = %g (%s)", what, r / heads, r % heads, d, o[d],
                               isnan(o[d]) ? "NaN: never written, or computed NaN" : "not finite");
                return 0;
            }
            if (empty && o[d] != 0.0) {
                res->error = NAN;
                cf_result_fail(res, "%s[t=%zu, h=%zu, d=%zu] = %g but the row has no kept key: it must be 0", what,
                               r / heads, r % heads, d, o[d]);
                return 0;
            }
            out2 += o[d] * o[d];
        }
        double d2, g2;
        row_norms(out, ref, r, dim, &d2, &g2);
        diff2 += d2;
        ref2 += g2;
    }
    /* What cannot be asked of any output: values below the output dtype's normal range (a sink that
     * swamps every key leaves the true row far below it). Errors are measured against at least that. */
    const double floor_all = sqrt((double)(rows * dim)) * tiny;
    res->error = sqrt(diff2) / fmax(sqrt(ref2), fmax(floor_all, 1e-300));
    if (ref2 == 0.0 && floor_all == 0.0) res->error = sqrt(out2);
    if (res->error > tol) {
        cf_result_fail(res, "%s: relative L2 error %.3g > tolerance %.3g", what, res->error, tol);
        return 0;
    }
    /* One wrong row must not hide in a large batch: each row is judged against its own norm, but never
     * against less than 1/1000 of a typical row (rows the softmax made that small carry no signal). */
    const double typical = rows ? sqrt(ref2 / (double)rows) : 0.0;
    const double floor_row = fmax(1e-3 * typical, sqrt((double)dim) * tiny);
    double worst_row = 0.0;
    size_t worst_at = 0;
    for (size_t r = 0; r < rows; r++) {
        double d2, g2;
        row_norms(out, ref, r, dim, &d2, &g2);
        const double denom = fmax(sqrt(g2), floor_row);
        if (denom > 0.0 && sqrt(d2) / denom > worst_row) {
            worst_row = sqrt(d2) / denom;
            worst_at = r;
        }
    }
    if (worst_row > CF_ROW_FACTOR * tol) {
        cf_result_fail(res, "%s: row t=%zu, h=%zu has relative error %.3g > %g x tolerance %.3g (the whole "
                       "tensor's is %.3g): one row is wrong", what, worst_at / heads, worst_at % heads, worst_row,
                       CF_ROW_FACTOR, tol, res->error);
        return 0;
    }
    return 1;
}

int cf_compare_lse(const char *what, const double *lse, const double *ref, size_t tokens, size_t heads, double tol,
                   cf_result_t *res)
{
    double worst = 0.0;
    size_t worst_at = 0;
    for (size_t r = 0; r < tokens * heads; r++) {
        if (ref[r] == -INFINITY) {
            if (lse[r] != -INFINITY) {
                res->lse_error = NAN;
                cf_result_fail(res, "%s[t=%zu, h=%zu] = %g but the row has no kept key: it must be -inf", what,
                               r / heads, r % heads, lse[r]);
                return 0;
            }
            continue;
        }
        if (!isfinite(lse[r])) {
            res->lse_error = NAN;
            cf_result_fail(res, "%s[t=%zu, h=%zu] = %g, expected %.6g", what, r / heads, r % heads, lse[r], ref[r]);
            return 0;
        }
        double e = fabs(lse[r] - ref[r]) / (1.0 + fabs(ref[r]));
        if (e > worst) {
            worst = e;
            worst_at = r;
        }
    }
    res->lse_error = worst;
    if (worst > tol) {
        cf_result_fail(res, "%s[t=%zu, h=%zu] = %.8g, expected %.8g: error %.3g > tolerance %.3g (scaled by 1 + |lse|)",
                       what, worst_at / heads, worst_at % heads, lse[worst_at], ref[worst_at], worst, tol);
        return 0;
    }
    return 1;
}

int cf_corrupt_output(double *out, const double *ref, size_t n)
{
    if (n == 0) return 0;
    double norm2 = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        norm2 += ref[i] * ref[i];
        if (fabs(ref[i]) > fabs(ref[at])) at = i;
    }
    out[at] += 1.0 + 2.0 * sqrt(norm2);
    return 1;
}
