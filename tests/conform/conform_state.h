/* conform_state.h - state pools and the rounds of the state ops (lightning, gated delta rule).
 *
 * A case's pool holds one slot per logical sequence, the fresh slots speculative rows write into, a
 * decoy slot (what state_indices names in speculative rounds, where it must not be used), a few
 * allocated slots no request names, and one slot never allocated. Slots are taken with
 * attnrt_state_slot_alloc (which must hand out the lowest free id, also after a free) and given their
 * roles in a shuffled order. A sequence whose first request has an initial state starts from random
 * values, written directly or through attnrt_state_slot_zero / attnrt_state_slot_copy; one without
 * starts from a slot full of NaN (it must never be read); every other slot holds a finite pattern.
 * The pool is read back and checked bit for bit before the first round.
 *
 * Each round (one plan and run) draws fresh inputs, poisons the output with NaN and, after the run,
 * judges the output against the float64 reference (padding rows exactly 0) and every slot of the
 * pool: the slots the round writes against the reference's pool (data tolerance), all others byte
 * for byte against what they held before. The reference carries its own float64 pool from round to
 * round, so a later round is judged against the recurrence over the concatenation of the rounds.
 * The first round also asks for plans naming an unallocated and an out-of-range slot: both must be
 * refused (ATTNRT_ERR_INVALID_ARGUMENT, the message naming the slot).
 */
#ifndef ATTNRT_CONFORM_STATE_H
#define ATTNRT_CONFORM_STATE_H

#include "conform_case.h"
#include "conform_device.h"
#include "conform_ops.h"
#include "conform_rng.h"

#define CF_MAX_SPEC 7

typedef struct cf_pool {
    attnrt_state_pool_t *pool;
    attnrt_tensor_t      tensor;     /* the pool as a tensor [num_slots, heads, dk, dv] f32         */
    int      num_slots;              /* the allocated slots and one never allocated (the last id)  */
    int      heads, dk, dv;
    size_t   slot_elems;
    float   *image;                  /* [num_slots, slot]: the device's pool as last read          */
    double  *ref;                    /* [num_slots, slot]: the reference's pool                    */
    char   (*role)[24];              /* per slot, for messages: "sequence 2", "extra", ...        */
    int      cur[CF_MAX_SEQS];       /* logical sequence -> the slot holding its state             */
    int     *fresh;                  /* slots for speculative rows, handed out in order            */
    int      num_fresh, next_fresh;
    int      decoy;                  /* state_indices of speculative rounds; -1 when none          */
    int      num_seqs;
} cf_pool_t;

/* Creates, allocates and fills the pool for case c (slot [heads, dk, dv] f32) and checks it.
 * 0, or -1 with *res failed / unsupported. */
int  cf_pool_setup(const cf_env_t *env, const cf_case_t *c, cf_rng_t *rng, int heads, int dk, int dv,
                   attnrt_stream_t *stream, cf_pool_t *p, cf_result_t *res);
/* Destroys the pool (after its runs completed). */
void cf_pool_free(cf_pool_t *p);

/* One round's batch and state metadata, on the host and on the device. */
typedef struct cf_round {
    int     index, B, T, spec, num_spec;
    int     q_lens[CF_MAX_SEQS];
    int32_t qsl[CF_MAX_SEQS + 1], state_indices[CF_MAX_SEQS], num_accepted[CF_MAX_SEQS];
    uint8_t has_init[CF_MAX_SEQS];
    int32_t spec_rows[CF_MAX_SEQS * (CF_MAX_SPEC + 1)];
    int     padding[CF_MAX_SEQS];    /* request b is a padding row                                  */
    unsigned char *written;          /* [num_slots]: the round writes this slot                     */
    attnrt_tensor_t qsl_t, state_indices_t, has_init_t, spec_t, accepted_t;
    attnrt_batch_host_t batch;
    attnrt_state_host_t host;
} cf_round_t;

/* What an op brings to the rounds (conform_lightning.c, conform_gated_delta.c). */
typedef struct cf_state_op {
    const char *name;                /* "lightning"                                                 */
    int         out_heads, dv;       /* out [T, out_heads, dv] in out_dtype                         */
    cf_dtype_t  out_dtype;
    double      tolerance;
    /* Draws and uploads the round's inputs and fills the op's args around out and the metadata. */
    int (*inputs)(void *self, cf_dev_t *dev, cf_rng_t *rng, const cf_round_t *r, const attnrt_tensor_t *out,
                  const attnrt_tensor_t *pool, cf_result_t *res);
    attnrt_status_t (*plan)(void *self, attnrt_context_t *ctx, const cf_round_t *r, const attnrt_state_host_t *host,
                            const attnrt_state_pool_t *pool, attnrt_plan_t **plan);
    attnrt_status_t (*run)(void *self, attnrt_plan_t *plan, void *ws, size_t ws_bytes, attnrt_stream_t *stream);
    /* The float64 reference of the round over `pool`, writing ref_out [T, out_heads, dv]. */
    void (*reference)(void *self, const cf_round_t *r, double *pool, double *ref_out);
    void *self;
} cf_state_op_t;

/* Every round of case c: metadata, inputs, plan, run, reference, judging (see above). */
void cf_state_rounds(const cf_env_t *env, const cf_case_t *c, cf_rng_t *rng, cf_dev_t *dev, cf_pool_t *p,
                     const cf_state_op_t *op, attnrt_stream_t *stream, cf_result_t *res);

/* ---- helpers shared by the state ops ------------------------------------------------------------ */

/* Uploads `count` fresh values (normal * amplitude, rounded to dt) as a contiguous tensor of `shape`,
 * their rounded values into *ref (malloc'ed, caller frees). 0, or -1 with *res failed. */
int cf_state_upload_normal(cf_dev_t *dev, cf_rng_t *rng, cf_dtype_t dt, double amplitude, int ndim,
                           const int64_t *shape, attnrt_tensor_t *t, double **ref, cf_result_t *res);
/* The same from values given in `vals` (count elements), rounded to dt. */
int cf_state_upload_values(cf_dev_t *dev, cf_dtype_t dt, const double *vals, int ndim, const int64_t *shape,
                           attnrt_tensor_t *t, double **ref, cf_result_t *res);
/* A NaN-poisoned output [T, heads, dv] of dtype dt. 0, or -1. */
int cf_state_poisoned_out(cf_dev_t *dev, cf_dtype_t dt, int T, int heads, int dv, attnrt_tensor_t *t,
                          cf_result_t *res);
/* Reads out back into got [T, heads, dv]. 0, or -1. */
int cf_state_read_out(cf_dev_t *dev, cf_dtype_t dt, const attnrt_tensor_t *t, double *got, cf_result_t *res);
/* Reads the whole pool into `into` (num_slots * slot_elems floats). 0, or -1. */
int cf_pool_read(cf_dev_t *dev, const cf_pool_t *p, float *into, cf_result_t *res);

#endif
