/* cpu_attention_plan.c — splits a batch into work items (request, query-token tile, KV head, head
 * chunk, key split), decides split-KV and sizes its workspace, orders the items costliest first, and
 * allocates each pool participant's scratch, so that attention_run allocates nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_attention_plan.h"
#include "cpu_ops.h"
#include "dtype_convert.h"
#include "plugin_args.h"
#include "plugin_check.h"
#include "plugin_error.h"
#include "plugin_query.h"
#include "plugin_softmax.h"

#define CACHE_LINE 64
#define CPU_ATTN_KEY_COST 8          /* a key's K/V read, in row-key units                       */

static size_t align_up(size_t n) { return (n + CACHE_LINE - 1) / CACHE_LINE * CACHE_LINE; }

cpu_attn_scratch_layout_t cpu_attn_scratch_layout(int64_t head_dim_qk, int64_t head_dim_v)
{
    const size_t wide_rows = (CPU_ATTN_WIDE_ROWS + CPU_WIDE_ROW_ALIGN - 1) / CPU_WIDE_ROW_ALIGN * CPU_WIDE_ROW_ALIGN;
    const size_t R = wide_rows > CPU_ATTN_DECODE_ROWS ? wide_rows : CPU_ATTN_DECODE_ROWS;
    const size_t K = CPU_ATTN_CHUNK, f = sizeof(float);
    const size_t dqk = (size_t)cpu_attn_ld(head_dim_qk), dv = (size_t)cpu_attn_ld(head_dim_v);
    const size_t ldr = (size_t)cpu_attn_ld((int64_t)R); /* wide: qt and s rows */
    cpu_attn_scratch_layout_t l;
    size_t at = 0;
    l.q = at;     at += align_up(ldr * dqk * f); /* query rows [R][dqk] (narrow) or qt [D][ldr] (wide), f32 */
    l.o = at;     at += align_up(R * dv * f);   /* unnormalised outputs                              */
    l.s = at;     at += align_up(ldr * K * f);  /* scores, then probabilities, of one chunk          */
    l.m = at;     at += align_up(R * f);        /* running max per row                               */
    l.l = at;     at += align_up(R * f);        /* running sum per row                               */
    l.alpha = at; at += align_up(R * f);        /* rescale factor of the current chunk               */
    l.kc = at;    at += align_up(K * dqk * f);  /* the key chunk, dequantised (wide)                 */
    l.vc = at;    at += align_up(K * dv * f);
    l.qb = at;    at += align_up(R * dqk * sizeof(uint16_t)); /* narrow query rows in bf16 (bf16 dots)  */
    l.lo = at;    at += align_up(R * sizeof(int64_t)); /* each token's key range                     */
    l.hi = at;    at += align_up(R * sizeof(int64_t));
    l.total = align_up(at);
    l.rows = (int)R;
    l.dqk_pad = (int)dqk;
    l.dv_pad = (int)dv;
    return l;
}

/* Cost of one item of n tokens from i0 (of L), `heads` query heads and `kv_heads` KV heads: rows x kept
 * keys, plus the K/V reads that every key costs whatever the rows (what makes decode memory-bound). A
 * double: only an estimate, and products of heads and keys may pass 2^63. */
static double item_cost(int64_t S, int64_t L, int64_t i0, int64_t n, int64_t heads, int64_t kv_heads, int causal,
                        int64_t wl, int64_t wr)
{
    int64_t lo, hi, lo2, hi2;
    plugin_key_range(S - L + i0, S, causal, wl, wr, &lo, &hi2);
    plugin_key_range(S - L + i0 + n - 1, S, causal, wl, wr, &lo2, &hi);
    const int64_t keys = hi >= lo ? hi - lo + 1 : 0;
    /* +1: an empty row still costs its write */
    return ((double)n * (double)heads + CPU_ATTN_KEY_COST * (double)kv_heads) * ((double)keys + 1.0);
}

/* Every size in [0, 2^31), as the runtime checks them (again here for direct callers): the plan's
 * arithmetic below relies on it. */
static attnrt_status_t check_sizes(const attnrt_attention_args_t *a)
{
    const struct { const attnrt_tensor_t *t; const char *name; } ts[] = {
        {a->query, "query"}, {a->key_cache, "key_cache"}, {a->value_cache, "value_cache"}, {a->out, "out"},
        {a->block_table, "block_table"},
    };
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) {
        attnrt_status_t st = plugin_check_sizes(ts[i].t, "cpu", "paged attention plan", ts[i].name);
        if (st != ATTNRT_OK) return st;
    }
    if (a->query->ndim != 3 || a->key_cache->ndim != 4 || a->value_cache->ndim != 4)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention plan: query has %d dims, the caches %d and "
                           "%d; expected 3, 4 and 4", a->query->ndim, a->key_cache->ndim, a->value_cache->ndim);
    return ATTNRT_OK;
}

attnrt_status_t cpu_attn_policy_make(cpu_pool_t *pool, const attnrt_attention_args_t *a, const char *what,
                                     cpu_attn_policy_t *pol)
{
    if (!a->query || !a->key_cache || !a->value_cache || !a->out)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: query, both caches and out are required", what);
    attnrt_status_t st = check_sizes(a);
    if (st == ATTNRT_OK) st = plugin_attention_supported("cpu", &cpu_op_rules, NULL, a);
    if (st != ATTNRT_OK) return st;
    const int64_t Hq = a->query->shape[1], Hkv = a->key_cache->shape[2];
    if (Hkv <= 0 || Hq <= 0 || Hq % Hkv != 0)
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu %s: %lld query heads over %lld KV heads", what,
                           (long long)Hq, (long long)Hkv);
    memset(pol, 0, sizeof *pol);
    pol->num_q_heads = Hq;
    pol->num_kv_heads = Hkv;
    /* Rows of one item: a tile of tokens times a chunk of the KV head's query heads. Heads first, so a
     * K/V row serves all of its query heads at once (GQA: each KV byte is read once per token tile). */
    pol->group = Hq / Hkv;
    pol->heads_per_item = pol->group < CPU_ATTN_WIDE_ROWS ? pol->group : CPU_ATTN_WIDE_ROWS;
    pol->head_chunks = (pol->group + pol->heads_per_item - 1) / pol->heads_per_item;
    pol->tile = CPU_ATTN_WIDE_ROWS / pol->heads_per_item;
    /* Decode (one token) takes every KV head in one item when their padded rows fit the scratch: the
     * item then reads each block of the cache whole, in address order, instead of one head's slices. */
    pol->all_heads = Hkv > 1 && pol->group <= CPU_ATTN_NARROW_ROWS &&
                     Hkv * ((pol->group + 3) / 4 * 4) <= CPU_ATTN_DECODE_ROWS;
    pol->causal = a->causal != 0;
    pol->window_left = plugin_window_count(a->sliding_window_left);
    pol->window_right = plugin_window_count(a->sliding_window_right);
    pol->threads = cpu_pool_size(pool);
    pol->max_splits = CPU_ATTN_MAX_SPLITS;
    pol->max_split_rows = pol->max_split_items = SIZE_MAX;
    return ATTNRT_OK;
}

void cpu_attn_decide(const cpu_attn_policy_t *pol, const attnrt_batch_host_t *batch, int64_t B, int64_t T,
                     int32_t *nsplit, double *max_cost, size_t *n_items_out, size_t *n_split_out,
                     size_t *part_rows_out)
{
    const int64_t Hq = pol->num_q_heads, Hkv = pol->num_kv_heads, tile = pol->tile;
    const int64_t wl = pol->window_left, wr = pol->window_right;
    /* Costs without splits, to decide them. */
    double total_cost = 0.0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = plugin_batch_query_len(batch, b, T);
        const int64_t S = batch->seq_lens[b];
        max_cost[b] = 0.0;
        if (L == 1 && pol->all_heads) {
            max_cost[b] = item_cost(S, L, 0, 1, Hq, Hkv, pol->causal, wl, wr);
            total_cost += max_cost[b];
            continue;
        }
        for (int64_t i0 = 0; i0 < L; i0 += tile) {
            const int64_t n = L - i0 < tile ? L - i0 : tile;
            const double c = item_cost(S, L, i0, n, pol->heads_per_item, 1, pol->causal, wl, wr);
            total_cost += c * (double)Hkv * (double)pol->head_chunks;
            if (c > max_cost[b]) max_cost[b] = c;
        }
    }
    /* Split-KV: a request whose items are each more than an eighth of a thread's share is cut into key
     * ranges (decode with few requests and KV heads), so every thread gets about eight items: the last
     * item of the slower thread (which the other waits for) is then at most ~1/8 of the run. */
    const double share = floor(total_cost / (8.0 * pol->threads)) + 1.0;
    size_t n_items = 0, n_split = 0, part_rows = 0; /* SIZE_MAX once they overflow: the allocations fail */
    size_t extra_items = 0;                          /* the items splits add                          */
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = plugin_batch_query_len(batch, b, T);
        const double want = pol->threads > 1 ? ceil(max_cost[b] / share) : 1.0;
        int64_t ns = want < pol->max_splits ? (int64_t)want : pol->max_splits;
        const int64_t by_keys = ((int64_t)batch->seq_lens[b] + CPU_ATTN_MIN_SPLIT_KEYS - 1) / CPU_ATTN_MIN_SPLIT_KEYS;
        if (ns > by_keys) ns = by_keys;
        if (L <= 0 || L > CPU_ATTN_MAX_SPLIT_QLEN || ns < 2) ns = 1;
        /* items of one split (a key range of every token tile, KV head and head chunk) */
        const size_t units = L == 1 && pol->all_heads ? 1
            : plugin_size_mul(plugin_size_mul((size_t)((L + tile - 1) / tile), (size_t)Hkv), (size_t)pol->head_chunks);
        /* A capacity plan's storage and workspace hold a bounded number of splits: fewer parts where the
         * bound would pass (cpu_attention_capacity.c shows the policy never reaches it; this makes it sure). */
        while (ns > 1 && (plugin_size_mul((size_t)(ns * L), (size_t)Hq) > pol->max_split_rows - part_rows ||
                          plugin_size_mul(units, (size_t)(ns - 1)) > pol->max_split_items - extra_items))
            ns--;
        nsplit[b] = (int32_t)ns;
        if (ns > 1) {
            n_split++;
            part_rows = plugin_size_add(part_rows, (size_t)(ns * L) * (size_t)Hq);
            extra_items = plugin_size_add(extra_items, units * (size_t)(ns - 1));
        }
        if (L > 0) n_items = plugin_size_add(n_items, plugin_size_mul(units, (size_t)ns));
    }
    *n_items_out = n_items;
    *n_split_out = n_split;
    *part_rows_out = part_rows;
}

void cpu_attn_fill(cpu_attn_plan_t *p, const attnrt_batch_host_t *batch, int64_t B, int64_t T, const int32_t *nsplit,
                   cpu_attn_costed_t *tmp, size_t n_items)
{
    const cpu_attn_policy_t *pol = &p->policy;
    const int64_t Hq = pol->num_q_heads, Hkv = pol->num_kv_heads, group = pol->group, tile = pol->tile;
    const int64_t heads_per_item = pol->heads_per_item, head_chunks = pol->head_chunks;
    const int64_t wl = pol->window_left, wr = pol->window_right;
    /* Every split of every (token tile, KV head, head chunk). */
    size_t k = 0, m = 0;
    int64_t base = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = plugin_batch_query_len(batch, b, T);
        const int64_t S = batch->seq_lens[b];
        const int32_t ns = nsplit[b];
        if (ns > 1) {
            p->splits[b] = (cpu_attn_split_t){ns, (int32_t)L, base};
            base += (int64_t)ns * L * Hq;
            p->merge_seqs[m++] = (int32_t)b;
        } else if (p->splits) {
            p->splits[b] = (cpu_attn_split_t){1, (int32_t)L, 0};
        }
        if (L == 1 && pol->all_heads) {
            const double cost = floor(item_cost(S, L, 0, 1, Hq, Hkv, pol->causal, wl, wr) / ns);
            for (int32_t sp = 0; sp < ns; sp++) {
                tmp[k].key = (plugin_cost_key_t){cost, k};
                tmp[k].item = (cpu_attn_item_t){(int32_t)b, 0, 1, -1, 0, (int32_t)group, ns > 1 ? sp : -1, 0};
                k++;
            }
            continue;
        }
        for (int64_t i0 = 0; i0 < L; i0 += tile) {
            const int64_t n = L - i0 < tile ? L - i0 : tile;
            const double cost = floor(item_cost(S, L, i0, n, heads_per_item, 1, pol->causal, wl, wr) / ns);
            for (int64_t h = 0; h < Hkv; h++)
                for (int64_t c = 0; c < head_chunks; c++) {
                    const int64_t hf = c * heads_per_item;
                    const int64_t hc = group - hf < heads_per_item ? group - hf : heads_per_item;
                    for (int32_t sp = 0; sp < ns; sp++) {
                        tmp[k].key = (plugin_cost_key_t){cost, k};
                        tmp[k].item = (cpu_attn_item_t){(int32_t)b, (int32_t)i0, (int32_t)n, (int32_t)h, (int32_t)hf,
                                                        (int32_t)hc, ns > 1 ? sp : -1, n * hc > CPU_ATTN_NARROW_ROWS};
                        k++;
                    }
                }
        }
    }
    if (n_items > 1) qsort(tmp, n_items, sizeof *tmp, plugin_by_cost_desc);
    for (size_t i = 0; i < n_items; i++) p->items[i] = tmp[i].item;
    p->num_items = n_items;
    p->num_merges = m;
}

cpu_attn_plan_t *cpu_attn_plan_alloc(cpu_pool_t *pool, const cpu_attn_policy_t *pol, const attnrt_attention_args_t *a)
{
    cpu_attn_plan_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    const cpu_attn_scratch_layout_t lay = cpu_attn_scratch_layout(a->query->shape[2], a->value_cache->shape[3]);
    p->scratch = aligned_alloc(CACHE_LINE, plugin_size_mul(lay.total, pol->threads));
    if (!p->scratch) {
        free(p);
        return NULL;
    }
    p->pool = pool;
    p->simd = cpu_pool_simd(pool);
    p->policy = *pol;
    p->num_tokens = a->query->shape[0];
    p->num_q_heads = pol->num_q_heads;
    p->num_kv_heads = pol->num_kv_heads;
    p->head_dim_qk = a->query->shape[2];
    p->head_dim_v = a->value_cache->shape[3];
    p->scratch_stride = lay.total;
    p->scratch_slices = pol->threads;
    return p;
}

attnrt_status_t cpu_attention_plan(cpu_pool_t *pool, const attnrt_attention_args_t *args_in,
                                   const attnrt_batch_host_t *batch_in, void **plan_out, size_t *workspace_bytes)
{
    attnrt_attention_args_t a;
    attnrt_batch_host_t batch;
    attnrt_status_t st = PLUGIN_PLAN_OPEN("cpu", "paged attention", a, args_in, batch, batch_in, PLUGIN_BATCH_AS_GIVEN,
                                          plan_out, workspace_bytes);
    cpu_attn_policy_t pol;
    if (st == ATTNRT_OK) st = cpu_attn_policy_make(pool, &a, "paged attention plan", &pol);
    if (st != ATTNRT_OK) return st;
    const int64_t T = a.query->shape[0];
    const int64_t B = batch.num_seqs > 0 ? batch.num_seqs : 0;
    if (B > 0 && (!batch.query_start_loc || !batch.seq_lens))
        return plugin_fail(ATTNRT_ERR_INVALID_ARGUMENT, "cpu paged attention plan: the host batch has no query_start_loc or seq_lens");

    int32_t *nsplit = B ? calloc((size_t)B, sizeof *nsplit) : NULL;
    double *max_cost = B ? calloc((size_t)B, sizeof *max_cost) : NULL;
    if (B && (!nsplit || !max_cost)) {
        free(nsplit);
        free(max_cost);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu paged attention plan: out of memory for %lld requests", (long long)B);
    }
    size_t n_items, n_split, part_rows;
    cpu_attn_decide(&pol, &batch, B, T, nsplit, max_cost, &n_items, &n_split, &part_rows);
    free(max_cost);

    const size_t ws_bytes = plugin_size_mul(plugin_size_mul(part_rows, (size_t)a.value_cache->shape[3] + 2), sizeof(float));
    if (ws_bytes == SIZE_MAX || part_rows > INT64_MAX) { /* no workspace that large: refused, not wrapped */
        free(nsplit);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu paged attention plan: the split-KV workspace of %zu partial "
                           "rows does not fit in memory", part_rows);
    }
    cpu_attn_plan_t *p = cpu_attn_plan_alloc(pool, &pol, &a);
    cpu_attn_costed_t *tmp = n_items ? malloc(plugin_size_mul(n_items, sizeof *tmp)) : NULL;
    if (p) {
        p->items = n_items ? malloc(plugin_size_mul(n_items, sizeof *p->items)) : NULL;
        if (n_split) {
            p->splits = calloc((size_t)B, sizeof *p->splits);
            p->merge_seqs = malloc(n_split * sizeof *p->merge_seqs);
        }
    }
    if (!p || (n_items && (!tmp || !p->items)) || (n_split && (!p->splits || !p->merge_seqs))) {
        free(tmp);
        free(nsplit);
        cpu_attention_plan_destroy(p);
        return plugin_fail(ATTNRT_ERR_OUT_OF_MEMORY, "cpu paged attention plan: out of memory for %zu work items", n_items);
    }
    cpu_attn_fill(p, &batch, B, T, nsplit, tmp, n_items);
    free(nsplit);
    free(tmp);

    p->part_rows = (int64_t)part_rows;
    p->workspace_bytes = ws_bytes;
    p->num_seqs = B;
    *plan_out = p;
    *workspace_bytes = ws_bytes; /* the split partial states; scratch lives in the plan */
    return ATTNRT_OK;
}

void cpu_attention_plan_destroy(void *plan)
{
    cpu_attn_plan_t *p = plan;
    if (!p) return;
    free(p->items);
    free(p->splits);
    free(p->merge_seqs);
    free(p->scratch);
    free(p->cap_nsplit);
    free(p->cap_max_cost);
    free(p->cap_sort);
    free(p);
}
