/* test_reference.c - proves the float64 golden reference against answers derivable by hand: the shared
 * checks, and main, which runs the groups of test_reference_dtype.c, test_reference_attention.c,
 * test_reference_mla.c and test_reference_linear.c. */
#include "test_reference.h"

void near_at(const double *got, const double *want, size_t n, const char *what, const char *file, int line)
{
    size_t i;
    for (i = 0; i < n; i++) {
        if (fabs(got[i] - want[i]) <= TOL * (1.0 + fabs(want[i])))
            continue;
        print_error("%s[%zu] = %.17g, want %.17g\n", what, i, got[i], want[i]);
        _fail(file, line);
    }
}

void poison(double *x, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        x[i] = NAN;
}

void fill_random(double *x, size_t n, unsigned seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (double)(seed >> 8) / (double)(1u << 23) - 1.0;
    }
}

int main(void)
{
    int failed = 0;
    failed += ref_test_dtype();
    failed += ref_test_attention();
    failed += ref_test_mla();
    failed += ref_test_linear();
    return failed ? 1 : 0;
}
