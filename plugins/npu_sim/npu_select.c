/* npu_select.c — kernel selection for both front ends, in the vendor's validation order.
 *
 * Compiled (optimum-rbln) path, as set_default_values + validate_attention_method +
 * validate_sliding_window run it: prefill chunk; defaults (impl eager; a partition switches eager to
 * flash with a warning; flash takes the device's default partition; block = max_seq_len or partition);
 * unknown impl; eager limit; flash "multiple of the partition, at least 2"; partition range; block equal
 * to the partition (flash) or to max_seq_len (eager); then FP8 and the sliding window.
 * vLLM model path (vllm-rbln): block_size a power of two in the device range; Naive iff
 * block_size == max_model_len and no sinks, else Flash with partition = block_size; head sizes from
 * the backend's list; then FP8 and the sliding window. Messages marked [P] are ours (the vendor has no
 * message for that rule, or none we could source); the others are the vendor's, verbatim. */
#include "npu_select.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin_struct.h"

const char npu_msg_fp8_naive[] = "Naive Attention does not support FP8 KV cache.";
const char npu_msg_softcap[] = "RBLN Attention Backend does not support logits soft cap. Outputs may be slightly off.";

static const char msg_prefill[] = "`prefill_chunk_size` must be a positive integer divisible by 64.";
static const char msg_switch[] = "A non-null `kvcache_partition_len` was provided, but `attn_impl` was not explicitly set or "
                                 "set to 'eager'. Since KV cache partitioning is only supported with flash attention, "
                                 "`attn_impl` has been automatically switched to 'flash_attn'.";

static const uint32_t head_sizes[] = {32, 64, 80, 96, 128, 160, 192, 224, 256};
#define HEAD_SIZE_COUNT (sizeof head_sizes / sizeof head_sizes[0])

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

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

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
    return fail(msg, cap, "%s", msg_prefill);
}

int npu_rule_vllm_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap)
{
    if (is_pow2(block) && block >= p->vllm_block_min && block <= p->vllm_block_max) return 1;
    /* [P] wording of the docs' rule: "block_size must be a power of two within the supported range" */
    return fail(msg, cap, "block_size (%lld) must be a power of two within the supported range for %s (%lld-%lld tokens)",
                (long long)block, p->family, (long long)p->vllm_block_min, (long long)p->vllm_block_max);
}

int npu_rule_compiled_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap)
{
    /* Some max_seq_len makes the block legal: eager (block == max_seq_len) or flash (block == partition). */
    if (block >= 1 && (block <= p->eager_max_seq_len || block <= p->flash_partition_max)) return 1;
    return fail(msg, cap, "`kvcache_partition_len` (%lld) is out of the supported range for 'flash_attn' (%lld <= "
                "`kvcache_partition_len` <= %lld). Please provide a valid value within this range.",
                (long long)block, (long long)p->flash_partition_min, (long long)p->flash_partition_max);
}

int npu_rule_head_size(uint32_t head_size, char *msg, size_t cap)
{
    for (size_t i = 0; i < HEAD_SIZE_COUNT; i++)
        if (head_sizes[i] == head_size) return 1;
    char list[96];
    npu_head_sizes_string(list, sizeof list);
    return fail(msg, cap, "Head size %u is not supported by PagedAttention. Supported head sizes are: %s.", head_size, list);
}

int npu_rule_window(const npu_profile_t *p, int64_t window, int64_t chunk, char *msg, size_t cap)
{
    const int64_t max = npu_profile_window_max(p, chunk);
    if (window <= max) return 1;
    return fail(msg, cap, "Sliding window size (%lld) must be less than %lld - prefill_chunk_size (%lld)", (long long)window,
                (long long)p->sliding_window_base, (long long)max);
}

/* ---- selection ---------------------------------------------------------------------------------- */

typedef enum { IMPL_NONE, IMPL_EAGER, IMPL_FLASH, IMPL_UNKNOWN } impl_t;

typedef struct state {
    const npu_profile_t *p;
    attnrt_attention_config_t c;
    char   impl_text[sizeof ((attnrt_attention_config_t *)0)->attn_impl + 1];
    impl_t impl;
    int64_t chunk, block, partition;
    int    naive;      /* the chosen kernel does not partition */
    char   notes[sizeof ((attnrt_attention_selection_t *)0)->notes];
} state_t;

static void note(state_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(state_t *s, const char *fmt, ...)
{
    size_t used = strlen(s->notes);
    if (used + 3 >= sizeof s->notes) return;
    if (used) used += (size_t)snprintf(s->notes + used, sizeof s->notes - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes + used, sizeof s->notes - used, fmt, ap);
    va_end(ap);
}

static impl_t parse_impl(const char *t)
{
    if (!t[0]) return IMPL_NONE;
    if (!strcmp(t, "eager") || !strcmp(t, "naive")) return IMPL_EAGER;
    if (!strcmp(t, "flash_attn") || !strcmp(t, "flash")) return IMPL_FLASH;
    return IMPL_UNKNOWN;
}

static attnrt_status_t refuse(char *msg, size_t cap, attnrt_status_t st, const char *text)
{
    if (msg && cap) snprintf(msg, cap, "%s", text);
    return st;
}

static attnrt_status_t unknown_impl(const state_t *s, char *msg, size_t cap)
{
    if (msg && cap)
        snprintf(msg, cap, "Unknown `attn_impl` : %s. (Available : 'eager', 'flash_attn`)", s->impl_text);
    return ATTNRT_ERR_INVALID_ARGUMENT;
}

/* optimum-rbln: set_default_values then validate_attention_method. */
static attnrt_status_t compiled_path(state_t *s, char *msg, size_t cap)
{
    const npu_profile_t *p = s->p;
    const int64_t S = s->c.max_model_len;
    int64_t P = s->c.partition_len, B = s->c.block_size;
    impl_t impl = s->impl == IMPL_NONE ? IMPL_EAGER : s->impl;
    if (P && impl == IMPL_EAGER) {
        impl = IMPL_FLASH;
        note(s, "%s", msg_switch);
    }
    if (!P && impl == IMPL_FLASH) {
        P = p->flash_default_partition;
        note(s, "kvcache_partition_len defaulted to %lld", (long long)P);
    }
    if (!B && impl != IMPL_UNKNOWN) {
        B = impl == IMPL_EAGER ? S : P;
        note(s, "kvcache_block_size defaulted to %lld", (long long)B);
    }
    if (impl == IMPL_UNKNOWN) return unknown_impl(s, msg, cap);
    if (impl == IMPL_EAGER && S > p->eager_max_seq_len) {
        snprintf(msg, cap, "`max_seq_len` is set to %lld, which exceeds the limit of %lld for 'eager' attention. Please "
                 "reduce the `max_seq_len` to %lld or lower, or consider switching `attn_impl` to 'flash_attn' for larger "
                 "sequence lengths.", (long long)S, (long long)p->eager_max_seq_len, (long long)p->eager_max_seq_len);
        return ATTNRT_ERR_UNSUPPORTED;
    }
    if (impl == IMPL_FLASH) {
        if (S / P < 2 || S % P != 0) {
            snprintf(msg, cap, "`max_seq_len` (%lld) must be a multiple of `kvcache_partition_len` (%lld) when using "
                     "'flash_attn'. Please adjust either value to meet this requirement.", (long long)S, (long long)P);
            return ATTNRT_ERR_UNSUPPORTED;
        }
        if (P < p->flash_partition_min || P > p->flash_partition_max) {
            snprintf(msg, cap, "`kvcache_partition_len` (%lld) is out of the supported range for 'flash_attn' (%lld <= "
                     "`kvcache_partition_len` <= %lld). Please provide a valid value within this range.", (long long)P,
                     (long long)p->flash_partition_min, (long long)p->flash_partition_max);
            return ATTNRT_ERR_UNSUPPORTED;
        }
    }
    if (impl == IMPL_FLASH && P != B) {
        snprintf(msg, cap, " When using 'flash attention', the `kvcache_block_size` (%lld)  must always be set equal to "
                 "the `kvcache_partition_len` %lld.", (long long)B, (long long)P);
        return ATTNRT_ERR_UNSUPPORTED;
    }
    if (impl == IMPL_EAGER && B != S) {
        snprintf(msg, cap, " When using 'eager attention', the `kvcache_block_size` (%lld)  must always be set equal to "
                 "the `max_seq_len` %lld.", (long long)B, (long long)S);
        return ATTNRT_ERR_UNSUPPORTED;
    }
    s->naive = impl == IMPL_EAGER;
    s->block = B;
    s->partition = s->naive ? 0 : P;
    return ATTNRT_OK;
}

/* vllm-rbln's model path: block_size selects the kernel. */
static attnrt_status_t vllm_path(state_t *s, char *msg, size_t cap)
{
    const npu_profile_t *p = s->p;
    const int64_t S = s->c.max_model_len;
    const int mla = s->c.layer_kind == ATTNRT_LAYER_MLA_DENSE || s->c.layer_kind == ATTNRT_LAYER_MLA_SPARSE;
    if (s->impl == IMPL_UNKNOWN) return unknown_impl(s, msg, cap);
    if (!p->vllm_range_documented)
        note(s, "[P] the vLLM model path runs on Rebel100 only; %s uses its compiled-path range %lld-%lld", p->family,
             (long long)p->vllm_block_min, (long long)p->vllm_block_max);
    int64_t B = s->c.block_size;
    if (!B) { /* [P] the docs call block_size required; we fill it as optimum would */
        B = is_pow2(S) && S >= p->vllm_block_min && S <= p->vllm_block_max && !s->c.has_sinks ? S
                                                                                               : p->flash_default_partition;
        note(s, "[P] block_size not given: %lld", (long long)B);
    }
    if (!npu_rule_vllm_block(p, B, msg, cap)) return ATTNRT_ERR_UNSUPPORTED;
    if (B > S) {
        snprintf(msg, cap, "block_size (%lld) exceeds max_model_len (%lld); Naive Attention needs block_size == "
                 "max_model_len", (long long)B, (long long)S); /* [P] */
        return ATTNRT_ERR_UNSUPPORTED;
    }
    if (S % B != 0) {
        snprintf(msg, cap, "max_model_len (%lld) must be a multiple of block_size (%lld) for Flash Attention",
                 (long long)S, (long long)B); /* [P] the docs: "max_model_len is a multiple of block_size: Flash" */
        return ATTNRT_ERR_UNSUPPORTED;
    }
    if (s->c.partition_len && s->c.partition_len != B) {
        snprintf(msg, cap, " When using 'flash attention', the `kvcache_block_size` (%lld)  must always be set equal to "
                 "the `kvcache_partition_len` %lld.", (long long)B, (long long)s->c.partition_len);
        return ATTNRT_ERR_UNSUPPORTED;
    }
    s->naive = B == S && !s->c.has_sinks;
    if (B == S && s->c.has_sinks) note(s, "attention sinks: Flash with a single partition");
    if ((s->impl == IMPL_EAGER && !s->naive) || (s->impl == IMPL_FLASH && s->naive))
        note(s, "attn_impl '%s' ignored: on the vLLM model path block_size and max_model_len select the kernel",
             s->impl_text);
    if (!mla && s->c.head_dim && !npu_rule_head_size(s->c.head_dim, msg, cap)) return ATTNRT_ERR_UNSUPPORTED;
    s->block = B;
    s->partition = s->naive ? 0 : B;
    return ATTNRT_OK;
}

static int dtype_is_fp8(attnrt_dtype_t dt)
{
    return dt.bits == 8 && (dt.code == ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN || dt.code == ATTNRT_DTYPE_CODE_FLOAT8_E5M2);
}

attnrt_status_t npu_select(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config,
                           attnrt_attention_selection_t *sel, char *msg, size_t cap)
{
    state_t s;
    memset(&s, 0, sizeof s);
    if (msg && cap) msg[0] = '\0';
    if (!config || !sel)
        return refuse(msg, cap, ATTNRT_ERR_INVALID_ARGUMENT, "select_attention: config and selection are required");
    PLUGIN_COPY_IN(s.c, config);
    s.p = ctx->profile;
    memcpy(s.impl_text, s.c.attn_impl, sizeof s.c.attn_impl);
    s.impl = parse_impl(s.impl_text);

    const uint32_t fe = s.c.front_end ? s.c.front_end : ctx->front_end;
    if (fe != ATTNRT_FRONT_END_VLLM && fe != ATTNRT_FRONT_END_COMPILED) {
        snprintf(msg, cap, "front_end = %u is not an attnrt_front_end (0 default, 1 vLLM, 2 compiled)", s.c.front_end);
        return ATTNRT_ERR_INVALID_ARGUMENT;
    }
    if (s.c.layer_kind > ATTNRT_LAYER_MLA_SPARSE) {
        snprintf(msg, cap, "layer_kind = %u is not an attnrt_layer_kind", s.c.layer_kind);
        return ATTNRT_ERR_INVALID_ARGUMENT;
    }
    if (s.c.max_model_len <= 0 || s.c.block_size < 0 || s.c.partition_len < 0) {
        snprintf(msg, cap, "max_model_len = %lld, block_size = %lld, partition_len = %lld: max_model_len must be > 0 and "
                 "the others >= 0 (0 = default)", (long long)s.c.max_model_len, (long long)s.c.block_size,
                 (long long)s.c.partition_len);
        return ATTNRT_ERR_INVALID_ARGUMENT;
    }
    s.chunk = s.c.prefill_chunk ? s.c.prefill_chunk : ctx->prefill_chunk;
    if (!npu_rule_prefill_chunk(s.chunk, msg, cap)) return ATTNRT_ERR_UNSUPPORTED;

    attnrt_status_t st = fe == ATTNRT_FRONT_END_COMPILED ? compiled_path(&s, msg, cap) : vllm_path(&s, msg, cap);
    if (st != ATTNRT_OK) return st;

    /* FP8 KV cache [S]: full attention with Flash only; MLA in sparse MLA only. */
    if (dtype_is_fp8(s.c.kv_dtype)) {
        if (s.c.layer_kind == ATTNRT_LAYER_MLA_DENSE)
            return refuse(msg, cap, ATTNRT_ERR_UNSUPPORTED,
                          "FP8 KV cache is supported only in sparse MLA; dense MLA does not support it."); /* [P] */
        if (s.c.layer_kind != ATTNRT_LAYER_MLA_SPARSE && s.naive)
            return refuse(msg, cap, ATTNRT_ERR_UNSUPPORTED, npu_msg_fp8_naive);
        if (s.c.layer_kind == ATTNRT_LAYER_SLIDING)
            return refuse(msg, cap, ATTNRT_ERR_UNSUPPORTED, "Naive Attention does not support FP8 KV cache. (The "
                          "sliding-window kernel is a naive kernel: sliding_window_attention_naive.)");
    }

    memset(sel, 0, sizeof *sel);
    sel->struct_size = sizeof *sel;
    sel->prefill_chunk = s.chunk;
    const int64_t S = s.c.max_model_len;
    if (s.c.layer_kind == ATTNRT_LAYER_SLIDING) {
        if (s.c.sliding_window <= 0) {
            snprintf(msg, cap, "sliding_window = %lld: a sliding-window layer needs a window > 0",
                     (long long)s.c.sliding_window);
            return ATTNRT_ERR_INVALID_ARGUMENT;
        }
        if (!npu_rule_window(s.p, s.c.sliding_window, s.chunk, msg, cap)) return ATTNRT_ERR_UNSUPPORTED;
        snprintf(sel->kernel, sizeof sel->kernel, "sliding_window");
        sel->block_size = s.c.sliding_window; /* one block of window size per request [S: vllm-rbln] */
        sel->partition_len = 0;
        sel->num_partitions = 1;
        note(&s, "full-attention layers: %s, block_size %lld", s.naive ? "naive" : "flash", (long long)s.block);
    } else {
        const char *prefix = s.c.layer_kind == ATTNRT_LAYER_MLA_SPARSE ? "mla_sparse_"
                           : s.c.layer_kind == ATTNRT_LAYER_MLA_DENSE  ? "mla_" : "";
        snprintf(sel->kernel, sizeof sel->kernel, "%s%s", prefix, s.naive ? "naive" : "flash");
        sel->block_size = s.block;
        sel->partition_len = s.partition;
        sel->num_partitions = s.naive ? 1 : S / s.partition;
    }
    snprintf(sel->notes, sizeof sel->notes, "%s", s.notes);
    return ATTNRT_OK;
}
