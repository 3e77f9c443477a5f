/* conform_cases_paged.c - the directed cases of the ops over a paged KV cache: attention, cascade,
 * kv_write, merge, and the large-block shapes of a Rebellions NPU. One row per case (cf_row_t). */
#include "conform_cases_directed.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers" /* a row names only the options it sets */

#define MIXED CF_MIXED_BATCH

static const cf_row_t ATTENTION[] = {
    /* head sizes 32 - 256 and Dqk != Dv, with the GQA ratios and block sizes spread over them */
    {CF_OP_ATTENTION, "attn-d32", MIXED, 8, 2, 32, 32, 16, CF_F32, CF_F32, CF_F32, CF_LSE},
    {CF_OP_ATTENTION, "attn-d64-mha", MIXED, 4, 4, 64, 64, 32, CF_F16, CF_F16, CF_F16, CF_LSE},
    {CF_OP_ATTENTION, "attn-d80-mqa", MIXED, 8, 1, 80, 80, 16, CF_BF16, CF_BF16, CF_BF16, 0},
    {CF_OP_ATTENTION, "attn-d96", MIXED, 8, 2, 96, 96, 64, CF_F32, CF_F32, CF_F16, CF_LSE},
    {CF_OP_ATTENTION, "attn-d112-bs7", MIXED, 4, 1, 112, 112, 7, CF_F16, CF_F32, CF_F16, 0},
    {CF_OP_ATTENTION, "attn-d128-gqa8", MIXED, 16, 2, 128, 128, 16, CF_BF16, CF_BF16, CF_BF16, CF_LSE},
    {CF_OP_ATTENTION, "attn-d192-bs128", MIXED, 4, 4, 192, 192, 128, CF_F32, CF_F32, CF_F32, 0},
    {CF_OP_ATTENTION, "attn-d256-bs48", MIXED, 8, 1, 256, 256, 48, CF_F16, CF_F16, CF_F16, CF_LSE},
    {CF_OP_ATTENTION, "attn-d192v128", MIXED, 4, 4, 192, 128, 16, CF_F16, CF_F16, CF_F16, CF_LSE},
    {CF_OP_ATTENTION, "attn-d96v64-bs1", "1/9 4/6 2/13", 4, 1, 96, 64, 1, CF_F32, CF_F32, CF_F32, CF_LSE},
    {CF_OP_ATTENTION, "attn-bs1", MIXED, 4, 1, 64, 64, 1, CF_BF16, CF_F32, CF_F32, 0},
    /* empty rows: no kept key -> out 0, LSE -inf, never NaN */
    {CF_OP_ATTENTION, "attn-empty-cross", "3/0 2/9 4/0", 4, 2, 64, 64, 16,
     CF_F32, CF_F32, CF_F32, CF_LSE | CF_NONCAUSAL},
    {CF_OP_ATTENTION, "attn-empty-qlen0", "0/17 1/9 0/4 3/3", 4, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE},
    /* queries at negative positions; only p_k == p_q is kept and does not exist */
    {CF_OP_ATTENTION, "attn-empty-window", "6/3 2/8", 4, 1, 64, 64, 7, CF_F32, CF_F32, CF_F32, CF_LSE | CF_NONCAUSAL,
     CF_WINDOW(0, 0)},
    {CF_OP_ATTENTION, "attn-empty-batch", "0/5 0/0", 4, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE},
    /* window edges (inclusive counts): 0, exactly a block, exactly the distance to key 0, unlimited */
    {CF_OP_ATTENTION, "attn-win0", MIXED, 4, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE, CF_WINDOW(0, -1)},
    {CF_OP_ATTENTION, "attn-win-block", "1/40 24/40 1/17", 4, 2, 64, 64, 16, CF_F16, CF_F16, CF_F16, 0,
     CF_WINDOW(16, -1)},
    /* the last query reaches key 0 exactly, earlier ones less */
    {CF_OP_ATTENTION, "attn-win-exact", "1/33 33/33", 4, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE,
     CF_WINDOW(32, -1)},
    {CF_OP_ATTENTION, "attn-win-both", "5/20 1/9 7/7", 4, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_NONCAUSAL,
     CF_WINDOW(3, 2)},
    /* non-causal with window_right 0 is causal */
    {CF_OP_ATTENTION, "attn-win-right0", MIXED, 4, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_NONCAUSAL,
     CF_WINDOW(-1, 0)},
    {CF_OP_ATTENTION, "attn-win-left0-right", "4/12 9/9", 4, 1, 64, 64, 16, CF_BF16, CF_BF16, CF_BF16, CF_NONCAUSAL,
     CF_WINDOW(0, 5)},
    /* softcap, ALiBi, sinks, scale */
    {CF_OP_ATTENTION, "attn-softcap", MIXED, 8, 2, 128, 128, 16, CF_F16, CF_F16, CF_F16, CF_LSE, .softcap = 2.0f},
    /* Gemma 2: softcap 50 with a sliding window */
    {CF_OP_ATTENTION, "attn-softcap-window", "1/90 30/60 1/31", 8, 4, 256, 256, 16, CF_BF16, CF_BF16, CF_BF16, 0,
     CF_WINDOW(31, -1), .softcap = 50.0f},
    {CF_OP_ATTENTION, "attn-alibi", MIXED, 8, 8, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_ALIBI},
    {CF_OP_ATTENTION, "attn-alibi-noncausal", "4/9 3/0 2/12", 4, 2, 128, 128, 32,
     CF_F16, CF_F32, CF_F16, CF_ALIBI | CF_NONCAUSAL},
    /* GPT-OSS: sliding window 128 with sinks */
    {CF_OP_ATTENTION, "attn-sinks-gptoss", "1/200 16/140 1/129 40/40", 8, 1, 64, 64, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS, CF_WINDOW(127, -1)},
    {CF_OP_ATTENTION, "attn-sinks", MIXED, 4, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_SINKS},
    /* a sink with no key: the row is still empty (out 0, LSE -inf) */
    {CF_OP_ATTENTION, "attn-sinks-empty", "3/0 1/5", 4, 2, 64, 64, 16,
     CF_F32, CF_F32, CF_F32, CF_LSE | CF_SINKS | CF_NONCAUSAL},
    {CF_OP_ATTENTION, "attn-scale", MIXED, 4, 1, 128, 128, 16, CF_F32, CF_F32, CF_F32, CF_LSE, .scale = 0.3f},
    {CF_OP_ATTENTION, "attn-all-options", "1/50 6/30 2/2", 8, 2, 64, 64, 16,
     CF_F16, CF_F32, CF_E4M3, CF_LSE | CF_SINKS | CF_ALIBI | CF_BLOCK_SCALE,
     CF_WINDOW(20, -1), .scale = 0.2f, .softcap = 4.0f},
    /* cache dtypes and scale granularities, q/out dtypes */
    {CF_OP_ATTENTION, "attn-e4m3", MIXED, 8, 2, 128, 128, 16, CF_F16, CF_F16, CF_E4M3, CF_LSE},
    {CF_OP_ATTENTION, "attn-e4m3-blk-hnd", MIXED, 8, 2, 128, 128, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_HND | CF_BLOCK_SCALE},
    {CF_OP_ATTENTION, "attn-e5m2", MIXED, 4, 1, 64, 64, 32, CF_F32, CF_F32, CF_E5M2, CF_LSE},
    {CF_OP_ATTENTION, "attn-e5m2-blk", MIXED, 4, 2, 96, 96, 7, CF_F16, CF_F32, CF_E5M2, CF_BLOCK_SCALE},
    {CF_OP_ATTENTION, "attn-qf32-kvbf16", MIXED, 4, 2, 64, 64, 16, CF_F32, CF_F32, CF_BF16, 0},
    {CF_OP_ATTENTION, "attn-qbf16-kvf32", MIXED, 4, 2, 64, 64, 16, CF_BF16, CF_F32, CF_F32, 0},
    /* layouts and strides */
    {CF_OP_ATTENTION, "attn-hnd", MIXED, 8, 2, 64, 64, 32, CF_F16, CF_F16, CF_F16, CF_LSE | CF_HND},
    {CF_OP_ATTENTION, "attn-interleaved", MIXED, 4, 2, 128, 128, 16, CF_F16, CF_F16, CF_F16, CF_INTERLEAVED},
    {CF_OP_ATTENTION, "attn-interleaved-hnd", MIXED, 4, 1, 192, 128, 16,
     CF_BF16, CF_F32, CF_BF16, CF_HND | CF_INTERLEAVED},
    {CF_OP_ATTENTION, "attn-strided", MIXED, 8, 2, 64, 64, 16, CF_F16, CF_F16, CF_F16, CF_LSE | CF_STRIDED},
    {CF_OP_ATTENTION, "attn-strided-e4m3", "4/4 1/19", 4, 4, 128, 128, 16,
     CF_BF16, CF_F32, CF_E4M3, CF_LSE | CF_SINKS | CF_STRIDED},
    /* caches written with the reference quantiser: attention judged without kv_write */
    {CF_OP_ATTENTION, "attn-direct", MIXED, 4, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_DIRECT_WRITE},
    {CF_OP_ATTENTION, "attn-direct-e4m3-blk", MIXED, 4, 2, 128, 128, 16,
     CF_F16, CF_F16, CF_E4M3, CF_BLOCK_SCALE | CF_DIRECT_WRITE},
    {CF_OP_ATTENTION, "attn-direct-e5m2-hnd", MIXED, 4, 1, 64, 64, 48,
     CF_F32, CF_F32, CF_E5M2, CF_HND | CF_DIRECT_WRITE},
    /* long sequences and a wide mixed batch */
    {CF_OP_ATTENTION, "attn-long-prefill", "2048/2048", 2, 1, 64, 64, 16, CF_F16, CF_F16, CF_F16, CF_LSE},
    {CF_OP_ATTENTION, "attn-long-decode", "1/2000 1/1537 1/129", 8, 1, 128, 128, 128,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE},
    /* fp8 decode at D 128 (the cuda plugin's decode kernel: 32-key tiles of whole 128-byte rows): tiles
     * cut by the sequence's end (15, 17, 33 keys), blocks of 32 and 24 rows (a tile across two blocks),
     * per-block scales, e5m2, and a sliding window whose first key is not a multiple of 16 */
    {CF_OP_ATTENTION, "attn-dec-e4m3-bs32", "1/15 1/17 1/33 1/700 1/1 1/300", 16, 4, 128, 128, 32,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE},
    {CF_OP_ATTENTION, "attn-dec-e5m2-bs16", "1/16 1/31 1/513 1/64 1/2", 8, 2, 128, 128, 16,
     CF_F16, CF_F32, CF_E5M2, CF_LSE},
    {CF_OP_ATTENTION, "attn-dec-e4m3-bs24", "1/15 1/17 1/33 1/700 1/1 1/300", 16, 4, 128, 128, 24,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE},
    {CF_OP_ATTENTION, "attn-dec-e4m3-window", "1/500 1/37 1/200", 8, 2, 128, 128, 16,
     CF_F16, CF_F16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE, CF_WINDOW(37, -1)},
    /* the same kernel's general score path (soft-cap, ALiBi) at GQA 8 and at 2 tokens x GQA 4 (8 rows),
     * sequences cut inside a tile and long enough to split, block size 24; and its 16-row form (a
     * 12-row tile: 3 tokens x GQA 4) beside 1- and 2-token tiles in one batch */
    {CF_OP_ATTENTION, "attn-dec-e4m3-softcap", "1/1 1/15 1/17 1/700 1/3001", 16, 2, 128, 128, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE, .softcap = 30.0f},
    {CF_OP_ATTENTION, "attn-dec-e5m2-alibi-l2", "2/2 2/33 2/517 1/64", 8, 2, 128, 128, 24,
     CF_F16, CF_F32, CF_E5M2, CF_LSE | CF_ALIBI | CF_BLOCK_SCALE},
    {CF_OP_ATTENTION, "attn-dec-e4m3-12rows", "3/300 1/77 2/513 1/4000", 16, 4, 128, 128, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE},
    /* D 64 decode by tensor copies (the cuda plugin on sm_90: a block's rows of a head as one box, rows = the
     * block size's largest power-of-two factor): block 24 (boxes of 8 rows, 4 a tile), a sliding window whose
     * first key is off the box grid (the walk starts on it, the keys before masked), sequences cut inside a
     * box and long enough to split; fp8 with per-block scales, and 16-bit in an HND cache at block 40 */
    {CF_OP_ATTENTION, "attn-dec-d64-tma-e4m3", "1/3001 1/13 1/700 1/1 1/130", 16, 4, 64, 64, 24,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE, CF_WINDOW(1003, -1)},
    {CF_OP_ATTENTION, "attn-dec-d64-tma-hnd", "1/2049 1/17 1/41 1/1", 16, 2, 64, 64, 40,
     CF_F16, CF_F16, CF_F16, CF_LSE | CF_SINKS | CF_HND},
    /* 16-bit D 256 decode by tensor copies (four 128-byte column blocks a row): a window off the box grid, splits */
    {CF_OP_ATTENTION, "attn-dec-d256-tma", "1/1500 1/17 1/300 1/1", 16, 8, 256, 256, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS, CF_WINDOW(701, -1)},
    /* one token of a group wider than a 16-row decode tile: decode tiles of head groups 16 + 16 (MQA at
     * GQA 32) and 16 + 8 (GQA 24, fp8), split over long sequences, beside a 3-token request (a prefill
     * tile) and a 1-key one; sinks and ALiBi tell the head groups apart */
    {CF_OP_ATTENTION, "attn-dec-mqa32", "1/2000 3/40 1/1537 1/1 1/129", 32, 1, 128, 128, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS},
    {CF_OP_ATTENTION, "attn-dec-gqa24-e4m3", "1/700 1/33 2/90 1/2100", 48, 2, 128, 128, 16,
     CF_F16, CF_F32, CF_E4M3, CF_LSE | CF_ALIBI | CF_BLOCK_SCALE},
    /* the same groups in the cuda plugin's 32-row tiles of one token's heads (16-bit caches, D 64 / 128): GQA 48 as two
     * tiles of 24 heads (soft-cap, ALiBi, a window; boxes of 8 rows at block 24), GQA 64 at D 64 in an HND cache of
     * block 1 (the form without tensor copies), GQA 20 at D 96 (Q and K zero past 96 of 128 columns); splits,
     * 1-key requests, a 2-token request (a prefill tile) beside them */
    {CF_OP_ATTENTION, "attn-dec-wide-g24", "1/2100 1/1 2/40 1/700 1/33", 96, 2, 128, 128, 24,
     CF_F16, CF_F32, CF_F16, CF_LSE | CF_ALIBI, CF_WINDOW(1500, -1), .softcap = 20.0f},
    {CF_OP_ATTENTION, "attn-dec-wide-g64-d64", "1/1500 1/17 1/1 3/9 1/300", 64, 1, 64, 64, 1,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS | CF_HND},
    {CF_OP_ATTENTION, "attn-dec-wide-g20-d96", "1/900 1/65 1/3000", 40, 2, 96, 96, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS},
    /* too few row tiles to fill a GPU: the cuda plugin cuts the long requests into its most key splits (64), merged
     * by the tile's last block (sinks, LSE), beside a 1-key request; MQA the same in two 16-row head groups (32-row
     * tiles where forced), a window off the split grid */
    {CF_OP_ATTENTION, "attn-dec-max-splits", "1/8000 1/1 1/3001", 8, 1, 128, 128, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS},
    {CF_OP_ATTENTION, "attn-dec-max-splits-mqa", "1/6000 1/1", 32, 1, 128, 128, 16,
     CF_F16, CF_F32, CF_F16, CF_LSE | CF_SINKS, CF_WINDOW(4999, -1)},
    /* pure decode batches of wide groups on the cuda plugin's warp-specialized wgmma kernel (sm_90), each token's heads
     * rows of its tiles, the requests cut into key splits merged by the consumers of the last one: MQA beside a 1-key
     * and an empty request (block 16, sinks); GQA 64 at D 64 (block 32, a window off the split grid); GQA 256 at D 256
     * (two head groups of 128 a token, f32 out) */
    {CF_OP_ATTENTION, "attn-dec-ws-mqa", "1/5000 1/1 0/7 1/300 1/2049 1/17", 32, 1, 128, 128, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS},
    {CF_OP_ATTENTION, "attn-dec-ws-g64-d64", "1/3000 1/129 1/1 1/700", 128, 2, 64, 64, 32,
     CF_F16, CF_F16, CF_F16, CF_LSE, CF_WINDOW(2222, -1)},
    {CF_OP_ATTENTION, "attn-dec-ws-g256-d256", "1/1100 1/40 1/1", 256, 1, 256, 256, 16,
     CF_BF16, CF_F32, CF_BF16, CF_LSE | CF_SINKS},
    /* more fp8 D 128 decode row tiles than the cuda plugin's 4-warp blocks hold at once on an H200 (16 requests x 20
     * KV heads = 320 tiles, none long enough to split): its 2-warp blocks (`_t32_w2`); sequences cut inside a tile */
    {CF_OP_ATTENTION, "attn-dec-e4m3-w2",
     "1/1 1/15 1/16 1/17 1/31 1/33 1/47 1/64 1/65 1/77 1/95 1/100 1/113 1/127 1/128 1/2", 40, 20, 128, 128, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE},
    {CF_OP_ATTENTION, "attn-plan-reuse", MIXED, 8, 2, 64, 64, 16,
     CF_F16, CF_F16, CF_E4M3, CF_LSE | CF_SINKS | CF_TWO_LAYERS},
    {CF_OP_ATTENTION, "attn-stream", MIXED, 4, 2, 64, 64, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_TWO_LAYERS | CF_STREAM},
    {CF_OP_ATTENTION, "attn-wide-batch", "1/5 7/7 1/64 0/3 2/30 1/1 9/20 1/17 3/3 1/100 5/45 1/2 4/4 1/31",
     4, 2, 64, 64, 16, CF_F16, CF_F16, CF_F16, CF_LSE, .padding = 6},
    /* prefill tiles of 128 rows (the cuda plugin's prefill fast path: 16-bit Q and K/V, D 64 / 128 /
     * 256): block sizes 1 and odd, a group of 3 (126 rows a tile), several query and key tiles,
     * chunked prefill (keys before the queries), non-causal, windows, sinks, f32 out */
    {CF_OP_ATTENTION, "attn-pf-bs1-g3", "70/70 33/90 1/20", 6, 2, 128, 128, 1, CF_BF16, CF_BF16, CF_BF16, CF_LSE},
    {CF_OP_ATTENTION, "attn-pf-d256-bs7", "40/40 130/150", 4, 1, 256, 256, 7,
     CF_F16, CF_F32, CF_F16, CF_LSE | CF_SINKS},
    {CF_OP_ATTENTION, "attn-pf-noncausal", "50/80 200/200 3/0", 8, 2, 64, 64, 16,
     CF_F16, CF_F16, CF_F16, CF_LSE | CF_NONCAUSAL},
    {CF_OP_ATTENTION, "attn-pf-window-mha", "300/300", 2, 2, 128, 128, 32, CF_BF16, CF_BF16, CF_BF16, CF_LSE,
     CF_WINDOW(100, -1)},
    /* the wgmma kernel's shapes (attn_prefill_sm90a.cuh, H200): 128-key tiles at D 64 / 128 that a block
     * size of 48 does not divide, chunked prefill over several tiles, an HND cache; D 256's 64-key tiles
     * with 128 tokens a block (both warpgroups' rows), a window and sinks */
    {CF_OP_ATTENTION, "attn-pf-wg-bs48-hnd", "400/400 150/390", 8, 2, 128, 128, 48,
     CF_F16, CF_F16, CF_F16, CF_LSE | CF_HND},
    {CF_OP_ATTENTION, "attn-pf-wg-d256-window", "260/260", 2, 2, 256, 256, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS, CF_WINDOW(90, -1)},
    /* the warp-specialized kernel's Q boxes (heads x tokens of an item; a group of 3 fills 126 of 128 rows, the box
     * reaching into the next request's tokens and past the last one) and its output forms (f32: the direct epilogue) */
    {CF_OP_ATTENTION, "attn-pf-ws-g3", "170/170 60/300 1/40 45/45", 6, 2, 128, 128, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE},
    {CF_OP_ATTENTION, "attn-pf-ws-f32out", "150/150 64/200", 8, 2, 128, 128, 32,
     CF_F16, CF_F32, CF_F16, CF_LSE | CF_SINKS},
    /* its fp8-cache form (per-tensor scales; V tiles widened to f16 in shared memory, K too with an f16 Q or at
     * D 64, where Q is rewritten as f16; a bf16 Q's S by e4m3 products): a group of 3, chunked prefill beside
     * decodes, sinks; e5m2 at D 64 in an HND cache with a window and f32 out */
    {CF_OP_ATTENTION, "attn-pf-ws-e4m3", "170/170 60/300 1/40 45/45 1/700", 6, 2, 128, 128, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_SINKS},
    {CF_OP_ATTENTION, "attn-pf-ws-e5m2-d64-hnd", "150/150 64/200 1/77", 8, 2, 64, 64, 32,
     CF_F16, CF_F32, CF_E5M2, CF_LSE | CF_HND, CF_WINDOW(120, -1)},
    /* D 256: two 128-byte column blocks a landed row, widened in place into the stage's upper half; one Q slot */
    {CF_OP_ATTENTION, "attn-pf-ws-e4m3-d256", "130/130 40/300 1/90", 4, 2, 256, 256, 16,
     CF_F16, CF_F16, CF_E4M3, CF_LSE},
    /* a bf16 Q over a D 128 / 256 fp8 cache: S by e4m3 products on the raw key rows, Q in two e4m3 terms (e5m2 keys:
     * mixed-format products), sinks, a window; f32 out */
    {CF_OP_ATTENTION, "attn-pf-ws-e5m2-kd", "170/170 60/300 1/40 45/45 1/700", 6, 2, 128, 128, 16,
     CF_BF16, CF_F32, CF_E5M2, CF_LSE | CF_SINKS, CF_WINDOW(200, -1)},
    {CF_OP_ATTENTION, "attn-pf-ws-e4m3-d256-kd", "130/130 40/300 1/90", 4, 2, 256, 256, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_SINKS},
    /* D 64's long-item form (192-key tiles: 12 boxes of 16 keys, or 6 of 32), taken for items of 2048 keys and more on
     * average: chunks over long contexts (a chunk's last item of 11 tokens, a causal edge inside a tile) beside a
     * decode, sinks; an f16 Q with a window off the tile grid, f32 out */
    {CF_OP_ATTENTION, "attn-pf-ws-d64-n192", "75/2600 40/3137 1/2100", 8, 2, 64, 64, 16,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS},
    {CF_OP_ATTENTION, "attn-pf-ws-f16-n192", "64/2500 33/2900", 8, 2, 64, 64, 32, CF_F16, CF_F32, CF_F16, CF_LSE,
     CF_WINDOW(2300, -1)},
};
const cf_table_t cf_cases_attention = CF_TABLE(ATTENTION);

static const cf_row_t CASCADE[] = {
    {CF_OP_CASCADE, "casc-basic", "1/3 4/4 1/9", 8, 2, 128, 128, 16, CF_F16, CF_F16, CF_F16, CF_LSE, .prefix = 40},
    {CF_OP_CASCADE, "casc-sinks", "1/1 8/12 1/30", 8, 1, 64, 64, 16, CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SINKS,
     .prefix = 64},
    {CF_OP_CASCADE, "casc-e4m3-blk-hnd", "2/5 1/7", 4, 2, 128, 128, 16,
     CF_F16, CF_F32, CF_E4M3, CF_HND | CF_BLOCK_SCALE, .prefix = 37},
    {CF_OP_CASCADE, "casc-empty-prefix", "3/3 1/6", 4, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE, .prefix = 0},
    {CF_OP_CASCADE, "casc-noncausal", "2/0 3/5", 4, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_NONCAUSAL,
     .prefix = 20},
    {CF_OP_CASCADE, "casc-softcap-scale", "1/4 5/5", 4, 2, 80, 80, 7, CF_F32, CF_F32, CF_F32, CF_INTERLEAVED,
     .scale = 0.2f, .softcap = 3.0f, .prefix = 23},
    {CF_OP_CASCADE, "casc-strided-e5m2", "1/2 6/6", 8, 2, 64, 64, 1,
     CF_F16, CF_F16, CF_E5M2, CF_LSE | CF_SINKS | CF_STRIDED, .prefix = 12},
    {CF_OP_CASCADE, "casc-2-layers-stream", "1/1 3/7 1/12", 4, 1, 128, 128, 32,
     CF_F16, CF_F16, CF_F16, CF_LSE | CF_TWO_LAYERS | CF_STREAM, .prefix = 50},
};
const cf_table_t cf_cases_cascade = CF_TABLE(CASCADE);

static const cf_row_t KV_WRITE[] = {
    {CF_OP_KV_WRITE, "kvw-f32", "17/17 5/5", 2, 2, 64, 64, 16, CF_F32, CF_F32, CF_F32, 0, .padding = 5},
    {CF_OP_KV_WRITE, "kvw-f16-hnd", "20/20 3/3", 2, 2, 128, 128, 16,
     CF_F16, CF_F32, CF_F16, CF_HND | CF_STREAM | CF_EDGE_VALUES, .padding = 3},
    {CF_OP_KV_WRITE, "kvw-bf16-bs7", "30/30", 1, 1, 64, 64, 7, CF_BF16, CF_F32, CF_BF16, CF_EDGE_VALUES, .padding = 2},
    {CF_OP_KV_WRITE, "kvw-f32-to-f16", "40/40", 2, 2, 64, 64, 16, CF_F32, CF_F32, CF_F16, CF_EDGE_VALUES, .padding = 4},
    {CF_OP_KV_WRITE, "kvw-f32-to-bf16", "40/40", 2, 2, 64, 64, 32, CF_F32, CF_F32, CF_BF16, CF_HND | CF_EDGE_VALUES,
     .padding = 4},
    {CF_OP_KV_WRITE, "kvw-f16-to-bf16", "25/25", 1, 1, 80, 80, 16, CF_F16, CF_F32, CF_BF16, CF_STREAM | CF_EDGE_VALUES},
    {CF_OP_KV_WRITE, "kvw-f16-e4m3", "33/33 9/9", 2, 2, 128, 128, 16, CF_F16, CF_F32, CF_E4M3, CF_EDGE_VALUES,
     .padding = 3},
    {CF_OP_KV_WRITE, "kvw-f32-e4m3-blk-hnd", "21/21", 4, 4, 64, 64, 1,
     CF_F32, CF_F32, CF_E4M3, CF_HND | CF_BLOCK_SCALE | CF_EDGE_VALUES, .padding = 2},
    {CF_OP_KV_WRITE, "kvw-bf16-e5m2", "33/33", 2, 2, 64, 64, 16, CF_BF16, CF_F32, CF_E5M2, CF_EDGE_VALUES,
     .padding = 3},
    {CF_OP_KV_WRITE, "kvw-f32-e5m2-blk", "50/50 7/7", 2, 2, 64, 64, 48,
     CF_F32, CF_F32, CF_E5M2, CF_BLOCK_SCALE | CF_INTERLEAVED | CF_STREAM | CF_EDGE_VALUES, .padding = 1},
    {CF_OP_KV_WRITE, "kvw-d192v128", "19/19", 2, 2, 192, 128, 7, CF_F16, CF_F32, CF_F16, 0, .padding = 2},
    {CF_OP_KV_WRITE, "kvw-all-padding", "0/0", 2, 2, 64, 64, 16, CF_F16, CF_F32, CF_F16, 0, .padding = 8},
    {CF_OP_KV_WRITE, "kvw-interleaved", "24/24", 2, 2, 64, 64, 16, CF_F16, CF_F32, CF_F16, CF_INTERLEAVED,
     .padding = 2},
    {CF_OP_KV_WRITE, "kvw-d256-bs128", "130/130", 1, 1, 256, 256, 128,
     CF_BF16, CF_F32, CF_E4M3, CF_HND | CF_BLOCK_SCALE | CF_STREAM, .padding = 1},
};
const cf_table_t cf_cases_kv_write = CF_TABLE(KV_WRITE);

static const cf_row_t MERGE[] = {
    {CF_OP_MERGE, "merge-2", "", 4, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE, .states = 2, .tokens = 9},
    {CF_OP_MERGE, "merge-2-empty", "", 4, 1, 64, 64, 16,
     CF_F32, CF_F32, CF_F32, CF_LSE | CF_STREAM | CF_ALL_EMPTY_TOKEN, .states = 2, .tokens = 12, .empty = 0.3},
    {CF_OP_MERGE, "merge-4-f16", "", 4, 1, 128, 128, 16, CF_F16, CF_F16, CF_F32, CF_LSE | CF_ALL_EMPTY_TOKEN,
     .states = 4, .tokens = 10, .empty = 0.25},
    {CF_OP_MERGE, "merge-3-bf16-sinks", "", 8, 1, 64, 64, 16,
     CF_BF16, CF_BF16, CF_F32, CF_LSE | CF_SINKS | CF_ALL_EMPTY_TOKEN, .states = 3, .tokens = 8, .empty = 0.2},
    {CF_OP_MERGE, "merge-1", "", 2, 1, 64, 64, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_STREAM,
     .states = 1, .tokens = 6, .empty = 0.2},
    {CF_OP_MERGE, "merge-3-extreme", "", 4, 1, 32, 32, 16, CF_F32, CF_F32, CF_F32, CF_LSE | CF_EXTREME_LSE,
     .states = 3, .tokens = 16, .empty = 0.1},
    {CF_OP_MERGE, "merge-2-f16-to-f32", "", 4, 1, 80, 80, 16, CF_F16, CF_F32, CF_F32, 0, .states = 2, .tokens = 7},
    {CF_OP_MERGE, "merge-5-sinks", "", 4, 1, 128, 128, 16,
     CF_F32, CF_F32, CF_F32, CF_SINKS | CF_STREAM | CF_ALL_EMPTY_TOKEN, .states = 5, .tokens = 6, .empty = 0.3},
    {CF_OP_MERGE, "merge-8-bf16", "", 2, 1, 256, 256, 16,
     CF_BF16, CF_F32, CF_F32, CF_LSE | CF_SINKS | CF_ALL_EMPTY_TOKEN | CF_EXTREME_LSE,
     .states = 8, .tokens = 5, .empty = 0.4},
};
const cf_table_t cf_cases_merge = CF_TABLE(MERGE);

/* Large blocks: shapes a Rebellions NPU (npu_sim's profiles) accepts. The RBLN rules (docs/backends/npu_sim_rules.md):
 * block_size a power of two in 512..16384 (rbln-rebel100) or 1024..32768 (rbln-atom); the block table is
 * max_model_len / block_size columns: one column is the naive kernel, more are flash with one partition per block
 * (FP8 caches need flash; sinks force it); head sizes 32..256 from the backend's list, one for K and V; no LSE, soft
 * cap or ALiBi; windows only causal, left. A few cases break one rule on purpose (every plugin without the rule must
 * pass them; npu_sim reports the vendor's reason). Contexts stay short where the shape allows, so that a float64
 * reference and a sanitizer build run them in seconds. */
static const cf_row_t LARGE_BLOCKS[] = {
    /* flash, two partitions of 1024 (both profiles): decode at the last position and inside the first
     * partition, a prefill of 192 tokens split at the partition edge */
    {CF_OP_ATTENTION, "blk1024-flash", "1/2048 1/7 192/1100", 4, 1, 64, 64, 1024, CF_F16, CF_F16, CF_F16, 0,
     .mml = 2048},
    /* naive: one block of max_model_len per request */
    {CF_OP_ATTENTION, "blk1024-naive", "1/1024 1/1 200/200", 4, 1, 64, 64, 1024, CF_BF16, CF_BF16, CF_BF16, 0,
     .mml = 1024},
    /* four partitions of 512 (rebel100; rbln-atom's range starts at 1024): empty ones skipped */
    {CF_OP_ATTENTION, "blk512-flash4", "1/100 1/1537 65/600", 4, 1, 96, 96, 512, CF_F16, CF_F16, CF_F16, 0,
     .mml = 2048},
    /* naive and non-causal, as encoder / pooling models run (rebel100) */
    {CF_OP_ATTENTION, "blk512-naive-noncausal", "300/300 64/512 1/40", 4, 2, 64, 64, 512,
     CF_F32, CF_F32, CF_F32, CF_NONCAUSAL, .mml = 512},
    /* sinks force flash: one partition, then two with GPT-OSS's window of 128 */
    {CF_OP_ATTENTION, "blk1024-sinks-1part", "1/1000 1/1 100/100", 8, 1, 64, 64, 1024,
     CF_BF16, CF_BF16, CF_BF16, CF_SINKS, .mml = 1024},
    {CF_OP_ATTENTION, "blk1024-sinks-swa128", "1/2000 1/129 160/1200", 8, 1, 64, 64, 1024,
     CF_BF16, CF_BF16, CF_BF16, CF_SINKS, CF_WINDOW(127, -1), .mml = 2048},
    /* FP8 KV caches (one scale per tensor) with flash, GQA 4, partitions of 1024 and 2048; and with
     * naive, which the NPU refuses */
    {CF_OP_ATTENTION, "blk1024-e4m3-gqa4", "1/2048 1/10 128/1152", 8, 2, 64, 64, 1024, CF_F16, CF_F16, CF_E4M3, 0,
     .mml = 2048},
    {CF_OP_ATTENTION, "blk2048-e5m2", "1/4000 1/1 70/2100", 4, 1, 64, 64, 2048, CF_BF16, CF_F32, CF_E5M2, 0,
     .mml = 4096},
    {CF_OP_ATTENTION, "blk1024-e4m3-naive", "1/900 30/30", 4, 1, 64, 64, 1024, CF_F16, CF_F16, CF_E4M3, 0, .mml = 1024},
    /* sliding windows (the NPU's sliding kernel): a window of a whole partition, a short one */
    {CF_OP_ATTENTION, "blk1024-swa1024", "1/2048 1/600 256/1536", 4, 1, 64, 64, 1024, CF_F16, CF_F16, CF_F16, 0,
     CF_WINDOW(1023, -1), .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-swa64", "1/1100 64/1088", 4, 1, 64, 64, 1024, CF_F32, CF_F32, CF_F32, 0,
     CF_WINDOW(63, -1), .mml = 2048},
    /* the rest of the backend's head sizes (64, 96 above, 128 below), layouts and strides spread over
     * them; flash over two partitions, the largest naive */
    {CF_OP_ATTENTION, "blk1024-d32", "40/1100", 4, 2, 32, 32, 1024, CF_F32, CF_F32, CF_F32, 0, .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-d80-hnd", "40/1100", 4, 1, 80, 80, 1024, CF_BF16, CF_BF16, CF_BF16, CF_HND, .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-d160", "40/1100", 4, 1, 160, 160, 1024, CF_F16, CF_F32, CF_F16, 0, .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-d192-strided", "40/1100", 2, 1, 192, 192, 1024, CF_F16, CF_F16, CF_F16, CF_STRIDED,
     .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-d224-interleave", "48/1000", 2, 1, 224, 224, 1024,
     CF_BF16, CF_BF16, CF_BF16, CF_INTERLEAVED, .mml = 1024},
    {CF_OP_ATTENTION, "blk1024-d256-e4m3-hnd", "48/1000", 4, 1, 256, 256, 1024, CF_BF16, CF_F32, CF_E4M3, CF_HND,
     .mml = 2048},
    /* not in the head-size list, and K/V head sizes that differ: refused by the NPU backend */
    {CF_OP_ATTENTION, "blk1024-d112", "20/1000", 2, 1, 112, 112, 1024, CF_F16, CF_F16, CF_F16, 0, .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-d128v64", "20/1000", 2, 1, 128, 64, 1024, CF_F16, CF_F16, CF_F16, 0, .mml = 2048},
    /* a decode batch of 9 (the NPU pads it to its bucket of 16), MQA */
    {CF_OP_ATTENTION, "blk1024-decode9", "1/1 1/1023 1/1025 1/2048 1/64 1/5 1/300 1/9 1/2", 8, 1, 32, 32, 1024,
     CF_F16, CF_F16, CF_F16, 0, .mml = 2048},
    /* prefill chunks: 320 tokens over a partition edge (chunks of 128 or 512, cut at the edge), and
     * lengths that are not multiples of 64 (the last chunk padded) */
    {CF_OP_ATTENTION, "blk1024-prefill-chunks", "320/1200", 4, 1, 64, 64, 1024, CF_F16, CF_F16, CF_F16, 0, .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-prefill-odd", "150/150 1/1 77/1101", 4, 1, 64, 64, 1024, CF_F32, CF_F32, CF_F32, 0,
     .mml = 2048},
    {CF_OP_ATTENTION, "blk512-prefill-odd", "100/100 1/1 333/1000", 4, 1, 64, 64, 512, CF_F16, CF_F16, CF_F16, 0,
     .mml = 1024},
    /* empty rows, two layers on one plan, a stream, a wide mixed batch with padding slots */
    {CF_OP_ATTENTION, "blk1024-empty", "0/1500 1/9 0/0 2/1030", 4, 1, 64, 64, 1024, CF_F32, CF_F32, CF_F32, 0,
     .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-2-layers-stream", "1/1500 64/64", 4, 1, 128, 128, 1024,
     CF_F16, CF_F16, CF_E4M3, CF_TWO_LAYERS | CF_STREAM, .mml = 2048},
    {CF_OP_ATTENTION, "blk1024-wide-batch", "1/5 64/64 1/2048 0/3 1/1 128/1500 3/3", 4, 1, 64, 64, 1024,
     CF_F16, CF_F16, CF_F16, 0, .padding = 6, .mml = 2048},
    /* a long context over two partitions of 4096: decode */
    {CF_OP_ATTENTION, "blk4096-decode-d32", "1/8192", 2, 1, 32, 32, 4096, CF_F16, CF_F16, CF_F16, 0, .mml = 8192},
    /* kv_write at the NPU's block sizes */
    {CF_OP_KV_WRITE, "kvw-blk1024-f16", "1500/1500", 1, 1, 128, 128, 1024, CF_F16, CF_F16, CF_F16, CF_EDGE_VALUES,
     .padding = 5, .mml = 2048},
    {CF_OP_KV_WRITE, "kvw-blk512-e4m3-hnd", "1100/1100", 1, 1, 64, 64, 512,
     CF_BF16, CF_BF16, CF_E4M3, CF_HND | CF_STREAM | CF_EDGE_VALUES, .padding = 3, .mml = 2048},
    {CF_OP_KV_WRITE, "kvw-blk2048-e5m2-inter", "2100/2100", 1, 1, 64, 64, 2048,
     CF_F32, CF_F32, CF_E5M2, CF_INTERLEAVED | CF_EDGE_VALUES, .padding = 2, .mml = 4096},
    {CF_OP_KV_WRITE, "kvw-blk1024-d80-bf16", "900/900 1/1", 1, 1, 80, 80, 1024,
     CF_F32, CF_F32, CF_BF16, CF_STREAM | CF_EDGE_VALUES, .padding = 1, .mml = 1024},
};
const cf_table_t cf_cases_large_blocks = CF_TABLE(LARGE_BLOCKS);
