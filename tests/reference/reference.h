/* reference.h - the float64 golden reference for libattnrt's ops.
 *
 * What: a plain, loop-by-loop implementation of the op contract (docs/semantics.md),
 * used only by the tests and by attnrt-conform to judge plugins. Nothing here is fast or clever on
 * purpose: a reviewer must be able to check each function against the contract line by line.
 *
 * Ownership: every pointer argument is borrowed for the duration of the call only; the reference
 * never keeps a pointer, never frees caller memory and never allocates anything that outlives a call.
 * Inputs are read-only (const); outputs are written in full (every element of every output row,
 * including empty rows and padding rows, unless a comment says otherwise). All arrays are contiguous,
 * row-major, host memory, in the shapes written next to each field. Callers that hold strided or
 * quantised device data copy/dequantise it into these shapes first.
 *
 * Internal scratch that a function needs (a row of scores, a state matrix) is allocated with malloc
 * and freed before return; on allocation failure the process aborts, because a golden reference that
 * silently skips work would make every comparison meaningless.
 */
#ifndef ATTNRT_TESTS_REFERENCE_H
#define ATTNRT_TESTS_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------------
 * Scalar storage formats (ref_dtype.c). Bit patterns in, double out, and back. Encoding rounds to
 * nearest, ties to even, directly from the double (one rounding). NaN stays NaN (sign kept).
 * f16/bf16 overflow to +-inf as IEEE does; the fp8 formats saturate to +-max (inf included), since
 * that is what an fp8 KV cache stores ("stored value = saturate(x / scale)").
 * ------------------------------------------------------------------------------------------------ */
double   ref_f16_to_double(uint16_t h);   /* IEEE binary16: bias 15, 10 mantissa bits */
uint16_t ref_double_to_f16(double x);     /* NaN -> 0x7e00 (| sign) */
double   ref_bf16_to_double(uint16_t b);  /* bfloat16: bias 127, 7 mantissa bits */
uint16_t ref_double_to_bf16(double x);    /* NaN -> 0x7fc0 (| sign) */
double   ref_e4m3_to_double(uint8_t v);   /* e4m3fn: bias 7, max 448, no inf, 0x7f/0xff NaN */
uint8_t  ref_double_to_e4m3(double x);    /* saturates to +-448; NaN -> 0x7f (| sign) */
double   ref_e5m2_to_double(uint8_t v);   /* IEEE-like: bias 15, 0x7c inf, 0x7d..0x7f NaN */
uint8_t  ref_double_to_e5m2(double x);    /* saturates to +-57344 (never inf); NaN -> 0x7e (| sign) */

/* FP8 KV cache quantisation (ref_dtype.c): the byte stored for x is encode(x / scale) with saturation;
 * the value read back is decode(byte) * scale. is_e5m2 = 0 selects e4m3fn. */
uint8_t ref_quantize_fp8(double x, double scale, int is_e5m2);
double  ref_dequantize_fp8(uint8_t v, double scale, int is_e5m2);

/* ------------------------------------------------------------------------------------------------
 * Paged attention (ref_attention.c).
 * Query token i of request b (query length L = qsl[b+1] - qsl[b]) sits at p_q = seq_lens[b] - L + i;
 * keys are p_k in [0, seq_lens[b]). Score order: scale*dot, softcap, ALiBi, masks, then softmax with
 * the optional sink in the denominator. Query head h reads KV head h / (Hq / Hkv).
 * ------------------------------------------------------------------------------------------------ */
typedef struct ref_attention_problem {
    int num_seqs;                    /* B */
    const int32_t *query_start_loc;  /* [B+1], cumulative query token offsets */
    const int32_t *seq_lens;         /* [B], total KV length incl. the new tokens */
    int num_q_heads, num_kv_heads, head_dim_qk, head_dim_v;
    const double *q;                 /* [T, Hq, Dqk], T = query_start_loc[B] */
    const double *k_cache;           /* [num_blocks, block_size, Hkv, Dqk] (NHD), already dequantised */
    const double *v_cache;           /* [num_blocks, block_size, Hkv, Dv]  (NHD), already dequantised */
    int num_blocks, block_size;
    const int32_t *block_table;      /* [B, max_blocks_per_seq]: logical block -> physical block */
    int max_blocks_per_seq;
    double scale;                    /* used as given (the caller applies the 1/sqrt(Dqk) default) */
    int causal;                      /* keep p_k <= p_q (bottom-right aligned) */
    int window_left, window_right;   /* inclusive counts, -1 = unlimited */
    double softcap;                  /* <= 0: off; else s = cap * tanh(s / cap) */
    const double *alibi_slopes;      /* [Hq] or NULL; s += -slope[h] * |p_q - p_k| */
    const double *sinks;             /* [Hq] or NULL; raw logits (not scaled), join the denominator once */
    double *out;                     /* [T, Hq, Dv], written; 0 for rows with no kept key */
    double *lse;                     /* [T, Hq] or NULL; ln sum e^s over kept keys (no sink), -inf if none */
} ref_attention_problem;

void ref_paged_attention(const ref_attention_problem *p);

/* Cascade attention: every query attends to the concatenation [prefix ; own suffix], where the prefix
 * (prefix_len tokens, shared by all requests) lives in the blocks prefix_block_table
 * [ceil(prefix_len / block_size)] of the same caches, and the suffix is described by `suffix` exactly as
 * for ref_paged_attention (suffix->seq_lens are suffix lengths). Positions are those of the
 * concatenation: prefix token j at j, suffix token j at prefix_len + j; masks, ALiBi and the query
 * position p_q = prefix_len + seq_lens[b] - L + i all use them. Computed directly as one softmax over
 * the concatenation (not as a merge), so that it independently checks merge-based implementations.
 * Writes suffix->out and suffix->lse. Sinks join the single denominator once. */
void ref_cascade_attention(const ref_attention_problem *suffix, int prefix_len,
                           const int32_t *prefix_block_table);

/* Softmax of one row of kept scores, shared by every softmax op here so that there is one definition.
 * w [n]: scores in, probabilities out, e^{s_j} / (e^{sink} + sum_k e^{s_k}); sink may be NULL.
 * Returns ln(sum_j e^{s_j}) over the scores only (sink excluded), -inf when n == 0. */
double ref_softmax_row(int n, double *w, const double *sink);

/* KV write (ref_attention.c): k [T, Hkv, Dk], v [T, Hkv, Dv]; token t goes to slot
 * slot_mapping[t] = block * block_size + row of the NHD caches [num_blocks, block_size, Hkv, D];
 * a negative slot is padding and is skipped. Rows not named by any slot are left untouched. */
void ref_kv_write(int num_tokens, int num_kv_heads, int head_dim_k, int head_dim_v, const double *k,
                  const double *v, const int64_t *slot_mapping, int block_size, double *k_cache,
                  double *v_cache);

/* Merging partial softmax states (ref_attention.c). A state is (o, s): o the normalised output, s the
 * LSE of its keys. (0, -inf) is neutral: a state with s = -inf contributes nothing and its o is not
 * read (so a poisoned o of an empty partial cannot leak NaN). All inputs empty gives (0, -inf).
 * ref_merge_two is the two-state formula of docs/semantics.md written literally:
 *   o_a, o_b, out [T, H, D]; s_a, s_b, s_out [T, H]; s_out may be NULL. */
void ref_merge_two(int num_tokens, int num_heads, int head_dim, const double *o_a, const double *s_a,
                   const double *o_b, const double *s_b, double *out, double *s_out);
/* n-way merge = softmax-weighted sum: o [n, T, H, D], s [n, T, H] -> out [T, H, D], s_out [T, H] or NULL. */
void ref_merge_states(int n, int num_tokens, int num_heads, int head_dim, const double *o, const double *s,
                      double *out, double *s_out);

/* ------------------------------------------------------------------------------------------------
 * MLA, DeepSeek style with absorbed weights (ref_mla.c). One latent "head" per token of width kv_dim;
 * out[t, h] = softmax_j(scale * q[t, h] . c_j) weighted sum of c_j[0 .. v_dim).
 * ------------------------------------------------------------------------------------------------ */
typedef struct ref_mla_problem {
    int num_seqs;                    /* B */
    const int32_t *query_start_loc;  /* [B+1] */
    const int32_t *seq_lens;         /* [B], total KV length incl. the new tokens */
    int num_q_heads, kv_dim, v_dim;  /* v_dim <= kv_dim: V is the first v_dim columns of the latent */
    const double *q;                 /* [T, Hq, kv_dim] */
    const double *kv_cache;          /* [num_blocks, block_size, kv_dim] */
    int num_blocks, block_size;
    const int32_t *block_table;      /* [B, max_blocks_per_seq] */
    int max_blocks_per_seq;
    double scale;                    /* used as given */
    int causal;                      /* dense only: bottom-right causal as for paged attention */
    const int32_t *indices;          /* sparse: [T, topk] absolute key positions, -1 unused; NULL = dense */
    int topk;
    const double *sinks;             /* [Hq] or NULL */
    double *out;                     /* [T, Hq, v_dim], written */
    double *lse;                     /* [T, Hq] or NULL */
} ref_mla_problem;

/* Sparse: each index entry in [0, seq_lens[b]) is one key (an index repeated counts twice, as a
 * kernel iterating the list would); entries < 0 or >= seq_lens[b] are ignored; `causal` is not
 * applied because the index list is the mask. */
void ref_mla(const ref_mla_problem *p);

/* ------------------------------------------------------------------------------------------------
 * Linear attention with state slots (ref_linear.c): the plain per-token recurrences.
 * For both: request b owns tokens qsl[b] .. qsl[b+1]-1. has_initial_state [B] (NULL = every request
 * has one): 0 starts from a zero state instead of reading the slot. A request whose slot is negative
 * is padding: its output rows are written with 0 and no slot is read or written.
 * ------------------------------------------------------------------------------------------------ */

/* Lightning: state_pool [num_slots, H, Dk, Dv]; q, k [T, H, Dk]; v [T, H, Dv]; slopes [H];
 * lambda_h = exp(-slopes[h]); per token S = lambda_h S + k^T v, then o = q S (o includes the current
 * token). out [T, H, Dv]. The final state is written back to slot state_indices[b]. */
void ref_lightning(int num_seqs, const int32_t *query_start_loc, const int32_t *state_indices,
                   const uint8_t *has_initial_state, int num_heads, int head_dim_k, int head_dim_v,
                   const double *slopes, const double *q, const double *k, const double *v,
                   double *state_pool, double *out);

/* Gated delta rule: state_pool [num_slots, HV, Dk, Dv]; q, k [T, H, Dk]; v [T, HV, Dv]; g, beta [T, HV];
 * value head i uses key head i / (HV / H). If use_l2norm, q and k become x / sqrt(sum x^2 + 1e-6);
 * then always q *= scale (the caller passes the Dk^-1/2 default). Per token:
 *   S = e^g S;  v' = beta (v - S^T k);  S = S + k v'^T;  o = S^T q.     out [T, HV, Dv].
 * Without speculative decoding the state comes from and returns to slot state_indices[b].
 * Speculative decoding (spec_state_indices [B, num_spec + 1] and num_accepted [B] both non-NULL):
 * state_indices is ignored; the initial state is read from spec_state_indices[b][num_accepted[b] - 1]
 * (num_accepted[b] < 1 or a negative entry: start from zeros), and after token t (0-based) of the
 * request the state is written to spec_state_indices[b][t] (a negative entry skips that write).
 * The request is padding when spec_state_indices[b][0] < 0. Requires query length <= num_spec + 1. */
void ref_gated_delta(int num_seqs, const int32_t *query_start_loc, const int32_t *state_indices,
                     const uint8_t *has_initial_state, int num_heads, int num_v_heads, int head_dim_k,
                     int head_dim_v, int use_l2norm, double scale, const double *q, const double *k,
                     const double *v, const double *g, const double *beta, double *state_pool,
                     double *out, const int32_t *spec_state_indices, int num_spec,
                     const int32_t *num_accepted);

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_TESTS_REFERENCE_H */
