/* conform_dtype.h - the storage formats the checker fills and reads, and their tolerances.
 *
 * Encoding and decoding go through the float64 reference's converters (reference.h), never through a
 * plugin's, so a plugin's conversion bug cannot hide behind the checker sharing it.
 */
#ifndef ATTNRT_CONFORM_DTYPE_H
#define ATTNRT_CONFORM_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"

typedef enum cf_dtype {
    CF_F32 = 0,
    CF_F16,
    CF_BF16,
    CF_E4M3,
    CF_E5M2,
    CF_DTYPE_COUNT_
} cf_dtype_t;

attnrt_dtype_t cf_dtype_attnrt(cf_dtype_t dt);
size_t         cf_dtype_size(cf_dtype_t dt);
/* "f32", "f16", "bf16", "e4m3", "e5m2": short, for case names. */
const char    *cf_dtype_name(cf_dtype_t dt);
int            cf_dtype_is_fp8(cf_dtype_t dt);

/* Relative-L2 tolerance of docs/semantics.md "Tolerances" for data of this dtype. */
double cf_dtype_tolerance(cf_dtype_t dt);
/* The tolerance of an op whose data come in these dtypes: the least precise one decides. */
double cf_tolerance_of(const cf_dtype_t *dts, int n);

/* Element i of a buffer of dtype dt. fp8 values are the raw format (no scale applied). */
double cf_decode(cf_dtype_t dt, const void *buf, size_t i);
/* Stores x (rounded to nearest even; fp8 saturates) as element i. */
void   cf_encode(cf_dtype_t dt, double x, void *buf, size_t i);
/* x rounded through dt and back: what the device will really see of an input x. */
double cf_round(cf_dtype_t dt, double x);
/* The NaN pattern of dt written to element i: the poison every output starts with. */
void   cf_poison(cf_dtype_t dt, void *buf, size_t i);
/* Raw bits of element i (zero-extended), for bit-exact comparisons and messages. */
uint32_t cf_bits(cf_dtype_t dt, const void *buf, size_t i);
/* Distance in units in the last place between two finite fp8 codes of the same format (ordered
 * through sign-magnitude, so -0 and +0 are 0 apart). */
int    cf_fp8_ulp_distance(uint8_t a, uint8_t b);
/* Smallest positive normal value of dt (below it a result loses precision or flushes to 0). */
double cf_dtype_min_normal(cf_dtype_t dt);
/* Largest finite value of an fp8 format (448 or 57344); 0 for the others. */
double cf_fp8_max(cf_dtype_t dt);

#endif
