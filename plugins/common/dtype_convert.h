/* dtype_convert.h — scalar and row conversions between the storage formats of attnrt tensors and f32.
 *
 * Formats, from their definitions (sign | exponent field with a bias | fraction with an implicit 1):
 *   f16   IEEE binary16, bias 15, 10 fraction bits, all-ones exponent = inf/NaN.
 *   bf16  the top 16 bits of an IEEE binary32, bias 127, 7 fraction bits.
 *   e4m3  fp8 "fn": bias 7, 3 fraction bits, no inf; only S.1111.111 is NaN; max finite 448.
 *   e5m2  fp8: bias 15, 2 fraction bits, IEEE specials (it is the top byte of an f16); max 57344.
 * Every encoder rounds to nearest, ties to even, in ONE rounding from its input. f16/bf16 overflow to
 * +-inf as IEEE does; the fp8 encoders saturate to +-max (inf included): what an fp8 KV cache stores.
 * NaN stays NaN with its sign, as the canonical quiet NaN (f16 0x7e00, bf16 0x7fc0, e5m2 0x7e, e4m3 0x7f).
 *
 * Decoders are static inline and branch-free (selects), so loops over a row can auto-vectorise.
 * Rows: no pointer is kept; src and dst must not overlap.
 */
#ifndef ATTNRT_DTYPE_CONVERT_H
#define ATTNRT_DTYPE_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attnrt_plugin.h"

/* The storage formats a row helper understands; DC_INVALID for anything else. */
typedef enum dc_kind {
    DC_INVALID = 0,
    DC_F32,
    DC_F16,
    DC_BF16,
    DC_E4M3,
    DC_E5M2,
} dc_kind_t;

/* Maps a DLPack-style dtype to its kind (DC_INVALID when lanes != 1 or the pair is unknown). */
dc_kind_t dc_kind_of(attnrt_dtype_t dt);
/* Bytes per element of a kind (0 for DC_INVALID). */
size_t dc_kind_size(dc_kind_t kind);
/* "f32", "f16", "bf16", "fp8_e4m3", "fp8_e5m2" or "invalid": for messages. */
const char *dc_kind_name(dc_kind_t kind);

static inline float dc_bits_to_f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t dc_f32_to_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

/* f16 -> f32, exact. Normals rebias the exponent (15 -> 127); subnormals are m * 2^-24, computed from
 * the integer so no float subnormal (and no DAZ mode of the host) is involved. */
static inline float dc_f16_to_f32(uint16_t h)
{
    const uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    const uint32_t em = (uint32_t)h & 0x7fffu;                   /* exponent and fraction */
    const uint32_t normal = (em << 13) + ((uint32_t)(127 - 15) << 23);
    const uint32_t special = (em << 13) | 0x7f800000u;          /* inf, NaN keeps its payload */
    const float sub = (float)(em & 0x3ffu) * 0x1p-24f;          /* zero too */
    const uint32_t bits = em >= 0x7c00u ? special : normal;
    const uint32_t mag = em < 0x0400u ? dc_f32_to_bits(sub) : bits;
    return dc_bits_to_f32(mag | sign);
}

/* bf16 -> f32, exact: bf16 is the high half of the binary32 pattern. */
static inline float dc_bf16_to_f32(uint16_t b) { return dc_bits_to_f32((uint32_t)b << 16); }

/* e4m3fn -> f32, exact. Normals: exponent e - 7 + 127, fraction shifted into place; subnormals m * 2^-9. */
static inline float dc_e4m3_to_f32(uint8_t v)
{
    const uint32_t sign = ((uint32_t)v & 0x80u) << 24;
    const uint32_t em = (uint32_t)v & 0x7fu;
    const uint32_t normal = (em << 20) + ((uint32_t)(127 - 7) << 23);
    const float sub = (float)(em & 0x7u) * 0x1p-9f;
    uint32_t mag = em < 0x08u ? dc_f32_to_bits(sub) : normal;
    mag = em == 0x7fu ? 0x7fc00000u : mag;                       /* the only NaN: S.1111.111 */
    return dc_bits_to_f32(mag | sign);
}

/* e5m2 -> f32, exact: an e5m2 byte is the high byte of the f16 with the same value. */
static inline float dc_e5m2_to_f32(uint8_t v) { return dc_f16_to_f32((uint16_t)((uint16_t)v << 8)); }

/* f32 -> bf16, round to nearest even; overflow rounds to +-inf as IEEE does; NaN -> 0x7fc0 | sign. */
static inline uint16_t dc_f32_to_bf16(float f)
{
    const uint32_t bits = dc_f32_to_bits(f);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((bits >> 16) & 0x8000u) | 0x7fc0u);
    const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u); /* ties go to the even neighbour */
    return (uint16_t)(rounded >> 16);
}

/* f32 -> f16, round to nearest even (one rounding), overflow -> +-inf, NaN -> 0x7e00 | sign. */
uint16_t dc_f32_to_f16(float f);
/* double -> fp8, round to nearest even (one rounding from the double), saturating to +-max; the KV
 * writer passes x / scale computed in double so that quantisation rounds only once. */
uint8_t dc_f64_to_e4m3(double x);
uint8_t dc_f64_to_e5m2(double x);

/* dst[i] = decode(src[i]) * scale for i < n (scale applies to fp8 kinds only; pass 1 otherwise). */
void dc_row_to_f32(float *restrict dst, const void *restrict src, dc_kind_t kind, size_t n, float scale);
/* dst[i] = encode(src[i]) for i < n; fp8 kinds store saturate(src[i] / scale) (scale ignored otherwise). */
void dc_row_from_f32(void *restrict dst, const float *restrict src, dc_kind_t kind, size_t n, float scale);

#endif
