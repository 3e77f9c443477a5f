/* What the reference's tests share (test_reference*.c): checks with an absolute-and-relative tolerance,
 * NaN poisoning, deterministic inputs, and the groups test_reference.c runs. One behaviour per test, named
 * after it. Outputs are poisoned with NaN first, so an unwritten element fails just like a wrong one. */
#ifndef ATTNRT_TEST_REFERENCE_H
#define ATTNRT_TEST_REFERENCE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "reference.h"

/* As libuv's TEST_IMPL: cmocka passes a state pointer that no test here uses. */
#define TEST(name)                                                                                  \
    static void name##_body(void);                                                                  \
    static void name(void **state) { (void)state; name##_body(); }                                  \
    static void name##_body(void)

#define TOL 1e-12
/* NEAR(x, want): one value; EXPECT(array, w0, w1, ...): array[i] ~ wi for every listed wi. */
#define NEAR(got, want) near_at((const double[]){got}, (const double[]){want}, 1, #got, __FILE__, __LINE__)
#define EXPECT(got, ...)                                                                            \
    near_at((got), (const double[]){__VA_ARGS__},                                                   \
            sizeof((const double[]){__VA_ARGS__}) / sizeof(double), #got, __FILE__, __LINE__)
#define IS_NEG_INF(x) assert_true(isinf(x) && (x) < 0)

#define MAXK 64 /* keys of the one-request fixtures */

void near_at(const double *got, const double *want, size_t n, const char *what, const char *file, int line);
void poison(double *x, size_t n);
/* Deterministic values in [-1, 1) for tests that compare two routes to the same answer. */
void fill_random(double *x, size_t n, unsigned seed);

/* The groups, one per file. */
int ref_test_dtype(void);
int ref_test_attention(void);
int ref_test_mla(void);
int ref_test_linear(void);

#endif
