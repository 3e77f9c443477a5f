/* conform_cases.c - the case list: storage, names, and the directed cases.
 *
 * The directed cases are written by hand so that every option of every op is exercised at least once
 * in the default run, including the boundaries (empty rows, an empty batch, window edges, block size 1
 * and odd block sizes, all-padding writes, all-empty merges). The random sweep (conform_sweep.c) then
 * mixes the options freely.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_case.h"
#include "conform_cases_directed.h"
#include "conform_rng.h"

cf_case_t *cf_case_list_add(cf_case_list_t *list, const cf_case_t *c)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 64;
        cf_case_t *items = realloc(list->items, cap * sizeof *items);
        if (!items) return NULL;
        list->items = items;
        list->cap = cap;
    }
    list->items[list->count] = *c;
    return &list->items[list->count++];
}

void cf_case_list_free(cf_case_list_t *list)
{
    free(list->items);
    memset(list, 0, sizeof *list);
}

uint64_t cf_case_seed(uint64_t global_seed, uint64_t index)
{
    uint64_t x = global_seed ^ (index * 0xd1b54a32d192ed03ull);
    return cf_splitmix64(&x);
}

void cf_case_defaults(cf_case_t *c, cf_op_t op)
{
    memset(c, 0, sizeof *c);
    c->op = op;
    c->num_seqs = 1;
    c->q_lens[0] = 1;
    c->kv_lens[0] = 1;
    c->num_q_heads = 4;
    c->num_kv_heads = 1;
    c->head_dim_qk = c->head_dim_v = 64;
    c->block_size = 16;
    c->q_dtype = c->out_dtype = c->kv_dtype = CF_F32;
    c->causal = 1;
    c->window_left = c->window_right = -1;
    c->num_states = 2;
    c->num_tokens = 4;
    c->num_v_heads = c->num_q_heads;
    c->gb_dtype = CF_F32;
    c->extra_slots = 1;
    c->slot_ndim = 3;
}

int cf_case_tokens(const cf_case_t *c)
{
    int t = 0;
    for (int b = 0; b < c->num_seqs; b++) t += c->q_lens[b];
    return t;
}

const char *cf_op_label(cf_op_t op)
{
    static const char *const labels[CF_OP_COUNT_] = {"attention", "cascade",     "kv_write",  "merge",
                                                     "mla",       "lightning",   "gated_delta", "state_pool"};
    return (unsigned)op < CF_OP_COUNT_ ? labels[op] : "?";
}

/* Appends printf-style text at *used, never past cap. */
static void put(char *buf, size_t cap, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    if (*used >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (n > 0) *used += (size_t)n;
}

static void name_cache(const cf_case_t *c, char *buf, size_t cap, size_t *u)
{
    put(buf, cap, u, " kv=%s%s", cf_dtype_name(c->kv_dtype),
        cf_dtype_is_fp8(c->kv_dtype) ? (c->per_block_scale ? "/blk" : "/tensor") : "");
    if (c->head_dim_qk == c->head_dim_v)
        put(buf, cap, u, " D=%d", c->head_dim_qk);
    else
        put(buf, cap, u, " D=%d/%d", c->head_dim_qk, c->head_dim_v);
    if (c->op == CF_OP_KV_WRITE)
        put(buf, cap, u, " Hkv=%d", c->num_kv_heads);
    else
        put(buf, cap, u, " H=%d/%d", c->num_q_heads, c->num_kv_heads);
    put(buf, cap, u, " bs=%d", c->block_size);
    if (c->max_model_len > 0) put(buf, cap, u, " mml=%d", c->max_model_len);
    put(buf, cap, u, " %s%s", c->hnd ? "HND" : "NHD", c->kv_interleaved ? " kv-interleaved" : "");
}

/* lightning / gated delta: dtypes, heads, options, and per round "B=requests T=tokens". */
static void name_state_op(const cf_case_t *c, char *buf, size_t cap, size_t *u)
{
    const int gdn = c->op == CF_OP_GATED_DELTA;
    put(buf, cap, u, " qkv=%s out=%s", cf_dtype_name(c->q_dtype), cf_dtype_name(c->out_dtype));
    if (gdn) put(buf, cap, u, " g,beta=%s", cf_dtype_name(c->gb_dtype));
    put(buf, cap, u, " D=%d/%d", c->head_dim_qk, c->head_dim_v);
    if (gdn)
        put(buf, cap, u, " H=%d/%d%s", c->num_q_heads, c->num_v_heads, c->use_l2norm ? " l2norm" : "");
    else
        put(buf, cap, u, " H=%d", c->num_q_heads);
    if (c->scale > 0) put(buf, cap, u, " scale=%g", (double)c->scale);
    if (!gdn) {
        if (c->slope_max > 0)
            put(buf, cap, u, " slopes<=%g", c->slope_max);
        else
            put(buf, cap, u, " slopes=minimax");
        if (c->zero_slope) put(buf, cap, u, " zero-slope");
    }
    if (c->blockwise) {
        put(buf, cap, u, " blockwise N=%d (1 call = chunks of 64 = decode steps)", c->rounds[0].q_lens[0]);
        return;
    }
    int padding = 0, noinit = 0, spec = 0;
    for (int r = 0; r < c->num_rounds; r++) {
        int t = 0;
        for (int b = 0; b < c->rounds[r].num_reqs; b++) {
            t += c->rounds[r].q_lens[b];
            padding |= c->rounds[r].seq[b] < 0;
            noinit |= c->rounds[r].seq[b] >= 0 && !c->rounds[r].has_init[b];
        }
        spec |= c->rounds[r].spec;
        put(buf, cap, u, " r%d:%sB=%d,T=%d", r, c->rounds[r].spec ? "spec," : "", c->rounds[r].num_reqs, t);
    }
    if (spec) put(buf, cap, u, " num_spec=%d", c->num_spec);
    put(buf, cap, u, "%s%s%s extra-slots=%d", padding ? " padding" : "", noinit ? " no-initial-state" : "",
        c->use_stream ? " stream" : "", c->extra_slots);
}

void cf_case_name(const cf_case_t *c, char *buf, size_t cap)
{
    size_t u = 0;
    buf[0] = '\0';
    put(buf, cap, &u, "%s %s", c->tag, cf_op_label(c->op));
    int max_kv = 0;
    for (int b = 0; b < c->num_seqs; b++)
        if (c->kv_lens[b] > max_kv) max_kv = c->kv_lens[b];
    switch (c->op) {
    case CF_OP_ATTENTION:
    case CF_OP_CASCADE:
        put(buf, cap, &u, " q=%s out=%s", cf_dtype_name(c->q_dtype), cf_dtype_name(c->out_dtype));
        name_cache(c, buf, cap, &u);
        put(buf, cap, &u, "%s%s%s%s %s", c->strided ? " strided" : "", c->write_direct ? " direct-write" : "",
            c->plan_reuse ? " 2-layers" : "", c->use_stream ? " stream" : "", c->causal ? "causal" : "non-causal");
        if (c->window_left >= 0 || c->window_right >= 0)
            put(buf, cap, &u, " window=%d,%d", c->window_left, c->window_right);
        if (c->softcap > 0) put(buf, cap, &u, " softcap=%g", (double)c->softcap);
        if (c->scale > 0) put(buf, cap, &u, " scale=%g", (double)c->scale);
        put(buf, cap, &u, "%s%s%s", c->alibi ? " alibi" : "", c->sinks ? " sinks" : "", c->lse ? " lse" : "");
        if (c->op == CF_OP_CASCADE) put(buf, cap, &u, " prefix=%d", c->prefix_len);
        put(buf, cap, &u, " B=%d T=%d maxkv=%d", c->num_seqs, cf_case_tokens(c), max_kv);
        break;
    case CF_OP_KV_WRITE: {
        int tokens = 0;
        for (int b = 0; b < c->num_seqs; b++) tokens += c->kv_lens[b];
        put(buf, cap, &u, " src=%s", cf_dtype_name(c->q_dtype));
        name_cache(c, buf, cap, &u);
        put(buf, cap, &u, " tokens=%d padding=%d%s%s", tokens, c->padding_slots, c->edge_values ? " edge-values" : "",
            c->use_stream ? " stream" : "");
        break;
    }
    case CF_OP_MLA:
        put(buf, cap, &u, " q=%s out=%s kv=%s%s D=%d/%d H=%d bs=%d", cf_dtype_name(c->q_dtype),
            cf_dtype_name(c->out_dtype), cf_dtype_name(c->kv_dtype),
            cf_dtype_is_fp8(c->kv_dtype) ? (c->per_block_scale ? "/blk" : "/tensor") : "", c->head_dim_qk,
            c->head_dim_v, c->num_q_heads, c->block_size);
        if (c->topk > 0)
            put(buf, cap, &u, " sparse topk=%d%s%s%s", c->topk, c->sparse_host ? " host-indices" : "",
                c->sparse_invalid ? " invalid-indices" : "", c->causal ? " causal-flag" : "");
        else
            put(buf, cap, &u, " dense %s", c->causal ? "causal" : "non-causal");
        put(buf, cap, &u, " scale=%.4g%s%s%s%s%s", (double)c->scale, c->strided ? " strided" : "",
            c->plan_reuse ? " 2-layers" : "", c->use_stream ? " stream" : "", c->sinks ? " sinks" : "",
            c->lse ? " lse" : "");
        put(buf, cap, &u, " B=%d T=%d maxkv=%d", c->num_seqs, cf_case_tokens(c), max_kv);
        break;
    case CF_OP_LIGHTNING:
    case CF_OP_GATED_DELTA:
        name_state_op(c, buf, cap, &u);
        break;
    case CF_OP_STATE_POOL:
        put(buf, cap, &u, " dtype=%s slot=[", cf_dtype_name(c->q_dtype));
        if (c->slot_ndim >= 3) put(buf, cap, &u, "%d,", c->num_q_heads);
        if (c->slot_ndim >= 2) put(buf, cap, &u, "%d,", c->head_dim_qk);
        put(buf, cap, &u, "%d] slots=%d%s", c->head_dim_v, c->num_tokens, c->use_stream ? " stream" : "");
        break;
    default:
        put(buf, cap, &u, " n=%d states=%s out=%s T=%d H=%d D=%d", c->num_states, cf_dtype_name(c->q_dtype),
            cf_dtype_name(c->out_dtype), c->num_tokens, c->num_q_heads, c->head_dim_v);
        if (c->empty_fraction > 0) put(buf, cap, &u, " empty=%g", c->empty_fraction);
        put(buf, cap, &u, "%s%s%s%s%s", c->all_empty_token ? " all-empty-token" : "",
            c->extreme_lse ? " extreme-lse" : "", c->sinks ? " sinks" : "", c->lse ? " lse" : "",
            c->use_stream ? " stream" : "");
        break;
    }
}

/* ---- the directed cases ----------------------------------------------------------------------- */

/* FNV-1a of the tag. */
static uint64_t tag_hash(const char *tag)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)tag; *p; p++) h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* A new case `tag` with the defaults, a batch "q/kv q/kv ..." (query length / seq_len per request),
 * heads "Hq/Hkv", head dims and block size. */
cf_case_t *cf_directed_add(cf_builder_t *b, cf_op_t op, const char *tag, const char *batch, int hq, int hkv, int dqk, int dv,
                      int bs)
{
    cf_case_t c;
    cf_case_defaults(&c, op);
    snprintf(c.tag, sizeof c.tag, "%s", tag);
    c.seed = cf_case_seed(b->seed, tag_hash(tag)); /* stable when cases are added or removed */
    c.num_seqs = 0;
    for (const char *p = batch; p && *p;) {
        int q, kv, n = 0;
        if (sscanf(p, " %d/%d%n", &q, &kv, &n) != 2 || c.num_seqs == CF_MAX_SEQS) break;
        c.q_lens[c.num_seqs] = q;
        c.kv_lens[c.num_seqs++] = kv;
        p += n;
    }
    c.num_q_heads = hq;
    c.num_kv_heads = hkv;
    c.head_dim_qk = dqk;
    c.head_dim_v = dv;
    c.block_size = bs;
    cf_case_t *stored = cf_case_list_add(b->list, &c);
    if (!stored) {
        static cf_case_t scratch; /* keeps the caller's writes harmless; the list reports the failure */
        b->failed = 1;
        return &scratch;
    }
    return stored;
}

void cf_directed_dtypes(cf_case_t *c, cf_dtype_t q, cf_dtype_t out, cf_dtype_t kv)
{
    c->q_dtype = q;
    c->out_dtype = out;
    c->kv_dtype = kv;
}

static const char MIXED[] = CF_MIXED_BATCH;

static void directed_attention(cf_builder_t *b)
{
    cf_case_t *c;
    /* every head size of issue #3, with the GQA ratios and block sizes spread over them */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d32", MIXED, 8, 2, 32, 32, 16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d64-mha", MIXED, 4, 4, 64, 64, 32);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d80-mqa", MIXED, 8, 1, 80, 80, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d96", MIXED, 8, 2, 96, 96, 64);
    cf_directed_dtypes(c, CF_F32, CF_F32, CF_F16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d112-bs7", MIXED, 4, 1, 112, 112, 7);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d128-gqa8", MIXED, 16, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d192-bs128", MIXED, 4, 4, 192, 192, 128);
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d256-bs48", MIXED, 8, 1, 256, 256, 48);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d192v128", MIXED, 4, 4, 192, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-d96v64-bs1", "1/9 4/6 2/13", 4, 1, 96, 64, 1);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-bs1", MIXED, 4, 1, 64, 64, 1);
    cf_directed_dtypes(c, CF_BF16, CF_F32, CF_F32);

    /* empty rows: no kept key -> out 0, LSE -inf, never NaN */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-empty-cross", "3/0 2/9 4/0", 4, 2, 64, 64, 16);
    c->causal = 0;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-empty-qlen0", "0/17 1/9 0/4 3/3", 4, 1, 64, 64, 16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-empty-window", "6/3 2/8", 4, 1, 64, 64, 4 + 3);
    c->causal = 0; /* queries at negative positions; only p_k == p_q is kept and does not exist */
    c->window_left = c->window_right = 0;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-empty-batch", "0/5 0/0", 4, 1, 64, 64, 16);
    c->lse = 1;

    /* window edges (inclusive counts): 0, exactly a block, exactly the distance to key 0, unlimited */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-win0", MIXED, 4, 2, 64, 64, 16);
    c->window_left = 0;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-win-block", "1/40 24/40 1/17", 4, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->window_left = 16;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-win-exact", "1/33 33/33", 4, 2, 64, 64, 16);
    c->window_left = 32; /* the last query reaches key 0 exactly, earlier ones less */
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-win-both", "5/20 1/9 7/7", 4, 1, 64, 64, 16);
    c->causal = 0;
    c->window_left = 3;
    c->window_right = 2;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-win-right0", MIXED, 4, 1, 64, 64, 16);
    c->causal = 0; /* non-causal with window_right 0 is causal */
    c->window_right = 0;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-win-left0-right", "4/12 9/9", 4, 1, 64, 64, 16);
    c->causal = 0;
    c->window_left = 0;
    c->window_right = 5;
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);

    /* softcap, ALiBi, sinks, scale */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-softcap", MIXED, 8, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->softcap = 2.0f;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-softcap-window", "1/90 30/60 1/31", 8, 4, 256, 256, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16); /* Gemma 2: softcap 50 with a sliding window */
    c->softcap = 50.0f;
    c->window_left = 31;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-alibi", MIXED, 8, 8, 64, 64, 16);
    c->alibi = 1;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-alibi-noncausal", "4/9 3/0 2/12", 4, 2, 128, 128, 32);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c->causal = 0;
    c->alibi = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-sinks-gptoss", "1/200 16/140 1/129 40/40", 8, 1, 64, 64, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->sinks = 1;
    c->window_left = 127; /* GPT-OSS: sliding window 128 with sinks */
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-sinks", MIXED, 4, 2, 64, 64, 16);
    c->sinks = 1;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-sinks-empty", "3/0 1/5", 4, 2, 64, 64, 16);
    c->causal = 0; /* a sink with no key: the row is still empty (out 0, LSE -inf) */
    c->sinks = 1;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-scale", MIXED, 4, 1, 128, 128, 16);
    c->scale = 0.3f;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-all-options", "1/50 6/30 2/2", 8, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E4M3);
    c->per_block_scale = 1;
    c->scale = 0.2f;
    c->softcap = 4.0f;
    c->alibi = c->sinks = c->lse = 1;
    c->window_left = 20;

    /* cache dtypes and scale granularities, q/out dtypes */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-e4m3", MIXED, 8, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_E4M3);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-e4m3-blk-hnd", MIXED, 8, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->per_block_scale = c->hnd = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-e5m2", MIXED, 4, 1, 64, 64, 32);
    cf_directed_dtypes(c, CF_F32, CF_F32, CF_E5M2);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-e5m2-blk", MIXED, 4, 2, 96, 96, 7);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E5M2);
    c->per_block_scale = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-qf32-kvbf16", MIXED, 4, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F32, CF_F32, CF_BF16);
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-qbf16-kvf32", MIXED, 4, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_BF16, CF_F32, CF_F32);

    /* layouts and strides */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-hnd", MIXED, 8, 2, 64, 64, 32);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->hnd = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-interleaved", MIXED, 4, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->kv_interleaved = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-interleaved-hnd", MIXED, 4, 1, 192, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_F32, CF_BF16);
    c->kv_interleaved = c->hnd = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-strided", MIXED, 8, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->strided = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-strided-e4m3", "4/4 1/19", 4, 4, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_F32, CF_E4M3);
    c->strided = c->lse = c->sinks = 1;

    /* caches written with the reference quantiser: attention judged without kv_write */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-direct", MIXED, 4, 2, 64, 64, 16);
    c->write_direct = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-direct-e4m3-blk", MIXED, 4, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_E4M3);
    c->write_direct = c->per_block_scale = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-direct-e5m2-hnd", MIXED, 4, 1, 64, 64, 48);
    cf_directed_dtypes(c, CF_F32, CF_F32, CF_E5M2);
    c->write_direct = c->hnd = 1;

    /* long sequences and a wide mixed batch */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-long-prefill", "2048/2048", 2, 1, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-long-decode", "1/2000 1/1537 1/129", 8, 1, 128, 128, 128);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->lse = 1;
    /* fp8 decode at D 128 (the cuda plugin's decode kernel: 32-key tiles of whole 128-byte rows): tiles
     * cut by the sequence's end (15, 17, 33 keys), blocks of 32 and 24 rows (a tile across two blocks),
     * per-block scales, e5m2, and a sliding window whose first key is not a multiple of 16 */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e4m3-bs32", "1/15 1/17 1/33 1/700 1/1 1/300", 16, 4, 128, 128, 32);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->per_block_scale = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e5m2-bs16", "1/16 1/31 1/513 1/64 1/2", 8, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E5M2);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e4m3-bs24", "1/15 1/17 1/33 1/700 1/1 1/300", 16, 4, 128, 128, 24);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e4m3-window", "1/500 1/37 1/200", 8, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_E4M3);
    c->window_left = 37;
    c->per_block_scale = c->lse = 1;
    /* the same kernel's general score path (soft-cap, ALiBi) at GQA 8 and at 2 tokens x GQA 4 (8 rows),
     * sequences cut inside a tile and long enough to split, block size 24; and its 16-row form (a
     * 12-row tile: 3 tokens x GQA 4) beside 1- and 2-token tiles in one batch */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e4m3-softcap", "1/1 1/15 1/17 1/700 1/3001", 16, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->softcap = 30.0f;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e5m2-alibi-l2", "2/2 2/33 2/517 1/64", 8, 2, 128, 128, 24);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E5M2);
    c->alibi = c->per_block_scale = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e4m3-12rows", "3/300 1/77 2/513 1/4000", 16, 4, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->per_block_scale = c->lse = 1;
    /* D 64 decode by tensor copies (the cuda plugin on sm_90: a block's rows of a head as one box, rows = the
     * block size's largest power-of-two factor): block 24 (boxes of 8 rows, 4 a tile), a sliding window whose
     * first key is off the box grid (the walk starts on it, the keys before masked), sequences cut inside a
     * box and long enough to split; fp8 with per-block scales, and 16-bit in an HND cache at block 40 */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-d64-tma-e4m3", "1/3001 1/13 1/700 1/1 1/130", 16, 4, 64, 64, 24);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->window_left = 1003;
    c->per_block_scale = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-d64-tma-hnd", "1/2049 1/17 1/41 1/1", 16, 2, 64, 64, 40);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->hnd = c->sinks = c->lse = 1;
    /* 16-bit D 256 decode by tensor copies (four 128-byte column blocks a row): a window off the box grid, splits */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-d256-tma", "1/1500 1/17 1/300 1/1", 16, 8, 256, 256, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->window_left = 701;
    c->sinks = c->lse = 1;
    /* one token of a group wider than a 16-row decode tile: decode tiles of head groups 16 + 16 (MQA at
     * GQA 32) and 16 + 8 (GQA 24, fp8), split over long sequences, beside a 3-token request (a prefill
     * tile) and a 1-key one; sinks and ALiBi tell the head groups apart */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-mqa32", "1/2000 3/40 1/1537 1/1 1/129", 32, 1, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-gqa24-e4m3", "1/700 1/33 2/90 1/2100", 48, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E4M3);
    c->alibi = c->per_block_scale = c->lse = 1;
    /* the same groups in the cuda plugin's 32-row tiles of one token's heads (16-bit caches, D 64 / 128): GQA 48 as two
     * tiles of 24 heads (soft-cap, ALiBi, a window; boxes of 8 rows at block 24), GQA 64 at D 64 in an HND cache of
     * block 1 (the form without tensor copies), GQA 20 at D 96 (Q and K zero past 96 of 128 columns); splits,
     * 1-key requests, a 2-token request (a prefill tile) beside them */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-wide-g24", "1/2100 1/1 2/40 1/700 1/33", 96, 2, 128, 128, 24);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c->alibi = c->lse = 1;
    c->softcap = 20.0f;
    c->window_left = 1500;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-wide-g64-d64", "1/1500 1/17 1/1 3/9 1/300", 64, 1, 64, 64, 1);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->hnd = c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-wide-g20-d96", "1/900 1/65 1/3000", 40, 2, 96, 96, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->sinks = c->lse = 1;
    /* too few row tiles to fill a GPU: the cuda plugin cuts the long requests into its most key splits (64), merged
     * by the tile's last block (sinks, LSE), beside a 1-key request; MQA the same in two 16-row head groups (32-row
     * tiles where forced), a window off the split grid */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-max-splits", "1/8000 1/1 1/3001", 8, 1, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-max-splits-mqa", "1/6000 1/1", 32, 1, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c->window_left = 4999;
    c->sinks = c->lse = 1;
    /* pure decode batches of wide groups on the cuda plugin's warp-specialized wgmma kernel (sm_90), each token's heads
     * rows of its tiles, the requests cut into key splits merged by the consumers of the last one: MQA beside a 1-key
     * and an empty request (block 16, sinks); GQA 64 at D 64 (block 32, a window off the split grid); GQA 256 at D 256
     * (two head groups of 128 a token, f32 out) */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-ws-mqa", "1/5000 1/1 0/7 1/300 1/2049 1/17", 32, 1, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-ws-g64-d64", "1/3000 1/129 1/1 1/700", 128, 2, 64, 64, 32);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->window_left = 2222;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-ws-g256-d256", "1/1100 1/40 1/1", 256, 1, 256, 256, 16);
    cf_directed_dtypes(c, CF_BF16, CF_F32, CF_BF16);
    c->sinks = c->lse = 1;
    /* more fp8 D 128 decode row tiles than the cuda plugin's 4-warp blocks hold at once on an H200 (16 requests x 20
     * KV heads = 320 tiles, none long enough to split): its 2-warp blocks (`_t32_w2`); sequences cut inside a tile */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-dec-e4m3-w2",
                        "1/1 1/15 1/16 1/17 1/31 1/33 1/47 1/64 1/65 1/77 1/95 1/100 1/113 1/127 1/128 1/2", 40, 20, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->per_block_scale = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-plan-reuse", MIXED, 8, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_E4M3);
    c->plan_reuse = c->lse = c->sinks = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-stream", MIXED, 4, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->use_stream = c->plan_reuse = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-wide-batch", "1/5 7/7 1/64 0/3 2/30 1/1 9/20 1/17 3/3 1/100 5/45 1/2 4/4 1/31",
            4, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->padding_slots = 6;
    c->lse = 1;

    /* prefill tiles of 128 rows (the cuda plugin's prefill fast path: 16-bit Q and K/V, D 64 / 128 /
     * 256): block sizes 1 and odd, a group of 3 (126 rows a tile), several query and key tiles,
     * chunked prefill (keys before the queries), non-causal, windows, sinks, f32 out */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-bs1-g3", "70/70 33/90 1/20", 6, 2, 128, 128, 1);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-d256-bs7", "40/40 130/150", 4, 1, 256, 256, 7);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-noncausal", "50/80 200/200 3/0", 8, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->causal = 0;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-window-mha", "300/300", 2, 2, 128, 128, 32);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->window_left = 100;
    c->lse = 1;
    /* the wgmma kernel's shapes (attn_prefill_sm90a.cuh, H200): 128-key tiles at D 64 / 128 that a block
     * size of 48 does not divide, chunked prefill over several tiles, an HND cache; D 256's 64-key tiles
     * with 128 tokens a block (both warpgroups' rows), a window and sinks */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-wg-bs48-hnd", "400/400 150/390", 8, 2, 128, 128, 48);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->hnd = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-wg-d256-window", "260/260", 2, 2, 256, 256, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->window_left = 90;
    c->sinks = c->lse = 1;
    /* the warp-specialized kernel's Q boxes (heads x tokens of an item; a group of 3 fills 126 of 128 rows, the box
     * reaching into the next request's tokens and past the last one) and its output forms (f32: the direct epilogue) */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-g3", "170/170 60/300 1/40 45/45", 6, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-f32out", "150/150 64/200", 8, 2, 128, 128, 32);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c->sinks = c->lse = 1;
    /* its fp8-cache form (per-tensor scales; V tiles widened to f16 in shared memory, K too with an f16 Q or at D 64, where
     * Q is rewritten as f16; a bf16 Q's S by e4m3 products): a group of 3, chunked prefill beside decodes, sinks; e5m2 at
     * D 64 in an HND cache with a window and f32 out */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-e4m3", "170/170 60/300 1/40 45/45 1/700", 6, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-e5m2-d64-hnd", "150/150 64/200 1/77", 8, 2, 64, 64, 32);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E5M2);
    c->hnd = c->lse = 1;
    c->window_left = 120;
    /* D 256: two 128-byte column blocks a landed row, widened in place into the stage's upper half; one Q slot */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-e4m3-d256", "130/130 40/300 1/90", 4, 2, 256, 256, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_E4M3);
    c->lse = 1;
    /* a bf16 Q over a D 128 / 256 fp8 cache: S by e4m3 products on the raw key rows, Q in two e4m3 terms (e5m2 keys:
     * mixed-format products), sinks, a window; f32 out */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-e5m2-kd", "170/170 60/300 1/40 45/45 1/700", 6, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_BF16, CF_F32, CF_E5M2);
    c->sinks = c->lse = 1;
    c->window_left = 200;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-e4m3-d256-kd", "130/130 40/300 1/90", 4, 2, 256, 256, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_E4M3);
    c->sinks = c->lse = 1;
    /* D 64's long-item form (192-key tiles: 12 boxes of 16 keys, or 6 of 32), taken for items of 2048 keys and more on
     * average: chunks over long contexts (a chunk's last item of 11 tokens, a causal edge inside a tile) beside a
     * decode, sinks; an f16 Q with a window off the tile grid, f32 out */
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-d64-n192", "75/2600 40/3137 1/2100", 8, 2, 64, 64, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_ATTENTION, "attn-pf-ws-f16-n192", "64/2500 33/2900", 8, 2, 64, 64, 32);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_F16);
    c->lse = 1;
    c->window_left = 2300;
}

static void directed_cascade(cf_builder_t *b)
{
    cf_case_t *c;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-basic", "1/3 4/4 1/9", 8, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->prefix_len = 40;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-sinks", "1/1 8/12 1/30", 8, 1, 64, 64, 16);
    cf_directed_dtypes(c, CF_BF16, CF_BF16, CF_BF16);
    c->prefix_len = 64;
    c->sinks = c->lse = 1;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-e4m3-blk-hnd", "2/5 1/7", 4, 2, 128, 128, 16);
    cf_directed_dtypes(c, CF_F16, CF_F32, CF_E4M3);
    c->prefix_len = 37;
    c->per_block_scale = c->hnd = 1;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-empty-prefix", "3/3 1/6", 4, 1, 64, 64, 16);
    c->prefix_len = 0;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-noncausal", "2/0 3/5", 4, 2, 64, 64, 16);
    c->causal = 0;
    c->prefix_len = 20;
    c->lse = 1;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-softcap-scale", "1/4 5/5", 4, 2, 80, 80, 7);
    c->softcap = 3.0f;
    c->scale = 0.2f;
    c->kv_interleaved = 1;
    c->prefix_len = 23;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-strided-e5m2", "1/2 6/6", 8, 2, 64, 64, 1);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_E5M2);
    c->strided = c->lse = c->sinks = 1;
    c->prefix_len = 12;
    c = cf_directed_add(b, CF_OP_CASCADE, "casc-2-layers-stream", "1/1 3/7 1/12", 4, 1, 128, 128, 32);
    cf_directed_dtypes(c, CF_F16, CF_F16, CF_F16);
    c->plan_reuse = c->use_stream = c->lse = 1;
    c->prefix_len = 50;
}

static void directed_kv_write(cf_builder_t *b)
{
    static const struct {
        const char *tag, *batch;
        cf_dtype_t  src, kv;
        int         hkv, dk, dv, bs, hnd, blk, inter, pad, edge;
    } w[] = {
        {"kvw-f32", "17/17 5/5", CF_F32, CF_F32, 2, 64, 64, 16, 0, 0, 0, 5, 0},
        {"kvw-f16-hnd", "20/20 3/3", CF_F16, CF_F16, 2, 128, 128, 16, 1, 0, 0, 3, 1},
        {"kvw-bf16-bs7", "30/30", CF_BF16, CF_BF16, 1, 64, 64, 7, 0, 0, 0, 2, 1},
        {"kvw-f32-to-f16", "40/40", CF_F32, CF_F16, 2, 64, 64, 16, 0, 0, 0, 4, 1},
        {"kvw-f32-to-bf16", "40/40", CF_F32, CF_BF16, 2, 64, 64, 32, 1, 0, 0, 4, 1},
        {"kvw-f16-to-bf16", "25/25", CF_F16, CF_BF16, 1, 80, 80, 16, 0, 0, 0, 0, 1},
        {"kvw-f16-e4m3", "33/33 9/9", CF_F16, CF_E4M3, 2, 128, 128, 16, 0, 0, 0, 3, 1},
        {"kvw-f32-e4m3-blk-hnd", "21/21", CF_F32, CF_E4M3, 4, 64, 64, 1, 1, 1, 0, 2, 1},
        {"kvw-bf16-e5m2", "33/33", CF_BF16, CF_E5M2, 2, 64, 64, 16, 0, 0, 0, 3, 1},
        {"kvw-f32-e5m2-blk", "50/50 7/7", CF_F32, CF_E5M2, 2, 64, 64, 48, 0, 1, 1, 1, 1},
        {"kvw-d192v128", "19/19", CF_F16, CF_F16, 2, 192, 128, 7, 0, 0, 0, 2, 0},
        {"kvw-all-padding", "0/0", CF_F16, CF_F16, 2, 64, 64, 16, 0, 0, 0, 8, 0},
        {"kvw-interleaved", "24/24", CF_F16, CF_F16, 2, 64, 64, 16, 0, 0, 1, 2, 0},
        {"kvw-d256-bs128", "130/130", CF_BF16, CF_E4M3, 1, 256, 256, 128, 1, 1, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        cf_case_t *c = cf_directed_add(b, CF_OP_KV_WRITE, w[i].tag, w[i].batch, w[i].hkv, w[i].hkv, w[i].dk, w[i].dv, w[i].bs);
        c->q_dtype = w[i].src;
        c->kv_dtype = w[i].kv;
        c->hnd = w[i].hnd;
        c->per_block_scale = w[i].blk;
        c->kv_interleaved = w[i].inter;
        c->padding_slots = w[i].pad;
        c->edge_values = w[i].edge;
        c->use_stream = i % 4 == 1;
    }
}

static void directed_merge(cf_builder_t *b)
{
    static const struct {
        const char *tag;
        int         n, T, H, D;
        cf_dtype_t  st, out;
        double      empty;
        int         all_empty, extreme, sinks, lse;
    } m[] = {
        {"merge-2", 2, 9, 4, 64, CF_F32, CF_F32, 0.0, 0, 0, 0, 1},
        {"merge-2-empty", 2, 12, 4, 64, CF_F32, CF_F32, 0.3, 1, 0, 0, 1},
        {"merge-4-f16", 4, 10, 4, 128, CF_F16, CF_F16, 0.25, 1, 0, 0, 1},
        {"merge-3-bf16-sinks", 3, 8, 8, 64, CF_BF16, CF_BF16, 0.2, 1, 0, 1, 1},
        {"merge-1", 1, 6, 2, 64, CF_F32, CF_F32, 0.2, 0, 0, 0, 1},
        {"merge-3-extreme", 3, 16, 4, 32, CF_F32, CF_F32, 0.1, 0, 1, 0, 1},
        {"merge-2-f16-to-f32", 2, 7, 4, 80, CF_F16, CF_F32, 0.0, 0, 0, 0, 0},
        {"merge-5-sinks", 5, 6, 4, 128, CF_F32, CF_F32, 0.3, 1, 0, 1, 0},
        {"merge-8-bf16", 8, 5, 2, 256, CF_BF16, CF_F32, 0.4, 1, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        cf_case_t *c = cf_directed_add(b, CF_OP_MERGE, m[i].tag, "", m[i].H, 1, m[i].D, m[i].D, 16);
        c->num_states = m[i].n;
        c->num_tokens = m[i].T;
        c->q_dtype = m[i].st;
        c->out_dtype = m[i].out;
        c->empty_fraction = m[i].empty;
        c->all_empty_token = m[i].all_empty;
        c->extreme_lse = m[i].extreme;
        c->sinks = m[i].sinks;
        c->lse = m[i].lse;
        c->use_stream = i % 3 == 1;
    }
}

/* ---- large blocks: shapes a Rebellions NPU (npu_sim's profiles) accepts ------------------------- */

/* The RBLN rules (docs/backends/npu_sim.md): block_size a power of two in 512..16384 (rbln-rebel100)
 * or 1024..32768 (rbln-atom); the block table is max_model_len / block_size columns: one column is the
 * naive kernel, more are flash with one partition per block (FP8 caches need flash; sinks force it);
 * head sizes 32..256 from the backend's list, one for K and V; no LSE, soft cap or ALiBi; windows only
 * causal, left. A few cases break one rule on purpose (every plugin without the rule must pass them;
 * npu_sim reports the vendor's reason). Contexts stay short where the shape allows, so that a float64
 * reference and a sanitizer build run them in seconds. */
typedef struct large_case {
    const char *tag, *batch;
    int         hq, hkv, dqk, dv, bs, mml;
    cf_dtype_t  q, out, kv;
    int         window_left, sinks, noncausal, hnd, interleaved, strided, reuse, stream, padding;
} large_case_t;

static const large_case_t LARGE[] = {
    /* flash, two partitions of 1024 (both profiles): decode at the last position and inside the first
       partition, a prefill of 192 tokens split at the partition edge */
    {"blk1024-flash", "1/2048 1/7 192/1100", 4, 1, 64, 64, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* naive: one block of max_model_len per request */
    {"blk1024-naive", "1/1024 1/1 200/200", 4, 1, 64, 64, 1024, 1024,
     CF_BF16, CF_BF16, CF_BF16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* four partitions of 512 (rebel100; rbln-atom's range starts at 1024): empty ones skipped */
    {"blk512-flash4", "1/100 1/1537 65/600", 4, 1, 96, 96, 512, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* naive and non-causal, as encoder / pooling models run (rebel100) */
    {"blk512-naive-noncausal", "300/300 64/512 1/40", 4, 2, 64, 64, 512, 512,
     CF_F32, CF_F32, CF_F32, -1, 0, 1, 0, 0, 0, 0, 0, 0},
    /* sinks force flash: one partition, then two with GPT-OSS's window of 128 */
    {"blk1024-sinks-1part", "1/1000 1/1 100/100", 8, 1, 64, 64, 1024, 1024,
     CF_BF16, CF_BF16, CF_BF16, -1, 1, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-sinks-swa128", "1/2000 1/129 160/1200", 8, 1, 64, 64, 1024, 2048,
     CF_BF16, CF_BF16, CF_BF16, 127, 1, 0, 0, 0, 0, 0, 0, 0},
    /* FP8 KV caches (one scale per tensor) with flash, GQA 4, partitions of 1024 and 2048; and with
       naive, which the NPU refuses */
    {"blk1024-e4m3-gqa4", "1/2048 1/10 128/1152", 8, 2, 64, 64, 1024, 2048,
     CF_F16, CF_F16, CF_E4M3, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk2048-e5m2", "1/4000 1/1 70/2100", 4, 1, 64, 64, 2048, 4096,
     CF_BF16, CF_F32, CF_E5M2, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-e4m3-naive", "1/900 30/30", 4, 1, 64, 64, 1024, 1024,
     CF_F16, CF_F16, CF_E4M3, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* sliding windows (the NPU's sliding kernel): a window of a whole partition, a short one */
    {"blk1024-swa1024", "1/2048 1/600 256/1536", 4, 1, 64, 64, 1024, 2048,
     CF_F16, CF_F16, CF_F16, 1023, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-swa64", "1/1100 64/1088", 4, 1, 64, 64, 1024, 2048,
     CF_F32, CF_F32, CF_F32, 63, 0, 0, 0, 0, 0, 0, 0, 0},
    /* the rest of the backend's head sizes (64, 96 above, 128 below), layouts and strides spread over
       them; flash over two partitions, the largest naive */
    {"blk1024-d32", "40/1100", 4, 2, 32, 32, 1024, 2048,
     CF_F32, CF_F32, CF_F32, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-d80-hnd", "40/1100", 4, 1, 80, 80, 1024, 2048,
     CF_BF16, CF_BF16, CF_BF16, -1, 0, 0, 1, 0, 0, 0, 0, 0},
    {"blk1024-d160", "40/1100", 4, 1, 160, 160, 1024, 2048,
     CF_F16, CF_F32, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-d192-strided", "40/1100", 2, 1, 192, 192, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 1, 0, 0, 0},
    {"blk1024-d224-interleave", "48/1000", 2, 1, 224, 224, 1024, 1024,
     CF_BF16, CF_BF16, CF_BF16, -1, 0, 0, 0, 1, 0, 0, 0, 0},
    {"blk1024-d256-e4m3-hnd", "48/1000", 4, 1, 256, 256, 1024, 2048,
     CF_BF16, CF_F32, CF_E4M3, -1, 0, 0, 1, 0, 0, 0, 0, 0},
    /* not in the head-size list, and K/V head sizes that differ: refused by the NPU backend */
    {"blk1024-d112", "20/1000", 2, 1, 112, 112, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-d128v64", "20/1000", 2, 1, 128, 64, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* a decode batch of 9 (the NPU pads it to its bucket of 16), MQA */
    {"blk1024-decode9", "1/1 1/1023 1/1025 1/2048 1/64 1/5 1/300 1/9 1/2", 8, 1, 32, 32, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* prefill chunks: 320 tokens over a partition edge (chunks of 128 or 512, cut at the edge), and
       lengths that are not multiples of 64 (the last chunk padded) */
    {"blk1024-prefill-chunks", "320/1200", 4, 1, 64, 64, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-prefill-odd", "150/150 1/1 77/1101", 4, 1, 64, 64, 1024, 2048,
     CF_F32, CF_F32, CF_F32, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk512-prefill-odd", "100/100 1/1 333/1000", 4, 1, 64, 64, 512, 1024,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    /* empty rows, two layers on one plan, a stream, a wide mixed batch with padding slots */
    {"blk1024-empty", "0/1500 1/9 0/0 2/1030", 4, 1, 64, 64, 1024, 2048,
     CF_F32, CF_F32, CF_F32, -1, 0, 0, 0, 0, 0, 0, 0, 0},
    {"blk1024-2-layers-stream", "1/1500 64/64", 4, 1, 128, 128, 1024, 2048,
     CF_F16, CF_F16, CF_E4M3, -1, 0, 0, 0, 0, 0, 1, 1, 0},
    {"blk1024-wide-batch", "1/5 64/64 1/2048 0/3 1/1 128/1500 3/3", 4, 1, 64, 64, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 6},
    /* a long context over two partitions of 4096: decode */
    {"blk4096-decode-d32", "1/8192", 2, 1, 32, 32, 4096, 8192,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 0},
};

/* kv_write at the NPU's block sizes. */
static const large_case_t LARGE_KVW[] = {
    {"kvw-blk1024-f16", "1500/1500", 1, 1, 128, 128, 1024, 2048,
     CF_F16, CF_F16, CF_F16, -1, 0, 0, 0, 0, 0, 0, 0, 5},
    {"kvw-blk512-e4m3-hnd", "1100/1100", 1, 1, 64, 64, 512, 2048,
     CF_BF16, CF_BF16, CF_E4M3, -1, 0, 0, 1, 0, 0, 0, 1, 3},
    {"kvw-blk2048-e5m2-inter", "2100/2100", 1, 1, 64, 64, 2048, 4096,
     CF_F32, CF_F32, CF_E5M2, -1, 0, 0, 0, 1, 0, 0, 0, 2},
    {"kvw-blk1024-d80-bf16", "900/900 1/1", 1, 1, 80, 80, 1024, 1024,
     CF_F32, CF_F32, CF_BF16, -1, 0, 0, 0, 0, 0, 0, 1, 1},
};

static cf_case_t *add_large(cf_builder_t *b, cf_op_t op, const large_case_t *l)
{
    cf_case_t *c = cf_directed_add(b, op, l->tag, l->batch, l->hq, l->hkv, l->dqk, l->dv, l->bs);
    cf_directed_dtypes(c, l->q, l->out, l->kv);
    c->max_model_len = l->mml;
    for (int s = 0; s < c->num_seqs; s++)
        if (c->kv_lens[s] > l->mml) b->failed = 1; /* a case-table bug: the table would be wider */
    c->window_left = l->window_left;
    c->sinks = l->sinks;
    c->causal = !l->noncausal;
    c->hnd = l->hnd;
    c->kv_interleaved = l->interleaved;
    c->strided = l->strided;
    c->plan_reuse = l->reuse;
    c->use_stream = l->stream;
    c->padding_slots = l->padding;
    return c;
}

static void directed_large_blocks(cf_builder_t *b)
{
    for (size_t i = 0; i < sizeof LARGE / sizeof LARGE[0]; i++) add_large(b, CF_OP_ATTENTION, &LARGE[i]);
    for (size_t i = 0; i < sizeof LARGE_KVW / sizeof LARGE_KVW[0]; i++) {
        cf_case_t *c = add_large(b, CF_OP_KV_WRITE, &LARGE_KVW[i]);
        c->edge_values = 1;
    }
}


int cf_cases_directed(cf_case_list_t *list, uint64_t seed)
{
    cf_builder_t b = {list, seed, 0};
    directed_attention(&b);
    directed_cascade(&b);
    directed_kv_write(&b);
    directed_merge(&b);
    directed_large_blocks(&b);
    cf_directed_mla(&b);
    cf_directed_lightning(&b);
    cf_directed_gated_delta(&b);
    cf_directed_state_pool(&b);
    return b.failed ? -1 : 0;
}
