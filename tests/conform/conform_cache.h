/* conform_cache.h - a paged KV cache filled for one case, and the check of attnrt_kv_write.
 *
 * The cache holds `num_seqs` sequences in physical blocks taken in a shuffled order; a few spare
 * blocks are filled with NaN so that reading a block no table names shows in the output, and the
 * block-table columns past a sequence's end point at one of them. Rows of a sequence's last block past
 * its length hold finite garbage (those keys "never exist"). The tokens are written through
 * attnrt_kv_write in a shuffled order mixed with padding tokens (negative slots), unless the spec asks
 * for a direct write with the reference quantiser. After a kv_write every byte of both caches is
 * checked: written slots against the reference quantisation (bit-exact; fp8 within 1 ulp), every
 * other byte unchanged. The caller's reference is then fed the values really stored on the device.
 */
#ifndef ATTNRT_CONFORM_CACHE_H
#define ATTNRT_CONFORM_CACHE_H

#include <stdint.h>

#include "conform_device.h"
#include "conform_ops.h"
#include "conform_rng.h"

typedef struct cf_cache_spec {
    int        num_seqs;       /* sequences stored                                            */
    const int *lens;           /* [num_seqs] tokens of each                                   */
    int        block_size, num_kv_heads, head_dim_k, head_dim_v;
    int        table_cols;     /* > 0: block-table columns (>= the longest sequence's blocks);
                                  0: that many plus 0 or 1 padding column, drawn                */
    cf_dtype_t kv_dtype;       /* the caches                                                  */
    cf_dtype_t src_dtype;      /* the key/value rows handed to attnrt_kv_write                 */
    int        hnd, per_block_scale, interleaved;
    int        write_direct;   /* quantise on the host instead of calling attnrt_kv_write      */
    int        padding_slots;  /* padding tokens (negative slots) mixed into the write         */
    int        edge_values;    /* rounding ties, subnormals, fp8 saturation, -0                */
    int        host_slots;     /* also pass slot_mapping_host                                  */
    int        corrupt;        /* self-test: flip one written byte before the check            */
    attnrt_stream_t *stream;   /* kv_write's stream (NULL: the default one); borrowed           */
} cf_cache_spec_t;

typedef struct cf_cache {
    int      num_blocks, max_blocks;
    int32_t *block_table;      /* [num_seqs, max_blocks] host; padding columns name a NaN block */
    attnrt_tensor_t k, v;      /* device caches [num_blocks, block_size, Hkv, D] (strides: layout) */
    attnrt_tensor_t k_scale, v_scale; /* fp8 only: [1] or [num_blocks, Hkv] f32                */
    int      fp8;
    double  *k_deq, *v_deq;    /* NHD [num_blocks, block_size, Hkv, D]: the device's bytes, decoded
                                  and scaled; NaN in the spare blocks                          */
    int      written_tokens;   /* tokens that went through attnrt_kv_write (0: direct)          */
    int      worst_ulp;        /* fp8 kv_write: worst distance from the reference code          */
    int      corrupted;        /* self-test: a written byte was flipped before the check         */
} cf_cache_t;

/* Builds and fills the cache. Returns 0 when it is ready; -1 when *res now says why not (kv_write
 * unsupported, an API error, or a kv_write mismatch). Everything device-side lives in `dev`. */
int  cf_cache_build(const cf_env_t *env, cf_dev_t *dev, cf_rng_t *rng, const cf_cache_spec_t *spec, cf_cache_t *cache,
                    cf_result_t *res);
void cf_cache_free(cf_cache_t *cache);

/* The capability query attnrt_kv_write makes for this spec. */
void cf_cache_kv_write_query(const cf_cache_spec_t *spec, attnrt_op_query_t *q);

#endif
