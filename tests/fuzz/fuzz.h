/* fuzz.h - the libFuzzer target over plan + run of paged attention, kv_write, lightning and the gated
 * delta rule on the cpu plugin, with the float64 reference (tests/reference) as the oracle.
 *
 * Layout of tests/fuzz/:
 *   fuzz.h            this header: the input reader, device buffers, findings, the ops' entry points
 *   fuzz_input.c      the input reader: bytes -> small choices (an exhausted input reads as zeros)
 *   fuzz_device.c     the context, device buffers placed flush with the end of their allocation (an
 *                     overrun hits ASan's redzone; the slack in front is a pattern checked after each
 *                     run), device-metadata corruption, refusal checks and findings
 *   fuzz_target.c     LLVMFuzzerTestOneInput: byte 0 picks the op
 *   fuzz_attention.c  paged attention     fuzz_kv_write.c  kv_write
 *   fuzz_linear.c     lightning and gated delta (state pools, slots, speculative rows)
 *   fuzz_replay.c     main() of the plain build: replays every file of the folders it is given
 *   corpus/           the committed seed inputs (minimised with -merge=1); never written by the suite
 *
 * What one input does: it chooses dtypes, small shapes, options and host metadata, valid or broken
 * on purpose. An independent check here decides whether the metadata obeys the contract
 * (docs/semantics.md). The plan must refuse broken metadata (an error status and a message naming the
 * API function) and must accept valid metadata unless the device says ATTNRT_ERR_UNSUPPORTED. A plan
 * that was made is then run, possibly with the device copies of the metadata corrupted after planning
 * (the runtime never reads device data at run time, so this reaches the plugin): the run must return
 * ATTNRT_OK without a crash or an out-of-bounds access (ASan), and leave the slack before every
 * buffer untouched. Uncorrupted runs (and kv_write, whose result is defined for any slot) are compared
 * with the float64 reference within the conformance tolerances. Any violation is a finding: a message
 * on stderr and abort().
 */
#ifndef ATTNRT_FUZZ_H
#define ATTNRT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt.h"
#include "conform_dtype.h"
#include "conform_rng.h"

/* ---- input reader (fuzz_input.c) ------------------------------------------------------------- */

typedef struct fz_in {
    const uint8_t *p;
    size_t         left;
} fz_in_t;

uint8_t  fz_byte(fz_in_t *in);
uint32_t fz_u32(fz_in_t *in);
/* An integer in [lo, hi] from one byte (lo when the input is exhausted). */
int      fz_range(fz_in_t *in, int lo, int hi);
/* One of n values, from one byte. */
int      fz_pick(fz_in_t *in, const int *values, int n);
/* 1 when the next byte is odd. */
int      fz_bit(fz_in_t *in);
/* A value for a broken index: -1, 0, boundaries, extremes, or a small number. `n` is the bound the
 * index is checked against (num_blocks, num_slots, num_tokens...). */
int32_t  fz_wild(fz_in_t *in, int64_t n);

/* ---- device buffers, findings (fuzz_device.c) ------------------------------------------------ */

#define FZ_MAX_BUFS 48

typedef struct fz_buf {
    void  *base;   /* the attnrt_mem_alloc allocation                          */
    size_t alloc;  /* its size: a multiple of 256                              */
    size_t bytes;  /* the tensor's bytes, at the end of the allocation         */
} fz_buf_t;

typedef struct fz_dev {
    attnrt_context_t *ctx;
    fz_buf_t          bufs[FZ_MAX_BUFS];
    int               count;
    int               empty_null; /* tensors without elements get NULL data, else a pointer into an allocation */
} fz_dev_t;

/* The cpu:0 context, opened on first use and kept for the whole process. */
attnrt_context_t *fz_context(void);
/* Closes it and shuts the runtime down (the replay main, before exit). */
void fz_context_close(void);

/* Reads from the input whether empty tensors get NULL data. */
void fz_dev_init(fz_dev_t *dev, fz_in_t *in);
/* Uploads `bytes` of `host` into a new allocation, flush with its end; 0 bytes: NULL or an allocation
 * of slack only, as the input chose. */
void *fz_upload(fz_dev_t *dev, const void *host, size_t bytes);
/* Copies `bytes` from device `src` into host `dst`. */
void fz_download(fz_dev_t *dev, void *dst, const void *src, size_t bytes);
/* Overwrites an uploaded buffer's bytes (host -> device), e.g. to corrupt metadata after the plan. */
void fz_overwrite(fz_dev_t *dev, void *dst, const void *src, size_t bytes);
/* Every buffer's slack must still hold the pattern it was given: a finding otherwise. */
void fz_dev_check_slack(const fz_dev_t *dev, const char *op);
void fz_dev_release(fz_dev_t *dev);

/* Records what the current input decoded to (printed with a finding). */
void fz_describe(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Appends to it. */
void fz_describe_more(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "v0 v1 ..." into buf (truncated to cap): for descriptions. */
const char *fz_list(char *buf, size_t cap, const int64_t *v, int n);
const char *fz_list32(char *buf, size_t cap, const int32_t *v, int n);
/* With ATTNRT_FUZZ_VERBOSE set: the case and what became of it, on stderr. */
void fz_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A finding: prints "fuzz finding: <op>: <message>" and the case, and aborts. */
void fz_finding(const char *op, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* Checks a refusal: st is a negative status other than ATTNRT_ERR_INTERNAL and attnrt_last_error()
 * names `fn`. `valid`: the metadata obeys the contract, so only ATTNRT_ERR_UNSUPPORTED may refuse it. */
void fz_check_refusal(const char *fn, attnrt_status_t st, int valid);
/* Requires st == ATTNRT_OK (calls that cannot fail on inputs this target builds). */
void fz_require_ok(const char *what, attnrt_status_t st);

/* Overwrites one of `n` int32 metadata values in `host` (the caller uploads them): which one and the
 * value come from the input; `what` names the array in the case's description. 1 when it changed. */
int fz_corrupt_i32(fz_in_t *in, int32_t *host, int n, int64_t bound, const char *what);

/* Compares a dense output with the reference (conformance rules); a finding on mismatch. mag (may be
 * NULL): the output computed from the absolute values of every term; where the conformance check fails,
 * each row may still pass within tol times its norm (an ill-conditioned result, not a wrong one).
 * ref_lse [rows] marks rows that must be exactly 0 (-inf), may be NULL. */
void fz_compare(const char *op, const char *what, const double *got, const double *ref, const double *mag,
                const double *ref_lse, size_t tokens, size_t heads, size_t dim, double tol, cf_dtype_t out_dtype);

/* ---- the ops ---------------------------------------------------------------------------------- */

void fz_attention(fz_in_t *in);
void fz_kv_write(fz_in_t *in);
void fz_lightning(fz_in_t *in);
void fz_gated_delta(fz_in_t *in);

#endif
