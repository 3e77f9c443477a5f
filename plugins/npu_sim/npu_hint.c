/* npu_hint.c — what a refusal says would be accepted instead. Every alternative it names is found by
 * asking the rules again with one thing changed (the block size, the cache dtype, the MLA kind, the
 * window, the head size, the prefill chunk), so a suggestion is never itself refused. */
#include <stdio.h>
#include <string.h>

#include "npu_select.h"
#include "plugin_struct.h"

#define BLOCK_LOG2_MAX 20 /* block sizes asked about: 1 .. 2^20 */

static int accepted(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *c, attnrt_attention_selection_t *sel)
{
    char scratch[NPU_MSG_MAX];
    return npu_select_rules(ctx, c, sel, scratch, sizeof scratch) == ATTNRT_OK;
}

/* The caller's config with its fields up to our sizeof (the rest zero), struct_size ours. */
static attnrt_attention_config_t copy_config(const attnrt_attention_config_t *config)
{
    attnrt_attention_config_t c;
    PLUGIN_COPY_IN(c, config);
    c.struct_size = sizeof c;
    return c;
}

size_t npu_select_blocks(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config, int64_t *blocks,
                         size_t max)
{
    attnrt_attention_config_t c = copy_config(config);
    c.attn_impl[0] = '\0';
    c.partition_len = 0;
    size_t n = 0;
    for (int k = 0; k <= BLOCK_LOG2_MAX; k++) {
        attnrt_attention_selection_t sel;
        c.block_size = (int64_t)1 << k;
        if (!accepted(ctx, &c, &sel)) continue;
        if (n < max) blocks[n] = c.block_size;
        n++;
    }
    return n;
}

typedef struct text {
    char  *buf;
    size_t cap, used;
    int    items;
} text_t;

static void put(text_t *t, const char *s)
{
    if (t->used + 1 >= t->cap) return;
    const int w = snprintf(t->buf + t->used, t->cap - t->used, "%s", s);
    t->used += w > 0 ? (size_t)w : 0;
    if (t->used >= t->cap) t->used = t->cap - 1;
}

static void alternative(text_t *t, const char *s)
{
    put(t, t->items++ ? "; or " : "; accepted: ");
    put(t, s);
}

/* "block_size 1024, 2048 (Flash) or 8192 (Naive)" from the blocks that make the config acceptable. */
static void block_alternatives(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config, text_t *t)
{
    int64_t blocks[BLOCK_LOG2_MAX + 1];
    const size_t n = npu_select_blocks(ctx, config, blocks, BLOCK_LOG2_MAX + 1);
    if (!n) return;
    char flash[160] = "", naive[64] = "", line[288];
    attnrt_attention_config_t c = copy_config(config);
    c.attn_impl[0] = '\0';
    c.partition_len = 0;
    for (size_t i = 0; i < n; i++) {
        attnrt_attention_selection_t sel;
        c.block_size = blocks[i];
        if (!accepted(ctx, &c, &sel)) continue;
        const int is_flash = sel.partition_len > 0 || (c.layer_kind == ATTNRT_LAYER_SLIDING && strstr(sel.notes, "flash"));
        char *dst = is_flash ? flash : naive;
        const size_t size = is_flash ? sizeof flash : sizeof naive, len = strlen(dst);
        snprintf(dst + len, size - len, "%s%lld", len ? ", " : "", (long long)blocks[i]);
    }
    snprintf(line, sizeof line, "block_size %s%s%s%s%s%s", flash, flash[0] ? " (Flash)" : "",
             flash[0] && naive[0] ? " or " : "", naive, naive[0] ? " (Naive)" : "",
             config->attn_impl[0] || config->partition_len ? " with attn_impl and partition_len unset" : "");
    alternative(t, line);
}

void npu_select_hint(const npu_select_ctx_t *ctx, const attnrt_attention_config_t *config, attnrt_status_t st,
                     char *msg, size_t cap)
{
    if (!msg || !cap) return;
    const size_t len = strlen(msg);
    text_t t = {msg + len, cap - len, 0, 0};
    const attnrt_attention_config_t given = copy_config(config);
    const uint32_t fe = given.front_end ? given.front_end : ctx->front_end;
    put(&t, " [");
    put(&t, ctx->profile->name);
    put(&t, fe == ATTNRT_FRONT_END_COMPILED ? ", compiled path" : fe == ATTNRT_FRONT_END_VLLM ? ", vLLM path" : "");
    if (st == ATTNRT_ERR_UNSUPPORTED) {
        attnrt_attention_selection_t sel;
        attnrt_attention_config_t c = given;
        char line[256];
        block_alternatives(ctx, &given, &t);
        c = given;
        c.kv_dtype = (attnrt_dtype_t){0, 0, 0};
        if (given.kv_dtype.bits == 8 && accepted(ctx, &c, &sel)) alternative(&t, "a non-FP8 cache");
        c = given;
        c.layer_kind = ATTNRT_LAYER_MLA_SPARSE;
        if (given.layer_kind == ATTNRT_LAYER_MLA_DENSE && accepted(ctx, &c, &sel)) alternative(&t, "Sparse MLA");
        const int64_t chunk = given.prefill_chunk ? given.prefill_chunk : ctx->prefill_chunk;
        if (given.layer_kind == ATTNRT_LAYER_SLIDING) {
            c = given;
            c.sliding_window = npu_profile_window_max(ctx->profile, chunk);
            snprintf(line, sizeof line, "sliding_window <= %lld", (long long)c.sliding_window);
            if (given.sliding_window > c.sliding_window && accepted(ctx, &c, &sel)) alternative(&t, line);
        }
        if (given.head_dim && !npu_rule_head_size(given.head_dim, NULL, 0)) {
            c = given;
            c.head_dim = 128;
            snprintf(line, sizeof line, "head_dim one of ");
            npu_head_sizes_string(line + strlen(line), sizeof line - strlen(line));
            if (accepted(ctx, &c, &sel)) alternative(&t, line);
        }
        if (!npu_rule_prefill_chunk(chunk, NULL, 0)) {
            c = given;
            c.prefill_chunk = ctx->profile->default_prefill_chunk;
            if (accepted(ctx, &c, &sel)) alternative(&t, "prefill_chunk a positive multiple of 64");
        }
        if (!t.items) {
            const npu_profile_t *p = ctx->profile;
            if (fe == ATTNRT_FRONT_END_COMPILED)
                snprintf(line, sizeof line, "; no block_size at max_model_len %lld: Naive needs a power-of-two "
                         "max_model_len up to %lld, Flash a power-of-two block_size in %lld-%lld dividing max_model_len "
                         "at least twice", (long long)given.max_model_len, (long long)p->eager_max_seq_len,
                         (long long)p->flash_partition_min, (long long)p->flash_partition_max);
            else
                snprintf(line, sizeof line, "; no block_size at max_model_len %lld: Naive needs a power-of-two "
                         "max_model_len in %lld-%lld, Flash a power-of-two block_size in that range below it",
                         (long long)given.max_model_len, (long long)p->vllm_block_min, (long long)p->vllm_block_max);
            put(&t, line);
        }
    }
    put(&t, "]");
}
