/* npu_select.c — kernel selection for both front ends, every model kind, in the vendor's order
 * (docs/backends/npu_sim_rules.md has the table, each rule with its source).
 *
 * Model kinds (the page): pooling and encoder-decoder models use Naive with block_size ==
 * max_model_len (an omitted block size becomes max_model_len); pooling models on a Qwen3 backbone
 * take the same default but may select Flash with an explicit block size.
 * Compiled (transformers / optimum) path: the block size decides as the page says (Naive iff block ==
 * max_model_len; Flash iff block < max_model_len, max_model_len a multiple of it, partition = block),
 * optimum-rbln's raw settings (attn_impl, kvcache_partition_len) and its defaults are honoured, and
 * optimum-rbln's validate_attention_method refuses in its order and words; then the page's
 * power-of-two rule on the block.
 * vLLM model path: block_size a power of two in the device range; Naive iff block_size ==
 * max_model_len and no sinks, else Flash with partition = block_size and ceil(max_model_len / block)
 * partitions. Then, both paths: FP8 (Flash only; sparse MLA only), sliding windows, head sizes. */
#include "npu_select.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plugin_struct.h"

static const char msg_switch[] = "A non-null `kvcache_partition_len` was provided, but `attn_impl` was not explicitly set or "
                                 "set to 'eager'. Since KV cache partitioning is only supported with flash attention, "
                                 "`attn_impl` has been automatically switched to 'flash_attn'.";

typedef enum { IMPL_NONE, IMPL_EAGER, IMPL_FLASH, IMPL_UNKNOWN } impl_t;

typedef struct state {
    const npu_profile_t *p;
    attnrt_attention_config_t c;
    char    impl_text[sizeof ((attnrt_attention_config_t *)0)->attn_impl + 1];
    impl_t  impl;
    int64_t chunk, block, partition;
    int     naive;      /* the chosen kernel does not partition */
    int     mla;        /* an MLA layer (dense or sparse)      */
    char   *msg;
    size_t  cap;
    char    notes[sizeof ((attnrt_attention_selection_t *)0)->notes];
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

static attnrt_status_t refuse(state_t *s, attnrt_status_t st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static attnrt_status_t refuse(state_t *s, attnrt_status_t st, const char *fmt, ...)
{
    if (s->msg && s->cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->msg, s->cap, fmt, ap);
        va_end(ap);
    }
    return st;
}

static impl_t parse_impl(const char *t)
{
    if (!t[0]) return IMPL_NONE;
    if (!strcmp(t, "eager") || !strcmp(t, "naive")) return IMPL_EAGER;
    if (!strcmp(t, "flash_attn") || !strcmp(t, "flash")) return IMPL_FLASH;
    return IMPL_UNKNOWN;
}

static int naive_only(uint32_t kind) { return kind == ATTNRT_MODEL_POOLING || kind == ATTNRT_MODEL_ENCODER_DECODER; }

static const char *kind_text(uint32_t kind)
{
    return kind == ATTNRT_MODEL_ENCODER_DECODER ? "Encoder-decoder models" : "Pooling models";
}

/* The page: pooling and encoder-decoder models derive block_size = max_model_len (so does a
 * Qwen3-backbone pooling model when given no block size), and never ask for Flash. */
static attnrt_status_t model_kind_defaults(state_t *s)
{
    const uint32_t kind = s->c.model_kind;
    const int64_t S = s->c.max_model_len;
    if (naive_only(kind) && (s->impl == IMPL_FLASH || (s->c.partition_len && s->c.partition_len != S)))
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, "%s use Naive Attention with block_size == max_model_len (%lld); "
                      "attn_impl '%s' / kvcache_partition_len %lld asks for Flash", kind_text(kind), (long long)S,
                      s->impl_text, (long long)s->c.partition_len);
    if (kind == ATTNRT_MODEL_DECODER || s->c.block_size) return ATTNRT_OK;
    s->c.block_size = S;
    note(s, "%s: block_size derived = max_model_len %lld", npu_model_kind_name(kind), (long long)S);
    return ATTNRT_OK;
}

/* The page: pooling and encoder-decoder models use Naive with block_size == max_model_len. */
static attnrt_status_t model_kind_naive(state_t *s)
{
    const uint32_t kind = s->c.model_kind;
    const int64_t S = s->c.max_model_len;
    if (!naive_only(kind) || s->naive) return ATTNRT_OK;
    if (s->c.block_size != S)
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, "%s use Naive Attention with block_size == max_model_len (%lld); "
                      "block_size %lld is not accepted", kind_text(kind), (long long)S, (long long)s->c.block_size);
    return refuse(s, ATTNRT_ERR_UNSUPPORTED, "%s use Naive Attention, which a layer with attention sinks cannot use "
                  "(sinks select Flash Attention)", kind_text(kind));
}

/* The cache rules the capability answers apply first (a plan asks them before anything else): the
 * front end's block-size rule and, on the vLLM path, the backend's head sizes. */
static attnrt_status_t cache_rules(state_t *s)
{
    const int64_t B = s->c.block_size;
    if (B && s->c.front_end == ATTNRT_FRONT_END_COMPILED && !npu_rule_compiled_block(s->p, B, s->msg, s->cap))
        return ATTNRT_ERR_UNSUPPORTED;
    if (s->c.front_end != ATTNRT_FRONT_END_VLLM) return ATTNRT_OK;
    if (B && !npu_rule_vllm_block(s->p, B, s->msg, s->cap)) return ATTNRT_ERR_UNSUPPORTED;
    if (!s->mla && s->c.head_dim && !npu_rule_head_size(s->c.head_dim, s->msg, s->cap)) return ATTNRT_ERR_UNSUPPORTED;
    return ATTNRT_OK;
}

/* optimum-rbln's validate_attention_method, in its order and words, on the resolved settings. */
static attnrt_status_t compiled_validate(state_t *s, impl_t impl, int64_t P, int64_t B)
{
    const npu_profile_t *p = s->p;
    const int64_t S = s->c.max_model_len;
    if (impl == IMPL_EAGER && S > p->eager_max_seq_len)
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, "`max_seq_len` is set to %lld, which exceeds the limit of %lld for "
                      "'eager' attention. Please reduce the `max_seq_len` to %lld or lower, or consider switching "
                      "`attn_impl` to 'flash_attn' for larger sequence lengths.", (long long)S,
                      (long long)p->eager_max_seq_len, (long long)p->eager_max_seq_len);
    if (impl == IMPL_FLASH) {
        if (S / P < 2 || S % P != 0)
            return refuse(s, ATTNRT_ERR_UNSUPPORTED, "`max_seq_len` (%lld) must be a multiple of `kvcache_partition_len` "
                          "(%lld) when using 'flash_attn'. Please adjust either value to meet this requirement.",
                          (long long)S, (long long)P);
        if (P < p->flash_partition_min || P > p->flash_partition_max)
            return refuse(s, ATTNRT_ERR_UNSUPPORTED, "`kvcache_partition_len` (%lld) is out of the supported range for "
                          "'flash_attn' (%lld <= `kvcache_partition_len` <= %lld). Please provide a valid value within "
                          "this range.", (long long)P, (long long)p->flash_partition_min, (long long)p->flash_partition_max);
        if (P != B)
            return refuse(s, ATTNRT_ERR_UNSUPPORTED, " When using 'flash attention', the `kvcache_block_size` (%lld)  "
                          "must always be set equal to the `kvcache_partition_len` %lld.", (long long)B, (long long)P);
    } else if (B != S) {
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, " When using 'eager attention', the `kvcache_block_size` (%lld)  must "
                      "always be set equal to the `max_seq_len` %lld.", (long long)B, (long long)S);
    }
    if (!npu_is_pow2(B))
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, "block_size (%lld) must be a power of two within the supported range for "
                      "%s (Naive up to %lld, Flash %lld-%lld tokens)", (long long)B, p->family,
                      (long long)p->eager_max_seq_len, (long long)p->flash_partition_min, (long long)p->flash_partition_max);
    return ATTNRT_OK;
}

/* The compiled path: the kernel from the block size (the page), or from optimum-rbln's raw settings. */
static attnrt_status_t compiled_path(state_t *s)
{
    const npu_profile_t *p = s->p;
    const int64_t S = s->c.max_model_len;
    int64_t P = s->c.partition_len, B = s->c.block_size;
    impl_t impl = s->impl;
    if (impl == IMPL_UNKNOWN)
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "Unknown `attn_impl` : %s. (Available : 'eager', 'flash_attn`)",
                      s->impl_text);
    if (impl != IMPL_FLASH && P && P != S) { /* the page: a partition other than max_seq_len selects flash_attn */
        impl = IMPL_FLASH;
        note(s, "%s", msg_switch);
    } else if (impl == IMPL_NONE && B && B < S) {
        impl = IMPL_FLASH;
        P = P ? P : B;
        note(s, "block_size %lld < max_model_len: Flash Attention, partition = block_size", (long long)B);
    } else if (impl != IMPL_FLASH) {
        impl = IMPL_EAGER;
    }
    if (impl == IMPL_FLASH && !P) {
        P = B ? B : p->flash_default_partition;
        note(s, "kvcache_partition_len %s %lld", B ? "= block_size" : "defaulted to", (long long)P);
    }
    if (!B) {
        B = impl == IMPL_EAGER ? S : P;
        note(s, "kvcache_block_size defaulted to %lld", (long long)B);
    }
    attnrt_status_t st = compiled_validate(s, impl, P, B);
    if (st != ATTNRT_OK) return st;
    s->naive = impl == IMPL_EAGER;
    s->block = B;
    s->partition = s->naive ? 0 : P;
    return ATTNRT_OK;
}

/* [P] A decoder's block size when the vLLM path is given none (the docs call it required): max_model_len
 * when that is a legal Naive block, else the largest legal Flash block up to the device's default
 * partition; 0 when none is legal. */
static int64_t vllm_default_block(const state_t *s)
{
    const npu_profile_t *p = s->p;
    const int64_t S = s->c.max_model_len;
    if (npu_is_pow2(S) && S >= p->vllm_block_min && S <= p->vllm_block_max && !s->c.has_sinks) return S;
    int64_t best = 0;
    for (int64_t b = p->vllm_block_min; b <= p->vllm_block_max && b <= p->flash_default_partition; b *= 2)
        if (b < S || (b == S && s->c.has_sinks)) best = b;
    return best;
}

static attnrt_status_t vllm_path(state_t *s)
{
    const npu_profile_t *p = s->p;
    const int64_t S = s->c.max_model_len;
    if (s->impl == IMPL_UNKNOWN)
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "Unknown `attn_impl` : %s. (Available : 'eager', 'flash_attn`)",
                      s->impl_text);
    if (!p->vllm_range_documented)
        note(s, "[P] the vLLM model path runs on Rebel100 only; %s uses its compiled-path range %lld-%lld", p->family,
             (long long)p->vllm_block_min, (long long)p->vllm_block_max);
    int64_t B = s->c.block_size;
    if (!B) {
        B = vllm_default_block(s);
        if (!B)
            return refuse(s, ATTNRT_ERR_UNSUPPORTED, "no block_size fits max_model_len %lld: block_size must be a power of "
                          "two within the supported range for %s (%lld-%lld tokens) and at most max_model_len",
                          (long long)S, p->family, (long long)p->vllm_block_min, (long long)p->vllm_block_max);
        note(s, "[P] block_size not given: %lld", (long long)B);
    }
    if (!npu_rule_vllm_block(p, B, s->msg, s->cap)) return ATTNRT_ERR_UNSUPPORTED;
    if (B > S)
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, "block_size (%lld) exceeds max_model_len (%lld): Naive Attention needs "
                      "block_size == max_model_len, Flash Attention block_size < max_model_len", (long long)B,
                      (long long)S);
    if (s->c.partition_len && s->c.partition_len != B)
        return refuse(s, ATTNRT_ERR_UNSUPPORTED, " When using 'flash attention', the `kvcache_block_size` (%lld)  must "
                      "always be set equal to the `kvcache_partition_len` %lld.", (long long)B,
                      (long long)s->c.partition_len);
    s->naive = B == S && !s->c.has_sinks;
    if (B == S && s->c.has_sinks) note(s, "attention sinks: Flash with a single partition");
    if ((s->impl == IMPL_EAGER && !s->naive) || (s->impl == IMPL_FLASH && s->naive))
        note(s, "attn_impl '%s' ignored: on the vLLM model path block_size and max_model_len select the kernel",
             s->impl_text);
    if (S % B) note(s, "the last partition holds %lld of %lld tokens", (long long)(S % B), (long long)B);
    s->block = B;
    s->partition = s->naive ? 0 : B;
    return ATTNRT_OK;
}

static int dtype_is_fp8(attnrt_dtype_t dt)
{
    return dt.bits == 8 && (dt.code == ATTNRT_DTYPE_CODE_FLOAT8_E4M3FN || dt.code == ATTNRT_DTYPE_CODE_FLOAT8_E5M2);
}

/* What the config says, before any device rule: malformed fields are INVALID_ARGUMENT. */
static attnrt_status_t read_config(state_t *s, const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config)
{
    PLUGIN_COPY_IN(s->c, config);
    s->p = ctx->profile;
    memcpy(s->impl_text, s->c.attn_impl, sizeof s->c.attn_impl);
    s->impl = parse_impl(s->impl_text);
    const uint32_t given = s->c.front_end;
    s->c.front_end = given ? given : ctx->front_end;
    if (s->c.front_end != ATTNRT_FRONT_END_VLLM && s->c.front_end != ATTNRT_FRONT_END_COMPILED)
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "front_end = %u is not an attnrt_front_end (0 default, 1 vLLM, "
                      "2 compiled)", given);
    if (s->c.layer_kind > ATTNRT_LAYER_MLA_SPARSE)
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "layer_kind = %u is not an attnrt_layer_kind", s->c.layer_kind);
    if (!npu_model_kind_name(s->c.model_kind))
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "model_kind = %u is not an attnrt_model_kind (0 decoder, 1 pooling, "
                      "2 pooling on a Qwen3 backbone, 3 encoder-decoder)", s->c.model_kind);
    if (s->c.max_model_len <= 0 || s->c.block_size < 0 || s->c.partition_len < 0)
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "max_model_len = %lld, block_size = %lld, partition_len = %lld: "
                      "max_model_len must be > 0 and the others >= 0 (0 = default)", (long long)s->c.max_model_len,
                      (long long)s->c.block_size, (long long)s->c.partition_len);
    if (s->c.layer_kind == ATTNRT_LAYER_SLIDING && s->c.sliding_window <= 0)
        return refuse(s, ATTNRT_ERR_INVALID_ARGUMENT, "sliding_window = %lld: a sliding-window layer needs a window > 0",
                      (long long)s->c.sliding_window);
    s->mla = s->c.layer_kind == ATTNRT_LAYER_MLA_DENSE || s->c.layer_kind == ATTNRT_LAYER_MLA_SPARSE;
    s->chunk = s->c.prefill_chunk ? s->c.prefill_chunk : ctx->prefill_chunk;
    return ATTNRT_OK;
}

/* The layer's own rules once the full-attention kernel is known: FP8, the window. */
static attnrt_status_t layer_rules(state_t *s)
{
    if (dtype_is_fp8(s->c.kv_dtype)) {
        if (s->c.layer_kind == ATTNRT_LAYER_MLA_DENSE)
            return refuse(s, ATTNRT_ERR_UNSUPPORTED, "FP8 KV cache is supported only in Sparse MLA; Dense MLA does not "
                          "support it.");
        if (s->c.layer_kind == ATTNRT_LAYER_FULL && s->naive)
            return refuse(s, ATTNRT_ERR_UNSUPPORTED, "%s", npu_msg_fp8_naive);
    }
    if (s->c.layer_kind == ATTNRT_LAYER_SLIDING && !npu_rule_window(s->p, s->c.sliding_window, s->chunk, s->msg, s->cap))
        return ATTNRT_ERR_UNSUPPORTED;
    return ATTNRT_OK;
}

attnrt_status_t npu_select_rules(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config,
                                 attnrt_attention_selection_t *sel, char *msg, size_t cap)
{
    state_t s;
    memset(&s, 0, sizeof s);
    s.msg = msg;
    s.cap = cap;
    if (msg && cap) msg[0] = '\0';
    if (!config || !sel)
        return refuse(&s, ATTNRT_ERR_INVALID_ARGUMENT, "select_attention: config and selection are required");
    attnrt_status_t st = read_config(&s, ctx, config);
    if (st == ATTNRT_OK && !npu_rule_prefill_chunk(s.chunk, msg, cap)) st = ATTNRT_ERR_UNSUPPORTED;
    if (st == ATTNRT_OK) st = cache_rules(&s);
    if (st == ATTNRT_OK) st = model_kind_defaults(&s);
    if (st == ATTNRT_OK) st = s.c.front_end == ATTNRT_FRONT_END_COMPILED ? compiled_path(&s) : vllm_path(&s);
    if (st == ATTNRT_OK) st = model_kind_naive(&s);
    if (st == ATTNRT_OK) st = layer_rules(&s);
    if (st != ATTNRT_OK) return st;

    const int64_t S = s.c.max_model_len;
    memset(sel, 0, sizeof *sel);
    sel->struct_size = sizeof *sel;
    sel->prefill_chunk = s.chunk;
    if (s.c.layer_kind == ATTNRT_LAYER_SLIDING) {
        snprintf(sel->kernel, sizeof sel->kernel, "sliding_window");
        sel->block_size = s.c.sliding_window; /* one block of window size per request [vllm-rbln] */
        sel->num_partitions = 1;
        note(&s, "full-attention layers: %s, block_size %lld", s.naive ? "naive" : "flash", (long long)s.block);
    } else {
        const char *prefix = s.c.layer_kind == ATTNRT_LAYER_MLA_SPARSE ? "mla_sparse_" : s.mla ? "mla_" : "";
        snprintf(sel->kernel, sizeof sel->kernel, "%s%s", prefix, s.naive ? "naive" : "flash");
        sel->block_size = s.block;
        sel->partition_len = s.partition;
        sel->num_partitions = s.naive ? 1 : (S + s.partition - 1) / s.partition;
    }
    snprintf(sel->notes, sizeof sel->notes, "%s", s.notes);
    return ATTNRT_OK;
}

attnrt_status_t npu_select(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config,
                           attnrt_attention_selection_t *sel, char *msg, size_t cap)
{
    const attnrt_status_t st = npu_select_rules(ctx, config, sel, msg, cap);
    if (st != ATTNRT_OK && config && sel) npu_select_hint(ctx, config, st, msg, cap);
    return st;
}
