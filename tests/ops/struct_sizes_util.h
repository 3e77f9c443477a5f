/* What the struct-size and zero-default tests share (test_ops_struct_older.c, test_ops_struct_newer.c,
 * test_ops_zero_defaults.c): fresh random inputs, device buffers freed together, struct copies of an
 * exact size on the heap, comparison with the float64 reference, and a small random paged-attention
 * problem with its reference. */
#ifndef STRUCT_SIZES_UTIL_H
#define STRUCT_SIZES_UTIL_H

#include "ops_fixture.h"

/* ---- random inputs: seeded once per process from the clock (or SZ_SEED), the seed printed ---- */
void     sz_seed_init(void);
float    sz_rand(float lo, float hi); /* uniform in [lo, hi) */
int32_t  sz_rand_int(int32_t lo, int32_t hi); /* uniform in [lo, hi] */

/* ---- device buffers of one test, freed together ---- */
typedef struct sz_mem {
    attnrt_context_t *ctx;
    void             *bufs[48];
    int               n;
} sz_mem_t;

/* n floats uniform in [lo, hi); their host values into host (may be NULL). */
void *sz_random_f32(sz_mem_t *m, size_t n, float lo, float hi, float *host);
/* A copy of `bytes` host bytes. */
void *sz_upload(sz_mem_t *m, const void *host, size_t bytes);
/* n floats, every one NaN: an output no op has written yet. */
void *sz_nan_f32(sz_mem_t *m, size_t n);
void  sz_download(sz_mem_t *m, void *host, const void *dev, size_t bytes);
void  sz_mem_free(sz_mem_t *m);
void  sz_tensor(attnrt_tensor_t *t, void *data, attnrt_dtype_t dtype, int32_t ndim, const int64_t *shape);

/* Fails the test when a value is NaN or differs from the reference by more than tol * (1 + |want|). */
void sz_expect_close(const char *what, const float *got, const double *want, size_t n, double tol);
/* Fails the test when the two byte strings differ, naming the first differing float. */
void sz_expect_same(const char *what, const void *a, const void *b, size_t bytes);

/* ---- structs of other sizes (every ABI struct starts with its struct_size) ---- */
/* The first `size` bytes of `full` in a heap block of exactly `size` bytes (so ASan and valgrind catch a
 * read past it), struct_size = size. free() it. */
void *sz_cut(const void *full, size_t size);
/* All of `full` (`full_size` bytes) in a heap block of full_size + extra bytes, struct_size = full_size +
 * extra, the extra bytes zero except byte `poke_at` (counted from the start) = poke when poke != 0. */
void *sz_grow(const void *full, size_t full_size, size_t extra, size_t poke_at, unsigned char poke);

/* ---- a random paged-attention problem: B requests of random query lengths (decodes and prefills)
 * over random context, f32, Hq 4, Hkv 2, D 16, block 4, a random block table ---- */
enum { SZ_B = 3, SZ_HQ = 4, SZ_HKV = 2, SZ_D = 16, SZ_BLOCK = 4, SZ_MAX_BLOCKS = 6,
       SZ_NUM_BLOCKS = SZ_B * SZ_MAX_BLOCKS + 2, SZ_MAX_T = SZ_B * 8 };

typedef struct sz_attention {
    sz_mem_t            mem;
    int32_t             T;
    int32_t             qsl[SZ_B + 1], seq_lens[SZ_B], table[SZ_B * SZ_MAX_BLOCKS];
    float              *q, *k, *v; /* host copies of query and the caches */
    void               *dout;
    attnrt_tensor_t     query, key_cache, value_cache, block_table, query_start_loc, seq_lens_t, out;
    attnrt_batch_host_t batch;
    attnrt_attention_args_t args; /* ATTNRT_ATTENTION_ARGS_INIT plus the required tensors */
} sz_attention_t;

void sz_attention_make(sz_attention_t *p, attnrt_context_t *ctx);
void sz_attention_free(sz_attention_t *p);
/* Poisons out with NaN, plans and runs `args` (any struct_size) with `batch`, and reads out into
 * host_out [T * Hq * D]. */
void sz_attention_run(sz_attention_t *p, const attnrt_attention_args_t *args, const attnrt_batch_host_t *batch,
                      float *host_out);
/* The float64 reference: scale 1/sqrt(D), no window, no soft-cap, `causal`. out [T * Hq * D]. */
void sz_attention_reference(const sz_attention_t *p, int causal, double *out);

/* The groups of this executable. */
int sz_run_older_tests(void);
int sz_run_newer_tests(void);
int sz_run_zero_default_tests(void);

#endif /* STRUCT_SIZES_UTIL_H */
