/* npu_select.h — Rebellions' attention-kernel selection rules (docs/backends/npu_sim_rules.md), for
 * select_attention, the capability answers and attention_plan / mla_plan alike, so they cannot
 * disagree. Messages are the vendor's own where the vendor has one (RBLN's "Attention modes" page,
 * optimum-rbln's validate_attention_method, vllm-rbln's backend), with the profile's limits filled in;
 * every refusal ends with the profile, the front end and what would be accepted instead. */
#ifndef ATTNRT_NPU_SELECT_H
#define ATTNRT_NPU_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "npu_profile.h"

#define NPU_MSG_MAX 768

/* [page] "Naive Attention does not support FP8 KV cache." */
extern const char npu_msg_fp8_naive[];
/* [S] vllm-rbln RBLNFlashAttentionImpl: the warning with which it drops a soft cap. */
extern const char npu_msg_softcap[];

/* Who asks: the device's profile, its front end (ATTNRT_FRONT_END_VLLM or _COMPILED: what a config's
 * ATTNRT_FRONT_END_DEFAULT means), its prefill chunk (what a config's 0 means) and the model kind its
 * plans assume (a config names its own: 0 there is a decoder). */
typedef struct npu_select_ctx {
    const npu_profile_t *profile;
    uint32_t             front_end;
    int64_t              prefill_chunk;
    uint32_t             model_kind;
} npu_select_ctx_t;

/* The kernel for a model configuration (config->struct_size honoured), or the first rule that refuses
 * it: ATTNRT_ERR_UNSUPPORTED (a device rule) or ATTNRT_ERR_INVALID_ARGUMENT (a malformed config, an
 * unknown attn_impl) with the message in msg, followed by " [profile, front end: what is accepted]".
 * *sel is written in full (sizeof) on success. */
attnrt_status_t npu_select(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config,
                           attnrt_attention_selection_t *sel, char *msg, size_t cap);

/* The rules alone: npu_select without the closing hint (the hint asks them about alternatives). */
attnrt_status_t npu_select_rules(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config,
                                 attnrt_attention_selection_t *sel, char *msg, size_t cap);

/* The power-of-two block sizes (ascending, at most `max`) that make `config` acceptable with its
 * attn_impl and partition_len left to their defaults; returns how many there are in all. */
size_t npu_select_blocks(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config, int64_t *blocks,
                         size_t max);

/* " [rbln-atom, vLLM path: accepted: ...]" for a refused config, appended to msg (cap its size). */
void npu_select_hint(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config, attnrt_status_t st,
                     char *msg, size_t cap);

/* "decoder", "pooling", "pooling_qwen3", "encoder_decoder"; NULL for an unknown kind. */
const char *npu_model_kind_name(uint32_t kind);
/* The kind named `name` (an open option's value), or -1. */
int npu_model_kind_parse(const char *name);

/* Single rules, shared with the capability answers. Each returns 1 when the value passes, else 0 with
 * the message in msg. */
int npu_rule_prefill_chunk(int64_t chunk, char *msg, size_t cap);
int npu_rule_vllm_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap);
int npu_rule_compiled_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap);
int npu_rule_head_size(uint32_t head_size, char *msg, size_t cap);
int npu_rule_window(const npu_profile_t *p, int64_t window, int64_t chunk, char *msg, size_t cap);

/* "[32, 64, 80, 96, 128, 160, 192, 224, 256]" [vllm-rbln get_supported_head_sizes]. */
void npu_head_sizes_string(char *buf, size_t cap);

static inline int npu_is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

#endif
