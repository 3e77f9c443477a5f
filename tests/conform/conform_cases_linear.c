/* conform_cases_linear.c - the directed cases of the recurrent ops, run in rounds of plan + run over a
 * state pool: lightning attention and the gated delta rule (with speculative rounds), and the state-slot
 * API on its own. One row per case (cf_row_t); batch holds the rounds. */
#include "conform_cases_directed.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers" /* a row names only the options it sets */

static const cf_row_t LIGHTNING[] = {
    /* chunk boundaries, then a decode round continuing from the written states */
    {CF_OP_LIGHTNING, "lin-d64-chunks", "1s0 63s1 64s2i 65s3 200s4i | 1s0i 1s1i 1s2i 1s3i 1s4i", 4, 4, 64, 64, 16,
     CF_F32, CF_F32, CF_F32, 0, .extra_slots = 2},
    {CF_OP_LIGHTNING, "lin-d128v64-long", "1000s0 3s1i 1p | 1s0i 17s1i 1p", 2, 2, 128, 64, 16,
     CF_BF16, CF_BF16, CF_F32, 0},
    {CF_OP_LIGHTNING, "lin-d32v128-padding", "129s0 1p 40s1i 2p", 8, 8, 32, 128, 16, CF_F16, CF_F16, CF_F32, 0,
     .extra_slots = 3, .slope_max = 1.0},
    {CF_OP_LIGHTNING, "lin-long-f32", "997s0 1s1i | 1s1i 1s0i", 1, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, 0},
    {CF_OP_LIGHTNING, "lin-mixed-out-f32", "1s0i 33s1 1s2i 1p 64s3i 5s4 1s5i", 3, 3, 64, 64, 16,
     CF_F16, CF_F32, CF_F32, 0},
    {CF_OP_LIGHTNING, "lin-zero-slope", "300s0 1s1i | 2s0i 1s1i", 2, 2, 64, 64, 16,
     CF_F32, CF_F32, CF_F32, CF_ZERO_SLOPE, .slope_max = 0.5},
    {CF_OP_LIGHTNING, "lin-steep-decay", "150s0 70s1i", 4, 4, 64, 64, 16, CF_F32, CF_F32, CF_F32, 0, .slope_max = 2.0},
    {CF_OP_LIGHTNING, "lin-3-rounds-stream", "64s0 65s1 | 64s0i 1s1i | 1s0i 1s1i 1p", 2, 2, 128, 128, 16,
     CF_F32, CF_F32, CF_F32, CF_STREAM},
    {CF_OP_LIGHTNING, "lin-decode-16",
     "1s0i 1s1i 1s2i 1s3i 1s4i 1s5i 1s6i 1s7i 1s8i 1s9i 1s10i 1s11i 1s12i 1s13i 1s14i 1s15i", 8, 8, 64, 64, 16,
     CF_BF16, CF_BF16, CF_F32, 0},
    /* round 1 restarts seq 0 */
    {CF_OP_LIGHTNING, "lin-h1-restart", "40s0i 9s1 | 5s0 1s1i", 1, 1, 32, 32, 16, CF_F32, CF_F32, CF_F32, 0},
    /* requests without tokens: with a state it stays; without one the slot becomes the zero state */
    {CF_OP_LIGHTNING, "lin-empty-requests", "0s0 0s1i 5s2 1p | 0s2i 1s0i 0s1", 2, 2, 64, 32, 16,
     CF_F32, CF_F32, CF_F32, 0},
    /* the long-prefill equivalence: one call == 64 chunks of 64 == 4096 decode steps */
    {CF_OP_LIGHTNING, "lin-blockwise-4096", "4096s0", 2, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_BLOCKWISE},
    /* a decode round (one token per request) at Dk 128 with a partial column slice (Dv 48), padding and
     * a request without a state */
    {CF_OP_LIGHTNING, "lin-decode-d128v48", "7s0 3s1i | 1s0i 1p 1s1i 1s2", 4, 4, 128, 48, 16,
     CF_BF16, CF_BF16, CF_F32, 0},
    /* decode rounds of 16 requests x 24 heads x 4 column slices (1536 blocks of the decode kernel's
     * 1-D grid), a partial last slice (Dv 112), padding, fresh states then written ones */
    {CF_OP_LIGHTNING, "lin-decode-many",
     "1s0 1s1 1s2 1s3 1s4 1s5 1s6 1s7 1s8 1s9 1s10 1s11 1s12 1s13 1s14 1p | "
     "1s0i 1s1i 1s2i 1s3i 1s4i 1p 1s6i 1s7i 1s8i 1s9i 1s10i 1s11i 1s12i 1s13i 1s14i 1s15", 24, 24, 128, 112, 16,
     CF_BF16, CF_BF16, CF_F32, 0},
};
const cf_table_t cf_cases_lightning = CF_TABLE(LIGHTNING);

static const cf_row_t GATED_DELTA[] = {
    {CF_OP_GATED_DELTA, "gdn-d128-ratio1", "65s0 1s1i 200s2 | 1s0i 1s1i 1s2i", 4, 4, 128, 128, 16,
     CF_F32, CF_F32, CF_F32, CF_L2NORM},
    {CF_OP_GATED_DELTA, "gdn-ratio2-bf16", "1s0i 33s1 1p 7s2i | 1s1i 3s2i 1p", 2, 4, 64, 64, 16,
     CF_BF16, CF_BF16, CF_F32, CF_L2NORM, .scale = 0.2f, .gb = CF_BF16},
    {CF_OP_GATED_DELTA, "gdn-ratio4-f16-nonorm", "40s0 1p 1s1i 2p", 1, 4, 128, 64, 16, CF_F16, CF_F16, CF_F32, 0,
     .extra_slots = 2},
    {CF_OP_GATED_DELTA, "gdn-nonorm-scale", "1s0 1s1i 17s2 1p 100s3i", 4, 8, 64, 64, 16, CF_F32, CF_F32, CF_F32, 0,
     .scale = 0.3f},
    {CF_OP_GATED_DELTA, "gdn-long-prefill", "300s0 | 1s0i 2s1", 2, 2, 128, 128, 16, CF_F32, CF_F32, CF_F32, CF_L2NORM},
    {CF_OP_GATED_DELTA, "gdn-stream-bf16-out-f32", "5s0 1s1i | 1s0i 1s1i", 2, 4, 64, 64, 16,
     CF_BF16, CF_F32, CF_F32, CF_STREAM | CF_L2NORM},
    /* speculative decoding: 1-3 draft tokens, every num_accepted, after a prefill round */
    {CF_OP_GATED_DELTA, "gdn-spec3", "20s0 17s1 1s2i | !4s0ia1 2s1ia2 1p 3s2ia3 | !4s0ia4 1s1ia1 2s2ia2",
     2, 4, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_L2NORM, .spec = 3, .extra_slots = 2},
    {CF_OP_GATED_DELTA, "gdn-spec1-f16", "!2s0ia1 2s1ia2 1s2a1 1p", 2, 2, 128, 128, 16,
     CF_F16, CF_F16, CF_F32, CF_L2NORM, .spec = 1, .gb = CF_F16},
    {CF_OP_GATED_DELTA, "gdn-spec2-bf16", "30s0 5s1i | !3s0ia3 1s1ia2 2s2a1", 1, 2, 128, 64, 16,
     CF_BF16, CF_BF16, CF_F32, CF_L2NORM, .spec = 2, .gb = CF_BF16},
    {CF_OP_GATED_DELTA, "gdn-empty-requests", "0s0 0s1i 5s2 1p | !0s2ia1 2s1ia2 0s0a2", 2, 4, 64, 32, 16,
     CF_F32, CF_F32, CF_F32, CF_L2NORM, .spec = 1},
    {CF_OP_GATED_DELTA, "gdn-spec3-nonorm", "!4s0ia2 3s1ia4 1p 4s2a3 2s3ia1", 4, 4, 64, 64, 16,
     CF_F32, CF_F32, CF_F32, 0, .scale = 0.25f, .spec = 3},
    /* the cuda GDN decode kernel (one token per request): Dk 128 without the norm, a partial column
     * slice, padding and a fresh state in the decode round; then Dk 100 (rows past Dk in the last row
     * group) */
    {CF_OP_GATED_DELTA, "gdn-decode-d128-nonorm", "9s0 2s1i | 1s0i 1s1i 1p 1s2", 2, 4, 128, 96, 16,
     CF_F16, CF_F16, CF_F32, 0, .scale = 0.15f, .gb = CF_F16},
    {CF_OP_GATED_DELTA, "gdn-decode-d100", "1s0 1s1i 1p 1s2i", 1, 2, 100, 64, 16, CF_F32, CF_F32, CF_F32, CF_L2NORM},
    /* decode rounds of 16 requests x 32 value heads (8 key heads) x 4 slices = 2048 blocks, Dk 100 */
    {CF_OP_GATED_DELTA, "gdn-decode-many",
     "1s0 1s1 1s2 1s3 1s4 1s5 1s6 1s7 1s8 1s9 1s10 1s11 1s12 1s13 1s14 1p | "
     "1s0i 1s1i 1s2i 1s3i 1s4i 1p 1s6i 1s7i 1s8i 1s9i 1s10i 1s11i 1s12i 1s13i 1s14i 1s15", 8, 32, 100, 128, 16,
     CF_F16, CF_F16, CF_F32, CF_L2NORM},
};
const cf_table_t cf_cases_gated_delta = CF_TABLE(GATED_DELTA);

static const cf_row_t STATE_POOL[] = {
    {CF_OP_STATE_POOL, "pool-f32", "", 4, 4, 64, 32, 16, CF_F32, CF_F32, CF_F32, 0, .tokens = 9},
    {CF_OP_STATE_POOL, "pool-bf16-2d-stream", "", 1, 1, 16, 8, 16, CF_BF16, CF_F32, CF_F32, CF_STREAM,
     .slot_ndim = 2, .tokens = 6},
    {CF_OP_STATE_POOL, "pool-f16-1d", "", 1, 1, 1, 100, 16, CF_F16, CF_F32, CF_F32, 0, .slot_ndim = 1, .tokens = 5},
};
const cf_table_t cf_cases_state_pool = CF_TABLE(STATE_POOL);
