/* conform_cases12.c - the directed cases of the ABI 1.2 ops: MLA (dense and sparse), lightning, the
 * gated delta rule (with speculative rounds) and state-slot pools. Same builder as conform_cases.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_cases_directed.h"

#define SCALE_192 0.07216878f         /* 1 / sqrt(192): DeepSeek's qk_head_dim, not sqrt(576)           */
#define SCALE_192_YARN 0.13523205f    /* (0.1 ln 40 + 1)^2 / sqrt(192): DeepSeek-V3's YaRN mscale^2    */

static cf_case_t *add_mla(cf_builder_t *b, const char *tag, const char *batch, int hq, int kv_dim, int v_dim, int bs,
                          cf_dtype_t q, cf_dtype_t kv, float scale)
{
    cf_case_t *c = cf_directed_add(b, CF_OP_MLA, tag, batch, hq, 1, kv_dim, v_dim, bs);
    cf_directed_dtypes(c, q, q, kv);
    c->scale = scale;
    return c;
}

void cf_directed_mla(cf_builder_t *b)
{
    cf_case_t *c;
    /* dense: DeepSeek's 576/512 and a small 64/32, causal and not, block sizes 64, 1 and 7 */
    c = add_mla(b, "mla-d576-dense", "1/300 5/40 1/129 12/12", 16, 576, 512, 64, CF_BF16, CF_BF16, SCALE_192_YARN);
    c->lse = 1;
    c = add_mla(b, "mla-d576-h128", "1/200 1/77 1/130", 128, 576, 512, 64, CF_BF16, CF_BF16, SCALE_192);
    c->lse = 1;
    c = add_mla(b, "mla-d576-sinks-f16", "1/90 7/7 1/65", 16, 576, 512, 64, CF_F16, CF_F16, SCALE_192_YARN);
    c->sinks = c->lse = 1;
    c = add_mla(b, "mla-small-noncausal", "4/9 2/12 1/5 6/6", 16, 64, 32, 1, CF_F32, CF_F32, 0.2f);
    c->causal = 0;
    c->lse = c->sinks = 1;
    c = add_mla(b, "mla-small-bs7-strided", CF_MIXED_BATCH, 16, 64, 32, 7, CF_F16, CF_F16, 0.15f);
    c->strided = c->lse = 1;
    c = add_mla(b, "mla-small-out-f32", CF_MIXED_BATCH, 8, 64, 32, 16, CF_BF16, CF_BF16, 0.25f);
    c->out_dtype = CF_F32;
    c = add_mla(b, "mla-small-2-layers", "1/40 3/3 1/17", 16, 64, 32, 64, CF_F32, CF_F32, 0.2f);
    c->plan_reuse = c->use_stream = c->lse = 1;
    c = add_mla(b, "mla-d576-f32-kvbf16", "1/70 9/33", 16, 576, 512, 64, CF_F32, CF_BF16, SCALE_192);
    c->out_dtype = CF_F32;
    c->lse = 1;
    /* the tensor-core kernel's paths: a dense fp8 latent at Hq 128 (two items a token) with a one-key
     * request and contexts off the 32-key tile; a strided Q (element-wise Q load) over 1,000 keys (key
     * splits, the running max moving over many tiles); f16 with a per-block e5m2 latent and two tokens
     * an item (causal rows of different lengths in one item) */
    c = add_mla(b, "mla-d576-e4m3-dense", "1/1 1/300 2/77 1/33", 128, 576, 512, 64, CF_BF16, CF_E4M3, SCALE_192_YARN);
    c->sinks = c->lse = 1;
    c = add_mla(b, "mla-d576-strided-long", "1/1000 1/96 3/40", 64, 576, 512, 64, CF_BF16, CF_BF16, SCALE_192_YARN);
    c->strided = c->lse = 1;
    c = add_mla(b, "mla-d576-e5m2-blk-f16", "4/50 1/129 2/2", 32, 576, 512, 64, CF_F16, CF_E5M2, SCALE_192);
    c->per_block_scale = c->lse = 1;
    /* the wgmma kernel's paths (compute capability 9.0, a 16-bit latent): 64-key tiles spanning four
     * 16-key blocks, contexts of exactly one tile, one tile and a key, three tokens over two tiles (two
     * tokens an item at Hq 32: causal rows of different lengths), 2,100 keys (splits, many tiles) */
    c = add_mla(b, "mla-d576-wg-f16-bs16", "1/64 1/65 3/128 1/2100", 32, 576, 512, 16, CF_F16, CF_F16, SCALE_192_YARN);
    c->sinks = c->lse = 1;
    /* 64-key tiles over two 32-key blocks, and 128-key blocks holding two tiles (the second 64 rows
     * in), contexts that cut the last tile; strided Q / out / LSE */
    c = add_mla(b, "mla-d576-wg-bs32", "1/96 1/257 2/64", 16, 576, 512, 32, CF_BF16, CF_BF16, SCALE_192_YARN);
    c->lse = 1;
    c = add_mla(b, "mla-d576-wg-bs128", "1/300 1/128 3/190 1/1100", 32, 576, 512, 128, CF_BF16, CF_BF16, SCALE_192);
    c->strided = c->lse = 1;
    /* sharp scores (scale 0.5: a score's spread ~17 log2 units), so a row's running max keeps moving by more than
     * the lazy threshold (8) after its first tile: the wgmma kernel's speculative first part of P (formed against
     * the running max) is formed again there (SPEC's second path); 2,100 keys: splits, many tiles */
    c = add_mla(b, "mla-d576-wg-sharp", "1/2100 2/300 1/65", 64, 576, 512, 64, CF_BF16, CF_BF16, 0.5f);
    c->lse = 1;
    /* the wgmma kernel's fp8 latent (raw codes converted to 16 bits in shared memory, the row scale on the
     * scores and P): e4m3 with f16 queries over 16-key blocks with per-block scales (a tile's rows from four
     * blocks of different scales), contexts of one tile, one tile and a key, 2,100 keys (splits); e5m2 with
     * bf16 queries at Hq 128 (two items a token), strided Q / out (element-wise Q, the unstaged output) */
    c = add_mla(b, "mla-d576-wg-e4m3-f16-bs16", "1/64 1/65 3/128 1/2100", 32, 576, 512, 16, CF_F16, CF_E4M3, SCALE_192_YARN);
    c->per_block_scale = c->sinks = c->lse = 1;
    c = add_mla(b, "mla-d576-wg-e5m2-bf16", "1/1 1/700 2/77", 128, 576, 512, 64, CF_BF16, CF_E5M2, SCALE_192);
    c->strided = c->lse = 1;

    /* sparse: top-k 8..64 over mixed batches, -1 entries, duplicates, positions past seq_len */
    c = add_mla(b, "mla-sparse-d576", "1/300 4/120 1/40 2/2", 16, 576, 512, 64, CF_BF16, CF_BF16, SCALE_192_YARN);
    c->topk = 64;
    c->sparse_invalid = c->lse = 1;
    c = add_mla(b, "mla-sparse-h128", "1/260 1/64", 128, 576, 512, 64, CF_BF16, CF_BF16, SCALE_192_YARN);
    c->topk = 32;
    c->causal = 0;
    c->lse = 1;
    c = add_mla(b, "mla-sparse-host", "1/33 5/21 1/70 3/3", 16, 64, 32, 1, CF_F32, CF_F32, 0.2f);
    c->topk = 8;
    c->sparse_host = c->sparse_invalid = c->lse = 1; /* -1 and duplicates only: the runtime checks the rest */
    c = add_mla(b, "mla-sparse-causal-flag", "2/50 1/9 4/4", 16, 64, 32, 7, CF_F16, CF_F16, 0.2f);
    c->topk = 24;
    c->causal = 1; /* the indices are the whole mask: causal must not be applied */
    c->sparse_invalid = c->sinks = c->lse = 1;
    c = add_mla(b, "mla-sparse-e4m3-tensor", "1/200 3/50 1/64", 16, 576, 512, 64, CF_BF16, CF_E4M3, SCALE_192_YARN);
    c->topk = 32;
    c->causal = 0;
    c->sparse_invalid = c->lse = 1;
    c = add_mla(b, "mla-sparse-e4m3-blk", "1/150 2/90", 16, 576, 512, 64, CF_BF16, CF_E4M3, SCALE_192);
    c->topk = 16;
    c->per_block_scale = c->sparse_host = c->lse = 1;
    c = add_mla(b, "mla-sparse-e5m2-blk", "1/120 4/30 1/7", 16, 576, 512, 64, CF_F16, CF_E5M2, SCALE_192_YARN);
    c->topk = 48;
    c->per_block_scale = c->sparse_invalid = c->sinks = c->lse = 1;
    /* sparse over an fp8 latent in 16-key blocks with per-block scales (the wgmma kernel's fp8 path on sm_90):
     * index lists of 96 entries (two tiles) with -1 and past-the-end entries, e4m3 with f16 queries */
    c = add_mla(b, "mla-sparse-e4m3-f16-bs16", "1/400 3/120 1/50", 16, 576, 512, 16, CF_F16, CF_E4M3, SCALE_192_YARN);
    c->topk = 96;
    c->per_block_scale = c->sparse_invalid = c->lse = 1;
    c = add_mla(b, "mla-sparse-e5m2-small", "1/80 6/20", 16, 64, 32, 7, CF_F32, CF_E5M2, 0.2f);
    c->out_dtype = CF_F32;
    c->topk = 40;
    c->causal = 0;
    c->sparse_invalid = c->strided = c->lse = 1;
    c = add_mla(b, "mla-sparse-2-layers", "1/60 3/30", 16, 64, 32, 16, CF_BF16, CF_E4M3, 0.2f);
    c->topk = 12;
    c->per_block_scale = c->sparse_invalid = c->plan_reuse = c->use_stream = c->lse = 1;

    /* at an RBLN NPU's block sizes (the cases above use blocks under its ranges, and LSE, which its kernels do not
     * return): block tables of exactly max_model_len / block_size columns, one fp8 scale per tensor; flash over
     * partitions with a prefill across the edge at 1024, naive with sinks, non-causal over 2048-key partitions,
     * sparse over fp8 latents, and a dense fp8 latent, which an NPU refuses (fp8 is sparse MLA's only) */
    c = add_mla(b, "mla-blk1024-dense", "1/2048 1/7 60/1060", 16, 576, 512, 1024, CF_BF16, CF_BF16, SCALE_192_YARN);
    c->max_model_len = 2048;
    c = add_mla(b, "mla-blk1024-naive-sinks", "1/1024 40/40", 16, 576, 512, 1024, CF_F16, CF_F16, SCALE_192);
    c->max_model_len = 1024;
    c->sinks = 1;
    c = add_mla(b, "mla-blk512-dense-small", "1/1500 70/600 1/1", 16, 64, 32, 512, CF_F16, CF_F16, 0.2f);
    c->max_model_len = 2048;
    c = add_mla(b, "mla-blk2048-noncausal-f32", "40/3000", 8, 64, 32, 2048, CF_F32, CF_F32, 0.2f);
    c->max_model_len = 4096;
    c->causal = 0;
    c = add_mla(b, "mla-blk1024-sparse-e4m3", "1/2000 3/900 1/40", 16, 576, 512, 1024, CF_BF16, CF_E4M3, SCALE_192_YARN);
    c->max_model_len = 2048;
    c->topk = 64;
    c->sparse_invalid = 1;
    c = add_mla(b, "mla-blk1024-sparse-host-e5m2", "1/1500 5/300", 16, 576, 512, 1024, CF_F16, CF_E5M2, SCALE_192);
    c->max_model_len = 2048;
    c->topk = 32;
    c->sparse_host = 1;
    c = add_mla(b, "mla-blk1024-e4m3-dense", "1/1500 20/20", 16, 576, 512, 1024, CF_BF16, CF_E4M3, SCALE_192);
    c->max_model_len = 2048;
}

/* Rounds of a state op, "|"-separated; a round starting with '!' is speculative. Each request is
 * "<q_len>p" (a padding row) or "<q_len>s<seq>[i][a<accepted>]" (i: it has an initial state). */
static void state_rounds(cf_case_t *c, const char *text)
{
    const char *p = text;
    c->num_rounds = 0;
    while (*p && c->num_rounds < CF_MAX_ROUNDS) {
        cf_state_round_t *r = &c->rounds[c->num_rounds++];
        memset(r, 0, sizeof *r);
        while (*p == ' ') p++;
        if (*p == '!') {
            r->spec = 1;
            p++;
        }
        while (*p && *p != '|') {
            char *end = NULL;
            while (*p == ' ') p++;
            if (!*p || *p == '|') break;
            const long len = strtol(p, &end, 10);
            if (end == p || r->num_reqs == CF_MAX_SEQS) break;
            p = end;
            const int b = r->num_reqs++;
            r->q_lens[b] = (int)len;
            r->seq[b] = -1;
            r->accepted[b] = 1;
            if (*p == 'p') {
                p++;
                continue;
            }
            if (*p == 's') {
                r->seq[b] = (int)strtol(p + 1, &end, 10);
                p = end;
            }
            if (*p == 'i') {
                r->has_init[b] = 1;
                p++;
            }
            if (*p == 'a') {
                r->accepted[b] = (int)strtol(p + 1, &end, 10);
                p = end;
            }
        }
        while (*p && *p != '|') p++;
        if (*p == '|') p++;
    }
}

static cf_case_t *add_state(cf_builder_t *b, cf_op_t op, const char *tag, const char *rounds, int h, int hv, int dk,
                            int dv, cf_dtype_t dt)
{
    cf_case_t *c = cf_directed_add(b, op, tag, "", h, h, dk, dv, 16);
    c->num_v_heads = hv;
    cf_directed_dtypes(c, dt, dt, CF_F32);
    state_rounds(c, rounds);
    return c;
}

void cf_directed_lightning(cf_builder_t *b)
{
    const cf_op_t L = CF_OP_LIGHTNING;
    cf_case_t *c;
    /* chunk boundaries, then a decode round continuing from the written states */
    c = add_state(b, L, "lin-d64-chunks", "1s0 63s1 64s2i 65s3 200s4i | 1s0i 1s1i 1s2i 1s3i 1s4i", 4, 4, 64, 64, CF_F32);
    c->extra_slots = 2;
    c = add_state(b, L, "lin-d128v64-long", "1000s0 3s1i 1p | 1s0i 17s1i 1p", 2, 2, 128, 64, CF_BF16);
    c = add_state(b, L, "lin-d32v128-padding", "129s0 1p 40s1i 2p", 8, 8, 32, 128, CF_F16);
    c->slope_max = 1.0;
    c->extra_slots = 3;
    c = add_state(b, L, "lin-long-f32", "997s0 1s1i | 1s1i 1s0i", 1, 1, 64, 64, CF_F32);
    c = add_state(b, L, "lin-mixed-out-f32", "1s0i 33s1 1s2i 1p 64s3i 5s4 1s5i", 3, 3, 64, 64, CF_F16);
    c->out_dtype = CF_F32;
    c = add_state(b, L, "lin-zero-slope", "300s0 1s1i | 2s0i 1s1i", 2, 2, 64, 64, CF_F32);
    c->zero_slope = 1;
    c->slope_max = 0.5;
    c = add_state(b, L, "lin-steep-decay", "150s0 70s1i", 4, 4, 64, 64, CF_F32);
    c->slope_max = 2.0;
    c = add_state(b, L, "lin-3-rounds-stream", "64s0 65s1 | 64s0i 1s1i | 1s0i 1s1i 1p", 2, 2, 128, 128, CF_F32);
    c->use_stream = 1;
    c = add_state(b, L, "lin-decode-16",
                  "1s0i 1s1i 1s2i 1s3i 1s4i 1s5i 1s6i 1s7i 1s8i 1s9i 1s10i 1s11i 1s12i 1s13i 1s14i 1s15i", 8, 8, 64,
                  64, CF_BF16);
    c = add_state(b, L, "lin-h1-restart", "40s0i 9s1 | 5s0 1s1i", 1, 1, 32, 32, CF_F32); /* round 1 restarts seq 0 */
    /* requests without tokens: with a state it stays; without one the slot becomes the zero state */
    c = add_state(b, L, "lin-empty-requests", "0s0 0s1i 5s2 1p | 0s2i 1s0i 0s1", 2, 2, 64, 32, CF_F32);
    /* the long-prefill equivalence of issue 1.2: one call == 64 chunks of 64 == 4096 decode steps */
    c = add_state(b, L, "lin-blockwise-4096", "4096s0", 2, 2, 64, 64, CF_F32);
    c->blockwise = 1;
    /* a decode round (one token per request) at Dk 128 with a partial column slice (Dv 48), padding and
     * a request without a state */
    c = add_state(b, L, "lin-decode-d128v48", "7s0 3s1i | 1s0i 1p 1s1i 1s2", 4, 4, 128, 48, CF_BF16);
    c->extra_slots = 1;
    /* decode rounds of 16 requests x 24 heads x 4 column slices (1536 blocks of the decode kernel's
       1-D grid), a partial last slice (Dv 112), padding, fresh states then written ones */
    c = add_state(b, L, "lin-decode-many",
                  "1s0 1s1 1s2 1s3 1s4 1s5 1s6 1s7 1s8 1s9 1s10 1s11 1s12 1s13 1s14 1p | "
                  "1s0i 1s1i 1s2i 1s3i 1s4i 1p 1s6i 1s7i 1s8i 1s9i 1s10i 1s11i 1s12i 1s13i 1s14i 1s15",
                  24, 24, 128, 112, CF_BF16);
    c->extra_slots = 1;
}

void cf_directed_gated_delta(cf_builder_t *b)
{
    const cf_op_t G = CF_OP_GATED_DELTA;
    cf_case_t *c;
    c = add_state(b, G, "gdn-d128-ratio1", "65s0 1s1i 200s2 | 1s0i 1s1i 1s2i", 4, 4, 128, 128, CF_F32);
    c->use_l2norm = 1;
    c = add_state(b, G, "gdn-ratio2-bf16", "1s0i 33s1 1p 7s2i | 1s1i 3s2i 1p", 2, 4, 64, 64, CF_BF16);
    c->gb_dtype = CF_BF16;
    c->use_l2norm = 1;
    c->scale = 0.2f;
    c = add_state(b, G, "gdn-ratio4-f16-nonorm", "40s0 1p 1s1i 2p", 1, 4, 128, 64, CF_F16);
    c->extra_slots = 2;
    c = add_state(b, G, "gdn-nonorm-scale", "1s0 1s1i 17s2 1p 100s3i", 4, 8, 64, 64, CF_F32);
    c->scale = 0.3f;
    c = add_state(b, G, "gdn-long-prefill", "300s0 | 1s0i 2s1", 2, 2, 128, 128, CF_F32);
    c->use_l2norm = 1;
    c = add_state(b, G, "gdn-stream-bf16-out-f32", "5s0 1s1i | 1s0i 1s1i", 2, 4, 64, 64, CF_BF16);
    c->out_dtype = CF_F32;
    c->use_l2norm = c->use_stream = 1;
    /* speculative decoding: 1-3 draft tokens, every num_accepted, after a prefill round */
    c = add_state(b, G, "gdn-spec3", "20s0 17s1 1s2i | !4s0ia1 2s1ia2 1p 3s2ia3 | !4s0ia4 1s1ia1 2s2ia2", 2, 4, 64, 64,
                  CF_F32);
    c->num_spec = 3;
    c->use_l2norm = 1;
    c->extra_slots = 2;
    c = add_state(b, G, "gdn-spec1-f16", "!2s0ia1 2s1ia2 1s2a1 1p", 2, 2, 128, 128, CF_F16);
    c->gb_dtype = CF_F16;
    c->num_spec = 1;
    c->use_l2norm = 1;
    c = add_state(b, G, "gdn-spec2-bf16", "30s0 5s1i | !3s0ia3 1s1ia2 2s2a1", 1, 2, 128, 64, CF_BF16);
    c->gb_dtype = CF_BF16;
    c->num_spec = 2;
    c->use_l2norm = 1;
    c = add_state(b, G, "gdn-empty-requests", "0s0 0s1i 5s2 1p | !0s2ia1 2s1ia2 0s0a2", 2, 4, 64, 32, CF_F32);
    c->num_spec = 1;
    c->use_l2norm = 1;
    c = add_state(b, G, "gdn-spec3-nonorm", "!4s0ia2 3s1ia4 1p 4s2a3 2s3ia1", 4, 4, 64, 64, CF_F32);
    c->num_spec = 3;
    c->scale = 0.25f;
    /* the cuda GDN decode kernel (one token per request): Dk 128 without the norm, a partial column
     * slice, padding and a fresh state in the decode round; then Dk 100 (rows past Dk in the last row
     * group) */
    c = add_state(b, G, "gdn-decode-d128-nonorm", "9s0 2s1i | 1s0i 1s1i 1p 1s2", 2, 4, 128, 96, CF_F16);
    c->gb_dtype = CF_F16;
    c->scale = 0.15f;
    c->extra_slots = 1;
    c = add_state(b, G, "gdn-decode-d100", "1s0 1s1i 1p 1s2i", 1, 2, 100, 64, CF_F32);
    c->use_l2norm = 1;
    /* decode rounds of 16 requests x 32 value heads (8 key heads) x 4 slices = 2048 blocks, Dk 100 */
    c = add_state(b, G, "gdn-decode-many",
                  "1s0 1s1 1s2 1s3 1s4 1s5 1s6 1s7 1s8 1s9 1s10 1s11 1s12 1s13 1s14 1p | "
                  "1s0i 1s1i 1s2i 1s3i 1s4i 1p 1s6i 1s7i 1s8i 1s9i 1s10i 1s11i 1s12i 1s13i 1s14i 1s15",
                  8, 32, 100, 128, CF_F16);
    c->use_l2norm = 1;
    c->extra_slots = 1;
}

void cf_directed_state_pool(cf_builder_t *b)
{
    cf_case_t *c;
    c = cf_directed_add(b, CF_OP_STATE_POOL, "pool-f32", "", 4, 4, 64, 32, 16);
    c->num_tokens = 9;
    c = cf_directed_add(b, CF_OP_STATE_POOL, "pool-bf16-2d-stream", "", 1, 1, 16, 8, 16);
    c->q_dtype = CF_BF16;
    c->slot_ndim = 2;
    c->num_tokens = 6;
    c->use_stream = 1;
    c = cf_directed_add(b, CF_OP_STATE_POOL, "pool-f16-1d", "", 1, 1, 1, 100, 16);
    c->q_dtype = CF_F16;
    c->slot_ndim = 1;
    c->num_tokens = 5;
}
