/* conform_rng.c - splitmix64 seeding, xorshift64* stream (see conform_rng.h). */
#include "conform_rng.h"

#include <math.h>

uint64_t cf_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void cf_rng_init(cf_rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    r->state = cf_splitmix64(&x);
    if (r->state == 0) /* xorshift's one fixed point */
        r->state = 0x2545f4914f6cdd1dull;
}

uint64_t cf_rng_u64(cf_rng_t *r)
{
    uint64_t x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return x * 0x2545f4914f6cdd1dull;
}

double cf_rng_unit(cf_rng_t *r) { return (double)(cf_rng_u64(r) >> 11) * 0x1p-53; }

double cf_rng_range(cf_rng_t *r, double lo, double hi) { return lo + (hi - lo) * cf_rng_unit(r); }

int cf_rng_int(cf_rng_t *r, int lo, int hi)
{
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1u;
    return (int)((int64_t)lo + (int64_t)(cf_rng_u64(r) % span));
}

int cf_rng_chance(cf_rng_t *r, double p) { return cf_rng_unit(r) < p; }

double cf_rng_normal(cf_rng_t *r)
{
    double u1 = 1.0 - cf_rng_unit(r); /* (0, 1]: log stays finite */
    double u2 = cf_rng_unit(r);
    double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return z != 0.0 ? z : 1e-3;
}

int cf_rng_pick(cf_rng_t *r, const int *values, int n) { return values[cf_rng_int(r, 0, n - 1)]; }

void cf_rng_shuffle(cf_rng_t *r, int *values, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = cf_rng_int(r, 0, i);
        int t = values[i];
        values[i] = values[j];
        values[j] = t;
    }
}
