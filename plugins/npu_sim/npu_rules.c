/* npu_rules.c — the single rules selection and the capability answers share, each with its message:
 * the page's or the vendor's wording, and a trailing "[P: why]" for the rules the "Attention modes"
 * page does not state (kept because the vendor's stack enforces them). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "npu_select.h"

const char npu_msg_fp8_naive[] = "Naive Attention does not support FP8 KV cache.";
const char npu_msg_softcap[] = "RBLN Attention Backend does not support logits soft cap. Outputs may be slightly off.";

static const uint32_t head_sizes[] = {32, 64, 80, 96, 128, 160, 192, 224, 256};
#define HEAD_SIZE_COUNT (sizeof head_sizes / sizeof head_sizes[0])

static const char *const kind_names[] = {"decoder", "pooling", "pooling_qwen3", "encoder_decoder"};
#define KIND_COUNT (sizeof kind_names / sizeof kind_names[0])

static int fail(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t cap, const char *fmt, ...)
{
    if (msg && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return 0;
}

const char *npu_model_kind_name(uint32_t kind) { return kind < KIND_COUNT ? kind_names[kind] : NULL; }

int npu_model_kind_parse(const char *name)
{
    for (size_t i = 0; i < KIND_COUNT; i++)
        if (!strcmp(name, kind_names[i])) return (int)i;
    return -1;
}

void npu_head_sizes_string(char *buf, size_t cap)
{
    size_t used = 0;
    if (!cap) return;
    buf[0] = '\0';
    for (size_t i = 0; i < HEAD_SIZE_COUNT && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%u", i ? ", " : "[", head_sizes[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

int npu_rule_prefill_chunk(int64_t chunk, char *msg, size_t cap)
{
    if (chunk > 0 && chunk % NPU_PREFILL_CHUNK_ALIGN == 0) return 1;
    return fail(msg, cap, "`prefill_chunk_size` must be a positive integer divisible by 64. [P: optimum-rbln's rule; "
                "the page states none]");
}

int npu_rule_vllm_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap)
{
    if (npu_is_pow2(block) && block >= p->vllm_block_min && block <= p->vllm_block_max) return 1;
    return fail(msg, cap, "block_size (%lld) must be a power of two within the supported range for %s (%lld-%lld tokens)%s",
                (long long)block, p->family, (long long)p->vllm_block_min, (long long)p->vllm_block_max,
                p->vllm_range_documented ? "" : " [P: ATOM's compiled-path range; the page gives Rebel100's only]");
}

int npu_rule_compiled_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap)
{
    /* Some max_model_len makes the block legal: Naive (block == max_model_len) or Flash (block = partition). */
    const int64_t top = p->eager_max_seq_len > p->flash_partition_max ? p->eager_max_seq_len : p->flash_partition_max;
    if (npu_is_pow2(block) && block <= top) return 1;
    return fail(msg, cap, "block_size (%lld) must be a power of two within the supported range for %s (Naive up to %lld, "
                "Flash %lld-%lld tokens)", (long long)block, p->family, (long long)p->eager_max_seq_len,
                (long long)p->flash_partition_min, (long long)p->flash_partition_max);
}

int npu_rule_head_size(uint32_t head_size, char *msg, size_t cap)
{
    for (size_t i = 0; i < HEAD_SIZE_COUNT; i++)
        if (head_sizes[i] == head_size) return 1;
    char list[96];
    npu_head_sizes_string(list, sizeof list);
    return fail(msg, cap, "Head size %u is not supported by PagedAttention. Supported head sizes are: %s. [P: the head "
                "sizes vllm-rbln's attention backend lists]", head_size, list);
}

int npu_rule_window(const npu_profile_t *p, int64_t window, int64_t chunk, char *msg, size_t cap)
{
    const int64_t max = npu_profile_window_max(p, chunk);
    if (window <= max) return 1;
    return fail(msg, cap, "Sliding window size (%lld) must be less than %lld - prefill_chunk_size (%lld) [P: optimum-rbln's "
                "validate_sliding_window]", (long long)window, (long long)p->sliding_window_base, (long long)max);
}
