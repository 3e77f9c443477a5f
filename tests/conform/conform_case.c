/* conform_case.c - one case: its defaults, its name, its seed, and the list that holds cases. The
 * directed cases are in conform_cases.c, the random sweep in conform_sweep.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_case.h"
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
