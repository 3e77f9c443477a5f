/* conform_rng.h - the seeded random numbers of attnrt-conform.
 *
 * Every case draws its parameters and its data from its own seed, so a case replays exactly from
 * (global seed, case index) no matter which other cases run. splitmix64 turns any seed (0 included)
 * into a well-mixed state; xorshift64* then produces the stream. Not for cryptography.
 */
#ifndef ATTNRT_CONFORM_RNG_H
#define ATTNRT_CONFORM_RNG_H

#include <stdint.h>

typedef struct cf_rng {
    uint64_t state; /* never 0 */
} cf_rng_t;

/* One splitmix64 step: also used to derive case seeds from the global seed. */
uint64_t cf_splitmix64(uint64_t *x);

void     cf_rng_init(cf_rng_t *r, uint64_t seed);
uint64_t cf_rng_u64(cf_rng_t *r);
/* Uniform in [0, 1). */
double   cf_rng_unit(cf_rng_t *r);
/* Uniform in [lo, hi). */
double   cf_rng_range(cf_rng_t *r, double lo, double hi);
/* Uniform integer in [lo, hi] (inclusive; hi >= lo). */
int      cf_rng_int(cf_rng_t *r, int lo, int hi);
/* 1 with probability p. */
int      cf_rng_chance(cf_rng_t *r, double p);
/* Standard normal (Box-Muller); never exactly 0, so no input is ever a zero by accident of the draw. */
double   cf_rng_normal(cf_rng_t *r);
/* One of n ints. */
int      cf_rng_pick(cf_rng_t *r, const int *values, int n);
/* Fisher-Yates shuffle of n ints. */
void     cf_rng_shuffle(cf_rng_t *r, int *values, int n);

#endif
