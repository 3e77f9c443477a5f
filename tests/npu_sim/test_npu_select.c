/* test_npu_select.c — the RBLN selection rules as tables (docs/backends/npu_sim_rules.md): every range
 * boundary just inside and just outside for both profiles, both front ends, defaults, FP8, sinks, head
 * sizes, the sliding-window limit and the prefill chunk, each with the expected kernel and partitioning
 * or the rule's exact words followed by the profile's hint; the model kinds with the alternatives their
 * refusals name; then the same rules as capability answers (attnrt_op_query_t), MLA's among them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "npu_ops.h"
#include "npu_select.h"

#define OK ATTNRT_OK
#define UNSUP ATTNRT_ERR_UNSUPPORTED
#define INVAL ATTNRT_ERR_INVALID_ARGUMENT
#define V ATTNRT_FRONT_END_VLLM
#define C ATTNRT_FRONT_END_COMPILED
#define FULL ATTNRT_LAYER_FULL
#define SWA ATTNRT_LAYER_SLIDING
#define MLA ATTNRT_LAYER_MLA_DENSE
#define MLAS ATTNRT_LAYER_MLA_SPARSE
#define ATOM "rbln-atom"
#define REBEL "rbln-rebel100"

typedef struct sel_case {
    const char *name;
    const char *profile;
    uint32_t    front_end;  /* 0: the context's (vLLM) */
    uint32_t    layer;
    const char *impl;
    int64_t     max_len, block, partition, chunk, window;
    uint32_t    head, sinks, fp8;
    /* expected */
    attnrt_status_t status;
    const char *kernel;
    int64_t     e_block, e_partition, e_parts, e_chunk;
    const char *text;       /* failure: the exact message; success: a substring of the notes (or NULL) */
} sel_case_t;

static const char HEADS[] = "[32, 64, 80, 96, 128, 160, 192, 224, 256]";

static const sel_case_t cases[] = {
    /* ---- compiled (optimum-rbln) path: defaults, eager limit, partition range, block rules ---- */
    {"C atom: defaults fill eager with block = max_seq_len", ATOM, C, FULL, "", 8192, 0, 0, 0, 0, 0, 0, 0,
     OK, "naive", 8192, 0, 1, 128, "kvcache_block_size defaulted to 8192"},
    {"C atom: eager max_seq_len at the limit", ATOM, C, FULL, "eager", 32768, 0, 0, 0, 0, 0, 0, 0,
     OK, "naive", 32768, 0, 1, 128, NULL},
    {"C atom: eager max_seq_len just over the limit", ATOM, C, FULL, "eager", 32769, 0, 0, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`max_seq_len` is set to 32769, which exceeds the limit of 32768 for 'eager' attention. Please reduce the "
     "`max_seq_len` to 32768 or lower, or consider switching `attn_impl` to 'flash_attn' for larger sequence lengths."},
    {"C rebel100: eager at the limit, prefill chunk 512", REBEL, C, FULL, "", 16384, 0, 0, 0, 0, 0, 0, 0,
     OK, "naive", 16384, 0, 1, 512, NULL},
    {"C rebel100: eager just over the limit", REBEL, C, FULL, "", 16385, 0, 0, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`max_seq_len` is set to 16385, which exceeds the limit of 16384 for 'eager' attention. Please reduce the "
     "`max_seq_len` to 16384 or lower, or consider switching `attn_impl` to 'flash_attn' for larger sequence lengths."},
    {"C atom: a partition switches eager to flash", ATOM, C, FULL, "", 32768, 0, 16384, 0, 0, 0, 0, 0,
     OK, "flash", 16384, 16384, 2, 128, "`attn_impl` has been automatically switched to 'flash_attn'."},
    {"C atom: flash takes the default partition 16384", ATOM, C, FULL, "flash_attn", 65536, 0, 0, 0, 0, 0, 0, 0,
     OK, "flash", 16384, 16384, 4, 128, "kvcache_partition_len defaulted to 16384"},
    {"C rebel100: flash takes the default partition 8192", REBEL, C, FULL, "flash_attn", 65536, 0, 0, 0, 0, 0, 0, 0,
     OK, "flash", 8192, 8192, 8, 512, "kvcache_partition_len defaulted to 8192"},
    {"C atom: a single partition is refused", ATOM, C, FULL, "flash_attn", 16384, 0, 16384, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`max_seq_len` (16384) must be a multiple of `kvcache_partition_len` (16384) when using 'flash_attn'. Please "
     "adjust either value to meet this requirement."},
    {"C atom: max_seq_len % partition != 0", ATOM, C, FULL, "flash_attn", 40000, 0, 16384, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`max_seq_len` (40000) must be a multiple of `kvcache_partition_len` (16384) when using 'flash_attn'. Please "
     "adjust either value to meet this requirement."},
    {"C atom: partition at the minimum 1024", ATOM, C, FULL, "flash_attn", 2048, 0, 1024, 0, 0, 0, 0, 0,
     OK, "flash", 1024, 1024, 2, 128, NULL},
    {"C atom: partition just under the minimum", ATOM, C, FULL, "flash_attn", 2046, 0, 1023, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`kvcache_partition_len` (1023) is out of the supported range for 'flash_attn' (1024 <= `kvcache_partition_len` "
     "<= 32768). Please provide a valid value within this range."},
    {"C atom: partition at the maximum 32768", ATOM, C, FULL, "flash_attn", 65536, 0, 32768, 0, 0, 0, 0, 0,
     OK, "flash", 32768, 32768, 2, 128, NULL},
    {"C atom: partition just over the maximum", ATOM, C, FULL, "flash_attn", 131072, 0, 65536, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`kvcache_partition_len` (65536) is out of the supported range for 'flash_attn' (1024 <= `kvcache_partition_len` "
     "<= 32768). Please provide a valid value within this range."},
    {"C rebel100: partition at the maximum 16384", REBEL, C, FULL, "flash_attn", 32768, 0, 16384, 0, 0, 0, 0, 0,
     OK, "flash", 16384, 16384, 2, 512, NULL},
    {"C rebel100: partition over the maximum (ATOM's 32768)", REBEL, C, FULL, "flash_attn", 65536, 0, 32768, 0, 0, 0, 0, 0,
     UNSUP, 0, 0, 0, 0, 0,
     "`kvcache_partition_len` (32768) is out of the supported range for 'flash_attn' (1024 <= `kvcache_partition_len` "
     "<= 16384). Please provide a valid value within this range."},
    {"C rebel100: partition at the minimum 1024", REBEL, C, FULL, "flash_attn", 2048, 0, 1024, 0, 0, 0, 0, 0,
     OK, "flash", 1024, 1024, 2, 512, NULL},
    {"C rebel100: partition under the minimum", REBEL, C, FULL, "flash_attn", 1024, 0, 512, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`kvcache_partition_len` (512) is out of the supported range for 'flash_attn' (1024 <= `kvcache_partition_len` "
     "<= 16384). Please provide a valid value within this range."},
    {"C atom: flash block differs from the partition", ATOM, C, FULL, "flash_attn", 32768, 8192, 16384, 0, 0, 0, 0, 0,
     UNSUP, 0, 0, 0, 0, 0,
     " When using 'flash attention', the `kvcache_block_size` (8192)  must always be set equal to the "
     "`kvcache_partition_len` 16384."},
    {"C atom: eager block differs from max_seq_len", ATOM, C, FULL, "eager", 8192, 4096, 0, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     " When using 'eager attention', the `kvcache_block_size` (4096)  must always be set equal to the `max_seq_len` 8192."},
    {"C atom: unknown attn_impl", ATOM, C, FULL, "sdpa", 8192, 0, 0, 0, 0, 0, 0, 0, INVAL, 0, 0, 0, 0, 0,
     "Unknown `attn_impl` : sdpa. (Available : 'eager', 'flash_attn`)"},
    {"C atom: aliases naive / flash", ATOM, C, FULL, "flash", 4096, 0, 2048, 0, 0, 0, 0, 0, OK, "flash", 2048, 2048, 2, 128, NULL},
    {"C atom: a non-power-of-two partition is refused (the page: powers of two on both paths)", ATOM, C, FULL,
     "flash_attn", 6144, 0, 3072, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (3072) must be a power of two within the supported range for ATOM (Naive up to 32768, Flash 1024-32768 "
     "tokens)"},
    {"C atom: a non-power-of-two max_model_len is no Naive block", ATOM, C, FULL, "", 6000, 0, 0, 0, 0, 0, 0, 0,
     UNSUP, 0, 0, 0, 0, 0,
     "block_size (6000) must be a power of two within the supported range for ATOM (Naive up to 32768, Flash 1024-32768 "
     "tokens)"},
    {"C rebel100: block 1536 = partition is refused", REBEL, C, FULL, "", 3072, 1536, 0, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (1536) must be a power of two within the supported range for Rebel100 (Naive up to 16384, Flash "
     "1024-16384 tokens)"},
    {"C atom: the page's example: max-model-len 8192, block-size 4096 is Flash", ATOM, C, FULL, "", 8192, 4096, 0, 0, 0, 0,
     0, 0, OK, "flash", 4096, 4096, 2, 128, "partition = block_size"},
    {"C atom: an explicit flash request takes the block as its partition", ATOM, C, FULL, "flash_attn", 8192, 4096, 0, 0, 0,
     0, 0, 0, OK, "flash", 4096, 4096, 2, 128, NULL},
    {"C rebel100: block 1024 at the Flash minimum", REBEL, C, FULL, "", 2048, 1024, 0, 0, 0, 0, 0, 0,
     OK, "flash", 1024, 1024, 2, 512, NULL},
    {"C rebel100: block 512 under the Flash minimum", REBEL, C, FULL, "", 2048, 512, 0, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`kvcache_partition_len` (512) is out of the supported range for 'flash_attn' (1024 <= `kvcache_partition_len` "
     "<= 16384). Please provide a valid value within this range."},
    {"C atom: max_model_len not a multiple of the block", ATOM, C, FULL, "", 12288, 8192, 0, 0, 0, 0, 0, 0,
     UNSUP, 0, 0, 0, 0, 0,
     "`max_seq_len` (12288) must be a multiple of `kvcache_partition_len` (8192) when using 'flash_attn'. Please adjust "
     "either value to meet this requirement."},
    {"C atom: block over max_model_len", ATOM, C, FULL, "", 4096, 8192, 0, 0, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     " When using 'eager attention', the `kvcache_block_size` (8192)  must always be set equal to the `max_seq_len` 4096."},
    {"C atom: prefill chunk not a multiple of 64", ATOM, C, FULL, "", 8192, 0, 0, 100, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`prefill_chunk_size` must be a positive integer divisible by 64."},
    {"C atom: negative prefill chunk", ATOM, C, FULL, "", 8192, 0, 0, -64, 0, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "`prefill_chunk_size` must be a positive integer divisible by 64."},
    {"C atom: prefill chunk 64 (smallest legal)", ATOM, C, FULL, "", 8192, 0, 0, 64, 0, 0, 0, 0, OK, "naive", 8192, 0, 1, 64, NULL},
    {"C atom: FP8 with naive (eager) is refused", ATOM, C, FULL, "", 8192, 0, 0, 0, 0, 0, 0, 1, UNSUP, 0, 0, 0, 0, 0,
     "Naive Attention does not support FP8 KV cache."},
    {"C atom: FP8 with flash", ATOM, C, FULL, "", 32768, 0, 16384, 0, 0, 0, 0, 1, OK, "flash", 16384, 16384, 2, 128, NULL},
    {"C atom: sliding window at the limit 32768 - 128", ATOM, C, SWA, "", 8192, 0, 0, 0, 32640, 0, 0, 0,
     OK, "sliding_window", 32640, 0, 1, 128, "full-attention layers: naive"},
    {"C atom: sliding window just over the limit", ATOM, C, SWA, "", 8192, 0, 0, 0, 32641, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "Sliding window size (32641) must be less than 32768 - prefill_chunk_size (32640)"},
    {"C rebel100: sliding window at the limit 32767 - 512", REBEL, C, SWA, "", 8192, 0, 0, 0, 32255, 0, 0, 0,
     OK, "sliding_window", 32255, 0, 1, 512, NULL},
    {"C rebel100: sliding window just over the limit", REBEL, C, SWA, "", 8192, 0, 0, 0, 32256, 0, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "Sliding window size (32256) must be less than 32767 - prefill_chunk_size (32255)"},
    {"C atom: the window limit follows the prefill chunk", ATOM, C, SWA, "", 8192, 0, 0, 256, 32513, 0, 0, 0,
     UNSUP, 0, 0, 0, 0, 0, "Sliding window size (32513) must be less than 32768 - prefill_chunk_size (32512)"},
    {"C atom: FP8 on a sliding-window layer (the page states no rule)", ATOM, C, SWA, "", 8192, 0, 0, 0, 4096, 0, 0, 1,
     OK, "sliding_window", 4096, 0, 1, 128, "full-attention layers: naive"},

    /* ---- vLLM model path: power-of-two block sizes in the device range select the kernel ---- */
    {"V rebel100: naive at the minimum block 512", REBEL, V, FULL, "", 512, 512, 0, 0, 0, 128, 0, 0,
     OK, "naive", 512, 0, 1, 512, NULL},
    {"V rebel100: block 256 under the range", REBEL, V, FULL, "", 512, 256, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (256) must be a power of two within the supported range for Rebel100 (512-16384 tokens)"},
    {"V rebel100: naive at the maximum block 16384", REBEL, V, FULL, "", 16384, 16384, 0, 0, 0, 128, 0, 0,
     OK, "naive", 16384, 0, 1, 512, NULL},
    {"V rebel100: block 32768 over the range", REBEL, V, FULL, "", 32768, 32768, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (32768) must be a power of two within the supported range for Rebel100 (512-16384 tokens)"},
    {"V rebel100: a non-power-of-two block", REBEL, V, FULL, "", 6000, 3000, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (3000) must be a power of two within the supported range for Rebel100 (512-16384 tokens)"},
    {"V rebel100: flash over two partitions (partition = block)", REBEL, 0, FULL, "", 8192, 4096, 0, 0, 0, 128, 0, 0,
     OK, "flash", 4096, 4096, 2, 512, NULL},
    {"V rebel100: sinks force flash, a single partition", REBEL, V, FULL, "", 8192, 8192, 0, 0, 0, 64, 1, 0,
     OK, "flash", 8192, 8192, 1, 512, "attention sinks: Flash with a single partition"},
    {"V rebel100: max_model_len 10000 over block 4096 (the page has no multiple rule)", REBEL, V, FULL, "", 10000, 4096, 0,
     0, 0, 128, 0, 0, OK, "flash", 4096, 4096, 3, 512, "the last partition holds 1808 of 4096 tokens"},
    {"V rebel100: max_model_len 12288 over block 8192", REBEL, V, FULL, "", 12288, 8192, 0, 0, 0, 128, 0, 0,
     OK, "flash", 8192, 8192, 2, 512, NULL},
    {"V rebel100: block_size over max_model_len", REBEL, V, FULL, "", 4096, 8192, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (8192) exceeds max_model_len (4096): Naive Attention needs block_size == max_model_len, Flash Attention "
     "block_size < max_model_len"},
    {"V rebel100: no block given, max_model_len 6000: the largest legal Flash block", REBEL, V, FULL, "", 6000, 0, 0, 0, 0,
     128, 0, 0, OK, "flash", 4096, 4096, 2, 512, "[P] block_size not given: 4096"},
    {"V atom: no block given, sinks at 8192: one Flash partition", ATOM, V, FULL, "", 8192, 0, 0, 0, 0, 64, 1, 0,
     OK, "flash", 8192, 8192, 1, 128, "[P] block_size not given: 8192"},
    {"V rebel100: no block fits max_model_len 300", REBEL, V, FULL, "", 300, 0, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "no block_size fits max_model_len 300: block_size must be a power of two within the supported range for Rebel100 "
     "(512-16384 tokens) and at most max_model_len"},
    {"V rebel100: FP8 on a sliding-window layer over Naive full layers", REBEL, V, SWA, "", 8192, 8192, 0, 0, 4096, 128, 0,
     1, OK, "sliding_window", 4096, 0, 1, 512, "full-attention layers: naive"},
    {"V rebel100: head size 80 is in the list", REBEL, V, FULL, "", 8192, 4096, 0, 0, 0, 80, 0, 0,
     OK, "flash", 4096, 4096, 2, 512, NULL},
    {"V rebel100: head size 112 is not", REBEL, V, FULL, "", 8192, 4096, 0, 0, 0, 112, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "Head size 112 is not supported by PagedAttention. Supported head sizes are: [32, 64, 80, 96, 128, 160, 192, 224, 256]."},
    {"V rebel100: head size 512 is not", REBEL, V, FULL, "", 8192, 4096, 0, 0, 0, 512, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "Head size 512 is not supported by PagedAttention. Supported head sizes are: [32, 64, 80, 96, 128, 160, 192, 224, 256]."},
    {"V rebel100: FP8 with naive is refused", REBEL, V, FULL, "", 8192, 8192, 0, 0, 0, 128, 0, 1, UNSUP, 0, 0, 0, 0, 0,
     "Naive Attention does not support FP8 KV cache."},
    {"V rebel100: FP8 with flash", REBEL, V, FULL, "", 8192, 4096, 0, 0, 0, 128, 0, 1, OK, "flash", 4096, 4096, 2, 512, NULL},
    {"V rebel100: FP8 with sinks at block == max_model_len (flash)", REBEL, V, FULL, "", 8192, 8192, 0, 0, 0, 128, 1, 1,
     OK, "flash", 8192, 8192, 1, 512, NULL},
    {"V atom: block 512 under ATOM's [P] range", ATOM, V, FULL, "", 512, 512, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "block_size (512) must be a power of two within the supported range for ATOM (1024-32768 tokens)"},
    {"V atom: naive at 32768, with the [P] note", ATOM, V, FULL, "", 32768, 32768, 0, 0, 0, 128, 0, 0,
     OK, "naive", 32768, 0, 1, 128, "[P] the vLLM model path runs on Rebel100 only"},
    {"V atom: flash at ATOM's [P] minimum block 1024", ATOM, V, FULL, "", 2048, 1024, 0, 0, 0, 128, 0, 0,
     OK, "flash", 1024, 1024, 2, 128, "[P] the vLLM model path runs on Rebel100 only"},
    {"V atom: block 65536 over ATOM's [P] range", ATOM, V, FULL, "", 65536, 65536, 0, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0,
     0, "block_size (65536) must be a power of two within the supported range for ATOM (1024-32768 tokens)"},
    {"V rebel100: block_size defaults to max_model_len", REBEL, V, FULL, "", 8192, 0, 0, 0, 0, 128, 0, 0,
     OK, "naive", 8192, 0, 1, 512, "[P] block_size not given: 8192"},
    {"V rebel100: block_size defaults to the flash partition", REBEL, V, FULL, "", 65536, 0, 0, 0, 0, 128, 0, 0,
     OK, "flash", 8192, 8192, 8, 512, "[P] block_size not given: 8192"},
    {"V rebel100: a partition other than the block", REBEL, V, FULL, "", 8192, 4096, 2048, 0, 0, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     " When using 'flash attention', the `kvcache_block_size` (4096)  must always be set equal to the "
     "`kvcache_partition_len` 2048."},
    {"V rebel100: attn_impl does not select the kernel", REBEL, V, FULL, "eager", 8192, 4096, 0, 0, 0, 128, 0, 0,
     OK, "flash", 4096, 4096, 2, 512, "attn_impl 'eager' ignored"},
    {"V rebel100: unknown attn_impl", REBEL, V, FULL, "paged", 8192, 4096, 0, 0, 0, 128, 0, 0, INVAL, 0, 0, 0, 0, 0,
     "Unknown `attn_impl` : paged. (Available : 'eager', 'flash_attn`)"},
    {"V rebel100: dense MLA refuses FP8", REBEL, V, MLA, "", 8192, 4096, 0, 0, 0, 576, 0, 1, UNSUP, 0, 0, 0, 0, 0,
     "FP8 KV cache is supported only in Sparse MLA; Dense MLA does not support it."},
    {"V rebel100: sparse MLA takes FP8 (no head-size list for MLA)", REBEL, V, MLAS, "", 8192, 4096, 0, 0, 0, 576, 0, 1,
     OK, "mla_sparse_flash", 4096, 4096, 2, 512, NULL},
    {"V rebel100: sliding window over the limit", REBEL, V, SWA, "", 8192, 4096, 0, 0, 40000, 128, 0, 0, UNSUP, 0, 0, 0, 0, 0,
     "Sliding window size (40000) must be less than 32767 - prefill_chunk_size (32255)"},
    {"V rebel100: sliding window layer: one block of window size", REBEL, V, SWA, "", 8192, 4096, 0, 0, 4096, 128, 0, 0,
     OK, "sliding_window", 4096, 0, 1, 512, "full-attention layers: flash, block_size 4096"},
    {"max_model_len 0 is malformed", REBEL, V, FULL, "", 0, 512, 0, 0, 0, 128, 0, 0, INVAL, 0, 0, 0, 0, 0, NULL},
};

static attnrt_status_t select_case(const sel_case_t *c, attnrt_attention_selection_t *sel, char *msg, size_t cap)
{
    const npu_profile_t *p = npu_profile_find(c->profile);
    assert_non_null(p);
    npu_select_ctx_t ctx = {p, ATTNRT_FRONT_END_VLLM, p->default_prefill_chunk, ATTNRT_MODEL_DECODER};
    attnrt_attention_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.front_end = c->front_end;
    cfg.layer_kind = c->layer;
    snprintf(cfg.attn_impl, sizeof cfg.attn_impl, "%s", c->impl);
    cfg.max_model_len = c->max_len;
    cfg.block_size = c->block;
    cfg.partition_len = c->partition;
    cfg.prefill_chunk = c->chunk;
    cfg.sliding_window = c->window;
    cfg.head_dim = c->head;
    cfg.has_sinks = c->sinks;
    cfg.kv_dtype = c->fp8 ? ATTNRT_FP8_E4M3 : (attnrt_dtype_t){0, 0, 0};
    return npu_select(&ctx, &cfg, sel, msg, cap);
}

static void selection_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sel_case_t *c = &cases[i];
        attnrt_attention_selection_t sel;
        char msg[NPU_MSG_MAX];
        const attnrt_status_t st = select_case(c, &sel, msg, sizeof msg);
        int ok = st == c->status;
        if (ok && st == OK) {
            ok = !strcmp(sel.kernel, c->kernel) && sel.block_size == c->e_block && sel.partition_len == c->e_partition &&
                 sel.num_partitions == c->e_parts && sel.prefill_chunk == c->e_chunk &&
                 (!c->text || strstr(sel.notes, c->text));
        } else if (ok && c->text) { /* the rule's message, then " [profile, front end ...]" */
            char tag[64];
            snprintf(tag, sizeof tag, " [%s", c->profile);
            ok = !strncmp(msg, c->text, strlen(c->text)) && strstr(msg + strlen(c->text), tag);
        }
        if (!ok) {
            failures++;
            fprintf(stderr, "FAIL %s: status %d (expected %d)\n  got: %s | kernel %s block %lld partition %lld parts "
                    "%lld chunk %lld notes \"%s\"\n  expected: %s\n", c->name, st, c->status, st == OK ? "" : msg,
                    st == OK ? sel.kernel : "-", (long long)(st == OK ? sel.block_size : 0),
                    (long long)(st == OK ? sel.partition_len : 0), (long long)(st == OK ? sel.num_partitions : 0),
                    (long long)(st == OK ? sel.prefill_chunk : 0), st == OK ? sel.notes : "",
                    c->text ? c->text : "(no text)");
        }
    }
    printf("%zu selection cases, %d failed\n", sizeof cases / sizeof cases[0], failures);
    assert_true(sizeof cases / sizeof cases[0] >= 40);
    assert_int_equal(failures, 0);
}

/* ---- the same rules as capability answers --------------------------------------------------------- */

typedef struct cap_case {
    const char *name, *profile;
    uint32_t    front_end, op, block, dqk, dv, features, fp8;
    attnrt_status_t status;
    const char *text; /* a substring of the reason */
} cap_case_t;

static const cap_case_t caps[] = {
    {"block 16 (vLLM path)", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 16, 128, 128, 0, 0, UNSUP,
     "block_size (16) must be a power of two within the supported range for Rebel100 (512-16384 tokens)"},
    {"block 512, head 128", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 512, 128, 128, ATTNRT_FEATURE_CAUSAL, 0, OK, NULL},
    {"block 1024 fp8 with sinks and a window", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 1024, 64, 64,
     ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_SLIDING_WINDOW, 1, OK, NULL},
    {"head 112", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 512, 112, 112, 0, 0, UNSUP, "Head size 112 is not supported"},
    {"Dqk != Dv", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 512, 192, 128, 0, 0, UNSUP, "one head_size for K and V"},
    {"softcap", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 512, 128, 128, ATTNRT_FEATURE_SOFTCAP, 0, UNSUP,
     "RBLN Attention Backend does not support logits soft cap. Outputs may be slightly off."},
    {"alibi", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 512, 128, 128, ATTNRT_FEATURE_ALIBI, 0, UNSUP, "no ALiBi slopes"},
    {"lse", REBEL, V, ATTNRT_OP_PAGED_ATTENTION, 512, 128, 128, ATTNRT_FEATURE_LSE, 0, UNSUP, "no log-sum-exp"},
    {"per-block fp8 scale", REBEL, V, ATTNRT_OP_KV_WRITE, 512, 128, 128, ATTNRT_FEATURE_KV_SCALE_BLOCK, 1, UNSUP,
     "one scale per tensor"},
    {"kv_write block 16", ATOM, V, ATTNRT_OP_KV_WRITE, 16, 64, 64, 0, 0, UNSUP,
     "block_size (16) must be a power of two within the supported range for ATOM (1024-32768 tokens)"},
    {"kv_write block 1024 on ATOM", ATOM, V, ATTNRT_OP_KV_WRITE, 1024, 64, 64, ATTNRT_FEATURE_LAYOUT_HND, 0, OK, NULL},
    {"compiled path: block 16 is an eager max_seq_len", REBEL, C, ATTNRT_OP_PAGED_ATTENTION, 16, 112, 112, 0, 0, OK, NULL},
    {"compiled path: block 32768 on Rebel100", REBEL, C, ATTNRT_OP_PAGED_ATTENTION, 32768, 128, 128, 0, 0, UNSUP,
     "block_size (32768) must be a power of two within the supported range for Rebel100 (Naive up to 16384, Flash "
     "1024-16384 tokens)"},
    {"compiled path: block 48 is no power of two", REBEL, C, ATTNRT_OP_PAGED_ATTENTION, 48, 128, 128, 0, 0, UNSUP,
     "block_size (48) must be a power of two"},
    {"merge_states with sinks and LSE", REBEL, V, ATTNRT_OP_MERGE_STATES, 0, 0, 128,
     ATTNRT_FEATURE_SINKS | ATTNRT_FEATURE_LSE, 0, OK, NULL},
    {"cascade", REBEL, V, ATTNRT_OP_CASCADE, 512, 128, 128, 0, 0, UNSUP, "RBLN documents no such kernel"},
    {"lightning", REBEL, V, ATTNRT_OP_LIGHTNING, 0, 128, 128, 0, 0, UNSUP, "lightning: RBLN documents no such kernel"},
    {"gated delta", ATOM, C, ATTNRT_OP_GATED_DELTA, 0, 128, 128, 0, 0, UNSUP, "gated_delta: RBLN documents no such kernel"},
    {"sparse mla, fp8", REBEL, V, ATTNRT_OP_MLA, 512, 576, 512, ATTNRT_FEATURE_SPARSE, 1, OK, NULL},
    {"dense mla, causal, sinks", ATOM, V, ATTNRT_OP_MLA, 1024, 576, 512, ATTNRT_FEATURE_CAUSAL | ATTNRT_FEATURE_SINKS, 0,
     OK, NULL},
    {"dense mla refuses fp8", REBEL, V, ATTNRT_OP_MLA, 512, 576, 512, ATTNRT_FEATURE_CAUSAL, 1, UNSUP,
     "FP8 KV cache is supported only in Sparse MLA"},
    {"mla block 64", REBEL, V, ATTNRT_OP_MLA, 64, 576, 512, 0, 0, UNSUP,
     "block_size (64) must be a power of two within the supported range for Rebel100"},
    {"mla on the compiled path: block 64 as a Naive max_model_len", REBEL, C, ATTNRT_OP_MLA, 64, 576, 512, 0, 0, OK, NULL},
    {"mla with lse", REBEL, V, ATTNRT_OP_MLA, 512, 576, 512, ATTNRT_FEATURE_LSE, 0, UNSUP, "no log-sum-exp"},
    {"mla with per-block fp8 scales", REBEL, V, ATTNRT_OP_MLA, 512, 576, 512,
     ATTNRT_FEATURE_SPARSE | ATTNRT_FEATURE_KV_SCALE_BLOCK, 1, UNSUP, "one scale per tensor"},
};

static void capability_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
        const cap_case_t *c = &caps[i];
        npu_select_ctx_t ctx = {npu_profile_find(c->profile), c->front_end, 512, ATTNRT_MODEL_DECODER};
        attnrt_op_query_t q;
        memset(&q, 0, sizeof q);
        q.struct_size = sizeof q;
        q.op = c->op;
        q.q_dtype = ATTNRT_F16;
        q.kv_dtype = c->fp8 ? ATTNRT_FP8_E4M3 : ATTNRT_F16;
        q.block_size = c->block;
        q.head_dim_qk = c->dqk;
        q.head_dim_v = c->dv;
        q.num_q_heads = 8;
        q.num_kv_heads = c->op == ATTNRT_OP_MLA ? 1 : 2;
        q.features = c->features;
        char reason[NPU_MSG_MAX];
        const attnrt_status_t st = npu_op_check(&ctx, &q, reason, sizeof reason);
        if (st != c->status || (c->text && !strstr(reason, c->text))) {
            failures++;
            fprintf(stderr, "FAIL capability %s: status %d (expected %d), reason \"%s\", expected \"%s\"\n", c->name, st,
                    c->status, reason, c->text ? c->text : "");
        }
    }
    assert_int_equal(failures, 0);
}

/* ---- model kinds (the page: pooling and encoder-decoder models use Naive) -------------------------- */

#define DEC ATTNRT_MODEL_DECODER
#define POOL ATTNRT_MODEL_POOLING
#define QWEN3 ATTNRT_MODEL_POOLING_QWEN3
#define ENCDEC ATTNRT_MODEL_ENCODER_DECODER

typedef struct kind_case {
    const char *name, *profile;
    uint32_t    front_end, kind;
    const char *impl;
    int64_t     max_len, block, partition;
    uint32_t    sinks, fp8;
    attnrt_status_t status;
    const char *kernel;
    int64_t     e_block, e_parts;
    const char *text; /* failure: the message's start; success: a substring of the notes (or NULL) */
    const char *hint; /* failure: a substring of the closing hint (or NULL) */
} kind_case_t;

static const kind_case_t kinds[] = {
    {"V pooling: block derived = max_model_len", REBEL, V, POOL, "", 8192, 0, 0, 0, 0, OK, "naive", 8192, 1,
     "pooling: block_size derived = max_model_len 8192", NULL},
    {"V pooling: an explicit smaller block is refused", REBEL, V, POOL, "", 8192, 4096, 0, 0, 0, UNSUP, 0, 0, 0,
     "Pooling models use Naive Attention with block_size == max_model_len (8192); block_size 4096 is not accepted",
     "accepted: block_size 8192 (Naive)"},
    {"V pooling: sinks would need Flash", REBEL, V, POOL, "", 8192, 0, 0, 1, 0, UNSUP, 0, 0, 0,
     "Pooling models use Naive Attention, which a layer with attention sinks cannot use", NULL},
    {"V pooling: FP8 (Naive refuses it)", REBEL, V, POOL, "", 8192, 0, 0, 0, 1, UNSUP, 0, 0, 0,
     "Naive Attention does not support FP8 KV cache.", "accepted: a non-FP8 cache]"},
    {"V pooling: max_model_len over the Naive range", REBEL, V, POOL, "", 32768, 0, 0, 0, 0, UNSUP, 0, 0, 0,
     "block_size (32768) must be a power of two within the supported range for Rebel100", NULL},
    {"C pooling: block derived, eager", ATOM, C, POOL, "", 32768, 0, 0, 0, 0, OK, "naive", 32768, 1, NULL, NULL},
    {"C pooling: flash_attn asked", ATOM, C, POOL, "flash_attn", 32768, 0, 0, 0, 0, UNSUP, 0, 0, 0,
     "Pooling models use Naive Attention with block_size == max_model_len (32768); attn_impl 'flash_attn'", NULL},
    {"C pooling: a partition asked", ATOM, C, POOL, "", 32768, 0, 16384, 0, 0, UNSUP, 0, 0, 0,
     "Pooling models use Naive Attention", NULL},
    {"C encoder-decoder: the eager limit at 16384", REBEL, C, ENCDEC, "", 16384, 0, 0, 0, 0, OK, "naive", 16384, 1, NULL,
     NULL},
    {"C encoder-decoder: one over the eager limit", REBEL, C, ENCDEC, "", 16385, 0, 0, 0, 0, UNSUP, 0, 0, 0,
     "`max_seq_len` is set to 16385, which exceeds the limit of 16384 for 'eager' attention.", NULL},
    {"V encoder-decoder: a smaller block", ATOM, V, ENCDEC, "", 4096, 2048, 0, 0, 0, UNSUP, 0, 0, 0,
     "Encoder-decoder models use Naive Attention with block_size == max_model_len (4096)", NULL},
    {"V Qwen3 pooling: no block is Naive", REBEL, V, QWEN3, "", 8192, 0, 0, 0, 0, OK, "naive", 8192, 1,
     "pooling_qwen3: block_size derived", NULL},
    {"V Qwen3 pooling: an explicit smaller block is Flash", REBEL, V, QWEN3, "", 8192, 4096, 0, 0, 0, OK, "flash", 4096, 2,
     NULL, NULL},
    {"C Qwen3 pooling: the page's example is Flash", ATOM, C, QWEN3, "", 8192, 4096, 0, 0, 0, OK, "flash", 4096, 2, NULL,
     NULL},
    {"C Qwen3 pooling: FP8 without a block is Naive, so refused", ATOM, C, QWEN3, "", 8192, 0, 0, 0, 1, UNSUP, 0, 0, 0,
     "Naive Attention does not support FP8 KV cache.", "accepted: block_size 1024, 2048, 4096 (Flash); or a non-FP8"},
    {"decoder FP8 with Naive: the hint names Flash blocks", REBEL, V, DEC, "", 8192, 8192, 0, 0, 1, UNSUP, 0, 0, 0,
     "Naive Attention does not support FP8 KV cache.",
     "[rbln-rebel100, vLLM path; accepted: block_size 512, 1024, 2048, 4096 (Flash); or a non-FP8 cache]"},
    {"decoder at 6000 on the compiled path: no block at all", ATOM, C, DEC, "", 6000, 0, 0, 0, 0, UNSUP, 0, 0, 0,
     "block_size (6000) must be a power of two", "no block_size at max_model_len 6000"},
    {"model_kind 4 is malformed", REBEL, V, 4, "", 8192, 0, 0, 0, 0, INVAL, 0, 0, 0,
     "model_kind = 4 is not an attnrt_model_kind", NULL},
};

static void model_kind_table(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const kind_case_t *c = &kinds[i];
        const npu_profile_t *p = npu_profile_find(c->profile);
        npu_select_ctx_t ctx = {p, ATTNRT_FRONT_END_VLLM, p->default_prefill_chunk, ATTNRT_MODEL_DECODER};
        attnrt_attention_config_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.struct_size = sizeof cfg;
        cfg.front_end = c->front_end;
        cfg.model_kind = c->kind;
        snprintf(cfg.attn_impl, sizeof cfg.attn_impl, "%s", c->impl);
        cfg.max_model_len = c->max_len;
        cfg.block_size = c->block;
        cfg.partition_len = c->partition;
        cfg.head_dim = 128;
        cfg.has_sinks = c->sinks;
        cfg.kv_dtype = c->fp8 ? ATTNRT_FP8_E4M3 : (attnrt_dtype_t){0, 0, 0};
        attnrt_attention_selection_t sel;
        char msg[NPU_MSG_MAX];
        const attnrt_status_t st = npu_select(&ctx, &cfg, &sel, msg, sizeof msg);
        int ok = st == c->status;
        if (ok && st == OK)
            ok = !strcmp(sel.kernel, c->kernel) && sel.block_size == c->e_block && sel.num_partitions == c->e_parts &&
                 (!c->text || strstr(sel.notes, c->text));
        else if (ok)
            ok = !strncmp(msg, c->text, strlen(c->text)) && (!c->hint || strstr(msg, c->hint));
        if (!ok) {
            failures++;
            fprintf(stderr, "FAIL %s: status %d (expected %d)\n  got: %s | %s %lld x %lld \"%s\"\n", c->name, st, c->status,
                    st == OK ? "" : msg, st == OK ? sel.kernel : "-", (long long)(st == OK ? sel.block_size : 0),
                    (long long)(st == OK ? sel.num_partitions : 0), st == OK ? sel.notes : "");
        }
    }
    printf("%zu model-kind cases, %d failed\n", sizeof kinds / sizeof kinds[0], failures);
    assert_int_equal(failures, 0);
}

static void head_size_list_is_the_backends(void **state)
{
    (void)state;
    char buf[96];
    npu_head_sizes_string(buf, sizeof buf);
    assert_string_equal(buf, HEADS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(selection_table),
        cmocka_unit_test(capability_table),
        cmocka_unit_test(model_kind_table),
        cmocka_unit_test(head_size_list_is_the_backends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
