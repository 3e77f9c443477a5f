/* conform_cases_mla.c - the directed MLA cases, dense and sparse, over 16-bit and fp8 latent caches.
 * One row per case (cf_row_t); Hkv is 1 and out has q's dtype unless the row says otherwise. */
#include "conform_cases_directed.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers" /* a row names only the options it sets */

#define MIXED CF_MIXED_BATCH
#define SCALE_192 0.07216878f      /* 1 / sqrt(192): DeepSeek's qk_head_dim, not sqrt(576)        */
#define SCALE_192_YARN 0.13523205f /* (0.1 ln 40 + 1)^2 / sqrt(192): DeepSeek-V3's YaRN mscale^2 */

static const cf_row_t MLA[] = {
    /* dense: DeepSeek's 576/512 and a small 64/32, causal and not, block sizes 64, 1 and 7 */
    {CF_OP_MLA, "mla-d576-dense", "1/300 5/40 1/129 12/12", 16, 1, 576, 512, 64, CF_BF16, CF_BF16, CF_BF16, CF_LSE,
     .scale = SCALE_192_YARN},
    {CF_OP_MLA, "mla-d576-h128", "1/200 1/77 1/130", 128, 1, 576, 512, 64, CF_BF16, CF_BF16, CF_BF16, CF_LSE,
     .scale = SCALE_192},
    {CF_OP_MLA, "mla-d576-sinks-f16", "1/90 7/7 1/65", 16, 1, 576, 512, 64, CF_F16, CF_F16, CF_F16, CF_LSE | CF_SINKS,
     .scale = SCALE_192_YARN},
    {CF_OP_MLA, "mla-small-noncausal", "4/9 2/12 1/5 6/6", 16, 1, 64, 32, 1,
     CF_F32, CF_F32, CF_F32, CF_LSE | CF_SINKS | CF_NONCAUSAL, .scale = 0.2f},
    {CF_OP_MLA, "mla-small-bs7-strided", MIXED, 16, 1, 64, 32, 7, CF_F16, CF_F16, CF_F16, CF_LSE | CF_STRIDED,
     .scale = 0.15f},
    {CF_OP_MLA, "mla-small-out-f32", MIXED, 8, 1, 64, 32, 16, CF_BF16, CF_F32, CF_BF16, 0, .scale = 0.25f},
    {CF_OP_MLA, "mla-small-2-layers", "1/40 3/3 1/17", 16, 1, 64, 32, 64,
     CF_F32, CF_F32, CF_F32, CF_LSE | CF_TWO_LAYERS | CF_STREAM, .scale = 0.2f},
    {CF_OP_MLA, "mla-d576-f32-kvbf16", "1/70 9/33", 16, 1, 576, 512, 64, CF_F32, CF_F32, CF_BF16, CF_LSE,
     .scale = SCALE_192},
    /* the tensor-core kernel's paths: a dense fp8 latent at Hq 128 (two items a token) with a one-key
     * request and contexts off the 32-key tile; a strided Q (element-wise Q load) over 1,000 keys (key
     * splits, the running max moving over many tiles); f16 with a per-block e5m2 latent and two tokens
     * an item (causal rows of different lengths in one item) */
    {CF_OP_MLA, "mla-d576-e4m3-dense", "1/1 1/300 2/77 1/33", 128, 1, 576, 512, 64,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_SINKS, .scale = SCALE_192_YARN},
    {CF_OP_MLA, "mla-d576-strided-long", "1/1000 1/96 3/40", 64, 1, 576, 512, 64,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_STRIDED, .scale = SCALE_192_YARN},
    {CF_OP_MLA, "mla-d576-e5m2-blk-f16", "4/50 1/129 2/2", 32, 1, 576, 512, 64,
     CF_F16, CF_F16, CF_E5M2, CF_LSE | CF_BLOCK_SCALE, .scale = SCALE_192},
    /* the wgmma kernel's paths (compute capability 9.0, a 16-bit latent): 64-key tiles spanning four
     * 16-key blocks, contexts of exactly one tile, one tile and a key, three tokens over two tiles (two
     * tokens an item at Hq 32: causal rows of different lengths), 2,100 keys (splits, many tiles) */
    {CF_OP_MLA, "mla-d576-wg-f16-bs16", "1/64 1/65 3/128 1/2100", 32, 1, 576, 512, 16,
     CF_F16, CF_F16, CF_F16, CF_LSE | CF_SINKS, .scale = SCALE_192_YARN},
    /* 64-key tiles over two 32-key blocks, and 128-key blocks holding two tiles (the second 64 rows
     * in), contexts that cut the last tile; strided Q / out / LSE */
    {CF_OP_MLA, "mla-d576-wg-bs32", "1/96 1/257 2/64", 16, 1, 576, 512, 32, CF_BF16, CF_BF16, CF_BF16, CF_LSE,
     .scale = SCALE_192_YARN},
    {CF_OP_MLA, "mla-d576-wg-bs128", "1/300 1/128 3/190 1/1100", 32, 1, 576, 512, 128,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_STRIDED, .scale = SCALE_192},
    /* sharp scores (scale 0.5: a score's spread ~17 log2 units), so a row's running max keeps moving by more than
     * the lazy threshold (8) after its first tile: the wgmma kernel's speculative first part of P (formed against
     * the running max) is formed again there (SPEC's second path); 2,100 keys: splits, many tiles */
    {CF_OP_MLA, "mla-d576-wg-sharp", "1/2100 2/300 1/65", 64, 1, 576, 512, 64, CF_BF16, CF_BF16, CF_BF16, CF_LSE,
     .scale = 0.5f},
    /* the wgmma kernel's fp8 latent (raw codes converted to 16 bits in shared memory, the row scale on the
     * scores and P): e4m3 with f16 queries over 16-key blocks with per-block scales (a tile's rows from four
     * blocks of different scales), contexts of one tile, one tile and a key, 2,100 keys (splits); e5m2 with
     * bf16 queries at Hq 128 (two items a token), strided Q / out (element-wise Q, the unstaged output) */
    {CF_OP_MLA, "mla-d576-wg-e4m3-f16-bs16", "1/64 1/65 3/128 1/2100", 32, 1, 576, 512, 16,
     CF_F16, CF_F16, CF_E4M3, CF_LSE | CF_SINKS | CF_BLOCK_SCALE, .scale = SCALE_192_YARN},
    {CF_OP_MLA, "mla-d576-wg-e5m2-bf16", "1/1 1/700 2/77", 128, 1, 576, 512, 64,
     CF_BF16, CF_BF16, CF_E5M2, CF_LSE | CF_STRIDED, .scale = SCALE_192},
    /* sparse: top-k 8..64 over mixed batches, -1 entries, duplicates, positions past seq_len */
    {CF_OP_MLA, "mla-sparse-d576", "1/300 4/120 1/40 2/2", 16, 1, 576, 512, 64,
     CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_SPARSE_INVALID, .scale = SCALE_192_YARN, .topk = 64},
    {CF_OP_MLA, "mla-sparse-h128", "1/260 1/64", 128, 1, 576, 512, 64, CF_BF16, CF_BF16, CF_BF16, CF_LSE | CF_NONCAUSAL,
     .scale = SCALE_192_YARN, .topk = 32},
    /* -1 and duplicates only: the runtime checks the rest */
    {CF_OP_MLA, "mla-sparse-host", "1/33 5/21 1/70 3/3", 16, 1, 64, 32, 1,
     CF_F32, CF_F32, CF_F32, CF_LSE | CF_SPARSE_HOST | CF_SPARSE_INVALID, .scale = 0.2f, .topk = 8},
    /* the indices are the whole mask: causal must not be applied */
    {CF_OP_MLA, "mla-sparse-causal-flag", "2/50 1/9 4/4", 16, 1, 64, 32, 7,
     CF_F16, CF_F16, CF_F16, CF_LSE | CF_SINKS | CF_SPARSE_INVALID, .scale = 0.2f, .topk = 24},
    {CF_OP_MLA, "mla-sparse-e4m3-tensor", "1/200 3/50 1/64", 16, 1, 576, 512, 64,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_NONCAUSAL | CF_SPARSE_INVALID, .scale = SCALE_192_YARN, .topk = 32},
    {CF_OP_MLA, "mla-sparse-e4m3-blk", "1/150 2/90", 16, 1, 576, 512, 64,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE | CF_SPARSE_HOST, .scale = SCALE_192, .topk = 16},
    {CF_OP_MLA, "mla-sparse-e5m2-blk", "1/120 4/30 1/7", 16, 1, 576, 512, 64,
     CF_F16, CF_F16, CF_E5M2, CF_LSE | CF_SINKS | CF_BLOCK_SCALE | CF_SPARSE_INVALID,
     .scale = SCALE_192_YARN, .topk = 48},
    /* sparse over an fp8 latent in 16-key blocks with per-block scales (the wgmma kernel's fp8 path on sm_90):
     * index lists of 96 entries (two tiles) with -1 and past-the-end entries, e4m3 with f16 queries */
    {CF_OP_MLA, "mla-sparse-e4m3-f16-bs16", "1/400 3/120 1/50", 16, 1, 576, 512, 16,
     CF_F16, CF_F16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE | CF_SPARSE_INVALID, .scale = SCALE_192_YARN, .topk = 96},
    {CF_OP_MLA, "mla-sparse-e5m2-small", "1/80 6/20", 16, 1, 64, 32, 7,
     CF_F32, CF_F32, CF_E5M2, CF_LSE | CF_NONCAUSAL | CF_STRIDED | CF_SPARSE_INVALID, .scale = 0.2f, .topk = 40},
    {CF_OP_MLA, "mla-sparse-2-layers", "1/60 3/30", 16, 1, 64, 32, 16,
     CF_BF16, CF_BF16, CF_E4M3, CF_LSE | CF_BLOCK_SCALE | CF_TWO_LAYERS | CF_STREAM | CF_SPARSE_INVALID,
     .scale = 0.2f, .topk = 12},
    /* at an RBLN NPU's block sizes (the rows above use blocks under its ranges, and LSE, which its kernels do
     * not return): block tables of exactly max_model_len / block_size columns, one fp8 scale per tensor; flash
     * over partitions with a prefill across the edge at 1024, naive with sinks, non-causal over 2048-key
     * partitions, sparse over fp8 latents, and a dense fp8 latent, which an NPU refuses (fp8 is sparse MLA's
     * only) */
    {CF_OP_MLA, "mla-blk1024-dense", "1/2048 1/7 60/1060", 16, 1, 576, 512, 1024, CF_BF16, CF_BF16, CF_BF16, 0,
     .scale = SCALE_192_YARN, .mml = 2048},
    {CF_OP_MLA, "mla-blk1024-naive-sinks", "1/1024 40/40", 16, 1, 576, 512, 1024, CF_F16, CF_F16, CF_F16, CF_SINKS,
     .scale = SCALE_192, .mml = 1024},
    {CF_OP_MLA, "mla-blk512-dense-small", "1/1500 70/600 1/1", 16, 1, 64, 32, 512, CF_F16, CF_F16, CF_F16, 0,
     .scale = 0.2f, .mml = 2048},
    {CF_OP_MLA, "mla-blk2048-noncausal-f32", "40/3000", 8, 1, 64, 32, 2048, CF_F32, CF_F32, CF_F32, CF_NONCAUSAL,
     .scale = 0.2f, .mml = 4096},
    {CF_OP_MLA, "mla-blk1024-sparse-e4m3", "1/2000 3/900 1/40", 16, 1, 576, 512, 1024,
     CF_BF16, CF_BF16, CF_E4M3, CF_SPARSE_INVALID, .scale = SCALE_192_YARN, .mml = 2048, .topk = 64},
    {CF_OP_MLA, "mla-blk1024-sparse-host-e5m2", "1/1500 5/300", 16, 1, 576, 512, 1024,
     CF_F16, CF_F16, CF_E5M2, CF_SPARSE_HOST, .scale = SCALE_192, .mml = 2048, .topk = 32},
    {CF_OP_MLA, "mla-blk1024-e4m3-dense", "1/1500 20/20", 16, 1, 576, 512, 1024, CF_BF16, CF_BF16, CF_E4M3, 0,
     .scale = SCALE_192, .mml = 2048},
};
const cf_table_t cf_cases_mla = CF_TABLE(MLA);
