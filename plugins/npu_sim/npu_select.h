/* npu_select.h — Rebellions' attention-kernel selection rules (docs/backends/npu_sim.md, "Kernel
 * selection"), for select_attention, the capability answers and attention_plan alike, so the three
 * cannot disagree. Messages are the vendor's own where the vendor has one (optimum-rbln
 * validate_attention_method, set_default_values, validate_sliding_window; vllm-rbln's attention
 * backend; the docs), with the profile's limits filled in. */
#ifndef ATTNRT_NPU_SELECT_H
#define ATTNRT_NPU_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "attnrt_plugin.h"
#include "npu_profile.h"

#define NPU_MSG_MAX 512

/* [S] vllm-rbln: "Naive Attention does not support FP8 KV cache." (docs, Attention Modes) */
extern const char npu_msg_fp8_naive[];
/* [S] vllm-rbln RBLNFlashAttentionImpl: the warning with which it drops a soft cap. */
extern const char npu_msg_softcap[];

/* Who asks: the device's profile, its front end (ATTNRT_FRONT_END_VLLM or _COMPILED: what a config's
 * ATTNRT_FRONT_END_DEFAULT means) and its prefill chunk (what a config's 0 means). */
typedef struct npu_select_ctx {
    const npu_profile_t *profile;
    uint32_t             front_end;
    int64_t              prefill_chunk;
} npu_select_ctx_t;

/* The kernel for a model configuration (config->struct_size honoured), or the first rule that refuses
 * it: ATTNRT_ERR_UNSUPPORTED (a device rule) or ATTNRT_ERR_INVALID_ARGUMENT (a malformed config, an
 * unknown attn_impl) with the message in msg. *sel is written in full (sizeof) on success. */
attnrt_status_t npu_select(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config,
                           attnrt_attention_selection_t *sel, char *msg, size_t cap);

/* Single rules, shared with the capability answers. Each returns 1 when the value passes, else 0 with
 * the vendor's message in msg. */
int npu_rule_prefill_chunk(int64_t chunk, char *msg, size_t cap);
int npu_rule_vllm_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap);
int npu_rule_compiled_block(const npu_profile_t *p, int64_t block, char *msg, size_t cap);
int npu_rule_head_size(uint32_t head_size, char *msg, size_t cap);
int npu_rule_window(const npu_profile_t *p, int64_t window, int64_t chunk, char *msg, size_t cap);

/* "[32, 64, 80, 96, 128, 160, 192, 224, 256]" [S: vllm-rbln get_supported_head_sizes]. */
void npu_head_sizes_string(char *buf, size_t cap);

#endif
