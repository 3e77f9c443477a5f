/* fuzz_input.c - the fuzz input as a stream of small choices (see fuzz.h). */
#include <limits.h>

#include "fuzz.h"

uint8_t fz_byte(fz_in_t *in)
{
    if (in->left == 0) return 0;
    in->left--;
    return *in->p++;
}

uint32_t fz_u32(fz_in_t *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v = v << 8 | fz_byte(in);
    return v;
}

int fz_range(fz_in_t *in, int lo, int hi) { return lo + fz_byte(in) % (hi - lo + 1); }

int fz_pick(fz_in_t *in, const int *values, int n) { return values[fz_byte(in) % n]; }

int fz_bit(fz_in_t *in) { return fz_byte(in) & 1; }

int32_t fz_wild(fz_in_t *in, int64_t n)
{
    const int64_t b = n > INT32_MAX ? INT32_MAX : n;
    switch (fz_byte(in) % 10) {
    case 0:  return -1;
    case 1:  return 0;
    case 2:  return (int32_t)(b - 1);
    case 3:  return (int32_t)b;
    case 4:  return b < INT32_MAX ? (int32_t)(b + 1) : INT32_MAX;
    case 5:  return INT32_MAX;
    case 6:  return INT32_MIN;
    case 7:  return -2 - fz_byte(in);
    case 8:  return fz_byte(in);
    default: return (int32_t)fz_u32(in);
    }
}
